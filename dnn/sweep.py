"""Many trainings as jobs: the job function shared by ``stam tune`` and ``stam map``, and the
network half of the convergence map (digits by default, any data set and model).

A job is a JSON-able spec (so :func:`stam.jobs.run_jobs` can store it, resume it and send it to a
Dask worker): one algorithm, a list of preset overrides and seeds (one training each), the data
set, the model and its width, the epochs, the batch size and the validation split.  :func:`run_job` trains them as one batched
computation (:func:`stam.dnn.batched.train_batched`) and returns what selection needs: each run's
validation-selected epoch and score, its divergence, the sign-flip diagnostic and, only when the
spec asks for it (final runs of a tuning), the test accuracy at the selected epoch.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
from dataclasses import KW_ONLY, dataclass

from stam.dnn import presets
from stam.dnn.catalog import BN_IMAGES, VAL_FRACTION, algorithm
from stam.dnn.epochs import select_epoch
from stam.jobs import run_jobs
from stam.results import FRAC_OR_NULL, LIST, NONNEG_OR_NULL, PCT_OR_NULL, POSINT_OR_NULL, ResultType, Schema


#: what a job trains when its spec does not say (the defaults of ``stam tune`` and ``stam map``)
TASK_DEFAULTS = {"dataset": "digits", "model": "mlp", "width": 1.0, "data_dir": "data"}


def task_spec(dataset: str = "digits", model: str = "mlp", width: float = 1.0, data_dir: str = "data") -> dict:
    """The part of a job spec that says what is trained on what."""
    return {"dataset": dataset, "model": model, "width": float(width), "data_dir": str(data_dir)}


def check_task(task: dict, val_fraction: float | None = None, split_seed: int = 0) -> dict | None:
    """What a sweep trains, checked before any job runs: the data set loads, the model takes its
    images (one-line usage errors, :func:`stam.dnn.data.check_fits`) and the validation split
    ``val_fraction`` leaves training images of every class.  Returns which copy of the data set the
    jobs read (kind, SHA-256, ...), as the loader reports it (:func:`data_source`)."""
    from stam.dnn import data as data_mod
    from stam.dnn.models import build_model

    data = data_mod.load(task["dataset"], task["data_dir"])
    data_mod.check_fits(build_model(task["model"], data.num_classes, data.image_shape, task["width"]), task["model"], data)
    if val_fraction:
        data_mod.split_validation(data, val_fraction, split_seed)
    _SIZES[task["dataset"], str(task["data_dir"])] = len(data.train_x)
    _SHAPES[task["dataset"], str(task["data_dir"])] = (data.num_classes, tuple(data.image_shape))
    source = getattr(data, "source", None)
    _SOURCES[task["dataset"], str(task["data_dir"])] = source
    return source


#: the data source and the training images of each (data set, folder) a check has loaded in this process
_SOURCES: dict = {}
_SIZES: dict = {}
_SHAPES: dict = {}


def _shape(task: dict) -> tuple:
    """The classes and image shape of the task's data set: what :func:`check_task` found, or the loader's."""
    key = (task["dataset"], str(task["data_dir"]))
    if key not in _SHAPES:
        from stam.dnn import data as data_mod

        data = data_mod.load(*key)
        _SHAPES[key] = (data.num_classes, tuple(data.image_shape))
    return _SHAPES[key]


def work_cost(task: dict) -> float:
    """One image pass of the task's network in units of the paper's VGG-11 at width 1, at least 1
    (:func:`stam.dnn.models.relative_cost`): what the work limit (:func:`stam.dnn.epochs.check_work`)
    multiplies the image passes by, so that ``--width`` counts."""
    from stam.dnn.models import relative_cost

    classes, shape = _shape(task)
    return relative_cost(task["model"], classes, shape, task["width"])


#: copies of the parameters a training holds (weights, gradients, the quantised and float copies and
#: the optimiser's states of eq. (alg:stamm)); an estimate, on the high side
PARAM_COPIES = 8
#: copies of a batch's activations a training holds (the forward pass's outputs, their gradients and what
#: the backward pass keeps beside them) and what a training process holds beyond its networks (the
#: allocator's pools, a batch's augmented copy, the evaluation's buffers): fitted by least squares in the
#: relative error to the peak memory of 12 trainings of VGG-11 (widths 1/16 to 1/4, batch 64 and 128, R = 1
#: and 4; 2.23 and 50.5 MiB), ``benchmarks/memory_estimate.py`` (docs/benchmarks.md: the error)
ACTIVATION_COPIES = 2.25
TRAINING_FIXED_BYTES = 50 * 2**20


def memory_need(task: dict, batch_size: int, runs: int = 1) -> float:
    """Bytes a batched training of ``runs`` runs of the task's network at ``batch_size`` needs, about
    (:func:`memory_bytes_needed` of its data set's classes and image shape)."""
    classes, shape = _shape(task)
    return memory_bytes_needed(task["model"], classes, shape, task["width"], batch_size, runs)


def memory_bytes_needed(model: str, classes: int, shape, width: float, batch_size: int, runs: int = 1) -> float:
    """Bytes a batched training of ``runs`` runs of ``model`` at ``batch_size`` needs, about:
    :data:`PARAM_COPIES` float32 copies of the parameters and :data:`ACTIVATION_COPIES` of the
    activations of a batch for each run (:func:`stam.dnn.models.model_cost`), and
    :data:`TRAINING_FIXED_BYTES` (calibrated: ``benchmarks/memory_estimate.py``)."""
    from stam.dnn.models import model_cost

    cost = model_cost(model, classes, shape, width)
    return TRAINING_FIXED_BYTES + 4.0 * runs * (PARAM_COPIES * cost["params"] + ACTIVATION_COPIES * cost["activations"] * batch_size)


def check_memory(task: dict, batch_size: int, runs: int, device: str, force: bool) -> None:
    """A one-line :class:`UsageError` naming ``--width`` and ``--batch-size``, before any work, where
    :func:`memory_need` exceeds the memory of ``device`` (:func:`stam.dnn.models.memory_bytes`),
    unless ``force`` (the estimate is rough: ``--force`` runs it anyway)."""
    from stam.dnn.models import memory_bytes
    from stam.errors import UsageError

    need, have = memory_need(task, batch_size, runs), memory_bytes(device)
    if need > have and not force:
        raise UsageError(f"--width {task['width']:g} --batch-size {batch_size}: {task['model']} training {runs} run(s) at once "
                         f"needs about {need / 1e9:.3g} GB, more than the {have / 1e9:.3g} GB of the {device}; give a smaller "
                         "--width or --batch-size, or add --force")


def train_size(task: dict) -> int:
    """Training images of the task's data set (before a validation split): what :func:`check_task`
    found, or the loader's count."""
    key = (task["dataset"], str(task["data_dir"]))
    if key not in _SIZES:
        from stam.dnn import data as data_mod

        _SIZES[key] = len(data_mod.load(*key).train_x)
    return _SIZES[key]


def data_source(task: dict) -> dict | None:
    """Which copy of the data set the jobs read (kind, SHA-256, ...): what :func:`check_task` found,
    or, where no check ran in this process, what the loader reports."""
    key = (task["dataset"], str(task["data_dir"]))
    if key not in _SOURCES:
        from stam.dnn import data as data_mod

        _SOURCES[key] = getattr(data_mod.load(*key), "source", None)
    return _SOURCES[key]


def resolve(algo: str, overrides: dict | None, epochs: int, preset: str | None = None, dataset: str = "digits"):
    """The preset a job trains with: ``preset`` (default: the algorithm's default preset on
    ``dataset``) with ``overrides``, its 1000-epoch schedule scaled onto ``epochs``."""
    return presets.resolve(preset, algo, dataset, overrides or {}, "auto", epochs)


def score_key(algo: str) -> str:
    """What selects a trial or an epoch: binary validation accuracy (float for the float baseline)."""
    return algorithm(algo).score_key


@functools.lru_cache(maxsize=4)
def _task(dataset: str, model: str, width: float, data_dir: str, val_fraction: float, split_seed: int, device: str):
    """The task of a job, loaded once per process (jobs only read it)."""
    from stam.dnn import batched

    return batched.load_task(dataset, model, width, val_fraction, split_seed, data_dir, device)


def job_device() -> str:
    """Where a job trains: the GPU where there is one."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def check_job(result: dict, spec: dict, path) -> None:
    """A :class:`UsageError` naming ``path`` and the field unless ``result`` is what :func:`run_job`
    returns for ``spec``: its type :data:`NETWORK_JOB` (a score is a percentage or null, epochs
    from 1, ...), one row per configuration, and the test accuracies exactly where the spec asked
    for them (``run_jobs``' ``check``)."""
    from stam.errors import UsageError

    NETWORK_JOB.validate(result, path, "result.")
    runs = len(spec.get("overrides") or [])
    if len(result["rows"]) != runs:
        raise UsageError(f"{path}: field result.rows has {len(result['rows'])} rows for the {runs} trainings of its spec "
                         "(not a file this toolkit wrote, or damaged)")
    missing = [i for i, r in enumerate(result["rows"]) if spec.get("test") and "test_acc" not in r]
    if missing:
        raise UsageError(f"{path}: field result.rows[{missing[0]}].test_acc is missing (not a file this toolkit wrote, or damaged)")


def run_job(spec: dict) -> dict:
    """One job (module-level, so a Dask worker can run it): train the configurations of ``spec``
    as one batched computation and return, per configuration, its validation-selected epoch and
    accuracies (and the test accuracy at that epoch when ``spec["test"]``)."""
    from stam.dnn import batched

    what = {**TASK_DEFAULTS, **{k: spec[k] for k in TASK_DEFAULTS if k in spec}}
    device = job_device()
    task = _task(what["dataset"], what["model"], float(what["width"]), str(what["data_dir"]), spec["val_fraction"],
                 spec["split_seed"], device)
    configs = [batched.Config(resolve(spec["algo"], ov, spec["epochs"], spec.get("preset"), what["dataset"]), seed)
               for ov, seed in zip(spec["overrides"], spec["seeds"])]
    results = batched.train_batched(configs, task, spec["epochs"], spec["batch_size"], evaluate_test=spec["test"], device=device,
                                    bn_images=spec.get("bn_images", BN_IMAGES), bn_augment=bool(spec.get("bn_augment")))
    key = score_key(spec["algo"])
    out = []
    for res in results:
        best = select_epoch(res["log"], key)
        last = res["log"][-1] if res["log"] else None
        row = {"diverged_epoch": res["diverged_epoch"], "selected_epoch": best and best["epoch"],
               "score": best and best[key], "seconds": res["seconds"],
               "val_curve": [r.get(key) for r in res["log"]],
               "sign_ever": last and last["sign_ever"]}
        if best is not None and "val_acc_binary_as_trained" in best:  # the diagnostic: the training's own statistics
            row["score_as_trained"] = best["val_acc_binary_as_trained"]
        if best is not None and "val_acc_float" in best:  # the float weights x at the selected epoch (their own statistics)
            row["val_acc_float"] = best["val_acc_float"]
        if spec["test"]:
            row["test_acc"] = best and best[key.replace("val", "test")]
            row["test_acc_final"] = last and last[key.replace("val", "test")]
        out.append(row)
    return {"rows": out}



@dataclass(frozen=True)
class DigitsMap:
    """A network map's grid and trainings (:func:`map_digits`), in the order of its positional
    arguments: STAM on ``task`` (:func:`task_spec`; None: digits and the MLP) over the grid ``gammas x
    lams x betas`` (constant hyperparameters), ``seeds`` training seeds each (0, 1, ...), ``epochs``
    epochs of batches of ``batch_size``; then by keyword the validation split (``val_fraction``,
    ``split_seed``), the trainings per job (``chunk``) and ``spec``, laid over every job's spec
    (``stam map``: its parameters' :meth:`~stam.params.Params.spec`, every field marked ``job``)."""

    gammas: object
    lams: object
    betas: object
    seeds: int = 3
    epochs: int = 60
    batch_size: int = 32
    _: KW_ONLY
    val_fraction: float = VAL_FRACTION
    split_seed: int = 0
    chunk: int = 64
    task: dict | None = None
    spec: dict | None = None

    def grid(self) -> list[tuple[float, float, float]]:
        """The grid points ``(gamma, lam, beta)``, gamma fastest, then lambda, then beta: one row each."""
        return [(float(g), float(l), float(b)) for b in self.betas for l in self.lams for g in self.gammas]

    def base(self) -> dict:
        """What every job shares: STAM's, the keywords' (what is trained on what, how long), ``spec`` over them."""
        return {"algo": "stam", "epochs": self.epochs, "batch_size": self.batch_size, "val_fraction": self.val_fraction,
                "split_seed": self.split_seed, "test": False, "bn_images": BN_IMAGES, **(self.task or task_spec()),
                **(self.spec or {})}

    def job_specs(self) -> list[dict]:
        """Every job's spec: :meth:`base` and its cell, the grid points and seeds of at most ``chunk`` trainings."""
        runs = [(g, l, b, s) for (g, l, b) in self.grid() for s in range(self.seeds)]
        base = self.base()
        specs = []
        for i in range(0, len(runs), self.chunk):
            part = runs[i : i + self.chunk]
            specs.append({**base, "stage": "map", "overrides": [{"gamma": g, "lam": l, "beta": b} for g, l, b, _ in part],
                          "seeds": [s for *_, s in part]})
        return specs


def map_digits(gammas, *grid, store=None, scheduler: str | None = None, workers: int = 1, progress: bool = True,
               **fields) -> list[dict]:
    """STAM on a network over a grid: ``gammas`` a :class:`DigitsMap`, or its fields (``gammas, lams,
    betas, seeds, epochs, batch_size`` positional or by keyword, the others by keyword:
    ``map_digits([0.1], [0.5], [20.0], seeds=2, epochs=1)``).  One row per grid point: ``{gamma, lam,
    beta, seeds, metric (mean best binary validation accuracy, in percent, over the seeds that did not
    diverge; BatchNorm statistics of the binary weights, the spec's ``bn_images``), metric_std,
    metric_final (mean final-epoch binary validation accuracy, percent), metric_as_trained (the
    selected epochs' binary validation accuracy with the training's statistics, a diagnostic; None
    with ``bn_images`` 0), val_acc_float, val_acc_float_std (the float weights x of eq. (algx) at the
    selected epochs, BatchNorm statistics re-estimated for them; None where the jobs were stored
    before they recorded it), diverged (seeds), sign_ever_changed (mean fraction of binary weights whose
    sign ever changed)}``; seeds are common random numbers across the grid.  The jobs
    (:meth:`DigitsMap.job_specs`) run through :func:`stam.jobs.run_jobs` (stored in ``store``,
    resumable; ``scheduler``: a Dask cluster; ``workers`` side by side)."""
    m = gammas if isinstance(gammas, DigitsMap) else DigitsMap(gammas, *grid, **fields)
    specs = m.job_specs()
    # a temporary store only without one (a folder in $TMPDIR that a killed run would leave behind)
    with tempfile.TemporaryDirectory(prefix="stam-map-") if store is None else contextlib.nullcontext(store) as where:
        results = run_jobs(run_job, specs, where, scheduler=scheduler, workers=workers, progress=progress,
                           desc=f"map: {m.base()['dataset']}", check=check_job)
    flat = []
    for res in results:
        if "error" in res:
            raise RuntimeError(f"a map job failed: {res['error']}")
        flat += res["rows"]
    return [_cell_row(cell, flat[k * m.seeds : (k + 1) * m.seeds], m.seeds) for k, cell in enumerate(m.grid())]


def _cell_row(cell: tuple[float, float, float], mine: list[dict], seeds: int) -> dict:
    """The row of grid point ``cell`` (gamma, lambda, beta) from its ``seeds`` seeds' job rows ``mine``
    (see :func:`map_digits`)."""
    from stam.dnn.table import mean_std

    g, l, b = cell  # noqa: E741
    ok = [r for r in mine if r["diverged_epoch"] is None and r["score"] is not None]
    scores = [r["score"] for r in ok]
    mean, std = mean_std(scores) if scores else (None, None)
    finals = [r["val_curve"][-1] for r in ok if r["val_curve"]]
    signs = [r["sign_ever"] for r in ok if r["sign_ever"] is not None]
    stale = [r["score_as_trained"] for r in ok if r.get("score_as_trained") is not None]
    floats = [r["val_acc_float"] for r in ok if r.get("val_acc_float") is not None]  # none in a job stored before it was
    float_mean, float_std = mean_std(floats) if floats else (None, None)
    return {"gamma": g, "lam": l, "beta": b, "seeds": seeds, "metric": mean, "metric_std": std,
            "metric_final": sum(finals) / len(finals) if finals else None,
            "metric_as_trained": sum(stale) / len(stale) if stale else None,
            "val_acc_float": float_mean, "val_acc_float_std": float_std,
            "diverged": len(mine) - len(ok), "sign_ever_changed": sum(signs) / len(signs) if signs else None}


# -- what a job of stam tune and stam map returns (:func:`run_job`), as its job file stores it ----------
#: accuracies in percent; ``sign_ever`` the fraction of binary weights whose sign ever changed
JOB_ROW = Schema(required={"score": PCT_OR_NULL, "selected_epoch": POSINT_OR_NULL, "diverged_epoch": POSINT_OR_NULL},
                 optional={"seconds": NONNEG_OR_NULL, "val_curve": LIST, "sign_ever": FRAC_OR_NULL, "test_acc": PCT_OR_NULL,
                           "test_acc_final": PCT_OR_NULL, "score_as_trained": PCT_OR_NULL, "val_acc_float": PCT_OR_NULL},
                 items={"val_curve": PCT_OR_NULL})
NETWORK_JOB = ResultType("network-job", Schema(required={"rows": LIST}, each={"rows": JOB_ROW}),
                         files="jobs/<key>.json", writer="stam tune, stam map (stam.jobs)", found=False)


__all__ = ["NETWORK_JOB", "run_job", "check_job", "resolve", "score_key", "map_digits", "DigitsMap", "task_spec", "check_task", "data_source", "train_size", "work_cost", "memory_need", "memory_bytes_needed", "check_memory", "PARAM_COPIES", "ACTIVATION_COPIES",
           "TRAINING_FIXED_BYTES", "TASK_DEFAULTS"]
