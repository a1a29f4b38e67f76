"""Speed of the batched STAM iteration on the synthetic problems (prints JSON; --out FILE writes it).

Measures, on problem 1 (``binary``, float32 by default; one STAM iteration = one minibatch
stochastic gradient + :func:`stam.steps.stam_step`):

1. seconds per iteration over n in {1e3, 1e4, 1e5, 1e6} x R in {1, 4, 16, 64, 256} (b = 8,
   N = 64); a combination is skipped when its estimated peak memory exceeds ``--max-gib``
   (:func:`peak_bytes`) -- the skipped ones are listed with the reason;
2. growth in n (R = 1, b = 8, N = 72, n from 1e4, where arithmetic rather than Python overhead
   dominates, to 1e6) and in b (n = 1e5, R = 1, b in {8, 32, 128, 512}, N = 512): the log-log
   slope, the cost per unit of size, and the affine fit ``t = a + c * size`` with its largest
   relative residual.  Both use ``N > DENSE_RATIO * b``, so every size takes the one general
   route of ``FiniteSumLoss.grad_batch`` (bounded gathers; the grid's N = 64 with b = 8 takes the
   dense route for data within cache, which would mix two routes in one fit);
3. batched vs sequential at n = 1e3: one iteration of R = 64 batched runs against 64 iterations
   of R = 1 (the same work run one run at a time), in alternating rounds, with 1 thread and
   with all cores;
4. at n = 1e6, b = 32, R = 1: one STAM iteration against the stochastic gradient evaluation it
   contains (target: at most 1.5x).

Each time is the best and the median of at least ``--repeat`` calls (more until 0.5 s are spent)
after two warm-up calls.  The grid and the growth fits use the best times (the usual choice on
a machine shared with other work); the two targets are stated with medians and best times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

from stam.steps import stam_step
from stam.io import emit_json, provenance
from stam.synthetic.losses import DENSE_RATIO
from stam.synthetic.problems import binary

GAMMA, BETA = 0.1, 1000.0
N_GROWTH = DENSE_RATIO * 8 + 8  # > DENSE_RATIO * b at b = 8: growth in n on the gather route alone


def timed(fn, repeat: int, warmup: int = 2, min_seconds: float = 0.5, max_calls: int = 2000) -> dict:
    """Best and median wall time of at least ``repeat`` calls (more, up to ``max_calls``, until
    ``min_seconds`` have been spent) after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    while len(times) < repeat or (sum(times) < min_seconds and len(times) < max_calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return {"best": min(times), "median": statistics.median(times), "calls": len(times)}


def make(n, R, b, N, dtype, seed=0):
    """A ``binary`` instance, its batched start, and closures for one iteration and one gradient."""
    problem = binary(n=n, N=N, b=b, blocks=4, seed=seed, dtype=dtype)
    gen = torch.Generator().manual_seed(seed)
    box = {"state": problem.start(R, GAMMA)}

    def iteration():
        s = box["state"]
        box["state"] = stam_step(s, problem.stochastic_grad(s.y, gen), problem, GAMMA, BETA)

    def gradient():
        problem.stochastic_grad(box["state"].y, gen)

    return problem, iteration, gradient


#: Peak memory of an iteration, in (R, n) tensors: the state (y, x, u, z) stays resident and one
#: iteration holds at most 6 more at once (measured: VmHWM - VmRSS over 3 iterations at n = 1e6,
#: R = 16 and 64, float32, is 6.00 (R, n) tensors); the gather buffer is bounded (GATHER_BYTES).
PEAK_TENSORS = 4 + 6


def peak_bytes(n: int, R: int, N: int, itemsize: int) -> int:
    """Estimated peak memory of one batched iteration: :data:`PEAK_TENSORS` ``(R, n)`` tensors and
    the ``(N, n)`` data matrix."""
    return (PEAK_TENSORS * R + N) * n * itemsize


def slope(xs, ys) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def growth(name: str, sizes, make_iteration, repeat: int, log) -> dict:
    """Seconds per iteration over ``sizes`` of one parameter; the log-log slope (1 = linear; below 1
    while a fixed cost still shows) and the affine fit ``t = a + c * size`` by least squares with
    relative weights, with its largest relative residual (small = the cost is linear in the size)."""
    secs = []
    for size in sizes:
        secs.append(timed(make_iteration(size), repeat)["best"])
        log(f"{name}={size:>8}: {secs[-1] * 1e3:9.3f} ms/iter")
    x, t = np.asarray(sizes, float), np.asarray(secs)
    w = 1 / t  # minimise relative residuals
    (c, a), *_ = np.linalg.lstsq(np.stack([x, np.ones_like(x)], 1) * w[:, None], t * w, rcond=None)
    resid = float(np.max(np.abs(a + c * x - t) / t))
    return {name: list(sizes), "seconds": secs, "seconds_per_unit": [s / z for s, z in zip(secs, sizes)],
            "slope": slope(sizes, secs), "slope_top_decade":
            slope(sizes[-2:], secs[-2:]) if len(sizes) >= 2 else None,
            "affine_fit": {"a_seconds": float(a), "c_seconds_per_unit": float(c), "max_relative_residual": resid}}


def interleaved(batched, sequential, rounds: int, warmup: int = 2) -> dict:
    """Alternate one call of ``batched`` and one of ``sequential``; the per-round ratio is immune to
    the slow drifts of a shared machine.  Median and quartiles of ``sequential / batched``."""
    for _ in range(warmup):
        batched(), sequential()
    tb, ts = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        batched()
        mid = time.perf_counter()
        sequential()
        tb.append(mid - start)
        ts.append(time.perf_counter() - mid)
    ratio = sorted(s / b for s, b in zip(ts, tb))
    q = lambda f: ratio[min(len(ratio) - 1, int(f * len(ratio)))]  # noqa: E731
    return {"rounds": rounds, "batched_seconds_median": statistics.median(tb), "sequential_seconds_median":
            statistics.median(ts), "speedup": statistics.median(ratio), "speedup_q1": q(0.25), "speedup_q3": q(0.75)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the JSON here (atomically)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: on a shared 2-core machine OpenMP barriers stall for ms)")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--max-gib", type=float, default=8.0, help="skip a grid point whose estimated peak memory exceeds this (GiB)")
    ap.add_argument("--quick", action="store_true", help="n up to 1e5, R up to 64, fewer repeats")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    ns = [10**3, 10**4, 10**5] + ([] if args.quick else [10**6])
    Rs = [1, 4, 16, 64] + ([] if args.quick else [256])
    repeat = 3 if args.quick else args.repeat
    b0, N0 = 8, 64
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731

    grid, skipped = [], []
    for n in ns:
        for R in Rs:
            need = peak_bytes(n, R, N0, dtype.itemsize) / 2**30
            if need > args.max_gib:
                skipped.append({"n": n, "R": R, "reason": f"estimated peak memory {need:.3g} GiB > --max-gib {args.max_gib:g}"})
                continue
            _, it, _ = make(n, R, b0, N0, dtype)
            t = timed(it, repeat)
            grid.append({"n": n, "R": R, "b": b0, "N": N0, "seconds_per_iter": t["best"], "median": t["median"],
                         "calls": t["calls"], "seconds_per_run_iter": t["best"] / R})
            log(f"n={n:>8} R={R:>4}: {t['best'] * 1e3:9.3f} ms/iter (median {t['median'] * 1e3:.3f})")

    growth_n = growth("n", [10**4, 3 * 10**4, 10**5, 3 * 10**5] + ([] if args.quick else [10**6]),
                      lambda n: make(n, 1, b0, N_GROWTH, dtype)[1], repeat, log)
    growth_n.update(R=1, b=b0, N=N_GROWTH)
    n_b = 10**5 if not args.quick else 10**4
    growth_b = growth("b", [8, 32, 128, 512], lambda b: make(n_b, 1, b, 512, dtype)[1], repeat, log)
    growth_b.update(R=1, n=n_b, N=512)

    _, it64, _ = make(10**3, 64, b0, N0, dtype)
    _, it1, _ = make(10**3, 1, b0, N0, dtype)
    batch = {"n": 10**3, "R": 64, "b": b0, "N": N0, "target": ">= 10",
             "rule": "rounds alternate one R=64 iteration and 64 R=1 iterations (the same work, run by run); "
                     "speedup = median over rounds of (time of the 64 R=1 iterations) / (time of the R=64 iteration)",
             "by_threads": {}}
    for threads in sorted({1, os.cpu_count() or 1}):
        torch.set_num_threads(threads)
        batch["by_threads"][threads] = r = interleaved(it64, lambda: [it1() for _ in range(64)], rounds=max(repeat, 1) * 15)
        log(f"batched vs sequential at n=1e3, R=64, {threads} thread(s): {r['speedup']:.1f}x "
            f"(quartiles {r['speedup_q1']:.1f}-{r['speedup_q3']:.1f})")
    torch.set_num_threads(args.threads)
    batch["speedup"] = batch["by_threads"][args.threads]["speedup"] if args.threads in batch["by_threads"] else None

    n_big = 10**6 if not args.quick else 10**5
    _, it_big, grad_big = make(n_big, 1, 32, 64, dtype)
    t_iter = timed(it_big, repeat, min_seconds=2.0)
    t_grad = timed(grad_big, repeat, min_seconds=2.0)
    overhead = {"n": n_big, "b": 32, "R": 1, "iteration_seconds": t_iter["best"], "gradient_seconds": t_grad["best"],
                "ratio": t_iter["best"] / t_grad["best"], "ratio_median": t_iter["median"] / t_grad["median"],
                "target": "<= 1.5"}
    log(f"n={n_big}, b=32: iteration {t_iter['best'] * 1e3:.2f} ms, gradient {t_grad['best'] * 1e3:.2f} ms, "
        f"ratio {overhead['ratio']:.2f} (medians: {overhead['ratio_median']:.2f})")

    result = {
        "kind": "synthetic-speed",
        "provenance": provenance(),
        "settings": {"problem": "binary", "dtype": args.dtype, "threads": args.threads, "repeat": repeat,
                     "quick": args.quick, "timing": "best and median of >= --repeat calls (>= 0.5 s) after 2 warm-up calls"},
        "grid": grid,
        "skipped": skipped,
        "growth_n": growth_n,
        "growth_b": growth_b,
        "batched_vs_sequential": batch,
        "iteration_vs_gradient": overhead,
    }
    emit_json(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
