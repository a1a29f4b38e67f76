"""The settings that the worst cases and the certificates of STAM share, each one frozen dataclass declared
once (issue 38, point 4: a typed object where a function took the same group of keywords as its neighbours):

- :class:`ProblemClass`: the class of problems a PEP (:func:`stam.theory.worstcase.pep.stam_pep`) or a Lyapunov SDP
  (:func:`stam.theory.worstcase.lyapunov.certify_stam`, :func:`stam.theory.worstcase.history.certify_history`) is over: ``G``
  ``L1``-smooth (Assumption ass2 (a1)), ``G = (1/N) sum_i G_i`` with b-nice minibatches (``N = b = 1``: the full
  gradient), ``F`` of ``f_class`` reached through its proximal step eq. (algu), ``H = (lam/2)||x - y||^2``;
- :class:`SdpOptions`: how a Lyapunov SDP is solved and counted (the solver, its options, the smallest rate);
- :class:`GammaScan`: where :func:`stam.theory.worstcase.lyapunov.certified_gamma` searches gamma (the range, the scan's
  ratio, the bisection's tolerance);
- :class:`Bisection`: the bisection in ``gamma*lam`` of :func:`stam.theory.worstcase.onset.onset_by_horizon` and
  :func:`stam.theory.worstcase.history.history_reach` (at ``lam``, ``G`` ``L1``-smooth, on ``[lo, hi]`` to ``tol``).

A function that takes one of them takes its fields by keyword too (the keyword form of before:
``stam_pep(lam, gamma, beta, T, L1=2.0, f_class="convex")`` is ``stam_pep(lam, gamma, beta, T,
problem=ProblemClass(L1=2.0, f_class="convex"))``): :meth:`Settings.of` sets them on the object given (or on the
defaults), :func:`no_other` refuses a name that is none of its fields, as Python does.  Imports nothing heavy.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from stam.theory.params import DEFAULT_F_CLASS, REGION_GAMMA_RANGE, REGION_RTOL, SCAN_RATIO


class Settings:
    """The base of the settings of this module: :meth:`of`."""

    @classmethod
    def of(cls, given, fields: dict):
        """``given`` (an instance of the class, or None: its defaults) with the entries of ``fields`` that name one
        of its fields set; those entries are taken out of ``fields`` (the rest belong to another setting)."""
        names = {f.name for f in dataclasses.fields(cls)}
        mine = {k: fields.pop(k) for k in [k for k in fields if k in names]}
        base = cls() if given is None else given
        if not isinstance(base, cls):
            raise TypeError(f"{base!r} is not a {cls.__name__}")
        return dataclasses.replace(base, **mine) if mine else base


def no_other(fields: dict, where: str) -> None:
    """A keyword left in ``fields`` is none of the settings' fields: the ``TypeError`` Python raises for it."""
    if fields:
        raise TypeError(f"{where}() got an unexpected keyword argument {next(iter(fields))!r}")


@dataclass(frozen=True)
class ProblemClass(Settings):
    """The class of problems (module docstring): ``L1`` of (a1), the class of ``F`` (``f_class``: ``"lsc"``, the
    paper's, ``"indicator"``, ``"convex"``; :data:`stam.theory.params.F_CLASSES`) and the sampled gradient ``(N,
    b)`` (``(1, 1)``: the full gradient)."""

    L1: float = 1.0
    f_class: str = DEFAULT_F_CLASS
    N: int = 1
    b: int = 1

    @property
    def sampling(self) -> tuple[int, int]:
        return (self.N, self.b)


@dataclass(frozen=True)
class SdpOptions(Settings):
    """How a Lyapunov SDP is solved (:func:`stam.theory.worstcase.sdp.search`): ``solver`` (None: Clarabel, then SCS),
    ``solver_options`` (a solver's name -> cvxpy options over :data:`stam.theory.worstcase.pepsolve.SOLVER_DEFAULTS`) and the
    smallest rate a certificate counts with (``rho_min``; None: :func:`stam.theory.worstcase.lyapunov.rate_floor`)."""

    solver: str | None = None
    solver_options: dict | None = None
    rho_min: float | None = None


@dataclass(frozen=True)
class GammaScan(Settings):
    """Where :func:`stam.theory.worstcase.lyapunov.certified_gamma` searches gamma: ``gamma_range`` ``(lo, hi)`` or ``(lo,
    hi, n)`` (n gammas, geometrically spaced: that fixes the scan's ratio), the scan's ``scan_ratio`` and the log
    bisection's ``rtol`` (defaults: those of ``stam pep --region``, :mod:`stam.theory.params`)."""

    gamma_range: tuple = REGION_GAMMA_RANGE
    rtol: float = REGION_RTOL
    scan_ratio: float = SCAN_RATIO


@dataclass(frozen=True)
class Bisection(Settings):
    """A bisection in ``c = gamma*lam`` at ``lam`` (``gamma = c / lam``), ``G`` ``L1``-smooth: on ``[lo, hi]`` to
    ``tol``, each point solved by ``solver`` (None: Clarabel, then SCS)."""

    lam: float = 1.0
    L1: float = 1.0
    lo: float = 0.9
    hi: float = 1.6
    tol: float = 1e-3
    solver: str | None = None


__all__ = ["Settings", "no_other", "ProblemClass", "SdpOptions", "GammaScan", "Bisection"]
