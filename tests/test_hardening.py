"""Issue 12, item by item: output locations checked before any work, extreme finite numbers,
malformed result files, flags that are not honoured, unbounded work, hostile names and labels in
the report, and the minor ones (``--json --brief``, a closed pipe).  The random probing of the
same contract is tests/test_fuzz.py."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from stam.cli import main
from stam.errors import UsageError
from stam.io import check_out_dir, check_out_file, slug
from json_edits import set_at


def run(argv, capsys):
    """``stam argv`` in-process: (exit status, stdout, stderr)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a numpy warning reaching the user fails the test
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as exc:
            rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc, err, *needles):
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("stam"), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# -- 1. output locations ------------------------------------------------------------------------


@pytest.fixture
def places(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "dir").mkdir()
    return tmp_path


def test_check_out_dir_and_file_refuse_each_wrong_kind_of_path(places, monkeypatch):
    f, d = places / "file.txt", places / "dir"
    with pytest.raises(UsageError, match="is a file; give a folder"):
        check_out_dir(f)
    with pytest.raises(UsageError, match="file.txt is a file, so no folder can be made under it"):
        check_out_dir(f / "a" / "b")
    with pytest.raises(UsageError, match="is a folder; give a file name"):
        check_out_file(d)
    with pytest.raises(UsageError, match="its folder"):
        check_out_file(f / "x.json")
    with pytest.raises(UsageError, match="empty"):
        check_out_dir("")
    assert check_out_dir(places / "new" / "deeper") == places / "new" / "deeper"
    assert check_out_file(d / "x.json") == d / "x.json"
    # not writable: os.access says so (as root it never does; the probe file is then the check)
    monkeypatch.setattr("os.access", lambda *a, **k: False)
    with pytest.raises(UsageError, match="not writable"):
        check_out_dir(places / "new")
    monkeypatch.undo()
    assert sorted(p.name for p in places.iterdir()) == ["dir", "file.txt"]  # nothing created, no probe left


@pytest.mark.parametrize("argv, needle", [
    (["paper-check", "--out", "{f}/pc.json"], "file.txt is a file"),
    (["paper-check", "--out", "{d}"], "is a folder"),
    (["synthetic", "run", "--problem", "binary", "--quick", "--out", "{f}"], "is a file"),
    (["synthetic", "run", "--problem", "binary", "--quick", "--out", "{f}/sub"], "no folder can be made under it"),
    (["synthetic", "compare", "--problem", "binary", "--out", "{f}"], "is a file"),
    (["synthetic", "sweep", "--out", "{f}/x"], "no folder can be made under it"),
    (["report", "-o", "{f}"], "is a file"),
    (["plot", "admissible", "-o", "{d}"], "is a folder"),
    (["plot", "admissible", "-o", "{f}/x.png"], "file.txt is a file"),
    (["pep", "--lam", "1", "--gamma", "0.1", "--beta", "10", "--sweep-T", "1", "--out", "{d}"], "is a folder"),
])
def test_output_locations_are_checked_before_any_work(argv, needle, places, capsys, monkeypatch):
    import stam.figures.report
    import stam.synthetic.baselines
    import stam.synthetic.rates
    import stam.theory.papercheck.audit  # imported first: a module imported under the patch would keep the stand-in

    for module, name in ((stam.theory.papercheck.audit, "findings"), (stam.synthetic.rates, "run_rates"),
                         (stam.synthetic.baselines, "compare"), (stam.figures.report, "load_results")):
        monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("worked before checking the output location"))
    before = sorted(places.rglob("*"))
    rc, _, err = run([a.format(f=places / "file.txt", d=places / "dir") for a in argv], capsys)
    one_line_error(rc, err, needle)
    assert sorted(places.rglob("*")) == before


def test_plot_into_an_existing_folder_is_an_error_not_a_file_beside_it(places, capsys):
    rc, _, err = run(["plot", "admissible", "-o", places / "dir"], capsys)
    one_line_error(rc, err, "is a folder")
    assert not (places / "dir.png").exists()


# -- 2. extreme finite numbers --------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["stepsize", "--quadratic-coupling", "1e308", "--gamma", "0.1", "--beta", "10"],
    ["stepsize", "--quadratic-coupling", "0.5", "--gamma", "1e-320", "--beta", "10"],
    ["stepsize", "--quadratic-coupling", "0.5", "--L1", "1", "--A", "1", "--C", "1", "--delta0", "1", "--M0", "1",
     "--eps", "1e-300", "--gamma", "1e-320"],
    ["stepsize", "--quadratic-coupling", "1e308", "--L1", "1", "--A", "1", "--C", "1", "--delta0", "1", "--M0", "1",
     "--eps", "0.1"],
])
def test_numbers_beyond_floating_point_are_one_line_errors(argv, capsys):
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, "cannot be computed in floating point")


def test_an_overflow_to_infinity_is_an_answer_stated_as_inf(capsys):
    rc, out, err = run(["stepsize", "--quadratic-coupling", "0.5", "--L1", "1e300", "--A", "1e300", "--C", "1e300",
                        "--delta0", "1e300", "--M0", "1e300", "--eps", "1e-300"], capsys)
    assert rc == 0 and not err
    assert "T_min     = inf" in out and "beta_min  = inf" in out
    rc, out, err = run(["stepsize", "--quadratic-coupling", "0.5", "--gamma", "0.1", "--beta", "10", "--T",
                        "99999999999999999999999", "--L1", "1", "--A", "1", "--C", "1", "--eps", "1e-300"], capsys)
    assert rc == 0 and not err and "limit inf" in out


def test_admissible_figure_takes_a_huge_horizon_and_a_tiny_eps_without_warnings(tmp_path, capsys):
    assert run(["plot", "admissible", "--T", "99999999999999999999999", "-o", tmp_path / "a.png"], capsys)[0] == 0
    rc, _, err = run(["plot", "admissible", "--eps", "1e-300", "-o", tmp_path / "b.png"], capsys)
    assert rc == 0 and not err


def test_pep_with_coefficients_beyond_floating_point_is_one_line(capsys):
    pytest.importorskip("PEPit")
    rc, _, err = run(["pep", "--lam", "1e300", "--gamma", "1e300", "--beta", "1e-300", "--T", "1"], capsys)
    one_line_error(rc, err, "beyond floating point")


def test_synthetic_problem_too_large_for_memory_is_refused_before_allocating(tmp_path, capsys):
    rc, _, err = run(["synthetic", "run", "--problem", "binary", "--quick", "--n", "100000000", "--R", "64",
                      "--out", tmp_path], capsys)
    one_line_error(rc, err, "GiB", "--n 100000000")
    assert not list(tmp_path.iterdir())


# -- 3 and 4. result files that are not what the toolkit wrote ------------------------------------------


@pytest.mark.parametrize("content, needle", [
    (b'{"kind":"synthetic-rates","rows":"x"}', "field rows must be a non-empty list, not a string"),
    (b'{"kind":"synthetic-rates"}', "field rows is missing"),
    (b'{"kind":"pep-sweep"}', "field rows is missing"),
    (b'{"kind":"stepsize"}', "field gamma_max is missing"),
    (b'{"kind":"synthetic-compare","rows":[{"method":1}]}', "field rows[0].method must be a string"),
    (b'[{"label":1,"verdict":2}]', "field [0].label must be a string"),
    (b'{"kind":"synthetic-rates","rows":[],"problem":"\xff"}', "not UTF-8"),
    (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
])
def test_malformed_result_files_name_the_file_and_field(content, needle, tmp_path, capsys):
    (tmp_path / "r.json").write_bytes(content)
    rc, _, err = run(["report", tmp_path / "r.json", "-o", tmp_path / "out"], capsys)
    one_line_error(rc, err, "r.json", needle)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, content, needle", [
    ("summary.json", b"[]", "must be an object, not a list"),
    ("summary.json", b"null", "must be an object, not null"),
    ("summary.json", b'{"model":"mlp","best_test_acc_binary":"abc"}', "field best_test_acc_binary must be a percentage"),
    ("summary.json", b'{"dataset":"digits"}', "field model is missing"),
    ("summary.json", b'{"model":"mlp","label":["a"]}', "field label must be a string or null, not a list"),
    ("summary.json", b'{"model":"\xff"}', "not UTF-8"),
    ("log.jsonl", b'{"epoch":1}\n\xff\n', "not UTF-8"),
    ("log.jsonl", b'{"epoch":"one"}\n', "line 1: field epoch must be an integer"),
])
def test_malformed_run_folders_name_the_file_and_field(name, content, needle, tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    if name != "summary.json":
        (run_dir / "summary.json").write_text('{"model": "mlp"}')
    (run_dir / name).write_bytes(content)
    rc, _, err = run(["report", run_dir, "-o", tmp_path / "out"], capsys)
    one_line_error(rc, err, str(run_dir / name), needle)


@pytest.mark.parametrize("flag", [["--T-min", "700"], ["--T-points", "100000"], ["--T-max", "20"]])
def test_quick_refuses_the_flags_it_would_override(flag, tmp_path, capsys):
    rc, _, err = run(["synthetic", "run", "--problem", "binary", "--quick", *flag, "--out", tmp_path], capsys)
    one_line_error(rc, err, "--quick sets --T-min 10 --T-max 640 --T-points 7", f"drop {flag[0]}")


# -- 5. unbounded work --------------------------------------------------------------------------------------


def test_pep_above_the_size_limit_is_refused_with_size_and_limit(capsys):
    rc, _, err = run(["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "100000"], capsys)
    one_line_error(rc, err, "200002 x 200002", "limit 50", "--force")
    rc, _, err = run(["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--sweep-T", "1,30", "--out", "x.json"],
                     capsys)
    one_line_error(rc, err, "--T 30", "62 x 62")


def test_gram_size_estimate_is_the_size_of_the_pep_built():
    pytest.importorskip("PEPit")
    from stam.theory.worstcase import pep

    for T, free in ((1, False), (3, False), (2, True)):
        result = pep.stam_pep(1.0, 0.1, 250.0, T, free_start=free)
        assert result.details["gram_size"] == pep.gram_size(T, free_start=free), (T, free)


# -- 8. the report: names, attributes, labels --------------------------------------------------------------


def _run_folder(path: Path, label: str, dataset: str = "digits") -> Path:
    path.mkdir(parents=True)
    (path / "summary.json").write_text(json.dumps({
        "kind": "train-run", "model": "mlp", "dataset": dataset, "algo": "stam", "label": label,
        "best_test_acc_binary": 50.0, "best_test_acc_float": 60.0, "epochs": 1}))
    (path / "log.jsonl").write_text(json.dumps({"epoch": 1, "train_acc": 40.0, "test_acc_binary": 50.0,
                                                "test_acc_float": 60.0, "proxy_grad": 1.0, "proxy_z": 0.5}) + "\n")
    return path


def test_report_escapes_hostile_names_and_never_writes_outside_its_folder(tmp_path, capsys):
    hostile = _run_folder(tmp_path / "hostile" / "run", "x", dataset="/../../../../x/PWNED2")
    rc, _, err = run(["report", hostile, "-o", tmp_path / "a" / "out"], capsys)  # refused as `stam table` refuses it
    one_line_error(rc, err, "summary.json: field dataset must be a name", "'/../../../../x/PWNED2'")
    assert not (tmp_path / "a").exists()
    inputs = tmp_path / "in"
    _run_folder(inputs / '"><img src=x onerror=alert(2)>', "$\\notacommand{$")
    rows = [{"T": 10, "S_min_mean": 0.1, "gamma": 0.1, "beta": 3.0}]
    (inputs / "r.json").write_text(json.dumps({"kind": "synthetic-rates", "problem": "/../../../../x/PWNED",
                                               "rows": rows}))
    out = tmp_path / "a" / "out"
    rc, _, err = run(["report", inputs, "-o", out], capsys)
    assert rc == 0, err
    page = (out / "report.html").read_text()
    assert "<img src=x" not in page and 'onerror=alert(2)>"' not in page
    made = {p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*")}
    assert made == {"in", "a", "hostile"}  # nothing beside the output folder
    tables = sorted(p.name for p in (out / "tables").iterdir())
    assert "rates-x-pwned.md" in tables and "accuracy-digits.md" in tables
    assert all(set(p.name) <= set("abcdefghijklmnopqrstuvwxyz0123456789-.") for p in out.rglob("*"))


def test_a_label_that_is_not_mathtext_is_drawn_as_typed(tmp_path, capsys):
    run_dir = _run_folder(tmp_path / "run", "$\\notacommand{$")
    for kind in ("training", "practice"):
        rc, _, err = run(["plot", kind, run_dir, "-o", tmp_path / f"{kind}.png"], capsys)
        assert rc == 0, err
    from stam.figures.report import make_figure
    from stam.figures.results import load_results

    fig = make_figure("practice", load_results([run_dir]))
    titles = [ax.get_title() for ax in fig.axes]
    assert any("$\\notacommand{$" in t.replace("\\$", "$") for t in titles)


def test_slug_is_safe_bounded_and_counts_collisions():
    used: set = set()
    assert slug("/../../x/PWNED", used) == "x-pwned"
    assert slug("X PWNED", used) == "x-pwned-2"
    assert slug("", used) == "x" and slug("$|<>", used) == "x-2"
    assert len(slug("a" * 500)) <= 48
    assert slug("rates", used, ext="json") == "rates.json" and slug("rates", used, ext="c/s.v") == "rates.csv"


def test_markdown_tables_escape_the_pipe():
    from stam.figures.tables import Table

    md = Table("cap", ["a|b", "c"], [["x|y", "z"]]).to_markdown()
    assert "x\\|y" in md and "a\\|b" in md


# -- 9. minor -----------------------------------------------------------------------------------------------


def test_paper_check_json_and_brief_together_is_an_error(capsys):
    rc, _, err = run(["paper-check", "--json", "--brief"], capsys)
    one_line_error(rc, err, "--json and --brief")


def test_a_closed_pipe_ends_quietly_with_status_141():
    proc = subprocess.Popen([sys.executable, "-m", "stam", "stepsize", "--quadratic-coupling", "0.5", "--gamma", "0.1",
                             "--beta", "10"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read()
    assert proc.wait() == 141 and err == b""


def test_a_bug_is_one_line_and_status_1_and_the_traceback_on_request(monkeypatch, capsys):
    """An unexpected exception (a bug, not a user's mistake) never shows a traceback unless asked."""
    import stam.theory.symbolic.stepsize as S
    from stam.cli import main

    def bug(args):
        raise KeyError("oops\nsecond line")

    monkeypatch.setattr(S, "stepsize", bug)
    monkeypatch.delenv("STAM_TRACEBACK", raising=False)
    assert main(["stepsize", "--quadratic-coupling", "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("stam: internal error: KeyError: 'oops") and "STAM_TRACEBACK=1" in err
    monkeypatch.setenv("STAM_TRACEBACK", "1")
    with pytest.raises(KeyError):
        main(["stepsize", "--quadratic-coupling", "1"])


def test_work_limits_of_pep_sweeps_and_rate_experiments(capsys, tmp_path, monkeypatch):
    from stam.cli import main

    monkeypatch.chdir(tmp_path)
    for argv, text in (
        (["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--sweep-T", "2,2", "--out", "p.json"], "more than once"),
        (["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--sweep-T", "24,23,22,21,20,19", "--out", "p.json"],
         "above the limit 4"),
        (["synthetic", "run", "--problem", "binary", "--T-max", "100000000"], "times the default run's work"),
        (["synthetic", "run", "--problem", "binary", "--T-points", "99999999999"], "times the default run's work"),
        (["plot", "admissible", "--L1", "1e308", "-o", "a.png"], "--L1 1e+308: A = 2 max(L1, lambda)"),
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and text in err, (argv, err)
    assert list(tmp_path.iterdir()) == []


# -- issue 27: every field of every file checked for sense, where it is parsed ------------------------------


def _valid_files():
    from test_fuzz import valid_files

    return valid_files()


@pytest.mark.parametrize("name, path, value, needle", [
    ("pep.json", ["rows", 0, "worst_case"], -1.0, "field rows[0].worst_case must be a finite number >= 0 or null, not -1.0"),
    ("pep.json", ["lam"], float("nan"), "field lam must be a finite number > 0, not nan"),
    ("pep.json", ["lam"], -2.0, "field lam must be a finite number > 0, not -2.0"),
    ("rates.json", ["rows", 0, "T"], -10, "field rows[0].T must be an integer >= 1, not -10"),
    ("rates.json", ["rows", 0, "T"], 40, "field rows[1].T must increase strictly down the list (40 after 40"),
    ("rates.json", ["rows", 0, "S_min_lo"], 5.0, "field rows[0].S_min_hi must be >= S_min_lo"),
    ("region.json", ["L1"], 0.0, "field L1 must be a finite number > 0, not 0.0"),
    ("region.json", ["rows", 0, "lam"], -1.0, "field rows[0].lam must be a finite number > 0"),
    ("region.json", ["rows", 0, "paper", "hi"], 0.5, "field rows[0].paper.hi must be >= lo"),
    ("tune.json", ["algorithms", 0, "final", "mean"], float("nan"), "field algorithms[0].final.mean must be a percentage"),
    ("tune.json", ["algorithms", 0, "final", "std"], float("inf"), "field algorithms[0].final.std must be a finite number >= 0"),
    ("tune.json", ["algorithms", 0, "trials", 0, "score"], 1e308, "field algorithms[0].trials[0].score must be a percentage in [0, 100] or null, not 1e+308"),
    ("tune.json", ["algorithms", 0, "final", "diverged"], 7, "field algorithms[0].final.diverged is 7, more than the runs (2)"),
    ("tune.json", ["dataset"], "../../../../tmp/x", "field dataset must be a name"),
    ("run/summary.json", ["best_test_acc_binary"], float("nan"), "field best_test_acc_binary must be a percentage"),
    ("run/summary.json", ["dataset"], "../../../../tmp/x", "field dataset must be a name"),
    ("run/log.jsonl", [1, "epoch"], 1, "line 2: field epoch must increase strictly down the list (1 after 1"),
    ("run/log.jsonl", [0, "test_acc_binary"], 200.0, "line 1: field test_acc_binary must be a percentage"),
    ("stepsize.json", ["gamma"], 5.0, "field gamma is 5.0, more than gamma_max (0.2)"),
    ("paper-check.json", None, None, "field coverage.audited is 1e+30, more than the labels (0)"),
    ("map.json", ["rows", 0, "metric"], 150.0, "field rows[0].metric must be a validation accuracy in percent"),
    ("map.json", ["format"], 1, "field format is 1: a network map of format 1 holds its accuracies as fractions"),
    ("map.json", ["format"], 3, "field format is 3; this toolkit reads convergence-map files of format 1 to 2"),
    ("run/log.jsonl", [0, "sign_flips"], {"ever": 2.0}, "line 1: field sign_flips.ever must be a fraction in [0, 1]"),
])
def test_impossible_file_values_are_one_line_naming_file_and_field(name, path, value, needle, tmp_path, capsys):
    """The values of issue 27 item 3, each refused where it is parsed (its result type, stam.results:
    a field's type says the range, a rule the consistency) before anything is drawn or written."""
    obj = _valid_files()[name]
    if path is None:  # a paper-check result claiming more labels audited than the paper has
        obj = {"kind": "paper-check", "items": obj, "coverage": {"audited": 10**30, "total": 0}}
    else:
        set_at(obj, path, value)
    target = tmp_path / "in" / name
    target.parent.mkdir(parents=True)
    rows = obj if name.endswith(".jsonl") else None
    target.write_text("".join(json.dumps(r) + "\n" for r in rows) if rows else json.dumps(obj))
    if name.startswith("run/"):
        if name != "run/summary.json":
            (target.parent / "summary.json").write_text(json.dumps(_valid_files()["run/summary.json"]))
        target = target.parent
    rc, _, err = run(["report", target, "-o", tmp_path / "out"], capsys)
    one_line_error(rc, err, Path(name).name, needle)
    assert not (tmp_path / "out").exists()


def test_the_files_the_writers_make_pass_the_sense_checks(tmp_path, capsys):
    """The sense checks refuse nothing a producer writes: every kind of valid file loads."""
    from stam.figures.results import load_results

    for name, obj in _valid_files().items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in obj) if name.endswith(".jsonl") else json.dumps(obj))
    found = load_results([tmp_path])
    assert sorted(k for k, v in found.by_kind.items() if v) == sorted(
        ["synthetic-rates", "pep-sweep", "synthetic-compare", "paper-check", "stepsize", "train-run", "convergence-map",
         "tune", "lyapunov-region", "pep-band", "methods-regions", "methods-steps"])


@pytest.mark.parametrize("data", [b'{"kind": "synthetic-rates", "rows": []}', bytes(range(256)) * 4,
                                  b"PK\x03\x04" + b"\x00" * 64 + b"archive/data.pkl", b"", b"plain words, no markup\n"])
def test_paper_check_paper_refuses_what_is_not_latex(data, tmp_path, capsys):
    paper = tmp_path / "paper.tex"
    paper.write_bytes(data)
    rc, out, err = run(["paper-check", "--brief", "--paper", paper], capsys)
    one_line_error(rc, err, f"--paper {paper}")
    assert out == ""


TUNE_ARGV = ["tune", "--algos", "bc", "--trials", "2", "--n-seeds", "2", "--epochs", "1", "--batch-size", "64", "--no-paper",
             "--no-progress"]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """A small tuning (its job store and its result), made once."""
    from stam.cli import main as stam_main

    out = tmp_path_factory.mktemp("tuned") / "t"
    with pytest.MonkeyPatch.context():
        assert stam_main([*TUNE_ARGV, "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("how", ["score x", "result {}", "rows a string", "score 1e308", "score nan", "row not an object"])
def test_a_poisoned_job_file_is_named_and_run_again_and_never_wins(how, tuned, tmp_path, capsys):
    """A job file whose result makes no sense is named on stderr (file and field) and recomputed:
    the tuning is the clean run's, so a stored score of 1e308 or nan never wins."""
    import shutil

    out = tmp_path / "t"
    shutil.copytree(tuned, out)
    clean = json.loads((out / "tune-digits.json").read_text())
    (out / "tune-digits.json").unlink()
    job = next(p for p in sorted((out / "jobs").glob("*.json")) if json.loads(p.read_text())["spec"]["stage"] == "trial")
    record = json.loads(job.read_text())
    rows = record["result"]["rows"]
    {"score x": lambda: rows[0].update(score="x"), "result {}": lambda: record.update(result={}),
     "rows a string": lambda: record["result"].update(rows="abc"), "score 1e308": lambda: rows[0].update(score=1e308),
     "score nan": lambda: rows[0].update(score=float("nan")), "row not an object": lambda: rows.__setitem__(0, 5)}[how]()
    job.write_text(json.dumps(record))
    rc, _, err = run([*TUNE_ARGV, "--out", out], capsys)
    assert rc == 0, err
    (note,) = [line for line in err.splitlines() if line.strip()]
    assert note.startswith(f"stam: note: {job}: field result") and note.endswith("that job is run again"), note
    again = json.loads((out / "tune-digits.json").read_text())
    assert again["algorithms"] == clean["algorithms"]
    assert json.loads(job.read_text())["result"] != record["result"]  # overwritten by the recomputed result


@pytest.mark.parametrize("answer", [b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", b"", None])
def test_a_scheduler_address_that_is_not_dask_is_one_line_naming_it(answer, tmp_path):
    """--scheduler at an endpoint that is not a Dask scheduler (issue 27 item 7): one that answers
    at once with other bytes (an HTTP reply, which the Dask client read as a 3 EiB frame), one that
    closes, one that stays silent.  One line naming the address, exit 2, no traceback from
    Client.__del__ at exit, no "memory"; run as a process, since that traceback came at exit."""
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    held = []

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            if answer is None:
                held.append(conn)  # silent
                continue
            with contextlib.suppress(OSError):
                conn.sendall(answer + b"\xff" * 16 if answer else b"")
            conn.close()

    import contextlib

    threading.Thread(target=serve, daemon=True).start()
    address = f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    proc = subprocess.run([sys.executable, "-m", "stam", *TUNE_ARGV, "--out", str(tmp_path / "t"), "--scheduler", address],
                          capture_output=True, text=True, timeout=120)
    srv.close()
    one_line_error(proc.returncode, proc.stderr, address, "not a Dask scheduler")
    assert "memory" not in proc.stderr.lower() and "Traceback" not in proc.stderr
    assert not (tmp_path / "t").exists()


# -- issue 27 item 5: every output all or nothing ------------------------------------------------------------


def _files(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _boom(*args, **kwargs):
    raise OSError(28, "No space left on device")


def test_a_failing_report_leaves_the_previous_one_and_a_good_one_replaces_it_whole(tmp_path, capsys, monkeypatch):
    import stam.figures.tables as T

    inputs = tmp_path / "in"
    for name, obj in _valid_files().items():
        path = inputs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in obj) if name.endswith(".jsonl") else json.dumps(obj))
    out = tmp_path / "rep"
    assert run(["report", inputs, "-o", out], capsys)[0] == 0
    before = _files(out)
    assert "tables/tune-0.md" in before and "report.html" in before
    monkeypatch.setattr(T, "tune_table", _boom)  # fails after the figures and the first tables are made
    rc, _, err = run(["report", inputs, "-o", out], capsys)
    assert rc == 1 and "No space left on device" in err
    assert _files(out) == before  # nothing of the failed report, nothing half-replaced
    monkeypatch.undo()
    (out / ".stage-999999999-killed").mkdir()  # a killed earlier run's stage (its pid is dead) and temporaries
    (out / ".report.html.x1.tmp").write_text("half")
    assert run(["report", inputs / "rates.json", "-o", out], capsys)[0] == 0
    after = _files(out)
    assert not [p for p in out.rglob(".*") if p.name != ".stam-report"]
    assert "tables/tune-0.md" not in after and "tables/rates-binary.md" in after  # replaced together, no stale table
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "rep"]  # no temporary outside the output folder


def test_a_report_never_replaces_a_folder_that_is_not_a_reports(tmp_path, capsys):
    (tmp_path / "out" / "data").mkdir(parents=True)
    (tmp_path / "out" / "data" / "mine.csv").write_text("1,2\n")
    rc, _, err = run(["report", "-o", tmp_path / "out"], capsys)
    one_line_error(rc, err, "data holds files that are not a report's")
    assert (tmp_path / "out" / "data" / "mine.csv").read_text() == "1,2\n"


def test_a_failing_map_leaves_the_previous_map(tmp_path, capsys, monkeypatch):
    import stam.figures.style as S

    argv = ["map", "--problem", "binary", "--lams", "1", "--betas", "100", "--iterations", "5", "--n-seeds", "1",
            "--no-progress", "--out", tmp_path / "m"]
    assert run([*argv, "--gammas", "0.1,1"], capsys)[0] == 0
    before = _files(tmp_path / "m")
    assert sorted(before) == ["map-binary.csv", "map-binary.json", "map-binary.pdf", "map-binary.png"]
    monkeypatch.setattr(S, "save_figure", _boom)  # the JSON and CSV are made, the figure cannot be written
    rc, _, err = run([*argv, "--gammas", "0.2,1"], capsys)
    assert rc == 1 and "No space left" in err
    assert _files(tmp_path / "m") == before and not list((tmp_path / "m").glob(".*"))


def test_a_failing_tune_leaves_the_previous_pair(tuned, tmp_path, capsys, monkeypatch):
    import shutil

    import stam.dnn.tune as TU

    out = tmp_path / "t"
    shutil.copytree(tuned, out)
    before = {k: v for k, v in _files(out).items() if not k.startswith("jobs")}
    assert sorted(before) == ["tune-digits.json", "tune-digits.md"]
    monkeypatch.setattr(TU, "format_table", _boom)
    rc, _, err = run([*TUNE_ARGV, "--n-seeds", "3", "--out", out], capsys)
    assert rc == 1 and "No space left" in err
    assert {k: v for k, v in _files(out).items() if not k.startswith("jobs")} == before
    assert not list(out.glob(".*"))


# -- issue 27 item 6: a user's problem file, identically on every command ------------------------------------

USER_BASE = """
import torch
from stam.synthetic.problems import make_problem
from stam.dnn import tunespace


class Wrapped:
    def __init__(self, problem):
        self.p = problem

    def __getattr__(self, key):
        return getattr(self.p, key)
{methods}

def make(lam=1.0, seed=0):
    return Wrapped(make_problem("binary", n=8, N=16, b=4, seed=seed, lam={lam}))


problem = make()
"""

USER_DEFECTS = {  # name: (the methods that replace the problem's, lambda, the words of the one line)
    "sys.exit at import": ("\nimport sys\nsys.exit(7)", "lam", "mine.py called sys.exit(7) while it was loaded"),
    "sys.exit in a method": ("    def start(self, R, gamma):\n        raise SystemExit(3)", "lam", "start() called sys.exit(3)"),
    "gradient of the wrong shape": ("    def stochastic_grad(self, y, generator=None):\n        return torch.zeros(3, dtype=y.dtype)",
                                    "lam", "stochastic_grad() returned a tensor of shape (3,), not (2, 8)"),
    "gradient of the wrong type": ("    def stochastic_grad(self, y, generator=None):\n        return 'x'", "lam",
                                   "stochastic_grad() returned str, not a tensor of shape (2, 8)"),
    "stationarity nan": ("    def stationarity(self, u, y):\n        return torch.full((y.shape[0],), float('nan'))", "lam",
                         "stationarity() returned a value that is not finite"),
    "a negative lambda": ("", "-lam", "L2=-1.0 is not allowed"),
    "constants not a dict": ("    def constants_report(self):\n        return 5", "lam", "constants_report() returned int, not a dict"),
}
USER_COMMANDS = {
    "run": ["synthetic", "run", "--problem", "{f}:problem", "--quick", "--R", "2", "--no-progress", "--out", "{o}"],
    "compare": ["synthetic", "compare", "--problem", "{f}:problem", "--budget", "64", "--R", "2", "--no-progress", "--out", "{o}"],
    "sweep": ["synthetic", "sweep", "--problems", "{f}:problem", "--seeds", "0", "--R", "2", "--T-max", "10", "--T-points", "1",
              "--workers", "1", "--no-progress", "--out", "{o}"],
    "map": ["map", "--problem", "{f}:make", "--gammas", "0.1", "--lams", "1", "--betas", "100", "--iterations", "5",
            "--n-seeds", "1", "--no-progress", "--out", "{o}"],
    "stepsize": ["stepsize", "--problem", "{f}:problem", "--delta0", "1", "--M0", "0", "--eps", "0.1"],
}
#: stepsize reads the constants only: the defects of the operators are not its concern
STEPSIZE_READS = ("sys.exit at import", "a negative lambda", "constants not a dict")


@pytest.mark.parametrize("defect", sorted(USER_DEFECTS))
def test_a_defective_user_problem_is_the_same_one_line_on_every_command(defect, tmp_path, capsys):
    methods, lam, words = USER_DEFECTS[defect]
    mine = tmp_path / "mine.py"
    if defect == "sys.exit at import":
        mine.write_text(USER_BASE.format(methods="", lam=lam) + methods + "\n")
    else:
        mine.write_text(USER_BASE.format(methods=methods, lam=lam))
    lines = {}
    for command, argv in USER_COMMANDS.items():
        if command == "stepsize" and defect not in STEPSIZE_READS:
            continue
        out = tmp_path / f"out-{command}"
        rc, _, err = run([a.format(f=mine, o=out) for a in argv], capsys)
        lines[command] = one_line_error(rc, err, "mine.py", words)
        assert not out.exists() or not any(out.rglob("*.json")), command
    # identical but for the flag (--problems on a sweep) and the NAME (map takes the builder make)
    same = {line.replace("--problems", "--problem").replace(":make", ":problem").replace("defines make", "defines problem")
            for line in lines.values()}
    assert len(same) == 1, lines


def test_a_sweep_computes_an_impossible_stored_result_again_instead_of_using_it(tmp_path, capsys):
    argv = ["synthetic", "sweep", "--problems", "binary", "--seeds", "0", "--R", "2", "--T-max", "10", "--T-points", "1",
            "--workers", "1", "--no-progress", "--out", tmp_path]
    assert run(argv, capsys)[0] == 0
    files = sorted(tmp_path.glob("rates-*.json"))
    stored = sorted((tmp_path / "jobs").glob("*.json"))
    path = files[0]
    good = json.loads(path.read_text())
    assert f"{len(files)} already in" in run(argv, capsys)[1]
    record = json.loads(stored[0].read_text())
    stored[0].write_text(json.dumps(set_at(record, ["result", "rows", 0, "S_min_mean"], -1.0)))  # an impossible S
    rc, out, err = run(argv, capsys)
    assert rc == 0 and f"{len(files) - 1} already in" in out and f"wrote {path}" in out
    assert json.loads(path.read_text())["rows"] == good["rows"]


HUGE = "99999999999999999999"


@pytest.mark.parametrize("argv, needle", [
    (["synthetic", "compare", "--problem", "binary", "--budget", HUGE], "times the default comparison's work, above the limit"),
    (["synthetic", "run", "--problem", "binary", "--quick", "--threads", HUGE], "at most 1024"),
    (["map", "--problem", "binary", "--gammas", "0.1", "--lams", "1", "--threads", HUGE], "at most 1024"),
    (["synthetic", "run", "--problem", "binary", "--T-max", HUGE], "times the default run's work"),
    (["synthetic", "sweep", "--problems", "binary", "--seeds", "0", "--T-max", HUGE], "times the default run's work per job"),
    (["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "1", "--L1", "1e308"], "beyond floating point"),
    (["tune", "--algos", "bc", "--trials", "1", "--n-seeds", "2", "--epochs", "1", "--batch-size", "1"], "at least 2 images per batch"),
    (["map", "--gammas", "0.1", "--lams", "1", "--epochs", "1", "--batch-size", "1"], "at least 2 images per batch"),
])
def test_huge_and_extreme_values_the_fuzzer_found_are_one_line_before_any_work(argv, needle, tmp_path, capsys, monkeypatch):
    """Found by tests/test_fuzz.py (fuzz_extremes): an unbounded comparison, a sweep whose horizons
    overflowed numpy, thread counts beyond C int, lambda's A = inf, a batch of one image (BatchNorm)."""
    if argv[0] == "pep":
        pytest.importorskip("PEPit")
    monkeypatch.chdir(tmp_path)
    rc, _, err = run([*argv, "--out", tmp_path / "o"] if argv[0] not in ("pep",) else argv, capsys)
    one_line_error(rc, err, needle)
    assert not (tmp_path / "o").exists()


def test_a_sweep_with_more_processes_than_jobs_runs_them(tmp_path, capsys):
    rc, out, err = run(["synthetic", "sweep", "--problems", "binary", "--seeds", "0", "-j", HUGE, "--T-max", "10",
                        "--T-points", "1", "--R", "2", "--no-progress", "--out", tmp_path], capsys)
    assert rc == 0, err
    assert len(list(tmp_path.glob("rates-*.json"))) == out.count("wrote ") >= 1


# -- issue 40, the points left: repeated rows, string overrides, a space file's named constant --------------


def _repeat_map_rows(obj):
    obj["rows"] = [dict(obj["rows"][0]) for _ in range(100_000)]


def _repeat_algorithm(obj):
    obj["algorithms"].append(json.loads(json.dumps(obj["algorithms"][0])))


def _too_many_trials(obj):
    obj["algorithms"][0]["trials"] = [dict(obj["algorithms"][0]["trials"][0]) for _ in range(100_000)]


@pytest.mark.parametrize("name, edit, needle", [
    ("map.json", _repeat_map_rows, "field rows[1] repeats the cell of rows[0] (gamma = 0.1, lam = 1.0, beta = 20.0)"),
    ("tune.json", _repeat_algorithm, "field algorithms[1] repeats the algorithm of algorithms[0] (algo = a string 'bc')"),
    ("tune.json", _too_many_trials, "field algorithms[0].trials holds 100000 trials, more than params.trials (1)"),
    ("tune.json", lambda o: set_at(o, ["params", "trials"], 2**16 + 1), "field params.trials is above 65536"),
])
@pytest.mark.parametrize("command", ["report", "plot"])
def test_repeated_rows_are_one_line_naming_file_and_field(name, edit, needle, command, tmp_path, capsys):
    """100,000 copies of one map cell were drawn as one cell and counted as 100,000 in the report's
    words; a tuning with more trials than its budget (or an algorithm twice) was summarised as if
    run.  Each is refused by its result type (a producer writes each cell, algorithm and trial once)."""
    obj = _valid_files()[name]
    edit(obj)
    target = tmp_path / name
    target.write_text(json.dumps(obj))
    argv = (["report", target, "-o", tmp_path / "out"] if command == "report" else
            ["plot", "map" if name == "map.json" else "tuning-curves", target, "-o", tmp_path / "out" / "f.png"])
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, name, needle)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value, needle", [
    ("abc", "field algorithms[0].best.overrides.lr must be a number or a schedule (a list of pieces), not a string 'abc'"),
    ({"default": 0.1}, "field algorithms[0].best.overrides.lr must be a number or a schedule"),
    ([{"from": 1, "value": "x"}], "field algorithms[0].best.overrides.lr value 'x' must be a finite number > 0"),
    (-1.0, "field algorithms[0].best.overrides.lr value -1.0 must be a finite number > 0"),
])
def test_an_override_that_is_not_a_number_or_schedule_is_refused_by_the_tune_type(value, needle, tmp_path, capsys):
    """A string override reached the table's ``:.3g`` (an internal error: "Unknown format code 'g'");
    now the tune type checks each override in the schedule language before anything is drawn."""
    obj = _valid_files()["tune.json"]
    set_at(obj, ["algorithms", 0, "best", "overrides", "lr"], value)  # what the table formats
    target = tmp_path / "tune.json"
    target.write_text(json.dumps(obj))
    rc, _, err = run(["report", target, "-o", tmp_path / "out"], capsys)
    one_line_error(rc, err, "tune.json", needle)
    assert not (tmp_path / "out").exists()


def test_a_space_file_copied_from_the_presets_means_what_the_presets_mean(tmp_path):
    """BR's space grows its lambda by ``BR_RHO``; a --space-file naming that factor as presets.json names the
    paper's constants, ``"stam.steps:BR_RHO"``, failed inside the first job.  It is resolved as presets.json
    resolves it: the same trials (so the same jobs) as the rules' own spaces, and so is a file holding those
    spaces as written out (a tune result's ``space``)."""
    from stam.steps import BR_RHO
    from stam.dnn import presets, tunespace

    raw = tunespace.declared_spaces()
    assert raw["br"]["lam"]["decay"]["factor"] == BR_RHO
    path = tmp_path / "spaces.json"
    for factor in (BR_RHO, "stam.steps:BR_RHO"):
        raw["br"]["lam"]["decay"]["factor"] = factor
        path.write_text(json.dumps(raw))
        spaces = tunespace.read_spaces(str(path))
        assert spaces["br"]["lam"]["decay"]["factor"] == BR_RHO
        assert tunespace.sample_trials("br", 4, 0, spaces) == tunespace.sample_trials("br", 4, 0, None)
    key, value = presets.parse_override('lam=[{"from": 1, "value": 1, "decay": {"factor": "stam.steps:BR_RHO"}}]')
    assert value[0]["decay"]["factor"] == BR_RHO


@pytest.mark.parametrize("factor, needle", [
    ("os:system", "--space-file"), ("stam.__main__:main", "must be a number or a constant of the paper that presets.json names"),
    (-2, "search space of br: lam's decay: decay factor -2 must be a finite number > 0"),
    (True, "decay factor True must be a finite number > 0"),
])
def test_a_space_files_bad_decay_factor_is_one_line_before_any_job(factor, needle, tmp_path, capsys, monkeypatch):
    """Another reference is never imported (a user's file names no code to run), a factor that is not
    a number > 0 is refused with the space, before the data set is loaded or any job runs."""
    from stam.dnn import sweep, tunespace

    raw = tunespace.declared_spaces()
    raw["br"]["lam"]["decay"]["factor"] = factor
    (tmp_path / "spaces.json").write_text(json.dumps(raw))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sweep, "check_task", lambda *a: pytest.fail("the data set was loaded"))
    rc, _, err = run(["tune", "--algos", "br", "--trials", "1", "--n-seeds", "2", "--epochs", "1", "--no-paper",
                      "--space-file", "spaces.json", "--out", "t", "--no-progress"], capsys)
    one_line_error(rc, err, needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spaces.json"]


def test_a_map_of_many_cells_is_drawn_with_one_artist_per_kind_and_panel():
    """Issue 40 item 4 (rows): each cell's marker was its own artist (10,000 cells: 154 s of report,
    measured); now each kind (stars, crosses, hatching) is one artist per panel, so the figure's
    cost grows with the cells only through the mesh."""
    import matplotlib.pyplot as plt

    from stam.figures.map_figure import plot_map

    obj = _valid_files()["map.json"]
    row = obj["rows"][0]
    grid = [(10 ** (-3 + 4 * i / 29), 10 ** (-1 + 2 * j / 19)) for i in range(30) for j in range(20)]
    obj["rows"] = [dict(row, gamma=g, lam=lam, admissible=True, diverged=int(k % 3 != 0), seeds=1 + (k % 3 == 1),
                        metric=None if k % 3 == 2 else 50.0) for k, (g, lam) in enumerate(grid)]
    fig = plot_map([obj])
    try:
        for ax in fig.axes:
            if ax.get_label() == "<colorbar>":
                continue
            assert len(ax.lines) <= 20 and len(ax.patches) + len(ax.collections) <= 20, (len(ax.lines), len(ax.patches))  # 600 cells
    finally:
        plt.close(fig)
