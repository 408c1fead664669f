/* sweep_spec.c — one spec on every rank of a sweep: rank 0 reads the file,
 * every other rank parses the same bytes (docs/SWEEP.md). */
#include "curvsweep/sweep.h"

#include "curvsweep/error.h"

#include <stdlib.h>
#include <string.h>

int sweep_load_spec(MPI_Comm comm, const char *path, const spec_load_options *opt,
                    cs_spec **spec) {
  *spec = NULL;
  int rank;
  CS_MPI(MPI_Comm_rank(comm, &rank));
  // pass 1: rank 0 reads and validates; everyone learns its code (an
  // invalid spec stops every rank with the same code, the message on rank 0)
  int rc = CS_OK;
  long len = 0;
  if (rank == 0) {
    rc = spec_load_file_opts(path, opt, spec);
    if (!rc) len = (long)strlen(spec_text(*spec));
  }
  long head[2] = {rc, len};
  int brc = la_mpi_check(MPI_Bcast(head, 2, MPI_LONG, 0, comm), "MPI_Bcast of the spec");
  if (brc)
    rc = brc;
  else if (head[0] != CS_OK && rank != 0)
    rc = cs_error((int)head[0], "rank 0 could not read the spec %s", path);
  // pass 2: the text itself (with any overrides written in), parsed again
  // on the other ranks
  char *text = NULL;
  if (!rc) rc = cs_calloc_bytes((void **)&text, (size_t)head[1] + 1, 1);
  if (!rc && rank == 0) memcpy(text, spec_text(*spec), (size_t)head[1] + 1);
  if (!rc)
    rc = la_mpi_check(MPI_Bcast(text, (int)head[1] + 1, MPI_CHAR, 0, comm), "MPI_Bcast of the spec");
  if (!rc && rank != 0) rc = spec_load_string(text, path, spec);
  free(text);
  if (rc && rank == 0) { /* the other ranks never got a spec of their own */
    spec_free(*spec);
    *spec = NULL;
  }
  return rc;
}
