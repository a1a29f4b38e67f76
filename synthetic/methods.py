"""The methods of ``stam synthetic compare``, declared once (imports no torch).

Each :class:`Method` names its runner (``"module:function"``, in :mod:`stam.synthetic.baselines`:
a loop over a shared step of :mod:`stam.steps`), so the comparison, the figure labels and the
tests read the same declaration.  Every update rule of :mod:`stam.rules` with a synthetic form
(PSGD, BC, BR on ``min G(W) + I_Q(W)``) is a method, with its label, equation, colour and marker,
as the networks' are; STAM takes its colour and marker from its rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from stam.rules import RULES, rule
from stam.registry import load, lookup
from stam.rules import UpdateRule
from stam.results import (COUNT_OR_NULL, DICT, DICT_OR_NULL, LIST, NONNEG_OR_NULL, NUM_OR_NULL, PROVENANCE, STR,
                          UNSIGNED_OR_NULL, ResultType, Schema)


@dataclass(frozen=True)
class Method:
    """``runner(problem, iters, R, gamma, beta, gen) -> (u, y)`` (its final point; a method of an
    update rule: :func:`stam.synthetic.baselines.run_rule` with its ``rule``);
    ``deterministic``: it takes full gradients (``iters = budget // N`` on the problem with full
    sampling, and its own theory beta); ``quantised``: it needs ``F = I_Q``; ``color`` and
    ``marker``: how figures draw it (as :class:`stam.rules.UpdateRule`'s)."""

    name: str
    label: str
    equation: str
    runner: str
    deterministic: bool = False
    quantised: bool = False
    color: str = "black"
    marker: str = "x"
    rule: str | None = None

    def run(self, *args):
        if self.rule is not None:
            return load(self.runner)(*args, rule=self.rule)
        return load(self.runner)(*args)


def _network(r) -> Method:
    """The method of an update rule with a synthetic form (:meth:`stam.rules.UpdateRule.synthetic_start`)."""
    return Method(r.name, r.label, r.equation, "stam.synthetic.baselines:run_rule", quantised=True, color=r.color,
                  marker=r.marker, rule=r.name)


def _has_synthetic_form(r) -> bool:
    return type(r).synthetic_start is not UpdateRule.synthetic_start


REGISTRY = (
    Method("stam", "STAM", "Algorithm 1", "stam.synthetic.baselines:run_stam", color=rule("stam").color,
           marker=rule("stam").marker),
    Method("stam-det", "STAM (deterministic)", "Algorithm 1, full gradients", "stam.synthetic.baselines:run_stam",
           deterministic=True, color="sky_blue", marker="P"),  # STAM's lighter blue: the same algorithm
    Method("spring-sgd", "SPRING-SGD (stochastic PALM)", "stochastic PALM", "stam.synthetic.baselines:run_spring",
           color="vermillion", marker="D"),
    # every update rule with a synthetic form, in the order of Section 3.1 (PSGD, BC, BR)
    *(_network(r) for r in sorted(RULES, key=lambda r: r.paper_order) if _has_synthetic_form(r)),
)
METHODS = tuple(m.name for m in REGISTRY)
QUANTISATION_METHODS = tuple(m.name for m in REGISTRY if m.quantised)


def method(name: str) -> Method:
    """The method called ``name``; ``KeyError`` naming the known ones."""
    return lookup(REGISTRY, name, "method")



# -- the result of comparing them (``stam synthetic compare``: :func:`stam.synthetic.baselines.compare`) --
COMPARE_ROW = Schema(required={"method": STR},
                     optional={"iterations": COUNT_OR_NULL, "grad_evals": NONNEG_OR_NULL, "final_S": UNSIGNED_OR_NULL,
                               "objective": NUM_OR_NULL, "quantised_objective": NUM_OR_NULL, "wall_time": NONNEG_OR_NULL})
COMPARE = ResultType(
    "synthetic-compare", Schema(required={"rows": LIST},
                                optional={"kind": STR, "problem": STR, "params": DICT, "provenance": DICT_OR_NULL},
                                each={"rows": COMPARE_ROW}, inner={"provenance": PROVENANCE}),
    files="compare-*.json", writer="stam synthetic compare",
    title=lambda d, path: f"synthetic comparison: {d.get('problem', path.stem)}")


__all__ = ["COMPARE_ROW", "COMPARE", "Method", "REGISTRY", "METHODS", "QUANTISATION_METHODS", "method"]
