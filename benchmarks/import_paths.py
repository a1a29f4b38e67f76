"""How many toolkit modules a reader opens going from a command to what it computes (issue 61, point 4), read
from the source by the import reader of ``tests/test_layering.py`` (module-level and function-local imports, and
string imports: ``stam.cli`` names each area's ``cli.py`` in ``COMMAND_MODULES``).  Two measures per command:

- ``chain``, the one with limits: the modules of the shortest import chain from ``stam/cli.py`` to the command's
  handler module, from there to its experiment's module (the handler's function-local import) and from there to
  the target, counted once each, both ends included: the fewest modules a reader opens who follows imports, from
  the command line to the target, through the handler and the experiment.
- ``reach``: every module that lies on SOME import chain from the experiment's module to the target, with
  ``stam/cli.py`` and the handler module: the modules through which the experiment's imports can lead to the
  target (a hub such as the network catalog, which imports every update rule, puts each of its importers here).

Neither is the call order at run time (the measure of the issue's first counts, read by hand): an import the
reader follows may be called later, or on another branch, than the call that reaches the target.

    python benchmarks/import_paths.py            # the Markdown table of docs/contributing.md ("Paths")
    python benchmarks/import_paths.py --json     # the chains, as JSON
"""

from __future__ import annotations

import argparse
import importlib.util
import json
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


def measure(g: dict[str, set[str]] | None = None) -> dict:
    """command -> its ``chain`` (the modules, in order), ``reach`` (their number), target and limit."""
    g = g if g is not None else reader().full_graph()
    out = {}
    for cmd, (handler, experiment, target, what, limit) in PATHS.items():
        chain = ["stam.cli"]
        for a, b in (("stam.cli", handler), (handler, experiment), (experiment, target)):
            chain += [m for m in shortest(g, a, b)[1:] if m not in chain]
        wide = reach(g, experiment, target) | {"stam.cli", handler}
        out[cmd] = {"chain": chain, "reach": len(wide), "target": target, "what": what, "limit": limit}
    return out


def table(measured: dict) -> str:
    """The Markdown table of docs/contributing.md."""
    rows = ["| command | to | chain (limit) | reach | the chain |", "|---|---|---|---|---|"]
    for cmd, m in measured.items():
        rows.append(f"| `{cmd}` | {m['what']}, `{m['target']}` | {len(m['chain'])} (<= {m['limit']}) | {m['reach']} | "
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
