# shellcheck shell=bash
# tests/support/wait.sh — sourced by the end-to-end shell tests.
# wait_done ARCHIVE N: wait until `curvsweep info` reports at least N done
# cells (polled every 50 ms; info reads while the writer holds the lock), or
# 60 s. Interrupts and kills sent after it land mid-run however loaded the
# machine is, instead of at fixed delays. Needs $bin (the curvsweep binary).
wait_done() {
  local t=0 d
  while (( t < 1200 )); do
    d=$("${bin:?}" info "$1" 2>/dev/null | sed -nE 's/.*cells +[0-9]+: ([0-9]+) done.*/\1/p')
    [[ -n "$d" && "$d" -ge "$2" ]] && return 0
    sleep 0.05; t=$((t+1))
  done
  return 1
}
