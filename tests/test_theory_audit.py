"""stam paper-check: verdicts, counterexamples that really are counterexamples, and the tiny
STAM runs of the audit replayed through stam.algorithm (the project's one STAM update)."""

import json

import numpy as np
import pytest

from stam.cli import main
from stam.theory import audit
from stam.theory import numeric as n

EXPECTED = {
    "eq101 (Lemma es-lemma A, C)": "error", "Lemma ES-GH (gh-es)": "ok", "k1 vs eq36 (K1)": "ok",
    "Rem=09836 (threshold of K1 > 0)": "misprint", "eq24": "ok", "eq25": "error", "eq26": "error", "eq27": "error",
    "eq300": "error", "eq35": "ok", "eq36": "error", "eq39": "error", "K3 (eq39), M = 2 K3": "error",
    "eq403": "misprint", "eq52": "misprint", "conv-rate beta conditions": "misprint",
    "eq704 -> eq705 (T bound)": "ok", "alg:stamm vs Algorithm 1": "misprint",
    "network constants (H = (lam/2)||x-y||^2)": "ok",
}


@pytest.fixture(scope="module")
def items():
    return {f.label: f for f in audit.findings()}


def test_verdicts(items):
    """The items audited before the audit became complete keep their verdicts (now computed)."""
    assert {label: items[label].verdict for label in EXPECTED} == EXPECTED


def test_every_wrong_print_has_a_counterexample(items):
    for f in items.values():
        assert (f.counterexample is not None) == (f.verdict not in ("ok", "gap")), f.label


def test_json_output(capsys):
    """Backwards compatible: a list whose rows keep label, printed, derived, verdict, counterexample
    (new keys are added), the old items in their old order among the new ones."""
    assert main(["paper-check", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    labels = [r["label"] for r in rows]
    assert [lab for lab in labels if lab in EXPECTED] == list(EXPECTED)
    assert all({"label", "printed", "derived", "verdict", "counterexample"} <= set(r) for r in rows)
    assert all(isinstance(r["printed"], str) and isinstance(r["derived"], str) for r in rows)


def test_threshold_counterexample(items):
    ce = items["Rem=09836 (threshold of K1 > 0)"].counterexample
    c = n.Constants(L1=None, L2=ce["L2*"], L3=0, L4=0, L5=0, l=ce["l"])
    assert ce["gamma"] < n.gamma_threshold(c, as_printed=True)
    assert n.K1(ce["gamma"], c) <= 0


@pytest.fixture(scope="module")
def search():
    return audit.iterate_search()


def test_audit_runs_are_stam_algorithm_runs(search):
    """The audit's tiny runs (derived updates, numpy) equal stam.algorithm's (torch, float64)."""
    torch = pytest.importorskip("torch")
    from stam.algorithm import stam_init, stam_step
    from stam.operators import Composite, QuadraticCoupling

    inst, tr = search["inst"], search["traj"]
    t64 = lambda v: torch.as_tensor(np.asarray(v), dtype=torch.float64)  # noqa: E731
    lam, gam, beta, a, mu = (t64(inst[k])[:, None] for k in ("lam", "gamma", "beta", "a", "mu"))
    c = t64(inst["c"])

    class QuadF:  # F(u) = (mu/2)||u - c||^2
        def prox_F(self, v, gamma):
            return (v + gamma * mu * c) / (1 + gamma * mu)

    ops = Composite(QuadraticCoupling(lam), QuadF())
    st = stam_init(t64(inst["y0"]), ops, gam, z_prev=t64(inst["zm1"]))
    for t in range(tr["y"].shape[0] - 1):
        for name in ("y", "x", "u", "z"):
            np.testing.assert_allclose(getattr(st, name).numpy(), tr[name][t], rtol=1e-10, atol=1e-10)
        st = stam_step(st, a * (st.y - t64(inst["g0"])), ops, gam, beta)


def test_derived_chain_holds_on_every_iterate(search):
    scale = audit._scale(search["q"])
    for label, (_, derived) in search["gaps"].items():
        assert np.min(derived / scale) > -1e-9, label


@pytest.mark.parametrize("label", ["eq25", "eq26", "eq27", "eq300"])
def test_printed_chain_fails_on_stam_iterates(items, label):
    ce = items[label].counterexample
    assert "iterates" in ce and ce["printed_gap"] < 0 <= ce["derived_gap"]


@pytest.mark.parametrize("label", ["eq36", "eq39"])
def test_premise_witness_satisfies_the_premises(items, label):
    ce = items[label].counterexample
    assert min(ce["premise_gaps"].values()) > -1e-9
    assert ce["printed_gap"] < 0 and ce["K1"] > 0


def test_eq403_and_eq52_counterexamples(items):
    ce = items["eq403"].counterexample
    assert ce["LHS"] > ce["printed middle line"] and ce["LHS"] <= ce["derived middle line"]
    ce = items["eq52"].counterexample
    assert ce["printed LHS (with dist)"] > ce["2 min[eta + 2 E(||dz||/gamma)^2]"]
    assert ce["derived LHS (with dist^2)"] <= ce["2 min[eta + 2 E(||dz||/gamma)^2]"]


def test_beta_min_counterexample(items):
    ce = items["conv-rate beta conditions"].counterexample
    assert ce["log10 Theorem conv RHS"] > ce["log10 eps^2"]
    assert ce["log10 Theorem conv RHS"] > 100  # (1 + (L+M)A/beta^2)^T explodes when beta < sqrt((L+M)AT)
    assert ce["beta = 1.01 min"] > min(ce["beta_bounds"].values())


def test_brief_and_as_printed_text(capsys):
    assert main(["paper-check", "--brief", "--as-printed"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for label, v in EXPECTED.items():
        line = next(li for li in lines[1:] if li.startswith(label + " "))
        assert f" {v} " in line, label
    assert "Effect of the printed forms" in out
    assert "Coverage: " in out
