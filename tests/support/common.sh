# shellcheck shell=bash
# tests/support/common.sh — sourced first by the end-to-end shell tests: the
# binary and source tree (set by ctest, tests/tests.cmake), a scratch
# directory that is the working directory and is removed at exit (with any
# process still running from it), MPI allowed as root with one BLAS thread,
# `mpi NP ...`, `cmp_archives A B` (tests/archive_compare.py), `wait_done`
# (wait.sh), the tally: `ok`, `bad MESSAGE`, `finish` (prints the counts,
# and its status is the test's), `check NAME WANT GOT [PATTERN FILE]` (an
# exit status and, optionally, a line of FILE matching PATTERN), and
# `on_exit_extra`, which a test may redefine to clean up more at exit (it
# runs before the scratch directory is removed). A test that needs a short
# scratch path (unix sockets live under it) sets tmp_template before
# sourcing this file.
set -u
bin=${CS_BIN:?} src=${CS_SOURCE_DIR:?}
on_exit_extra() { :; }
tmp=$(mktemp -d "${tmp_template:-${TMPDIR:-/tmp}/tmp.XXXXXXXXXX}"); trap 'on_exit_extra; pkill -9 -f "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
source "$src/tests/support/wait.sh"
mpi() { mpiexec --oversubscribe --bind-to none -np "$@"; }
cmp_archives() { /usr/bin/python3 "$src/tests/archive_compare.py" "$@"; }
fails=0 passes=0
ok() { passes=$((passes+1)); }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
finish() { echo "$passes passed, $fails failed${1:+ ($1)}"; [[ $fails -eq 0 ]]; }
check() { # NAME WANT GOT [PATTERN FILE]
  local name=$1 want=$2 got=$3
  if [[ $got -ne $want ]]; then bad "$name: exit $got, wanted $want"; return; fi
  if [[ $# -ge 5 ]] && ! grep -q -- "$4" "$5"; then bad "$name: no '$4' in output:"; cat "$5"; return; fi
  ok
}
