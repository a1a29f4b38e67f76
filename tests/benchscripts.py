"""The benchmark scripts (benchmarks/*.py) loaded as modules, shared by the tests that check
their arithmetic (tests/test_benchmarks.py) and those that tie the docs to their budgets
(tests/test_docs.py).  The scripts are not a package: each is loaded by path, once per call."""

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name):
    """benchmarks/<name>.py as a fresh module named ``bench_<name>``."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
