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


@dataclasses.dataclass(frozen=True)
class Grouped(Params):
    first: int | None = arg("--first", type=positive_int, default=None, group="the first group", help="one")
    second: int | None = arg("--second", type=positive_int, default=None, group="the first group", help="two")
    alone: bool = arg("--alone", action="store_true", default=False, help="ungrouped")


def test_a_fields_group_lists_its_flag_under_the_groups_title():
    p = _parser(Grouped)
    titled = {g.title: [a.dest for a in g._group_actions] for g in p._action_groups}
    assert titled["the first group"] == ["first", "second"] and "alone" not in titled["the first group"]
    assert "the first group:" in p.format_help()
    assert Grouped.from_args(p.parse_args(["--second", "2", "--alone"])) == Grouped(second=2, alone=True)


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
    assert {("train",), ("tune",), ("map",), ("synthetic", "run"), ("synthetic", "compare"), ("synthetic", "sweep"),
            ("paper-check",), ("stepsize",), ("pep",)} <= set(WITH_PARAMS)


@pytest.mark.parametrize("cmd", sorted(WITH_PARAMS), ids=" ".join)
def test_a_commands_flags_are_its_parameters_and_agree_on_defaults(cmd):
    parser = WITH_PARAMS[cmd]
    cls = parser.get_default("params_class")
    names = {f.name for f in dataclasses.fields(cls)}
    # a flag that runs another experiment of the command (``stam pep --region``) and that experiment's parameters
    for mode, other in (parser.get_default("params_modes") or {}).items():
        names |= {mode} | {f.name for f in dataclasses.fields(other)}
    flags = {a.dest for a in parser._actions if a.option_strings and a.dest != "help"}
    assert flags <= names, f"stam {' '.join(cmd)}: flags outside {cls.__name__}: {sorted(flags - names)}"
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    required = {a.dest: "x" for a in parser._actions if a.required}  # (text flags: --problem)
    argv = [s for a in parser._actions if a.required for s in (a.option_strings[0], "x")]
    assert cls.from_args(parser.parse_args(argv)) == cls(**required)  # by default the command runs the library's default


# --- the sweeps' job specifications: each cell's spec is {**params.spec(), the cell} -------------------------------
class _Captured(Exception):
    def __init__(self, specs):
        self.specs = [dict(s) for s in specs]


def _capture(fn, specs, *args, **kw):
    raise _Captured(specs)


def _other(value, f: dataclasses.Field):
    """A different value of the field ``f`` than ``value`` (one a run accepts)."""
    m = f.metadata
    choices = m["argparse"].get("choices")
    if choices:
        convert = m["convert"] or (lambda v: v)
        return next(convert(c) for c in choices if convert(c) != value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 2
    if isinstance(value, str):
        return value + "-other"
    if isinstance(value, (tuple, list)):
        return type(value)([*value[:-1], _other(value[-1], f)])
    raise AssertionError(f"no other value for {f.name} = {value!r}")


def _region_cells(params, monkeypatch):
    """The job specs of ``stam pep --region`` with ``params`` (its run, stam.theory.pep_cli.run_region)."""
    import stam.jobs
    from stam.theory.pep_cli import run_region

    monkeypatch.setattr(stam.jobs, "run_jobs", _capture)
    with pytest.raises(_Captured) as got:
        run_region(params)
    return got.value.specs


def _map_cells(params, monkeypatch):
    """The job specs of ``stam map --dataset`` with ``params`` (its run, stam.figures.map_experiment.make_map; the data
    set is not loaded)."""
    from stam.dnn import sweep
    from stam.figures.map_experiment import make_map

    monkeypatch.setattr(sweep, "check_task", lambda task: None)
    monkeypatch.setattr(sweep, "train_size", lambda task: 100)
    monkeypatch.setattr(sweep, "work_cost", lambda task: 1.0)  # (these two read the data set's image shape)
    monkeypatch.setattr(sweep, "check_memory", lambda *a: None)
    monkeypatch.setattr(sweep, "run_jobs", _capture)
    with pytest.raises(_Captured) as got:
        make_map(params)
    return got.value.specs


def _sweep_cells(params, monkeypatch, capsys):
    """The job specs of ``stam synthetic sweep`` with ``params`` (its run, sweep_command)."""
    import stam.jobs
    from stam.synthetic.commands import sweep_command

    monkeypatch.setattr(stam.jobs, "run_jobs", _capture)
    with pytest.raises(_Captured) as got:
        sweep_command(params)
    capsys.readouterr()
    return got.value.specs


def _experiments(tmp_path):
    """(parameters, how a run resolves them, how many cells, the non-job fields tried) of each sweep."""
    from stam.figures.map_experiment import MapParams
    from stam.synthetic.params import SweepParams
    from stam.theory.worstcase import lyapunov
    from stam.theory.params import RegionParams

    return {
        "region": (RegionParams(lams=(1.0, 4.0), betas=(100.0,), out=str(tmp_path / "r.json")), lyapunov.resolved, 2,
                   dict(workers=2, out=str(tmp_path / "other.json"), force=True, scheduler="tcp://127.0.0.1:8786")),
        "map": (MapParams(dataset="digits", gammas=[0.01, 1.0], lams=[0.5], betas=[20.0], n_seeds=2, out=str(tmp_path / "m")),
                MapParams.network, 1, dict(workers=2, out=str(tmp_path / "m2"), progress=False, force=True)),
        "sweep": (SweepParams(problems=["binary"], seeds=[0, 1], gamma_fractions=[0.5], out=str(tmp_path / "s")),
                  lambda p: p, 2, dict(workers=1, out=str(tmp_path / "s2"), progress=False, scheduler="tcp://127.0.0.1:8786")),
    }


@pytest.mark.parametrize("name", ["region", "map", "sweep"])
def test_each_cells_job_spec_is_the_parameters_spec_and_the_cell(name, tmp_path, monkeypatch, capsys):
    """Every job of a sweep is ``{**params.spec(), <the cell>}`` (of the parameters as the run resolves
    them): a field marked ``job`` changes every cell's spec, a field that is not (--workers, --out, ...)
    changes none, so a rerun with other such flags reuses the store."""
    params, resolve, n, not_job = _experiments(tmp_path)[name]
    cells = {"region": _region_cells, "map": _map_cells,
             "sweep": lambda p, m: _sweep_cells(p, m, capsys)}[name]
    first = cells(params, monkeypatch)
    base = resolve(params).spec()
    assert len(first) == n and all(spec.items() >= base.items() for spec in first)
    jobs = [f for f in dataclasses.fields(params) if f.metadata.get("job")]
    assert len(jobs) >= 3
    for f in jobs:
        changed = dataclasses.replace(params, **{f.name: _other(getattr(resolve(params), f.name), f)})
        again = cells(changed, monkeypatch)
        assert all(a != b for a, b in zip(again, first)), f"{name}: {f.name} (job=True) left a cell's spec unchanged"
    for field, value in not_job.items():
        assert not dataclasses.fields(params)[[g.name for g in dataclasses.fields(params)].index(field)].metadata["job"]
        assert cells(dataclasses.replace(params, **{field: value}), monkeypatch) == first, f"{name}: {field} changed the specs"


def test_the_regions_flags_come_from_its_parameters():
    """`stam pep --region` declares its parameters (stam.theory.params.RegionParams): every flagged field is a
    flag of `stam pep`, spelled, typed, defaulted and explained by the field; the parsed command line is the
    library's default object; the classes of F are the PEP's."""
    from stam.params import flagged
    from stam.theory.params import REGION_ONLY, RegionParams
    from stam.theory.params import METHOD_F_CLASSES

    parser = _commands()[("pep",)]
    actions = {a.dest: a for a in parser._actions}
    text = parser.format_help()
    for f in flagged(RegionParams):
        a = actions[f.name]
        assert tuple(a.option_strings) == f.metadata["flags"] and a.help == f.metadata["help"]
        assert all(flag in text for flag in f.metadata["flags"]) and a.type is f.metadata["argparse"].get("type")
    assert {f.name for f in flagged(RegionParams)} >= set(REGION_ONLY)
    args = parser.parse_args(["--region", "-o", "x.json"])
    assert RegionParams.from_args(args) == RegionParams(out="x.json")
    got = RegionParams.from_args(parser.parse_args(["--region", "-o", "x.json", "--N", "3", "--b", "2", "--solver", "scs",
                                                    "--F", "convex", "--lams", "1,2", "--workers", "1"]))
    assert (got.sampling, got.solver, got.f_class, got.lams, got.workers) == ((3, 2), "scs", "convex", [1.0, 2.0], 1)
    assert tuple(actions["f_class"].choices) == METHOD_F_CLASSES  # --F offers the PEP's classes and F = 0 (--algo)


@pytest.mark.parametrize("argv, why", [
    (["tune", "--dataset", "digits"], "--dataset digits comes with scikit-learn"),
    (["tune"], "--dataset digits comes with scikit-learn"),
    (["train", "--dataset", "digits", "--model", "mlp"], "--dataset digits comes with scikit-learn"),
    (["map"], "--dataset digits comes with scikit-learn"),
    (["map", "--problem", "binary"], "the synthetic map (--problem) reads no data"),
])
def test_data_dir_given_where_no_folder_is_read_is_refused(tmp_path, capsys, argv, why):
    """--data-dir with digits or a synthetic map was accepted and ignored (issue 40 item 6): one line, nothing written;
    not given, the field is still the library's default (the jobs' specs unchanged)."""
    from stam.cli import main
    from stam.dnn.params import DEFAULT_DATA_DIR, TuneParams

    out = tmp_path / "o"
    assert main([*argv, "--data-dir", str(tmp_path / "cifar"), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"stam: error: --data-dir {tmp_path / 'cifar'} is for ") and why in err and err.count("\n") == 1
    assert not out.exists()
    parser = build_parser()
    assert TuneParams.from_args(parser.parse_args(["tune"])).data_dir == DEFAULT_DATA_DIR == TuneParams().data_dir
