"""`stam demo`: the quick demo runs end to end (a pipeline of library calls) and leaves a complete
report; a missing optional extra is reported as such; a failing step sets exit status 1; the
output folder is replaced atomically and never someone else's."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from stam.cli import main
from stam.figures import demo as D
from stam.figures.report import SECTIONS

ROOT = Path(__file__).resolve().parents[1]


class Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.imgs = [], 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.ids += [a["id"]] if "id" in a else []
        self.imgs += tag == "img"


@pytest.fixture(scope="module")
def quick_demo(tmp_path_factory):
    """One ``stam demo --quick`` for the tests of this module: (its folder, what it printed)."""
    import contextlib
    import io

    out, buf = tmp_path_factory.mktemp("quick") / "demo", io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["demo", "--quick", "--no-progress", "-o", str(out)]) == 0
    return out, buf.getvalue()


def test_quick_demo_end_to_end(quick_demo):
    out, printed = quick_demo
    record = json.loads((out / "demo.json").read_text())
    steps = {s["name"]: s for s in record["steps"]}
    assert list(steps) == ["paper audit", "synthetic rate experiment", "synthetic baselines", "admissible step sizes",
                           "exact worst case (PEP)", "certified region (Lyapunov search)", "convergence map", "equal-budget tuning", "digits convergence map",
                           "digits training curves", "report"]
    # every part of the toolkit is wired: no step missing or failed
    assert {s["status"] for s in steps.values()} == {"ok"}, {k: s["message"] for k, s in steps.items()}
    assert f"Report: {out / 'report.html'}" in printed
    lines = printed.splitlines()
    conclusion = next(line for line in lines if line.startswith("Conclusion"))
    # the README's answers first, from the committed results (the generator of stam findings), then this run's own
    # numbers, labelled as an illustration at smoke-test budgets
    from stam.figures.findings import committed_conclusion

    committed = committed_conclusion()
    assert committed and conclusion.startswith("Conclusion (committed results, stam findings): " + committed[:1].upper())
    assert "BC on digits" in committed and "CIFAR-10" in committed and "the two regions do not meet" in committed
    illustration = conclusion.split(" Illustration (--quick, smoke-test budgets, not a result): ", 1)[1]
    assert "its region search certifies STAM up to gamma*lambda = " in illustration and "points" in illustration
    assert record["conclusion"] == conclusion
    assert lines.index(conclusion) < lines.index(next(line for line in lines if line.startswith("Report:")))
    marked = [line for line in lines if line.startswith("  ")]
    assert len(marked) == 6 and all(len(m) <= 162 for m in marked)  # one short line each; in full in demo.json
    # --quick: every line computed at a reduced budget says so first, the audit (the same in --quick) does not
    assert not marked[0].lstrip().startswith("[") and all(m.lstrip().startswith("[quick] ") for m in marked[1:])
    brief = [m.lstrip().removeprefix("[quick] ") for m in marked]
    assert re.match(r"Paper audit, \d+ items: \d+ false \(Lemma 4\* \(35\), ", brief[0]) and "misprints" in brief[0]
    assert brief[1].startswith("Synthetic binary: min_t E S_t ~ T^")
    assert brief[2].startswith("Certified region (lsc F, points scanned): certified up to gamma*lambda") and "refuted" in brief[2]
    assert brief[3].startswith("Synthetic map: E S_T decreases in") and "of 25" in brief[3]
    assert brief[4].startswith("Digits, tuned alike") and all(k in brief[4] for k in ("STAM", "BC", "BR", "PSGD", "Float"))
    assert brief[5].startswith("Digits map: the binary network trains") and "of 9 cells" in brief[5]
    assert list(record["brief"].values()) == [m.lstrip() for m in marked]
    # every result in full in demo.json, a reduced budget said first
    quick, budget = "[--quick: smoke-test budgets, not results] ", "[smoke-test budget (1 epoch, 2 trials, 2 seeds; "
    full = record["headline"]
    assert full["tune"].startswith(budget) and "these numbers compare nothing] " in full["tune"] and "95% interval" in full["tune"]
    assert full["audit"].startswith("Paper audit:") and full["region"].startswith(quick + "Lyapunov search (1 lambda)")
    import html as _html

    text = (out / "report.html").read_text()
    glance = text[text.index('id="headline"'):]
    assert glance.index('<p class="conclusion"><strong>' + _html.escape(conclusion)) < glance.index("<ul>")  # the conclusion first
    page = Ids()
    page.feed(text)
    assert all(sid in page.ids for sid, _ in SECTIONS)
    assert page.imgs >= 5 and "fig-map" in page.ids  # admissible, rates, map, training, practice
    assert "tuning" in page.ids and "Equal-budget" in (out / "report.html").read_text()
    for name in ("paper-check.json", "stepsize.json", "pep.json", "region.json", "synthetic/rates-binary.json",
                 "synthetic/compare-binary.json", "map/map-binary.json", "map/map-binary.png", "tune/tune-digits.json",
                 "map-digits/map-digits.json"):
        assert (out / name).is_file(), name
    assert len(list((out / "runs").glob("*/summary.json"))) == 3  # STAM admissible, STAM and BC tuned
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # staging folder gone


class Tables(HTMLParser):
    """The page's tables (caption, rows of cell texts) and its paragraphs and list items (texts)."""

    def __init__(self):
        super().__init__()
        self.tables, self.texts, self._text, self._cell = [], [], None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"caption": "", "rows": []})
        elif tag == "tr":
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th", "caption"):
            self._cell = []
        elif tag in ("li", "p"):
            self._text = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1]["rows"][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "caption" and self._cell is not None:
            self.tables[-1]["caption"], self._cell = " ".join("".join(self._cell).split()), None
        elif tag in ("li", "p") and self._text is not None:
            self.texts.append(" ".join("".join(self._text).split()))
            self._text = None

    def handle_data(self, data):
        for part in (self._cell, self._text):
            if part is not None:
                part.append(data)


def accuracy_numbers(page: str, printed: str = "") -> dict:
    """Every test accuracy a report page (and the demo's printed lines) shows, by (algorithm, protocol):
    the equal-budget table's means (protocol: its protocol column without the trial count), the best-accuracy
    tables' cells (protocol: the column's parenthesis), and the one-line summary of the tuning (the tuning
    table's protocol, which it links to). Values: (number, where) pairs."""
    parsed = Tables()
    parsed.feed(page)
    found: dict = {}

    def add(algo, protocol, value, where):
        protocol = re.sub(r",? *\d+ trials?$", "", protocol.strip()).strip().lower()
        found.setdefault((algo.strip(), protocol), []).append((float(value), where))

    for t in parsed.tables:
        head, *rows = t["rows"] or [[]]
        if {"algorithm", "protocol", "test acc. mean ± std"} <= set(head):
            a, p, v = head.index("algorithm"), head.index("protocol"), head.index("test acc. mean ± std")
            for r in rows:
                if re.match(r"[\d.]+", r[v]):
                    add(r[a], r[p], re.match(r"[\d.]+", r[v]).group(), "tuning table")
        elif t["caption"].startswith("Test accuracy (%)"):
            for r in rows:
                for label, cell in zip(head[1:], r[1:]):
                    m, v = re.fullmatch(r"(.*?)(?: \((.*)\))?", label), re.match(r"[\d.]+", cell)
                    if v:
                        add(m.group(1), m.group(2) or "", v.group(), f"best-accuracy table, {r[0]}")
    for where, text in [("At a glance", t) for t in parsed.texts] + [("printed", ln) for ln in printed.splitlines()]:
        m = re.search(r"Digits, tuned alike \([^)]*\): (.*)$", text)
        for name, value in re.findall(r"([\w ]+?) (\d+\.\d)\b", m.group(1) if m else ""):
            add(name, "tuned", value, where)
    return found


def test_one_number_per_algorithm_and_protocol(quick_demo, tmp_path):
    """Issue 37: the demo's report, `stam report` of the demo's folder and the demo's printed lines never show
    two numbers for one algorithm under one protocol (BC's tuned 97.5 ± 2.2 stood beside a 'BC (tuned)' 98.33, a
    single run at the tuned setting); the conclusion's difference is the one of the numbers shown."""
    out, printed = quick_demo
    assert main(["report", str(out), "-o", str(tmp_path / "rep")]) == 0
    for page, lines in ((out / "report.html", printed), (tmp_path / "rep" / "report.html", "")):
        found = accuracy_numbers(page.read_text(encoding="utf-8"), lines)
        assert ("BC", "tuned") in found and any(k[1] != "tuned" for k in found), found  # both kinds of table were read
        for (algo, protocol), values in found.items():
            numbers = [v for v, _ in values]
            # the same number at one or two decimals: within half a unit of the coarser one
            assert max(numbers) - min(numbers) <= 0.05 + 1e-9, f"{page.name}: {algo} ({protocol}) shown as {values}"
    glance = accuracy_numbers((out / "report.html").read_text(encoding="utf-8"), printed)
    assert {w for _, w in glance[("BC", "tuned")]} == {"tuning table", "At a glance", "printed"}
    stam, bc = glance[("STAM", "tuned")][0][0], glance[("BC", "tuned")][0][0]
    said = re.search(r"STAM is (\d+\.\d) points (below|above) BC", printed)
    assert said and float(said.group(1)) == pytest.approx(abs(round(stam, 1) - round(bc, 1)), abs=1e-9)


@pytest.fixture
def short_plan(monkeypatch):
    """The demo with two of its steps (the PEP and the report), so that these tests take seconds."""
    monkeypatch.setattr(D.Demo, "PLAN", (("exact worst case (PEP)", "pep"), ("report", "report")))


def test_a_missing_optional_extra_is_reported_not_hidden(tmp_path, capsys, short_plan, monkeypatch):
    def no_pepit(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'PEPit'", name="PEPit")

    monkeypatch.setattr("stam.theory.worstcase.pep.pep_sweep", no_pepit)
    out = tmp_path / "d"
    assert main(["demo", "--quick", "--no-progress", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "exact worst case (PEP): needs the optional extra 'pep' (pip install 'stam-toolkit[pep]')" in printed
    assert (out / "report.html").is_file()
    steps = json.loads((out / "demo.json").read_text())["steps"]
    assert [s["status"] for s in steps] == ["missing", "ok"]
    # a second demo over the first replaces it as a whole
    (out / "stale.txt").write_text("old")
    assert main(["demo", "--quick", "--no-progress", "-o", str(out)]) == 0
    assert not (out / "stale.txt").exists() and (out / "report.html").is_file()


def test_an_import_error_that_is_not_a_missing_extra_is_a_failure(tmp_path, capsys, short_plan, monkeypatch):
    def broken(*args, **kwargs):
        raise ImportError("cannot import name 'x' from 'stam.theory.symbolic.numeric'", name="stam.theory.symbolic.numeric")

    monkeypatch.setattr("stam.theory.worstcase.pep.pep_sweep", broken)
    assert main(["demo", "--quick", "--no-progress", "-o", str(tmp_path / "d")]) == 1
    assert "exact worst case (PEP) raised ImportError: cannot import name 'x'" in capsys.readouterr().out


def test_a_failing_step_gives_status_1_and_its_log(tmp_path, capsys, short_plan, monkeypatch):
    out = tmp_path / "d"
    out.mkdir()
    (out / D.MARKER).write_text("")
    (out / "keep.txt").write_text("previous demo")

    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("stam.figures.report.build_report", boom)
    assert main(["demo", "--quick", "--no-progress", "-o", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "raised RuntimeError: disk on fire" in printed
    log = next((out / "logs").glob("*-report.txt")).read_text()
    assert "Traceback" in log and "disk on fire" in log
    assert not (out / "keep.txt").exists()  # the new (partial) demo replaced the earlier one as a whole


def test_demo_never_writes_into_a_foreign_folder(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("precious")
    assert main(["demo", "--quick", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "was not written by stam demo" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "mine.txt").read_text() == "precious"
