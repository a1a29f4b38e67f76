"""A full disk (``ENOSPC``) at every write (issue 40): one line ``stam: error: ...`` naming the file
the user knows (never a temporary, never torch's ``enforce fail``), exit 1, nothing half-written:
no temporary left, no result without its twin, the files of an earlier run as they were.  The
disk is filled by making the writes raise ``OSError(ENOSPC)`` below a folder."""

from __future__ import annotations

import errno
import pathlib
from pathlib import Path

import pytest

from stam.cli import main
from stam.io import atomic_write_text, staged


@pytest.fixture
def full(monkeypatch):
    """``full(folder)``: from now on every ``Path.write_text``/``write_bytes`` below ``folder``
    raises ``ENOSPC`` (the way Python reports a full disk: no file name)."""
    def fill(folder: Path):
        folder = Path(folder).resolve()
        for name in ("write_text", "write_bytes"):
            real = getattr(pathlib.Path, name)

            def write(self, *a, _real=real, **k):
                if Path(self).resolve().is_relative_to(folder):
                    raise OSError(errno.ENOSPC, "No space left on device")
                return _real(self, *a, **k)

            monkeypatch.setattr(pathlib.Path, name, write)
    return fill


def _left(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_an_atomic_write_names_the_file_and_leaves_the_old_one(tmp_path, full):
    target = tmp_path / "out" / "result.json"
    atomic_write_text(target, "old\n")
    full(tmp_path / "out")
    with pytest.raises(OSError) as e:
        atomic_write_text(target, "new\n")
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(target)
    assert target.read_text() == "old\n" and _left(tmp_path / "out") == ["result.json"]


def test_a_write_in_a_stage_names_the_file_in_the_output_folder(tmp_path, full):
    out = tmp_path / "out"
    full(out)
    with pytest.raises(OSError) as e, staged(out) as stage:
        atomic_write_text(stage / "tables" / "t.md", "x")
    assert e.value.filename == str(out / "tables" / "t.md") and _left(out) == []


def test_a_result_and_its_csv_twin_are_written_both_or_neither(tmp_path, monkeypatch, capsys):
    """The disk fills at the CSV twin of a rerun: the earlier run's JSON and CSV stay as they were
    (the new JSON is not renamed into place without its CSV)."""
    out = tmp_path / "out"
    argv = ["synthetic", "run", "--problem", "binary", "--quick", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(Path(n).suffix for n in before) == [".csv", ".json"]
    real = pathlib.Path.write_text

    def csv_full(self, *a, **k):
        if self.name.endswith(".csv") or ".csv." in self.name:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(pathlib.Path, "write_text", csv_full)
    capsys.readouterr()
    assert main([*argv, "--seed", "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.rstrip().endswith(".csv") and "No space left on device" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_stam_synthetic_run_on_a_full_disk_is_one_line_exit_1_and_writes_nothing(tmp_path, full, capsys):
    out = tmp_path / "out"
    out.mkdir()
    full(out)
    rc = main(["synthetic", "run", "--problem", "binary", "--quick", "--no-progress", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1, err
    assert err.startswith("stam: error: No space left on device: " + str(out / "rates-")), err
    assert _left(out) == []


def test_stam_train_on_a_full_disk_names_the_checkpoint_and_leaves_no_part_of_it(tmp_path, monkeypatch, capsys):
    """torch's writer reports a full disk as ``RuntimeError: [enforce fail at inline_container.cc]
    ... file write failed`` (an internal error before): now one line naming checkpoint.pt, exit 1."""
    from stam.dnn import checkpoint

    def torch_full(obj, f, *a, **k):
        Path(f).write_bytes(b"PK\x03\x04 part of a zip")  # what it wrote before the disk filled
        raise RuntimeError("[enforce fail at inline_container.cc:603] . PytorchStreamWriter failed writing file "
                           "data/3: file write failed")

    monkeypatch.setattr(checkpoint.torch, "save", torch_full)
    out = tmp_path / "run"
    rc = main(["train", "--model", "mlp", "--dataset", "digits", "--algo", "bc", "--epochs", "1", "--no-progress",
               "--quiet", "--compile", "off", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1, err
    assert err.startswith("stam: error: could not write the checkpoint (") and err.rstrip().endswith(
        f"a full disk?): {out / 'checkpoint.pt'}"), err
    assert not (out / "checkpoint.pt").exists() and not [p for p in _left(out) if p.startswith(".")]


def test_stam_train_on_a_full_disk_leaves_no_lone_config(tmp_path, monkeypatch, capsys):
    from stam.dnn import checkpoint

    def torch_full(obj, f, *a, **k):
        raise RuntimeError("PytorchStreamWriter failed writing file data/3: file write failed")

    monkeypatch.setattr(checkpoint.torch, "save", torch_full)
    out = tmp_path / "run"
    rc = main(["train", "--model", "mlp", "--dataset", "digits", "--algo", "bc", "--epochs", "1", "--no-progress",
               "--quiet", "--compile", "off", "--out", str(out)])
    assert rc == 1
    assert _left(out) == [] if out.exists() else True, _left(out)
