"""The paper's printed numbering (stam.theory.papercheck.items.numbering), computed from the LaTeX source as
LaTeX numbers it: on small sources whose numbers follow from the rules of article, amsmath and
jmlr2e.sty, and on every label of the paper against independent, cruder counts of its source."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.theory.papercheck.items import coverage as cov
from stam.theory.papercheck.items.numbering import (CLASS_THEOREMS, dependence_note, printed_numbers, printed_text,
                                                    theorem_environments, undeclared_environments)
from stam.theory.params import UNDECLARED_COUNTERS

PAPER = cov.read_paper()
NUMS = printed_numbers(PAPER)


def doc(body: str, preamble: str = "") -> str:
    return "\\documentclass{article}\\usepackage{jmlr2e}" + preamble + "\\begin{document}" + body + "\\end{document}"


def test_rules_on_a_small_source():
    tex = doc(r"""
\section{One}\label{s1}
\begin{equation}\label{e1}a\end{equation}
\begin{equation*}b\end{equation*}
\begin{lemma}\label{L1} \begin{equation}\label{e2}\begin{aligned}x\\y\end{aligned}\end{equation}\end{lemma}
\begin{subequations}\label{sub}\begin{align}a\label{sa}\\ b\nonumber\\ c\label{sc}\end{align}\end{subequations}
\begin{align}p\label{p}\\ q\label{q}\\\end{align}
\begin{remark}\label{R}\end{remark}\begin{theorem}\label{T}\end{theorem}\begin{example}\label{X}\end{example}
\subsection{Sub}\label{ss}
\begin{table}\caption{t}\label{tab}\end{table}\begin{table}\caption{u}\label{tab2}\end{table}
\begin{assumption}\label{A}\end{assumption}
\begin{appendices}\section{P}\label{app}\begin{equation}\label{e9}\end{equation}\section{Q}\label{appq}
\end{appendices}
% \begin{equation}\label{commented}\end{equation}
""")
    n = {k: v.text for k, v in printed_numbers(tex).items()}
    assert n == {"s1": "Section 1", "e1": "(1)", "L1": "Lemma 1", "e2": "(2)", "sub": "(3)", "sa": "(3a)", "sc": "(3b)",
                 "p": "(4)", "q": "(5)", "R": "Remark 2", "T": "Theorem 3", "X": "Example 1", "ss": "Section 1.1",
                 "tab": "Table 1", "tab2": "Table 2", "A": "Assumption 1*", "app": "Appendix A", "e9": "(6)",
                 "appq": "Appendix B"}
    assert not printed_numbers(tex)["A"].declared and printed_numbers(tex)["L1"].declared
    # on the theorem counter the assumption, after Lemma 1, Remark 2, Theorem 3, is Assumption 4; nothing
    # of that counter comes after it, so no other number rests on the choice
    assert printed_numbers(tex)["A"].alternative_text == "Assumption 4"
    assert {k: v.text for k, v in printed_numbers(tex, "theorem").items()} == {**n, "A": "Assumption 4*"}
    assert [k for k, v in printed_numbers(tex).items() if not v.declared] == ["A"]


def test_newtheorem_in_the_preamble_overrides_the_style():
    tex = doc(r"\begin{lemma}\label{a}\end{lemma}\begin{assumption}\label{b}\end{assumption}",
              r"\newtheorem{assumption}[theorem]{Assumption}")
    assert theorem_environments(r"\newtheorem{assumption}[theorem]{Assumption}")["assumption"] == ("theorem", "Assumption")
    n = printed_numbers(tex)
    assert (n["a"].text, n["b"].text) == ("Lemma 1", "Assumption 2") and n["b"].declared


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["equation", "equation*", "lemma", "theorem", "remark", "align2", "align-nonumber"]),
                max_size=12))
def test_counters_on_random_sources(envs):
    """Equations (1), (2), ... in order, one per numbered row; the shared theorem counter 1, 2, ..."""
    body, want_eq, want_thm, k = [], [], [], 0
    for e in envs:
        k += 1
        if e == "equation":
            body.append(rf"\begin{{equation}}\label{{l{k}}}\end{{equation}}")
            want_eq.append(f"l{k}")
        elif e == "equation*":
            body.append(r"\begin{equation*}x\end{equation*}")
        elif e == "align2":
            body.append(rf"\begin{{align}}a\label{{l{k}}}\\b\label{{m{k}}}\end{{align}}")
            want_eq += [f"l{k}", f"m{k}"]
        elif e == "align-nonumber":
            body.append(rf"\begin{{align}}a\nonumber\\b\label{{l{k}}}\end{{align}}")
            want_eq.append(f"l{k}")
        else:
            body.append(rf"\begin{{{e}}}\label{{l{k}}}\end{{{e}}}")
            want_thm.append((f"l{k}", CLASS_THEOREMS[e][1]))
    n = printed_numbers(doc("".join(body)))
    assert [n[lab].text for lab in want_eq] == [f"({i})" for i in range(1, len(want_eq) + 1)]
    assert [n[lab].text for lab, _ in want_thm] == [f"{name} {i}" for i, (_, name) in enumerate(want_thm, 1)]


def test_every_label_of_the_paper_is_numbered():
    labels = cov.parse_labels(PAPER).all
    assert set(labels) <= set(NUMS)
    for lab, kind in labels.items():
        assert NUMS[lab].kind == ("equation" if kind == "display" else "statement"), lab
        assert NUMS[lab].name == ("eq." if kind == "display" else kind.capitalize()), lab


def test_paper_equations_against_a_crude_count():
    """Every equation env before a display label's own environment steps the counter once (the
    paper's one align sits in subequations, which steps it once too): the number of a labelled
    \\begin{equation} is 1 + the count of \\begin{equation} and \\begin{subequations} before it."""
    body = re.sub(r"(?<!\\)%.*", "", PAPER)
    for m in re.finditer(r"\\begin\{equation\}\s*\\label\{([^}]*)\}", body):
        before = body[:m.start()]
        n = len(re.findall(r"\\begin\{equation\}", before)) + len(re.findall(r"\\begin\{subequations\}", before)) + 1
        assert NUMS[m.group(1)].text == f"({n})", m.group(1)


def test_paper_statements_tables_and_appendices_against_crude_counts():
    body = re.sub(r"(?<!\\)%.*", "", PAPER)
    shared = "lemma|theorem|remark|definition|proposition|corollary"
    for m in re.finditer(rf"\\begin\{{({shared})\}}(?:\[[^]]*\])?\s*\\label\{{([^}}]*)\}}", body):
        n = len(re.findall(rf"\\begin\{{(?:{shared})\}}", body[:m.start()])) + 1
        assert (NUMS[m.group(2)].name, NUMS[m.group(2)].number) == (m.group(1).capitalize(), str(n)), m.group(2)
        # with the assumptions on the same counter (--assumption-counter theorem) they count too
        n_shared = len(re.findall(rf"\\begin\{{(?:{shared}|assumption)\}}", body[:m.start()])) + 1
        assert printed_numbers(PAPER, "theorem")[m.group(2)].number == str(n_shared), m.group(2)
    tables = re.findall(r"\\label\{([^}]*)\}\s*\\end\{table\}", body)
    assert [NUMS[t].text for t in tables] == [f"Table {i}" for i in range(1, len(tables) + 1)] and len(tables) == 3
    app = body.index(r"\begin{appendices}")
    parts = re.split(r"\\section\{", body[app:])[1:]  # the first \label after each appendix section names it
    firsts = [re.search(r"\\label\{([^}]*)\}", part).group(1) for part in parts]
    assert [NUMS[f].text for f in firsts] == [f"Appendix {chr(65 + i)}" for i in range(len(firsts))] and len(firsts) == 2
    secs = [m.group(1) for m in re.finditer(r"\\section\{[^\n]*?\}\s*\\label\{([^}]*)\}", body[:app])]
    assert [NUMS[s].text for s in secs] == [f"Section {i}" for i in range(1, len(secs) + 1)]


@pytest.mark.parametrize("label, kind", [("conv", "Theorem"), ("conv-rate", "Theorem"), ("par2", "Lemma"),
                                         ("cifar-res", "Table"), ("algy", "eq.")])
def test_printed_text_names_the_kind(label, kind):
    assert NUMS[label].name == kind
    assert printed_text([label, "no-such-label"], PAPER).endswith(", no-such-label")


def test_numbers_after_an_undeclared_environment_are_starred_with_the_other_numbering():
    """An undeclared ``assumption`` before a lemma: the lemma is Lemma 1 on its own counter, Lemma 2 on
    the shared one, so it is starred both ways, with the other number; the example (its own counter),
    the equations and the sections do not move and are not starred."""
    tex = doc(r"""\section{S}\label{s}\begin{assumption}\label{a}\end{assumption}\begin{lemma}\label{l}\end{lemma}
\begin{example}\label{x}\end{example}\begin{equation}\label{e}\end{equation}\begin{assumption}\label{b}\end{assumption}""")
    own, shared = printed_numbers(tex), printed_numbers(tex, "theorem")
    assert undeclared_environments(tex) == ["assumption"]
    assert {k: v.text for k, v in own.items()} == {"s": "Section 1", "a": "Assumption 1*", "l": "Lemma 1*",
                                                   "x": "Example 1", "e": "(1)", "b": "Assumption 2*"}
    assert {k: v.text for k, v in shared.items()} == {"s": "Section 1", "a": "Assumption 1*", "l": "Lemma 2*",
                                                      "x": "Example 1", "e": "(1)", "b": "Assumption 3*"}
    assert (own["l"].alternative_text, shared["l"].alternative_text) == ("Lemma 2", "Lemma 1")
    assert own["a"].alternative == "" and not own["a"].declared  # the same number either way, still undeclared
    assert own["x"].declared and own["e"].declared and own["s"].declared
    note = dependence_note(["l", "a", "b", "e"], tex)
    assert "assumption" in note and "Lemma 1 -> 2" in note and "Assumption 2 -> 3" in note and "--assumption-counter theorem" in note
    assert dependence_note(["e", "x"], tex) == ""
    with pytest.raises(ValueError, match="give one of own, theorem"):
        printed_numbers(tex, "shared")


def test_a_declared_assumption_moves_nothing():
    """With \\newtheorem{assumption}[theorem]{Assumption} in the preamble nothing is undeclared: both
    countings give the same numbers, none starred."""
    tex = doc(r"\begin{assumption}\label{a}\end{assumption}\begin{lemma}\label{l}\end{lemma}",
              r"\newtheorem{assumption}[theorem]{Assumption}")
    assert undeclared_environments(tex) == []
    for how in UNDECLARED_COUNTERS:
        assert {k: (v.text, v.alternative) for k, v in printed_numbers(tex, how).items()} == {
            "a": ("Assumption 1", ""), "l": ("Lemma 2", "")}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["lemma", "theorem", "remark", "assumption", "example", "equation"]), max_size=12))
def test_starred_exactly_where_the_two_countings_differ(envs):
    """On the theorem counter every statement of the shared counter and every assumption take one
    number in order; on their own counter assumptions are 1, 2, ...  A number is starred exactly when it
    is an assumption's or the two numbers differ (every shared statement after the first assumption)."""
    body = "".join(rf"\begin{{{e}}}\label{{l{k}}}\end{{{e}}}" for k, e in enumerate(envs))
    own, shared = printed_numbers(doc(body)), printed_numbers(doc(body), "theorem")
    first = envs.index("assumption") if "assumption" in envs else len(envs)
    k_shared = k_own = 0
    for k, e in enumerate(envs):
        lab = f"l{k}"
        if e in ("lemma", "theorem", "remark", "assumption"):
            k_shared += 1
            k_own += e != "assumption"
            mine = envs[:k + 1].count("assumption") if e == "assumption" else k_own
            assert (own[lab].number, shared[lab].number) == (str(mine), str(k_shared))
        starred = e == "assumption" or (e in ("lemma", "theorem", "remark") and k > first)
        assert not own[lab].declared == starred == (not shared[lab].declared), (lab, e)
        assert own[lab].alternative == ("" if own[lab].number == shared[lab].number else shared[lab].number)


def test_the_papers_numbers_that_rest_on_the_assumption_counter():
    """Issue 39: with the assumptions on the theorem counter Lemma conv-lemma would be Lemma 8, not 6, and
    Theorem conv 10, not 8; every statement from Assumption ass3 on is starred, the equations never."""
    shared = printed_numbers(PAPER, "theorem")
    assert (NUMS["conv-lemma"].text, NUMS["conv-lemma"].alternative_text) == ("Lemma 6*", "Lemma 8")
    assert (shared["conv-lemma"].text, shared["conv-lemma"].alternative_text) == ("Lemma 8*", "Lemma 6")
    assert (NUMS["conv"].text, shared["conv"].text, NUMS["ass2"].text, shared["ass2"].text) == (
        "Theorem 8*", "Theorem 10*", "Assumption 2*", "Assumption 6*")
    assert all(v.declared for v in NUMS.values() if v.kind != "statement")
    body = re.sub(r"(?<!\\)%.*", "", PAPER)
    first = body.index(r"\begin{assumption}")
    stmts = re.finditer(r"\\begin\{(lemma|theorem|remark|definition|assumption)\}(?:\[[^]]*\])?\s*\\label\{([^}]*)\}", body)
    for m in stmts:
        assert NUMS[m.group(2)].declared == (m.start() < first), m.group(2)
    note = dependence_note(list(NUMS), PAPER)
    assert "Lemma 6 -> 8" in note and "Theorem 8 -> 10" in note and "Assumption 2 -> 6" in note


def test_paper_check_prints_either_numbering(capsys):
    """``stam paper-check --json --assumption-counter theorem``: ``paper`` in the shared numbering,
    ``paper_alternative`` the default's; a counter that is not one of the two is one error line."""
    import json

    from stam.cli import main

    assert main(["paper-check", "--json", "--assumption-counter", "theorem"]) == 0
    rows = json.loads(capsys.readouterr().out)
    row = next(r for r in rows if "conv-lemma" in r.get("covers", []))
    assert row["paper"]["conv-lemma"] == "Lemma 8*" and row["paper_alternative"]["conv-lemma"] == "Lemma 6"
    assert all(lab not in r["paper_alternative"] for r in rows for lab in r["paper"] if not r["paper"][lab].endswith("*"))
    with pytest.raises(SystemExit) as exc:
        main(["paper-check", "--assumption-counter", "shared"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "shared" in err and "own" in err and "theorem" in err and "Traceback" not in err
