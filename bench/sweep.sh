#!/usr/bin/env bash
# bench/sweep.sh — the sweep engine's parallel efficiency on a 48-cell grid.
# Runs bench/sweep.ini at 1 and 2 ranks and prints, for 2 ranks:
#   efficiency = T1 / (2 · T2)
#   makespan / lower bound, lower bound = max(Σ cell times / ranks, longest cell)
#   archive overhead = time rank 0 spent writing results / wall time
# Targets (issue 4): efficiency >= 0.95, makespan <= 1.05 x bound, archive <= 2%.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CS_BIN:-$root/build/curvsweep}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
declare -A T E
for np in 1 2; do
  t0=$(date +%s.%N)
  mpiexec --bind-to none -np $np "$bin" run "$root/bench/sweep.ini" -o "$tmp/np$np.h5" 2> "$tmp/np$np.err"
  t1=$(date +%s.%N)
  T[$np]=$(echo "$t1 - $t0" | bc -l)
  # the sweep's own elapsed time (from archive open to the last result)
  E[$np]=$(grep -oE "cells in [0-9.]+ s" "$tmp/np$np.err" | grep -oE "[0-9.]+ s" | tr -d ' s')
  grep "writing the archive" "$tmp/np$np.err" | sed "s/^curvsweep:/  np=$np:/"
done
/usr/bin/python3 - "$tmp/np2.h5" "${T[1]}" "${T[2]}" "${E[1]}" "${E[2]}" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
t1, t2, e1, e2 = map(float, sys.argv[2:6])
w = f["cells"]["wall_s"][:]
bound = max(w.sum() / 2, w.max())
print(f"48 cells: sum of cell times {w.sum():.2f} s, longest {w.max():.2f} s")
print(f"sweep time: 1 rank {e1:.2f} s, 2 ranks {e2:.2f} s (whole command incl. MPI start-up: {t1:.2f} s, {t2:.2f} s)")
print(f"parallel efficiency at 2 ranks: {e1 / (2 * e2):.3f} (whole command {t1 / (2 * t2):.3f}; target >= 0.95)")
print(f"makespan / lower bound: {e2:.2f} / {bound:.2f} = {e2 / bound:.3f} (whole command {t2 / bound:.3f}; target <= 1.05)")
PY
