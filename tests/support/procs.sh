# shellcheck shell=bash
# tests/support/procs.sh — sourced by the shell tests that signal the ranks
# of a run they started in the background. They find them among the
# descendants of the PID they launched (`$!`), never by command line
# (`pgrep -f "curvsweep run SPEC"` also finds another test's or a user's run
# of the same spec on the machine, and would signal it).
# descendants PID: every process below PID, one PID a line (pgrep -P, walked
# down the tree: the launcher's subshell, mpiexec, the ranks).
descendants() {
  local c
  for c in $(pgrep -P "$1"); do
    echo "$c"
    descendants "$c"
  done
}
# rank_pid LAUNCHER RANK: the PID of the curvsweep process of world rank RANK
# below LAUNCHER (Open MPI's OMPI_COMM_WORLD_RANK in its environment), or
# nothing when there is none (yet, or any more).
rank_pid() {
  local p
  for p in $(descendants "$1"); do
    [[ $(cat "/proc/$p/comm" 2>/dev/null) == curvsweep ]] || continue
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "$p"
      return
    fi
  done
}
