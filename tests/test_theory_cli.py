"""stam stepsize (and the import hygiene of the theory commands) through stam.cli.main and,
for one case each, a subprocess."""

import json
import subprocess
import sys

import pytest

from stam.cli import main

NET = ["stepsize", "--quadratic-coupling", "0.5"]
BOUND = NET + ["--L1", "1", "--A", "1", "--C", "0.1", "--delta0", "2.3", "--M0", "0", "--eps", "0.1"]
KEYS = {"gamma_max", "gamma", "K1", "K2", "K3", "M", "L", "beta_min", "binding", "T_min"}


def run(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_recommend_json_keys(capsys):
    code, out, _ = run(capsys, BOUND + ["--json"])
    r = json.loads(out)
    assert code == 0 and set(r) == KEYS
    assert 0 < r["gamma"] <= r["gamma_max"] and r["binding"] in ("sqrt((L+M)*A*T)", "2*K2/K1", "2*(L+M)*C/eps^2")


def test_recommend_text_says_what_gamma_is(capsys):
    code, out, _ = run(capsys, BOUND)
    assert code == 0 and "minimises T_min" in out and "binding" in out


def test_table_para_our1(capsys):
    code, out, _ = run(capsys, NET + ["--gamma", "8", "--beta", "1e3", "--json"])
    rep = json.loads(out)
    assert code == 0 and rep["admissible"] is False
    assert {v["condition"].split(" (")[0] for v in rep["violations"]} >= {"K1 > 0", "[(L2*)^2+(L5*)^2] gamma^2 <= 1"}


def test_check_admissible_setting(capsys):
    code, out, _ = run(capsys, BOUND + ["--json"])
    r = json.loads(out)
    argv = BOUND + ["--gamma", repr(r["gamma"]), "--beta", repr(r["beta_min"]), "--T", str(r["T_min"]),
                    "--json"]
    code, out, _ = run(capsys, argv)
    assert code == 0 and json.loads(out) == {"admissible": True, "violations": [], "unknown": []}


def test_es_groups(capsys):
    code, out, _ = run(capsys, NET + ["--L1", "1", "--A0", "1", "--B0", "1", "--C0", "0.1", "--delta0", "1",
                                      "--M0", "0", "--eps", "0.1", "--json"])
    assert code == 0 and set(json.loads(out)) == KEYS
    code, out, _ = run(capsys, NET + ["--L1", "1", "--Lmax", "1", "--N", "1000", "--b", "10", "--delta-inf", "0.1",
                                      "--delta0", "1", "--M0", "0", "--eps", "0.1", "--json"])
    assert code == 0 and set(json.loads(out)) == KEYS


@pytest.mark.parametrize("argv,needle", [
    (BOUND[:-2] + ["--eps", "0"], "--eps: 0 must be > 0"),
    (NET + ["--L1", "-1"], "--L1: -1 must be >= 0"),
    (NET + ["--L1", "inf"], "not finite"),
    (NET + ["--L2", "1"], "--L2=1.0 contradicts --quadratic-coupling"),
    (BOUND + ["--gamma", "8"], "--gamma=8.0 gives K1=-3.46875 <= 0; allowed: 0 < gamma < 0.23303"),
    (BOUND + ["--A0", "1"], "both given"),
    (["stepsize", "--L2", "1", "--L3", "1", "--L4", "1", "--L5", "1", "--l", "-2"], "l=-2.0 is not allowed"),
    (NET + ["--L1", "1", "--Lmax", "1", "--N", "10", "--b", "20", "--delta-inf", "0"], "--b=20 is not allowed"),
    (NET + ["--beta", "10"], "--beta/--T need --gamma"),
    (NET + ["--L1", "1", "--A", "1"], "needs --C"),
    (NET, "a bound on T needs --L1"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, needle):
    with pytest.raises(SystemExit) if needle.startswith("--eps:") or "must be >= 0" in needle or "finite" in needle \
            else _nullcontext() as exc:
        code = main(argv)
    err = capsys.readouterr().err
    code = exc.value.code if hasattr(exc, "value") else code
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _py(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_subprocess_stepsize_imports_no_torch_no_sympy():
    p = _py("import sys; from stam.cli import main; main(%r); "
            "print('torch' in sys.modules, 'sympy' in sys.modules)" % (BOUND + ["--json"],))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "False False"


def test_subprocess_error_exit_2():
    p = subprocess.run([sys.executable, "-m", "stam", *NET, "--gamma", "8", "--L1", "1", "--A", "1", "--C", "1",
                        "--delta0", "1", "--M0", "0", "--eps", "0.1"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("stam: error: --gamma=8.0 gives K1=")
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_subprocess_paper_check_imports_no_torch():
    p = _py("import sys, io, contextlib; from stam.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['paper-check', '--json'])\n"
            "print('torch' in sys.modules)")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"


def test_larger_beta_needs_larger_T(capsys):
    """(T_min, beta_min) is tight: a larger beta violates eq703 at the same T."""
    code, out, _ = run(capsys, BOUND + ["--json"])
    r = json.loads(out)
    argv = BOUND + ["--gamma", repr(r["gamma"]), "--beta", repr(r["beta_min"] * 1.01), "--T", str(r["T_min"]), "--json"]
    code, out, _ = run(capsys, argv)
    rep = json.loads(out)
    assert not rep["admissible"] and rep["violations"][0]["condition"].startswith("T >= 12 beta")
