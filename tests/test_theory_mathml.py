"""Every formula of the audit as MathML laid out as mathematics (issue 37, point 5): each printed and
derived sympy form of every item converted, and checked structurally (well-formed XML, every
script, under/over-script and fraction element with exactly its children, no LaTeX command or
literal ``~`` in any text, no name left unread); operators with limits take their index range as
an under-script of the operator only, accents are ``<mover accent="true">``; and the LaTeX beside
it reads the same notation."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.theory.papercheck import audit
from stam.theory.symbolic.mathml import (ACCENTS, ARITY, MATHML_NS, latex, latex_name, mathml, sanitize,
                                structure_errors)

NS = f"{{{MATHML_NS}}}"


def _formulas():
    """``(label, "printed" or "derived", sympy object)`` of every form of every audited item that is
    a sympy object (the others are text and shown as text)."""
    out = []
    for ev in audit.evaluated():
        res = ev.result
        if res is None:
            continue
        for key in ("printed", "derived"):
            val = getattr(res, key)
            if isinstance(val, sp.Basic):
                out.append((ev.item.label, key, val))
    return out


@pytest.fixture(scope="module")
def formulas():
    return [(label, key, expr, mathml(expr), latex(expr)) for label, key, expr in _formulas()]


def _text(el) -> str:
    return "".join(t.strip() for t in el.itertext())


def test_every_formula_of_the_audit_converts_to_well_structured_mathml(formulas):
    assert len(formulas) >= 40  # most items have a sympy form (both forms of the gap-form steps)
    for label, key, _, m, tex in formulas:
        assert structure_errors(m) == [], (label, key, structure_errors(m)[:5])
        assert sanitize(m) is not None and structure_errors(sanitize(m)) == [], (label, key)
        assert "~" not in tex, (label, key, tex[:200])  # a LaTeX ~ would be a space: only a name leaves one
    # the stored rows carry the same MathML (paper-check --json's printed_mathml / derived_mathml)
    rows = {f.label: f.as_json() for f in audit.findings()}
    for label, key, _, m, _ in formulas:
        assert rows[label].get(f"{key}_mathml") == m, (label, key)


def _item(formulas, start: str):
    hits = [f for f in formulas if f[0].startswith(start)]
    assert hits, start
    return hits


def test_theorem_conv_takes_min_over_its_index_range_as_an_underscript(formulas):
    """Theorem conv's left side ``min_{0 <= t <= T-1} S_t``: min with the range under it, then S_t
    beside it (not min with the subscript ``t S t``)."""
    hits = _item(formulas, "Theorem conv")
    for label, key, _, m, tex in hits:
        root = ET.fromstring(m)
        under = [u for u in root.iter(NS + "munder") if _text(u[0]) == "min"]
        assert len(under) == 1, (label, key)
        op, rng = under[0]
        assert op.tag == NS + "mo" and op.get("movablelimits") == "false"
        assert _text(rng) == "0\u2264t\u2264T\u22121"
        assert [c.tag for c in rng] == [NS + t for t in ("mn", "mo", "mi", "mo", "mi", "mo", "mn")]
        # S_t follows the operator in the same row, as its own msub
        row = next(r for r in root.iter() if under[0] in list(r))
        after = list(row)[list(row).index(under[0]) + 1]
        assert after.tag == NS + "msub" and [_text(c) for c in after] == ["S", "t"]
        assert not any(_text(s[0]) == "min" for tag in ("msub", "msup", "msubsup") for s in root.iter(NS + tag))
        assert r"\min_{0 \leq t \leq T - 1} S_{t}" in tex and "min_{t S t}" not in tex


def test_rem1_has_g_with_a_tilde_accent(formulas):
    """rem1's ``E||g~||^2``: E, the norm of g with a tilde accent (an ``mover``), squared."""
    hits = [f for f in _item(formulas, "422 / rem1") if "g~" in str(f[2])]
    assert hits
    for label, key, _, m, tex in hits:
        root = ET.fromstring(m)
        over = list(root.iter(NS + "mover"))
        assert len(over) == 1 and over[0].get("accent") == "true"
        assert [c.tag for c in over[0]] == [NS + "mi", NS + "mo"] and [_text(c) for c in over[0]] == ["g", "\u02dc"]
        norm = next(s for s in root.iter(NS + "msup") if over[0] in list(s[0]))
        assert _text(norm[0]) == "\u2016g\u02dc\u2016" and _text(norm[1]) == "2"
        assert "g~" not in "".join(root.itertext())
        assert r"\mathbb{E}\left\|\tilde{g}\right\|^{2}" in tex


NAMES = [  # (the toolkit's name, the element it becomes, the text of its children)
    ("min_t S_t", "mrow", ["mint", "St"]),
    ("max_{i<=N} a_i", "mrow", ["maxi\u2264N", "ai"]),
    ("sum_{i=1} x_i", "mrow", ["\u2211i=1", "xi"]),
    ("M'_{t+1}", "msub", ["M\u2032", "t+1"]),
    ("M_0'", "msub", ["M\u2032", "0"]),
    ("delta_{t+1}", "msub", ["\u03b4", "t+1"]),
    ("mu/2", "mfrac", ["\u03bc", "2"]),
    ("g~", "mover", ["g", "\u02dc"]),
    ("ghat_t", "msub", ["g\u02c6", "t"]),
    ("xbar", "mover", ["x", "\u00af"]),
    ("||x||", "mrow", ["\u2016", "x", "\u2016"]),
    ("E[e_t^2]", "mrow", ["E", "[", "et2", "]"]),
]


@pytest.mark.parametrize("name,tag,children", NAMES)
def test_the_notation_of_a_name(name, tag, children):
    m = mathml(sp.Symbol(name))
    assert structure_errors(m) == [], structure_errors(m)
    root = ET.fromstring(m)
    assert len(root) == 1 and root[0].tag == NS + tag
    assert [_text(c) for c in root[0]] == children
    for el in root.iter():
        if el.tag in (NS + "munder",):
            assert el[0].tag == NS + "mo"  # the operator itself, its index under it
        if el.tag == NS + "mover":
            assert el.get("accent") == "true" and _text(el[1]) in ACCENTS.values()
    assert "~" not in latex_name(name) and sp.Symbol(name).name not in latex(sp.Symbol(name))  # written as notation


@pytest.mark.parametrize("bad", [
    f'<math xmlns="{MATHML_NS}"><msub><mi>x</mi></msub></math>',  # a subscript without its script
    f'<math xmlns="{MATHML_NS}"><mfrac><mi>a</mi><mi>b</mi><mi>c</mi></mfrac></math>',
    f'<math xmlns="{MATHML_NS}"><msub><mi>min</mi><mi>t</mi></msub></math>',  # min with a subscript
    f'<math xmlns="{MATHML_NS}"><mi>\\tilde{{g}}</mi></math>',  # a LaTeX command
    f'<math xmlns="{MATHML_NS}"><mi>g~</mi></math>',
    f'<math xmlns="{MATHML_NS}"><mrow>x<mi>y</mi></mrow></math>',  # text outside a token
    f'<math xmlns="{MATHML_NS}"><mi>x</mi>',
])
def test_the_structure_check_can_fail(bad):
    assert structure_errors(bad)


def test_the_sanitiser_keeps_what_lays_out_limits_and_accents():
    m = sanitize(mathml(sp.Le(sp.Symbol("min_t S_t") + sp.Symbol("g~"), 1)))
    assert 'movablelimits="false"' in m and 'accent="true"' in m and structure_errors(m) == []


_PART = st.sampled_from(["x", "g", "beta", "M", "S", "L"])
_SCRIPT = st.sampled_from(["t", "0", "i", "{t+1}", "{0<=t<=T-1}", "*", "inf"])


@settings(max_examples=60, deadline=None)
@given(base=_PART, accent=st.sampled_from(["", "~", "hat", "bar"]), prime=st.booleans(),
       sub=st.none() | _SCRIPT, sup=st.none() | _SCRIPT, op=st.none() | st.sampled_from(["min", "max", "sum"]))
def test_any_name_of_this_grammar_is_well_structured(base, accent, prime, sub, sup, op):
    """Names built from the notation's parts (an accent, a prime, sub- and superscripts, an
    operator with limits before them) all give well-structured MathML whose scripts have exactly
    their children, and LaTeX with no literal ``~``."""
    name = base + accent + ("'" if prime else "") + (f"_{sub}" if sub else "") + (f"^{sup}" if sup else "")
    if op:
        name = f"{op}_{sub or 't'} {name}"
    expr = sp.Le(sp.Symbol(name), sp.Symbol("y") / 2 + 1, evaluate=False)
    m = mathml(expr)
    assert structure_errors(m) == [], (name, structure_errors(m))
    root = ET.fromstring(m)
    assert len(list(root.iter(NS + "mover"))) == (1 if accent else 0)
    assert len(list(root.iter(NS + "munder"))) == (1 if op else 0)
    for tag, n in ARITY.items():
        assert all(len(el) == n for el in root.iter(NS + tag))
    assert "~" not in latex(expr)


def test_sympy_sums_take_their_limits_under_and_over_the_sign():
    i, n = sp.symbols("i N", integer=True)
    m = mathml(sp.Sum(sp.IndexedBase("x")[i] ** 2, (i, 1, n)))
    assert structure_errors(m) == []
    (uo,) = ET.fromstring(m).iter(NS + "munderover")
    assert [_text(c) for c in uo] == ["\u2211", "i=1", "N"]
