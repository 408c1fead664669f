/* archive_check.c — `curvsweep info --check`: read every object of an
 * archive (root identity, /spec, every chunk of /cells, /curvature,
 * /curves and /runs, every /points, /params and /fields dataset) and name each one
 * that cannot be read (docs/ARCHIVE.md, "Checking an archive"). Damage is
 * reported through a callback, never printed here. Also the end of the
 * HDF5 library after a damaged file (archive_library_end). */
#include "archive_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  cs_archive_check_fn fn;
  void *ctx;
  int64_t damaged;
} archive_check_state;

/* One damaged object: its name and the current error's reason. */
static void archive_check_report(archive_check_state *c, const char *object) {
  c->damaged++;
  if (c->fn) c->fn(object, cs_error_message(), c->ctx);
  cs_error_clear();
}

/* Rows [start, start + k) along dimension 0 (all of the others) into buf. */
static int archive_check_read_rows(hid_t ds, hid_t mt, int nd, const hsize_t *dims, hsize_t start,
                                   hsize_t k, void *buf) {
  hsize_t off[2] = {start, 0}, cnt[2] = {k, nd > 1 ? dims[1] : 1};
  hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(nd, cnt, NULL);
  int rc = fs < 0 || ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) < 0 ||
           H5Dread(ds, mt, ms, fs, H5P_DEFAULT, buf) < 0 ? -1 : 0;
  if (rc) archive_h5_note();
  archive_h5_close_id(&ms, H5Sclose);
  archive_h5_close_id(&fs, H5Sclose);
  return rc;
}

/* Read a dataset whole, a chunk of rows at a time: a 1-D table names the
 * damaged rows ("/cells rows 0..127"), any other dataset itself. */
static void archive_check_dataset(archive_check_state *c, hid_t loc, const char *name,
                                  const char *full, const char *path) {
  char obj[512];
  hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT), ft = H5I_INVALID_HID, mt = H5I_INVALID_HID;
  hid_t space = H5I_INVALID_HID, dcpl = H5I_INVALID_HID;
  int nd = -1;
  hsize_t dims[2] = {0, 0}, chunk[2] = {1, 1};
  if (ds >= 0) ft = H5Dget_type(ds);
  if (ft >= 0) mt = H5Tget_native_type(ft, H5T_DIR_DEFAULT);
  if (ds >= 0) space = H5Dget_space(ds);
  if (space >= 0) nd = H5Sget_simple_extent_ndims(space);
  if (nd >= 1 && nd <= 2) H5Sget_simple_extent_dims(space, dims, NULL);
  if (ds >= 0) dcpl = H5Dget_create_plist(ds);
  if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED) H5Pget_chunk(dcpl, 2, chunk);
  if (ds < 0 || mt < 0 || nd < 0 || nd > 2 || dcpl < 0) {
    archive_h5_error(CS_ERR_INPUT, "%s: cannot open %s", path, full);
    archive_check_report(c, full);
  } else if (nd == 0) {  // a scalar (the legacy /spec)
    void *buf = NULL;
    if (cs_calloc_bytes(&buf, 1, H5Tget_size(mt)) == CS_OK &&
        H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
      archive_h5_error(CS_ERR_INPUT, "%s: cannot read %s", path, full);
      archive_check_report(c, full);
    }
    free(buf);
  } else {
    size_t row_bytes = H5Tget_size(mt) * (nd > 1 ? (size_t)dims[1] : 1);
    hsize_t step = nd == 1 && chunk[0] > 0 ? chunk[0] : (dims[0] ? dims[0] : 1);
    void *buf = NULL;
    int bad = cs_calloc_bytes(&buf, step, row_bytes ? row_bytes : 1);
    for (hsize_t s = 0; !bad && s < dims[0]; s += step) {
      hsize_t k = dims[0] - s < step ? dims[0] - s : step;
      if (archive_check_read_rows(ds, mt, nd, dims, s, k, buf) == 0) continue;
      if (nd == 1) snprintf(obj, sizeof obj, "%s rows %llu..%llu", full, (unsigned long long)s,
                            (unsigned long long)(s + k - 1));
      else snprintf(obj, sizeof obj, "%s", full);
      archive_h5_error(CS_ERR_INPUT, "%s: cannot read %s", path, obj);
      archive_check_report(c, obj);
      if (nd > 1) break;
    }
    free(buf);
  }
  archive_h5_close_id(&dcpl, H5Pclose);
  archive_h5_close_id(&space, H5Sclose);
  archive_h5_close_id(&mt, H5Tclose);
  archive_h5_close_id(&ft, H5Tclose);
  archive_h5_close_id(&ds, H5Dclose);
}

/* Every member of a group, recursively: datasets read, groups entered. */
static void archive_check_group(archive_check_state *c, hid_t file, const char *full,
                                const char *path, int depth) {
  hid_t g = H5Gopen2(file, full, H5P_DEFAULT);
  H5G_info_t info;
  if (g < 0 || H5Gget_info(g, &info) < 0) {
    archive_h5_error(CS_ERR_INPUT, "%s: cannot open the group %s", path, full);
    archive_check_report(c, full);
    archive_h5_close_id(&g, H5Gclose);
    return;
  }
  for (hsize_t i = 0; i < info.nlinks; i++) {
    char name[256], child[768];
    if (H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                           H5P_DEFAULT) < 0) {
      archive_h5_error(CS_ERR_INPUT, "%s: cannot list member %llu of %s", path,
                       (unsigned long long)i, full);
      archive_check_report(c, full);
      break;
    }
    snprintf(child, sizeof child, "%s/%s", full, name);
    H5O_info_t oi;
    if (H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT) < 0) {
      archive_h5_error(CS_ERR_INPUT, "%s: cannot open %s", path, child);
      archive_check_report(c, child);
    } else if (oi.type == H5O_TYPE_GROUP && depth < 8) {
      archive_check_group(c, file, child, path, depth + 1);
    } else if (oi.type == H5O_TYPE_DATASET) {
      archive_check_dataset(c, g, name, child, path);
    }
  }
  H5Gclose(g);
}

/* Everything above read, the archive as a whole must also read back the way
 * info, analyze and merge read it (statuses, rows per cell, groups). */
static void archive_check_whole(archive_check_state *c, const char *path) {
  archive_reader rd;
  cs_cell_result *res = NULL;
  int64_t n = 0;
  if (archive_reader_open(path, &rd) != CS_OK) {
    archive_check_report(c, "/cells");
    return;
  }
  if (archive_read_results_rd(&rd, &res, &n) != CS_OK) archive_check_report(c, "results");
  archive_results_free(res, n);
  archive_reader_close(&rd);
}

static int archive_check_impl(const char *path, cs_archive_check_fn fn, void *ctx,
                              int64_t *damaged) {
  archive_check_state c = {fn, ctx, 0};
  *damaged = 0;
  hid_t file;
  archive_meta meta;
  archive_probe_class cls;
  int rc = archive_probe(path, H5F_ACC_RDONLY, &file, &meta, &cls);
  if (rc) {
    if (!archive_file_exists(path)) return rc;
    // ours or not, damaged: name what the identity check saw, then read what can be read
    archive_check_report(&c, "/ (root attributes, /spec)");
    file = archive_h5_open(path, H5F_ACC_RDONLY);
    if (file < 0) {
      *damaged = c.damaged;
      return CS_OK;
    }
  }
  static const char *const tables[] = {"spec", "cells", "curvature", "curves", "runs"};
  for (size_t k = 0; k < sizeof tables / sizeof *tables; k++) {
    char full[64];
    snprintf(full, sizeof full, "/%s", tables[k]);
    archive_check_dataset(&c, file, tables[k], full, path);
  }
  const char *const *cell_groups = ARCHIVE_CELL_GROUPS;
  for (int k = -1; k < ARCHIVE_N_CELL_GROUPS; k++) { /* /points, then the per-cell groups */
    const char *top = k < 0 ? "points" : cell_groups[k];
    htri_t e = H5Lexists(file, top, H5P_DEFAULT);
    char full[64];
    snprintf(full, sizeof full, "/%s", top);
    if (e < 0) {
      archive_h5_error(CS_ERR_INPUT, "%s: cannot look up %s", path, full);
      archive_check_report(&c, full);
    } else if (e > 0) {
      archive_check_group(&c, file, full, path, 0);
    }
  }
  H5Fclose(file);
  if (c.damaged == 0) archive_check_whole(&c, path);
  *damaged = c.damaged;
  return CS_OK;
}

int archive_check(const char *path, cs_archive_check_fn fn, void *ctx, int64_t *damaged) {
  ARCHIVE_QUIETLY(archive_check_impl(path, fn, ctx, damaged));
}

/* HDF5 1.10.8 keeps a file open internally, with no identifier left, after
 * it failed to load one of its object headers (a failed checksum), and
 * leaks the cache entries it was building (HDF5 issues #4586, #6386, PR
 * #4477); its own close at exit then loops over them and prints "HDF5:
 * infinite loop closing library". The library's atexit close is replaced
 * by archive_library_end: with an identifier still open it closes the
 * library (which flushes that file, as at exit before); with none there is
 * nothing left to flush and the process exit releases the rest
 * (docs/DECISIONS.md, "Salvage"). */
void archive_library_begin(void) {
  H5dont_atexit();
}

void archive_library_end(void) {
  hid_t id;
  if (H5Fget_obj_ids((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL, 1, &id) > 0) H5close();
}
