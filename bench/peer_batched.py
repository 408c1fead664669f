#!/usr/bin/python3
"""bench/peer_batched.py — the batched PyTorch peer of bench_train_cell: E
seeds of a reference cell (memory width 16, self, lm: the cells of
bench/peer_train_cell.py and bench/peer_lm_cell.py) trained as ONE model,
the way a PyTorch user sweeping tiny cells trains many seeds at once. A
benchmark peer, not part of the install (Debian: apt-get install
python3-torch).

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/peer_batched.py --family memory --seeds 8
    /usr/bin/python3 bench/peer_batched.py --check --family memory self lm --seeds 3 --epochs 2

Every parameter of the one-model peer is stacked into one tensor with a
leading seed dimension E; every product is batched over the seeds
(torch.bmm, torch.baddbmm, batched matmul); each seed keeps its own data,
its own permutation stream and its own initialisation, exactly those of
the one-model peer run with --seed s (s = --seed … --seed + E − 1). The loss
is the sum over seeds of each seed's mean loss, so the gradient of seed
e's parameters is that of its own loss; Adam over the stacked tensors is
exactly E independent Adams (it is element-wise, and every seed takes the
same number of steps). float64 on one thread, the schedule, evaluation
and timing of train_model (bench/peer_common.py). A seed whose step loss
is not finite stops counting (diverged) and leaves the loss; the others go
on. The self and lm blocks compute Q, K, V and the gate pre-activation as
one product against the concatenated weights (the user's fusion; the
parameters stay the one-model peer's).

Printed per training (and per "train" request with --serve, the protocol
of the other peers): wall_s and cpu_s per cell (the total over E seeds
divided by E), total_wall_s, total_cpu_s, and the seeds' mean train loss,
train accuracy and test accuracy.

--check: train the E seeds one at a time with the one-model peer's own
code (bench/peer_train_cell.py, bench/peer_lm_cell.py: an independent
second path through forward, loss, batching and Adam), then batched, and
require every seed's final parameters and train loss to agree within
--check-tol (relative, default 1e-10), its accuracies and status to be
equal, and the seeds to be distinct models. Use a few epochs: the batched
products round differently in the last bit, and training amplifies that
(1e-15 after a few steps; up to 1e-7 after the reference cell's 800).
Several families may be named (each takes the options it knows). Exit 0 when every check holds, 1
otherwise.
"""
import argparse
import copy
import math
import sys
import time

import peer_common
import peer_lm_cell
import peer_train_cell

FAMILIES = ("memory", "self", "lm")


def one_model(family):
    """The one-model peer's module of a family."""
    return peer_lm_cell if family == "lm" else peer_train_cell


def parse_args(argv):
    """The batched peer's own options, then every named family's options
    parsed by its one-model peer; an option no family knows is an error."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--family", nargs="+", choices=FAMILIES, default=["memory"])
    p.add_argument("--seeds", type=int, default=8, help="E, the seeds trained as one model")
    p.add_argument("--foreach", action="store_true", help="Adam's multi-tensor path")
    p.add_argument("--check", action="store_true")
    p.add_argument("--check-tol", type=float, default=1e-10)
    a, rest = p.parse_known_args(argv)
    if a.seeds < 1:
        p.error("--seeds must be at least 1")
    if len(a.family) > 1 and not a.check:
        p.error("several families only with --check")
    per_family, unknown = {}, None
    for f in a.family:
        args, left = one_model(f).parse_args(
            rest + ([] if f == "lm" else ["--family", f]), known=True)
        args.foreach = a.foreach
        per_family[f] = args
        unknown = set(left) if unknown is None else unknown & set(left)
    bad = sorted(t for t in unknown if t.startswith("-"))
    if bad:
        p.error("unrecognized arguments: " + " ".join(bad))
    return a, per_family


# ------------------------------------------------------------ the families


def bmm_t(x, W, b=None):
    """x W_eᵀ (+ b_e) for every seed e: x E × … × in, W E × out × in, b E × out."""
    E, out = W.shape[0], W.shape[1]
    flat = x.reshape(E, -1, x.shape[-1])
    y = torch_.bmm(flat, W.transpose(1, 2)) if b is None else \
        torch_.baddbmm(b.unsqueeze(1), flat, W.transpose(1, 2))
    return y.view(*x.shape[:-1], out)


def layer_norm(h, g, b):
    """LayerNorm over the last dimension with each seed's gain and bias."""
    F = torch_.nn.functional
    shape = (g.shape[0],) + (1,) * (h.dim() - 2) + (g.shape[1],)
    return F.layer_norm(h, (h.shape[-1],), None, None, 1e-5) * g.view(shape) + b.view(shape)


def heads_attention(q, k, v, H, mask=None):
    """softmax(Q_j K_jᵀ/√d_h) V_j per seed, point and head: q, k, v
    E × N × T × d, mask T × T (True: no attention) or None."""
    E, N, T, d = q.shape
    dh = d // H
    qh, kh, vh = (t.reshape(E, N, T, H, dh).transpose(2, 3) for t in (q, k, v))
    s = qh @ kh.transpose(3, 4) / math.sqrt(dh)                       # E × N × H × T × T
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    return (torch_.softmax(s, dim=4) @ vh).transpose(2, 3).reshape(E, N, T, d)


def qkvg(P, pre, a, gated):
    """Q, K, V and the gate pre-activation of a self or lm block: one
    product against [W_q; W_k; W_v; W_g]."""
    names = ("Wq", "Wk", "Wv") + (("Wg",) if gated else ())
    W = torch_.cat([P[pre + n] for n in names], dim=1)
    z = bmm_t(a, W)
    d = a.shape[-1]
    q, k, v = z[..., :d], z[..., d:2 * d], z[..., 2 * d:3 * d]
    g = torch_.sigmoid(z[..., 3 * d:] + P[pre + "bg"].view(
        (P[pre + "bg"].shape[0],) + (1,) * (a.dim() - 2) + (d,))) if gated else None
    return q, k, v, g


def memory_forward(P, args, x):
    """The memory family on E × N × m points: E × N × 2 logits."""
    h = bmm_t(x, P["We"], P["be"])
    gated, H = args.arch == "gated", args.heads
    for l in range(args.depth):
        pre = f"layers.{l}."
        q, K, U = bmm_t(h, P[pre + "Wq"]), P[pre + "K"], P[pre + "U"]
        if H == 1:
            alpha = torch_.softmax(torch_.bmm(q, K.transpose(1, 2)) / math.sqrt(args.width), dim=2)
            o = torch_.bmm(alpha, U)
        else:
            E, N, d, n = q.shape[0], q.shape[1], args.width, K.shape[1]
            dh = d // H
            s = torch_.einsum("eihk,ejhk->ehij", q.view(E, N, H, dh), K.view(E, n, H, dh))
            alpha = torch_.softmax(s / math.sqrt(dh), dim=3)
            o = torch_.einsum("ehij,ejhk->eihk", alpha, U.view(E, n, H, dh)).reshape(E, N, d)
        if gated:
            o = torch_.sigmoid(bmm_t(h, P[pre + "Wg"], P[pre + "bg"])) * o
        h = bmm_t(o, P[pre + "Wo"], P[pre + "bo"])
    return bmm_t(h, P["Wr"], P["br"])


def self_forward(P, args, x):
    """The self family on E × N × m points: E × N × 2 logits."""
    E, N = x.shape[0], x.shape[1]
    d, gated = args.width, args.arch == "gated"
    feats = x.unsqueeze(3) * P["tokW"].unsqueeze(1) + P["tokb"].unsqueeze(1)   # E × N × m × d
    X = torch_.cat((P["cls"].view(E, 1, 1, d).expand(E, N, 1, d), feats), dim=2)
    for l in range(args.depth):
        pre = f"layers.{l}."
        q, k, v, g = qkvg(P, pre, X, gated)
        o = heads_attention(q, k, v, args.heads)
        if gated:
            o = g * o                                                         # g1
        X = bmm_t(o, P[pre + "Wo"], P[pre + "bo"])
    return bmm_t(X[:, :, 0], P["Wr"], P["br"])


def lm_forward(P, args, tok, mask):
    """The lm family on E × N × T token sequences: E × N × T × V logits."""
    E = tok.shape[0]
    ar = torch_.arange(E).view(E, 1, 1)
    h = P["E"][ar, tok] + P["P"].unsqueeze(1)                              # E × N × T × d
    gated = args.arch == "gated"
    for l in range(args.depth):
        pre = f"blocks.{l}."
        a = layer_norm(h, P[pre + "ln1_g"], P[pre + "ln1_b"])
        q, k, v, g = qkvg(P, pre, a, gated)
        o = heads_attention(q, k, v, args.heads, mask)
        if gated:
            o = g * o                                                         # g1
        h = h + bmm_t(o, P[pre + "Wo"], P[pre + "bo"])
        if args.mlp_ratio > 0:
            m = layer_norm(h, P[pre + "ln2_g"], P[pre + "ln2_b"])
            u = torch_.nn.functional.gelu(bmm_t(m, P[pre + "W1"], P[pre + "b1"]))
            h = h + bmm_t(u, P[pre + "W2"], P[pre + "b2"])
    return bmm_t(layer_norm(h, P["lnf_g"], P["lnf_b"]), P["Wr"], P["br"])


class Batched:
    """E seeds of one family: their data (train and test, stacked over the
    seeds), permutation generators, initialisation streams, and the batched
    loss. Each seed's data, generator and initialisation are drawn exactly
    as the one-model peer's main draws them with --seed s."""

    def __init__(self, torch, family, args, seeds):
        self.torch, self.family, self.args, self.E = torch, family, args, len(seeds)
        self.gens, self.init_states, train, test = [], [], [], []
        for s in seeds:
            torch.manual_seed(s)
            self.init_states.append(torch.get_rng_state())
            gen = torch.Generator().manual_seed(s)
            self.gens.append(gen)
            tr, te = data(torch, family, args, gen)
            train.append(tr)
            test.append(te)
        self.train = tuple(torch.stack(parts) for parts in zip(*train))
        self.test = tuple(torch.stack(parts) for parts in zip(*test))
        self.n = self.train[0].shape[1]
        self.B = peer_common.batch_of(args, self.n)
        self.ar = torch.arange(self.E).view(self.E, 1)
        if family == "lm":
            T = args.seq_len
            self.mask = torch.ones(T, T, dtype=torch.bool).triu(1)
            self.make = peer_lm_cell.build(torch, args)
        else:
            self.make = peer_train_cell.build(torch, args)

    def models(self):
        """One fresh one-model peer per seed, each from its seed's own
        initialisation stream (as if it ran alone)."""
        torch, out = self.torch, []
        for e in range(self.E):
            torch.set_rng_state(self.init_states[e])
            out.append(self.make())
            self.init_states[e] = torch.get_rng_state()
        return out

    def stack(self, models):
        """The stacked parameters: name -> E × (the tensor's shape), a leaf."""
        named = [dict(m.named_parameters()) for m in models]
        return {n: self.torch.stack([p[n].detach() for p in named]).requires_grad_()
                for n in named[0]}

    def terms(self, P, batch):
        """Per seed: the summed loss, the correct predictions and the number
        of scored terms of a batch (tensors of E)."""
        torch, F, a = self.torch, self.torch.nn.functional, self.args
        if self.family == "lm":
            tok, sc = batch
            z = lm_forward(P, a, tok, self.mask)[:, :, :-1]                 # E × N × T−1 × V
            y = tok[:, :, 1:]
            ce = F.cross_entropy(z.reshape(-1, z.shape[-1]), y.reshape(-1), reduction="none")
            ce = ce.view(sc.shape).masked_fill(~sc, 0.0)
            correct = ((z.argmax(dim=3) == y) & sc).sum(dim=(1, 2))
            return ce.sum(dim=(1, 2)), correct, sc.sum(dim=(1, 2))
        x, y = batch
        z = (self_forward if self.family == "self" else memory_forward)(P, a, x)   # E × N × 2
        ce = F.cross_entropy(z.reshape(-1, 2), y.reshape(-1), reduction="none").view(y.shape)
        return ce.sum(dim=1), (z.argmax(dim=2) == y).sum(dim=1), torch.full(
            (self.E,), y.shape[1])

    def step_losses(self, P, idx):
        """Each seed's mean loss on its minibatch idx[e] (E × B indices)."""
        s, _, n = self.terms(P, tuple(t[self.ar, idx] for t in self.train))
        return s / n

    def evaluate(self, P, data):
        """Per seed: loss and accuracy over a whole set, in chunks of B."""
        loss = correct = terms = 0
        with self.torch.no_grad():
            for c in range(0, data[0].shape[1], self.B):
                s, k, n = self.terms(P, tuple(t[:, c:c + self.B] for t in data))
                loss, correct, terms = loss + s, correct + k, terms + n
        return (loss / terms).tolist(), (correct / terms).tolist()

    def train_epochs(self, P, epochs):
        """train_model's loop for E seeds at once; per seed (status, train
        loss, train acc, test acc)."""
        torch, a, E = self.torch, self.args, self.E
        opt = torch.optim.Adam(list(P.values()), lr=a.lr, betas=(0.9, 0.999), eps=1e-8,
                               foreach=True if a.foreach else None)
        alive = [True] * E
        out = [["done", float("nan"), 0.0, 0.0] for _ in range(E)]
        keep = None                               # after a divergence: the seeds still counted
        for epoch in range(1, epochs + 1):
            perm = torch.stack([torch.randperm(self.n, generator=g) for g in self.gens])
            for b0 in range(0, self.n, self.B):
                losses = self.step_losses(P, perm[:, b0:b0 + self.B])
                loss = losses.sum() if keep is None else losses.masked_fill(~keep, 0.0).sum()
                if not math.isfinite(loss.item()):
                    for e, v in enumerate(losses.tolist()):
                        if alive[e] and not math.isfinite(v):
                            alive[e], out[e][0], out[e][1] = False, "diverged", v
                    if not any(alive):
                        return out
                    keep = torch.tensor(alive)
                    loss = losses.masked_fill(~keep, 0.0).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
            if epoch % a.eval_every == 0 or epoch == epochs:
                (ltr, atr), (lte, ate) = self.evaluate(P, self.train), self.evaluate(P, self.test)
                for e in range(E):
                    if not alive[e]:
                        continue
                    out[e][1:] = ltr[e], atr[e], ate[e]
                    if not (math.isfinite(ltr[e]) and math.isfinite(lte[e])):
                        alive[e], out[e][0] = False, "diverged"
                keep = None if all(alive) else torch.tensor(alive)
        return out


def data(torch, family, args, gen):
    """A seed's (train, test) sets, drawn as the one-model peer's main draws them."""
    if family == "lm":
        structure = peer_lm_cell.bigram_structure(torch, args.vocab, gen)
        return tuple(peer_lm_cell.bigram_backcopy(torch, args.vocab, args.seq_len, n, structure,
                                                  gen) for n in (args.train, args.test))
    return tuple(peer_train_cell.circles(torch, args.points, gen) for _ in range(2))


def one_model_train(torch, family, args, model, tr, te, gen):
    """The one-model peer's own training of one seed (the check's second path)."""
    if family == "lm":
        return peer_lm_cell.train(torch, model, args, tr, te, gen, args.epochs)
    return peer_train_cell.train(torch, model, args, *tr, *te, gen, args.epochs)


# ------------------------------------------------------------------ check


def check(torch, family, args, E, tol):
    """Every seed batched against the same seed alone; True when all agree."""
    seeds = [args.seed + e for e in range(E)]
    ref = []
    for s in seeds:
        a = copy.copy(args)
        a.seed = s
        torch.manual_seed(s)
        gen = torch.Generator().manual_seed(s)
        tr, te = data(torch, family, a, gen)
        model = one_model(family).build(torch, a)()
        result = one_model_train(torch, family, a, model, tr, te, gen)
        ref.append((result, {n: p.detach() for n, p in model.named_parameters()}))
    b = Batched(torch, family, args, seeds)
    P = b.stack(b.models())
    t0 = time.perf_counter()
    got = b.train_epochs(P, args.epochs)
    wall = time.perf_counter() - t0
    ok = True
    for e, s in enumerate(seeds):
        (status, loss, acc, tacc), params = ref[e]
        prel = max(float((P[n][e] - p).abs().max() / p.abs().max().clamp_min(1e-300))
                   for n, p in params.items())
        lrel = abs(got[e][1] - loss) / max(abs(loss), 1e-300)
        good = (prel <= tol and lrel <= tol and got[e][0] == status and got[e][2] == acc
                and got[e][3] == tacc)
        ok &= good
        print(f"peer_batched check {family} seed={s} status={got[e][0]}/{status} "
              f"param_rel={prel:.3g} loss_rel={lrel:.3g} train_loss={got[e][1]:.6g}/{loss:.6g} "
              f"train_acc={got[e][2]:.4f}/{acc:.4f} test_acc={got[e][3]:.4f}/{tacc:.4f} "
              f"{'ok' if good else 'FAIL'}", flush=True)
    if E > 1:                                    # distinct seeds are distinct models
        apart = min(max(float((P[n][e] - P[n][0]).abs().max()) for n in P) for e in range(1, E))
        print(f"peer_batched check {family} seeds apart: smallest max |difference| from seed "
              f"{seeds[0]} {apart:.3g} {'ok' if apart > 1e-3 else 'FAIL'}", flush=True)
        ok &= apart > 1e-3
    print(f"peer_batched check {family} E={E} epochs={args.epochs} batched_wall_s={wall:.3f} "
          f"tol={tol:g} {'passed' if ok else 'FAILED'}", flush=True)
    return ok


# ------------------------------------------------------------------- main


def main(argv):
    global torch_
    a, per_family = parse_args(argv)
    first = per_family[a.family[0]]
    torch, _ = peer_common.torch_setup(first.seed)
    torch_ = torch
    if a.check:
        ok = True
        for f in a.family:
            ok &= check(torch, f, per_family[f], a.seeds, a.check_tol)
        return 0 if ok else 1
    f, args = a.family[0], first
    seeds = [args.seed + e for e in range(a.seeds)]
    b = Batched(torch, f, args, seeds)

    def train_epochs(epochs):
        res = b.train_epochs(b.stack(b.models()), epochs)
        bad = sum(r[0] != "done" for r in res)
        done = [r for r in res if r[0] == "done"] or res
        mean = [sum(r[k] for r in done) / len(done) for k in (1, 2, 3)]
        return ("done" if not bad else f"diverged({bad}/{len(res)})", *mean)

    shape = (f"vocab={args.vocab} seq_len={args.seq_len} mlp_ratio={args.mlp_ratio} "
             f"train={args.train}" if f == "lm" else f"slots={args.slots} points={args.points}")
    tag = (f"family={f} seeds={a.seeds} first_seed={args.seed} width={args.width} "
           f"heads={args.heads} depth={args.depth} arch={args.arch} {shape} batch={args.batch} "
           f"epochs={args.epochs} lr={args.lr:g} foreach={int(a.foreach)}")
    return peer_common.run("peer_batched", tag, torch, args, train_epochs, cells=a.seeds)


torch_ = None  # the torch module, once main has set it up (imported there, as the peers do)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
