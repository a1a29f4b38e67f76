"""Fuzzing the command line (issue 12: hardened against bad input, crashes and hostile files).

Arguments are generated from the subcommands' own argparse parsers (``stam.cli.build_parser()``
is walked: every option gets values drawn by its type: floats over the whole range and beyond it,
integers huge and negative, strings with quotes and HTML, paths of every kind: missing, a file,
a folder where a file is meant, a read-only folder, under a file), and result files of every kind
are fed in malformed (truncated, invalid UTF-8, wrong types, missing keys, hostile strings, deep
nesting).  Each probe runs ``stam.cli.main(argv)`` in-process, with a fresh temporary folder as
the working directory, and asserts:

- it returns 0 or 2 (never raises: no traceback);
- on 2, stderr is exactly one line starting ``stam: error:`` and the output folder is unchanged;
- nothing is created outside the output folder (the temporary folder is snapshot before and
  after), and no numpy ``RuntimeWarning`` leaks.

Expensive commands run tiny sizes (``synthetic run --quick``, small ``--n``/``--N``/``--budget``,
PEP horizons of 1 or 2, or a horizon the size limit refuses, ``train`` one epoch of digits without
``--download``).  ``train --resume`` gets a real checkpoint changed in one place (a value, a key, a
byte, a truncation; half of the edits re-sealed with a fresh content hash), ``table`` malformed
``summary.json``/``log.jsonl`` files beside a good run, ``paper-check`` its store (``STAM_CACHE_DIR``)
mutated the same way, half re-sealed with a fresh digest, or a link, a folder, a pipe or a huge file
in its place: the output must be the one with the store off, unless the store is still one the
toolkit reads (re-sealed and of its type).  Issue 40's classes: Markdown links and images in labels
(``stam table``, the report's ``tables/*.md``: no live link), image-cache entries changed after a
load (FIFOs, links, a folder, Fortran order, headers claiming 10^12 images, a killed run's
temporaries: never a wait, never trusted, rebuilt, nothing left), modules planted in the working
folder and on ``PYTHONPATH`` of a decode with worker processes (none runs), whatever is at the AOT
key path but its package (never loaded), and full disks (a tmpfs of 4 KiB to 512 KiB where root
may mount one, else ``ENOSPC`` at the writes: exit 0, or 1 with one line naming a path in the
output folder, no temporary, no half-written JSON); repeated rows (up to 100,000 copies of a map's
cell, trials beyond a tuning's budget), overrides that are not a number or a schedule, and
``--space-file`` decay factors that are neither a number > 0 nor a constant ``presets.json`` names
(each one line naming the file or the flag).  The number of examples is the
hypothesis profile ``stam-fuzz`` (small, for CI: the whole file takes about a minute on 2 cores, two when they are shared);
``STAM_FUZZ_EXAMPLES=2000`` selects the profile ``stam-fuzz-long`` with that many examples per
test.  Each test asserts how many probes it ran and prints the count (``pytest -s``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import stat
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stam.cli import build_parser, main
from stam.cliargs import ListArg
from stam.errors import finite_float, nonneg_float, positive_float, positive_int, seed_int
from stam.dnn.params import TrainConfig
from json_edits import paths, set_at

LONG = int(os.environ.get("STAM_FUZZ_EXAMPLES", "0") or 0)
settings.register_profile("stam-fuzz", max_examples=8, deadline=None, derandomize=True, database=None,
                          suppress_health_check=list(HealthCheck))
settings.register_profile("stam-fuzz-long", max_examples=max(LONG, 1), deadline=None,
                          suppress_health_check=list(HealthCheck))
PROFILE = settings.get_profile("stam-fuzz-long" if LONG else "stam-fuzz")


def examples(n: int) -> settings:
    """``n`` examples in CI (cheap commands get more), the long profile's number otherwise."""
    return settings(PROFILE, max_examples=LONG or n)


#: where a hostile name (``../../..``) would land if a path were built from it: must never exist
ESCAPE = f"stam-fuzz-escape-{os.getpid()}"
PROBES: dict[str, int] = {}
OUTCOMES: dict[tuple, int] = {}  # (command, exit status) -> probes

# -- values -------------------------------------------------------------------------------------

HOSTILE = [
    '"><img src=x onerror=alert(1)>', "<script>alert(1)</script>", "a'b\"c", "$\\notacommand{$", "$x^$",
    f"../../../../../../../../tmp/{ESCAPE}", f"/../../../../{ESCAPE}/PWNED", "a|b|c", "line\nbreak", "\\", "",
    " ", "%s%n{0}", "\u202e\u0000x", "\u00e9\u4e2d\U0001f600", "x" * 300, "-", "--", "nan", "inf",
]
TEXT = st.one_of(st.sampled_from(HOSTILE), st.text(st.characters(blacklist_categories=("Cs",),
                                                                  blacklist_characters="\x00"), max_size=12))
# valid values (extremes included) several times as often as invalid ones, so that most probes get
# past argument parsing into the computation
EXTREME_FLOATS = ["1e-320", "5e-324", "1e308", "1.7976931348623157e308", "1e-300", "1e300", "0.1", "0.5", "2", "1000"]
BAD_FLOATS = ["-1", "0", "-0", "nan", "inf", "-inf", "abc", "", "1e999", "0x10", "1_000"]
VALID_FLOATS = st.one_of(st.sampled_from(EXTREME_FLOATS), st.floats(min_value=1e-6, max_value=1e6).map(repr))
FLOATS = st.one_of(*[VALID_FLOATS] * 8, st.sampled_from(BAD_FLOATS), st.floats(allow_nan=True, allow_infinity=True).map(repr))
VALID_INTS = st.one_of(st.sampled_from(["1", "2", "10", "99999999999999999999999", str(2**63 - 1)]),
                       st.integers(1, 10**6).map(str))
INTS = st.one_of(*[VALID_INTS] * 6, st.sampled_from(["0", "-1", "-5", str(2**63), "1.5", "x", "", "1e3"]),
                 st.integers(-10, 10**30).map(str))
SMALL = (st.integers(2, 6).map(str), st.one_of(st.integers(1, 6).map(str), st.sampled_from(["0", "-3", "x", "1.5"])))
SMALL_INTS = SMALL[1]

#: kinds of output path; resolved under the output folder by :func:`place`
OUT_KINDS = ["new", "nested", "existing-file", "existing-dir", "read-only-dir", "under-a-file", "dot", "empty"]
#: the kinds drawn: a new path as often as all the hostile ones together
OUT_DRAWS = ["new"] * 7 + OUT_KINDS


def place(kind: str, root: Path, ext: str) -> str:
    """An output path of ``kind`` under ``root/out`` (``ext`` '' for a folder flag)."""
    out = root / "out"
    return {
        "new": str(out / f"new{ext}"),
        "nested": str(out / "a" / "b" / f"c{ext}"),
        "existing-file": str(out / "file.txt"),
        "existing-dir": str(out / "dir"),
        "read-only-dir": str(out / "ro" / f"x{ext}") if ext else str(out / "ro"),
        "under-a-file": str(out / "file.txt" / f"x{ext}"),
        "dot": str(out / "."),
        "empty": "",
    }[kind]


# -- the parsers ----------------------------------------------------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> dict:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    raise AssertionError("no subcommands")


def command_parsers() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    top = _subparsers(build_parser())
    found = {(name,): top[name] for name in ("stepsize", "paper-check", "pep", "report", "plot", "map", "tune", "demo",
                                            "train", "table")}
    syn = _subparsers(top["synthetic"])
    found.update({("synthetic", name): syn[name] for name in ("run", "compare", "sweep")})
    return found


PARSERS = command_parsers()


def _T_list_type(action) -> bool:
    return isinstance(action.type, ListArg) and action.type.item is positive_int


def value_strategy(action, overrides: dict, valid: bool):
    """Values for one option, drawn by its type (``overrides`` bound the expensive ones: a
    strategy, or a pair (valid values, any values)); ``valid``: only values of the option's type
    and range (extremes included), so that the probe gets past argument parsing."""
    if action.dest in overrides:
        over = overrides[action.dest]
        return over if not isinstance(over, tuple) else over[0] if valid else over[1]
    if action.choices:
        good = st.sampled_from(sorted(map(str, action.choices)))
        return good if valid else st.one_of(good, st.sampled_from(HOSTILE[:4]))
    if action.type in (positive_float, finite_float, nonneg_float):
        return VALID_FLOATS if valid else FLOATS
    if action.type in (positive_int, seed_int):
        return VALID_INTS if valid else INTS
    if _T_list_type(action):
        return st.lists(st.integers(1, 3).map(str) if valid else SMALL_INTS, min_size=1, max_size=3).map(",".join)
    if action.dest == "out" or action.metavar in ("FILE", "DIR"):
        return st.sampled_from(OUT_DRAWS).map(lambda k: ("<out>", k))
    return TEXT


@st.composite
def argv_for(draw, command: tuple[str, ...], overrides: dict, fixed: tuple[str, ...] = (),
             positionals=None, keep: tuple[str, ...] = (), often: tuple[str, ...] = ()):
    """An argv for ``stam COMMAND``: each option of its parser present or not (``keep``: always,
    ``often``: half the time, the others one time in sixteen, so that most argvs are coherent), with
    a value of its type; positionals from ``positionals``."""
    parser = PARSERS[command]
    valid = draw(st.integers(0, 3)) < 3  # three argvs in four: every value of its option's type
    argv: list = list(command) + list(fixed)
    for action in parser._actions:
        if not action.option_strings or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        flag = action.option_strings[-1]
        if flag in fixed:
            continue
        top = 1 if action.dest in often else 15
        if action.dest not in keep and draw(st.integers(0, top)) != top:  # (hypothesis starts from 0: left out)
            continue
        if action.nargs == 0:  # store_true
            argv.append(flag)
        else:
            argv += [flag, draw(value_strategy(action, overrides, valid))]
    if positionals is not None:
        argv += draw(positionals)
    return argv


# -- running one probe ------------------------------------------------------------------------------


def _tree(root: Path, skip: Path | None = None) -> dict[str, tuple]:
    """Every path under ``root`` (not under ``skip``) with its type and size."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if skip is not None and (here == skip or skip in here.parents):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = here / name
            if skip is not None and p == skip:
                continue
            st_ = p.lstat()
            out[str(p.relative_to(root))] = (stat.S_IFMT(st_.st_mode), st_.st_size if not stat.S_ISDIR(st_.st_mode) else 0)
    return out


@contextlib.contextmanager
def sandbox():
    """A fresh temporary folder as the working directory, with ``out/`` holding one path of each
    kind :func:`place` names, and ``in/`` for inputs."""
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="stam-fuzz-") as tmp:
        root = Path(tmp)
        (root / "out" / "dir").mkdir(parents=True)
        (root / "out" / "file.txt").write_text("keep me\n")
        (root / "out" / "ro").mkdir()
        (root / "in").mkdir()
        os.chmod(root / "out" / "ro", 0o555)
        os.chdir(root)
        try:
            yield root
        finally:
            os.chdir(cwd)
            for dirpath, dirnames, _ in os.walk(root):  # let the clean-up remove read-only folders
                for d in dirnames:
                    with contextlib.suppress(OSError):
                        os.chmod(Path(dirpath) / d, 0o755)


#: ``STAM_FUZZ_COLLECT=1``: a probe that breaks the contract is recorded in FINDINGS (printed by
#: test_probe_counts_are_reported) instead of failing its test, to count the findings of a version
COLLECT = bool(os.environ.get("STAM_FUZZ_COLLECT"))
FINDINGS: dict[str, list] = {}


def probe(argv: list, root: Path, name: str, diverged_ok: bool = False) -> tuple[int, str, str]:
    """Run ``stam argv`` in-process in ``root``; assert the contract of the module docstring
    (``diverged_ok``: exit 1 is ``stam train``'s one-line report of a run that diverged)."""
    if not COLLECT:
        return _probe(argv, root, name, diverged_ok)
    try:
        return _probe(argv, root, name, diverged_ok)
    except AssertionError as exc:
        FINDINGS.setdefault(name, []).append(str(exc)[:300])
        return -1, "", str(exc)


def finding(name: str, ok: bool, what) -> None:
    """Assert ``ok`` for a probe of ``name`` (recorded in FINDINGS instead under STAM_FUZZ_COLLECT)."""
    if COLLECT and not ok:
        FINDINGS.setdefault(name, []).append(str(what)[:300])
        return
    assert ok, what


def _probe(argv: list, root: Path, name: str, diverged_ok: bool = False) -> tuple[int, str, str]:
    argv = [place(a[1], root, a[2] if len(a) > 2 else "") if isinstance(a, tuple) else a for a in argv]
    outside, inside = _tree(root, skip=root / "out"), _tree(root / "out")
    stdout, stderr = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(stdout), \
            contextlib.redirect_stderr(stderr):
        warnings.simplefilter("always")
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse's own errors
            rc = exc.code
    PROBES[name] = PROBES.get(name, 0) + 1
    OUTCOMES[(name, rc)] = OUTCOMES.get((name, rc), 0) + 1
    err = stderr.getvalue()
    assert rc in ((0, 1, 2) if diverged_ok else (0, 2)), (argv, rc, err[-2000:])
    assert "Traceback" not in err, (argv, err[-2000:])
    if rc == 1:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("stam: error: ") and "became" in lines[0], (argv, err)
    if rc == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith(("stam: error:", "stam ")) and ": error: " in lines[0], (argv, err)
        assert _tree(root / "out") == inside, (argv, "an error after writing", err)
    numpy_warnings = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not numpy_warnings, (argv, numpy_warnings)
    assert _tree(root, skip=root / "out") == outside, (argv, "written outside the output folder")
    assert not Path(f"/tmp/{ESCAPE}").exists() and not Path(f"/{ESCAPE}").exists()
    return rc, stdout.getvalue(), err


def report_count(name: str, minimum: int) -> None:
    statuses = ", ".join(f"{n} exit {rc}" for (cmd, rc), n in sorted(OUTCOMES.items(), key=str) if cmd == name)
    print(f"fuzz: {PROBES.get(name, 0)} probes of stam {name} ({statuses})")
    assert PROBES.get(name, 0) >= minimum


# -- argument fuzzing, one test per subcommand ----------------------------------------------------------

OUT_FILE = lambda ext: st.sampled_from(OUT_DRAWS).map(lambda k: ("<out>", k, ext))  # noqa: E731
OUT_DIR = OUT_FILE("")


@examples(60)
@given(argv_for(("stepsize",), {}, keep=("quadratic_coupling", "L1", "A", "C", "delta0", "M0", "eps"),
                often=("gamma", "beta", "T", "as_printed", "json")))
def fuzz_stepsize(argv):
    with sandbox() as root:
        probe(argv, root, "stepsize")


@examples(4)
@given(argv_for(("paper-check",), {"out": OUT_FILE(".json")}, often=("out", "json", "brief", "as_printed")))
def fuzz_paper_check(argv):
    with sandbox() as root:
        probe(argv, root, "paper-check")


PEP_T = (st.sampled_from(["1", "2", "1", "2", "25", "100000", "99999999999999999999999"]),
         st.sampled_from(["1", "2", "25", "100000", "99999999999999999999999", "0", "-1"]))
PEP_FLOATS = (st.one_of(st.sampled_from(["1", "0.1", "250", "10"]), VALID_FLOATS), FLOATS)


@examples(6)
@given(argv_for(("pep",), {"T": PEP_T, "sweep_T": (st.sampled_from(["1", "1,2", "30"]), st.sampled_from(["1", "1,2", "30", "0,1", "x"])),
                           "lam": PEP_FLOATS, "gamma": PEP_FLOATS, "beta": PEP_FLOATS, "L1": PEP_FLOATS,
                           "out": OUT_FILE(".json"), "solver": (st.sampled_from(["clarabel", "auto"]), st.sampled_from(["clarabel", "auto", "x"]))},
                keep=("lam", "gamma", "beta"), often=("T", "sweep_T", "out", "json")))
def fuzz_pep(argv):
    pytest.importorskip("PEPit")
    if "--force" in argv and any(argv[i + 1] not in ("1", "2", "1,2") for i, a in enumerate(argv[:-1])
                                 if a in ("--T", "--sweep-T")):
        argv = [a for a in argv if a != "--force"]  # --force on a large PEP is unbounded work by request
    with sandbox() as root:
        probe(argv, root, "pep")


SYNTH = {
    "n": SMALL, "N": (st.sampled_from(["4", "8"]), SMALL_INTS), "b": SMALL, "R": SMALL,
    "gamma_fraction": (st.sampled_from(["0.5", "0.1"]), st.sampled_from(["0.5", "0.1", "1", "1e-320"])),
    "threads": (st.just("1"), st.sampled_from(["1", "0", "x"])),
    "device": (st.just("cpu"), st.sampled_from(["cpu", "cuda", "meta", "x", ""])),
    "budget": (st.sampled_from(["8", "16"]), st.sampled_from(["8", "16", "1", "0", "x", "-4"])),
    "out": OUT_DIR, "problem": st.sampled_from(["binary", "sparse-l1", "sparse-mcp", "cosine", "nope"]),
}


@examples(6)
@given(argv_for(("synthetic", "run"), SYNTH, fixed=("--quick", "--no-progress"), keep=("problem", "out", "n", "N", "b", "R"),
                often=("gamma", "beta", "allow_inadmissible")))
def fuzz_synthetic_run(argv):
    with sandbox() as root:
        probe(argv, root, "synthetic run")


@examples(4)
@given(argv_for(("synthetic", "compare"), SYNTH, fixed=("--no-progress",), keep=("problem", "out", "budget", "n", "N", "b", "R")))
def fuzz_synthetic_compare(argv):
    with sandbox() as root:
        probe(argv, root, "synthetic compare")


SWEEP = {
    "problems": st.sampled_from(["binary", "binary", "cosine,binary", "nope", "", ","]),
    "seeds": st.sampled_from(["0", "0", "0,1", "-1", "x", "99999999999999999999999", ""]),
    "gamma_fractions": st.sampled_from(["0.5", "0.5", "0.25", "0", "1", "nan", "x", "1e-320"]),
    "R": st.sampled_from(["1", "2", "0", "x"]), "T_max": st.sampled_from(["10", "10", "12", "5", "x"]),
    "T_points": st.sampled_from(["1", "2", "0"]), "workers": st.sampled_from(["1"]), "out": OUT_DIR,
}


@examples(4)
@given(argv_for(("synthetic", "sweep"), SWEEP, fixed=("--no-progress", "--workers", "1"),
                keep=("problems", "seeds", "gamma_fractions", "R", "T_max", "T_points", "out")))
def fuzz_synthetic_sweep(argv):
    with sandbox() as root:
        probe(argv, root, "synthetic sweep")


MAP = {
    "problem": (st.sampled_from(["binary"]), st.sampled_from(["binary", "cosine", "nope", ""])),
    "dataset": st.sampled_from(["digits"]),
    "gamma_range": (st.sampled_from(["0.01:10:2", "0.1:1:1"]), st.sampled_from(["0.01:10:2", "1:0.1:2", "0:1:2", "a:b:c", "1:2",
                                                                               "1e-320:1e308:2", "0.1:1:999999999"])),
    "lam_range": (st.sampled_from(["0.1:10:2", "1:1:1"]), st.sampled_from(["0.1:10:2", "x", "-1:2:2", "1:2:0"])),
    "gammas": (st.sampled_from(["0.1", "0.1,1"]), st.sampled_from(["0.1", ",", "nan", "-1", "1e999", "0.1,,2"])),
    "lams": (st.sampled_from(["1", "0.5,2"]), st.sampled_from(["1", "inf", "", "x"])),
    "betas": (st.sampled_from(["20", "100"]), st.sampled_from(["20", "0", "-5", "x,y", "1e308"])),
    "iterations": (st.sampled_from(["5", "10"]), SMALL_INTS), "epochs": (st.just("1"), SMALL_INTS),
    "n_seeds": (st.just("1"), SMALL_INTS), "threads": (st.just("1"), st.sampled_from(["1", "0"])),
    "growth": (st.sampled_from(["100", "2"]), st.sampled_from(["1", "0.5", "-1", "nan"])),
    "workers": (st.just("1"), st.sampled_from(["1", "0", "x"])),
    "scheduler": (st.sampled_from(["local"]), st.sampled_from(["local", "tcp://127.0.0.1:1", "x", ""])), "out": OUT_DIR,
}


@examples(6)
@given(argv_for(("map",), MAP, fixed=("--no-progress",), keep=("out",),
                often=("problem", "gamma_range", "lam_range", "betas", "iterations", "epochs", "n_seeds")))
def fuzz_map(argv):
    if "--problem" not in argv:  # digits: one tiny grid, one epoch (a few seconds), unless a flag is bad
        argv = [a for a in argv if a not in ("--iterations",)]
        for flag, value in (("--gamma-range", "0.1:1:1"), ("--lam-range", "1:1:1"), ("--epochs", "1"), ("--n-seeds", "1")):
            if flag not in argv and flag.replace("-range", "s") not in argv:
                argv += [flag, value]
    with sandbox() as root:
        probe(argv, root, "map")


TUNE = {
    "algos": (st.sampled_from(["bc", "psgd"]), st.sampled_from(["bc", "adam", "", ",", "stam,stam"])),
    "trials": (st.just("1"), SMALL_INTS), "n_seeds": (st.just("2"), st.sampled_from(["1", "0", "2", "x"])),
    "epochs": (st.just("1"), SMALL_INTS), "batch_size": (st.sampled_from(["64"]), SMALL_INTS),
    "val_fraction": (st.sampled_from(["0.1", "0.2"]), st.sampled_from(["0", "1", "0.999999", "1e-320", "x", "nan"])),
    "space_file": (st.sampled_from(["in/space.json"]), st.sampled_from(["in/space.json", "in/bad.json", "in/missing.json", "in"])),
    "workers": (st.just("1"), st.sampled_from(["1", "0", "x"])),
    "scheduler": (st.sampled_from(["local"]), st.sampled_from(["local", "x"])), "out": OUT_DIR,
}


@examples(4)
@given(argv_for(("tune",), TUNE, fixed=("--no-progress", "--no-paper"), keep=("algos", "trials", "n_seeds", "epochs", "out"),
                often=("space_file", "val_fraction")))
def fuzz_tune(argv):
    with sandbox() as root:
        (root / "in" / "space.json").write_text(json.dumps({"bc": {"lr": {"log_uniform": [0.01, 0.1]}},
                                                            "psgd": {"lr": {"log_uniform": [0.01, 0.1]}}}))
        (root / "in" / "bad.json").write_text('{"bc": {"lr": {"log_uniform": [1, "x"]}}, "adam": 3}')
        probe(argv, root, "tune")


@examples(4)
@given(st.sampled_from(["existing-file", "under-a-file", "dot", "empty"]))
def fuzz_demo(kind):
    """``stam demo -o`` at every kind of location it must refuse (before any work: each probe is a
    fraction of a second; the demo itself is tested end to end in tests/test_demo.py)."""
    with sandbox() as root:
        probe(["demo", "--quick", "--no-progress", "-o", ("<out>", kind)], root, "demo")


# -- result files, well-formed and malformed ---------------------------------------------------------------


def valid_files() -> dict[str, object]:
    """One small, well-formed file of every kind the report reads (as the producers write them)."""
    rows = [{"T": T, "gamma": 0.1, "beta": 3.0 * T, "admissible": True, "S_min_mean": 1.0 / T, "S_min_std": 0.01,
             "S_min_lo": 0.9 / T, "S_min_hi": 1.1 / T, "bound": 10.0 / T, "ratio": 10.0, "t_star": T - 1,
             "S_0_mean": 2.0, "S_final_mean": 1.0 / T, "nonfinite": 0} for T in (10, 40)]
    return {
        "rates.json": {"kind": "synthetic-rates", "problem": "binary", "params": {"R": 2, "gamma_rule": "given"},
                       "rows": rows, "slope": -1.0, "bound_slope": -1.0},
        "pep.json": {"kind": "pep-sweep", "lam": 1.0, "gamma": 0.1, "beta": 10.0,
                     "rows": [{"T": 1, "worst_case": 0.5, "bound": 2.0, "ratio": 0.25, "status": "optimal"}]},
        "compare.json": {"kind": "synthetic-compare", "problem": "binary",
                         "rows": [{"method": "stam", "iterations": 4, "final_S": 0.1, "objective": 1.0,
                                   "quantised_objective": None, "wall_time": 0.1, "grad_evals": 32}]},
        "paper-check.json": [{"label": "k1", "printed": "K1", "derived": "K1", "verdict": "ok", "counterexample": None}],
        "stepsize.json": {"gamma_max": 0.2, "gamma": 0.1, "K1": 1.0, "K2": 2.0, "K3": 3.0, "M": 6.0, "L": 2.0,
                          "beta_min": 40.0, "binding": "2*K2/K1", "T_min": 100},
        "run/summary.json": {"kind": "train-run", "model": "mlp", "dataset": "digits", "algo": "stam",
                             "preset": "our1", "label": "Our1", "best_test_acc_binary": 60.0,
                             "best_test_acc_float": 62.0, "epochs": 2, "seconds": 0.4},
        "run/config.json": {"model": "mlp", "dataset": "digits", "algo": "stam", "preset": "our1", "epochs": 2},
        "map.json": {"kind": "convergence-map", "format": 2, "source": "digits", "problem": "digits-mlp", "metric": "val_acc_binary",
                     "metric_label": "validation accuracy", "beta_rule": {"kind": "fixed", "values": [20.0]},
                     "beta_rule_text": "beta fixed at 20", "budget": {"epochs": 1}, "params": {},
                     "rows": [{"gamma": g, "lam": 1.0, "beta": 20.0, "seeds": 1, "metric": 50.0, "metric_std": None,
                               "val_acc_float": 60.0, "val_acc_float_std": None, "diverged": 0, "sign_ever_changed": 0.1,
                               "admissible": g < 0.2} for g in (0.1, 1.0)]},
        "tune.json": {"kind": "tune", "params": {"trials": 1, "seeds": 2, "epochs": 1, "batch_size": 64},
                      "algorithms": [{"algo": "bc", "label": "BC", "trials": [{"overrides": {"lr": 0.1}, "score": 90.0,
                                                                              "selected_epoch": 1, "diverged_epoch": None}],
                                      "best": {"overrides": {"lr": 0.1}, "score": 90.0},
                                      "final": {"test_acc": [90.0, 91.0], "diverged": 0, "mean": 90.5, "std": 0.5 ** 0.5}}],
                      "paper_rows": []},
        "region.json": {"kind": "lyapunov-region", "L1": 1.0,
                        "rows": [{"lam": lam, "gamma_theorem": 0.2, "general": {"lo": 10.0, "hi": 12.0, "beta": 100.0},
                                  "paper": {"lo": 1.0 / lam, "hi": 1.1 / lam, "beta": 100.0},
                                  "refuted": {"lo": 1.3 / lam, "hi": 1.4 / lam}} for lam in (0.5, 2.0)]},
        "band.json": {"kind": "pep-band", "lam": 1.0, "L1": 1.0, "gamma_lam_range": [0.9, 1.6], "certified": 0.99,
                      "rows": [{"T": 1, "beta": 10.0, "lo": 1.365, "hi": 1.367}, {"T": 5, "beta": 10.0, "lo": 1.6,
                                                                                "hi": None}]},
        "methods-regions.json": {
            "kind": "methods-regions", "L1": 1.0,
            "methods": [{"algo": "psgd", "label": "PSGD",
                         "natural": [{"f_class": "indicator", "certified": [0.0, 2.0], "refuted": [[2.0, None]],
                                      "verdict": "certified"}],
                         "common": [{"f_class": "indicator", "certified": None, "refuted": [[0.0, None]],
                                     "verdict": "none"}]}],
            "stam_natural": {"source": "region.json", "L1": 1.0,
                             "classes": [{"f_class": "lsc", "certified_gamma_lam": [0.99, 1.0],
                                          "refuted_gamma_lam": [1.3, 1.4]}]}},
        "methods-steps.json": {
            "kind": "methods-steps", "multiples": [0.1, 1.0], "seeds": 1, "epochs": 1, "protocol": "tiny",
            "methods": [{"algo": "psgd", "step_key": "lr", "tuned": {"lr": 0.5}, "curvature": 5.0,
                         "rows": [{"multiple": m, "lr": 0.5 * m, "test_acc": [80.0], "diverged_epoch": [None], "mean": 80.0,
                                   "min": 80.0, "max": 80.0, "diverged": 0} for m in (0.1, 1.0)]}]},
        "run/log.jsonl": [{"epoch": e, "train_loss": 1.0 / e, "train_acc": 50.0, "test_acc_binary": 50.0 + e,
                           "test_acc_float": 55.0, "hyper": {"gamma": 0.1, "lam": 1.0, "beta": 100.0},
                           "proxy_grad": 1.0 / e, "proxy_z": 0.5 / e, "theorem": {"admissible": True},
                           "seconds": 0.1} for e in (1, 2)],
    }


#: what `stam plot` draws from each file (the figure that reads it)
PLOT_KIND = {"rates.json": "rates", "pep.json": "rates", "map.json": "map", "tune.json": "admissible",
             "region.json": "admissible", "run/summary.json": "training", "run/config.json": "training",
             "run/log.jsonl": "practice", "compare.json": "admissible", "paper-check.json": "admissible",
             "stepsize.json": "admissible", "band.json": "pep-band", "methods-regions.json": "methods",
             "methods-steps.json": "methods"}
WRONG = st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(), st.sampled_from(HOSTILE),
                  st.lists(st.integers(), max_size=2), st.dictionaries(st.sampled_from(["a", "T"]), st.integers(), max_size=2))


def _drop(obj, path):
    parent = obj
    for p in path[:-1]:
        parent = parent[p]
    if isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent.pop(path[-1])
    return obj


def _dump(name: str, obj) -> bytes:
    if name.endswith(".jsonl") and isinstance(obj, list):
        return "".join(json.dumps(row) + "\n" for row in obj).encode()
    return json.dumps(obj).encode()


@st.composite
def malformed(draw, names: tuple | None = None):
    """(file name, bytes): a file of one kind (one of ``names``, default every kind), mutated."""
    name = draw(st.sampled_from(sorted(names or valid_files())))
    return name, draw(mutated(name, valid_files()[name]))


@st.composite
def mutated(draw, name: str, valid, seal=None):
    """The bytes of the file ``name`` holding ``valid`` after one mutation (``seal(obj)``: what makes
    an edited object consistent again, e.g. a fresh content hash, applied to half of the edits)."""
    obj = json.loads(json.dumps(valid))
    how = draw(st.sampled_from(["wrong-type", "wrong-type", "drop-key", "hostile-string", "truncate", "utf8",
                                "whole", "deep", "valid"]))
    inside = [p for p, _ in paths(obj) if p]
    if how == "wrong-type":
        obj = set_at(obj, draw(st.sampled_from(inside)), draw(WRONG))
    elif how == "drop-key":
        obj = _drop(obj, draw(st.sampled_from(inside)))
    elif how == "hostile-string":  # a string field gets a hostile value (any field, where there is none)
        strings = [p for p, v in paths(obj) if p and isinstance(v, str)] or inside
        obj = set_at(obj, draw(st.sampled_from(strings)), draw(st.sampled_from(HOSTILE)))
    elif how == "whole":
        obj = draw(WRONG)
    elif how == "deep":
        depth = draw(st.sampled_from([50, 5000, 100000]))
        return ("[" * depth + "]" * depth).encode()
    if seal is not None and how in ("wrong-type", "drop-key", "hostile-string") and draw(st.booleans()):
        obj = seal(obj)
    data = _dump(name, obj)
    if how == "truncate":
        data = data[: draw(st.integers(0, max(len(data) - 2, 0)))]
    elif how == "utf8":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"])) + data[at:]
    return data


def _write_inputs(root: Path, name: str, data: bytes) -> Path:
    """The valid files of every kind, with ``name`` replaced by ``data``; returns the input path."""
    for other, obj in valid_files().items():
        path = root / "in" / other
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if other == name else _dump(other, obj))
    return root / "in" / (name if "/" not in name else name.split("/")[0])


@examples(30)
@given(malformed(), st.sampled_from(["plot", "report"]))
def fuzz_malformed_result_files(case, command):
    name, data = case
    with sandbox() as root:
        target = _write_inputs(root, name, data)
        if command == "plot":
            argv = ["plot", PLOT_KIND[name], str(target), "-o", str(root / "out" / "fig.png")]
        else:
            argv = ["report", str(target), "-o", str(root / "out" / "report")]
        probe(argv, root, "report/plot on malformed files")


@examples(6)
@given(argv_for(("report",), {"out": OUT_DIR, "T": st.one_of(INTS, st.sampled_from(["99999999999999999999999"]))},
                positionals=st.lists(st.sampled_from(["in/rates.json", "in/run", "in", "in/missing.json",
                                                      "out/file.txt", "in/pep.json"]), max_size=2),
                keep=("out",)))
def fuzz_report(argv):
    with sandbox() as root:
        _write_inputs(root, "", b"")
        probe(argv, root, "report")


@examples(8)
@given(argv_for(("plot",), {"out": OUT_FILE(".png"),
                            "T": st.one_of(INTS, st.sampled_from(["99999999999999999999999"]))},
                positionals=st.tuples(st.sampled_from(["rates", "admissible", "training", "practice", "nope"]),
                                      st.lists(st.sampled_from(["in/rates.json", "in/run", "in/pep.json"]),
                                               max_size=1)).map(lambda t: [t[0], *t[1]]),
                keep=("out",)))
def fuzz_plot(argv):
    with sandbox() as root:
        _write_inputs(root, "", b"")
        probe(argv, root, "plot")


# -- the store of stam paper-check (stam.theory.papercheck.store) ------------------------------------------------------

_STORE: dict = {}


def _store() -> dict:
    """A valid findings store (its file name and object, made by a run in a temporary folder) and the
    ``--brief`` output with the store off."""
    if not _STORE:
        with tempfile.TemporaryDirectory(prefix="stam-fuzz-store-") as tmp, _cache_dir(tmp), \
                contextlib.redirect_stdout(io.StringIO()):
            assert main(["paper-check", "--brief"]) == 0
            (path,) = Path(tmp).glob("paper-check-*.json")
            _STORE.update(name=path.name, obj=json.loads(path.read_text()))
        with _cache_dir("off"), contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(["paper-check", "--brief"]) == 0
        _STORE["off"] = out.getvalue()
    return _STORE


@contextlib.contextmanager
def _cache_dir(where: str):
    """``STAM_CACHE_DIR=where`` for a block (tests run with it off: tests/conftest.py)."""
    old = os.environ.get("STAM_CACHE_DIR")
    os.environ["STAM_CACHE_DIR"] = where
    try:
        yield
    finally:
        if old is None:
            del os.environ["STAM_CACHE_DIR"]
        else:
            os.environ["STAM_CACHE_DIR"] = old


def _sealed(obj):
    from stam.theory.papercheck.store import store_digest

    if isinstance(obj, dict) and "digest" in obj:
        obj["digest"] = store_digest(obj)
    return obj


@examples(12)
@given(st.data())
def fuzz_paper_check_store(data):
    """The store ``stam paper-check`` reads back (result type ``paper-check-store``) mutated like the
    result files above (half of the edits re-sealed with a fresh digest, so that the type itself is
    what refuses them), or a link, a folder, a pipe or a huge file in its place: the run ends well, and
    prints what it prints with the store off unless the store is still one the toolkit reads (sealed
    and of its type: a deliberate edit, read back as it is)."""
    from stam.theory.papercheck.store import STORE_MAX_BYTES, read_store

    store = _store()
    draw = data.draw
    how = draw(st.sampled_from(["mutated"] * 6 + ["link", "link-outside", "folder", "pipe", "huge"]))
    with sandbox() as root, _cache_dir(str(root / "out" / "cache")):
        path = root / "out" / "cache" / store["name"]
        path.parent.mkdir()
        valid = root / "in" / store["name"]
        valid.write_text(json.dumps(store["obj"]))
        if how == "mutated":
            path.write_bytes(draw(mutated(store["name"], store["obj"], seal=_sealed)))
        elif how.startswith("link"):
            path.symlink_to(valid if how == "link" else root / "out" / "file.txt")
        elif how == "folder":
            path.mkdir()
        elif how == "pipe":
            os.mkfifo(path)
        else:
            with open(path, "wb") as f:
                f.truncate(STORE_MAX_BYTES + 1)
        read_back = read_store(path, path.stem.removeprefix("paper-check-")) is not None
        rc, out, err = probe(["paper-check", "--brief"], root, "paper-check store")
        finding("paper-check store", rc == 0 and err == "" and (read_back or out == store["off"]), (how, rc, err[-300:]))
        finding("paper-check store", valid.read_text() == json.dumps(store["obj"])
                and (root / "out" / "file.txt").read_text() == "keep me\n", (how, "a link's target changed"))


# -- stam train and stam table ------------------------------------------------------------------------

TRAIN = {  # tiny digits runs of one epoch; every other path fails before any training
    "model": st.sampled_from(["mlp", "mlp", "mlp", "cnn", "vgg11"]),
    "dataset": st.sampled_from(["digits"] * 6 + ["cifar10"]),  # no CIFAR archive in the sandbox: one line
    "epochs": (st.just("1"), st.sampled_from(["1", "0", "-1", "x", ""])),
    "batch_size": (st.sampled_from(["64", "256", "2048", "99999999999999999999999"]), st.sampled_from(["64", "1", "0", "x"])),
    "eval_batch_size": (st.sampled_from(["1000", "7", "99999999999999999999999"]), st.sampled_from(["1", "0", "x"])),
    "preset": (st.sampled_from(["our1", "our3", "bc", "br", "psgd", "float"]), st.sampled_from(["our3", "our9", "", "../x"])),
    "overrides": (st.sampled_from(["lr=0.1", "lr=0.01", "gamma=0.5", "gamma=8", "beta=1e308", "gamma=1e-320", "lam=1e300",
                                   "lr=1e30", "weight_decay=0", 'lr=[{"from": 1, "value": 0.01}]', "momentum=0.9"]),
                  st.one_of(TEXT, st.sampled_from(["lr=-1", "lr=nan", "gamma=", "=1", 'lr=[{"from": 0}]', "lr=1e999"]))),
    "schedule_scale": (st.sampled_from(["auto", "1", "1e-320", "1e308", "0.5"]), st.sampled_from(["0", "-1", "nan", "x", "inf"])),
    "keep_float": (st.sampled_from(["first", "last", "first,last", "none"]), st.sampled_from(["middle", "", ",", "first,x"])),
    "val_fraction": (st.sampled_from(["0.1", "0.5", "0.05", "0.9"]), st.sampled_from(["0", "1", "nan", "x", "-0.1"])),
    "device": (st.just("cpu"), st.sampled_from(["cpu", "cuda", "auto"])),
    "data_dir": st.one_of(st.just("data"), TEXT),
    "out": OUT_DIR,
}


def _no_download(argv: list) -> list:
    """Never the network: ``--download`` is left out of every probe."""
    return [a for a in argv if a != "--download"]


@examples(12)
@given(argv_for(("train",), TRAIN, fixed=("--no-progress", "--dataset", "digits"), keep=("out", "epochs", "algo", "model"),
                often=("batch_size", "overrides", "schedule_scale", "seed")))
def fuzz_train(argv):
    with sandbox() as root:
        probe(_no_download(argv), root, "train", diverged_ok=True)


#: a real checkpoint (1 epoch of STAM on digits), made once per process
_CHECKPOINT: dict = {}
CKPT_ARGV = ["train", "--model", "mlp", "--dataset", "digits", "--algo", "stam", "--epochs", "2", "--batch-size", "256",
             "--no-progress", "--quiet", "--resume"]


def _real_run() -> Path:
    if "dir" not in _CHECKPOINT:
        from stam.dnn import train as T

        tmp = Path(tempfile.mkdtemp(prefix="stam-fuzz-ckpt-"))
        T.train(TrainConfig(model="mlp", dataset="digits", algo="stam", epochs=1, batch_size=256, out=str(tmp / "run"),
                            progress=False, echo=False))
        _CHECKPOINT["dir"] = tmp / "run"
    return _CHECKPOINT["dir"]


def _leaves(obj, prefix=()):
    """Every (path, value) inside a loaded checkpoint (tensors are leaves)."""
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, prefix + (i,))


CKPT_WRONG = st.one_of(WRONG, st.sampled_from(["two", -1, 10**30, float("nan")]),
                       st.tuples(st.integers(0, 3), st.sampled_from(["float32", "uint8", "int64", "bool"])).map(
                           lambda t: __import__("torch").zeros((t[0],) * min(t[0], 2), dtype=getattr(__import__("torch"), t[1]))))


@examples(16)
@given(st.data())
def fuzz_train_resume_checkpoint(data):
    """``stam train --resume`` on a real checkpoint changed in one place: a value replaced, a key
    dropped (then, half the time, re-sealed with a fresh content hash, so that the structure
    check has to catch it), a byte flipped anywhere in the file, or the file truncated."""
    import shutil

    import torch

    from stam.dnn import checkpoint

    how = data.draw(st.sampled_from(["replace", "replace", "drop", "flip", "truncate"]))
    with sandbox() as root:
        run = root / "out" / "run"
        shutil.copytree(_real_run(), run)
        path = run / "checkpoint.pt"
        if how in ("flip", "truncate"):
            raw = bytearray(path.read_bytes())
            at = data.draw(st.integers(0, len(raw) - 1))
            if how == "flip":
                raw[at] ^= 1 << data.draw(st.integers(0, 7))
            path.write_bytes(bytes(raw if how == "flip" else raw[:at]))
        changed, resealed = True, False
        if how not in ("flip", "truncate"):
            ckpt = torch.load(path, weights_only=True)
            before = checkpoint.digest(ckpt)
            where = data.draw(st.sampled_from([p for p, _ in _leaves(ckpt) if p and p[0] != "format"]))
            if how == "drop":
                _drop(ckpt, where)
            else:
                set_at(ckpt, where, data.draw(CKPT_WRONG))
            changed = checkpoint.digest(ckpt) != before
            if data.draw(st.booleans()):  # a consistent file: only the structure check can refuse it
                ckpt["sha256"] = {k: checkpoint.digest(ckpt.get(k)) for k in checkpoint.HASHED}
                changed, resealed = False, True  # (a change the run accepts, e.g. a label of null, resumes)
            torch.save(ckpt, path)
        # a consistent checkpoint whose weights make the loss overflow diverges: one line, exit 1
        rc, _, err = probe([*CKPT_ARGV, "--out", str(run)], root, "train --resume on a changed checkpoint", diverged_ok=resealed)
        # every change the hash covers is refused; a flipped bit may land outside the data (zip
        # header fields the reader ignores)
        assert rc == 2 or how == "flip" or not changed, (how, err)


TABLE_FILES = ("run/summary.json", "run/log.jsonl")


@examples(16)
@given(malformed(TABLE_FILES), argv_for(("table",), {"dataset": st.sampled_from(["digits", "cifar10"])},
                                        positionals=st.sampled_from([["in"], ["in/run"], ["in/missing"], ["out/file.txt"]])))
def fuzz_table(case, argv):
    name, data = case
    with sandbox() as root:
        _write_inputs(root, name, data)
        good = root / "in" / "good"
        good.mkdir()
        (good / "summary.json").write_text(json.dumps(valid_files()["run/summary.json"]))
        rc, out, err = probe(argv, root, "table on malformed run files")
        if rc == 0 and name == "run/summary.json" and argv[-1] == "in":  # the bad summary is named or used, never dropped
            assert ("in/run/summary.json" in err and "1 run(s) skipped" in out) or "skipped" not in out, (err, out)


# -- issue 27: the classes of its outside battery --------------------------------------------------------------
#
# Huge integers and extreme floats on the flags that ended in internal errors, out of memory or
# unbounded work; impossible values in every kind of result file; flags a mode would ignore;
# failing reruns into a used folder; concurrent runs on one folder.

HUGE = "99999999999999999999"
def syn_map(**flags) -> list:
    """A tiny synthetic map's argv, with ``flags`` (``gammas="1e308"``; ``lams=None`` drops --lams) changed."""
    base = {"gammas": "0.1", "lams": "1", "betas": "100", "iterations": "5", "seeds": "1", **flags}
    return ["map", "--problem", "binary", *[a for k, v in base.items() if v is not None
                                            for a in ("--" + k.replace("_", "-"), v)], "--no-progress"]


SYN_MAP = syn_map()
DIGITS_MAP = ["map", "--gammas", "0.1", "--lams", "1", "--epochs", "1", "--n-seeds", "1", "--no-progress"]
TUNE_SMALL = ["tune", "--algos", "bc", "--trials", "1", "--n-seeds", "2", "--epochs", "1", "--no-paper", "--no-progress"]
EXTREMES = [
    ["synthetic", "compare", "--problem", "binary", "--budget", HUGE, "--no-progress", "--out", ("<out>", "new")],
    ["synthetic", "run", "--problem", "binary", "--quick", "--threads", HUGE, "--no-progress", "--out", ("<out>", "new")],
    [*SYN_MAP, "--threads", HUGE, "--out", ("<out>", "new")],
    ["synthetic", "run", "--problem", "binary", "--quick", "--R", HUGE, "--no-progress", "--out", ("<out>", "new")],
    ["synthetic", "run", "--problem", "binary", "--T-max", HUGE, "--no-progress", "--out", ("<out>", "new")],
    ["synthetic", "sweep", "--problems", "binary", "--seeds", HUGE, "--no-progress", "--out", ("<out>", "new")],
    ["synthetic", "sweep", "--problems", "binary", "--seeds", "0", "-j", HUGE, "--T-max", HUGE, "--no-progress",
     "--out", ("<out>", "new")],
    [*TUNE_SMALL[:-1], "--trials", HUGE, "--out", ("<out>", "new")],
    [*TUNE_SMALL[:-1], "--n-seeds", "100000000", "--out", ("<out>", "new")],
    [*TUNE_SMALL, "--epochs", "100000000", "--out", ("<out>", "new")],
    [*TUNE_SMALL, "--batch-size", "1", "--out", ("<out>", "new")],
    [*TUNE_SMALL, "--val-fraction", "0.9999", "--out", ("<out>", "new")],
    ["train", "--model", "mlp", "--dataset", "digits", "--algo", "bc", "--epochs", HUGE, "--no-progress", "--out", ("<out>", "new")],
    ["train", "--model", "mlp", "--dataset", "digits", "--algo", "stam", "--epochs", "1", "--set", "gamma=1e308", "--no-progress",
     "--out", ("<out>", "new")],
    [*syn_map(iterations="99999999999"), "--out", ("<out>", "new")],
    [*syn_map(gammas="1e308"), "--out", ("<out>", "new")],
    [*syn_map(gammas="1e-320"), "--out", ("<out>", "new")],
    [*syn_map(lams=None, lam_range="0.1:1e308:2"), "--out", ("<out>", "new")],
    ["map", "--gamma-range", "0.01:10:200", "--lam-range", "0.01:10:200", "--no-progress", "--out", ("<out>", "new")],
    ["map", "--problem", "binary", "--gamma-range", "0.01:10:200", "--lam-range", "0.01:10:200", "--no-progress",
     "--out", ("<out>", "new")],
    [*DIGITS_MAP[:5], "--epochs", HUGE, "--no-progress", "--out", ("<out>", "new")],
    ["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "1", "--L1", "1e308"],
    ["stepsize", "--quadratic-coupling", "0.5", "--L1", "1", "--Lmax", "1e308", "--N", "10", "--b", "2",
     "--delta-inf", "0", "--delta0", "1", "--M0", "0", "--eps", "0.1"],
    # issue 40: the widest network, the most epochs a flag takes
    [*TUNE_SMALL[:-1], "--model", "vgg11", "--width", "64", "--no-progress", "--out", ("<out>", "new")],
    [*TUNE_SMALL[:-1], "--model", "cnn", "--width", "64", "--epochs", "1000000", "--no-progress", "--out", ("<out>", "new")],
]


@examples(8)
@given(st.sampled_from(range(len(EXTREMES))))
def fuzz_extremes(i):
    """The huge and extreme values of issue 27 items 1 and 2: each is refused in one line before
    any work, or runs to a clean end (the contract of :func:`probe`), never a hang or an allocation."""
    with sandbox() as root:
        probe(list(EXTREMES[i]), root, "huge and extreme numbers", diverged_ok=EXTREMES[i][0] == "train")


NAN, INF = float("nan"), float("inf")
#: values no producer writes, per file and field (issue 27 item 3)
IMPOSSIBLE = [
    ("pep.json", ("rows", 0, "worst_case"), [-1.0, NAN, -INF]), ("pep.json", ("lam",), [NAN, -1.0, 0.0, INF]),
    ("pep.json", ("rows", 0, "T"), [0, -3]),
    ("rates.json", ("rows", 0, "T"), [-10, 0, 40, 80]), ("rates.json", ("rows", 1, "S_min_mean"), [-1.0, NAN, INF]),
    ("rates.json", ("rows", 0, "gamma"), [0.0, -1.0, NAN]), ("rates.json", ("rows", 0, "S_min_lo"), [5.0]),
    ("region.json", ("L1",), [0.0, -1.0, NAN]), ("region.json", ("rows", 0, "lam"), [-1.0, 0.0, INF]),
    ("region.json", ("rows", 0, "paper", "hi"), [0.5, -2.0]),
    ("tune.json", ("algorithms", 0, "final", "mean"), [NAN, 150.0, -1.0]),
    ("tune.json", ("algorithms", 0, "final", "std"), [INF, -1.0]),
    ("tune.json", ("algorithms", 0, "trials", 0, "score"), [1e308, NAN, INF, -5.0, "x"]),
    ("tune.json", ("dataset",), ["../../../tmp/x", "A B"]), ("tune.json", ("algorithms", 0, "final", "diverged"), [3, -1]),
    ("run/log.jsonl", (1, "epoch"), [1, 0, -1]), ("run/log.jsonl", (0, "test_acc_binary"), [200.0, NAN, -1.0]),
    ("run/summary.json", ("best_test_acc_binary",), [NAN, 1e30, -5.0]),
    ("run/summary.json", ("dataset",), ["../../../../tmp/x"]), ("run/summary.json", ("epochs",), [-5]),
    ("run/summary.json", ("width",), [0.0, NAN]),
    ("stepsize.json", ("gamma_max",), [-1.0, NAN]), ("stepsize.json", ("gamma",), [5.0]),
    ("compare.json", ("rows", 0, "grad_evals"), [-3]), ("compare.json", ("rows", 0, "final_S"), [-1.0]),
    ("paper-check.json", ("coverage",), [{"audited": 10**30, "total": 0}, {"audited": 3, "total": 2}]),
]


@examples(16)
@given(st.sampled_from(IMPOSSIBLE).flatmap(lambda c: st.tuples(st.just(c), st.sampled_from(c[2]))),
       st.sampled_from(["report", "plot", "table"]))
def fuzz_impossible_file_values(case, command):
    """A value no producer writes (a negative worst case, lambda nan, T out of order, epochs
    repeated, accuracies beyond 100 %, a coverage above the labels, a dataset that is a path) is one
    line naming the file, exit 2, nothing written; ``stam table`` skips such a summary and never
    prints nan."""
    (name, path, _), value = case
    obj = valid_files()[name]
    if name == "paper-check.json":
        obj = {"kind": "paper-check", "items": obj, "coverage": value}
    else:
        set_at(obj, path, value)
    with sandbox() as root:
        target = _write_inputs(root, name, _dump(name, obj))
        if command == "table" and name.startswith("run/"):
            rc, out, err = probe(["table", str(root / "in"), "--paper-metric"], root, "impossible file values")
            finding("impossible file values", rc in (0, 2) and "nan" not in out and "summary.json" not in out
                    and (name != "run/summary.json" or "skipped" in err), (name, path, value, out, err))
            return
        argv = (["plot", PLOT_KIND[name], str(target), "-o", str(root / "out" / "fig.png")] if command == "plot"
                else ["report", str(target), "-o", str(root / "out" / "report")])
        rc, _, err = probe(argv, root, "impossible file values")
        finding("impossible file values", rc == 2 and Path(name).name in err, (name, path, value, rc, err[-300:]))


def _repeat_rows(name: str, n: int):
    """The file ``name``'s first row (a map's cell, a tuning's algorithm or trial) repeated ``n`` times."""
    def edit(obj):
        if name == "map.json":
            obj["rows"] = [dict(obj["rows"][0]) for _ in range(n)]
        elif n > 1:  # an algorithm twice, or more trials than the budget (params.trials)
            what = obj["algorithms"] if n == 2 else obj["algorithms"][0]["trials"]
            what[:] = [json.loads(json.dumps(what[0])) for _ in range(n)]
        return obj
    return edit


#: issue 40: repeated rows (up to 100,000 copies of a map's cell), trials beyond the budget, overrides that are
#: not a number or a schedule (a string reached the table's :.3g): (file, edit)
REPEATED = [("map.json", _repeat_rows("map.json", n)) for n in (2, 1000, 100_000)] + \
    [("tune.json", _repeat_rows("tune.json", n)) for n in (2, 3, 100_000)] + \
    [("tune.json", lambda o, v=v: set_at(o, ["algorithms", 0, "best", "overrides", "lr"], v) or o)
     for v in ("abc", "", {"default": 0.1}, [{"from": 1, "value": "x"}], [], True, -1.0, [{"from": 1, "value": 1, "decay": {"factor": "os:system"}}])]


@examples(8)
@given(st.sampled_from(range(len(REPEATED))), st.sampled_from(["report", "plot"]))
def fuzz_repeated_rows_and_overrides(i, command):
    """A file of repeated rows or an override the table cannot print: exit 2 and one line naming the file
    (its type refuses it), in seconds, never an internal error or a figure of 100,000 copies of one cell."""
    name, edit = REPEATED[i]
    obj = edit(valid_files()[name])
    with sandbox() as root:
        target = root / "in" / name
        target.write_bytes(_dump(name, obj))
        argv = (["plot", "map" if name == "map.json" else "tuning-curves", str(target), "-o", str(root / "out" / "fig.png")]
                if command == "plot" else ["report", str(target), "-o", str(root / "out" / "report")])
        rc, _, err = probe(argv, root, "repeated rows and overrides")
        finding("repeated rows and overrides", rc == 2 and name in err, (name, i, rc, err[-300:]))


#: issue 40: a --space-file whose decay factor is not a number > 0 nor a constant presets.json names
FACTORS = ["os:system", "stam.__main__:main", "stam.algorithm:RULES", "stam.algorithm:", ":", *HOSTILE[:6], -2, 0, True,
           None, [1.02], {"x": 1}, 1e309]


@examples(6)
@given(st.sampled_from(FACTORS))
def fuzz_space_file_factors(factor):
    """Refused in one line before any job (nothing imported: a user's file names no code), never failing
    inside the first job."""
    from stam.dnn import tunespace

    spaces = tunespace.declared_spaces()
    spaces["br"]["lam"]["decay"]["factor"] = factor
    with sandbox() as root:
        (root / "in" / "spaces.json").write_text(json.dumps(spaces))
        argv = ["tune", "--algos", "br", "--trials", "1", "--n-seeds", "2", "--epochs", "1", "--no-paper", "--no-progress",
                "--space-file", str(root / "in" / "spaces.json"), "--out", ("<out>", "new")]
        rc, _, err = probe(argv, root, "space-file factors")
        finding("space-file factors", rc == 2 and ("decay" in err or "--space-file" in err), (factor, rc, err[-300:]))


IGNORED = [  # (argv, the flag the one line must name): a flag the mode does not use (issue 27 item 4)
    ([*SYN_MAP, "--scheduler", "tcp://127.0.0.1:1"], "--scheduler"), ([*SYN_MAP, "--workers", "2"], "--workers"),
    ([*SYN_MAP, "--epochs", "1"], "--epochs"),
    ([*SYN_MAP, "--batch-size", "8"], "--batch-size"),
    ([*DIGITS_MAP, "--seed", "5"], "--seed"), ([*DIGITS_MAP, "--growth", "2"], "--growth"),
    ([*DIGITS_MAP, "--threads", "2"], "--threads"), ([*DIGITS_MAP, "--iterations", "5"], "--iterations"),
    (["synthetic", "run", "--problem", "binary", "--quick", "--T-max", "20"], "--T-max"),
    ([*TUNE_SMALL, "--space-file", "in/bool.json"], "log_uniform"),
    ([*TUNE_SMALL, "--data-dir", "in"], "--data-dir"), ([*SYN_MAP, "--data-dir", "in"], "--data-dir"),  # issue 40
    ([*DIGITS_MAP, "--data-dir", "in"], "--data-dir"),
]


@examples(6)
@given(st.sampled_from(IGNORED), st.sampled_from(OUT_DRAWS[:4]))
def fuzz_ignored_flags(case, out):
    argv, flag = case
    with sandbox() as root:
        (root / "in" / "bool.json").write_text(json.dumps({"bc": {"lr": {"log_uniform": [True, 2]}}}))
        rc, _, err = probe([*argv, "--out", ("<out>", out)], root, "ignored flags")
        finding("ignored flags", rc == 2 and flag in err, (argv, rc, err[-300:]))


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.relative_to(folder).parts[0] == "jobs"}


#: where a rerun is made to fail (a full disk): (command, module, attribute)
#: (the report's own failing reruns, slower, are tests/test_hardening.py's)
FAILURES = [("map", "stam.figures.style", "save_figure"), ("map", "stam.results", "rows_csv"),
            ("map", "stam.results", "validate")]


@examples(4)
@given(st.sampled_from(FAILURES), st.sampled_from([1, 2]))
def fuzz_failing_rerun_into_a_used_folder(failure, calls):
    """A good run into a folder, then a rerun that fails after ``calls - 1`` successful calls of the
    failing function: the folder holds the good run's files exactly, nothing of the failed one and
    no temporary (issue 27 item 5)."""
    import importlib
    from unittest import mock

    command, module, attr = failure
    with sandbox() as root:
        _write_inputs(root, "", b"")
        out = root / "out" / "used"
        argv = (["report", str(root / "in" / "rates.json"), str(root / "in" / "tune.json"), "-o", str(out)]
                if command == "report" else [*syn_map(gammas="0.1,1"), "--out", str(out)])
        rc, _, err = probe(argv, root, "failing reruns into a used folder")
        assert rc == 0, err
        before = _snapshot(out)
        target = importlib.import_module(module)
        real, left = getattr(target, attr), [calls]

        def fail_late(*args, **kwargs):
            left[0] -= 1
            if left[0] <= 0:
                raise OSError(28, "No space left on device")
            return real(*args, **kwargs)

        with mock.patch.object(target, attr, fail_late), contextlib.redirect_stderr(io.StringIO()) as err2, \
                contextlib.redirect_stdout(io.StringIO()):
            rc = main([a if a != "0.1,1" else "0.2,1" for a in argv])
        PROBES["failing reruns into a used folder"] += 1
        leftovers = [p.name for p in out.rglob(".*") if p.name != ".stam-report"]
        # failed: the good run's files exactly; not failed (the function was called fewer times): the new run's, whole
        after = _snapshot(out)
        whole = rc == 0 and sorted(after) == sorted(before) and after != before
        finding("failing reruns into a used folder", (rc != 0 and after == before or whole) and not leftovers,
                (failure, calls, rc, err2.getvalue()[-200:], leftovers,
                 sorted(k for k in set(before) | set(_snapshot(out)) if before.get(k) != _snapshot(out).get(k))[:5]))


@examples(2)
@given(st.sampled_from(["map", "report"]))
def fuzz_concurrent_runs(command):
    """Two processes writing the same command's outputs into one folder at once: both end well, the
    folder holds one whole result (the same as a single run's) and no temporary."""
    import subprocess
    import sys

    with sandbox() as root:
        _write_inputs(root, "", b"")
        out = root / "out" / "both"
        argv = (["report", str(root / "in" / "rates.json"), "-o", str(out)] if command == "report"
                else [*SYN_MAP, "--out", str(out)])
        procs = [subprocess.Popen([sys.executable, "-m", "stam", *argv], cwd=root, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
        PROBES["concurrent runs"] = PROBES.get("concurrent runs", 0) + 2
        leftovers = [p.name for p in out.rglob(".*") if p.name != ".stam-report"]
        finding("concurrent runs", all(rc == 0 for rc, _ in results) and not leftovers, (results, leftovers))
        if command == "map":
            rows = json.loads((out / "map-binary.json").read_text())["rows"]
            solo = root / "out" / "solo"
            assert main([*SYN_MAP, "--out", str(solo)]) == 0
            finding("concurrent runs", rows == json.loads((solo / "map-binary.json").read_text())["rows"], rows)
        else:
            finding("concurrent runs", "rates-binary.md" in {p.name for p in (out / "tables").iterdir()}, "tables")


# -- issue 40: the classes of its outside battery ------------------------------------------------------------
#
# Markdown links and images in labels; cache entries that are not what the toolkit wrote (FIFOs,
# links, Fortran order, headers claiming 10^12 images, temporaries of killed runs); modules planted
# in the working folder of an image decode; packages of another graph or no package at the AOT key
# path; full disks (a small tmpfs where root may mount one, else ENOSPC raised at the writes).

def _count(name: str) -> None:
    PROBES[name] = PROBES.get(name, 0) + 1


LINK_LABELS = ["[click](javascript:alert(1))", "![x](javascript:alert(2))", "[a][r] [r]: javascript:alert(3)",
               "\\[b](javascript:alert(4))", "[c]\n(javascript:alert(5))", "<javascript:alert(6)>", "[d]:javascript:7"]


def _live_link(text: str) -> bool:
    """Whether Markdown would read a ``]`` of ``text`` as closing a link, an image, a reference or
    a definition (an unescaped ``]`` before ``(``, ``[`` or ``:``), or an autolink ``<...:...>``."""
    for i, ch in enumerate(text[:-1]):
        if ch == "]" and text[i + 1] in "([:" and (len(text[:i]) - len(text[:i].rstrip("\\"))) % 2 == 0:
            return True
    return "<javascript" in text


_MARKDOWN_SEEN: list = []


@examples(8)
@given(st.one_of(st.sampled_from(LINK_LABELS), st.tuples(TEXT, TEXT).map(lambda t: f"[{t[0]}]({t[1]})"),
                 st.tuples(TEXT, TEXT).map(lambda t: f"![{t[0]}]({t[1]})")))
def fuzz_markdown_links(label):
    """A label that is a link or an image is text in ``stam table``'s Markdown and (a quarter of
    the probes: a report draws its figures, seconds each) in the report's ``tables/*.md``."""
    with sandbox() as root:
        run = root / "in" / "run"
        run.mkdir()
        (run / "summary.json").write_text(json.dumps({**valid_files()["run/summary.json"], "label": label,
                                                      "selected_test_acc_binary": 60.0, "selected_test_acc_float": 62.0}))
        rc, out, err = probe(["table", "in"], root, "markdown links")
        from stam.dnn.table import markdown_cell

        finding("markdown links", rc == 0 and markdown_cell(label) in out, (label, "not in the table", out))  # tested
        finding("markdown links", not _live_link(out), (label, out))
        _MARKDOWN_SEEN.append(label)
        if len(_MARKDOWN_SEEN) % 4 != 1:
            return
        rc, _, err = probe(["report", "in", "-o", str(root / "out" / "report")], root, "markdown links")
        tables = list((root / "out" / "report" / "tables").glob("*.md")) if rc == 0 else []
        finding("markdown links", not any(_live_link(t.read_text()) for t in tables), (label, [t.name for t in tables]))


def _small_collection(root: Path, n_train: int = 2) -> Path:
    """A small CIFAR-10-shaped PNG collection as a tar archive under ``root/in``."""
    import tarfile

    import numpy as np
    from PIL import Image

    from stam.dnn.data import CIFAR10_CLASSES

    path = root / "in" / "cifar10-jpeg.tar"
    with tarfile.open(path, "w") as tar:
        for split, n in (("train", n_train), ("test", 1)):
            for label, cls in enumerate(CIFAR10_CLASSES):
                for i in range(n):
                    buf = io.BytesIO()
                    Image.fromarray(np.full((32, 32, 3), (label * 20 + i * 3) % 256, np.uint8)).save(buf, format="PNG")
                    info = tarfile.TarInfo(f"{split}/{cls}/{i:04d}.png")
                    info.size = len(buf.getvalue())
                    tar.addfile(info, io.BytesIO(buf.getvalue()))
    return path


def _npy_header(p: Path, n: int) -> None:
    import numpy as np

    with open(p, "rb") as f:
        version = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read(f)
        data = f.read()
    buf = io.BytesIO()
    np.lib.format.write_array_header_2_0(buf, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": fortran,
                                               "shape": (n, *shape[1:])})
    p.write_bytes(buf.getvalue() + data)


def _sidecar(entry: Path, key: str, n: int) -> None:
    meta = json.loads((entry / "meta.json").read_text())
    meta["arrays"][key]["shape"][0] = n
    (entry / "meta.json").write_text(json.dumps(meta))


CACHE_DAMAGE = {
    "fifo array": lambda e, lock: ((e / "train_x.npy").unlink(), os.mkfifo(e / "train_x.npy")),
    "fifo lock": lambda e, lock: (lock.unlink(), os.mkfifo(lock)),
    "fifo sidecar": lambda e, lock: ((e / "meta.json").unlink(), os.mkfifo(e / "meta.json")),
    "link array": lambda e, lock: ((e / "test_x.npy").rename(e.parent / "moved.npy"),
                                   (e / "test_x.npy").symlink_to(e.parent / "moved.npy")),
    "link lock": lambda e, lock: (lock.unlink(), lock.symlink_to(e.parent / "elsewhere")),
    "fortran order": lambda e, lock: __import__("numpy").save(
        e / "train_x.npy", __import__("numpy").asfortranarray(__import__("numpy").load(e / "train_x.npy"))),
    "header of 10^12 images": lambda e, lock: (_npy_header(e / "train_x.npy", 10**12), _sidecar(e, "train_x", 10**12)),
    "header of 10^12 labels": lambda e, lock: _npy_header(e / "train_y.npy", 10**12),
    "a folder as an array": lambda e, lock: ((e / "test_y.npy").unlink(), (e / "test_y.npy").mkdir()),
    "killed run's temporaries": lambda e, lock: [(e / n).write_bytes(b"\x93NUMPY partial")
                                                 for n in (".train_x.npy.k1ll3d.npy", ".meta.json.k1ll3d.tmp")],
}


@examples(10)
@given(st.sampled_from(sorted(CACHE_DAMAGE)))
def fuzz_cache_entries(damage):
    """An image-cache entry changed after a load: the next load never blocks, never trusts it (the
    arrays are the decoded ones), rebuilds it (the load after is from the cache) and leaves no
    temporary in the entry."""
    import signal

    import numpy as np

    from stam.dnn import data as D
    from stam.dnn import imagefolder as I

    with sandbox() as root:
        path = _small_collection(root)
        cache = root / "out" / "cache"
        first = I.read(path, D.CIFAR_LAYOUTS["cifar10"].expect, cache_dir=cache)
        entry = cache / "imagefolder" / first.source["sha256"]
        CACHE_DAMAGE[damage](entry, cache / "imagefolder" / f"{first.source['sha256']}.lock")

        def hung(*_):
            pytest.fail(f"{damage}: the load blocked")

        old = signal.signal(signal.SIGALRM, hung)
        signal.alarm(60)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                again = I.read(path, D.CIFAR_LAYOUTS["cifar10"].expect, cache_dir=cache)
                third = I.read(path, D.CIFAR_LAYOUTS["cifar10"].expect, cache_dir=cache)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        _count("cache entries")
        same = all(np.array_equal(getattr(again, k), getattr(first, k)) for k in I.ARRAYS)
        layout = again.train_x.flags.c_contiguous
        entry_ok = damage in ("fifo lock", "link lock", "killed run's temporaries")  # the arrays are still right
        finding("cache entries", same and layout and again.cached == entry_ok and third.cached and not caught,
                (damage, same, layout, again.cached, third.cached, [str(w.message) for w in caught]))
        leftovers = [p.name for p in entry.glob(".*")] if entry.is_dir() else []
        finding("cache entries", not leftovers, (damage, leftovers))


PLANTED = ("numpy", "pickle", "PIL", "stam", "sitecustomize", "usercustomize", "encodings", "io")


@examples(3)
@given(st.sets(st.sampled_from(PLANTED), min_size=1, max_size=4))
def fuzz_planted_modules(names):
    """Modules planted in the working folder (and on ``PYTHONPATH``) of an image decode large
    enough for worker processes run in none of them; the result is the serial decode's."""
    import numpy as np

    from stam.dnn import data as D
    from stam.dnn import imagefolder as I

    with sandbox() as root:
        path = _small_collection(root, n_train=3)
        marker = root / "out" / "marker"
        for name in names:
            (root / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n")
        serial = I.read(path, D.CIFAR_LAYOUTS["cifar10"].expect, cache_dir=None, workers=1)
        saved, old_path = I.PARALLEL_MIN, os.environ.get("PYTHONPATH")
        I.PARALLEL_MIN, os.environ["PYTHONPATH"] = 8, str(root)
        try:
            parallel = I.read(path, D.CIFAR_LAYOUTS["cifar10"].expect, cache_dir=root / "out" / "c", workers=2)
        finally:
            I.PARALLEL_MIN = saved
            if old_path is None:
                os.environ.pop("PYTHONPATH")
            else:
                os.environ["PYTHONPATH"] = old_path
        _count("planted modules")
        finding("planted modules", not marker.exists(), (names, marker.exists() and marker.read_text()))
        finding("planted modules", np.array_equal(parallel.train_x, serial.train_x), names)


def _zip(entries: dict) -> bytes:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buf.getvalue()


FOREIGN_PACKAGES = {
    "another key": lambda p: p.write_bytes(_zip({"pkg/data/version": "1", "pkg/stam/key": "update-another"})),
    "no key": lambda p: p.write_bytes(_zip({"pkg/data/version": "1"})),
    "a huge key": lambda p: p.write_bytes(_zip({"pkg/stam/key": "k" * 100_000})),
    "empty": lambda p: p.write_bytes(b""),
    "not a zip": lambda p: p.write_bytes(b"\x7fELF not a package"),
    "fifo": lambda p: os.mkfifo(p),
    "link": lambda p: p.symlink_to(p.parent / "missing.pt2"),
    "folder": lambda p: p.mkdir(),
}


@examples(8)
@given(st.sampled_from(sorted(FOREIGN_PACKAGES)))
def fuzz_foreign_packages(kind):
    """Whatever is at the AOT key path but the package of that key is never loaded: the build is
    tried (here failing at once, so that no compiler runs) and the in-process fallback taken, with
    one warning each, never an exception or a wait."""
    import signal

    import torch

    from stam import compiling

    with sandbox() as root:
        folder = root / "out" / "cache" / compiling.AOT_FOLDER
        folder.mkdir(parents=True)
        FOREIGN_PACKAGES[kind](folder / "update-this.pt2")
        calls, real = [], (torch.export.export, compiling.compiled_or_eager, os.environ.get("STAM_CACHE_DIR"))

        def no_export(*a, **k):
            calls.append("build")
            raise RuntimeError("no compiler in the fuzzer")

        torch.export.export = no_export
        compiling.compiled_or_eager = lambda fn, what, **kw: calls.append("fallback") or fn
        os.environ["STAM_CACHE_DIR"] = str(root / "out" / "cache")
        old = signal.signal(signal.SIGALRM, lambda *_: pytest.fail(f"{kind}: blocked"))
        signal.alarm(60)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fn = lambda x: x  # noqa: E731
                got = compiling.ahead_of_time(fn, (torch.zeros(2),), "update-this", "fuzz")
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
            torch.export.export, compiling.compiled_or_eager = real[0], real[1]
            os.environ["STAM_CACHE_DIR"] = real[2] if real[2] is not None else "off"
        _count("foreign packages")
        finding("foreign packages", got is fn and calls == ["build", "fallback"], (kind, calls))
        finding("foreign packages", all("\n" not in str(w.message) for w in caught) and caught, (kind, caught))


@contextlib.contextmanager
def _full_disk(folder: Path, size_kb: int):
    """``folder`` on a tmpfs of ``size_kb`` KiB where this process may mount one (root in a
    container that allows it), else with ``ENOSPC`` raised by every write of a file below it
    beyond ``size_kb`` KiB in all (``Path.write_text``/``write_bytes``; what tmpfs says)."""
    import errno
    import pathlib
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    try:
        mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs",
                                                        str(folder)], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):  # no mount command
        mounted = False
    if mounted:
        try:
            yield "tmpfs"
        finally:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)
        return
    used = [0]
    real = {name: getattr(pathlib.Path, name) for name in ("write_text", "write_bytes")}

    def limited(name):
        def write(self, data, *a, **k):
            if Path(self).absolute().is_relative_to(folder.absolute()):
                used[0] += len(data)
                if used[0] > size_kb * 1024:
                    raise OSError(errno.ENOSPC, "No space left on device")
            return real[name](self, data, *a, **k)
        return write

    for name in real:
        setattr(pathlib.Path, name, limited(name))
    try:
        yield "ENOSPC"
    finally:
        for name, f in real.items():
            setattr(pathlib.Path, name, f)


FULL_DISK_COMMANDS = {
    "synthetic run": lambda out: ["synthetic", "run", "--problem", "binary", "--quick", "--no-progress", "--out", out],
    "report": lambda out: ["report", "in", "-o", out],
    "paper-check": lambda out: ["paper-check", "--brief", "--out", f"{out}/check.json"],
}


@examples(4)
@given(st.sampled_from(sorted(FULL_DISK_COMMANDS)), st.sampled_from([4, 16, 64, 512]))
def fuzz_full_disks(command, size_kb):
    """A command writing onto a full disk: exit 0 (it fitted) or 1 with one line ``stam: error:``
    naming a path in the output folder, no traceback, no temporary left, and the output folder
    holding whole files only (nothing half-written: every JSON there parses)."""
    with sandbox() as root:
        _write_inputs(root, "", b"")
        out = root / "out" / "full"
        with _full_disk(out, size_kb) as how:
            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                try:
                    rc = main(FULL_DISK_COMMANDS[command](str(out)))
                except SystemExit as exc:
                    rc = exc.code
            err = [line for line in stderr.getvalue().splitlines() if line.strip()]
            files = [p for p in out.rglob("*") if p.is_file()]
            leftovers = [str(p.relative_to(out)) for p in out.rglob(".*")]
            halves = [str(p.relative_to(out)) for p in files if p.suffix == ".json" and not _parses(p)]
        _count("full disks")
        OUTCOMES[("full disks", rc)] = OUTCOMES.get(("full disks", rc), 0) + 1
        ok = rc == 0 or (rc == 1 and len(err) == 1 and err[0].startswith("stam: error: ") and str(out) in err[0])
        finding("full disks", ok and not leftovers and not halves, (command, size_kb, how, rc, err[-3:], leftovers, halves))


def _parses(p: Path) -> bool:
    try:
        json.loads(p.read_text())
        return True
    except ValueError:
        return False


CASES = {  # test -> (the hypothesis test, its probe name, the CI examples)
    "stepsize": (fuzz_stepsize, "stepsize", 60),
    "paper-check": (fuzz_paper_check, "paper-check", 4),
    "paper-check-store": (fuzz_paper_check_store, "paper-check store", 12),
    "pep": (fuzz_pep, "pep", 6),
    "synthetic-run": (fuzz_synthetic_run, "synthetic run", 6),
    "synthetic-compare": (fuzz_synthetic_compare, "synthetic compare", 4),
    "synthetic-sweep": (fuzz_synthetic_sweep, "synthetic sweep", 4),
    "malformed-files": (fuzz_malformed_result_files, "report/plot on malformed files", 30),
    "report": (fuzz_report, "report", 6),
    "plot": (fuzz_plot, "plot", 8),
    "map": (fuzz_map, "map", 6),
    "tune": (fuzz_tune, "tune", 4),
    "demo": (fuzz_demo, "demo", 4),
    "train": (fuzz_train, "train", 12),
    "train-resume-checkpoint": (fuzz_train_resume_checkpoint, "train --resume on a changed checkpoint", 16),
    "table": (fuzz_table, "table on malformed run files", 16),
    "extremes": (fuzz_extremes, "huge and extreme numbers", 8),
    "impossible-file-values": (fuzz_impossible_file_values, "impossible file values", 16),
    "ignored-flags": (fuzz_ignored_flags, "ignored flags", 6),
    "failing-reruns": (fuzz_failing_rerun_into_a_used_folder, "failing reruns into a used folder", 4),
    "concurrent-runs": (fuzz_concurrent_runs, "concurrent runs", 2),
    "markdown-links": (fuzz_markdown_links, "markdown links", 8),
    "cache-entries": (fuzz_cache_entries, "cache entries", 10),
    "planted-modules": (fuzz_planted_modules, "planted modules", 3),
    "foreign-packages": (fuzz_foreign_packages, "foreign packages", 8),
    "full-disks": (fuzz_full_disks, "full disks", 4),
    "repeated-rows": (fuzz_repeated_rows_and_overrides, "repeated rows and overrides", 8),
    "space-file-factors": (fuzz_space_file_factors, "space-file factors", 6),
}
#: tests whose strategy has only this many distinct examples (hypothesis stops there)
DISTINCT = {"demo": 4, "cache-entries": len(CACHE_DAMAGE), "foreign-packages": len(FOREIGN_PACKAGES),
            "full-disks": len(FULL_DISK_COMMANDS) * 4}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fuzz(case):
    """Run one command's examples, then check that they ran (a strategy that filtered everything
    away would otherwise pass without probing anything) and print their number."""
    fuzz, name, n = CASES[case]
    PROBES.pop(name, None)
    fuzz()
    report_count(name, min((LONG or n) // 2, DISTINCT.get(case, 10**9)))


def test_probe_counts_are_reported(capsys):
    """The probes of this process (the tests above that ran in it) are counted; at least this one."""
    with sandbox() as root:
        probe(["stepsize", "--quadratic-coupling", "1e308", "--gamma", "0.1", "--beta", "10"], root, "count-check")
    print("fuzz probes in this process: " + ", ".join(f"{k}: {v}" for k, v in sorted(PROBES.items())))
    if COLLECT:
        print("fuzz findings in this process: " + (", ".join(f"{k}: {len(v)}" for k, v in sorted(FINDINGS.items())) or "none"))
        for k, v in sorted(FINDINGS.items()):
            for line in v:
                print(f"  {k}: {line}")
    assert PROBES["count-check"] == 1
