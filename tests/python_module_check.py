#!/usr/bin/env python3
"""python_module_check.py ARCHIVE INFO_TXT — python/curvsweep_archive against
a second reading path.

ARCHIVE is the demo archive of test_archive (CS_ARCHIVE_WRITE_DEMO: spec
tests/specs/demo-small.ini; cells 0..5 done, 6 failed, 7 pending; depth 1
for even cells, 2 for odd; cell 1 carries /points). INFO_TXT is what
`curvsweep info ARCHIVE` printed. The module's DataFrames are checked
against raw h5py reads (and tests/archive_points.py for /points), the
counts against the C reader's, the committed_rows rule against a row
appended past it, and format_version 3's per-cell /points groups against
format 4's shared arrays."""
import math
import os
import re
import shutil
import sys
import tempfile

import h5py
import numpy as np

import curvsweep_archive as ca

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from archive_points import cell_points, to_group_layout  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from tally import check, finish  # noqa: E402

path, info_path = sys.argv[1], sys.argv[2]


def same(a, b):
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b


# /cells: every row, decoded, with the counts the C reader printed
info = open(info_path).read()
m = re.search(r"cells\s+(\d+): (\d+) done, (\d+) pending, (\d+) failed, (\d+) diverged", info)
check(m is not None, "curvsweep info printed no cell counts: %r" % info)
cells = ca.cells(path)
total, done, pending, failed, diverged = (int(v) for v in m.groups())
check(len(cells) == total == 8, "cells: %d rows, info says %d" % (len(cells), total))
counts = cells["status"].value_counts().to_dict()
check(counts.get("done", 0) == done and counts.get("pending", 0) == pending and
      counts.get("failed", 0) == failed and counts.get("diverged", 0) == diverged,
      "status counts %s, info says %s" % (counts, m.groups()))
check(all(isinstance(v, str) for v in cells["arch"]), "arch column not decoded to str")
check(list(ca.cells(path, status="done")["cell_id"]) == [0, 1, 2, 3, 4, 5], "cells(status='done')")
check(ca.attrs(path)["spec_name"] == "demo-small", "attrs spec_name")
check("[sweep]" in ca.spec(path), "spec text")

# /curvature: the rows of done cells (the demo's results carry depth 1 or 2
# whatever the spec's depth column says), values as stored; the failed
# cell's rows are not returned
curv = ca.curvature(path)
done_ids = set(cells.loc[cells["status"] == "done", "cell_id"])
with h5py.File(path, "r") as f:
    raw = f["curvature"][()]
raw = raw[[int(c) in done_ids for c in raw["cell_id"]]]
check(len(curv) == len(raw) == 9, "curvature: %d rows, %d rows of done cells stored" % (len(curv), len(raw)))
check(6 not in set(curv["cell_id"]), "curvature rows of failed cell 6 returned")
for row in raw:
    c, p = int(row["cell_id"]), int(row["prefix"])
    got = curv[(curv["cell_id"] == c) & (curv["prefix"] == p)]
    check(len(got) == 1, "curvature row (%d, %d) missing" % (c, p))
    if len(got) == 1:
        for k in ("K_mean", "Kh_absmean", "logdet_mean", "sink_mass", "degenerate_frac"):
            check(same(float(got[k].iloc[0]), float(row[k])), "curvature (%d, %d) %s" % (c, p, k))
        check(got["arch"].iloc[0] == cells.loc[cells["cell_id"] == c, "arch"].iloc[0],
              "config column arch joined for cell %d" % c)

# /curves: finished cells only (done and failed), pending cell 7 never
cur = ca.curves(path)
check(7 not in set(cur["cell_id"]), "curves of pending cell 7 returned")

# /points: cell 1 against tests/archive_points.py
pts = ca.points(path)
check(set(pts["cell_id"]) == {1}, "points: cells %s, want {1}" % set(pts["cell_id"]))
with h5py.File(path, "r") as f:
    ref = cell_points(f, 1)
L, n = ref["S"].shape
check(len(pts) == L * n, "points: %d rows, want %d" % (len(pts), L * n))
for l in range(L):
    for i in range(n):
        r = pts[(pts["prefix"] == l + 1) & (pts["point"] == i)].iloc[0]
        check(same(float(r["S"]), float(ref["S"][l, i])) and same(float(r["x0"]), float(ref["x"][i, 0])),
              "points value (%d, %d)" % (l, i))
        check(r["class"] == ca.CLASS_NAMES[int(ref["class"][l, i])], "points class (%d, %d)" % (l, i))

with tempfile.TemporaryDirectory() as d:
    # rows appended past committed_rows (an interrupted write), one of done
    # cell 0 and one of pending cell 7, are never returned: the tail counts
    # only when every row of it belongs to a finished cell
    p2 = os.path.join(d, "torn.h5")
    shutil.copy(path, p2)
    with h5py.File(p2, "r+") as f:
        t = f["curvature"]
        committed = int(t.attrs["committed_rows"])
        t.resize((t.shape[0] + 2,))
        for k, cell in enumerate((0, 7)):
            extra = t[committed - 1]
            extra["cell_id"] = cell
            extra["prefix"] = 9
            t[t.shape[0] - 2 + k] = extra
    got = ca.curvature(p2)
    check(len(got) == len(curv) and 9 not in set(got["prefix"]), "rows past committed_rows were returned")
    with h5py.File(p2, "r+") as f:
        f["curvature"].attrs["committed_rows"] = f["curvature"].shape[0]
    got = ca.curvature(p2)
    check(len(got) == len(curv) + 1 and 7 not in set(got["cell_id"]),
          "committed rows: %d returned, want %d without pending cell 7" % (len(got), len(curv) + 1))

    # a table with no committed rows (a sweep without teacher-student
    # cells): an empty frame that still has its columns, config included
    p5 = os.path.join(d, "empty.h5")
    shutil.copy(path, p5)
    with h5py.File(p5, "r+") as f:
        f["estimation"].resize((0,))
        f["estimation"].attrs["committed_rows"] = np.int64(0)
    got = ca.estimation(p5)
    check(len(got) == 0 and {"cell_id", "arch", "fn_error"} <= set(got.columns),
          "empty /estimation: %d rows, columns %s" % (len(got), list(got.columns)))

    # format_version 3: /points as a group per cell, read the same
    p3 = os.path.join(d, "v3.h5")
    shutil.copy(path, p3)
    with h5py.File(p3, "r+") as f:
        to_group_layout(f)
        f.attrs["format_version"] = np.int32(3)
    pts3 = ca.points(p3)
    check(pts3.drop(columns=[]).equals(pts), "format 3 points differ from format 4")

    # not an archive: a clear refusal
    p4 = os.path.join(d, "plain.h5")
    with h5py.File(p4, "w") as f:
        f["x"] = 1
    try:
        ca.cells(p4)
        check(False, "a plain HDF5 file was read as an archive")
    except ValueError as e:
        check("not a curvsweep archive" in str(e), "refusal message: %s" % e)

finish()
