#!/usr/bin/env bash
# scripts/openblas-env.sh — sourced by the scripts that run curvsweep.
# OpenBLAS runs single-threaded per rank (parallelism comes from MPI), and
# its kernels are chosen from the CPU's flags when the user has not chosen:
# Debian 12's OpenBLAS 0.3.21 predates recent Intel CPUs and falls back to
# its SSE3 "Prescott" kernels there, 2-5x slower (docs/DECISIONS.md,
# "Training speed"). OPENBLAS_CORETYPE set by the user always wins.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
if [[ -z ${OPENBLAS_CORETYPE:-} && -r /proc/cpuinfo ]]; then
  cs_cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  cs_has() { [[ $cs_cpu_flags == *" $1 "* ]]; }
  if cs_has avx512f && cs_has avx512dq && cs_has avx512bw && cs_has avx512vl; then
    export OPENBLAS_CORETYPE=SkylakeX
  elif cs_has avx2 && cs_has fma; then
    export OPENBLAS_CORETYPE=Haswell
  fi
  unset -f cs_has
  unset cs_cpu_flags
fi

# Executed rather than sourced, it runs a command with these settings (the
# README's "run jobs through scripts/openblas-env.sh"):
#   scripts/openblas-env.sh mpirun -np 4 build/curvsweep run jobs/demo.ini
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  if (($# == 0)); then
    echo "usage: scripts/openblas-env.sh COMMAND [ARGS...]   (or source it from bash)" >&2
    exit 2
  fi
  exec "$@"
fi
