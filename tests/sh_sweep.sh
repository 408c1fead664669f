#!/usr/bin/env bash
# The sweep engine end to end: identical archives at 1-4 ranks, shards +
# merge == unsharded, kill -9 of rank 0 or a worker then resume == an
# uninterrupted run, signals, resume of a finished archive, spec mismatch;
# `curvsweep info` on the journal such runs leave beside the archive (and on
# one a live run holds), checked against tests/journal_check.py.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
source "$src/tests/support/procs.sh"

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
# a run that finished leaves no journal, and info names none
"$bin" info np1.h5 >info-np1.txt 2>&1
[[ ! -e np1.h5.journal ]] && ! grep -q '^journal' info-np1.txt && ok || { bad "a finished run left a journal, or info names one"; cat info-np1.txt; }

# journal_agrees ARCHIVE INFO: INFO (info's stdout) has the journal line of
# what tests/journal_check.py reads in ARCHIVE.journal (size, result and
# /runs records, cells the archive lacks) and says no process holds its
# lock, with the command that resumes
journal_agrees() {
  local r u k bytes held
  read -r _ r _ u _ k < <(/usr/bin/python3 "$src/tests/journal_check.py" "$1")
  bytes=$(stat -c %s "$1.journal")
  held="all in the archive"; (( k > 0 )) && held="$k cell(s) not in the archive yet"
  grep -qF "journal   $1.journal: $bytes bytes, $r result(s) and $u /runs record(s), $held" "$2" &&
    grep -qF "journal   no process of this machine holds its lock: a run was interrupted, or one on another machine is writing the archive; resume with the same command (curvsweep run SPEC -o $1)" "$2" &&
    return 0
  echo "journal_check.py: results $r runs $u unapplied $k, $bytes bytes; info says:"; cat "$2"
  return 1
}

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
n=0 midrun=0
for victim in 0 1; do
  for target in 1 3 6; do
    n=$((n+1)); out="kill$n.h5"
    mpi 2 "$bin" run "$kill_spec" -o "$out" 2>/dev/null &
    mpipid=$!
    wait_done "$out" $target
    pid=$(rank_pid $mpipid $victim)
    [[ -n "$pid" ]] && kill -9 "$pid"
    wait $mpipid 2>/dev/null
    # did the kill land mid-run (some cells done, some pending)? Then the
    # journal is kept and info names it
    "$bin" info "$out" >"info$n.txt" 2>/dev/null
    if grep -qE "cells +24: [1-9][0-9]* done, [1-9][0-9]* pending" "info$n.txt"; then
      midrun=$((midrun+1))
      journal_agrees "$out" "info$n.txt" && ok || bad "info after kill -9 of rank $victim: journal line"
    fi
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
rank0=$(rank_pid $mpipid 0)
# info on the live run: rank 0 holds the journal's lock (info never takes it)
"$bin" info sig.h5 >live.txt 2>&1
check "info on a live run" 0 $? "^journal   its lock is held by a process of this machine (pid $rank0): a run is writing the archive$" live.txt
kill -INT "$rank0"
wait $mpipid; rc=$?
[[ $rc -ne 0 ]] && ok || bad "interrupted run exited 0"
grep -q "resume with the same command" sig.err && ok || { bad "no resume hint after SIGINT"; cat sig.err; }
# stopped by the signal: every journaled result was written before it exited
"$bin" info sig.h5 >stopped.txt 2>&1
journal_agrees sig.h5 stopped.txt && grep -q "all in the archive" stopped.txt && ok || bad "info after SIGINT: journal line"
mpi 2 "$bin" run "$kill_spec" -o sig.h5 2>/dev/null && ok || bad "resume after SIGINT"
cmp_archives ref.h5 sig.h5 && ok || bad "resumed archive after SIGINT differs"
"$bin" info sig.h5 >resumed.txt 2>&1
[[ ! -e sig.h5.journal ]] && ! grep -q '^journal' resumed.txt && ok || { bad "the finished resume left a journal, or info names one"; cat resumed.txt; }

# 7. results the archive lacks: a reader holds the archive's lock, so the
# writer keeps its batches in the journal (docs/ARCHIVE.md, "Live readers"),
# until rank 0 is killed; info counts them as tests/journal_check.py does
mpi 2 "$bin" run "$kill_spec" -o held.h5 2>/dev/null &
mpipid=$!
wait_done held.h5 1
/usr/bin/python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "rb"); fcntl.flock(f, fcntl.LOCK_SH); print("held", flush=True); time.sleep(300)' "$PWD/held.h5" >hold.txt &
holder=$!
for ((t = 0; t < 600; t++)); do [[ -s hold.txt ]] && break; sleep 0.1; done
journaled() { /usr/bin/python3 "$src/tests/journal_check.py" held.h5 | cut -d' ' -f2; }
r0=$(journaled)
for ((t = 0; t < 300; t++)); do (( $(journaled) >= r0 + 2 )) && break; sleep 0.2; done
kill -9 "$(rank_pid $mpipid 0)"; wait $mpipid 2>/dev/null
kill "$holder"; wait "$holder" 2>/dev/null
"$bin" info held.h5 >held.txt 2>&1
check "info of a journal the archive lags" 0 $? "^journal   held.h5.journal: [0-9]* bytes, [0-9]* result(s) and [0-9]* /runs record(s), [1-9][0-9]* cell(s) not in the archive yet" held.txt
journal_agrees held.h5 held.txt && ok || bad "info of a journal the archive lags: journal line"
# its damaged, torn or absent copies: reported, never a crash, info exit 0
# while the archive reads (exit 2 and the journal named when it does not)
cp held.h5 bad.h5; cp held.h5.journal bad.h5.journal
printf 'X' | dd of=bad.h5.journal bs=1 seek=0 conv=notrunc status=none
"$bin" info bad.h5 >o 2>&1
check "info, a journal with a bad header" 0 $? "^journal   bad.h5.journal: [0-9]* bytes, bad.h5.journal is not a curvsweep journal (bad header)" o
cp held.h5 torn.h5; head -c -5 held.h5.journal >torn.h5.journal
"$bin" info torn.h5 >o 2>&1
journal_agrees torn.h5 o && ok || bad "info, a torn journal"
cp held.h5 fifo.h5; mkfifo fifo.h5.journal
timeout 30 "$bin" info fifo.h5 >o 2>&1
check "info, a FIFO for a journal" 0 $? "^journal   fifo.h5.journal: 0 bytes, not a regular file (a FIFO); a run refuses it" o
cp held.h5 dirty.h5; cp held.h5.journal dirty.h5.journal
printf '\001' | dd of=dirty.h5.journal bs=1 seek=108 conv=notrunc status=none # the dirty flag (docs/ARCHIVE.md, "Journal")
"$bin" info dirty.h5 >o 2>&1
check "info, a dirty journal" 0 $? "record(s), [0-9]* cell(s) not in the archive yet; dirty (a write on the archive was under way)$" o
grep -q "it writes what the journal holds, repairing the archive from it, and runs only the cells not done" o && ok || { bad "info, a dirty journal: no repair said"; cat o; }
cp np1.h5 other.h5; cp held.h5.journal other.h5.journal # sweep-small's archive, sweep-kill's journal
"$bin" info other.h5 >o 2>&1
check "info, another spec's journal" 0 $? "; written by another spec than the archive's (a run refuses it: finish that sweep, or move the journal away)$" o
grep -q "resume with the same command" o && { bad "info advises resuming with another spec's journal"; cat o; } || ok
cp held.h5 link.h5; ln -s held.h5.journal link.h5.journal # never followed (docs/SECURITY.md)
"$bin" info link.h5 >o 2>&1
check "info, a symbolic link for a journal" 0 $? "^journal   link.h5.journal: [0-9]* bytes, a symbolic link; a run refuses it" o
if [[ $(id -u) -eq 0 ]] && id nobody >/dev/null 2>&1; then
  cp held.h5 owned.h5; cp held.h5.journal owned.h5.journal; chown nobody owned.h5.journal
  "$bin" info owned.h5 >o 2>&1
  check "info, another user's journal" 0 $? "^journal   owned.h5.journal: [0-9]* bytes, owned by another user; a run refuses it" o
fi
cp held.h5.journal lone.h5.journal
"$bin" info lone.h5 >o 2>&1
check "info, a journal without its archive" 2 $? "^curvsweep: lone.h5.journal: [0-9]* bytes, [0-9]* result(s)" o
# the resume writes what the journal holds: the reference archive, no journal left
mpi 2 "$bin" run "$kill_spec" -o held.h5 2>/dev/null && ok || bad "resume of the held archive"
cmp_archives ref.h5 held.h5 && ok || bad "resumed held archive differs"
[[ ! -e held.h5.journal ]] && ok || bad "the finished resume of the held archive left its journal"

finish
