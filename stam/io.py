"""Atomic file output: a result file is either complete or absent, never half-written."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it is flushed to disk (``fsync``), given
    the permissions a plainly created file would have, and renamed onto ``path`` (``os.replace``,
    atomic on POSIX), and the rename is flushed too; on any exception it is removed.  So ``path``
    is the old file or the whole new one, after a crash of the process or of the machine."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix or ".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp creates it 0600
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise
    with contextlib.suppress(OSError):  # the directory entry (not possible on every platform)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def _default(obj: Any) -> Any:
    # numpy scalars/arrays and paths, without importing numpy here
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")


def dumps(obj: Any, indent: int | None = 2) -> str:
    return json.dumps(obj, indent=indent, default=_default, allow_nan=True)


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    return atomic_write_text(path, dumps(obj) + "\n")


def emit_json(obj: Any, out: str | os.PathLike | None = None) -> str:
    """Print ``obj`` as JSON on stdout and, if ``out`` is given, also write it there atomically
    (what every script in ``benchmarks/`` ends with)."""
    text = dumps(obj)
    print(text)
    if out:
        atomic_write_text(out, text + "\n")
    return text


def bar_disable(progress: bool) -> bool | None:
    """tqdm's ``disable`` for a progress bar the user asked for (``progress``) or not: ``True``
    when not, else ``None``, tqdm's "only on a terminal", so that output redirected to a file
    (a long run under nohup, a CI log) holds no progress bars."""
    return None if progress else True


def provenance() -> dict:
    """Versions and time for a result file's header (the report shows them)."""
    from stam import __version__

    versions = {"stam": __version__, "python": platform.python_version()}
    for name in ("numpy", "scipy", "sympy", "torch"):
        mod = sys.modules.get(name)
        if mod is not None:
            versions[name] = getattr(mod, "__version__", "?")
    return {
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "machine": platform.machine(),
        "versions": versions,
    }
