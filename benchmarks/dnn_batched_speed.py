"""Many small trainings at once (issue 11, point 5): R configurations of the digits MLP trained as
one batched computation (:func:`stam.dnn.batched.train_batched`) against the same R trainings one
after the other (the same code with R = 1, which follows ``stam train`` step for step), for STAM
and BC; goal: batched >= 5x faster at R = 16.  Also the time of one epoch of R = 64 STAM
configurations, from which the default ``stam map --dataset digits`` (64 cells x 3 seeds x 60
epochs) and ``stam tune`` (16 trials x 5 algorithms + 5 seeds x (5 tuned + 7 paper rows)) are
projected.

Batched and sequential are measured in alternation, ``--repeats`` times, and the best time of
each is kept (a load spike on a shared machine then hits both alike).  The update is compiled
(torch.compile) in the batched runs where ``--compile`` says so; the compilation happens in an
untimed warm-up.

    python benchmarks/dnn_batched_speed.py --out benchmarks/results/dnn_batched_speed_cpu.json
"""

from __future__ import annotations

import argparse
import time

import torch

from stam.dnn import batched, presets
from stam.io import emit_json, provenance

OVERRIDES = {"stam": {"gamma": 1.0, "lam": 2.0, "beta": 20.0}, "bc": {"lr": 0.05}}


def configs(algo: str, R: int, epochs: int) -> list[batched.Config]:
    """R different configurations (step sizes spread over a decade), one seed: a map's batch."""
    out = []
    for r in range(R):
        scale = 10 ** (r / max(R - 1, 1) - 0.5)
        ov = {k: v * scale if k in ("gamma", "lr") else v for k, v in OVERRIDES[algo].items()}
        out.append(batched.Config(presets.resolve(None, algo, "digits", ov, "auto", epochs), 0))
    return out


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--R", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=2, help="epochs per timed training")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compile", choices=("auto", "yes", "no"), default="yes",
                    help="for the batched runs (the sequential R = 1 runs are eager: compiling does not pay there)")
    ap.add_argument("--algos", default="stam,bc")
    ap.add_argument("--out")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    task = batched.digits_task(0.1, 0, device)
    comp = {"auto": "auto", "yes": True, "no": False}[args.compile]
    results = {}
    for algo in args.algos.split(","):
        cfgs = configs(algo, args.R, args.epochs)
        run_b = lambda: batched.train_batched(cfgs, task, args.epochs, 32, device=device, compile=comp)  # noqa: E731
        run_s = lambda: [batched.train_batched([c], task, args.epochs, 32, device=device, compile=False) for c in cfgs]  # noqa: E731
        batched.train_batched(cfgs, task, 1, 32, device=device, compile=comp)  # warm-up (compilation)
        tb, ts = [], []
        for _ in range(args.repeats):
            tb.append(timed(run_b))
            ts.append(timed(run_s))
        wide = configs(algo, 64, 1)
        batched.train_batched(wide, task, 1, 32, device=device, compile=comp)  # warm-up at R = 64
        t64 = min(timed(lambda: batched.train_batched(wide, task, 1, 32, device=device, compile=comp)) for _ in range(args.repeats))
        per_run_epoch_64 = t64 / 64
        results[algo] = {
            "R": args.R, "epochs": args.epochs, "batched_s": min(tb), "sequential_s": min(ts),
            "speedup": min(ts) / min(tb), "ms_per_run_epoch_batched": 1e3 * min(tb) / (args.R * args.epochs),
            "ms_per_run_epoch_sequential": 1e3 * min(ts) / (args.R * args.epochs),
            "ms_per_run_epoch_R64": 1e3 * per_run_epoch_64,
        }
    stam64 = results.get("stam", {}).get("ms_per_run_epoch_R64")
    projections = {}
    if stam64:
        projections["stam_map_digits_default_s"] = 64 * 3 * 60 * stam64 / 1e3
        projections["stam_tune_default_s"] = (16 * 5 + 5 * (5 + 7)) * 60 * stam64 / 1e3
        projections["note"] = ("projected from STAM's R = 64 epoch time: map 64 cells x 3 seeds x 60 epochs; tune 16 trials x 5 "
                               "algorithms + 5 seeds x (5 tuned + 7 paper presets), 60 epochs (BC/BR/PSGD/float steps are cheaper)")
    emit_json({"kind": "benchmark", "name": "dnn_batched_speed", "provenance": provenance(), "device": str(device),
               "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
               "threads": args.threads, "compile": args.compile, "results": results, "projections": projections}, args.out)


if __name__ == "__main__":
    main()
