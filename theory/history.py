"""Potentials with history: k-step decrease conditions for STAM (issue 39, point 1, "close the band").

One-step potentials (:mod:`stam.theory.lyapunov`) certify STAM for any proper lsc ``F`` up to ``gamma*lam`` just
below 1, and ``stam pep`` is unbounded from ``(1 + sqrt 3)/2`` (:mod:`stam.theory.onset`); in between nothing was
certified or refuted.  This module asks whether potentials that see more than one step certify beyond ``gamma*lam =
1``.  The class is the paper's (``G`` ``L1``-smooth nonconvex, ``F`` any proper lsc function reached through its
proximal step eq. (algu), ``H = (lam/2)||x - y||^2``), the method deterministic STAM (Algorithm 1, eq. (algalg1),
the full gradient), run by the project's one update (:func:`stam.algorithm.stam_init`, :func:`stam.algorithm.stam_step`)
on coefficient vectors, as in :func:`stam.theory.templates.stam_step_sdp`.

**The window.**  ``h + k + 1`` consecutive iterates ``t - h, ..., t + k`` are described by ``w = y^{t-h} -
z^{t-h-1}`` and, at every one of them, ``g_j = grad G(y^j)`` and ``s_j = g_F(u^j)`` (the subgradient the proximal
step produces), with the values ``G(y^j)``, ``F(u^j)``.  Every pair of points of ``G`` (and of ``F``) in the window
enters through its interpolation inequality (``L1``-smooth: Taylor-Hendrickx-Glineur 2017, Thm 3.10; proper lsc
``F`` through its proximal steps: :func:`stam.theory.sdpstep.prox_pair`), so the condition is imposed for every
problem of the class by the S-procedure; one small SDP, solved and verified by :func:`stam.theory.sdp.search`
and proven in exact rational arithmetic by :func:`stam.theory.sdpproof.prove` (:mod:`stam.theory.rational`).

**The k-step decrease condition** with ``S_t`` the stationarity measure of Theorem conv (as in
:mod:`stam.theory.pep`):

    V_{t+k} - V_t + rho (S_t + S_{t+1} + ... + S_{t+k-1}) <= 0   for every (G, F) of the class.

Two templates (``k = 1``, ``h = 0`` is the one-step search of :mod:`stam.theory.lyapunov`):

- ``"paper"`` (``h = 0``): ``V_t = a (G(y^t) + H(x^t, y^t)) + b M_t``, ``0 <= a, b <= 1``, ``M_t`` of Lemma
  conv-lemma (eq. (eq651)): the paper's potential.  Summing over the blocks ``[0, k), [k, 2k), ...`` and using
  ``delta_T >= 0``, ``M_T >= min_{t<=T} M_t``: for ``T = m k``, ``min_{t<T} S_t <= (delta0 + M0'_T) / (rho T)``,
  a bound of Theorem conv's form (eq. (con-inequality)) with the normalisation of ``stam pep``; for other ``T >=
  k``, ``(delta0 + M0'_T) / (rho (T - k + 1))``.
- ``"general"``: ``V_t = a G(y^t) + b F(u^t) + xi_t' P xi_t``, ``a >= b >= 0``, ``a <= 1``, ``P`` a free symmetric
  matrix over the state *with history* ``xi_t = (y^{t-h} - z^{t-h-1}, g_{t-h}, s_{t-h}, ..., g_t, s_t)`` (a
  quadratic form over the last ``h + 1`` iterates chosen by the SDP: a Lyapunov template with history), and the
  lower bound ``V_t >= b Phi^inf + (a - b) G^inf`` imposed for every ``xi_t`` (as
  :func:`stam.theory.templates.stam_step_sdp` imposes it, the history entering through ``P`` only; ``Phi`` the
  objective of (model)).  A certificate proves ``min_{h<=t<T} S_t <= (V_h - b Phi^inf - (a - b) G^inf) /
  (rho (T - h - k + 1))``: an ``O(1/T)`` rate whose numerator is a potential of the first ``h + 1`` iterates.

:func:`certify_history` searches one point, :func:`history_reach` the largest ``gamma*lam`` certified (and proven)
for a ``(k, h, template, beta)``, :func:`history_rows` the rows that the ``pep-band`` result
(:data:`stam.theory.onset.PEP_BAND`, optional field ``history``) stores and ``stam plot pep-band`` draws.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from stam.algorithm import stam_init, stam_step
from stam.errors import require
from stam.theory.lyapunov import certify_stam, rate_floor
from stam.theory.sdp import search
from stam.theory.sdpproof import prove
from stam.theory.sdpstep import Basis, OneStep, Piece, f_pair, scaled, smooth_pair, sq
from stam.theory.templates import SymbolicOps

#: the templates of the module docstring
HISTORY_TEMPLATES = ("paper", "general")
#: the largest window ``h + k + 1`` (a ``(2 (h + k) + 3)``-square matrix inequality and ``2 (h+k+1)(h+k)``
#: interpolation inequalities: at 8 points, 17 x 17 and 112, still well under a second per SDP)
MAX_WINDOW = 8


def _check(k, h, template):
    require(isinstance(k, int) and k >= 1, f"k={k!r} must be an integer >= 1 (the steps of the decrease condition)")
    require(isinstance(h, int) and h >= 0, f"h={h!r} must be an integer >= 0 (the past iterates of the potential)")
    require(template in HISTORY_TEMPLATES, f"template={template!r}; allowed: {', '.join(HISTORY_TEMPLATES)}")
    require(template == "general" or h == 0, f"the paper template has no history (h={h}); use template='general'")
    require(h + k + 1 <= MAX_WINDOW, f"h + k + 1 = {h + k + 1} iterates: at most {MAX_WINDOW}")


def stam_window_sdp(lam, gamma, beta, k: int, h: int = 0, L1=1.0, template: str = "paper",
                    f_class: str = "lsc", exact: bool = False) -> OneStep:
    """The k-step decrease condition of the module docstring for deterministic STAM as a
    :class:`stam.theory.sdpstep.OneStep` (its "t + 1" is ``t + k``), for :func:`stam.theory.sdp.search` and,
    built with ``exact`` (the parameters taken at the exact rationals their floats store), for
    :func:`stam.theory.sdpproof.prove`.  Basis: ``w``, then ``g_j, s_j`` for ``j = 0 .. h + k`` (iterate ``t - h +
    j``), so that the state with history ``xi_t`` is the first ``2 h + 3`` basis vectors; values ``G(y^j)``,
    ``F(u^j)``."""
    _check(k, h, template)
    for name, v in (("lam", lam), ("gamma", gamma), ("beta", beta), ("L1", L1)):
        require(isinstance(v, (int, float, Fraction)) and math.isfinite(v) and v > 0, f"{name}={v} must be finite and > 0")
    if exact:
        lam, gamma, beta, L1 = (Fraction(v) for v in (lam, gamma, beta, L1))
    n = h + k + 1  # iterates in the window
    B = Basis(1 + 2 * n, 2 * n, exact)
    w = B.vec(0)
    g = [B.vec(1 + 2 * j) for j in range(n)]
    s = [B.vec(2 + 2 * j) for j in range(n)]
    Gv = [B.val(j) for j in range(n)]
    Fv = [B.val(n + j) for j in range(n)] if f_class != "indicator" else [B.zeros(2 * n)] * n
    ops = SymbolicOps(lam, list(s))
    st = [stam_init(w, ops, gamma, z_prev=B.zero())]  # (y, z^{-1}) = (w, 0): translation invariance
    for j in range(n - 1):
        st.append(stam_step(st[-1], g[j], ops, gamma, beta))  # eq. (algy), (algx), (algu), (algz)
    pair = f_pair(f_class, gamma)
    interp = []
    for i in range(n):
        for j in range(n):
            if i != j:
                interp.append(smooth_pair(L1, st[i].y, g[i], Gv[i], st[j].y, g[j], Gv[j], f"G(y^{i}) vs G(y^{j})"))
                interp.append(pair(st[i].u, s[i], Fv[i], st[j].u, s[j], Fv[j], f"F(u^{i}) vs F(u^{j})"))

    def S(j):  # Theorem conv's measure at iterate j, as in stam.theory.pep.stam_pep
        return sq(g[j] + ops.grad_y_H(st[j].u, st[j].y)) + sq(ops.grad_x_H(st[j].u, st[j].y) + s[j])

    S_sum = S(h)
    for j in range(h + 1, h + k):
        S_sum = S_sum + S(j)
    t0, t1 = h, h + k
    fixed = [st[0].z, g[0] + ops.grad_y_H(st[0].u, st[0].y), ops.grad_x_H(st[0].u, st[0].y) + s[0]]
    for j in range(n - 1):  # a fixed point: nothing moves, the gradients are the old ones, S = 0
        fixed += [st[j + 1].y - st[j].y, st[j + 1].z - st[j].z, g[j + 1] - g[j], s[j + 1] - s[j]]
    fixed = np.array(fixed)
    note = f"k = {k}, h = {h}: "
    if template == "paper":
        def H(x):
            return scaled(sq(x.x - x.y), lam / 2)

        def M_quad(x):  # the quadratic part of M_t (eq. (eq651))
            return (scaled(sq(2 * x.x - x.u - x.z), div=2 * gamma) - scaled(sq(x.x - x.z), div=2 * gamma)
                    - scaled(sq(x.u - x.x), div=gamma))

        pieces = [Piece("a", Gv[t0], H(st[t0]), Gv[t1], H(st[t1])),
                  Piece("b", Fv[t0], M_quad(st[t0]), Fv[t1], M_quad(st[t1]))]
        return OneStep(B, interp, pieces, S_sum, xi_t=np.array([w, g[0], s[0]]), xi_t1=None, fixed=fixed,
                       note=note + "V = a (G + H) + b M_t")

    def state(j):  # xi at iterate j: (y^{j-h} - z^{j-h-1}, g_{j-h}, s_{j-h}, ..., g_j, s_j)
        first = st[j - h].y - (st[j - h - 1].z if j - h >= 1 else B.zero())
        return np.array([first] + [v for i in range(j - h, j + 1) for v in (g[i], s[i])])

    xi_t, xi_t1 = state(t0), state(t1)
    m_x = 2 * h + 3
    assert (xi_t[:, :m_x] == np.eye(m_x)).all() and not xi_t[:, m_x:].any()  # xi_t is the basis' first m_x vectors
    Z = B.zeros((B.nb, B.nb))
    pieces = [Piece("a", Gv[t0], Z, Gv[t1], Z), Piece("b", Fv[t0], Z, Fv[t1], Z)]
    # V_t - b Phi^inf - (a - b) G^inf >= xi' P xi - b m(g_t, u^t - y^t) + (a - b) ||g_t||^2 / (2 L1), over xi_t
    d = (st[t0].u - st[t0].y)[:m_x]
    gt = g[t0][:m_x]
    m = scaled(sq(d), lam / 2) - scaled(sq(gt - lam * d), div=2 * (L1 + lam))
    low = {"a": scaled(sq(gt), div=2 * L1), "b": -m - scaled(sq(gt), div=2 * L1)}
    return OneStep(B, interp, pieces, S_sum, xi_t=xi_t, xi_t1=xi_t1, low=low, fixed=fixed,
                   note=note + "V = a G + b F + xi' P xi (xi over the last h + 1 iterates)")


def certify_history(lam: float, gamma: float, beta: float, k: int, h: int = 0, L1: float = 1.0,
                    template: str = "paper", rho_min: float | None = None, solver: str | None = None,
                    f_class: str = "lsc"):
    """The best certificate of the k-step condition (module docstring) at ``(lam, gamma, beta)``, as
    :func:`stam.theory.lyapunov.certify_stam` does for one step: the SDP (:func:`stam.theory.sdp.search`, its
    point verified in floating point, a rate of at least ``rho_min``, default
    :func:`stam.theory.lyapunov.rate_floor`), then the exact proof of the verified point
    (:func:`stam.theory.sdpproof.prove`); one that fails it is "numerical only" (``details["numerical_only"]``), never
    certified.  ``rho`` is the rate of the summed condition (``k`` measures per decrease)."""
    floor = rate_floor(beta) if rho_min is None else rho_min
    free_P, order = (False, None) if template == "paper" else (True, ("a", "b"))
    with np.errstate(over="raise", invalid="raise"):
        step = stam_window_sdp(lam, gamma, beta, k, h, L1, template, f_class)
    cert = search(step, free_P=free_P, order=order, rho_min=floor, solver=solver)
    if cert.certified:
        t0 = time.perf_counter()
        exact = stam_window_sdp(lam, gamma, beta, k, h, L1, template, f_class, exact=True)
        proof = prove(exact, cert.point, free_P, order, None, cert.residual.get("near", ()))
        cert.details["proof"] = {"exact": proof["proven"], "seconds": time.perf_counter() - t0,
                                 **({"reason": proof["reason"]} if not proof["proven"] else {})}
        if not proof["proven"]:
            cert.certified, cert.details["numerical_only"] = False, True
    cert.details.update(template=step.note, k=k, h=h, size=step.basis.nb, constraints=len(step.interp),
                        rate_floor=floor)
    return cert


def history_reach(k: int, h: int = 0, template: str = "paper", beta: float = 10.0, lam: float = 1.0,
                  L1: float = 1.0, lo: float = 0.5, hi: float = 1.6, tol: float = 1e-3,
                  solver: str | None = None, N: int = 1, b: int = 1) -> dict:
    """The largest ``gamma*lam`` in ``[lo, hi]`` where :func:`certify_history` certifies (proven), by bisection to
    ``tol`` (assuming one switch, as the scans show): ``certified`` (the largest proven point, None when ``lo`` is not
    certified), ``fails`` (the smallest point found not certified, None when ``hi`` is), the rate at ``certified``
    (``rho``, for the summed condition) and the SDPs solved.  ``N, b`` other than ``1, 1``: the one-step paper
    template with b-nice minibatches (:func:`stam.theory.lyapunov.certify_stam`, proven the same way; ``k = 1``,
    ``h = 0`` only)."""
    _check(k, h, template)
    sampled = (N, b) != (1, 1)
    require(not sampled or (template, k, h) == ("paper", 1, 0),
            f"minibatches (N={N}, b={b}) are certified with the one-step paper template only (k = 1, h = 0)")
    solves = []

    def ok(c):
        if sampled:
            cert = certify_stam(lam, c / lam, beta, L1, template="paper", solver=solver, N=N, b=b)
        else:
            cert = certify_history(lam, c / lam, beta, k, h, L1, template, solver=solver)
        solves.append(cert)
        return cert

    row = {"k": k, "h": h, "template": template, "beta": beta, **({"N": N, "b": b} if sampled else {})}
    top = ok(hi)
    if top.certified:
        return {**row, "certified": hi, "fails": None, "rho": top.rho, "solves": len(solves)}
    bottom = ok(lo)
    if not bottom.certified:
        return {**row, "certified": None, "fails": lo, "rho": None, "solves": len(solves)}
    good, bad, best = lo, hi, bottom
    while bad - good > tol:
        m = (good + bad) / 2
        cert = ok(m)
        if cert.certified:
            good, best = m, cert
        else:
            bad = m
    return {**row, "certified": good, "fails": bad, "rho": best.rho, "solves": len(solves)}


#: the history lengths of the stored band (``benchmarks/pep_band.py``): the paper's potential over k = 1..4 steps,
#: and the general template with a quadratic form over the last h + 1 iterates (k, h)
HISTORY_CASES = (("paper", 1, 0), ("paper", 2, 0), ("paper", 3, 0), ("paper", 4, 0),
                 ("general", 1, 0), ("general", 2, 0), ("general", 3, 0), ("general", 1, 1), ("general", 2, 1),
                 ("general", 1, 2))


def _reach_task(task) -> dict:
    (template, k, h, N, b, beta), kw = task
    t0 = time.perf_counter()
    r = history_reach(k, h, template, beta, N=N, b=b, **kw)
    return {**r, "seconds": round(time.perf_counter() - t0, 2)}


def history_rows(cases=HISTORY_CASES, betas=(10.0, 1000.0), lam: float = 1.0, L1: float = 1.0, lo: float = 0.5,
                 hi: float = 1.6, tol: float = 1e-3, solver: str | None = None, sampled=(), workers: int = 1) -> list[dict]:
    """:func:`history_reach` for every ``(template, k, h)`` of ``cases`` and ``beta`` of ``betas``, and the one-step
    minibatch template for each ``(N, b)`` of ``sampled``: the rows of the ``pep-band`` result's ``history``
    (:data:`stam.theory.onset.HISTORY_ROW`); ``workers``: in that many processes (the rows in the same order)."""
    todo = [(t, k, h, 1, 1) for t, k, h in cases] + [("paper", 1, 0, N, b) for N, b in sampled]
    kw = dict(lam=lam, L1=L1, lo=lo, hi=hi, tol=tol, solver=solver)
    tasks = [((*case, beta), kw) for beta in betas for case in todo]
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(_reach_task, tasks))
    return [_reach_task(t) for t in tasks]


__all__ = ["HISTORY_TEMPLATES", "HISTORY_CASES", "MAX_WINDOW", "stam_window_sdp", "certify_history", "history_reach",
           "history_rows"]
