"""The onset of unboundedness of `stam pep` at T = 1 in closed form (stam.theory.worstcase.onset, issue 39): derived in sympy
from the PEP's own structure, checked against the SDP at several beta (small ones included) and along a run."""

import math

import numpy as np
import pytest
import sympy as sp

from stam.steps import stam_init, stam_step
from stam.theory.worstcase.onset import t1_onset, t1_onset_value
from stam.theory.worstcase.pep import merit_of

C_STAR = (1 + math.sqrt(3)) / 2


def test_the_onset_is_one_plus_sqrt3_over_two_for_every_beta():
    d = t1_onset()
    assert sp.simplify(d["threshold"] - (1 + sp.sqrt(3)) / 2) == 0
    assert abs(t1_onset_value() - 1.3660254037844386) < 1e-15
    # the derivation's steps: delta0 = 0 leaves y^1 = y^0 whatever beta; the gap depends on neither w nor beta,
    # and the worst instance (w = u) is consistent with the class
    assert d["y1_moves"] == 0 and d["x0_minus_y0"] == 0
    assert d["gap_depends_on_w"] == 0 and d["gap_depends_on_beta"] == 0 and d["consistent_at_w_eq_u"] == 0
    c = sp.Symbol("c", real=True)
    assert sp.expand(d["sign_polynomial"] - (2 * c**2 - 2 * c - 1)) == 0


@pytest.mark.parametrize("beta, lam, L1", [(1.0, 1.0, 1.0), (10.0, 1.0, 1.0), (1e3, 0.1, 1.0), (1e5, 4.0, 2.5)])
def test_the_sdp_switches_at_the_closed_form(beta, lam, L1):
    """stam pep at T = 1 (any proper lsc F): a finite worst case 1 % below c* / lam, unbounded 1 % above, at every
    beta (1 and 10 included: the T = 1 onset does not move at small beta)."""
    pytest.importorskip("PEPit")
    from stam.theory.worstcase.pep import stam_pep

    below = stam_pep(lam, 0.99 * C_STAR / lam, beta, 1, L1=L1)
    above = stam_pep(lam, 1.01 * C_STAR / lam, beta, 1, L1=L1)
    assert below.status == "optimal" and below.worst_case is not None and math.isfinite(below.worst_case)
    assert above.status == "unbounded" and above.worst_case is None


class _PointOps:
    """G = 0, F the indicator of the single point {p} (prox_F = p), H = (lam/2)||x - y||^2 (numpy)."""

    def __init__(self, lam, p):
        self.lam, self.p = lam, p

    def grad_y_H(self, x, y):
        return self.lam * (y - x)

    def prox_H(self, z, y, gamma):
        return (z + gamma * self.lam * y) / (1 + gamma * self.lam)

    def prox_F(self, v, gamma):
        return self.p.copy()


@pytest.mark.parametrize("c", [0.5, 1.0, 1.3, 1.36, 1.367, 1.5, 3.0])
def test_the_worst_instance_along_a_run(c):
    """The instance of the derivation, run by stam.steps: G = 0, F = indicator of {u}, y^0 = 0; delta0 = 0 and
    M_1 - M_0 = (2c^2 - 2c - 1)|u|^2 / (2 gamma (1 + c)^2), >= 0 exactly from c*, while S_0 > 0."""
    rng = np.random.default_rng(int(c * 1000))
    lam = float(rng.uniform(0.1, 5))
    gamma, beta = c / lam, float(rng.uniform(1, 1e4))
    u = rng.normal(size=3)
    ops = _PointOps(lam, u)
    st0 = stam_init(np.zeros(3), ops, gamma)
    st1 = stam_step(st0, np.zeros(3), ops, gamma, beta)
    assert np.array_equal(st1.y, st0.y) and np.allclose(st0.x, st0.y)
    sqn = lambda v: float(v @ v)  # noqa: E731

    class Sq:  # the merit's ||.||^2 on numpy vectors
        def __init__(self, st):
            self.x, self.u, self.z = (_V(v) for v in (st.x, st.u, st.z))

    gap = merit_of(Sq(st1), 0.0, gamma) - merit_of(Sq(st0), 0.0, gamma)
    expected = (2 * c * c - 2 * c - 1) * sqn(u) / (2 * gamma * (1 + c) ** 2)
    assert gap == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert (gap >= 0) == (c >= C_STAR)


class _V:
    """A vector whose square is its squared norm (as PEPit points), for merit_of."""

    def __init__(self, v):
        self.v = np.asarray(v, dtype=float)

    def __rmul__(self, k):
        return _V(k * self.v)

    def __sub__(self, o):
        return _V(self.v - o.v)

    def __pow__(self, n):
        assert n == 2
        return float(self.v @ self.v)


def test_onset_by_horizon_moves_up_with_T_only_at_small_beta():
    """The band per horizon (docs/studies/band.md): at beta = 1000 the onset stays c* at T = 1, 2; at beta = 10 it is c* at T = 1
    and higher at T = 2 (the y-block moves)."""
    pytest.importorskip("PEPit")
    from stam.theory.worstcase.onset import onset_by_horizon

    big = onset_by_horizon((1, 2), 1e3, tol=2e-3)
    small = onset_by_horizon((1, 2), 10.0, tol=2e-3)
    assert all(r["lo"] <= C_STAR <= r["hi"] for r in big + small[:1])
    assert small[1]["lo"] > C_STAR + 0.01
