"""One rule for an inequality step written as a gap ``g >= 0``: the printed gap against the
derived one (:func:`stam.theory.symbolic.chain.compare`: exact when sympy decides it, else a seeded search
for a point where the printed step fails, which is then the counterexample)."""

from __future__ import annotations

import sympy as sp

from stam.theory.symbolic import chain
from stam.theory.papercheck.items.common import SEED, rounded
from stam.theory.papercheck.items.declare import Gap, Result, item


def step_result(printed, derived, rule: str, elsewhere=(), gap: Gap | None = None, seed: int = SEED,
                ranges: dict | None = None) -> Result:
    """``printed >= 0`` against ``derived >= 0`` (the certificate ``rule``)."""
    printed, derived = sp.expand(printed), sp.expand(derived)
    cmp = chain.compare(printed, derived, seed=seed)
    ce = None
    if cmp.verdict not in ("same", "weaker"):
        ce = {"point": rounded(cmp.witness) if cmp.witness else None, "printed - derived": str(cmp.residual),
              "meaning": "at this point the derived gap >= 0 does not give the printed one"}
    note = f"derived by: {rule}" + ("" if cmp.verdict in ("same", "not implied") else f" ({cmp.verdict})")
    return Result(sp.Ge(printed, 0, evaluate=False), sp.Ge(derived, 0, evaluate=False), ce, tuple(elsewhere), gap,
                  note)


def identity_result(lhs_minus_rhs, what: str, subs: dict | None = None, gap: Gap | None = None) -> Result:
    """An equality of the paper: ``lhs - rhs`` must expand to 0 (after ``subs``); else the residual
    at a point (numbers) is the counterexample."""
    res = sp.expand(sp.expand(lhs_minus_rhs).subs(subs or {}))
    ce = None
    if res != 0:
        free = sorted(res.free_symbols, key=lambda v: v.name)
        point = {v: sp.Rational(i + 2, 3) for i, v in enumerate(free)}
        ce = {"point": {v.name: float(p) for v, p in point.items()}, "lhs - rhs": float(res.subs(point)),
              "meaning": f"{what}: the two sides differ here"}
    return Result(f"{what} (an identity)", f"lhs - rhs = {res} (expanded by sympy)", ce, gap=gap, note=what)


def declare_steps(steps, module_name: str):
    """Register one item per ``(label, covers, printed, derived, rule)`` (declared in the caller's module)."""
    for label, covers, printed, derived, rule in steps:
        def make(p=printed, d=derived, r=rule):
            return lambda: step_result(p, d, r)

        fn = make()
        fn.__module__ = module_name
        fn.__name__ = "step_" + label.replace(" ", "_")
        item(label, covers=covers)(fn)


__all__ = ["step_result", "identity_result", "declare_steps"]
