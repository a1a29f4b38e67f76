"""``stam tune``: an equal-budget comparison of STAM, BC, BR, PSGD and float SGD on any data set
and model (digits and the MLP by default; CIFAR-10 with a VGG-11 of any width).

The protocol follows the external-tuning rules of AlgoPerf and DeepOBS:

1. **Search spaces as data.** Each algorithm declares its search space beside its preset
   (``search_spaces`` in ``presets.json``): log-uniform ranges for its step sizes and couplings,
   each containing the paper's setting.
2. **The same budget for everyone.** Every algorithm gets the same number of trials, drawn
   quasi-randomly (scrambled Sobol, :class:`scipy.stats.qmc.Sobol`, mapped to the log ranges),
   all with the same training seed (``tune_seed``) and the same epochs.
3. **Selection on validation data.** A trial's score is its best validation accuracy with binary
   weights over the epochs (float weights for the float baseline); the best trial of each
   algorithm is chosen by that score.  Trials never read the test set.
4. **Fresh seeds for the numbers.** The chosen configuration is re-run with ``seeds`` fresh
   training seeds (new initial weights and minibatch orders; the validation split stays, as in
   AlgoPerf).  Each run's test accuracy is read at its own validation-selected epoch; the table
   gives mean +- std and a 95% t-interval of these.
5. **The paper's settings, labelled.** The paper's presets (Our1-3, BC, BR, PSGD, Float of Table
   para, their 1000-epoch schedules scaled onto the run) are run on the same fresh seeds and
   reported in rows labelled "paper setting (not tuned)".

Every trial batch and every final run is a job of :func:`stam.jobs.run_jobs`, stored in
``OUT/jobs/`` as it finishes: an interrupted tuning resumes without re-running finished jobs, and
``--scheduler`` sends the jobs to a Dask distributed cluster.  The trials of one algorithm run as
one batched computation (:func:`stam.dnn.batched.train_batched`).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

from stam.dnn import presets
from stam.dnn import catalog
from stam.dnn.catalog import DATASETS, MODELS, algorithm
from stam.dnn.params import TuneParams
from stam.dnn.sweep import check_job, data_source, run_job
from stam.dnn.table import mean_std
from stam.errors import UsageError
from stam.io import atomic_write_text, provenance, staged
from stam.jobs import run_jobs
from stam.datasets import CLASSES, DATA_SOURCE
from stam.results import (COUNT, DICT, DICT_OR_NULL, FRAC_OR_NULL, LIST, LIST_OR_NULL, NAME, NONNEG_OR_NULL, PCT_OR_NULL, POS, POSINT,
                          POSINT_OR_NULL, PROVENANCE, STR, ResultType, Schema, at_most)

#: fresh seeds of the final runs start here (the trials use ``tune_seed``, default 0)
FINAL_SEED0 = 1000
#: the most trials per algorithm (each a Sobol point drawn before any work)
MAX_TRIALS = 1 << 16


def search_space(algo: str, spaces: dict | None = None) -> dict:
    """The search space of ``algo`` from ``spaces`` (default: ``presets.json``), validated
    (one-line errors)."""
    spaces = presets.table().get("search_spaces", {}) if spaces is None else spaces
    if algo not in spaces:
        known = ", ".join(k for k in spaces if not k.startswith("_"))
        raise UsageError(f"unknown algorithm {algo!r} for tuning; choose from {known}")
    space = spaces[algo]
    if not isinstance(space, dict) or not space:
        raise UsageError(f"the search space of {algo} is empty; give it at least one range in presets.json")
    allowed = presets.ALGO_HYPER[algo]
    for key, dim in space.items():
        if not isinstance(dim, dict):
            raise UsageError(f"search space of {algo}: {key} must be {{'log_uniform': [low, high]}}, got {dim!r}")
        if key not in allowed:
            raise UsageError(f"search space of {algo}: {key!r} is not one of its hyperparameters ({', '.join(allowed)})")
        bounds = dim.get("log_uniform")
        lo, hi = bounds if isinstance(bounds, (list, tuple)) and len(bounds) == 2 else (None, None)
        number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731  (true is not 1)
        if not (number(lo) and number(hi) and 0 < lo <= hi < math.inf):
            raise UsageError(f"search space of {algo}: {key} needs 'log_uniform': [low, high] with 0 < low <= high, got {dim}")
    return space


def sample_trials(algo: str, n: int, seed: int = 0, spaces: dict | None = None) -> list[dict]:
    """``n`` configurations (hyperparameter -> preset override) from ``algo``'s search space,
    scrambled Sobol points mapped onto the log ranges (the first ``n`` of a base-2 sequence)."""
    from scipy.stats import qmc

    if n < 1:
        raise UsageError(f"--trials {n}: the budget must be at least 1 trial per algorithm")
    space = search_space(algo, spaces)
    keys = list(space)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Sobol's balance warning for n not a power of 2
        points = qmc.Sobol(len(keys), scramble=True, seed=seed).random(n)
    trials = []
    for row in points:
        trial = {}
        for key, u in zip(keys, row):
            lo, hi = space[key]["log_uniform"]
            value = float(f"{math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))):.4g}")
            decay = space[key].get("decay")
            trial[key] = [{"from": 1, "value": value, "decay": decay}] if decay else value
        trials.append(trial)
    return trials


# --------------------------------------------------------------------------- the protocol

#: Below any of these a tuning compares nothing: its headline and table say so in the line itself
#: (a judgement, stated: fewer epochs than 5 leave every algorithm in its first transient, fewer
#: than 4 trials do not explore a search space, fewer than 3 seeds give no spread).
MIN_BUDGET = {"epochs": 5, "trials": 4, "seeds": 3}


def counted(n, noun: str) -> str:
    """``"1 epoch"``, ``"2 epochs"``: ``n`` and ``noun`` (a plural in s) agreeing."""
    return f"{n} {noun[:-1] if n == 1 else noun}"


def budget_note(params: dict) -> str | None:
    """``None`` when the budget of a tuning (its ``params``: epochs, trials, seeds) can compare
    algorithms (:data:`MIN_BUDGET`), else the words that say it cannot."""
    small = [counted(params[k], k) for k in MIN_BUDGET if params.get(k, MIN_BUDGET[k]) < MIN_BUDGET[k]]
    if not small:
        return None
    need = ", ".join(f"{v} {k}" for k, v in MIN_BUDGET.items())
    return f"smoke-test budget ({', '.join(small)}; comparisons need at least {need}): these numbers compare nothing"


def summarise(values: list[float], bounds: tuple[float, float] = (0.0, 100.0)) -> dict:
    """mean, std (n-1), and the 95% t-interval of the mean of ``values`` (finite ones), clipped
    to ``bounds`` (an accuracy lies in [0, 100]).  No interval from fewer than 3 distinct values
    (two seeds of equal accuracy would give a zero-width one): ``ci95`` is then None."""
    from scipy import stats

    v = [float(x) for x in values if x is not None and math.isfinite(x)]
    n = len(v)
    if n == 0:
        return {"n": 0, "mean": None, "std": None, "ci95": None}
    mean, std = mean_std(v)
    if n == 1:
        return {"n": 1, "mean": mean, "std": None, "ci95": None}
    if len(set(v)) < 3:
        return {"n": n, "mean": mean, "std": std, "ci95": None}
    half = float(stats.t.ppf(0.975, n - 1)) * std / math.sqrt(n)
    return {"n": n, "mean": mean, "std": std, "ci95": [max(bounds[0], mean - half), min(bounds[1], mean + half)]}


def expected_best(scores: list, k: int) -> float:
    """Expected best validation score of ``k`` trials drawn (with replacement) from the trials run
    (Dodge et al. 2019, "Show your work", eq. (1)): with the ``n`` scores sorted,
    ``sum_i v_(i) [(i/n)^k - ((i-1)/n)^k]``.  A trial without a finite score (diverged from the
    first epoch) counts as 0."""
    v = sorted(float(x) if x is not None and math.isfinite(x) else 0.0 for x in scores)
    n = len(v)
    if n == 0 or k < 1:
        raise ValueError(f"expected_best needs at least one score and k >= 1, got {n} scores and k = {k}")
    return sum(x * ((i / n) ** k - ((i - 1) / n) ** k) for i, x in enumerate(v, start=1))


def tuning_curves(result: dict) -> dict[str, list[float]]:
    """Each algorithm's expected best validation accuracy after 1, 2, ..., n trials
    (:func:`expected_best` over its trials): the comparison at every budget, not only at the one run."""
    return {a["label"]: [expected_best([t["score"] for t in a["trials"]], k) for k in range(1, len(a["trials"]) + 1)]
            for a in result["algorithms"] if a["trials"]}


def _paper_presets(algo: str, dataset: str = "digits") -> list[str]:
    """The paper's presets of ``algo`` (Table para; CIFAR-100's own variants only on CIFAR-100)."""
    mine = [n for n, e in presets.table()["presets"].items() if e["algo"] == algo]
    own = [n for n in mine if n.endswith("cifar100")]
    return own if dataset == "cifar100" and own else [n for n in mine if not n.endswith("cifar100")]


def result_stem(dataset: str) -> str:
    """The file name (without suffix) of a tuning result: ``tune-DATASET``."""
    return f"tune-{dataset}"


def out_path(params: TuneParams) -> Path:
    """Where a tuning writes: ``--out``, by default ``tune-DATASET`` (:func:`result_stem`)."""
    return Path(params.out if params.out is not None else result_stem(params.dataset))


def read_spaces(space_file: str | None) -> dict | None:
    """The search spaces of ``--space-file`` (None: ``presets.json``'s), one-line errors."""
    if space_file is None:
        return None
    import json

    from stam.io import read_input_text

    text = read_input_text(Path(space_file), f"--space-file {space_file}")
    try:
        spaces = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise UsageError(f"--space-file {space_file}: not a readable JSON file ({type(exc).__name__})") from None
    if not isinstance(spaces, dict):
        raise UsageError(f"--space-file {space_file}: expected an object algorithm -> search space")
    return spaces


def run(params: TuneParams) -> tuple[dict, Path]:
    """``stam tune`` as a library call: every usage error (the search spaces, the plan, the data
    set, the model, the split, the work limit) before any work, then :func:`tune`; returns the
    result and the path of its JSON file."""
    from stam.dnn import batched
    from stam.dnn import epochs as ep
    from stam.dnn.sweep import check_task, job_device, train_size
    from stam.io import check_out_dir

    spaces = read_spaces(params.space_file)
    out = out_path(params)
    check_out_dir(out, "--out")
    task = params.task()
    chunk = batched.runs_per_job(params.model, job_device())
    plan(params, chunk, spaces)  # every usage error before any work
    check_task(task, params.val_fraction, params.split_seed)  # the data set, the model, the split: one line before any work
    n_train = train_size(task)
    runs = len(params.algos) * (params.trials + params.n_seeds * 2)  # trials, fresh seeds, and the paper rows at most
    ep.check_work(float(runs) * params.epochs * n_train, f"{len(params.algos)} algorithms x ({params.trials} trials + "
                  f"{params.n_seeds} seeds) x {params.epochs} epochs", params.force)
    result = tune(params, chunk=chunk, spaces=spaces)
    return result, out / (result_stem(params.dataset) + ".json")


def _label(algo: str) -> str:
    return algorithm(algo).label


def plan(params: TuneParams, chunk: int, spaces: dict | None = None) -> dict:
    """The whole protocol as data: the trial configurations of every algorithm and the job specs
    of the trial stage (chunks of at most ``chunk`` trials, one batched training each), each job's
    spec the parameters' :meth:`~stam.params.Params.spec` (what is trained on what, how long)."""
    algos, trials, seeds, tune_seed = params.algos, params.trials, params.n_seeds, params.tune_seed
    if trials < 1:
        raise UsageError(f"--trials {trials}: the budget must be at least 1 trial per algorithm")
    if trials > MAX_TRIALS:
        raise UsageError(f"--trials {trials}: at most {MAX_TRIALS} trials per algorithm (scrambled Sobol points are drawn for each)")
    if seeds < 2:
        raise UsageError(f"--n-seeds {seeds}: at least 2 fresh seeds are needed for a spread (5 or more recommended)")
    base = params.spec()
    out = {"base": base, "trials": {}, "jobs": []}
    for algo in algos:
        cfgs = sample_trials(algo, trials, tune_seed, spaces)
        out["trials"][algo] = cfgs
        for i in range(0, trials, chunk):
            part = cfgs[i : i + chunk]
            out["jobs"].append({"stage": "trial", "algo": algo, "first": i, "overrides": part,
                                "seeds": [tune_seed] * len(part), "test": False, **base})
    return out


def tune(params: TuneParams, *, chunk: int = 16, spaces: dict | None = None) -> dict:
    """Run the protocol of the module docstring with ``params`` (what is trained on what: its
    ``task()``, default digits and the MLP); returns (and writes ``OUT/tune-DATASET.json`` and
    ``.md``) the result.  ``chunk``: the most runs one job trains at once; ``spaces``: search
    spaces instead of ``presets.json``'s."""
    algos, trials, seeds, tune_seed, paper = params.algos, params.trials, params.n_seeds, params.tune_seed, params.paper
    scheduler, workers, progress = params.scheduler, params.workers, params.progress
    out_dir = out_path(params)
    store = out_dir / "jobs"
    task = params.task()
    p = plan(params, chunk, spaces)
    base = p["base"]
    results = run_jobs(run_job, p["jobs"], store, scheduler=scheduler, workers=workers, progress=progress, desc="tune: trials",
                       check=check_job)
    _raise_errors(p["jobs"], results)
    algorithms = []
    finals = []
    fresh = [FINAL_SEED0 + k for k in range(seeds)]
    for algo in algos:
        rows = [r for spec, res in zip(p["jobs"], results) if spec["algo"] == algo for r in res["rows"]]
        trials_out = [{"overrides": ov, **{k: r[k] for k in ("score", "selected_epoch", "diverged_epoch")},
                       **{k: r[k] for k in ("score_as_trained", "sign_ever") if k in r}}
                      for ov, r in zip(p["trials"][algo], rows)]
        scored = [t for t in trials_out if t["score"] is not None and math.isfinite(t["score"])]
        best = max(scored, key=lambda t: t["score"]) if scored else None
        algorithms.append({"algo": algo, "label": _label(algo), "space": search_space(algo, spaces), "trials": trials_out, "best": best})
        if best is not None:
            finals.append({"stage": "final", "algo": algo, "overrides": [best["overrides"]] * seeds, "seeds": fresh,
                           "test": True, **base})
    paper_rows = []
    if paper:
        for algo in algos:
            for name in _paper_presets(algo, task["dataset"]):
                finals.append({"stage": "paper", "algo": algo, "preset": name, "overrides": [{}] * seeds, "seeds": fresh,
                               "test": True, **base})
    parts = [(k, {**spec, "overrides": spec["overrides"][i : i + chunk], "seeds": spec["seeds"][i : i + chunk]})
             for k, spec in enumerate(finals) for i in range(0, seeds, chunk)]  # at most ``chunk`` runs per job
    part_results = run_jobs(run_job, [p for _, p in parts], store, scheduler=scheduler, workers=workers, progress=progress,
                            desc="tune: fresh seeds", check=check_job)
    _raise_errors([p for _, p in parts], part_results)
    final_rows = [[] for _ in finals]
    for (k, _), res in zip(parts, part_results):
        final_rows[k] += res["rows"]
    by_algo = {a["algo"]: a for a in algorithms}
    for spec, rows in zip(finals, final_rows):
        final = {"seeds": spec["seeds"], "test_acc": [r["test_acc"] for r in rows],
                 "test_acc_final_epoch": [r["test_acc_final"] for r in rows],
                 "val_acc": [r["score"] for r in rows], "val_acc_as_trained": [r.get("score_as_trained") for r in rows],
                 "sign_ever": [r.get("sign_ever") for r in rows], "selected_epoch": [r["selected_epoch"] for r in rows],
                 "diverged": sum(r["diverged_epoch"] is not None for r in rows), **summarise([r["test_acc"] for r in rows])}
        if spec["stage"] == "final":
            by_algo[spec["algo"]]["final"] = final
        else:
            label = presets.table()["presets"][spec["preset"]]["label"]
            paper_rows.append({"algo": spec["algo"], "preset": spec["preset"], "label": label, "final": final})
    result = {
        "kind": "tune", "provenance": provenance(), "dataset": task["dataset"], "model": task["model"], "width": task["width"],
        "bn_images": base.get("bn_images", 0),
        "data_source": data_source(task),
        "params": {"algos": list(algos), "trials": trials, "seeds": seeds, "tune_seed": tune_seed, "final_seeds": fresh, **base},
        "protocol": ("equal budget: the same number of scrambled-Sobol trials per algorithm over its declared search space; "
                     "trials chosen on validation accuracy (binary weights; float weights for Float); the chosen configuration "
                     f"re-run on {seeds} fresh seeds, test accuracy at each run's validation-selected epoch; every accuracy with "
                     + catalog.bn_protocol(base.get("bn_images"))),
        "algorithms": algorithms, "paper_rows": paper_rows,
    }
    stem = result_stem(task["dataset"])
    table_text = format_table(result) + "\n"
    with staged(out_dir, last=(f"{stem}.json",)) as stage:  # the JSON and its table replace an earlier pair together
        atomic_write_text(stage / f"{stem}.md", table_text)
        TUNE.write(result, stage / f"{stem}.json")
    return result


def describe(result: dict) -> str:
    """What was trained, in words: ``CIFAR-10 (JPEG copy), VGG-11 at width 0.125`` / ``digits, MLP``."""
    dataset = result.get("dataset", "digits")
    name = DATASETS.get(dataset, dataset).split(" (")[0]
    src = result.get("data_source") or {}
    if "jpeg" in str(src.get("kind", "")).lower():
        name += " (JPEG copy)"
    model = MODELS.get(result.get("model", "mlp"), result.get("model", "mlp"))
    width = result.get("width", 1.0)
    return f"{name[:1].upper()}{name[1:]}, {model}" + ("" if width == 1.0 else f" at width {width:g}")


def _raise_errors(specs, results) -> None:
    bad = [(s, r) for s, r in zip(specs, results) if "error" in r]
    if bad:
        s, r = bad[0]
        raise RuntimeError(f"{len(bad)} tuning job(s) failed, e.g. {s['stage']} {s['algo']}: {r['error']}")


def _fmt_hyper(overrides: dict) -> str:
    parts = []
    for k, v in overrides.items():
        v = v[0]["value"] if isinstance(v, list) else v
        parts.append(f"{k}={v:.3g}")
    return ", ".join(parts)


def table(result: dict) -> tuple[str, list[str], list[list[str]]]:
    """The equal-budget table as (caption, header, rows): tuned rows, then the paper-settings rows,
    labelled (one layout for the terminal, the Markdown file and the report)."""
    def pm(f):
        if f.get("mean") is None:
            return "-"
        return f"{f['mean']:.1f} \u00b1 {f['std']:.1f}" if f.get("std") is not None else f"{f['mean']:.1f}"

    ci = lambda f: "-" if not f.get("ci95") else f"[{f['ci95'][0]:.1f}, {f['ci95'][1]:.1f}]"  # noqa: E731
    prm = result["params"]
    classes = CLASSES.get(result.get("dataset", "digits"))

    def mean_cell(f):  # an accuracy at or below chance is a bug until shown otherwise: flagged in the cell
        return pm(f) + (" (at chance!)" if classes and catalog.at_chance(f.get("mean"), classes) else "")

    def flips(f, algo):
        signs = [v for v in f.get("sign_ever") or [] if v is not None]
        return f"{100 * sum(signs) / len(signs):.1f}%" if signs and algorithm(algo).binary else "-"

    caption = (f"{describe(result)} ({counted(prm['epochs'], 'epochs')}, batch {prm['batch_size']}): test accuracy (%) with "
               f"binary weights (Float: float weights) on {counted(prm['seeds'], 'fresh seeds')}, each at its validation-selected "
               f"epoch; the same {counted(prm['trials'], 'Sobol trials')} per algorithm, chosen on validation accuracy; "
               f"{catalog.bn_protocol(prm.get('bn_images'))}; signs flipped: the binary weights whose sign ever changed")
    note = budget_note(prm)
    if note:
        caption = f"{caption} ({note})"
    header = ["algorithm", "protocol", "hyperparameters", "val. acc. (best trial)", "test acc. mean \u00b1 std",
              "95% interval", "signs flipped", "diverged"]
    rows = []
    for a in result["algorithms"]:
        f = a.get("final", {})
        best = a.get("best") or {}
        rows.append([a["label"], f"tuned, {len(a['trials'])} trials", _fmt_hyper(best.get("overrides", {})) or "-",
                     "-" if best.get("score") is None else format(best["score"], ".1f"), mean_cell(f), ci(f),
                     flips(f, a["algo"]), str(f.get("diverged", "-"))])
    for r in result["paper_rows"]:
        f = r["final"]
        rows.append([r["label"], "paper setting (not tuned)", f"preset {r['preset']}", "-", mean_cell(f), ci(f),
                     flips(f, r["algo"]), str(f["diverged"])])
    return caption, header, rows


def format_table(result: dict) -> str:
    """:func:`table` as Markdown."""
    from stam.dnn.table import markdown_cell

    caption, header, rows = table(result)
    esc = lambda cells: " | ".join(map(markdown_cell, cells))  # noqa: E731
    lines = [markdown_cell(caption) + ".", "", "| " + esc(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + esc(r) + " |" for r in rows])


def headline(result: dict) -> str:
    """One line: each algorithm's tuned test accuracy with its 95% interval."""
    parts = []
    for a in result["algorithms"]:
        f = a.get("final") or {}
        if f.get("mean") is None:
            parts.append(f"{a['label']} -")
            continue
        iv = f" [{f['ci95'][0]:.1f}, {f['ci95'][1]:.1f}]" if f.get("ci95") else ""
        chance = " (at chance!)" if catalog.at_chance(f["mean"], CLASSES.get(result.get("dataset", "digits"), 10)) else ""
        parts.append(f"{a['label']} {f['mean']:.1f}%{iv}{chance}")
    prm = result["params"]
    note = budget_note(prm)
    return ((f"[{note}] " if note else "") + f"{describe(result)}, equal budget ({counted(prm['trials'], 'trials')} each, chosen on "
            f"validation, {counted(prm['seeds'], 'fresh seeds')}, {counted(prm['epochs'], 'epochs')}), test accuracy with binary "
            f"weights (Float: float; BatchNorm {'re-estimated on ' + str(prm['bn_images']) + ' images' if prm.get('bn_images') else 'as trained'}) and 95% interval "
            "(none from fewer than 3 distinct values): " + ", ".join(parts))



# -- the result (``stam tune``: OUT/tune-DATASET.json, :func:`tune`) --------------------------------------
#: the fresh-seed runs of a tuned or paper setting: test accuracies in percent, their summary
FINAL = Schema(required={"test_acc": LIST, "diverged": COUNT},
               optional={"mean": PCT_OR_NULL, "std": NONNEG_OR_NULL, "ci95": LIST_OR_NULL, "n": COUNT, "seeds": LIST,
                         "val_acc": LIST, "test_acc_final_epoch": LIST, "selected_epoch": LIST, "val_acc_as_trained": LIST,
                         "sign_ever": LIST},
               items={"test_acc": PCT_OR_NULL, "ci95": PCT_OR_NULL, "val_acc": PCT_OR_NULL, "test_acc_final_epoch": PCT_OR_NULL,
                      "selected_epoch": POSINT_OR_NULL, "seeds": COUNT, "val_acc_as_trained": PCT_OR_NULL,
                      "sign_ever": FRAC_OR_NULL},
               rules=(at_most("diverged", "test_acc", "the runs"), at_most("n", "test_acc", "the runs")))
#: one trial of a tuning: its validation score (percent), the epoch chosen on it
TRIAL = Schema(optional={"overrides": DICT, "score": PCT_OR_NULL, "selected_epoch": POSINT_OR_NULL,
                         "diverged_epoch": POSINT_OR_NULL, "score_as_trained": PCT_OR_NULL, "sign_ever": FRAC_OR_NULL})
TUNED = Schema(required={"algo": NAME, "label": STR, "trials": LIST}, optional={"best": DICT_OR_NULL, "final": DICT, "space": DICT},
               inner={"final": FINAL, "best": TRIAL}, each={"trials": TRIAL})
PAPER_ROW = Schema(required={"algo": NAME, "preset": STR, "label": STR, "final": DICT}, inner={"final": FINAL})
TUNE = ResultType(
    "tune", Schema(required={"params": DICT, "algorithms": LIST, "paper_rows": LIST},
                   optional={"kind": STR, "dataset": NAME, "model": NAME, "width": POS, "data_source": DICT_OR_NULL,
                             "protocol": STR, "provenance": DICT_OR_NULL, "bn_images": COUNT},
                   each={"algorithms": TUNED, "paper_rows": PAPER_ROW},
                   inner={"params": Schema(required={"trials": POSINT, "seeds": POSINT, "epochs": POSINT,
                                                     "batch_size": POSINT}),
                          "provenance": PROVENANCE, "data_source": DATA_SOURCE}),
    files="tune-*.json", writer="stam tune")


__all__ = ["TUNE", "search_space", "sample_trials", "FINAL_SEED0", "tune", "plan", "table", "headline",
           "summarise", "budget_note", "counted", "MIN_BUDGET", "format_table", "describe", "result_stem", "data_source", "expected_best", "tuning_curves"]
