"""VGG-11 at the paper's width on CIFAR-10 in one short run on one GPU (issue 36).

Trains VGG-11 at width 1 on the JPEG copy of CIFAR-10 with STAM, BC and Float (and BR and PSGD
where the time allows), ``--seeds`` paired seeds each (default 3), through the toolkit's one trainer
(:class:`stam.dnn.batched.Trainer`), for as many epochs as fit in ``--budget-s`` seconds of wall
time counted from the start of this script (imports, decoding the JPEG copy, warm-up and
compilation included); measures the training throughput of float and STAM, STAM's update against
``torch.optim.SGD`` with momentum on the same parameters, and the peak GPU memory; writes
``OUT/gpu_width1.json`` and prints a short table.  Read top to bottom:

1. the data: the JPEG copy (``--data``, by default ``.gpu-data/cifar10-jpeg.tar.gz``, an ignored
   folder beside the code), read as ``stam train --dataset cifar10 --data-dir`` reads it, with the
   toolkit's validation split (10% of the training images, split seed 0: 45,000 / 5,000 / 10,000);
2. the probe: one forward and backward pass of the network, float32 against bf16 autocast, one
   run against the seeds as one wide network; bf16 and batching the seeds are used where they are
   faster here (``--bf16``, ``--batch-seeds``: ``auto``);
3. the warm-up: per algorithm a trainer on the first ``--warmup-steps`` batches compiles its update
   and is timed (training and one evaluation); from these times, the epochs that fit the budget
   (``--epochs`` fixes them instead), every algorithm the same;
4. the training: all trainers in rounds of one epoch each, every epoch evaluated (validation and
   test, binary and float weights); a round that would overrun the budget is not started;
5. the measurements: images/s per algorithm (the epochs after the first), STAM's update and one
   ``torch.optim.SGD`` step (momentum 0.9, foreach) on the trained networks' parameters, peak memory;
6. the result: one JSON file and a table.

The JSON (``kind`` benchmark, ``name`` gpu_width1): ``provenance`` (versions), ``measured_on_gpu``,
``device`` (type, name, torch, CUDA and cuDNN versions), ``data`` (its source and split sizes),
``settings`` (model, width, batch size, seeds, algorithms, epochs planned and done, why it
stopped, budget, bf16, batched seeds, compile, BatchNorm protocol), ``choices`` (each setting with
its value and ``why``: "transferred: ..." or "chosen because ..." or "given"),
``hyperparameters`` (each algorithm's at its first and last epoch), ``probe``, ``warm_up`` (per
algorithm: its timed epoch and evaluation, peak memory), ``skipped``, ``runs`` (per algorithm and
seed: ``log``, one record per epoch with training loss and accuracy, validation and test accuracy
with binary and float weights and the as-trained binary validation accuracy; ``diverged_epoch``,
``selected_epoch``, ``test_acc_selected``, ``test_acc_last``), ``summary`` (per algorithm: test
accuracies at the selected epochs, mean, std, at chance), ``paired`` (STAM - BC and STAM - BR matched by seed: mean,
std and 95% t-interval, as ``stam tune`` states them), ``throughput`` (per algorithm: images/s,
a run's epoch in seconds, per-epoch training and evaluation seconds), ``update`` (STAM's update
as trained and eager, ``torch.optim.SGD`` with momentum, in ms, their ratio), ``memory`` (peak
bytes), ``targets`` (the issue's, with the values measured) and ``seconds``.

Settings, each labelled in the JSON (``choices``):

- *transferred*: the hyperparameters of each algorithm, from the CIFAR-10 study the toolkit reports
  (its finished tuning ``benchmarks/results/cifar10_deciding_augmented_cpu/tune/tune-cifar10.json``:
  VGG-11 at width 1/8, 45 epochs, batch 128, 16 trials halved by 3, every step on the
  warmup-cosine schedule, trials scored with BatchNorm statistics re-estimated on 2,500 cropped
  and flipped training images): each algorithm's chosen setting (the tuner's choice on validation
  accuracy); ``--settings`` takes another finished ``stam tune`` result, or the job store of a
  tuning under way (its final-stage setting whose trial scored best on validation, else its
  best trial).  Its schedules are mapped onto this run's epochs as the study mapped them
  (``schedule_scale`` ``auto``), its BatchNorm statistics re-estimated as the study's (``--bn-images``,
  on cropped and flipped images); the batch size 128 (the paper's and the study's), every conv and
  linear layer quantised;
- *chosen because*: bf16 and batching (measured by the probe), the update compiled on a GPU (on
  one H100 STAM's compiled step took 1.5 ms against 4.5 ms eager, for about 17 s of compilation
  once: ``dnn_optim_speed_h100.json``), cuDNN's autotuner and TF32 matrix products (fixed shapes),
  the evaluation batch, the seeds.

Every accuracy is measured with BatchNorm statistics re-estimated for the weights evaluated (issue
34: the trainer's ``bn_images``, ``--bn-images``, default 2,500 training images); the binary
validation accuracy with the statistics as trained is kept beside it as a diagnostic
(``val_acc_binary_as_trained``); ``settings.bn_statistics`` says the protocol in words.

On one GPU (docs/benchmarks.md: what to carry and the one command)::

    python benchmarks/gpu_width1.py --out benchmarks/results/gpu_width1

A dry run on the CPU (tests/test_benchmarks.py runs one on a tiny collection of its own)::

    python benchmarks/gpu_width1.py --device cpu --width 0.0625 --epochs 1 --max-train 64 --out /tmp/w1
"""

from __future__ import annotations

import time

T0 = time.monotonic()  # the budget counts from here

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from stam.dnn import batched, catalog, presets  # noqa: E402
from stam.dnn import data as data_mod  # noqa: E402
from stam.dnn import epochs as ep  # noqa: E402
from stam.dnn.catalog import VAL_FRACTION  # noqa: E402
from stam.dnn.tune import TUNE  # noqa: E402
from stam.dnn.tunestats import paired_differences, paired_text  # noqa: E402
from stam.dnn.wide import stack_runs  # noqa: E402
from stam.dnn.params import bn_images_int, width_float  # noqa: E402
from stam.errors import UsageError, positive_float, positive_int  # noqa: E402
from stam.io import atomic_write_json, check_out_dir, provenance  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: where the tuned settings come from: the finished tuning of the CIFAR-10 study the toolkit reports
#: (VGG-11 at width 1/8, 45 epochs, 16 trials halved by 3, warmup-cosine schedules, BatchNorm statistics
#: re-estimated on 2,500 cropped and flipped training images): each algorithm's chosen setting
TUNED = ROOT / "benchmarks" / "results" / "cifar10_deciding_augmented_cpu" / "tune" / "tune-cifar10.json"
#: the JPEG copy, copied beside the code into a folder git ignores (.gitignore)
DATA = ROOT / ".gpu-data" / "cifar10-jpeg.tar.gz"
RESULT = "gpu_width1.json"
#: the algorithms in the order they are trained; the last two only where the time allows
ALGOS = ("stam", "bc", "float", "br", "psgd")
OPTIONAL = ("br", "psgd")
#: seconds kept for what follows the training (the update's timing, the JSON)
FINISH_S = 20.0
#: the round's estimate is multiplied by this before the epochs are planned (an epoch of the whole
#: training set costs a little more than the warm-up's batches predict: the evaluation's last chunk,
#: the generators)
SAFETY = 1.15
#: the issue's targets on one H100
TARGETS = {"stam_over_float_images_per_s": 0.9, "stam_run_epoch_s": 1.0}


def elapsed() -> float:
    return time.monotonic() - T0


def sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device):
    """``(fn(), seconds)``, the device synchronised before and after."""
    sync(device)
    t = time.perf_counter()
    out = fn()
    sync(device)
    return out, time.perf_counter() - t


def per_call_ms(fn, device, calls: int, rounds: int = 3) -> float:
    """Milliseconds per call of ``fn`` (``calls`` calls back to back, the device synchronised at the
    ends, as in a training loop), best of ``rounds``, after two untimed calls."""
    fn()
    fn()
    return min(timed(lambda: [fn() for _ in range(calls)], device)[1] for _ in range(rounds)) * 1e3 / calls


# --------------------------------------------------------------------------- settings

def transferred_settings(path: Path, algos) -> dict:
    """Each algorithm's tuned overrides, what the study trained, and whether its trials were scored
    with BatchNorm statistics of the weights evaluated (issue 34; else the settings are provisional).

    ``path`` is a ``stam tune`` result (read through its result type: each algorithm's best trial)
    or the job store of a tuning still under way (a folder of ``job-result`` files, read through
    their result type): there each algorithm's setting is the one its final-stage jobs train (the
    tuner's choice on validation accuracy), else its trial with the best validation score."""
    if path.is_dir():
        return _from_job_store(path, algos)
    tune = TUNE.read(path)
    best = {a["algo"]: a["best"]["overrides"] for a in tune["algorithms"] if a.get("best")}
    missing = [a for a in algos if a not in best]
    if missing:
        raise UsageError(f"--settings {path}: no tuned setting for {', '.join(missing)}; it has {', '.join(best) or 'none'}")
    study = {k: tune["params"].get(k, tune.get(k)) for k in ("model", "width", "epochs", "batch_size", "trials", "seeds")}
    bn = tune.get("bn_images") or 0
    return {"file": _repo_relative(path), "study": study, "overrides": {a: best[a] for a in algos}, "provisional": not bn,
            "scored": catalog.bn_protocol(bn, None, catalog.bn_augmented(tune["params"]))}


def _repo_relative(path: Path) -> str:
    return str(path.resolve().relative_to(ROOT)) if path.resolve().is_relative_to(ROOT) else str(path)


def _from_job_store(store: Path, algos) -> dict:
    """:func:`transferred_settings` from a tuning's job store (its ``jobs`` folder, or a folder
    holding ``tune/jobs``)."""
    from stam.jobs import JOB_RECORD

    if (store / "tune" / "jobs").is_dir():
        store = store / "tune" / "jobs"
    finals, trials, scores, specs = {}, {}, {}, []
    for f in sorted(store.glob("*.json")):
        try:
            rec = JOB_RECORD.read(f)
        except UsageError:
            continue  # not a job this toolkit wrote: never trusted
        spec, rows = rec["spec"], rec["result"].get("rows") or []
        if not isinstance(spec, dict) or spec.get("algo") not in algos or not rows:
            continue
        specs.append(spec)
        over = spec.get("overrides") or [{}]
        if spec.get("stage") == "final":
            finals.setdefault(spec["algo"], []).append(over[0])
        elif spec.get("stage") == "trial":
            score = rows[0].get("score")
            if isinstance(score, (int, float)):
                scores[(spec["algo"], json.dumps(over[0], sort_keys=True))] = float(score)
                if score > trials.get(spec["algo"], (-1.0, None))[0]:
                    trials[spec["algo"]] = (float(score), over[0])

    def trial_score(algo, over):
        return scores.get((algo, json.dumps(over, sort_keys=True)), float("-inf"))

    # a store may hold the finals of several tunings (a search space changed between them): the
    # final-stage setting whose trial scored best on validation
    best = {a: max(finals[a], key=lambda o: trial_score(a, o)) if a in finals else trials[a][1]
            for a in algos if a in finals or a in trials}
    missing = [a for a in algos if a not in best]
    if missing:
        raise UsageError(f"--settings {store}: no tuned setting for {', '.join(missing)}; it has {', '.join(best) or 'none'}")
    first = specs[0]
    study = {k: first.get(k) for k in ("model", "width", "epochs", "batch_size")}
    study["trials"] = {a: sum(s.get("stage") == "trial" and s.get("algo") == a for s in specs) for a in algos}
    study["chosen_by"] = {a: "the final-stage setting whose trial scored best on validation" if a in finals else
                          "its best trial's validation score"
                          for a in algos}
    bn = first.get("bn_images") or 0
    return {"file": _repo_relative(store), "study": study, "overrides": best, "provisional": not bn,
            "scored": catalog.bn_protocol(bn, None, catalog.bn_augmented(first))}


def configs(algo: str, overrides: dict, seeds, epochs: int) -> list[batched.Config]:
    """The runs of ``algo`` with its transferred overrides, its schedules mapped onto ``epochs``
    epochs as the study mapped them onto its own (``schedule_scale`` auto)."""
    preset = presets.resolve(None, algo, "cifar10", overrides, "auto", epochs)
    return [batched.Config(preset, s) for s in seeds]


# --------------------------------------------------------------------------- 2. the probe

def network_step_ms(task, seeds, batch_size: int, bf16: bool, steps: int, device) -> float:
    """Milliseconds of one forward and backward pass of ``len(seeds)`` networks as one wide network
    (the trainer's input layout and autocast; no update, no data pipeline)."""
    cfgs = configs("float", {}, seeds, 1)
    tr = batched.Trainer(cfgs, task, batch_size, device=device, compile=False, bf16=bf16)
    data, R = task.data, len(seeds)
    x = data.normalise(data.train_x[:batch_size])
    if R > 1:  # distinct seeds: every run its own images, side by side in the channels
        x = stack_runs(x.unsqueeze(0).expand(R, *x.shape).contiguous())
    x = x.contiguous(memory_format=tr.memory_format)
    y = data.train_y[:batch_size].expand(R, -1)
    leaves = {n: w.detach().requires_grad_(True) for n, w in tr.weights("forward").items()}

    def step():
        with tr.autocast():
            out = tr.net.wide.call_with(leaves, x)
        loss = F.cross_entropy(out.float().flatten(0, 1), y.flatten())
        torch.autograd.grad(loss, list(leaves.values()))

    return per_call_ms(step, device, steps)


# --------------------------------------------------------------------------- 3-4. training

def subset(data: data_mod.ImageData, n: int) -> data_mod.ImageData:
    """``data`` with ``n`` of its training images, evenly spaced (the images are ordered by class:
    every class is in), the same validation and test images."""
    idx = torch.linspace(0, len(data.train_x) - 1, min(n, len(data.train_x)), device=data.train_x.device).round().long()
    return data_mod.ImageData(data.name, data.train_x[idx], data.train_y[idx], data.test_x, data.test_y, data.num_classes,
                              data.augment, val_x=data.val_x, val_y=data.val_y, source=data.source)


def evaluate(tr: batched.Trainer) -> dict:
    """The epoch's accuracies (percent, per run): validation and test, binary and float weights,
    each with BatchNorm statistics of the weights measured (:meth:`stam.dnn.batched.Trainer.accuracies`,
    issue 34), and the binary validation accuracy with the statistics as trained (a diagnostic)."""
    rec = {}
    for which in ("binary", "float"):
        rec.update({f"{split}_acc_{which}": acc for split, acc in tr.accuracies(("val", "test"), which).items()})
    if tr.bn_images:
        rec["val_acc_binary_as_trained"] = tr.accuracies(("val",), "binary", as_trained=True)["val"]
    return rec


def warm_up(algo, overrides, seeds, task, args, device) -> dict:
    """One trainer of ``algo`` on the warm-up batches: its update compiled (the first epoch), then
    one epoch and one evaluation timed; its peak memory."""
    n = min(len(task.data.train_x), args.warmup_steps * args.batch_size)
    small = batched.Task(subset(task.data, n), task.model, task.width)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    tr = batched.Trainer(configs(algo, overrides, seeds, 1), small, args.batch_size, device=device, compile=args.compile_on,
                         bf16=args.bf16_on, eval_batch_size=args.eval_batch_size, bn_images=args.bn_images)
    _, first_s = timed(lambda: tr.train_epoch(1), device)
    evaluate(tr)
    _, train_s = timed(lambda: tr.train_epoch(2), device)
    _, eval_s = timed(lambda: evaluate(tr), device)
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    return {"steps": tr.steps, "first_epoch_s": first_s, "train_s": train_s, "eval_s": eval_s, "peak_bytes": peak}


def train_rounds(groups, epochs: int, deadline: float, device, log) -> tuple[int, str | None]:
    """Every group's trainer one epoch per round, each epoch evaluated, for ``epochs`` rounds; a
    round is not started when the last one would not fit before ``deadline`` (seconds since T0).
    Returns the epochs done and why it stopped early (None)."""
    last = 0.0
    for epoch in range(1, epochs + 1):
        if epoch > 1 and elapsed() + SAFETY * last > deadline:
            return epoch - 1, f"budget: round {epoch} would end at {elapsed() + last:.0f} s, after the deadline {deadline:.0f} s"
        t_round = time.monotonic()
        for g in groups:
            tr = g["trainer"]
            res, train_s = timed(lambda: tr.train_epoch(epoch), device)
            finite = tr.finite().tolist()
            rec, eval_s = timed(lambda: evaluate(tr), device)
            rec = {"epoch": epoch, "train_loss": res.train_loss, "train_acc": res.train_acc, **rec}
            rec = {k: (v.tolist() if torch.is_tensor(v) else v) for k, v in rec.items()}
            g["times"].append({"epoch": epoch, "train_s": train_s, "eval_s": eval_s, "images": res.seen * tr.R})
            for r, run in enumerate(g["runs"]):
                if run["diverged_epoch"] is None and ep.diverged(rec["train_loss"][r], finite[r]):
                    run["diverged_epoch"] = epoch
                if run["diverged_epoch"] is None:
                    run["log"].append({k: (v[r] if isinstance(v, list) else v) for k, v in rec.items()})
        last = time.monotonic() - t_round
        log(f"epoch {epoch}/{epochs}: {last:.1f} s, at {elapsed():.0f} s of {deadline:.0f}")
    return epochs, None


# --------------------------------------------------------------------------- 5. measurements

def throughput(groups, algo: str) -> dict | None:
    """Images per second of ``algo``'s training (every run's images over the training seconds of
    the epochs after the first, or of the first where there is only one), and the seconds of one
    run's epoch at that rate."""
    times = [t for g in groups if g["algo"] == algo for t in g["times"]]
    later = [t for t in times if t["epoch"] > 1] or times
    if not later:
        return None
    ips = sum(t["images"] for t in later) / sum(t["train_s"] for t in later)
    n_train = len(groups[0]["trainer"].data.train_x)
    return {"images_per_s": ips, "run_epoch_s": n_train / ips, "epochs_timed": sorted({t["epoch"] for t in later}),
            "train_s": [t["train_s"] for t in times], "eval_s": [t["eval_s"] for t in times]}


def update_vs_sgd(tr: batched.Trainer, task, args, device) -> dict:
    """STAM's update of every layer of the trainer's runs (as trained, and eager) against one
    ``torch.optim.SGD`` step with momentum 0.9 (foreach, weight decay 1e-7) on the same parameters
    (every weight of the R runs), on fixed random gradients; milliseconds per call."""
    def stam_call(t):
        hyper = batched._hyper_at(t.configs, 1, device)
        gw = [torch.randn_like(t.rule.forward_weights(st)) * 1e-3 for st in t.state]
        gf = torch.randn_like(t.floats) * 1e-3
        return lambda: t._step(t.state, t.floats, t.fmom, gw, gf, hyper, t.qs)

    eager = batched.Trainer(tr.configs, task, args.batch_size, device=device, compile=False)
    params = [w.detach().clone().requires_grad_(True) for w in tr.weights("forward").values()]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    sgd = torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-7, foreach=True)
    with ep.flush_denormal():  # as in training (on a CPU the trained state's subnormal numbers would dominate)
        out = {"runs": tr.R, "parameters": sum(p.numel() for p in params), "calls": args.update_calls,
               "stam_ms": per_call_ms(stam_call(tr), device, args.update_calls),
               "stam_eager_ms": per_call_ms(stam_call(eager), device, args.update_calls),
               "torch_sgd_momentum_ms": per_call_ms(sgd.step, device, args.update_calls),
               "stam_compiled": bool(args.compile_on)}
    out["stam_over_sgd"] = out["stam_ms"] / out["torch_sgd_momentum_ms"]
    return out


def summary(runs, num_classes: int, n_test: int) -> dict:
    """Per algorithm: each run's test accuracy at its validation-selected epoch (binary weights;
    Float: float weights; :func:`stam.dnn.epochs.select_epoch`) and at the last epoch; whether it
    is at chance (:func:`stam.dnn.catalog.at_chance`)."""
    out = {}
    for run in runs:
        key = catalog.algorithm(run["algo"]).score_key
        sel = ep.select_epoch(run["log"], key)
        run["selected_epoch"] = sel["epoch"] if sel else None
        run["test_acc_selected"] = sel[key.replace("val", "test")] if sel else None
        run["test_acc_last"] = run["log"][-1][key.replace("val", "test")] if run["log"] else None
        s = out.setdefault(run["algo"], {"label": run["label"], "measure": key.replace("val", "test"), "seeds": [],
                                         "test_acc_selected": [], "test_acc_last": [], "diverged": 0,
                                         "at_chance": []})
        s["seeds"].append(run["seed"])
        s["test_acc_selected"].append(run["test_acc_selected"])
        s["test_acc_last"].append(run["test_acc_last"])
        s["diverged"] += run["diverged_epoch"] is not None
        s["at_chance"].append(catalog.at_chance(run["test_acc_selected"], num_classes, n_test))
    for s in out.values():
        accs = [a for a in s["test_acc_selected"] if a is not None]
        s["mean"] = statistics.fmean(accs) if accs else None
        s["std"] = statistics.stdev(accs) if len(accs) > 1 else None
    return out


def paired(summ: dict) -> list[dict]:
    """STAM - BC and STAM - BR (:data:`stam.dnn.tunestats.PAIRED`), points of test accuracy at the selected epochs,
    matched by seed (every algorithm trains the same seeds: the same initial draws, data order and augmentation),
    with their mean, spread and 95% t-interval, as ``stam tune`` states its own
    (:func:`stam.dnn.tunestats.paired_differences`)."""
    finals = [{"algo": a, "final": {"seeds": s["seeds"], "test_acc": s["test_acc_selected"]}} for a, s in summ.items()]
    return paired_differences({"algorithms": finals})


# --------------------------------------------------------------------------- 6. the result

def table(result: dict) -> str:
    s, tp, upd = result["summary"], result["throughput"], result["update"]
    st = result["settings"]
    lines = [f"{catalog.MODELS[st['model']]} x{st['width']:g} on CIFAR-10 (JPEG copy), {result['device']['name']}: {st['epochs_done']} epochs "
             f"(planned {st['epochs']}), batch {st['batch_size']}, bf16 {'on' if st['bf16'] else 'off'}, seeds "
             f"{'batched' if st['batch_seeds'] else 'one by one'}; {st['bn_statistics']}; {result['seconds']['total']:.0f} s",
             f"{'algorithm':<10} {'test acc. (sel. epoch)':<24} {'per seed':<22} {'images/s':>10} {'epoch s/run':>12}"]
    for algo, row in s.items():
        mean = "-" if row["mean"] is None else f"{row['mean']:.2f}" + ("" if row["std"] is None else f" ± {row['std']:.2f}")
        seeds = ", ".join("-" if a is None else f"{a:.1f}" + " (chance)" * c for a, c in zip(row["test_acc_selected"], row["at_chance"]))
        t = tp.get(algo)
        lines.append(f"{row['label']:<10} {mean:<24} {seeds:<22} {t['images_per_s'] if t else 0:>10.0f} "
                     f"{t['run_epoch_s'] if t else 0:>12.2f}")
    for d in result["paired"]:
        lines.append(f"paired over {d['seeds']} seeds: {paired_text(d)} points"
                     + ("" if d.get("ci95") else " (no interval from fewer than 3 distinct values)"))
    if upd and "error" in upd:
        lines.append(f"STAM update not timed: {upd['error']}")
    elif upd:
        lines.append(f"STAM update {upd['stam_ms']:.2f} ms ({'compiled' if upd['stam_compiled'] else 'eager'}; eager "
                     f"{upd['stam_eager_ms']:.2f} ms) against torch.optim.SGD with momentum {upd['torch_sgd_momentum_ms']:.2f} ms "
                     f"({upd['stam_over_sgd']:.1f}x), {upd['runs']} run(s)")
    tg = result["targets"]
    if tg["stam_over_float_images_per_s"]["value"] is not None:
        lines.append(f"STAM's images/s over Float's {tg['stam_over_float_images_per_s']['value']:.2f} (target >= 0.9), a STAM epoch "
                     f"of one run {tg['stam_run_epoch_s']['value']:.2f} s (target <= 1.0 s): the issue's targets on one H100")
    mem = result["memory"]["peak_bytes"]
    if mem is not None:
        lines.append(f"peak GPU memory {mem / 2**30:.2f} GiB")
    if result["skipped"]:
        lines.append("skipped: " + "; ".join(result["skipped"]))
    return "\n".join(lines)


def fail(ap, message: str):
    """A mistake in the command: one line ``gpu_width1.py: error: ...``, exit 2, nothing written."""
    ap.exit(2, f"{ap.prog}: error: {message}\n")


def parse(argv):
    ap = argparse.ArgumentParser(prog="gpu_width1.py", description=__doc__.split("\n\n")[0])
    ap.error = lambda message: fail(ap, message)  # a bad value: one line, as the toolkit's own commands
    ap.add_argument("--out", required=True, help=f"folder for {RESULT}")
    ap.add_argument("--data", default=str(DATA), help="the JPEG copy of CIFAR-10 (archive or folder; default %(default)s)")
    ap.add_argument("--settings", default=str(TUNED), help="the stam tune result whose best trials are transferred")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget-s", type=positive_float, default=420.0, help="wall seconds for everything (default 420: 7 minutes)")
    ap.add_argument("--epochs", type=int, default=None, help="fixed epochs (default: as many as fit the budget)")
    ap.add_argument("--min-epochs", type=int, default=8, help="drop BR and PSGD when fewer epochs fit with them (default 8)")
    ap.add_argument("--algos", default=",".join(ALGOS))
    ap.add_argument("--seeds", type=int, default=3,
                    help="paired seeds, the same for every algorithm (default 3: the fewest that give STAM - BC and STAM - BR "
                    "an interval)")
    ap.add_argument("--width", type=width_float, default=1.0)
    ap.add_argument("--model", choices=("vgg11", "vgg16", "resnet18"), default="vgg11",
                    help="the network (default vgg11, the tuned one; another model's settings are transferred, labelled so)")
    ap.add_argument("--batch-size", type=int, default=presets.paper_batch_size())
    ap.add_argument("--bf16", choices=("auto", "on", "off"), default="auto")
    ap.add_argument("--batch-seeds", choices=("auto", "on", "off"), default="auto")
    ap.add_argument("--compile", choices=("auto", "on", "off"), default="auto", help="the update: auto = on a GPU")
    ap.add_argument("--bn-images", type=bn_images_int, default=catalog.BN_IMAGES,
                    help="training images BatchNorm's statistics are re-estimated on for every evaluation (default %(default)s; 0: as trained)")
    ap.add_argument("--eval-batch-size", type=int, default=2500)
    ap.add_argument("--max-train", type=positive_int, default=None, help="train on the first N training images only (dry runs)")
    ap.add_argument("--probe-steps", type=int, default=30)
    ap.add_argument("--warmup-steps", type=int, default=40)
    ap.add_argument("--update-calls", type=int, default=50)
    args = ap.parse_args(argv)
    algos = args.algos.split(",")
    bad = [a for a in algos if a not in catalog.NAMES]
    if bad or not algos or len(set(algos)) != len(algos):
        fail(ap, f"--algos {args.algos!r}: give distinct names of {', '.join(catalog.NAMES)}")
    for flag in ("seeds", "batch_size", "probe_steps", "warmup_steps", "update_calls", "eval_batch_size", "min_epochs"):
        if getattr(args, flag) < 1:
            fail(ap, f"--{flag.replace('_', '-')} {getattr(args, flag)}: give a number >= 1")
    if args.epochs is not None and args.epochs < 1:
        fail(ap, f"--epochs {args.epochs}: give a number >= 1")
    args.algos = algos
    return ap, args


def main(argv=None) -> dict:
    ap, args = parse(argv)
    log = lambda msg: print(f"[{elapsed():6.1f} s] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    try:
        out = check_out_dir(args.out)
        try:
            device = torch.device(args.device)
        except RuntimeError:
            raise UsageError(f"--device {args.device!r}: not a torch device (cuda, cuda:N or cpu)") from None
        if device.type == "cuda" and not torch.cuda.is_available():
            raise UsageError(f"--device {args.device}: no CUDA device here (a dry run: --device cpu)")
        tuned = transferred_settings(Path(args.settings), args.algos)
        if not Path(args.data).exists():
            raise UsageError(f"--data {args.data}: not found; copy cifar10-jpeg.tar.gz there (docs/benchmarks.md)")
        # ------------------------------------------------------------ 1. the data
        task, load_s = timed(lambda: batched.load_task("cifar10", args.model, args.width, VAL_FRACTION, 0, data_dir=args.data,
                                                       device=device), device)
    except UsageError as exc:
        fail(ap, str(exc))
    if args.max_train is not None:
        task = batched.Task(subset(task.data, args.max_train), task.model, task.width)
    data = task.data
    log(f"data: {len(data.train_x)} training, {len(data.val_x)} validation, {len(data.test_x)} test images in {load_s:.1f} s")
    if device.type == "cuda":  # chosen because the shapes are fixed: cuDNN's autotuner and TF32 products pay
        torch.backends.cudnn.benchmark = True
        torch.set_float32_matmul_precision("high")
    args.compile_on = args.compile == "on" or (args.compile == "auto" and device.type == "cuda")
    seeds = list(range(args.seeds))

    # ---------------------------------------------------------------- 2. the probe: bf16? the seeds as one network?
    t = time.monotonic()
    probe = {"float32_R1_ms": network_step_ms(task, seeds[:1], args.batch_size, False, args.probe_steps, device),
             "bf16_R1_ms": network_step_ms(task, seeds[:1], args.batch_size, True, args.probe_steps, device)}
    args.bf16_on = args.bf16 == "on" or (args.bf16 == "auto" and probe["bf16_R1_ms"] < probe["float32_R1_ms"])
    one = probe["bf16_R1_ms" if args.bf16_on else "float32_R1_ms"]
    if len(seeds) > 1:
        probe[f"wide_R{len(seeds)}_ms"] = network_step_ms(task, seeds, args.batch_size, args.bf16_on, args.probe_steps, device)
        wide_pays = probe[f"wide_R{len(seeds)}_ms"] < len(seeds) * one
    else:
        wide_pays = False
    args.batch_seeds_on = len(seeds) > 1 and (args.batch_seeds == "on" or (args.batch_seeds == "auto" and wide_pays))
    probe["seconds"] = time.monotonic() - t
    log(f"probe: {json.dumps({k: round(v, 3) for k, v in probe.items()})}; bf16 {args.bf16_on}, seeds batched {args.batch_seeds_on}")

    # ---------------------------------------------------------------- 3. warm-up and the epochs that fit
    groups_of = lambda algo: [seeds] if args.batch_seeds_on else [[s] for s in seeds]  # noqa: E731
    warm = {}
    for algo in args.algos:
        warm[algo] = warm_up(algo, tuned["overrides"][algo], groups_of(algo)[0], task, args, device)
        log(f"warm-up {algo}: {json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in warm[algo].items()})}")
    full_steps = ep.steps_per_epoch(len(data.train_x), args.batch_size)

    def round_s(algos):
        return sum(len(groups_of(a)) * (warm[a]["train_s"] * full_steps / warm[a]["steps"] + warm[a]["eval_s"]) for a in algos)

    deadline = args.budget_s - FINISH_S
    algos, skipped = list(args.algos), []
    fit = lambda algos: int((deadline - elapsed()) / (SAFETY * round_s(algos)))  # noqa: E731
    if args.epochs is None and fit(algos) < args.min_epochs and any(a in OPTIONAL for a in algos):
        dropped = [a for a in algos if a in OPTIONAL]
        skipped.append(f"{', '.join(dropped)}: with them {fit(algos)} epochs fit, fewer than --min-epochs {args.min_epochs}")
        algos = [a for a in algos if a not in OPTIONAL]
    epochs = args.epochs or max(1, fit(algos))
    log(f"plan: {epochs} epochs of {', '.join(algos)} (a round about {round_s(algos):.1f} s; {deadline - elapsed():.0f} s left)")

    # ---------------------------------------------------------------- 4. training
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    groups = []
    for algo in algos:
        for gseeds in groups_of(algo):
            cfgs = configs(algo, tuned["overrides"][algo], gseeds, epochs)
            tr = batched.Trainer(cfgs, task, args.batch_size, epochs=epochs, device=device, compile=args.compile_on,
                                 bf16=args.bf16_on, eval_batch_size=args.eval_batch_size, bn_images=args.bn_images)
            runs = [{"algo": algo, "label": catalog.algorithm(algo).label, "seed": s, "log": [], "diverged_epoch": None}
                    for s in gseeds]
            groups.append({"algo": algo, "trainer": tr, "runs": runs, "times": []})
    t = time.monotonic()
    done, stopped = train_rounds(groups, epochs, deadline, device, log)
    train_s = time.monotonic() - t
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None

    # ---------------------------------------------------------------- 5. measurements
    tp = {a: throughput(groups, a) for a in algos}
    stam_group = next((g for g in groups if g["algo"] == "stam"), None)
    try:  # a failure here keeps the training's results
        upd = update_vs_sgd(stam_group["trainer"], task, args, device) if stam_group else None
    except RuntimeError as exc:  # torch.OutOfMemoryError among them
        upd = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
    runs = [run for g in groups for run in g["runs"]]
    bn_augment = catalog.BN_AUGMENT if data.augment else None  # the trainers' default rule
    bn_text = catalog.bn_protocol(args.bn_images, len(data.train_x), bn_augment)
    ratio = tp["stam"]["images_per_s"] / tp["float"]["images_per_s"] if tp.get("stam") and tp.get("float") else None

    # ---------------------------------------------------------------- 6. the result
    result = {
        "kind": "benchmark", "name": "gpu_width1", "provenance": provenance(),
        "measured_on_gpu": device.type == "cuda",
        "device": {"type": device.type, "name": torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (dry run)",
                   "torch": torch.__version__, "cuda": torch.version.cuda,
                   "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None},
        "data": {"source": data.source, "train": len(data.train_x), "val": len(data.val_x), "test": len(data.test_x)},
        "settings": {"model": args.model, "width": args.width, "batch_size": args.batch_size, "seeds": seeds, "algos": algos,
                     "epochs": epochs, "epochs_done": done, "stopped": stopped, "budget_s": args.budget_s, "bf16": args.bf16_on,
                     "batch_seeds": args.batch_seeds_on, "compile": args.compile_on, "eval_batch_size": args.eval_batch_size,
                     "bn_images": args.bn_images, "bn_augment": bool(bn_augment), "bn_statistics": bn_text, "val_fraction": VAL_FRACTION, "split_seed": 0,
                     "keep_float": [], "max_train": args.max_train},
        "settings_from": {"file": tuned["file"], "study": tuned["study"], "provisional": tuned["provisional"]},
        "choices": [
            {"setting": "hyperparameters", "value": tuned["overrides"], "why": f"transferred: the chosen setting of each algorithm in "
             f"{tuned['file']} ({tuned['study']}), schedules mapped onto this run's epochs (schedule_scale auto); trials scored with "
             f"{tuned['scored']}" + ("; provisional: the trials were not scored on the binary networks' own BatchNorm statistics "
                                     "(issue 34)" if tuned["provisional"] else "")},
            {"setting": "batch_size", "value": args.batch_size, "why": "transferred: the paper's and the study's"},
            {"setting": "quantised layers", "value": "every conv and linear layer", "why": "transferred: as in the study"},
            {"setting": "bf16", "value": args.bf16_on, "why": "chosen because " + ("given" if args.bf16 != "auto" else
             f"the probe's step took {probe['bf16_R1_ms']:.3f} ms with bf16 autocast, {probe['float32_R1_ms']:.3f} ms without")},
            {"setting": "batch_seeds", "value": args.batch_seeds_on, "why": "chosen because " + (
             "given" if args.batch_seeds != "auto" or len(seeds) == 1 else
             f"the probe's step of the {len(seeds)} seeds as one network took {probe.get(f'wide_R{len(seeds)}_ms', 0):.3f} ms, "
             f"one network {one:.3f} ms")},
            {"setting": "compile", "value": args.compile_on, "why": "chosen because " + ("given" if args.compile != "auto" else
             "on a GPU STAM's compiled update took 1.5 ms against 4.5 ms eager on one H100 (dnn_optim_speed_h100.json), "
             "for about 17 s of compilation once" if device.type == "cuda" else "a CPU dry run is too short to pay for compilation")},
            {"setting": "cudnn.benchmark and TF32 matmul", "value": device.type == "cuda", "why": "chosen because the shapes are fixed"},
            {"setting": "epochs", "value": epochs, "why": "given" if args.epochs else
             f"chosen because that many rounds fit the budget of {args.budget_s:g} s after the warm-up"},
        ],
        "hyperparameters": {g["algo"]: {"first_epoch": g["trainer"].configs[0].preset.at(1),
                                        "last_epoch": g["trainer"].configs[0].preset.at(epochs)} for g in groups},
        "probe": probe, "warm_up": warm, "skipped": skipped,
        "runs": runs, "summary": (summ := summary(runs, data.num_classes, len(data.test_x))), "paired": paired(summ),
        "throughput": tp, "update": upd,
        "memory": {"peak_bytes": peak, "warm_up_peak_bytes": {a: w["peak_bytes"] for a, w in warm.items()}},
        "targets": {k: {"target": v, "value": x, "met": None if x is None else (x >= v if k.endswith("images_per_s") else x <= v),
                        "note": "the issue's targets, for one H100"}
                    for (k, v), x in zip(TARGETS.items(), (ratio, tp["stam"]["run_epoch_s"] if tp.get("stam") else None))},
        "seconds": {"load": load_s, "probe": probe["seconds"], "training": train_s},
    }
    result["seconds"]["total"] = elapsed()
    atomic_write_json(out / RESULT, result)
    print(table(result))
    return result


if __name__ == "__main__":
    main()
