"""``torch.compile`` with an eager fallback, shared by the network kernels (:mod:`stam.dnn`) and
the autograd-composed finite sums (:mod:`stam.synthetic.api`), and compilation ahead of time into
packages kept on disk (:func:`ahead_of_time`).  Imports no torch until used."""

from __future__ import annotations

import importlib
import math
import warnings
from typing import Callable

from stam.errors import first_line, warn
from stam.io import STALE_S, folder_lock


#: ``compile="auto"`` compiles a quantised group with at least this many entries.
AUTO_COMPILE_MIN_NUMEL = 1 << 20

#: what compiling a network's update costs once, in seconds (``torch.compile`` of STAM's two halves for
#: VGG-11's parameters on a 2-core CPU with an empty inductor cache: 32 s; ``benchmarks/dnn_optim_speed.py --cold``)
COMPILE_COST_S = 30.0
#: what an eager step loses against the compiled one, in seconds per quantised entry (STAM, the slowest
#: rule eagerly: 169 against 40 ms per step on VGG-11's 9.2 M entries, one CPU thread; same benchmark)
EAGER_LOSS_S_PER_ENTRY = 1.4e-8


def compile_after_steps(numel: int) -> float:
    """The step from which ``compile="auto"`` compiles the update of a parameter group of ``numel``
    quantised entries: the first at which the time the eager steps have lost reaches what compiling
    costs (:data:`COMPILE_COST_S` over ``numel`` :data:`EAGER_LOSS_S_PER_ENTRY` per step).  The rule of
    renting skis until their price is spent: whatever the length of the run, its update costs at most
    twice what the better of "always eager" and "compile at once" would have, and the first step is
    never a compilation.  A count of steps, not a clock, so a run is the same numbers every time
    (its steps before this one eager, the rest compiled); ``inf`` for an empty group."""
    return math.ceil(COMPILE_COST_S / (numel * EAGER_LOSS_S_PER_ENTRY)) if numel > 0 else math.inf


#: Inductor options of the kernels.  The steps are memory-bound; by default inductor stores an
#: intermediate with several consumers (e.g. ``y^{t+1}``, read by the reduction of the projection
#: and by the write-back) in a full-size temporary, which costs more than recomputing it (and on
#: the CPU every step page-faults the freshly mapped temporaries in).  A high threshold makes it
#: recompute: each layer is then one reduction pass and one update pass over its tensors.
COMPILE_OPTIONS = {"realize_reads_threshold": 64}


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


#: the least free space (bytes) of the cache's file system for building a package there: torch's
#: package writer aborts the process (SIGABRT) when the disk fills while it writes
AOT_MIN_FREE = 256 << 20
#: the entry inside a package (under its top folder) holding the key it was built for
KEY_ENTRY = "stam/key"


def ahead_of_time(fn: Callable, example: tuple, key: str, what: str, options: dict | None = None) -> Callable:
    """``fn`` (a pure function of the tensors, tuples, NamedTuples and dicts in ``example``)
    compiled ahead of time by inductor (``torch.export`` then AOTInductor) into a package kept in
    the toolkit's cache under ``key`` (which must name everything the graph depends on: the code
    (:func:`source_digest`), the shapes, dtypes and device of ``example``).  The first call with a
    key builds the package (seconds to a minute, once); any later process loads it in about 0.02 s,
    without tracing or compiling, so a short run gets the fused kernels of a compiled update for
    free.  The package is written whole or not at all (a temporary file, then a rename) and holds
    its key (:data:`KEY_ENTRY`); one that cannot be loaded (damaged, another torch), one that is
    not a regular file (a FIFO, a link) or whose key is another (a package of another graph put
    at this name) is built again.  A second process that needs the package while the first
    builds it waits for it (a lock on the package folder), then loads it.  A build's leftovers
    (``.stage-*``) are removed by the next build.  Where nothing can be kept
    (``STAM_CACHE_DIR=off``, less than :data:`AOT_MIN_FREE` free on its disk, a folder that
    cannot be written), where compiling fails (:func:`compile_errors`) or where export cannot
    trace ``fn``, a warning naming ``what`` and :func:`compiled_or_eager`'s ``torch.compile``
    (itself falling back to ``fn``) instead.  The result must be called with arguments of the
    structure, shapes and dtypes of ``example``.  ``options``: inductor's (as ``torch.compile``'s)."""
    import os

    from stam.io import cache_home

    home = cache_home()
    if home is None:
        return compiled_or_eager(fn, what, dynamic=False, options=options)
    path = home / AOT_FOLDER / f"{key}.pt2"
    loaded = _load_package(path, what, key, example=example) if os.path.lexists(path) else None
    if loaded is not None:
        return loaded
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with folder_lock(path.parent):
            if os.path.lexists(path):  # built meanwhile by the process that held the lock?
                loaded = _load_package(path, what, key, quiet=True, example=example)
                if loaded is not None:
                    return loaded
            _build_package(fn, example, path, key, options)
    except (*compile_errors(), OSError, RuntimeError, NotImplementedError) as exc:
        warn(f"{what}: ahead-of-time compilation unavailable ({type(exc).__name__}: {first_line(exc, 200)}); "
             "compiling in this process instead")
        return compiled_or_eager(fn, what, dynamic=False, options=options)
    loaded = _load_package(path, what, key, example=example)
    if loaded is None:
        return compiled_or_eager(fn, what, dynamic=False, options=options)
    return loaded


def _build_package(fn: Callable, example: tuple, path, key: str, options: dict | None) -> None:
    """Build :func:`ahead_of_time`'s package of ``fn`` at ``path`` (under the package folder's lock): a
    killed build's stages removed, a folder in its place too, at least :data:`AOT_MIN_FREE` free (else
    ``OSError``), then ``torch.export`` and AOTInductor into a stage, stamped with ``key``, renamed into place."""
    import os
    import shutil
    import tempfile

    import torch

    class _Fn(torch.nn.Module):
        def forward(self, *args):
            return fn(*args)

    remove_stale_builds(path.parent, older_than=0)  # every build holds this lock: a stage now is a killed one's
    if path.is_dir() and not path.is_symlink():  # a folder in the package's place: the rename could not replace it
        shutil.rmtree(path)
    free = shutil.disk_usage(path.parent).free
    if free < AOT_MIN_FREE:
        raise OSError(f"only {free >> 20} MiB free in {path.parent}, less than the {AOT_MIN_FREE >> 20} MiB "
                      "a build needs")
    fd, tmp = tempfile.mkstemp(prefix=".stage-", suffix=".pt2", dir=path.parent)
    os.close(fd)
    try:
        with warnings.catch_warnings():  # torch's notices about its own internals, not the user's
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            program = torch.export.export(_Fn(), example, strict=False)
            torch._inductor.aoti_compile_and_package(program, package_path=tmp, inductor_configs=dict(options or {}))
        _stamp(tmp, key)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def remove_stale_builds(folder, older_than: float = STALE_S) -> list:
    """Remove the ``.stage-*`` files of killed builds in the package folder ``folder``, those older
    than ``older_than`` seconds (default :data:`STALE_S`: a build takes a minute at most, so
    another process's build in progress is spared; 0 under the folder's lock, which every build
    holds).  Returns what was removed."""
    import time
    from pathlib import Path

    removed = []
    for stage in Path(folder).glob(".stage-*"):
        try:
            st = stage.lstat()
            if time.time() - st.st_mtime >= older_than and not stage.is_dir():
                stage.unlink()
                removed.append(stage)
        except OSError:
            pass
    return removed


def _stamp(package, key: str) -> None:
    """Add ``key`` to the package ``package`` (a zip archive) as :data:`KEY_ENTRY` under its top folder."""
    import zipfile

    with zipfile.ZipFile(package, "a") as z:
        top = z.namelist()[0].split("/")[0]
        z.writestr(f"{top}/{KEY_ENTRY}", key)


def package_key(path) -> str | None:
    """The key stored in the package ``path`` (:data:`KEY_ENTRY`), or None where ``path`` is not a
    regular file (opened without following a link or waiting on a FIFO), not a zip archive, or
    holds no key."""
    import os
    import stat
    import zipfile

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:  # a FIFO (opened without waiting), a folder, a device
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            with zipfile.ZipFile(f) as z:
                names = z.namelist()
                entry = f"{names[0].split('/')[0]}/{KEY_ENTRY}" if names else None
                if entry not in names or z.getinfo(entry).file_size > 1024:
                    return None
                return z.read(entry).decode("utf-8")
        except (OSError, ValueError, zipfile.BadZipFile, UnicodeDecodeError, EOFError):
            return None


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

    def accepts(self, example: tuple) -> bool:
        """Whether the package's graph takes arguments of the structure of ``example`` (its exported input spec):
        a package of another graph under this key would be called with the wrong inputs."""
        import torch.utils._pytree as pytree

        return pytree.treespec_loads(self._loader.get_call_spec()[0]) == pytree.tree_flatten((tuple(example), {}))[1]


class _ForeignGraph(ValueError):
    """A loaded package whose graph takes other inputs than the example's (:meth:`_Package.accepts`)."""


#: the prefix of the folder (in the package folder, ``.extract-<pid>-<random>``) into which torch's
#: loader extracts a package it loads (it removes what it extracted when the loaded model is freed)
EXTRACT_PREFIX = ".extract-"


def remove_stale_extracts(folder) -> list:
    """Remove the extraction folders (:data:`EXTRACT_PREFIX`) in the package folder ``folder`` whose
    process is dead (killed while its package was loaded).  Returns what was removed."""
    import shutil
    from pathlib import Path

    from stam.io import pid_alive

    removed = []
    for extract in Path(folder).glob(EXTRACT_PREFIX + "*"):
        pid = extract.name[len(EXTRACT_PREFIX):].split("-")[0]
        if extract.is_dir() and not extract.is_symlink() and not (pid.isdigit() and pid_alive(int(pid))):
            shutil.rmtree(extract, ignore_errors=True)
            removed.append(extract)
    return removed


def _load_package(path, what: str, key: str | None = None, quiet: bool = False, example: tuple | None = None):
    """The callable of the AOTInductor package ``path``, or None (with a warning unless ``quiet``)
    where it is not the package of ``key`` (:func:`package_key`; not checked without a key), does not take
    arguments of the structure of ``example`` (:meth:`_Package.accepts`; not checked without one) or
    cannot be loaded.  The stages of killed builds in its folder are removed where no build holds the folder's
    lock (a process that only loads would leave them for ever).  Loaded by torch's C++ loader itself where it has one (no import of inductor
    or dynamo, about 1.5 s of a process's start, and a few milliseconds to load).  The loader
    extracts the package into a temporary folder: here one inside the package folder
    (:data:`EXTRACT_PREFIX`, ``TMPDIR`` pointed there while it loads), removed at once when the
    load fails, else when the process exits (the loader frees only part of it: every run left its 1.7 MB), else
    (a killed process) by the next load (:func:`remove_stale_extracts`); nothing is left in the system's temporary
    folder."""
    import atexit
    import os
    import shutil
    import tempfile

    import torch

    if key is not None and package_key(path) != key:
        if not quiet:
            warn(f"{what}: the compiled package {path.name} is not a regular file holding its key (damaged, or "
                 "another graph's); building it again", stacklevel=3)
        return None
    remove_stale_extracts(path.parent)
    with folder_lock(path.parent, wait=False) as free:
        if free:  # no build in progress: every stage is a killed build's
            remove_stale_builds(path.parent, older_than=0)
    extract = tempfile.mkdtemp(prefix=f"{EXTRACT_PREFIX}{os.getpid()}-", dir=path.parent)
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = extract
    try:
        loader_type = getattr(getattr(torch._C, "_aoti", None), "AOTIModelPackageLoader", None)
        loaded = (_Package(loader_type(str(path), "model", False, 1, -1)) if loader_type is not None
                  else torch._inductor.aoti_load_package(str(path)))
        if example is not None and isinstance(loaded, _Package) and not loaded.accepts(example):
            raise _ForeignGraph
        atexit.register(shutil.rmtree, extract, True)  # the loaded library stays mapped until then
        return loaded
    except Exception as exc:  # a damaged or foreign file: built again by the caller  # noqa: BLE001
        shutil.rmtree(extract, ignore_errors=True)
        if not quiet:
            why = "it takes another graph's inputs" if isinstance(exc, _ForeignGraph) else type(exc).__name__
            warn(f"{what}: the compiled package {path.name} could not be loaded ({why}); building it again",
                 stacklevel=3)
        return None
    finally:
        if saved is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved


__all__ = ["compile_errors", "compiled_or_eager", "is_compiling", "ahead_of_time", "source_digest", "package_key",
           "remove_stale_builds", "remove_stale_extracts", "AOT_FOLDER", "AOT_MIN_FREE", "EXTRACT_PREFIX", "KEY_ENTRY"]
