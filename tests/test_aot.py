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
from stam.io import folder_lock

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


# -- issue 40: entries that are not what the toolkit wrote, leftovers, full disks, a second build --------

def _no_export(monkeypatch, calls):
    """Building fails at once (export cannot trace) and the in-process fallback is recorded, so a
    test sees whether a build was tried without spending a minute on one."""
    def no_export(*a, **k):
        calls.append("export")
        raise RuntimeError("export cannot trace this")

    monkeypatch.setattr(torch.export, "export", no_export)
    monkeypatch.setattr(compiling, "compiled_or_eager", lambda fn, what, **kw: calls.append("fallback") or fn)


def test_the_package_holds_its_key(built):
    cache = built[0]
    good = next((cache / compiling.AOT_FOLDER).glob("*.pt2"))
    assert compiling.package_key(good) == good.stem
    assert compiling._load_package(good, "test", good.stem) is not None


def test_a_package_of_another_graph_at_the_key_path_is_never_loaded_but_rebuilt(built, tmp_path, monkeypatch):
    """A package the toolkit built for another key, copied to this key's name (a valid package
    that would be loaded and called with the wrong arguments), is detected by the key inside it."""
    good = next((built[0] / compiling.AOT_FOLDER).glob("*.pt2"))
    folder = tmp_path / compiling.AOT_FOLDER
    folder.mkdir()
    (folder / "update-other.pt2").write_bytes(good.read_bytes())
    monkeypatch.setenv("STAM_CACHE_DIR", str(tmp_path))
    calls = []
    _no_export(monkeypatch, calls)
    fn = lambda x: x + 1  # noqa: E731
    with pytest.warns(RuntimeWarning) as caught:
        assert compiling.ahead_of_time(fn, (torch.zeros(2),), "update-other", "foreign") is fn
    messages = [str(w.message) for w in caught]
    assert any("update-other.pt2 is not a regular file holding its key" in m for m in messages), messages
    assert calls == ["export", "fallback"]  # a build was tried: the package is not trusted by its name


def test_a_fifo_or_a_link_at_the_key_path_never_blocks_and_is_never_loaded(built, tmp_path, monkeypatch):
    import signal

    folder = tmp_path / compiling.AOT_FOLDER
    folder.mkdir()
    monkeypatch.setenv("STAM_CACHE_DIR", str(tmp_path))
    good = next((built[0] / compiling.AOT_FOLDER).glob("*.pt2"))
    os.mkfifo(folder / "fifo.pt2")
    (folder / "link.pt2").symlink_to(good)
    calls = []
    _no_export(monkeypatch, calls)
    old = signal.signal(signal.SIGALRM, lambda *a: pytest.fail("blocked on a FIFO"))
    signal.alarm(60)
    try:
        for name in ("fifo", "link"):
            with pytest.warns(RuntimeWarning) as caught:
                compiling.ahead_of_time(lambda x: x, (torch.zeros(2),), name, name)
            assert f"{name}.pt2 is not a regular file holding its key" in str(caught[0].message)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert calls == ["export", "fallback"] * 2


def test_a_killed_builds_stage_is_removed_by_the_next_build(tmp_path, monkeypatch):
    folder = tmp_path / compiling.AOT_FOLDER
    folder.mkdir()
    stale = folder / ".stage-abc123.pt2"
    stale.write_bytes(b"x" * 1000)
    os.utime(stale, (1, 1))
    monkeypatch.setenv("STAM_CACHE_DIR", str(tmp_path))
    calls = []
    _no_export(monkeypatch, calls)
    with pytest.warns(RuntimeWarning, match="export cannot trace"):
        compiling.ahead_of_time(lambda x: x, (torch.zeros(2),), "k", "stage-test")
    assert not list(folder.glob(".stage-*"))
    young = folder / ".stage-young.pt2"
    young.write_bytes(b"")
    assert compiling.remove_stale_builds(folder) == [] and young.exists()  # outside the lock: only old ones


def test_a_full_disk_is_a_warning_before_the_package_writer_could_abort(tmp_path, monkeypatch):
    """torch's package writer aborts the process (SIGABRT) when the disk fills under it: the build
    is not started with less than AOT_MIN_FREE free, and nothing is left in the folder."""
    import collections
    import shutil

    monkeypatch.setenv("STAM_CACHE_DIR", str(tmp_path))
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(1 << 30, (1 << 30) - (1 << 20), 1 << 20))
    calls = []
    _no_export(monkeypatch, calls)
    with pytest.warns(RuntimeWarning, match="only 1 MiB free in .*aot, less than the 256 MiB a build needs"):
        compiling.ahead_of_time(lambda x: x, (torch.zeros(2),), "k", "full")
    assert calls == ["fallback"] and list((tmp_path / compiling.AOT_FOLDER).iterdir()) == []


def test_a_second_build_waits_for_the_first_and_loads_its_package(built, tmp_path, monkeypatch):
    """While one process builds (it holds the folder's lock), another needing the same package
    waits, then loads what the first built instead of building it again."""
    import threading

    import torch.utils._pytree as pytree

    good = next((built[0] / compiling.AOT_FOLDER).glob("*.pt2"))
    # arguments of the structure the package's graph takes (a load checks it: issue 64)
    spec = pytree.treespec_loads(compiling._load_package(good, "test")._loader.get_call_spec()[0])
    example = pytree.tree_unflatten([torch.zeros(2)] * spec.num_leaves, spec)[0]
    folder = tmp_path / compiling.AOT_FOLDER
    folder.mkdir()
    monkeypatch.setenv("STAM_CACHE_DIR", str(tmp_path))
    calls = []
    _no_export(monkeypatch, calls)
    got = {}
    with folder_lock(folder):  # "the first build"
        t = threading.Thread(target=lambda: got.setdefault("fn", compiling.ahead_of_time(
            lambda *x: x, example, good.stem, "second")))
        t.start()
        t.join(1.0)
        assert t.is_alive()  # waiting for the lock
        (folder / good.name).write_bytes(good.read_bytes())  # the first build's package appears
    t.join(60)
    assert isinstance(got["fn"], compiling._Package) and calls == []


def test_the_loader_extracts_into_the_package_folder_and_a_killed_runs_extraction_is_removed(built, tmp_path,
                                                                                            monkeypatch):
    """torch's loader extracts a package into a temporary folder: here inside the package folder,
    never the system's (TMPDIR is watched), removed when the load fails, and a killed process's
    extraction is removed by the next load."""
    import gc
    import shutil
    import subprocess
    import sys

    good = next((built[0] / compiling.AOT_FOLDER).glob("*.pt2"))
    folder = tmp_path / "cache" / compiling.AOT_FOLDER
    folder.mkdir(parents=True)
    shutil.copy(good, folder / good.name)
    system_tmp = tmp_path / "tmp"
    system_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_tmp))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    killed = folder / f"{compiling.EXTRACT_PREFIX}{dead.pid}-abc"
    (killed / "aotinductor_x").mkdir(parents=True)
    (killed / "aotinductor_x" / "model.so").write_bytes(b"x" * 1000)
    loaded = compiling._load_package(folder / good.name, "test", good.stem)
    assert loaded is not None and not killed.exists()
    assert list(system_tmp.iterdir()) == [] and os.environ["TMPDIR"] == str(system_tmp)
    mine = list(folder.glob(f"{compiling.EXTRACT_PREFIX}{os.getpid()}-*"))
    assert len(mine) == 1 and any(mine[0].rglob("*.so"))  # extracted there, while the model lives
    del loaded
    gc.collect()
    assert not any(mine[0].rglob("*.so"))  # the loader removes what it extracted
    bad = folder / "update-bad.pt2"
    bad.write_bytes(good.read_bytes()[:-2000])
    with pytest.warns(RuntimeWarning, match="could not be loaded"):
        assert compiling._load_package(bad, "test") is None
    assert len(list(folder.glob(f"{compiling.EXTRACT_PREFIX}{os.getpid()}-*"))) == 1  # the failed load's removed
    assert list(system_tmp.iterdir()) == []
