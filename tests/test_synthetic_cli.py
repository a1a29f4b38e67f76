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
    (["--problem", "nope"], "--problem 'nope': unknown; known: binary"),  # or FILE.py:NAME (docs/your-problem.md)
    (["--problem", "binary", "--n", "0"], "--n: 0 must be an integer >= 1"),
    (["--problem", "binary", "--R", "-3"], "--R: -3 must be an integer >= 1"),
    (["--problem", "binary", "--b", "20"], "--b 20 exceeds --N 12"),
    (["--problem", "binary", "--gamma", "0.05", "--beta", "5"], "violate Theorem conv"),
    (["--problem", "binary", "--gamma", "0.9"], "K1 <= 0"),
    (["--problem", "sparse-mcp", "--gamma", "3", "--beta", "9", "--allow-inadmissible"], "gamma < theta"),
    (["--problem", "sparse-l1", "--lam", "2"], "--lam is for the problems with lambda"),
    (["--problem", "binary", "--T-min", "50", "--T-max", "10"], "--T-min 50 exceeds --T-max 10"),
    (["--problem", "binary", "--device", "cuda"], "CUDA is not available"),
    (["--problem", "binary", "--device", "meta"], "run on cpu or cuda"),
    (["--problem", "binary", "--gamma", "1e-300", "--beta", "1", "--allow-inadmissible"], "beyond floating point"),
    (["--problem", "binary", "--preset", "paper-our1", "--gamma", "0.01"], "drop --gamma"),
    (["--problem", "binary", "--seed", "-1"], "must be an integer in [0, 2**63)"),
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


def test_out_naming_a_file_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(rates, "run_rates", lambda *a, **k: pytest.fail("ran before checking --out"))
    a_file = tmp_path / "f"
    a_file.write_text("x")
    for sub in (["run"], ["compare"]):
        code, _, err = run(["synthetic", *sub, "--problem", "binary", *SMALL, "--out", str(a_file)], capsys)
        assert code == 2 and "is a file" in err and len(err.strip().splitlines()) == 1
    assert a_file.read_text() == "x"


def test_divergence_and_growth_outside_the_theorem_are_reported(tmp_path, capsys):
    """The minimum over t hides a run that blows up (it keeps its S_0): the rows carry E S_0,
    E S_{T-1} and the number of diverged runs, and the table says so."""
    code, out, _ = run(["synthetic", "run", "--problem", "binary", "--beta", "1e-3", "--allow-inadmissible", "--T-max", "200",
                        "--T-points", "3", "--R", "3", "--out", str(tmp_path), *SMALL], capsys)
    rows = json.loads((tmp_path / "rates-binary.json").read_text())["rows"]
    assert code == 0 and rows[-1]["nonfinite"] == 3 and "warning: 3 of 3 runs diverged" in out
    assert rows[0]["t_star"] == 0 and rows[0]["S_min_mean"] == pytest.approx(rows[0]["S_0_mean"])
    assert rows[0]["S_final_mean"] is None or rows[0]["S_final_mean"] > 1e6 * rows[0]["S_0_mean"]
    code, out, _ = run(["synthetic", "run", "--problem", "binary", "--T-max", "80", "--T-points", "2", "--R", "3",
                        "--out", str(tmp_path), *SMALL], capsys)
    rows = json.loads((tmp_path / "rates-binary.json").read_text())["rows"]
    assert code == 0 and "warning" not in out and all(r["nonfinite"] == 0 for r in rows)
    assert rows[-1]["S_final_mean"] < rows[-1]["S_0_mean"] and 0 < rows[-1]["S_min_se"] <= rows[-1]["S_min_std"]


def test_float32_runs_keep_the_bound(tmp_path, capsys):
    """F = indicator of Q: membership up to float32 rounding, so M_t and the bound stay finite."""
    code, _, _ = run(["synthetic", "run", "--problem", "binary", "--dtype", "float32", "--T-max", "20", "--T-points", "2",
                      "--R", "2", "--out", str(tmp_path), *SMALL], capsys)
    rows = json.loads((tmp_path / "rates-binary.json").read_text())["rows"]
    assert code == 0 and all(r["bound"] is not None and r["ratio"] >= 1 for r in rows)


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
    bad = {"kind": "synthetic-rates", "rows": [{"T": 10, "S_min_mean": 0.1}], "unserialisable": object()}
    with pytest.raises(TypeError):
        commands.write_rates(bad, tmp_path, "rates-x")
    assert not list(tmp_path.iterdir())


def test_sweep_runs_on_the_job_engine_and_resumes_from_its_store(tmp_path, capsys):
    """synthetic sweep is jobs of stam.jobs.run_jobs: stored in OUT/jobs as they finish, a rerun runs
    only the missing ones, other settings are other jobs, and the result files equal a fresh run's."""
    argv = ["synthetic", "sweep", "--problems", "binary,cosine", "--seeds", "0", "--gamma-fractions", "0.5",
            "--R", "2", "--T-max", "12", "--T-points", "2", "--workers", "1", "--out", str(tmp_path), "--no-progress"]
    code, out, _ = run(argv, capsys)
    assert code == 0 and "sweep: 2 jobs, 0 already in" in out and "2 to run with --workers 1" in out
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["rates-binary-seed0-gf0.5.json", "rates-cosine-seed0-gf0.5.json"]
    assert len(list((tmp_path / "jobs").glob("*.json"))) == 2
    first = json.loads((tmp_path / "rates-cosine-seed0-gf0.5.json").read_text())
    stored_jobs = sorted((tmp_path / "jobs").glob("*.json"))
    stored_jobs[0].unlink()  # as if interrupted before this job finished
    (tmp_path / "rates-cosine-seed0-gf0.5.json").unlink()
    code, out, _ = run(argv, capsys)
    assert code == 0 and "1 already in" in out and "(skipped), 1 to run" in out
    again = json.loads((tmp_path / "rates-cosine-seed0-gf0.5.json").read_text())
    assert again["rows"] == first["rows"]  # recomputed or read back: the same numbers
    argv[argv.index("--R") + 1] = "3"  # other settings: other jobs
    argv[argv.index("--gamma-fractions") + 1] = "0.5,0.50"  # the same fraction twice is one job
    argv[argv.index("--workers")] = "-j"  # the old spelling still works
    code, out, _ = run(argv, capsys)
    assert code == 0 and "sweep: 2 jobs, 0 already in" in out and "2 to run" in out
    assert all(json.loads(p.read_text())["params"]["R"] == 3 for p in tmp_path.glob("*.json"))
    assert (tmp_path / "rates-binary-seed0-gf0.5.csv").is_file()
    assert "--jobs" not in _help(["synthetic", "sweep", "--help"], capsys) and "--scheduler" in _help(["synthetic", "sweep", "--help"], capsys)


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit):
        main(argv)
    return capsys.readouterr().out


def test_a_failing_sweep_job_is_one_line_and_writes_no_result(tmp_path, capsys, monkeypatch):
    from stam.synthetic import commands as C

    real = C.sweep_job

    def flaky(spec):
        if spec["problem"] == "cosine":
            raise FloatingPointError("boom")
        return real(spec)

    monkeypatch.setattr(C, "sweep_job", flaky)
    argv = ["synthetic", "sweep", "--problems", "binary,cosine", "--seeds", "0", "--gamma-fractions", "0.5",
            "--R", "2", "--T-max", "12", "--T-points", "2", "--workers", "1", "--out", str(tmp_path), "--no-progress"]
    code, _, err = run(argv, capsys)
    assert code == 2 and "sweep job rates-cosine-seed0-gf0.5 failed: FloatingPointError: boom" in err
    assert len(err.strip().splitlines()) == 1
    assert not list(tmp_path.glob("rates-*"))  # all or nothing
    assert len(list((tmp_path / "jobs").glob("*.json"))) == 1  # the finished job is kept for the rerun
    monkeypatch.setattr(C, "sweep_job", real)
    code, out, _ = run(argv, capsys)
    assert code == 0 and "1 already in" in out and len(list(tmp_path.glob("rates-*.json"))) == 2


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


def test_long_synthetic_work_is_said_before_it_starts(tmp_path, capsys, monkeypatch):
    """run, compare and sweep say the estimate on stderr just before long work (from ANNOUNCE_TIMES
    times the default run's work on); a default-sized run says nothing."""
    from stam.synthetic import commands as C

    argv = ["synthetic", "run", "--problem", "binary", "--R", "2", "--T-min", "10", "--T-max", "20", "--T-points", "2",
            "--no-progress", "-o", str(tmp_path)]
    code, _, err = run(argv, capsys)
    assert code == 0 and "default run's work" not in err
    monkeypatch.setattr(C, "ANNOUNCE_TIMES", 0.0)
    code, _, err = run(argv, capsys)
    assert code == 0 and "stam synthetic run: --R 2 runs of 2 horizons up to --T-max 20: about" in err
