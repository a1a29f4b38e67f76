"""Reading the result files the other parts write: :func:`load_results` takes files and folders
(searched recursively, e.g. a ``stam demo`` output folder) and sorts what it finds by result type.

Every file is read through its type (:mod:`stam.results`: each declared in the module that
produces it); the types are found here, in the layer that reads them: :func:`result_types` imports
the modules that produce them (:data:`MODULES`, in the order the report lists their results), so
the core names none of them.  A ``stam train --out DIR`` folder
(config.json, log.jsonl, summary.json) is one ``train-run`` result.  This module holds no format of
its own: a file that breaks its type is one line naming the file and the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from stam import results as _types
from stam.errors import UsageError
from stam.registry import lookup
from stam.results import ResultType, read_json


def _producers() -> tuple:
    """The modules that declare result types, in the order the report lists results of each type (imported
    now; each is light: no torch, sympy or matplotlib at module level).  A module that declares a new type
    is added here once (a test finds every ``ResultType(...)`` of the tree and checks its module is here)."""
    from stam import jobs
    from stam.dnn import epochs, imagefolder, stepsweep, sweep, tune
    from stam.synthetic import convergence_map, methods, rates
    from stam.theory.papercheck import items, store
    from stam.theory.worstcase import lyapunov, methods_region, onset, pep
    from stam.theory.symbolic import numeric

    return (items, numeric, rates, methods, pep, epochs, convergence_map, tune, lyapunov, methods_region, stepsweep, onset,
            sweep, imagefolder, jobs, store)


def __getattr__(attr: str):
    """:data:`MODULES`: the names of the modules that declare result types, in the report's order (found, and
    imported, when first read)."""
    if attr == "MODULES":
        return tuple(m.__name__ for m in _producers())
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


def result_types() -> tuple:
    """Every declared result type (their modules, :data:`MODULES`, imported now), in the order of
    their modules in :data:`MODULES`, then of their declarations."""
    order = {m.__name__: i for i, m in enumerate(_producers())}
    return tuple(sorted(_types.declared_so_far(), key=lambda t: order.get(t.module, len(order))))


def result_type(name: str) -> ResultType:
    """The result type called ``name``; ``KeyError`` naming the known ones."""
    return lookup(result_types(), name, "result type")


def classify(obj) -> ResultType | None:
    """The type of a parsed result file that readers find on their own, or None."""
    return _types.classify_among(obj, result_types())


def kinds() -> tuple:
    """The names of the result types :func:`load_results` finds, in the order the report lists them."""
    return tuple(t.name for t in result_types() if t.found)


@dataclass
class Result:
    """One result: its kind, its parsed content, and the files it came from (for the data links)."""

    kind: str
    data: object
    path: Path
    files: list[Path] = field(default_factory=list)
    meta: dict = field(default_factory=dict)  # provenance of a result whose data is a list
    title: str = ""  # a run folder's name (set by load_run)
    shown_params: dict | None = None  # a run folder's parameters (set by load_run)

    @property
    def provenance(self) -> dict:
        if "provenance" in self.meta:
            return self.meta["provenance"] or {}
        return (self.data.get("provenance") if isinstance(self.data, dict) else None) or {}

    @property
    def name(self) -> str:
        """A short human name for headers and titles (its type's ``title``, or the run's)."""
        if self.title:
            return self.title
        rt = result_type(self.kind)
        if rt.title is not None and isinstance(self.data, dict):
            return rt.title(self.data, self.path)
        return f"{self.kind}: {self.path.name}"

    @property
    def params(self) -> dict:
        """The parameters the report's header shows: its type's ``params``, else the scalars of ``params``."""
        if self.shown_params is not None:
            return self.shown_params
        rt = result_type(self.kind)
        if rt.params is not None:
            return rt.params(self.data)
        d = self.data if isinstance(self.data, dict) else {}
        return {k: v for k, v in (d.get("params") or {}).items() if not isinstance(v, (dict, list))}


@dataclass
class ResultSet:
    """Results sorted by kind (lists keep the order in which they were found)."""

    by_kind: dict[str, list[Result]] = field(default_factory=lambda: {k: [] for k in kinds()})

    def __getitem__(self, kind: str) -> list[Result]:
        return self.by_kind[kind]

    def all(self) -> list[Result]:
        return [r for k in self.by_kind for r in self.by_kind[k]]

    def add(self, result: Result) -> None:
        self.by_kind[result.kind].append(result)


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and ((path / "summary.json").is_file() or (path / "log.jsonl").is_file())


def _run_title(summary: dict) -> str:
    from stam.figures.style import run_label

    copy = " (JPEG copy)" if (summary.get("data_source") or {}).get("kind") == "jpeg-copy" else ""
    return (f"{summary.get('model', '?')} on {summary.get('dataset', '?')}{copy}, "
            f"{run_label(summary.get('algo', '?'), summary.get('preset'), summary.get('label'))}")


def _run_params(config: dict) -> dict:
    """The run's configuration without its provenance and large values (lists, objects over 80 characters)."""
    cfg = {k: v for k, v in config.items() if k != "provenance"}
    small = lambda v: not isinstance(v, (dict, list)) or len(json.dumps(v, default=str)) <= 80  # noqa: E731
    return {k: json.dumps(v, default=str) if isinstance(v, (dict, list)) else v
            for k, v in cfg.items() if small(v) and v not in ({}, [])}


def load_run(path: Path) -> Result:
    """A ``stam train --out DIR`` folder: config, per-epoch log and summary (missing parts empty),
    each file read through its type (``train-config``, ``train-log``, ``train-run``)."""
    data = {"config": {}, "log": [], "summary": {}}
    files = []
    for name, key, kind in (("config.json", "config", "train-config"), ("summary.json", "summary", "train-run"),
                            ("log.jsonl", "log", "train-log")):
        if (path / name).is_file():
            data[key] = result_type(kind).read(path / name)
            files.append(path / name)
    if not files[-1:] or "model" not in data["summary"] and "model" not in data["config"]:
        where = path / ("summary.json" if (path / "summary.json").is_file() else "config.json")
        raise UsageError(f"{where}: field model is missing (a `stam train --out` folder names its model in "
                         "config.json and summary.json)")
    summary = data["summary"]
    config = data["config"]
    for key in ("model", "dataset", "algo", "preset", "label", "data_source"):  # a run still in progress has no summary yet
        if key not in summary and key in config:
            summary[key] = config[key]
    return Result("train-run", data, path, files, {"provenance": summary.get("provenance") or config.get("provenance")},
                  title=_run_title(summary), shown_params=_run_params(config))


def load_file(path: Path, *, strict: bool = True) -> Result | None:
    """One JSON result file, read through its type; unknown content is an error when ``strict``
    (the user named it).  A run's ``summary.json`` stands for its folder."""
    if path.name == "summary.json" and is_run_dir(path.parent):
        return load_run(path.parent)
    obj = read_json(path)
    rt = classify(obj)
    if rt is None:
        if strict:
            raise UsageError(
                f"{path}: not a result this command reads (expected one of: {', '.join(kinds())}; "
                "a train run is given as its folder)"
            )
        return None
    obj = rt.validate(obj, path)
    data, meta = rt.unpack(obj, path) if rt.unpack is not None else (obj, {})
    files = [path]
    if rt.csv and path.with_suffix(".csv").is_file():
        files.append(path.with_suffix(".csv"))
    return Result(rt.name, data, path, files, meta)


def load_results(paths) -> ResultSet:
    """Load every result under ``paths`` (files or folders, folders searched recursively)."""
    results = ResultSet()
    seen: set[Path] = set()

    def visit(path: Path, strict: bool) -> None:
        real = path.resolve()
        if real in seen:
            return
        seen.add(real)
        if is_run_dir(path):
            results.add(load_run(path))
        elif path.is_dir():
            # a report folder (e.g. a `stam demo` output) holds copies of its inputs in data/: skip them
            copies = {"data", "figures", "tables"} if (path / "report.html").is_file() else set()
            for child in sorted(path.iterdir()):
                if child.name.startswith(".") or child.name in copies:
                    continue
                if child.is_dir() or child.suffix == ".json":
                    visit(child, strict=False)
        elif path.is_file():
            if path.suffix not in (".json", ""):
                if strict:
                    raise UsageError(f"{path}: expected a .json result file or a folder")
                return
            result = load_file(path, strict=strict)
            if result is not None:
                results.add(result)
        else:
            raise UsageError(f"{path}: no such file or folder")

    for p in paths:
        visit(Path(p), strict=True)
    return results


def finite(x) -> bool:
    """True for a real finite number (None, NaN and inf are not)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
