"""Data: fake CIFAR archives in the official format, checksums, the restricted unpickler,
device-side augmentation, digits."""

import hashlib
import io
import os
import pickle
import struct
import tarfile

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from stam.dnn import data as D
from stam.errors import UsageError


# ---------------------------------------------------------------- fake archives in the official format

class Py2Pickler(pickle._Pickler):
    """Writes pickles as Python 2's cPickle did for the official CIFAR files (protocol 2,
    strings as BINSTRING, numpy arrays through numpy.core.multiarray._reconstruct)."""

    dispatch = dict(pickle._Pickler.dispatch)

    def save_bytes(self, obj):
        n = len(obj)
        self.write((pickle.SHORT_BINSTRING + bytes([n]) if n < 256 else pickle.BINSTRING + struct.pack("<i", n)) + obj)
        self.memoize(obj)

    def save_global(self, obj, name=None):
        module = obj.__module__.replace("numpy._core", "numpy.core")
        self.write(pickle.GLOBAL + f"{module}\n{name or obj.__qualname__}\n".encode())
        self.memoize(obj)

    dispatch[bytes] = save_bytes
    dispatch[type] = save_global


def py2_pickle(obj) -> bytes:
    buf = io.BytesIO()
    Py2Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue()


def fake_split(n, num_classes, label_key, seed):
    rng = np.random.default_rng(seed)
    return {b"batch_label": b"fake", label_key.encode(): [int(v) for v in rng.integers(0, num_classes, n)],
            b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"filenames": [b"x.png"] * n}


def write_fake_cifar(root, name="cifar10", n=6, extract=False):
    """Write a small archive (or extracted folder) laid out like the official one; return the
    checksum table to pass as ``checksums``."""
    layout = D.CIFAR_LAYOUTS[name]
    members = {f: py2_pickle(fake_split(n, layout.num_classes, layout.label_key, i)) for i, f in enumerate((*layout.train_files, layout.test_file))}
    meta_key = b"label_names" if name == "cifar10" else b"fine_label_names"
    members[layout.meta_file] = py2_pickle({meta_key: [b"c%d" % i for i in range(layout.num_classes)]})
    sums = {f"{layout.folder}/{f}": hashlib.md5(b).hexdigest() for f, b in members.items()}
    if extract:
        (root / layout.folder).mkdir(parents=True)
        for f, b in members.items():
            (root / layout.folder / f).write_bytes(b)
        return sums
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for f, b in members.items():
            info = tarfile.TarInfo(f"{layout.folder}/{f}")
            info.size = len(b)
            tar.addfile(info, io.BytesIO(b))
    (root / layout.archive).write_bytes(buf.getvalue())
    sums[layout.archive] = hashlib.md5(buf.getvalue()).hexdigest()
    return sums


# ---------------------------------------------------------------- CIFAR loading

@pytest.mark.parametrize("name", ["cifar10", "cifar100"])
@pytest.mark.parametrize("extract", [False, True])
def test_fake_cifar_round_trip(tmp_path, name, extract):
    sums = write_fake_cifar(tmp_path, name, n=6, extract=extract)
    d = D.load(name, tmp_path, checksums=sums)
    layout = D.CIFAR_LAYOUTS[name]
    assert d.train_x.shape == (6 * len(layout.train_files), 3, 32, 32) and d.train_x.dtype == torch.uint8
    assert d.test_x.shape == (6, 3, 32, 32) and d.num_classes == layout.num_classes and d.augment
    first = fake_split(6, layout.num_classes, layout.label_key, 0)
    assert torch.equal(d.train_x[:6].reshape(6, -1), torch.from_numpy(first[b"data"]))
    assert d.train_y[:6].tolist() == first[layout.label_key.encode()]
    assert set(d.manifest) == set(k for k in sums if "/" in k) and all(len(v) == 64 for v in d.manifest.values())


def test_official_checksums_are_the_published_ones():
    assert D.OFFICIAL_MD5["cifar-10-python.tar.gz"] == "c58f30108f718f92721af3b95e74349a"
    assert D.OFFICIAL_MD5["cifar-100-python.tar.gz"] == "eb9058c3a382ffc7106e4002c42a8d85"


def test_missing_data_names_files_and_source(tmp_path):
    with pytest.raises(UsageError) as e:
        D.load("cifar10", tmp_path)
    msg = str(e.value)
    assert "\n" not in msg
    for part in ("cifar-10-python.tar.gz", "cifar-10-batches-py", "data_batch_1", "test_batch", "https://www.cs.toronto.edu/~kriz/", "--download"):
        assert part in msg


def test_corrupt_archive_is_refused_by_checksum(tmp_path):
    sums = write_fake_cifar(tmp_path)
    path = tmp_path / "cifar-10-python.tar.gz"
    path.write_bytes(path.read_bytes()[:-10])  # truncated download
    with pytest.raises(UsageError, match="corrupt or partial"):
        D.load("cifar10", tmp_path, checksums=sums)
    with pytest.raises(UsageError, match="corrupt or partial"):  # and the official checksum refuses the fake
        D.load("cifar10", tmp_path)


@pytest.fixture
def cifar_server(tmp_path, monkeypatch):
    """A local HTTP server (127.0.0.1, no network) in place of the official source, serving a fake
    CIFAR-10 archive; yields (data dir, checksums of the served archive, list of requested paths)."""
    import functools
    import http.server
    import threading

    served = tmp_path / "served"
    served.mkdir()
    sums = write_fake_cifar(served)
    requests = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            requests.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(D, "SOURCE_URL", f"http://127.0.0.1:{server.server_address[1]}/")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    yield data_dir, sums, requests
    server.shutdown()


def test_download_fetches_a_missing_archive_and_refetches_a_corrupt_one(cifar_server):
    data_dir, sums, requests = cifar_server
    d = D.load("cifar10", data_dir, download=True, checksums=sums)
    assert d.train_x.shape == (30, 3, 32, 32) and requests == ["/cifar-10-python.tar.gz"]
    archive = data_dir / "cifar-10-python.tar.gz"
    archive.write_bytes(archive.read_bytes()[:-10])  # an interrupted earlier download
    with pytest.raises(UsageError, match="corrupt or partial"):
        D.load("cifar10", data_dir, checksums=sums)
    d = D.load("cifar10", data_dir, download=True, checksums=sums)  # --download fetches it again
    assert d.train_x.shape == (30, 3, 32, 32) and len(requests) == 2
    assert not [p for p in data_dir.iterdir() if p.name != "cifar-10-python.tar.gz"]  # no temporary left


def test_download_failure_is_one_line_and_leaves_nothing(cifar_server, monkeypatch):
    data_dir, sums, _ = cifar_server
    monkeypatch.setattr(D, "SOURCE_URL", D.SOURCE_URL + "missing/")  # HTTP 404
    with pytest.raises(UsageError, match="could not download .*cifar-10-python.tar.gz") as e:
        D.load("cifar10", data_dir, download=True, checksums=sums)
    assert "\n" not in str(e.value) and not list(data_dir.iterdir())


def test_download_offline_leaves_no_folder_behind(tmp_path, monkeypatch, capsys):
    """Issue 37, point 7: ``stam train --dataset cifar10 --download`` offline (the download fails) is one line, exit
    status 2, and leaves nothing: not the default ``./data`` it would have downloaded into, nor the run folder;
    a deeper ``--data-dir`` that did not exist is removed up to the folder that did, one that did stays."""
    import urllib.error

    from stam.cli import main

    def offline(*args, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(D.urllib.request, "urlopen", offline)
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--dataset", "cifar10", "--algo", "bc", "--download", "--epochs", "1", "--out", "runs/x"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("stam")]  # (and the run's start-up line)
    assert errors[-1].startswith("stam: error: could not download ") and "name resolution" in errors[-1]
    assert sum(line.startswith("stam: error") for line in errors) == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    with pytest.raises(UsageError, match="could not download"):
        D.load("cifar10", tmp_path / "kept" / "a" / "b", download=True)
    assert [p.name for p in tmp_path.iterdir()] == ["kept"] and not list((tmp_path / "kept").iterdir())


def test_a_valid_folder_stands_in_for_a_corrupt_archive(tmp_path):
    sums = write_fake_cifar(tmp_path, extract=True)
    (tmp_path / "cifar-10-python.tar.gz").write_bytes(b"not an archive")
    sums["cifar-10-python.tar.gz"] = "0" * 32
    assert D.load("cifar10", tmp_path, checksums=sums).train_x.shape == (30, 3, 32, 32)


def test_partial_or_corrupt_folder(tmp_path):
    sums = write_fake_cifar(tmp_path, extract=True)
    folder = tmp_path / "cifar-10-batches-py"
    (folder / "data_batch_3").write_bytes(b"garbage")
    with pytest.raises(UsageError, match="data_batch_3 is corrupt"):
        D.load("cifar10", tmp_path, checksums=sums)
    (folder / "data_batch_3").unlink()
    with pytest.raises(UsageError, match="data_batch_3 is missing"):
        D.load("cifar10", tmp_path, checksums=sums)


class _Evil:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (os.system, (f"touch {self.target}",))


def test_malicious_pickle_is_refused(tmp_path):
    flag = tmp_path / "pwned"
    blob = pickle.dumps({"data": _Evil(flag), "labels": []}, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        D.safe_unpickle(blob)
    assert not flag.exists()
    # and inside a checksum-valid archive it is a one-line usage error, still without running anything
    folder = tmp_path / "cifar-10-batches-py"
    sums = write_fake_cifar(tmp_path, extract=True)
    (folder / "test_batch").write_bytes(blob)
    sums["cifar-10-batches-py/test_batch"] = hashlib.md5(blob).hexdigest()
    with pytest.raises(UsageError, match="not a CIFAR pickle"):
        D.load("cifar10", tmp_path, checksums=sums)
    assert not flag.exists()


def test_builtins_eval_is_refused():
    blob = b"cbuiltins\neval\n(S'1+1'\ntR."
    with pytest.raises(pickle.UnpicklingError, match="builtins.eval"):
        D.safe_unpickle(blob)


def test_wrong_shape_is_refused(tmp_path):
    sums = write_fake_cifar(tmp_path, extract=True)
    bad = py2_pickle({b"data": np.zeros((3, 100), np.uint8), b"labels": [0, 1, 2]})
    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(bad)
    sums["cifar-10-batches-py/test_batch"] = hashlib.md5(bad).hexdigest()
    with pytest.raises(UsageError, match="wrong shape"):
        D.load("cifar10", tmp_path, checksums=sums)


# ---------------------------------------------------------------- augmentation

def reference_augment(x, offsets, flips, pad=4):
    padded = torch.nn.functional.pad(x, (pad, pad, pad, pad))
    out = []
    for i in range(len(x)):
        dy, dx = int(offsets[0, i]), int(offsets[1, i])
        crop = padded[i, :, dy:dy + x.shape[2], dx:dx + x.shape[3]]
        out.append(crop.flip(2) if flips[i] else crop)
    return torch.stack(out)


@given(st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_augment_is_crop_and_flip_of_padded_image(b, seed):
    x = torch.randint(0, 256, (b, 3, 6, 5), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))
    g = torch.Generator().manual_seed(seed)
    out = D.augment(x, g)
    g2 = torch.Generator().manual_seed(seed)  # replay the draws in the same order
    offsets = torch.randint(0, 9, (2, b), generator=g2)
    flips = torch.rand(b, generator=g2) < 0.5
    assert out.dtype == torch.uint8 and out.shape == x.shape
    assert torch.equal(out, reference_augment(x, offsets, flips))
    assert torch.equal(D.augment(x, torch.Generator().manual_seed(seed)), out)  # deterministic


# ---------------------------------------------------------------- digits

def test_digits_split_is_deterministic_and_disjoint():
    d = D.load("digits")
    assert d.train_x.shape == (1437, 1, 8, 8) and d.test_x.shape == (360, 1, 8, 8)
    assert d.train_x.dtype == torch.uint8 and int(d.train_x.max()) == 255 and not d.augment
    assert sorted(set(d.test_y.tolist())) == list(range(10))
    e = D.load("digits")
    assert torch.equal(d.test_x, e.test_x) and torch.equal(d.train_y, e.train_y)
    z = d.normalise(d.train_x)
    assert torch.allclose(z.mean(dim=(0, 2, 3)), torch.zeros(1), atol=1e-4)


def test_digits_read_without_importing_sklearn_equal_load_digits():
    """The digits file is read as scikit-learn's load_digits reads it (same arrays, same source
    hash), and reading it imports no scikit-learn (about a second of every stam train start)."""
    import subprocess
    import sys

    import numpy as np
    from sklearn.datasets import load_digits as sk_digits

    from stam.dnn import data as D

    images, labels, _ = D._digits_arrays()
    bunch = sk_digits()
    assert np.array_equal(images, bunch.images) and np.array_equal(labels, bunch.target)
    code = "import sys; from stam.dnn import data; data.load_digits(); print('sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
