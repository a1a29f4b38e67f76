"""The experiments of ``stam synthetic run|compare|sweep`` and their handlers (imported lazily by
:mod:`stam.synthetic.cli`).  Each command has one library entry taking its parameters and
returning its result: :func:`rates_experiment` (:class:`~stam.synthetic.params.RunParams` -> :class:`RatesRun`),
:func:`compare_experiment` (:class:`~stam.synthetic.params.CompareParams` -> :class:`CompareRun`),
:func:`sweep_experiment` (:class:`~stam.synthetic.params.SweepParams` -> :class:`SweepRun`); the handlers
``*_command`` print it and return the exit status.

Every user mistake becomes a :class:`stam.errors.UsageError` (one line, exit status 2); results
are written atomically (:mod:`stam.io`), so an interrupted command leaves no half-written file.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import sys
from pathlib import Path
from typing import NamedTuple

from stam.errors import UsageError, require
from stam.io import check_out_dir, check_out_file, provenance
from stam.synthetic.families import NAMES, SIZE, WITH_LAM
from stam.synthetic.params import CompareParams, RunParams, SweepParams
from stam.userfile import guard, is_file_spec, load, split_spec

from stam.synthetic.params import COMPARE_DEFAULTS, QUICK, RUN_DEFAULTS


def _setup(args):
    import torch

    torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {args.device}: CUDA is not available on this machine; use --device cpu")
    try:
        device = torch.device(args.device)
    except RuntimeError:
        raise UsageError(f"--device {args.device!r} is not a torch device (use cpu or cuda)") from None
    require(device.type in ("cpu", "cuda"), f"--device {args.device}: the synthetic problems run on cpu or cuda")
    return device, getattr(torch, args.dtype)


@contextlib.contextmanager
def _user_limits(what: str):
    """Out of memory, or numbers beyond floating point, as one-line usage errors."""
    import torch

    try:
        yield
    except (torch.OutOfMemoryError, MemoryError):
        raise UsageError(f"out of memory for {what}; lower --R or --n") from None
    except RuntimeError as exc:
        if "not enough memory" in str(exc) or "DefaultCPUAllocator" in str(exc):
            raise UsageError(f"out of memory for {what}; lower --R or --n") from None
        raise
    except ArithmeticError as exc:  # ZeroDivisionError, OverflowError: e.g. gamma so small that gamma^2 = 0
        raise UsageError(f"the parameters of {what} are beyond floating point ({type(exc).__name__}: {exc}); "
                         "give a gamma and beta of ordinary size") from None


def _memory_estimate(args) -> int:
    """Bytes a synthetic instance and its runs take, roughly: the N x n data (and a working copy)
    and about 16 vectors of length n per run (iterates, gradients, running sums), in float64."""
    R = args.R if args.R is not None else args.default_R
    return 8 * args.n * (2 * args.N + 16 * R + 16 * args.b)


def _check_memory(args) -> None:
    """Refuse, before allocating anything, an instance larger than half this machine's memory (it
    would thrash or be killed); one line with the estimate and the limit."""
    from stam.jobs import memory_limit_bytes

    need, limit = _memory_estimate(args), memory_limit_bytes() / 2
    require(need <= limit, f"--n {args.n} --N {args.N} --R {args.R or args.default_R} needs about {need / 2**30:.3g} GiB, "
            f"more than half the memory this process may use ({limit / 2**30:.3g} GiB); lower --n, --N or --R")


def _run_work(R: int, T_grid, b: int, n: int) -> float:
    """Sample-gradient coordinates a rate experiment computes: every run of every horizon T takes
    T steps of b samples of dimension n."""
    return float(R) * float(sum(T_grid)) * b * n


#: The most work `synthetic run` does without --force: 50 times the default run's (a few minutes
#: on 2 cores at most).
WORK_LIMIT = 50


#: from this many times the default run's work on, a command says the estimate before it starts
ANNOUNCE_TIMES = 5.0


def _say_work(times: float, what: str) -> None:
    """Say on stderr, just before long work starts, how much it is (from :data:`ANNOUNCE_TIMES`)."""
    if times >= ANNOUNCE_TIMES:
        print(f"{what}: about {times:.3g} times the default run's work", file=sys.stderr, flush=True)


def _default_run_work() -> float:
    """The work of the default ``synthetic run`` (:data:`RUN_DEFAULTS` at the default :data:`SIZE`)."""
    from stam.synthetic.rates import geometric_grid

    grid = geometric_grid(RUN_DEFAULTS["T_min"], RUN_DEFAULTS["T_max"], RUN_DEFAULTS["T_points"])
    return _run_work(RUN_DEFAULTS["R"], grid, SIZE["b"], SIZE["n"])


def _check_work(args, R: int, T_grid) -> float:
    """Refuse, before any work, a rate experiment above :data:`WORK_LIMIT` times the default
    run's work unless ``--force``; the work, in those units."""
    times = _run_work(R, T_grid, args.b, args.n) / _default_run_work()
    require(args.force or times <= WORK_LIMIT,
            f"--R {R} runs of {len(T_grid)} horizons up to --T-max {args.T_max} at --b {args.b}, --n {args.n} are about "
            f"{times:.3g} times the default run's work, above the limit of {WORK_LIMIT}; lower them or add --force")
    return times


def _user_problem(args):
    """The problem object of ``--problem FILE.py:NAME`` (:func:`stam.userfile.load`)."""
    from stam.synthetic.api import PROBLEM_METHODS, check_problem

    device, dtype = _setup(args)
    offer = dict(n=args.n, N=args.N, b=args.b, replacement=args.replacement, seed=args.seed, device=device, dtype=dtype)
    problem = load(args.problem, PROBLEM_METHODS, offer=offer)[1]
    check_problem(problem, f"--problem {args.problem!r}")
    return problem


def _guarded(spec: str, flag: str = "--problem"):
    """:func:`stam.userfile.guard` for a problem of one's own, nothing for a built-in family."""
    return guard(spec, flag) if is_file_spec(spec) else contextlib.nullcontext()


def _stem_name(args) -> str:
    """The problem's part of output file names, checked before any work: the family (one of the
    known names), or NAME of FILE.py:NAME (an identifier)."""
    if is_file_spec(args.problem):
        return split_spec(args.problem)[1]
    require(args.problem in NAMES, f"--problem {args.problem!r}: unknown; known: {', '.join(NAMES)} or FILE.py:NAME")
    return args.problem


def _problem(args, **extra):
    from stam.synthetic.problems import make_problem

    if is_file_spec(args.problem):
        return _user_problem(args)
    require(args.problem in NAMES, f"--problem {args.problem!r}: unknown; known: {', '.join(NAMES)} or FILE.py:NAME")
    require(args.replacement or args.b <= args.N,
            f"--b {args.b} exceeds --N {args.N}: without replacement the batch must be at most N (or add --replacement)")
    _check_memory(args)
    device, dtype = _setup(args)
    try:
        return make_problem(args.problem, n=args.n, N=args.N, b=args.b, replacement=args.replacement, seed=args.seed,
                            device=device, dtype=dtype, **extra)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None


def _fmt(v, spec=".4g"):
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, spec)


def format_rates(result: dict) -> str:
    """The rows of a ``synthetic-rates`` result as a fixed-width table, the slopes, and a warning
    where runs diverged or ended above their start (the minimum alone would hide it)."""
    head = (f"{'T':>7} {'beta':>10} {'adm':>4} {'min_t E S_t':>12} {'+- std':>9} {'at t':>6} {'E S_T-1':>10} "
            f"{'bound':>10} {'ratio':>9}")
    lines = [head, "-" * len(head)]
    for r in result["rows"]:
        lines.append(f"{r['T']:>7} {_fmt(r['beta']):>10} {('yes' if r['admissible'] else 'no'):>4} "
                     f"{_fmt(r['S_min_mean']):>12} {_fmt(r['S_min_std'], '.2g'):>9} {_fmt(r['t_star'], 'd'):>6} "
                     f"{_fmt(r['S_final_mean']):>10} {_fmt(r['bound']):>10} {_fmt(r['ratio']):>9}")
    lines.append(f"fitted log-log slope: S {_fmt(result['slope'], '.3f')} (upper half of the grid "
                 f"{_fmt(result['slope_tail'], '.3f')}), bound {_fmt(result['bound_slope'], '.3f')} "
                 f"({_fmt(result['bound_slope_tail'], '.3f')})")
    last = result["rows"][-1]
    if last["nonfinite"]:
        R = result["params"]["R"]
        rest = "means are over the others" if last["nonfinite"] < R else "E S_t is over the steps before"
        lines.append(f"warning: {last['nonfinite']} of {R} runs diverged (S_t inf or nan) by T = {last['T']}; {rest}")
    elif last["S_final_mean"] is not None and last["S_0_mean"] is not None and last["S_final_mean"] > last["S_0_mean"]:
        lines.append(f"warning: E S_t ends above its start (E S_0 = {_fmt(last['S_0_mean'])}, E S_T-1 = "
                     f"{_fmt(last['S_final_mean'])} at T = {last['T']}): not converging at these parameters")
    return "\n".join(lines)


def write_rates(result: dict, out_dir, stem: str) -> tuple[Path, Path]:
    """``out_dir/stem.json`` and ``.csv`` through their type (:data:`stam.synthetic.rates.RATES`:
    checked, each written atomically, the CSV first, so that a JSON, what a resumed sweep looks
    for, always has its CSV)."""
    from stam.synthetic.rates import RATES

    path = RATES.write(dict(result, provenance=provenance()), Path(out_dir) / f"{stem}.json")
    return path, path.with_suffix(".csv")


class RatesRun(NamedTuple):
    """What :func:`rates_experiment` returns: the ``synthetic-rates`` result (as written), the problem it
    ran on and the two files written (``.json``, ``.csv``)."""

    result: dict
    problem: object
    paths: tuple


def _rates_steps(args: RunParams):
    """``stam synthetic run``'s step sizes (:class:`stam.theory.symbolic.numeric.StepSizes`) and the problem's
    lambda (``extra``), from --preset (the paper's lambda, gamma, beta) or --gamma/--beta/--lam, each
    combination checked."""
    from stam.theory.symbolic.numeric import StepSizes

    extra = {}
    gamma, beta, allow = args.gamma, args.beta, args.allow_inadmissible
    if args.preset:
        require(args.problem in WITH_LAM, f"--preset {args.preset} needs a problem with lambda ({', '.join(WITH_LAM)})")
        given = [f for f, v in (("--gamma", args.gamma), ("--beta", args.beta), ("--lam", args.lam)) if v is not None]
        require(not given, f"--preset {args.preset} sets lambda, gamma and beta; drop {', '.join(given)} (or drop --preset)")
        lam, gamma, beta = args.preset_values  # (lambda, gamma, beta), from the paper's preset (stam.synthetic.cli)
        extra["lam"], allow = lam, True
    if args.lam is not None:
        require(args.problem in WITH_LAM, f"--lam is for the problems with lambda ({', '.join(WITH_LAM)}), not {args.problem}")
        extra["lam"] = args.lam
    require(gamma is not None or 0 < args.gamma_fraction < 1,
            f"--gamma-fraction {args.gamma_fraction} must be in (0, 1) (for a larger gamma give --gamma and --beta)")
    return StepSizes(gamma=gamma, beta=beta, gamma_fraction=args.gamma_fraction, allow_inadmissible=allow), extra


def rates_experiment(params: RunParams) -> RatesRun:
    """``stam synthetic run`` as a library call (its parameters: :class:`stam.synthetic.params.RunParams`):
    every flag checked, the rate experiment run and written; nothing printed (:func:`run_command` prints)."""
    import dataclasses

    from stam.synthetic.rates import geometric_grid, run_rates
    from stam.theory.symbolic.numeric import Inadmissible

    if params.quick:
        given = [flag for flag, key in (("--T-min", "T_min"), ("--T-max", "T_max"), ("--T-points", "T_points"))
                 if getattr(params, key) is not None]
        require(not given, f"--quick sets --T-min {QUICK['T_min']} --T-max {QUICK['T_max']} --T-points "
                f"{QUICK['T_points']} (and --R {QUICK['R']} unless given); drop {', '.join(given)} or drop --quick")
    grid = QUICK if params.quick else RUN_DEFAULTS
    args = dataclasses.replace(params, **{k: grid[k] if getattr(params, k) is None else getattr(params, k)
                                          for k in ("T_min", "T_max", "T_points")})
    R = args.R if args.R is not None else args.default_R

    user = is_file_spec(args.problem)
    if user:
        split_spec(args.problem)  # a malformed NAME before any work
        given = [f for f, v in (("--preset", args.preset), ("--lam", args.lam)) if v is not None]
        require(not given, f"{given[0] if given else ''} is for the built-in families with lambda "
                f"({', '.join(WITH_LAM)}), not for --problem {args.problem}")
    else:
        require(args.problem in NAMES, f"--problem {args.problem!r}: unknown; known: {', '.join(NAMES)} or FILE.py:NAME")
    require(args.T_min <= args.T_max, f"--T-min {args.T_min} exceeds --T-max {args.T_max}")
    T_grid = geometric_grid(args.T_min, args.T_max, args.T_points)
    _check_memory(args)  # memory first: the most concrete limit
    work = _check_work(args, R, T_grid)
    out = check_out_dir(args.out)
    stem = f"rates-{_stem_name(args)}"
    for suffix in (".json", ".csv"):
        check_out_file(out / f"{stem}{suffix}")
    step_sizes, extra = _rates_steps(args)
    with _guarded(args.problem), _user_limits(f"the problem at n = {args.n}, N = {args.N}"):
        problem = _problem(args, **extra)
    _say_work(work, f"stam synthetic run: --R {R} runs of {len(T_grid)} horizons up to --T-max {args.T_max}")
    try:
        with _guarded(args.problem), _user_limits(f"--R {R} runs of {len(T_grid)} horizons at n = {args.n}"):
            result = run_rates(problem, T_grid, R=R, step_sizes=step_sizes, seed=args.seed, progress=args.progress)
    except (Inadmissible, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if args.preset:
        result["params"]["preset"] = args.preset
    report = problem.constants_report()
    result["constant_status"] = {k: {key: v[key] for key in ("status", "how", "settings") if key in v} for k, v in report.items()}
    return RatesRun(result, problem, write_rates(result, out, stem))


def rates_text(done: RatesRun) -> str:
    """What ``stam synthetic run`` prints of :func:`rates_experiment`'s result: the problem, the step sizes,
    the table and the files written."""
    result, problem, (json_path, csv_path) = done
    lines = [problem.describe()]
    status = result["constant_status"]
    estimated = [k for k in ("L1", "L2", "L3", "L4", "L5", "l", "A", "C") if status[k]["status"] != "certified"]
    if estimated:
        lines.append(f"constants ESTIMATED (not a guarantee): {', '.join(estimated)}; the bound and the admissibility "
                     "rest on them (stam stepsize --problem shows each with its estimator)")
    lines.append(f"gamma = {result['params']['gamma']:.4g} ({result['params']['gamma_rule']}), beta: "
                 f"{result['params']['beta_rule']}")
    lines.append(format_rates(result))
    lines.append(f"wrote {json_path} and {csv_path}")
    return "\n".join(lines)


def run_command(params: RunParams) -> int:
    """``stam synthetic run`` with its parameters: :func:`rates_experiment`, :func:`rates_text` on stdout; 0."""
    print(rates_text(rates_experiment(params)))
    return 0


class CompareRun(NamedTuple):
    """What :func:`compare_experiment` returns: the ``synthetic-compare`` result (as written), the problem it
    ran on and the file written."""

    result: dict
    problem: object
    path: Path


def compare_experiment(params: CompareParams) -> CompareRun:
    """``stam synthetic compare`` as a library call (its parameters: :class:`stam.synthetic.params.CompareParams`):
    checked, run and written; returns the ``synthetic-compare`` result, the problem and the file written."""
    from stam.synthetic.baselines import compare
    from stam.synthetic.methods import COMPARE
    from stam.theory.symbolic.numeric import StepSizes

    stem = f"compare-{_stem_name(params)}"
    out = check_out_dir(params.out)
    check_out_file(out / f"{stem}.json")
    R = params.R if params.R is not None else params.default_R
    times = float(params.budget) * R * params.n / (COMPARE_DEFAULTS["budget"] * COMPARE_DEFAULTS["R"] * 32)
    require(times <= WORK_LIMIT, f"--budget {params.budget} sample gradients for --R {R} runs at --n {params.n} are about "
            f"{times:.3g} times the default comparison's work, above the limit of {WORK_LIMIT}; lower them")
    with _guarded(params.problem), _user_limits(f"the problem at n = {params.n}, N = {params.N}"):
        problem = _problem(params)
    _say_work(times, f"stam synthetic compare: --budget {params.budget} for --R {R} runs")
    try:
        with _guarded(params.problem), _user_limits(f"--R {R} runs at n = {params.n}"):
            result = compare(problem, params.budget, R=R, step_sizes=StepSizes(gamma=params.gamma, beta=params.beta),
                             seed=params.seed, progress=params.progress)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    result = dict(result, provenance=provenance())
    return CompareRun(result, problem, COMPARE.write(result, out / f"{stem}.json"))


def compare_text(done: CompareRun) -> str:
    """What ``stam synthetic compare`` prints of :func:`compare_experiment`'s result: the problem, the settings,
    the table and the file written."""
    from stam.synthetic.baselines import format_table

    result, problem, path = done
    p = result["params"]
    return "\n".join([problem.describe(),
                      f"budget {p['budget']} sample gradients per run, R = {p['R']}, gamma = {p['gamma']:.4g}, "
                      f"y-step 1/beta = {p['step']:.4g} ({p['beta_rule']}); Theorem conv's hypotheses at STAM's "
                      f"(gamma, beta): {'hold' if p['admissible'] else 'fail: ' + p['violations']}",
                      format_table(result), f"wrote {path}"])


def compare_command(params: CompareParams) -> int:
    """``stam synthetic compare`` with its parameters: :func:`compare_experiment`, :func:`compare_text` on stdout; 0."""
    print(compare_text(compare_experiment(params)))
    return 0


def sweep_specs(params, names: dict | None = None) -> list[tuple[str, dict]]:
    """``(stem, spec)`` of every job of the sweep ``params`` (:class:`stam.synthetic.params.SweepParams`; each
    cell once), for :func:`stam.jobs.run_jobs`: the spec is the parameters' :meth:`~SweepParams.spec` (R and
    the horizons, every field marked ``job``) and the cell's own coordinates (the problem, its seed, the
    gamma fraction; for a ``FILE.py:NAME`` problem also the SHA-256 of the file, so that an edited file is
    run again).  ``names`` maps a ``FILE.py:NAME`` problem to the name in its file names."""
    names = names or {}
    base = params.spec()
    out = []
    for problem, seed, frac in dict.fromkeys(itertools.product(params.problems, params.seeds, params.gamma_fractions)):
        spec = {**base, "problem": problem, "seed": seed, "gamma_fraction": frac}
        if is_file_spec(problem):
            spec["file_sha256"] = _file_digest(split_spec(problem, "--problems")[0])
        out.append((f"rates-{names.get(problem, problem)}-seed{seed}-gf{frac:g}", spec))
    return out


def _file_digest(path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def check_rates_job(result: dict, spec: dict, path) -> None:
    """A sweep job's result makes sense (its type :data:`stam.synthetic.rates.RATES`) and is the
    result of its spec: a damaged or impossible stored one is computed again
    (:func:`stam.jobs.run_jobs`' ``check``), never written out."""
    from stam.synthetic.rates import RATES

    RATES.validate(result, path)
    p = result["params"]
    if p.get("seed") != spec["seed"] or p.get("gamma_fraction") != spec["gamma_fraction"] or p.get("R") != spec["R"] \
            or p.get("T_grid") != spec["T_grid"]:
        raise ValueError(f"{path}: params do not match the job's spec")


def _sweep_problem(spec: str, seed: int):
    """A sweep's problem: a built-in family at its defaults, or ``FILE.py:NAME`` given ``seed``."""
    from stam.synthetic.api import PROBLEM_METHODS, check_problem
    from stam.synthetic.problems import make_problem

    if not is_file_spec(spec):
        return make_problem(spec, seed=seed)
    problem = load(spec, PROBLEM_METHODS, "--problems", offer=dict(seed=seed))[1]
    check_problem(problem, f"--problems {spec!r}")
    return problem


def _one_instance_per_seed(spec: str, seeds) -> None:
    """A sweep's seeds name problem instances (``rates-NAME-seedS``): a user's ``FILE.py:NAME`` given
    several seeds must be a function taking ``seed=`` (:func:`stam.userfile.build` offers it), else one
    instance would run under several seed names (issue 40 item 6): one line, before any job."""
    from stam.synthetic.api import PROBLEM_METHODS
    from stam.userfile import accepts, load_object

    if len(seeds) < 2:
        return
    name, obj = load_object(spec, "--problems")
    builds = callable(obj) and not all(hasattr(obj, m) for m in PROBLEM_METHODS)
    if not (builds and accepts(obj, "seed")):
        what = f"{name} takes no seed=" if builds else f"{name} is one problem object, not a function of seed="
        raise UsageError(f"--problems {spec!r}: {what}, so --seeds {','.join(map(str, seeds))} would run one problem "
                         f"instance under {len(seeds)} seed names; give one seed, or let {name} take seed=")


def sweep_job(spec: dict) -> dict:
    """One job of a sweep (:func:`sweep_specs`), on whichever process or cluster worker
    :func:`stam.jobs.run_jobs` sends it to: the rate experiment's result."""
    import torch

    from stam.synthetic.rates import run_rates
    from stam.theory.symbolic.numeric import StepSizes

    torch.set_num_threads(1)
    with _guarded(spec["problem"], "--problems"):  # a user's problem failing: one line naming its file
        problem = _sweep_problem(spec["problem"], spec["seed"])
        return run_rates(problem, spec["T_grid"], R=spec["R"], step_sizes=StepSizes(gamma_fraction=spec["gamma_fraction"]),
                         seed=spec["seed"], progress=False)


class SweepRun(NamedTuple):
    """What :func:`sweep_experiment` returns: each job's ``synthetic-rates`` result and the stem of its
    files (``rates-...``, written in ``out``)."""

    results: list
    stems: list
    out: Path


def sweep_experiment(args: SweepParams) -> SweepRun:
    """``stam synthetic sweep`` as a library call: the jobs run by the one job engine (:func:`stam.jobs.run_jobs`:
    resumable from ``OUT/jobs``, ``--workers`` local processes or a ``--scheduler`` cluster); the
    result files are written together once every job has its result.  Says on stdout, before the work,
    how many jobs are stored already (:func:`sweep_command` prints the files written)."""
    from stam.jobs import run_jobs, stored

    problems = args.problems  # lists parsed by stam.cliargs.ListArg
    unknown = [p for p in problems if p not in NAMES and not is_file_spec(p)]
    if unknown:
        raise UsageError(f"--problems: unknown problem {unknown[0]!r}; known: {', '.join(NAMES)} or FILE.py:NAME")
    seeds = args.seeds
    fractions = args.gamma_fractions
    bad = [f for f in fractions if not 0 < f < 1]
    if bad:
        raise UsageError(f"--gamma-fractions: {bad[0]} is not in (0, 1)")
    T_min = RUN_DEFAULTS["T_min"]
    require(args.T_max >= T_min, f"--T-max {args.T_max} must be >= {T_min}")
    T_grid = args.spec()["T_grid"]  # the horizons every job runs
    per_job = _run_work(args.R, T_grid, SIZE["b"], SIZE["n"]) / _default_run_work()
    require(per_job <= WORK_LIMIT, f"--R {args.R} runs of {len(T_grid)} horizons up to --T-max {args.T_max} are about "
            f"{per_job:.3g} times the default run's work per job, above the limit of {WORK_LIMIT}; lower them")
    out = check_out_dir(args.out)
    names = {}
    for spec in (p for p in problems if is_file_spec(p)):  # load each once here: its errors before any job
        stem_name = split_spec(spec, "--problems")[1]
        with _guarded(spec, "--problems"), _user_limits(f"the problem {spec}"):
            _sweep_problem(spec, seeds[0])
            _one_instance_per_seed(spec, seeds)
        names[spec] = stem_name
    clash = [v for v in names.values() if v in NAMES or list(names.values()).count(v) > 1]
    require(not clash, f"--problems: two problems would share the file names rates-{clash[0] if clash else ''}-*; rename one")
    jobs = sweep_specs(args, names)
    for stem, _ in jobs:
        for suffix in (".json", ".csv"):
            check_out_file(out / f"{stem}{suffix}")
    specs = [spec for _, spec in jobs]
    store = out / "jobs"
    done = sum(stored(specs, store, check_rates_job))
    where = f"on {args.scheduler}" if args.scheduler else f"with --workers {args.workers}"
    print(f"sweep: {len(jobs)} jobs, {done} already in {store} with these settings (skipped), "
          f"{len(jobs) - done} to run {where}")
    _say_work(per_job * (len(jobs) - done), f"stam synthetic sweep: {len(jobs) - done} jobs")
    results = run_jobs(sweep_job, specs, store, scheduler=args.scheduler, workers=args.workers,
                       progress=args.progress, desc="sweep", check=check_rates_job)
    failed = [(stem, r["error"]) for (stem, _), r in zip(jobs, results) if "error" in r]
    require(not failed, f"sweep job {failed[0][0] if failed else ''} failed: {failed[0][1] if failed else ''} "
            f"({len(failed)} of {len(jobs)} failed; the others are stored in {store}, a rerun runs only the failed)")
    for (stem, _), result in zip(jobs, results):
        write_rates(result, out, stem)
    return SweepRun(results, [stem for stem, _ in jobs], out)


def sweep_text(done: SweepRun) -> str:
    """What ``stam synthetic sweep`` prints once :func:`sweep_experiment` is done: the files written."""
    return "\n".join(f"wrote {done.out / stem}.json" for stem in done.stems)


def sweep_command(params: SweepParams) -> int:
    """``stam synthetic sweep`` with its parameters: :func:`sweep_experiment`, :func:`sweep_text` on stdout; 0."""
    text = sweep_text(sweep_experiment(params))
    if text:
        print(text)
    return 0
