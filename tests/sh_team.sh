#!/usr/bin/env bash
# Sweeps on teams of ranks (docs/SWEEP.md): results equal the 1x1 sweep to
# rounding (1e-7 relative; every product forced through PBLAS with block
# size 4), for 1x2, 2x1 and 2x2 teams; resume and shards work with teams;
# a rank count that is not a multiple of the team size is refused.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
source "$src/tests/support/procs.sh"
export CS_TEAM_FLOP_THRESHOLD=0

mpi 2 "$bin" run "$src/tests/specs/sweep-small.ini" -o ref.h5 2>/dev/null && ok || bad "1x1 reference"
for grid in 1x2 2x1 2x2; do
  sed "s/^grid = 1x2/grid = $grid/" "$src/tests/specs/sweep-team.ini" > team-$grid.ini
  if mpi 4 "$bin" run team-$grid.ini -o team-$grid.h5 2>err-$grid.txt; then ok; else bad "sweep on $grid teams"; cat err-$grid.txt; fi
  cmp_archives ref.h5 team-$grid.h5 --ignore-spec --rtol 1e-7 && ok || bad "$grid teams differ from 1x1 beyond 1e-7"
done
"$bin" info team-1x2.h5 > /dev/null && ok || bad "info on a team archive"
/usr/bin/python3 -c "import h5py,sys; r=h5py.File('team-2x2.h5','r')['runs'][:]; sys.exit(0 if r['team'][0]==b'2x2' and r['ranks'][0]==4 else 1)" && ok || bad "/runs does not record the 2x2 team"

# the same team sweep twice is bitwise identical; shards + merge and an
# interrupted + resumed run equal it
spec=team-1x2.ini
mpi 4 "$bin" run $spec -o again.h5 2>/dev/null && cmp_archives team-1x2.h5 again.h5 >/dev/null && ok || bad "team sweep not reproducible"
for i in 0 1; do mpi 2 "$bin" run $spec -o shard$i.h5 --shard $i/2 2>/dev/null && ok || bad "team shard $i/2"; done
"$bin" merge merged.h5 shard0.h5 shard1.h5 2>/dev/null && ok || bad "merge of team shards"
cmp_archives team-1x2.h5 merged.h5 && ok || bad "merged team shards differ"
sed 's/^epochs     = 20/epochs     = 400/' $spec > long.ini
mpi 4 "$bin" run long.ini -o long-ref.h5 2>/dev/null && ok || bad "long team reference"
mpi 4 "$bin" run long.ini -o long.h5 2>sig.err &
mpipid=$!
wait_done long.h5 1 # running, its handlers installed, however loaded the machine
kill -INT "$(rank_pid $mpipid 0)" # rank 0 of this run only (tests/support/procs.sh)
wait $mpipid; rc=$?
[[ $rc -ne 0 ]] && grep -q "resume with the same command" sig.err && ok || { bad "interrupt of a team sweep (exit $rc)"; cat sig.err; }
mpi 4 "$bin" run long.ini -o long.h5 2>/dev/null && ok || bad "resume of a team sweep"
cmp_archives long-ref.h5 long.h5 && ok || bad "resumed team sweep differs"

# 3 ranks cannot form teams of 2
mpi 3 "$bin" run $spec -o three.h5 2>three.err; rc=$?
[[ $rc -eq 2 ]] && grep -q "needs a multiple of 2 ranks" three.err && ok || { bad "3 ranks with 1x2 teams: exit $rc"; cat three.err; }
[[ ! -e three.h5 ]] && ok || bad "refused team sweep created an archive"

finish
