"""What STAM costs in a whole ``stam train`` on digits, against Float: the MLP, 60 epochs, batch 32, one torch
thread, each run a fresh process (``stam train --dataset digits --model mlp --algo A --epochs 60 --batch-size 32``).

Three arms: Float, STAM, and STAM with ``--proxies`` (its stationarity diagnostics, a further pass over the weights
every step, computed only when asked for).  Per run: the training time the run reports (``summary.json``'s ``seconds``: the epochs' training and evaluation)
and the wall time of the process (imports, data, checkpoints and the log included); their difference is what a
process adds to its training.  Float and STAM alternate, ``--repeats`` times each, so that a load spike on a shared
machine hits all alike; medians.  Goals: STAM's training at most 1.2x Float's, a process at most 2 s above its
training (the arm with ``--proxies`` is shown beside them, with no goal).

    python benchmarks/train_digits_cost.py --out benchmarks/results/train_digits_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stam.io import emit_json, provenance

#: arm -> its flags
ARMS = {"float": ["--algo", "float"], "stam": ["--algo", "stam"], "stam_proxies": ["--algo", "stam", "--proxies"]}
ARGS = ["--dataset", "digits", "--model", "mlp", "--epochs", "60", "--batch-size", "32", "--no-progress", "--quiet"]
#: the goals: STAM's training over Float's, and the seconds a process adds to its training
GOALS = {"training_ratio": 1.2, "process_overhead_s": 2.0}


def one_run(arm: str, work: Path, k: int) -> dict:
    """One ``stam train`` process of ``arm``: its reported training seconds and its wall time."""
    out = work / f"{arm}-{k}"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "stam", "train", *ARMS[arm], *ARGS, "-o", str(out)], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    seconds = json.loads((out / "summary.json").read_text())["seconds"]
    return {"training_s": seconds, "wall_s": wall, "overhead_s": wall - seconds}


def measure(repeats: int) -> dict:
    runs = {a: [] for a in ARMS}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(repeats):
            for arm in ARMS:
                runs[arm].append(one_run(arm, Path(tmp), k))
    med = {a: {key: statistics.median(r[key] for r in runs[a]) for key in ("training_s", "wall_s", "overhead_s")}
           for a in ARMS}
    ratio = {a: statistics.median(s["training_s"] / f["training_s"] for s, f in zip(runs[a], runs["float"]))
             for a in ("stam", "stam_proxies")}
    overhead = max(med[a]["overhead_s"] for a in ARMS)
    return {"runs": runs, "medians": med, "training_ratio": ratio["stam"], "training_ratio_with_proxies": ratio["stam_proxies"],
            "process_overhead_s": overhead,
            "meets": {"training_ratio": ratio["stam"] <= GOALS["training_ratio"],
                      "process_overhead_s": overhead <= GOALS["process_overhead_s"]}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    load = os.getloadavg()
    result = {"kind": "benchmark", "name": "train_digits_cost", "provenance": provenance(), "command": "stam train " + " ".join(ARGS),
              "threads": 1, "repeats": args.repeats, "goals": GOALS, "loadavg_before": list(load), **measure(args.repeats)}
    emit_json(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
