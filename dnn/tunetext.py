"""The text of a tuning result (:mod:`stam.dnn.tune`): what was trained and how (:func:`describe`,
:func:`variants`), the equal-budget table (:func:`table`, :func:`format_table`) and the one-line headline."""

from __future__ import annotations

from stam.datasets import CLASSES
from stam.dnn import catalog
from stam.datasets import DATASETS
from stam.dnn.catalog import MODELS, algorithm
from stam.dnn.params import TuneParams
from stam.dnn.tunespace import halving_rungs, recipe
from stam.dnn.tunestats import budget_note, counted, paired_differences, paired_lines, paired_text


def label(algo: str) -> str:
    """The label of ``algo`` in the tables (:attr:`stam.dnn.catalog.Algorithm.label`)."""
    return algorithm(algo).label


def variants(params: TuneParams) -> str:
    """The protocol's departures from plain equal-budget tuning, in words (empty when none)."""
    out = []
    if params.schedule != "constant":
        out.append(f"every step (lr; STAM's 1/beta) on the {params.schedule} schedule")
    if params.recipe != "none":
        fixed = "; ".join(f"{label(a)}: {fmt_hyper(h)}" for a, h in recipe(params.recipe).items() if a in params.algos)
        out.append(f"the {params.recipe} recipe ({fixed or 'no algorithm tuned here'})")
    if params.halving:
        rungs = ", ".join(f"{n} x {counted(e, 'epochs')}" for n, e in halving_rungs(params.trials, params.epochs, params.halving))
        out.append(f"successive halving by {params.halving} (rungs: {rungs}; promotion on validation accuracy, the best trial "
                   "chosen in the last rung)")
    return "".join(f"; {x}" for x in out)


def describe(result: dict) -> str:
    """What was trained, in words: ``CIFAR-10 (JPEG copy), VGG-11 at width 0.125`` / ``digits, MLP``."""
    dataset = result.get("dataset", "digits")
    name = DATASETS.get(dataset, dataset).split(" (")[0]
    src = result.get("data_source") or {}
    if "jpeg" in str(src.get("kind", "")).lower():
        name += " (JPEG copy)"
    model = MODELS.get(result.get("model", "mlp"), result.get("model", "mlp"))
    width = result.get("width", 1.0)
    return f"{name[:1].upper()}{name[1:]}, {model}" + ("" if width == 1.0 else f" at width {width:g}")


def transfer_source(src: dict) -> str:
    """The tuning a transferred result took its settings from, in words (its ``transfer``)."""
    model = MODELS.get(src["model"], src["model"])
    width = "" if src["width"] == 1.0 else f" at width {src['width']:g}"
    return (f"the tuning of {model}{width} ({counted(src['epochs'], 'epochs')}, {counted(src['trials'], 'trials')} per "
            f"algorithm; {src['file']})")


def fmt_hyper(overrides: dict) -> str:
    parts = []
    for k, v in overrides.items():
        v = v[0]["value"] if isinstance(v, list) else v
        parts.append(f"{k}={v:.3g}")
    return ", ".join(parts)


def table(result: dict) -> tuple[str, list[str], list[list[str]]]:
    """The equal-budget table as (caption, header, rows): tuned rows, then the paper-settings rows,
    labelled (one layout for the terminal, the Markdown file and the report)."""
    def pm(f):
        if f.get("mean") is None:
            return "-"
        return f"{f['mean']:.1f} \u00b1 {f['std']:.1f}" if f.get("std") is not None else f"{f['mean']:.1f}"

    ci = lambda f: "-" if not f.get("ci95") else f"[{f['ci95'][0]:.1f}, {f['ci95'][1]:.1f}]"  # noqa: E731
    prm = result["params"]
    classes = CLASSES.get(result.get("dataset", "digits"))

    def mean_cell(f):  # an accuracy at or below chance is a bug until shown otherwise: flagged in the cell
        return pm(f) + (" (at chance!)" if classes and catalog.at_chance(f.get("mean"), classes) else "")

    def flips(f, algo):
        signs = [v for v in f.get("sign_ever") or [] if v is not None]
        return f"{100 * sum(signs) / len(signs):.1f}%" if signs and algorithm(algo).binary else "-"

    src = result.get("transfer")
    chosen = (f"each algorithm's setting transferred, not tuned: the one chosen on validation accuracy by {transfer_source(src)}"
              if src else f"the same {counted(prm['trials'], 'Sobol trials')} per algorithm, chosen on validation accuracy")
    caption = (f"{describe(result)} ({counted(prm['epochs'], 'epochs')}, batch {prm['batch_size']}): test accuracy (%) with "
               f"binary weights (Float: float weights) on {counted(prm['seeds'], 'fresh seeds')}, each at its validation-selected "
               f"epoch; {chosen}; "
               f"{catalog.bn_protocol(prm.get('bn_images'), None, catalog.bn_augmented(prm))}; signs flipped: the binary weights whose sign ever changed")
    note = budget_note(prm)
    if note:
        caption = f"{caption} ({note})"
    header = ["algorithm", "protocol", "hyperparameters", "val. acc. (best trial" + (", there)" if src else ")"),
              "test acc. mean \u00b1 std",
              "95% interval", "signs flipped", "diverged"]
    rows = []
    for a in result["algorithms"]:
        f = a.get("final", {})
        best = a.get("best") or {}
        score = ((src.get("scores") or {}).get(a["algo"]) if src else best.get("score"))
        rows.append([a["label"], f"transferred from {catalog.MODELS.get(src['model'], src['model'])}" if src else
                     f"tuned, {len(a['trials'])} trials", fmt_hyper(best.get("overrides", {})) or "-",
                     "-" if score is None else format(score, ".1f"), mean_cell(f), ci(f),
                     flips(f, a["algo"]), str(f.get("diverged", "-"))])
    for r in result["paper_rows"]:
        f = r["final"]
        rows.append([r["label"], "paper setting (not tuned)", f"preset {r['preset']}", "-", mean_cell(f), ci(f),
                     flips(f, r["algo"]), str(f["diverged"])])
    return caption, header, rows


def format_table(result: dict) -> str:
    """:func:`table` as Markdown."""
    from stam.dnn.table import markdown_cell

    caption, header, rows = table(result)
    esc = lambda cells: " | ".join(map(markdown_cell, cells))  # noqa: E731
    lines = [markdown_cell(caption) + ".", "", "| " + esc(header) + " |", "|" + "---|" * len(header)]
    paired = [markdown_cell(line) for line in paired_lines(result)]
    return "\n".join(lines + ["| " + esc(r) + " |" for r in rows] + ([""] + paired if paired else []))


def headline(result: dict) -> str:
    """One line: each algorithm's tuned test accuracy with its 95% interval."""
    parts = []
    for a in result["algorithms"]:
        f = a.get("final") or {}
        if f.get("mean") is None:
            parts.append(f"{a['label']} -")
            continue
        iv = f" [{f['ci95'][0]:.1f}, {f['ci95'][1]:.1f}]" if f.get("ci95") else ""
        chance = " (at chance!)" if catalog.at_chance(f["mean"], CLASSES.get(result.get("dataset", "digits"), 10)) else ""
        parts.append(f"{a['label']} {f['mean']:.1f}%{iv}{chance}")
    prm = result["params"]
    note = budget_note(prm)
    bn = (f"re-estimated on {prm['bn_images']:,} images{' (cropped and flipped once)' * bool(catalog.bn_augmented(prm))}, "
          f"at most {catalog.BN_MAX_SHARE:.0%} of the training set" if prm.get("bn_images") else "as trained")
    src = result.get("transfer")
    how = (f"transferred settings (from {transfer_source(src)}" if src else
           f"equal budget ({counted(prm['trials'], 'trials')} each, chosen on validation")
    return ((f"[{note}] " if note else "") + f"{describe(result)}, {how}, {counted(prm['seeds'], 'fresh seeds')}, "
            f"{counted(prm['epochs'], 'epochs')}), test accuracy with binary "
            f"weights (Float: float; BatchNorm {bn}) and 95% interval "
            "(none from fewer than 3 distinct values): " + ", ".join(parts)
            + "".join(f"; paired {paired_text(d)}" for d in paired_differences(result) if d["seeds"]))


__all__ = ["label", "transfer_source", "variants", "describe", "fmt_hyper", "table", "format_table", "headline"]
