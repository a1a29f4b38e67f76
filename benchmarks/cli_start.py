"""How fast ``stam --help`` answers (issue 37, point 8: at most 0.15 s on the 2-core CPU, importing no numpy): the
wall time of a fresh process running the installed ``stam`` (the console script beside this interpreter, else
``python -m stam``) with ``--help``, ``plot --help`` (which finds the figure kinds) and ``stepsize --help``,
beside a bare ``python -c pass`` (the interpreter's own start), medians over ``--repeats`` launches; and the
heavy libraries each command imported.

    python benchmarks/cli_start.py --out benchmarks/results/cli_start.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from stam.io import emit_json, provenance

COMMANDS = {"stam --help": ["--help"], "stam plot --help": ["plot", "--help"],
            "stam stepsize --help": ["stepsize", "--help"]}
HEAVY = ("numpy", "torch", "matplotlib", "sympy", "scipy", "cvxpy")
TARGET_S = 0.15  # stam --help

CHILD = """
import contextlib, io, json, sys
from stam.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in %r and "." not in m)))
""" % (HEAVY,)


def stam_command() -> list[str]:
    script = Path(sys.executable).parent / "stam"
    return [str(script)] if script.exists() else [sys.executable, "-m", "stam"]


def wall(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True)
    return time.perf_counter() - t0


def imported(args: list[str]) -> list[str]:
    """The heavy top-level modules a process running ``stam ARGS`` has imported when it ends."""
    out = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    stam = stam_command()
    load_before = list(os.getloadavg())
    python = [wall([sys.executable, "-c", "pass"]) for _ in range(args.repeats)]
    rows = {}
    for name, cmd in COMMANDS.items():
        times = [wall([*stam, *cmd]) for _ in range(args.repeats)]
        rows[name] = {"median_s": statistics.median(times), "min_s": min(times), "repeats": args.repeats,
                      "imports": imported(cmd)}
    top = rows["stam --help"]
    result = {"kind": "benchmark", "name": "cli_start", "provenance": provenance(), "cpus": os.cpu_count(),
              "loadavg_before": load_before, "loadavg_after": list(os.getloadavg()), "command": stam,
              "python_start_median_s": statistics.median(python), "target_help_s": TARGET_S,
              "meets_target": top["median_s"] <= TARGET_S and not top["imports"], "rows": rows}
    emit_json(result, args.out)
    return result


if __name__ == "__main__":
    main()
