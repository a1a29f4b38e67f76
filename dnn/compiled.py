"""The update of the one trainer (:class:`stam.dnn.batched.Trainer`) and how it runs: one step of an
algorithm's update rule for all R runs and all layers (:func:`update`, pure), in eager mode,
compiled by ``torch.compile`` in the process (:func:`update_fn`) or ahead of time into a package
kept on disk (:func:`aot_update_fn`), when compiling pays (:func:`compile_pays`), the runs one
training holds and the images' memory layout on a device (:func:`runs_per_job`, :func:`image_layout`),
and glibc's malloc settings that let a pure update reuse the memory it frees (:func:`keep_freed_memory`).

Each algorithm's batched update is its update rule (:class:`stam.rules.UpdateRule`, one module of
:mod:`stam.rules`), found through :mod:`stam.dnn.catalog`; nothing here knows an algorithm.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from stam.steps import decayed
from stam.compiling import compiled_or_eager, is_compiling
from stam.compiling import AUTO_COMPILE_MIN_NUMEL, COMPILE_OPTIONS
from stam.rules import rule
from stam.rules.base import UpdateRule
from stam.operators import IndicatorQ


def update(rule: UpdateRule, states: list, floats: Tensor, fmom: Tensor, grads_w: list[Tensor], grad_f: Tensor,
           hyper: dict[str, Tensor], qs: list, proxies: bool = False):
    """One step of ``rule`` for all R runs and all layers, pure: returns ``(states, floats, fmom,
    proxies)``.  ``states`` hold the quantised weights of a run in flat ``(R, n)`` buffers, one per
    chunk of consecutive layers (:class:`stam.dnn.wide.Layout`; one chunk but on a CPU for large networks), with
    ``qs`` their F = I_Q, one block per layer; ``floats`` and ``fmom`` every float parameter and its
    buffer.  Weight decay, where the hyperparameters have it, is added to the gradient at the float
    weights (quantised layers) or at the parameter (float ones).  ``proxies``: the rule's
    stationarity proxies (:meth:`stam.rules.UpdateRule.proxies`), ``(R,)`` tensors
    summed over the chunks; None when not asked for or when the rule has none."""
    wd = hyper.get("weight_decay")
    step = _step_by_layer if is_compiling() else _step
    new, prox = [], None
    for state, grad_w, q in zip(states, grads_w, qs):
        st, part = step(rule, state, decayed(grad_w, rule.float_weights(state), wd), hyper, q, proxies)
        new.append(st)
        if part is not None:
            prox = part if prox is None else tuple(a + b for a, b in zip(prox, part))
    floats, fmom = rule.float_step(floats, decayed(grad_f, floats, wd), fmom, hyper)
    return new, floats, fmom, prox


def _step(rule: UpdateRule, state, grad: Tensor, hyper: dict, q, proxies: bool):
    """The rule's step on a whole flat buffer and, where asked, its proxies: ``(new, proxies or None)``."""
    new = rule.step(state, grad, hyper, q)
    return new, (rule.proxies(state, new, grad, hyper) if proxies else None)


def _step_by_layer(rule: UpdateRule, state, grad: Tensor, hyper: dict, q, proxies: bool):
    """:func:`_step`, layer by layer (block by block of Q, each with its own F = I_Q of one block),
    the new state concatenated: what :func:`update` runs under ``torch.compile``.  Every rule is
    separable over the blocks of Q (F = I_Q is a product over layers, the other terms act
    coordinatewise), so this is the same step; but inductor now sees, per layer, one reduction
    (the layer scale of Proj_Q, with the proxies) and one pass writing every new state tensor over
    the same range, and fuses each pair into one loop: twelve passes over memory for STAM instead of
    seventeen, where the flat form's full-length writes could not be fused with its per-layer
    projections."""
    sizes = q.blocks.sizes if q.blocks is not None else None
    if sizes is None or len(sizes) == 1:
        return _step(rule, state, grad, hyper, q, proxies)
    one = IndicatorQ(None)
    fields = [t.split(sizes, dim=1) for t in state]
    grads = grad.split(sizes, dim=1)
    news, prox = [], None
    for k, g in enumerate(grads):
        new, part = _step(rule, remake(state, [f[k] for f in fields]), g, hyper, one, proxies)
        news.append(new)
        if part is not None:
            prox = part if prox is None else tuple(a + b for a, b in zip(prox, part))
    out = []
    for i, t in enumerate(news[0]):  # a field that is another field (PSGD's (u, u)) stays one tensor
        same = next((j for j in range(i) if news[0][j] is t), None)
        out.append(out[same] if same is not None else torch.cat([n[i] for n in news], dim=1))
    return remake(state, out), prox


_COMPILED_UPDATE = {}


def update_fn(name: str, compile: bool, proxies: bool = False):
    """:func:`update` with the rule of algorithm ``name``, compiled with torch.compile where ``compile`` (one fused
    kernel per pass instead of one per arithmetic operation), with an eager fallback where no
    compiler is available (:func:`stam.compiling.compiled_or_eager`)."""
    fn = functools.partial(update, rule(name), proxies=proxies)
    if not compile:
        return fn
    if (name, proxies) not in _COMPILED_UPDATE:
        import torch._dynamo

        # one compiled graph per (algorithm, R, hyperparameter keys): a tuning run meets 5 algorithms
        # at several R, more than dynamo's default of 8 graphs per function (after which it warns and
        # runs eagerly)
        cfg = torch._dynamo.config
        for key in ("recompile_limit", "cache_size_limit"):
            if hasattr(cfg, key):
                setattr(cfg, key, max(getattr(cfg, key), 64))
        _COMPILED_UPDATE[name, proxies] = compiled_or_eager(fn, f"batched {name} update", dynamic=False, options=COMPILE_OPTIONS)
    return _COMPILED_UPDATE[name, proxies]


def aot_update_fn(name: str, proxies: bool = False):
    """:func:`update` with the rule of algorithm ``name`` compiled ahead of time
    (:func:`stam.compiling.ahead_of_time`): one package per algorithm, proxies, layout (shapes,
    dtypes, device, blocks of Q) and version of the code, built by the first run that asks for it
    and loaded by every later one in about 0.02 s.  The package is looked up at the first call."""
    rule_ = rule(name)
    held = {}

    def run(states, floats, fmom, grads_w, grad_f, hyper, qs):
        if "fn" not in held:
            held["fn"] = _aot_package(rule_, name, proxies, (states, floats, fmom, grads_w, grad_f, hyper), qs)
        new, floats, fmom, prox = held["fn"]([tuple(st) for st in states], floats, fmom, list(grads_w), grad_f, hyper)
        return [remake(like, list(st)) for like, st in zip(states, new)], floats, fmom, prox

    return run


def _aot_package(rule_: UpdateRule, name: str, proxies: bool, args: tuple, qs: list):
    """The compiled package of :func:`aot_update_fn` for the arguments ``args`` of :func:`update`
    (``states, floats, fmom, grads_w, grad_f, hyper``) and the blocks ``qs`` (see there)."""
    states, floats, fmom, grads_w, grad_f, hyper = args
    import hashlib
    import sys

    from stam import compiling, operators, quantize, steps
    from stam.rules import base

    likes = list(states)

    def plain(states_, floats_, fmom_, grads_w_, grad_f_, hyper_):  # tuples in and out: nothing to register with export
        new, f, m, prox = update(rule_, [remake(like, list(st)) for like, st in zip(likes, states_)], floats_, fmom_,
                                 grads_w_, grad_f_, hyper_, qs, proxies)
        return [tuple(st) for st in new], f, m, prox

    example = ([tuple(st) for st in states], floats, fmom, list(grads_w), grad_f, hyper)
    leaves, spec = torch.utils._pytree.tree_flatten(example)
    h = hashlib.sha256(f"{name} proxies={proxies} threads={torch.get_num_threads()} {spec} "  # inductor fixes the threads of its loops
                       f"{[(tuple(t.shape), tuple(t.stride()), str(t.dtype), t.device.type) for t in leaves]}".encode())
    for q in qs:  # F = I_Q's blocks are constants of the graph
        b = q.blocks
        h.update(b"none" if b is None else repr((b.sizes, b.num_blocks)).encode() + b.ids.cpu().numpy().tobytes())
    h.update(compiling.source_digest([steps, operators, quantize, compiling, base, sys.modules[__name__],
                                      sys.modules[type(rule_).__module__]]).encode())
    return compiling.ahead_of_time(plain, example, f"update-{name}-{h.hexdigest()[:32]}", f"batched {name} update", COMPILE_OPTIONS)


#: the update's modes of :class:`stam.dnn.batched.Trainer` (``compile=``): ``"auto"`` (:func:`compile_pays`), ``True``
#: (``torch.compile`` in the process), ``False`` (eager), ``"aot"`` (on a CPU, compiled ahead of time
#: into a package kept on disk, :func:`aot_update_fn`; elsewhere as ``True``)
COMPILE_MODES = ("auto", True, False, "aot")


def compile_pays(R: int, steps: int, numel: int = 0) -> bool:
    """Whether compiling the update pays for itself: compilation costs 3-10 s once per algorithm
    and R on 2 CPU cores and saves 20-45% of an eager step from R = 16 on, less below (measured with
    ``benchmarks/dnn_batched_speed.py``), and fuses the many element-wise passes over a large
    network's weights (``numel`` quantised entries per run; the optimisers' threshold
    :data:`stam.compiling.AUTO_COMPILE_MIN_NUMEL`), so: at least 1000 steps, and R >= 16
    or R x numel above that threshold."""
    return steps >= 1000 and (R >= 16 or R * numel >= AUTO_COMPILE_MIN_NUMEL)


def runs_per_job(model: str, device: str = "cpu") -> int:
    """How many runs one batched training should hold.  On a GPU, and for the MLP anywhere, many
    (16): the runs fill the device and share the per-step overhead.  On a CPU a convolutional
    network gains nothing from it: its convolutions are already compute-bound, and the wider
    activations fall out of cache (VGG-11 at width 1/8, R = 8, batch 128, one thread: 0.66 s per
    step wide against 0.47 s for the 8 networks one after the other, ``benchmarks/dnn_batched_speed.py``),
    so there each job trains one run and the job engine runs jobs side by side (``--workers``)."""
    return 16 if str(device).startswith("cuda") or model == "mlp" else 1


def image_layout(device, image_dims: int, R: int) -> torch.memory_format:
    """The layout of the images a :class:`~stam.dnn.batched.Trainer` feeds its network: channels_last for images
    (``image_dims`` 4) on a GPU, and on a CPU for one run (``stam train``): there oneDNN's
    convolutions take it natively, and VGG-11 at width 1/8 trains in 0.74x the time of the
    contiguous layout (1 thread, ``benchmarks/epoch_vs_loop.py``; the same float32 arithmetic,
    summed in another order); R runs on a CPU (grouped convolutions, not measured) stay contiguous."""
    if image_dims == 4 and (torch.device(device).type == "cuda" or R == 1):
        return torch.channels_last
    return torch.contiguous_format


#: glibc's malloc settings for a CPU training (:func:`keep_freed_memory`): allocations up to 32 MiB
#: (glibc's largest mmap threshold) from the heap, and up to 1 GiB of freed heap kept for reuse
MMAP_THRESHOLD_BYTES = 32 << 20
TRIM_THRESHOLD_BYTES = 1 << 30
_MALLOC_SET = []


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to reuse freed memory instead of handing it back to the system (Linux
    with glibc; elsewhere nothing is done and False is returned).  A pure update allocates the new
    state every step and frees the old one; by default glibc trims the freed top of its heap (and
    maps large blocks afresh), so every step page-faults its new state into existence again:
    STAM's compiled update on VGG-11 took 4.8 times ``torch.optim.SGD``'s step that way and 1.44
    times with these settings (``benchmarks/dnn_algo_cost.py``).  The settings are those of the
    environment variables ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_``, applied once
    per process; the memory kept is at most :data:`TRIM_THRESHOLD_BYTES` beyond what is in use."""
    if _MALLOC_SET:
        return _MALLOC_SET[0]
    ok = False
    try:
        import ctypes
        import ctypes.util
        import platform

        if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # <malloc.h>
            ok = bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
    except (OSError, AttributeError):
        ok = False
    _MALLOC_SET.append(ok)
    return ok


def remake(like, tensors: list):
    """A rule state of ``like``'s type (a NamedTuple or a tuple) from its tensors."""
    return like._make(tensors) if hasattr(like, "_make") else type(like)(tensors)

__all__ = [ "update", "update_fn", "aot_update_fn", "COMPILE_MODES", "compile_pays", "runs_per_job", "image_layout",
           "keep_freed_memory", "MMAP_THRESHOLD_BYTES", "TRIM_THRESHOLD_BYTES", "remake"]
