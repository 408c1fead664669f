#!/usr/bin/env python3
"""Compare two curvsweep archives cell by cell, every number bitwise.

usage: archive_compare.py A.h5 B.h5 [--rtol R] [--ignore-spec]
       archive_compare.py --each A.h5 B1.h5 B2.h5 ...
Also /estimation, /gates and /cellstats (format_version 6; absent in an
older archive: no rows). Ignores what
legitimately differs between runs: /cells rank, wall_s and
attempts, /runs, and the created timestamp. With --rtol, floating-point
fields may differ by a relative R (teams sum in another order); with
--ignore-spec the specs may differ (e.g. only in [team]). Exit 0 when
equal, 1 with the first difference printed otherwise. With --each, A is
compared with every B in one process (h5py's start is most of the cost
of one comparison): a line "B: equal" or "B: <first difference>" each
(a B that cannot be read is a difference), exit 0 when all are equal.

Curvature under --rtol: two computations of the same point agree only to
within their own rounding errors (docs/NUMERICS.md), so where /points is
saved, per-point S may differ by rtol plus S_err of both archives, S_tilde
by that times tr_g/m, and every per-prefix curvature statistic (a mean,
quantile or standard error of per-point values) by the largest such
per-point allowance of its prefix; fractions positive may differ by the
share of points within their allowance of 0. Classes must be equal."""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from archive_points import cell_points, point_cells  # noqa: E402
from curvsweep_archive import lm_cells  # noqa: E402

IGNORED_CELL_FIELDS = {"rank", "wall_s", "attempts"}


def table(f, name, keys):
    data = f[name][:]
    order = np.lexsort(tuple(data[k] for k in reversed(keys)))
    return data[order]


def curvature_tables(fa, fb, keys):
    """Both /curvature tables in this format_version's columns: one of
    format_version <= 5 (no sink_headmax) stored an lm row's largest
    per-head first-token share as max_attn, which is its sink_headmax
    (docs/ARCHIVE.md, "Versions"); a column it did not store (an lm row's
    max_attn, another row's sink_headmax) is not compared: the other's value."""
    t = [table(fa, "curvature", keys), table(fb, "curvature", keys)]
    old = ["sink_headmax" not in x.dtype.names for x in t]
    if old[0] == old[1] or len(t[0]) != len(t[1]):
        return t
    i = old.index(True)
    new, v5 = t[1 - i], t[i]
    up = np.empty(v5.shape, dtype=new.dtype)
    for name in new.dtype.names:
        up[name] = v5[name] if name in v5.dtype.names else new[name]
    lm = np.isin(v5["cell_id"], list(lm_cells((fa, fb)[i])))
    up["sink_headmax"] = np.where(lm, v5["max_attn"], new["sink_headmax"])
    up["max_attn"] = np.where(lm, new["max_attn"], v5["max_attn"])
    t[i] = up
    return t


RTOL = 0.0


def same_bits(a, b):
    """Bitwise equality of two arrays (NaN equals NaN of the same bits), or
    equality to a relative RTOL for floating-point arrays when RTOL > 0."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if RTOL > 0 and a.dtype.kind == "f":
        both_nan = np.isnan(a) & np.isnan(b)
        close = np.abs(a - b) <= RTOL * np.maximum(np.abs(a), np.abs(b))
        return bool(np.all(both_nan | close))
    return a.tobytes() == b.tobytes()


# /curvature columns that are statistics of a per-point curvature, by the
# per-point value they summarise (K, K~ = K tr g/m, K^ = K det(g)^(1/m), S, S~)
CURV_STAT = {}
for q in ("K", "Kt", "Kh"):
    for s in ("_mean", "_median", "_absmean", "_q05", "_q95"):
        CURV_STAT[q + s] = q
    CURV_STAT[q + "_fracpos"] = q + "_fracpos"
CURV_STAT.update({"S_mean": "S", "S_se": "S", "St_mean": "St", "H_norm_mean": "H"})
POINT_CURVATURE = {"S": "S", "S_tilde": "St", "H_norm": "H"}


def point_allowance(fa, fb, cell, m_dim=None):
    """Per point and prefix: allowed |difference| of S, S~, K, K~, K^, H
    between two archives: rtol·max + S_err_a + S_err_b (scaled per quantity),
    and the value scale used for fractions positive. None without points."""
    ga, gb = cell_points(fa, cell), cell_points(fb, cell)
    if ga is None or gb is None:
        return None
    m = ga["x"].shape[1]
    pairs = m * (m - 1) if m >= 2 else 1
    err = np.nan_to_num(ga["S_err"][()]) + np.nan_to_num(gb["S_err"][()])
    trg = np.nan_to_num(ga["tr_g"][()])
    area = np.exp(np.nan_to_num(ga["logdet_g"][()]) / m)
    Sa = np.nan_to_num(ga["S"][()])
    base = err + RTOL * np.abs(Sa)
    return {"S": base, "St": base * trg / m, "K": base / pairs, "Kt": base / pairs * trg / m,
            "Kh": base / pairs * area, "H": np.sqrt(err) / m + RTOL * np.abs(np.nan_to_num(ga["H_norm"][()])),
            "value": {"K": Sa / pairs, "Kt": Sa / pairs * trg / m, "Kh": Sa / pairs * area}}


def compare_curvature(fa, fb, keys):
    """/curvature under --rtol: rounding-aware where /points exists."""
    ta, tb = curvature_tables(fa, fb, keys)
    if len(ta) != len(tb) or ta.dtype.names != tb.dtype.names:
        return compare_tables(fa, fb, "curvature", keys)
    allow = {}
    for i in range(len(ta)):
        cell, prefix = int(ta["cell_id"][i]), int(ta["prefix"][i])
        if cell not in allow:
            allow[cell] = point_allowance(fa, fb, cell)
        al = allow[cell]
        for field in ta.dtype.names:
            a, b = ta[field][i], tb[field][i]
            if field in keys or field == "n_points" or not np.issubdtype(type(a), np.floating):
                if a != b:
                    return f"curvature.{field} differs at {keys}={[cell, prefix]}: {a!r} vs {b!r}"
                continue
            if np.isnan(a) and np.isnan(b):
                continue
            tol = RTOL * max(abs(a), abs(b))
            kind = CURV_STAT.get(field)
            if al is not None and kind is not None:
                row = prefix - 1
                if kind.endswith("_fracpos"):
                    q = kind[:-len("_fracpos")]
                    near0 = np.abs(al["value"][q][row]) <= al[q][row]
                    tol = max(tol, float(np.mean(near0)))
                else:
                    tol += float(np.max(al[kind][row]))
            if field in ("intK", "intabsK", "intK_err"):
                # box points are not in /points: their own bound, both archives
                tol += abs(ta["intK_err"][i]) + abs(tb["intK_err"][i])
            if not abs(a - b) <= tol:
                return f"curvature.{field} differs at {keys}={[cell, prefix]}: {a!r} vs {b!r} (allowed {tol:.3g})"
    return None


def compare_points(fa, fb):
    """/points cell by cell (whatever order the cells were written in):
    bitwise, or under --rtol classes equal and curvature within the
    allowance."""
    cells = point_cells(fa)
    if cells != point_cells(fb):
        return "points: cells with points differ: %s" % sorted(set(cells) ^ set(point_cells(fb)))[:5]
    for cell in cells:
        ga, gb = cell_points(fa, cell), cell_points(fb, cell)
        if RTOL == 0:
            for k in ga:
                if not same_bits(ga[k], gb[k]):
                    return f"points/{cell}/{k} differs"
            continue
        if not np.array_equal(ga["class"][()], gb["class"][()]):
            return f"points/{cell}/class differs"
        al = point_allowance(fa, fb, int(cell))
        curved = ga["class"][()] == 2
        for k in ga:
            a, b = ga[k][()], gb[k][()]
            if k in POINT_CURVATURE:
                both_nan = np.isnan(a) & np.isnan(b)
                ok = both_nan | (np.abs(a - b) <= al[POINT_CURVATURE[k]])
            elif k == "S_err":
                # an estimate: equal to rtol where II is resolved (curved points);
                # elsewhere II is rounding noise and so is its size
                both_nan = np.isnan(a) & np.isnan(b)
                close = np.abs(a - b) <= RTOL * np.maximum(np.abs(a), np.abs(b))
                ok = both_nan | close | (~curved & np.isfinite(a) & np.isfinite(b))
            elif k == "class":
                continue
            else:
                ok = np.array([same_bits(a, b)])
            if not np.all(ok):
                return f"points/{cell}/{k} differs"
    return None


def compare_tables(fa, fb, name, keys, ignore=()):
    ta, tb = curvature_tables(fa, fb, keys) if name == "curvature" else (table(fa, name, keys), table(fb, name, keys))
    if len(ta) != len(tb):
        return f"{name}: {len(ta)} rows vs {len(tb)}"
    if ta.dtype.names != tb.dtype.names:
        return f"{name}: fields {ta.dtype.names} vs {tb.dtype.names}"
    for field in ta.dtype.names:
        if field in ignore:
            continue
        if not same_bits(ta[field], tb[field]):
            bad = [i for i in range(len(ta)) if not same_bits(ta[field][i:i + 1], tb[field][i:i + 1])]
            i = bad[0]
            return f"{name}.{field} differs in {len(bad)} rows, e.g. {keys}={[ta[k][i] for k in keys]}: {ta[field][i]!r} vs {tb[field][i]!r}"
    return None


def compare_optional_table(fa, fb, name, keys):
    """A table of a newer format_version (/estimation, /gates, /cellstats:
    6): an archive of an older version lacks it and has no rows in it."""
    if name not in fa or name not in fb:
        rows = len(fa[name]) if name in fa else len(fb[name]) if name in fb else 0
        return f"{name}: {rows} rows in one archive, none in the other" if rows else None
    return compare_tables(fa, fb, name, keys)


def compare_groups(fa, fb, name):
    if (name in fa) != (name in fb):
        return f"{name} present in only one archive"
    if name not in fa:
        return None
    items_a, items_b = [], []
    fa[name].visititems(lambda k, v: items_a.append(k) if isinstance(v, h5py.Dataset) else None)
    fb[name].visititems(lambda k, v: items_b.append(k) if isinstance(v, h5py.Dataset) else None)
    if sorted(items_a) != sorted(items_b):
        return f"{name}: datasets differ: {sorted(set(items_a) ^ set(items_b))[:5]}"
    for k in items_a:
        if not same_bits(fa[name][k][()], fb[name][k][()]):
            return f"{name}/{k} differs"
    return None


def compare(a, b, ignore_spec):
    """The first difference between archives a and b, or None."""
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        if not ignore_spec and fa.attrs["spec_sha256"] != fb.attrs["spec_sha256"]:
            return "spec_sha256 differs"
        checks = [
            lambda: compare_tables(fa, fb, "cells", ["cell_id"], IGNORED_CELL_FIELDS),
            lambda: compare_curvature(fa, fb, ["cell_id", "prefix"]) if RTOL > 0
            else compare_tables(fa, fb, "curvature", ["cell_id", "prefix"]),
            lambda: compare_tables(fa, fb, "curves", ["cell_id", "epoch"]),
            lambda: compare_points(fa, fb),
            lambda: compare_groups(fa, fb, "params"),
            lambda: compare_optional_table(fa, fb, "estimation", ["cell_id"]),
            lambda: compare_optional_table(fa, fb, "gates", ["cell_id", "prefix"]),
            lambda: compare_optional_table(fa, fb, "cellstats", ["cell_id"]),
        ]
        for c in checks:
            d = c()
            if d:
                return d
    return None


def main():
    global RTOL
    args = sys.argv[1:]
    if args and args[0] == "--each":
        if len(args) < 3:
            print(__doc__)
            return 2
        status = 0
        for b in args[2:]:
            try:
                d = compare(args[1], b, False)
            except Exception as e:  # a B that cannot be read differs
                d = f"cannot compare: {e!r}"
            print(f"{b}: {d or 'equal'}")
            status |= d is not None
        return status
    ignore_spec = "--ignore-spec" in args
    if "--rtol" in args:
        RTOL = float(args[args.index("--rtol") + 1])
    a, b = [x for i, x in enumerate(args) if not x.startswith("--") and (i == 0 or args[i - 1] != "--rtol")][:2]
    d = compare(a, b, ignore_spec)
    if d:
        print(d if d == "spec_sha256 differs" else f"{a} vs {b}: {d}")
        return 1
    with h5py.File(a, "r") as fa:
        n = len(fa["cells"])
        done = int(np.sum(fa["cells"]["status"] == b"done"))
    print(f"equal: {n} cells ({done} done)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
