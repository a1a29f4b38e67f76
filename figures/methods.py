"""The figure ``methods``: theory beside practice for every method of the practice table (issue 60, point 4).

One panel per method (STAM, PSGD, BC, BR): along its step-size axis, the theory's verdict for F the indicator of a
set (the network's F, Q = {-s, s}^n per layer) from a ``methods-regions`` result (``benchmarks/methods_regions.py``),
and the trained accuracy of the ``methods-steps`` sweep (``benchmarks/methods_steps.py``) over the same axis.  STAM's
axis is ``gamma lam`` (its region's, dimensionless: ``gamma lam`` is unchanged when G is scaled); PSGD's, BC's and
BR's is ``h = lr L^``, ``L^`` the sweep's curvature estimate (:func:`stam.dnn.stepsweep.curvature`), a local
curvature at the start and not the class's ``L1``.  The shading is the natural measure's verdict (green: certified,
orange hatched: refuted; none: not determined); the strip along the top the common measure's.
"""

from __future__ import annotations

from stam.figures.declare import declare_figure
from stam.figures.style import algo_color, new_figure

#: the class of F the panels show: the network's F is the indicator of Q (a nonconvex set)
F_CLASS = "indicator"
#: a setting "trains" from this mean test accuracy on (the findings' digits bar)
TRAINS = 90.0
#: chance on digits (10 classes)
CHANCE = 10.0
#: the regions entry of each method in the panels (BR as it is run: lambda grown)
REGION_ENTRY = {"stam": "STAM", "psgd": "PSGD", "bc": "BC", "br": "BR, lam x 1.02 per step"}
LABELS = {"stam": "STAM", "psgd": "PSGD", "bc": "BC", "br": "BR"}


def _verdict(entry: dict | None, measure: str) -> dict | None:
    if entry is None or entry.get(measure) is None:
        return None
    return next((v for v in entry[measure] if v["f_class"] == F_CLASS), None)


def theory_ranges(regions: dict, algo: str) -> dict:
    """``{"natural": (certified, refuted), "common": (certified, refuted)}`` for ``algo`` on its figure axis: each a
    list of ``[lo, hi]`` (``hi`` None: unbounded) in ``h = gamma L1`` (STAM: ``gamma lam``).  STAM's natural ones come
    from the result's ``stam_natural`` (the lsc class, whose certificates cover an indicator; certified up to the
    smallest limit over its lambdas, refuted from the largest)."""
    entry = next((m for m in regions["methods"] if m["label"] == REGION_ENTRY[algo]), None)
    out = {}
    for measure in ("natural", "common"):
        if algo == "stam" and measure == "natural":
            lsc = next(c for c in regions["stam_natural"]["classes"] if c["f_class"] == "lsc")
            cert = [[0, lsc["certified_gamma_lam"][0]]] if lsc["certified_gamma_lam"] else []
            ref = [[lsc["refuted_gamma_lam"][1], None]] if lsc["refuted_gamma_lam"] else []
            out[measure] = (cert, ref)
            continue
        v = _verdict(entry, measure)
        out[measure] = ([] if v is None or v["certified"] is None else [v["certified"]], [] if v is None else v["refuted"])
    return out


def axis_values(steps_entry: dict) -> tuple[list, float, str]:
    """The sweep's x values, the tuned one, and the axis label: STAM ``gamma lam``; the others ``lr L^``."""
    tuned = steps_entry["tuned"]
    key = steps_entry["step_key"]
    if steps_entry["algo"] == "stam":
        lam = tuned["lam"]
        return [r[key] * lam for r in steps_entry["rows"]], tuned[key] * lam, "γλ (β, λ as tuned)"
    L = steps_entry["curvature"]
    return [r[key] * L for r in steps_entry["rows"]], tuned[key] * L, f"h = lr · L̂  (L̂ = {L:.3g})"


def _shade(ax, intervals, lo, hi, **kw):
    for a, b in intervals:
        ax.axvspan(max(a, lo) if a else lo, min(b, hi) if b is not None else hi, **kw)


def caption(results) -> str:
    """The caption of the figure kind ``methods``: the sweep's protocol, the axes, the verdicts' sources."""
    steps = [r.data for r in results["methods-steps"]]
    text = ("Theory beside practice for the four methods, per panel one method along its step: shaded, the natural "
            "measure's verdict for F the indicator of a set (the network's F) — green certified, orange hatched refuted by a "
            "run, blank not determined; the strip along the top, the common measure's (the proximal-gradient residual of "
            "G + F at the binary output); dots, the mean test accuracy of the binary weights on digits (bars: min and "
            "max over seeds; × at the bottom: a diverged seed; near chance without divergence, the share of binary weights "
            "whose sign ever changed), the dashed line the tuned setting. STAM's axis is γλ "
            "(its certificates: L1 = 1 and some β per λ; the network's β/L̂ is not checked); the others' h = lr L̂, "
            "L̂ the largest Hessian eigenvalue of the training loss at the method's first forward weights (seed 0): a "
            "local curvature at the start, not the class's L1, so their shading is placed by an estimate.")
    for s in steps:
        text += " Sweep: " + s["protocol"] + "."
    return text


@declare_figure(
    "methods", sources=("methods-regions", "methods-steps"), section="practice", caption=caption,
    help="methods (a methods-regions file and a methods-steps file: each method's certified and refuted step ranges "
         "beside its trained accuracy on digits)")
def draw(results, nc=None):
    """The figure kind ``methods`` (:mod:`stam.figures.kinds`): one panel per method of the sweep."""
    regions = [r.data for r in results["methods-regions"]]
    steps = [r.data for r in results["methods-steps"]]
    if not regions or not steps:
        raise ValueError("the figure methods needs a methods-regions file (benchmarks/methods_regions.py) and a "
                         "methods-steps file (benchmarks/methods_steps.py)")
    try:
        return _draw(regions[0], steps[0])
    except (KeyError, IndexError, TypeError, StopIteration) as exc:  # a file that passed its type but not this figure
        raise ValueError(f"{results['methods-regions'][0].path} or {results['methods-steps'][0].path}: not the "
                         f"methods-regions and methods-steps files this toolkit writes ({type(exc).__name__}: {exc})") from None


def _draw(regions: dict, steps: dict):
    entries = steps["methods"]
    fig, axes = new_figure(len(entries), 1, panel_size=(3.3, 3.5))
    for ax, entry in zip(axes[0], entries):
        algo = entry["algo"]
        xs, tuned, xlabel = axis_values(entry)
        lo, hi = min(xs + [tuned]) / 3, max(xs + [tuned]) * 3
        ranges = theory_ranges(regions, algo)
        cert, ref = ranges["natural"]
        _shade(ax, cert, lo, hi, color="#009E73", alpha=0.18, lw=0, label="certified (natural measure)")
        _shade(ax, ref, lo, hi, facecolor="none", edgecolor="#D55E00", hatch="//", alpha=0.5, lw=0,
               label="refuted (natural measure)")
        ccert, cref = ranges["common"]
        strip = dict(ymin=0.95, ymax=1.0)
        _shade(ax, ccert, lo, hi, color="#009E73", alpha=0.7, lw=0, **strip)
        _shade(ax, cref, lo, hi, color="#D55E00", alpha=0.7, lw=0, label="top strip: common measure (green certified, orange refuted, blank not determined)", **strip)
        color = algo_color(algo)
        means = [r["mean"] for r in entry["rows"]]
        pts = [(x, m, r) for x, m, r in zip(xs, means, entry["rows"]) if m is not None]
        ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                    yerr=[[p[1] - p[2]["min"] for p in pts], [p[2]["max"] - p[1] for p in pts]],
                    fmt="o-", color=color, ms=4, capsize=2, label="test accuracy (mean, min–max)")
        noted = False
        for x, r in zip(xs, entry["rows"]):  # a setting near chance that did not diverge: how far its signs moved
            signs = [v for v in r.get("sign_ever") or [] if v is not None]
            if r["mean"] is not None and r["mean"] <= 2 * CHANCE and not r["diverged"] and signs:
                ax.annotate(f"{100 * sum(signs) / len(signs):.2g}%", (x, r["mean"]), textcoords="offset points",
                            xytext=(0, 7), ha="center", fontsize=6.5)
                noted = True
        if noted:
            ax.plot([], [], " ", label="n% above a point near chance: binary weights whose sign ever changed")
        div = [x for x, r in zip(xs, entry["rows"]) if r["diverged"]]
        if div:
            ax.plot(div, [CHANCE / 2] * len(div), "x", color="black", ms=7, label="diverged (a seed)")
        ax.axvline(tuned, color="black", ls="--", lw=1, label="tuned")
        ax.axhline(CHANCE, color="grey", ls=":", lw=1, label="chance")
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(0, 104)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_title(LABELS.get(algo, algo), fontsize=10)
        ax.grid(alpha=0.3)
        if ax is axes[0][0]:
            ax.set_ylabel("test accuracy, binary weights (%)")
    handles, labels = [], []
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    return fig


__all__ = ["draw", "caption", "theory_ranges", "axis_values", "F_CLASS", "TRAINS", "CHANCE", "REGION_ENTRY", "LABELS"]
