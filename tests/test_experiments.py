"""One name per concept, every hop visible (issues 38 and 61): every experiment the command line lists has one
library entry, a function with a telling name (never ``run``, no two alike) taking exactly one argument annotated
with its :class:`stam.params.Params` subclass and returning a result (not an exit code).  The command's handler (the
parser's ``func``) imports that entry where it uses it (a function-local ``from MODULE import ENTRY``) or calls it in
its own module, and calls it with the parameters: grep and static tools follow the hop, and ``stam --help`` imports
none of it.  The entries are found by reading the handlers' source (:func:`reached`), as a reader would, not listed
here; the commands are found in the parser tree (``test_params.WITH_PARAMS``: every command whose flags come from a
parameters object)."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import textwrap
import typing

import pytest

from stam.cli import main
from stam.params import Params
from test_params import WITH_PARAMS


def _classes(parser) -> tuple:
    """The parameters of a command: its own and those of the experiments its flags switch to (``params_modes``)."""
    return (parser.get_default("params_class"), *(parser.get_default("params_modes") or {}).values())


def reached(handler) -> dict[str, object]:
    """The functions a handler reaches in its source (``"module.name"`` -> function): those its function-local
    ``from stam... import NAME`` statements name, and those of its own module it names, the module's private helpers
    followed in turn (``stam pep``'s handler reaches ``run_region`` through ``_pep`` and ``_region``)."""
    found, seen, todo = {}, set(), [handler]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        module = sys.modules[f.__module__]
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(f)))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stam"):
                source = importlib.import_module(node.module)
                for a in node.names:
                    obj = getattr(source, a.name, None)
                    if inspect.isfunction(obj):
                        found[f"{node.module}.{a.name}"] = obj
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                obj = vars(module).get(node.id)
                if inspect.isfunction(obj) and obj.__module__ == module.__name__:
                    found[f"{module.__name__}.{node.id}"] = obj
                    if node.id.startswith("_"):
                        todo.append(obj)
    return found


def _annotated(entry, localns: dict) -> tuple:
    """The classes ``entry``'s one parameter is annotated with (``()`` where it takes another number of
    parameters or an annotation does not resolve)."""
    params = list(inspect.signature(entry).parameters.values())
    if len(params) != 1:
        return ()
    try:
        hints = typing.get_type_hints(entry, localns=localns)  # (names imported for type checking)
    except NameError:
        return ()
    hint = hints.get(params[0].name)
    return (typing.get_args(hint) or (hint,)) if hint is not None else ()


def entry_of(cmd, cls) -> object:
    """The one public function the handler of ``stam CMD`` reaches whose one parameter is annotated with ``cls``."""
    parser = WITH_PARAMS[cmd]
    localns = {c.__name__: c for c in _classes(parser)}
    found = {name: f for name, f in reached(parser.get_default("func")).items()
             if not f.__name__.startswith("_") and cls in _annotated(f, localns)}
    assert len(found) == 1, f"stam {' '.join(cmd)}: its handler reaches {sorted(found) or 'no'} entry for {cls.__name__}"
    return next(iter(found.values()))


def _entries() -> dict:
    """(command, parameters' class) -> its entry, every command and mode of the parser tree."""
    return {(cmd, cls): entry_of(cmd, cls) for cmd in sorted(WITH_PARAMS) for cls in _classes(WITH_PARAMS[cmd])}


def test_the_reader_follows_function_local_imports_and_own_helpers():
    from stam.theory import cli, pep_cli

    assert reached(cli._stepsize)["stam.theory.symbolic.stepsize.stepsize"].__name__ == "stepsize"
    got = reached(pep_cli._handler)
    assert {"stam.theory.pep_cli._pep", "stam.theory.pep_cli._region", "stam.theory.pep_cli.run_region",
            "stam.theory.pep_cli.run_pep", "stam.theory.pep_cli.run_certify"} <= set(got)

    def not_a_handler(args):
        return args

    assert reached(not_a_handler) == {}


def test_the_experiments_are_found():
    entries = _entries()
    modules = {e.__module__ for e in entries.values()}
    assert {"stam.theory.papercheck.audit", "stam.theory.symbolic.stepsize", "stam.theory.pep_cli",
            "stam.synthetic.commands", "stam.dnn.train", "stam.dnn.tune", "stam.figures.map_experiment"} <= modules


def test_no_parser_names_its_experiment_by_string():
    """The hop from a command to its experiment is an import in the handler, never a ``run`` default naming a
    module (``set_defaults(run=...)``)."""
    assert [cmd for cmd, p in WITH_PARAMS.items() if p.get_default("run") is not None] == []


def test_each_entry_has_a_telling_name_of_its_own():
    entries = set(_entries().values())
    names = sorted(e.__name__ for e in entries)
    assert "run" not in names
    assert len(set(names)) == len(entries), names


@pytest.mark.parametrize("cmd", sorted(WITH_PARAMS), ids=" ".join)
def test_an_experiment_has_one_entry_taking_its_parameters(cmd):
    mine = _classes(WITH_PARAMS[cmd])
    for cls in mine:
        entry = entry_of(cmd, cls)
        name = f"{entry.__module__}.{entry.__name__}"
        assert inspect.isfunction(entry)
        params = list(inspect.signature(entry).parameters.values())
        assert len(params) == 1, f"{name} takes {[p.name for p in params]}, not one parameters object"
        assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and params[0].default is inspect.Parameter.empty
        hints = typing.get_type_hints(entry, localns={c.__name__: c for c in mine})
        annotated = _annotated(entry, {c.__name__: c for c in mine})
        assert all(isinstance(c, type) and issubclass(c, Params) for c in annotated), annotated
        assert cls in annotated, f"{name} is annotated {annotated}, the command's are {mine}"
        returns = hints.get("return")
        assert returns is not None and returns is not int, f"{name} returns {returns}, not a result"


class _Ran(Exception):
    pass


def _argv(cmd, parser, mode=None):
    required = [s for a in parser._actions if a.required for s in (a.option_strings[0], "x")]
    return [*cmd, *required, *([f"--{mode}"] if mode else [])]


@pytest.mark.parametrize("case", [(cmd, mode) for cmd in sorted(WITH_PARAMS)
                                  for mode in (None, *(WITH_PARAMS[cmd].get_default("params_modes") or {}))],
                         ids=lambda case: " ".join(case[0]) + (f" --{case[1]}" if case[1] else ""))
def test_the_command_calls_its_experiments_entry_with_its_parameters(case, monkeypatch, tmp_path):
    cmd, mode = case
    parser = WITH_PARAMS[cmd]
    want = (parser.get_default("params_modes") or {})[mode] if mode else parser.get_default("params_class")
    entry = entry_of(cmd, want)

    def ran(params):
        raise _Ran(params)

    monkeypatch.setattr(sys.modules[entry.__module__], entry.__name__, ran)
    monkeypatch.setenv("STAM_TRACEBACK", "1")  # let the exception through main
    monkeypatch.chdir(tmp_path)
    with pytest.raises(_Ran) as got:
        main(_argv(cmd, parser, mode))
    assert type(got.value.args[0]) is want
