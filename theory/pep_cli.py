"""``stam pep``: the exact worst case of STAM (performance estimation; F of a chosen class, the full
gradient or b-nice minibatches) beside
Theorem conv's bound; ``stam pep --region``: where a Lyapunov function certifies the rate and where
the PEP refutes the theorem's form (:mod:`stam.theory.worstcase.lyapunov`).  Each mode has one library entry
taking its parameters, the result returned: :func:`run_pep` (a ``PepParams``), :func:`run_region` (``--region``, a
``RegionParams``), :func:`run_certify`, :func:`run_check`, :func:`run_family` (``--certify``, ``--check``,
``--family``); the handler calls it and prints the result.  Registering imports nothing heavy; PEPit and cvxpy load when it runs."""

from __future__ import annotations

import contextlib
import math
import sys

from typing import TYPE_CHECKING

from stam.errors import UsageError, require

if TYPE_CHECKING:
    from pathlib import Path

    from stam.theory.params import CertifyParams, CheckParams, FamilyParams, PepParams, RegionParams

# (the toolkit's modules below are imported where they are used: registering ``stam pep`` for ``stam --help``
# imports none of them)
# MAX_GRAM, the largest Gram matrix ``stam pep`` builds without ``--force``: stam.theory.params (the help of --force)

#: the most work a sweep does without ``--force``, in units of the largest PEP allowed (the work
#: of one PEP counted as ``(Gram size / MAX_GRAM)^4``): a few minutes on 2 cores.
MAX_SWEEP_WORK = 4.0


def _check_size(params: PepParams) -> None:
    """Refuse, before any work, a PEP above :data:`MAX_GRAM` and a sweep above
    :data:`MAX_SWEEP_WORK` unless ``force``; a horizon listed twice is an error."""
    from stam.theory.params import MAX_GRAM
    from stam.theory.worstcase.pep import gram_size

    T = params.T if params.T is not None else max(params.sweep_T)
    (N, b), free_start, sweep_T = params.sampling, params.free_start, params.sweep_T
    size = gram_size(T, N=N, b=b, free_start=free_start)
    Tmax = max([t for t in range(1, 25) if gram_size(t, N=N, b=b, free_start=free_start) <= MAX_GRAM], default=0)
    shown = "more than 2^64" if size == math.inf else f"{size} x {size}"
    sampled = "" if (N, b) == (1, 1) else f" with --N {N} --b {b}"
    require(params.force or size <= MAX_GRAM,
            f"--T {T}{sampled} gives a PEP with a Gram matrix of size {shown}, above the limit {MAX_GRAM} "
            f"(T <= {Tmax}; the solve grows like T^4 or faster); "
            "add --force to run it anyway")
    if sweep_T is not None:
        twice = sorted({t for t in sweep_T if sweep_T.count(t) > 1})
        require(not twice, f"--sweep-T lists {', '.join(map(str, twice))} more than once; give each horizon once")
        work = sum((gram_size(t, N=N, b=b, free_start=free_start) / MAX_GRAM) ** 4 for t in sweep_T)
        require(params.force or work <= MAX_SWEEP_WORK,
                f"--sweep-T with {len(sweep_T)} horizons up to T = {T} is about {work:.3g} times the largest single "
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
    from stam.theory.worstcase.pep import F_CLASS_TEXT

    grad = "full gradient" if (N, b) == (1, 1) else f"b-nice minibatches N={N} b={b}"
    return f"STAM ({grad}; {F_CLASS_TEXT[f_class]})"


def _bound_text(row: dict) -> str:
    """The bound of Theorem conv as the text prints it: a number, or, where the hypotheses hold but it
    is not a finite number (``beta = 1e308``: ``2 q^T beta (delta0 + M0') / T`` overflows), why there
    is none, so that "none" never stands beside "admissible: yes" unexplained (issue 40 item 6)."""
    if row["bound"] is not None:
        return _fmt(row["bound"])
    return "beyond floating point (the bound grows with beta)" if row["admissible"] else "none"


def _print_row(params: PepParams, row: dict) -> None:
    full = params.sampling == (1, 1)
    print(f"{_method_text(params.f_class, *params.sampling)}, lam={params.lam:g} gamma={params.gamma:g} "
          f"beta={params.beta:g} L1={params.L1:g} T={row['T']}" + (" (free z^-1)" if params.free_start else ""))
    metric = "min_t S_t" if full else "min_t E S_t"
    print(f"  worst case of {metric} (PEP) : {_fmt(row['worst_case'])}   status: {_status_note(row)}")
    norm = "delta0 + M0'_T = 1" if full else "delta0 + Delta + M0'_T = 1"
    print(f"  paper bound (Theorem conv)    : {_bound_text(row)}   for {norm}; admissible: "
          f"{_admissible_note(row)}")
    note = "" if row["ratio"] is None or row["admissible"] else "   (hypotheses fail: the bound is not guaranteed)"
    if row["ratio"] is None and row["bound"] is None and row["admissible"]:
        note = "   (no ratio: the bound is beyond floating point)"
    print(f"  ratio worst case / bound      : {_fmt(row['ratio'], 4)}{note}")


def _print_sweep(sweep: dict) -> None:
    print(f"{'T':>4} {'worst case':>14} {'bound':>14} {'ratio':>10}  status")
    for r in sweep["rows"]:
        print(f"{r['T']:>4} {_fmt(r['worst_case']):>14} {_fmt(r['bound']):>14} {_fmt(r['ratio'], 4):>10}  {r['status']}")


@contextlib.contextmanager
def _beyond_floats(lam: float, gamma: float, beta: float, L1: float):
    """Parameters whose PEP has coefficients beyond floating point (cvxpy refuses data with inf or
    nan; an overflow in building it) as a one-line usage error; numpy's overflow warnings on the way there are not
    shown (the error names the values)."""
    import numpy as np

    try:
        with np.errstate(over="ignore", invalid="ignore"):
            yield
    except (ValueError, ArithmeticError) as exc:
        text = str(exc)
        if not isinstance(exc, ArithmeticError) and "NaN or Inf" not in text and "=inf is not allowed" not in text:
            raise
        raise UsageError(f"--lam {lam:g} --gamma {gamma:g} --beta {beta:g} --L1 {L1:g}: the PEP's "
                         f"coefficients (products and ratios of these) are beyond floating point "
                         f"({text.splitlines()[0] if text else type(exc).__name__}); give values of ordinary size") from None


def check_sampling(N: int | None, b: int | None) -> None:
    """``--N`` and ``--b`` (a single PEP's and ``--region``'s): both or neither, ``b <= N <= MAX_N``."""
    require((N is None) == (b is None),
            "give --N and --b together (the sampled gradient: G = (1/N) sum G_i, minibatches of b)")
    if N is not None:
        from stam.theory.worstcase.pep import MAX_N

        require(N <= MAX_N, f"--N {N} must be at most {MAX_N} (every one of the C(N, b) minibatches is enumerated)")
        require(b <= N, f"--b {b} must be at most --N {N}")


def run_pep(params: PepParams) -> dict:
    """``stam pep`` (a single PEP) as a library call: the worst case of :func:`stam.theory.worstcase.pep.compare` at
    ``params.T`` (the row, with ``lam``, ``gamma``, ``beta``, ``L1`` in front), or of each horizon of
    ``params.sweep_T`` (:func:`stam.theory.worstcase.pep.pep_sweep`: the ``pep-sweep`` result, written to ``params.out``).
    Refused before any work: a missing ``lam``/``gamma``/``beta``, both or neither of ``T`` and ``sweep_T``, a
    PEP or a sweep above the size limits without ``force`` (:func:`_check_size`), ``out`` with a single horizon
    or missing with a sweep."""
    from stam.io import check_out_file
    from stam.theory.worstcase import methods_pep, pep

    if methods_pep.is_method_pep(params):  # another update rule, F = 0, a normalisation or measure named
        return methods_pep.run_params(params)
    check_sampling(params.N, params.b)
    (N, b), solver = params.sampling, params.solver
    lam, gamma, beta, L1 = params.lam, params.gamma, params.beta, params.L1
    missing = [name for name in ("lam", "gamma", "beta") if getattr(params, name) is None]
    require(not missing, f"{', '.join('--' + m for m in missing)} required (all three, except with --region)")
    require((params.T is None) != (params.sweep_T is None), "give exactly one of --T N and --sweep-T N1,N2,...")
    if params.out is not None:
        check_out_file(params.out, "--out")
    _check_size(params)
    if params.sweep_T is None:
        require(params.out is None, "--out is for --sweep-T (a single run prints; use --json for scripts)")
        with _beyond_floats(lam, gamma, beta, L1):
            row = pep.compare(lam, gamma, beta, params.T, L1=L1, free_start=params.free_start, solver=solver,
                              f_class=params.f_class, N=N, b=b)
        return {"lam": lam, "gamma": gamma, "beta": beta, "L1": L1, **row}
    require(params.out is not None, "--sweep-T writes a result file: give --out FILE.json")
    with _beyond_floats(lam, gamma, beta, L1):
        sweep = pep.pep_sweep(lam, gamma, beta, params.sweep_T, L1=L1, free_start=params.free_start, solver=solver,
                              f_class=params.f_class, N=N, b=b)
    pep.PEP_SWEEP.write(sweep, params.out)
    return sweep


def _pep(args) -> int:
    """``stam pep``: ``--region`` (:func:`_region`), or the flags of ``--region`` refused, the parameters of the
    command line (:class:`stam.theory.params.PepParams`), :func:`run_pep`, the row or the sweep on stdout."""
    from stam.io import dumps
    from stam.theory.params import REGION_ONLY, PepParams

    check_sampling(args.N, args.b)
    require(args.certify or not (args.slice or args.template != "general"), "--slice and --template are for --certify")
    if args.certify or args.check is not None or args.family:
        return _certificates(args)
    if args.region:
        return _region(args)
    stray = [f for f in REGION_ONLY if getattr(args, f) is not None]
    require(not stray, f"{', '.join('--' + f.replace('_', '-') for f in stray)}: only with --region")
    params = PepParams.from_args(args)
    result = run_pep(params)
    if params.json:
        print(dumps(result))
    elif "algo" in result:  # stam.theory.worstcase.methods_pep
        from stam.theory.worstcase.methods_pep import text

        print(text(result))
    elif params.sweep_T is None:
        _print_row(params, result)
    else:
        _print_sweep(result)
        print(f"wrote {params.out}")
    return 0


def _fmt_bracket(part: dict, certified: bool = True) -> str:
    """A bracket ``[lo, hi)`` of ``stam pep --region``; a certified one not even begun (``lo`` None) where no solve
    concluded (every status of the scan's first gamma other than optimal or infeasible) is the solver's, ``solver:
    <status>``, and one whose optimal rates were all refused says why, ``none (<why>)``: neither is a verdict."""
    statuses = part.get("statuses") or {}
    if certified and part["lo"] is None and statuses and not any(k in ("optimal", "infeasible") for k in statuses):
        key = max(statuses, key=statuses.get)
        status, _, why = key.partition(", ")
        return f"none ({why})" if status in ("optimal", "infeasible") and why else f"solver: {key}"
    lo = "none" if part["lo"] is None else f"{part['lo']:.4g}"
    hi = "none" if part["hi"] is None else f"{part['hi']:.4g}"
    return f"[{lo}, {hi}){'?' if part.get('hi_unverified') else ''}{'*' if part.get('start_unverified') else ''}"


#: the head of the refuted column of ``stam pep --region`` (under delta0 + M0'_T <= 1)
REFUTED_HEAD = "gamma (M0'_T)"
#: the notes under the table of ``stam pep --region``: a bracket marked "?" (:func:`_fmt_bracket`), the
#: normalisation of the refutation, the Theorem conv column (:func:`_theorem_cell`).
REGION_NOTES = (
    "?: at the end of the bracket the solver's optimal rate failed the verification or its exact proof (solver "
    "accuracy): not certified there, nor shown to be the template's limit; every certified gamma is proven in exact "
    "rational arithmetic",
    "*: the interval from the first certified gamma of the scan up (the rates below it were not verified; 'start' in "
    "the file)",
    "refuted: stam pep unbounded under delta0 + M0'_T <= 1 (the first T + 1 merits): no bound of Theorem conv's form "
    "with M0'_T; the printed theorem's M0' (all t) is not refuted by it. Certificates bound min_t S_t by "
    "(delta0 + M0'_T)/(rho T) <= (delta0 + M0')/(rho T). At T = 1 the onset is exactly gamma*lambda = (1+sqrt(3))/2 = "
    "1.366 for every beta and L1 (stam.theory.worstcase.onset)",
    "Theorem conv: the paper form at 0.5 and 0.99 gamma_max with the theorem's beta = ceil(2 K2/K1), full gradient and "
    "sampled; yes (c): certified with 1/rho <= c beta (the theorem's constant is >= 2 beta)",
)


def _theorem_cell(theorem: dict) -> str:
    """``yes (1.01)`` when Theorem conv's region is certified (:func:`stam.theory.worstcase.lyapunov.theorem_region`:
    the largest ``1/(rho beta)``), else ``no`` with the number of points certified."""
    if theorem["certified"]:
        return f"yes ({theorem['max_inv_rho_beta']:.3f})"
    count = f"{sum(p['certified'] for p in theorem['points'])}/{len(theorem['points'])}"
    failed = [p["status"] for p in theorem["points"] if not p["certified"] and p.get("status") not in ("optimal", "infeasible")]
    return f"solver: {failed[0]} ({count})" if failed else f"no ({count})"  # a solver's failure is no verdict


#: CPU seconds of ``stam pep --region`` per lambda whatever the betas (the refutation at T = 1, 2, the
#: theorem's region, the setup) and per (lambda, beta) pair (the gamma scan and bisection of each class
#: of F) at the default scan (factors of 1.2) and N = 2, b = 1: fitted (least squares) to four runs
#: measured as CPU time of the process (``time.process_time``, ``--workers 1``) on the 2-core CPU
#: sandbox: 6 lambdas (0.01 to 31.6) x 1 beta 8.3 s, 2 lambdas x 5 betas (1 to 1e6) 6.1 s, 3 lambdas x
#: 3 betas (1, 100, 1e4) 9.9 s, and the default region's 12 x 13 58-70 s (issue 22).  The fit's error
#: on these runs: -32% to +17% (the time of a beta depends on where its gamma interval ends).  The
#: estimate was 6 s per lambda times (betas / 13): 100 lambdas at one beta said 0.8 min for 2.7 min.
REGION_S_PER_LAMBDA = 1.3
REGION_S_PER_BETA = 0.31
#: from this many estimated CPU seconds on, ``stam pep --region`` says the estimate before it starts
REGION_SAY_S = 30.0
#: the most CPU work ``stam pep --region`` does without ``--force`` (seconds)
MAX_REGION_WORK_S = 1800.0


def region_work_s(n_lams: int, n_betas: int, sampling, gamma_range=None) -> float:
    """An estimate of the CPU seconds of ``stam pep --region`` (calibration and error:
    :data:`REGION_S_PER_LAMBDA`): per lambda :data:`REGION_S_PER_LAMBDA` plus :data:`REGION_S_PER_BETA`
    per beta, the betas' part in proportion to the gammas the scan steps through (a ``--gamma-range
    LO:HI:N`` finer than the default factor 1.2: ``log 1.2 / log ratio`` times as many,
    :func:`stam.theory.worstcase.lyapunov.gamma_scan_ratio`), all of it times the cube of the sampled branches
    C(N, b) against the default's 2 (an SDP's time grows about so with its size; docs/benchmarks.md's
    table of sizes)."""
    from stam.theory.worstcase.lyapunov import gamma_scan_ratio
    from stam.theory.params import SCAN_RATIO

    branches = math.comb(int(sampling[0]), int(sampling[1]))
    scan = 1.0
    if gamma_range is not None:
        ratio = gamma_scan_ratio(gamma_range)
        scan = max(1.0, math.log(SCAN_RATIO) / math.log(ratio)) if ratio > 1 else 1.0
    per_lambda = REGION_S_PER_LAMBDA + REGION_S_PER_BETA * n_betas * scan
    return n_lams * per_lambda * max(1.0, (branches / 2) ** 3)


def region_store(out) -> "Path":
    """The job store of ``stam pep --region --out FILE.json`` (:func:`stam.jobs.run_jobs`): the folder ``FILE-jobs``
    beside it, one file per lambda; a rerun with the same settings reuses the rows there."""
    from pathlib import Path

    out = Path(out)
    return out.with_name(out.stem + "-jobs")


def run_region(params: RegionParams) -> dict:
    """``stam pep --region`` as a library call: the certified and the refuted region
    (:func:`stam.theory.worstcase.lyapunov.compute_region`) of ``params``, its lambdas jobs in the store
    :func:`region_store` of ``params.out`` (a rerun with the same parameters reuses them), refused above
    :data:`MAX_REGION_WORK_S` unless ``params.force`` and announced on stderr from :data:`REGION_SAY_S`;
    writes the ``lyapunov-region`` file ``params.out`` and returns it (``params.progress``: called with each row;
    ``params.bar``: the job engine's progress bar)."""
    from stam.io import check_out_file
    from stam.theory.worstcase import lyapunov

    require(params.out is not None, "--region writes a result file: give --out FILE.json")
    check_out_file(params.out, "--out")
    full = lyapunov.resolved(params)  # the default grids filled in
    lams, betas, sampling = full.lams, full.betas, full.sampling
    seconds = region_work_s(len(lams), len(betas), sampling, full.gamma_range)
    require(params.force or seconds <= MAX_REGION_WORK_S,
            f"--region with {len(lams)} lambdas, {len(betas)} betas and N = {sampling[0]}, b = {sampling[1]} is about "
            f"{seconds / 60:.0f} min of CPU, above the limit of {MAX_REGION_WORK_S / 60:.0f} min; give fewer --lams/--betas "
            "or a smaller N, or add --force")
    if seconds >= REGION_SAY_S:  # long work is announced before it starts
        print(f"stam pep --region: about {seconds / 60:.1f} min of CPU (estimate)", file=sys.stderr, flush=True)
    try:
        result = lyapunov.compute_region(params, progress=params.progress, store=region_store(params.out), bar=params.bar)
    except (ValueError, ArithmeticError) as exc:  # coefficients beyond floating point (cvxpy refuses inf/nan)
        if not isinstance(exc, ArithmeticError) and "NaN or Inf" not in str(exc):
            raise
        raise UsageError("--lams/--betas/--gamma-range/--L1: the SDP's coefficients (products and ratios of these) "
                         "are beyond floating point; give values of ordinary size") from None
    result["certificates"] = region_certificate_files(result, params.out, params.solver)
    lyapunov.REGION.write(result, params.out)
    return result


def region_certificate_files(result: dict, out, solver: str | None = None) -> list[str]:
    """The certificates of a region's brackets (:func:`stam.theory.worstcase.certificates.region_certificates`: the last
    certified gamma of each, proven again at its decimal) in the folder ``FILE-certificates`` beside ``out``; their
    paths relative to the result file's folder, for its ``certificates`` list."""
    import os
    from pathlib import Path

    from stam.theory.worstcase.certificates import region_certificates

    out = Path(out)
    paths = region_certificates(result, out.with_name(out.stem + "-certificates"), solver)
    return [os.path.relpath(p, out.parent) for p in paths]


def _region(args) -> int:
    """``stam pep --region``: the flags of a single PEP refused, the parameters of the command line
    (:class:`stam.theory.params.RegionParams`), :func:`run_region`, the table on stdout."""
    import dataclasses

    from stam.io import dumps
    from stam.theory.params import RegionParams

    if args.algo != "stam" or args.measure == "common":  # PSGD, BC, BR; every method on the common measure
        from stam.theory.worstcase.methods_region import run_cli

        return run_cli(args)
    require(args.f_class != "zero", "--region of STAM: --F lsc, indicator or convex (F = 0: --algo psgd, bc or br)")
    extra = [flag for flag in ("lam", "gamma", "beta", "T", "sweep_T") if getattr(args, flag) is not None]
    require(not extra, f"--region searches over gamma and beta itself; drop {', '.join('--' + e.replace('_', '-') for e in extra)}"
            " (give lambdas with --lams)")
    require(not args.free_start, "--free-start is for a single PEP, not for --region")
    params = RegionParams.from_args(args)
    sampling, f_class = params.sampling, params.f_class
    classes = [f_class] + (["convex"] if f_class != "convex" else [])
    header = [f"{'':>20}{'certified gamma, full gradient':>40}   {'sampled N=%d b=%d' % sampling:>17}   {'refuted from':>15}"
              f"   {'Theorem conv':>12}",
              f"{'class of F':>9} {'lambda':>9} {'gamma_max':>10} {'general':>17} {'paper':>17}   {'paper':>17}   "
              f"{REFUTED_HEAD:>15}   {'certified':>12}"]

    def show(row):
        if not args.json:
            while header:  # printed with the first rows: an error before it leaves stdout empty
                print(header.pop(0))
            for cls in classes:
                part = row if cls == f_class else row[cls]
                sampled = _fmt_bracket(row["sampled"]) if cls == f_class else "-"
                print(f"{cls:>9} {row['lam']:>9.4g} {row['gamma_theorem']:>10.4g} {_fmt_bracket(part['general']):>17} "
                      f"{_fmt_bracket(part['paper']):>17}   {sampled:>17}   {_fmt_bracket(part['refuted'], certified=False):>15}   "
                      f"{_theorem_cell(row['theorem']) if cls == f_class else '-':>12}", flush=True)

    result = run_region(dataclasses.replace(params, progress=show, bar=sys.stderr.isatty()))
    if args.json:
        print(dumps(result))
    else:
        for line in REGION_NOTES:
            print(line)
        print(f"wrote {args.out} ({result['seconds']:.0f} s)")
    return 0


# -- certificates as artifacts (issue 59): --certify, --check, --family ---------------------------------------------
def run_certify(params: CertifyParams) -> dict:
    """``stam pep --certify``: the certificate of one point (:func:`stam.theory.worstcase.certificates.certify_point`), written
    to ``params.out`` (default :func:`stam.theory.worstcase.certificates.file_name` in the working folder) when proven.  Returns
    ``{"certified", "rho", "status", "reason", "file", "certificate"}``."""
    from stam.io import check_out_file
    from stam.theory.worstcase import certificates

    missing = [name for name in ("lam", "gamma", "beta") if getattr(params, name) is None]
    require(not missing, f"--certify needs {', '.join('--' + m for m in missing)} (one point)")
    if params.out is not None:
        check_out_file(params.out, "--out")
    if params.slice:
        return _certify_slice(params)
    with _beyond_floats(params.lam, params.gamma, params.beta, params.L1):
        cert, doc = certificates.certify_point(params.lam, params.gamma, params.beta, params.L1, params.template,
                                               params.f_class, params.solver)
    reason = None if doc is not None else (cert.details.get("proof", {}).get("reason")
                                           or ("rate below the floor" if cert.details.get("below_floor") else
                                               "rejected by the verification" if cert.details.get("unverified") else
                                               f"solver status {cert.status}"))
    path = None
    if doc is not None:
        path = str(certificates.write(doc, params.out or certificates.file_name(doc)))
    return {"certified": doc is not None, "rho": None if doc is None else doc["float"]["rho"], "status": cert.status,
            "reason": reason, "file": path, "certificate": doc}


def _certify_slice(params: CertifyParams) -> dict:
    """``stam pep --certify --slice``: :func:`stam.theory.worstcase.certificates.certify_slice`, written (default name
    ``slice-lam<..>-beta<..>-to<..>.json``) and proven again by :func:`stam.theory.worstcase.family.check_slice`."""
    from stam.io import dumps
    from stam.theory.worstcase import certificates, family

    require(params.template == "general", "--slice certifies with the general potential; drop --template paper")
    require(params.f_class == "lsc", "--slice is for any proper lsc F (--F lsc), the largest class")
    doc = certificates.certify_slice(params.lam, params.gamma, params.beta, params.L1, params.solver)
    proved = family.check_slice(dumps(doc))
    path = params.out or (f"slice-lam{params.lam:g}-beta{params.beta:g}-to{float(proved['gamma_lam_max']):.6g}"
                          + ("" if params.L1 == 1 else f"-L1{params.L1:g}") + ".json")
    certificates.write(doc, path)
    return {"certified": True, "slice": True, "file": str(path), "certificate": doc,
            "text": family.slice_text(path, proved)}


def run_check(params: CheckParams) -> dict:
    """``stam pep --check FILE``: the independent checker (:func:`stam.theory.worstcase.certcheck.check`) on one file.
    Returns ``{"file", "proven", "reason", "proved"}``; a file that is no certificate is a usage error."""
    from stam.io import read_input_text
    from stam.theory.worstcase import certcheck

    require(bool(params.check), "--check needs a FILE (a certificate written by stam pep --certify or --region)")
    text = read_input_text(params.check, max_bytes=certcheck.MAX_BYTES)
    try:
        if certcheck.load(text).get("kind") == "stam-lyapunov-certificate-slice":
            from stam.theory.worstcase import family

            proved = family.check_slice(text)
            return {"file": params.check, "proven": True, "reason": None, "proved": None,
                    "text": family.slice_text(params.check, proved)}
        proved = certcheck.check(text)
    except certcheck.Malformed as exc:
        raise UsageError(f"{params.check}: not a certificate: {exc}") from None
    except certcheck.NotProven as exc:
        return {"file": params.check, "proven": False, "reason": str(exc), "proved": None}
    return {"file": params.check, "proven": True, "reason": None, "proved": proved, "text": check_text(
        {"file": params.check, "proven": True, "proved": proved})}


def run_family(params: FamilyParams) -> dict:
    """``stam pep --family``: the closed-form certificate family and its symbolic proof
    (:func:`stam.theory.worstcase.family.prove_family`)."""
    from stam.theory.worstcase import family

    return family.prove_family()


def _certificates(args) -> int:
    """``stam pep --certify``, ``--check FILE``, ``--family``: one of them, the flags of the others refused."""
    from stam.io import dumps
    from stam.theory.params import CertifyParams, CheckParams, FamilyParams

    modes = [m for m, on in (("certify", args.certify), ("check", args.check is not None), ("family", args.family)) if on]
    require(len(modes) == 1 and not args.region, f"give one of --certify, --check, --family, --region (got "
            f"{', '.join('--' + m for m in modes + (['region'] if args.region else []))})")
    mode = modes[0]
    if mode != "certify":
        stray = [f for f in ("lam", "gamma", "beta", "T", "sweep_T", "out") if getattr(args, f) is not None]
        require(not stray, f"--{mode} takes no {', '.join('--' + f.replace('_', '-') for f in stray)}")
    else:
        stray = [f for f in ("T", "sweep_T", "N", "b") if getattr(args, f) is not None]
        require(not stray, f"--certify takes no {', '.join('--' + f.replace('_', '-') for f in stray)} "
                "(one point, full gradient)")
    cls, entry = {"certify": (CertifyParams, run_certify), "check": (CheckParams, run_check),
                  "family": (FamilyParams, run_family)}[mode]
    params = cls.from_args(args)
    result = entry(params)
    if args.json:
        print(dumps({k: v for k, v in result.items() if k != "proved"}, indent=2))
    else:
        print({"certify": certify_text, "check": check_text, "family": family_text}[mode](result))
    if mode == "certify":
        return 0 if result["certified"] else 1
    return 0 if result["proven"] else 1


def certify_text(result: dict) -> str:
    """What ``stam pep --certify`` prints."""
    if result.get("slice"):
        return result["text"].replace("proven: ", "certified and proven: ", 1) + f"\nwrote {result['file']}"
    doc = result["certificate"]
    if doc is None:
        return f"not certified: {result['reason']} (solver status {result['status']}); nothing written"
    p, f = doc["parameters"], doc["float"]
    lines = [f"certified: STAM, full gradient, F {doc['f_class']}, template {doc['template']}, lam={p['lam']} "
             f"gamma={p['gamma']} beta={p['beta']} L1={p['L1']}",
             f"  rho = {f['rho']:.6g}   1/rho = {f['1/rho']:.6g}   gamma*lam = {f['gamma*lam']:.6g}"
             + ("" if f["c_beta"] is None else f"   c_beta = {f['c_beta']:.6g}"),
             f"  proven in exact rational arithmetic; min_(t<T) S_t <= ({doc['numerator']}) / (rho T)",
             f"wrote {result['file']} (check it: stam pep --check {result['file']})"]
    return "\n".join(lines)


def check_text(result: dict) -> str:
    """What ``stam pep --check FILE`` prints."""
    from stam.theory.worstcase.certcheck import BASIS

    if not result["proven"]:
        return f"not proven: {result['file']}: {result['reason']}"
    if result.get("text"):
        return result["text"]
    r = result["proved"]  # (the exact numbers: printed here, dropped from the JSON of --json)
    p = {k: str(v) for k, v in r["params"].items()}
    lines = [f"proven: {result['file']}",
             f"  STAM, full gradient, F {r['f_class']}, G L1-smooth; lam={p['lam']} gamma={p['gamma']} beta={p['beta']} "
             f"L1={p['L1']}",
             f"  1. the function values cancel exactly in V_(t+1) - V_t + rho S_t - sum_k mu_k (interpolation k), "
             f"rho = {float(r['rho']):.6g}, every mu_k >= 0",
             f"  2. that form is negative semidefinite over ({', '.join(BASIS)}) (exact LDL^T; {r['null']} null "
             "direction(s) checked null)"]
    if r["template"] == "general":
        a, b = r["potential"]["a"], r["potential"]["b"]
        lines.append(f"  3. V_t = a G(y^t) + b F(u^t) + xi_t' P xi_t >= b Phi^inf + (a - b) G^inf (a = {float(a):.6g} >= "
                     f"b = {float(b):.6g} >= 0; its form semidefinite, exact LDL^T)")
        lines.append("  so min_(t<T) S_t <= (V_0 - b Phi^inf - (a - b) G^inf) / (rho T)")
    else:
        lines.append("  3. V_t = a (G(y^t) + H(x^t, y^t)) + b M_t (eq. (eq651)), a, b >= 0")
        lines.append("  so min_(t<T) S_t <= (a delta0 + b M0'_T) / (rho T) (delta_t = G(y^t) + H(x^t, y^t) - G^inf >= 0)")
    lines.append("  the digest of the numbers matches the file's")
    return "\n".join(lines)


def family_text(result: dict) -> str:
    """What ``stam pep --family`` prints (:func:`stam.theory.worstcase.family.text`)."""
    from stam.theory.worstcase import family

    return family.text(result)


def _handler(args) -> int:
    try:
        return _pep(args)
    except ImportError as exc:  # the optional extra is missing
        raise UsageError(f"stam pep needs the 'pep' extra (pip install 'stam-toolkit[pep]'): {exc}") from None


def register(subparsers) -> None:
    """Add ``stam pep`` (its flags added when it is parsed or its help shown: ``build=``)."""
    subparsers.add_parser(
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
        build=_build,
    )


def _build(p) -> None:
    from stam.params import add_arguments, add_field, flagged
    from stam.theory.params import (CERTIFICATE_ONLY, REGION_ONLY, CertifyParams, CheckParams, FamilyParams, PepParams,
                                    RegionParams)

    add_arguments(p, PepParams)  # a single PEP's flags, the ones --region shares among them (the same factories)
    g = p.add_argument_group("--region: the (gamma, lambda) region where a Lyapunov function certifies the rate O(1/T) "
                             "(stam.theory.worstcase.lyapunov) and where this PEP is unbounded")
    g.add_argument("--region", action="store_true",
                   help="for each lambda, the largest gamma with a Lyapunov certificate (best beta of a grid; bisection "
                   "bracket) and the smallest gamma where the PEP is unbounded; writes a lyapunov-region file (--out)")
    for f in flagged(RegionParams):  # REGION_ONLY, in the order of the fields
        if f.name in REGION_ONLY:
            add_field(g, f.name, f)
    c = p.add_argument_group("certificates (docs/certificates.md): one point certified and its certificate written, a "
                             "certificate file checked, the closed-form family proven")
    modes = {"certify": CertifyParams, "check": CheckParams, "family": FamilyParams}
    for cls in modes.values():
        for f in flagged(cls):
            if f.name in CERTIFICATE_ONLY:
                add_field(c, f.name, f)
    p.set_defaults(func=_handler, params_modes={"region": RegionParams, **modes})  # --region, --certify, ...
