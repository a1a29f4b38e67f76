"""Subcommands of this area (registered by ``stam.cli``).  Imports nothing heavy at module level:
the handlers live in :mod:`stam.synthetic.commands`, which imports torch when a command runs.

    stam synthetic run     --problem NAME   rate experiment against Theorem conv (JSON + CSV)
    stam synthetic compare --problem NAME   STAM vs baselines at an equal gradient budget
    stam synthetic sweep                    problems x seeds x gamma fractions, --workers N or --scheduler, resumable
"""

from __future__ import annotations


def _run(args):
    """``stam synthetic run``: a paper's preset named by ``--preset`` is read from the presets ``stam.cli`` hands
    to :func:`register` (the networks' declarations: synthetic imports nothing of dnn), and handed to the synthetic
    run as its (lambda, gamma, beta)."""
    from stam.synthetic.commands import rates_experiment, rates_text
    from stam.synthetic.params import RunParams

    values = args.paper_presets[args.preset] if args.preset else None
    print(rates_text(rates_experiment(RunParams.from_args(args, preset_values=values))))
    return 0


def _compare(args):
    from stam.synthetic.commands import compare_experiment, compare_text
    from stam.synthetic.params import CompareParams

    print(compare_text(compare_experiment(CompareParams.from_args(args))))
    return 0


def _sweep(args):
    from stam.synthetic.commands import sweep_experiment, sweep_text
    from stam.synthetic.params import SweepParams

    text = sweep_text(sweep_experiment(SweepParams.from_args(args)))
    if text:  # (a sweep of no jobs writes nothing)
        print(text)
    return 0


def register(subparsers, paper_presets: str | None = None) -> None:
    """Add ``stam synthetic run|compare|sweep`` (built when parsed: ``build=``).  ``paper_presets``: a
    ``"module:function"`` reference to the paper's presets ``--preset`` takes (``{"paper-our1": (lam, gamma, beta),
    ...}``), read when ``synthetic run`` is built; ``stam.cli`` hands the networks' (:data:`stam.cli.WIRING`), so that
    synthetic imports nothing of dnn; without one ``--preset`` takes none."""
    subparsers.add_parser("synthetic", help="synthetic three-block problems: rates, baselines, sweeps",
                          description="Synthetic problems with known constants (stam.synthetic).",
                          build=lambda top: _build(top, paper_presets))


def _build(top, paper_presets: str | None) -> None:
    sub = top.add_subparsers(dest="synthetic_command", metavar="SUBCOMMAND", parser_class=type(top))
    top.set_defaults(func=lambda args: top.print_help() or 2)

    sub.add_parser("run", help="STAM for T on a geometric grid against Theorem conv",
                   description="Rate experiment: min_t E S_t and the bound of Theorem conv for each T.",
                   build=lambda run: _build_run(run, paper_presets))
    sub.add_parser("compare", help="STAM vs SPRING-SGD, deterministic STAM (and PSGD/BC/BR) at equal budget",
                   description="Baselines with equal budgets of stochastic gradient evaluations.",
                   build=_build_compare)
    sub.add_parser("sweep", help="problems x seeds x gamma fractions, here or on a cluster, resumable",
                   description="Runs `synthetic run` for every combination as jobs of the toolkit's one job engine "
                               "(stored in OUT/jobs: a rerun skips the finished ones; --workers local processes or "
                               "a Dask --scheduler); the result files are written once every job has finished.",
                   build=_build_sweep)


def _build_run(run, paper_presets: str | None) -> None:
    from stam.params import add_arguments
    from stam.registry import load
    from stam.synthetic.params import RunParams

    presets = load(paper_presets)() if paper_presets else {}
    add_arguments(run, RunParams, more={"preset": {"choices": tuple(presets)}})
    run.set_defaults(func=_run, paper_presets=presets)


def _build_compare(cmp_) -> None:
    from stam.params import add_arguments
    from stam.synthetic.params import CompareParams

    add_arguments(cmp_, CompareParams)
    cmp_.set_defaults(func=_compare)


def _build_sweep(sw) -> None:
    from stam.params import add_arguments
    from stam.synthetic.params import SweepParams

    add_arguments(sw, SweepParams)
    sw.set_defaults(func=_sweep)
