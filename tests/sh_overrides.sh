#!/usr/bin/env bash
# --set overrides and `curvsweep check` (docs/SPEC.md, "Overrides" and
# "curvsweep check"): an override runs what the same key written in the file
# runs (train --cell through both paths gives the same numbers), the archive
# stores the spec with the overrides written in (a dry run with the same --set
# resumes it, one without is another spec); a bad --set (unknown key, bad
# value, malformed, missing) exits 2 naming `--set section.key` and writes
# nothing; check lists every error of a spec with three (exit 2) and
# summarises a good one (exit 0).
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
cp "$src/tests/specs/demo-small.ini" base.ini
# the same spec with the overrides below written by hand: epochs 3 in
# [train], label_noise a new last axis of [grid]
sed -e 's/^epochs     = 5/epochs = 3/' -e 's/^seed  = 0..1/seed  = 0..1\nlabel_noise = 0, 0.1/' \
  base.ini >hand.ini
sets=(--set train.epochs=3 --set 'grid.label_noise=0,0.1')

# one cell through both paths: the same cell, the same numbers
"$bin" train base.ini "${sets[@]}" --cell 5 >t_set.txt 2>&1 && ok || bad "train --set: $(tail -n 3 t_set.txt)"
"$bin" train hand.ini --cell 5 >t_hand.txt 2>&1 && ok || bad "train hand.ini: $(tail -n 3 t_hand.txt)"
grep -q '^cell 5 of 16: arch=ungated depth=2 task=linear seed=0 label_noise=0.1' t_set.txt && ok \
  || bad "cell 5 with --set: $(head -n 1 t_set.txt)"
# every line but the wall time
if diff <(sed 's/wall [0-9.]* s//' t_set.txt) <(sed 's/wall [0-9.]* s//' t_hand.txt) >t_diff.txt; then ok
else bad "train --set and the hand-written spec differ:"; cat t_diff.txt; fi

# the archive records the overrides and resumes with them
"$bin" run base.ini "${sets[@]}" -o set.h5 >run.log 2>&1 && ok || bad "run --set: $(tail -n 3 run.log)"
grep -q '16 cells: 16 done' run.log && ok || bad "run --set cells: $(tail -n 1 run.log)"
/usr/bin/python3 -c 'import h5py, sys; t = h5py.File(sys.argv[1], "r")["spec"][()]
t = t[0] if hasattr(t, "__len__") and not isinstance(t, (bytes, str)) else t
sys.stdout.write(t.decode() if isinstance(t, bytes) else t)' set.h5 >stored.ini
grep -q '^epochs = 3  ; --set train.epochs (the file had: epochs     = 5)$' stored.ini && ok \
  || bad "stored spec lacks the replaced epochs line:"$'\n'"$(cat stored.ini)"
grep -A1 '^seed  = 0..1$' stored.ini | grep -q '^label_noise = 0,0.1  ; --set grid.label_noise$' && ok \
  || bad "stored spec lacks the new label_noise axis after seed"
grep -q '^;   --set grid.label_noise=0,0.1$' stored.ini && ok || bad "stored spec does not list the overrides"
"$bin" check stored.ini >stored_check.txt 2>&1 && grep -q 'ok: 16 cells = arch\[2\] x depth\[2\] x task\[1\] x seed\[2\] x label_noise\[2\]' stored_check.txt \
  && ok || bad "the stored spec is not the 16-cell spec: $(cat stored_check.txt)"
"$bin" run base.ini "${sets[@]}" -o set.h5 --dry-run >dry_same.txt 2>&1
grep -q '^to run   0 of 16 cells' dry_same.txt && ok || bad "same --set does not resume: $(head -n 4 dry_same.txt)"
"$bin" run base.ini -o set.h5 --dry-run >dry_none.txt 2>&1
grep -q 'holds another spec' dry_none.txt && ok || bad "without --set it is the same spec: $(grep '^archive' dry_none.txt)"

# bad overrides: exit 2, the place named, nothing written
badset() { # NAME PATTERN ARGS...
  local name=$1 pattern=$2; shift 2
  "$bin" run base.ini -o bad.h5 "$@" >bad.txt 2>&1
  check "$name" 2 $? "$pattern" bad.txt
  [[ ! -e bad.h5 ]] && ok || bad "$name wrote bad.h5"
}
badset "unknown key" "^curvsweep: --set train.epchs: \[train\] epchs: unknown key; did you mean epochs?" \
  --set train.epchs=3
badset "bad value" "^curvsweep: --set train.epochs: \[train\] epochs: 'three' is not an integer; allowed: an integer >= 1" \
  --set train.epochs=three
badset "malformed" "^curvsweep: --set epochs=3: not section.key=value; allowed: --set section.key=value" \
  --set epochs=3
badset "unknown section" "^curvsweep: --set trian.epochs: unknown section \[trian\]; did you mean \[train\]?" \
  --set trian.epochs=3
badset "axis and fixed" "^curvsweep: --set model.width: \[model\] width: also an axis in \[grid\] at --set grid.width;" \
  --set grid.width=4,8 --set model.width=4
badset "missing value" "^curvsweep run: --set needs section.key=value" --set
"$bin" train base.ini --cell 0 --set model.heads=3 >bad.txt 2>&1
check "train bad --set" 2 $? "^curvsweep: --set model.heads: \[model\] heads: 3 does not divide width 8 (\[model\] line 21)" bad.txt
"$bin" run base.ini -o bad.h5 --dry-run --set curvature.points=0 >bad.txt 2>&1
check "dry-run bad --set" 2 $? "^curvsweep: --set curvature.points: \[curvature\] points: 0 is out of range" bad.txt

# check: every error of a spec with three, in line order
cat >three.ini <<'EOF'
[grid]
arch = gated, ungatd
[train]
epochs = 0
lr 0.1
EOF
"$bin" check three.ini >check3.out 2>check3.err
check "check three errors" 2 $? "^curvsweep check: 3 errors in three.ini$" check3.err
grep '^three.ini:' check3.err | cut -d: -f2 | tr '\n' ' ' >lines.txt
[[ $(cat lines.txt) == "2 4 5 " ]] && ok || bad "error lines '$(cat lines.txt)', wanted 2 4 5:"$'\n'"$(cat check3.err)"
grep -q "^three.ini:2: \[grid\] arch: unknown value 'ungatd'; did you mean ungated?" check3.err && ok || bad "arch error"
grep -q "^three.ini:4: \[train\] epochs: 0 is out of range; allowed: an integer >= 1" check3.err && ok || bad "epochs error"
grep -q "^three.ini:5: syntax error: 'lr 0.1' is not key = value" check3.err && ok || bad "syntax error"
# run stops at the first of them
"$bin" run three.ini -o three.h5 >run3.txt 2>&1
check "run first error" 2 $? "^curvsweep: three.ini:2: \[grid\] arch" run3.txt
[[ $(grep -c 'three.ini:' run3.txt) -eq 1 ]] && ok || bad "run reported more than the first error"
# check with --set: the override's errors with the file's
"$bin" check three.ini --set train.epochs=x --set grid.depth=1..99 >check4.out 2>check4.err
check "check with --set" 2 $? "^curvsweep check: 4 errors in three.ini with its --set overrides$" check4.err
grep -q "^--set train.epochs: \[train\] epochs: 'x' is not an integer" check4.err && ok || bad "--set error in check"
grep -q "^--set grid.depth: \[grid\] depth: 99 is out of range; allowed: an integer in \[1, 64\]" check4.err \
  && ok || bad "--set axis error in check:"$'\n'"$(cat check4.err)"

# a good spec: one line, exit 0
"$bin" check base.ini "${sets[@]}" >good.out 2>good.err
check "check good" 0 $? "^base.ini: ok: 16 cells = arch\[2\] x depth\[2\] x task\[1\] x seed\[2\] x label_noise\[2\]; family memory; largest cell about .* MiB" good.out
[[ ! -s good.err ]] && ok || bad "check of a good spec wrote to stderr: $(cat good.err)"
"$bin" check >usage.txt 2>&1
check "check without a spec" 2 $? "missing SPEC.ini" usage.txt
"$bin" check --help >help.txt 2>&1
check "check --help" 0 $? "every error in it" help.txt
finish
