#!/usr/bin/env bash
# bench/live_readers.sh — the full-size live-reader check (docs/ARCHIVE.md,
# "Live readers"; issue 26): while a synthetic 2,000-cell sweep of
# bench/sched.ini runs at 2 ranks (CS_SYNTHETIC_CELLS=MEAN, default 0.15 s:
# about 150 s here), INFOS `curvsweep info` calls (default 500) and READS
# reads through python/curvsweep_archive (default 500, with plain h5py
# opens in between; tests/live_readers_check.py checks each read against
# /cells and /curvature), and an Archive kept from the start refreshed at
# the end. Prints the counts and failures; exit 0 when every read
# succeeded while the sweep ran, every done count was monotone and the kept
# reader ended with 2,000 done. LOOPS: info loops at once (default 2).
# CS_BIN: the curvsweep binary (default build/curvsweep).
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
bin=${CS_BIN:-$src/build/curvsweep}
# absolute: the script runs in a temporary directory
[[ $bin == /* ]] || bin=$PWD/$bin
INFOS=${INFOS:-500} READS=${READS:-500} MEAN=${MEAN:-0.15}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export PYTHONPATH=$src/python
t0=$(date +%s)
CS_SYNTHETIC_CELLS=$MEAN mpiexec --oversubscribe --bind-to none -np 2 "$bin" run \
  "$src/bench/sched.ini" -o live.h5 >run.log 2>&1 & run=$!
# the archive appears, or the run failed to start (its log says why)
while [[ ! -f live.h5 ]]; do
  kill -0 "$run" 2>/dev/null || { echo "the sweep ended before creating its archive:"; cat run.log; exit 1; }
  sleep 0.05
done
/usr/bin/python3 "$src/tests/live_readers_check.py" live.h5 STOP 2000 2 "$READS" "$READS" >py.log 2>&1 & py=$!
# LOOPS loops of info calls at once (default 2), INFOS calls in all; each
# call's result and whether the sweep was still running when it began
info_loop() {
  local last=-1 d
  for _ in $(seq "$1"); do
    kill -0 "$run" 2>/dev/null && live=1 || live=0
    if "$bin" info live.h5 >"info.$2.txt" 2>&1; then
      d=$(sed -nE 's/^cells +[0-9]+: ([0-9]+) done.*/\1/p' "info.$2.txt")
      if [[ $d -ge $last ]]; then echo "ok $live $d $(date +%s.%N)"; else echo "down $live $d after $last"; fi
      last=$d
    else
      echo "fail $live $(tr '\n' ' ' <"info.$2.txt")"
    fi
  done >"loop.$2.log"
}
LOOPS=${LOOPS:-2}
loops=()
for l in $(seq "$LOOPS"); do info_loop $((INFOS / LOOPS)) "$l" & loops+=($!); done
wait "${loops[@]}"
t_info=$(( $(date +%s) - t0 ))
ok=$(cat loop.*.log | grep -c '^ok') fail=$(cat loop.*.log | grep -c '^fail')
down=$(cat loop.*.log | grep -c '^down') during=$(cat loop.*.log | grep -c '^[a-z]* 1')
last=$(tail -qn 1 loop.*.log | awk '{print $3}' | sort -n | tail -n 1)
grep -h '^fail\|^down' loop.*.log | head -n 5
wait $run; rc=$?
t_run=$(( $(date +%s) - t0 ))
touch STOP
wait $py; pyrc=$?
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
echo "sweep: exit $rc after ${t_run} s; $(tail -n 1 run.log)"
echo "info: $ok ok, $fail failed, $down with a done count below the loop's previous one; $during of them began while the sweep ran; last done count $last (${t_info} s)"
echo "python (exit $pyrc): $(tr '\n' ' ' <py.log)"
# how far the file (what info read) was behind the sweep (its progress
# lines: results reported done, in the journal) at each progress line
/usr/bin/python3 - "$t0" run.log loop.*.log <<'PY'
import re, sys
t0, seen = float(sys.argv[1]), []
for name in sys.argv[3:]:
    for line in open(name):
        f = line.split()
        if f[0] == "ok" and len(f) > 3:
            seen.append((float(f[3]) - t0, int(f[2])))
lags = []
for line in open(sys.argv[2]):
    m = re.match(r"\[(\d+)/\d+ cells\].*elapsed (\d+):(\d+):(\d+)", line)
    if not m:
        continue
    n, e = int(m.group(1)), 3600 * int(m.group(2)) + 60 * int(m.group(3)) + int(m.group(4))
    before = [d for t, d in seen if t <= e]
    if before and seen and e <= max(t for t, _ in seen):
        lags.append((e, n, max(before)))
print("file behind the sweep (elapsed s: done in the sweep / done in the file as info read it): "
      + ", ".join("%d: %d/%d" % x for x in lags))
PY
[[ $rc -eq 0 && $fail -eq 0 && $down -eq 0 && $pyrc -eq 0 && $during -eq $((INFOS / LOOPS * LOOPS)) ]]
