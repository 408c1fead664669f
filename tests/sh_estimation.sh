#!/usr/bin/env bash
# The teacher task end to end (docs/MODELS.md, "Estimation"): bad teacher
# specs are refused naming file, line and key (exit 2); a tiny sweep of
# family mha (tests/specs/estimation-tiny.ini) lands in a format_version 6
# archive with one /estimation row per cell (info counts them), no /curvature rows and NaN
# accuracies, the same bits on 1, 2 and 3 ranks; every row's fn_error and
# Voronoi loss agree with tests/estim_check.py's independent rebuild from
# /params; the misspecified cells (H* = 4 > H = 3) are flagged; ungated
# cells are trained once for both gate values; `train` says there is no
# curvature.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
PY=/usr/bin/python3
spec="$src/tests/specs/estimation-tiny.ini"

# 1. bad teacher specs: exit 2, file:line or --set, section and key named
refuse() { # NAME PATTERN SET...
  local name=$1 pattern=$2; shift 2
  local sets=(); for s in "$@"; do sets+=(--set "$s"); done
  "$bin" check "$spec" "${sets[@]}" >out.txt 2>&1
  check "$name" 2 $? "$pattern" out.txt
}
refuse negative-noise "\[task\] noise: -1 is out of range" task.noise=-1
refuse zero-restarts "\[train\] restarts: 0 is out of range" train.restarts=0
refuse teacher-other-family "estimation-tiny.ini:13: \[grid\] task: teacher plants a family mha teacher, but family self" model.family=self
refuse mha-other-task "\[model\] family: mha is the student of the teacher task, but task xor" grid.task=xor
refuse mha-depth "\[grid\] depth: 2, but family mha" grid.depth=1,2
refuse mha-field "\[curvature\] field: 4, but family mha" curvature.field=4
refuse elementwise-head-dim "\[model\] width: 6 with heads 3 is a head dimension of 2" model.width=6
refuse heads-divide "\[model\] heads: 4 does not divide width 3" model.heads=4

# 2. the sweep on 1, 2 and 3 ranks: the same bits
for np in 1 2 3; do
  if mpi $np "$bin" run "$spec" -o est$np.h5 >run$np.txt 2>&1; then ok; else bad "run on $np ranks"; cat run$np.txt; fi
done
for np in 2 3; do
  if cmp_archives est1.h5 est$np.h5 >cmp.txt; then ok; else bad "1 vs $np ranks"; cat cmp.txt; fi
done

# 3. the archive's contents
if $PY - est1.h5 <<'PYEOF'; then ok; else bad "archive contents"; fi
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
fail = []
def check(c, msg):
    if not c: fail.append(msg)
check(int(f.attrs["format_version"]) == 6, "format_version 6")
cells, est = f["cells"][()], f["estimation"][()]
check(len(cells) == 12 and (cells["status"] == b"done").all(), "12 done cells")
check(len(f["curvature"]) == 0 and len(f["curves"]) == 0, "no /curvature, no /curves rows")
check(np.isnan(cells["train_acc"]).all() and np.isnan(cells["test_acc"]).all(), "NaN accuracies")
check(sorted(est["cell_id"]) == list(range(12)), "one /estimation row per cell")
e = est[np.argsort(est["cell_id"])]
for k in ("grad_norm", "train_mse", "teacher_mse", "fn_error", "param_error"):
    check(np.isfinite(e[k]).all() and (e[k] >= 0).all(), k + " finite, >= 0")
check((cells["train_loss"] == e["train_mse"]).all(), "train_loss is train_mse")
check((e["misspecified"] == (cells["teacher_heads"] == 4)).all(), "misspecified iff H* = 4 > H = 3")
check((e["restarts"] == 2).all() and ((e["kept"] >= 0) & (e["kept"] < 2)).all(), "restarts, kept")
check((e["steps"] <= e["steps_total"]).all() and (e["steps_total"] <= 2 * 201).all(), "steps")
# ungated: the same bits at g2 and g5 (cells 0..3: ungated x g2, g5 x H* 2, 4)
ung = e[:4]
for k in ("fn_error", "param_error", "train_mse"):
    check(ung[k][0] == ung[k][2] and ung[k][1] == ung[k][3], "ungated %s equal across gates" % k)
for m in fail: print("FAIL:", m)
sys.exit(1 if fail else 0)
PYEOF

# info counts the /estimation rows the archive holds (12, as h5py read above)
"$bin" info est1.h5 >info.txt 2>&1
check info-tables 0 $? "^tables .*/curvature 0 rows, .*/estimation 12 rows, /gates 0 rows" info.txt

# 4. the independent rebuild
if $PY "$src/tests/estim_check.py" est1.h5 >check.txt 2>&1 && grep -q "12 rows checked, 0 differences" check.txt; then ok
else bad "estim_check"; cat check.txt; fi

# 5. train: the estimator's numbers, and no curvature table
"$bin" train "$spec" --cell 5 >train.txt 2>&1
check train-estimation 0 $? "no curvature: the mha family has no input-coordinate surface" train.txt
grep -q "^train_mse .* fn_error .* param_error" train.txt && ok || { bad "train: no errors printed"; cat train.txt; }

finish
