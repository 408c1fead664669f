#!/usr/bin/env bash
# A small lm sweep (docs/SWEEP.md, "Cells that do not depend on gate";
# docs/MODELS.md, the lm family): arch = ungated, gated x gate = g1..g3 x
# seed = 0..1. The ungated cells are trained once per seed (one row with
# wall_s > 0 per seed, the others copies with wall_s 0, and `run --dry-run`
# counts them free), their rows (cells, curves, curvature, points, params)
# are bitwise the same at every gate value and bitwise those of the cell
# trained on its own at gate g3 (the copies come from g1's training: the
# model ignores gate); the archive is
# bitwise the same on 1, 2, 3 and 4 ranks, and the two shards merged.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"

# spec NAME GRID_LINES: the small lm spec (tests/specs/lm-small-body.ini)
# with the given [grid] lines, saving points and parameters
spec() {
  { printf '[sweep]\nname = lm-%s\noutput = %s.h5\nsave_points = yes\nsave_params = yes\n' "$1" "$1"
    printf '[grid]\n%s\ndepth = 2\ntask = bigram-backcopy\n' "$2"
    cat "$src/tests/specs/lm-small-body.ini"; } > "$1.ini"
}
spec grid $'arch = ungated, gated\ngate = g1, g2, g3\nseed = 0..1'
spec alone $'arch = ungated\ngate = g3\nseed = 0..1'

"$bin" run grid.ini -o grid.h5 --dry-run >dry.txt 2>&1
check dry-run 0 $? "^reused   4 of them" dry.txt
if "$bin" run grid.ini -o grid.h5 >run.txt 2>run.err; then ok; else bad "run"; cat run.err; fi
if "$bin" run alone.ini -o alone.h5 >alone.txt 2>alone.err; then ok; else bad "run alone"; cat alone.err; fi

if /usr/bin/python3 - grid.h5 alone.h5 <<'PY'; then ok; else bad "ungated rows"; fi
import sys, h5py, numpy as np
g, a = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
cells = g["cells"][()]
ung = cells[cells["arch"] == b"ungated"]
assert len(ung) == 6 and np.all(ung["status"] == b"done"), ung
# trained once per seed: one row with training time per seed, copies 0 s
for s in (0, 1):
    w = ung[ung["seed"] == s]["wall_s"]
    assert np.sum(w > 0) == 1 and np.sum(w == 0) == 2, (s, w)
gated = cells[cells["arch"] == b"gated"]
assert np.all(gated["wall_s"] > 0), gated["wall_s"]

def fields(r, names):
    """the bytes of the named fields of rows r, field by field"""
    return b"".join(k.encode() + np.ascontiguousarray(r[k]).tobytes() for k in names)

def rows(f, name, cid):
    d = f[name][()]
    r = d[d["cell_id"] == cid]
    assert len(r) > 0, (name, cid)
    return fields(r, [k for k in r.dtype.names if k != "cell_id"])

def params(f, cid):
    grp = f["params"].get(str(cid)) if "params" in f else None
    if grp is None:
        return b""
    out = []
    grp.visititems(lambda n, o: out.append((n, o[()].tobytes())) if isinstance(o, h5py.Dataset) else None)
    return b"".join(n.encode() + v for n, v in sorted(out))

def points(f, cid):
    idx = f["points/index"][()]
    r = idx[idx["cell_id"] == cid]
    assert len(r) == 1, (cid, r)
    n, L, s = int(r["n_points"][0]), int(r["depth"][0]), int(r["start"][0])
    return f["points/S"][s:s + n * L].tobytes() + f["points/class"][s:s + n * L].tobytes()

keep = [k for k in cells.dtype.names if k not in ("cell_id", "gate", "rank", "wall_s", "attempts")]
alone = a["cells"][()]
for s in (0, 1):
    ids = ung[ung["seed"] == s]["cell_id"]
    ref = alone[alone["seed"] == s]["cell_id"][0]
    want = fields(alone[alone["cell_id"] == ref], keep)
    for cid in ids:
        got = fields(cells[cells["cell_id"] == cid], keep)
        assert got == want, ("cells row", s, cid)
        for t in ("curves", "curvature"):
            assert rows(g, t, cid) == rows(a, t, ref), (t, s, cid)
        assert params(g, cid) == params(a, ref) and params(g, cid), ("params", s, cid)
        assert points(g, cid) == points(a, ref), ("points", s, cid)
# the gated cells do depend on gate
gl = [gated[(gated["seed"] == 0) & (gated["gate"] == x)]["train_loss"][0] for x in (b"g1", b"g2", b"g3")]
assert len(set(gl)) == 3, gl
PY

for np_ in 2 3 4; do
  if mpi "$np_" "$bin" run grid.ini -o "grid$np_.h5" >"run$np_.txt" 2>"run$np_.err"; then ok; else bad "run on $np_ ranks"; cat "run$np_.err"; fi
  if cmp_archives grid.h5 "grid$np_.h5" >"cmp$np_.txt"; then ok; else bad "1 and $np_ ranks differ"; cat "cmp$np_.txt"; fi
done

# shards: each trains its own share (reuse within a shard), merged the same
"$bin" run grid.ini -o s0.h5 --shard 0/2 >s0.txt 2>&1 && ok || { bad "shard 0/2"; cat s0.txt; }
"$bin" run grid.ini -o s1.h5 --shard 1/2 >s1.txt 2>&1 && ok || { bad "shard 1/2"; cat s1.txt; }
"$bin" merge merged.h5 s0.h5 s1.h5 >merge.txt 2>&1 && ok || { bad "merge"; cat merge.txt; }
if cmp_archives grid.h5 merged.h5 >cmpm.txt; then ok; else bad "merged shards differ"; cat cmpm.txt; fi

# resume of the finished archive: nothing runs, nothing changes
cp grid.h5 again.h5
"$bin" run grid.ini -o again.h5 >again.txt 2>&1 && ok || { bad "resume"; cat again.txt; }
if cmp_archives grid.h5 again.h5 >cmpa.txt; then ok; else bad "resume changed the archive"; cat cmpa.txt; fi
finish
