"""Issue 60, point 4: the four methods' theory beside their practice on digits (the figure ``methods``, the
findings row and the result files it reads)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from stam.cli import main
from stam.dnn import stepsweep
from stam.figures import findings as F
from stam.figures import methods as M

ROOT = Path(__file__).resolve().parents[1]
REGIONS = ROOT / F.METHODS_REGIONS
STEPS = ROOT / F.METHODS_STEPS


def test_the_committed_files_are_read_through_their_types():
    from stam.figures.results import load_results

    res = load_results([REGIONS, STEPS])
    assert len(res["methods-regions"]) == 1 and len(res["methods-steps"]) == 1
    steps = res["methods-steps"][0].data
    assert [m["algo"] for m in steps["methods"]] == list(stepsweep.ALGOS)
    for m in steps["methods"]:
        assert len(m["rows"]) == len(steps["multiples"]) and m["curvature"] > 0
        for r in m["rows"]:  # an accuracy at or below chance only where a seed diverged (labelled so)
            assert len(r["test_acc"]) == steps["seeds"]
            low = [a for a in r["test_acc"] if a is not None and a <= M.CHANCE]
            assert not low or r["diverged"], (m["algo"], r["multiple"], r["test_acc"])


def test_the_figure_draws_from_the_committed_files(tmp_path, capsys):
    out = tmp_path / "methods.png"
    assert main(["plot", "methods", str(REGIONS), str(STEPS), "-o", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG" and out.with_suffix(".pdf").is_file()


def test_the_panels_shade_what_the_verdicts_say():
    """The shading comes from the regions file: PSGD certified below h = 2 and refuted from it; BC and BR refuted at
    every step (F an indicator); STAM certified below its smallest gamma*lambda limit; the common measure refutes PSGD
    and STAM at every step and determines nothing for BC."""
    regions = json.loads(REGIONS.read_text())
    assert M.theory_ranges(regions, "psgd")["natural"] == ([[0.0, 2.0]], [[2.0, None]])
    for algo in ("bc", "br"):
        assert M.theory_ranges(regions, algo)["natural"] == ([], [[0.0, None]])
    cert, ref = M.theory_ranges(regions, "stam")["natural"]
    assert 0.9 < cert[0][1] < 1.0 and ref[0][0] > cert[0][1]
    assert M.theory_ranges(regions, "stam")["common"] == ([], [[0.0, None]])
    assert M.theory_ranges(regions, "bc")["common"] == ([], [])


def _copy(tmp_path: Path) -> Path:
    for rel in (F.METHODS_REGIONS, F.METHODS_STEPS, F.REGION):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    return tmp_path


def test_the_findings_row_is_computed_from_the_two_files(tmp_path):
    """The row's numbers move with the files: a method that trains nowhere in a changed sweep is said to; a changed
    verdict changes the row; and the README holds the row as the committed files give it."""
    root = _copy(tmp_path)
    claim, number = F._methods(F.Results(root))
    assert "STAM gamma*lambda < 0.99 /" in number and "BC h nowhere /" in number and "PSGD h < 2 /" in number
    assert claim in (ROOT / "README.md").read_text() or F._cell(claim) in (ROOT / "README.md").read_text()
    steps = json.loads((root / F.METHODS_STEPS).read_text())
    changed = copy.deepcopy(steps)
    for r in next(m for m in changed["methods"] if m["algo"] == "bc")["rows"]:
        r["mean"] = 50.0
    (root / F.METHODS_STEPS).write_text(json.dumps(changed))
    _, number2 = F._methods(F.Results(root))
    assert "BC h nowhere / nowhere tried (" in number2
    regions = json.loads((root / F.METHODS_REGIONS).read_text())
    psgd = next(m for m in regions["methods"] if m["algo"] == "psgd")
    for v in psgd["natural"]:
        v["certified"], v["refuted"] = None, [[0.0, None]]
    (root / F.METHODS_REGIONS).write_text(json.dumps(regions))
    _, number3 = F._methods(F.Results(root))
    assert "PSGD h nowhere /" in number3


def test_the_methods_table_block_lists_every_method_and_measure():
    block = F.BLOCKS["methods-table"](F.Results(ROOT))
    for label in ("PSGD", "BC", "BR, lam fixed", "BR, lam x 1.02 per step", "STAM"):
        assert f"| {label} | natural |" in block and f"| {label} | common |" in block
    assert "not determined" in block and "none, refuted by a run at every step size" in block


def test_rows_are_summarised_per_multiple_with_divergence():
    rows = [{"test_acc": 90.0, "diverged_epoch": None, "selected_epoch": 3, "sign_ever": 0.1},
            {"test_acc": None, "diverged_epoch": 2, "selected_epoch": None, "sign_ever": None},
            {"test_acc": 80.0, "diverged_epoch": None, "selected_epoch": 4, "sign_ever": 0.2},
            {"test_acc": 70.0, "diverged_epoch": None, "selected_epoch": 5, "sign_ever": 0.3}]
    out = stepsweep.summarise_rows("bc", {"lr": 0.5}, [1.0, 10.0], 2, rows)
    assert [r["lr"] for r in out] == [0.5, 5.0]
    assert out[0]["mean"] == 90.0 and out[0]["diverged"] == 1 and out[1]["mean"] == 75.0 and out[1]["diverged"] == 0
    spec = stepsweep.job_spec("stam", {"gamma": 2.0, "lam": 0.5, "beta": 4.0}, [0.1, 1.0], 2, 1, 32, 0.1, 0, 100)
    assert [o["gamma"] for o in spec["overrides"]] == [0.2, 0.2, 2.0, 2.0] and spec["seeds"] == [0, 1, 0, 1]
    assert all(o["lam"] == 0.5 and o["beta"] == 4.0 for o in spec["overrides"])


@pytest.mark.parametrize("algo", ["psgd", "bc"])
def test_the_curvature_estimate_is_a_positive_number(algo):
    L = stepsweep.curvature(algo, {"lr": 0.1}, iters=3)
    assert 0 < L < 1e4
