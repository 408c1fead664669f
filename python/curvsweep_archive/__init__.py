"""curvsweep_archive — a curvsweep HDF5 archive as pandas DataFrames.

The layout is docs/ARCHIVE.md of the curvsweep sources; this module follows
its reading rules so a DataFrame never holds a row the writer had not
finished:

- ``committed_rows``: rows of /curvature, /curves and /points/index at and
  beyond it belong to an interrupted write and are dropped (unless every one
  of them belongs to a cell already finished in /cells).
- rows of cells that are not finished (pending) are dropped.
- byte strings are decoded; the point class enum becomes its name.

Every format_version in ``SUPPORTED_FORMATS`` is read, as docs/ARCHIVE.md
("Versions") says an older one is: a column it lacks comes out as NaN, a
table it lacks as no rows.

    import curvsweep_archive as ca
    cells = ca.cells("results/demo.h5")               # one row per cell
    curv = ca.curvature("results/demo.h5")            # one row per (cell, prefix), config columns joined
    pts = ca.points("results/demo.h5", cell_id=7)     # one row per (cell, prefix, point)

A file a sweep is writing may be read at any time (docs/ARCHIVE.md, "Live
readers"): every function here opens it under the archive's shared lock (a
``flock`` on the file, the lock HDF5's own file locking takes), so it waits
while the sweep writes a batch (tens of milliseconds, about once a second)
and then reads a file that holds whole batches only: finished cells and
their rows, never a half-written one. The file is closed (and the lock
released) before a function returns, so a reader never holds up the sweep.
For raw h5py access use ``locked``:

    with ca.locked("results/demo.h5") as f:           # an h5py.File, read-only
        status = f["cells"]["status"][:]

and keep the block short: the sweep defers its writes while it lasts. A
reader kept for the whole run (a notebook) is ``Archive``, refreshed when
wanted:

    a = ca.Archive("results/demo.h5")
    a.counts                 # {"done": 12, "pending": 88, ...} as last read
    a.refresh().counts       # read again: the cells finished since
"""
import contextlib
import errno
import fcntl
import os
import time

import h5py
import numpy as np
import pandas as pd

__all__ = ["attrs", "spec", "cells", "curvature", "curves", "estimation", "gates", "cellstats",
           "points", "runs", "fields",
           "MEASURES",
           "locked", "Archive", "ArchiveBusy", "SUPPORTED_FORMATS", "LOCK_WAIT_SECONDS"]

# How long a read waits for the sweep's batch to be written (as curvsweep's
# own readers, ARCHIVE_READ_WAIT_SECONDS in src/archive/archive_internal.h).
LOCK_WAIT_SECONDS = 60.0

SUPPORTED_FORMATS = (2, 3, 4, 5, 6)
FINISHED = ("done", "failed", "diverged")
CLASS_NAMES = {0: "degenerate", 1: "flat", 2: "curved", 3: "unresolved"}
POINT_ARRAYS = ("S", "S_err", "S_tilde", "tr_g", "logdet_g", "H_norm")
FIELD_ARRAYS = ("K", "K_tilde", "K_hat", "logdet_g", "aniso", "S_err")
# The /curvature columns the curvsweep report reads, each with its unit and
# meaning: those of the report's measure table (analysis/stats/measures.c of the
# curvsweep sources; tests/test_analysis_measures.c checks they agree).
# Columns an older format_version lacks come out as NaN (curvature()).
MEASURES = {
    "K_absmean": ("1/length²", "mean |K|, the raw Gaussian curvature (units 1/length²)"),
    "Kt_absmean": ("scale-free", "mean |K̃|, the trace-normalised (scale-free) curvature"),
    "Kt_mean": ("scale-free", "mean signed K̃ (positive: on average positively curved)"),
    "intK": ("scale-free", "∫K dA over the input plane (input_dim 2)"),
    "logdet_mean": ("log of the metric's determinant", "mean log det g of the pulled-back metric"),
    "Kh_absmean": ("scale-free", "mean |K̂|, the area-normalised curvature"),
    "Kh_mean": ("scale-free", "mean signed K̂"),
    "aniso_median": ("log (≥ 0)", "median anisotropy index log(AM/GM) of g's eigenvalues"),
    "intabsK": ("scale-free", "∫|K| dA (input_dim 2)"),
    "unresolved_frac": ("fraction of the points", "fraction of the points whose curvature is unresolved (rounding)"),
    "flat_frac": ("fraction of the points", "fraction of the points classified flat"),
    "curved_frac": ("fraction of the points", "fraction of the points classified curved"),
    "sink_mass": ("attention weight", "first-token share: mean attention weight of the queries after the first token on it (the CLS token of the self family, BOS of the lm family), over heads"),
    "max_attn": ("attention weight", "mean largest attention weight of a query after the first token, over heads (older archives: docs/ARCHIVE.md)"),
    "sink_headmax": ("attention weight", "largest over heads of a head's first-token share (older archives: docs/ARCHIVE.md)"),
    "massive_act": ("ratio", "massive activation max |h| / median |h| of the residual stream"),
    "value_drain": ("ratio", "value drain ‖v_BOS‖ / median ‖v_t‖"),
    "resid_peak": ("ratio", "residual peak ‖h_BOS‖ / median ‖h_t‖"),
    "attn_entropy": ("fraction of log(keys)", "mean attention entropy of a query over its keys divided by log(number of keys): 1 uniform, 0 on one key"),
    "ablate_first": ("nats", "test loss with the block's first-token attention removed (rows renormalised) minus the intact test loss (lm)"),
    "ablate_attn": ("nats", "test loss with the block's attention output removed minus the intact test loss (lm)"),
}
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


class ArchiveBusy(OSError):
    """The archive stayed locked by its writer for longer than the wait: it
    is being written, not damaged; read again later."""


# The writer's gate (src/archive/format/archive_lock.c): a byte lock far beyond the
# end of the file that a writer waiting for its exclusive lock holds; no
# new read starts while it is held, so overlapping readers cannot hold the
# sweep's writes off for ever.
GATE_OFFSET = 1 << 62


def _writer_waiting(fd):
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, GATE_OFFSET)
    except OSError as e:
        return e.errno in (errno.EAGAIN, errno.EACCES)
    fcntl.lockf(fd, fcntl.LOCK_UN, 1, GATE_OFFSET)
    return False


def _lock(path, timeout):
    """A descriptor of path holding the shared lock (None where the file
    system has no flock): waits while a writer holds the exclusive one or
    waits for it at the gate, and checks that the locked file is still the
    one at path (a rebuild renames a new file into place)."""
    t0 = time.monotonic()
    pause = 0.001
    while True:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            if _writer_waiting(fd):
                raise BlockingIOError(errno.EWOULDBLOCK, "a writer waits")
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                return None
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EINTR):
                raise
            if time.monotonic() - t0 >= timeout:
                raise ArchiveBusy(errno.EWOULDBLOCK, "%s is being written (locked by the process "
                                  "writing it for more than %g s): it is not damaged, read "
                                  "again later" % (path, timeout))
            time.sleep(pause)
            pause = min(2 * pause, 0.02)
            continue
        held, now = os.fstat(fd), os.stat(path)
        if (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
            return fd
        os.close(fd)


@contextlib.contextmanager
def locked(path, timeout=LOCK_WAIT_SECONDS):
    """The archive as a read-only h5py.File under its shared lock, closed
    (and the lock released) when the with block ends. The sweep writing it
    defers its batches while the block lasts: read, then leave it."""
    fd = _lock(path, timeout)
    try:
        # h5py's own locking off: the lock is fd's (a second flock of this
        # process would only add a second shared lock)
        f = h5py.File(path, "r", locking=False)
        try:
            fmt = f.attrs.get("format")
            if _decode(fmt) != "curvsweep":
                raise ValueError("%s is not a curvsweep archive (format attribute %r)" % (path, fmt))
            version = int(f.attrs.get("format_version", -1))
            if version not in SUPPORTED_FORMATS:
                raise ValueError("%s: format_version %d is not one of %s"
                                 % (path, version, SUPPORTED_FORMATS))
            yield f
        finally:
            f.close()
    finally:
        if fd is not None:
            os.close(fd)


def _read(path, fn, timeout=LOCK_WAIT_SECONDS):
    """fn(h5py.File) under the archive's shared lock."""
    with locked(path, timeout) as f:
        return fn(f)


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


def _attrs(f):
    return {k: _decode(v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}


def attrs(path, timeout=LOCK_WAIT_SECONDS):
    """The root attributes (format, format_version, software_version, created,
    spec_sha256, spec_name) as a dict of Python values."""
    return _read(path, _attrs, timeout)


def spec(path, timeout=LOCK_WAIT_SECONDS):
    """The spec text exactly as the sweep read it."""
    def get(f):
        s = f["spec"]
        v = s[()] if s.shape == () else s[0]
        return _decode(v)
    return _read(path, get, timeout)


def cells(path, status=None, timeout=LOCK_WAIT_SECONDS):
    """/cells: one row per cell of the archive (cell_id, every axis, status,
    rank, attempts, wall_s, train_loss, train_acc, test_acc, n_params,
    message). status: keep only cells with this status (a string or a
    tuple of them)."""
    df = _read(path, lambda f: _frame(f["cells"][()]), timeout)
    if status is not None:
        keep = (status,) if isinstance(status, str) else tuple(status)
        df = df[df["status"].isin(keep)].reset_index(drop=True)
    return df


def _config(f):
    df = _frame(f["cells"][()])
    return df[[c for c in df.columns if c not in RESULT_COLUMNS]]


def _per_cell_rows(f, name, with_config, keep_status):
    status = _status(f)
    rows = _committed(f, name, status)
    df = _frame(rows)
    # a boolean array, not a list: an empty list would select no columns
    keep = np.array([status.get(int(c)) in keep_status for c in df["cell_id"]], dtype=bool)
    df = df[keep]
    if with_config:
        df = _config(f).merge(df, on="cell_id", how="inner")
    return df.reset_index(drop=True)


def _per_cell_table(name, with_config, keep_status, timeout, path):
    return _read(path, lambda f: _per_cell_rows(f, name, with_config, keep_status), timeout)


def lm_cells(f):
    """The cell_ids of the lm family's cells of an open archive f: by the
    /cells column family when it is a [grid] axis, else by the spec's
    [model] family."""
    c = _frame(f["cells"][()])
    if "family" in c.columns:
        return set(c["cell_id"][c["family"] == "lm"].tolist())
    s = f["spec"]
    section, family = None, "memory"
    for line in _decode(s[()] if s.shape == () else s[0]).splitlines():
        line = line.split(";")[0].split("#")[0].strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == "model" and "=" in line and line.split("=")[0].strip() == "family":
            family = line.split("=", 1)[1].strip()
    return set(c["cell_id"].tolist()) if family == "lm" else set()


def curvature(path, with_config=True, timeout=LOCK_WAIT_SECONDS):
    """/curvature: one row per (done cell, prefix) with the per-prefix
    statistics (docs/NUMERICS.md; the units and meanings of those the
    report reads: MEASURES); with_config joins the cell's axis columns
    (arch, depth, task, seed, ...). Format 2 archives lack sink_mass and
    max_attn, formats 2-4 massive_act, value_drain and resid_peak, formats
    2-5 sink_headmax: NaN there; formats 3-5 stored an lm row's largest
    per-head first-token share as max_attn, read as its sink_headmax (its
    max_attn NaN), as curvsweep reads it (docs/ARCHIVE.md, "Versions")."""
    def get(f):
        df = _per_cell_rows(f, "curvature", with_config, ("done",))
        if "sink_headmax" not in df.columns and "max_attn" in df.columns:
            lm = df["cell_id"].isin(lm_cells(f))
            df["sink_headmax"] = np.where(lm, df["max_attn"], np.nan)
            df.loc[lm, "max_attn"] = np.nan
        return df
    df = _read(path, get, timeout)
    for c in MEASURES:
        if c not in df.columns:
            df[c] = np.nan
    return df


def curves(path, with_config=True, timeout=LOCK_WAIT_SECONDS):
    """/curves: the training curve (cell_id, epoch, train_loss, train_acc,
    test_acc) of every finished cell."""
    return _per_cell_table("curves", with_config, FINISHED, timeout, path)


ESTIMATION_COLUMNS = ("cell_id", "restarts", "kept", "converged", "misspecified", "steps",
                      "steps_total", "grad_norm", "train_mse", "teacher_mse", "fn_error",
                      "param_error")


def estimation(path, with_config=True, timeout=LOCK_WAIT_SECONDS):
    """/estimation (format 6): one row per done cell of family mha, the
    teacher task's estimator (restarts, kept, converged, misspecified,
    steps, steps_total, grad_norm, train_mse, teacher_mse, fn_error,
    param_error; docs/ARCHIVE.md). Older formats have no such table: an
    empty frame."""
    def has(f):
        return "estimation" in f
    if not _read(path, has, timeout):
        return pd.DataFrame(columns=list(ESTIMATION_COLUMNS))
    return _per_cell_table("estimation", with_config, ("done",), timeout, path)


GATE_COLUMNS = (("cell_id", "prefix", "n_scores", "mean", "median", "q10", "q90", "frac_low",
                 "var_query", "var_channel") + tuple("hist_%02d" % b for b in range(20)))
CELLSTATS_COLUMNS = ("cell_id", "spikes", "loss_ratio_max", "test_nll", "test_brier", "test_ece")


def _optional_table(path, name, columns, with_config, keep_status, timeout):
    def has(f):
        return name in f
    if not _read(path, has, timeout):
        return pd.DataFrame(columns=list(columns))
    return _per_cell_table(name, with_config, keep_status, timeout, path)


def gates(path, with_config=True, timeout=LOCK_WAIT_SECONDS):
    """/gates (format 6): one row per gated block (prefix) of a done cell,
    the gate scores over held-out inputs (n_scores, mean, median, q10, q90,
    frac_low: the share below 0.1, var_query and var_channel: the shares of
    their variance between positions and between channels, hist_00 ..
    hist_19: the shares in the 20 bins of width 0.05; docs/ARCHIVE.md).
    Older formats: an empty frame."""
    return _optional_table(path, "gates", GATE_COLUMNS, with_config, ("done",), timeout)


def cellstats(path, with_config=True, timeout=LOCK_WAIT_SECONDS):
    """/cellstats (format 6): one row per done or diverged cell of a
    classification family: spikes and loss_ratio_max of its training curve,
    test_nll, test_brier and test_ece of its test predictions (NaN for a
    diverged cell; docs/ARCHIVE.md). Older formats: an empty frame."""
    return _optional_table(path, "cellstats", CELLSTATS_COLUMNS, with_config,
                           ("done", "diverged"), timeout)


def runs(path, timeout=LOCK_WAIT_SECONDS):
    """/runs: one row per invocation of curvsweep run on the archive."""
    return _read(path, lambda f: _frame(f["runs"][()]), timeout)


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


def points(path, cell_id=None, with_config=True, timeout=LOCK_WAIT_SECONDS):
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
    return _read(path, get, timeout)


def fields(path, cell_id, timeout=LOCK_WAIT_SECONDS):
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
    return _read(path, get, timeout)


class Archive:
    """A reader kept across a run (a notebook's handle on a sweep's archive).

    It keeps no file open, only what it last read: ``attrs``, ``cells`` (the
    /cells DataFrame), ``counts`` and ``read_at`` (time.time() of that read),
    so the sweep's writes never change anything under it and never wait for
    it. ``refresh()`` reads /cells again, under the lock, and returns self;
    ``curvature()``, ``curves()``, ``points()``, ``runs()`` and ``fields()``
    read the file as it is when called (they may hold cells finished after
    the last refresh)."""

    def __init__(self, path, timeout=LOCK_WAIT_SECONDS):
        self.path = path
        self.timeout = timeout
        self.refresh()

    def refresh(self):
        """Read the root attributes and /cells again; returns self."""
        self.attrs, self.cells = _read(self.path, lambda f: (_attrs(f), _frame(f["cells"][()])),
                                       self.timeout)
        self.read_at = time.time()
        return self

    @property
    def counts(self):
        """Cells per status as last read: pending, done, failed, diverged."""
        n = self.cells["status"].value_counts() if len(self.cells) else {}
        return {s: int(n.get(s, 0)) for s in ("pending",) + FINISHED}

    def curvature(self, with_config=True):
        return curvature(self.path, with_config, self.timeout)

    def curves(self, with_config=True):
        return curves(self.path, with_config, self.timeout)

    def estimation(self, with_config=True):
        return estimation(self.path, with_config, self.timeout)

    def gates(self, with_config=True):
        return gates(self.path, with_config, self.timeout)

    def cellstats(self, with_config=True):
        return cellstats(self.path, with_config, self.timeout)

    def points(self, cell_id=None, with_config=True):
        return points(self.path, cell_id, with_config, self.timeout)

    def runs(self):
        return runs(self.path, self.timeout)

    def fields(self, cell_id):
        return fields(self.path, cell_id, self.timeout)
