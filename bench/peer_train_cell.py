#!/usr/bin/python3
"""bench/peer_train_cell.py — the PyTorch peer of bench_train_cell's memory
cells and of its self-attention cell (--family self): the same model, data
shape, schedule and evaluation as curvsweep's train_model
(src/train/train.c, src/model/model.c, src/model/memory_attn.c,
src/model/self_attn.c, docs/MODELS.md), written the way a PyTorch user
would (autograd, torch.optim.Adam), float64 on one thread. A benchmark peer, not a test and
not part of the install (Debian: apt-get install python3-torch).

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/peer_train_cell.py [--width 16] [--repeats 3]

prints one line per training run:

    peer_train_cell family=memory width=16 ... wall_s=1.234567 cpu_s=1.230000 test_acc=0.9790 ...

--serve (used by bench_train_cell, which interleaves it with its own runs):
prints "peer_train_cell ready ..." once set up, then trains once and prints
one result line per line read on stdin ("train"), until end of input.

The model (memory family, gated "G1", pure composition, no norm):
    h0 = W_e x + b_e
    layer l: q = W_q a;  s = q Kᵀ/√d_h (per head, against n learned key
             slots);  α = softmax(s);  o = α U;  u = σ(W_g a + b_g) ⊙ o;
             h = W_o u + b_o          (no bias on q, K, U)
    logits = W_r h_L + b_r;  mean softmax cross-entropy over 2 classes.
--family self (the self family, src/model/self_attn.c, docs/MODELS.md;
defaults: the reference self cell, gated g1, 2 heads, no residual, no norm):
    X0 = [c; x_1 w_1 + b_1; …; x_m w_m + b_m]   T = m + 1 tokens of width d
    layer: Q, K, V = X W_q,k,vᵀ (no biases); per head P_j = softmax_rows(
           Q_j K_jᵀ/√d_h), O_j = P_j V_j;  O ← σ(X W_gᵀ + b_g) ⊙ O (g1);
           X ← O W_oᵀ + b_o   (pure composition, no norm)
    logits = W_r X_L[0] + b_r (the CLS row).
Initialisation as curvsweep's (weights N(0, 1/fan_in), slots N(0, 1),
biases 0; the self family's feature tokens w_j, b_j and CLS c N(0, 1/d))
but from torch's generator, and the circles data (x uniform in (-1, 1)²,
y = [|x| < √(2/π)]) from torch's generator too: the same distributions,
not the same numbers, so the accuracies agree to sampling noise only.
Training as train_model: per epoch a fresh permutation, minibatches of
`batch` in that order, a finiteness check of every step's loss (the run
stops as diverged, as curvsweep's does), Adam (β 0.9/0.999, ε 1e-8, lr 3e-3
constant: config_default()), and every eval_every epochs (and at the last)
the loss and accuracy of the whole train and test sets, evaluated in chunks
of `batch` points (the workspace curvsweep evaluates with). Timed as
bench_train_cell times train_model: from the optimizer's creation to the end
of the last evaluation; model creation and data generation are outside.
Adam runs torch's default per-tensor loop on CPU; --foreach takes its
multi-tensor path instead (no measurable difference for these cells).
"""
import argparse
import functools
import math
import sys

import peer_common


def parse_args(argv, known=False):
    """The options; known: (args, what this peer does not know), for
    bench/peer_batched.py."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", choices=("memory", "self"), default="memory")
    p.add_argument("--slots", type=int, default=3, help="memory family only")
    p.add_argument("--points", type=int, default=2048, help="train and test points each")
    p.add_argument("--foreach", action="store_true",
                   help="Adam's multi-tensor path (torch's default on CPU is the per-tensor loop)")
    p.set_defaults(heads=0)

    def fix(a):
        a.heads = a.heads or (2 if a.family == "self" else 1)  # the reference cells'

    return peer_common.parse(p, argv, width=16, heads=0, depth=4, batch=256, epochs=100, lr=3e-3,
                             fix=fix, known=known)


def build(torch, args):
    nn, F = torch.nn, torch.nn.functional
    weight = functools.partial(peer_common.weight, torch)

    def bias(n):
        return nn.Parameter(torch.zeros(n))

    class MemoryAttention(nn.Module):
        """Cross-attention of the layer input to n learned slots (K, U)."""

        def __init__(self, d, n, heads, gated):
            super().__init__()
            self.d, self.n, self.H, self.dh = d, n, heads, d // heads
            self.Wq = weight(d, d)
            self.K = weight(n, d, 1.0)
            self.U = weight(n, d, 1.0)
            self.Wo, self.bo = weight(d, d), bias(d)
            self.gated = gated
            if gated:
                self.Wg, self.bg = weight(d, d), bias(d)

        def forward(self, a):
            N, H, n, dh = a.shape[0], self.H, self.n, self.dh
            q = F.linear(a, self.Wq)                                   # N × d
            if H == 1:
                alpha = torch.softmax(q @ self.K.t() / math.sqrt(dh), dim=1)  # N × n
                o = alpha @ self.U                                     # N × d
            else:
                qh = q.view(N, H, dh).transpose(0, 1)                  # H × N × dh
                Kh = self.K.view(n, H, dh).transpose(0, 1)             # H × n × dh
                Uh = self.U.view(n, H, dh).transpose(0, 1)
                alpha = torch.softmax(qh @ Kh.transpose(1, 2) / math.sqrt(dh), dim=2)
                o = (alpha @ Uh).transpose(0, 1).reshape(N, self.d)
            if self.gated:
                o = torch.sigmoid(F.linear(a, self.Wg, self.bg)) * o
            return F.linear(o, self.Wo, self.bo)

    class Model(nn.Module):
        def __init__(self, m, d, n, heads, depth, gated):
            super().__init__()
            self.We, self.be = weight(d, m), bias(d)
            self.layers = nn.ModuleList(MemoryAttention(d, n, heads, gated) for _ in range(depth))
            self.Wr, self.br = weight(2, d), bias(2)

        def forward(self, x):
            h = F.linear(x, self.We, self.be)
            for layer in self.layers:
                h = layer(h)                       # pure composition, no norm
            return F.linear(h, self.Wr, self.br)

    class SelfAttention(nn.Module):
        """Multi-head self-attention over the T tokens of each point."""

        def __init__(self, d, heads, gated):
            super().__init__()
            self.d, self.H, self.dh = d, heads, d // heads
            self.Wq, self.Wk, self.Wv = weight(d, d), weight(d, d), weight(d, d)
            self.gated = gated
            if gated:
                self.Wg, self.bg = weight(d, d), bias(d)
            self.Wo, self.bo = weight(d, d), bias(d)

        def forward(self, X):
            N, T, d = X.shape
            H, dh = self.H, self.dh
            q = F.linear(X, self.Wq).view(N, T, H, dh).transpose(1, 2)   # N × H × T × dh
            k = F.linear(X, self.Wk).view(N, T, H, dh).transpose(1, 2)
            v = F.linear(X, self.Wv).view(N, T, H, dh).transpose(1, 2)
            p = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(dh), dim=3)  # N × H × T × T
            o = (p @ v).transpose(1, 2).reshape(N, T, d)
            if self.gated:
                o = torch.sigmoid(F.linear(X, self.Wg, self.bg)) * o       # g1
            return F.linear(o, self.Wo, self.bo)

    class SelfModel(nn.Module):
        def __init__(self, m, d, heads, depth, gated):
            super().__init__()
            std = 1.0 / math.sqrt(d)
            self.tokW, self.tokb = weight(m, d, std), weight(m, d, std)
            self.cls = nn.Parameter(torch.randn(d) * std)
            self.layers = nn.ModuleList(SelfAttention(d, heads, gated) for _ in range(depth))
            self.Wr, self.br = weight(2, d), bias(2)

        def forward(self, x):
            N, d = x.shape[0], self.cls.shape[0]
            feats = x.unsqueeze(2) * self.tokW + self.tokb                  # N × m × d
            X = torch.cat((self.cls.expand(N, 1, d), feats), dim=1)        # N × T × d
            for layer in self.layers:
                X = layer(X)                       # pure composition, no norm
            return F.linear(X[:, 0], self.Wr, self.br)

    def model():
        gated = args.arch == "gated"
        if args.family == "self":
            return SelfModel(2, args.width, args.heads, args.depth, gated)
        return Model(2, args.width, args.slots, args.heads, args.depth, gated)

    return model


def circles(torch, n, gen):
    x = torch.rand(n, 2, generator=gen) * 2.0 - 1.0
    y = (x.pow(2).sum(dim=1) < 2.0 / math.pi).long()
    return x, y


def train(torch, model, args, xtr, ytr, xte, yte, gen, epochs):
    """train_model's loop; returns (status, train loss, train acc, test acc)."""
    F = torch.nn.functional
    opt = peer_common.adam(torch, model, args, foreach=True if args.foreach else None)
    n, B = xtr.shape[0], peer_common.batch_of(args, xtr.shape[0])

    def evaluate(x, y):
        loss, correct = 0.0, 0
        with torch.no_grad():
            for c in range(0, x.shape[0], B):
                z = model(x[c:c + B])
                loss += F.cross_entropy(z, y[c:c + B], reduction="sum").item()
                correct += int((z.argmax(dim=1) == y[c:c + B]).sum())
        return loss / x.shape[0], correct / x.shape[0]

    def step_loss(idx):
        return F.cross_entropy(model(xtr[idx]), ytr[idx])

    def evaluate_all():
        return evaluate(xtr, ytr) + evaluate(xte, yte)

    return peer_common.train_loop(torch, opt, n, B, epochs, args.eval_every, gen, step_loss,
                                  evaluate_all)


def main(argv):
    args = parse_args(argv)
    torch, gen = peer_common.torch_setup(args.seed)
    xtr, ytr = circles(torch, args.points, gen)
    xte, yte = circles(torch, args.points, gen)
    make_model = build(torch, args)
    tag = (f"family={args.family} width={args.width} depth={args.depth} slots={args.slots} "
           f"heads={args.heads} "
           f"arch={args.arch} points={args.points} batch={args.batch} epochs={args.epochs} "
           f"foreach={int(args.foreach)}")
    return peer_common.run(
        "peer_train_cell", tag, torch, args,
        lambda epochs: train(torch, make_model(), args, xtr, ytr, xte, yte, gen, epochs))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
