#!/usr/bin/env bash
# bench/idle.sh — CPU use of ranks that wait (issue 14, goal 5; docs/SWEEP.md).
# Two runs of `mpiexec -np 2 curvsweep run` (no oversubscription: Open MPI
# yields in its busy waits when oversubscribed, which would hide a spin),
# each rank's CPU time sampled from /proc over a window of W seconds:
#   start: a 4·10^6-cell spec; rank 0 builds the archive, rank 1 waits
#          for it (sampled while the archive does not exist yet)
#   end:   one long cell; one rank trains it, the other has nothing to do
#          and waits for the end of the sweep
# Prints CPU % per rank (100 % = one core spinning). Target: a waiting rank
# uses a few % at most.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CS_BIN:-$root/build/curvsweep}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
W=${W:-2}
tck=$(getconf CLK_TCK)

# pid of each rank of the job whose command line mentions $1
rank_pids() {
  for p in $(pgrep -f "curvsweep run $1" || true); do
    r=$(tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    [ -n "$r" ] && echo "$r $p"
  done | sort -n
}
# wait (up to 60 s) until the 2 ranks of the job running $1 exist, then 1 s more
wait_ranks() {
  for _ in $(seq 120); do
    [ "$(rank_pids "$1" | wc -l)" -ge 2 ] && { sleep 1; return 0; }
    sleep 0.5
  done
  return 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# sample(spec, label, condition): CPU % of every rank over W seconds
sample() {
  local spec=$1 label=$2
  local -a ranks pids t0
  mapfile -t lines < <(rank_pids "$spec")
  for l in "${lines[@]}"; do ranks+=("${l% *}"); pids+=("${l#* }"); done
  for i in "${!pids[@]}"; do t0[i]=$(cpu_ticks "${pids[$i]}"); done
  local s0; s0=$(date +%s.%N)
  sleep "$W"
  local s1; s1=$(date +%s.%N)
  for i in "${!pids[@]}"; do
    local t1; t1=$(cpu_ticks "${pids[$i]}")
    printf '%s: rank %s %5.1f %% CPU (now %s in %s)\n' "$label" "${ranks[$i]}" \
      "$(echo "100 * ($t1 - ${t0[$i]}) / $tck / ($s1 - $s0)" | bc -l)" \
      "$(awk '{print $3}' "/proc/${pids[$i]}/stat" 2>/dev/null)" "$(cat "/proc/${pids[$i]}/wchan" 2>/dev/null)"
  done
}

# start: rank 0 builds a 4·10^6-row archive (long enough to outlast the
# start-up wait and the window on a current core: a 10^6-row one took < 2 s)
cat > "$tmp/start.ini" <<'EOF'
[sweep]
name = idle-start
[grid]
arch = ungated
depth = 1
seed = 0..3999999
[model]
width = 4
[train]
epochs = 1
[curvature]
points = 4
EOF
mpiexec --bind-to none -np 2 "$bin" run "$tmp/start.ini" -o "$tmp/start.h5" > /dev/null 2>&1 &
job=$!
wait_ranks "$tmp/start.ini" || echo "start: the ranks did not appear"
if [ ! -e "$tmp/start.h5" ]; then
  sample "$tmp/start.ini" "start (rank 0 creating the archive)"
  [ -e "$tmp/start.h5" ] && echo "  (the archive appeared during the window: rank 0 was faster than $W s)"
else
  echo "start: the archive was created before sampling began; no start-up wait to measure"
fi
kill -TERM $job 2>/dev/null || true
wait $job 2>/dev/null || true

# end: one long cell (about 15 s on a current core)
cat > "$tmp/end.ini" <<'EOF'
[sweep]
name = idle-end
[grid]
arch = gated
depth = 4
seed = 0
[task]
train_points = 2048
[model]
width = 32
[train]
epochs = 4000
[curvature]
points = 16
EOF
mpiexec --bind-to none -np 2 "$bin" run "$tmp/end.ini" -o "$tmp/end.h5" > /dev/null 2>&1 &
job=$!
wait_ranks "$tmp/end.ini" || echo "end: the ranks did not appear"
sleep 1
sample "$tmp/end.ini" "end (one rank training the only cell)"
wait $job || true
/usr/bin/python3 -c "import h5py,sys; c=h5py.File(sys.argv[1])['cells']; print('  the cell ran on rank', c['rank'][0], 'in %.1f s' % c['wall_s'][0])" "$tmp/end.h5" 2>/dev/null || true
