"""The adversarial search for counterexamples to the printed chain steps eq. (eq36) and eq. (eq39) (and the other
printed steps of :data:`LABELS`) on *actual* runs of Algorithm 1 (:func:`stam.steps.stam_step`): the classes
(couplings, sets Q, G, deterministic or stochastic gradients), the runs and their chain quantities
(:func:`runs`), the objective (:func:`margin`), the batched local search (:func:`search_all`) and its record
(:class:`Search`, :func:`runs_search`).

What is searched and why.  An adversarial search for counterexamples to the printed steps eq. (eq36) and eq. (eq39) (and so
to K3, eq. (eq38), Lemmas par2 and conv-lemma, Theorem conv, which rest on them) on *actual* runs of
Algorithm 1 (:func:`stam.steps.stam_step`), beyond the quadratic instances of
:func:`stam.theory.symbolic.stamruns.iterate_search`.  The classes are the product of

- the coupling H: quadratic ``(lam/2)||x - y||^2`` and two smooth non-quadratic ones,
  ``(lam/2)||x - y||^2 + kappa sum_i phi(alpha x_i + b y_i)`` with ``phi`` log-cosh or softplus
  (``kappa`` of either sign: ``H(., y)`` convex or only weakly convex; ``alpha``, ``b`` free, so that
  ``L2*`` and ``L4*`` are no longer tied as in the quadratic coupling).  Their gradients and Hessian
  blocks are derived in sympy (:func:`stam.theory.papercheck.problemclasses.coupling_derivatives`) and their constants ``L2*, ..., L5*``,
  ``l`` are exact: the Hessian blocks are affine in ``phi''``, whose range ``(0, sup phi'']`` is
  derived too; the x-step ``argmin_x H(x, y) + ||x - z||^2/(2 gamma)`` is solved by a safeguarded
  Newton iteration (strongly monotone since ``gamma l < 1``);
- F = I_Q for closed sets Q: binary ``{-1, 1}^n``, ternary ``{-1, 0, 1}^n`` and the paper's own
  scaled-binary set of eq. (eq01) read as closed, ``{s z : s >= 0, z in {-1, 1}^n}`` (projection
  ``s = ||v||_1/n``, ``z = sign v``);
- G: quadratic, or the nonconvex double well ``a sum (y_i^2 - 1)^2/4``;
- gradients: deterministic, or stochastic (Gaussian noise, sigma = 1).

gamma is drawn below ``gamma_max`` of the instance's constants (K1 > 0 and the second condition
of Theorem conv), so that every hypothesis of the statements holds.  Each class: a random stage
(R runs), then a local search from its best run (rounds of Gaussian perturbations in the class's
box, a shrinking step) that minimises :func:`margin`, negative exactly where the print fails; all
classes of a coupling, and all searched steps, run in one batch per round (:func:`search_all`).

The printed gap of each step is evaluated with the lambdified gaps of :mod:`stam.theory.symbolic.chain` at
every step of every run (``d = grad_x H(x^t, y^{t+1}) - grad_x H(x^t, y^t)`` and ``Phi`` computed
from the coupling itself); a negative gap (relative to the size of the terms, below -1e-9) on a run
is a counterexample.  The derived chain is checked on the same runs by the tests: it must hold.

The statements that rest on eq39 are also checked themselves (:func:`statement_search`): Lemma
conv-lemma's summed inequality eq. (ineq1) and Theorem conv's conclusion eq. (con-inequality), as
printed (the printed K3), at every horizon along actual runs of 36 classes (the couplings with
``kappa >= 0``, so that H is bounded below as the constant C needs; the three sets Q; quadratic or
cosine-well G, which have the L1 of (a1) the double well lacks; exact gradients, or b-nice sampling
of ``G = (G_1 + G_2)/2`` with every path enumerated, so that the expectations are exact).

The statements' part of the search (Lemma conv-lemma's eq. (ineq1), Theorem conv's eq. (con-inequality)) is
:mod:`stam.theory.papercheck.statementsearch`.theory.statementsearch` (the statements that rest
on eq39, checked themselves)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from stam.steps import stam_init, stam_step
from stam.theory.symbolic import numeric as num
from stam.theory.papercheck.problemclasses import COUPLINGS, GRADIENTS, SETS, CouplingClass
from stam.theory.symbolic.stamruns import SEED, chain_counterexample, dot, gap_functions, iterate_search, relative_scale, rounded

@dataclass(frozen=True)
class Search:
    """An adversarial search for a counterexample on actual STAM runs: the ``classes`` of problems
    tried, how many ``instances`` (runs) and ``steps`` were checked, the ``method`` (random,
    optimised, exact...), the counterexample ``found`` (a replayable run) or None, and the
    ``closest`` the print came to failing (its smallest relative gap, with where)."""

    method: str
    classes: tuple
    instances: int
    steps: int
    found: dict | None = None
    closest: dict | None = None

    def as_json(self) -> dict:
        return {"method": self.method, "classes": list(self.classes), "instances": self.instances,
                "steps": self.steps, "found": self.found, "closest": self.closest}


#: the box of the step sizes: (gamma/gamma_max, log beta/L) with L = max(L3*, 0.05)
_STEP_LOW, _STEP_HIGH = np.array([0.01, np.log(0.05)]), np.array([0.999, np.log(1e3)])


# --------------------------------------------------------------------------------------------
# runs and their chain quantities
# --------------------------------------------------------------------------------------------

def constants_of(ops) -> num.Constants:
    c = ops.constants()
    return num.Constants(L1=None, L2=c["L2"], L3=c["L3"], L4=c["L4"], L5=c["L5"], l=c["l"])


COMBOS = [(si, gi, sg) for si in range(len(SETS)) for gi in range(len(GRADIENTS)) for sg in (0.0, 1.0)]
#: the printed chain steps that differ from the derived ones: eq25 -> eq300 (false on quadratic runs
#: already) and the unproven eq36, eq39 (on which K3, eq38, Lemmas par2, conv-lemma and Theorem conv rest)
LABELS = ("eq25", "eq26", "eq27", "eq300", "eq36", "eq39")
#: the steps the local search refines (the unproven ones); every label is evaluated on every run
REFINED = ("eq36", "eq39")


def select_rows(index, values):
    """Row r of the result is row r of ``values[index[r]]``."""
    out = values[0]
    for k in range(1, len(values)):
        out = np.where((index == k)[:, None], values[k], out)
    return out


def runs(ops, gfrac, bfac, combo, rng, T, n=3) -> dict:
    """T steps of STAM (:func:`stam.steps.stam_step`) per run (row) with coupling ``ops``,
    F = I_Q and G of the run's combination ``combo = (set index, gradient index, sigma)`` (arrays,
    one entry per run); returns the chain's arguments, the scale of its terms, the constants."""
    c = constants_of(ops)
    gam = gfrac * num.gamma_max(c)
    beta = bfac * np.maximum(c.L3, 0.05)
    si, gi, sigma = combo
    R = gam.size
    a, g0 = rng.uniform(0.1, 2, (R, 1)), rng.normal(0, 2, (R, n))
    sets, grads = list(SETS.values()), list(GRADIENTS.values())

    class Ops:  # the coupling with F = I_Q
        grad_y_H, prox_H = ops.grad_y_H, ops.prox_H
        prox_F = staticmethod(lambda v, gamma: select_rows(si, [proj(v) for proj in sets]))

    st = stam_init(rng.normal(0, 2, (R, n)), Ops, gam[:, None], z_prev=rng.normal(0, 2, (R, n)))
    traj, wild = [st], np.zeros(R, dtype=bool)
    for _ in range(T):
        g = select_rows(gi, [grad(st.y, a, g0) for grad in grads]) + sigma[:, None] * rng.normal(0, 1, st.y.shape)
        wild |= ~np.all(np.abs(g) <= 1e6, axis=-1)  # a run that blows up is clipped, and then no STAM run
        st = stam_step(st, np.clip(g, -1e6, 1e6), Ops, gam[:, None], beta[:, None])
        traj.append(st)
    y, x, u, z = (np.stack([getattr(s, k) for s in traj]) for k in ("y", "x", "u", "z"))
    zprev = np.concatenate([(traj[0].z - (traj[0].u - traj[0].x))[None], z[:-1]])  # z^{-1}, z^0, ...
    dx, dy, dz = x[1:] - x[:-1], y[1:] - y[:-1], z[:-1] - zprev[:-1]
    d = ops.grad_x_H(x[:-1], y[1:]) - ops.grad_x_H(x[:-1], y[:-1])

    def phi(xx, uu, zz, yy):  # F = I_Q is 0 on the iterates u^t (projections onto Q)
        return (ops.value(xx, yy) + dot(2 * xx - uu - zz, 2 * xx - uu - zz) / (2 * gam)
                - dot(xx - zz, xx - zz) / (2 * gam) - dot(uu - xx, uu - xx) / gam)

    q = {"X": dot(dx, dx), "Y": dot(dy, dy), "Z": dot(dz, dz), "P": dot(dz, dx), "D": dot(d, d),
         "Q": dot(d, dx), "E": dot(x[1:] - u[:-1], x[1:] - u[:-1]),
         "dPhi": phi(x[1:], u[1:], z[1:], y[1:]) - phi(x[:-1], u[:-1], z[:-1], y[1:])}
    args = (q["X"], q["Y"], q["Z"], q["P"], q["D"], q["Q"], q["E"], q["dPhi"], gam, c.l, c.L2, c.L4,
            num.K1(gam, c), num.K2(gam, c))
    scale = np.where(wild[None], np.inf, relative_scale(q))  # no clipped run is judged (relative gaps +inf)
    return {"args": args, "scale": scale, "gamma": gam, "beta": beta, "constants": c}


def relative_gaps(label: str, out: dict, which: int = 0) -> np.ndarray:
    """The printed (``which = 0``) or derived (1) gap of ``label`` over ``1 +`` the size of its
    terms (the counterexample criterion: below -1e-9), per (t, run); +inf where not finite or where
    y does not move (printed = derived there: their difference is a multiple of ``||y^{t+1} - y^t||^2``)."""
    args, scale = out["args"], out["scale"]
    with np.errstate(all="ignore"):
        gap = gap_functions()[label][which](*args) + 0 * args[0]
        rel = gap / scale
        return np.where(np.isfinite(rel) & (args[1] > 1e-10 * scale), rel, np.inf)


def margin(label: str, out: dict) -> np.ndarray:
    """The search's objective: ``printed gap / (derived gap - printed gap)`` where the print asks
    more than the derivation gives (``derived - printed > 1e-9 (1 + size of the terms)``; +inf
    elsewhere, where the print cannot fail since the derived step holds on every run).  It is
    negative exactly where the print fails, and measures how close it comes: the derived slack
    over the print's error, minus 1."""
    args, scale = out["args"], out["scale"]
    fp, fd = gap_functions()[label]
    with np.errstate(all="ignore"):
        printed, derived = fp(*args) + 0 * args[0], fd(*args) + 0 * args[0]
        m = printed / (derived - printed)
        return np.where(np.isfinite(m) & (derived - printed > 1e-9 * scale), m, np.inf)


def batch(cls: CouplingClass, P, combo_index, seed, T):
    """One batched run of the parameter rows ``P`` = (coupling params..., gamma/gamma_max, log
    beta/max(L3*, 0.05)), row r with the combination ``COMBOS[combo_index[r]]``, data seeded by ``seed``."""
    rng = np.random.default_rng(seed)
    combo = tuple(np.array([COMBOS[i][j] for i in combo_index], dtype=float if j == 2 else int) for j in range(3))
    with np.errstate(all="ignore"):
        return runs(cls.make(P[:, :-2]), P[:, -2], np.exp(P[:, -1]), combo, rng, T)


def box(cls: CouplingClass):
    """The search box of a coupling class: its parameters, then the step sizes."""
    return np.concatenate([cls.low, _STEP_LOW]), np.concatenate([cls.high, _STEP_HIGH])


def class_name(cls, combo) -> str:
    si, gi, sigma = combo
    return (f"{cls.name}; F = I_Q, Q {list(SETS)[si]}; {list(GRADIENTS)[gi]}; "
            f"{'stochastic (sigma = 1)' if sigma else 'deterministic'}")


MARGIN = ("printed gap / (derived gap - printed gap) at the step where the print asks more than the derivation "
          "gives: < 0 iff the print fails there")
PARAMETERS = "coupling parameters (see the class), gamma/gamma_max, log(beta/max(L3*, 0.05))"


@lru_cache(maxsize=None)
def search_all(seed: int = SEED, R: int = 64, T: int = 20, rounds: int = 6, width: int = 16) -> dict:
    """For every coupling class, one batch of R random runs per (set, G, sigma) combination (every
    label of :data:`LABELS` evaluated on them), then, per (label of :data:`REFINED`, combination), a
    local search from its most violated run: ``rounds`` rounds of ``width`` Gaussian perturbations
    of the best point so far (0.5 of the box's width, capped at 1, halved every two rounds), every
    (label, combination) of a round in one batch.  Returns, per label, the runs and steps evaluated,
    the classes, the smallest :func:`margin` (with its class and parameters) and a
    counterexample or None."""
    rng = np.random.default_rng(seed)
    res = {lab: {"runs": 0, "steps": 0, "classes": [], "closest": None, "found": None, "blown up": 0} for lab in LABELS}
    nc = len(COMBOS)
    keys = [(lab, c) for lab in REFINED for c in range(nc)]
    for cls in COUPLINGS:
        low, high = box(cls)
        span = np.minimum(high - low, 1.0)
        P = rng.uniform(low, high, (R * nc, low.size))
        idx = np.repeat(np.arange(nc), R)
        out = batch(cls, P, idx, int(rng.integers(2**31)), T)
        best, value, found = {}, {}, {}  # (label, combination) -> best parameters, their value; a hit

        blown = [0]  # runs that blew up (a gradient clipped): no actual runs, not judged

        def record(rows_P, rows_c, out):
            blown[0] += int(np.sum(np.isinf(out["scale"][0])))
            for lab in LABELS:
                per_run = margin(lab, out).min(axis=0)
                hit = relative_gaps(lab, out).min(axis=0) < -1e-9  # a counterexample on this run
                for c in np.unique(rows_c):
                    rows = np.flatnonzero(rows_c == c)
                    i = rows[int(np.argmin(per_run[rows]))]
                    if np.isfinite(per_run[i]) and per_run[i] < value.get((lab, c), np.inf):
                        best[lab, c], value[lab, c] = rows_P[i], float(per_run[i])
                    if hit[rows].any() and (lab, c) not in found:
                        found[lab, c] = rows_P[rows[int(np.argmax(hit[rows]))]]

        record(P, idx, out)
        for k in range(rounds):
            starts = [best.get(key, P[np.flatnonzero(idx == key[1])[0]]) for key in keys]
            cand = np.concatenate([np.clip(b + span * rng.normal(0.0, 0.5 * 0.5 ** (k // 2), (width, low.size)), low, high)
                                   for b in starts])
            cidx = np.concatenate([np.full(width, c) for _, c in keys])
            record(cand, cidx, batch(cls, cand, cidx, int(rng.integers(2**31)), T))
        n_runs = R * nc + rounds * width * len(keys)
        for lab in LABELS:
            r = res[lab]
            r["runs"], r["steps"] = r["runs"] + n_runs - blown[0], r["steps"] + (n_runs - blown[0]) * T
            r["blown up"] += blown[0]
            for c in range(nc):
                name = class_name(cls, COMBOS[c])
                r["classes"].append(name)
                v = value.get((lab, c), np.inf)
                if r["closest"] is None or v < r["closest"]["margin"]:
                    r["closest"] = {"margin": v, "class": name, "parameters":
                                    [float(p) for p in best[lab, c]], "parameters are": PARAMETERS,
                                    "margin is": MARGIN}
                if (lab, c) in found and r["found"] is None:
                    r["found"] = {"class": name, "parameters": [float(p) for p in found[lab, c]],
                                  "parameters are": PARAMETERS, "evidence": "run",
                                  "meaning": f"printed {lab} fails on an actual run (gap < -1e-9 (1 + size of its terms))"}
    return {lab: dict(r, classes=tuple(r["classes"])) for lab, r in res.items()}


def search(label: str, seed: int = SEED) -> dict:
    """:func:`search_all` for one label of :data:`LABELS`."""
    return search_all(seed)[label]


@lru_cache(maxsize=None)
def runs_search(label: str, seed: int = SEED) -> Search:
    """The printed chain step ``label`` evaluated at every step of actual STAM runs: the seeded
    quadratic runs of :func:`stam.theory.symbolic.stamruns.iterate_search`, then :func:`search` (three
    couplings, three sets Q, two G, deterministic and stochastic gradients, a batched local
    refinement); what was tried, the counterexample found on a run (or None) and the smallest
    margin (:func:`margin`: how close the print came to failing)."""
    srch = iterate_search(seed)
    printed, derived = srch["gaps"][label]
    scale = relative_scale(srch["q"])
    with np.errstate(all="ignore"):
        m = np.where(derived - printed > 1e-9 * scale, printed / (derived - printed), np.inf)
    t, r = np.unravel_index(np.argmin(m), m.shape)
    T, R = m.shape
    adv = search(label, seed)
    closest = {"margin": float(m[t, r]), "class": "quadratic (iterate_search)", "run": int(r), "t": int(t),
               "L4*": float(srch["inst"]["lam"][r]), "margin is": MARGIN}
    if adv["closest"] is not None and adv["closest"]["margin"] < closest["margin"]:
        closest = adv["closest"]
    return Search(
        method=f"seeded (seed {seed}): {R} random deterministic runs of {T} steps through stam.steps.stam_step, "
               f"then {adv['runs']} adversarial runs over {len(adv['classes'])} classes (random, then a batched local "
               f"search from the most violated per class; stam.theory.papercheck.chainsearch; {adv['blown up']} more blew up, "
               f"their gradient clipped: no actual runs, not judged); the printed {label} evaluated at every step",
        classes=("G = (a/2)||y - g0||^2 in R^2, H = (lam/2)||x - y||^2 (L4* = lam in [0.2, 6]), "
                 "F = (mu/2)||u - c||^2, gamma < gamma_max, beta/lam in [0.5, 50]",) + adv["classes"],
        instances=R + adv["runs"], steps=R * T + adv["steps"], found=chain_counterexample(label, seed) or adv["found"],
        closest=rounded(closest))
