"""Wall time of one STAM PEP solve (stam.theory.worstcase.pep.stam_pep) for T = 1..10 on the CPU.

Standard (issue 6): every SDP solves in under 10 s for T <= 10.  Each (params, T) is solved
``--repeat`` times (fresh PEP each time, model building included); the JSON gives the median and
the maximum, the solver that answered and its status.  The one-time cost of the first call
(importing PEPit, cvxpy and torch) is reported apart as ``first_call_s``.

    .venv/bin/python benchmarks/pep_speed.py --out benchmarks/results/pep_speed.json
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

#: (lam, gamma, beta): two admissible points (L1 = 1) and Table para's Our2 late phase (not admissible).
PARAMS = [(1.0, 0.1, 250.0), (2.0, 0.05, 330.0), (4.0, 0.3, 920.0)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--Tmax", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args(argv)

    from stam.io import emit_json, provenance

    start = time.perf_counter()
    from stam.theory.worstcase.pep import stam_pep

    stam_pep(*PARAMS[0], 1)  # imports PEPit, cvxpy, torch (stam.steps) and warms cvxpy up
    first_call_s = time.perf_counter() - start

    rows = []
    for lam, gamma, beta in PARAMS:
        for T in range(1, args.Tmax + 1):
            walls, last = [], None
            for _ in range(args.repeat):
                start = time.perf_counter()
                last = stam_pep(lam, gamma, beta, T)
                walls.append(time.perf_counter() - start)
            rows.append({
                "lam": lam, "gamma": gamma, "beta": beta, "T": T,
                "gram_size": last.details.get("gram_size"),
                "median_s": statistics.median(walls), "max_s": max(walls),
                "solver": last.solver, "status": last.status,
                "fallback_from": last.details.get("fallback_from"),
                "worst_case": last.worst_case,
            })
            print(f"lam={lam} gamma={gamma} beta={beta} T={T:2d}: {max(walls):.3f} s max "
                  f"({last.solver}, {last.status})", flush=True)
    out = {
        "kind": "benchmark-pep-speed",
        "provenance": provenance(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs visible, no GPU",
        "standard": "each SDP < 10 s for T <= 10",
        "first_call_s": first_call_s,
        "max_s": max(r["max_s"] for r in rows),
        "all_optimal": all(r["status"] == "optimal" for r in rows),
        "rows": rows,
    }
    emit_json(out, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
