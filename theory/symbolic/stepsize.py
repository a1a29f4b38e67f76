"""``stam stepsize``: which step sizes (gamma, beta) and horizon T the theory admits.

Given the constants of Assumption ass2 and of the ES inequality, it prints ``gamma_max``, the
recommended ``gamma`` (the admissible gamma that minimises the bound on T of Theorem
conv-rate), ``K1 K2 K3 M L``, ``beta_min`` with the binding condition and ``T_min``; with
``--gamma`` alone the same at that gamma; with ``--gamma --beta [--T]`` it checks that
configuration.  Corrected constants by default (``--as-printed``: the paper's printed forms).
One unit: its parameters (:class:`StepsizeParams`, the command's flags), its run (:func:`stepsize`, the
one library entry: ``stepsize(params) -> Stepsize``) and its text output (:func:`text`); the result (``stam demo``'s ``stepsize.json``) is
:data:`stam.theory.symbolic.numeric.STEPSIZE`.  Imports numpy and :mod:`stam.theory.symbolic.numeric` only, and only
when it runs (registering ``stam stepsize`` for ``stam --help`` imports neither).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from stam.errors import UsageError, finite_float, nonneg_float, positive_float, positive_int, require
from stam.io import dumps
from stam.params import Params, arg
from stam.userfile import call, load

COUPLING_FLAGS = ("L2", "L3", "L4", "L5", "l")
ES_GROUPS = {
    "--A/--C": ("A", "C"),
    "--A0/--B0/--C0": ("A0", "B0", "C0"),
    "--Lmax/--N/--b/--delta-inf": ("Lmax", "N", "b", "delta_inf"),
}


#: what ``--problem FILE.py:NAME`` needs of the object (a problem of stam.synthetic.api.compose)
PROBLEM_NEEDS = ("theory_constants", "constants_report")
CONSTANT_FLAGS = ("L1", "L2", "L3", "L4", "L5", "l", "quadratic_coupling", "A", "C", "A0", "B0", "C0", "gap", "Lmax",
                  "N", "b", "delta_inf")


ASS2 = "Assumption ass2 (or --quadratic-coupling)"
ES = "ES constants: one of --A --C | --A0 --B0 --C0 [--gap] | --Lmax --N --b --delta-inf"
RATE = "Theorem conv-rate"
SETTING = "a given configuration"


@dataclass(frozen=True)
class StepsizeParams(Params):
    """``stam stepsize``'s parameters (:mod:`stam.params`): the constants (a problem file, or
    Assumption ass2 and one group of ES constants), those of Theorem conv-rate, and a setting to check.
    Every field is None (not given) by default: which of them are given decides what :func:`stepsize` does."""

    problem: str | None = arg("--problem", default=None, metavar="FILE.py:NAME",
                              help="take every constant from a problem object (stam.synthetic.api.compose, or a function "
                              "returning one) defined in a Python file; each is reported certified or estimated")
    L1: float | None = arg("--L1", type=nonneg_float, default=None, group=ASS2, help="Lipschitz constant of grad G, (a1)")
    L2: float | None = arg("--L2", type=nonneg_float, default=None, group=ASS2, help="L2* of (a3)")
    L3: float | None = arg("--L3", type=nonneg_float, default=None, group=ASS2, help="L3* of (a3)")
    L4: float | None = arg("--L4", type=nonneg_float, default=None, group=ASS2, help="L4* of (a3)")
    L5: float | None = arg("--L5", type=nonneg_float, default=None, group=ASS2, help="L5* of (a3)")
    l: float | None = arg("--l", type=finite_float, default=None, group=ASS2,  # noqa: E741 (the paper's l)
                          help="weak-convexity constant: H(., y) + (l/2)||.||^2 convex; l >= -L2")
    quadratic_coupling: float | None = arg("--quadratic-coupling", type=positive_float, default=None, metavar="LAMBDA",
                                           group=ASS2,
                                           help="H = (LAMBDA/2)||x-y||^2: fills L2..L5 = LAMBDA, l = -LAMBDA (not with "
                                           "--L2..--l)")
    A: float | None = arg("--A", type=nonneg_float, default=None, group=ES, help="A of the ES inequality of G + H")
    C: float | None = arg("--C", type=nonneg_float, default=None, group=ES, help="C of the ES inequality of G + H")
    A0: float | None = arg("--A0", type=nonneg_float, default=None, group=ES,
                           help="A0 of eq. (422) for the gradient estimator of G (Lemma ES-GH)")
    B0: float | None = arg("--B0", type=nonneg_float, default=None, group=ES, help="B0 of eq. (422)")
    C0: float | None = arg("--C0", type=nonneg_float, default=None, group=ES, help="C0 of eq. (422)")
    gap: float | None = arg("--gap", type=nonneg_float, default=None, group=ES,
                            help="(G+H)^inf - G^inf - H^inf for Lemma ES-GH (default 0: G and H share a minimiser)")
    Lmax: float | None = arg("--Lmax", type=nonneg_float, default=None, group=ES,
                             help="max_i L_1^i of G = (1/N) sum G_i (Lemma es-lemma)")
    N: int | None = arg("--N", type=positive_int, default=None, group=ES, help="number of samples N")
    b: int | None = arg("--b", type=positive_int, default=None, group=ES,
                        help="minibatch size b (b-nice sampling without replacement)")
    delta_inf: float | None = arg("--delta-inf", type=nonneg_float, default=None, group=ES,
                                  help="Delta^inf of Lemma es-lemma")
    replacement: bool = arg("--replacement", action="store_true", default=False, group=ES,
                            help="b samples with replacement (E v_i^2 = (N+b-1)/b)")
    delta0: float | None = arg("--delta0", type=nonneg_float, default=None, group=RATE,
                               help="delta_0 = E[G(y0) + H(x0, y0)] - (G+H)^inf")
    M0: float | None = arg("--M0", type=nonneg_float, default=None, group=RATE, help="M_0' = E[M_0 - inf_t M_t]")
    eps: float | None = arg("--eps", type=positive_float, default=None, group=RATE, help="target accuracy epsilon > 0")
    gamma: float | None = arg("--gamma", type=positive_float, default=None, group=SETTING,
                              help="step size gamma (alone: constants and T_min at this gamma)")
    beta: float | None = arg("--beta", type=positive_float, default=None, group=SETTING,
                             help="beta (with --gamma: check the configuration)")
    T: int | None = arg("--T", type=positive_int, default=None, group=SETTING,
                        help="number of iterations T (with --gamma --beta)")
    as_printed: bool = arg("--as-printed", action="store_true", default=False,
                           help="use the paper's printed K3, threshold, es-lemma A, min{}")
    json: bool = arg("--json", action="store_true", default=False, help="print one JSON object")


def _given(params, names) -> list[str]:
    return [n for n in names if getattr(params, n) is not None]


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def constants_from_problem(params: StepsizeParams):
    """The constants of ``--problem FILE.py:NAME`` (its ``theory_constants()``) and the labels of
    its ``constants_report()``: ``(Constants, report)``."""
    from stam.theory.symbolic import numeric as num

    given = [n for n in CONSTANT_FLAGS if getattr(params, n) not in (None, False)] + (["replacement"] if params.replacement else [])
    require(not given, f"{_flag(given[0]) if given else ''} contradicts --problem, which gives every constant; "
            "give one or the other")
    require(not params.as_printed, "--as-printed is for constants typed as flags, not with --problem")
    _, problem = load(params.problem, PROBLEM_NEEDS)
    where = f"--problem {params.problem!r}"
    c = call(where, problem, "theory_constants")  # the same lines as every command loading a problem (userfile.call)
    report = call(where, problem, "constants_report")
    try:
        if not isinstance(report, dict):
            raise UsageError(f"{where}: constants_report() returned {type(report).__name__}, not a dict")
        return num.Constants(L1=c.L1, L2=c.L2, L3=c.L3, L4=c.L4, L5=c.L5, l=c.l, A=c.A, C=c.C), report
    except AttributeError:
        raise UsageError(f"{where}: theory_constants() returned {type(c).__name__}, not stam.theory.symbolic.numeric.Constants") from None
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise UsageError(f"{where}: its constants: {exc}") from None


def constants_of(params: StepsizeParams):
    """``(Constants, report)``: the constants of ``--problem`` with its report
    (:func:`constants_from_problem`), else those of the flags (:func:`constants_from_flags`) and None."""
    if params.problem:
        return constants_from_problem(params)
    return constants_from_flags(params), None


def constants_from_flags(params: StepsizeParams):
    """Build :class:`stam.theory.symbolic.numeric.Constants` from the flags (UsageError on conflicts)."""
    import numpy as np

    from stam.theory.symbolic import numeric as num

    if params.quadratic_coupling is not None:
        clash = _given(params, COUPLING_FLAGS)
        if clash:
            raise UsageError(f"{_flag(clash[0])}={getattr(params, clash[0])} contradicts --quadratic-coupling, "
                             "which fills L2..L5 and l; give one or the other")
        lam = params.quadratic_coupling
        L2 = L3 = L4 = L5 = lam
        l = -lam
    else:
        missing = [n for n in COUPLING_FLAGS if getattr(params, n) is None]
        require(not missing, f"missing {', '.join(_flag(m) for m in missing)}: give --L2 --L3 --L4 --L5 --l, "
                "or --quadratic-coupling LAMBDA")
        L2, L3, L4, L5, l = (getattr(params, n) for n in COUPLING_FLAGS)

    groups = {g: _given(params, names) for g, names in ES_GROUPS.items()}
    used = [g for g, given in groups.items() if given]
    if len(used) > 1:
        raise UsageError(f"{used[0]} and {used[1]} both given; the ES constants come from one group only")
    if params.gap is not None:
        require(used == ["--A0/--B0/--C0"], f"--gap={params.gap} belongs to --A0 --B0 --C0 (Lemma ES-GH)")
    if params.replacement:
        require(used == ["--Lmax/--N/--b/--delta-inf"], "--replacement belongs to --Lmax --N --b --delta-inf")
    A = C = None
    if used:
        group = used[0]
        missing = [n for n in ES_GROUPS[group] if getattr(params, n) is None]
        require(not missing, f"{group} needs {', '.join(_flag(m) for m in missing)} as well")
        if group == "--A/--C":
            A, C = params.A, params.C
        elif group == "--A0/--B0/--C0":
            require(params.L1 is not None, "--A0 --B0 --C0 need --L1 (Lemma ES-GH: A = max(2A0 + 2B0 L1, 2 L3*))")
            with np.errstate(over="ignore", invalid="ignore"):  # beyond floating point: checked just below
                A, C = num.es_gh(params.L1, L3, params.A0, params.B0, params.C0, params.gap or 0.0)
        else:
            require(params.b <= params.N, f"--b={params.b} is not allowed with --N={params.N}: the batch must be <= N")
            with np.errstate(over="ignore", invalid="ignore"):
                A, C = num.finite_sum(params.Lmax, params.N, params.b, L3, params.delta_inf, params.replacement, params.as_printed)
        bad = [name for name, v in (("A", A), ("C", C)) if v is not None and not math.isfinite(float(v))]
        require(not bad, f"{', '.join(_flag(n) for n in ES_GROUPS[group] if getattr(params, n) is not None)}: the ES constant "
                f"{bad[0] if bad else ''} they give is beyond floating point; give values of ordinary size")
    try:
        return num.Constants(L1=params.L1, L2=L2, L3=L3, L4=L4, L5=L5, l=l,
                             A=None if A is None else float(A), C=None if C is None else float(C))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _fmt(x) -> str:
    if isinstance(x, str):
        return x
    if x is None:
        return "unknown"
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "nan (not computable in floating point)"
    return f"{x:.6g}" if math.isfinite(x) else str(x)


def _refuse_nan(values) -> None:
    """A quantity that comes out nan (``inf - inf`` or ``inf/inf`` after an overflow, at constants
    or step sizes far beyond ordinary size) would decide a verdict silently: a one-line usage
    error naming it instead.  (An overflow to ``inf`` is an answer, printed as ``inf``.)"""
    pairs = values.items() if isinstance(values, dict) else values
    bad = list(dict.fromkeys(name for name, v in pairs if isinstance(v, float) and math.isnan(v)))
    if bad:
        raise UsageError(f"{', '.join(bad)} cannot be computed in floating point at these values (an intermediate "
                         "overflows or underflows: inf - inf or inf/inf); give constants and step sizes of ordinary size")


def _labels(report: dict) -> str:
    """One line per constant of a problem: value, certified or estimated, and how."""
    keys = ("L1", "L2", "L3", "L4", "L5", "l", "A", "C", "L1_i_max", "H_inf", "GH_inf_lb", "GH_inf_ub", "Delta_ub")
    lines = [f"  {k:<9} = {_fmt(report[k]['value']):<12} {report[k]['status']}: {report[k]['how']}"
             for k in keys if k in report]
    used: dict[str, list[str]] = {}
    for k, v in report.items():
        if "settings" in v:
            used.setdefault(v["settings"], []).append(k)
    notes = [f"  estimator settings: {st}" + (f" ({', '.join(ks)})" if len(used) > 1 else "") for st, ks in used.items()]
    return "\n".join(lines + notes)


def _describe(c, params: StepsizeParams, report: dict | None) -> str:
    if report:
        est = [k for k in ("L1", "L2", "L3", "L4", "L5", "l", "A", "C") if report[k]["status"] != "certified"]
        verdict = ("all certified" if not est else f"ESTIMATED (not a guarantee): {', '.join(est)}; "
                   "step sizes from them are not certified")
        return f"--problem {params.problem}: constants {verdict}\n" + _labels(report)
    src = (f"H = ({params.quadratic_coupling}/2)||x-y||^2" if params.quadratic_coupling is not None else "Assumption ass2")
    return (f"{src}: L1={_fmt(c.L1)} L2*={_fmt(c.L2)} L3*={_fmt(c.L3)} L4*={_fmt(c.L4)} L5*={_fmt(c.L5)} "
            f"l={_fmt(c.l)}; ES: A={_fmt(c.A)} C={_fmt(c.C)}" + ("   [printed forms]" if params.as_printed else ""))


def _gamma_limits(c, as_printed: bool) -> str:
    from stam.theory.symbolic import numeric as num

    thr = float(num.gamma_threshold(c, as_printed))
    s2 = math.fsum((float(c.L2) ** 2 if abs(c.L2) < 1e154 else math.inf, float(c.L5) ** 2 if abs(c.L5) < 1e154 else math.inf))
    second = 1 / math.sqrt(s2) if s2 > 0 else math.inf
    binds = "K1 > 0" if thr <= second else "the second condition"
    return (f"K1 > 0 for gamma < {_fmt(thr)}, [(L2*)^2+(L5*)^2] gamma^2 <= 1 for gamma <= {_fmt(second)}; "
            f"{binds} binds")


def _recommend_text(r: dict, c, params: StepsizeParams, report: dict | None) -> str:
    lines = [_describe(c, params, report),
             f"delta0 + M0' = {_fmt(params.delta0 + params.M0)}, eps = {_fmt(params.eps)}",
             f"  gamma_max = {_fmt(r['gamma_max'])}   ({_gamma_limits(c, params.as_printed)})"]
    if params.gamma is not None:
        lines.append(f"  gamma     = {_fmt(r['gamma'])}   (given)")
    else:
        lines.append(f"  gamma     = {_fmt(r['gamma'])}   (recommended: the admissible gamma that minimises T_min)")
    lines += [
        f"  K1 = {_fmt(r['K1'])}  K2 = {_fmt(r['K2'])}  K3 = {_fmt(r['K3'])}  M = 2 K3 = {_fmt(r['M'])}  "
        f"L = L1 + L3* = {_fmt(r['L'])}",
        f"  T_min     = {_fmt(r['T_min'])}   (Theorem conv-rate, eq705)",
        f"  beta_min  = {_fmt(r['beta_min'])}   (at T = T_min; binding: beta >= {r['binding']})",
    ]
    return "\n".join(lines)


def _check_text(rep: dict, c, params: StepsizeParams, report: dict | None) -> str:
    from stam.theory.symbolic import numeric as num

    head = [_describe(c, params, report),
            f"gamma = {_fmt(params.gamma)}, beta = {_fmt(params.beta)}" + (f", T = {params.T}" if params.T else "")
            + (f", eps = {_fmt(params.eps)}" if params.eps else ""),
            f"gamma_max = {_fmt(num.gamma_max(c, params.as_printed))} ({_gamma_limits(c, params.as_printed)})",
            f"admissible: {'yes' if rep['admissible'] else 'NO'}"]
    for v in rep["violations"]:
        head.append(f"  violated: {v['condition']}: value {_fmt(v['value'])}, limit {_fmt(v['limit'])}")
    for u in rep["unknown"]:
        head.append(f"  unknown:  {u} (needs a constant that was not given)")
    return "\n".join(head)


def is_check(params: StepsizeParams) -> bool:
    """Whether ``params`` check a setting (``--beta``/``--T`` given) rather than ask for a recommendation."""
    return params.beta is not None or params.T is not None


def _check(params: StepsizeParams, c) -> dict:
    """Theorem conv's conditions at the setting of ``params`` (:func:`stam.theory.symbolic.numeric.check`)."""
    from stam.theory.symbolic import numeric as num

    require(params.gamma is not None, "--beta/--T need --gamma: give --gamma G --beta B [--T T] to check a setting")
    require(params.beta is not None, f"--gamma={params.gamma} with --T needs --beta as well")
    rep = num.check(params.gamma, params.beta, c, T=params.T, eps=params.eps, delta0=params.delta0, M0=params.M0,
                    as_printed=params.as_printed)
    _refuse_nan([(v["condition"], float(x)) for v in rep["violations"] for x in (v["value"], v["limit"])])
    return rep


def _recommend(params: StepsizeParams, c) -> dict:
    """The recommendation (:func:`stam.theory.symbolic.numeric.recommend`) at the constants ``c``, at ``params.gamma``
    where given; one line naming what is missing or out of range otherwise."""
    from stam.theory.symbolic import numeric as num

    for name in ("L1", "A", "C"):
        require(getattr(c, name) is not None,
                f"a bound on T needs --L1 and the ES constants (--A --C, --A0 --B0 --C0 or --Lmax --N --b "
                f"--delta-inf); {'--L1' if name == 'L1' else 'the ES constants'} missing")
    for name in ("delta0", "M0", "eps"):
        require(getattr(params, name) is not None, f"a bound on T needs --{name} as well")
    if params.gamma is not None:
        _refuse_nan({"K1": float(num.K1(params.gamma, c)), "K2": float(num.K2(params.gamma, c))})
        k1 = float(num.K1(params.gamma, c))
        thr = float(num.gamma_threshold(c, params.as_printed))
        require(k1 > 0, f"--gamma={params.gamma} gives K1={k1:.6g} <= 0; allowed: 0 < gamma < {thr:.6g} (eq. k1)")
        sc = float(num.second_condition(params.gamma, c))
        gm = num.gamma_max(c, params.as_printed)
        require(params.gamma <= gm, f"--gamma={params.gamma} violates [(L2*)^2+(L5*)^2] gamma^2 <= 1 "
                f"(value {sc:.6g}); allowed: 0 < gamma <= {gm:.6g}")
    if not params.as_printed:  # the printed threshold is undefined (nan) at L2* = 0: recommend() says so
        _refuse_nan({"gamma_max": float(num.gamma_max(c))})
    try:
        r = num.recommend(c, params.delta0, params.M0, params.eps, as_printed=params.as_printed, gamma=params.gamma)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    _refuse_nan({k: float(v) for k, v in r.items() if isinstance(v, (int, float))})
    return r


class Stepsize(NamedTuple):
    """What :func:`stepsize` returns: the ``answer`` (the check of the setting, :func:`is_check`, or the
    recommendation; with the problem's ``constants`` report where ``--problem`` gave them), the constants
    ``c`` it was computed from and that ``report`` (else None)."""

    answer: dict
    constants: object
    report: dict | None


def stepsize(params: StepsizeParams) -> Stepsize:
    """``stam stepsize`` as a library call (this module's one entry): the answer as values, nothing
    printed (:func:`text` is the command's output)."""
    c, report = constants_of(params)
    answer = _check(params, c) if is_check(params) else _recommend(params, c)
    return Stepsize(dict(answer, constants=report) if report else answer, c, report)


def text(params: StepsizeParams, result: Stepsize) -> str:
    """What ``stam stepsize`` prints of ``result`` (``json``: one JSON object)."""
    answer, c, report = result
    if params.json:
        return dumps(answer)
    if is_check(params):
        return _check_text(answer, c, params, report)
    return _recommend_text(answer, c, params, report)

