#!/usr/bin/python3
"""sched_model.py — discrete-event model of the sweep's scheduler at scale
(docs/SCALING.md). Run with /usr/bin/python3 (numpy).

The engine (docs/SWEEP.md): rank 0 hands out cells longest first, one at a
time; a worker that finishes sends its result and gets its next cell in the
reply. Rank 0 is one server: every result costs it t_msg (receive, unpack,
dispatch) + t_write (the archive write, durable before the next message);
results queue while it is busy. Messages take `lat` seconds one way.

    makespan   time from the first hand-out to the last result written
    bound      max(total work / workers, longest cell): no scheduler beats it
    efficiency bound / makespan
    root busy  (t_msg + t_write) x cells / makespan

A Slurm array of K shards is K independent jobs of P/K ranks and N/K cells
(cells dealt round-robin by cost, as `run --shard`), then one `merge` of the
shard archives at merge_rate cells/s.

    sched_model.py calibrate           the 64-rank runs of this machine, model vs measured
    sched_model.py table               efficiency for 10^3..10^4 ranks, 10^5..10^6 cells
    sched_model.py one P N MEAN_S [--write S] [--shards K] [--cv CV]
"""
import heapq
import sys

import numpy as np

# Calibration (docs/SCALING.md, "The model"): seconds, measured on 2026-11-23
# with synthetic cells (bench/sched.ini, CS_SYNTHETIC_CELLS) after the batched
# archive writes of issue 14; today's figures beside them: bench/RESULTS.md,
# "Scheduler model".
T_MSG = 1.5e-5        # rank 0 per result: receive + unpack + dispatch (root busy - archive)
LAT = 3e-4            # hand-out latency: a waiting worker polls every 1 ms (docs/SWEEP.md)
WRITE_BEFORE = 1.5e-3      # archive write per result before batching (660 results/s)
WRITE_BEFORE_PTS = 2.9e-3  # with 128 points x 6 prefixes (350/s)
WRITE_NOW = 3.6e-5    # batched + group commit, measured in the 64-rank run (bench/archive: 37,000/s)
WRITE_NOW_PTS = 4.4e-4     # with points: bench/archive 2,278/s
MERGE_RATE = 25000.0  # bench/merge without points on this machine (cells/s)
MERGE_RATE_PTS = 4000.0    # with points (the /points and /params groups copied as stored)
CV = 1.6              # spread of cell durations (cost model of bench/sched.ini: widths 4..64, depths 1..4)


def durations(n, mean, cv, seed=1):
    """n cell durations: lognormal with the given mean and coefficient of variation."""
    rng = np.random.default_rng(seed)
    s2 = np.log(1 + cv * cv)
    d = rng.lognormal(np.log(mean) - s2 / 2, np.sqrt(s2), n)
    return np.sort(d)[::-1]  # longest first, as the engine hands them out


def simulate(P, d, t_write, t_msg=T_MSG, lat=LAT):
    """One job: P ranks (rank 0 serves only: at scale its own cells are
    negligible), cells d (in hand-out order). Returns makespan, bound, busy."""
    W = P - 1
    n = len(d)
    root = 0.0
    arrivals = []  # (time a result reaches rank 0)
    k = 0
    for w in range(min(W, n)):  # the first hand-outs, one message each
        root += t_msg
        heapq.heappush(arrivals, root + lat + d[k] + lat)
        k += 1
    busy = t_msg * min(W, n)
    while arrivals:
        a = heapq.heappop(arrivals)
        root = max(root, a) + t_msg + t_write
        busy += t_msg + t_write
        if k < n:
            heapq.heappush(arrivals, root + lat + d[k] + lat)
            k += 1
    bound = max(d.sum() / W, d.max())
    return root, bound, busy / root


def job(P, N, mean, t_write, shards=1, merge_rate=MERGE_RATE, cv=CV):
    """Efficiency of one job (shards = 1) or an array of shards + merge."""
    d = durations(N, mean, cv)
    if shards == 1:
        ms, bound, busy = simulate(P, d, t_write)
        return ms, max(d.sum() / (P - 1), d.max()), busy
    # shard 0 of K (round-robin by cost); the shards run side by side
    ms, _, busy = simulate(P // shards, d[0::shards], t_write)
    ms += N / merge_rate
    return ms, max(d.sum() / (P - shards), d.max()), busy


def calibrate():
    # The measured runs (bench/sched.ini, 2,000 cells, mpirun --oversubscribe on
    # 2 cores: the ranks sleep, so 64 of them fit): makespan of the sweep.
    print("calibration: 2,000 synthetic cells, model vs measured makespan")
    print("  ranks  mean_s  model makespan  measured   model/measured")
    for P, mean, measured in [(64, 0.5, 15.845), (64, 0.05, 1.778), (64, 0.01, 0.495),
                              (16, 0.2, 25.582)]:
        ms, bound, busy = simulate(P, durations(2000, mean, CV), WRITE_NOW)
        print("  %5d  %5.2f  %12.3f s  %7.3f s  %.2f" % (P, mean, ms, measured, ms / measured))


def table():
    print("efficiency = bound / makespan; root busy fraction in brackets")
    for label, tw in [("before batching 1.5 ms/result", WRITE_BEFORE),
                      ("now 0.036 ms/result", WRITE_NOW),
                      ("before batching, with points 2.9 ms", WRITE_BEFORE_PTS),
                      ("now, with points 0.44 ms", WRITE_NOW_PTS)]:
        print("\nwrite cost: %s" % label)
        print("  ranks   cells     mean cell   one job         array of shards (shard size)")
        for P in (1000, 10000):
            for N in (100000, 1000000):
                for mean in (1.0, 10.0, 60.0):
                    ms, bound, busy = job(P, N, mean, tw)
                    # shards so that each root stays under ~50% busy
                    rate = P / mean * (tw + T_MSG)  # root utilisation of one job
                    K = 1
                    while rate / K > 0.5 and K < P // 8:
                        K *= 2
                    mr = MERGE_RATE_PTS if tw in (WRITE_BEFORE_PTS, WRITE_NOW_PTS) else MERGE_RATE
                    ams, abound, abusy = job(P, N, mean, tw, shards=K, merge_rate=mr)
                    print("  %5d  %8d  %6.0f s    %5.2f [%3.0f%%]    %5.2f [%3.0f%%] K=%d (%d ranks, %d cells)"
                          % (P, N, mean, bound / ms, 100 * busy, abound / ams, 100 * abusy, K,
                             P // K, N // K))


def main(argv):
    if len(argv) >= 2 and argv[1] == "calibrate":
        calibrate()
    elif len(argv) >= 2 and argv[1] == "table":
        table()
    elif len(argv) >= 5 and argv[1] == "one":
        P, N, mean = int(argv[2]), int(argv[3]), float(argv[4])
        opts = dict(zip(argv[5::2], argv[6::2]))
        tw = float(opts.get("--write", WRITE_NOW))
        K = int(opts.get("--shards", 1))
        ms, bound, busy = job(P, N, mean, tw, shards=K, cv=float(opts.get("--cv", CV)))
        print("ranks %d cells %d mean %.3g s write %.3g ms shards %d: makespan %.1f s bound %.1f s "
              "efficiency %.3f root busy %.1f%%" % (P, N, mean, tw * 1e3, K, ms, bound, bound / ms,
                                                    100 * busy))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
