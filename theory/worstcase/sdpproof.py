"""The proof of a Lyapunov certificate in exact rational arithmetic (:func:`prove`, on :mod:`stam.theory.worstcase.rational`).

**Certified means proven** (issue 39): the verification is floating point; :func:`certify_stam` then proves every
certificate it reports in exact rational arithmetic (:func:`prove`, on :mod:`stam.theory.worstcase.rational`): the step is
built again with ``exact=True`` (the same code, :class:`fractions.Fraction` for floats, :func:`scaled` for the
scalars), the verified point is rounded to the rationals its floats store, projected exactly onto the identities and
checked for signs and definiteness exactly (``LDL^T``).  One that fails is "numerical only"
(``details["numerical_only"]``, :data:`NUMERICAL_ONLY` in the statuses), never certified; so every bracket, figure
and headline of the region counts proven certificates only.
"""

from __future__ import annotations

from stam.theory.worstcase import rational as rq
from stam.theory.worstcase.sdp import forms
from stam.theory.worstcase.sdpstep import OneStep

#: how a status is counted (``statuses`` of :func:`certified_gamma`) when a certificate passed the floating-point
#: verification (:func:`verify`) but not the exact proof (:func:`prove`; ``details["numerical_only"]``)
NUMERICAL_ONLY = "numerical only (not proven in exact arithmetic)"


#: :func:`prove`: the exact projection onto the identities may move an entry by at most this fraction of the largest
#: entry (the verified point holds them to rounding; a larger correction would prove some other point)
PROJECTION_RTOL = 1e-9


def prove(step: OneStep, point, free_P: bool = False, order: tuple | None = None, cap=None, near=()) -> dict:
    """Prove a certificate in exact rational arithmetic (issue 39, "certified means proven"), from the floating-point
    point ``point`` that :func:`verify` accepted (:attr:`Certificate.point`) and ``step`` built with ``exact=True``
    (its forms exact rationals of the parameters' stored values, :func:`forms`):

    1. round: every entry of the point is taken as the rational it stores (:func:`stam.theory.worstcase.rational.fraction`);
    2. project exactly onto the linear identities, with ``rho`` fixed: the function values' combination vanishes
       (``L x = 0``), the decrease form ``D = sum_v x_v Q[v]`` vanishes on its null directions ``N`` (``D N = 0``:
       the method's fixed points, the null space of ``step.fixed`` computed exactly, kept when every form vanishes
       on it exactly; the basis vectors whose diagonal entry of ``D`` is a combination of the function values'
       identities, decided exactly; and the basis vectors ``near`` that :func:`verify` took as null), and the
       lower-bound form on its own (``W C = 0`` with ``C`` the states of ``N``): the least-norm correction of the
       free entries (those :func:`verify` moves), solved exactly (:func:`stam.theory.worstcase.rational.solve_basic`);
    3. check exactly the sign constraints (multipliers and weights ``>= 0``, weights ``<= 1``, ``theta_order[0] >=
       theta_order[1]``, ``kappa <= cap rho``) and the definiteness: ``-D`` restricted to a complement of ``N`` and
       the lower-bound form restricted to a complement of ``C`` positive definite by exact ``LDL^T``
       (:func:`stam.theory.worstcase.rational.positive_definite`, Sylvester's criterion).  Since ``D N = 0``, ``x' D x =
       b' (M' D M) b`` for ``x = N a + M b``: then ``D <= 0`` and the lower bound ``>= 0`` hold exactly, and the
       certificate holds with the rate ``rho`` for every problem of the class.

    Returns ``{"proven": bool, "rho": the rate proven (a float that is the exact rational), "reason": why not}``, and
    for a proof its exact point ``x`` and the bases ``null`` (``N``) and ``low_null`` (``C``), for anyone to check."""
    exact = _exact_forms(step, free_P, len(point))
    if isinstance(exact, str):
        return _not_proven(exact)
    Q, W, lins, names, k = exact
    A, N, C = _identities(step, Q, W, lins, k, near)
    signs = _Signs(names, cap)
    x = _project(signs, A, [rq.fraction(v) for v in point])
    if isinstance(x, str):
        return _not_proven(x)
    reason = signs.failures(x, order) or _definiteness(x, Q, W, N, C, step.basis.nb, k)
    if reason is None and not x[0] > 0:
        reason = "rate not positive"
    if reason is not None:
        return _not_proven(reason)
    return {"proven": True, "rho": float(x[0]), "reason": None, "x": x, "null": N, "low_null": C}


def _not_proven(reason: str) -> dict:
    return {"proven": False, "rho": None, "reason": reason}


def _exact_forms(step: OneStep, free_P: bool, entries: int):
    """The forms of :func:`stam.theory.worstcase.sdp.forms` as exact rationals ``(Q, W, lins, names, k)`` (``Q`` symmetrised),
    or why not: a point of another length, or a float among the forms (a rounded coefficient is refused, never taken
    as exact)."""
    cols, lins, names, _, k, low = forms(step, free_P)
    if entries != len(names):
        return f"the point has {entries} entries, the forms {len(names)}"
    try:
        Q = [rq.symmetric_part(c, strict=True) for c in cols]
        W = [rq.matrix(w, strict=True) for w in low] if low is not None else None
        lins = [rq.matrix([li], strict=True)[0] for li in lins]
    except TypeError:
        return "a float entered the exact forms"
    return Q, W, lins, names, k


def _rows_of(forms_, vecs):
    """The rows of ``(sum_v x_v forms_[v]) u = 0`` over ``x``, for each ``u`` of ``vecs``."""
    out = []
    for u in vecs:
        cols = [rq.matvec(f, u) for f in forms_]
        out += [list(row) for row in zip(*cols)]
    return out


def _identities(step: OneStep, Q, W, lins, k: int, near):
    """The linear identities ``A x = 0`` of step 2 of :func:`prove` (without zero or repeated rows), the null
    directions ``N`` and the states ``C`` of them, all exact.  ``D N = 0`` is imposed on a spanning set (a unit
    vector's rows are a column of each form)."""
    F = rq.fraction
    nb, nvar = step.basis.nb, len(Q)
    vecs, units, fixed = [], set(), []
    if step.fixed is not None:
        fixed = rq.nullspace(rq.matrix(step.fixed), nb)
        if not all(not any(any(row) for row in rq.congruent(fixed, q)) for q in Q):  # as _null_space: every
            fixed = []  # form vanishes on the fixed points (as a quadratic form), else they are no null directions
        vecs += fixed
    L = [[F(lins[v][a]) for v in range(nvar)] for a in range(step.basis.nv)]  # L x = the function values' combination
    Lred, Lpiv = rq.rref(L)
    for i in range(nb):
        d = [q[i][i] for q in Q]
        if any(d) and rq.in_row_space(Lred, Lpiv, d):
            units.add(i)
    units |= {int(i) for i in near}
    vecs += [[F(int(j == i)) for j in range(nb)] for i in sorted(units)]
    N = rq.span_basis(vecs, nb)
    A = Lred + _rows_of(Q, fixed) + [[q[a][i] for q in Q] for i in sorted(units) for a in range(nb)]
    C = []
    if W is not None:
        xi_t = rq.matrix(step.xi_t)
        C = rq.span_basis([rq.matvec(xi_t, u) for u in vecs], k)
        A += _rows_of(W, C)
    return list({tuple(row): row for row in A if any(row)}.values()), N, C


class _Signs:
    """The sign constraints of the SDP's variables (:func:`stam.theory.worstcase.sdp.forms`' ``names``): multipliers and
    weights ``>= 0``, weights ``<= 1``, ``kappa <= cap rho``; exact."""

    def __init__(self, names, cap):
        self.names = names
        self.nonneg = [n not in ("rho", "P") for n in names]
        self.weights = [n not in ("rho", "P", "mu", "kappa") for n in names]
        self.kap = names.index("kappa") if "kappa" in names else None
        self.capq = None if cap is None else rq.fraction(cap)

    def clip(self, x):
        """The bounds, as :func:`stam.theory.worstcase.sdp.verify` clipped them in floating point."""
        F = rq.fraction
        for i, (nn, w) in enumerate(zip(self.nonneg, self.weights)):
            x[i] = max(x[i], F(0)) if nn else x[i]
            x[i] = min(x[i], F(1)) if w else x[i]
        if self.kap is not None:
            x[self.kap] = min(x[self.kap], self.capq * x[0])
        return x

    def free(self, x) -> list:
        """The entries :func:`stam.theory.worstcase.sdp.verify` moves: inside their bounds, and ``P``."""
        free = [(nn and xv > 0 and not (w and xv >= 1)) or n == "P"
                for nn, w, xv, n in zip(self.nonneg, self.weights, x, self.names)]
        if self.kap is not None and x[self.kap] >= self.capq * x[0]:
            free[self.kap] = False
        return free

    def past(self, x, idx) -> list:
        return [i for i in idx if (self.nonneg[i] and x[i] < 0) or (self.weights[i] and x[i] > 1)
                or (i == self.kap and x[i] > self.capq * x[0])]

    def bound(self, x, i, x0_rho):
        """The bound entry ``i`` of ``x`` went past."""
        F = rq.fraction
        return F(0) if self.nonneg[i] and x[i] < 0 else F(1) if self.weights[i] and x[i] > 1 else self.capq * x0_rho

    def failures(self, x, order) -> str | None:
        names = self.names
        fail = [n for n, nn, xv in zip(names, self.nonneg, x) if nn and xv < 0] + [
            n for n, w, xv in zip(names, self.weights, x) if w and xv > 1]
        if order is not None and x[names.index(order[0])] < x[names.index(order[1])]:
            fail.append("order")
        if self.kap is not None and x[self.kap] > self.capq * x[0]:
            fail.append("kappa > cap rho")
        return "signs: " + ", ".join(sorted(set(fail))) if fail else None


def _project(signs: _Signs, A, x):
    """Step 2 of :func:`prove`: ``x`` (exact, clipped to its bounds) projected onto ``A x = 0`` by the least-norm
    correction of its free entries, ``rho`` fixed; a free entry the correction pushed past its bound is held at the
    bound, and again.  Returns the point, or why there is none near ``x``."""
    x0 = signs.clip(x)
    free = signs.free(x0)
    x0 = list(x0)
    for _ in range(3):
        x = list(x0)
        r = rq.matvec(A, x)
        if not any(r):
            break
        idx = [i for i in range(len(x)) if free[i]]
        dx = rq.solve_basic([[row[i] for i in idx] for row in A], [-v for v in r]) if idx else None
        if dx is None:
            return "the identities have no exact solution near the point"
        scale = max(abs(v) for v in x0)
        if max(abs(d) for d in dx) > PROJECTION_RTOL * scale:  # a proof of the solver's point, not of another one
            return "the identities are off by more than rounding"
        for i, d in zip(idx, dx):
            x[i] += d
        if any(rq.matvec(A, x)):
            return "the identities do not hold exactly"
        past = signs.past(x, idx)
        if not past:
            break
        for i in past:
            free[i] = False
            x0[i] = signs.bound(x, i, x0[0])
    return x


def _definiteness(x, Q, W, N, C, nb: int, k: int) -> str | None:
    """Step 3 of :func:`prove`, the definiteness: ``-D`` off ``N`` and the lower-bound form off ``C`` positive
    definite (exact ``LDL^T``); None when both are, else which is not."""
    D = rq.combine(x, Q)
    M = rq.complement(N, nb)
    if not rq.positive_definite([[-e for e in row] for row in rq.congruent(M, D)]):
        return "the decrease form is not negative definite off its null directions"
    if W is not None and not rq.positive_definite(rq.congruent(rq.complement(C, k), rq.combine(x, W))):
        return "the lower-bound form is not positive definite"
    return None

__all__ = ["NUMERICAL_ONLY", "PROJECTION_RTOL", "prove"]
