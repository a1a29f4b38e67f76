"""Many small digits trainings as jobs: the job function shared by ``stam tune`` and ``stam map``,
and the digits half of the convergence map.

A job is a JSON-able spec (so :func:`stam.jobs.run_jobs` can store it, resume it and send it to a
Dask worker): one algorithm, a list of preset overrides and seeds (one training each), the
epochs, the batch size and the validation split.  :func:`run_job` trains them as one batched
computation (:func:`stam.dnn.batched.train_batched`) and returns what selection needs: each run's
validation-selected epoch and score, its divergence, the sign-flip diagnostic and, only when the
spec asks for it (final runs of a tuning), the test accuracy at the selected epoch.
"""

from __future__ import annotations

import functools
import tempfile

from stam.dnn import presets
from stam.dnn.catalog import algorithm
from stam.jobs import run_jobs


def resolve(algo: str, overrides: dict | None, epochs: int, preset: str | None = None):
    """The preset a job trains with: ``preset`` (default: the algorithm's default preset on
    digits) with ``overrides``, its 1000-epoch schedule scaled onto ``epochs``."""
    return presets.resolve(preset, algo, "digits", overrides or {}, "auto", epochs)


def score_key(algo: str) -> str:
    """What selects a trial or an epoch: binary validation accuracy (float for the float baseline)."""
    return algorithm(algo).score_key


@functools.lru_cache(maxsize=4)
def _task(val_fraction: float, split_seed: int):
    """The digits task of a split, loaded once per process (jobs only read it)."""
    from stam.dnn import batched

    return batched.digits_task(val_fraction, split_seed)


def run_job(spec: dict) -> dict:
    """One job (module-level, so a Dask worker can run it): train the configurations of ``spec``
    as one batched computation and return, per configuration, its validation-selected epoch and
    accuracies (and the test accuracy at that epoch when ``spec["test"]``)."""
    from stam.dnn import batched

    task = _task(spec["val_fraction"], spec["split_seed"])
    configs = [batched.Config(resolve(spec["algo"], ov, spec["epochs"], spec.get("preset")), seed)
               for ov, seed in zip(spec["overrides"], spec["seeds"])]
    results = batched.train_batched(configs, task, spec["epochs"], spec["batch_size"], evaluate_test=spec["test"])
    key = score_key(spec["algo"])
    out = []
    for res in results:
        best = batched.select_epoch(res["log"], key)
        last = res["log"][-1] if res["log"] else None
        row = {"diverged_epoch": res["diverged_epoch"], "selected_epoch": best and best["epoch"],
               "score": best and best[key], "seconds": res["seconds"],
               "val_curve": [r.get(key) for r in res["log"]],
               "sign_ever": last and last["sign_ever"]}
        if spec["test"]:
            row["test_acc"] = best and best[key.replace("val", "test")]
            row["test_acc_final"] = last and last[key.replace("val", "test")]
        out.append(row)
    return {"rows": out}



def map_digits(gammas, lams, betas, seeds: int = 3, epochs: int = 60, batch_size: int = 32, *, val_fraction: float = 0.1,
               split_seed: int = 0, store=None, scheduler: str | None = None, workers: int = 1, progress: bool = True,
               chunk: int = 64) -> list[dict]:
    """STAM on digits (MLP) over the grid ``gammas x lams x betas`` (constant hyperparameters),
    ``seeds`` training seeds each (0, 1, ...; common random numbers across the grid); one row per
    grid point: ``{gamma, lam, beta, seeds, metric (mean best binary validation accuracy over the
    seeds that did not diverge), metric_std, metric_final (mean final-epoch binary validation
    accuracy), diverged (seeds), sign_ever_changed (mean fraction of binary weights whose sign ever
    changed)}``.  Jobs of at most ``chunk`` trainings run through :func:`stam.jobs.run_jobs`
    (stored in ``store``, resumable; ``scheduler``: a Dask cluster)."""
    from stam.dnn.table import mean_std

    grid = [(float(g), float(l), float(b)) for b in betas for l in lams for g in gammas]
    runs = [(g, l, b, s) for (g, l, b) in grid for s in range(seeds)]
    base = {"algo": "stam", "epochs": epochs, "batch_size": batch_size, "val_fraction": val_fraction,
            "split_seed": split_seed, "test": False}
    specs = []
    for i in range(0, len(runs), chunk):
        part = runs[i : i + chunk]
        specs.append({**base, "stage": "map", "overrides": [{"gamma": g, "lam": l, "beta": b} for g, l, b, _ in part],
                      "seeds": [s for *_, s in part]})
    with tempfile.TemporaryDirectory() as tmp:
        results = run_jobs(run_job, specs, store or tmp, scheduler=scheduler, workers=workers, progress=progress, desc="map: digits")
    flat = []
    for spec, res in zip(specs, results):
        if "error" in res:
            raise RuntimeError(f"a map job failed: {res['error']}")
        flat += res["rows"]
    rows = []
    for k, (g, l, b) in enumerate(grid):
        mine = flat[k * seeds : (k + 1) * seeds]
        ok = [r for r in mine if r["diverged_epoch"] is None and r["score"] is not None]
        scores = [r["score"] for r in ok]
        mean, std = mean_std(scores) if scores else (None, None)
        finals = [r["val_curve"][-1] for r in ok if r["val_curve"]]
        signs = [r["sign_ever"] for r in ok if r["sign_ever"] is not None]
        pct = lambda v: None if v is None else v / 100.0  # noqa: E731  (the map's accuracies are fractions)
        rows.append({"gamma": g, "lam": l, "beta": b, "seeds": seeds, "metric": pct(mean), "metric_std": pct(std),
                     "metric_final": pct(sum(finals) / len(finals)) if finals else None,
                     "diverged": len(mine) - len(ok), "sign_ever_changed": sum(signs) / len(signs) if signs else None})
    return rows


__all__ = ["run_job", "resolve", "score_key", "map_digits"]
