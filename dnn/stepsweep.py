"""Each method's step size swept on a network (issue 60: the figure ``methods`` sets it beside the theory's verdicts).

For STAM, PSGD, BC and BR, the tuned setting of a ``stam tune`` result (constant hyperparameters) is trained again
with its step multiplied by each of :data:`MULTIPLES`: the learning rate ``lr`` of PSGD, BC and BR (eqs.
(alg:PSGD), (alg:BC), (alg:BR); BR's lambda and its growth as tuned), and STAM's ``gamma`` at its tuned ``lam`` and
``beta`` (so ``gamma lam``, the quantity of STAM's certified region, moves by the same factor).  Each setting trains
``seeds`` seeds (:func:`stam.dnn.sweep.run_job`: one batched job per method, validation-selected epoch, binary
weights, BatchNorm statistics re-estimated for them); the row holds the test accuracy at that epoch and the
divergence epoch of each seed.

The theory's step axis of PSGD, BC and BR is ``h = lr L1``; a network has no global ``L1`` (ReLU), so
:func:`curvature` estimates one: the largest eigenvalue of the Hessian of the full-batch training loss with respect to
the quantised weights, at the method's first forward weights (its start rule on the initial network of seed 0;
BatchNorm on batch statistics), by power iteration.  It is a local curvature at the start, not a bound: the figure
states it so.
"""

from __future__ import annotations

from stam.results import (DICT, DICT_OR_NULL, EPOCHS, FRAC_OR_NULL, LIST, NAME, NONEMPTY_LIST, NONNEG, PCT_OR_NULL, POS, POSINT,
                          POSINT_OR_NULL, PROVENANCE, STR, ResultType, Schema)

#: the factors applied to each method's tuned step
MULTIPLES = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)
#: the hyperparameter each method's step is (STAM: gamma, at its tuned lam and beta)
STEP_KEY = {"stam": "gamma", "psgd": "lr", "bc": "lr", "br": "lr"}
#: the methods, in the figure's order
ALGOS = ("stam", "psgd", "bc", "br")


def tuned_settings(tune_data: dict) -> dict:
    """``{algo: overrides}``: the tuned setting of each method of :data:`ALGOS` in a ``tune`` result (``best``)."""
    found = {a["algo"]: a["best"]["overrides"] for a in tune_data["algorithms"] if a.get("best")}
    missing = [a for a in ALGOS if a not in found]
    if missing:
        from stam.errors import UsageError

        raise UsageError(f"the tune result has no tuned setting of {', '.join(missing)} (stam tune --algos ...)")
    return {a: found[a] for a in ALGOS}


def job_spec(algo: str, overrides: dict, multiples, seeds: int, epochs: int, batch_size: int, val_fraction: float,
             split_seed: int, bn_images: int) -> dict:
    """The job of one method: every multiple of its step, ``seeds`` seeds each (seeds 0, 1, ...)."""
    from stam.dnn.sweep import task_spec

    key = STEP_KEY[algo]
    runs = [(m, s) for m in multiples for s in range(seeds)]
    return {"algo": algo, "epochs": epochs, "batch_size": batch_size, "val_fraction": val_fraction,
            "split_seed": split_seed, "test": True, "bn_images": bn_images, **task_spec(), "stage": "steps",
            "overrides": [{**overrides, key: overrides[key] * m} for m, _ in runs], "seeds": [s for _, s in runs]}


def curvature(algo: str, overrides: dict, seed: int = 0, iters: int = 20, val_fraction: float | None = None,
              split_seed: int = 0) -> float:
    """The largest eigenvalue (in absolute value) of the Hessian of the full-batch training loss (cross-entropy,
    BatchNorm on the batch's statistics) with respect to the quantised weights, at ``algo``'s first forward weights
    on digits' MLP of seed ``seed`` (its rule's start: PSGD and STAM the float weights, BC ``Proj_Q``, BR the relaxed
    ones with its first lambda), by ``iters`` steps of power iteration from a fixed random vector."""
    import torch

    from stam.dnn import data as data_mod
    from stam.dnn.catalog import VAL_FRACTION
    from stam.dnn.models import build_model, param_groups
    from stam.operators import IndicatorQ
    from stam import rules

    data = data_mod.load("digits")
    data = data_mod.split_validation(data, VAL_FRACTION if val_fraction is None else val_fraction, split_seed)
    torch.manual_seed(seed)
    model = build_model("mlp", data.num_classes, data.image_shape, 1.0)
    model.train()
    params = [p for g in param_groups(model) if g["quantize"] for p in g["params"]]
    rule = rules.rule(algo)
    lam = overrides.get("lam")
    lam = lam[0]["value"] if isinstance(lam, list) else lam
    hyper = {k: v for k, v in {**overrides, "lam": lam}.items() if not isinstance(v, list)}
    with torch.no_grad():
        for p in params:
            w = p.detach().reshape(1, -1)
            state = rule.init(w, {**hyper, "lr": hyper.get("lr", 1.0), "project": torch.zeros(1, dtype=torch.bool)},
                              IndicatorQ(None))
            p.copy_(rule.forward_weights(state).reshape(p.shape))
    x, y = data.normalise(data.train_x), data.train_y
    loss = torch.nn.functional.cross_entropy(model(x), y)
    grads = torch.autograd.grad(loss, params, create_graph=True)
    gen = torch.Generator().manual_seed(1)
    v = [torch.randn(p.shape, generator=gen) for p in params]
    eig = 0.0
    for _ in range(iters):
        norm = torch.sqrt(sum((u * u).sum() for u in v))
        v = [u / norm for u in v]
        hv = torch.autograd.grad(grads, params, grad_outputs=v, retain_graph=True)
        eig = float(sum((a * b).sum() for a, b in zip(hv, v)))
        v = [h.detach() for h in hv]
    return abs(eig)


def summarise_rows(algo: str, overrides: dict, multiples, seeds: int, rows: list) -> list:
    """One row per multiple from the job's rows (seed-major within a multiple): the step, its test accuracies, the
    seeds that diverged, the mean over the seeds that did not."""
    key = STEP_KEY[algo]
    out = []
    for i, m in enumerate(multiples):
        mine = rows[i * seeds:(i + 1) * seeds]
        ok = [r["test_acc"] for r in mine if r["diverged_epoch"] is None and r.get("test_acc") is not None]
        out.append({"multiple": m, key: overrides[key] * m,
                    "test_acc": [r.get("test_acc") for r in mine], "diverged_epoch": [r["diverged_epoch"] for r in mine],
                    "selected_epoch": [r["selected_epoch"] for r in mine],
                    "sign_ever": [r.get("sign_ever") for r in mine],
                    "mean": sum(ok) / len(ok) if ok else None, "min": min(ok) if ok else None,
                    "max": max(ok) if ok else None, "diverged": len(mine) - len(ok)})
    return out


def sweep(tune_data: dict, tune_path: str, *, multiples=MULTIPLES, seeds: int = 2, epochs: int = 15, batch_size: int = 32,
          progress: bool = False) -> dict:
    """The ``methods-steps`` result: each method of :data:`ALGOS` at its tuned setting of ``tune_data`` with its step
    times each multiple, ``seeds`` seeds of ``epochs`` epochs; its curvature estimate (:func:`curvature`)."""
    import time

    from stam.dnn.catalog import BN_IMAGES
    from stam.dnn.sweep import data_source, run_job, task_spec
    from stam.io import provenance

    prm = tune_data["params"]
    settings = tuned_settings(tune_data)
    methods = []
    for algo in ALGOS:
        t0 = time.perf_counter()
        spec = job_spec(algo, settings[algo], multiples, seeds, epochs, batch_size, prm["val_fraction"], prm["split_seed"],
                        tune_data.get("bn_images", BN_IMAGES))
        rows = run_job(spec)["rows"]
        L_hat = curvature(algo, settings[algo], val_fraction=prm["val_fraction"], split_seed=prm["split_seed"])
        entry = {"algo": algo, "step_key": STEP_KEY[algo], "tuned": settings[algo], "curvature": L_hat,
                 "rows": summarise_rows(algo, settings[algo], multiples, seeds, rows), "seconds": time.perf_counter() - t0}
        methods.append(entry)
        if progress:
            print(f"{algo}: {[r['mean'] for r in entry['rows']]} (L^ = {L_hat:.3g}, {entry['seconds']:.0f} s)", flush=True)
    return {"kind": "methods-steps", "provenance": provenance(), "tune_file": tune_path, "dataset": "digits", "model": "mlp",
            "data_source": data_source(task_spec()), "multiples": list(multiples), "seeds": seeds, "epochs": epochs,
            "batch_size": batch_size, "protocol": protocol(seeds, epochs, batch_size, tune_data.get("bn_images", BN_IMAGES),
                                                          tune_path),
            "methods": methods}


def protocol(seeds: int, epochs: int, batch_size: int, bn_images: int, tune_path: str) -> str:
    """The protocol in words (the result file and the figure's caption say it)."""
    return (f"digits, MLP; each method's tuned setting of {tune_path} (constant hyperparameters) with its step (lr; STAM's "
            f"gamma at its tuned lam and beta, so gamma*lam) times 10^-3 ... 10^3; {seeds} seeds (0 .. {seeds - 1}) of "
            f"{epochs} epochs, batch {batch_size}; test accuracy of the binary weights at each run's validation-selected "
            f"epoch, BatchNorm statistics re-estimated for them on {bn_images:,} training images; a seed that diverged "
            "has no accuracy (counted under diverged)")


STEP_ROW = Schema(required={"multiple": POS, "test_acc": LIST, "diverged_epoch": LIST, "mean": PCT_OR_NULL,
                            "diverged": ("count",)},
                  optional={"lr": POS, "gamma": POS, "selected_epoch": LIST, "min": PCT_OR_NULL, "max": PCT_OR_NULL,
                            "sign_ever": LIST},
                  items={"test_acc": PCT_OR_NULL, "diverged_epoch": POSINT_OR_NULL, "selected_epoch": POSINT_OR_NULL,
                         "sign_ever": FRAC_OR_NULL})
METHODS_STEPS = ResultType(
    "methods-steps", Schema(required={"methods": NONEMPTY_LIST, "multiples": NONEMPTY_LIST, "seeds": POSINT,
                                      "epochs": EPOCHS, "protocol": STR},
                            optional={"kind": STR, "provenance": DICT_OR_NULL, "tune_file": STR, "dataset": NAME,
                                      "model": NAME, "data_source": DICT_OR_NULL, "batch_size": POSINT},
                            each={"methods": Schema(required={"algo": NAME, "step_key": STR, "tuned": DICT,
                                                              "curvature": NONNEG, "rows": NONEMPTY_LIST},
                                                    optional={"seconds": NONNEG}, each={"rows": STEP_ROW})},
                            items={"multiples": POS}, inner={"provenance": PROVENANCE}),
    files="methods_steps_*.json", writer="python benchmarks/methods_steps.py")


__all__ = ["MULTIPLES", "STEP_KEY", "ALGOS", "tuned_settings", "job_spec", "curvature", "summarise_rows", "sweep", "protocol",
           "STEP_ROW", "METHODS_STEPS"]
