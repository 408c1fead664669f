#!/usr/bin/env bash
# The sweep under AddressSanitizer + UBSan (scripts/test.sh runs it against
# the CS_SANITIZE build): runs at 1, 2 and 3 ranks (identical archives), a
# run without -o (the archive path comes from the spec), a resume of a
# finished archive, shards + merge, info and analyze. No kill timing here:
# sanitized processes are too slow for tests/sh_sweep.sh's kill-mid-run
# assertions, which the normal build covers. Sanitizer reports go to the
# log_path set by scripts/test.sh, which fails on any.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
small="$src/tests/specs/sweep-small.ini"

for np in 1 2 3; do
  mpi $np "$bin" run "$small" -o "np$np.h5" 2>"np$np.err" && ok || { bad "run at $np ranks"; cat "np$np.err"; }
done
for np in 2 3; do cmp_archives np1.h5 "np$np.h5" && ok || bad "archive at $np ranks differs"; done
# without -o: [sweep] output = sweep-small.h5, relative to the working directory
cp "$small" spec.ini
mpi 2 "$bin" run spec.ini 2>noo.err && ok || { bad "run without -o"; cat noo.err; }
grep -q -- "12 done, 0 failed, 0 diverged, 0 pending -> sweep-small.h5$" noo.err && ok || { bad "summary of the run without -o"; cat noo.err; }
cmp_archives np1.h5 sweep-small.h5 && ok || bad "the archive of the run without -o differs"
"$bin" run spec.ini 2>resume.err && ok || { bad "resume without -o"; cat resume.err; }
for i in 0 1; do mpi 2 "$bin" run "$small" -o "shard$i.h5" --shard $i/2 2>/dev/null && ok || bad "shard $i/2"; done
"$bin" merge merged.h5 shard0.h5 shard1.h5 && ok || bad "merge"
cmp_archives np1.h5 merged.h5 && ok || bad "merged shards differ"
"$bin" info merged.h5 >/dev/null && ok || bad "info"
"$bin" analyze np1.h5 -o report >/dev/null 2>&1 && ok || bad "analyze"
finish
