"""Subcommands of this area (registered by ``stam.cli``).  Imports nothing heavy at module level:
each subcommand's arguments are added (and their declarations imported) when it is parsed or its help
shown (``build=``, :class:`stam.cli._Parser`), matplotlib and the other parts by the handlers when they run."""

from __future__ import annotations

import argparse

from stam.errors import positive_float, positive_int, require
from stam.registry import Names


def _figure_kinds() -> tuple:
    from stam.figures.kinds import figure_kinds

    return figure_kinds()


#: the names ``stam plot KIND`` takes: the figure kinds declared at their draw functions, found (their modules
#: imported) only when ``stam plot`` parses or shows its help, so that ``stam --help`` imports none of them
PLOT_KINDS = Names(_figure_kinds)


def _plot_description() -> str:
    """``stam plot --help``'s description, each figure kind's line of help (a function: ``stam.cli``'s parsers
    call a callable description when they show the help)."""
    return "KIND: " + "; ".join(f.help for f in _figure_kinds()) + "."

def _add_theory_constants(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "constants for the admissible-region figure (a network does not reveal them; they are printed in it)"
    )
    g.add_argument("--L1", type=positive_float, default=1.0, help="Lipschitz constant of grad G; also A = 2 max(L1, lambda) (default 1)")
    g.add_argument("--C", type=positive_float, default=1.0, help="ES constant C (default 1)")
    g.add_argument("--eps", type=positive_float, default=0.1, help="target accuracy epsilon (default 0.1)")
    g.add_argument("--T", type=positive_int, default=None,
                   help="iterations for the (gamma, beta) panel (default 391000: the paper's 1000 CIFAR epochs)")


def _constants(args):
    from stam.figures.admissible import PAPER_T, NetworkConstants

    require(2 * args.L1 < float("inf"), f"--L1 {args.L1:g}: A = 2 max(L1, lambda) is beyond floating point; "
            "give --L1 below 8.9e307")
    return NetworkConstants(L1=args.L1, a_G=args.L1, C=args.C, eps=args.eps, T=args.T or PAPER_T)


def _report(args) -> int:
    from stam.figures.report import build_report

    path = build_report(args.results, args.out, nc=_constants(args))
    print(path)
    return 0


def _plot(args) -> int:
    from stam.figures.report import plot_one

    png, pdf = plot_one(args.kind, args.results, args.out, nc=_constants(args))
    print(png)
    print(pdf)
    return 0


def _map(args) -> int:
    """``stam map``: the parameters of the command line, :func:`stam.figures.map_experiment.make_map`, the table on
    stdout."""
    from stam.dnn.params import refuse_data_dir
    from stam.figures.map_experiment import MapParams, format_map, make_map, summary_line

    refuse_data_dir(args.data_dir, args.dataset or "digits", synthetic=args.problem is not None)
    result, paths, elapsed = make_map(MapParams.from_args(args))
    print(format_map(result))
    print(summary_line(result) + f"; {elapsed:.1f} s")
    print(f"wrote {', '.join(map(str, paths[:3]))} and {paths[3]}")
    return 0


def _findings(args) -> int:
    from stam.figures.findings import findings_command

    return findings_command(args)


def _demo(args) -> int:
    from stam.figures.demo import run_demo

    return run_demo(args.out, quick=args.quick, progress=not args.no_progress)


def register(subparsers) -> None:
    """Add ``stam demo``, ``stam report``, ``stam plot``, ``stam map`` and ``stam findings``."""
    subparsers.add_parser(
        "demo",
        help="run the whole toolkit on built-in defaults and write an HTML report (the main job)",
        description="The paper audit, admissible step sizes, a synthetic rate experiment, a short digits training "
        "of STAM, BC, BR, PSGD and float, then the report. Nothing is downloaded. 2 minutes on 2 CPU cores at "
        "load 1, 13 at load 14 (--quick: 18 s at load 1, 2.5 minutes at load 14).",
        build=_build_demo,
    )
    subparsers.add_parser(
        "report",
        help="one self-contained HTML page with every figure and table for the results given",
        description="RESULTS are result files (JSON) or folders (searched recursively; a `stam train --out` folder "
        "is one run). Writes DIR/report.html with figures/, tables/ (Markdown and LaTeX) and data/ beside it.",
        build=_build_report,
    )
    subparsers.add_parser("plot", help="render one figure (PNG at 150 dpi and PDF)", description=_plot_description,
                          build=_build_plot)
    subparsers.add_parser(
        "map",
        help="the convergence map: STAM over a log grid of (gamma, lambda) at a few betas",
        description="Runs STAM on every (gamma, lambda, beta) of a grid with several seeds: on a synthetic problem "
        "(--problem binary: E S_T, the stationarity of Theorem conv, after T iterations; divergence marked) or on "
        "digits (--dataset digits, the default: validation accuracy with binary weights and the fraction of weights "
        "whose sign ever changed). Writes DIR/map-NAME.json and .csv and the figure DIR/map-NAME.png and .pdf "
        "(the theorem's region, gamma*lambda = 1/sqrt(5) and the paper's settings on the same axes), and prints a table.",
        build=_build_map,
    )
    subparsers.add_parser(
        "findings",
        help="the toolkit's findings, each with its scope, from the committed result files",
        description="Prints the findings table (Markdown, as README.md holds it), computed from the committed result "
        "files of benchmarks/results/. --write regenerates every generated block (<!-- findings:begin NAME -->) of "
        "README.md and docs/; --check exits 1 naming each block that differs from what the result files give.",
        build=_build_findings,
    )


def _build_demo(p) -> None:
    from stam.cliargs import add_out

    add_out(p, default="stam-demo", help="output folder (default: stam-demo)")
    p.add_argument("--quick", action="store_true", help="a smaller run for a first look (25 s on 2 cores at load 4-5)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_demo)


def _build_report(p) -> None:
    from stam.cliargs import add_out

    p.add_argument("results", nargs="*", metavar="RESULTS", help="result files or folders")
    add_out(p, required=True, help="output folder")
    _add_theory_constants(p)
    p.set_defaults(func=_report)


def _build_plot(p) -> None:
    from stam.cliargs import add_out

    p.add_argument("kind", choices=PLOT_KINDS, metavar="KIND", help="one of %(choices)s")
    p.add_argument("results", nargs="*", metavar="RESULTS", help="result files or folders")
    add_out(p, required=True, metavar="FILE", help="FILE.png (a FILE.pdf twin is written beside it)")
    _add_theory_constants(p)
    p.set_defaults(func=_plot)


def _build_map(p) -> None:
    from stam.figures.map_experiment import MapParams
    from stam.params import add_arguments

    add_arguments(p, MapParams)  # digits: the trainings are jobs in DIR/jobs (resumable), here or on a Dask cluster
    p.set_defaults(func=_map)


def _build_findings(p) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="regenerate every generated block of README.md and docs/")
    g.add_argument("--check", action="store_true", help="exit 1 naming each generated block that differs")
    p.add_argument("--root", default=None, metavar="DIR",
                   help="the repository whose pages and results to use (default: the checkout this package runs from)")
    p.set_defaults(func=_findings)
