"""The structure of the toolkit, measured the same way before and after a change (issue 38, point 5): how
many modules and lines a reader meets on four paths, how many import edges exist only as strings, the
largest modules, the long functions and the long parameter lists, and what ``stam --help`` imports.

    python benchmarks/structure_scan.py --label main --out benchmarks/results/structure_scan.json
    /path/to/other/checkout/.venv/bin/python benchmarks/structure_scan.py --label before --append --out ...

The tree measured is the one the running interpreter imports ``stam`` from (its editable install), so the
same script run with another checkout's interpreter measures that checkout; the string reader is this
tree's ``tests/test_layering.py`` (``string_graph``: ``"pkg.mod"`` and ``"pkg.mod:attr"`` literals naming
toolkit modules, relative ``importlib.import_module`` calls), applied to the measured tree's files.

**A path** (``PATHS``) is a command run for real on a small problem, in a fresh interpreter
(``stam.cli.main(argv)``), up to the first call of its target function, found by ``sys.setprofile`` by
function name and module prefix (so that it survives a function moving between modules of its package);
the process ends there.  Each runs cold, with an empty cache folder of its own (``STAM_CACHE_DIR``: no
stored paper-check findings, no compiled kernels).  Three nested measures of the toolkit modules on it, each with the lines of their
files: ``stack``, the modules of the functions on the call stack at the target (the chain from the entry
to the target, what a reader follows first); ``called``, the modules of every toolkit function run before
the target (the code a reader must know to follow the run; a module's top level, run by its import, does
not count); ``imported``, every toolkit module loaded (``sys.modules``) at that moment, module-level and
function-local imports alike.

- ``stam train`` -> the weight update: the first call of ``stam_step`` (eq. (alg:stamm)), in whichever toolkit
  module defines it (``stam.algorithm``, later ``stam.steps``), training STAM on digits with the MLP for one epoch;
- ``stam tune`` -> its result file: the first ``ResultType.write`` of the ``tune`` type (one trial of STAM,
  one epoch, two fresh seeds, on digits);
- ``stam paper-check`` -> a verdict: the first call of ``verdict`` in ``stam.theory.items``;
- ``stam pep --region`` -> a certificate: the first call of ``certify_stam`` in ``stam.theory`` (one lambda,
  one beta, four gammas).

**Static counts** (the measured tree's source, read with :mod:`ast`): modules and lines; string-import
edges (module pairs) and the import cycles that only strings close; the ten largest modules; every function
(methods and nested functions included) over 60 lines, from ``def`` to its last line; every function with
more than 8 parameters (positional and keyword-only, ``self``/``cls`` not counted; also those with 10 or more).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
LONG_FUNCTION = 60  # lines
MANY_PARAMETERS = 8

#: name -> (argv after ``stam``, the target: function names, module prefix, the ``self.name`` it must have)
PATHS = {
    "stam train -> the weight update": (
        ["train", "--dataset", "digits", "--model", "mlp", "--algo", "stam", "--epochs", "1", "--no-progress", "--quiet",
         "--compile", "off", "-o", "{tmp}/train"],
        ("stam_step",), "stam.", None),
    "stam tune -> its result file": (
        ["tune", "--dataset", "digits", "--model", "mlp", "--algos", "stam", "--trials", "1", "--n-seeds", "2",
         "--epochs", "1", "--no-paper", "--no-progress", "--workers", "1", "-o", "{tmp}/tune"],
        ("write",), "stam.results", "tune"),
    "stam paper-check -> a verdict": (["paper-check"], ("verdict",), "stam.theory.items", None),
    "stam pep --region -> a certificate": (
        ["pep", "--region", "--lams", "1", "--betas", "10", "--gamma-range", "0.01:1:4", "--workers", "1",
         "-o", "{tmp}/region.json"],
        ("certify_stam",), "stam.theory", None),
}

CHILD = r"""
import json, os, sys, threading
argv, names, prefix, self_name, out = json.loads(sys.argv[1])
names = set(names)
called = set()

def toolkit():
    return {n: m.__file__ for n, m in list(sys.modules.items())
            if (n == "stam" or n.startswith("stam.")) and getattr(m, "__file__", None)}

def ours(frame):
    module = frame.f_globals.get("__name__") or ""
    return module if module == "stam" or module.startswith("stam.") else None

def hook(frame, event, arg):
    if event != "call":
        return
    module = ours(frame)
    if module is None:
        return
    if frame.f_code.co_name != "<module>":
        called.add(module)
    if frame.f_code.co_name not in names or not module.startswith(prefix):
        return
    if self_name is not None and getattr(frame.f_locals.get("self"), "name", None) != self_name:
        return
    sys.setprofile(None)
    threading.setprofile(None)
    stack, f = [], frame
    while f is not None:
        if ours(f) is not None and f.f_code.co_name != "<module>":
            stack.append(ours(f))
        f = f.f_back
    with open(out, "w") as fh:
        json.dump({"target": f"{module}.{frame.f_code.co_name}", "modules": toolkit(), "called": sorted(called),
                   "stack": list(dict.fromkeys(reversed(stack)))}, fh)
    os._exit(0)

threading.setprofile(hook)
sys.setprofile(hook)
from stam.cli import main
code = main(argv)
sys.setprofile(None)
with open(out, "w") as fh:
    json.dump({"target": None, "exit": code, "modules": toolkit(), "called": sorted(called), "stack": []}, fh)
"""

HELP_CHILD = r"""
import contextlib, io, json, sys
from stam.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(["--help"])
    except SystemExit:
        pass
print(json.dumps({"toolkit": sorted(m for m in sys.modules if m == "stam" or m.startswith("stam.")),
                  "numpy": "numpy" in sys.modules, "modules": len(sys.modules)}))
"""


def lines_of(path) -> int:
    return len(Path(path).read_text(encoding="utf-8").splitlines())


def reader(root: Path):
    """This tree's ``tests/test_layering.py`` (the import and string reader), pointed at ``root``'s modules."""
    spec = importlib.util.spec_from_file_location("structure_scan_layering", HERE / "tests" / "test_layering.py")
    layering = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layering)
    layering.MODULES = layering._modules(root)
    return layering


def measured_root() -> Path:
    """The tree the running interpreter imports ``stam`` from."""
    import stam

    return Path(stam.__file__).resolve().parents[1]


def path_scan(name: str, tmp: str) -> dict:
    """One path of :data:`PATHS`, run in a fresh interpreter up to its target."""
    argv, names, prefix, self_name = PATHS[name]
    out = Path(tmp) / "path.json"
    out.unlink(missing_ok=True)
    argv = [a.replace("{tmp}", tmp) for a in argv]
    t0 = time.perf_counter()
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=tmp))  # cold: no stored findings, compiled kernels ...
    run = subprocess.run([sys.executable, "-c", CHILD, json.dumps([argv, list(names), prefix, self_name, str(out)])],
                         capture_output=True, text=True, timeout=1800, cwd=tmp, env={**os.environ, "STAM_CACHE_DIR": str(cache)})
    seconds = time.perf_counter() - t0
    if not out.is_file():
        return {"argv": argv, "error": (run.stderr or run.stdout).strip().splitlines()[-1:], "seconds": seconds}
    found = json.loads(out.read_text())
    files = found["modules"]
    imported = {m: lines_of(f) for m, f in sorted(files.items())}

    def measure(names) -> dict:
        return {"modules": len(names), "lines": sum(imported[m] for m in names), "list": list(names)}

    return {"argv": argv, "target": found["target"], "reached": found["target"] is not None,
            "seconds_to_target": round(seconds, 2),
            "imported": {"modules": len(imported), "lines": sum(imported.values()), "module_lines": imported},
            "called": measure([m for m in found["called"] if m in imported]),
            "stack": measure([m for m in found["stack"] if m in imported])}


def _parameters(fn) -> int:
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return len(names) - (1 if names[:1] in (["self"], ["cls"]) else 0)


def static_scan(root: Path) -> dict:
    layering = reader(root)
    mods = layering.MODULES
    sizes = {m: lines_of(p) for m, p in mods.items()}
    long_functions, many_parameters = [], []
    for m, p in mods.items():
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > LONG_FUNCTION:
                    long_functions.append({"function": f"{m}.{node.name}", "line": node.lineno, "lines": length})
                n = _parameters(node)
                if n > MANY_PARAMETERS:
                    many_parameters.append({"function": f"{m}.{node.name}", "line": node.lineno, "parameters": n})
    strings = layering.string_graph()
    full = {m: t | strings[m] for m, t in layering.graph().items()}
    cycles = layering._cycles(full)
    return {
        "modules": len(mods), "lines": sum(sizes.values()),
        "string_import_edges": sum(len(t) for t in strings.values()),
        "string_import_edges_by_module": {m: sorted(t) for m, t in sorted(strings.items()) if t},
        "cycles_counting_strings": [{"modules": len(c), "through_stam_results": "stam.results" in c, "members": c}
                                    for c in cycles],
        "largest_modules": [{"module": m, "lines": n} for m, n in sorted(sizes.items(), key=lambda kv: -kv[1])[:10]],
        "functions_over_60_lines": len(long_functions),
        "functions_over_60_lines_list": sorted(long_functions, key=lambda f: -f["lines"]),
        "functions_over_8_parameters": len(many_parameters),
        "functions_with_10_or_more_parameters": sum(f["parameters"] >= 10 for f in many_parameters),
        "functions_over_8_parameters_list": sorted(many_parameters, key=lambda f: -f["parameters"]),
    }


def help_scan() -> dict:
    run = subprocess.run([sys.executable, "-c", HELP_CHILD], capture_output=True, text=True, check=True, timeout=120)
    found = json.loads(run.stdout.strip().splitlines()[-1])
    return {"toolkit_modules": len(found["toolkit"]), "imports_numpy": found["numpy"],
            "all_modules": found["modules"], "toolkit": found["toolkit"]}


def commit_of(root: Path) -> str | None:
    run = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return (run.stdout.strip() + ("+changes" if dirty else "")) if run.returncode == 0 else None


def scan(paths=tuple(PATHS)) -> dict:
    root = measured_root()
    with tempfile.TemporaryDirectory(prefix="stam-structure-") as tmp:
        measured = {name: path_scan(name, tmp) for name in paths}
    return {"root": str(root), "commit": commit_of(root), "paths": measured, "static": static_scan(root),
            "stam_help": help_scan()}


def main(argv=None) -> dict:
    from stam.io import emit_json, provenance

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", required=True, help="the name of this run in the file (e.g. main, layers)")
    ap.add_argument("--paths", default=",".join(PATHS), help="which paths (comma-separated names of PATHS)")
    ap.add_argument("--out")
    ap.add_argument("--append", action="store_true", help="keep the other labels' runs already in --out")
    args = ap.parse_args(argv)
    runs = {}
    if args.append and args.out and Path(args.out).is_file():
        runs = json.loads(Path(args.out).read_text())["runs"]
    runs[args.label] = {**scan(tuple(p for p in args.paths.split(",") if p)), "provenance": provenance(),
                        "cpus": os.cpu_count(), "loadavg": list(os.getloadavg())}
    result = {"kind": "benchmark", "name": "structure_scan", "definition": __doc__,
              "runs": runs}
    emit_json(result, args.out)
    return result


if __name__ == "__main__":
    main()
