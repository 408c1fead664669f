#!/usr/bin/env bash
# run --dry-run counts what a run would still do (docs/SPEC.md): every cell
# without an archive, only the cells not done with one; shards split them;
# the wall-time estimate is the longest-first schedule (one rank: the sum of
# the cells; more ranks than cells: the longest cell); another spec's
# archive is named as such; bad --ranks is a usage error.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
spec=$src/tests/specs/sweep-small.ini
field() { sed -n "s/^$1 *//p" "$2"; }
dry() { "$bin" run "$spec" -o s.h5 --dry-run "$@"; }

dry --ranks 1 >d0.txt 2>&1 && ok || bad "dry run without an archive failed: $(cat d0.txt)"
grep -q 'does not exist yet' d0.txt && ok || bad "no archive not said: $(head -n 3 d0.txt)"
grep -q '^to run   12 of 12 cells' d0.txt && ok || bad "fresh: $(grep '^to run' d0.txt)"
# one rank: the wall time is the remaining core-seconds
core=$(grep '^to run' d0.txt | sed -n 's/.*GFLOP (\(.*\) core-seconds).*/\1/p')
wall=$(grep '^wall' d0.txt | sed -n 's/^wall     about \([^ ]*\) s on 1 rank .*/\1/p')
[[ -n $core && $core == "$wall" ]] && ok || bad "one rank: wall '$wall' s, remaining '$core' core-seconds"
# more ranks than cells: the longest cell
dry --ranks 64 >d64.txt 2>&1
longest=$(grep '^cost' d64.txt | sed -n 's/.*longest cell \([^ ]*\) GFLOP.*/\1/p')
wall=$(grep '^wall' d64.txt | sed -n 's/^wall     about \([^ ]*\) s on 64 ranks.*/\1/p')
awk -v w="$wall" -v l="$longest" 'BEGIN { exit !(w > 0 && (w - l / 10) ^ 2 < (1e-3 * w) ^ 2) }' \
  && ok || bad "64 ranks: wall '$wall' s, longest cell '$longest' GFLOP at 10 GFLOP/s"

"$bin" run "$spec" -o s.h5 --shard 0/2 >run.log 2>&1 && ok || bad "shard 0/2 run failed: $(tail -n 3 run.log)"
dry >d1.txt 2>&1
grep -q 'exists: 6 cells done' d1.txt && ok || bad "archive state: $(grep '^archive' d1.txt)"
grep -q '^to run   6 of 12 cells' d1.txt && ok || bad "after shard 0: $(grep '^to run' d1.txt)"
dry --shard 0/2 >d2.txt 2>&1; grep -q '^to run   0 of 6 cells' d2.txt && ok || bad "shard 0 done: $(grep '^to run' d2.txt)"
dry --shard 1/2 >d3.txt 2>&1; grep -q '^to run   6 of 6 cells' d3.txt && ok || bad "shard 1 left: $(grep '^to run' d3.txt)"
# the cells listed to run are shard 1's, none that the archive holds
listed=$(sed -n '/^first cells to run:/,$p' d1.txt | awk 'NR > 1 { print $1 }' | sort -n | tr '\n' ' ')
want=$(sed -n '/^first cells to run:/,$p' d3.txt | awk 'NR > 1 { print $1 }' | sort -n | tr '\n' ' ')
[[ -n $listed && $listed == "$want" ]] && ok || bad "cells to run '$listed', shard 1 has '$want'"

"$bin" run "$src/tests/specs/demo-small.ini" -o s.h5 --dry-run >d4.txt 2>&1 && ok || bad "other spec dry run failed"
grep -q 'holds another spec' d4.txt && ok || bad "another spec not named: $(grep '^archive' d4.txt)"

"$bin" run "$spec" -o s.h5 --dry-run --ranks 0 >d5.txt 2>&1; rc=$?
[[ $rc == 2 ]] && grep -q -- '--ranks' d5.txt && ok || bad "--ranks 0: exit $rc, $(cat d5.txt)"
finish
