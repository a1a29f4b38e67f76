"""Subcommands of this area (registered by ``stam.cli``).  Imports nothing heavy at module level:
the handlers live in :mod:`stam.synthetic.commands`, which imports torch when a command runs.

    stam synthetic run     --problem NAME   rate experiment against Theorem conv (JSON + CSV)
    stam synthetic compare --problem NAME   STAM vs baselines at an equal gradient budget
    stam synthetic sweep                    problems x seeds x gamma fractions, --workers N or --scheduler, resumable
"""

from __future__ import annotations

from stam.cliargs import ListArg, add_out, text_item
from stam.errors import finite_float, positive_float, positive_int, seed_int, threads_int
from stam.jobs import add_scheduler_args
from stam.synthetic import commands
from stam.synthetic.commands import COMPARE_DEFAULTS, QUICK, RUN_DEFAULTS, SWEEP_DEFAULTS
from stam.dnn.presets import PAPER_PRESET_NAMES
from stam.synthetic.families import NAMES, SIZE, WITH_LAM


def _instance_args(p, default_R: int) -> None:
    p.add_argument("--n", type=positive_int, default=SIZE["n"], help=f"dimension of y (and x) (default {SIZE['n']})")
    p.add_argument("--N", type=positive_int, default=SIZE["N"], help=f"number of terms of G (default {SIZE['N']})")
    p.add_argument("--b", type=positive_int, default=SIZE["b"], help=f"minibatch size (default {SIZE['b']})")
    p.add_argument("--replacement", action="store_true", help="b-nice sampling with replacement (default: without)")
    p.add_argument("--R", type=positive_int, default=None, help=f"independent runs (seeds), batched (default {default_R})")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the instance and of the sampling (default 0)")
    p.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda (default cpu)")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64", help="default float64")
    p.add_argument("--threads", type=threads_int, default=1,
                   help="torch CPU threads (default 1: the default instances are latency-bound)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(default_R=default_R)


def _run(args):
    """``stam synthetic run``: a paper's preset named by ``--preset`` is read here, in the command
    line's layer (the presets are the networks' declarations, :mod:`stam.dnn.presets`), and handed
    to the synthetic run as its (lambda, gamma, beta)."""
    from stam.dnn.presets import paper_presets

    args.preset_values = paper_presets()[args.preset] if args.preset else None
    return commands.run_command(args)


def register(subparsers) -> None:
    """Add ``stam synthetic run|compare|sweep``."""
    top = subparsers.add_parser("synthetic", help="synthetic three-block problems: rates, baselines, sweeps",
                                description="Synthetic problems with known constants (stam.synthetic).")
    sub = top.add_subparsers(dest="synthetic_command", metavar="SUBCOMMAND", parser_class=type(top))
    top.set_defaults(func=lambda args: top.print_help() or 2)

    PROBLEM_HELP = (f"a built-in family ({', '.join(NAMES)}) or a problem object (stam.synthetic.api.compose, or a "
                    "function returning one, given the --n --N --b --seed --device --dtype it accepts) in a Python file")
    run = sub.add_parser("run", help="STAM for T on a geometric grid against Theorem conv",
                         description="Rate experiment: min_t E S_t and the bound of Theorem conv for each T.")
    run.add_argument("--problem", required=True, metavar="NAME|FILE.py:NAME", help=PROBLEM_HELP)
    _instance_args(run, default_R=RUN_DEFAULTS["R"])
    run.add_argument("--T-min", type=positive_int, default=None, help=f"smallest horizon (default {RUN_DEFAULTS['T_min']})")
    run.add_argument("--T-max", type=positive_int, default=None, help=f"largest horizon (default {RUN_DEFAULTS['T_max']})")
    run.add_argument("--T-points", type=positive_int, default=None,
                     help=f"horizons on the geometric grid (default {RUN_DEFAULTS['T_points']})")
    run.add_argument("--gamma", type=positive_float, help="explicit gamma (default: --gamma-fraction of gamma_max)")
    run.add_argument("--gamma-fraction", type=positive_float, default=0.5, help="gamma / gamma_max, in (0, 1) (default 0.5)")
    run.add_argument("--beta", type=positive_float, help="explicit beta for every T (default: Theorem conv-rate's rule)")
    run.add_argument("--lam", type=positive_float, help=f"coupling weight lambda ({', '.join(WITH_LAM)})")
    run.add_argument("--preset", choices=tuple(f"paper-{n}" for n in PAPER_PRESET_NAMES),
                     help="Table para's (lambda, gamma, beta) as constants (not with --gamma, --beta or --lam); implies --allow-inadmissible")
    run.add_argument("--allow-inadmissible", action="store_true",
                     help="run explicit parameters outside Theorem conv's hypotheses (rows: admissible=false, bound=null)")
    run.add_argument("--force", action="store_true",
                     help="run even above the work limit (50 times the default run's work)")
    run.add_argument("--quick", action="store_true", help=f"a few seconds: --T-min {QUICK['T_min']} --T-max {QUICK['T_max']} --T-points {QUICK['T_points']}, "
                     f"R = {QUICK['R']} (unless --R is given); not with --T-min/--T-max/--T-points")
    add_out(run, default="results/synthetic", help="output directory (default results/synthetic)")
    run.set_defaults(func=_run)

    cmp_ = sub.add_parser("compare", help="STAM vs SPRING-SGD, deterministic STAM (and PSGD/BC/BR) at equal budget",
                          description="Baselines with equal budgets of stochastic gradient evaluations.")
    cmp_.add_argument("--problem", required=True, metavar="NAME|FILE.py:NAME", help=PROBLEM_HELP)
    _instance_args(cmp_, default_R=COMPARE_DEFAULTS["R"])
    cmp_.add_argument("--budget", type=positive_int, default=COMPARE_DEFAULTS["budget"],
                      help=f"sample-gradient evaluations per run (default {COMPARE_DEFAULTS['budget']} = "
                      f"{COMPARE_DEFAULTS['budget'] // SIZE['b']} iterations of b={SIZE['b']})")
    cmp_.add_argument("--gamma", type=positive_float, help="explicit gamma (default 0.5 gamma_max)")
    cmp_.add_argument("--beta", type=positive_float, help="y-step 1/beta for every method (default: STAM's theory beta; "
                      "any beta is run, and the output says whether (gamma, beta) satisfy Theorem conv)")
    add_out(cmp_, default="results/synthetic", help="output directory (default results/synthetic)")
    cmp_.set_defaults(func=commands.compare_command)

    sw = sub.add_parser("sweep", help="problems x seeds x gamma fractions, here or on a cluster, resumable",
                        description="Runs `synthetic run` for every combination as jobs of the toolkit's one job engine "
                                    "(stored in OUT/jobs: a rerun skips the finished ones; --workers local processes or "
                                    "a Dask --scheduler); the result files are written once every job has finished.")
    sw.add_argument("--problems", type=ListArg(text_item, "problems", "binary,cosine"), default=",".join(NAMES),
                    metavar="P1,P2,...",
                    help="comma-separated built-in families or FILE.py:NAME (a function taking seed=...) (default: all families)")
    sw.add_argument("--seeds", type=ListArg(seed_int, "seeds (integers in [0, 2**63))", "0,1,2"), default="0,1,2", metavar="S1,S2,...",
                    help="comma-separated instance/sampling seeds (default 0,1,2)")
    sw.add_argument("--gamma-fractions", type=ListArg(finite_float, "gamma/gamma_max in (0, 1)", "0.25,0.5"),
                    default="0.25,0.5", metavar="F1,F2,...", help="comma-separated gamma/gamma_max (default 0.25,0.5)")
    sw.add_argument("--R", type=positive_int, default=SWEEP_DEFAULTS["R"], help=f"runs per job (default {SWEEP_DEFAULTS['R']})")
    sw.add_argument("--T-max", type=positive_int, default=SWEEP_DEFAULTS["T_max"],
                    help=f"largest horizon (default {SWEEP_DEFAULTS['T_max']})")
    sw.add_argument("--T-points", type=positive_int, default=SWEEP_DEFAULTS["T_points"],
                    help=f"horizons per job (default {SWEEP_DEFAULTS['T_points']})")
    add_scheduler_args(sw, workers=2, aliases=("-j", "--jobs"))  # -j/--jobs: the old spelling, hidden
    add_out(sw, default="results/synthetic/sweep", help="output directory (default results/synthetic/sweep)")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar")
    sw.set_defaults(func=commands.sweep_command)
