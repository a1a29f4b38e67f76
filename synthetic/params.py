"""The parameters of ``stam synthetic run|compare|sweep``, each one frozen dataclass
(:mod:`stam.params`): every field declares its flag, type, default and help once; the command line
(:mod:`stam.synthetic.cli`) and the commands (:mod:`stam.synthetic.commands`, which take these
objects) read them here.  Imports no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from stam.cliargs import ListArg, out_arg, text_item
from stam.errors import finite_float, positive_float, positive_int, seed_int, threads_int
from stam.jobs import scheduler_arg, workers_arg
from stam.params import Params, arg
from stam.synthetic.families import NAMES, SIZE, WITH_LAM

#: `synthetic run --quick`: a few seconds
QUICK = dict(T_min=10, T_max=640, T_points=7, R=8)
#: the horizon grid and runs of `synthetic run` without --quick (the flags default to None, so that
#: --quick can tell a value the user gave from a default)
RUN_DEFAULTS = dict(T_min=10, T_max=10240, T_points=11, R=32)
#: `synthetic sweep`: runs per job and each job's horizon grid (from the run's --T-min on)
SWEEP_DEFAULTS = dict(R=16, T_max=2560, T_points=9)
#: `synthetic compare`: sample-gradient evaluations and runs
COMPARE_DEFAULTS = dict(budget=32768, R=8)

PROBLEM_HELP = (f"a built-in family ({', '.join(NAMES)}) or a problem object (stam.synthetic.api.compose, or a "
                "function returning one, given the --n --N --b --seed --device --dtype it accepts) in a Python file")
OUT_HELP = "output directory (default results/synthetic)"


def _runs(default_R: int):
    return arg("--R", type=positive_int, default=None, help=f"independent runs (seeds), batched (default {default_R})")


@dataclass(frozen=True)
class Instance(Params):
    """A synthetic instance and how its runs are computed (``run`` and ``compare``); ``R`` None:
    :attr:`default_R`."""

    problem: str = arg("--problem", required=True, metavar="NAME|FILE.py:NAME", help=PROBLEM_HELP)
    n: int = arg("--n", type=positive_int, default=SIZE["n"], help=f"dimension of y (and x) (default {SIZE['n']})")
    N: int = arg("--N", type=positive_int, default=SIZE["N"], help=f"number of terms of G (default {SIZE['N']})")
    b: int = arg("--b", type=positive_int, default=SIZE["b"], help=f"minibatch size (default {SIZE['b']})")
    replacement: bool = arg("--replacement", action="store_true", default=False,
                            help="b-nice sampling with replacement (default: without)")
    R: int | None = _runs(RUN_DEFAULTS["R"])
    seed: int = arg("--seed", type=seed_int, default=0, help="seed of the instance and of the sampling (default 0)")
    device: str = arg("--device", default="cpu", help="torch device, e.g. cpu or cuda (default cpu)")
    dtype: str = arg("--dtype", choices=("float64", "float32"), default="float64", help="default float64")
    threads: int = arg("--threads", type=threads_int, default=1,
                       help="torch CPU threads (default 1: the default instances are latency-bound)")
    progress: bool = arg("--no-progress", action="store_false", default=True, help="no progress bar")


@dataclass(frozen=True)
class RunParams(Instance):
    """``stam synthetic run``; ``preset_values``: the (lambda, gamma, beta) of ``--preset``, read
    by the command line from the paper's presets (:func:`stam.dnn.presets.paper_presets`)."""

    R: int | None = _runs(RUN_DEFAULTS["R"])
    T_min: int | None = arg("--T-min", type=positive_int, default=None,
                            help=f"smallest horizon (default {RUN_DEFAULTS['T_min']})")
    T_max: int | None = arg("--T-max", type=positive_int, default=None,
                            help=f"largest horizon (default {RUN_DEFAULTS['T_max']})")
    T_points: int | None = arg("--T-points", type=positive_int, default=None,
                               help=f"horizons on the geometric grid (default {RUN_DEFAULTS['T_points']})")
    gamma: float | None = arg("--gamma", type=positive_float, default=None,
                              help="explicit gamma (default: --gamma-fraction of gamma_max)")
    gamma_fraction: float = arg("--gamma-fraction", type=positive_float, default=0.5,
                                help="gamma / gamma_max, in (0, 1) (default 0.5)")
    beta: float | None = arg("--beta", type=positive_float, default=None,
                             help="explicit beta for every T (default: Theorem conv-rate's rule)")
    lam: float | None = arg("--lam", type=positive_float, default=None, help=f"coupling weight lambda ({', '.join(WITH_LAM)})")
    preset: str | None = arg("--preset", default=None,  # its choices: stam.synthetic.cli (the paper's presets)
                             help="Table para's (lambda, gamma, beta) as constants (not with --gamma, --beta or --lam); "
                             "implies --allow-inadmissible")
    allow_inadmissible: bool = arg("--allow-inadmissible", action="store_true", default=False,
                                   help="run explicit parameters outside Theorem conv's hypotheses (rows: admissible=false, "
                                   "bound=null)")
    force: bool = arg("--force", action="store_true", default=False,
                      help="run even above the work limit (50 times the default run's work)")
    quick: bool = arg("--quick", action="store_true", default=False,
                      help=f"a few seconds: --T-min {QUICK['T_min']} --T-max {QUICK['T_max']} --T-points {QUICK['T_points']}, "
                      f"R = {QUICK['R']} (unless --R is given); not with --T-min/--T-max/--T-points")
    out: str = out_arg(default="results/synthetic", help=OUT_HELP)
    preset_values: tuple | None = None

    @property
    def default_R(self) -> int:
        return (QUICK if self.quick else RUN_DEFAULTS)["R"]


@dataclass(frozen=True)
class CompareParams(Instance):
    """``stam synthetic compare``."""

    R: int | None = _runs(COMPARE_DEFAULTS["R"])
    budget: int = arg("--budget", type=positive_int, default=COMPARE_DEFAULTS["budget"],
                      help=f"sample-gradient evaluations per run (default {COMPARE_DEFAULTS['budget']} = "
                      f"{COMPARE_DEFAULTS['budget'] // SIZE['b']} iterations of b={SIZE['b']})")
    gamma: float | None = arg("--gamma", type=positive_float, default=None, help="explicit gamma (default 0.5 gamma_max)")
    beta: float | None = arg("--beta", type=positive_float, default=None,
                             help="y-step 1/beta for every method (default: STAM's theory beta; any beta is run, and the "
                             "output says whether (gamma, beta) satisfy Theorem conv)")
    out: str = out_arg(default="results/synthetic", help=OUT_HELP)

    default_R = COMPARE_DEFAULTS["R"]


@dataclass(frozen=True)
class SweepParams(Params):
    """``stam synthetic sweep``."""

    problems: list = arg("--problems", type=ListArg(text_item, "problems", "binary,cosine"), default_factory=lambda: list(NAMES),
                         cli_default=",".join(NAMES), metavar="P1,P2,...",
                         help="comma-separated built-in families or FILE.py:NAME (a function taking seed=...) (default: "
                         "all families)")
    seeds: list = arg("--seeds", type=ListArg(seed_int, "seeds (integers in [0, 2**63))", "0,1,2"),
                      default_factory=lambda: [0, 1, 2], cli_default="0,1,2", metavar="S1,S2,...",
                      help="comma-separated instance/sampling seeds (default 0,1,2)")
    gamma_fractions: list = arg("--gamma-fractions", type=ListArg(finite_float, "gamma/gamma_max in (0, 1)", "0.25,0.5"),
                                default_factory=lambda: [0.25, 0.5], cli_default="0.25,0.5", metavar="F1,F2,...",
                                help="comma-separated gamma/gamma_max (default 0.25,0.5)")
    R: int = arg("--R", type=positive_int, default=SWEEP_DEFAULTS["R"], job=True,
                 help=f"runs per job (default {SWEEP_DEFAULTS['R']})")
    T_max: int = arg("--T-max", type=positive_int, default=SWEEP_DEFAULTS["T_max"], job=True,
                     help=f"largest horizon (default {SWEEP_DEFAULTS['T_max']})")
    T_points: int = arg("--T-points", type=positive_int, default=SWEEP_DEFAULTS["T_points"], job=True,
                        help=f"horizons per job (default {SWEEP_DEFAULTS['T_points']})")
    scheduler: str | None = scheduler_arg()
    workers: int = workers_arg(2, aliases=("-j", "--jobs"))  # -j/--jobs: the old spelling, hidden
    out: str = out_arg(default="results/synthetic/sweep", help="output directory (default results/synthetic/sweep)")
    progress: bool = arg("--no-progress", action="store_false", default=True, help="no progress bar")

    def spec(self) -> dict:
        """What every job of the sweep shares (each job adds its cell: the problem, the seed, the gamma
        fraction; :func:`stam.synthetic.commands.sweep_specs`): the fields marked ``job``, the horizons
        as the grid a job runs, ``T_grid`` (from the run's smallest horizon to ``T_max``, ``T_points`` of
        them, :func:`stam.synthetic.rates.geometric_grid`)."""
        from stam.synthetic.rates import geometric_grid

        spec = super().spec()
        spec["T_grid"] = geometric_grid(RUN_DEFAULTS["T_min"], spec.pop("T_max"), spec.pop("T_points"))
        return spec


__all__ = ["QUICK", "RUN_DEFAULTS", "SWEEP_DEFAULTS", "COMPARE_DEFAULTS", "Instance", "RunParams", "CompareParams",
           "SweepParams"]
