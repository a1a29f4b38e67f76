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

It trains through the one batched trainer of tuning and maps, with one run
(:class:`stam.dnn.batched.Trainer`, ``R = 1``): this module adds the run folder, the records,
checkpoints, resume, the progress bar and the divergence stop around it.

Accuracies are in percent.  "Binary" test accuracy always uses weights in Q: the update rule's
binary weights (V for STAM, Proj_Q of the float weights for BC, BR and PSGD, and for the float
baseline the projection of its weights onto Q); "float" uses the float weights.  Every accuracy
is measured with BatchNorm statistics of the weights it measures, re-estimated on ``--bn-images``
fixed training images (:meth:`stam.dnn.batched.Trainer.statistics`; 0 = the statistics as
trained); the binary accuracy with the training's own statistics is kept in each record as a
diagnostic (``val_acc_binary_as_trained``, or ``test_acc_binary_as_trained`` without a validation
split).  An accuracy at or below chance is flagged in the epoch line and the closing words.
The one library entry is ``train(cfg: TrainConfig) -> Trained`` (:func:`train`).
"""

from __future__ import annotations

import copy
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import torch

from stam.dnn import batched, catalog, checkpoint, distributed, presets
from stam.dnn import epochs as ep
from stam.dnn import data as data_mod
from stam.dnn.models import build_model, count_params, param_groups, relative_cost
from stam.dnn.params import COMPILE_MODE, TrainConfig  # the parameters of a run, declared with their flags
from stam.errors import UsageError
from stam.io import bar_disable, check_out_dir, provenance, remove_stale_temporaries
from stam.theory.symbolic.numeric import check, quadratic_coupling

#: an upper bound of :func:`stam.dnn.models.relative_cost` at width 1 for every model and data set (ResNet-18 on
#: CIFAR: 3.6; the cost grows at most like width^2 above 1); tested against every model
MAX_COST_AT_WIDTH_1 = 8.0

#: Settings that must not change across a ``--resume`` (``epochs`` may grow).
RUN_IDENTITY = ("model", "width", "dataset", "algo", "preset", "batch_size", "seed", "overrides", "schedule_scale", "keep_float",
                "bf16", "compile", "val_fraction", "split_seed", "bn_images", "bn_augment")
#: what a run written before a setting existed had (a checkpoint without ``width`` trained the paper's width; one
#: without ``bn_images`` evaluated with the statistics as trained, one without ``bn_augment`` on unaugmented images)
IDENTITY_DEFAULTS = {"width": 1.0, "compile": "auto", "bn_images": 0, "bn_augment": False}


class Diverged(RuntimeError):
    """The training loss became NaN or infinite; the message is one line."""


# --------------------------------------------------------------------------- the theorem

def theorem_status(algo: str, hyper: dict) -> dict | None:
    """Theorem conv's conditions for the STAM hyperparameters in force (``stam.theory.symbolic.numeric``);
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


# --------------------------------------------------------------------------- the run

def _json_line(record: dict) -> str:
    return json.dumps(record, allow_nan=True)


def _default_out(cfg: TrainConfig, preset: presets.Preset) -> Path:
    width = "" if cfg.width == 1.0 else f"-w{cfg.width:g}"
    return Path("runs") / f"{cfg.dataset}-{cfg.model}{width}-{preset.name}-seed{cfg.seed}"


class Trained(NamedTuple):
    summary: dict  # also written to OUT/summary.json
    model: torch.nn.Module  # the trained network with the weights it is scored on: binary (in Q), float for the float baseline
    trainer: batched.Trainer  # its weights in every form (Trainer.weights, Trainer.module) and its state


def train(cfg: TrainConfig) -> Trained:
    """Train as ``cfg`` says (``stam train``'s one library entry; ``cfg.checksums``: see :func:`stam.dnn.data.load_cifar`).
    Raises :class:`Diverged` when the loss stops being finite (the last checkpoint stays; the
    message calls it good only if its content hash verifies)."""
    ctx = distributed.setup(cfg.device)
    try:
        return _run(cfg, ctx, cfg.checksums)
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
    trainer: batched.Trainer
    config: dict


@dataclass
class Done:
    """What the checkpoint commits: the records of the epochs done and their training time; when the last
    checkpoint was written, and the payload of a later epoch's end not yet written (:func:`_commit`)."""

    records: list = field(default_factory=list)
    seconds: float = 0.0
    saved_at: float = field(default_factory=time.monotonic)
    pending: dict | None = None


#: a checkpoint is written at the end of an epoch once this many seconds have passed since the last one (and at
#: the last epoch, and when a run stops): a run of short epochs (digits: 0.07 s) does not spend its time writing
#: checkpoints, and a stopped run loses no finished epoch (the last epoch's end is kept in memory until written)
CHECKPOINT_EVERY_S = 5.0


def _run(cfg: TrainConfig, ctx, checksums) -> Trained:
    """``stam train``, top to bottom: set up (every usage error before anything is written), resume
    or start, the epochs (train, check, evaluate, commit), the summary."""
    s = _setup(cfg, ctx, checksums)
    done = _resume(s) if cfg.resume else Done()
    if ctx.main and cfg.echo:  # every usage error is behind us: say how much work is ahead
        left = s.epochs - len(done.records)
        ep.announce_work(float(left) * len(s.data.train_x), f"--epochs {s.epochs} of {len(s.data.train_x):,} images")
    if ctx.main:
        _speak(cfg, f"stam train: {s.config['label']} on {catalog.MODELS[cfg.model]} (width {cfg.width:g}), {s.data.name}, "
                    f"{len(s.data.train_x):,} training images; epochs {len(done.records) + 1}..{s.epochs} of "
                    f"{s.trainer.steps} steps; evaluation with {catalog.bn_protocol(cfg.bn_images, len(s.data.train_x), catalog.bn_augmented(s.config))}")
    _start(s, done)
    try:
        for epoch in range(len(done.records) + 1, s.epochs + 1):
            t0 = time.perf_counter()
            hyper = s.preset.at(epoch)
            result = _train_epoch(s, done, epoch)
            acc_bin, acc_float, sign_flips = _evaluate_epoch(s)
            _commit(s, done, _record(s, epoch, hyper, result, acc_bin, acc_float, sign_flips, time.perf_counter() - t0))
    except Diverged:
        raise
    except BaseException:
        _flush(s, done)
        _unstart(s)
        raise
    summary = _summary(s.config, done.records, done.seconds, "completed")
    if ctx.main:
        ep.RUN_SUMMARY.write(summary, s.out / "summary.json")
        if cfg.echo and not cfg.json:
            print(closing_text(summary, s.out), flush=True)
    return Trained(summary, s.trainer.module(0, "binary" if catalog.algorithm(s.preset.algo).binary else "float"), s.trainer)


def _check_settings(cfg: TrainConfig, ctx) -> tuple[presets.Preset, int, int, Path]:
    """The preset, epochs, batch size and run folder, with every usage error of the settings
    (nothing is loaded or written)."""
    defaults = presets.table()["defaults"]
    epochs = cfg.epochs or defaults["epochs"]
    batch_size = cfg.batch_size or defaults["batch_size"]
    preset = presets.resolve(cfg.preset, cfg.algo, cfg.dataset, cfg.overrides, cfg.schedule_scale, epochs)
    if cfg.proxies and not catalog.algorithm(preset.algo).theorem:
        raise UsageError(f"--proxies: {preset.algo} has no stationarity proxies; they are STAM's (--algo stam)")
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
    """Settings, data, the trainer (network, update rule, generators) and the run's config, in a
    fixed order (the random state a run starts from depends on it)."""
    preset, epochs, batch_size, out = _check_settings(cfg, ctx)
    device = ctx.device
    if ctx.main and cfg.dataset != "digits" and Path(cfg.data_dir).expanduser().exists():  # (else one error line, below)
        _speak(cfg, f"stam train: reading {cfg.dataset} from {cfg.data_dir} (an image collection is decoded once, then read "
                    "from the cache)")
    if ctx.main:  # only the main process may download; the others read what it verified
        data = data_mod.load(cfg.dataset, cfg.data_dir, cfg.download, device, checksums, cfg.cache_dir)
    distributed.barrier(ctx)
    if not ctx.main:  # an image collection: from the cache the main process wrote
        data = data_mod.load(cfg.dataset, cfg.data_dir, False, device, checksums, cfg.cache_dir)
    if cfg.val_fraction:
        data = data_mod.split_validation(data, cfg.val_fraction, cfg.split_seed)
    images = float(epochs) * len(data.train_x)
    # --width counts (the network's cost per image pass); counted exactly only where it can decide, since counting builds
    # the network on torch's meta device, which imports sympy (a second at start): MAX_COST_AT_WIDTH_1 bounds every model
    cost = (relative_cost(cfg.model, data.num_classes, data.image_shape, cfg.width)
            if images * MAX_COST_AT_WIDTH_1 * max(1.0, cfg.width) ** 2 > ep.WORK_LIMIT_IMAGES else 1.0)
    ep.check_work(images, f"--epochs {epochs} of {len(data.train_x):,} images", cfg.force,
                  announce=False, cost=cost)  # said once the run is set up (_run)
    model = build_model(cfg.model, data.num_classes, data.image_shape, cfg.width)  # to check the settings (no random state used)
    data_mod.check_fits(model, cfg.model, data)
    groups = param_groups(model, cfg.keep_float)
    options = batched.TrainerOptions(epochs, ctx=ctx, keep_float=cfg.keep_float, bf16=cfg.bf16,
                                     proxies=cfg.proxies, compile=COMPILE_MODE[cfg.compile],
                                     eval_batch_size=cfg.eval_batch_size, bn_images=cfg.bn_images, bn_augment=cfg.bn_augment)
    trainer = batched.Trainer([batched.Config(preset, cfg.seed)], batched.Task(data, cfg.model, cfg.width), batch_size, options)
    config = {
        "model": cfg.model, "width": cfg.width, "dataset": cfg.dataset, "algo": preset.algo, "preset": preset.name, "label": cfg.label or preset.label,
        "epochs": epochs, "batch_size": batch_size, "seed": cfg.seed, "overrides": preset.overrides,
        "schedule_scale": preset.schedule_scale, "keep_float": sorted(cfg.keep_float), "bf16": cfg.bf16, "proxies": cfg.proxies, "compile": cfg.compile,
        "hyper": preset.hyper, "device": str(device), "world_size": ctx.world,
        "params": {"total": count_params(model), "quantized": sum(p.numel() for g in groups if g["quantize"] for p in g["params"])},
        "data_manifest_sha256": data.manifest, "data_source": data.source or None, "train_size": len(data.train_x), "test_size": len(data.test_x),
        "val_fraction": cfg.val_fraction or None, "split_seed": cfg.split_seed,
        "val_size": len(data.val_x) if cfg.val_fraction else 0, "bn_images": cfg.bn_images, "bn_augment": trainer.bn_augment,
        "num_classes": data.num_classes,
    }
    return Setup(cfg, ctx, preset, epochs, batch_size, out, data, trainer, config)


def _data_identity(source) -> tuple:
    """What must not change across a ``--resume`` about the data: its kind, and the SHA-256 of an
    image collection (the official data may be read from the archive or its extracted folder)."""
    source = source if isinstance(source, dict) else {}
    return source.get("kind"), None if source.get("kind") == "official" else source.get("sha256")


def _data_text(identity: tuple) -> str:
    kind, sha = identity
    return f"{kind}" + (f" (SHA-256 {sha[:12]}...)" if isinstance(sha, str) else "")


def _resume(s: Setup) -> Done:
    """Restore the trainer (weights, update-rule state, BatchNorm statistics, generators, sign-flip
    state) from the checkpoint, after checking its structure against this run's and its content
    hash (:mod:`stam.dnn.checkpoint`) and that the run's settings are the same (only ``epochs``
    may change)."""
    path = s.out / "checkpoint.pt"
    expected = checkpoint.Expected(_payload(s, Done(), 0), RECORD_KEYS,  # absent from checkpoints written before them:
                                   newer_config=frozenset({"data_source", "compile", "bn_images", "bn_augment", "num_classes"}),
                                   newer_records=frozenset(NEWER_RECORD_KEYS))
    ckpt = checkpoint.read(path, expected)
    old = ckpt["config"]
    changed = [f"{k} was {old.get(k, IDENTITY_DEFAULTS.get(k))!r}, now {s.config[k]!r}" for k in RUN_IDENTITY if old.get(k, IDENTITY_DEFAULTS.get(k)) != s.config[k]]
    was, now = _data_identity(old.get("data_source")), _data_identity(s.config["data_source"])
    if "data_source" in old and was != now:  # a checkpoint from before data_source: not known, not refused
        changed.append(f"the data was {_data_text(was)}, now {_data_text(now)}")
    if s.cfg.schedule_scale == "auto" and old.get("schedule_scale") != s.config["schedule_scale"] and isinstance(old.get("schedule_scale"), float):
        changed = [c if not c.startswith("schedule_scale") else f"{c} (--schedule-scale auto follows --epochs: pass "
                   f"--schedule-scale {old['schedule_scale']!r} to keep the run's schedule)" for c in changed]
    changed = [c if not c.startswith("bn_augment was False") else f"{c} (a run evaluated on unaugmented BatchNorm images, "
               "the rule before 2026-11-29: pass --bn-unaugmented)" for c in changed]
    if changed:
        raise UsageError(f"--resume: {', '.join(changed)}; use the same settings (only --epochs may change)")
    s.trainer.load_state_dict({k: ckpt[k] for k in ("model", "optimizer", "rng", "signs")})
    return Done([{k: r.get(k) for k in RECORD_KEYS} for r in ckpt["log"]], float(ckpt["seconds"]))


def _start(s: Setup, done: Done) -> None:
    """``config.json``; for a resumed run, the log as its checkpoint commits it (a crash after the
    checkpoint left it short) and no temporaries of a checkpoint write that was killed."""
    if not s.ctx.main:
        return
    ep.RUN_CONFIG.write({"kind": "train-config", "provenance": provenance(), **s.config}, s.out / "config.json")
    if s.cfg.resume:
        _write_log(s.out, done.records)
        remove_stale_temporaries([s.out / n for n in ("checkpoint.pt", "log.jsonl", "summary.json", "config.json")])


def _unstart(s: Setup) -> None:
    """A new run that stopped before its first checkpoint (a full disk, an interrupt, an error) leaves
    nothing: the ``config.json`` and ``log.jsonl`` it wrote are removed, and its folder if it is empty
    then; a resumed run or one with a checkpoint keeps everything (its checkpoint is the commit point)."""
    if not s.ctx.main or s.cfg.resume or (s.out / "checkpoint.pt").exists():
        return
    for name in ("config.json", "log.jsonl"):
        try:
            (s.out / name).unlink()
        except OSError:
            pass
    try:
        s.out.rmdir()  # only if empty
    except OSError:
        pass


def _train_epoch(s: Setup, done: Done, epoch: int) -> batched.Epoch:
    """One pass over the shuffled training set (:meth:`stam.dnn.batched.Trainer.train_epoch`),
    with the progress bar and the divergence checks: every 25 steps the loss, after the last step
    the weights and the state too (an update after the last loss check may have broken them).
    Raises :class:`Diverged`."""
    bar = _progress(s.cfg, s.ctx, s.trainer.steps, epoch, s.epochs)
    t0, said = time.monotonic(), [time.monotonic()]

    def check(step, steps, mean_loss):
        what = ep.diverged(float(mean_loss[0]), True)
        if what:
            bar.close()
            _diverged(s, done, epoch, f"{what} in epoch {epoch} (by step {step} of {steps})")
        bar.set_postfix(loss=f"{float(mean_loss[0]):.4f}", refresh=False)
        bar.update(step - bar.n)
        if s.ctx.main and time.monotonic() - said[0] >= HEARTBEAT_S:  # no live bar to watch: a line a minute
            said[0] = time.monotonic()
            _speak(s.cfg, f"stam train: epoch {epoch}/{s.epochs}, step {step}/{steps}, loss {float(mean_loss[0]):.4f}, "
                          f"{said[0] - t0:.0f} s into the epoch")

    result = s.trainer.train_epoch(epoch, on_check=check)
    bar.close()
    what = ep.diverged(float(result.train_loss[0]), bool(s.trainer.finite()[0]))
    if what:
        _diverged(s, done, epoch, f"{what} in epoch {epoch}")
    return result


def _evaluate_epoch(s: Setup) -> tuple[dict, dict, dict | None]:
    """Test (and validation) accuracy with the binary weights and with the float weights, each with
    BatchNorm statistics of its weights (:meth:`stam.dnn.batched.Trainer.accuracies`), the binary
    accuracy with the training's statistics on the selection split (``as_trained``: validation, or
    test without one; a diagnostic, when ``--bn-images`` > 0), and the sign flips of the binary
    weights (per layer, named)."""
    tr = s.trainer
    splits = ("test", "val") if s.cfg.val_fraction else ("test",)
    acc_bin = {k: float(v[0]) for k, v in tr.accuracies(splits, "binary").items()}
    acc_float = {k: float(v[0]) for k, v in tr.accuracies(splits, "float").items()}
    if s.cfg.bn_images and tr.rule.binary:  # Float: its statistics are its float network's (train_batched)
        split = splits[-1]
        acc_bin[f"{split}_as_trained"] = float(tr.accuracies((split,), "binary", as_trained=True)[split][0])
    sign_flips = None
    if tr.net.quantised:
        r = tr.sign_flips()
        keys = ("epoch", "since_init", "ever")
        layers = [{"name": n, **{k: float(lay[k][0]) for k in (*keys, "scale")}} for n, lay in zip(tr.net.quantised, r["layers"])]
        sign_flips = {**{k: float(r[k][0]) for k in keys}, "layers": layers}
    return acc_bin, acc_float, sign_flips


#: the keys of an epoch's record (a line of log.jsonl)
RECORD_KEYS = ("epoch", "paper_epoch", "train_loss", "train_acc", "test_acc_binary", "test_acc_float", "val_acc_binary",
               "val_acc_float", "val_acc_binary_as_trained", "test_acc_binary_as_trained", "hyper", "proxy_grad", "proxy_z",
               "theorem", "sign_flips", "seconds")
#: the record keys added since the first checkpoints (an older checkpoint's records lack them: None)
NEWER_RECORD_KEYS = ("val_acc_binary_as_trained", "test_acc_binary_as_trained")


def _record(s: Setup, epoch, hyper, result: batched.Epoch, acc_bin, acc_float, sign_flips, seconds) -> dict:
    proxies = None if result.proxies is None else tuple(float(p[0]) for p in result.proxies)
    record = {
        "epoch": epoch, "paper_epoch": s.preset.paper_epoch(epoch),
        "train_loss": float(result.train_loss[0]), "train_acc": float(result.train_acc[0]),
        "test_acc_binary": acc_bin["test"], "test_acc_float": acc_float["test"],
        "val_acc_binary": acc_bin.get("val"), "val_acc_float": acc_float.get("val"),
        "val_acc_binary_as_trained": acc_bin.get("val_as_trained"), "test_acc_binary_as_trained": acc_bin.get("test_as_trained"),
        "hyper": hyper,
        "proxy_grad": None if proxies is None else proxies[0], "proxy_z": None if proxies is None else proxies[1],
        "theorem": theorem_status(s.preset.algo, hyper), "sign_flips": sign_flips, "seconds": seconds,
    }
    return record


def _commit(s: Setup, done: Done, record: dict) -> None:
    """The epoch's commit point: the checkpoint (then the log, derived from it), the JSON line.  The checkpoint is
    written at the last epoch and once :data:`CHECKPOINT_EVERY_S` have passed since the last one; otherwise the
    epoch's end is kept in memory (:func:`_flush` writes it where the run stops: an interrupt, an error, a
    divergence), so every finished epoch reaches the checkpoint either way."""
    done.records.append(record)
    done.seconds += record["seconds"]
    if s.ctx.main:
        if record["epoch"] == s.epochs or time.monotonic() - done.saved_at >= CHECKPOINT_EVERY_S:
            _save(s, done, record["epoch"])
            done.saved_at, done.pending = time.monotonic(), None
        else:
            # the trainer's state copied (it moves on); the records are not (they never change once appended)
            done.pending = {**copy.deepcopy(_payload(s, Done(), record["epoch"])), "log": list(done.records),
                            "seconds": done.seconds}
        if s.cfg.echo:
            print(_json_line(record) if s.cfg.json else epoch_text(record, s.epochs, s.config), flush=True)
    distributed.barrier(s.ctx)


#: with no live progress bar (stderr not a terminal), a long run says where it is at least this often (seconds)
HEARTBEAT_S = 60.0


def _speak(cfg, text: str) -> None:
    """A line on stderr where no live progress bar shows the run (stderr is not a terminal: a log
    file, nohup, CI), so that a long run is never silent for more than :data:`HEARTBEAT_S`;
    nothing with ``--no-progress`` or ``--quiet``."""
    if cfg.progress and cfg.echo and not sys.stderr.isatty():
        print(text, file=sys.stderr, flush=True)


def _progress(cfg, ctx, steps, epoch, epochs):
    from tqdm import tqdm

    return tqdm(total=steps, desc=f"epoch {epoch}/{epochs}", file=sys.stderr, leave=False, dynamic_ncols=True, disable=bar_disable(cfg.progress and ctx.main))


def _payload(s: Setup, done: Done, epoch: int) -> dict:
    """What a checkpoint holds (:data:`stam.dnn.checkpoint.KEYS`); also the template a resumed
    checkpoint is checked against."""
    return {"epoch": epoch, "config": s.config, **s.trainer.state_dict(), "log": done.records, "seconds": done.seconds}


def _save(s: Setup, done: Done, epoch: int) -> None:
    checkpoint.write(s.out / "checkpoint.pt", _payload(s, done, epoch))
    _write_log(s.out, done.records)


def _flush(s: Setup, done: Done) -> None:
    """Write the checkpoint of the last finished epoch where :func:`_commit` kept it in memory (a run that stops)."""
    if s.ctx.main and done.pending is not None:
        pending, done.pending = done.pending, None
        checkpoint.write(s.out / "checkpoint.pt", pending)
        _write_log(s.out, pending["log"])


def _write_log(out, records) -> None:
    """``log.jsonl``: one line per epoch, from the records the checkpoint holds."""
    ep.RUN_LOG.write(records, out / "log.jsonl")


def _pct(v) -> str:
    return "-" if v is None else f"{v:.1f}%"


def _flag(acc, config: dict | None, split: str) -> str:
    """`` (at chance!)`` after an accuracy at or below chance (:func:`stam.dnn.catalog.at_chance`)."""
    if not config or not config.get("num_classes"):
        return ""
    return " (at chance!)" if catalog.at_chance(acc, config["num_classes"], config.get(f"{split}_size")) else ""


def epoch_text(record: dict, epochs: int, config: dict | None = None) -> str:
    """An epoch's record in one readable line: loss, accuracies (binary / float weights; an
    accuracy at or below chance flagged when ``config`` names the classes), the sign flips of the
    binary weights in the epoch and ever, the time."""
    val = ""
    if record["val_acc_binary"] is not None:
        val = (f"  val {_pct(record['val_acc_binary'])}{_flag(record['val_acc_binary'], config, 'val')} / "
               f"{_pct(record['val_acc_float'])}")
    flips = record.get("sign_flips")
    flipped = f"  signs flipped {100 * flips['epoch']:.2f}% (ever {100 * flips['ever']:.1f}%)" if flips else ""
    width = len(str(epochs))
    return (f"epoch {record['epoch']:>{width}}/{epochs}  loss {record['train_loss']:.4f}  train {_pct(record['train_acc'])}{val}"
            f"  test {_pct(record['test_acc_binary'])}{_flag(record['test_acc_binary'], config, 'test')} / "
            f"{_pct(record['test_acc_float'])} (binary / float){flipped}  {record['seconds']:.1f} s")


def closing_text(summary: dict, out: Path) -> str:
    """What a finished run says last: the epoch chosen on validation data and its test accuracy
    (binary weights; float for the float baseline), the paper's metric labelled, where it wrote."""
    binary = catalog.algorithm(summary["algo"]).binary
    kind = "binary" if binary else "float"
    minutes, secs = divmod(round(summary["seconds"]), 60)
    took = f"{minutes} min {secs} s" if minutes else f"{secs} s"
    if summary["selected_epoch"] is not None:
        pick = (f"selected epoch {summary['selected_epoch']} on validation ({_pct(summary[f'selected_val_acc_{kind}'])} {kind}): "
                f"test {_pct(summary[f'selected_test_acc_{kind}'])} {kind}")
    else:
        pick = "no validation split (--no-val), so no epoch is selected"
    paper = f"best test over the epochs (the paper's metric) {_pct(summary[f'best_test_acc_{kind}'])}"
    classes = summary.get("num_classes")
    if classes and catalog.at_chance(summary.get(f"selected_test_acc_{kind}") if summary["selected_epoch"] is not None
                                     else summary.get(f"best_test_acc_{kind}"), classes, summary.get("test_size")):
        pick += f" -- AT OR BELOW CHANCE ({catalog.chance_level(classes):g}%): a bug until shown otherwise"
    if summary.get("sign_ever") is not None and binary:
        pick += f"; {100 * summary['sign_ever']:.1f}% of the binary signs ever flipped"
    protocol = catalog.bn_protocol(summary.get("bn_images"), summary.get("train_size"), catalog.bn_augmented(summary))
    n = summary["epochs"]
    paper_epochs = presets.table()["defaults"]["epochs"]
    hint = ""
    if summary["schedule_scale"] == 1 and summary["epochs_planned"] < paper_epochs:
        hint = (f" This run followed the first {summary['epochs_planned']} of the paper's {paper_epochs} epochs of the "
                f"schedule; --schedule-scale auto fits the whole schedule into {summary['epochs_planned']}.")
    return (f"{summary['label']} on {summary['model_name']}, {n} epoch{'s' * (n != 1)} in {took}: {pick}; {paper} "
            f"({protocol}). Wrote {out}/ (summary.json, log.jsonl, checkpoint.pt).{hint}")


#: What the accuracy keys of ``summary.json`` mean (written into it).
METRIC_NOTES = {
    "selected_*": "the epoch with the best validation accuracy (binary weights; float weights for the float baseline), "
                  "earliest on ties, and the accuracies at that epoch: selection on validation data only",
    "best_test_acc_*": "the paper's metric (Tables cifar-res, cifar100-res): the best test accuracy over the epochs, "
                       "i.e. the epoch is selected on the test set",
    "final_test_acc_*": "at the last epoch",
}


def selected_record(records: list[dict], algo: str) -> dict | None:
    """The record of the epoch with the best validation accuracy (binary weights; float weights for
    the float baseline), the earliest on ties; None without a validation set.  Selection on
    validation data only (the test accuracies are read at the epoch it returns)."""
    return ep.select_epoch(records, catalog.algorithm(algo).score_key)


def _selected(config, records) -> dict:
    """The validation-selected epoch and its accuracies (None without a validation set)."""
    best = selected_record(records, config["algo"])
    pick = lambda k: best and best[k]  # noqa: E731
    return {"selected_epoch": pick("epoch"), "selected_val_acc_binary": pick("val_acc_binary"),
            "selected_val_acc_float": pick("val_acc_float"), "selected_test_acc_binary": pick("test_acc_binary"),
            "selected_test_acc_float": pick("test_acc_float")}


def _summary(config, records, seconds_total, status) -> dict:
    best_bin = max(records, key=lambda r: r["test_acc_binary"], default=None)
    best_float = max(records, key=lambda r: r["test_acc_float"], default=None)
    return {
        "kind": "train-run", "provenance": provenance(), "status": status,
        "model": config["model"], "model_name": catalog.MODELS[config["model"]], "width": config.get("width", 1.0),
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
        "data_source": config.get("data_source"), "bn_images": config.get("bn_images", 0),
        "bn_augment": config.get("bn_augment", False),
        "num_classes": config.get("num_classes"), "test_size": config.get("test_size"), "train_size": config.get("train_size"),
        "sign_ever": (records[-1].get("sign_flips") or {}).get("ever") if records else None,
    }


def _diverged(s: Setup, done: Done, epoch: int, what: str):
    """Write the summary of a diverged run and raise :class:`Diverged`; the checkpoint left is
    called good only if its content hash verifies."""
    path = s.out / "checkpoint.pt"
    _flush(s, done)
    if not done.records:
        kept = "no epoch had completed, so there is no checkpoint"
    else:
        last, why = checkpoint.verified_epoch(path)
        if last is not None:
            kept = f"the last good checkpoint (epoch {last}) is kept in {path} (its content hash verified)"
        else:
            kept = f"the checkpoint in {path} cannot be trusted: {why}"
    if s.ctx.main:
        ep.RUN_SUMMARY.write(_summary(s.config, done.records, sum(r["seconds"] for r in done.records),
                                      f"diverged in epoch {epoch}"), s.out / "summary.json")
    raise Diverged(f"{what}; stopped, {kept}. Lower the step size (lr, or raise beta) and retry")


__all__ = [ "Trained", "train", "selected_record", "Diverged", "theorem_status", "RECORD_KEYS"]
