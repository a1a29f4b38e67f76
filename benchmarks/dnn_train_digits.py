"""Issue 4, section 4: every algorithm on real data that is available offline (scikit-learn's
8x8 digits), a few seeds, on the CPU.

Runs ``stam train`` (in-process, ``--schedule-scale auto``: the 1000-epoch schedules of Table
para mapped proportionally onto ``--epochs``) for the paper's presets Float, PSGD, BC, BR, Our1,
Our2, Our3, for STAM with a theorem-admissible configuration, and for a tuned float SGD reference
(outside the paper), each with ``--seeds`` seeds; prints and writes the table (mean and sample
std of the best binary test accuracy, of the best float test accuracy, wall time per run).

The admissible configuration comes from ``stam.theory.symbolic.numeric`` (as ``stam stepsize`` does): for
the coupling ``--lam``, gamma minimises the smallest admissible beta, 2 K2/K1, over
(0, gamma_max), and beta = 1.01 * 2 K2/K1 at that gamma; ``check`` must call it admissible (the
conditions that need a network's unknown L1, A, C cannot be checked and are not).

    python benchmarks/dnn_train_digits.py --out benchmarks/results/dnn_train_digits.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from stam.io import emit_json, provenance

PAPER = ["float", "psgd", "bc", "br", "our1", "our2", "our3"]


def admissible_config(lam: float) -> dict:
    import numpy as np

    from stam.theory.symbolic.numeric import K1, K2, check, gamma_max, quadratic_coupling

    c = quadratic_coupling(lam)
    grid = np.linspace(1e-4, 0.999, 20000) * float(gamma_max(c))
    ratio = 2 * K2(grid, c) / K1(grid, c)
    i = int(np.argmin(ratio))
    gamma = float(f"{grid[i]:.4g}")
    beta = float(f"{1.01 * float(2 * K2(gamma, c) / K1(gamma, c)):.4g}")
    verdict = check(gamma, beta, c)
    assert verdict["admissible"], verdict
    return {"lam": lam, "gamma": gamma, "beta": beta, "gamma_max": float(gamma_max(c)), "beta_min": float(2 * K2(gamma, c) / K1(gamma, c)),
            "check": {"admissible": bool(verdict["admissible"]), "violations": verdict["violations"], "unknown": verdict["unknown"]}}


def one_run(job: dict) -> dict:
    import torch

    torch.set_num_threads(1)
    from stam.dnn.params import TrainConfig
    from stam.dnn.train import train

    out = Path(job["out"])
    if (out / "summary.json").is_file():
        return json.loads((out / "summary.json").read_text())
    cfg = TrainConfig(model=job["model"], dataset="digits", preset=job["preset"], epochs=job["epochs"], seed=job["seed"],
                      overrides=job["overrides"], schedule_scale="auto", out=str(out), progress=False, echo=False, label=job["label"])
    return train(cfg).summary


def _stats(v: list[float]) -> tuple[float, float]:
    m = sum(v) / len(v)
    return m, math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--lam", type=float, default=1.0, help="coupling of the theorem-admissible STAM run")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs-dir", default="runs/digits-table")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    adm = admissible_config(args.lam)
    configs = [(p, p, {}) for p in PAPER]
    configs.append(("STAM admissible", "our3", {"lam": adm["lam"], "gamma": adm["gamma"], "beta": adm["beta"]}))
    configs.append(("Float (tuned: lr 0.05, momentum 0.9)", "float", {"lr": 0.05, "momentum": 0.9}))
    jobs = []
    for label, preset, overrides in configs:
        for seed in range(args.seeds):
            name = f"{args.model}-{preset}{'-custom' if overrides else ''}-seed{seed}"
            jobs.append({"label": None if not overrides else label, "preset": preset, "overrides": overrides, "seed": seed,
                         "model": args.model, "epochs": args.epochs, "out": os.path.join(args.runs_dir, name), "name": label})
    with ProcessPoolExecutor(args.workers) as pool:
        summaries = list(pool.map(one_run, jobs))
    rows = []
    for label, preset, overrides in configs:
        got = [s for j, s in zip(jobs, summaries) if j["name"] == label]
        b, f, t = ([s[k] for s in got] for k in ("best_test_acc_binary", "best_test_acc_float", "seconds"))
        rows.append({"label": got[0]["label"], "preset": preset, "overrides": overrides, "seeds": len(got),
                     "best_binary_mean": _stats(b)[0], "best_binary_std": _stats(b)[1],
                     "best_float_mean": _stats(f)[0], "best_float_std": _stats(f)[1],
                     "seconds_mean": _stats(t)[0], "seconds_std": _stats(t)[1]})
    result = {"kind": "dnn-train-digits", "provenance": provenance(), "model": args.model, "epochs": args.epochs,
              "schedule_scale": args.epochs / 1000, "seeds": args.seeds, "admissible": adm, "rows": rows,
              "machine": "2-core CPU sandbox, no GPU; one torch thread per run, two runs at a time"}
    emit_json(result, args.out)
    return result


if __name__ == "__main__":
    main()
