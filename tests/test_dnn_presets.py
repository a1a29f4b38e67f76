"""Presets of Table para / Section sub:3.3 and the schedule language."""

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stam.dnn import presets as P
from stam.dnn.catalog import NAMES
from stam.errors import UsageError
from stam.dnn import tunespace


def our3_reference(e):
    """Table para, row Our3, written out by hand (epochs from 1)."""
    if e <= 80:
        return 8.0, 0.5, 1000.0
    gamma = 15.0
    for _ in range(82, e + 1):
        gamma = max(0.995 * gamma, 0.3)
    beta = 1000.0
    for _ in range(81, e + 1):
        beta = max(0.9999 * beta, 920.0)
    return gamma, 4.0, beta


def lr_reference(e):
    lr = 5e-4
    for t in range(1, e + 1):
        if 240 <= t <= 360 and t % 20 == 0:
            lr *= 0.1
    return lr


@pytest.mark.parametrize("e", [1, 80, 81, 82, 83, 200, 500, 861, 862, 1000])
def test_our3_matches_table_para(e):
    h = P.resolve("our3", "stam", "cifar10").at(e)
    g, lam, beta = our3_reference(e)
    assert h["gamma"] == pytest.approx(g, rel=1e-12) and h["lam"] == lam and h["beta"] == pytest.approx(beta, rel=1e-12)


@pytest.mark.parametrize("e", [1, 239, 240, 259, 260, 300, 360, 361, 1000])
@pytest.mark.parametrize("name", ["psgd", "bc", "br", "float"])
def test_lr_schedule_matches_table_para(e, name):
    assert P.resolve(name, None, "cifar10").at(e)["lr"] == pytest.approx(lr_reference(e), rel=1e-12)


def test_cifar100_variant_and_br_switch():
    p = P.resolve(None, "stam", "cifar100")
    assert p.name == "our3-cifar100"
    assert p.at(350) == {"gamma": 10.0, "lam": 0.8, "beta": 1000.0}
    assert p.at(351)["gamma"] == 3.0 and p.at(351)["lam"] == 15.0 and p.at(351)["beta"] == pytest.approx(999.0)
    assert p.at(1000)["gamma"] == pytest.approx(max(3 * 0.99**649, 5e-3))
    assert p.at(1000)["beta"] == 920.0
    for dataset, k in (("cifar10", 250), ("cifar100", 200), ("digits", 250)):
        br = P.resolve("br", None, dataset)
        assert not br.at(k)["project"] and br.at(k + 1)["project"]
        assert br.at(k)["lam"] == pytest.approx(1.02 ** (k - 1))


def test_every_preset_is_valid_and_sourced():
    for name, entry in P.table()["presets"].items():
        assert entry["algo"] in NAMES and entry["source"]
        for key, spec in entry["hyper"].items():
            assert key in P.ALGO_HYPER[entry["algo"]]
            P.check_spec(key, spec)
        assert set(entry["hyper"]) == set(P.ALGO_HYPER[entry["algo"]])


def test_schedule_scale_maps_thresholds_proportionally():
    p = P.resolve("our3", None, "digits", schedule_scale="auto", epochs=100)
    assert p.schedule_scale == 0.1
    # run epoch e stands for paper epochs ((e-1)/s, e/s] and follows the first of them
    assert [p.paper_epoch(e) for e in (1, 2, 8, 9, 100)] == [1, 11, 71, 81, 991]
    assert p.at(8)["lam"] == 0.5 and p.at(9)["lam"] == 4.0 and p.at(9)["gamma"] == 15.0  # set at 81, decays from 82
    assert p.at(100)["gamma"] == pytest.approx(0.3)
    br = P.resolve("br", None, "digits", schedule_scale=0.1)
    assert not br.at(25)["project"] and br.at(26)["project"]  # paper epochs 241 and 251 > K = 250
    assert [P.resolve("our3", None, "digits", schedule_scale=s).paper_epoch(1) for s in (0.002, 0.2, 1.0)] == [1, 1, 1]
    five = P.resolve("our3", None, "digits", schedule_scale=0.2)  # 1 / 0.2 must not round down to 4.999...
    assert [five.paper_epoch(e) for e in (1, 2, 17, 200)] == [1, 6, 81, 996]
    assert [P.resolve("our3", None, "digits").paper_epoch(e) for e in (1, 80, 81, 1000)] == [1, 80, 81, 1000]


def test_stage_changes_of_the_cifar100_variant():
    """Section sub:3.3: 350 epochs of (gamma, lambda, beta) = (10, 0.8, 1e3), then gamma = 3 and
    lambda = 15 set at epoch 351 (gamma decays from 352), beta decaying from 351."""
    p = P.resolve(None, "stam", "cifar100")
    assert p.name == "our3-cifar100"
    assert p.at(350) == {"gamma": 10.0, "lam": 0.8, "beta": 1000.0}
    assert p.at(351) == {"gamma": 3.0, "lam": 15.0, "beta": pytest.approx(999.0)}
    assert p.at(352)["gamma"] == pytest.approx(2.97) and p.at(1000)["gamma"] == pytest.approx(max(3 * 0.99**649, 5e-3))
    assert p.at(1000)["beta"] == 920.0


def test_overrides():
    p = P.resolve("our3", None, "cifar10", {"gamma": 0.1, "beta": [{"from": 1, "value": 500}, {"from": 3, "value": 600}]})
    assert p.at(1)["gamma"] == 0.1 and p.at(2)["beta"] == 500 and p.at(3)["beta"] == 600 and p.label == "Our3*"
    assert P.parse_override("weight-decay=1e-4") == ("weight_decay", 1e-4)
    bad = [
        (dict(name="our3", algo="bc"), "is for --algo stam"),
        (dict(name="our9", algo=None), "unknown preset"),
        (dict(name="our3", algo=None, overrides={"lr": 0.1}), "allowed: gamma, lam, beta"),
        (dict(name="our3", algo=None, overrides={"gamma": -1}), "gamma"),
        (dict(name="our3", algo=None, overrides={"beta": 0}), "> 0"),
        (dict(name="our3", algo=None, overrides={"gamma": [{"from": 2, "value": 1}]}), "start at epoch 1"),
        (dict(name="our3", algo=None, overrides={"gamma": [{"from": 1, "value": 1, "decay": {"f": 2}}]}), "decay"),
        (dict(name="our3", algo=None, schedule_scale=0), "schedule-scale"),
        (dict(name="our3", algo=None, overrides={"gamma": [{"from": 1, "value": 1, "decay": {"factor": 0.9, "start": "a"}}]}),
         "'start' must be an epoch number"),
        (dict(name="our3", algo=None, overrides={"gamma": [{"from": 1, "value": 1, "decay": {"factor": 0.9, "until": 2.5}}]}),
         "'until' must be an epoch number"),
        (dict(name="our3", algo=None, overrides={"gamma": [{"from": 1, "value": 1, "decay": {"factor": 0.9, "min": "x"}}]}),
         "decay 'min'"),
        (dict(name="br", algo=None, overrides={"switch_epoch": 0.5}), "must be an integer"),
        (dict(name="br", algo=None, overrides={"switch_epoch": 0}), "> 0"),
    ]
    for kw, match in bad:
        with pytest.raises(UsageError, match=match):
            P.resolve(kw["name"], kw["algo"], "cifar10", kw.get("overrides"), kw.get("schedule_scale", 1.0))
    with pytest.raises(UsageError, match="KEY=VALUE"):
        P.parse_override("gamma")
    with pytest.raises(UsageError, match="JSON schedule"):
        P.parse_override("gamma=fast")


@given(
    dv=st.floats(0, 100), factor=st.floats(0.5, 1.0), start=st.integers(1, 30), every=st.integers(1, 7),
    until=st.integers(1, 60), lo=st.floats(0, 1), epoch=st.integers(1, 80),
)
def test_closed_form_equals_the_recursion(dv, factor, start, every, until, lo, epoch):
    """For a decay (factor <= 1) from v0 >= min, clip(v0 f^n) equals Table para's recursion
    v <- max(f v, min) applied at the decay epochs."""
    v0 = lo + dv
    spec = [{"from": 1, "value": v0, "decay": {"factor": factor, "start": start, "every": every, "until": until, "min": lo}}]
    v = v0
    for t in range(1, epoch + 1):
        if t >= start and t <= until and (t - start) % every == 0:
            v = max(factor * v, lo)
    assert P.value_at(spec, epoch) == pytest.approx(v, rel=1e-9)


def test_paper_results_are_tables_cifar_res_and_cifar100_res():
    r = P.paper_results()
    assert r["cifar10"]["vgg11"]["Our3"] == 90.71 and r["cifar10"]["resnet18"]["Our1"] == 93.71
    assert r["cifar100"]["vgg16"]["Our3"] == 71.26 and r["cifar100"]["columns"] == ["Float", "BC", "BR", "Our3"]
    assert math.isclose(r["cifar10"]["vgg16"]["PSGD"], 18.84)
    json.dumps(r)


@pytest.mark.parametrize("name", __import__("stam.dnn.catalog", fromlist=["NAMES"]).NAMES)
def test_each_algorithm_of_the_catalog_is_complete(name):
    """An algorithm declared in stam.dnn.catalog has its optimiser class, its batched rule, a paper preset setting
    exactly its hyperparameters, a search space for `stam tune`, and is a choice of `stam train`."""
    import torch

    from stam.cli import build_parser
    from stam.dnn import catalog

    a = catalog.algorithm(name)
    assert issubclass(a.optimizer_class(), torch.optim.Optimizer)
    from stam.rules.base import UpdateRule

    assert isinstance(a.rule, UpdateRule)  # its batched form (maps, tuning)
    preset = P.table()["presets"][P.default_preset(name, "cifar10")]
    assert preset["algo"] == name and set(preset["hyper"]) == set(a.hyper)
    assert tunespace.search_space(name)  # declared in presets.json
    args = build_parser().parse_args(["train", "--algo", name, "--model", "mlp", "--dataset", "digits"])
    assert args.algo == name
    with pytest.raises(KeyError, match="choose one of: stam, bc, br, psgd, float"):
        catalog.algorithm("adam")


def test_table_columns_and_algorithm_order_come_from_the_presets_file():
    """The paper's column order (Float, PSGD, BC, BR, Our1..3) is the order P.json lists its
    presets: stam table and the training figure read it there (no second list)."""
    assert P.columns() == ["Float", "PSGD", "BC", "BR", "Our1", "Our2", "Our3"]
    assert P.algorithm_order() == ["float", "psgd", "bc", "br", "stam"]
    assert set(P.algorithm_order()) == set(NAMES)
