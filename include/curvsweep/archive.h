/* archive.h — the HDF5 result archive. Its layout, columns, format
 * versions, journal and write, resume, merge and salvage protocols are
 * docs/ARCHIVE.md, their one home; this header names the functions.
 *
 * In short: rank 0 appends every result to a journal beside the archive
 * (ARCHIVE.journal, synced in groups: a result is "reported done" once the
 * journal holding it is synced, archive_commit, archive_write_result) and
 * writes the HDF5 file in batches under the archive file's exclusive lock;
 * readers hold its shared lock and wait out a batch (docs/ARCHIVE.md,
 * "Write protocol", "Live readers"). A damaged file is set aside and
 * rebuilt from the spec and the journal ("Resume protocol"). */
#ifndef CURVSWEEP_ARCHIVE_H
#define CURVSWEEP_ARCHIVE_H

#include "curvsweep/result.h"
#include "curvsweep/spec.h"

#include <stdint.h>
#include <stdio.h>

#define ARCHIVE_FORMAT "curvsweep"
#define ARCHIVE_FORMAT_VERSION 6
/* The oldest format_version still read; what each older version lacks and
 * how it is read: docs/ARCHIVE.md, "Versions". */
#define ARCHIVE_FORMAT_VERSION_MIN 2

typedef struct cs_archive cs_archive;

/* One invocation (a /runs row). */
typedef struct {
  char start[32], end[32]; /* UTC ISO 8601; end empty while running */
  char hosts[256];         /* comma-separated unique host names */
  int ranks;               /* MPI world size */
  char team[16];           /* e.g. "1x1" */
  char shard[32];          /* e.g. "0/3", or "" when unsharded */
  char slurm_job[64];      /* SLURM_JOB_ID (and array index "123_4"), or "" */
  char nodelist[256];      /* SLURM_JOB_NODELIST or "" */
  int requeue_count;       /* SLURM_RESTART_COUNT, 0 otherwise */
  int64_t cells_run;       /* cells this invocation completed */
} cs_run_info;

typedef enum {
  ARCHIVE_CREATE = 0,   /* new file: CS_ERR_INPUT if it exists */
  ARCHIVE_OVERWRITE,    /* new file replacing an existing one (--overwrite) */
  ARCHIVE_RESUME        /* existing file of the same spec, or new if absent */
} cs_archive_mode;

/* Open for writing by the sweep's rank 0. With a cell subset (shards), only
 * those cells are listed as pending rows; others are absent. mask[cell] != 0
 * selects (NULL = every cell). ARCHIVE_RESUME of an archive whose spec this
 * one grows first rebuilds it for this spec, its results kept under their
 * cells' new ids and the old file kept (docs/ARCHIVE.md, "Growing a
 * sweep"). Errors: an existing archive of a different spec (CS_ERR_INPUT,
 * naming the keys that differ and what to do), not HDF5 or not a
 * curvsweep archive, wrong format_version, unwritable directory. */
int archive_open_write(const char *path, const cs_spec *spec, cs_archive_mode mode,
                       const unsigned char *mask, cs_archive **out);
/* Status of a cell in an archive open for writing (CELL_PENDING if absent). */
cs_cell_status archive_cell_status(const cs_archive *a, int64_t cell_id);
/* Number of selected cells and how many are done/failed/diverged. */
void archive_counts(const cs_archive *a, int64_t *selected, int64_t *done, int64_t *failed,
                    int64_t *diverged);
/* Results go into the journal first (durable once it is synced) and into
 * the HDF5 file in batches (docs/ARCHIVE.md, "Write protocol"):
 *   archive_add_result  checks r and appends it to the journal, unsynced
 *                       (a kill -9 of the process keeps it; a crash of the
 *                       machine may not): not yet done;
 *   archive_commit      group commit: syncs the journal when force is set or
 *                       the oldest unsynced result has waited 50 ms
 *                       (*durable: how many results became durable, i.e.
 *                       done, in this call; may be NULL), and writes the
 *                       staged results into the HDF5 file as one batch once
 *                       50 times the last batch's duration, at most 1 s, has
 *                       passed (or the batch is large). Call it often (it is
 *                       cheap when there is nothing to do) so readers of
 *                       the file are never more than ~1 s behind;
 *   archive_flush       everything synced and written into the HDF5 file now;
 *   archive_write_result  add + forced commit: durable on return.
 * archive_cell_status and archive_counts include added results. */
int archive_add_result(cs_archive *a, const cs_cell_result *r);
int archive_commit(cs_archive *a, int force, int64_t *durable);
int archive_flush(cs_archive *a);
int archive_write_result(cs_archive *a, const cs_cell_result *r);
/* Append the /runs row of this invocation (at start) and update it (at end). */
int archive_begin_run(cs_archive *a, const cs_run_info *run);
int archive_end_run(cs_archive *a, const cs_run_info *run);
/* Flush and close; removes the journal when nothing is pending, after
 * reading back every result it records (a file that does not hold them is
 * rebuilt from the journal; docs/ARCHIVE.md, "Resume protocol"). The spec
 * given to archive_open_write must still be alive. */
int archive_close(cs_archive *a);

/* Read-only summary (`curvsweep info`). */
typedef struct {
  char name[128];
  char spec_sha256[65];   /* of the /spec text */
  char identity[65];      /* spec_canonical_sha256 of /spec (docs/ARCHIVE.md, "Identity") */
  int64_t grid_cells;     /* cells of its spec (cells: the ones it lists) */
  char shard[32];         /* "i/N" of the last run that named one, or "" */
  int partial;            /* written by merge --partial */
  char created[32];
  char software_version[32];
  int64_t cells, pending, done, failed, diverged;
  double wall_s;          /* sum of wall_s over finished cells */
  int runs, max_ranks;
  char last_run_end[32];
  /* the per-cell tables the file's format_version has, in the archive's
   * order (docs/ARCHIVE.md), with the rows every reader takes from each */
  int n_tables;
  struct {
    char name[32];
    int64_t rows;
  } table[8];
} cs_archive_summary;

int archive_summary(const char *path, cs_archive_summary *out);

/* The journal beside an archive, as `curvsweep info` reports it
 * (docs/ARCHIVE.md, "A journal beside the archive"): read without taking
 * its lock and never changed, so a run starting or running is never in its
 * way. A journal that cannot be read or used is described in problem, not
 * an error: only running out of memory is. */
typedef struct {
  int present;            /* something is at ARCHIVE.journal */
  char path[4200];        /* ARCHIVE.journal */
  char problem[640];      /* why it cannot be read or would be refused ("" when fine) */
  int64_t bytes;          /* its size */
  int header;             /* 1: a complete header (0: empty or torn, no record yet) */
  int64_t results, runs;  /* result records, /runs records (begin, end) up to the first bad one */
  int64_t unapplied;      /* cells whose last journaled result the archive does not hold
                             (-1: the archive could not be read) */
  int64_t foreign;        /* result records of cells the archive does not list */
  int dirty;              /* its flag: an HDF5 write on the archive may be under way */
  int other_spec;         /* it holds records of another spec than the archive's */
  char identity[65];      /* the archive's identity ("" when it could not be read) */
  int lock;               /* 1: a process of this machine holds its lock (/proc/locks),
                             0: none is seen there, -1: /proc/locks cannot be read */
  long lock_pid;          /* that process (0: not shown) */
} cs_archive_journal_state;

int archive_journal_state(const char *path, cs_archive_journal_state *out);
/* The /spec text (malloc'ed, NUL-terminated). */
int archive_read_spec(const char *path, char **text);
/* All results of an archive (status, metrics, curves, curvature; points and
 * params when present), cells absent from a shard archive left out.
 * *results is malloc'ed; free each with result_free. */
int archive_read_results(const char *path, cs_cell_result **results, int64_t *n);
/* The same without per-point arrays and parameters (the tables: status,
 * metrics, curves, curvature), one result per /cells row. */
int archive_read_results_tables(const char *path, cs_cell_result **results, int64_t *n);
/* The per-point arrays of the results with want[i] != 0 into them
 * (results, n: as archive_read_results_tables returned them for path),
 * streamed: /points read a block of each array at a time in storage order
 * (an archive with a /points group per cell: the wanted cells' groups;
 * docs/ARCHIVE.md, "Versions"), so memory is the wanted cells' arrays,
 * never the whole of /points. keep: which arrays besides x (bit k:
 * RESULT_POINT_NAMES[k]; ARCHIVE_POINTS_CLASS: class; per-cell groups give
 * every array). */
#define ARCHIVE_POINTS_CLASS (1u << RESULT_N_POINT_ARRAYS)
#define ARCHIVE_POINTS_ALL ((1u << (RESULT_N_POINT_ARRAYS + 1)) - 1)
int archive_read_points_of(const char *path, cs_cell_result *results, int64_t n,
                           const unsigned char *want, unsigned keep);
/* The curvature fields (/fields/<cell_id>, when there is one) of the
 * results with want[i] != 0 into them, as archive_read_points_of: one
 * cell's group at a time, never the whole of /fields. */
int archive_read_fields_of(const char *path, cs_cell_result *results, int64_t n,
                           const unsigned char *want);
/* The trained parameters (/params/<cell_id>, when there is one) of the
 * results with want[i] != 0 that hold none yet, into them, the same way. */
int archive_read_params_of(const char *path, cs_cell_result *results, int64_t n,
                           const unsigned char *want);

/* `curvsweep info --check`: read every object of the archive (root
 * attributes, /spec, every chunk of /cells, /curvature, /curves, /runs, every
 * /points and /params dataset, then the results as a whole) and call fn once
 * per damaged object with its name ("/points/3/S", "/cells rows 0..63") and
 * the reason; an archive that is not made of plain objects (a soft or
 * external link, a link cycle, external storage, a virtual dataset:
 * docs/SECURITY.md, "Archives") gets one call per such object and is not
 * read further. *damaged: how many. CS_OK when the check ran (damage or not);
 * an error only when there is no file to check. */
typedef void (*cs_archive_check_fn)(const char *object, const char *reason, void *ctx);
int archive_check(const char *path, cs_archive_check_fn fn, void *ctx, int64_t *damaged);

/* Combine archives of one sweep into out (docs/ARCHIVE.md, "Merge"): shards
 * of one spec, or archives of specs that differ only in [grid] values (out's
 * spec is then the union of their grids, spec_union_text). CS_ERR_INPUT on
 * specs that differ elsewhere, a cell done in two inputs with different
 * values, or an incomplete set (cells of out's spec no input lists, the
 * missing shards named) unless partial: out then has the root attribute
 * partial = 1. rep (may be NULL) says what the merge got. */
typedef struct {
  char sweep[128];          /* [sweep] name */
  char identity[65];        /* out's spec_canonical_sha256 */
  int64_t cells, listed;    /* cells of out's spec, and how many the inputs list */
  int inputs;
  int grids;                /* 1: the inputs' specs differ in [grid] values (union) */
  char got[1024];           /* "0/2 (a.h5), unsharded (b.h5)" */
  char missing_shards[512]; /* "1/2, 3/4" (of the largest shard count named) or "" */
} cs_archive_merge_report;
int archive_merge(const char *out, const char *const *inputs, int n_inputs, int overwrite,
                  int partial, cs_archive_merge_report *rep);

/* `curvsweep merge --salvage OUT DAMAGED`: copy every intact cell of a
 * damaged archive into a new archive out of the same spec (its /spec must
 * be readable); cells whose result cannot be read whole are listed pending,
 * so a `run` resume of out recomputes them (docs/ARCHIVE.md, "Salvage").
 * fn is called once per such cell with the reason. out must not exist
 * unless overwrite. */
typedef struct {
  int64_t cells;     /* rows of the new archive */
  int64_t kept;      /* finished results copied */
  int64_t damaged;   /* cells left pending because their result could not be read whole */
  int64_t pending;   /* cells pending already in the damaged archive */
  int64_t runs_kept, runs_lost; /* /runs rows copied, and unreadable */
} cs_archive_salvage_report;
typedef void (*cs_archive_salvage_fn)(int64_t cell_id, const char *reason, void *ctx);
int archive_salvage(const char *out, const char *damaged, int overwrite, cs_archive_salvage_fn fn,
                    void *ctx, cs_archive_salvage_report *rep);

/* The HDF5 library's lifetime (src/cli/main.c): begin before anything else,
 * end before exit. End closes the library only while an identifier is still
 * open (to flush it); otherwise the exit releases it, since closing it after
 * a damaged file would loop forever (archive_check.c). */
void archive_library_begin(void);
void archive_library_end(void);

/* Bulk build of a new, complete archive of spec at path listing the cells
 * of mask (NULL: all), for merges and synthetic archives: no journal; the
 * file is built under a temporary name beside path and renamed into place
 * by archive_build_finish (which frees b, as archive_build_abort does,
 * removing the temporary file). Each listed cell gets at most one result;
 * /runs rows are appended in the order given. The caller checks that path
 * may be (over)written; overwrite removes a stale journal of path. */
typedef struct cs_archive_builder cs_archive_builder;
int archive_build_begin(const char *path, const cs_spec *spec, const unsigned char *mask,
                        int overwrite, cs_archive_builder **out);
int archive_build_result(cs_archive_builder *b, const cs_cell_result *r);
int archive_build_run(cs_archive_builder *b, const cs_run_info *run);
int archive_build_finish(cs_archive_builder *b);
/* archive_build_finish without the rename: the complete, synced file stays
 * at its temporary name, handed to the caller (*tmp, malloc'ed), b freed. */
int archive_build_close(cs_archive_builder *b, char **tmp);
void archive_build_abort(cs_archive_builder *b);

/* Additions to the contract above. */
/* The journal of an archive is the archive's path + ".journal". */

/* How results of one spec from several archives combine — the one rule of
 * `merge` and of `analyze` given several archives (docs/ARCHIVE.md, "Merge"):
 * per cell, the result of highest archive_status_rank wins (done 3 >
 * diverged 2 > failed 1 > pending 0), the first archive on a tie; two done
 * results of one cell must be equal by archive_same_values (the science
 * values bitwise; wall_s, rank and attempts may differ), otherwise the
 * archives are not shards of one deterministic sweep and are refused. */
/* ---- per-cell tables as CSV (`curvsweep export`, analysis/README.md "Export") ---- */
/* The i-th per-cell table export writes column by column (its dataset name,
 * the file NAME.csv), NULL past the last. */
const char *archive_csv_table(int i);
/* Its columns after cell_id, each led by a comma, into f. */
int archive_csv_header(FILE *f, const char *table);
/* The rows r has in it. */
int archive_csv_rows(const char *table, const cs_cell_result *r);
/* Row k of r in it, its columns after cell_id, each led by a comma:
 * integers as integers, doubles as cs_csv_double. */
int archive_csv_row(FILE *f, const char *table, const cs_cell_result *r, int k);

int archive_status_rank(cs_cell_status s);
int archive_same_values(const cs_cell_result *x, const cs_cell_result *y);

#endif
