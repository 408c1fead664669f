/* fuzz_archive.c — libFuzzer harness of the archive reader fed whole files
 * (src/archive, docs/ARCHIVE.md): the input is written to a file and read
 * the ways `curvsweep info --check` (archive_check, which also reads every
 * result the way analyze and merge do when nothing is damaged), `info`
 * (archive_summary) and `analyze` (archive_read_results, /spec) read it,
 * and, when damaged, salvaged (`merge --salvage`: the archive it writes
 * must check intact).
 * Beyond sanitizer reports, each input must leave no HDF5 identifier open:
 * an error path that forgets to close one leaves the file open and ends
 * the process in HDF5's "infinite loop closing library". tests/fuzz/README.md. */
#include "curvsweep/archive.h"
#include "curvsweep/error.h"
#include "curvsweep/result.h"
#include "curvsweep/spec.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir[256], fuzz_path[300];
static unsigned long fuzz_count;

static void fuzz_archive_cleanup(void) {
  unlink(fuzz_path);
  rmdir(fuzz_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  // a directory of this process on tmpfs when there is one (every input is a file)
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(fuzz_dir, sizeof fuzz_dir, "%s/cs-fuzz-archive-XXXXXX", base);
  if (!mkdtemp(fuzz_dir)) abort();
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
