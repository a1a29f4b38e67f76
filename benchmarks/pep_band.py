"""The band of docs/pep.md ("The band 1 <= gamma*lambda < 1.366 at longer horizons") as a stored result: for
each beta and horizon T, where stam pep (any proper lsc F, lambda = 1, L1 = 1, delta0 + M0'_T <= 1) turns
unbounded (stam.theory.onset.onset_by_horizon, bisection to 1e-3 on [0.9, 1.6]), with the certified
gamma*lambda of a stored region (stam pep --region, the paper's class: the largest gamma*lambda a one-step
potential certifies at every lambda of it).  Writes a ``pep-band`` result (stam.theory.onset.PEP_BAND) that
``stam plot pep-band FILE`` draws:

    .venv/bin/python benchmarks/pep_band.py --out benchmarks/results/pep_band.json

(about 20-40 s on 2 busy cores for the default; ``--Ts 1 2 --betas 10`` for a quick one).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

REGION = Path(__file__).resolve().parent / "results" / "lyapunov_region.json"


def certified_from_region(path: Path) -> float | None:
    """The largest gamma*lambda certified at every lambda of the ``lyapunov-region`` file ``path`` (what
    ``stam demo`` quotes: :func:`stam.figures.demo.region_reach`)."""
    from stam.figures.demo import region_reach
    from stam.theory.lyapunov import REGION as REGION_TYPE

    return region_reach(REGION_TYPE.read(path))[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--Ts", type=int, nargs="+", default=[1, 2, 3, 5, 8])
    ap.add_argument("--betas", type=float, nargs="+", default=[10.0, 1000.0])
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--region", type=Path, default=REGION, help="the lyapunov-region file whose certified "
                    "gamma*lambda is drawn (default: benchmarks/results/lyapunov_region.json)")
    ap.add_argument("--out", type=Path, help="write the pep-band result here (else print it)")
    args = ap.parse_args(argv)
    from stam.theory.onset import PEP_BAND, band

    cert = certified_from_region(args.region)
    result = band(args.Ts, args.betas, cert, tol=args.tol,
                  certified_from=f"stam pep --region ({args.region.name}, any proper lsc F)")
    if args.out is not None:
        PEP_BAND.write(result, args.out)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
