"""The parameters of ``stam pep --region`` as one frozen dataclass (:mod:`stam.params`): every field
declares its flag, type, default and help once; the command line (:mod:`stam.theory.pep_cli`) adds
the flags from here, the run (:func:`stam.theory.pep_cli.run_region`, a library call taking the
object) and the search (:func:`stam.theory.worstcase.lyapunov.compute_region`) read it, and the job of each
lambda is ``{**params.spec(), "lam": lam}`` (with the job's kind and the search's version).
Imports nothing heavy (no numpy: ``stam pep --help`` stays fast); the two grids computed with numpy,
:data:`stam.theory.worstcase.lyapunov.REGION_LAMS` and ``REGION_BETAS``, are the defaults of ``lams`` and
``betas`` given as None.  A single PEP's (``stam pep`` without ``--region``), :class:`PepParams`, are
here too (its run :func:`stam.theory.pep_cli.run_pep`; the flags both share are the field factories
:func:`L1_arg`, :func:`f_class_arg`, :func:`N_arg`, :func:`b_arg`, :func:`solver_arg`, :func:`force_arg`,
:func:`pep_out_arg`), and ``stam paper-check``'s, :class:`PaperCheckParams` (the audit's module imports
sympy; its flags are added without it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from stam.cliargs import ListArg, RangeArg, out_arg
from stam.errors import positive_float, positive_int
from stam.jobs import scheduler_arg, workers_arg
from stam.params import Params, arg

#: how an environment the paper's source uses but never declares is counted (the choices of
#: ``--assumption-counter``; :func:`stam.theory.papercheck.items.numbering.printed_numbers`, ``undeclared=``):
#: the \\newtheorem line assumed for it
UNDECLARED_COUNTERS = {"own": r"\newtheorem{ENV}{Name}", "theorem": r"\newtheorem{ENV}[theorem]{Name}"}

#: defaults of the search (:func:`stam.theory.worstcase.lyapunov.region`): gamma searched on [1e-4, 1e4] (log
#: bisection to a ratio of 1 + REGION_RTOL), the refutation at T = 1, 2 with its betas, the sampled
#: gradient of the ``sampled`` column (N = 2, b = 1: G = (G_1 + G_2)/2, minibatches of one, two branches)
REGION_GAMMA_RANGE = (1e-4, 1e4)
REGION_RTOL = 0.02
REFUTE_TS = (1, 2)
REFUTE_BETAS = (10.0, 1e3, 1e5)
REGION_SAMPLING = (2, 1)
#: ratio of the scan of the certified gamma (about 12.6 points per decade), and its most steps (a wider
#: range is scanned by a larger ratio: the default 1e-4 .. 1e4 takes 101 steps of 1.2).
SCAN_RATIO = 1.2
SCAN_MAX_STEPS = 110
#: the classes of ``F`` the PEP reaches through its proximal step (:mod:`stam.theory.worstcase.pep`, which reads
#: them here, so that ``stam pep --help`` imports no PEP): the paper's class first, the default
F_CLASSES = ("lsc", "indicator", "convex")
DEFAULT_F_CLASS = "lsc"
#: ``stam pep --algo NAME`` (:mod:`stam.theory.worstcase.methods_pep`) also takes F = 0 (``--F zero``); its normalisations
#: (``--initial``) and its measures (``--measure``: each method's own, or one common to all)
METHOD_F_CLASSES = F_CLASSES + ("zero",)
INITIALS = ("gap", "last-gap", "objective")
MEASURES = ("natural", "common")
#: ``--region --gamma-range LO:HI:N``: N gammas scanned, at most ``SCAN_MAX_STEPS + 1``
MAX_SCAN_POINTS = SCAN_MAX_STEPS + 1
POSITIVE_LIST = ListArg(positive_float, "numbers > 0", "0.1,1,10")
#: the largest Gram matrix ``stam pep`` builds without ``--force`` (:mod:`stam.theory.pep_cli`): ``2T + 2``
#: points (``2T + 3`` with ``--free-start``), so T <= 24.  The SDP has O(T^2) interpolation constraints, each of
#: Gram size: on 2 CPU cores T = 10 takes about 5 s, T = 20 about 20 s, and the time grows
#: like T^4 or faster (T = 100000 would not finish).
MAX_GRAM = 50


# -- the flags a single PEP (:class:`PepParams`) and ``--region`` (:class:`RegionParams`) share: one
# declaration each, a field factory as :func:`stam.cliargs.out_arg`
def lam_arg():
    return arg("--lam", type=positive_float, default=None, help="coupling weight lambda of H (> 0)")


def gamma_arg():
    return arg("--gamma", type=positive_float, default=None, help="step size gamma of the x/u-steps (> 0)")


def beta_arg():
    return arg("--beta", type=positive_float, default=None, help="proximal weight beta of the y-step (> 0)")


def L1_arg():
    return arg("--L1", type=positive_float, default=1.0, job=True, help="Lipschitz constant of grad G (default 1)")


def f_class_arg():
    return arg("--F", choices=METHOD_F_CLASSES, default=DEFAULT_F_CLASS, job=True,
               help="class of F, reached through its proximal step: lsc = any proper lower semicontinuous F "
               "(nonconvex; the paper's class, the default), indicator = the indicator of any closed set, "
               "convex = closed proper convex, zero = F = 0 (with --algo psgd, bc, br, or stam's common PEP)")


def N_arg():
    return arg("--N", type=positive_int, default=None,
               help="sampled gradient: G = (1/N) sum_i G_i, each G_i L1-smooth (with --b; default: the full "
               "gradient; --region: N=2)")


def b_arg():
    return arg("--b", type=positive_int, default=None,
               help="minibatch size of the b-nice sampling (1 <= b <= N; every C(N, b) minibatch of every step "
               "is enumerated; --region default 1)")


def solver_arg():
    return arg("--solver", choices=("auto", "clarabel", "scs"), default=None, cli_default="auto", job=True,
               convert=lambda name: None if name == "auto" else name,
               help="SDP solver (default auto: Clarabel, then SCS if Clarabel is not optimal)")


def force_arg():
    return arg("--force", action="store_true", default=False,
               help=f"solve a PEP above the size limit (Gram matrix {MAX_GRAM} x {MAX_GRAM}, T <= 24)")


def algo_arg():
    return arg("--algo", default="stam", metavar="NAME",
               help="the update rule (stam/rules/NAME.py) with a theory form: stam (default), psgd, bc, br "
               "(docs/methods-theory.md)")


def pep_out_arg():
    return out_arg(metavar="FILE", help="result file for --sweep-T and --region (JSON)")


@dataclass(frozen=True)
class PepParams(Params):
    """``stam pep``'s parameters for a single PEP (without ``--region``): STAM's ``lam``, ``gamma``, ``beta``,
    one horizon ``T`` or several ``sweep_T`` (then a ``pep-sweep`` file ``out``), ``z^{-1}`` free or not, the
    class of F and the gradient (``L1``, ``f_class``, ``N``/``b``: None, the full gradient), the solver, and
    whether the text is JSON.  Every field is its flag; ``lam``, ``gamma``, ``beta`` and one of ``T``,
    ``sweep_T`` are required (None here so that the command line names what is missing).  The run is
    :func:`stam.theory.pep_cli.run_pep` (the PEP of :func:`stam.theory.worstcase.pep.stam_pep` beside Theorem conv)."""

    lam: float | None = lam_arg()
    gamma: float | None = gamma_arg()
    beta: float | None = beta_arg()
    T: int | None = arg("--T", type=positive_int, default=None, help="iterations (>= 1)")
    algo: str = algo_arg()
    rho: float | None = arg("--rho", type=positive_float, default=None,
                            help="--algo br: lam_t = lam rho^t grown once per step (>= 1; default 1, lam fixed)")
    initial: str | None = arg("--initial", choices=INITIALS, default=None,
                              help="--algo psgd/bc/br (or stam's common PEP): the normalisation, gap = G(w^0) - inf G "
                              "<= 1 (default), last-gap = G(w^0) - G(w^T) <= 1 (PEPit's gradient-descent example), objective = "
                              "(G + F)(w^0) - inf G - inf F <= 1 at the first binary output")
    measure: str = arg("--measure", choices=MEASURES, default="natural",
                       help="natural = each method's own stationarity measure (default), common = the proximal-gradient "
                       "residual of G + F with step 1/L1 at the binary weights it outputs (docs/methods-theory.md); with --region "
                       "--algo NAME the verdicts on it (every method, STAM too)")
    sweep_T: list | None = arg("--sweep-T", type=ListArg(positive_int, "horizons (integers >= 1)", "1,2,3"), default=None,
                               metavar="N1,N2,...", help="several horizons; writes a pep-sweep result file (--out)")
    L1: float = L1_arg()
    f_class: str = f_class_arg()
    N: int | None = N_arg()
    b: int | None = b_arg()
    free_start: bool = arg("--free-start", action="store_true", default=False,
                           help="z^{-1} is a free point (default: z^{-1} = y^0, as stam_init)")
    solver: str | None = solver_arg()
    json: bool = arg("--json", action="store_true", default=False, help="print JSON instead of text")
    force: bool = force_arg()
    out: str | None = pep_out_arg()

    @property
    def sampling(self) -> tuple[int, int]:
        """``(N, b)`` of the gradient, ``(1, 1)`` (the full gradient) where not given."""
        return (self.N or 1, self.b or 1)


@dataclass(frozen=True)
class RegionParams(Params):
    """``stam pep --region``'s parameters: the class of F and the gradient (``L1``, ``f_class``,
    ``N``/``b`` or ``sampling``), the grids of the search (``lams``, ``betas``, ``gamma_range``; None:
    the defaults of :mod:`stam.theory.worstcase.lyapunov`), its library-only settings, where it writes and how it
    runs.  The fields marked ``job`` decide a lambda's row (:meth:`spec`); ``lams`` are the cells."""

    L1: float = L1_arg()
    f_class: str = f_class_arg()
    N: int | None = N_arg()
    b: int | None = b_arg()
    solver: str | None = solver_arg()
    force: bool = force_arg()
    out: str | None = pep_out_arg()
    algo: str = algo_arg()
    lams: list | None = arg("--lams", type=POSITIVE_LIST, default=None, metavar="L1,L2,...",
                             help="lambdas (default: 12 on a log grid from 0.01 to 31.6)")
    betas: list | None = arg("--betas", type=POSITIVE_LIST, default=None, metavar="B1,B2,...", job=True,
                              help="the beta grid of the search (default: 13 from 1 to 1e6, log grid)")
    gamma_range: tuple | None = arg("--gamma-range", type=RangeArg("0.01:100:51", min_points=2, max_points=MAX_SCAN_POINTS),
                                    default=None, metavar="LO:HI:N", job=True,
                                    help="where gamma is searched: N gammas from LO to HI, geometrically spaced, scanned "
                                    "upwards, then log bisection after the last certified (default: 1e-4 to 1e4 by factors "
                                    "of 1.2)")
    scheduler: str | None = scheduler_arg()  # the toolkit's one job engine (stam.jobs): the lambdas are its jobs
    workers: int | None = workers_arg(None, help="the lambdas in N local processes (default: 2 where 2 CPUs are visible, "
                                      "else 1; the result is the same); not with --scheduler")
    # library-only (stam.theory.worstcase.lyapunov.region's arguments), part of every job
    rtol: float = arg(default=REGION_RTOL, job=True)
    refute_Ts: tuple = arg(default=REFUTE_TS, job=True)
    refute_betas: tuple = arg(default=REFUTE_BETAS, job=True)
    sampling: tuple | None = arg(default=REGION_SAMPLING, job=True)
    beside_convex: bool = arg(default=True, job=True)
    scan_ratio: float = arg(default=SCAN_RATIO, job=True)
    refute_beside: bool = arg(default=True, job=True)
    # how the run reports, not what it finds (in no job): called with each row as it is found; the job engine's
    # progress bar on stderr (the command line: when stderr is a terminal)
    progress: Callable[[dict], object] | None = arg(default=None)
    bar: bool = arg(default=False)

    def __post_init__(self):
        if self.N is not None:  # --N/--b: the sampled gradient of the ``sampled`` column
            object.__setattr__(self, "sampling", (self.N, self.b))


@dataclass(frozen=True)
class PaperCheckParams(Params):
    """``stam paper-check``'s parameters: the output format (``json``, ``brief``, ``as_printed``), the
    files it writes beside (``out``, ``corrected``) and the paper whose labels are counted (``paper``, a
    LaTeX file; None: the bundled copy).  The run is :func:`stam.theory.papercheck.audit.paper_check`."""

    json: bool = arg("--json", action="store_true", default=False,
                     help="print a JSON list of {label, printed, derived, verdict, counterexample, covers, gap, elsewhere, "
                     "printed_mathml, ...}")
    brief: bool = arg("--brief", action="store_true", default=False,
                      help="one line per item (label, verdict, what is wrong); not with --json")
    as_printed: bool = arg("--as-printed", action="store_true", default=False,
                           help="also evaluate the printed forms on the counterexamples and show the numbers they give")
    out: str | None = out_arg(metavar="FILE",
                              help="also write the JSON result (kind paper-check, with provenance and coverage) to FILE")
    corrected: str | None = arg("--corrected", default=None, metavar="DIR",
                                help="also write the corrected lemmas and theorems (hypotheses, constants) to "
                                "DIR/corrected.tex and DIR/corrected.md")
    assumption_counter: str = arg("--assumption-counter", choices=tuple(UNDECLARED_COUNTERS), default="own",
                                  help="how the paper's undeclared assumption environment is counted in the printed "
                                  "numbers: own (its own counter, the default) or theorem (shared with the lemmas and "
                                  "theorems: Lemma conv-lemma is then Lemma 8, not 6); either way a number that depends on "
                                  "it is starred")
    paper: str | None = arg("--paper", default=None, metavar="FILE",
                            help="the paper's LaTeX source whose labels the coverage counts (default: the copy that comes "
                            "with the toolkit)")


@dataclass(frozen=True)
class CertifyParams(Params):
    """``stam pep --certify``'s parameters (issue 59): one point ``(lam, gamma, beta)`` (the flags of a single PEP;
    the decimals typed are the exact rationals the proof is made at), ``L1``, the class of F, the ``template`` of the
    potential, the solver, where the certificate is written (``out``; default
    ``certificate-<template>-lam<..>-gamma<..>-beta<..>.json`` in the working folder) and whether the text is JSON.  The
    run is :func:`stam.theory.pep_cli.run_certify` (:func:`stam.theory.worstcase.certificates.certify_point`)."""

    certify: bool = arg("--certify", action="store_true", default=False,
                        help="certify one point (--lam --gamma --beta; full gradient) with a Lyapunov function, prove it "
                        "in exact arithmetic and write the certificate (JSON of exact rationals; check it with --check)")
    slice: bool = arg("--slice", action="store_true", default=False,
                      help="--certify: every gamma*lam in (0, gamma*lam] at this lam, beta, L1 (the closed-form family "
                      "below c_DR, pieces of constant certificates above, each proven for its whole interval)")
    template: str = arg("--template", choices=("general", "paper"), default="general",
                        help="--certify: the potential: general = a G + b F + xi' P xi (the default), paper = a (G + H) + "
                        "b M_t (Theorem conv's)")
    lam: float | None = lam_arg()
    gamma: float | None = gamma_arg()
    beta: float | None = beta_arg()
    L1: float = L1_arg()
    f_class: str = f_class_arg()
    solver: str | None = solver_arg()
    out: str | None = pep_out_arg()
    json: bool = arg("--json", action="store_true", default=False, help="print JSON instead of text")


@dataclass(frozen=True)
class CheckParams(Params):
    """``stam pep --check FILE``'s parameters: the certificate file.  The run is :func:`stam.theory.pep_cli.run_check`
    (the independent checker :mod:`stam.theory.worstcase.certcheck`)."""

    check: str | None = arg("--check", nargs="?", const="", default=None, metavar="FILE",
                            help="re-verify a certificate file with the independent exact checker (shares no code with "
                            "the solver): exit 0 proven, 1 not proven, 2 not a certificate")
    json: bool = arg("--json", action="store_true", default=False, help="print JSON instead of text")


@dataclass(frozen=True)
class FamilyParams(Params):
    """``stam pep --family``'s parameters.  The run is :func:`stam.theory.pep_cli.run_family` (the closed-form
    certificate family of :mod:`stam.theory.worstcase.family`, proven symbolically)."""

    family: bool = arg("--family", action="store_true", default=False,
                       help="print the closed-form certificate family (the theorem) and prove it symbolically (sympy)")
    json: bool = arg("--json", action="store_true", default=False, help="print JSON instead of text")


#: the flags only ``--certify``, ``--check`` and ``--family`` add (the rest are a single PEP's)
CERTIFICATE_ONLY = ("certify", "slice", "template", "check", "family")

#: the fields of :class:`RegionParams` whose flags only ``--region`` takes (the rest, --L1 --F --N --b
#: --solver --force -o/--out, a single PEP reads too)
REGION_ONLY = ("lams", "betas", "gamma_range", "workers", "scheduler")

__all__ = ["PepParams", "RegionParams", "CertifyParams", "CheckParams", "FamilyParams", "CERTIFICATE_ONLY", "lam_arg",
           "gamma_arg", "beta_arg", "L1_arg", "f_class_arg", "N_arg", "b_arg", "solver_arg", "force_arg", "pep_out_arg", "PaperCheckParams", "REGION_ONLY", "REGION_GAMMA_RANGE", "REGION_RTOL", "REFUTE_TS", "REFUTE_BETAS",
           "REGION_SAMPLING", "SCAN_RATIO", "SCAN_MAX_STEPS", "MAX_SCAN_POINTS", "F_CLASSES", "DEFAULT_F_CLASS", "POSITIVE_LIST",
           "MAX_GRAM", "METHOD_F_CLASSES", "INITIALS", "MEASURES", "algo_arg"]
