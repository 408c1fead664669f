#!/usr/bin/env python3
"""export_check.py ARCHIVE DIR — `curvsweep export ARCHIVE --csv DIR` against
python/curvsweep_archive (a second reader of the same archive): the same
rows, the same decoded axis values, every number bit for bit."""
import os
import sys

import numpy as np
import pandas as pd

import curvsweep_archive as ca

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from tally import check, finish  # noqa: E402

path, d = sys.argv[1], sys.argv[2]


def same_frame(a, b, what, keys):
    a = a.sort_values(keys).reset_index(drop=True)
    b = b.sort_values(keys).reset_index(drop=True)
    check(list(a.columns) == list(b.columns), "%s columns: %s vs %s" % (what, list(a.columns), list(b.columns)))
    check(len(a) == len(b), "%s rows: %d vs %d" % (what, len(a), len(b)))
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return
    for c in a.columns:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if x.dtype.kind == "f" or y.dtype.kind == "f":
            x, y = x.astype(float), y.astype(float)
            ok = np.array_equal(x, y, equal_nan=True)
        else:
            ok = [str(u) for u in x] == [str(v) for v in y]
        check(ok, "%s column %s differs" % (what, c))


cells = pd.read_csv(d + "/cells.csv", keep_default_na=False, na_values=["nan"], float_precision="round_trip")
ref = ca.cells(path)
ref["message"] = ref["message"].astype(str)
cells["message"] = cells["message"].astype(str)
same_frame(cells, ref, "cells.csv", ["cell_id"])
same_frame(pd.read_csv(d + "/curvature.csv", float_precision="round_trip"), ca.curvature(path), "curvature.csv", ["cell_id", "prefix"])
same_frame(pd.read_csv(d + "/curves.csv", float_precision="round_trip"), ca.curves(path), "curves.csv", ["cell_id", "epoch"])
# the format-6 tables, column by column from the archive's row types
for name, reader, keys in (("estimation", ca.estimation, ["cell_id"]), ("gates", ca.gates, ["cell_id", "prefix"]),
                           ("cellstats", ca.cellstats, ["cell_id"])):
    ref = reader(path)
    got = pd.read_csv(d + "/" + name + ".csv", float_precision="round_trip")
    check(len(got) > 0 or len(ref) == 0, "%s.csv empty" % name)
    same_frame(got, ref, name + ".csv", keys)
    if "--require-" + name in sys.argv[3:]:
        check(len(got) > 0, "%s.csv has no rows, but the archive does" % name)
# the failed cell's message survives quoting
check(any("failed" in m for m in cells["message"]), "no failed cell's message in cells.csv")
finish()
