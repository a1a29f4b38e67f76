"""An experiment's parameters as one typed object (stam.params, issue 25 point 1): its flags, its
defaults and its job specification come from one frozen dataclass; the commands built on one are
found in stam's parser tree and held to it."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from stam.cli import build_parser
from stam.errors import positive_int
from stam.params import Params, add_arguments, arg


@dataclasses.dataclass(frozen=True)
class Toy(Params):
    size: int = arg("--size", type=positive_int, default=3, help="how big (default 3)", job=True, old=("--n",))
    names: dict = arg("--set", action="append", default_factory=dict, cli_default=[], metavar="K=V",
                      convert=lambda items: dict(s.split("=") for s in items), job=True)
    progress: bool = arg("--no-progress", action="store_false", default=True, help="no bars")
    out: str | None = arg("-o", "--out", default=None, help="where")
    library_only: int = 7


def _parser(cls=Toy):
    return add_arguments(argparse.ArgumentParser(prog="toy"), cls)


def test_flags_defaults_and_the_object_come_from_the_fields():
    p = _parser()
    assert Toy.from_args(p.parse_args([])) == Toy()  # the command line's defaults are the library's
    got = Toy.from_args(p.parse_args(["--size", "5", "--set", "a=1", "--set", "b=2", "--no-progress", "-o", "x"]))
    assert got == Toy(size=5, names={"a": "1", "b": "2"}, progress=False, out="x")
    assert Toy.from_args(p.parse_args(["--n", "4"])).size == 4  # the old spelling still parses ...
    text = p.format_help()
    assert "--n" not in text.replace("--no-progress", "") and "how big (default 3)" in text  # ... hidden from the help
    with pytest.raises(SystemExit):
        p.parse_args(["--size", "0"])  # the flag's type checks it
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.size = 1


def test_the_job_specification_is_the_fields_marked_job():
    assert Toy(size=2, names={"k": "v"}, out="elsewhere").spec() == {"size": 2, "names": {"k": "v"}}
    assert Toy.from_args(_parser().parse_args([]), library_only=9).library_only == 9


def _commands(parser=None, path=()):
    parser = parser or build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    found = {path: parser} if not subs and path else {}
    for sub in subs:
        for name, child in sub.choices.items():
            found.update(_commands(child, path + (name,)))
    return found


#: the commands whose flags come from one parameters object
WITH_PARAMS = {cmd: p for cmd, p in _commands().items() if p.get_default("params_class") is not None}


def test_the_experiment_commands_declare_their_parameters():
    assert {("train",), ("tune",), ("map",), ("synthetic", "run"), ("synthetic", "compare"), ("synthetic", "sweep")} \
        <= set(WITH_PARAMS)


@pytest.mark.parametrize("cmd", sorted(WITH_PARAMS), ids=" ".join)
def test_a_commands_flags_are_its_parameters_and_agree_on_defaults(cmd):
    parser = WITH_PARAMS[cmd]
    cls = parser.get_default("params_class")
    names = {f.name for f in dataclasses.fields(cls)}
    flags = {a.dest for a in parser._actions if a.option_strings and a.dest != "help"}
    assert flags <= names, f"stam {' '.join(cmd)}: flags outside {cls.__name__}: {sorted(flags - names)}"
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    required = {a.dest: "x" for a in parser._actions if a.required}  # (text flags: --problem)
    argv = [s for a in parser._actions if a.required for s in (a.option_strings[0], "x")]
    assert cls.from_args(parser.parse_args(argv)) == cls(**required)  # by default the command runs the library's default
