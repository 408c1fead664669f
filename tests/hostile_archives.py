#!/usr/bin/python3
"""Crafted hostile archives (issue 28; docs/SECURITY.md, "Archives").

usage: hostile_archives.py BASE.h5 OUTDIR VICTIMDIR

BASE.h5 is an honest finished archive of tests/specs/hostile.ini (4 cells,
points, parameters and curvature fields). Each case below copies it to
OUTDIR/<case>.h5 and makes one hostile change; VICTIMDIR (outside the
test's directory) receives the files the archives point at: a file an
external raw storage would write into, a FIFO an external link opens, an
honest archive a link or virtual dataset would read. Prints one line per
case: "<case> <object> <kind>": the object every refusal must name, and
whether the archive is hostile (kind "refuse": every command refuses it,
`merge --salvage` too) or damaged in a cell's data (kind "damage": every
command refuses it but `merge --salvage`, which keeps the other cells and
lists the damaged ones pending, naming the object). Kinds "fields" and
"params" are damage in a per-cell group: `info` (a summary) reads none,
`analyze` reads the /fields groups its figures draw (the deepest cells:
cell 1 here) and no /params.
"""
import os
import shutil
import sys

import h5py
import numpy as np

base, outdir, victims = sys.argv[1:4]
victims = os.path.abspath(victims)
victim_bin = os.path.join(victims, "victim.bin")
fifo = os.path.join(victims, "fifo")
other = os.path.join(victims, "other.h5")
cases = []


def case(name, obj, kind="refuse"):
    """Decorator: fn(f) changes the copy open as f (h5py, r+)."""
    def wrap(fn):
        cases.append((name, obj, kind, fn))
        return fn
    return wrap


def replace_attr(obj, name, value, dtype=None):
    if name in obj.attrs:
        del obj.attrs[name]
    obj.attrs.create(name, value, dtype=dtype)


def recreate(f, name, data, **kw):
    """The dataset name again with data (other shape or type), its attributes kept."""
    attrs = dict(f[name].attrs)
    del f[name]
    d = f.create_dataset(name, data=data, **kw)
    for k, v in attrs.items():
        d.attrs[k] = v
    return d


# ---- 1. one attribute overflows a one-value buffer ----
@case("attr-format-version-array", "format_version")
def _(f):
    replace_attr(f, "format_version", np.full(64, 4, dtype=np.int64))


@case("attr-format-array", "format")
def _(f):
    replace_attr(f, "format", np.array([b"curvsweep"] * 64, dtype="S9"))


@case("attr-spec-name-array", "spec_name")
def _(f):
    replace_attr(f, "spec_name", np.array([b"hostile" * 8] * 64, dtype="S56"))


@case("attr-spec-sha256-array", "spec_sha256")
def _(f):
    sha = f.attrs["spec_sha256"]
    replace_attr(f, "spec_sha256", np.array([sha] * 64, dtype="S64"))


@case("attr-committed-rows-array", "/curvature", "damage")
def _(f):
    n = f["curvature"].shape[0]
    replace_attr(f["curvature"], "committed_rows", np.full(64, n, dtype=np.int64))


@case("attr-fields-n-array", "/fields/1", "fields")
def _(f):
    replace_attr(f["fields/1"], "N", np.full(64, 4, dtype=np.int64))


# ---- 2. objects that live in other files ----
@case("external-storage-curvature", "/curvature")
def _(f):
    # cell 3 pending again: a resume appends its rows, which external raw
    # storage would write into the victim file
    cells = f["cells"][:]
    cells[3]["status"], cells[3]["rank"] = b"pending", -1
    for k in ("wall_s", "train_loss", "train_acc", "test_acc"):
        cells[3][k] = np.nan
    f["cells"][:] = cells
    d = f["curvature"]
    rows = d[:][d[:]["cell_id"] != 3]
    attrs, tid = dict(d.attrs), d.id.get_type()
    del f["curvature"]
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.CONTIGUOUS)
    dcpl.set_external(victim_bin.encode(), 0, h5py.h5f.UNLIMITED)
    space = h5py.h5s.create_simple((len(rows),), (h5py.h5s.UNLIMITED,))
    ds = h5py.Dataset(h5py.h5d.create(f.id, b"curvature", tid, space, dcpl=dcpl))
    ds[...] = rows
    for k, v in attrs.items():
        ds.attrs[k] = v
    ds.attrs["committed_rows"] = np.int64(len(rows))


@case("external-link-fifo", "/runs")
def _(f):
    del f["runs"]
    f["runs"] = h5py.ExternalLink(fifo, "/runs")


@case("external-link-fields", "/fields/1")
def _(f):
    del f["fields/1"]
    f["fields/1"] = h5py.ExternalLink(other, "/fields/2")


@case("soft-link-params", "/params/1")
def _(f):
    del f["params/1"]
    f["params/1"] = h5py.SoftLink("/params/3")


@case("virtual-points", "/points/S")
def _(f):
    d = f["points/S"]
    layout = h5py.VirtualLayout(shape=d.shape, maxshape=(None,), dtype=d.dtype)
    layout[:] = h5py.VirtualSource(other, "points/S", shape=d.shape)
    del f["points/S"]
    f.create_virtual_dataset("points/S", layout, fillvalue=0)


# ---- 5. tiny files that declare huge objects ----
@case("hard-link-cycle", "/params/0")
def _(f):
    g = f["params/0"]
    for k in range(40):
        g["loop%d" % k] = g


@case("cells-extent", "/cells", "damage")
def _(f):
    f["cells"].resize((1 << 27,))


@case("curvature-extent", "/curvature", "damage")
def _(f):
    d = f["curvature"]
    d.resize((1 << 26,))
    d.attrs["committed_rows"] = np.int64(1 << 26)


@case("spec-huge-string", "/spec")
def _(f):
    del f["spec"]
    t = h5py.h5t.C_S1.copy()
    t.set_size(1500000000)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((1,))
    h5py.h5d.create(f.id, b"spec", t, h5py.h5s.create_simple((1,)), dcpl=dcpl)


@case("params-oversized", "/params/0/embed/W", "params")
def _(f):
    del f["params/0/embed/W"]
    f.create_dataset("params/0/embed/W", shape=(1 << 20, 1 << 12), dtype="f8", chunks=(1, 1 << 12))


@case("fields-oversized", "/fields/1/K", "fields")
def _(f):
    del f["fields/1/K"]
    f.create_dataset("fields/1/K", shape=(1, 1 << 30), dtype="f8", chunks=(1, 1 << 16))


# ---- 6. groups that read but are wrong: merge copied them ----
@case("fields-n-zero", "/fields/1", "fields")
def _(f):
    replace_attr(f["fields/1"], "N", np.int64(0))


@case("fields-nan-box", "/fields/1", "fields")
def _(f):
    replace_attr(f["fields/1"], "box", np.array([np.nan, 1.0]))


@case("fields-class-77", "/fields/1", "fields")
def _(f):
    d = f["fields/1/class"]
    codes = {"degenerate": 0, "flat": 1, "curved": 2, "unresolved": 3, "other": 77}
    data = d[:].astype(np.int8)
    data[0, 0] = 77
    recreate(f, "fields/1/class", data, dtype=h5py.enum_dtype(codes, basetype="i1"), chunks=d.chunks)


@case("fields-wrong-shape", "/fields/1/K", "fields")
def _(f):
    d = f["fields/1/K"]
    recreate(f, "fields/1/K", d[:, :15], chunks=True)


@case("params-string-tensor", "/params/0/embed/W", "params")
def _(f):
    d = f["params/0/embed/W"]
    recreate(f, "params/0/embed/W", np.full(d.shape, b"1.0", dtype="S8"))


@case("params-extra-member", "/params/0/extra", "params")
def _(f):
    f.create_dataset("params/0/extra", data=np.zeros((2, 2)))


@case("params-nan", "/params/0/embed/W", "params")
def _(f):
    d = f["params/0/embed/W"]
    v = d[:]
    v[0, 0] = np.nan
    d[...] = v


@case("points-index-m", "/points/index", "damage")
def _(f):
    ix = f["points/index"][:]
    ix["m"][ix["cell_id"] == 0] = 3
    f["points/index"][:] = ix


@case("points-index-offsets", "/points/index", "damage")
def _(f):
    ix = f["points/index"][:]
    ix["x_start"], ix["start"] = 0, 0
    f["points/index"][:] = ix


def set_metric(column, value):
    def change(f):
        cells = f["cells"][:]
        cells[1][column] = value
        f["cells"][:] = cells
    return change


case("metric-test-acc-5", "/cells", "damage")(set_metric("test_acc", 5.0))
case("metric-train-acc-negative", "/cells", "damage")(set_metric("train_acc", -3.0))
case("metric-test-acc-huge", "/cells", "damage")(set_metric("test_acc", 1e308))
case("metric-wall-negative", "/cells", "damage")(set_metric("wall_s", -3.0))


# ---- 7. second audit (docs/SECURITY.md, "Hostile archives: second audit") ----
@case("nested-15000", "/params/0/n/n/n/n")
def _(f):
    # 15,000 groups, each in the last: HDF5's recursive walk (H5Lvisit)
    # overflowed the stack on it; every walk is iterative and bounded now
    g = f["params/0"]
    for _ in range(15000):
        g = g.create_group("n")


@case("params-sparse", "/params/0/embed/W", "params")
def _(f):
    # an 8192 x 16384 float64 tensor (1 GiB) never written: no chunk stored;
    # the file is padded by 200 MB of holes below (SPARSE_PAD)
    del f["params/0/embed/W"]
    f.create_dataset("params/0/embed/W", shape=(8192, 16384), dtype="f8", chunks=(64, 16384))


# bytes of holes appended to a case's file after it is written (truncate -s +N)
SPARSE_PAD = {"params-sparse": 200 << 20}


@case("cells-outside-grid", "/cells", "damage")
def _(f):
    cells = f["cells"][:]
    cells[3]["cell_id"] = 9
    f["cells"][:] = cells


os.makedirs(outdir, exist_ok=True)
with open(victim_bin, "wb") as v:
    v.write(b"victim: external raw storage must never write here\n" * 64)
if not os.path.exists(fifo):
    os.mkfifo(fifo)
shutil.copy(base, other)
for name, obj, kind, fn in cases:
    path = os.path.join(outdir, name + ".h5")
    shutil.copy(base, path)
    with h5py.File(path, "r+") as f:
        fn(f)
    if name in SPARSE_PAD:
        os.truncate(path, os.path.getsize(path) + SPARSE_PAD[name])
    print(name, obj, kind)
