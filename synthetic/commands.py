"""Handlers of ``stam synthetic run|compare|sweep`` (imported lazily by :mod:`stam.synthetic.cli`).

Every user mistake becomes a :class:`stam.errors.UsageError` (one line, exit status 2); results
are written atomically (:mod:`stam.io`), so an interrupted command leaves no half-written file.
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

from stam.errors import UsageError, require
from stam.io import atomic_write_json, atomic_write_text, bar_disable, provenance

QUICK = dict(T_min=10, T_max=640, T_points=7, R=8)


def _setup(args):
    import torch

    torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {args.device}: CUDA is not available on this machine; use --device cpu")
    try:
        device = torch.device(args.device)
    except RuntimeError:
        raise UsageError(f"--device {args.device!r} is not a torch device (use cpu or cuda)") from None
    return device, getattr(torch, args.dtype)


def _problem(args, **extra):
    from stam.synthetic.problems import make_problem

    device, dtype = _setup(args)
    require(args.replacement or args.b <= args.N,
            f"--b {args.b} exceeds --N {args.N}: without replacement the batch must be at most N (or add --replacement)")
    try:
        return make_problem(args.problem, n=args.n, N=args.N, b=args.b, replacement=args.replacement, seed=args.seed,
                            device=device, dtype=dtype, **extra)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None


def _fmt(v, spec=".4g"):
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, spec)


def format_rates(result: dict) -> str:
    """The rows of a ``synthetic-rates`` result as a fixed-width table plus the slopes."""
    head = f"{'T':>7} {'beta':>10} {'adm':>4} {'min_t E S_t':>12} {'+- std':>9} {'bound':>10} {'ratio':>9}"
    lines = [head, "-" * len(head)]
    for r in result["rows"]:
        lines.append(f"{r['T']:>7} {_fmt(r['beta']):>10} {('yes' if r['admissible'] else 'no'):>4} "
                     f"{_fmt(r['S_min_mean']):>12} {_fmt(r['S_min_std'], '.2g'):>9} {_fmt(r['bound']):>10} "
                     f"{_fmt(r['ratio']):>9}")
    lines.append(f"fitted log-log slope: S {_fmt(result['slope'], '.3f')}, bound {_fmt(result['bound_slope'], '.3f')}")
    return "\n".join(lines)


def write_rates(result: dict, out_dir, stem: str) -> tuple[Path, Path]:
    """``out_dir/stem.json`` and ``.csv``, each written atomically."""
    from stam.synthetic.rates import rows_csv

    out_dir = Path(out_dir)
    result = dict(result, provenance=provenance())
    return (atomic_write_json(out_dir / f"{stem}.json", result), atomic_write_text(out_dir / f"{stem}.csv", rows_csv(result)))


def run_command(args) -> int:
    from stam.synthetic.cli import PAPER_PRESETS
    from stam.synthetic.rates import InadmissibleError, geometric_grid, run_rates

    if args.quick:
        args.T_min, args.T_max, args.T_points, args.R = QUICK["T_min"], QUICK["T_max"], QUICK["T_points"], min(args.R, QUICK["R"])
    require(args.T_min <= args.T_max, f"--T-min {args.T_min} exceeds --T-max {args.T_max}")
    extra = {}
    gamma, beta, allow = args.gamma, args.beta, args.allow_inadmissible
    if args.preset:
        require(args.problem in ("binary", "cosine"), f"--preset {args.preset} needs a problem with lambda (binary, cosine)")
        lam, gamma, beta = PAPER_PRESETS[args.preset]
        extra["lam"], allow = lam, True
    if args.lam is not None:
        require(args.problem in ("binary", "cosine"), f"--lam is for the problems with lambda (binary, cosine), not {args.problem}")
        extra["lam"] = args.lam
    require(gamma is not None or 0 < args.gamma_fraction < 1,
            f"--gamma-fraction {args.gamma_fraction} must be in (0, 1) (for a larger gamma give --gamma and --beta)")
    problem = _problem(args, **extra)
    try:
        result = run_rates(problem, geometric_grid(args.T_min, args.T_max, args.T_points), R=args.R, gamma=gamma,
                           beta=beta, gamma_fraction=args.gamma_fraction, allow_inadmissible=allow, seed=args.seed,
                           progress=not args.no_progress)
    except (InadmissibleError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if args.preset:
        result["params"]["preset"] = args.preset
    json_path, csv_path = write_rates(result, args.out, f"rates-{args.problem}")
    print(problem.describe())
    print(f"gamma = {result['params']['gamma']:.4g} ({result['params']['gamma_rule']}), beta: {result['params']['beta_rule']}")
    print(format_rates(result))
    print(f"wrote {json_path} and {csv_path}")
    return 0


def compare_command(args) -> int:
    from stam.synthetic.baselines import compare, format_table

    problem = _problem(args)
    try:
        result = compare(problem, args.budget, R=args.R, gamma=args.gamma, beta=args.beta, seed=args.seed,
                         progress=not args.no_progress)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    path = atomic_write_json(Path(args.out) / f"compare-{args.problem}.json", dict(result, provenance=provenance()))
    print(problem.describe())
    p = result["params"]
    print(f"budget {p['budget']} sample gradients per run, R = {p['R']}, gamma = {p['gamma']:.4g}, "
          f"y-step 1/beta = {p['step']:.4g} ({p['beta_rule']})")
    print(format_table(result))
    print(f"wrote {path}")
    return 0


def _split(text: str, cast, name: str) -> list:
    try:
        values = [cast(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--{name} {text!r}: expected a comma-separated list") from None
    require(values, f"--{name} is empty")
    return values


def sweep_jobs(problems, seeds, fractions, out_dir) -> list[tuple]:
    """(problem, seed, fraction, stem) for every combination, and whether its result exists."""
    jobs = []
    for problem, seed, frac in itertools.product(problems, seeds, fractions):
        stem = f"rates-{problem}-seed{seed}-gf{frac:g}"
        jobs.append((problem, seed, frac, stem, (Path(out_dir) / f"{stem}.json").exists()))
    return jobs


def sweep_job(problem_name: str, seed: int, fraction: float, stem: str, out_dir: str, R: int, T_max: int, T_points: int) -> str:
    """One sweep job in its own process: the rate experiment, written atomically."""
    import torch

    from stam.synthetic.problems import make_problem
    from stam.synthetic.rates import geometric_grid, run_rates

    torch.set_num_threads(1)
    problem = make_problem(problem_name, seed=seed)
    result = run_rates(problem, geometric_grid(10, T_max, T_points), R=R, gamma_fraction=fraction, seed=seed,
                       progress=False)
    write_rates(result, out_dir, stem)
    return stem


def sweep_command(args) -> int:
    from joblib import Parallel, delayed
    from tqdm import tqdm

    from stam.synthetic.cli import PROBLEM_NAMES

    problems = _split(args.problems, str, "problems")
    unknown = [p for p in problems if p not in PROBLEM_NAMES]
    if unknown:
        raise UsageError(f"--problems: unknown problem {unknown[0]!r}; known: {', '.join(PROBLEM_NAMES)}")
    seeds = _split(args.seeds, int, "seeds")
    fractions = _split(args.gamma_fractions, float, "gamma-fractions")
    bad = [f for f in fractions if not 0 < f < 1]
    if bad:
        raise UsageError(f"--gamma-fractions: {bad[0]} is not in (0, 1)")
    require(args.T_max >= 10, f"--T-max {args.T_max} must be >= 10")
    jobs = sweep_jobs(problems, seeds, fractions, args.out)
    todo = [j for j in jobs if not j[4]]
    print(f"sweep: {len(jobs)} jobs, {len(jobs) - len(todo)} already on disk (skipped), {len(todo)} to run with -j {args.jobs}")
    runner = Parallel(n_jobs=args.jobs, return_as="generator_unordered")
    done = runner(delayed(sweep_job)(p, s, f, stem, args.out, args.R, args.T_max, args.T_points) for p, s, f, stem, _ in todo)
    for stem in tqdm(done, total=len(todo), desc="sweep", disable=bar_disable(not args.no_progress), file=sys.stderr):
        print(f"wrote {Path(args.out) / stem}.json")
    return 0
