"""Subcommands of this area (registered by ``stam.cli``): ``stam paper-check`` and
``stam stepsize``.  Imports nothing heavy at module level (the handlers import sympy / numpy
when they run; ``stam stepsize`` never imports sympy or torch)."""

from __future__ import annotations


def _paper_check(args) -> int:
    from stam.theory.papercheck.audit import paper_check, text
    from stam.theory.params import PaperCheckParams

    params = PaperCheckParams.from_args(args)
    print(text(params, paper_check(params)))
    return 0


def _stepsize(args) -> int:
    from stam.theory.symbolic.stepsize import StepsizeParams, stepsize, text

    params = StepsizeParams.from_args(args)
    print(text(params, stepsize(params)))
    return 0


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
    from stam.params import add_arguments
    from stam.theory.params import PaperCheckParams

    add_arguments(p, PaperCheckParams)
    p.set_defaults(func=_paper_check)


def _build_stepsize(s) -> None:
    from stam.params import add_arguments
    from stam.theory.symbolic.stepsize import StepsizeParams

    add_arguments(s, StepsizeParams)
    s.set_defaults(func=_stepsize)
