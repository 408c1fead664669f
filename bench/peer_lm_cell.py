#!/usr/bin/python3
"""bench/peer_lm_cell.py — the PyTorch peer of bench_train_cell's language-
model cell: the lm family (docs/MODELS.md, "Models (the lm family)";
src/model/lm_internal.h) on Bigram-Backcopy, with the same data shape,
schedule and evaluation as curvsweep's train_model (src/train/train.c),
written the way a PyTorch user would (autograd, torch.optim.Adam), float64
on one thread. A benchmark peer, not a test and not part of the install
(Debian: apt-get install python3-torch).

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/peer_lm_cell.py [--repeats 3]

prints one line per training run:

    peer_lm_cell vocab=32 ... status=done wall_s=1.234567 cpu_s=1.230000 test_acc=0.4000 ...

--serve (used by bench_train_cell, which interleaves it with its own runs):
prints "peer_lm_cell ready ..." once set up, then trains once and prints
one result line per line read on stdin ("train"), until end of input.

The model (defaults: the reference LM cell of issue 25, bench/README.md):
    h0[t] = E[tok_t] + P[t]          E (V+1) × d (row V is BOS), P T × d
    block: A = LN1(h);  Q, K, V = A W_q,kᵀ, A W_vᵀ (no biases);
           per head softmax over keys s ≤ t of Q_j K_jᵀ/√dh, O_j = P_j V_j;
           gated g1: O ← σ(A W_gᵀ + b_g) ⊙ O;  h ← h + O W_oᵀ + b_o
           mlp_ratio r > 0: h ← h + GELU(LN2(h) W_1ᵀ + b_1) W_2ᵀ + b_2
    logits = LN_f(h) W_rᵀ + b_r at every position; the prediction at t − 1
    targets token t; mean cross-entropy over the scored targets.
Initialisation as curvsweep's (embeddings N(0, 1), weights N(0, 1/fan_in),
biases 0, LayerNorm gains 1) but from torch's generator; the
Bigram-Backcopy data (a cyclic order of the V tokens, each token's
successors the next three of the order with probability 1/3, 3 trigger
tokens after which the token before the trigger repeats; every target but
BOS → x₁ scored) from torch's generator too: the same distributions, not
the same numbers. Training as train_model: per epoch a fresh permutation,
minibatches of `batch` sequences, a finiteness check of every step's loss,
Adam (β 0.9/0.999, ε 1e-8, constant lr), and every eval_every epochs (and
at the last) loss and accuracy of the whole train and test sets in chunks
of `batch` sequences. Timed from the optimizer's creation to the end of the
last evaluation; model creation and data generation are outside.
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
    p.add_argument("--vocab", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--mlp-ratio", type=int, default=4)
    p.add_argument("--train", type=int, default=3200, help="training sequences")
    p.add_argument("--test", type=int, default=512, help="test sequences")
    return peer_common.parse(p, argv, width=32, heads=2, depth=2, batch=32, epochs=10, lr=1e-3,
                             known=known)


def build(torch, args):
    nn, F = torch.nn, torch.nn.functional
    weight = functools.partial(peer_common.weight, torch)

    def zeros(n):
        return nn.Parameter(torch.zeros(n))

    def ones(n):
        return nn.Parameter(torch.ones(n))

    class Block(nn.Module):
        """Pre-LN causal multi-head attention (gated at g1) and a GELU MLP."""

        def __init__(self, d, heads, f, gated):
            super().__init__()
            self.d, self.H, self.dh = d, heads, d // heads
            self.ln1_g, self.ln1_b = ones(d), zeros(d)
            self.Wq, self.Wk, self.Wv = weight(d, d), weight(d, d), weight(d, d)
            self.gated = gated
            if gated:
                self.Wg, self.bg = weight(d, d), zeros(d)
            self.Wo, self.bo = weight(d, d), zeros(d)
            self.f = f
            if f > 0:
                self.ln2_g, self.ln2_b = ones(d), zeros(d)
                self.W1, self.b1 = weight(f, d), zeros(f)
                self.W2, self.b2 = weight(d, f), zeros(d)

        def forward(self, h, mask):
            N, T, d = h.shape
            H, dh = self.H, self.dh
            a = F.layer_norm(h, (d,), self.ln1_g, self.ln1_b, 1e-5)
            q = F.linear(a, self.Wq).view(N, T, H, dh).transpose(1, 2)   # N × H × T × dh
            k = F.linear(a, self.Wk).view(N, T, H, dh).transpose(1, 2)
            v = F.linear(a, self.Wv).view(N, T, H, dh).transpose(1, 2)
            s = (q @ k.transpose(2, 3)) / math.sqrt(dh)                  # N × H × T × T
            p = torch.softmax(s.masked_fill(mask, float("-inf")), dim=3)
            o = (p @ v).transpose(1, 2).reshape(N, T, d)
            if self.gated:
                o = torch.sigmoid(F.linear(a, self.Wg, self.bg)) * o
            h = h + F.linear(o, self.Wo, self.bo)
            if self.f > 0:
                m = F.layer_norm(h, (d,), self.ln2_g, self.ln2_b, 1e-5)
                h = h + F.linear(F.gelu(F.linear(m, self.W1, self.b1)), self.W2, self.b2)
            return h

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            V, T, d = args.vocab, args.seq_len, args.width
            self.E = nn.Parameter(torch.randn(V + 1, d))
            self.P = nn.Parameter(torch.randn(T, d))
            self.blocks = nn.ModuleList(
                Block(d, args.heads, args.mlp_ratio * d, args.arch == "gated")
                for _ in range(args.depth))
            self.lnf_g, self.lnf_b = ones(d), zeros(d)
            self.Wr, self.br = weight(V, d), zeros(V)
            self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).triu(1))

        def forward(self, tok):
            h = self.E[tok] + self.P
            for block in self.blocks:
                h = block(h, self.mask)
            h = F.layer_norm(h, (h.shape[2],), self.lnf_g, self.lnf_b, 1e-5)
            return F.linear(h, self.Wr, self.br)                        # N × T × V

    return Model


def bigram_structure(torch, V, gen):
    """The task's cyclic order of the tokens and its 3 trigger tokens."""
    order = torch.randperm(V, generator=gen)
    trigger = torch.zeros(V, dtype=torch.bool)
    trigger[torch.randperm(V, generator=gen)[:3]] = True
    return order, trigger


def bigram_backcopy(torch, V, T, n, structure, gen):
    """n sequences (BOS = V at position 0) and their scored targets."""
    order, trigger = structure
    pos = torch.empty(V, dtype=torch.long)
    pos[order] = torch.arange(V)
    tok = torch.empty(n, T, dtype=torch.long)
    tok[:, 0] = V
    tok[:, 1] = torch.randint(V, (n,), generator=gen)
    for t in range(2, T):
        prev = tok[:, t - 1]
        succ = order[(pos[prev] + 1 + torch.randint(3, (n,), generator=gen)) % V]
        copy = trigger[prev] & (t - 2 >= 1)
        tok[:, t] = torch.where(copy, tok[:, t - 2], succ)
    scored = torch.ones(n, T - 1, dtype=torch.bool)
    scored[:, 0] = False                      # BOS -> x1 is not scored
    return tok, scored


def train(torch, model, args, tr, te, gen, epochs):
    """train_model's loop; returns (status, train loss, train acc, test acc)."""
    F = torch.nn.functional
    opt = peer_common.adam(torch, model, args)
    (xtr, str_), (xte, ste) = tr, te
    n, B = xtr.shape[0], peer_common.batch_of(args, xtr.shape[0])

    def loss_of(x, sc, reduction):
        z = model(x)[:, :-1]                                          # predictions of t = 1..T-1
        y = x[:, 1:]
        return F.cross_entropy(z[sc], y[sc], reduction=reduction), z, y

    def evaluate(x, sc):
        loss, correct, terms = 0.0, 0, 0
        with torch.no_grad():
            for c in range(0, x.shape[0], B):
                lsum, z, y = loss_of(x[c:c + B], sc[c:c + B], "sum")
                m = sc[c:c + B]
                loss += lsum.item()
                correct += int((z.argmax(dim=2) == y)[m].sum())
                terms += int(m.sum())
        return loss / terms, correct / terms

    def step_loss(idx):
        return loss_of(xtr[idx], str_[idx], "mean")[0]

    def evaluate_all():
        return evaluate(xtr, str_) + evaluate(xte, ste)

    return peer_common.train_loop(torch, opt, n, B, epochs, args.eval_every, gen, step_loss,
                                  evaluate_all)


def main(argv):
    args = parse_args(argv)
    torch, gen = peer_common.torch_setup(args.seed)
    structure = bigram_structure(torch, args.vocab, gen)
    tr = bigram_backcopy(torch, args.vocab, args.seq_len, args.train, structure, gen)
    te = bigram_backcopy(torch, args.vocab, args.seq_len, args.test, structure, gen)
    Model = build(torch, args)
    tag = (f"vocab={args.vocab} seq_len={args.seq_len} width={args.width} heads={args.heads} "
           f"depth={args.depth} mlp_ratio={args.mlp_ratio} arch={args.arch} gate=g1 "
           f"train={args.train} batch={args.batch} epochs={args.epochs} lr={args.lr:g}")
    return peer_common.run("peer_lm_cell", tag, torch, args,
                           lambda epochs: train(torch, Model(), args, tr, te, gen, epochs))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
