"""Machinery shared by the binary-weight optimisers of :mod:`stam.dnn.optim` (STAM, BC, BR, PSGD).

- Parameter groups carry ``quantize`` (default ``True``).  In a quantised group every parameter
  tensor is one block of Q (eq. (eq01)): one layer's weight, projected by
  :func:`project_layer` = :func:`stam.quantize.project_Q` with ``block_ids=None`` (scale
  ``s = mean |U|``, sign(0) = +1, ``s >= 0``).  Non-quantised groups (biases, BatchNorm,
  ``--keep-float`` layers) get a plain SGD update ``p <- p - lr (g + wd p)`` with the group's
  step size (:meth:`QuantizingOptimizer._float_lr`).
- The update of a quantised group is a *kernel*: a pure module-level function of lists of
  tensors and 0-d hyperparameter tensors that writes its results into the parameters and the
  optimiser state in place.  The Python loop over the layers inside a kernel is unrolled by
  ``torch.compile`` (inductor: one fused C++/OpenMP loop per layer and pass on the CPU, Triton
  kernels on CUDA), so the hot path is one compiled call per group.  Hyperparameters enter as
  0-d float64 tensors, so schedules that change them between steps cause no recompilation.
  ``compile="auto"`` (default) compiles groups of at least :data:`AUTO_COMPILE_MIN_NUMEL`
  quantised entries (compilation costs seconds once; it pays off for CIFAR networks, not for
  the tiny test models); ``True``/``False`` force it.  Where compilation is unavailable (no C++
  compiler, no Triton) the optimiser warns once and runs the same kernel eagerly.
- :meth:`~QuantizingOptimizer.binary_weights` / :meth:`~QuantizingOptimizer.float_weights`
  temporarily put the truly binary (in Q) / the float weights into the parameters and restore
  the previous values bit for bit on exit.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Callable, Iterator

import torch
from torch import Tensor

from stam.algorithm import as_batch_scalar
from stam.compiling import compile_errors as _compile_errors
from stam.errors import first_line, warn
from stam.quantize import project_Q

#: ``compile="auto"`` compiles a quantised group with at least this many entries.
AUTO_COMPILE_MIN_NUMEL = 1 << 20

#: Inductor options of the kernels.  The steps are memory-bound; by default inductor stores an
#: intermediate with several consumers (e.g. ``y^{t+1}``, read by the reduction of the projection
#: and by the write-back) in a full-size temporary, which costs more than recomputing it (and on
#: the CPU every step page-faults the freshly mapped temporaries in).  A high threshold makes it
#: recompute: each layer is then one reduction pass and one update pass over its tensors.
COMPILE_OPTIONS = {"realize_reads_threshold": 64}

_COMPILED: dict[Callable, Callable] = {}


def project_layer(w: Tensor) -> Tensor:
    """Proj_Q of one layer's tensor, eq. (0411)-(0412): ``s * sign(w)`` with ``s = mean |w|``
    and sign(0) = +1 (the whole tensor is one block; any shape and strides)."""
    return project_Q(w.unsqueeze(0), None).squeeze(0)


def hyper_tensor(value: float, like: Tensor) -> Tensor:
    """A hyperparameter as a 0-d float64 tensor on ``like``'s device (a graph input, not a
    constant baked into a compiled kernel; float64 so that products of hyperparameters round as
    Python floats do)."""
    return torch.full((), float(value), dtype=torch.float64, device=like.device)


def check_hyper(positive: dict[str, float], nonneg: dict[str, float]) -> None:
    """ValueError naming the first hyperparameter that is not > 0 / not >= 0."""
    for name, v in positive.items():
        if not v > 0:
            raise ValueError(f"{name} must be > 0, got {v}")
    for name, v in nonneg.items():
        if not v >= 0:
            raise ValueError(f"{name} must be >= 0, got {v}")


class BatchedRule:
    """An algorithm's update for ``R`` runs at once, as the one trainer runs it
    (:class:`stam.dnn.batched.Trainer`: ``stam train``, tuning, maps): pure functions of a state
    whose tensors are ``(R, n)``, every quantised weight of a network in one flat buffer per run,
    with hyperparameters as ``(R,)`` tensors (broadcast by :func:`stam.algorithm.as_batch_scalar`).
    ``q`` is F = I_Q over that layout (:class:`stam.operators.IndicatorQ` with one block per layer,
    eq. (eq01)), so each step is one call of the shared step over all layers.

    Each algorithm declares one in the module of its optimiser (``BATCHED``), and its
    :class:`stam.dnn.catalog.Algorithm` names it, so the batched trainer never dispatches on an
    algorithm's name.  The defaults fit a :class:`stam.algorithm.QuantizedState` ``(u, w)``:
    the forward pass at ``w``, the binary weights ``Proj_Q(u)``, the float weights ``u``, and
    SGD with ``lr`` on the float (non-quantised) parameters.  Weight decay, where the
    hyperparameters have it, is added by the trainer to the gradient at :meth:`float_weights`."""

    def init(self, w: Tensor, hyper: dict[str, Tensor], q):
        """The state at the start, from the initial weights ``w``."""
        raise NotImplementedError

    def step(self, state, grad: Tensor, hyper: dict[str, Tensor], q):
        """One step, pure: the new state (``grad`` taken at :meth:`forward_weights`)."""
        raise NotImplementedError

    def forward_weights(self, state) -> Tensor:
        """The weights of the forward pass (where the stochastic gradient is taken)."""
        return state.w

    def binary_weights(self, state, q) -> Tensor:
        """The weights in Q the binary-weight accuracy is measured with."""
        return q.prox_F(state.u, 1.0)

    def float_weights(self, state) -> Tensor:
        """The float weights (the float-weight accuracy; weight decay acts on them)."""
        return state.u

    def float_step(self, p: Tensor, grad: Tensor, buf: Tensor, hyper: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """The step of a float parameter (BatchNorm, the last bias) and its buffer: SGD with ``lr``."""
        return p - as_batch_scalar(hyper["lr"], p) * grad, buf

    def proxies(self, state, new, grad: Tensor, hyper: dict[str, Tensor]) -> tuple[Tensor, Tensor] | None:
        """Stationarity proxies of the step from ``state`` to ``new`` with gradient ``grad``
        (weight decay included): ``(R,)`` squared norms over all quantised layers; None for an
        algorithm without them."""
        return None


class QuantizingOptimizer(torch.optim.Optimizer):
    """Base class: quantised / float groups, compiled kernels, binary/float weight views.

    Subclasses implement :meth:`_quantized_step`, :meth:`_float_lr`, :meth:`_binary_values` and
    :meth:`_float_values`."""

    def __init__(self, params, defaults: dict, compile: bool | str = "auto"):
        if compile not in (True, False, "auto"):
            raise ValueError(f"compile must be True, False or 'auto', got {compile!r}")
        self._compile = compile
        super().__init__(params, {**defaults, "quantize": True})

    # ------------------------------------------------------------------ groups and state
    def add_param_group(self, param_group: dict) -> None:
        defaulted = "quantize" not in param_group
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        flat = [p for p in group["params"] if p.dim() <= 1]
        if defaulted and flat:
            warnings.warn(
                f"{type(self).__name__}: {len(flat)} parameter(s) of at most one dimension (biases, BatchNorm) are in a group "
                "without 'quantize', so they are binarised like weights; pass stam.dnn.param_groups(model) to keep them "
                "float, or give the group quantize=True to binarise them on purpose", UserWarning, stacklevel=_caller_level())
        if group["quantize"]:
            for p in group["params"]:
                if not p.is_floating_point():
                    raise ValueError(f"a quantised parameter must be floating point, got {p.dtype}")
            with torch.no_grad():
                self._init_quantized_group(group)

    def _init_quantized_group(self, group: dict) -> None:
        """Hook: state that must exist before the first forward pass (BC, BR)."""

    def _quantized_groups(self) -> Iterator[dict]:
        return (g for g in self.param_groups if g["quantize"])

    # ------------------------------------------------------------------ the step
    @torch.no_grad()
    def step(self, closure: Callable | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            if group["quantize"]:
                if group["params"]:
                    self._quantized_step(group)
            else:
                self._float_step(group)
        return loss

    def _quantized_step(self, group: dict) -> None:
        raise NotImplementedError

    def _float_lr(self, group: dict) -> float:
        """Step size of the plain SGD update of a non-quantised group."""
        raise NotImplementedError

    def _float_step(self, group: dict) -> None:
        """``p <- p - lr (g + wd p)`` over the parameters that have a gradient (foreach)."""
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return
        grads = [p.grad for p in params]
        if group["weight_decay"]:
            grads = torch._foreach_add(grads, params, alpha=group["weight_decay"])
        lr = self._float_lr(group)
        if lr <= torch.finfo(params[0].dtype).max:  # one fused pass
            torch._foreach_add_(params, grads, alpha=-lr)
        else:  # an ``alpha`` beyond the parameters' range is a conversion error; this gives inf weights,
            # which stam train reports as divergence
            torch._foreach_sub_(params, torch._foreach_mul(grads, hyper_tensor(lr, params[0])))

    @staticmethod
    def _grads(params: list[Tensor]) -> list[Tensor]:
        """Gradients of a quantised group; a parameter without one has gradient zero (the loss
        does not depend on it, but the coupling/projection still acts on it)."""
        return [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]

    def _run(self, kernel: Callable, group: dict, *args):
        """Run ``kernel(*args)``, compiled where enabled (see the module docstring)."""
        if self._wants_compile(group):
            compiled = _COMPILED.get(kernel)
            if compiled is None:
                compiled = _COMPILED[kernel] = torch.compile(kernel, fullgraph=True, dynamic=False, options=COMPILE_OPTIONS)
            try:
                return compiled(*args)
            except _compile_errors() as exc:  # no compiler/Triton here: the same kernel, eager
                warn(f"{type(self).__name__}: torch.compile unavailable ({type(exc).__name__}: {first_line(exc, 200)}); "
                     "running the update eagerly", stacklevel=3)
                self._compile = False
        return kernel(*args)

    def _wants_compile(self, group: dict) -> bool:
        if self._compile == "auto":
            return sum(p.numel() for p in group["params"]) >= AUTO_COMPILE_MIN_NUMEL
        return bool(self._compile)

    # ------------------------------------------------------------------ binary / float weights
    def _binary_values(self) -> list[tuple[Tensor, Tensor]]:
        """(parameter, its weights in Q) for every quantised parameter."""
        raise NotImplementedError

    def _float_values(self) -> list[tuple[Tensor, Tensor]]:
        """(parameter, its float weights) where the parameter holds something else."""
        raise NotImplementedError

    @contextlib.contextmanager
    def binary_weights(self, model=None, images=None, batch: int = 1000):
        """Within the block every quantised parameter holds its truly binary weights (in Q);
        the previous values are restored exactly on exit.  Non-quantised parameters are left as
        they are.  With ``model`` and ``images`` (training images as the model takes them,
        unaugmented), the BatchNorm statistics of ``model`` are, within the block, those of the
        binary network (:func:`stam.dnn.bnstats.reestimated`), and the training's are put back
        on exit: without them BatchNorm normalises the binary network with the statistics of the
        weights training ran on (STAM's W, PSGD's U), which measures another network.
        :func:`stam.dnn.loop.evaluate` does this itself."""
        with torch.no_grad():
            pairs = self._binary_values()
        with _substituted(pairs), _statistics(model, images, batch):
            yield

    @contextlib.contextmanager
    def float_weights(self, model=None, images=None, batch: int = 1000):
        """Within the block every quantised parameter holds its float weights; the previous
        values are restored exactly on exit.  ``model``, ``images``: as for :meth:`binary_weights`."""
        with torch.no_grad():
            pairs = self._float_values()
        with _substituted(pairs), _statistics(model, images, batch):
            yield


def _statistics(model, images, batch: int):
    """BatchNorm statistics of ``model``'s present weights on ``images`` within the block, or
    nothing where either is None."""
    if model is None or images is None:
        if (model is None) != (images is None):
            raise ValueError("binary_weights()/float_weights(): give both model= and images= (training images) to "
                             "re-estimate BatchNorm's statistics, or neither")
        return contextlib.nullcontext()
    from stam.dnn.bnstats import reestimated

    return reestimated(model, images, batch)


def _caller_level() -> int:
    """The ``stacklevel`` of a warning that names the user's line: the first frame outside this
    package and torch.optim."""
    import os
    import sys

    inside = (os.path.dirname(__file__), os.path.dirname(torch.optim.__file__))
    frame, level = sys._getframe(1), 1  # level 1: the function that warns
    while frame is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    return level


@contextlib.contextmanager
def _substituted(pairs: list[tuple[Tensor, Tensor]]):
    """Copy each value into its parameter (in place: the parameter objects and their storage stay
    the same, so DDP, compiled models and hooks keep working) and copy the saved values back."""
    with torch.no_grad():
        saved = [p.detach().clone(memory_format=torch.preserve_format) for p, _ in pairs]
        for p, v in pairs:
            p.copy_(v)
    try:
        yield
    finally:
        with torch.no_grad():
            for (p, _), s in zip(pairs, saved):
                p.copy_(s)


__all__ = ["QuantizingOptimizer", "project_layer", "hyper_tensor", "check_hyper", "AUTO_COMPILE_MIN_NUMEL"]
