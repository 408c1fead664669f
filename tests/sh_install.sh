#!/usr/bin/env bash
# cmake --install puts a working curvsweep under the prefix (README,
# "Two commands"): bin/curvsweep runs from there, and share/curvsweep holds
# what the Slurm scripts need beside it (jobs/README.md).
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
build=${CS_BUILD_DIR:?}
prefix=$tmp/prefix
if cmake --install "$build" --prefix "$prefix" >install.log 2>&1; then ok; else bad "cmake --install failed: $(tail -n 3 install.log)"; fi
[[ -x $prefix/bin/curvsweep ]] && ok || bad "no executable $prefix/bin/curvsweep"
# the installed binary answers from outside the build tree, with the same version
want=$("$bin" --version)
got=$(cd / && PATH="$prefix/bin:$PATH" curvsweep --version 2>&1)
[[ -n $want && $got == "$want" ]] && ok || bad "installed curvsweep --version printed '$got', the build's '$want'"
# and does real work: a dry run of an installed example spec
share=$prefix/share/curvsweep
if (cd / && "$prefix/bin/curvsweep" run "$share/jobs/demo.ini" --dry-run >"$tmp/dry.txt" 2>&1); then ok; else bad "installed dry run failed: $(tail -n 3 "$tmp/dry.txt")"; fi
grep -q 'cells' "$tmp/dry.txt" && ok || bad "the dry run printed no cell count: $(head -n 3 "$tmp/dry.txt")"
for f in jobs/sweep.sbatch jobs/array.sbatch jobs/merge.sbatch jobs/submit-array.sh scripts/openblas-env.sh; do
  [[ -x $share/$f ]] && ok || bad "$share/$f missing or not executable"
done
[[ -f $share/jobs/README.md ]] && ok || bad "jobs/README.md not installed"
finish
