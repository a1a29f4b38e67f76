"""The one ``torch.optim`` form of every update rule of :mod:`stam.rules` (STAM, BC, BR, PSGD and
any rule added there): :func:`optimizer_class` builds it from the rule's batched form, ``R = 1`` of
the same step the batched trainer (:mod:`stam.dnn.batched`) runs, the stationarity proxies from the
same formula (:meth:`stam.rules.UpdateRule.proxies`).

- Parameter groups carry ``quantize`` (default ``True``).  In a quantised group every parameter
  tensor is one block of Q (eq. (eq01)): one layer's weight, one run of the rule's step with
  F = I_Q of one block (:func:`project_layer` = :func:`stam.quantize.project_Q` with
  ``block_ids=None``: scale ``s = mean |U|``, sign(0) = +1, ``s >= 0``).  The parameter holds the
  rule's forward weights; its other state fields are the optimiser state under the rule's
  ``state_keys``.  Non-quantised groups (biases, BatchNorm, ``--keep-float`` layers) take the
  rule's float step (``p <- p - lr (g + wd p)``; STAM: ``lr = 1/beta``).
- The update of a quantised group is one *kernel* per rule (:func:`kernel`): a function of lists
  of tensors and a dict of hyperparameter tensors that writes the new state into the parameters
  and the optimiser state in place.  Its Python loop over the layers is unrolled by
  ``torch.compile`` (inductor: one fused C++/OpenMP loop per layer and pass on the CPU, Triton
  kernels on CUDA), so the hot path is one compiled call per group; a rule declared in two halves
  around its projection (STAM) runs compiled as two calls, one pass over each layer each
  (:func:`staged_kernels`).  Hyperparameters enter as float64 tensors, so schedules that change them
  between steps cause no recompilation.  ``compile="auto"`` (default) runs a group's first steps
  eagerly and compiles from its step :func:`stam.compiling.compile_after_steps` on, the step by which
  the time its eager steps lost pays for the compilation (never for the tiny test models; for VGG-11
  at width 1 after a few hundred steps), so a first step never waits for a compiler;
  ``True``/``False`` force it.  Where compilation is unavailable (no C++ compiler, no Triton) the
  optimiser warns once and runs the same kernel eagerly.
- The stationarity proxies (:meth:`stam.rules.UpdateRule.proxies`, STAM's) are computed within the step
  where the optimiser is built with ``proxies=True`` (one kernel then; ``stationarity_proxies()`` reads them).
- :meth:`~RuleOptimizer.binary_weights` / :meth:`~RuleOptimizer.float_weights` temporarily put
  the truly binary (in Q) / the float weights into the parameters and restore the previous
  values bit for bit on exit.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import warnings
from typing import Callable, Iterator

import torch
from torch import Tensor

from stam.compiling import COMPILE_OPTIONS, compile_after_steps
from stam.compiling import compile_errors
from stam.errors import first_line, warn
from stam.operators import IndicatorQ
from stam.quantize import block_scales, project_Q, scaled_signs
from stam.registry import load
from stam.rules import UpdateRule
from stam.rules.base import is_real
from stam.steps import decayed

_COMPILED: dict[Callable, Callable] = {}
#: the entry of a quantised parameter group that counts its steps (saved with ``state_dict()``, so a
#: resumed run compiles from the step the uninterrupted one did, ``compile="auto"``)
STEPS = "steps"


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


#: F = I_Q of one layer (one run, one block): the optimiser steps each parameter as one run
LAYER_Q = IndicatorQ(None)


@functools.lru_cache(maxsize=None)
def kernel(rule: UpdateRule, proxies: bool = True) -> Callable:
    """The in-place step of ``rule`` on every layer of a group: ``run(params, grads, layers,
    hyper, weight_decay) -> proxies or None``.  ``layers[i]`` are the state fields of parameter
    ``i`` (the parameter itself where the rule's ``state_keys`` say None); each layer is one run
    (``R = 1``) of ``rule.step``, weight decay (``None`` for none) added to the gradient at the
    rule's float weights, as the batched trainer does; the new forward weights are written into
    the parameter and the other fields into the state.  Returns the rule's proxies summed over
    the layers (``(1,)`` float64 tensors), None for a rule without them or where ``proxies`` is False."""
    keys = rule.state_keys

    def run(params: list[Tensor], grads: list[Tensor], layers: list[list[Tensor]], hyper: dict[str, Tensor],
            weight_decay: Tensor | None):
        prox = None
        for P, G, fields in zip(params, grads, layers):
            state = rule.state_type(*(f.unsqueeze(0) for f in fields))
            g = G.unsqueeze(0)
            g = decayed(g, rule.float_weights(state), weight_decay)
            new = rule.step(state, g, hyper, LAYER_Q)
            part = rule.proxies(state, new, g, hyper) if proxies else None
            if part is not None:
                prox = part if prox is None else tuple(a + b for a, b in zip(prox, part))
            for f, key, t in zip(fields, keys, new):
                if key is not None:
                    f.copy_(t.squeeze(0))
            P.copy_(rule.forward_weights(new).squeeze(0))
        return prox

    run.__name__ = f"{rule.name}_kernel"
    return run


def _write_changed(P: Tensor, fields: list[Tensor], keys: tuple, rule: UpdateRule, old, new) -> None:
    """Write the fields of the rule state ``new`` that are not those of ``old`` (the same tensor objects:
    a half that left a field as it was) into the optimiser state, and the forward weights into ``P``."""
    for f, key, a, b in zip(fields, keys, old, new):
        if key is not None and b is not a:
            f.copy_(b.squeeze(0))
    if rule.forward_weights(new) is not rule.forward_weights(old):
        P.copy_(rule.forward_weights(new).squeeze(0))


@functools.lru_cache(maxsize=None)
def staged_kernels(rule: UpdateRule) -> tuple[Callable, Callable]:
    """The in-place step of a rule declared in two halves around its projection onto Q
    (:meth:`stam.rules.UpdateRule.before_projection`), as two kernels: ``first(params, grads, layers,
    hyper, weight_decay) -> scales`` runs the first half on every layer, writes the fields it made new
    and returns each layer's scale of Proj_Q, ``mean |point|`` (:func:`stam.quantize.block_scales`);
    ``second(params, layers, scales, hyper)`` projects the point with those scales
    (:func:`stam.quantize.scaled_signs`) and writes the rest of the step.  The numbers are :func:`kernel`'s
    (the same operations on the same values); compiled, each kernel is one loop per layer, so the first
    half's results are written where the state keeps them instead of being computed twice: STAM reads
    6 and writes 4 tensors per entry this way, against 8 and 4 in one kernel (the projection's reduction
    needs a whole layer before any entry of V can be written)."""
    keys = rule.state_keys

    def first(params: list[Tensor], grads: list[Tensor], layers: list[list[Tensor]], hyper: dict[str, Tensor],
              weight_decay: Tensor | None) -> list[Tensor]:
        scales = []
        for P, G, fields in zip(params, grads, layers):
            state = rule.state_type(*(f.unsqueeze(0) for f in fields))
            g = decayed(G.unsqueeze(0), rule.float_weights(state), weight_decay)
            half = rule.before_projection(state, g, hyper)
            scales.append(block_scales(rule.projection_point(half, hyper), None))
            _write_changed(P, fields, keys, rule, state, half)
        return scales

    def second(params: list[Tensor], layers: list[list[Tensor]], scales: list[Tensor], hyper: dict[str, Tensor]) -> None:
        for P, fields, s in zip(params, layers, scales):
            half = rule.state_type(*(f.unsqueeze(0) for f in fields))
            new = rule.after_projection(half, scaled_signs(rule.projection_point(half, hyper), s), hyper)
            _write_changed(P, fields, keys, rule, half, new)

    first.__name__, second.__name__ = f"{rule.name}_first_half", f"{rule.name}_second_half"
    # inductor's own options: each half is one loop per layer that stores what it computes (with
    # COMPILE_OPTIONS' recomputation the first half's reduction and its stores become two loops)
    first.compile_options = second.compile_options = {}
    return first, second


def _step_of(lr: float, power: float) -> float:
    """The step hyperparameter ``k`` with ``lr = k ** power`` (STAM: ``beta = 1/lr``; lr 0: beta infinite)."""
    if lr == 0 and power < 0:
        return math.inf
    return lr ** (1 / power)


def _lr_of(k: float, power: float) -> float:
    """``k ** power`` (STAM: ``lr = 1/beta``; beta infinite: lr 0)."""
    if math.isinf(k) and power < 0:
        return 0.0
    return k ** power


class StepLinkedGroup(dict):
    """A parameter group of a rule whose step size is not ``lr`` but ``k ** power`` (STAM's y-step
    ``1/beta``, eq. (algy)): setting either of ``lr`` and ``k`` sets the other at once, so the pair
    is consistent at every moment: after a ``torch.optim.lr_scheduler`` step, a preset's schedule
    (:func:`stam.dnn.loop.apply_hyper`), in a saved ``state_dict()`` and after loading one.  ``lr``
    may fall to 0 (a cosine schedule's end): no step in y, ``beta`` infinite, as ``lr = 0`` is no
    step for ``torch.optim.SGD``; a negative, infinite or NaN ``lr`` (or a ``beta`` that is not > 0)
    is a ValueError and changes nothing."""

    def __init__(self, group: dict, key: str, power: float):
        super().__init__(group)
        self._link = (key, power)
        if key in self and "lr" in self:
            lr, k = self._checked("lr", self["lr"]), self._checked(key, self[key])
            if not math.isclose(lr, _lr_of(k, power), rel_tol=1e-12, abs_tol=0.0):
                raise ValueError(f"a parameter group holds lr={lr!r} and {key}={k!r}, which disagree (lr must be "
                                 f"{key}^{power:g} = {_lr_of(k, power)!r}); give one of them")
        elif key in self:
            dict.__setitem__(self, "lr", _lr_of(self._checked(key, self[key]), power))
        elif "lr" in self:
            dict.__setitem__(self, key, _step_of(self._checked("lr", self["lr"]), power))

    def _checked(self, name: str, value):
        key, power = self._link
        ok = is_real(value) and (value >= 0 and math.isfinite(value) if name == "lr" else value > 0)
        if not ok:
            allowed = "a finite number >= 0 (0: no step)" if name == "lr" else "a number > 0 (infinite: no step)"
            raise ValueError(f"{name} must be {allowed}, got {value!r}")
        return float(value)

    def __setitem__(self, name, value):
        link = self.__dict__.get("_link")
        if link is None or name not in ("lr", link[0]):  # (unpickling sets the items before the link)
            dict.__setitem__(self, name, value)
            return
        key, power = link
        value = self._checked(name, value)
        other, other_value = (key, _step_of(value, power)) if name == "lr" else ("lr", _lr_of(value, power))
        dict.__setitem__(self, name, value)
        dict.__setitem__(self, other, other_value)

    def setdefault(self, name, default=None):
        if name not in self:
            self[name] = default
        return self[name]

    def update(self, *args, **kwargs):
        for name, value in dict(*args, **kwargs).items():
            self[name] = value


class RuleOptimizer(torch.optim.Optimizer):
    """The ``torch.optim`` form of an update rule (module docstring); :func:`optimizer_class`
    makes one class per rule (``stam.dnn.optim.STAM``, ...), with the rule's constructor
    arguments.  Every hyperparameter lives in ``param_groups`` and may change between steps;
    ``state_dict()`` / ``load_state_dict()`` round-trip exactly, and a run resumed from them (with
    its scheduler's) takes the uninterrupted run's steps (each quantised group counts its steps,
    :data:`STEPS`, so it compiles from the same step).  A rule whose step size is not ``lr``
    (STAM: ``1/beta``) has ``lr`` linked to it in every group (:class:`StepLinkedGroup`: setting one
    sets the other), so a ``torch.optim.lr_scheduler`` drives it as it drives SGD, down to ``lr = 0``.  A rule that has stationarity proxies gets ``proxies=`` and
    ``stationarity_proxies()``, the last step's (with ``proxies=True``)."""

    rule: UpdateRule

    def __init__(self, params, compile: bool | str = "auto", proxies: bool = False, **hyper):
        self.rule.check(hyper)
        if compile not in (True, False, "auto"):
            raise ValueError(f"compile must be True, False or 'auto', got {compile!r}")
        if proxies not in (True, False):
            raise ValueError(f"proxies must be True or False, got {proxies!r}")
        self._compile = compile
        self._proxies = proxies
        self._last_step: list[tuple[Tensor, Tensor]] = []  # per quantised group: the rule's proxies
        super().__init__(params, {**hyper, **self.rule.group_defaults, "quantize": True})

    # ------------------------------------------------------------------ groups and state
    def add_param_group(self, param_group: dict) -> None:
        defaulted = "quantize" not in param_group
        super().add_param_group(self._linked(param_group) if isinstance(param_group, dict) else param_group)
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
                self._init_state(group, start=True)

    def _quantized_groups(self) -> Iterator[dict]:
        return (g for g in self.param_groups if g["quantize"])

    def _hyper(self, group: dict, like: Tensor) -> dict[str, Tensor]:
        """The group's hyperparameters as the batched step takes them: ``(1,)`` tensors (float64;
        bool for a flag) on ``like``'s device, the rule's :meth:`~stam.rules.UpdateRule.group_hyper` added."""
        values = {k: v for k, v in group.items() if k not in ("params", "quantize", "weight_decay", STEPS)
                  and isinstance(v, (int, float))}
        values.update(self.rule.group_hyper(group))
        return {k: torch.tensor([v], dtype=torch.bool if isinstance(v, bool) else torch.float64, device=like.device)
                for k, v in values.items()}

    def _init_state(self, group: dict, start: bool = False) -> None:
        """The rule's start (:meth:`~stam.rules.UpdateRule.init`) for every parameter without state
        (all of them at the ``start``, when the group is added; later those whose state was not
        loaded): its forward weights into the parameter (BC: ``W~^0 = Proj_Q(U^0)``), its other
        fields into the state.  A rule whose state is the parameter alone (PSGD) keeps none."""
        keys = self.rule.state_keys
        if not (start or any(k is not None for k in keys)):
            return
        todo = [p for p in group["params"] if not self.state.get(p)]
        if not todo:
            return
        hyper = self._hyper(group, todo[0])
        for p in todo:
            new = self.rule.init(p.detach().unsqueeze(0), hyper, LAYER_Q)
            for key, t in zip(keys, new):
                if key is not None:
                    self.state[p][key] = t.squeeze(0).clone(memory_format=torch.preserve_format)
            p.copy_(self.rule.forward_weights(new).squeeze(0))

    def _layers(self, params: list[Tensor]) -> list[list[Tensor]]:
        """Each parameter's state fields (:func:`kernel`)."""
        return [[p.detach() if key is None else self.state[p][key] for key in self.rule.state_keys] for p in params]

    def _linked(self, group: dict) -> dict:
        """``group`` as a :class:`StepLinkedGroup` for a rule whose step size is not ``lr`` (STAM), else as it is."""
        key, power = self.rule.step_size
        return group if key == "lr" or isinstance(group, StepLinkedGroup) else StepLinkedGroup(group, key, power)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.param_groups = [self._linked(g) for g in self.param_groups]

    # ------------------------------------------------------------------ the step
    @torch.no_grad()
    def step(self, closure: Callable | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._last_step = []
        for group in self.param_groups:
            if group["quantize"]:
                if group["params"]:
                    self._quantized_step(group)
            else:
                self._float_step(group)
        return loss

    def _quantized_step(self, group: dict) -> None:
        """One step of a quantised group: the rule's halves as two compiled kernels where the step is
        compiled, the rule declares halves and no proxies are kept (:func:`staged_kernels`), else
        :func:`kernel`, compiled or eager.  Counts the group's steps (:data:`STEPS`)."""
        params = group["params"]
        hyper = self._hyper(group, params[0])
        self._init_state(group)
        wd = hyper_tensor(group["weight_decay"], params[0]) if group.get("weight_decay") else None
        weights, grads, layers = [p.detach() for p in params], self._grads(params), self._layers(params)
        compiled = self._wants_compile(group)
        if compiled and self.rule.halves and not self._proxies:
            first, second = staged_kernels(self.rule)
            scales = self._run(first, compiled, weights, grads, layers, hyper, wd)
            self._run(second, self._compile is not False, weights, layers, scales, hyper)  # (False: compiling failed)
        else:
            prox = self._run(kernel(self.rule, self._proxies), compiled, weights, grads, layers, hyper, wd)
            if prox is not None:
                self._last_step.append(prox)
        group[STEPS] = group.get(STEPS, 0) + 1

    def _float_step(self, group: dict) -> None:
        """The rule's float step, ``p <- p - lr (g + wd p)`` (STAM: ``lr = 1/beta``), over the
        parameters that have a gradient."""
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return
        hyper = self._hyper(group, params[0])
        wd = group.get("weight_decay") or None
        for p in params:
            g = decayed(p.grad, p, wd)
            new, _ = self.rule.float_step(p.detach().unsqueeze(0), g.unsqueeze(0), None, hyper)
            p.copy_(new.squeeze(0))

    @staticmethod
    def _grads(params: list[Tensor]) -> list[Tensor]:
        """Gradients of a quantised group; a parameter without one has gradient zero (the loss
        does not depend on it, but the coupling/projection still acts on it), as in the batched
        trainer."""
        return [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]

    def _run(self, kernel: Callable, compiled: bool, *args):
        """Run ``kernel(*args)``, compiled by ``torch.compile`` where ``compiled`` (see the module docstring)."""
        if compiled:
            fn = _COMPILED.get(kernel)
            if fn is None:
                fn = _COMPILED[kernel] = torch.compile(kernel, fullgraph=True, dynamic=False,
                                                       options=getattr(kernel, "compile_options", COMPILE_OPTIONS))
            try:
                return fn(*args)
            except compile_errors() as exc:  # no compiler/Triton here: the same kernel, eager
                warn(f"{type(self).__name__}: torch.compile unavailable ({type(exc).__name__}: {first_line(exc, 200)}); "
                     "running the update eagerly", stacklevel=4)
                self._compile = False
        return kernel(*args)

    def _wants_compile(self, group: dict) -> bool:
        """Whether this step of ``group`` is compiled: always (``compile=True``), never (False) or, for
        ``"auto"``, from the group's step :func:`stam.compiling.compile_after_steps` on (its first steps
        eager: a first step takes as long as an eager one, never a compilation)."""
        if self._compile == "auto":
            return group.get(STEPS, 0) >= compile_after_steps(sum(p.numel() for p in group["params"]))
        return bool(self._compile)

    def load_state_dict(self, state_dict):
        """torch's ``load_state_dict``, after checking that ``state_dict`` is one of this optimiser's:
        its groups match, each with a consistent ``lr`` and step (:class:`StepLinkedGroup`), and every
        quantised parameter's state holds each of the rule's fields at the parameter's shape (or no
        state at all: the rule's start).  A ValueError naming what is wrong, and nothing loaded, otherwise."""
        self._check_state_dict(state_dict)
        super().load_state_dict(state_dict)

    def _check_state_dict(self, sd) -> None:
        name = type(self).__name__
        if not isinstance(sd, dict) or not isinstance(sd.get("state"), dict) or not isinstance(sd.get("param_groups"), list):
            raise ValueError(f"{name}.load_state_dict: not an optimiser state dict (it needs a dict 'state' and a list "
                             "'param_groups', as state_dict() gives)")
        saved = sd["param_groups"]
        if len(saved) != len(self.param_groups) or not all(isinstance(g, dict) and isinstance(g.get("params"), list)
                                                            for g in saved):
            raise ValueError(f"{name}.load_state_dict: {len(saved)} parameter groups saved, this optimiser has "
                             f"{len(self.param_groups)}")
        fields = [k for k in self.rule.state_keys if k is not None]
        for i, (group, old) in enumerate(zip(self.param_groups, saved)):
            if len(old["params"]) != len(group["params"]):
                raise ValueError(f"{name}.load_state_dict: group {i} saved with {len(old['params'])} parameters, "
                                 f"this one has {len(group['params'])}")
            self._linked({k: v for k, v in old.items() if k != "params"})  # lr and step consistent
            if not old.get("quantize", True):
                continue
            for p, idx in zip(group["params"], old["params"]):
                st = sd["state"].get(idx)
                if not st:
                    continue
                for key in fields:
                    t = st.get(key) if isinstance(st, dict) else None
                    if not isinstance(t, Tensor) or t.shape != p.shape or not t.is_floating_point():
                        got = "missing" if t is None else (f"shape {tuple(t.shape)}" if isinstance(t, Tensor) else type(t).__name__)
                        raise ValueError(f"{name}.load_state_dict: group {i}, parameter {idx}: state {key!r} must be a "
                                         f"floating-point tensor of shape {tuple(p.shape)}, got {got}")

    # ------------------------------------------------------------------ binary / float weights
    def _views(self, which: str) -> list[tuple[Tensor, Tensor]]:
        """(parameter, its ``which`` weights) for every quantised parameter that does not hold them."""
        pairs = []
        for group in self._quantized_groups():
            self._init_state(group)
            for p, fields in zip(group["params"], self._layers(group["params"])):
                state = self.rule.state_type(*(f.unsqueeze(0) for f in fields))
                v = self.rule.binary_weights(state, LAYER_Q) if which == "binary" else self.rule.float_weights(state)
                v = v.squeeze(0)
                if v.data_ptr() != p.data_ptr():
                    pairs.append((p, v))
        return pairs

    @contextlib.contextmanager
    def binary_weights(self, model=None, images=None, batch: int = 1000):
        """Within the block every quantised parameter holds its truly binary weights (in Q);
        the previous values are restored exactly on exit.  Non-quantised parameters are left as
        they are.  With ``model`` and ``images`` (training images as the model takes them, e.g. the
        normalised :func:`stam.dnn.data.bn_images`), the BatchNorm statistics of ``model`` are, within the block, those of the
        binary network (:func:`stam.dnn.bnstats.reestimated`), and the training's are put back
        on exit: without them BatchNorm normalises the binary network with the statistics of the
        weights training ran on (STAM's W, PSGD's U), which measures another network.
        :func:`stam.dnn.loop.evaluate` does this itself."""
        with torch.no_grad():
            pairs = self._views("binary")
        with _substituted(pairs), _statistics(model, images, batch):
            yield

    @contextlib.contextmanager
    def float_weights(self, model=None, images=None, batch: int = 1000):
        """Within the block every quantised parameter holds its float weights; the previous
        values are restored exactly on exit.  ``model``, ``images``: as for :meth:`binary_weights`."""
        with torch.no_grad():
            pairs = self._views("float")
        with _substituted(pairs), _statistics(model, images, batch):
            yield



def _stationarity_proxies(self) -> dict[str, Tensor]:
    """The last step's proxies of the rule (:meth:`stam.rules.UpdateRule.proxies`; STAM's
    ``{"grad": ||grad L(W^t) + lam (W^t - U^t)||^2, "z": ||X^{t+1} - X^t|| / gamma}``) over all
    quantised parameters together (``z`` combines groups as the norm of the stacked
    differences).  0-d float64 tensors on the parameters' device, computed within the step, so
    reading them costs no host synchronisation; ``float()`` them to read."""
    if not self._proxies:
        raise RuntimeError(f"stationarity_proxies(): {type(self).__name__} keeps them where it is built with "
                           "proxies=True (they cost a pass over the weights every step)")
    if not self._last_step:
        raise RuntimeError("stationarity_proxies(): no step has been taken yet")
    grad_sq, z_sq = (sum(v).reshape(()) for v in zip(*self._last_step))
    return {"grad": grad_sq, "z": z_sq.sqrt()}


def _group_method(name: str):
    def method(self):
        getattr(self.rule, name)(self.param_groups)

    return method


def has_proxies(rule: UpdateRule) -> bool:
    """Whether ``rule`` has stationarity proxies (STAM): its optimiser then takes ``proxies=``."""
    return type(rule).proxies is not UpdateRule.proxies


@functools.lru_cache(maxsize=None)
def optimizer_class(rule: UpdateRule) -> type:
    """The ``torch.optim.Optimizer`` of ``rule``: the torch optimiser it names
    (``torch_optimizer``, the float baseline's SGD), else a :class:`RuleOptimizer` subclass called
    ``rule.optimizer_name`` whose constructor takes ``(params, <rule.arguments>, compile="auto")``
    and which has the rule's ``group_methods`` (BR's ``grow_lambda()``, ``switch_to_projection()``)."""
    if rule.torch_optimizer:
        return load(rule.torch_optimizer)
    args = [a if isinstance(a, tuple) else (a, inspect.Parameter.empty) for a in rule.arguments]
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    sig = inspect.Signature([inspect.Parameter("self", kind), inspect.Parameter("params", kind),
                             *(inspect.Parameter(n, kind, default=d) for n, d in args),
                             inspect.Parameter("compile", kind, default="auto"),
                             *([inspect.Parameter("proxies", kind, default=False)] if has_proxies(rule) else [])])

    def __init__(self, *a, **kw):
        bound = sig.bind(self, *a, **kw)
        bound.apply_defaults()
        values = dict(bound.arguments)
        del values["self"]
        params, compile, proxies = values.pop("params"), values.pop("compile"), values.pop("proxies", False)
        RuleOptimizer.__init__(self, params, compile, proxies, **values)

    __init__.__signature__ = sig
    name = rule.optimizer_name or f"{rule.label or rule.name}Optimizer"
    body = {"rule": rule, "__init__": __init__, "__module__": "stam.dnn.optim",
            "__doc__": f"{rule.label}, {rule.equation}: :class:`stam.dnn.optim_common.RuleOptimizer` of the update rule "
                       f"{type(rule).__module__}.RULE ({type(rule).__doc__ or ''})".strip()}
    if has_proxies(rule):
        body["stationarity_proxies"] = _stationarity_proxies
    for m in rule.group_methods:
        body[m] = _group_method(m)
        body[m].__name__ = m
        body[m].__doc__ = getattr(type(rule), m).__doc__
    return type(name, (RuleOptimizer,), body)


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


__all__ = ["RuleOptimizer", "StepLinkedGroup", "optimizer_class", "has_proxies", "kernel", "staged_kernels", "STEPS", "LAYER_Q", "project_layer", "hyper_tensor",
           "check_hyper"]
