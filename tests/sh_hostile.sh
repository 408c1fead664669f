#!/usr/bin/env bash
# The hostile-archive corpus (issue 28; docs/SECURITY.md, "Archives"):
# tests/hostile_archives.py crafts archives from an honest one (one-value
# attributes stored as arrays, external raw storage, external and soft
# links, a virtual dataset, a hard-link cycle, declared extents far beyond
# what is stored, oversized /params and /fields datasets, groups that read
# but are wrong, /points/index rows that lie, metrics outside their domain,
# cells outside the spec's grid). Every archive-reading command (info, info
# --check, analyze, merge, merge --salvage, run as a resume) must refuse
# each one: exit 2, a message naming the object, no crash, within 10 s, no
# output written, and no change to any file outside the test directory
# (the victims the archives point at: a file external storage would write,
# a FIFO an external link would open, an archive a link would read). An
# archive damaged in one cell's data (kind "damage") is salvaged instead:
# `merge --salvage` exits 0 listing that cell pending, naming the object,
# and writes an archive that checks intact; `info` reads no per-cell group
# and `analyze` no /params (kinds "fields", "params": they exit 0 there).
# CS_HOSTILE_CASES=REGEX: only the cases it matches; CS_HOSTILE_SECONDS: the
# bound per command (10; the sanitizer pass of scripts/test.sh gives 60, its
# MPI start and leak check alone take seconds on a loaded machine).
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
export CS_GNUPLOT=/nonexistent # no plots: the analyses are refused anyway
spec="$src/tests/specs/hostile.ini"
victims=$(mktemp -d) # outside the test directory
trap 'pkill -9 -f "$tmp" 2>/dev/null; rm -rf "$tmp" "$victims"' EXIT

"$bin" run "$spec" -o base.h5 >/dev/null 2>&1 && ok || bad "run of $spec"
"$bin" info --check base.h5 >/dev/null 2>&1 && ok || bad "the honest base archive does not check intact"
/usr/bin/python3 "$src/tests/hostile_archives.py" base.h5 corpus "$victims" >cases.txt ||
  { bad "tests/hostile_archives.py failed"; finish; exit; }
# the victims' state, compared after every command (two processes, no cmp,
# no date: a command's own cost dominates each check, the test's stays small)
victim_sums() { sha256sum "$victims/victim.bin" "$victims/other.h5"; stat -c '%n %F' "$victims/fifo"; }
victims_before=$(victim_sums)

limit=${CS_HOSTILE_SECONDS:-10}
# expect RC CASE OBJECT CMD ARGS...: exit RC within $limit s naming OBJECT, victims unchanged
expect() {
  local want=$1 case=$2 obj=$3 rc t0 t1 what
  shift 3
  what="$case: $*"
  t0=${EPOCHREALTIME/[.,]/}
  timeout -k 5 "$limit" "$@" >out.txt 2>&1 </dev/null; rc=$?
  t1=${EPOCHREALTIME/[.,]/}
  { printf '== %s\n' "$what"; cat out.txt; } >>terminal.log
  if (( rc == 124 || rc == 137 )); then bad "$what: hung (killed after $limit s)"
  elif (( rc > 128 )); then bad "$what: crashed (signal $((rc - 128)))"; cat out.txt
  elif (( rc != want )); then bad "$what: exit $rc, wanted $want"; head -5 out.txt
  elif ! grep -qF -- "$obj" out.txt; then bad "$what: the refusal does not name $obj"; head -5 out.txt
  else ok
  fi
  (( (t1 - t0) / 1000 < limit * 1000 )) || bad "$what: took $(( (t1 - t0) / 1000 )) ms"
  now=$(victim_sums)
  [[ $now == "$victims_before" ]] || { bad "$what: a file outside the test directory changed"; victims_before=$now; }
}

while read -r case obj kind; do
  [[ $case =~ ${CS_HOSTILE_CASES:-.} ]] || continue
  a="corpus/$case.h5"
  # info (a summary) reads no per-cell group; analyze no /params
  info_rc=2 analyze_rc=2 named=$obj
  [[ $kind == fields || $kind == params ]] && info_rc=0
  [[ $kind == params ]] && analyze_rc=0
  (( info_rc )) || named=""
  expect $info_rc "$case" "$named" "$bin" info "$a"
  expect 2 "$case" "$obj" "$bin" info --check "$a"
  (( analyze_rc )) && named=$obj || named=""
  expect $analyze_rc "$case" "$named" "$bin" analyze "$a" -o "rep-$case"
  expect 2 "$case" "$obj" "$bin" merge "merged-$case.h5" "$a"
  [[ ! -e "merged-$case.h5" ]] && ok || bad "$case: a refused merge wrote its output"
  cp "$a" "resume-$case.h5"
  expect 2 "$case" "$obj" "$bin" run "$spec" -o "resume-$case.h5"
  if [[ $kind != refuse ]]; then
    expect 0 "$case" "$obj" "$bin" merge --salvage "salvaged-$case.h5" "$a"
    grep -q "^pending   cell " out.txt && ok || bad "$case: the salvage lists no damaged cell"
    "$bin" info --check "salvaged-$case.h5" >/dev/null 2>&1 && ok ||
      bad "$case: the salvaged archive does not check intact"
  else
    expect 2 "$case" "$obj" "$bin" merge --salvage "salvaged-$case.h5" "$a"
    [[ ! -e "salvaged-$case.h5" ]] && ok || bad "$case: a refused salvage wrote its output"
  fi
done <cases.txt
[[ $(wc -l <cases.txt) -ge 30 ]] && ok || bad "the corpus has $(wc -l <cases.txt) cases"

# ---- Second audit (docs/SECURITY.md, "Hostile archives: second audit") ----
# Each command on each case: its exit status, the object named, under 2 s
# and 200 MB of RSS (/usr/bin/time; the sanitizer pass, which sets
# CS_HOSTILE_SECONDS, keeps only its time bound), and no file outside the
# command's output changed (sha256 of the case's files before and after).
strict_s=${CS_HOSTILE_SECONDS:-2} strict_kb=204800
[[ -n ${CS_HOSTILE_SECONDS:-} ]] && strict_kb=0
case_sums() { local f; for f in "$@"; do if [[ -f $f ]]; then sha256sum "$f"; else stat -c '%n %F' "$f"; fi; done; }
# strict WANT NAME OBJECT "FILES..." CMD ARGS...
strict() {
  local want=$1 name=$2 obj=$3 files=$4 rc t0 t1 kb before what
  shift 4
  what="$name: $*"
  # shellcheck disable=SC2086 # files: a list of names without spaces
  before=$(case_sums $files)
  rm -f rss.txt # a killed /usr/bin/time writes none: never read the last command's
  t0=${EPOCHREALTIME/[.,]/}
  timeout -k 5 "$strict_s" /usr/bin/time -f %M -o rss.txt "$@" >out.txt 2>&1 </dev/null; rc=$?
  t1=${EPOCHREALTIME/[.,]/}
  { printf '== %s\n' "$what"; cat out.txt; } >>terminal.log
  kb=$(tail -n 1 rss.txt 2>/dev/null)
  if (( rc == 124 || rc == 137 )); then bad "$what: hung (killed after $strict_s s)"
  elif (( rc > 128 )); then bad "$what: crashed (signal $((rc - 128)))"
  elif (( rc != want )); then bad "$what: exit $rc, wanted $want"; head -3 out.txt
  elif ! grep -qF -- "$obj" out.txt; then bad "$what: the output does not name $obj"; head -3 out.txt
  else ok
  fi
  (( (t1 - t0) / 1000 < strict_s * 1000 )) || bad "$what: took $(( (t1 - t0) / 1000 )) ms"
  [[ $kb =~ ^[0-9]+$ ]] || kb=0
  (( strict_kb == 0 || kb < strict_kb )) && ok || bad "$what: $kb KB of RSS"
  # shellcheck disable=SC2086
  [[ $(case_sums $files) == "$before" ]] && ok || bad "$what: a file outside the output changed"
}
# the seven commands on archive A (WANTS: seven exit statuses in the order
# info, info --check, analyze, export, merge, merge --salvage, run -o)
seven() {
  local name=$1 a=$2 obj=$3 files=$4 w
  read -r -a w <<<"$5"
  strict "${w[0]}" "$name" "$obj" "$files" "$bin" info "$a"
  strict "${w[1]}" "$name" "$obj" "$files" "$bin" info --check "$a"
  strict "${w[2]}" "$name" "$obj" "$files" "$bin" analyze "$a" -o "rep2-$name"
  strict "${w[3]}" "$name" "$obj" "$files" "$bin" export "$a" --csv "csv2-$name"
  strict "${w[4]}" "$name" "$obj" "$files" "$bin" merge "m2-$name.h5" "$a"
  strict "${w[5]}" "$name" "$obj" "$files" "$bin" merge --salvage "s2-$name.h5" "$a"
  strict "${w[6]}" "$name" "$obj" "$files" "$bin" run "$spec" -o "$a"
}
# 15,000 nested groups (2.3 MB): every command refuses at the structure walk
seven nested corpus/nested-15000.h5 /params/0/n/n/n/n corpus/nested-15000.h5 "2 2 2 2 2 2 2"
# an unwritten 1 GiB /params tensor in a file padded with 200 MB of holes:
# refused where /params is read (info and export read none, analyze none of
# this family; the salvage lists cell 0 pending); the rest exit 0 at once
seven sparse corpus/params-sparse.h5 "" corpus/params-sparse.h5 "0 2 0 0 2 0 2"
strict 0 sparse-salvage /params/0/embed/W corpus/params-sparse.h5 "$bin" merge --salvage s3.h5 corpus/params-sparse.h5
strict 2 sparse-check "/params/0/embed/W declares 1073741824 bytes but stores 0" corpus/params-sparse.h5 \
  "$bin" info --check corpus/params-sparse.h5
# a FIFO as the archive: refused unopened by all seven
mkfifo fifo.h5
seven fifo fifo.h5 "fifo.h5 is not a regular file (a FIFO)" fifo.h5 "2 2 2 2 2 2 2"
# a FIFO as the journal: merge and the resume refuse it, nothing blocks
cp base.h5 y.h5 && mkfifo y.h5.journal
seven fifo-journal y.h5 "" "y.h5 y.h5.journal" "0 0 0 0 2 0 2"
strict 2 fifo-journal-merge "y.h5.journal of the archive y.h5 is not a regular file (a FIFO)" \
  "y.h5 y.h5.journal" "$bin" merge m3.h5 y.h5
strict 2 fifo-journal-run "y.h5.journal" "y.h5 y.h5.journal" "$bin" run "$spec" -o y.h5
# journal records with a valid CRC and wild values (tests/support/journal_forge.c):
# the resume refuses the record by index and cell before it writes anything;
# merge refuses the interrupted archive (its dirty journal)
for k in test-acc-7 nan-loss prefixes-64 field-512; do
  cp base.h5 "j-$k.h5"
  cell=$("${CS_BUILD_DIR:?}/journal_forge" "$spec" "j-$k.h5" "$k") || { bad "journal_forge $k failed"; continue; }
  strict 2 "journal-$k" "(cell $cell) is refused" "j-$k.h5 j-$k.h5.journal" "$bin" run "$spec" -o "j-$k.h5"
  strict 2 "journal-$k-merge" "interrupted" "j-$k.h5 j-$k.h5.journal" "$bin" merge "jm-$k.h5" "j-$k.h5"
  strict 0 "journal-$k-info" "" "j-$k.h5 j-$k.h5.journal" "$bin" info "j-$k.h5"
done
# a resume that reaches the repair step (an unfinished /curvature tail past
# committed_rows, the journal not dirty) with a wild record: refused before
# the repair, committed_rows and every byte left alone
cp base.h5 r.h5
rcell=$("${CS_BUILD_DIR:?}/journal_forge" "$spec" r.h5 test-acc-7) || bad "journal_forge on r.h5 failed"
printf '\0\0\0\0' | dd of=r.h5.journal bs=1 seek=108 conv=notrunc status=none # the dirty flag (docs/ARCHIVE.md, "Journal")
/usr/bin/python3 -c 'import sys, h5py; d = h5py.File(sys.argv[1], "r+")["curvature"]; d.resize((d.shape[0] + 3,))' r.h5 ||
  bad "crafting r.h5 failed"
committed() { /usr/bin/python3 -c 'import sys, h5py; d = h5py.File(sys.argv[1], "r")["curvature"]; print(int(d.attrs["committed_rows"]), d.shape[0])' r.h5; }
rows_before=$(committed)
strict 2 repair-step "(cell $rcell) is refused" "r.h5 r.h5.journal" "$bin" run "$spec" -o r.h5
[[ $(committed) == "$rows_before" ]] && ok || bad "the refused resume changed committed_rows or the extent ($rows_before -> $(committed))"
# a symbolic link at -o into another archive of the same sweep (a pending
# cell there): refused naming the link, the other archive unchanged
cp base.h5 other.h5
/usr/bin/python3 -c 'import sys, h5py; f = h5py.File(sys.argv[1], "r+"); c = f["cells"][:]; c[3]["status"] = b"pending"; f["cells"][:] = c' other.h5
ln -s other.h5 link.h5
strict 2 symlink-o "link.h5 is a symbolic link" "other.h5" "$bin" run "$spec" -o link.h5
[[ ! -e other.h5.journal && ! -e link.h5.journal ]] && ok || bad "a refused resume through a link left a journal"

# A table whose extent declares 2^40 rows past its committed ones (no
# write leaves such a tail; cutting it would visit every chunk slot): the
# resume refuses at once (exit 2 within the bound, naming the table) and
# leaves the archive byte-identical and no journal behind.
for t in curvature curves points/index; do
  a="tail-${t//\//-}.h5"
  cp base.h5 "$a"
  /usr/bin/python3 -c 'import sys, h5py; h5py.File(sys.argv[1], "r+")[sys.argv[2]].resize((1 << 40,))' "$a" "$t" ||
    bad "crafting $a failed"
  before=$(sha256sum <"$a")
  expect 2 "$a" "/$t declares 1099511627776 rows" "$bin" run "$spec" -o "$a"
  [[ $(sha256sum <"$a") == "$before" ]] && ok || bad "$a: a refused resume changed the archive"
  [[ ! -e "$a.journal" ]] && ok || bad "$a: a refused resume left a journal"
done

# Untrusted strings (docs/SECURITY.md, "Terminal output", "Exported CSV"):
# an archive that reads, with an ESC sequence, C1 controls (as UTF-8 and as
# raw bytes) and an invalid byte in its root attribute `created`, and cell
# messages a spreadsheet would take for formulas; and an archive of a sweep
# whose name holds C1 controls. Every command reads them (exit 0); no raw
# control character of any command's output above or below reaches the
# terminal, and no exported CSV field would be evaluated.
cp base.h5 strings.h5
/usr/bin/python3 - strings.h5 <<'PY' || bad "crafting strings.h5 failed"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    cells = f["cells"][:]
    cells[0]["message"] = b'=HYPERLINK("http://example.invalid","x")\x1b[2J\xc2\x9b\x9b'
    cells[1]["message"] = b"@SUM(1)"
    cells[2]["message"] = b"+1+2"
    cells[3]["message"] = b"-2+3"
    f["cells"][:] = cells
    a = f.attrs.get_id("created")
    n = a.get_type().get_size()
    a.write(np.frombuffer(b"2026\x1b]0;t\x07\xc2\x9b31m\x9b\xff".ljust(n, b"\0")[:n], dtype="S%d" % n))
PY
printf '[sweep]\nname = c1\302\23331m\2337mX\n[grid]\nseed = 0..1\n[train]\nepochs = 1\n[curvature]\npoints = 8\n' >c1.ini
"$bin" run c1.ini -o c1.h5 >/dev/null 2>&1 && ok || bad "run of a spec named with C1 controls"
expect 0 strings-info "" "$bin" info strings.h5
expect 0 strings-check "" "$bin" info --check strings.h5
expect 0 strings-export "" "$bin" export strings.h5 --csv strings-csv
expect 0 strings-analyze "" "$bin" analyze strings.h5 -o strings-report
expect 0 strings-merge "" "$bin" merge strings-merged.h5 strings.h5
expect 0 c1-info "" "$bin" info c1.h5
expect 0 c1-merge "" "$bin" merge c1-merged.h5 c1.h5
grep -qF '2026\x1B]0;t\x07\xC2\x9B31m\x9B\xFF' terminal.log && ok ||
  bad "info does not show the created attribute escaped as \\xHH"
/usr/bin/python3 "$src/tests/untrusted_text_check.py" --terminal terminal.log --csv strings-csv/*.csv &&
  ok || bad "raw control characters reached the terminal, or an exported field is a formula (above)"
grep -qF "\"'=HYPERLINK(" strings-csv/cells.csv && ok || bad "the formula message is not kept, neutralised, in cells.csv"
finish "$(wc -l <cases.txt) hostile archives x 6 commands"
