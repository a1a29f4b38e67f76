"""The methods of ``stam synthetic compare``, declared once (imports no torch).

Each :class:`Method` names its runner (``"module:function"``, in :mod:`stam.synthetic.baselines`:
a loop over a shared step of :mod:`stam.algorithm`), so the comparison, the figure labels and the
tests read the same declaration.  STAM, PSGD, BC and BR take their labels, equations, colours and
markers from their update rules (:data:`stam.algorithm.RULES`), as the networks' do: the same
methods, PSGD, BC and BR on ``min G(W) + I_Q(W)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from stam.algorithm import rule
from stam.registry import load, lookup
from stam.results import (COUNT_OR_NULL, DICT, DICT_OR_NULL, LIST, NONNEG_OR_NULL, NUM_OR_NULL, PROVENANCE, STR,
                          UNSIGNED_OR_NULL, ResultType, Schema)


@dataclass(frozen=True)
class Method:
    """``runner(problem, iters, R, gamma, beta, gen) -> (u, y)`` (its final point);
    ``deterministic``: it takes full gradients (``iters = budget // N`` on the problem with full
    sampling, and its own theory beta); ``quantised``: it needs ``F = I_Q``; ``color`` and
    ``marker``: how figures draw it (as :class:`stam.algorithm.Rule`'s)."""

    name: str
    label: str
    equation: str
    runner: str
    deterministic: bool = False
    quantised: bool = False
    color: str = "black"
    marker: str = "x"

    def run(self, *args):
        return load(self.runner)(*args)


def _network(name: str) -> Method:
    r = rule(name)
    return Method(name, r.label, r.equation, f"stam.synthetic.baselines:run_{name}", quantised=True, color=r.color,
                  marker=r.marker)


REGISTRY = (
    Method("stam", "STAM", "Algorithm 1", "stam.synthetic.baselines:run_stam", color=rule("stam").color,
           marker=rule("stam").marker),
    Method("stam-det", "STAM (deterministic)", "Algorithm 1, full gradients", "stam.synthetic.baselines:run_stam",
           deterministic=True, color="sky_blue", marker="P"),  # STAM's lighter blue: the same algorithm
    Method("spring-sgd", "SPRING-SGD (stochastic PALM)", "stochastic PALM", "stam.synthetic.baselines:run_spring",
           color="vermillion", marker="D"),
    _network("psgd"),
    _network("bc"),
    _network("br"),
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
