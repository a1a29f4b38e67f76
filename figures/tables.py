"""Tables (item 5 of the figures issue): one :class:`Table` value, three renderings (Markdown,
LaTeX, HTML), the builders for each result type, and the report's tables, each declared with the
result types it is built from (:func:`table_kind`, :data:`TABLES`; ``stam report`` shows every one
in its section, so a new result type's table is one decorated function here):

- :func:`accuracy_table`: best test accuracy per model x algorithm, laid out like the paper's
  Tables cifar-res and cifar100-res (binary weights; the Float column is the float network),
  built by ``stam table``'s own :func:`stam.dnn.table.build`;
- :func:`paper_check_table`: the findings of ``stam paper-check``;
- :func:`compare_table`: ``stam synthetic compare``;
- :func:`rates_table`, :func:`pep_table`, :func:`region_table`, :func:`stepsize_table`, :func:`settings_table`.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field

from stam.dnn.table import build, to_markdown
from stam.dnn.tunetext import table
from stam.figures.results import finite
from stam.io import latex_escape
from stam.theory.symbolic.mathml import sanitize


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


@dataclass
class Table:
    """A caption, a header and rows of already formatted cells.  ``details`` maps (row, column)
    to longer text that the HTML rendering shows folded under the cell (``<details>``, no
    JavaScript); ``math`` maps (row, column) to the cell as MathML (sanitised by
    :func:`stam.theory.symbolic.mathml.sanitize`), which the HTML rendering shows in the cell, with the
    cell's text as a copyable fold; Markdown and LaTeX show the cell only.  ``fold``: ``(first row, summary)``:
    the HTML rendering shows the rows from ``first row`` on folded under ``summary`` (a second table in a
    ``<details>``; the audit's ok items), Markdown and LaTeX show every row; ``css``: the HTML table's class."""

    caption: str
    header: list[str]
    rows: list[list[str]]
    details: dict = field(default_factory=dict)
    math: dict = field(default_factory=dict)
    fold: tuple | None = None
    css: str = ""

    def to_markdown(self) -> str:
        return to_markdown(self.caption, self.header, self.rows)

    def to_latex(self) -> str:
        cols = "|" + "|".join("c" for _ in self.header) + "|"
        lines = [r"\begin{table}[htbp]", r"\centering", rf"\begin{{tabular}}{{{cols}}}", r"\hline",
                 " & ".join(latex_escape(h) for h in self.header) + r" \\ \hline"]
        lines += [" & ".join(latex_escape(c) for c in r) + r" \\ \hline" for r in self.rows]
        lines += [r"\end{tabular}", rf"\caption{{{latex_escape(self.caption)}}}", r"\end{table}"]
        return "\n".join(lines) + "\n"

    def _html_cell(self, i: int, j: int, cell: str) -> str:
        attr = f' class="verdict-{html.escape(cell)}"' if self.header[j] == "Verdict" else ""
        more = self.details.get((i, j))
        formula = self.math.get((i, j))
        if formula:
            return (f'<td{attr} class="formula">{formula}<details class="as-text"><summary>as text</summary>'
                    f"<code>{html.escape(cell)}</code></details></td>")
        if more:
            return (f"<td{attr}><details><summary>{html.escape(cell)}</summary>"
                    f"<pre>{html.escape(more)}</pre></details></td>")
        return f"<td{attr}>{html.escape(cell)}</td>"

    def to_html(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        cls = f' class="{html.escape(self.css, quote=True)}"' if self.css else ""

        def table(caption: str, first: int, last: int) -> str:
            body = "".join("<tr>" + "".join(self._html_cell(i, j, c) for j, c in enumerate(self.rows[i])) + "</tr>"
                           for i in range(first, last))
            return (f"<table{cls}><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead>"
                    f"<tbody>{body}</tbody></table>")

        n = len(self.rows)
        if self.fold is None or not 0 <= self.fold[0] < n:
            return table(self.caption, 0, n)
        first, summary = self.fold
        return (table(self.caption, 0, first) + f'<details class="folded-rows"><summary>{html.escape(summary)}</summary>'
                + table(f"{self.caption} ({summary})", first, n) + "</details>")


# -- best accuracies (Tables cifar-res, cifar100-res) ---------------------------------------

def accuracy_table(summaries: list[dict], dataset: str) -> Table:
    """Best test accuracy (%) per model (rows) and algorithm (columns), mean +- std over seeds,
    the paper's number beside ours where a run exists: the layout of ``stam table``
    (:func:`stam.dnn.table.build`, which this reuses)."""
    title, header, rows = build(summaries, dataset)
    return Table(title, header, rows)


def tune_table(result: dict) -> Table:
    """The equal-budget comparison of ``stam tune`` (:func:`stam.dnn.tunetext.table`)."""
    return Table(*table(result))


# -- the other result kinds -------------------------------------------------------------------

def _evidence_cell(f: dict) -> str:
    """The evidence kind; for an item with a search on actual runs, what it tried and found."""
    cell = str(f.get("evidence") or "")
    srch = f.get("search")
    if isinstance(srch, dict):
        found = "a counterexample found" if srch.get("found") else "no counterexample"
        cell += f"; search: {found} in {srch.get('instances')} actual runs ({srch.get('steps')} steps)"
    return cell


#: the audit table's order: what a reader must see first (then any other verdict that is not ok, then ok, folded)
AUDIT_FIRST = ("false", "misprint", "unproven", "gap")


def audit_order(findings: list[dict]) -> list[dict]:
    """The findings with false, misprint, unproven and gap first (in that order), then any other verdict
    that is not ok, then the ok ones; the paper's order within each verdict (a stable sort)."""
    def rank(f: dict) -> int:
        v = str(f.get("verdict"))
        return AUDIT_FIRST.index(v) if v in AUDIT_FIRST else len(AUDIT_FIRST) + (v == "ok")
    return sorted(findings, key=rank)


def paper_check_table(findings: list[dict]) -> Table:
    """One row per audited item, those that are not ok first (:func:`audit_order`), the ok ones folded in
    HTML; the evidence its verdict rests on (for an unproven item, the search on actual runs); the
    counterexample cell gives what it shows (its ``meaning``), the numbers fold out under it in HTML (and
    are in the data file)."""
    rows, details, formulas = [], {}, {}
    findings = audit_order(findings)
    for i, f in enumerate(findings):
        ce = f.get("counterexample")
        if isinstance(ce, dict):
            numbers = {k: v for k, v in ce.items() if k != "meaning"}
            cell = str(ce.get("meaning") or "counterexample")
            details[(i, 5)] = json.dumps(numbers, indent=1, default=str)
        else:
            cell = fmt(ce)
        paper = f.get("paper")
        label = fmt(f.get("label")) + (f" [paper: {', '.join(map(str, paper.values()))}]" if isinstance(paper, dict) and paper
                                       else "")
        rows.append([label, fmt(f.get("verdict")), _evidence_cell(f), fmt(f.get("printed")),
                     fmt(f.get("derived")), cell])
        for j, key in ((3, "printed"), (4, "derived")):
            m = f.get(f"{key}_mathml")
            m = sanitize(m) if isinstance(m, str) else None
            if m is not None:
                formulas[(i, j)] = m
    ok = [i for i, f in enumerate(findings) if str(f.get("verdict")) == "ok"]
    fold = (ok[0], f"the {len(ok)} ok item{'s' if len(ok) != 1 else ''}") if ok else None
    return Table("The paper audit (stam paper-check): printed vs derived, false, misprint, unproven and gap first",
                 ["Label", "Verdict", "Evidence", "Printed", "Derived", "Counterexample"], rows, details, formulas,
                 fold=fold, css="audit")


def compare_table(compare: dict) -> Table:
    keys = ["method", "iterations", "grad_evals", "final_S", "objective", "quantised_objective", "wall_time"]
    header = ["Method", "iterations", "gradient evals", "final S", "objective", "quantised objective", "wall time (s)"]
    rows = [[fmt(r.get(k)) for k in keys] for r in compare.get("rows", [])]
    params = compare.get("params") if isinstance(compare.get("params"), dict) else {}
    given = _given(params, ("lam", "gamma", "beta", "budget", "R"))
    return Table(f"Synthetic comparison on problem {compare.get('problem', '?')} (equal gradient budgets"
                 + (f"; {given}" if given else "") + ")", header, rows)


def _slope_text(slope) -> str:
    """A fitted slope; one that vanishes to rounding (a flat curve) said as such, not as 7.39e-17."""
    return "0 (flat)" if finite(slope) and abs(slope) < 1e-9 else fmt(slope, 3)


def rates_table(rates: dict) -> Table:
    rows = []
    for r in sorted(rates.get("rows", []), key=lambda r: r.get("T", 0)):
        mean, std = r.get("S_min_mean"), r.get("S_min_std")
        s = fmt(mean) + (f" \u00b1 {fmt(std, 2)}" if finite(std) else "")
        rows.append([fmt(r.get("T")), fmt(r.get("gamma")), fmt(r.get("beta")), fmt(r.get("admissible")), s,
                     fmt(r.get("bound")), fmt(r.get("ratio"))])
    estimated = estimated_names(rates.get("constant_status"))
    params = rates.get("params") if isinstance(rates.get("params"), dict) else {}
    preset = f", preset {params['preset']}" if params.get("preset") else ""
    given = _given(params, ("lam", "gamma", "R"))
    rules = "; ".join(f"{n}: {params[k]}" for n, k in (("gamma", "gamma_rule"), ("beta", "beta_rule")) if params.get(k))
    return Table(
        f"Problem {rates.get('problem', '?')}{preset} ({'; '.join(filter(None, [given, rules])) or 'parameters not recorded'})"
        f": min_t E S_t against the bound of Theorem conv "
        f"(fitted slope {_slope_text(rates.get('slope'))}, bound slope {_slope_text(rates.get('bound_slope'))})"
        + (f"; constants ESTIMATED (not a guarantee): {', '.join(estimated)}, so the bound is not certified" if estimated else ""),
        ["T", "gamma", "beta", "admissible", "min_t E S_t (mean \u00b1 std)", "bound", "bound / empirical"], rows)


def pep_table(sweep: dict) -> Table:
    rows = [[fmt(r.get("T")), fmt(r.get("worst_case")), fmt(r.get("bound")), fmt(r.get("ratio")), fmt(r.get("status"))]
            for r in sorted(sweep.get("rows", []), key=lambda r: r.get("T", 0))]
    return Table(f"Exact worst case (PEP) for lambda={sweep.get('lam')}, gamma={sweep.get('gamma')}, "
                 f"beta={sweep.get('beta')}, under delta0 + M0'_T <= 1 (M0'_T: the first T + 1 merits, at most the "
                 "paper's M0': the worst case bounds the one under the printed normalisation, and a ratio below 1 holds "
                 "for the printed theorem; 'unbounded' is a statement about M0'_T only)",
                 ["T", "worst case", "bound", "worst case / bound", "solver status"], rows)


def region_table(region: dict) -> Table:
    """A ``lyapunov-region`` result (``stam pep --region``) per lambda, limits in gamma*lambda (the lower end
    of each bracket; "?": its end is not verified, solver accuracy): for the result's class of F (the paper's:
    any proper lsc F) the paper form with the full gradient and with minibatches, any one-step potential,
    where ``stam pep`` refutes the theorem's form (with the finite-horizon M0'_T), whether Theorem conv's own
    region is certified; convex F beside."""
    from stam.figures.admissible import CLASS_NAMES

    cls = CLASS_NAMES[region.get("f_class", "convex")]
    sampling = region.get("sampling") or {}

    def gl(part, lam):
        if not isinstance(part, dict):
            return "–"
        text = "none" if part.get("lo") is None else fmt(part["lo"] * lam, 3)
        if part.get("hi") is None and part.get("lo") is not None:
            text = "≥ " + text + " (end of range)"
        return text + ("?" if part.get("hi_unverified") else "") + ("*" if part.get("start_unverified") else "")

    rows = []
    for r in sorted(region["rows"], key=lambda r: r["lam"]):
        lam, th = r["lam"], r.get("theorem")
        theorem = "–" if th is None else ("yes (1/ρ ≤ " + fmt(th["max_inv_rho_beta"], 4) + " β)"
                                             if th["certified"] else f"no ({sum(p['certified'] for p in th['points'])}/"
                                             f"{len(th['points'])} points)")
        refuted = "none" if r["refuted"]["hi"] is None else fmt(r["refuted"]["hi"] * lam, 3)
        convex = r.get("convex") or {}
        rows.append([fmt(lam, 3), fmt(r["gamma_theorem"] * lam, 3), gl(r["paper"], lam), gl(r.get("sampled"), lam),
                     gl(r["general"], lam), refuted, theorem, gl(convex.get("paper"), lam), gl(convex.get("general"), lam)])
    header = ["λ", "Theorem conv: γ_max λ", f"{cls}: paper form", f"paper form, minibatches N = "
              f"{sampling.get('N')}, b = {sampling.get('b')}", "any one-step potential", "refuted from (M0'_T)",
              "Theorem conv's region certified", "convex F: paper form", "convex F: any one-step potential"]
    caption = (f"Certified region (stam pep --region, L1 = 1): the largest γλ up to which a Lyapunov function "
               f"certifies STAM, for {cls} and for convex F; a certificate bounds min_t S_t by (δ₀ + M₀'_T)"
               "/(ρT) ≤ (δ₀ + M₀')/(ρT), so it holds for the printed theorem; 'refuted': "
               "stam pep unbounded under δ₀ + M₀'_T ≤ 1 (first T + 1 merits), which refutes a bound "
               "of the theorem's form with M₀'_T, not the printed one with M₀'; every certificate proven in exact rational "
               "arithmetic (stam.theory.worstcase.rational; a file written before that was verified in floating point only); "
               "'?': the bracket's end had a solver rate that failed the verification or the exact proof; '*': sought "
               "from the first certified γ up")
    return Table(caption, header, rows)


def _labelled(entry) -> tuple[str, str, str]:
    """(value, status, how) of a labelled constant ``{"value", "status", "how", "settings"}``."""
    if not isinstance(entry, dict):
        return fmt(entry), "", ""
    how = str(entry.get("how", "")) + (f"; settings: {entry['settings']}" if entry.get("settings") else "")
    return fmt(entry.get("value")), str(entry.get("status", "")), how


def estimated_names(status: dict) -> list[str]:
    """The constants a result labels anything but certified (``stam.synthetic.estimate``)."""
    return [str(k) for k, v in (status or {}).items() if isinstance(v, dict) and v.get("status") not in (None, "certified")]


#: how a caption writes a parameter whose key is not the paper's name
SHOWN = {"M0": "M0'"}


def _given(params: dict, names: tuple) -> str:
    """``name = value`` for the ``names`` a result's parameters hold (numbers to 4 significant digits)."""
    return ", ".join(f"{SHOWN.get(n, n)} = {fmt(params[n])}" for n in names if params.get(n) is not None)


def stepsize_table(rec: dict, title: str = "Admissible step sizes (stam stepsize)") -> Table:
    """The recommended step sizes; with ``--problem``, every constant with its label (certified or
    estimated) and, folded under it, its estimator and settings.  The caption says for what: the problem (or
    the constants given), eps, delta0 and M0' (issue 37: a gamma and a T_min without them say nothing)."""
    params = rec.get("params") if isinstance(rec.get("params"), dict) else {}
    given = _given(params, ("eps", "delta0", "M0", "L1", "A", "C"))
    what = f"problem {params['problem']}" if params.get("problem") else "the constants given"
    title += f" for {what}" + (f": {given}" if given else "")
    keys = ["gamma_max", "gamma", "K1", "K2", "K3", "M", "L", "beta_min", "binding", "T_min"]
    keys += [k for k in rec if k not in keys and k not in ("kind", "provenance", "params", "constants")]
    rows = [[k, fmt(rec.get(k))] for k in keys if k in rec]
    details = {}
    constants = rec.get("constants") if isinstance(rec.get("constants"), dict) else {}
    for name, entry in constants.items():
        value, status, how = _labelled(entry)
        if how:
            details[(len(rows), 1)] = how
        rows.append([f"{name} ({status})" if status else str(name), value])
    estimated = estimated_names(constants)
    if estimated:
        title += f"; constants ESTIMATED (not a guarantee): {', '.join(estimated)}"
    return Table(title, ["Quantity", "Value"], rows, details)


def short_condition(name: str) -> str:
    """``beta >= 2 K2/K1 (Theorem conv: ...)`` -> ``beta >= 2 K2/K1``: the condition without its source."""
    head, sep, source = name.rpartition(" (")
    return head if sep and ("Theorem" in source or source.startswith("eq")) else name


def settings_table(checks: list[dict]) -> Table:
    """The paper's settings against the theorem (from ``stam.figures.admissible.check_stages``)."""
    rows = []
    for c in checks:
        violated = "; ".join(short_condition(v.get("condition", "?")) for v in c.get("violations", [])) or "none"
        rows.append([c["setting"], c["at"], fmt(c["gamma"]), fmt(c["lambda"]), fmt(c["beta"]),
                     fmt(c.get("admissible")), violated, ", ".join(c.get("unknown", [])) or "none"])
    return Table("The paper's parameter settings (Table para, Section sub:3.3) against Theorems conv and conv-rate "
                 "(K1 > 0 is eq. k1; beta >= sqrt((L+M) A T), 2 (L+M) C/eps^2 and T >= 12 beta (delta0+M0')/eps^2 "
                 "are eq700, eq702, eq703)",
                 ["Setting", "at", "gamma", "lambda", "beta", "admissible", "violated conditions", "unknown"], rows)


# -- the tables of the report, each declared with the result types it is built from ------------------


@dataclass(frozen=True)
class TableKind:
    """A table of the report: ``sources`` the result types (:mod:`stam.results`) it is built from
    (none: it needs no result), ``section`` the report section (:data:`stam.figures.report.SECTIONS`)
    it is shown in, ``build`` the function ``(results, nc) -> parts`` given the results of those
    types: each part an HTML paragraph (a ``str``, already escaped) or ``(file name, Table)``."""

    name: str
    sources: tuple
    section: str
    build: object

    def parts(self, results, nc) -> list:
        return self.build([r for kind in self.sources for r in results[kind]], nc)


#: every table kind, in the order of their declarations below (the order within a report section)
TABLES: list[TableKind] = []


def table_kind(name: str, sources: tuple, section: str):
    """Declare the decorated function ``(results, nc) -> parts`` as the :class:`TableKind` ``name``."""
    def register(build):
        TABLES.append(TableKind(name, tuple(sources), section, build))
        return build
    return register


@table_kind("paper-check", ("paper-check",), "paper-check")
def paper_check_parts(results, nc) -> list:
    from stam.theory.papercheck.items import VERDICTS
    from stam.theory.papercheck.items.coverage import coverage_text

    parts = []
    for i, r in enumerate(results):
        findings = r.data
        bad = [f for f in findings if str(f.get("verdict")) != "ok"]
        cov = r.meta.get("coverage")
        if cov:
            parts.append(f"<p>Coverage: {html.escape(coverage_text(cov))}.</p>")
        counts = ", ".join(f"{n} {html.escape(v)}" for v in VERDICTS
                           if (n := sum(str(f.get('verdict')) == v for f in findings)) or v != "failed to derive")
        kinds = "; ".join(f"{html.escape(v)} ({len(labs)}): {html.escape(', '.join(labs))}" for v in VERDICTS if v != "ok"
                          and (labs := [str(f.get("label")) for f in bad if str(f.get("verdict")) == v]))
        parts.append(f"<p>{len(findings)} checks ({counts}); not ok, by kind: {kinds or 'none'}.</p>")
        parts.append((f"paper-check-{i}", paper_check_table(findings)))
    return parts


@table_kind("stepsize", ("stepsize",), "stepsize")
def stepsize_parts(results, nc) -> list:
    return [(f"stepsize-{i}", stepsize_table(r.data)) for i, r in enumerate(results)]


@table_kind("paper-settings", (), "admissible")
def settings_parts(results, nc) -> list:
    from stam.figures.admissible import NetworkConstants, check_stages

    nc = nc or NetworkConstants()
    table = settings_table(check_stages(nc))
    table.caption += f"; constants {nc.describe()}"
    return [("paper-settings", table)]


@table_kind("rates", ("synthetic-rates",), "rates")
def rates_parts(results, nc) -> list:
    return [(f"rates-{r.data.get('problem', r.path.stem)}", rates_table(r.data)) for r in results]


@table_kind("pep", ("pep-sweep",), "pep")
def pep_parts(results, nc) -> list:
    parts: list = [(f"pep-{i}", pep_table(r.data)) for i, r in enumerate(results)]
    if results:
        parts.append('<p class="small">The curves are drawn in the last panel of the rates figure above.</p>')
    return parts


@table_kind("region", ("lyapunov-region",), "pep")
def region_parts(results, nc) -> list:
    parts: list = []
    for i, r in enumerate(results):
        parts.append((f"region-{i}", region_table(r.data)))
        parts.append('<p class="small">The same limits are drawn in the admissible-region figure and, as lines, on '
                     'the convergence maps.</p>')
    return parts


def band_table(band: dict) -> Table:
    """A ``pep-band`` result (:data:`stam.theory.worstcase.onset.PEP_BAND`, ``benchmarks/pep_band.py``) per (sampling, beta, T):
    up to where a potential certifies STAM, the open band, from where no ``O(1/T)`` bound holds (the 2-cycle of
    :func:`stam.theory.worstcase.onset.two_cycle`) and from where the PEP of that horizon is unbounded (the zones of
    :func:`stam.theory.worstcase.onset.band_segments`, which the figure ``pep-band`` draws)."""
    from stam.theory.worstcase.onset import band_segments

    def zone(seg):
        return "\u2013" if seg is None else f"[{fmt(seg[0], 5)}, {fmt(seg[1], 5)})"

    rows = []
    for s in band_segments(band):
        refuted = "none up to " + fmt(band["gamma_lam_range"][1], 3) if s["refuted"] is None else \
            f"from {fmt(s['refuted'][0], 5)}" + (f" (onset in [{fmt(s['bracket'][0], 5)}, {fmt(s['bracket'][1], 5)}))"
                                                   if s["bracket"] is not None else " (the range's start)")
        sampling = "full" if (s["N"], s["b"]) == (1, 1) else f"N = {s['N']}, b = {s['b']}"
        rows.append([sampling, fmt(s["beta"], 4), str(s["T"]), zone(s["certified"]), zone(s["open"]),
                     "\u2013" if s["no_decay"] is None else f"from {fmt(s['no_decay'][0], 6)}", refuted])
    caption = (f"Certified, open and refuted \u03b3\u03bb per horizon T (stam pep, any proper lsc F, \u03bb = "
               f"{fmt(band['lam'], 3)}, L1 = {fmt(band['L1'], 3)}, \u03b4\u2080 + M\u2080'_T \u2264 1; searched on "
               f"[{fmt(band['gamma_lam_range'][0], 3)}, {fmt(band['gamma_lam_range'][1], 3)}]): certified by a potential"
               + (" (per \u03b2, the best proven in the table of potentials with history)" if band.get("history") else
                  f"{' (' + band['certified_from'] + ')' if band.get('certified_from') else ''}")
               + "; no O(1/T): a 2-periodic run with S_t constant (stam.theory.worstcase.onset.two_cycle, exact); refuted: "
               "the PEP of horizon T unbounded, no bound of Theorem conv's form with M\u2080'_T")
    return Table(caption, ["sampling", "\u03b2", "T", "certified", "open", "no O(1/T) bound", "refuted"], rows)


def history_table(band: dict) -> Table:
    """The ``history`` rows of a ``pep-band`` result (:mod:`stam.theory.worstcase.history`): per potential and beta, the
    largest ``gamma*lam`` certified and proven, the first point not, and the 2-cycle's threshold there."""
    from stam.theory.worstcase.onset import sampling

    cyc = {c["beta"]: c["threshold"] for c in band.get("cycles") or []}
    rows = []
    for h in band.get("history") or []:
        N, b = sampling(h)
        what = (f"{h['template']}, k = {h['k']}, h = {h['h']}" if (N, b) == (1, 1)
                else f"{h['template']}, one step, N = {N}, b = {b}")
        rows.append([what, fmt(h["beta"], 4), "\u2013" if h["certified"] is None else fmt(h["certified"], 6),
                     "\u2013" if h["fails"] is None else fmt(h["fails"], 6),
                     "\u2013" if not h.get("rho") else fmt(1 / h["rho"], 4),
                     "\u2013" if h["beta"] not in cyc else fmt(cyc[h["beta"]], 6)])
    return Table("Potentials with history (stam.theory.worstcase.history; k-step decrease conditions, a quadratic form over the "
                 "last h + 1 iterates in the general template): the largest \u03b3\u03bb certified and proven in "
                 "exact arithmetic (a bisection: every point tried below it certified too), the first not certified, "
                 "the constant 1/\u03c1 of the bound at the largest, and the threshold from which STAM has a 2-periodic "
                 "run (no O(1/T) bound)",
                 ["potential", "\u03b2", "certified to", "not certified at", "1/\u03c1 there", "2-cycle from"], rows)


@table_kind("pep-band", ("pep-band",), "pep")
def band_parts(results, nc) -> list:
    parts = []
    for i, r in enumerate(results):
        parts.append((f"pep-band-{i}", band_table(r.data)))
        if r.data.get("history"):
            parts.append((f"pep-band-history-{i}", history_table(r.data)))
    return parts


#: the classes of F of a methods-regions result, as its table heads them
_F_HEADS = {"zero": "F = 0", "convex": "F convex", "indicator": "F an indicator", "lsc": "any lsc F"}


def methods_regions_table(regions: dict) -> Table:
    """Every method's verdict per class of F and measure (a ``methods-regions`` result); STAM's natural ones from the
    ``lyapunov-region`` result it names (certified and refuted gamma*lambda, the smallest and largest over its
    lambdas)."""
    rows = []
    for m in regions["methods"]:
        for measure in ("natural", "common"):
            if m.get(measure) is None:
                by = {c["f_class"]: c for c in regions["stam_natural"]["classes"]}

                def cell(c):
                    if not c or not c["certified_gamma_lam"]:
                        return "not searched"
                    text = f"certified gamma*lambda < {c['certified_gamma_lam'][0]:.3g}"
                    return text + (f"; refuted (finite horizon) from {c['refuted_gamma_lam'][-1]:.3g}"
                                   if c.get("refuted_gamma_lam") else "")
                cells = [cell(by.get(c)) for c in _F_HEADS]
            else:
                by = {v["f_class"]: v["verdict"] for v in m[measure]}
                cells = [by.get(c, "-") for c in _F_HEADS]
            rows.append([m["label"], measure, *cells])
    return Table("Where each method is certified and where a run refutes it (h = gamma L1; STAM: gamma*lambda; "
                 "natural: each method's own measure, common: the proximal-gradient residual of G + F at its binary "
                 "output)", ["method", "measure", *_F_HEADS.values()], rows)


def methods_steps_table(steps: dict) -> Table:
    """Each method's mean test accuracy over its step sweep (a ``methods-steps`` result)."""
    mults = steps["multiples"]
    rows = []
    for m in steps["methods"]:
        cells = ["diverged" if r["diverged"] == steps["seeds"] or r["mean"] is None else
                 f"{r['mean']:.1f}" + (" (a seed diverged)" if r["diverged"] else "") for r in m["rows"]]
        rows.append([m["algo"].upper(), m["step_key"], fmt(m["curvature"], 3), *cells])
    return Table(f"Mean test accuracy (%, binary weights) with each tuned step times a factor: {steps['protocol']}",
                 ["method", "step", "L^ (curvature at the start)", *[f"x {x:g}" for x in mults]], rows)


@table_kind("methods", ("methods-regions", "methods-steps"), "practice")
def methods_parts(results, nc) -> list:
    parts: list = []
    for i, r in enumerate(results):
        if r.kind == "methods-regions":
            parts.append((f"methods-regions-{i}", methods_regions_table(r.data)))
        else:
            parts.append((f"methods-steps-{i}", methods_steps_table(r.data)))
    return parts


@table_kind("compare", ("synthetic-compare",), "compare")
def compare_parts(results, nc) -> list:
    return [(f"compare-{r.data.get('problem', r.path.stem)}", compare_table(r.data)) for r in results]


@table_kind("tune", ("tune",), "tuning")
def tune_parts(results, nc) -> list:
    parts: list = []
    for i, r in enumerate(results):
        parts.append(f"<p>{html.escape(str(r.data.get('protocol', '')))}.</p>")
        parts.append((f"tune-{i}", tune_table(r.data)))
    return parts


@table_kind("accuracy", ("train-run",), "accuracy")
def accuracy_parts(results, nc) -> list:
    """One table per data set of the runs (``stam table``'s layout)."""
    parts: list = []
    for ds in sorted({str(r.data["summary"].get("dataset", "?")) for r in results}):
        summaries = [r.data["summary"] for r in results if str(r.data["summary"].get("dataset", "?")) == ds]
        parts.append((f"accuracy-{ds}", accuracy_table(summaries, ds)))
    return parts
