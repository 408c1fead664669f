/* archive.c — the HDF5 result archive opened for writing: the one entry
 * point above every other file of src/archive (their layers are listed in
 * archive_internal.h). A resume first grows an archive of a spec this one
 * extends (archive_grow.c; docs/ARCHIVE.md, "Growing a sweep"), then the
 * archive is created, overwritten or resumed (archive_open.c). Serial HDF5,
 * used by rank 0 only; results go in through archive_commit.c. */
#include "archive_internal.h"

int archive_open_write(const char *path, const cs_spec *spec, cs_archive_mode mode,
                       const unsigned char *mask, cs_archive **out) {
  ARCHIVE_QUIET;
  *out = NULL;
  if (mode == ARCHIVE_RESUME && path && spec) CS_CHECK(archive_grow_if_needed(path, spec, mask));
  return archive_writer_open(path, spec, mode, mask, out);
}
