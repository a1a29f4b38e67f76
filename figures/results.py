"""Reading the result files the other parts write (formats: COMMON.md, "Result file formats").

:func:`load_results` takes files and directories (searched recursively, e.g. a ``stam demo``
output folder) and sorts what it finds by kind:

- ``synthetic-rates``   (``stam synthetic run``: ``rates-P.json``, with ``rates-P.csv`` beside it)
- ``synthetic-compare`` (``stam synthetic compare``)
- ``train-run``         (a ``stam train --out DIR`` folder: config.json, log.jsonl, summary.json)
- ``pep-sweep``         (``stam pep --sweep-T ... --out FILE``)
- ``paper-check``       (``stam paper-check --out FILE``: {kind, provenance, items}; or the list
                         of findings that ``--json`` prints)
- ``stepsize``          (``stam stepsize --json``: one recommendation object)
- ``lyapunov-region``   (``stam pep --region --out FILE``: certified and refuted gamma per lambda,
                         :func:`stam.theory.lyapunov.region`)
- ``convergence-map``   (``stam map``: ``map-NAME.json`` with ``map-NAME.csv`` beside it; format and
                         validation in :mod:`stam.synthetic.convergence_map`)
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from stam.errors import UsageError
from stam.synthetic.convergence_map import validate_map

KINDS = ("paper-check", "stepsize", "synthetic-rates", "synthetic-compare", "pep-sweep", "train-run", "convergence-map",
         "tune", "lyapunov-region")


@dataclass
class Result:
    """One result: its kind, its parsed content, and the files it came from (for the data links)."""

    kind: str
    data: object
    path: Path
    files: list[Path] = field(default_factory=list)
    meta: dict = field(default_factory=dict)  # provenance of a result whose data is a list

    @property
    def provenance(self) -> dict:
        if "provenance" in self.meta:
            return self.meta["provenance"] or {}
        if isinstance(self.data, dict):
            prov = self.data.get("provenance")
            if prov is None and self.kind == "train-run":
                prov = (self.data.get("summary") or {}).get("provenance") or (self.data.get("config") or {}).get(
                    "provenance"
                )
            return prov or {}
        return {}

    @property
    def name(self) -> str:
        """A short human name for headers and titles."""
        d = self.data if isinstance(self.data, dict) else {}
        if self.kind == "synthetic-rates":
            preset = (d.get("params") or {}).get("preset")
            return f"synthetic rates: {d.get('problem', self.path.stem)}" + (f" at {preset}" if preset else "")
        if self.kind == "synthetic-compare":
            return f"synthetic comparison: {d.get('problem', self.path.stem)}"
        if self.kind == "convergence-map":
            return f"convergence map: {d.get('source')} {d.get('problem', self.path.stem)}"
        if self.kind == "pep-sweep":
            return f"PEP sweep: lambda={d.get('lam')}, gamma={d.get('gamma')}, beta={d.get('beta')}"
        if self.kind == "train-run":
            s = d.get("summary") or {}
            from stam.figures.style import run_label

            copy = " (JPEG copy)" if (s.get("data_source") or {}).get("kind") == "jpeg-copy" else ""
            return f"{s.get('model', '?')} on {s.get('dataset', '?')}{copy}, {run_label(s.get('algo', '?'), s.get('preset'), s.get('label'))}"
        return f"{self.kind}: {self.path.name}"


@dataclass
class ResultSet:
    """Results sorted by kind (lists keep the order in which they were found)."""

    by_kind: dict[str, list[Result]] = field(default_factory=lambda: {k: [] for k in KINDS})

    def __getitem__(self, kind: str) -> list[Result]:
        return self.by_kind[kind]

    def all(self) -> list[Result]:
        return [r for k in KINDS for r in self.by_kind[k]]

    def add(self, result: Result) -> None:
        self.by_kind[result.kind].append(result)


# -- what each kind of file must hold ------------------------------------------------------------
#
# ONE declarative schema per kind of file this module reads, written from what its producer writes
# (synthetic/rates.py, synthetic/baselines.py, theory/pep.py, theory/audit.py, theory/numeric.py,
# dnn/train.py): the keys that must be there and the type of every key that is read.  A file that
# breaks it is a one-line usage error naming the file and the field, never a traceback or an empty
# table.  Keys not listed are carried along unread.

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
PCT_OR_NULL = ("percent", "null")  # an accuracy in percent
FRAC_OR_NULL = ("fraction", "null")
INT = ("integer",)
INT_OR_NULL = ("integer", "null")
COUNT = ("count",)
COUNT_OR_NULL = ("count", "null")
POSINT = ("posint",)
POSINT_OR_NULL = ("posint", "null")
STR = ("string",)
STR_OR_NULL = ("string", "null")
NAME = ("name",)  # a data set, model or algorithm name: safe in a file name (stam.io.slug leaves it as it is)
NAME_OR_NULL = ("name", "null")
BOOL = ("boolean",)
BOOL_OR_NULL = ("boolean", "null")
DICT = ("object",)
DICT_OR_NULL = ("object", "null")
LIST = ("list",)
LIST_OR_NULL = ("list", "null")
ANY = ("any",)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


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
    "string": lambda v: isinstance(v, str),
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
      "count": "an integer >= 0", "posint": "an integer >= 1", "string": "a string",
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
                return f"{list_key}[{i}].{key}", f"must increase strictly down the list ({_shown(b)} after {_shown(a)}: each once, in order)"
        return None
    return rule


def ordered(lo: str, hi: str):
    """``obj[lo] <= obj[hi]`` where both are numbers (an interval, a bracket: hi >= lo)."""
    def rule(obj):
        a, b = obj.get(lo), obj.get(hi)
        if _num(a) and _num(b) and not a <= b:
            return hi, f"must be >= {lo} ({_shown(b)} < {_shown(a)})"
        return None
    return rule


def at_most(key: str, bound: str, what: str | None = None):
    """``obj[key] <= obj[bound]`` (``bound`` a number, or a list: its length) where both are there."""
    def rule(obj):
        a, b = obj.get(key), obj.get(bound)
        limit = len(b) if isinstance(b, list) else b
        if _num(a) and _num(limit) and not a <= limit:
            return key, f"is {_shown(a)}, more than {what or bound} ({_shown(limit)})"
        return None
    return rule


def below(key: str, bound: str):
    """``obj[key] < obj[bound]`` where both are numbers (an iteration before the horizon)."""
    def rule(obj):
        a, b = obj.get(key), obj.get(bound)
        if _num(a) and _num(b) and not a < b:
            return key, f"is {_shown(a)}, not below {bound} = {_shown(b)}"
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


PROVENANCE = Schema(optional={"created": STR, "host": STR, "machine": STR, "versions": DICT})
#: a constant with its label (ThreeBlockProblem.constants_report): certified, or estimated with its estimator
LABELLED = Schema(required={"status": STR}, optional={"value": NUM_OR_NULL, "how": STR, "settings": STR})
RATES_ROW = Schema(
    required={"T": POSINT, "S_min_mean": NONNEG_OR_NULL},
    optional={"gamma": POS, "beta": POS, "admissible": BOOL, "S_min_std": NONNEG_OR_NULL, "S_min_lo": NONNEG_OR_NULL,
              "S_min_hi": NONNEG_OR_NULL, "S_min_se": NONNEG_OR_NULL, "bound": NONNEG_OR_NULL, "ratio": NONNEG_OR_NULL,
              "t_star": COUNT_OR_NULL, "S_0_mean": NONNEG_OR_NULL, "S_final_mean": NONNEG_OR_NULL, "nonfinite": COUNT_OR_NULL},
    rules=(ordered("S_min_lo", "S_min_hi"), below("t_star", "T")),
)
#: a certified or refuted interval of gamma (stam.theory.lyapunov): hi >= lo
BRACKET = Schema(required={"lo": POS_OR_NULL, "hi": POS_OR_NULL},
                 optional={"beta": POS_OR_NULL, "rho": NONNEG_OR_NULL, "statuses": DICT, "solves": COUNT,
                           "slowest_solve": NONNEG},
                 rules=(ordered("lo", "hi"),))
REGION_ROW = Schema(required={"lam": POS, "gamma_theorem": NONNEG, "general": DICT, "paper": DICT, "refuted": DICT},
                    optional={"seconds": NONNEG}, inner={"general": BRACKET, "paper": BRACKET, "refuted": BRACKET})
#: a worst case of min_t S_t (>= 0) beside the theorem's bound
PEP_ROW = Schema(required={"T": POSINT},
                 optional={"worst_case": NONNEG_OR_NULL, "bound": NONNEG_OR_NULL, "ratio": NONNEG_OR_NULL, "status": STR})
RATES_PARAMS = Schema(optional={"R": POSINT, "seeds": ANY, "preset": STR_OR_NULL, "lam": POS_OR_NULL,
                                "gamma_rule": STR_OR_NULL, "beta_rule": STR_OR_NULL, "problem": STR})
COMPARE_ROW = Schema(required={"method": STR},
                     optional={"iterations": COUNT_OR_NULL, "grad_evals": NONNEG_OR_NULL, "final_S": UNSIGNED_OR_NULL,
                               "objective": NUM_OR_NULL, "quantised_objective": NUM_OR_NULL, "wall_time": NONNEG_OR_NULL})
FINDING = Schema(required={"label": STR, "verdict": STR},
                 optional={"printed": STR_OR_NULL, "derived": STR_OR_NULL, "counterexample": DICT_OR_NULL, "note": STR})
#: the fresh-seed runs of a tuned or paper setting: test accuracies in percent, their summary
FINAL = Schema(required={"test_acc": LIST, "diverged": COUNT},
               optional={"mean": PCT_OR_NULL, "std": NONNEG_OR_NULL, "ci95": LIST_OR_NULL, "n": COUNT, "seeds": LIST,
                         "val_acc": LIST, "test_acc_final_epoch": LIST, "selected_epoch": LIST},
               items={"test_acc": PCT_OR_NULL, "ci95": PCT_OR_NULL, "val_acc": PCT_OR_NULL, "test_acc_final_epoch": PCT_OR_NULL,
                      "selected_epoch": POSINT_OR_NULL, "seeds": COUNT},
               rules=(at_most("diverged", "test_acc", "the runs"), at_most("n", "test_acc", "the runs")))
#: one trial of a tuning: its validation score (percent), the epoch chosen on it
TRIAL = Schema(optional={"overrides": DICT, "score": PCT_OR_NULL, "selected_epoch": POSINT_OR_NULL,
                         "diverged_epoch": POSINT_OR_NULL})
TUNED = Schema(required={"algo": NAME, "label": STR, "trials": LIST}, optional={"best": DICT_OR_NULL, "final": DICT, "space": DICT},
               inner={"final": FINAL, "best": TRIAL}, each={"trials": TRIAL})
PAPER_ROW = Schema(required={"algo": NAME, "preset": STR, "label": STR, "final": DICT}, inner={"final": FINAL})
RUN_KEYS = {"kind": STR, "status": STR, "model": NAME, "model_name": STR_OR_NULL, "dataset": NAME, "algo": NAME,
            "preset": STR_OR_NULL, "label": STR_OR_NULL, "seed": COUNT_OR_NULL, "epochs": COUNT_OR_NULL,
            "epochs_planned": COUNT_OR_NULL, "seconds": NONNEG_OR_NULL, "best_test_acc_binary": PCT_OR_NULL,
            "best_test_acc_float": PCT_OR_NULL, "best_epoch_binary": POSINT_OR_NULL, "best_epoch_float": POSINT_OR_NULL,
            "final_test_acc_binary": PCT_OR_NULL, "final_test_acc_float": PCT_OR_NULL, "provenance": DICT_OR_NULL,
            "selected_epoch": POSINT_OR_NULL, "selected_val_acc_binary": PCT_OR_NULL, "selected_val_acc_float": PCT_OR_NULL,
            "selected_test_acc_binary": PCT_OR_NULL, "selected_test_acc_float": PCT_OR_NULL, "data_source": DICT_OR_NULL,
            "width": POS}
#: where a run's data came from (stam.dnn.data.ImageData.source): kind official, jpeg-copy, image-folder, scikit-learn
DATA_SOURCE = Schema(required={"kind": STR},
                     optional={"file": STR_OR_NULL, "sha256": STR_OR_NULL, "hash_of": STR_OR_NULL, "note": STR_OR_NULL,
                               "formats": LIST, "jpeg_quality": INT_OR_NULL, "chroma_subsampling": STR_OR_NULL})
#: a training run's epochs: numbered from 1, accuracies in percent (the loss of a diverged run may be nan)
LOG_ROW = Schema(optional={"epoch": POSINT, "paper_epoch": NONNEG_OR_NULL, "train_loss": NUM_OR_NULL,
                           "train_acc": PCT_OR_NULL, "test_acc_binary": PCT_OR_NULL, "test_acc_float": PCT_OR_NULL,
                           "val_acc_binary": PCT_OR_NULL, "val_acc_float": PCT_OR_NULL,
                           "hyper": DICT_OR_NULL, "proxy_grad": NUM_OR_NULL, "proxy_z": NUM_OR_NULL, "theorem": DICT_OR_NULL,
                           "seconds": NONNEG_OR_NULL},
                 inner={"hyper": Schema(optional={"gamma": NONNEG_OR_NULL, "lam": NONNEG_OR_NULL, "beta": NONNEG_OR_NULL}),
                        "theorem": Schema(optional={"admissible": BOOL_OR_NULL})})
#: what a job of stam tune and stam map returns (stam.dnn.sweep.run_job), as its job file stores it
JOB_ROW = Schema(required={"score": PCT_OR_NULL, "selected_epoch": POSINT_OR_NULL, "diverged_epoch": POSINT_OR_NULL},
                 optional={"seconds": NONNEG_OR_NULL, "val_curve": LIST, "sign_ever": FRAC_OR_NULL, "test_acc": PCT_OR_NULL,
                           "test_acc_final": PCT_OR_NULL},
                 items={"val_curve": PCT_OR_NULL})

SCHEMAS = {
    "synthetic-rates": Schema(
        required={"rows": LIST},
        optional={"kind": STR, "problem": STR, "params": DICT, "constants": DICT, "slope": FIN_OR_NULL,
                  "bound_slope": FIN_OR_NULL, "slope_tail": FIN_OR_NULL, "bound_slope_tail": FIN_OR_NULL,
                  "details": LIST, "pep": DICT_OR_NULL, "provenance": DICT_OR_NULL, "constant_status": DICT},
        each={"rows": RATES_ROW}, values={"constant_status": LABELLED},
        inner={"params": RATES_PARAMS, "provenance": PROVENANCE,
               "pep": Schema(required={"rows": LIST}, optional={"kind": STR}, each={"rows": PEP_ROW},
                             rules=(increasing("rows", "T"),))},
        rules=(increasing("rows", "T"),),
    ),
    "synthetic-compare": Schema(required={"rows": LIST},
                                optional={"kind": STR, "problem": STR, "params": DICT, "provenance": DICT_OR_NULL},
                                each={"rows": COMPARE_ROW}, inner={"provenance": PROVENANCE}),
    # `stam pep --sweep-T ... --out FILE`: lambda finite and > 0, horizons each once, increasing
    "pep-sweep": Schema(required={"rows": LIST, "lam": POS, "gamma": POS, "beta": POS},
                        optional={"kind": STR, "L1": POS, "free_start": BOOL, "admissible": BOOL,
                                  "provenance": DICT_OR_NULL},
                        each={"rows": PEP_ROW}, inner={"provenance": PROVENANCE}, rules=(increasing("rows", "T"),)),
    # `stam pep --region --out FILE` (stam.theory.lyapunov.region)
    "lyapunov-region": Schema(required={"rows": LIST, "L1": POS},
                              optional={"kind": STR, "betas": LIST, "gamma_range": LIST, "rtol": POS, "refute_Ts": LIST,
                                        "refute_betas": LIST, "seconds": NONNEG, "provenance": DICT_OR_NULL},
                              each={"rows": REGION_ROW}, inner={"provenance": PROVENANCE},
                              items={"betas": ("positive",), "gamma_range": ("positive",), "refute_Ts": ("posint",),
                                     "refute_betas": ("positive",)}),
    # `stam paper-check --out FILE` ({kind, provenance, items}); the list `--json` prints is checked
    # element by element against FINDING
    "paper-check": Schema(optional={"kind": STR, "items": LIST, "findings": LIST, "provenance": DICT_OR_NULL,
                                    "coverage": DICT},
                          each={"items": FINDING, "findings": FINDING},
                          inner={"provenance": PROVENANCE,
                                 "coverage": Schema(required={"audited": COUNT, "total": COUNT}, optional={"missing": LIST},
                                                    rules=(at_most("audited", "total", "the labels"),))}),
    # `stam stepsize --json`: numeric.recommend's object (inf where a bound is beyond floating point)
    "stepsize": Schema(required={"gamma_max": NONNEG_INF_OR_NULL, "beta_min": NONNEG_INF_OR_NULL, "binding": STR},
                       optional={"kind": STR, "gamma": POS_OR_NULL, "K1": REAL_OR_NULL, "K2": REAL_OR_NULL,
                                 "K3": REAL_OR_NULL, "M": REAL_OR_NULL, "L": REAL_OR_NULL, "T_min": NONNEG_INF_OR_NULL,
                                 "provenance": DICT_OR_NULL, "constants": DICT},
                       inner={"provenance": PROVENANCE}, values={"constants": LABELLED},
                       rules=(at_most("gamma", "gamma_max"),)),
    # `stam tune`: OUT/tune-digits.json
    "tune": Schema(required={"params": DICT, "algorithms": LIST, "paper_rows": LIST},
                   optional={"kind": STR, "dataset": NAME, "model": NAME, "width": POS, "data_source": DICT_OR_NULL,
                             "protocol": STR, "provenance": DICT_OR_NULL},
                   each={"algorithms": TUNED, "paper_rows": PAPER_ROW},
                   inner={"params": Schema(required={"trials": POSINT, "seeds": POSINT, "epochs": POSINT, "batch_size": POSINT}),
                          "provenance": PROVENANCE, "data_source": DATA_SOURCE}),
    # the three files of a `stam train --out DIR` folder
    "summary.json": Schema(required={"model": NAME}, optional=RUN_KEYS, inner={"provenance": PROVENANCE, "data_source": DATA_SOURCE}),
    "config.json": Schema(optional=dict(RUN_KEYS, epochs=POSINT), inner={"provenance": PROVENANCE, "data_source": DATA_SOURCE}),
    # one line; the lines' epochs increase strictly (load_run: LOG_LINES)
    "log.jsonl": LOG_ROW,
    # a job file's result (STORE/<key>.json of stam.jobs) for the trainings of stam tune and stam map
    "network-job": Schema(required={"rows": LIST}, each={"rows": JOB_ROW}),
}
#: the lines of a log.jsonl, as a list: each epoch once, in order
LOG_LINES = Schema(rules=(increasing("lines", "epoch"),))


def _json_type(value) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _shown(value) -> str:
    """What a value is, for a message: a number as itself (``1e+308``, ``nan``, ``-1``), a short
    string as itself, anything else by its JSON type."""
    if _num(value):
        return repr(value) if abs(value) < 1e16 or not math.isfinite(value) else f"{value:.3g}"
    if isinstance(value, str) and len(value) <= 40:
        return f"a string {value!r}"
    return _json_type(value)


def _types(types) -> str:
    return " or ".join(_A.get(t, t) for t in types)


def validate(obj, schema: Schema, path: Path, where: str = "", line: int | None = None) -> None:
    """Check ``obj`` against ``schema``; a :class:`UsageError` naming the file ``path`` (and the
    ``line`` of a JSON-lines file) and the field (``rows[3].T``) that is missing, of the wrong type,
    out of its range or inconsistent with another (the schema's ``rules``)."""
    def fail(field_: str, message: str):
        at = f"line {line}: " if line is not None else ""
        raise UsageError(f"{path}: {at}{'field ' + field_ + ' ' if field_ else ''}{message} (not a file this toolkit "
                         "wrote, or damaged)")

    if not isinstance(obj, dict):
        fail(where, f"must be an object, not {_json_type(obj)}")
    for key in schema.required:
        if key not in obj:
            fail(f"{where}{key}", "is missing")
    for key, types in {**schema.optional, **schema.required}.items():
        if key in obj and not any(_IS[t](obj[key]) for t in types):
            fail(f"{where}{key}", f"must be {_types(types)}, not {_shown(obj[key])}")
    for key, types in schema.items.items():
        if isinstance(obj.get(key), list):
            for i, item in enumerate(obj[key]):
                if not any(_IS[t](item) for t in types):
                    fail(f"{where}{key}[{i}]", f"must be {_types(types)}, not {_shown(item)}")
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


def _read_text(path: Path) -> str:
    from stam.io import read_input_text

    return read_input_text(path)


def _parse(text: str, path: Path, line: int | None = None):
    where = f"line {line}" if line is not None else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = where or f"line {exc.lineno}"
        raise UsageError(f"{path}: not valid JSON ({exc.msg} at {at})") from None
    except RecursionError:
        raise UsageError(f"{path}: {where + ': ' if where else ''}JSON nested too deeply to read") from None


def _read_json(path: Path):
    return _parse(_read_text(path), path)


def read_jsonl(path: Path) -> list[dict]:
    """A JSON-lines file; a torn last line (a run still writing) is skipped."""
    rows = []
    lines = _read_text(path).splitlines()
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


def classify(obj) -> str | None:
    """The kind of a parsed JSON result, or None if it is not one this module reads."""
    if isinstance(obj, dict):
        kind = obj.get("kind")
        if kind in KINDS:
            return kind
        if kind in ("paper-check", "paper_check") or isinstance(obj.get("items", obj.get("findings")), list):
            return "paper-check"
        if kind in ("stepsize", "stepsize-recommendation") or {"gamma_max", "beta_min", "binding"} <= obj.keys():
            return "stepsize"
        return None
    if isinstance(obj, list) and obj and all(isinstance(x, dict) and {"label", "verdict"} <= x.keys() for x in obj):
        return "paper-check"
    return None


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and ((path / "summary.json").is_file() or (path / "log.jsonl").is_file())


def load_run(path: Path) -> Result:
    """A ``stam train --out DIR`` folder: config, per-epoch log and summary (missing parts empty)."""
    data = {"config": {}, "log": [], "summary": {}}
    files = []
    for name, key in (("config.json", "config"), ("summary.json", "summary")):
        if (path / name).is_file():
            data[key] = _read_json(path / name)
            validate(data[key], SCHEMAS[name], path / name)
            files.append(path / name)
    if (path / "log.jsonl").is_file():
        data["log"] = read_jsonl(path / "log.jsonl")
        for i, row in enumerate(data["log"]):
            validate(row, SCHEMAS["log.jsonl"], path / "log.jsonl", line=i + 1)
        broken = next(filter(None, (rule({"lines": data["log"]}) for rule in LOG_LINES.rules)), None)
        if broken is not None:  # "lines[i].epoch": the line of the file
            i = int(broken[0].split("[")[1].split("]")[0])
            validate({}, Schema(rules=(lambda _: ("epoch", broken[1]),)), path / "log.jsonl", line=i + 1)
        files.append(path / "log.jsonl")
    if not files[-1:] or "model" not in data["summary"] and "model" not in data["config"]:
        where = path / ("summary.json" if (path / "summary.json").is_file() else "config.json")
        raise UsageError(f"{where}: field model is missing (a `stam train --out` folder names its model in "
                         "config.json and summary.json)")
    summary = data["summary"]
    config = data["config"]
    for key in ("model", "dataset", "algo", "preset", "label", "data_source"):  # a run still in progress has no summary yet
        if key not in summary and key in config:
            summary[key] = config[key]
    return Result("train-run", data, path, files)


def load_file(path: Path, *, strict: bool = True) -> Result | None:
    """One JSON result file; unknown content is an error when ``strict`` (the user named it)."""
    obj = _read_json(path)
    kind = classify(obj)
    if kind is None:
        if strict:
            raise UsageError(
                f"{path}: not a result this command reads (expected one of: {', '.join(KINDS)}; "
                "a train run is given as its folder)"
            )
        return None
    meta = {}
    if isinstance(obj, dict) and kind in SCHEMAS:  # convergence-map: validate_map below, beside its writer
        validate(obj, SCHEMAS[kind], path)
    if kind == "paper-check" and isinstance(obj, dict):  # `stam paper-check --out FILE`: {kind, provenance, items}
        meta = {"provenance": obj.get("provenance"), "coverage": obj.get("coverage")}
        obj = obj.get("items", obj.get("findings"))
        if obj is None:
            raise UsageError(f"{path}: field items is missing (a paper-check result lists its findings there)")
    if kind == "paper-check":
        for i, finding in enumerate(obj):
            validate(finding, FINDING, path, f"[{i}].")
    if kind == "convergence-map":
        validate_map(obj, path)
    files = [path]
    csv = path.with_suffix(".csv")
    if kind in ("synthetic-rates", "convergence-map") and csv.is_file():
        files.append(csv)
    return Result(kind, obj, path, files, meta)


def load_results(paths) -> ResultSet:
    """Load every result under ``paths`` (files or folders, folders searched recursively)."""
    results = ResultSet()
    seen: set[Path] = set()

    def visit(path: Path, strict: bool) -> None:
        real = path.resolve()
        if real in seen:
            return
        seen.add(real)
        if is_run_dir(path):
            results.add(load_run(path))
        elif path.is_dir():
            # a report folder (e.g. a `stam demo` output) holds copies of its inputs in data/: skip them
            copies = {"data", "figures", "tables"} if (path / "report.html").is_file() else set()
            for child in sorted(path.iterdir()):
                if child.name.startswith(".") or child.name in copies:
                    continue
                if child.is_dir() or child.suffix == ".json":
                    visit(child, strict=False)
        elif path.is_file():
            if path.suffix not in (".json", ""):
                if strict:
                    raise UsageError(f"{path}: expected a .json result file or a folder")
                return
            result = load_file(path, strict=strict)
            if result is not None:
                results.add(result)
        else:
            raise UsageError(f"{path}: no such file or folder")

    for p in paths:
        visit(Path(p), strict=True)
    return results


def finite(x) -> bool:
    """True for a real finite number (None, NaN and inf are not)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
