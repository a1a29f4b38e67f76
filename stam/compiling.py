"""``torch.compile`` with an eager fallback, shared by the network kernels (:mod:`stam.dnn`) and
the autograd-composed finite sums (:mod:`stam.synthetic.api`).  Imports no torch until used."""

from __future__ import annotations

import importlib
import warnings
from typing import Callable


def compile_errors() -> tuple[type[BaseException], ...]:
    """The exceptions by which ``torch.compile`` says it cannot compile here (no C++ compiler, no
    Triton, an unsupported construct).  They are raised while compiling, before the kernel has
    written anything, so running the same kernel eagerly instead is safe; any other exception
    (out of memory, a bad tensor) is raised as it is."""
    found = []
    for module, names in (("torch._dynamo.exc", ("TorchDynamoException",)),
                          ("torch._inductor.exc", ("InductorError", "InvalidCxxCompiler", "CppCompileError",
                                                    "TritonMissing", "GPUTooOldForTriton", "CUDACompileError"))):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        found += [getattr(mod, n) for n in names if isinstance(getattr(mod, n, None), type)]
    return tuple(found)


def is_compiling() -> bool:
    """Whether ``torch.compile`` is tracing the calling code (where a computation is laid out for
    inductor's fusion rather than for eager kernels)."""
    import torch

    check = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return bool(check()) if check is not None else False


def compiled_or_eager(fn: Callable, what: str, **options) -> Callable:
    """``fn`` compiled by ``torch.compile(fn, **options)``; where compiling fails with one of
    :func:`compile_errors`, a warning naming ``what`` and ``fn`` itself from then on."""
    import torch

    compiled = torch.compile(fn, **options)
    state = {"run": compiled}

    def run(*args):
        try:
            return state["run"](*args)
        except compile_errors() as exc:
            if state["run"] is fn:
                raise
            warnings.warn(f"{what}: torch.compile unavailable ({type(exc).__name__}: {exc}); running eagerly",
                          RuntimeWarning, stacklevel=2)
            state["run"] = fn
            return fn(*args)

    return run


__all__ = ["compile_errors", "compiled_or_eager", "is_compiling"]
