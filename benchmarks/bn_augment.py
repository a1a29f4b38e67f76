"""Which images should BatchNorm's statistics be re-estimated on: as the test sees them, or as the
training sees them?  (Issue 35's open question, docs/networks.md.)

The toolkit re-estimates BatchNorm's statistics for the weights it measures on 2,500 unaugmented
training images (:meth:`stam.dnn.batched.Trainer.statistics`).  ``float_ceiling.py`` found that this
costs a float VGG-11 1.4-2.1 points of test accuracy against statistics of the same images cropped
and flipped once, as the training sees them (which match the running statistics within 0.2).  This
script asks whether the binary networks move alike: it trains each algorithm's tuned setting (read
from a ``stam tune`` result, by default the CPU study's) with the toolkit's trainer
(:class:`stam.dnn.batched.Trainer`, one run, the study's seed 1000) and after every epoch measures
the test accuracy of the weights the algorithm reports (binary; float for Float) three ways:

- ``as_trained``: with the training's running statistics (those of the forward weights);
- ``unaugmented``: statistics of those weights on the 2,500 images unaugmented (the toolkit's rule);
- ``augmented``: statistics of those weights on the same 2,500 images cropped and flipped once
  (:func:`stam.dnn.data.bn_images`; the same draw every epoch: the toolkit's rule since this measurement).

If every algorithm gains alike, the rule changes absolute numbers only; if not, it changes the
comparison.  One algorithm per process (``--workers`` side by side, one thread each).  Writes JSON::

    python benchmarks/bn_augment.py --data-dir ../shared/data --out benchmarks/results/bn_augment_cpu.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from stam.dnn import batched, bnstats, data as data_mod, sweep
from stam.dnn.catalog import BN_AUGMENT_SEED, BN_IMAGES
from stam.io import emit_json, provenance

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ROOT / "benchmarks" / "results" / "cifar10_deciding_cpu" / "tune" / "tune-cifar10.json"
RULES = ("as_trained", "unaugmented", "augmented")
#: the last epochs whose accuracies are averaged for the paired differences
TAIL = 10


def settings(path: Path, algos: list[str]) -> dict:
    """Each algorithm's tuned overrides and the tuning's task (``stam tune`` result at ``path``)."""
    from stam.dnn.tune import TUNE

    result = TUNE.read(path)
    best = {a["algo"]: a["best"]["overrides"] for a in result["algorithms"] if a.get("best")}
    missing = [a for a in algos if a not in best]
    if missing:
        raise SystemExit(f"{path}: no tuned setting for {', '.join(missing)} (it has {', '.join(best) or 'none'})")
    return {"overrides": {a: best[a] for a in algos}, "params": result["params"]}


def one(algo: str, overrides: dict, params: dict, args) -> dict:
    """One algorithm trained (in a worker process) and measured under every rule after every epoch."""
    torch.set_num_threads(args.threads)
    task = batched.load_task("cifar10", params["model"], params["width"], params["val_fraction"], params["split_seed"],
                             args.data_dir)
    if args.max_train:
        d, keep = task.data, torch.randperm(len(task.data.train_x), generator=torch.Generator().manual_seed(0))[: args.max_train]
        task.data = data_mod.ImageData(d.name, d.train_x[keep], d.train_y[keep], d.test_x, d.test_y,
                                       d.num_classes, d.augment, val_x=d.val_x, val_y=d.val_y, source=d.source)
    data = task.data
    preset = sweep.resolve(algo, overrides, args.epochs, None, "cifar10")
    tr = batched.Trainer([batched.Config(preset, args.seed)], task, params["batch_size"], epochs=args.epochs,
                         bn_images=BN_IMAGES, bn_augment=False)  # its own accuracy: the check of the unaugmented column
    which = "binary" if tr.rule.binary else "float"
    passes = {rule: bnstats.even_batches(data.normalise(data_mod.bn_images(data, BN_IMAGES, rule == "augmented")), args.eval_batch)
              for rule in ("unaugmented", "augmented")}

    def test_accuracy(rule: str) -> float:
        w = tr.weights(which)
        if rule == "as_trained":
            return float(batched.accuracy(tr.net, w, data, "test", args.eval_batch)[0])
        with bnstats.kept(tr.net.wide):
            batched.reestimate_bn(tr.net, w, [p.contiguous(memory_format=tr.memory_format) for p in passes[rule]])
            return float(batched.accuracy(tr.net, w, data, "test", args.eval_batch, memory_format=tr.memory_format)[0])

    log, t0 = [], time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        res = tr.train_epoch(epoch)
        rec = {"epoch": epoch, "train_loss": float(res.train_loss[0]), **{r: test_accuracy(r) for r in RULES},
               "toolkit": float(tr.accuracies(("test",), which)["test"][0]),  # the trainer's, unaugmented: a check
               "seconds": time.perf_counter() - t0}
        log.append(rec)
        print(f"  {algo} epoch {epoch}: " + ", ".join(f"{r} {rec[r]:.2f}" for r in RULES), flush=True)
    tail = log[-TAIL:]
    gain = [r["augmented"] - r["unaugmented"] for r in tail]
    return {"which": which, "overrides": overrides, "log": log,
            "last": {r: log[-1][r] for r in RULES},
            f"mean_last_{TAIL}": {r: statistics.fmean(x[r] for x in tail) for r in RULES},
            f"augmented_minus_unaugmented_last_{TAIL}": {"mean": statistics.fmean(gain), "min": min(gain), "max": max(gain)}}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--settings", default=str(SETTINGS), help="the stam tune result whose chosen settings are trained")
    ap.add_argument("--algos", default="stam,bc,br,psgd,float")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per algorithm")
    ap.add_argument("--workers", type=int, default=2, help="algorithms trained side by side, one process each")
    ap.add_argument("--eval-batch", type=int, default=1000)
    ap.add_argument("--max-train", type=int, default=0, help="this many training images drawn at random (0: all; for a smoke test)")
    ap.add_argument("--out", default=None, help="JSON file (default: print only)")
    args = ap.parse_args(argv)
    algos = [a for a in args.algos.split(",") if a]
    if not algos or args.epochs < 1 or args.workers < 1 or args.threads < 1:
        ap.error(f"--algos {args.algos!r}, --epochs {args.epochs}, --workers {args.workers}, --threads {args.threads}: "
                 "give some algorithms and numbers >= 1")
    tuned = settings(Path(args.settings), algos)
    from joblib import Parallel, delayed

    runs = Parallel(n_jobs=min(args.workers, len(algos)))(
        delayed(one)(a, tuned["overrides"][a], tuned["params"], args) for a in algos)
    result = {"kind": "benchmark", "name": "bn_augment", "provenance": provenance(), "settings": str(args.settings),
              "model": tuned["params"]["model"], "width": tuned["params"]["width"], "epochs": args.epochs, "seed": args.seed,
              "threads": args.threads, "workers": args.workers, "bn_images": BN_IMAGES, "augment_seed": BN_AUGMENT_SEED,
              "max_train": args.max_train,
              "evaluation": "test split; the weights each algorithm reports (binary; float for Float) with BatchNorm statistics "
                            "as trained / re-estimated for those weights on 2,500 unaugmented training images (the toolkit's rule) / "
                            "on the same images cropped and flipped once",
              "runs": dict(zip(algos, runs))}
    emit_json(result, args.out)
    return result


if __name__ == "__main__":
    main()
