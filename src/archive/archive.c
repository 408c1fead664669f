/* archive.c — the HDF5 result archive (docs/ARCHIVE.md, format_version 2) and its
 * journal. Serial HDF5, used by rank 0 only.
 *
 * ======================================================================
 * On-disk layout (field names are part of the contract)
 * ======================================================================
 * Root attributes (fixed-length ASCII strings unless noted):
 *   format           "curvsweep"
 *   format_version   2 (32-bit integer; 1 was written before per-point
 *                    rounding errors and classes, and is refused)
 *   software_version CS_VERSION of the writer, e.g. "0.1.0"
 *   created          UTC ISO 8601, "2026-05-01T12:34:56Z"
 *   spec_sha256      hex SHA-256 of /spec
 *   spec_name        [sweep] name of the spec
 *
 * /spec   1-D dataset of one fixed-length string: the spec text exactly as
 *         read (h5py: f["spec"][0]). Chunked with shuffle + deflate +
 *         Fletcher32 like every other dataset; its SHA-256 must equal
 *         spec_sha256 (checked at every open). Archives written before
 *         carry a scalar /spec; it is read as well (archive_spec.c).
 * The file is written with libver bounds (v110, latest): superblock,
 * object headers and B-trees of that format carry checksums, so damaged
 * metadata is an error on read, never a silently different value.
 *
 * /cells  1-D compound table, one row per selected cell in ascending
 *         cell_id, all written at creation as pending:
 *   cell_id     int64
 *   arch        string[32]   ("ungated", "gated", "gated-headwise", "mlp")
 *   depth       int64
 *   task        string[32]   ("linear", "circles", ...)
 *   seed        int64
 *   <axis>      every other [grid] axis in [grid] order, by its key name:
 *               string axes string[max value length + 1, at least 8],
 *               integer axes int64, real axes float64
 *   status      string[16]   "pending" | "done" | "failed" | "diverged"
 *   rank        int32        world rank that ran it; -1 while pending
 *   attempts    int32
 *   wall_s, train_loss, train_acc, test_acc   float64 (NaN while pending)
 *   n_params    int64
 *   message     string[256]  why a cell failed or diverged, else ""
 *   Strings are NUL-terminated, NUL-padded (h5py: bytes, dtype "S<n>").
 *
 * /curvature  1-D compound table, one row per (cell_id, prefix):
 *   cell_id int64, prefix int32 (1..L), n_points int32, then float64
 *   degenerate_frac, unresolved_frac, flat_frac, curved_frac,
 *   K_mean, K_median, K_absmean, K_q05, K_q95, K_fracpos, S_mean, S_se,
 *   Kt_mean, Kt_median, Kt_absmean, Kt_q05, Kt_q95, Kt_fracpos, St_mean,
 *   Kh_mean, Kh_median, Kh_absmean, Kh_q05, Kh_q95, Kh_fracpos,
 *   aniso_median, H_norm_mean, logdet_mean, intK, intabsK, intK_err
 *   (geom_stats names).
 * /curves     1-D compound table: cell_id int64, epoch int32,
 *             train_loss, train_acc, test_acc float64.
 *   Both carry an int64 attribute committed_rows: rows at and beyond it
 *   belong to a write that was interrupted (a crash between appending the
 *   rows and marking the cell finished); they are ignored by readers and
 *   cut away by the next writer. Rows of one cell are contiguous, in
 *   prefix / epoch order.
 *
 * /points/<cell_id>/ (save_points): x (n_points × m) float64, and
 *   S, S_err, S_tilde, tr_g, logdet_g, H_norm (L × n_points) float64 (NaN
 *   at degenerate points), class (L × n_points) enum over int8
 *   {degenerate 0, flat 1, curved 2, unresolved 3}; row l-1 = prefix l.
 * /params/<cell_id>/<tensor name> (save_params): every tensor as a 2-D
 *   float64 dataset (rows × cols, row-major; vectors are 1 × n), names
 *   with "/" as nested groups (embed/W -> group embed, dataset W). The
 *   group /params/<cell_id> has an attribute "tensors": 1-D string[48]
 *   array of the tensor names in model order.
 *
 * /runs  1-D compound table, one row per invocation: start string[32],
 *   end string[32] ("" while running), hosts string[256], ranks int32,
 *   team string[16], shard string[32], slurm_job string[64],
 *   nodelist string[256], requeue_count int32, cells_run int64.
 *
 * ======================================================================
 * Journal (ARCHIVE.journal, native byte order: same machine, same build)
 * ======================================================================
 *   header  archive_journal_header: magic "CSJRNL01", version, struct sizes
 *           of this build (a layout fingerprint), spec sha256, CRC-32, and
 *           a dirty flag outside the CRC.
 *   records archive_record_header {magic "CSR1", kind, payload length,
 *           CRC-32 of the first 16 header bytes and the payload} + payload:
 *           kind 1 result: result_pack() bytes of one cs_cell_result;
 *           kind 2/3 run begin/end: {int64 /runs row, cs_run_info};
 *           kind 4 COVER (no payload): every result the archive holds is
 *           in this journal (written at creation, or after seeding).
 * One write (result or run row):
 *   1. if the journal does not cover the archive yet (a journal started
 *      beside an archive that holds results: a merged archive, or one whose
 *      journal was removed when complete), seed it: every finished result
 *      and /runs row of the file, then COVER;
 *   2. dirty flag set, record appended, one fdatasync (durable: reported);
 *   3. HDF5: rows appended, groups written, H5Fflush, the /cells row and
 *      committed_rows (the commit point), H5Fclose;
 *   4. dirty flag cleared (it stays set if step 3 failed).
 * Resume: records are read up to the first torn, short or bad-checksum one
 * (never reported done; cut away). An archive that cannot be read, or whose
 * journal is dirty (a writer was killed inside step 3, so the file may be
 * inconsistent in ways no check sees), is rebuilt from spec + journal when
 * the journal covers it: a complete new file is built under a temp name,
 * the old one renamed ARCHIVE.damaged-<UTC time> (never deleted), the new
 * one renamed into place. Otherwise rows beyond committed_rows are cut and
 * every record whose cell is not in that state in the file is applied. The
 * journal is removed at close once the file holds all of it and no cell is
 * pending (or it holds no record). The journal file also carries the
 * writer's lock (flock), so two writers never share an archive.
 */
#include "curvsweep/archive.h"

#include "archive_internal.h"
#include "curvsweep/config.h"
#include "curvsweep/error.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifndef CS_VERSION
#define CS_VERSION "unknown"
#endif

/* ------------------------------------------------------------------------ */
/* constants and row structs                                                  */

#define ARCHIVE_NAME_BYTES 32     /* arch, task columns */
#define ARCHIVE_STATUS_BYTES 16
#define ARCHIVE_MESSAGE_BYTES 256
#define ARCHIVE_TENSOR_NAME_BYTES 48
#define ARCHIVE_CHUNK_BYTES 8192 /* target uncompressed chunk size: small, since every append rewrites (recompresses) its chunk */
#define ARCHIVE_DEFLATE_LEVEL 4
#define ARCHIVE_BLOCK_ROWS 65536  /* rows per read/write block of big tables */

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

/* The float64 columns of /curvature, in file order, and where they live. */
static const struct {
  const char *name;
  size_t offset;
} ARCHIVE_STATS_FIELDS[] = {
    {"degenerate_frac", offsetof(geom_stats, degenerate_frac)},
    {"unresolved_frac", offsetof(geom_stats, unresolved_frac)},
    {"flat_frac", offsetof(geom_stats, flat_frac)},
    {"curved_frac", offsetof(geom_stats, curved_frac)},
    {"K_mean", offsetof(geom_stats, K_mean)},
    {"K_median", offsetof(geom_stats, K_median)},
    {"K_absmean", offsetof(geom_stats, K_absmean)},
    {"K_q05", offsetof(geom_stats, K_q05)},
    {"K_q95", offsetof(geom_stats, K_q95)},
    {"K_fracpos", offsetof(geom_stats, K_fracpos)},
    {"S_mean", offsetof(geom_stats, S_mean)},
    {"S_se", offsetof(geom_stats, S_se)},
    {"Kt_mean", offsetof(geom_stats, Kt_mean)},
    {"Kt_median", offsetof(geom_stats, Kt_median)},
    {"Kt_absmean", offsetof(geom_stats, Kt_absmean)},
    {"Kt_q05", offsetof(geom_stats, Kt_q05)},
    {"Kt_q95", offsetof(geom_stats, Kt_q95)},
    {"Kt_fracpos", offsetof(geom_stats, Kt_fracpos)},
    {"St_mean", offsetof(geom_stats, St_mean)},
    {"Kh_mean", offsetof(geom_stats, Kh_mean)},
    {"Kh_median", offsetof(geom_stats, Kh_median)},
    {"Kh_absmean", offsetof(geom_stats, Kh_absmean)},
    {"Kh_q05", offsetof(geom_stats, Kh_q05)},
    {"Kh_q95", offsetof(geom_stats, Kh_q95)},
    {"Kh_fracpos", offsetof(geom_stats, Kh_fracpos)},
    {"aniso_median", offsetof(geom_stats, aniso_median)},
    {"H_norm_mean", offsetof(geom_stats, H_norm_mean)},
    {"logdet_mean", offsetof(geom_stats, logdet_mean)},
    {"intK", offsetof(geom_stats, intK)},
    {"intabsK", offsetof(geom_stats, intabsK)},
    {"intK_err", offsetof(geom_stats, intK_err)},
};
#define ARCHIVE_N_STATS_FIELDS (sizeof ARCHIVE_STATS_FIELDS / sizeof ARCHIVE_STATS_FIELDS[0])

/* /points/<id>/class: an HDF5 enum over int8 with the geom_class codes. */
static hid_t archive_class_type(hid_t base) {
  static const struct {
    const char *name;
    int8_t code;
  } CODES[] = {{"degenerate", GEOM_DEGENERATE}, {"flat", GEOM_FLAT}, {"curved", GEOM_CURVED},
               {"unresolved", GEOM_UNRESOLVED}};
  hid_t t = H5Tenum_create(base);
  for (size_t i = 0; t >= 0 && i < sizeof CODES / sizeof CODES[0]; i++)
    H5Tenum_insert(t, CODES[i].name, &CODES[i].code);
  return t;
}

/* Journal file header and record header (see the top comment). */
#define ARCHIVE_JOURNAL_MAGIC "CSJRNL01"
#define ARCHIVE_RECORD_MAGIC 0x31525343u /* "CSR1" little-endian */
enum { ARCHIVE_REC_RESULT = 1, ARCHIVE_REC_RUN_BEGIN = 2, ARCHIVE_REC_RUN_END = 3, ARCHIVE_REC_COVER = 4 };

typedef struct {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;
  uint32_t result_bytes, stats_bytes, tensor_bytes, run_bytes;
  char spec_sha256[72];
  uint32_t crc;      /* CRC-32 of every byte before it */
  uint32_t dirty;    /* 1 while an HDF5 write may be in progress (not in the CRC) */
} archive_journal_header;

typedef struct {
  uint32_t magic;
  uint32_t kind;
  uint64_t length;   /* payload bytes */
  uint32_t crc;      /* CRC-32 of the 16 bytes above and the payload */
  uint32_t reserved;
} archive_record_header;

typedef struct {
  int64_t row; /* /runs row at the time of writing */
  cs_run_info info;
} archive_run_payload;

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
  char spec_sha256[65];
};

/* ------------------------------------------------------------------------ */
/* small utilities                                                            */

/* CRC-32 (IEEE 802.3, reflected 0xEDB88320), 4 bits at a time. */
static uint32_t archive_crc32(uint32_t crc, const void *data, size_t n) {
  static const uint32_t table[16] = {
      0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u,
      0x4DB26158u, 0x5005713Cu, 0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
      0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu};
  const unsigned char *p = data;
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    crc = (crc >> 4) ^ table[crc & 15];
    crc = (crc >> 4) ^ table[crc & 15];
  }
  return ~crc;
}

/* UTC now as ISO 8601 ("2026-05-01T12:34:56Z"); compact = "20260501T123456Z". */
static void archive_utc_now(char *buf, size_t len, int compact) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, compact ? "%Y%m%dT%H%M%SZ" : "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static char *archive_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *archive_strdup_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

/* Copy a string, truncating to len - 1 bytes; dst always NUL-terminated. */
static void archive_copy_str(char *dst, size_t len, const char *src) {
  if (len == 0) return;
  size_t n = src ? strnlen(src, len - 1) : 0;
  if (n) memcpy(dst, src, n);
  dst[n] = '\0';
}

/* Directory part of path ("." when none), into a malloc'ed string. */
static char *archive_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return archive_strdup_printf(".");
  if (slash == path) return archive_strdup_printf("/");
  return archive_strdup_printf("%.*s", (int)(slash - path), path);
}

/* mkdir -p of the directory that will hold path. */
static int archive_make_parent_dirs(const char *path) {
  char *dir = archive_dirname(path);
  if (!dir) return cs_error(CS_ERR_NOMEM, "out of memory");
  int rc = CS_OK;
  size_t n = strlen(dir);
  for (size_t i = 1; i <= n && rc == CS_OK; i++) {
    if (dir[i] != '/' && dir[i] != '\0') continue;
    char keep = dir[i];
    dir[i] = '\0';
    struct stat st;
    if (stat(dir, &st) != 0) {
      if (errno != ENOENT || (mkdir(dir, 0777) != 0 && errno != EEXIST))
        rc = cs_error(CS_ERR_IO, "cannot create the directory %s for the archive %s: %s", dir, path,
                      strerror(errno));
    } else if (!S_ISDIR(st.st_mode)) {
      rc = cs_error(CS_ERR_IO, "cannot create the archive %s: %s is not a directory (%s)", path, dir,
                    strerror(ENOTDIR));
    }
    dir[i] = keep;
  }
  free(dir);
  return rc;
}

/* fsync a directory so a rename or a new file in it is durable. */
void archive_fsync_dir(const char *path) {
  char *dir = archive_dirname(path);
  if (!dir) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(dir);
}

static int archive_fsync_file(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return cs_error(CS_ERR_IO, "cannot open %s to sync it: %s", path, strerror(errno));
  int rc = fsync(fd) == 0 ? CS_OK : cs_error(CS_ERR_IO, "cannot sync %s: %s", path, strerror(errno));
  close(fd);
  return rc;
}

static int archive_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* ------------------------------------------------------------------------ */
/* HDF5 helpers                                                               */

/* Library code never prints: HDF5's automatic error printing is switched
 * off inside every public function and restored on the way out. */
typedef struct {
  H5E_auto2_t func;
  void *data;
} archive_quiet;

/* HDF5 clears its error stack at the next API call, so a helper that must
 * close things after a failure notes the reason first (archive_h5_note). */
static _Thread_local char archive_saved_reason[256];

static archive_quiet archive_quiet_begin(void) {
  archive_quiet q = {NULL, NULL};
  H5Eget_auto2(H5E_DEFAULT, &q.func, &q.data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  archive_saved_reason[0] = '\0';
  return q;
}

static void archive_quiet_end(archive_quiet q) { H5Eset_auto2(H5E_DEFAULT, q.func, q.data); }

static herr_t archive_h5_walk(unsigned n, const H5E_error2_t *e, void *data) {
  if (n == 0 && e->desc) archive_copy_str(data, 256, e->desc);
  return 0;
}


static void archive_h5_note(void) {
  char buf[256] = "";
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, archive_h5_walk, buf);
  if (buf[0]) archive_copy_str(archive_saved_reason, sizeof archive_saved_reason, buf);
}

/* The innermost HDF5 error description (what actually went wrong). */
static const char *archive_h5_reason(char buf[256]) {
  buf[0] = '\0';
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, archive_h5_walk, buf);
  if (!buf[0]) archive_copy_str(buf, 256, archive_saved_reason);
  if (!buf[0]) archive_copy_str(buf, 256, "HDF5 error");
  archive_saved_reason[0] = '\0';
  return buf;
}

/* cs_error with the HDF5 reason appended: "<message>: <reason>". */
int archive_h5_error(int code, const char *fmt, ...) {
  char reason[256], msg[1536];
  archive_h5_reason(reason);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return cs_error(code, "%s: %s", msg, reason);
}

static void archive_h5_close_id(hid_t *id, herr_t (*close_fn)(hid_t)) {
  if (*id >= 0) close_fn(*id);
  *id = H5I_INVALID_HID;
}

/* File access: sec2 driver, no HDF5 file locking (a reader such as an open
 * h5py session must never make the sweep's writes fail; the journal lock
 * keeps writers exclusive), every object closed with the file. */
static hid_t archive_fapl(void) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0) return fapl;
  H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
  H5Pset_file_locking(fapl, 0, 1);
  return fapl;
}

/* Writers use the HDF5 1.10 file format (libver bounds v110..latest):
 * checksummed superblock, object headers and B-trees, also for objects a
 * later writer adds to an archive first written with older bounds. */
static hid_t archive_h5_open(const char *path, unsigned flags) {
  hid_t fapl = archive_fapl();
  if (fapl < 0) return fapl;
  if ((flags & H5F_ACC_RDWR) && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST) < 0) {
    H5Pclose(fapl);
    return H5I_INVALID_HID;
  }
  hid_t f = H5Fopen(path, flags, fapl);
  H5Pclose(fapl);
  return f;
}

static hid_t archive_h5_create(const char *path) {
  hid_t fapl = archive_fapl();
  if (fapl < 0) return fapl;
  if (H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST) < 0) {
    H5Pclose(fapl);
    return H5I_INVALID_HID;
  }
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  return f;
}

/* Fixed-length NUL-terminated ASCII string type of n bytes. */
static hid_t archive_str_type(size_t n) {
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t < 0) return t;
  H5Tset_size(t, n);
  H5Tset_strpad(t, H5T_STR_NULLTERM);
  return t;
}

/* Dataset creation: chunked, shuffle + deflate + Fletcher32. */
hid_t archive_dcpl(int rank, const hsize_t *chunk) {
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (dcpl < 0) return dcpl;
  if (H5Pset_chunk(dcpl, rank, chunk) < 0 || H5Pset_shuffle(dcpl) < 0 ||
      H5Pset_deflate(dcpl, ARCHIVE_DEFLATE_LEVEL) < 0 || H5Pset_fletcher32(dcpl) < 0) {
    H5Pclose(dcpl);
    return H5I_INVALID_HID;
  }
  return dcpl;
}

static int archive_attr_write(hid_t obj, const char *name, hid_t type, const void *value,
                              const char *path) {
  hid_t space = H5Screate(H5S_SCALAR), attr = H5I_INVALID_HID;
  int rc = CS_OK;
  if (H5Aexists(obj, name) > 0) attr = H5Aopen(obj, name, H5P_DEFAULT);
  else attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (space < 0 || attr < 0 || H5Awrite(attr, type, value) < 0) {
    archive_h5_note();
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot write the attribute %s", path, name);
  }
  archive_h5_close_id(&attr, H5Aclose);
  archive_h5_close_id(&space, H5Sclose);
  return rc;
}

static int archive_attr_write_str(hid_t obj, const char *name, const char *value, const char *path) {
  hid_t t = archive_str_type(strlen(value) + 1);
  if (t < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot make a string type", path);
  int rc = archive_attr_write(obj, name, t, value, path);
  H5Tclose(t);
  return rc;
}

static int archive_attr_write_i64(hid_t obj, const char *name, hid_t file_type, int64_t v,
                                  const char *path) {
  hid_t space = H5Screate(H5S_SCALAR), attr = H5I_INVALID_HID;
  int rc = CS_OK;
  if (H5Aexists(obj, name) > 0) attr = H5Aopen(obj, name, H5P_DEFAULT);
  else attr = H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (space < 0 || attr < 0 || H5Awrite(attr, H5T_NATIVE_INT64, &v) < 0) {
    archive_h5_note();
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot write the attribute %s", path, name);
  }
  archive_h5_close_id(&attr, H5Aclose);
  archive_h5_close_id(&space, H5Sclose);
  return rc;
}

/* Read a string attribute (fixed or variable length) into buf.
 * Returns 0, or -1 when it is missing or not a string. */
static int archive_attr_read_str(hid_t obj, const char *name, char *buf, size_t len) {
  buf[0] = '\0';
  if (H5Aexists(obj, name) <= 0) return -1;
  hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
  if (attr < 0) return -1;
  hid_t ft = H5Aget_type(attr), mt = H5I_INVALID_HID;
  int ok = -1;
  if (ft >= 0 && H5Tget_class(ft) == H5T_STRING) {
    if (H5Tis_variable_str(ft) > 0) {
      char *s = NULL;
      mt = H5Tcopy(H5T_C_S1);
      H5Tset_size(mt, H5T_VARIABLE);
      if (H5Aread(attr, mt, &s) >= 0 && s) {
        archive_copy_str(buf, len, s);
        H5free_memory(s);
        ok = 0;
      }
    } else {
      size_t n = H5Tget_size(ft);
      char *tmp = calloc(n + 1, 1);
      mt = archive_str_type(n + 1);
      if (tmp && H5Aread(attr, mt, tmp) >= 0) {
        archive_copy_str(buf, len, tmp);
        ok = 0;
      }
      free(tmp);
    }
  }
  archive_h5_close_id(&mt, H5Tclose);
  archive_h5_close_id(&ft, H5Tclose);
  H5Aclose(attr);
  return ok;
}

/* Read an integer attribute. Returns 0, or -1 when missing or not an integer. */
static int archive_attr_read_i64(hid_t obj, const char *name, int64_t *v) {
  if (H5Aexists(obj, name) <= 0) return -1;
  hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
  if (attr < 0) return -1;
  hid_t ft = H5Aget_type(attr);
  int ok = ft >= 0 && H5Tget_class(ft) == H5T_INTEGER && H5Aread(attr, H5T_NATIVE_INT64, v) >= 0
               ? 0 : -1;
  archive_h5_close_id(&ft, H5Tclose);
  H5Aclose(attr);
  return ok;
}

static int archive_link_exists(hid_t loc, const char *name) {
  return H5Lexists(loc, name, H5P_DEFAULT) > 0;
}

/* ------------------------------------------------------------------------ */
/* compound types                                                             */

/* Memory type of the /cells result columns (archive_cell_row). */
static hid_t archive_cell_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(archive_cell_row));
  hid_t st = archive_str_type(ARCHIVE_STATUS_BYTES), mt = archive_str_type(ARCHIVE_MESSAGE_BYTES);
  H5Tinsert(t, "cell_id", HOFFSET(archive_cell_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(t, "status", HOFFSET(archive_cell_row, status), st);
  H5Tinsert(t, "rank", HOFFSET(archive_cell_row, rank), H5T_NATIVE_INT32);
  H5Tinsert(t, "attempts", HOFFSET(archive_cell_row, attempts), H5T_NATIVE_INT32);
  H5Tinsert(t, "wall_s", HOFFSET(archive_cell_row, wall_s), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "train_loss", HOFFSET(archive_cell_row, train_loss), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "train_acc", HOFFSET(archive_cell_row, train_acc), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "test_acc", HOFFSET(archive_cell_row, test_acc), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "n_params", HOFFSET(archive_cell_row, n_params), H5T_NATIVE_INT64);
  H5Tinsert(t, "message", HOFFSET(archive_cell_row, message), mt);
  H5Tclose(st);
  H5Tclose(mt);
  return t;
}

static hid_t archive_curv_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(archive_curv_row));
  H5Tinsert(t, "cell_id", HOFFSET(archive_curv_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(t, "prefix", HOFFSET(archive_curv_row, prefix), H5T_NATIVE_INT32);
  H5Tinsert(t, "n_points", HOFFSET(archive_curv_row, st.n_points), H5T_NATIVE_INT32);
  for (size_t i = 0; i < ARCHIVE_N_STATS_FIELDS; i++)
    H5Tinsert(t, ARCHIVE_STATS_FIELDS[i].name,
              offsetof(archive_curv_row, st) + ARCHIVE_STATS_FIELDS[i].offset, H5T_NATIVE_DOUBLE);
  return t;
}

static hid_t archive_curve_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(archive_curve_row));
  H5Tinsert(t, "cell_id", HOFFSET(archive_curve_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(t, "epoch", HOFFSET(archive_curve_row, epoch), H5T_NATIVE_INT32);
  H5Tinsert(t, "train_loss", HOFFSET(archive_curve_row, train_loss), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "train_acc", HOFFSET(archive_curve_row, train_acc), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "test_acc", HOFFSET(archive_curve_row, test_acc), H5T_NATIVE_DOUBLE);
  return t;
}

/* Memory type of a /runs row: cs_run_info itself. */
static hid_t archive_run_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(cs_run_info));
  hid_t s16 = archive_str_type(16), s32 = archive_str_type(32), s64 = archive_str_type(64),
        s256 = archive_str_type(256);
  H5Tinsert(t, "start", HOFFSET(cs_run_info, start), s32);
  H5Tinsert(t, "end", HOFFSET(cs_run_info, end), s32);
  H5Tinsert(t, "hosts", HOFFSET(cs_run_info, hosts), s256);
  H5Tinsert(t, "ranks", HOFFSET(cs_run_info, ranks), H5T_NATIVE_INT32);
  H5Tinsert(t, "team", HOFFSET(cs_run_info, team), s16);
  H5Tinsert(t, "shard", HOFFSET(cs_run_info, shard), s32);
  H5Tinsert(t, "slurm_job", HOFFSET(cs_run_info, slurm_job), s64);
  H5Tinsert(t, "nodelist", HOFFSET(cs_run_info, nodelist), s256);
  H5Tinsert(t, "requeue_count", HOFFSET(cs_run_info, requeue_count), H5T_NATIVE_INT32);
  H5Tinsert(t, "cells_run", HOFFSET(cs_run_info, cells_run), H5T_NATIVE_INT64);
  H5Tclose(s16), H5Tclose(s32), H5Tclose(s64), H5Tclose(s256);
  return t;
}

/* Packed copy of a memory compound type, for the file. */
static hid_t archive_packed(hid_t mem_type) {
  hid_t t = H5Tcopy(mem_type);
  if (t >= 0) H5Tpack(t);
  return t;
}

/* The full /cells row of a spec: fixed columns, the other axes, the result
 * columns; packed offsets (memory layout = file layout). */
typedef struct {
  int n_extra;           /* axes other than arch, depth, task, seed */
  int *extra_axis;       /* their spec axis indices */
  size_t *extra_off, *extra_width;
  size_t off_cell_id, off_arch, off_depth, off_task, off_seed, off_result;
  size_t row_bytes;
} archive_cells_layout;

static void archive_layout_free(archive_cells_layout *L) {
  free(L->extra_axis), free(L->extra_off), free(L->extra_width);
  memset(L, 0, sizeof *L);
}

static int archive_is_fixed_axis(const char *name) {
  return !strcmp(name, "arch") || !strcmp(name, "depth") || !strcmp(name, "task") ||
         !strcmp(name, "seed");
}

/* Widest text value of a string axis + 1 (at least 8): a function of the
 * spec only, so shards of one spec share one type. Row-major numbering:
 * value v of axis a is at cell v * stride(a). */
static int archive_axis_width(const cs_spec *spec, int axis, size_t *width) {
  int64_t stride = 1;
  for (int b = spec_axis_count(spec) - 1; b > axis; b--) stride *= spec_axis_length(spec, b);
  size_t w = 8;
  for (int v = 0; v < spec_axis_length(spec, axis); v++) {
    char text[256];
    CS_CHECK(spec_axis_value_text(spec, axis, (int64_t)v * stride, text, sizeof text));
    if (strlen(text) + 1 > w) w = strlen(text) + 1;
  }
  *width = w;
  return CS_OK;
}

static int archive_layout_build(const cs_spec *spec, archive_cells_layout *L) {
  memset(L, 0, sizeof *L);
  int na = spec_axis_count(spec);
  CS_CHECK(CS_CALLOC(L->extra_axis, na));
  CS_CHECK(CS_CALLOC(L->extra_off, na));
  CS_CHECK(CS_CALLOC(L->extra_width, na));
  // fixed columns first
  size_t off = 0;
  L->off_cell_id = off, off += 8;
  L->off_arch = off, off += ARCHIVE_NAME_BYTES;
  L->off_depth = off, off += 8;
  L->off_task = off, off += ARCHIVE_NAME_BYTES;
  L->off_seed = off, off += 8;
  // every other axis in [grid] order
  for (int a = 0; a < na; a++) {
    if (archive_is_fixed_axis(spec_axis_name(spec, a))) continue;
    size_t w = 8;
    if (spec_axis_type(spec, a) == SPEC_AXIS_STRING) CS_CHECK(archive_axis_width(spec, a, &w));
    L->extra_axis[L->n_extra] = a;
    L->extra_off[L->n_extra] = off;
    L->extra_width[L->n_extra] = w;
    L->n_extra++;
    off += w;
  }
  // the result columns, packed (archive_cell_row minus cell_id)
  L->off_result = off;
  off += ARCHIVE_STATUS_BYTES + 4 + 4 + 4 * 8 + 8 + ARCHIVE_MESSAGE_BYTES;
  L->row_bytes = off;
  return CS_OK;
}

static hid_t archive_layout_type(const cs_spec *spec, const archive_cells_layout *L) {
  hid_t t = H5Tcreate(H5T_COMPOUND, L->row_bytes);
  hid_t sname = archive_str_type(ARCHIVE_NAME_BYTES);
  H5Tinsert(t, "cell_id", L->off_cell_id, H5T_STD_I64LE);
  H5Tinsert(t, "arch", L->off_arch, sname);
  H5Tinsert(t, "depth", L->off_depth, H5T_STD_I64LE);
  H5Tinsert(t, "task", L->off_task, sname);
  H5Tinsert(t, "seed", L->off_seed, H5T_STD_I64LE);
  H5Tclose(sname);
  for (int i = 0; i < L->n_extra; i++) {
    int a = L->extra_axis[i];
    const char *name = spec_axis_name(spec, a);
    switch (spec_axis_type(spec, a)) {
      case SPEC_AXIS_INT: H5Tinsert(t, name, L->extra_off[i], H5T_STD_I64LE); break;
      case SPEC_AXIS_REAL: H5Tinsert(t, name, L->extra_off[i], H5T_IEEE_F64LE); break;
      default: {
        hid_t s = archive_str_type(L->extra_width[i]);
        H5Tinsert(t, name, L->extra_off[i], s);
        H5Tclose(s);
      }
    }
  }
  hid_t st = archive_str_type(ARCHIVE_STATUS_BYTES), mt = archive_str_type(ARCHIVE_MESSAGE_BYTES);
  size_t o = L->off_result;
  H5Tinsert(t, "status", o, st), o += ARCHIVE_STATUS_BYTES;
  H5Tinsert(t, "rank", o, H5T_STD_I32LE), o += 4;
  H5Tinsert(t, "attempts", o, H5T_STD_I32LE), o += 4;
  H5Tinsert(t, "wall_s", o, H5T_IEEE_F64LE), o += 8;
  H5Tinsert(t, "train_loss", o, H5T_IEEE_F64LE), o += 8;
  H5Tinsert(t, "train_acc", o, H5T_IEEE_F64LE), o += 8;
  H5Tinsert(t, "test_acc", o, H5T_IEEE_F64LE), o += 8;
  H5Tinsert(t, "n_params", o, H5T_STD_I64LE), o += 8;
  H5Tinsert(t, "message", o, mt);
  H5Tclose(st);
  H5Tclose(mt);
  return t;
}

/* Fill the full pending /cells row of one cell (packed, little-endian host). */
static int archive_layout_fill(const cs_spec *spec, const archive_cells_layout *L, int64_t cell,
                               unsigned char *row) {
  cs_config c;
  CS_CHECK(spec_cell_config(spec, cell, &c));
  memset(row, 0, L->row_bytes);
  int64_t depth = c.depth, seed = c.seed;
  memcpy(row + L->off_cell_id, &cell, 8);
  archive_copy_str((char *)row + L->off_arch, ARCHIVE_NAME_BYTES, config_arch_name(c.arch));
  memcpy(row + L->off_depth, &depth, 8);
  archive_copy_str((char *)row + L->off_task, ARCHIVE_NAME_BYTES, config_task_name(c.task));
  memcpy(row + L->off_seed, &seed, 8);
  for (int i = 0; i < L->n_extra; i++) {
    int a = L->extra_axis[i];
    char text[256];
    CS_CHECK(spec_axis_value_text(spec, a, cell, text, sizeof text));
    unsigned char *dst = row + L->extra_off[i];
    if (spec_axis_type(spec, a) == SPEC_AXIS_INT) {
      int64_t v = strtoll(text, NULL, 10);
      memcpy(dst, &v, 8);
    } else if (spec_axis_type(spec, a) == SPEC_AXIS_REAL) {
      double v = spec_axis_value_number(spec, a, cell);
      memcpy(dst, &v, 8);
    } else {
      archive_copy_str((char *)dst, L->extra_width[i], text);
    }
  }
  // result columns of a pending cell: rank -1, metrics NaN
  unsigned char *o = row + L->off_result;
  int32_t rank = -1, attempts = 0;
  double nan = NAN;
  int64_t n_params = 0;
  archive_copy_str((char *)o, ARCHIVE_STATUS_BYTES, "pending"), o += ARCHIVE_STATUS_BYTES;
  memcpy(o, &rank, 4), o += 4;
  memcpy(o, &attempts, 4), o += 4;
  for (int k = 0; k < 4; k++) memcpy(o, &nan, 8), o += 8;
  memcpy(o, &n_params, 8);
  return CS_OK;
}

/* ------------------------------------------------------------------------ */
/* 1-D tables                                                                 */

static hsize_t archive_table_chunk_rows(size_t row_bytes) {
  hsize_t n = ARCHIVE_CHUNK_BYTES / (row_bytes ? row_bytes : 1);
  return n < 16 ? 16 : n;
}

/* Create an empty extendible table (plus committed_rows = 0 when asked). */
static int archive_table_create(hid_t file, const char *name, hid_t ftype, int committed,
                                const char *path) {
  hsize_t dims = 0, maxdims = H5S_UNLIMITED, chunk = archive_table_chunk_rows(H5Tget_size(ftype));
  hid_t space = H5Screate_simple(1, &dims, &maxdims), dcpl = archive_dcpl(1, &chunk);
  hid_t ds = space >= 0 && dcpl >= 0
                 ? H5Dcreate2(file, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)
                 : H5I_INVALID_HID;
  int rc = ds < 0 ? archive_h5_error(CS_ERR_IO, "%s: cannot create the table /%s", path, name) : CS_OK;
  if (!rc && committed) rc = archive_attr_write_i64(ds, "committed_rows", H5T_STD_I64LE, 0, path);
  archive_h5_close_id(&ds, H5Dclose);
  archive_h5_close_id(&dcpl, H5Pclose);
  archive_h5_close_id(&space, H5Sclose);
  return rc;
}

static hsize_t archive_table_length(hid_t ds) {
  hid_t space = H5Dget_space(ds);
  hsize_t n = 0;
  if (space >= 0) {
    if (H5Sget_simple_extent_ndims(space) == 1) H5Sget_simple_extent_dims(space, &n, NULL);
    H5Sclose(space);
  }
  return n;
}

/* The length of a table for a reader: a dataspace that cannot be read or is
 * not 1-D is a damaged archive (never an empty table). */
static int archive_table_length_checked(hid_t ds, const char *path, const char *name, hsize_t *n) {
  *n = 0;
  hid_t space = H5Dget_space(ds);
  int nd = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
  int ok = nd == 1 && H5Sget_simple_extent_dims(space, n, NULL) == 1;
  if (!ok) archive_h5_note();
  if (space >= 0) H5Sclose(space);
  if (!ok)
    return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read the extent of /%s "
                            "(%d dimensions)", path, name, nd);
  return CS_OK;
}

/* Read or write rows [start, start+n) of a table with a memory type. */
static int archive_table_io(hid_t ds, hid_t mtype, hsize_t start, hsize_t n, void *rows, int write) {
  if (n == 0) return 0;
  hid_t fspace = H5Dget_space(ds), mspace = H5Screate_simple(1, &n, NULL);
  int ok = fspace >= 0 && mspace >= 0 &&
           H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &n, NULL) >= 0;
  if (ok) ok = (write ? H5Dwrite(ds, mtype, mspace, fspace, H5P_DEFAULT, rows)
                      : H5Dread(ds, mtype, mspace, fspace, H5P_DEFAULT, rows)) >= 0;
  if (!ok) archive_h5_note();
  if (mspace >= 0) H5Sclose(mspace);
  if (fspace >= 0) H5Sclose(fspace);
  return ok ? 0 : -1;
}

/* Append n rows at the end. */
static int archive_table_append(hid_t ds, hid_t mtype, const void *rows, hsize_t n,
                                const char *path, const char *name) {
  if (n == 0) return CS_OK;
  hsize_t len = archive_table_length(ds), new_len = len + n;
  if (H5Dset_extent(ds, &new_len) < 0 || archive_table_io(ds, mtype, len, n, (void *)rows, 1) < 0)
    return archive_h5_error(CS_ERR_IO, "%s: cannot append %llu rows to /%s", path,
                            (unsigned long long)n, name);
  return CS_OK;
}

/* ------------------------------------------------------------------------ */
/* cell rows in memory                                                        */

static int64_t archive_find_row(const cs_archive *a, int64_t cell_id) {
  int64_t lo = 0, hi = a->n_rows - 1;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (a->row_cell[mid] == cell_id) return mid;
    if (a->row_cell[mid] < cell_id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

static int archive_alloc_rows(cs_archive *a, int64_t n) {
  free(a->row_cell), free(a->row_status), free(a->row_attempts), free(a->row_selected);
  a->row_cell = NULL, a->row_status = NULL, a->row_attempts = NULL, a->row_selected = NULL;
  a->n_rows = n;
  CS_CHECK(CS_CALLOC(a->row_cell, n));
  CS_CHECK(CS_CALLOC(a->row_status, n));
  CS_CHECK(CS_CALLOC(a->row_attempts, n));
  CS_CHECK(CS_CALLOC(a->row_selected, n));
  return CS_OK;
}

static int archive_status_parse(const char *s) {
  for (int k = CELL_PENDING; k <= CELL_DIVERGED; k++)
    if (!strcmp(s, result_status_name((cs_cell_status)k))) return k;
  return -1;
}

static void archive_free(cs_archive *a) {
  if (!a) return;
  if (a->journal_fd >= 0) close(a->journal_fd);
  free(a->path), free(a->journal_path);
  free(a->row_cell), free(a->row_status), free(a->row_attempts), free(a->row_selected);
  free(a);
}

static int archive_new(const char *path, cs_archive **out) {
  cs_archive *a;
  *out = NULL;
  CS_CHECK(CS_CALLOC(a, 1));
  a->journal_fd = -1;
  a->run_row = -1;
  a->path = archive_strdup_printf("%s", path);
  a->journal_path = archive_strdup_printf("%s.journal", path);
  if (!a->path || !a->journal_path) {
    archive_free(a);
    return cs_error(CS_ERR_NOMEM, "out of memory");
  }
  *out = a;
  return CS_OK;
}

/* Rows of a new archive: the cells selected by mask, ascending. */
static int archive_rows_from_mask(cs_archive *a, const cs_spec *spec, const unsigned char *mask) {
  int64_t nc = spec_cell_count(spec), n = 0;
  for (int64_t c = 0; c < nc; c++) n += !mask || mask[c];
  CS_CHECK(archive_alloc_rows(a, n));
  n = 0;
  for (int64_t c = 0; c < nc; c++)
    if (!mask || mask[c]) a->row_cell[n] = c, a->row_selected[n] = 1, n++;
  return CS_OK;
}

/* ------------------------------------------------------------------------ */
/* probing an existing archive                                                */

typedef enum {
  ARCHIVE_PROBE_OK = 0,
  ARCHIVE_PROBE_UNREADABLE, /* empty, not HDF5, truncated or damaged */
  ARCHIVE_PROBE_FOREIGN     /* a readable HDF5 file that is not a curvsweep archive v1 */
} archive_probe_class;

typedef struct {
  char spec_sha256[65];
  char spec_name[128];
  char created[32];
  char software_version[32];
} archive_meta;

/* Open an existing archive and check its identity (format, version). On
 * error the message names the file and the problem, *cls says which kind. */
static int archive_probe(const char *path, unsigned flags, hid_t *file, archive_meta *meta,
                         archive_probe_class *cls) {
  *file = H5I_INVALID_HID;
  *cls = ARCHIVE_PROBE_UNREADABLE;
  memset(meta, 0, sizeof *meta);
  // the file itself
  struct stat st;
  if (stat(path, &st) != 0)
    return cs_error(errno == ENOENT ? CS_ERR_INPUT : CS_ERR_IO, "cannot open the archive %s: %s",
                    path, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return cs_error(CS_ERR_INPUT, "%s is not a regular file, so not a curvsweep archive", path);
  if (st.st_size == 0)
    return cs_error(CS_ERR_INPUT, "%s is empty (0 bytes): not a curvsweep archive", path);
  htri_t is = H5Fis_hdf5(path);
  if (is == 0)
    return cs_error(CS_ERR_INPUT, "%s is not an HDF5 file (no HDF5 signature), so not a curvsweep "
                    "archive", path);
  hid_t f = archive_h5_open(path, flags);
  if (f < 0)
    return archive_h5_error(CS_ERR_INPUT, "%s cannot be opened as HDF5 (the file is truncated or "
                            "damaged)", path);
  // identity: format, format_version
  char format[64];
  int64_t version = 0;
  *cls = ARCHIVE_PROBE_FOREIGN;
  int rc = CS_OK;
  if (archive_attr_read_str(f, "format", format, sizeof format) != 0)
    rc = cs_error(CS_ERR_INPUT, "%s is an HDF5 file but not a curvsweep archive (no 'format' "
                  "attribute)", path);
  else if (strcmp(format, ARCHIVE_FORMAT) != 0)
    rc = cs_error(CS_ERR_INPUT, "%s is an HDF5 file but not a curvsweep archive (format is '%s', "
                  "not '%s')", path, format, ARCHIVE_FORMAT);
  else if (archive_attr_read_i64(f, "format_version", &version) != 0)
    rc = cs_error(CS_ERR_INPUT, "%s: curvsweep archive without a format_version attribute", path);
  else if (version == 1)
    rc = cs_error(CS_ERR_INPUT, "%s has format_version 1, written before per-point rounding "
                  "errors: its curvature statistics count points zeroed by a rounding floor as "
                  "flat (docs/NUMERICS.md). This curvsweep (%s) reads format_version %d: re-run "
                  "the spec into a new archive, or read it with curvsweep 0.1", path, CS_VERSION,
                  ARCHIVE_FORMAT_VERSION);
  else if (version != ARCHIVE_FORMAT_VERSION)
    rc = cs_error(CS_ERR_INPUT, "%s has format_version %" PRId64 "; this curvsweep (%s) reads "
                  "format_version %d: use the curvsweep version that wrote it", path, version,
                  CS_VERSION, ARCHIVE_FORMAT_VERSION);
  else if (archive_attr_read_str(f, "spec_sha256", meta->spec_sha256, sizeof meta->spec_sha256) != 0)
    rc = cs_error(CS_ERR_INPUT, "%s: curvsweep archive without a spec_sha256 attribute", path);
  else if ((rc = archive_spec_verify(f, path, meta->spec_sha256)))
    *cls = ARCHIVE_PROBE_UNREADABLE;  // ours, damaged: rebuilt from a journal that covers it
  if (rc) {
    H5Fclose(f);
    return rc;
  }
  archive_attr_read_str(f, "spec_name", meta->spec_name, sizeof meta->spec_name);
  archive_attr_read_str(f, "created", meta->created, sizeof meta->created);
  archive_attr_read_str(f, "software_version", meta->software_version, sizeof meta->software_version);
  *cls = ARCHIVE_PROBE_OK;
  *file = f;
  return CS_OK;
}

/* Read every /cells row (result columns) into a->rows. Any failure here
 * means a damaged file (CS_ERR_INPUT, naming it). */
static int archive_load_rows(cs_archive *a, hid_t file, const char *path) {
  hid_t ds = H5Dopen2(file, "cells", H5P_DEFAULT), mt = archive_cell_row_type();
  archive_cell_row *buf = NULL;
  int rc = CS_OK;
  if (ds < 0) {
    rc = archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot open /cells", path);
    goto done;
  }
  hsize_t n = 0;
  if ((rc = archive_table_length_checked(ds, path, "cells", &n))) goto done;
  if ((rc = archive_alloc_rows(a, (int64_t)n))) goto done;
  if ((rc = CS_CALLOC(buf, ARCHIVE_BLOCK_ROWS))) goto done;
  for (hsize_t s = 0; s < n; s += ARCHIVE_BLOCK_ROWS) {
    hsize_t k = n - s < ARCHIVE_BLOCK_ROWS ? n - s : ARCHIVE_BLOCK_ROWS;
    if (archive_table_io(ds, mt, s, k, buf, 0) < 0) {
      rc = archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read /cells rows %llu..%llu",
                            path, (unsigned long long)s, (unsigned long long)(s + k - 1));
      goto done;
    }
    for (hsize_t i = 0; i < k; i++) {
      int64_t r = (int64_t)(s + i);
      int status = archive_status_parse(buf[i].status);
      if (status < 0 || (r > 0 && buf[i].cell_id <= a->row_cell[r - 1]) || buf[i].cell_id < 0) {
        rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: /cells row %" PRId64 " (cell_id %" PRId64
                      ", status '%.16s') is out of order or has an unknown status", path, r,
                      buf[i].cell_id, buf[i].status);
        goto done;
      }
      a->row_cell[r] = buf[i].cell_id;
      a->row_status[r] = (unsigned char)status;
      a->row_attempts[r] = buf[i].attempts;
    }
  }
done:
  free(buf);
  archive_h5_close_id(&mt, H5Tclose);
  archive_h5_close_id(&ds, H5Dclose);
  return rc;
}

/* Rows of a table that belong to finished writes: committed_rows, plus
 * rows beyond it when they all belong to cells already marked finished
 * (a crash after the /cells row but before committed_rows). */
static int archive_table_valid_rows(const cs_archive *a, hid_t ds, const char *path,
                                    const char *name, hsize_t *valid, hsize_t *length) {
  hsize_t n = 0;
  CS_CHECK(archive_table_length_checked(ds, path, name, &n));
  int64_t committed = (int64_t)n;
  // committed_rows may be absent (/runs has none); present but unreadable is damage
  htri_t has = H5Aexists(ds, "committed_rows");
  if (has < 0 || (has > 0 && archive_attr_read_i64(ds, "committed_rows", &committed) != 0))
    return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read the committed_rows "
                            "attribute of /%s", path, name);
  *length = n;
  if (committed < 0 || (hsize_t)committed >= n) {
    *valid = n;
    return CS_OK;
  }
  // the tail: one cell id column
  hsize_t k = n - (hsize_t)committed;
  int64_t *ids = NULL;
  CS_CHECK(CS_CALLOC(ids, k));
  hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(int64_t));
  H5Tinsert(mt, "cell_id", 0, H5T_NATIVE_INT64);
  int bad = archive_table_io(ds, mt, (hsize_t)committed, k, ids, 0) < 0;
  H5Tclose(mt);
  if (bad) {
    free(ids);
    return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read /%s", path, name);
  }
  int finished = 1;
  for (hsize_t i = 0; i < k && finished; i++) {
    int64_t r = archive_find_row(a, ids[i]);
    finished = r >= 0 && a->row_status[r] != CELL_PENDING;
  }
  free(ids);
  *valid = finished ? n : (hsize_t)committed;
  return CS_OK;
}

/* Does a table need the repair below? (read-only) */
static int archive_table_needs_repair(const cs_archive *a, hid_t file, const char *name, int *need) {
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: no /%s", a->path, name);
  hsize_t valid = 0, n = 0;
  int64_t committed = -1;
  int rc = archive_table_valid_rows(a, ds, a->path, name, &valid, &n);
  archive_attr_read_i64(ds, "committed_rows", &committed);
  *need = !rc && (valid != n || committed != (int64_t)n);
  H5Dclose(ds);
  return rc;
}

/* Writer's repair at open: make committed_rows and the extent agree. */
static int archive_table_repair(const cs_archive *a, hid_t file, const char *name) {
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: no /%s", a->path, name);
  hsize_t valid = 0, n = 0;
  int rc = archive_table_valid_rows(a, ds, a->path, name, &valid, &n);
  if (!rc && valid < n && H5Dset_extent(ds, &valid) < 0)
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot cut the unfinished rows of /%s", a->path, name);
  if (!rc) rc = archive_attr_write_i64(ds, "committed_rows", H5T_STD_I64LE, (int64_t)valid, a->path);
  H5Dclose(ds);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* creating a new archive file                                                */

/* Write a complete pending archive of spec (rows of a) to path. */
static int archive_create_file(const cs_archive *a, const cs_spec *spec, const char *path) {
  hid_t file = archive_h5_create(path);
  if (file < 0) return archive_h5_error(CS_ERR_IO, "cannot create the archive %s", path);
  archive_cells_layout L;
  hid_t ctype = H5I_INVALID_HID, t = H5I_INVALID_HID, space = H5I_INVALID_HID, ds = H5I_INVALID_HID;
  hid_t dcpl = H5I_INVALID_HID;
  unsigned char *rows = NULL;
  int rc = archive_layout_build(spec, &L);
  if (rc) goto done;

  // root attributes
  char created[32];
  int32_t version = ARCHIVE_FORMAT_VERSION;
  archive_utc_now(created, sizeof created, 0);
  if ((rc = archive_attr_write_str(file, "format", ARCHIVE_FORMAT, path))) goto done;
  if ((rc = archive_attr_write_i64(file, "format_version", H5T_STD_I32LE, version, path))) goto done;
  if ((rc = archive_attr_write_str(file, "software_version", CS_VERSION, path))) goto done;
  if ((rc = archive_attr_write_str(file, "created", created, path))) goto done;
  if ((rc = archive_attr_write_str(file, "spec_sha256", spec_sha256(spec), path))) goto done;
  if ((rc = archive_attr_write_str(file, "spec_name", spec_sweep(spec)->name, path))) goto done;

  // /spec: the exact text, chunked and checksummed
  if ((rc = archive_spec_write(file, spec_text(spec), path))) goto done;

  // /cells: every selected cell, pending
  ctype = archive_layout_type(spec, &L);
  hsize_t n = (hsize_t)a->n_rows, maxdims = H5S_UNLIMITED, chunk = archive_table_chunk_rows(L.row_bytes);
  space = H5Screate_simple(1, &n, &maxdims);
  dcpl = archive_dcpl(1, &chunk);
  ds = H5Dcreate2(file, "cells", ctype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (ctype < 0 || ds < 0) {
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot create /cells", path);
    goto done;
  }
  if ((rc = cs_calloc_bytes((void **)&rows, ARCHIVE_BLOCK_ROWS, L.row_bytes))) goto done;
  for (hsize_t s = 0; s < n; s += ARCHIVE_BLOCK_ROWS) {
    hsize_t k = n - s < ARCHIVE_BLOCK_ROWS ? n - s : ARCHIVE_BLOCK_ROWS;
    for (hsize_t i = 0; i < k; i++)
      if ((rc = archive_layout_fill(spec, &L, a->row_cell[s + i], rows + i * L.row_bytes))) goto done;
    if (archive_table_io(ds, ctype, s, k, rows, 1) < 0) {
      rc = archive_h5_error(CS_ERR_IO, "%s: cannot write /cells", path);
      goto done;
    }
  }
  archive_h5_close_id(&ds, H5Dclose);

  // empty /curvature, /curves, /runs
  hid_t mt = archive_curv_row_type(), ft = archive_packed(mt);
  rc = archive_table_create(file, "curvature", ft, 1, path);
  H5Tclose(ft), H5Tclose(mt);
  if (rc) goto done;
  mt = archive_curve_row_type(), ft = archive_packed(mt);
  rc = archive_table_create(file, "curves", ft, 1, path);
  H5Tclose(ft), H5Tclose(mt);
  if (rc) goto done;
  mt = archive_run_row_type(), ft = archive_packed(mt);
  rc = archive_table_create(file, "runs", ft, 0, path);
  H5Tclose(ft), H5Tclose(mt);
  if (rc) goto done;

done:
  free(rows);
  archive_layout_free(&L);
  archive_h5_close_id(&dcpl, H5Pclose);
  archive_h5_close_id(&ds, H5Dclose);
  archive_h5_close_id(&space, H5Sclose);
  archive_h5_close_id(&t, H5Tclose);
  archive_h5_close_id(&ctype, H5Tclose);
  if (H5Fclose(file) < 0 && !rc) rc = archive_h5_error(CS_ERR_IO, "%s: cannot close", path);
  return rc;
}

/* Build the archive under a temporary name beside path, sync it, and hand
 * back the name (the caller renames it into place). */
static int archive_create_temp(const cs_archive *a, const cs_spec *spec, char **tmp_out) {
  *tmp_out = NULL;
  CS_CHECK(archive_make_parent_dirs(a->path));
  char *tmp = archive_strdup_printf("%s.tmp-%ld", a->path, (long)getpid());
  if (!tmp) return cs_error(CS_ERR_NOMEM, "out of memory");
  // probe the directory with a plain open(): HDF5 does not report errno
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    int rc = cs_error(CS_ERR_IO, "cannot create the archive %s (temporary file %s): %s", a->path,
                      tmp, strerror(errno));
    free(tmp);
    return rc;
  }
  close(fd);
  int rc = archive_create_file(a, spec, tmp);
  if (!rc) rc = archive_fsync_file(tmp);
  if (rc) {
    unlink(tmp);
    free(tmp);
    return rc;
  }
  *tmp_out = tmp;
  return CS_OK;
}

static int archive_rename_into_place(const char *tmp, const char *path) {
  if (rename(tmp, path) != 0) {
    int rc = cs_error(CS_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    unlink(tmp);
    return rc;
  }
  archive_fsync_dir(path);
  return CS_OK;
}

/* ------------------------------------------------------------------------ */
/* writing one result into an open HDF5 file                                  */

static int archive_check_tensor_name(const char *name) {
  size_t n = strnlen(name, ARCHIVE_TENSOR_NAME_BYTES);
  if (n == 0 || n >= ARCHIVE_TENSOR_NAME_BYTES || name[0] == '/' || name[n - 1] == '/') return -1;
  for (size_t i = 0; i < n; i++) {
    if (name[i] == '/' && name[i + 1] == '/') return -1;
    if (name[i] == '.' && (i == 0 || name[i - 1] == '/')) return -1;
  }
  return 0;
}

/* A result the archive can hold: a finished status and consistent arrays. */
/* Every per-point array of a result that carries points is present. */
static int archive_has_point_arrays(const cs_cell_result *r) {
  double **f[RESULT_N_POINT_ARRAYS];
  result_point_arrays((cs_cell_result *)r, f);
  for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++)
    if (!*f[k]) return 0;
  return r->pt_class != NULL;
}

static int archive_check_result(const cs_archive *a, const cs_cell_result *r) {
  if (r->status != CELL_DONE && r->status != CELL_FAILED && r->status != CELL_DIVERGED)
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 ": a result must be done, failed or diverged "
                    "(status %d)", a->path, r->cell_id, (int)r->status);
  if (archive_find_row(a, r->cell_id) < 0)
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 " is not listed in this archive (another "
                    "shard's cell?)", a->path, r->cell_id);
  if (r->depth < 0 || (r->depth > 0 && !r->curv) || r->n_curve < 0 || (r->n_curve > 0 && !r->curve))
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 ": inconsistent result (depth %d, %d curve "
                    "points)", a->path, r->cell_id, r->depth, r->n_curve);
  if (r->pt_x && (r->n_points <= 0 || r->m <= 0 ||
                  (r->depth > 0 && !archive_has_point_arrays(r))))
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 ": inconsistent per-point arrays", a->path,
                    r->cell_id);
  for (int i = 0; i < r->n_tensors; i++) {
    const cs_tensor *T = &r->tensors[i];
    if (archive_check_tensor_name(T->name) != 0 || T->rows < 0 || T->cols < 0 ||
        ((int64_t)T->rows * T->cols > 0 && !T->v))
      return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 ": bad parameter tensor %d '%.48s' "
                      "(%d x %d)", a->path, r->cell_id, i, T->name, T->rows, T->cols);
  }
  return CS_OK;
}

/* A 2-D dataset (rows × cols) of file type ftype from memory of type mtype
 * (elements of elem_bytes), chunked and filtered. */
static int archive_write_array(hid_t loc, const char *name, hsize_t rows, hsize_t cols,
                               hid_t ftype, hid_t mtype, size_t elem_bytes, const void *v,
                               const char *path) {
  hsize_t dims[2] = {rows, cols}, maxdims[2], chunk[2];
  for (int k = 0; k < 2; k++) maxdims[k] = dims[k] ? dims[k] : H5S_UNLIMITED;
  chunk[1] = cols ? cols : 1;
  chunk[0] = (ARCHIVE_CHUNK_BYTES * 2 / elem_bytes) / chunk[1];
  if (chunk[0] < 1) chunk[0] = 1;
  if (rows && chunk[0] > rows) chunk[0] = rows;
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t space = H5Screate_simple(2, dims, maxdims), dcpl = archive_dcpl(2, chunk);
  hid_t ds = H5Dcreate2(loc, name, ftype, space, lcpl, dcpl, H5P_DEFAULT);
  int rc = CS_OK;
  if (ds < 0 || (rows * cols > 0 && H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)) {
    archive_h5_note();
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot write the dataset %s", path, name);
  }
  archive_h5_close_id(&ds, H5Dclose);
  archive_h5_close_id(&dcpl, H5Pclose);
  archive_h5_close_id(&space, H5Sclose);
  archive_h5_close_id(&lcpl, H5Pclose);
  return rc;
}

/* A 2-D float64 dataset (rows × cols), chunked and filtered. */
static int archive_write_matrix(hid_t loc, const char *name, hsize_t rows, hsize_t cols,
                                const double *v, const char *path) {
  return archive_write_array(loc, name, rows, cols, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                             sizeof(double), v, path);
}

/* Remove /points/<id> and /params/<id> if present (a rewrite, or leftovers
 * of an interrupted write). */
static int archive_delete_cell_groups(hid_t file, int64_t cell_id, const char *path) {
  const char *tops[2] = {"points", "params"};
  for (int k = 0; k < 2; k++) {
    if (!archive_link_exists(file, tops[k])) continue;
    char name[64];
    snprintf(name, sizeof name, "%s/%" PRId64, tops[k], cell_id);
    if (archive_link_exists(file, name) && H5Ldelete(file, name, H5P_DEFAULT) < 0)
      return archive_h5_error(CS_ERR_IO, "%s: cannot remove /%s", path, name);
  }
  return CS_OK;
}

static int archive_write_points(hid_t file, const cs_cell_result *r, const char *path) {
  char name[64];
  snprintf(name, sizeof name, "points/%" PRId64, r->cell_id);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t g = H5Gcreate2(file, name, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Pclose(lcpl);
  if (g < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot create /%s", path, name);
  double **fields[RESULT_N_POINT_ARRAYS];
  result_point_arrays((cs_cell_result *)r, fields);
  int rc = archive_write_matrix(g, "x", (hsize_t)r->n_points, (hsize_t)r->m, r->pt_x, path);
  for (int k = 0; k < RESULT_N_POINT_ARRAYS && !rc; k++)
    rc = archive_write_matrix(g, RESULT_POINT_NAMES[k], (hsize_t)r->depth, (hsize_t)r->n_points,
                              *fields[k], path);
  hid_t ft = archive_class_type(H5T_STD_I8LE), mt = archive_class_type(H5T_NATIVE_INT8);
  if (!rc && (ft < 0 || mt < 0))
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot build the class enum type", path);
  if (!rc)
    rc = archive_write_array(g, "class", (hsize_t)r->depth, (hsize_t)r->n_points, ft, mt,
                             sizeof(int8_t), r->pt_class, path);
  archive_h5_close_id(&ft, H5Tclose);
  archive_h5_close_id(&mt, H5Tclose);
  H5Gclose(g);
  return rc;
}

static int archive_write_params(hid_t file, const cs_cell_result *r, const char *path) {
  char name[64];
  snprintf(name, sizeof name, "params/%" PRId64, r->cell_id);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t g = H5Gcreate2(file, name, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Pclose(lcpl);
  if (g < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot create /%s", path, name);
  int rc = CS_OK;
  // the tensors, then their names in order as the attribute "tensors"
  for (int i = 0; i < r->n_tensors && !rc; i++)
    rc = archive_write_matrix(g, r->tensors[i].name, (hsize_t)r->tensors[i].rows,
                              (hsize_t)r->tensors[i].cols, r->tensors[i].v, path);
  char *names = NULL;
  if (!rc) rc = cs_calloc_bytes((void **)&names, (size_t)r->n_tensors, ARCHIVE_TENSOR_NAME_BYTES);
  if (!rc) {
    for (int i = 0; i < r->n_tensors; i++)
      archive_copy_str(names + (size_t)i * ARCHIVE_TENSOR_NAME_BYTES, ARCHIVE_TENSOR_NAME_BYTES,
                       r->tensors[i].name);
    hsize_t n = (hsize_t)r->n_tensors;
    hid_t t = archive_str_type(ARCHIVE_TENSOR_NAME_BYTES), space = H5Screate_simple(1, &n, NULL);
    hid_t attr = H5Acreate2(g, "tensors", t, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, t, names) < 0)
      rc = archive_h5_error(CS_ERR_IO, "%s: cannot write /%s attribute tensors", path, name);
    archive_h5_close_id(&attr, H5Aclose);
    H5Sclose(space), H5Tclose(t);
  }
  free(names);
  H5Gclose(g);
  return rc;
}

/* Remove every row of cell_id from a table (rewrite of a finished cell;
 * rare): read all, keep the others, write back, shrink. */
static int archive_table_remove_cell(hid_t file, const char *name, hid_t mtype, int64_t cell_id,
                                     const char *path) {
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot open /%s", path, name);
  size_t rb = H5Tget_size(mtype);
  hsize_t n = archive_table_length(ds), kept = 0;
  unsigned char *rows = NULL;
  int rc = cs_calloc_bytes((void **)&rows, n ? n : 1, rb);
  if (!rc && archive_table_io(ds, mtype, 0, n, rows, 0) < 0)
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot read /%s", path, name);
  for (hsize_t i = 0; !rc && i < n; i++) {
    int64_t id;
    memcpy(&id, rows + i * rb, 8);  // cell_id is the first member of every row struct
    if (id != cell_id) memmove(rows + kept * rb, rows + i * rb, rb), kept++;
  }
  if (!rc && kept < n &&
      (archive_table_io(ds, mtype, 0, kept, rows, 1) < 0 || H5Dset_extent(ds, &kept) < 0))
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot rewrite /%s", path, name);
  if (!rc) rc = archive_attr_write_i64(ds, "committed_rows", H5T_STD_I64LE, (int64_t)kept, path);
  free(rows);
  H5Dclose(ds);
  return rc;
}

static void archive_cell_row_from_result(archive_cell_row *row, const cs_cell_result *r) {
  memset(row, 0, sizeof *row);
  row->cell_id = r->cell_id;
  archive_copy_str(row->status, sizeof row->status, result_status_name(r->status));
  row->rank = r->rank;
  row->attempts = r->attempts;
  row->wall_s = r->wall_s;
  row->train_loss = r->train_loss;
  row->train_acc = r->train_acc;
  row->test_acc = r->test_acc;
  row->n_params = r->n_params;
  archive_copy_str(row->message, sizeof row->message, r->message);
}

static int archive_write_cell_row(hid_t file, int64_t row_index, const archive_cell_row *row,
                                  const char *path) {
  hid_t ds = H5Dopen2(file, "cells", H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot open /cells", path);
  hid_t mt = archive_cell_row_type();
  int rc = CS_OK;
  if (archive_table_io(ds, mt, (hsize_t)row_index, 1, (void *)row, 1) < 0)
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot write /cells row %" PRId64, path, row_index);
  H5Tclose(mt);
  archive_h5_close_id(&ds, H5Dclose);
  return rc;
}

/* Append rows to a table and advance its committed_rows later. */
static int archive_append_rows(hid_t file, const char *name, hid_t mtype, const void *rows,
                               hsize_t n, const char *path) {
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot open /%s", path, name);
  int rc = archive_table_append(ds, mtype, rows, n, path, name);
  H5Dclose(ds);
  return rc;
}

static int archive_commit_table(hid_t file, const char *name, const char *path) {
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot open /%s", path, name);
  int rc = archive_attr_write_i64(ds, "committed_rows", H5T_STD_I64LE,
                                  (int64_t)archive_table_length(ds), path);
  H5Dclose(ds);
  return rc;
}

/* Write one checked result into the open file:
 *   1. a rewrite of a finished cell first marks it pending and removes its
 *      rows and groups; leftovers of an interrupted write are removed too
 *   2. /curvature and /curves rows appended, /points and /params groups
 *   3. flush, then the /cells row and committed_rows (the commit point) */
static int archive_apply_result(cs_archive *a, hid_t file, const cs_cell_result *r) {
  int64_t row = archive_find_row(a, r->cell_id);
  const char *path = a->path;
  archive_cell_row cr;
  // 1. undo an earlier result of this cell
  if (a->row_status[row] != CELL_PENDING) {
    memset(&cr, 0, sizeof cr);
    cr.cell_id = r->cell_id;
    cr.rank = -1;
    cr.wall_s = cr.train_loss = cr.train_acc = cr.test_acc = NAN;
    archive_copy_str(cr.status, sizeof cr.status, "pending");
    CS_CHECK(archive_write_cell_row(file, row, &cr, path));
    a->row_status[row] = CELL_PENDING;
    if (H5Fflush(file, H5F_SCOPE_LOCAL) < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot flush", path);
    hid_t mt = archive_curv_row_type();
    int rc = archive_table_remove_cell(file, "curvature", mt, r->cell_id, path);
    H5Tclose(mt);
    CS_CHECK(rc);
    mt = archive_curve_row_type();
    rc = archive_table_remove_cell(file, "curves", mt, r->cell_id, path);
    H5Tclose(mt);
    CS_CHECK(rc);
  }
  CS_CHECK(archive_delete_cell_groups(file, r->cell_id, path));

  // 2. the rows and groups
  archive_curv_row *cv = NULL;
  archive_curve_row *cu = NULL;
  int rc = CS_CALLOC(cv, r->depth);
  if (!rc) rc = CS_CALLOC(cu, r->n_curve);
  for (int l = 0; !rc && l < r->depth; l++) {
    cv[l].cell_id = r->cell_id;
    cv[l].prefix = l + 1;
    cv[l].st = r->curv[l];
  }
  for (int e = 0; !rc && e < r->n_curve; e++) {
    cu[e].cell_id = r->cell_id;
    cu[e].epoch = r->curve[e].epoch;
    cu[e].train_loss = r->curve[e].train_loss;
    cu[e].train_acc = r->curve[e].train_acc;
    cu[e].test_acc = r->curve[e].test_acc;
  }
  if (!rc) {
    hid_t mt = archive_curv_row_type();
    rc = archive_append_rows(file, "curvature", mt, cv, (hsize_t)r->depth, path);
    H5Tclose(mt);
  }
  if (!rc) {
    hid_t mt = archive_curve_row_type();
    rc = archive_append_rows(file, "curves", mt, cu, (hsize_t)r->n_curve, path);
    H5Tclose(mt);
  }
  free(cv);
  free(cu);
  CS_CHECK(rc);
  if (r->pt_x) CS_CHECK(archive_write_points(file, r, path));
  if (r->n_tensors > 0) CS_CHECK(archive_write_params(file, r, path));
  if (H5Fflush(file, H5F_SCOPE_LOCAL) < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot flush", path);

  // 3. the commit point: the /cells row, then committed_rows
  archive_cell_row_from_result(&cr, r);
  CS_CHECK(archive_write_cell_row(file, row, &cr, path));
  CS_CHECK(archive_commit_table(file, "curvature", path));
  CS_CHECK(archive_commit_table(file, "curves", path));
  a->row_status[row] = (unsigned char)r->status;
  a->row_attempts[row] = r->attempts;
  return CS_OK;
}

/* /runs row: append (row == n_runs) or rewrite in place. */
static int archive_apply_run(cs_archive *a, hid_t file, int64_t row, const cs_run_info *run) {
  hid_t ds = H5Dopen2(file, "runs", H5P_DEFAULT), mt = archive_run_row_type();
  int rc = CS_OK;
  if (ds < 0) rc = archive_h5_error(CS_ERR_IO, "%s: cannot open /runs", a->path);
  else if (row >= (int64_t)archive_table_length(ds)) {
    rc = archive_table_append(ds, mt, run, 1, a->path, "runs");
    if (!rc) row = (int64_t)archive_table_length(ds) - 1;
  } else if (archive_table_io(ds, mt, (hsize_t)row, 1, (void *)run, 1) < 0) {
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot write /runs row %" PRId64, a->path, row);
  }
  if (!rc) a->n_runs = (int64_t)archive_table_length(ds);
  H5Tclose(mt);
  archive_h5_close_id(&ds, H5Dclose);
  return rc;
}

static int archive_read_run(hid_t file, int64_t row, cs_run_info *run) {
  hid_t ds = H5Dopen2(file, "runs", H5P_DEFAULT), mt = archive_run_row_type();
  int ok = ds >= 0 && archive_table_io(ds, mt, (hsize_t)row, 1, run, 0) == 0;
  H5Tclose(mt);
  if (ds >= 0) H5Dclose(ds);
  return ok ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* the journal                                                                */

/* The reader (below) is used to seed a journal from an existing archive. */
typedef struct {
  cs_archive *a;  /* rows and statuses (no journal) */
  hid_t file;
  archive_meta meta;
} archive_reader;

static int archive_reader_open(const char *path, archive_reader *rd);
static void archive_reader_close(archive_reader *rd);
static int archive_read_table(archive_reader *rd, const char *name, hid_t mtype, void **rows,
                              hsize_t *n);
static int archive_read_results_rd(archive_reader *rd, cs_cell_result **results, int64_t *n_out);
static void archive_results_free(cs_cell_result *res, int64_t n);

static void archive_journal_header_make(archive_journal_header *h, const char *sha) {
  memset(h, 0, sizeof *h);
  memcpy(h->magic, ARCHIVE_JOURNAL_MAGIC, 8);
  h->version = 1;
  h->header_bytes = sizeof *h;
  h->result_bytes = sizeof(cs_cell_result);
  h->stats_bytes = sizeof(geom_stats);
  h->tensor_bytes = sizeof(cs_tensor);
  h->run_bytes = sizeof(cs_run_info);
  archive_copy_str(h->spec_sha256, sizeof h->spec_sha256, sha);
  h->crc = archive_crc32(0, h, offsetof(archive_journal_header, crc));
}

static int archive_write_all(int fd, const void *p, size_t n) {
  const unsigned char *b = p;
  while (n > 0) {
    ssize_t k = write(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    b += k, n -= (size_t)k;
  }
  return 0;
}

static int archive_read_all(int fd, void *p, size_t n) {
  unsigned char *b = p;
  while (n > 0) {
    ssize_t k = read(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    b += k, n -= (size_t)k;
  }
  return 0;
}

/* Append one record (synced when asked); on failure the file is cut back
 * so no torn record can hide later ones. */
static int archive_journal_append(cs_archive *a, uint32_t kind, const void *payload, size_t n,
                                  int sync) {
  archive_record_header rh = {ARCHIVE_RECORD_MAGIC, kind, n, 0, 0};
  rh.crc = archive_crc32(archive_crc32(0, &rh, offsetof(archive_record_header, crc)), payload, n);
  off_t end = lseek(a->journal_fd, 0, SEEK_END);
  if (end < 0 || archive_write_all(a->journal_fd, &rh, sizeof rh) != 0 ||
      archive_write_all(a->journal_fd, payload, n) != 0 || (sync && fdatasync(a->journal_fd) != 0)) {
    int err = errno;
    if (end >= 0 && ftruncate(a->journal_fd, end) == 0) fdatasync(a->journal_fd);
    return cs_error(CS_ERR_IO, "cannot append to the journal %s: %s", a->journal_path, strerror(err));
  }
  if (kind != ARCHIVE_REC_COVER) a->journal_records++;
  return CS_OK;
}

/* Start the journal afresh: the header, and a COVER record when the archive
 * holds no result the journal lacks (a new archive). Synced. */
static int archive_journal_reset(cs_archive *a, int covers) {
  archive_journal_header h;
  archive_journal_header_make(&h, a->spec_sha256);
  if (ftruncate(a->journal_fd, 0) != 0 || lseek(a->journal_fd, 0, SEEK_SET) != 0 ||
      archive_write_all(a->journal_fd, &h, sizeof h) != 0)
    return cs_error(CS_ERR_IO, "cannot write the journal %s: %s", a->journal_path, strerror(errno));
  a->journal_records = 0;
  a->journal_covers = 0;
  a->dirty = 0;
  if (covers) CS_CHECK(archive_journal_append(a, ARCHIVE_REC_COVER, "", 0, 0));
  if (fdatasync(a->journal_fd) != 0)
    return cs_error(CS_ERR_IO, "cannot sync the journal %s: %s", a->journal_path, strerror(errno));
  a->journal_covers = covers;
  return CS_OK;
}

/* The dirty flag in the journal header: set while an HDF5 write on the
 * archive may be in progress. Found set on resume, the file is suspect and
 * is rebuilt from the journal. */
static int archive_journal_set_dirty(cs_archive *a, uint32_t dirty, int sync) {
  if (pwrite(a->journal_fd, &dirty, sizeof dirty, offsetof(archive_journal_header, dirty)) !=
          (ssize_t)sizeof dirty ||
      (sync && fdatasync(a->journal_fd) != 0))
    return cs_error(CS_ERR_IO, "cannot write the journal %s: %s", a->journal_path, strerror(errno));
  a->dirty = dirty;
  return CS_OK;
}

/* Open (creating if absent) and lock the journal (archive_lock.c).
 * *created: the locked journal is empty (it may be removed on failure). */
static int archive_journal_lock(cs_archive *a, int *created) {
  return archive_lock_journal(a->journal_path, a->path, &a->journal_fd, created);
}

/* Release the journal after an error in open: close, and remove it only
 * if this call created it. */
static void archive_journal_abandon(cs_archive *a, int created) {
  if (a->journal_fd < 0) return;
  close(a->journal_fd);
  a->journal_fd = -1;
  if (created) unlink(a->journal_path);
}

/* One valid record found by the scan. */
typedef struct {
  uint32_t kind;
  off_t offset;      /* of the payload */
  uint64_t length;
  int64_t cell_id;   /* results */
  int status, attempts;
} archive_record_ref;

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

static void archive_scan_free(archive_journal_scan *s) {
  free(s->recs);
  memset(s, 0, sizeof *s);
}

/* Read the journal: header, then records up to the first torn / short /
 * bad-checksum one. Never modifies the file. A header of another build
 * (struct sizes) is CS_ERR_INPUT; a torn header means no records. */
static int archive_journal_scan_fd(int fd, const char *jpath, archive_journal_scan *s) {
  memset(s, 0, sizeof *s);
  struct stat st;
  if (fstat(fd, &st) != 0) return cs_error(CS_ERR_IO, "cannot stat %s: %s", jpath, strerror(errno));
  s->size = st.st_size;
  archive_journal_header h, want;
  archive_journal_header_make(&want, "");
  if (s->size < (off_t)sizeof h || lseek(fd, 0, SEEK_SET) != 0 || archive_read_all(fd, &h, sizeof h) != 0)
    return CS_OK;  // empty or torn header: a journal that never got a record
  if (memcmp(h.magic, ARCHIVE_JOURNAL_MAGIC, 8) != 0 ||
      h.crc != archive_crc32(0, &h, offsetof(archive_journal_header, crc)))
    return cs_error(CS_ERR_INPUT, "%s is not a curvsweep journal (bad header): move it away if it "
                    "is not yours", jpath);
  if (h.version != want.version || h.header_bytes != want.header_bytes ||
      h.result_bytes != want.result_bytes || h.stats_bytes != want.stats_bytes ||
      h.tensor_bytes != want.tensor_bytes || h.run_bytes != want.run_bytes)
    return cs_error(CS_ERR_INPUT, "%s was written by a different curvsweep build (record layout "
                    "differs): resume with the build that wrote it", jpath);
  s->header_ok = 1;
  s->dirty = h.dirty != 0;
  archive_copy_str(s->sha, sizeof s->sha, h.spec_sha256);
  s->good_end = (off_t)sizeof h;
  // records
  int64_t cap = 0;
  unsigned char *buf = NULL;
  size_t buf_cap = 0;
  int rc = CS_OK;
  for (;;) {
    archive_record_header rh;
    off_t at = s->good_end;
    if (s->size - at < (off_t)sizeof rh || archive_read_all(fd, &rh, sizeof rh) != 0) break;
    if (rh.magic != ARCHIVE_RECORD_MAGIC || rh.length > (uint64_t)(s->size - at - (off_t)sizeof rh))
      break;
    if (rh.length > buf_cap) {
      unsigned char *nb = realloc(buf, rh.length);
      if (!nb) {
        rc = cs_error(CS_ERR_NOMEM, "out of memory reading the journal %s", jpath);
        break;
      }
      buf = nb, buf_cap = rh.length;
    }
    if (archive_read_all(fd, buf, rh.length) != 0) break;
    uint32_t crc = archive_crc32(archive_crc32(0, &rh, offsetof(archive_record_header, crc)), buf, rh.length);
    if (crc != rh.crc) break;
    archive_record_ref ref = {rh.kind, at + (off_t)sizeof rh, rh.length, -1, 0, 0};
    if (rh.kind == ARCHIVE_REC_RESULT) {
      if (rh.length < sizeof(cs_cell_result)) break;
      cs_cell_result head;
      memcpy(&head, buf, sizeof head);
      ref.cell_id = head.cell_id, ref.status = head.status, ref.attempts = head.attempts;
    } else if (rh.kind == ARCHIVE_REC_RUN_BEGIN || rh.kind == ARCHIVE_REC_RUN_END) {
      if (rh.length != sizeof(archive_run_payload)) break;
    } else if (rh.kind != ARCHIVE_REC_COVER || rh.length != 0) {
      break;
    }
    s->good_end = ref.offset + (off_t)rh.length;
    if (rh.kind == ARCHIVE_REC_COVER) {
      s->covers = 1;
      continue;
    }
    if (s->n == cap) {
      cap = cap ? 2 * cap : 64;
      archive_record_ref *nr = realloc(s->recs, (size_t)cap * sizeof *nr);
      if (!nr) {
        rc = cs_error(CS_ERR_NOMEM, "out of memory reading the journal %s", jpath);
        break;
      }
      s->recs = nr;
    }
    s->recs[s->n++] = ref;
  }
  free(buf);
  if (rc) archive_scan_free(s);
  return rc;
}

static int archive_journal_read_payload(int fd, const archive_record_ref *ref, const char *jpath,
                                        unsigned char **buf) {
  *buf = NULL;
  CS_CHECK(cs_calloc_bytes((void **)buf, ref->length ? ref->length : 1, 1));
  if (pread(fd, *buf, ref->length, ref->offset) != (ssize_t)ref->length) {
    free(*buf);
    *buf = NULL;
    return cs_error(CS_ERR_IO, "cannot read the journal %s: %s", jpath, strerror(errno));
  }
  return CS_OK;
}

static int archive_journal_result(cs_archive *a, const cs_cell_result *r, int sync) {
  unsigned char *buf = NULL;
  size_t n = 0;
  CS_CHECK(result_pack(r, &buf, &n));
  int rc = archive_journal_append(a, ARCHIVE_REC_RESULT, buf, n, sync);
  free(buf);
  return rc;
}

/* Make the journal cover the archive before the first write of a session
 * whose journal is new beside an archive that may hold results (a merged
 * archive, or one whose journal was removed when it was complete): every
 * finished result and every /runs row of the file, then COVER; one sync. */
static int archive_journal_seed(cs_archive *a) {
  if (a->journal_fd < 0 || a->journal_covers) return CS_OK;
  archive_reader rd;
  CS_CHECK(archive_reader_open(a->path, &rd));
  cs_cell_result *res = NULL;
  cs_run_info *runs = NULL;
  int64_t n = 0;
  hsize_t nr = 0;
  int rc = archive_read_results_rd(&rd, &res, &n);
  if (!rc) {
    hid_t mt = archive_run_row_type();
    rc = archive_read_table(&rd, "runs", mt, (void **)&runs, &nr);
    H5Tclose(mt);
  }
  archive_reader_close(&rd);
  for (int64_t i = 0; i < n && !rc; i++)
    if (res[i].status != CELL_PENDING) rc = archive_journal_result(a, &res[i], 0);
  for (hsize_t k = 0; k < nr && !rc; k++) {
    archive_run_payload p;
    memset(&p, 0, sizeof p);
    p.row = (int64_t)k;
    p.info = runs[k];
    rc = archive_journal_append(a, ARCHIVE_REC_RUN_BEGIN, &p, sizeof p, 0);
  }
  if (!rc) rc = archive_journal_append(a, ARCHIVE_REC_COVER, "", 0, 1);
  if (!rc) a->journal_covers = 1;
  archive_results_free(res, n);
  free(runs);
  return rc;
}

/* Around every HDF5 write on the archive: the journal covers it and the
 * dirty flag is set (synced here, or by the record append that follows);
 * cleared once the file is closed again. */
static int archive_window_begin(cs_archive *a, int sync) {
  if (a->journal_fd < 0) return CS_OK;
  CS_CHECK(archive_journal_seed(a));
  return archive_journal_set_dirty(a, 1, sync);
}

static int archive_window_end(cs_archive *a) {
  if (a->journal_fd < 0) return CS_OK;
  return archive_journal_set_dirty(a, 0, 0);
}

/* Apply the scanned journal to the open file. rebuilt: the file was just
 * created from the spec (every /runs record is appended in order). Results:
 * the last record of each cell wins and is applied unless the file already
 * holds that state (status and attempts). Runs: a begin is appended when
 * its row is the next one (or always when rebuilt), an end rewrites the row
 * of its begin. */
static int archive_run_same(const cs_run_info *x, const cs_run_info *y) {
  return !strcmp(x->start, y->start) && !strcmp(x->end, y->end) && !strcmp(x->hosts, y->hosts) &&
         x->ranks == y->ranks && !strcmp(x->team, y->team) && !strcmp(x->shard, y->shard) &&
         !strcmp(x->slurm_job, y->slurm_job) && !strcmp(x->nodelist, y->nodelist) &&
         x->requeue_count == y->requeue_count && x->cells_run == y->cells_run;
}

/* dry: change nothing, set *needed when some record would be applied. */
static int archive_journal_replay(cs_archive *a, hid_t file, const archive_journal_scan *s,
                                  int rebuilt, int dry, int *needed) {
  int64_t *last = NULL, *run_map = NULL, n_map = 0;
  int rc = CS_OK;
  if (needed) *needed = 0;
  if (s->n == 0) return CS_OK;
  CS_CHECK(CS_CALLOC(last, a->n_rows));
  for (int64_t r = 0; r < a->n_rows; r++) last[r] = -1;
  for (int64_t i = 0; i < s->n; i++) {
    if (s->recs[i].kind != ARCHIVE_REC_RESULT) continue;
    int64_t row = archive_find_row(a, s->recs[i].cell_id);
    if (row < 0) {
      rc = cs_error(CS_ERR_INPUT, "%s: the journal %s holds cell %" PRId64 ", which the archive "
                    "does not list: is this journal from another shard's archive?", a->path,
                    a->journal_path, s->recs[i].cell_id);
      goto done;
    }
    last[row] = i;
  }
  if ((rc = CS_CALLOC(run_map, 2 * s->n))) goto done;  // pairs (journal row, file row)
  for (int64_t i = 0; i < s->n && !rc; i++) {
    const archive_record_ref *ref = &s->recs[i];
    unsigned char *buf = NULL;
    if (ref->kind == ARCHIVE_REC_RESULT) {
      int64_t row = archive_find_row(a, ref->cell_id);
      if (last[row] != i) continue;
      if (a->row_status[row] == ref->status && a->row_attempts[row] == ref->attempts) continue;
      if (dry) {
        *needed = 1;
        break;
      }
      cs_cell_result res;
      memset(&res, 0, sizeof res);
      if ((rc = archive_journal_read_payload(a->journal_fd, ref, a->journal_path, &buf))) break;
      rc = result_unpack(buf, ref->length, &res);
      free(buf);
      if (rc) {
        rc = cs_error_context(rc, "%s: journal record of cell %" PRId64 ": ", a->journal_path, ref->cell_id);
        break;
      }
      rc = archive_check_result(a, &res);
      if (!rc) rc = archive_apply_result(a, file, &res);
      result_free(&res);
    } else {
      archive_run_payload p;
      if ((rc = archive_journal_read_payload(a->journal_fd, ref, a->journal_path, &buf))) break;
      memcpy(&p, buf, sizeof p);
      free(buf);
      if (ref->kind == ARCHIVE_REC_RUN_BEGIN) {
        if (!rebuilt && p.row != a->n_runs) continue;  // already in the file
        if (dry) {
          *needed = 1;
          break;
        }
        if ((rc = archive_apply_run(a, file, a->n_runs, &p.info))) break;
        // map the journal's row to the file's (latest begin wins)
        int64_t k = 0;
        while (k < n_map && run_map[2 * k] != p.row) k++;
        run_map[2 * k] = p.row, run_map[2 * k + 1] = a->n_runs - 1;
        if (k == n_map) n_map++;
      } else {
        int64_t target = -1;
        for (int64_t k = 0; k < n_map; k++)
          if (run_map[2 * k] == p.row) target = run_map[2 * k + 1];
        if (target < 0 && !rebuilt && p.row < a->n_runs) {
          // the begin was applied in an earlier session: same run if same start and hosts
          cs_run_info cur;
          if (archive_read_run(file, p.row, &cur) == 0 && !strcmp(cur.start, p.info.start) &&
              !strcmp(cur.hosts, p.info.hosts))
            target = p.row;
        }
        cs_run_info cur;
        if (target < 0 || (archive_read_run(file, target, &cur) == 0 && archive_run_same(&cur, &p.info)))
          continue;
        if (dry) {
          *needed = 1;
          break;
        }
        rc = archive_apply_run(a, file, target, &p.info);
      }
    }
  }
done:
  free(last);
  free(run_map);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* opening for writing                                                        */

/* Per-write HDF5 session: open, do, close (readers can open the file
 * between writes). */
static int archive_h5_session_open(const cs_archive *a, hid_t *file) {
  *file = archive_h5_open(a->path, H5F_ACC_RDWR);
  if (*file < 0) return archive_h5_error(CS_ERR_IO, "cannot open the archive %s for writing", a->path);
  return CS_OK;
}

static int archive_h5_session_close(const cs_archive *a, hid_t file, int rc) {
  if (H5Fclose(file) < 0 && rc == CS_OK)
    rc = archive_h5_error(CS_ERR_IO, "cannot close the archive %s", a->path);
  return rc;
}

static int archive_read_n_runs(cs_archive *a, hid_t file) {
  hid_t ds = H5Dopen2(file, "runs", H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: no /runs", a->path);
  hsize_t n = 0;
  int rc = archive_table_length_checked(ds, a->path, "runs", &n);
  a->n_runs = (int64_t)n;
  H5Dclose(ds);
  return rc;
}

/* The selection of this open inside the listed rows: every selected cell
 * must be listed (another shard's archive is refused). */
static int archive_apply_mask(cs_archive *a, const cs_spec *spec, const unsigned char *mask) {
  int64_t nc = spec_cell_count(spec), missing = 0, first_missing = -1;
  for (int64_t c = 0; c < nc; c++) {
    if (mask && !mask[c]) continue;
    int64_t r = archive_find_row(a, c);
    if (r < 0) {
      if (first_missing < 0) first_missing = c;
      missing++;
    } else {
      a->row_selected[r] = 1;
    }
  }
  if (missing)
    return cs_error(CS_ERR_INPUT, "%s does not list %" PRId64 " of the selected cells (e.g. cell "
                    "%" PRId64 "): it was written for another --shard; use a separate -o per shard "
                    "and `curvsweep merge`", a->path, missing, first_missing);
  return CS_OK;
}

/* Create a new archive (rows from mask) under a temp name and rename it
 * into place; the journal is reset just before (it belonged to whatever
 * the path held, which the user asked to replace). */
static int archive_create_fresh(cs_archive *a, const cs_spec *spec, const unsigned char *mask) {
  CS_CHECK(archive_rows_from_mask(a, spec, mask));
  char *tmp = NULL;
  CS_CHECK(archive_create_temp(a, spec, &tmp));
  int rc = archive_journal_reset(a, 1);
  if (!rc) rc = archive_rename_into_place(tmp, a->path);
  else unlink(tmp);
  free(tmp);
  a->n_runs = 0;
  return rc;
}

/* Set a damaged archive aside as ARCHIVE.damaged-<UTC time>[-k]. */
static int archive_set_aside(const char *path, char **aside_out) {
  char stamp[32];
  archive_utc_now(stamp, sizeof stamp, 1);
  char *aside = NULL;
  for (int k = 0; k < 1000; k++) {
    free(aside);
    aside = k ? archive_strdup_printf("%s.damaged-%s-%d", path, stamp, k)
              : archive_strdup_printf("%s.damaged-%s", path, stamp);
    if (!aside) return cs_error(CS_ERR_NOMEM, "out of memory");
    if (!archive_file_exists(aside)) break;
  }
  if (rename(path, aside) != 0) {
    int rc = cs_error(CS_ERR_IO, "cannot set the damaged archive %s aside as %s: %s", path, aside,
                      strerror(errno));
    free(aside);
    return rc;
  }
  archive_fsync_dir(path);
  if (aside_out) *aside_out = aside;
  else free(aside);
  return CS_OK;
}

/* Rebuild from spec + journal: a complete new file listing the mask's
 * cells and every journaled cell is built under a temp name with every
 * record applied; then the old file (if any) is set aside, never deleted,
 * and the new one renamed into place. A crash at any point leaves the old
 * file or no file, and the journal, so the next resume starts over. */
static int archive_rebuild(cs_archive *a, const cs_spec *spec, const unsigned char *mask,
                           const archive_journal_scan *s, int keep_rows) {
  int64_t nc = spec_cell_count(spec);
  unsigned char *sel = NULL;
  CS_CHECK(CS_CALLOC(sel, nc));
  for (int64_t c = 0; c < nc; c++) sel[c] = !mask || mask[c];
  // the rows the old file listed (when it could be read) stay listed
  for (int64_t r = 0; keep_rows && r < a->n_rows; r++)
    if (a->row_cell[r] >= 0 && a->row_cell[r] < nc) sel[a->row_cell[r]] = 1;
  for (int64_t i = 0; i < s->n; i++) {
    if (s->recs[i].kind != ARCHIVE_REC_RESULT) continue;
    if (s->recs[i].cell_id < 0 || s->recs[i].cell_id >= nc) {
      free(sel);
      return cs_error(CS_ERR_INPUT, "%s: journal record of cell %" PRId64 " outside the spec's 0..%"
                      PRId64, a->journal_path, s->recs[i].cell_id, nc - 1);
    }
    sel[s->recs[i].cell_id] = 1;
  }
  int rc = archive_rows_from_mask(a, spec, sel);
  free(sel);
  CS_CHECK(rc);
  // the new file, complete, under a temp name
  char *tmp = NULL, *final_path = a->path;
  CS_CHECK(archive_create_temp(a, spec, &tmp));
  a->path = tmp;
  a->n_runs = 0;
  hid_t file;
  rc = archive_h5_session_open(a, &file);
  if (!rc) {
    rc = archive_journal_replay(a, file, s, 1, 0, NULL);
    rc = archive_h5_session_close(a, file, rc);
  }
  a->path = final_path;
  if (!rc) rc = archive_fsync_file(tmp);
  // the old file aside, the new one in place, the journal clean
  if (!rc && archive_file_exists(a->path)) rc = archive_set_aside(a->path, NULL);
  if (!rc) rc = archive_rename_into_place(tmp, a->path);
  else unlink(tmp);
  free(tmp);
  if (!rc && s->header_ok) rc = archive_journal_set_dirty(a, 0, 1);
  CS_CHECK(rc);
  // rows outside the mask were added for journaled cells: keep them unselected
  for (int64_t r = 0; r < a->n_rows; r++) a->row_selected[r] = !mask || mask[a->row_cell[r]];
  return CS_OK;
}

static int archive_sha_mismatch(const char *path, const char *theirs, const char *ours) {
  return cs_error(CS_ERR_INPUT, "%s was written by a different spec (sha256 %.12s…, this spec "
                  "%.12s…): use a new -o path, or --overwrite to replace it", path, theirs, ours);
}

/* A journal holding records of another spec is never applied nor reset. */
static int archive_journal_check_spec(const cs_archive *a, const archive_journal_scan *s) {
  if (s->header_ok && s->n > 0 && strcmp(s->sha, a->spec_sha256) != 0)
    return cs_error(CS_ERR_INPUT, "the journal %s was written by a different spec (sha256 %.12s…, "
                    "this spec %.12s…): finish that sweep, or move the journal away",
                    a->journal_path, s->sha, a->spec_sha256);
  return CS_OK;
}

/* Resume an existing file (the journal is locked and scanned):
 *   identity and spec checked read-only (refusals touch nothing);
 *   unreadable, or left dirty by a killed write -> rebuilt from a journal
 *   that covers it (else refused: damaged, nothing to rebuild from);
 *   otherwise interrupted rows are cut and unapplied records applied. */
static int archive_resume_existing(cs_archive *a, const cs_spec *spec, const unsigned char *mask,
                                   archive_journal_scan *s, int journal_created) {
  hid_t file;
  archive_meta meta;
  archive_probe_class cls;
  int rc = archive_probe(a->path, H5F_ACC_RDONLY, &file, &meta, &cls);
  if (!rc && strcmp(meta.spec_sha256, a->spec_sha256) != 0) {
    H5Fclose(file);
    return archive_sha_mismatch(a->path, meta.spec_sha256, a->spec_sha256);
  }
  // the structure: /cells rows, /runs
  if (!rc) {
    rc = archive_load_rows(a, file, a->path);
    if (!rc) rc = archive_read_n_runs(a, file);
    if (rc) cls = ARCHIVE_PROBE_UNREADABLE;
    H5Fclose(file);
  }
  int covers = !journal_created && s->header_ok && s->covers && !strcmp(s->sha, a->spec_sha256);
  if (rc) {
    if (cls == ARCHIVE_PROBE_UNREADABLE && covers) {
      cs_error_clear();
      return archive_rebuild(a, spec, mask, s, 0);
    }
    if (cls == ARCHIVE_PROBE_UNREADABLE) {
      char msg[1024];
      archive_copy_str(msg, sizeof msg, cs_error_message());
      return cs_error(rc, "%s; there is no journal %s holding its results to rebuild it from: "
                      "move it away or use another -o path", msg, a->journal_path);
    }
    return rc;
  }
  CS_CHECK(archive_journal_check_spec(a, s));
  CS_CHECK(archive_apply_mask(a, spec, mask));
  if (s->dirty && covers) return archive_rebuild(a, spec, mask, s, 1);
  // anything to repair or apply? (decided read-only: a resume with nothing
  // to do leaves the file untouched)
  int need_repair = 0, need_replay = 0;
  file = archive_h5_open(a->path, H5F_ACC_RDONLY);
  if (file < 0) return archive_h5_error(CS_ERR_IO, "cannot open the archive %s", a->path);
  rc = archive_table_needs_repair(a, file, "curvature", &need_repair);
  if (!rc && !need_repair) rc = archive_table_needs_repair(a, file, "curves", &need_repair);
  if (!rc) rc = archive_journal_replay(a, file, s, 0, 1, &need_replay);
  H5Fclose(file);
  CS_CHECK(rc);
  if (!need_repair && !need_replay) return CS_OK;
  // repair interrupted writes, then apply the journal
  CS_CHECK(archive_window_begin(a, 1));
  CS_CHECK(archive_h5_session_open(a, &file));
  rc = archive_table_repair(a, file, "curvature");
  if (!rc) rc = archive_table_repair(a, file, "curves");
  if (!rc) rc = archive_journal_replay(a, file, s, 0, 0, NULL);
  rc = archive_h5_session_close(a, file, rc);
  if (!rc) rc = archive_window_end(a);
  return rc;
}

static int archive_any_finished(const cs_archive *a) {
  for (int64_t r = 0; r < a->n_rows; r++)
    if (a->row_status[r] != CELL_PENDING) return 1;
  return 0;
}

static int archive_open_write_impl(const char *path, const cs_spec *spec, cs_archive_mode mode,
                                   const unsigned char *mask, cs_archive **out) {
  *out = NULL;
  if (!path || !path[0] || !spec) return cs_error(CS_ERR_INPUT, "archive_open_write: no path or spec");
  if (mode != ARCHIVE_CREATE && mode != ARCHIVE_OVERWRITE && mode != ARCHIVE_RESUME)
    return cs_error(CS_ERR_INPUT, "archive_open_write: unknown mode %d", (int)mode);
  cs_archive *a;
  CS_CHECK(archive_new(path, &a));
  archive_copy_str(a->spec_sha256, sizeof a->spec_sha256, spec_sha256(spec));
  int exists = archive_file_exists(path), jexists = archive_file_exists(a->journal_path);
  int created = 0, rc = CS_OK;
  archive_journal_scan scan;
  memset(&scan, 0, sizeof scan);

  // refusals that need no lock and touch nothing
  if (mode == ARCHIVE_CREATE && exists)
    rc = cs_error(CS_ERR_INPUT, "%s already exists: use --overwrite to replace it, run the same "
                  "spec again to resume it, or use another -o path", path);
  else if (mode == ARCHIVE_CREATE && jexists)
    rc = cs_error(CS_ERR_INPUT, "%s does not exist but its journal %s does (an earlier run): resume "
                  "to recover it, or move the journal away", path, a->journal_path);
  struct stat st;
  if (!rc && exists && stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    rc = cs_error(CS_ERR_INPUT, "%s is not a regular file, so not a curvsweep archive: use another "
                  "-o path", path);
  if (!rc) rc = archive_make_parent_dirs(path);
  if (!rc) rc = archive_journal_lock(a, &created);
  if (rc) goto fail;
  // look again now that this process is the only writer: another one may
  // have created, finished or removed things since the looks above
  exists = archive_file_exists(path), jexists = !created;
  if (mode == ARCHIVE_CREATE && (exists || jexists)) {
    rc = cs_error(CS_ERR_INPUT, "%s was created by another curvsweep process while this one "
                  "started: run the same spec again to resume it, or use another -o path", path);
    goto fail;
  }

  if (mode == ARCHIVE_RESUME && (exists || jexists)) {
    // read the journal (untouched until everything checks out)
    rc = archive_journal_scan_fd(a->journal_fd, a->journal_path, &scan);
    if (!rc && exists) rc = archive_resume_existing(a, spec, mask, &scan, created);
    else if (!rc) rc = archive_journal_check_spec(a, &scan);
    if (!rc && !exists) rc = archive_rebuild(a, spec, mask, &scan, 0);  // journal without archive
    if (rc) goto fail;
    if (!scan.header_ok || strcmp(scan.sha, a->spec_sha256) != 0) {
      // no usable header (or an empty journal of another spec): start afresh
      rc = archive_journal_reset(a, !archive_any_finished(a));
    } else {
      // cut a torn tail away
      if (scan.good_end < scan.size && (ftruncate(a->journal_fd, scan.good_end) != 0 ||
                                        fdatasync(a->journal_fd) != 0))
        rc = cs_error(CS_ERR_IO, "cannot cut the torn tail of the journal %s: %s", a->journal_path,
                      strerror(errno));
      a->journal_records = scan.n;
      a->journal_covers = scan.covers;
    }
  } else {
    // create or overwrite: a complete new file replaces the path atomically
    rc = archive_create_fresh(a, spec, mask);
  }
  archive_scan_free(&scan);
  if (rc) {
    // past the point of changes: keep the journal if it may hold results
    archive_journal_abandon(a, created && a->journal_records == 0);
    archive_free(a);
    return rc;
  }
  *out = a;
  return CS_OK;

fail:
  archive_scan_free(&scan);
  archive_journal_abandon(a, created);
  archive_free(a);
  return rc;
}

int archive_open_write(const char *path, const cs_spec *spec, cs_archive_mode mode,
                       const unsigned char *mask, cs_archive **out) {
  archive_quiet q = archive_quiet_begin();
  int rc = archive_open_write_impl(path, spec, mode, mask, out);
  archive_quiet_end(q);
  return rc;
}

cs_cell_status archive_cell_status(const cs_archive *a, int64_t cell_id) {
  int64_t r = archive_find_row(a, cell_id);
  return r < 0 ? CELL_PENDING : (cs_cell_status)a->row_status[r];
}

void archive_counts(const cs_archive *a, int64_t *selected, int64_t *done, int64_t *failed,
                    int64_t *diverged) {
  int64_t n[4] = {0, 0, 0, 0}, sel = 0;
  for (int64_t r = 0; r < a->n_rows; r++) {
    if (!a->row_selected[r]) continue;
    sel++;
    n[a->row_status[r] & 3]++;
  }
  if (selected) *selected = sel;
  if (done) *done = n[CELL_DONE];
  if (failed) *failed = n[CELL_FAILED];
  if (diverged) *diverged = n[CELL_DIVERGED];
}

/* One result: dirty flag and record in the journal (one sync), the HDF5
 * write, the flag cleared. The dirty flag stays set when the HDF5 write
 * fails, so the next resume rebuilds the file from the journal. */
/* Refuse a write the file system cannot hold before HDF5 sees it: an HDF5
 * flush that fails with ENOSPC leaves a file that its library cannot close
 * again (and crashes at exit). need: bytes the write may take. */
static int archive_check_space(const cs_archive *a, size_t need) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", a->path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  if (!dir[0]) snprintf(dir, sizeof dir, "/");
  struct statvfs st;
  if (statvfs(dir, &st) != 0) return CS_OK; /* cannot tell: let the write report */
  double avail = (double)st.f_bavail * (double)st.f_frsize;
  if (avail < (double)need)
    return cs_error(CS_ERR_IO,
                    "cannot write to the archive %s: %.0f kB free on its file system, a result "
                    "needs about %.0f kB (No space left on device); free some space and resume "
                    "with the same command",
                    a->path, avail / 1024, (double)need / 1024);
  return CS_OK;
}

/* Bytes a result may occupy in journal + HDF5 (chunk overheads included). */
static size_t archive_result_footprint(const cs_cell_result *r) {
  unsigned char *buf;
  size_t len = 0;
  if (result_pack(r, &buf, &len) == CS_OK) free(buf);
  return 3 * len + ((size_t)1 << 20);
}

static int archive_write_result_impl(cs_archive *a, const cs_cell_result *r, int journal_only) {
  CS_CHECK(archive_check_result(a, r));
  CS_CHECK(archive_check_space(a, archive_result_footprint(r)));
  if (a->journal_fd >= 0) {
    CS_CHECK(archive_window_begin(a, 0));
    CS_CHECK(archive_journal_result(a, r, 1));
  }
  a->unapplied++;
  if (journal_only) return CS_OK;
  hid_t file;
  CS_CHECK(archive_h5_session_open(a, &file));
  int rc = archive_apply_result(a, file, r);
  rc = archive_h5_session_close(a, file, rc);
  if (rc) return rc;
  a->unapplied--;
  return archive_window_end(a);
}

int archive_write_result(cs_archive *a, const cs_cell_result *r) {
  archive_quiet q = archive_quiet_begin();
  int rc = archive_write_result_impl(a, r, 0);
  archive_quiet_end(q);
  return rc;
}

int archive_test_journal_only(cs_archive *a, const cs_cell_result *r) {
  archive_quiet q = archive_quiet_begin();
  int rc = archive_write_result_impl(a, r, 1);
  archive_quiet_end(q);
  return rc;
}

static int archive_run_impl(cs_archive *a, const cs_run_info *run, int begin) {
  if (!begin && a->run_row < 0)
    return cs_error(CS_ERR_INTERNAL, "%s: archive_end_run without archive_begin_run", a->path);
  archive_run_payload p;
  memset(&p, 0, sizeof p);
  p.row = begin ? a->n_runs : a->run_row;
  p.info = *run;
  CS_CHECK(archive_check_space(a, (size_t)1 << 20));
  // journal first, then the file
  if (a->journal_fd >= 0) {
    CS_CHECK(archive_window_begin(a, 0));
    CS_CHECK(archive_journal_append(a, begin ? ARCHIVE_REC_RUN_BEGIN : ARCHIVE_REC_RUN_END, &p,
                                    sizeof p, 1));
  }
  hid_t file;
  CS_CHECK(archive_h5_session_open(a, &file));
  int rc = archive_apply_run(a, file, p.row, run);
  rc = archive_h5_session_close(a, file, rc);
  if (rc) return rc;
  if (begin) a->run_row = a->n_runs - 1;
  return archive_window_end(a);
}

int archive_begin_run(cs_archive *a, const cs_run_info *run) {
  archive_quiet q = archive_quiet_begin();
  int rc = archive_run_impl(a, run, 1);
  archive_quiet_end(q);
  return rc;
}

int archive_end_run(cs_archive *a, const cs_run_info *run) {
  archive_quiet q = archive_quiet_begin();
  int rc = archive_run_impl(a, run, 0);
  archive_quiet_end(q);
  return rc;
}

int archive_close(cs_archive *a) {
  if (!a) return CS_OK;
  // the journal goes once the file holds all of it (clean, nothing
  // unapplied) and nothing is pending, or when it holds no record at all
  int64_t pending = 0;
  for (int64_t r = 0; r < a->n_rows; r++) pending += a->row_status[r] == CELL_PENDING;
  if (a->journal_fd >= 0 && a->unapplied == 0 && !a->dirty &&
      (pending == 0 || a->journal_records == 0)) {
    unlink(a->journal_path);
    archive_fsync_dir(a->journal_path);
  }
  archive_free(a);
  return CS_OK;
}

/* ------------------------------------------------------------------------ */
/* reading                                                                    */


static void archive_reader_close(archive_reader *rd) {
  if (rd->file >= 0) H5Fclose(rd->file);
  archive_free(rd->a);
  memset(rd, 0, sizeof *rd);
  rd->file = H5I_INVALID_HID;
}

static int archive_reader_open(const char *path, archive_reader *rd) {
  memset(rd, 0, sizeof *rd);
  rd->file = H5I_INVALID_HID;
  archive_probe_class cls;
  CS_CHECK(archive_probe(path, H5F_ACC_RDONLY, &rd->file, &rd->meta, &cls));
  int rc = archive_new(path, &rd->a);
  if (!rc) rc = archive_load_rows(rd->a, rd->file, path);
  if (!rc) rc = archive_read_n_runs(rd->a, rd->file);
  if (rc) archive_reader_close(rd);
  return rc;
}

/* All rows of a table up to its valid length, with a memory type. */
static int archive_read_table(archive_reader *rd, const char *name, hid_t mtype, void **rows,
                              hsize_t *n) {
  *rows = NULL;
  *n = 0;
  hid_t ds = H5Dopen2(rd->file, name, H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: no /%s", rd->a->path, name);
  hsize_t valid = 0, len = 0;
  int rc = archive_table_valid_rows(rd->a, ds, rd->a->path, name, &valid, &len);
  if (!rc) rc = cs_calloc_bytes(rows, valid ? valid : 1, H5Tget_size(mtype));
  if (!rc && archive_table_io(ds, mtype, 0, valid, *rows, 0) < 0)
    rc = archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read /%s", rd->a->path, name);
  H5Dclose(ds);
  if (rc) {
    free(*rows);
    *rows = NULL;
    return rc;
  }
  *n = valid;
  return CS_OK;
}

static int archive_summary_impl(const char *path, cs_archive_summary *out) {
  memset(out, 0, sizeof *out);
  archive_reader rd;
  CS_CHECK(archive_reader_open(path, &rd));
  archive_copy_str(out->name, sizeof out->name, rd.meta.spec_name);
  archive_copy_str(out->spec_sha256, sizeof out->spec_sha256, rd.meta.spec_sha256);
  archive_copy_str(out->created, sizeof out->created, rd.meta.created);
  archive_copy_str(out->software_version, sizeof out->software_version, rd.meta.software_version);
  // cells: counts and wall time of finished cells
  archive_cell_row *cells = NULL;
  cs_run_info *runs = NULL;
  hsize_t nc = 0, nr = 0;
  hid_t mt = archive_cell_row_type();
  int rc = archive_read_table(&rd, "cells", mt, (void **)&cells, &nc);
  H5Tclose(mt);
  for (hsize_t i = 0; !rc && i < nc; i++) {
    out->cells++;
    switch (rd.a->row_status[i]) {
      case CELL_PENDING: out->pending++; break;
      case CELL_DONE: out->done++; break;
      case CELL_FAILED: out->failed++; break;
      case CELL_DIVERGED: out->diverged++; break;
    }
    if (rd.a->row_status[i] != CELL_PENDING && isfinite(cells[i].wall_s)) out->wall_s += cells[i].wall_s;
  }
  // runs
  if (!rc) {
    mt = archive_run_row_type();
    rc = archive_read_table(&rd, "runs", mt, (void **)&runs, &nr);
    H5Tclose(mt);
  }
  for (hsize_t i = 0; !rc && i < nr; i++) {
    out->runs++;
    if (runs[i].ranks > out->max_ranks) out->max_ranks = runs[i].ranks;
    if (runs[i].end[0]) archive_copy_str(out->last_run_end, sizeof out->last_run_end, runs[i].end);
  }
  free(cells);
  free(runs);
  archive_reader_close(&rd);
  return rc;
}

int archive_summary(const char *path, cs_archive_summary *out) {
  archive_quiet q = archive_quiet_begin();
  int rc = archive_summary_impl(path, out);
  archive_quiet_end(q);
  return rc;
}

static int archive_read_spec_impl(const char *path, char **text) {
  archive_reader rd;
  *text = NULL;
  CS_CHECK(archive_reader_open(path, &rd));
  int rc = archive_spec_read(rd.file, path, text);
  archive_reader_close(&rd);
  return rc;
}

int archive_read_spec(const char *path, char **text) {
  archive_quiet q = archive_quiet_begin();
  int rc = archive_read_spec_impl(path, text);
  archive_quiet_end(q);
  return rc;
}

/* A 2-D dataset into a fresh array of elements of memory type mtype
 * (elem_bytes each); dims out. A missing or unreadable dataset is a
 * refusal naming it. */
static int archive_read_array(hid_t loc, const char *name, hid_t mtype, size_t elem_bytes,
                              const char *path, void **v, hsize_t dims[2]) {
  *v = NULL;
  dims[0] = dims[1] = 0;
  hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: no dataset %s", path, name);
  hid_t space = H5Dget_space(ds);
  int rc = CS_OK;
  if (space < 0 || H5Sget_simple_extent_ndims(space) != 2) {
    rc = cs_error(CS_ERR_INPUT, "%s: dataset %s is not 2-D", path, name);
  } else {
    H5Sget_simple_extent_dims(space, dims, NULL);
    size_t n = (size_t)(dims[0] * dims[1]);
    if (n > 0) {
      rc = cs_calloc_bytes(v, n, elem_bytes);
      if (!rc && H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, *v) < 0)
        rc = archive_h5_error(CS_ERR_INPUT, "%s: cannot read %s", path, name);
    }
  }
  if (space >= 0) H5Sclose(space);
  H5Dclose(ds);
  if (rc) {
    free(*v);
    *v = NULL;
  }
  return rc;
}

/* A 2-D float64 dataset into a fresh array; dims out. */
static int archive_read_matrix(hid_t loc, const char *name, const char *path, double **v,
                               hsize_t dims[2]) {
  return archive_read_array(loc, name, H5T_NATIVE_DOUBLE, sizeof(double), path, (void **)v, dims);
}

/* Does a link exist? A failed lookup (damaged group) is a refusal, never "no". */
static int archive_link_lookup(hid_t loc, const char *name, const char *path, int *there) {
  htri_t e = H5Lexists(loc, name, H5P_DEFAULT);
  *there = e > 0;
  if (e < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot look up /%s", path, name);
  return CS_OK;
}

static int archive_read_points(hid_t file, const char *path, cs_cell_result *r) {
  char name[64];
  snprintf(name, sizeof name, "points/%" PRId64, r->cell_id);
  int there;
  CS_CHECK(archive_link_lookup(file, "points", path, &there));
  if (there) CS_CHECK(archive_link_lookup(file, name, path, &there));
  if (!there) return CS_OK;
  hid_t g = H5Gopen2(file, name, H5P_DEFAULT);
  if (g < 0) return archive_h5_error(CS_ERR_INPUT, "%s: cannot open /%s", path, name);
  hsize_t dims[2];
  int rc = archive_read_matrix(g, "x", path, &r->pt_x, dims);
  r->n_points = (int)dims[0], r->m = (int)dims[1];
  double **fields[RESULT_N_POINT_ARRAYS];
  result_point_arrays(r, fields);
  hid_t ct = archive_class_type(H5T_NATIVE_INT8);
  for (int k = 0; k <= RESULT_N_POINT_ARRAYS && !rc; k++) {
    const char *field = k < RESULT_N_POINT_ARRAYS ? RESULT_POINT_NAMES[k] : "class";
    if (k < RESULT_N_POINT_ARRAYS)
      rc = archive_read_matrix(g, field, path, fields[k], dims);
    else
      rc = archive_read_array(g, field, ct, sizeof(int8_t), path, (void **)&r->pt_class, dims);
    if (!rc && (dims[0] != (hsize_t)r->depth || dims[1] != (hsize_t)r->n_points))
      rc = cs_error(CS_ERR_INPUT, "%s: /%s/%s is %llu x %llu, expected %d x %d", path, name,
                    field, (unsigned long long)dims[0], (unsigned long long)dims[1], r->depth,
                    r->n_points);
  }
  archive_h5_close_id(&ct, H5Tclose);
  H5Gclose(g);
  return rc;
}

static int archive_read_params(hid_t file, const char *path, cs_cell_result *r) {
  char name[64];
  snprintf(name, sizeof name, "params/%" PRId64, r->cell_id);
  int there;
  CS_CHECK(archive_link_lookup(file, "params", path, &there));
  if (there) CS_CHECK(archive_link_lookup(file, name, path, &there));
  if (!there) return CS_OK;
  hid_t g = H5Gopen2(file, name, H5P_DEFAULT);
  if (g < 0) return archive_h5_error(CS_ERR_INPUT, "%s: cannot open /%s", path, name);
  // the names, in order, from the attribute "tensors"
  hid_t attr = H5Aopen(g, "tensors", H5P_DEFAULT), space = H5I_INVALID_HID;
  hid_t t = archive_str_type(ARCHIVE_TENSOR_NAME_BYTES);
  char *names = NULL;
  hsize_t n = 0;
  int rc = CS_OK;
  if (attr < 0 || (space = H5Aget_space(attr)) < 0 || H5Sget_simple_extent_ndims(space) != 1) {
    rc = archive_h5_error(CS_ERR_INPUT, "%s: /%s has no tensors attribute", path, name);
  } else {
    H5Sget_simple_extent_dims(space, &n, NULL);
    rc = cs_calloc_bytes((void **)&names, n ? n : 1, ARCHIVE_TENSOR_NAME_BYTES);
    if (!rc && n > 0 && H5Aread(attr, t, names) < 0)
      rc = archive_h5_error(CS_ERR_INPUT, "%s: cannot read /%s tensors", path, name);
  }
  if (!rc && n > 0) rc = CS_CALLOC(r->tensors, n);
  for (hsize_t i = 0; !rc && i < n; i++) {
    cs_tensor *T = &r->tensors[i];
    archive_copy_str(T->name, sizeof T->name, names + i * ARCHIVE_TENSOR_NAME_BYTES);
    hsize_t dims[2];
    r->n_tensors = (int)i + 1;
    rc = archive_read_matrix(g, T->name, path, &T->v, dims);
    T->rows = (int)dims[0], T->cols = (int)dims[1];
  }
  free(names);
  archive_h5_close_id(&t, H5Tclose);
  archive_h5_close_id(&space, H5Sclose);
  archive_h5_close_id(&attr, H5Aclose);
  H5Gclose(g);
  return rc;
}

static void archive_results_free(cs_cell_result *res, int64_t n) {
  if (!res) return;
  for (int64_t i = 0; i < n; i++) result_free(&res[i]);
  free(res);
}

static int archive_read_results_rd(archive_reader *rd, cs_cell_result **results, int64_t *n_out) {
  *results = NULL;
  *n_out = 0;
  const char *path = rd->a->path;
  int64_t n = rd->a->n_rows;
  archive_cell_row *cells = NULL;
  archive_curv_row *cv = NULL;
  archive_curve_row *cu = NULL;
  cs_cell_result *res = NULL;
  int64_t *count_cv = NULL, *count_cu = NULL, *start_cv = NULL;
  unsigned char *filled = NULL;
  hsize_t ncells = 0, ncv = 0, ncu = 0;
  hid_t mt;
  int rc;
  // the three tables
  mt = archive_cell_row_type();
  rc = archive_read_table(rd, "cells", mt, (void **)&cells, &ncells);
  H5Tclose(mt);
  if (!rc) {
    mt = archive_curv_row_type();
    rc = archive_read_table(rd, "curvature", mt, (void **)&cv, &ncv);
    H5Tclose(mt);
  }
  if (!rc) {
    mt = archive_curve_row_type();
    rc = archive_read_table(rd, "curves", mt, (void **)&cu, &ncu);
    H5Tclose(mt);
  }
  if (!rc) rc = CS_CALLOC(res, n);
  if (!rc) rc = CS_CALLOC(count_cv, n);
  if (!rc) rc = CS_CALLOC(count_cu, n);
  if (rc) goto done;
  // the /cells columns
  for (int64_t i = 0; i < n; i++) {
    cs_cell_result *r = &res[i];
    r->cell_id = cells[i].cell_id;
    r->status = (cs_cell_status)rd->a->row_status[i];
    r->rank = cells[i].rank;
    r->attempts = cells[i].attempts;
    r->wall_s = cells[i].wall_s;
    r->train_loss = cells[i].train_loss;
    r->train_acc = cells[i].train_acc;
    r->test_acc = cells[i].test_acc;
    r->n_params = cells[i].n_params;
    archive_copy_str(r->message, sizeof r->message, cells[i].message);
  }
  // count rows per cell (rows of unlisted or pending cells are ignored)
  for (hsize_t k = 0; k < ncv; k++) {
    int64_t i = archive_find_row(rd->a, cv[k].cell_id);
    if (i >= 0 && res[i].status != CELL_PENDING) count_cv[i]++;
  }
  for (hsize_t k = 0; k < ncu; k++) {
    int64_t i = archive_find_row(rd->a, cu[k].cell_id);
    if (i >= 0 && res[i].status != CELL_PENDING) count_cu[i]++;
  }
  for (int64_t i = 0; i < n && !rc; i++) {
    if (res[i].status == CELL_DONE && count_cv[i] == 0)
      rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: cell %" PRId64 " is done but /curvature "
                    "has no row of it", path, res[i].cell_id);
    if (!rc && count_cv[i]) rc = CS_CALLOC(res[i].curv, count_cv[i]);
    if (!rc && count_cu[i]) rc = CS_CALLOC(res[i].curve, count_cu[i]);
    res[i].depth = (int)count_cv[i];
  }
  // place the rows: curvature by prefix (each of 1..L exactly once), curves in row order
  if (!rc) rc = CS_CALLOC(start_cv, n + 1);
  if (!rc) rc = CS_CALLOC(filled, ncv);
  for (int64_t i = 0; i < n && !rc; i++) start_cv[i + 1] = start_cv[i] + count_cv[i];
  for (hsize_t k = 0; k < ncv && !rc; k++) {
    int64_t i = archive_find_row(rd->a, cv[k].cell_id);
    if (i < 0 || res[i].status == CELL_PENDING) continue;
    int p = cv[k].prefix;
    if (p < 1 || p > res[i].depth || filled[start_cv[i] + p - 1]) {
      rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: /curvature row %llu: cell %" PRId64
                    " prefix %d repeated or outside 1..%d", path, (unsigned long long)k,
                    cv[k].cell_id, p, res[i].depth);
      break;
    }
    filled[start_cv[i] + p - 1] = 1;
    res[i].curv[p - 1] = cv[k].st;
  }
  for (hsize_t k = 0; k < ncu && !rc; k++) {
    int64_t i = archive_find_row(rd->a, cu[k].cell_id);
    if (i < 0 || res[i].status == CELL_PENDING) continue;
    cs_curve_point *p = &res[i].curve[res[i].n_curve++];
    p->epoch = cu[k].epoch;
    p->train_loss = cu[k].train_loss;
    p->train_acc = cu[k].train_acc;
    p->test_acc = cu[k].test_acc;
  }
  // per-cell groups of finished cells
  for (int64_t i = 0; i < n && !rc; i++) {
    if (res[i].status == CELL_PENDING) continue;
    rc = archive_read_points(rd->file, path, &res[i]);
    if (!rc) rc = archive_read_params(rd->file, path, &res[i]);
  }
done:
  free(cells), free(cv), free(cu), free(count_cv), free(count_cu), free(start_cv), free(filled);
  if (rc) {
    archive_results_free(res, n);
    return rc;
  }
  *results = res;
  *n_out = n;
  return CS_OK;
}

static int archive_read_results_impl(const char *path, cs_cell_result **results, int64_t *n) {
  archive_reader rd;
  *results = NULL;
  *n = 0;
  CS_CHECK(archive_reader_open(path, &rd));
  int rc = archive_read_results_rd(&rd, results, n);
  archive_reader_close(&rd);
  return rc;
}

int archive_read_results(const char *path, cs_cell_result **results, int64_t *n) {
  archive_quiet q = archive_quiet_begin();
  int rc = archive_read_results_impl(path, results, n);
  archive_quiet_end(q);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* merging shard archives                                                     */

static int archive_same_doubles(const double *x, const double *y, size_t n) {
  if (n == 0) return 1;
  if (!x || !y) return x == y;
  return memcmp(x, y, n * sizeof *x) == 0;
}

/* The science values of two results agree bitwise (NaN equal to NaN of
 * the same bits). wall_s, rank and attempts describe the run and may
 * differ between two runs of one deterministic cell. */
static int archive_same_values(const cs_cell_result *x, const cs_cell_result *y) {
  if (x->status != y->status || x->n_params != y->n_params || x->n_curve != y->n_curve ||
      x->depth != y->depth || x->n_points != y->n_points || x->m != y->m ||
      x->n_tensors != y->n_tensors || !x->pt_x != !y->pt_x)
    return 0;
  double mx[3] = {x->train_loss, x->train_acc, x->test_acc}, my[3] = {y->train_loss, y->train_acc, y->test_acc};
  if (!archive_same_doubles(mx, my, 3)) return 0;
  for (int e = 0; e < x->n_curve; e++) {
    const cs_curve_point *p = &x->curve[e], *q = &y->curve[e];
    double a3[3] = {p->train_loss, p->train_acc, p->test_acc}, b3[3] = {q->train_loss, q->train_acc, q->test_acc};
    if (p->epoch != q->epoch || !archive_same_doubles(a3, b3, 3)) return 0;
  }
  for (int l = 0; l < x->depth; l++) {
    if (x->curv[l].n_points != y->curv[l].n_points) return 0;
    for (size_t k = 0; k < ARCHIVE_N_STATS_FIELDS; k++)
      if (memcmp((const char *)&x->curv[l] + ARCHIVE_STATS_FIELDS[k].offset,
                 (const char *)&y->curv[l] + ARCHIVE_STATS_FIELDS[k].offset, sizeof(double)))
        return 0;
  }
  if (x->pt_x) {
    size_t np = (size_t)x->depth * x->n_points;
    double **fx[RESULT_N_POINT_ARRAYS], **fy[RESULT_N_POINT_ARRAYS];
    result_point_arrays((cs_cell_result *)x, fx);
    result_point_arrays((cs_cell_result *)y, fy);
    if (!archive_same_doubles(x->pt_x, y->pt_x, (size_t)x->n_points * x->m) ||
        memcmp(x->pt_class, y->pt_class, np))
      return 0;
    for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++)
      if (!archive_same_doubles(*fx[k], *fy[k], np)) return 0;
  }
  for (int i = 0; i < x->n_tensors; i++) {
    const cs_tensor *s = &x->tensors[i], *t = &y->tensors[i];
    if (strcmp(s->name, t->name) || s->rows != t->rows || s->cols != t->cols ||
        !archive_same_doubles(s->v, t->v, (size_t)s->rows * s->cols))
      return 0;
  }
  return 1;
}

typedef struct {
  cs_cell_result *res;
  int64_t n;
  cs_run_info *runs;
  hsize_t n_runs;
} archive_merge_input;

/* An input whose writer was killed inside a write may lack journaled
 * results: it must be resumed (repaired) before it is merged. */
static int archive_check_not_interrupted(const char *path) {
  char *jpath = archive_strdup_printf("%s.journal", path);
  if (!jpath) return cs_error(CS_ERR_NOMEM, "out of memory");
  int fd = open(jpath, O_RDONLY | O_CLOEXEC), rc = CS_OK;
  archive_journal_header h;
  if (fd >= 0 && archive_read_all(fd, &h, sizeof h) == 0 &&
      !memcmp(h.magic, ARCHIVE_JOURNAL_MAGIC, 8) && h.dirty)
    rc = cs_error(CS_ERR_INPUT, "%s was interrupted during a write (its journal %s says so): resume "
                  "it first (curvsweep run with its spec and -o %s), then merge", path, jpath, path);
  if (fd >= 0) close(fd);
  free(jpath);
  return rc;
}

static int archive_merge_impl(const char *out, const char *const *inputs, int n_inputs, int overwrite) {
  if (!out || !inputs || n_inputs < 1)
    return cs_error(CS_ERR_INPUT, "merge: need an output and at least one input archive");
  // the output: refuse to clobber or to be one of the inputs
  char out_real[PATH_MAX], in_real[PATH_MAX];
  int out_exists = archive_file_exists(out);
  if (out_exists && !overwrite)
    return cs_error(CS_ERR_INPUT, "%s already exists: use --overwrite to replace it, or another "
                    "output path", out);
  char *out_journal = archive_strdup_printf("%s.journal", out);
  int stale_journal = out_journal && archive_file_exists(out_journal);
  if (stale_journal && !overwrite) {
    int rc = cs_error(CS_ERR_INPUT, "%s does not exist but a journal %s does (an earlier run): "
                      "resume that run, move the journal away, or use --overwrite", out, out_journal);
    free(out_journal);
    return rc;
  }
  free(out_journal);
  for (int i = 0; i < n_inputs && out_exists; i++)
    if (realpath(out, out_real) && realpath(inputs[i], in_real) && !strcmp(out_real, in_real))
      return cs_error(CS_ERR_INPUT, "merge: the output %s is also an input: write the merge to a new "
                      "path", out);

  // every input once: the same file under two names (a path, ./path, a
  // hard or symbolic link) would count its runs twice
  for (int i = 0; i < n_inputs; i++) {
    struct stat si, sj;
    if (stat(inputs[i], &si) != 0) continue;  // refused with its reason when read
    for (int j = 0; j < i; j++)
      if (stat(inputs[j], &sj) == 0 && si.st_dev == sj.st_dev && si.st_ino == sj.st_ino)
        return cs_error(CS_ERR_INPUT, "merge: %s and %s are the same file: give each input archive "
                        "once", inputs[j], inputs[i]);
  }

  archive_merge_input *in = NULL;
  cs_spec *spec = NULL;
  cs_archive *a = NULL;
  unsigned char *mask = NULL;
  char *tmp = NULL, *text = NULL, first_sha[65] = "";
  int rc = CS_CALLOC(in, n_inputs);
  if (rc) return rc;

  // read every input: identity, same spec, results, runs
  for (int i = 0; i < n_inputs && !rc; i++) {
    archive_reader rd;
    if ((rc = archive_check_not_interrupted(inputs[i]))) break;
    if ((rc = archive_reader_open(inputs[i], &rd))) break;
    if (i == 0) {
      archive_copy_str(first_sha, sizeof first_sha, rd.meta.spec_sha256);
      rc = archive_spec_read(rd.file, inputs[i], &text);
      if (!rc) {
        rc = spec_load_string(text, inputs[i], &spec);
        if (rc) rc = cs_error_context(rc, "%s: the archive's /spec does not load: ", inputs[i]);
      }
      if (!rc && strcmp(spec_sha256(spec), first_sha) != 0)
        rc = cs_error(CS_ERR_INPUT, "archive %s: /spec text does not match its spec_sha256 "
                      "attribute: the archive is damaged", inputs[i]);
    } else if (strcmp(rd.meta.spec_sha256, first_sha) != 0) {
      rc = cs_error(CS_ERR_INPUT, "%s and %s were written by different specs (sha256 %.12s… and "
                    "%.12s…): merge only shards of one sweep", inputs[0], inputs[i], first_sha,
                    rd.meta.spec_sha256);
    }
    if (!rc) rc = archive_read_results_rd(&rd, &in[i].res, &in[i].n);
    if (!rc) {
      hid_t mt = archive_run_row_type();
      rc = archive_read_table(&rd, "runs", mt, (void **)&in[i].runs, &in[i].n_runs);
      H5Tclose(mt);
    }
    archive_reader_close(&rd);
  }
  if (rc) goto done;

  // the union of listed cells; per cell the chosen result: done beats
  // diverged beats failed; two done results must agree
  int64_t nc = spec_cell_count(spec);
  int64_t *pick_in = NULL, *pick_k = NULL;
  if ((rc = CS_CALLOC(mask, nc)) || (rc = CS_CALLOC(pick_in, nc)) || (rc = CS_CALLOC(pick_k, nc))) {
    free(pick_in);
    goto done;
  }
  for (int64_t c = 0; c < nc; c++) pick_in[c] = -1;
  static const int rank_of[4] = {0, 3, 1, 2};  // pending, done, failed, diverged
  for (int i = 0; i < n_inputs && !rc; i++) {
    for (int64_t k = 0; k < in[i].n && !rc; k++) {
      const cs_cell_result *r = &in[i].res[k];
      if (r->cell_id < 0 || r->cell_id >= nc) {
        rc = cs_error(CS_ERR_INPUT, "%s lists cell %" PRId64 ", outside its spec's 0..%" PRId64,
                      inputs[i], r->cell_id, nc - 1);
        break;
      }
      mask[r->cell_id] = 1;
      if (r->status == CELL_PENDING) continue;
      int64_t j = pick_in[r->cell_id];
      const cs_cell_result *old = j >= 0 ? &in[j].res[pick_k[r->cell_id]] : NULL;
      if (old && old->status == CELL_DONE && r->status == CELL_DONE && !archive_same_values(old, r)) {
        rc = cs_error(CS_ERR_INPUT, "cell %" PRId64 " is done in both %s and %s with different "
                      "values: these are not shards of one deterministic sweep; merge one of them",
                      r->cell_id, inputs[j], inputs[i]);
        break;
      }
      if (!old || rank_of[r->status & 3] > rank_of[old->status & 3])
        pick_in[r->cell_id] = i, pick_k[r->cell_id] = k;
    }
  }
  // build the output under a temp name, without a journal
  if (!rc) rc = archive_new(out, &a);
  if (!rc) {
    archive_copy_str(a->spec_sha256, sizeof a->spec_sha256, spec_sha256(spec));
    rc = archive_rows_from_mask(a, spec, mask);
  }
  if (!rc) rc = archive_create_temp(a, spec, &tmp);
  if (!rc) {
    // write into the temp file (a->path names it for the messages)
    char *final_path = a->path;
    a->path = tmp;
    hid_t file;
    rc = archive_h5_session_open(a, &file);
    if (!rc) {
      for (int64_t c = 0; c < nc && !rc; c++)
        if (pick_in[c] >= 0) rc = archive_apply_result(a, file, &in[pick_in[c]].res[pick_k[c]]);
      for (int i = 0; i < n_inputs && !rc; i++)
        for (hsize_t k = 0; k < in[i].n_runs && !rc; k++)
          rc = archive_apply_run(a, file, a->n_runs, &in[i].runs[k]);
      rc = archive_h5_session_close(a, file, rc);
    }
    a->path = final_path;
    if (!rc) rc = archive_fsync_file(tmp);
    // a stale journal of the replaced output must not be replayed into it
    if (!rc && overwrite && archive_file_exists(a->journal_path) && unlink(a->journal_path) != 0)
      rc = cs_error(CS_ERR_IO, "cannot remove the old journal %s: %s", a->journal_path, strerror(errno));
    if (!rc) rc = archive_rename_into_place(tmp, out);
    else unlink(tmp);
  }
  free(pick_in);
  free(pick_k);

done:
  for (int i = 0; i < n_inputs; i++) {
    archive_results_free(in[i].res, in[i].n);
    free(in[i].runs);
  }
  free(in);
  free(mask);
  free(tmp);
  free(text);
  archive_free(a);
  if (spec) spec_free(spec);
  return rc;
}

int archive_merge(const char *out, const char *const *inputs, int n_inputs, int overwrite) {
  archive_quiet q = archive_quiet_begin();
  int rc = archive_merge_impl(out, inputs, n_inputs, overwrite);
  archive_quiet_end(q);
  return rc;
}
