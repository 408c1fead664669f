#!/usr/bin/env bash
# Install what is missing, build, run every test (unit, MPI at 1-4 ranks, end to end).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# The Slurm end-to-end test (tests/sh_slurm.sh) starts a real Slurm on localhost:
# install it too (CS_WITH_SLURM=0 to leave it out; that test then fails).
export CS_WITH_SLURM=${CS_WITH_SLURM:-1}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build=${CS_BUILD_DIR:-$root/build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
cd "$build"
ctest --output-on-failure -j 2 "$@"
