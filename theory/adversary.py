"""An adversarial search for counterexamples to the printed steps eq. (eq36) and eq. (eq39) (and so
to K3, eq. (eq38), Lemmas par2 and conv-lemma, Theorem conv, which rest on them) on *actual* runs of
Algorithm 1 (:func:`stam.algorithm.stam_step`), beyond the quadratic instances of
:func:`stam.theory.stamruns.iterate_search`.  The classes are the product of

- the coupling H: quadratic ``(lam/2)||x - y||^2`` and two smooth non-quadratic ones,
  ``(lam/2)||x - y||^2 + kappa sum_i phi(alpha x_i + b y_i)`` with ``phi`` log-cosh or softplus
  (``kappa`` of either sign: ``H(., y)`` convex or only weakly convex; ``alpha``, ``b`` free, so that
  ``L2*`` and ``L4*`` are no longer tied as in the quadratic coupling).  Their gradients and Hessian
  blocks are derived in sympy (:func:`stam.theory.problemclasses.coupling_derivatives`) and their constants ``L2*, ..., L5*``,
  ``l`` are exact: the Hessian blocks are affine in ``phi''``, whose range ``(0, sup phi'']`` is
  derived too; the x-step ``argmin_x H(x, y) + ||x - z||^2/(2 gamma)`` is solved by a safeguarded
  Newton iteration (strongly monotone since ``gamma l < 1``);
- F = I_Q for closed sets Q: binary ``{-1, 1}^n``, ternary ``{-1, 0, 1}^n`` and the paper's own
  scaled-binary set of eq. (eq01) read as closed, ``{s z : s >= 0, z in {-1, 1}^n}`` (projection
  ``s = ||v||_1/n``, ``z = sign v``);
- G: quadratic, or the nonconvex double well ``a sum (y_i^2 - 1)^2/4``;
- gradients: deterministic, or stochastic (Gaussian noise, sigma = 1).

gamma is drawn below ``gamma_max`` of the instance's constants (K1 > 0 and the second condition
of Theorem conv), so that every hypothesis of the statements holds.  Each class: a random stage
(R runs), then a local search from its best run (rounds of Gaussian perturbations in the class's
box, a shrinking step) that minimises :func:`margin`, negative exactly where the print fails; all
classes of a coupling, and all searched steps, run in one batch per round (:func:`search_all`).

The printed gap of each step is evaluated with the lambdified gaps of :mod:`stam.theory.chain` at
every step of every run (``d = grad_x H(x^t, y^{t+1}) - grad_x H(x^t, y^t)`` and ``Phi`` computed
from the coupling itself); a negative gap (relative to the size of the terms, below -1e-9) on a run
is a counterexample.  The derived chain is checked on the same runs by the tests: it must hold.

The statements that rest on eq39 are also checked themselves (:func:`statement_search`): Lemma
conv-lemma's summed inequality eq. (ineq1) and Theorem conv's conclusion eq. (con-inequality), as
printed (the printed K3), at every horizon along actual runs of 36 classes (the couplings with
``kappa >= 0``, so that H is bounded below as the constant C needs; the three sets Q; quadratic or
cosine-well G, which have the L1 of (a1) the double well lacks; exact gradients, or b-nice sampling
of ``G = (G_1 + G_2)/2`` with every path enumerated, so that the expectations are exact).

The search is written in two modules, each importable from here with every name it had when it lived here:
:mod:`stam.theory.chainsearch` (the chain steps: :func:`runs`, :func:`margin`, :func:`search_all`,
:func:`runs_search`, the record :class:`Search`) and :mod:`stam.theory.statementsearch` (the statements:
:func:`statement_runs`, :func:`statement_ratio`, :func:`statement_search`, :func:`statement_search_result`)."""

from __future__ import annotations

# the public names of the two modules of the search, importable from here as when they lived here
from stam.algorithm import stam_init, stam_step  # noqa: F401
from stam.theory import numeric as num  # noqa: F401
from stam.theory.chainsearch import (COMBOS, LABELS, MARGIN, PARAMETERS, REFINED, Search, batch, box, class_name,  # noqa: F401
                                     constants_of, margin, relative_gaps, runs, runs_search, search, search_all,
                                     select_rows)
from stam.theory.problemclasses import (COUPLINGS, GRADIENTS, PHI, SETS, CouplingClass, QuadraticCoupling,  # noqa: F401
                                        SmoothCoupling, coupling_derivatives)
from stam.theory.stamruns import SEED  # noqa: F401
from stam.theory.statementsearch import (SCALED_BINARY, STATEMENT_COUPLINGS, STATEMENT_G, STATEMENT_MARGIN,  # noqa: F401
                                         STATEMENTS, ST_HIGH, ST_LOW, T_STOCH, StatementBudget, statement_class_name,
                                         statement_ratio, statement_runs, statement_search, statement_search_result)

#: the names the statement search's box had when it lived here (tests read them so)
_ST_LOW, _ST_HIGH = ST_LOW, ST_HIGH
