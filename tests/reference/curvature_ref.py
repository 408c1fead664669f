#!/usr/bin/python3
"""High-precision reference for curvsweep's per-point curvature.

Rebuilds every cell of an archive from its stored parameters (/params) and
evaluation inputs (/points/<cell>/x), recomputes the scalar curvature S at
every prefix in mpmath at `--digits` significant digits (default 50), and
compares it with what the engine stored (S, S_err, class).

Nothing here is shared with the engine: the model is re-implemented from its
definition (docs/MODELS.md), derivatives are carried by a separate
second-order jet arithmetic over mpf numbers, and the curvature uses the
coordinate form of the Gauss equation (metric inverse, no QR, no
orthonormal frame):

    g_ab   = <J_a, J_b>                     (Euclidean pull-back)
    II_ab  = H_ab - J g^-1 J^T H_ab         (normal part of the Hessian)
    R_abcd = <II_ac, II_bd> - <II_ad, II_bc>
    S      = sigma^2 * sum g^ac g^bd R_abcd

Usage:
  curvature_ref.py ARCHIVE [--cells ID,...] [--points N] [--digits D]
                           [--dump FILE.tsv] [--check]
--check exits 1 unless |S - S_ref| <= S_err at every compared point, whatever
its class, and S_err overstates |S - S_ref| by at most 1000x at the median
(an estimate that covers by being huge fails); it prints the distribution of
|S - S_ref| / S_err.
"""
import argparse
import configparser
import math
import sys

import h5py
import mpmath
from mpmath import mpf

# ---------------------------------------------------------------- jets
# A "vector jet" of width w over m inputs: v (w values), d[a] (w first
# derivatives), h[p] (w second derivatives, pairs a <= b packed row by row).


class Shape:
    def __init__(self, m):
        self.m = m
        self.pairs = [(a, b) for a in range(m) for b in range(a, m)]


def vj_zero(sh, w):
    z = mpf(0)
    return ([z] * w, [[z] * w for _ in range(sh.m)], [[z] * w for _ in sh.pairs])


def lin(W, bias, x):
    """y = W x (+ bias on the value): W list of rows (out x in)."""
    v, d, h = x

    def mv(vec):
        return [mpmath.fsum(wr[k] * vec[k] for k in range(len(vec))) for wr in W]

    yv = mv(v)
    if bias is not None:
        yv = [yv[i] + bias[i] for i in range(len(yv))]
    return (yv, [mv(r) for r in d], [mv(r) for r in h])


def unary(sh, f, x):
    """Elementwise f with derivatives f1, f2: chain rule per component."""
    v, d, h = x
    w = len(v)
    f0 = []
    f1 = []
    f2 = []
    for t in v:
        a, b, c = f(t)
        f0.append(a)
        f1.append(b)
        f2.append(c)
    nd = [[f1[i] * d[a][i] for i in range(w)] for a in range(sh.m)]
    nh = []
    for p, (a, b) in enumerate(sh.pairs):
        nh.append([f2[i] * d[a][i] * d[b][i] + f1[i] * h[p][i] for i in range(w)])
    return (f0, nd, nh)


def mul(sh, x, y):
    """Leibniz product, elementwise (same width)."""
    xv, xd, xh = x
    yv, yd, yh = y
    w = len(xv)
    v = [xv[i] * yv[i] for i in range(w)]
    d = [[xd[a][i] * yv[i] + xv[i] * yd[a][i] for i in range(w)] for a in range(sh.m)]
    h = []
    for p, (a, b) in enumerate(sh.pairs):
        h.append([xh[p][i] * yv[i] + xd[a][i] * yd[b][i] + xd[b][i] * yd[a][i] + xv[i] * yh[p][i]
                  for i in range(w)])
    return (v, d, h)


def add(x, y, c=1):
    """x + c*y, componentwise over value, first and second derivatives."""
    (xv, xd, xh), (yv, yd, yh) = x, y
    row = lambda r, t: [p + c * q for p, q in zip(r, t)]
    return (row(xv, yv), [row(r, t) for r, t in zip(xd, yd)], [row(r, t) for r, t in zip(xh, yh)])


def pick(x, idx):
    """Components idx of a vector jet."""
    v, d, h = x
    return ([v[i] for i in idx], [[r[i] for i in idx] for r in d], [[r[i] for i in idx] for r in h])


def bcast(x, i, w):
    """Component i of x repeated w times."""
    v, d, h = x
    return ([v[i]] * w, [[r[i]] * w for r in d], [[r[i]] * w for r in h])


def concat(parts):
    v = []
    d = None
    h = None
    for pv, pd, ph in parts:
        v += pv
        d = [list(r) for r in pd] if d is None else [d[a] + pd[a] for a in range(len(pd))]
        h = [list(r) for r in ph] if h is None else [h[p] + ph[p] for p in range(len(ph))]
    return (v, d, h)


def f_exp(t):
    e = mpmath.exp(t)
    return e, e, e


def f_sigmoid(t):
    s = 1 / (1 + mpmath.exp(-t))
    return s, s * (1 - s), s * (1 - s) * (1 - 2 * s)


def f_tanh(t):
    y = mpmath.tanh(t)
    d1 = 1 - y * y
    return y, d1, -2 * y * d1


def f_rsqrt(t):
    r = 1 / mpmath.sqrt(t)
    return r, -r / (2 * t), 3 * r / (4 * t * t)


def f_recip(t):
    return 1 / t, -1 / (t * t), 2 / (t * t * t)


def softmax(sh, s):
    """alpha = exp(s) / sum exp(s) on a vector jet (no shift needed at this precision)."""
    e = unary(sh, f_exp, s)
    n = len(s[0])
    z = lin([[mpf(1)] * n], None, e)           # sum, a width-1 jet
    rz = unary(sh, f_recip, z)
    return mul(sh, e, bcast(rz, 0, n))


# ---------------------------------------------------------------- model


def tensor(grp, name):
    ds = grp[name][()]
    return [[mpf(float(x)) for x in row] for row in ds]


def layernorm(sh, x, gamma, beta, eps):
    w = len(x[0])
    inv = mpf(1) / w
    mean = lin([[inv] * w], None, x)
    c = add(x, bcast(mean, 0, w), -1)
    var = lin([[inv] * w], None, mul(sh, c, c))
    var = (var[0][:1], var[1], var[2])
    var = ([var[0][0] + eps], var[1], var[2])
    r = unary(sh, f_rsqrt, var)
    xhat = mul(sh, c, bcast(r, 0, w))
    g = ([gamma[i] for i in range(w)], [[mpf(0)] * w for _ in range(sh.m)],
         [[mpf(0)] * w for _ in sh.pairs])
    y = mul(sh, xhat, g)
    return (  # + beta on the value
        [y[0][i] + beta[i] for i in range(w)], y[1], y[2])


def layer_forward(sh, cfg, P, h):
    """One layer on a vector jet h (width d); returns the new h."""
    d = cfg["width"]
    a = h
    if cfg["norm"] == "pre":
        a = layernorm(sh, h, P["ln_g"][0], P["ln_b"][0], mpf(1e-5))
    if cfg["arch"] == "mlp":
        t = unary(sh, f_tanh, lin(P["W1"], P["b1"][0], a))
        y = lin(P["W2"], P["b2"][0], t)
    else:
        H = cfg["heads"]
        dh = d // H
        n = len(P["K"])
        q = lin(P["Wq"], None, a)
        scale = 1 / mpmath.sqrt(dh)
        heads = []
        for j in range(H):
            cols = list(range(j * dh, (j + 1) * dh))
            qj = pick(q, cols)
            Kj = [[P["K"][i][k] * scale for k in cols] for i in range(n)]
            alpha = softmax(sh, lin(Kj, None, qj))
            Uj = [[P["U"][i][k] for i in range(n)] for k in cols]  # dh x n
            heads.append(lin(Uj, None, alpha))
        o = concat(heads)
        if cfg["arch"] == "gated":
            g = unary(sh, f_sigmoid, lin(P["Wg"], P["bg"][0], a))
            o = mul(sh, g, o)
        elif cfg["arch"] == "gated-headwise":
            g = unary(sh, f_sigmoid, lin(P["Wg"], P["bg"][0], a))
            gb = concat([bcast(g, j, dh) for j in range(H)])
            o = mul(sh, gb, o)
        y = lin(P["Wo"], P["bo"][0], o)
    if cfg["residual"]:
        y = add(h, y)
    return y


def curvature(sh, h, sigma):
    """S (Fisher-scaled), tr g, log det g of the prefix jet h (coordinate Gauss equation)."""
    v, J, Hs = h
    m = sh.m

    def dot(x, y):
        return mpmath.fsum(p * q for p, q in zip(x, y))

    G = mpmath.matrix(m, m)
    for a in range(m):
        for b in range(m):
            G[a, b] = dot(J[a], J[b])
    det = mpmath.det(G)
    if det <= 0:
        return None
    Gi = G ** -1
    pidx = {}
    for p, (a, b) in enumerate(sh.pairs):
        pidx[(a, b)] = pidx[(b, a)] = p
    II = []
    for p in range(len(sh.pairs)):
        hp = Hs[p]
        c = [dot(J[a], hp) for a in range(m)]
        coef = [mpmath.fsum(Gi[a, b] * c[b] for b in range(m)) for a in range(m)]
        II.append([hp[i] - mpmath.fsum(coef[a] * J[a][i] for a in range(m)) for i in range(len(hp))])
    S = mpf(0)
    for a in range(m):
        for b in range(m):
            for c in range(m):
                for e in range(m):
                    w = Gi[a, c] * Gi[b, e]
                    if w == 0:
                        continue
                    R = dot(II[pidx[(a, c)]], II[pidx[(b, e)]]) - dot(II[pidx[(a, e)]], II[pidx[(b, c)]])
                    S += w * R
    s2 = mpf(sigma) ** 2
    trg = mpmath.fsum(G[a, a] for a in range(m)) / s2
    logdet = mpmath.log(det) - m * mpmath.log(s2)
    return S * s2, trg, logdet


# ---------------------------------------------------------------- archive


def spec_config(f):
    text = f["spec"][()]
    if getattr(text, "shape", ()) != ():  # a 1-D dataset of one string
        text = text[0]
    if isinstance(text, bytes):
        text = text.decode()
    if not isinstance(text, str):
        text = bytes(text).decode()
    cp = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), comment_prefixes=(";", "#"))
    cp.read_string(text)
    return cp


def cell_config(cp, row, names):
    def get(sec, key, default):
        if key in names:
            v = row[key]
            return v.decode() if isinstance(v, bytes) else v
        if cp.has_option(sec, key):
            return cp.get(sec, key)
        return default

    yes = lambda s: str(s).strip() in ("yes", "1", "true")
    return {
        "arch": get("grid", "arch", "gated"),
        "depth": int(get("grid", "depth", 1)),
        "width": int(get("model", "width", 16)),
        "heads": int(get("model", "heads", 1)),
        "residual": yes(get("model", "residual", "no")),
        "norm": str(get("model", "norm", "none")).strip(),
        "sigma": float(get("curvature", "sigma", 1.0)),
        "m": int(get("task", "input_dim", 2)),
    }


def load_params(grp, cfg):
    E = {"W": tensor(grp["embed"], "W"), "b": tensor(grp["embed"], "b")[0]}
    layers = []
    for l in range(cfg["depth"]):
        g = grp["layer%d" % l]
        layers.append({k: tensor(g, k) for k in g.keys()})
    return E, layers


def reference_cell(f, cp, row, names, npts):
    cid = int(row["cell_id"])
    cfg = cell_config(cp, row, names)
    E, layers = load_params(f["params"][str(cid)], cfg)
    pts = f["points"][str(cid)]
    X = pts["x"][()]
    S_eng = pts["S"][()]
    S_err = pts["S_err"][()] if "S_err" in pts else None
    cls = pts["class"][()] if "class" in pts else None
    m = cfg["m"]
    sh = Shape(m)
    out = []
    n = min(npts, X.shape[0])
    for p in range(n):
        x = [mpf(float(t)) for t in X[p]]
        xj = ([x[a] for a in range(m)], [[mpf(1) if a == b else mpf(0) for b in range(m)] for a in range(m)],
              [[mpf(0)] * m for _ in sh.pairs])
        h = lin(E["W"], E["b"], xj)
        for l in range(cfg["depth"]):
            h = layer_forward(sh, cfg, layers[l], h)
            ref = curvature(sh, h, cfg["sigma"])
            s = float(S_eng[l][p])
            out.append({
                "cell": cid, "arch": cfg["arch"], "depth": cfg["depth"], "residual": cfg["residual"],
                "prefix": l + 1, "point": p, "S": s,
                "S_err": float(S_err[l][p]) if S_err is not None else float("nan"),
                "class": int(cls[l][p]) if cls is not None else -1,
                "S_ref": ref[0] if ref else None,
            })
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("archive")
    ap.add_argument("--cells", default="")
    ap.add_argument("--points", type=int, default=1 << 30)
    ap.add_argument("--digits", type=int, default=50)
    ap.add_argument("--dump", default="")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    mpmath.mp.dps = args.digits
    with h5py.File(args.archive, "r") as f:
        cp = spec_config(f)
        cells = f["cells"][()]
        names = cells.dtype.names
        want = set(int(c) for c in args.cells.split(",") if c != "")
        rows = []
        for row in cells:
            if want and int(row["cell_id"]) not in want:
                continue
            st = row["status"]
            st = st.decode() if isinstance(st, bytes) else st
            if st != "done":
                continue
            rows += reference_cell(f, cp, row, names, args.points)
    bad = 0
    ratios = []
    dump = open(args.dump, "w") if args.dump else None
    if dump:
        dump.write("cell\tarch\tdepth\tresidual\tprefix\tpoint\tclass\tS\tS_ref\tabs_err\tS_err\n")
    for r in rows:
        if r["S_ref"] is None or not math.isfinite(r["S"]):
            continue  # degenerate in one of the two computations
        err = abs(mpf(r["S"]) - r["S_ref"])
        if dump:
            dump.write("%d\t%s\t%d\t%d\t%d\t%d\t%d\t%.17g\t%s\t%.6g\t%.6g\n" % (
                r["cell"], r["arch"], r["depth"], r["residual"], r["prefix"], r["point"], r["class"],
                r["S"], mpmath.nstr(r["S_ref"], 20), float(err), r["S_err"]))
        if math.isfinite(r["S_err"]):
            ratios.append(float(err) / r["S_err"] if r["S_err"] > 0 else (0.0 if err == 0 else math.inf))
            if not err <= r["S_err"]:
                bad += 1
                if args.check and bad <= 20:
                    print("NOT COVERED: cell %d prefix %d point %d: S = %.17g S_ref = %s |err| = %.3g S_err = %.3g"
                          % (r["cell"], r["prefix"], r["point"], r["S"], mpmath.nstr(r["S_ref"], 20), float(err),
                             r["S_err"]))
    if dump:
        dump.close()
    ratios.sort()
    n = len(ratios)
    if n:
        q = lambda t: ratios[min(n - 1, int(t * n))]
        print("compared %d points: |S - S_ref| / S_err quantiles 50%% %.3g, 90%% %.3g, 99%% %.3g, max %.3g; "
              "covered %d of %d" % (n, q(0.5), q(0.9), q(0.99), ratios[-1], n - bad, n))
    else:
        print("compared 0 points")
    # an estimate that covers by being huge is no estimate: at the median,
    # S_err may overstate the true error by at most 1000x (docs/NUMERICS.md)
    if args.check and n and q(0.5) < 1e-3:
        print("S_err overstates the error %.3gx at the median (at most 1000x allowed)" % (1 / max(q(0.5), 1e-300)))
        return 1
    if args.check and (bad or not n):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
