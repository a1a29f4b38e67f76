"""The tuning curves of ``stam tune`` (Dodge et al. 2019, "Show your work"): each algorithm's
expected best validation accuracy against the number of trials, by resampling its trials
(:func:`stam.dnn.tunestats.tuning_curves`), so an equal-budget comparison is shown at every budget up
to the one run, not at that one alone.  matplotlib and :mod:`stam.dnn.tune` are imported when a
figure or its caption is made, so that finding the figure kinds stays cheap."""

from __future__ import annotations

from stam.figures.declare import declare_figure
from stam.figures.style import algo_color, canonical_algo, legend_below, new_figure

#: line styles by position, so that algorithms sharing a colour stay apart
_STYLES = ("-", "--", "-.", ":")


def caption(results) -> str:
    """The caption of the figure kind ``tuning-curves``."""
    from stam.dnn.catalog import bn_augmented, bn_protocol
    from stam.dnn.tunetext import describe

    return ("Expected best validation accuracy (binary weights; float weights for Float) against the number of "
            "trials, by resampling each algorithm's trials (Dodge et al. 2019): the equal-budget comparison at every "
            "budget up to the one run. " + " ".join(f"{describe(r.data)}: {r.data['params']['trials']} trials per algorithm, "
                                                    f"{r.data['params']['epochs']} epochs{_rung_note(r.data)}, "
                                                    f"{bn_protocol(r.data['params'].get('bn_images'), None, bn_augmented(r.data['params']))}."
                                                    for r in results["tune"] if not r.data.get("transfer")))


def _rung_note(result: dict) -> str:
    """With successive halving: the budget at which the curve's trials were scored."""
    from stam.dnn.tunestats import curve_epochs

    return f" (successive halving: every trial scored after its first rung, {curve_epochs(result)} epochs)" \
        if result.get("halving") else ""


@declare_figure(
    "tuning-curves", sources=("tune",), section="tuning", caption=caption,
    help="tuning-curves (tune files of stam tune: expected best validation accuracy against the number of trials)")
def draw(results, nc=None):
    """The figure kind ``tuning-curves`` (:mod:`stam.figures.kinds`): one panel per tune result."""
    from matplotlib.ticker import MaxNLocator

    from stam.dnn.tunetext import describe
    from stam.dnn.tunestats import tuning_curves

    tuned = [r.data for r in results["tune"] if not r.data.get("transfer")]  # a transfer has no trials: no curve
    if not tuned:
        raise ValueError("no tune results with trials to draw tuning curves from (a transferred result, stam tune "
                         "--transfer, has none)")
    fig, axes = new_figure(len(tuned), 1, panel_size=(5.2, 3.6))
    for ax, result in zip(axes[0], tuned):
        labels = {a["label"]: a["algo"] for a in result["algorithms"]}
        for i, (label, curve) in enumerate(tuning_curves(result).items()):
            ks = range(1, len(curve) + 1)
            ax.plot(ks, curve, _STYLES[i % len(_STYLES)], marker="o", ms=3, markevery=max(1, len(curve) // 50), color=algo_color(canonical_algo(labels[label])),
                    label=label)
        ax.set_xlabel("trials (budget per algorithm)")
        ax.set_ylabel("expected best validation accuracy (%)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(describe(result) + _rung_note(result).replace(" (successive halving: every", "\n(halving: every"), fontsize=9)
        ax.grid(alpha=0.3)
        legend_below(ax, ncol=min(5, len(labels)))
    return fig


__all__ = ["draw", "caption"]
