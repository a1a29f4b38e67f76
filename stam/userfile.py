"""A user's object from a Python file: ``--problem path/to/file.py:NAME``.

The file is the user's own code, run because they asked for it (``importlib`` from the path, under a
private module name; nothing is added to ``sys.path``).  Every failure is one line
(:class:`stam.errors.UsageError`): a spec without ``:NAME``, a missing file, an error while the
file runs, a missing ``NAME``, an object lacking a method (named).  ``NAME`` may be the object or a
function that builds it (called with the keyword arguments it accepts among those offered).
Imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import traceback
from pathlib import Path

from stam.errors import UsageError


def is_file_spec(text: str) -> bool:
    """Whether ``text`` names a file object (``something.py:NAME``) rather than a built-in name."""
    path, sep, _ = text.rpartition(":")
    return bool(sep) and path.endswith(".py")


def split_spec(text: str, flag: str = "--problem") -> tuple[Path, str]:
    path, sep, name = text.rpartition(":")
    if not sep or not path.endswith(".py"):
        raise UsageError(f"{flag} {text!r}: expected path/to/file.py:NAME")
    if not name.isidentifier():
        raise UsageError(f"{flag} {text!r}: {name!r} is not a Python name (NAME in path/to/file.py:NAME)")
    return Path(path), name


def load_object(text: str, flag: str = "--problem"):
    """``(NAME, object)``: the file of ``path/to/file.py:NAME`` run, and its ``NAME`` as defined
    (an object, or a function that builds one: see :func:`build`)."""
    path, name = split_spec(text, flag)
    if not path.is_file():
        raise UsageError(f"{flag} {text!r}: no such file {str(path)!r}")
    module_name = "stam_user_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{flag} {text!r}: {str(path)!r} cannot be loaded as a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:  # sys.exit() in the user's file ends its loading, not stam
        raise UsageError(f"{flag} {text!r}: {path.name} called sys.exit({exc.code!r}) while it was loaded; "
                         f"a problem file defines {name} and does not exit") from None
    except Exception as exc:  # the user's code: any error becomes one line
        raise UsageError(f"{flag} {text!r}: running {path.name} failed: {type(exc).__name__}: {_line(exc)}") from None
    if not hasattr(module, name):
        raise UsageError(f"{flag} {text!r}: {path.name} defines no {name!r}")
    return name, getattr(module, name)


def _line(exc: BaseException) -> str:
    """An exception's message on one line, at most 300 characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def call(where: str, obj, method: str, *args):
    """``obj.method(*args)``, the user's code, for every command alike: ``SystemExit`` and any
    exception it raises become one :class:`UsageError` line ``WHERE: METHOD() failed: ...``
    (``where``: how to name the object, ``--problem 'FILE.py:NAME'``)."""
    try:
        return getattr(obj, method)(*args)
    except UsageError:
        raise
    except SystemExit as exc:
        raise UsageError(f"{where}: {method}() called sys.exit({exc.code!r}); a problem's methods return values "
                         "and do not exit") from None
    except Exception as exc:  # noqa: BLE001 - the user's code
        raise UsageError(f"{where}: {method}() failed: {type(exc).__name__}: {_line(exc)}") from None


@contextlib.contextmanager
def guard(text: str, flag: str = "--problem"):
    """Run stam on the user's object of ``path/to/file.py:NAME``: ``SystemExit`` raised by the
    user's code (``sys.exit`` in a method) and an exception raised inside the user's file become
    one :class:`UsageError` line naming the file, the function and line, and what was raised;
    stam's own exceptions pass unchanged."""
    path, _ = split_spec(text, flag)
    mine = str(path.resolve())
    try:
        yield
    except UsageError:
        raise
    except (Exception, SystemExit) as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == mine]
        if isinstance(exc, SystemExit):
            where = f" ({frames[-1].name}, line {frames[-1].lineno})" if frames else ""
            raise UsageError(f"{flag} {text!r}: the code of {path.name}{where} called sys.exit({exc.code!r}); "
                             "a problem's methods return values and do not exit") from None
        if not frames:
            raise
        raise UsageError(f"{flag} {text!r}: {frames[-1].name} in {path.name} (line {frames[-1].lineno}) raised "
                         f"{type(exc).__name__}: {_line(exc)}") from None


def accepts(obj, key: str) -> bool:
    """Whether the callable ``obj`` takes the keyword argument ``key``."""
    try:
        return key in inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return False


def build(text: str, name: str, obj, required: tuple[str, ...], flag: str = "--problem", offer: dict | None = None):
    """The object with every attribute in ``required``: ``obj`` itself, or what the function
    ``obj`` returns when called with the keyword arguments it accepts among ``offer``."""
    if callable(obj) and not all(hasattr(obj, r) for r in required):
        kwargs = {k: v for k, v in (offer or {}).items() if accepts(obj, k)}
        with guard(text, flag):
            try:
                obj = obj(**kwargs)
            except Exception as exc:
                raise UsageError(f"{flag} {text!r}: calling {name}({', '.join(kwargs)}) failed: "
                                 f"{type(exc).__name__}: {_line(exc)}") from None
    missing = [r for r in required if not hasattr(obj, r)]
    if missing:
        raise UsageError(f"{flag} {text!r}: {name} lacks the method {missing[0]!r} (needed: {', '.join(required)}; "
                         "build it with stam.synthetic.api.compose)")
    return obj


def load(text: str, required: tuple[str, ...], flag: str = "--problem", offer: dict | None = None):
    """``(NAME, object)`` from ``path/to/file.py:NAME`` (module docstring); the object must have every
    attribute in ``required``."""
    name, obj = load_object(text, flag)
    return name, build(text, name, obj, required, flag, offer)


__all__ = ["is_file_spec", "split_spec", "load", "load_object", "build", "accepts", "guard", "call"]
