/* archive_internal.h — what the files of src/archive share (not part of the
 * public API in include/curvsweep). The on-disk format and the journal
 * protocol are docs/ARCHIVE.md; this header is their C side, one section
 * per file that defines the functions, in layer order: a file calls only
 * files of the sections above its own, never one below, so no two files
 * call each other (the build checks it: cmake/check_cycles.cmake;
 * docs/ARCHITECTURE.md, "Layering").
 *   bottom: no HDF5 of their own
 *     archive_lock.c     the journal lock (one writer), the archive file's lock (live readers)
 *     archive_rows.c     the /cells rows in memory (struct cs_archive)
 *   HDF5 primitives and the checks of untrusted input
 *     archive_h5.c       quieting, errors, ids, files and the write session, types, attributes
 *     archive_walk.c     bounded, iterative walks of a group's links; sets of object addresses
 *     archive_guard.c    untrusted input: plain objects, the budget, values in their domain
 *     archive_format.c   compound row types, 1-D tables, 2-D arrays and per-cell groups
 *   the objects of an archive
 *     archive_spec.c     /spec and the identity
 *     archive_fields.c   /fields/<cell_id> (curvature fields)
 *     archive_params.c   /params/<cell_id> (trained parameters)
 *     archive_points.c   /points: shared arrays and their index rows, created and staged
 *     archive_tables.c   the table of per-cell tables: /curvature, /curves, /points/index
 *     archive_compare.c  values compared bitwise (results, fields, /runs rows), status ranks
 *   whole archives
 *     archive_load.c     probe an existing file, load its /cells rows, the valid rows of a table
 *     archive_points_read.c  /points read: every cell's arrays a block at a time, the legacy groups
 *     archive_create.c   create a new archive under a temporary name, rename it into place
 *     archive_read.c     read-back (summary, spec, results)
 *     archive_write.c    apply batches of results, or a /runs row, to an open file
 *     archive_journal.c  the journal: records, scan, seed, replay, verify
 *     archive_journal_check.c  its results checked against the spec before any is applied
 *   commands
 *     archive_open.c     open for writing: create, or resume (repair, replay, rebuild)
 *     archive_commit.c   add, group commit, flush, /runs rows, the verified close
 *     archive_build.c    bulk build of a new archive (merge, generators)
 *     archive_check.c    info --check: read every object, name the damaged
 *     archive_journal_state.c  info: the journal beside an archive, read without its lock
 *     archive_salvage.c  merge --salvage: intact cells into a fresh archive
 *     archive_merge.c    merging shard archives (also for growing)
 *     archive_grow.c     a resume with a spec that grows the archive's, or differs
 *     archive.c          archive_open_write: grow, then open
 * The files sit in folders of src/archive by these layers (docs/ARCHITECTURE.md,
 * "The folders of the two largest modules"): format/ (bottom, HDF5), tables/
 * (the objects), io/ then journal/ (whole archives), commands/, merge/
 * (archive_salvage.c, archive_merge.c, archive_grow.c), archive.c.
 * Every public function that touches HDF5 starts with ARCHIVE_QUIET
 * (archive_h5.c): HDF5 prints nothing, errors name the file and object. */
#ifndef CURVSWEEP_ARCHIVE_INTERNAL_H
#define CURVSWEEP_ARCHIVE_INTERNAL_H

#include "archive_test.h"
#include "curvsweep/archive.h"
#include "curvsweep/error.h"
#include "curvsweep/path.h"

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef CS_VERSION
#define CS_VERSION "unknown"
#endif

#define ARCHIVE_NAME_BYTES 32     /* arch, task columns */
#define ARCHIVE_STATUS_BYTES 16
#define ARCHIVE_MESSAGE_BYTES 256
#define ARCHIVE_TENSOR_NAME_BYTES 48
#define ARCHIVE_CHUNK_BYTES 8192 /* target uncompressed chunk size: small, since every append rewrites (recompresses) its chunk */
/* The same for archives built in bulk (merge, archive_build.c): appended a
 * block of rows at a time, where every chunk costs a zlib stream set-up
 * (docs/DECISIONS.md, "One /points table per array"). */
#define ARCHIVE_BULK_CHUNK_BYTES 65536
#define ARCHIVE_DEFLATE_LEVEL 1
#define ARCHIVE_BLOCK_ROWS 65536  /* rows per read/write block of big tables */
/* What a spec allows a cell (docs/SPEC.md: depth ≤ 64), the bound of the
 * /curvature rows a reader accepts per listed cell before allocating. */
#define ARCHIVE_MAX_DEPTH 64
/* The longest /spec a reader accepts (the spec loader's own limit). */
#define ARCHIVE_SPEC_MAX_BYTES ((size_t)16 << 20)
/* Group commit and batched HDF5 writes (docs/ARCHIVE.md, "Write protocol";
 * why: docs/DECISIONS.md, "Durability"): the journal is synced at
 * most ARCHIVE_SYNC_SECONDS after a result was added; staged results go
 * into the HDF5 file at the first commit ARCHIVE_APPLY_RATIO times the last
 * batch's duration after it, but no later than ARCHIVE_APPLY_SECONDS (so
 * batch writes take at most ~2 % of the writer's time, a result waits at
 * most 1 s, and results arriving slower than batches take go in one by one
 * at once), or earlier when the batch reaches ARCHIVE_APPLY_RESULTS
 * results or ARCHIVE_APPLY_BYTES journal bytes. */
#define ARCHIVE_SYNC_SECONDS 0.05
#define ARCHIVE_APPLY_RATIO 50.0
#define ARCHIVE_APPLY_SECONDS 1.0
#define ARCHIVE_APPLY_RESULTS 8192
#define ARCHIVE_APPLY_BYTES ((uint64_t)64 << 20)

/* The optional per-cell groups /<top>/<cell_id> of format_version 4, in
 * one order: what a rewrite removes, a merge copies as stored and info
 * --check reads (with /points, which version 4 keeps in tables). */
#define ARCHIVE_N_CELL_GROUPS 2
#define ARCHIVE_CELL_GROUPS ((const char *const[ARCHIVE_N_CELL_GROUPS]){"params", "fields"})

/* The result columns of a /cells row (memory layout; names as in the file). */
typedef struct {
  int64_t cell_id;
  char status[ARCHIVE_STATUS_BYTES];
  int32_t rank, attempts;
  double wall_s, train_loss, train_acc, test_acc;
  int64_t n_params;
  char message[ARCHIVE_MESSAGE_BYTES];
} archive_cell_row;

typedef struct {
  int64_t cell_id;
  int32_t prefix;
  geom_stats st;
} archive_curv_row;

typedef struct {
  int64_t cell_id;
  int32_t epoch;
  double train_loss, train_acc, test_acc;
} archive_curve_row;

/* An /estimation row: the estimator's record of a cell of family mha
 * (cs_estimation, result.h; docs/ARCHIVE.md "/estimation"). */
typedef struct {
  int64_t cell_id;
  int32_t restarts, kept, converged, misspecified;
  int64_t steps, steps_total;
  double grad_norm, train_mse, teacher_mse, fn_error, param_error;
} archive_est_row;

/* A /gates row (format_version 6): the gate scores of one gated block
 * (cs_gate_scores, result.h; docs/ARCHIVE.md "/gates"). */
typedef struct {
  int64_t cell_id;
  int32_t prefix;
  int64_t n_scores;
  double mean, median, q10, q90, frac_low, var_query, var_channel;
  double hist[RESULT_GATE_BINS];
} archive_gate_row;

/* A /cellstats row (format_version 6): calibration and stability of a
 * cell (cs_cell_stats, result.h; docs/ARCHIVE.md "/cellstats"). */
typedef struct {
  int64_t cell_id;
  int32_t spikes;
  double loss_ratio_max, test_nll, test_brier, test_ece;
} archive_cstat_row;

/* A row of /points/index (format_version 4): where a cell's per-point
 * values start in /points/x (n_points × m) and in the per-prefix arrays
 * /points/S ... /points/class (depth × n_points), row-major. */
typedef struct {
  int64_t cell_id;
  int32_t n_points, m, depth;
  int64_t x_start, start;
} archive_point_row;
#define ARCHIVE_POINTS_INDEX "points/index"
enum { ARCHIVE_POINT_ARRAYS = RESULT_N_POINT_ARRAYS + 2 }; /* x, the per-prefix doubles, class */

/* The float64 columns of /curvature, in file order: geom's table of the
 * per-prefix statistics (geom.h), whose names are the column names. */
#define ARCHIVE_N_STATS_FIELDS GEOM_STATS_N_FIELDS
#define ARCHIVE_STATS_FIELDS GEOM_STATS_FIELDS

/* Journal record kinds (docs/ARCHIVE.md, "Journal"). */
enum { ARCHIVE_REC_RESULT = 1, ARCHIVE_REC_RUN_BEGIN = 2, ARCHIVE_REC_RUN_END = 3, ARCHIVE_REC_COVER = 4 };

typedef struct {
  int64_t row; /* /runs row at the time of writing */
  cs_run_info info;
} archive_run_payload;

/* One valid record found by the scan. */
typedef struct {
  uint32_t kind;
  off_t offset;      /* of the payload */
  uint64_t length;
  int64_t cell_id;   /* results */
  int status, attempts;
} archive_record_ref;

/* The writer's state. Rows of /cells are kept in memory (ascending cell_id)
 * with their status, so no per-write scan of the file is needed. */
struct cs_archive {
  char *path, *journal_path;
  int64_t n_rows;
  int64_t *row_cell;          /* cell id of each /cells row, ascending */
  unsigned char *row_status;  /* cs_cell_status */
  int32_t *row_attempts;
  unsigned char *row_selected;/* in this open's mask */
  int64_t n_runs;             /* /runs rows */
  int64_t run_row;            /* row of this invocation, -1 before begin_run */
  int journal_fd;             /* -1: no journal (merge output) */
  int64_t journal_records;    /* result and run records in the journal file */
  int journal_covers;         /* the journal holds every result of the archive */
  int dirty;                  /* the journal's dirty flag is set */
  int64_t unapplied;          /* journaled but not written to HDF5 (write failed) */
  /* group commit and batched HDF5 writes (docs/ARCHIVE.md, "Write protocol") */
  int64_t unsynced;           /* results appended to the journal since its last fdatasync */
  double unsynced_since;      /* monotonic time of the oldest of them */
  archive_record_ref *staged; /* journaled results not yet in the HDF5 file, in order */
  int64_t n_staged, cap_staged;
  uint64_t staged_bytes;      /* their payload bytes */
  double last_apply;          /* monotonic time the last batch was written (0: none yet) */
  double last_apply_s;        /* how long that batch took */
  unsigned char *row_journal; /* per row: status of a staged result (0: none) */
  char spec_sha256[65];       /* the identity: spec_canonical_sha256 of the spec (docs/ARCHIVE.md) */
  const cs_spec *spec;        /* of the open (outlives it): a verified close may rebuild */
  size_t table_chunk_bytes;   /* chunk size of the tables it creates (0: ARCHIVE_CHUNK_BYTES) */
};

typedef enum {
  ARCHIVE_PROBE_OK = 0,
  ARCHIVE_PROBE_UNREADABLE, /* empty, not HDF5, truncated or damaged */
  ARCHIVE_PROBE_FOREIGN,    /* a readable HDF5 file that is not a curvsweep archive v1 */
  ARCHIVE_PROBE_HOSTILE     /* ours by its attributes, but not plain objects (a link out of the
                               file, a cycle, external storage): refused by every command */,
  ARCHIVE_PROBE_BUSY,       /* locked by a writer for longer than a reader waits (docs/ARCHIVE.md,
                               "Live readers"): not damaged, read again later */
  ARCHIVE_PROBE_NOT_FILE    /* not a regular file (a FIFO, a device, a directory): never opened,
                               by HDF5 or anything else (docs/SECURITY.md, "Hostile archives:
                               second audit") */
} archive_probe_class;

typedef struct {
  char spec_sha256[65];   /* of the /spec text (root attribute spec_sha256) */
  char identity[65];      /* spec_canonical_sha256 of /spec, computed by this build */
  char spec_name[128];
  char created[32];
  char software_version[32];
  int version;  /* format_version (4: /points tables; 2, 3: a /points group per cell) */
} archive_meta;

/* An archive open for reading: its rows and statuses (a->journal_fd < 0)
 * and the open file (archive_read.c). */
typedef struct {
  cs_archive *a;  /* rows and statuses (no journal); a->spec is spec */
  hid_t file;
  archive_meta meta;
  cs_spec *spec;  /* loaded from /spec: what the archive may hold (owned) */
} archive_reader;

typedef struct {
  int header_ok;         /* a complete header for this build */
  char sha[65];          /* its spec sha256 */
  int dirty;             /* an HDF5 write was in progress */
  int covers;            /* a COVER record: every result of the archive is in here */
  archive_record_ref *recs;
  int64_t n;             /* records, COVER records excluded */
  off_t good_end;        /* end of the last valid record (cut here) */
  off_t size;
} archive_journal_scan;

/* ======== archive_lock.c ======== */
/* Live readers (docs/ARCHIVE.md, "Live readers"): the archive file's own
 * flock, shared for a reader, exclusive for a write, held while its HDF5
 * file is open. How long a reader waits for a batch to be written, and a
 * write that must happen now (not a deferrable batch) for readers. */
#define ARCHIVE_READ_WAIT_SECONDS 60.0
#define ARCHIVE_WRITE_WAIT_SECONDS 60.0
/* Lock path (exclusive or shared), waiting up to wait_s (0: one try): CS_OK
 * with *fd the lock's descriptor (-1: nothing needed locking: the file
 * system has no flock, or this process holds the exclusive lock and reads
 * its own file), or CS_ERR_IO saying who holds it, *busy set (busy may be
 * NULL). */
int archive_file_lock(const char *path, int exclusive, double wait_s, int *fd, int *busy);
void archive_file_unlock(int *fd);
/* The HDF5 file opened under the lock fd: archive_h5_fclose releases both. */
void archive_file_lock_attach(int fd, hid_t file);
herr_t archive_h5_fclose(hid_t file);
/* Open (creating if absent) and lock the journal of an archive,
 * lock-then-verify (see there). *fd: the locked descriptor; *created: the
 * locked journal is empty. CS_ERR_INPUT when another process holds it or it
 * is not a regular file. */
int archive_lock_journal(const char *journal_path, const char *archive_path, int *fd, int *created);

/* ======== archive_rows.c ======== */
/* Grow *p (*cap elements of size bytes allocated) to hold need: doubling
 * from first; CS_ERR_NOMEM "out of memory <what>" when it cannot. */
int archive_grow_buffer(void **p, size_t *cap, size_t need, size_t size, size_t first,
                        const char *what);
/* Row of a cell in a->row_cell (binary search), -1 when not listed. */
int64_t archive_find_row(const cs_archive *a, int64_t cell_id);
int archive_alloc_rows(cs_archive *a, int64_t n);
/* cs_cell_status of a status name, -1 when unknown. */
int archive_status_parse(const char *s);
void archive_free(cs_archive *a);
int archive_new(const char *path, cs_archive **out);
/* Rows of a new archive: the cells selected by mask (NULL: all), ascending. */
int archive_rows_from_mask(cs_archive *a, const cs_spec *spec, const unsigned char *mask);

/* ======== archive_h5.c ======== */
/* Library code never prints: HDF5's automatic error printing is switched
 * off at the top of every public function (ARCHIVE_QUIET, a declaration)
 * and restored when the function returns, on every path (the cleanup
 * attribute calls archive_quiet_end as the declaration goes out of scope). */
typedef struct {
  H5E_auto2_t func;
  void *data;
} archive_quiet;
archive_quiet archive_quiet_begin(void);
void archive_quiet_end(archive_quiet *q);
#define ARCHIVE_QUIET                                                         \
  archive_quiet archive_quiet_ __attribute__((cleanup(archive_quiet_end))) = \
      archive_quiet_begin()
/* cs_error with the innermost HDF5 reason appended ("<message>: <reason>"). */
int archive_h5_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Note the current HDF5 reason before closing things after a failure. */
void archive_h5_note(void);
/* Close *id with close_fn when valid; *id becomes invalid. */
void archive_h5_close_id(hid_t *id, herr_t (*close_fn)(hid_t));
/* Open an archive (read-only: under its shared lock, waiting for a batch
 * being written; docs/ARCHIVE.md, "Live readers"); close it with
 * archive_h5_fclose. Invalid when it fails: archive_h5_lock_refused() is
 * then the lock's refusal (its message set), or CS_OK when HDF5 failed. */
hid_t archive_h5_open(const char *path, unsigned flags);
int archive_h5_lock_refused(void);
hid_t archive_h5_create(const char *path);
/* Per-write HDF5 session on a->path: the archive's exclusive lock taken
 * (waiting up to ARCHIVE_WRITE_WAIT_SECONDS for readers), opened
 * read-write, and closed with the lock released (rc kept, or the close
 * error when rc is CS_OK). _lock and _open_locked are its two halves, for
 * a batch that is deferred while readers hold the file (wait_s 0: *busy). */
int archive_h5_session_open(const cs_archive *a, hid_t *file);
int archive_h5_session_lock(const cs_archive *a, double wait_s, int *lock_fd, int *busy);
int archive_h5_session_open_locked(const cs_archive *a, int *lock_fd, hid_t *file);
int archive_h5_session_close(const cs_archive *a, hid_t file, int rc);
/* Fixed-length NUL-terminated ASCII string type of n bytes. */
hid_t archive_str_type(size_t n);
/* Dataset creation property list: chunked, shuffle + deflate + Fletcher32. */
/* deflate: the tables and /spec (they compress several-fold); the per-cell
 * /points and /params arrays are stored without it (docs/ARCHIVE.md). */
hid_t archive_dcpl(int rank, const hsize_t *chunk, int deflate);
int archive_attr_write_str(hid_t obj, const char *name, const char *value, const char *path);
int archive_attr_write_i64(hid_t obj, const char *name, hid_t file_type, int64_t v, const char *path);
/* An attribute of one value of class cls of at most max_bytes (variable-
 * length strings any): 0 with attr and its type open, or -1 and why. */
int archive_attr_open_one(hid_t obj, const char *name, H5T_class_t cls, size_t max_bytes,
                          hid_t *attr, hid_t *ftype, const char **why);
/* 0, or -1 when missing, of another class, not one value (an array) or of
 * an impossible size; *why (when why is not NULL) then says which. */
int archive_attr_read_str(hid_t obj, const char *name, char *buf, size_t len, const char **why);
int archive_attr_read_i64(hid_t obj, const char *name, int64_t *v, const char **why);
int archive_link_exists(hid_t loc, const char *name);

/* ======== archive_walk.c: bounded, iterative walks (docs/SECURITY.md, "Hostile archives: second audit") ======== */
/* A set of object addresses (0 is never one: the superblock). */
typedef struct {
  haddr_t *slot;
  size_t cap, n;
} archive_addr_set;
/* 1: added, 0: already there, -1: out of memory. */
int archive_addr_add(archive_addr_set *s, haddr_t a);
void archive_addr_free(archive_addr_set *s);
/* The most levels of groups below a walk's start (a curvsweep archive has
 * at most a few: /params/<id>/<tensor path>). */
#define ARCHIVE_WALK_MAX_DEPTH 32
#define ARCHIVE_WALK_TOO_DEEP (-2)
/* fn gets every link under the start: g the group holding it, name its
 * name there, rel its path from the start ("a/b/c"). It returns 0 to go
 * on, 1 to stop the walk, -1 to abort it (its error recorded). */
typedef int (*archive_walk_fn)(hid_t g, const char *name, const char *rel, const H5L_info_t *li,
                               void *ctx);
/* Walk every link under the group start (named start_name, "" for the
 * root, in messages) without recursion: each group entered once, through
 * hard links only, at most ARCHIVE_WALK_MAX_DEPTH levels down. Returns 0
 * (all walked), 1 (fn stopped it), -1 (fn's error, or HDF5's: a refusal
 * naming path and the group) or ARCHIVE_WALK_TOO_DEEP (a refusal naming
 * path and the group too deep, whose full name goes into deep when not
 * NULL). */
int archive_walk(hid_t start, const char *start_name, const char *path, archive_walk_fn fn,
                 void *ctx, char *deep, size_t deep_len);

/* ======== archive_guard.c: untrusted input (docs/SECURITY.md, "Archives") ======== */
/* The bytes one open may allocate from sizes the file declares: set from
 * the file's size at every open (archive_probe), taken before each such
 * allocation (n elements of size bytes; a refusal naming object beyond). */
void archive_budget_begin(const char *path);
int archive_budget_take(uint64_t n, uint64_t size, const char *path, const char *object);
/* Open a dataset or group of loc: every link on the way a hard link, a
 * dataset stored in this file (not virtual, no external raw storage);
 * refusals name path and the object. */
int archive_dataset_open(hid_t loc, const char *name, const char *path, hid_t *ds);
int archive_group_open(hid_t loc, const char *name, const char *path, hid_t *g);
int archive_dataset_plain(hid_t ds, const char *path, const char *full);
/* A dataset stores at least a 1/1100 of the bytes it declares (none
 * unwritten: an 8192 x 16384 tensor of fill values is refused before it
 * is allocated). */
int archive_dataset_check_stored_bytes(hid_t ds, const char *path, const char *full);
/* A table's rows were all stored (chunks written), not declared only. */
int archive_table_check_stored(hid_t ds, hsize_t rows, const char *path, const char *name);
/* The same with up to ARCHIVE_TAIL_CHUNKS chunks declared but not stored:
 * the unfinished tail an interrupted write may leave, which a resume cuts
 * (a write grows a table by one batch, far fewer chunks than this). */
#define ARCHIVE_TAIL_CHUNKS 65536
int archive_table_check_tail(hid_t ds, hsize_t rows, const char *path, const char *name);
/* Every link of the file a hard link to an object linked once, every
 * dataset plain: fn (may be NULL: stop at the first) gets each object that
 * is not, with the reason; *hostile: one was found (else a failure is
 * damage: a group or header that cannot be read). */
typedef void (*archive_guard_fn)(const char *object, const char *reason, void *ctx);
int archive_structure_check(hid_t file, const char *path, archive_guard_fn fn, void *ctx,
                            int *hostile);
/* A done lm cell's extreme-token columns of /curvature in their domain
 * (docs/ARCHIVE.md, "Reading an archive"): sink_mass and sink_headmax in
 * [0, 1] (never NaN), max_attn in [0, 1] unless stats_absent (an lm row of
 * format_version ≤ 5, archive_curv_as_read); massive_act, value_drain, resid_peak either all NaN
 * (not measured: format_version ≤ 4, or merged from one) or all finite
 * (massive_act ≥ 1, the others ≥ 0). Anything else is damage: a refusal
 * naming path, the cell and the prefix. Other families: not checked. */
int archive_check_token_stats(const char *path, cs_family family, const cs_cell_result *r);
/* A done result's metrics in their domain (accuracies in [0, 1], or NaN
 * for a cell of family mha, which has none; finite loss, wall time >= 0):
 * a refusal naming path and the cell otherwise. */
int archive_check_metrics(const char *path, cs_family family, const cs_cell_result *r);
/* A tensor name as the archive stores it (docs/ARCHIVE.md, "/params"): 0,
 * or -1. */
int archive_check_tensor_name(const char *name);

/* ======== archive_format.c: row types, tables, arrays and groups ======== */
/* Memory types of the rows (closed by the caller); archive_packed: the file type. */
hid_t archive_class_type(hid_t base);
hid_t archive_cell_row_type(void);
hid_t archive_run_row_type(void);
hid_t archive_packed(hid_t mem_type);
/* Rows per chunk of a table of rows of row_bytes in chunks of about
 * chunk_bytes (0: ARCHIVE_CHUNK_BYTES). */
hsize_t archive_table_chunk_rows(size_t row_bytes, size_t chunk_bytes);
int archive_table_create(hid_t file, const char *name, hid_t ftype, int committed,
                         size_t chunk_bytes, const char *path);
hsize_t archive_table_length(hid_t ds);
int archive_table_length_checked(hid_t ds, const char *path, const char *name, hsize_t *n);
/* The dataset transfer property list of table reads and writes: one
 * conversion buffer pair for the process (H5P_DEFAULT if unavailable). */
hid_t archive_table_xfer(void);
/* 0 or -1 (reason noted): rows [start, start+n) read or written. */
int archive_table_io(hid_t ds, hid_t mtype, hsize_t start, hsize_t n, void *rows, int write);
int archive_table_append(hid_t ds, hid_t mtype, const void *rows, hsize_t n, const char *path,
                         const char *name);
/* A 2-D dataset (rows × cols) of file type ftype from memory of type mtype,
 * chunked, shuffled and Fletcher32-checked, not deflated. */
int archive_write_array(hid_t loc, const char *name, hsize_t rows, hsize_t cols, hid_t ftype,
                        hid_t mtype, size_t elem_bytes, const void *v, const char *path);
/* A 2-D dataset of type class cls into a fresh array of memory type mtype;
 * dims out. Its shape must be want[0] x want[1] (a 0 there: any, within the
 * budget), checked before anything is allocated. A missing, unreadable or
 * misshapen dataset is a refusal naming it. _matrix: of float64. */
int archive_read_array(hid_t loc, const char *name, hid_t mtype, size_t elem_bytes, H5T_class_t cls,
                       const hsize_t want[2], const char *path, void **v, hsize_t dims[2]);
int archive_read_matrix(hid_t loc, const char *name, const hsize_t want[2], const char *path,
                        double **v, hsize_t dims[2]);
/* Create the group /<top>/<cell_id> (and /<top>); its name into name. */
int archive_cell_group_create(hid_t file, const char *top, int64_t cell_id, const char *path,
                              char name[64], hid_t *g);
/* Open /<top>/<cell_id> when there is one (*g < 0: none); its name into name. */
int archive_cell_group_open(hid_t file, const char *top, int64_t cell_id, const char *path,
                            char name[64], hid_t *g);
/* Every member of the per-cell group g (/group) is a hard link to one of the
 * datasets named (want, or n names of ARCHIVE_TENSOR_NAME_BYTES in names),
 * or a group on the way to one: a refusal naming the first that is not. */
int archive_group_members_check(hid_t g, const char *const *want, const char *names, int64_t n,
                                const char *path, const char *group);

/* ======== archive_spec.c ======== */
/* /spec, the spec text exactly as read, as a 1-D dataset of one
 * fixed-length string (chunked, so Fletcher32-checksummed like every other
 * dataset). Archives written before this layout carry a scalar /spec; it
 * is read too. */
int archive_spec_write(hid_t file, const char *text, const char *path);
/* The text of /spec (malloc'ed, NUL-terminated); every failure is a
 * CS_ERR_INPUT refusal naming the archive and /spec. */
int archive_spec_read(hid_t file, const char *path, char **text);
/* /spec's text must hash to sha (the root attribute spec_sha256) and load
 * as a spec; its canonical SHA-256 (the archive's identity, computed by this
 * build whatever the writer stored) into identity. */
int archive_spec_verify(hid_t file, const char *path, const char *sha, char identity[65]);
/* A resume refused because spec is not the archive's (identity differs and
 * it does not grow it): CS_ERR_INPUT naming the keys that differ, old → new.
 * old: the archive's spec. */
int archive_identity_refusal(const char *path, const cs_spec *old_spec, const cs_spec *spec);

/* ======== archive_fields.c: /fields/<cell_id> (docs/ARCHIVE.md, "/fields") ======== */
/* A result's field is whole: N in 1..RESULT_FIELD_MAX, every array there,
 * a finite box; or absent (fd_pred NULL, field_n 0). */
int archive_check_fields(const char *path, const cs_cell_result *r);
int archive_write_fields(hid_t file, const cs_cell_result *r, const char *path);
/* The group of r->cell_id into r (none: r unchanged); a group that cannot
 * be read whole, holds anything else, or whose N (expect_n: the spec's
 * field of the cell, -1 when unknown), shapes, classes or box are not what
 * N and r->depth imply, is a CS_ERR_INPUT naming it. */
int archive_read_fields(hid_t file, const char *path, int expect_n, cs_cell_result *r);

/* The values of a cell's curvature field in their domain (docs/ARCHIVE.md,
 * "/fields"): N in 1..RESULT_FIELD_MAX and the spec's field (expect_n; -1:
 * any), a finite box lo < hi, classes 0..3, predictions >= 0; a refusal
 * naming path and name (the group) otherwise. The reader's check and the
 * journal's (archive_journal_check.c). */
int archive_fields_check_values(const char *path, const char *name, int expect_n,
                                const cs_cell_result *r);
/* ======== archive_params.c: /params/<cell_id> (docs/ARCHIVE.md, "/params") ======== */
/* The /params/<id> group of a checked result. */
int archive_write_params(hid_t file, const cs_cell_result *r, const char *path);
/* The /params group of r->cell_id into r (none: r unchanged); a group that
 * cannot be read whole is a CS_ERR_INPUT naming it. */
int archive_read_params(hid_t file, const char *path, cs_cell_result *r);

/* A cell's tensors: valid, distinct names, finite values (the reader's
 * check and the journal's); a refusal naming path and name otherwise. */
int archive_params_check_values(const char *path, const char *name, const cs_cell_result *r);
/* ======== archive_points.c: /points written ======== */
hid_t archive_point_row_type(void);
/* Array k of /points (0: x, 1..RESULT_N_POINT_ARRAYS: the per-prefix
 * doubles, ARCHIVE_POINT_ARRAYS - 1: class): its dataset name, file and
 * memory element types (closed by the caller), element size, and length
 * (ds open; a dataspace that is not 1-D is damage). */
const char *archive_points_name(int k);
void archive_points_types(int k, hid_t *ftype, hid_t *mtype);
size_t archive_points_elem(int k);
int archive_points_length(hid_t ds, int k, const char *path, hsize_t *n);
/* /points with an empty index and empty arrays (a new archive of the
 * listed cells of a). */
int archive_points_create(hid_t file, const cs_archive *a, const cs_spec *spec, const char *path);
/* Results' per-point arrays staged in memory; flush appends them (one write
 * per array). Their /points/index rows are rows of the table of per-cell
 * tables (archive_tables.c), made by archive_points_stage_add with offsets
 * into the staged arrays and made absolute before they are appended
 * (archive_points_rebase: the arrays' lengths before the last flush).
 * v[0] x, v[1..RESULT_N_POINT_ARRAYS] the doubles, v[last] class. */
typedef struct {
  size_t n_cells, n_x, n_f;
  hsize_t x_base, f_base;    /* lengths of x and of the per-prefix arrays before the last flush */
  void *v[ARCHIVE_POINT_ARRAYS];
  size_t cap[ARCHIVE_POINT_ARRAYS];
} archive_points_stage;
/* Capacity for about bytes of staged values whatever their split between x
 * and the per-prefix arrays, allocated once (pages are touched only as
 * values arrive): no regrowth, no copy of what is staged (the bulk builder). */
int archive_points_stage_reserve(archive_points_stage *s, size_t bytes);
/* r's arrays staged, its index row into *row (offsets into the stage). */
int archive_points_stage_add(archive_points_stage *s, const cs_cell_result *r,
                             archive_point_row *row);
size_t archive_points_stage_bytes(const archive_points_stage *s);
int archive_points_stage_flush(hid_t file, archive_points_stage *s, const char *path);
void archive_points_stage_free(archive_points_stage *s);
/* The /points/index row of ARCHIVE_CELL_TABLES (what each does: there). */
int archive_points_rows_of(const cs_cell_result *r);
int archive_points_to_rows(const cs_cell_result *r, void *rows, archive_points_stage *pts);
void archive_points_rebase(void *rows, size_t n, const archive_points_stage *pts);
int archive_points_same(const cs_cell_result *x, const cs_cell_result *y);
/* ======== archive_tables.c: the per-cell tables (docs/ARCHITECTURE.md, "A new per-cell archive table") ======== */
/* A table of rows keyed by cell (its row struct starts with int64_t
 * cell_id; a cell's rows are appended together, in one write per table per
 * batch). One row of ARCHIVE_CELL_TABLES says everything the commands need:
 * create, open (repair), write and build (archive_table_rows_add: the one
 * result -> rows conversion), read, load, check, salvage, merge and the
 * comparison of two results walk the table, never a table's name. */
typedef struct {
  const char *name;   /* its dataset: "curvature", "curves", "points/index", "estimation",
                         "gates", "cellstats" */
  int since;          /* the format_version that added it: an older archive lacks it, and its
                         cells have no rows in it (absent, not damage) */
  size_t row_bytes;   /* of its row struct */
  hid_t (*row_type)(void); /* the memory compound type of a row (closed by the caller); the
                              file's is archive_packed of it */
  /* limits */
  int max_per_cell;   /* rows a listed cell may have (0: bounded by the budget only) */
  int (*done_rows)(const cs_config *cfg); /* rows a done cell of cfg has (NULL or < 0: any
                                             number; a cell of another family may have none) */
  /* result -> rows */
  int (*rows_of)(const cs_cell_result *r);  /* how many rows r has */
  int (*to_rows)(const cs_cell_result *r, void *rows, archive_points_stage *pts); /* r's rows
                              (zeroed) filled; pts: staged arrays the rows may point into */
  void (*rebase)(void *rows, size_t n, const archive_points_stage *pts); /* before they are
                              appended, rows that point into pts (NULL: none do) */
  /* rows -> result (alloc, place NULL: the rows index the /points arrays and are read with
   * them, archive_points_each) */
  int (*alloc)(cs_cell_result *r, int64_t n, const char *path); /* room for the cell's n rows
                              (its allocations taken from the budget) */
  const char *(*place)(cs_cell_result *r, const void *row, int64_t k, unsigned char *seen);
                           /* the cell's k-th row (table order) into r; seen: n flags, zeroed,
                              for the rows' own use; NULL, or why the row does not fit */
  int (*same)(const cs_cell_result *x, const cs_cell_result *y); /* x, y agree bitwise in it */
  /* optional */
  int (*create)(hid_t file, const cs_archive *a, const cs_spec *spec, const char *path);
                           /* NULL: an empty table of the packed row type, committed_rows 0 */
  const char *group;  /* the group holding it, made by create and read whole by info --check
                         (NULL: the root) */
  int export_csv;     /* 1: `curvsweep export` writes it as NAME.csv column by column from
                         row_type (archive_csv.c); 0: export has a writer of its own, or none */
} archive_cell_table;
enum { ARCHIVE_N_CELL_TABLES = 6 };
extern const archive_cell_table ARCHIVE_CELL_TABLES[ARCHIVE_N_CELL_TABLES];
/* The table of that dataset name, NULL when it is not a per-cell table. */
const archive_cell_table *archive_cell_table_named(const char *name);
/* The archive of format_version version has table t. */
int archive_cell_table_in(const archive_cell_table *t, int version);
/* The rows of table t a cell of that status and config must have: done_rows
 * for a done cell whose table states it, else -1 (any number up to
 * max_per_cell). Salvage and the journal check hold every cell to it; the
 * reader only refuses a done cell with none of the rows it should have. */
int archive_cell_table_want_rows(const archive_cell_table *t, cs_cell_status status,
                                 const cs_config *cfg);
/* Rows of results on their way into the per-cell tables (a batch of the
 * writer, a block of the bulk builder): per table a growing buffer, and
 * the per-point arrays the /points/index rows point into. */
typedef struct {
  unsigned char *rows[ARCHIVE_N_CELL_TABLES];
  size_t n[ARCHIVE_N_CELL_TABLES], cap[ARCHIVE_N_CELL_TABLES];
  archive_points_stage pts;
} archive_table_rows;
/* r's rows of every table appended to o (all of them, or none on failure). */
int archive_table_rows_add(archive_table_rows *o, const cs_cell_result *r);
/* The most rows o holds for one table. */
size_t archive_table_rows_most(const archive_table_rows *o);
/* The staged arrays, then each table's rows, appended to the open file (one
 * write each; committed_rows is the caller's commit point); o is empty after. */
int archive_table_rows_flush(hid_t file, archive_table_rows *o, const char *path);
void archive_table_rows_free(archive_table_rows *o);
/* committed_rows of every per-cell table of the open file set to its length. */
int archive_tables_commit(hid_t file, const char *path);
/* The statistics fields (bit k: ARCHIVE_STATS_FIELDS[k]) the /curvature
 * table of an open archive lacks: columns of a later format_version, read
 * as NaN (cs_cell_result.stats_absent). 0 when the table cannot be opened
 * (its read then fails on its own). */
uint64_t archive_stats_absent(hid_t file);
/* A result's /curvature values as read from a table lacking file_absent
 * (archive_stats_absent) taken to this format_version's meanings, and its
 * stats_absent set: format_version ≤ 5 (no sink_headmax column) stored an
 * lm cell's largest per-head first-token share as max_attn, which becomes
 * its sink_headmax, its max_attn absent (NaN); docs/ARCHIVE.md, "Versions". */
void archive_curv_as_read(cs_cell_result *r, cs_family family, uint64_t file_absent);
/* The stats_absent bit of the statistics field at offset off in geom_stats. */
uint64_t archive_stats_bit(size_t off);

/* ======== archive_compare.c ======== */
/* (archive_status_rank and archive_same_values: archive.h) The fields of x
 * and y agree bitwise (both absent counts as agreeing). */
int archive_same_fields(const cs_cell_result *x, const cs_cell_result *y);
/* Two /runs rows agree in every column. */
int archive_same_run(const cs_run_info *x, const cs_run_info *y);

/* ======== archive_load.c ======== */
/* Open an existing archive and check its identity (format, version, plain
 * objects, /spec): on error the message names the file and the problem,
 * *cls says which kind. */
int archive_probe(const char *path, unsigned flags, hid_t *file, archive_meta *meta,
                  archive_probe_class *cls);
/* Every /cells row into a's rows (a->spec bounds them); any failure is a
 * damaged file (CS_ERR_INPUT, naming it). */
int archive_load_rows(cs_archive *a, hid_t file, const char *path);
/* The rows of table name (open as ds) that belong to finished writes
 * (*valid) and its length. */
int archive_table_valid_rows(const cs_archive *a, hid_t ds, const char *path, const char *name,
                             hsize_t *valid, hsize_t *length);
/* a->n_runs from the file's /runs. */
int archive_read_n_runs(cs_archive *a, hid_t file);
/* --overwrite replaces only a curvsweep archive (docs/SECURITY.md): CS_OK
 * when nothing is at path or it opens as HDF5 with the root attribute
 * format = "curvsweep"; otherwise CS_ERR_INPUT naming path. */
int archive_check_replaceable(const char *path);

/* ======== archive_points_read.c: /points read ======== */
/* A cell's per-point arrays as its spec allows them: 1..points points of
 * m = input_dim coordinates, 0..ARCHIVE_MAX_DEPTH prefixes (1, or 0). */
int archive_points_fit(const cs_config *cfg, int n_points, int m, int depth);
/* The valid rows of /points/index (malloc'ed) in storage order, each row of
 * a finished listed cell as a->spec allows it and not overlapping another's
 * values: a refusal naming the row otherwise (what every reader checks). */
int archive_points_index_checked(hid_t file, const cs_archive *a, const char *path,
                                 archive_point_row **rows, int64_t *n);
/* The same, the rows not kept. */
int archive_points_index_check(hid_t file, const cs_archive *a, const char *path);
/* Every finished listed cell's arrays, in storage order, each array read a
 * block at a time: fn(ctx, /cells row, pts) with pts holding the cell's
 * cell_id, n_points, m, depth and arrays that point into the blocks, valid
 * during the call only (lend them, or copy them with archive_points_take). */
typedef int (*archive_points_fn)(void *ctx, int64_t row, cs_cell_result *pts);
int archive_points_each(hid_t file, const cs_archive *a, const char *path, archive_points_fn fn,
                        void *ctx);
/* pts's arrays into r, which has none: copied (take: x and the arrays in
 * keep, ARCHIVE_POINTS_* of archive.h; r owns them) or lent (r points at
 * pts's arrays until unlend); a second set, or a depth r's /curvature
 * disagrees with, is refused as damage. */
int archive_points_take(cs_cell_result *r, const cs_cell_result *pts, unsigned keep,
                        const char *path);
int archive_points_lend(cs_cell_result *r, const cs_cell_result *pts, const char *path);
void archive_points_unlend(cs_cell_result *r);
/* One cell's arrays (its index row given) into r (archive_points_take). */
int archive_points_read_cell(hid_t file, const char *path, const cs_spec *spec,
                             const archive_point_row *row, cs_cell_result *r);
/* Free r's per-point arrays (the rest of r kept). */
void archive_points_free(cs_cell_result *r);
/* The /points/<cell_id> group of format_version 2, 3 into r (none: r
 * unchanged); a group that cannot be read whole is a CS_ERR_INPUT naming
 * it. */
int archive_read_points(hid_t file, const char *path, cs_cell_result *r);

/* ======== archive_create.c ======== */
/* mkdir -p of the directory that will hold path. */
int archive_make_parent_dirs(const char *path);
/* A complete pending archive of spec (rows of a) under a temporary name
 * beside a->path, synced; the name into *tmp_out (renamed into place by
 * the caller). */
int archive_create_temp(const cs_archive *a, const cs_spec *spec, char **tmp_out);
int archive_rename_into_place(const char *tmp, const char *path);

/* ======== archive_read.c ======== */
int archive_reader_open(const char *path, archive_reader *rd);
/* Open again an archive whose rows (a, from an earlier archive_reader_open
 * of the same file) are kept: identity checked, /cells not read again; rd
 * owns a from here. */
int archive_reader_open_rows(const char *path, cs_archive *a, archive_reader *rd);
void archive_reader_close(archive_reader *rd);
int archive_read_table(archive_reader *rd, const char *name, hid_t mtype, void **rows, hsize_t *n);
int archive_read_results_rd(archive_reader *rd, cs_cell_result **results, int64_t *n_out);
/* ARCHIVE_READ_NO_GROUPS: the tables only, no /points, /params or /fields. */
enum { ARCHIVE_READ_NO_GROUPS = 1 };
int archive_read_results_flags(archive_reader *rd, int flags, cs_cell_result **results,
                               int64_t *n_out);
/* The per-cell groups of r->cell_id, when present: /params, /fields, and /points of
 * format_version 2 and 3 (version 4 keeps /points in tables, read by
 * archive_points_each). */
int archive_read_cell_groups(const archive_reader *rd, cs_cell_result *r);
void archive_results_free(cs_cell_result *res, int64_t n);

/* ======== archive_write.c: results (batched) or a /runs row into an open file ======== */
int archive_check_result(const cs_archive *a, const cs_cell_result *r);
/* The part of archive_check_result that needs no archive: the result's
 * arrays agree with its counts (depth, curve points, gate blocks, points,
 * fields, tensors); path names it in the error. */
int archive_check_result_shape(const char *path, const cs_cell_result *r);
/* Results on their way into an open file: groups already written, table
 * rows and /cells rows kept for the batch's commit point. */
typedef struct {
  archive_table_rows tabs;    /* the batch's rows of the per-cell tables */
  archive_cell_row *cells;
  int64_t *cell_idx;          /* /cells row of each entry of cells */
  size_t n_cells, cap_cells, cap_idx;
  unsigned char *in_batch;    /* per /cells row: in this batch */
} archive_batch;
int archive_batch_add(cs_archive *a, hid_t file, archive_batch *b, const cs_cell_result *r);
int archive_batch_commit(cs_archive *a, hid_t file, archive_batch *b);
void archive_batch_free(archive_batch *b);
/* A batch of one: the result written and committed. */
int archive_apply_result(cs_archive *a, hid_t file, const cs_cell_result *r);
int archive_apply_run(cs_archive *a, hid_t file, int64_t row, const cs_run_info *run);
/* 0, or -1 when the row cannot be read. */
int archive_read_run(hid_t file, int64_t row, cs_run_info *run);

/* ======== archive_journal.c ======== */
int archive_journal_append(cs_archive *a, uint32_t kind, const void *payload, size_t n, int sync);
int archive_journal_append_at(cs_archive *a, uint32_t kind, const void *payload, size_t n, int sync,
                              off_t *payload_at);
/* Seed a journal that does not cover the archive yet (docs/ARCHIVE.md,
 * "Write protocol", step 1); nothing when it does. */
int archive_journal_seed(cs_archive *a);
/* Apply journaled results (refs into the journal, in order) as one batch. */
int archive_journal_apply_refs(cs_archive *a, hid_t file, const archive_record_ref *refs, int64_t n);
int archive_journal_reset(cs_archive *a, int covers);
int archive_journal_set_dirty(cs_archive *a, uint32_t dirty, int sync);
int archive_journal_lock(cs_archive *a, int *created);
void archive_journal_abandon(cs_archive *a, int created);
void archive_scan_free(archive_journal_scan *s);
int archive_journal_scan_fd(int fd, const char *jpath, archive_journal_scan *s);
int archive_journal_result(cs_archive *a, const cs_cell_result *r, int sync);
int archive_window_begin(cs_archive *a, int sync);
int archive_window_end(cs_archive *a);
int archive_journal_replay(cs_archive *a, hid_t file, const archive_journal_scan *s, int rebuilt,
                           int dry, int *needed);
int archive_journal_check_spec(const cs_archive *a, const archive_journal_scan *s);
int archive_check_not_interrupted(const char *path);
/* The payload of a scanned record into a fresh buffer. */
int archive_journal_read_payload(int fd, const archive_record_ref *ref, const char *jpath,
                                 unsigned char **buf);
/* A scanned result record read and unpacked into r (zeroed first; r is
 * the caller's to result_free, also after a failure). */
int archive_journal_read_result(const cs_archive *a, const archive_record_ref *ref, cs_cell_result *r);

/* ======== archive_journal_check.c: records checked against the spec ======== */
/* A result as the readers of an archive would accept it from its rows and
 * groups, with the spec of the archive (the row validators of
 * archive_guard.c, archive_tables.c, archive_points_read.c,
 * archive_fields.c, archive_params.c): a refusal naming path and the cell. */
int archive_result_check_spec(const char *path, const cs_spec *spec, const cs_cell_result *r);
/* Every result record of s so checked before anything is applied: a
 * refusal (CS_ERR_INPUT) names the journal, the record's index and its
 * cell. */
int archive_journal_check_records(cs_archive *a, const cs_spec *spec, const archive_journal_scan *s);
/* The verified close (docs/ARCHIVE.md, "Resume protocol"): every finished
 * result the journal records (the last record of its cell) is read back
 * from the archive and compared with archive_same_values, and /runs is read.
 * *intact: all of it is there. A damaged or unreadable archive is not an
 * error here, only !*intact. */
int archive_journal_verify(cs_archive *a, const archive_journal_scan *s, int *intact);

/* ======== archive_open.c ======== */
/* Rebuild from spec + journal (docs/ARCHIVE.md, "Resume protocol"): a new
 * file listing the cells of mask (keep_rows: and the rows a lists) and every
 * journaled cell, every record applied, put in place of the old file (set
 * aside as ARCHIVE.damaged-<UTC time>, never deleted). */
int archive_rebuild(cs_archive *a, const cs_spec *spec, const unsigned char *mask,
                    const archive_journal_scan *s, int keep_rows);
/* archive_open_write without the grow (archive_grow.c opens the old archive
 * under its own spec with it): create, overwrite or resume path. */
int archive_writer_open(const char *path, const cs_spec *spec, cs_archive_mode mode,
                        const unsigned char *mask, cs_archive **out);

/* ======== archive_commit.c, archive_build.c, archive_check.c, archive_salvage.c: archive.h ======== */

/* ======== archive_merge.c: the merge machinery, also for growing ======== */
/* Build, under a temporary name beside out (*tmp, not renamed into place),
 * the archive of out_spec holding every result of the inputs mapped to
 * out_spec's cells by config, listing their cells and those of mask (NULL:
 * none more). */
int archive_merge_to_temp(const char *out, const char *const *inputs, int n_inputs,
                          const cs_spec *out_spec, const unsigned char *mask, char **tmp);

/* ======== archive_grow.c ======== */
/* Before a resume of path with spec (docs/ARCHIVE.md, "Growing a sweep"):
 * nothing when there is no readable archive or it has spec's identity; a
 * refusal naming the keys when spec does not grow its spec; otherwise the
 * archive is brought up to date with its own spec and rebuilt for spec
 * (its results kept, mapped to spec's cell ids by config, the cells of mask
 * added pending), the old file kept as ARCHIVE.before-grow-<UTC time>. */
int archive_grow_if_needed(const char *path, const cs_spec *spec, const unsigned char *mask);

#endif
