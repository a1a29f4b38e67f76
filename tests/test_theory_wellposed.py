"""The well-posedness gaps (issue 23, point 3): their witnesses are what they claim, checked here
independently of the items (numbers, an actual start of Algorithm 1, a brute-force projection)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.theory.papercheck import audit
from stam.theory.papercheck.items import numbering
from stam.theory.papercheck.items.coverage import read_paper
from stam.theory.symbolic.stamruns import scaled_binary_projection

Q_GAP = "gap: Q of eq01 not closed (s_i in (0, inf))"
L1_GAP = "gap: (a1) has no L1 for a network loss"


@pytest.fixture(scope="module")
def rows():
    return {f.label: f for f in audit.findings()}


def test_both_are_gaps_with_witnesses_and_printed_numbers(rows):
    nums = numbering.printed_numbers(read_paper())
    for label, covers in ((Q_GAP, ("eq01", "0411", "0412")), (L1_GAP, ("G-lip", "binary-model", "stam"))):
        f = rows[label]
        assert f.verdict == "gap" and f.evidence == "witness" and f.gap["witness"]
        assert f.covers == covers
        assert audit.paper_refs(f) == ", ".join(nums[c].text for c in covers)  # (22), (23), (24) ...
    assert audit.paper_refs(rows[Q_GAP]).startswith("(22)")


def test_q_witness(rows):
    w = rows[Q_GAP].gap["witness"]
    assert w["dist(0, Q) = inf_(s>0) s sqrt(n)"] == "0" and w["s > 0 attaining it"] == []
    assert w["printed closed form at U = 0"] == {"s*": 0.0, "in R^+ = (0, inf)": False}
    run = next(v for k, v in w.items() if k.startswith("Algorithm 1"))
    assert run["u^0 asks Proj_Q of"] == [0.0, 0.0, 0.0]  # the first u-step needs Proj_Q(0)
    # every point of Q (s > 0) is at distance s sqrt(n) > 0 from 0: no nearest point
    for s in (1.0, 1e-3, 1e-9):
        assert 0 < np.linalg.norm(s * np.ones(3)) < 2 * s


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=5))
def test_printed_closed_form_is_the_projection_onto_the_closed_q(u):
    """For Q with s >= 0: the closed form of (0412) is a nearest point (brute force over the sign
    patterns, s optimal for each); the squared distance it leaves is the minimum."""
    U = np.array(u)
    n = U.size
    P = scaled_binary_projection(U)
    best = min(np.sum((max(np.dot(z, U) / n, 0.0) * np.array(z) - U) ** 2)
               for z in itertools.product((-1.0, 1.0), repeat=n))
    assert np.sum((P - U) ** 2) <= best + 1e-9
    assert np.all(np.abs(P) == np.abs(P).flat[0])  # one magnitude s per layer


def test_l1_witness(rows):
    w = rows[L1_GAP].gap["witness"]
    assert w["sup over w"] == "oo" and w["d2G/dw1^2"] == "w2**2"

    def grad(w1, w2):  # G = (w2 w1 - 1)^2/2
        r = w2 * w1 - 1
        return np.array([r * w2, r * w1])

    for R in (1.0, 10.0, 100.0):
        ratio = np.linalg.norm(grad(1.0, R) - grad(0.0, R))  # the points are at distance 1
        assert ratio >= R**2
    assert w["at R = 10"] == pytest.approx(np.linalg.norm(grad(1.0, 10.0) - grad(0.0, 10.0)), rel=1e-5)  # 6 digits shown


def test_a_and_c_are_undefined_and_the_readings_differ(rows):
    """Lemma conv-lemma and the theorems use A, C that they do not define; on one instance of both
    Lemma ES-GH and Lemma es-lemma the two lemmas give different C (Delta_GH = 0, Delta^inf = 1/2),
    so Theorem conv's bound differs with the reading."""
    f = rows["gap: A, C undefined in Lemma conv-lemma"]
    assert f.verdict == "gap" and f.evidence == "witness"
    w = f.gap["witness"]
    assert w["Delta_GH (Lemma ES-GH)"] == "0" and w["Delta^inf (Lemma es-lemma)"] == "1/2"
    assert w["A, C of Lemma ES-GH"][1] == 0 and w["A, C of Lemma es-lemma (corrected A)"][1] > 0
    bounds = list(next(v for k_, v in w.items() if k_.startswith("Theorem conv's bound")).values())
    assert bounds[0] < bounds[1]
