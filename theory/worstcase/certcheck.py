"""The independent checker of a STAM Lyapunov certificate file (``stam pep --check FILE``, issue 59).

It shares no code with the search that found the certificate (:mod:`stam.theory.worstcase.lyapunov`, :mod:`stam.theory.worstcase.sdp`,
:mod:`stam.theory.worstcase.sdpproof`, :mod:`stam.theory.worstcase.templates`, :mod:`stam.steps`): it imports only the standard
library (:mod:`fractions`, :mod:`json`, :mod:`re`), and writes down one step of STAM itself, from the paper's
equations, in exact rational arithmetic.  A certificate is read as data only (strict parsing: no ``eval``, every number
a string ``"p"`` or ``"p/q"`` of bounded length, every shape checked) and then proven:

1. **The step** (Algorithm 1, eq. (algalg1), full gradient; ``H(x, y) = (lam/2)||x - y||^2``).  By translation
   invariance ``z^{t-1} = 0`` and ``y^t = w``; the five vectors ``w, g_t = grad G(y^t), s_t, g_{t+1}, s_{t+1}``
   (``s`` the subgradients of ``F`` that the proximal steps eq. (algu) produce) span everything:
   ``x^t = gamma lam y^t / (1 + gamma lam)`` (eq. (algx)), ``u^t = 2 x^t - gamma s_t`` (eq. (algu)),
   ``z^t = u^t - x^t`` (eq. (algz)), ``y^{t+1} = y^t - (g_t + lam (y^t - x^t)) / beta`` (eq. (algy)), and the same
   for ``x^{t+1}, u^{t+1}, z^{t+1}`` from ``(y^{t+1}, z^t)``.
2. **The inequalities** every problem of the class satisfies (each written ``lin . f + e' Q e <= 0``): ``G``
   ``L1``-smooth on the pair ``(y^t, y^{t+1})`` both ways (Taylor, Hendrickx, Glineur 2017, Thm 3.10), ``F`` on the
   pair ``(u^t, u^{t+1})`` both ways through its proximal step (any proper lsc ``F``: ``F(u_i) >= F(u_j) + <s_j, u_i -
   u_j> - ||u_i - u_j||^2 / (2 gamma)``; a closed convex ``F`` without the last term; an indicator with ``F = 0``).
3. **The identity**: with the certificate's multipliers ``mu_k >= 0``, rate ``rho > 0`` and potential ``V``
   (``paper``: ``V_t = a (G(y^t) + H(x^t, y^t)) + b M_t``, ``M_t`` of eq. (eq651); ``general``: ``V_t = a G(y^t)
   + b F(u^t) + xi_t' P xi_t``, ``xi_t = (y^t - z^{t-1}, g_t, s_t)``), the form ``D = V_{t+1} - V_t + rho S_t -
   sum_k mu_k (inequality k)`` (``S_t`` Theorem conv's measure ``||g_t + lam (y^t - u^t)||^2 + ||lam (u^t - y^t) +
   s_t||^2``) has no function values left (checked exactly, entry by entry).
4. **Definiteness**: ``-D`` positive semidefinite, by an exact ``LDL^T`` with symmetric pivoting
   (:func:`semidefinite`: a zero pivot needs its whole row zero).  Then for every problem of the class and every
   run, ``V_{t+1} - V_t + rho S_t = D(Gram) + sum_k mu_k (inequality k) <= 0``.  The null directions the file lists
   are checked to be null (``D n = 0``).
5. **The lower bound** (``general``): ``xi' P xi - b m(g_t, u^t - y^t) + (a - b) ||g_t||^2 / (2 L1)`` positive
   semidefinite over ``xi_t``, ``a >= b >= 0`` (so ``V_t >= b Phi^inf + (a - b) G^inf``; ``m(g, d) = (lam/2)||d||^2 -
   ||g - lam d||^2 / (2 (L1 + lam))``, the smooth upper bound of ``G`` minimised over its second point, and
   ``G^inf <= G(y) - ||g||^2 / (2 L1)``, Lemma Lip-lemma).  ``paper``: ``a, b >= 0`` (its numerator is Theorem
   conv's ``delta0 + M0'``).

Summing 3-4 over ``t < T`` proves ``min_{t<T} S_t <= (V_0 - inf_t V_t) / (rho T)``: :func:`check` returns what was
proven, or raises :class:`Malformed` (the file is no certificate: bad JSON, a non-rational string, a wrong shape,
a number too long) or :class:`NotProven` (a well-formed certificate whose numbers do not prove it: an identity off,
a sign wrong, a matrix not semidefinite; or numbers that prove a certificate but not the one written, their
``digest`` off), each with a one-line reason.
"""

from __future__ import annotations

import hashlib
import json
import re
from fractions import Fraction

#: ``kind`` and ``format`` of a certificate file (:mod:`stam.theory.worstcase.certificates` writes them)
KIND = "stam-lyapunov-certificate"
FORMAT = 1
#: the largest file read (bytes) and the most digits of a numerator or denominator
MAX_BYTES = 4_000_000
MAX_DIGITS = 4000
TEMPLATES = ("general", "paper")
F_CLASSES = ("lsc", "indicator", "convex")
#: the basis of one step (vectors, then function values) in the order of the file's null directions
BASIS = ("y^t - z^{t-1}", "g_t", "s_t", "g_{t+1}", "s_{t+1}")
VALUES = ("G(y^t)", "G(y^{t+1})", "F(u^t)", "F(u^{t+1})")
#: the four inequalities of step 2 of the module docstring, by the names the file's multipliers carry
INEQUALITIES = ("G(y^t+1) vs G(y^t)", "G(y^t) vs G(y^t+1)", "F(u^t+1) vs F(u^t)", "F(u^t) vs F(u^t+1)")
#: the keys of a file: required, and informative ones the check reads past
REQUIRED = ("kind", "format", "method", "template", "f_class", "parameters", "rho", "potential", "multipliers",
            "null_directions", "digest")
#: the keys whose values the ``digest`` covers (the mathematics of the certificate: every number)
DIGESTED = REQUIRED[:-1]
INFORMATIVE = ("claim", "float", "provenance", "basis", "values", "source", "numerator")
_RATIONAL = re.compile(r"-?(0|[1-9][0-9]*)(/[1-9][0-9]*)?")


class Malformed(ValueError):
    """The file is no certificate (one-line reason)."""


class NotProven(ValueError):
    """A well-formed certificate whose numbers do not prove the claim (one-line reason)."""


# --------------------------------------------------------------------------- strict reading
def rational(text, where: str) -> Fraction:
    """``"p"`` or ``"p/q"`` (decimal integers, ``q > 0``, no spaces, at most :data:`MAX_DIGITS` digits each) as a
    Fraction; anything else (a JSON number, a float's text, an expression) is :class:`Malformed`."""
    if not isinstance(text, str):
        raise Malformed(f"{where}: {_short(text)} is not a rational written as a string \"p\" or \"p/q\"")
    if len(text) > 2 * MAX_DIGITS + 2:
        raise Malformed(f"{where}: a number of {len(text)} characters, above the limit {2 * MAX_DIGITS + 2}")
    if not _RATIONAL.fullmatch(text):
        raise Malformed(f"{where}: {_short(text)} is not a rational \"p\" or \"p/q\" (decimal integers, q > 0)")
    num, _, den = text.partition("/")
    if max(len(num.lstrip("-")), len(den)) > MAX_DIGITS:
        raise Malformed(f"{where}: a number of more than {MAX_DIGITS} digits")
    return Fraction(int(num), int(den) if den else 1)


def _short(value) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _vector(value, n: int, where: str) -> list[Fraction]:
    if not isinstance(value, list) or len(value) != n:
        raise Malformed(f"{where}: not a list of {n} rationals")
    return [rational(v, f"{where}[{i}]") for i, v in enumerate(value)]


def _object(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise Malformed(f"{where}: not an object")
    return value


def _no_constant(pairs):
    """``json.loads``'s ``parse_constant``: NaN and Infinity are no JSON."""
    raise Malformed(f"{pairs} is not JSON")


def _unique_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise Malformed(f"a key appears twice in one object: {sorted(k for k in keys if keys.count(k) > 1)[0]!r}")
    return dict(pairs)


def load(text: str) -> dict:
    """The JSON object of ``text``, read strictly (size, no NaN, no key twice, an object); :class:`Malformed` else."""
    if len(text) > MAX_BYTES:
        raise Malformed(f"{len(text)} characters, above the limit {MAX_BYTES} of a certificate file")
    try:
        doc = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise Malformed(f"not JSON ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    return _object(doc, "the file")


def parse(text: str) -> dict:
    """The certificate of ``text`` (JSON) read strictly: its fields as exact numbers, every shape checked; raises
    :class:`Malformed` with a one-line reason."""
    doc = load(text)
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise Malformed(f"no {missing[0]!r} (a certificate has {', '.join(REQUIRED)})")
    extra = sorted(k for k in doc if k not in REQUIRED + INFORMATIVE)
    if extra:
        raise Malformed(f"unknown key {extra[0]!r}")
    if doc["kind"] != KIND or doc["format"] != FORMAT:
        raise Malformed(f"kind {_short(doc['kind'])} format {_short(doc['format'])}; this checker reads kind "
                        f"{KIND!r} format {FORMAT}")
    if doc["method"] != "STAM, full gradient":
        raise Malformed(f"method {_short(doc['method'])}; this checker proves 'STAM, full gradient'")
    if doc["template"] not in TEMPLATES:
        raise Malformed(f"template {_short(doc['template'])}; allowed: {', '.join(TEMPLATES)}")
    if doc["f_class"] not in F_CLASSES:
        raise Malformed(f"f_class {_short(doc['f_class'])}; allowed: {', '.join(F_CLASSES)}")
    prm = _object(doc["parameters"], "parameters")
    if sorted(prm) != ["L1", "beta", "gamma", "lam"]:
        raise Malformed("parameters: must be exactly lam, gamma, beta, L1")
    params = {k: rational(prm[k], f"parameters.{k}") for k in ("lam", "gamma", "beta", "L1")}
    bad = [k for k, v in params.items() if v <= 0]
    if bad:
        raise Malformed(f"parameters.{bad[0]} = {params[bad[0]]} must be > 0")
    pot = _object(doc["potential"], "potential")
    keys = ["P", "a", "b"] if doc["template"] == "general" else ["a", "b"]
    if sorted(pot) != keys:
        raise Malformed(f"potential: must be exactly {', '.join(keys)} for the {doc['template']} template")
    potential = {k: rational(pot[k], f"potential.{k}") for k in ("a", "b")}
    if doc["template"] == "general":
        if not isinstance(pot["P"], list) or len(pot["P"]) != 3:
            raise Malformed("potential.P: not a 3 x 3 matrix")
        P = [_vector(row, 3, f"potential.P[{i}]") for i, row in enumerate(pot["P"])]
        if any(P[i][j] != P[j][i] for i in range(3) for j in range(i)):
            raise Malformed("potential.P: not symmetric")
        potential["P"] = P
    mult = _object(doc["multipliers"], "multipliers")
    if sorted(mult) != sorted(INEQUALITIES):
        raise Malformed(f"multipliers: must be exactly {', '.join(INEQUALITIES)}")
    if not isinstance(doc["digest"], str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", doc["digest"]):
        raise Malformed("digest: not 'sha256:' and 64 hexadecimal digits")
    nulls = doc["null_directions"]
    if not isinstance(nulls, list) or len(nulls) > len(BASIS):
        raise Malformed(f"null_directions: not a list of at most {len(BASIS)} vectors")
    return {"template": doc["template"], "f_class": doc["f_class"], "params": params, "digest": doc["digest"],
            "digest_of_numbers": digest(doc),
            "rho": rational(doc["rho"], "rho"), "potential": potential,
            "mu": {k: rational(mult[k], f"multipliers[{k!r}]") for k in INEQUALITIES},
            "null": [_vector(v, len(BASIS), f"null_directions[{i}]") for i, v in enumerate(nulls)]}


def digest(doc: dict, keys=DIGESTED) -> str:
    """``sha256:`` of the canonical JSON of the certificate's mathematics (the keys :data:`DIGESTED`): a number
    altered in a file, even to another valid certificate (a smaller ``rho`` is one), no longer matches the digest
    written with it.  It is integrity, not authentication: whoever alters a file can write a new digest, and then the
    proof (:func:`check`) is what stands."""
    canon = json.dumps({k: doc[k] for k in keys}, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canon.encode("ascii")).hexdigest()


# --------------------------------------------------------------------------- exact forms
_NB, _NV = len(BASIS), len(VALUES)


def _unit(i: int, n: int) -> list[Fraction]:
    return [Fraction(int(j == i)) for j in range(n)]


def _add(*vs):
    return [sum(col, Fraction(0)) for col in zip(*vs)]


def _mul(c, v):
    return [c * e for e in v]


def _sym(a, b):
    """The matrix of ``<a, b>`` (symmetric)."""
    return [[(a[i] * b[j] + b[i] * a[j]) / 2 for j in range(len(b))] for i in range(len(a))]


def _madd(*ms):
    n = len(ms[0])
    return [[sum((m[i][j] for m in ms), Fraction(0)) for j in range(n)] for i in range(n)]


def _mmul(c, m):
    return [[c * e for e in row] for row in m]


def _sq(a):
    return _sym(a, a)


def _step(lam, gamma, beta):
    """Step 1 of the module docstring: the iterates at t and t+1 over the basis."""
    w, g0, s0, g1, s1 = (_unit(i, _NB) for i in range(_NB))
    zero = [Fraction(0)] * _NB
    c = 1 / (1 + gamma * lam)

    def x_step(y, z):  # eq. (algx): argmin_x (lam/2)|x - y|^2 + |x - z|^2 / (2 gamma)
        return _mul(c, _add(z, _mul(gamma * lam, y)))

    y0, zm = w, zero
    x0 = x_step(y0, zm)
    u0 = _add(_mul(2, x0), _mul(-1, zm), _mul(-gamma, s0))
    z0 = _add(zm, u0, _mul(-1, x0))
    y1 = _add(y0, _mul(-1 / beta, _add(g0, _mul(lam, _add(y0, _mul(-1, x0))))))  # eq. (algy)
    x1 = x_step(y1, z0)
    u1 = _add(_mul(2, x1), _mul(-1, z0), _mul(-gamma, s1))
    z1 = _add(z0, u1, _mul(-1, x1))
    return dict(w=w, g0=g0, s0=s0, g1=g1, s1=s1, y0=y0, x0=x0, u0=u0, z0=z0, zm=zm, y1=y1, x1=x1, u1=u1, z1=z1)


def _inequalities(it, params, f_class):
    """Step 2 of the module docstring: ``{name: (lin, Q)}`` with ``lin . f + e' Q e <= 0`` for the class."""
    gamma, L1 = params["gamma"], params["L1"]
    G0, G1, F0, F1 = (_unit(i, _NV) for i in range(_NV))
    if f_class == "indicator":
        F0 = F1 = [Fraction(0)] * _NV

    def smooth(yi, gi, fi, yj, gj, fj):  # f_i - f_j >= -(L/4)|yi-yj|^2 + <gi+gj, yi-yj>/2 + |gi-gj|^2/(4L)
        dy, dg = _add(yi, _mul(-1, yj)), _add(gi, _mul(-1, gj))
        Q = _madd(_mmul(-L1 / 4, _sq(dy)), _mmul(Fraction(1, 2), _sym(_add(gi, gj), dy)), _mmul(1 / (4 * L1), _sq(dg)))
        return _add(fj, _mul(-1, fi)), Q

    def prox(ui, si, fi, uj, sj, fj):  # F(u_i) >= F(u_j) + <s_j, u_i - u_j> [- |u_i - u_j|^2 / (2 gamma)]
        du = _add(ui, _mul(-1, uj))
        Q = _sym(sj, du)
        if f_class != "convex":
            Q = _madd(Q, _mmul(-1 / (2 * gamma), _sq(du)))
        return _add(fj, _mul(-1, fi)), Q

    return {INEQUALITIES[0]: smooth(it["y1"], it["g1"], G1, it["y0"], it["g0"], G0),
            INEQUALITIES[1]: smooth(it["y0"], it["g0"], G0, it["y1"], it["g1"], G1),
            INEQUALITIES[2]: prox(it["u1"], it["s1"], F1, it["u0"], it["s0"], F0),
            INEQUALITIES[3]: prox(it["u0"], it["s0"], F0, it["u1"], it["s1"], F1)}


def _potential_change(it, cert):
    """``V_{t+1} - V_t`` as ``(lin, Q)`` (step 3 of the module docstring)."""
    lam, gamma = cert["params"]["lam"], cert["params"]["gamma"]
    a, b = cert["potential"]["a"], cert["potential"]["b"]
    G0, G1, F0, F1 = (_unit(i, _NV) for i in range(_NV))
    if cert["f_class"] == "indicator":
        F0 = F1 = [Fraction(0)] * _NV
    lin = _add(_mul(a, _add(G1, _mul(-1, G0))), _mul(b, _add(F1, _mul(-1, F0))))
    if cert["template"] == "paper":
        def H(x, y):  # (lam/2)|x - y|^2
            return _mmul(lam / 2, _sq(_add(x, _mul(-1, y))))

        def M(x, u, z):  # eq. (eq651) without F(u)
            return _madd(_mmul(1 / (2 * gamma), _sq(_add(_mul(2, x), _mul(-1, u), _mul(-1, z)))),
                         _mmul(-1 / (2 * gamma), _sq(_add(x, _mul(-1, z)))),
                         _mmul(-1 / gamma, _sq(_add(u, _mul(-1, x)))))

        Q = _madd(_mmul(a, H(it["x1"], it["y1"])), _mmul(-a, H(it["x0"], it["y0"])),
                  _mmul(b, M(it["x1"], it["u1"], it["z1"])), _mmul(-b, M(it["x0"], it["u0"], it["z0"])))
        return lin, Q
    P = cert["potential"]["P"]
    xi0 = [_add(it["y0"], _mul(-1, it["zm"])), it["g0"], it["s0"]]
    xi1 = [_add(it["y1"], _mul(-1, it["z0"])), it["g1"], it["s1"]]
    Q = _madd(*[_mmul(P[i][j], _madd(_sym(xi1[i], xi1[j]), _mmul(-1, _sym(xi0[i], xi0[j]))))
                for i in range(3) for j in range(3)])
    return lin, Q


def decrease_form(cert: dict):
    """``(lin, D)`` of step 3 of the module docstring, exact: ``D = V_{t+1} - V_t + rho S_t - sum_k mu_k
    (inequality k)`` over the basis and its function values ``lin``."""
    p = cert["params"]
    it = _step(p["lam"], p["gamma"], p["beta"])
    lam = p["lam"]
    d = _add(it["u0"], _mul(-1, it["y0"]))
    S = _madd(_sq(_add(it["g0"], _mul(-lam, d))), _sq(_add(_mul(lam, d), it["s0"])))  # Theorem conv's S_t
    lin, Q = _potential_change(it, cert)
    D = _madd(Q, _mmul(cert["rho"], S))
    for name, (l_k, Q_k) in _inequalities(it, p, cert["f_class"]).items():
        lin = _add(lin, _mul(-cert["mu"][name], l_k))
        D = _madd(D, _mmul(-cert["mu"][name], Q_k))
    return lin, D


def lower_bound_form(cert: dict):
    """Step 5 of the module docstring (``general``): the 3 x 3 form over ``xi_t`` that must be semidefinite."""
    p, P = cert["params"], cert["potential"]["P"]
    lam, L1, a, b = p["lam"], p["L1"], cert["potential"]["a"], cert["potential"]["b"]
    it = _step(p["lam"], p["gamma"], p["beta"])
    d = _add(it["u0"], _mul(-1, it["y0"]))[:3]
    g = it["g0"][:3]
    m = _madd(_mmul(lam / 2, _sq(d)), _mmul(-1 / (2 * (L1 + lam)), _sq(_add(g, _mul(-lam, d)))))
    return _madd(P, _mmul(-b, m), _mmul((a - b) / (2 * L1), _sq(g)))


def semidefinite(M) -> str | None:
    """None when the symmetric matrix ``M`` (Fractions) is positive semidefinite, else why not; exact ``LDL^T`` with
    symmetric pivoting: a positive diagonal pivot is eliminated (its Schur complement must be semidefinite), and
    when no diagonal entry left is positive, every entry left must be zero (a zero diagonal entry of a semidefinite
    matrix has a zero row)."""
    a = [list(row) for row in M]
    n = len(a)
    if any(a[i][j] != a[j][i] for i in range(n) for j in range(i)):
        return "not symmetric"
    left = list(range(n))
    while left:
        k = next((i for i in left if a[i][i] > 0), None)
        if k is None:
            neg = [i for i in left if a[i][i] < 0]
            if neg:
                return f"pivot {neg[0]} is negative ({float(a[neg[0]][neg[0]]):.3g})"
            off = [(i, j) for i in left for j in left if a[i][j] != 0]
            return None if not off else f"pivot {off[0][0]} is zero with a nonzero row"
        left.remove(k)
        for i in left:
            if a[i][k]:
                f = a[i][k] / a[k][k]
                for j in left:
                    if a[k][j]:
                        a[i][j] -= f * a[k][j]
    return None


def check(text: str) -> dict:
    """Prove the certificate of ``text`` (the module docstring's steps): returns what was proven (``template``,
    ``f_class``, the exact ``params``, ``rho``, the potential, the number of null directions), or raises
    :class:`Malformed` / :class:`NotProven` with a one-line reason."""
    cert = parse(text)
    rho, a, b = cert["rho"], cert["potential"]["a"], cert["potential"]["b"]
    if not rho > 0:
        raise NotProven(f"rho = {rho} is not positive")
    neg = [k for k, v in cert["mu"].items() if v < 0]
    if neg:
        raise NotProven(f"the multiplier of {neg[0]!r} is negative")
    if a < 0 or b < 0 or (cert["template"] == "general" and a < b):
        raise NotProven(f"the potential's weights a = {float(a):.6g}, b = {float(b):.6g} are not "
                        + ("a >= b >= 0" if cert["template"] == "general" else ">= 0"))
    lin, D = decrease_form(cert)
    off = [VALUES[i] for i, v in enumerate(lin) if v != 0]
    if off:
        raise NotProven(f"the function values do not cancel: {off[0]} is left with the weight {float(lin[VALUES.index(off[0])]):.3g}")
    for i, n in enumerate(cert["null"]):
        if not any(n):
            raise NotProven(f"null direction {i} is zero")
        if any(sum((r * e for r, e in zip(row, n)), Fraction(0)) != 0 for row in D):
            raise NotProven(f"null direction {i} is not null: D n != 0")
    why = semidefinite(_mmul(-1, D))
    if why is not None:
        raise NotProven(f"V_(t+1) - V_t + rho S_t - sum mu (inequalities) is not negative semidefinite ({why})")
    if cert["template"] == "general":
        why = semidefinite(lower_bound_form(cert))
        if why is not None:
            raise NotProven(f"the lower bound V_t >= b Phi^inf + (a - b) G^inf fails: its form is not semidefinite ({why})")
    if cert["digest"] != cert["digest_of_numbers"]:
        raise NotProven("the numbers prove a certificate, but not the one written: they do not match the file's "
                        "digest (the file was altered after it was written)")
    return {"template": cert["template"], "f_class": cert["f_class"], "params": cert["params"], "rho": rho,
            "potential": cert["potential"], "mu": cert["mu"], "null": len(cert["null"])}


__all__ = ["KIND", "FORMAT", "MAX_BYTES", "MAX_DIGITS", "BASIS", "VALUES", "INEQUALITIES", "DIGESTED", "Malformed",
           "NotProven", "rational", "load", "parse", "digest", "decrease_form", "lower_bound_form", "semidefinite", "check"]
