"""stam.figures: every figure renders from small fixtures (written here in the formats of
COMMON.md) and draws what it should: number of lines, log axes, labels, the bound above the
empirical points where the theorem applies."""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

matplotlib.use("Agg")

from stam.dnn import catalog  # noqa: E402
from stam.synthetic import methods  # noqa: E402
from stam.figures import rates as R  # noqa: E402
from stam.figures import style  # noqa: E402
from stam.figures import training as TR  # noqa: E402
from stam.figures.results import load_results  # noqa: E402
from stam.io import atomic_write_json, atomic_write_text, provenance  # noqa: E402

# -- fixtures in the formats of COMMON.md ------------------------------------------------------


def rates_fixture(problem="regression", inadmissible_last=True, pep=False) -> dict:
    rows = []
    Ts = [10, 30, 100, 300, 1000]
    for i, T in enumerate(Ts):
        mean = 2.0 / math.sqrt(T)
        bound = 40.0 / math.sqrt(T)
        adm = not (inadmissible_last and i == len(Ts) - 1)
        rows.append({"T": T, "gamma": 0.05, "beta": 3.0 * math.sqrt(T), "admissible": adm, "S_min_mean": mean,
                     "S_min_std": 0.1 * mean, "S_min_lo": 0.8 * mean, "S_min_hi": 1.2 * mean,
                     "bound": bound if adm else None, "ratio": bound / mean if adm else None})
    data = {"kind": "synthetic-rates", "problem": problem, "params": {"R": 8, "b": 4},
            "constants": {"L1": 1.0, "L2": 0.5}, "rows": rows, "slope": -0.5, "bound_slope": -0.5,
            "provenance": provenance()}
    if pep:
        data["pep"] = {"rows": [{"T": T, "worst_case": 1.0 / T, "bound": 10.0 / math.sqrt(T), "ratio": 0.1 / math.sqrt(T),
                                 "status": "optimal"} for T in (1, 2, 3)]}
    return data


def pep_fixture() -> dict:
    return {"kind": "pep-sweep", "lam": 1.0, "gamma": 0.05, "beta": 10.0, "provenance": provenance(),
            # the ratio worst_case / bound; a status other than optimal gives no worst case (issue 64)
            "rows": [{"T": T, "worst_case": 0.5 / T if T < 3 else None, "bound": 5.0 / T ** 0.5,
                      "ratio": 0.1 / T ** 0.5 if T < 3 else None,
                      "status": "optimal" if T < 3 else "optimal_inaccurate"} for T in (1, 2, 3)]}


def compare_fixture() -> dict:
    return {"kind": "synthetic-compare", "problem": "regression", "provenance": provenance(),
            "rows": [{"method": m, "final_S": s, "objective": 1.0 + s, "quantised_objective": 1.1 + s,
                      "wall_time": 0.2, "grad_evals": 1000} for m, s in (("stam", 1e-3), ("spring-sgd", 2e-3),
                                                                         ("bc", 5e-2))]}


def paper_check_fixture() -> list:
    return [{"label": "Rem=09836", "printed": "(...)/(10 L2)", "derived": "(...)/(10 L2^2)",
             "verdict": "misprint", "counterexample": {"L2": 2.0, "gamma": 0.1, "meaning": "K1 < 0 below the printed root"}},
            {"label": "k1", "printed": "K1", "derived": "K1", "verdict": "ok", "counterexample": None}]


def write_run(root: Path, algo: str, preset=None, model="mlp", epochs=4, seed=0, proxies=None) -> Path:
    """A `stam train --out DIR` folder."""
    name = f"{model}-{algo}" + (f"-{preset}" if preset else "") + f"-s{seed}"
    d = root / name
    proxies = algo == "stam" if proxies is None else proxies
    cfg = {"model": model, "dataset": "digits", "algo": algo, "preset": preset, "epochs": epochs,
           "batch_size": 64, "seed": seed, "provenance": provenance()}
    atomic_write_json(d / "config.json", cfg)
    lines = []
    for e in range(1, epochs + 1):
        acc = 50.0 + 10.0 * e / epochs + seed + len(algo + str(preset))  # percent, as stam train logs it
        row = {"epoch": e, "train_loss": 1.0 / e, "train_acc": acc + 5.0, "test_acc_binary": acc,
               "test_acc_float": acc + 2.0, "hyper": {"gamma": 0.1, "lam": 1.0, "beta": 100.0},
               "proxy_grad": (1.0 / e) if proxies else None, "proxy_z": (0.5 / e) if proxies else None,
               "theorem": {"admissible": e % 2 == 0, "violations": [], "unknown": ["L1"]}, "seconds": 0.1}
        lines.append(json.dumps(row))
    atomic_write_text(d / "log.jsonl", "\n".join(lines) + "\n")
    atomic_write_json(d / "summary.json", {"kind": "train-run", "model": model, "dataset": "digits", "algo": algo,
                                           "preset": preset, "label": style.run_label(algo, preset),
                                           "best_test_acc_binary": 60.0 + seed, "best_test_acc_float": 62.0,
                                           "epochs": epochs, "seconds": 0.4, "provenance": provenance()})
    return d


def write_all(root: Path) -> list[Path]:
    """Every result kind on disk; returns the paths to hand to `stam report`."""
    atomic_write_json(root / "rates-regression.json", rates_fixture())
    atomic_write_text(root / "rates-regression.csv", "T,S_min_mean\n10,0.63\n")
    atomic_write_json(root / "rates-sparse.json", rates_fixture("sparse", inadmissible_last=False))
    atomic_write_json(root / "pep.json", pep_fixture())
    atomic_write_json(root / "compare.json", compare_fixture())
    atomic_write_json(root / "paper-check.json", {"kind": "paper-check", "provenance": provenance(),  # --out format
                                                  "items": paper_check_fixture()})
    atomic_write_json(root / "stepsize.json", {"gamma_max": 0.2, "gamma": 0.1, "K1": 1.0, "K2": 2.0, "K3": 3.0,
                                               "M": 6.0, "L": 2.0, "beta_min": 40.0, "binding": "sqrt", "T_min": 1e6})
    runs = root / "runs"
    for algo, preset in (("stam", "our1"), ("stam", "admissible"), ("bc", None), ("br", None), ("psgd", None),
                         ("float", None)):
        write_run(runs, algo, preset)
    write_run(runs, "bc", None, seed=1)
    write_run(runs, "stam", "our1", model="cnn")
    return [root]


# -- helpers -----------------------------------------------------------------------------------


def lines_by_label(ax) -> dict:
    return {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}


def find(ax, prefix: str):
    hits = [ln for label, ln in lines_by_label(ax).items() if label.startswith(prefix)]
    assert len(hits) == 1, (prefix, list(lines_by_label(ax)))
    return hits[0]


def test_readers_classify_every_result_format(tmp_path):
    from stam.figures.results import classify

    assert classify(paper_check_fixture()).name == "paper-check"  # what `stam paper-check --json` prints
    assert classify({"kind": "paper-check", "items": []}).name == "paper-check"
    assert classify({"gamma_max": 1, "beta_min": 2, "binding": "x"}).name == "stepsize"
    for fx in (rates_fixture(), pep_fixture(), compare_fixture()):
        assert classify(fx).name == fx["kind"]
    assert classify({"kind": "something-else"}) is None and classify([1, 2]) is None
    write_all(tmp_path)
    res = load_results([tmp_path])
    assert {k: len(v) for k, v in res.by_kind.items()} == {
        "paper-check": 1, "stepsize": 1, "synthetic-rates": 2, "synthetic-compare": 1, "pep-sweep": 1, "train-run": 8,
        "convergence-map": 0, "tune": 0, "lyapunov-region": 0, "pep-band": 0, "methods-regions": 0, "methods-steps": 0}
    pc = res["paper-check"][0]
    assert isinstance(pc.data, list) and pc.provenance["versions"]["stam"]
    rates = [r for r in res["synthetic-rates"] if r.data["problem"] == "regression"][0]
    assert [f.name for f in rates.files] == ["rates-regression.json", "rates-regression.csv"]


# -- style -------------------------------------------------------------------------------------


def test_one_colour_per_algorithm_as_declared():
    """Colours, markers and names come from the declarations (catalog and synthetic methods): one
    colour each, no second list of names (a name nobody declares is grey)."""
    colours = list(style.ALGO_COLORS.values())
    assert len(set(colours)) == len(colours)
    assert set(colours) <= set(style.OKABE_ITO.values())
    assert set(style.ALGO_COLORS) == set(catalog.NAMES) | set(methods.METHODS)
    for a in catalog.ALGORITHMS:
        assert style.algo_color(a.name) == style.OKABE_ITO[a.color] and style.ALGO_MARKERS[a.name] == a.marker
        assert style.algo_color(a.label) == style.algo_color(a.name)  # by its label too
    assert style.algo_color("spring-sgd") == style.OKABE_ITO[methods.method("spring-sgd").color]
    assert style.algo_color("spring") == style.GREY  # the old undeclared key is gone
    assert style.algo_color("stam") == style.algo_color("STAM_our3")
    assert style.algo_color("unknown-method") == style.GREY
    assert style.run_label("stam", "our3") == "Our3"
    assert style.run_label("stam", "admissible") == "STAM (admissible)"
    assert style.run_label("bc", None) == "BC"


def test_save_figure_writes_png_and_pdf(tmp_path):
    fig, axes = style.new_figure()
    axes[0, 0].plot([1, 2], [3, 4])
    png, pdf = style.save_figure(fig, tmp_path / "x")
    assert png.read_bytes()[:4] == b"\x89PNG" and pdf.read_bytes()[:4] == b"%PDF"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp files left


# -- figure 1: rates ---------------------------------------------------------------------------


def test_rates_figure_draws_bound_above_empirical_where_admissible():
    data = rates_fixture()
    fig = R.plot_rates([data, rates_fixture("sparse")], [pep_fixture()])
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 3  # two problems + the PEP panel
    ax = axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "iterations" in ax.get_xlabel() and "S" in ax.get_ylabel()
    assert "regression" in ax.get_title()
    emp = find(ax, R.EMPIRICAL)
    bound = find(ax, R.BOUND)
    find(ax, R.REFERENCE)
    assert "fitted slope \u22120.50" in emp.get_label()
    assert len(lines_by_label(ax)) == 4  # empirical, inadmissible markers, bound, reference
    adm = np.array([r["admissible"] for r in data["rows"]])
    e_y, b_y = np.asarray(emp.get_ydata(), float), np.asarray(bound.get_ydata(), float)
    assert np.all(b_y[adm] >= e_y[adm])
    assert np.isnan(b_y[~adm]).all()  # no bound drawn where the theorem does not apply
    assert len(ax.collections) == 1  # the seed spread
    pep_ax = axes[2]
    assert len(lines_by_label(pep_ax)) == 3  # worst case, bound, not-optimal markers
    assert pep_ax.get_yscale() == "log"


def test_rates_figure_shows_the_last_iterate_where_the_minimum_hides_growth():
    grows = rates_fixture("grows")
    for r in grows["rows"]:
        r.update(S_final_mean=5.0 * r["S_min_mean"], nonfinite=0)
    grows["rows"][-1].update(S_final_mean=None, nonfinite=3)
    calm = rates_fixture("calm")
    for r in calm["rows"]:
        r.update(S_final_mean=r["S_min_mean"], nonfinite=0)
    fig = R.plot_rates([grows, calm])
    final = find(fig.axes[0], R.FINAL)
    assert "3 of 8 runs diverged" in final.get_label()
    y = np.asarray(final.get_ydata(), float)
    assert np.allclose(y[:-1], [5.0 * r["S_min_mean"] for r in grows["rows"][:-1]]) and np.isnan(y[-1])
    assert not [ln for ln in fig.axes[1].get_lines() if ln.get_label().startswith(R.FINAL)]  # nothing hidden: no extra line


def test_rates_embedded_pep_adds_a_curve():
    fig = R.plot_rates([rates_fixture(pep=True, inadmissible_last=False)])
    ax = fig.axes[0]
    find(ax, R.PEP)
    assert len(lines_by_label(ax)) == 4


@given(st.floats(-2.0, 0.5), st.floats(0.1, 10.0))
def test_fit_slope_recovers_power_law(slope, c):
    T = np.array([10.0, 100.0, 1000.0, 10000.0])
    assert R.fit_slope(T, c * T**slope) == pytest.approx(slope, abs=1e-9)


def test_rates_without_input_is_an_error():
    with pytest.raises(ValueError):
        R.plot_rates([])


# -- figures 3 and 4: training -----------------------------------------------------------------


def test_training_curves_one_line_per_algorithm(tmp_path):
    write_all(tmp_path)
    res = load_results([tmp_path / "runs"])
    runs = [r.data for r in res["train-run"]]
    assert len(runs) == 8
    fig = TR.plot_training(runs)
    axes = np.array(fig.axes).reshape(2, 3)  # rows: cnn, mlp; columns: train, test binary, test float
    mlp = axes[1]
    for ax, (_, ylabel) in zip(mlp, TR.COLUMNS):
        assert ax.get_xlabel() == "epochs" and ax.get_ylabel() == ylabel
        assert len(ax.get_lines()) == 7  # 6 configurations, bc with two seeds
        colours = {ln.get_label(): ln.get_color() for ln in ax.get_lines() if not ln.get_label().startswith("_")}
        assert colours["BC"] == style.ALGO_COLORS["bc"] and colours["Our1"] == style.ALGO_COLORS["stam"]
        styles = {ln.get_label(): ln.get_linestyle() for ln in ax.get_lines()}
        assert styles["Our1"] != styles["STAM (admissible)"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]  # one legend, under the panels
    assert sorted(legend) == sorted(["Float", "PSGD", "BC", "BR", "Our1", "STAM (admissible)"])
    y = mlp[0].get_lines()[0].get_ydata()
    assert 50 < float(np.nanmax(y)) <= 100
    assert len(axes[0, 0].get_lines()) == 1
    assert "mlp" in mlp[0].get_title()


def test_practice_figure_marks_admissible_epochs(tmp_path):
    write_all(tmp_path)
    runs = [r.data for r in load_results([tmp_path / "runs"])["train-run"]]
    fig = TR.plot_practice(runs)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 3  # the STAM runs only (they log the proxies)
    ax = axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log" and ax.get_xlabel() == "epochs"
    labels = lines_by_label(ax)
    assert len(labels) == 4  # two proxies, running min, O(1/sqrt T) shape
    running = find(ax, "running min")
    y = np.asarray(running.get_ydata(), float)
    assert np.all(np.diff(y) <= 0)
    ref = find(ax, "O(1/")
    ry = np.asarray(ref.get_ydata(), float)
    assert ry[-1] / ry[0] == pytest.approx(1 / math.sqrt(4))
    spans = [p for p in ax.patches]
    assert len(spans) == 2  # epochs 2 and 4 of 4 satisfied the conditions
    assert any("2/4 epochs" in t.get_text() for t in ax.get_legend().get_texts())


def test_practice_without_proxies_is_an_error(tmp_path):
    d = write_run(tmp_path, "bc", None)
    with pytest.raises(ValueError, match="proxies"):
        TR.plot_practice([load_results([d])["train-run"][0].data])


# -- figure 2: admissible region (uses stam.theory.symbolic.numeric and the stam.dnn presets) ---------------

from stam.figures import admissible as ADM  # noqa: E402
from stam.theory.symbolic import numeric  # noqa: E402


def test_paper_stages_come_from_the_presets():
    stages = {s.name: s for s in ADM.paper_stages()}
    assert stages["Our1"].gamma == (8.0, 8.0) and stages["Our1"].lam == 0.5
    assert stages["Our2"].gamma == (15.0, 0.3) and stages["Our2"].lam == 4.0
    assert stages["Our3, epochs 81\u20131000"].gamma == (15.0, 0.3)
    late = stages["Our3 (CIFAR-100), epochs 351\u20131000"]
    assert late.lam == 15.0 and late.gamma[0] == 3.0 and late.gamma[1] == pytest.approx(5e-3)
    assert late.beta[1] == pytest.approx(920.0)
    labels = [label for label, _ in ADM.group_stages(stages.values())]
    assert "Our1 = Our3, epochs 1\u201380" in labels and "Our2 = Our3, epochs 81\u20131000" in labels


@given(st.floats(0.01, 30.0))
def test_region_is_exactly_gamma_below_gamma_max(lam):
    nc = ADM.NetworkConstants()
    gammas = np.logspace(-4, 1.5, 200)
    admissible, tmin = ADM.region_gamma_lambda(gammas, np.array([lam]), nc)
    c = ADM.coupling(lam, nc)
    assert c.A == 2 * max(nc.a_G, lam)  # corrected Lemma es-lemma (eq. eq101), L3* = lam
    assert np.array_equal(admissible[0], gammas < numeric.gamma_max(c))
    assert np.all(np.isfinite(tmin[0][admissible[0]])) and np.isnan(tmin[0][~admissible[0]]).all()
    bmin = ADM.beta_min(gammas, lam, nc)
    assert np.array_equal(np.isfinite(bmin), admissible[0])
    ok = admissible[0]
    for bound in numeric.beta_lower_bounds(nc.T, gammas[ok], c, eps=nc.eps).values():
        assert np.all(bmin[ok] >= bound)


def test_paper_settings_against_the_theorem():
    checks = ADM.check_stages(ADM.NetworkConstants())
    assert not any(c["admissible"] for c in checks)  # none of the paper's settings is admissible
    late_end = [c for c in checks if c["setting"].endswith("351\u20131000") and c["at"] == "end"][0]
    names = [v["condition"] for v in late_end["violations"]]
    assert not any(n.startswith("K1") for n in names)  # gamma = 5e-3 at lambda = 15: K1 > 0 holds
    assert any("sqrt((L+M) A T)" in n for n in names)  # but beta = 920 is far too small


def test_admissible_figure_draws_region_contours_and_paper_settings():
    fig = ADM.plot_admissible(resolution=60)
    ax, bx = fig.axes[:2]
    for a in (ax, bx):
        assert a.get_xscale() == "log" and a.get_yscale() == "log"
        assert a.get_xlabel().startswith("\u03b3")
    assert ax.get_ylabel().startswith("\u03bb") and bx.get_ylabel().startswith("\u03b2")
    groups = ADM.group_stages(ADM.paper_stages())
    for a in (ax, bx):
        labels = [t.get_text() for t in a.get_legend().get_texts()]
        assert all(label in labels for label, _ in groups)
        # every paper setting lies inside the axes (log axes show both the region and the points)
        x0, x1 = a.get_xlim()
        assert all(x0 <= st.gamma[i] <= x1 for _, m in groups for st in m for i in (0, 1))
    assert any(t.get_text().startswith("$10^{") for t in ax.texts)  # labelled T_min contours
    assert len([ln for ln in bx.get_lines() if "admissible above" in ln.get_label()]) == 4  # one per lambda
    assert "0.1" in fig._suptitle.get_text()  # the constants used are printed


def test_training_figure_draws_sign_flips_when_logged(tmp_path):
    """The fourth panel (share of binary weights whose sign ever flipped) appears for runs that logged it."""
    from stam.figures.training import SIGN_COLUMN, plot_training

    log = [{"epoch": e, "train_acc": 50.0 + e, "test_acc_binary": 40.0, "test_acc_float": 60.0,
            "sign_flips": {"epoch": 0.1, "since_init": 0.1 * e, "ever": 0.2 * e}} for e in (1, 2)]
    run = {"config": {}, "log": log, "summary": {"model": "mlp", "algo": "stam", "label": "STAM", "dataset": "digits"}}
    fig = plot_training([run])
    titles = [ax.get_title() for ax in fig.axes]
    assert any(SIGN_COLUMN[1].split(" (")[0] in t for t in titles)
    line = [ax for ax in fig.axes if SIGN_COLUMN[1].split(" (")[0] in ax.get_title()][0].lines[0]
    assert list(line.get_ydata()) == [20.0, 40.0]
    old = [{k: v for k, v in row.items() if k != "sign_flips"} for row in log]
    assert len(plot_training([{**run, "log": old}]).axes) == len(fig.axes) - 1


def test_the_paper_settings_drawn_are_the_stam_presets():
    assert ADM.paper_presets() == (("our1", "cifar10"), ("our2", "cifar10"), ("our3", "cifar10"),
                                   ("our3-cifar100", "cifar100"))


def test_audit_headline_counts_each_kind_apart():
    from stam.figures.demo import audit_headline

    items = [{"label": "a (x)", "verdict": "false"}, {"label": "b", "verdict": "unproven"},
             {"label": "c", "verdict": "misprint"}, {"label": "d", "verdict": "ok"}, {"label": "e", "verdict": "gap"}]
    cov = {"audited": 5, "total": 6, "by_kind": {"display": {"audited": 4, "total": 4},
                                                 "statement": {"audited": 1, "total": 2}}}
    text = audit_headline(items, cov)
    assert text == ("Paper audit: 5/6 labels (4 displays plus 2 statements), 5 items: 1 ok, 1 false (a), "
                    "1 unproven (b), 1 misprints (c), 1 gaps")
    assert "labelled displays" not in text and "wrong" not in text


def _cielab(hex_color: str) -> tuple[float, float, float]:
    """sRGB (D65) to CIELAB."""
    rgb = [int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    xyz = [sum(m * c for m, c in zip(row, lin)) for row in
           ((0.4124, 0.3576, 0.1805), (0.2126, 0.7152, 0.0722), (0.0193, 0.1192, 0.9505))]
    f = [t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29
         for t in (v / r for v, r in zip(xyz, (0.95047, 1.0, 1.08883)))]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def test_the_algorithms_drawn_together_have_distinguishable_colours():
    """Issue 37, point 5: the five network algorithms (stam.rules.RULES) and the synthetic comparison's methods
    (stam.synthetic.methods.REGISTRY), each set drawn in one figure, differ pairwise by a CIELAB distance of at
    least 30 (STAM's blue and BC's former sky blue: 26, reported as hardly distinguishable); deterministic STAM,
    the same algorithm with full gradients, keeps a lighter blue beside STAM's (and a marker of its own)."""
    import itertools
    import math

    from stam.rules import RULES
    from stam.figures.style import ALGO_COLORS, OKABE_ITO
    from stam.synthetic.methods import REGISTRY

    assert math.dist(_cielab(OKABE_ITO["blue"]), _cielab(OKABE_ITO["sky_blue"])) < 30  # the check can fail
    for names in ([r.name for r in RULES], [m.name for m in REGISTRY]):
        assert len(names) >= 5
        for a, b in itertools.combinations(names, 2):
            if {a, b} == {"stam", "stam-det"}:
                assert ALGO_COLORS[a] != ALGO_COLORS[b]
                continue
            d = math.dist(_cielab(ALGO_COLORS[a]), _cielab(ALGO_COLORS[b]))
            assert d >= 30, (a, b, ALGO_COLORS[a], ALGO_COLORS[b], round(d, 1))


def test_training_figure_is_laid_out_to_be_read_and_its_caption_names_its_panels():
    """Issue 37, point 5: four panels per model in two rows of two (three: one row), a single epoch shown as its
    number (not a zoom on a point), and the caption naming exactly the panels drawn (the sign-flip panel where
    logged, no loss panel)."""
    from stam.figures.results import ResultSet

    log = [{"epoch": 1, "train_acc": 50.0, "test_acc_binary": 40.0, "test_acc_float": 60.0,
            "sign_flips": {"epoch": 0.1, "since_init": 0.1, "ever": 0.2}}]
    run = {"config": {}, "log": log, "summary": {"model": "mlp", "algo": "stam", "label": "STAM", "dataset": "digits"}}
    fig = TR.plot_training([run])
    boxes = sorted({(round(ax.get_position().x0, 2), round(ax.get_position().y0, 2)) for ax in fig.axes})
    assert len(fig.axes) == 4 and len({x for x, _ in boxes}) == 2 and len({y for _, y in boxes}) == 2
    assert all(list(ax.get_xticks()) == [1] for ax in fig.axes)
    old = {**run, "log": [{k: v for k, v in row.items() if k != "sign_flips"} for row in log]}
    assert len({round(ax.get_position().y0, 2) for ax in TR.plot_training([old]).axes}) == 1  # three: one row

    class R_:  # a result as the report hands it to the caption
        def __init__(self, data):
            self.data = data
    with_flips = TR.training_caption(ResultSet({"train-run": [R_(run)]}))
    without = TR.training_caption(ResultSet({"train-run": [R_(old)]}))
    assert "sign ever flipped" in with_flips and "sign" not in without and "loss" not in with_flips + without
    assert all(label.split(" (")[0].split(",")[0] in with_flips for _, label in TR.COLUMNS)


def test_legends_name_only_what_is_drawn(tmp_path):
    """Issue 37, point 5: a run whose epochs never satisfied the theorem has no legend entry for the shading
    (its title says so); a one-epoch run has none for lines of one point; a rates result without a spread over
    seeds has no entry for the band."""
    d = write_run(tmp_path, "stam", "our1", epochs=4)
    rows = [json.loads(line) for line in (d / "log.jsonl").read_text().splitlines()]
    for row in rows:
        row["theorem"]["admissible"] = False
    (d / "log.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    run = load_results([d])["train-run"][0].data
    ax = TR.plot_practice([run]).axes[0]
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any("theorem's conditions" in t for t in texts) and "no epoch (of 4)" in ax.get_title()
    assert any("running min" in t for t in texts)
    one = {**run, "log": run["log"][:1]}
    texts = [t.get_text() for t in TR.plot_practice([one]).axes[0].get_legend().get_texts()]
    assert not any("running min" in t or "O(1/" in t for t in texts)
    flat = rates_fixture()
    for r in flat["rows"]:
        r["S_min_lo"] = r["S_min_hi"] = r["S_min_mean"]
        r["S_min_std"] = 0.0
    fig = R.plot_rates([flat])
    assert not any("spread over seeds" in t.get_text() for lg in [a.get_legend() for a in fig.axes] + fig.legends
                   if lg is not None for t in lg.get_texts())


def test_the_admissible_figure_names_a_region_zone_only_where_it_has_an_area():
    """Issue 37, point 5: the stored region (12 lambdas) hatches its certified and refuted zones and names them;
    a region of one lambda (stam demo --quick's) has no area to hatch, and its legend does not name them."""
    region = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "lyapunov_region.json")
                        .read_text())

    def legend(reg):
        ax = ADM.plot_admissible(resolution=40, regions=[reg]).axes[0]
        return [t.get_text().replace("\n", " ") for t in ax.get_legend().get_texts()]  # long labels are wrapped

    full = legend(region)
    assert any(t.startswith("certified for some") for t in full) and ADM.REFUTED_LABEL in full
    one = legend({**region, "rows": region["rows"][:1]})
    assert not any(t.startswith("certified for some") for t in one) and ADM.REFUTED_LABEL not in one
    assert any(t.startswith("limit of the paper-form") for t in one)  # its one point is drawn (a marker)
