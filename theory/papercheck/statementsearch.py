"""The statements that rest on eq. (eq39), checked themselves on actual runs of Algorithm 1
(:func:`stam.steps.stam_step`): Lemma conv-lemma's summed inequality eq. (ineq1) and Theorem conv's conclusion
eq. (con-inequality), as printed (the printed K3), at every horizon (:func:`statement_ratio`), along runs of 36
classes (:func:`statement_runs`), searched adversarially (:func:`statement_search`) and recorded as a
:class:`stam.theory.papercheck.chainsearch.Search` (:func:`statement_search_result`).  Part of the adversarial search of
:mod:`stam.theory.papercheck.chainsearch` (its docstring: the classes and why), beside the search of the chain steps
(:mod:`stam.theory.papercheck.chainsearch`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from stam.steps import stam_init, stam_step
from stam.theory.symbolic import numeric as num
from stam.theory.papercheck.chainsearch import Search, constants_of, select_rows
from stam.theory.papercheck.problemclasses import COUPLINGS, SETS, CouplingClass
from stam.theory.settings import Settings, no_other
from stam.theory.symbolic.stamruns import SEED, dot, rounded

# --------------------------------------------------------------------------------------------
# the statements themselves: Lemma conv-lemma's summed inequality eq. (ineq1) and Theorem conv's
# conclusion eq. (con-inequality), on actual runs, with the printed constants
# --------------------------------------------------------------------------------------------

#: G = (G_1 + G_2)/2 (N = 2) of the statement searches: per run ``a`` (R, 1) and the centres
#: ``c_1, c_2`` (R, n); for each, the gradient of one component, G's value, its exact infimum, its
#: smallest L1 of (a1) and ``C0 = sup_y`` of the variance of the b-nice gradient with b = 1
#: (``||grad G_1 - grad G_2||^2 / 4``), so that Assumption ass3 holds with ``A0 = 0, B0 = 1`` and this
#: ``C0`` (with equality at the sup).  The double well of the step search has no L1 (its Hessian is
#: unbounded): the statements assume (a1), so their nonconvex G is a cosine well.
STATEMENT_G = {
    "quadratic G = (1/2) sum_k (a/2)||y - c_k||^2": {
        "grad": lambda y, a, c: a * (y - c),
        "value": lambda y, a, c1, c2: (a[:, 0] / 4) * (dot(y - c1, y - c1) + dot(y - c2, y - c2)),
        "inf": lambda a, d: (a[:, 0] / 2) * dot(d, d),
        "argmin": lambda m, d: m,
        "L1": lambda a, d: a[:, 0],
        "C0": lambda a, d: a[:, 0] ** 2 * dot(d, d),
    },
    "cosine well G = (1/2) sum_k a sum_i (1 - cos(y_i - c_k,i)) (nonconvex)": {
        "grad": lambda y, a, c: a * np.sin(y - c),
        "value": lambda y, a, c1, c2: a[:, 0] * np.sum(1 - (np.cos(y - c1) + np.cos(y - c2)) / 2, axis=-1),
        "inf": lambda a, d: a[:, 0] * np.sum(1 - np.abs(np.cos(d)), axis=-1),
        "argmin": lambda m, d: m + np.where(np.cos(d) < 0, np.pi, 0.0),
        "L1": lambda a, d: a[:, 0] * np.max(np.abs(np.cos(d)), axis=-1),
        "C0": lambda a, d: a[:, 0] ** 2 * np.sum(np.sin(d) ** 2, axis=-1),
    },
}

#: the couplings of the statement searches: those of :data:`COUPLINGS` with ``kappa >= 0``, so that H
#: is bounded below with ``H^inf = 0`` exactly (``phi >= 0``; log-cosh attains it at 0, softplus
#: approaches it), as the constant C of Lemma ES-GH needs (``kappa < 0`` makes H unbounded below)
STATEMENT_COUPLINGS = (COUPLINGS[0],) + tuple(
    CouplingClass(c.name.replace("kappa in [-10, 10]", "kappa in [0, 10]").replace("(same box)", "(same box, kappa >= 0)"),
                  (c.low[0], 0.0) + c.low[2:], c.high, c.make) for c in COUPLINGS[1:])

#: the index in :data:`SETS` of the scaled-binary set (the one of the three that is not finite)
SCALED_BINARY = next(i for i, name in enumerate(SETS) if name.startswith("scaled binary"))
#: the two statements: Lemma conv-lemma (eq. (ineq1)) and Theorem conv (eq. (con-inequality))
STATEMENTS = ("conv-lemma", "conv")
#: stochastic instances: every one of the 2^T_STOCH b-nice paths (N = 2, b = 1) is run, so that the
#: expectations of the statements are exact averages
T_STOCH = 6
#: the box of the step sizes of the statement searches: (gamma/sup{gamma: K1 > 0},
#: log(beta/(2 K2/K1))): Theorem conv needs beta K1/K2 >= 2 (the second coordinate >= 0)
ST_LOW, ST_HIGH = np.array([0.01, np.log(0.05)]), np.array([0.999, np.log(1e3)])

STATEMENT_MARGIN = ("1 - max over T of (left side / right side) of the printed statement, with the printed K3 "
                    "(M = 2 K3), L = L1 + L3*, A and C of Lemma ES-GH: < 0 iff the statement fails on the run")


def _select1(index, values):
    """Entry r of the result is entry r of ``values[index[r]]`` (1-d arrays)."""
    out = values[0]
    for k in range(1, len(values)):
        out = np.where(index == k, values[k], out)
    return out


def statement_runs(cls: CouplingClass, P, gi, si, stochastic: bool, seed: int, T: int, data: dict | None = None) -> dict:
    """Runs of STAM (:func:`stam.steps.stam_step`) for the parameter rows ``P`` (coupling
    parameters, gamma/sup{gamma: K1 > 0}, log(beta K1/(2 K2))), G of :data:`STATEMENT_G` number
    ``gi[r]``, F = I_Q with Q of :data:`SETS` number ``si[r]``.  Deterministic: the gradient of G;
    stochastic: G_1 or G_2 (b-nice, N = 2, b = 1), every path of ``T`` steps enumerated.  The data
    ``a, c_1, c_2, y^0, z^{-1}`` are drawn from ``seed`` unless given (``data``, as in ``out["data"]``).
    Returns per instance and t the expectations the statements need (exact averages over the paths)."""
    return _StatementRuns(cls, P, gi, si, stochastic, seed, T, data).result()


class _StatementRuns:
    """The runs of :func:`statement_runs` (its arguments), in dimension ``n = 3``: every instance repeated
    once per path (:meth:`rep`), the coupling of each row with F = I_Q (``Ops``), then the trajectory
    (:meth:`trajectory`), the measures along it (:meth:`measures`) and the values of G + H
    (:meth:`values`)."""

    def __init__(self, cls: CouplingClass, P, gi, si, stochastic: bool, seed: int, T: int, data: dict | None):
        rng = np.random.default_rng(seed)
        R, n = self.R, self.n = P.shape[0], 3
        self.T, self.stochastic, self.gi = T, stochastic, gi
        self.ops = cls.make(P[:, :-2])
        self.c = c = constants_of(self.ops)
        self.gam = P[:, -2] * num.gamma_threshold(c)
        k1, k2 = num.K1(self.gam, c), num.K2(self.gam, c)
        self.beta = 2 * k2 / k1 * np.exp(P[:, -1])
        if data is None:
            data = {"a": rng.uniform(0.1, 2, R), "c_1": rng.normal(0, 2, (R, n)), "c_2": rng.normal(0, 2, (R, n)),
                    "y^0": rng.normal(0, 2, (R, n)), "z^{-1}": rng.normal(0, 2, (R, n))}
        a, self.c1, self.c2, self.y0, self.zm1 = (np.asarray(data[k], dtype=float) for k in ("a", "c_1", "c_2", "y^0", "z^{-1}"))
        self.a = a.reshape(R, 1)
        self.paths = 2**T if stochastic else 1
        self.gs = list(STATEMENT_G.values())
        sets = list(SETS.values())
        sig = self.sig = self.rep(si)
        self.git = self.rep(gi)
        rep = self.rep

        class Ops:  # the coupling (one row per path) with F = I_Q
            cp = cls.make(rep(P[:, :-2]))
            grad_y_H, prox_H = cp.grad_y_H, cp.prox_H
            prox_F = staticmethod(lambda v, gamma: select_rows(sig, [proj(v) for proj in sets]))

        self.Ops = Ops
        self.Hc, self.g, self.A_, self.C1, self.C2 = Ops.cp, rep(self.gam)[:, None], rep(self.a), rep(self.c1), rep(self.c2)

    def rep(self, v):
        """An instance's entry -> one per path."""
        return np.repeat(v, self.paths, axis=0)

    def trajectory(self):
        """``(y, x, u, z, wild)``: the iterates ``t = 0..T`` (each ``(T+1, R*paths, n)``) and which rows blew up
        (a gradient clipped: then no STAM run)."""
        gs, A_, C1, C2 = self.gs, self.A_, self.C1, self.C2
        st = stam_init(self.rep(self.y0), self.Ops, self.g, z_prev=self.rep(self.zm1))
        traj, bit, wild = [st], (np.arange(self.R * self.paths) % self.paths), np.zeros(self.R * self.paths, dtype=bool)
        for t in range(self.T):
            if self.stochastic:
                cen = np.where(((bit >> t) & 1)[:, None] == 1, C2, C1)
                grad = select_rows(self.git, [gg["grad"](st.y, A_, cen) for gg in gs])
            else:
                grad = select_rows(self.git, [(gg["grad"](st.y, A_, C1) + gg["grad"](st.y, A_, C2)) / 2 for gg in gs])
            wild |= ~np.all(np.abs(grad) <= 1e6, axis=-1)  # a run that blows up is clipped, and then no STAM run
            st = stam_step(st, np.clip(grad, -1e6, 1e6), self.Ops, self.g, self.rep(self.beta)[:, None])
            traj.append(st)
        y, x, u, z = (np.stack([getattr(s_, k) for s_ in traj]) for k in ("y", "x", "u", "z"))  # (T+1, R*paths, n)
        return y, x, u, z, wild

    def measures(self, y, x, u, z):
        """``(eta, S, Z, M)`` at every t and row: ``||grad G(y^t) + grad_y H(x^t, y^t)||^2``, Theorem conv's
        ``S_t``, ``||z^t - z^{t-1}||^2 / gamma^2`` and ``M_t`` of Lemma conv-lemma without ``F(u^t)`` (0 on Q)."""
        Hc = self.Hc
        zprev = np.concatenate([self.rep(self.zm1)[None], z[:-1]])
        full = select_rows(self.git, [(gg["grad"](y, self.A_, self.C1) + gg["grad"](y, self.A_, self.C2)) / 2
                                  for gg in self.gs])  # exact grad G
        gyx = Hc.grad_y_H(x, y)
        eta = dot(full + gyx, full + gyx)  # ||grad G(y^t) + grad_y H(x^t, y^t)||^2
        gyu = full + Hc.grad_y_H(u, y)
        gxu = Hc.grad_x_H(u, y)
        zs = u / np.maximum(np.abs(u), 1e-300)  # the sign pattern of a point s z of the scaled-binary set
        on_ray = np.sum(np.abs(u), axis=-1) > 0
        ray = np.where(on_ray, dot(gxu, zs) ** 2 / self.n, 0.0)
        dist2 = np.where(self.sig == SCALED_BINARY, ray, 0.0)  # dist^2(0, grad_x H(u, y) + N_Q(u)): 0 on the finite sets
        S = dot(gyu, gyu) + dist2
        Zd = dot(z - zprev, z - zprev) / self.gam.repeat(self.paths)[None] ** 2
        Mt = (dot(2 * x - u - z, 2 * x - u - z) / 2 - dot(x - z, x - z) / 2 - dot(u - x, u - x)) / self.g[:, 0]
        return eta, S, Zd, Mt

    def values(self, y, x):
        """``(G + H at (x^0, y^0), an upper bound of (G+H)^inf, G^inf, d = (c_1 - c_2)/2)`` per instance."""
        gi, gs, a, c1, c2, R, paths = self.gi, self.gs, self.a, self.c1, self.c2, self.R, self.paths
        GH = _select1(gi, [gg["value"](self.y0, a, c1, c2) for gg in gs]) + self.Hc.value(x[0], y[0]).reshape(R, paths)[:, 0]
        d, m = (c1 - c2) / 2, (c1 + c2) / 2
        Ginf = _select1(gi, [gg["inf"](a, d) for gg in gs])
        ystar = select_rows(gi, [gg["argmin"](m, d) for gg in gs])
        upper = Ginf + self.ops.value(ystar, ystar)  # G + H at (y*, y*): an upper bound of (G+H)^inf
        along = (_select1(self.git, [gg["value"](y[k], self.A_, self.C1, self.C2) for gg in gs]) + self.Hc.value(x[k], y[k])
                 for k in range(self.T + 1))
        upper = np.minimum(upper, np.min(np.stack([v.reshape(R, paths).min(axis=1) for v in along]), axis=0))
        return GH, upper, Ginf, d

    def result(self) -> dict:
        """The dict of :func:`statement_runs`."""
        R, paths, gi, gs, a = self.R, self.paths, self.gi, self.gs, self.a
        y, x, u, z, wild = self.trajectory()
        eta, S, Zd, Mt = self.measures(y, x, u, z)
        GH, upper, Ginf, d = self.values(y, x)
        E = lambda v: v.reshape(v.shape[0], R, paths).mean(axis=-1)  # noqa: E731 - exact expectation over the paths
        moved = np.max(np.abs(np.stack([y[-1] - y[-2], x[-1] - x[-2], u[-1] - u[-2], z[-1] - z[-2]])), axis=(0, 2))
        return {"eta": E(eta[:-1]), "Z": E(Zd[:-1]), "S": E(S[:-1]),
                "M0'": Mt[0].reshape(R, paths)[:, 0] - E(np.min(Mt, axis=0)[None])[0],
                "GH0": GH, "GH_upper": upper, "GH_lower": Ginf + 0.0,  # H^inf = 0 (kappa >= 0)
                "L1": _select1(gi, [gg["L1"](a, d) for gg in gs]),
                "C0": _select1(gi, [gg["C0"](a, d) for gg in gs]) if self.stochastic else np.zeros(R),
                "fixed": (moved.reshape(R, paths).max(axis=1) == 0) & (not self.stochastic),
                "actual": ~wild.reshape(R, paths).any(axis=1),  # no gradient was clipped: an actual run of STAM
                "data": {"a": a[:, 0], "c_1": self.c1, "c_2": self.c2, "y^0": self.y0, "z^{-1}": self.zm1},
                "gamma": self.gam, "beta": self.beta, "constants": self.c, "paths": paths}


def statement_ratio(label: str, out: dict, reading: str = "strict", bound_factor: float = 1.0,
                    as_printed: bool = True) -> np.ndarray:
    """Left side over right side of the printed statement ``label`` (:data:`STATEMENTS`) at every
    horizon T = 1..len (shape (T, R)); nan where the run does not meet the statement's hypotheses or
    is no actual run (it blew up and a gradient was clipped).

    The constants are the printed ones: ``M = 2 K3`` with the printed K3, ``L = L1 + L3*`` (the
    smallest L of (a3)), ``A = max(2 A0 + 2 B0 L1, 2 L3*)`` and ``C = 2 A Delta_GH + 2 C0`` of Lemma
    ES-GH (``A0 = 0``, ``B0 = 1``, ``C0`` of :data:`STATEMENT_G`), ``omega_{-1} = 1`` (both sides are
    linear in it).  ``reading = "strict"`` makes the right side no larger than the printed one:
    ``M0'`` with the infimum over the run's steps (``<=`` the printed ``inf_{t >= 0}``) and an upper
    bound of ``(G+H)^inf`` (the right side decreases in it: its coefficient is ``-beta (1+q)^{-T}``
    in eq. (ineq1), ``2 beta (q - (1+q)^T/T) < 0`` in eq. (con-inequality)), so a ratio ``<= 1`` means
    the printed statement holds on the run; ``"lenient"`` uses the lower bound ``G^inf + H^inf`` (a
    right side no smaller than the printed one once no later ``M_t`` falls below the run's, as on a
    run that has reached a fixed point).  ``bound_factor`` scales the right side (tests only)."""
    c, gam, beta = out["constants"], out["gamma"], out["beta"]
    gh_inf = out["GH_upper"] if reading == "strict" else out["GH_lower"]
    L = out["L1"] + c.L3
    Mp = num.M(gam, c, as_printed=as_printed)
    A = 2 * np.maximum(out["L1"], c.L3)
    Cc = 2 * A * np.maximum(gh_inf - out["GH_lower"], 0.0) + 2 * out["C0"]
    delta0, M0 = np.maximum(out["GH0"] - gh_inf, 0.0), out["M0'"]
    q = (L + Mp) * A / beta**2
    T = out["eta"].shape[0]
    Ts = np.arange(1, T + 1)[:, None]
    k1, k2 = num.K1(gam, c), num.K2(gam, c)
    with np.errstate(all="ignore"):
        if label == "conv-lemma":
            w = (1 + q)[None] ** -(Ts)  # omega_t, t = 0..T-1
            lhs = np.cumsum(w * (out["eta"] + beta * k1 / k2 * out["Z"]), axis=0)
            rhs = beta * (delta0 + M0) + (L + Mp) * Cc / (2 * beta) * np.cumsum(w, axis=0)
            ok = k1 > 0
        else:
            lhs = np.minimum.accumulate(out["S"], axis=0)
            cst = num.Constants(L1=out["L1"], L2=c.L2, L3=c.L3, L4=c.L4, L5=c.L5, l=c.l, A=A, C=Cc)
            rhs = num.theorem_rhs(Ts, gam, beta, cst, delta0, M0, as_printed=as_printed)
            ok = (k1 > 0) & (num.second_condition(gam, c) <= 1) & (beta * k1 / k2 >= 2)
        ratio = lhs / (bound_factor * rhs)
    return np.where((ok & out["actual"])[None] & np.isfinite(ratio), ratio, np.nan)


def statement_class_name(cls, gi, si, stochastic) -> str:
    return (f"{cls.name}; F = I_Q, Q {list(SETS)[si]}; {list(STATEMENT_G)[gi]}; "
            + (f"stochastic: b-nice sampling of G_1, G_2 (N = 2, b = 1), all 2^{T_STOCH} paths (exact expectations)"
               if stochastic else "exact gradients"))


@dataclass(frozen=True)
class StatementBudget(Settings):
    """How much :func:`statement_search` runs: ``R`` random deterministic runs of ``T`` steps and ``R_stoch``
    stochastic instances (of ``2^T_STOCH`` paths) per class, then ``rounds`` rounds of ``width`` (``width_stoch``)
    perturbations of each best run."""

    R: int = 16
    R_stoch: int = 4
    T: int = 40
    rounds: int = 4
    width: int = 8
    width_stoch: int = 2


@lru_cache(maxsize=None)
def statement_search(seed: int = SEED, budget: StatementBudget | None = None, bound_factor: float = 1.0,
                     couplings: tuple = (0, 1, 2), **fields) -> dict:
    """Lemma conv-lemma's eq. (ineq1) and Theorem conv's eq. (con-inequality), each checked as
    printed at every horizon T' <= T (:func:`statement_ratio`, the strict reading) on actual runs of
    every class: per coupling of :data:`STATEMENT_COUPLINGS`, (set Q, G) and deterministic /
    stochastic gradients, a random stage (``R`` runs, ``R_stoch`` stochastic instances of
    ``2^T_STOCH`` paths), then per (statement, class) ``rounds`` rounds of local search from its best
    run (``width`` / ``width_stoch`` Gaussian perturbations, halved every two rounds), maximising
    the ratio.  A violation becomes a counterexample (``found``) when it also holds in the lenient
    reading on a deterministic run that has reached a fixed point (so that no later ``M_t`` changes
    ``M0'``); every violation of the strict reading is counted (``violations``).  ``bound_factor``
    and ``couplings`` (indices into :data:`STATEMENT_COUPLINGS`) are for the tests.  ``budget``: ``R``,
    ``R_stoch``, ``T``, ``rounds``, ``width``, ``width_stoch`` (:class:`StatementBudget`), its fields also by keyword
    (``statement_search(R=60, T=200, rounds=0)``)."""
    budget = StatementBudget.of(budget, fields)
    no_other(fields, "statement_search")
    R, R_stoch, T, rounds, width, width_stoch = (budget.R, budget.R_stoch, budget.T, budget.rounds, budget.width,
                                                 budget.width_stoch)
    rng = np.random.default_rng(seed + 1)
    res = {lab: {"runs": 0, "instances": 0, "steps": 0, "classes": [], "closest": None, "found": None,
                 "violations": 0, "T": T, "deterministic runs": 0, "stochastic instances": 0, "blown up": 0}
           for lab in STATEMENTS}
    for cls in (STATEMENT_COUPLINGS[i] for i in couplings):
        for stochastic in (False, True):
            Tn, Rn, wn = (T_STOCH, R_stoch, width_stoch) if stochastic else (T, R, width)
            _StatementSearch(res, rng, cls, stochastic, Tn, bound_factor).run(Rn, wn, rounds)
    return {lab: dict(r, classes=tuple(r["classes"])) for lab, r in res.items()}


class _StatementSearch:
    """One (coupling, deterministic or stochastic) part of :func:`statement_search`: its random stage and rounds
    of local search over every (G, Q) class, adding to the counts and records of ``res`` (per statement);
    ``best`` and ``value``: the worst parameters and ratio found so far per (statement, class)."""

    def __init__(self, res: dict, rng, cls: CouplingClass, stochastic: bool, T: int, bound_factor: float):
        self.res, self.rng, self.cls, self.stochastic, self.T, self.bound_factor = res, rng, cls, stochastic, T, bound_factor
        self.combos = [(gi, si) for gi in range(len(STATEMENT_G)) for si in range(len(SETS))]
        self.low = np.concatenate([cls.low, ST_LOW])
        self.high = np.concatenate([cls.high, ST_HIGH])
        self.best, self.value = {}, {}

    def run(self, R: int, width: int, rounds: int) -> None:
        """``R`` random runs per class, then ``rounds`` rounds of ``width`` Gaussian perturbations of each best run
        (halved every two rounds)."""
        low, high, rng, combos = self.low, self.high, self.rng, self.combos
        span = np.minimum(high - low, 1.0)
        idx = np.repeat(np.arange(len(combos)), R)
        self.evaluate(rng.uniform(low, high, (idx.size, low.size)), idx)
        keys = [(lab, k) for lab in STATEMENTS for k in range(len(combos))]
        for rd in range(rounds):
            starts = [self.best.get(key, low + span / 2) for key in keys]
            cand = np.concatenate([np.clip(b + span * rng.normal(0, 0.5 * 0.5 ** (rd // 2), (width, low.size)),
                                           low, high) for b in starts])
            self.evaluate(cand, np.concatenate([np.full(width, k) for _, k in keys]))
        for lab in STATEMENTS:
            self.res[lab]["classes"] += [statement_class_name(self.cls, gi, si, self.stochastic) for gi, si in combos]

    def evaluate(self, P, idx) -> None:
        """The runs of the parameter rows ``P`` (row ``r`` of class ``combos[idx[r]]``), counted and judged."""
        gi = np.array([self.combos[i][0] for i in idx])
        si = np.array([self.combos[i][1] for i in idx])
        with np.errstate(all="ignore"):
            out = statement_runs(self.cls, P, gi, si, self.stochastic, int(self.rng.integers(2**31)), self.T)
        judged = int(np.sum(out["actual"]))  # the others blew up (a gradient clipped): not judged
        for lab in STATEMENTS:
            r = self.res[lab]
            r["runs"] += judged * out["paths"]
            r["instances"] += judged
            r["stochastic instances" if self.stochastic else "deterministic runs"] += judged
            r["steps"] += judged * out["paths"] * self.T
            r["blown up"] += P.shape[0] - judged
            self._judge(lab, P, idx, out)

    def _judge(self, lab: str, P, idx, out: dict) -> None:
        """Statement ``lab`` on the runs ``out``: its strict violations counted, per class the worst run kept
        (and the closest to a violation recorded), a lenient violation at a fixed point recorded as found."""
        r = self.res[lab]
        ratio = statement_ratio(lab, out, "strict", self.bound_factor)
        worst = np.nanmax(np.where(np.isnan(ratio), -np.inf, ratio), axis=0)
        r["violations"] += int(np.sum(worst > 1))
        lenient = statement_ratio(lab, out, "lenient", self.bound_factor)
        hit = out["fixed"] & (np.nanmax(np.where(np.isnan(lenient), -np.inf, lenient), axis=0) > 1)
        for k in np.unique(idx):
            rows = np.flatnonzero(idx == k)
            i = rows[int(np.argmax(worst[rows]))]
            name = statement_class_name(self.cls, *self.combos[k], self.stochastic)
            if np.isfinite(worst[i]) and worst[i] > self.value.get((lab, k), -np.inf):
                self.best[lab, k], self.value[lab, k] = P[i], float(worst[i])
                if r["closest"] is None or 1 - worst[i] < r["closest"]["margin"]:
                    r["closest"] = _closest_record(name, float(worst[i]), int(np.nanargmax(ratio[:, i])), P[i])
            if hit[rows].any() and r["found"] is None:
                j = rows[int(np.argmax(hit[rows]))]
                r["found"] = _found_record(lab, name, P[j], out, j, lenient[:, j],
                                           {"coupling": STATEMENT_COUPLINGS.index(self.cls), "G": self.combos[k][0],
                                            "Q": self.combos[k][1], "T": self.T})


def _closest_record(name: str, worst: float, t: int, params) -> dict:
    """:func:`statement_search`'s ``closest``: the run of class ``name`` (parameters ``params``) whose printed
    statement came nearest to failing, ``worst`` its largest left/right ratio, at the horizon ``t + 1``."""
    return {"margin": 1 - worst, "class": name, "T": t + 1, "parameters": [float(p) for p in params],
            "parameters are": "coupling parameters (see the class), gamma/sup{gamma: K1 > 0}, log(beta K1/(2 K2))",
            "margin is": STATEMENT_MARGIN,
            "margin briefly": "1 - left side/right side of the printed statement; < 0 iff it fails"}


def _found_record(lab: str, name: str, params, out: dict, j: int, lenient, replay: dict) -> dict:
    """:func:`statement_search`'s ``found``: run ``j`` of ``out`` (class ``name``, parameters ``params``), on which
    the printed statement ``lab`` fails in the lenient reading (its ratios ``lenient``) at a fixed point; ``replay``
    says how to run it again."""
    return {"class": name, "parameters": [float(p) for p in params], "evidence": "run",
            "instance": rounded({key: v[j] for key, v in out["data"].items()}, 17), "replay": replay,
            "gamma": float(out["gamma"][j]), "beta": float(out["beta"][j]),
            "T": int(np.nanargmax(lenient)) + 1, "left/right": float(np.nanmax(lenient)),
            "meaning": f"the printed {'Lemma conv-lemma' if lab == 'conv-lemma' else 'Theorem conv'}"
                       " fails on an actual run that has reached a fixed point"}


@lru_cache(maxsize=None)
def statement_search_result(label: str, seed: int = SEED) -> Search:
    """:func:`statement_search` for ``label`` (``conv-lemma`` or ``conv``) as the :class:`Search`
    its item names."""
    r = statement_search(seed)[label]
    name = "Lemma conv-lemma's eq. (ineq1)" if label == "conv-lemma" else "Theorem conv's eq. (con-inequality)"
    return Search(
        method=f"seeded (seed {seed}): {name} as printed (printed K3, M = 2 K3, L = L1 + L3*, A and C of Lemma ES-GH) "
               f"checked at every horizon T' on actual runs through stam.steps.stam_step: "
               f"{r['deterministic runs']} deterministic runs of {r['T']} steps and {r['stochastic instances']} "
               f"stochastic instances, each with all its 2^{T_STOCH} b-nice paths of {T_STOCH} steps (exact "
               f"expectations; {r['runs']} runs in all), random then a batched local search per class maximising "
               "left/right "
               "(stam.theory.papercheck.statementsearch.statement_search); M0' with the infimum over the run's steps and an upper "
               "bound of (G+H)^inf, so that the checked right side is at most the printed one; "
               f"{r['blown up']} more blew up, their gradient clipped: no actual runs, not judged; "
               f"{r['violations']} runs or stochastic instances where it fails",
        classes=r["classes"], instances=r["runs"], steps=r["steps"], found=r["found"], closest=rounded(r["closest"]))
