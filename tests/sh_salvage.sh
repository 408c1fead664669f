#!/usr/bin/env bash
# `curvsweep merge --salvage OUT DAMAGED` (docs/ARCHIVE.md, "Salvage"): a
# finished 48-cell archive (points and parameters saved) is damaged in chosen
# places: one chunk of /cells (rows 20..39), one chunk of /curvature (rows
# 31..61), the chunk of /points/S holding cell 5's values and the /runs chunk. The salvage must keep every other
# cell bit for bit, list exactly the damaged cells as pending, and a resume
# must complete them to the original archive (tests/archive_compare.py:
# results are deterministic). Then: damaged /cells metadata (its object
# header) leaves every cell pending; a damaged /spec, an existing output and
# the input as output are refused with exit 2 and nothing written.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
spec="$src/tests/specs/salvage.ini"
py=/usr/bin/python3

"$bin" run "$spec" -o orig.h5 2>/dev/null || { echo "FAIL: cannot make the reference archive"; exit 1; }

# damage FILE OBJECT...: flip the middle byte of each object; an object is
# DATASET:CHUNK (a data chunk, its Fletcher32 fails) or DATASET:header (its
# object header, whose checksum fails). Prints the cells the damage costs:
# rows of the /cells chunk, cells with /curvature rows in the chunk; or
# /points/ARRAY@CELL: the chunk of a /points array holding the cell's values,
# which costs every cell with values in that chunk (/points/index).
damage() {
  "$py" - "$@" <<'EOF'
import sys, h5py, numpy as np
path, objs = sys.argv[1], sys.argv[2:]
flips, lost = [], set()
with h5py.File(path, "r") as f:
    for o in objs:
        if "@" in o:
            name, cell = o.split("@")
            ds, ix = f[name], f["points/index"][:]
            key = "x_start" if name.endswith("/x") else "start"
            size = ix["n_points"] * (ix["m"] if key == "x_start" else ix["depth"])
            at = int(ix[key][ix["cell_id"] == int(cell)][0])
            lo = at - at % ds.chunks[0]
            info = ds.id.get_chunk_info_by_coord((lo,))
            flips.append(info.byte_offset + info.size // 2)
            hit = (ix[key] < lo + ds.chunks[0]) & (ix[key] + size > lo)
            lost.update(int(c) for c in ix["cell_id"][hit])
            continue
        name, what = o.rsplit(":", 1)
        ds = f[name]
        if what == "header":
            flips.append(h5py.h5o.get_info(ds.id).addr + 20)
            continue
        info = ds.id.get_chunk_info(int(what))
        flips.append(info.byte_offset + info.size // 2)
        if ds.dtype.names and "cell_id" in ds.dtype.names:
            rows = ds[info.chunk_offset[0]:info.chunk_offset[0] + ds.chunks[0]]
            lost.update(int(c) for c in rows["cell_id"])
with open(path, "r+b") as f:
    for off in flips:
        f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0xFF]))
print(" ".join(str(c) for c in sorted(lost)))
EOF
}

# pending cells named by the salvage (stdout lines "pending   cell N: ...")
named() { sed -n 's/^pending   cell \([0-9]*\):.*/\1/p' "$1" | sort -n | tr '\n' ' ' | sed 's/ $//'; }

# --- A. chunks of /cells, /curvature and a /points dataset ---
cp orig.h5 dmg.h5
lost=$(damage dmg.h5 /cells:1 /curvature:1 /points/S@5 /runs:0)
[[ -n "$lost" ]] || bad "the damage script found no cells"
"$bin" info --check dmg.h5 >check.txt 2>&1
[[ $? -eq 2 ]] && ok || bad "info --check does not see the damage"
"$bin" merge --salvage sal.h5 dmg.h5 >sal.out 2>sal.err
rc=$?
if [[ $rc -ne 0 ]]; then bad "salvage exit $rc"; cat sal.err; fi
got=$(named sal.out)
[[ "$got" == "$lost" ]] && ok || bad "pending cells: got [$got], expected [$lost]"
grep -q "48 cells, $((48 - $(wc -w <<<"$lost"))) finished kept, $(wc -w <<<"$lost") damaged now pending, 0 pending before; 0 /runs rows kept, 1 unreadable" sal.err && ok || { bad "salvage summary"; cat sal.err; }
grep -q "infinite loop" sal.err && bad "HDF5 left open by the salvage" || ok
"$bin" info --check sal.h5 >/dev/null 2>&1 && ok || bad "the salvaged archive is not intact"
# the kept cells equal the original, bit for bit; the damaged ones are pending
"$py" - orig.h5 sal.h5 "$lost" <<'EOF' && ok || bad "kept cells differ from the original"
import os, sys, h5py, numpy as np
sys.path.insert(0, os.path.join(os.environ["CS_SOURCE_DIR"], "tests"))
from archive_points import cell_points
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
lost = {int(c) for c in sys.argv[3].split()}
ca, cb = a["cells"][:], b["cells"][:]
def rows(f, name, cell, key):
    t = f[name][:]
    t = t[t["cell_id"] == cell]
    return t[np.argsort(t[key])]
def datasets(g):
    out = {}
    g.visititems(lambda k, v: out.__setitem__(k, v[()]) if isinstance(v, h5py.Dataset) else None)
    return out
bad = []
for i, cell in enumerate(cb["cell_id"]):
    status = cb["status"][i].decode()
    if cell in lost:
        if status != "pending" or cell_points(b, cell) is not None or "params/%d" % cell in b \
           or (b["curvature"][:]["cell_id"] == cell).any():
            bad.append("cell %d should be pending and empty" % cell)
        continue
    j = int(np.nonzero(ca["cell_id"] == cell)[0][0])
    for fld in ca.dtype.names:
        if fld not in ("rank", "wall_s", "attempts") and ca[fld][j].tobytes() != cb[fld][i].tobytes():
            bad.append("cells.%s of cell %d" % (fld, cell))
    for name, key in (("curvature", "prefix"), ("curves", "epoch")):
        if rows(a, name, cell, key).tobytes() != rows(b, name, cell, key).tobytes():
            bad.append("%s rows of cell %d" % (name, cell))
    da, db = cell_points(a, cell), cell_points(b, cell)
    if sorted(da) != sorted(db) or any(da[k].tobytes() != db[k].tobytes() for k in da):
        bad.append("points of %d" % cell)
    da, db = datasets(a["params/%d" % cell]), datasets(b["params/%d" % cell])
    if sorted(da) != sorted(db) or any(da[k].tobytes() != db[k].tobytes() for k in da):
        bad.append("params/%d" % cell)
if len(cb) != len(ca):
    bad.append("%d rows, %d in the original" % (len(cb), len(ca)))
print("\n".join(bad[:10]))
sys.exit(1 if bad else 0)
EOF
# a resume computes the pending cells: the original archive again
"$bin" run "$spec" -o sal.h5 >/dev/null 2>resume.err && ok || { bad "resume of the salvage"; cat resume.err; }
"$py" "$src/tests/archive_compare.py" orig.h5 sal.h5 && ok || bad "resumed salvage differs from the original"

# --- B. the /cells object header: no /cells row readable, every cell pending ---
cp orig.h5 dmg2.h5
damage dmg2.h5 /cells:header >/dev/null
"$bin" merge --salvage sal2.h5 dmg2.h5 >sal2.out 2>sal2.err
rc=$?
[[ $rc -eq 0 ]] && ok || { bad "salvage of damaged /cells metadata: exit $rc"; cat sal2.err; }
[[ "$(named sal2.out | wc -w)" -eq 48 ]] && ok || bad "damaged /cells metadata: not every cell pending"
grep -q "infinite loop" sal2.err && bad "HDF5 left open after damaged /cells metadata" || ok
"$bin" run "$spec" -o sal2.h5 >/dev/null 2>&1 && ok || bad "resume of the /cells salvage"
"$py" "$src/tests/archive_compare.py" orig.h5 sal2.h5 && ok || bad "resumed /cells salvage differs"

# --- C. refusals: exit 2, nothing written ---
cp orig.h5 dmg3.h5
damage dmg3.h5 /spec:0 >/dev/null
"$bin" merge --salvage sal3.h5 dmg3.h5 >/dev/null 2>sal3.err
rc=$?
[[ $rc -eq 2 ]] && grep -q "/spec" sal3.err && [[ ! -e sal3.h5 ]] && ok || { bad "damaged /spec: exit $rc"; cat sal3.err; }
ls sal3.h5.tmp-* >/dev/null 2>&1 && bad "a temporary file was left" || ok
before=$(sha256sum < sal.h5)
"$bin" merge --salvage sal.h5 dmg.h5 >/dev/null 2>exists.err
[[ $? -eq 2 ]] && grep -q "already exists" exists.err && [[ "$(sha256sum < sal.h5)" == "$before" ]] && ok || bad "existing output"
"$bin" merge --salvage dmg.h5 dmg.h5 --overwrite >/dev/null 2>same.err
[[ $? -eq 2 ]] && grep -q "damaged archive itself" same.err && ok || bad "input as output"
"$bin" merge --salvage only.h5 >/dev/null 2>usage.err
[[ $? -eq 2 ]] && ok || bad "--salvage without an input"

finish salvage
