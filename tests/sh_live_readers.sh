#!/usr/bin/env bash
# Live readers (docs/ARCHIVE.md, "Live readers"): while a sweep of about
# 20 s (400 synthetic cells at 2 ranks, tests/specs/live-readers.ini) writes
# its archive, a loop of `curvsweep info` and a Python reader
# (tests/live_readers_check.py, through python/curvsweep_archive and plain
# h5py) read it all the time. Every info exits 0, its done count never goes
# down and ends at 400; every read through the module succeeds and sees
# each done cell with exactly its /curvature rows; plain h5py is refused
# only by the lock; an Archive kept from the start reads 400 after
# refresh(); a reader holding the file for 2 s only defers the writer.
# (At least 20 info calls and 50 module reads: info takes 0.1-0.5 s on a
# loaded 2-core machine. The full-size check, 500 + 500 reads of a 60 s
# sweep, is in bench/RESULTS.md.)
# Then a reader waits for a writer's lock instead of failing: info while
# the exclusive lock is held elsewhere returns once it is released, and
# the module told to wait 0.5 s says "being written", not "damaged".
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
PY=/usr/bin/python3
export PYTHONPATH=$src/python
spec=$src/tests/specs/live-readers.ini
N=400

CS_SYNTHETIC_CELLS=0.1 mpi 2 "$bin" run "$spec" -o live.h5 >run.log 2>&1 & run=$!
for _ in $(seq 600); do [[ -f live.h5 ]] && break; sleep 0.05; done
"$PY" "$src/tests/live_readers_check.py" live.h5 STOP "$N" 2 50 >py.log 2>&1 & py=$!
infos=0 last=-1 info_bad=0
while kill -0 $run 2>/dev/null; do
  if "$bin" info live.h5 >info.txt 2>&1; then
    d=$(sed -nE 's/^cells +[0-9]+: ([0-9]+) done.*/\1/p' info.txt)
    if [[ -z $d || $d -lt $last ]]; then
      bad "info's done count '$d' after $last: $(cat info.txt)"; info_bad=1; break
    fi
    last=$d
  else
    bad "info failed on the live archive: $(cat info.txt)"; info_bad=1; break
  fi
  infos=$((infos+1))
done
wait $run; check "the sweep" 0 $? "$N done" run.log
touch STOP
wait $py && ok || bad "python readers: $(cat py.log)"
echo "info calls $infos, last done count $last; $(tail -n 1 py.log)"
[[ $info_bad -eq 1 || $infos -ge 20 ]] && ok || bad "only $infos info calls while the sweep ran"
"$bin" info live.h5 >info.txt 2>&1
check "info at the end" 0 $? "^cells *$N: $N done" info.txt
[[ -f live.h5.journal ]] && bad "the journal is left beside the finished archive" || ok

# a reader waits while a writer holds the lock (until RELEASE1), then reads
hold_ex() { # FILE READY RELEASE: the exclusive lock from READY until RELEASE (at most 60 s)
  "$PY" -c "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX); open(sys.argv[2], 'w').close()
t = time.monotonic()
while not os.path.exists(sys.argv[3]) and time.monotonic() - t < 60: time.sleep(0.02)" "$@"
}
hold_ex live.h5 LOCKED RELEASE1 & holder=$!
for _ in $(seq 3000); do [[ -f LOCKED ]] && break; sleep 0.02; done
"$bin" info live.h5 >info.txt 2>&1 & reader=$!
sleep 1
kill -0 $reader 2>/dev/null && ok || bad "info did not wait for the lock: $(cat info.txt)"
touch RELEASE1
wait $reader
check "info once the lock is released" 0 $? "^cells *$N: $N done" info.txt
wait $holder
# held (until RELEASE) longer than the module is told to wait
hold_ex live.h5 LOCKED2 RELEASE & holder=$!
"$PY" -c "import os, sys, time, curvsweep_archive as ca
t = time.monotonic()
while not os.path.exists('LOCKED2') and time.monotonic() - t < 60: time.sleep(0.02)
try:
    ca.cells(sys.argv[1], timeout=0.5)
except ca.ArchiveBusy as e:
    print('busy:', e); sys.exit(0)
sys.exit(1)" live.h5 >busy.txt 2>&1
check "curvsweep_archive with a short timeout while the lock is held" 0 $? "is being written.*not damaged" busy.txt
touch RELEASE
wait $holder
finish
