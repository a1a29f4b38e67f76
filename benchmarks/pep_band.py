"""The band of docs/pep.md ("Closing the band") as a stored result: for each beta and horizon T, where stam pep
(any proper lsc F, lambda = 1, L1 = 1, delta0 + M0'_T <= 1) turns unbounded (stam.theory.worstcase.onset.onset_by_horizon,
bisection to 1e-3 on [0.9, 1.6]), for the full gradient and for b-nice minibatches (--sampled N b T..., the
stochastic PEP, horizons up to stam.theory.worstcase.onset.MAX_GRAM points); the largest gamma*lambda certified and proven by
the potentials with history of stam.theory.worstcase.history (k-step conditions, quadratic forms over past iterates) and by the
one-step minibatch template, per beta (--no-history leaves them out); the threshold c_beta of the 2-cycle that ends
every O(1/T) bound (stam.theory.worstcase.onset.two_cycle); and the certified gamma*lambda of a stored region (stam pep
--region: the largest a one-step potential certifies at every lambda of it).  Writes a ``pep-band`` result
(stam.theory.worstcase.onset.PEP_BAND) that ``stam plot pep-band FILE`` draws:

    .venv/bin/python benchmarks/pep_band.py --out benchmarks/results/pep_band.json

(a few minutes on 2 busy cores for the default; ``--Ts 1 2 --betas 10 --sampled --no-history`` for a quick one).
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
    from stam.theory.worstcase.lyapunov import REGION as REGION_TYPE

    return region_reach(REGION_TYPE.read(path))[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--Ts", type=int, nargs="+", default=[1, 2, 3, 5, 8])
    ap.add_argument("--betas", type=float, nargs="+", default=[10.0, 100.0, 1000.0])
    ap.add_argument("--sampled", type=int, nargs="*", action="append",
                    help="N b T [T ...]: the minibatch PEP's horizons (repeatable; default 2 1 1 2 3 and 3 1 1 2; "
                         "given empty: none)")
    ap.add_argument("--no-history", action="store_true", help="leave out the potentials with history")
    ap.add_argument("--workers", type=int, default=1, help="processes for the bisections (default 1)")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--history-lo", type=float, default=0.05, help="where the bisections of the potentials with history "
                    "start in gamma*lambda (default 0.05; recorded in the result as history_lo)")
    ap.add_argument("--region", type=Path, default=REGION, help="the lyapunov-region file whose certified "
                    "gamma*lambda is drawn (default: benchmarks/results/lyapunov_region.json)")
    ap.add_argument("--out", type=Path, help="write the pep-band result here (else print it)")
    args = ap.parse_args(argv)
    from stam.theory.worstcase.history import history_rows
    from stam.theory.worstcase.onset import PEP_BAND, band

    groups = [g for g in (args.sampled if args.sampled is not None else [[2, 1, 1, 2, 3], [3, 1, 1, 2]]) if g]
    if any(len(g) < 3 for g in groups):
        ap.error("--sampled takes N b and at least one T")
    sampled = [(g[0], g[1], g[2:]) for g in groups]
    cert = certified_from_region(args.region)
    history = None if args.no_history else history_rows(
        betas=args.betas, tol=args.tol, lo=args.history_lo, sampled=sorted({(N, b) for N, b, _ in sampled}), workers=args.workers)
    result = band(args.Ts, args.betas, cert, tol=args.tol, sampled=sampled, history=history, workers=args.workers,
                  certified_from=f"stam pep --region ({args.region.name}, any proper lsc F)")
    if history is not None:
        result["history_lo"] = args.history_lo
    if args.out is not None:
        PEP_BAND.write(result, args.out)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
