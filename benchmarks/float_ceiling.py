"""What float training of the study's network reaches in a plain torch loop (issue 35, point 4:
"tuned Float at least 80% test" at VGG-11 width 1/8 and 30 epochs).

The study's tuned Float (``stam tune``, warm-up-cosine lr 0.0987, heavy-ball momentum 0.9, weight
decay 5e-4; ``--settings``, by default the CPU study's result) reached 77.6 ± 0.2% at 30 epochs.  Is the 80% target missed by the trainer or by the
budget?  This script trains the same network (:func:`stam.dnn.models.build_model`, channels_last)
on the same data (the JPEG copy, the toolkit's validation split: 45,000 training images) with
nothing but ``torch.optim.SGD`` and a per-step ``torch.optim.lr_scheduler`` in a plain loop
(:func:`stam.dnn.loop.epoch`: the crops and flips of :func:`stam.dnn.data.augment`), and reports the test accuracy after every epoch with the network in
evaluation mode, with its own running BatchNorm statistics and with statistics re-estimated as
the trainer does (:func:`stam.dnn.bnstats.reestimated` on the same 2,500 images) and on those
images cropped and flipped once, as the training sees them, for each recipe of :data:`RECIPES`:

- ``study``: the study's tuned Float recipe (read from ``--settings``; the family's warm-up share
  and floor from ``presets.json``), its warm-up-cosine step per step instead of per epoch (linear
  warm-up over the first 5% of the steps, cosine decay to 1e-3 of the peak);
- ``study-per-epoch``: the same, its lr held through each epoch at the value the trainer uses
  (:meth:`stam.dnn.presets.Preset.at`, the schedule read at the epoch's centre);
- ``one-cycle``: the recipe the issue measured (Nesterov momentum 0.9, weight decay 5e-4,
  ``OneCycleLR`` with peak 0.05: 30% warm-up, momentum cycled 0.85-0.95).

One seed per recipe (the study's first fresh seed, 1000); one thread each.  Writes JSON::

    python benchmarks/float_ceiling.py --data-dir ../shared/data --out benchmarks/results/float_ceiling_cpu.json
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch

from stam.dnn import bnstats, data as data_mod, epochs as ep, loop
from stam.dnn.catalog import BN_IMAGES, VAL_FRACTION
from stam.dnn.models import build_model
from stam.io import emit_json, provenance

ROOT = Path(__file__).resolve().parents[1]
#: the study whose tuned Float is checked (its ``tune-cifar10.json``)
SETTINGS = ROOT / "benchmarks" / "results" / "cifar10_deciding_cpu" / "tune" / "tune-cifar10.json"
#: the issue's recipe (torch's OneCycleLR with its defaults: 30% warm-up, momentum cycled 0.85-0.95)
ONE_CYCLE = {"lr": 0.05, "nesterov": True, "schedule": "one-cycle",
             "about": "the issue's recipe: Nesterov momentum 0.9, wd 5e-4, OneCycleLR peak 0.05 (torch defaults)"}
RECIPES = ("study", "study-per-epoch", "one-cycle")
#: the seed of the one draw of crops and flips of the BatchNorm images (``test_acc_reestimated_augmented``)
AUGMENT_SEED = 7


def recipes(settings: Path) -> dict:
    """Each recipe: peak lr, momentum, weight decay, Nesterov, the schedule; ``study`` read from the
    tuning ``settings`` (Float's chosen lr, momentum and weight decay) and its step schedule from
    ``presets.json`` (the warm-up share and the floor of the study's family, per step here)."""
    from stam.dnn import presets
    from stam.dnn.tune import TUNE

    tuned = next((a for a in TUNE.read(settings)["algorithms"] if a["algo"] == "float" and a.get("best")), None)
    if tuned is None:
        raise SystemExit(f"{settings}: no tuned Float setting")
    over = tuned["best"]["overrides"]
    lr = over["lr"][0]["value"] if isinstance(over["lr"], list) else over["lr"]
    family = presets.step_schedules()["warmup-cosine"]
    study = {"lr": lr, "momentum": over.get("momentum", 0.0), "weight_decay": over.get("weight_decay", 0.0), "nesterov": False,
             "schedule": "warmup-cosine", "warmup": family["warmup"] / family["until"], "floor": family["floor"],
             "about": f"the study's tuned Float ({settings.name}): lr {lr:.3g}, heavy-ball momentum {over.get('momentum', 0)}, "
                      f"wd {over.get('weight_decay', 0)}, warm-up {family['warmup'] / family['until']:.0%} then cosine to "
                      f"{family['floor']:g} of the peak, per step"}
    per_epoch = {**study, "schedule": "per-epoch", "overrides": over,
                 "about": study["about"].replace("per step", "per epoch, as the trainer reads it (presets: each epoch's centre)")}
    return {"study": study, "study-per-epoch": per_epoch, "one-cycle": {**ONE_CYCLE, "momentum": 0.9, "weight_decay": 5e-4}}


def scheduler(opt, recipe: dict, total: int, epochs: int = 1):
    """The per-step schedule of ``opt`` over ``total`` steps (``epochs`` of them: ``per-epoch`` holds
    each epoch's lr, the trainer's, :meth:`stam.dnn.presets.Preset.at`)."""
    if recipe["schedule"] == "per-epoch":
        from stam.dnn import presets

        preset = presets.resolve(None, "float", "cifar10", recipe["overrides"], "auto", epochs)
        per = total // epochs
        lrs = [preset.at(e)["lr"] for e in range(1, epochs + 1)]
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda k: lrs[min(k // per, epochs - 1)] / recipe["lr"])
    if recipe["schedule"] == "one-cycle":
        return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=recipe["lr"], total_steps=total)
    warm, floor = max(1, round(recipe["warmup"] * total)), recipe["floor"]

    def factor(k):
        if k < warm:
            return (k + 1) / warm
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * (k - warm) / max(1, total - warm)))

    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def train(data, recipe: dict, epochs: int, width: float, seed: int, batch_size: int = 128, label: str = "") -> list[dict]:
    """Per epoch: the test accuracy (%) in evaluation mode and the seconds so far."""
    fmt = torch.channels_last
    torch.manual_seed(seed)
    net = build_model("vgg11", data.num_classes, data.image_shape, width).to(memory_format=fmt)
    opt = torch.optim.SGD(net.parameters(), lr=recipe["lr"], momentum=recipe["momentum"], nesterov=recipe["nesterov"],
                          weight_decay=recipe["weight_decay"])
    n = len(data.train_x)
    steps = ep.steps_per_epoch(n, batch_size)
    sched = scheduler(opt, recipe, epochs * steps, epochs)
    order, crops = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed + 1)

    chosen = data.train_x[bnstats.bn_subset(n, BN_IMAGES)]
    subset = data.normalise(chosen).contiguous(memory_format=fmt)
    # the same images as the training sees them (crops and flips, one fixed draw)
    augmented = data.normalise(data_mod.augment(chosen, torch.Generator().manual_seed(AUGMENT_SEED))).contiguous(memory_format=fmt)

    def accuracy():  # evaluation mode, the statistics as they stand
        return loop.evaluate(net, data, "test", bn_images=0, memory_format=fmt)

    log, t0 = [], time.perf_counter()
    for epoch in range(1, epochs + 1):
        loop.epoch(net, opt, data, batch_size, order, crops, memory_format=fmt, after_step=sched.step)
        seconds = time.perf_counter() - t0
        with bnstats.reestimated(net, subset):  # the trainer's evaluation (issue 34): statistics re-estimated
            again = accuracy()
        with bnstats.reestimated(net, augmented):  # re-estimated on the images as the training sees them
            seen = accuracy()
        log.append({"epoch": epoch, "test_acc": accuracy(), "test_acc_reestimated": again,
                    "test_acc_reestimated_augmented": seen, "seconds": seconds})
        print(f"  {label} epoch {epoch}: test {log[-1]['test_acc']:.2f}% (re-estimated {again:.2f}%, on augmented images "
              f"{seen:.2f}%)", flush=True)
    return log


def one(name: str, recipe: dict, args) -> tuple[dict, tuple]:
    """One recipe trained (in a worker process): its run, and the training set's size and source."""
    torch.set_num_threads(args.threads)
    data = data_mod.split_validation(data_mod.load("cifar10", args.data_dir), VAL_FRACTION, 0)
    if args.max_train:
        data = data_mod.ImageData(data.name, data.train_x[: args.max_train], data.train_y[: args.max_train], data.test_x,
                                  data.test_y, data.num_classes, data.augment, val_x=data.val_x, val_y=data.val_y,
                                  source=data.source)
    print(f"{name}: {recipe['about']}", flush=True)
    log = train(data, recipe, args.epochs, args.width, args.seed, label=name)
    run = {**recipe, "log": log, "last": log[-1]["test_acc"], "best": max(r["test_acc"] for r in log)}
    return run, (len(data.train_x), getattr(data, "source", None))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--recipes", default=",".join(RECIPES), help=f"some of {', '.join(RECIPES)}")
    ap.add_argument("--settings", default=str(SETTINGS), help="the tuning whose Float recipe is 'study' (a stam tune result)")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--width", type=float, default=0.125)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per recipe")
    ap.add_argument("--workers", type=int, default=2, help="recipes trained side by side, one process each")
    ap.add_argument("--max-train", type=int, default=0, help="at most this many training images (0: all; for a smoke test)")
    ap.add_argument("--out", default=None, help="JSON file (default: print only)")
    args = ap.parse_args(argv)
    names = [r for r in args.recipes.split(",") if r]
    bad = [r for r in names if r not in RECIPES]
    if bad or not names:
        ap.error(f"--recipes {args.recipes!r}: give some of {', '.join(RECIPES)}")
    if args.workers < 1 or args.threads < 1:
        ap.error(f"--workers {args.workers}, --threads {args.threads}: give numbers >= 1")
    table = recipes(Path(args.settings))
    from joblib import Parallel, delayed

    jobs = Parallel(n_jobs=min(args.workers, len(names)))(
        delayed(one)(name, table[name], args) for name in names)  # each recipe in its own process, one thread each
    runs = {name: run for name, (run, _) in zip(names, jobs)}
    train_images, source = jobs[0][1]
    result = {"kind": "benchmark", "name": "float_ceiling", "provenance": provenance(), "model": "vgg11", "width": args.width,
              "epochs": args.epochs, "seed": args.seed, "threads": args.threads, "workers": args.workers,
              "train_images": train_images, "data_source": source, "evaluation": ("test split, evaluation mode: test_acc with the running BatchNorm statistics, test_acc_reestimated "
                             f"with statistics re-estimated on {BN_IMAGES:,} training images (the trainer's rule), "
                             "test_acc_reestimated_augmented on the same images cropped and flipped once (as the training sees them)"),
              "runs": runs}
    emit_json(result, args.out)
    return result


if __name__ == "__main__":
    main()
