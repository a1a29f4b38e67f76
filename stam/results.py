"""Result types: every file the toolkit writes and reads, declared once.

A :class:`ResultType` says what one kind of result file holds: its name (the file's ``"kind"``),
the file names it is written under, every field with a type that says its sense (finite, positive,
a percentage, a count, a name ...), the rules between fields, its format version and, where it has
one, its CSV twin.  Each type is declared in the module that produces it (the theory's, the
synthetic experiments', the networks') and registered as it is defined.  This module is the
machinery only and names none of those modules: the layer that reads results finds them (the
report imports the producers of what it draws, in its order); :func:`result_types` here gives the types declared so far, in the order of their declarations.  The
producer writes through its type (:meth:`ResultType.write`: validated, then atomic), every reader
reads through it (:meth:`ResultType.read`, :meth:`ResultType.validate`), so a file that breaks its
type is one line naming the file and the field, never a traceback.

This module is core: it imports no subpackage, no numpy, no torch.  Accuracies are percentages in
every result file (``PCT``), the unit of the paper's tables.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from stam.errors import MAX_EPOCHS, MAX_WIDTH, UsageError

# A type is a tuple of names of :data:`_IS`; each name says the JSON type AND the sense of the value
# (finite, in range), so that a field is declared once, with its type, where the file's schema is.
NUM = ("number",)  # any number, nan and inf included (a diverged run's loss)
NUM_OR_NULL = ("number", "null")
REAL_OR_NULL = ("real", "null")  # a number that is not nan (inf is an answer: "T_min = inf")
FIN_OR_NULL = ("finite", "null")
POS = ("positive",)
POS_OR_NULL = ("positive", "null")
NONNEG = ("nonneg",)
NONNEG_OR_NULL = ("nonneg", "null")
NONNEG_INF_OR_NULL = ("nonneg_inf", "null")  # >= 0, inf allowed (beyond floating point), not nan
UNSIGNED_OR_NULL = ("unsigned", "null")  # not negative; nan or inf where a run diverged
PCT = ("percent",)  # an accuracy, in percent (every result file)
PCT_OR_NULL = ("percent", "null")
FRAC_OR_NULL = ("fraction", "null")
INT = ("integer",)
INT_OR_NULL = ("integer", "null")
COUNT = ("count",)
COUNT_OR_NULL = ("count", "null")
POSINT = ("posint",)
POSINT_OR_NULL = ("posint", "null")
STR = ("string",)
STR_OR_NULL = ("string", "null")
TEXT = ("text",)  # a string that is not empty
WIDTH = ("width",)  # a channel-width multiplier, as ``--width`` takes it: in (0, MAX_WIDTH]
WIDTH_OR_NULL = ("width", "null")
EPOCHS = ("epochs",)  # a number of epochs, as ``--epochs`` takes it: an integer in [1, MAX_EPOCHS]
EPOCHS_OR_NULL = ("epochs", "null")
NAME = ("name",)  # a data set, model or algorithm name: safe in a file name (stam.io.slug leaves it as it is)
NAME_OR_NULL = ("name", "null")
BOOL = ("boolean",)
BOOL_OR_NULL = ("boolean", "null")
DICT = ("object",)
DICT_OR_NULL = ("object", "null")
LIST = ("list",)
LIST_OR_NULL = ("list", "null")
NONEMPTY_LIST = ("nonempty_list",)
ANY = ("any",)


def _num(v) -> bool:
    """A JSON number as the toolkit writes one: a float, or an integer a float can hold (an integer of 400 digits
    is no number any producer writes, and ``math.isnan`` of it is an OverflowError)."""
    return isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool) and abs(v) <= sys.float_info.max)


def _fin(v) -> bool:
    return _num(v) and math.isfinite(v)


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_IS = {
    "number": _num,
    "real": lambda v: _num(v) and not math.isnan(v),
    "finite": _fin,
    "positive": lambda v: _fin(v) and v > 0,
    "nonneg": lambda v: _fin(v) and v >= 0,
    "nonneg_inf": lambda v: _num(v) and not math.isnan(v) and v >= 0,
    "unsigned": lambda v: _num(v) and not v < 0,
    "percent": lambda v: _fin(v) and 0 <= v <= 100,
    "fraction": lambda v: _fin(v) and 0 <= v <= 1,
    "integer": _int,
    "count": lambda v: _int(v) and v >= 0,
    "posint": lambda v: _int(v) and v >= 1,
    "width": lambda v: _fin(v) and 0 < v <= MAX_WIDTH,
    "epochs": lambda v: _int(v) and 1 <= v <= MAX_EPOCHS,
    "string": lambda v: isinstance(v, str),
    "text": lambda v: isinstance(v, str) and v != "",
    "nonempty_list": lambda v: isinstance(v, list) and len(v) > 0,
    "name": lambda v: isinstance(v, str) and re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,47}", v) is not None,
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "list": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
    "any": lambda v: True,
}
_A = {"number": "a number", "real": "a number (not nan)", "finite": "a finite number", "positive": "a finite number > 0",
      "nonneg": "a finite number >= 0", "nonneg_inf": "a number >= 0", "unsigned": "a number that is not negative",
      "percent": "a percentage in [0, 100]", "fraction": "a fraction in [0, 1]", "integer": "an integer",
      "count": "an integer >= 0", "width": f"a channel-width multiplier in (0, {MAX_WIDTH:g}]",
      "epochs": f"a number of epochs, an integer in [1, {MAX_EPOCHS:,}]", "posint": "an integer >= 1", "string": "a string", "text": "a non-empty string",
      "nonempty_list": "a non-empty list",
      "name": "a name of lower-case letters, digits, - and _ (a data set, model or algorithm)", "boolean": "a boolean",
      "object": "an object", "list": "a list", "null": "null"}
_JSON_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
               float: "a number", type(None): "null"}


# -- consistency between fields: rules of a schema, each ``rule(obj) -> (field, message) or None`` --


def increasing(list_key: str, key: str):
    """``obj[list_key][i][key]`` strictly increasing with ``i`` (horizons T, epochs: each counted once)."""
    def rule(obj):
        rows = obj.get(list_key)
        values = [(i, r.get(key)) for i, r in enumerate(rows or []) if isinstance(r, dict) and _num(r.get(key))]
        for (_, a), (i, b) in zip(values, values[1:]):
            if not b > a:
                return f"{list_key}[{i}].{key}", f"must increase strictly down the list ({shown(b)} after {shown(a)}: each once, in order)"
        return None
    return rule


def distinct(list_key: str, *keys: str, what: str = ""):
    """No two elements of ``obj[list_key]`` with the same values of ``keys`` (a map's cell, an
    algorithm): a producer writes each once, so a repeat is a damaged file (and a reader would count
    it twice, or draw the last one only).  Linear in the rows."""
    def rule(obj):
        seen = {}
        for i, row in enumerate(obj.get(list_key) or []):
            if not isinstance(row, dict):
                continue
            cell = tuple(_key(row.get(k)) for k in keys)
            if cell in seen:
                at = ", ".join(f"{k} = {shown(row.get(k))}" for k in keys)
                return (f"{list_key}[{i}]", f"repeats {what or 'the row'} of {list_key}[{seen[cell]}] ({at}): "
                        "each is written once")
            seen[cell] = i
        return None
    return rule


def _key(value):
    """A hashable stand-in for a JSON value (lists and objects by their JSON text)."""
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def ordered(lo: str, hi: str):
    """``obj[lo] <= obj[hi]`` where both are numbers (an interval, a bracket: hi >= lo)."""
    def rule(obj):
        a, b = obj.get(lo), obj.get(hi)
        if _num(a) and _num(b) and not a <= b:
            return hi, f"must be >= {lo} ({shown(b)} < {shown(a)})"
        return None
    return rule


def at_most(key: str, bound: str, what: str | None = None):
    """``obj[key] <= obj[bound]`` (``bound`` a number, or a list: its length) where both are there."""
    def rule(obj):
        a, b = obj.get(key), obj.get(bound)
        limit = len(b) if isinstance(b, list) else b
        if _num(a) and _num(limit) and not a <= limit:
            return key, f"is {shown(a)}, more than {what or bound} ({shown(limit)})"
        return None
    return rule


def below(key: str, bound: str):
    """``obj[key] < obj[bound]`` where both are numbers (an iteration before the horizon)."""
    def rule(obj):
        a, b = obj.get(key), obj.get(bound)
        if _num(a) and _num(b) and not a < b:
            return key, f"is {shown(a)}, not below {bound} = {shown(b)}"
        return None
    return rule


def one_of(key: str, allowed: tuple):
    """``obj[key]`` one of ``allowed`` where it is there (a source, a rule's kind)."""
    def rule(obj):
        if key in obj and obj[key] not in allowed:
            return key, f"must be one of {', '.join(map(str, allowed))}, not {shown(obj[key])}"
        return None
    return rule


def holds(key: str, test: Callable, message: str):
    """``test(obj)`` true, else ``key`` is named with ``message`` (a rule no helper above says)."""
    def rule(obj):
        return None if test(obj) else (key, message)
    return rule


def only(*keys: str):
    """No key besides ``keys`` (a file written whole by the toolkit and read back as it is, a store:
    a field it never writes is not its file)."""
    def rule(obj):
        extra = next((k for k in obj if k not in keys), None)
        return None if extra is None else (str(extra), "is not a field this toolkit writes there")
    return rule


def each_row(list_key: str, *rules):
    """``rules`` applied to each element of ``obj[list_key]`` that is an object (rows named ``rows[i].``)."""
    def rule(obj):
        for i, row in enumerate(obj.get(list_key) or []):
            for r in rules:
                broken = r(row) if isinstance(row, dict) else None
                if broken is not None:
                    return f"{list_key}[{i}].{broken[0]}", broken[1]
        return None
    return rule


@dataclass(frozen=True)
class Schema:
    """``required`` and ``optional`` keys with their allowed types; ``each`` maps a list-valued key
    to the schema of each of its elements (rows); ``inner`` maps an object-valued key to its own
    schema; ``values`` maps an object-valued key to the schema of each of its values (records by name);
    ``items`` maps a list-valued key to the types of its elements; ``rules`` check the fields
    against each other (run once every field has its type)."""

    required: dict = field(default_factory=dict)
    optional: dict = field(default_factory=dict)
    each: dict = field(default_factory=dict)
    inner: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)
    items: dict = field(default_factory=dict)  # list-valued key -> the types of each of its elements
    rules: tuple = ()  # consistency between fields (:func:`increasing`, :func:`ordered`, :func:`at_most`)



def _json_type(value) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)


def shown(value) -> str:
    """What a value is, for a message: a number as itself (``1e+308``, ``nan``, ``-1``), a short
    string as itself, anything else by its JSON type."""
    if _num(value):
        return repr(value) if abs(value) < 1e16 or not math.isfinite(value) else f"{value:.3g}"
    if isinstance(value, str) and len(value) <= 40:
        return f"a string {value!r}"
    return _json_type(value)



def _types(types) -> str:
    return " or ".join(_A.get(t, t) for t in types)


def bad_file(path, field_: str, message: str, line: int | None = None, damaged: bool = True) -> UsageError:
    """The one-line error for a result file: the file, the line of a JSON-lines file, the field, what is
    wrong (``damaged``: and that the toolkit did not write it so; False for a file of another format)."""
    at = f"line {line}: " if line is not None else ""
    return UsageError(f"{path}: {at}{'field ' + field_ + ' ' if field_ else ''}{message}"
                      + (" (not a file this toolkit wrote, or damaged)" if damaged else ""))


def validate(obj, schema: Schema, path: Path, where: str = "", line: int | None = None) -> None:
    """Check ``obj`` against ``schema``; a :class:`UsageError` naming the file ``path`` (and the
    ``line`` of a JSON-lines file) and the field (``rows[3].T``) that is missing, of the wrong type,
    out of its range or inconsistent with another (the schema's ``rules``)."""
    def fail(field_: str, message: str):
        raise bad_file(path, field_, message, line)

    if not isinstance(obj, dict):
        fail(where.rstrip("."), f"must be an object, not {_json_type(obj)}")
    for key in schema.required:
        if key not in obj:
            fail(f"{where}{key}", "is missing")
    for key, types in {**schema.optional, **schema.required}.items():
        if key in obj and not any(_IS[t](obj[key]) for t in types):
            fail(f"{where}{key}", f"must be {_types(types)}, not {shown(obj[key])}")
    for key, types in schema.items.items():
        if isinstance(obj.get(key), list):
            for i, item in enumerate(obj[key]):
                if not any(_IS[t](item) for t in types):
                    fail(f"{where}{key}[{i}]", f"must be {_types(types)}, not {shown(item)}")
    for key, inner in schema.inner.items():
        if isinstance(obj.get(key), dict):
            validate(obj[key], inner, path, f"{where}{key}.", line)
    for key, each in schema.each.items():
        if isinstance(obj.get(key), list):
            for i, item in enumerate(obj[key]):
                validate(item, each, path, f"{where}{key}[{i}].", line)
    for key, each in schema.values.items():
        if isinstance(obj.get(key), dict):
            for name, item in obj[key].items():
                validate(item, each, path, f"{where}{key}.{name}.", line)
    for rule in schema.rules:
        broken = rule(obj)
        if broken is not None:
            fail(f"{where}{broken[0]}", broken[1])


#: where and with what a file was made (:func:`stam.io.provenance`), in every result file
PROVENANCE = Schema(optional={"created": STR, "host": STR, "machine": STR, "versions": DICT, "cpu": STR, "cpu_isa": STR,
                              "cpus": INT, "cpu_capability": STR, "onednn": STR, "threads": INT, "onednn_max_isa": STR,
                              "gpu": STR})


# -- reading JSON ------------------------------------------------------------------------------------


def _parse(text: str, path: Path, line: int | None = None):
    where = f"line {line}" if line is not None else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = where or f"line {exc.lineno}"
        raise UsageError(f"{path}: not valid JSON ({exc.msg} at {at})") from None
    except RecursionError:
        raise UsageError(f"{path}: {where + ': ' if where else ''}JSON nested too deeply to read") from None


def read_json(path) -> object:
    """A JSON file the user gave: one :class:`UsageError` line when it cannot be read or parsed."""
    from stam.io import read_input_text

    path = Path(path)
    return _parse(read_input_text(path), path)


def read_jsonl(path) -> list:
    """A JSON-lines file; a torn last line (a run still writing) is skipped."""
    from stam.io import read_input_text

    rows = []
    lines = read_input_text(path).splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise UsageError(f"{path}: line {i + 1} is not valid JSON") from None
        except RecursionError:
            raise UsageError(f"{path}: line {i + 1}: JSON nested too deeply to read") from None
    return rows


def rows_csv(rows: list, keys: tuple) -> str:
    """``rows`` as CSV (header ``keys``; empty cells for null or absent values, floats by ``repr``)."""
    lines = [",".join(keys)]
    for row in rows:
        cells = []
        for k in keys:
            v = row.get(k)
            cells.append("" if v is None else repr(float(v)) if isinstance(v, float) else str(v))
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


# -- the result types --------------------------------------------------------------------------------

_REGISTRY: dict[str, "ResultType"] = {}


@dataclass(frozen=True, eq=False)
class ResultType:
    """One kind of result file, declared once in the module that produces it (registered as it is
    made).

    ``name`` is the ``"kind"`` the file holds; ``files`` the names it is written under (a glob,
    for messages and the docs); ``schema`` its fields (``lines``: the schema of each line of a
    JSON-lines file, ``line_rules`` the rules between lines, given the lines as ``{"lines": [...]}``);
    ``list_of`` the schema of each element where the file may be a bare list; ``format`` the
    version of the format (written as ``"format"`` when above 1; a file of an older one goes through
    ``older(obj, path, version)``, which converts it or raises one line naming the old format); ``csv``
    the columns of the CSV twin of its ``rows`` (same stem, written with it); ``aliases`` older
    spellings of its kind and ``recognise(obj)`` a file without a kind that is one; ``found``:
    whether the report's reader picks such files up on their own (False for a
    part of another result or a job file); ``unpack(obj, path) -> (data, meta)`` what readers get (default
    the object itself); ``title(data, path)`` and ``params(data)`` the short name and the
    parameters the report's header shows."""

    name: str
    schema: "Schema"
    files: str = "*.json"
    writer: str = ""
    format: int = 1
    csv: tuple = ()
    lines: bool = False
    line_rules: tuple = ()
    list_of: "Schema | None" = None
    aliases: tuple = ()
    recognise: Callable | None = None
    older: Callable | None = None
    found: bool = True
    unpack: Callable | None = None
    title: Callable | None = None
    params: Callable | None = None
    module: str = field(default="", compare=False)

    def __post_init__(self):
        module = self.module or sys._getframe(2).f_globals.get("__name__", "")
        object.__setattr__(self, "module", module)
        known = _REGISTRY.get(self.name)
        if known is not None and known.module != module:
            raise ValueError(f"result type {self.name!r} is declared twice: in {known.module} and in {module}")
        _REGISTRY[self.name] = self

    # -- checking ----------------------------------------------------------------------------------
    def is_kind(self, obj) -> bool:
        """Whether the parsed file ``obj`` is of this type (its kind, an alias, or recognised)."""
        if isinstance(obj, dict) and (obj.get("kind") == self.name or obj.get("kind") in self.aliases):
            return True
        return self.recognise is not None and bool(self.recognise(obj))

    def validate(self, obj, path, where: str = "", line: int | None = None):
        """``obj`` (converted from an older format where ``older`` does so) if it is of this type;
        otherwise a one-line :class:`UsageError` naming ``path`` and the first bad field."""
        path = Path(path)
        if self.format > 1 and isinstance(obj, dict) and not where:
            version = obj.get("format", 1)
            if version != self.format:
                if not _int(version) or version > self.format or version < 1:
                    raise bad_file(path, "format", f"is {shown(version)}; this toolkit reads {self.name} files of "
                                   f"format 1 to {self.format}", damaged=not _int(version))
                if self.older is not None:
                    obj = self.older(obj, path, version)
        if isinstance(obj, list) and self.list_of is not None:
            for i, item in enumerate(obj):
                validate(item, self.list_of, path, f"{where}[{i}].", line)
            return obj
        validate(obj, self.schema, path, where, line)
        return obj

    def validate_lines(self, rows: list, path) -> list:
        """The lines of a JSON-lines file of this type: each against the schema, then the
        ``line_rules`` (the first broken one names its line)."""
        path = Path(path)
        for i, row in enumerate(rows):
            validate(row, self.schema, path, line=i + 1)
        broken = next(filter(None, (rule({"lines": rows}) for rule in self.line_rules)), None)
        if broken is not None:  # "lines[i].epoch": the line of the file
            i = int(broken[0].split("[")[1].split("]")[0])
            raise bad_file(path, broken[0].split("].", 1)[1], broken[1], line=i + 1)
        return rows

    # -- reading -----------------------------------------------------------------------------------
    def read(self, path):
        """The file ``path`` parsed and checked against this type (the lines of a JSON-lines file)."""
        if self.lines:
            return self.validate_lines(read_jsonl(path), path)
        return self.validate(read_json(path), path)

    # -- writing -----------------------------------------------------------------------------------
    def text(self, obj, path="result") -> str:
        """``obj`` as this type's file text, checked first (a producer's bug is caught before any
        byte is written); the format version is stamped where above 1."""
        from stam.io import dumps

        if self.lines:
            self.validate_lines(list(obj), path)
            return "".join(dumps(r, indent=None) + "\n" for r in obj)
        if self.format > 1 and isinstance(obj, dict):
            obj = {**obj, "format": self.format}
        self.validate(obj, path)
        return dumps(obj) + "\n"

    def write(self, obj, path) -> Path:
        """Write ``obj`` to ``path`` atomically (:func:`stam.io.atomic_write_texts`), checked first;
        a type with a CSV twin writes ``path`` with ``.csv`` beside it: both made and written to
        temporaries before either is renamed into place, the CSV first (so a JSON always has its
        CSV, and a write that fails, a full disk, leaves both as they were).  Returns ``path``."""
        from stam.io import atomic_write_texts

        path = Path(path)
        atomic_write_texts(self.texts(obj, path))
        return path

    def texts(self, obj, path) -> dict:
        """``{path: text}`` of :meth:`write`: the file, and its CSV twin where the type has one (checked first)."""
        path = Path(path)
        text = self.text(obj, path.name)
        return {path: text, **({path.with_suffix(".csv"): rows_csv(obj["rows"], self.csv)} if self.csv else {})}


def declared_so_far() -> tuple:
    """Every result type declared so far (the modules declaring them imported), in the order of their
    declarations.  The reading layer (:func:`stam.figures.results.result_types`) imports every producer
    first and orders them as the report does."""
    return tuple(_REGISTRY.values())


def classify_among(obj, types: tuple) -> ResultType | None:
    """The type among ``types`` of a parsed result file that readers find on their own (``found``), or None
    (:func:`stam.figures.results.classify` asks it of every declared type)."""
    found = [t for t in types if t.found]
    return next((t for t in found if isinstance(obj, dict) and obj.get("kind") in (t.name, *t.aliases)), None) or \
        next((t for t in found if t.recognise is not None and t.recognise(obj)), None)


__all__ = ["WIDTH", "WIDTH_OR_NULL", "EPOCHS", "EPOCHS_OR_NULL", "ResultType", "Schema", "PROVENANCE", "declared_so_far", "classify_among", "validate", "read_json",
           "read_jsonl", "rows_csv", "bad_file", "shown", "increasing", "distinct", "ordered", "at_most", "below", "one_of", "holds", "only", "each_row"]
