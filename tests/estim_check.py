#!/usr/bin/env python3
"""Recompute an estimation archive's per-cell errors independently.

usage: estim_check.py ARCHIVE.h5

For every /estimation row (docs/ARCHIVE.md; an archive of family mha,
task teacher, written with save_params = yes): rebuild the student from
/params/<cell>/layer0/* and the teacher from /params/<cell>/teacher/layer0/*,
draw the fresh test sets again with a reimplementation of the counter-based
streams (src/core/rng.c, task_token_sets of src/tasks/tasks.c: uniform
token entries only), run both through a numpy forward of the layer of
docs/MODELS.md ("Estimation") written here, and compare
  fn_error     the root mean square of f - f* over the test sets,
  param_error  the Voronoi loss, with each student head's cell found by
               brute force over every map of student heads to teacher heads
               (the map of least total squared distance),
with the archive's, to a relative 1e-9. Exit 0 when every row agrees, 1 with
the differences printed."""
import configparser
import itertools
import sys

import h5py
import numpy as np

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def fnv(s):
    h = 0xCBF29CE484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001B3) & M64
    return h


def stream_key(seed, domain, index, name):
    k = mix64((seed + GOLDEN) & M64)
    k = mix64(k ^ fnv(domain))
    k = mix64(k ^ ((index * GOLDEN) & M64))
    return mix64(k ^ fnv(name))


def uniforms(key, count):
    return np.array([((mix64((key + c * GOLDEN) & M64) >> 11) + 0.5) * 2.0 ** -53
                     for c in range(1, count + 1)])


def token_sets(seed, split, count, T, m):
    """Sets 0..count-1 of a split (SPLIT_TEST = 1), entries U[-1, 1]."""
    return np.stack([2.0 * uniforms(stream_key(seed, "task:teacher", i * 4 + split, "x"), T * m)
                     - 1.0 for i in range(count)]).reshape(count, T, m)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def forward(P, X, heads, gate, gated):
    """f(X) of docs/MODELS.md: X (n, T, m) -> (n,)."""
    Wq, Wk, Wv, Wo, bo = P["Wq"], P["Wk"], P["Wv"], P["Wo"][0], P["bo"][0, 0]
    d = Wq.shape[0]
    dh = d // heads
    head = np.arange(d) // dh
    q = X[:, 0, :] @ Wq.T
    K = np.einsum("ntm,dm->ntd", X, Wk)
    V = np.einsum("ntm,dm->ntd", X, Wv)
    G = sigmoid(np.einsum("ntm,gm->ntg", X, P["Wg"]) + P["bg"][0]) if gated else None
    if gated and gate == "g4":
        q = q * G[:, 0, head]
    if gated and gate == "g3":
        K = K * G[:, :, head]
    if gated and gate == "g2":
        V = V * G[:, :, head]
    o = np.zeros_like(q)
    for h in range(heads):
        c = slice(h * dh, (h + 1) * dh)
        s = np.einsum("nd,ntd->nt", q[:, c], K[:, :, c]) / np.sqrt(dh)
        a = np.exp(s - s.max(axis=1, keepdims=True))
        a /= a.sum(axis=1, keepdims=True)
        o[:, c] = np.einsum("nt,ntd->nd", a, V[:, :, c])
    if gated and gate == "g1":
        o = o * G[:, 0, head]
    y = o @ Wo + bo
    if gated and gate == "g5":
        y = y * G[:, 0, 0]
    return y


def quantities(P, heads, gate, gated):
    """Per head M_h (m x m), u_h (m), gamma_h (m + 1 or empty); b_o; the g5 gate."""
    Wq, Wk, Wv, Wo = P["Wq"], P["Wk"], P["Wv"], P["Wo"][0]
    dh = Wq.shape[0] // heads
    Ms, us, gs = [], [], []
    for h in range(heads):
        r = range(h * dh, (h + 1) * dh)
        Ms.append(sum(np.outer(Wq[i], Wk[i]) for i in r) / np.sqrt(dh))
        us.append(sum(Wo[i] * Wv[i] for i in r))
        gs.append(np.append(P["Wg"][h], P["bg"][0, h]) if gated and gate != "g5" else np.zeros(0))
    out_gate = np.append(P["Wg"][0], P["bg"][0, 0]) if gated and gate == "g5" else None
    return Ms, us, gs, P["bo"][0, 0], out_gate


def voronoi(S, T):
    Ms, us, gs, bo, og = S
    Mt, ut, gt, bot, ogt = T
    H, Hs = len(Ms), len(Mt)

    def d2(i, j):
        return (np.sum((Ms[i] - Mt[j]) ** 2) + np.sum((gs[i] - gt[j]) ** 2)
                + np.sum((us[i] - ut[j]) ** 2))
    # brute force: the map of least total squared distance (ties: the first
    # in itertools order, which is the lowest teacher index per head)
    best = min(itertools.product(range(Hs), repeat=H),
               key=lambda a: sum(d2(i, a[i]) for i in range(H)))
    D = abs(bo - bot)
    if og is not None:
        D += np.linalg.norm(og - ogt)
    for j in range(Hs):
        cell = [i for i in range(H) if best[i] == j]
        D += np.linalg.norm(sum((us[i] for i in cell), np.zeros_like(ut[j])) - ut[j])
        for i in cell:
            w = np.linalg.norm(us[i])
            dM, dg = np.linalg.norm(Ms[i] - Mt[j]), np.linalg.norm(gs[i] - gt[j])
            D += w * (dM + dg) if len(cell) == 1 else w * (dM ** 2 + dg ** 2)
    return D


def main(path):
    f = h5py.File(path, "r")
    spec = configparser.ConfigParser(inline_comment_prefixes=(";", "#"))
    spec.read_string(f["spec"][()][0].decode())
    cells, est = f["cells"][()], f["estimation"][()]

    def value(cell, section, key, default):
        if key in cells.dtype.names:
            v = cell[key]
            return v.decode() if isinstance(v, bytes) else v
        return spec.get(section, key, fallback=default)

    fails, checked = [], 0
    for row in est:
        cid = int(row["cell_id"])
        cell = cells[cells["cell_id"] == cid][0]
        arch = value(cell, "grid", "arch", "gated")
        gate = value(cell, "model", "gate", "g1")
        heads = int(value(cell, "model", "heads", 1))
        theads = int(value(cell, "task", "teacher_heads", 1))
        T, m = int(value(cell, "task", "tokens", 8)), int(value(cell, "task", "input_dim", 2))
        n_test, seed = int(value(cell, "task", "test_points", 2048)), int(value(cell, "grid", "seed", 0))
        if value(cell, "task", "token_dist", "uniform") != "uniform":
            fails.append("cell %d: token_dist must be uniform here" % cid)
            continue
        gated = arch != "ungated"
        g = f["params"][str(cid)]
        S = {k: g["layer0"][k][()] for k in g["layer0"]}
        Tp = {k: g["teacher"]["layer0"][k][()] for k in g["teacher"]["layer0"]}
        X = token_sets(seed, 1, n_test, T, m)
        fn = np.sqrt(np.mean((forward(S, X, heads, gate, gated) - forward(Tp, X, theads, gate, gated)) ** 2))
        pe = voronoi(quantities(S, heads, gate, gated), quantities(Tp, theads, gate, gated))
        for name, mine in (("fn_error", fn), ("param_error", pe)):
            theirs = float(row[name])
            if not abs(mine - theirs) <= 1e-9 * abs(mine):
                fails.append("cell %d (%s %s H=%d H*=%d): %s archive %.17g, here %.17g"
                             % (cid, arch, gate, heads, theads, name, theirs, mine))
        checked += 1
    for line in fails:
        print(line)
    print("estim_check: %d rows checked, %d differences" % (checked, len(fails)))
    return 1 if fails or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
