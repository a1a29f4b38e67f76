"""The figure kind ``map`` of the report (a ``convergence-map`` result, with the lines of a
``lyapunov-region`` one): its caption and its draw function, read from the result types.

The drawing itself is :mod:`stam.figures.map_figure`; the experiment that makes a map, ``stam map``
(its parameters, its run, its result in words), is :mod:`stam.figures.map_experiment`.
"""

from __future__ import annotations

from stam.figures.declare import declare_figure
from stam.figures.map_experiment import map_caption
from stam.figures.map_figure import plot_map
from stam.synthetic import convergence_map as CM


def region_caption(region: dict) -> str:
    """What the lines of a ``lyapunov-region`` result on a map say, with its numbers (limits in gamma*lambda
    over the result's lambdas)."""
    from stam.figures.admissible import CLASS_NAMES

    rows = region["rows"]

    def span(values):
        values = [v for v in values if v is not None]
        return "none" if not values else (f"{min(values):.3g}" if f"{min(values):.3g}" == f"{max(values):.3g}"
                                          else f"{min(values):.3g}–{max(values):.3g}")

    paper = [r["paper"]["lo"] * r["lam"] if r["paper"]["lo"] is not None else None for r in rows]
    sampled = [r["sampled"]["lo"] * r["lam"] if r.get("sampled") and r["sampled"]["lo"] is not None else None for r in rows]
    refuted = [r["refuted"]["hi"] * r["lam"] if r["refuted"]["hi"] is not None else None for r in rows]
    convex = [r["convex"]["general"]["lo"] * r["lam"] if "convex" in r and r["convex"]["general"]["lo"] is not None else None
              for r in rows]
    text = (f"Lines (stam pep --region, {len(rows)} λ, L1 = 1): for {CLASS_NAMES[region.get('f_class', 'convex')]} "
            f"a potential of the paper's form certifies STAM up to γλ = {span(paper)} (solid; full gradient)")
    if any(v is not None for v in sampled):
        text += f" and {span(sampled)} with minibatches (dashed)"
    if any(v is not None for v in convex):
        text += f"; for convex F some one-step potential up to γλ = {span(convex)} (dotted)"
    text += (f"; from γλ = {span(refuted)} (dash-dotted) stam pep is unbounded under δ₀ + M₀'_T "
             "≤ 1, the finite-horizon M₀'_T (first T + 1 merits): no bound of Theorem conv's form with "
             "M₀'_T there; the printed theorem's M₀' is not refuted by it.")
    return text


def caption(results) -> str:
    """The caption of the figure kind ``map``: one sentence per map, and what the region's lines say."""
    text = " ".join(map_caption(r.data) for r in results["convergence-map"])
    if any(CM.is_quadratic(r.data) for r in results["convergence-map"]):
        text += "".join(" " + region_caption(r.data) for r in results["lyapunov-region"])
    return text


@declare_figure(
    "map", sources=("convergence-map", "lyapunov-region"), section="map", caption=caption,
    help="map (convergence-map files of stam map; a lyapunov-region file of stam pep --region adds its limits as lines)")
def draw(results, nc=None):
    """The figure kind ``map`` (:mod:`stam.figures.kinds`), with the lines of any ``lyapunov-region`` result."""
    return plot_map([r.data for r in results["convergence-map"]], nc, regions=[r.data for r in results["lyapunov-region"]])


__all__ = ["draw", "caption", "region_caption"]
