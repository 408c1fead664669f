#!/usr/bin/env bash
# The lm family's extreme-token statistics end to end (docs/ARCHIVE.md,
# format_version 5 and 6; analysis/VERDICTS.md, "Attention sinks"): a tiny lm
# sweep (ungated, gated, gated-headwise x g1, g2, 2 seeds, depth 2, /params
# kept) lands in a format_version 6 archive whose /curvature carries
# max_attn, sink_headmax, massive_act, value_drain and resid_peak in their
# domain (`train --cell` prints them);
# analyze writes the section "Do gates remove the attention sink?",
# sinks.csv with its columns, the
# sink verdict rows of verdicts.csv and the sinks_* figure with the
# attention maps computed from /params. The same archive rewritten as
# format_version 5 (sink_headmax stored as max_attn, as version 5 stored
# it) reads with that value as sink_headmax and max_attn NaN: info, the
# Python loader, analyze (sinks.csv identical), merge and salvage (into
# format_version 6), mixed with the v6 archive (equal to it). Rewritten as
# format_version 4 (the three ratios dropped too) it is still read: info,
# analyze (the ratios reported missing), merge (into format_version 6, NaN); a run
# into it with a pending cell is refused (exit 2, the remedy named, the file
# untouched); a damaged value (massive_act < 1) is refused naming the cell,
# and `merge --salvage` leaves that cell pending.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
PY=/usr/bin/python3

cat > lm.ini <<'INI'
[sweep]
name = lm-sinks
save_params = yes
[grid]
arch = ungated, gated, gated-headwise
gate = g1, g2
seed = 0..1
depth = 2
task = bigram-backcopy
[task]
vocab = 8
seq_len = 8
train_points = 64
test_points = 32
[model]
family = lm
width = 8
heads = 2
mlp_ratio = 0
[train]
epochs = 2
batch = 16
lr = 1e-2
[curvature]
points = 8
INI
if "$bin" train lm.ini --cell 3 >train.txt 2>train.err &&
   grep -qE "^prefix +sink_mass +max_attn +sink_headmax +massive_act +value_drain +resid_peak" train.txt; then ok
else bad "train --cell: no extreme-token statistics"; cat train.txt train.err; fi
if "$bin" run lm.ini -o lm.h5 >run.txt 2>run.err; then ok; else bad "run"; cat run.err; fi
if $PY - lm.h5 <<'PY'; then ok; else bad "format_version 6 archive with the extreme-token columns"; fi
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
assert int(f.attrs["format_version"]) == 6, f.attrs["format_version"]
c = f["curvature"][()]
assert len(c) == 24, len(c)  # 12 cells x 2 prefixes
for k in ("sink_mass", "max_attn", "sink_headmax", "massive_act", "value_drain", "resid_peak"):
    assert np.all(np.isfinite(c[k])), k
assert np.all((c["sink_mass"] > 0) & (c["sink_mass"] <= 1) & (c["sink_headmax"] >= c["sink_mass"] - 1e-15))
assert np.all((c["sink_headmax"] <= 1) & (c["max_attn"] >= c["sink_mass"] - 1e-15) & (c["max_attn"] <= 1))
assert np.any(c["max_attn"] != c["sink_headmax"])  # two statistics (2 heads)
assert np.all(c["massive_act"] >= 1) and np.all(c["value_drain"] > 0) and np.all(c["resid_peak"] > 0)
PY
if "$bin" analyze lm.h5 -o rep >an.txt 2>an.err; then ok; else bad "analyze"; cat an.err; fi
grep -q "^## Do gates remove the attention sink?" rep/index.md && ok || bad "index.md: no sinks section"
# the gate-position section of an lm-only sweep points to the sink section (its verdicts are the
# self family's), and does not call these cells the memory family's
grep -q "^These verdicts are the self family's, and these archives hold none of its cells. The lm family's" rep/index.md &&
  ! grep -q "memory family ignores the gate" rep/index.md && ok || bad "index.md: gate-position text of an lm sweep"
grep -q "G1 against Qiu et al. (gated): first-token share" rep/index.md && ok || bad "index.md: no G1 line"
# claims 1 and 3 are not the lm family's: no affine skeleton, no decision boundary in the input
grep -q "no done ungated cell has the affine-skeleton config (add \`arch = ungated\` in the memory family" rep/index.md &&
  grep -q "it needs gated and ungated cells of a point task" rep/index.md &&
  ! grep -qE "^3,|^1,ungated affine skeleton,[^,]*,[^,]*,(supported|not supported)" rep/verdicts.csv && ok ||
  bad "claims 1 and 3 read lm cells: $(grep -E '^(1|3),' rep/verdicts.csv | head -n 3)"
grep -q "Attention map (gated-headwise): cell [0-9]*, block" rep/index.md && ok || bad "index.md: no attention map"
head -1 rep/sinks.csv | grep -q "^arch,task,depth,regime,gate,layer,n_seeds,n_measured,n_pairs,n_gate,share_mean,.*,massive_mean,.*,drain_mean,.*,peak_mean,.*,gatevalue_mean,.*,gatebos_mean,.*,dshare_mean," &&
  ok || { bad "sinks.csv header"; head -1 rep/sinks.csv; }
[[ $(grep -c "^gated,bigram-backcopy,2,all,g1," rep/sinks.csv) -eq 2 ]] && ok || bad "sinks.csv: two layers of gated g1"
# the gate values (from /params): measured for both seeds of every gated row, in (0, 1), their
# interval around the mean; none on the ungated rows; the table's column
if $PY - rep/sinks.csv <<'PY'; then ok; else bad "sinks.csv: gate values"; fi
import sys, csv, math
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 10, len(rows)  # ungated + 4 gated (arch, gate) rows, 2 layers each
for r in rows:
    g = [float(r[k]) for k in ("gatevalue_mean", "gatevalue_ci_low", "gatevalue_ci_high", "gatebos_mean")]
    if r["arch"] == "ungated":
        assert r["n_gate"] == "0" and all(math.isnan(x) for x in g), r
    else:
        assert r["n_gate"] == "2", r
        assert 0 < g[0] < 1 and 0 < g[3] < 1 and g[1] <= g[0] <= g[2], r
PY
grep -q "^| bigram-backcopy | 2 | all | gated | g1 | 1 | 2 | [^|]* | [^|]* | 0\.[0-9]* \[[^]]*\] / 0\.[0-9]* |" rep/index.md &&
  ok || bad "index.md: no gate value beside the share"
# without /params no gate value, and the report says why
if "$bin" run lm.ini -o nop.h5 --set sweep.save_params=no >nop.txt 2>&1 &&
   "$bin" analyze nop.h5 -o repn >/dev/null 2>&1 &&
   grep -q "^8 of the 8 gated cells have no gate value: cell [0-9]* has no stored tensor .*(run with save_params = yes)" repn/index.md &&
   grep -q "^| bigram-backcopy | 2 | all | gated | g1 | 1 | 2 | [^|]* | [^|]* | n/a |" repn/index.md; then ok
else bad "no /params: gate values n/a with the reason"; cat nop.txt; grep -n "gate value" repn/index.md; fi
[[ $(grep -cE "^sink-(share|massive|drain)," rep/verdicts.csv) -eq 24 ]] && ok || bad "verdicts.csv: 12 sink checks and 12 verdicts"
grep -q "index [0-9]* using 1:2:3 with image" rep/sinks_bigram-backcopy.gp && ok || bad "sinks_*.gp: no heat map"
grep -q "^## sinks.csv" rep/COLUMNS.md && ! grep -q "not described" rep/COLUMNS.md && ok ||
  bad "COLUMNS.md: sinks.csv missing or a column not described"
grep -q "^| \[sink-share\](#do-gates-remove-the-attention-sink) |" rep/index.md && ok || bad "index.md summary: no sink-share row"

# format_version 5: an lm row's max_attn held its largest per-head share, no sink_headmax
$PY - lm.h5 v5.h5 <<'PY' || bad "make v5"
import os, shutil, sys, h5py
sys.path.insert(0, os.path.join(os.environ["CS_SOURCE_DIR"], "tests"))
from archive_points import drop_curvature_columns
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    cv = f["curvature"][()]
    cv["max_attn"] = cv["sink_headmax"]
    f["curvature"][...] = cv
    drop_curvature_columns(f, ("sink_headmax", "attn_entropy", "ablate_first", "ablate_attn"), 5)
    for name in ("estimation", "gates", "cellstats"):  # format_version 6's tables
        del f[name]
PY
if "$bin" info v5.h5 >info5.txt 2>&1 && grep -q "12 done" info5.txt; then ok; else bad "info v5"; cat info5.txt; fi
if $PY - <<'PY'; then ok; else bad "python loader: a v5 lm max_attn is sink_headmax"; fi
import os, sys
sys.path.insert(0, os.path.join(os.environ["CS_SOURCE_DIR"], "python"))
import numpy as np, curvsweep_archive as ca
a, b = ca.curvature("v5.h5"), ca.curvature("lm.h5")
a, b = a.sort_values(["cell_id", "prefix"]), b.sort_values(["cell_id", "prefix"])
assert np.array_equal(a["sink_headmax"].to_numpy(), b["sink_headmax"].to_numpy())
assert a["max_attn"].isna().all() and b["max_attn"].notna().all()
PY
# sinks.csv of v5 equals the v6 archive's in every column version 5 stored (entropy,
# ablfirst, ablattn and their differences are format_version 6's: nan in v5)
if CS_GNUPLOT=/nonexistent "$bin" analyze v5.h5 -o rep5 >/dev/null 2>an5.err && $PY - <<'PY'; then ok
import csv
new6 = ("entropy", "ablfirst", "ablattn")
def rows(path):
    r = list(csv.reader(open(path)))
    keep = [i for i, h in enumerate(r[0]) if not any(h.startswith(c + "_") or h.startswith("d" + c + "_") for c in new6)]
    return [[x[i] for i in keep] for x in r], r
a, _ = rows("rep/sinks.csv")
b, full5 = rows("rep5/sinks.csv")
assert a == b, "sinks.csv differs in a column of format_version 5"
h = full5[0]
for c in ("entropy_mean", "ablfirst_mean", "ablattn_mean"):
    assert all(x[h.index(c)] == "nan" for x in full5[1:]), c
PY
else bad "analyze v5: sinks.csv differs from the v6 archive's"; cat an5.err; fi
grep -q "^The archives store no ablations: " rep5/index.md && ok || bad "v5: ablations not reported missing"
grep -q "^The archives store no calibration: none of their 12 done cells" rep5/index.md && ok || bad "v5: calibration not reported missing"
grep -q "^The archives store no gate scores: none of their 8 done gated cells" rep5/index.md && ok || bad "v5: gate scores not reported missing"
rm -f merged5.h5 salv5.h5
if "$bin" merge merged5.h5 v5.h5 2>merge5.err && "$bin" merge --salvage salv5.h5 v5.h5 >salv5.txt 2>&1 &&
   $PY - <<'PY'; then ok; else bad "merge and salvage of a v5 archive: its max_attn as sink_headmax"; cat merge5.err salv5.txt; fi
import h5py, numpy as np
b = h5py.File("lm.h5", "r")["curvature"][()]
b = b[np.lexsort((b["prefix"], b["cell_id"]))]
for name in ("merged5.h5", "salv5.h5"):
    f = h5py.File(name, "r")
    a = f["curvature"][()]
    a = a[np.lexsort((a["prefix"], a["cell_id"]))]
    assert int(f.attrs["format_version"]) == 6, name
    assert np.array_equal(a["sink_headmax"], b["sink_headmax"]) and np.isnan(a["max_attn"]).all(), name
    assert np.array_equal(a["sink_mass"], b["sink_mass"]) and np.array_equal(a["resid_peak"], b["resid_peak"]), name
PY
# v5 and v6 together, in either order: the v6 values kept, every column equal to lm.h5's
for order in "lm.h5 v5.h5" "v5.h5 lm.h5"; do
  rm -f mixed5.h5
  # shellcheck disable=SC2086 # two archive names
  if "$bin" merge mixed5.h5 $order 2>mixed5.err && $PY - <<'PY'; then ok; else bad "merge $order"; cat mixed5.err; fi
import h5py, numpy as np
a, b = h5py.File("mixed5.h5", "r")["curvature"][()], h5py.File("lm.h5", "r")["curvature"][()]
ka, kb = np.lexsort((a["prefix"], a["cell_id"])), np.lexsort((b["prefix"], b["cell_id"]))
assert a[ka].tobytes() == b[kb].tobytes()
PY
done
# a copy of archive $1 as $2 whose /curvature column $3 is halved in its first row
halved_copy() {
  $PY - "$@" <<'PY' || bad "make $2"
import shutil, sys, h5py
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    cv = f["curvature"][()]
    cv[sys.argv[3]][0] = cv[sys.argv[3]][0] * 0.5
    f["curvature"][...] = cv
PY
}
# a v5 largest-head share that differs from the v6 sink_headmax is a disagreement
halved_copy v5.h5 v5bad.h5 max_attn
"$bin" merge mixed6.h5 lm.h5 v5bad.h5 >/dev/null 2>bad5.err
check "v5 copy with a changed largest-head share" 2 $? "cell [0-9]* is done in both lm.h5 and v5bad.h5 with different values" bad5.err

# format_version 4: the three ratios dropped too
$PY - v5.h5 v4.h5 <<'PY' || bad "make v4"
import os, shutil, sys, h5py
sys.path.insert(0, os.path.join(os.environ["CS_SOURCE_DIR"], "tests"))
from archive_points import drop_curvature_columns
shutil.copy(sys.argv[1], sys.argv[2])
drop_curvature_columns(h5py.File(sys.argv[2], "r+"), ("massive_act", "value_drain", "resid_peak"), 4)
PY
if "$bin" info v4.h5 >info.txt 2>&1 && grep -q "12 done" info.txt; then ok; else bad "info v4"; cat info.txt; fi
if CS_GNUPLOT=/nonexistent "$bin" analyze v4.h5 -o rep4 >/dev/null 2>an4.err; then ok; else bad "analyze v4"; cat an4.err; fi
grep -q "carry no massive activation, value drain or residual peak" rep4/index.md && ok || bad "v4: ratios not reported missing"
[[ $(grep -cE "^sink-share," rep4/verdicts.csv) -eq 8 && $(grep -cE "^sink-massive," rep4/verdicts.csv) -eq 0 ]] &&
  ok || bad "v4: share tested, ratios not"
if "$bin" merge merged.h5 v4.h5 2>merge.err && $PY - <<'PY'; then ok; else bad "merge of a v4 archive"; cat merge.err; fi
import h5py, numpy as np, sys
f, g = h5py.File("merged.h5", "r"), h5py.File("v4.h5", "r")
cv, old = f["curvature"][()], g["curvature"][()]
assert int(f.attrs["format_version"]) == 6
assert np.isnan(cv["massive_act"]).all() and np.isnan(cv["resid_peak"]).all()
assert np.isnan(cv["max_attn"]).all() and np.array_equal(np.sort(cv["sink_headmax"]), np.sort(old["max_attn"]))
assert np.array_equal(np.sort(cv["sink_mass"]), np.sort(old["sink_mass"]))
PY
# the same sweep as format_version 6 and 4 together: the columns the older lacks are not a
# disagreement; in either order the newer's values are kept (merge and analyze)
for order in "lm.h5 v4.h5" "v4.h5 lm.h5"; do
  rm -f mixed.h5
  # shellcheck disable=SC2086 # two archive names
  if "$bin" merge mixed.h5 $order 2>mixed.err && $PY - <<'PY'; then ok; else bad "merge $order"; cat mixed.err; fi
import h5py, numpy as np
a, b = h5py.File("mixed.h5", "r")["curvature"][()], h5py.File("lm.h5", "r")["curvature"][()]
ka, kb = np.lexsort((a["prefix"], a["cell_id"])), np.lexsort((b["prefix"], b["cell_id"]))
assert a[ka].tobytes() == b[kb].tobytes()  # every column of every row, the ratios included
PY
  # shellcheck disable=SC2086
  if CS_GNUPLOT=/nonexistent "$bin" analyze $order -o "repmix" >/dev/null 2>anmix.err &&
     ! grep -q "carry no massive activation" repmix/index.md &&
     grep -q "^| bigram-backcopy | 2 | all | gated | g1 | 1 | 2 | " repmix/index.md; then ok
  else bad "analyze $order"; cat anmix.err; fi
  rm -rf repmix
done
# a value both store that differs is still a disagreement
halved_copy v4.h5 v4bad.h5 sink_mass
"$bin" merge mixed2.h5 lm.h5 v4bad.h5 >/dev/null 2>bad.err
check "v4 copy with a changed share" 2 $? "cell [0-9]* is done in both lm.h5 and v4bad.h5 with different values" bad.err
[[ ! -e mixed2.h5 ]] && ok || bad "a refused merge left mixed2.h5"
cp v4.h5 pend.h5
$PY -c "
import h5py; f = h5py.File('pend.h5', 'r+'); c = f['cells'][0]; c['status'] = b'pending'; f['cells'][0] = c"
sha=$(sha256sum < pend.h5)
"$bin" run lm.ini -o pend.h5 >/dev/null 2>pend.err; rc=$?
if [[ $rc -eq 2 ]] && grep -q "pend.h5 has format_version 4; this curvsweep .* writes format_version 6, whose layout differs (docs/ARCHIVE.md, \"Versions\").*curvsweep merge NEW.h5 pend.h5" pend.err &&
   [[ "$(sha256sum < pend.h5)" == "$sha" ]]; then ok; else bad "run into a v4 archive with a pending cell: exit $rc"; cat pend.err; fi

# damage: a massive activation below 1 in a done lm cell
cp lm.h5 dmg.h5
$PY -c "
import h5py; f = h5py.File('dmg.h5', 'r+'); c = f['curvature'][3]; c['massive_act'] = 0.5; f['curvature'][3] = c"
CS_GNUPLOT=/nonexistent "$bin" analyze dmg.h5 -o repd >/dev/null 2>dmg.err; rc=$?
check "damaged massive_act" 2 $rc "dmg.h5: damaged archive: /curvature: done cell .* (family lm) prefix .: massive_act below 1" dmg.err
"$bin" merge --salvage salv.h5 dmg.h5 >salv.txt 2>&1; rc=$?
check "salvage of the damaged value" 0 $rc "pending *cell [0-9]*: dmg.h5: damaged archive: /curvature: done cell" salv.txt
"$bin" info salv.h5 >salvinfo.txt 2>&1; rc=$?
check "salvaged archive: the cell pending" 0 $rc "11 done, 1 pending" salvinfo.txt
finish
