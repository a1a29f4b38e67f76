"""The CIFAR-10 study (issue 21, point 5): the equal-budget tuning of STAM, BC, BR, PSGD and Float
(with the paper's settings as labelled rows) and the convergence map of STAM over (gamma, lambda),
on a narrow VGG-11 and the real CIFAR-10 images, sized to run on a 2-core CPU in about 1.5 to 2 hours.

It runs the toolkit's own commands, as a user would (resumable: run it again after an
interruption and finished jobs are read back from ``OUT/*/jobs``)::

    stam tune --dataset cifar10 --data-dir DATA --width W --epochs E --trials K --n-seeds S --workers J --out OUT/tune
    stam map  --dataset cifar10 --data-dir DATA --width W --epochs E --n-seeds 1 --gamma-range ... --lam-range ... --out OUT/map

then copies the results (JSON, Markdown, CSV, PNG) into ``--results`` with a summary of the
settings and the wall time of each command.  Default data: the JPEG copy of CIFAR-10 in
``../shared/data`` (every result records which copy it read: ``data_source``).

    python benchmarks/cifar10_study.py --out study-cifar10 --results benchmarks/results/cifar10_study
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from stam.cli import main as stam
from stam.io import atomic_write_json, provenance

#: the study's budget (2-core CPU): VGG-11 at width 1/8 takes about 20 s per epoch and run on one core
BUDGET = {"width": 0.125, "epochs": 5, "trials": 4, "seeds": 3, "map_gammas": "0.01:30:3", "map_lams": "0.05:30:3",
          "map_beta": 20.0, "bn_images": 5000}
#: (``bn_images``: the study re-measured under the evaluation rule keeps the 5000 images it started with, so that its
#: committed jobs in ``benchmarks/results/cifar10_study_bn`` resume; the toolkit's default is 2500)


def run(argv: list[str]) -> float:
    t0 = time.perf_counter()
    rc = stam(argv)
    if rc != 0:
        raise SystemExit(f"stam {' '.join(argv)} exited {rc}")
    return time.perf_counter() - t0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--out", default="study-cifar10", help="working folder (job stores; default study-cifar10)")
    ap.add_argument("--results", default=None, help="copy the results here (e.g. benchmarks/results/cifar10_study)")
    ap.add_argument("--workers", type=int, default=2)
    for key, value in BUDGET.items():
        ap.add_argument(f"--{key.replace('_', '-')}", type=type(value), default=value)
    ap.add_argument("--skip-map", action="store_true")
    ap.add_argument("--skip-tune", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    common = ["--dataset", "cifar10", "--data-dir", args.data_dir, "--width", str(args.width), "--epochs", str(args.epochs),
              "--workers", str(args.workers), "--no-progress", "--bn-images", str(args.bn_images)]
    seconds = {}
    done = out / "study.json"
    if done.is_file():  # a resumed study keeps the wall times of the commands run before
        seconds.update(json.loads(done.read_text()).get("seconds", {}))
    if not args.skip_tune:
        seconds["tune"] = run(["tune", *common, "--trials", str(args.trials), "--n-seeds", str(args.seeds), "--out", str(out / "tune")])
        atomic_write_json(done, {"seconds": seconds})
    if not args.skip_map:
        seconds["map"] = run(["map", *common, "--n-seeds", "1", "--gamma-range", args.map_gammas, "--lam-range", args.map_lams,
                              "--betas", str(args.map_beta), "--out", str(out / "map")])
    atomic_write_json(done, {"seconds": seconds})
    summary = {"kind": "benchmark", "name": "cifar10_study", "provenance": provenance(), "seconds": seconds,
               "budget": {k: getattr(args, k) for k in BUDGET}, "workers": args.workers, "data_dir": args.data_dir}
    atomic_write_json(out / "study.json", summary)
    if args.results:
        dest = Path(args.results)
        dest.mkdir(parents=True, exist_ok=True)
        for f in sorted(out.glob("*/*")):
            if f.is_file() and f.suffix in (".json", ".md", ".csv", ".png"):
                shutil.copy2(f, dest / f.name)
        shutil.copy2(out / "study.json", dest / "study.json")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
