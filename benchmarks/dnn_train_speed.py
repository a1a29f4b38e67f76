"""Training throughput (images/s) of VGG-11, VGG-16 and ResNet-18 with STAM against float SGD on
the same model (issue 4, section 5; target ratio float/STAM <= 1.15), on a fixed number of
batches of random CIFAR-shaped data, through the step of a loop of one's own with the
``torch.optim`` classes (:mod:`stam.dnn.loop`: augmentation, normalisation, forward, backward,
optimiser step).  ``stam train`` runs the batched trainer (``benchmarks/dnn_batched_cifar.py``
compares the two).  Also the projected time of the paper's
1000-epoch run (50,000 images per epoch, training only) at the measured rate.

Float and STAM are timed alternately, ``--repeats`` times each, and the best time is kept, so a
load spike on a shared machine hits both alike; one torch thread by default (two OpenMP threads
on a 2-core machine shared with other jobs make timings erratic).  The optimiser step alone is
also timed (best of ``--step-repeats``), which isolates STAM's overhead over SGD.

    python benchmarks/dnn_train_speed.py --out benchmarks/results/dnn_train_speed_cpu.json
"""

from __future__ import annotations

import argparse
import contextlib
import time

import torch

from stam.dnn import data as data_mod
from stam.dnn import presets
from stam.dnn.models import build_model, param_groups
from stam.dnn.loop import make_optimizer, train_step
from stam.io import emit_json, provenance

PAPER_EPOCHS, CIFAR_TRAIN = 1000, 50_000


def random_cifar(n: int, device) -> data_mod.ImageData:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g).to(device)
    y = torch.randint(0, 10, (n,), generator=g).to(device)
    return data_mod.ImageData("random-cifar", x, y, x[:0], y[:0], 10, augment=True)


def setup(model_name: str, algo: str, device):
    torch.manual_seed(0)
    model = build_model(model_name, 10).to(device)
    fmt = torch.channels_last if device.type == "cuda" else torch.contiguous_format
    model = model.to(memory_format=fmt).train()
    preset = presets.resolve(None, algo, "cifar10")
    opt = make_optimizer(algo, param_groups(model), preset.at(1))
    return model, opt, fmt


def time_batches(model, opt, fmt, data, batch: int, batches: int, device) -> float:
    gen = torch.Generator(device=device).manual_seed(1)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    autocast = contextlib.nullcontext
    sync()
    t0 = time.perf_counter()
    for i in range(batches):
        x = data_mod.augment(data.train_x[i * batch : (i + 1) * batch], gen)
        train_step(model, opt, x, data.train_y[i * batch : (i + 1) * batch], data, autocast, fmt)
    sync()
    return time.perf_counter() - t0


def time_step(opt, repeats: int, device) -> float:
    """Best time of ``opt.step()`` alone (gradients as left by the last batch)."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    best = float("inf")
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        opt.step()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="vgg11,vgg16,resnet18")
    ap.add_argument("--batch-size", type=int, default=128, help="the paper's batch size")
    ap.add_argument("--batches", type=int, default=1, help="timed batches per measurement")
    ap.add_argument("--repeats", type=int, default=3, help="alternating measurements per algorithm; the best is kept")
    ap.add_argument("--step-repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="torch threads on the CPU")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    data = random_cifar(args.batch_size * args.batches, device)
    rows, ratios = [], {}
    for name in args.models.split(","):
        setups = {algo: setup(name, algo, device) for algo in ("float", "stam")}
        for algo, (m, o, f) in setups.items():  # warm-up: allocations, optimiser state
            time_batches(m, o, f, data, args.batch_size, 1, device)
        best = {algo: float("inf") for algo in setups}
        for _ in range(args.repeats):
            for algo, (m, o, f) in setups.items():
                best[algo] = min(best[algo], time_batches(m, o, f, data, args.batch_size, args.batches, device))
        ips = {algo: args.batch_size * args.batches / t for algo, t in best.items()}
        for algo, (m, o, f) in setups.items():
            rows.append({
                "model": name, "algo": algo, "images_per_s": ips[algo], "seconds_per_batch": best[algo] / args.batches,
                "optimizer_step_seconds": time_step(o, args.step_repeats, device),
                "projected_1000_epochs_hours": PAPER_EPOCHS * CIFAR_TRAIN / ips[algo] / 3600,
            })
        ratios[name] = ips["float"] / ips["stam"]
    result = {
        "kind": "dnn-train-speed", "provenance": provenance(), "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} torch threads",
        "batch_size": args.batch_size, "batches": args.batches, "repeats": args.repeats, "step_repeats": args.step_repeats,
        "rows": rows, "ratio_float_over_stam": ratios, "target_ratio": 1.15,
        "meets_target": all(r <= 1.15 for r in ratios.values()),
    }
    emit_json(result, args.out)
    return result


if __name__ == "__main__":
    main()
