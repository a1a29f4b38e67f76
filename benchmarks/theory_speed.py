"""Speed of the theory part: cold start of ``stam stepsize`` (subprocess, median of several runs;
also reports whether torch / sympy were imported), the numeric layer on a grid of 10^6
(gamma, lambda) points, and one ``stam paper-check``.  Prints JSON; ``--out FILE`` writes it.

    .venv/bin/python benchmarks/theory_speed.py --out benchmarks/results/theory_speed.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

STEPSIZE = ["stepsize", "--quadratic-coupling", "0.5", "--L1", "1", "--A", "1", "--C", "0.1",
            "--delta0", "2.3", "--M0", "0", "--eps", "0.1", "--json"]


def cold_start(repeats: int) -> dict:
    """Wall time of ``python -m stam stepsize ...`` in a fresh interpreter (what a user waits for)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "stam", *STEPSIZE], capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        assert p.returncode == 0, p.stderr
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, io, contextlib; from stam.cli import main\n"
         f"with contextlib.redirect_stdout(io.StringIO()): main({STEPSIZE!r})\n"
         "print(int('torch' in sys.modules), int('sympy' in sys.modules), int('scipy' in sys.modules))"],
        capture_output=True, text=True, check=True)
    torch_, sympy_, scipy_ = (bool(int(v)) for v in probe.stdout.split())
    base = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        base.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "repeats": repeats,
            "python_startup_median_s": statistics.median(base),
            "imports_torch": torch_, "imports_sympy": sympy_, "imports_scipy": scipy_}


def grid(repeats: int) -> dict:
    """K1, K3, M, admissibility and T_min on a 1000 x 1000 grid of (gamma, lambda)."""
    import numpy as np

    from stam.theory.symbolic import numeric as n

    gam = np.geomspace(1e-4, 1.0, 1000)[:, None]
    lam = np.geomspace(1e-2, 10.0, 1000)[None, :]
    out = {}
    for name, fn in {
        "K1": lambda c: n.K1(gam, c),
        "K3": lambda c: n.K3(gam, c),
        "admissible_gamma": lambda c: n.admissible_gamma(gam, c),
        "T_min": lambda c: n.T_min(gam, c, 2.3, 0.0, 0.1),
        "check_all (K1, second condition, beta >= bounds at T)": lambda c: (
            n.admissible_gamma(gam, c) & (1e3 >= n.beta_lower_bounds(10**6, gam, c, 0.1)["2*K2/K1"])),
    }.items():
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            c = n.quadratic_coupling(lam, L1=1.0, A=1.0, C=0.1)
            v = fn(c)
            ts.append(time.perf_counter() - t0)
        assert np.shape(v) == (1000, 1000)
        out[name] = statistics.median(ts)
    return {"points": 10**6, "median_s": out, "repeats": repeats}


def _timed(args: list, store: str) -> tuple:
    """Wall and CPU seconds (the child's user + system time) of ``stam paper-check ARGS``."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "stam", "paper-check", *args], capture_output=True, text=True,
                       env={**os.environ, "STAM_CACHE_DIR": store})
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert p.returncode == 0, p.stderr
    return dt, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), p.stdout


def paper_check() -> dict:
    """``stam paper-check --json`` and ``--brief`` derived from scratch (no store: ``STAM_CACHE_DIR=off``),
    then ``--brief`` again from a store the first ``--brief`` filled (a temporary folder)."""
    import tempfile

    out = {}
    wall, cpu, text = _timed(["--json"], "off")
    out["json_cold"] = {"wall_s": wall, "cpu_s": cpu, "items": len(json.loads(text))}
    wall, cpu, _ = _timed(["--brief"], "off")
    out["brief_cold"] = {"wall_s": wall, "cpu_s": cpu}
    with tempfile.TemporaryDirectory() as store:
        _, _, first = _timed(["--brief"], store)
        wall, cpu, again = _timed(["--brief"], store)
        assert again == first
    out["brief_stored"] = {"wall_s": wall, "cpu_s": cpu, "loadavg": os.getloadavg()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args(argv)
    res = {
        "kind": "benchmark-theory-speed",
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
                    "loadavg_before": os.getloadavg()},
        "stepsize_cold_start": cold_start(args.repeats),
        "numeric_grid_1e6": grid(args.repeats),
        "paper_check": paper_check(),
    }
    from stam.io import emit_json, provenance

    res["provenance"] = provenance()
    emit_json(res, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
