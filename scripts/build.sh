#!/usr/bin/env bash
# Configure and build curvsweep into build/ (or $CS_BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${CS_BUILD_DIR:-$root/build}
werror=OFF
[[ "${CI:-}" == "true" || "${CS_WERROR:-0}" == 1 ]] && werror=ON
cmake -S "$root" -B "$build" -DCS_WERROR=$werror >/dev/null
cmake --build "$build" -j "$(nproc)"
