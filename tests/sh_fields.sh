#!/usr/bin/env bash
# Curvature fields end to end ([curvature] field = N; docs/ARCHIVE.md
# "/fields", analysis/README.md "Figures"):
#  - bad field values and field with input_dim != 2 are refused with exit 2,
#    naming file:line and the key, before any archive is written;
#  - `run --dry-run` reports the field's share of the cost, `train --cell`
#    summarises the field;
#  - a small sweep run as two shards and whole: every done cell has
#    /fields/<id> with the documented datasets, shapes, dtypes and attributes
#    (h5py), K^ = K·exp(logdet_g/2) and aniso ≥ 0 where resolved, the box is
#    the task's; merge copies /fields bit for bit, a merge of the shards with
#    the whole run agrees, and one with a changed field value is refused;
#  - info --check reads /fields (a flipped chunk is named, exit 2) and
#    merge --salvage leaves that cell pending;
#  - analyze draws field_Kh_* in place of map_Kt_*, with no value where a
#    grid point is not curved (tests/support/plots_flat.py against /fields).
source "$CS_SOURCE_DIR/tests/support/common.sh"
py=/usr/bin/python3

# ---- bad inputs: exit 2, file:line: [section] field, nothing written ----
expect_bad() { # NAME LINE SECTION TEXT...
  local name=$1 line=$2 sec=$3; shift 3
  printf '%b' "$*" >"$name.ini"
  "$bin" run "$name.ini" -o "$name.h5" 2>"$name.err"
  local rc=$?
  [[ $rc -eq 2 ]] || bad "$name: exit $rc, expected 2"
  grep -q "^curvsweep: $name.ini:$line: \[$sec\] field: " "$name.err" || bad "$name: message $(cat "$name.err")"
  [[ ! -e $name.h5 ]] || bad "$name: an archive was written"
  ok
}
expect_bad big 2 curvature '[curvature]\nfield = 513\n'
expect_bad neg 2 curvature '[curvature]\nfield = -1\n'
expect_bad frac 3 curvature '[curvature]\n\nfield = 2.5\n'
expect_bad dim3 6 curvature '[grid]\ntask = xor\n[task]\ninput_dim = 3\n[curvature]\nfield = 4\n'
expect_bad dimaxis 2 grid '[grid]\nfield = 0, 8\ninput_dim = 2, 3\ntask = xor\n'
grep -q 'input_dim 3 is in the grid (\[grid\] line 3)' dimaxis.err || bad "dimaxis: $(cat dimaxis.err)"

cat >f.ini <<'EOF'
[sweep]
name = fields
save_points = yes
[grid]
arch = ungated, gated
depth = 1, 2
task = circles, blobs
[task]
train_points = 256
test_points = 128
[model]
width = 8
[train]
epochs = 15
[curvature]
points = 24
field = 7
EOF
"$bin" run f.ini --dry-run >dry.txt || bad "dry run"
grep -q '^field    curvature fields (up to 7x7 grid points per cell): ' dry.txt || bad "dry run: $(cat dry.txt)"

"$bin" train f.ini --cell 1 >train.txt || bad "train --cell 1"
grep -q '^curvature field: 7x7 grid over \[-3, 3\]^2' train.txt || bad "train: $(cat train.txt)"

# ---- the sweep: whole, and as two shards merged ----
"$bin" run f.ini -o whole.h5 2>/dev/null || bad "run whole"
"$bin" run f.ini -o s0.h5 --shard 0/2 2>/dev/null || bad "run shard 0"
"$bin" run f.ini -o s1.h5 --shard 1/2 2>/dev/null || bad "run shard 1"
"$bin" merge merged.h5 s0.h5 s1.h5 >/dev/null || bad "merge shards"
"$bin" merge again.h5 s0.h5 whole.h5 >/dev/null || bad "merge shard with the whole run (equal fields)"
for a in whole.h5 merged.h5 again.h5; do
  "$bin" info --check "$a" >/dev/null || bad "info --check $a"
done
"$py" - whole.h5 merged.h5 again.h5 s0.h5 s1.h5 <<'EOF' || bad "h5py layout of /fields"
import sys, h5py, numpy as np
whole, merged, again, s0, s1 = [h5py.File(p, "r") for p in sys.argv[1:]]
box = {"circles": (-1.0, 1.0), "blobs": (-3.0, 3.0)}
cells = whole["cells"][:]
assert len(cells) == 8, len(cells)
for row in cells:
    c = int(row["cell_id"]); name = "fields/%d" % c
    assert row["status"].decode() == "done", row
    g = whole[name]
    N, L = int(g.attrs["N"]), int(row["depth"])
    assert N == 7, N
    assert tuple(g.attrs["box"]) == box[row["task"].decode()], (c, g.attrs["box"])
    for k in ["K", "K_tilde", "K_hat", "logdet_g", "aniso", "S_err"]:
        assert g[k].shape == (L, N * N) and g[k].dtype == np.float64, (k, g[k].shape, g[k].dtype)
    assert g["class"].shape == (L, N * N) and g["class"].dtype == np.int8
    assert h5py.check_enum_dtype(g["class"].dtype) == {"degenerate": 0, "flat": 1, "curved": 2, "unresolved": 3}
    assert g["pred"].shape == (N, N) and set(np.unique(g["pred"][:])) <= {0, 1}
    cls = g["class"][:]; ok = (cls == 1) | (cls == 2)
    K, Kh, ld, an = g["K"][:], g["K_hat"][:], g["logdet_g"][:], g["aniso"][:]
    assert ok.any()
    assert np.allclose(Kh[ok], K[ok] * np.exp(ld[ok] / 2), rtol=1e-12, atol=0)
    assert (an[ok] > -1e-12).all()
    assert np.isfinite(K[cls != 0]).all() and np.isnan(K[cls == 0]).all()
    shard = s0 if name in s0 else s1
    for f in (merged, again, shard):
        h = f[name]
        assert h.attrs["N"] == N and tuple(h.attrs["box"]) == tuple(g.attrs["box"])
        for k in g:
            assert np.array_equal(h[k][:], g[k][:], equal_nan=k not in ("class", "pred")), (f.filename, name, k)
assert whole["fields"].keys() == merged["fields"].keys()
print("fields layout ok")
EOF
ok

# a changed field value in one input: the same cell done twice disagrees
cp s0.h5 changed.h5
cell=$("$py" - changed.h5 <<'EOF'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    c = sorted(f["fields"].keys(), key=int)[0]
    d = f["fields/%s/K_hat" % c]; v = d[:]; v[-1, 0] = v[-1, 0] * 2 + 1; d[...] = v
    print(c)
EOF
)
"$bin" merge refused.h5 changed.h5 whole.h5 2>refused.err
rc=$?
[[ $rc -eq 2 ]] && grep -q "cell $cell is done in both" refused.err || bad "changed field merged (exit $rc): $(cat refused.err)"
ok

# ---- info --check and salvage see a damaged /fields chunk ----
cp whole.h5 damaged.h5
"$py" - damaged.h5 3 <<'EOF'
import sys, h5py
path, c = sys.argv[1], sys.argv[2]
with h5py.File(path, "r") as f:
    info = f["fields/%s/K_hat" % c].id.get_chunk_info(0)
    off = info.byte_offset + info.size // 2
with open(path, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0xFF]))
EOF
"$bin" info --check damaged.h5 >check.txt 2>&1
rc=$?
[[ $rc -eq 2 ]] && grep -q '/fields/3/K_hat' check.txt || bad "info --check (exit $rc): $(cat check.txt)"
"$bin" merge --salvage salvaged.h5 damaged.h5 >salvage.txt 2>&1 || bad "salvage: $(cat salvage.txt)"
grep -q 'pending   cell 3:' salvage.txt || bad "salvage kept the damaged cell: $(cat salvage.txt)"
[[ $(grep -c '^pending' salvage.txt) -eq 1 ]] || bad "salvage: $(cat salvage.txt)"
ok

# ---- analyze: a field map per task instead of the point map ----
"$bin" analyze merged.h5 -o rep >analyze.txt 2>&1 || bad "analyze: $(cat analyze.txt)"
for t in circles blobs; do
  [[ -s rep/field_Kh_$t.gp && -s rep/field_Kh_$t.dat ]] || bad "no field_Kh_$t script"
  [[ ! -e rep/map_Kt_$t.gp ]] || bad "map_Kt_$t drawn although fields are present"
  if command -v gnuplot >/dev/null; then [[ -s rep/field_Kh_$t.png ]] || bad "no field_Kh_$t.png"; fi
  grep -q "field_Kh_$t.png" rep/index.md || bad "index.md does not show field_Kh_$t"
done
# two archs, seven grid rows of seven points each per panel
[[ $(grep -c '^# arch .* grid 7x7' rep/field_Kh_circles.dat) -eq 2 ]] || bad "field_Kh_circles.dat panels"
# no field draws a value where the archive's class is not curved, nor any of a
# flat row (the ungated cells)
$py "$src/tests/support/plots_flat.py" rep --archive merged.h5 --min-flat 1 >flat.out 2>&1 || { bad "plots_flat"; cat flat.out; }
ok
finish
