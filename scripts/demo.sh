#!/usr/bin/env bash
# The main job: install what is missing, build, run the demo sweep on all
# local cores, analyse it, and say where the report is.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source "$root/scripts/openblas-env.sh"
bin="$root/build/curvsweep"
cd "$root"
"$bin" verify | tail -n 1
# the demo sweep (resumes if results/demo.h5 exists from an interrupted run)
mpiexec --oversubscribe --bind-to none -np "$(nproc)" "$bin" run jobs/demo.ini -o results/demo.h5
"$bin" info results/demo.h5
if "$bin" --help | grep -q '^  analyze'; then
  "$bin" analyze results/demo.h5 -o results/demo-report
  echo "report: $root/results/demo-report/index.md"
else
  echo "results: $root/results/demo.h5 (per-cell tables /cells, /curvature, /curves)"
fi
