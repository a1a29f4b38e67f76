"""Potentials with history: k-step decrease conditions for STAM (issue 39, point 1, "close the band").

One-step potentials (:mod:`stam.theory.worstcase.lyapunov`) certify STAM for any proper lsc ``F`` up to ``gamma*lam`` just
below 1, and ``stam pep`` is unbounded from ``(1 + sqrt 3)/2`` (:mod:`stam.theory.worstcase.onset`); in between nothing was
certified or refuted.  This module asks whether potentials that see more than one step certify beyond ``gamma*lam =
1``.  The class is the paper's (``G`` ``L1``-smooth nonconvex, ``F`` any proper lsc function reached through its
proximal step eq. (algu), ``H = (lam/2)||x - y||^2``), the method deterministic STAM (Algorithm 1, eq. (algalg1),
the full gradient), run by the project's one update (:func:`stam.steps.stam_init`, :func:`stam.steps.stam_step`)
on coefficient vectors, as in :func:`stam.theory.worstcase.templates.stam_step_sdp`.

**The window.**  ``h + k + 1`` consecutive iterates ``t - h, ..., t + k`` are described by ``w = y^{t-h} -
z^{t-h-1}`` and, at every one of them, ``g_j = grad G(y^j)`` and ``s_j = g_F(u^j)`` (the subgradient the proximal
step produces), with the values ``G(y^j)``, ``F(u^j)``.  Every pair of points of ``G`` (and of ``F``) in the window
enters through its interpolation inequality (``L1``-smooth: Taylor-Hendrickx-Glineur 2017, Thm 3.10; proper lsc
``F`` through its proximal steps: :func:`stam.theory.worstcase.sdpstep.prox_pair`), so the condition is imposed for every
problem of the class by the S-procedure; one small SDP, solved and verified by :func:`stam.theory.worstcase.sdp.search`
and proven in exact rational arithmetic by :func:`stam.theory.worstcase.sdpproof.prove` (:mod:`stam.theory.worstcase.rational`).

**The k-step decrease condition** with ``S_t`` the stationarity measure of Theorem conv (as in
:mod:`stam.theory.worstcase.pep`):

    V_{t+k} - V_t + rho (S_t + S_{t+1} + ... + S_{t+k-1}) <= 0   for every (G, F) of the class.

Two templates (``k = 1``, ``h = 0`` is the one-step search of :mod:`stam.theory.worstcase.lyapunov`):

- ``"paper"`` (``h = 0``): ``V_t = a (G(y^t) + H(x^t, y^t)) + b M_t``, ``0 <= a, b <= 1``, ``M_t`` of Lemma
  conv-lemma (eq. (eq651)): the paper's potential.  Summing over the blocks ``[0, k), [k, 2k), ...`` and using
  ``delta_T >= 0``, ``M_T >= min_{t<=T} M_t``: for ``T = m k``, ``min_{t<T} S_t <= (delta0 + M0'_T) / (rho T)``,
  a bound of Theorem conv's form (eq. (con-inequality)) with the normalisation of ``stam pep``; for other ``T >=
  k``, ``(delta0 + M0'_T) / (rho (T - k + 1))``.
- ``"general"``: ``V_t = a G(y^t) + b F(u^t) + xi_t' P xi_t``, ``a >= b >= 0``, ``a <= 1``, ``P`` a free symmetric
  matrix over the state *with history* ``xi_t = (y^{t-h} - z^{t-h-1}, g_{t-h}, s_{t-h}, ..., g_t, s_t)`` (a
  quadratic form over the last ``h + 1`` iterates chosen by the SDP: a Lyapunov template with history), and the
  lower bound ``V_t >= b Phi^inf + (a - b) G^inf`` imposed for every ``xi_t`` (as
  :func:`stam.theory.worstcase.templates.stam_step_sdp` imposes it, the history entering through ``P`` only; ``Phi`` the
  objective of (model)).  A certificate proves ``min_{h<=t<T} S_t <= (V_h - b Phi^inf - (a - b) G^inf) /
  (rho (T - h - k + 1))``: an ``O(1/T)`` rate whose numerator is a potential of the first ``h + 1`` iterates.

:func:`certify_history` searches one point, :func:`history_reach` the largest ``gamma*lam`` certified (and proven)
for a ``(k, h, template, beta)``, :func:`history_rows` the rows that the ``pep-band`` result
(:data:`stam.theory.worstcase.onset.PEP_BAND`, optional field ``history``) stores and ``stam plot pep-band`` draws.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from stam.steps import stam_init, stam_step
from stam.errors import require
from stam.theory.worstcase.lyapunov import certify_stam, rate_floor
from stam.theory.worstcase.sdp import search
from stam.theory.worstcase.sdpproof import prove
from stam.theory.worstcase.sdpstep import Basis, OneStep, Piece, f_pair, scaled, smooth_pair, sq
from stam.theory.settings import Bisection, ProblemClass, SdpOptions, no_other
from stam.theory.worstcase.templates import SymbolicOps

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


def stam_window_sdp(lam, gamma, beta, k: int, h: int = 0, template: str = "paper", *,
                    problem: ProblemClass | None = None, exact: bool = False, **fields) -> OneStep:
    """The k-step decrease condition of the module docstring for deterministic STAM as a
    :class:`stam.theory.worstcase.sdpstep.OneStep` (its "t + 1" is ``t + k``), for :func:`stam.theory.worstcase.sdp.search` and,
    built with ``exact`` (the parameters taken at the exact rationals their floats store), for
    :func:`stam.theory.worstcase.sdpproof.prove`.  Basis: ``w``, then ``g_j, s_j`` for ``j = 0 .. h + k`` (iterate ``t - h +
    j``), so that the state with history ``xi_t`` is the first ``2 h + 3`` basis vectors; values ``G(y^j)``,
    ``F(u^j)``.  ``problem``: ``L1`` and the class of ``F`` (:class:`stam.theory.settings.ProblemClass`, the full
    gradient), its fields also by keyword."""
    problem = ProblemClass.of(problem, fields)
    no_other(fields, "stam_window_sdp")
    _check(k, h, template)
    require(problem.sampling == (1, 1), f"the window is of deterministic STAM (N={problem.N}, b={problem.b}: use 1, 1)")
    L1 = problem.L1
    for name, v in (("lam", lam), ("gamma", gamma), ("beta", beta), ("L1", L1)):
        require(isinstance(v, (int, float, Fraction)) and math.isfinite(v) and v > 0, f"{name}={v} must be finite and > 0")
    if exact:
        lam, gamma, beta, L1 = (Fraction(v) for v in (lam, gamma, beta, L1))
    win = _Window(lam, gamma, beta, k, h, problem.f_class, exact)
    interp, S_sum, fixed = win.interpolation(L1), win.measure(), win.fixed_points()
    note = f"k = {k}, h = {h}: "
    if template == "paper":
        return OneStep(win.B, interp, win.paper_pieces(), S_sum, xi_t=np.array([win.w, win.g[0], win.s[0]]),
                       xi_t1=None, fixed=fixed, note=note + "V = a (G + H) + b M_t")
    xi_t, xi_t1 = win.state(h), win.state(h + k)
    m_x = 2 * h + 3
    assert (xi_t[:, :m_x] == np.eye(m_x)).all() and not xi_t[:, m_x:].any()  # xi_t is the basis' first m_x vectors
    Z = win.B.zeros((win.B.nb, win.B.nb))
    pieces = [Piece("a", win.Gv[h], Z, win.Gv[h + k], Z), Piece("b", win.Fv[h], Z, win.Fv[h + k], Z)]
    return OneStep(win.B, interp, pieces, S_sum, xi_t=xi_t, xi_t1=xi_t1, low=win.general_low(L1), fixed=fixed,
                   note=note + "V = a G + b F + xi' P xi (xi over the last h + 1 iterates)")


class _Window:
    """The ``n = h + k + 1`` iterates of :func:`stam_window_sdp` as coefficient vectors over its basis ``B``:
    ``w``, the gradients ``g_j`` and subgradients ``s_j``, the values ``Gv``, ``Fv`` (``F = 0`` for an indicator),
    the states ``st`` of the project's one update (eq. (algy), (algx), (algu), (algz)) from ``(y, z^{-1}) = (w,
    0)`` (translation invariance), and what the condition is made of: the interpolation inequalities, the summed
    measure, the fixed points, the paper's pieces and the general template's lower bound."""

    def __init__(self, lam, gamma, beta, k: int, h: int, f_class: str, exact: bool):
        self.lam, self.gamma, self.k, self.h, self.f_class = lam, gamma, k, h, f_class
        self.n = n = h + k + 1
        self.B = B = Basis(1 + 2 * n, 2 * n, exact)
        self.w = B.vec(0)
        self.g = [B.vec(1 + 2 * j) for j in range(n)]
        self.s = [B.vec(2 + 2 * j) for j in range(n)]
        self.Gv = [B.val(j) for j in range(n)]
        self.Fv = [B.val(n + j) for j in range(n)] if f_class != "indicator" else [B.zeros(2 * n)] * n
        self.ops = SymbolicOps(lam, list(self.s))
        self.st = [stam_init(self.w, self.ops, gamma, z_prev=B.zero())]
        for j in range(n - 1):
            self.st.append(stam_step(self.st[-1], self.g[j], self.ops, gamma, beta))

    def interpolation(self, L1) -> list:
        """Every pair of points of ``G`` (``L1``-smooth) and of ``F`` (its class, through the proximal steps)."""
        st, g, s, Gv, Fv = self.st, self.g, self.s, self.Gv, self.Fv
        pair = f_pair(self.f_class, self.gamma)
        interp = []
        for i in range(self.n):
            for j in range(self.n):
                if i != j:
                    interp.append(smooth_pair(L1, st[i].y, g[i], Gv[i], st[j].y, g[j], Gv[j], f"G(y^{i}) vs G(y^{j})"))
                    interp.append(pair(st[i].u, s[i], Fv[i], st[j].u, s[j], Fv[j], f"F(u^{i}) vs F(u^{j})"))
        return interp

    def S(self, j):
        """Theorem conv's measure at iterate ``j``, as in :func:`stam.theory.worstcase.pep.stam_pep`."""
        st, ops = self.st[j], self.ops
        return sq(self.g[j] + ops.grad_y_H(st.u, st.y)) + sq(ops.grad_x_H(st.u, st.y) + self.s[j])

    def measure(self):
        """``S_t + ... + S_{t+k-1}`` (iterates ``h .. h + k - 1``)."""
        S_sum = self.S(self.h)
        for j in range(self.h + 1, self.h + self.k):
            S_sum = S_sum + self.S(j)
        return S_sum

    def fixed_points(self) -> np.ndarray:
        """A fixed point: nothing moves, the gradients are the old ones, ``S = 0``."""
        st, g, s, ops = self.st, self.g, self.s, self.ops
        fixed = [st[0].z, g[0] + ops.grad_y_H(st[0].u, st[0].y), ops.grad_x_H(st[0].u, st[0].y) + s[0]]
        for j in range(self.n - 1):
            fixed += [st[j + 1].y - st[j].y, st[j + 1].z - st[j].z, g[j + 1] - g[j], s[j + 1] - s[j]]
        return np.array(fixed)

    def paper_pieces(self) -> list:
        """The paper's potential ``a (G + H) + b M_t`` at iterates ``h`` and ``h + k`` (``h = 0``)."""
        lam, gamma, t0, t1, st = self.lam, self.gamma, self.h, self.h + self.k, self.st

        def H(x):
            return scaled(sq(x.x - x.y), lam / 2)

        def M_quad(x):  # the quadratic part of M_t (eq. (eq651))
            return (scaled(sq(2 * x.x - x.u - x.z), div=2 * gamma) - scaled(sq(x.x - x.z), div=2 * gamma)
                    - scaled(sq(x.u - x.x), div=gamma))

        return [Piece("a", self.Gv[t0], H(st[t0]), self.Gv[t1], H(st[t1])),
                Piece("b", self.Fv[t0], M_quad(st[t0]), self.Fv[t1], M_quad(st[t1]))]

    def state(self, j) -> np.ndarray:
        """``xi`` at iterate ``j``: ``(y^{j-h} - z^{j-h-1}, g_{j-h}, s_{j-h}, ..., g_j, s_j)``."""
        st, h = self.st, self.h
        first = st[j - h].y - (st[j - h - 1].z if j - h >= 1 else self.B.zero())
        return np.array([first] + [v for i in range(j - h, j + 1) for v in (self.g[i], self.s[i])])

    def general_low(self, L1) -> dict:
        """``V_t - b Phi^inf - (a - b) G^inf >= xi' P xi - b m(g_t, u^t - y^t) + (a - b) ||g_t||^2 / (2 L1)``,
        over ``xi_t``: the lower bound of the general template, per piece."""
        m_x, t0, lam = 2 * self.h + 3, self.h, self.lam
        d = (self.st[t0].u - self.st[t0].y)[:m_x]
        gt = self.g[t0][:m_x]
        m = scaled(sq(d), lam / 2) - scaled(sq(gt - lam * d), div=2 * (L1 + lam))
        return {"a": scaled(sq(gt), div=2 * L1), "b": -m - scaled(sq(gt), div=2 * L1)}


def certify_history(lam: float, gamma: float, beta: float, k: int, h: int = 0, template: str = "paper", *,
                    problem: ProblemClass | None = None, sdp: SdpOptions | None = None, **fields):
    """The best certificate of the k-step condition (module docstring) at ``(lam, gamma, beta)``, as
    :func:`stam.theory.worstcase.lyapunov.certify_stam` does for one step: the SDP (:func:`stam.theory.worstcase.sdp.search`, its
    point verified in floating point, a rate of at least ``rho_min``, default
    :func:`stam.theory.worstcase.lyapunov.rate_floor`), then the exact proof of the verified point
    (:func:`stam.theory.worstcase.sdpproof.prove`); one that fails it is "numerical only" (``details["numerical_only"]``), never
    certified.  ``rho`` is the rate of the summed condition (``k`` measures per decrease).  ``problem``
    (:class:`stam.theory.settings.ProblemClass`: ``L1``, ``f_class``) and ``sdp``
    (:class:`stam.theory.settings.SdpOptions`: ``solver``, ``rho_min``), their fields also by keyword."""
    problem, sdp = ProblemClass.of(problem, fields), SdpOptions.of(sdp, fields)
    no_other(fields, "certify_history")
    floor = rate_floor(beta) if sdp.rho_min is None else sdp.rho_min
    free_P, order = (False, None) if template == "paper" else (True, ("a", "b"))
    with np.errstate(over="raise", invalid="raise"):
        step = stam_window_sdp(lam, gamma, beta, k, h, template, problem=problem)
    cert = search(step, free_P=free_P, order=order, rho_min=floor, solver=sdp.solver, solver_options=sdp.solver_options)
    if cert.certified:
        t0 = time.perf_counter()
        exact = stam_window_sdp(lam, gamma, beta, k, h, template, problem=problem, exact=True)
        proof = prove(exact, cert.point, free_P, order, None, cert.residual.get("near", ()))
        cert.details["proof"] = {"exact": proof["proven"], "seconds": time.perf_counter() - t0,
                                 **({"reason": proof["reason"]} if not proof["proven"] else {})}
        if not proof["proven"]:
            cert.certified, cert.details["numerical_only"] = False, True
    cert.details.update(template=step.note, k=k, h=h, size=step.basis.nb, constraints=len(step.interp),
                        rate_floor=floor)
    return cert


#: the bisection of :func:`history_reach` by default: ``gamma*lam`` in ``[0.5, 1.6]`` to ``1e-3`` at ``lam = 1``,
#: ``L1 = 1``
HISTORY_BISECTION = Bisection(lo=0.5)


def history_reach(k: int, h: int = 0, template: str = "paper", beta: float = 10.0, *,
                  bisection: Bisection | None = None, N: int = 1, b: int = 1, **fields) -> dict:
    """The largest ``gamma*lam`` in ``[lo, hi]`` where :func:`certify_history` certifies (proven), by bisection to
    ``tol`` (assuming one switch, as the scans show): ``certified`` (the largest proven point, None when ``lo`` is not
    certified), ``fails`` (the smallest point found not certified, None when ``hi`` is), the rate at ``certified``
    (``rho``, for the summed condition) and the SDPs solved.  ``N, b`` other than ``1, 1``: the one-step paper
    template with b-nice minibatches (:func:`stam.theory.worstcase.lyapunov.certify_stam`, proven the same way; ``k = 1``,
    ``h = 0`` only).  ``bisection``: ``lam``, ``L1``, ``lo``, ``hi``, ``tol``, ``solver``
    (:class:`stam.theory.settings.Bisection`, default :data:`HISTORY_BISECTION`), its fields also by keyword."""
    bis = Bisection.of(bisection if bisection is not None else HISTORY_BISECTION, fields)
    no_other(fields, "history_reach")
    _check(k, h, template)
    sampled = (N, b) != (1, 1)
    require(not sampled or (template, k, h) == ("paper", 1, 0),
            f"minibatches (N={N}, b={b}) are certified with the one-step paper template only (k = 1, h = 0)")
    lam, problem, solves = bis.lam, ProblemClass(L1=bis.L1, N=N, b=b), []

    def ok(c):
        if sampled:
            cert = certify_stam(lam, c / lam, beta, template="paper", problem=problem, solver=bis.solver)
        else:
            cert = certify_history(lam, c / lam, beta, k, h, template, problem=problem, solver=bis.solver)
        solves.append(cert)
        return cert

    row = {"k": k, "h": h, "template": template, "beta": beta, **({"N": N, "b": b} if sampled else {})}
    lo, hi, tol = bis.lo, bis.hi, bis.tol
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
    (template, k, h, N, b, beta), bisection = task
    t0 = time.perf_counter()
    r = history_reach(k, h, template, beta, bisection=bisection, N=N, b=b)
    return {**r, "seconds": round(time.perf_counter() - t0, 2)}


def history_rows(cases=HISTORY_CASES, betas=(10.0, 1000.0), *, bisection: Bisection | None = None, sampled=(),
                 workers: int = 1, **fields) -> list[dict]:
    """:func:`history_reach` for every ``(template, k, h)`` of ``cases`` and ``beta`` of ``betas``, and the one-step
    minibatch template for each ``(N, b)`` of ``sampled``: the rows of the ``pep-band`` result's ``history``
    (:data:`stam.theory.worstcase.onset.HISTORY_ROW`); ``workers``: in that many processes (the rows in the same order).
    ``bisection`` (default :data:`HISTORY_BISECTION`) as in :func:`history_reach`, its fields also by keyword."""
    bis = Bisection.of(bisection if bisection is not None else HISTORY_BISECTION, fields)
    no_other(fields, "history_rows")
    todo = [(t, k, h, 1, 1) for t, k, h in cases] + [("paper", 1, 0, N, b) for N, b in sampled]
    tasks = [((*case, beta), bis) for beta in betas for case in todo]
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(_reach_task, tasks))
    return [_reach_task(t) for t in tasks]


__all__ = ["HISTORY_TEMPLATES", "HISTORY_CASES", "HISTORY_BISECTION", "MAX_WINDOW", "stam_window_sdp", "certify_history", "history_reach",
           "history_rows"]
