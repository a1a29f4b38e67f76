"""The closed-form certificate family of STAM (issue 59, ``stam pep --family``), proven symbolically.

**Theorem (the Douglas-Rachford-envelope family).**  Let ``G`` be ``L1``-smooth (nonconvex) and bounded below, ``F``
proper, lower semicontinuous and bounded below, ``H(x, y) = (lam/2)||x - y||^2`` (model), STAM (Algorithm 1, eq.
(algalg1)) run with the full gradient, and write ``c = gamma lam``, ``K = 2 beta - L1``.  If ``2 beta > L1 + lam`` and

    0 < c < c_DR,   c_DR = ((K - 3 lam) + sqrt((K - 3 lam)^2 + 8 K (K - lam))) / (4 K)

(the root in (0, 1) of ``q(c) = K (1 - c)(1 + 2c) - lam (1 + 3c)``; ``c_DR < c_beta = 1 - lam / K``), then with
``s_t = (2 x^t - z^{t-1} - u^t) / gamma`` (the subgradient of ``F`` that eq. (algu) produces) and

    V_t = G(y^t) + F(u^t) + lam (1 - c) / (2 (1 + c)^2) ||y^t - z^{t-1}||^2 + (gamma / 2) ||s_t||^2

(``G`` plus the Douglas-Rachford envelope of ``F + H(., y^t)`` at ``z^{t-1}``) every run satisfies
``V_{t+1} - V_t + rho S_t <= 0`` (``S_t`` Theorem conv's measure) with

    rho = rho*(c) = c q / (e + sqrt(e^2 - 4 beta^2 lam (1 - c)^2 (1 + c)^2 c q)),
    e = beta^2 c (1 - c)(1 + 2c) + 2 beta lam (2c^4 - c^3 - 2c^2 + 1) - L1 lam (2c^4 + 2c^3 - c^2 + 1)
        - lam^2 (6c^3 - 4c^2 + c + 1)

(the largest rate of this potential and these multipliers; every ``0 < rho <= rho*`` too, among them the rational
``c q / (2 e) >= rho* / 2``), and ``V_t >= Phi^inf = inf (F + G + H)``.  Hence for every ``T``

    min_{t<T} S_t <= (G(y^0) + F(u^0) + lam (1 - c) / (2 (1 + c)^2) ||y^0 - z^{-1}||^2 + (gamma/2)||s_0||^2 - Phi^inf) / (rho T),

and, the same decrease holding for Theorem conv's own potential ``G(y^t) + H(x^t, y^t) + M_t`` (eq. (eq651); its
decrease form is identical), ``min_{t<T} S_t <= (delta0 + M0'_T) / (rho T)``: the paper's numerator without its
growth factor.  The multipliers: 1 on ``G(y^t) >= G(y^{t+1}) + ...`` (smoothness), 1 on the proximal inequality of
``u^{t+1}`` against ``u^t``, 0 on the other two.  Rate law: ``1/rho* ~ 2 e(c_DR) / (c_DR |q'(c_DR)| (c_DR - c))``
as ``c -> c_DR`` and ``1/rho* ~ 2 / gamma`` as ``c -> 0``.  The family's reach is exactly ``c_DR``: at ``c >= c_DR``
no ``rho >= 0`` works with this potential and these multipliers (``det M0 <= 0``, step 4).

**The proof** (:func:`prove_family`, in sympy, every step an identity or a sign decided exactly; the step and the
inequalities are those of the independent checker :mod:`stam.theory.worstcase.certcheck`, with symbols for numbers):

1. the function values cancel in ``D(rho) = V_{t+1} - V_t + rho S_t - (the two inequalities)``, identically;
2. ``D`` is the same for Theorem conv's potential (``template = "paper"``, ``a = b = 1``);
3. ``D n = 0`` for the fixed points ``n = ((1+c)/lam, -1, 1, -1, 1)`` and ``D e_5 = 0`` (``s_{t+1}`` cancels), for
   every ``rho``; so ``-D`` is semidefinite iff its restriction ``M0 - rho S`` to ``(g_t, s_t, g_{t+1})`` is;
4. the leading minors of ``M0`` in the order ``(g_{t+1}, s_t, g_t)`` are ``1/(4 L1)``, ``c (1-c)(1+2c) / (8 L1 lam
   (1+c)^2)`` and ``c q / (16 L1 beta^2 lam (1+c)^2)``: ``M0`` is positive definite exactly when ``0 < c < 1`` and
   ``q > 0``;
5. ``q > 0`` on ``(0, c_DR)``: ``q`` is a concave quadratic with ``q(0) = K - lam > 0``, ``q(c_DR) = 0``, ``q(1) =
   -4 lam < 0``, and ``q(c_beta) = -lam c_beta < 0`` (so ``c_DR < c_beta``);
6. ``16 L1 beta^2 lam (1+c)^2 det(M0 - rho S) = c q - 2 e rho + 4 beta^2 lam (1-c)^2 (1+c)^2 rho^2``;
7. ``e > 0`` on the set: with ``2 beta = L1 + lam (1+3c)/((1-c)(1+2c)) + tau`` (``tau > 0`` is ``q > 0``),
   ``4 (1-c)^2 (1+2c)^2 e`` is a quadratic form in ``(tau, L1, lam)`` whose ``tau`` coefficients are polynomials in
   ``c`` positive on ``(0, 1)`` (Sturm: no root inside, the sign at 1/2) and whose ``tau``-free part is a positive
   definite quadratic form in ``(L1, lam)`` (its diagonal coefficients positive, ``4AC - B^2 > 0`` on ``(0, 1)``);
8. so ``det(M0 - rho S) > 0`` on ``[0, rho*)`` (``rho*`` the smaller root; the roots are real because ``S`` has rank
   2 and ``M0 - rho S`` has two negative eigenvalues for large ``rho``): no eigenvalue of ``M0 - rho S`` crosses 0,
   it stays positive definite, and is semidefinite at ``rho*`` (continuity);
9. the lower bound: the form ``xi' P xi - m(g_t, u^t - y^t)`` of :mod:`stam.theory.worstcase.certcheck` (``a = b = 1``)
   vanishes on ``((1+c)/lam, -1, 1)`` and off it has the minors ``1/(2(L1+lam))`` and ``c (1-c) / (4 lam
   (L1+lam))``: semidefinite for ``0 < c <= 1``.

**The reach of Theorem conv's potential** (:func:`prove_paper_reach`): exactly ``c_DR`` for any proper lsc ``F`` and
the full gradient.  Below ``c_DR`` the theorem (the same decrease form); for ``c_DR < c < 1`` the function values
force the multipliers ``(mu1, a + mu1, mu3, b + mu3)``, so the decrease form is ``a A_a + b A_b - mu1 I12 - mu3 I34 +
rho S``, and the vector ``y = z + t n`` (``z = (0, adj(M0) e_1, 0)``, ``n`` the fixed points, ``t`` balancing
``A_a`` and ``A_b``) has ``y' I12 y = 0``, ``y' I34 y <= 0`` and ``y' A_a y = y' A_b y = c^2 (1-c)(1+2c)(-q) / (256 L1^2
beta^2 lam^2 (1+c)^4) > 0``: ``y' D y > 0`` for all weights ``a, b >= 0`` not both 0, all multipliers and every
``rho >= 0``, so no such potential even decreases.

What is not proven in closed form: beyond ``c_DR`` the general potential (a free ``P``, all four multipliers) is
certified up to ``c_beta`` one ``(lam, beta, L1)`` at a time (**slices**, :func:`check_slice`: ``P = P_DR`` plus the
directions that keep the fixed points null, the multipliers ``(mu1, 1 + mu1, mu3, 1 + mu3)``, constant on each piece of
``gamma lam`` and proven there for every point by Sturm sequences on the minors) and at sampled points elsewhere
(``stam pep --certify``, ``--region``); the paper's potential with free weights and multipliers was measured to stop
at ``c_DR`` too (sampled); b-nice minibatches have no closed-form family.
"""

from __future__ import annotations

import functools

import sympy as sp

from stam.theory.worstcase import certcheck

c, lam, beta, L1, rho, tau = sp.symbols("c lam beta L1 rho tau", positive=True)
GAMMA = c / lam
K = 2 * beta - L1
#: ``q(c)``, whose positive root is the family's reach
Q = K * (1 - c) * (1 + 2 * c) - lam * (1 + 3 * c)
E = (beta**2 * c * (1 - c) * (1 + 2 * c) + 2 * beta * lam * (2 * c**4 - c**3 - 2 * c**2 + 1)
     - L1 * lam * (2 * c**4 + 2 * c**3 - c**2 + 1) - lam**2 * (6 * c**3 - 4 * c**2 + c + 1))
D2 = 4 * beta**2 * lam * (1 - c)**2 * (1 + c)**2
C_DR = ((K - 3 * lam) + sp.sqrt((K - 3 * lam)**2 + 8 * K * (K - lam))) / (4 * K)
C_BETA = 1 - lam / K
RHO_STAR = c * Q / (E + sp.sqrt(E**2 - D2 * c * Q))
RHO_RATIONAL = c * Q / (2 * E)
P11 = lam * (1 - c) / (2 * (1 + c)**2)


def certificate(template: str, rate=rho) -> dict:
    """The family's certificate as :mod:`stam.theory.worstcase.certcheck` reads one (symbols for its numbers)."""
    one, zero = sp.Integer(1), sp.Integer(0)
    potential = {"a": one, "b": one}
    if template == "general":
        potential["P"] = [[P11, zero, zero], [zero, zero, zero], [zero, zero, GAMMA / 2]]
    return {"template": template, "f_class": "lsc", "params": {"lam": lam, "gamma": GAMMA, "beta": beta, "L1": L1},
            "rho": rate, "potential": potential, "mu": dict(zip(certcheck.INEQUALITIES, (zero, one, zero, one)))}


def _zero(expr) -> bool:
    return sp.simplify(sp.cancel(sp.together(expr))) == 0


def _sign_on_unit(p, sign: int) -> bool:
    """Whether the polynomial ``p`` in ``c`` has the sign ``sign`` (+1 or -1) everywhere on the open interval (0, 1),
    decided exactly: the factors ``c`` and ``1 - c`` (positive there) divided out, no real root left in [0, 1] (Sturm sequences,
    :meth:`sympy.Poly.count_roots`), and the sign at ``1/2``."""
    poly = sp.Poly(sp.expand(p), c)
    if poly.is_zero:
        return False
    for root, factor in ((0, c), (1, 1 - c)):  # both factors positive on (0, 1): dividing them out keeps the sign
        while poly.eval(root) == 0:
            poly = sp.Poly(sp.quo(poly.as_expr(), factor, c), c)
    return poly.count_roots(0, 1) == 0 and sp.sign(poly.eval(sp.Rational(1, 2))) == sign


def _minors(M, order):
    return [sp.factor(sp.cancel(M.extract(order[:k], order[:k]).det())) for k in range(1, len(order) + 1)]


def prove_family() -> dict:
    """Prove the module docstring's theorem step by step (sympy): ``{"proven": all steps hold, "steps": [{"step",
    "claim", "proven"}], ...}`` with the theorem's expressions as text."""
    steps = []

    def step(claim: str, ok: bool):
        steps.append({"step": len(steps) + 1, "claim": claim, "proven": bool(ok)})

    lin_g, Dg = certcheck.decrease_form(certificate("general"))
    lin_p, Dp = certcheck.decrease_form(certificate("paper"))
    Dg, Dp = sp.Matrix(Dg), sp.Matrix(Dp)
    step("the function values cancel in V_(t+1) - V_t + rho S_t - (multipliers) (inequalities), identically",
         all(_zero(v) for v in list(lin_g) + list(lin_p)))
    step("Theorem conv's potential G + H + M_t (eq. (eq651)) has the same decrease form", all(_zero(v) for v in Dg - Dp))
    n = sp.Matrix([(1 + c) / lam, -1, 1, -1, 1])
    e5 = sp.Matrix([0, 0, 0, 0, 1])
    step("D n = 0 at the fixed points n = ((1+c)/lam, -1, 1, -1, 1) and D e_5 = 0, for every rho",
         all(_zero(v) for v in list(Dg * n) + list(Dg * e5)))
    M = (-Dg).extract([1, 2, 3], [1, 2, 3]).applyfunc(sp.cancel)
    M0 = M.subs(rho, 0)
    S = ((M0 - M) / rho).applyfunc(sp.cancel)
    minors = _minors(M0, [2, 1, 0])
    want = [1 / (4 * L1), c * (1 - c) * (1 + 2 * c) / (8 * L1 * lam * (1 + c)**2), c * Q / (16 * L1 * beta**2 * lam * (1 + c)**2)]
    step("the leading minors of M0 in the order (g_(t+1), s_t, g_t) are 1/(4 L1), c (1-c)(1+2c)/(8 L1 lam (1+c)^2), "
         "c q/(16 L1 beta^2 lam (1+c)^2)", all(_zero(m - w) for m, w in zip(minors, want)))
    q2 = sp.Poly(sp.expand(Q), c)
    step("q is a concave quadratic in c with q(0) = K - lam, q(c_DR) = 0, q(1) = -4 lam, q(c_beta) = -lam c_beta",
         q2.degree() == 2 and _zero(q2.LC() + 2 * K) and _zero(Q.subs(c, 0) - (K - lam)) and _zero(Q.subs(c, C_DR))
         and _zero(Q.subs(c, 1) + 4 * lam) and _zero(Q.subs(c, C_BETA) + lam * C_BETA))
    S_ok = _zero(S[2, 2]) and _zero(S[0, 2]) and _zero(S[1, 2]) and _zero(S[0, 0] - 1) and _zero(
        S[0, 0] * S[1, 1] - S[0, 1]**2 - (1 - c)**2)
    det = sp.expand(sp.cancel((M0 - rho * S).det() * 16 * L1 * beta**2 * lam * (1 + c)**2))
    step("S is semidefinite of rank 2 (minors 1 and (1-c)^2, zero on g_(t+1)), and 16 L1 beta^2 lam (1+c)^2 "
         "det(M0 - rho S) = c q - 2 e rho + 4 beta^2 lam (1-c)^2 (1+c)^2 rho^2",
         S_ok and _zero(det - (c * Q - 2 * E * rho + D2 * rho**2)))
    step("e > 0 wherever 0 < c < 1 and q > 0 (2 beta = L1 + lam (1+3c)/((1-c)(1+2c)) + tau, tau > 0: every "
         "coefficient's sign decided on (0, 1) by Sturm sequences)", _e_positive())
    W = sp.Matrix(certcheck.lower_bound_form(certificate("general")))
    v = sp.Matrix([(1 + c) / lam, -1, 1])
    wm = _minors(W, [1, 2])
    step("the lower-bound form vanishes on ((1+c)/lam, -1, 1) and off it has the minors 1/(2 (L1+lam)), "
         "c (1-c)/(4 lam (L1+lam)): V_t >= Phi^inf for 0 < c <= 1",
         all(_zero(x) for x in W * v) and _zero(wm[0] - 1 / (2 * (L1 + lam)))
         and _zero(wm[1] - c * (1 - c) / (4 * lam * (L1 + lam))))
    reach = prove_paper_reach(Dg)
    return {"proven": all(s["proven"] for s in steps + reach), "steps": steps, "paper_reach": reach,
            "theorem": theorem_lines(),
            "set": "L1 > 0, lam > 0, 2 beta > L1 + lam, 0 < gamma lam < c_DR(lam, beta, L1)",
            "c_DR": str(C_DR), "rho": str(RHO_STAR), "e": str(E), "q": str(Q)}


def paper_parts():
    """The decrease form of Theorem conv's potential ``a (G + H) + b M_t`` (lsc F, full gradient) in its parts: with
    the function values cancelled the multipliers are ``(mu1, a + mu1, mu3, b + mu3)``, so ``D = a A_a + b A_b - mu1
    I12 - mu3 I34 + rho S`` (``I12``, ``I34`` the sums of the two inequalities of ``G`` and of ``F``, each ``<= 0``
    on every run)."""
    one, zero = sp.Integer(1), sp.Integer(0)

    def form(a, b, mu):
        cert = {**certificate("paper", zero), "potential": {"a": a, "b": b},
                "mu": dict(zip(certcheck.INEQUALITIES, mu))}
        lin, D = certcheck.decrease_form(cert)
        return [sp.cancel(v) for v in lin], sp.Matrix(D)

    sums = [form(zero, zero, (one, one, zero, zero)), form(zero, zero, (zero, zero, one, one))]  # -I12, -I34
    return [form(one, zero, (zero, one, zero, zero)), form(zero, one, (zero, zero, zero, one))] + [
        (lin, -D) for lin, D in sums]


def prove_paper_reach(D_family) -> list[dict]:
    """The reach of Theorem conv's potential is exactly ``c_DR`` (any proper lsc F, full gradient): below it the
    theorem (its decrease form is the family's); for ``c_DR < c < 1`` no weights ``a, b >= 0`` (not both 0), no
    multipliers and no rate ``rho >= 0`` make ``a (G + H) + b M_t`` a certificate, because one vector ``y`` has
    ``y' D y > 0`` for all of them (a dual certificate of the SDP): ``z = (0, adj(M0) e_1, 0)`` and ``y = z + t n``
    with ``t`` balancing the two parts.  Steps, each an identity or a sign decided exactly."""
    (la, Aa), (lb, Ab), (l12, I12), (l34, I34) = paper_parts()
    steps = []

    def step(claim: str, ok: bool):
        steps.append({"step": len(steps) + 1, "claim": claim, "proven": bool(ok)})

    a, b, m1, m2, m3, m4 = sp.symbols("a b mu1 mu2 mu3 mu4")
    generic = {**certificate("paper", sp.Integer(0)), "potential": {"a": a, "b": b},
               "mu": dict(zip(certcheck.INEQUALITIES, (m1, m2, m3, m4)))}
    lin = [sp.expand(v) for v in certcheck.decrease_form(generic)[0]]
    only = sp.solve(lin, [m2, m4], dict=True)
    step("the function values of a (G + H) + b M_t cancel only with the multipliers (mu1, a + mu1, mu3, b + mu3): the "
         "decrease form is a A_a + b A_b - mu1 I12 - mu3 I34 + rho S, with no function value left in A_a, A_b, I12, I34",
         only == [{m2: a + m1, m4: b + m3}] and all(_zero(v) for v in la + lb + l12 + l34)
         and all(_zero(v) for v in (Aa + Ab) - D_family.subs(rho, 0)))
    M0 = (-(Aa + Ab)).extract([1, 2, 3], [1, 2, 3])
    adj = M0.adjugate()
    z = sp.Matrix([0, adj[0, 0], adj[1, 0], adj[2, 0], 0])
    n = sp.Matrix([(1 + c) / lam, -1, 1, -1, 1])
    q_ = lambda A, u, v: sp.factor(sp.cancel((u.T * A * v)[0]))  # noqa: E731
    f12, f34, fsum, zan = q_(I12, z, z), q_(I34, z, z), q_(Aa + Ab, z, z), q_(Aa, z, n)
    step("z' I12 z = 0, n' I12 = n' I34 = 0 and n' (A_a + A_b) = 0 (n the fixed points)",
         _zero(f12) and all(_zero(v) for v in list(I12 * n) + list(I34 * n) + list((Aa + Ab) * n)))
    step("z' I34 z = c^3 (c - 1) / (32 L1^2 beta^2 lam (1+c)^3) <= 0 on (0, 1)",
         _zero(f34 - c**3 * (c - 1) / (32 * L1**2 * beta**2 * lam * (1 + c)**3)))
    step("z' (A_a + A_b) z = c^2 (1-c)(1+2c) (-q) / (128 L1^2 beta^2 lam^2 (1+c)^4) > 0 where q < 0, i.e. c_DR < c < 1",
         _zero(fsum - c**2 * (1 - c) * (1 + 2 * c) * (-Q) / (128 * L1**2 * beta**2 * lam**2 * (1 + c)**4)))
    step("n' A_a n = 0 and z' A_a n = -c^3 / (8 L1 beta lam (1+c)^2) != 0: with y = z + t n, t = (z'A_b z - z'A_a z) / "
         "(4 z' A_a n), y' A_a y = y' A_b y = z' (A_a + A_b) z / 2 > 0; so y' D y > 0 for every a, b >= 0 not both 0, "
         "mu1, mu3, rho >= 0",
         _zero(q_(Aa, n, n)) and _zero(zan + c**3 / (8 * L1 * beta * lam * (1 + c)**2)))
    return steps


def _e_positive() -> bool:
    """Step 7 of the module docstring."""
    b = (L1 + lam * (1 + 3 * c) / ((1 - c) * (1 + 2 * c)) + tau) / 2
    N = sp.expand(sp.cancel(E.subs(beta, b) * 4 * (1 - c) * (1 + 2 * c) * (1 - c) * (1 + 2 * c)))
    poly = sp.Poly(N, tau, L1, lam)
    coeff = {m: cf for m, cf in zip(poly.monoms(), poly.coeffs())}
    quad = {(0, 2, 0), (0, 1, 1), (0, 0, 2)}
    others = [cf for m, cf in coeff.items() if m not in quad]
    A, B, C = (coeff.get(m, sp.Integer(0)) for m in ((0, 2, 0), (0, 1, 1), (0, 0, 2)))
    if not all(sum(m) == 2 for m in coeff):  # homogeneous of degree 2 in (tau, L1, lam)
        return False
    return (all(_sign_on_unit(cf, +1) for cf in others) and _sign_on_unit(A, +1) and _sign_on_unit(C, +1)
            and _sign_on_unit(4 * A * C - B**2, +1))


def theorem_lines() -> list[str]:
    """The theorem in the paper's notation, as ``stam pep --family`` prints it."""
    return [
        "Theorem (DR-envelope family). G L1-smooth and bounded below, F proper, lsc and bounded below, H = (lam/2)|x - y|^2,",
        "STAM with the full gradient, c = gamma*lam, K = 2 beta - L1. If 2 beta > L1 + lam and 0 < c < c_DR, where",
        "  c_DR = ((K - 3 lam) + sqrt((K - 3 lam)^2 + 8 K (K - lam))) / (4 K)   (root of q(c) = K (1-c)(1+2c) - lam (1+3c);",
        "  c_DR < c_beta = 1 - lam/K), then with s_t = (2 x^t - z^(t-1) - u^t)/gamma and",
        "  V_t = G(y^t) + F(u^t) + lam (1-c)/(2 (1+c)^2) |y^t - z^(t-1)|^2 + (gamma/2) |s_t|^2",
        "every run has V_(t+1) - V_t + rho S_t <= 0 and V_t >= Phi^inf, with",
        "  rho = c q / (e + sqrt(e^2 - 4 beta^2 lam (1-c)^2 (1+c)^2 c q)),",
        "  e = beta^2 c (1-c)(1+2c) + 2 beta lam (2c^4 - c^3 - 2c^2 + 1) - L1 lam (2c^4 + 2c^3 - c^2 + 1)"
        " - lam^2 (6c^3 - 4c^2 + c + 1),",
        "so min_(t<T) S_t <= (G(y^0) + F(u^0) + lam (1-c)/(2 (1+c)^2) |y^0 - z^(-1)|^2 + (gamma/2)|s_0|^2 - Phi^inf) / (rho T);",
        "Theorem conv's potential G + H + M_t has the same decrease: min_(t<T) S_t <= (delta0 + M0'_T) / (rho T).",
        "Multipliers: 1 on G(y^t) vs G(y^(t+1)) (smoothness), 1 on F(u^t) vs F(u^(t+1)) (prox of u^(t+1)), 0 on the others.",
        "Rate law: 1/rho ~ 2 e(c_DR) / (c_DR |q'(c_DR)| (c_DR - c)) as c -> c_DR; 1/rho ~ 2/gamma as c -> 0.",
        "Reach of this family: exactly c_DR (beyond it det M0 < 0 for every rho >= 0).",
    ]


def numbers(lam_v, beta_v, L1_v=1, cs=()) -> dict:
    """The family's numbers at ``(lam, beta, L1)``: ``c_DR``, ``c_beta`` and ``(c, rho*, 1/rho*)`` at each ``c``."""
    sub = {lam: sp.nsimplify(lam_v), beta: sp.nsimplify(beta_v), L1: sp.nsimplify(L1_v)}
    rows = []
    for cv in cs:
        r = float(RHO_STAR.subs(sub).subs(c, sp.nsimplify(cv)))
        rows.append({"c": float(cv), "rho": r, "inv_rho": 1 / r})
    return {"c_DR": float(C_DR.subs(sub)), "c_beta": float(C_BETA.subs(sub)), "rows": rows}


def instance(lam_v, gamma_v, beta_v, L1_v=1) -> dict:
    """The family's certificate at one rational point as exact numbers (``rho`` the rational ``c q / (2 e)``), in the
    form :func:`stam.theory.worstcase.certcheck.parse` returns, for the checker's proof (tests check instances so)."""
    from fractions import Fraction

    sub = {lam: sp.Rational(str(lam_v)), beta: sp.Rational(str(beta_v)), L1: sp.Rational(str(L1_v))}
    sub[c] = sp.Rational(str(gamma_v)) * sub[lam]
    cert = certificate("general", RHO_RATIONAL)

    def fr(x):
        x = sp.sympify(x).subs(sub)
        if not x.is_Rational:
            raise ValueError(f"the family's instance has a non-rational entry {x}")
        return Fraction(int(x.p), int(x.q))

    P = [[fr(v) for v in row] for row in cert["potential"]["P"]]
    return {"template": "general", "f_class": "lsc", "params": {k: fr(v) for k, v in cert["params"].items()},
            "rho": fr(cert["rho"]), "potential": {"a": Fraction(1), "b": Fraction(1), "P": P},
            "mu": {k: fr(v) for k, v in cert["mu"].items()}}


# --------------------------------------------------------------------------- slices: beyond c_DR, one (lam, beta, L1)
#: ``kind`` of a slice certificate file (``stam pep --certify --slice``, :func:`check_slice`)
SLICE_KIND = "stam-lyapunov-certificate-slice"
#: the constants of a piece: ``P = P_DR + alpha u1 u1' + b2 (u1 u2' + u2 u1') + delta u2 u2'`` (``u1 = (lam, 1 + c, 0)``,
#: ``u2 = (0, 1, 1)``, both orthogonal to ``v = ((1+c)/lam, -1, 1)``, so ``P v`` is the family's and the fixed points
#: stay null), the multipliers ``(mu1, 1 + mu1, mu3, 1 + mu3)`` (``a = b = 1``: the function values cancel), the rate
PIECE_KEYS = ("alpha", "b2", "delta", "mu1", "mu3", "rho")
SLICE_KEYS = ("kind", "format", "method", "f_class", "parameters", "gamma_lam_max", "pieces", "digest")


@functools.lru_cache(maxsize=8)
def _slice_forms(key: tuple):
    return _build_slice_forms(*key)


def slice_forms(lam_v, beta_v, L1_v):
    """:func:`_build_slice_forms`, kept for the last few ``(lam, beta, L1)`` (a slice's pieces share them)."""
    return _slice_forms(tuple(str(sp.Rational(str(v))) for v in (lam_v, beta_v, L1_v)))


def _build_slice_forms(lam_v, beta_v, L1_v):
    """``(M, W, symbols)`` of a slice at ``(lam, beta, L1)`` (exact rationals): ``M`` the restriction of ``-D`` to
    ``(g_t, s_t, g_(t+1), s_(t+1))`` (the complement of the fixed points ``n``, with ``D n = 0`` for every value of
    the constants, checked here), ``W`` that of the lower-bound form to ``(g_t, s_t)`` (the complement of its null
    direction ``((1+c)/lam, -1, 1)``, checked too), both in ``c`` and the constants
    :data:`PIECE_KEYS` (sympy symbols); the step and the inequalities of :mod:`stam.theory.worstcase.certcheck`."""
    lam_, beta_, L1_ = (sp.Rational(str(v)) for v in (lam_v, beta_v, L1_v))
    syms = sp.symbols(" ".join(PIECE_KEYS))
    alpha, b2, delta, mu1, mu3, rate = syms
    u1, u2 = sp.Matrix([lam_, 1 + c, 0]), sp.Matrix([0, 1, 1])
    P = (sp.Matrix([[lam_ * (1 - c) / (2 * (1 + c)**2), 0, 0], [0, 0, 0], [0, 0, c / lam_ / 2]])
         + alpha * u1 * u1.T + b2 * (u1 * u2.T + u2 * u1.T) + delta * u2 * u2.T)
    one = sp.Integer(1)
    cert = {"template": "general", "f_class": "lsc", "params": {"lam": lam_, "gamma": c / lam_, "beta": beta_, "L1": L1_},
            "rho": rate, "potential": {"a": one, "b": one, "P": [[P[i, j] for j in range(3)] for i in range(3)]},
            "mu": dict(zip(certcheck.INEQUALITIES, (mu1, 1 + mu1, mu3, 1 + mu3)))}
    lin, D = certcheck.decrease_form(cert)
    D = sp.Matrix(D)
    n = sp.Matrix([(1 + c) / lam_, -1, 1, -1, 1])
    W = sp.Matrix(certcheck.lower_bound_form(cert))
    v = sp.Matrix([(1 + c) / lam_, -1, 1])
    if not all(_zero(x) for x in list(lin) + list(D * n) + list(W * v)):  # for every value of the constants
        raise AssertionError("the slice's identities fail")  # a derivation error, never a user's input
    return (-D).extract([1, 2, 3, 4], [1, 2, 3, 4]), W.extract([1, 2], [1, 2]), syms


def piece_minors(forms, values) -> list:
    """The leading principal minors of ``M`` and ``W`` (:func:`slice_forms`) at the constants ``values``, as rational
    functions of ``c``."""
    M, W, syms = forms
    sub = dict(zip(syms, values))
    return [sp.cancel(sp.together(A.subs(sub)[:k, :k].det())) for A, n in ((M, 4), (W, 2)) for k in range(1, n + 1)]


def prove_piece(forms, lo, hi, values) -> str | None:
    """None when the constants ``values`` certify every ``c`` of ``[lo, hi]`` (exact): ``mu1, mu3 >= 0``, ``rho > 0``,
    and every leading minor of ``M`` and ``W`` positive on the interval (its numerator and denominator without a real
    root in ``[lo, hi]``, Sturm sequences, and positive at ``lo``); else why not."""
    d = dict(zip(PIECE_KEYS, values))
    if d["mu1"] < 0 or d["mu3"] < 0 or not d["rho"] > 0 or not 0 < lo < hi < 1:
        return "a sign: mu1, mu3 >= 0, rho > 0, 0 < from < to < 1"
    for k, m in enumerate(piece_minors(forms, values)):
        for part in sp.fraction(m):
            poly = sp.Poly(part, c)
            if poly.degree() > 0 and poly.count_roots(lo, hi) != 0:
                return f"minor {k + 1} changes sign in [{lo}, {hi}]"
        if not m.subs(c, lo) > 0:
            return f"minor {k + 1} is not positive at {lo}"
    return None


def check_slice(text: str) -> dict:
    """Prove a slice certificate file (``stam pep --check FILE``): at its ``(lam, beta, L1)``, every ``gamma lam`` in
    ``(0, gamma_lam_max]`` certified: ``(0, c_DR)`` by the theorem (:func:`prove_family`, proven again here), the
    pieces from below ``c_DR`` up, contiguous, each by :func:`prove_piece`.  Raises
    :class:`stam.theory.worstcase.certcheck.Malformed` or :class:`stam.theory.worstcase.certcheck.NotProven` with a one-line reason."""
    doc = certcheck.load(text)
    if sorted(doc) != sorted(SLICE_KEYS) or doc["kind"] != SLICE_KIND or doc["format"] != 1:
        raise certcheck.Malformed(f"a slice certificate has exactly the keys {', '.join(SLICE_KEYS)} (kind {SLICE_KIND!r}, "
                                  "format 1)")
    if doc["method"] != "STAM, full gradient" or doc["f_class"] != "lsc":
        raise certcheck.Malformed("a slice certificate is for 'STAM, full gradient' and f_class 'lsc'")
    prm = doc["parameters"]
    if not isinstance(prm, dict) or sorted(prm) != ["L1", "beta", "lam"]:
        raise certcheck.Malformed("parameters: must be exactly lam, beta, L1")
    lam_v, beta_v, L1_v = (certcheck.rational(prm[k], f"parameters.{k}") for k in ("lam", "beta", "L1"))
    top = certcheck.rational(doc["gamma_lam_max"], "gamma_lam_max")
    pieces = doc["pieces"]
    if not isinstance(pieces, list) or not 1 <= len(pieces) <= 200:
        raise certcheck.Malformed("pieces: not a list of 1 to 200 pieces")
    rows = []
    for i, pc in enumerate(pieces):
        if not isinstance(pc, dict) or sorted(pc) != sorted(("from", "to") + PIECE_KEYS):
            raise certcheck.Malformed(f"pieces[{i}]: must be exactly from, to, {', '.join(PIECE_KEYS)}")
        rows.append({k: certcheck.rational(pc[k], f"pieces[{i}].{k}") for k in pc})
    if min(lam_v, beta_v, L1_v) <= 0 or not 2 * beta_v > L1_v + lam_v:
        raise certcheck.NotProven("the parameters are outside 2 beta > L1 + lam > 0")
    sub = {lam: sp.Rational(lam_v), beta: sp.Rational(beta_v), L1: sp.Rational(L1_v)}
    start = sp.Rational(rows[0]["from"])
    if not (start > 0 and Q.subs(sub).subs(c, start) > 0):
        raise certcheck.NotProven(f"the first piece starts at {rows[0]['from']}, not inside (0, c_DR) of the theorem")
    if rows[-1]["to"] != top or any(a["to"] != b["from"] for a, b in zip(rows, rows[1:])):
        raise certcheck.NotProven("the pieces are not contiguous up to gamma_lam_max")
    family = prove_family()
    if not family["proven"]:
        raise certcheck.NotProven("the theorem (stam pep --family) did not prove")
    forms = slice_forms(lam_v, beta_v, L1_v)
    for i, r in enumerate(rows):
        why = prove_piece(forms, sp.Rational(r["from"]), sp.Rational(r["to"]), [sp.Rational(r[k]) for k in PIECE_KEYS])
        if why is not None:
            raise certcheck.NotProven(f"piece {i} [{float(r['from']):.9g}, {float(r['to']):.9g}]: {why}")
    if doc["digest"] != certcheck.digest(doc, SLICE_KEYS[:-1]):
        raise certcheck.NotProven("the numbers prove a slice, but not the one written: they do not match the file's digest")
    return {"params": {"lam": lam_v, "beta": beta_v, "L1": L1_v}, "gamma_lam_max": top,
            "c_DR": float(C_DR.subs(sub)), "c_beta": float(C_BETA.subs(sub)), "pieces": rows}


def slice_text(path, proved: dict) -> str:
    """What ``stam pep --check FILE`` prints for a slice certificate."""
    p = proved["params"]
    lines = [f"proven: {path}",
             f"  STAM, full gradient, F lsc, G L1-smooth; lam={p['lam']} beta={p['beta']} L1={p['L1']}: every gamma*lam in "
             f"(0, {float(proved['gamma_lam_max']):.9g}] (c_beta = {proved['c_beta']:.9g})",
             f"  (0, c_DR = {proved['c_DR']:.9g}): the DR-envelope family (stam pep --family), proven again"]
    for i, r in enumerate(proved["pieces"]):
        lines.append(f"  piece {i}: [{float(r['from']):.9g}, {float(r['to']):.9g}]  rho = {float(r['rho']):.6g}  "
                     f"mu1 = {float(r['mu1']):.4g}  mu3 = {float(r['mu3']):.4g}: every leading minor positive (Sturm)")
    lines.append("  the digest of the numbers matches the file's")
    return "\n".join(lines)


def text(result: dict) -> str:
    """What ``stam pep --family`` prints."""
    lines = list(result["theorem"])
    lines.append(f"Proven for: {result['set']}.")
    lines.append("Proof (sympy, exact; stam.theory.worstcase.family):")
    for s in result["steps"]:
        lines.append(f"  {s['step']}. [{'proven' if s['proven'] else 'NOT PROVEN'}] {s['claim']}")
    lines.append("Reach of Theorem conv's potential a (G + H) + b M_t (any proper lsc F, full gradient): exactly c_DR. "
                 "Below: the theorem. For c_DR < gamma*lam < 1 nothing (a dual certificate y, sympy):")
    for s_ in result["paper_reach"]:
        lines.append(f"  {s_['step']}. [{'proven' if s_['proven'] else 'NOT PROVEN'}] {s_['claim']}")
    lines.append("  so (6, 7) det(M0 - rho S) > 0 on [0, rho) (rho the smaller root, real: S is definite on (g_t, s_t), so "
                 "two eigenvalues are negative for large rho) and M0 - rho S, positive definite at 0 (4, 5), stays so "
                 "(no eigenvalue crosses 0); -D is semidefinite (3), the lower bound holds (8).")
    lines.append("Beyond c_DR (c_DR <= gamma*lam < c_beta, the general potential): proven one (lam, beta, L1) at a time by "
                 "stam pep --certify --slice (pieces of constant certificates, each proven on its whole interval), "
                 "sampled elsewhere; b-nice minibatches: sampled only.")
    lines.append("the theorem is proven" if result["proven"] else "the proof did NOT go through")
    return "\n".join(lines)


__all__ = ["paper_parts", "prove_paper_reach", "SLICE_KIND", "PIECE_KEYS", "SLICE_KEYS", "slice_forms", "piece_minors", "prove_piece", "check_slice",
           "slice_text", "certificate", "prove_family", "theorem_lines", "numbers", "instance", "text", "Q", "E", "C_DR", "C_BETA",
           "RHO_STAR", "RHO_RATIONAL", "P11"]
