"""``torch.compile`` with an eager fallback, shared by the network kernels (:mod:`stam.dnn`) and
the autograd-composed finite sums (:mod:`stam.synthetic.api`), and compilation ahead of time into
packages kept on disk (:func:`ahead_of_time`).  Imports no torch until used."""

from __future__ import annotations

import importlib
import warnings
from typing import Callable

from stam.errors import first_line, warn


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
            warn(f"{what}: torch.compile unavailable ({type(exc).__name__}: {first_line(exc, 200)}); running eagerly")
            state["run"] = fn
            return fn(*args)

    return run


#: the folder of :func:`ahead_of_time`'s packages inside the toolkit's cache (:func:`stam.io.cache_home`)
AOT_FOLDER = "aot"


def source_digest(modules) -> str:
    """A digest of the source files of ``modules`` (module objects) and of the torch and Python
    versions: what a compiled package of :func:`ahead_of_time` was built from."""
    import hashlib
    import sys
    from pathlib import Path

    import torch

    h = hashlib.sha256(f"{sys.version} torch {torch.__version__}".encode())
    for m in sorted(set(modules), key=lambda m: m.__name__):
        h.update(m.__name__.encode() + b"\0" + Path(m.__file__).read_bytes())
    return h.hexdigest()


def ahead_of_time(fn: Callable, example: tuple, key: str, what: str, options: dict | None = None) -> Callable:
    """``fn`` (a pure function of the tensors, tuples, NamedTuples and dicts in ``example``)
    compiled ahead of time by inductor (``torch.export`` then AOTInductor) into a package kept in
    the toolkit's cache under ``key`` (which must name everything the graph depends on: the code
    (:func:`source_digest`), the shapes, dtypes and device of ``example``).  The first call with a
    key builds the package (seconds to a minute, once); any later process loads it in about 0.02 s,
    without tracing or compiling, so a short run gets the fused kernels of a compiled update for
    free.  The package is written whole or not at all (a temporary file, then a rename); one that
    cannot be loaded (damaged, another torch) is built again.  Where nothing can be kept
    (``STAM_CACHE_DIR=off``), where compiling fails (:func:`compile_errors`) or where export
    cannot trace ``fn``, a warning naming ``what`` and :func:`compiled_or_eager`'s ``torch.compile``
    (itself falling back to ``fn``) instead.  The result must be called with arguments of the
    structure, shapes and dtypes of ``example``.  ``options``: inductor's (as ``torch.compile``'s)."""
    import os
    import tempfile

    import torch

    from stam.io import cache_home

    home = cache_home()
    if home is None:
        return compiled_or_eager(fn, what, dynamic=False, options=options)
    path = home / AOT_FOLDER / f"{key}.pt2"
    loaded = _load_package(path, what) if path.is_file() else None
    if loaded is None:
        class _Fn(torch.nn.Module):
            def forward(self, *args):
                return fn(*args)

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".stage-", suffix=".pt2", dir=path.parent)
            os.close(fd)
            try:
                with warnings.catch_warnings():  # torch's notices about its own internals, not the user's
                    warnings.simplefilter("ignore", FutureWarning)
                    warnings.simplefilter("ignore", DeprecationWarning)
                    program = torch.export.export(_Fn(), example, strict=False)
                    torch._inductor.aoti_compile_and_package(program, package_path=tmp, inductor_configs=dict(options or {}))
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except (*compile_errors(), OSError, RuntimeError, NotImplementedError) as exc:
            warn(f"{what}: ahead-of-time compilation unavailable ({type(exc).__name__}: {first_line(exc, 200)}); "
                 "compiling in this process instead")
            return compiled_or_eager(fn, what, dynamic=False, options=options)
        loaded = _load_package(path, what)
        if loaded is None:
            return compiled_or_eager(fn, what, dynamic=False, options=options)
    return loaded


class _Package:
    """A loaded AOTInductor package: called with the example's structure, it flattens the tensors,
    runs the compiled code and rebuilds the output's structure (both structures parsed once)."""

    def __init__(self, loader):
        import torch.utils._pytree as pytree

        self._loader = loader
        self._out = pytree.treespec_loads(loader.get_call_spec()[1])
        self._flatten, self._unflatten = pytree.tree_leaves, pytree.tree_unflatten

    def __call__(self, *args):
        return self._unflatten(self._loader.boxed_run([t for t in self._flatten(args) if t is not None]), self._out)


def _load_package(path, what: str):
    """The callable of the AOTInductor package ``path``, or None (with a warning) where it cannot
    be loaded.  Loaded by torch's C++ loader itself where it has one (no import of inductor or
    dynamo, about 1.5 s of a process's start, and a few milliseconds to load)."""
    import torch

    try:
        loader_type = getattr(getattr(torch._C, "_aoti", None), "AOTIModelPackageLoader", None)
        if loader_type is not None:
            return _Package(loader_type(str(path), "model", False, 1, -1))
        return torch._inductor.aoti_load_package(str(path))
    except Exception as exc:  # a damaged or foreign file: built again by the caller  # noqa: BLE001
        warn(f"{what}: the compiled package {path.name} could not be loaded ({type(exc).__name__}); building it again",
             stacklevel=3)
        return None


__all__ = ["compile_errors", "compiled_or_eager", "is_compiling", "ahead_of_time", "source_digest", "AOT_FOLDER"]
