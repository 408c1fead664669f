#!/usr/bin/env bash
# The main job: install what is missing, build, run the demo, say where the results are.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
bin="$root/build/curvsweep"
"$bin" verify | tail -n 1
spec="$root/jobs/demo-cells.ini"
out="$root/results/demo-cells.txt"
mkdir -p "$root/results"
: > "$out"
for cell in 0 1 2 3 4 5; do
  "$bin" train "$spec" --cell "$cell" | tee -a "$out"
  echo >> "$out"
done
echo "demo results: $out"
