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
           H5Dread(ds, mt, ms, fs, archive_table_xfer(), buf) < 0 ? -1 : 0;
  if (rc) archive_h5_note();
  archive_h5_close_id(&ms, H5Sclose);
  archive_h5_close_id(&fs, H5Sclose);
  return rc;
}

/* Read a dataset whole, a chunk of rows at a time: a 1-D table names the
 * damaged rows ("/cells rows 0..127"), any other dataset itself. Opened as
 * every reader opens it (plain objects only), its buffer taken from the
 * budget and a 1-D table's rows checked to be stored before they are read
 * (docs/SECURITY.md, "Archives"). */
static void archive_check_dataset(archive_check_state *c, hid_t loc, const char *name,
                                  const char *full, const char *path) {
  char obj[512];
  hid_t ds = H5I_INVALID_HID, ft = H5I_INVALID_HID, mt = H5I_INVALID_HID;
  hid_t space = H5I_INVALID_HID, dcpl = H5I_INVALID_HID;
  int nd = -1;
  hsize_t dims[2] = {0, 0}, chunk[2] = {1, 1};
  if (archive_dataset_open(loc, name, path, &ds) != CS_OK) {
    archive_check_report(c, full);
    return;
  }
  ft = H5Dget_type(ds);
  if (ft >= 0) mt = H5Tget_native_type(ft, H5T_DIR_DEFAULT);
  space = H5Dget_space(ds);
  if (space >= 0) nd = H5Sget_simple_extent_ndims(space);
  if (nd >= 1 && nd <= 2) H5Sget_simple_extent_dims(space, dims, NULL);
  dcpl = H5Dget_create_plist(ds);
  if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED) H5Pget_chunk(dcpl, 2, chunk);
  size_t row_bytes = mt >= 0 ? H5Tget_size(mt) * (nd > 1 ? (size_t)dims[1] : 1) : 0;
  hsize_t step = nd == 1 && chunk[0] > 0 ? chunk[0] : (dims[0] ? dims[0] : 1);
  if (mt < 0 || nd < 0 || nd > 2 || dcpl < 0) {
    archive_h5_error(CS_ERR_INPUT, "%s: cannot open %s", path, full);
    archive_check_report(c, full);
  } else if ((nd == 1 && archive_table_check_stored(ds, dims[0], path, full + 1) != CS_OK) ||
             (nd == 2 && dims[0] * dims[1] > 0 &&
              archive_dataset_check_stored_bytes(ds, path, full) != CS_OK) ||
             archive_budget_take(nd == 0 ? 1 : step, row_bytes ? row_bytes : 1, path, full) != CS_OK) {
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

/* Every member of a group, at any depth: datasets read. The walk
 * (archive_walk.c) enters each group once (a cycle of hard links is walked
 * once) and no deeper than ARCHIVE_WALK_MAX_DEPTH, and a link that is not
 * a hard link is damage, never followed. */
typedef struct {
  archive_check_state *c;
  const char *top, *path;
} archive_check_walk;

static int archive_check_link(hid_t g, const char *name, const char *rel, const H5L_info_t *li,
                              void *ctx) {
  archive_check_walk *w = ctx;
  char child[768];
  snprintf(child, sizeof child, "%s/%s", w->top, rel);
  if (li->type != H5L_TYPE_HARD) {
    cs_error(CS_ERR_INPUT, "%s: %s is not a hard link: only plain objects are read "
             "(docs/SECURITY.md, \"Archives\")", w->path, child);
    archive_check_report(w->c, child);
    return 0;
  }
  H5O_info_t oi;
  if (H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
    archive_h5_error(CS_ERR_INPUT, "%s: cannot open %s", w->path, child);
    archive_check_report(w->c, child);
  } else if (oi.type == H5O_TYPE_DATASET) {
    archive_check_dataset(w->c, g, name, child, w->path);
  }
  return 0;
}

static void archive_check_group(archive_check_state *c, hid_t file, const char *full,
                                const char *path) {
  hid_t g;
  if (archive_group_open(file, full + 1, path, &g) != CS_OK) {
    archive_check_report(c, full);
    return;
  }
  archive_check_walk w = {c, full, path};
  char deep[768];
  int e = archive_walk(g, full, path, archive_check_link, &w, deep, sizeof deep);
  if (e == ARCHIVE_WALK_TOO_DEEP) archive_check_report(c, deep);
  else if (e < 0) archive_check_report(c, full);
  H5Gclose(g);
}

/* archive_structure_check: one object that is not a plain object. */
static void archive_check_guard_line(const char *object, const char *reason, void *ctx) {
  archive_check_state *c = ctx;
  c->damaged++;
  if (c->fn) c->fn(object, reason, c->ctx);
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

int archive_check(const char *path, cs_archive_check_fn fn, void *ctx,
                  int64_t *damaged){
  ARCHIVE_QUIET;
  archive_check_state c = {fn, ctx, 0};
  *damaged = 0;
  hid_t file;
  archive_meta meta;
  archive_probe_class cls;
  int rc = archive_probe(path, H5F_ACC_RDONLY, &file, &meta, &cls);
  if (rc && cls == ARCHIVE_PROBE_HOSTILE) {
    // not plain objects: each one named; nothing else is read
    cs_error_clear();
    int hostile = 0;
    file = archive_h5_open(path, H5F_ACC_RDONLY);
    if (file >= 0 && archive_structure_check(file, path, archive_check_guard_line, &c, &hostile) &&
        !hostile)
      archive_check_report(&c, "/");
    archive_h5_close_id(&file, archive_h5_fclose);
    *damaged = c.damaged;
    return CS_OK;
  }
  if (rc) {
    if (!cs_file_exists(path) || cls == ARCHIVE_PROBE_BUSY || cls == ARCHIVE_PROBE_NOT_FILE) return rc;
    // ours or not, damaged: name what the identity check saw, then read what can be read
    archive_check_report(&c, "/ (root attributes, /spec)");
    file = archive_h5_open(path, H5F_ACC_RDONLY);
    if (file < 0) {
      *damaged = c.damaged;
      return CS_OK;
    }
  }
  // /spec, /cells, the per-cell tables at the root, /runs; then the groups:
  // those of per-cell tables (/points), and the per-cell groups
  int64_t version = meta.version, stated;
  if (rc) version = archive_attr_read_i64(file, "format_version", &stated, NULL) == 0
                        ? stated : ARCHIVE_FORMAT_VERSION;  // unreadable: look for every table
  const char *tables[2 + ARCHIVE_N_CELL_TABLES + 1], *groups[ARCHIVE_N_CELL_TABLES + ARCHIVE_N_CELL_GROUPS];
  int n_tables = 0, n_groups = 0;
  tables[n_tables++] = "spec", tables[n_tables++] = "cells";
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    if (T->group) groups[n_groups++] = T->group;  // looked for whatever the version: 2, 3 have /points groups
    else if (archive_cell_table_in(T, (int)version)) tables[n_tables++] = T->name;
  }
  tables[n_tables++] = "runs";
  for (int k = 0; k < ARCHIVE_N_CELL_GROUPS; k++) groups[n_groups++] = ARCHIVE_CELL_GROUPS[k];
  for (int k = 0; k < n_tables; k++) {
    char full[64];
    snprintf(full, sizeof full, "/%s", tables[k]);
    archive_check_dataset(&c, file, tables[k], full, path);
  }
  for (int k = 0; k < n_groups; k++) {
    htri_t e = H5Lexists(file, groups[k], H5P_DEFAULT);
    char full[64];
    snprintf(full, sizeof full, "/%s", groups[k]);
    if (e < 0) {
      archive_h5_error(CS_ERR_INPUT, "%s: cannot look up %s", path, full);
      archive_check_report(&c, full);
    } else if (e > 0) {
      archive_check_group(&c, file, full, path);
    }
  }
  archive_h5_fclose(file);
  if (c.damaged == 0) archive_check_whole(&c, path);
  *damaged = c.damaged;
  return CS_OK;
}


/* HDF5 1.10.8 keeps a file open internally, with no identifier left, after
 * it failed to load one of its object headers (a failed checksum), and
 * leaks the cache entries it was building (HDF5 issues #4586, #6386, PR
 * #4477); its own close at exit then loops over them and prints "HDF5:
 * infinite loop closing library". The library's atexit close is replaced
 * by archive_library_end: with an identifier still open it closes the
 * library (which flushes that file, as at exit before); with none there is
 * nothing left to flush and the process exit releases the rest
 * (docs/DECISIONS.md, "HDF5 at exit after a damaged file"). */
void archive_library_begin(void) {
  H5dont_atexit();
}

void archive_library_end(void) {
  hid_t id;
  if (H5Fget_obj_ids((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL, 1, &id) > 0) H5close();
}
