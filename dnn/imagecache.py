"""The files of the decoded-image cache (:mod:`stam.dnn.imagefolder`): the hashes that key and check an entry
(:func:`sha256_file`, :func:`manifest_sha256`, :func:`array_sha256`), the entry's lock opened without blocking
(:func:`entry_lock`), and an ``.npy`` file read back only if it is what the toolkit wrote (:func:`load_npy`)."""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import stat
from pathlib import Path

import numpy as np

from stam.dnn.imageread import Files

def sha256_file(path: Path) -> str:
    """The SHA-256 of the file ``path`` (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def manifest_sha256(got: Files) -> str:
    """SHA-256 of a folder's manifest: sorted lines ``relative/path<TAB>sha256-of-file``."""
    lines = "".join(f"{'/'.join(p)}\t{hashlib.sha256(data).hexdigest()}\n" for p, (_, data) in sorted(got.files.items()))
    return hashlib.sha256(lines.encode("utf-8", "surrogateescape")).hexdigest()


def array_sha256(a: np.ndarray) -> str:
    return hashlib.sha256(memoryview(np.ascontiguousarray(a)).cast("B")).hexdigest()


#: open flags for an entry of the cache: no link followed, no wait on a FIFO (the opened file is
#: then checked to be a regular file)
NOWAIT = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)


def open_lock(path: Path) -> int:
    """A descriptor of the regular file ``path`` (created if missing); something else in its place
    (a FIFO, which would block, a link, a device) is removed and the file made anew.  OSError
    where that cannot be done."""
    for _ in range(2):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | NOWAIT, 0o644)
        except OSError:
            fd = None
        if fd is not None:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return fd
            os.close(fd)
        if not os.path.lexists(path) or (os.path.isdir(path) and not os.path.islink(path)):
            break
        os.unlink(path)  # a FIFO, a link, a device: not what the toolkit wrote there
    raise OSError(f"{path} is not a regular file")


@contextlib.contextmanager
def entry_lock(path: Path):
    """An exclusive lock on ``path`` (another process building the same entry waits, then reads
    it); yields whether it holds one: none where the cache folder cannot be written or there is
    no ``fcntl``.  The lock file is opened without blocking and must be a regular file
    (:func:`open_lock`)."""
    try:
        import fcntl

        path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_lock(path)
    except (ImportError, OSError):
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = True
        except OSError:
            held = False
        yield held
    finally:
        os.close(fd)


def load_npy(path: Path, recorded: dict) -> np.ndarray | None:
    """The array of the ``.npy`` file ``path`` if it is what the toolkit wrote there: a regular
    file (opened without following a link or waiting on a FIFO), a header of format 1 or 2 giving
    the ``shape`` and ``dtype`` recorded in the sidecar, C order (a Fortran-order array of the same
    values is refused: its layout changes a run's arithmetic), and a size of exactly the header
    plus the data (a header claiming 10^12 images is refused before anything is allocated);
    else None."""
    fd = os.open(path, os.O_RDONLY | NOWAIT)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            return None
        if (fortran or dtype.hasobject or list(shape) != recorded["shape"] or str(dtype) != recorded["dtype"]
                or f.tell() + math.prod(shape) * dtype.itemsize != st.st_size):
            return None
        f.seek(0)
        return np.load(f, allow_pickle=False)


__all__ = ["sha256_file", "manifest_sha256", "array_sha256", "NOWAIT", "open_lock", "entry_lock", "load_npy"]
