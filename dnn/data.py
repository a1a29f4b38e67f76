"""Data sets for Section 3: CIFAR-10/100 from the official python-pickle archives or from an image
collection (e.g. a JPEG copy of CIFAR-10, :mod:`stam.dnn.imagefolder`), and scikit-learn's bundled
digits (real, offline) through the same interface.

Where CIFAR comes from (:func:`load_cifar`, ``--data-dir DIR``): the official archive
``cifar-10-python.tar.gz`` or its extracted folder in ``DIR`` wins; else, with ``download``, the
official archive is fetched; else an image collection ``cifar10-jpeg.tar.gz`` / ``.tgz`` / ``.tar``
/ ``.zip`` or folder ``cifar10-jpeg/`` in ``DIR`` (``cifar100-jpeg...`` for CIFAR-100), else ``DIR``
itself when it holds ``train/`` and ``test/``.  ``DIR`` may also name an image archive directly (or
the official archive).  An image collection must have exactly the data set's class folders (the
official label names, whose sorted order is the label order 0..9 or 0..99) and 32x32 RGB images.
Every data set records its provenance in :attr:`ImageData.source` (``kind``: ``official``,
``jpeg-copy``, ``image-folder`` or ``scikit-learn``), which ``stam train`` writes into the run.

Everything lives on the training device as ``uint8`` tensors ``(N, C, H, W)``; the random crop
(4-pixel zero padding) and horizontal flip of the CIFAR training set run there, batched, drawing
from a ``torch.Generator`` (see :func:`augment`).

Integrity and safety of CIFAR files:

- ``cifar-10-python.tar.gz`` / ``cifar-100-python.tar.gz`` are checked against the official MD5s
  (https://www.cs.toronto.edu/~kriz/cifar.html) before anything is read;
- the extracted folders ``cifar-10-batches-py/`` / ``cifar-100-python/`` are checked file by file
  against the per-file MD5s of the official archive's members (the table torchvision uses), then
  for shapes and label ranges; the SHA-256 of every file read is returned as a manifest
  (:attr:`ImageData.manifest`) and recorded in the run's ``config.json``;
- the pickles are read by :class:`RestrictedUnpickler`, which admits only what those files
  contain (dicts, lists, strings, numbers and numpy array reconstruction); anything else, e.g. a
  ``reduce`` to ``os.system``, is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import io
import pickle
import tarfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from stam.dnn import imagefolder
from stam.datasets import AUGMENTED
from stam.dnn.bnstats import bn_subset
from stam.datasets import DATASET_NAMES
from stam.dnn.catalog import BN_AUGMENT, BN_AUGMENT_SEED, BN_IMAGES, VAL_FRACTION  # declared once, in the catalog
from stam.errors import UsageError
from stam.io import atomic_path
from stam.dnn import imagecache
from stam.dnn import imageread

SOURCE_URL = "https://www.cs.toronto.edu/~kriz/"


@dataclass(frozen=True)
class CifarLayout:
    """Where a CIFAR variant's arrays live in its official archive."""

    archive: str
    folder: str
    train_files: tuple[str, ...]
    test_file: str
    meta_file: str
    label_key: str
    num_classes: int
    title: str
    classes: tuple[str, ...]  # the official meta's label names in label order (which is their sorted order)
    copy_stem: str  # the name of an image collection of this data set in --data-dir (STEM.tar.gz, STEM/, ...)

    @property
    def expect(self) -> imageread.Expect:
        """What an image collection of this data set must hold: these classes, 3x32x32 RGB images."""
        return imageread.Expect(self.classes, (3, 32, 32), self.title)


#: ``label_names`` of CIFAR-10's ``batches.meta`` (label 0..9)
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
#: ``fine_label_names`` of CIFAR-100's ``meta`` (label 0..99; alphabetical, as in the official file)
CIFAR100_CLASSES = (
    "apple", "aquarium_fish", "baby", "bear", "beaver", "bed", "bee", "beetle", "bicycle", "bottle",
    "bowl", "boy", "bridge", "bus", "butterfly", "camel", "can", "castle", "caterpillar", "cattle",
    "chair", "chimpanzee", "clock", "cloud", "cockroach", "couch", "crab", "crocodile", "cup", "dinosaur",
    "dolphin", "elephant", "flatfish", "forest", "fox", "girl", "hamster", "house", "kangaroo", "keyboard",
    "lamp", "lawn_mower", "leopard", "lion", "lizard", "lobster", "man", "maple_tree", "motorcycle", "mountain",
    "mouse", "mushroom", "oak_tree", "orange", "orchid", "otter", "palm_tree", "pear", "pickup_truck", "pine_tree",
    "plain", "plate", "poppy", "porcupine", "possum", "rabbit", "raccoon", "ray", "road", "rocket",
    "rose", "sea", "seal", "shark", "shrew", "skunk", "skyscraper", "snail", "snake", "spider",
    "squirrel", "streetcar", "sunflower", "sweet_pepper", "table", "tank", "telephone", "television", "tiger", "tractor",
    "train", "trout", "tulip", "turtle", "wardrobe", "whale", "willow_tree", "wolf", "woman", "worm",
)

CIFAR_LAYOUTS = {
    "cifar10": CifarLayout(
        "cifar-10-python.tar.gz", "cifar-10-batches-py",
        tuple(f"data_batch_{i}" for i in range(1, 6)), "test_batch", "batches.meta", "labels", 10, "CIFAR-10",
        CIFAR10_CLASSES, "cifar10-jpeg",
    ),
    "cifar100": CifarLayout(
        "cifar-100-python.tar.gz", "cifar-100-python", ("train",), "test", "meta", "fine_labels", 100, "CIFAR-100",
        CIFAR100_CLASSES, "cifar100-jpeg",
    ),
}

#: MD5 of the official archives and of their members (the latter as listed by torchvision's
#: ``datasets.CIFAR10`` / ``CIFAR100``).  Tests pass their own table for the fake archives they write.
OFFICIAL_MD5 = {
    "cifar-10-python.tar.gz": "c58f30108f718f92721af3b95e74349a",
    "cifar-10-batches-py/data_batch_1": "c99cafc152244af753f735de768cd75f",
    "cifar-10-batches-py/data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "cifar-10-batches-py/data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "cifar-10-batches-py/data_batch_4": "634d18415352ddfa80567beed471001a",
    "cifar-10-batches-py/data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "cifar-10-batches-py/test_batch": "40351d587109b95175f43aff81a1287e",
    "cifar-10-batches-py/batches.meta": "5ff9c542aee3614f3951f8cda6e48888",
    "cifar-100-python.tar.gz": "eb9058c3a382ffc7106e4002c42a8d85",
    "cifar-100-python/train": "16019d7e3df5f24257cddd939b257f8d",
    "cifar-100-python/test": "f0ef6b0ae62326f3e7ffdfab6717acfc",
    "cifar-100-python/meta": "7973b15100ade9c7d40fb424638fde48",
}


# --------------------------------------------------------------------------- safe unpickling

def _numpy_reconstruct():
    core = getattr(np, "_core", None) or np.core  # numpy >= 2 moved numpy.core to numpy._core
    return core.multiarray._reconstruct


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickler for the CIFAR python pickles: besides the built-in containers and scalars, it
    admits only ``numpy.core.multiarray._reconstruct`` (either module spelling), ``numpy.ndarray``
    and ``numpy.dtype``; any other global (``os.system``, ``builtins.eval``, ...) is refused."""

    ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
    }

    def find_class(self, module: str, name: str):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}: not a type found in CIFAR pickles")
        if name == "_reconstruct":
            return _numpy_reconstruct()
        return getattr(np, name)

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refusing a persistent id: not found in CIFAR pickles")


def safe_unpickle(data: bytes) -> object:
    """Unpickle ``data`` (a Python 2 CIFAR pickle; strings decode as latin-1, as numpy needs)."""
    return RestrictedUnpickler(io.BytesIO(data), encoding="latin1").load()


# --------------------------------------------------------------------------- the data object

@dataclass
class ImageData:
    """A classification data set on one device: ``uint8`` images ``(N, C, H, W)``, ``int64``
    labels; per-channel mean and std of the training images (on the 0..1 scale) for
    normalisation; ``augment`` says whether crop-and-flip applies (CIFAR yes, digits no).
    ``manifest``: the SHA-256 of every file read; ``source``: where the data came from (``kind``
    official, jpeg-copy, image-folder or scikit-learn; ``file``; ``sha256`` and what it hashes;
    ``note``), written by ``stam train`` into ``config.json`` and ``summary.json`` as ``data_source``."""

    name: str
    train_x: Tensor
    train_y: Tensor
    test_x: Tensor
    test_y: Tensor
    num_classes: int
    augment: bool
    mean: Tensor = field(init=False)
    std: Tensor = field(init=False)
    manifest: dict = field(default_factory=dict)
    val_x: Tensor | None = None  # validation images carved out of the training set (split_validation)
    val_y: Tensor | None = None
    source: dict = field(default_factory=dict)

    def __post_init__(self):
        x = self.train_x.float().div_(255)
        self.mean = x.mean(dim=(0, 2, 3))
        self.std = x.std(dim=(0, 2, 3)).clamp_min(1e-3)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return tuple(self.train_x.shape[1:])

    def normalise(self, x: Tensor, dtype=torch.float32) -> Tensor:
        """uint8 images to ``(x/255 - mean) / std``."""
        shape = (1, -1, 1, 1)
        return (x.to(dtype) / 255 - self.mean.view(shape).to(dtype)) / self.std.view(shape).to(dtype)


def augment(x: Tensor, generator: torch.Generator, pad: int = 4) -> Tensor:
    """Random crop with ``pad``-pixel zero padding and random horizontal flip, batched on the
    device of ``x`` (uint8 ``(B, C, H, W)``); all randomness from ``generator``."""
    b, c, h, w = x.shape
    padded = torch.nn.functional.pad(x, (pad, pad, pad, pad))
    offsets = torch.randint(0, 2 * pad + 1, (2, b), generator=generator, device=x.device)
    flip = torch.rand(b, generator=generator, device=x.device) < 0.5
    rows = offsets[0, :, None] + torch.arange(h, device=x.device)  # (B, H)
    cols = offsets[1, :, None] + torch.arange(w, device=x.device)  # (B, W)
    cols = torch.where(flip[:, None], cols.flip(1), cols)
    batch = torch.arange(b, device=x.device)[:, None, None]
    out = padded.permute(0, 2, 3, 1)[batch, rows[:, :, None], cols[:, None, :]]  # (B, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()


def bn_images(data, n_images: int = BN_IMAGES, augmented: bool = BN_AUGMENT, index: Tensor | None = None) -> Tensor:
    """The training images (uint8, as ``data.train_x`` holds them, on its device) that BatchNorm's
    statistics are re-estimated on: the subset :func:`stam.dnn.bnstats.bn_subset` of ``data`` (an
    :class:`ImageData`; or the images ``index`` names), and where ``augmented`` and the data set
    is trained on crops and flips (``data.augment``), those images cropped and flipped once, as the
    training sees its images (:func:`augment`, on the CPU with a generator seeded by
    :data:`stam.dnn.catalog.BN_AUGMENT_SEED`: the same images on every device, for every algorithm,
    run and epoch)."""
    if index is None:
        index = bn_subset(len(data.train_x), n_images, data.train_x.device)
    chosen = data.train_x[index]
    if not (augmented and data.augment):
        return chosen
    return augment(chosen.cpu(), torch.Generator().manual_seed(BN_AUGMENT_SEED)).to(data.train_x.device)


# --------------------------------------------------------------------------- CIFAR

def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def _copy_names(layout: CifarLayout) -> str:
    first, *rest = imageread.ARCHIVE_SUFFIXES
    return f"{layout.copy_stem}{first} (or {', '.join(rest)}) or the folder {layout.copy_stem}/"


def _missing_message(name: str, layout: CifarLayout, data_dir: Path, why: str) -> str:
    members = ", ".join((*layout.train_files, layout.test_file, layout.meta_file))
    return (
        f"{layout.title} {why} in {data_dir}: expected {layout.archive} (MD5 {OFFICIAL_MD5[layout.archive]}) or the "
        f"extracted folder {layout.folder}/ with {members}; get it from {SOURCE_URL}{layout.archive} or pass --download; "
        f"or an image collection (train/CLASS/*.jpg|png, test/CLASS/*.jpg|png; {layout.num_classes} classes, 32x32 RGB) "
        f"{_copy_names(layout)}, or --data-dir naming such an archive or folder"
    )


def _read_archive(path: Path, layout: CifarLayout, checksums: dict, name: str) -> dict[str, bytes]:
    blob = path.read_bytes()
    expected = checksums[layout.archive]
    if _md5(blob) != expected:
        raise UsageError(
            f"{path} is corrupt or partial (MD5 {_md5(blob)}, expected {expected}); delete it and fetch "
            f"{SOURCE_URL}{layout.archive} again (or pass --download)"
        )
    files = {}
    wanted = {f"{layout.folder}/{f}" for f in (*layout.train_files, layout.test_file, layout.meta_file)}
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for member in tar.getmembers():
            if member.name in wanted and member.isfile():
                files[member.name] = tar.extractfile(member).read()
    missing = sorted(wanted - files.keys())
    if missing:
        raise UsageError(f"{path} lacks {', '.join(missing)}; it is not the official {layout.archive}")
    return files


def _read_folder(folder: Path, layout: CifarLayout, checksums: dict, name: str) -> dict[str, bytes]:
    files = {}
    for f in (*layout.train_files, layout.test_file, layout.meta_file):
        key = f"{layout.folder}/{f}"
        path = folder / f
        if not path.is_file():
            raise UsageError(_missing_message(name, layout, folder.parent, f"is incomplete ({key} is missing)"))
        data = path.read_bytes()
        expected = checksums.get(key)
        if expected is not None and _md5(data) != expected:
            raise UsageError(f"{path} is corrupt (MD5 {_md5(data)}, expected {expected}); re-extract {layout.archive}")
        files[key] = data
    return files


def _download(url: str, dest: Path) -> None:
    """``url`` into ``dest`` atomically; a failed download (offline, HTTP error, a connection cut mid-file) is one
    line and leaves nothing behind: no partial file, and none of the folders above ``dest`` that it created (a
    ``--data-dir`` that did not exist is not left as an empty folder)."""
    created = [p for p in (dest.parent, *dest.parent.parents) if not p.exists()]  # deepest first
    try:
        with atomic_path(dest) as tmp, urllib.request.urlopen(url, timeout=60) as response:
            with open(tmp, "wb") as out:
                while chunk := response.read(1 << 20):
                    out.write(chunk)
    except BaseException as exc:
        for folder in created:
            with contextlib.suppress(OSError):  # only if still empty
                folder.rmdir()
        if isinstance(exc, (OSError, http.client.HTTPException)):  # no network, HTTP error, a cut connection
            raise UsageError(f"could not download {url}: {exc}") from None
        raise


def _decode_split(blob: bytes, layout: CifarLayout, key: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        obj = safe_unpickle(blob)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as exc:
        raise UsageError(f"{key} is not a CIFAR pickle: {exc}") from None
    if not isinstance(obj, dict) or "data" not in obj or layout.label_key not in obj:
        raise UsageError(f"{key} lacks the 'data' and '{layout.label_key}' entries of a CIFAR pickle")
    x, y = obj["data"], np.asarray(obj[layout.label_key])
    ok = (
        isinstance(x, np.ndarray) and x.dtype == np.uint8 and x.ndim == 2 and x.shape[1] == 3 * 32 * 32
        and y.ndim == 1 and len(y) == len(x) and y.dtype.kind in "iu" and (len(y) == 0 or (y.min() >= 0 and y.max() < layout.num_classes))
    )
    if not ok:
        raise UsageError(f"{key} has the wrong shape or labels: expected uint8 data (N, 3072) and N labels in 0..{layout.num_classes - 1}")
    return x.reshape(-1, 3, 32, 32), y.astype(np.int64)


def _is_file(path: Path, flag: str = "--data-dir") -> bool:
    try:
        return path.is_file()
    except OSError as exc:  # a name too long, a loop of links
        raise UsageError(f"{flag} {str(path)!r} is not a usable path ({exc.strerror or exc})") from None


def _is_dir(path: Path, flag: str = "--data-dir") -> bool:
    try:
        return path.is_dir()
    except OSError as exc:
        raise UsageError(f"{flag} {str(path)!r} is not a usable path ({exc.strerror or exc})") from None


def image_collection(name: str, data_dir: str | Path) -> Path | None:
    """The image collection that :func:`load_cifar` reads for ``name`` from ``data_dir`` when no
    official data is there (module docstring): ``data_dir`` itself if it is a file (an archive);
    else ``STEM.tar.gz``, ``STEM.tgz``, ``STEM.tar``, ``STEM.zip`` or ``STEM/`` in it (the first
    found); else ``data_dir`` if it holds ``train/`` and ``test/``; None if there is none."""
    layout, data_dir = CIFAR_LAYOUTS[name], Path(data_dir)
    if _is_file(data_dir):
        return data_dir
    if not _is_dir(data_dir):
        return None
    found = imagefolder.find(data_dir, layout.copy_stem)
    if found is not None:
        return found
    return data_dir if imagefolder.is_collection_dir(data_dir) else None


def load_image_folder(path: str | Path, name: str, expect: imageread.Expect = imageread.Expect(), device="cpu",
                      cache_dir: str | Path | None = None, augment: bool | None = None) -> ImageData:
    """The image collection at ``path`` (:func:`stam.dnn.imagefolder.read`: decoded once, then from
    the cache) as the data set ``name``; ``expect`` its classes and image shape; ``augment``:
    trained on crops and flips (default: as :data:`stam.datasets.AUGMENTED` declares ``name``)."""
    augment = name in AUGMENTED if augment is None else augment
    c = imagefolder.read(path, expect, cache_dir)
    t = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    source = c.source
    return ImageData(name, t(c.train_x), t(c.train_y), t(c.test_x), t(c.test_y), len(c.classes), augment=augment,
                     manifest={source["file"]: source["sha256"]}, source=source)


def load_cifar(name: str, data_dir: str | Path, download: bool = False, device="cpu", checksums: dict | None = None,
               cache_dir: str | Path | None = None) -> ImageData:
    """CIFAR-10 or CIFAR-100 from ``data_dir``: the official archive, or its extracted folder, or
    else an image collection (module docstring; ``cache_dir``: where its decoded arrays are cached,
    default the toolkit's cache folder, :func:`stam.io.cache_home`).

    ``checksums`` maps ``archive name`` and ``folder/member`` to MD5 hex digests; default
    :data:`OFFICIAL_MD5` (tests pass the checksums of the small fake archives they write)."""
    layout = CIFAR_LAYOUTS[name]
    checksums = OFFICIAL_MD5 if checksums is None else checksums
    data_dir = Path(data_dir)
    if _is_file(data_dir):  # --data-dir names a file: the official archive, or an image archive
        if data_dir.name != layout.archive:
            return load_image_folder(data_dir, name, layout.expect, device, cache_dir)
        data_dir = data_dir.parent
    archive, folder = data_dir / layout.archive, data_dir / layout.folder
    if not _is_file(archive) and not _is_dir(folder):
        copy = None if download else image_collection(name, data_dir)
        if copy is not None:
            return load_image_folder(copy, name, layout.expect, device, cache_dir)
        if not download:
            raise UsageError(_missing_message(name, layout, data_dir, "not found"))
        _download(SOURCE_URL + layout.archive, archive)
    used = "archive" if archive.is_file() else "folder"
    if used == "archive":
        try:
            files = _read_archive(archive, layout, checksums, name)
        except UsageError:  # corrupt, partial or foreign: fetch it again, or use the extracted folder
            if download:
                _download(SOURCE_URL + layout.archive, archive)
                files = _read_archive(archive, layout, checksums, name)
            elif folder.is_dir():
                files, used = _read_folder(folder, layout, checksums, name), "folder"
            else:
                raise
    else:
        files = _read_folder(folder, layout, checksums, name)
    manifest = {k: hashlib.sha256(v).hexdigest() for k, v in sorted(files.items())}
    if used == "archive":
        where = {"file": layout.archive, "sha256": imagecache.sha256_file(archive), "hash_of": "archive"}
    else:  # the SHA-256 of the manifest's lines "member<TAB>sha256"
        lines = "".join(f"{k}\t{v}\n" for k, v in manifest.items())
        where = {"file": f"{layout.folder}/", "sha256": hashlib.sha256(lines.encode()).hexdigest(), "hash_of": "folder manifest"}
    source = {"kind": "official", **where,
              "note": f"the official {layout.title} python-pickle data ({SOURCE_URL}{layout.archive}), MD5-verified"}
    train = [_decode_split(files[f"{layout.folder}/{f}"], layout, f) for f in layout.train_files]
    test_x, test_y = _decode_split(files[f"{layout.folder}/{layout.test_file}"], layout, layout.test_file)
    train_x = np.concatenate([t[0] for t in train])
    train_y = np.concatenate([t[1] for t in train])
    return ImageData(
        name,
        torch.from_numpy(train_x).to(device), torch.from_numpy(train_y).to(device),
        torch.from_numpy(test_x).to(device), torch.from_numpy(test_y).to(device),
        layout.num_classes, augment=name in AUGMENTED, manifest=manifest, source=source,
    )


# --------------------------------------------------------------------------- digits

def _digits_arrays() -> tuple[np.ndarray, np.ndarray, str]:
    """scikit-learn's bundled digits as (images (1797, 8, 8) float, labels, scikit-learn's version):
    read from the file its ``load_digits`` reads (``sklearn/datasets/data/digits.csv.gz``, found
    without importing scikit-learn, whose import costs about a second of every ``stam train``
    start), parsed as ``load_digits`` parses it; through ``load_digits`` itself where that file is
    not where it was (tested to give the same arrays)."""
    import gzip
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec("sklearn")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            with gzip.open(path, "rt", encoding="utf-8") as f:
                data = np.loadtxt(f, delimiter=",")
            if data.ndim == 2 and data.shape[1] == 65:
                return data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(int), importlib.metadata.version("scikit-learn")
    import sklearn
    from sklearn.datasets import load_digits as sk_digits

    bunch = sk_digits()
    return bunch.images, bunch.target, sklearn.__version__


def load_digits(device="cpu") -> ImageData:
    """scikit-learn's bundled 8x8 digits (1797 images, 16 grey levels scaled to 0..255).
    Deterministic split: every fifth image (index % 5 == 0) is a test image (360), the rest train (1437)."""
    raw_images, raw_labels, version = _digits_arrays()
    images = np.rint(raw_images * (255.0 / 16.0)).astype(np.uint8)[:, None]  # (N, 1, 8, 8)
    labels = raw_labels.astype(np.int64)
    test = np.arange(len(labels)) % 5 == 0
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(device)  # noqa: E731
    h = hashlib.sha256(images.tobytes())
    h.update(labels.tobytes())
    source = {"kind": "scikit-learn", "file": "sklearn.datasets.load_digits", "sha256": h.hexdigest(),
              "hash_of": "uint8 images and int64 labels",
              "note": f"scikit-learn {version}'s bundled 8x8 digits (1797 images, 16 grey levels scaled to 0..255)"}
    return ImageData("digits", t(images[~test]), t(labels[~test]), t(images[test]), t(labels[test]), 10, augment="digits" in AUGMENTED,
                     source=source)


@torch.no_grad()
def check_fits(model, name: str, data: ImageData, memory_format=torch.contiguous_format) -> None:
    """One forward pass of two test images in eval mode (no randomness drawn): a model that cannot
    take the data set's images is a one-line :class:`UsageError` (for ``stam train``, ``stam tune``
    and ``stam map`` alike), before anything is written."""
    model.eval()
    try:
        model(data.normalise(data.test_x[:2]).contiguous(memory_format=memory_format))
    except RuntimeError as exc:
        c, h, w = data.image_shape
        raise UsageError(f"--model {name} does not take {data.name}'s {c}x{h}x{w} images ({str(exc).splitlines()[0]}); "
                         "mlp and cnn are made for digits, vgg11, vgg16 and resnet18 for CIFAR") from None
    finally:
        model.train()


def split_validation(data: ImageData, fraction: float, seed: int) -> ImageData:
    """``data`` with a seeded, stratified validation set carved out of its training set: each class
    with n training images gives ``max(1, round(fraction * n))`` of them (at most n) to
    ``val_x, val_y``; the rest stay in ``train_x, train_y`` (both in their original order).  The
    choice depends on ``seed`` alone (a generator of its own), not on the training seed.  The
    normalisation statistics are those of the remaining training images."""
    if not (0 < fraction < 1):
        raise UsageError(f"--val-fraction {fraction}: give a number with 0 < F < 1 (or --no-val)")
    gen = torch.Generator().manual_seed(int(seed))
    y = data.train_y.cpu()
    val = torch.zeros(len(y), dtype=torch.bool)
    for c in range(data.num_classes):
        idx = torch.nonzero(y == c).flatten()
        if len(idx) == 0:
            continue
        k = min(len(idx), max(1, round(fraction * len(idx))))
        val[idx[torch.randperm(len(idx), generator=gen)[:k]]] = True
    kept = int((~val).sum())
    if kept < 2:  # a training step needs 2 images (BatchNorm)
        raise UsageError(f"--val-fraction {fraction}: leaves {kept} training image(s) of {len(y)}; give a fraction that "
                         f"leaves training images (default {VAL_FRACTION:g})")
    val = val.to(data.train_x.device)
    return ImageData(data.name, data.train_x[~val], data.train_y[~val], data.test_x, data.test_y, data.num_classes,
                     data.augment, manifest=data.manifest, val_x=data.train_x[val], val_y=data.train_y[val], source=data.source)


def load(name: str, data_dir: str | Path = "data", download: bool = False, device="cpu", checksums: dict | None = None,
         cache_dir: str | Path | None = None) -> ImageData:
    """The data set ``name`` (one of :data:`DATASET_NAMES`) on ``device``; CIFAR from ``data_dir``
    as :func:`load_cifar` finds it (an image collection's decoded arrays cached in ``cache_dir``)."""
    if name == "digits":
        return load_digits(device)
    if name in CIFAR_LAYOUTS:
        return load_cifar(name, data_dir, download, device, checksums, cache_dir)
    raise UsageError(f"unknown dataset {name!r}; choose one of {', '.join(DATASET_NAMES)}")


__all__ = ["ImageData", "load", "split_validation", "load_cifar", "load_digits", "load_image_folder", "image_collection",
           "CIFAR10_CLASSES", "CIFAR100_CLASSES", "augment", "bn_images", "RestrictedUnpickler", "safe_unpickle", "OFFICIAL_MD5", "CIFAR_LAYOUTS"]
