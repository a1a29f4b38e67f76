"""Property tests of the lemmas on the second moment: Lemma Lip-lemma, Lemma es-lemma (exact
expectation over b-nice sampling, enumerated) and Lemma ES-GH."""

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from stam.theory.papercheck import audit
from stam.theory.papercheck.items import common
from stam.theory.symbolic import numeric as n

fl = dict(allow_nan=False, allow_infinity=False)
vec = lambda d, lo=-5, hi=5: arrays(np.float64, d, elements=st.floats(lo, hi, **fl))  # noqa: E731


@given(x=vec(3), c=vec(3), a=vec(3, 0.01, 3))
def test_lip_lemma_nonconvex_log_family(x, c, a):
    """f(x) = sum_j a_j log(1 + (x_j - c_j)^2): inf 0 at c, grad Lipschitz with L = 2 max a_j."""
    u = x - c
    f = np.sum(a * np.log1p(u**2))
    grad = a * 2 * u / (1 + u**2)
    L = 2 * np.max(a)
    assert grad @ grad <= 2 * L * f * (1 + 1e-12) + 1e-300


@given(x=vec(3), a=vec(3, 0.01, 3))
def test_lip_lemma_periodic_family(x, a):
    """f(x) = sum_j a_j (1 - cos x_j): inf 0, L = max a_j."""
    f = np.sum(a * 2 * np.sin(x / 2) ** 2)  # = sum a_j (1 - cos x_j), without cancellation
    grad = a * np.sin(x)
    assert grad @ grad <= 2 * np.max(a) * f * (1 + 1e-12) + 1e-300


@given(x=vec(3), c=vec(3), B=arrays(np.float64, (3, 3), elements=st.floats(-2, 2, **fl)), f0=st.floats(-3, 3))
def test_lip_lemma_quadratic_family(x, c, B, f0):
    Q = B @ B.T
    f = 0.5 * (x - c) @ Q @ (x - c) + f0
    grad = Q @ (x - c)
    L = np.linalg.eigvalsh(Q).max()
    assert grad @ grad <= 2 * L * (f - f0) * (1 + 1e-9) + 1e-9


def _finite_sum_instance(draw):
    N = draw(st.integers(2, 5))
    b = draw(st.integers(1, N))
    a = np.array(draw(st.lists(st.floats(0.01, 3), min_size=N, max_size=N)))
    c = np.array(draw(st.lists(st.floats(-3, 3), min_size=N, max_size=N)))
    lam = draw(st.floats(0.01, 5))
    x, y = draw(st.floats(-4, 4)), draw(st.floats(-4, 4))
    return N, b, a, c, lam, x, y


@settings(max_examples=80)
@given(data=st.data())
def test_es_lemma_corrected_constant_holds_exactly(data):
    """Lemma es-lemma with the derived A = 2 max(max_i L1^i E v_i^2, L3*), C = 2 A Delta^inf,
    E over all b-subsets (b-nice sampling without replacement, E v_i^2 = N/b)."""
    N, b, a, c, lam, x, y = _finite_sum_instance(data.draw)
    e = common.es_lemma_instance(a, c, lam, x, y, b)
    A, C = n.es_lemma(a, np.full(N, N / b), lam, e["delta_inf"])
    assert e["lhs"] <= 2 * A * e["excess"] + C + 1e-9 * (1 + e["lhs"])


@settings(max_examples=60)
@given(data=st.data())
def test_es_lemma_with_replacement(data):
    """Sampling b indices with replacement: v_i = (N/b) count_i, E v_i^2 = (N + b - 1)/b."""
    N, b, a, c, lam, x, y = _finite_sum_instance(data.draw)
    grads, gH = a * (y - c), lam * (y - x)
    draws = list(itertools.product(range(N), repeat=b))
    lhs = np.mean([(np.sum(grads[list(d)]) / b + gH) ** 2 for d in draws])
    e = common.es_lemma_instance(a, c, lam, x, y, b)
    A, C = n.finite_sum(np.max(a), N, b, lam, e["delta_inf"], replacement=True)
    assert lhs <= 2 * A * e["excess"] + C + 1e-9 * (1 + lhs)


def test_es_lemma_printed_constant_fails_on_some_instance():
    f = next(f for f in audit.findings() if f.label == "eq101 (Lemma es-lemma A, C)")
    ce = f.counterexample
    assert f.verdict == "false" and f.evidence == "instance" and ce is not None
    e = common.es_lemma_instance(np.array(ce["a_i"]), np.array(ce["c_i"]), ce["lam"], ce["x"], ce["y"], ce["b"])
    A_printed, C_printed = n.es_lemma(np.array(ce["a_i"]), np.full(ce["N"], ce["N"] / ce["b"]), ce["lam"],
                                      e["delta_inf"], as_printed=True)
    assert ce["b"] < ce["N"]
    assert e["lhs"] > 2 * A_printed * e["excess"] + C_printed


@settings(max_examples=60)
@given(data=st.data())
def test_es_gh(data):
    """Lemma ES-GH on G = (1/N) sum G_i with the b-nice estimator: eq. (422) holds with the exact
    constants A0 = Lmax (N-b)/(b(N-1)), B0 = N(b-1)/(b(N-1)), C0 = 2 A0 (G^inf - mean G_i^inf)
    (Khaled-Richtarik), and then the lemma's A, C give the ES inequality of G + H."""
    N, b, a, c, lam, x, y = _finite_sum_instance(data.draw)
    grads = a * (y - c)
    est = [np.sum(grads[list(S)]) / b for S in itertools.combinations(range(N), b)]
    e = common.es_lemma_instance(a, c, lam, x, y, b)
    G, Ginf = e["excess"] - lam / 2 * (x - y) ** 2 + e["delta_inf"], e["delta_inf"]
    Lmax = np.max(a)
    A0 = Lmax * (N - b) / (b * (N - 1))
    B0 = N * (b - 1) / (b * (N - 1))
    C0 = 2 * A0 * Ginf  # G_i^inf = 0
    lhs422 = np.mean(np.square(est))
    assert lhs422 <= 2 * A0 * (G - Ginf) + B0 * np.mean(grads) ** 2 + C0 + 1e-9 * (1 + lhs422)
    L1 = np.mean(a)
    A, C = n.es_gh(L1, lam, A0, B0, C0, gap=0.0)  # (G+H)^inf = G^inf, H^inf = 0: gap 0
    lhs = np.mean([(v + lam * (y - x)) ** 2 for v in est])
    assert lhs <= 2 * A * e["excess"] + C + 1e-9 * (1 + lhs)
