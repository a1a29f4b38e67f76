"""How many toolkit modules a reader opens going from a command to what it computes (issue 61, point 4).  Four
measures per command, two of them with the issue's limits:

- ``stack`` (limited): the modules a reader opens in call order, from the command line to the target: the toolkit
  modules on the call stack when the target is first called, each counted once.  Measured at run time: the command
  runs (a small budget, :data:`RUNS`) in a fresh process under a profile hook (:data:`HOOK`) that records the stack
  at the target's first call and ends the process there.
- ``chain`` (limited): the modules of the shortest import chain from ``stam/cli.py`` to the command's handler
  module, from there to its experiment's module (the handler's function-local import) and from there to the
  target, counted once each, both ends included: the fewest modules a reader opens who follows imports.  Read
  from the source by the import reader of ``tests/test_layering.py`` (module-level and function-local imports,
  and string imports: ``stam.cli`` names each area's ``cli.py`` in ``COMMAND_MODULES``).
- ``reach`` (no limit): every module that lies on SOME import chain from the experiment's module to the target,
  with ``stam/cli.py`` and the handler module (a hub such as the network catalog, which imports every update
  rule, puts each of its importers here).
- ``touched`` (no limit): every toolkit module with a function run before the target's first call, on its path
  or not (every area's argument parser, the data, the model, the checkpoint, ...): what a run touches, not the
  path to the target.

    python benchmarks/import_paths.py            # the Markdown table of docs/contributing.md ("Paths")
    python benchmarks/import_paths.py --json     # the stacks and chains, as JSON
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

#: command -> (its handler's module, its experiment's module, the target, what the target is, the limit on ``chain``)
PATHS = {
    "stam train": ("stam.dnn.cli", "stam.dnn.train", "stam.steps", "the STAM update (`stam_step`)", 12),
    "stam tune": ("stam.dnn.cli", "stam.dnn.tune", "stam.steps",
                  "the update that trains the runs whose accuracies are its result", 20),
    "stam paper-check": ("stam.theory.cli", "stam.theory.papercheck.audit", "stam.theory.papercheck.items.declare",
                         "a verdict (`verdict`)", 18),
    "stam pep --region": ("stam.theory.pep_cli", "stam.theory.pep_cli", "stam.theory.worstcase.sdpproof",
                          "a certificate, proven (`prove`)", 18),
}

#: command -> (the target's function, the arguments of the small run whose call stack is measured; one local worker, so
#: that the jobs run in the process the hook watches)
RUNS = {
    "stam train": ("stam_step", ["train", "--model", "mlp", "--dataset", "digits", "--preset", "our3", "--epochs", "1",
                                 "--out", "run"]),
    "stam tune": ("stam_step", ["tune", "--algos", "stam,bc", "--trials", "2", "--n-seeds", "2", "--epochs", "1",
                                "--batch-size", "64", "--no-progress", "--workers", "1", "--out", "tune"]),
    "stam paper-check": ("verdict", ["paper-check", "--brief"]),
    "stam pep --region": ("prove", ["pep", "--region", "--lams", "1", "--betas", "10", "--gamma-range", "0.1:0.5:2",
                                    "--workers", "1", "--out", "region.json"]),
}

#: run in a fresh process as ``python -c HOOK RESULT MODULE FUNCTION ARG...``: ``stam ARG...`` under a profile hook
#: that, at the first call of ``MODULE.FUNCTION``, writes the toolkit's frames on the stack (outermost first) and the
#: toolkit modules whose functions ran before it to RESULT (JSON) and ends the process
HOOK = r"""
import json, os, sys, threading
result, mod, fn, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
touched = []
def ours(name):
    return name == "stam" or name.startswith("stam.")
def hook(frame, event, arg):
    if event != "call" or not ours(name := frame.f_globals.get("__name__", "")):
        return
    if name == mod and frame.f_code.co_name == fn:
        stack, f = [], frame
        while f is not None:
            if ours(f.f_globals.get("__name__", "")):
                stack.append([f.f_globals["__name__"], f.f_code.co_qualname])
            f = f.f_back
        with open(result, "w") as out:
            json.dump({"stack": stack[::-1], "touched": touched}, out)
        os._exit(0)
    if frame.f_code.co_name != "<module>" and name not in touched:
        touched.append(name)
sys.setprofile(hook)
threading.setprofile(hook)
from stam.cli import main
main(argv)
"""


def reader():
    """This tree's ``tests/test_layering.py`` (the import and string reader)."""
    spec = importlib.util.spec_from_file_location("import_paths_layering", HERE / "tests" / "test_layering.py")
    layering = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layering)
    return layering


def shortest(g: dict[str, set[str]], start: str, end: str) -> list[str]:
    """The modules of a shortest import chain from ``start`` to ``end`` (ties broken by name); ValueError if none."""
    before, todo = {start: None}, deque([start])
    while todo:
        v = todo.popleft()
        if v == end:
            chain = []
            while v is not None:
                chain.append(v)
                v = before[v]
            return chain[::-1]
        for w in sorted(g.get(v, ())):
            if w not in before:
                before[w] = v
                todo.append(w)
    raise ValueError(f"no import chain from {start} to {end}")


def _reachable(g: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for w in g.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def reach(g: dict[str, set[str]], start: str, end: str) -> set[str]:
    """The modules on some import chain from ``start`` to ``end``."""
    back = {}
    for m, targets in g.items():
        for t in targets:
            back.setdefault(t, set()).add(m)
    return _reachable(g, start) & _reachable(back, end)


def call_stack(cmd: str, timeout: float = 300.0) -> dict:
    """The run of ``cmd`` (:data:`RUNS`) in a fresh process, in a temporary folder, with the toolkit's cache off:
    ``frames`` (``[module, function]`` on the stack at the target's first call, outermost first), ``stack`` (their
    modules, each once, in call order) and ``touched`` (the toolkit modules whose functions ran before it, the
    stack's included).  RuntimeError if the run ends without calling the target."""
    target = PATHS[cmd][2]
    fn, argv = RUNS[cmd]
    with tempfile.TemporaryDirectory(prefix="stam-paths-") as tmp:
        result = Path(tmp) / "stack.json"
        env = {**os.environ, "STAM_CACHE_DIR": "off", "OMP_NUM_THREADS": "1"}
        run = subprocess.run([sys.executable, "-c", HOOK, str(result), target, fn, *argv], cwd=tmp, env=env,
                             capture_output=True, text=True, timeout=timeout)
        if not result.exists():
            raise RuntimeError(f"{cmd} ended (exit {run.returncode}) without calling {target}.{fn}: "
                               + (run.stderr.strip().splitlines() or ["no output"])[-1])
        got = json.loads(result.read_text())
    stack = list(dict.fromkeys(m for m, _ in got["stack"]))
    return {"frames": got["stack"], "stack": stack, "touched": len(set(got["touched"]) | set(stack))}


def measure(g: dict[str, set[str]] | None = None, stacks: bool = True) -> dict:
    """command -> its ``stack`` (the modules in call order; with ``stacks``, which runs the commands), ``chain``
    (the modules, in order), ``reach`` and ``touched`` (numbers), target and limit."""
    g = g if g is not None else reader().full_graph()
    out = {}
    for cmd, (handler, experiment, target, what, limit) in PATHS.items():
        chain = ["stam.cli"]
        for a, b in (("stam.cli", handler), (handler, experiment), (experiment, target)):
            chain += [m for m in shortest(g, a, b)[1:] if m not in chain]
        wide = reach(g, experiment, target) | {"stam.cli", handler}
        out[cmd] = {"chain": chain, "reach": len(wide), "target": target, "what": what, "limit": limit}
        if stacks:
            out[cmd] |= call_stack(cmd) | {"run": "stam " + " ".join(RUNS[cmd][1])}
    return out


def table(measured: dict) -> str:
    """The Markdown tables of docs/contributing.md: the counts, then each command's call stack and import chain."""
    rows = ["| command | to | stack (limit) | chain (limit) | reach | touched |", "|---|---|---|---|---|---|"]
    for cmd, m in measured.items():
        rows.append(f"| `{cmd}` | {m['what']}, `{m['target']}` | {len(m['stack'])} (<= {m['limit']}) | "
                    f"{len(m['chain'])} (<= {m['limit']}) | {m['reach']} | {m['touched']} |")
    rows += ["", "| command | the run measured | the stack (modules in call order) | the chain (imports) |",
             "|---|---|---|---|"]
    for cmd, m in measured.items():
        rows.append(f"| `{cmd}` | `{m['run']}` | " + " -> ".join(f"`{c}`" for c in m["stack"]) + " | "
                    + " -> ".join(f"`{c}`" for c in m["chain"]) + " |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="the chains as JSON instead of the Markdown table")
    args = ap.parse_args()
    measured = measure()
    print(json.dumps(measured, indent=1) if args.json else table(measured))


if __name__ == "__main__":
    main()
