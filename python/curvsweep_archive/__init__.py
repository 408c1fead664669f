"""curvsweep_archive — a curvsweep HDF5 archive as pandas DataFrames.

The layout is docs/ARCHIVE.md of the curvsweep sources; this module follows
its reading rules so a DataFrame never holds a row the writer had not
finished:

- ``committed_rows``: rows of /curvature, /curves and /points/index at and
  beyond it belong to an interrupted write and are dropped (unless every one
  of them belongs to a cell already finished in /cells).
- rows of cells that are not finished (pending) are dropped.
- byte strings are decoded; the point class enum becomes its name.

Format versions 2, 3 and 4 are read (2 and 3 keep per-point values in a
group per cell; 2 has no attention-sink columns, which come out as NaN).

    import curvsweep_archive as ca
    cells = ca.cells("results/demo.h5")               # one row per cell
    curv = ca.curvature("results/demo.h5")            # one row per (cell, prefix), config columns joined
    pts = ca.points("results/demo.h5", cell_id=7)     # one row per (cell, prefix, point)

A file a sweep is writing may be read: the writer opens it only for a short
write about once a second; a read that lands inside one fails with an HDF5
error and is retried (``retries``), never returned half-read.
"""
import time

import h5py
import numpy as np
import pandas as pd

__all__ = ["attrs", "spec", "cells", "curvature", "curves", "points", "runs", "fields",
           "SUPPORTED_FORMATS"]

SUPPORTED_FORMATS = (2, 3, 4, 5)
FINISHED = ("done", "failed", "diverged")
CLASS_NAMES = {0: "degenerate", 1: "flat", 2: "curved", 3: "unresolved"}
POINT_ARRAYS = ("S", "S_err", "S_tilde", "tr_g", "logdet_g", "H_norm")
FIELD_ARRAYS = ("K", "K_tilde", "K_hat", "logdet_g", "aniso", "S_err")
# the columns of /cells that are results, not the cell's configuration
RESULT_COLUMNS = ("status", "rank", "attempts", "wall_s", "train_loss", "train_acc", "test_acc",
                  "n_params", "message")


def _decode(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _frame(rows):
    """A compound numpy array as a DataFrame, byte-string columns decoded."""
    df = pd.DataFrame(rows)
    for c in df.columns:
        if df[c].dtype == object or (len(rows) and rows.dtype[c].kind == "S"):
            df[c] = [_decode(v) for v in df[c]]
    return df


def _open(path, retries):
    last = None
    for attempt in range(retries + 1):
        try:
            f = h5py.File(path, "r", locking=False)
        except OSError as e:  # a live archive inside a write: read again
            last = e
            time.sleep(0.2 * (attempt + 1))
            continue
        fmt = f.attrs.get("format")
        if _decode(fmt) != "curvsweep":
            f.close()
            raise ValueError("%s is not a curvsweep archive (format attribute %r)" % (path, fmt))
        version = int(f.attrs.get("format_version", -1))
        if version not in SUPPORTED_FORMATS:
            f.close()
            raise ValueError("%s: format_version %d is not one of %s"
                             % (path, version, SUPPORTED_FORMATS))
        return f
    raise OSError("%s could not be opened after %d tries: %s" % (path, retries + 1, last))


def _read(path, fn, retries=5):
    """fn(h5py.File) on a fresh handle, retried when a live write interferes."""
    last = None
    for attempt in range(retries + 1):
        f = _open(path, retries)
        try:
            return fn(f)
        except OSError as e:  # checksum or address error inside a write: read again
            last = e
            time.sleep(0.2 * (attempt + 1))
        finally:
            f.close()
    raise OSError("%s could not be read after %d tries: %s" % (path, retries + 1, last))


def _status(f):
    c = f["cells"]
    return dict(zip(c["cell_id"].tolist(), (_decode(s) for s in c["status"])))


def _committed(f, name, status):
    """The rows of table name that count (docs/ARCHIVE.md, "Reading an archive")."""
    d = f[name]
    rows = d[()]
    n = int(d.attrs.get("committed_rows", len(rows)))
    if n < len(rows):
        tail = rows[n:]
        if all(status.get(int(c)) in FINISHED for c in tail["cell_id"]):
            n = len(rows)
    return rows[:n]


def attrs(path, retries=5):
    """The root attributes (format, format_version, software_version, created,
    spec_sha256, spec_name) as a dict of Python values."""
    return _read(path, lambda f: {k: _decode(v.item() if hasattr(v, "item") else v)
                                  for k, v in f.attrs.items()}, retries)


def spec(path, retries=5):
    """The spec text exactly as the sweep read it."""
    def get(f):
        s = f["spec"]
        v = s[()] if s.shape == () else s[0]
        return _decode(v)
    return _read(path, get, retries)


def cells(path, status=None, retries=5):
    """/cells: one row per cell of the archive (cell_id, every axis, status,
    rank, attempts, wall_s, train_loss, train_acc, test_acc, n_params,
    message). status: keep only cells with this status (a string or a
    tuple of them)."""
    df = _read(path, lambda f: _frame(f["cells"][()]), retries)
    if status is not None:
        keep = (status,) if isinstance(status, str) else tuple(status)
        df = df[df["status"].isin(keep)].reset_index(drop=True)
    return df


def _config(f):
    df = _frame(f["cells"][()])
    return df[[c for c in df.columns if c not in RESULT_COLUMNS]]


def _per_cell_table(name, with_config, keep_status, retries, path):
    def get(f):
        status = _status(f)
        rows = _committed(f, name, status)
        df = _frame(rows)
        df = df[[status.get(int(c)) in keep_status for c in df["cell_id"]]]
        if with_config:
            df = _config(f).merge(df, on="cell_id", how="inner")
        return df.reset_index(drop=True)
    return _read(path, get, retries)


def curvature(path, with_config=True, retries=5):
    """/curvature: one row per (done cell, prefix) with the per-prefix
    statistics (docs/NUMERICS.md); with_config joins the cell's axis
    columns (arch, depth, task, seed, ...). Format 2 archives lack
    sink_mass and max_attn, formats 2-4 massive_act, value_drain and
    resid_peak: NaN there."""
    df = _per_cell_table("curvature", with_config, ("done",), retries, path)
    for c in ("sink_mass", "max_attn", "massive_act", "value_drain", "resid_peak"):
        if c not in df.columns:
            df[c] = np.nan
    return df


def curves(path, with_config=True, retries=5):
    """/curves: the training curve (cell_id, epoch, train_loss, train_acc,
    test_acc) of every finished cell."""
    return _per_cell_table("curves", with_config, FINISHED, retries, path)


def runs(path, retries=5):
    """/runs: one row per invocation of curvsweep run on the archive."""
    return _read(path, lambda f: _frame(f["runs"][()]), retries)


def _points_v4(f, status, want):
    ix = _committed(f, "points/index", status)
    out = {}
    for r in ix:  # a later row of the same cell replaces an earlier one
        c = int(r["cell_id"])
        if status.get(c) == "done" and (want is None or c in want):
            out[c] = r
    res = {}
    for c, r in out.items():
        n, m, L = int(r["n_points"]), int(r["m"]), int(r["depth"])
        x0, s0 = int(r["x_start"]), int(r["start"])
        d = {"x": f["points/x"][x0:x0 + n * m].reshape(n, m)}
        for k in POINT_ARRAYS + ("class",):
            d[k] = f["points/" + k][s0:s0 + L * n].reshape(L, n)
        res[c] = d
    return res


def _points_groups(f, status, want):
    res = {}
    if "points" not in f:
        return res
    for name in f["points"]:
        c = int(name)
        if status.get(c) == "done" and (want is None or c in want):
            g = f["points"][name]
            res[c] = {k: g[k][()] for k in ("x",) + POINT_ARRAYS + ("class",)}
    return res


def points(path, cell_id=None, with_config=True, retries=5):
    """The per-point values of done cells saved with save_points: one row per
    (cell_id, prefix, point) with the input x0..x{m-1}, S, S_err, S_tilde,
    tr_g, logdet_g, H_norm (NaN at degenerate points) and class
    ("degenerate", "flat", "curved", "unresolved"; only flat and curved
    points are resolved). cell_id: one id or a list of them (default all)."""
    want = None if cell_id is None else set(np.atleast_1d(cell_id).astype(int).tolist())

    def get(f):
        status = _status(f)
        if "points" in f and "index" in f["points"]:
            per = _points_v4(f, status, want)
        else:
            per = _points_groups(f, status, want)
        frames = []
        for c in sorted(per):
            d = per[c]
            L, n = d["S"].shape
            m = d["x"].shape[1]
            cols = {"cell_id": np.full(L * n, c, dtype=np.int64),
                    "prefix": np.repeat(np.arange(1, L + 1, dtype=np.int32), n),
                    "point": np.tile(np.arange(n, dtype=np.int32), L)}
            for a in range(m):
                cols["x%d" % a] = np.tile(d["x"][:, a], L)
            for k in POINT_ARRAYS:
                cols[k] = d[k].reshape(-1)
            cols["class"] = [CLASS_NAMES.get(int(v), "invalid") for v in d["class"].reshape(-1)]
            frames.append(pd.DataFrame(cols))
        df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            columns=["cell_id", "prefix", "point"] + list(POINT_ARRAYS) + ["class"])
        if with_config and len(df):
            df = _config(f).merge(df, on="cell_id", how="inner")
        return df
    return _read(path, get, retries)


def fields(path, cell_id, retries=5):
    """The curvature field of one done cell ([curvature] field = N): a dict
    with N, box (lo, hi), the (L, N, N) arrays K, K_tilde, K_hat, logdet_g,
    aniso, S_err and class (codes; CLASS_NAMES maps them), and pred (N, N).
    Grid point [i, j] sits at (lo + (j + ½)h, lo + (i + ½)h), h = (hi − lo)/N."""
    def get(f):
        if _status(f).get(int(cell_id)) != "done":
            raise KeyError("cell %d of %s is not done" % (cell_id, path))
        name = "fields/%d" % int(cell_id)
        if name not in f:
            raise KeyError("%s has no %s (the spec's field = 0?)" % (path, name))
        g = f[name]
        N = int(g.attrs["N"])
        out = {"N": N, "box": tuple(float(v) for v in g.attrs["box"])}
        for k in FIELD_ARRAYS + ("class",):
            v = g[k][()]
            out[k] = v.reshape(v.shape[0], N, N)
        out["pred"] = g["pred"][()].reshape(N, N)
        return out
    return _read(path, get, retries)
