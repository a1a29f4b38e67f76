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

from fractions import Fraction

from stam.theory.params import METHOD_F_CLASSES

#: the step sizes h = gamma L1 at which each refuting run is computed and shown
RUN_HS = (Fraction(1, 2), Fraction(1), Fraction(2), Fraction(3))
#: the steps of each refuting run
RUN_STEPS = 8


class _Exact1D:
    """F's proximal step on exact rationals in one dimension: ``None`` (F = 0), ``"pm1"`` (Q = {-1, 1}; a tie at 0
    goes to 1), ``"box"`` (Q = [-1, 1])."""

    def __init__(self, kind):
        self.kind = kind

    def prox_F(self, v, gamma):
        if self.kind is None:
            return v
        if self.kind == "pm1":
            return Fraction(1) if v >= 0 else Fraction(-1)
        return max(Fraction(-1), min(Fraction(1), v))


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
    from stam.rules import rule as rule_of

    kind, c, x0, bound, why = INSTANCES[instance]
    L1, h = Fraction(L1), Fraction(h)
    rule = rule_of(algo)
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
    instance = {("bc", "lsc"): "pm1", ("bc", "indicator"): "pm1", ("bc", "convex"): "box",
                ("br", "lsc"): "br_pm1", ("br", "indicator"): "br_pm1"}.get((algo, f_class))
    if instance is None:
        return {"algo": algo, "f_class": f_class, "certified": None, "refuted": None, "proof": None,
                "refutation": None, "runs": [], "undetermined": "no certificate and no refuting run here (BR with a convex "
                "Q is certified with lam fixed, --rho 1; a growing lam breaks the argument)"}
    runs = [refuting_run(algo, instance, h, L1, lam, rho) for h in RUN_HS]
    return {"algo": algo, "f_class": f_class, "certified": None, "refuted": [0, None], "proof": None,
            "refutation": INSTANCES[instance][4], "runs": runs}


def region(algo: str, L1=1, lam=1, rho=1) -> dict:
    """The verdicts of ``algo`` for every class of F (:data:`stam.theory.params.METHOD_F_CLASSES`)."""
    from stam.theory.worstcase.methods_pep import theory_rule

    rule = theory_rule(algo)
    if algo == "stam":
        raise ValueError("STAM's region is stam.theory.worstcase.lyapunov.compute_region (stam pep --region)")
    return {"algo": algo, "label": rule.label, "measure": rule.theory_measure_text, "L1": L1,
            "normalisation": "G(w^0) - inf G <= 1", "verdicts": [verdict(algo, c, L1, lam, rho) for c in METHOD_F_CLASSES]}


def _cell(v: dict) -> tuple[str, str]:
    if v["certified"] is not None:
        cert = f"{v['certified'][0]} < gamma L1 < {v['certified'][1]} (proof)"
    elif v["refuted"] is not None:
        cert = "none"
    else:
        cert = "not determined"
    if v["refuted"] is None:
        ref = "not determined"
    elif v["refuted"][0] == 0:
        ref = "every gamma > 0"
    else:
        ref = f"gamma L1 >= {v['refuted'][0]}"
    held = all(r["held"] for r in v["runs"])
    if v["runs"]:
        ref += f" (runs at h = {', '.join(str(r['h']) for r in v['runs'])}: {'held' if held else 'FAILED'})"
    return cert, ref


def text(result: dict) -> str:
    """``stam pep --region --algo NAME`` as it prints."""
    lines = [f"{result['label']}: natural measure {result['measure']}, {result['normalisation']}, L1 = {result['L1']}",
             f"{'class of F':>10}  {'certified':<30}  refuted (none = refuted by the run)"]
    for v in result["verdicts"]:
        cert, ref = _cell(v)
        lines.append(f"{v['f_class']:>10}  {cert:<30}  {ref}")
    for v in result["verdicts"]:
        if v["proof"]:
            lines.append(f"  {v['f_class']}: certified by {v['proof']}")
    for v in result["verdicts"]:
        if v["refutation"]:
            lines.append(f"  {v['f_class']}: {'none, refuted by' if v['certified'] is None else 'beyond, refuted by'} "
                         f"the run: {v['refutation']}")
    return "\n".join(lines)


def jsonable(result: dict) -> dict:
    """``result`` with its exact rationals as strings (``"3/2"``)."""
    def conv(x):
        if isinstance(x, Fraction):
            return str(x)
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [conv(v) for v in x]
        return x

    return conv(result)




def run_cli(args) -> int:
    """``stam pep --region --algo psgd|bc|br``: :func:`region` printed (``--json``: exact numbers as strings);
    the flags of STAM's search and of a single PEP other than BR's ``--lam``, ``--rho`` are refused."""
    from stam.errors import require
    from stam.io import dumps
    from stam.theory.worstcase.methods_pep import theory_rule

    rule = theory_rule(args.algo)
    allowed = {"lam", "rho"} if rule.name == "br" else set()
    stray = [k for k in ("lam", "gamma", "beta", "T", "sweep_T", "lams", "betas", "gamma_range", "N", "b", "out",
                         "initial", "rho", "workers", "scheduler")
             if getattr(args, k, None) is not None and k not in allowed]
    stray += ["free_start"] if args.free_start else []
    stray += ["measure"] if args.measure != "natural" else []
    require(not stray, f"{', '.join('--' + k.replace('_', '-') for k in stray)}: not with --region --algo {rule.name} "
            "(it prints the verdict of every class of F on the natural measure; --L1" +
            (", --lam, --rho" if allowed else "") + ", --json)")
    lam, rho = Fraction(str(args.lam or 1)), Fraction(str(args.rho or 1))
    require(rho >= 1, f"--rho {args.rho}: must be >= 1 (lam grows)")
    result = region(rule.name, Fraction(str(args.L1)), lam, rho)
    print(dumps(jsonable(result)) if args.json else text(result))
    return 0


__all__ = ["RUN_HS", "RUN_STEPS", "INSTANCES", "certificate", "gradient_descent_last_gap", "refuting_run", "verdict", "region", "text", "jsonable",
           "run_cli"]
