"""One name per concept (issue 38, point 4): every experiment the command line lists has one library entry,
``run(params)``, in the module its parser declares (``parser.set_defaults(run=stam.registry.experiment(MODULE))``),
taking exactly one argument annotated with its :class:`stam.params.Params` subclass and returning a result (not an
exit code); the command's handler reaches the library through that entry.  The commands are found in the parser
tree (``test_params.WITH_PARAMS``: every command whose flags come from a parameters object), not listed here."""

from __future__ import annotations

import importlib
import inspect
import typing

import pytest

from stam.cli import main
from stam.params import Params
from test_params import WITH_PARAMS


def _classes(parser) -> tuple:
    """The parameters of a command: its own and those of the experiments its flags switch to (``params_modes``)."""
    return (parser.get_default("params_class"), *(parser.get_default("params_modes") or {}).values())


def _module(cmd):
    run = WITH_PARAMS[cmd].get_default("run")
    assert run is not None and hasattr(run, "module"), \
        f"stam {' '.join(cmd)}: its parser declares no run (set_defaults(run=stam.registry.experiment(MODULE)))"
    return importlib.import_module(run.module)


def test_the_experiments_are_found():
    modules = {_module(cmd).__name__ for cmd in WITH_PARAMS}
    assert {"stam.theory.papercheck.audit", "stam.theory.symbolic.stepsize", "stam.theory.pep_cli", "stam.synthetic.commands",
            "stam.dnn.train", "stam.dnn.tune", "stam.figures.map_experiment"} <= modules


@pytest.mark.parametrize("cmd", sorted(WITH_PARAMS), ids=" ".join)
def test_an_experiment_has_one_run_taking_its_parameters(cmd):
    module = _module(cmd)
    entry = module.run
    assert inspect.isfunction(entry)
    params = list(inspect.signature(entry).parameters.values())
    assert len(params) == 1, f"{module.__name__}.run takes {[p.name for p in params]}, not one parameters object"
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and params[0].default is inspect.Parameter.empty
    mine = _classes(WITH_PARAMS[cmd])
    hints = typing.get_type_hints(entry, localns={c.__name__: c for c in mine})  # (names imported for type checking)
    annotated = typing.get_args(hints[params[0].name]) or (hints[params[0].name],)
    assert all(isinstance(c, type) and issubclass(c, Params) for c in annotated), annotated
    assert set(mine) <= set(annotated), f"{module.__name__}.run is annotated {annotated}, the command's are {mine}"
    returns = hints.get("return")
    assert returns is not None and returns is not int, f"{module.__name__}.run returns {returns}, not a result"


class _Ran(Exception):
    pass


def _argv(cmd, parser, mode=None):
    required = [s for a in parser._actions if a.required for s in (a.option_strings[0], "x")]
    return [*cmd, *required, *([f"--{mode}"] if mode else [])]


@pytest.mark.parametrize("case", [(cmd, mode) for cmd in sorted(WITH_PARAMS)
                                  for mode in (None, *(WITH_PARAMS[cmd].get_default("params_modes") or {}))],
                         ids=lambda case: " ".join(case[0]) + (f" --{case[1]}" if case[1] else ""))
def test_the_command_calls_its_experiments_run_with_its_parameters(case, monkeypatch, tmp_path):
    cmd, mode = case
    parser = WITH_PARAMS[cmd]
    module = _module(cmd)

    def ran(params):
        raise _Ran(params)

    monkeypatch.setattr(module, "run", ran)
    monkeypatch.setenv("STAM_TRACEBACK", "1")  # let the exception through main
    monkeypatch.chdir(tmp_path)
    with pytest.raises(_Ran) as got:
        main(_argv(cmd, parser, mode))
    want = (parser.get_default("params_modes") or {})[mode] if mode else parser.get_default("params_class")
    assert type(got.value.args[0]) is want
