"""Certificates as artifacts (issue 59): a proven Lyapunov certificate of STAM written as a small JSON file of exact
rationals, for anyone to check without a solver (``stam pep --check FILE``, the independent checker
:mod:`stam.theory.worstcase.certcheck`).

:func:`certify_point` (``stam pep --certify``) certifies one point ``(lam, gamma, beta)`` with
:func:`stam.theory.worstcase.lyapunov.certify_stam`, the proof made at the exact rationals given (``"0.1"`` is ``1/10``), and
:func:`document` turns the exact proof (:func:`stam.theory.worstcase.sdpproof.prove`: the point ``x`` of the SDP's variables,
projected exactly onto the identities, its null directions) into the file's fields: the parameters, ``rho``, the
potential's weights ``a``, ``b`` and (general template) ``P``, the multiplier of every interpolation inequality, the
null directions over the checker's basis, and the claim in words.  :func:`write` writes it atomically.
:func:`region_certificates` certifies again the last certified point of every bracket of a region
(``stam pep --region``) and writes its certificate beside the result.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

from stam.errors import UsageError, require
from stam.io import atomic_write_text, dumps, provenance
from stam.theory.worstcase.certcheck import BASIS, FORMAT, INEQUALITIES, KIND, VALUES, digest
from stam.theory.worstcase.lyapunov import certify_stam
from stam.theory.worstcase.sdp import forms
from stam.theory.settings import ProblemClass


def exact_decimal(value, name: str) -> Fraction:
    """The exact rational of a decimal the user typed (``"0.1"`` -> ``1/10``; a float: its shortest decimal form),
    finite and ``> 0``; else a usage error naming it."""
    try:
        q = Fraction(str(value)) if not isinstance(value, Fraction) else value
    except (ValueError, ZeroDivisionError):
        raise UsageError(f"--{name} {value}: not a finite decimal number") from None
    require(q > 0, f"--{name} {value} must be > 0")
    return q


def text(q) -> str:
    """A rational as the file writes it: ``"p"`` or ``"p/q"``."""
    q = Fraction(q)
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


def document(cert, template: str, f_class: str) -> dict:
    """The certificate file of a proven full-gradient certificate ``cert`` (:func:`certify_stam`'s, with
    ``cert.proof``): every number an exact rational (:func:`text`)."""
    proof = cert.proof
    require(proof is not None, "no proven certificate to write")
    step, x, free_P = proof["step"], proof["x"], proof["free_P"]
    _, _, names, pairs, k, _ = forms(step, free_P)
    interp = [c.name for c in step.interp]
    require(tuple(interp) == INEQUALITIES and step.basis.nb == len(BASIS) and step.basis.nv == len(VALUES),
            "only full-gradient certificates are written as files")
    pieces = {p.name: x[1 + i] for i, p in enumerate(step.pieces)}
    mu = x[1 + len(step.pieces): 1 + len(step.pieces) + len(interp)]
    potential = {"a": text(pieces["a"]), "b": text(pieces["b"])}
    if free_P:
        P = [[Fraction(0)] * k for _ in range(k)]
        for (i, j), v in zip(pairs, x[len(names) - len(pairs):]):
            P[i][j] = P[j][i] = v
        potential["P"] = [[text(v) for v in row] for row in P]
    lam, gamma, beta, L1 = (proof["params"][n] for n in ("lam", "gamma", "beta", "L1"))
    rho = x[0]
    numerator = ("V_0 - b Phi^inf - (a - b) G^inf, V_0 = a G(y^0) + b F(u^0) + xi_0' P xi_0, "
                 "xi_0 = (y^0 - z^{-1}, grad G(y^0), s_0)" if free_P else
                 "delta0 + M0'_T (Theorem conv's numerator: V = a (G + H) + b M_t)")
    doc = {
        "kind": KIND, "format": FORMAT, "method": "STAM, full gradient", "template": template, "f_class": f_class,
        "parameters": {"lam": text(lam), "gamma": text(gamma), "beta": text(beta), "L1": text(L1)},
        "rho": text(rho), "potential": potential,
        "multipliers": {name: text(v) for name, v in zip(interp, mu)},
        "null_directions": [[text(v) for v in n] for n in proof["null"]],
        "basis": list(BASIS), "values": list(VALUES),
        "claim": (f"for every L1-smooth G bounded below and F of class {f_class!r} bounded below, every run of STAM "
                  f"(full gradient) has V_(t+1) - V_t + rho S_t <= 0, so min_(t<T) S_t <= ({numerator}) / (rho T)"),
        "numerator": numerator,
        "float": {"rho": float(rho), "1/rho": float(1 / rho), "gamma*lam": float(gamma * lam),
                  "c_beta": float(1 - lam / (2 * beta - L1)) if 2 * beta > L1 else None},
        "source": {"solver": cert.solver, "status": cert.status, "solver_rho": cert.details.get("solver_rho")},
        "provenance": provenance(),
    }
    doc["digest"] = digest(doc)
    return doc


def certify_point(lam, gamma, beta, L1=1, template: str = "general", f_class: str = "lsc", solver=None):
    """Certify STAM (full gradient) at one point, the proof at the exact rationals of the decimals given: returns
    ``(cert, document or None)`` (None: no proven certificate; ``cert`` says why)."""
    at = tuple(exact_decimal(v, n) for v, n in ((lam, "lam"), (gamma, "gamma"), (beta, "beta"), (L1, "L1")))
    cert = certify_stam(float(at[0]), float(at[1]), float(at[2]), template=template,
                        problem=ProblemClass(float(at[3]), f_class), solver=solver, at=at)
    if cert.proof is None:
        return cert, None
    return cert, document(cert, template, f_class)


def family_document(lam, gamma, beta, L1=1) -> dict:
    """The certificate file of the closed-form family (:mod:`stam.theory.worstcase.family`) at one point (the decimals given as
    exact rationals; ``rho`` its rational rate ``c q / (2 e)``), for the independent checker: the theorem's instance,
    written without a solver."""
    from stam.theory.worstcase import family

    at = [exact_decimal(v, n) for v, n in ((lam, "lam"), (gamma, "gamma"), (beta, "beta"), (L1, "L1"))]
    require(2 * at[2] > at[3] + at[0] and 0 < at[0] * at[1] < 1,
            "the family needs 2 beta > L1 + lam and 0 < gamma*lam < 1")
    inst = family.instance(*at)
    require(inst["rho"] > 0, f"gamma*lam = {float(at[0] * at[1]):.6g} is beyond the family's reach c_DR")
    p = inst["params"]
    c = p["gamma"] * p["lam"]
    doc = {"kind": KIND, "format": FORMAT, "method": "STAM, full gradient", "template": "general", "f_class": "lsc",
           "parameters": {k: text(p[k]) for k in ("lam", "gamma", "beta", "L1")}, "rho": text(inst["rho"]),
           "potential": {"a": "1", "b": "1", "P": [[text(v) for v in row] for row in inst["potential"]["P"]]},
           "multipliers": {k: text(v) for k, v in inst["mu"].items()},
           "null_directions": [[text(v) for v in ((1 + c) / p["lam"], -1, 1, -1, 1)], ["0", "0", "0", "0", "1"]],
           "basis": list(BASIS), "values": list(VALUES),
           "claim": "an instance of the closed-form DR-envelope family (stam pep --family), rho = c q / (2 e)",
           "numerator": "V_0 - Phi^inf, V_0 = G(y^0) + F(u^0) + P11 |y^0 - z^{-1}|^2 + (gamma/2)|s_0|^2",
           "float": {"rho": float(inst["rho"]), "1/rho": float(1 / inst["rho"]), "gamma*lam": float(c),
                     "c_beta": float(1 - p["lam"] / (2 * p["beta"] - p["L1"]))},
           "source": {"solver": None, "status": "closed form", "solver_rho": None}, "provenance": provenance()}
    doc["digest"] = digest(doc)
    return doc


def _piece_sdp(forms, c0: float, solver=None):
    """The constants of a piece at ``c = c0`` (:func:`stam.theory.worstcase.family.slice_forms`): the largest rate, then, at
    0.7 of it, the point with the largest margin of ``M`` and ``W`` (so that it holds on an interval around ``c0``);
    floats, or None."""
    import cvxpy as cp
    import numpy as np
    import sympy as sp

    from stam.theory.worstcase import family

    M, W, syms = forms
    f = sp.lambdify([family.c, *syms], [M, W], "numpy")
    zero = [0.0] * len(syms)
    base = [np.array(m, dtype=float) for m in f(c0, *zero)]
    parts = [[np.array(m, dtype=float) - b for m, b in zip(f(c0, *[float(i == j) for j in range(len(syms))]), base)]
             for i in range(len(syms))]
    x, t = cp.Variable(len(syms)), cp.Variable()

    def forms_at(k):
        A = base[k] + sum(x[i] * parts[i][k] for i in range(len(syms)))
        return (A + A.T) / 2

    signs = [x[3] >= 0, x[4] >= 0, cp.abs(x) <= 1e4]
    best = cp.Problem(cp.Maximize(x[5]), signs + [forms_at(0) >> 0, forms_at(1) >> 0])
    best.solve(solver=solver or "CLARABEL")
    if best.status != "optimal" or x.value is None or x.value[5] <= 0:
        return None
    rate = 0.7 * float(x.value[5])
    inner = cp.Problem(cp.Maximize(t), signs + [x[5] == rate, t <= 1, forms_at(0) >> t * np.eye(4), forms_at(1) >> t * np.eye(2)])
    inner.solve(solver=solver or "CLARABEL")
    return None if inner.status != "optimal" or x.value is None else [float(v) for v in x.value]


def certify_slice(lam, gamma, beta, L1=1, solver=None) -> dict:
    """A slice certificate (``stam pep --certify --slice``): at ``(lam, beta, L1)`` every ``gamma lam`` up to the
    ``gamma`` given, ``(0, c_DR)`` by the theorem of :mod:`stam.theory.worstcase.family` and the rest by pieces of constant
    certificates (:func:`stam.theory.worstcase.family.prove_piece`, each proven for its whole interval) from ``0.97 c_DR`` up,
    each found at a point ``c0`` by an SDP (:func:`_piece_sdp`) and stretched to the nearest sign change of its
    minors.  Raises a usage error where no piece is found (at or beyond ``c_beta`` nothing is certified)."""
    import sympy as sp

    from stam.theory.worstcase import family

    at = [exact_decimal(v, n) for v, n in ((lam, "lam"), (gamma, "gamma"), (beta, "beta"), (L1, "L1"))]
    lam_q, gamma_q, beta_q, L1_q = at
    require(2 * beta_q > L1_q + lam_q, f"--beta {beta}: a slice needs 2 beta > L1 + lam")
    sub = {family.lam: sp.Rational(lam_q), family.beta: sp.Rational(beta_q), family.L1: sp.Rational(L1_q)}
    c_beta = Fraction(str(sp.Rational(family.C_BETA.subs(sub))))
    top = gamma_q * lam_q
    require(top < c_beta, f"--gamma {gamma}: gamma*lam = {float(top):.6g} is not below c_beta = {float(c_beta):.6g} "
            "(nothing is certified there)")
    forms = family.slice_forms(lam_q, beta_q, L1_q)
    end = Fraction(float(family.C_DR.subs(sub)) * 0.97).limit_denominator(10**6)
    pieces = []
    while end < top and len(pieces) < 200:
        piece = _stretch(forms, end, top, float(c_beta), solver)
        require(piece is not None, f"no certificate piece found above gamma*lam = {float(end):.9g} (the solver's "
                "accuracy near c_beta); give a smaller --gamma")
        pieces.append(piece)
        end = Fraction(piece["to"])
    doc = {"kind": family.SLICE_KIND, "format": 1, "method": "STAM, full gradient", "f_class": "lsc",
           "parameters": {"lam": text(lam_q), "beta": text(beta_q), "L1": text(L1_q)}, "gamma_lam_max": text(top),
           "pieces": pieces}
    doc["digest"] = digest(doc, family.SLICE_KEYS[:-1])
    return doc


def _stretch(forms, end: Fraction, top: Fraction, c_beta: float, solver):
    """The next piece of :func:`certify_slice`: from ``end`` as far as its constants hold (up to ``top``), proven."""
    import sympy as sp

    from stam.theory.worstcase import family

    step = (c_beta - float(end)) * 0.5
    for _ in range(12):
        c0 = float(end) + step
        step /= 2
        values = _piece_sdp(forms, min(c0, float(top)), solver)
        if values is None:
            continue
        q = [Fraction(v).limit_denominator(10**6) for v in values]
        q[3], q[4] = max(q[3], Fraction(0)), max(q[4], Fraction(0))
        exact = [sp.Rational(v.numerator, v.denominator) for v in q]
        hi = Fraction(top)
        for m in family.piece_minors(forms, exact):
            for part in sp.fraction(m):
                poly = sp.Poly(part, family.c)
                if poly.degree() > 0:
                    roots = [float(r) for r in poly.real_roots() if float(r) >= c0]
                    if roots:
                        hi = min(hi, Fraction(min(roots) - (min(roots) - c0) / 1000).limit_denominator(10**9))
        if hi <= end:
            continue
        if family.prove_piece(forms, sp.Rational(end.numerator, end.denominator), sp.Rational(hi.numerator, hi.denominator),
                              exact) is None:
            return {"from": text(end), "to": text(hi), **{k: text(v) for k, v in zip(family.PIECE_KEYS, q)}}
    return None


def write(doc: dict, path) -> Path:
    """Write a certificate file atomically."""
    return atomic_write_text(path, dumps(doc) + "\n")


def file_name(doc: dict) -> str:
    """A certificate's file name: ``<template>-<F>-lam<..>-gamma<..>-beta<..>.json`` (the parameters as short
    decimals)."""
    p = doc["parameters"]
    short = lambda s: f"{float(Fraction(s)):.6g}"  # noqa: E731
    L1 = "" if p["L1"] == "1" else f"-L1{short(p['L1'])}"
    return f"{doc['template']}-{doc['f_class']}-lam{short(p['lam'])}-gamma{short(p['gamma'])}-beta{short(p['beta'])}{L1}.json"


def region_certificates(result: dict, folder, solver: str | None = None) -> list[str]:
    """Certify again the last certified point of every full-gradient bracket of a ``lyapunov-region`` result
    (``lo`` at its ``beta``, each template, each class of F searched) and write its certificate into ``folder``;
    returns the paths written (a point whose certificate is not proven again is skipped: the region's proof was
    made at the float, this one at its decimal); ``solver``: the region's."""
    folder = Path(folder)
    paths = []
    for row in result["rows"]:
        parts = [(result["f_class"], row)] + [(cls, row[cls]) for cls in ("convex",) if cls in row]
        for f_class, part in parts:
            for template in ("general", "paper"):
                b = part.get(template) or {}
                if b.get("lo") is None or b.get("beta") is None or not math.isfinite(b["lo"]):
                    continue
                _, doc = certify_point(repr(row["lam"]), repr(b["lo"]), repr(b["beta"]), repr(result["L1"]),
                                       template, f_class, solver)
                if doc is not None:
                    paths.append(str(write(doc, folder / file_name(doc))))
    return paths


__all__ = ["exact_decimal", "text", "document", "family_document", "certify_slice", "certify_point", "write", "file_name",
           "region_certificates"]
