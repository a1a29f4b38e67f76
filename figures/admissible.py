"""Figure 2: where the paper's experiments stand relative to its theorem.

For the network specialisation H(x, y) = (lambda/2)||x - y||^2 (so L2* = L3* = L4* = L5* = lambda
and l = -lambda), the step sizes that Theorem conv and Theorem conv-rate admit:

- left panel, the (gamma, lambda) plane: shaded where K1 > 0 (eq. k1) and
  [(L2*)^2 + (L5*)^2] gamma^2 <= 1, with contours of the lower bound on T of Theorem conv-rate
  (``T_min``), and the settings of the paper's Table para (and the CIFAR-100 variant of
  Section sub:3.3) marked and labelled; a gamma schedule is drawn as an arrow from its first to
  its last value;
- right panel, the (gamma, beta) plane at the paper's iteration budget: for each lambda the
  paper uses, the region where all conditions of Theorem conv-rate hold (beta above the largest
  of its three lower bounds), with the paper's (gamma, beta) schedules marked.

All numbers come from ``stam.theory.symbolic.numeric`` (corrected constants); the constants a network
does not reveal (L1, the ES constants A and C, delta0 + M0', eps) are set by the caller and
printed in the figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stam.dnn import presets as P
from stam.dnn.catalog import CIFAR_TRAIN_IMAGES
from stam.figures.declare import declare_figure
from stam.figures.style import ADMISSIBLE_COLOR, PAPER_COLOR, legend_below, new_figure
from stam.theory.symbolic import numeric


@dataclass(frozen=True)
class Stage:
    """A stage of a paper setting (an epoch range with one lambda): gamma and beta as (first, last)."""

    name: str
    gamma: tuple[float, float]
    lam: float
    beta: tuple[float, float]


def paper_presets() -> tuple:
    """``(name, data set)`` of every STAM preset of the paper (Table para on CIFAR-10, Section
    sub:3.3 on CIFAR-100), read from :mod:`stam.dnn.presets`, the one place they are written."""
    c100 = {P.default_preset("stam", "cifar100")} - {P.default_preset("stam", "cifar10")}  # the rule's paper_preset
    return tuple((n, "cifar100" if n in c100 else "cifar10") for n, e in P.table()["presets"].items() if e["algo"] == "stam")


def paper_stages(presets=None) -> list[Stage]:
    """The paper's settings split into stages (a new stage where lambda changes or gamma is reset
    upwards), evaluated from the presets of ``stam.dnn`` over the paper's 1000 epochs."""
    epochs = P.paper_epochs()
    stages = []
    for name, dataset in presets or paper_presets():
        preset = P.resolve(name, "stam", dataset)
        h = [preset.at(e) for e in range(1, epochs + 1)]
        tag = preset.label + (" (CIFAR-100)" if dataset == "cifar100" else "")
        cuts = [0] + [e for e in range(1, epochs) if h[e]["lam"] != h[e - 1]["lam"] or h[e]["gamma"] > h[e - 1]["gamma"]]
        for a, b in zip(cuts, cuts[1:] + [epochs]):
            label = tag if len(cuts) == 1 else f"{tag}, epochs {a + 1}\u2013{b}"
            stages.append(Stage(label, (h[a]["gamma"], h[b - 1]["gamma"]), h[a]["lam"], (h[a]["beta"], h[b - 1]["beta"])))
    return stages


#: The paper's iteration budget: 1000 epochs of ceil(50000 / 128) = 391 minibatches.
PAPER_T = P.paper_epochs() * math.ceil(CIFAR_TRAIN_IMAGES / P.paper_batch_size())


@dataclass(frozen=True)
class NetworkConstants:
    """The constants the theorem needs but a network does not reveal (stated in the figure).

    ``a_G`` stands for max_i L1^i E[v_i^2] of Lemma es-lemma, so A = 2 max(a_G, L3*) with
    L3* = lambda (corrected eq. (eq101)); C is the ES constant; ``delta0 + M0`` is delta0 + M0'."""

    L1: float = 1.0
    a_G: float = 1.0
    C: float = 1.0
    delta0: float = 1.0
    M0: float = 0.0
    eps: float = 0.1
    T: int = PAPER_T

    def describe(self) -> str:
        return (
            f"L1={self.L1:g}, A=2max({self.a_G:g},\u03bb), C={self.C:g}, "
            f"\u03b4\u2080+M\u2080'={self.delta0 + self.M0:g}, \u03b5={self.eps:g}"
        )


def coupling(lam: float, nc: NetworkConstants):
    """The Constants of H = (lam/2)||x-y||^2 with the caller's L1 and C, and ``A`` of the corrected
    Lemma es-lemma (eq. (eq101)) for ``max_i L1^i E[v_i^2] = a_G`` and ``L3* = lam``."""
    A, _ = numeric.es_lemma([nc.a_G], [1.0], lam, 0.0)
    return numeric.quadratic_coupling(lam, L1=nc.L1, A=float(A), C=nc.C)


def region_gamma_lambda(gammas, lams, nc: NetworkConstants):
    """Boolean grid (len(lams), len(gammas)): K1 > 0 and [(L2*)^2+(L5*)^2] gamma^2 <= 1; and
    T_min (nan outside)."""
    admissible = np.zeros((len(lams), len(gammas)), dtype=bool)
    tmin = np.full(admissible.shape, np.nan)
    for i, lam in enumerate(lams):
        c = coupling(float(lam), nc)
        ok = np.asarray(numeric.admissible_gamma(gammas, c), dtype=bool)
        admissible[i] = ok
        if ok.any():
            t = np.asarray(numeric.T_min(gammas[ok], c, nc.delta0, nc.M0, nc.eps), dtype=float)
            tmin[i, ok] = t
    return admissible, tmin


def beta_min(gammas, lam: float, nc: NetworkConstants):
    """The smallest beta that Theorem conv-rate admits at each gamma (nan where gamma itself is not
    admissible): the largest of its three lower bounds at T = nc.T."""
    c = coupling(lam, nc)
    ok = np.asarray(numeric.admissible_gamma(gammas, c), dtype=bool)
    out = np.full(gammas.shape, np.nan)
    if ok.any():
        bounds = numeric.beta_lower_bounds(nc.T, gammas[ok], c, eps=nc.eps)
        out[ok] = np.max(np.stack([np.broadcast_to(np.asarray(v, float), (ok.sum(),)) for v in bounds.values()]), axis=0)
    return out


def check_stages(nc: NetworkConstants, stages=None) -> list[dict]:
    """The theorem's verdict at the first and last (gamma, beta) of each paper stage."""
    out = []
    for st in stages or paper_stages():
        c = coupling(st.lam, nc)
        for where, g, b in (("start", st.gamma[0], st.beta[0]), ("end", st.gamma[1], st.beta[1])):
            res = numeric.check(g, b, c, T=nc.T, eps=nc.eps, delta0=nc.delta0, M0=nc.M0)
            out.append({"setting": st.name, "at": where, "gamma": g, "lambda": st.lam, "beta": b, **res})
    return out


def group_stages(stages) -> list[tuple[str, list[Stage]]]:
    """Stages that start at the same (gamma, lambda, beta) (to 2 digits) share one marker and label."""
    groups: dict[tuple, list[Stage]] = {}
    for st in stages:
        groups.setdefault(tuple(f"{v:.2g}" for v in (st.gamma[0], st.lam, st.beta[0])), []).append(st)
    return [(" = ".join(s.name for s in members), members) for members in groups.values()]


#: the markers of the presets' groups, in turn (the admissible figure and the convergence map)
PRESET_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def draw_preset_group(ax, members: list[Stage], label: str, marker: str, y_of) -> None:
    """One marker at the common start; for a schedule, an arrow to where it ends (open marker)."""
    x0, y0 = members[0].gamma[0], y_of(members[0], 0)
    ax.plot([x0], [y0], linestyle="none", marker=marker, markersize=8, color=PAPER_COLOR,
            markeredgecolor="black", label=label, zorder=5)
    for st in members:
        x1, y1 = st.gamma[1], y_of(st, 1)
        if (x1, y1) != (x0, y0):
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0), zorder=4,
                        arrowprops=dict(arrowstyle="->", color=PAPER_COLOR, lw=1.3, shrinkA=4, shrinkB=3))
            ax.plot([x1], [y1], linestyle="none", marker=marker, markersize=6, markerfacecolor="white",
                    markeredgecolor=PAPER_COLOR, zorder=5)


def _label_positions(gammas, lams, values, levels, columns=(3e-3, 3e-4, 3e-2)) -> list[tuple[tuple, float]]:
    """Where to write each contour's level: where it crosses one of a few fixed gamma columns
    (matplotlib's automatic placement skips short, mostly horizontal contours)."""
    out = []
    for level in levels:
        for g in columns:
            col = values[:, int(np.argmin(np.abs(np.log(gammas / g))))]
            idx = np.nonzero(np.diff(np.sign(col - level)) != 0)[0]
            idx = [i for i in idx if np.isfinite(col[i]) and np.isfinite(col[i + 1])]
            if idx:
                out.append(((g, float(np.sqrt(lams[idx[0]] * lams[idx[0] + 1]))), level))
                break
    return out


def plot_admissible(nc: NetworkConstants = NetworkConstants(), stages=None, resolution: int = 160, regions=()):
    """Figure 2 (two panels), see the module docstring; ``regions``: ``lyapunov-region`` results
    (``stam pep --region``) drawn as two more zones of the left panel (:func:`draw_lyapunov_region`)."""
    stages = list(stages) if stages is not None else paper_stages()
    groups = group_stages(stages)
    fig, axes = new_figure(2, 1, panel_size=(5.3, 5.9))
    ax, bx = axes[0]
    gammas = np.logspace(-4, 1.5, resolution)
    _gamma_lambda_panel(ax, gammas, groups, nc, regions)
    _gamma_beta_panel(bx, gammas, stages, groups, nc)
    fig.suptitle("Where the paper's experiments stand relative to the theorem, H = \u03bb/2\u2016x\u2212y\u2016\u00b2\n"
                 f"(constants a network does not reveal: {nc.describe()})", fontsize=11)
    return fig


def _gamma_lambda_panel(ax, gammas: np.ndarray, groups: list, nc: NetworkConstants, regions) -> None:
    """The left panel of :func:`plot_admissible`: the admissible (gamma, lambda) region with the contours of
    Theorem conv-rate's T_min, the ``regions`` files' zones and the paper's settings (``groups``)."""
    lams = np.logspace(-2, 1.5, len(gammas))
    admissible, tmin = region_gamma_lambda(gammas, lams, nc)
    G, LAM = np.meshgrid(gammas, lams)
    ax.contourf(G, LAM, admissible.astype(float), levels=[0.5, 1.5], colors=[ADMISSIBLE_COLOR], alpha=0.3)
    ax.contour(G, LAM, admissible.astype(float), levels=[0.5], colors=[ADMISSIBLE_COLOR], linewidths=1.5)
    logt = np.log10(np.where(np.isfinite(tmin) & (tmin > 0), tmin, np.nan))
    if np.isfinite(logt).any():
        lo, hi = np.floor(np.nanmin(logt)), np.ceil(np.nanmax(logt))
        levels = np.arange(lo, hi + 1, max(1.0, np.ceil((hi - lo) / 6)))
        if len(levels) >= 2:
            ax.contour(G, LAM, logt, levels=levels, colors=["#404040"], linewidths=0.9, linestyles="--")
            for (g, lam), level in _label_positions(gammas, lams, logt, levels):
                ax.text(g, lam, f"$10^{{{level:.0f}}}$", fontsize=8, ha="center", va="center",
                        bbox=dict(boxstyle="round,pad=0.1", facecolor="white", edgecolor="none", alpha=0.8))
    ax.fill_between([], [], color=ADMISSIBLE_COLOR, alpha=0.3,
                    label="admissible: K1 > 0 and [(L2*)\u00b2+(L5*)\u00b2]\u03b3\u00b2 \u2264 1")
    ax.plot([], [], color="#404040", linestyle="--", linewidth=0.9,
            label=f"T_min of Theorem conv-rate (iterations, \u03b5={nc.eps:g})")
    for region in regions:
        draw_lyapunov_region(ax, region, gammas[0], gammas[-1])
    for k, (label, members) in enumerate(groups):
        draw_preset_group(ax, members, label, PRESET_MARKERS[k % len(PRESET_MARKERS)], lambda st, i: st.lam)
    ax.plot([], [], linestyle="none", marker="o", markersize=6, markerfacecolor="white", markeredgecolor=PAPER_COLOR,
            label="end of a schedule (arrow from its start)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(gammas[0], gammas[-1])
    ax.set_ylim(lams[0], lams[-1])
    ax.set_xlabel("\u03b3 (step size of the x- and u-steps)")
    ax.set_ylabel("\u03bb (coupling weight in H = \u03bb/2 \u2016x\u2212y\u2016\u00b2)")
    ax.set_title("(\u03b3, \u03bb): admissible region vs the paper's settings", fontsize=10)
    ax.grid(True, which="major", alpha=0.25)
    legend_below(ax, wrap=70)  # the region's long labels would widen the column (an empty band between the panels)


def _gamma_beta_panel(bx, gammas: np.ndarray, stages: list, groups: list, nc: NetworkConstants) -> None:
    """The right panel of :func:`plot_admissible`: at each lambda of the paper's ``stages`` the least beta of
    Theorem conv-rate over gamma (admissible above it), and the paper's settings (``groups``)."""
    lam_values = sorted({st.lam for st in stages})
    styles = ["-", "--", "-.", ":"]
    all_b = []
    for j, lam in enumerate(lam_values):
        bmin = beta_min(gammas, lam, nc)
        all_b.append(bmin[np.isfinite(bmin)])
        bx.plot(gammas, bmin, color=ADMISSIBLE_COLOR, linestyle=styles[j % len(styles)], linewidth=1.5,
                label=f"\u03bb={lam:g}: admissible above this line")
        bx.fill_between(gammas, bmin, 1e30, where=np.isfinite(bmin), color=ADMISSIBLE_COLOR, alpha=0.1, linewidth=0)
    for k, (label, members) in enumerate(groups):
        draw_preset_group(bx, members, label, PRESET_MARKERS[k % len(PRESET_MARKERS)], lambda st, i: st.beta[i])
    finite_b = np.concatenate(all_b + [np.array([b for st in stages for b in st.beta])])
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xlim(gammas[0], gammas[-1])
    bx.set_ylim(10 ** np.floor(np.log10(finite_b.min()) - 0.5), 10 ** np.ceil(np.log10(finite_b.max()) + 0.5))
    bx.set_xlabel("\u03b3 (step size of the x- and u-steps)")
    bx.set_ylabel("\u03b2 (proximal weight of the y-step)")
    bx.set_title(f"(\u03b3, \u03b2) at T = {nc.T:,}: Theorem conv-rate's conditions", fontsize=10)
    bx.grid(True, which="major", alpha=0.25)
    legend_below(bx)


@declare_figure(
    "admissible", sources=("lyapunov-region",), section="admissible",
    caption="The (\u03b3, \u03bb) and (\u03b3, \u03b2) planes for H = \u03bb/2\u2016x\u2212y\u2016\u00b2: shaded where "
    "the theorem's conditions hold; markers and arrows: the paper's settings and schedules "
    "(Table para, Section sub:3.3). Constants not known for a network: {nc}. With a lyapunov-region file "
    "(stam pep --region): hatched blue where a Lyapunov function certifies STAM for the file's class (lines: the "
    "paper-form limit, with minibatches dashed, convex F dotted), hatched orange where stam pep is unbounded "
    "under \u03b4\u2080 + M\u2080'_T \u2264 1 (a bound of the theorem's form with M\u2080'_T is refuted there, not "
    "the printed one with M\u2080').",
    help="admissible (no results needed; a lyapunov-region file of stam pep --region adds the certified and "
    "refuted zones)")
def draw(results, nc=None):
    """The figure kind ``admissible`` (:mod:`stam.figures.kinds`): drawn from theory, with the
    zones of any ``lyapunov-region`` results."""
    return plot_admissible(nc or NetworkConstants(), regions=[r.data for r in results["lyapunov-region"]])


#: the class of F as the figures name it (a ``lyapunov-region`` file without ``f_class`` is convex F)
CLASS_NAMES = {"convex": "convex F", "lsc": "any proper lsc F", "indicator": "F an indicator"}
#: the colours of a ``lyapunov-region`` in the figures
CERTIFIED_COLOR, CONVEX_COLOR, REFUTED_COLOR = "#0072B2", "#009E73", "#D55E00"


def region_edges(region: dict, gamma_min: float, gamma_max: float) -> dict:
    """The edges of a ``lyapunov-region`` result (:func:`stam.theory.worstcase.lyapunov.region`) per lambda, at the
    lower ends of the brackets: ``general`` (clipped to the axis), ``paper``, ``sampled`` and ``convex``
    (the general template for convex F; None when absent) the certified gammas, ``refuted`` the refuted
    one (nan: none)."""
    rows = sorted(region["rows"], key=lambda r: r["lam"])

    def edge(part, key, missing, within=None):
        parts = [(r[within] if within else r)[part] for r in rows]
        return np.array([p[key] if p[key] is not None else missing for p in parts], dtype=float)

    return {
        "lams": np.array([r["lam"] for r in rows]),
        "cls": CLASS_NAMES[region.get("f_class", "convex")],
        "general": np.minimum(edge("general", "lo", gamma_min), gamma_max * 10),
        "paper": edge("paper", "lo", np.nan),
        "sampled": edge("sampled", "lo", np.nan) if all("sampled" in r for r in rows) else None,
        "sampling": region.get("sampling") or {},
        "convex": (np.minimum(edge("general", "lo", gamma_min, within="convex"), gamma_max * 10)
                   if all("convex" in r for r in rows) else None),
        "refuted": edge("refuted", "hi", np.nan),
    }


REFUTED_LABEL = ("refuted: stam pep unbounded under δ₀ + M₀'_T ≤ 1 (first T+1 merits): no bound of "
                 "Theorem conv's form with M₀'_T (the printed M₀' is not refuted)")


def draw_region_lines(ax, region: dict, gamma_min: float, gamma_max: float, legend: bool = True) -> None:
    """A ``lyapunov-region`` as lines, for panels whose area is taken (the convergence maps): the limit of
    the paper-form potential for the result's class (solid), with minibatches (dashed), the limit of any
    one-step potential for convex F (dotted) and where the PEP refutes the theorem's form with the
    finite-horizon M0'_T (dash-dotted).  Short legend labels (the caption says the rest)."""
    e = region_edges(region, gamma_min, gamma_max)
    name = (lambda text: text) if legend else (lambda text: "_nolegend_")
    short = {"any proper lsc F": "lsc F", "convex F": "convex F", "F an indicator": "indicator F"}[e["cls"]]
    ax.plot(e["paper"], e["lams"], color=CERTIFIED_COLOR, linewidth=2, marker=".", zorder=6,
            label=name(f"{short}: paper-form potential certifies up to here"))
    if e["sampled"] is not None:
        ax.plot(e["sampled"], e["lams"], color=CERTIFIED_COLOR, linewidth=1.5, linestyle="--", marker="x", zorder=6,
                label=name(f"the same, minibatches N = {e['sampling'].get('N')}, b = {e['sampling'].get('b')}"))
    if e["convex"] is not None:
        ax.plot(e["convex"], e["lams"], color=CONVEX_COLOR, linewidth=1.5, linestyle=":", marker="+", zorder=6,
                label=name("convex F: a one-step potential certifies up to here"))
    ax.plot(e["refuted"], e["lams"], color=REFUTED_COLOR, linewidth=1.5, linestyle="-.", marker="|", zorder=6,
            label=name(f"{short}: stam pep unbounded from here (M₀'_T)"))


def draw_lyapunov_region(ax, region: dict, gamma_min: float, gamma_max: float) -> None:
    """Two zones of a ``lyapunov-region`` result (:func:`stam.theory.worstcase.lyapunov.region`) in the
    (gamma, lambda) panel, at the lower ends of the brackets, for the result's class of ``F``
    (``f_class``; a file without it is convex F): *certified* (a Lyapunov function of the general
    template proves the rate O(1/T): gamma up to the certified ``lo``), with the limit of the
    paper-form template (``V = a(G+H) + b M_t``) as a line, the same with minibatches (``sampled``) as
    a dashed line and, when the result has it, the limit for convex F beside (dotted); *refuted*
    (``stam pep`` unbounded at some T under ``delta0 + M0'_T <= 1``: no bound of Theorem conv's form with
    the finite-horizon ``M0'_T`` for this class, nor for any larger one: gamma from the refuted ``hi`` on)."""
    e = region_edges(region, gamma_min, gamma_max)
    lams, cert = e["lams"], e["general"]
    # a zone needs two lambdas to have an area (one lambda, as in stam demo --quick, draws none): named in the
    # legend only when drawn (issue 37)
    if np.count_nonzero(cert > gamma_min) >= 2:
        ax.fill_betweenx(lams, gamma_min, cert, where=cert > gamma_min, facecolor="none", edgecolor=CERTIFIED_COLOR,
                         hatch="//", linewidth=0, label="certified for some β of the grid: a Lyapunov function proves "
                         f"O(1/T) ({e['cls']}; stam pep --region)")
    ax.plot(e["paper"], lams, color=CERTIFIED_COLOR, linewidth=1.5, marker=".",
            label="limit of the paper-form Lyapunov function V = a(G+H) + b M_t")
    if e["sampled"] is not None:
        ax.plot(e["sampled"], lams, color=CERTIFIED_COLOR, linewidth=1.2, linestyle="--", marker="x",
                label=f"same with minibatches (N = {e['sampling'].get('N')}, b = {e['sampling'].get('b')}; growth and noise "
                "floor of the theorem's shape)")
    if e["convex"] is not None:  # the convex class beside the paper's
        ax.plot(e["convex"], lams, color=CONVEX_COLOR, linewidth=1.2, linestyle=":", marker="+",
                label="convex F: a Lyapunov function certifies up to here")
    refuted = e["refuted"]
    if np.count_nonzero(np.isfinite(refuted)) >= 2:
        ax.fill_betweenx(lams, np.where(np.isfinite(refuted), refuted, gamma_max * 10), gamma_max * 10,
                         where=np.isfinite(refuted), facecolor="none", edgecolor=REFUTED_COLOR, hatch="\\\\",
                         linewidth=0, label=REFUTED_LABEL)
