"""A cell's /points as h5py readers see them (docs/ARCHIVE.md, "On-disk layout").

format_version 4 keeps every cell's per-point arrays in shared 1-D arrays
under /points, found through /points/index (cell_id, n_points, m, depth,
x_start, start); 2 and 3 had a group /points/<cell_id>. cell_points(f, cell)
returns {name: array} for either layout (x: n_points x m; S, S_err, S_tilde,
tr_g, logdet_g, H_norm, class: depth x n_points), or None when the cell has
no points; point_cells(f) lists the cells that have them. to_group_layout
and drop_curvature_columns rewrite an archive in an older format's layout."""

import numpy as np

ARRAYS = ("S", "S_err", "S_tilde", "tr_g", "logdet_g", "H_norm", "class")


def _index(f):
    if "points" not in f or "index" not in f["points"]:
        return None
    d = f["points/index"]
    n = int(d.attrs.get("committed_rows", d.shape[0]))
    return d[:n]


def point_cells(f):
    """Cell ids with points, ascending."""
    ix = _index(f)
    if ix is not None:
        return sorted(int(c) for c in ix["cell_id"])
    return sorted(int(c) for c in f["points"].keys()) if "points" in f else []


def cell_points(f, cell):
    ix = _index(f)
    if ix is None:
        name = "points/%d" % cell
        return {k: f[name][k][()] for k in ("x",) + ARRAYS} if name in f else None
    rows = ix[ix["cell_id"] == cell]
    if len(rows) == 0:
        return None
    r = rows[-1]
    n, m, L = int(r["n_points"]), int(r["m"]), int(r["depth"])
    x0, s0 = int(r["x_start"]), int(r["start"])
    out = {"x": f["points/x"][x0:x0 + n * m].reshape(n, m)}
    for k in ARRAYS:
        out[k] = f["points/" + k][s0:s0 + L * n].reshape(L, n)
    return out


def to_group_layout(f):
    """Rewrite a format_version 4 /points (index and arrays) as the groups
    /points/<cell_id> that format_version 2 and 3 had (chunked, shuffled,
    Fletcher32-checked): the older layout, for tests that read it. The
    caller sets format_version."""
    cells = point_cells(f)
    data = {c: cell_points(f, c) for c in cells}
    class_type = f["points/class"].dtype
    del f["points"]
    for c, d in data.items():
        g = f.create_group("points/%d" % c)
        for k, v in d.items():
            g.create_dataset(k, data=v, dtype=class_type if k == "class" else v.dtype, chunks=True,
                             shuffle=True, fletcher32=True)


def drop_curvature_columns(f, names, version):
    """Rewrite /curvature without the columns names (keeping its
    committed_rows and filters) and set format_version: the table of an
    older format, for tests that read it."""
    cv = f["curvature"]
    old = cv[()]
    keep = [n for n in old.dtype.names if n not in names]
    new = np.empty(old.shape, dtype=[(n, old.dtype[n]) for n in keep])
    for n in keep:
        new[n] = old[n]
    committed = cv.attrs["committed_rows"]
    del f["curvature"]
    ds = f.create_dataset("curvature", data=new, maxshape=(None,), chunks=True, shuffle=True,
                          compression="gzip", fletcher32=True)
    ds.attrs["committed_rows"] = committed
    f.attrs["format_version"] = np.int32(version)
