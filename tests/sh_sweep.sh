#!/usr/bin/env bash
# The sweep engine end to end: identical archives at 1-4 ranks, shards +
# merge == unsharded, kill -9 of rank 0 or a worker then resume == an
# uninterrupted run, signals, resume of a finished archive, spec mismatch.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"

small="$src/tests/specs/sweep-small.ini"
kill_spec="$src/tests/specs/sweep-kill.ini"

# 1. the same spec at 1, 2, 3, 4 ranks: identical archives cell by cell
for np in 1 2 3 4; do
  if mpi $np "$bin" run "$small" -o "np$np.h5" 2>"np$np.err"; then ok; else bad "run at $np ranks"; cat "np$np.err"; fi
done
for np in 2 3 4; do
  if cmp_archives np1.h5 "np$np.h5"; then ok; else bad "archive at $np ranks differs from 1 rank"; fi
done
h5dump -H np1.h5 >/dev/null && ok || bad "h5dump cannot read the archive"

# 2. resume of a finished archive runs nothing and changes no result
mpi 2 "$bin" run "$small" -o np1.h5 2>resume.err && ok || bad "resume of a finished archive"
cmp_archives np1.h5 np2.h5 >/dev/null && ok || bad "resume changed results"
grep -q "12 done" resume.err && ok || { bad "resume summary"; cat resume.err; }

# 3. shards 0/3, 1/3, 2/3 merged == the unsharded archive
for i in 0 1 2; do
  mpi 2 "$bin" run "$small" -o "shard$i.h5" --shard $i/3 2>/dev/null && ok || bad "shard $i/3"
done
"$bin" merge merged.h5 shard0.h5 shard1.h5 shard2.h5 && ok || bad "merge"
cmp_archives np1.h5 merged.h5 && ok || bad "merged shards differ from the unsharded archive"

# 4. a different spec for an existing archive is refused, archive untouched
sed 's/epochs     = 20/epochs     = 21/' "$small" > other.ini
sum_before=$(sha256sum np1.h5)
mpi 1 "$bin" run other.ini -o np1.h5 2>mismatch.err; rc=$?
[[ $rc -eq 2 ]] && ok || bad "spec mismatch exit $rc (wanted 2)"
grep -q "different spec" mismatch.err && ok || { bad "spec mismatch message"; cat mismatch.err; }
[[ "$(sha256sum np1.h5)" == "$sum_before" ]] && ok || bad "spec mismatch touched the archive"

# 5. kill -9 of rank 0 or of a worker at several moments, then resume
mpi 2 "$bin" run "$kill_spec" -o ref.h5 2>/dev/null && ok || bad "reference run"
rank_pid() { # pid of the curvsweep process with the given world rank
  for p in $(pgrep -f "curvsweep run $kill_spec"); do
    if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then echo "$p"; return; fi
  done
}
n=0 midrun=0
for victim in 0 1; do
  for target in 1 3 6; do
    n=$((n+1)); out="kill$n.h5"
    mpi 2 "$bin" run "$kill_spec" -o "$out" 2>/dev/null &
    mpipid=$!
    wait_done "$out" $target
    pid=$(rank_pid $victim)
    [[ -n "$pid" ]] && kill -9 "$pid"
    wait $mpipid 2>/dev/null
    # did the kill land mid-run (some cells done, some pending)?
    "$bin" info "$out" 2>/dev/null | grep -qE "cells +24: [1-9][0-9]* done, [1-9][0-9]* pending" && midrun=$((midrun+1))
    if mpi 2 "$bin" run "$kill_spec" -o "$out" 2>"resume$n.err"; then ok; else bad "resume after kill -9 of rank $victim after $target done"; cat "resume$n.err"; fi
    cmp_archives ref.h5 "$out" && ok || bad "kill -9 rank $victim after $target done: resumed archive differs"
  done
done

# the kills must really have interrupted runs, or the resume checks prove nothing
[[ $midrun -ge 3 ]] && ok || bad "only $midrun of 6 kills landed mid-run"

# 6. SIGINT to rank 0: stop, keep results, say how to resume, exit non-zero; then resume
mpi 2 "$bin" run "$kill_spec" -o sig.h5 2>sig.err &
mpipid=$!
wait_done sig.h5 1 # running, its handlers installed, however loaded the machine
kill -INT "$(rank_pid 0)"
wait $mpipid; rc=$?
[[ $rc -ne 0 ]] && ok || bad "interrupted run exited 0"
grep -q "resume with the same command" sig.err && ok || { bad "no resume hint after SIGINT"; cat sig.err; }
mpi 2 "$bin" run "$kill_spec" -o sig.h5 2>/dev/null && ok || bad "resume after SIGINT"
cmp_archives ref.h5 sig.h5 && ok || bad "resumed archive after SIGINT differs"

finish
