"""The registry of synthetic problem families: each family declares here its name, what it is,
where it is built and which parameters it has; the command lines, the sweeps, the map, the demo
and the tests read them from here (this module imports no torch, so ``stam synthetic --help``
stays fast).  The builders live in :mod:`stam.synthetic.problems`.

To add a family: write its builder in :mod:`stam.synthetic.problems` (a frozen spec, a
:class:`~stam.synthetic.problems.ProblemSpec` whose fields define the problem and whose ``build``
returns a ``ThreeBlockProblem``, its constants derived in its docstring, and the builder taking
its fields as keywords) and add one :class:`Family` to
:data:`FAMILIES`; the parametrised tests over :data:`NAMES` then check it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stam.registry import load, lookup


@dataclass(frozen=True)
class Family:
    """A synthetic three-block problem family (eq. (model)) with known constants.

    ``build`` is ``"module:function"``; ``fixed`` are keyword arguments the family fixes (the
    penalty of ``sparse-mcp``); ``lam`` says that it has a coupling weight lambda (``--lam``,
    ``--preset``); ``quadratic_coupling`` that its ``H`` is ``(lam/2)||x - y||^2``, the network
    model's, so that the theorem's (gamma, lambda) region of ``stam map`` is the one drawn;
    ``quantised`` that ``F`` is the indicator of Q (PSGD, BC and BR apply)."""

    name: str
    summary: str
    build: str
    fixed: dict = field(default_factory=dict)
    lam: bool = False
    quadratic_coupling: bool = False
    quantised: bool = False

    def make(self, **kwargs):
        """The problem instance (imports torch)."""
        return load(self.build)(**self.fixed, **kwargs)


FAMILIES = (
    Family("binary", "binary-quantised robust regression, the network model eq. (binary-model) in miniature",
           "stam.synthetic.problems:binary", lam=True, quadratic_coupling=True, quantised=True),
    Family("sparse-l1", "coupled sparse logistic problem, H = (1/2)||Ax - By||^2, F = l1",
           "stam.synthetic.problems:sparse", fixed={"penalty": "l1"}),
    Family("sparse-mcp", "the same with the nonconvex MCP penalty (gamma < theta)",
           "stam.synthetic.problems:sparse", fixed={"penalty": "mcp"}),
    Family("cosine", "robust regression with H = (lam/2)||x - y||^2 + mu sum cos x_j, nonconvex in x",
           "stam.synthetic.problems:cosine", lam=True),
)

#: the size of a built-in instance unless told otherwise: the dimension n of y (and x), the N terms
#: of G and the minibatch b (every builder's defaults; ``stam synthetic``'s --n, --N, --b)
SIZE = {"n": 32, "N": 256, "b": 8}

#: the family names, in the order of the paper's problems (CLI choices, sweeps, tests)
NAMES = tuple(f.name for f in FAMILIES)
#: families with a coupling weight lambda
WITH_LAM = tuple(f.name for f in FAMILIES if f.lam)
#: families the convergence map runs (H = (lam/2)||x - y||^2)
MAP_NAMES = tuple(f.name for f in FAMILIES if f.quadratic_coupling)
#: the synthetic map's defaults (`stam map --problem binary`): the gamma and lambda grids (LO, HI, N:
#: N values geometrically spaced), the betas, the iterations T, the seeds per cell, and the factor
#: above S_0 at which a seed counts as diverged
MAP_GAMMAS, MAP_LAMS, MAP_BETAS = (1e-3, 30.0, 8), (0.05, 30.0, 8), (10.0, 100.0, 1000.0)
MAP_ITERATIONS, MAP_SEEDS, MAP_GROWTH = 1000, 4, 100.0


def family(name: str) -> Family:
    """The family called ``name``; ``KeyError`` naming the known ones."""
    return lookup(FAMILIES, name, "problem")


__all__ = ["MAP_GAMMAS", "MAP_LAMS", "MAP_BETAS", "MAP_ITERATIONS", "MAP_SEEDS", "MAP_GROWTH", "SIZE", "Family", "FAMILIES", "NAMES", "WITH_LAM", "MAP_NAMES", "family"]
