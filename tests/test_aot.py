"""The update compiled ahead of time (``stam train --compile aot``, :func:`stam.compiling.ahead_of_time`):
built once into a package kept in the cache, loaded by a later process without tracing or
compiling, the same numbers as the eager update to rounding, and whatever cannot be kept or loaded
falls back with a warning, never a traceback."""

import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

from stam import compiling
from stam.dnn import batched, catalog, presets

HYPER = {"gamma": 8.0, "lam": 0.5, "beta": 20.0}


def _trainer(task, compile):
    cfg = batched.Config(presets.resolve(None, "stam", "digits", HYPER, "auto", 60), 0)
    return batched.Trainer([cfg], task, 64, compile=compile, proxies=catalog.algorithm("stam").theorem)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One package, built in this process: the cache folder, the trainer that built it and the eager one."""
    cache = tmp_path_factory.mktemp("cache")
    old = os.environ.get("STAM_CACHE_DIR")
    os.environ["STAM_CACHE_DIR"] = str(cache)
    try:
        task = batched.digits_task()
        aot, eager = _trainer(task, "aot"), _trainer(task, False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # torch.export's own deprecation notices
            results = {name: [tr.train_epoch(e) for e in (1, 2)] for name, tr in (("aot", aot), ("eager", eager))}
    finally:
        if old is None:
            os.environ.pop("STAM_CACHE_DIR")
        else:
            os.environ["STAM_CACHE_DIR"] = old
    return cache, aot, eager, results


def test_aot_update_is_the_eager_update_to_rounding_and_kept_in_the_cache(built):
    cache, aot, eager, results = built
    packages = list((cache / compiling.AOT_FOLDER).glob("update-stam-*.pt2"))
    assert len(packages) == 1 and not list((cache / compiling.AOT_FOLDER).glob(".stage-*"))
    for a, e in zip(aot.state[0], eager.state[0]):
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-6)
    for ra, re in zip(results["aot"], results["eager"]):
        torch.testing.assert_close(ra.train_loss, re.train_loss, rtol=1e-4, atol=1e-6)
        for pa, pe in zip(ra.proxies, re.proxies):  # STAM's stationarity proxies, computed in the package
            torch.testing.assert_close(pa, pe, rtol=1e-3, atol=1e-9)


def test_a_later_process_loads_the_package_without_tracing_and_repeats_the_run_bit_for_bit(built, tmp_path):
    cache, aot, _, _ = built
    expected = tmp_path / "expected.pt"
    torch.save([t.clone() for t in aot.state[0]], expected)
    script = textwrap.dedent(f"""
        import sys, torch
        from stam.dnn import batched, catalog, presets
        cfg = batched.Config(presets.resolve(None, "stam", "digits", {HYPER!r}, "auto", 60), 0)
        torch.set_num_threads({torch.get_num_threads()})
        tr = batched.Trainer([cfg], batched.digits_task(), 64, compile="aot", proxies=True)
        for e in (1, 2):
            tr.train_epoch(e)
        want = torch.load({str(expected)!r})
        assert all(torch.equal(a, b) for a, b in zip(tr.state[0], want)), "not bit for bit"
        assert "torch._dynamo" not in sys.modules and "torch._inductor" not in sys.modules, "traced or compiled"
        print("ok")
    """)
    env = {**os.environ, "STAM_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
    assert len(list((cache / compiling.AOT_FOLDER).glob("*.pt2"))) == 1  # loaded, not built again


def test_a_damaged_package_is_not_loaded_but_named_in_one_warning(built, tmp_path):
    cache = built[0]
    good = next((cache / compiling.AOT_FOLDER).glob("*.pt2"))
    for damage in (b"", b"not a zip file", good.read_bytes()[: len(good.read_bytes()) // 2]):
        bad = tmp_path / "update-damaged.pt2"
        bad.write_bytes(damage)
        with pytest.warns(RuntimeWarning, match="update-damaged.pt2 could not be loaded"):
            assert compiling._load_package(bad, "test") is None


def test_with_the_cache_off_or_no_compiler_the_update_compiles_in_the_process(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(compiling, "compiled_or_eager", lambda fn, what, **kw: calls.append(what) or fn)
    monkeypatch.setenv("STAM_CACHE_DIR", "off")
    fn = lambda x: x + 1  # noqa: E731
    assert compiling.ahead_of_time(fn, (torch.zeros(2),), "k", "off-test") is fn and calls == ["off-test"]

    def no_export(*a, **k):
        raise RuntimeError("export cannot trace this")

    monkeypatch.setenv("STAM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(torch.export, "export", no_export)
    with pytest.warns(RuntimeWarning, match="ahead-of-time compilation unavailable.*export cannot trace"):
        assert compiling.ahead_of_time(fn, (torch.zeros(2),), "k2", "fail-test") is fn
    assert calls == ["off-test", "fail-test"] and not list(tmp_path.rglob("*.pt2")) and not list(tmp_path.rglob(".stage-*"))


def test_a_run_resumes_only_with_the_same_update_mode(tmp_path, monkeypatch, capsys):
    from stam.cli import main

    monkeypatch.setenv("STAM_CACHE_DIR", "off")
    args = ["train", "--model", "mlp", "--dataset", "digits", "--algo", "bc", "--out", str(tmp_path / "r"), "--quiet", "--no-progress"]
    assert main([*args, "--epochs", "1", "--compile", "off"]) == 0
    assert main([*args, "--epochs", "2", "--resume", "--compile", "aot"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "stam: error: --resume: compile was 'off', now 'aot'; use the same settings (only --epochs may change)"
    with pytest.raises(SystemExit) as e:
        main([*args, "--epochs", "2", "--compile", "fast"])
    assert e.value.code == 2
    assert "--compile: invalid choice: 'fast'" in capsys.readouterr().err
