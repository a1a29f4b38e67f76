"""Checkpoints that load but are wrong (issue 12, item 7): ``stam train --resume`` validates the
structure of the checkpoint against the run's own and verifies its content hash; every mismatch is
one ``stam: error:`` line naming the file and the field, exit 2, nothing written."""

import json
import shutil
import struct
import zipfile

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.cli import main
from stam.dnn import checkpoint
from stam.dnn import train as T
from stam.dnn.params import TrainConfig

ARGV = ["train", "--model", "mlp", "--dataset", "digits", "--algo", "stam", "--epochs", "2", "--seed", "3",
        "--no-progress", "--quiet"]


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    """A real 1-epoch STAM run on digits (model, optimiser state U, V, X, sign-flip state)."""
    out = tmp_path_factory.mktemp("ckpt") / "run"
    T.train(TrainConfig(model="mlp", dataset="digits", algo="stam", epochs=1, seed=3, out=str(out), progress=False, echo=False))
    return out


def _copy(good_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(good_run, out)
    return out


def _rc(argv):
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def _resume_fails(out, capsys, *needles):
    """--resume exits 2 with one line naming the checkpoint and ``needles``; nothing is written."""
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert _rc([*ARGV, "--out", str(out), "--resume"]) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert err.count("\n") == 1 and err.startswith("stam: error: --resume: ") and "Traceback" not in err, err
    assert str(out / "checkpoint.pt") in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    assert captured.out == ""
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing written, nothing removed
    return err


def _edit(out, change, reseal=False):
    """Load the checkpoint, apply ``change`` to it, save it back (with a fresh content hash if
    ``reseal``: then only the structure check can catch it)."""
    path = out / "checkpoint.pt"
    ckpt = torch.load(path, weights_only=True)
    change(ckpt)
    if reseal:
        ckpt["sha256"] = {k: checkpoint.digest(ckpt.get(k)) for k in checkpoint.HASHED}
    torch.save(ckpt, path)


def _set(key, value):
    def change(ckpt):
        ckpt[key] = value
    return change


# -- the six malformed kinds of the issue, each also resealed (a consistent but wrong file) -----------

MALFORMED = {
    "config-empty": (_set("config", {}), ["field config", "does not hold the settings", "missing model"]),
    "config-string": (_set("config", "vgg11 on cifar10"), ["field config", "must be a dict", "not a string"]),
    "no-model": (lambda c: c.pop("model"), ["field model", "is missing"]),
    "wrong-shape": (lambda c: c["model"].__setitem__("net.1.weight", torch.zeros(3, 64)),
                    ["field model.net.1.weight", "shape (3, 64)", "expected torch.float32 of shape (1, 256, 64)"]),
    "buffer-shape": (lambda c: c["model"].__setitem__("net.2.running_mean", torch.zeros(7)),
                     ["field model.net.2.running_mean", "shape (7,)"]),
    "rng-invalid": (lambda c: c["rng"]["shuffle"].__setitem__(0, torch.zeros(5056, dtype=torch.uint8)),
                    ["field rng.shuffle[0]", "not a valid generator state"]),
    "rng-seeds": (lambda c: c["rng"]["shuffle"].append(c["rng"]["shuffle"][0]), ["field rng.shuffle", "length 1"]),
    "rng-dtype": (lambda c: c["rng"].__setitem__("torch", torch.zeros(5056)),
                  ["field rng.torch", "torch.float32 tensor", "expected torch.uint8"]),
    "epoch-two": (_set("epoch", "two"), ["field epoch", "non-negative integer", "'two'"]),
    "epoch-negative": (_set("epoch", -1), ["field epoch", "non-negative integer"]),
    "epoch-vs-log": (_set("epoch", 2), ["field epoch", "is 2, but the log holds 1"]),
    "optimizer-state": (lambda c: c["optimizer"]["layers"]["net.4.weight"].pop(), ["field optimizer.layers.net.4.weight", "length 4"]),
    "optimizer-shape": (lambda c: c["optimizer"]["layers"]["net.1.weight"].__setitem__(1, torch.zeros(2, 2)),
                        ["field optimizer.layers.net.1.weight[1]", "shape (2, 2)"]),
    "optimizer-layer": (lambda c: c["optimizer"]["layers"].pop("net.7.weight"), ["field optimizer.layers", "missing net.7.weight"]),
    "optimizer-dtype": (lambda c: c["optimizer"]["buffers"].__setitem__("net.2.weight", torch.zeros(1, 256, dtype=torch.float64)),
                        ["field optimizer.buffers.net.2.weight", "torch.float64", "expected torch.float32"]),
    "optimizer-null": (lambda c: c["optimizer"].__setitem__("layers", None), ["field optimizer.layers", "must be a dict"]),
    "signs": (lambda c: c["signs"]["ever"].pop(), ["field signs.ever", "length 3"]),
    "log-record": (lambda c: c["log"][0].__setitem__("test_acc_binary", "abc"), ["field log[0].test_acc_binary", "a number"]),
    "log-tensor": (lambda c: c["log"][0].__setitem__("hyper", torch.ones(3)), ["field log[0].hyper", "JSON values"]),
    "config-device": (lambda c: c["config"].__setitem__("device", "nonsense:7"), ["field config.device", "not a device"]),
    "extra-key": (_set("pickle", 1), ["field pickle", "not a field"]),
    "seconds": (_set("seconds", float("nan")), ["field seconds", "finite number"]),
}


@pytest.mark.parametrize("reseal", [False, True], ids=["as-edited", "resealed"])
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_checkpoint_is_one_line_naming_the_field(good_run, tmp_path, capsys, case, reseal):
    change, needles = MALFORMED[case]
    out = _copy(good_run, tmp_path)
    _edit(out, change, reseal=reseal)
    _resume_fails(out, capsys, *needles)


def _data_records(path):
    """(offset, size) of the tensor data records in the zip file torch.save wrote, largest first."""
    raw = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        infos = [i for i in z.infolist() if "/data/" in i.filename and i.compress_type == zipfile.ZIP_STORED]
    found = []
    for i in infos:
        name_len, extra_len = struct.unpack("<HH", raw[i.header_offset + 26 : i.header_offset + 30])
        found.append((i.header_offset + 30 + name_len + extra_len, i.file_size))
    return sorted(found, key=lambda r: -r[1])


def test_a_flipped_byte_in_tensor_data_is_detected(good_run, tmp_path, capsys):
    out = _copy(good_run, tmp_path)
    path = out / "checkpoint.pt"
    data = bytearray(path.read_bytes())
    offset, size = _data_records(path)[0]
    data[offset + size // 2 + 1] ^= 0x04  # one bit of one float: a finite value, still a loadable file
    path.write_bytes(bytes(data))
    assert torch.load(path, weights_only=True)["format"] == checkpoint.FORMAT  # it loads
    err = _resume_fails(out, capsys, "does not match the SHA-256 stored with it", "the file is corrupt")
    assert "good" not in err


def test_finite_garbage_weights_and_edited_records_are_corrupt_not_resumed(good_run, tmp_path, capsys):
    out = _copy(good_run, tmp_path)

    def garbage(ckpt):
        w = ckpt["model"]["net.4.weight"]
        w.view(torch.int32)[0, 7, 7] ^= 1 << 22  # a bit flip inside the mantissa
        assert torch.isfinite(w).all()
    _edit(out, garbage)
    _resume_fails(out, capsys, "field model does not match the SHA-256", "corrupt")
    out2 = _copy(good_run, tmp_path / "b")
    _edit(out2, lambda c: c["log"][0].__setitem__("test_acc_binary", 99.9))  # the non-tensor payload is hashed too
    _resume_fails(out2, capsys, "field log does not match the SHA-256", "corrupt")
    out3 = _copy(good_run, tmp_path / "c")
    _edit(out3, lambda c: c.__setitem__("sha256", {"model": "0" * 64}))
    _resume_fails(out3, capsys, "field sha256 is missing or damaged", "corrupt")


def test_an_older_format_is_named(good_run, tmp_path, capsys):
    out = _copy(good_run, tmp_path)
    _edit(out, lambda c: (c.pop("sha256"), c.__setitem__("format", 1)))
    _resume_fails(out, capsys, "is a checkpoint of format 1, written by an older stam", f"format {checkpoint.FORMAT} only")
    _edit(out, _set("format", 2))
    _resume_fails(out, capsys, "is a checkpoint of format 2", "torch.optim state", f"format {checkpoint.FORMAT} only")
    _edit(out, _set("format", "1"))
    _resume_fails(out, capsys, f"not a stam train checkpoint of format {checkpoint.FORMAT}")


def test_a_valid_checkpoint_is_sealed_and_resumes(good_run, tmp_path):
    out = _copy(good_run, tmp_path)
    ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
    assert ckpt["format"] == checkpoint.FORMAT and set(ckpt) == {*checkpoint.KEYS, "sha256"}
    assert ckpt["sha256"] == {k: checkpoint.digest(ckpt[k]) for k in checkpoint.HASHED}
    assert [tuple(r) for r in ckpt["log"]] == [T.RECORD_KEYS]  # the records the structure check expects
    res = T.train(TrainConfig(model="mlp", dataset="digits", algo="stam", epochs=2, seed=3, out=str(out), resume=True,
                              progress=False, echo=False))
    assert res.summary["epochs"] == 2 and [r["epoch"] for r in map(json.loads, (out / "log.jsonl").read_text().splitlines())] == [1, 2]
    assert checkpoint.verified_epoch(out / "checkpoint.pt") == (2, "")


def test_divergence_calls_the_checkpoint_good_only_if_its_hash_verifies(tmp_path, monkeypatch):
    """Epoch 1 commits a checkpoint; it is damaged on disk; epoch 2 diverges: the message says the
    checkpoint is corrupt instead of calling it the last good one."""
    real = checkpoint.write

    def write_then_damage(path, payload):
        real(path, payload)
        ckpt = torch.load(path, weights_only=True)
        ckpt["model"]["net.1.weight"][0, 0] += 1.0
        torch.save(ckpt, path)

    monkeypatch.setattr(checkpoint, "write", write_then_damage)
    blow_up = [{"from": 1, "value": 0.1}, {"from": 2, "value": 1e30}]
    cfg = TrainConfig(model="mlp", dataset="digits", algo="float", epochs=3, out=str(tmp_path / "run"), progress=False,
                        echo=False, overrides={"lr": blow_up})
    with pytest.raises(T.Diverged) as info:
        T.train(cfg)
    msg = str(info.value)
    assert "good" not in msg and "\n" not in msg and "became" in msg and "in epoch 2" in msg
    assert "cannot be trusted: its field model does not match the SHA-256 stored with it" in msg and "the file is corrupt" in msg


# -- the content hash ------------------------------------------------------------------------------

TENSORS = st.tuples(st.integers(1, 4), st.integers(1, 5), st.sampled_from([torch.float32, torch.float64, torch.int64,
                                                                            torch.uint8, torch.bool, torch.bfloat16]))


@settings(max_examples=40, deadline=None)
@given(TENSORS, st.integers(0, 10**6), st.data())
def test_digest_changes_with_every_bit_and_not_with_dict_order(shape_dtype, seed, data):
    rows, cols, dtype = shape_dtype
    g = torch.Generator().manual_seed(seed)
    t = (torch.rand(rows, cols, generator=g) * 100).to(dtype)
    obj = {"b": [t, 1.5, None], "a": {"x": "s", 3: True}}
    same = {"a": {3: True, "x": "s"}, "b": [t.clone(), 1.5, None]}
    assert checkpoint.digest(obj) == checkpoint.digest(same)
    raw = t.clone().contiguous().reshape(-1).view(torch.uint8)
    i = data.draw(st.integers(0, raw.numel() - 1))
    bit = data.draw(st.integers(0, 7))
    flipped = raw.clone()
    flipped[i] ^= 1 << bit
    t2 = flipped.view(dtype).reshape(rows, cols) if dtype != torch.bool else flipped.view(torch.bool).reshape(rows, cols)
    assert checkpoint.digest({"a": obj["a"], "b": [t2, 1.5, None]}) != checkpoint.digest(obj)
    # the type, shape and container matter, not only the bytes
    assert checkpoint.digest(t.reshape(-1)) != checkpoint.digest(t) != checkpoint.digest(t.float() if dtype != torch.float32 else t.double())
    assert checkpoint.digest([1, 2]) != checkpoint.digest((1, 2)) != checkpoint.digest([1.0, 2.0])
    assert checkpoint.digest(0.1) != checkpoint.digest(0.1 + 2**-56) and checkpoint.digest(True) != checkpoint.digest(1)


def test_the_log_digest_is_the_digest_of_the_log_while_records_change_under_it():
    """A checkpoint per epoch hashes the run's log with its records' bytes remembered
    (:func:`stam.dnn.checkpoint.log_digest`): the value is :func:`digest`'s, for a growing log, a record
    changed in place (a number, a nested list, a NaN added) and a record replaced by an equal one."""
    log = []
    for epoch in range(1, 8):
        log.append({"epoch": epoch, "loss": 1.0 / epoch, "hyper": {"gamma": 0.5, "beta": [1, 2.0]}, "flips": None})
        assert checkpoint.log_digest(log) == checkpoint.digest(log)
    log[2]["loss"] = 7.0
    log[3]["hyper"]["beta"].append(3)
    log[4]["nan"] = float("nan")
    log[5] = dict(log[5])
    assert checkpoint.log_digest(log) == checkpoint.digest(log)
    assert checkpoint.log_digest(log[:3]) == checkpoint.digest(log[:3]) != checkpoint.digest(log)
    sealed = checkpoint.seal({k: ([] if k == "log" else 0) for k in checkpoint.HASHED} | {"log": log})
    assert sealed["sha256"]["log"] == checkpoint.digest(log)
