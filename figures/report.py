"""``stam report`` and ``stam plot``: every figure and table for the results given, as one
self-contained HTML page (images embedded as base64 PNG, no JavaScript, readable offline).

The page starts with a header listing each result with its versions, parameters and time (from
the files' provenance); each figure links to its PDF and to copies of the data files it was drawn
from (copied into ``DIR/data`` and linked relatively, so the folder can be moved or zipped).
Every section is always present; a section without results says what would fill it.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from stam.errors import UsageError
from stam.figures import tables as T
from stam.figures.kinds import FIGURES, figure_kind
from stam.figures.results import Result, ResultSet, load_results
from stam.io import atomic_write_bytes, atomic_write_text, check_out_dir, check_out_file, provenance, slug, staged

#: (id, heading) of every section of the page, in order: the message first, provenance last.
SECTIONS = (
    ("headline", "At a glance"),
    ("paper-check", "Paper audit"),
    ("stepsize", "Admissible step sizes"),
    ("admissible", "The admissible region and the paper's settings"),
    ("rates", "Synthetic rates against Theorem conv"),
    ("map", "Convergence map over (\u03b3, \u03bb)"),
    ("pep", "Exact worst case by performance estimation"),
    ("compare", "Synthetic comparison with baselines"),
    ("tuning", "Equal-budget comparison (tuned on validation, fresh seeds)"),
    ("training", "Training curves"),
    ("practice", "Theory beside practice"),
    ("accuracy", "Best test accuracy"),
    ("runs", "Results and provenance"),
)

#: One sentence at the top of each section: what it shows.
INTROS = {
    "paper-check": "Every labelled display and statement of the paper, re-derived in sympy and given a verdict "
                   "(false, unproven, misprint, gap or ok) with the evidence behind it.",
    "stepsize": "The step sizes Theorem conv admits for the given constants, and the iterations it promises.",
    "admissible": "Where in the (gamma, beta) plane the theorem's conditions hold, and where the paper's own settings lie.",
    "rates": "Measured stationarity of STAM on synthetic problems with known constants, against the theorem's bound.",
    "map": "Which (gamma, lambda) make STAM decrease, beside the region where the theorem holds.",
    "pep": "The exact worst case over the whole problem class (performance estimation), against the theorem's bound, "
           "and where a Lyapunov function certifies STAM for the paper's class (nonconvex F) and for convex F.",
    "compare": "STAM against the baselines on the same synthetic problem at an equal gradient budget.",
    "tuning": "STAM, BC, BR, PSGD and float SGD tuned with the same budget on validation data, then re-run on fresh seeds.",
    "training": "Training curves of individual runs: train accuracy, test accuracy with binary and with float "
                "weights, and where the runs logged it the share of binary weights whose sign ever flipped.",
    "practice": "The same (gamma, lambda) plane for a binary network: where it trains, and where the theorem holds; and each "
                "of STAM, PSGD, BC and BR along its own step, its certified and refuted ranges beside its trained accuracy.",
    "accuracy": "The best test accuracy of every training run, laid out like the paper's tables.",
    "runs": "Every result file shown on this page, with the versions and parameters that made it.",
}

#: Which section each headline line of ``stam demo`` summarises (its link).
HEADLINE_SECTIONS = {"audit": "paper-check", "rates": "rates", "region": "pep", "map": "map", "tune": "tuning",
                     "digits-map": "practice"}


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1240px;margin:2em auto;
padding:0 1.2em;color:#1a1a1a;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em} h2{border-bottom:2px solid #0072B2;padding-bottom:.2em;margin-top:2em}
nav ol{columns:2;font-size:.95em} figure{margin:1.2em 0} figure img{max-width:100%;height:auto;border:1px solid #ddd}
figcaption{font-size:.9em;color:#444;margin-top:.3em}
table{border-collapse:collapse;margin:1em 0;font-size:.85em;display:block;overflow-x:auto}
caption{text-align:left;font-weight:600;padding:.3em 0;caption-side:top}
th,td{border:1px solid #ccc;padding:.25em .55em;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#eef4fa} tr:nth-child(even) td{background:#fafafa}
.note{color:#555;font-style:italic} .intro{color:#333;margin-top:-.4em} .verdict-misprint,.verdict-false{color:#D55E00;font-weight:600} .verdict-unproven{color:#E69F00;font-weight:600}
code{background:#f3f3f3;padding:0 .2em} .small{font-size:.85em;color:#555}
table.provenance td:nth-child(4),table.provenance td:nth-child(5){font-size:.85em;color:#333}
math{font-size:1.1em} td.formula math{display:block;font-size:1.1rem;math-style:normal;max-width:21em;overflow:auto hidden;padding:.4em 0}
td.formula mtable,td.formula mfrac>*{math-style:normal} td.formula mtd{text-align:left;padding:0}
td[class^="verdict-"]{white-space:nowrap} td.formula code{overflow-wrap:anywhere}
table.audit td,table.audit th{padding:.25em .4em} table.audit td:first-child{max-width:14em;overflow-wrap:normal;hyphens:none}
details.folded-rows>summary{font-weight:600;margin:.4em 0}
details.as-text summary{font-size:.8em;color:#555} details.as-text code{display:block;white-space:pre-wrap;word-break:break-word}
details summary{cursor:pointer} details pre{white-space:pre-wrap;word-break:break-word;font-size:.85em;
max-height:24em;overflow:auto;background:#f6f6f6;padding:.4em;margin:.3em 0}
"""


@dataclass
class Section:
    id: str
    heading: str
    parts: list[str] = field(default_factory=list)
    intro: str = ""  # one sentence: what the section shows (INTROS)

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)

    def html(self) -> str:
        body = "\n".join(self.parts) or '<p class="note">No results of this kind were given.</p>'
        intro = f'<p class="intro">{html.escape(self.intro)}</p>\n' if self.intro else ""
        return f'<section id="{self.id}">\n<h2>{html.escape(self.heading)}</h2>\n{intro}{body}\n</section>'


def href(link: str) -> str:
    """An ``href`` value for a relative link inside the output folder: URL-quoted and
    HTML-escaped (the links are built from slugs already; this is the second fence)."""
    return html.escape(urllib.parse.quote(link, safe="/"), quote=True)


def _plain(results: ResultSet) -> ResultSet:
    """The results as figures draw them: every string from the files as plain text, never
    matplotlib mathtext (:func:`stam.figures.style.plain_text`), so that a run labelled
    ``$\\notacommand{$`` is drawn as typed instead of crashing the renderer."""
    from stam.figures.style import plain_text

    return ResultSet({k: [dataclasses.replace(r, data=plain_text(r.data)) for r in v] for k, v in results.by_kind.items()})


def make_figure(kind: str, results: ResultSet, nc=None):
    """The matplotlib figure ``kind`` (a name of :data:`stam.figures.kinds.NAMES`) for ``results``.

    Raises ValueError when the results hold nothing to draw for this kind."""
    try:
        fk = figure_kind(kind)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    return fk.figure(_plain(results), nc)


class _Page:
    """Collects the output folder's files: figures (PNG+PDF), tables (md+tex), copied data."""

    def __init__(self, out_dir: Path):
        self.out = out_dir
        self.data_links: dict[int, list[str]] = {}
        self._used: set[str] = set()  # names in data/
        self._tables: set[str] = set()  # names in tables/

    def copy_data(self, result: Result) -> list[str]:
        """Copy the result's files into DIR/data once; return their relative links."""
        key = id(result)
        if key not in self.data_links:
            links = []
            prefix = result.path.name if result.kind == "train-run" else ""
            for f in result.files:  # data/<slug>.<suffix>: a name made safe, unique in data/
                stem = f"{prefix}-{f.stem}" if prefix else f.stem
                name = slug(stem, self._used, ext=f.suffix or "json")
                dest = self.out / "data" / name
                if f.resolve() != dest.resolve():
                    atomic_write_bytes(dest, f.read_bytes())
                links.append(f"data/{name}")
            self.data_links[key] = links
        return self.data_links[key]

    def figure(self, name: str, fig, caption: str, sources: list[Result]) -> str:
        from stam.figures.style import save_figure

        png, pdf = save_figure(fig, self.out / "figures" / name)
        fig.clf()
        b64 = base64.b64encode(png.read_bytes()).decode("ascii")
        links = [f'<a href="{href("figures/" + pdf.name)}">PDF</a>', f'<a href="{href("figures/" + png.name)}">PNG</a>']
        for r in sources:
            links += [f'<a href="{href(link)}">{html.escape(Path(link).name)}</a>' for link in self.copy_data(r)]
        files = " \u00b7 ".join(links)
        return (f'<figure id="fig-{html.escape(name, quote=True)}"><a href="{href("figures/" + pdf.name)}">'
                f'<img alt="{html.escape(caption, quote=True)}" '
                f'src="data:image/png;base64,{b64}"></a><figcaption>{html.escape(caption)} '
                f'<span class="small">Data and files: {files}</span></figcaption></figure>')

    def table(self, name: str, table) -> str:
        """``name`` may hold a field of a result file (its problem, data set): the file names are
        its slug, unique in tables/ (two results of one problem: rates-binary, rates-binary-2)."""
        name = slug(name, self._tables)
        md = atomic_write_text(self.out / "tables" / f"{name}.md", table.to_markdown())
        tex = atomic_write_text(self.out / "tables" / f"{name}.tex", table.to_latex())
        return (table.to_html() + f'<p class="small">As <a href="{href("tables/" + md.name)}">Markdown</a> \u00b7 '
                f'<a href="{href("tables/" + tex.name)}">LaTeX</a></p>')


def _versions(prov: dict) -> str:
    v = prov.get("versions") or {}
    return ", ".join(f"{k} {val}" for k, val in v.items()) or "\u2013"


def _params(result: Result) -> str:
    """The parameters of a result (its type's, :attr:`stam.figures.results.Result.params`) in one line."""
    text = ", ".join(f"{k}={v}" for k, v in result.params.items())
    return text if len(text) <= 400 else text[:400] + " \u2026"


def _header(page: _Page, results: ResultSet) -> str:
    """Every result with its time, versions and parameters (from its provenance), linked to the
    copies of its data files."""
    rows = []
    for r in results.all():
        prov = r.provenance
        links = " ".join(f'<a href="{href(link)}">{html.escape(Path(link).name)}</a>' for link in page.copy_data(r))
        cells = [html.escape(c) for c in (r.name, r.kind, prov.get("created", "\u2013"), _versions(prov), _params(r))]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + f"<td>{links}</td></tr>")
    if not rows:
        return '<p class="note">No result files were given; only the theory figures are shown.</p>'
    head = "".join(f"<th>{h}</th>" for h in ("Result", "Kind", "Created", "Versions", "Parameters", "Data"))
    return (f'<table class="provenance"><caption>Every result on this page</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _figures(sections: dict, page: _Page, results: ResultSet, nc) -> None:
    """Every figure kind of the registry (:data:`stam.figures.kinds.FIGURES`), in its section;
    one with nothing to draw says so."""
    for fk in FIGURES:
        try:
            fig = make_figure(fk.name, results, nc)
        except ValueError as exc:  # nothing of this kind to draw
            sections[fk.section].add(f'<p class="note">{html.escape(str(exc))}.</p>')
            continue
        sections[fk.section].add(page.figure(fk.name, fig, fk.caption_for(results, nc), fk.source_results(results)))


def _findings(page: _Page) -> str:
    """The toolkit's findings from its committed results (:mod:`stam.figures.findings`, what ``stam findings``
    prints), each with its scope; nothing where the package runs from no checkout of the toolkit."""
    from stam.figures.findings import HEADER, committed_rows

    rows = committed_rows()
    if rows is None:
        return ""
    caption = ("The toolkit's findings, from its committed result files (benchmarks/results/; stam findings), "
               "each with its scope and the command that reproduces it")
    return page.table("findings", T.Table(caption, list(HEADER), rows))


def _headline(headline: dict | None, sections: dict) -> str:
    """The message first: each headline line (``stam demo``'s, by key) linked to its section, then
    the first figure of the page, so that the first screen shows a result."""
    items, lead_text = [], ""
    for key, text in (headline or {}).items():
        if key == "conclusion":  # what the run found, in words: first, as a sentence, not a list item
            lead_text = f'<p class="conclusion"><strong>{html.escape(str(text))}</strong></p>'
            continue
        target = HEADLINE_SECTIONS.get(key)
        link = f' <a href="#{target}">(details)</a>' if target in sections else ""
        items.append(f"<li>{html.escape(str(text))}{link}</li>")
    first = next((p for sid in ("practice", "map", "admissible", "rates") for p in sections[sid].parts if p.startswith("<figure")), "")
    first = first.replace('<figure id="', '<figure data-copy-of="', 1)  # one id per page: the section keeps it
    lead = (f"<ul>{''.join(items)}</ul>" if items else
            '<p class="note">No headline was given (stam demo writes one); the sections below hold every result.</p>')
    return lead_text + lead + first


#: the folders of a report beside report.html; each is replaced whole by the next report into the folder
REPORT_FOLDERS = ("figures", "tables", "data")
#: the file that marks a folder of :data:`REPORT_FOLDERS` as a report's
REPORT_MARK = ".stam-report"


def build_report(paths, out_dir, *, nc=None, title: str = "STAM: theory beside practice", headline: dict | None = None) -> Path:
    """Write ``out_dir/report.html`` (with figures/, tables/ and data/ beside it); return its path.
    All or nothing (:func:`stam.io.staged`): the page and its folders are made in a staging folder
    inside ``out_dir`` and replace the previous report's together only when the whole page is made;
    a failing report leaves the previous one as it was.
    ``headline``: lines that state the message (``stam demo``'s, keyed as :data:`HEADLINE_SECTIONS`),
    shown first, each linked to its section; provenance comes last, folded."""
    out_dir = check_out_dir(out_dir, "-o")
    for sub in REPORT_FOLDERS:
        check_out_dir(out_dir / sub, "-o")
        folder = out_dir / sub
        if (folder.is_dir() and any(folder.iterdir()) and not (folder / REPORT_MARK).exists()
                and not (out_dir / "report.html").exists()):  # not an earlier report's folder: it is replaced whole
            raise UsageError(f"-o {out_dir}: {folder} holds files that are not a report's (the report replaces its {sub}/ "
                             "folder whole); give another output folder")
    check_out_file(out_dir / "report.html", "-o")
    results = load_results(paths)
    with staged(out_dir, last=("report.html",)) as stage:  # all or nothing: the old report stays until this one is whole
        _build(results, stage, nc, title, headline)
    return out_dir / "report.html"


def _build(results: ResultSet, out_dir: Path, nc, title: str, headline: dict | None) -> Path:
    """The page and its folders, written into ``out_dir`` (the stage of :func:`build_report`)."""
    page = _Page(out_dir)
    sec = {sid: Section(sid, heading) for sid, heading in SECTIONS}

    sec["runs"].add(f"<details><summary>The {len(results.all())} result file(s), their versions and parameters</summary>"
                    f"{_header(page, results)}</details>")

    from stam.figures.admissible import NetworkConstants

    nc = nc or NetworkConstants()
    _figures(sec, page, results, nc)
    for tk in T.TABLES:  # every table kind, in its section, from the results of the types it is built from
        for part in tk.parts(results, nc):
            sec[tk.section].add(part if isinstance(part, str) else page.table(*part))

    sec["headline"].add(_headline(headline, sec))
    findings = _findings(page)
    if findings:
        sec["headline"].add(findings)
    for sid, sentence in INTROS.items():
        sec[sid].intro = sentence
    nav = "".join(f'<li><a href="#{sid}">{html.escape(h)}</a></li>' for sid, h in SECTIONS)

    prov = provenance()
    doc = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body>\n<header><h1>{html.escape(title)}</h1>"
        f'<p class="small">Report made {html.escape(prov["created"])} by {html.escape(_versions(prov))}. '
        "Paper: Bian, Liu, Zhang, <i>A stochastic three-block splitting algorithm and its application to quantized "
        "deep neural networks</i>.</p></header>\n"
        f"<nav><ol>{nav}</ol></nav>\n" + "\n".join(s.html() for s in sec.values()) + "\n</body></html>\n"
    )
    for sub in REPORT_FOLDERS:
        if (out_dir / sub).is_dir():
            (out_dir / sub / REPORT_MARK).write_text("written by stam report\n", encoding="utf-8")
    return atomic_write_text(out_dir / "report.html", doc)


def plot_one(kind: str, paths, out, nc=None) -> tuple[Path, Path]:
    """``stam plot``: one figure as ``out`` with its PNG/PDF twin beside it."""
    from stam.figures.style import save_figure

    out = Path(out)
    if out.is_dir():
        raise UsageError(f"-o {out} is a folder; give a file name FILE.png (FILE.pdf is written beside it)")
    if out.suffix.lower() not in (".png", ".pdf", ""):
        raise UsageError(f"-o {out}: the figure is written as PNG and PDF; give a name ending in .png or .pdf")
    stem = out.with_suffix("") if out.suffix else out
    for ext in (".png", ".pdf"):
        check_out_file(stem.with_name(stem.name + ext), "-o")
    results = load_results(paths)
    try:
        fig = make_figure(kind, results, nc)
    except ValueError as exc:
        raise UsageError(f"cannot draw {kind!r} from {', '.join(map(str, paths)) or 'no results'}: {exc}") from None
    return save_figure(fig, stem)
