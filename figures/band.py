"""The band between certified and refuted (issue 39, point 1): for each horizon ``T`` (and ``beta``) of a
``pep-band`` result (:data:`stam.theory.onset.PEP_BAND`, written by ``benchmarks/pep_band.py``), the values of
``gamma*lambda`` where a potential certifies STAM (one-step Lyapunov functions, any proper lsc F), where the
PEP at that horizon is unbounded under ``delta0 + M0'_T <= 1`` (a bound of Theorem conv's form, eq.
(con-inequality), with ``M0'_T`` refuted), and the open band between them, with the T = 1 onset
``(1 + sqrt 3)/2`` in closed form (:func:`stam.theory.onset.t1_onset`)."""

from __future__ import annotations

import math

from stam.figures.admissible import CERTIFIED_COLOR, REFUTED_COLOR
from stam.figures.declare import declare_figure
from stam.figures.style import GREY, legend_below, new_figure

#: the closed-form T = 1 onset (1 + sqrt 3)/2 (stam.theory.onset.t1_onset, derived in sympy; its float here
#: so that drawing imports no sympy)
C_STAR = (1 + math.sqrt(3)) / 2
OPEN_COLOR = "#E6E6E6"


def _caption(results) -> str:
    data = [r.data for r in results["pep-band"]]
    cert = sorted({d["certified"] for d in data if d.get("certified") is not None})
    src = "; ".join(sorted({d["certified_from"] for d in data if d.get("certified_from")}))
    return ("Certified, open and refuted \u03b3\u03bb for each horizon T of stam pep (any proper lsc F, "
            "\u03bb = " + ", ".join(sorted({f"{d['lam']:g}" for d in data})) + ", L1 = "
            + ", ".join(sorted({f"{d['L1']:g}" for d in data})) + "): blue, certified by a one-step potential"
            + (f" (up to \u03b3\u03bb = {', '.join(f'{c:.3g}' for c in cert)}" + (f", from {src}" if src else "") + ")"
               if cert else "") + "; orange, the PEP of horizon T is unbounded under \u03b4\u2080 + M\u2080'_T \u2264 1 "
            "(a bound of Theorem conv's form with M\u2080'_T refuted; dark: the bisection's bracket); grey, open; "
            "hatched, beyond the range searched. Dashed: the T = 1 onset (1 + \u221a3)/2 in closed form.")


@declare_figure(
    "pep-band", sources=("pep-band",), section="pep", caption=_caption,
    help="pep-band (a pep-band file of benchmarks/pep_band.py: certified / open / refuted gamma*lambda per horizon)")
def draw(results, nc=None):
    """The figure kind ``pep-band`` (:mod:`stam.figures.kinds`): one bar per (beta, T) of every ``pep-band``
    result, its zones from :func:`stam.theory.onset.band_segments`."""
    from stam.theory.onset import band_segments

    data = [r.data for r in results["pep-band"]]
    if not data:
        raise ValueError("no pep-band result to draw (benchmarks/pep_band.py --out FILE writes one)")
    bars = [(d, s) for d in data for s in band_segments(d)]
    x_hi = max(d["gamma_lam_range"][1] for d in data) * 1.05
    certs = [d["certified"] for d in data if d.get("certified") is not None]
    x_lo = 0.8 * min([d["gamma_lam_range"][0] for d in data] + certs)
    fig, axes = new_figure(panel_size=(7.2, 0.9 + 0.36 * len(bars)))
    ax = axes[0, 0]
    labels, seen = [], set()

    def span(y, seg, color, label, **kw):
        if seg is None:
            return
        a, b = max(seg[0], x_lo), (seg[1] if seg[1] is not None else x_hi)
        if b <= a:
            return
        ax.barh(y, b - a, left=a, height=0.7, color=color, label=None if label in seen else label, **kw)
        seen.add(label)

    for y, (d, s) in enumerate(bars):
        span(y, s["certified"], CERTIFIED_COLOR, "certified (one-step potential)")
        span(y, s["open"], OPEN_COLOR, "open", edgecolor=GREY, linewidth=0.4)
        span(y, s["bracket"], "#8C3A00", "onset bracket (bisection)")
        span(y, s["refuted"], REFUTED_COLOR, "refuted: PEP of horizon T unbounded")
        span(y, s["unknown"], "white", "not searched (beyond the range)", hatch="///", edgecolor=GREY,
             linewidth=0.4)
        labels.append(f"\u03b2 = {s['beta']:g}, T = {s['T']}")
    ax.axvline(C_STAR, color="black", linestyle="--", linewidth=1, label="(1 + \u221a3)/2 = 1.366 (T = 1, closed form)")
    ax.set_yticks(range(len(bars)), labels)
    ax.invert_yaxis()
    ax.set_xlim(x_lo, x_hi)
    ax.set_xlabel("\u03b3\u03bb")
    ax.set_title("Theorem conv's form (M\u2080'_T): certified, open, refuted, per horizon")
    legend_below(ax, ncol=2)
    return fig


__all__ = ["draw", "C_STAR"]
