"""Reading an image collection (:mod:`stam.dnn.imagefolder`) safely and decoding its images: what is expected
(:class:`Expect`, :class:`Limits`), the members of an archive or folder read in memory and checked
(:func:`read_members`), the layout (:func:`layout`), and the decoding of images checked header first
(:func:`decode_chunk`, what a decoding worker runs; :func:`decode_spec`, :func:`jpeg_info`).

Layout: ``[ROOT/]SPLIT/CLASS/FILE`` with the splits ``train`` and ``test``, at most one top-level
folder ``ROOT`` (``cifar10-jpeg/``), ``FILE`` a ``.jpg``, ``.jpeg`` or ``.png`` image; given as a
folder or as a ``.tar``, ``.tar.gz``/``.tgz`` or ``.zip`` archive.  The classes are the sorted
class-folder names, the same in both splits; class ``k`` of that order has label ``k``, and the
images of a split are ordered by label, then by file name.  :func:`stam.dnn.imagefolder.read` returns ``uint8`` arrays
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
"""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import tarfile
import warnings
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stam.errors import UsageError

SPLITS = ("train", "test")
#: file suffix (lower case) -> the image format its content must have
IMAGE_SUFFIXES = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG"}
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
#: image mode of each channel count
MODES = {3: "RGB", 1: "L"}

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
class Files:
    """What was read from a source: its files (path parts -> bytes) and folder entries, by name."""

    files: dict = field(default_factory=dict)  # parts -> (display name, bytes)
    dirs: dict = field(default_factory=dict)  # parts -> display name
    total: int = 0


# --------------------------------------------------------------------------- small helpers

def show(name: str, limit: int = 120) -> str:
    """A member name for a one-line message: quoted, escaped, shortened."""
    text = ascii(name) if not name.isprintable() else repr(name)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def fail(src: Path, message: str):
    raise UsageError(f"{src}: {message}")


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


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def safe_parts(name: str, src: Path) -> tuple[str, ...]:
    """The path parts of the member ``name`` (``.`` and empty parts dropped); a usage error for a
    name that is absolute, leaves its folder (``..``), uses a backslash or a control character."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        fail(src, f"member {show(name)} has a name that is not UTF-8; refusing the collection")
    if _CONTROL.search(name):
        fail(src, f"member {show(name)} has a control character in its name; refusing the collection")
    if "\\" in name:
        fail(src, f"member {show(name)} has a backslash in its name; refusing the collection")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":" and name[0].isalpha()):
        fail(src, f"member {show(name)} has an absolute path; refusing the collection (nothing is extracted)")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        fail(src, f"member {show(name)} leaves the collection's folder ('..'); refusing the collection "
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

def _add_file(out: Files, parts: tuple, name: str, data_size: int, read, src: Path, limits: Limits) -> None:
    if not parts:
        fail(src, f"member {show(name)} is a file without a name")
    if parts in out.files:
        fail(src, f"member {show(name)} appears twice")
    if data_size > limits.file_bytes:
        fail(src, f"member {show(name)} is {data_size} bytes, more than the {limits.file_bytes} an image of the "
                   "expected size needs; refusing the collection")
    out.total += data_size
    if out.total > limits.total_bytes:
        fail(src, f"the members expand to more than {limits.total_bytes} bytes, far more than the images need "
                   "(a decompression bomb?); refusing the collection")
    data = read()
    if len(data) != data_size:
        fail(src, f"member {show(name)} is truncated ({len(data)} of {data_size} bytes)")
    out.files[parts] = (name, data)


def _count(out: Files, src: Path, limits: Limits) -> None:
    if len(out.files) + len(out.dirs) > limits.members:
        fail(src, f"more than {limits.members} members, far more than an image collection of the expected size "
                   "holds; refusing the collection")


def _read_tar(src: Path, compressed: bool, limits: Limits) -> Files:
    out = Files()
    with open(src, "rb") as raw:
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        counter = _Capped(stream, limits.total_bytes)
        capped = io.BufferedReader(counter, 1 << 20)
        with tarfile.open(fileobj=capped, mode="r|") as tar:
            for m in tar:
                parts = safe_parts(m.name, src)
                if m.isdir():
                    out.dirs[parts] = m.name
                elif m.isreg():
                    _add_file(out, parts, m.name, m.size, lambda: tar.extractfile(m).read(), src, limits)
                else:
                    what = ("a symbolic link" if m.issym() else "a hard link" if m.islnk() else
                            "a device" if m.ischr() or m.isblk() else "a FIFO" if m.isfifo() else
                            f"of tar type {m.type!r}")
                    fail(src, f"member {show(m.name)} is {what}; an image collection holds only folders and "
                               "image files (refusing the archive)")
                _count(out, src, limits)
            end = tar.offset  # where the end-of-archive blocks begin (tarfile stops silently at a cut header)
        while capped.read(1 << 20):  # to the end: gzip checks its length and CRC there
            pass
    if counter.count < end + tarfile.BLOCKSIZE:
        raise tarfile.ReadError("it ends before the tar end-of-archive marker")
    return out


def _read_zip(src: Path, limits: Limits) -> Files:
    out = Files()
    with zipfile.ZipFile(src) as zf:
        infos = zf.infolist()
        if len(infos) > limits.members:
            fail(src, f"more than {limits.members} members ({len(infos)}), far more than an image collection of the "
                       "expected size holds; refusing the collection")
        for info in infos:
            parts = safe_parts(info.filename, src)
            mode = info.external_attr >> 16
            kind = stat.S_IFMT(mode) if info.create_system == 3 else 0
            if kind == stat.S_IFLNK:
                fail(src, f"member {show(info.filename)} is a symbolic link; an image collection holds only "
                           "folders and image files (refusing the archive)")
            if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                fail(src, f"member {show(info.filename)} is not a folder or a regular file (mode {oct(mode)}); "
                           "refusing the archive")
            if info.is_dir():
                out.dirs[parts] = info.filename
            else:
                _add_file(out, parts, info.filename, info.file_size, lambda: zf.read(info), src, limits)
            _count(out, src, limits)
    return out


def _read_folder(src: Path, limits: Limits) -> Files:
    out = Files()

    def walk(folder: Path, parts: tuple) -> None:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            rel = (*parts, entry.name)
            name = "/".join(rel)
            safe_parts(name, src)
            if entry.is_symlink():
                fail(src, f"{show(name)} is a symbolic link; an image folder holds only folders and image files")
            if entry.is_dir(follow_symlinks=False):
                if len(rel) >= 4:
                    fail(src, f"{show(name + '/')} is a folder below CLASS/; expected the layout "
                               "[ROOT/]SPLIT/CLASS/FILE")
                out.dirs[rel] = name + "/"
                _count(out, src, limits)
                walk(Path(entry.path), rel)
            elif entry.is_file(follow_symlinks=False):
                size = entry.stat(follow_symlinks=False).st_size
                _add_file(out, rel, name, size, lambda: Path(entry.path).read_bytes(), src, limits)
                _count(out, src, limits)
            else:
                fail(src, f"{show(name)} is not a folder or a regular file (a device, FIFO or socket)")

    walk(src, ())
    return out


def read_members(src: Path, limits: Limits) -> Files:
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
        fail(src, f"the archive expands to more than {limits.total_bytes} bytes, far more than the images need "
                   "(a decompression bomb?); refusing it")
    except (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, NotImplementedError,
            RuntimeError, ValueError, OSError) as exc:
        why = (str(exc).splitlines() or [""])[0] or type(exc).__name__
        fail(src, f"cannot read it as a {kind} {'folder' if kind == 'folder' else 'archive'} ({why}); "
                   "is it truncated or of another format?")
    fail(src, f"not an image collection: give a folder or a {', '.join(ARCHIVE_SUFFIXES)} archive")


# --------------------------------------------------------------------------- the layout

def layout(src: Path, got: Files, expect: Expect) -> dict[str, dict[str, list]]:
    """``{split: {class: [(file name, display name, bytes), ...]}}`` from the members, after checking
    the layout ``[ROOT/]SPLIT/CLASS/FILE``, the file suffixes, the classes and the splits."""
    want = "[ROOT/]SPLIT/CLASS/FILE with SPLIT train or test"
    if not got.files:
        fail(src, f"holds no image files; expected the layout {want}")
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
            fail(src, f"member {show(got.files[p][0])} is not in the layout {want}"
                       + (f" (ROOT {root})" if root else ""))
    for p, name in sorted(got.dirs.items()):  # a folder entry must lie on the layout's folders
        if (root is not None and p and p[0] != root) or len(p) > depth - 1 or (len(p) > depth - 3 and p[depth - 3] not in SPLITS):
            fail(src, f"member {show(name)} is a folder outside the layout {want}")
    splits: dict[str, dict[str, list]] = {s: {} for s in SPLITS}
    for p in paths:
        split, cls, fname = p[-3:]
        suffix = os.path.splitext(fname)[1].lower()
        if suffix not in IMAGE_SUFFIXES:
            fail(src, f"member {show(got.files[p][0])} is not a .jpg, .jpeg or .png image file")
        splits[split].setdefault(cls, []).append((fname, *got.files[p]))
    for p in got.dirs:  # class folders without files
        if len(p) == depth - 1:
            splits[p[-2]].setdefault(p[-1], [])
    for s in SPLITS:
        if not any(splits[s].values()):
            fail(src, f"the {s} split is empty (no {s}/CLASS/FILE images)")
        for cls, items in sorted(splits[s].items()):
            if not items:
                fail(src, f"class {show(cls)} holds no images in the {s} split")
    train, test = set(splits["train"]), set(splits["test"])
    if train != test:
        missing = sorted(train - test)
        where, cls = ("test", missing[0]) if missing else ("train", sorted(test - train)[0])
        fail(src, f"class {show(cls)} is missing from the {where} split; both splits need the same class folders")
    if expect.classes is not None and tuple(sorted(train)) != tuple(expect.classes):
        fail(src, _class_message(sorted(train), expect))
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
    detail = "; ".join(s for s in (missing and "missing " + ", ".join(map(show, missing[:5])) + (" ..." if len(missing) > 5 else ""),
                                   extra and "unexpected " + ", ".join(map(show, extra[:5])) + (" ..." if len(extra) > 5 else "")) if s)
    return f"the class folders do not match: {detail}; {need}"


# --------------------------------------------------------------------------- decoding

def _check_header(im, name: str, fmt: str, spec: tuple) -> str | None:
    """Why the opened (not yet decoded) image ``im`` is refused, or None."""
    mode, width, height, max_pixels = spec
    if im.format != fmt:
        return f"member {show(name)} is named like a {fmt} file but holds {im.format}"
    w, h = im.size
    if w * h > max_pixels:
        return f"member {show(name)} is {w}x{h} pixels, more than the limit of {max_pixels} (a decompression bomb?)"
    if (w, h) != (width, height):
        return f"member {show(name)} is {w}x{h} pixels; expected {width}x{height}"
    if im.mode != mode:
        return f"member {show(name)} has image mode {im.mode}; expected {mode}"
    if getattr(im, "n_frames", 1) != 1:
        return f"member {show(name)} holds {im.n_frames} frames; expected one image"
    return None


def decode_chunk(items: list[tuple[str, str, bytes]], spec: tuple) -> tuple[np.ndarray | None, str | None]:
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
                return None, f"member {show(name)} is not a readable {fmt} image"
            return None, f"member {show(name)} cannot be decoded as {fmt} ({type(exc).__name__}: {first})"
        out[i] = arr.transpose(2, 0, 1)
    return out, None


def decode_spec(src: Path, first: tuple[str, str, bytes], expect: Expect, limits: Limits) -> tuple:
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
        return "RGB", 0, 0, limits.pixels  # refused with its reason by decode_chunk
    if w * h > limits.pixels:
        fail(src, f"member {show(name)} is {w}x{h} pixels, more than the limit of {limits.pixels}")
    if mode not in MODES.values():
        fail(src, f"member {show(name)} has image mode {mode}; an image collection needs RGB or L (greyscale) images")
    return mode, w, h, limits.pixels


def jpeg_info(items) -> dict:
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


__all__ = ["SPLITS", "IMAGE_SUFFIXES", "ARCHIVE_SUFFIXES", "MODES", "Limits", "Expect", "Files", "show", "fail",
           "archive_kind", "safe_parts", "read_members", "layout", "decode_chunk", "decode_spec", "jpeg_info"]
