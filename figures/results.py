"""Reading the result files the other parts write (formats: COMMON.md, "Result file formats").

:func:`load_results` takes files and directories (searched recursively, e.g. a ``stam demo``
output folder) and sorts what it finds by kind:

- ``synthetic-rates``   (``stam synthetic run``: ``rates-P.json``, with ``rates-P.csv`` beside it)
- ``synthetic-compare`` (``stam synthetic compare``)
- ``train-run``         (a ``stam train --out DIR`` folder: config.json, log.jsonl, summary.json)
- ``pep-sweep``         (``stam pep --sweep-T ... --out FILE``)
- ``paper-check``       (``stam paper-check --out FILE``: {kind, provenance, items}; or the list
                         of findings that ``--json`` prints)
- ``stepsize``          (``stam stepsize --json``: one recommendation object)
- ``convergence-map``   (``stam map``: ``map-NAME.json`` with ``map-NAME.csv`` beside it; format and
                         validation in :mod:`stam.synthetic.convergence_map`)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from stam.errors import UsageError

KINDS = ("paper-check", "stepsize", "synthetic-rates", "synthetic-compare", "pep-sweep", "train-run", "convergence-map")


@dataclass
class Result:
    """One result: its kind, its parsed content, and the files it came from (for the data links)."""

    kind: str
    data: object
    path: Path
    files: list[Path] = field(default_factory=list)
    meta: dict = field(default_factory=dict)  # provenance of a result whose data is a list

    @property
    def provenance(self) -> dict:
        if "provenance" in self.meta:
            return self.meta["provenance"] or {}
        if isinstance(self.data, dict):
            prov = self.data.get("provenance")
            if prov is None and self.kind == "train-run":
                prov = (self.data.get("summary") or {}).get("provenance") or (self.data.get("config") or {}).get(
                    "provenance"
                )
            return prov or {}
        return {}

    @property
    def name(self) -> str:
        """A short human name for headers and titles."""
        d = self.data if isinstance(self.data, dict) else {}
        if self.kind == "synthetic-rates":
            preset = (d.get("params") or {}).get("preset")
            return f"synthetic rates: {d.get('problem', self.path.stem)}" + (f" at {preset}" if preset else "")
        if self.kind == "synthetic-compare":
            return f"synthetic comparison: {d.get('problem', self.path.stem)}"
        if self.kind == "convergence-map":
            return f"convergence map: {d.get('source')} {d.get('problem', self.path.stem)}"
        if self.kind == "pep-sweep":
            return f"PEP sweep: lambda={d.get('lam')}, gamma={d.get('gamma')}, beta={d.get('beta')}"
        if self.kind == "train-run":
            s = d.get("summary") or {}
            from stam.figures.style import run_label

            return f"{s.get('model', '?')} on {s.get('dataset', '?')}, {run_label(s.get('algo', '?'), s.get('preset'), s.get('label'))}"
        return f"{self.kind}: {self.path.name}"


@dataclass
class ResultSet:
    """Results sorted by kind (lists keep the order in which they were found)."""

    by_kind: dict[str, list[Result]] = field(default_factory=lambda: {k: [] for k in KINDS})

    def __getitem__(self, kind: str) -> list[Result]:
        return self.by_kind[kind]

    def all(self) -> list[Result]:
        return [r for k in KINDS for r in self.by_kind[k]]

    def add(self, result: Result) -> None:
        self.by_kind[result.kind].append(result)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror})") from None


def read_jsonl(path: Path) -> list[dict]:
    """A JSON-lines file; a torn last line (a run still writing) is skipped."""
    rows = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise UsageError(f"{path}: line {i + 1} is not valid JSON") from None
    return rows


def classify(obj) -> str | None:
    """The kind of a parsed JSON result, or None if it is not one this module reads."""
    if isinstance(obj, dict):
        kind = obj.get("kind")
        if kind in KINDS:
            return kind
        if kind in ("paper-check", "paper_check") or isinstance(obj.get("items", obj.get("findings")), list):
            return "paper-check"
        if kind in ("stepsize", "stepsize-recommendation") or {"gamma_max", "beta_min", "binding"} <= obj.keys():
            return "stepsize"
        return None
    if isinstance(obj, list) and obj and all(isinstance(x, dict) and {"label", "verdict"} <= x.keys() for x in obj):
        return "paper-check"
    return None


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and ((path / "summary.json").is_file() or (path / "log.jsonl").is_file())


def load_run(path: Path) -> Result:
    """A ``stam train --out DIR`` folder: config, per-epoch log and summary (missing parts empty)."""
    data = {"config": {}, "log": [], "summary": {}}
    files = []
    for name, key in (("config.json", "config"), ("summary.json", "summary")):
        if (path / name).is_file():
            data[key] = _read_json(path / name)
            files.append(path / name)
    if (path / "log.jsonl").is_file():
        data["log"] = read_jsonl(path / "log.jsonl")
        files.append(path / "log.jsonl")
    summary = data["summary"]
    config = data["config"]
    for key in ("model", "dataset", "algo", "preset", "label"):  # a run still in progress has no summary yet
        if key not in summary and key in config:
            summary[key] = config[key]
    return Result("train-run", data, path, files)


def load_file(path: Path, *, strict: bool = True) -> Result | None:
    """One JSON result file; unknown content is an error when ``strict`` (the user named it)."""
    obj = _read_json(path)
    kind = classify(obj)
    if kind is None:
        if strict:
            raise UsageError(
                f"{path}: not a result this command reads (expected one of: {', '.join(KINDS)}; "
                "a train run is given as its folder)"
            )
        return None
    meta = {}
    if kind == "paper-check" and isinstance(obj, dict):  # `stam paper-check --out FILE`: {kind, provenance, items}
        meta = {"provenance": obj.get("provenance")}
        obj = obj.get("items", obj.get("findings"))
    if kind == "convergence-map":
        from stam.synthetic.convergence_map import validate_map

        validate_map(obj, path)
    files = [path]
    csv = path.with_suffix(".csv")
    if kind in ("synthetic-rates", "convergence-map") and csv.is_file():
        files.append(csv)
    return Result(kind, obj, path, files, meta)


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
