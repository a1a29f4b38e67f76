"""``stam pep``: the exact worst case of STAM (performance estimation; F of a chosen class, the full
gradient or b-nice minibatches) beside
Theorem conv's bound; ``stam pep --region``: where a Lyapunov function certifies the rate and where
the PEP refutes the theorem's form (:mod:`stam.theory.lyapunov`).  Registering imports nothing
heavy; PEPit and cvxpy load when it runs."""

from __future__ import annotations

import contextlib
import math
import sys

from stam.cliargs import ListArg, RangeArg, add_out
from stam.jobs import add_scheduler_args
from stam.errors import UsageError, positive_float, positive_int, require
from stam.io import check_out_file

#: the largest Gram matrix ``stam pep`` builds without ``--force``: ``2T + 2`` points (``2T + 3``
#: with ``--free-start``), so T <= 24.  The SDP has O(T^2) interpolation constraints, each of
#: Gram size: on 2 CPU cores T = 10 takes about 5 s, T = 20 about 20 s, and the time grows
#: like T^4 or faster (T = 100000 would not finish).
MAX_GRAM = 50
#: the most work a sweep does without ``--force``, in units of the largest PEP allowed (the work
#: of one PEP counted as ``(Gram size / MAX_GRAM)^4``): a few minutes on 2 cores.
MAX_SWEEP_WORK = 4.0
#: ``--region --gamma-range LO:HI:N``: N gammas scanned, at most ``lyapunov.SCAN_MAX_STEPS + 1``
MAX_SCAN_POINTS = 111
POSITIVE_LIST = ListArg(positive_float, "numbers > 0", "0.1,1,10")


def gram_size(T: int, free_start: bool = False, N: int = 1, b: int = 1) -> int:
    """Points of the PEP of :func:`stam.theory.pep.stam_pep` for horizon ``T`` (its Gram matrix is
    this size; :func:`stam.theory.pep.gram_size`, which imports nothing heavy): ``2T + 2`` for the
    full gradient, one more for a free ``z^{-1}``; with minibatches it grows like ``C(N, b)^T``."""
    from stam.theory.pep import gram_size as size

    return size(T, N=N, b=b, free_start=free_start)


def _check_size(args) -> None:
    """Refuse, before any work, a PEP above :data:`MAX_GRAM` and a sweep above
    :data:`MAX_SWEEP_WORK` unless ``--force``; a horizon listed twice is an error."""
    T = args.T if args.T is not None else max(args.sweep_T)
    N, b = args.N, args.b
    size = gram_size(T, args.free_start, N, b)
    Tmax = max([t for t in range(1, 25) if gram_size(t, args.free_start, N, b) <= MAX_GRAM], default=0)
    shown = "more than 2^64" if size == math.inf else f"{size} x {size}"
    sampled = "" if (N, b) == (1, 1) else f" with --N {N} --b {b}"
    require(args.force or size <= MAX_GRAM,
            f"--T {T}{sampled} gives a PEP with a Gram matrix of size {shown}, above the limit {MAX_GRAM} "
            f"(T <= {Tmax}; the solve grows like T^4 or faster); "
            "add --force to run it anyway")
    if args.sweep_T is not None:
        twice = sorted({t for t in args.sweep_T if args.sweep_T.count(t) > 1})
        require(not twice, f"--sweep-T lists {', '.join(map(str, twice))} more than once; give each horizon once")
        work = sum((gram_size(t, args.free_start, N, b) / MAX_GRAM) ** 4 for t in args.sweep_T)
        require(args.force or work <= MAX_SWEEP_WORK,
                f"--sweep-T with {len(args.sweep_T)} horizons up to T = {T} is about {work:.3g} times the largest single "
                f"PEP allowed, above the limit {MAX_SWEEP_WORK:g}; give fewer or smaller horizons, or add --force")


def _fmt(value, digits: int = 6) -> str:
    return "none" if value is None else f"{value:.{digits}g}"


def _status_note(row: dict) -> str:
    status = row["status"]
    if status == "optimal":
        return f"optimal ({row['solver']}, {row['seconds']:.2f} s)"
    if status == "unbounded":
        norm = "delta0 + M0'_T" if (row.get("N", 1), row.get("b", 1)) == (1, 1) else "delta0 + Delta + M0'_T"
        return (f"UNBOUNDED ({row['solver']}): {norm} <= 1 bounds nothing; the worst case is +infinity "
                "(M0'_T: the first T + 1 merits; a bound with the printed theorem's M0' is not refuted)")
    note = f"{status.upper()} ({row['solver']}): not a certified worst case"
    if row.get("unverified_value") is not None:
        note += f"; the solver's unverified value was {_fmt(row['unverified_value'])}"
    return note


def _admissible_note(row: dict) -> str:
    if row["admissible"]:
        return "yes"
    parts = [f"{v['condition']} ({_fmt(v['value'], 4)} vs {_fmt(v['limit'], 4)})" for v in row["violations"]]
    return "NO: " + "; ".join(parts)


def _method_text(f_class: str, N: int, b: int) -> str:
    from stam.theory.pep import F_CLASS_TEXT

    grad = "full gradient" if (N, b) == (1, 1) else f"b-nice minibatches N={N} b={b}"
    return f"STAM ({grad}; {F_CLASS_TEXT[f_class]})"


def _print_row(args, row: dict) -> None:
    print(f"{_method_text(args.F, args.N, args.b)}, lam={args.lam:g} gamma={args.gamma:g} beta={args.beta:g} "
          f"L1={args.L1:g} T={row['T']}" + (" (free z^-1)" if args.free_start else ""))
    metric = "min_t S_t" if (args.N, args.b) == (1, 1) else "min_t E S_t"
    print(f"  worst case of {metric} (PEP) : {_fmt(row['worst_case'])}   status: {_status_note(row)}")
    norm = "delta0 + M0'_T = 1" if (args.N, args.b) == (1, 1) else "delta0 + Delta + M0'_T = 1"
    print(f"  paper bound (Theorem conv)    : {_fmt(row['bound'])}   for {norm}; admissible: "
          f"{_admissible_note(row)}")
    note = "" if row["ratio"] is None or row["admissible"] else "   (hypotheses fail: the bound is not guaranteed)"
    print(f"  ratio worst case / bound      : {_fmt(row['ratio'], 4)}{note}")


def _print_sweep(sweep: dict) -> None:
    print(f"{'T':>4} {'worst case':>14} {'bound':>14} {'ratio':>10}  status")
    for r in sweep["rows"]:
        print(f"{r['T']:>4} {_fmt(r['worst_case']):>14} {_fmt(r['bound']):>14} {_fmt(r['ratio'], 4):>10}  {r['status']}")


@contextlib.contextmanager
def _beyond_floats(args):
    """Parameters whose PEP has coefficients beyond floating point (cvxpy refuses data with inf or
    nan; an overflow in building it) as a one-line usage error."""
    try:
        yield
    except (ValueError, ArithmeticError) as exc:
        text = str(exc)
        if not isinstance(exc, ArithmeticError) and "NaN or Inf" not in text and "=inf is not allowed" not in text:
            raise
        raise UsageError(f"--lam {args.lam:g} --gamma {args.gamma:g} --beta {args.beta:g} --L1 {args.L1:g}: the PEP's "
                         f"coefficients (products and ratios of these) are beyond floating point "
                         f"({text.splitlines()[0] if text else type(exc).__name__}); give values of ordinary size") from None


def _pep(args) -> int:
    from stam.io import dumps
    from stam.theory import pep

    solver = None if args.solver == "auto" else args.solver
    require((args.N is None) == (args.b is None),
            "give --N and --b together (the sampled gradient: G = (1/N) sum G_i, minibatches of b)")
    if args.N is not None:
        from stam.theory.pep import MAX_N

        require(args.N <= MAX_N, f"--N {args.N} must be at most {MAX_N} (every one of the C(N, b) minibatches is enumerated)")
        require(args.b <= args.N, f"--b {args.b} must be at most --N {args.N}")
    if args.region:
        return _region(args, solver)
    args.N, args.b = (args.N or 1), (args.b or 1)
    stray = [f for f in ("lams", "betas", "gamma_range", "workers", "scheduler") if getattr(args, f) is not None]
    require(not stray, f"{', '.join('--' + f.replace('_', '-') for f in stray)}: only with --region")
    missing = [flag for flag in ("lam", "gamma", "beta") if getattr(args, flag) is None]
    require(not missing, f"{', '.join('--' + m for m in missing)} required (all three, except with --region)")
    require((args.T is None) != (args.sweep_T is None), "give exactly one of --T N and --sweep-T N1,N2,...")
    if args.out is not None:
        check_out_file(args.out, "--out")
    _check_size(args)
    if args.sweep_T is None:
        require(args.out is None, "--out is for --sweep-T (a single run prints; use --json for scripts)")
        with _beyond_floats(args):
            row = pep.compare(args.lam, args.gamma, args.beta, args.T, L1=args.L1, free_start=args.free_start,
                              solver=solver, f_class=args.F, N=args.N, b=args.b)
        row = {"lam": args.lam, "gamma": args.gamma, "beta": args.beta, "L1": args.L1, **row}
        if args.json:
            print(dumps(row))
        else:
            _print_row(args, row)
        return 0
    require(args.out is not None, "--sweep-T writes a result file: give --out FILE.json")
    with _beyond_floats(args):
        sweep = pep.pep_sweep(args.lam, args.gamma, args.beta, args.sweep_T, L1=args.L1, free_start=args.free_start,
                              solver=solver, f_class=args.F, N=args.N, b=args.b)
    pep.PEP_SWEEP.write(sweep, args.out)
    if args.json:
        print(dumps(sweep))
    else:
        _print_sweep(sweep)
        print(f"wrote {args.out}")
    return 0


def _fmt_bracket(part: dict) -> str:
    lo = "none" if part["lo"] is None else f"{part['lo']:.4g}"
    hi = "none" if part["hi"] is None else f"{part['hi']:.4g}"
    return f"[{lo}, {hi}){'?' if part.get('hi_unverified') else ''}{'*' if part.get('start_unverified') else ''}"


#: the head of the refuted column of ``stam pep --region`` (under delta0 + M0'_T <= 1)
REFUTED_HEAD = "gamma (M0'_T)"
#: the notes under the table of ``stam pep --region``: a bracket marked "?" (:func:`_fmt_bracket`), the
#: normalisation of the refutation, the Theorem conv column (:func:`_theorem_cell`).
REGION_NOTES = (
    "?: at the end of the bracket the solver's optimal rate failed the verification (solver accuracy): not certified "
    "there, nor shown to be the template's limit",
    "*: the interval from the first certified gamma of the scan up (the rates below it were not verified; 'start' in "
    "the file)",
    "refuted: stam pep unbounded under delta0 + M0'_T <= 1 (the first T + 1 merits): no bound of Theorem conv's form "
    "with M0'_T; the printed theorem's M0' (all t) is not refuted by it. Certificates bound min_t S_t by "
    "(delta0 + M0'_T)/(rho T) <= (delta0 + M0')/(rho T)",
    "Theorem conv: the paper form at 0.5 and 0.99 gamma_max with the theorem's beta = ceil(2 K2/K1), full gradient and "
    "sampled; yes (c): certified with 1/rho <= c beta (the theorem's constant is >= 2 beta)",
)


def _theorem_cell(theorem: dict) -> str:
    """``yes (1.01)`` when Theorem conv's region is certified (:func:`stam.theory.lyapunov.theorem_region`:
    the largest ``1/(rho beta)``), else ``no`` with the number of points certified."""
    if theorem["certified"]:
        return f"yes ({theorem['max_inv_rho_beta']:.3f})"
    return f"no ({sum(p['certified'] for p in theorem['points'])}/{len(theorem['points'])})"


#: CPU seconds of one lambda of the default region (13 betas, N = 2, b = 1, both classes of F),
#: measured on the 2-core CPU sandbox: the default region's 12 lambdas took 58-70 s of CPU (issue 22: one
#: cvxpy problem per shape; it was 190-197 s)
REGION_S_PER_LAMBDA = 6.0
#: from this many estimated CPU seconds on, ``stam pep --region`` says the estimate before it starts
REGION_SAY_S = 30.0
#: the most CPU work ``stam pep --region`` does without ``--force`` (seconds)
MAX_REGION_WORK_S = 1800.0


def region_work_s(n_lams: int, n_betas: int, sampling) -> float:
    """A rough estimate of the CPU seconds of ``stam pep --region``: :data:`REGION_S_PER_LAMBDA` per
    lambda, in proportion to the betas, and the cube of the sampled branches C(N, b) against the
    default's 2 (an SDP's time grows about so with its size; docs/benchmarks.md's table of sizes)."""
    branches = math.comb(int(sampling[0]), int(sampling[1]))
    return REGION_S_PER_LAMBDA * n_lams * (n_betas / 13) * max(1.0, (branches / 2) ** 3)


def region_store(out) -> "Path":
    """The job store of ``stam pep --region --out FILE.json`` (:func:`stam.jobs.run_jobs`): the folder ``FILE-jobs``
    beside it, one file per lambda; a rerun with the same settings reuses the rows there."""
    from pathlib import Path

    out = Path(out)
    return out.with_name(out.stem + "-jobs")


def _region(args, solver) -> int:
    """``stam pep --region``: the certified and the refuted region (:func:`stam.theory.lyapunov.region`)."""
    from stam.io import dumps
    from stam.theory import lyapunov

    extra = [flag for flag in ("lam", "gamma", "beta", "T", "sweep_T") if getattr(args, flag) is not None]
    require(not extra, f"--region searches over gamma and beta itself; drop {', '.join('--' + e.replace('_', '-') for e in extra)}"
            " (give lambdas with --lams)")
    require(not args.free_start, "--free-start is for a single PEP, not for --region")
    require(args.out is not None, "--region writes a result file: give --out FILE.json")
    check_out_file(args.out, "--out")
    sampling = (args.N, args.b) if args.N is not None else lyapunov.REGION_SAMPLING
    lams = args.lams or lyapunov.REGION_LAMS
    betas = args.betas or lyapunov.REGION_BETAS
    gamma_range = args.gamma_range or lyapunov.REGION_GAMMA_RANGE
    classes = [args.F] + (["convex"] if args.F != "convex" else [])
    seconds = region_work_s(len(lams), len(betas), sampling)
    require(args.force or seconds <= MAX_REGION_WORK_S,
            f"--region with {len(lams)} lambdas, {len(betas)} betas and N = {sampling[0]}, b = {sampling[1]} is about "
            f"{seconds / 60:.0f} min of CPU, above the limit of {MAX_REGION_WORK_S / 60:.0f} min; give fewer --lams/--betas "
            "or a smaller N, or add --force")
    if seconds >= REGION_SAY_S:  # long work is announced before it starts
        print(f"stam pep --region: about {seconds / 60:.1f} min of CPU (estimate)", file=sys.stderr, flush=True)
    header = [f"{'':>20}{'certified gamma, full gradient':>40}   {'sampled N=%d b=%d' % sampling:>17}   {'refuted from':>15}"
              f"   {'Theorem conv':>12}",
              f"{'class of F':>9} {'lambda':>9} {'gamma_max':>10} {'general':>17} {'paper':>17}   {'paper':>17}   "
              f"{REFUTED_HEAD:>15}   {'certified':>12}"]

    def show(row):
        if not args.json:
            while header:  # printed with the first rows: an error before it leaves stdout empty
                print(header.pop(0))
            for cls in classes:
                part = row if cls == args.F else row[cls]
                sampled = _fmt_bracket(row["sampled"]) if cls == args.F else "-"
                print(f"{cls:>9} {row['lam']:>9.4g} {row['gamma_theorem']:>10.4g} {_fmt_bracket(part['general']):>17} "
                      f"{_fmt_bracket(part['paper']):>17}   {sampled:>17}   {_fmt_bracket(part['refuted']):>15}   "
                      f"{_theorem_cell(row['theorem']) if cls == args.F else '-':>12}", flush=True)

    try:
        workers = args.workers or (1 if args.scheduler else lyapunov.default_workers())
        result = lyapunov.region(lams, betas, L1=args.L1, gamma_range=gamma_range, solver=solver, progress=show,
                                 f_class=args.F, sampling=sampling, workers=workers, scheduler=args.scheduler,
                                 store=region_store(args.out), bar=sys.stderr.isatty())
    except (ValueError, ArithmeticError) as exc:  # coefficients beyond floating point (cvxpy refuses inf/nan)
        if not isinstance(exc, ArithmeticError) and "NaN or Inf" not in str(exc):
            raise
        raise UsageError("--lams/--betas/--gamma-range/--L1: the SDP's coefficients (products and ratios of these) "
                         "are beyond floating point; give values of ordinary size") from None
    lyapunov.REGION.write(result, args.out)
    if args.json:
        print(dumps(result))
    else:
        for line in REGION_NOTES:
            print(line)
        print(f"wrote {args.out} ({result['seconds']:.0f} s)")
    return 0


def _handler(args) -> int:
    try:
        return _pep(args)
    except ImportError as exc:  # the optional extra is missing
        raise UsageError(f"stam pep needs the 'pep' extra (pip install 'stam-toolkit[pep]'): {exc}") from None


def register(subparsers) -> None:
    """Add ``stam pep``."""
    p = subparsers.add_parser(
        "pep",
        help="exact worst case of STAM (performance estimation; nonconvex or convex F, full or minibatch "
        "gradients) vs Theorem conv's bound",
        description="Performance estimation (PEPit + cvxpy): the largest min_{t<T} E S_t, S_t the stationarity "
        "measure of Theorem conv, that T iterations of STAM can reach over every L1-smooth G, H = (lam/2)||x-y||^2 "
        "and F of the class --F (default: any proper lsc F, the paper's class; exact interpolation through its "
        "proximal step), with delta0 + M0'_T <= 1 (M0'_T = M_0 - min_{t<=T} M_t, the finite-horizon form of the "
        "paper's M0'; with --N/--b, G = (1/N) sum G_i, every minibatch path enumerated, and delta0 + Delta + "
        "M0'_T <= 1), beside the theorem's bound for the same normalisation (corrected constants) and their "
        "ratio. A solver status other than optimal is printed as such.",
    )
    p.add_argument("--lam", type=positive_float, default=None, help="coupling weight lambda of H (> 0)")
    p.add_argument("--gamma", type=positive_float, default=None, help="step size gamma of the x/u-steps (> 0)")
    p.add_argument("--beta", type=positive_float, default=None, help="proximal weight beta of the y-step (> 0)")
    p.add_argument("--T", type=positive_int, default=None, help="iterations (>= 1)")
    p.add_argument("--sweep-T", type=ListArg(positive_int, "horizons (integers >= 1)", "1,2,3"), default=None, metavar="N1,N2,...",
                   help="several horizons; writes a pep-sweep result file (--out)")
    p.add_argument("--L1", type=positive_float, default=1.0, help="Lipschitz constant of grad G (default 1)")
    p.add_argument("--F", choices=("lsc", "indicator", "convex"), default="lsc",
                   help="class of F, reached through its proximal step: lsc = any proper lower semicontinuous F "
                   "(nonconvex; the paper's class, the default), indicator = the indicator of any closed set, "
                   "convex = closed proper convex")
    p.add_argument("--N", type=positive_int, default=None,
                   help="sampled gradient: G = (1/N) sum_i G_i, each G_i L1-smooth (with --b; default: the full gradient; "
                   "--region: N=2)")
    p.add_argument("--b", type=positive_int, default=None,
                   help="minibatch size of the b-nice sampling (1 <= b <= N; every C(N, b) minibatch of every step "
                   "is enumerated; --region default 1)")
    p.add_argument("--free-start", action="store_true",
                   help="z^{-1} is a free point (default: z^{-1} = y^0, as stam_init)")
    p.add_argument("--solver", choices=("auto", "clarabel", "scs"), default="auto",
                   help="SDP solver (default auto: Clarabel, then SCS if Clarabel is not optimal)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--force", action="store_true",
                   help=f"solve a PEP above the size limit (Gram matrix {MAX_GRAM} x {MAX_GRAM}, T <= 24)")
    add_out(p, metavar="FILE", help="result file for --sweep-T and --region (JSON)")
    g = p.add_argument_group("--region: the (gamma, lambda) region where a Lyapunov function certifies the rate O(1/T) "
                             "(stam.theory.lyapunov) and where this PEP is unbounded")
    g.add_argument("--region", action="store_true",
                   help="for each lambda, the largest gamma with a Lyapunov certificate (best beta of a grid; bisection "
                   "bracket) and the smallest gamma where the PEP is unbounded; writes a lyapunov-region file (--out)")
    g.add_argument("--lams", type=POSITIVE_LIST, default=None, metavar="L1,L2,...",
                   help="lambdas (default: 12 on a log grid from 0.01 to 31.6)")
    g.add_argument("--betas", type=POSITIVE_LIST, default=None, metavar="B1,B2,...",
                   help="the beta grid of the search (default: 13 from 1 to 1e6, log grid)")
    g.add_argument("--gamma-range", type=RangeArg("0.01:100:51", min_points=2, max_points=MAX_SCAN_POINTS), default=None,
                   metavar="LO:HI:N", help="where gamma is searched: N gammas from LO to HI, geometrically spaced, scanned "
                   "upwards, then log bisection after the last certified (default: 1e-4 to 1e4 by factors of 1.2)")
    add_scheduler_args(g, workers=None)  # the toolkit's one job engine (stam.jobs): the lambdas are its jobs
    for action in g._group_actions:
        if action.dest == "workers":
            action.help = ("the lambdas in N local processes (default: 2 where 2 CPUs are visible, else 1; the result is "
                           "the same); not with --scheduler")
    p.set_defaults(func=_handler)
