/* archive_spec.c — the /spec dataset of an archive: written chunked with
 * Fletcher32 (a scalar dataset cannot be chunked, so it is a 1-D dataset of
 * one fixed-length string), read back from either layout, and checked
 * against the root attribute spec_sha256 whenever an archive is opened,
 * when the archive's identity (the canonical sha256 of the spec it holds,
 * docs/ARCHIVE.md "Identity") is computed too; and the refusal of a spec
 * that is not the archive's, naming the keys that differ. */
#include "archive_internal.h"

#include "curvsweep/error.h"
#include "curvsweep/spec.h"

#include <stdlib.h>
#include <string.h>

int archive_spec_write(hid_t file, const char *text, const char *path) {
  size_t tlen = strlen(text);
  hsize_t one = 1;
  hid_t t = H5Tcopy(H5T_C_S1), space = H5Screate_simple(1, &one, NULL), dcpl = archive_dcpl(1, &one, 1);
  hid_t ds = H5I_INVALID_HID;
  int rc = CS_OK;
  if (t < 0 || H5Tset_size(t, tlen ? tlen : 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0 ||
      space < 0 || dcpl < 0 ||
      (ds = H5Dcreate2(file, "spec", t, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0 ||
      H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, tlen ? text : "") < 0)
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot write /spec", path);
  if (ds >= 0) H5Dclose(ds);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (space >= 0) H5Sclose(space);
  if (t >= 0) H5Tclose(t);
  return rc;
}

/* Read one string element (scalar or the one element of a 1-D dataset). */
static int archive_spec_read_ds(hid_t ds, const char *path, char **text) {
  hid_t ft = H5Dget_type(ds), space = H5Dget_space(ds), mt = H5I_INVALID_HID;
  int rc = CS_OK;
  int nd = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
  hssize_t npoints = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
  if (ft < 0 || space < 0) {
    rc = archive_h5_error(CS_ERR_INPUT, "archive %s: cannot read /spec", path);
  } else if (H5Tget_class(ft) != H5T_STRING) {
    rc = cs_error(CS_ERR_INPUT, "archive %s: /spec is not a string: the archive is damaged", path);
  } else if (nd > 1 || npoints != 1) {
    rc = cs_error(CS_ERR_INPUT, "archive %s: /spec holds %lld strings, not one: the archive is "
                  "damaged", path, (long long)npoints);
  } else if (H5Tis_variable_str(ft) <= 0 && H5Tget_size(ft) > ARCHIVE_SPEC_MAX_BYTES) {
    // bounded before anything is allocated (docs/SECURITY.md, "Archives")
    rc = cs_error(CS_ERR_INPUT, "archive %s: /spec is a string of %zu bytes, longer than any spec "
                  "(at most %zu): the archive is damaged or hostile", path, H5Tget_size(ft),
                  ARCHIVE_SPEC_MAX_BYTES);
  } else if (H5Tis_variable_str(ft) > 0) {
    char *s = NULL;
    mt = H5Tcopy(H5T_C_S1);
    if (mt < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 ||
        H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &s) < 0 || !s) {
      rc = archive_h5_error(CS_ERR_INPUT, "archive %s: cannot read /spec", path);
    } else if (strlen(s) > ARCHIVE_SPEC_MAX_BYTES) {
      rc = cs_error(CS_ERR_INPUT, "archive %s: /spec is longer than any spec (at most %zu bytes)",
                    path, ARCHIVE_SPEC_MAX_BYTES);
    } else {
      *text = strdup(s);
      if (!*text) rc = cs_error(CS_ERR_NOMEM, "out of memory reading /spec of %s", path);
    }
    if (s) H5free_memory(s);
  } else {
    size_t n = H5Tget_size(ft);
    rc = cs_calloc_bytes((void **)text, n + 1, 1);
    mt = H5Tcopy(H5T_C_S1);
    if (!rc && (mt < 0 || H5Tset_size(mt, n) < 0 || H5Tset_strpad(mt, H5T_STR_NULLPAD) < 0 ||
                H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, *text) < 0))
      rc = archive_h5_error(CS_ERR_INPUT, "archive %s: cannot read /spec (damaged or failed "
                            "checksum)", path);
  }
  if (rc) {
    free(*text);
    *text = NULL;
  }
  if (mt >= 0) H5Tclose(mt);
  if (space >= 0) H5Sclose(space);
  if (ft >= 0) H5Tclose(ft);
  return rc;
}

int archive_spec_read(hid_t file, const char *path, char **text) {
  *text = NULL;
  htri_t there = H5Lexists(file, "spec", H5P_DEFAULT);
  if (there < 0) return archive_h5_error(CS_ERR_INPUT, "archive %s: cannot look up /spec", path);
  if (!there) return cs_error(CS_ERR_INPUT, "archive %s: damaged archive: no /spec", path);
  hid_t ds;
  CS_CHECK(archive_dataset_open(file, "spec", path, &ds));
  int rc = archive_spec_read_ds(ds, path, text);
  H5Dclose(ds);
  return rc;
}

int archive_spec_verify(hid_t file, const char *path, const char *sha, char identity[65]) {
  char *text = NULL, got[65];
  CS_CHECK(archive_spec_read(file, path, &text));
  spec_sha256_hex(text, strlen(text), got);
  int rc = CS_OK;
  if (strcmp(got, sha) != 0)
    rc = cs_error(CS_ERR_INPUT, "archive %s: /spec text does not match its spec_sha256 attribute: "
                  "the archive is damaged (the text hashes to %.12s…, the attribute says %.12s…)",
                  path, got, sha);
  // the identity: the canonical resolved spec, by this build (older
  // archives have no spec_canonical_sha256; docs/ARCHIVE.md, "Identity")
  cs_spec *spec = NULL;
  if (!rc && spec_load_string(text, path, &spec) != CS_OK)
    rc = cs_error_context(CS_ERR_INPUT, "archive %s: its /spec does not load: ", path);
  if (!rc) cs_copy_str(identity, 65, spec_canonical_sha256(spec));
  free(text);
  spec_free(spec);
  return rc;
}

/* The keys that differ, "[model] width: 16 → 32; seed: [grid] 0..3 →
 * [grid] 0..1", the refused ones only (grows 0). */
typedef struct {
  char text[2048];
  size_t used;
} archive_diff;

static void archive_diff_add(const char *key, const char *old_section, const char *old_values,
                             const char *new_section, const char *new_values, int grows,
                             void *ctx) {
  archive_diff *d = ctx;
  if (grows || d->used >= sizeof d->text) return;
  size_t left = sizeof d->text - d->used;
  const char *sep = d->used ? "; " : "";
  int n = !strcmp(old_section, new_section)
              ? snprintf(d->text + d->used, left, "%s[%s] %s: %.200s → %.200s", sep, old_section,
                         key, old_values, new_values)
              : snprintf(d->text + d->used, left, "%s%s: [%s] %.200s → [%s] %.200s", sep, key,
                         old_section, old_values, new_section, new_values);
  d->used = n < 0 ? d->used : d->used + (size_t)n < sizeof d->text ? d->used + (size_t)n
                                                                   : sizeof d->text;
}

int archive_identity_refusal(const char *path, const cs_spec *old_spec, const cs_spec *spec) {
  archive_diff d = {.used = 0};
  d.text[0] = '\0';
  cs_spec_relation rel;
  CS_CHECK(spec_compare(old_spec, spec, archive_diff_add, &d, &rel));
  if (rel == SPEC_GROWS)
    return cs_error(CS_ERR_INPUT, "%s holds a sweep that %s grows (more [grid] values): resume it "
                    "with curvsweep run, which keeps its results", path, spec_source(spec));
  return cs_error(CS_ERR_INPUT, "%s was written by a different spec: %s (archive → %s); only "
                  "more [grid] values extend an archive: use a new -o path, or --overwrite to "
                  "discard its results", path, d.text[0] ? d.text : "the canonical specs differ",
                  spec_source(spec));
}
