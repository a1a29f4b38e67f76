"""``stam stepsize``: which step sizes (gamma, beta) and horizon T the theory admits.

Given the constants of Assumption ass2 and of the ES inequality, it prints ``gamma_max``, the
recommended ``gamma`` (the admissible gamma that minimises the bound on T of Theorem
conv-rate), ``K1 K2 K3 M L``, ``beta_min`` with the binding condition and ``T_min``; with
``--gamma`` alone the same at that gamma; with ``--gamma --beta [--T]`` it checks that
configuration.  Corrected constants by default (``--as-printed``: the paper's printed forms).
Imports numpy and :mod:`stam.theory.numeric` only, and only when it runs (registering ``stam stepsize`` for
``stam --help`` imports neither).
"""

from __future__ import annotations

import argparse
import math

from stam.errors import UsageError, finite_float, nonneg_float, positive_float, positive_int, require
from stam.io import dumps
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


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--problem", metavar="FILE.py:NAME",
                   help="take every constant from a problem object (stam.synthetic.api.compose, or a function "
                   "returning one) defined in a Python file; each is reported certified or estimated")
    h = p.add_argument_group("Assumption ass2 (or --quadratic-coupling)")
    h.add_argument("--L1", type=nonneg_float, help="Lipschitz constant of grad G, (a1)")
    for k in ("L2", "L3", "L4", "L5"):
        h.add_argument(f"--{k}", type=nonneg_float, help=f"{k}* of (a3)")
    h.add_argument("--l", type=finite_float, help="weak-convexity constant: H(., y) + (l/2)||.||^2 convex; l >= -L2")
    h.add_argument("--quadratic-coupling", type=positive_float, metavar="LAMBDA",
                   help="H = (LAMBDA/2)||x-y||^2: fills L2..L5 = LAMBDA, l = -LAMBDA (not with --L2..--l)")
    e = p.add_argument_group("ES constants: one of --A --C | --A0 --B0 --C0 [--gap] | --Lmax --N --b --delta-inf")
    e.add_argument("--A", type=nonneg_float, help="A of the ES inequality of G + H")
    e.add_argument("--C", type=nonneg_float, help="C of the ES inequality of G + H")
    e.add_argument("--A0", type=nonneg_float, help="A0 of eq. (422) for the gradient estimator of G (Lemma ES-GH)")
    e.add_argument("--B0", type=nonneg_float, help="B0 of eq. (422)")
    e.add_argument("--C0", type=nonneg_float, help="C0 of eq. (422)")
    e.add_argument("--gap", type=nonneg_float, default=None,
                   help="(G+H)^inf - G^inf - H^inf for Lemma ES-GH (default 0: G and H share a minimiser)")
    e.add_argument("--Lmax", type=nonneg_float, help="max_i L_1^i of G = (1/N) sum G_i (Lemma es-lemma)")
    e.add_argument("--N", type=positive_int, help="number of samples N")
    e.add_argument("--b", type=positive_int, help="minibatch size b (b-nice sampling without replacement)")
    e.add_argument("--delta-inf", dest="delta_inf", type=nonneg_float, help="Delta^inf of Lemma es-lemma")
    e.add_argument("--replacement", action="store_true", help="b samples with replacement (E v_i^2 = (N+b-1)/b)")
    r = p.add_argument_group("Theorem conv-rate")
    r.add_argument("--delta0", type=nonneg_float, help="delta_0 = E[G(y0) + H(x0, y0)] - (G+H)^inf")
    r.add_argument("--M0", type=nonneg_float, help="M_0' = E[M_0 - inf_t M_t]")
    r.add_argument("--eps", type=positive_float, help="target accuracy epsilon > 0")
    c = p.add_argument_group("a given configuration")
    c.add_argument("--gamma", type=positive_float, help="step size gamma (alone: constants and T_min at this gamma)")
    c.add_argument("--beta", type=positive_float, help="beta (with --gamma: check the configuration)")
    c.add_argument("--T", type=positive_int, help="number of iterations T (with --gamma --beta)")
    p.add_argument("--as-printed", action="store_true", help="use the paper's printed K3, threshold, es-lemma A, min{}")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _given(args, names) -> list[str]:
    return [n for n in names if getattr(args, n) is not None]


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def constants_from_problem(args):
    """The constants of ``--problem FILE.py:NAME`` (its ``theory_constants()``), with the labels of
    its ``constants_report()`` kept in ``args.report``."""
    from stam.theory import numeric as num

    given = [n for n in CONSTANT_FLAGS if getattr(args, n) not in (None, False)] + (["replacement"] if args.replacement else [])
    require(not given, f"{_flag(given[0]) if given else ''} contradicts --problem, which gives every constant; "
            "give one or the other")
    require(not args.as_printed, "--as-printed is for constants typed as flags, not with --problem")
    _, problem = load(args.problem, PROBLEM_NEEDS)
    where = f"--problem {args.problem!r}"
    c = call(where, problem, "theory_constants")  # the same lines as every command loading a problem (userfile.call)
    args.report = call(where, problem, "constants_report")
    try:
        if not isinstance(args.report, dict):
            raise UsageError(f"{where}: constants_report() returned {type(args.report).__name__}, not a dict")
        return num.Constants(L1=c.L1, L2=c.L2, L3=c.L3, L4=c.L4, L5=c.L5, l=c.l, A=c.A, C=c.C)
    except AttributeError:
        raise UsageError(f"{where}: theory_constants() returned {type(c).__name__}, not stam.theory.numeric.Constants") from None
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise UsageError(f"{where}: its constants: {exc}") from None


def constants_from_args(args):
    """Build :class:`stam.theory.numeric.Constants` from the flags (UsageError on conflicts)."""
    import numpy as np

    from stam.theory import numeric as num

    if getattr(args, "problem", None):
        return constants_from_problem(args)
    if args.quadratic_coupling is not None:
        clash = _given(args, COUPLING_FLAGS)
        if clash:
            raise UsageError(f"{_flag(clash[0])}={getattr(args, clash[0])} contradicts --quadratic-coupling, "
                             "which fills L2..L5 and l; give one or the other")
        lam = args.quadratic_coupling
        L2 = L3 = L4 = L5 = lam
        l = -lam
    else:
        missing = [n for n in COUPLING_FLAGS if getattr(args, n) is None]
        require(not missing, f"missing {', '.join(_flag(m) for m in missing)}: give --L2 --L3 --L4 --L5 --l, "
                "or --quadratic-coupling LAMBDA")
        L2, L3, L4, L5, l = (getattr(args, n) for n in COUPLING_FLAGS)

    groups = {g: _given(args, names) for g, names in ES_GROUPS.items()}
    used = [g for g, given in groups.items() if given]
    if len(used) > 1:
        raise UsageError(f"{used[0]} and {used[1]} both given; the ES constants come from one group only")
    if args.gap is not None:
        require(used == ["--A0/--B0/--C0"], f"--gap={args.gap} belongs to --A0 --B0 --C0 (Lemma ES-GH)")
    if args.replacement:
        require(used == ["--Lmax/--N/--b/--delta-inf"], "--replacement belongs to --Lmax --N --b --delta-inf")
    A = C = None
    if used:
        group = used[0]
        missing = [n for n in ES_GROUPS[group] if getattr(args, n) is None]
        require(not missing, f"{group} needs {', '.join(_flag(m) for m in missing)} as well")
        if group == "--A/--C":
            A, C = args.A, args.C
        elif group == "--A0/--B0/--C0":
            require(args.L1 is not None, "--A0 --B0 --C0 need --L1 (Lemma ES-GH: A = max(2A0 + 2B0 L1, 2 L3*))")
            with np.errstate(over="ignore", invalid="ignore"):  # beyond floating point: checked just below
                A, C = num.es_gh(args.L1, L3, args.A0, args.B0, args.C0, args.gap or 0.0)
        else:
            require(args.b <= args.N, f"--b={args.b} is not allowed with --N={args.N}: the batch must be <= N")
            with np.errstate(over="ignore", invalid="ignore"):
                A, C = num.finite_sum(args.Lmax, args.N, args.b, L3, args.delta_inf, args.replacement, args.as_printed)
        bad = [name for name, v in (("A", A), ("C", C)) if v is not None and not math.isfinite(float(v))]
        require(not bad, f"{', '.join(_flag(n) for n in ES_GROUPS[group] if getattr(args, n) is not None)}: the ES constant "
                f"{bad[0] if bad else ''} they give is beyond floating point; give values of ordinary size")
    try:
        return num.Constants(L1=args.L1, L2=L2, L3=L3, L4=L4, L5=L5, l=l,
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


def _describe(c, args) -> str:
    if getattr(args, "report", None):
        est = [k for k in ("L1", "L2", "L3", "L4", "L5", "l", "A", "C") if args.report[k]["status"] != "certified"]
        verdict = ("all certified" if not est else f"ESTIMATED (not a guarantee): {', '.join(est)}; "
                   "step sizes from them are not certified")
        return f"--problem {args.problem}: constants {verdict}\n" + _labels(args.report)
    src = (f"H = ({args.quadratic_coupling}/2)||x-y||^2" if args.quadratic_coupling is not None else "Assumption ass2")
    return (f"{src}: L1={_fmt(c.L1)} L2*={_fmt(c.L2)} L3*={_fmt(c.L3)} L4*={_fmt(c.L4)} L5*={_fmt(c.L5)} "
            f"l={_fmt(c.l)}; ES: A={_fmt(c.A)} C={_fmt(c.C)}" + ("   [printed forms]" if args.as_printed else ""))


def _gamma_limits(c, as_printed: bool) -> str:
    from stam.theory import numeric as num

    thr = float(num.gamma_threshold(c, as_printed))
    s2 = math.fsum((float(c.L2) ** 2 if abs(c.L2) < 1e154 else math.inf, float(c.L5) ** 2 if abs(c.L5) < 1e154 else math.inf))
    second = 1 / math.sqrt(s2) if s2 > 0 else math.inf
    binds = "K1 > 0" if thr <= second else "the second condition"
    return (f"K1 > 0 for gamma < {_fmt(thr)}, [(L2*)^2+(L5*)^2] gamma^2 <= 1 for gamma <= {_fmt(second)}; "
            f"{binds} binds")


def _recommend_text(r: dict, c, args, at_gamma: bool) -> str:

    lines = [_describe(c, args),
             f"delta0 + M0' = {_fmt(args.delta0 + args.M0)}, eps = {_fmt(args.eps)}",
             f"  gamma_max = {_fmt(r['gamma_max'])}   ({_gamma_limits(c, args.as_printed)})"]
    if at_gamma:
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


def _check_text(rep: dict, c, args) -> str:
    from stam.theory import numeric as num

    head = [_describe(c, args),
            f"gamma = {_fmt(args.gamma)}, beta = {_fmt(args.beta)}" + (f", T = {args.T}" if args.T else "")
            + (f", eps = {_fmt(args.eps)}" if args.eps else ""),
            f"gamma_max = {_fmt(num.gamma_max(c, args.as_printed))} ({_gamma_limits(c, args.as_printed)})",
            f"admissible: {'yes' if rep['admissible'] else 'NO'}"]
    for v in rep["violations"]:
        head.append(f"  violated: {v['condition']}: value {_fmt(v['value'])}, limit {_fmt(v['limit'])}")
    for u in rep["unknown"]:
        head.append(f"  unknown:  {u} (needs a constant that was not given)")
    return "\n".join(head)


def run(args) -> int:
    """Handler of ``stam stepsize``."""
    from stam.theory import numeric as num

    c = constants_from_args(args)
    if args.beta is not None or args.T is not None:
        require(args.gamma is not None, "--beta/--T need --gamma: give --gamma G --beta B [--T T] to check a setting")
        require(args.beta is not None, f"--gamma={args.gamma} with --T needs --beta as well")
        rep = num.check(args.gamma, args.beta, c, T=args.T, eps=args.eps, delta0=args.delta0, M0=args.M0,
                        as_printed=args.as_printed)
        _refuse_nan([(v["condition"], float(x)) for v in rep["violations"] for x in (v["value"], v["limit"])])
        if getattr(args, "report", None):
            rep = dict(rep, constants=args.report)
        print(dumps(rep) if args.json else _check_text(rep, c, args))
        return 0
    for name in ("L1", "A", "C"):
        require(getattr(c, name) is not None,
                f"a bound on T needs --L1 and the ES constants (--A --C, --A0 --B0 --C0 or --Lmax --N --b "
                f"--delta-inf); {'--L1' if name == 'L1' else 'the ES constants'} missing")
    for name in ("delta0", "M0", "eps"):
        require(getattr(args, name) is not None, f"a bound on T needs --{name} as well")
    if args.gamma is not None:
        _refuse_nan({"K1": float(num.K1(args.gamma, c)), "K2": float(num.K2(args.gamma, c))})
        k1 = float(num.K1(args.gamma, c))
        thr = float(num.gamma_threshold(c, args.as_printed))
        require(k1 > 0, f"--gamma={args.gamma} gives K1={k1:.6g} <= 0; allowed: 0 < gamma < {thr:.6g} (eq. k1)")
        sc = float(num.second_condition(args.gamma, c))
        gm = num.gamma_max(c, args.as_printed)
        require(args.gamma <= gm, f"--gamma={args.gamma} violates [(L2*)^2+(L5*)^2] gamma^2 <= 1 "
                f"(value {sc:.6g}); allowed: 0 < gamma <= {gm:.6g}")
    if not args.as_printed:  # the printed threshold is undefined (nan) at L2* = 0: recommend() says so
        _refuse_nan({"gamma_max": float(num.gamma_max(c))})
    try:
        r = num.recommend(c, args.delta0, args.M0, args.eps, as_printed=args.as_printed, gamma=args.gamma)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    _refuse_nan({k: float(v) for k, v in r.items() if isinstance(v, (int, float))})
    if getattr(args, "report", None):
        r = dict(r, constants=args.report)
    print(dumps(r) if args.json else _recommend_text(r, c, args, args.gamma is not None))
    return 0
