"""Subcommands of this area (registered by ``stam.cli``): ``stam paper-check`` and
``stam stepsize``.  Imports nothing heavy at module level (the handlers import sympy / numpy
when they run; ``stam stepsize`` never imports sympy or torch)."""

from __future__ import annotations


def _paper_check(args) -> int:
    from stam.errors import require
    from stam.io import check_out_file

    require(not (args.json and args.brief), "--json and --brief are two formats of the same findings; give one")
    if args.out is not None:
        check_out_file(args.out, "--out")
    if args.corrected is not None:
        from stam.io import check_out_dir

        out = check_out_dir(args.corrected, "--corrected")
        for name in ("corrected.tex", "corrected.md"):
            check_out_file(out / name, "--corrected")
    args.paper_text = None
    if args.paper is not None:
        from stam.io import read_input_text

        text = read_input_text(args.paper, f"--paper {args.paper}", max_bytes=20_000_000)
        require("\x00" not in text and any(mark in text for mark in ("\\documentclass", "\\begin{", "\\section", "\\label{")),
                f"--paper {args.paper}: not a LaTeX source (no \\documentclass, \\begin, \\section or \\label in it); "
                "give the paper's .tex file")
        args.paper_text = text
    from stam.theory.audit import run

    return run(args)


def _stepsize(args) -> int:
    from stam.theory.stepsize import run

    return run(args)


def register(subparsers) -> None:
    """Add ``stam paper-check`` and ``stam stepsize`` (their arguments added when parsed: ``build=``)."""
    subparsers.add_parser(
        "paper-check",
        help="re-derive the paper's constants, thresholds and inequality steps; report what is false, unproven, misprinted "
        "or missing, with counterexamples",
        description="For each audited item: its label, what is printed, what is derived (sympy), a verdict "
        "(ok / misprint / false / unproven / gap, computed by one rule) with its evidence kind and, where the print "
        "fails, a concrete counterexample found by a seeded search (for unproven steps: the search on actual runs that "
        "found none). "
        "The toolkit computes with the corrected forms.",
        build=_build_paper_check,
    )
    subparsers.add_parser(
        "stepsize",
        help="admissible step sizes: gamma_max, recommended gamma, K1..K3, M, L, beta_min, T_min; or check a setting",
        description="Which (gamma, beta, T) the theory admits (Lemma conv-lemma, Theorems conv and conv-rate), with the "
        "corrected constants (see stam paper-check). Without --gamma: gamma_max and the recommended gamma (the admissible "
        "gamma minimising T_min). With --gamma: the same at that gamma. With --gamma --beta [--T] [--eps ...]: "
        "admissible yes/no and the violated conditions.",
        epilog="Example (the paper's Table para, Our1): stam stepsize --quadratic-coupling 0.5 --gamma 8 --beta 1e3",
        build=_build_stepsize,
    )


def _build_paper_check(p) -> None:
    from stam.cliargs import add_out
    from stam.theory.items.numbering import UNDECLARED_COUNTERS

    p.add_argument("--json", action="store_true", help="print a JSON list of {label, printed, derived, verdict, "
                   "counterexample, covers, gap, elsewhere, printed_mathml, ...}")
    p.add_argument("--brief", action="store_true", help="one line per item (label, verdict, what is wrong); not with --json")
    p.add_argument("--as-printed", action="store_true",
                   help="also evaluate the printed forms on the counterexamples and show the numbers they give")
    add_out(p, metavar="FILE", help="also write the JSON result (kind paper-check, with provenance and coverage) to FILE")
    p.add_argument("--corrected", metavar="DIR", help="also write the corrected lemmas and theorems (hypotheses, "
                   "constants) to DIR/corrected.tex and DIR/corrected.md")
    p.add_argument("--assumption-counter", choices=tuple(UNDECLARED_COUNTERS), default="own",
                   help="how the paper's undeclared assumption environment is counted in the printed numbers: own "
                   "(its own counter, the default) or theorem (shared with the lemmas and theorems: Lemma conv-lemma is "
                   "then Lemma 8, not 6); either way a number that depends on it is starred")
    p.add_argument("--paper", metavar="FILE", help="the paper's LaTeX source whose labels the coverage counts "
                   "(default: the copy that comes with the toolkit)")
    p.set_defaults(func=_paper_check)


def _build_stepsize(s) -> None:
    from stam.theory.stepsize import add_arguments

    add_arguments(s)
    s.set_defaults(func=_stepsize)
