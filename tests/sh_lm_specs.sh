#!/usr/bin/env bash
# The lm family's spec keys (docs/SPEC.md): every refusal names file:line
# and key with exit 2 and writes nothing (vocab < 4, seq_len out of range or
# too short for the task, heads not dividing width, field > 0, a [team] grid
# other than 1x1, arch mlp, a point task with family lm, a sequence task with
# another family); then a small lm spec trains one cell (`train --cell`) and
# runs as a sweep whose archive holds the first-token share, bitwise the
# same on 2 ranks.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"

# expect NAME PATTERN FILE: exit 2, a message matching PATTERN, no archive
expect() {
  "$bin" run "$3" -o x.h5 >out.txt 2>err.txt; local got=$?
  if [[ $got -ne 2 ]]; then bad "$1: exit $got, wanted 2"; cat err.txt; return; fi
  if ! grep -qE -- "$2" err.txt; then bad "$1: message does not match '$2'"; cat err.txt; return; fi
  if [[ -e x.h5 ]]; then bad "$1: a refused spec wrote an archive"; rm -f x.h5; return; fi
  ok
}
lm='[grid]\ntask = bigram-backcopy\n[model]\nfamily = lm\n'
printf '%b[task]\nvocab = 3\n' "$lm" > v3.ini
expect vocab-small "v3.ini:6: \[task\] vocab: .*\[4, 1048576\]" v3.ini
printf '%b[task]\nseq_len = 1\n' "$lm" > t1.ini
expect seq-len-small "t1.ini:6: \[task\] seq_len: .*\[2, 256\]" t1.ini
printf '%b[task]\nseq_len = 257\n' "$lm" > t257.ini
expect seq-len-large "t257.ini:6: \[task\] seq_len" t257.ini
printf '%b[task]\nseq_len = 2\n' "$lm" > t2.ini
expect seq-len-task "t2.ini:6: \[task\] seq_len: 2 is too short for task bigram-backcopy" t2.ini
printf '[grid]\ntask = associative-recall\nseq_len = 8, 4\n[model]\nfamily = lm\n' > ar4.ini
expect seq-len-ar "ar4.ini:3: \[grid\] seq_len: 4 is too short for task associative-recall" ar4.ini
printf '%bwidth = 32\nheads = 3\n' "$lm" > heads.ini
expect heads "heads.ini:6: \[model\] heads: 3 does not divide width 32" heads.ini
printf '%b[curvature]\nfield = 8\n' "$lm" > field.ini
expect field "field.ini:6: \[curvature\] field: 8 .*family lm" field.ini
printf '%b[team]\ngrid = 1x2\n' "$lm" > team.ini
expect team "team.ini:6: \[team\] grid: 1x2, but family lm" team.ini
printf '[grid]\narch = gated, mlp\ntask = bigram-backcopy\n[model]\nfamily = lm\n' > mlp.ini
expect mlp "mlp.ini:5: \[model\] family: lm has no mlp block" mlp.ini
printf '[grid]\ntask = circles\n[model]\nfamily = lm\n' > point.ini
expect point-task "point.ini:4: \[model\] family: lm trains on token sequences, but the point task circles" point.ini
printf '[grid]\ntask = circles, bigram-backcopy\n[model]\nfamily = self\n' > seqself.ini
expect seq-task "seqself.ini:2: \[grid\] task: bigram-backcopy is a token-sequence task, but family self" seqself.ini
printf '%bmlp_ratio = -1\n' "$lm" > ratio.ini
expect mlp-ratio "ratio.ini:5: \[model\] mlp_ratio" ratio.ini

# a small lm spec: one cell, then the sweep on one rank
{ printf '[sweep]\nname = lm-small\noutput = lm.h5\n[grid]\narch = ungated, gated\ntask = bigram-backcopy\n'
  cat "$src/tests/specs/lm-small-body.ini"; } > lm.ini
if "$bin" train lm.ini --cell 1 >train.txt 2>train.err; then ok; else bad "train --cell 1"; cat train.err; fi
grep -qE "^status done" train.txt && ok || { bad "train: no status done"; cat train.txt; }
grep -qE "sink_mass" train.txt && ok || { bad "train: no first-token share"; cat train.txt; }
if "$bin" run lm.ini -o lm.h5 >run.txt 2>run.err; then ok; else bad "run"; cat run.err; fi
if /usr/bin/python3 - lm.h5 <<'PY'; then ok; else bad "archive: first-token share"; fi
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
c = f["curvature"][()]
s = np.asarray(c["sink_mass"]); m = np.asarray(c["max_attn"])
assert len(s) == 2, s
assert np.all((s > 0) & (s < 1)), s
assert np.all(m >= s - 1e-15), (m, s)
PY
if mpi 2 "$bin" run lm.ini -o lm2.h5 >run2.txt 2>run2.err; then ok; else bad "run on 2 ranks"; cat run2.err; fi
if cmp_archives lm.h5 lm2.h5 >cmp.txt; then ok; else bad "1 and 2 ranks differ"; cat cmp.txt; fi
finish
