"""Wall time of the default certified region (``stam pep --region``, stam.theory.worstcase.lyapunov.region).

Standards (issues 15, 22): each Lyapunov SDP under 5 s on 2 cores for the template sizes used (a 5 x 5
matrix inequality, plus a 3 x 3 for the lower bound; with minibatches (2 + N + K(N+1)) square, K =
C(N, b)); the default region (12 lambdas; any proper lsc F with both gradients, and convex F beside
it) under 5 minutes.  ``sizes`` gives the SDP and PEP sizes and solve times as N and b grow (N up to 6; a PEP
only where its Gram matrix is at most 60).  Besides the total, the JSON gives per lambda the seconds, the number
of SDPs (Theorem conv's points included) and PEPs,
the slowest Lyapunov SDP and every solver status met, and a separate timing of single SDPs of
both templates (median and maximum over ``--repeat`` fresh builds); the region's wall and CPU seconds (one
process) and the load average before and after.  The region itself is in
``region`` (the ``lyapunov-region`` object that ``stam pep --region --out`` writes).

    .venv/bin/python benchmarks/lyapunov_region.py --out benchmarks/results/lyapunov_region_bench.json
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time

#: single-SDP timings: an admissible point, Table para's Our1 and Our2 (L1 = 1).
POINTS = [(1.0, 0.1, 250.0), (0.5, 8.0, 1000.0), (4.0, 15.0, 1000.0)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lams", default=None, help="comma-separated lambdas (default: the 12 of --region)")
    parser.add_argument("--repeat", type=int, default=5, help="fresh builds per single-SDP timing")
    parser.add_argument("--max-N", type=int, default=6, help="the sizes as N and b grow: N up to this (default 6)")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args(argv)

    from stam.io import emit_json, provenance
    from stam.theory.worstcase import lyapunov, pep
    from stam.theory.worstcase import templates
    from stam.theory.params import RegionParams

    lams = [float(v) for v in args.lams.split(",")] if args.lams else list(lyapunov.REGION_LAMS)
    start = time.perf_counter()
    lyapunov.certify_stam(*POINTS[0])  # imports cvxpy, sympy (the derived x-step) and warms up
    first_call_s = time.perf_counter() - start

    single = []
    for lam, gamma, beta in POINTS:
        for template in templates.TEMPLATES:
            walls, last = [], None
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                last = lyapunov.certify_stam(lam, gamma, beta, template=template)
                walls.append(time.perf_counter() - t0)
            single.append({"lam": lam, "gamma": gamma, "beta": beta, "template": template,
                           "median_s": statistics.median(walls), "max_s": max(walls), "status": last.status,
                           "certified": last.certified, "rho": last.rho})
            print(f"lam={lam} gamma={gamma} beta={beta} {template}: {max(walls):.3f} s max ({last.status}, "
                  f"certified={last.certified})", flush=True)

    t0, c0, load0 = time.perf_counter(), time.process_time(), os.getloadavg()
    result = lyapunov.compute_region(RegionParams(lams=tuple(lams), workers=1),
                                     progress=lambda r: print(f"lam={r['lam']:.4g}: {r['seconds']:.1f} s", flush=True))
    region_s, region_cpu_s, load1 = time.perf_counter() - t0, time.process_time() - c0, os.getloadavg()
    def parts(r):  # (name, bracket) of every search of a row
        out = [(k, r[k]) for k in ("general", "paper", "sampled", "refuted") if k in r]
        out += [(f"convex {k}", r["convex"][k]) for k in ("general", "paper", "refuted") if k in r.get("convex", {})]
        return out

    rows = [{"lam": r["lam"], "seconds": r["seconds"],
             "sdp_solves": sum(p["solves"] for k, p in parts(r) if "refuted" not in k) + len(r["theorem"]["points"]),
             "theorem_certified": r["theorem"]["certified"],
             "pep_solves": sum(p["solves"] for k, p in parts(r) if "refuted" in k),
             "slowest_sdp_s": max(p["slowest_solve"] for k, p in parts(r) if "refuted" not in k),
             "statuses": {k: p["statuses"] for k, p in parts(r)}}
            for r in result["rows"]]
    sizes = []
    for N, b in [p for p in ((1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (4, 1), (4, 2), (5, 1), (5, 2), (6, 1))
                 if p[0] <= args.max_N]:
        t0 = time.perf_counter()
        c = lyapunov.certify_stam(*POINTS[0], template="paper", N=N, b=b)
        sdp_s = time.perf_counter() - t0
        peps = {}
        for T in (1, 2):
            if pep.gram_size(T, N=N, b=b) <= 60:
                t0 = time.perf_counter()
                r = pep.stam_pep(*POINTS[0], T, N=N, b=b)
                peps[T] = {"gram": r.details["gram_size"], "seconds": time.perf_counter() - t0, "status": r.status}
        sizes.append({"N": N, "b": b, "branches": math.comb(N, b), "sdp_matrix": c.details["size"],
                      "sdp_constraints": c.details["constraints"], "sdp_s": sdp_s, "sdp_status": c.status, "pep": peps})
        print(f"N={N} b={b}: SDP {c.details['size']}x{c.details['size']}, {c.details['constraints']} inequalities, "
              f"{sdp_s:.3f} s; PEP {peps}", flush=True)
    slowest = max([r["slowest_sdp_s"] for r in rows] + [s["max_s"] for s in single])
    out = {
        "kind": "benchmark-lyapunov-region",
        "provenance": provenance(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs visible, no GPU",
        "standard": "each Lyapunov SDP < 5 s; the default region (>= 12 lambdas) < 300 s",
        "first_call_s": first_call_s,
        "region_s": region_s,
        "region_cpu_s": region_cpu_s,  # one process (workers = 1): its CPU time is the region's
        "loadavg_before_after": [list(load0), list(load1)],
        "slowest_sdp_s": slowest,
        "meets_standard": bool(slowest < 5 and region_s < 300 and len(lams) >= 12),
        "single": single,
        "sizes": sizes,
        "rows": rows,
        "region": result,
    }
    emit_json(out, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
