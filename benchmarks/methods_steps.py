"""Issue 60, point 4: each method's step swept on digits beside its theory (the figure ``methods`` of ``stam report``
and ``stam plot methods``).

STAM, PSGD, BC and BR at their tuned settings of ``benchmarks/results/tune_digits_default_2cores.json`` (``stam
tune``, constant hyperparameters), each step (lr; STAM's gamma at its tuned lam and beta) times 10^-3 ... 10^3, 2
seeds of 15 epochs each; the test accuracy of the binary weights at the validation-selected epoch (BatchNorm
statistics re-estimated for them), and each method's curvature estimate L^ (:func:`stam.dnn.stepsweep.curvature`).
About 5 minutes on 2 CPU cores.

    python benchmarks/methods_steps.py --out benchmarks/results/methods_steps_digits.json
"""

from __future__ import annotations

import argparse

from stam.dnn.stepsweep import METHODS_STEPS, sweep
from stam.dnn.tune import TUNE

TUNED = "benchmarks/results/tune_digits_default_2cores.json"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/methods_steps_digits.json")
    ap.add_argument("--tune", default=TUNED, help="a tune result of digits (stam tune)")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=15)
    args = ap.parse_args(argv)
    result = sweep(TUNE.read(args.tune), args.tune, seeds=args.seeds, epochs=args.epochs, progress=True)
    METHODS_STEPS.write(result, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
