"""Image collections as data sets (stam.dnn.imagefolder, stam.dnn.data.load_image_folder):
the real JPEG copy of CIFAR-10 from ../shared/data (decoded once per test session, then from the
cache), small collections written here in every container (tar, tar.gz, tgz, zip, folder) and
format (JPEG, PNG), the cache (hit without decoding, damaged entries rebuilt), the --data-dir rule,
provenance through ``stam train`` and ``stam table``, and hostile or broken input: one line,
exit 2, nothing written outside the cache folder."""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from stam.cli import main
from stam.dnn import data as D
from stam.dnn import imagefolder as I
from stam.errors import UsageError
from stam.dnn import imagecache
from stam.dnn import imageread
from stam.dnn.imageread import safe_parts
from stam.dnn.params import TrainConfig
from test_dnn_data import cifar_server  # noqa: F401  (a fixture: a local server of a fake official archive)

REAL = Path(__file__).resolve().parents[2] / "shared/data/cifar10-jpeg.tar.gz"
C10 = D.CIFAR10_CLASSES
CIFAR10 = D.CIFAR_LAYOUTS["cifar10"].expect


# --------------------------------------------------------------------------- writing small collections

def image_bytes(arr: np.ndarray, fmt: str, **kw) -> bytes:
    """``arr`` (H, W, C) or (H, W) uint8 encoded as ``fmt``."""
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt, **kw)
    return buf.getvalue()


def smooth(label: int, index: int, size: int = 32, channels: int = 3) -> np.ndarray:
    """A smooth image (JPEG keeps it close): a gradient tinted by the class."""
    yy, xx = np.mgrid[0:size, 0:size]
    base = [(xx * 4 + label * 20) % 256, (yy * 4 + index * 30) % 256, np.full_like(xx, (label * 25 + 40) % 256)]
    return np.stack(base[:channels], axis=-1).astype(np.uint8).squeeze()


def collection(classes=C10, n_train=2, n_test=1, fmt="PNG", root="cifar10-jpeg", size=32, channels=3):
    """(members {name: bytes} in the layout [ROOT/]SPLIT/CLASS/FILE, expected {split: (x, y)})."""
    ext = {"PNG": "png", "JPEG": "jpg"}[fmt]
    members, expected = {}, {}
    for split, n in (("train", n_train), ("test", n_test)):
        xs, ys = [], []
        for label, cls in enumerate(sorted(classes)):
            for i in range(n):
                arr = smooth(label, i + (0 if split == "train" else 7), size, channels)
                name = "/".join(p for p in (root, split, cls, f"{i:04d}.{ext}") if p)
                members[name] = image_bytes(arr, fmt, **({"quality": 95} if fmt == "JPEG" else {}))
                xs.append(arr.reshape(size, size, channels).transpose(2, 0, 1))
                ys.append(label)
        expected[split] = (np.stack(xs), np.array(ys, dtype=np.int64))
    return members, expected


def write(path: Path, members: dict, kind: str, extra=()) -> Path:
    """Write ``members`` as ``kind`` (tar, tar.gz, zip, folder) at ``path``; ``extra``: raw tar
    (TarInfo, bytes or None) or zip (ZipInfo, bytes) entries, or folder callables f(root)."""
    if kind in ("tar", "tar.gz"):
        with tarfile.open(path, "w:gz" if kind == "tar.gz" else "w") as tar:
            dirs = sorted({n.rsplit("/", 1)[0] for n in members})
            for d in dirs:
                info = tarfile.TarInfo(d)
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            for name, data in sorted(members.items()):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            for info, data in extra:
                tar.addfile(info, io.BytesIO(data) if data is not None else None)
    elif kind == "zip":
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in sorted(members.items()):
                zf.writestr(name, data)
            for info, data in extra:
                zf.writestr(info, data)
    else:
        path.mkdir()
        for name, data in members.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_bytes(data)
        for f in extra:
            f(path)
    return path


SUFFIX = {"tar": ".tar", "tar.gz": ".tar.gz", "tgz": ".tgz", "zip": ".zip", "folder": ""}


def small(tmp_path: Path, kind="tar.gz", fmt="PNG", stem="cifar10-jpeg", **kw) -> tuple[Path, dict]:
    members, expected = collection(fmt=fmt, **kw)
    path = write(tmp_path / f"{stem}{SUFFIX[kind]}", members, "tar.gz" if kind == "tgz" else kind)
    return path, expected


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache folder of this test (also $STAM_CACHE_DIR, for the CLI)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("STAM_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def decodes(monkeypatch):
    """Counts the calls of the decoder (one per split of a collection that is decoded)."""
    calls = []
    real = I._decode_all

    def counting(*args, **kw):
        calls.append(args[0])
        return real(*args, **kw)

    monkeypatch.setattr(I, "_decode_all", counting)
    return calls


# --------------------------------------------------------------------------- the real JPEG copy of CIFAR-10

@pytest.fixture(scope="session")
def real_cifar(tmp_path_factory):
    """The JPEG copy decoded once per session: the cache folder is shared by the xdist workers (a
    second worker waits on the loader's lock, then reads the cache)."""
    if not REAL.is_file():
        print(f"skipping: the JPEG copy of CIFAR-10 is not at {REAL}")
        pytest.skip(f"the JPEG copy of CIFAR-10 is not at {REAL}")
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / "imagefolder-cache"
    return folder, I.read(REAL, CIFAR10, cache_dir=folder)


def test_real_jpeg_copy_counts_labels_shape_and_means(real_cifar):
    _, c = real_cifar
    assert c.classes == C10
    assert c.train_x.shape == (50_000, 3, 32, 32) and c.test_x.shape == (10_000, 3, 32, 32)
    assert c.train_x.dtype == np.uint8 and c.train_y.dtype == np.int64 and c.test_y.dtype == np.int64
    assert np.bincount(c.train_y).tolist() == [5000] * 10 and np.bincount(c.test_y).tolist() == [1000] * 10
    assert np.all(np.diff(c.train_y) >= 0) and np.all(np.diff(c.test_y) >= 0)  # by label, then file name
    means = c.train_x.transpose(1, 0, 2, 3).reshape(3, -1).mean(axis=1) / 255
    assert means == pytest.approx([0.4913, 0.4821, 0.4465], abs=2e-4)
    s = c.source
    assert s["sha256"] == I.CIFAR10_JPEG_SHA256 and s["hash_of"] == "archive" and s["file"] == "cifar10-jpeg.tar.gz"
    assert s["kind"] == "jpeg-copy" and s["jpeg_quality"] == 75 and s["chroma_subsampling"] == "4:2:0"
    assert s["note"] == "JPEG copy of CIFAR-10 (quality 75, 4:2:0 chroma subsampling), not the official pixels"


def test_real_jpeg_copy_second_load_is_from_the_cache(real_cifar, decodes):
    folder, first = real_cifar
    again = I.read(REAL, CIFAR10, cache_dir=folder)
    assert again.cached and decodes == []
    assert np.array_equal(again.train_x, first.train_x) and np.array_equal(again.test_y, first.test_y)
    assert again.source == first.source


def test_real_jpeg_copy_through_data_load(real_cifar, decodes):
    folder, first = real_cifar
    d = D.load("cifar10", REAL, cache_dir=folder)  # --data-dir naming the archive
    assert decodes == [] and d.name == "cifar10" and d.num_classes == 10 and d.augment
    assert d.image_shape == (3, 32, 32) and len(d.train_x) == 50_000 and d.source["kind"] == "jpeg-copy"
    assert d.manifest == {"cifar10-jpeg.tar.gz": I.CIFAR10_JPEG_SHA256}
    assert d.mean.tolist() == pytest.approx([0.4913, 0.4821, 0.4465], abs=2e-4)


# --------------------------------------------------------------------------- small collections: the happy path

@pytest.mark.parametrize("kind", ["tar", "tar.gz", "tgz", "zip", "folder"])
@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_small_collection_in_every_container(tmp_path, cache, kind, fmt):
    path, expected = small(tmp_path, kind, fmt)
    c = I.read(path, CIFAR10, cache_dir=cache)
    assert c.classes == C10 and not c.cached
    for split in ("train", "test"):
        x, y = getattr(c, f"{split}_x"), getattr(c, f"{split}_y")
        assert x.dtype == np.uint8 and x.shape == expected[split][0].shape and np.array_equal(y, expected[split][1])
        if fmt == "PNG":  # lossless: the very pixels
            assert np.array_equal(x, expected[split][0])
        else:
            assert np.abs(x.astype(int) - expected[split][0]).mean() < 4
    assert c.source["kind"] == ("jpeg-copy" if fmt == "JPEG" else "image-folder") and c.source["formats"] == [fmt]
    assert c.source["hash_of"] == ("folder manifest" if kind == "folder" else "archive")
    if kind != "folder":
        assert c.source["sha256"] == imagecache.sha256_file(path)


def test_without_a_top_level_folder_and_in_greyscale(tmp_path, cache):
    members, expected = collection(classes=("b", "a", "c"), root="", size=8, channels=1)
    path = write(tmp_path / "grey.zip", members, "zip")
    c = I.read(path, imageread.Expect(), cache_dir=cache)
    assert c.classes == ("a", "b", "c") and c.train_x.shape == (6, 1, 8, 8)
    assert np.array_equal(c.train_x, expected["train"][0]) and c.source["note"] == "PNG images"


def test_mixed_formats_and_a_cifar100_class_named_train(tmp_path, cache):
    classes = ("train", "apple")  # 'train' is a CIFAR-100 class: ROOT/train/train/... is still read right
    members, _ = collection(classes=classes, root="r")
    jpeg, _ = collection(classes=classes, root="r", fmt="JPEG")
    members.update({k.replace("0000.jpg", "extra.jpg"): v for k, v in jpeg.items() if k.endswith("0000.jpg")})
    c = I.read(write(tmp_path / "c.tar", members, "tar"), imageread.Expect(), cache_dir=cache)
    assert c.classes == ("apple", "train") and len(c.train_x) == 6 and c.source["formats"] == ["JPEG", "PNG"]
    assert c.source["kind"] == "image-folder" and c.source["note"].startswith("JPEG and PNG images")


def test_cifar100_names_are_the_official_meta_order():
    assert len(D.CIFAR100_CLASSES) == 100 == len(set(D.CIFAR100_CLASSES))
    assert list(D.CIFAR100_CLASSES) == sorted(D.CIFAR100_CLASSES)  # the folder order is the label order
    assert D.CIFAR100_CLASSES[39] == "keyboard" and D.CIFAR100_CLASSES[90] == "train"
    assert list(C10) == sorted(C10)


# --------------------------------------------------------------------------- the cache

def test_second_load_is_from_the_cache_without_decoding(tmp_path, cache, decodes):
    path, _ = small(tmp_path)
    first = I.read(path, CIFAR10, cache_dir=cache)
    assert len(decodes) == 2  # train and test
    again = I.read(path, CIFAR10, cache_dir=cache)
    assert again.cached and len(decodes) == 2
    for k in I.ARRAYS:
        assert np.array_equal(getattr(again, k), getattr(first, k))
    entry = cache / "imagefolder" / first.source["sha256"]
    assert sorted(p.name for p in entry.iterdir()) == ["meta.json", "test_x.npy", "test_y.npy", "train_x.npy", "train_y.npy"]
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["source_sha256"] == first.source["sha256"] and meta["classes"] == list(C10)
    assert meta["arrays"]["train_x"]["shape"] == [20, 3, 32, 32] and meta["arrays"]["train_y"]["dtype"] == "int64"


def _flip_last_byte(p: Path):
    raw = bytearray(p.read_bytes())
    raw[-1] ^= 0xFF
    p.write_bytes(bytes(raw))


def _edit_meta(change):
    def edit(entry: Path):
        meta = json.loads((entry / "meta.json").read_text())
        change(meta)
        (entry / "meta.json").write_text(json.dumps(meta))
    return edit


DAMAGE = {
    "truncated array": lambda e: (e / "train_x.npy").write_bytes((e / "train_x.npy").read_bytes()[:500]),
    "flipped pixel": lambda e: _flip_last_byte(e / "train_x.npy"),
    "missing array": lambda e: (e / "test_y.npy").unlink(),
    "pickled array": lambda e: np.save(e / "test_y.npy", np.array([{"x": 1}], dtype=object), allow_pickle=True),
    "array of another dtype": lambda e: np.save(e / "train_y.npy", np.zeros(20, np.int32)),
    "sidecar not JSON": lambda e: (e / "meta.json").write_text("{not json"),
    "sidecar of another source": _edit_meta(lambda m: m.update(source_sha256="0" * 64)),
    "sidecar with other classes": _edit_meta(lambda m: m.update(classes=["x"] * 10)),
    "sidecar with another shape": _edit_meta(lambda m: m["arrays"]["train_x"].update(shape=[20, 3, 16, 64])),
    "sidecar of another format": _edit_meta(lambda m: m.update(format=99)),
    "sidecar not an object": lambda e: (e / "meta.json").write_text("[1, 2]"),
    # issue 40: entries that are not what the toolkit wrote, whatever their name and bytes say
    "a FIFO in place of an array": lambda e: ((e / "train_x.npy").unlink(), os.mkfifo(e / "train_x.npy")),
    "a FIFO in place of the sidecar": lambda e: ((e / "meta.json").unlink(), os.mkfifo(e / "meta.json")),
    "a folder in place of an array": lambda e: ((e / "test_y.npy").unlink(), (e / "test_y.npy").mkdir()),
    "a link in place of an array": lambda e: ((e / "train_y.npy").rename(e.parent / "elsewhere.npy"),
                                              (e / "train_y.npy").symlink_to(e.parent / "elsewhere.npy")),
    "a Fortran-order array of the same values (the same SHA-256)":
        lambda e: np.save(e / "train_x.npy", np.asfortranarray(np.load(e / "train_x.npy"))),
    "a header and a sidecar claiming 10^12 images": lambda e: (_claim_images(e / "train_x.npy", 10**12),
                                                              _edit_meta(lambda m: m["arrays"]["train_x"].update(
                                                                  shape=[10**12, 3, 32, 32]))(e)),
}


def _claim_images(p: Path, n: int):
    """Rewrite the header of the ``.npy`` file ``p`` to claim ``n`` images (the data stays)."""
    with open(p, "rb") as f:
        version = np.lib.format.read_magic(f)
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f) if version == (1, 0) else \
            np.lib.format.read_array_header_2_0(f)
        data = f.read()
    buf = io.BytesIO()
    np.lib.format.write_array_header_2_0(buf, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": fortran,
                                               "shape": (n, *shape[1:])})
    p.write_bytes(buf.getvalue() + data)


@pytest.fixture
def no_hang():
    """Fails a test that blocks (on a FIFO) instead of hanging the test run."""
    import signal

    def hung(*_):  # pytest.fail: not an OSError, which the loader would take for a cache miss
        pytest.fail("blocked for 30 s (a FIFO opened for reading or writing?)")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_or_foreign_cache_entry_is_rebuilt_never_trusted(tmp_path, cache, decodes, damage, no_hang):
    path, _ = small(tmp_path, "zip")
    first = I.read(path, CIFAR10, cache_dir=cache)
    entry = cache / "imagefolder" / first.source["sha256"]
    DAMAGE[damage](entry)
    again = I.read(path, CIFAR10, cache_dir=cache)
    assert not again.cached and len(decodes) == 4  # decoded again
    for k in I.ARRAYS:
        assert np.array_equal(getattr(again, k), getattr(first, k))
    assert I.read(path, CIFAR10, cache_dir=cache).cached and len(decodes) == 4  # and the rebuilt entry holds


def test_a_fifo_or_a_link_as_the_entrys_lock_never_blocks(tmp_path, cache, decodes, no_hang):
    path, expected = small(tmp_path)
    lock = cache / "imagefolder" / f"{imagecache.sha256_file(path)}.lock"
    lock.parent.mkdir(parents=True)
    os.mkfifo(lock)
    assert np.array_equal(I.read(path, CIFAR10, cache_dir=cache).train_x, expected["train"][0])
    assert stat.S_ISREG(lock.lstat().st_mode)  # replaced by the lock file the toolkit makes
    lock.unlink()
    lock.symlink_to(tmp_path / "elsewhere")
    assert I.read(path, CIFAR10, cache_dir=cache).cached and not (tmp_path / "elsewhere").exists()
    assert len(decodes) == 2


def test_a_killed_runs_temporaries_in_an_entry_are_removed_by_the_next_run(tmp_path, cache):
    """What a run killed while writing the entry left (``.train_x.npy.*.npy``, up to 150 MB for
    CIFAR) is removed by the next load, which holds the entry's lock (so no other process is
    writing them); without the lock only temporaries older than STALE_S go."""
    path, _ = small(tmp_path)
    first = I.read(path, CIFAR10, cache_dir=cache)
    entry = cache / "imagefolder" / first.source["sha256"]
    left = [entry / ".train_x.npy.k1ll3d.npy", entry / ".meta.json.k1ll3d.tmp"]
    for p in left:
        p.write_bytes(b"\x93NUMPY partial")
    assert I.read(path, CIFAR10, cache_dir=cache).cached
    assert not any(p.exists() for p in left)
    for p in left:
        p.write_bytes(b"partial")
    os.utime(left[0], (1, 1))
    I._remove_leftovers(entry, locked=False)
    assert not left[0].exists() and left[1].exists()  # a young one may be another process's


def test_a_cache_entry_not_meeting_the_expectation_is_not_used(tmp_path, cache, decodes):
    members, _ = collection(classes=("a", "b"), root="", size=16)
    path = write(tmp_path / "x.tar", members, "tar")
    I.read(path, imageread.Expect(), cache_dir=cache)
    with pytest.raises(UsageError, match="is 16x16 pixels; expected 32x32"):  # decoded again, refused by name
        I.read(path, imageread.Expect(shape=(3, 32, 32)), cache_dir=cache)
    assert len(decodes) == 3  # train and test, then train again (refused)


def test_a_folder_is_keyed_by_its_manifest(tmp_path, cache, decodes):
    path, _ = small(tmp_path, "folder")
    first = I.read(path, CIFAR10, cache_dir=cache)
    assert I.read(path, CIFAR10, cache_dir=cache).cached and len(decodes) == 2
    victim = path / "cifar10-jpeg" / "train" / "cat" / "0001.png"
    victim.write_bytes(image_bytes(np.zeros((32, 32, 3), np.uint8), "PNG"))
    changed = I.read(path, CIFAR10, cache_dir=cache)
    assert not changed.cached and changed.source["sha256"] != first.source["sha256"] and len(decodes) == 4
    assert changed.train_x[3 * 2 + 1].max() == 0  # cat is label 3, its second image


def test_with_the_cache_off_nothing_is_kept_and_every_load_decodes(tmp_path, monkeypatch, decodes):
    """``STAM_CACHE_DIR=off`` (the toolkit's rule, :func:`stam.io.cache_home`): no cache folder anywhere,
    not even one called ``off`` in the working directory."""
    path, expected = small(tmp_path)
    monkeypatch.setenv("STAM_CACHE_DIR", "off")
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    first, again = I.read(path, CIFAR10), I.read(path, CIFAR10)
    assert not first.cached and not again.cached and len(decodes) == 4
    assert np.array_equal(again.train_y, expected["train"][1]) and sorted(p.name for p in tmp_path.iterdir()) == before


def test_an_unwritable_cache_warns_and_still_loads(tmp_path):
    path, expected = small(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.warns(RuntimeWarning, match="could not write the image cache"):
        c = I.read(path, CIFAR10, cache_dir=blocker / "cache")
    assert np.array_equal(c.train_y, expected["train"][1])


def test_large_collections_decode_in_worker_processes_in_order(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(I, "PARALLEL_MIN", 8)
    path, expected = small(tmp_path, "tar", n_train=3, n_test=1)
    serial = I.read(path, CIFAR10, cache_dir=tmp_path / "c1", workers=1)
    parallel = I.read(path, CIFAR10, cache_dir=tmp_path / "c2", workers=2)
    assert np.array_equal(parallel.train_x, serial.train_x) and np.array_equal(parallel.train_x, expected["train"][0])
    started = []
    monkeypatch.setattr(I, "_start_worker", lambda share, spec: started.append(len(share)) or None)  # cannot start
    fallback = I.read(path, CIFAR10, cache_dir=tmp_path / "c3", workers=2)
    assert started and np.array_equal(fallback.train_x, serial.train_x)


# --------------------------------------------------------------------------- the --data-dir rule

def test_data_dir_rule_official_wins_then_the_named_copy_then_the_folder_itself(tmp_path, cache):
    from test_dnn_data import write_fake_cifar

    d = tmp_path / "data"
    d.mkdir()
    small(d, "zip")  # data/cifar10-jpeg.zip
    got = D.load("cifar10", d)
    assert got.source["kind"] == "image-folder" and got.source["file"] == "cifar10-jpeg.zip" and len(got.train_x) == 20
    sums = write_fake_cifar(d)  # the official archive beside it wins
    official = D.load("cifar10", d, checksums=sums)
    assert official.source["kind"] == "official" and official.source["file"] == "cifar-10-python.tar.gz"
    assert official.source["sha256"] == imagecache.sha256_file(d / "cifar-10-python.tar.gz")
    assert D.load("cifar10", d / "cifar-10-python.tar.gz", checksums=sums).source["kind"] == "official"  # named directly
    folder, _ = small(tmp_path, "folder", stem="plain", root="")
    assert D.load("cifar10", folder).source["file"] == "plain/"  # a folder holding train/ and test/
    named = tmp_path / "named"
    named.mkdir()
    small(named, "folder")  # named/cifar10-jpeg/cifar10-jpeg/train/...: a folder with a single top-level folder
    assert D.load("cifar10", named).source["file"] == "cifar10-jpeg/"


def test_data_dir_rule_for_cifar100_and_the_expected_message(tmp_path, cache):
    d = tmp_path / "d"
    d.mkdir()
    members, _ = collection(classes=D.CIFAR100_CLASSES, n_train=1, n_test=1, root="cifar100-jpeg")
    write(d / "cifar100-jpeg.tar", members, "tar")
    got = D.load("cifar100", d)
    assert got.num_classes == 100 and got.train_y.tolist() == list(range(100))
    with pytest.raises(UsageError) as e:
        D.load("cifar10", d)  # a CIFAR-100 copy is not CIFAR-10
    msg = str(e.value)
    assert "\n" not in msg
    for part in ("cifar-10-python.tar.gz", "cifar-10-batches-py", "--download", "cifar10-jpeg.tar.gz (or .tgz, .tar, .zip)",
                 "the folder cifar10-jpeg/", "10 classes, 32x32 RGB"):
        assert part in msg


def test_download_fetches_the_official_archive_rather_than_read_a_copy(cifar_server, cache):
    data_dir, sums, requests = cifar_server
    small(data_dir, "zip")
    assert D.load("cifar10", data_dir, checksums=sums).source["kind"] == "image-folder" and requests == []
    d = D.load("cifar10", data_dir, download=True, checksums=sums)
    assert d.source["kind"] == "official" and requests == ["/cifar-10-python.tar.gz"]


def test_a_copy_with_other_classes_is_refused_for_cifar(tmp_path, cache):
    members, _ = collection(classes=("cat", "dog"))
    path = write(tmp_path / "two.tar.gz", members, "tar.gz")
    with pytest.raises(UsageError, match=r"class folders do not match: missing 'airplane', .*CIFAR-10 needs exactly "
                                         r"airplane, automobile, .*truck \(labels 0..9 in that order\)"):
        D.load("cifar10", path)
    assert I.read(path, imageread.Expect(), cache_dir=cache).classes == ("cat", "dog")  # a collection in its own right


# --------------------------------------------------------------------------- stam train and stam table

def _rc(argv):
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_stam_train_on_a_small_jpeg_copy_records_the_source_and_the_table_marks_it(tmp_path, cache, capsys):
    path, _ = small(tmp_path, "tar.gz", "JPEG", n_train=3, n_test=1)
    out = tmp_path / "runs" / "jpeg"
    argv = ["train", "--dataset", "cifar10", "--data-dir", str(path), "--model", "cnn", "--epochs", "1", "--algo", "bc",
            "--batch-size", "8", "--no-progress", "--quiet", "--out", str(out)]
    assert _rc(argv) == 0, capsys.readouterr().err
    config = json.loads((out / "config.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    assert config["data_source"] == summary["data_source"]
    source = summary["data_source"]
    assert source["kind"] == "jpeg-copy" and source["sha256"] == imagecache.sha256_file(path) and source["file"] == "cifar10-jpeg.tar.gz"
    assert source["note"] == "JPEG copy of CIFAR-10 (quality 95, 4:2:0 chroma subsampling), not the official pixels"
    assert config["data_manifest_sha256"] == {"cifar10-jpeg.tar.gz": source["sha256"]} and config["train_size"] == 20
    capsys.readouterr()
    assert _rc(["table", str(tmp_path / "runs")]) == 0
    text = capsys.readouterr().out
    assert "CIFAR-10 (JPEG copy, not the official pixels) (Table cifar-res; the paper's numbers are on the official images)" in text
    from stam.figures.results import load_results

    assert "on cifar10 (JPEG copy)" in load_results([out])["train-run"][0].name


def test_table_keeps_runs_on_a_copy_apart_from_runs_on_the_official_images():
    from stam.dnn.table import build

    def run(label, kind, acc):
        return {"kind": "train-run", "model": "vgg11", "dataset": "cifar10", "algo": "bc", "label": label, "epochs": 1000,
                "seconds": 1.0, "selected_test_acc_binary": acc, "data_source": {"kind": kind}}

    title, header, rows = build([run("BC", "official", 80.0), run("BC", "jpeg-copy", 70.0)], "cifar10")
    assert "BC" in header and "BC (JPEG copy)" in header and "columns marked (JPEG copy)" in title
    row = rows[0]
    assert row[header.index("BC")].startswith("80.00") and row[header.index("BC (JPEG copy)")].startswith("70.00")
    title, header, _ = build([run("BC", "official", 80.0)], "cifar10")
    assert "JPEG" not in title and not any("JPEG" in h for h in header)


@pytest.mark.parametrize("bad, field", [("x", "data_source"), ({"file": "a"}, "data_source.kind"),
                                         ({"kind": 1}, "data_source.kind"), ({"kind": "jpeg-copy", "formats": "JPEG"}, "data_source.formats")])
def test_result_schemas_check_the_data_source(tmp_path, bad, field):
    from stam.dnn.epochs import RUN_CONFIG, RUN_SUMMARY

    good = {"kind": "jpeg-copy", "sha256": "0" * 64, "hash_of": "archive", "file": "c.tar.gz", "formats": ["JPEG"],
            "note": "JPEG copy", "jpeg_quality": 75, "chroma_subsampling": "4:2:0"}
    for name, rt in (("summary.json", RUN_SUMMARY), ("config.json", RUN_CONFIG)):
        rt.validate({"model": "cnn", "data_source": good}, tmp_path / name)
        rt.validate({"model": "cnn", "data_source": None}, tmp_path / name)
        with pytest.raises(UsageError, match=f"field {field} ") as e:
            rt.validate({"model": "cnn", "data_source": bad}, tmp_path / name)
        assert "\n" not in str(e.value)


def test_digits_and_official_sources(tmp_path):
    d = D.load_digits()
    assert d.source["kind"] == "scikit-learn" and len(d.source["sha256"]) == 64
    assert D.split_validation(d, 0.1, 0).source == d.source


def test_resume_refuses_other_data(tmp_path, cache):
    from stam.dnn import train as T

    path, _ = small(tmp_path, "tar", n_train=2)
    cfg = TrainConfig(model="cnn", dataset="cifar10", algo="bc", epochs=1, batch_size=8, data_dir=str(path),
                        out=str(tmp_path / "run"), progress=False, echo=False)
    T.train(cfg)
    other, _ = small(tmp_path, "zip", n_train=2)
    from dataclasses import replace

    with pytest.raises(UsageError, match=r"the data was image-folder \(SHA-256 [0-9a-f]{12}\.\.\.\), now image-folder"):
        T.train(replace(cfg, data_dir=str(other), epochs=2, resume=True))


def test_a_checkpoint_from_before_data_source_still_resumes(tmp_path, cache):
    import torch

    from stam.dnn import checkpoint
    from stam.dnn import train as T

    cfg = TrainConfig(model="mlp", dataset="digits", algo="bc", epochs=1, batch_size=256, out=str(tmp_path / "run"),
                        progress=False, echo=False)
    T.train(cfg)
    path = tmp_path / "run" / "checkpoint.pt"
    ckpt = torch.load(path, weights_only=True)
    del ckpt["config"]["data_source"]  # as a checkpoint written before data_source existed
    torch.save(checkpoint.seal({k: ckpt[k] for k in checkpoint.HASHED}), path)
    from dataclasses import replace

    summary = T.train(replace(cfg, epochs=2, resume=True)).summary
    assert summary["epochs"] == 2 and summary["data_source"]["kind"] == "scikit-learn"
    assert torch.load(path, weights_only=True)["config"]["data_source"]["kind"] == "scikit-learn"


def test_a_cifar_run_from_before_the_augmented_rule_resumes_under_its_own_rule(tmp_path, cache):
    """A checkpoint written before bn_augment (evaluated on unaugmented BatchNorm images) resumes with
    --bn-unaugmented; under the new default it is refused in one line that says so; the run records
    and says its rule."""
    import torch

    from stam.dnn import checkpoint
    from stam.dnn import train as T

    path, _ = small(tmp_path, "tar", n_train=2)
    cfg = TrainConfig(model="cnn", dataset="cifar10", algo="bc", epochs=1, batch_size=8, data_dir=str(path),
                        out=str(tmp_path / "run"), progress=False, echo=False, bn_augment=False)
    assert T.train(cfg).summary["bn_augment"] is False
    ck = tmp_path / "run" / "checkpoint.pt"
    ckpt = torch.load(ck, weights_only=True)
    del ckpt["config"]["bn_augment"]  # as a checkpoint written before the rule existed
    torch.save(checkpoint.seal({k: ckpt[k] for k in checkpoint.HASHED}), ck)
    from dataclasses import replace

    with pytest.raises(UsageError, match=r"bn_augment was False, now True \(a run evaluated on unaugmented .* pass --bn-unaugmented\)"):
        T.train(replace(cfg, bn_augment=True, epochs=2, resume=True))
    summary = T.train(replace(cfg, epochs=2, resume=True)).summary
    assert summary["epochs"] == 2 and summary["bn_augment"] is False
    fresh = T.train(replace(cfg, bn_augment=True, out=str(tmp_path / "new"))).summary
    assert fresh["bn_augment"] is True
    assert "cropped and flipped once, as the training sees them" in T.closing_text(fresh, tmp_path / "new")
    assert ", unaugmented" in T.closing_text(summary, tmp_path / "run")


# --------------------------------------------------------------------------- hostile and broken input

def _tar_info(name, type_=tarfile.REGTYPE, size=0, linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = type_, size, linkname
    return info


def _png(size=32, mode="RGB"):
    if mode == "RGB":
        return image_bytes(np.zeros((size, size, 3), np.uint8), "PNG")
    return image_bytes(np.zeros((size, size, 4 if mode == "RGBA" else 1), np.uint8).squeeze(), "PNG")


def _huge_png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` (its data is a few bytes)."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))


def _members(**changes):
    """The small CIFAR-10 collection's members with some replaced (value None: removed)."""
    members, _ = collection(n_train=1, n_test=1)
    for name, data in changes.items():
        if data is None:
            members = {k: v for k, v in members.items() if not k.startswith(name)}
        else:
            members[name] = data
    return members


def _case_tar(members=None, extra=(), kind="tar.gz"):
    def make(tmp: Path) -> Path:
        return write(tmp / f"cifar10-jpeg{SUFFIX[kind]}", _members() if members is None else members, kind, extra)
    return make


def _case_file(name: str, data: bytes):
    def make(tmp: Path) -> Path:
        (tmp / name).write_bytes(data)
        return tmp / name
    return make


def _case_cut(kind: str, keep: float):
    def make(tmp: Path) -> Path:
        path = write(tmp / f"cifar10-jpeg{SUFFIX[kind]}", _members(), kind)
        raw = path.read_bytes()
        path.write_bytes(raw[: int(len(raw) * keep) + 100])
        return path
    return make


def _case_folder(change):
    def make(tmp: Path) -> Path:
        path = write(tmp / "cifar10-jpeg", _members(), "folder")
        change(path / "cifar10-jpeg")
        return path
    return make


def _zip_symlink():
    info = zipfile.ZipInfo("cifar10-jpeg/train/cat/link.png")
    info.create_system, info.external_attr = 3, (stat.S_IFLNK | 0o777) << 16
    return info


BAD_PNG_TRAIN = "cifar10-jpeg/train/cat/bad.png"
HOSTILE = {
    # names
    "dotdot in tar": (_case_tar(extra=[(_tar_info("cifar10-jpeg/../../escape.png", size=len(_png())), _png())]), "leaves the collection's folder"),
    "absolute path in tar": (_case_tar(extra=[(_tar_info("/tmp/escape.png", size=len(_png())), _png())]), "has an absolute path"),
    "dotdot in zip": (_case_tar(extra=[(zipfile.ZipInfo("../escape.png"), _png())], kind="zip"), "leaves the collection's folder"),
    "absolute path in zip": (_case_tar(extra=[(zipfile.ZipInfo("/escape.png"), _png())], kind="zip"), "has an absolute path"),
    "backslash in zip": (_case_tar(extra=[(zipfile.ZipInfo("cifar10-jpeg\\..\\escape.png"), _png())], kind="zip"), "backslash"),
    "newline in name": (_case_tar(extra=[(_tar_info("cifar10-jpeg/train/cat/a\nb.png", size=len(_png())), _png())]), "control character"),
    # member types
    "symlink in tar": (_case_tar(extra=[(_tar_info("cifar10-jpeg/train/cat/x.png", tarfile.SYMTYPE, linkname="/etc/passwd"), None)]), "is a symbolic link"),
    "hardlink in tar": (_case_tar(extra=[(_tar_info("cifar10-jpeg/train/cat/x.png", tarfile.LNKTYPE, linkname="cifar10-jpeg/train/cat/0000.png"), None)]), "is a hard link"),
    "device in tar": (_case_tar(extra=[(_tar_info("cifar10-jpeg/train/cat/x.png", tarfile.CHRTYPE), None)]), "is a device"),
    "fifo in tar": (_case_tar(extra=[(_tar_info("cifar10-jpeg/train/cat/x.png", tarfile.FIFOTYPE), None)]), "is a FIFO"),
    "symlink in zip": (_case_tar(extra=[(_zip_symlink(), b"/etc/passwd")], kind="zip"), "is a symbolic link"),
    "symlink in folder": (_case_folder(lambda r: os.symlink("/etc/passwd", r / "train" / "cat" / "x.png")), "is a symbolic link"),
    "fifo in folder": (_case_folder(lambda r: os.mkfifo(r / "train" / "cat" / "x.png")), "not a folder or a regular file"),
    "duplicate member": (_case_tar(extra=[(_tar_info("cifar10-jpeg/train/cat/0000.png", size=len(_png())), _png())], kind="tar"), "appears twice"),
    # sizes
    "member far too large": (_case_tar(extra=[(_tar_info(BAD_PNG_TRAIN, size=300_000), b"\0" * 300_000)]), "more than the 114688 an image"),
    "pixel bomb (header)": (_case_tar(_members(**{BAD_PNG_TRAIN: _huge_png_header(3000, 3000)})), "is 3000x3000 pixels, more than the limit of 1024"),
    "pixel bomb (Pillow's limit)": (_case_tar(_members(**{BAD_PNG_TRAIN: _huge_png_header(60000, 60000)})), "exceeds limit"),
    # content
    "not an image file": (_case_tar(_members(**{"cifar10-jpeg/train/cat/notes.txt": b"hello"})), "is not a .jpg, .jpeg or .png image file"),
    "hidden file": (_case_tar(_members(**{"cifar10-jpeg/train/cat/.DS_Store": b"\0\0"})), "is not a .jpg, .jpeg or .png image file"),
    "text named .png": (_case_tar(_members(**{BAD_PNG_TRAIN: b"not a png at all"})), "is not a readable PNG image"),
    "JPEG named .png": (_case_tar(_members(**{BAD_PNG_TRAIN: image_bytes(smooth(0, 0), "JPEG")})), "is not a readable PNG image"),
    "truncated image": (_case_tar(_members(**{BAD_PNG_TRAIN: _png()[:60]})), "cannot be decoded as PNG"),
    "image of another size": (_case_tar(_members(**{BAD_PNG_TRAIN: _png(16)})), "is 16x16 pixels; expected 32x32"),
    "greyscale image": (_case_tar(_members(**{BAD_PNG_TRAIN: _png(mode="L")})), "has image mode L; expected RGB"),
    "RGBA image": (_case_tar(_members(**{BAD_PNG_TRAIN: _png(mode="RGBA")})), "has image mode RGBA; expected RGB"),
    # layout
    "file directly in a split": (_case_tar(_members(**{"cifar10-jpeg/train/x.png": _png()})), "is not in the layout"),
    "a third split": (_case_tar(_members(**{"cifar10-jpeg/val/cat/x.png": _png()})), "is not in the layout"),
    "two top-level folders": (_case_tar(_members(**{"other/train/cat/x.png": _png()})), "is not in the layout"),
    "class missing from test": (_case_tar(_members(**{"cifar10-jpeg/test/dog": None})), "class 'dog' is missing from the test split"),
    "empty test split": (_case_tar(_members(**{"cifar10-jpeg/test": None})), "the test split is empty"),
    "empty class folder": (_case_folder(lambda r: [p.unlink() for p in (r / "test" / "dog").iterdir()]), "class 'dog' holds no images in the test split"),
    "not CIFAR-10's classes": (_case_tar(_members(**{"cifar10-jpeg/train/zebra/0.png": _png(), "cifar10-jpeg/test/zebra/0.png": _png()})), "unexpected 'zebra'"),
    # archives
    "truncated tar.gz": (_case_cut("tar.gz", 0.5), "cannot read it as a tar.gz archive"),
    "truncated tar": (_case_cut("tar", 0.5), "cannot read it as a tar archive"),
    "truncated zip": (_case_cut("zip", 0.5), "cannot read it as a zip archive"),
    "random bytes as tar.gz": (_case_file("cifar10-jpeg.tar.gz", np.random.default_rng(0).bytes(2000)), "cannot read it as a tar.gz archive"),
    "an empty archive": (_case_tar(members={}, kind="tar"), "holds no image files"),
    "not an archive": (_case_file("cifar10.rar", b"Rar!"), "not an image collection: give a folder or a .tar.gz, .tgz, .tar, .zip archive"),
}


def _tree(root: Path, skip: Path) -> list:
    return sorted((str(p.relative_to(root)), p.is_file() and p.read_bytes()) for p in root.rglob("*")
                  if skip not in p.parents and p != skip)


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_or_broken_input_is_one_line_exit_2_and_writes_nothing(tmp_path, cache, capsys, case):
    make, fragment = HOSTILE[case]
    inputs = tmp_path / "in"
    inputs.mkdir()
    path = make(inputs)
    with pytest.raises(UsageError) as e:
        I.read(path, CIFAR10, cache_dir=cache)
    assert fragment in str(e.value) and "\n" not in str(e.value), str(e.value)
    before = _tree(tmp_path, cache)
    out = tmp_path / "run"
    rc = _rc(["train", "--dataset", "cifar10", "--data-dir", str(path), "--model", "cnn", "--epochs", "1", "--algo", "bc",
              "--no-progress", "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 2 and captured.err.startswith("stam: error: ") and captured.err.count("\n") == 1, captured.err
    assert fragment in captured.err and "Traceback" not in captured.err + captured.out
    assert _tree(tmp_path, cache) == before and not out.exists()
    assert not (tmp_path / "escape.png").exists() and not Path("/tmp/escape.png").exists()
    assert not (cache / "imagefolder").exists() or not [p for p in (cache / "imagefolder").iterdir() if p.is_dir()]


@pytest.mark.parametrize("which", ["members", "total", "file"])
def test_limits_stop_bombs_while_reading(tmp_path, cache, which):
    members, _ = collection(n_train=1, n_test=1)
    total = sum(map(len, members.values())) // 2
    limits = {"members": imageread.Limits(members=15, pixels=1024), "total": imageread.Limits(total_bytes=total, pixels=1024),
              "file": imageread.Limits(file_bytes=50, pixels=1024)}[which]
    fragment = {"members": "more than 15 members", "total": f"(expands? to more|is larger) than {total} bytes",
                "file": "more than the 50 an image"}[which]
    for kind in ("tar.gz", "zip", "folder"):
        path = write(tmp_path / f"c-{which}{SUFFIX[kind]}", members, kind)
        with pytest.raises(UsageError, match=fragment):
            I.read(path, CIFAR10, cache_dir=cache, limits=limits)


def test_a_gzip_bomb_stops_at_the_bound(tmp_path, cache):
    """A tar.gz whose first header (a pax header, which tarfile itself reads into memory) claims
    64 MiB of zeros (64 KiB compressed), under a 1 MiB bound: refused after about 1 MiB."""
    import gzip

    path = tmp_path / "bomb.tar.gz"
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(_tar_info("pax", tarfile.XHDTYPE, size=64 << 20).tobuf())
        for _ in range(64):
            f.write(b"\0" * (1 << 20))
    with pytest.raises(UsageError, match="the archive expands to more than 1048576 bytes"):
        I.read(path, imageread.Expect(), cache_dir=cache, limits=imageread.Limits(total_bytes=1 << 20))


def test_cifar_limits_follow_the_image_size():
    lim = imageread.Limits.for_shape((3, 32, 32))
    assert lim.pixels == 1024 and lim.file_bytes == 64 * 1024 + 16 * 3072 and lim.members >= 60_023


# --------------------------------------------------------------------------- names, by hypothesis

PART = st.sampled_from(["..", ".", "", "train", "test", "cat", "0.png", "a b", "\u00e9", "x..y", "...", "~"])


@settings(max_examples=150)
@given(st.lists(PART, min_size=1, max_size=6), st.sampled_from(["", "/", "//", "./", "C:/", "c:"]))
def test_member_names_never_escape(parts, prefix):
    name = prefix + "/".join(parts)
    escapes = name.startswith("/") or name[1:2] == ":" or ".." in name.split("/")
    try:
        got = safe_parts(name, Path("x.tar"))
    except UsageError as exc:
        assert escapes and "\n" not in str(exc) and "refusing" in str(exc)
    else:
        assert not escapes and ".." not in got and "" not in got and "." not in got


@settings(max_examples=15)
@given(st.lists(PART, min_size=1, max_size=5), st.sampled_from(["tar", "zip"]))
def test_random_member_names_in_an_archive_are_refused_or_read_never_extracted(tmp_path_factory, parts, kind):
    tmp = tmp_path_factory.mktemp("names")
    name = "/".join(parts)
    members = _members()
    extra = ([(_tar_info(name, size=len(_png())), _png())] if kind == "tar" else [(zipfile.ZipInfo(name), _png())])
    path = write(tmp / f"c{SUFFIX[kind]}", members, kind, extra)
    before = sorted(p.name for p in tmp.parent.iterdir())
    try:
        I.read(path, CIFAR10, cache_dir=tmp / "cache")
    except UsageError as exc:
        assert "\n" not in str(exc)
    else:  # only a name that lands on the layout can be read (then it is one more image)
        assert ".." not in name.split("/")
    assert sorted(p.name for p in tmp.parent.iterdir()) == before
    assert sorted(p.name for p in tmp.iterdir()) in (["c" + SUFFIX[kind]], ["c" + SUFFIX[kind], "cache"])


def test_tune_and_map_on_a_small_jpeg_copy_with_a_narrow_vgg(tmp_path, cache, capsys):
    """stam tune and stam map take any data set and model: a VGG-11 at width 1/16 on a small
    CIFAR-10 JPEG copy; the results record the data set, model, width and the copy they read,
    and the table, headline and map say so."""
    from stam.dnn import tunestats
    from stam.dnn import tunetext

    path, _ = small(tmp_path, "tar.gz", "JPEG", n_train=4, n_test=1)
    common = ["--dataset", "cifar10", "--data-dir", str(path), "--model", "vgg11", "--width", "0.0625", "--epochs", "1",
              "--batch-size", "8", "--no-progress"]
    out = tmp_path / "t"
    assert _rc(["tune", *common, "--algos", "stam,bc", "--trials", "1", "--n-seeds", "2", "--no-paper", "--out", str(out)]) == 0, \
        capsys.readouterr().err
    printed = capsys.readouterr().out
    result = json.loads((out / "tune-cifar10.json").read_text())
    assert (result["dataset"], result["model"], result["width"]) == ("cifar10", "vgg11", 0.0625)
    assert result["data_source"]["kind"] == "jpeg-copy" and result["data_source"]["sha256"] == imagecache.sha256_file(path)
    assert printed.startswith("CIFAR-10 (JPEG copy), VGG-11 at width 0.0625 (1 epoch, batch 8)")
    assert tunetext.headline(result).startswith(f"[{tunestats.budget_note(result['params'])}] CIFAR-10 (JPEG copy), VGG-11 at width 0.0625, equal budget")
    assert "tune-cifar10.json" in printed and (out / "tune-cifar10.md").is_file()
    for a in result["algorithms"]:
        assert a["final"]["n"] == 2 and len(a["trials"]) == 1
    m = tmp_path / "m"
    assert _rc(["map", *common, "--gammas", "0.1,10", "--lams", "1", "--betas", "20", "--n-seeds", "1", "--out", str(m)]) == 0, \
        capsys.readouterr().err
    assert "map cifar10-vgg11-w0.0625 (JPEG copy):" in capsys.readouterr().out
    data = json.loads((m / "map-cifar10.json").read_text())
    assert data["data_source"]["kind"] == "jpeg-copy"
    assert data["source"] == "cifar10" and data["problem"] == "cifar10-vgg11-w0.0625" and len(data["rows"]) == 2
    assert data["params"]["width"] == 0.0625 and (m / "map-cifar10.png").is_file()
    assert data["format"] == 2 and all(r["metric"] is None or 0 <= r["metric"] <= 100 for r in data["rows"])  # percent


# --------------------------------------------------------------------------- worker processes

def test_workers_import_nothing_from_the_working_folder(tmp_path, cache, monkeypatch):
    """A ``numpy.py`` and a ``pickle.py`` in the working folder (and ``PYTHONPATH`` pointing
    there) run in no decoding worker: the workers are isolated interpreters started in a fixed
    folder, and the result is the serial one."""
    monkeypatch.setattr(I, "PARALLEL_MIN", 8)
    path, expected = small(tmp_path, "tar", n_train=3, n_test=1)
    work = tmp_path / "work"
    work.mkdir()
    marker = tmp_path / "marker"
    for name in ("numpy", "pickle", "PIL", "stam"):
        (work / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write('{name} ran\\n')\n")
    monkeypatch.chdir(work)
    monkeypatch.setenv("PYTHONPATH", str(work))
    started = []
    real = I._start_worker
    monkeypatch.setattr(I, "_start_worker", lambda share, spec: started.append(len(share)) or real(share, spec))
    c = I.read(path, CIFAR10, cache_dir=tmp_path / "c", workers=2)
    assert started, "no worker was started: the test did not test the workers"
    assert not marker.exists(), marker.read_text()
    assert np.array_equal(c.train_x, expected["train"][0]) and np.array_equal(c.test_x, expected["test"][0])


@pytest.mark.parametrize("worker", ["import os; os._exit(3)",  # dies before reading its share (a broken pipe)
                                    "import sys; sys.stdin.buffer.read(); sys.stdout.write('not a pickle')",
                                    "import sys; sys.stdin.buffer.read(); sys.exit(1)"])
def test_a_dead_worker_is_replaced_by_decoding_its_share_here(tmp_path, cache, monkeypatch, worker):
    """The documented fallback: a worker that dies (before reading its share, with garbage on its
    output, with an error status) costs time, never the result ('flush of closed file' once)."""
    monkeypatch.setattr(I, "PARALLEL_MIN", 8)
    monkeypatch.setattr(I, "_WORKER", worker)
    path, expected = small(tmp_path, "tar", n_train=250, n_test=1)  # a share larger than a pipe's buffer (64 KiB)
    c = I.read(path, CIFAR10, cache_dir=tmp_path / "c", workers=2)
    assert np.array_equal(c.train_x, expected["train"][0]) and np.array_equal(c.train_y, expected["train"][1])
