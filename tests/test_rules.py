"""An optimiser is one file plus its preset (docs/contributing.md, "An optimiser"): a toy update rule
written in a temporary package, outside the tree, registered with :func:`stam.rules.register`, with its
preset added to the presets (``presets.signbc``, nothing else), is the default of ``--algo signbc``, has
its declared search space sampled by ``stam tune``'s search, and trains a network through the one trainer
(:class:`stam.dnn.batched.Trainer`) and through the generic torch.optim form built from it
(:mod:`stam.dnn.optim_common`), the two step for step alike, with no other file of the toolkit edited.
And the rules of :mod:`stam.rules` are what every reader sees."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

TOY = '''
"""sign-BC: BinaryConnect's step on the sign of the gradient (a toy, for the test only)."""
from stam.rules import UpdateRule, register
from stam.steps import QuantizedState, as_batch_scalar


def sign_bc_step(state, grad, ops, lr):
    """U+ = U - lr sign(grad), W~+ = Proj_Q(U+) (the pure step, array-agnostic)."""
    u1 = state.u - lr * grad.sign()
    return QuantizedState(u1, ops.prox_F(u1, lr))


class SignBC(UpdateRule):
    name, label, equation, color, marker = "signbc", "sign-BC", "BC on sign(grad)", "vermillion", "D"
    hyper = ("lr", "weight_decay")
    search_space = {"lr": {"log_uniform": [1e-3, 1e-1]}}
    optimizer_name = "SignBC"
    arguments = ("lr", ("weight_decay", 0.0))
    positive = ("lr",)

    def init(self, w, hyper, q):
        return QuantizedState(w.clone(), q.prox_F(w, 0.0))

    def step(self, state, grad, hyper, q):
        return sign_bc_step(state, grad, q, as_batch_scalar(hyper["lr"], state.u))


RULE = register(SignBC())
'''

SCRIPT = '''
import json, sys
import torch
sys.path.insert(0, {tmp!r})
import toyrules.signbc as toy
from stam import rules
from stam.dnn import batched, catalog, data as data_mod, epochs as ep, loop, optim, presets, tunespace
from stam.dnn.models import build_model, param_groups

# its preset, as the entry presets.signbc of dnn/presets.json: the one place besides its file
presets.table()["presets"]["signbc"] = {{"algo": "signbc", "label": "sign-BC", "source": "a toy",
                                        "hyper": {{"lr": 0.002, "weight_decay": 1e-3}}}}
preset = presets.resolve(None, "signbc", "digits")  # its default preset: its only one
trials = tunespace.sample_trials("signbc", 8, 0)
data = data_mod.load("digits")
tr = batched.Trainer([batched.Config(preset, 0)], batched.Task(data, "mlp", 1.0), 64, epochs=2, compile=False, bn_images=0)
losses = [float(tr.train_epoch(e).train_loss[0]) for e in (1, 2)]
trained = {{k: v[0] for k, v in tr.weights("float").items()}}
acc = float(tr.accuracy("test", "binary")[0])

torch.manual_seed(0)
net = build_model("mlp", data.num_classes, data.image_shape, 1.0)
opt = loop.make_optimizer("signbc", param_groups(net), preset.at(1))
gen, n = torch.Generator().manual_seed(0), len(data.train_x)
hand = []
for epoch in (1, 2):
    perm, total = torch.randperm(n, generator=gen), 0.0
    for s in range(ep.steps_per_epoch(n, 64)):
        idx = perm[s * 64 : (s + 1) * 64]
        loss, _ = loop.train_step(net, opt, data.train_x[idx], data.train_y[idx], data)
        total += float(loss) * len(idx)
    hand.append(total / n)
with loop.float_weights(opt):
    diff = max(float((p - trained[k]).abs().max()) for k, p in net.named_parameters())
print(json.dumps({{"names": list(catalog.NAMES), "live": [a.name for a in catalog.algorithms()], "rules": list(rules.NAMES),
                  "class": type(opt).__name__, "same_class": type(opt) is catalog.algorithm("signbc").optimizer_class(),
                  "losses": losses, "hand": hand, "diff": diff, "acc": acc, "label": catalog.algorithm("signbc").label,
                  "preset": preset.name, "trials": trials}}))
'''


def test_a_toy_rule_in_a_package_of_its_own_trains_through_the_trainer_and_the_adapter(tmp_path):
    pkg = tmp_path / "toyrules"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "signbc.py").write_text(TOY)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT.format(tmp=str(tmp_path)))], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["rules"][-1] == "signbc" and got["live"][-1] == "signbc" and got["label"] == "sign-BC"
    assert got["names"] == got["live"]  # registered before the catalog was read: a choice like the built-in ones
    assert got["class"] == "SignBC" and got["same_class"]
    assert got["preset"] == "signbc"  # the default of --algo signbc, derived: no other entry names it
    lrs = [t["lr"] for t in got["trials"]]  # its declared space, sampled: lr alone, in [1e-3, 1e-1] (4 significant digits)
    assert all(list(t) == ["lr"] for t in got["trials"]) and len(set(lrs)) == 8
    assert all(1e-3 * (1 - 1e-3) <= v <= 1e-1 * (1 + 1e-3) for v in lrs)
    assert min(lrs) < 1e-2 < max(lrs)  # quasi-random: both halves of the log range are hit
    # the one trainer (R = 1) and the generic torch.optim form run the same step: same losses, same weights
    for a, b in zip(got["losses"], got["hand"]):
        assert abs(a - b) <= 1e-4 * abs(b)
    assert got["diff"] <= 1e-4
    assert got["losses"][1] < got["losses"][0] and got["acc"] > 50  # it learns digits (chance: 10%)


def test_the_built_in_rules_are_the_modules_of_the_package_in_the_papers_order():
    import pkgutil

    import stam.rules as rules

    modules = {m.name for m in pkgutil.iter_modules(rules.__path__)} - {"base"}
    assert {type(r).__module__.rsplit(".", 1)[1] for r in rules.RULES} == modules
    assert rules.NAMES == ("stam", "bc", "br", "psgd", "float")
    assert rules.rule("br") is rules.RULES[rules.NAMES.index("br")] and not hasattr(rules, "Rule")  # one name: UpdateRule


def test_a_rule_name_is_declared_once():
    import pytest

    import stam.rules as rules

    class Again(type(rules.rule("bc"))):
        pass

    with pytest.raises(ValueError, match="declared twice"):
        rules.register(Again())
    with pytest.raises(ValueError, match="UpdateRule instance"):
        rules.register("bc")
    assert rules.register(rules.rule("bc")) is rules.rule("bc")  # the same rule again: nothing changes


def test_the_default_preset_is_the_rules_declared_one_or_its_only_one(monkeypatch):
    """``stam train --algo A`` without ``--preset`` runs the preset the rule declares (STAM: Our3, on CIFAR-100 the
    Our3 of Section sub:3.3) or, where it declares none, its one preset; more than one, or none, is a one-line
    error naming the candidates, and so is a declared preset that is another algorithm's."""
    import pytest

    import stam.rules as rules
    from stam.datasets import DATASET_NAMES
    from stam.dnn import presets
    from stam.errors import UsageError

    table = dict(presets.table()["presets"])  # a copy, edited below: the process's table keeps its order
    monkeypatch.setitem(presets.table(), "presets", table)
    for r in rules.RULES:
        mine = [n for n, e in table.items() if e["algo"] == r.name]
        for dataset in DATASET_NAMES:
            name = presets.default_preset(r.name, dataset)
            assert name in mine and (r.paper_preset is not None or mine == [name])
    assert [presets.default_preset("stam", d) for d in ("cifar10", "cifar100", "digits")] == ["our3", "our3-cifar100", "our3"]
    monkeypatch.setitem(table, "bc2", {**table["bc"], "label": "BC2"})
    with pytest.raises(UsageError, match=r"algorithm bc has presets bc, bc2 in presets.json; .*paper_preset"):
        presets.resolve(None, "bc", "digits")
    monkeypatch.delitem(table, "psgd")
    with pytest.raises(UsageError, match="algorithm psgd has no preset"):
        presets.default_preset("psgd", "digits")
    monkeypatch.setattr(type(rules.rule("stam")), "paper_preset", "bc")
    with pytest.raises(UsageError, match=r"'bc' that the rule stam declares is not one of its presets .*\(our1, our2, our3, our3-cifar100\)"):
        presets.default_preset("stam", "cifar10")
