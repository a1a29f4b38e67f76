"""``stam train`` settings that cannot work are one-line errors (exit 2) before any work: no data
loaded, nothing written: an ``--out`` that cannot be a run folder (issue 12, item 1), a
``--schedule-scale`` that sends an epoch to paper epoch infinity (item 2)."""

import pytest

from stam.cli import main
from stam.dnn import data as data_mod

ARGV = ["train", "--model", "mlp", "--dataset", "digits", "--algo", "bc", "--epochs", "1", "--no-progress", "--quiet"]


def _rc(argv):
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


@pytest.fixture
def no_work(monkeypatch):
    """Loading a data set is the first piece of work: it must not happen."""
    def refuse(*args, **kw):
        raise AssertionError("data loaded before the output folder was checked")
    monkeypatch.setattr(data_mod, "load", refuse)


def _tree(root):
    return sorted((str(p.relative_to(root)), p.is_dir() or p.read_bytes()) for p in root.rglob("*"))


@pytest.mark.parametrize("kind", ["file", "under-file", "deep-under-file", "empty", "not-writable", "resume-file"])
def test_unusable_out_is_one_line_before_any_work(tmp_path, capsys, monkeypatch, no_work, kind):
    (tmp_path / "a-file").write_text("not a run\n")
    out = {"file": tmp_path / "a-file", "under-file": tmp_path / "a-file" / "run",
           "deep-under-file": tmp_path / "a-file" / "x" / "y", "empty": "", "not-writable": tmp_path / "ro" / "run",
           "resume-file": tmp_path / "a-file"}[kind]
    needle = {"file": "is a file", "under-file": "is a file, so no folder can be made under it",
              "deep-under-file": "is a file, so no folder can be made under it", "empty": "an empty name; give a folder",
              "not-writable": "is not writable", "resume-file": "is a file"}[kind]
    if kind == "not-writable":  # tests run as root, where chmod cannot make a folder read-only: the probe says no
        import stam.io

        (tmp_path / "ro").mkdir()
        monkeypatch.setattr(stam.io, "_writable_dir", lambda folder: folder != tmp_path / "ro")
    before = _tree(tmp_path)
    argv = [*ARGV, "--out", str(out)] + (["--resume"] if kind == "resume-file" else [])
    assert _rc(argv) == 2
    captured = capsys.readouterr()
    start = "stam train: error: argument -o/--out" if kind == "empty" else "stam: error: --out"  # empty: refused by its type
    assert captured.err.count("\n") == 1 and captured.err.startswith(start) and needle in captured.err, captured.err
    assert captured.out == "" and _tree(tmp_path) == before


def test_a_usable_out_still_trains(tmp_path, capsys):
    out = tmp_path / "new" / "deeper" / "run"
    assert _rc([*ARGV, "--out", str(out)]) == 0
    assert {p.name for p in out.iterdir()} == {"config.json", "log.jsonl", "summary.json", "checkpoint.pt"}


def test_a_schedule_scale_that_sends_an_epoch_to_infinity_is_refused_before_any_work(tmp_path, capsys, no_work):
    """Issue 12, item 2: --schedule-scale 1e-320 with 2 epochs overflowed after the first epoch."""
    out = tmp_path / "run"
    assert _rc([*ARGV[:-4], "--epochs", "2", "--schedule-scale", "1e-320", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--schedule-scale 1e-320 is too small" in err and not out.exists()


def test_schedules_far_beyond_the_paper_epochs_stay_numbers():
    from stam.dnn import presets

    grow = {"from": 1, "value": 1.0, "decay": {"factor": 1.02}}
    assert presets.value_at([grow], 10**9) == float("inf")
    assert presets.value_at([{**grow, "decay": {"factor": 1.02, "max": 5.0}}], 10**9) == 5.0
    assert presets.value_at([{**grow, "decay": {"factor": 0.5}}], 10**9) == 0.0
    from stam.errors import UsageError

    with pytest.raises(UsageError, match=r"paper epoch 1e\+300, beyond 1,000,000"):  # a run there is refused (issue 64)
        presets.resolve(None, "br", "digits", schedule_scale=1e-300, epochs=2)
    preset = presets.resolve(None, "br", "digits", schedule_scale=1e-300)  # evaluated without a run: numbers still
    assert preset.paper_epoch(2) > 10**299 and preset.at(2)["lr"] >= 0


def test_stam_train_counts_the_width_in_its_work_limit(tmp_path, capsys):
    """The work limit weighs each image pass by the network's cost (issue 40): a wide network's run is
    refused in one line before any work, where the same epochs of a narrow one would not be."""
    from stam.cli import main

    rc = main(["train", "--model", "cnn", "--dataset", "digits", "--algo", "bc", "--width", "64", "--epochs", "100000",
               "--out", str(tmp_path / "w")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "weighted by the network's cost" in err[0] and "--force" in err[0]
    assert not (tmp_path / "w").exists()


def test_the_cost_bound_of_stam_train_bounds_every_model():
    """stam train counts a network's cost only where MAX_COST_AT_WIDTH_1 * max(1, width)^2 says it could decide:
    the bound must hold for every model, data shape and width."""
    from stam.dnn.models import relative_cost
    from stam.dnn.train import MAX_COST_AT_WIDTH_1

    for model in ("mlp", "cnn", "vgg11", "vgg16", "resnet18"):
        for shape, classes in (((3, 32, 32), 100), ((1, 8, 8), 10)):
            for width in (0.25, 1.0, 2.0):
                assert relative_cost(model, classes, shape, width) <= MAX_COST_AT_WIDTH_1 * max(1.0, width) ** 2
