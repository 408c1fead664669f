/* archive_guard.c — an archive read as untrusted input (docs/SECURITY.md,
 * "Archives"; docs/ARCHIVE.md, "Reading an archive"):
 *   plain objects   every link a hard link, every object linked once (no
 *                   cycle, no alias), every dataset stored in this file (no
 *                   external raw storage, no virtual dataset): checked for
 *                   the whole file at every open (archive_structure_check)
 *                   and again on each open of an object (archive_dataset_open,
 *                   archive_group_open), so no command ever follows a link
 *                   out of the file or writes through one;
 *   sizes           what one open may allocate from what the file declares
 *                   is bounded (the budget), and a table declares no rows
 *                   it does not store (archive_table_check_stored);
 *   values          a done cell's metrics and extreme-token columns in their
 *                   domain (archive_check_metrics, archive_check_token_stats),
 *                   tensor names as the archive stores them.
 * Attributes are read as one value of the expected class and a bounded
 * size by archive_h5.c (archive_attr_open_one). Refusals are CS_ERR_INPUT
 * naming the file and the object. */
#include "archive_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the budget ---- */

/* What the reads of one open may allocate from sizes the file declares:
 * ARCHIVE_BUDGET_BASE plus ARCHIVE_BUDGET_RATIO times the file's size (an
 * honest archive needs a few times its size: the tables are deflated about
 * 2-4 times, /points, /params and /fields are stored raw). Per thread: one
 * open is read by one thread; set at each open (archive_budget_begin). */
#define ARCHIVE_BUDGET_BASE ((uint64_t)256 << 20)
#define ARCHIVE_BUDGET_RATIO 16
static _Thread_local uint64_t archive_budget_left = ARCHIVE_BUDGET_BASE;
static _Thread_local uint64_t archive_budget_total = ARCHIVE_BUDGET_BASE;

/* The file's size is what it stores: st_blocks (512-byte units), not
 * st_size, which a sparse file pads with holes at no cost (truncate -s
 * +200M) to buy itself a larger budget (docs/SECURITY.md, "Hostile
 * archives: second audit"). */
void archive_budget_begin(const char *path) {
  struct stat st;
  uint64_t size = 0;
  if (stat(path, &st) == 0 && st.st_size > 0 && st.st_blocks > 0) {
    uint64_t held = (uint64_t)st.st_blocks * 512;
    size = held < (uint64_t)st.st_size ? held : (uint64_t)st.st_size;
  }
  uint64_t extra = size > (UINT64_MAX - ARCHIVE_BUDGET_BASE) / ARCHIVE_BUDGET_RATIO
                       ? UINT64_MAX - ARCHIVE_BUDGET_BASE
                       : size * ARCHIVE_BUDGET_RATIO;
  archive_budget_total = archive_budget_left = ARCHIVE_BUDGET_BASE + extra;
}

int archive_budget_take(uint64_t n, uint64_t size, const char *path, const char *object) {
  uint64_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes) || bytes > archive_budget_left)
    return cs_error(CS_ERR_INPUT, "%s: damaged or hostile archive: %s declares %" PRIu64 " elements "
                    "of %" PRIu64 " bytes, beyond what this archive can hold (%" PRIu64 " MiB may "
                    "be read from it in all)", path, object, n, size, archive_budget_total >> 20);
  archive_budget_left -= bytes;
  return CS_OK;
}

/* ---- links, storage, objects ---- */

/* "/loc/name" of name relative to loc, into full. */
static void archive_guard_name(hid_t loc, const char *name, char *full, size_t len) {
  char base[512] = "";
  if (H5Iget_name(loc, base, sizeof base) < 0) base[0] = '\0';
  size_t b = strlen(base);
  if (b > 0 && base[b - 1] == '/') base[--b] = '\0';
  snprintf(full, len, "%s/%s", base, name[0] == '/' ? name + 1 : name);
}

static const char *archive_link_kind(H5L_type_t t) {
  return t == H5L_TYPE_SOFT ? "a soft link" : t == H5L_TYPE_EXTERNAL ? "an external link"
                                                                     : "a user-defined link";
}

/* Every component of name (relative to loc) is a hard link. */
static int archive_guard_path(hid_t loc, const char *name, const char *path, const char *full) {
  char part[512];
  size_t n = strlen(name);
  if (n >= sizeof part) return cs_error(CS_ERR_INPUT, "%s: object name %s too long", path, full);
  for (size_t i = 1; i <= n; i++) {
    if (i < n && name[i] != '/') continue;
    memcpy(part, name, i);
    part[i] = '\0';
    H5L_info_t li;
    if (H5Lget_info(loc, part, &li, H5P_DEFAULT) < 0)
      return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot look up %s", path, full);
    if (li.type != H5L_TYPE_HARD)
      return cs_error(CS_ERR_INPUT, "%s: %s is reached through %s: only plain objects are read "
                      "(docs/SECURITY.md, \"Archives\")", path, full, archive_link_kind(li.type));
  }
  return CS_OK;
}

int archive_dataset_plain(hid_t ds, const char *path, const char *full) {
  hid_t dcpl = H5Dget_create_plist(ds);
  if (dcpl < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read the layout of %s", path, full);
  H5D_layout_t layout = H5Pget_layout(dcpl);
  int ext = H5Pget_external_count(dcpl);
  H5Pclose(dcpl);
  if (layout == H5D_VIRTUAL)
    return cs_error(CS_ERR_INPUT, "%s: %s is a virtual dataset (its data lives in other files): "
                    "only plain objects are read (docs/SECURITY.md, \"Archives\")", path, full);
  if (ext != 0)
    return cs_error(CS_ERR_INPUT, "%s: %s has external raw storage (its data lives in %s): only "
                    "plain objects are read or written (docs/SECURITY.md, \"Archives\")", path, full,
                    ext > 0 ? "another file" : "an unreadable file list");
  if (layout < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read the layout of %s", path, full);
  return CS_OK;
}

/* A dataset (plain storage) or group of loc, reached through hard links only. */
static int archive_object_open(hid_t loc, const char *name, const char *path, int dataset,
                               hid_t *id) {
  char full[768];
  archive_guard_name(loc, name, full, sizeof full);
  *id = H5I_INVALID_HID;
  CS_CHECK(archive_guard_path(loc, name, path, full));
  *id = dataset ? H5Dopen2(loc, name, H5P_DEFAULT) : H5Gopen2(loc, name, H5P_DEFAULT);
  if (*id < 0)
    return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot open %s%s", path,
                            dataset ? "" : "the group ", full);
  int rc = dataset ? archive_dataset_plain(*id, path, full) : CS_OK;
  if (rc) archive_h5_close_id(id, H5Dclose);
  return rc;
}

int archive_dataset_open(hid_t loc, const char *name, const char *path, hid_t *ds) {
  return archive_object_open(loc, name, path, 1, ds);
}

int archive_group_open(hid_t loc, const char *name, const char *path, hid_t *g) {
  return archive_object_open(loc, name, path, 0, g);
}

/* A dataset stores what it declares: raw data of at least 1/ARCHIVE_STORED_RATIO
 * of its declared bytes (deflate, which curvsweep does not even use for
 * arrays, packs at most ~1032:1), so no dataset whose chunks were never
 * written makes a reader allocate its declared size of fill values
 * (docs/SECURITY.md, "Hostile archives: second audit"). */
#define ARCHIVE_STORED_RATIO 1100
int archive_dataset_check_stored_bytes(hid_t ds, const char *path, const char *full) {
  hid_t space = H5Dget_space(ds), ft = H5Dget_type(ds);
  hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
  size_t size = ft >= 0 ? H5Tget_size(ft) : 0;
  archive_h5_close_id(&ft, H5Tclose);
  archive_h5_close_id(&space, H5Sclose);
  if (n < 0 || size == 0)
    return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read the extent of %s", path, full);
  uint64_t declared;
  if (__builtin_mul_overflow((uint64_t)n, (uint64_t)size, &declared)) declared = UINT64_MAX;
  uint64_t stored = H5Dget_storage_size(ds);  // 0 also when it cannot be told
  if (declared > 0 && (stored == 0 || declared / ARCHIVE_STORED_RATIO > stored))
    return cs_error(CS_ERR_INPUT, "%s: damaged or hostile archive: %s declares %" PRIu64 " bytes "
                    "but stores %" PRIu64 " (its data was never written)", path, full, declared,
                    stored);
  return CS_OK;
}

/* A table declares no more rows than its stored chunks hold, plus at most
 * `slack` chunks' worth never stored: rows past the chunks written would
 * read as fill values (cell 0, prefix 0) and cost their size in memory and
 * time, and cutting them (H5Dset_extent) visits every chunk slot they
 * declare (docs/SECURITY.md, "Archives"). */
static int archive_table_check_declared(hid_t ds, hsize_t rows, hsize_t slack, const char *path,
                                        const char *name) {
  if (rows == 0) return CS_OK;
  hid_t dcpl = H5Dget_create_plist(ds);
  hsize_t chunk = 0, nchunks = 0;
  int chunked = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, 1, &chunk) == 1;
  archive_h5_close_id(&dcpl, H5Pclose);
  hid_t space = chunked ? H5Dget_space(ds) : H5I_INVALID_HID;
  int counted = space >= 0 && chunk > 0 && H5Dget_num_chunks(ds, space, &nchunks) >= 0;
  if (!counted) archive_h5_note();
  archive_h5_close_id(&space, H5Sclose);
  if (!counted)
    return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: the chunks of /%s cannot be counted", path, name);
  if ((rows - 1) / chunk + 1 > nchunks + slack)
    return cs_error(CS_ERR_INPUT, "%s: damaged or hostile archive: /%s declares %llu rows but "
                    "stores %llu chunk(s) of %llu rows", path, name, (unsigned long long)rows,
                    (unsigned long long)nchunks, (unsigned long long)chunk);
  return CS_OK;
}

int archive_table_check_stored(hid_t ds, hsize_t rows, const char *path, const char *name) {
  return archive_table_check_declared(ds, rows, 0, path, name);
}

int archive_table_check_tail(hid_t ds, hsize_t rows, const char *path, const char *name) {
  return archive_table_check_declared(ds, rows, ARCHIVE_TAIL_CHUNKS, path, name);
}

/* ---- attributes ---- */

/* ---- the whole file: plain objects only ---- */

typedef struct {
  hid_t file;
  const char *path;
  archive_guard_fn fn;
  void *ctx;
  archive_addr_set seen;
  int64_t bad;
  int damaged;          /* an HDF5 read failed: the walk could not finish */
  char first[1024];     /* the first problem, for the error message */
} archive_guard_walk;

static int archive_walk_problem(archive_guard_walk *w, const char *object, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int archive_walk_problem(archive_guard_walk *w, const char *object, const char *fmt, ...) {
  char reason[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  if (w->bad++ == 0) snprintf(w->first, sizeof w->first, "%s: %s", object, reason);
  if (w->fn) w->fn(object, reason, w->ctx);
  return w->fn ? 0 : 1;  // without a reporter the first problem ends the walk
}

static int archive_walk_link(hid_t g, const char *name, const char *rel, const H5L_info_t *li,
                             void *data) {
  archive_guard_walk *w = data;
  char full[768];
  snprintf(full, sizeof full, "/%s", rel);
  if (li->type != H5L_TYPE_HARD) {
    if (li->type == H5L_TYPE_EXTERNAL) {
      char buf[512] = "";
      const char *file = "?", *obj = "?";
      unsigned flags;
      if (li->u.val_size <= sizeof buf && H5Lget_val(g, name, buf, sizeof buf, H5P_DEFAULT) >= 0)
        H5Lunpack_elink_val(buf, li->u.val_size, &flags, &file, &obj);
      return archive_walk_problem(w, full, "an external link (to %.200s:%.200s): only plain "
                                  "objects are read (docs/SECURITY.md, \"Archives\")", file, obj);
    }
    return archive_walk_problem(w, full, "%s: only plain objects are read (docs/SECURITY.md, "
                                "\"Archives\")", archive_link_kind(li->type));
  }
  int added = archive_addr_add(&w->seen, li->u.address);
  if (added < 0) {
    w->damaged = 1;
    snprintf(w->first, sizeof w->first, "out of memory walking the objects");
    return -1;
  }
  if (added == 0)
    return archive_walk_problem(w, full, "a second hard link to an object linked elsewhere (a "
                                "link cycle or alias): every object is linked once "
                                "(docs/SECURITY.md, \"Archives\")");
  hid_t obj = H5Oopen_by_addr(w->file, li->u.address);
  if (obj < 0) {
    archive_h5_note();
    w->damaged = 1;
    archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot open %s", w->path, full);
    snprintf(w->first, sizeof w->first, "%s", cs_error_message());
    return -1;
  }
  int rc = CS_OK;
  if (H5Iget_type(obj) == H5I_DATASET) rc = archive_dataset_plain(obj, w->path, full);
  H5Oclose(obj);
  if (rc) {
    // the reason without the file name (the reporter names the object)
    const char *m = cs_error_message(), *colon = strstr(m, full);
    cs_error_clear();
    return archive_walk_problem(w, full, "%s", colon ? colon + strlen(full) + 1 : m);
  }
  return 0;
}

int archive_structure_check(hid_t file, const char *path, archive_guard_fn fn, void *ctx,
                            int *hostile) {
  archive_guard_walk w;
  memset(&w, 0, sizeof w);
  w.file = file, w.path = path, w.fn = fn, w.ctx = ctx;
  *hostile = 0;
  H5O_info_t root;
  int rc = CS_OK;
  if (H5Oget_info2(file, &root, H5O_INFO_BASIC) < 0 || archive_addr_add(&w.seen, root.addr) < 0) {
    rc = archive_h5_error(CS_ERR_INPUT, "%s is damaged: its root group cannot be read", path);
  } else {
    // iterative and bounded (archive_walk.c): a group nested too deep is hostile
    char deep[768];
    int e = archive_walk(file, "", path, archive_walk_link, &w, deep, sizeof deep);
    if (e == ARCHIVE_WALK_TOO_DEEP) {
      cs_error_clear();
      archive_walk_problem(&w, deep, "a group nested more than %d levels deep (a curvsweep archive "
                           "is a few levels deep; docs/SECURITY.md, \"Hostile archives: second "
                           "audit\")", ARCHIVE_WALK_MAX_DEPTH);
    }
    if (w.bad) {
      *hostile = 1;
      rc = cs_error(CS_ERR_INPUT, "%s: %s%s", path, w.first,
                    w.bad > 1 && fn ? " (and more, listed)" : "");
    } else if (e < 0 || w.damaged) {
      if (!w.damaged && !w.first[0] && cs_error_message()[0])  // the walk's own refusal
        cs_copy_str(w.first, sizeof w.first, cs_error_message());
      else if (!w.damaged) archive_h5_note();
      rc = w.first[0] ? cs_error(CS_ERR_INPUT, "%s", w.first)
                      : archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot walk its "
                                         "groups", path);
    }
  }
  archive_addr_free(&w.seen);
  return rc;
}

/* ---- values in their domain ---- */

uint64_t archive_stats_bit(size_t off) {
  for (size_t k = 0; k < ARCHIVE_N_STATS_FIELDS; k++)
    if (ARCHIVE_STATS_FIELDS[k].offset == off) return (uint64_t)1 << k;
  return 0;
}

int archive_check_token_stats(const char *path, cs_family family, const cs_cell_result *r) {
  if (r->status != CELL_DONE || !config_family_tokens(family)) return CS_OK;
  uint64_t max_attn_bit = archive_stats_bit(offsetof(geom_stats, max_attn));
  for (int l = 0; l < r->depth; l++) {
    const geom_stats *g = &r->curv[l];
    double ex[3] = {g->massive_act, g->value_drain, g->resid_peak};
    int n_nan = isnan(ex[0]) + isnan(ex[1]) + isnan(ex[2]);
    const char *bad = NULL;
    if (!(g->sink_mass >= 0 && g->sink_mass <= 1))
      bad = "sink_mass (first-token share) not in [0, 1]";
    else if (!(g->sink_headmax >= 0 && g->sink_headmax <= 1))
      bad = "sink_headmax (largest per-head first-token share) not in [0, 1]";
    else if (!(g->max_attn >= 0 && g->max_attn <= 1) && !(r->stats_absent & max_attn_bit))
      bad = "max_attn (mean largest attention weight) not in [0, 1]";
    else if (n_nan != 0 && n_nan != 3)
      bad = "some but not all of massive_act, value_drain, resid_peak";
    else if (n_nan == 0 && !(ex[0] >= 1 && isfinite(ex[0]) && ex[1] >= 0 && isfinite(ex[1]) &&
                             ex[2] >= 0 && isfinite(ex[2])))
      bad = "massive_act below 1, or value_drain or resid_peak negative or infinite";
    if (bad)
      return cs_error(CS_ERR_INPUT, "%s: damaged archive: /curvature: done cell %" PRId64
                      " (family %s) prefix %d: %s (sink_mass %g, max_attn %g, sink_headmax %g, "
                      "massive_act %g, value_drain %g, resid_peak %g)", path, r->cell_id,
                      config_family_name(family), l + 1, bad, g->sink_mass, g->max_attn,
                      g->sink_headmax, ex[0], ex[1], ex[2]);
  }
  return CS_OK;
}

int archive_check_tensor_name(const char *name) {
  size_t n = strnlen(name, ARCHIVE_TENSOR_NAME_BYTES);
  if (n == 0 || n >= ARCHIVE_TENSOR_NAME_BYTES || name[0] == '/' || name[n - 1] == '/') return -1;
  for (size_t i = 0; i < n; i++) {
    if (name[i] == '/' && name[i + 1] == '/') return -1;
    if (name[i] == '.' && (i == 0 || name[i - 1] == '/')) return -1;
  }
  return 0;
}

/* A done cell's metrics in their domain (docs/ARCHIVE.md, "Reading an
 * archive"): accuracies in [0, 1] (NaN in family mha: a regression has
 * none), a finite training loss, a wall time that is finite and not
 * negative. Anything else is damage, never reported. */
int archive_check_metrics(const char *path, cs_family family, const cs_cell_result *r) {
  if (r->status != CELL_DONE) return CS_OK;
  int none = config_family_estimation(family); /* accuracies NaN: a regression has none */
  const char *bad = none && !isnan(r->train_acc)                        ? "train_acc"
                    : none && !isnan(r->test_acc)                        ? "test_acc"
                    : !none && !(r->train_acc >= 0 && r->train_acc <= 1) ? "train_acc"
                    : !none && !(r->test_acc >= 0 && r->test_acc <= 1)   ? "test_acc"
                    : !isfinite(r->train_loss)                           ? "train_loss"
                    : !(r->wall_s >= 0 && isfinite(r->wall_s))           ? "wall_s"
                                                                         : NULL;
  if (bad)
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /cells: done cell %" PRId64 " has %s "
                    "outside its domain (train_acc %g, test_acc %g, train_loss %g, wall_s %g)",
                    path, r->cell_id, bad, r->train_acc, r->test_acc, r->train_loss, r->wall_s);
  return CS_OK;
}
