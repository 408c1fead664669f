"""The tests behind the report's verdicts, written out independently in
Python for the shell tests (sh_analyze.sh, sh_analyze_gates.sh) to
recompute verdicts.csv from the archives (analysis/VERDICTS.md, "Statistics
of the verdicts"): the exact sign-flip test by enumerating every sign
pattern, Holm's step-down adjustment, and the seeds a test needs."""
import itertools
import math


def signflip(d, side="two"):
    """p of the paired sign-flip test of the finite d (side "greater" or "two")."""
    d = [x for x in d if math.isfinite(x)]
    if not d:
        return float("nan")
    t, tol = sum(d), 1e-12 * sum(abs(x) for x in d)
    hits = 0
    for e in itertools.product((1, -1), repeat=len(d)):
        u = sum(a * b for a, b in zip(e, d))
        hits += (u >= t - tol) if side == "greater" else (abs(u) >= abs(t) - tol)
    return hits / 2 ** len(d)


def holm(ps):
    """Holm-adjusted p of the family ps (all finite)."""
    idx = sorted(range(len(ps)), key=lambda i: (ps[i], i))
    out, run = [0.0] * len(ps), 0.0
    for j, i in enumerate(idx):
        run = max(run, min(1.0, (len(ps) - j) * ps[i]))
        out[i] = run
    return out


def needs(k, side="two", alpha=0.05):
    """Fewest seeds with which the exact test can pass Holm over a family of k."""
    return next(n for n in range(1, 64) if k * 2.0 ** ((1 if side == "two" else 0) - n) < alpha)
