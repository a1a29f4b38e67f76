"""One CLI vocabulary (issue 25 item 4; docs/contributing.md, "flags: one meaning, one spelling"),
held over the whole parser tree of ``stam``: a new command that spells a meaning differently, or
parses a list or a range with a parser of its own, fails here."""

from __future__ import annotations

import argparse
import inspect
import re

import pytest

from stam.cli import build_parser, main
from stam.cliargs import ListArg, RangeArg
from stam.errors import positive_int

#: leaf commands that write nothing (they print): every other command has -o/--out (``stam findings --write``
#: rewrites the generated blocks of the repository's own pages in place: it has no output place to name)
PRINT_ONLY = {("stepsize",), ("table",), ("findings",)}


def _commands(parser=None, path=()) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    parser = parser or build_parser()
    found = {}
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs and path:
        found[path] = parser
    for sub in subs:
        for name, child in sub.choices.items():
            found.update(_commands(child, path + (name,)))
    return found


COMMANDS = _commands()
OPTIONS = [(cmd, a) for cmd, p in COMMANDS.items() for a in p._actions if a.option_strings]


def _flags(parser) -> set[str]:
    return {f for a in parser._actions for f in a.option_strings}


def _hidden(action) -> bool:
    return action.help == argparse.SUPPRESS


def test_the_tree_is_walked():
    assert {("map",), ("tune",), ("pep",), ("synthetic", "sweep"), ("train",), ("report",)} <= set(COMMANDS)
    assert len(COMMANDS) >= 13


@pytest.mark.parametrize("cmd", sorted(COMMANDS), ids=" ".join)
def test_every_command_that_writes_has_o_out(cmd):
    flags = _flags(COMMANDS[cmd])
    if cmd in PRINT_ONLY:
        assert "--out" not in flags and "-o" not in flags, f"stam {' '.join(cmd)} writes: drop it from PRINT_ONLY"
    else:
        assert {"-o", "--out"} <= flags, f"stam {' '.join(cmd)}: the output place is -o/--out"
    for action in COMMANDS[cmd]._actions:  # one action holds both spellings, never one of them alone
        if {"-o", "--out"} & set(action.option_strings):
            assert action.option_strings == ["-o", "--out"] and action.dest == "out"


@pytest.mark.parametrize("cmd", sorted(set(COMMANDS) - PRINT_ONLY), ids=" ".join)
def test_an_empty_out_is_refused_by_every_command(cmd, capsys, tmp_path, monkeypatch):
    """Issue 40: ``--out ''`` (which a path would read as the working folder) is one line, exit 2,
    before anything runs or is written, in every command that writes."""
    monkeypatch.chdir(tmp_path)
    for spelling in (["--out", ""], ["-o", ""], ["--out="]):
        with pytest.raises(SystemExit) as e:
            main([*cmd, *spelling])
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.count("\n") == 1, err
        assert "argument -o/--out: an empty name; give a folder or a file name" in err
    assert list(tmp_path.iterdir()) == []


def test_seeds_is_a_list_and_a_count_is_n_seeds():
    seen = {"list": 0, "count": 0}
    for cmd, action in OPTIONS:
        where = f"stam {' '.join(cmd)} {action.option_strings}"
        if "--seeds" in action.option_strings:
            if _hidden(action):  # the old spelling of the count, kept for one release
                assert action.dest == "n_seeds" and action.type is positive_int, where
            else:
                assert isinstance(action.type, ListArg), f"{where}: --seeds is a list of seeds; a count is --n-seeds"
                seen["list"] += 1
        if "--n-seeds" in action.option_strings:
            assert action.type is positive_int and not _hidden(action), where
            seen["count"] += 1
    assert seen["list"] >= 1 and seen["count"] >= 2


def test_local_processes_are_workers_and_j_is_never_shown():
    for cmd, action in OPTIONS:
        where = f"stam {' '.join(cmd)} {action.option_strings}"
        if {"-j", "--jobs"} & set(action.option_strings):
            assert _hidden(action) and action.dest == "workers", f"{where}: local processes are --workers"
        if "--workers" in action.option_strings:
            assert action.type is positive_int, where


def test_lists_and_ranges_use_the_one_pair_of_parsers():
    lists = ranges = 0
    for cmd, action in OPTIONS:
        where = f"stam {' '.join(cmd)} {'/'.join(action.option_strings)}"
        metavar = str(action.metavar or "")
        is_range = any(f.endswith("-range") for f in action.option_strings) or ":" in metavar.replace("FILE.py:NAME", "")
        is_list = "," in metavar or "comma-separated" in str(action.help or "")
        if is_range:
            assert isinstance(action.type, RangeArg) and metavar == "LO:HI:N", f"{where}: ranges are LO:HI:N (RangeArg)"
            ranges += 1
        elif is_list:
            assert isinstance(action.type, ListArg), f"{where}: lists are comma-separated (ListArg)"
            lists += 1
        if isinstance(action.type, RangeArg):
            assert is_range, f"{where}: a range flag is named --NAME-range with metavar LO:HI:N"
        if isinstance(action.type, ListArg):
            assert is_list, f"{where}: a list flag shows A,B,... in its metavar"
        elif action.type is not None and not isinstance(action.type, RangeArg):
            source = inspect.getsource(action.type) if inspect.isfunction(action.type) else ""
            assert not re.search(r"split\(\s*['\"][,:]['\"]", source), \
                f"{where}: {action.type.__name__} parses a list or a range itself; use stam.cliargs"
    assert ranges >= 3 and lists >= 8


def test_sampling_b_goes_with_N_and_runs_R_are_not_seeds():
    """--b is the b of the paper's b-nice sampling of N terms (with --N, as in stepsize and pep); a
    network's minibatch is --batch-size.  --R counts runs of one instance (not seeds)."""
    for cmd, parser in COMMANDS.items():
        flags = _flags(parser)
        if "--b" in flags:
            assert "--N" in flags and "--batch-size" not in flags, cmd
        if "--R" in flags:
            assert "--n-seeds" not in flags, cmd


@pytest.mark.parametrize("argv, flag", [
    (["map", "--problem", "binary", "--gammas", "1,x"], "--gammas"),
    (["map", "--problem", "binary", "--gamma-range", "1:3"], "--gamma-range"),
    (["pep", "--region", "-o", "r.json", "--gamma-range", "1:3"], "--gamma-range"),
    (["pep", "--lam", "1", "--gamma", "1", "--beta", "1", "--sweep-T", "1,,2", "-o", "s.json"], "--sweep-T"),
    (["synthetic", "sweep", "--seeds", "0,x"], "--seeds"),
    (["tune", "--algos", "stam,adam"], "--algos"),
])
def test_one_wording_naming_the_flag(argv, flag, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1
    assert re.match(rf"stam [a-z ]+: error: argument {re.escape(flag)}: '[^']*'[: ].*; give ", err[0]), err[0]
    assert not list(tmp_path.iterdir())


def test_the_one_pair_parses():
    assert ListArg(positive_int, "integers", "1,2")(" 3, 1,3") == [3, 1, 3]
    assert ListArg(positive_int, "integers", "1,2", sort=True)("3,1,3") == [1, 3]
    assert RangeArg("1:2:2", max_points=5)("0.5:2:3") == (0.5, 2.0, 3)
    for bad in ("1:2", "2:1:2", "0:1:2", "1:2:9", "a:b:c"):
        with pytest.raises(argparse.ArgumentTypeError):
            RangeArg("1:2:2", max_points=5)(bad)


def test_pep_region_range_scans_n_gammas():
    """``stam pep --region --gamma-range LO:HI:N``: N gammas from LO to HI, as ``stam map``'s ranges;
    without it the default scan (factors of 1.2) is unchanged."""
    from stam.theory.params import REGION_GAMMA_RANGE, SCAN_RATIO
    from stam.theory.worstcase import lyapunov as ly

    seen = []
    lo, hi, calls = ly._first_gap(lambda g: seen.append(g) or True, 0.01, 100, 0.02, ly.gamma_scan_ratio((0.01, 100, 5)))
    assert hi is None and lo == 100 and seen == pytest.approx([0.01, 0.1, 1, 10, 100])
    assert ly.gamma_scan_ratio(REGION_GAMMA_RANGE) == SCAN_RATIO


@pytest.mark.parametrize("cmd", ["map", "tune"])
def test_the_old_count_spelling_still_parses_and_is_not_shown(cmd, capsys):
    parser = build_parser()
    assert parser.parse_args([cmd, "--seeds", "2"]).n_seeds == 2 == parser.parse_args([cmd, "--n-seeds", "2"]).n_seeds
    with pytest.raises(SystemExit):
        parser.parse_args([cmd, "--help"])
    shown = capsys.readouterr().out
    assert "--n-seeds" in shown and "--seeds" not in shown


def test_stam_help_builds_no_command_and_imports_no_numpy():
    """Issue 37, point 8: ``stam --help`` (a fresh process, as the console script runs it) lists every command
    and imports no numpy, torch, matplotlib or sympy: each command's flags are built when it is parsed or its
    help shown (``build=``), the figure kinds only for ``stam plot``.  Its time is measured in
    benchmarks/cli_start.py, not here."""
    import subprocess
    import sys

    code = ("import contextlib, io, sys\n"
            "from stam.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    try:\n"
            "        main(['--help'])\n"
            "    except SystemExit:\n"
            "        pass\n"
            "assert all(c in out.getvalue() for c in ('demo', 'plot', 'stepsize', 'synthetic', 'tune', 'pep')), out.getvalue()\n"
            "print(sorted(m for m in ('numpy', 'torch', 'matplotlib', 'sympy', 'stam.figures.kinds') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]"]


def test_a_lazy_parser_parses_as_the_built_one(capsys):
    """The parser :func:`stam.cli.main` uses (each command built when reached) gives the namespace of the one
    built whole, for commands of every area, nested ones included; a bad figure kind is one line naming the
    declared kinds."""
    from stam.figures.kinds import NAMES

    for argv in (["plot", "rates", "r.json", "-o", "f.png"], ["synthetic", "run", "--problem", "binary", "--quick"],
                 ["stepsize", "--quadratic-coupling", "0.5"], ["pep", "--lam", "1", "--gamma", "0.1", "--beta", "9",
                                                                "--T", "2"], ["tune", "--algos", "stam,bc"],
                 ["map", "--problem", "binary"], ["paper-check", "--brief"], ["table", "runs"]):
        lazy, whole = build_parser(lazy=True).parse_args(argv), build_parser().parse_args(argv)
        assert {k: v for k, v in vars(lazy).items() if k != "func"} == {k: v for k, v in vars(whole).items() if k != "func"}
        assert getattr(lazy.func, "__qualname__", lazy.func) == getattr(whole.func, "__qualname__", whole.func)
    with pytest.raises(SystemExit) as exc:
        main(["plot", "nope", "-o", "f.png"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and all(repr(n) in err for n in NAMES)


def test_the_console_entry_point_runs_main_and_freezes_what_is_alive_for_a_quick_exit(monkeypatch):
    """``stam`` (the console script and ``python -m stam``) is :func:`stam.cli.console_main`: :func:`stam.cli.main`'s
    exit code, then ``gc.freeze`` (the interpreter's last collection skips the frozen objects); ``main`` itself leaves
    the collector alone, so code calling it in-process keeps collecting what it frees."""
    import gc
    import tomllib
    from pathlib import Path

    from stam import cli

    root = Path(__file__).resolve().parents[1]
    assert tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]["stam"] == "stam.cli:console_main"
    assert "console_main()" in (root / "stam" / "__main__.py").read_text()
    monkeypatch.setattr(cli, "main", lambda: 7)
    try:
        gc.unfreeze()
        assert cli.console_main() == 7 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    before = gc.get_freeze_count()
    monkeypatch.undo()
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert gc.get_freeze_count() == before == 0
