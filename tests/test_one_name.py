"""One name for each thing (issue 61, point 1): in the package's code a toolkit name is used under the name it is
defined with.  No module-level alias of a toolkit name (``X = Y``, ``X = module.Y``, ``X, Z = Y, W``), no import
of a toolkit name under another name (``from stam.a import Y as X``; a module may be imported under a short name),
and no ``__all__`` outside a package's ``__init__.py`` that lists a name the module imports (a re-export)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
AREAS = ("stam", "theory", "dnn", "synthetic", "figures")


def _files() -> list[Path]:
    return sorted(p for area in AREAS for p in (ROOT / area).rglob("*.py") if "__pycache__" not in p.parts)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _toolkit_imports(tree: ast.Module) -> dict[str, str]:
    """name bound at module level -> the toolkit name it was imported as (``stam.a.Y``), modules left out."""
    bound = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "stam":
            for a in node.names:
                if not _is_module(f"{node.module}.{a.name}"):
                    bound[a.asname or a.name] = f"{node.module}.{a.name}"
    return bound


def _module_aliases(tree: ast.Module) -> set[str]:
    """Names bound at module level to a toolkit module (``from stam.dnn import catalog``, ``import stam.x as y``)."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "stam":
            names |= {a.asname or a.name for a in node.names if _is_module(f"{node.module}.{a.name}")}
        elif isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] == "stam"}
    return names


def aliases(source: str) -> list[str]:
    """The second names ``source`` gives to toolkit names (see the module docstring), one line each."""
    tree = ast.parse(source)
    imported, modules = _toolkit_imports(tree), _module_aliases(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "stam":
            found += [f"line {node.lineno}: {node.module}.{a.name} imported as {a.asname}" for a in node.names
                      if a.asname and a.asname != a.name and not _is_module(f"{node.module}.{a.name}")]
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        unpacked = isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple)
        values = node.value.elts if unpacked else [node.value]  # (a tuple of names is a value of its own)
        for v in values:
            if isinstance(v, ast.Name) and v.id in imported:
                found.append(f"line {node.lineno}: {ast.unparse(node)} (a second name for {imported[v.id]})")
            elif isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id in modules:
                found.append(f"line {node.lineno}: {ast.unparse(node)} (a second name for a toolkit name)")
    return found


def reexports(source: str) -> list[str]:
    """The names ``__all__`` lists that the module imports instead of defining."""
    tree = ast.parse(source)
    imported = {a.asname or a.name.split(".")[0] for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    listed = [ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
    return [name for names in listed for name in names if name in imported]


def test_the_alias_finder_finds_them():
    src = ("from stam.steps import stam_step, stam_init as start\n"
           "from stam.dnn import catalog\n"
           "step = stam_step\n"
           "NAMES, OTHER = catalog.NAMES, 1\n"
           "from stam.dnn import catalog as cat\n")  # a module under a short name: allowed
    assert aliases(src) == ["line 1: stam.steps.stam_init imported as start",
                            "line 3: step = stam_step (a second name for stam.steps.stam_step)",
                            "line 4: NAMES, OTHER = (catalog.NAMES, 1) (a second name for a toolkit name)"]
    assert reexports("from stam.steps import stam_step\ndef f(): pass\n__all__ = ['f', 'stam_step']\n") == ["stam_step"]


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_toolkit_name_has_one_name(path):
    source = path.read_text(encoding="utf-8")
    assert aliases(source) == [], path
    if path.name != "__init__.py":
        assert reexports(source) == [], f"{path}: __all__ re-exports names defined elsewhere"
