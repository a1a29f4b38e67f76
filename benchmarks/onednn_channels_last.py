"""oneDNN's channels-last 1x1 strided convolution bug on this machine: ResNet-18's gradients with and without the guard.

For ResNet-18 at widths 1/32, 1/16 and 1/8 (its first shortcut convolution has 2, 4 and 8 input channels), with 1
and 2 threads, with oneDNN as the processor allows and, on an AVX-512 processor, held to AVX2
(``ONEDNN_MAX_CPU_ISA=AVX2``: what an AVX2 machine runs), and with the toolkit's guard
(:func:`stam.dnn.onednn.guard_channels_last`) on and off: one forward and backward pass in channels-last against
float64 (:func:`stam.dnn.kernelcheck.gradient_errors`), each in its own process, so an abort, a segfault or a hang is
recorded as such (``outcome``: ``ok``, ``wrong`` (an error above the float32 tolerance), ``crashed`` (the signal),
``hung`` (no answer within ``--timeout`` seconds)); each cell ``--repeat`` times, as the bad kernel
acts by chance (it writes past its workspace).

    .venv/bin/python benchmarks/onednn_channels_last.py --out benchmarks/results/onednn_channels_last_cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

WIDTHS = (0.03125, 0.0625, 0.125)

_SCRIPT = """
import json, sys
from stam.dnn.kernelcheck import gradient_errors
print(json.dumps(gradient_errors("resnet18", float(sys.argv[1]), guarded=sys.argv[2] == "1")), flush=True)
"""


def one(width: float, guarded: bool, threads: int, isa: str | None, timeout: float) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONWARNINGS": "ignore"}
    env.pop("ONEDNN_MAX_CPU_ISA", None)
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa
    row = {"width": width, "guarded": guarded, "threads": threads, "onednn_max_isa": isa or "as the processor allows"}
    try:
        proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(width), "1" if guarded else "0"], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**row, "outcome": "hung"}
    if proc.returncode != 0:
        return {**row, "outcome": f"crashed (exit {proc.returncode})", "stderr": proc.stderr.strip().splitlines()[-1:]}
    res = json.loads(proc.stdout)
    err = res["channels_last"]["max_rel_error"]
    return {**row, "outcome": "ok" if err <= res["tolerance"] else "wrong", "max_rel_error": err,
            "where": res["channels_last"]["where"], "tolerance": res["tolerance"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a pass counts as hung")
    ap.add_argument("--repeat", type=int, default=3, help="passes of each cell (the bad kernel acts by chance)")
    ap.add_argument("--out", default=None, help="also write the JSON here")
    args = ap.parse_args(argv)

    import torch  # noqa: F401  (provenance records torch's CPU capability and oneDNN version)

    from stam.dnn.onednn import onednn_block, processor_has_avx512
    from stam.io import emit_json, provenance

    isas = [None, "AVX2"] if processor_has_avx512() else [None]
    rows = [one(w, g, t, isa, args.timeout) for isa in isas for t in (1, 2) for w in WIDTHS for g in (False, True)
            for _ in range(args.repeat)]
    emit_json({"kind": "benchmark", "name": "onednn_channels_last", "provenance": provenance(), "block": onednn_block(),
               "rows": rows, "guarded_all_ok": all(r["outcome"] == "ok" for r in rows if r["guarded"])}, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
