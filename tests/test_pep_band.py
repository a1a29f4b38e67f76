"""The band between certified and refuted (issue 39, point 1): the ``pep-band`` result
(stam.theory.worstcase.onset.PEP_BAND, band, band_segments), the figure ``stam plot pep-band`` drawn from a stored
result, and the committed result of benchmarks/pep_band.py against the closed-form T = 1 onset."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

from stam.cli import main  # noqa: E402
from stam.errors import UsageError  # noqa: E402
from stam.figures.results import load_results  # noqa: E402
from stam.theory.worstcase.onset import PEP_BAND, band, band_segments  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
C_STAR = (1 + math.sqrt(3)) / 2

SMALL = {"kind": "pep-band", "lam": 1.0, "L1": 1.0, "gamma_lam_range": [0.9, 1.6], "tol": 1e-3, "certified": 0.99,
         "certified_from": "a test",
         "rows": [{"T": 1, "beta": 10.0, "lo": 1.3655, "hi": 1.3662},  # a bracket
                  {"T": 5, "beta": 10.0, "lo": 1.6, "hi": None},  # bounded to the range's end
                  {"T": 1, "beta": 1.0, "lo": None, "hi": 0.9}]}  # unbounded from the range's start


def test_segments_of_a_small_result():
    """Certified up to 0.99, open to the bracket, the bracket, refuted to the range's end, then not searched."""
    segs = band_segments(SMALL)
    assert segs[0] == {"T": 1, "beta": 10.0, "N": 1, "b": 1, "certified": (0.0, 0.99), "open": (0.99, 1.3655),
                       "no_decay": None, "bracket": (1.3655, 1.3662), "refuted": (1.3662, 1.6), "unknown": (1.6, None)}
    assert segs[1]["open"] == (0.99, 1.6) and segs[1]["bracket"] is None and segs[1]["refuted"] is None
    assert segs[2]["open"] is None and segs[2]["refuted"] == (0.9, 1.6)  # nothing open below the first solve
    assert band_segments({**SMALL, "certified": None})[0]["certified"] is None


def test_the_figure_draws_from_a_stored_small_result(tmp_path, capsys):
    """``stam plot pep-band FILE`` reads the file through the result type and draws one bar per (beta, T), its
    zones where band_segments puts them (bar widths checked on the figure itself)."""
    from stam.figures.band import draw
    from stam.figures.kinds import figure_kind

    path = tmp_path / "band.json"
    PEP_BAND.write(SMALL, path)
    assert main(["plot", "pep-band", str(path), "-o", str(tmp_path / "fig" / "band")]) == 0
    assert (tmp_path / "fig" / "band.png").stat().st_size > 5000 and (tmp_path / "fig" / "band.pdf").exists()
    results = load_results([path])
    fig = draw(results)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["\u03b2 = 10, T = 1", "\u03b2 = 10, T = 5", "\u03b2 = 1, T = 1"]
    spans = sorted((round(p.get_y() + p.get_height() / 2), round(p.get_x(), 6), round(p.get_x() + p.get_width(), 6))
                   for p in ax.patches)
    x_lo, x_hi = ax.get_xlim()
    assert (0, round(x_lo, 6), 0.99) in spans and (0, 0.99, 1.3655) in spans and (0, 1.3662, 1.6) in spans
    assert (1, 0.99, 1.6) in spans and (1, 1.6, round(x_hi, 6)) in spans
    assert not any(y == 2 and a < 0.9 - 1e-9 and b > 0.99 for y, a, b in spans)  # no open zone on the third bar
    assert any(abs(line.get_xdata()[0] - C_STAR) < 1e-12 for line in ax.lines)
    caption = figure_kind("pep-band").caption_for(results, None)
    assert "0.99" in caption and "a test" in caption
    with pytest.raises(ValueError, match="no pep-band result"):
        draw(load_results([]))


def _bad(edit):
    obj = copy.deepcopy(SMALL)
    edit(obj)
    return obj


@pytest.mark.parametrize("edit, needle", [
    (lambda o: o["rows"][0].update(lo=1.4, hi=1.3), "rows[0].hi must be >= lo"),
    (lambda o: o["rows"][1].update(lo=None), "lo and hi are both null"),
    (lambda o: o["rows"][0].update(T=0), "rows[0].T"),
    (lambda o: o["rows"][0].update(beta=-1.0), "rows[0].beta"),
    (lambda o: o.update(rows=[]), "field rows"),
    (lambda o: o.pop("gamma_lam_range"), "gamma_lam_range"),
    (lambda o: o.update(gamma_lam_range=[1.6, 0.9]), "must be [lo, hi] with lo < hi"),
    (lambda o: o.update(gamma_lam_range=[0.9, 1.6, 2.0]), "must be [lo, hi] with lo < hi"),
    (lambda o: o["rows"][0].update(hi=1.7), "outside gamma_lam_range"),
    (lambda o: o["rows"].append(dict(o["rows"][0])), "repeats the row of rows[0] (beta = 10.0, T = 1, "),
    (lambda o: o.update(certified=float("nan")), "certified"),
    (lambda o: o.update(certified="0.99"), "certified"),
    (lambda o: o["rows"][0].update(N=2, b=3), "must be <= N"),
    (lambda o: o["rows"].append({**o["rows"][0], "N": 2, "b": 1}) or o["rows"].append({**o["rows"][0], "N": 2, "b": 1}),
     "repeats the row of rows["),
    (lambda o: o.update(history=[{**WIDE["history"][0], "certified": 0.95}]), "history[0].fails must be >="),
    (lambda o: o.update(history=[{**WIDE["history"][0], "template": "other"}]), "history[0].template"),
    (lambda o: o.update(cycles=[{"beta": 10.0, "threshold": -1.0}]), "cycles[0].threshold"),
])
def test_the_result_type_refuses_a_malformed_file(tmp_path, edit, needle):
    """A malformed file is one UsageError naming the field, on reading and before writing (nothing written)."""
    bad = _bad(edit)
    path = tmp_path / "band.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(UsageError) as exc:
        PEP_BAND.read(path)
    assert needle in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(UsageError):
        PEP_BAND.write(bad, tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


def test_plot_refuses_a_malformed_band_file_in_one_line(tmp_path, capsys):
    path = tmp_path / "band.json"
    path.write_text(json.dumps(_bad(lambda o: o["rows"][0].update(lo=1.4, hi=1.3))))
    assert main(["plot", "pep-band", str(path), "-o", str(tmp_path / "fig")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stam: error: ") and err.count("\n") == 1 and "rows[0].hi" in err
    assert not list(tmp_path.glob("fig*"))


def test_band_brackets_the_closed_form_onset_at_T1():
    """A small band computed now (T = 1, beta = 1000, bisection to 0.02): the bracket holds (1 + sqrt 3)/2, the
    result is of its type, and a certified value that is no positive number is refused."""
    res = band([1], [1000.0], 0.99, tol=0.02)
    PEP_BAND.validate(res, "band")
    (row,) = res["rows"]
    assert row["lo"] <= C_STAR < row["hi"] and row["hi"] - row["lo"] <= 0.02
    with pytest.raises(ValueError, match="certified"):
        band([1], [1000.0], -1.0)


def test_the_committed_result_is_the_table_of_docs_pep():
    """benchmarks/results/pep_band.json (benchmarks/pep_band.py): of its type; every beta = 1000 horizon and the
    T = 1 row of each beta bracket the closed-form onset within the bisection's tolerance; the certified value is
    what the stored region gives (stam demo's region_reach)."""
    from stam.figures.demo import region_reach
    from stam.theory.worstcase.lyapunov import REGION

    data = PEP_BAND.read(ROOT / "benchmarks" / "results" / "pep_band.json")
    tol = data["tol"]
    for row in data["rows"]:
        if row["beta"] >= 1000 or row["T"] == 1:
            assert row["lo"] <= C_STAR <= row["hi"] and row["hi"] - row["lo"] <= tol, row
        if row["hi"] is not None:
            assert row["lo"] >= C_STAR - tol  # no horizon refutes below c*
    assert data["certified"] == region_reach(REGION.read(ROOT / "benchmarks" / "results" / "lyapunov_region.json"))[0]


def test_the_committed_result_closes_the_band():
    """The committed result's additions (issue 39, point 1): minibatch horizons whose T = 1 onset is (1 + sqrt 3)/2;
    at every beta the 2-cycle's threshold c_beta (exact, stam.theory.worstcase.onset.cycle_threshold) with no potential
    certified at or above it, and the general template certified to within two bisection steps of it."""
    from fractions import Fraction

    from stam.theory.worstcase.onset import cycle_threshold, sampling

    data = PEP_BAND.read(ROOT / "benchmarks" / "results" / "pep_band.json")
    tol = data["tol"]
    sampled = [r for r in data["rows"] if sampling(r) != (1, 1)]
    assert {sampling(r) for r in sampled} >= {(2, 1)}
    for r in sampled:
        if r["T"] == 1:
            assert r["lo"] <= C_STAR <= r["hi"], r
    cycles = {c["beta"]: c for c in data["cycles"]}
    assert set(cycles) == {r["beta"] for r in data["rows"]}
    for beta, c in cycles.items():
        assert Fraction(c["exact"]) == cycle_threshold(beta, data["lam"], data["L1"])
        assert c["threshold"] == float(Fraction(c["exact"]))
    for h in data["history"]:
        cb = cycles[h["beta"]]["threshold"]
        assert h["certified"] is None or h["certified"] < cb, h
        if h["template"] == "general":
            assert cb - h["certified"] <= 2 * tol, h


def test_the_report_table_of_a_small_result():
    """The report's table of a pep-band result (figures.tables.band_table): one row per (beta, T), the zones the
    figure draws, the bracket beside the refuted onset."""
    from stam.figures.tables import band_table

    t = band_table(SMALL)
    assert t.header == ["sampling", "\u03b2", "T", "certified", "open", "no O(1/T) bound", "refuted"]
    assert t.rows == [["full", "10", "1", "[0, 0.99)", "[0.99, 1.3655)", "\u2013",
                       "from 1.3662 (onset in [1.3655, 1.3662))"],
                      ["full", "10", "5", "[0, 0.99)", "[0.99, 1.6)", "\u2013", "none up to 1.6"],
                      ["full", "1", "1", "[0, 0.99)", "\u2013", "\u2013", "from 0.9 (the range's start)"]]
    assert "a test" in t.caption


#: SMALL with what issue 39's closing adds (optional fields: SMALL, a file of before, stays readable): a minibatch
#: row, potentials with history at beta = 10 and the 2-cycle's threshold there
WIDE = {**SMALL, "rows": SMALL["rows"] + [{"T": 1, "beta": 10.0, "lo": 1.3655, "hi": 1.3662, "N": 2, "b": 1}],
        "history": [{"template": "general", "k": 2, "h": 1, "beta": 10.0, "certified": 0.9468, "fails": 0.9474},
                    {"template": "paper", "k": 1, "h": 0, "beta": 10.0, "certified": 0.93, "fails": 0.9305},
                    {"template": "paper", "k": 1, "h": 0, "beta": 10.0, "N": 2, "b": 1, "certified": None,
                     "fails": 0.05}],
        "cycles": [{"beta": 10.0, "threshold": 18 / 19, "S": 0.93, "delta0": 0.062, "exact": "18/19"}]}


def test_segments_and_tables_with_history_minibatches_and_the_cycle(tmp_path):
    """Per beta the best proven potential of ``history`` is the certified end (0.9468 for the full gradient at beta
    = 10, none for N = 2, b = 1 there, the region's 0.99 at beta = 1 where no potential was searched); from the
    2-cycle's threshold 18/19 to the bracket no O(1/T) bound holds; the figure draws three panels side by side."""
    from stam.figures.band import draw
    from stam.figures.tables import band_parts
    from stam.theory.worstcase.onset import history_segments

    PEP_BAND.write(WIDE, tmp_path / "wide.json")
    segs = band_segments(PEP_BAND.read(tmp_path / "wide.json"))
    assert segs[0]["certified"] == (0.0, 0.9468) and segs[0]["open"] == (0.9468, 18 / 19)
    assert segs[0]["no_decay"] == (18 / 19, 1.3655) and segs[0]["bracket"] == (1.3655, 1.3662)
    assert segs[2]["certified"] == (0.0, 0.99) and segs[2]["no_decay"] is None  # beta = 1: no cycle row
    assert (segs[3]["N"], segs[3]["b"]) == (2, 1) and segs[3]["certified"] is None
    assert segs[3]["open"] == (0.0, 18 / 19)
    hist = history_segments(WIDE)
    assert hist[0]["open"] == (0.9468, 18 / 19) and hist[0]["no_decay"] == (18 / 19, 1.6)
    parts = dict(band_parts([type("R", (), {"data": WIDE})()], None))
    assert parts["pep-band-history-0"].rows[0] == ["general, k = 2, h = 1", "10", "0.9468", "0.9474", "\u2013", "0.947368"]
    assert parts["pep-band-0"].rows[3][0] == "N = 2, b = 1"
    fig = draw(load_results([tmp_path / "wide.json"]))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["full gradient", "minibatches N = 2, b = 1", "potentials with history"]
