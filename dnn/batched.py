"""Many binary-weight trainings as one batched computation (maps and tuning), for every model.

A map of the (gamma, lambda) plane or an equal-budget tuning run is hundreds of trainings.
:func:`train_batched` trains ``R`` configurations of any network of :mod:`stam.dnn.models` (MLP,
CNN, VGG-11/16, ResNet-18, at any ``width``) on any data set of :mod:`stam.dnn.data` at once: the
R networks are one :class:`stam.dnn.wide.WideNet` (convolutions grouped over the runs, BatchNorm
statistics per run), the weights of each layer are ``(R, ...)`` tensors, and every hyperparameter
is an ``(R,)``-shaped tensor, which is exactly what the shared updates accept
(:func:`stam.algorithm.stam_step`, :func:`~stam.algorithm.bc_step`,
:func:`~stam.algorithm.br_step`, :func:`~stam.algorithm.psgd_step`; per-run scalars are
broadcast by :func:`stam.algorithm.as_batch_scalar`).  Nothing of an update is written here
again, nor is any algorithm named: each algorithm's :class:`stam.dnn.optim_common.BatchedRule`
(declared beside its optimiser, found through :mod:`stam.dnn.catalog`) calls the same functions
that serve the network optimisers of :mod:`stam.dnn.optim` and the synthetic problems.

Run ``r`` is one configuration (an algorithm's resolved :class:`stam.dnn.presets.Preset`, so its
schedules are evaluated as in ``stam train``) and one seed.  The seed fixes, as in ``stam train``,
the initial weights (``torch.manual_seed(seed)`` before the network is built), the order of the
minibatches (``torch.randperm`` from a generator seeded with ``seed``) and, for CIFAR, the random
crops and flips (a generator seeded with ``seed + 1``); so runs that share a seed use common
random numbers: the same start, the same minibatches, the same augmentation, and differ only in
their hyperparameters (they then also share one input tensor).  With ``R = 1`` a run follows
``stam train`` step for step, for every model (tested).

Layers: the weights of every conv and linear layer are quantised (one block of Q each, eq.
(eq01); :func:`stam.dnn.models.param_groups`); BatchNorm's weight and bias and the classifier's
bias are float and take the algorithm's plain step (STAM: ``p <- p - (g + wd p) / beta``, the
y-step eq. (algy) with H = 0; the others: ``lr``).

Per epoch and run it records the training loss, the validation accuracy with binary and with
float weights, optionally the test accuracy (``evaluate_test``: tuning trials never read the
test set), and the sign-flip diagnostic of the binary weights (fraction whose sign changed in
the epoch, since the start, and ever at an epoch end).  A run whose loss or weights stop being
finite is marked diverged at that epoch and its later metrics are ``None``
(:func:`stam.dnn.epochs.finite_runs`, the rule ``stam train`` applies).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from stam.algorithm import as_batch_scalar
from stam.compiling import compiled_or_eager
from stam.dnn import catalog, epochs as ep
from stam.dnn import data as data_mod
from stam.dnn.models import build_model, param_groups
from stam.dnn.optim_common import COMPILE_OPTIONS, BatchedRule
from stam.dnn.wide import WideNet, stack_runs, widen


@dataclass
class Task:
    """The data of a batched training: an :class:`stam.dnn.data.ImageData` on the training device
    (with its validation split where one was carved out), and the model to train on it."""

    data: data_mod.ImageData
    model: str = "mlp"
    width: float = 1.0

    @property
    def name(self) -> str:
        return self.data.name

    @property
    def num_classes(self) -> int:
        return self.data.num_classes


def load_task(dataset: str = "digits", model: str = "mlp", width: float = 1.0, val_fraction: float = 0.1, split_seed: int = 0,
              data_dir="data", device="cpu") -> Task:
    """The data set as ``stam train --dataset`` reads it (:func:`stam.dnn.data.load`), with the
    validation split of :func:`stam.dnn.data.split_validation` (none for ``val_fraction`` 0 or None)."""
    data = data_mod.load(dataset, data_dir, False, device)
    data = data_mod.split_validation(data, val_fraction, split_seed) if val_fraction else data
    return Task(data, model, width)


def digits_task(val_fraction: float = 0.1, split_seed: int = 0, device="cpu") -> Task:
    """scikit-learn's digits and the MLP, as ``stam train --dataset digits --model mlp``."""
    return load_task("digits", "mlp", 1.0, val_fraction, split_seed, device=device)


# --------------------------------------------------------------------------- the R networks

@dataclass
class Net:
    """R networks as one: the :class:`stam.dnn.wide.WideNet` (it holds the BatchNorm running
    statistics), and the names of the quantised and of the float parameters (in the order of the
    network's parameters)."""

    wide: WideNet
    quantised: list[str]
    floats: list[str]


def init_net(seeds: list[int], task: Task, device="cpu") -> Net:
    """The initial network of each seed, built by :func:`stam.dnn.models.build_model` after
    ``torch.manual_seed(seed)`` as ``stam train`` does (one build per distinct seed), as one
    :class:`WideNet` on ``device``."""
    data = task.data
    built = {}
    for s in dict.fromkeys(seeds):
        torch.manual_seed(s)
        built[s] = build_model(task.model, data.num_classes, data.image_shape, task.width)
    first = built[seeds[0]]
    qids = {id(p) for g in param_groups(first) if g["quantize"] for p in g["params"]}
    names = [(n, id(p) in qids) for n, p in first.named_parameters()]
    wide = widen([built[s] for s in seeds]).to(device)
    return Net(wide, [n for n, q in names if q], [n for n, q in names if not q])


def _inputs(data: data_mod.ImageData, images: list[Tensor], shared: bool) -> Tensor:
    """Normalised float input of the wide network: ``(B, C, H, W)`` when every run sees the same
    images, else the runs' images side by side in the channels (:func:`stam.dnn.wide.stack_runs`)."""
    if shared:
        return data.normalise(images[0])
    return stack_runs(torch.stack([data.normalise(x) for x in images]))


@torch.no_grad()
def accuracy(net: Net, weights: dict[str, Tensor], data: data_mod.ImageData, split: str, chunk: int = 1000) -> Tensor:
    """Accuracy (percent) of each run on ``split`` (``"val"`` or ``"test"``) with ``weights``
    (every parameter, ``(R, ...)``), BatchNorm in evaluation mode: shape ``(R,)``."""
    xs, ys = getattr(data, f"{split}_x"), getattr(data, f"{split}_y")
    R = net.wide.runs
    chunk = max(1, min(chunk, (1 << 16) // R))  # bound the activations of R networks
    correct = torch.zeros(R, device=ys.device)
    net.wide.eval()
    try:
        for i in range(0, len(xs), chunk):
            out = net.wide.call_with(weights, data.normalise(xs[i : i + chunk]))
            correct += (out.argmax(-1) == ys[i : i + chunk]).sum(dim=1)
    finally:
        net.wide.train()
    return 100.0 * correct / len(xs)


# --------------------------------------------------------------------------- the algorithms
#
# Each algorithm's batched update is its :class:`stam.dnn.optim_common.BatchedRule`, declared
# beside its optimiser and named by :mod:`stam.dnn.catalog`; nothing here knows an algorithm.

def rule(name: str) -> BatchedRule:
    """The batched rule of algorithm ``name`` (``KeyError`` naming the known ones)."""
    return catalog.algorithm(name).batched_rule()


def update(rule: BatchedRule, state: list, floats: list[Tensor], fmom: list[Tensor], grads_w: list[Tensor],
           grads_f: list[Tensor], hyper: dict[str, Tensor]):
    """One step of ``rule`` for all R runs, pure: returns ``(state, floats, fmom)``.  Weight decay,
    where the hyperparameters have it, is added to the gradient at the float weights (quantised
    layers) or at the parameter (float ones)."""
    wd = hyper.get("weight_decay")
    decay = (lambda g, p: g) if wd is None else (lambda g, p: g + as_batch_scalar(wd, p) * p)  # noqa: E731
    new = [rule.step(s, decay(g, rule.float_weights(s)), hyper) for s, g in zip(state, grads_w)]
    stepped = [rule.float_step(p, decay(g, p), m, hyper) for p, g, m in zip(floats, grads_f, fmom)]
    return new, [p for p, _ in stepped], [m for _, m in stepped]


_COMPILED_UPDATE = {}


def _update_fn(name: str, compile: bool):
    """:func:`update` with the rule of algorithm ``name``, compiled with torch.compile where ``compile`` (one fused
    kernel per pass instead of one per arithmetic operation), with an eager fallback where no
    compiler is available (:func:`stam.compiling.compiled_or_eager`)."""
    fn = functools.partial(update, rule(name))
    if not compile:
        return fn
    if name not in _COMPILED_UPDATE:
        import torch._dynamo

        # one compiled graph per (algorithm, R, hyperparameter keys): a tuning run meets 5 algorithms
        # at several R, more than dynamo's default of 8 graphs per function (after which it warns and
        # runs eagerly)
        cfg = torch._dynamo.config
        for key in ("recompile_limit", "cache_size_limit"):
            if hasattr(cfg, key):
                setattr(cfg, key, max(getattr(cfg, key), 64))
        _COMPILED_UPDATE[name] = compiled_or_eager(fn, f"batched {name} update", dynamic=False, options=COMPILE_OPTIONS)
    return _COMPILED_UPDATE[name]


# --------------------------------------------------------------------------- the driver

@dataclass
class Config:
    """One run: a resolved preset (its algorithm, hyperparameter schedules and schedule scale)
    and a seed."""

    preset: object  # stam.dnn.presets.Preset
    seed: int


def _hyper_at(configs: list[Config], epoch: int, device) -> dict[str, Tensor]:
    hs = [c.preset.at(epoch) for c in configs]
    keys = hs[0].keys()
    out = {}
    for k in keys:
        vals = [h[k] for h in hs]
        dtype = torch.bool if isinstance(vals[0], bool) else torch.float32
        out[k] = torch.tensor(vals, dtype=dtype, device=device)
    return out


def runs_per_job(model: str, device: str = "cpu") -> int:
    """How many runs one batched training should hold.  On a GPU, and for the MLP anywhere, many
    (16): the runs fill the device and share the per-step overhead.  On a CPU a convolutional
    network gains nothing from it: its convolutions are already compute-bound, and the wider
    activations fall out of cache (VGG-11 at width 1/8, R = 8, batch 128, one thread: 0.66 s per
    step wide against 0.47 s for the 8 networks one after the other, ``benchmarks/dnn_batched_speed.py``),
    so there each job trains one run and the job engine runs jobs side by side (``--workers``)."""
    return 16 if str(device).startswith("cuda") or model == "mlp" else 1


def compile_pays(R: int, steps: int) -> bool:
    """Whether compiling the update pays for itself: compilation costs 3-10 s once per algorithm
    and R on 2 CPU cores and saves 20-45% of an eager step from R = 16 on, less below (measured with
    ``benchmarks/dnn_batched_speed.py``), so: R >= 16 and at least 1000 steps."""
    return R >= 16 and steps >= 1000


def train_batched(configs: list[Config], task: Task, epochs: int, batch_size: int = 32, *, evaluate_test: bool = False,
                  device="cpu", compile: bool | str = "auto", progress=None) -> list[dict]:
    """Train every configuration of ``configs`` (all of one algorithm) on ``task`` (its data set,
    model and width) for ``epochs`` epochs as one batched computation; returns one result per
    configuration: ``{"log": [per-epoch records], "diverged_epoch": e or None, "seconds": wall
    time / R}`` with records ``{epoch, train_loss, val_acc_binary, val_acc_float, test_acc_binary,
    test_acc_float (only with evaluate_test), sign_epoch, sign_since_init, sign_ever}``.
    ``compile="auto"``: see :func:`compile_pays`.  The data must be on ``device``.  The steps run
    with subnormal floats flushed to zero (:func:`stam.dnn.epochs.flush_denormal`), as in ``stam train``."""
    if not configs:
        return []
    algos = {c.preset.algo for c in configs}
    if len(algos) != 1:
        raise ValueError(f"one algorithm per batch, got {sorted(algos)}")
    algo = algos.pop()
    device = torch.device(device)
    data = task.data
    R = len(configs)
    seeds = [c.seed for c in configs]
    n_train = len(data.train_x)
    net = init_net(seeds, task, device)
    alg = rule(algo)
    hyper0 = _hyper_at(configs, 1, device)
    views = net.wide.views
    state = [alg.init(views[n].detach().clone(), hyper0) for n in net.quantised]
    floats = [views[n].detach().clone() for n in net.floats]
    fmom = [torch.zeros_like(p) for p in floats]
    gens = {s: torch.Generator().manual_seed(s) for s in dict.fromkeys(seeds)}
    gens_aug = {s: torch.Generator(device=device).manual_seed(s + 1) for s in gens} if data.augment else {}
    shared = len(gens) == 1
    steps = ep.steps_per_epoch(n_train, batch_size)
    step_fn = _update_fn(algo, compile_pays(R, epochs * steps) if compile == "auto" else bool(compile))
    weights = lambda view: {**dict(zip(net.quantised, [view(s) for s in state])), **dict(zip(net.floats, floats))}  # noqa: E731
    flips = ep.SignFlips([alg.binary_weights(s) for s in state])
    alive = torch.ones(R, dtype=torch.bool, device=device)
    diverged: list[int | None] = [None] * R
    logs: list[list[dict]] = [[] for _ in range(R)]
    t_start = time.perf_counter()
    net.wide.train()
    for epoch in range(1, epochs + 1):
        hyper = _hyper_at(configs, epoch, device)
        perms = {s: torch.randperm(n_train, generator=g).to(device) for s, g in gens.items()}
        perm = torch.stack([perms[s] for s in seeds])  # (R, n): common random numbers per seed
        loss_sum = torch.zeros(R, dtype=torch.float64, device=device)
        with ep.flush_denormal():
            for step in range(steps):
                idx = perm[:, step * batch_size : (step + 1) * batch_size]
                batches = {s: perms[s][step * batch_size : (step + 1) * batch_size] for s in gens}
                if data.augment:  # each seed's crops and flips from its own generator, as stam train draws them
                    images = {s: data_mod.augment(data.train_x[b], gens_aug[s]) for s, b in batches.items()}
                else:
                    images = {s: data.train_x[b] for s, b in batches.items()}
                x = _inputs(data, [images[s] for s in (seeds[:1] if shared else seeds)], shared)
                y = data.train_y[idx]
                ws = [alg.forward_weights(s).detach().requires_grad_(True) for s in state]
                fs = [p.detach().requires_grad_(True) for p in floats]
                out = net.wide.call_with({**dict(zip(net.quantised, ws)), **dict(zip(net.floats, fs))}, x)
                losses = F.cross_entropy(out.flatten(0, 1), y.flatten(), reduction="none").view(R, -1).mean(dim=1)
                grads = torch.autograd.grad(losses.sum(), ws + fs)
                with torch.no_grad():
                    state, floats, fmom = step_fn(state, floats, fmom, list(grads[: len(ws)]), list(grads[len(ws):]), hyper)
                loss_sum += losses.detach().double() * idx.shape[1]
        with torch.no_grad():
            train_loss = loss_sum / n_train
            finite = torch.ones(R, dtype=torch.bool, device=device)
            for t in [alg.forward_weights(s) for s in state] + floats + fmom:
                finite &= torch.isfinite(t.flatten(1)).all(dim=1)
            flipped = flips.update([alg.binary_weights(s) for s in state])
            rec = {"epoch": epoch, "train_loss": train_loss, "sign_epoch": flipped["epoch"],
                   "sign_since_init": flipped["since_init"], "sign_ever": flipped["ever"]}
            splits = ("val",) * (data.val_x is not None) + ("test",) * evaluate_test
            for split in splits:
                rec[f"{split}_acc_binary"] = accuracy(net, weights(alg.binary_weights), data, split)
                rec[f"{split}_acc_float"] = accuracy(net, weights(alg.float_weights), data, split)
        rec = {k: (v.tolist() if torch.is_tensor(v) else v) for k, v in rec.items()}
        finite = finite.tolist()
        for r in range(R):
            if diverged[r] is None and ep.diverged(rec["train_loss"][r], finite[r]):
                diverged[r] = epoch
            if diverged[r] is None:
                logs[r].append({k: (v[r] if isinstance(v, list) else v) for k, v in rec.items()})
        if progress is not None:
            progress(epoch, epochs)
    seconds = time.perf_counter() - t_start
    return [{"log": logs[r], "diverged_epoch": diverged[r], "seconds": seconds / R} for r in range(R)]


#: the epoch a run is judged by (:func:`stam.dnn.epochs.select_epoch`, shared with ``stam train``)
select_epoch = ep.select_epoch


__all__ = ["Task", "Config", "Net", "load_task", "digits_task", "init_net", "accuracy", "train_batched", "select_epoch", "compile_pays", "runs_per_job"]
