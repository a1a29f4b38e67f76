"""``stam tune``: an equal-budget comparison of STAM, BC, BR, PSGD and float SGD on any data set
and model (digits and the MLP by default; CIFAR-10 with a VGG-11 of any width).

The protocol follows the external-tuning rules of AlgoPerf and DeepOBS:

1. **Search spaces as data.** Each algorithm declares its search space in its update rule's
   file (``search_space`` of ``stam/rules/NAME.py``, read by :mod:`stam.dnn.tunespace`): log-uniform
   ranges for its step sizes and couplings, each containing the paper's setting.
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

import json
import math
from pathlib import Path

from stam.dnn import presets
from stam.dnn import catalog
from stam.dnn.epochs import BN_IMAGES_RAN
from stam.dnn.params import TuneParams
from stam.dnn.sweep import check_job, data_source, run_job
from stam.dnn.tunespace import halving_rungs, promote, read_spaces, sample_trials, search_space
from stam.dnn.tunestats import counted, read_map, search_difficulty, summarise
from stam.dnn.tunetext import format_table, label, transfer_source, variants
from stam.errors import UsageError
from stam.io import atomic_write_text, provenance, staged
from stam.jobs import run_jobs
from stam.datasets import DATA_SOURCE
from stam.results import (BOOL, COUNT, DICT, DICT_OR_NULL, EPOCHS, WIDTH, FRAC_OR_NULL, LIST, LIST_OR_NULL, NAME, NONEMPTY_LIST, NONNEG_OR_NULL, PCT_OR_NULL, POSINT,
                          POSINT_OR_NULL, PROVENANCE, STR, ResultType, Schema, at_most, distinct, holds, shown)
# the public names of the search, its numbers and its text, importable from here as when they lived here

#: fresh seeds of the final runs start here (the trials use ``tune_seed``, default 0)
FINAL_SEED0 = 1000
#: the most trials per algorithm (each a Sobol point drawn before any work)
MAX_TRIALS = 1 << 16


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


def run_tune(params: TuneParams) -> tuple[dict, Path]:
    """``stam tune`` as a library call (its one entry, also named :func:`run`): every usage error (the search
    spaces, the plan, the data set, the model, the split, the work limit) before any work, then :func:`tune`;
    returns the result and the path of its JSON file.  ``params.map_type``: the result type of ``params.map``
    (:func:`stam.dnn.tunestats.read_map`), needed when a map is given."""
    map_type = params.map_type
    from stam.dnn import epochs as ep
    from stam.dnn.compiled import runs_per_job
    from stam.dnn.sweep import check_memory, check_task, job_device, train_size, work_cost
    from stam.io import check_out_dir

    spaces = read_spaces(params.space_file)
    map_result = read_map(params.map, map_type)  # a bad --map is a usage error before any work
    source = transferred(params)  # a bad --transfer (or a flag it makes moot) is a usage error before any work
    out = out_path(params)
    check_out_dir(out, "--out")
    task = params.task()
    chunk = runs_per_job(params.model, job_device())
    plan(params, chunk, spaces)  # every usage error before any work
    check_memory(task, params.batch_size, chunk, job_device(), params.force)  # before a model is built
    check_task(task, params.val_fraction, params.split_seed)  # the data set, the model, the split: one line before any work
    n_train = train_size(task)
    rungs = halving_rungs(params.trials, params.epochs, params.halving) if params.halving else [(params.trials, params.epochs)]
    trial_epochs = 0 if params.transfer else sum(n * e for n, e in rungs)  # per algorithm
    runs = len(params.algos) * (trial_epochs / params.epochs + params.n_seeds * 2)  # trials, fresh seeds, the paper rows at most
    what = ("no trials, settings transferred" if params.transfer else f"{params.trials} trials" if not params.halving else
            f"{params.trials} trials halved by {params.halving} ({trial_epochs} trial epochs)")
    ep.check_work(float(runs) * params.epochs * n_train, f"{len(params.algos)} algorithms x ({what} + "
                  f"{params.n_seeds} seeds) x {params.epochs} epochs", params.force, cost=work_cost(task))
    result = tune(params, chunk=chunk, spaces=spaces, map_type=map_type, read=(map_result, source))
    return result, out / (result_stem(params.dataset) + ".json")


def plan(params: TuneParams, chunk: int, spaces: dict | None = None) -> dict:
    """The whole protocol as data: the trial configurations of every algorithm and the job specs
    of the trial stage (chunks of at most ``chunk`` trials, one batched training each), each job's
    spec the parameters' :meth:`~stam.params.Params.spec` (what is trained on what, how long).
    With ``--halving ETA`` the jobs are those of the first rung (:func:`halving_rungs`; the later
    rungs follow from its results, :func:`tune`) and ``rungs`` lists every rung."""
    algos, trials, seeds, tune_seed = params.algos, params.trials, params.n_seeds, params.tune_seed
    if trials < 1:
        raise UsageError(f"--trials {trials}: the budget must be at least 1 trial per algorithm")
    if trials > MAX_TRIALS:
        raise UsageError(f"--trials {trials}: at most {MAX_TRIALS} trials per algorithm (scrambled Sobol points are drawn for each)")
    if seeds < 2:
        raise UsageError(f"--n-seeds {seeds}: at least 2 fresh seeds are needed for a spread (5 or more recommended)")
    base = params.spec()
    rungs = halving_rungs(trials, params.epochs, params.halving) if params.halving else None
    if rungs is not None and len(rungs) < 2:
        raise UsageError(f"--halving {params.halving} with --trials {trials} and --epochs {params.epochs} halves nothing "
                         f"(one rung: a promotion needs at least {params.halving} trials and {params.halving} epochs); give "
                         "more trials and epochs, a smaller factor, or --halving 0")
    out = {"base": base, "trials": {}, "jobs": [], "rungs": rungs}
    for algo in algos:
        cfgs = sample_trials(algo, trials, tune_seed, spaces, params.schedule, params.recipe)
        out["trials"][algo] = cfgs
        if rungs:
            out["jobs"] += rung_jobs(algo, cfgs, list(range(trials)), 0, rungs[0][1], base, tune_seed, chunk)
            continue
        for i in range(0, trials, chunk):
            part = cfgs[i : i + chunk]
            out["jobs"].append({"stage": "trial", "algo": algo, "first": i, "overrides": part,
                                "seeds": [tune_seed] * len(part), "test": False, **base})
    return out


def rung_jobs(algo: str, cfgs: list, alive: list[int], rung: int, epochs: int, base: dict, seed: int, chunk: int) -> list[dict]:
    """The jobs of one rung of successive halving: the trials ``alive`` (indices into ``cfgs``) of
    ``algo`` trained for ``epochs``, at most ``chunk`` to a job; each spec ``{**base, <the cell>}``
    with the rung's epochs."""
    return [{"stage": "trial", "algo": algo, "rung": rung, "trials": alive[i : i + chunk],
             "overrides": [cfgs[j] for j in alive[i : i + chunk]], "seeds": [seed] * len(alive[i : i + chunk]),
             "test": False, **base, "epochs": epochs} for i in range(0, len(alive), chunk)]


def _trial_stage(params: TuneParams, p: dict, chunk: int, store: Path) -> dict[str, list[dict]]:
    """Each algorithm's trials, one row per trial (:func:`stam.dnn.sweep.run_job`'s) in the order of
    ``p["trials"]``: the plan's jobs, or, with halving, rung after rung, each rung's best trials
    (on validation accuracy only, :func:`promote`) retrained for the next rung's epochs; a row then
    also has ``rung`` (the last it reached), ``epochs`` (its score's) and ``rung_scores``."""
    run = dict(scheduler=params.scheduler, workers=params.workers, progress=params.progress, check=check_job)
    if not p["rungs"]:
        results = run_jobs(run_job, p["jobs"], store, desc="tune: trials", **run)
        _raise_errors(p["jobs"], results)
        return {algo: [r for spec, res in zip(p["jobs"], results) if spec["algo"] == algo for r in res["rows"]]
                for algo in p["trials"]}
    rows = {algo: [None] * len(cfgs) for algo, cfgs in p["trials"].items()}
    alive = {algo: list(range(len(cfgs))) for algo, cfgs in p["trials"].items()}
    for k, (n_k, e_k) in enumerate(p["rungs"]):
        if k == 0:
            specs = p["jobs"]
        else:
            alive = {algo: [idx[i] for i in promote([rows[algo][j]["score"] for j in idx], n_k)] for algo, idx in alive.items()}
            specs = [job for algo, idx in alive.items()
                     for job in rung_jobs(algo, p["trials"][algo], idx, k, e_k, p["base"], params.tune_seed, chunk)]
        results = run_jobs(run_job, specs, store, desc=f"tune: rung {k + 1}/{len(p['rungs'])} ({n_k} trials x {counted(e_k, 'epochs')})",
                           **run)
        _raise_errors(specs, results)
        for spec, res in zip(specs, results):
            for j, row in zip(spec["trials"], res["rows"]):
                before = rows[spec["algo"]][j]
                rows[spec["algo"]][j] = {**row, "rung": k, "epochs": e_k,
                                         "rung_scores": (before["rung_scores"] if before else []) + [row["score"]]}
    return rows


def tune(params: TuneParams, *, chunk: int = 16, spaces: dict | None = None, map_type=None, read: tuple | None = None) -> dict:
    """Run the protocol of the module docstring with ``params`` (what is trained on what: its
    ``task()``, default digits and the MLP); returns (and writes ``OUT/tune-DATASET.json`` and
    ``.md``) the result.  ``chunk``: the most runs one job trains at once; ``spaces``: search
    spaces instead of the rules' own; ``read``: ``(map, transfer source)`` as :func:`read_map` and
    :func:`transferred` already read them for ``params`` (:func:`run_tune`), else they are read here."""
    task = params.task()
    p = plan(params, chunk, spaces)
    map_result, source = read if read is not None else (read_map(params.map, map_type), transferred(params))
    fresh = [FINAL_SEED0 + k for k in range(params.n_seeds)]
    if source:  # no search: each algorithm's setting is the one the source tuning chose
        algorithms = [{"algo": algo, "label": label(algo), "trials": [], "best": {"overrides": source["overrides"][algo]}}
                      for algo in params.algos]
    else:
        trial_rows = _trial_stage(params, p, chunk, _store(params))
        algorithms = [_tuned(algo, p["trials"][algo], trial_rows[algo], spaces) for algo in params.algos]
    finals = [{"stage": "final", "algo": a["algo"], "overrides": [a["best"]["overrides"]] * params.n_seeds, "seeds": fresh,
               "test": True, **p["base"]} for a in algorithms if a["best"] is not None]
    if params.paper:
        finals += [{"stage": "paper", "algo": algo, "preset": name, "overrides": [{}] * params.n_seeds, "seeds": fresh,
                    "test": True, **p["base"]} for algo in params.algos for name in _paper_presets(algo, task["dataset"])]
    by_algo = {a["algo"]: a for a in algorithms}
    paper_rows = []
    for spec, rows in zip(finals, _final_stage(params, finals, chunk)):
        final = _final_summary(spec, rows)
        if spec["stage"] == "final":
            by_algo[spec["algo"]]["final"] = final
        else:
            paper_rows.append({"algo": spec["algo"], "preset": spec["preset"],
                               "label": presets.table()["presets"][spec["preset"]]["label"], "final": final})
    difficulty = {} if source else search_difficulty(algorithms, params.trials, spaces, map_result)
    result = _result(params, task, p, fresh, algorithms, paper_rows, difficulty, source)
    stem = result_stem(task["dataset"])
    table_text = format_table(result) + "\n"
    with staged(out_path(params), last=(f"{stem}.json",)) as stage:  # the JSON and its table replace an earlier pair together
        atomic_write_text(stage / f"{stem}.md", table_text)
        TUNE.write(result, stage / f"{stem}.json")
    return result


#: what a transferred result records of the tuning it took its settings from (``transfer``)
TRANSFER_KEYS = ("file", "dataset", "model", "width", "epochs", "batch_size", "trials", "schedule", "recipe", "halving", "scores")


def transferred(params: TuneParams) -> dict | None:
    """``--transfer``: the finished tuning (a ``stam tune`` result, read through :data:`TUNE`) whose
    chosen settings are re-run here, as ``{"overrides": {algo: ...}, "scores": {algo: validation
    score there}, <TRANSFER_KEYS>}``; None without ``--transfer``.  A usage error, before any work,
    names a file that is not such a result, an algorithm it has no setting for, or a flag that a
    transfer makes moot (the search's: its settings carry their schedules and recipe)."""
    if not params.transfer:
        return None
    moot = [flag for flag, given in (("--halving", params.halving), ("--space-file", params.space_file is not None),
                                     ("--map", params.map is not None), ("--schedule", params.schedule != "constant"),
                                     ("--recipe", params.recipe != "none")) if given]
    if moot:
        raise UsageError(f"--transfer {params.transfer}: {', '.join(moot)} does not apply (no search is run; the transferred "
                         "settings carry their own schedules and recipe): drop it")
    try:
        src = TUNE.read(Path(params.transfer))
    except UsageError as exc:
        raise UsageError(f"--transfer {exc}") from None
    best = {a["algo"]: a["best"] for a in src["algorithms"] if a.get("best") and "overrides" in a["best"]}
    missing = [a for a in params.algos if a not in best]
    if missing:
        raise UsageError(f"--transfer {params.transfer}: no tuned setting for {', '.join(missing)}; it has "
                         f"{', '.join(best) or 'none'} (choose with --algos)")
    prm = src["params"]
    return {"overrides": {a: best[a]["overrides"] for a in params.algos},
            "scores": {a: best[a].get("score") for a in params.algos}, "file": str(params.transfer),
            "dataset": src.get("dataset", prm.get("dataset", "digits")), "model": src.get("model", prm.get("model", "mlp")),
            "width": float(src.get("width", prm.get("width", 1.0))), "epochs": prm["epochs"], "batch_size": prm["batch_size"],
            "trials": prm["trials"], "schedule": prm.get("schedule", "constant"), "recipe": prm.get("recipe", "none"),
            "halving": prm.get("halving", 0)}


def _store(params: TuneParams) -> Path:
    """The job store of a tuning: ``OUT/jobs``."""
    return out_path(params) / "jobs"


def _tuned(algo: str, cfgs: list, rows: list, spaces: dict | None) -> dict:
    """The entry of ``algo`` in the result: its trials (the configurations ``cfgs`` and their ``rows``) and the best
    one, on validation accuracy (with halving, among the last rung's only)."""
    trials_out = [{"overrides": ov, **{k: r[k] for k in ("score", "selected_epoch", "diverged_epoch")},
                   **{k: r[k] for k in ("score_as_trained", "sign_ever", "rung", "epochs", "rung_scores") if k in r}}
                  for ov, r in zip(cfgs, rows)]
    top = max((t.get("rung", 0) for t in trials_out), default=0)  # with halving, only the last rung's scores compete
    scored = [t for t in trials_out if t["score"] is not None and math.isfinite(t["score"]) and t.get("rung", 0) == top]
    best = max(scored, key=lambda t: t["score"]) if scored else None
    return {"algo": algo, "label": label(algo), "space": search_space(algo, spaces), "trials": trials_out, "best": best}


def _final_stage(params: TuneParams, finals: list[dict], chunk: int) -> list[list[dict]]:
    """The rows of every fresh-seed spec of ``finals``, its seeds split into jobs of at most ``chunk`` runs."""
    seeds = params.n_seeds
    parts = [(k, {**spec, "overrides": spec["overrides"][i : i + chunk], "seeds": spec["seeds"][i : i + chunk]})
             for k, spec in enumerate(finals) for i in range(0, seeds, chunk)]  # at most ``chunk`` runs per job
    part_results = run_jobs(run_job, [p for _, p in parts], _store(params), scheduler=params.scheduler,
                            workers=params.workers, progress=params.progress, desc="tune: fresh seeds", check=check_job)
    _raise_errors([p for _, p in parts], part_results)
    final_rows = [[] for _ in finals]
    for (k, _), res in zip(parts, part_results):
        final_rows[k] += res["rows"]
    return final_rows


def _final_summary(spec: dict, rows: list[dict]) -> dict:
    """The fresh-seed runs of one setting (its job ``spec``; :data:`FINAL`): their accuracies and epochs, and the
    summary."""
    return {"seeds": spec["seeds"], "test_acc": [r["test_acc"] for r in rows],
            "test_acc_final_epoch": [r["test_acc_final"] for r in rows],
            "val_acc": [r["score"] for r in rows], "val_acc_as_trained": [r.get("score_as_trained") for r in rows],
            "sign_ever": [r.get("sign_ever") for r in rows], "selected_epoch": [r["selected_epoch"] for r in rows],
            "diverged": sum(r["diverged_epoch"] is not None for r in rows), **summarise([r["test_acc"] for r in rows])}


def _result(params: TuneParams, task: dict, p: dict, fresh: list, algorithms: list, paper_rows: list,
            difficulty: dict, source: dict | None = None) -> dict:
    """The ``tune`` result (:data:`TUNE`) of the stages' entries (``source``: :func:`transferred`'s, for a transfer)."""
    base, seeds = p["base"], params.n_seeds
    result = {
        "kind": "tune", "provenance": provenance(), "dataset": task["dataset"], "model": task["model"], "width": task["width"],
        "bn_images": base.get("bn_images", 0), "bn_augment": bool(catalog.bn_augmented(base)),
        "data_source": data_source(task),
        "params": {"algos": list(params.algos), "trials": params.trials, "seeds": seeds, "tune_seed": params.tune_seed,
                   "final_seeds": fresh, "schedule": params.schedule, "recipe": params.recipe, "halving": params.halving,
                   **base},
        "protocol": ("equal budget: the same number of scrambled-Sobol trials per algorithm over its declared search space; "
                     "trials chosen on validation accuracy (binary weights; float weights for Float); the chosen configuration "
                     f"re-run on {seeds} fresh seeds, test accuracy at each run's validation-selected epoch; every accuracy with "
                     + catalog.bn_protocol(base.get("bn_images"), None, catalog.bn_augmented(base)) + variants(params)),
        "algorithms": algorithms, "paper_rows": paper_rows,
        "search_difficulty": difficulty,
    }
    if source:
        result["params"].update(trials=source["trials"], schedule=source["schedule"], recipe=source["recipe"], halving=0)
        result["transfer"] = {k: source[k] for k in TRANSFER_KEYS}
        result["protocol"] = ("transferred, not tuned: each algorithm's setting is the one chosen on validation accuracy by "
                              f"{transfer_source(source)}, re-run on {seeds} fresh seeds of this network, test "
                              "accuracy at each run's validation-selected epoch; every accuracy with "
                              + catalog.bn_protocol(base.get("bn_images"), None, catalog.bn_augmented(base)))
        return result
    if p["rungs"]:
        result["halving"] = {"eta": params.halving, "rungs": [{"trials": n, "epochs": e} for n, e in p["rungs"]],
                             "trial_epochs": sum(n * e for n, e in p["rungs"])}
    return result


def _raise_errors(specs, results) -> None:
    bad = [(s, r) for s, r in zip(specs, results) if "error" in r]
    if bad:
        s, r = bad[0]
        raise RuntimeError(f"{len(bad)} tuning job(s) failed, e.g. {s['stage']} {s['algo']}: {r['error']}")



# -- the result (``stam tune``: OUT/tune-DATASET.json, :func:`tune`) --------------------------------------
#: the per-run lists of a setting's fresh-seed runs (:func:`_final_summary`): one entry per run, as ``test_acc``
PER_RUN = ("seeds", "val_acc", "test_acc_final_epoch", "selected_epoch", "val_acc_as_trained", "sign_ever")
#: how far a stored summary may be from the one recomputed from its accuracies (percentages of at most 100, fewer
#: than 10^6 runs: sums in float64 differ from any order of summation by far less than 1e-8)
SUMMARY_TOL = 1e-8


def _summary_of_values(final: dict):
    """A setting's fresh-seed runs as the producer wrote them: one seed per run, each seed once (a paired difference
    matches by seed), every per-run list (:data:`PER_RUN`) as long as ``test_acc``, and the summary (``n``,
    ``mean``, ``std``, ``ci95``) the one :func:`summarise` gives of ``test_acc``: a summary is never trusted over
    its values."""
    acc = final.get("test_acc") or []
    for key in PER_RUN:
        if isinstance(final.get(key), list) and len(final[key]) != len(acc):
            return key, f"holds {len(final[key])} entries for {len(acc)} runs (test_acc): one per run"
    seeds = final.get("seeds") or []
    twice = next((s for i, s in enumerate(seeds) if s in seeds[:i]), None)
    if twice is not None:
        return "seeds", f"lists seed {twice} more than once: each run has its own seed"
    want = summarise(acc)
    for key in ("n", "mean", "std", "ci95"):
        if key not in final:
            continue
        got, exp = final[key], want[key]
        pairs = list(zip(got, exp)) if isinstance(got, list) and isinstance(exp, list) and len(got) == len(exp) else [(got, exp)]
        if not all(a is None and b is None or (a is not None and b is not None and
                                                math.isclose(a, b, rel_tol=SUMMARY_TOL, abs_tol=SUMMARY_TOL)) for a, b in pairs):
            return key, (f"is {shown(got)}, but the {key} of its accuracies (test_acc) is {shown(exp)}: the summary "
                         "is computed from the values beside it")
    return None


#: the fresh-seed runs of a tuned or paper setting: test accuracies in percent, their summary
FINAL = Schema(required={"test_acc": LIST, "diverged": COUNT},
               optional={"mean": PCT_OR_NULL, "std": NONNEG_OR_NULL, "ci95": LIST_OR_NULL, "n": COUNT, "seeds": LIST,
                         "val_acc": LIST, "test_acc_final_epoch": LIST, "selected_epoch": LIST, "val_acc_as_trained": LIST,
                         "sign_ever": LIST},
               items={"test_acc": PCT_OR_NULL, "ci95": PCT_OR_NULL, "val_acc": PCT_OR_NULL, "test_acc_final_epoch": PCT_OR_NULL,
                      "selected_epoch": POSINT_OR_NULL, "seeds": COUNT, "val_acc_as_trained": PCT_OR_NULL,
                      "sign_ever": FRAC_OR_NULL},
               rules=(at_most("diverged", "test_acc", "the runs"), at_most("n", "test_acc", "the runs"),
                      holds("ci95", lambda r: r.get("ci95") is None or (len(r["ci95"]) == 2 and (
                          None in r["ci95"] or r["ci95"][0] <= r["ci95"][1])),
                            "must be two bounds [lo, hi] with lo <= hi (a 95% confidence interval, summarise)"),
                      _summary_of_values))
def _schedules(obj):
    """A trial's ``overrides``: each a hyperparameter's number or schedule (:func:`sample_trials` writes a
    number, or a list of pieces starting at the sampled value), valid in the schedule language
    (:func:`stam.dnn.presets.check_spec`: finite, > 0 where it must be); a string or an object is
    refused here, not formatted as a number in the table."""
    for key, spec in (obj.get("overrides") or {}).items():
        if isinstance(spec, bool) or not isinstance(spec, (int, float, list)):
            return f"overrides.{key}", f"must be a number or a schedule (a list of pieces), not {shown(spec)}"
        try:
            presets.check_spec(key, spec)
        except UsageError as exc:
            return f"overrides.{key}", str(exc).removeprefix(f"{key}: ")
    return None


def _halving_derived(obj):
    """``halving`` is what :func:`halving_rungs` gives for ``params``' trials and epochs at its factor ``eta``:
    its rungs and their trial epochs are derived, never read as given (a caption of 10^30 epochs)."""
    halving, prm = obj.get("halving"), obj.get("params") or {}
    if halving is None:
        return None
    eta = halving.get("eta")
    if isinstance(eta, bool) or not isinstance(eta, int) or not 2 <= eta <= 1000:
        return "halving.eta", f"must be the reduction factor, an integer from 2 to 1000, not {shown(eta)}"
    if not all(isinstance(prm.get(k), int) and not isinstance(prm.get(k), bool) for k in ("trials", "epochs")):
        return None  # params' own schema names it
    want = halving_rungs(prm["trials"], prm["epochs"], eta)
    rungs = [{"trials": n, "epochs": e} for n, e in want]
    if halving.get("rungs") != rungs:
        return "halving.rungs", (f"must be the rungs of factor {eta} for params.trials = {prm['trials']} and params.epochs = "
                                 f"{prm['epochs']}, {json.dumps(rungs)}, not {shown(halving.get('rungs'))}")
    if "trial_epochs" in halving and halving["trial_epochs"] != sum(n * e for n, e in want):
        return "halving.trial_epochs", (f"must be {sum(n * e for n, e in want)}, the rungs' trials times epochs, not "
                                        f"{shown(halving['trial_epochs'])}")
    return None


def _trials_at_most(obj):
    """Each algorithm's trials at most ``params.trials`` (the budget; :data:`MAX_TRIALS` at most)."""
    n = (obj.get("params") or {}).get("trials")
    for i, a in enumerate(obj.get("algorithms") or []):
        if isinstance(n, int) and isinstance(a, dict) and len(a.get("trials") or []) > n:
            return f"algorithms[{i}].trials", f"holds {len(a['trials'])} trials, more than params.trials ({n})"
    return None


#: one trial of a tuning: its validation score (percent), the epoch chosen on it
#: (with ``--halving``: ``rung``, the last rung it reached, from 0; ``epochs``, its score's; ``rung_scores``, one per rung)
TRIAL = Schema(optional={"overrides": DICT, "score": PCT_OR_NULL, "selected_epoch": POSINT_OR_NULL,
                         "diverged_epoch": POSINT_OR_NULL, "score_as_trained": PCT_OR_NULL, "sign_ever": FRAC_OR_NULL,
                         "rung": COUNT, "epochs": POSINT, "rung_scores": LIST},
               items={"rung_scores": PCT_OR_NULL}, rules=(_schedules,))
def _own_hyperparameters(obj):
    """Every trial's (and the best's) ``overrides`` names hyperparameters of the row's own algorithm
    (:data:`stam.dnn.presets.ALGO_HYPER`): a ``--transfer`` of a file holding another algorithm's would fail
    seconds into the run, an internal error."""
    allowed = presets.ALGO_HYPER.get(obj.get("algo"))
    if allowed is None:
        return None
    rows = [(f"trials[{i}]", t) for i, t in enumerate(obj.get("trials") or [])] + [("best", obj.get("best"))]
    for where, row in rows:
        stray = [k for k in ((row or {}).get("overrides") or {}) if k not in allowed] if isinstance(row, dict) else []
        if stray:
            return (f"{where}.overrides.{stray[0]}", f"is not a hyperparameter of {obj['algo']} "
                    f"(allowed: {', '.join(allowed)})")
    return None


TUNED = Schema(required={"algo": NAME, "label": STR, "trials": LIST}, optional={"best": DICT_OR_NULL, "final": DICT, "space": DICT},
               inner={"final": FINAL, "best": TRIAL}, each={"trials": TRIAL}, rules=(_own_hyperparameters,))
#: ``transfer``: the tuning a transferred result took its settings from (:func:`transferred`)
TRANSFER = Schema(required={"file": STR, "model": NAME, "width": WIDTH, "epochs": EPOCHS, "trials": POSINT},
                  optional={"dataset": NAME, "batch_size": POSINT, "schedule": NAME, "recipe": NAME, "halving": COUNT,
                            "scores": DICT},
                  rules=(holds("scores", lambda t: all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)
                                                                    and 0 <= v <= 100) for v in (t.get("scores") or {}).values()),
                               "must map each algorithm to its validation score there, a percentage or null"),))
PAPER_ROW = Schema(required={"algo": NAME, "preset": STR, "label": STR, "final": DICT}, inner={"final": FINAL})
TUNE = ResultType(
    "tune", Schema(required={"params": DICT, "algorithms": NONEMPTY_LIST, "paper_rows": LIST},
                   optional={"kind": STR, "dataset": NAME, "model": NAME, "width": WIDTH, "data_source": DICT_OR_NULL,
                             "protocol": STR, "provenance": DICT_OR_NULL, "bn_images": COUNT, "bn_augment": BOOL,
                             # search_difficulty: {algo: {"trials": {fraction, level, bar, find, own_fraction, own_bar, own_find}, "map": {...} or null}},
                             # search_difficulty(); halving: {eta, rungs: [{trials, epochs}], trial_epochs}
                             "search_difficulty": DICT, "halving": DICT, "transfer": DICT},
                   each={"algorithms": TUNED, "paper_rows": PAPER_ROW},
                   rules=(distinct("algorithms", "algo", what="the algorithm"),
                          distinct("paper_rows", "algo", "preset", what="the paper setting"), _trials_at_most,
                          _halving_derived, BN_IMAGES_RAN),
                   inner={"params": Schema(required={"trials": POSINT, "seeds": POSINT, "epochs": EPOCHS,
                                                     "batch_size": POSINT}, optional={"bn_images": COUNT, "bn_augment": BOOL},
                                           rules=(BN_IMAGES_RAN, holds("trials", lambda p: p["trials"] <= MAX_TRIALS,
                                                        f"is above {MAX_TRIALS}, the most trials stam tune draws"),)),
                          "provenance": PROVENANCE, "data_source": DATA_SOURCE, "transfer": TRANSFER}),
    files="tune-*.json", writer="stam tune")


__all__ = ["transferred", "TRANSFER_KEYS", "rung_jobs",
           "TUNE", "FINAL_SEED0", "tune", "plan", "result_stem"]
