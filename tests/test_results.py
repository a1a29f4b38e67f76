"""Result types (:mod:`stam.results`): each declared once, in the module that produces it, found by
the layer that reads them, importing the modules of ``stam.figures.results.MODULES`` (and nowhere else:
no list of names kept in step; the core names none of them);
written and read through its type; every type the report reads is drawn by a table or a figure
declared with it, and fed malformed to the fuzzer."""

from __future__ import annotations

import ast
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fuzz import valid_files

from stam.errors import UsageError
from stam.figures.results import MODULES, classify, result_type, result_types
from stam.results import ResultType, Schema

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"stam": "stam", "stam.theory": "theory", "stam.theory.symbolic": "theory/symbolic",
            "stam.theory.worstcase": "theory/worstcase", "stam.theory.papercheck": "theory/papercheck", "stam.theory.papercheck.items": "theory/papercheck/items", "stam.synthetic": "synthetic",
           "stam.dnn": "dnn", "stam.figures": "figures"}


def _declaring_modules() -> set[str]:
    """Every module of the tree whose source calls ``ResultType(...)`` (read, not imported)."""
    found = set()
    for pkg, folder in FOLDERS.items():
        for path in (ROOT / folder).glob("*.py"):
            name = pkg if path.stem == "__init__" else f"{pkg}.{path.stem}"
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if name != "stam.results" and any(isinstance(n, ast.Call) and getattr(n.func, "id", None) == "ResultType"
                                              for n in ast.walk(tree)):
                found.add(name)
    return found


def test_every_declaring_module_is_found_and_every_found_module_declares():
    assert _declaring_modules() == set(MODULES)
    assert {t.module for t in result_types()} == set(MODULES)


def test_the_types_are_declared_once_each_where_their_producer_is():
    names = [t.name for t in result_types()]
    assert len(names) == len(set(names))
    where = {t.name: t.module for t in result_types()}
    assert where["synthetic-rates"] == "stam.synthetic.rates" and where["lyapunov-region"] == "stam.theory.worstcase.lyapunov"
    assert where["pep-sweep"] == "stam.theory.worstcase.pep" and where["convergence-map"] == "stam.synthetic.convergence_map"
    assert where["tune"] == "stam.dnn.tune" and where["network-job"] == "stam.dnn.sweep"
    with pytest.raises(ValueError, match="declared twice"):
        ResultType("pep-sweep", Schema(), module="somewhere.else")
    with pytest.raises(KeyError, match="choose one of: paper-check, stepsize"):
        result_type("nope")


def test_finding_the_types_imports_no_torch_sympy_or_matplotlib():
    code = ("import sys; from stam.figures.results import result_types; result_types(); "
            "print(sorted(m for m in ('torch', 'sympy', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _type_of(name: str, obj) -> ResultType:
    base = Path(name).name
    if base in ("config.json", "log.jsonl"):
        return result_type("train-config" if base == "config.json" else "train-log")
    return classify(obj)


def test_the_fuzzer_feeds_a_file_of_every_type_a_reader_reads():
    fed = {_type_of(name, obj).name for name, obj in valid_files().items()}
    read = {t.name for t in result_types() if t.found} | {"train-config", "train-log"}
    assert read <= fed, read - fed


@pytest.mark.parametrize("name", sorted(valid_files()))
def test_write_then_read_gives_back_what_was_written(tmp_path, name):
    obj = valid_files()[name]
    rt = _type_of(name, obj)
    path = tmp_path / Path(name).name
    rt.write(obj, path)
    back = rt.read(path)
    assert back == ({**obj, "format": rt.format} if rt.format > 1 else obj)  # the writer stamps the format
    if rt.csv:  # the CSV twin of the rows, written with it
        lines = path.with_suffix(".csv").read_text().splitlines()
        assert lines[0] == ",".join(rt.csv) and len(lines) == 1 + len(obj["rows"])


def test_a_writer_checks_before_it_writes(tmp_path):
    rt = result_type("pep-sweep")
    bad = dict(valid_files()["pep.json"], lam=-1.0)
    with pytest.raises(UsageError, match="field lam must be a finite number > 0"):
        rt.write(bad, tmp_path / "pep.json")
    assert list(tmp_path.iterdir()) == []


def test_every_type_the_report_reads_is_drawn_by_a_table_or_a_figure():
    """A table or figure declares the result types it draws; a type nobody draws would be read and
    never shown.  Each declared source is a type the readers find."""
    from stam.figures import tables
    from stam.figures.kinds import FIGURES
    from stam.figures.report import SECTIONS

    found = {t.name for t in result_types() if t.found}
    drawn = {s for k in (*FIGURES, *tables.TABLES) for s in k.sources}
    assert drawn <= found and found <= drawn, (found - drawn, drawn - found)
    assert {tk.section for tk in tables.TABLES} <= {sid for sid, _ in SECTIONS}
    assert len({tk.name for tk in tables.TABLES}) == len(tables.TABLES)


ROWS = st.lists(st.one_of(st.none(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=3),
                          st.dictionaries(st.sampled_from(["score", "selected_epoch", "diverged_epoch", "val_curve",
                                                           "sign_ever", "test_acc"]),
                                          st.one_of(st.none(), st.integers(-2, 200), st.floats(allow_nan=True),
                                                    st.lists(st.floats(0, 100), max_size=2)))), max_size=3)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(ROWS)
def test_a_stored_network_job_is_checked_through_its_type(rows):
    """``stam.jobs`` resumes tune and map from job files: a damaged one is a UsageError naming the
    file and the field (the job then runs again), never another exception."""
    from stam.dnn.sweep import check_job

    spec = {"overrides": [{}] * len(rows), "test": False}
    try:
        check_job({"rows": copy.deepcopy(rows)}, spec, "jobs/abc.json")
    except UsageError as exc:
        assert str(exc).startswith("jobs/abc.json: ") and "\n" not in str(exc)


def test_an_old_network_map_is_refused_by_its_format_and_a_synthetic_one_read(tmp_path):
    rt = result_type("convergence-map")
    old = {k: v for k, v in valid_files()["map.json"].items() if k != "format"}
    with pytest.raises(UsageError, match="format is 1: a network map of format 1 holds its accuracies as fractions"):
        rt.validate(old, tmp_path / "m.json")
    synthetic = dict(old, source="synthetic", metric="S_final")
    assert rt.validate(synthetic, tmp_path / "m.json") is synthetic
    assert json.loads(rt.text(synthetic))["format"] == 2


def _set(obj, path, value):
    obj = copy.deepcopy(obj)
    parent = obj
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = value
    return obj


_OFFICIAL = {"kind": "official", "file": "cifar-10-python.tar.gz", "sha256": "0" * 64}


@pytest.mark.parametrize("name, path, value, field", [
    ("map.json", ("params", "width"), float("nan"), "params.width"),
    ("map.json", ("params", "width"), "<script>alert(1)</script>", "params.width"),
    ("map.json", ("params", "width"), 1e308, "params.width"),
    ("map.json", ("params", "epochs"), 10**30, "params.epochs"),
    ("map.json", ("data_source",), dict(_OFFICIAL, kind="jpeg-cpy"), "data_source.kind"),
    ("tune.json", ("width",), 1e308, "width"),
    ("tune.json", ("params", "epochs"), 10**30, "params.epochs"),
    ("tune.json", ("data_source",), dict(_OFFICIAL, kind="photocopy"), "data_source.kind"),
    ("tune.json", ("algorithms", 0, "final", "ci95"), [90.0], "algorithms[0].final.ci95"),
    ("tune.json", ("algorithms", 0, "final", "ci95"), [91.0, 90.0], "algorithms[0].final.ci95"),
    ("run/summary.json", ("width",), 1e308, "width"),
    ("run/config.json", ("epochs",), 10**30, "epochs"),
    ("region.json", ("sampling",), [2, 1], "sampling"),
    ("region.json", ("sampling",), {"N": 2, "b": 3}, "sampling.b"),
    ("region.json", ("f_class",), "weakly-convex", "f_class"),
    ("rates.json", ("rows",), [], "rows"),
    ("rates.json", ("rows", 1, "T"), 10**400, "rows[1].T"),
])
def test_values_the_types_let_through_are_refused_naming_the_file_and_field(tmp_path, name, path, value, field):
    """Issue 40 item 6: a map's width NaN, a string or 1e308, 10^30 epochs, an unknown data-source
    kind (read as the official images), a region's sampling as a list or an unknown class of F, a
    rates file with no rows or T = 10^400, a ci95 of one bound: each one line naming file and field."""
    good = valid_files()[name]
    rt = _type_of(name, good)
    rt.validate(good, tmp_path / "f.json")
    if path[0] in ("data_source", "sampling", "f_class"):  # the good values of these fields pass
        ok = {"data_source": _OFFICIAL, "sampling": {"N": 2, "b": 1, "growth_per_rate": 1.0}, "f_class": "lsc"}[path[0]]
        rt.validate(_set(good, path, ok), tmp_path / "f.json")
    bad = _set(good, path, value)
    target = tmp_path / Path(name).name
    target.write_text(json.dumps(bad))
    with pytest.raises(UsageError) as err:
        rt.read(target)
    msg = str(err.value)
    assert str(target) in msg and f"field {field} " in msg and "\n" not in msg, msg


def test_mathml_nested_3000_deep_is_shown_as_text_not_a_recursion_error():
    from stam.theory.symbolic.mathml import MAX_DEPTH, sanitize

    deep = lambda n: "<math>" + "<mrow>" * n + "<mi>x</mi>" + "</mrow>" * n + "</math>"  # noqa: E731
    assert sanitize(deep(3000)) is None  # (the caller shows it as text)
    assert sanitize(deep(MAX_DEPTH - 2)).count("<mrow>") == MAX_DEPTH - 2
