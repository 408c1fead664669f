/* fuzz_archive.c — libFuzzer harness of the archive reader fed whole files
 * (src/archive, docs/ARCHIVE.md): the input is written to a file and read
 * the ways `curvsweep info --check` (archive_check, which also reads every
 * result the way analyze and merge do when nothing is damaged), `info`
 * (archive_summary) and `analyze` (archive_read_results, /spec) read it,
 * and, when damaged, salvaged (`merge --salvage`: the archive it writes
 * must check intact).
 * Beyond sanitizer reports, each input must leave no HDF5 identifier open:
 * an error path that forgets to close one leaves the file open and ends
 * the process in HDF5's "infinite loop closing library".
 * An input that reads intact is also mutated the way a hostile archive is
 * built (docs/SECURITY.md, "Archives"; tests/hostile_archives.py): an
 * attribute stored as an array, an object replaced by a soft or external
 * link, a second hard link to the root, a dataset with external raw
 * storage, a table's extent far beyond what it stores; the mutated archive
 * must be refused by info --check, info and analyze's reader (the extent
 * of a table with committed_rows may stay, ignored), and the file external
 * storage points at must be left as it was. tests/fuzz/README.md. */
#include "curvsweep/archive.h"
#include "curvsweep/error.h"
#include "curvsweep/result.h"
#include "curvsweep/spec.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir[256], fuzz_path[300], fuzz_victim[320];
static unsigned long fuzz_count;

static void fuzz_archive_cleanup(void) {
  unlink(fuzz_path);
  unlink(fuzz_victim);
  rmdir(fuzz_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  // a directory of this process on tmpfs when there is one (every input is a file)
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(fuzz_dir, sizeof fuzz_dir, "%s/cs-fuzz-archive-XXXXXX", base);
  if (!mkdtemp(fuzz_dir)) abort();
  snprintf(fuzz_victim, sizeof fuzz_victim, "%s/victim", fuzz_dir);
  atexit(fuzz_archive_cleanup);
  archive_library_begin();  // as the command line: no HDF5 close loop at exit
  return 0;
}

static void fuzz_archive_no_open_ids(const char *after) {
  ssize_t n = H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (n != 0) {
    fprintf(stderr, "fuzz_archive: %zd HDF5 identifier(s) left open after %s\n", n, after);
    abort();
  }
}

/* The mutations of an intact archive (the file at path, changed in place):
 * which one and on what from h. 1 when the result must be refused. */
enum { FUZZ_MUTATIONS = 6 };
static int fuzz_archive_mutate(const char *path, uint64_t h) {
  static const char *const TABLES[] = {"cells", "curvature", "curves", "runs", "spec"};
  static const char *const ATTRS[][2] = {{"/", "format_version"}, {"/", "spec_name"},
                                         {"/", "spec_sha256"}, {"/", "format"},
                                         {"curvature", "committed_rows"}, {"curves", "committed_rows"}};
  const char *table = TABLES[(h >> 8) % 5], *other = TABLES[((h >> 8) + 1) % 5];
  int must_refuse = 1, done = 0;  // done: the mutation was made
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) abort();
  switch (h % FUZZ_MUTATIONS) {
    case 0: {  // an attribute of one value as an array of 2..64 (same type)
      const char *const *at = ATTRS[(h >> 8) % 6];
      hid_t obj = H5Oopen(f, at[0], H5P_DEFAULT), a = H5Aopen(obj, at[1], H5P_DEFAULT);
      hid_t t = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
      size_t ts = t >= 0 ? H5Tget_size(t) : 0;
      hsize_t n = 2 + (h >> 16) % 63;
      unsigned char *buf = calloc(n, ts ? ts : 1), one[4096];
      if (ts == 0 || ts > sizeof one || H5Aread(a, t, one) < 0) {
        if (t >= 0) H5Tclose(t);
        if (a >= 0) H5Aclose(a);
        H5Oclose(obj), free(buf);
        break;
      }
      for (hsize_t i = 0; i < n; i++) memcpy(buf + i * ts, one, ts);
      H5Aclose(a);
      H5Adelete(obj, at[1]);
      hid_t sp = H5Screate_simple(1, &n, NULL);
      a = H5Acreate2(obj, at[1], t, sp, H5P_DEFAULT, H5P_DEFAULT);
      done = a >= 0 && H5Awrite(a, t, buf) >= 0;
      H5Aclose(a), H5Sclose(sp), H5Tclose(t), H5Oclose(obj);
      free(buf);
      break;
    }
    case 1:  // a table replaced by a soft link to another
      done = H5Ldelete(f, table, H5P_DEFAULT) >= 0 &&
             H5Lcreate_soft(other, f, table, H5P_DEFAULT, H5P_DEFAULT) >= 0;
      break;
    case 2:  // a table replaced by an external link (to a file that is not there)
      done = H5Ldelete(f, table, H5P_DEFAULT) >= 0 &&
             H5Lcreate_external("absent.h5", "/x", f, table, H5P_DEFAULT, H5P_DEFAULT) >= 0;
      break;
    case 3:  // a second hard link to the root: a cycle
      done = H5Lcreate_hard(f, "/", f, (h >> 8) % 2 ? "points/up" : "loop", H5P_DEFAULT,
                            H5P_DEFAULT) >= 0;
      break;
    case 4: {  // a dataset whose data lives in another file (external raw storage)
      hsize_t n = 64, max = H5S_UNLIMITED;
      hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), sp = H5Screate_simple(1, &n, &max);
      H5Pset_external(dcpl, fuzz_victim, 0, H5F_UNLIMITED);
      hid_t ds = H5Dcreate2(f, (h >> 8) % 2 ? "points/extra" : "extra", H5T_NATIVE_INT64, sp,
                            H5P_DEFAULT, dcpl, H5P_DEFAULT);
      done = ds >= 0;
      if (ds >= 0) H5Dclose(ds);
      H5Sclose(sp), H5Pclose(dcpl);
      break;
    }
    default: {  // a table declaring far more rows than it stores
      hid_t ds = H5Dopen2(f, (h >> 8) % 2 ? "cells" : "curvature", H5P_DEFAULT);
      hid_t sp = ds >= 0 ? H5Dget_space(ds) : H5I_INVALID_HID;
      hsize_t n = 0;
      H5Sget_simple_extent_dims(sp, &n, NULL);
      n = (n + 1) << 20;
      done = sp >= 0 && H5Dset_extent(ds, &n) >= 0;
      // /curvature rows past committed_rows belong to an interrupted write: ignored
      must_refuse = (h >> 8) % 2;
      if (sp >= 0) H5Sclose(sp);
      if (ds >= 0) H5Dclose(ds);
    }
  }
  if (H5Fclose(f) < 0) abort();
  return must_refuse && done;
}

/* Every reader on the mutated copy at path: refused when it must be, the
 * victim file untouched, no identifier left open. */
static void fuzz_archive_hostile(const char *path, uint64_t h) {
  static const char VICTIM[] = "victim: external storage must never be written\n";
  int must_refuse = fuzz_archive_mutate(path, h);
  FILE *v = fopen(fuzz_victim, "wb");  // after the mutation (which may fill it)
  if (!v || fwrite(VICTIM, 1, sizeof VICTIM, v) != sizeof VICTIM || fclose(v) != 0) abort();
  int64_t damaged = 0;
  int rc = archive_check(path, NULL, NULL, &damaged);
  cs_error_clear();
  cs_archive_summary sum;
  int rs = archive_summary(path, &sum);
  cs_error_clear();
  cs_cell_result *res = NULL;
  int64_t n = 0;
  int rr = archive_read_results(path, &res, &n);
  cs_error_clear();
  if (rr == CS_OK) {
    for (int64_t i = 0; i < n; i++) result_free(&res[i]);
    free(res);
  }
  fuzz_archive_no_open_ids("the readers of a mutated archive");
  if (must_refuse && ((rc == CS_OK && damaged == 0) || rs == CS_OK || rr == CS_OK)) {
    fprintf(stderr, "fuzz_archive: mutation %d accepted (check %d/%lld, summary %d, read %d)\n",
            (int)(h % FUZZ_MUTATIONS), rc, (long long)damaged, rs, rr);
    abort();
  }
  char back[sizeof VICTIM] = "";
  v = fopen(fuzz_victim, "rb");
  if (!v || fread(back, 1, sizeof back, v) != sizeof back || fclose(v) != 0 ||
      memcmp(back, VICTIM, sizeof VICTIM) != 0) {
    fprintf(stderr, "fuzz_archive: a reader wrote into a file external storage points at\n");
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // a new file (new inode) per input: HDF5 1.10 may keep a damaged file
  // open internally after H5Fclose, and would match a rewritten file of the
  // same inode to it
  if (fuzz_path[0]) unlink(fuzz_path);
  snprintf(fuzz_path, sizeof fuzz_path, "%s/a%lu.h5", fuzz_dir, fuzz_count++);
  FILE *f = fopen(fuzz_path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
  int64_t damaged = 0;
  if (archive_check(fuzz_path, NULL, NULL, &damaged) != CS_OK) cs_error_clear();
  fuzz_archive_no_open_ids("archive_check");
  cs_archive_summary sum;
  if (archive_summary(fuzz_path, &sum) != CS_OK) cs_error_clear();
  fuzz_archive_no_open_ids("archive_summary");
  if (damaged > 0) {  // otherwise archive_check has read every result already
    cs_cell_result *res = NULL;
    int64_t n = 0;
    if (archive_read_results(fuzz_path, &res, &n) == CS_OK) {
      for (int64_t i = 0; i < n; i++) result_free(&res[i]);
      free(res);
    } else {
      cs_error_clear();
    }
    fuzz_archive_no_open_ids("archive_read_results");
    // merge --salvage: what it writes must itself be intact
    char out[320];
    snprintf(out, sizeof out, "%s/salvaged.h5", fuzz_dir);
    cs_archive_salvage_report rep;
    if (archive_salvage(out, fuzz_path, 1, NULL, NULL, &rep) == CS_OK) {
      int64_t bad = 0;
      if (archive_check(out, NULL, NULL, &bad) != CS_OK || bad != 0) {
        fprintf(stderr, "fuzz_archive: the salvaged archive is damaged: %s\n", cs_error_message());
        abort();
      }
    } else {
      cs_error_clear();
    }
    unlink(out);
    fuzz_archive_no_open_ids("archive_salvage");
  }
  if (damaged == 0 && archive_summary(fuzz_path, &sum) == CS_OK) {
    // an intact archive: mutated as a hostile one is built (a copy, so the
    // spec read below still reads the input)
    char hostile[320];  // a new file per input (see above)
    snprintf(hostile, sizeof hostile, "%s/h%lu.h5", fuzz_dir, fuzz_count);
    FILE *h = fopen(hostile, "wb");
    if (!h || fwrite(data, 1, size, h) != size || fclose(h) != 0) abort();
    uint64_t hash = 1469598103934665603ull;  // FNV-1a of the input: the mutation
    for (size_t i = 0; i < size; i++) hash = (hash ^ data[i]) * 1099511628211ull;
    fuzz_archive_hostile(hostile, hash);
    unlink(hostile);
  } else {
    cs_error_clear();
  }
  char *text = NULL;
  if (archive_read_spec(fuzz_path, &text) == CS_OK) {
    cs_spec *spec = NULL;
    if (spec_load_string(text, fuzz_path, &spec) == CS_OK) spec_free(spec);
    else cs_error_clear();
    free(text);
  } else {
    cs_error_clear();
  }
  fuzz_archive_no_open_ids("archive_read_spec");
  return 0;
}
