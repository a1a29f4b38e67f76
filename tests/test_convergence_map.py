"""`stam map`: the synthetic evaluator (format, admissible flags, convergence inside the theorem's
region, divergence marked), the figure (synthetic and digits-style files), the command's bad
inputs (exit 2, nothing written) and the report (figure present, hostile text escaped)."""

from __future__ import annotations

import copy
import importlib.machinery
import json
import math
import os
import sys
import types
from html.parser import HTMLParser

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stam.cli import main
from stam.errors import UsageError
from stam.figures.map_experiment import format_map, map_caption, summary
from stam.figures.map_figure import cell_edges, plot_map
from stam.figures.results import load_results
from stam.results import rows_csv
from stam.cliargs import log_grid
from stam.synthetic.convergence_map import MAP, ROW_KEYS, admissible_flags, run_map, write_map


def validate_map(obj):
    return MAP.validate(obj, "map.json")
from stam.theory.symbolic import numeric
from stam.theory.symbolic.numeric import GAMMA_LAMBDA_LIMIT

GAMMA_IN, LAM = 0.05, 1.0  # inside the theorem's region: 5 (0.05)^2 + 4 (0.05) < 1


def beta_min(gamma, lam):
    c = numeric.quadratic_coupling(lam)
    return float(2 * numeric.K2(gamma, c) / numeric.K1(gamma, c))


@pytest.fixture(scope="module")
def tiny_map():
    """Two gammas (inside / far outside), two lambdas, an admissible beta and a wildly large step."""
    b_ok = 1.5 * beta_min(GAMMA_IN, LAM)
    return run_map("binary", gammas=[GAMMA_IN, 30.0], lams=[LAM, 4.0], betas=[b_ok, 1e-3], iterations=60, seeds=2)


def row(result, gamma, lam, beta):
    (r,) = [r for r in result["rows"] if (r["gamma"], r["lam"], r["beta"]) == (gamma, lam, beta)]
    return r


def test_tiny_map_validates_and_flags_agree_with_the_theory(tiny_map, tmp_path):
    assert validate_map(tiny_map) is tiny_map  # (no "format" in it: format 1, read as it is for a synthetic map)
    assert len(tiny_map["rows"]) == 2 * 2 * 2
    assert {(r["gamma"], r["lam"]) for r in tiny_map["rows"]} == {(g, lam) for g in (GAMMA_IN, 30.0) for lam in (LAM, 4.0)}
    for r in tiny_map["rows"]:
        expected = numeric.check(r["gamma"], r["beta"], numeric.quadratic_coupling(r["lam"]))["admissible"]
        assert r["admissible"] is bool(expected)
        assert r["seeds"] == 2 and 0 <= r["diverged"] <= 2
    assert sum(r["admissible"] for r in tiny_map["rows"]) == 1  # only (GAMMA_IN, LAM, b_ok)
    json_path, csv_path = write_map(tiny_map, tmp_path, "map-binary")
    loaded = json.loads(json_path.read_text())
    assert loaded["provenance"]["versions"]["stam"] and validate_map(loaded)
    lines = csv_path.read_text().splitlines()
    assert lines[0] == ",".join(ROW_KEYS) and len(lines) == 1 + len(tiny_map["rows"])


def test_admissible_cell_decreases_and_a_huge_step_diverges(tiny_map):
    b_ok = 1.5 * beta_min(GAMMA_IN, LAM)
    good = row(tiny_map, GAMMA_IN, LAM, b_ok)
    assert good["admissible"] and good["diverged"] == 0
    assert good["metric"] < good["S_0"] and good["S_min"] <= good["metric"]
    bad = row(tiny_map, GAMMA_IN, LAM, 1e-3)  # y-step 1000 x the gradient
    assert not bad["admissible"]
    assert bad["diverged"] == bad["seeds"] and bad["metric"] is None and bad["metric_std"] is None
    assert "D" in format_map(tiny_map)


def test_admissible_flags_match_check_on_random_points():
    gs, ls, bs = [1e-3, 0.05, 0.19, 0.3, 8.0], [0.05, 1.0, 4.0, 0.5, 30.0], [1e5, 300.0, 1e4, 1e6, 1000.0]
    flags = admissible_flags(gs, ls, bs)
    assert flags == [bool(numeric.check(g, b, numeric.quadratic_coupling(lam))["admissible"]) for g, lam, b in zip(gs, ls, bs)]
    assert flags[-1] is False  # the paper's Our1 (gamma 8, lambda 0.5, beta 1000) lies outside


@given(st.floats(1e-6, 1e3), st.floats(1.0, 1e4), st.integers(1, 40))
def test_log_grid_and_cell_edges(lo, ratio, n):
    hi = lo * ratio
    try:
        grid = log_grid(lo, hi, n)
    except ValueError as exc:  # only where the floats between lo and hi are too few for n increasing values
        assert "fewer than" in str(exc) and hi <= lo * (1 + 4 * n * 2.0**-52)
        return
    assert grid[0] == lo and len(grid) == (1 if lo == hi else n)
    if len(grid) > 1:
        assert grid[-1] == hi
        assert all(a < b for a, b in zip(grid, grid[1:]))
    edges = cell_edges(sorted(set(grid)))
    assert all(edges[i] < v < edges[i + 1] for i, v in enumerate(sorted(set(grid))))


def digits_fixture(problem="digits-mlp", floats=False) -> dict:
    """A network map of 2 x 3 x 2 cells, one diverged; ``floats``: with the float weights' accuracy (a map
    written before it was recorded has none)."""
    rows = []
    for g in (0.01, 1.0, 8.0):
        for lam in (0.5, 4.0):
            for b in (100.0, 1000.0):
                div = 2 if g == 8.0 and lam == 4.0 else 0
                rows.append(dict(gamma=g, lam=lam, beta=b, seeds=2, metric=None if div else 40.0 + 5.0 * lam,
                                 metric_std=None if div else 1.0, diverged=div,
                                 sign_ever_changed=None if div else min(1.0, 0.1 * g), admissible=False))
                if floats:
                    rows[-1].update(val_acc_float=None if div else 50.0 + g + b / 1000, val_acc_float_std=None if div else 0.5)
    for r, a in zip(rows, admissible_flags(*zip(*[(r["gamma"], r["lam"], r["beta"]) for r in rows]))):
        r["admissible"] = a
    return {"kind": "convergence-map", "format": 2, "provenance": {"created": "2026-01-01T00:00:00+00:00", "versions": {}},
            "source": "digits", "problem": problem, "metric": "val_acc_binary",
            "metric_label": "validation accuracy with binary weights", "beta_rule": {"kind": "fixed", "values": [100, 1000]},
            "beta_rule_text": "beta fixed at 100, 1000", "budget": {"epochs": 3}, "params": {"model": "mlp"}, "rows": rows}


def test_figure_renders_for_a_synthetic_and_a_digits_map(tiny_map, tmp_path, capsys):
    write_map(tiny_map, tmp_path, "map-binary")
    (tmp_path / "digits.json").write_text(json.dumps(digits_fixture()))
    for src, out in (("map-binary.json", "syn.png"), ("digits.json", "dig.png")):
        assert main(["plot", "map", str(tmp_path / src), "-o", str(tmp_path / out)]) == 0
        png = tmp_path / out
        assert png.stat().st_size > 10_000 and png.with_suffix(".pdf").stat().st_size > 1000
    fig = plot_map([digits_fixture()])
    titled = [a.get_title() for a in fig.axes if a.get_visible() and a.get_title()]
    assert [sum(what in t for t in titled) for what in ("binary accuracy", "float accuracy", "sign changes")] == [2, 2, 2]
    ax = next(a for a in fig.axes if a.get_visible() and a.get_title())
    labels = [line.get_label() for line in ax.get_lines()]
    assert "\u03b3\u03bb = 1/\u221a5" in labels and any("Our1" in lab for lab in labels)
    (curve,) = [line for line in ax.get_lines() if line.get_label() == "\u03b3\u03bb = 1/\u221a5"]
    x, y = curve.get_data()
    assert max(abs(a * b - GAMMA_LAMBDA_LIMIT) for a, b in zip(x, y)) < 1e-12


def test_caption_and_summary_count_cells():
    d = digits_fixture()
    s = summary(d)
    assert s["all"]["cells"] == 12 and s["all"]["diverged"] == 2
    assert s["below"]["cells"] + s["above"]["cells"] == 12
    assert s["below"]["cells"] == sum(r["gamma"] * r["lam"] < GAMMA_LAMBDA_LIMIT for r in d["rows"])
    assert s["all"]["good"] == sum(r["metric"] is not None and r["metric"] >= 50.0 for r in d["rows"])
    cap = map_caption(d)
    assert "Of 12 (" in cap and "1/\u221a5" in cap and f"{s['all']['admissible']} cells satisfy" in cap


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.pop("rows"), "rows"),
    (lambda d: d["rows"][1].update(gamma=-1), "rows[1].gamma"),
    (lambda d: d["rows"][0].update(diverged=5), "rows[0].diverged"),
    (lambda d: d["rows"][2].update(sign_ever_changed=1.5), "rows[2].sign_ever_changed"),
    (lambda d: d["rows"][0].update(admissible="yes"), "rows[0].admissible"),
    (lambda d: d["rows"][0].update(metric=145.0), "rows[0].metric"),
    (lambda d: d.pop("format"), "format"),  # a network map of format 1 held fractions: refused by name
    (lambda d: d.update(source="cifar"), "source"),
    (lambda d: d.update(metric="S_final"), "metric"),
    (lambda d: d.update(beta_rule={"kind": "fixed", "values": []}), "beta_rule.values"),
    (lambda d: d["rows"].__setitem__(3, "x"), "rows[3]"),
])
def test_a_malformed_map_file_is_one_line_naming_file_and_field(tmp_path, capsys, mutate, field):
    d = copy.deepcopy(digits_fixture())
    mutate(d)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    assert main(["plot", "map", str(path), "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and f"field {field} " in err
    assert not (tmp_path / "x.png").exists()
    with pytest.raises(UsageError):
        load_results([path])


def test_stam_map_writes_json_csv_and_figure_and_prints_a_table(tmp_path, capsys):
    out = tmp_path / "m"
    argv = ["map", "--problem", "binary", "--gammas", "0.05,30", "--lam-range", "0.5:4:2", "--betas", "420,1e-3",
            "--iterations", "30", "--n-seeds", "2", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert {p.name for p in out.iterdir()} == {f"map-binary.{e}" for e in ("json", "csv", "png", "pdf")}
    data = validate_map(json.loads((out / "map-binary.json").read_text()))
    assert data["params"]["lams"] == [0.5, 4.0] and data["budget"] == {"iterations": 30}
    assert "beta = 420" in text and "map binary: 8 cells" in text and "D" in text and "*" in text


BAD = [
    (["--problem", "nope"], "known: binary"),
    (["--problem", "binary", "--gamma-range", "3:1:4"], "inverted"),
    (["--problem", "binary", "--lam-range", "1:3:0"], "N = 0"),
    (["--problem", "binary", "--gamma-range", "0:3:4"], "> 0"),
    (["--problem", "binary", "--gamma-range", "1:3:100000"], "between 1 and 200"),
    (["--problem", "binary", "--gamma-range", "1:3"], "LO:HI:N"),
    (["--problem", "binary", "--lams", ","], "empty"),
    (["--problem", "binary", "--lams", "1,-2"], "-2"),
    (["--problem", "binary", "--gammas", "1,x"], "'x'"),
    (["--problem", "binary", "--betas", "0"], "0"),
    (["--problem", "binary", "--betas", "nan"], "nan"),
    (["--problem", "binary", "--iterations", "0"], "--iterations"),
    (["--problem", "binary", "--growth", "1"], "--growth"),
    (["--problem", "binary", "--epochs", "3"], "--epochs"),
    (["--problem", "binary", "--dataset", "digits"], "not allowed with"),
    (["--problem", "binary", "--gammas", "1", "--gamma-range", "1:2:2"], "not allowed with"),
]


@pytest.mark.parametrize("argv, needle", BAD)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, argv, needle):
    out = tmp_path / "out"
    try:
        code = main(["map", *argv, "--out", str(out), "--no-progress"])
    except SystemExit as exc:  # argparse's own checks
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in err
    assert not out.exists()


def test_out_that_is_a_file_or_unwritable_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    import stam.synthetic.convergence_map as CM

    monkeypatch.setattr(CM, "run_map", lambda *a, **k: pytest.fail("ran before checking --out"))
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["map", "--problem", "binary", "--out", str(f)]) == 2
    assert "is a file" in capsys.readouterr().err and f.read_text() == "x"
    assert main(["map", "--problem", "binary", "--out", str(f / "sub")]) == 2
    assert "is a file, so no folder can be made under it" in capsys.readouterr().err
    assert main(["map", "--problem", "binary", "--out", "/proc/no-such/dir"]) == 2
    assert "not writable" in capsys.readouterr().err


def test_digits_map_calls_map_digits_and_fills_admissible(tmp_path, capsys, monkeypatch):
    calls = []

    def map_digits(gammas, lams, betas, seeds, epochs, batch_size=32, progress=True, **jobs):
        calls.append((gammas, lams, betas, seeds, epochs, progress))
        rows = [dict(r) for r in digits_fixture()["rows"]]
        for r in rows:
            r.pop("admissible")
        return rows

    module = types.ModuleType("stam.dnn.sweep")
    module.__spec__ = importlib.machinery.ModuleSpec("stam.dnn.sweep", None)
    module.map_digits = map_digits
    from stam.dnn.sweep import task_spec

    module.task_spec = task_spec
    module.check_task = lambda task: None
    module.data_source = lambda task: {"kind": "scikit-learn"}
    monkeypatch.setitem(sys.modules, "stam.dnn.sweep", module)
    out = tmp_path / "d"
    assert main(["map", "--dataset", "digits", "--gammas", "0.01,1,8", "--lams", "0.5,4", "--betas", "100,1000",
                 "--epochs", "3", "--n-seeds", "2", "--out", str(out), "--no-progress"]) == 0
    assert calls == [([0.01, 1.0, 8.0], [0.5, 4.0], [100.0, 1000.0], 2, 3, False)]
    data = validate_map(json.loads((out / "map-digits.json").read_text()))
    assert data["source"] == "digits" and data["budget"] == {"epochs": 3}
    assert [r["admissible"] for r in data["rows"]] == [r["admissible"] for r in digits_fixture()["rows"]]
    assert (out / "map-digits.png").stat().st_size > 10_000
    assert "%" in capsys.readouterr().out


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.scripts = [], 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        self.scripts += tag == "script"


def test_report_draws_the_map_and_escapes_a_hostile_problem(tiny_map, tmp_path):
    hostile = "<script>alert(1)</script>$\\x^{"
    d = digits_fixture(problem=hostile)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "map-digits.json").write_text(json.dumps(d))
    write_map(tiny_map, tmp_path / "in", "map-binary")
    assert main(["report", str(tmp_path / "in"), "-o", str(tmp_path / "rep")]) == 0
    html = (tmp_path / "rep" / "report.html").read_text()
    page = _Page()
    page.feed(html)
    assert "fig-map" in page.ids and page.scripts == 0
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert (tmp_path / "rep" / "figures" / "map.png").stat().st_size > 10_000
    assert "map-binary.csv" in html  # the CSV twin is linked with the data
    assert "Of 8 (" in html and "Of 12 (" in html  # both captions, with their numbers


def test_rows_csv_leaves_null_cells_empty(tiny_map):
    lines = rows_csv(tiny_map["rows"], ROW_KEYS).splitlines()
    diverged = [line for line, r in zip(lines[1:], tiny_map["rows"]) if r["metric"] is None]
    assert diverged and all(",," in line for line in diverged)
    assert math.isclose(float(lines[1].split(",")[0]), tiny_map["rows"][0]["gamma"])


@pytest.mark.parametrize("extra, bad", [(["--model", "vgg11"], "--model vgg11 does not take digits's 1x8x8 images"),
                                        (["--dataset", "cifar10", "--data-dir", "nowhere"], "CIFAR-10 not found"),
                                        (["--problem", "binary", "--width", "0.5"], "--width is for a network map")])
def test_network_map_checks_its_task_before_any_work(tmp_path, capsys, extra, bad):
    out = tmp_path / "m"
    argv = ["map", "--gammas", "1", "--lams", "1", "--epochs" if "--problem" not in extra else "--iterations", "1",
            "--out", str(out), "--no-progress", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("stam: error:") and bad in err[0]
    assert not (out / "map-digits.json").exists() and not (out / "jobs").exists()


@pytest.mark.parametrize("argv, message", [
    (["--dataset", "digits", "--seed", "5"], "--seed is for a synthetic map"),
    (["--dataset", "digits", "--growth", "10"], "--growth is for a synthetic map"),
    (["--dataset", "digits", "--threads", "2"], "--threads is for a synthetic map"),
    (["--problem", "binary", "--workers", "2"], "--workers is for a network map"),
    (["--problem", "binary", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler is for a network map"),
])
def test_a_flag_the_map_would_ignore_is_an_error(tmp_path, capsys, argv, message):
    assert main(["map", *argv, "--out", str(tmp_path / "m"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not (tmp_path / "m").exists()


REGION = __import__("pathlib").Path(__file__).parents[1] / "benchmarks" / "results" / "lyapunov_region.json"


def test_the_map_draws_the_region_of_the_papers_class_beside_convex(tiny_map, tmp_path, capsys):
    """Issue 22: on a map of H = (lambda/2)||x - y||^2 the limits of a lyapunov-region file are lines (the paper
    form for lsc F, with minibatches, convex F, refuted), at the file's own gammas; the caption states them with
    numbers and with the finite-horizon M0'_T; `stam map --region FILE` draws them; a file of another kind is
    one line."""
    from stam.figures.convergence_map import caption

    region = json.loads(REGION.read_text())
    rows = sorted(region["rows"], key=lambda r: r["lam"])
    fig = plot_map([digits_fixture()], regions=[region])
    ax = next(a for a in fig.axes if a.get_visible() and a.get_title())
    lines = {line.get_label(): line for line in ax.get_lines()}
    x, y = lines["lsc F: paper-form potential certifies up to here"].get_data()
    assert list(y) == [r["lam"] for r in rows] and list(x) == [r["paper"]["lo"] for r in rows]
    x, _ = lines["the same, minibatches N = 2, b = 1"].get_data()
    assert [v for v in x if v == v] == [r["sampled"]["lo"] for r in rows if r["sampled"]["lo"] is not None]  # nan: none
    assert "convex F: a one-step potential certifies up to here" in lines
    x, _ = lines["lsc F: stam pep unbounded from here (M\u2080'_T)"].get_data()
    assert list(x) == [r["refuted"]["hi"] for r in rows]
    (tmp_path / "digits.json").write_text(json.dumps(digits_fixture()))
    cap = caption(load_results([tmp_path / "digits.json", REGION]))
    top = max(r["paper"]["lo"] * r["lam"] for r in rows)
    assert "certifies STAM up to \u03b3\u03bb = " in cap and f"{top:.3g}" in cap and "M\u2080'_T" in cap
    out = tmp_path / "m"
    argv = ["map", "--problem", "binary", "--gammas", "0.05,30", "--lams", "1", "--betas", "420", "--iterations", "10",
            "--seeds", "1", "--no-progress", "--out", str(out)]
    assert main([*argv, "--region", str(REGION)]) == 0 and (out / "map-binary.png").stat().st_size > 10_000
    capsys.readouterr()
    assert main([*argv[:-1], str(tmp_path / "n"), "--region", str(out / "map-binary.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "expected one lyapunov-region file" in err and not (tmp_path / "n").exists()


def test_a_map_with_a_store_makes_no_temporary_folder(tmp_path, monkeypatch):
    """Issue 40: with a job store (``stam map`` keeps OUT/jobs), no TemporaryDirectory is made in
    $TMPDIR (a killed run left an empty one there); without one, the temporary store is used."""
    import tempfile

    from stam.dnn import sweep as S

    class Stop(Exception):
        pass

    seen = []

    def run_jobs(fn, specs, where, **kw):
        seen.append(where)
        raise Stop

    monkeypatch.setattr(S, "run_jobs", run_jobs)
    real = tempfile.TemporaryDirectory
    monkeypatch.setattr(tempfile, "TemporaryDirectory", lambda *a, **k: pytest.fail("a temporary folder was made"))
    with pytest.raises(Stop):
        S.map_digits([0.1], [0.5], [20.0], seeds=1, epochs=1, store=tmp_path / "jobs", progress=False)
    assert seen == [tmp_path / "jobs"]
    monkeypatch.setattr(tempfile, "TemporaryDirectory", real)
    with pytest.raises(Stop):
        S.map_digits([0.1], [0.5], [20.0], seeds=1, epochs=1, progress=False)
    assert len(seen) == 2 and os.path.basename(seen[1]).startswith("stam-map-") and not os.path.exists(seen[1])


def test_the_map_figure_has_no_empty_places_and_names_only_what_it_draws():
    """Issue 37, point 5: panels of maps with different numbers of betas flow over one grid with the fewest empty
    places that keeps each row of panels (one quantity of one map, a panel per beta, one colour bar) on one line of
    the grid (3 rows x 2 betas + 3 rows x 1 beta: two columns, five lines, one empty place; 3 x 2 of one map: two
    columns, no empty place; one beta: one line of three), and the legend, one for the figure, names divergence only
    where a cell diverged."""
    from stam.figures.map_figure import columns

    assert [columns(w) for w in ([2, 2, 2, 1, 1, 1], [2, 2, 2], [1, 1, 1], [3, 3, 3], [2, 2], [1, 1, 1, 1], [1])] == [
        2, 2, 3, 3, 2, 2, 1]
    two = digits_fixture()
    one = digits_fixture("digits-cnn")
    one["rows"] = [r for r in one["rows"] if r["beta"] == 100.0]
    one["beta_rule"] = {"kind": "fixed", "values": [100]}
    fig = plot_map([two, one])
    panels = [a for a in fig.axes if a.get_title()]
    assert len(panels) == 9 and all(a.get_visible() for a in panels)  # three rows (binary, float, signs) of 2 + 1 betas
    places = {a.get_title(): a.get_subplotspec().get_geometry() for a in panels}  # (rows, columns, index, index)
    assert {g[:2] for g in places.values()} == {(5, 2)} and {g[2] for g in places.values()} == set(range(9))
    for what in ("binary accuracy", "float accuracy", "sign changes"):  # the two betas of a row on one line
        assert len({g[2] // 2 for t, g in places.items() if what in t and t.startswith("digits-mlp")}) == 1
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "all seeds diverged" in texts and "some seeds diverged" not in texts  # the fixture: 2 of 2 seeds, once
    calm = digits_fixture()
    calm["rows"] = [r for r in calm["rows"] if not r["diverged"]]
    fig = plot_map([calm])
    assert not any("diverged" in t.get_text() for t in fig.legends[0].get_texts())
    single = digits_fixture()
    single["rows"] = [r for r in single["rows"] if r["beta"] == 100.0]
    single["beta_rule"] = {"kind": "fixed", "values": [100]}
    assert {a.get_subplotspec().get_geometry()[:2] for a in plot_map([single]).axes if a.get_title()} == {(1, 3)}


def _meshes(fig) -> dict:
    """The colour scale of each panel's cells, by its title: (vmin, vmax) of its QuadMesh's Normalize."""
    from matplotlib.collections import QuadMesh

    return {a.get_title(): (m.norm.vmin, m.norm.vmax) for a in fig.axes if a.get_title()
            for m in a.collections if isinstance(m, QuadMesh)}


def test_a_network_maps_colour_scales_are_fitted_to_its_data():
    """Issue 35, point 6: each row of a network map's panels (binary accuracy, float accuracy, sign changes) is
    coloured on one scale over its betas that spans the row's cells (min..max, padded by COLOUR_PAD of the span,
    within [0, 100] or [0, 1]), as its colour bar says; a synthetic map keeps log10 E S_T over its finite values."""
    from stam.figures.map_figure import COLOUR_PAD, colour_limits

    d = digits_fixture(floats=True)
    fig = plot_map([d])
    scales = _meshes(fig)
    assert len(scales) == 6
    for key, what in (("metric", "binary accuracy"), ("val_acc_float", "float accuracy"), ("sign_ever_changed", "sign changes")):
        vals = [r[key] for r in d["rows"] if r[key] is not None]
        span = max(vals) - min(vals)
        bound = 1.0 if key == "sign_ever_changed" else 100.0
        want = (max(0.0, min(vals) - COLOUR_PAD * span), min(bound, max(vals) + COLOUR_PAD * span))
        assert colour_limits(d, key) == pytest.approx(want, rel=1e-12, abs=1e-12)
        row = {lim for title, lim in scales.items() if what in title}
        assert len(row) == 1 and list(row)[0] == pytest.approx(want, rel=1e-12, abs=1e-12)  # one scale per row, both betas
    assert {cb.mappable.norm.vmin for cb in _colour_bars(fig)} == {lo for lo, _ in scales.values()}
    assert all("scale fitted to the cells" in cb.ax.get_ylabel() for cb in _colour_bars(fig))
    # the sign changes span 0.001 .. 0.8 here: fitted, not [0, 1]; one value: a band around it within the bounds
    assert colour_limits(d, "sign_ever_changed")[1] < 0.9
    one = dict(d, rows=[dict(r, metric=100.0) for r in d["rows"] if r["metric"] is not None])
    assert colour_limits(one, "metric") == (99.0, 100.0)
    syn = run_map("binary", gammas=[0.05, 30.0], lams=[1.0], betas=[1e3], iterations=20, seeds=1)
    finite = [math.log10(r["metric"]) for r in syn["rows"] if r["metric"] is not None and r["metric"] > 0]
    (lim,) = set(_meshes(plot_map([syn])).values())
    assert lim == pytest.approx((min(finite), max(finite)), rel=1e-12)


def _colour_bars(fig):
    return [a._colorbar for a in fig.axes if getattr(a, "_colorbar", None) is not None and a.get_visible()]


def test_a_map_without_the_float_accuracy_reads_and_draws_it_not_recorded(tmp_path):
    """A network map written before the float accuracy was recorded (no val_acc_float) still validates and
    draws: its float row says "not recorded" and colours no cell; the caption says so; a map with it has it in
    its CSV and its caption; the line gamma*lambda = 1 (the paper's class certified) is drawn and in the legend."""
    from stam.figures.map_figure import PAPER_CLASS_LABEL

    old = digits_fixture()
    assert validate_map(old) is old
    fig = plot_map([old])
    texts = {a.get_title(): " ".join(t.get_text() for t in a.texts) for a in fig.axes if a.get_title()}
    assert all("not recorded" in v for k, v in texts.items() if "float accuracy" in k)
    assert not any("not recorded" in v for k, v in texts.items() if "float accuracy" not in k)
    assert not any("float accuracy" in title for title in _meshes(fig))
    assert "not recorded" in map_caption(old)
    assert PAPER_CLASS_LABEL in [t.get_text() for t in fig.legends[0].get_texts()]
    ax = next(a for a in fig.axes if a.get_title())
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == PAPER_CLASS_LABEL]
    assert max(abs(x * y - 1.0) for x, y in zip(*line.get_data())) < 1e-12
    new = digits_fixture(floats=True)
    assert "not recorded" not in map_caption(new) and "fitted to the data" in map_caption(new)
    write_map(new, tmp_path, "map-digits")
    lines = (tmp_path / "map-digits.csv").read_text().splitlines()
    head = lines[0].split(",")
    assert "val_acc_float" in head and "val_acc_float_std" in head
    for line, r in zip(lines[1:], new["rows"]):
        cell = line.split(",")[head.index("val_acc_float")]
        assert (cell == "") if r["val_acc_float"] is None else float(cell) == r["val_acc_float"]
    write_map(old, tmp_path, "map-old")
    assert all(line.split(",")[head.index("val_acc_float")] == "" for line in
               (tmp_path / "map-old.csv").read_text().splitlines()[1:])
    bad = dict(new, rows=[dict(r, val_acc_float=140.0) for r in new["rows"]])
    with pytest.raises(UsageError, match="val_acc_float"):
        validate_map(bad)


def test_a_map_of_one_lambda_is_a_strip_with_its_values_and_gamma_lambda_written():
    """One lambda: every cell's value is written on it and a second axis gives gamma*lambda."""
    d = digits_fixture(floats=True)
    d["rows"] = [r for r in d["rows"] if r["lam"] == 4.0]
    fig = plot_map([d])
    ax = next(a for a in fig.axes if a.get_title() and "binary accuracy" in a.get_title() and "100" in a.get_title())
    written = sorted(t.get_text() for t in ax.texts if t.get_text())
    assert written == sorted(f"{r['metric']:.1f}" for r in d["rows"] if r["beta"] == 100.0 and r["metric"] is not None)
    assert any("\u03b3\u03bb" in a.get_xlabel() for a in ax.child_axes)


def test_a_range_too_narrow_for_its_points_is_one_line_not_a_grid_with_repeats(tmp_path, capsys):
    """1.0..1.0000000000000002 holds no third floating-point value: log_grid refuses it (it gave a
    repeated value), and so does stam map with that range, in one line."""
    with pytest.raises(ValueError, match="fewer than 3 distinct"):
        log_grid(1.0, 1.0000000000000002, 3)
    assert log_grid(1.0, 1.0000000000000002, 2) == [1.0, 1.0000000000000002]
    with pytest.raises(SystemExit) as exc:  # argparse's check of --gamma-range
        main(["map", "--dataset", "digits", "--gamma-range", "1:1.0000000000000002:3", "-o", str(tmp_path / "m")])
    code, err = exc.value.code, capsys.readouterr().err
    assert code == 2 and "fewer than 3 distinct" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m").exists()
