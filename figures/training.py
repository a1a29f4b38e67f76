"""Figures 3 and 4: network runs (``stam train --out DIR`` folders).

Figure 3, like the paper's Figures acc_cifar and acc_cifar100: one row per model, columns train
accuracy, test accuracy with binary weights, test accuracy with float weights (percent, as
``stam train`` logs them), one line per algorithm (STAM presets share STAM's colour and differ by
line style).

Figure 4, theory beside practice: for each STAM run, the logged stationarity proxies per epoch
(||grad L(W) + lambda (W - U)||^2 and (||X^t - X^{t-1}|| / gamma)^2, epoch averages, the two
terms of the measure S_t of Theorem conv) and the running minimum of their sum, on log axes,
beside the O(1/sqrt(T)) shape of Theorem conv-rate; the epochs where the (gamma, lambda, beta)
in force satisfied the theorem's conditions are shaded.
"""

from __future__ import annotations

import numpy as np

from stam.dnn import presets
from stam.figures.declare import declare_figure
from stam.figures.results import finite
from stam.figures.style import (
    ADMISSIBLE_COLOR,
    OKABE_ITO,
    REFERENCE_COLOR,
    algo_color,
    canonical_algo,
    legend_below,
    log_axes,
    new_figure,
    run_label,
    run_style,
)

COLUMNS = (
    ("train_acc", "train accuracy (%)"),
    ("test_acc_binary", "test accuracy, binary weights (%)"),
    ("test_acc_float", "test accuracy, float weights (%)"),
)


#: Drawn where the runs logged it (``stam train`` does since the sign-flip diagnostic exists):
#: the share of binary weights whose sign ever differed from the start at an epoch end.
SIGN_COLUMN = ("sign_flips.ever", "binary weights, sign ever flipped (%)")


def _value(row: dict, key: str):
    """``row[key]``; a dotted key reads a nested record (``sign_flips.ever``, a fraction, in %)."""
    if "." not in key:
        return row.get(key)
    outer, inner = key.split(".", 1)
    v = (row.get(outer) or {}).get(inner) if isinstance(row.get(outer), dict) else None
    return 100.0 * v if finite(v) else None


def _series(log: list[dict], key: str) -> tuple[np.ndarray, np.ndarray]:
    epochs = np.array([row.get("epoch", i + 1) for i, row in enumerate(log)], dtype=float)
    values = np.array([_value(row, key) if finite(_value(row, key)) else np.nan for row in log], dtype=float)
    return epochs, values


def label_of(summary: dict) -> str:
    """The run's column name, as ``stam table`` uses it."""
    return run_label(summary.get("algo", "?"), summary.get("preset"), summary.get("label"))


def _sort_key(run) -> tuple:
    s = run["summary"]
    order = presets.algorithm_order()
    algo = canonical_algo(s.get("algo", ""))
    return (order.index(algo) if algo in order else len(order), str(s.get("preset") or ""), str(s.get("seed", "")))


def training_columns(runs: list[dict]) -> tuple:
    """The panels of :func:`plot_training` (``(key, label)``): :data:`COLUMNS`, and :data:`SIGN_COLUMN` where a run
    logged it; the figure's caption names the same."""
    return COLUMNS + ((SIGN_COLUMN,) if any(np.isfinite(_series(r["log"], SIGN_COLUMN[0])[1]).any() for r in runs) else ())


def plot_training(runs: list[dict], title: str | None = None):
    """Figure 3 for a list of runs (each ``{"config", "log", "summary"}``): per model, one panel per column of
    :func:`training_columns`, three in a row or four in two rows (so that the panels stay readable on a page)."""
    from matplotlib.ticker import MaxNLocator

    if not runs:
        raise ValueError("no train runs to plot")
    models = sorted({r["summary"].get("model", "?") for r in runs})
    names = {r["summary"].get("model", "?"): r["summary"].get("model_name") or r["summary"].get("model", "?")
             for r in runs}
    datasets = sorted({str(r["summary"].get("dataset", "?")) for r in runs})
    stam_labels = sorted({label_of(r["summary"]) for r in runs if canonical_algo(r["summary"].get("algo", "")) == "stam"})
    columns = training_columns(runs)
    ncols = len(columns) if len(columns) <= 3 else 2
    per_model = -(-len(columns) // ncols)
    fig, grid = new_figure(ncols, per_model * len(models), panel_size=(4.4, 3.3))
    axes = np.array([[grid[i * per_model + j // ncols, j % ncols] for j in range(len(columns))] for i in range(len(models))])
    epochs_seen: set = set()
    for i, model in enumerate(models):
        labelled: set[str] = set()
        ordered = sorted((r for r in runs if r["summary"].get("model", "?") == model), key=_sort_key)
        for k, run in enumerate(ordered):
            s = run["summary"]
            style = run_style(s.get("algo", "?"), label_of(s), stam_labels)
            # several seeds of one configuration: one legend entry, thin lines
            label = style.pop("label")
            show = label not in labelled
            labelled.add(label)
            for j, (key, _) in enumerate(columns):
                epochs, acc = _series(run["log"], key)
                epochs_seen.update(epochs[np.isfinite(acc)].tolist())
                if np.isfinite(acc).any():
                    # earlier curves wider, markers staggered: coinciding curves stay visible
                    every = max(1, len(epochs) // 10)
                    axes[i, j].plot(epochs, acc, markersize=4, markevery=(k % every, every),
                                    label=label if show else None, linewidth=max(2.6 - 0.25 * k, 1.0), **style)
        for j, (_, ylabel) in enumerate(columns):
            ax = axes[i, j]
            ax.set_xlabel("epochs")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            if len(epochs_seen) == 1:  # one epoch: its number, not a zoom on a point (0.945 ... 1.05)
                (e,) = epochs_seen
                ax.set_xticks([e])
                ax.set_xlim(e - 1, e + 1)
            ax.set_ylabel(ylabel)
            ax.set_title(f"{names.get(model, model)}: {ylabel.split(' (')[0]}", fontsize=10)
            ax.grid(True, alpha=0.3)
    # one legend for the figure, under the panels, never over the curves
    handles = {}
    for ax in axes.ravel():
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=min(len(handles), 5),
               fontsize=9, frameon=False)
    flips = " and the binary weights' sign flips" if SIGN_COLUMN in columns else ""
    fig.suptitle(title or f"Train and test accuracy{flips} per epoch ({', '.join(datasets)})", fontsize=12)
    return fig


def stam_runs(runs: list[dict]) -> list[dict]:
    """The runs that logged STAM's stationarity proxies."""
    return [
        r for r in runs
        if any(finite(row.get("proxy_grad")) or finite(row.get("proxy_z")) for row in r["log"])
    ]


def admissible_epochs(log: list[dict]) -> np.ndarray:
    """Per epoch: True where the theorem's conditions held for the parameters in force."""
    return np.array([bool((row.get("theorem") or {}).get("admissible")) for row in log], dtype=bool)


def hyper_summary(log: list[dict]) -> str:
    """The STAM hyperparameters over the run: ``gamma 8 -> 0.3, lambda 0.5 -> 4, beta 1000``."""
    parts = []
    for key, sym in (("gamma", "\u03b3"), ("lam", "\u03bb"), ("beta", "\u03b2")):
        vals = [(row.get("hyper") or {}).get(key) for row in log]
        vals = [v for v in vals if finite(v)]
        if vals:
            parts.append(f"{sym}={vals[0]:.3g}" if vals[0] == vals[-1] else f"{sym} {vals[0]:.3g}\u2192{vals[-1]:.3g}")
    return ", ".join(parts)


def practice_panel(ax, run: dict) -> None:
    """Figure 4 for one run (see the module docstring)."""
    log, s = run["log"], run["summary"]
    epochs, grad = _series(log, "proxy_grad")
    _, z = _series(log, "proxy_z")
    zsq = z**2
    total = np.nan_to_num(grad, nan=0.0) + np.nan_to_num(zsq, nan=0.0)
    total = np.where(np.isfinite(grad) | np.isfinite(zsq), total, np.nan)
    running = np.fmin.accumulate(np.where(np.isfinite(total), total, np.inf))
    running = np.where(np.isfinite(running), running, np.nan)
    color = algo_color(s.get("algo", "stam"))
    pos = lambda a: np.where(a > 0, a, np.nan)  # noqa: E731
    held = admissible_epochs(log)
    # each epoch's span reaches halfway (geometrically: the x axis is logarithmic) to its neighbours
    # (the first and the last as far out as their neighbour's half; a single epoch: a factor 1.5 either side, so
    # that a shaded epoch is seen)
    edges = np.sqrt(epochs[1:] * epochs[:-1]) if len(epochs) > 1 else np.array([])
    first = epochs[0] ** 2 / edges[0] if len(edges) else epochs[:1] / 1.5
    last = epochs[-1] ** 2 / edges[-1] if len(edges) else epochs[-1:] * 1.5
    lo_edges = np.concatenate([np.atleast_1d(first), edges]) if len(epochs) else epochs
    hi_edges = np.concatenate([edges, np.atleast_1d(last)]) if len(epochs) else epochs
    for a, b, ok in zip(lo_edges, hi_edges, held):
        if ok:
            ax.axvspan(a, b, color=ADMISSIBLE_COLOR, alpha=0.18, linewidth=0)
    if held.any():  # a legend entry only for what is drawn
        ax.fill_between([], [], color=ADMISSIBLE_COLOR, alpha=0.18,
                        label=f"theorem's conditions hold, where checkable ({held.sum()}/{len(held)} epochs)")
    ax.plot(epochs, pos(grad), color=color, linestyle="-", marker="o", markersize=3,
            label="\u2016\u2207L(W)+\u03bb(W\u2212U)\u2016\u00b2 (epoch mean)")
    ax.plot(epochs, pos(zsq), color=color, linestyle="--", marker="s", markersize=3,
            label="(\u2016X$^t$\u2212X$^{t-1}$\u2016/\u03b3)\u00b2 (epoch mean)")
    ok = np.isfinite(running) & (running > 0)
    if ok.sum() >= 2:  # lines of one point are not drawn: no legend entry for them either
        ax.plot(epochs, pos(running), color=OKABE_ITO["black"], linestyle="-", linewidth=2,
                label="running min of their sum (proxy of min$_t$ S$_t$)")
        e0, r0 = epochs[ok][0], running[ok][0]
        ax.plot(epochs, r0 * np.sqrt(e0 / epochs), color=REFERENCE_COLOR, linestyle=":", linewidth=1.5,
                label="O(1/\u221aT) shape (Theorem conv-rate)")
    log_axes(ax)
    ax.set_xlabel("epochs")
    ax.set_ylabel("stationarity proxy (squared norm)")
    hyper = hyper_summary(log)
    never = "" if held.any() else f"\nthe theorem's conditions held in no epoch (of {len(held)})"
    ax.set_title(f"{s.get('model_name') or s.get('model', '?')} on {s.get('dataset', '?')}, {label_of(s)}"
                 + (f"\n{hyper}" if hyper else "") + never, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    legend_below(ax)


def plot_practice(runs: list[dict]):
    """Figure 4: one panel per run that logged the stationarity proxies."""
    runs = sorted(stam_runs(runs), key=_sort_key)
    if not runs:
        raise ValueError("no run logged STAM's stationarity proxies (proxy_grad, proxy_z): train STAM with --proxies")
    ncols = min(len(runs), 3)
    nrows = -(-len(runs) // ncols)
    fig, axes = new_figure(ncols, nrows, panel_size=(4.5, 4.6))
    flat = axes.ravel()
    for ax, run in zip(flat, runs):
        practice_panel(ax, run)
    for ax in flat[len(runs):]:
        ax.set_visible(False)
    fig.suptitle("Theory beside practice: STAM's stationarity proxies per epoch", fontsize=12)
    return fig


def training_caption(results) -> str:
    """The caption of the figure kind ``training``: the panels :func:`training_columns` draws, named."""
    columns = training_columns([r.data for r in results["train-run"]])
    names = [label.split(" (")[0].replace("binary weights, sign ever flipped", "the share of binary weights whose sign "
                                          "ever flipped from the start") for _, label in columns]
    return (f"Per epoch, one panel each: {', '.join(names[:-1])} and {names[-1]} (%); one colour per algorithm, "
            "STAM's presets in STAM's colour with their own line style and marker; several seeds of one setting: "
            "thin lines, one legend entry.")


@declare_figure(
    "training", sources=("train-run",), section="training", caption=training_caption,
    help="training (stam train folders)")
def draw_training(results, nc=None):
    """The figure kind ``training`` (:mod:`stam.figures.kinds`)."""
    return plot_training([r.data for r in results["train-run"]])


@declare_figure(
    "practice", sources=("train-run",), section="practice",
    caption="STAM's stationarity proxies per epoch (log axes) beside the O(1/\u221aT) shape; shaded epochs: the "
    "(\u03b3, \u03bb, \u03b2) in force satisfied the theorem's conditions.",
    help="practice (stam train folders)")
def draw_practice(results, nc=None):
    """The figure kind ``practice`` (:mod:`stam.figures.kinds`)."""
    return plot_practice([r.data for r in results["train-run"]])

