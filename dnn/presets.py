"""The paper's hyperparameter settings (Table para, Section sub:3.3) as named presets.

The settings themselves are data, in ``presets.json`` next to this module; this module reads
them and evaluates their epoch-based schedules.  Epochs count from 1 as in Table para.

Schedule language.  A hyperparameter is either a number (constant) or a list of *pieces*
``{"from": e0, "value": v0, "decay": {...}}``; the last piece with ``from <= epoch`` applies.
Without ``decay`` the piece is the constant ``v0``.  With ``decay = {factor, start, every, until,
min, max}`` (``factor`` a number, or ``"stam.steps:BR_RHO"``: a constant of the paper read
where it is defined) the value at epoch ``e`` is ``clip(v0 * factor**n, min, max)`` where ``n`` counts the
epochs ``start, start + every, ... <= min(e, until)`` (defaults ``start = from + 1``,
``every = 1``, no ``until``, no clipping).  Since ``max(f*g, m)`` iterated equals
``max(f**n * g, m)``, this closed form is exactly Table para's recursions
``gamma = max(0.995 gamma, 0.3)`` etc., and the hyperparameters of any epoch follow from the
epoch alone (nothing to carry across a ``--resume``).  A value may also be
``{"cifar100": v, "default": w}`` (per-data-set constant, e.g. BR's switch epoch K).

Warm-up and cosine (beyond the paper, :data:`STEP_SCHEDULES`).  Instead of ``decay`` a piece may
carry ``"warmup_cosine": {"warmup": W, "until": U, "floor": f, "power": k}`` (paper epochs ``W >= 0``,
``U > W``, counted from the piece's ``from``; ``0 <= f <= 1``; ``k`` a number != 0, ``f > 0`` when
``k < 0``): the value at time ``t`` is ``v0 * m(t)**k`` with the multiplier ``m(t) = t/W`` for
``t < W`` (linear warm-up) and ``f + (1 - f)(1 + cos(pi min(1, (t - W)/(U - W))))/2`` after it
(cosine decay to ``f``).  ``t`` is real: the centre of the run epoch's interval of paper epochs
(below), ``(e - 1/2)/s - (from - 1)``, so the same shape, scaled onto a run of ``E`` epochs, warms up
over the first ``W/1000`` of the run and decays over the rest, at any ``E`` (epoch 1 of a short run
is not spent at a tiny warm-up value).  ``k = 1`` shapes a step (``lr``), ``k = -1`` the inverse of
one (STAM's ``beta``, whose y-step is ``1/beta``).

Short runs.  ``schedule_scale = s`` maps the 1000-epoch schedule proportionally onto a run of
``1000 s`` epochs (``s = "auto"`` picks ``s = epochs / 1000``): run epoch ``e`` stands for the
paper epochs in ``((e - 1)/s, e/s]`` and runs with the hyperparameters of the first of them,
*paper epoch* ``p(e) = floor((e - 1)/s) + 1``.  So a run starts where the paper starts
(``p(1) = 1``: the first stage of a preset always runs, however short the run) and a threshold
at paper epoch ``E`` takes effect in the run epoch whose interval contains ``E``; with ``s = 1``,
``p(e) = e``.  BR's second phase starts at the first epoch with ``p(e) > K``.

Stage changes (Our3, ``our3-cifar100``): a value *set* at the start of a stage holds in that
stage's first epoch and decays from the next (Table para: "gamma = 15 (epoch = 81)"); beta,
which carries over from the first stage, decays from the second stage's first epoch (Table
para: "if epoch <= 80: 1e3, else max(0.9999 beta, 920)").
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from stam.dnn.catalog import ALGORITHMS, algorithm
from stam.errors import MAX_EPOCHS, UsageError
from stam.registry import load

#: The hyperparameters each algorithm's optimiser takes from the schedule, as the algorithm
#: declares them (:mod:`stam.dnn.catalog`; BR also gets the phase switch ``project`` from
#: ``switch_epoch``).
ALGO_HYPER = {a.name: a.hyper for a in ALGORITHMS}

#: Hyperparameters that must be > 0 (the others must be >= 0), and those that are epoch numbers.
POSITIVE = {"gamma", "lam", "beta", "lr", "switch_epoch"}
INTEGER = {"switch_epoch"}


def _named(obj, resolve):
    """``obj`` with every decay ``factor`` that is a string replaced by ``resolve(string)``."""
    if isinstance(obj, dict):
        return {k: resolve(v) if k == "factor" and isinstance(v, str) else _named(v, resolve) for k, v in obj.items()}
    return [_named(v, resolve) for v in obj] if isinstance(obj, list) else obj


#: the constants of the paper ``presets.json`` names (``"module:NAME"`` -> value), filled by :func:`table`
_NAMED: dict = {}


@lru_cache(maxsize=1)
def table() -> dict:
    """The parsed ``presets.json``, a decay ``factor`` given as ``"module:NAME"`` (a constant of the
    paper, e.g. ``"stam.steps:BR_RHO"``) replaced by its value."""
    def resolve(ref):
        return _NAMED.setdefault(ref, load(ref))

    return _named(json.loads(resources.files("stam.dnn").joinpath("presets.json").read_text(encoding="utf-8")), resolve)


def named_constants(obj, where: str):
    """``obj`` (a user's schedule or search spaces) with each decay ``factor`` given as ``"module:NAME"``
    replaced by its value as :func:`table` replaces those of ``presets.json`` (so a copy of its
    ``"stam.steps:BR_RHO"`` means what it means there); only the constants ``presets.json`` names,
    nothing else is imported: another string is a one-line :class:`UsageError` naming ``where``."""
    table()

    def resolve(ref):
        if ref not in _NAMED:
            raise UsageError(f"{where}: decay factor {ref!r} must be a number or a constant of the paper that presets.json "
                             f"names ({', '.join(map(repr, _NAMED))})")
        return _NAMED[ref]

    try:
        return _named(obj, resolve)
    except RecursionError:
        raise UsageError(f"{where}: nested too deeply to read") from None


def names() -> list[str]:
    return list(table()["presets"])


def paper_epochs() -> int:
    """The epochs of the paper's runs (``presets.json``'s defaults: 1000)."""
    return int(table()["defaults"]["epochs"])


def paper_batch_size() -> int:
    """The minibatch size of the paper's runs (``presets.json``'s defaults: 128)."""
    return int(table()["defaults"]["batch_size"])


def columns() -> list[str]:
    """The labels of the presets in the order ``presets.json`` lists them: the columns of the
    paper's tables (Float, PSGD, BC, BR, Our1, Our2, Our3)."""
    return list(dict.fromkeys(p["label"] for p in table()["presets"].values()))


def algorithm_order() -> list[str]:
    """The algorithms in the order of the paper's table columns (:func:`columns`)."""
    return list(dict.fromkeys(p["algo"] for p in table()["presets"].values()))


def paper_results() -> dict:
    return table()["paper_results"]


def default_preset(algo: str, dataset: str) -> str:
    """The preset ``stam train --algo ALGO`` runs on ``dataset`` when no ``--preset`` is given, derived:
    the paper preset its rule declares (:attr:`stam.rules.UpdateRule.paper_preset`, a name or per data
    set ``{"cifar100": name, "default": name}``: STAM's Our3), else the one preset whose ``algo`` is
    ``algo`` (BC's ``bc``, ...).  A :class:`UsageError` naming the candidates where that is not one
    (a rule with several presets declares which is its own), or where the declared preset is not one
    of ``algo``'s."""
    presets = table()["presets"]
    candidates = [n for n, e in presets.items() if e["algo"] == algo]
    declared = algorithm(algo).paper_preset
    if declared is None:
        if len(candidates) != 1:
            raise UsageError(f"algorithm {algo} has {'no preset' if not candidates else 'presets ' + ', '.join(candidates)} in "
                             "presets.json; give it exactly one, or declare which is its default (its rule's paper_preset)")
        return candidates[0]
    name = _per_dataset(declared, dataset)
    if name not in candidates:
        raise UsageError(f"the paper preset {name!r} that the rule {algo} declares is not one of its presets in presets.json "
                         f"({', '.join(candidates) or 'none'})")
    return name


# --------------------------------------------------------------------------- schedule evaluation

def _per_dataset(value, dataset: str):
    if isinstance(value, dict):
        return value.get(dataset, value["default"])
    return value


def shape_multiplier(shape: dict, t: float) -> float:
    """The multiplier ``m(t)`` of a ``warmup_cosine`` piece (module docstring) at ``t`` paper epochs
    into the piece: linear warm-up over ``warmup``, then cosine decay to ``floor`` at ``until``."""
    warmup, until, floor = float(shape.get("warmup", 0.0)), float(shape["until"]), float(shape.get("floor", 0.0))
    if t < warmup:
        return max(t, 0.0) / warmup
    x = min(1.0, (t - warmup) / (until - warmup))
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * x))


def value_at(spec, epoch: int, dataset: str = "default", time: float | None = None) -> float:
    """Value of one hyperparameter ``spec`` (see the module docstring) at 1-based ``epoch``;
    ``time``: the real paper time a ``warmup_cosine`` piece is read at (default ``epoch - 1/2``,
    the centre of the epoch)."""
    spec = _per_dataset(spec, dataset)
    if isinstance(spec, (int, float)):
        return float(spec)
    pieces = [p for p in spec if p["from"] <= epoch]
    if not pieces:
        raise ValueError(f"schedule {spec} has no piece for epoch {epoch}")
    piece = pieces[-1]
    value = float(piece["value"])
    shape = piece.get("warmup_cosine")
    if shape:
        t = (epoch - 0.5 if time is None else time) - (piece["from"] - 1)
        m, power = shape_multiplier(shape, t), float(shape.get("power", 1.0))
        try:
            return math.inf if m == 0 and power < 0 else value * m**power  # m > 0 at every epoch's centre (t > 0)
        except OverflowError:  # m < 1 to a power far below -1: beyond floating point (resolve refuses the schedule)
            return math.inf
    decay = piece.get("decay")
    if decay:
        start = decay.get("start", piece["from"] + 1)
        every = decay.get("every", 1)
        last = min(epoch, decay.get("until", epoch))
        n = (last - start) // every + 1 if last >= start else 0
        try:
            value *= decay["factor"] ** n
        except OverflowError:  # a growth factor far beyond the paper's epochs: the clamp below applies
            value = math.inf
        value = min(max(value, decay.get("min", -math.inf)), decay.get("max", math.inf))
    return value


def check_spec(key: str, spec) -> None:
    """Raise :class:`UsageError` unless ``spec`` is a valid schedule for hyperparameter ``key``."""
    low = "> 0" if key in POSITIVE else ">= 0"

    def number(v, where):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (key in POSITIVE and v == 0):
            raise UsageError(f"{key}: {where} {v!r} must be a finite number {low}")
        if key in INTEGER and v != int(v):
            raise UsageError(f"{key}: {where} {v!r} must be an integer (an epoch number)")

    if isinstance(spec, dict):
        if "default" not in spec:
            raise UsageError(f"{key}: a per-data-set value needs a 'default' entry, got {spec}")
        for v in spec.values():
            number(v, "value")
        return
    if not isinstance(spec, list):
        number(spec, "value")
        return
    if not spec or not all(isinstance(p, dict) and isinstance(p.get("from"), int) and "value" in p for p in spec):
        raise UsageError(f"{key}: a schedule is a non-empty list of {{'from': epoch, 'value': v, 'decay': {{...}}}}, got {spec}")
    if spec[0]["from"] != 1 or any(a["from"] >= b["from"] for a, b in zip(spec, spec[1:])):
        raise UsageError(f"{key}: schedule pieces must start at epoch 1 and increase, got {[p['from'] for p in spec]}")
    for p in spec:
        number(p["value"], "value")
        _check_shape(key, p)
        d = p.get("decay")
        if d is not None:
            allowed = {"factor", "start", "every", "until", "min", "max"}
            if not isinstance(d, dict) or "factor" not in d or set(d) - allowed:
                raise UsageError(f"{key}: decay must be {{'factor': f, optional {sorted(allowed - {'factor'})}}}, got {d}")
            if isinstance(d["factor"], bool) or not (isinstance(d["factor"], (int, float)) and d["factor"] > 0
                                                      and math.isfinite(d["factor"])):
                raise UsageError(f"{key}: decay factor {d['factor']!r} must be a finite number > 0")
            for name in ("start", "every", "until"):
                if name in d and (isinstance(d[name], bool) or not isinstance(d[name], int) or d[name] < 1):
                    raise UsageError(f"{key}: decay {name!r} must be an epoch number (an integer >= 1), got {d[name]!r}")
            for name in ("min", "max"):
                if name in d:
                    number(d[name], f"decay {name!r}")


def _check_shape(key: str, piece: dict) -> None:
    """A piece's ``warmup_cosine`` (module docstring), one-line errors."""
    shape = piece.get("warmup_cosine")
    if shape is None:
        return
    allowed = {"warmup", "until", "floor", "power"}
    real = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)  # noqa: E731
    if not isinstance(shape, dict) or "until" not in shape or set(shape) - allowed:
        raise UsageError(f"{key}: warmup_cosine must be {{'until': U, optional 'warmup', 'floor', 'power'}}, got {shape}")
    if "decay" in piece:
        raise UsageError(f"{key}: a schedule piece has either 'decay' or 'warmup_cosine', not both")
    warmup, until = shape.get("warmup", 0), shape["until"]
    floor, power = shape.get("floor", 0), shape.get("power", 1)
    if not (real(warmup) and real(until) and 0 <= warmup < until):
        raise UsageError(f"{key}: warmup_cosine needs 0 <= warmup < until (paper epochs), got warmup {warmup!r}, until {until!r}")
    if not (real(floor) and 0 <= floor <= 1):
        raise UsageError(f"{key}: warmup_cosine floor {floor!r} must be a number in [0, 1] (a fraction of the value)")
    if not (real(power) and power != 0):
        raise UsageError(f"{key}: warmup_cosine power {power!r} must be a number other than 0 (1: a step, -1: its inverse)")
    if power < 0 and floor == 0:
        raise UsageError(f"{key}: warmup_cosine with power {power} < 0 (the inverse of a step) needs floor > 0 "
                         "(the multiplier 0 at the end would make the value infinite)")


#: The step-size schedules ``stam tune --schedule`` offers, one family for every algorithm
#: (``step_schedules`` in ``presets.json``): ``None`` keeps the sampled step constant, else the
#: ``warmup_cosine`` shape (module docstring, in paper epochs) applied to the algorithm's step
#: (:attr:`stam.dnn.catalog.Algorithm.step`; its ``power`` given there).
def step_schedules() -> dict:
    """``{name: shape or None}`` of ``presets.json``'s ``step_schedules``."""
    return {k: v for k, v in table()["step_schedules"].items() if not k.startswith("_")}


def recipes() -> dict:
    """``{name: {algo: {hyperparameter: constant}}}`` of ``presets.json``'s ``recipes``: fixed settings
    added to an algorithm's trials in ``stam tune --recipe`` (labelled variants beyond the paper)."""
    return {k: {a: h for a, h in v.items() if a in ALGO_HYPER} for k, v in table()["recipes"].items() if not k.startswith("_")}


# --------------------------------------------------------------------------- resolved settings

@dataclass
class Preset:
    """A preset resolved for one data set, with the user's overrides applied.

    ``hyper`` maps each hyperparameter to its schedule spec; :meth:`at` evaluates them."""

    name: str
    algo: str
    label: str
    dataset: str
    hyper: dict
    overrides: dict = field(default_factory=dict)
    schedule_scale: float = 1.0

    def paper_epoch(self, epoch: int) -> int:
        """The epoch of the paper's 1000-epoch schedule that run epoch ``epoch`` follows:
        ``floor((epoch - 1) / s) + 1`` (module docstring; a small tolerance keeps float
        rounding, e.g. ``1 / 0.2``, from dropping a whole epoch)."""
        return math.floor((epoch - 1) / self.schedule_scale + 1e-9) + 1

    def at(self, epoch: int) -> dict:
        """Hyperparameters in force in run epoch ``epoch`` (1-based)."""
        p = self.paper_epoch(epoch)
        centre = (epoch - 0.5) / self.schedule_scale  # the centre of the run epoch's paper interval (warmup_cosine)
        out = {k: value_at(v, p, self.dataset, centre) for k, v in self.hyper.items()}
        if "switch_epoch" in out:
            out["switch_epoch"] = int(out["switch_epoch"])
            out["project"] = p > out["switch_epoch"]  # eq. (alg:BR): t >= T with t counted from 0
        return out


def parse_override(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` with VALUE a number or a JSON schedule (see the module docstring)."""
    key, sep, raw = text.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or not key:
        raise UsageError(f"--set {text!r}: expected KEY=VALUE, e.g. --set gamma=0.1")
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        raise UsageError(f"--set {text!r}: VALUE must be a number or a JSON schedule such as "
                         '[{"from": 1, "value": 8}, {"from": 81, "value": 15}]') from None
    return key, named_constants(value, f"--set {key}")


def resolve(name: str | None, algo: str | None, dataset: str, overrides: dict | None = None,
            schedule_scale: float | str = 1.0, epochs: int | None = None) -> Preset:
    """The preset ``name`` (or the default one for ``algo`` on ``dataset``), checked against
    ``algo``, with ``overrides`` (hyperparameter -> spec) applied and validated."""
    presets = table()["presets"]
    if name is None:
        if algo is None:
            raise UsageError("give --algo (stam, bc, br, psgd, float) or --preset " + "/".join(presets))
        name = default_preset(algo, dataset)
    if name not in presets:
        raise UsageError(f"unknown preset {name!r}; choose one of {', '.join(presets)}")
    entry = presets[name]
    if algo is not None and algo != entry["algo"]:
        raise UsageError(f"preset {name!r} is for --algo {entry['algo']}, not {algo}")
    hyper = dict(entry["hyper"])
    overrides = dict(overrides or {})
    allowed = ALGO_HYPER[entry["algo"]]
    for key, spec in overrides.items():
        if key not in allowed:
            raise UsageError(f"--set {key}: not a hyperparameter of {entry['algo']}; allowed: {', '.join(allowed)}")
        check_spec(key, spec)
        hyper[key] = spec
    if schedule_scale == "auto":
        schedule_scale = (epochs or table()["defaults"]["epochs"]) / table()["defaults"]["epochs"]
    if not (isinstance(schedule_scale, (int, float)) and math.isfinite(schedule_scale) and schedule_scale > 0):
        raise UsageError(f"--schedule-scale {schedule_scale!r} must be a number > 0 or 'auto'")
    if epochs and not (epochs - 1) / schedule_scale < MAX_EPOCHS:
        raise UsageError(f"--schedule-scale {schedule_scale!r} is too small: epoch {epochs} of the run would follow paper epoch "
                         f"{(epochs - 1) / schedule_scale + 1:.3g}, beyond {MAX_EPOCHS:,} (the paper's schedules span 1000); "
                         f"give a scale of at least {(epochs - 1) / (MAX_EPOCHS - 1):.3g}")
    label = entry["label"] + ("*" if overrides else "")
    preset = Preset(name, entry["algo"], label, dataset, hyper, overrides, float(schedule_scale))
    if epochs:
        _check_in_force(preset, epochs)
    return preset


def _check_in_force(preset: Preset, epochs: int) -> None:
    """Every positive hyperparameter (:data:`POSITIVE`) with a ``warmup_cosine`` piece is a finite normal number (>=
    the smallest, 2.2e-308) at every epoch of a run of ``epochs``, as a constant must be > 0: a shape that underflows
    (power 1e308, until 1e-300, warm-up 1e307) or overflows (power -1e308) sets nothing.  ``value * m^power`` is
    monotone on the warm-up and on the decay, so its extremes over the run epochs a piece is in force in are at the
    first and last of them, and at the last of the warm-up: only those are evaluated."""
    import bisect

    shaped = {k: _per_dataset(v, preset.dataset) for k, v in preset.hyper.items() if k in POSITIVE}
    shaped = {k: v for k, v in shaped.items() if isinstance(v, list) and any(p.get("warmup_cosine") for p in v)}
    run = range(1, epochs + 1)
    for key, spec in shaped.items():
        ends = [p["from"] for p in spec[1:]] + [math.inf]
        for piece, end in zip(spec, ends):
            first = bisect.bisect_left(run, piece["from"], key=preset.paper_epoch)
            last = bisect.bisect_left(run, end, key=preset.paper_epoch) - 1
            if first > last:
                continue  # the run never reaches this piece
            peak = piece["from"] - 1 + float((piece.get("warmup_cosine") or {}).get("warmup", 0.0))
            at_peak = bisect.bisect_left(run, peak * preset.schedule_scale + 0.5, key=float)
            for i in {first, last, min(max(at_peak, first), last)}:
                value = value_at(spec, preset.paper_epoch(run[i]), preset.dataset, (run[i] - 0.5) / preset.schedule_scale)
                if not (math.isfinite(value) and value >= sys.float_info.min):
                    raise UsageError(f"{key}: the schedule {json.dumps(piece)} gives {key} = {value:g} at epoch {run[i]} "
                                     f"of {epochs}: a positive hyperparameter must stay a finite number > 0 (at least "
                                     f"{sys.float_info.min:.3g}) at every epoch")


#: The STAM settings of Table para that ``stam synthetic run --preset`` (and the demo) take as
#: constants, their schedules dropped.
PAPER_PRESET_NAMES = ("our1", "our2")


def paper_presets() -> dict:
    """``{"paper-our1": (lam, gamma, beta), ...}``: the first-epoch values of Table para's STAM
    presets :data:`PAPER_PRESET_NAMES` (the one place they are written)."""
    out = {}
    for name in PAPER_PRESET_NAMES:
        h = resolve(name, "stam", "cifar10").at(1)
        out[f"paper-{name}"] = (float(h["lam"]), float(h["gamma"]), float(h["beta"]))
    return out


__all__ = ["step_schedules", "recipes", "shape_multiplier", "PAPER_PRESET_NAMES", "paper_presets", "ALGO_HYPER", "Preset", "resolve", "value_at", "check_spec", "parse_override", "named_constants", "names", "paper_epochs", "paper_batch_size", "columns", "algorithm_order", "paper_results", "table", "default_preset"]
