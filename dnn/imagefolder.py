"""Image collections as data sets for Section 3: folders of JPEG or PNG files in torchvision's
ImageFolder layout, e.g. CIFAR-10 as a JPEG copy, decoded once and cached.

Reading and checking the members and decoding the images is :mod:`stam.dnn.imageread` (its docstring: the
layout and what is refused); the cache's files (hashes, the lock, checked ``.npy`` reads) are
:mod:`stam.dnn.imagecache`; this module holds the loader :func:`read`, the pool of decoding workers and the
cache entry (its sidecar's type :data:`CACHE_META`), and every public name of the other two.

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
import json
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stam.dnn.imagecache import array_sha256, entry_lock, load_npy, manifest_sha256, sha256_file
from stam.dnn.imageread import (ARCHIVE_SUFFIXES, IMAGE_SUFFIXES, SPLITS, Expect, Limits, archive_kind, decode_chunk,
                                decode_spec, fail, jpeg_info, layout, read_members)
from stam.errors import UsageError, warn
from stam.io import STALE_S, atomic_path
from stam.results import COUNT, DICT, INT_OR_NULL, LIST, POSINT, STR, STR_OR_NULL, ResultType, Schema, holds

CACHE_FORMAT = 1
#: collections with at least this many images are decoded by a process pool
PARALLEL_MIN = 4096
#: the shared copy of CIFAR-10 as JPEG files (shared/data/README.md); used by tests and the benchmark
CIFAR10_JPEG_SHA256 = "ff26949c34c4e67da3fa472a1f142e33365dea058f94f1fa369b14ef3d986968"


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


def default_cache_dir() -> Path | None:
    """The toolkit's cache folder (:func:`stam.io.cache_home`); None with ``STAM_CACHE_DIR=off``
    (a collection is then decoded every time, nothing kept)."""
    from stam.io import cache_home

    return cache_home()


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


# --------------------------------------------------------------------------- the pool of decoding workers

def _workers(n: int, workers: int | None) -> int:
    if workers is None:
        try:
            workers = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover  (not Linux)
            workers = os.cpu_count() or 1
    return max(1, min(workers, n // (PARALLEL_MIN // 2))) if n >= PARALLEL_MIN else 1


#: what a decoding worker runs: read (items, spec) pickled on stdin, write decode_chunk's result on stdout
_WORKER = ("import pickle, sys; from stam.dnn.imageread import decode_chunk; "
           "items, spec = pickle.load(sys.stdin.buffer); pickle.dump(decode_chunk(items, spec), sys.stdout.buffer, protocol=5)")


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
    chunks = [decode_chunk(shares[0], spec)]
    for proc, share in zip(procs, shares[1:]):
        chunks.append(_result(proc) or decode_chunk(share, spec))
    for arr, why in chunks:
        if why:
            fail(src, why)
    return chunks[0][0] if len(chunks) == 1 else np.concatenate([a for a, _ in chunks])


# --------------------------------------------------------------------------- the cache entry

ARRAYS = ("train_x", "train_y", "test_x", "test_y")


#: one cached array as the sidecar records it
_CACHED_ARRAY = Schema(required={"shape": LIST, "dtype": STR, "sha256": STR}, items={"shape": COUNT})


#: what the sidecar records of the images (:func:`_decode_collection`), as a run's ``data_source`` records it
#: (:data:`stam.datasets.DATA_SOURCE`): a bad field is a cache miss here, never blamed on the run's config.json
_CACHED_INFO = Schema(optional={"formats": LIST, "jpeg_quality": INT_OR_NULL, "chroma_subsampling": STR_OR_NULL},
                      items={"formats": STR})
#: the sidecar ``meta.json`` of a cache entry: what the arrays beside it are (a file that breaks it is a
#: cache miss: the collection is decoded again, and the entry written anew)
CACHE_META = ResultType(
    "stam-imagefolder-cache", Schema(required={"kind": STR, "format": POSINT, "source_sha256": STR, "classes": LIST,
                                              "arrays": DICT},
                                     optional={"info": DICT}, items={"classes": STR}, values={"arrays": _CACHED_ARRAY},
                                     inner={"info": _CACHED_INFO},
                                     rules=(holds("arrays", lambda m: set(m["arrays"]) == set(ARRAYS),
                                                  "must record exactly " + ", ".join(ARRAYS)),)),
    files="CACHE/<sha256>/meta.json", writer="stam.dnn.imagefolder (the decoded-image cache)", found=False)




def _remove_leftovers(entry: Path, locked: bool) -> None:
    """Remove the temporaries a killed run left in the cache entry ``entry`` (``.train_x.npy.*.npy``,
    ``.meta.json.*.tmp``): all of them while this process holds the entry's lock (no other process
    writes the entry then), else those older than :data:`stam.io.STALE_S`."""
    from stam.io import remove_stale_temporaries

    remove_stale_temporaries([entry / f"{key}.npy" for key in ARRAYS] + [entry / "meta.json"],
                             older_than=0 if locked else STALE_S)


def _read_cache(entry: Path, sha: str, expect: Expect) -> tuple[dict, dict] | None:
    """The arrays and sidecar of the cache entry ``entry`` if every recorded fact holds (source
    hash, format, classes, each array's file and header (:func:`load_npy`), shapes, dtypes, array
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
            a = load_npy(entry / f"{key}.npy", r)
            if a is None or list(a.shape) != r["shape"] or str(a.dtype) != r["dtype"] or array_sha256(a) != r["sha256"]:
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
        recorded[key] = {"shape": list(a.shape), "dtype": str(a.dtype), "sha256": array_sha256(a)}
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
            fail(src, "no such file or folder")
        if not is_dir and archive_kind(src) is None:
            fail(src, f"not an image collection: give a folder or a {', '.join(ARCHIVE_SUFFIXES)} archive")
        if not is_dir and src.stat().st_size > limits.total_bytes:
            fail(src, f"the archive is larger than {limits.total_bytes} bytes, far more than the images need; refusing it")
        got = None
        if is_dir:
            got = read_members(src, limits)
            sha, hash_of = manifest_sha256(got), "folder manifest"
        else:
            sha, hash_of = sha256_file(src), "archive"
    except OSError as exc:
        fail(src, f"cannot read it ({exc.strerror or exc})")
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    entry = None if root is None else root / "imagefolder" / sha
    with entry_lock(root / "imagefolder" / f"{sha}.lock") if root is not None else contextlib.nullcontext() as locked:
        if entry is not None:
            _remove_leftovers(entry, bool(locked))
        hit = _read_cache(entry, sha, expect) if entry is not None else None
        if hit is not None:
            arrays, meta = hit
            return Collection(*(arrays[k] for k in ARRAYS), tuple(meta["classes"]),
                              _source(src, sha, hash_of, meta.get("info") or {}, expect), cached=True)
        if got is None:
            got = read_members(src, limits)
        arrays, classes, info = _decode_collection(src, got, expect, limits, workers)
        del got
        try:
            if entry is not None:
                _write_cache(entry, sha, arrays, classes, info)
        except OSError as exc:
            warn(f"could not write the image cache {entry} ({exc.strerror or exc}); the collection will be decoded "
                 "again next time (set STAM_CACHE_DIR to a writable folder)")
    return Collection(*(arrays[k] for k in ARRAYS), classes, _source(src, sha, hash_of, info, expect), cached=False)


def _decode_collection(src: Path, got, expect: Expect, limits: Limits, workers: int | None) -> tuple[dict, tuple, dict]:
    """The arrays (:data:`ARRAYS`), the classes and the image information of the members ``got``: the layout
    checked (:func:`stam.dnn.imageread.layout`), every image decoded in label order, then by file name."""
    splits = layout(src, got, expect)
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
    spec = decode_spec(src, items_by_split["train"][0][0], expect, limits)
    for s in SPLITS:
        items, labels = items_by_split[s]
        arrays[f"{s}_x"], arrays[f"{s}_y"] = _decode_all(src, items, spec, workers), labels
    info = {"formats": sorted(formats), **jpeg_info(items_by_split["train"][0])}
    return arrays, classes, info


__all__ = ["read", "find", "is_collection_dir", "default_cache_dir", "Collection", "CACHE_FORMAT", "CIFAR10_JPEG_SHA256"]
