"""Where ``stam pep`` at ``T = 1`` becomes unbounded, in closed form (issue 39, point 2).

For the paper's class (``G`` ``L1``-smooth, any proper lsc ``F`` reached through its proximal step,
``H = (lam/2)||x - y||^2``) and the normalisation ``delta0 + M0'_T <= 1`` of :mod:`stam.theory.worstcase.pep`, the
worst case of ``S_0`` at ``T = 1`` is ``+infinity`` exactly when

    gamma * lam >= c* = (1 + sqrt(3)) / 2 = 1.3660254...,

for **every** ``beta > 0`` and ``L1 > 0`` (no bound on ``beta``: it does not move at small ``beta``).
:func:`t1_onset` derives it in sympy from the PEP's own structure, running the project's one STAM update
(:func:`stam.steps.stam_init`, :func:`stam.steps.stam_step`, the x-step derived from eq. (algx)) on sympy
numbers and the merit ``M_t`` of :func:`stam.theory.worstcase.pep.merit_of`:

1. ``delta0 >= ||grad G(y^0)||^2 / (2 L1) + H(x^0, y^0) >= 0`` (the PEP's constraint on ``G^inf``, Lemma Lip-lemma)
   and ``M0'_1 = M_0 - min(M_0, M_1) >= 0``, and the PEP is homogeneous: it is unbounded as soon as one instance has
   ``S_0 > 0`` with ``delta0 = M0'_1 = 0``, and an unbounded direction has ``delta0 = M0'_1 = 0``.  ``delta0 = 0``
   forces ``grad G(y^0) = 0`` and ``x^0 = y^0`` (which the start rule ``z^{-1} = y^0`` gives anyway); then the
   y-step eq. (algy) does not move: ``y^1 = y^0``, whatever ``beta`` (and ``G`` is seen at one point only, so
   ``L1`` plays no part).
2. Put ``y^0 = 0``, ``u^0 = u`` (so ``z^0 = u``, ``s_0 = -u/gamma``, ``S_0 = (lam^2 + (lam - 1/gamma)^2) u^2``), and
   ``u^1 = w``.  The exact interpolation of a proper lsc ``F`` through the two proximal steps bounds
   ``F(u^1) - F(u^0)`` above by ``(||u - v^1||^2 - ||w - v^1||^2) / (2 gamma)`` (``v^1 = 2x^1 - z^0``); at that
   value ``M_1 - M_0 = (2c^2 - 2c - 1) u^2 / (2 gamma (1 + c)^2)`` with ``c = gamma lam``: independent of ``w`` and
   ``beta``.  (In any dimension every term is an isotropic quadratic form in ``(u, w)``, ``A|u|^2 + B<u, w> +
   C|w|^2``, whose coefficients the one-dimensional computation determines: ``B = C = 0``.)
3. So ``M_1 >= M_0`` with ``u != 0`` exactly when ``2c^2 - 2c - 1 >= 0``, i.e. ``c >= c*``; the instance is
   ``G = 0``, ``F`` the indicator of the single point ``{u}`` (``w = u``, ``F(u^1) = F(u^0)``): the merit of
   Lemma conv-lemma does not decrease at the first step while ``S_0 > 0``.  Below ``c*`` no such direction exists
   (``M_1 - M_0 < 0`` for every ``u != 0``), and the SDP finds a finite worst case (a test, at several ``beta``).

The region's "refuted from" column (``stam pep --region``, a 2 % bracket) and the issue's independent SDPs
(1.36602) agree with ``c*``.  At ``T >= 2`` the onset does depend on ``beta``: with ``beta <= 10`` (``L1 = 1``) the
worst case at ``T = 2, 3`` stays finite just above ``c*`` (the y-block moves enough for ``S_1`` to matter),
:func:`stam.theory.worstcase.pep.stam_pep` shows it; for ``beta >= 10^3`` ``T = 2, 3`` are unbounded from ``c*`` too.

Below ``c*`` every horizon's worst case is finite, but the ``O(1/T)`` decay ends earlier: from ``gamma lam >= c_beta =
(2 beta - L1 - lam) / (2 beta - L1)`` STAM has a 2-periodic run with ``S_t`` and ``M_t`` constant (:func:`two_cycle`,
exact), so no bound ``C (delta0 + M0'_T) / T`` holds; the potentials of :mod:`stam.theory.worstcase.history` certify up to
``c_beta`` (issue 39, point 1: the band is closed).  :func:`band` stores the onsets per horizon (full gradient and
minibatches), the potentials and ``c_beta`` as a ``pep-band`` result.
"""

from __future__ import annotations

import math
from functools import lru_cache

from stam.results import (COUNT, DICT_OR_NULL, LIST, NONEMPTY_LIST, NONNEG, POS, POS_OR_NULL, POSINT, PROVENANCE, STR,
                          ResultType, Schema, distinct, holds, one_of, ordered)
from stam.theory.settings import Bisection, no_other


class _Ops1D:
    """The operators of :mod:`stam.steps` on sympy numbers (one dimension): ``H = (lam/2)(x - y)^2`` with the
    x-step derived in sympy from eq. (algx), and a proximal step of ``F`` returning the next given point and
    recording the point it was asked for (``v^t``)."""

    def __init__(self, lam, points):
        from stam.theory.symbolic.stamruns import derived_updates

        self.lam = lam
        self._x_step = derived_updates()[1]
        self._points = list(points)
        self.asked: list = []

    def grad_y_H(self, x, y):
        return self.lam * (y - x)

    def grad_x_H(self, x, y):
        return self.lam * (x - y)

    def prox_H(self, z, y, gamma):
        return self._x_step(y, z, gamma, self.lam)

    def prox_F(self, v, gamma):
        self.asked.append(v)
        return self._points.pop(0)


@lru_cache(maxsize=None)
def t1_onset() -> dict:
    """The closed form of the module docstring, derived in sympy: ``threshold`` (``c*``, a sympy number),
    ``gap`` (``M_1 - M_0`` at the largest ``F(u^1) - F(u^0)`` the class allows, in ``c = gamma lam``, ``gamma`` and
    ``u``), ``S0``, and the checks made on the way (``y1_moves``: ``y^1 - y^0``; ``gap_depends_on_w``,
    ``gap_depends_on_beta``: the derivatives; ``consistent_at_w_eq_u``: the other interpolation inequality at
    ``w = u``)."""
    import sympy as sp

    from stam.steps import stam_init, stam_step
    from stam.theory.worstcase.pep import merit_of

    gamma, lam, beta = sp.symbols("gamma lambda beta", positive=True)
    u, w, F0, F1, c = sp.symbols("u w F0 F1 c", real=True)
    y0 = sp.Integer(0)
    ops = _Ops1D(lam, [u, w])
    st0 = stam_init(y0, ops, gamma, z_prev=y0)  # the start rule z^{-1} = y^0: x^0 = y^0
    st1 = stam_step(st0, sp.Integer(0), ops, gamma, beta)  # grad G(y^0) = 0 (delta0 = 0)
    v0, v1 = ops.asked
    s0 = (v0 - st0.u) / gamma  # g_F(u^0), eq. (algu)
    S0 = sp.simplify((0 + ops.grad_y_H(st0.u, st0.y)) ** 2 + (ops.grad_x_H(st0.u, st0.y) + s0) ** 2)
    # the exact interpolation of a proper lsc F through its proximal steps (stam.theory.worstcase.pep.prox_function_class):
    # F_j + |u_j - v_j|^2/(2 gamma) <= F_i + |u_i - v_j|^2/(2 gamma); j = 1 bounds F1 - F0 above
    top = ((st0.u - v1) ** 2 - (st1.u - v1) ** 2) / (2 * gamma)
    other = sp.simplify(F1 + (st1.u - v0) ** 2 / (2 * gamma) - F0 - (st0.u - v0) ** 2 / (2 * gamma))  # j = 0: >= 0
    gap = merit_of(st1, F0 + top, gamma) - merit_of(st0, F0, gamma)
    gap_c = sp.factor(sp.simplify(gap.subs(lam, c / gamma)))
    quad = sp.factor(sp.simplify(gap_c * 2 * gamma * (1 + c) ** 2 / u**2))  # the sign of the gap
    roots = [r for r in sp.solve(sp.Eq(quad, 0), c) if r.is_positive]
    return {
        "threshold": roots[0] if len(roots) == 1 else None,
        "sign_polynomial": quad,
        "gap": gap_c,
        "S0": sp.factor(S0),
        "y1_moves": sp.simplify(st1.y - st0.y),
        "x0_minus_y0": sp.simplify(st0.x - st0.y),
        "gap_depends_on_w": sp.simplify(sp.diff(gap_c, w)),
        "gap_depends_on_beta": sp.simplify(sp.diff(gap_c, beta)),
        "consistent_at_w_eq_u": sp.simplify(other.subs({w: u, F1: F0 + top.subs(w, u)})),
    }


def t1_onset_value() -> float:
    """``c* = (1 + sqrt(3)) / 2`` as a float (:func:`t1_onset`)."""
    return float(t1_onset()["threshold"])


#: the largest Gram matrix of :func:`stam.theory.worstcase.pep.stam_pep` that :func:`onset_by_horizon` bisects on (the
#: minibatch PEP grows like C(N, b)^T: N = 2, b = 1 has 30 points at T = 3, about 1.5 s a solve, and 62 at T = 4,
#: a minute; N = 3 has 26 at T = 2 and 80 at T = 3, three minutes)
ONSET_MAX_GRAM = 32


def onset_by_horizon(Ts, beta: float, *, bisection: Bisection | None = None, N: int = 1, b: int = 1,
                     **fields) -> list[dict]:
    """Issue 39, point 1: for each horizon ``T`` of ``Ts``, the bracket ``[lo, hi)`` of ``gamma*lam`` (bisection to
    ``tol``) where :func:`stam.theory.worstcase.pep.stam_pep` (any proper lsc ``F``) turns unbounded, or ``hi`` None where it is
    bounded up to the given ``hi``.  Assumes one switch inside ``[lo, hi]`` (what the solves show).  ``N, b``: the
    stochastic PEP with b-nice minibatches of ``G = (1/N) sum_i G_i`` (the rows then carry ``N`` and ``b``); a horizon
    whose PEP exceeds :data:`ONSET_MAX_GRAM` points is refused (ValueError).  ``bisection``: ``lam``, ``L1``, ``lo``,
    ``hi``, ``tol``, ``solver`` (:class:`stam.theory.settings.Bisection`), its fields also by keyword."""
    from stam.theory.worstcase.pep import gram_size, stam_pep

    bis = Bisection.of(bisection, fields)
    no_other(fields, "onset_by_horizon")
    lam, L1, lo, hi, tol, solver = bis.lam, bis.L1, bis.lo, bis.hi, bis.tol, bis.solver
    too_big = [T for T in Ts if gram_size(int(T), N, b) > ONSET_MAX_GRAM]
    if too_big:
        raise ValueError(f"T={too_big} with N={N}, b={b}: the PEP has more than {ONSET_MAX_GRAM} points "
                         f"(stam.theory.worstcase.pep.gram_size); allowed: T with gram_size(T, N, b) <= {ONSET_MAX_GRAM}")

    def unbounded(c, T):
        return stam_pep(lam, c / lam, beta, T, L1=L1, solver=solver, N=N, b=b).status == "unbounded"

    rows = []
    tag = {} if (N, b) == (1, 1) else {"N": N, "b": b}
    for T in Ts:
        a, z = lo, hi
        if not unbounded(z, T):
            rows.append({"T": int(T), "beta": beta, "lo": z, "hi": None, **tag})
            continue
        if unbounded(a, T):
            rows.append({"T": int(T), "beta": beta, "lo": None, "hi": a, **tag})
            continue
        while z - a > tol:
            m = (a + z) / 2
            a, z = (a, m) if unbounded(m, T) else (m, z)
        rows.append({"T": int(T), "beta": beta, "lo": a, "hi": z, **tag})
    return rows


def decay(cs, Ts, beta: float, lam: float = 1.0, L1: float = 1.0, solver: str | None = None, N: int = 1,
          b: int = 1) -> list[dict]:
    """``T W(T)`` (``W`` the worst case of ``stam pep``, any proper lsc ``F``; ``N, b``: with minibatches) for each
    ``gamma*lam`` of ``cs`` and horizon of ``Ts``: bounded by a constant where a bound ``C / T`` holds; growing like
    ``T`` where the worst case no longer decays (None: unbounded)."""
    from stam.theory.worstcase.pep import stam_pep

    out = []
    for c in cs:
        row = {"gamma_lam": c, "beta": beta, "T_W": []}
        for T in Ts:
            r = stam_pep(lam, c / lam, beta, T, L1=L1, solver=solver, N=N, b=b)
            row["T_W"].append(None if r.status == "unbounded" or r.worst_case is None else T * r.worst_case)
        out.append(row)
    return out


# --------------------------------------------------------------------------- where 1/T decay ends: a 2-cycle
def cycle_threshold(beta, lam=1, L1=1):
    """``c_beta = (2 beta - L1 - lam) / (2 beta - L1)``, exactly (a :class:`fractions.Fraction` of the parameters'
    stored values): from ``gamma*lam = c_beta`` on STAM has the 2-periodic run of :func:`two_cycle`, so no bound
    ``C (delta0 + M0'_T) / T`` holds (the ``O(1/T)`` rate of Theorem conv's form); None where ``2 beta <= L1 + lam``
    (the y-step overshoots; not covered)."""
    from fractions import Fraction

    beta, lam, L1 = Fraction(beta), Fraction(lam), Fraction(L1)
    return None if 2 * beta <= L1 + lam else (2 * beta - L1 - lam) / (2 * beta - L1)


class _CycleOps:
    """The operators of :mod:`stam.steps` in one dimension on Fractions: ``H = (lam/2)(x - y)^2`` (the x-step
    eq. (algx) in closed form, ``(gamma lam y + z) / (1 + gamma lam)``: :func:`two_cycle` checks it against the sympy
    derivation) and ``F`` the indicator of ``{-1, +1}``, whose proximal step eq. (algu) is the nearest point (a tie,
    ``v = 0``, may return either: the run takes the sign opposite to ``z``)."""

    def __init__(self, lam):
        self.lam = lam
        self.z = None

    def grad_y_H(self, x, y):
        return self.lam * (y - x)

    def grad_x_H(self, x, y):
        return self.lam * (x - y)

    def prox_H(self, z, y, gamma):
        self.z = z
        return (gamma * self.lam * y + z) / (1 + gamma * self.lam)

    def prox_F(self, v, gamma):
        return 1 if v > 0 else -1 if v < 0 else (-1 if self.z > 0 else 1)


def two_cycle(lam, gamma, beta, L1=1, periods: int = 2) -> dict | None:
    """Issue 39, point 1: the exact 2-periodic run of STAM that refutes every ``O(1/T)`` bound from
    ``c = gamma lam >= c_beta`` (:func:`cycle_threshold`), in exact rational arithmetic.

    The instance (one dimension, in the paper's class): ``G(y) = (L1/2) y^2`` (``L1``-smooth, ``G^inf = 0``), ``F`` the
    indicator of ``{-1, +1}`` (proper, lsc, nonconvex), ``H = (lam/2)(x - y)^2``.  Look for a run with ``(y, x, u,
    z)`` at ``t + 1`` equal to minus that at ``t``: eq. (algy) gives ``y = -kappa x`` with ``kappa = lam / (2 beta - L1 -
    lam)``, eq. (algx) ``z = c y - (1 + c) x``, eq. (algz) with ``u^{t+1} = -1`` ``z = (1 - x)/2``; so ``x = -1/D``,
    ``D = 1 + 2 c (1 + kappa)``, and the proximal step eq. (algu) returns ``-1`` at ``v^{t+1} = 3/(2D) - 1/2`` exactly
    when ``v^{t+1} <= 0``, i.e. ``D >= 3``, i.e. ``c >= 1/(1 + kappa) = c_beta``.  Along the run ``S_t`` (Theorem conv's
    measure, as in :mod:`stam.theory.worstcase.pep`) is a constant ``S > 0`` and ``M_t`` (:func:`stam.theory.worstcase.pep.merit_of`) a
    constant, so from the
    start ``(y^0, z^{-1})`` of the orbit (a free start: Algorithm 1 chooses its initial point) ``delta0 + M0'_T =
    delta0`` and ``min_{t<T} S_t = S`` for every ``T``: the worst case of ``stam pep --free-start`` is at least ``S /
    delta0`` at every horizon, and ``T W(T) -> infinity``.  With ``G_i = G`` for every ``i`` the minibatch gradient is
    ``grad G`` and ``Delta = 0``: the same run refutes the stochastic PEP's ``O(1/T)`` bounds too.

    The run is checked, not assumed: ``periods`` periods of the project's one update (:func:`stam.steps.stam_init`,
    :func:`stam.steps.stam_step`) on Fractions from that start must return to it exactly, with ``S_t`` and ``M_t``
    constant.  Returns None below ``c_beta`` (or when ``2 beta <= L1 + lam``); else the orbit, ``S``, ``delta0``, ``M``
    (Fractions) and ``threshold``."""
    from fractions import Fraction

    from stam.steps import stam_init, stam_step
    from stam.theory.worstcase.pep import merit_of

    lam, gamma, beta, L1 = (Fraction(v) for v in (lam, gamma, beta, L1))
    c = gamma * lam
    cb = cycle_threshold(beta, lam, L1)
    if cb is None or c < cb:
        return None
    kappa = lam / (2 * beta - L1 - lam)
    x = -1 / (1 + 2 * c * (1 + kappa))
    y, z = -kappa * x, (1 - x) / 2
    ops = _CycleOps(lam)
    z_prev = -z  # z^{t-1}: the orbit at t - 1 is minus the orbit at t
    states = [stam_init(y, ops, gamma, z_prev=z_prev)]  # x^0, u^0, z^0 from (y^0, z^{-1}): eq. (algx), (algu), (algz)
    for _ in range(2 * periods):
        states.append(stam_step(states[-1], L1 * states[-1].y, ops, gamma, beta))  # grad G(y^t) = L1 y^t
    zs = [z_prev] + [st.z for st in states]
    S = [(L1 * st.y + lam * (st.y - st.u)) ** 2 + (lam * (st.u - st.y) + (2 * st.x - zs[t] - st.u) / gamma) ** 2
         for t, st in enumerate(states)]  # s_t = g_F(u^t) = (v^t - u^t) / gamma, eq. (algu)
    M = [merit_of(st, 0, gamma) for st in states]  # F(u^t) = 0 on the set
    orbit = tuple(states[0])
    checks = {
        "x_step_is_eq_algx": _x_step_matches(lam, gamma, y, z_prev, states[0].x),
        "antiperiodic": all(tuple(b) == tuple(-v for v in a) for a, b in zip(states, states[1:])),
        "periodic": all(tuple(st) == orbit for st in states[::2]),
        "S_constant": len(set(S)) == 1, "M_constant": len(set(M)) == 1, "S_positive": S[0] > 0,
    }
    delta0 = L1 / 2 * orbit[0] ** 2 + lam / 2 * (orbit[1] - orbit[0]) ** 2  # G(y^0) + H(x^0, y^0) - G^inf
    return {"threshold": cb, "gamma_lam": c, "orbit": dict(zip(("y", "x", "u", "z"), orbit), z_prev=z_prev),
            "S": S[0], "M": M[0], "delta0": delta0, "checks": checks, "holds": all(checks.values())}


def _x_step_matches(lam, gamma, y, z, x) -> bool:
    """The closed-form x-step of :class:`_CycleOps` is the sympy derivation of eq. (algx)
    (:func:`stam.theory.symbolic.stamruns.derived_updates`) at these Fractions."""
    import sympy as sp

    from stam.theory.symbolic.stamruns import derived_updates

    q = [sp.Rational(v.numerator, v.denominator) for v in (y, z, gamma, lam, x)]
    return sp.simplify(derived_updates()[1](*q[:4]) - q[4]) == 0


def _in_range(obj) -> bool:
    rng = obj.get("gamma_lam_range")
    if not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(v, (int, float)) for v in rng)
            and rng[0] < rng[1]):
        return True  # the range's own rule names it
    return all(not isinstance(r, dict) or all(r.get(k) is None or rng[0] <= r[k] <= rng[1] for k in ("lo", "hi"))
               for r in obj.get("rows") or [])


def sampling(row: dict) -> tuple:
    """``(N, b)`` of a row of a ``pep-band`` result: ``(1, 1)`` (the full gradient) where the row has none."""
    return (row.get("N", 1), row.get("b", 1))


def _sampling_ok(row) -> bool:
    N, b = sampling(row)
    return not (isinstance(N, int) and isinstance(b, int)) or b <= N


#: one horizon of :func:`onset_by_horizon`: ``[lo, hi)`` brackets the onset of unboundedness in ``gamma*lam``;
#: ``hi`` None: bounded up to ``lo`` (the range's end), ``lo`` None: unbounded from ``hi`` (the range's start) on
BAND_ROW = Schema(required={"T": POSINT, "beta": POS, "lo": POS_OR_NULL, "hi": POS_OR_NULL},
                  optional={"N": POSINT, "b": POSINT},
                  rules=(ordered("lo", "hi"), holds("b", _sampling_ok, "must be <= N (b-nice minibatches)"),
                         holds("hi", lambda r: r.get("lo") is not None or r.get("hi") is not None,
                               "lo and hi are both null: a row brackets the onset, or says bounded (hi null) or "
                               "unbounded (lo null) over the whole range")))

#: one potential of :mod:`stam.theory.worstcase.history` (or, with ``N``, ``b``, the one-step minibatch template of
#: :func:`stam.theory.worstcase.lyapunov.certify_stam`): the largest ``gamma*lam`` certified and proven (``certified``, None when
#: the range's start is not) and the smallest found not (``fails``, None when the range's end is certified)
HISTORY_ROW = Schema(required={"template": STR, "k": POSINT, "h": COUNT, "beta": POS, "certified": POS_OR_NULL,
                               "fails": POS_OR_NULL},
                     optional={"rho": POS_OR_NULL, "solves": COUNT, "seconds": NONNEG, "N": POSINT, "b": POSINT},
                     rules=(ordered("certified", "fails"), one_of("template", ("paper", "general")),
                            holds("b", _sampling_ok, "must be <= N (b-nice minibatches)")))
#: :func:`cycle_threshold` at one ``beta``, with the constant ``S`` and ``delta0`` of :func:`two_cycle` there
CYCLE_ROW = Schema(required={"beta": POS, "threshold": POS}, optional={"S": POS, "delta0": POS, "exact": STR})

#: :func:`band`: certified / open / refuted against ``gamma*lam`` for each horizon (issue 39, point 1); optional
#: (files of before stay readable): rows of minibatch PEPs (``N``, ``b``), ``history`` (:data:`HISTORY_ROW`) and
#: ``cycles`` (:data:`CYCLE_ROW`), ``history_lo`` (where the bisections of ``history`` start in gamma*lambda)
PEP_BAND = ResultType(
    "pep-band", Schema(required={"rows": NONEMPTY_LIST, "gamma_lam_range": LIST, "certified": POS_OR_NULL,
                                 "lam": POS, "L1": POS},
                       optional={"kind": STR, "tol": POS, "certified_from": STR, "seconds": NONNEG,
                                 "provenance": DICT_OR_NULL, "history": LIST, "cycles": LIST,
                                 "history_lo": POS},
                       each={"rows": BAND_ROW, "history": HISTORY_ROW, "cycles": CYCLE_ROW},
                       inner={"provenance": PROVENANCE}, items={"gamma_lam_range": POS},
                       rules=(holds("gamma_lam_range", lambda o: len(o["gamma_lam_range"]) == 2
                                    and o["gamma_lam_range"][0] < o["gamma_lam_range"][1],
                                    "must be [lo, hi] with lo < hi"),
                              holds("rows", _in_range, "a row's lo or hi lies outside gamma_lam_range"),
                              distinct("rows", "beta", "T", "N", "b"),
                              distinct("history", "template", "k", "h", "beta", "N", "b", what="the potential"),
                              distinct("cycles", "beta", what="the threshold"))),
    files="pep_band.json", writer="benchmarks/pep_band.py --out FILE")


def _onset_task(task) -> list[dict]:
    (Ts, beta, N, b), bisection = task
    return onset_by_horizon(list(Ts), beta, bisection=bisection, N=N, b=b)


def band(Ts, betas, certified: float | None, *, bisection: Bisection | None = None, certified_from: str = "",
         sampled=(), history: list | None = None, workers: int = 1, **fields) -> dict:
    """The ``pep-band`` result (:data:`PEP_BAND`) of issue 39, point 1: for each ``beta`` of ``betas`` and horizon
    ``T`` of ``Ts``, the onset of unboundedness of :func:`stam.theory.worstcase.pep.stam_pep` (any proper lsc ``F``, the
    normalisation ``delta0 + M0'_T <= 1``; :func:`onset_by_horizon`): refuted from there on for a bound of Theorem
    conv's form (eq. (con-inequality)) with ``M0'_T``; ``certified`` the largest ``gamma*lam`` a potential certifies
    (e.g. the region of ``stam pep --region``, what ``certified_from`` names); in between: open.  ``sampled``:
    ``(N, b, Ts)`` triples, the same for the stochastic PEP with b-nice minibatches; ``history``: rows of
    :func:`stam.theory.worstcase.history.history_rows` (stored as they are); ``cycles``: :func:`cycle_threshold` at each beta,
    with the 2-cycle's ``S`` and ``delta0`` there (:func:`two_cycle`, checked exactly).  ``workers``: the
    horizons' bisections of each (beta, sampling) in that many processes (the rows in the same order).
    ``bisection``: ``lam``, ``L1``, ``lo``, ``hi``, ``tol``, ``solver`` of :func:`onset_by_horizon`
    (:class:`stam.theory.settings.Bisection`), its fields also by keyword."""
    import time
    from fractions import Fraction

    from stam.io import provenance

    bis = Bisection.of(bisection, fields)
    no_other(fields, "band")
    lam, L1, lo, hi, tol = bis.lam, bis.L1, bis.lo, bis.hi, bis.tol
    if certified is not None and not (isinstance(certified, (int, float)) and math.isfinite(certified) and certified > 0):
        raise ValueError(f"certified={certified!r}: give a finite gamma*lambda > 0 or None")
    t0 = time.perf_counter()
    cycles = []
    for beta in betas:
        cb = cycle_threshold(beta, lam, L1)
        if cb is not None:
            run = two_cycle(lam, cb / Fraction(lam), beta, L1)  # gamma = c_beta / lam exactly
            assert run is not None and run["holds"], run  # the exact checks of the 2-cycle at its threshold
            cycles.append({"beta": beta, "threshold": float(cb), "S": float(run["S"]), "delta0": float(run["delta0"]),
                           "exact": str(cb)})
    tasks = [(tuple(Ts), beta, 1, 1) for beta in betas] + [(tuple(Ts_s), beta, N, b) for N, b, Ts_s in sampled
                                                          for beta in betas]
    if workers > 1:  # PEPit keeps class-level counters: one PEP at a time per process, so processes
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(_onset_task, [(t, bis) for t in tasks]))
    else:
        parts = [_onset_task((t, bis)) for t in tasks]
    rows = [r for part in parts for r in part]
    out = {"kind": "pep-band", "lam": lam, "L1": L1, "gamma_lam_range": [lo, hi], "tol": tol, "certified": certified,
           "certified_from": certified_from, "rows": rows, "cycles": cycles}
    if history is not None:
        out["history"] = list(history)
    out.update(seconds=round(time.perf_counter() - t0, 1), provenance=provenance())
    return out


def _cycle_at(result: dict, beta) -> float | None:
    return next((c["threshold"] for c in result.get("cycles") or [] if c["beta"] == beta), None)


def certified_at(result: dict, beta, N: int = 1, b: int = 1) -> float | None:
    """The largest ``gamma*lam`` certified at ``beta`` with the sampling ``(N, b)`` among the ``history`` rows of a
    ``pep-band`` result (one-step and k-step potentials, proven; None where they certify nothing); where it has no
    such row, the result's ``certified`` (a full-gradient region's) for the full gradient, None for minibatches."""
    rows = [h for h in result.get("history") or [] if h["beta"] == beta and sampling(h) == (N, b)]
    if rows:
        return max((h["certified"] for h in rows if h["certified"] is not None), default=None)
    return result.get("certified") if (N, b) == (1, 1) else None


def band_segments(result: dict) -> list[dict]:
    """Per row of a ``pep-band`` result, its zones along ``gamma*lam`` (what the figure ``pep-band`` draws):
    ``certified`` ``[0, certified)`` (:func:`certified_at`), ``open`` up to the 2-cycle's threshold or the bracket,
    ``no_decay`` from the threshold of :func:`two_cycle` (``cycles``: no ``O(1/T)`` bound) to the bracket, ``bracket``
    the bisection's ``[lo, hi)``, ``refuted`` ``[hi, range end]`` (unbounded at that horizon), ``unknown`` beyond the
    range (not searched; ``end`` None); each zone ``(start, end)`` or None; ``N``, ``b`` the row's sampling."""
    r0, r1 = result["gamma_lam_range"]
    out = []
    for row in result["rows"]:
        lo, hi = row["lo"], row["hi"]
        N, b = sampling(row)
        cert = certified_at(result, row["beta"], N, b)
        start_open = cert if cert is not None else 0.0
        open_end = lo if hi is not None and lo is not None else (r1 if hi is None else r0)
        cyc = _cycle_at(result, row["beta"])
        no_decay = (max(cyc, start_open), open_end) if cyc is not None and open_end > max(cyc, start_open) else None
        if no_decay is not None:
            open_end = no_decay[0]
        out.append({
            "T": row["T"], "beta": row["beta"], "N": N, "b": b,
            "certified": (0.0, cert) if cert is not None else None,
            "open": (start_open, open_end) if open_end > start_open else None,
            "no_decay": no_decay,
            "bracket": (lo, hi) if lo is not None and hi is not None else None,
            "refuted": (hi, r1) if hi is not None else None,
            "unknown": (r1, None),
        })
    return out


def history_segments(result: dict) -> list[dict]:
    """Per ``history`` row of a ``pep-band`` result (a potential of :mod:`stam.theory.worstcase.history`), its zones along
    ``gamma*lam``: ``certified`` ``[0, certified)``, ``open`` up to the 2-cycle's threshold (or the first point not
    certified, where the result has no cycle at that beta), ``no_decay`` from the threshold to the range's end."""
    r1 = result["gamma_lam_range"][1]
    out = []
    for h in result.get("history") or []:
        cert, cyc = h["certified"], _cycle_at(result, h["beta"])
        start = cert if cert is not None else 0.0
        end = cyc if cyc is not None else (h["fails"] if h["fails"] is not None else r1)
        out.append({**{k: h[k] for k in ("template", "k", "h", "beta")}, "N": sampling(h)[0], "b": sampling(h)[1],
                    "certified": (0.0, cert) if cert is not None else None,
                    "open": (start, end) if end > start else None,
                    "no_decay": (max(cyc, start), r1) if cyc is not None and r1 > max(cyc, start) else None})
    return out
