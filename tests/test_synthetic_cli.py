"""`stam synthetic run|compare|sweep`: result formats, one-line errors with exit status 2,
no half-written files on interruption, resumable sweeps."""

import csv
import json

import pytest

from stam.cli import main
from stam.synthetic import commands, rates
from stam.synthetic.rates import ROW_KEYS

SMALL = ["--n", "6", "--N", "12", "--b", "3", "--no-progress"]


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_run_writes_rates_json_and_csv_in_the_common_format(tmp_path, capsys):
    code, out, _ = run(["synthetic", "run", "--problem", "binary", "--T-min", "5", "--T-max", "40", "--T-points", "3",
                        "--R", "4", "--out", str(tmp_path), *SMALL], capsys)
    assert code == 0 and "fitted log-log slope" in out
    result = json.loads((tmp_path / "rates-binary.json").read_text())
    assert result["kind"] == "synthetic-rates" and result["problem"] == "binary"
    assert {"provenance", "params", "constants", "rows", "slope", "bound_slope"} <= set(result)
    assert [r["T"] for r in result["rows"]] == [5, 14, 40]
    for row in result["rows"]:
        assert tuple(row) == ROW_KEYS
        assert row["admissible"] and row["ratio"] >= 1 and row["S_min_lo"] <= row["S_min_mean"] <= row["S_min_hi"]
    assert isinstance(result["slope"], float) and isinstance(result["bound_slope"], float)
    with open(tmp_path / "rates-binary.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == ROW_KEYS and len(rows) == 3


def test_inadmissible_parameters_are_marked_and_have_no_bound(tmp_path, capsys):
    code, _, _ = run(["synthetic", "run", "--problem", "cosine", "--gamma", "0.3", "--beta", "50", "--allow-inadmissible",
                      "--T-max", "20", "--T-points", "2", "--R", "2", "--out", str(tmp_path), *SMALL], capsys)
    assert code == 0
    rows = json.loads((tmp_path / "rates-cosine.json").read_text())["rows"]
    assert all(not r["admissible"] and r["bound"] is None and r["ratio"] is None for r in rows)


@pytest.mark.parametrize("argv, needle", [
    (["--problem", "nope"], "invalid choice: 'nope'"),
    (["--problem", "binary", "--n", "0"], "--n: 0 must be an integer >= 1"),
    (["--problem", "binary", "--R", "-3"], "--R: -3 must be an integer >= 1"),
    (["--problem", "binary", "--b", "20"], "--b 20 exceeds --N 12"),
    (["--problem", "binary", "--gamma", "0.05", "--beta", "5"], "violate Theorem conv"),
    (["--problem", "binary", "--gamma", "0.9"], "K1 <= 0"),
    (["--problem", "sparse-mcp", "--gamma", "3", "--beta", "9", "--allow-inadmissible"], "gamma < theta"),
    (["--problem", "sparse-l1", "--lam", "2"], "--lam is for the problems with lambda"),
    (["--problem", "binary", "--T-min", "50", "--T-max", "10"], "--T-min 50 exceeds --T-max 10"),
    (["--problem", "binary", "--device", "cuda"], "CUDA is not available"),
])
def test_bad_input_is_one_line_and_exit_status_2(argv, needle, tmp_path, capsys):
    try:
        code, out, err = run(["synthetic", "run", *SMALL, "--T-max", "20", *argv, "--out", str(tmp_path)], capsys)
    except SystemExit as exc:  # argparse errors
        code, err = exc.code, capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0]
    assert not list(tmp_path.iterdir())


def test_interrupted_run_leaves_no_file(tmp_path, capsys, monkeypatch):
    calls = {"n": 0}
    real = rates.stam_step

    def interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 7:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(rates, "stam_step", interrupted)
    code, _, err = run(["synthetic", "run", "--problem", "binary", "--T-max", "30", "--R", "2", "--out",
                        str(tmp_path / "o"), *SMALL], capsys)
    assert code == 130 and "interrupted" in err
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


def test_write_is_atomic_when_serialisation_fails(tmp_path):
    bad = {"kind": "synthetic-rates", "rows": [], "unserialisable": object()}
    with pytest.raises(TypeError):
        commands.write_rates(bad, tmp_path, "rates-x")
    assert not list(tmp_path.iterdir())


def test_sweep_skips_results_on_disk(tmp_path, capsys):
    argv = ["synthetic", "sweep", "--problems", "binary,cosine", "--seeds", "0", "--gamma-fractions", "0.5",
            "--R", "2", "--T-max", "12", "--T-points", "2", "-j", "1", "--out", str(tmp_path), "--no-progress"]
    code, out, _ = run(argv, capsys)
    assert code == 0 and "0 already on disk" in out and "2 to run" in out
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["rates-binary-seed0-gf0.5.json", "rates-cosine-seed0-gf0.5.json"]
    (tmp_path / "rates-cosine-seed0-gf0.5.json").unlink()  # as if interrupted before this job finished
    code, out, _ = run(argv, capsys)
    assert code == 0 and "1 already on disk (skipped), 1 to run" in out
    assert json.loads((tmp_path / "rates-cosine-seed0-gf0.5.json").read_text())["kind"] == "synthetic-rates"


def test_sweep_rejects_unknown_problem(tmp_path, capsys):
    code, _, err = run(["synthetic", "sweep", "--problems", "binary,nope", "--out", str(tmp_path)], capsys)
    assert code == 2 and "unknown problem 'nope'" in err and len(err.strip().splitlines()) == 1


def test_compare_equal_budgets_and_table(tmp_path, capsys):
    code, out, _ = run(["synthetic", "compare", "--problem", "binary", "--budget", "240", "--R", "2", "--out",
                        str(tmp_path), *SMALL], capsys)
    assert code == 0
    result = json.loads((tmp_path / "compare-binary.json").read_text())
    assert result["kind"] == "synthetic-compare"
    methods = [r["method"] for r in result["rows"]]
    assert methods == ["stam", "stam-det", "spring-sgd", "psgd", "bc", "br"]
    for r in result["rows"]:
        assert {"method", "final_S", "objective", "quantised_objective", "wall_time", "grad_evals"} <= set(r)
        assert r["grad_evals"] == 240  # 80 iterations of b=3, or 20 full gradients of N=12
        assert r["quantised_objective"] is not None
    for m in methods:
        assert m in out
    code, out, _ = run(["synthetic", "compare", "--problem", "sparse-l1", "--budget", "36", "--R", "2", "--out",
                        str(tmp_path), *SMALL], capsys)
    rows = json.loads((tmp_path / "compare-sparse-l1.json").read_text())["rows"]
    assert [r["method"] for r in rows] == ["stam", "stam-det", "spring-sgd"]
    assert all(r["quantised_objective"] is None for r in rows)
