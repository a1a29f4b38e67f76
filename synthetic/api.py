"""The public API of a three-block problem ``min_{x,y} F(x) + G(y) + H(x, y)`` (eq. (model)).

Three protocols say what each block provides; :class:`stam.synthetic.problems.ThreeBlockProblem`
(built by :func:`compose`) joins three blocks and a sampling into what STAM
(:func:`stam.steps.stam_step`), the stationarity measure ``S_t`` of Theorem conv, the
constants of Assumption ass2 / Lemma es-lemma and the rate experiment need.  The built-in
families are instances of the same protocols (:class:`stam.synthetic.losses.FiniteSumLoss`,
the couplings of :mod:`stam.synthetic.couplings`, the penalties of
:mod:`stam.synthetic.penalties`); ``docs/your-problem.md`` walks through a problem of one's own.

All tensors are batched over runs: ``y`` is ``(R, n)``, ``x`` is ``(R, m)``, values are ``(R,)``.

Constants.  A block states a constant it knows in closed form (``L1()``, ``L1_i()``,
``inf_lower_bound``, ``constants()``); a constant it does not know is ``None`` / absent and is then
*estimated* (:mod:`stam.synthetic.estimate`), which the problem's
:meth:`~stam.synthetic.problems.ThreeBlockProblem.constants_report` labels
``"estimated (not a guarantee)"``.

Building blocks a user composes (no subclassing):

- :class:`TorchFiniteSum`: ``G(y) = (1/N) sum_i loss(y, data_i) + reg(y)`` from any per-sample torch
  function; gradients by autograd, batched over runs and samples with ``torch.func.vmap``;
- :class:`TorchCoupling`: any ``H(x, y)`` with autograd gradients and, where no closed form is
  given, a numerical x-step (eq. (algx)) by L-BFGS to tolerance;
- the couplings :class:`~stam.synthetic.couplings.Quadratic` (``(lam/2)||x - y||^2``),
  :class:`~stam.synthetic.couplings.LinearCoupling` (``(1/2)||Ax - By||^2``),
  :class:`~stam.synthetic.couplings.CosineCoupling`;
- the penalties :class:`~stam.synthetic.penalties.L1Norm`, :class:`~stam.synthetic.penalties.MCP`,
  :class:`~stam.synthetic.penalties.QuantizedIndicator` (``F = I_Q``).
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import torch
from torch import Tensor

from stam.steps import Scalar
from stam.synthetic.estimate import LARGE
from stam.synthetic.sampling import Sampling


@runtime_checkable
class FiniteSum(Protocol):
    """``G(y) = (1/N) sum_i G_i(y)`` (eq. (eq500)) on ``y in R^n``."""

    n: int
    N: int

    def value(self, y: Tensor) -> Tensor:
        """``G(y)`` per run, ``(R,)``."""

    def grad(self, y: Tensor) -> Tensor:
        """``nabla G(y)``, ``(R, n)``."""

    def grad_batch(self, y: Tensor, idx: Tensor) -> Tensor:
        """``(1/b) sum_k nabla G_{idx[r, k]}(y_r)`` for ``idx`` ``(R, b)``: the stochastic gradient of
        eq. (stochastic G) for a b-nice draw."""

    def value_batch(self, y: Tensor, idx: Tensor) -> Tensor:
        """``(1/b) sum_k G_{idx[r, k]}(y_r)``, ``(R,)``."""

    def L1(self) -> float | None:
        """Certified Lipschitz constant of ``nabla G`` (Assumption ass2 (a1)), or ``None``."""

    def L1_i(self) -> Tensor | None:
        """Certified ``L1^i`` of every ``nabla G_i`` (Lemma es-lemma), ``(N,)``, or ``None``."""


@runtime_checkable
class Coupling(Protocol):
    """``H(x, y)``, smooth; the x-step of eq. (algx) is ``prox_H``."""

    def H(self, x: Tensor, y: Tensor) -> Tensor:
        """``H(x, y)`` per run, ``(R,)``."""

    def grad_x_H(self, x: Tensor, y: Tensor) -> Tensor: ...

    def grad_y_H(self, x: Tensor, y: Tensor) -> Tensor: ...

    def prox_H(self, z: Tensor, y: Tensor, gamma: Scalar) -> Tensor:
        """``argmin_x H(x, y) + ||x - z||^2 / (2 gamma)`` (eq. (algx))."""

    def check_gamma(self, gamma: float) -> None:
        """Raise ``ValueError`` where the x-step is not a well-posed minimisation at ``gamma``."""

    def constants(self) -> dict:
        """The certified ones of ``L2 .. L5`` (``L_k^*`` of eq. (lip-const)), ``l`` and ``H_inf``;
        a missing key is estimated."""


@runtime_checkable
class Penalty(Protocol):
    """``F(x)``, proper and lower semicontinuous, with an exact prox."""

    def value(self, u: Tensor) -> Tensor:
        """``F(u)`` per run (``+inf`` off the domain)."""

    def prox_F(self, v: Tensor, gamma: Scalar) -> Tensor:
        """``argmin_u F(u) + ||u - v||^2 / (2 gamma)`` (eq. (algu))."""

    def dist2(self, u: Tensor, g: Tensor) -> Tensor:
        """``dist^2(0, g + dF(u))`` with the limiting subdifferential: the F-term of ``S_t``."""

    def check_gamma(self, gamma: float) -> None: ...

    def describe(self) -> str: ...


def _sum_value_grad(values: Callable[[Tensor], Tensor], y: Tensor) -> tuple[Tensor, Tensor]:
    """``(values(y), nabla_y values(y))`` per run, from one forward and one reverse pass."""
    with torch.enable_grad():
        yy = y.detach().requires_grad_(True)
        v = values(yy)
        (g,) = torch.autograd.grad(v.sum(), yy)
    return v.detach(), g


def _sum_grad(values: Callable[[Tensor], Tensor], y: Tensor) -> Tensor:
    """``nabla_y`` of ``values(y)`` (``(R,)``) per run, by one reverse pass over the summed values of
    all runs (the runs are independent, so the gradient of the total is the per-run gradients side
    by side): less dispatch than ``vmap(grad(...))``, and a regulariser rides in the same pass."""
    return _sum_value_grad(values, y)[1]


#: ``compile="auto"``: the calls of one shape after which :meth:`TorchFiniteSum.grad_batch` compiles.
#: Compiling costs 2-7 s once and saves about 0.7 ms per call (n = 1000, b = 8, R = 16, 2 cores), so
#: it pays after some 3,000-8,000 calls; compiling once the calls so far are of that order (the
#: ski-rental rule) never costs more than twice the better choice made in hindsight.
AUTO_COMPILE_CALLS = 2000


def _rows(data, idx: Tensor):
    return tuple(d[idx] for d in data)


class TorchFiniteSum:
    """``G(y) = (1/N) sum_i loss(y, *data_i) + reg(y)`` from a per-sample torch function.

    ``loss(y, *row)`` returns a 0-d tensor for one ``y`` ``(n,)`` and one sample ``row`` (the i-th
    slice of each tensor of ``data``, all with leading dimension N); ``reg(y)`` (optional) a 0-d
    tensor.  So ``G_i = loss_i + reg``.  Values batched over runs and samples by
    ``torch.func.vmap``, gradients by one reverse-mode pass over their sum (``loss`` must be vmappable: torch operations, no
    ``.item()`` or data-dependent Python control flow).

    Certified constants, where the user knows them: ``L1``, ``L1_i`` (a float for all i or an
    ``(N,)`` tensor), ``inf_lower_bound`` (``<= G^inf``), ``inf_i_lower_bound``
    (``<= (1/N) sum_i G_i^inf``); left ``None`` they are estimated.  ``chunk`` bounds the samples
    evaluated at once by :meth:`value` and :meth:`grad` (memory); ``compile`` see :meth:`grad_batch`."""

    def __init__(self, loss: Callable, data, n: int, reg: Callable | None = None, *, L1: float | None = None,
                 L1_i=None, inf_lower_bound: float | None = None, inf_i_lower_bound: float | None = None,
                 chunk: int = 2**26, compile: bool | str = "auto"):
        from torch.func import grad, vmap

        if compile not in (True, False, "auto"):
            raise ValueError(f"compile must be True, False or 'auto', got {compile!r}")

        self.data = tuple(data) if isinstance(data, (tuple, list)) else (data,)
        if not self.data or any(d.shape[0] != self.data[0].shape[0] for d in self.data):
            raise ValueError("data: one or more tensors with the same leading dimension N")
        self.N, self.n = int(self.data[0].shape[0]), int(n)
        self.loss, self.reg, self.chunk = loss, reg, int(chunk)
        self._L1, self._L1_i = L1, L1_i
        self.inf_lower_bound, self.inf_i_lower_bound = inf_lower_bound, inf_i_lower_bound
        k = len(self.data)
        per = (None,) + (0,) * k
        each = vmap(loss, in_dims=per)  # one y, a block of samples -> (b,)
        self._val_rows = vmap(each, in_dims=(0,) + (0,) * k)  # y (R, n), rows (R, b, ...) -> (R, b)
        self._val_all = vmap(each, in_dims=(0,) + (None,) * k)  # rows shared by the runs
        self._reg_val = vmap(reg) if reg is not None else None
        self._each_grad = vmap(grad(loss), in_dims=(0,) * (k + 1))  # one y row per sample row
        self.compile, self._calls, self._kernels = compile, {}, {}

    def _blocks(self, R: int):
        """Slices of the N samples, at most ``chunk`` numbers of size ``R * n`` each (memory)."""
        step = max(1, min(self.N, self.chunk // max(1, R * self.n)))
        return [slice(i, i + step) for i in range(0, self.N, step)]

    def _reg(self, y: Tensor) -> Tensor | float:
        return 0.0 if self._reg_val is None else self._reg_val(y)

    def value(self, y: Tensor) -> Tensor:
        total = sum(self._val_all(y, *(d[sl] for d in self.data)).sum(dim=1) for sl in self._blocks(y.shape[0]))
        return total / self.N + self._reg(y)

    def values_i(self, y: Tensor) -> Tensor:
        """``G_i(y)`` for all i, ``(R, N)``."""
        vals = torch.cat([self._val_all(y, *(d[sl] for d in self.data)) for sl in self._blocks(y.shape[0])], dim=1)
        return vals + (self._reg(y)[:, None] if self._reg_val is not None else 0.0)

    def grad(self, y: Tensor) -> Tensor:
        return sum(_sum_grad(self._part(sl, i == 0), y) for i, sl in enumerate(self._blocks(y.shape[0])))

    def grad_batch(self, y: Tensor, idx: Tensor) -> Tensor:
        """The per-sample gradients by ``vmap(grad(loss))`` over the ``R b`` (run, sample) pairs,
        averaged per run; the regulariser's gradient by one reverse pass.  STAM's hot path: with
        ``compile="auto"`` the per-sample kernel is compiled (``torch.compile``, eager where that is
        unavailable) once a shape has been seen :data:`AUTO_COMPILE_CALLS` times (a run long enough
        to pay for the seconds compiling costs); ``True``/``False`` force it.  The compiled kernel
        may round differently from the eager one (last bits)."""
        R, b = idx.shape
        rows = _rows(self.data, idx.reshape(-1))
        yr = y.repeat_interleave(b, dim=0) if b > 1 else y
        g = self._kernel(yr, rows)(yr, *rows).view(R, b, -1).mean(dim=1)
        return g if self._reg_val is None else g + _sum_grad(self._reg_val, y)

    def _kernel(self, yr: Tensor, rows: tuple):
        """The per-sample gradient map for these shapes: eager, or compiled (see :meth:`grad_batch`)."""
        if self.compile is False:
            return self._each_grad
        key = (tuple(yr.shape), yr.dtype, yr.device.type, tuple(tuple(r.shape) for r in rows))
        if key in self._kernels:
            return self._kernels[key]
        self._calls[key] = self._calls.get(key, 0) + 1
        if self.compile is True or self._calls[key] >= AUTO_COMPILE_CALLS:
            from stam.compiling import compiled_or_eager

            self._kernels[key] = compiled_or_eager(self._each_grad, "TorchFiniteSum.grad_batch", dynamic=False)
            return self._kernels[key]
        return self._each_grad

    def value_batch(self, y: Tensor, idx: Tensor) -> Tensor:
        return self._val_rows(y, *_rows(self.data, idx)).mean(dim=1) + self._reg(y)

    def value_and_grad(self, y: Tensor) -> tuple[Tensor, Tensor]:
        """``(G(y), nabla G(y))`` in one pass over the samples (the estimators' minimisations)."""
        blocks = self._blocks(y.shape[0])
        vals, grads = zip(*(_sum_value_grad(self._part(sl, i == 0), y) for i, sl in enumerate(blocks)))
        return sum(vals), sum(grads)

    def value_and_grad_batch(self, y: Tensor, idx: Tensor) -> tuple[Tensor, Tensor]:
        rows = _rows(self.data, idx)
        return _sum_value_grad(lambda v: self._val_rows(v, *rows).mean(dim=1) + self._reg(v), y)

    def _part(self, sl: slice, with_reg: bool):
        """``y -> (1/N) sum_{i in sl} loss_i(y) (+ reg(y))``: one block of samples, the regulariser once."""
        return lambda v: self._val_all(v, *(d[sl] for d in self.data)).sum(dim=1) / self.N + (self._reg(v) if with_reg else 0.0)

    def L1(self) -> float | None:
        return None if self._L1 is None else float(self._L1)

    def L1_i(self) -> Tensor | None:
        if self._L1_i is None:
            return None
        return torch.as_tensor(self._L1_i, dtype=torch.float64).expand(self.N).clone()

    def to(self, device=None, dtype=None) -> "TorchFiniteSum":
        conv = lambda t: t.to(device=device, dtype=dtype) if t.is_floating_point() else t.to(device)  # noqa: E731
        self.data = tuple(conv(d) for d in self.data)
        return self


class TorchCoupling:
    """Any smooth ``H(x, y)`` from a torch function ``H(x, y)`` of one run (``x`` ``(m,)``, ``y``
    ``(n,)``, a 0-d tensor out); gradients by autograd (``torch.func``, batched over runs).

    The x-step (eq. (algx)) is ``prox(z, y, gamma)`` when given (batched, a closed form), else
    computed numerically: L-BFGS (strong Wolfe) on the sum over runs of
    ``H(x, y) + ||x - z||^2 / (2 gamma)`` (the runs are independent problems), from ``z``, to a
    gradient norm ``tol`` (``max_iter`` iterations at most).  It is the exact x-step when that
    problem is strongly convex, i.e. ``gamma l < 1``: :meth:`check_gamma` refuses other gamma
    where ``l`` is given.  For ``x`` of dimension ``m <= newton_max`` the L-BFGS point is then
    polished by Newton steps with the exact Hessian ``nabla_xx^2 H + I/gamma`` (autograd), which
    take it to machine precision.

    ``constants``: the certified ones of ``L2 .. L5, l, H_inf`` (the others are estimated)."""

    def __init__(self, H: Callable, prox: Callable | None = None, constants: dict | None = None, *, tol: float = 1e-10,
                 max_iter: int = 200, newton_max: int = 512):
        from torch.func import grad, hessian, vmap

        self.fn, self.prox, self._constants = H, prox, dict(constants or {})
        unknown = set(self._constants) - {"L2", "L3", "L4", "L5", "l", "H_inf"}
        if unknown:
            raise ValueError(f"constants: unknown key(s) {sorted(unknown)}; known: L2, L3, L4, L5, l, H_inf")
        self.tol, self.max_iter, self.newton_max = float(tol), int(max_iter), int(newton_max)
        self._hxx = vmap(hessian(H, argnums=0))
        self._val = vmap(H)
        self._gx = vmap(grad(H, argnums=0))
        self._gy = vmap(grad(H, argnums=1))

    def H(self, x: Tensor, y: Tensor) -> Tensor:
        return self._val(x, y)

    def grad_x_H(self, x: Tensor, y: Tensor) -> Tensor:
        return self._gx(x, y)

    def grad_y_H(self, x: Tensor, y: Tensor) -> Tensor:
        return self._gy(x, y)

    def constants(self) -> dict:
        return dict(self._constants)

    def check_gamma(self, gamma: float) -> None:
        l = self._constants.get("l")
        if self.prox is None and l is not None and l > 0 and float(gamma) * l >= 1:
            raise ValueError(f"the numerical x-step needs gamma*l < 1 (l = {l:g}), got gamma = {float(gamma):g}")

    def prox_H(self, z: Tensor, y: Tensor, gamma: Scalar) -> Tensor:
        if self.prox is not None:
            return self.prox(z, y, gamma)
        g = gamma if not isinstance(gamma, Tensor) else gamma.reshape(-1, 1)
        x = z.detach().clone().requires_grad_(True)
        opt = torch.optim.LBFGS([x], lr=1, max_iter=self.max_iter, tolerance_grad=self.tol, tolerance_change=0,
                                history_size=20, line_search_fn="strong_wolfe")
        y, z = y.detach(), z.detach()

        def closure():
            opt.zero_grad()
            d = x - z
            val = self._val(x, y).sum() + ((d * d) / (2 * g)).sum()
            val.backward()
            return val

        with torch.enable_grad():
            opt.step(closure)
        x = x.detach()
        if x.shape[1] <= self.newton_max:
            eye = torch.eye(x.shape[1], dtype=x.dtype, device=x.device)
            for _ in range(3):
                grad = self._gx(x, y) + (x - z) / g
                hess = self._hxx(x, y) + eye / (g if not isinstance(g, Tensor) else g[:, :, None])
                x = x - torch.linalg.solve(hess, grad.unsqueeze(-1)).squeeze(-1)
        return x


def compose(G, H, F, b: int, y0: Tensor, *, name: str = "user", replacement: bool = False, z_prev: Tensor | None = None,
            quantised: bool = False, gh_starts: int | None = None, settings=None, params: dict | None = None):
    """The :class:`~stam.synthetic.problems.ThreeBlockProblem` of the blocks ``G``
    (:class:`FiniteSum`), ``H`` (:class:`Coupling`) and ``F`` (:class:`Penalty`) with b-nice sampling
    of G's N terms (:class:`~stam.synthetic.sampling.Sampling`), the start ``y^0`` (and ``z^{-1}``,
    default ``y^0``).  ``gh_starts``: starts of the L-BFGS search for a near-minimiser of ``G + H``
    (its value is the certified upper bound of ``(G+H)^inf`` in ``Delta^inf``; default 4, and 1
    where G's data has more than :data:`stam.synthetic.estimate.LARGE` numbers, since each start
    costs tens of passes over them); ``settings`` those of
    the estimators (:class:`stam.synthetic.estimate.EstimatorSettings`; default
    :meth:`~stam.synthetic.estimate.EstimatorSettings.for_size`)."""
    from stam.synthetic.problems import ThreeBlockProblem

    for block, proto, label in ((G, FiniteSum, "G"), (H, Coupling, "H"), (F, Penalty, "F")):
        missing = missing_methods(block, proto)
        if missing:
            raise TypeError(f"{label} lacks {', '.join(missing)} (the {proto.__name__} protocol of stam.synthetic.api)")
    return ThreeBlockProblem(name, G, H, F, Sampling(G.N, b, replacement), y0.reshape(-1),
                             None if z_prev is None else z_prev.reshape(-1), quantised=quantised,
                             params=dict(params or {}, n=G.n, N=G.N, b=b, replacement=replacement),
                             gh_starts=gh_starts if gh_starts is not None else (4 if G.n * G.N <= LARGE else 1),
                             settings=settings)


def theorem_check(problem, T_grid=(10, 40, 160, 640), R: int = 16, gamma_fraction: float = 0.5, seed: int = 0,
                  progress: bool = False) -> dict:
    """From a problem to Theorem conv's verdict in one call: the labelled constants, the admissible
    ``(gamma, beta)`` of the one rule (:func:`stam.theory.symbolic.numeric.admissible_parameters`), ``R`` runs
    of STAM (batched seeds) per horizon and ``min_t E S_t`` against the theorem's bound
    (:func:`stam.synthetic.rates.run_rates`).  Returns ``{"holds", "certified", "estimated",
    "min_ratio", "summary", "constants", "result"}``: ``holds`` says that bound >= min_t E S_t at
    every horizon; where ``estimated`` names constants, the bound rests on estimates."""
    from stam.synthetic.rates import run_rates
    from stam.theory.symbolic.numeric import StepSizes

    result = run_rates(problem, list(T_grid), R=R, step_sizes=StepSizes(gamma_fraction=gamma_fraction), seed=seed,
                       progress=progress)
    report = problem.constants_report()
    estimated = [k for k in ("L1", "L2", "L3", "L4", "L5", "l", "A", "C") if report[k]["status"] != "certified"]
    ratios = [r["ratio"] for r in result["rows"]]
    holds = all(r is not None and r >= 1 for r in ratios)
    low = min((r for r in ratios if r is not None), default=None)
    summary = (f"{problem.name}: Theorem conv's bound {'holds' if holds else 'FAILS'} at T = "
               f"{', '.join(str(r['T']) for r in result['rows'])} (bound / min_t E S_t >= "
               f"{'-' if low is None else format(low, '.3g')}; gamma = {result['params']['gamma']:.3g}); constants "
               + ("all certified" if not estimated else f"ESTIMATED (not a guarantee): {', '.join(estimated)}"))
    return dict(holds=holds, certified=not estimated, estimated=estimated, min_ratio=low, summary=summary,
                constants=report, result=result)


def missing_methods(obj, proto) -> list[str]:
    """The members of the protocol ``proto`` that ``obj`` lacks (empty: it implements it)."""
    names = [k for k in proto.__dict__ if not k.startswith("_") and (callable(proto.__dict__[k]))]
    names += list(getattr(proto, "__annotations__", {}))
    return [k for k in dict.fromkeys(names) if not hasattr(obj, k)]


def check_problem(problem, where: str, R: int = 2) -> None:
    """A problem of one's own (``where``: how to name it, ``--problem 'FILE.py:NAME'``) tried once
    before any work, the same way for every command that loads one: its constants (a dict; the
    theory's constants finite, lambda's ``L2*`` >= 0, which :class:`stam.theory.symbolic.numeric.Constants`
    checks), then the start of ``R`` runs and, at it, each operator STAM and the measure call:
    a tensor of the right shape with finite values (``S`` and its parts >= 0).  Anything else is one
    :class:`stam.errors.UsageError` line naming the method and what was wrong."""
    probe = _Probe(problem, where)
    constants = _checked_constants(probe)
    with torch.no_grad():
        _check_operators(probe, R, _trial_gamma(constants))
    probe.returns("describe", probe.call("describe"), str, "a string")


class _Probe:
    """The calls of :func:`check_problem` on ``problem`` and its one-line failures, named by ``where``."""

    def __init__(self, problem, where: str):
        self.problem, self.where = problem, where

    def fail(self, message: str):
        from stam.errors import UsageError

        raise UsageError(f"{self.where}: {message}")

    def call(self, method: str, *args):
        from stam import userfile

        return userfile.call(self.where, self.problem, method, *args)

    def returns(self, method: str, value, kind: type, what: str):
        """``value`` (what ``method()`` returned) where it is a ``kind``, else a failure naming ``what`` it should be."""
        if not isinstance(value, kind):
            self.fail(f"{method}() returned {type(value).__name__}, not {what}")
        return value

    def tensor(self, method: str, value, shape: tuple | None, nonneg: bool = False) -> Tensor:
        """``value`` where it is a tensor of ``shape`` (any, ``None``) with finite (and, ``nonneg``, >= 0) entries."""
        if not isinstance(value, torch.Tensor):
            self.fail(f"{method}() returned {type(value).__name__}, not a tensor" + (f" of shape {tuple(shape)}" if shape else ""))
        if shape is not None and tuple(value.shape) != tuple(shape):
            self.fail(f"{method}() returned a tensor of shape {tuple(value.shape)}, not {tuple(shape)}")
        if not bool(torch.isfinite(value).all()):
            self.fail(f"{method}() returned a value that is not finite (nan or inf) at the start point")
        if nonneg and bool((value < 0).any()):
            self.fail(f"{method}() returned a negative value at the start point; it must be >= 0")
        return value


def _checked_constants(probe: _Probe):
    """The problem's ``theory_constants()`` as :class:`stam.theory.symbolic.numeric.Constants` (finite, lambda's
    ``L2*`` >= 0), its ``constants_report()`` and ``constants()`` dicts checked on the way, in the order
    and with the words of ``stam stepsize --problem``."""
    from stam.theory.symbolic import numeric

    c = probe.call("theory_constants")
    probe.returns("constants_report", probe.call("constants_report"), dict, "a dict")
    probe.returns("constants", probe.call("constants"), dict, "a dict")
    try:
        return numeric.Constants(L1=c.L1, L2=c.L2, L3=c.L3, L4=c.L4, L5=c.L5, l=c.l, A=c.A, C=c.C)
    except AttributeError:
        probe.fail(f"theory_constants() returned {type(c).__name__}, not stam.theory.symbolic.numeric.Constants")
    except (ValueError, TypeError) as exc:  # a constant nan, inf or negative (a negative lambda: L2* < 0)
        probe.fail(f"its constants: {exc}")


def _trial_gamma(c) -> float:
    """The gamma the operators are tried at: half of Theorem conv's ``gamma_max`` where that is a
    positive number, else ``1e-3``."""
    import math

    from stam.theory.symbolic import numeric

    try:
        gmax = float(numeric.gamma_max(c))
    except (ValueError, TypeError, ArithmeticError):
        gmax = math.nan
    return 0.5 * gmax if math.isfinite(gmax) and gmax > 0 else 1e-3


def _check_operators(probe: _Probe, R: int, gamma: float) -> None:
    """The start of ``R`` runs (the state ``(y, x, u, z)``) and, at it, every operator of STAM's
    step (eqs. (algx), (algu), (algy)) and the measure: tensors of the right shape, finite values."""
    state = probe.call("start", R, gamma)
    if not (isinstance(state, tuple) and len(state) == 4):
        probe.fail(f"start() returned {type(state).__name__}, not the state (y, x, u, z) of stam.steps.stam_init")
    y = probe.tensor("start", state[0], None)
    if y.dim() < 2 or y.shape[0] != R:
        probe.fail(f"start({R}, gamma) returned y of shape {tuple(y.shape)}, not ({R}, n)")
    for part in state[1:]:
        probe.tensor("start", part, None)
    x, u = state[1], state[2]
    gen = torch.Generator(device=y.device).manual_seed(0)
    probe.tensor("stochastic_grad", probe.call("stochastic_grad", y, gen), y.shape)
    probe.tensor("grad_y_H", probe.call("grad_y_H", x, y), y.shape)
    probe.tensor("prox_H", probe.call("prox_H", x, y, gamma), x.shape)
    probe.tensor("prox_F", probe.call("prox_F", x, gamma), x.shape)
    probe.tensor("stationarity", probe.call("stationarity", u, y), (R,), nonneg=True)
    probe.tensor("lyapunov", probe.call("lyapunov", state, gamma), (R,))


#: what a problem object needs for `stam stepsize --problem` and `stam synthetic run --problem`
PROBLEM_METHODS = ("theory_constants", "constants_report", "constants", "check_gamma", "start", "stochastic_grad",
                   "stationarity", "lyapunov", "describe", "grad_y_H", "prox_H", "prox_F")

__all__ = ["FiniteSum", "Coupling", "Penalty", "TorchFiniteSum", "TorchCoupling", "compose", "theorem_check", "missing_methods",
           "PROBLEM_METHODS", "AUTO_COMPILE_CALLS", "check_problem"]
