#!/usr/bin/env bash
# The self family end to end (docs/MODELS.md): a sweep over arch x gate =
# g1..g5 on 2 ranks lands in a format_version 6 archive with the
# attention-sink statistic; ungated cells are identical at every gate value;
# curvature of the CLS representation and the sink statistic agree with the
# independent reference (tests/reference/curvature_ref.py: 50-digit jets
# and a float64 numpy rebuild from /params); analyze runs on the new axes;
# a format_version 2 archive (memory family, no sink columns) is still read.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
PY=/usr/bin/python3

# 1. the sweep, on 2 ranks
if mpi 2 "$bin" run "$src/tests/specs/self-gates.ini" \
     -o gates.h5 2>run.err; then ok; else bad "run"; cat run.err; fi

# 2. the archive: version, gate column, sink statistic, ungated identical across gates, /params
if $PY - gates.h5 <<'PYEOF'; then ok; else bad "archive contents"; fi
import os, sys, h5py, numpy as np
sys.path.insert(0, os.path.join(os.environ["CS_SOURCE_DIR"], "tests"))
from archive_points import cell_points
f = h5py.File(sys.argv[1], "r")
fail = []
def check(c, msg):
    if not c: fail.append(msg)
check(int(f.attrs["format_version"]) == 6, "format_version 6")
cells, cv = f["cells"][()], f["curvature"][()]
check(len(cells) == 15 and (cells["status"] == b"done").all(), "15 done cells")
check([g.decode() for g in cells["gate"][:5]] == ["g1", "g2", "g3", "g4", "g5"], "gate column")
T = 3  # m + 1 tokens
for name in ("sink_mass", "max_attn", "sink_headmax"):
    v = cv[name]
    check(np.isfinite(v).all() and (v > 0).all() and (v < 1).all(), name + " finite in (0, 1)")
check((cv["max_attn"] >= 1.0 / T - 1e-15).all(), "max_attn >= 1/T")
check((cv["max_attn"] >= cv["sink_mass"] - 1e-15).all(), "max_attn >= sink_mass")
check((cv["sink_headmax"] >= cv["sink_mass"] - 1e-15).all(), "sink_headmax >= sink_mass")
# ungated ignores gate: cells 0..4 (ungated, g1..g5) bitwise equal
ung = cells[:5]
for col in ("train_loss", "train_acc", "test_acc", "n_params"):
    check(len(set(ung[col].tolist())) == 1, "ungated %s equal across gates" % col)
rows = [cv[cv["cell_id"] == c] for c in range(5)]
for name in cv.dtype.names[2:]:
    for c in range(1, 5):
        check(np.array_equal(rows[0][name], rows[c][name], equal_nan=True),
              "ungated cell %d /curvature %s equals g1's" % (c, name))
for c in range(1, 5):
    check(np.array_equal(cell_points(f, 0)["S"], cell_points(f, c)["S"], equal_nan=True),
          "ungated cell %d /points S equals g1's" % c)
    check(np.array_equal(f["params/0/layer1/Wv"][()], f["params/%d/layer1/Wv" % c][()]),
          "ungated cell %d trained Wv equals g1's" % c)
# gated cells differ by gate position (the gate is not inert)
check(len(set(cells["test_acc"][5:10].tolist()) | set(cells["train_loss"][5:10].tolist())) > 2,
      "gated cells differ across gate positions")
names = [n.decode() for n in f["params/5"].attrs["tensors"]]
want = ["tokens/W", "tokens/b", "cls"]
for l in range(2):
    want += ["layer%d/%s" % (l, t) for t in ("Wq", "Wk", "Wv", "Wg", "Wo", "bo", "bg", "ln_g", "ln_b")]
want += ["readout/W", "readout/b"]
check(names == want, "/params names %s" % names)
check(f["params/10/layer0/Wg"].shape == (2, 8) and f["params/5/layer0/Wg"].shape == (8, 8),
      "W_g shapes (headwise H x d, gated d x d)")
for m in fail: print(m)
sys.exit(1 if fail else 0)
PYEOF

# 3. independent recomputation: S of the CLS representation at 3 points of
# ungated and every gated cell, and the sink statistic at every point
if $PY "$src/tests/reference/curvature_ref.py" gates.h5 --check --cells 0,5,6,7,8,9,10,11,12,13,14 \
     --points 3; then ok; else bad "reference recomputation"; fi

# 4. analyze on the new axes
if "$bin" analyze gates.h5 -o rep >an.out 2>an.err && [[ -s rep/index.md ]] &&
   head -1 rep/summary.csv | grep -q ",gate,"; then ok
else bad "analyze"; cat an.err; fi

# 5. format_version 2 (memory family, no sink columns): info, analyze, merge read it
"$bin" run "$src/tests/specs/sweep-small.ini" -o mem.h5 2>/dev/null || bad "memory run"
$PY - mem.h5 <<'PYEOF' || bad "make v2"
import os, sys, h5py, numpy as np
sys.path.insert(0, os.path.join(os.environ["CS_SOURCE_DIR"], "tests"))
from archive_points import drop_curvature_columns, to_group_layout
f = h5py.File(sys.argv[1], "r+")
to_group_layout(f)  # /points as a group per cell, as version 2 wrote it
drop_curvature_columns(f, ("sink_mass", "max_attn", "massive_act", "value_drain", "resid_peak", "sink_headmax"), 2)
PYEOF
if "$bin" info mem.h5 >info.out 2>&1 && grep -q "12 done" info.out; then ok; else bad "info v2"; cat info.out; fi
if CS_GNUPLOT=/nonexistent "$bin" analyze mem.h5 -o rep2 >/dev/null 2>an2.err; then ok; else bad "analyze v2"; cat an2.err; fi
if "$bin" merge merged.h5 mem.h5 2>merge.err && $PY -c "
import h5py, numpy as np, sys
f = h5py.File('merged.h5', 'r'); g = h5py.File('mem.h5', 'r')
cv, old = f['curvature'][()], g['curvature'][()]
sys.exit(0 if int(f.attrs['format_version']) == 6 and np.isnan(cv['sink_mass']).all()
         and np.isnan(cv['max_attn']).all() and np.isnan(cv['sink_headmax']).all() and np.array_equal(np.sort(cv['K_mean']), np.sort(old['K_mean'])) else 1)
"; then ok; else bad "merge of a v2 archive: NaN sink columns, curvature kept"; cat merge.err; fi
# its /points groups: checked by info --check, carried into the merge's
# /points tables bitwise (tests/archive_points.py reads both layouts)
if "$bin" info --check mem.h5 >check.out 2>&1; then ok; else bad "info --check of a v2 archive"; cat check.out; fi
if $PY - mem.h5 merged.h5 <<'PYEOF'; then ok; else bad "merge of a v2 archive: /points differ"; fi
import os, sys, h5py
sys.path.insert(0, os.path.join(os.environ["CS_SOURCE_DIR"], "tests"))
from archive_points import cell_points, point_cells
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
assert "0" in a["points"] and "index" in b["points"], "layouts"
cells = point_cells(a)
assert len(cells) == 12 and cells == point_cells(b), (cells, point_cells(b))
for c in cells:
    pa, pb = cell_points(a, c), cell_points(b, c)
    assert sorted(pa) == sorted(pb) and all(pa[k].tobytes() == pb[k].tobytes() for k in pa), c
PYEOF
# a run into an older archive with a pending cell is refused (exit 2,
# naming the remedy), the file untouched; a finished one has nothing to do
cp mem.h5 pend.h5
$PY -c "
import h5py; f = h5py.File('pend.h5', 'r+'); c = f['cells'][0]; c['status'] = b'pending'; f['cells'][0] = c"
sha=$(sha256sum < pend.h5)
"$bin" run "$src/tests/specs/sweep-small.ini" -o pend.h5 >/dev/null 2>pend.err; rc=$?
if [[ $rc -eq 2 ]] && grep -q "pend.h5 has format_version 2.*curvsweep merge NEW.h5 pend.h5" pend.err &&
   [[ "$(sha256sum < pend.h5)" == "$sha" ]]; then ok; else bad "run into a v2 archive with a pending cell: exit $rc"; cat pend.err; fi
rm -f pend.h5.journal
if "$bin" run "$src/tests/specs/sweep-small.ini" -o mem.h5 >/dev/null 2>&1 &&
   "$bin" info --check mem.h5 >/dev/null 2>&1 &&
   $PY -c "import h5py, sys; sys.exit(int(h5py.File('mem.h5', 'r').attrs['format_version']) != 2)"
then ok; else bad "run on a finished v2 archive: refused, or the archive changed version or reads damaged"; fi

finish
