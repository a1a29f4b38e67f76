"""Image collections as data sets for Section 3: folders of JPEG or PNG files in torchvision's
ImageFolder layout, e.g. CIFAR-10 as a JPEG copy, decoded once and cached.

Layout: ``[ROOT/]SPLIT/CLASS/FILE`` with the splits ``train`` and ``test``, at most one top-level
folder ``ROOT`` (``cifar10-jpeg/``), ``FILE`` a ``.jpg``, ``.jpeg`` or ``.png`` image; given as a
folder or as a ``.tar``, ``.tar.gz``/``.tgz`` or ``.zip`` archive.  The classes are the sorted
class-folder names, the same in both splits; class ``k`` of that order has label ``k``, and the
images of a split are ordered by label, then by file name.  :func:`read` returns ``uint8`` arrays
``(N, C, H, W)`` and ``int64`` labels (``stam.dnn.data.load_image_folder`` makes them an
``ImageData``; this module imports neither torch nor ``stam.dnn.data``).

Safety: archive members are read in memory from the stream, never extracted.  Each of the
following is a one-line :class:`stam.errors.UsageError` naming the member, and nothing is written:
a name that is absolute or contains ``..`` (or a backslash, a control character, bytes that are not
UTF-8); a symbolic or hard link, a device, a FIFO or any member other than a folder or a regular
file; more members, a larger member, or more bytes in all than :class:`Limits` allows (bounded by
what images of the expected size need: a decompression bomb stops at the bound, as it is read); a
file that is not a ``.jpg``/``.jpeg``/``.png`` image, or whose content is another format; an image
whose header (read before decoding) gives another size or mode than expected, or more pixels than
the limit (and Pillow's decompression-bomb warning is an error here); a file in the wrong place; a
class missing from one split; an empty split; an unreadable or truncated archive.  Only folder
entries are skipped.

Cache: the decoded arrays are written once (atomically, :mod:`stam.io`) as uncompressed ``.npy``
files under ``CACHE/imagefolder/SHA256/``, keyed by the SHA-256 of the archive (of a folder: of
its manifest, the sorted lines ``relative path TAB file SHA-256``), with a JSON sidecar recording
the source hash, classes, and every array's shape, dtype and SHA-256.  A later load of the same
source reads them back (``allow_pickle=False``) and checks all of that, and first that each file
is a regular file (opened without following a link or waiting on a FIFO) whose ``.npy`` header
gives the recorded shape and dtype in C order and whose size is exactly that header's data (a
header claiming 10^12 images is refused before anything is allocated); an entry that is damaged or
does not match is ignored and rebuilt, never trusted.  The entry's lock ``SHA256.lock`` is opened
without blocking; anything but a regular file there is replaced.  Temporaries a killed run left in
an entry are removed by the next load (all of them under the entry's lock).  ``CACHE`` is the ``cache_dir`` argument,
else the toolkit's cache folder (:func:`stam.io.cache_home`; with ``STAM_CACHE_DIR=off`` nothing is kept).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import math
import os
import pickle
import re
import stat
import subprocess
import sys
import tarfile
import warnings
import zipfile
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from stam.errors import UsageError, warn
from stam.io import atomic_path
from stam.results import COUNT, DICT, LIST, POSINT, STR, ResultType, Schema, holds

SPLITS = ("train", "test")
#: file suffix (lower case) -> the image format its content must have
IMAGE_SUFFIXES = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG"}
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
#: image mode of each channel count
MODES = {3: "RGB", 1: "L"}
CACHE_FORMAT = 1
#: collections with at least this many images are decoded by a process pool
PARALLEL_MIN = 4096
#: the shared copy of CIFAR-10 as JPEG files (shared/data/README.md); used by tests and the benchmark
CIFAR10_JPEG_SHA256 = "ff26949c34c4e67da3fa472a1f142e33365dea058f94f1fa369b14ef3d986968"

# IJG's standard luminance quantisation table (row-major), from which a JPEG's quality is read
_IJG_LUMA = (16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
             14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
             49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99)
_SUBSAMPLING = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}


# --------------------------------------------------------------------------- what is expected

@dataclass(frozen=True)
class Limits:
    """Bounds on what an image collection may hold, checked while it is read: ``members`` (files
    and folders), ``file_bytes`` (one file), ``total_bytes`` (everything read: for a tar archive
    the whole decompressed stream, headers included), ``pixels`` (one image, from its header)."""

    members: int = 300_000
    file_bytes: int = 16 << 20
    total_bytes: int = 1 << 30
    pixels: int = 4096 * 4096

    @classmethod
    def for_shape(cls, shape: tuple[int, int, int] | None) -> Limits:
        """The bounds for images of ``shape`` (C, H, W): 300,000 members (five times CIFAR's 60,000
        images), a file at most 64 KiB + 16 bytes per pixel value (114 KiB for 3x32x32, where a
        JPEG takes about 1 KiB and a PNG at most about 3.2 KiB), 1 GiB in all; no image larger than
        expected.  Without a shape, the class defaults."""
        if shape is None:
            return cls()
        c, h, w = shape
        return cls(file_bytes=(64 << 10) + 16 * c * h * w, pixels=h * w)


@dataclass(frozen=True)
class Expect:
    """What a collection must hold: ``classes`` (exactly these class folders, in this label order,
    which must be their sorted order), ``shape`` (C, H, W) of every image (C = 3: mode RGB, 1: L);
    None: anything, then every image must have the size and mode of the first.  ``copy_of`` names
    the data set the collection is a copy of (``"CIFAR-10"``), for the provenance note."""

    classes: tuple[str, ...] | None = None
    shape: tuple[int, int, int] | None = None
    copy_of: str | None = None

    def __post_init__(self):
        if self.classes is not None and list(self.classes) != sorted(self.classes):
            raise ValueError("Expect.classes must be in sorted order (the label order of an image folder)")
        if self.shape is not None and self.shape[0] not in MODES:
            raise ValueError(f"Expect.shape: {self.shape[0]} channels; supported: {sorted(MODES)}")


@dataclass
class Collection:
    """A decoded image collection: ``uint8`` images ``(N, C, H, W)``, ``int64`` labels, the class
    names in label order, the provenance ``source`` (kind, SHA-256 and what it hashes, file name,
    image formats, note), and whether it was read from the cache."""

    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray
    classes: tuple[str, ...]
    source: dict
    cached: bool = False


@dataclass
class _Files:
    """What was read from a source: its files (path parts -> bytes) and folder entries, by name."""

    files: dict = field(default_factory=dict)  # parts -> (display name, bytes)
    dirs: dict = field(default_factory=dict)  # parts -> display name
    total: int = 0


# --------------------------------------------------------------------------- small helpers

def _show(name: str, limit: int = 120) -> str:
    """A member name for a one-line message: quoted, escaped, shortened."""
    text = ascii(name) if not name.isprintable() else repr(name)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def _fail(src: Path, message: str):
    raise UsageError(f"{src}: {message}")


def default_cache_dir() -> Path | None:
    """The toolkit's cache folder (:func:`stam.io.cache_home`); None with ``STAM_CACHE_DIR=off``
    (a collection is then decoded every time, nothing kept)."""
    from stam.io import cache_home

    return cache_home()


def archive_kind(path: Path) -> str | None:
    """``"tar.gz"``, ``"tar"`` or ``"zip"`` from the name of ``path``, else None."""
    name = path.name.lower()
    if name.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    if name.endswith(".tar"):
        return "tar"
    if name.endswith(".zip"):
        return "zip"
    return None


def is_collection_dir(path: Path) -> bool:
    """Whether the folder ``path`` holds the splits ``train/`` and ``test/`` itself."""
    try:
        return all((path / s).is_dir() for s in SPLITS)
    except OSError:
        return False


def find(data_dir: Path, stem: str) -> Path | None:
    """The image collection named ``stem`` in ``data_dir``: ``STEM.tar.gz``, ``STEM.tgz``,
    ``STEM.tar``, ``STEM.zip`` or the folder ``STEM/``, the first that exists in that order."""
    for suffix in ARCHIVE_SUFFIXES:
        if (data_dir / f"{stem}{suffix}").is_file():
            return data_dir / f"{stem}{suffix}"
    return data_dir / stem if (data_dir / stem).is_dir() else None


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _safe_parts(name: str, src: Path) -> tuple[str, ...]:
    """The path parts of the member ``name`` (``.`` and empty parts dropped); a usage error for a
    name that is absolute, leaves its folder (``..``), uses a backslash or a control character."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        _fail(src, f"member {_show(name)} has a name that is not UTF-8; refusing the collection")
    if _CONTROL.search(name):
        _fail(src, f"member {_show(name)} has a control character in its name; refusing the collection")
    if "\\" in name:
        _fail(src, f"member {_show(name)} has a backslash in its name; refusing the collection")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":" and name[0].isalpha()):
        _fail(src, f"member {_show(name)} has an absolute path; refusing the collection (nothing is extracted)")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        _fail(src, f"member {_show(name)} leaves the collection's folder ('..'); refusing the collection "
                   "(nothing is extracted)")
    return parts


class _TooBig(Exception):
    pass


class _Capped(io.RawIOBase):
    """A readable stream that raises :class:`_TooBig` once more than ``limit`` bytes came through
    (a decompression bomb stops there, before its bytes pile up)."""

    def __init__(self, f, limit: int):
        self.f, self.limit, self.count = f, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self.f.readinto(b)
        self.count += n or 0
        if self.count > self.limit:
            raise _TooBig
        return n


# --------------------------------------------------------------------------- reading the members

def _add_file(out: _Files, parts: tuple, name: str, data_size: int, read, src: Path, limits: Limits) -> None:
    if not parts:
        _fail(src, f"member {_show(name)} is a file without a name")
    if parts in out.files:
        _fail(src, f"member {_show(name)} appears twice")
    if data_size > limits.file_bytes:
        _fail(src, f"member {_show(name)} is {data_size} bytes, more than the {limits.file_bytes} an image of the "
                   "expected size needs; refusing the collection")
    out.total += data_size
    if out.total > limits.total_bytes:
        _fail(src, f"the members expand to more than {limits.total_bytes} bytes, far more than the images need "
                   "(a decompression bomb?); refusing the collection")
    data = read()
    if len(data) != data_size:
        _fail(src, f"member {_show(name)} is truncated ({len(data)} of {data_size} bytes)")
    out.files[parts] = (name, data)


def _count(out: _Files, src: Path, limits: Limits) -> None:
    if len(out.files) + len(out.dirs) > limits.members:
        _fail(src, f"more than {limits.members} members, far more than an image collection of the expected size "
                   "holds; refusing the collection")


def _read_tar(src: Path, compressed: bool, limits: Limits) -> _Files:
    out = _Files()
    with open(src, "rb") as raw:
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        counter = _Capped(stream, limits.total_bytes)
        capped = io.BufferedReader(counter, 1 << 20)
        with tarfile.open(fileobj=capped, mode="r|") as tar:
            for m in tar:
                parts = _safe_parts(m.name, src)
                if m.isdir():
                    out.dirs[parts] = m.name
                elif m.isreg():
                    _add_file(out, parts, m.name, m.size, lambda: tar.extractfile(m).read(), src, limits)
                else:
                    what = ("a symbolic link" if m.issym() else "a hard link" if m.islnk() else
                            "a device" if m.ischr() or m.isblk() else "a FIFO" if m.isfifo() else
                            f"of tar type {m.type!r}")
                    _fail(src, f"member {_show(m.name)} is {what}; an image collection holds only folders and "
                               "image files (refusing the archive)")
                _count(out, src, limits)
            end = tar.offset  # where the end-of-archive blocks begin (tarfile stops silently at a cut header)
        while capped.read(1 << 20):  # to the end: gzip checks its length and CRC there
            pass
    if counter.count < end + tarfile.BLOCKSIZE:
        raise tarfile.ReadError("it ends before the tar end-of-archive marker")
    return out


def _read_zip(src: Path, limits: Limits) -> _Files:
    out = _Files()
    with zipfile.ZipFile(src) as zf:
        infos = zf.infolist()
        if len(infos) > limits.members:
            _fail(src, f"more than {limits.members} members ({len(infos)}), far more than an image collection of the "
                       "expected size holds; refusing the collection")
        for info in infos:
            parts = _safe_parts(info.filename, src)
            mode = info.external_attr >> 16
            kind = stat.S_IFMT(mode) if info.create_system == 3 else 0
            if kind == stat.S_IFLNK:
                _fail(src, f"member {_show(info.filename)} is a symbolic link; an image collection holds only "
                           "folders and image files (refusing the archive)")
            if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                _fail(src, f"member {_show(info.filename)} is not a folder or a regular file (mode {oct(mode)}); "
                           "refusing the archive")
            if info.is_dir():
                out.dirs[parts] = info.filename
            else:
                _add_file(out, parts, info.filename, info.file_size, lambda: zf.read(info), src, limits)
            _count(out, src, limits)
    return out


def _read_folder(src: Path, limits: Limits) -> _Files:
    out = _Files()

    def walk(folder: Path, parts: tuple) -> None:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            rel = (*parts, entry.name)
            name = "/".join(rel)
            _safe_parts(name, src)
            if entry.is_symlink():
                _fail(src, f"{_show(name)} is a symbolic link; an image folder holds only folders and image files")
            if entry.is_dir(follow_symlinks=False):
                if len(rel) >= 4:
                    _fail(src, f"{_show(name + '/')} is a folder below CLASS/; expected the layout "
                               "[ROOT/]SPLIT/CLASS/FILE")
                out.dirs[rel] = name + "/"
                _count(out, src, limits)
                walk(Path(entry.path), rel)
            elif entry.is_file(follow_symlinks=False):
                size = entry.stat(follow_symlinks=False).st_size
                _add_file(out, rel, name, size, lambda: Path(entry.path).read_bytes(), src, limits)
                _count(out, src, limits)
            else:
                _fail(src, f"{_show(name)} is not a folder or a regular file (a device, FIFO or socket)")

    walk(src, ())
    return out


def _read_members(src: Path, limits: Limits) -> _Files:
    """Every member of the archive or folder ``src``, checked as the module docstring says."""
    kind = "folder" if src.is_dir() else archive_kind(src)
    try:
        if kind == "folder":
            return _read_folder(src, limits)
        if kind == "zip":
            return _read_zip(src, limits)
        if kind in ("tar", "tar.gz"):
            return _read_tar(src, kind == "tar.gz", limits)
    except _TooBig:
        _fail(src, f"the archive expands to more than {limits.total_bytes} bytes, far more than the images need "
                   "(a decompression bomb?); refusing it")
    except (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, NotImplementedError,
            RuntimeError, ValueError, OSError) as exc:
        why = (str(exc).splitlines() or [""])[0] or type(exc).__name__
        _fail(src, f"cannot read it as a {kind} {'folder' if kind == 'folder' else 'archive'} ({why}); "
                   "is it truncated or of another format?")
    _fail(src, f"not an image collection: give a folder or a {', '.join(ARCHIVE_SUFFIXES)} archive")


# --------------------------------------------------------------------------- the layout

def _layout(src: Path, got: _Files, expect: Expect) -> dict[str, dict[str, list]]:
    """``{split: {class: [(file name, display name, bytes), ...]}}`` from the members, after checking
    the layout ``[ROOT/]SPLIT/CLASS/FILE``, the file suffixes, the classes and the splits."""
    layout = "[ROOT/]SPLIT/CLASS/FILE with SPLIT train or test"
    if not got.files:
        _fail(src, f"holds no image files; expected the layout {layout}")
    paths = sorted(got.files)
    flat = sum(1 for p in paths if len(p) == 3 and p[0] in SPLITS)
    if 2 * flat >= len(paths):
        root = None
    else:
        tops = [p[0] for p in paths if len(p) == 4]
        root = max(sorted(set(tops)), key=tops.count) if tops else None
    depth = 3 if root is None else 4
    for p in paths:
        if len(p) != depth or (root is not None and p[0] != root) or p[depth - 3] not in SPLITS:
            _fail(src, f"member {_show(got.files[p][0])} is not in the layout {layout}"
                       + (f" (ROOT {root})" if root else ""))
    for p, name in sorted(got.dirs.items()):  # a folder entry must lie on the layout's folders
        if (root is not None and p and p[0] != root) or len(p) > depth - 1 or (len(p) > depth - 3 and p[depth - 3] not in SPLITS):
            _fail(src, f"member {_show(name)} is a folder outside the layout {layout}")
    splits: dict[str, dict[str, list]] = {s: {} for s in SPLITS}
    for p in paths:
        split, cls, fname = p[-3:]
        suffix = os.path.splitext(fname)[1].lower()
        if suffix not in IMAGE_SUFFIXES:
            _fail(src, f"member {_show(got.files[p][0])} is not a .jpg, .jpeg or .png image file")
        splits[split].setdefault(cls, []).append((fname, *got.files[p]))
    for p in got.dirs:  # class folders without files
        if len(p) == depth - 1:
            splits[p[-2]].setdefault(p[-1], [])
    for s in SPLITS:
        if not any(splits[s].values()):
            _fail(src, f"the {s} split is empty (no {s}/CLASS/FILE images)")
        for cls, items in sorted(splits[s].items()):
            if not items:
                _fail(src, f"class {_show(cls)} holds no images in the {s} split")
    train, test = set(splits["train"]), set(splits["test"])
    if train != test:
        missing = sorted(train - test)
        where, cls = ("test", missing[0]) if missing else ("train", sorted(test - train)[0])
        _fail(src, f"class {_show(cls)} is missing from the {where} split; both splits need the same class folders")
    if expect.classes is not None and tuple(sorted(train)) != tuple(expect.classes):
        _fail(src, _class_message(sorted(train), expect))
    for s in SPLITS:
        for items in splits[s].values():
            items.sort()
    return splits


def _class_message(found: list[str], expect: Expect) -> str:
    want = list(expect.classes)
    title = expect.copy_of or "the data set"
    missing, extra = [c for c in want if c not in found], [c for c in found if c not in want]
    if len(want) <= 10:
        need = f"{title} needs exactly {', '.join(want)} (labels 0..{len(want) - 1} in that order)"
    else:
        need = f"{title} needs exactly its {len(want)} class names (labels in their sorted order)"
    detail = "; ".join(s for s in (missing and "missing " + ", ".join(map(_show, missing[:5])) + (" ..." if len(missing) > 5 else ""),
                                   extra and "unexpected " + ", ".join(map(_show, extra[:5])) + (" ..." if len(extra) > 5 else "")) if s)
    return f"the class folders do not match: {detail}; {need}"


# --------------------------------------------------------------------------- decoding

def _check_header(im, name: str, fmt: str, spec: tuple) -> str | None:
    """Why the opened (not yet decoded) image ``im`` is refused, or None."""
    mode, width, height, max_pixels = spec
    if im.format != fmt:
        return f"member {_show(name)} is named like a {fmt} file but holds {im.format}"
    w, h = im.size
    if w * h > max_pixels:
        return f"member {_show(name)} is {w}x{h} pixels, more than the limit of {max_pixels} (a decompression bomb?)"
    if (w, h) != (width, height):
        return f"member {_show(name)} is {w}x{h} pixels; expected {width}x{height}"
    if im.mode != mode:
        return f"member {_show(name)} has image mode {im.mode}; expected {mode}"
    if getattr(im, "n_frames", 1) != 1:
        return f"member {_show(name)} holds {im.n_frames} frames; expected one image"
    return None


def _decode_chunk(items: list[tuple[str, str, bytes]], spec: tuple) -> tuple[np.ndarray | None, str | None]:
    """Decode ``(display name, format, bytes)`` items into ``(n, C, H, W)`` uint8, checking each
    header first (``spec``: mode, width, height, pixel limit); returns (array, None) or (None, the
    first refusal).  Runs in worker processes: imports Pillow itself, raises nothing."""
    from PIL import Image

    mode, width, height, _ = spec
    c = 3 if mode == "RGB" else 1
    out = np.empty((len(items), c, height, width), dtype=np.uint8)
    for i, (name, fmt, data) in enumerate(items):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(io.BytesIO(data), formats=(fmt,)) as im:
                    why = _check_header(im, name, fmt, spec)
                    if why:
                        return None, why
                    im.load()
                    arr = np.frombuffer(im.tobytes(), dtype=np.uint8).reshape(height, width, c)
        except Exception as exc:  # noqa: BLE001  (Pillow raises OSError, SyntaxError, ValueError, ... on bad files)
            first = (str(exc).splitlines() or [""])[0][:160] or type(exc).__name__
            if type(exc).__name__ == "UnidentifiedImageError":
                return None, f"member {_show(name)} is not a readable {fmt} image"
            return None, f"member {_show(name)} cannot be decoded as {fmt} ({type(exc).__name__}: {first})"
        out[i] = arr.transpose(2, 0, 1)
    return out, None


def _spec(src: Path, first: tuple[str, str, bytes], expect: Expect, limits: Limits) -> tuple:
    """(mode, width, height, pixel limit) that every image must meet: the expected shape, or the
    size and mode of the first image, read from its header."""
    if expect.shape is not None:
        c, h, w = expect.shape
        return MODES[c], w, h, limits.pixels
    from PIL import Image

    name, fmt, data = first
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=(fmt,)) as im:
                (w, h), mode = im.size, im.mode
    except Exception:  # noqa: BLE001
        return "RGB", 0, 0, limits.pixels  # refused with its reason by _decode_chunk
    if w * h > limits.pixels:
        _fail(src, f"member {_show(name)} is {w}x{h} pixels, more than the limit of {limits.pixels}")
    if mode not in MODES.values():
        _fail(src, f"member {_show(name)} has image mode {mode}; an image collection needs RGB or L (greyscale) images")
    return mode, w, h, limits.pixels


def _workers(n: int, workers: int | None) -> int:
    if workers is None:
        try:
            workers = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover  (not Linux)
            workers = os.cpu_count() or 1
    return max(1, min(workers, n // (PARALLEL_MIN // 2))) if n >= PARALLEL_MIN else 1


#: what a decoding worker runs: read (items, spec) pickled on stdin, write _decode_chunk's result on stdout
_WORKER = ("import pickle, sys; from stam.dnn.imagefolder import _decode_chunk; "
           "items, spec = pickle.load(sys.stdin.buffer); pickle.dump(_decode_chunk(items, spec), sys.stdout.buffer, protocol=5)")


def _worker_argv() -> list[str]:
    """The command line of a decoding worker: this interpreter in isolated mode (``-I``: neither
    the working folder nor ``PYTHONPATH`` nor the user's site folder is on its ``sys.path``), given
    the absolute entries of this process's ``sys.path`` that are not the working folder (so it
    imports the toolkit and its libraries from where this process did, wherever that is), and
    started in the root folder (:func:`_start_worker`).  So a ``numpy.py`` or ``pickle.py`` in the
    user's folder runs in no worker."""
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # the working folder was removed
        here = None
    paths = [p for p in sys.path if p and os.path.isabs(p) and os.path.realpath(p) != here]
    return [sys.executable, "-I", "-c", f"import sys; sys.path += [p for p in {paths!r} if p not in sys.path]; " + _WORKER]


def _reap(proc) -> None:
    """End a worker that failed and release its pipes (a pipe already closed, or one whose flush
    finds the worker gone, is not an error here)."""
    with contextlib.suppress(OSError):
        proc.kill()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                pipe.close()
    with contextlib.suppress(OSError):
        proc.wait()


def _start_worker(share: list, spec: tuple):
    """A worker process (a fresh, isolated interpreter, :func:`_worker_argv`: nothing of this
    process is forked or re-imported, nothing of the working folder imported) decoding ``share``;
    None where it cannot be started or dies before it has its share."""
    try:
        proc = subprocess.Popen(_worker_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, cwd=os.path.abspath(os.sep))
    except (OSError, ValueError, TypeError):  # no interpreter to start
        return None
    try:
        pickle.dump((share, spec), proc.stdin, protocol=5)
        proc.stdin.close()
    except (OSError, ValueError):  # it died at once (a broken pipe)
        _reap(proc)
        return None
    return proc


def _result(proc) -> tuple | None:
    """The result of a worker, or None when it failed (the caller decodes that share itself)."""
    if proc is None:
        return None
    try:
        out = pickle.load(proc.stdout)
    except Exception:  # noqa: BLE001  (a worker that died: EOFError, UnpicklingError, ...)
        _reap(proc)
        return None
    with contextlib.suppress(OSError):
        proc.stdout.close()
    if proc.wait() != 0 or not (isinstance(out, tuple) and len(out) == 2):
        return None
    return out


def _decode_all(src: Path, items: list[tuple[str, str, bytes]], spec: tuple, workers: int | None) -> np.ndarray:
    """Decode every item, in order: a large collection in contiguous shares, the first in this
    process and each other in a worker process (a fresh interpreter fed the member bytes through a
    pipe); a share whose worker fails is decoded here."""
    n = _workers(len(items), workers)
    size = -(-len(items) // n) if items else 1
    shares = [items[i:i + size] for i in range(0, len(items), size)] or [[]]
    procs = [_start_worker(share, spec) for share in shares[1:]]
    chunks = [_decode_chunk(shares[0], spec)]
    for proc, share in zip(procs, shares[1:]):
        chunks.append(_result(proc) or _decode_chunk(share, spec))
    for arr, why in chunks:
        if why:
            _fail(src, why)
    return chunks[0][0] if len(chunks) == 1 else np.concatenate([a for a, _ in chunks])


def _jpeg_info(items) -> dict:
    """Quality (IJG scaling of the standard luminance table, exact match only) and chroma
    subsampling of the first JPEG among ``items``, or {} when there is none or they are unknown."""
    from PIL import Image, JpegImagePlugin

    first = next((data for _, fmt, data in items if fmt == "JPEG"), None)
    if first is None:
        return {}
    try:
        with Image.open(io.BytesIO(first), formats=("JPEG",)) as im:
            table = list(im.quantization.get(0, ()))
            sampling = JpegImagePlugin.get_sampling(im) if im.mode == "RGB" else -1
    except Exception:  # noqa: BLE001  (refused later, with its name, by the decoder)
        return {}
    quality = None
    for q in range(1, 101):
        scale = 5000 // q if q < 50 else 200 - 2 * q
        if table == [min(255, max(1, (v * scale + 50) // 100)) for v in _IJG_LUMA]:
            quality = q
            break
    return {"jpeg_quality": quality, "chroma_subsampling": _SUBSAMPLING.get(sampling)}


# --------------------------------------------------------------------------- source hash and cache

def sha256_file(path: Path) -> str:
    """The SHA-256 of the file ``path`` (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _manifest_sha256(got: _Files) -> str:
    """SHA-256 of a folder's manifest: sorted lines ``relative/path<TAB>sha256-of-file``."""
    lines = "".join(f"{'/'.join(p)}\t{hashlib.sha256(data).hexdigest()}\n" for p, (_, data) in sorted(got.files.items()))
    return hashlib.sha256(lines.encode("utf-8", "surrogateescape")).hexdigest()


ARRAYS = ("train_x", "train_y", "test_x", "test_y")
#: one cached array as the sidecar records it
_CACHED_ARRAY = Schema(required={"shape": LIST, "dtype": STR, "sha256": STR}, items={"shape": COUNT})
#: the sidecar ``meta.json`` of a cache entry: what the arrays beside it are (a file that breaks it is a
#: cache miss: the collection is decoded again)
CACHE_META = ResultType(
    "stam-imagefolder-cache", Schema(required={"kind": STR, "format": POSINT, "source_sha256": STR, "classes": LIST,
                                              "arrays": DICT},
                                     optional={"info": DICT}, items={"classes": STR}, values={"arrays": _CACHED_ARRAY},
                                     rules=(holds("arrays", lambda m: set(m["arrays"]) == set(ARRAYS),
                                                  "must record exactly " + ", ".join(ARRAYS)),)),
    files="CACHE/<sha256>/meta.json", writer="stam.dnn.imagefolder (the decoded-image cache)", found=False)


def _array_sha256(a: np.ndarray) -> str:
    return hashlib.sha256(memoryview(np.ascontiguousarray(a)).cast("B")).hexdigest()


#: open flags for an entry of the cache: no link followed, no wait on a FIFO (the opened file is
#: then checked to be a regular file)
_NOWAIT = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
#: the age (seconds) after which a temporary in a cache entry is a killed run's leftover, where no
#: lock tells (another process writing the entry right now holds the entry's lock)
STALE_S = 3600


def _open_lock(path: Path) -> int:
    """A descriptor of the regular file ``path`` (created if missing); something else in its place
    (a FIFO, which would block, a link, a device) is removed and the file made anew.  OSError
    where that cannot be done."""
    for _ in range(2):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOWAIT, 0o644)
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
def _locked(path: Path):
    """An exclusive lock on ``path`` (another process building the same entry waits, then reads
    it); yields whether it holds one: none where the cache folder cannot be written or there is
    no ``fcntl``.  The lock file is opened without blocking and must be a regular file
    (:func:`_open_lock`)."""
    try:
        import fcntl

        path.parent.mkdir(parents=True, exist_ok=True)
        fd = _open_lock(path)
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


def _remove_leftovers(entry: Path, locked: bool) -> None:
    """Remove the temporaries a killed run left in the cache entry ``entry`` (``.train_x.npy.*.npy``,
    ``.meta.json.*.tmp``): all of them while this process holds the entry's lock (no other process
    writes the entry then), else those older than :data:`STALE_S`."""
    from stam.io import remove_stale_temporaries

    remove_stale_temporaries([entry / f"{key}.npy" for key in ARRAYS] + [entry / "meta.json"],
                             older_than=0 if locked else STALE_S)


def _load_npy(path: Path, recorded: dict) -> np.ndarray | None:
    """The array of the ``.npy`` file ``path`` if it is what the toolkit wrote there: a regular
    file (opened without following a link or waiting on a FIFO), a header of format 1 or 2 giving
    the ``shape`` and ``dtype`` recorded in the sidecar, C order (a Fortran-order array of the same
    values is refused: its layout changes a run's arithmetic), and a size of exactly the header
    plus the data (a header claiming 10^12 images is refused before anything is allocated);
    else None."""
    fd = os.open(path, os.O_RDONLY | _NOWAIT)
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


def _read_cache(entry: Path, sha: str, expect: Expect) -> tuple[dict, dict] | None:
    """The arrays and sidecar of the cache entry ``entry`` if every recorded fact holds (source
    hash, format, classes, each array's file and header (:func:`_load_npy`), shapes, dtypes, array
    SHA-256s) and they meet ``expect``; else None."""
    try:
        meta = CACHE_META.read(entry / "meta.json")
        if meta.get("format") != CACHE_FORMAT or meta.get("source_sha256") != sha:
            return None
        classes, recorded = meta["classes"], meta["arrays"]
        if expect.classes is not None and tuple(classes) != tuple(expect.classes):
            return None
        arrays = {}
        for key in ARRAYS:
            r = recorded[key]
            a = _load_npy(entry / f"{key}.npy", r)
            if a is None or list(a.shape) != r["shape"] or str(a.dtype) != r["dtype"] or _array_sha256(a) != r["sha256"]:
                return None
            arrays[key] = a
    except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError, UnicodeDecodeError, EOFError, UsageError,
            MemoryError, OverflowError):
        return None
    x, y = arrays["train_x"], arrays["train_y"]
    ok = (x.dtype == np.uint8 and x.ndim == 4 and arrays["test_x"].shape[1:] == x.shape[1:]
          and y.dtype == np.int64 and arrays["test_y"].dtype == np.int64
          and len(y) == len(x) and len(arrays["test_y"]) == len(arrays["test_x"])
          and all(len(a) == 0 or (a.min() >= 0 and a.max() < len(classes)) for a in (y, arrays["test_y"])))
    if not ok or (expect.shape is not None and tuple(x.shape[1:]) != tuple(expect.shape)):
        return None
    return arrays, meta


def _write_cache(entry: Path, sha: str, arrays: dict, classes: tuple, info: dict) -> None:
    """The arrays, each atomically, then the sidecar (so a sidecar never describes missing arrays);
    a folder where a file of the entry goes is removed first (the rename could not replace it)."""
    import shutil

    recorded = {}
    for name in (*(f"{key}.npy" for key in ARRAYS), "meta.json"):
        if (entry / name).is_dir() and not (entry / name).is_symlink():
            shutil.rmtree(entry / name)
    for key in ARRAYS:
        a = np.ascontiguousarray(arrays[key])
        with atomic_path(entry / f"{key}.npy", suffix=".npy") as tmp, open(tmp, "wb") as f:
            np.save(f, a, allow_pickle=False)
        recorded[key] = {"shape": list(a.shape), "dtype": str(a.dtype), "sha256": _array_sha256(a)}
    CACHE_META.write({"kind": "stam-imagefolder-cache", "format": CACHE_FORMAT, "source_sha256": sha,
                      "classes": list(classes), "arrays": recorded, "info": info}, entry / "meta.json")


# --------------------------------------------------------------------------- the loader

def _source(src: Path, sha: str, hash_of: str, info: dict, expect: Expect) -> dict:
    formats = info.get("formats", [])
    lossy = "JPEG" in formats
    what = " and ".join(formats) or "image"
    if lossy:
        detail = ", ".join(s for s in (f"quality {info['jpeg_quality']}" if info.get("jpeg_quality") else "",
                                       f"{info['chroma_subsampling']} chroma subsampling" if info.get("chroma_subsampling") else "") if s)
        detail = f" ({detail})" if detail else ""
    if expect.copy_of and lossy:
        kind, note = "jpeg-copy", f"{what} copy of {expect.copy_of}{detail}, not the official pixels"
    elif expect.copy_of:
        kind, note = "image-folder", f"{what} copy of {expect.copy_of} (lossless, but not checked against the official archive)"
    else:
        kind, note = "image-folder", f"{what} images" + (detail if lossy else "")
    return {"kind": kind, "sha256": sha, "hash_of": hash_of, "file": src.name + ("/" if hash_of == "folder manifest" else ""),
            "formats": formats, "note": note, **{k: info[k] for k in ("jpeg_quality", "chroma_subsampling") if k in info}}


def read(path: str | os.PathLike, expect: Expect = Expect(), cache_dir: str | os.PathLike | None = None,
         limits: Limits | None = None, workers: int | None = None) -> Collection:
    """The image collection at ``path`` (a folder or a .tar, .tar.gz/.tgz or .zip archive), from the
    cache when an entry for its SHA-256 holds (module docstring), else read, checked, decoded (in
    ``workers`` processes, default: the CPUs available, for large collections) and cached.
    ``limits`` default: :meth:`Limits.for_shape` of ``expect.shape``.  A problem with the
    collection is a one-line :class:`UsageError` naming the file or member; writing the cache may
    fail (a warning), the load does not."""
    src = Path(path)
    limits = limits or Limits.for_shape(expect.shape)
    try:
        is_dir = src.is_dir()
        if not is_dir and not src.is_file():
            _fail(src, "no such file or folder")
        if not is_dir and archive_kind(src) is None:
            _fail(src, f"not an image collection: give a folder or a {', '.join(ARCHIVE_SUFFIXES)} archive")
        if not is_dir and src.stat().st_size > limits.total_bytes:
            _fail(src, f"the archive is larger than {limits.total_bytes} bytes, far more than the images need; refusing it")
        got = None
        if is_dir:
            got = _read_members(src, limits)
            sha, hash_of = _manifest_sha256(got), "folder manifest"
        else:
            sha, hash_of = sha256_file(src), "archive"
    except OSError as exc:
        _fail(src, f"cannot read it ({exc.strerror or exc})")
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    entry = None if root is None else root / "imagefolder" / sha
    with _locked(root / "imagefolder" / f"{sha}.lock") if root is not None else contextlib.nullcontext() as locked:
        if entry is not None:
            _remove_leftovers(entry, bool(locked))
        hit = _read_cache(entry, sha, expect) if entry is not None else None
        if hit is not None:
            arrays, meta = hit
            return Collection(*(arrays[k] for k in ARRAYS), tuple(meta["classes"]),
                              _source(src, sha, hash_of, meta.get("info") or {}, expect), cached=True)
        if got is None:
            got = _read_members(src, limits)
        splits = _layout(src, got, expect)
        classes = tuple(sorted(splits["train"]))
        arrays, formats = {}, set()
        items_by_split = {}
        for s in SPLITS:
            items, labels = [], []
            for label, cls in enumerate(classes):
                for fname, name, data in splits[s][cls]:
                    fmt = IMAGE_SUFFIXES[os.path.splitext(fname)[1].lower()]
                    formats.add(fmt)
                    items.append((name, fmt, data))
                    labels.append(label)
            items_by_split[s] = (items, np.asarray(labels, dtype=np.int64))
        spec = _spec(src, items_by_split["train"][0][0], expect, limits)
        for s in SPLITS:
            items, labels = items_by_split[s]
            arrays[f"{s}_x"], arrays[f"{s}_y"] = _decode_all(src, items, spec, workers), labels
        info = {"formats": sorted(formats), **_jpeg_info(items_by_split["train"][0])}
        del got, splits, items_by_split
        try:
            if entry is not None:
                _write_cache(entry, sha, arrays, classes, info)
        except OSError as exc:
            warn(f"could not write the image cache {entry} ({exc.strerror or exc}); the collection will be decoded "
                 "again next time (set STAM_CACHE_DIR to a writable folder)")
    return Collection(*(arrays[k] for k in ARRAYS), classes, _source(src, sha, hash_of, info, expect), cached=False)


__all__ = ["read", "find", "sha256_file", "is_collection_dir", "archive_kind", "default_cache_dir", "Collection", "Expect", "Limits",
           "SPLITS", "IMAGE_SUFFIXES", "ARCHIVE_SUFFIXES", "CACHE_FORMAT", "CIFAR10_JPEG_SHA256"]
