"""The checkpoint of ``stam train``: written sealed with a content hash, read back only when its
structure and its hash both hold (issue 12, item 7).

A checkpoint is a dict (``torch.save``; read with ``weights_only=True``, so nothing in it can run
code) with the keys :data:`KEYS` and ``sha256``: for every other key, the SHA-256 of its value in a
canonical serialisation (:func:`digest`: dict keys in sorted order, every tensor as its dtype, shape
and raw bytes, every other value by its type and exact text, floats by ``float.hex``).  A flipped bit
anywhere in a tensor's data or in the pickled values changes a digest.

:func:`read` checks, in this order, and answers each mismatch with one :class:`UsageError` line that
names the file and the field:

1. the file loads, is a dict, and is of :data:`FORMAT` (an older format is named as such);
2. its structure is the one the writer writes for *this* run (:func:`validate`, against a template
   checkpoint the caller builds with the same function that writes: the trainer's state
   (:meth:`stam.dnn.batched.Trainer.state_dict`: the weights and buffers, the update rule's state,
   each a tensor of the expected dtype and shape); the RNG states' dtype and shape, and that the
   generators accept them; the sign-flip state; the config's fields; ``epoch`` a non-negative
   integer equal to the number of log records, which are numbered 1, 2, ...);
3. every digest matches (:func:`verify`): otherwise the file is *corrupt*.
"""

from __future__ import annotations

import errno
import copy
import functools
import hashlib
import math
import os
import re
import struct
from pathlib import Path
from typing import NamedTuple

import torch

from stam.errors import UsageError, first_line
from stam.io import atomic_path

#: 1: no content hash (refused); 2: ``sha256`` over every other key, the state of a ``torch.optim``
#: optimiser (refused); 3: the state of the batched trainer (:class:`stam.dnn.batched.Trainer`).
FORMAT = 3
#: why an older format cannot be resumed
_OLDER = {1: "written by an older stam without a content hash",
          2: "written by an older stam whose trainer kept a torch.optim state"}
#: the keys the writer writes (besides ``sha256``)
KEYS = ("format", "epoch", "config", "model", "optimizer", "rng", "log", "seconds", "signs")
HASHED = tuple(k for k in KEYS if k != "format")
_HEX64 = re.compile(r"[0-9a-f]{64}")


# --------------------------------------------------------------------------- the content hash

def _feed(h, obj) -> None:
    """Feed ``obj`` to the hash ``h`` canonically: a type tag, then the content (lengths first, so
    that no two different values give the same byte stream)."""
    if torch.is_tensor(obj):
        t = obj.detach().cpu().contiguous()
        head = f"{t.dtype}|{tuple(t.shape)}".encode()
        h.update(b"T" + struct.pack("<Q", len(head)) + head)
        h.update(memoryview(t.reshape(-1).view(torch.uint8).numpy()))
    elif isinstance(obj, dict):
        items = sorted(((_key_digest(k), v) for k, v in obj.items()), key=lambda kv: kv[0])
        h.update(b"D" + struct.pack("<Q", len(items)))
        for k, v in items:
            h.update(k)
            _feed(h, v)
    elif isinstance(obj, (list, tuple)):
        h.update((b"L" if isinstance(obj, list) else b"U") + struct.pack("<Q", len(obj)))
        for v in obj:
            _feed(h, v)
    else:
        if isinstance(obj, float):
            text = "nan" if math.isnan(obj) else obj.hex()
        else:
            text = repr(obj)
        data = f"{type(obj).__name__}|{text}".encode("utf-8", "surrogatepass")
        h.update(b"S" + struct.pack("<Q", len(data)) + data)


def _key_digest(key) -> bytes:
    """The SHA-256 of a dict key's canonical stream (a string's or an int's remembered: the same few
    keys recur in every epoch's record, and a checkpoint hashes every record)."""
    if type(key) in (str, int):
        return _plain_key_digest(type(key), key)
    h = hashlib.sha256()
    _feed(h, key)
    return h.digest()


@functools.lru_cache(maxsize=4096)
def _plain_key_digest(cls: type, key) -> bytes:
    h = hashlib.sha256()
    _feed(h, key)
    return h.digest()


def digest(obj) -> str:
    """The SHA-256 (hex) of ``obj`` (tensors, dicts, lists, tuples, numbers, strings, None) in the
    canonical serialisation of :func:`_feed`: independent of dict order and of the device."""
    h = hashlib.sha256()
    _feed(h, obj)
    return h.hexdigest()


class _Stream:
    """What :func:`_feed` writes, kept as bytes (a hash object's ``update`` is all it needs)."""

    def __init__(self):
        self.parts: list[bytes] = []

    def update(self, data) -> None:
        self.parts.append(bytes(data))


#: id of a log record -> (the record, a copy of it as it was, its canonical bytes): a run's log grows by one
#: record an epoch and every checkpoint hashes all of it; a record unchanged since is not serialised again
_LOG_BYTES: dict[int, tuple] = {}


def log_digest(log: list) -> str:
    """:func:`digest` of a run's log (a list of JSON records, no tensors), the same value, each record's
    canonical bytes remembered while the record is unchanged (compared with a copy taken when they were
    made), so a checkpoint per epoch costs time linear in the run, not quadratic."""
    h = hashlib.sha256()
    h.update(b"L" + struct.pack("<Q", len(log)))
    live = set()
    for record in log:
        live.add(id(record))
        hit = _LOG_BYTES.get(id(record))
        if hit is None or hit[0] is not record or hit[1] != record:
            part = _Stream()
            _feed(part, record)
            hit = _LOG_BYTES[id(record)] = (record, copy.deepcopy(record), b"".join(part.parts))
        h.update(hit[2])
    for key in [k for k in _LOG_BYTES if k not in live]:
        del _LOG_BYTES[key]
    return h.hexdigest()


def _cpu(obj):
    if torch.is_tensor(obj):
        return obj.detach().cpu()
    if isinstance(obj, dict):
        return type(obj)((k, _cpu(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_cpu(v) for v in obj)
    return obj


def seal(payload: dict) -> dict:
    """``payload`` (the keys :data:`HASHED`) on the CPU, with ``format`` and the ``sha256`` of each key."""
    missing = [k for k in HASHED if k not in payload]
    if missing:
        raise ValueError(f"a checkpoint needs {', '.join(missing)}")
    ckpt = {"format": FORMAT, **{k: payload[k] if _is_log(k, payload[k]) else _cpu(payload[k]) for k in HASHED}}
    ckpt["sha256"] = {k: log_digest(ckpt[k]) if _is_log(k, ckpt[k]) else digest(ckpt[k]) for k in HASHED}
    return ckpt


def _is_log(key: str, value) -> bool:
    """Whether ``value`` is a run's log as :func:`log_digest` takes it (the key ``log``, a list of dicts)."""
    return key == "log" and isinstance(value, list) and all(type(r) is dict for r in value)


def write(path: Path, payload: dict) -> None:
    """Seal ``payload`` and write it to ``path`` atomically: the whole checkpoint or the old one,
    never a part.  A write that fails (a full disk: torch's writer says so as a ``RuntimeError``)
    is an :class:`OSError` naming ``path`` (``stam: error: ...: PATH``, exit 1)."""
    ckpt = seal(payload)
    with atomic_path(path) as tmp:
        try:
            torch.save(ckpt, tmp)
        except RuntimeError as exc:  # PytorchStreamWriter failed writing file ...: file write failed
            raise OSError(errno.EIO, f"could not write the checkpoint ({first_line(exc, 160)}; a full disk?)",
                          os.fspath(path)) from None


# --------------------------------------------------------------------------- reading

def _fail(path, field: str, message: str, flag: str = "--resume"):
    where = f" field {field}" if field else ""
    raise UsageError(f"{flag}: {path}:{where} {message}")


def load(path: Path, flag: str = "--resume") -> dict:
    """The checkpoint at ``path`` on the CPU (``weights_only=True``), a dict of :data:`FORMAT`; its
    content is not checked yet (:func:`validate`, :func:`verify`)."""
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001  (any unreadable file: truncated, foreign, refused by weights_only)
        raise UsageError(f"{flag}: {path} is not a readable stam checkpoint ({type(exc).__name__}); "
                         "start a new run with another --out") from None
    if not isinstance(ckpt, dict) or "format" not in ckpt:
        raise UsageError(f"{flag}: {path} is not a stam train checkpoint of format {FORMAT}")
    fmt = ckpt["format"]
    if fmt != FORMAT:
        if isinstance(fmt, int) and not isinstance(fmt, bool) and 1 <= fmt < FORMAT:
            raise UsageError(f"{flag}: {path} is a checkpoint of format {fmt}, {_OLDER.get(fmt, 'written by an older stam')}; "
                             f"this version resumes format {FORMAT} only: start a new run with another --out")
        raise UsageError(f"{flag}: {path} is not a stam train checkpoint of format {FORMAT} (format {_show(fmt)})")
    return ckpt


def _mismatch(ckpt: dict) -> tuple[str, str] | None:
    """(field, why) of the first key whose content does not match its stored SHA-256, or None."""
    stored = ckpt.get("sha256")
    if not isinstance(stored, dict) or set(stored) != set(HASHED) or not all(
            isinstance(v, str) and _HEX64.fullmatch(v) for v in stored.values()):
        return "sha256", "is missing or damaged: the file is corrupt, its content cannot be checked"
    bad = [k for k in HASHED if digest(ckpt.get(k)) != stored[k]]
    if bad:
        more = f" (nor do {', '.join(bad[1:])})" if bad[1:] else ""
        return bad[0], f"does not match the SHA-256 stored with it{more}: the file is corrupt (changed after it was written)"
    return None


def verify(ckpt: dict, path: Path, flag: str = "--resume") -> None:
    """Every key's content against its stored SHA-256; a mismatch: the file is corrupt."""
    found = _mismatch(ckpt)
    if found:
        _fail(path, found[0], f"{found[1]}; start a new run with another --out (or restore a copy)", flag)


def verified_epoch(path: Path) -> tuple[int | None, str]:
    """(the epoch of the checkpoint at ``path``, "") if it loads and its hash holds, else (None, why)."""
    if not Path(path).is_file():
        return None, "there is no checkpoint"
    try:
        ckpt = load(path, flag="checkpoint")
        found = _mismatch(ckpt)
    except UsageError:
        return None, "it cannot be read as a checkpoint of this version"
    except RecursionError:
        return None, "it is nested too deeply"
    if found:
        return None, f"its field {found[0]} {found[1]}"
    epoch = ckpt.get("epoch")
    return (epoch, "") if isinstance(epoch, int) and not isinstance(epoch, bool) else (None, "its epoch is not an integer")


class Expected(NamedTuple):
    """What a checkpoint of this run must look like: ``payload``, a checkpoint payload built for
    this run by the writer's own function before any training (model, optimiser, RNG and
    sign-flip state, config); the keys of a log record; the config keys that a checkpoint written
    before they existed may lack (``data_source``)."""

    payload: dict
    record_keys: tuple
    newer_config: frozenset = frozenset()
    #: record keys absent from the records of checkpoints written before they existed (read as None)
    newer_records: frozenset = frozenset()


def read(path: Path, expected: Expected, flag: str = "--resume") -> dict:
    """The checkpoint at ``path``, loaded, validated against ``expected`` and verified (module
    docstring); tensors on the CPU."""
    ckpt = load(path, flag)
    try:
        validate(ckpt, expected, path, flag)
        verify(ckpt, path, flag)
    except RecursionError:
        _fail(path, "", "is nested too deeply to be a stam train checkpoint", flag)
    return ckpt


# --------------------------------------------------------------------------- structure

_KIND = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", type(None): "null",
         dict: "a dict", list: "a list", tuple: "a tuple"}


def _show(v) -> str:
    """A short one-line rendering of a value read from a checkpoint (for an error message)."""
    if torch.is_tensor(v):
        return f"a tensor of shape {tuple(v.shape)}"
    text = repr(v) if isinstance(v, (str, int, float, bool, type(None))) else _kind(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(v) -> str:
    if torch.is_tensor(v):
        return "a tensor"
    if isinstance(v, dict):
        return "a dict"
    return _KIND.get(type(v), type(v).__name__)


def _same_kind(value, like) -> bool:
    """Whether ``value`` has the JSON-like kind of ``like`` (int and float are both numbers; null
    goes with anything, since optional settings are null)."""
    if value is None or like is None:
        return True
    num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
    if num(like):
        return num(value)
    if isinstance(like, dict):
        return isinstance(value, dict)
    if isinstance(like, (list, tuple)):
        return isinstance(value, (list, tuple))
    return type(value) is type(like)


def _tensor_like(value, like, path, field, flag) -> None:
    if not torch.is_tensor(value):
        _fail(path, field, f"must be a tensor, not {_kind(value)}", flag)
    if value.dtype != like.dtype or tuple(value.shape) != tuple(like.shape):
        why = " (the checkpoint does not match the model built from the run's settings)" if field.startswith("model.") else ""
        _fail(path, field, f"is a {value.dtype} tensor of shape {tuple(value.shape)}, expected {like.dtype} of shape "
              f"{tuple(like.shape)}{why}", flag)


def _same_structure(value, like, path, field, flag) -> None:
    """``value`` has exactly the structure of ``like``: the same dict keys, list lengths, tensor
    dtypes and shapes, and scalar kinds."""
    if torch.is_tensor(like):
        return _tensor_like(value, like, path, field, flag)
    if isinstance(like, dict):
        if not isinstance(value, dict):
            _fail(path, field, f"must be a dict, not {_kind(value)}", flag)
        missing, extra = [k for k in like if k not in value], [k for k in value if k not in like]
        if missing or extra:
            what = "; ".join(s for s in (missing and f"missing {', '.join(map(str, missing[:4]))}" + (", ..." if missing[4:] else ""),
                                         extra and f"unexpected {', '.join(map(str, extra[:4]))}" + (", ..." if extra[4:] else "")) if s)
            _fail(path, field, f"does not have the keys of this run's checkpoint ({what})", flag)
        for k in like:
            _same_structure(value[k], like[k], path, f"{field}.{k}", flag)
        return None
    if isinstance(like, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(like):
            got = f"{_kind(value)} of length {len(value)}" if isinstance(value, (list, tuple)) else _kind(value)
            _fail(path, field, f"must be a list of length {len(like)}, not {got}", flag)
        for i, (v, lk) in enumerate(zip(value, like)):
            _same_structure(v, lk, path, f"{field}[{i}]", flag)
        return None
    if not _same_kind(value, like):
        _fail(path, field, f"must be {_kind(like)}, not {_kind(value)}", flag)
    return None


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_config(config, like: dict, path, flag, newer: frozenset = frozenset()) -> None:
    if not isinstance(config, dict):
        _fail(path, "config", f"must be a dict of the run's settings, not {_kind(config)}", flag)
    missing, extra = [k for k in like if k not in config and k not in newer], [k for k in config if k not in like]
    if missing or extra:
        what = "; ".join(s for s in (missing and "missing " + ", ".join(map(str, missing[:6])),
                                     extra and "unexpected " + ", ".join(map(str, extra[:6]))) if s)
        _fail(path, "config", f"does not hold the settings of a stam train run ({what})", flag)
    _json_like(config, path, "config", flag)
    for k, v in like.items():
        if k in config and not _same_kind(config[k], v):
            _fail(path, f"config.{k}", f"must be {_kind(v)}, not {_kind(config[k])}", flag)
    try:
        device = torch.device(config["device"])
    except (RuntimeError, TypeError, ValueError):
        _fail(path, "config.device", f"{_show(config['device'])} is not a device", flag)
    here = torch.device(like["device"])
    if device.type != here.type:
        raise UsageError(f"{flag}: the run was on {config['device']}, this process is on {like['device']}; "
                         "resume on the same kind of device")


def _check_rng(rng, like: dict, device_type: str, path, flag) -> None:
    _same_structure(rng, like, path, "rng", flag)
    for key, states in rng.items():  # a state of the right size may still be refused (e.g. an invalid mt19937)
        on = "cuda" if key == "cuda" else device_type if key == "augment" else "cpu"
        for i, state in enumerate(states if isinstance(states, (list, tuple)) else [states]):
            try:
                torch.Generator(device=on).set_state(state)
            except (RuntimeError, TypeError, ValueError) as exc:
                why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                where = f"rng.{key}" + (f"[{i}]" if isinstance(states, (list, tuple)) else "")
                _fail(path, where, f"is not a valid generator state ({why})", flag)


def _json_like(obj, path, field, flag, depth: int = 0) -> None:
    """``obj`` holds only what JSON can (dicts with string keys, lists, strings, numbers, booleans,
    null): the config and the log records are written out as JSON."""
    if depth > 32:
        _fail(path, field, "is nested too deeply", flag)
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, str):
                _fail(path, field, f"has a key that is not a string ({_kind(k)})", flag)
            _json_like(v, path, f"{field}.{k}", flag, depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _json_like(v, path, f"{field}[{i}]", flag, depth + 1)
    elif not (obj is None or isinstance(obj, (str, bool, int, float))):
        _fail(path, field, f"must hold only JSON values, not {_kind(obj)}", flag)


def _check_log(log, epoch, record_keys: tuple, path, flag, newer: frozenset = frozenset()) -> None:
    if not isinstance(log, list):
        _fail(path, "log", f"must be a list of epoch records, not {_kind(log)}", flag)
    if len(log) != epoch:
        _fail(path, "epoch", f"is {epoch}, but the log holds {len(log)} epoch record(s)", flag)
    for i, r in enumerate(log):
        field = f"log[{i}]"
        if not isinstance(r, dict) or not set(record_keys) - set(newer) <= set(r) <= set(record_keys):
            _fail(path, field, "must be an epoch record with the keys " + ", ".join(record_keys), flag)
        _json_like(r, path, field, flag)
        if not _int(r["epoch"]) or r["epoch"] != i + 1:
            _fail(path, f"{field}.epoch", f"must be {i + 1} (the records are numbered 1, 2, ...), not {_show(r['epoch'])}", flag)
        for k in ("train_loss", "train_acc", "test_acc_binary", "test_acc_float", "seconds"):
            if not _number(r[k]):
                _fail(path, f"{field}.{k}", f"must be a number, not {_kind(r[k])}", flag)
        for k in ("val_acc_binary", "val_acc_float"):
            if r[k] is not None and not _number(r[k]):
                _fail(path, f"{field}.{k}", f"must be a number or null, not {_kind(r[k])}", flag)


def validate(ckpt: dict, expected: Expected, path: Path, flag: str = "--resume") -> None:
    """``ckpt`` has the structure ``expected`` describes (see the module docstring)."""
    template = expected.payload
    missing = [k for k in (*KEYS, "sha256") if k not in ckpt]
    extra = [k for k in ckpt if k not in (*KEYS, "sha256")]
    if missing:
        _fail(path, missing[0], "is missing (not a checkpoint stam train wrote, or damaged)", flag)
    if extra:
        _fail(path, str(extra[0]), "is not a field of a stam train checkpoint", flag)
    _check_config(ckpt["config"], template["config"], path, flag, expected.newer_config)
    epoch = ckpt["epoch"]
    if not _int(epoch) or epoch < 0:
        _fail(path, "epoch", f"must be a non-negative integer, not {_show(epoch)}" + ("" if _int(epoch) else f" ({_kind(epoch)})"), flag)
    _check_log(ckpt["log"], epoch, expected.record_keys, path, flag, expected.newer_records)
    if not _number(ckpt["seconds"]) or not math.isfinite(ckpt["seconds"]) or ckpt["seconds"] < 0:
        _fail(path, "seconds", f"must be a finite number >= 0, not {_show(ckpt['seconds'])}", flag)
    _same_structure(ckpt["model"], template["model"], path, "model", flag)
    _same_structure(ckpt["optimizer"], template["optimizer"], path, "optimizer", flag)
    _check_rng(ckpt["rng"], template["rng"], torch.device(template["config"]["device"]).type, path, flag)
    _same_structure(ckpt["signs"], template["signs"], path, "signs", flag)


__all__ = ["FORMAT", "KEYS", "Expected", "digest", "seal", "write", "load", "verify", "validate", "read", "verified_epoch"]
