"""The paths from a command to what it computes (issue 61, point 4; docs/contributing.md, "Paths"): measured by
``benchmarks/import_paths.py`` from the source, each command within its limit, the page's table what the script
prints now."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchscripts import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
paths = load_benchmark("import_paths")


@pytest.fixture(scope="module")
def graph():
    return paths.reader().full_graph()


@pytest.fixture(scope="module")
def measured(graph):
    return paths.measure(graph)  # runs each command (a small budget) to its target's first call: ~15 s


def test_the_chain_finder_finds_the_shortest_chain_and_says_when_there_is_none():
    g = {"a": {"b", "c"}, "b": {"d"}, "c": {"e"}, "e": {"d"}, "d": set(), "x": set()}
    assert paths.shortest(g, "a", "d") == ["a", "b", "d"]
    assert paths.reach(g, "a", "d") == {"a", "b", "c", "e", "d"}
    with pytest.raises(ValueError, match="no import chain from x to d"):
        paths.shortest(g, "x", "d")


def test_a_long_chain_is_measured_as_long():
    g = {"stam.cli": {"h"}, "h": {"e"}, "e": {"m1"}, "m1": {"m2"}, "m2": {"t"}, "t": set()}
    saved = dict(paths.PATHS)
    try:
        paths.PATHS.clear()
        paths.PATHS["stam x"] = ("h", "e", "t", "x's target", 5)
        got = paths.measure(g, stacks=False)["stam x"]
    finally:
        paths.PATHS.clear()
        paths.PATHS.update(saved)
    assert got["chain"] == ["stam.cli", "h", "e", "m1", "m2", "t"] and len(got["chain"]) > got["limit"]


@pytest.mark.parametrize("cmd", sorted(paths.PATHS))
def test_each_command_reaches_its_target_within_its_limit(cmd, measured, graph):
    handler, experiment, target, _, limit = paths.PATHS[cmd]
    chain = measured[cmd]["chain"]
    assert chain[0] == "stam.cli" and chain[-1] == target and {handler, experiment} <= set(chain)
    assert all(b in graph[a] for a, b in zip(chain, chain[1:])), chain  # each step an import the reader sees
    assert len(chain) <= limit, f"{cmd}: {len(chain)} modules to {target} ({' -> '.join(chain)}), limit {limit}"
    assert measured[cmd]["reach"] >= len(chain)
    stack, frames = measured[cmd]["stack"], measured[cmd]["frames"]
    assert frames[0] == ["stam.cli", "main"] and frames[-1] == [target, paths.RUNS[cmd][0]], frames
    assert stack == list(dict.fromkeys(m for m, _ in frames)) and handler in stack
    assert len(stack) <= limit, f"{cmd}: {len(stack)} modules on the stack to {target} ({' -> '.join(stack)}), limit {limit}"
    assert measured[cmd]["touched"] >= len(stack)


def test_a_run_that_never_reaches_its_target_is_an_error(monkeypatch):
    monkeypatch.setitem(paths.RUNS, "stam train", ("stam_step", ["--help"]))
    with pytest.raises(RuntimeError, match=r"stam train ended \(exit 0\) without calling stam.steps.stam_step"):
        paths.call_stack("stam train")


def test_the_limits_are_the_issues():
    assert {cmd: p[-1] for cmd, p in paths.PATHS.items()} == {"stam train": 12, "stam tune": 20, "stam paper-check": 18,
                                                             "stam pep --region": 18}


def test_the_page_holds_the_table_the_script_prints(measured):
    page = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    assert paths.table(measured) in page
    assert "python benchmarks/import_paths.py" in page
