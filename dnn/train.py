"""``stam train``: binary-weight training of Section 3 with STAM (eq. (alg:stamm)), BinaryConnect
(eq. (alg:BC)), BinaryRelax (eq. (alg:BR)), PSGD (eq. (alg:PSGD)) or float SGD.

A run directory holds ``config.json`` (the resolved settings), ``log.jsonl`` (one object per
epoch: train loss/accuracy, test accuracy with binary and with float weights, the
hyperparameters in force, STAM's stationarity proxies averaged over the epoch and the check of
Theorem conv's conditions for the (gamma, lambda, beta) in force), ``summary.json`` and
``checkpoint.pt`` (after every epoch, atomically, sealed with a content hash: :mod:`stam.dnn.checkpoint`,
which also checks it on a resume).  ``resume=True`` continues from the checkpoint exactly: model, optimiser, the global torch RNG and the two generators (shuffling,
augmentation) are restored, and the hyperparameters of an epoch are a function of the epoch
alone (:mod:`stam.dnn.presets`).

Accuracies are in percent.  "Binary" test accuracy always uses weights in Q: the optimiser's
``binary_weights()`` (V for STAM, Proj_Q of the float weights for BC, BR and PSGD), and for the
float baseline the projection of its weights onto Q; "float" uses the float weights.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn.functional as F

from stam.dnn import catalog, checkpoint, distributed, optim, presets
from stam.dnn import epochs as ep
from stam.dnn import data as data_mod
from stam.dnn.models import DISPLAY_NAMES, build_model, count_params, param_groups
from stam.dnn.optim import project_layer
from stam.errors import UsageError
from stam.io import atomic_write_json, atomic_write_text, bar_disable, check_out_dir, provenance
from stam.theory.numeric import check, quadratic_coupling

CHECKPOINT_FORMAT = checkpoint.FORMAT  # the checkpoint's format (stam.dnn.checkpoint)

#: Settings that must not change across a ``--resume`` (``epochs`` may grow).
RUN_IDENTITY = ("model", "width", "dataset", "algo", "preset", "batch_size", "seed", "overrides", "schedule_scale", "keep_float",
                "bf16", "val_fraction", "split_seed")
#: what a run written before a setting existed had (a checkpoint without ``width`` trained the paper's width)
IDENTITY_DEFAULTS = {"width": 1.0}


class Diverged(RuntimeError):
    """The training loss became NaN or infinite; the message is one line."""


@dataclass
class TrainConfig:
    model: str = "vgg11"
    width: float = 1.0  # channel-width multiplier of the network (1: the paper's)
    dataset: str = "cifar10"
    algo: str | None = None
    preset: str | None = None
    epochs: int | None = None  # default: the paper's 1000
    batch_size: int | None = None  # default: the paper's 128 (global, split over processes)
    seed: int = 0
    overrides: dict = field(default_factory=dict)
    schedule_scale: float | str = 1.0
    keep_float: tuple = ()
    data_dir: str = "data"
    download: bool = False
    out: str | None = None
    resume: bool = False
    device: str = "auto"
    bf16: bool = False
    eval_batch_size: int = 1000
    progress: bool = True
    echo: bool = True  # print each epoch's JSON line on stdout
    label: str | None = None  # column name in ``stam table`` (default: the preset's, e.g. Our3; Our3* with overrides)
    val_fraction: float | None = 0.1  # validation share carved out of the training set; None: the paper's protocol (no validation)
    split_seed: int = 0  # seed of the validation split (independent of ``seed``)
    cache_dir: str | None = None  # decoded image collections (default $STAM_CACHE_DIR or ~/.cache/stam)


# --------------------------------------------------------------------------- optimisers

def make_optimizer(algo: str, groups: list[dict], hyper: dict) -> torch.optim.Optimizer:
    """The optimiser of ``algo`` over the parameter groups of :func:`stam.dnn.models.param_groups`,
    built from the hyperparameters ``hyper`` of the first epoch as the algorithm declares it
    (:mod:`stam.dnn.catalog`): ``torch.optim.SGD`` for the float baseline, otherwise
    :func:`stam.dnn.optim.make` (the one factory of the quantising optimisers).  BR gets its fixed
    ``rho = 1``: its ``lam`` schedule is put into the groups each epoch by :func:`apply_hyper`."""
    try:
        a = catalog.algorithm(algo)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    if not a.binary:
        return a.optimizer_class()(groups, **a.constructor_args(hyper))

    return optim.make(algo, groups, **a.constructor_args(hyper))


def apply_hyper(opt: torch.optim.Optimizer, algo: str, hyper: dict) -> None:
    """Put the hyperparameters of the current epoch into every parameter group."""
    for group in opt.param_groups:
        for key in catalog.algorithm(algo).hyper:
            if key in group:
                group[key] = hyper[key]
    if hyper.get("project"):  # BR's second phase (the schedule sets ``project`` from ``switch_epoch``)
        opt.switch_to_projection()


@contextlib.contextmanager
def projected_weights(opt: torch.optim.Optimizer):
    """Float baseline: temporarily replace every quantised weight by its projection onto Q
    (eq. (0411)); restores the float weights on exit."""
    saved = []
    with torch.no_grad():
        for group in opt.param_groups:
            if group.get("quantize"):
                for p in group["params"]:
                    saved.append((p, p.detach().clone()))
                    p.copy_(project_layer(p))
    try:
        yield
    finally:
        with torch.no_grad():
            for p, v in saved:
                p.copy_(v)


def binary_weights(opt):
    return opt.binary_weights() if hasattr(opt, "binary_weights") else projected_weights(opt)


def float_weights(opt):
    return opt.float_weights() if hasattr(opt, "float_weights") else contextlib.nullcontext()


def theorem_status(algo: str, hyper: dict) -> dict | None:
    """Theorem conv's conditions for the STAM hyperparameters in force (``stam.theory.numeric``);
    conditions that need constants unknown for a network (L1, A, C) are listed as unknown; None for
    an algorithm the theorem is not about (:attr:`stam.dnn.catalog.Algorithm.theorem`)."""
    if not catalog.algorithm(algo).theorem:
        return None

    r = check(hyper["gamma"], hyper["beta"], quadratic_coupling(hyper["lam"]))
    finite = lambda v: float(v) if math.isfinite(v) else None  # noqa: E731  (strict JSON: no Infinity)
    return {
        "admissible": bool(r["admissible"]),
        "violations": [{"condition": str(v["condition"]), "value": finite(v["value"]), "limit": finite(v["limit"])} for v in r["violations"]],
        "unknown": [str(u) for u in r["unknown"]],
    }


# --------------------------------------------------------------------------- one step, one epoch

def train_step(net, opt, x_uint8, y, data: data_mod.ImageData, autocast, memory_format=torch.contiguous_format):
    """Forward, backward and one optimiser step on a uint8 batch; returns (loss, #correct) as
    0-dim tensors (no host synchronisation)."""
    x = data.normalise(x_uint8).contiguous(memory_format=memory_format)
    opt.zero_grad(set_to_none=True)
    with autocast():
        out = net(x)
        loss = F.cross_entropy(out.float(), y)
    loss.backward()
    opt.step()
    return loss.detach(), (out.argmax(1) == y).sum()


@torch.no_grad()
def evaluate(model, data: data_mod.ImageData, ctx, batch: int, autocast, memory_format=torch.contiguous_format,
             split: str = "test") -> float:
    """Accuracy (percent) of ``model`` as it stands on ``split`` (``"test"`` or ``"val"``); the
    images are split over processes."""
    model.eval()
    all_x, all_y = getattr(data, f"{split}_x"), getattr(data, f"{split}_y")
    xs, ys = all_x[ctx.rank :: ctx.world], all_y[ctx.rank :: ctx.world]
    correct = torch.zeros((), dtype=torch.long, device=ctx.device)
    for i in range(0, len(xs), batch):
        with autocast():
            out = model(data.normalise(xs[i : i + batch]).contiguous(memory_format=memory_format))
        correct += (out.argmax(1) == ys[i : i + batch]).sum()
    distributed.all_reduce_sum(correct, ctx)
    return 100.0 * correct.item() / len(all_x)


def _proxies(opt) -> tuple | None:
    if not hasattr(opt, "stationarity_proxies"):
        return None
    p = opt.stationarity_proxies()
    if isinstance(p, dict):
        p = (p["grad"], p["z"])
    return tuple(torch.as_tensor(v, dtype=torch.float64) for v in p)


# --------------------------------------------------------------------------- sign flips

class SignFlips:
    """The sign-flip diagnostic (:class:`stam.dnn.epochs.SignFlips`, the one the batched trainer
    keeps too) of this run's binary weights, in Q: what :func:`binary_weights` puts into the
    quantised parameters; per layer (named) and in total, once per epoch.  Its state goes into the
    checkpoint, so a resumed run continues it exactly."""

    def __init__(self, opt, model):
        names = {id(p): n for n, p in model.named_parameters()}
        self.params = [p for g in opt.param_groups if g.get("quantize") for p in g["params"]]
        self.names = [names.get(id(p), "?") for p in self.params]
        with binary_weights(opt):
            self.tracker = ep.SignFlips(self._runs())

    def _runs(self) -> list:
        return [p.unsqueeze(0) for p in self.params]  # one run: R = 1

    @torch.no_grad()
    def update(self) -> dict | None:
        """Call with the binary weights in the parameters; returns the epoch's record."""
        if not self.params:
            return None
        r = self.tracker.update(self._runs())
        one = lambda t: float(t[0])  # noqa: E731
        keys = ("epoch", "since_init", "ever")
        layers = [{"name": n, **{k: one(l[k]) for k in (*keys, "scale")}} for n, l in zip(self.names, r["layers"])]
        return {**{k: one(r[k]) for k in keys}, "layers": layers}

    def state_dict(self) -> dict:
        return {k: [t.squeeze(0) for t in v] for k, v in self.tracker.state_dict().items()}

    def load_state_dict(self, state: dict) -> None:
        self.tracker.load_state_dict({k: [t.unsqueeze(0) for t in v] for k, v in state.items()})


# --------------------------------------------------------------------------- the run

def _json_line(record: dict) -> str:
    return json.dumps(record, allow_nan=True)


def _default_out(cfg: TrainConfig, preset: presets.Preset) -> Path:
    width = "" if cfg.width == 1.0 else f"-w{cfg.width:g}"
    return Path("runs") / f"{cfg.dataset}-{cfg.model}{width}-{preset.name}-seed{cfg.seed}"


def _rng_state(gen_shuffle, gen_aug, device) -> dict:
    state = {"torch": torch.get_rng_state(), "shuffle": gen_shuffle.get_state(), "augment": gen_aug.get_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict, gen_shuffle, gen_aug, device) -> None:
    torch.set_rng_state(state["torch"].cpu())
    gen_shuffle.set_state(state["shuffle"].cpu())
    gen_aug.set_state(state["augment"].cpu())
    if "cuda" in state and device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"].cpu(), device)


class Trained(NamedTuple):
    summary: dict  # also written to OUT/summary.json
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer


def run(cfg: TrainConfig, checksums: dict | None = None) -> Trained:
    """Train as ``cfg`` says (``checksums``: see :func:`stam.dnn.data.load_cifar`).
    Raises :class:`Diverged` when the loss stops being finite (the last checkpoint stays; the
    message calls it good only if its content hash verifies)."""
    ctx = distributed.setup(cfg.device)
    try:
        return _run(cfg, ctx, checksums)
    finally:
        distributed.teardown(ctx)


@dataclass
class Setup:
    """What every epoch uses, built once by :func:`_setup`."""

    cfg: TrainConfig
    ctx: distributed.Context
    preset: presets.Preset
    epochs: int
    batch_size: int
    out: Path
    data: data_mod.ImageData
    model: torch.nn.Module
    net: torch.nn.Module  # the model, or its DistributedDataParallel wrapper
    opt: torch.optim.Optimizer
    flips: SignFlips
    gen_shuffle: torch.Generator
    gen_aug: torch.Generator
    autocast: object
    memory_format: torch.memory_format
    config: dict


@dataclass
class Done:
    """What the checkpoint commits: the records of the epochs done and their training time."""

    records: list = field(default_factory=list)
    seconds: float = 0.0


def _run(cfg: TrainConfig, ctx, checksums) -> Trained:
    """``stam train``, top to bottom: set up (every usage error before anything is written), resume
    or start, the epochs (train, check, evaluate, commit), the summary."""
    s = _setup(cfg, ctx, checksums)
    done = _resume(s) if cfg.resume else Done()
    _start(s, done)
    for epoch in range(len(done.records) + 1, s.epochs + 1):
        t0 = time.perf_counter()
        hyper = s.preset.at(epoch)
        apply_hyper(s.opt, s.preset.algo, hyper)
        with ep.flush_denormal():  # the tensor arithmetic only: settings were checked with IEEE subnormals
            totals, proxies = _train_epoch(s, done, epoch)
        acc_bin, acc_float, sign_flips = _evaluate_epoch(s)
        _commit(s, done, _record(s, epoch, hyper, totals, proxies, acc_bin, acc_float, sign_flips, time.perf_counter() - t0))
    summary = _summary(s.config, done.records, done.seconds, "completed")
    if ctx.main:
        atomic_write_json(s.out / "summary.json", summary)
    return Trained(summary, s.model, s.opt)


def _check_settings(cfg: TrainConfig, ctx) -> tuple[presets.Preset, int, int, Path]:
    """The preset, epochs, batch size and run folder, with every usage error of the settings
    (nothing is loaded or written)."""
    defaults = presets.table()["defaults"]
    epochs = cfg.epochs or defaults["epochs"]
    batch_size = cfg.batch_size or defaults["batch_size"]
    preset = presets.resolve(cfg.preset, cfg.algo, cfg.dataset, cfg.overrides, cfg.schedule_scale, epochs)
    if batch_size % ctx.world:
        raise UsageError(f"--batch-size {batch_size} must be divisible by the number of processes ({ctx.world})")
    if batch_size // ctx.world < 2:
        raise UsageError(f"--batch-size {batch_size}: each of the {ctx.world} process(es) needs at least 2 images per batch (BatchNorm)")
    out = check_out_dir(cfg.out if cfg.out is not None else _default_out(cfg, preset), "--out")
    ckpt_path = out / "checkpoint.pt"
    if cfg.resume and not ckpt_path.is_file():
        raise UsageError(f"--resume: no checkpoint at {ckpt_path}")
    if not cfg.resume and ckpt_path.is_file():
        raise UsageError(f"{out} already holds a run (checkpoint.pt); pass --resume to continue it or choose another --out")
    return preset, epochs, batch_size, out


def _setup(cfg: TrainConfig, ctx, checksums) -> Setup:
    """Settings, data, model, optimiser, generators and the run's config, in a fixed order (the
    random state a run starts from depends on it)."""
    preset, epochs, batch_size, out = _check_settings(cfg, ctx)
    device = ctx.device
    if ctx.main:  # only the main process may download; the others read what it verified
        data = data_mod.load(cfg.dataset, cfg.data_dir, cfg.download, device, checksums, cfg.cache_dir)
    distributed.barrier(ctx)
    if not ctx.main:  # an image collection: from the cache the main process wrote
        data = data_mod.load(cfg.dataset, cfg.data_dir, False, device, checksums, cfg.cache_dir)
    if cfg.val_fraction:
        data = data_mod.split_validation(data, cfg.val_fraction, cfg.split_seed)
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model, data.num_classes, data.image_shape, cfg.width).to(device)
    memory_format = torch.channels_last if device.type == "cuda" and data.train_x.dim() == 4 else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    _check_fits(model, cfg.model, data, memory_format)
    groups = param_groups(model, cfg.keep_float)
    opt = make_optimizer(preset.algo, groups, preset.at(1))
    net = model
    if ctx.world > 1:
        net = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    use_bf16 = cfg.bf16
    config = {
        "model": cfg.model, "width": cfg.width, "dataset": cfg.dataset, "algo": preset.algo, "preset": preset.name, "label": cfg.label or preset.label,
        "epochs": epochs, "batch_size": batch_size, "seed": cfg.seed, "overrides": preset.overrides,
        "schedule_scale": preset.schedule_scale, "keep_float": sorted(cfg.keep_float), "bf16": cfg.bf16,
        "hyper": preset.hyper, "device": str(device), "world_size": ctx.world,
        "params": {"total": count_params(model), "quantized": sum(p.numel() for g in groups if g["quantize"] for p in g["params"])},
        "data_manifest_sha256": data.manifest, "data_source": data.source or None, "train_size": len(data.train_x), "test_size": len(data.test_x),
        "val_fraction": cfg.val_fraction or None, "split_seed": cfg.split_seed,
        "val_size": len(data.val_x) if cfg.val_fraction else 0,
    }
    return Setup(cfg, ctx, preset, epochs, batch_size, out, data, model, net, opt, SignFlips(opt, model),
                 torch.Generator().manual_seed(cfg.seed), torch.Generator(device=device).manual_seed(cfg.seed + 1),
                 lambda: torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16), memory_format, config)


def _data_identity(source) -> tuple:
    """What must not change across a ``--resume`` about the data: its kind, and the SHA-256 of an
    image collection (the official data may be read from the archive or its extracted folder)."""
    source = source if isinstance(source, dict) else {}
    return source.get("kind"), None if source.get("kind") == "official" else source.get("sha256")


def _data_text(identity: tuple) -> str:
    kind, sha = identity
    return f"{kind}" + (f" (SHA-256 {sha[:12]}...)" if isinstance(sha, str) else "")


def _resume(s: Setup) -> Done:
    """Restore model, optimiser, generators and sign-flip state from the checkpoint, after checking
    its structure against this run's and its content hash (:mod:`stam.dnn.checkpoint`) and that the
    run's settings are the same (only ``epochs`` may change)."""
    path = s.out / "checkpoint.pt"
    expected = checkpoint.Expected(_payload(s, Done(), 0), [p.shape for g in s.opt.param_groups for p in g["params"]],
                                   RECORD_KEYS, frozenset(presets.ALGO_HYPER[s.preset.algo]) | {"phase"},  # BR's phase: the schedule's too
                                   newer_config=frozenset({"data_source"}))  # absent from checkpoints written before it
    ckpt = checkpoint.read(path, expected)
    old = ckpt["config"]
    changed = [f"{k} was {old.get(k, IDENTITY_DEFAULTS.get(k))!r}, now {s.config[k]!r}" for k in RUN_IDENTITY if old.get(k, IDENTITY_DEFAULTS.get(k)) != s.config[k]]
    was, now = _data_identity(old.get("data_source")), _data_identity(s.config["data_source"])
    if "data_source" in old and was != now:  # a checkpoint from before data_source: not known, not refused
        changed.append(f"the data was {_data_text(was)}, now {_data_text(now)}")
    if changed:
        raise UsageError(f"--resume: {', '.join(changed)}; use the same settings (only --epochs may change)")
    for key, target in (("model", s.model), ("optimizer", s.opt)):  # checked above; what the loaders still refuse
        try:
            target.load_state_dict(ckpt[key])
        except (RuntimeError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"--resume: {path}: field {key} cannot be loaded ({(str(exc) or type(exc).__name__).splitlines()[0]})") from None
    _set_rng_state(ckpt["rng"], s.gen_shuffle, s.gen_aug, s.ctx.device)
    s.flips.load_state_dict({k: [t.to(s.ctx.device) for t in v] for k, v in ckpt["signs"].items()})
    return Done(list(ckpt["log"]), float(ckpt["seconds"]))


def _start(s: Setup, done: Done) -> None:
    """``config.json``; for a resumed run, the log as its checkpoint commits it (a crash after the
    checkpoint left it short) and no temporaries of a checkpoint write that was killed."""
    if not s.ctx.main:
        return
    atomic_write_json(s.out / "config.json", {"kind": "train-config", "provenance": provenance(), **s.config})
    if s.cfg.resume:
        _write_log(s.out, done.records)
        for stale in s.out.glob(".checkpoint.pt.*"):
            stale.unlink(missing_ok=True)


def _train_epoch(s: Setup, done: Done, epoch: int) -> tuple[torch.Tensor, tuple | None]:
    """One pass over the shuffled training set; returns the (loss sum, #correct, #seen) summed
    over the processes, and the epoch's mean stationarity proxies (None for optimisers without
    them).  Raises :class:`Diverged` when the loss or, after the last step, the weights or the
    optimiser state stop being finite."""
    ctx, data, device, bs = s.ctx, s.data, s.ctx.device, s.batch_size
    n_train = len(data.train_x)
    steps = ep.steps_per_epoch(n_train, bs, ctx.world)
    s.model.train()
    perm = torch.randperm(n_train, generator=s.gen_shuffle).to(device)
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    correct = torch.zeros((), dtype=torch.long, device=device)
    seen, prox_sum, prox_n = 0, None, 0
    bar = _progress(s.cfg, ctx, steps, epoch, s.epochs)
    for step in range(steps):
        batch = perm[step * bs : (step + 1) * bs]
        idx = batch[ctx.rank :: ctx.world]  # this process's share
        if data.augment:  # the whole batch on every process: the generators stay in step, as in one process
            x = data_mod.augment(data.train_x[batch], s.gen_aug)[ctx.rank :: ctx.world]
        else:
            x = data.train_x[idx]
        loss, c = train_step(s.net, s.opt, x, data.train_y[idx], data, s.autocast, s.memory_format)
        loss_sum += loss * len(idx)
        correct += c
        seen += len(idx)
        p = _proxies(s.opt)
        if p is not None:
            prox_sum = p if prox_sum is None else tuple(a + b for a, b in zip(prox_sum, p))
            prox_n += 1
        if (step + 1) % 25 == 0 or step + 1 == steps:
            check = distributed.all_reduce_sum(loss_sum.clone(), ctx)
            what = ep.diverged(check.item(), True)
            if what:
                bar.close()
                _diverged(s, done, epoch, f"{what} in epoch {epoch} (by step {step + 1} of {steps})")
            bar.set_postfix(loss=f"{loss_sum.item() / seen:.4f}", refresh=False)
        bar.update(1)
    bar.close()
    what = ep.diverged(loss_sum.item(), _all_finite(s.model, s.opt))  # an update after the last loss check may have broken them
    if what:
        _diverged(s, done, epoch, f"{what} in epoch {epoch}")
    distributed.average_buffers(s.model, ctx)
    totals = torch.stack([loss_sum, correct.double(), torch.tensor(float(seen), dtype=torch.float64, device=device)])
    return distributed.all_reduce_sum(totals, ctx), None if prox_sum is None else tuple(v.item() / prox_n for v in prox_sum)


def _evaluate_epoch(s: Setup) -> tuple[dict, dict, dict | None]:
    """Test (and validation) accuracy with the binary weights and with the float weights, and the
    sign flips of the binary weights."""
    splits = ("test", "val") if s.cfg.val_fraction else ("test",)
    ev = lambda split: evaluate(s.model, s.data, s.ctx, s.cfg.eval_batch_size, s.autocast, s.memory_format, split)  # noqa: E731
    with binary_weights(s.opt):
        acc_bin = {split: ev(split) for split in splits}
        sign_flips = s.flips.update()
    with float_weights(s.opt):
        acc_float = {split: ev(split) for split in splits}
    return acc_bin, acc_float, sign_flips


#: the keys of an epoch's record (a line of log.jsonl)
RECORD_KEYS = ("epoch", "paper_epoch", "train_loss", "train_acc", "test_acc_binary", "test_acc_float", "val_acc_binary",
               "val_acc_float", "hyper", "proxy_grad", "proxy_z", "theorem", "sign_flips", "seconds")


def _record(s: Setup, epoch, hyper, totals, proxies, acc_bin, acc_float, sign_flips, seconds) -> dict:
    record = {
        "epoch": epoch, "paper_epoch": s.preset.paper_epoch(epoch),
        "train_loss": totals[0].item() / totals[2].item(), "train_acc": 100.0 * totals[1].item() / totals[2].item(),
        "test_acc_binary": acc_bin["test"], "test_acc_float": acc_float["test"],
        "val_acc_binary": acc_bin.get("val"), "val_acc_float": acc_float.get("val"), "hyper": hyper,
        "proxy_grad": None if proxies is None else proxies[0], "proxy_z": None if proxies is None else proxies[1],
        "theorem": theorem_status(s.preset.algo, hyper), "sign_flips": sign_flips, "seconds": seconds,
    }
    return record


def _commit(s: Setup, done: Done, record: dict) -> None:
    """The epoch's commit point: the checkpoint (then the log, derived from it), the JSON line."""
    done.records.append(record)
    done.seconds += record["seconds"]
    if s.ctx.main:
        _save(s, done, record["epoch"])
        if s.cfg.echo:
            print(_json_line(record), flush=True)
    distributed.barrier(s.ctx)


def _progress(cfg, ctx, steps, epoch, epochs):
    from tqdm import tqdm

    return tqdm(total=steps, desc=f"epoch {epoch}/{epochs}", file=sys.stderr, leave=False, dynamic_ncols=True, disable=bar_disable(cfg.progress and ctx.main))


def _payload(s: Setup, done: Done, epoch: int) -> dict:
    """What a checkpoint holds (:data:`stam.dnn.checkpoint.KEYS`); also the template a resumed
    checkpoint is checked against."""
    return {"epoch": epoch, "config": s.config, "model": s.model.state_dict(), "optimizer": s.opt.state_dict(),
            "rng": _rng_state(s.gen_shuffle, s.gen_aug, s.ctx.device), "log": done.records, "seconds": done.seconds,
            "signs": s.flips.state_dict()}


def _save(s: Setup, done: Done, epoch: int) -> None:
    checkpoint.write(s.out / "checkpoint.pt", _payload(s, done, epoch))
    _write_log(s.out, done.records)


def _write_log(out, records) -> None:
    """``log.jsonl``: one line per epoch, from the records the checkpoint holds."""
    atomic_write_text(out / "log.jsonl", "".join(_json_line(r) + "\n" for r in records))


#: What the accuracy keys of ``summary.json`` mean (written into it).
METRIC_NOTES = {
    "selected_*": "the epoch with the best validation accuracy (binary weights; float weights for the float baseline), "
                  "earliest on ties, and the accuracies at that epoch: selection on validation data only",
    "best_test_acc_*": "the paper's metric (Tables cifar-res, cifar100-res): the best test accuracy over the epochs, "
                       "i.e. the epoch is selected on the test set",
    "final_test_acc_*": "at the last epoch",
}


def select_epoch(records: list[dict], algo: str) -> dict | None:
    """The record of the epoch with the best validation accuracy (binary weights; float weights for
    the float baseline), the earliest on ties; None without a validation set.  Selection on
    validation data only (the test accuracies are read at the epoch it returns)."""
    return ep.select_epoch(records, catalog.algorithm(algo).score_key)


def _selected(config, records) -> dict:
    """The validation-selected epoch and its accuracies (None without a validation set)."""
    best = select_epoch(records, config["algo"])
    pick = lambda k: best and best[k]  # noqa: E731
    return {"selected_epoch": pick("epoch"), "selected_val_acc_binary": pick("val_acc_binary"),
            "selected_val_acc_float": pick("val_acc_float"), "selected_test_acc_binary": pick("test_acc_binary"),
            "selected_test_acc_float": pick("test_acc_float")}


def _summary(config, records, seconds_total, status) -> dict:
    best_bin = max(records, key=lambda r: r["test_acc_binary"], default=None)
    best_float = max(records, key=lambda r: r["test_acc_float"], default=None)
    return {
        "kind": "train-run", "provenance": provenance(), "status": status,
        "model": config["model"], "model_name": DISPLAY_NAMES[config["model"]], "width": config.get("width", 1.0),
        "dataset": config["dataset"],
        "algo": config["algo"], "preset": config["preset"], "label": config["label"], "seed": config["seed"],
        "val_fraction": config.get("val_fraction"), "split_seed": config.get("split_seed"), **_selected(config, records),
        "metric_notes": METRIC_NOTES,
        "best_test_acc_binary": best_bin and best_bin["test_acc_binary"], "best_epoch_binary": best_bin and best_bin["epoch"],
        "best_test_acc_float": best_float and best_float["test_acc_float"], "best_epoch_float": best_float and best_float["epoch"],
        "final_test_acc_binary": records[-1]["test_acc_binary"] if records else None,
        "final_test_acc_float": records[-1]["test_acc_float"] if records else None,
        "epochs": len(records), "epochs_planned": config["epochs"], "seconds": seconds_total,
        "batch_size": config["batch_size"], "schedule_scale": config["schedule_scale"], "overrides": config["overrides"],
        "keep_float": config["keep_float"], "device": config["device"], "world_size": config["world_size"], "params": config["params"],
        "data_source": config.get("data_source"),
    }


def _diverged(s: Setup, done: Done, epoch: int, what: str):
    """Write the summary of a diverged run and raise :class:`Diverged`; the checkpoint left is
    called good only if its content hash verifies."""
    path = s.out / "checkpoint.pt"
    if not done.records:
        kept = "no epoch had completed, so there is no checkpoint"
    else:
        last, why = checkpoint.verified_epoch(path)
        if last is not None:
            kept = f"the last good checkpoint (epoch {last}) is kept in {path} (its content hash verified)"
        else:
            kept = f"the checkpoint in {path} cannot be trusted: {why}"
    if s.ctx.main:
        atomic_write_json(s.out / "summary.json", _summary(s.config, done.records, sum(r["seconds"] for r in done.records),
                                                           f"diverged in epoch {epoch}"))
    raise Diverged(f"{what}; stopped, {kept}. Lower the step size (lr, or raise beta) and retry")


@torch.no_grad()
def _all_finite(model, opt) -> bool:
    """Whether every parameter, buffer and floating-point optimiser state tensor is finite (one
    pass over them, once per epoch, one host synchronisation)."""
    tensors = [*model.parameters(), *model.buffers()]
    tensors += [v for st in opt.state.values() for v in st.values() if torch.is_tensor(v) and v.is_floating_point()]
    return bool(torch.stack([torch.isfinite(t).all() for t in tensors if t.is_floating_point()]).all())


def _check_fits(model, name: str, data: data_mod.ImageData, memory_format) -> None:
    """A model that cannot take the data set's images is a usage error, named before anything is
    written (:func:`stam.dnn.data.check_fits`)."""
    data_mod.check_fits(model, name, data, memory_format)


__all__ = ["TrainConfig", "Trained", "run", "select_epoch", "SignFlips", "Diverged", "make_optimizer", "apply_hyper", "train_step", "evaluate", "projected_weights", "theorem_status"]
