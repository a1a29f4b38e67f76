"""How many training images BatchNorm's statistics need (the evaluation rule, ``--bn-images``;
:func:`stam.dnn.catalog.bn_images_default`): the digits MLP's accuracies with the statistics
re-estimated on subsets of N training images, against the same networks with the statistics of
the whole training set (1,294 images).

Trains each algorithm at its tuned digits setting (``TUNED``: the choices of the default digits tuning
in STAM's earlier (gamma, lambda, beta) box, the second table of docs/practice.md, which
``benchmarks/results/bn_subset_size_cpu.json`` was measured with)
on ``--seeds`` seeds (batched), then, after epoch ``--early`` and after the last, evaluates the
binary and the float weights on the validation and test images with the statistics of the whole
training set and of ``--subsets`` independent random subsets of each size N.  Reported per N: the
mean and the largest absolute change of an accuracy (percentage points, over algorithms, seeds,
epochs, splits, weights and subsets) and the share of the images whose prediction changed; the
time of one re-estimation; and, as the other way of saving a re-estimation, the change when the
weights of the forward pass (STAM's and PSGD's float weights, BC's binary weights) are evaluated
with the training's own statistics instead (``as_trained``).

    python benchmarks/bn_subset_size.py --threads 1 --out benchmarks/results/bn_subset_size_cpu.json
"""

from __future__ import annotations

import argparse
import time

import torch

from stam.dnn import batched, presets
from stam.dnn.catalog import BN_SEED, bn_images_used, BN_IMAGES
from stam.io import emit_json, provenance

#: the tuned digits settings of the default tuning in STAM's earlier (gamma, lambda, beta) box (the
#: second table of docs/practice.md; bn_subset_size_cpu.json was measured with them)
TUNED = {"stam": {"gamma": 6.429, "lam": 19.34, "beta": 61.25}, "bc": {"lr": 0.253}, "psgd": {"lr": 0.415},
         "br": {"lr": 0.0217, "lam": 0.45}}
#: which weights are the forward weights of training (their statistics as trained describe them)
FORWARD = {"stam": "float", "psgd": "float", "bc": "binary"}


@torch.no_grad()
def predictions(tr: batched.Trainer, which: str, as_trained: bool = False) -> dict:
    """Per split, the predicted classes of every run, ``(R, n)``, with the statistics in place."""
    out = {}
    with (torch.no_grad() if as_trained else tr.statistics(which)):
        w = tr.weights(which)
        tr.net.wide.eval()
        try:
            for split in ("val", "test"):
                x = tr.data.normalise(getattr(tr.data, f"{split}_x"))
                out[split] = tr.net.wide.call_with(w, x).argmax(-1)
        finally:
            tr.net.wide.train()
    return out


def with_subset(tr: batched.Trainer, index: torch.Tensor) -> None:
    tr._bn_index, tr._bn_cache = index, None


def prefix(n_train: int, n: int) -> torch.Tensor:
    """The first ``n`` images of the rule's seeded order (:func:`stam.dnn.bnstats.bn_subset` without its cap)."""
    return torch.randperm(n_train, generator=torch.Generator().manual_seed(BN_SEED))[:n]


def study(algo: str, seeds: list[int], epochs: int, early: int, sizes: list[int], subsets: int) -> tuple[list, list]:
    task = batched.digits_task()
    cfgs = [batched.Config(presets.resolve(None, algo, "digits", TUNED[algo], "auto", epochs), s) for s in seeds]
    tr = batched.Trainer(cfgs, task, 32, epochs=epochs, compile=False)
    n_train = len(task.data.train_x)
    full = prefix(n_train, n_train)
    rows, forward_rows = [], []
    for epoch in range(1, epochs + 1):
        tr.train_epoch(epoch)
        if epoch not in (early, epochs):
            continue
        for which in ("binary", "float"):
            with_subset(tr, full)
            ref = predictions(tr, which)
            labels = {s: getattr(task.data, f"{s}_y") for s in ref}
            acc = {s: 100.0 * (ref[s] == labels[s]).double().mean(dim=1) for s in ref}
            for n in sizes:
                for k in range(subsets):
                    g = torch.Generator().manual_seed(1000 * n + k)
                    with_subset(tr, torch.randperm(n_train, generator=g)[:n])
                    p = predictions(tr, which)
                    for s in p:
                        a = 100.0 * (p[s] == labels[s]).double().mean(dim=1)
                        rows.append({"algo": algo, "epoch": epoch, "weights": which, "split": s, "n": n,
                                     "delta": (a - acc[s]).tolist(),
                                     "changed": (p[s] != ref[s]).double().mean(dim=1).tolist()})
            if FORWARD.get(algo) == which:
                p = predictions(tr, which, as_trained=True)
                for s in p:
                    a = 100.0 * (p[s] == labels[s]).double().mean(dim=1)
                    forward_rows.append({"algo": algo, "epoch": epoch, "weights": which, "split": s,
                                         "reestimated": acc[s].tolist(), "as_trained": a.tolist()})
    with_subset(tr, full)
    return rows, forward_rows


def timing(sizes: list[int], repeats: int) -> dict:
    task = batched.digits_task()
    cfg = batched.Config(presets.resolve(None, "stam", "digits", TUNED["stam"], "auto", 1), 0)
    tr = batched.Trainer([cfg], task, 32, epochs=1, compile=False)
    tr.train_epoch(1)
    out = {}
    for n in sizes:
        with_subset(tr, prefix(len(task.data.train_x), n))
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            with tr.statistics("binary"):
                pass
            best = min(best, time.perf_counter() - t0)
        out[str(n)] = best
    return out


def summarise(rows: list, sizes: list[int]) -> list[dict]:
    out = []
    for n in sizes:
        d = torch.tensor([x for r in rows if r["n"] == n for x in r["delta"]])
        c = torch.tensor([x for r in rows if r["n"] == n for x in r["changed"]])
        out.append({"n": n, "accuracies": len(d), "mean_abs_delta_points": d.abs().mean().item(),
                    "max_abs_delta_points": d.abs().max().item(), "mean_delta_points": d.mean().item(),
                    "mean_predictions_changed": c.mean().item(), "max_predictions_changed": c.max().item()})
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--early", type=int, default=5)
    ap.add_argument("--subsets", type=int, default=5)
    ap.add_argument("--sizes", default="81,162,324,647,863")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows, forward_rows = [], []
    n_train = len(batched.digits_task().data.train_x)
    for algo in TUNED:
        r, f = study(algo, list(range(args.seeds)), args.epochs, args.early, sizes, args.subsets)
        rows += r
        forward_rows += f
    fwd = torch.tensor([a - b for r in forward_rows for a, b in zip(r["as_trained"], r["reestimated"])])
    result = {"kind": "benchmark", "name": "bn_subset_size", "provenance": provenance(), "threads": args.threads,
              "settings": TUNED, "seeds": args.seeds, "epochs": args.epochs, "evaluated_after": [args.early, args.epochs],
              "subsets": args.subsets, "reference": f"the statistics of the whole training set ({n_train:,} images)",
              "by_size": summarise(rows, sizes),
              "default_images": bn_images_used(BN_IMAGES, n_train),
              "reestimate_s": timing(sorted(set(sizes) | {n_train}), args.repeats),
              "forward_weights_as_trained": {"mean_delta_points": fwd.mean().item(), "mean_abs_delta_points": fwd.abs().mean().item(),
                                             "max_abs_delta_points": fwd.abs().max().item(), "rows": forward_rows}}
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
