"""stam paper-check: verdicts, counterexamples that really are counterexamples, and the tiny
STAM runs of the audit replayed through stam.steps (the project's one STAM update)."""

import json

import numpy as np
import pytest

from stam.cli import main
from stam.theory.papercheck import audit
from stam.theory.symbolic import stamruns
from stam.theory.symbolic import numeric as n

EXPECTED = {
    "eq101 (Lemma es-lemma A, C)": "false", "Lemma ES-GH (gh-es)": "ok", "k1 vs eq36 (K1)": "ok",
    "Rem=09836 (threshold of K1 > 0)": "false", "eq24": "ok", "eq25": "false", "eq26": "false", "eq27": "false",
    "eq300": "false", "eq35": "ok", "eq36": "unproven", "eq39": "unproven", "K3 (eq39), M = 2 K3": "unproven",
    "eq403": "misprint", "eq52": "misprint", "conv-rate beta conditions": "false",
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
    return stamruns.iterate_search()


def test_audit_runs_are_stam_algorithm_runs(search):
    """The audit's tiny runs (derived updates, numpy) equal stam.steps's (torch, float64)."""
    torch = pytest.importorskip("torch")
    from stam.steps import stam_init, stam_step
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
    scale = stamruns.relative_scale(search["q"])
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


def test_brief_and_as_printed_text(capsys):
    assert main(["paper-check", "--brief", "--as-printed"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for label, v in EXPECTED.items():
        line = next(li for li in lines[1:] if li.startswith(label + " "))
        assert f" {v} " in line, label
    assert "Effect of the printed forms" in out
    assert "Coverage: " in out


@pytest.mark.parametrize("label", ["conv-rate beta conditions", "conv-rate upper bound on beta (eq703)"])
def test_conv_rate_counterexamples_are_actual_runs(items, label):
    """Replayed here through stam.steps.stam_step (H = F = 0, G = y^2/2, exact gradients): every
    hypothesis of Theorem conv-rate as printed holds, and no t < T has |grad G(y^t)| <= eps."""
    from stam.steps import stam_init, stam_step

    f = items[label]
    ce = f.counterexample
    assert f.verdict == "false" and f.evidence == "run" and ce["conclusion fails"]
    gam, beta, eps, T = ce["gamma"], ce["beta"], ce["eps"], ce["T"]
    A, C = n.deterministic_es(1.0, 0.0)
    c = n.Constants(L1=1.0, L2=0.0, L3=0.0, L4=0.0, L5=0.0, l=0.0, A=A, C=C)
    assert n.admissible_gamma(gam, c) and T >= n.T_min(gam, c, ce["delta0"], 0.0, eps)
    bounds = n.beta_lower_bounds(T, gam, c, eps)
    assert beta > min(bounds.values())  # the printed condition
    if "upper" in label:
        assert beta >= max(bounds.values())  # also min read as max

    class NoCoupling:
        grad_y_H = staticmethod(lambda x, y: 0 * y)
        prox_H = staticmethod(lambda z, y, g: z)
        prox_F = staticmethod(lambda v, g: v)

    st = stam_init(np.array([1.0]), NoCoupling(), gam, z_prev=np.array([0.0]))
    smallest = abs(st.y[0])
    for _ in range(60):
        st = stam_step(st, st.y, NoCoupling(), gam, beta)
        smallest = min(smallest, abs(st.y[0]))
    assert smallest > eps and np.all(st.x == 0) and np.all(st.u == 0)
    rate = abs(1 - 1 / beta)  # |y^t| = rate^t: its smallest value over t < T
    assert np.exp(min(0.0, (T - 1) * np.log(rate))) == pytest.approx(ce["min_(t<T) |grad G(y^t)|"], rel=1e-4)


def test_unproven_items_name_their_search(items):
    unproven = [f for f in items.values() if f.verdict == "unproven"]
    assert {f.label.split(" (")[0] for f in unproven} == {"eq36", "eq38", "eq39", "K3", "Lemma par2", "Lemma conv-lemma",
                                                         "Theorem conv"}
    for f in unproven:
        assert f.evidence == "premises" and f.counterexample
        assert f.search["found"] is None and f.search["instances"] >= 1000


def test_brief_counts_and_names_the_kinds(capsys):
    assert main(["paper-check", "--brief"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    col = lines[0].index("verdict")
    rows = [line[col:].split()[0] for line in lines[1:lines.index("")]]
    found = {v: rows.count(v) for v in ("ok", "misprint", "false", "unproven", "gap")}
    assert f"{sum(found.values())} items: {found['ok']} ok, {found['misprint']} misprint, {found['false']} false, " \
           f"{found['unproven']} unproven, {found['gap']} gap" in out
    assert "found  " not in out and "no counterexample in" in out
    assert "labelled displays plus" in out


def test_adversarial_search_finds_a_step_that_is_false_on_runs():
    """The search of stam.theory.papercheck.chainsearch finds eq25 (false on actual runs) and none for eq36."""
    from stam.theory.papercheck import chainsearch

    hit = chainsearch.search("eq25")
    assert hit["found"] is not None and hit["found"]["evidence"] == "run"
    miss = chainsearch.search("eq36")
    assert miss["found"] is None and len(miss["classes"]) == 36 and miss["runs"] >= len(miss["classes"]) * 64


def test_stored_findings_are_the_findings(tmp_path, monkeypatch, capsys):
    """paper-check stores what it derived, keyed on every source it is computed from: a second run
    prints the same bytes without evaluating an item; --json (which needs the MathML) is not served
    by a store without it, and a changed source (another key) recomputes."""
    monkeypatch.setenv("STAM_CACHE_DIR", str(tmp_path))
    real = audit.findings
    calls = []

    def counted(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(audit, "findings", counted)
    assert main(["paper-check", "--brief"]) == 0
    cold = capsys.readouterr().out
    assert len(calls) == 1 and len(list(tmp_path.glob("paper-check-*.json"))) == 1
    assert main(["paper-check", "--brief"]) == 0
    assert capsys.readouterr().out == cold and len(calls) == 1  # read back, nothing evaluated
    assert main(["paper-check", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(calls) == 2 and any("printed_mathml" in r for r in rows)  # MathML: computed and stored
    assert main(["paper-check", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == rows and len(calls) == 2
    monkeypatch.setattr(audit, "source_key", lambda: "another")  # a changed source
    assert main(["paper-check", "--brief"]) == 0
    assert capsys.readouterr().out == cold and len(calls) == 3
    assert [p.name for p in tmp_path.glob("paper-check-*.json")] == ["paper-check-another.json"]  # no stale files
    monkeypatch.setenv("STAM_CACHE_DIR", "off")
    assert main(["paper-check", "--brief"]) == 0 and len(calls) == 4


def test_source_key_follows_the_sources(tmp_path, monkeypatch):
    """The key is a digest of the theory sources: one changed byte in an item module changes it."""
    import shutil
    from pathlib import Path

    key = audit.source_key()
    assert key == audit.source_key() and len(key) == 24
    root = tmp_path / "theory"
    shutil.copytree(Path(audit.__file__).resolve().parents[1], root, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(audit, "__file__", str(root / "papercheck" / "audit.py"))
    assert audit.source_key() == key  # the same sources, elsewhere
    f = root / "papercheck" / "items" / "section2.py"
    f.write_text(f.read_text() + "\n# changed\n")
    assert audit.source_key() != key


def test_an_unusable_store_is_ignored(tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("STAM_CACHE_DIR", str(tmp_path / "file"))
    assert main(["paper-check", "--brief"]) == 0
    assert "items:" in capsys.readouterr().out
    bad = tmp_path / "store"
    monkeypatch.setenv("STAM_CACHE_DIR", str(bad))
    bad.mkdir()
    (bad / f"paper-check-{audit.source_key()}.json").write_text("{ broken")
    assert main(["paper-check", "--brief"]) == 0
    assert "items:" in capsys.readouterr().out
