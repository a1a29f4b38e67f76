"""The paper's printed numbering (stam.theory.items.numbering), computed from the LaTeX source as
LaTeX numbers it: on small sources whose numbers follow from the rules of article, amsmath and
jmlr2e.sty, and on every label of the paper against independent, cruder counts of its source."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.theory.items import coverage as cov
from stam.theory.items.numbering import CLASS_THEOREMS, printed_numbers, printed_text, theorem_environments

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
        assert NUMS[m.group(2)].text == f"{m.group(1).capitalize()} {n}", m.group(2)
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
