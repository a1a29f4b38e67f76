"""Atomic file output: a result file is either complete or absent, never half-written."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

from stam import __version__, machine
from stam.errors import UsageError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _naming(exc: OSError, path: Path) -> OSError:
    """``exc`` naming ``path`` (the file the user knows) instead of a temporary or nothing: a full
    disk reads ``No space left on device: PATH``."""
    return type(exc)(exc.errno, exc.strerror or str(exc), os.fspath(path)) if exc.errno is not None else exc


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it is flushed to disk (``fsync``), given
    the permissions a plainly created file would have, and renamed onto ``path`` (``os.replace``,
    atomic on POSIX), and the rename is flushed too; on any exception it is removed.  So ``path``
    is the old file or the whole new one, after a crash of the process or of the machine.  An
    operating-system error (a full disk, a read-only folder) is raised naming ``path``."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix or ".tmp", dir=path.parent)
    except OSError as exc:
        raise _naming(exc, path) from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp creates it 0600
        os.replace(tmp_path, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        if isinstance(exc, OSError) and exc.filename in (None, os.fspath(tmp_path)):
            raise _naming(exc, path) from None
        raise
    with contextlib.suppress(OSError):  # the directory entry (not possible on every platform)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


#: the age (seconds) after which a leftover in a shared folder is a killed run's where no lock tells: a temporary of
#: :func:`atomic_path` (the cache, a cache entry: a write takes seconds) or a ``.stage-*`` file of an ahead-of-time
#: build (:mod:`stam.compiling`: a minute at most), so that another process's write in progress is spared
STALE_S = 3600


def remove_stale_temporaries(paths, older_than: float = 0.0) -> list[Path]:
    """Remove what :func:`atomic_path` left next to each of ``paths`` when its process was killed
    mid-write (``.NAME.*`` beside ``NAME``), older than ``older_than`` seconds (0: all; a positive
    age spares the temporaries of another process writing right now).  Returns what was removed."""
    removed = []
    for path in map(Path, paths):
        removed += remove_stale_files(path.parent, f".{path.name}.*", older_than)
    return removed


def remove_stale_files(folder: str | os.PathLike, pattern: str, older_than: float = STALE_S) -> list[Path]:
    """Remove the regular files (never a link, a folder or what a link points to) matching the glob
    ``pattern`` in ``folder`` that are older than ``older_than`` seconds.  Returns what was removed."""
    import stat
    import time

    removed = []
    folder = Path(folder)
    if not folder.is_dir():
        return removed
    for tmp in folder.glob(pattern):
        try:
            st = tmp.lstat()
            if stat.S_ISREG(st.st_mode) and time.time() - st.st_mtime >= older_than:
                tmp.unlink()
                removed.append(tmp)
        except OSError:
            pass
    return removed


@contextlib.contextmanager
def folder_lock(folder, wait: bool = True) -> Iterator[bool]:
    """An exclusive lock (``flock``) on the folder ``folder`` itself (no lock file to leave behind or
    to find replaced by a FIFO), released when the block ends; no lock where there is no ``fcntl``.  The block is
    given whether the lock is held: always when ``wait``, else only where no other process holds it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover  (not POSIX)
        yield wait
        return
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


#: the prefix of a staging folder of :func:`staged` (``.stage-<pid>-<random>`` inside the output folder)
STAGE_PREFIX = ".stage-"


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (one of another user counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def remove_stale_stages(out_dir: str | os.PathLike) -> list[Path]:
    """Remove the staging folders of :func:`staged` in ``out_dir`` whose process is dead (a run
    killed before it moved its outputs into place); a live process's stage is spared."""
    import shutil

    removed = []
    folder = Path(out_dir)
    if not folder.is_dir():
        return removed
    for stage in folder.glob(STAGE_PREFIX + "*"):
        pid = stage.name[len(STAGE_PREFIX):].split("-")[0]
        if stage.is_dir() and not stage.is_symlink() and not (pid.isdigit() and pid_alive(int(pid))):
            shutil.rmtree(stage, ignore_errors=True)
            removed.append(stage)
    return removed


@contextlib.contextmanager
def staged(out_dir: str | os.PathLike, last: tuple[str, ...] = ()) -> Iterator[Path]:
    """All-or-nothing output: yield a fresh staging folder inside ``out_dir`` (never outside it);
    what the command writes there replaces, when the block ends without an exception, the entries
    of the same names in ``out_dir`` together: each file by an atomic rename, each folder by
    renaming the old one away and the new one into place, the names in ``last`` (the main file, e.g.
    ``report.html``) last.  On an exception nothing in ``out_dir`` changes and the stage is removed.
    Stages of killed earlier runs (their process dead) are removed first, and so are the
    temporaries :func:`atomic_path` left beside the names this run writes."""
    import shutil

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_stages(out)
    stage = Path(tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{os.getpid()}-", dir=out))
    try:
        try:
            yield stage
        except OSError as exc:  # a full disk while writing: name the file in out_dir, not in the stage
            inside = exc.filename is not None and Path(os.fspath(exc.filename)).is_relative_to(stage)
            if inside:
                raise _naming(exc, out / Path(os.fspath(exc.filename)).relative_to(stage)) from None
            raise
        entries = sorted(stage.iterdir(), key=lambda p: (p.name in last, last.index(p.name) if p.name in last else 0, p.name))
        remove_stale_temporaries([out / p.name for p in entries])
        old = stage / ".old"
        old.mkdir()
        for entry in entries:
            dest = out / entry.name
            if entry.is_dir() and not entry.is_symlink():
                if dest.is_dir() and not dest.is_symlink():
                    os.replace(dest, old / entry.name)
                elif dest.exists() or dest.is_symlink():
                    raise UsageError(f"{dest} is a file where the folder {entry.name}/ is written; remove it")
            os.replace(entry, dest)
        with contextlib.suppress(OSError):
            dir_fd = os.open(out, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


#: the largest file the toolkit reads as a user's input (JSON results, search spaces): 256 MiB
MAX_INPUT_BYTES = 256 << 20


def read_input_text(path: str | os.PathLike, what: str | None = None, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of a file the user gave, or one :class:`UsageError` line naming it (``what``:
    how to name it, e.g. ``--space-file F``): not a regular file (a folder, a FIFO, which would
    block the read, a device), larger than ``max_bytes``, unreadable or not UTF-8."""
    path = Path(path)
    name = what or str(path)
    try:
        st = path.stat()
    except OSError as exc:
        raise _usage(f"{name}: cannot read ({exc.strerror or exc})")
    import stat

    if not stat.S_ISREG(st.st_mode):
        raise _usage(f"{name}: not a regular file (a folder, a pipe or a device); give a file")
    if st.st_size > max_bytes:
        raise _usage(f"{name}: {st.st_size:,} bytes, more than the {max_bytes:,} this toolkit reads; not a file it wrote")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _usage(f"{name}: not UTF-8 text (byte {exc.start})")
    except OSError as exc:
        raise _usage(f"{name}: cannot read ({exc.strerror or exc})")


#: the environment variable naming the toolkit's cache folder (``off``: keep nothing)
CACHE_ENV = "STAM_CACHE_DIR"


def cache_home() -> Path | None:
    """The toolkit's cache folder: ``$STAM_CACHE_DIR``, else ``$XDG_CACHE_HOME/stam`` or
    ``~/.cache/stam``; None when ``STAM_CACHE_DIR=off`` (nothing is kept)."""
    where = os.environ.get(CACHE_ENV)
    if where == "off":
        return None
    return Path(where) if where else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stam"


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def atomic_write_texts(files: dict) -> list[Path]:
    """Write every ``{path: text}`` of ``files`` all or nothing: each to a temporary (:func:`atomic_path`) before
    any is renamed into place, then renamed in the reverse of their order (so the first is renamed last: a
    result after its twin).  A write that fails (a full disk) removes every temporary: each file is as it was."""
    with contextlib.ExitStack() as stack:
        tmps = [(stack.enter_context(atomic_path(path)), text) for path, text in files.items()]
        for tmp, text in tmps:
            tmp.write_text(text, encoding="utf-8")
    return [Path(p) for p in files]


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def json_default(obj: Any) -> Any:
    # numpy scalars/arrays and paths, without importing numpy here
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")


def dumps(obj: Any, indent: int | None = 2) -> str:
    return json.dumps(obj, indent=indent, default=json_default, allow_nan=True)


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
    """Versions, time and machine for a result file's header (the report shows them): the
    processor's model and instruction set, and, where torch is imported, its CPU capability, oneDNN
    version and thread count (:func:`stam.machine.facts`)."""
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
        **machine.facts(),
    }


# --------------------------------------------------------------------------------------------
# Output locations, checked before any work, and safe output names
# --------------------------------------------------------------------------------------------


def _usage(message: str):
    return UsageError(message)


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (``.`` for a relative path whose parts are all new)."""
    probe = path
    while not os.path.lexists(probe):
        parent = probe.parent
        if parent == probe:
            break
        probe = parent
    return probe


def _writable_dir(folder: Path) -> bool:
    """Whether a file can be created in the existing folder ``folder``: ``os.access`` and, since
    root passes every ``os.access`` check (but not a read-only file system), a probe file created
    and removed at once (nothing is left behind)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        fd, probe = tempfile.mkstemp(prefix=".stam-probe-", dir=folder)
    except OSError:
        return False
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return True


def check_out_dir(path: str | os.PathLike, flag: str = "--out") -> Path:
    """``path`` as an output folder, checked before any work is done: a one-line usage error
    (:class:`stam.errors.UsageError`) if it is a file, lies under a file, or cannot be written
    (checked on the nearest folder that exists).  Creates nothing."""
    if os.fspath(path) == "":  # Path("") would be ".", silently
        raise _usage(f"{flag} is empty; give a folder")
    out = Path(path)
    try:
        if out.exists() and not out.is_dir():
            raise _usage(f"{flag} {out} is a file; give a folder")
        base = _nearest_existing(out)
        if not base.is_dir():
            raise _usage(f"{flag} {out}: {base} is a file, so no folder can be made under it")
        if not _writable_dir(base):
            where = "" if base == out else f" ({base}, where it would be created)"
            raise _usage(f"{flag} {out}: the folder is not writable{where}")
    except (ValueError, OSError) as exc:  # a NUL byte, a name too long, a loop of links
        raise _usage(f"{flag} {os.fspath(out)!r} is not a usable path ({exc})") from None
    return out


def check_out_file(path: str | os.PathLike, flag: str = "--out") -> Path:
    """``path`` as an output file, checked before any work is done: a one-line usage error if it
    is a folder, or its folder cannot be made or written (:func:`check_out_dir`).  Creates nothing."""
    if os.fspath(path) == "":
        raise _usage(f"{flag} is empty; give a file name")
    out = Path(path)
    try:
        if out.name in ("", ".", ".."):
            raise _usage(f"{flag} {os.fspath(out)!r} is not a file name")
        if out.is_dir():
            raise _usage(f"{flag} {out} is a folder; give a file name")
    except (ValueError, OSError) as exc:
        raise _usage(f"{flag} {os.fspath(out)!r} is not a usable path ({exc})") from None
    check_out_dir(out.parent, flag=f"{flag} {out}: its folder")
    return out


#: the longest slug :func:`slug` makes (file names stay short on every file system)
SLUG_MAX = 48


def slug(text, used: set | None = None, default: str = "x", ext: str = "") -> str:
    """A safe file-name part made from ``text`` (e.g. a field of a result file): lower-case
    ``[a-z0-9-]`` only, no leading or trailing ``-``, at most :data:`SLUG_MAX` characters
    (``default`` if nothing is left).  With ``used`` (a set of slugs already given out) a counter
    makes it unique (``rates-binary``, ``rates-binary-2``) and it is added to ``used``.  ``ext``
    (e.g. ``"csv"``, itself reduced to ``[a-z0-9]``) makes a file name ``<slug>.<ext>``, unique as a
    whole (``rates-binary.json`` and ``rates-binary.csv`` may share their slug).  Output
    names are built from slugs only, never from raw file contents, so nothing can name a path
    outside the output folder."""
    base = re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")[:SLUG_MAX].strip("-") or default
    ext = re.sub(r"[^a-z0-9]+", "", str(ext).lower())[:8]
    dot = f".{ext}" if ext else ""
    if used is None:
        return base + dot
    name, n = base + dot, 2
    while name in used:
        tail = f"-{n}"
        name = base[: SLUG_MAX - len(tail)].rstrip("-") + tail + dot
        n += 1
    used.add(name)
    return name


#: the characters LaTeX reads as commands, and the few non-ASCII ones the tables hold, as LaTeX source
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "\u00b1": r"$\pm$", "\u2013": "--", "\u2212": "-", "\u221e": r"$\infty$",
}


def latex_escape(text: str) -> str:
    """``text`` (a label may be the user's ``--label``) as LaTeX source: the tables of ``stam table`` and of the
    report."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)
