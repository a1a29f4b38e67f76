"""How fast ``stam train`` starts (issue 26, point 4: at most 2 s to the first training step on the
2-core CPU): a fresh process runs ``stam train`` on digits with the MLP for one epoch; the seconds
from launching it to the start of its first epoch (imports, settings, data, network, update rule),
and to its end, medians over ``--repeats`` launches per algorithm.  The process records the time of
entering :meth:`stam.dnn.batched.Trainer.train_epoch` (wall clock, against the launch time the
parent took), and the modules it imported by then.

    python benchmarks/train_start.py --out benchmarks/results/train_start.json
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

from stam.io import emit_json, provenance

CHILD = """
import json, sys, time
from stam.dnn import batched
real = batched.Trainer.train_epoch
def first(self, *a, **k):
    if not hasattr(batched, "_first_step_at"):
        batched._first_step_at = time.time()
        batched._modules = sorted(m for m in sys.modules if "." not in m)
    return real(self, *a, **k)
batched.Trainer.train_epoch = first
from stam.cli import main
rc = main(sys.argv[2:])
print(json.dumps({"first_step_at": batched._first_step_at, "end_at": time.time(), "rc": rc, "modules": batched._modules}))
"""


def launch(algo: str, out: str) -> dict:
    """One ``stam train`` process: seconds to its first epoch and to its end, and the top-level
    modules imported by the first epoch."""
    argv = ["train", "--model", "mlp", "--dataset", "digits", "--algo", algo, "--epochs", "1", "--out", out,
            "--no-progress", "--quiet"]
    t0 = time.time()
    p = subprocess.run([sys.executable, "-c", CHILD, "--", *argv], capture_output=True, text=True, check=True,
                       env={**os.environ, "OMP_NUM_THREADS": "1"})
    rec = json.loads(p.stdout.strip().splitlines()[-1])
    return {"first_step_s": rec["first_step_at"] - t0, "total_s": rec["end_at"] - t0, "modules": rec["modules"]}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--algos", default="float,stam")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for algo in args.algos.split(","):
            runs = [launch(algo, f"{tmp}/{algo}{k}") for k in range(args.repeats)]
            first = [r["first_step_s"] for r in runs]
            rows[algo] = {"first_step_s_median": statistics.median(first), "first_step_s_min": min(first),
                          "total_s_median": statistics.median(r["total_s"] for r in runs), "repeats": args.repeats,
                          "imports_sklearn": "sklearn" in runs[0]["modules"], "imports_scipy": "scipy" in runs[0]["modules"],
                          "imports_sympy": "sympy" in runs[0]["modules"]}
    result = {"kind": "benchmark", "name": "train_start", "provenance": provenance(), "cpus": os.cpu_count(),
              "loadavg_before": list(os.getloadavg()), "target_first_step_s": 2.0,
              "meets_target": all(r["first_step_s_median"] <= 2.0 for r in rows.values()), "rows": rows}
    emit_json(result, args.out)
    return result


if __name__ == "__main__":
    main()
