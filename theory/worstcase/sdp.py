"""The Lyapunov SDP of one step (:class:`stam.theory.worstcase.sdpstep.OneStep`) and its verification in floating point:
its forms over one variable vector (:func:`forms`, :func:`layout`), the face of the method's fixed points
(:func:`_null_space`), the cvxpy program (built once per shape), the solver chain, :func:`search` and :func:`verify`.
The exact proof of a verified certificate is :mod:`stam.theory.worstcase.sdpproof`.

**Solver status** is never hidden: every :class:`Certificate` carries cvxpy's status, and a
value of ``rho`` only counts as a certificate when the status is ``optimal`` and ``rho >=
rho_min``; ``optimal_inaccurate``, ``infeasible``, ``unbounded``, solver errors are reported as
such (Clarabel first, SCS when Clarabel is not conclusive, as :func:`stam.theory.worstcase.pep.solve`).
The solver's values are not taken on its word: :func:`verify` checks them in numpy (``residual``) and the
certificate's ``rho`` is the rate it proves (``details["solver_rho"]``: the solver's).  The SDP is first reduced
to its face (:func:`_null_space`): at the method's fixed points (nothing moves, ``S_t = 0``) every form of the SDP
vanishes, so every feasible decrease form ``D <= 0`` has ``D N = 0`` there; the SDP imposes it as equalities and
the matrix inequality on the complement.  Without it the solver's ``D`` was off there by its accuracy, invisibly to
a re-check relative to ``||S||``, and at lambda = 0.01 the rate fed on it: "certificates" up to gamma lambda = 100
whose inequality failed along binary-Q runs by 0.8 % to 2.2 times rho S (issue 22; with ``D N = 0`` the solver's
rate there is zero).  The verification then takes ``rho' = (1 - share) rho`` (:data:`VERIFY_SHARES`; a second solve
seeks the point with the largest margin where the solver's point has none), restores the identities (function
values, ``D N = 0``) to rounding by least squares, and requires the decrease form negative definite and the
lower-bound form positive definite off their null directions, by more than a bound on the rounding of forming
them and of the eigenvalue computation (:data:`VERIFY_MARGIN`): then the certificate holds, with ``rho'``, for
every problem of the class.  An optimal rate that fails it is no certificate and is marked
``details["unverified"]``.  A STAM rate below ``rho beta >= RHO_BETA_MIN`` (:func:`rate_floor`: a bound a
thousand times weaker than the y-step's own ``1/beta``) is counted apart (``details["below_floor"]``), so that a
region's bracket ends where the rate still matters.  :func:`certified_gamma` counts both apart in its
``statuses`` and marks a
bracket whose end is a rejected rate above the floor (``hi_unverified``; ``stam pep --region`` prints "?").
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from stam.theory.worstcase.pepsolve import SOLVER_DEFAULTS, check_solver
from stam.theory.worstcase.sdpstep import OneStep, inner, sq

#: smallest rate that counts as a certificate (L1 = 1 scale; see :func:`stam.theory.worstcase.lyapunov.certify_stam`).
RHO_MIN = 1e-7
#: cvxpy statuses that end the solver chain.
_CONCLUSIVE = ("optimal", "infeasible", "unbounded")


@dataclass
class Certificate:
    """Outcome of one Lyapunov search.  ``certified`` only when the solver says ``optimal`` and
    ``rho >= rho_min``; ``rho`` is the largest rate found (None without a solution)."""

    certified: bool
    rho: float | None
    status: str
    solver: str
    seconds: float
    theta: dict = field(default_factory=dict)
    P: list | None = None
    residual: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    #: the verified point (the SDP's variable vector of :func:`forms`, floats) that :func:`prove` rounds; not in the JSON
    point: list | None = field(default=None, repr=False, compare=False)
    #: the exact proof of :func:`stam.theory.worstcase.sdpproof.prove` (its point ``x``, ``null``, ...) and the exact step it
    #: proved (``"step"``), for the certificate file of :mod:`stam.theory.worstcase.certificates`; not in the JSON
    proof: dict | None = field(default=None, repr=False, compare=False)

    def as_json(self) -> dict:
        return {"certified": self.certified, "rho": self.rho, "status": self.status, "solver": self.solver,
                "seconds": self.seconds, "theta": self.theta, "P": self.P, "residual": self.residual,
                **({"details": self.details} if self.details else {})}


def _finite(v) -> float | None:
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def forms(step: OneStep, free_P: bool):
    """The forms of the SDP over its one variable vector ``x = (rho, theta_p..., mu_k..., [kappa], [P_ij, i <= j])``,
    in the arithmetic of ``step`` (floats, or exact Fractions for :func:`prove`): for each variable its quadratic form
    (the decrease form ``V_{t+1} - V_t + rho S_t - kappa D_t - sum_k mu_k (interpolation k)`` is ``sum_v x_v
    cols[v]``, not yet symmetrised), its function values ``lins[v]`` and its lower-bound form ``low[v]`` (None
    without a lower bound); ``names`` of the variables and the ``pairs`` ``(i, j)`` of ``P``'s entries."""
    nv = step.basis.nv
    zeros = step.basis.zeros
    cols, lins, names = [step.S], [zeros(nv)], ["rho"]
    for p in step.pieces:
        cols.append(p.quad_t1 - p.quad_t)
        lins.append(p.lin_t1 - p.lin_t)
        names.append(p.name)
    for c in step.interp:
        cols.append(-c.quad)
        lins.append(-c.lin)
        names.append("mu")
    if step.growth is not None:
        cols.append(-step.growth[1])
        lins.append(-step.growth[0])
        names.append("kappa")
    k = step.xi_t.shape[0] if free_P else 0
    low = []
    if step.low is not None:
        low = [zeros((k, k))] + [step.low.get(p.name, zeros((k, k))) for p in step.pieces]
        low += [zeros((k, k))] * (len(cols) - len(low))
    pairs = [(i, j) for i in range(k) for j in range(i, k)]
    for i, j in pairs:  # xi' P xi = sum_i P_ii |xi_i|^2 + sum_{i<j} 2 P_ij <xi_i, xi_j>
        form = (lambda xi: sq(xi[i]) if i == j else 2 * inner(xi[i], xi[j]))
        cols.append(form(step.xi_t1) - form(step.xi_t))
        lins.append(zeros(nv))
        names.append("P")
        if step.low is not None:
            e = zeros((k, k))
            e[i, j] = e[j, i] = step.basis.one()
            low.append(e)
    return cols, lins, names, pairs, k, (low if step.low is not None else None)


def layout(step: OneStep, free_P: bool) -> dict:
    """The SDP's one variable vector ``x = (rho, theta_p..., mu_k..., [kappa], [P_ij, i <= j])`` and the
    forms as matrices over it (numpy, :func:`forms`): ``quad(x) = sum_v x_v Q[v]`` (the decrease form ``V_{t+1} -
    V_t + rho S_t - kappa D_t - sum_k mu_k (interpolation k)``), ``lin(x) = L x`` (its function values), and the
    lower-bound form ``low(x) = sum_v x_v W[v]``.  Written once; the solver sees it through cvxpy
    :class:`cvxpy.Parameter` s and the verification (:func:`verify`) evaluates it in numpy."""
    nb = step.basis.nb
    cols, lins, names, pairs, k, low = forms(step, free_P)
    Q = np.array(cols)
    Q = (Q + Q.transpose(0, 2, 1)) / 2
    # the basis rescaled (a congruence: definiteness is unchanged) so that every diagonal entry's largest term is 1:
    # at small gamma the subgradients' entries are gamma^2 times the others, below the solver's accuracy
    diag = np.abs(np.einsum("vii->vi", Q)).max(axis=0)
    T = np.where(diag > 0, 1 / np.sqrt(np.where(diag > 0, diag, 1.0)), 1.0)
    Q = Q * T[None, :, None] * T[None, None, :]
    L = np.array(lins).T
    N = _null_space(step, Q, L, T)
    return {"Q": Q, "L": L, "W": np.array(low) if low is not None else None, "names": names,
            "pairs": pairs, "k": k, "nb": nb, "N": N, "T": T,
            "low_null": _low_null(step, N, T) if step.low is not None else None}


def _low_null(step: OneStep, N: np.ndarray, T: np.ndarray) -> np.ndarray:
    """The states ``xi_t`` of the decrease form's null directions ``N`` (orthonormal columns): there the lower-bound
    form vanishes too once ``D N = 0`` (at a fixed point the potential's bound is tight), so :func:`verify` asks
    ``low C = 0`` and positive definiteness on the complement."""
    if not N.shape[1]:
        return np.zeros((step.xi_t.shape[0], 0))
    u, s, _ = np.linalg.svd(step.xi_t @ (T[:, None] * N), full_matrices=False)  # N is over the rescaled basis
    return u[:, s > 1e-12 * max(s[0], 1e-300)]


def _null_space(step: OneStep, Q: np.ndarray, L: np.ndarray, T: np.ndarray) -> np.ndarray:
    """Directions (orthonormal columns) on which every decrease form ``D = sum_v x_v Q[v]`` with vanishing
    function values (``L x = 0``) is zero, so that ``D <= 0`` forces ``D N = 0`` and no margin is possible
    there: the method's fixed points (the null space of ``step.fixed``: nothing moves and ``S_t = 0``; kept where
    every form vanishes on it) and the basis vectors whose diagonal entry of ``D`` is a combination of the function
    values' identities (e.g. the next subgradient in the paper form, whose square enters only through ``F``'s
    proximal inequalities and ``M_{t+1}``, weighted so that they cancel).  :func:`verify` makes ``D N = 0`` hold
    to rounding and asks for a margin on the complement."""
    nb = Q.shape[1]
    cols = []
    if step.fixed is not None:
        _, s, vt = np.linalg.svd(np.asarray(step.fixed, dtype=float) * T, full_matrices=True)  # rescaled basis
        F = vt[int(np.sum(s > 1e-12 * s[0])):]
        scale = np.abs(Q).reshape(len(Q), -1).max(axis=1)
        if len(F) and (np.abs(np.einsum("fa,vab,gb->vfg", F, Q, F)).reshape(len(Q), -1).max(axis=1) <= 1e-12 * scale).all():
            cols += list(F)
    for i in range(nb):
        d = Q[:, i, i]
        if np.abs(d).max() > 0:
            c = np.linalg.lstsq(L.T, d, rcond=None)[0]
            if np.abs(L.T @ c - d).max() <= 1e-12 * np.abs(d).max():
                cols.append(np.eye(nb)[i])
    if not cols:
        return np.zeros((nb, 0))
    u, s, _ = np.linalg.svd(np.array(cols).T, full_matrices=False)
    return u[:, s > 1e-12 * s[0]]


#: the cvxpy problems built so far, one per shape of :func:`layout` (a region solves thousands of SDPs of a
#: handful of shapes: building a cvxpy problem costs 4/5 of a solve, changing its parameters almost nothing)
_PROGRAMS: dict = {}


def _program(lay: dict, order_idx, has_growth: bool, margin: bool = False):
    """The cvxpy problem of a layout's shape, its data as :class:`cvxpy.Parameter` s (built once per shape, then only
    the parameters change): maximise ``rho``; or (``margin``) with ``rho`` fixed, maximise the margin ``t <= tcap``
    by which the decrease form is negative definite off its null directions ``N`` (where ``D N = 0``) and the
    lower-bound form positive definite off ``low_null`` (where it vanishes): the point :func:`verify` checks."""
    import cvxpy as cp

    Q, L, W, N = lay["Q"], lay["L"], lay["W"], lay["N"]
    key = (Q.shape, L.shape, N.shape, None if W is None else W.shape, tuple(lay["names"]), order_idx, has_growth, margin)
    if key in _PROGRAMS:
        return _PROGRAMS[key]
    nvar, nb = Q.shape[0], Q.shape[1]
    names = lay["names"]
    x = cp.Variable(nvar, name="x")
    t = cp.Variable(name="t") if margin else 0
    prm = {"rho": cp.Parameter(name="rho"), "tcap": cp.Parameter(nonneg=True, name="tcap"),
           "cap": cp.Parameter(nonneg=True, name="cap"), "L": cp.Parameter(L.shape, name="L")}
    nonneg = [i for i, n in enumerate(names) if n not in ("rho", "P")]
    weights = [i for i, n in enumerate(names) if n not in ("rho", "P", "mu", "kappa")]
    cons = [prm["L"] @ x == 0, x[nonneg] >= 0, x[weights] <= 1]

    def definite(name, size, shape, sign):  # the form (vec over the basis) is sign * definite by t, off its nulls
        prm[name] = cp.Parameter((size * size, nvar), name=name)
        form = cp.Variable((size, size), symmetric=True)
        return [cp.vec(form, order="F") == prm[name] @ x, sign * form - t * np.eye(size) >> 0] if size else []

    m = nb - N.shape[1]
    cons += definite("Qc", m, nb, -1)  # the decrease form on N's complement
    if N.shape[1]:
        prm["Qn"] = cp.Parameter((nb * N.shape[1], nvar), name="Qn")
        cons.append(prm["Qn"] @ x == 0)  # D N = 0
    if W is not None:
        k, c = W.shape[1], lay["low_null"].shape[1]
        cons += definite("Wc", k - c, k, 1)
        if c:
            prm["Wn"] = cp.Parameter((k * c, nvar), name="Wn")
            cons.append(prm["Wn"] @ x == 0)
    if has_growth:
        cons.append(x[names.index("kappa")] <= prm["cap"] * x[0])
    if order_idx is not None:
        cons.append(x[order_idx[0]] >= x[order_idx[1]])
    if margin:
        cons += [x[0] == prm["rho"], t <= prm["tcap"]]
    prog = {"x": x, "t": t, "prm": prm, "problem": cp.Problem(cp.Maximize(t if margin else x[0]), cons)}
    _PROGRAMS[key] = prog
    return prog


def _load(prog: dict, lay: dict, cap: float | None) -> dict:
    """Put a layout's data into a program's parameters (:func:`_program`)."""
    Q, W, N = lay["Q"], lay["W"], lay["N"]
    nvar = Q.shape[0]
    comp = np.linalg.svd(N, full_matrices=True)[0][:, N.shape[1]:] if N.shape[1] else np.eye(Q.shape[1])

    def vec(forms, left, right):  # column-major vec of left' form right, for each form
        return np.einsum("ai,vab,bj->jiv", left, forms, right).reshape(left.shape[1] * right.shape[1], nvar)

    prm = prog["prm"]
    prm["L"].value = lay["L"]
    prm["cap"].value = cap if cap is not None else 0.0
    if "Qc" in prm:
        prm["Qc"].value = vec(Q, comp, comp)
    if "Qn" in prm:
        prm["Qn"].value = vec(Q, np.eye(Q.shape[1]), N)
    if W is not None:
        C = lay["low_null"]
        off = np.linalg.svd(C, full_matrices=True)[0][:, C.shape[1]:] if C.shape[1] else np.eye(W.shape[1])
        if "Wc" in prm:
            prm["Wc"].value = vec(W, off, off)
        if "Wn" in prm:
            prm["Wn"].value = vec(W, np.eye(W.shape[1]), C)
    return prog


#: a cvxpy problem whose parameters have more entries than this is solved without DPP (its parameters taken as
#: constants): compiling the parameter-to-data map costs more than building the problem anew at each solve
#: (minibatches with N = 4, b = 2: 16 s against 2 s)
DPP_MAX_ENTRIES = 100_000


def _large(prob) -> bool:
    return sum(p.size for p in prob.parameters()) > DPP_MAX_ENTRIES


def _solve(prob, solver: str | None, solver_options: dict | None):
    """Solve a cvxpy problem with ``solver`` (default: Clarabel, then SCS when Clarabel is not conclusive);
    returns ``(status, solver used, the non-conclusive tries)``."""
    import contextlib
    import io

    import cvxpy as cp

    name = check_solver(solver)
    chain = [name] if name else ["CLARABEL", "SCS"]
    tried = []
    status, used = "not_solved", chain[0]
    for used in chain:
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                prob.solve(solver=used, warm_start=False, ignore_dpp=_large(prob),
                           **{**SOLVER_DEFAULTS[used], **(solver_options or {}).get(used, {})})
            status = prob.status
        except cp.error.SolverError as exc:
            status = f"solver_error: {str(exc).splitlines()[0]}"
        if status in _CONCLUSIVE:
            break
        tried.append(f"{used}: {status}")
    return status, used, tried


#: the verified rate is sought at ``rho = (1 - share) * (the solver's optimal rate)`` for each share in turn
#: (:func:`verify`): at the optimum the matrix inequality is tight, and the solver's point lies outside it by its
#: accuracy; a slightly smaller rate leaves a margin along S
VERIFY_SHARES = (0.0, 1e-3, 1e-2, 1e-1)


def search(step: OneStep, free_P: bool = False, order: tuple | None = None, rho_min: float = RHO_MIN,
           solver: str | None = None, solver_options: dict | None = None) -> Certificate:
    """Maximise ``rho`` subject to ``V_{t+1} - V_t + rho S_t <= 0`` (S-procedure over
    ``step.interp``), ``0 <= theta_i <= 1``, ``theta_{order[0]} >= theta_{order[1]}`` when ``order``
    is given, ``P`` free when ``free_P``, and the lower bound ``step.low >= 0`` when given, on the face of
    :func:`_null_space`.  The solver's word is not taken: :func:`verify` checks its point in numpy a little
    below its rate; where that fails, a second solve at ``rho = (1 - share)`` times the optimal rate
    (:data:`VERIFY_SHARES`) seeks the point with the largest margin in the matrix inequalities, and that point
    is checked (``rho`` of the result: the rate proven, None when none; ``details["solver_rho"]``: the
    solver's).
    ``solver_options`` maps a solver name to cvxpy options over :data:`stam.theory.worstcase.pepsolve.SOLVER_DEFAULTS`."""
    lay = layout(step, free_P)
    names = lay["names"]
    piece_idx = {p.name: 1 + i for i, p in enumerate(step.pieces)}
    order_idx = None if order is None else (piece_idx[order[0]], piece_idx[order[1]])
    cap = float(step.growth[2]) if step.growth is not None else None

    start = time.perf_counter()
    prog = _load(_program(lay, order_idx, step.growth is not None), lay, cap)
    status, used, tried = _solve(prog["problem"], solver, solver_options)
    x = prog["x"].value
    has_value = status in ("optimal", "optimal_inaccurate") and x is not None and math.isfinite(x[0])
    cert = Certificate(certified=False, rho=None, status=status, solver=used, seconds=time.perf_counter() - start)
    if tried:
        cert.details["fallback_from"] = tried
    if not has_value:
        return cert
    raw = np.asarray(x, dtype=float)
    solver_rho = float(raw[0])
    cert.details["solver_rho"] = solver_rho
    v, rho, cert.residual = None, None, {}
    if status == "optimal" and solver_rho >= rho_min:
        v, rho, cert.residual = verify(lay, raw, order_idx, cap, rho_min)
        if rho is None:  # the point with the largest margin, a little below the optimal rate
            v, rho, cert.residual = _verify_margin(lay, order_idx, cap, rho_min, solver_rho, solver, solver_options,
                                                   cert.residual)
        cert.seconds = time.perf_counter() - start
    cert.rho = rho
    vals = raw if v is None else v
    _record_values(cert, step, lay, vals, piece_idx)
    cert.certified = bool(status == "optimal" and rho is not None and rho >= rho_min)
    if cert.certified:
        cert.point = [float(val) for val in v]
    if status == "optimal" and solver_rho >= rho_min and not cert.certified:
        # a rate the solver calls optimal that the verification does not prove: not a certificate, and said so
        # (the region marks a bracket ended by one with "?")
        cert.details["unverified"] = True
    if step.growth is not None:
        kap, a = float(vals[names.index("kappa")]), cert.theta.get("a", 0.0)
        r = rho if rho else solver_rho
        cert.details.update(kappa=kap, growth=(1 + kap / a) if a > 0 else None, floor=kap / r if r else None)
        # q = 1 + kappa / a <= 1 + 2 kappa: counted only with a >= 1/2 (stam.theory.worstcase.templates, "Sampled gradients")
        cert.certified = cert.certified and a >= 0.5
    return cert


def _verify_margin(lay: dict, order_idx, cap, rho_min: float, solver_rho: float, solver, solver_options,
                   residual: dict):
    """:func:`search`'s second try where the solver's point failed :func:`verify`: at ``rho = (1 - share)`` times
    the optimal rate, for each share of :data:`VERIFY_SHARES` after the first, the point with the largest margin in
    the matrix inequalities, checked by :func:`verify`.  ``cap``: the growth's cap (None: the step has no growth
    term).  Returns ``(values, rate, residual)`` as :func:`verify`."""
    v, rho = None, None
    prog = _load(_program(lay, order_idx, cap is not None, margin=True), lay, cap)
    top_S = float(np.linalg.eigvalsh(lay["Q"][0]).max())
    for share in VERIFY_SHARES[1:]:
        prog["prm"]["rho"].value = (1 - share) * solver_rho
        prog["prm"]["tcap"].value = share * solver_rho * top_S
        status, _, _ = _solve(prog["problem"], solver, solver_options)
        if status in ("optimal", "optimal_inaccurate") and prog["x"].value is not None:
            v, rho, residual = verify(lay, np.asarray(prog["x"].value, dtype=float), order_idx, cap, rho_min,
                                      shares=(0.0,))
            residual.update(share=share, margin_solve=status)
            if rho is not None:
                break
    return v, rho, residual


def _record_values(cert: Certificate, step: OneStep, lay: dict, vals: np.ndarray, piece_idx: dict) -> None:
    """The weights ``theta``, the matrix ``P`` and the multipliers of the point ``vals`` into ``cert``."""
    names = lay["names"]
    cert.theta = {p.name: float(vals[piece_idx[p.name]]) for p in step.pieces}
    if lay["k"]:
        P = np.zeros((lay["k"], lay["k"]))
        for (i, j), val in zip(lay["pairs"], vals[len(names) - len(lay["pairs"]):]):
            P[i, j] = P[j, i] = val
        cert.P = P.tolist()
    mu = [i for i, n in enumerate(names) if n == "mu"]
    cert.details["multipliers"] = {c.name: float(vals[i]) for c, i in zip(step.interp, mu)}


#: the verification's rounding margin: a matrix inequality counts when its extreme eigenvalue, computed in numpy,
#: clears zero by VERIFY_MARGIN * n * eps * (the sum of |coefficient| * ||matrix|| of its terms), a bound on the
#: rounding of forming the matrix and of the (backward stable) eigenvalue computation; an identity (the function
#: values' combination, the decrease form on its null directions) counts when it holds to the same rounding
VERIFY_MARGIN = 16.0
#: :func:`verify`: a basis vector whose diagonal entry of the decrease form is within this fraction of its largest
#: entry of zero is taken as a null direction too (``D e = 0`` is then asked and checked, never assumed)
VERIFY_NULL = 1e-7


def verify(lay: dict, raw: np.ndarray, order_idx, cap: float | None, rho_min: float, shares=VERIFY_SHARES):
    """A-posteriori verification of the solver's point ``raw`` (the solver's word is not taken).  For ``rho' =
    (1 - share) rho``, each share of ``shares`` in turn: clip the weights and multipliers to their bounds; move the
    active weights and multipliers and ``P`` (least squares, ``rho'`` fixed) until the identities hold to rounding:
    the function values' combination vanishes, the decrease form ``D = sum_v x_v Q[v]`` vanishes on its null
    directions ``N`` (:func:`_null_space`: ``D N = 0``) and the lower-bound form on its own (:func:`_low_null`);
    then ``D`` must be negative definite on ``N``'s complement and the lower-bound form positive definite on its
    null directions' complement, each with the rounding margin (:data:`VERIFY_MARGIN`).  Then ``D <= 0`` and the
    lower-bound form ``>= 0``: the certificate holds for every problem of the class with the rate ``rho'``.
    Returns ``(values, rate, residual)``; rate None when no share passes with ``rho' >= rho_min`` (and
    ``kappa <= cap rho'``)."""
    eps = np.finfo(float).eps
    names = lay["names"]
    Q, W = lay["Q"], lay["W"]
    nb = Q.shape[1]
    nonneg = np.array([n not in ("rho", "P") for n in names])
    weights = np.array([n not in ("rho", "P", "mu", "kappa") for n in names])
    is_P = np.array([n == "P" for n in names])
    norms_Q = np.array([np.linalg.norm(m, 2) for m in Q])
    residual = {}
    for share in shares:
        v = raw.copy()
        v[0] = (1 - share) * raw[0]
        v[nonneg] = np.maximum(v[nonneg], 0.0)
        v[weights] = np.minimum(v[weights], 1.0)
        if order_idx is not None and v[order_idx[1]] > v[order_idx[0]]:
            v[order_idx[1]] = v[order_idx[0]]
        if cap is not None:  # the growth stays within its cap at the smaller rate
            v[names.index("kappa")] = min(v[names.index("kappa")], cap * v[0])
        if v[0] < rho_min:
            break
        residual = {"share": share}
        A, N, near = _identity_rows(lay, v)
        _fit_identities(A, v, nonneg, weights, is_P, None if cap is None else (names.index("kappa"), cap))
        r = A @ v
        residual["identities_abs"] = float(np.abs(r).max())
        ok = bool(np.abs(r).max() <= VERIFY_MARGIN * nb * eps * float((np.abs(A) @ np.abs(v)).max()))
        if W is not None:  # positive definite off its null directions
            k, C = W.shape[1], lay["low_null"]
            margin_w = VERIFY_MARGIN * k * eps * float(np.abs(v) @ np.array([np.linalg.norm(m, 2) for m in W]))
            off = np.linalg.svd(C, full_matrices=True)[0][:, C.shape[1]:] if C.shape[1] else np.eye(k)
            residual["lower_min_eig"] = float(np.linalg.eigvalsh(off.T @ np.tensordot(v, W, 1) @ off).min())
            ok = ok and residual["lower_min_eig"] >= margin_w
        comp = np.linalg.svd(N, full_matrices=True)[0][:, N.shape[1]:]  # N's orthogonal complement
        margin_d = VERIFY_MARGIN * nb * eps * float(np.abs(v) @ norms_Q)
        top = float(np.linalg.eigvalsh(comp.T @ np.tensordot(v, Q, 1) @ comp).max()) if comp.shape[1] else -math.inf
        residual.update(null_directions=int(N.shape[1]), decrease_max_eig=top, margin=margin_d, near=near)
        if ok and top <= -margin_d and (cap is None or v[names.index("kappa")] <= cap * v[0]):
            return v, float(v[0]), residual
    return None, None, residual


def _identity_rows(lay: dict, v: np.ndarray):
    """The identities :func:`verify` restores at the point ``v``, as the rows of ``A v = 0``: the function values'
    combination, ``D N = 0`` on the null directions ``N`` (:func:`_null_space`, and the basis vectors ``near``
    where ``D``'s diagonal entry is within :data:`VERIFY_NULL` of zero), ``low C = 0``; returns ``(A, N, near)``."""
    Q, L, W, N = lay["Q"], lay["L"], lay["W"], lay["N"]
    nb, nvar = Q.shape[1], len(lay["names"])
    D = np.tensordot(v, Q, 1)
    near = [i for i in range(nb) if abs(D[i, i]) <= VERIFY_NULL * np.abs(D).max()]  # a basis vector where D is 0
    if near:  # (e.g. the next subgradient for an indicator, whose square's weights cancel at the optimum)
        u, s, _ = np.linalg.svd(np.hstack([N, np.eye(nb)[:, near]]), full_matrices=False)
        N = u[:, s > 1e-9 * s[0]]
    A = np.vstack([L, np.einsum("vab,bn->anv", Q, N).reshape(nb * N.shape[1], nvar)])
    if W is not None:  # at the fixed points' states c the lower-bound form vanishes too (given D N = 0): low c = 0
        C = lay["low_null"]
        A = np.vstack([A, np.einsum("vab,bn->anv", W, C).reshape(W.shape[1] * C.shape[1], nvar)])
    return A, N, near


def _fit_identities(A, v, nonneg, weights, is_P, kappa) -> None:
    """Move the free entries of ``v`` in place (least squares, ``rho`` fixed; ``kappa = (index, cap)`` or None:
    held once at its cap) until ``A v = 0`` holds to rounding, the bounds kept."""
    for _ in range(4):
        r = A @ v
        free = (nonneg & (v > 0) & ~(weights & (v >= 1))) | is_P
        if kappa is not None and v[kappa[0]] >= kappa[1] * v[0]:
            free[kappa[0]] = False  # at its cap
        if not np.abs(r).max() > 0 or not free.any():
            break
        v[free] += np.linalg.lstsq(A[:, free], -r, rcond=None)[0]
        v[nonneg] = np.maximum(v[nonneg], 0.0)
        v[weights] = np.minimum(v[weights], 1.0)


__all__ = ["RHO_MIN", "Certificate", "forms", "layout", "search", "verify", "VERIFY_SHARES", "VERIFY_MARGIN",
           "VERIFY_NULL", "DPP_MAX_ENTRIES"]
