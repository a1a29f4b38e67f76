"""`stam report` and `stam plot`: the HTML page parses, is self-contained (embedded PNGs, no
JavaScript, relative links that exist), has every section, and the tables render in Markdown and
LaTeX; user mistakes are one-line errors with exit status 2."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_figures import compare_fixture, paper_check_fixture, rates_fixture, write_all, write_run

from stam.cli import main
from stam.figures import tables as T
from stam.io import latex_escape
from stam.figures.declare import declare_figure
from stam.figures.report import SECTIONS, build_report


class Page(HTMLParser):
    """Collects ids, images, links, scripts and text of a page."""

    def __init__(self):
        super().__init__()
        self.ids, self.imgs, self.links, self.scripts, self.text = [], [], [], 0, []
        self.tables = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "img":
            self.imgs.append(a.get("src", ""))
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        if tag == "script":
            self.scripts += 1
        if tag == "table":
            self.tables += 1

    def handle_data(self, data):
        self.text.append(data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def test_report_parses_has_every_section_is_self_contained_and_links_its_data(tmp_path):
    """One report built from every result kind (one test: building it is the expensive part)."""
    inputs = write_all(tmp_path / "results")
    report = tmp_path / "report"
    assert main(["report", *map(str, inputs), "-o", str(report)]) == 0
    page = parse(report / "report.html")
    for sid, _ in SECTIONS:
        assert sid in page.ids, sid
    assert page.scripts == 0
    # rates and training and practice (admissible too once the theory part is there)
    assert len(page.imgs) >= 3
    for src in page.imgs:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:4] == b"\x89PNG"
    for href in page.links:
        if href.startswith("#"):
            assert href[1:] in page.ids
        else:
            assert not href.startswith(("/", "http:", "https:", "file:")), href
            assert (report / href).is_file(), href
    text = " ".join(page.text)
    assert "Rem=09836" in text and "misprint" in text  # paper-check table
    assert "K1 < 0 below the printed root" in text and '"gamma": 0.1' in text  # meaning, numbers folded
    assert "regression" in text and "sparse" in text  # both rates problems
    assert "spring" in text  # comparison table
    assert "Our1" in text and "STAM (admissible)" in text  # accuracy table
    assert "Created" in text and "stam 0.1.0" in text  # provenance header
    assert page.tables >= 6

    # each figure links to its data (copied beside the page), each table has Markdown and LaTeX
    html = (report / "report.html").read_text()
    assert 'href="data/rates-regression.json"' in html and 'href="data/rates-regression.csv"' in html
    assert 'href="data/pep.json"' in html
    assert "data/mlp-bc-s0-log.jsonl" in html
    assert (report / "figures" / "rates.pdf").read_bytes()[:4] == b"%PDF"
    for name in ("paper-check-0", "compare-regression", "accuracy-digits"):
        assert (report / "tables" / f"{name}.md").read_text().startswith("**")
        assert "\\begin{tabular}" in (report / "tables" / f"{name}.tex").read_text()
    assert not list(report.rglob(".*.tmp"))  # atomic writes left nothing behind

    # a report folder holds data/ copies of its inputs: reading it again finds no result twice
    from stam.figures.results import load_results

    assert sum(len(v) for v in load_results([report]).by_kind.values()) == 0


def test_report_with_nothing_still_has_every_section(tmp_path):
    assert main(["report", "-o", str(tmp_path)]) == 0
    page = parse(tmp_path / "report.html")
    assert all(sid in page.ids for sid, _ in SECTIONS)
    assert "No results of this kind were given." in " ".join(page.text)


def test_plot_writes_png_and_pdf(tmp_path, capsys):
    write_all(tmp_path)
    assert main(["plot", "rates", str(tmp_path / "rates-regression.json"), "-o", str(tmp_path / "r.png")]) == 0
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "r.pdf").is_file()
    assert main(["plot", "training", str(tmp_path / "runs"), "-o", str(tmp_path / "t.pdf")]) == 0
    assert (tmp_path / "t.png").is_file()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["plot", "rates", "-o", "x.png"], "cannot draw 'rates'"),
        (["plot", "practice", "{runs}/mlp-bc-s0", "-o", "x.png"], "proxies"),
        (["plot", "rates", "{root}/missing.json", "-o", "x.png"], "no such file"),
        (["plot", "rates", "{root}/bad.json", "-o", "x.png"], "not valid JSON"),
        (["plot", "rates", "{root}/other.json", "-o", "x.png"], "not a result"),
        (["plot", "rates", "{root}/rates-regression.json", "-o", "x.svg"], ".png or .pdf"),
        (["plot", "admissible", "-o", "x.png", "--eps", "-1"], "must be > 0"),
    ],
)
def test_user_mistakes_are_one_line_errors(tmp_path, capsys, argv, message):
    write_all(tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "other.json").write_text(json.dumps({"hello": 1}))
    argv = [a.format(root=tmp_path, runs=tmp_path / "runs") for a in argv]
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse type errors
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


# -- tables ------------------------------------------------------------------------------------


def test_accuracy_table_layout_and_seeds(tmp_path):
    summaries = []
    for algo, preset, seed, acc in (("float", None, 0, 90.0), ("bc", None, 0, 80.0), ("bc", None, 1, 82.0),
                                    ("stam", "our3", 0, 85.0), ("psgd", None, 0, 50.0)):
        d = write_run(tmp_path, algo, preset, seed=seed, model="vgg11")
        s = json.loads((d / "summary.json").read_text())
        s.update(best_test_acc_binary=acc, dataset="cifar10")
        # runs with a validation split whose selected epoch is their best test epoch (the table shows selected_*)
        s.update(selected_test_acc_binary=acc, selected_test_acc_float=s.get("best_test_acc_float"))
        summaries.append(s)
    t = T.accuracy_table(summaries, "cifar10")
    assert t.header == ["DNN", "Float", "PSGD", "BC", "BR", "Our1", "Our2", "Our3"]  # Table cifar-res
    assert [r[0] for r in t.rows] == ["VGG-11", "VGG-16", "ResNet-18"]
    vgg11 = dict(zip(t.header, t.rows[0]))
    assert vgg11["Float"].startswith("62.00")  # float column: the float network's accuracy
    assert vgg11["BC"] == "81.00 ± 1.41 (n=2, 4 epochs) [paper 88.59]"  # short runs beside the paper's 1000 epochs
    assert vgg11["BR"] == "–"
    md, tex = t.to_markdown(), t.to_latex()
    assert md.count("\n|") == 5 and "| VGG-11 |" in md
    assert "\\pm" in tex and tex.count("\\hline") == 5 and "\\begin{tabular}{|c|c|c|c|c|c|c|c|}" in tex


def test_other_tables_render():
    assert T.paper_check_table(paper_check_fixture()).rows[0][1] == "misprint"
    c = T.compare_table(compare_fixture())
    assert [r[0] for r in c.rows] == ["stam", "spring-sgd", "bc"]
    r = T.rates_table(rates_fixture())
    assert len(r.rows) == 5 and r.rows[-1][3] == "no"
    assert latex_escape("a_b & 50% {x}") == r"a\_b \& 50\% \{x\}"
    assert "|" not in T.Table("c", ["a|b"], [["x|y"]]).to_markdown().replace("\\|", "").replace("| ", "").replace(" |", "").replace("|---|", "")


def test_the_figure_registry_is_consistent():
    """Every figure kind declares a report section that exists, sources that are result kinds the
    toolkit validates, and functions that import; `stam plot` takes exactly the registered names."""
    from stam.cli import build_parser
    from stam.figures import kinds
    from stam.figures.report import SECTIONS
    from stam.figures.results import kinds as result_kinds

    sections = {sid for sid, _ in SECTIONS}
    for fk in kinds.FIGURES:
        assert fk.section in sections, fk
        assert set(fk.sources) <= set(result_kinds()), fk
        assert callable(fk.draw) and fk.module == fk.draw.__module__ and fk.module in kinds.MODULES
        assert isinstance(fk.caption, str) or callable(fk.caption)
        assert fk.help.startswith(fk.name + " ("), fk
    assert len(set(kinds.NAMES)) == len(kinds.FIGURES) == 8
    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices and "plot" in a.choices)
    plot = sub.choices["plot"]
    kind = next(a for a in plot._actions if a.dest == "kind")
    assert tuple(kind.choices) == kinds.NAMES
    assert plot.description == "KIND: " + "; ".join(f.help for f in kinds.FIGURES) + "."
    with pytest.raises(KeyError, match="choose one of: admissible, rates"):
        kinds.figure_kind("nope")


def test_figure_kinds_are_declared_at_their_draw_functions_in_the_reports_order():
    """Each figure kind is declared by ``@declare_figure`` on its draw function; every module of
    ``figures/`` that declares one is in ``kinds.MODULES`` (else it would never be found), the
    registry lists them in the order of the report's sections (the order ``stam plot --help``
    shows), and no figure is named as a ``"module:function"`` string."""
    import re

    from stam.figures import kinds

    root = Path(__file__).resolve().parents[1] / "figures"
    declaring = {f"stam.figures.{p.stem}" for p in root.glob("*.py")
                 if re.search(r"^@declare_figure\(", p.read_text(encoding="utf-8"), re.M)}
    assert declaring == set(kinds.MODULES)
    assert {fk.module for fk in kinds.FIGURES} == declaring
    order = [sid for sid, _ in SECTIONS]
    assert [order.index(fk.section) for fk in kinds.FIGURES] == sorted(order.index(fk.section) for fk in kinds.FIGURES)
    assert not re.search(r"stam\.figures\.\w+:(draw|caption)", (root / "kinds.py").read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match="figure kind 'rates' is declared twice: in stam.figures.rates and in "
                                         "somewhere.else"):
        def draw(results, nc=None):
            return None
        draw.__module__ = "somewhere.else"
        declare_figure("rates", sources=(), section="rates", caption="", help="rates ()")(draw)
    assert kinds.figure_kind("rates").module == "stam.figures.rates"


def test_plot_help_and_the_figure_registry_import_no_matplotlib():
    """Finding the figure kinds, building the command line and ``stam plot --help`` import no
    matplotlib (the figure modules import it when they draw); importing the registry alone imports
    no figure module."""
    import subprocess
    import sys

    code = ("import sys, contextlib, io\n"
            "import stam.figures.kinds as k\n"
            "alone = sorted(m for m in k.MODULES if m in sys.modules)\n"
            "from stam.cli import build_parser, main\n"
            "build_parser(); k.figure_kinds()\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    try:\n"
            "        main(['plot', '--help'])\n"
            "    except SystemExit:\n"
            "        pass\n"
            "assert 'KIND: admissible (' in out.getvalue(), out.getvalue()\n"
            "print(alone, 'matplotlib' in sys.modules, all(m in sys.modules for m in k.MODULES))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "False", "True"]


def test_the_table_registry_is_consistent():
    """Every table kind declares a report section that exists and sources that are result kinds the
    readers find; names are unique (the report shows every one, with no list of its own)."""
    from stam.figures.report import SECTIONS
    from stam.figures.results import kinds

    KINDS = kinds()

    assert {tk.section for tk in T.TABLES} <= {sid for sid, _ in SECTIONS}
    assert all(set(tk.sources) <= set(KINDS) for tk in T.TABLES)
    assert len({tk.name for tk in T.TABLES}) == len(T.TABLES)
    assert {s for tk in T.TABLES for s in tk.sources} == set(KINDS) - {"convergence-map"}  # the map is a figure only


def test_the_report_states_the_committed_findings_first(tmp_path):
    """``stam report`` shows the findings table of the generator that ``stam findings`` prints (the committed
    results, each with its scope and the command that reproduces it) in its first section, and writes it to
    tables/findings.md as the same rows."""
    import html

    from stam.figures.findings import HEADER, committed_rows

    rows = committed_rows()
    assert rows and len(rows) <= 6
    assert main(["report", "-o", str(tmp_path)]) == 0
    text = (tmp_path / "report.html").read_text(encoding="utf-8")
    head = text[text.index('<section id="headline">'):text.index('<section id="paper-check">')]
    assert html.escape("The toolkit's findings, from its committed result files") in head
    for claim, number, command, files in rows:
        assert html.escape(claim) in head and html.escape(number) in head and html.escape(command) in head
    md = (tmp_path / "tables" / "findings.md").read_text(encoding="utf-8")
    assert "| " + " | ".join(HEADER) + " |" in md and md.count("\n| ") == len(rows) + 1


def test_the_report_leads_with_its_message_and_ends_with_provenance(tmp_path):
    """The headline lines come first, each linked to its section, with a figure in the first
    screen; every section opens with what it shows; provenance is last and folded."""
    from stam.figures.report import INTROS, build_report

    write_all(tmp_path)
    lines = {"audit": "Paper audit: 68 items <b>", "map": "Convergence map binary: 25 cells"}
    path = build_report(sorted(tmp_path.glob("*.json")), tmp_path / "out", headline=lines)
    text = path.read_text()
    order = [text.index(f'<section id="{sid}">') for sid, _ in SECTIONS]
    assert order == sorted(order) and SECTIONS[0][0] == "headline" and SECTIONS[-1][0] == "runs"
    head = text[order[0] : order[1]]
    assert "Paper audit: 68 items &lt;b&gt;" in head and '<a href="#paper-check">' in head and '<a href="#map">' in head
    assert "<figure" in head and "<img" in head  # a figure before the first section of detail
    import re

    copied = re.search(r'<figure data-copy-of="(fig-[\w-]+)"', head).group(1)
    assert text.count(f'<figure id="{copied}"') == 1  # the copy in the headline has no id of its own
    assert all('<p class="intro">' in text[order[i] : order[i + 1] if i + 1 < len(order) else None]
               for i, (sid, _) in enumerate(SECTIONS) if sid in INTROS)
    assert "<details><summary>The " in text[order[-1]:]


def test_the_report_tables_the_region_of_the_papers_class(tmp_path):
    """The pep section holds the region of a lyapunov-region file, the paper's class beside convex F, with the
    normalisation said (M0'_T) and Theorem conv's own region."""
    region = Path(__file__).parents[1] / "benchmarks" / "results" / "lyapunov_region.json"
    table = T.region_table(json.loads(region.read_text()))
    assert table.header[2] == "any proper lsc F: paper form" and "convex F: any one-step potential" in table.header
    assert "M\u2080'_T" in table.caption and "printed" in table.caption
    data = json.loads(region.read_text())
    row = sorted(data["rows"], key=lambda r: r["lam"])[-1]
    assert table.rows[-1][2].rstrip("?") == T.fmt(row["paper"]["lo"] * row["lam"], 3)
    html = build_report([region], tmp_path / "rep").read_text()
    assert "Certified region (stam pep --region" in html and "Theorem conv&#x27;s region certified" in html


def test_the_audit_table_leads_with_what_is_wrong_and_folds_the_ok_items():
    """Issue 37, point 5: false, misprint, unproven and gap rows first (in that order, the paper's order within
    each), any other verdict next, the ok ones last and folded in HTML (<details>, a table of their own); the
    Markdown keeps every row; the label column is a column of its own class (no word broken, report.CSS)."""
    from stam.figures.report import CSS

    verdicts = ["ok", "gap", "misprint", "ok", "false", "unproven", "failed to derive", "false"]
    findings = [{"label": f"item{i}", "printed": "a", "derived": "b", "verdict": v} for i, v in enumerate(verdicts)]
    t = T.paper_check_table(findings)
    assert [(r[0], r[1]) for r in t.rows] == [("item4", "false"), ("item7", "false"), ("item2", "misprint"),
                                             ("item5", "unproven"), ("item1", "gap"), ("item6", "failed to derive"),
                                             ("item0", "ok"), ("item3", "ok")]
    page = t.to_html()
    lead, folded = page.split('<details class="folded-rows"><summary>the 2 ok items</summary>')
    assert lead.count("<tr>") == 1 + 6 and folded.count("<tr>") == 1 + 2 and folded.endswith("</table></details>")
    assert "item0" in folded and "item0" not in lead and lead.startswith('<table class="audit">')
    assert t.to_markdown().count("| item") == 8
    assert "table.audit td:first-child{max-width:14em;overflow-wrap:normal" in CSS  # its words unbroken: test_report_browser.py
    assert "<details" not in T.paper_check_table(findings[1:3]).to_html()  # nothing ok: nothing folded


def test_every_table_says_its_problem_and_parameters():
    """Issue 37, point 5: the admissible-step table names its problem, eps, delta0 and M0' (a gamma and a T_min
    without them say nothing); two rates tables of one problem differ by their parameters (the paper's Our1
    preset named) and a flat fit reads as flat; the comparison names its budget and steps."""
    rec = {"params": {"problem": "binary", "eps": 0.1, "delta0": 0.7728, "M0": 63.37, "L1": 0.05}, "gamma": 3.2e-7,
           "T_min": 2.4e12}
    cap = T.stepsize_table(rec).caption
    assert "problem binary" in cap and "eps = 0.1" in cap and "delta0 = 0.7728" in cap and "M0' = 63.37" in cap
    assert "the constants given: eps = 0.1" in T.stepsize_table({"params": {"eps": 0.1}, "gamma": 1.0}).caption
    ours = rates_fixture()
    ours["params"] = {"lam": 1.0, "gamma": 0.1, "gamma_rule": "0.5 * gamma_max", "R": 8}
    our1 = rates_fixture()
    our1["params"] = {"lam": 0.5, "gamma": 8.0, "gamma_rule": "given", "preset": "paper-our1", "R": 32}
    our1["slope"] = 7.39e-17
    a, b = T.rates_table(ours).caption, T.rates_table(our1).caption
    assert a != b and "gamma = 0.1" in a and "preset paper-our1" in b and "gamma = 8" in b and "lam = 0.5" in b
    assert "fitted slope 0 (flat)" in b and "7.39e-17" not in b
    comp = compare_fixture()
    comp["params"] = {"lam": 1.0, "gamma": 0.1, "beta": 528.08, "budget": 4096, "R": 8}
    assert "budget = 4096" in T.compare_table(comp).caption and "beta = 528.1" in T.compare_table(comp).caption
