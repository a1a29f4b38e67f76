"""The import graph of the toolkit, read from the source (module-level and function-local imports
alike): the core ``stam`` imports no subpackage, ``stam.theory`` imports no torch and none of the
practice half, and no two modules import each other, directly or through others."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"stam": "stam", "stam.theory": "theory", "stam.synthetic": "synthetic", "stam.dnn": "dnn",
            "stam.figures": "figures"}
SUBPACKAGES = tuple(p for p in PACKAGES if p != "stam")


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg, folder in PACKAGES.items():
        for path in sorted((ROOT / folder).glob("*.py")):
            mods[pkg if path.stem == "__init__" else f"{pkg}.{path.stem}"] = path
    return mods


MODULES = _modules()


def _targets(node, here: str) -> list[str]:
    """The toolkit modules an import statement names."""
    if isinstance(node, ast.ImportFrom):
        if node.level:
            parts = here.split(".")
            base = parts if MODULES[here].name == "__init__.py" else parts[:-1]
            base = base[: len(base) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        return [f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names
                if f"{module}.{a.name}" in MODULES or module in MODULES]
    return [a.name for a in node.names if a.name in MODULES]


def graph() -> dict[str, set[str]]:
    out = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out[name] = {t for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                     for t in _targets(node, name) if t != name}
    return out


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def test_the_graph_reader_sees_the_imports_it_must():
    g = graph()
    assert "stam.algorithm" in g["stam.synthetic.rates"]  # module level
    assert "stam.synthetic.problems" in g["stam.synthetic.convergence_map"]  # function-local


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    assert _cycles(graph()) == []


def test_the_core_imports_no_subpackage():
    core = [m for m in MODULES if not m.startswith(SUBPACKAGES)]
    bad = {m: sorted(t for t in graph()[m] if t.startswith(SUBPACKAGES)) for m in core}
    assert {m: t for m, t in bad.items() if t} == {}


def test_the_theory_imports_nothing_of_the_practice_half():
    g = graph()
    bad = {m: sorted(t for t in g[m] if t.startswith(("stam.synthetic", "stam.dnn", "stam.figures")))
           for m in MODULES if m.startswith("stam.theory")}
    assert {m: t for m, t in bad.items() if t} == {}


@pytest.mark.parametrize("area", ["stam.theory", "stam"])
def test_importing_every_module_of_an_area_loads_no_torch(area):
    """Run in a fresh interpreter: every module of ``stam.theory`` (and of the core, where only
    ``stam.quantize`` is allowed torch), imported, leaves torch unloaded."""
    names = [m for m in MODULES if (m.startswith("stam.theory") if area == "stam.theory"
                                    else not m.startswith(SUBPACKAGES) and m not in ("stam.quantize", "stam.__main__"))]
    code = "import importlib, sys\n" + "".join(f"importlib.import_module({m!r})\n" for m in names) + \
           "print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False", names
