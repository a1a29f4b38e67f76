"""``stam table RUNS_DIR``: the best test accuracy of every run found under ``RUNS_DIR``, laid
out like the paper's Tables cifar-res (CIFAR-10) and cifar100-res (CIFAR-100): one row per model,
one column per algorithm, the paper's number beside ours where a run exists.

A cell is the best test accuracy (%) with binary weights over the epochs of a run (for the Float
column: with the float weights), as mean +- sample std over the runs (seeds) of that cell.
Columns are the runs' labels (``Our3``, ``BC``, ...; a run with ``--set`` overrides is labelled
``Our3*`` unless ``--label`` named it).  A cell of runs shorter than the paper's 1000 epochs says
how long they were (``15 epochs``), since the paper's number beside it is of 1000.  Runs that
diverged are left out of the cells and counted under the table.
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path
from typing import NamedTuple

from stam.dnn import catalog, presets
from stam.datasets import CLASSES, DATASET_NAMES, DATASETS
from stam.dnn.catalog import MODEL_NAMES, MODELS, at_chance, bn_protocol
from stam.errors import UsageError
from stam.io import latex_escape
from stam.dnn.epochs import RUN_SUMMARY

DATASET_TITLES = {"cifar10": "CIFAR-10 (Table cifar-res)", "cifar100": "CIFAR-100 (Table cifar100-res)", "digits": "digits (scikit-learn, 8x8)"}


class Skipped(NamedTuple):
    """A ``summary.json`` the table could not use, and why (one line)."""

    path: Path
    why: str


def collect(runs_dir: str | Path, skipped: list | None = None) -> list[dict]:
    """Every ``summary.json`` of kind ``train-run`` under ``runs_dir`` that the table can use; each
    other one (unreadable, invalid, not a run summary, of an unknown model or data set) is appended
    to ``skipped`` as a :class:`Skipped`, never left out silently.  The summaries are checked
    against the file's type (:data:`stam.dnn.epochs.RUN_SUMMARY`)."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise UsageError(f"{runs_dir}: not a directory; give the folder that holds the run directories")
    out = []
    skipped = [] if skipped is None else skipped
    for path in sorted(root.rglob("summary.json")):
        try:
            s = RUN_SUMMARY.read(path)
        except UsageError as exc:
            skipped.append(Skipped(path, str(exc).removeprefix(f"{path}: ")))
            continue
        why = _unusable(s)
        if why:
            skipped.append(Skipped(path, why))
        else:
            out.append(s)
    return out


def _unusable(s: dict) -> str | None:
    """Why the valid summary ``s`` cannot be a cell of the table, or None."""
    if s.get("kind") != "train-run":
        return f"not a stam train summary (kind {str(s.get('kind'))[:40]!r}, expected 'train-run')"
    for key, known in (("model", MODEL_NAMES), ("dataset", DATASET_NAMES)):
        if s.get(key) not in known:
            return f"field {key} names an unknown {key} {str(s.get(key))[:40]!r} (known: {', '.join(known)})"
    if not isinstance(s.get("algo"), str):
        return "field algo is missing"
    return None


METRICS = ("selected", "paper")


def best_accuracy(summary: dict, metric: str = "paper") -> float | None:
    """A run's test accuracy with binary weights (the float network's for Float): ``"selected"``,
    at the epoch chosen on validation data (``selected_test_acc_*``; None for a run without a
    validation split); ``"paper"``, what the paper tabulates, the best test accuracy over the
    epochs (the epoch chosen on the test set)."""
    binary = next((a.binary for a in catalog.ALGORITHMS if a.name == summary.get("algo")), True)
    kind = "binary" if binary else "float"
    return summary.get(f"selected_test_acc_{kind}" if metric == "selected" else f"best_test_acc_{kind}")


def mean_std(values: list[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (None for one value) of ``values``."""
    m = sum(values) / len(values)
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else None
    return m, sd


PAPER_EPOCHS = 1000


def _cell(values: list[float], paper: float | None, digits: int = 2, epochs: set | None = None, classes: int | None = None,
          n_test: int | None = None) -> str:
    if not values:
        return "–"
    m, sd = mean_std(values)
    notes = [f"n={len(values)}"] if sd is not None else []
    if classes and at_chance(m, classes, n_test):  # a bug until shown otherwise: said in the cell
        notes.append("at chance!")
    short = sorted(e for e in (epochs or ()) if e is not None and e != PAPER_EPOCHS)
    if short:
        notes.append("/".join(map(str, short)) + (" epoch" if short == [1] else " epochs"))
    text = f"{m:.{digits}f}" + (f" ± {sd:.{digits}f}" if sd is not None else "") + (f" ({', '.join(notes)})" if notes else "")
    return text + (f" [paper {paper:.2f}]" if paper is not None else "")


def completed(summary: dict) -> bool:
    """Whether a run finished (summaries without a status are taken as finished)."""
    return summary.get("status", "completed") == "completed"


def jpeg_copy(summary: dict) -> bool:
    """Whether the run trained on a JPEG copy of its data set (``data_source.kind`` jpeg-copy)."""
    source = summary.get("data_source")
    return isinstance(source, dict) and source.get("kind") == "jpeg-copy"


JPEG_MARK = " (JPEG copy)"


def _dataset_title(dataset: str, copies: set) -> str:
    """The data set part of a title; ``copies`` the values of :func:`jpeg_copy` of its runs."""
    title = DATASET_TITLES.get(dataset, dataset)
    if copies == {True}:
        name = DATASETS.get(dataset, dataset)
        title = title.replace(name, name + JPEG_MARK[:-1] + ", not the official pixels)", 1)
        note = "the paper's numbers are on the official images" if presets.paper_results().get(dataset) else ""
    elif copies == {False, True}:
        note = f"columns marked{JPEG_MARK} are runs on a JPEG copy, not the official pixels"
    else:
        return title
    if not note:
        return title
    return title[:-1] + f"; {note})" if title.endswith(")") else f"{title} ({note})"


def build(summaries: list[dict], dataset: str, with_time: bool = False, metric: str = "selected") -> tuple[str, list[str], list[list[str]]]:
    """(title, header, rows) for one data set; ``metric`` as in :func:`best_accuracy`.  Runs on a
    JPEG copy of the data set (:func:`jpeg_copy`) are never pooled with runs on the official
    images: the title says so when all runs are on a copy, and otherwise their columns are marked."""
    paper = presets.paper_results().get(dataset, {})
    acc: dict[tuple[str, tuple], list[float]] = {}
    secs: dict[tuple[str, tuple], list[float]] = {}
    epochs: dict[tuple[str, tuple], set] = {}
    for s in summaries:
        value = best_accuracy(s, metric)
        if s.get("dataset") != dataset or value is None or not completed(s):
            continue
        key = ((s["model"], float(s.get("width", 1.0))), (s.get("label") or s.get("preset") or s["algo"], jpeg_copy(s)))
        acc.setdefault(key, []).append(float(value))
        secs.setdefault(key, []).append(float(s["seconds"]) if s.get("seconds") is not None else float("nan"))
        epochs.setdefault(key, set()).add(s.get("epochs"))
    sizes = [s.get("test_size") for s in summaries if s.get("dataset") == dataset and isinstance(s.get("test_size"), int)]
    n_test = min(sizes) if sizes else None
    copies = {c[1] for _, c in acc}
    mixed = len(copies) > 1
    labels = {c[0] for _, c in acc}
    base = paper.get("columns", [c for c in presets.columns() if c in labels])
    names = base + sorted(labels - set(base))
    present = {k[1] for k in acc}
    if mixed:  # each label once on the official images (always the paper's columns), once on a copy where run
        columns = [(c, j) for c in names for j in (False, True) if (c, j) in present or (not j and c in base)]
    else:
        columns = [(c, copies == {True}) for c in names]
    widths = {m: sorted({w for (mm, w), _ in acc if mm == m} | ({1.0} if m in paper else set()), reverse=True) for m in MODEL_NAMES}
    models = [(m, w) for m in MODEL_NAMES for w in widths[m]]  # the paper's width (1) first, then narrower networks
    rows = []
    for m, w in models:
        row = [MODELS[m] + ("" if w == 1.0 else f" (width {w:g})")]
        for col in columns:
            key = ((m, w), col)
            ref = paper.get(m, {}).get(col[0]) if key in acc and w == 1.0 else None  # the paper's number only beside its width
            row.append(_cell(acc.get(key, []), ref, epochs=epochs.get(key), classes=CLASSES.get(dataset), n_test=n_test))
            if with_time:
                row.append(_cell(secs[key], None, 1) if key in secs else "–")
        rows.append(row)
    head = [c + (JPEG_MARK if j and mixed else "") for c, j in columns]
    header = ["DNN"] + [h for c in head for h in ((c, f"{c} time (s)") if with_time else (c,))]
    return _title(summaries, dataset, metric, copies), header, rows



def _title(summaries: list[dict], dataset: str, metric: str, copies: set) -> str:
    """The title of :func:`build`'s table: what is measured on which data (``copies``: whether the runs shown
    are on a JPEG copy), the evaluation protocol of the runs shown, and the runs left out."""
    where = _dataset_title(dataset, copies)
    if metric == "selected":
        title = f"Test accuracy (%) at the epoch selected on validation data, binary weights (Float: float weights) — {where}"
    else:
        title = (f"Best test accuracy (%) over the epochs, the paper's metric (the epoch is selected on the test set), "
                 f"binary weights (Float: float weights) — {where}")
    shown = [s for s in summaries if s.get("dataset") == dataset and completed(s) and best_accuracy(s, metric) is not None]
    protocols = sorted({(int(s.get("bn_images") or 0), catalog.bn_augmented(s) if s.get("bn_images") else None) for s in shown},
                       key=lambda p: (p[0], p[1] is None, bool(p[1])))
    if len(protocols) == 1:
        trains = [s["train_size"] for s in shown if isinstance(s.get("train_size"), int)]
        title += f" ({bn_protocol(protocols[0][0], max(trains) if trains else None, protocols[0][1])})"
    elif protocols:
        kinds = ", ".join(f"{n} images{' augmented' * bool(aug)}" if n else "as trained (0)" for n, aug in protocols)
        title += (f" (runs of different evaluation protocols, BatchNorm statistics re-estimated on: {kinds}; "
                  "compare like with like)")
    left_out = sum(1 for s in summaries if s.get("dataset") == dataset and not completed(s))
    if left_out:
        title += f" ({left_out} run(s) that did not complete left out)"
    no_val = sum(1 for s in summaries if s.get("dataset") == dataset and completed(s) and best_accuracy(s, metric) is None)
    if no_val and metric == "selected":
        title += f" ({no_val} run(s) without a validation split not shown: see --paper-metric)"
    return title


#: a ``]`` that makes a link where Markdown is rendered: an inline link or image ``[x](url)``,
#: ``![x](url)``, a reference ``[x][r]`` or a reference's definition ``[r]: url`` (a shortcut
#: ``[r]`` needs that definition)
_LINK_CLOSE = re.compile(r"\](?=[(\[:])")


def markdown_cell(text: str) -> str:
    """``text`` (labels come from the user's ``--label``, captions and cells from result files) as
    one cell of a Markdown table, or as a title: HTML's ``&``, ``<`` and ``>`` as entities
    (Markdown passes raw HTML through, so a label ``<img src=x onerror=...>`` would otherwise be
    live HTML where the file is rendered, and ``<javascript:...>`` an autolink), every ``]`` that
    would close a link, an image or a link definition escaped (so ``[click](javascript:...)`` and
    ``![x](...)`` are text, never a link or an image; an interval ``[96.4, 98.3]`` stays as it
    is), ``\\`` and ``|`` escaped, line breaks as spaces, so that it cannot end its cell or its row."""
    text = html.escape(str(text), quote=False)
    text = _LINK_CLOSE.sub(r"\\]", text.replace("\\", "\\\\").replace("|", "\\|"))
    return " ".join(text.splitlines())


def to_markdown(title: str, header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table with its bold title; every cell and the title through :func:`markdown_cell`."""
    esc = lambda cells: " | ".join(map(markdown_cell, cells))  # noqa: E731
    lines = [f"**{markdown_cell(title)}**", "", "| " + esc(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + esc(r) + " |" for r in rows]) + "\n"


def to_latex(title: str, header: list[str], rows: list[list[str]]) -> str:
    esc = latex_escape
    lines = [r"\begin{table}[htbp]", r"\centering", r"\begin{tabular}{|" + "|".join("c" * len(header)) + "|}", r"\hline",
             " & ".join(map(esc, header)) + r" \\ \cline{1-%d}" % len(header)]
    lines += [" & ".join(map(esc, r)) + r" \\ \cline{1-%d}" % len(header) for r in rows]
    lines += [r"\end{tabular}", rf"\caption{{{esc(title)}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def render(runs_dir: str | Path, latex: bool = False, dataset: str | None = None, with_time: bool = False,
           metric: str = "selected", skipped: list | None = None) -> str:
    """The tables of the runs under ``runs_dir`` (Markdown or LaTeX), ending with the count of
    the summaries skipped, if any; those are appended to ``skipped`` (:func:`collect`)."""
    skipped = [] if skipped is None else skipped
    summaries = collect(runs_dir, skipped)
    if not summaries:
        first = f"; {len(skipped)} summary.json skipped, e.g. {skipped[0].path}: {skipped[0].why}" if skipped else ""
        raise UsageError(f"{runs_dir}: no run summaries (summary.json from 'stam train') found{first}")
    found = [d for d in DATASET_NAMES if any(s.get("dataset") == d for s in summaries)]
    datasets = [dataset] if dataset else found
    fmt = to_latex if latex else to_markdown
    text = "\n".join(fmt(*build(summaries, d, with_time, metric)) for d in datasets)
    if not skipped:
        return text
    note = f"{len(skipped)} run(s) skipped: summary.json that could not be read or used (listed on stderr)"
    return text + (f"\n% {note}\n" if latex else f"\n_{note}._\n")


__all__ = ["Skipped", "jpeg_copy", "markdown_cell", "METRICS", "mean_std", "collect", "build", "render", "best_accuracy", "completed", "to_markdown", "to_latex"]
