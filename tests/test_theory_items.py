"""The audit as items (stam.theory.papercheck.items): every registered item is tested against its known
verdict (as PEPit's examples are tested against their known bounds), the verdict is the one rule
applied to what the item returns, a broken derivation is reported and never crashes the command,
coverage is counted in the paper's source, the corrected statements are written atomically, and
MathML that reaches HTML is sanitised."""

import json
import re

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.cli import main
from stam.theory.papercheck import audit
from stam.theory.symbolic import chain
from stam.theory.papercheck.items import common
from stam.theory.symbolic import constants as k
from stam.theory.papercheck import corrected as corr
from stam.theory.papercheck import items as I
from stam.theory.papercheck.items import coverage as cov
from stam.theory.symbolic.mathml import mathml, sanitize

#: every item and its known verdict
KNOWN = {
    'ass1, stochastic G (b-nice sampling is unbiased)': 'ok',
    'eq500 (G_i(x) for G_i(y))': 'misprint',
    '422 / rem1 (ES contains bounded variance)': 'ok',
    'eq101 (Lemma es-lemma A, C)': 'false',
    'G_i^inf (proof of Lemma es-lemma)': 'misprint',
    'ass2 (a1)-(a3): G + H(x, .) is L-smooth': 'ok',
    "ass2 (a3): L5* omitted from 'there exist'": 'ok',
    'gap: H bounded below (Lemma ES-GH, Lemma conv-lemma)': 'gap',
    'Lemma ES-GH (gh-es)': 'ok',
    'k1 vs eq36 (K1)': 'ok',
    'Rem=09836 (threshold of K1 > 0)': 'false',
    'Lemma conv-lemma (K3, M = 2 K3)': 'unproven',
    'Lip-lemma': 'ok',
    'eq100 (Young, Jensen, E v_i^2)': 'ok',
    'eq2 (y-step)': 'ok',
    'eq3': 'ok',
    'eq4': 'ok',
    'eq5': 'ok',
    'eq7': 'ok',
    'eq8': 'ok',
    'eq9': 'ok',
    'eq10': 'ok',
    'eq11 = eq200 (Lemma par1)': 'ok',
    'gap: conditional unbiasedness (eq5)': 'gap',
    'eq260 (strong convexity of the x-subproblem)': 'ok',
    'eq261, eq262 (u-step minimality, sum)': 'ok',
    'eq263 (identity)': 'ok',
    'eq264 (eq262 with eq263)': 'ok',
    'eq650 (identity)': 'ok',
    'eq265 (eq260 + eq261 with eq263, eq650)': 'ok',
    'eq13, eq21, eq22, eq15 (optimality of the x-step)': 'ok',
    'eq23 (monotone gradient)': 'ok',
    'eq31 (identity)': 'ok',
    'eq34 (triangle, H-xlip, Hx-ylip)': 'ok',
    'eq651 (M_t, Phi)': 'ok',
    'gap: z^{-1}, z^0, u^0 undefined (start of Algorithm 1)': 'gap',
    'gap: the u-step may have no minimiser (F only proper, lsc)': 'gap',
    'gap: M = 2 K3 may be 0 (Lemma par1 asks M > 0)': 'gap',
    'eq24': 'ok',
    'eq25': 'false',
    'eq26': 'false',
    'eq27': 'false',
    'eq300': 'false',
    'eq35': 'ok',
    'eq36': 'unproven',
    'eq39': 'unproven',
    'K3 (eq39), M = 2 K3': 'unproven',
    'eq38 (eq36 rearranged)': 'unproven',
    'Lemma par2 (eq250, K3)': 'unproven',
    'eq43, eq44 (Phi expanded, expectation)': 'ok',
    'eq45, eq46 (M = 2 K3)': 'ok',
    'eq47, eq48 (weights, telescoping) = ineq1': 'ok',
    "gap: M'_0 may be infinite (inf_t M_t)": 'gap',
    'eq49, eq50 (weighted average, W_T)': 'ok',
    'gap: eq51 takes min_t of a sum from a sum of mins': 'gap',
    'eq400 (Young, Hy-ylip)': 'ok',
    'eq16, eq17, eq401 (optimality of the u-step)': 'ok',
    'eq402 (dist^2)': 'ok',
    'gap: dF is not defined for a nonconvex F': 'gap',
    'eq403': 'misprint',
    'eq52': 'misprint',
    'Theorem conv (con-inequality, M from K3)': 'unproven',
    'conv-rate beta conditions': 'false',
    'conv-rate upper bound on beta (eq703)': 'false',
    'eq700 ((1+q)^T <= e <= 3)': 'ok',
    'eq704 -> eq705 (T bound)': 'ok',
    'conv-rate conclusion (Jensen)': 'ok',
    'alg:stamm vs Algorithm 1': 'misprint',
    'network constants (H = (lam/2)||x-y||^2)': 'ok',
    'gap: Q of eq01 not closed (s_i in (0, inf))': 'gap',
    'gap: (a1) has no L1 for a network loss': 'gap',
    'gap: A, C undefined in Lemma conv-lemma': 'gap',
}

REGISTRY = I.registry()
EVALUATED = {ev.item.label: ev for ev in audit.evaluated()}


def test_every_registered_item_has_a_known_verdict():
    assert [it.label for it in REGISTRY] == list(KNOWN)


@pytest.mark.parametrize("it", REGISTRY, ids=lambda it: it.label)
def test_item(it):
    ev = EVALUATED[it.label]
    assert ev.result is not None, ev.error
    r = ev.result
    assert ev.verdict == I.verdict(r) == KNOWN[it.label]
    kind, ce = I.evidence(r)
    if ev.verdict in ("misprint", "false", "unproven"):  # a counterexample: numbers that can be replayed
        assert isinstance(ce, dict) and ce
        json.dumps(common.rounded(ce), default=str)
        assert (ev.verdict == "misprint") == any(o.agrees and o.printed for o in r.elsewhere)
        assert kind == ("premises" if ev.verdict == "unproven" else kind) and kind in ("instance", "run", "premises")
    else:
        assert r.counterexample is None and kind in (("witness",) if ev.verdict == "gap" else ("proof", "sampled"))
    if ev.verdict == "unproven":  # the search on actual runs that failed to find a counterexample, stated
        srch = r.search_result()
        assert srch.found is None and srch.instances > 0 and srch.steps >= srch.instances and srch.classes
        assert srch.closest["margin"] >= 0  # negative iff the print fails on that run
    if ev.verdict == "gap":
        assert r.gap.uses and r.gap.states and r.gap.closes
    labels = set(re.findall(r"\\label\{([^}]*)\}", cov.read_paper()))
    for lab in it.covers:  # the labels an item claims exist in the paper
        assert lab in labels, lab


def test_the_rule():
    gap = I.Gap("u", "s", "c")
    yes, no = I.Occurrence("w", True), I.Occurrence("w", False)
    assert I.verdict(I.Result("p", "d", None)) == "ok"
    assert I.verdict(I.Result("p", "d", None, gap=gap)) == "gap"
    assert I.verdict(I.Result("p", "d", {"x": 1}, (no, yes))) == "misprint"
    assert I.verdict(I.Result("p", "d", {"x": 1}, (no,))) == "false"
    assert I.verdict(I.Result("p", "d", {"x": 1}, (), gap)) == "false"
    implied = I.Occurrence("the proof's needs", True, printed=False)  # a form the paper implies is no print
    assert I.verdict(I.Result("p", "d", {"x": 1}, (implied,))) == "false"
    assert I.verdict(I.Result("p", "d", {"x": 1}, (implied,), evidence="run")) == "false"
    none_found = I.Search("m", ("c",), 3, 9)
    found = I.Search("m", ("c",), 3, 9, found={"t": 1})
    assert I.verdict(I.Result("p", "d", {"x": 1}, (yes,), evidence="premises", search=none_found)) == "unproven"
    assert I.verdict(I.Result("p", "d", {"x": 1}, evidence="premises", search=lambda: none_found)) == "unproven"
    r = I.Result("p", "d", {"x": 1}, evidence="premises", search=found)  # the search upgrades it
    assert I.verdict(r) == "false" and I.evidence(r) == ("run", {"t": 1})
    assert I.verdict(I.Result("p", "d", None, evidence="sampled")) == "ok"
    for bad in (I.Result("p", "d", {"x": 1}, evidence="premises"),  # unproven without its search
                I.Result("p", "d", None, evidence="run"), I.Result("p", "d", {"x": 1}, evidence="proof"),
                I.Result("p", "d", None, evidence="hearsay")):
        with pytest.raises(ValueError):
            I.verdict(bad)
    it = I.Item("no search", (), lambda: I.Result("p", "d", {"x": 1}, evidence="premises"), "test", 0)
    assert I.evaluate(it).verdict == "failed to derive"


def test_gap_witnesses():
    g = {label: EVALUATED[label].result.gap for label in KNOWN if KNOWN[label] == "gap"}
    start = g["gap: z^{-1}, z^0, u^0 undefined (start of Algorithm 1)"].witness
    assert start["eq34 fails"] and start["||z^0 - z^{-1}||"] > start["eq34 right side at t = 0"]
    w = g["gap: eq51 takes min_t of a sum from a sum of mins"].witness
    assert w["min (a + b)"] > w["min a + min b"]
    w = g["gap: conditional unbiasedness (eq5)"].witness
    assert w["E g~(y) - grad G(y) for fixed y"] == "0" and w["at beta = 2"][0] != w["at beta = 2"][1]
    assert g["gap: H bounded below (Lemma ES-GH, Lemma conv-lemma)"].witness["H^inf"] == "-oo"
    assert g["gap: the u-step may have no minimiser (F only proper, lsc)"].witness["at gamma = 1"] < 0
    assert min(g["gap: M'_0 may be infinite (inf_t M_t)"].witness["Hessian eigenvalues of M (gamma = 1)"]) < 0


def test_a_derivation_that_raises_is_reported_not_fatal(monkeypatch, capsys):
    def broken():
        raise ZeroDivisionError("a wrong derivation")

    bad = I.Item("broken item", ("eq2",), broken, "test", 0)
    ev = I.evaluate(bad)
    assert ev.verdict == "failed to derive" and "ZeroDivisionError" in ev.error
    done = audit.evaluated()  # the real items, evaluated once; the command gets them and the broken one
    monkeypatch.setattr(I, "registry", lambda: (*REGISTRY, bad))
    monkeypatch.setattr(audit, "evaluated", lambda: (*done, I.evaluate(bad)))
    monkeypatch.setenv("STAM_CACHE_DIR", "off")  # derived now, whatever a store holds
    audit.findings.cache_clear()
    try:
        assert main(["paper-check", "--brief"]) == 0
        out = capsys.readouterr().out
        rows = [line for line in out.splitlines() if line.startswith("broken item")]
        assert re.search(r"^broken item\s+\(40\)\s+failed to derive\s+none", out, re.M), rows or out[-3000:]  # eq2 is printed (40)
        assert "1 failed to derive" in out
        assert main(["paper-check", "--json"]) == 0
        row = json.loads(capsys.readouterr().out)[-1]
        assert row["verdict"] == "failed to derive" and "ZeroDivisionError" in row["error"]
    finally:
        audit.findings.cache_clear()


def test_a_mutated_derivation_is_caught(monkeypatch):
    """Lemma ES-GH with a wrong derived A (a factor 2 lost) is no longer ok."""
    es = k.es_gh()
    monkeypatch.setattr(k, "es_gh", lambda: {"A": es["A"] / 2, "C": es["C"]})
    it = next(i for i in REGISTRY if i.label == "Lemma ES-GH (gh-es)")
    assert I.evaluate(it).verdict != "ok"


def test_a_mutated_print_is_caught(monkeypatch):
    """eq35 printed with 4 (gamma L4*)^2 for 5 (gamma L4*)^2 is not implied by its derivation."""
    g, L2, L4 = chain.gamma, chain.L2, chain.L4
    monkeypatch.setitem(chain.PRINTED, "eq35", sp.Rational(5, 4) * (1 + g * L2) ** 2 * chain.X
                        + 4 * (g * L4) ** 2 * chain.Y - chain.Z)
    chain.derivation.cache_clear()
    try:
        st_ = next(s for s in chain.derivation()["steps"] if s.label == "eq35")
        assert chain.compare(st_.printed, st_.derived).verdict == "not implied"
    finally:
        chain.derivation.cache_clear()


# -- coverage ---------------------------------------------------------------------------------

def test_coverage_is_complete_and_counted_in_the_source():
    c = cov.coverage(REGISTRY, cov.read_paper())
    tex = cov.read_paper()
    n_eq = len(re.findall(r"\\begin\{equation\}\\label", tex))  # an independent, cruder count
    assert c["total"] == 86 and c["by_kind"]["display"]["total"] >= n_eq - 12  # 12 equations are outside
    assert c["audited"] == c["total"] and not c["missing"] and not c["unknown"]
    assert c["outside"] == ["0411", "0412", "binary-model", "eq01", "stam"]  # the well-posedness gaps also cover these


def test_parse_labels():
    tex = r"""
\section{Intro}\begin{equation}\label{a}x\end{equation}
\section{Two}\label{sec2}
\begin{lemma}\label{L}  % \label{commented}
\begin{equation}\label{b}\begin{aligned}y\end{aligned}\end{equation}\end{lemma}
\begin{figure}\label{fig}\end{figure}
\section{Three}\begin{equation}\label{c}\end{equation}
\begin{appendices}\section{A}\begin{align}x\label{d}\end{align}\end{appendices}
"""
    lab = cov.parse_labels(tex)
    assert lab.section2 == {"L": "lemma", "b": "display"} and lab.appendices == {"d": "display"}


def test_paper_option(tmp_path, capsys):
    paper = tmp_path / "p.tex"
    paper.write_text(r"\section{1}\section{2}\begin{equation}\label{eq2}\end{equation}\begin{equation}\label{new}"
                     r"\end{equation}\begin{appendices}\end{appendices}")
    assert main(["paper-check", "--brief", "--paper", str(paper)]) == 0
    out = capsys.readouterr().out
    assert "Coverage: 1/2 labels" in out and "not audited: new" in out
    assert main(["paper-check", "--paper", str(tmp_path)]) == 2
    assert "stam: error: --paper" in capsys.readouterr().err


# -- corrected statements ---------------------------------------------------------------------

def test_corrected_documents(tmp_path, capsys):
    out = tmp_path / "erratum"
    assert main(["paper-check", "--brief", "--corrected", str(out)]) == 0
    tex, md = (out / "corrected.tex").read_text(), (out / "corrected.md").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["corrected.md", "corrected.tex"]
    for name in ("Lemma es-lemma", "Lemma ES-GH", "Lemma conv-lemma", "Lemma par1", "Lemma par2", "Theorem conv",
                 "Theorem conv-rate"):
        assert f"{name} (corrected)" in tex and f"## {name} (corrected)" in md
    assert tex.count(r"\begin{enumerate}") == tex.count(r"\end{enumerate}") == 7
    assert tex.startswith(r"\documentclass") and tex.rstrip().endswith(r"\end{document}")
    assert sp.latex(k.K1_expr()) in tex  # constants through sympy's LaTeX printer
    assert r"\beta \leq \frac{T \epsilon^{2}}" in tex  # conv-rate's dropped upper bound on beta
    assert "H^{\\inf}" in md


def test_corrected_bad_folder_writes_nothing(tmp_path, capsys):
    f = tmp_path / "file.txt"
    f.write_text("x")
    assert main(["paper-check", "--corrected", str(f)]) == 2
    assert "--corrected" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


@given(st.text(max_size=60))
def test_tex_text_escapes_every_special(text):
    out = corr.tex_text(text)
    stripped = re.sub(r"\\(textbackslash|textasciitilde|textasciicircum)\{\}|\\[&%$#_{}]", "", out)
    assert not set(stripped) & set("\\&%$#_{}~^")


@given(st.text(max_size=60))
def test_md_text_escapes(text):
    out = corr.md_text(text)
    assert not re.search(r"(?<!\\)[`*_<>\[\]|$]", out.replace("\\\\", ""))


# -- MathML -----------------------------------------------------------------------------------

def test_mathml_rows_and_sanitiser():
    rows = [f.as_json() for f in audit.findings()]
    with_math = [r for r in rows if "derived_mathml" in r]
    assert len(with_math) >= 30  # every step in gap form and every formula item (identities and gaps are text)
    for r in with_math:
        safe = sanitize(r["derived_mathml"])
        assert safe is not None and safe.startswith("<math") and "<script" not in safe


@pytest.mark.parametrize("evil", [
    '<math><script>alert(1)</script><mi>x</mi></math>',
    '<math><mi onclick="alert(1)" mathvariant="bold">x</mi><a href="javascript:1">y</a></math>',
    '<math><mtext>&lt;img src=x onerror=alert(1)&gt;</mtext></math>',
    '<!DOCTYPE math [<!ENTITY e "boom">]><math>&e;</math>', "<div>not math</div>", "<math><mi>x</mi>",
])
def test_sanitiser_removes_what_is_not_mathml(evil):
    out = sanitize(evil)
    if out is not None:
        assert "<script" not in out and "onclick" not in out and "href" not in out and "<a" not in out
        assert "<img" not in out and out.startswith("<math")


@settings(max_examples=30)
@given(st.text(max_size=40))
def test_sanitiser_never_lets_markup_through(text):
    out = sanitize(f"<math><mtext>{text}</mtext></math>")
    if out is not None:
        inner = out[out.index("<mtext>") + 7:out.rindex("</mtext>")]
        assert "<" not in inner


def test_mathml_of_a_formula():
    m = mathml(sp.Ge(k.K1_expr(), 0, evaluate=False))
    assert m.startswith("<math") and "&#" in m and "<mfrac>" in m
    assert sanitize(m) is not None


def test_report_shows_the_formulas_as_sanitised_mathml(tmp_path):
    from html.parser import HTMLParser

    pc = tmp_path / "pc.json"
    assert main(["paper-check", "--out", str(pc)]) == 0
    data = json.loads(pc.read_text())
    assert data["coverage"]["audited"] == data["coverage"]["total"] == 86
    evil = dict(data["items"][0], label="evil <b>", printed_mathml='<math><mi>x</mi><script>alert(1)</script>'
                '<mi onmouseover="alert(2)">y</mi></math>', derived_mathml="<img src=x onerror=alert(3)>")
    data["items"].append(evil)
    pc.write_text(json.dumps(data))
    out = tmp_path / "rep"
    assert main(["report", str(pc), "-o", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")

    class P(HTMLParser):
        tags, attrs = [], []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)
            self.attrs += [a for a, _ in attrs]

    p = P()
    p.feed(page)
    assert "math" in p.tags and "mfrac" in p.tags and "script" not in p.tags
    assert not any(a.startswith("on") for a in p.attrs) and "src=x" not in page and 'src="x"' not in page
    assert "evil &lt;b&gt;" in page and "alert(1)" in page  # the script's text, escaped and inert
    # the verdicts counted and listed by kind (an unproven step or a gap is not a wrong print)
    n = {v: sum(r["verdict"] == v for r in data["items"]) for v in ("ok", "misprint", "false", "unproven", "gap")}
    assert (f"{len(data['items'])} checks ({n['ok']} ok, {n['misprint']} misprint, {n['false']} false, "
            f"{n['unproven']} unproven, {n['gap']} gap)") in page
    assert f"unproven ({n['unproven']}): Lemma conv-lemma (K3, M = 2 K3), " in page
    assert f"gap ({n['gap']}): gap: H bounded below" in page and "not as printed" not in page


def test_a_statement_or_row_that_raises_is_reported(monkeypatch):
    ev = EVALUATED["Lemma ES-GH (gh-es)"]

    def boom():
        raise RuntimeError("no statement")

    bad = I.Evaluated(ev.item, I.Result("p", "d", None, corrected=boom), "ok")
    stmts = corr.statements([bad])
    assert "failed to derive" in str(stmts[0][0].conclusion)
    assert "failed to derive" in corr.markdown_document(stmts)
    monkeypatch.setattr(audit, "finding", lambda ev: 1 / 0)
    row = audit.safe_finding(ev)
    assert row.verdict == "failed to derive" and "ZeroDivisionError" in row.error


def test_corrected_statements_define_their_symbols(tmp_path, capsys):
    """Lemma conv-lemma and Theorems conv, conv-rate define A, C, omega_t, eta_t, delta_t, M_t and
    state the integrability their expectations need (issue 23)."""
    out = tmp_path / "erratum"
    assert main(["paper-check", "--brief", "--corrected", str(out)]) == 0
    md = (out / "corrected.md").read_text()
    for name in ("Lemma conv-lemma", "Theorem conv", "Theorem conv-rate"):
        part = md.split(f"## {name} (corrected)")[1].split("\n## ")[0]
        for sym in (r"$A$ = ", r"$C$ = ", r"$\omega_{t}$ = ", r"\eta_t:=", r"\delta_t:=", r"\mathcal{M}_t:=",
                    r"\Delta_{GH}:=", "omega\\_{-1}", "integrable", r"(G+H)^{\inf}:=", r"\mathcal{F}_t:=", "T\\ge 1"):
            assert sym in part, (name, sym)
        assert sp.latex(k.omega()) in part and sp.latex(k.es_gh()["A"]) in part
    # the one-step lemmas too: what they use is defined, and the integrability their expectations need
    needs = {"Lemma par1": (r"$A$ = ", r"$C$ = ", r"\eta_t:=", r"\delta_t:=", r"(G+H)^{\inf}:=", r"\mathcal{F}_t:=",
                            r"$L$ = ", "integrable"),
             "Lemma par2": (r"$K_{1}$ = ", r"$K_{2}$ = ", r"$K_{3}$ = ", r"\mathcal{M}_t:=", "integrable")}
    for name, syms in needs.items():
        part = md.split(f"## {name} (corrected)")[1].split("\n## ")[0]
        for sym in syms:
            assert sym in part, (name, sym)
    tex = (out / "corrected.tex").read_text()
    assert r"\text{A, C (what they are)} &= \text{any constants" in tex
    from stam.theory.papercheck.items.numbering import printed_numbers

    nums = printed_numbers(cov.read_paper())
    from stam.theory.papercheck.corrected import md_text, tex_text

    assert md_text(f"{nums['conv-lemma'].text} in the paper's printed numbering") in md
    assert tex_text(f"{nums['conv'].text} in the paper") in tex
    # Lemma conv-lemma's number rests on the undeclared assumption counter: the other numbering beside it
    assert nums["conv-lemma"].alternative_text == "Lemma 8"
    assert md_text("(*: Lemma 8 if the paper's undeclared assumption environment shares the theorem counter)") in md


# ----------------------------------------------------------------------------- what is true for the network (issue 39)
def test_eq25_fails_on_runs_only_below_minus_lam_plus_one_over_two():
    """eq25 for H = (lam/2)||x-y||^2 is (lam/2)||dx - dy||^2 + (lam + 1 + 2l) X / 2 (sympy, through the x-step): its
    counterexample run takes l = -lam with lam > 1, and replayed with the closed form it gives the printed gap; with
    the paper's l = L2* = lam the same run satisfies it.  The note says so."""
    import numpy as np

    from stam.theory.symbolic import symbols as s
    from stam.theory.papercheck.items.chain_items import eq25_network

    net = eq25_network()
    assert net["same"] and sp.simplify(net["threshold"] + (s.lam + 1) / 2) == 0
    r = EVALUATED["eq25"].result
    ce = I.evidence(r)[1]
    lam = ce["instance"]["lam"]
    it = {key: np.array(v) for key, v in ce["iterates"].items()}
    dx, dy = it["x^{t+1}"] - it["x^t"], it["y^{t+1}"] - it["y^t"]
    gap = sp.lambdify((s.lam, s.l, "dx", "dy"), net["gap"].subs({sp.Symbol("dx", real=True): sp.Symbol("dx"),
                                                                 sp.Symbol("dy", real=True): sp.Symbol("dy")}))
    closed = lambda ell: lam / 2 * float((dx - dy) @ (dx - dy)) + (lam + 1 + 2 * ell) * float(dx @ dx) / 2  # noqa: E731
    assert closed(-lam) == pytest.approx(ce["printed_gap"], rel=1e-4) and closed(-lam) < 0 < closed(lam)
    assert lam > 1 and -lam < -(lam + 1) / 2
    assert gap(lam, -lam, 1.0, 1.0) == pytest.approx(-(lam - 1) / 2)
    assert "only when l < -(lam+1)/2" in r.note and "l = L2* = lam it holds" in r.note


def test_l5_omission_is_an_ok_item_with_its_proof():
    r = EVALUATED["ass2 (a3): L5* omitted from 'there exist'"].result
    assert I.verdict(r) == "ok" and I.evidence(r)[0] == "proof" and "L5* = L4* always works" in r.note


def test_theorem_conv_holds_for_the_network_coupling_by_exact_certificates(capsys):
    """Theorem conv's verdict stays 'unproven' (the general H), and beside it the audit says that for H =
    (lam/2)||x-y||^2 it holds at the points where exact certificates prove it, with 1/rho <= 2 beta."""
    pytest.importorskip("cvxpy")
    label = "Theorem conv (con-inequality, M from K3)"
    r = EVALUATED[label].result
    net = r.network_result()
    assert EVALUATED[label].verdict == "unproven" and net.holds and net.evidence == "certificate"
    assert len(net.points) == 4 and all(p["proven"] and 1 <= p["1/(rho beta)"] <= 2 for p in net.points)
    f = {x.label: x for x in audit.findings()}[label]
    assert f.network["holds"] and "network coupling: holds" in audit.brief([f]) and \
        "network coupling: holds" in audit.table([f])
    assert {x.label for x in audit.findings() if x.network is not None} == {label, "eq36", "eq39"}


@pytest.mark.parametrize("label", ["eq36", "eq39"])
def test_eq36_eq39_hold_for_the_network_coupling(label, monkeypatch):
    """The printed eq36 and eq39 (verdict 'unproven' for the general H) are proven for H = (lam/2)||x-y||^2 at 6
    points each by an exact one-step certificate (the u-step's inequality, multiplier 1); a much stronger print (the
    gap less 10 X or 10 Y: at lambda 1, gamma 0.1 the prints hold with some room) is not."""
    from stam.theory.papercheck.items.chain_items import step_network, step_network_proof

    r = EVALUATED[label].result
    net = r.network_result()
    assert EVALUATED[label].verdict == "unproven" and net.holds and net.evidence == "one-step certificate"
    assert len(net.points) == 6 and all(p["proven"] for p in net.points)
    real = chain.step

    class Bent:
        def __init__(self, printed):
            self.printed = printed

    for sym in (chain.X, chain.Y):
        monkeypatch.setattr(chain, "step", lambda lab, _s=sym: Bent(real(lab).printed - 10 * _s))
        assert not step_network_proof(label, 1.0, 0.1, 220.0)
    monkeypatch.setattr(chain, "step", real)
    assert step_network_proof(label, 1.0, 0.1, 220.0) and not step_network("eq25").holds
