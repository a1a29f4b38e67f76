"""Shared test settings: CPU only, one torch thread per xdist worker, hypothesis without
deadlines (timing belongs in benchmarks/, not in tests)."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
# stam paper-check stores what it derived (stam.theory.papercheck.audit.stored_findings); tests that patch the audit
# must see it recomputed, so the store is off unless a test turns it on (tests/test_theory_audit.py)
os.environ["STAM_CACHE_DIR"] = "off"

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

try:  # keep 2-core machines from oversubscribing when xdist runs two workers
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _store_off_unless_the_test_turns_it_on():
    """Every test starts with the toolkit's cache off (above), whatever an earlier test in the same
    worker left in the environment; a test turns it on with ``monkeypatch.setenv``."""
    os.environ["STAM_CACHE_DIR"] = "off"
    yield
