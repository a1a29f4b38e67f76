"""One step of a method as the data of a Lyapunov SDP (:mod:`stam.theory.worstcase.lyapunov`): vectors and function values
as coefficient vectors over a basis (:class:`Basis`, floats or exact rationals), inner products as matrices
(:func:`inner`, :func:`sq`, :func:`scaled`), the interpolation inequalities of the function classes
(:func:`smooth_pair`, :func:`convex_pair`, :func:`prox_pair`), and what the SDP needs of one step
(:class:`Piece`, :class:`OneStep`).  The steps themselves are built in :mod:`stam.theory.worstcase.templates`; the SDP is
:mod:`stam.theory.worstcase.sdp`."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from stam.theory.worstcase.pep import check_f_class


class Basis:
    """Coefficient vectors: a vector of the method is a linear combination of ``nb`` basis vectors,
    a function value one of ``nv`` basis values; inner products become ``nb x nb`` matrices."""

    def __init__(self, nb: int, nv: int, exact: bool = False):
        self.nb, self.nv, self.exact = nb, nv, exact

    def zeros(self, shape) -> np.ndarray:
        """Zeros of floats, or (``exact``) an object array of the int 0, whose other entries are
        :class:`fractions.Fraction` objects: then every form built from the basis is exact rational arithmetic (no float
        enters: a float zero would turn a sum into a float; scalars are applied through :func:`scaled`, never as an
        int divided by an int)."""
        return np.zeros(shape, dtype=object) if self.exact else np.zeros(shape)  # exact: int 0, fast and exact

    def one(self):
        return Fraction(1) if self.exact else 1.0

    def vec(self, i: int) -> np.ndarray:
        e = self.zeros(self.nb)
        e[i] = self.one()
        return e

    def val(self, i: int) -> np.ndarray:
        e = self.zeros(self.nv)
        e[i] = self.one()
        return e

    def zero(self) -> np.ndarray:
        return self.zeros(self.nb)


_HALF = Fraction(1, 2)


def _outer_exact(a: np.ndarray, b: np.ndarray, half: bool) -> np.ndarray:
    """``a b'`` (``half``: ``(a b' + b a')/2``) of exact vectors (object arrays of Fractions and int zeros), over their
    nonzero entries only (the coefficient vectors are sparse, and Fraction arithmetic on zeros is what costs)."""
    out = np.zeros((len(a), len(b)), dtype=object)
    ia, ib = [i for i, v in enumerate(a) if v], [j for j, v in enumerate(b) if v]
    for i in ia:
        for j in ib:
            if half:
                h = a[i] * b[j] * _HALF
                out[i, j] += h
                out[j, i] += h
            else:
                out[i, j] = a[i] * b[j] * 1
    return out


def scaled(M: np.ndarray, c=None, div=None) -> np.ndarray:
    """``(c * M) / div`` (either may be None): on floats exactly that expression; on exact arrays (object) entry by
    entry over the nonzero entries only, as Fractions (an int divided by an int would be a float)."""
    if M.dtype != object:
        out = M if c is None else c * M
        return out if div is None else out / div
    out = np.zeros(M.shape, dtype=object)
    flat, res = M.ravel(), out.ravel()
    for i in np.flatnonzero(flat):
        q = flat[i] if c is None else flat[i] * c
        res[i] = (q if isinstance(q, Fraction) else Fraction(q)) / div if div is not None else q
    return out


def inner(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The symmetric matrix ``Q`` with ``<a, b> = e' Q e`` (``a, b`` coefficient vectors)."""
    if a.dtype == object:
        return _outer_exact(a, b, True)
    o = np.outer(a, b)
    return (o + o.T) / 2


def sq(a: np.ndarray) -> np.ndarray:
    """``||a||^2`` as a matrix."""
    return _outer_exact(a, a, False) if a.dtype == object else np.outer(a, a)


@dataclass
class Interp:
    """One interpolation inequality ``lin . f + e' quad e <= 0``."""

    name: str
    lin: np.ndarray
    quad: np.ndarray


def smooth_pair(L: float, xi, gi, fi, xj, gj, fj, name: str) -> Interp:
    """``L``-smooth (not necessarily convex) interpolation, Taylor et al. 2017 Thm 3.10 (PEPit's
    ``SmoothFunction``): ``f_i - f_j >= -(L/4)||x_i - x_j||^2 + <g_i + g_j, x_i - x_j>/2 +
    ||g_i - g_j||^2 / (4L)``, written as ``<= 0``."""
    quad = scaled(sq(xi - xj), -(L / 4)) + scaled(inner(gi + gj, xi - xj), div=2) + scaled(sq(gi - gj), div=4 * L)
    return Interp(name, fj - fi, quad)


def convex_pair(xi, si, fi, xj, sj, fj, name: str) -> Interp:
    """Convex interpolation ``F(x_i) >= F(x_j) + <s_j, x_i - x_j>``, written as ``<= 0``."""
    return Interp(name, fj - fi, inner(sj, xi - xj))


def prox_pair(gamma: float, xi, si, fi, xj, sj, fj, name: str) -> Interp:
    """A proper lsc (possibly nonconvex) ``F`` seen through proximal steps of size ``gamma``
    (``s_j = (v_j - x_j)/gamma``, ``x_j = prox_{gamma F}(v_j)``): the exact interpolation condition
    ``F_j + ||x_j - v_j||^2/(2 gamma) <= F_i + ||x_i - v_j||^2/(2 gamma)``, i.e.
    ``F(x_i) >= F(x_j) + <s_j, x_i - x_j> - ||x_i - x_j||^2/(2 gamma)`` (issue 22; :mod:`stam.theory.worstcase.pep`),
    written as ``<= 0``.  It is :func:`convex_pair` with the curvature ``1/gamma`` allowed."""
    return Interp(name, fj - fi, inner(sj, xi - xj) - scaled(sq(xi - xj), div=2 * gamma))


def f_pair(f_class: str, gamma: float):
    """The interpolation inequality of ``F``'s class (``"convex"``, ``"lsc"``, ``"indicator"``; for an
    indicator the values are zero, which the callers impose by giving ``F`` no value basis)."""
    check_f_class(f_class)
    if f_class == "convex":
        return convex_pair
    return lambda *args: prox_pair(gamma, *args)


@dataclass
class Piece:
    """A term of a potential: ``lin . f + e' quad e`` at time t and at time t+1."""

    name: str
    lin_t: np.ndarray
    quad_t: np.ndarray
    lin_t1: np.ndarray
    quad_t1: np.ndarray


@dataclass
class OneStep:
    """Everything the SDP needs about one step of a method: the interpolation inequalities, the
    weighted pieces of the potential (``V = sum_i theta_i piece_i + xi' P xi``), the state vectors
    ``xi_t`` and ``xi_{t+1}`` (rows, for the free quadratic form), the measure ``S_t`` and, for the
    lower bound, the forms ``low[name]`` with ``V_t - (lower bound) = sum_i theta_i low_i + xi' P xi``."""

    basis: Basis
    interp: list[Interp]
    pieces: list[Piece]
    S: np.ndarray
    xi_t: np.ndarray | None = None
    xi_t1: np.ndarray | None = None
    low: dict | None = None  # piece name -> matrix over the time-t basis
    note: str = ""
    growth: tuple | None = None  # (lin, quad, cap) of D_t: E V_{t+1} - V_t + rho S_t <= kappa D_t, kappa <= cap rho
    fixed: np.ndarray | None = None  # rows whose common null space is the method's fixed points (:func:`stam.theory.worstcase.sdp._null_space`)


__all__ = ["Basis", "scaled", "inner", "sq", "Interp", "smooth_pair", "convex_pair", "prox_pair", "f_pair", "Piece",
           "OneStep"]
