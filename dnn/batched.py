"""Many small binary-weight trainings as one batched computation (maps and tuning).

A map of the (gamma, lambda) plane or an equal-budget tuning run is hundreds of small trainings.
:func:`train_batched` trains ``R`` configurations of the digits MLP of :mod:`stam.dnn.models`
(Flatten, (Linear-BN-ReLU) x 2, Linear) at once: every weight is stacked into an ``(R, ...)``
tensor, the forward pass is a batched matrix product, and every hyperparameter is an
``(R,)``-shaped tensor, which is exactly what the shared updates accept
(:func:`stam.algorithm.stam_step`, :func:`~stam.algorithm.bc_step`,
:func:`~stam.algorithm.br_step`, :func:`~stam.algorithm.psgd_step`; per-run scalars are
broadcast by :func:`stam.algorithm.as_batch_scalar`).  Nothing of an update is written here
again, nor is any algorithm named: each algorithm's :class:`stam.dnn.optim_common.BatchedRule`
(declared beside its optimiser, found through :mod:`stam.dnn.catalog`) calls the same functions
that serve the network optimisers of :mod:`stam.dnn.optim` and the synthetic problems.

Run ``r`` is one configuration (an algorithm's resolved :class:`stam.dnn.presets.Preset`, so its
schedules are evaluated as in ``stam train``) and one seed.  The seed fixes, as in ``stam train``,
the initial weights (``torch.manual_seed(seed)`` before the MLP is built) and the order of the
minibatches (``torch.randperm`` from a generator seeded with ``seed``); so runs that share a seed
use common random numbers: the same start and the same minibatches, and differ only in their
hyperparameters.  With ``R = 1`` a run follows ``stam train --model mlp --dataset digits`` step
for step (tested).

Layers: the three Linear weights are quantised (one block of Q each, eq. (eq01)); BatchNorm's
weight and bias and the classifier's bias are float and take the algorithm's plain step
(STAM: ``p <- p - (g + wd p) / beta``, the y-step eq. (algy) with H = 0; the others: ``lr``).

Per epoch and run it records the training loss, the validation accuracy with binary and with
float weights, optionally the test accuracy (``evaluate_test``: tuning trials never read the
test set), and the sign-flip diagnostic of the binary weights (fraction whose sign changed in
the epoch, since the start, and ever at an epoch end).  A run whose loss or weights stop being
finite is marked diverged at that epoch and its later metrics are ``None``.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from stam.algorithm import as_batch_scalar
from stam.compiling import compiled_or_eager
from stam.dnn import catalog
from stam.dnn import data as data_mod
from stam.dnn.models import MLP
from stam.dnn.optim_common import COMPILE_OPTIONS, BatchedRule
from stam.quantize import signs

BN_EPS = 1e-5
BN_MOMENTUM = 0.1


@dataclass
class Split:
    """Flattened, normalised images ``x`` ``(n, d)`` (float32) and labels ``y`` ``(n,)``."""

    x: Tensor
    y: Tensor


@dataclass
class Task:
    """The data of a batched training: train, validation and (optionally read) test splits."""

    train: Split
    val: Split | None
    test: Split | None
    num_classes: int
    name: str = "digits"


def digits_task(val_fraction: float = 0.1, split_seed: int = 0, device="cpu") -> Task:
    """scikit-learn's digits as in ``stam train --dataset digits`` (test: every fifth image), with
    the validation split of :func:`stam.dnn.data.split_validation`."""
    data = data_mod.load_digits(device)
    data = data_mod.split_validation(data, val_fraction, split_seed) if val_fraction else data
    flat = lambda x: data.normalise(x).reshape(len(x), -1)  # noqa: E731
    val = Split(flat(data.val_x), data.val_y) if getattr(data, "val_x", None) is not None else None
    return Task(Split(flat(data.train_x), data.train_y), val, Split(flat(data.test_x), data.test_y), data.num_classes)


# --------------------------------------------------------------------------- the batched MLP

@dataclass
class Net:
    """Stacked parameters of R MLPs: ``weights`` (quantised, ``(R, out, in)``), ``floats``
    (BatchNorm weights and biases ``(R, h)`` per hidden layer, then the classifier bias ``(R, C)``)
    and the BatchNorm running statistics ``running`` (mean, var pairs ``(R, h)``)."""

    weights: list[Tensor]
    floats: list[Tensor]
    running: list[Tensor]


def init_net(seeds: list[int], in_features: int, num_classes: int, device="cpu") -> Net:
    """The initial MLP of each seed, built by :func:`stam.dnn.models.build_model` after
    ``torch.manual_seed(seed)`` as ``stam train`` does, stacked (one build per distinct seed)."""
    built = {}
    for s in dict.fromkeys(seeds):
        torch.manual_seed(s)
        built[s] = MLP(in_features, num_classes)
    mods = [list(built[s].net) for s in seeds]
    lin = [i for i, m in enumerate(mods[0]) if isinstance(m, torch.nn.Linear)]
    bns = [i for i, m in enumerate(mods[0]) if isinstance(m, torch.nn.BatchNorm1d)]
    stack = lambda get: torch.stack([get(ms).detach().float() for ms in mods]).to(device).contiguous()  # noqa: E731
    weights = [stack(lambda ms, i=i: ms[i].weight) for i in lin]
    floats = [t for i in bns for t in (stack(lambda ms, i=i: ms[i].weight), stack(lambda ms, i=i: ms[i].bias))]
    floats.append(stack(lambda ms: ms[lin[-1]].bias))
    running = [t for i in bns for t in (stack(lambda ms, i=i: ms[i].running_mean), stack(lambda ms, i=i: ms[i].running_var))]
    return Net(weights, floats, running)


def forward(weights: list[Tensor], floats: list[Tensor], running: list[Tensor], x: Tensor, train: bool) -> Tensor:
    """Logits ``(R, B, C)`` of the R MLPs on ``x`` (``(R, B, d)``, or ``(B, d)`` shared by all runs).
    In training mode BatchNorm normalises with the batch statistics of each run and updates
    ``running`` in place (momentum 0.1, unbiased variance: torch's BatchNorm1d)."""
    h = x
    R = weights[0].shape[0]
    for k in range(len(weights) - 1):
        h = torch.matmul(h, weights[k].transpose(1, 2))  # (R, B, out)
        B, out = h.shape[1], h.shape[2]
        # torch's own BatchNorm1d kernel on the R runs side by side: (B, R*out) has R*out channels,
        # so each run's channels get their own batch statistics and running averages (updated in place)
        flat = h.transpose(0, 1).reshape(B, R * out)
        flat = F.batch_norm(flat, running[2 * k].view(-1), running[2 * k + 1].view(-1), floats[2 * k].reshape(-1),
                            floats[2 * k + 1].reshape(-1), training=train, momentum=BN_MOMENTUM, eps=BN_EPS)
        h = torch.relu(flat.view(B, R, out).transpose(0, 1))
    return torch.matmul(h, weights[-1].transpose(1, 2)) + floats[-1].unsqueeze(1)


@torch.no_grad()
def accuracy(weights, floats, running, split: Split, chunk: int = 4096) -> Tensor:
    """Accuracy (percent) of each run on ``split``: shape ``(R,)``."""
    correct = torch.zeros(weights[0].shape[0], device=split.x.device)
    for i in range(0, len(split.x), chunk):
        out = forward(weights, floats, running, split.x[i : i + chunk], train=False)
        correct += (out.argmax(-1) == split.y[i : i + chunk]).sum(dim=1)
    return 100.0 * correct / len(split.x)


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


# --------------------------------------------------------------------------- sign flips

def _signs(ws: list[Tensor]) -> list[Tensor]:
    return [signs(w) for w in ws]


def _fraction(masks: list[Tensor]) -> Tensor:
    """Per-run fraction of True over all layers: ``(R,)``."""
    num = sum(m.flatten(1).sum(dim=1, dtype=torch.float64) for m in masks)
    return num / sum(m[0].numel() for m in masks)


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


def compile_pays(R: int, steps: int) -> bool:
    """Whether compiling the update pays for itself: compilation costs 3-10 s once per algorithm
    and R on 2 CPU cores and saves 20-45% of an eager step from R = 16 on, less below (measured with
    ``benchmarks/dnn_batched_speed.py``), so: R >= 16 and at least 1000 steps."""
    return R >= 16 and steps >= 1000


def train_batched(configs: list[Config], task: Task, epochs: int, batch_size: int = 32, *, evaluate_test: bool = False,
                  device="cpu", compile: bool | str = "auto", progress=None) -> list[dict]:
    """Train every configuration of ``configs`` (all of one algorithm) for ``epochs`` epochs as one
    batched computation; returns one result per configuration: ``{"log": [per-epoch records],
    "diverged_epoch": e or None, "seconds": wall time / R}`` with records ``{epoch, train_loss,
    val_acc_binary, val_acc_float, test_acc_binary, test_acc_float (only with evaluate_test),
    sign_epoch, sign_since_init, sign_ever}``.  ``compile="auto"``: see :func:`compile_pays`."""
    if not configs:
        return []
    algos = {c.preset.algo for c in configs}
    if len(algos) != 1:
        raise ValueError(f"one algorithm per batch, got {sorted(algos)}")
    algo = algos.pop()
    device = torch.device(device)
    R = len(configs)
    seeds = [c.seed for c in configs]
    n_train, d = task.train.x.shape
    net = init_net(seeds, d, task.num_classes, device)
    alg = rule(algo)
    hyper0 = _hyper_at(configs, 1, device)
    state = [alg.init(w, hyper0) for w in net.weights]
    floats, fmom, running = net.floats, [torch.zeros_like(p) for p in net.floats], net.running
    gens = {s: torch.Generator().manual_seed(s) for s in dict.fromkeys(seeds)}
    steps = n_train // batch_size + (1 if n_train % batch_size >= 2 else 0)  # as stam train
    step_fn = _update_fn(algo, compile_pays(R, epochs * steps) if compile == "auto" else bool(compile))
    init_signs = _signs([alg.binary_weights(s) for s in state])
    ever = [torch.zeros_like(m) for m in init_signs]
    prev_signs = init_signs
    alive = torch.ones(R, dtype=torch.bool, device=device)
    diverged: list[int | None] = [None] * R
    logs: list[list[dict]] = [[] for _ in range(R)]
    t_start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        hyper = _hyper_at(configs, epoch, device)
        perms = {s: torch.randperm(n_train, generator=g).to(device) for s, g in gens.items()}
        perm = torch.stack([perms[s] for s in seeds])  # (R, n): common random numbers per seed
        shared = len(gens) == 1
        loss_sum = torch.zeros(R, dtype=torch.float64, device=device)
        for step in range(steps):
            idx = perm[:, step * batch_size : (step + 1) * batch_size]
            x = task.train.x[idx[0]] if shared else task.train.x[idx]
            y = task.train.y[idx]
            ws = [w.detach().requires_grad_(True) for w in [alg.forward_weights(s) for s in state]]
            fs = [p.detach().requires_grad_(True) for p in floats]
            out = forward(ws, fs, running, x, train=True)
            losses = F.cross_entropy(out.flatten(0, 1), y.flatten(), reduction="none").view(R, -1).mean(dim=1)
            grads = torch.autograd.grad(losses.sum(), ws + fs)
            with torch.no_grad():
                state, floats, fmom = step_fn(state, floats, fmom, list(grads[: len(ws)]), list(grads[len(ws):]), hyper)
            loss_sum += losses.detach().double() * idx.shape[1]
        with torch.no_grad():
            train_loss = loss_sum / n_train
            finite = torch.isfinite(train_loss)
            for t in [alg.forward_weights(s) for s in state] + floats:
                finite &= torch.isfinite(t.flatten(1)).all(dim=1)
            bw = [alg.binary_weights(s) for s in state]
            now = _signs(bw)
            since = [a != b for a, b in zip(now, init_signs)]
            ever = [e | s for e, s in zip(ever, since)]
            rec = {"epoch": epoch, "train_loss": train_loss, "sign_epoch": _fraction([a != b for a, b in zip(now, prev_signs)]),
                   "sign_since_init": _fraction(since), "sign_ever": _fraction(ever)}
            splits = {"val": task.val} | ({"test": task.test} if evaluate_test else {})
            for name, split in splits.items():
                if split is not None:
                    rec[f"{name}_acc_binary"] = accuracy(bw, floats, running, split)
                    rec[f"{name}_acc_float"] = accuracy([alg.float_weights(s) for s in state], floats, running, split)
            prev_signs = now
        rec = {k: (v.tolist() if torch.is_tensor(v) else v) for k, v in rec.items()}
        for r in (alive & ~finite).nonzero().flatten().tolist():
            diverged[r] = epoch
        alive &= finite
        for r in range(R):
            if diverged[r] is None:
                logs[r].append({k: (v[r] if isinstance(v, list) else v) for k, v in rec.items()})
        if progress is not None:
            progress(epoch, epochs)
    seconds = time.perf_counter() - t_start
    return [{"log": logs[r], "diverged_epoch": diverged[r], "seconds": seconds / R} for r in range(R)]


def select_epoch(log: list[dict], key: str = "val_acc_binary") -> dict | None:
    """The record with the best ``key`` (earliest on ties): selection on validation data."""
    good = [r for r in log if r.get(key) is not None and math.isfinite(r[key])]
    return max(good, key=lambda r: (r[key], -r["epoch"])) if good else None


__all__ = ["Task", "Split", "Config", "digits_task", "init_net", "forward", "accuracy", "train_batched", "select_epoch"]
