"""Figure 1: empirical stationarity rates against Theorem conv.

One panel per synthetic problem: ``min_t E S_t`` against ``T`` on log-log axes (the mean over
seeds, the seeds' spread shaded), ``E S_{T-1}`` where it departs from that minimum (a run that
grows or diverges keeps a small minimum; the last iterate shows it, and the legend counts runs
that diverged), the right-hand side of Theorem conv (eq. (con-inequality),
corrected constants) as a curve, a reference slope -1/2 (the O(1/sqrt(T)) of Theorem conv-rate
when beta grows like sqrt(T)), the fitted log-log slope in the legend, and where a PEP sweep is
given the exact worst case of deterministic STAM (one more panel, or a curve in the problem's
panel when the rates file embeds it).
"""

from __future__ import annotations

import numpy as np

from stam.figures.declare import declare_figure
from stam.figures.results import finite
from stam.figures.style import (
    BOUND_COLOR,
    PEP_COLOR,
    REFERENCE_COLOR,
    algo_color,
    legend_below,
    log_axes,
    new_figure,
)

#: Legend labels (tests and readers find the curves by them).
EMPIRICAL = "STAM: mean of min$_t$ S$_t$ over seeds"
BOUND = "Theorem conv bound"
REFERENCE = "reference slope $-1/2$"
PEP = "PEP exact worst case"
FINAL = "STAM: mean of S$_{T-1}$ (last iterate)"


def _column(rows, key):
    return np.array([r.get(key) if finite(r.get(key)) else np.nan for r in rows], dtype=float)


def _pep_rows(pep) -> list[dict]:
    """Rows of a PEP sweep given either as the sweep object or as its list of rows."""
    if isinstance(pep, dict):
        return list(pep.get("rows", []))
    return list(pep or [])


def fit_slope(T, S) -> float:
    """Least-squares slope of log S against log T over the positive finite points."""
    T, S = np.asarray(T, float), np.asarray(S, float)
    ok = np.isfinite(T) & np.isfinite(S) & (T > 0) & (S > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(T[ok]), np.log(S[ok]), 1)[0])


def _fmt_slope(s) -> str:
    return "n/a" if not finite(s) else f"{s:+.2f}".replace("-", "\u2212")


def rates_panel(ax, rates: dict) -> None:
    """Draw one ``synthetic-rates`` result into ``ax``."""
    rows = sorted(rates.get("rows", []), key=lambda r: r.get("T", 0))
    T = _column(rows, "T")
    mean, lo, hi = _column(rows, "S_min_mean"), _column(rows, "S_min_lo"), _column(rows, "S_min_hi")
    std = _column(rows, "S_min_std")
    lo = np.where(np.isfinite(lo), lo, mean - std)
    hi = np.where(np.isfinite(hi), hi, mean + std)
    bound = _column(rows, "bound")
    admissible = np.array([bool(r.get("admissible")) for r in rows])
    color = algo_color("stam")

    slope = rates.get("slope")
    if not finite(slope):
        slope = fit_slope(T, mean)
    pos = lambda a: np.where(a > 0, a, np.nan)  # noqa: E731 - log axes drop non-positive values
    spread = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)  # one seed, or seeds that agree: no band, no legend entry
    if spread.any():
        ax.fill_between(T, pos(lo), pos(hi), color=color, alpha=0.22, linewidth=0,
                        label="spread over seeds (10%\u201390% quantiles)")
    ax.plot(T, pos(mean), color=color, marker="o", markersize=4, label=f"{EMPIRICAL} (fitted slope {_fmt_slope(slope)})")
    final = _column(rows, "S_final_mean")
    diverged = max((int(r.get("nonfinite") or 0) for r in rows), default=0)
    if diverged or np.any(final > 1.01 * mean):
        note = f", {diverged} of {(rates.get('params') or {}).get('R', '?')} runs diverged" if diverged else ""
        ax.plot(T, pos(final), color=color, linestyle="-.", marker="x", markersize=5, label=f"{FINAL}{note}")
    if (~admissible).any():
        ax.plot(
            T[~admissible], pos(mean[~admissible]), linestyle="none", marker="o", markersize=8,
            markerfacecolor="white", markeredgecolor=color, label="outside the theorem's conditions",
        )
    if np.isfinite(bound).any():
        bslope = rates.get("bound_slope")
        if not finite(bslope):
            bslope = fit_slope(T, bound)
        ax.plot(T, pos(bound), color=BOUND_COLOR, linestyle="--", label=f"{BOUND} (slope {_fmt_slope(bslope)})")
    ok = np.isfinite(mean) & (mean > 0)
    if ok.any():
        # anchored at half the first empirical point, so that it does not hide the data
        T0, S0 = T[ok][0], 0.5 * mean[ok][0]
        ax.plot(T, S0 * (T / T0) ** -0.5, color=REFERENCE_COLOR, linestyle=":", label=REFERENCE)
    if rates.get("pep"):
        pep_rows = _pep_rows(rates["pep"])
        pT, pw = _column(pep_rows, "T"), _column(pep_rows, "worst_case")
        ax.plot(pT, pos(pw), color=PEP_COLOR, marker="s", markersize=4, label=PEP)

    log_axes(ax)
    ax.set_xlabel("T (iterations)")
    ax.set_ylabel(r"E S$_t$ (stationarity, Theorem conv)")
    ax.set_title(_rates_title(rates, rows, admissible), fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    legend_below(ax)


def _rates_title(rates: dict, rows: list[dict], admissible: np.ndarray) -> str:
    """The title of :func:`rates_panel`: the problem and its seeds, and where one gamma was run, its
    setting (a preset's constants, or gamma with its rule and beta's), flagged outside the theorem."""
    params = rates.get("params") or {}
    seeds = params.get("R") or params.get("seeds")
    title = f"Problem {rates.get('problem', '?')}: stationarity vs T" + (f", {seeds} seeds" if seeds else "")
    gammas = {r.get("gamma") for r in rows}
    betas = {r.get("beta") for r in rows}
    if len(gammas) == 1 and finite(next(iter(gammas))):
        gamma = next(iter(gammas))
        if params.get("preset"):  # Table para's constants (stam synthetic run --preset)
            title += f"\n{params['preset']}: \u03b3={gamma:g}, \u03bb={params.get('lam')}"
            title += f", \u03b2={next(iter(betas)):g}" if len(betas) == 1 else ""
        else:
            rule = str(params.get("gamma_rule") or "").replace(" * ", "\u00b7").replace("gamma_max", "\u03b3_max")
            title += f"\n\u03b3={gamma:.3g}" + (f" ({rule})" if rule and rule != "given" else "")
            title += ", \u03b2(T) of Thm conv-rate" if str(params.get("beta_rule", "")).startswith("max") else ""
        if not admissible.all():
            title += " (outside the theorem)"
    return title


def pep_panel(ax, sweeps: list[dict]) -> None:
    """The exact worst case of deterministic STAM (PEP) against the theorem's bound, per sweep."""
    for i, sweep in enumerate(sweeps):
        rows = sorted(_pep_rows(sweep), key=lambda r: r.get("T", 0))
        T, worst, bound = _column(rows, "T"), _column(rows, "worst_case"), _column(rows, "bound")
        tag = f"\u03bb={sweep.get('lam')}, \u03b3={sweep.get('gamma')}, \u03b2={sweep.get('beta')}"
        marker = ["s", "o", "^", "D"][i % 4]
        ax.plot(T, np.where(worst > 0, worst, np.nan), color=PEP_COLOR, marker=marker, markersize=4,
                label=f"{PEP} ({tag})")
        if np.isfinite(bound).any():
            ax.plot(T, np.where(bound > 0, bound, np.nan), color=BOUND_COLOR, linestyle="--", marker=marker,
                    markersize=3, label=f"{BOUND} ({tag})")
        bad = np.array([str(r.get("status", "optimal")).lower() != "optimal" for r in rows])
        if bad.any():
            ax.plot(T[bad], np.where(worst[bad] > 0, worst[bad], np.nan), linestyle="none", marker="x",
                    markersize=9, color=BOUND_COLOR, label="solver status not optimal")
    log_axes(ax)
    ax.set_xlabel("T (iterations)")
    ax.set_ylabel(r"min$_{t<T}$ S$_t$ (worst case, $\delta_0+M_{0,T}'\leq 1$; $M_{0,T}'\leq M_0'$)")
    ax.set_title("Deterministic STAM: exact worst case (PEP)\nvs the bound of Theorem conv", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    legend_below(ax)


def plot_rates(rates: list[dict], pep_sweeps: list[dict] = ()):
    """Figure 1: one panel per ``synthetic-rates`` result, plus one PEP panel if sweeps are given."""
    panels = len(rates) + (1 if pep_sweeps else 0)
    if panels == 0:
        raise ValueError("no synthetic-rates or pep-sweep results to plot")
    ncols = min(panels, 3)
    nrows = -(-panels // ncols)
    fig, axes = new_figure(ncols, nrows, panel_size=(4.5, 4.6))
    flat = axes.ravel()
    for ax, r in zip(flat, rates):
        rates_panel(ax, r)
    if pep_sweeps:
        pep_panel(flat[len(rates)], list(pep_sweeps))
    for ax in flat[panels:]:
        ax.set_visible(False)
    fig.suptitle("Theorem conv against STAM on synthetic problems", fontsize=12)
    return fig


@declare_figure(
    "rates", sources=("synthetic-rates", "pep-sweep"), section="rates",
    caption="min_t E S_t against T (log-log), mean over seeds with their spread shaded, the bound of Theorem "
    "conv, a reference slope \u22121/2, and the exact worst case (PEP) where given, under "
    "\u03b4\u2080 + M\u2080'_T \u2264 1 (M\u2080'_T: the first T + 1 merits, at most the paper's M\u2080', so the "
    "worst case bounds the one under the printed normalisation and a worst case below the bound holds for the "
    "printed theorem).",
    help="rates (synthetic-rates and pep-sweep files)")
def draw(results, nc=None):
    """The figure kind ``rates`` (:mod:`stam.figures.kinds`)."""
    return plot_rates([r.data for r in results["synthetic-rates"]], [r.data for r in results["pep-sweep"]])

