"""Tables (item 5 of the figures issue): one :class:`Table` value, three renderings (Markdown,
LaTeX, HTML), and the builders for each result kind:

- :func:`accuracy_table`: best test accuracy per model x algorithm, laid out like the paper's
  Tables cifar-res and cifar100-res (binary weights; the Float column is the float network);
- :func:`paper_check_table`: the findings of ``stam paper-check``;
- :func:`compare_table`: ``stam synthetic compare``;
- :func:`rates_table`, :func:`pep_table`, :func:`stepsize_table`, :func:`settings_table`.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass

from stam.figures.results import finite
from stam.figures.style import canonical_algo, run_label


def fmt(x, digits: int = 4) -> str:
    """A cell: numbers to ``digits`` significant digits, booleans yes/no, None as a dash."""
    if x is None:
        return "\u2013"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}" if abs(x) >= 10000 else str(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "\u221e" if x > 0 else "\u2212\u221e"
        return f"{x:.{digits}g}"
    if isinstance(x, (list, dict)):
        return json.dumps(x, separators=(", ", ": "), default=str)
    return str(x)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "\u00b1": r"$\pm$", "\u2013": "--", "\u2212": "-", "\u221e": r"$\infty$",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


@dataclass
class Table:
    """A caption, a header and rows of already formatted cells."""

    caption: str
    header: list[str]
    rows: list[list[str]]

    def to_markdown(self) -> str:
        esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
        lines = [f"**{self.caption}**", "", "| " + " | ".join(map(esc, self.header)) + " |",
                 "|" + "|".join("---" for _ in self.header) + "|"]
        lines += ["| " + " | ".join(map(esc, r)) + " |" for r in self.rows]
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        cols = "|" + "|".join("c" for _ in self.header) + "|"
        lines = [r"\begin{table}[htbp]", r"\centering", rf"\begin{{tabular}}{{{cols}}}", r"\hline",
                 " & ".join(latex_escape(h) for h in self.header) + r" \\ \hline"]
        lines += [" & ".join(latex_escape(c) for c in r) + r" \\ \hline" for r in self.rows]
        lines += [r"\end{tabular}", rf"\caption{{{latex_escape(self.caption)}}}", r"\end{table}"]
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in self.rows)
        return (f"<table><caption>{html.escape(self.caption)}</caption><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>")


# -- best accuracies (Tables cifar-res, cifar100-res) ---------------------------------------

#: Column order of Table cifar-res; other STAM presets follow.
_PAPER_COLUMNS = ["Float", "PSGD", "BC", "BR", "Our1", "Our2", "Our3"]
MODEL_NAMES = {"vgg11": "VGG-11", "vgg16": "VGG-16", "resnet18": "ResNet-18", "mlp": "MLP", "cnn": "CNN"}


def _mean_std(values: list[float]) -> str:
    if not values:
        return "\u2013"
    m = sum(values) / len(values)
    if len(values) == 1:
        return f"{m:.2f}"
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))
    return f"{m:.2f} \u00b1 {sd:.2f} (n={len(values)})"


def best_accuracy(summary: dict) -> float | None:
    """The number the paper tabulates for a run, in percent: the best test accuracy with binary
    weights, and for the float baseline the float network's."""
    algo = canonical_algo(summary.get("algo", ""))
    key = "best_test_acc_float" if algo == "float" else "best_test_acc_binary"
    v = summary.get(key)
    if not finite(v):
        return None
    return v * 100.0 if v <= 1.0 else float(v)


def accuracy_table(summaries: list[dict], paper: dict | None = None) -> Table:
    """Best test accuracy (%) per model (rows) and algorithm (columns), mean +- std over seeds.

    ``paper`` maps (model, column) to the paper's number for this data set; where given, the cell
    reads ``ours (paper p)``."""
    datasets = sorted({str(s.get("dataset", "?")) for s in summaries})
    cells: dict[tuple[str, str], list[float]] = {}
    for s in summaries:
        acc = best_accuracy(s)
        if acc is not None:
            cells.setdefault((str(s.get("model", "?")), run_label(s.get("algo", "?"), s.get("preset"))), []).append(acc)
    models = sorted({m for m, _ in cells}, key=lambda m: (list(MODEL_NAMES).index(m) if m in MODEL_NAMES else 99, m))
    present = {c for _, c in cells}
    columns = [c for c in _PAPER_COLUMNS if c in present] + sorted(present - set(_PAPER_COLUMNS))
    rows = []
    for m in models:
        row = [MODEL_NAMES.get(m, m)]
        for c in columns:
            text = _mean_std(cells.get((m, c), []))
            if paper and (m, c) in paper:
                text += f" (paper {paper[(m, c)]:.2f})"
            row.append(text)
        rows.append(row)
    caption = f"Best test accuracy (%) with binary weights ({', '.join(datasets)}); Float: full-precision network"
    return Table(caption, ["DNN"] + columns, rows)


# -- the other result kinds -------------------------------------------------------------------

def paper_check_table(findings: list[dict]) -> Table:
    rows = [[fmt(f.get("label")), fmt(f.get("verdict")), fmt(f.get("printed")), fmt(f.get("derived")),
             fmt(f.get("counterexample"))] for f in findings]
    return Table("The paper audit (stam paper-check): printed vs derived",
                 ["Label", "Verdict", "Printed", "Derived", "Counterexample"], rows)


def compare_table(compare: dict) -> Table:
    keys = ["method", "final_S", "objective", "quantised_objective", "wall_time", "grad_evals"]
    header = ["Method", "final S", "objective", "quantised objective", "wall time (s)", "gradient evals"]
    rows = [[fmt(r.get(k)) for k in keys] for r in compare.get("rows", [])]
    return Table(f"Synthetic comparison on problem {compare.get('problem', '?')} (equal gradient budgets)",
                 header, rows)


def rates_table(rates: dict) -> Table:
    rows = []
    for r in sorted(rates.get("rows", []), key=lambda r: r.get("T", 0)):
        mean, std = r.get("S_min_mean"), r.get("S_min_std")
        s = fmt(mean) + (f" \u00b1 {fmt(std, 2)}" if finite(std) else "")
        rows.append([fmt(r.get("T")), fmt(r.get("gamma")), fmt(r.get("beta")), fmt(r.get("admissible")), s,
                     fmt(r.get("bound")), fmt(r.get("ratio"))])
    return Table(
        f"Problem {rates.get('problem', '?')}: min_t E S_t against the bound of Theorem conv "
        f"(fitted slope {fmt(rates.get('slope'), 3)}, bound slope {fmt(rates.get('bound_slope'), 3)})",
        ["T", "gamma", "beta", "admissible", "min_t E S_t (mean \u00b1 std)", "bound", "bound / empirical"], rows)


def pep_table(sweep: dict) -> Table:
    rows = [[fmt(r.get("T")), fmt(r.get("worst_case")), fmt(r.get("bound")), fmt(r.get("ratio")), fmt(r.get("status"))]
            for r in sorted(sweep.get("rows", []), key=lambda r: r.get("T", 0))]
    return Table(f"Exact worst case (PEP) for lambda={sweep.get('lam')}, gamma={sweep.get('gamma')}, "
                 f"beta={sweep.get('beta')}", ["T", "worst case", "bound", "bound / worst case", "solver status"], rows)


def stepsize_table(rec: dict, title: str = "Admissible step sizes (stam stepsize)") -> Table:
    keys = ["gamma_max", "gamma", "K1", "K2", "K3", "M", "L", "beta_min", "binding", "T_min"]
    keys += [k for k in rec if k not in keys and k not in ("kind", "provenance")]
    return Table(title, ["Quantity", "Value"], [[k, fmt(rec.get(k))] for k in keys if k in rec])


def settings_table(checks: list[dict]) -> Table:
    """The paper's settings against the theorem (from ``stam.figures.admissible.check_stages``)."""
    rows = []
    for c in checks:
        violated = ", ".join(v.get("condition", "?") for v in c.get("violations", [])) or "none"
        rows.append([c["setting"], c["at"], fmt(c["gamma"]), fmt(c["lambda"]), fmt(c["beta"]),
                     fmt(c.get("admissible")), violated, ", ".join(c.get("unknown", [])) or "none"])
    return Table("The paper's parameter settings (Table para, Section sub:3.3) against Theorem conv-rate",
                 ["Setting", "at", "gamma", "lambda", "beta", "admissible", "violated conditions", "unknown"], rows)
