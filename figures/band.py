"""The band between certified and refuted (issue 39, point 1): for each horizon ``T`` (and ``beta``) of a
``pep-band`` result (:data:`stam.theory.worstcase.onset.PEP_BAND`, written by ``benchmarks/pep_band.py``), the values of
``gamma*lambda`` where a potential certifies STAM (any proper lsc F; per beta the best potential with history of
:mod:`stam.theory.worstcase.history` where the result has them), where no ``O(1/T)`` bound holds (the 2-periodic run of
:func:`stam.theory.worstcase.onset.two_cycle`, from ``c_beta``), where the PEP at that horizon is unbounded under ``delta0 +
M0'_T <= 1`` (a bound of Theorem conv's form, eq. (con-inequality), with ``M0'_T`` refuted), and what is left open
between them; the full gradient, each minibatch sampling and the potentials with history side by side, with the
T = 1 onset ``(1 + sqrt 3)/2`` in closed form (:func:`stam.theory.worstcase.onset.t1_onset`)."""

from __future__ import annotations

import math

from stam.figures.admissible import CERTIFIED_COLOR, REFUTED_COLOR
from stam.figures.declare import declare_figure
from stam.figures.style import GREY, legend_below, new_figure

#: the closed-form T = 1 onset (1 + sqrt 3)/2 (stam.theory.worstcase.onset.t1_onset, derived in sympy; its float here
#: so that drawing imports no sympy)
C_STAR = (1 + math.sqrt(3)) / 2
OPEN_COLOR = "#E6E6E6"


NO_DECAY_COLOR = "#F0B489"


def _caption(results) -> str:
    data = [r.data for r in results["pep-band"]]
    cert = sorted({d["certified"] for d in data if d.get("certified") is not None})
    src = "; ".join(sorted({d["certified_from"] for d in data if d.get("certified_from")}))
    sampled = any("N" in row for d in data for row in d["rows"])
    hist = any(d.get("history") for d in data)
    cyc = any(d.get("cycles") for d in data)
    return ("Certified, open and refuted \u03b3\u03bb for each horizon T of stam pep (any proper lsc F, "
            "\u03bb = " + ", ".join(sorted({f"{d['lam']:g}" for d in data})) + ", L1 = "
            + ", ".join(sorted({f"{d['L1']:g}" for d in data})) + ")"
            + (", the full gradient and b-nice minibatches side by side" if sampled else "")
            + (", and per potential with history (k-step conditions, h past iterates)" if hist else "")
            + ": blue, certified" + (" (per \u03b2: the best potential proven exactly)" if hist else " by a one-step potential")
            + (f" (up to \u03b3\u03bb = {', '.join(f'{c:.3g}' for c in cert)}" + (f", from {src}" if src else "") + ")"
               if cert and not hist else "")
            + "; grey, open"
            + ("; light orange, no O(1/T) bound: STAM has a 2-periodic run with S_t constant from "
               "\u03b3\u03bb = (2\u03b2 \u2212 L1 \u2212 \u03bb)/(2\u03b2 \u2212 L1)" if cyc else "")
            + "; orange, the PEP of horizon T is unbounded under \u03b4\u2080 + M\u2080'_T \u2264 1 "
            "(a bound of Theorem conv's form with M\u2080'_T refuted; dark: the bisection's bracket); "
            "hatched, beyond the range searched. Dashed: the T = 1 onset (1 + \u221a3)/2 in closed form.")


def _groups(data):
    """The panels: the full gradient, each minibatch sampling, the potentials with history; each a list of
    ``(label, segments)``."""
    from stam.theory.worstcase.onset import band_segments, history_segments

    groups: dict = {}
    for d in data:
        for s in band_segments(d):
            key = (0, s["N"], s["b"])
            name = "full gradient" if (s["N"], s["b"]) == (1, 1) else f"minibatches N = {s['N']}, b = {s['b']}"
            groups.setdefault(key, (name, []))[1].append((f"\u03b2 = {s['beta']:g}, T = {s['T']}", s))
        for s in history_segments(d):
            sampled = (s["N"], s["b"]) != (1, 1)
            label = (f"\u03b2 = {s['beta']:g}, " + (f"one step, N = {s['N']}, b = {s['b']}" if sampled
                                                    else f"{s['template']}, k = {s['k']}, h = {s['h']}"))
            groups.setdefault((1, 0, 0), ("potentials with history", []))[1].append((label, s))
    return [groups[k] for k in sorted(groups)]


@declare_figure(
    "pep-band", sources=("pep-band",), section="pep", caption=_caption,
    help="pep-band (a pep-band file of benchmarks/pep_band.py: certified / open / refuted gamma*lambda per horizon)")
def draw(results, nc=None):
    """The figure kind ``pep-band`` (:mod:`stam.figures.kinds`): one panel for the full gradient, one per minibatch
    sampling and one for the potentials with history, side by side; one bar per (beta, T) of every ``pep-band``
    result (its zones from :func:`stam.theory.worstcase.onset.band_segments`) or per potential
    (:func:`stam.theory.worstcase.onset.history_segments`)."""
    data = [r.data for r in results["pep-band"]]
    if not data:
        raise ValueError("no pep-band result to draw (benchmarks/pep_band.py --out FILE writes one)")
    groups = _groups(data)
    x_hi = max(d["gamma_lam_range"][1] for d in data) * 1.05
    certs = [s["certified"][1] for _, bars in groups for _, s in bars if s["certified"] is not None]
    x_lo = 0.8 * min([d["gamma_lam_range"][0] for d in data] + certs)
    n = max(len(bars) for _, bars in groups)
    fig, axes = new_figure(ncols=len(groups), panel_size=(5.6 if len(groups) > 1 else 7.2, 0.9 + 0.36 * n))
    seen = set()
    for ax, (name, bars) in zip(axes[0], groups):
        def span(y, seg, color, label, **kw):
            if seg is None:
                return
            a, b = max(seg[0], x_lo), (seg[1] if seg[1] is not None else x_hi)
            if b <= a:
                return
            ax.barh(y, b - a, left=a, height=0.7, color=color, label=None if label in seen else label, **kw)
            seen.add(label)

        for y, (_, s) in enumerate(bars):
            span(y, s["certified"], CERTIFIED_COLOR, "certified (proven potential)")
            span(y, s["open"], OPEN_COLOR, "open", edgecolor=GREY, linewidth=0.4)
            span(y, s.get("no_decay"), NO_DECAY_COLOR, "no O(1/T) bound (2-cycle)")
            span(y, s.get("bracket"), "#8C3A00", "onset bracket (bisection)")
            span(y, s.get("refuted"), REFUTED_COLOR, "refuted: PEP of horizon T unbounded")
            span(y, s.get("unknown"), "white", "not searched (beyond the range)", hatch="///", edgecolor=GREY,
                 linewidth=0.4)
        label = "(1 + \u221a3)/2 = 1.366 (T = 1, closed form)"
        ax.axvline(C_STAR, color="black", linestyle="--", linewidth=1, label=None if label in seen else label)
        seen.add(label)
        ax.set_yticks(range(len(bars)), [lab for lab, _ in bars])
        ax.set_ylim(n - 0.5, -0.5)
        ax.set_xlim(x_lo, x_hi)
        ax.set_xlabel("\u03b3\u03bb")
        ax.set_title(name)
    fig.suptitle("Theorem conv's form (M\u2080'_T): certified, open, refuted")
    if len(groups) == 1:
        legend_below(axes[0][0], ncol=2)
    else:  # one legend for all the panels, across the page under them (each zone is labelled once, in any panel)
        handles = [h for ax in axes[0] for h in ax.get_legend_handles_labels()[0]]
        labels = [lab for ax in axes[0] for lab in ax.get_legend_handles_labels()[1]]
        fig.legend(handles, labels, loc="outside lower center", ncol=min(4, len(labels)), fontsize=8, frameon=False)
    return fig


__all__ = ["draw", "C_STAR"]
