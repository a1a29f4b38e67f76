"""The one trainer on CIFAR-shaped data (issue 21, point 7): R = 8 configurations of a narrow
VGG-11 trained as one batched computation (:func:`stam.dnn.batched.train_batched`, the R networks
as one :class:`stam.dnn.wide.WideNet`) against the same 8 trainings one after the other (the same
code with R = 1); and the cost of R = 1 through the trainer (what ``stam train`` runs) against a
loop written by hand with the ``torch.optim`` classes (:mod:`stam.dnn.loop`; ``stam train``'s own
loop before it moved onto the one trainer) on the same data, model, batch size and epochs (both
evaluate the validation and test splits with binary and float weights every epoch).

The images are random ``uint8`` arrays of CIFAR-10's shape (3x32x32, 10 classes, crops and flips
on): the time of a step does not depend on the pixels, and the benchmark needs no data set.
Batched and sequential are measured in alternation, ``--repeats`` times; the best of each is kept.

Where the time goes (``breakdown``): the forward and backward passes of the network alone, for
R = 1 and for R runs as one wide network, and the evaluations (validation, binary and float
weights), against a whole training.  What is neither is all that running R trainings as one can
save when the wide network costs R times one network; ``max_speedup_if_overhead_vanished`` is
that bound.

    python benchmarks/dnn_batched_cifar.py --threads 1 --out benchmarks/results/dnn_batched_cifar_cpu.json
"""

from __future__ import annotations

import argparse
import time

import torch

from stam.dnn import batched, data as data_mod, epochs as ep_mod, loop, presets
from stam.dnn.models import build_model, param_groups
from stam.dnn.wide import stack_runs
from stam.io import emit_json, provenance

OVERRIDES = {"stam": {"gamma": 8.0, "lam": 0.5, "beta": 20.0}, "bc": {"lr": 0.05}}


def fake_cifar(n_train: int, n_test: int, device) -> data_mod.ImageData:
    g = torch.Generator().manual_seed(0)
    img = lambda n: torch.randint(0, 256, (n, 3, 32, 32), generator=g, dtype=torch.uint8).to(device)  # noqa: E731
    lab = lambda n: torch.randint(0, 10, (n,), generator=g).to(device)  # noqa: E731
    return data_mod.ImageData("cifar10", img(n_train), lab(n_train), img(n_test), lab(n_test), 10, augment=True)


def configs(algo: str, R: int, epochs: int, seeds) -> list[batched.Config]:
    """R configurations (step sizes spread over a decade), as a tuning batch or a map's."""
    out = []
    for r in range(R):
        scale = 10 ** (r / max(R - 1, 1) - 0.5)
        ov = {k: v * scale if k in ("gamma", "lr") else v for k, v in OVERRIDES[algo].items()}
        out.append(batched.Config(presets.resolve(None, algo, "cifar10", ov, "auto", epochs), seeds[r]))
    return out


def optim_loop(cfg: batched.Config, task: batched.Task, epochs: int, bs: int, device) -> None:
    """One training with the torch.optim classes, as a loop of one's own writes it (the same
    start, minibatches, augmentation and per-epoch evaluation as the trainer)."""
    data, preset = task.data, cfg.preset
    torch.manual_seed(cfg.seed)
    net = build_model(task.model, data.num_classes, data.image_shape, task.width).to(device)
    opt = loop.make_optimizer(preset.algo, param_groups(net), preset.at(1))
    gen, gen_aug = torch.Generator().manual_seed(cfg.seed), torch.Generator(device=device).manual_seed(cfg.seed + 1)
    for epoch in range(1, epochs + 1):
        loop.apply_hyper(opt, preset.algo, preset.at(epoch))
        loop.epoch(net, opt, data, bs, gen, gen_aug)
        for split in ("val", "test"):
            with loop.binary_weights(opt):
                loop.evaluate(net, data, split)
            with loop.float_weights(opt):
                loop.evaluate(net, data, split)


def forward_backward_s(cfgs, task, bs: int, steps: int, device) -> float:
    """Seconds of ``steps`` forward and backward passes of the R networks of ``cfgs`` as one wide
    network (no update, no data pipeline)."""
    tr = batched.Trainer(cfgs, task, bs, device=device, compile=False)
    data = task.data
    x = data.normalise(data.train_x[:bs])
    if len(set(c.seed for c in cfgs)) > 1:
        x = stack_runs(x.unsqueeze(0).expand(len(cfgs), *x.shape).contiguous())
    y = data.train_y[:bs].expand(len(cfgs), bs)
    weights = {n: w.detach().requires_grad_(True) for n, w in tr.weights("forward").items()}

    def go():
        for _ in range(steps):
            out = tr.net.wide.call_with(weights, x)
            loss = torch.nn.functional.cross_entropy(out.flatten(0, 1), y.flatten())
            torch.autograd.grad(loss, list(weights.values()))
    go()  # warm-up
    return timed(go)


def evaluation_s(cfg, task, bs: int, epochs: int, device) -> float:
    """Seconds of the per-epoch evaluations of one run (validation accuracy with binary and with
    float weights, as a tuning trial measures them), over ``epochs`` epochs."""
    tr = batched.Trainer([cfg], task, bs, device=device, compile=False)
    tr.accuracy("val", "binary")  # warm-up
    return timed(lambda: [tr.accuracy("val", which) for _ in range(epochs) for which in ("binary", "float")])


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--R", type=int, default=8)
    ap.add_argument("--width", type=float, default=0.125)
    ap.add_argument("--model", default="vgg11")
    ap.add_argument("--n-train", type=int, default=2048, help="training images per epoch (default 2048: 16 steps of 128)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--algos", default="stam,bc")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    data = data_mod.split_validation(fake_cifar(args.n_train + args.n_train // 9, 1000, device), 0.1, 0)
    task = batched.Task(data, args.model, args.width)
    ep, bs = args.epochs, args.batch_size
    results = {}
    for algo in args.algos.split(","):
        for seeds_kind, seeds in (("one seed (tuning trials)", [0] * args.R), ("R seeds (fresh-seed runs)", list(range(args.R)))):
            cfgs = configs(algo, args.R, ep, seeds)
            run_b = lambda: batched.train_batched(cfgs, task, ep, bs, device=device, compile=False)  # noqa: E731
            run_s = lambda: [batched.train_batched([c], task, ep, bs, device=device, compile=False) for c in cfgs]  # noqa: E731
            batched.train_batched(cfgs[:2], task, 1, bs, device=device, compile=False)  # warm-up
            tb, ts = [], []
            for _ in range(args.repeats):
                tb.append(timed(run_b))
                ts.append(timed(run_s))
            results[f"{algo}, {seeds_kind}"] = {"R": args.R, "batched_s": min(tb), "sequential_s": min(ts),
                                                 "speedup": min(ts) / min(tb)}
        # R = 1 through the trainer (stam train's path) against a loop of one's own with torch.optim
        one = configs(algo, 1, ep, [0])
        t_b, t_o = [], []
        for _ in range(args.repeats):
            t_b.append(timed(lambda: batched.train_batched(one, task, ep, bs, evaluate_test=True, device=device, compile=False)))
            t_o.append(timed(lambda: optim_loop(one[0], task, ep, bs, device)))
        results[f"{algo}, R = 1 vs torch.optim loop"] = {"trainer_R1_s": min(t_b), "optim_loop_s": min(t_o), "ratio": min(t_b) / min(t_o)}
    steps = ep_mod.steps_per_epoch(len(data.train_x), bs) * ep
    algo = args.algos.split(",")[0]
    fb1 = min(forward_backward_s(configs(algo, 1, ep, [0]), task, bs, steps, device) for _ in range(args.repeats))
    fbR = min(forward_backward_s(configs(algo, args.R, ep, list(range(args.R))), task, bs, steps, device) for _ in range(args.repeats))
    ev1 = min(evaluation_s(configs(algo, 1, ep, [0])[0], task, bs, ep, device) for _ in range(args.repeats))
    whole1 = results[f"{algo}, R seeds (fresh-seed runs)"]["sequential_s"] / args.R
    results["breakdown"] = {"algo": algo, "steps": steps, "forward_backward_R1_s": fb1, f"forward_backward_R{args.R}_s": fbR,
                            "wide_over_R_single": fbR / (args.R * fb1), "evaluation_R1_s": ev1, "training_R1_s": whole1,
                            "network_share_R1": (fb1 + ev1) / whole1, "max_speedup_if_overhead_vanished": whole1 / (fb1 + ev1)}
    emit_json({"kind": "benchmark", "name": "dnn_batched_cifar", "provenance": provenance(), "device": str(device),
               "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
               "threads": args.threads, "model": args.model, "width": args.width, "batch_size": bs, "epochs": ep,
               "n_train": len(data.train_x), "note": "random uint8 images of CIFAR-10's shape; times in seconds, best of "
               f"{args.repeats}", "results": results}, args.out)


if __name__ == "__main__":
    main()
