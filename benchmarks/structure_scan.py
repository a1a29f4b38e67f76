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
- ``stam paper-check`` -> a verdict: the first call of ``verdict`` in ``stam.theory.papercheck.items``;
- ``stam pep --region`` -> a certificate: the first call of ``certify_stam`` in ``stam.theory`` (one lambda,
  one beta, four gammas).

**Places to edit** (``EDITS``): adding an optimiser, a figure and a ``stam tune`` flag, each done for real on a
copy of the measured tree (its package folders and ``pyproject.toml``, in a temporary folder, imported in a fresh
interpreter through the ``package-dir`` mapping of its ``pyproject.toml``), as docs/contributing.md says: the files
written or changed and the places in them (a new file, a decorated function, a field, a line, an entry of
``dnn/presets.json``), then a check that the toolkit finds the addition with no other edit (the optimiser: a
rule of ``stam.rules``, an algorithm of the catalog, ``stam train --algo toy`` parsed, its preset its default and
resolved, its search space read and sampled; the figure: a kind of ``stam.figures.kinds`` listed by ``stam plot --help``; the flag: in
``stam tune --help`` and in every job's spec of a tuning, its jobs captured before any training).  Tests are not
counted (the docs ask for one per addition).  Before this scan existed the issue counted by hand: an optimiser
7-11 edits in 4-6 files (issue 38).

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
    "stam paper-check -> a verdict": (["paper-check"], ("verdict",), "stam.theory.papercheck.items", None),
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


# -- places to edit: each addition done on a copy of the tree, then checked ------------------------------------
#: the child's import of the copy: each package of ``pyproject.toml``'s ``package-dir`` from the copy's folder
COPY_IMPORT = r"""
import importlib.util, sys, tomllib
from pathlib import Path
root = Path(sys.argv[1])
mapping = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]

class CopyFinder:
    def find_spec(self, name, path=None, target=None):
        if name in mapping:
            where = root / mapping[name]
            return importlib.util.spec_from_file_location(name, where / "__init__.py", submodule_search_locations=[str(where)])
        return None

sys.meta_path.insert(0, CopyFinder())
import stam
assert Path(stam.__file__).resolve().parent == (root / "stam").resolve(), stam.__file__
"""

OPTIMISER_CHECK = r"""
import json
from stam import rules
from stam.cli import build_parser
from stam.dnn import catalog, presets
from stam.dnn.tunespace import sample_trials, search_space
assert "toy" in rules.NAMES and catalog.algorithm("toy").label == "Toy"
assert build_parser().parse_args(["train", "--algo", "toy"]).algo == "toy"
assert presets.default_preset("toy", "digits") == "toy" and presets.resolve(None, "toy", "digits").algo == "toy"
assert search_space("toy") and len(sample_trials("toy", 2)) == 2
print(json.dumps({"found": True}))
"""

FIGURE_CHECK = r"""
import contextlib, io, json
from stam.cli import main
from stam.figures import kinds
assert "toy-figure" in kinds.NAMES
text = io.StringIO()
with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):
    main(["plot", "--help"])
assert "toy-figure" in text.getvalue()
print(json.dumps({"found": True}))
"""

FLAG_CHECK = r"""
import contextlib, io, json, tempfile
from stam.cli import main
from stam.dnn import tune
from stam.dnn.params import TuneParams
text = io.StringIO()
with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):
    main(["tune", "--help"])
assert "--toy-flag" in text.getvalue()

class Captured(Exception):
    pass

def capture(job, specs, *args, **kw):
    raise Captured(list(specs))

tune.run_jobs = capture
try:
    tune.run_tune(TuneParams(dataset="digits", algos=["stam"], trials=1, n_seeds=2, epochs=1, out=tempfile.mkdtemp(),
                             progress=False, workers=1, paper=False, toy_flag=2.5))
    raise AssertionError("no jobs")
except Captured as got:
    specs = got.args[0]
assert specs and all(s["toy_flag"] == 2.5 for s in specs), specs
import stam.dnn.sweep  # its use compiles
print(json.dumps({"found": True, "jobs": len(specs)}))
"""

TOY_FIGURE = '''

@declare_figure("toy-figure", sources=("convergence-map",), section="map", caption="A toy figure.",
                help="toy-figure (the structure scan's)")
def draw_toy(results, nc=None):
    raise ValueError("nothing to draw")
'''


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    if text.count(old) != 1:
        raise ValueError(f"{rel}: the anchor {old[:60]!r} is not there once")
    path.write_text(text.replace(old, new), encoding="utf-8")


def add_optimiser(root: Path) -> list:
    """``toy``: PSGD's file renamed (its pure step a reference to :func:`stam.steps.psgd_step`, its search space
    declared there), and its preset in ``dnn/presets.json``, which is its default as its only one
    (docs/contributing.md, "An optimiser")."""
    text = (root / "stam/rules/psgd.py").read_text(encoding="utf-8")
    for old, new in (("PSGDRule", "ToyRule"), ('"psgd", "PSGD", "eq. (alg:PSGD)", "orange", "v"',
                                                '"toy", "Toy", "eq. (alg:PSGD)", "vermillion", "D"'),
                     ('optimizer_name = "PSGD"', 'optimizer_name = "Toy"')):
        if old not in text:
            raise ValueError(f"stam/rules/psgd.py: {old!r} is not there")
        text = text.replace(old, new)
    (root / "stam/rules/toy.py").write_text(text, encoding="utf-8")
    table_path = root / "dnn/presets.json"
    table = json.loads(table_path.read_text(encoding="utf-8"))
    table["presets"]["toy"] = {**table["presets"]["psgd"], "algo": "toy"}
    table_path.write_text(json.dumps(table, indent=2), encoding="utf-8")
    return [{"file": "stam/rules/toy.py", "what": "a new file: the rule (its step, declaration with its search space, batched form)"},
            {"file": "dnn/presets.json", "what": "presets.toy (its paper preset, its default as its only one)"}]


def add_figure(root: Path) -> list:
    """``toy-figure``: one decorated draw function in a module of ``figures/kinds.py``'s ``MODULES``."""
    path = root / "figures/convergence_map.py"
    path.write_text(path.read_text(encoding="utf-8") + TOY_FIGURE, encoding="utf-8")
    return [{"file": "figures/convergence_map.py", "what": "a function decorated with @declare_figure"}]


def add_tune_flag(root: Path) -> list:
    """``stam tune --toy-flag``: a field of ``TuneParams`` marked ``job`` and its use in the job function."""
    _edit(root, "dnn/params.py", "    tune_seed: int = ",
          '    toy_flag: float = arg("--toy-flag", type=float, default=1.0, job=True, help="a toy flag")\n'
          "    tune_seed: int = ")
    _edit(root, "dnn/sweep.py", "    what = {**TASK_DEFAULTS,",
          '    toy_flag = float(spec.get("toy_flag", 1.0))  # noqa: F841 (its use)\n    what = {**TASK_DEFAULTS,')
    return [{"file": "dnn/params.py", "what": "a field of TuneParams (job=True)"},
            {"file": "dnn/sweep.py", "what": "its use in the job function run_job"}]


#: name -> (the edits, the check run on the edited copy)
EDITS = {"an optimiser": (add_optimiser, OPTIMISER_CHECK), "a figure": (add_figure, FIGURE_CHECK),
         "a stam tune flag": (add_tune_flag, FLAG_CHECK)}
#: the same, counted by hand before this scan (issue 38): an optimiser's edits and files
EDITS_BEFORE = {"an optimiser": {"places": "7-11", "files": "4-6", "how": "by hand (issue 38)"}}


def edit_scan(root: Path, tmp: str) -> dict:
    """:data:`EDITS` on copies of ``root``: for each, the places edited, the files, and whether the check passed."""
    import shutil
    import tomllib

    mapping = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    folders = sorted({Path(d).parts[0] for d in mapping.values()})
    out = {}
    for name, (edit, check) in EDITS.items():
        copy = Path(tempfile.mkdtemp(prefix="edit-", dir=tmp))
        shutil.copy2(root / "pyproject.toml", copy / "pyproject.toml")
        for folder in folders:
            shutil.copytree(root / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
        places = edit(copy)
        run = subprocess.run([sys.executable, "-c", COPY_IMPORT + check, str(copy)], capture_output=True, text=True,
                             timeout=600, cwd=copy, env={**os.environ, "STAM_CACHE_DIR": str(copy / "cache")})
        found = run.returncode == 0
        out[name] = {"places": len(places), "files": len({p["file"] for p in places}), "edits": places, "found": found,
                     "check": json.loads(run.stdout.strip().splitlines()[-1]) if found
                     else (run.stderr or run.stdout).strip().splitlines()[-3:],
                     "before": EDITS_BEFORE.get(name)}
    return out


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


def scan(paths=tuple(PATHS), with_edits: bool = True) -> dict:
    root = measured_root()
    with tempfile.TemporaryDirectory(prefix="stam-structure-") as tmp:
        measured = {name: path_scan(name, tmp) for name in paths}
        edits = edit_scan(root, tmp) if with_edits else None
    return {"root": str(root), "commit": commit_of(root), "paths": measured, "static": static_scan(root),
            "stam_help": help_scan(), "edits": edits}


def main(argv=None) -> dict:
    from stam.io import emit_json, provenance

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", required=True, help="the name of this run in the file (e.g. main, layers)")
    ap.add_argument("--paths", default=",".join(PATHS), help="which paths (comma-separated names of PATHS)")
    ap.add_argument("--out")
    ap.add_argument("--append", action="store_true", help="keep the other labels' runs already in --out")
    ap.add_argument("--no-edits", action="store_true", help="skip the places to edit (EDITS)")
    args = ap.parse_args(argv)
    runs = {}
    if args.append and args.out and Path(args.out).is_file():
        runs = json.loads(Path(args.out).read_text())["runs"]
    runs[args.label] = {**scan(tuple(p for p in args.paths.split(",") if p), not args.no_edits), "provenance": provenance(),
                        "cpus": os.cpu_count(), "loadavg": list(os.getloadavg())}
    result = {"kind": "benchmark", "name": "structure_scan", "definition": __doc__,
              "runs": runs}
    emit_json(result, args.out)
    return result


if __name__ == "__main__":
    main()
