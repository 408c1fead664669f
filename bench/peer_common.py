"""bench/peer_common.py — what the PyTorch peers of bench_train_cell share
(bench/peer_train_cell.py, bench/peer_lm_cell.py): torch on one thread in
float64, the training loop of curvsweep's train_model (src/train/train.c),
and the --serve protocol bench_train_cell speaks (a ready line, then one
result line per "train" request on stdin)."""
import math
import os
import sys
import time


def parse(p, argv, width, heads, depth, batch, epochs, lr, fix=None, known=False):
    """Add the options every peer has (the model's width, heads, depth and
    arch, the schedule's batch, epochs and lr with the peer's defaults; the
    evaluation cadence, seed, repeats, the untimed warm-up, --serve), parse
    argv, let fix(args) fill family-dependent defaults, check width against
    heads. known: parse what this peer knows and return (args, the rest)
    (bench/peer_batched.py hands one command line to several peers)."""
    p.add_argument("--width", type=int, default=width)
    p.add_argument("--heads", type=int, default=heads)
    p.add_argument("--depth", type=int, default=depth)
    p.add_argument("--arch", choices=("gated", "ungated"), default="gated")
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--lr", type=float, default=lr)
    add_run_args(p)
    a, rest = p.parse_known_args(argv) if known else (p.parse_args(argv), [])
    if fix:
        fix(a)
    if a.width % a.heads:
        p.error("width must be divisible by heads")
    return (a, rest) if known else a


def weight(torch, rows, cols, std=None):
    """A rows × cols parameter N(0, std²), std 1/√cols by default (fan-in)."""
    std = 1.0 / math.sqrt(cols) if std is None else std
    return torch.nn.Parameter(torch.randn(rows, cols) * std)


def add_run_args(p):
    """The options every peer has."""
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--warmup-epochs", type=int, default=1,
                   help="epochs of an untimed throw-away run first (torch's first-call setup)")
    p.add_argument("--serve", action="store_true")


def torch_setup(seed):
    """torch on one thread, float64, seeded; returns (torch, generator)."""
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(seed)
    return torch, torch.Generator().manual_seed(seed)


def run_info(torch):
    return (f"torch={torch.__version__} threads={torch.get_num_threads()} "
            f"dtype={str(torch.get_default_dtype()).replace('torch.', '')} "
            f"openblas_num_threads={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')} "
            f"openblas_coretype={os.environ.get('OPENBLAS_CORETYPE', 'unset')}")


def train_loop(torch, opt, n, B, epochs, eval_every, gen, step_loss, evaluate):
    """train_model's loop: per epoch a fresh permutation, minibatches of B
    in that order (step_loss(idx) the batch's mean loss), a finiteness check
    of every step's loss, and every eval_every epochs (and at the last)
    evaluate() -> (train loss, train acc, test loss, test acc). Returns
    (status, train loss, train acc, test acc)."""
    status, loss_tr, acc_tr, acc_te = "done", float("nan"), 0.0, 0.0
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(n, generator=gen)
        for b0 in range(0, n, B):
            loss = step_loss(perm[b0:b0 + B])
            if not math.isfinite(loss.item()):
                return "diverged", loss.item(), acc_tr, acc_te
            opt.zero_grad()
            loss.backward()
            opt.step()
        if epoch % eval_every == 0 or epoch == epochs:
            loss_tr, acc_tr, loss_te, acc_te = evaluate()
            if not (math.isfinite(loss_tr) and math.isfinite(loss_te)):
                return "diverged", loss_tr, acc_tr, acc_te
    return status, loss_tr, acc_tr, acc_te


def batch_of(args, n):
    """train_model's minibatch size: args.batch, or all n when it is 0 or larger."""
    return args.batch if 0 < args.batch <= n else n


def adam(torch, model, args, foreach=None):
    """train_model's optimizer: Adam (β 0.9/0.999, ε 1e-8, constant args.lr)."""
    return torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8,
                            foreach=foreach)


def run(name, tag, torch, args, train_epochs, cells=1):
    """A peer's main after setup: the untimed warm-up of args.warmup_epochs
    epochs, then serve_or_repeat of train_epochs(args.epochs) (each call
    trains a fresh model, or `cells` models at once, for that many epochs
    and returns its result)."""
    if args.warmup_epochs > 0:
        train_epochs(args.warmup_epochs)
    return serve_or_repeat(name, tag, run_info(torch), lambda: train_epochs(args.epochs),
                           args.serve, args.repeats, cells)


def serve_or_repeat(name, tag, info, train_once, serve, repeats, cells=1):
    """--serve: the ready line, then one timed training per "train" line;
    else `repeats` timed trainings. train_once() -> (status, loss, acc, test
    acc), timed from the call to its return. cells > 1 (a batched peer
    training that many cells at once): the line gives the totals as
    total_wall_s and total_cpu_s, and wall_s and cpu_s per cell (total /
    cells), the figures bench_train_cell compares."""

    def run_once():
        t0, c0 = time.perf_counter(), time.process_time()
        status, loss, acc, tacc = train_once()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        total = (f"cells={cells} total_wall_s={wall:.6f} total_cpu_s={cpu:.6f} "
                 if cells > 1 else "")
        print(f"{name} {tag} status={status} {total}wall_s={wall / cells:.6f} "
              f"cpu_s={cpu / cells:.6f} train_loss={loss:.6g} train_acc={acc:.4f} "
              f"test_acc={tacc:.4f} {info}", flush=True)

    if serve:
        print(f"{name} ready {tag} {info}", flush=True)
        for line in sys.stdin:
            if line.strip() == "train":
                run_once()
            elif line.strip():
                print(f"{name} error unknown request {line.strip()!r}", flush=True)
        return 0
    for _ in range(repeats):
        run_once()
    return 0
