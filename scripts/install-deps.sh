#!/usr/bin/env bash
# Install exactly the Debian packages curvsweep needs that are missing.
# Idempotent: prints nothing to install when everything is there.
# Without root or apt-get: says what to install and exits 2.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libopenmpi-dev openmpi-bin
  libscalapack-openmpi-dev
  libhdf5-openmpi-dev hdf5-tools
  zlib1g-dev                     # the journal's CRC-32 (HDF5 depends on it too)
  libopenblas-dev
  libxsmm-dev                    # JIT kernels for the small products of the transformer cells (docs/DECISIONS.md)
  libinih-dev
  libcmocka-dev
  libgsl-dev                     # distributions and special functions of the report's statistics
  libssl-dev                     # libcrypto: SHA-256 of specs
  gnuplot-nox
  python3-h5py python3-numpy python3-pandas
  python3-pip python3-setuptools  # python/curvsweep_archive installs from the tree (tests/sh_python_module.sh)
  python3-mpmath python3-gmpy2   # the 50-digit curvature reference (tests/reference)
  strace
  time                           # /usr/bin/time: the RSS bound of tests/sh_hostile.sh
  shellcheck                     # scripts/test.sh lints every shell script
  python3-torch                  # bench and test only: the PyTorch peers of bench/ (tests/sh_peer_batched.sh)
  clang-14 libclang-rt-14-dev    # libFuzzer for the harnesses of tests/fuzz
)
# strace: tests/sh_lock_race.sh widens the journal-lock race windows with its
# syscall delay injection.
# Slurm is only needed by the Slurm end-to-end tests (tests/sh_slurm*.sh), which
# run slurmctld + slurmd on localhost (scripts/slurm-local.sh): slurm-wlm (which depends on
# slurmctld, slurmd and slurm-client) runs the daemons; slurm-wlm-basic-plugins has
# mpi_pmix (srun --mpi=pmix), proctrack/linuxproc and cons_tres; munge signs
# Slurm's messages; libpmix2 is PMIx itself.
if [[ "${CS_WITH_SLURM:-0}" == 1 ]]; then
  PACKAGES+=(slurm-wlm munge slurm-wlm-basic-plugins libpmix2)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1 || [[ $(id -u) -ne 0 ]]; then
  echo "curvsweep needs these Debian packages, which are not installed:" >&2
  echo "  sudo apt-get install ${missing[*]}" >&2
  exit 2
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
