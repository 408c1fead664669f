#!/usr/bin/env bash
# The corruption campaign (issue #17): single bytes flipped all over an
# archive must never make curvsweep report different numbers with exit
# status 0 (docs/DECISIONS.md, "Corruption campaign").
#  A. a finished archive with points: per flip, `curvsweep info` and
#     `curvsweep analyze` are refused (exit != 0), identical (exit 0, same
#     output, CSVs and index.md as the reference) or SILENT (exit 0, other
#     output); `curvsweep info --check` must name damage whenever info or
#     analyze refuses.
#  B. an archive interrupted by kill -9 (journal beside it): per flip in the
#     HDF5 file, the resume is refused, recovered (equal to an uninterrupted
#     run, tests/archive_compare.py) or SILENT (exit 0, different archive).
#  C. `curvsweep info --check`: exit 0 on the intact archive, 2 naming the
#     dataset when a byte inside a /points chunk is flipped.
# A crash (signal) or a hang (timeout) is a failure too: it is no clear error.
# Any SILENT outcome fails the test. Flips: CS_CORRUPT_FLIPS in total
# (default 500: four fifths on A, one fifth on B), made all at once by
# tests/support/flip_bytes.py with seed CS_CORRUPT_SEED (B: the seed + 1);
# CS_CORRUPT_KEEP=DIR keeps a copy of every file that gave a SILENT outcome.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
export CS_GNUPLOT=/nonexistent # plots are not compared: skip rendering them

flips=${CS_CORRUPT_FLIPS:-500} seed=${CS_CORRUPT_SEED:-17}
n_fin=$((flips * 4 / 5)) n_int=$((flips - flips * 4 / 5))
tiny="$src/tests/specs/corrupt-tiny.ini"
kill_spec="$src/tests/specs/corrupt-kill.ini"
# flips SRC N SEED PREFIX: PREFIX-I (I < N) is SRC with one byte flipped in
# the I-th of N equal slices of it; the array offsets[I] says which byte
flips() {
  local i off
  offsets=()
  while read -r i off; do offsets[i]=$off; done < <(/usr/bin/python3 "$src/tests/support/flip_bytes.py" "$@")
  (( ${#offsets[@]} == $2 )) && ok || bad "flip_bytes.py made ${#offsets[@]} of $2 copies of $1"
}

# info + analyze of ARCHIVE into directory OUT (made by the caller): their
# exit statuses in rc1 and rc2. No subshell and no mkdir per flip: the
# redirections truncate the text files, the report directory goes.
observe() {
  rm -rf "$2/R"
  timeout 60 "$bin" info "$1" >"$2/info.txt" 2>"$2/info.err"; rc1=$?
  timeout 60 "$bin" analyze "$1" -o "$2/R" >"$2/analyze.txt" 2>"$2/analyze.err"; rc2=$?
}
# the compared outputs of an observation: info, analyze's stdout, CSVs,
# index.md, as one sha256sum line per file (one process, not one cmp per
# file; a missing file makes sha256sum fail and the sums differ)
compared="info.txt analyze.txt R/summary.csv R/prefix.csv R/amplification.csv R/gap.csv R/index.md"
sums_of() { # DIR: the sums of its compared outputs, named relative to DIR
  local f paths=()
  for f in $compared; do paths+=("$1/$f"); done
  sha256sum -- "${paths[@]}" 2>&1 | sed "s|  $1/|  |"
}
# step_to_done PID ARCHIVE N: let process PID run in slices of about 10 ms
# (SIGCONT, sleep, SIGSTOP) until `curvsweep info` shows at least N done
# cells in ARCHIVE, and leave it stopped there (status 1 when PID is gone or
# after 60 s of slices). A writer stopped inside a batch holds the file's
# lock and info waits for it (docs/ARCHIVE.md, "Live readers"): info gets
# 2 s, then the next slice.
step_to_done() {
  local pid=$1 t0=$SECONDS d
  while (( SECONDS - t0 < 60 )); do
    kill -CONT "$pid" 2>/dev/null || return 1
    sleep 0.01
    kill -STOP "$pid" 2>/dev/null || return 1
    d=$(timeout 2 "$bin" info "$2" 2>/dev/null | sed -nE 's/.*cells +[0-9]+: ([0-9]+) done.*/\1/p')
    [[ -n $d && $d -ge $3 ]] && return 0
  done
  return 1
}
crashed() { (( $1 >= 124 )); } # timeout (124) or killed by a signal (128+n)

# ---- A. a finished archive ----
"$bin" run "$tiny" -o fin.h5 >/dev/null 2>&1 && ok || bad "run of $tiny"
cp fin.h5 x.h5 # the outputs name the archive and the report directory: the same in every observation
mkdir -p obs; observe x.h5 obs; mv obs ref; mkdir obs
[[ $rc1 -eq 0 && $rc2 -eq 0 ]] && ok || { bad "reference info/analyze exit $rc1/$rc2"; cat ref/*.err; }
grep -q "4 done" ref/info.txt && ok || bad "reference archive not finished"
ref_sums=$(sums_of ref)
[[ $ref_sums != *"No such file"* && $(grep -c . <<<"$ref_sums") -eq 7 ]] && ok || { bad "reference outputs missing:"; echo "$ref_sums"; }
refused=0 identical=0 silent=0
flips fin.h5 "$n_fin" "$seed" fin-flip
for ((i = 0; i < n_fin; i++)); do
  mv "fin-flip-$i" x.h5
  off=${offsets[i]}
  observe x.h5 obs
  timeout 60 "$bin" info --check x.h5 >obs/check.txt 2>&1; rc3=$?
  # info --check agrees: damage that makes info or analyze refuse is named
  if [[ $rc3 -eq 0 && ( $rc1 -ne 0 || $rc2 -ne 0 ) ]] || (( rc3 != 0 && rc3 != 2 )); then
    bad "finished archive, byte $off flipped: info --check exit $rc3, info/analyze exit $rc1/$rc2"
  fi
  if crashed "$rc1" || crashed "$rc2"; then
    bad "finished archive, byte $off flipped: info/analyze crashed or hung (exit $rc1/$rc2)"
  elif [[ $rc1 -ne 0 || $rc2 -ne 0 ]]; then
    refused=$((refused+1))
    for e in info analyze; do # a refusal says why
      rc=rc1; [[ $e == analyze ]] && rc=rc2
      [[ ${!rc} -eq 0 || -s obs/$e.err ]] || bad "byte $off: $e refused without a message"
    done
  elif [[ $(sums_of obs) == "$ref_sums" ]]; then
    identical=$((identical+1))
  else
    silent=$((silent+1)); bad "finished archive, byte $off flipped: SILENT (exit 0, different output)"
    [[ -n ${CS_CORRUPT_KEEP:-} ]] && cp x.h5 "$CS_CORRUPT_KEEP/silent-fin-$off.h5"
  fi
done
echo "finished archive: $n_fin flips: $refused refused, $identical identical, $silent silent"
[[ $silent -eq 0 ]] && ok

# ---- C. info --check: intact -> exit 0; a bad byte in a /points chunk -> exit 2 naming it ----
"$bin" info --check fin.h5 >check.out 2>&1 && ok || { bad "info --check of an intact archive"; cat check.out; }
read -r rows off < <(/usr/bin/python3 -c '
import h5py, sys
f = h5py.File(sys.argv[1], "r")
d = f["points/S"]
c = d.id.get_chunk_info(d.id.get_num_chunks() - 1)
n = min(d.chunks[0], d.shape[0] - c.chunk_offset[0])
print("%d..%d" % (c.chunk_offset[0], c.chunk_offset[0] + n - 1), c.byte_offset + c.size // 2)' fin.h5)
cp fin.h5 z.h5
old=$(od -An -tu1 -j "$off" -N1 z.h5 | tr -d ' ')
printf '%b' "$(printf '\\%03o' $((old ^ 0x5a)))" | dd of=z.h5 bs=1 seek="$off" conv=notrunc status=none
"$bin" info --check z.h5 >check.out 2>&1; rc=$?
[[ $rc -eq 2 ]] && ok || { bad "info --check of a damaged /points chunk: exit $rc (wanted 2)"; cat check.out; }
grep -q "^damaged   /points/S rows $rows: " check.out && ok || { bad "info --check does not name /points/S rows $rows"; cat check.out; }
[[ $(grep -c '^damaged' check.out) -eq 1 ]] && ok || { bad "info --check names more than the damaged dataset"; cat check.out; }

# ---- B. an interrupted archive ----
"$bin" run "$kill_spec" -o ref.h5 >/dev/null 2>&1 && ok || bad "uninterrupted run of $kill_spec"
"$bin" run "$kill_spec" -o int.h5 >/dev/null 2>&1 &
runpid=$!
# the first result in the file, then the kill: the file shows results a
# batch after the journal (docs/ARCHIVE.md, "Write protocol"). The run goes
# in slices (step_to_done) and is stopped while info looks, so the kill
# lands mid-run however fast the cells are: they are cheap (a resume
# retrains the pending ones, a hundred times below).
step_to_done "$runpid" int.h5 1 || bad "the killed run showed no done cell"
kill -9 $runpid 2>/dev/null; wait $runpid 2>/dev/null
[[ -e int.h5.journal ]] && ok || bad "the killed run left no journal"
if "$bin" info int.h5 2>/dev/null | grep -qE "cells +8: [1-9][0-9]* done, [1-9][0-9]* pending"; then ok
else bad "the kill did not land mid-run"; "$bin" info int.h5; fi
# the interrupted archive itself resumes to the reference
cp int.h5 y.h5; cp int.h5.journal y.h5.journal
"$bin" run "$kill_spec" -o y.h5 >/dev/null 2>&1 && cmp_archives ref.h5 y.h5 >/dev/null && ok \
  || bad "resume of the unflipped interrupted archive"
# resumes that exit 0 are compared with the reference afterwards, all in one
# python process (tests/archive_compare.py --each)
refused=0 recovered=0 silent=0 resumed=()
flips int.h5 "$n_int" $((seed + 1)) int-flip
for ((i = 0; i < n_int; i++)); do
  rm -f y.h5*; mv "int-flip-$i" y.h5; cp int.h5.journal y.h5.journal
  off=${offsets[i]}
  cp y.h5 "flipped-$off.h5"
  timeout 120 "$bin" run "$kill_spec" -o y.h5 >resume.out 2>resume.err; rc=$?
  if crashed "$rc"; then
    bad "interrupted archive, byte $off flipped: resume crashed or hung (exit $rc)"
  elif [[ $rc -ne 0 ]]; then
    refused=$((refused+1))
    [[ -s resume.err ]] || bad "byte $off: resume refused without a message"
  else
    mv y.h5 "resumed-$off.h5"; resumed+=("resumed-$off.h5")
    continue
  fi
  rm -f "flipped-$off.h5"
done
if (( ${#resumed[@]} > 0 )); then
  cmp_archives --each ref.h5 "${resumed[@]}" >cmp.out 2>&1
  while IFS= read -r line; do
    f=${line%%: *} off=${f#resumed-} off=${off%.h5}
    if [[ ${line#*: } == equal ]]; then
      recovered=$((recovered+1))
    else
      silent=$((silent+1)); bad "interrupted archive, byte $off flipped: SILENT (resume exit 0, archive differs)"
      echo "$line"
      [[ -n ${CS_CORRUPT_KEEP:-} ]] && { cp "flipped-$off.h5" "$CS_CORRUPT_KEEP/silent-int-$off.h5"; cp int.h5.journal "$CS_CORRUPT_KEEP/silent-int-$off.h5.journal"; }
    fi
  done < <(grep '^resumed-' cmp.out)
  (( recovered + silent == ${#resumed[@]} )) && ok || { bad "archive_compare.py --each did not judge every resume:"; cat cmp.out; }
fi
echo "interrupted archive: $n_int flips: $refused refused, $recovered recovered, $silent silent"
[[ $silent -eq 0 ]] && ok

finish
