"""The one trainer: ``R`` binary-weight trainings as one batched computation, for every model.

``stam train`` (``R = 1``, with its checkpoints, exact resume and torchrun data parallelism:
:mod:`stam.dnn.train`), ``stam tune`` and ``stam map`` (hundreds of trainings, ``R`` at a time:
:func:`train_batched`) all train through :class:`Trainer`.  It trains ``R`` configurations of any network of :mod:`stam.dnn.models` (MLP,
CNN, VGG-11/16, ResNet-18, at any ``width``) on any data set of :mod:`stam.dnn.data` at once: the
R networks are one :class:`stam.dnn.wide.WideNet` (convolutions grouped over the runs, BatchNorm
statistics per run), the weights of each layer are ``(R, ...)`` tensors, and every hyperparameter
is an ``(R,)``-shaped tensor, which is exactly what the shared updates accept
(:func:`stam.steps.stam_step`, :func:`~stam.steps.bc_step`,
:func:`~stam.steps.br_step`, :func:`~stam.steps.psgd_step`; per-run scalars are
broadcast by :func:`stam.steps.as_batch_scalar`).  Nothing of an update is written here
again, nor is any algorithm named: each algorithm's update rule (:class:`stam.rules.UpdateRule`, one
module of :mod:`stam.rules` each, found through :mod:`stam.dnn.catalog`) calls the same functions
that serve the synthetic problems.

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

Evaluation measures exactly the network it names (:func:`reestimate_bn`): before the accuracy
of any weights is taken (binary or float, every algorithm alike), BatchNorm's statistics are
re-estimated for those weights on a fixed, seeded subset of ``bn_images`` training images as the
training sees them (on CIFAR cropped and flipped once, ``bn_augment``: :func:`stam.dnn.data.bn_images`;
train-mode forward passes, cumulative averages, no gradient, never a validation or test image), and the training's own running statistics are put back afterwards, so training, its
checkpoints and an exact resume never see them.  The running statistics of a training describe
its forward weights (STAM's W, PSGD's U, BR's relaxed weights), not the binary network it
reports; ``bn_images = 0`` evaluates with them (labelled "as trained"), the number that a
re-estimated run also keeps, for the binary weights on the validation split, as a diagnostic.

Per epoch and run it records the training loss, the validation accuracy with binary and with
float weights, optionally the test accuracy (``evaluate_test``: tuning trials never read the
test set), and the sign-flip diagnostic of the binary weights (fraction whose sign changed in
the epoch, since the start, and ever at an epoch end).  A run whose loss or weights stop being
finite is marked diverged at that epoch and its later metrics are ``None``
(:func:`stam.dnn.epochs.diverged`, the rule ``stam train`` applies).

Over ``torchrun`` processes (:mod:`stam.dnn.distributed`) every process draws the whole batch
(shuffling and augmentation stay in step, as in one process), takes its share, and the
gradients are averaged over the processes before the update (what DistributedDataParallel
does); BatchNorm's running statistics are averaged at the end of every epoch.

The ``torch.optim`` classes of :mod:`stam.dnn.optim` (the same rules, R = 1) remain the API for a
loop of one's own; tests check that this trainer follows them step for step.

The update itself (:func:`stam.dnn.compiled.update`, pure) and how it runs (eager, compiled in the
process, ahead of time; glibc's malloc settings; the images' layout and the runs per job on a
device) live in :mod:`stam.dnn.compiled`, the flat
buffers of the weights (:class:`stam.dnn.wide.Layout`) in :mod:`stam.dnn.wide`; their names are
read here too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

from stam.dnn import bnstats, distributed, epochs as ep
from stam.dnn.catalog import BN_AUGMENT, BN_IMAGES, VAL_FRACTION
from stam.dnn import data as data_mod
from stam.dnn.models import build_model, param_groups
from stam.dnn.compiled import (COMPILE_MODES, aot_update_fn, compile_pays, image_layout, keep_freed_memory, remake,
                               update_fn)
from stam.rules import rule
from stam.dnn.wide import Layout, WideNet, chunks, stack_runs, widen

#: the update and its compiled forms moved to :mod:`stam.dnn.compiled`; their old names here


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


def load_task(dataset: str = "digits", model: str = "mlp", width: float = 1.0, val_fraction: float = VAL_FRACTION, split_seed: int = 0,
              data_dir="data", device="cpu") -> Task:
    """The data set as ``stam train --dataset`` reads it (:func:`stam.dnn.data.load`), with the
    validation split of :func:`stam.dnn.data.split_validation` (none for ``val_fraction`` 0 or None)."""
    data = data_mod.load(dataset, data_dir, False, device)
    data = data_mod.split_validation(data, val_fraction, split_seed) if val_fraction else data
    return Task(data, model, width)


def digits_task(val_fraction: float = VAL_FRACTION, split_seed: int = 0, device="cpu") -> Task:
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


def init_net(seeds: list[int], task: Task, device="cpu", keep_float=()) -> Net:
    """The initial network of each seed, built by :func:`stam.dnn.models.build_model` after
    ``torch.manual_seed(seed)`` (one build per distinct seed), as one :class:`WideNet` on
    ``device``; the layers ``keep_float`` names (:func:`stam.dnn.models.param_groups`) stay float."""
    data = task.data
    built = {}
    for s in dict.fromkeys(seeds):
        torch.manual_seed(s)
        built[s] = build_model(task.model, data.num_classes, data.image_shape, task.width)
    first = built[seeds[0]]
    qids = {id(p) for g in param_groups(first, keep_float) if g["quantize"] for p in g["params"]}
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
def accuracy(net: Net, weights: dict[str, Tensor], data: data_mod.ImageData, split: str, chunk: int = 1000, ctx=None,
             autocast=contextlib.nullcontext, memory_format=torch.contiguous_format) -> Tensor:
    """Accuracy (percent) of each run on ``split`` (``"val"`` or ``"test"``) with ``weights``
    (every parameter, ``(R, ...)``), BatchNorm in evaluation mode: shape ``(R,)``.  Over several
    processes (``ctx``) each evaluates its share of the images and the counts are summed."""
    all_x, all_y = getattr(data, f"{split}_x"), getattr(data, f"{split}_y")
    rank, world = (ctx.rank, ctx.world) if ctx is not None else (0, 1)
    xs, ys = all_x[rank::world], all_y[rank::world]
    R = net.wide.runs
    chunk = max(1, min(chunk, (1 << 16) // R))  # bound the activations of R networks
    correct = torch.zeros(R, dtype=torch.long, device=all_y.device)
    net.wide.eval()
    try:
        for i in range(0, len(xs), chunk):
            with autocast():
                out = net.wide.call_with(weights, data.normalise(xs[i : i + chunk]).contiguous(memory_format=memory_format))
            correct += (out.argmax(-1) == ys[i : i + chunk]).sum(dim=1)
    finally:
        net.wide.train()
    if ctx is not None:
        distributed.all_reduce_sum(correct, ctx)
    return 100.0 * correct.double() / len(all_x)


#: :meth:`Trainer.statistics` keeps the normalised passes of BatchNorm's subset (:func:`bn_inputs`) in memory
#: from the first evaluation on where they take at most this many bytes (2,500 CIFAR images: 31 MB), and
#: gathers and normalises them again at every re-estimation otherwise
BN_INPUT_CACHE_BYTES = 64 << 20


def bn_inputs(net: Net, data: data_mod.ImageData, index: Tensor, chunk: int = 1000,
              memory_format=torch.contiguous_format, augmented: bool = False) -> Iterator[Tensor]:
    """The passes :func:`reestimate_bn` feeds the network, one at a time: the training images
    ``data.train_x[index]`` (``augmented``: cropped and flipped once, :func:`stam.dnn.data.bn_images`),
    normalised, in equal passes of about ``chunk`` images (fewer for many runs:
    :func:`stam.dnn.bnstats.even_batches`); none for fewer than two images.  Reads no validation or
    test image."""
    images = data_mod.bn_images(data, augmented=augmented, index=index)
    for part in bnstats.even_batches(images, min(chunk, (1 << 16) // net.wide.runs)):
        with torch.no_grad():
            yield data.normalise(part).contiguous(memory_format=memory_format)


@torch.no_grad()
def reestimate_bn(net: Net, weights: dict[str, Tensor], inputs: Iterable[Tensor], autocast=contextlib.nullcontext) -> bool:
    """BatchNorm's running statistics of ``net`` (every run's own channels) re-estimated, in place,
    for the networks with ``weights`` by :func:`stam.dnn.bnstats.reestimate`: train-mode forward
    passes over ``inputs`` (:func:`bn_inputs`: a fixed subset of normalised training images, as the
    training sees them, in equal passes), no gradient, cumulative averages.  Returns False (nothing changed)
    for a network without BatchNorm or no pass."""
    inputs = iter(inputs)
    first = next(inputs, None)
    if first is None:
        return False

    def forward(x):
        with autocast():
            net.wide.call_with(weights, x)

    return bnstats.reestimate(net.wide, forward, itertools.chain([first], inputs))


# --------------------------------------------------------------------------- the trainer

#: On a CPU the quantised weights are split into flat buffers of at most this many bytes (whole
#: layers each, one buffer per chunk): a pure update allocates new buffers every step, and glibc
#: maps an allocation above 32 MiB afresh (page faults on every step) instead of reusing freed
#: memory (smaller ones are reused once :func:`keep_freed_memory` has been applied).  On a GPU the
#: caching allocator reuses them: one buffer.
CPU_CHUNK_BYTES = 24 << 20


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


class Epoch(NamedTuple):
    """What :meth:`Trainer.train_epoch` measured, per run (``(R,)`` tensors, summed over the
    processes): mean training loss and accuracy (percent) over the epoch's images, the images
    seen, and the epoch's mean stationarity proxies ``(grad, z)`` (None without them)."""

    train_loss: Tensor
    train_acc: Tensor
    seen: int
    proxies: tuple | None


@dataclass(frozen=True)
class TrainerOptions:
    """How a :class:`Trainer` trains: ``epochs`` (what ``compile="auto"`` weighs), the ``device``, or
    ``ctx`` the processes (:func:`stam.dnn.distributed.setup`; default one process on ``device``);
    ``keep_float``: layers kept float (:func:`stam.dnn.models.param_groups`); ``bf16``: the forward
    and backward pass under bfloat16 autocast (weights and state stay float32); ``proxies``: record
    the rule's stationarity proxies every step (STAM's, eq. (algy)/(algz)); ``compile``: one of
    :data:`COMPILE_MODES` (``"auto"``: :func:`compile_pays` over ``epochs``); ``eval_batch_size``;
    ``bn_images``: the training images BatchNorm's statistics are re-estimated on for every
    evaluation (:meth:`Trainer.statistics`; 0 = evaluate with the statistics as trained);
    ``bn_augment``: on a data set trained on crops and flips, those images cropped and flipped once
    (:data:`stam.dnn.catalog.BN_AUGMENT`; False: unaugmented, the rule before 2026-11-29)."""

    epochs: int = 1
    device: object = None
    ctx: distributed.Context | None = None
    keep_float: tuple = ()
    bf16: bool = False
    proxies: bool = False
    compile: bool | str = "auto"
    eval_batch_size: int = 1000
    bn_images: int = BN_IMAGES
    bn_augment: bool = BN_AUGMENT


class Trainer:
    """``R`` configurations of one algorithm trained together on ``task`` (module docstring), as
    ``options`` say (:class:`TrainerOptions`; keywords change single fields of it:
    ``Trainer(configs, task, 64, compile=False)``).  The state of a run is its weights (:attr:`state`, :attr:`floats`), the float
    parameters' buffers (:attr:`fmom`), the BatchNorm statistics (in :attr:`net`), the
    generators and the sign-flip tracker: :meth:`state_dict` holds all of it, so a training
    restored with :meth:`load_state_dict` continues exactly."""

    def __init__(self, configs: list[Config], task: Task, batch_size: int, options: TrainerOptions | None = None, **changes):
        self.options = o = dataclasses.replace(options or TrainerOptions(), **changes)
        epochs, device, ctx, keep_float, compile = o.epochs, o.device, o.ctx, o.keep_float, o.compile
        bf16, proxies, eval_batch_size, bn_images = o.bf16, o.proxies, o.eval_batch_size, o.bn_images
        #: whether BatchNorm's images are cropped and flipped (the option, where the data set is trained so)
        self.bn_augment = bool(o.bn_augment and task.data.augment)
        if not configs:
            raise ValueError("a Trainer needs at least one configuration")
        algos = {c.preset.algo for c in configs}
        if len(algos) != 1:
            raise ValueError(f"one algorithm per batch, got {sorted(algos)}")
        self.algo = algos.pop()
        self.ctx = ctx if ctx is not None else distributed.Context(0, 1, torch.device(device or "cpu"), False)
        device = self.device = self.ctx.device
        self.configs, self.task, self.data, self.batch_size = configs, task, task.data, batch_size
        self.R = len(configs)
        self.seeds = [c.seed for c in configs]
        self.net = init_net(self.seeds, task, device, keep_float)
        self.rule = rule(self.algo)
        hyper0 = _hyper_at(configs, 1, device)
        wide = self.net.wide
        views = wide.views
        wide_shapes = {n: wide.wide_shape(n) for n in wide.names}
        sizes = [math.prod(wide.shapes[n]) for n in self.net.quantised]
        if device.type == "cpu":
            keep_freed_memory()
        limit = CPU_CHUNK_BYTES if device.type == "cpu" else math.inf
        self.qlays = [Layout(names, wide.shapes, wide_shapes, self.R)
                      for names in chunks(self.net.quantised, sizes, self.R, limit)]
        self.flay = Layout(self.net.floats, wide.shapes, wide_shapes, self.R)
        self.qs = [lay.q(device) for lay in self.qlays]
        self.state = [self.rule.init(lay.flatten(views).to(device), hyper0, q) for lay, q in zip(self.qlays, self.qs)]
        self.floats = self.flay.flatten(views).to(device)
        self.fmom = torch.zeros_like(self.floats)
        distinct = list(dict.fromkeys(self.seeds))
        self.gens = {s: torch.Generator().manual_seed(s) for s in distinct}
        self.gens_aug = {s: torch.Generator(device=device).manual_seed(s + 1) for s in distinct}
        self.steps = ep.steps_per_epoch(len(self.data.train_x), batch_size, self.ctx.world)
        if compile not in COMPILE_MODES:
            raise ValueError(f"compile must be one of {', '.join(map(repr, COMPILE_MODES))}, got {compile!r}")
        on = compile_pays(self.R, epochs * self.steps, sum(lay.numel for lay in self.qlays)) if compile == "auto" else bool(compile)
        self.with_proxies = proxies
        if compile == "aot" and device.type == "cpu":
            self._step = aot_update_fn(self.algo, proxies)
        else:  # on a GPU "aot" compiles in the process (AOTInductor's CUDA packages are not checked here)
            self._step = update_fn(self.algo, on, proxies)
        self.flips = ep.SignFlips(list(self._quantised("binary").values()))
        self.memory_format = image_layout(device, self.data.train_x.dim(), self.R)
        self.autocast = lambda: torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)  # noqa: E731
        self.eval_batch_size = eval_batch_size
        if not (isinstance(bn_images, int) and bn_images >= 0):
            raise ValueError(f"bn_images must be an integer >= 0, got {bn_images!r}")
        self.bn_images = bn_images
        self._bn_index = (bnstats.bn_subset(len(self.data.train_x), bn_images, device)
                          if bn_images and bnstats.batchnorms(self.net.wide) else None)
        self._bn_cache = None
        self.net.wide.train()

    # ------------------------------------------------------------------ weights
    def weights(self, which: str = "forward") -> dict[str, Tensor]:
        """Every parameter of the R networks, ``(R, *shape)``: the quantised layers' ``forward``
        (where gradients are taken), ``binary`` (in Q) or ``float`` weights, and the float
        parameters."""
        return {**self._quantised(which), **self.flay.views(self.floats)}

    def _flat(self, which: str) -> list[Tensor]:
        """Each chunk's flat buffer of the quantised layers' ``which`` weights."""
        view = {"forward": lambda st, q: self.rule.forward_weights(st), "binary": self.rule.binary_weights,
                "float": lambda st, q: self.rule.float_weights(st)}[which]
        return [view(st, q) for st, q in zip(self.state, self.qs)]

    def _quantised(self, which: str) -> dict[str, Tensor]:
        """Every quantised layer's ``which`` weights, ``(R, *shape)`` views of the flat buffers."""
        return {n: v for lay, flat in zip(self.qlays, self._flat(which)) for n, v in lay.views(flat).items()}

    def module(self, run: int = 0, which: str = "forward") -> torch.nn.Module:
        """Run ``run`` as a plain network of :func:`stam.dnn.models.build_model` holding its
        ``which`` weights (:meth:`weights`) and the BatchNorm statistics of those weights
        (:meth:`statistics`; in evaluation mode it computes what the trainer evaluates)."""
        data, task = self.data, self.task
        model = build_model(task.model, data.num_classes, data.image_shape, task.width).to(self.device)
        with torch.no_grad(), self.statistics(which) as weights:
            for name, p in model.named_parameters():
                p.copy_(weights[name][run])
            wide = dict(self.net.wide.body.named_buffers())
            for name, b in model.named_buffers():
                w = wide[name]
                b.copy_(w if w.dim() == 0 else w.view(self.R, -1)[run].view_as(b))
        return model

    # ------------------------------------------------------------------ one epoch
    def train_epoch(self, epoch: int, on_check: Callable | None = None, check_every: int = 25) -> Epoch:
        """One pass over the shuffled training set with the hyperparameters of ``epoch``.
        ``on_check(step, steps, mean_loss)`` (``mean_loss``: ``(R,)``, over the processes) is called
        every ``check_every`` steps and after the last; it may raise to stop the run.  Runs
        with subnormal floats flushed (:func:`stam.dnn.epochs.flush_denormal`)."""
        data, device, ctx, bs, R = self.data, self.device, self.ctx, self.batch_size, self.R
        hyper = _hyper_at(self.configs, epoch, device)
        n_train = len(data.train_x)
        perms = {s: torch.randperm(n_train, generator=g).to(device) for s, g in self.gens.items()}
        shared = len(self.gens) == 1
        loss_sum = torch.zeros(R, dtype=torch.float64, device=device)
        correct = torch.zeros(R, dtype=torch.long, device=device)
        prox_sum, seen = None, 0
        with ep.flush_denormal():
            for step in range(self.steps):
                batches = {s: perm[step * bs : (step + 1) * bs] for s, perm in perms.items()}
                if data.augment:  # the whole batch on every process: the generators stay in step
                    images = {s: data_mod.augment(data.train_x[b], self.gens_aug[s])[ctx.rank :: ctx.world] for s, b in batches.items()}
                else:
                    images = {s: data.train_x[b[ctx.rank :: ctx.world]] for s, b in batches.items()}
                y = torch.stack([data.train_y[batches[s][ctx.rank :: ctx.world]] for s in self.seeds])  # (R, b)
                x = _inputs(data, [images[s] for s in (self.seeds[:1] if shared else self.seeds)], shared)
                x = x.contiguous(memory_format=self.memory_format)
                wqs = [w.detach().requires_grad_(True) for w in self._flat("forward")]
                wf = self.floats.detach().requires_grad_(True)
                weights = {name: t for lay, wq in zip(self.qlays, wqs) for name, t in lay.wide(wq).items()}
                with self.autocast():
                    out = self.net.wide.call_with({**weights, **self.flay.wide(wf)}, x)
                losses = F.cross_entropy(out.float().flatten(0, 1), y.flatten(), reduction="none").view(R, -1).mean(dim=1)
                leaves = [*wqs, wf]
                grads = torch.autograd.grad(losses.sum(), leaves, allow_unused=True)
                grads = [torch.zeros_like(t) if g is None else g for g, t in zip(grads, leaves)]
                if ctx.world > 1:
                    grads = _average(grads, ctx)
                with torch.no_grad():
                    self.state, self.floats, self.fmom, prox = self._step(self.state, self.floats, self.fmom, grads[:-1], grads[-1],
                                                                         hyper, self.qs)
                n = y.shape[1]
                loss_sum += losses.detach().double() * n
                correct += (out.detach().argmax(-1) == y).sum(dim=1)
                seen += n
                if prox is not None:  # (||grad||^2, ||X^{t+1} - X^t|| / gamma) of this step: the squares summed over the layers
                    prox = (prox[0].double(), prox[1].double().sqrt())
                    prox_sum = prox if prox_sum is None else tuple(a + b for a, b in zip(prox_sum, prox))
                if on_check is not None and ((step + 1) % check_every == 0 or step + 1 == self.steps):
                    total = distributed.all_reduce_sum(torch.cat([loss_sum, loss_sum.new_tensor([seen])]), ctx)
                    on_check(step + 1, self.steps, total[:R] / total[R])
        distributed.average_buffers(self.net.wide, ctx)
        totals = distributed.all_reduce_sum(torch.cat([loss_sum, correct.double(), loss_sum.new_tensor([seen])]), ctx)
        n_seen = totals[-1]
        proxies = None if prox_sum is None else tuple(p / self.steps for p in prox_sum)  # the epoch's mean per step
        return Epoch(totals[:R] / n_seen, 100.0 * totals[R : 2 * R] / n_seen, int(n_seen.item()), proxies)

    @torch.no_grad()
    def finite(self) -> Tensor:
        """Per run, whether every weight, state tensor, buffer and BatchNorm statistic is finite: ``(R,)``."""
        ok = torch.ones(self.R, dtype=torch.bool, device=self.device)
        tensors = [t for st in self.state for t in st] + [self.floats, self.fmom]
        tensors += [b.view(self.R, -1) for b in self.net.wide.buffers() if b.is_floating_point() and b.dim()]
        for t in tensors:
            ok &= torch.isfinite(t.reshape(self.R, -1)).all(dim=1)
        return ok

    @contextlib.contextmanager
    def statistics(self, which: str = "binary"):
        """Within the block, BatchNorm's running statistics are those of the ``which`` weights
        (:meth:`weights`), re-estimated by :func:`reestimate_bn` on the fixed subset of
        :attr:`bn_images` training images; on leaving, the training's own statistics are put back
        (bit for bit), so training and checkpoints never see them.  With ``bn_images = 0`` or a
        network without BatchNorm, the block sees the statistics as trained.  Yields the weights
        (:meth:`weights`), computed once."""
        weights = self.weights(which)
        if self._bn_index is None:
            yield weights
            return
        with bnstats.kept(self.net.wide):
            reestimate_bn(self.net, weights, self._bn_inputs(), self.autocast)
            yield weights

    def _bn_inputs(self) -> Iterable[Tensor]:
        """The normalised passes of BatchNorm's subset (:func:`bn_inputs`), kept from the first call
        on where they fit in :data:`BN_INPUT_CACHE_BYTES` (they never change: the same images, and
        where augmented the same crops and flips); else made afresh, one pass at a time."""
        if self._bn_cache is None:
            made = bn_inputs(self.net, self.data, self._bn_index, self.eval_batch_size, self.memory_format, self.bn_augment)
            if len(self._bn_index) * self.data.train_x[0].numel() * 4 > BN_INPUT_CACHE_BYTES:
                return made
            self._bn_cache = list(made)
        return self._bn_cache

    def accuracies(self, splits, which: str = "binary", as_trained: bool = False) -> dict[str, Tensor]:
        """Accuracy (percent) of every run on each of ``splits`` with its ``which`` weights and
        BatchNorm statistics of those weights (:meth:`statistics`, estimated once for all the
        splits): ``{split: (R,)}``.  ``as_trained``: with the training's running statistics
        instead (a diagnostic; what ``bn_images = 0`` reports)."""
        with (contextlib.nullcontext(self.weights(which)) if as_trained else self.statistics(which)) as w:
            return {split: accuracy(self.net, w, self.data, split, self.eval_batch_size, self.ctx, self.autocast,
                                    self.memory_format) for split in splits}

    def accuracy(self, split: str, which: str = "binary") -> Tensor:
        """Accuracy (percent) of every run on ``split`` with its ``which`` weights, BatchNorm
        statistics of those weights (:meth:`accuracies`): ``(R,)``."""
        return self.accuracies((split,), which)[split]

    @torch.no_grad()
    def sign_flips(self) -> dict:
        """The sign-flip diagnostic at an epoch's end (:class:`stam.dnn.epochs.SignFlips`), per
        run and per quantised layer (in the order of :attr:`Net.quantised`)."""
        return self.flips.update(list(self._quantised("binary").values()))

    # ------------------------------------------------------------------ state
    def _rng(self) -> dict:
        rng = {"torch": torch.get_rng_state(), "shuffle": [g.get_state() for g in self.gens.values()],
               "augment": [g.get_state() for g in self.gens_aug.values()]}
        if self.device.type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state(self.device)
        return rng

    def state_dict(self) -> dict:
        """Everything a training continues from: ``model`` (every parameter's forward weights,
        ``(R, *shape)``, and the BatchNorm buffers), ``optimizer`` (each quantised layer's
        update-rule state, the float parameters' buffers), ``rng`` (torch's global generator and
        each distinct seed's shuffling and augmentation generators) and ``signs``."""
        buffers = {name: b for name, b in self.net.wide.body.named_buffers()}
        fields = [{n: v for lay, st in zip(self.qlays, self.state) for n, v in lay.views(st[i]).items()}
                  for i in range(len(self.state[0]))] if self.state else []
        return {"model": {**self.weights("forward"), **buffers},
                "optimizer": {"layers": {n: [f[n] for f in fields] for n in self.net.quantised},
                              "buffers": self.flay.views(self.fmom)},
                "rng": self._rng(), "signs": self.flips.state_dict()}

    def load_state_dict(self, sd: dict) -> None:
        """Continue from :meth:`state_dict` (its structure must be this trainer's: check it first,
        as :mod:`stam.dnn.checkpoint` does)."""
        dev = self.device
        layers = sd["optimizer"]["layers"]
        self.state = [remake(st, [lay.flatten({n: layers[n][i] for n in lay.names}).to(dev) for i in range(len(st))])
                      for lay, st in zip(self.qlays, self.state)]
        self.floats = self.flay.flatten(sd["model"]).to(dev)
        self.fmom = self.flay.flatten(sd["optimizer"]["buffers"]).to(dev)
        with torch.no_grad():
            for name, b in self.net.wide.body.named_buffers():
                b.copy_(sd["model"][name])
        rng = sd["rng"]
        torch.set_rng_state(rng["torch"].cpu())
        for g, st in zip(self.gens.values(), rng["shuffle"]):
            g.set_state(st.cpu())
        for g, st in zip(self.gens_aug.values(), rng["augment"]):
            g.set_state(st.cpu())
        if "cuda" in rng and dev.type == "cuda":
            torch.cuda.set_rng_state(rng["cuda"].cpu(), dev)
        self.flips.load_state_dict({k: [t.to(dev) for t in v] for k, v in sd["signs"].items()})


def _average(grads: list[Tensor], ctx) -> list[Tensor]:
    """The gradients averaged over the processes (one all-reduce of one flat buffer)."""
    flat = torch.cat([g.reshape(-1) for g in grads])
    distributed.all_reduce_sum(flat, ctx)
    flat /= ctx.world
    out, i = [], 0
    for g in grads:
        out.append(flat[i : i + g.numel()].view_as(g))
        i += g.numel()
    return out


# --------------------------------------------------------------------------- tuning and maps

def train_batched(configs: list[Config], task: Task, epochs: int, batch_size: int = 32, *, evaluate_test: bool = False,
                  progress=None, **options) -> list[dict]:
    """Train every configuration of ``configs`` (all of one algorithm) on ``task`` (its data set,
    model and width) for ``epochs`` epochs with one :class:`Trainer`; returns one result per
    configuration: ``{"log": [per-epoch records], "diverged_epoch": e or None, "seconds": wall
    time / R}`` with records ``{epoch, train_loss, val_acc_binary, val_acc_float, test_acc_binary,
    test_acc_float (only with evaluate_test), sign_epoch, sign_since_init, sign_ever}``, every
    accuracy with BatchNorm statistics of the weights it measures (``bn_images``,
    :meth:`Trainer.statistics`); with ``bn_images > 0`` also ``val_acc_binary_as_trained`` (the
    binary weights with the training's statistics, a diagnostic; not for Float, whose running
    statistics belong to its float network and whose projection onto Q was never trained).  ``options``: fields of
    :class:`TrainerOptions` (``device`` default ``"cpu"``; ``compile="auto"``: see
    :func:`compile_pays`).  The data must be on ``device``."""
    if not configs:
        return []
    R = len(configs)
    t_start = time.perf_counter()
    tr = Trainer(configs, task, batch_size, TrainerOptions(device="cpu"), epochs=epochs, **options)
    bn_images = tr.bn_images
    diverged: list[int | None] = [None] * R
    logs: list[list[dict]] = [[] for _ in range(R)]
    splits = ("val",) * (task.data.val_x is not None) + ("test",) * evaluate_test
    for epoch in range(1, epochs + 1):
        res = tr.train_epoch(epoch)
        finite = tr.finite()
        flipped = tr.sign_flips()
        rec = {"epoch": epoch, "train_loss": res.train_loss, "sign_epoch": flipped["epoch"],
               "sign_since_init": flipped["since_init"], "sign_ever": flipped["ever"]}
        for which in ("binary", "float"):
            for split, acc in tr.accuracies(splits, which).items():
                rec[f"{split}_acc_{which}"] = acc
        if bn_images and task.data.val_x is not None and tr.rule.binary:  # Float has no binary network to diagnose
            rec["val_acc_binary_as_trained"] = tr.accuracies(("val",), "binary", as_trained=True)["val"]
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


__all__ = ["Task", "Config", "Net", "Trainer", "TrainerOptions", "Epoch", "load_task", "digits_task", "init_net", "accuracy", "train_batched",
           "reestimate_bn", "bn_inputs"]
