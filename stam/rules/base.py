"""What an update rule declares, once, in its own module of :mod:`stam.rules`.

An :class:`UpdateRule` is at the same time

- its **declaration**: ``name`` (``stam train --algo``), ``label`` (tables, legends), the
  ``equation`` of the paper it follows, ``color`` (Okabe-Ito, :data:`stam.figures.style.OKABE_ITO`)
  and ``marker`` (matplotlib's); the hyperparameters ``hyper`` its schedule sets (every preset of
  it in ``dnn/presets.json`` sets exactly these), their ``search_space`` for ``stam tune``, which
  of them is its step size (``step_size``: ``("lr", 1)``; STAM's y-step of eq. (algy) is
  ``1/beta``: ``("beta", -1)``), whether it trains binary weights and whether Theorem conv
  applies to it, and which of its presets ``stam train --algo NAME`` runs (``paper_preset``);
- its **batched form**: pure functions of a state whose tensors are ``(R, n)`` (R runs, every
  quantised weight of a run in one flat buffer), hyperparameters ``(R,)`` tensors broadcast by
  :func:`stam.steps.as_batch_scalar`, ``q`` the F = I_Q of that layout
  (:class:`stam.operators.IndicatorQ`, one block per layer, eq. (eq01)).  Each calls the rule's
  pure step (:mod:`stam.steps`, or one written in the rule's own module), so it runs on numpy
  arrays too where it uses only arithmetic;
- what its ``torch.optim`` form needs (:func:`stam.dnn.optim_common.optimizer_class` builds it
  from this object, ``R = 1`` of the same step): the constructor's ``arguments``, the
  optimiser-state name of every state field (``state_keys``; None where the parameter holds it),
  the checks of the values, the group's extra entries and methods.

The batched trainer (:class:`stam.dnn.batched.Trainer`: ``stam train``, tuning, maps) and the
generic optimiser both call :meth:`init`, :meth:`step` and :meth:`proxies` (the optimiser, compiled, the
halves of a step declared around its projection instead, :meth:`before_projection`); nothing else in the
toolkit names an algorithm.  The defaults fit a :class:`stam.steps.QuantizedState` ``(u, w)``: the
forward pass at ``w``, the binary weights ``Proj_Q(u)``, the float weights ``u``, and SGD with
``lr`` on the float (non-quantised) parameters.  Weight decay, where the hyperparameters have it,
is added to the gradient at :meth:`float_weights` (by the trainer and by the optimiser alike).
Imports no torch (a rule that needs torch imports it inside the function).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from stam.steps import QuantizedState, as_batch_scalar

def is_real(value) -> bool:
    """Whether ``value`` is a real number (an int, a float, a numpy scalar; not a bool, a string or a tensor)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


class UpdateRule:
    """An update rule: its declaration, its batched form and its optimiser's needs (module
    docstring).  A rule is a subclass setting the declaration's class attributes and overriding
    :meth:`init` and :meth:`step` (and, where its state is not ``(u, w)``, the weight views); one
    instance of it is its module's ``RULE``."""

    # ------------------------------------------------------------------ the declaration
    name: str = ""
    label: str = ""
    equation: str = ""
    color: str = "black"
    marker: str = "x"
    #: the hyperparameters its schedule sets (a preset sets exactly these)
    hyper: tuple = ()
    #: of ``hyper``, those that steer the schedule but are no constructor arguments (BR's ``switch_epoch``)
    schedule_only: tuple = ()
    #: constructor arguments it always gets from the schedule's runs (BR: ``rho = 1``, lam's growth is the schedule)
    fixed: dict = {}
    #: it trains binary weights (selected and reported on binary-weight accuracy)
    binary: bool = True
    #: Theorem conv's conditions apply to its (gamma, lambda, beta)
    theorem: bool = False
    #: the hyperparameter that is its step size and the power that makes it one (``stam tune --schedule``)
    step_size: tuple = ("lr", 1)
    #: its place in the paper's order of the algorithms (``--algo``'s choices; ties by name)
    order: int = 100
    #: its place in Section 3.1 of the paper (the order of the equations): the order of the
    #: synthetic comparison's methods
    paper_order: int = 100
    #: its search space for ``stam tune``, as data: coordinate -> ``{"log_uniform": [low, high]}``, the
    #: coordinate a hyperparameter of ``hyper`` or, with ``"monomial": {hyperparameter: exponent}``, a
    #: product of powers of them; ``"decay"``: the sampled value starts a schedule with that decay
    #: (read and checked by :func:`stam.dnn.tunespace.search_space`); ``{}``: it is not tuned
    search_space: dict = {}
    #: the preset ``stam train --algo NAME`` runs when no ``--preset`` is given: a name of
    #: ``dnn/presets.json``'s ``presets``, or per data set ``{"cifar100": name, "default": name}``;
    #: None: the one preset there whose ``algo`` is this rule (:func:`stam.dnn.presets.default_preset`)
    paper_preset: str | dict | None = None

    # ------------------------------------------------------------------ the torch.optim form
    #: the class name of its optimiser (``stam.dnn.optim.STAM``); ``torch_optimizer``: an optimiser
    #: of torch used instead (``"module:Class"``: the float baseline's ``torch.optim:SGD``)
    optimizer_name: str = ""
    torch_optimizer: str | None = None
    #: the constructor's hyperparameters in order, each a name (required) or ``(name, default)``
    arguments: tuple = ()
    #: hyperparameters that must be > 0, and >= 0 (:meth:`check`)
    positive: tuple = ()
    nonneg: tuple = ("weight_decay",)
    #: entries every parameter group gets (BR's ``phase``)
    group_defaults: dict = {}
    #: the state's type and, per field, the optimiser-state name (None: the parameter holds it)
    state_type: Any = QuantizedState
    state_keys: tuple = ("U", None)
    #: methods of the rule that act on the optimiser's ``param_groups`` (BR's ``grow_lambda``)
    group_methods: tuple = ()

    # ------------------------------------------------------------------ the batched form
    def init(self, w, hyper: dict, q):
        """The state at the start, from the initial weights ``w``."""
        raise NotImplementedError

    def step(self, state, grad, hyper: dict, q):
        """One step, pure: the new state (``grad`` taken at :meth:`forward_weights`)."""
        raise NotImplementedError

    def forward_weights(self, state):
        """The weights of the forward pass (where the stochastic gradient is taken)."""
        return state.w

    def binary_weights(self, state, q):
        """The weights in Q the binary-weight accuracy is measured with."""
        return q.prox_F(state.u, 1.0)

    def float_weights(self, state):
        """The float weights (the float-weight accuracy; weight decay acts on them)."""
        return state.u

    def float_step(self, p, grad, buf, hyper: dict):
        """The step of a float parameter (BatchNorm, the last bias) and its buffer: SGD with ``lr``."""
        return p - as_batch_scalar(hyper["lr"], p) * grad, buf

    def proxies(self, state, new, grad, hyper: dict):
        """Stationarity proxies of the step from ``state`` to ``new`` with gradient ``grad``
        (weight decay included): ``(R,)`` squared norms over all quantised layers; None for a
        rule without them."""
        return None

    # ------------------------------------------------------------------ the step in two halves (optional)
    # A rule whose step projects onto Q once, in the middle, may declare the halves around that projection:
    # :meth:`step` is then ``after_projection(half, Proj_Q(projection_point(half)))`` with ``half =
    # before_projection(state, grad, hyper)``.  The ``torch.optim`` form runs them as two passes over each
    # layer with the layer's scale of Proj_Q between them (:func:`stam.dnn.optim_common.staged_kernels`).
    def before_projection(self, state, grad, hyper: dict):
        """The state with every field that does not depend on the projection already new; None: the rule
        declares no halves."""
        return None

    def projection_point(self, half, hyper: dict):
        """The point the step projects onto Q, from :meth:`before_projection`'s state (elementwise)."""
        raise NotImplementedError

    def after_projection(self, half, projected, hyper: dict):
        """The new state from :meth:`before_projection`'s state and the projection of :meth:`projection_point`."""
        raise NotImplementedError

    @property
    def halves(self) -> bool:
        """Whether the rule declares its step in two halves around its projection (:meth:`before_projection`)."""
        return type(self).before_projection is not UpdateRule.before_projection

    # ------------------------------------------------------------------ the synthetic comparison
    def synthetic_start(self, U, F, lr):
        """The state at the start of a run of ``stam synthetic compare`` on ``min G(W) + I_Q(W)``
        (eq. (eq02), ``F = I_Q``) from the float weights ``U`` ``(R, n)`` with lr ``lr``; None for a
        rule that is no method there (:func:`stam.synthetic.baselines.run_rule`)."""
        return None

    def synthetic_step(self, state, grad, F, lr, t: int, iters: int, epoch: float):
        """Iteration ``t`` of ``iters`` of that run (``epoch``: iterations per epoch, ``N/b``), the
        gradient taken at :meth:`forward_weights`: the rule's pure step with float
        hyperparameters (its schedule over the run, where it has one)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the theory form (stam pep --algo)
    #: its parameters in the theory (``stam pep --algo NAME``, :mod:`stam.theory.worstcase.methods_pep`), each with its
    #: flag's name there; None: the rule has no theory form.  The theory form is the rule's step in terms of
    #: the oracles only: the full gradient of G at :meth:`forward_weights` and the proximal step ``q.prox_F(v,
    #: gamma)`` of F (the coupling, where it has one, is affine and needs no oracle)
    theory_params: tuple | None = None
    #: its natural stationarity measure, as the theory's outputs name it (:meth:`theory_measure`)
    theory_measure_text: str = "||grad G(w^t)||^2 (w^t the forward weights)"

    def theory_start(self, x0, hyper: dict, q):
        """The state at the start of the theory's run from the point ``x0`` (PEPit points, or numbers)."""
        raise NotImplementedError

    def theory_step(self, state, grad, hyper: dict, q, t: int):
        """Step ``t`` of the theory's run: the rule's pure step with float hyperparameters ``hyper`` (the
        gradient ``grad`` of G taken at :meth:`forward_weights`); by default :meth:`step`."""
        return self.step(state, grad, hyper, q)

    def theory_measure(self, state, grad, hyper: dict):
        """Its natural stationarity measure at ``state`` (``grad``: the gradient of G at the forward
        weights), in the arithmetic of the state (``p ** 2`` the squared norm): by default ``||grad||^2``,
        for the baselines the fixed-point residual ``||U^{t+1} - U^t||^2 / gamma^2`` of their float weights."""
        return grad ** 2

    # ------------------------------------------------------------------ the optimiser's checks
    def check(self, values: dict) -> None:
        """ValueError naming the first hyperparameter of ``values`` that is not a finite real number
        in its range (``positive``: > 0, ``nonneg``: >= 0).  Infinite values are refused: ``beta = inf``
        would take no step at all (a scheduler that drives the optimiser's ``lr`` to 0 reaches it
        mid-run, :class:`stam.dnn.optim_common.RuleOptimizer`, never at the start)."""
        for names, low, word in ((self.positive, 0.0, "> 0"), (self.nonneg, 0.0, ">= 0")):
            for name in names:
                if name not in values:
                    continue
                v = values[name]
                if not is_real(v):
                    raise ValueError(f"{name} must be a real number {word}, got {v!r} ({type(v).__name__})")
                if not (math.isfinite(v) and (v > low if word == "> 0" else v >= low)):
                    raise ValueError(f"{name} must be a finite number {word}, got {v!r}")

    def group_hyper(self, group: dict) -> dict:
        """Hyperparameters of the batched step that a parameter group holds in another form (BR's
        ``project`` from its ``phase``); every number of the group is passed as it is."""
        return {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


__all__ = ["UpdateRule", "is_real"]
