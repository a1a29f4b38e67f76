"""Where ``stam pep`` at ``T = 1`` becomes unbounded, in closed form (issue 39, point 2).

For the paper's class (``G`` ``L1``-smooth, any proper lsc ``F`` reached through its proximal step,
``H = (lam/2)||x - y||^2``) and the normalisation ``delta0 + M0'_T <= 1`` of :mod:`stam.theory.pep`, the
worst case of ``S_0`` at ``T = 1`` is ``+infinity`` exactly when

    gamma * lam >= c* = (1 + sqrt(3)) / 2 = 1.3660254...,

for **every** ``beta > 0`` and ``L1 > 0`` (no bound on ``beta``: it does not move at small ``beta``).
:func:`t1_onset` derives it in sympy from the PEP's own structure, running the project's one STAM update
(:func:`stam.algorithm.stam_init`, :func:`stam.algorithm.stam_step`, the x-step derived from eq. (algx)) on sympy
numbers and the merit ``M_t`` of :func:`stam.theory.pep.merit_of`:

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
:func:`stam.theory.pep.stam_pep` shows it; for ``beta >= 10^3`` ``T = 2, 3`` are unbounded from ``c*`` too.
"""

from __future__ import annotations

import math
from functools import lru_cache

from stam.results import (DICT_OR_NULL, LIST, NONEMPTY_LIST, NONNEG, POS, POS_OR_NULL, POSINT, PROVENANCE, STR,
                          ResultType, Schema, holds, ordered)


class _Ops1D:
    """The operators of :mod:`stam.algorithm` on sympy numbers (one dimension): ``H = (lam/2)(x - y)^2`` with the
    x-step derived in sympy from eq. (algx), and a proximal step of ``F`` returning the next given point and
    recording the point it was asked for (``v^t``)."""

    def __init__(self, lam, points):
        from stam.theory.stamruns import derived_updates

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

    from stam.algorithm import stam_init, stam_step
    from stam.theory.pep import merit_of

    gamma, lam, beta = sp.symbols("gamma lambda beta", positive=True)
    u, w, F0, F1, c = sp.symbols("u w F0 F1 c", real=True)
    y0 = sp.Integer(0)
    ops = _Ops1D(lam, [u, w])
    st0 = stam_init(y0, ops, gamma, z_prev=y0)  # the start rule z^{-1} = y^0: x^0 = y^0
    st1 = stam_step(st0, sp.Integer(0), ops, gamma, beta)  # grad G(y^0) = 0 (delta0 = 0)
    v0, v1 = ops.asked
    s0 = (v0 - st0.u) / gamma  # g_F(u^0), eq. (algu)
    S0 = sp.simplify((0 + ops.grad_y_H(st0.u, st0.y)) ** 2 + (ops.grad_x_H(st0.u, st0.y) + s0) ** 2)
    # the exact interpolation of a proper lsc F through its proximal steps (stam.theory.pep.prox_function_class):
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


def onset_by_horizon(Ts, beta: float, lam: float = 1.0, L1: float = 1.0, lo: float = 0.9, hi: float = 1.6,
                     tol: float = 1e-3, solver: str | None = None) -> list[dict]:
    """Issue 39, point 1: for each horizon ``T`` of ``Ts``, the bracket ``[lo, hi)`` of ``gamma*lam`` (bisection to
    ``tol``) where :func:`stam.theory.pep.stam_pep` (any proper lsc ``F``) turns unbounded, or ``hi`` None where it is
    bounded up to the given ``hi``.  Assumes one switch inside ``[lo, hi]`` (what the solves show)."""
    from stam.theory.pep import stam_pep

    def unbounded(c, T):
        return stam_pep(lam, c / lam, beta, T, L1=L1, solver=solver).status == "unbounded"

    rows = []
    for T in Ts:
        a, b = lo, hi
        if not unbounded(b, T):
            rows.append({"T": int(T), "beta": beta, "lo": b, "hi": None})
            continue
        if unbounded(a, T):
            rows.append({"T": int(T), "beta": beta, "lo": None, "hi": a})
            continue
        while b - a > tol:
            m = (a + b) / 2
            a, b = (a, m) if unbounded(m, T) else (m, b)
        rows.append({"T": int(T), "beta": beta, "lo": a, "hi": b})
    return rows


def decay(cs, Ts, beta: float, lam: float = 1.0, L1: float = 1.0, solver: str | None = None) -> list[dict]:
    """``T W(T)`` (``W`` the worst case of ``stam pep``, any proper lsc ``F``) for each ``gamma*lam`` of ``cs`` and
    horizon of ``Ts``: bounded by a constant where a bound ``C / T`` holds; growing like ``T`` where the worst case no
    longer decays (None: unbounded)."""
    from stam.theory.pep import stam_pep

    out = []
    for c in cs:
        row = {"gamma_lam": c, "beta": beta, "T_W": []}
        for T in Ts:
            r = stam_pep(lam, c / lam, beta, T, L1=L1, solver=solver)
            row["T_W"].append(None if r.status == "unbounded" or r.worst_case is None else T * r.worst_case)
        out.append(row)
    return out


def _in_range(obj) -> bool:
    rng = obj.get("gamma_lam_range")
    if not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(v, (int, float)) for v in rng)
            and rng[0] < rng[1]):
        return True  # the range's own rule names it
    return all(not isinstance(r, dict) or all(r.get(k) is None or rng[0] <= r[k] <= rng[1] for k in ("lo", "hi"))
               for r in obj.get("rows") or [])


def _unique_rows(obj) -> bool:
    keys = [(r.get("beta"), r.get("T")) for r in obj.get("rows") or [] if isinstance(r, dict)]
    return len(keys) == len(set(keys))


#: one horizon of :func:`onset_by_horizon`: ``[lo, hi)`` brackets the onset of unboundedness in ``gamma*lam``;
#: ``hi`` None: bounded up to ``lo`` (the range's end), ``lo`` None: unbounded from ``hi`` (the range's start) on
BAND_ROW = Schema(required={"T": POSINT, "beta": POS, "lo": POS_OR_NULL, "hi": POS_OR_NULL},
                  rules=(ordered("lo", "hi"),
                         holds("hi", lambda r: r.get("lo") is not None or r.get("hi") is not None,
                               "lo and hi are both null: a row brackets the onset, or says bounded (hi null) or "
                               "unbounded (lo null) over the whole range")))

#: :func:`band`: certified / open / refuted against ``gamma*lam`` for each horizon (issue 39, point 1)
PEP_BAND = ResultType(
    "pep-band", Schema(required={"rows": NONEMPTY_LIST, "gamma_lam_range": LIST, "certified": POS_OR_NULL,
                                 "lam": POS, "L1": POS},
                       optional={"kind": STR, "tol": POS, "certified_from": STR, "seconds": NONNEG,
                                 "provenance": DICT_OR_NULL},
                       each={"rows": BAND_ROW}, inner={"provenance": PROVENANCE}, items={"gamma_lam_range": POS},
                       rules=(holds("gamma_lam_range", lambda o: len(o["gamma_lam_range"]) == 2
                                    and o["gamma_lam_range"][0] < o["gamma_lam_range"][1],
                                    "must be [lo, hi] with lo < hi"),
                              holds("rows", _in_range, "a row's lo or hi lies outside gamma_lam_range"),
                              holds("rows", _unique_rows, "two rows have the same beta and T"))),
    files="pep_band.json", writer="benchmarks/pep_band.py --out FILE")


def band(Ts, betas, certified: float | None, lam: float = 1.0, L1: float = 1.0, lo: float = 0.9, hi: float = 1.6,
         tol: float = 1e-3, solver: str | None = None, certified_from: str = "") -> dict:
    """The ``pep-band`` result (:data:`PEP_BAND`) of issue 39, point 1: for each ``beta`` of ``betas`` and horizon
    ``T`` of ``Ts``, the onset of unboundedness of :func:`stam.theory.pep.stam_pep` (any proper lsc ``F``, the
    normalisation ``delta0 + M0'_T <= 1``; :func:`onset_by_horizon`): refuted from there on for a bound of Theorem
    conv's form (eq. (con-inequality)) with ``M0'_T``; ``certified`` the largest ``gamma*lam`` a potential certifies
    (e.g. the region of ``stam pep --region``, what ``certified_from`` names); in between: open."""
    import time

    from stam.io import provenance

    if certified is not None and not (isinstance(certified, (int, float)) and math.isfinite(certified) and certified > 0):
        raise ValueError(f"certified={certified!r}: give a finite gamma*lambda > 0 or None")
    t0 = time.perf_counter()
    rows = [r for beta in betas for r in onset_by_horizon(Ts, beta, lam=lam, L1=L1, lo=lo, hi=hi, tol=tol, solver=solver)]
    return {"kind": "pep-band", "lam": lam, "L1": L1, "gamma_lam_range": [lo, hi], "tol": tol, "certified": certified,
            "certified_from": certified_from, "rows": rows, "seconds": round(time.perf_counter() - t0, 1),
            "provenance": provenance()}


def band_segments(result: dict) -> list[dict]:
    """Per row of a ``pep-band`` result, its zones along ``gamma*lam`` (what the figure ``pep-band`` draws):
    ``certified`` ``[0, certified)``, ``open`` up to the bracket, ``bracket`` the bisection's ``[lo, hi)``,
    ``refuted`` ``[hi, range end]``, ``unknown`` beyond the range (not searched; ``end`` None); each zone
    ``(start, end)`` or None."""
    r0, r1 = result["gamma_lam_range"]
    cert = result.get("certified")
    out = []
    for row in result["rows"]:
        lo, hi = row["lo"], row["hi"]
        start_open = cert if cert is not None else 0.0
        open_end = lo if hi is not None and lo is not None else (r1 if hi is None else r0)
        out.append({
            "T": row["T"], "beta": row["beta"],
            "certified": (0.0, cert) if cert is not None else None,
            "open": (start_open, open_end) if open_end > start_open else None,
            "bracket": (lo, hi) if lo is not None and hi is not None else None,
            "refuted": (hi, r1) if hi is not None else None,
            "unknown": (r1, None),
        })
    return out
