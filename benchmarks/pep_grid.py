"""The numbers of docs/pep.md: exact worst cases of deterministic STAM (PEP) beside Theorem conv's
bound (L1 = 1, delta0 + M0'_T <= 1, the finite-horizon M0'_T <= the paper's M0'), for convex F (the
default) or, with ``--F lsc``, the paper's class (any proper lsc F).

- ``admissible``: lam in {0.1, 1, 4}, gamma in {0.02, 0.05, 0.1}, beta the smallest beta Theorem
  conv admits (``2 K2/K1``, rounded up), T in {1, 3, 10};
- ``table_para``: the paper's Table para settings (Our1, Our2 early/late phases; Our3 combines
  them) taken as they are, with L1 = 1;
- ``gamma_lam_scan``: where the worst case stops being finite, beta = 1000, lam in {0.5, 4};
- ``long``: one admissible point at T = 20 (larger T takes minutes: T = 40 took 490 s).

    .venv/bin/python benchmarks/pep_grid.py --out benchmarks/results/pep_grid.json
    .venv/bin/python benchmarks/pep_grid.py --F lsc --out benchmarks/results/pep_grid_lsc.json

(docs/pep.md shows both: the paper's class, any proper lsc F, with convex F beside it.)
"""

from __future__ import annotations

import argparse
import math

TABLE_PARA = {
    "Our1 (epochs <= 80), Our3 (epochs <= 80)": (0.5, 8.0, 1000.0),
    "Our1 (late: beta -> 920)": (0.5, 8.0, 920.0),
    "Our2 (epochs <= 80), Our3 (epoch 81)": (4.0, 15.0, 1000.0),
    "Our2, Our3 (late: gamma -> 0.3, beta -> 920)": (4.0, 0.3, 920.0),
}


F_CLASS = "convex"


def _row(lam, gamma, beta, T, **extra):
    from stam.theory.worstcase.pep import compare

    r = compare(lam, gamma, beta, T, f_class=F_CLASS)
    d = r["details"]
    row = {
        **extra,
        "lam": lam, "gamma": gamma, "beta": beta, "gamma_lam": gamma * lam, "T": T,
        "worst_case": r["worst_case"], "bound": r["bound"], "ratio": r["ratio"], "status": r["status"],
        "solver": r["solver"], "seconds": r["seconds"], "admissible": r["admissible"],
        "violated": [v["condition"] for v in r["violations"]],
        "delta0": d.get("delta0"), "M0_prime": d.get("M0_prime"),
    }
    print({k: row[k] for k in ("lam", "gamma", "beta", "T", "worst_case", "bound", "ratio", "status")}, flush=True)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None)
    parser.add_argument("--F", default="convex", choices=("convex", "lsc", "indicator"), help="class of F")
    args = parser.parse_args(argv)
    global F_CLASS
    F_CLASS = args.F

    from stam.io import atomic_write_json, provenance
    from stam.theory.symbolic import numeric

    admissible = []
    for lam in (0.1, 1.0, 4.0):
        A, C = numeric.deterministic_es(1.0, lam)
        c = numeric.quadratic_coupling(lam, L1=1.0, A=A, C=C)
        for gamma in (0.02, 0.05, 0.1):
            beta_min = numeric.beta_lower_bounds(1, gamma, c)["2*K2/K1"]
            if not math.isfinite(beta_min):
                admissible.append({"lam": lam, "gamma": gamma, "admissible": False, "note": "K1 <= 0"})
                continue
            for T in (1, 3, 10):
                admissible.append(_row(lam, gamma, float(math.ceil(beta_min)), T))
    table = [_row(*p, T, setting=name) for name, p in TABLE_PARA.items() for T in (1, 3, 10)]
    scan = [
        _row(lam, gl / lam, 1000.0, T)
        for lam in (0.5, 4.0)
        for gl in (0.5, 1.0, 1.5, 1.9, 2.0, 3.0)
        for T in (1, 2, 3, 5, 10)
    ]
    long = [_row(1.0, 0.1, 250.0, 20)]
    out = {
        "kind": "benchmark-pep-grid",
        "provenance": provenance(),
        "f_class": F_CLASS,
        "L1": 1.0,
        "normalisation": "delta0 + M0'_T <= 1",
        "admissible": admissible,
        "table_para": table,
        "gamma_lam_scan": scan,
        "long": long,
    }
    if args.out:
        atomic_write_json(args.out, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
