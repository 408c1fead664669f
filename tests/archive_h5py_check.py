#!/usr/bin/env python3
"""archive_h5py_check.py ARCHIVE SPEC — read a curvsweep archive with h5py +
numpy (as a user would) and check the documented schema and values.

ARCHIVE is the demo archive written by `test_archive` with
CS_ARCHIVE_WRITE_DEMO set (tests/test_archive.c, demo_archive): spec
tests/specs/demo-small.ini; cells 0..5 done, 6 failed, 7 pending; depth 1
for even cells, 2 for odd; cell 1 carries /points and /params. The
expected numbers are recomputed here from the formulas documented at
known_result in tests/support/archive_fixtures.c."""
import math
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from archive_points import cell_points  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from tally import check, finish  # noqa: E402

path, spec_path = sys.argv[1], sys.argv[2]


def close(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


STATS = ["degenerate_frac", "unresolved_frac", "flat_frac", "curved_frac", "K_mean", "K_median", "K_absmean", "K_q05", "K_q95", "K_fracpos", "S_mean", "S_se", "Kt_mean", "Kt_median", "Kt_absmean", "Kt_q05", "Kt_q95", "Kt_fracpos", "St_mean", "Kh_mean", "Kh_median", "Kh_absmean", "Kh_q05", "Kh_q95", "Kh_fracpos", "aniso_median", "H_norm_mean", "logdet_mean", "intK", "intabsK", "intK_err", "sink_mass", "max_attn", "massive_act", "value_drain", "resid_peak", "sink_headmax", "attn_entropy", "ablate_first", "ablate_attn"]

with h5py.File(path, "r") as f:
    # root attributes
    check(f.attrs["format"] == b"curvsweep", "format attribute")
    check(int(f.attrs["format_version"]) == 6, "format_version attribute")
    for name in ("software_version", "created", "spec_sha256", "spec_name"):
        check(name in f.attrs, "root attribute " + name)
    check(f.attrs["spec_name"] == b"demo-small", "spec_name")
    created = f.attrs["created"].decode()
    check(len(created) == 20 and created[10] == "T" and created.endswith("Z"), "created is UTC ISO 8601")

    # /spec: the spec text exactly, one string in a chunked, Fletcher32-checksummed dataset
    spec_ds = f["spec"]
    check(spec_ds.shape == (1,), "/spec has shape (1,)")
    check(spec_ds.chunks == (1,), "/spec is chunked")
    check(spec_ds.fletcher32, "/spec has the Fletcher32 filter")
    with open(spec_path, "rb") as s:
        check(spec_ds[0] == s.read(), "/spec equals the spec file")
    import hashlib
    check(f.attrs["spec_sha256"].decode() == hashlib.sha256(spec_ds[0]).hexdigest(), "spec_sha256")
    # every dataset carries Fletcher32; the file format is HDF5 1.10 (superblock version 3)
    def all_datasets(name, obj):
        if isinstance(obj, h5py.Dataset):
            check(obj.fletcher32, "dataset /%s has the Fletcher32 filter" % name)
    f.visititems(all_datasets)
    check(f.id.get_create_plist().get_version()[0] >= 2, "superblock version >= 2 (checksummed)")

    # /cells as a numpy structured array
    cells = f["cells"][:]
    want = ["cell_id", "arch", "depth", "task", "seed", "status", "rank", "attempts", "wall_s",
            "train_loss", "train_acc", "test_acc", "n_params", "message"]
    check(list(cells.dtype.names) == want, "cells fields %s" % (cells.dtype.names,))
    check(cells.shape == (8,), "8 cells")
    check(list(cells["cell_id"]) == list(range(8)), "cell ids 0..7")
    # demo-small: arch (ungated, gated) x depth (1, 2) x task linear x seed (0, 1), seed fastest
    for c in range(8):
        row = cells[c]
        check(row["arch"] == (b"ungated" if c < 4 else b"gated"), "arch of cell %d" % c)
        check(row["depth"] == 1 + (c // 2) % 2, "depth of cell %d" % c)
        check(row["task"] == b"linear", "task of cell %d" % c)
        check(row["seed"] == c % 2, "seed of cell %d" % c)
    status = [s.decode() for s in cells["status"]]
    check(status == ["done"] * 6 + ["failed", "pending"], "statuses %s" % status)
    for c in range(7):
        row = cells[c]
        check(row["rank"] == c % 4, "rank of cell %d" % c)
        check(row["attempts"] == (2 if c == 6 else 1), "attempts of cell %d" % c)
        check(row["wall_s"] == 1.5 + c, "wall_s of cell %d" % c)
        check(row["train_loss"] == 0.25 + c / 64, "train_loss of cell %d" % c)
        check(row["train_acc"] == 0.5 + c / 128, "train_acc of cell %d" % c)
        check(row["test_acc"] == 0.375 + c / 256, "test_acc of cell %d" % c)
        check(row["n_params"] == 1000 + c, "n_params of cell %d" % c)
    check(cells[6]["message"] == b"failed: cell 6", "message of the failed cell")
    check(cells[7]["rank"] == -1 and math.isnan(cells[7]["test_acc"]), "pending row")

    # /curvature: one row per (cell, prefix), geom_stats names
    curv = f["curvature"][:]
    check(list(curv.dtype.names) == ["cell_id", "prefix", "n_points"] + STATS,
          "curvature fields %s" % (curv.dtype.names,))
    depth = {c: 1 + c % 2 for c in range(7)}
    check(len(curv) == sum(depth.values()), "curvature rows %d" % len(curv))
    for row in curv:
        c, l = int(row["cell_id"]), int(row["prefix"])
        check(1 <= l <= depth[c], "prefix %d of cell %d" % (l, c))
        check(row["n_points"] == 16, "n_points")
        for k, name in enumerate(STATS):
            want_v = float("nan") if (name == "intK" and c % 2) else 100 * c + l + k / 32 - 3
            check(close(float(row[name]), want_v), "%s of cell %d prefix %d" % (name, c, l))

    # /curves
    curves = f["curves"][:]
    check(list(curves.dtype.names) == ["cell_id", "epoch", "train_loss", "train_acc", "test_acc"],
          "curves fields")
    check(len(curves) == 7 * 3, "curves rows")
    for row in curves:
        c, e = int(row["cell_id"]), int(row["epoch"])
        check(row["train_loss"] == 1.0 / e + c and row["train_acc"] == 0.125 * (e - 1)
              and row["test_acc"] == 0.0625 * (e - 1) + c / 1024, "curve of cell %d epoch %d" % (c, e))

    # /gates: a row per prefix of every done cell (the fixture gives every
    # done cell rows), u = (cell mod 32)/64
    gates = f["gates"][:]
    want_g = ["cell_id", "prefix", "n_scores", "mean", "median", "q10", "q90", "frac_low",
              "var_query", "var_channel"] + ["hist_%02d" % b for b in range(20)]
    check(list(gates.dtype.names) == want_g, "gates fields %s" % (gates.dtype.names,))
    check(len(gates) == sum(depth[c] for c in range(6)), "gates rows %d" % len(gates))
    for row in gates:
        c, l = int(row["cell_id"]), int(row["prefix"])
        u = (c % 32) / 64
        want_v = {"n_scores": 64 + c, "mean": 0.25 + u, "median": 0.125 + u + l / 128, "q10": l / 64,
                  "q90": 0.75 + u / 4, "frac_low": l / 32, "var_query": 0.5 - u / 2,
                  "var_channel": u / 2}
        want_v.update({"hist_%02d" % b: (b + 1) / 210 for b in range(20)})
        check(c < 6 and 1 <= l <= depth[c], "gates prefix %d of cell %d" % (l, c))
        for name, v in want_v.items():
            check(row[name] == v, "gates %s of cell %d prefix %d" % (name, c, l))

    # /cellstats: one row per done cell (the failed cell has none)
    cs = f["cellstats"][:]
    check(list(cs.dtype.names) == ["cell_id", "spikes", "loss_ratio_max", "test_nll", "test_brier",
                                   "test_ece"], "cellstats fields %s" % (cs.dtype.names,))
    check(sorted(int(c) for c in cs["cell_id"]) == list(range(6)), "cellstats rows")
    for row in cs:
        c = int(row["cell_id"])
        check(row["spikes"] == c % 3 and row["loss_ratio_max"] == 1.5 + c / 64
              and row["test_nll"] == 0.5 + c / 512 and row["test_brier"] == 0.25 + (c % 64) / 256
              and row["test_ece"] == 0.0625 + (c % 16) / 64, "cellstats of cell %d" % c)

    # /points of cell 1 (/points/index, the arrays), and /params/1
    ix = f["points/index"][:]
    check(list(ix.dtype.names) == ["cell_id", "n_points", "m", "depth", "x_start", "start"],
          "points/index fields")
    check(len(ix) == 1 and int(ix["cell_id"][0]) == 1 and int(ix["n_points"][0]) == 5
          and int(ix["m"][0]) == 2 and int(ix["depth"][0]) == 2, "points/index row of cell 1")
    check(int(f["points/index"].attrs["committed_rows"]) == 1, "points/index committed_rows")
    check(f["points/x"].shape == (10,) and f["points/S"].shape == (10,), "points array lengths")
    g = cell_points(f, 1)
    check(g["x"].shape == (5, 2), "x shape")
    check(np.array_equal(g["x"][:], np.array([[i + j / 2 - 1 for j in range(2)] for i in range(5)])), "x values")
    for k, name in enumerate(["S", "S_err", "S_tilde", "tr_g", "logdet_g", "H_norm"]):
        want_a = np.array([[10 * k + l + i / 8 + 1 for i in range(5)] for l in (1, 2)])
        check(g[name].shape == (2, 5) and np.array_equal(g[name][:], want_a), "/points/1/" + name)
    codes = h5py.check_enum_dtype(f["points/class"].dtype)
    check(codes == {"degenerate": 0, "flat": 1, "curved": 2, "unresolved": 3}, "class enum %s" % codes)
    want_c = np.array([[(l * 5 + i + 1) % 4 for i in range(5)] for l in (0, 1)])
    check(np.array_equal(g["class"][:], want_c), "/points/1/class")
    check(cell_points(f, 0) is None, "no points for cell 0")
    p = f["params/1"]
    names = [n.decode() for n in p.attrs["tensors"]]
    check(names == ["embed/W", "embed/b", "layer0/Wq", "readout/b"], "tensor order %s" % names)
    for t, (name, shape) in enumerate(zip(names, [(3, 2), (1, 3), (3, 3), (1, 2)])):
        want_a = np.array([t + i / 2 + 1 for i in range(shape[0] * shape[1])]).reshape(shape)
        check(p[name].shape == shape and np.array_equal(p[name][:], want_a), "/params/1/" + name)
        # per-cell arrays: shuffle + Fletcher32, not deflated (docs/ARCHIVE.md)
        dcpl_filters = p[name].compression is None and p[name].shuffle and p[name].fletcher32
        check(dcpl_filters, "filters on /params/1/" + name)
    for name in ("cells", "curvature", "curves", "runs"):
        d = f[name]
        check(d.chunks is not None and d.compression == "gzip" and d.shuffle and d.fletcher32
              and d.maxshape == (None,), "chunked, filtered, extendible /" + name)

    # /runs
    runs = f["runs"][:]
    check(list(runs.dtype.names) == ["start", "end", "hosts", "ranks", "team", "shard", "slurm_job",
                                     "nodelist", "requeue_count", "cells_run"], "runs fields")
    check(len(runs) == 1 and runs[0]["end"] == b"2026-05-01T00:10:00Z" and runs[0]["cells_run"] == 7
          and runs[0]["ranks"] == 2 and runs[0]["slurm_job"] == b"123_4", "runs row")

    # pandas, when installed (not a project dependency)
    try:
        import pandas
    except ImportError:
        print("pandas not installed: DataFrame check skipped")
    else:
        df = pandas.DataFrame(f["cells"][:])
        check(list(df.columns) == want and len(df) == 8, "pandas DataFrame of /cells")
        check((df["status"] == b"done").sum() == 6, "pandas status counts")

finish()
