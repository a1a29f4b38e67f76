"""Where PSGD, BC and BR provably converge and where they cannot: ``stam pep --region --algo psgd|bc|br``.

The verdict is per class of F and is about each method's natural stationarity measure (:mod:`stam.theory.worstcase.methods_pep`:
``||grad G(U^t)||^2`` for PSGD, ``||grad G(W~^t)||^2 = ||U^{t+1} - U^t||^2/gamma^2`` for BC and BR) under the
normalisation ``G(w^0) - inf G <= 1``, in units of ``h = gamma L1``.  Each is exactly as strong as its evidence:

- **certified** ``0 < h < 2`` where the method's iterates are gradient descent on G (PSGD for every F: eq.
  (alg:PSGD) takes the gradient at ``U^t`` and never feeds ``W~`` back; BC and BR when F = 0, where the proximal step
  is the identity).  Certificate, exact: the descent lemma of an L1-smooth G (the interpolation inequality
  ``G(x^+) <= G(x) + <g, x^+ - x> + (L1/2)||x^+ - x||^2`` with multiplier 1) at ``x^+ = x - gamma g`` gives
  ``G(x^{t+1}) <= G(x^t) - gamma (1 - h/2) ||g_t||^2``, summed over ``t < T``::

      min_{0<=t<=T} ||grad G(x^t)||^2 <= (G(x^0) - inf G) / (T gamma (1 - h/2)) = 2 L1 / (T h (2 - h)) .

  The rate's coefficient is computed in exact rationals (:func:`certificate`), and the PEP's worst case stays below
  it (a test holds them side by side).
- **refuted** by a run, computed here in exact rationals with the rule's own theory step (``theory_start``,
  ``theory_step``, ``theory_measure`` of :mod:`stam.rules`), and an argument that the run's ratio ``measure /
  (G(w^0) - inf G)`` stays above a constant ``c > 0`` at *every* t, so that no bound tending to 0 with T holds:

  - gradient descent at ``h >= 2``: ``G = (L1/2) x^2``, ``x^0 = 1``: ``x^t = (1 - h)^t``, ``|1 - h| >= 1``, ratio
    ``>= 2 L1`` (the 2-periodic run ``x^t = (-1)^t`` at ``h = 2``);
  - BC with F the indicator of ``Q = {-1, 1}`` (classes indicator and lsc), every ``h > 0``: ``G = (L1/2) x^2``,
    ``W~^t in Q`` so ``||grad G(W~^t)||^2 = L1^2`` at every t, ``G(W~^0) - inf G = L1/2``: ratio ``2 L1``;
  - BC with F the indicator of ``Q = [-1, 1]`` (convex), every ``h > 0``: ``G = (L1/2)(x - 2)^2``, ``W~^t in Q`` so
    ``|grad G(W~^t)| >= L1``; from ``U^0 = 1``, ``W~^0 = 1``: ratio ``>= 2 L1`` (``U^t = 1 + t h`` drifts away while
    ``W~^t = 1`` is the constrained minimiser: the natural measure of BC, not its output, fails to converge);
  - BR (its relaxed phase, ``lam_t = lam rho^t``, ``rho >= 1``) with ``Q = {-1, 1}`` (indicator, lsc), every ``h > 0``
    and ``lam > 0``: ``G = (L1/2) x^2``, ``|W~^t| = (lam_t + |U^t|)/(lam_t + 1) >= lam/(lam + 1)``; from ``U^0 = 1``:
    ratio ``>= 2 L1 (lam/(lam + 1))^2``.

- **certified** ``0 < h < 2`` for BR's relaxed phase with a convex F = I_Q and ``lam`` fixed (``rho = 1``): the relaxed
  weights are ``W~ = prox_r(U)``, ``r = (lam/2) dist^2(., Q)`` (``P(W~) = P(U)`` for a convex Q), so ``U^t = grad
  h(W~^t)`` with ``h = ||.||^2/2 + r`` 1-strongly convex and ``(1 + lam)``-smooth, and BR is mirror descent on G:
  ``grad h(W~^{t+1}) = grad h(W~^t) - gamma grad G(W~^t)``.  With ``D = W~^{t+1} - W~^t`` and ``S = <grad h(W~^{t+1}) -
  grad h(W~^t), D>``, strong convexity gives ``S >= ||D||^2``, smoothness (co-coercivity) ``S >= gamma^2 ||grad
  G(W~^t)||^2 / (1 + lam)``, and the descent lemma of G ``G(W~^{t+1}) <= G(W~^t) - S/gamma + (L1/2)||D||^2 <= G(W~^t) -
  (1 - h/2) S / gamma``; so ``min_{t<=T} ||grad G(W~^t)||^2 <= 2 L1 (1 + lam) / (T h (2 - h))``.  Refuted at ``h >= 2``
  by gradient descent's run (Q the whole space).
- **not determined** where neither holds (BR with a convex F and a growing ``lam``): said so, with no verdict.

STAM's region is :func:`stam.theory.worstcase.lyapunov.compute_region` (``stam pep --region``, exact Lyapunov certificates).
"""

from __future__ import annotations

import math
from fractions import Fraction

from stam.results import (BOOL, DICT, DICT_OR_NULL, LIST, LIST_OR_NULL, NAME, NONEMPTY_LIST, NONNEG, POS, POS_OR_NULL,
                          PROVENANCE, STR, STR_OR_NULL, ResultType, Schema)
from stam.theory.params import METHOD_F_CLASSES

#: the step sizes h = gamma L1 at which each refuting run is computed and shown
RUN_HS = (Fraction(1, 2), Fraction(1), Fraction(2), Fraction(3))
#: the steps of each refuting run
RUN_STEPS = 8


class _Exact1D:
    """F's proximal step on exact rationals, coordinate by coordinate (a number or a :class:`_Vec`): ``None``
    (F = 0), ``"pm1"`` (Q = {-1, 1}; a tie at 0 goes to 1), ``"box"`` (Q = [-1, 1])."""

    def __init__(self, kind):
        self.kind = kind

    def prox_F(self, v, gamma):
        if isinstance(v, _Vec):
            return _Vec(self.prox_F(c, gamma) for c in v)
        if self.kind is None:
            return v
        if self.kind == "pm1":
            return Fraction(1) if v >= 0 else Fraction(-1)
        return max(Fraction(-1), min(Fraction(1), v))


class _Vec:
    """A vector of exact rationals with the arithmetic the rules' steps use (``+``, ``-``, a number times it, divided
    by a number; ``v ** 2`` the squared norm), so that the rules' own steps run on it unchanged."""

    __slots__ = ("c",)

    def __init__(self, items):
        self.c = tuple(Fraction(a) for a in items)

    def __iter__(self):
        return iter(self.c)

    def __eq__(self, o):
        return isinstance(o, _Vec) and self.c == o.c

    __hash__ = None

    def __repr__(self):
        return f"({', '.join(map(str, self.c))})"

    def __add__(self, o):
        return _Vec(a + b for a, b in zip(self.c, o.c))

    def __sub__(self, o):
        return _Vec(a - b for a, b in zip(self.c, o.c))

    def __neg__(self):
        return _Vec(-a for a in self.c)

    def __mul__(self, k):
        return _Vec(a * k for a in self.c)

    __rmul__ = __mul__

    def __truediv__(self, k):
        return _Vec(a / k for a in self.c)

    def __pow__(self, k):
        if k != 2:
            raise ValueError("only the squared norm, v ** 2")
        return sum(a * a for a in self.c)


#: the instance of each refutation: F's set (``_Exact1D``), G's minimiser c (G = (L1/2)(x - c)^2), the start x^0,
#: the bound c(lam) of the ratio at every step (in units of L1) and the argument
INSTANCES = {
    "gd": (None, 0, 1, lambda lam: 2, "x^t = (1 - h)^t with |1 - h| >= 1: ||grad G(x^t)||^2 >= L1^2 = 2 L1 (G(x^0) - inf G)"),
    "pm1": ("pm1", 0, Fraction(1, 2), lambda lam: 2, "W~^t in Q = {-1, 1}: ||grad G(W~^t)||^2 = L1^2 = 2 L1 (G(W~^0) - inf G) "
            "at every t, whatever gamma"),
    "box": ("box", 2, 1, lambda lam: 2, "W~^t in Q = [-1, 1], G = (L1/2)(x - 2)^2: |grad G(W~^t)| >= L1 while G(W~^0) - "
            "inf G = L1/2, at every t, whatever gamma (U^t = 1 + t h drifts)"),
    "br_pm1": ("pm1", 0, 1, lambda lam: 2 * (lam / (lam + 1)) ** 2, "|W~^t| = (lam_t + |U^t|)/(lam_t + 1) >= lam/(lam + 1): "
               "||grad G(W~^t)||^2 >= 2 L1 (lam/(lam+1))^2 (G(W~^0) - inf G) at every t, whatever gamma"),
}


def certificate(h: Fraction, T: int, L1: Fraction = Fraction(1), lam: Fraction = Fraction(0)) -> Fraction:
    """The bound ``2 L1 (1 + lam) / (T h (2 - h))`` on ``min_{t<=T} ||grad G(w^t)||^2`` under ``G(w^0) - inf G <= 1``,
    exact, for ``0 < h < 2``: gradient descent's (the descent lemma, ``lam = 0``) and BR's relaxed phase with a convex
    Q and ``lam`` fixed (the mirror-descent argument of the module docstring)."""
    h, L1, lam = Fraction(h), Fraction(L1), Fraction(lam)
    if not (0 < h < 2) or T < 1 or lam < 0:
        raise ValueError(f"the certificate holds for 0 < h < 2, T >= 1, lam >= 0, got h={h}, T={T}, lam={lam}")
    return 2 * L1 * (1 + lam) / (T * h * (2 - h))


def certificate_multipliers(h, L1=1, lam=None) -> dict:
    """The certificate of :func:`certificate` as multipliers of the class's inequalities, exact, for one step with
    ``D = w^{t+1} - w^t``, ``g = grad G(w^t)`` and (BR) ``S = <U^{t+1} - U^t, D> = -gamma <g, D>``, each written
    ``q <= 0`` in the scalars ``dG = G(w^{t+1}) - G(w^t)``, ``S``, ``DD = ||D||^2``, ``gg = ||g||^2``:

    - ``descent``: ``dG + S/gamma - (L1/2) DD <= 0`` (the descent lemma of an L1-smooth G; gradient descent: ``D = -gamma
      g``, ``S = gamma^2 gg = DD``);
    - ``strong``: ``DD - S <= 0`` (BR: its mirror map h is 1-strongly convex);
    - ``cocoercive``: ``gamma^2 gg/(1 + lam) - S <= 0`` (BR: h is ``(1 + lam)``-smooth).

    The claim ``dG + rho gg <= 0``, ``rho = gamma (1 - h/2)/(1 + lam)`` (``lam = None``: gradient descent, 0), minus the
    multipliers' sum of the inequalities is identically zero (a test checks it coefficient by coefficient), and the
    multipliers are >= 0 for ``0 < h < 2``: summed over ``t < T`` it is :func:`certificate`."""
    h, L1 = Fraction(h), Fraction(L1)
    gamma = h / L1
    if lam is None:  # S = DD = gamma^2 gg: one inequality
        return {"rho": gamma * (1 - h / 2), "descent": Fraction(1), "strong": Fraction(0), "cocoercive": Fraction(0),
                "substitute": {"S": gamma ** 2, "DD": gamma ** 2}}
    lam = Fraction(lam)
    return {"rho": gamma * (1 - h / 2) / (1 + lam), "descent": Fraction(1), "strong": L1 / 2,
            "cocoercive": (1 - h / 2) / gamma, "substitute": None}


def gradient_descent_last_gap(h, n: int, L1=1) -> Fraction:
    """``4 L1 / (n h (4 - h))``, for ``0 < h = gamma L1 <= 1``: a bound on ``min_{0<=t<=n} ||grad G(x^t)||^2`` of ``n``
    steps of gradient descent under ``G(x^0) - G(x^n) <= 1`` (PEPit's gradient-descent example; at ``h = 1`` its
    ``4 L1 / (3 n)``), exact.  Derivation: the interpolation inequality of an ``L1``-smooth G (Taylor, Hendrickx and
    Glineur), ``G_k >= G_{k+1} - (L1/4)||x_k - x_{k+1}||^2 + (1/2)<g_k + g_{k+1}, x_k - x_{k+1}> + ||g_k - g_{k+1}||^2/(4
    L1)``, at ``x_k - x_{k+1} = gamma g_k``, with ``a = ||g_k||^2``, ``b = ||g_{k+1}||^2``, ``c = <g_k, g_{k+1}>``::

        L1 (G_k - G_{k+1}) >= (-h^2/4 + h/2 + 1/4) a + (h - 1)/2 c + b/4
                          >= h (3 - h)/4 a + h/4 b          (h <= 1: (h - 1) c >= (h - 1)(a + b)/2)

    summed over ``k < n``: ``L1 (G_0 - G_n) >= (h (3 - h)/4) a_0 + (h (4 - h)/4)(a_1 + ... + a_{n-1}) + (h/4) a_n >= n h (4
    - h)/4 min_t a_t``.  The PEP attains it at the points a test checks (so it is the worst case there); above ``h = 1``
    the step ``(h - 1) c`` no longer goes this way and the PEP exceeds it."""
    h, L1 = Fraction(h), Fraction(L1)
    if not (0 < h <= 1) or n < 1:
        raise ValueError(f"the bound is derived for 0 < h <= 1 and n >= 1, got h={h}, n={n}")
    return 4 * L1 / (n * h * (4 - h))


def refuting_run(algo: str, instance: str, h, L1=1, lam=1, rho=1, steps: int = RUN_STEPS) -> dict:
    """The run of the rule ``algo``'s theory form on the 1-D instance ``instance`` of :data:`INSTANCES`, exact:
    its measure over ``G(w^0) - inf G`` at each step, the bound it never goes below, and whether it held."""
    from stam import rules

    kind, c, x0, bound, why = INSTANCES[instance]
    L1, h = Fraction(L1), Fraction(h)
    rule = rules.rule(algo)
    hyper = {"gamma": h / L1, "lam": Fraction(lam), "rho": Fraction(rho)}
    hyper = {k: hyper[k] for k in rule.theory_params}
    q = _Exact1D(kind)
    grad = lambda x: L1 * (x - c)  # noqa: E731
    state = rule.theory_start(Fraction(x0), hyper, q)
    w0 = rule.forward_weights(state)
    gap = L1 / 2 * (w0 - c) ** 2
    ratios, iterates = [], []
    for t in range(steps + 1):
        w = rule.forward_weights(state)
        g = grad(w)
        ratios.append(rule.theory_measure(state, g, hyper) / gap)
        iterates.append(w)
        if t < steps:
            state = rule.theory_step(state, g, hyper, q, t)
    c_bound = bound(Fraction(lam)) * L1
    return {"algo": algo, "instance": instance, "h": h, "L1": L1, "lam": Fraction(lam) if "lam" in rule.theory_params
            else None, "forward_weights": iterates, "ratios": ratios, "bound": c_bound,
            "held": all(r >= c_bound for r in ratios), "why": why}


def verdict(algo: str, f_class: str, L1=1, lam=1, rho=1) -> dict:
    """The verdict of ``algo`` (psgd, bc, br) for F of ``f_class`` on its natural measure (module docstring):
    ``{"certified": "0 < gamma L1 < 2" | None, "refuted": ..., "runs": [...], "proof": ...}``."""
    gd = algo == "psgd" or f_class == "zero"
    if gd:
        runs = [refuting_run(algo, "gd", h, L1, lam, rho) for h in RUN_HS if h >= 2]
        return {"algo": algo, "f_class": f_class, "certified": [0, 2], "refuted": [2, None],
                "proof": "descent lemma: min_(t<=T) ||grad G||^2 <= 2 L1/(T h (2 - h)) (G(x^0) - inf G), exact",
                "refutation": INSTANCES["gd"][4] + " (G = (L1/2) x^2, x^0 = 1, F = 0: the indicator of the whole space, "
                "in every class)", "runs": runs}
    if (algo, f_class) == ("br", "convex") and Fraction(rho) == 1:
        runs = [refuting_run(algo, "gd", h, L1, lam, rho) for h in RUN_HS if h >= 2]
        return {"algo": algo, "f_class": f_class, "certified": [0, 2], "refuted": [2, None],
                "proof": "mirror descent: U^t = grad h(W~^t), h = ||.||^2/2 + (lam/2) dist^2(., Q) 1-strongly convex and "
                "(1+lam)-smooth: min_(t<=T) ||grad G(W~^t)||^2 <= 2 L1 (1 + lam)/(T h (2 - h)) (G(W~^0) - inf G), exact",
                "refutation": INSTANCES["gd"][4] + " (G = (L1/2) x^2, x^0 = 1, Q the whole space: F = 0, convex)",
                "runs": runs}
    if (algo, f_class) == ("br", "convex"):  # lam growing (rho > 1): refuted below h*, and from h = 2
        hstar = growing_lambda_limit(lam, rho)
        shown = Fraction(math.floor(hstar * 10 ** 4), 10 ** 4)  # rounded down: refuted below it too
        runs = [growing_lambda_run(shown / 2, L1, lam, rho)] + [refuting_run(algo, "gd", h, L1, lam, rho)
                                                               for h in RUN_HS if h >= 2]
        return {"algo": algo, "f_class": f_class, "certified": None, "refuted": [2, None], "refuted_below": shown,
                "proof": None, "refutation": INSTANCES["gd"][4] + " (Q the whole space: F = 0, convex)",
                "refutation_below": growing_lambda_run(shown / 2, L1, lam, rho, steps=0)["why"] +
                f" (h s < 1 for h < h* = 1/s ~ {float(hstar):.4g})", "runs": runs,
                "undetermined": f"{float(shown):g} <= gamma L1 < 2: no certificate (the mirror-descent argument needs lam "
                "fixed) and no refuting run"}
    instance = {("bc", "lsc"): "pm1", ("bc", "indicator"): "pm1", ("bc", "convex"): "box",
                ("br", "lsc"): "br_pm1", ("br", "indicator"): "br_pm1"}.get((algo, f_class))
    runs = [refuting_run(algo, instance, h, L1, lam, rho) for h in RUN_HS]
    return {"algo": algo, "f_class": f_class, "certified": None, "refuted": [0, None], "proof": None,
            "refutation": INSTANCES[instance][4], "runs": runs}


def growing_lambda_limit(lam, rho) -> Fraction:
    """``h* = 1 / s``, ``s = max_{t >= 0} t / (lam rho^t + 1)`` (exact; ``rho > 1``): below it BR's relaxed phase with
    ``lam_t = lam rho^t`` grown per step is refuted for a convex F on its natural measure (the run ``box`` of
    :data:`INSTANCES`: ``W~^t - 1 = (U^t - 1)/(lam_t + 1) <= t h/(lam_t + 1) <= h s < 1`` while ``U^t`` grows by at most
    ``h`` a step, so ``|grad G(W~^t)| >= L1 (1 - h s)`` at every t: ratio ``>= 2 L1 (1 - h s)^2``).  ``t/(lam rho^t + 1)``
    rises then falls (its derivative changes sign once), so the scan stops at the first fall."""
    lam, rho = Fraction(lam), Fraction(rho)
    if not rho > 1 or not lam > 0:
        raise ValueError(f"the limit is for rho > 1 and lam > 0, got rho={rho}, lam={lam}")
    best, t, power = Fraction(0), 0, Fraction(1)
    while True:
        value = t / (lam * power + 1)
        if value < best:
            return 1 / best
        best, t, power = value, t + 1, power * rho


def growing_lambda_run(h, L1=1, lam=1, rho=Fraction(51, 50), steps: int | None = None) -> dict:
    """BR's relaxed phase with ``lam_t = lam rho^t`` on the run ``box`` (:func:`growing_lambda_limit`), exact, over
    ``steps`` steps (default: past the maximiser of ``t / (lam rho^t + 1)`` and twice as far): its ratios and the bound
    ``2 L1 (1 - h s)^2`` they never go below."""
    from stam import rules

    L1, h, lam, rho = Fraction(L1), Fraction(h), Fraction(lam), Fraction(rho)
    s = 1 / growing_lambda_limit(lam, rho)
    rule = rules.rule("br")
    hyper = {"gamma": h / L1, "lam": lam, "rho": rho}
    q = _Exact1D("box")
    state = rule.theory_start(Fraction(1), hyper, q)
    gap = L1 / 2 * (rule.forward_weights(state) - 2) ** 2
    steps = 5 * RUN_STEPS if steps is None else steps  # exact rationals: their digits grow with t^2
    ratios = []
    for t in range(steps + 1):
        g = L1 * (rule.forward_weights(state) - 2)
        ratios.append(rule.theory_measure(state, g, hyper) / gap)
        if t < steps:
            state = rule.theory_step(state, g, hyper, q, t)
    bound = 2 * L1 * (1 - h * s) ** 2 if h * s < 1 else Fraction(0)
    return {"algo": "br", "instance": "box", "h": h, "L1": L1, "lam": lam, "rho": rho, "ratios": ratios, "bound": bound,
            "held": h * s < 1 and all(r >= bound for r in ratios), "why": "lam_t = lam rho^t grown per step, Q = [-1, 1], "
            "G = (L1/2)(x - 2)^2, U^0 = 1: W~^t - 1 = (U^t - 1)/(lam_t + 1) <= h s, s = max_t t/(lam rho^t + 1), so "
            "|grad G(W~^t)| >= L1 (1 - h s) at every t while G(W~^0) - inf G = L1/2"}


# -- the common measure (stam.theory.worstcase.methods_pep's "common"): R(w) = L1^2 ||w - prox_{F/L1}(w - grad G(w)/L1)||^2 at
# -- each method's binary output, under (G + F)(w^0) - inf G - inf F <= 1

#: the point the fixed-point runs output, in Q = {-1, 1}^2 and in [-1, 1]^2
FIXED_OUTPUT = (1, -1)


def fixed_point_instance(L1=1, lam=1) -> dict:
    """The 2-D instance of the common measure's refutations: ``G(w) = (1/2)(w - c)' A (w - c)`` with ``A = (L1/2)[[1,
    1/2], [1/2, 1]]`` (eigenvalues ``3 L1/4`` and ``L1/4``: L1-smooth, convex, ``inf G = 0``) and ``c`` chosen so that
    ``W = (1, -9)`` has ``grad G(W) = (0, 8 lam)`` (``lam``: STAM's coupling; ``L1`` for the others): ``c = W - A^{-1}
    (0, 8 lam)``.  The output ``u = (1, -1)`` is then not stationary for ``G + F`` (F the indicator of ``{-1, 1}^2`` or
    of ``[-1, 1]^2``): ``grad G(u) = A (u - W) + (0, 8 lam) = (2 L1, 4 L1 + 8 lam)``, so ``u - grad G(u)/L1`` has first
    coordinate ``-1`` and ``R(u) = 4 L1^2`` (the projection moves it to ``-1``), while ``G(u) > 0``."""
    L1, lam = Fraction(L1), Fraction(lam)
    A = ((L1 / 2, L1 / 4), (L1 / 4, L1 / 2))
    inv = ((8 / (3 * L1), -4 / (3 * L1)), (-4 / (3 * L1), 8 / (3 * L1)))
    gW = (Fraction(0), 8 * lam)
    W = _Vec((1, -9))
    c = W - _Vec(sum(inv[i][j] * gW[j] for j in range(2)) for i in range(2))
    return {"A": A, "c": c, "W": W, "u": _Vec(FIXED_OUTPUT), "L1": L1, "lam": lam}


def _grad(inst, w):
    d = w - inst["c"]
    return _Vec(sum(inst["A"][i][j] * d.c[j] for j in range(2)) for i in range(2))


def _G(inst, w):
    d = w - inst["c"]
    return sum(d.c[i] * inst["A"][i][j] * d.c[j] for i in range(2) for j in range(2)) / 2


def common_measure(inst, q, w):
    """``R(w) = L1^2 ||w - prox_{F/L1}(w - grad G(w)/L1)||^2``, exact."""
    L1 = inst["L1"]
    return L1 ** 2 * (w - q.prox_F(w - _grad(inst, w) / L1, 1 / L1)) ** 2


def fixed_point_start(algo: str, inst: dict, hyper: dict, q):
    """The start of ``algo`` at a fixed point of its step on :func:`fixed_point_instance` whose binary output is ``u``:
    PSGD at ``U^0 = c`` (``grad G = 0``); BR (lam fixed) at ``U^0 = c (lam + 1) - lam u`` (so ``W~^0 = c``, ``Proj_Q(U^0)
    = u``); STAM from ``y^0 = W``, ``z^{-1} = u + gamma lam (u - W)`` (a free ``z^{-1}``, as ``stam pep --free-start``):
    ``x^0 = u``, ``u^0 = Proj_Q(u + gamma lam (W - u)) = u``, ``z^0 = z^{-1}``, and eq. (algy) keeps ``y = W`` since
    ``grad G(W) = lam (u - W)``.  BC has no such start (its fixed points have ``grad G(W~) = 0``: stationary)."""
    from stam import rules

    rule = rules.rule(algo)
    if algo == "psgd":
        return rule.theory_start(inst["c"], hyper, q)
    if algo == "br":
        lam = hyper["lam"]
        return rule.theory_start(inst["c"] * (lam + 1) - inst["u"] * lam, hyper, q)
    if algo == "stam":
        from stam.operators import Composite, QuadraticCoupling
        from stam.steps import stam_init

        gl = hyper["gamma"] * hyper["lam"]
        return stam_init(inst["W"], Composite(QuadraticCoupling(hyper["lam"]), q), hyper["gamma"],
                         z_prev=inst["u"] + (inst["u"] - inst["W"]) * gl)
    raise ValueError(f"no fixed-point start for {algo!r}")


#: the parameters of STAM's fixed-point runs besides gamma lam = h: its beta (the run is fixed for every beta)
STAM_RUN_BETA = Fraction(4)


def common_refuting_run(algo: str, kind: str, h, L1=1, lam=1, steps: int = RUN_STEPS) -> dict:
    """The run of ``algo``'s theory form (``h = gamma L1``; STAM: ``h = gamma lam``, ``beta`` :data:`STAM_RUN_BETA`) from
    :func:`fixed_point_start` on :func:`fixed_point_instance` with F the indicator of ``{-1, 1}^2`` (``kind`` "pm1") or
    ``[-1, 1]^2`` ("box"), exact: the common measure over ``G(w^0) + F(w^0) - inf G - inf F`` at every step, whether
    the first step returned the start exactly (``fixed``: then the run stays there for every t) and held (every ratio
    ``>= R(u) / G(u)``, the output ``u`` at every step)."""
    from stam import rules

    L1, h, lam = Fraction(L1), Fraction(h), Fraction(lam)
    rule = rules.rule(algo)
    if algo == "stam":
        hyper = {"gamma": h / lam, "lam": lam, "beta": STAM_RUN_BETA}
    else:
        hyper = {k: v for k, v in {"gamma": h / L1, "lam": lam, "rho": Fraction(1)}.items() if k in rule.theory_params}
    inst = fixed_point_instance(L1, lam if algo == "stam" else L1)
    q = _Exact1D(kind)
    state = fixed_point_start(algo, inst, hyper, q)
    start = state
    w0 = rule.binary_weights(state, q)
    gap = _G(inst, w0)  # F(w^0) = 0 = inf F (w^0 in Q), inf G = 0
    ratios, outputs, fixed = [], [], None
    for t in range(steps + 1):
        w = rule.binary_weights(state, q)
        outputs.append(w)
        ratios.append(common_measure(inst, q, w) / gap)
        if t < steps:
            state = rule.theory_step(state, _grad(inst, rule.forward_weights(state)), hyper, q, t)
            fixed = all(a == b for a, b in zip(state, start)) if t == 0 else fixed
    bound = common_measure(inst, q, inst["u"]) / _G(inst, inst["u"])
    return {"algo": algo, "instance": f"fixed-{kind}", "h": h, "L1": L1, "lam": lam if "lam" in rule.theory_params else None,
            "outputs": outputs, "ratios": ratios, "bound": bound, "fixed": bool(fixed),
            "held": bool(fixed) and bound > 0 and all(r >= bound for r in ratios) and all(w == inst["u"] for w in outputs)}


#: the common measure's refutation as the outputs state it
FIXED_WHY = ("a start at a fixed point of the step whose binary output u = (1, -1) is not stationary for G + F: G = (1/2)"
             "(w - c)' A (w - c), A = (L1/2)[[1, 1/2], [1/2, 1]], R(u) = 4 L1^2 at every t while (G + F)(u) - inf G - inf F "
             "= G(u) > 0")


def verdict_common(algo: str, f_class: str, L1=1, lam=1, rho=1) -> dict:
    """The verdict of ``algo`` (psgd, bc, br, stam) for F of ``f_class`` on the common measure under ``(G + F)(w^0) -
    inf G - inf F <= 1`` (``h = gamma L1``; STAM's runs in ``h = gamma lam``)."""
    if f_class == "zero":
        if algo == "stam":
            return {"algo": algo, "f_class": f_class, "certified": None, "refuted": None, "proof": None, "refutation": None,
                    "runs": [], "undetermined": "STAM with F = 0 is not searched (its fixed points are then stationary: "
                    "no fixed-point run refutes it; stam pep --region takes lsc, indicator, convex)"}
        v = verdict(algo, "zero", L1, lam, rho)  # the output is the iterate: gradient descent's measure and start
        return {**v, "proof": v["proof"] + " (with F = 0 the output is the iterate and R = ||grad G||^2)"}
    kind = "box" if f_class == "convex" else "pm1"
    if algo == "bc":
        return {"algo": algo, "f_class": f_class, "certified": None, "refuted": None, "proof": None, "refutation": None,
                "runs": [], "undetermined": "no certificate, and no refuting run here: BC's fixed points have grad G(W~) = "
                "0 with W~ in Q (stationary for G + F), so a refuting run must cycle or drift, and none is given"}
    if algo == "br" and Fraction(rho) != 1:
        return {"algo": algo, "f_class": f_class, "certified": None, "refuted": None, "proof": None, "refutation": None,
                "runs": [], "undetermined": "with lam growing the fixed point of lam fixed moves (W~ depends on lam_t): "
                "no run given"}
    runs = [common_refuting_run(algo, kind, h, L1, lam) for h in RUN_HS]
    start = " (STAM from a free z^{-1}, as stam pep --free-start; for every gamma, lam, beta)" if algo == "stam" else ""
    return {"algo": algo, "f_class": f_class, "certified": None, "refuted": [0, None], "proof": None,
            "refutation": FIXED_WHY + start, "runs": runs}


#: the normalisation of each measure's verdicts
NORMALISATIONS = {"natural": "G(w^0) - inf G <= 1", "common": "(G + F)(w^0) - inf G - inf F <= 1 (w^0 the first binary output)"}


def region(algo: str, L1=1, lam=1, rho=1, measure: str = "natural") -> dict:
    """The verdicts of ``algo`` for every class of F (:data:`stam.theory.params.METHOD_F_CLASSES`) on ``measure``
    (natural: PSGD, BC, BR; STAM's is :func:`stam.theory.worstcase.lyapunov.compute_region`; common: all four)."""
    from stam.theory.worstcase.methods_pep import COMMON_MEASURE_TEXT, theory_rule

    rule = theory_rule(algo)
    if algo == "stam" and measure == "natural":
        raise ValueError("STAM's region on its natural measure is stam.theory.worstcase.lyapunov.compute_region (stam pep --region)")
    judge = verdict if measure == "natural" else verdict_common
    return {"algo": algo, "label": rule.label, "measure_name": measure,
            "measure": rule.theory_measure_text if measure == "natural" else COMMON_MEASURE_TEXT, "L1": L1,
            "lam": lam if "lam" in rule.theory_params else None, "rho": rho if algo == "br" else None,
            "normalisation": NORMALISATIONS[measure], "verdicts": [judge(algo, c, L1, lam, rho) for c in METHOD_F_CLASSES]}


def _cell(v: dict) -> tuple[str, str]:
    unit = "gamma lam" if v["algo"] == "stam" else "gamma L1"
    if v["certified"] is not None:
        cert = f"{v['certified'][0]} < {unit} < {v['certified'][1]} (proof)"
    elif v["refuted"] is not None:
        cert = "none"
    else:
        cert = "not determined"
    if v["refuted"] is None:
        ref = "not determined"
    elif v["refuted"][0] == 0:
        ref = "every gamma, lam, beta > 0" if v["algo"] == "stam" else "every gamma > 0"
    else:
        ref = f"{unit} >= {v['refuted'][0]}"
    if v.get("refuted_below") is not None:
        ref = f"{unit} < {float(v['refuted_below']):g} and {ref}"
    held = all(r["held"] for r in v["runs"])
    if v["runs"]:
        ref += f" (runs at h = {', '.join(str(r['h']) for r in v['runs'])}: {'held' if held else 'FAILED'})"
    return cert, ref


def verdict_line(v: dict) -> str:
    """One verdict in words: ``certified 0 < gamma L1 < 2; refuted gamma L1 >= 2``, ``none, refuted by a run at every
    step size``, ``not determined``, or the parts of each."""
    cert, ref = _cell(v)
    if v["certified"] is None and v["refuted"] is None:
        return "not determined"
    if v["certified"] is None and v["refuted"][0] == 0:
        return "none, refuted by a run at every step size"
    parts = [f"certified {cert.replace(' (proof)', '')}" if v["certified"] is not None else "certified none",
             f"refuted {ref.split(' (runs')[0]}"]
    if v.get("undetermined"):
        parts.append("not determined between")
    return "; ".join(parts)


def text(result: dict) -> str:
    """``stam pep --region --algo NAME [--measure common]`` as it prints."""
    lines = [f"{result['label']}: {result['measure_name']} measure {result['measure']}, {result['normalisation']}, "
             f"L1 = {result['L1']}" + (f", lam = {result['lam']}" if result.get("lam") is not None else "") +
             (f", rho = {result['rho']}" if result.get("rho") is not None else ""),
             f"{'class of F':>10}  {'certified':<30}  refuted (none = refuted by the run)"]
    for v in result["verdicts"]:
        cert, ref = _cell(v)
        lines.append(f"{v['f_class']:>10}  {cert:<30}  {ref}")
    for v in result["verdicts"]:
        if v["proof"]:
            lines.append(f"  {v['f_class']}: certified by {v['proof']}")
    for v in result["verdicts"]:
        if v.get("refutation_below"):
            lines.append(f"  {v['f_class']}: refuted below by the run: {v['refutation_below']}")
        if v["refutation"]:
            lines.append(f"  {v['f_class']}: {'none, refuted by' if v['refuted'][0] == 0 else 'beyond, refuted by'} "
                         f"the run: {v['refutation']}")
    for v in result["verdicts"]:
        if v.get("undetermined"):
            lines.append(f"  {v['f_class']}: not determined: {v['undetermined']}")
    return "\n".join(lines)


def jsonable(result: dict) -> dict:
    """``result`` with its exact rationals as strings (``"3/2"``)."""
    def conv(x):
        if isinstance(x, Fraction):
            return str(x)
        if isinstance(x, _Vec):
            return [str(c) for c in x]
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [conv(v) for v in x]
        return x

    return conv(result)




def run_cli(args) -> int:
    """``stam pep --region --algo psgd|bc|br`` and ``--region --algo NAME --measure common`` (STAM too):
    :func:`region` printed (``--json``: exact numbers as strings); the flags of STAM's search and of a single PEP
    other than ``--lam`` (BR, STAM on the common measure) and ``--rho`` (BR) are refused."""
    from stam.errors import require
    from stam.io import dumps
    from stam.theory.worstcase.methods_pep import theory_rule

    rule = theory_rule(args.algo)
    allowed = {"br": {"lam", "rho"}, "stam": {"lam"}}.get(rule.name, set())
    stray = [k for k in ("lam", "gamma", "beta", "T", "sweep_T", "lams", "betas", "gamma_range", "N", "b", "out",
                         "initial", "rho", "workers", "scheduler")
             if getattr(args, k, None) is not None and k not in allowed]
    stray += ["free_start"] if args.free_start else []
    what = "every class of F on the " + ("common" if args.measure == "common" else "natural") + " measure"
    require(not stray, f"{', '.join('--' + k.replace('_', '-') for k in stray)}: not with --region --algo {rule.name} "
            f"(it prints the verdict of {what}; --L1" + "".join(f", --{k}" for k in sorted(allowed)) + ", --measure, --json)")
    lam, rho = Fraction(str(args.lam or 1)), Fraction(str(args.rho or 1))
    require(lam > 0, f"--lam {args.lam}: must be > 0")
    require(rho >= 1, f"--rho {args.rho}: must be >= 1 (lam grows)")
    result = region(rule.name, Fraction(str(args.L1)), lam, rho, measure=args.measure)
    print(dumps(jsonable(result)) if args.json else text(result))
    return 0


# -- the four methods' verdicts side by side, as a result file (benchmarks/methods_regions.py writes it) ---------

#: the classes of F in the order of the result file and its tables
SUMMARY_CLASSES = ("zero", "convex", "indicator", "lsc")


def compact(v: dict) -> dict:
    """One verdict without its runs' iterates: the certified interval, the refuted intervals (in ``h = gamma L1``;
    STAM in ``gamma lam``), whether every run held, the proof, the refutations and what is left undetermined."""
    refuted = []
    if v.get("refuted_below") is not None:
        refuted.append([0, float(v["refuted_below"])])
    if v["refuted"] is not None:
        refuted.append([float(v["refuted"][0]), None])
    return {"f_class": v["f_class"], "certified": None if v["certified"] is None else [float(x) for x in v["certified"]],
            "refuted": refuted, "runs": len(v["runs"]), "runs_held": all(r["held"] for r in v["runs"]),
            "proof": v["proof"], "refutation": v.get("refutation"), "refutation_below": v.get("refutation_below"),
            "undetermined": v.get("undetermined"), "verdict": verdict_line(v)}


def stam_natural(region_data: dict, path: str) -> dict:
    """STAM's verdicts on its natural measure (Theorem conv's ``S_t`` under ``delta0 + M0'_T <= 1``) read from a
    ``lyapunov-region`` result (``stam pep --region``): per class, the span over its lambdas of ``gamma lam`` up to which
    the paper's potential certifies (full gradient) and from which the PEP is unbounded (finite horizon)."""
    rows = region_data["rows"]

    def span(values):
        values = [v for v in values if v is not None]
        return [min(values), max(values)] if values else None

    f_class = region_data.get("f_class", "lsc")
    out = [{"f_class": f_class, "certified_gamma_lam": span([r["paper"]["lo"] and r["paper"]["lo"] * r["lam"] for r in rows]),
            "refuted_gamma_lam": span([r["refuted"]["lo"] and r["refuted"]["lo"] * r["lam"] for r in rows])}]
    if all("convex" in r for r in rows):
        out.append({"f_class": "convex", "certified_gamma_lam": span([r["convex"]["general"]["lo"] and
                                                                      r["convex"]["general"]["lo"] * r["lam"] for r in rows]),
                    "refuted_gamma_lam": None})
    return {"source": path, "L1": region_data["L1"], "lams": [r["lam"] for r in rows], "classes": out,
            "measure": "Theorem conv's S_t, delta0 + M0'_T <= 1 (stam pep --region)",
            "refuted_means": "the finite-horizon M0'_T (first T + 1 merits) leaves the PEP unbounded: no bound of Theorem "
                             "conv's form with M0'_T there"}


def regions_result(stam_region: dict, stam_region_path: str, L1=1, lam=1, rho_growing=Fraction(51, 50)) -> dict:
    """The ``methods-regions`` result: every method's verdict per class of F on the natural and the common measure
    (BR with lam fixed and grown by ``rho_growing`` per step), STAM's natural ones from ``stam_region``."""
    from stam.io import provenance

    def block(algo, measure, rho=1):
        r = region(algo, Fraction(L1), Fraction(lam), Fraction(rho), measure)
        by = {v["f_class"]: compact(v) for v in r["verdicts"]}
        return [by[c] for c in SUMMARY_CLASSES]

    methods = []
    for algo, label, rho in (("psgd", "PSGD", 1), ("bc", "BC", 1), ("br", "BR, lam fixed", 1),
                             ("br", f"BR, lam x {float(rho_growing):g} per step", rho_growing), ("stam", "STAM", 1)):
        entry = {"algo": algo, "label": label, "rho": float(rho) if algo == "br" else None,
                 "natural": None if algo == "stam" else block(algo, "natural", rho), "common": block(algo, "common", rho)}
        methods.append(entry)
    return {"kind": "methods-regions", "provenance": provenance(), "L1": float(L1), "lam": float(lam),
            "units": "h = gamma L1 (STAM: gamma lam)", "normalisations": dict(NORMALISATIONS),
            "common_measure": "L1^2 ||w - prox_{F/L1}(w - grad G(w)/L1)||^2 at the binary output",
            "methods": methods, "stam_natural": stam_natural(stam_region, stam_region_path)}


#: one verdict of a method for one class of F (:func:`compact`): intervals ``[lo, hi]``, ``hi`` null when unbounded
VERDICT = Schema(required={"f_class": STR, "certified": LIST_OR_NULL, "refuted": LIST, "verdict": STR},
                 optional={"runs": ("count",), "runs_held": BOOL, "proof": STR_OR_NULL, "refutation": STR_OR_NULL,
                           "refutation_below": STR_OR_NULL, "undetermined": STR_OR_NULL},
                 items={"certified": NONNEG, "refuted": LIST})
METHODS_REGIONS = ResultType(
    "methods-regions", Schema(required={"methods": NONEMPTY_LIST, "L1": POS, "stam_natural": DICT},
                              optional={"kind": STR, "provenance": DICT_OR_NULL, "lam": POS, "units": STR,
                                        "normalisations": DICT, "common_measure": STR},
                              each={"methods": Schema(required={"algo": NAME, "label": STR, "common": LIST},
                                                      optional={"natural": LIST_OR_NULL, "rho": POS_OR_NULL},
                                                      each={"common": VERDICT, "natural": VERDICT})},
                              inner={"provenance": PROVENANCE,
                                     "stam_natural": Schema(
                                         required={"classes": NONEMPTY_LIST, "source": STR, "L1": POS},
                                         optional={"lams": LIST, "measure": STR, "refuted_means": STR},
                                         each={"classes": Schema(required={"f_class": STR, "certified_gamma_lam": LIST_OR_NULL,
                                                                           "refuted_gamma_lam": LIST_OR_NULL},
                                                                 items={"certified_gamma_lam": POS,
                                                                        "refuted_gamma_lam": POS})})}),
    files="methods_regions.json", writer="python benchmarks/methods_regions.py")


__all__ = ["RUN_HS", "RUN_STEPS", "INSTANCES", "certificate", "certificate_multipliers", "gradient_descent_last_gap", "refuting_run", "verdict", "region",
           "text", "jsonable", "run_cli", "growing_lambda_limit", "growing_lambda_run", "FIXED_OUTPUT", "fixed_point_instance",
           "common_measure", "fixed_point_start", "STAM_RUN_BETA", "common_refuting_run", "FIXED_WHY", "verdict_common",
           "NORMALISATIONS", "verdict_line", "SUMMARY_CLASSES", "compact", "stam_natural", "regions_result", "VERDICT",
           "METHODS_REGIONS"]
