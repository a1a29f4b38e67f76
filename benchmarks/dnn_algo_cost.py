"""What each algorithm costs against float SGD in the trainer ``stam train`` runs (issue 26, point
2: STAM / float training time at most 1.2 on the digits MLP and at most 1.1 on VGG-11 at widths
1/8 and 1; BC, BR and PSGD at most 1.1; the optimiser step on VGG-11 within 1.5x of SGD with
momentum).

- **digits**: whole ``stam train`` runs in this process (MLP, 60 epochs, batch 32, the validation
  split, every epoch evaluated), the training seconds of ``summary.json``; the algorithms in
  alternation, ``--repeats`` rounds, the median of the per-round ratios to float; for each of
  ``--digits-compile`` (``stam train --compile``): ``auto`` (eager here, the run being too short
  for ``torch.compile``) and ``aot`` (the packages built first in a fresh cache by a one-epoch run
  in a process of its own, its wall time recorded, so that the timed runs load them as every
  later process does).
  STAM as ``stam train`` runs it by default, without ``--proxies``.
- **VGG-11** at each ``--widths``: ``--batches`` training steps of batch 128 on random uint8 images
  of CIFAR-10's shape (crops and flips on) through :meth:`stam.dnn.batched.Trainer.train_epoch`,
  images/s; and the update alone (every layer in one call of the algorithm's batched rule, on
  fixed random gradients), best of ``--step-repeats``, eager and, at the ``--compile-widths``,
  compiled with ``torch.compile`` as ``stam train`` compiles it for long runs of large networks
  (:func:`stam.dnn.compiled.compile_pays`; the first, compiling call is not timed); STAM with its stationarity
  proxies on (the costlier form: ``stam train --proxies``).  Algorithms in
  alternation, best of ``--repeats``; the compiled updates and ``torch.optim.SGD`` (momentum)
  alternate over ``--compile-rounds`` rounds, and their ratio is the median of the per-round
  ratios (robust to a load that all share).

One torch thread; the load average before the run is recorded.

    python benchmarks/dnn_algo_cost.py --out benchmarks/results/dnn_algo_cost_cpu.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from stam.dnn import batched, catalog, presets
from stam.dnn import data as data_mod
from stam.io import emit_json, provenance

#: settings of the digits runs (constant hyperparameters; STAM at the issue's gamma 8, lambda 0.5, beta 20)
DIGITS = {"float": {"lr": 0.05, "momentum": 0.9}, "stam": {"gamma": 8.0, "lam": 0.5, "beta": 20.0}, "bc": {"lr": 0.05},
          "br": {"lr": 0.05}, "psgd": {"lr": 0.05}}


def digits_round(algos, epochs: int, tmp: str, k: int, compile: str = "auto") -> dict:
    """One round: each algorithm's whole run (``stam train --compile compile``), training seconds (``summary.json``)."""
    from stam.dnn.params import TrainConfig
    from stam.dnn.train import train

    out = {}
    for algo in algos:
        res = train(TrainConfig(model="mlp", dataset="digits", algo=algo, overrides=DIGITS[algo], epochs=epochs, batch_size=32,
                              schedule_scale="auto", out=f"{tmp}/{algo}-{compile}-{k}", echo=False, progress=False,
                              device="cpu", compile=compile))
        out[algo] = res.summary["seconds"]
    return out


def digits_rows(algos, epochs: int, repeats: int, tmp: str, compile: str) -> dict:
    """``repeats`` rounds of :func:`digits_round` in ``compile`` mode; with ``"aot"`` the packages are
    first built in a fresh cache (a one-epoch run per algorithm, its wall seconds recorded: the
    cost a first run pays once), so that the timed rounds load them as every later run does."""
    extra = {}
    if compile == "aot":  # each package built by a first run of its own process, as a user's first run builds it
        os.environ["STAM_CACHE_DIR"] = f"{tmp}/cache"
        extra["first_run_build_wall_s"] = {}
        for algo in algos:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--build-aot", algo, "--threads", str(torch.get_num_threads()),
                            "--out", f"{tmp}/build-{algo}"], check=True, capture_output=True)
            extra["first_run_build_wall_s"][algo] = time.perf_counter() - t0
    rounds = [digits_round(algos, epochs, tmp, k, compile) for k in range(repeats)]
    return {"compile": compile, **extra,
            "rows": {a: {"train_s": [r[a] for r in rounds], "ratio_to_float": statistics.median(r[a] / r["float"] for r in rounds)}
                     for a in algos}}


def random_cifar(n: int) -> data_mod.ImageData:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    return data_mod.ImageData("cifar10", x, y, x[:0], y[:0], 10, augment=True)


def update_s(algo: str, task, compile: bool, repeats: int) -> float:
    """Best seconds of one update of every layer (fixed random gradients; a compiling first call untimed)."""
    cfg = batched.Config(presets.resolve(None, algo, "cifar10", {}, "auto", 1), 0)
    tr = batched.Trainer([cfg], task, 128, compile=compile, proxies=catalog.algorithm(algo).theorem)
    hyper = batched._hyper_at(tr.configs, 1, tr.device)
    gw = [torch.randn_like(tr.rule.forward_weights(st)) * 1e-3 for st in tr.state]
    gf = torch.randn_like(tr.floats) * 1e-3
    tr._step(tr.state, tr.floats, tr.fmom, gw, gf, hyper, tr.qs)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        tr._step(tr.state, tr.floats, tr.fmom, gw, gf, hyper, tr.qs)
        best = min(best, time.perf_counter() - t0)
    return best


def compiled_updates(algos, width: float, rounds: int) -> dict:
    """The compiled update of each algorithm and one ``torch.optim.SGD`` step (momentum 0.9,
    foreach, weight decay 1e-7) on VGG-11 at ``width``, timed in alternation, ``rounds`` rounds
    (the first, compiling call not timed): best seconds and the median of the per-round ratios to
    SGD, so that a load shared by all of them cancels."""
    from stam.dnn.models import build_model

    task = batched.Task(random_cifar(128), "vgg11", width)
    calls = {}
    for a in algos:
        cfg = batched.Config(presets.resolve(None, a, "cifar10", {}, "auto", 1), 0)
        tr = batched.Trainer([cfg], task, 128, compile=True, proxies=catalog.algorithm(a).theorem)
        hyper = batched._hyper_at(tr.configs, 1, tr.device)
        gw = [torch.randn_like(tr.rule.forward_weights(st)) * 1e-3 for st in tr.state]
        gf = torch.randn_like(tr.floats) * 1e-3
        calls[a] = lambda tr=tr, hyper=hyper, gw=gw, gf=gf: tr._step(tr.state, tr.floats, tr.fmom, gw, gf, hyper, tr.qs)
    torch.manual_seed(0)
    net = build_model("vgg11", 10, (3, 32, 32), width)
    for q in net.parameters():
        q.grad = torch.randn_like(q) * 1e-3
    calls["torch.optim.SGD"] = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-7, foreach=True).step
    for f in calls.values():
        f()
        f()
    times = {k: [] for k in calls}
    for _ in range(rounds):
        for k, f in calls.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    sgd = times["torch.optim.SGD"]
    return {k: {"best_s": min(v), "median_s": statistics.median(v),
                "median_ratio_to_torch_sgd_momentum": statistics.median(x / y for x, y in zip(v, sgd)),
                "best_ratio_to_torch_sgd_momentum": min(v) / min(sgd)} for k, v in times.items()}


def sgd_momentum_s(width: float, repeats: int) -> float:
    """Best seconds of one ``torch.optim.SGD`` step (momentum 0.9, foreach) on VGG-11's parameters
    at ``width`` with random gradients: the reference step of the issue."""
    from stam.dnn.models import build_model

    torch.manual_seed(0)
    net = build_model("vgg11", 10, (3, 32, 32), width)
    for q in net.parameters():
        q.grad = torch.randn_like(q) * 1e-3
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-7, foreach=True)
    opt.step()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        opt.step()
        best = min(best, time.perf_counter() - t0)
    return best


def vgg_costs(algo: str, width: float, batches: int, step_repeats: int) -> tuple[float, float]:
    """(seconds of ``batches`` training steps, seconds of one eager update alone) of VGG-11 at ``width``."""
    task = batched.Task(random_cifar(128 * batches), "vgg11", width)
    cfg = batched.Config(presets.resolve(None, algo, "cifar10", {}, "auto", 1), 0)
    tr = batched.Trainer([cfg], task, 128, compile=False, proxies=catalog.algorithm(algo).theorem)
    t0 = time.perf_counter()
    tr.train_epoch(1)
    return time.perf_counter() - t0, update_s(algo, task, False, step_repeats)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--algos", default=",".join(catalog.NAMES))
    ap.add_argument("--digits-epochs", type=int, default=60)
    ap.add_argument("--widths", default="0.125,1")
    ap.add_argument("--batches", type=int, default=3, help="timed VGG-11 steps of batch 128 per measurement")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--step-repeats", type=int, default=5)
    ap.add_argument("--compile-widths", default="1", help="widths whose compiled update is timed too ('' for none)")
    ap.add_argument("--compile-rounds", type=int, default=40, help="interleaved rounds of the compiled updates")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--digits-compile", default="auto,aot", help="stam train --compile modes of the digits runs")
    ap.add_argument("--skip-vgg", action="store_true", help="the digits runs only")
    ap.add_argument("--out")
    ap.add_argument("--build-aot", metavar="ALGO", help=argparse.SUPPRESS)  # one 1-epoch digits run of ALGO with --compile aot
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.build_aot:
        return digits_round([args.build_aot], 1, args.out, -1, "aot")
    algos = args.algos.split(",")
    if "float" not in algos:
        algos = ["float", *algos]
    load = list(os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        modes = {m: digits_rows(algos, args.digits_epochs, args.repeats, tmp, m) for m in args.digits_compile.split(",") if m}
    digits = modes.get("auto", {}).get("rows", {})
    digits_aot = modes.get("aot", {}).get("rows", {})
    vgg = {}
    for width in (() if args.skip_vgg else (float(w) for w in args.widths.split(","))):
        times = {a: [] for a in algos}
        steps = {a: [] for a in algos}
        for _ in range(args.repeats):
            for a in algos:
                t, s = vgg_costs(a, width, args.batches, args.step_repeats)
                times[a].append(t)
                steps[a].append(s)
        best = {a: min(v) for a, v in times.items()}
        vgg[f"{width:g}"] = {a: {"images_per_s": 128 * args.batches / best[a], "ratio_to_float": best[a] / best["float"],
                                 "update_s": min(steps[a]), "update_ratio_to_float": min(steps[a]) / min(steps["float"])}
                             for a in algos}
        sgd = sgd_momentum_s(width, args.step_repeats)
        for a in algos:
            vgg[f"{width:g}"][a]["update_ratio_to_torch_sgd_momentum"] = vgg[f"{width:g}"][a]["update_s"] / sgd
        vgg[f"{width:g}"]["torch.optim.SGD momentum 0.9 step_s"] = sgd
        if f"{width:g}" in [f"{float(w):g}" for w in args.compile_widths.split(",") if w]:
            comp = compiled_updates(algos, width, args.compile_rounds)
            vgg[f"{width:g}"]["compiled update, interleaved"] = comp
            for a in algos:
                vgg[f"{width:g}"][a].update(update_compiled_s=comp[a]["best_s"],
                                            update_compiled_ratio_to_float=comp[a]["best_s"] / comp["float"]["best_s"],
                                            update_compiled_ratio_to_torch_sgd_momentum=comp[a]["median_ratio_to_torch_sgd_momentum"])
    targets = {"digits stam <= 1.2": digits.get("stam", {}).get("ratio_to_float", 0) <= 1.2,
               "digits stam <= 1.2 (--compile aot, packages built)": digits_aot.get("stam", {}).get("ratio_to_float", 9) <= 1.2,
               "digits bc, br, psgd <= 1.1 (--compile aot, packages built)": all(
                   digits_aot[a]["ratio_to_float"] <= 1.1 for a in ("bc", "br", "psgd") if a in digits_aot) if digits_aot else False,
               "vgg11 stam <= 1.1 at every width": all(v["stam"]["ratio_to_float"] <= 1.1 for v in vgg.values() if "stam" in v),
               "bc, br, psgd <= 1.1 everywhere": all(r[a]["ratio_to_float"] <= 1.1 for r in [digits, *vgg.values()]
                                                     for a in ("bc", "br", "psgd") if a in r),
               # the step: the paper's VGG-11 (9.2 M weights), compiled as stam train runs it there
               "vgg11 stam update <= 1.5 x torch.optim.SGD with momentum (compiled, at the widths timed so)": all(
                   v["stam"]["update_compiled_ratio_to_torch_sgd_momentum"] <= 1.5
                   for v in vgg.values() if "update_compiled_ratio_to_torch_sgd_momentum" in v.get("stam", {}))}
    result = {"kind": "benchmark", "name": "dnn_algo_cost", "provenance": provenance(), "device": "cpu", "threads": args.threads,
              "cpus": os.cpu_count(), "loadavg_before": load, "digits": {"model": "mlp", "epochs": args.digits_epochs,
              "batch_size": 32, "rows": digits, "compile": "auto (eager here: compile_pays)",
              "stam_proxies": False},  # as stam train runs STAM without --proxies
              "digits_compile_aot": {"model": "mlp", "epochs": args.digits_epochs, "batch_size": 32, **modes.get("aot", {})}, "vgg11": {"batch_size": 128, "batches": args.batches, "widths": vgg,
              "stam_proxies": True},  # the trainer with STAM's proxies on, every step
              "targets_met": targets}
    emit_json(result, args.out)
    return result


if __name__ == "__main__":
    main()
