"""The memory estimate of ``stam tune`` and ``stam map`` against measured peaks (issue 40 item 4).

:func:`stam.dnn.sweep.memory_need` says how many bytes a batched training of R runs of a network at a
batch size needs (its parameters' copies and a batch's activations); ``check_memory`` refuses a
sweep above the device's memory.  Here each configuration (VGG-11 at widths 1/16, 1/8, 1/4, batch 64
and 128, R = 1 and 4, STAM, eager, on the CPU) trains one short epoch in a fresh process
(:func:`stam.dnn.batched.train_batched`, what a job runs, with its validation pass and BatchNorm
re-estimation) on random ``uint8`` images of CIFAR-10's shape, and the process's peak resident memory
(``VmHWM``) is compared with its resident memory just before the networks are built (``VmRSS``: torch,
the data): the increase is what the training itself took, what the estimate estimates.  The images
are random (the memory of a step does not depend on the pixels) and few (the data are not what is
measured).  The ratio estimate / measured is written per configuration, with its range.

    python benchmarks/memory_estimate.py --out benchmarks/results/memory_estimate_cpu.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys

WIDTHS = (1 / 16, 1 / 8, 1 / 4)
BATCHES = (64, 128)
RUNS = (1, 4)
SHAPE, CLASSES = (3, 32, 32), 10


def _status(field: str) -> int:
    """A ``/proc/self/status`` field in bytes (``VmRSS``, ``VmHWM``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def one(width: float, batch: int, R: int, steps: int, threads: int) -> dict:
    """Train R runs of VGG-11 at ``width`` for ``steps`` steps of ``batch`` images (one epoch) in this
    process; the increase of its peak resident memory over its resident memory before the networks."""
    import torch

    from stam.dnn import batched, data as data_mod, presets

    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    img = lambda n: torch.randint(0, 256, (n, *SHAPE), generator=g, dtype=torch.uint8)  # noqa: E731
    lab = lambda n: torch.randint(0, CLASSES, (n,), generator=g)  # noqa: E731
    data = data_mod.ImageData("cifar10", img(steps * batch), lab(steps * batch), img(256), lab(256), CLASSES, augment=True)
    data.val_x, data.val_y = img(256), lab(256)
    task = batched.Task(data, "vgg11", width)
    cfgs = [batched.Config(presets.resolve(None, "stam", "cifar10", {"gamma": 8.0, "lam": 0.5, "beta": 20.0}, "auto", 1), r)
            for r in range(R)]
    before = _status("VmRSS")
    batched.train_batched(cfgs, task, 1, batch, device="cpu", compile=False)
    return {"rss_before": before, "peak": _status("VmHWM"), "measured": _status("VmHWM") - before}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--widths", type=float, nargs="+", default=WIDTHS)
    ap.add_argument("--batches", type=int, nargs="+", default=BATCHES)
    ap.add_argument("--runs", type=int, nargs="+", default=RUNS, help="R, the runs trained side by side")
    ap.add_argument("--steps", type=int, default=3, help="training steps (one epoch) per configuration")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2, help="processes per configuration (the largest peak is kept)")
    ap.add_argument("--one", nargs=3, metavar=("WIDTH", "BATCH", "R"), help=argparse.SUPPRESS)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.one:
        w, b, r = float(args.one[0]), int(args.one[1]), int(args.one[2])
        print(json.dumps(one(w, b, r, args.steps, args.threads)))
        return

    from stam.dnn.models import model_cost
    from stam.dnn.sweep import memory_bytes_needed
    from stam.io import emit_json, provenance

    rows = []
    for width, batch, R in itertools.product(args.widths, args.batches, args.runs):
        runs = []
        for _ in range(args.repeats):  # a fresh process each: the allocator's pools differ from one to the next
            out = subprocess.run([sys.executable, __file__, "--one", repr(width), str(batch), str(R), "--steps",
                                  str(args.steps), "--threads", str(args.threads)], capture_output=True, text=True, check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        got = max(runs, key=lambda g: g["measured"])  # the largest: what the device must hold
        got["measured_each"] = [g["measured"] for g in runs]
        cost = model_cost("vgg11", CLASSES, SHAPE, width)
        est = memory_bytes_needed("vgg11", CLASSES, SHAPE, width, batch, R)
        rows.append({"width": width, "batch_size": batch, "R": R, "params": cost["params"], "activations": cost["activations"],
                     **got, "estimate": est, "ratio": est / got["measured"]})
        print(f"width {width:<7g} batch {batch:<4} R {R}: measured {got['measured'] / 2**20:7.1f} MiB, "
              f"estimate {est / 2**20:7.1f} MiB, ratio {est / got['measured']:.2f}", flush=True)
    ratios = [r["ratio"] for r in rows]
    # this run's own fit of the two calibrated constants (least squares in the relative error, PARAM_COPIES kept)
    import numpy as np

    from stam.dnn.sweep import PARAM_COPIES

    y = np.array([r["measured"] for r in rows], dtype=float)
    X = np.array([[1.0, 4.0 * r["R"] * r["activations"] * r["batch_size"]] for r in rows]) / y[:, None]
    rest = np.array([4.0 * r["R"] * PARAM_COPIES * r["params"] for r in rows])
    (fixed, copies), *_ = np.linalg.lstsq(X, (y - rest) / y, rcond=None)
    result = {"kind": "benchmark", "name": "memory_estimate", "provenance": provenance(), "model": "vgg11", "algo": "stam",
              "device": "cpu", "compile": False, "steps": args.steps, "threads": args.threads, "repeats": args.repeats,
              "rows": rows,
              "ratio_min": min(ratios), "ratio_max": max(ratios),
              "fit": {"fixed_bytes": float(fixed), "activation_copies": float(copies), "param_copies": PARAM_COPIES}
              if len(rows) > 2 else None}
    print(f"estimate / measured: {min(ratios):.2f} to {max(ratios):.2f}"
          + (f"; this run's fit: {fixed / 2**20:.1f} MiB fixed, {copies:.2f} copies of the activations" if len(rows) > 2 else ""))
    if args.out:
        emit_json(result, args.out)


if __name__ == "__main__":
    main()
