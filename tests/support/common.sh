# shellcheck shell=bash
# tests/support/common.sh — sourced first by the end-to-end shell tests: the
# binary and source tree (set by ctest, tests/tests.cmake), a scratch
# directory that is the working directory and is removed at exit (with any
# process still running from it), MPI allowed as root with one BLAS thread,
# `mpi NP ...`, `cmp_archives A B` (tests/archive_compare.py), `wait_done`
# (wait.sh), and the tally: `ok`, `bad MESSAGE`, `finish` (prints the counts,
# and its status is the test's).
set -u
bin=${CS_BIN:?} src=${CS_SOURCE_DIR:?}
tmp=$(mktemp -d); trap 'pkill -9 -f "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
source "$src/tests/support/wait.sh"
mpi() { mpiexec --oversubscribe --bind-to none -np "$@"; }
cmp_archives() { /usr/bin/python3 "$src/tests/archive_compare.py" "$@"; }
fails=0 passes=0
ok() { passes=$((passes+1)); }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
finish() { echo "$passes passed, $fails failed${1:+ ($1)}"; [[ $fails -eq 0 ]]; }
