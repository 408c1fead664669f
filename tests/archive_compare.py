#!/usr/bin/env python3
"""Compare two curvsweep archives cell by cell, every number bitwise.

usage: archive_compare.py A.h5 B.h5 [--rtol R] [--ignore-spec]
Ignores what legitimately differs between runs: /cells rank, wall_s and
attempts, /runs, and the created timestamp. With --rtol, floating-point
fields may differ by a relative R (teams sum in another order); with
--ignore-spec the specs may differ (e.g. only in [team]). Exit 0 when
equal, 1 with the first difference printed otherwise."""
import sys

import h5py
import numpy as np

IGNORED_CELL_FIELDS = {"rank", "wall_s", "attempts"}


def table(f, name, keys):
    data = f[name][:]
    order = np.lexsort(tuple(data[k] for k in reversed(keys)))
    return data[order]


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


def compare_tables(fa, fb, name, keys, ignore=()):
    ta, tb = table(fa, name, keys), table(fb, name, keys)
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


def main():
    global RTOL
    args = sys.argv[1:]
    ignore_spec = "--ignore-spec" in args
    if "--rtol" in args:
        RTOL = float(args[args.index("--rtol") + 1])
    a, b = [x for i, x in enumerate(args) if not x.startswith("--") and (i == 0 or args[i - 1] != "--rtol")][:2]
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        if not ignore_spec and fa.attrs["spec_sha256"] != fb.attrs["spec_sha256"]:
            print("spec_sha256 differs")
            return 1
        checks = [
            compare_tables(fa, fb, "cells", ["cell_id"], IGNORED_CELL_FIELDS),
            compare_tables(fa, fb, "curvature", ["cell_id", "prefix"]),
            compare_tables(fa, fb, "curves", ["cell_id", "epoch"]),
            compare_groups(fa, fb, "points"),
            compare_groups(fa, fb, "params"),
        ]
        for c in checks:
            if c:
                print(f"{a} vs {b}: {c}")
                return 1
        n = len(fa["cells"])
        done = int(np.sum(fa["cells"]["status"] == b"done"))
    print(f"equal: {n} cells ({done} done)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
