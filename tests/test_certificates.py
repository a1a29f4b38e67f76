"""Certificates as artifacts (issue 59): ``stam pep --certify`` writes a proven certificate as exact rationals,
``stam pep --check FILE`` re-proves it with the independent checker (:mod:`stam.theory.worstcase.certcheck`, which imports no
module of the toolkit), an altered or malformed file fails with one line, the region points to its certificates,
and the committed certificates the docs cite hold."""

from __future__ import annotations

import ast
import json
import re
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from test_pep_cli import run  # stam's command line: (exit code, stdout, stderr)
from stam.theory.worstcase import certcheck
from stam.theory.worstcase.certificates import certify_point, text

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "benchmarks" / "results" / "certificates"



@pytest.fixture(scope="module")
def docs():
    """Two proven certificates (general and paper template, any proper lsc F) at lam = 1, gamma = 1/2, beta = 10."""
    out = {}
    for tpl in ("general", "paper"):
        cert, doc = certify_point("1", "0.5", "10", template=tpl)
        assert cert.certified and doc is not None
        out[tpl] = doc
    return out


def dump(doc) -> str:
    return json.dumps(doc, indent=2)


def test_certify_writes_a_file_that_check_proves(capsys, tmp_path):
    path = tmp_path / "c.json"
    code, out, err = run(["pep", "--certify", "--lam", "1", "--gamma", "0.5", "--beta", "10", "--out", str(path)], capsys)
    assert code == 0, err
    assert out.startswith("certified: ") and f"wrote {path}" in out
    doc = json.loads(path.read_text())
    assert doc["parameters"] == {"lam": "1", "gamma": "1/2", "beta": "10", "L1": "1"}  # the decimals typed, exactly
    assert len(doc["potential"]["P"]) == 3 and set(doc["multipliers"]) == set(certcheck.INEQUALITIES)
    code, out, err = run(["pep", "--check", str(path)], capsys)
    assert code == 0, err
    assert out.startswith(f"proven: {path}") and "negative semidefinite" in out and err == ""
    rho = Fraction(doc["rho"])
    assert f"rho = {float(rho):.6g}" in out
    assert 0.05 < rho < 0.2  # measured 0.0871


def test_a_point_without_a_certificate_writes_nothing(capsys, tmp_path):
    # the paper's potential stops at gamma*lam = 0.930 at beta = 10 (its reach); at 0.94 nothing is certified
    path = tmp_path / "c.json"
    code, out, _ = run(["pep", "--certify", "--template", "paper", "--lam", "1", "--gamma", "0.94", "--beta", "10",
                        "--out", str(path)], capsys)
    assert code == 1 and out.startswith("not certified: ") and "nothing written" in out
    assert not path.exists()


@pytest.mark.parametrize("argv, says", [
    (["--certify", "--lam", "1", "--gamma", "0.5"], "--beta"),
    (["--certify", "--check", "x.json"], "one of"),
    (["--check"], "needs a FILE"),
    (["--check", "nothing-here.json"], "cannot read"),
    (["--certify", "--lam", "1", "--gamma", "0.5", "--beta", "10", "--T", "3"], "--T"),
    (["--certify", "--lam", "1", "--gamma", "0.5", "--beta", "10", "--N", "2", "--b", "1"], "--N"),
    (["--certify", "--lam", "-1", "--gamma", "0.5", "--beta", "10"], "-1"),
    (["--family", "--lam", "1"], "--lam"),
    (["--slice", "--lam", "1", "--gamma", "0.5", "--beta", "10", "--T", "1"], "for --certify"),
    (["--check", "x.json", "--template", "paper"], "for --certify"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(argv, says, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["pep", *argv], capsys)
    assert code == 2 and re.match(r"stam( pep)?: error: ", err) and err.count("\n") == 1 and says in err, err
    assert list(tmp_path.iterdir()) == []


# -- tampering ---------------------------------------------------------------------------------------------------------
def _numbers(doc):
    """Every number of a certificate: (a function that sets it, its value)."""
    out = []

    def walk(node, setter):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, lambda new, node=node, k=k: node.__setitem__(k, new))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, lambda new, node=node, i=i: node.__setitem__(i, new))
        elif isinstance(node, str) and re.fullmatch(r"-?\d+(/\d+)?", node):
            out.append((setter, Fraction(node)))

    for k in certcheck.DIGESTED:  # the numbers the digest covers, set in the document itself
        walk(doc[k], lambda new, k=k: doc.__setitem__(k, new))
    return out


@pytest.mark.parametrize("which, change, reason", [
    ("rho", lambda q: q * Fraction(11, 10), "not negative semidefinite"),
    ("b", lambda q: q * Fraction(999, 1000), "do not cancel"),
    ("mu", lambda q: q + Fraction(1, 10**6), "do not cancel"),
    ("P", lambda q: q + Fraction(1, 10**9), "not null"),
    ("gamma", lambda q: q * Fraction(1001, 1000), "not null"),
    ("rho-down", lambda q: q / 2, "digest"),
])
def test_a_tampered_certificate_fails_with_one_line(which, change, reason, docs, capsys, tmp_path):
    doc = json.loads(dump(docs["general"]))
    if which in ("rho", "rho-down"):
        doc["rho"] = text(change(Fraction(doc["rho"])))
    elif which == "b":
        doc["potential"]["b"] = text(change(Fraction(doc["potential"]["b"])))
    elif which == "mu":
        k = certcheck.INEQUALITIES[1]
        doc["multipliers"][k] = text(change(Fraction(doc["multipliers"][k])))
    elif which == "P":
        doc["potential"]["P"][0][1] = doc["potential"]["P"][1][0] = text(change(Fraction(doc["potential"]["P"][0][1])))
    else:
        doc["parameters"]["gamma"] = text(change(Fraction(doc["parameters"]["gamma"])))
    path = tmp_path / "t.json"
    path.write_text(dump(doc))
    code, out, err = run(["pep", "--check", str(path)], capsys)
    assert code == 1 and out.startswith("not proven: ") and out.count("\n") == 1 and reason in out, out
    assert err == ""


def test_a_convex_certificate_relabelled_lsc_fails_the_proof_itself(capsys, tmp_path):
    # for convex F the general template certifies far beyond c_beta (gamma = 2 at lam = 1, beta = 10); for any lsc F
    # nothing does: the same numbers with the class changed fail the mathematics, before the digest is looked at
    _, doc = certify_point("1", "2", "10", f_class="convex")
    assert doc is not None
    doc["f_class"] = "lsc"
    with pytest.raises(certcheck.NotProven, match="not negative semidefinite"):
        certcheck.check(dump(doc))


@settings(max_examples=40)
@given(data=st.data())
def test_any_number_altered_fails_the_check(data, docs):
    tpl = data.draw(st.sampled_from(sorted(docs)))
    doc = json.loads(dump(docs[tpl]))
    numbers = _numbers(doc)
    setter, value = numbers[data.draw(st.integers(0, len(numbers) - 1))]
    delta = data.draw(st.fractions(min_value=Fraction(-1, 2), max_value=Fraction(1, 2), max_denominator=10**12)
                      .filter(lambda d: d != 0))
    new = value + delta if value == 0 else value * (1 + delta)
    setter(text(new))
    with pytest.raises((certcheck.NotProven, certcheck.Malformed)):
        certcheck.check(dump(doc))


# -- malformed files ---------------------------------------------------------------------------------------------------
def _malformed(doc):
    yield "not JSON", "{"
    yield "a float", dump({**doc, "rho": 0.5})
    yield "exponent", dump({**doc, "rho": "1e5"})
    yield "expression", dump({**doc, "rho": "__import__('os').system('true')"})
    yield "huge", dump({**doc, "rho": "1" + "0" * 10000})
    yield "zero denominator", dump({**doc, "rho": "1/0"})
    yield "NaN", dump(doc).replace('"format": 1', '"format": NaN')
    yield "P shape", dump({**doc, "potential": {**doc["potential"], "P": [["1", "0"], ["0", "1"]]}})
    yield "missing key", dump({k: v for k, v in doc.items() if k != "multipliers"})
    yield "unknown key", dump({**doc, "extra": 1})
    yield "negative beta", dump({**doc, "parameters": {**doc["parameters"], "beta": "-10"}})
    yield "a list", "[1, 2]"
    yield "deep", "[" * 100000 + "]" * 100000


def test_a_malformed_file_is_one_line_exit_2(docs, capsys, tmp_path):
    for name, content in _malformed(docs["general"]):
        path = tmp_path / "m.json"
        path.write_text(content)
        code, out, err = run(["pep", "--check", str(path)], capsys)
        assert code == 2 and err.startswith(f"stam: error: {path}: not a certificate: ") and err.count("\n") == 1, \
            (name, err)
        assert out == ""


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)


@settings(max_examples=60)
@given(data=st.data())
def test_any_value_replaced_is_rejected_with_a_reason_never_a_crash(data, docs):
    """Whatever a file holds in place of one of its values (any JSON), the checker answers Malformed or NotProven."""
    doc = json.loads(dump(docs[data.draw(st.sampled_from(sorted(docs)))]))
    paths = []

    def walk(node, trail):
        paths.append(trail)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, trail + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, trail + (i,))

    walk(doc, ())
    trail = data.draw(st.sampled_from([t for t in paths if t]))
    node = doc
    for k in trail[:-1]:
        node = node[k]
    new = data.draw(JSON.filter(lambda v: v != node[trail[-1]]))
    node[trail[-1]] = new
    if trail[0] in certcheck.INFORMATIVE:
        certcheck.check(dump(doc))  # what the check does not read changes nothing
    else:
        with pytest.raises((certcheck.Malformed, certcheck.NotProven)):
            certcheck.check(dump(doc))


def test_a_number_of_too_many_digits_is_malformed_not_a_crash():
    for text_ in ("1" * 5000, "1/" + "3" * 5000, "-" + "7" * 4001):
        with pytest.raises(certcheck.Malformed, match="digits"):
            certcheck.rational(text_, "x")


@given(st.fractions(max_denominator=10**30))
def test_rationals_round_trip_and_nothing_else_parses(q):
    assert certcheck.rational(text(q), "x") == q
    for bad in (str(float(q)) + "0", f"{q.numerator}/{q.denominator} ", f"+{abs(q.numerator)}", f"{q}/1/1"):
        with pytest.raises(certcheck.Malformed):
            certcheck.rational(bad, "x")


def test_semidefinite_is_exact():
    F = Fraction
    assert certcheck.semidefinite([[F(1), F(1)], [F(1), F(1)]]) is None  # singular, semidefinite
    assert certcheck.semidefinite([[F(1), F(1)], [F(1), F(1) - F(1, 10**40)]]) is not None  # off by 1e-40
    assert certcheck.semidefinite([[F(0), F(1)], [F(1), F(0)]]) is not None  # zero pivot, nonzero row
    assert certcheck.semidefinite([[F(2), F(-1), F(0)], [F(-1), F(2), F(-1)], [F(0), F(-1), F(2)]]) is None


def test_the_checker_imports_no_module_of_the_toolkit():
    tree = ast.parse((ROOT / "theory" / "worstcase" / "certcheck.py").read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names <= {"__future__", "hashlib", "json", "re", "fractions"}, names


# -- the region and the committed certificates -------------------------------------------------------------------------
def test_the_region_points_to_its_certificates(capsys, tmp_path):
    out = tmp_path / "r.json"
    code, _, err = run(["pep", "--region", "--lams", "1", "--betas", "10", "--gamma-range", "0.5:1:4", "--out", str(out),
                        "--workers", "1"], capsys)
    assert code == 0, err
    result = json.loads(out.read_text())
    files = result["certificates"]
    row = result["rows"][0]
    assert any(f"gamma{row['general']['lo']:.6g}" in f for f in files)  # the last certified gamma of the bracket
    assert files and all((tmp_path / f).is_file() for f in files)
    for f in files:
        proved = certcheck.check((tmp_path / f).read_text())
        assert proved["params"]["lam"] == 1 and proved["params"]["beta"] == 10


def test_every_committed_certificate_holds_and_the_docs_cite_them():
    files = sorted(COMMITTED.glob("*.json"))
    assert len(files) >= 4
    for f in files:  # the slices take about 15 s each (sympy)
        prove_file(f)
    page = (ROOT / "docs" / "certificates.md").read_text()
    cited = set(re.findall(r"benchmarks/results/certificates/[\w.\-]+\.json", page))
    assert len(cited) >= 4 and {ROOT / rel for rel in cited} <= set(files)


# -- the closed-form family (stam pep --family) ------------------------------------------------------------------------
def test_family_prints_the_theorem_and_proves_it(capsys):
    code, out, err = run(["pep", "--family"], capsys)
    assert code == 0, err
    assert out.startswith("Theorem (DR-envelope family).") and "2 beta > L1 + lam" in out
    assert out.count("[proven]") == 8 + 5 and "NOT PROVEN" not in out and out.rstrip().endswith("the theorem is proven")
    assert "Reach of Theorem conv's potential a (G + H) + b M_t (any proper lsc F, full gradient): exactly c_DR" in out
    assert "Beyond c_DR (c_DR <= gamma*lam < c_beta, the general potential): proven one (lam, beta, L1) at a time" in out


def test_a_family_whose_proof_fails_exits_1(capsys, monkeypatch):
    from stam.theory.worstcase import family

    monkeypatch.setattr(family, "P11", family.P11 * 2)  # another potential: its identities fail
    code, out, _ = run(["pep", "--family"], capsys)
    assert code == 1 and "NOT PROVEN" in out and out.rstrip().endswith("the proof did NOT go through")


@settings(max_examples=25)
@given(lam=st.fractions(Fraction(1, 100), 30, max_denominator=100), L1=st.fractions(Fraction(1, 10), 10, max_denominator=10),
       excess=st.fractions(Fraction(1, 1000), 100, max_denominator=1000), frac=st.fractions(Fraction(1, 1000), Fraction(999, 1000),
                                                                                           max_denominator=1000))
def test_every_instance_of_the_family_passes_the_independent_checker(lam, L1, excess, frac):
    """The theorem at rational points inside its set (2 beta = L1 + lam + excess, c below c_DR), each instance checked
    exactly by the checker that shares nothing with the symbolic proof but the paper's equations."""
    from stam.theory.worstcase import family
    from stam.theory.worstcase.certificates import family_document

    beta = (L1 + lam + excess) / 2
    c_dr = float(family.C_DR.subs({family.lam: lam, family.beta: beta, family.L1: L1}))
    c = Fraction(frac) * Fraction(c_dr).limit_denominator(10**6)
    c = min(c, Fraction(c_dr) * Fraction(999, 1000))
    doc = family_document(str(lam), str(c / lam), str(beta), str(L1))
    proved = certcheck.check(dump(doc))
    assert proved["rho"] > 0


def test_beyond_c_dr_the_dual_vector_refutes_every_paper_potential_numerically():
    """At lam = 1, beta = 10, gamma*lam = 0.94 (beyond c_DR): the vector y of prove_paper_reach makes y' D y > 0 for
    sampled weights and multipliers, and the solver finds no certificate of the paper form there."""
    import numpy as np
    import sympy

    from stam.theory.worstcase import family

    sub = {family.lam: 1, family.beta: 10, family.L1: 1, family.c: sympy.Rational(94, 100)}
    (_, Aa), (_, Ab), (_, I12), (_, I34) = family.paper_parts()
    A = [np.array(M.subs(sub), dtype=float) for M in (Aa, Ab, I12, I34)]
    M0 = -(A[0] + A[1])[1:4, 1:4]
    adj = np.linalg.det(M0) * np.linalg.inv(M0)
    z = np.array([0, *adj[:, 0], 0])
    n = np.array([1.94, -1, 1, -1, 1])
    t = (z @ A[1] @ z - z @ A[0] @ z) / (4 * (z @ A[0] @ n))
    y = z + t * n
    rng = np.random.default_rng(0)
    for a, b, m1, m3 in rng.uniform(0, 10, size=(200, 4)):
        assert y @ (a * A[0] + b * A[1] - m1 * A[2] - m3 * A[3]) @ y > 0
    cert, doc = certify_point("1", "0.94", "10", template="paper")
    assert doc is None


def test_the_family_reaches_c_dr_and_not_beyond():
    import sympy

    from stam.theory.worstcase import family

    sub = {family.lam: 1, family.beta: 10, family.L1: 1}
    c_dr = family.C_DR.subs(sub)
    assert abs(float(c_dr) - 0.930252) < 1e-6 and float(family.C_BETA.subs(sub)) > float(c_dr)
    # just beyond c_DR the minor c q of M0 is negative: no rate with this potential
    assert float(family.Q.subs(sub).subs(family.c, c_dr + sympy.Rational(1, 10**4))) < 0


def test_the_rate_law_of_the_family():
    """1/rho* ~ 2 e(c_DR) / (c_DR |q'(c_DR)| (c_DR - c)) near the reach, ~ 2/gamma near 0 (the docstring's law)."""
    import sympy

    from stam.theory.worstcase import family

    sub = {family.lam: 1, family.beta: 10, family.L1: 1}
    c_dr = family.C_DR.subs(sub)
    slope = abs(sympy.diff(family.Q.subs(sub), family.c).subs(family.c, c_dr))
    law = 2 * family.E.subs(sub).subs(family.c, c_dr) / (c_dr * slope)
    for d in (sympy.Rational(1, 10**4), sympy.Rational(1, 10**6)):
        inv = 1 / family.RHO_STAR.subs(sub).subs(family.c, c_dr - d)
        assert abs(float(inv * d / law) - 1) < 0.01
    gamma = sympy.Rational(1, 10**5)
    assert abs(float(gamma / family.RHO_STAR.subs(sub).subs(family.c, gamma)) - 2) < 0.01


def test_the_family_matches_the_solvers_optimum_where_both_apply():
    """At lam = 1, beta = 10 the SDP of the paper template (free weights and multipliers) finds the family's rate,
    not more, up to the verification's share (measured: rho = 0.0403 at c = 0.9, family 0.0401)."""
    from stam.theory.worstcase import family

    cert, doc = certify_point("1", "0.9", "10", template="paper")
    rho_family = float(family.RHO_STAR.subs({family.lam: 1, family.beta: 10, family.L1: 1, family.c: Fraction(9, 10)}))
    assert doc is not None and abs(float(Fraction(doc["rho"])) / rho_family - 1) < 0.02


# -- slices: every gamma*lam up to near c_beta at one (lam, beta, L1) --------------------------------------------------
SLICE = COMMITTED / "slice-lam1-beta10-to0.947358.json"


def prove_file(path: Path):
    """``stam pep --check``'s dispatch: a slice or a one-point certificate."""
    from stam.theory.worstcase import family

    text_ = path.read_text()
    return family.check_slice(text_) if certcheck.load(text_)["kind"] == family.SLICE_KIND else certcheck.check(text_)


def test_a_slice_reaches_within_1_1e5_of_c_beta_and_each_piece_holds_on_its_interval_only():
    import sympy

    from stam.theory.worstcase import family

    doc = json.loads(SLICE.read_text())
    c_beta = Fraction(18, 19)
    assert Fraction(doc["gamma_lam_max"]) > c_beta - Fraction(11, 10**6) and Fraction(doc["pieces"][0]["from"]) < Fraction(93, 100)
    forms = family.slice_forms(1, 10, 1)
    first = doc["pieces"][0]
    values = [sympy.Rational(first[k]) for k in family.PIECE_KEYS]
    lo, hi = sympy.Rational(first["from"]), sympy.Rational(first["to"])
    assert family.prove_piece(forms, lo, hi, values) is None
    assert family.prove_piece(forms, lo, hi + (hi - lo) / 10, values) is not None  # its minors change sign just beyond
    assert family.prove_piece(forms, lo, hi, values[:5] + [values[5] * 2]) is not None  # twice the rate: not proven


def test_a_tampered_slice_fails(tmp_path, capsys):
    doc = json.loads(SLICE.read_text())
    doc["pieces"][1]["from"] = text(Fraction(doc["pieces"][1]["from"]) + Fraction(1, 10**6))  # a gap
    path = tmp_path / "s.json"
    path.write_text(dump(doc))
    code, out, _ = run(["pep", "--check", str(path)], capsys)
    assert code == 1 and out.startswith("not proven: ") and "contiguous" in out
    doc = json.loads(SLICE.read_text())
    doc["gamma_lam_max"] = doc["pieces"][-1]["to"] = text(Fraction(19, 20))  # up to c_beta and beyond
    path.write_text(dump(doc))
    code, out, _ = run(["pep", "--check", str(path)], capsys)
    assert code == 1 and "piece" in out and out.count("\n") == 1


def test_slice_input_errors_are_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["pep", "--certify", "--slice", "--lam", "1", "--gamma", "0.95", "--beta", "10"], capsys)
    assert code == 2 and "not below c_beta" in err and err.count("\n") == 1
    code, _, err = run(["pep", "--certify", "--slice", "--lam", "1", "--gamma", "0.5", "--beta", "0.9"], capsys)
    assert code == 2 and "2 beta > L1 + lam" in err
    assert list(tmp_path.iterdir()) == []


def test_json_output_of_certify_and_check(capsys, tmp_path):
    path = tmp_path / "c.json"
    code, out, _ = run(["pep", "--certify", "--lam", "1", "--gamma", "0.5", "--beta", "10", "--out", str(path), "--json"],
                       capsys)
    got = json.loads(out)
    assert code == 0 and got["certified"] and got["file"] == str(path) and got["certificate"]["digest"].startswith("sha256:")
    code, out, _ = run(["pep", "--check", str(path), "--json"], capsys)
    got = json.loads(out)
    assert code == 0 and got["proven"] and got["text"].startswith(f"proven: {path}")
