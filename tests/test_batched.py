"""The batched trainer (stam.dnn.batched), the pure baseline steps, tuning and the digits map."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.steps import QuantizedState, bc_step, br_relax, br_step, psgd_step
from stam.dnn import batched, catalog, compiled, presets, sweep, tune
from stam.dnn import tunetext
from stam.dnn import tunestats
from stam.dnn import tunespace
from stam.dnn.compiled import update_fn
from stam.dnn.epochs import select_epoch
from stam.errors import UsageError
from stam.operators import IndicatorQ
from stam.quantize import project_Q
from stam.dnn import wide

OVERRIDES = {"stam": {"gamma": 1.0, "lam": 2.0, "beta": 20.0}, "bc": {"lr": 0.05}, "br": {"lr": 0.05},
             "psgd": {"lr": 0.05}, "float": {"lr": 0.05}}


@pytest.fixture(scope="module")
def task():
    torch.set_num_threads(1)
    return batched.digits_task(val_fraction=0.1, split_seed=0)


def _cfg(algo, epochs, seed=0, **over):
    return batched.Config(presets.resolve(None, algo, "digits", {**OVERRIDES[algo], **over}, "auto", epochs), seed)


# --------------------------------------------------------------------------- pure steps

@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.floats(1e-3, 1.0), st.floats(0.01, 100.0))
def test_br_step_is_bc_after_the_switch_and_the_relaxation_before(seed, lr, lam):
    g = torch.Generator().manual_seed(seed)
    u, grad = torch.randn(3, 7, generator=g, dtype=torch.float64), torch.randn(3, 7, generator=g, dtype=torch.float64)
    s = QuantizedState(u, project_Q(u, None))
    ops = IndicatorQ(None)
    assert torch.equal(br_step(s, grad, ops, lr, lam, relaxed=False).w, bc_step(s, grad, ops, lr).w)
    relaxed = br_step(s, grad, ops, lr, lam, relaxed=True)
    assert torch.allclose(relaxed.w, br_relax(u - lr * grad, ops, lam))
    # per-run phases: run 0 relaxed, runs 1, 2 projecting
    mask = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64).view(3, 1)
    mixed = br_step(s, grad, ops, lr, lam, relaxed=mask)
    assert torch.allclose(mixed.w[0], relaxed.w[0]) and torch.allclose(mixed.w[1:], bc_step(s, grad, ops, lr).w[1:])
    # the relaxed point lies between U and its projection (eq. (BR))
    p = project_Q(u - lr * grad, None)
    assert torch.all((relaxed.w - p).abs() <= (u - lr * grad - p).abs() + 1e-12)
    # PSGD does not feed the projection back: the forward weights are U^{t+1} itself (up to the
    # rounding of the one-pass u - lr grad)
    ps = psgd_step(s, grad, ops, lr)
    assert ps.w is ps.u and torch.allclose(ps.w, u - lr * grad, rtol=1e-15, atol=1e-15)


# --------------------------------------------------------------------------- the trainer

def _hand_loop(algo, model, width, data, overrides, epochs, bs, seed, keep_float=()):
    """The reference: a training loop written by hand with the torch.optim classes (the public API,
    :mod:`stam.dnn.loop`): per epoch the mean loss, the test accuracies with binary and float
    weights, and STAM's mean stationarity proxies."""
    from stam.dnn import loop
    from stam.dnn.models import build_model, param_groups

    preset = presets.resolve(None, algo, data.name, overrides, "auto", epochs)
    torch.manual_seed(seed)
    net = build_model(model, data.num_classes, data.image_shape, width)
    opt = loop.make_optimizer(algo, param_groups(net, keep_float), preset.at(1), proxies=True)
    gen, gen_aug = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed + 1)
    fmt = compiled.image_layout("cpu", data.train_x.dim(), 1)  # the trainer's layout: the same arithmetic
    log = []
    for epoch in range(1, epochs + 1):
        loop.apply_hyper(opt, algo, preset.at(epoch))
        prox = []
        record = (lambda: prox.append([float(v) for v in opt.stationarity_proxies().values()])) \
            if hasattr(opt, "stationarity_proxies") else None
        loss = loop.epoch(net, opt, data, bs, gen, gen_aug, memory_format=fmt, after_step=record)
        with loop.binary_weights(opt):
            binary = loop.evaluate(net, data)
        with loop.float_weights(opt):
            flt = loop.evaluate(net, data)
        mean = [sum(c) / len(c) for c in zip(*prox)] if prox else [None, None]
        log.append({"train_loss": loss, "test_acc_binary": binary, "test_acc_float": flt, "proxy_grad": mean[0], "proxy_z": mean[1]})
    return log


def _close_logs(got, ref, n_test):
    assert len(got) == len(ref)
    for a, b in zip(got, ref):
        assert math.isclose(a["train_loss"], b["train_loss"], rel_tol=1e-4)
        for key in ("test_acc_binary", "test_acc_float"):
            assert abs(a[key] - b[key]) <= 100 / n_test + 1e-9, key  # at most one image differs
        for key in ("proxy_grad", "proxy_z"):
            assert (a[key] is None) == (b[key] is None) and (a[key] is None or math.isclose(a[key], b[key], rel_tol=1e-3)), key


@pytest.mark.parametrize("algo", catalog.NAMES)
def test_stam_train_follows_the_torch_optim_classes_step_for_step(tmp_path, algo):
    """`stam train` (the one trainer, R = 1) is the loop one writes by hand with the torch.optim
    classes: same start, same minibatches, same update, same BatchNorm; the losses, the binary and
    float test accuracies and STAM's stationarity proxies of every epoch agree."""
    from stam.dnn import data as data_mod
    from stam.dnn.params import TrainConfig
    from stam.dnn.train import train

    epochs = 2
    train(TrainConfig(model="mlp", dataset="digits", algo=algo, overrides=OVERRIDES[algo], epochs=epochs, batch_size=64,
                    schedule_scale="auto", val_fraction=None, out=str(tmp_path / "r"), echo=False, progress=False, device="cpu",
                    proxies=algo == "stam"))
    log = [json.loads(line) for line in (tmp_path / "r" / "log.jsonl").read_text().splitlines()]
    data = data_mod.load("digits")
    _close_logs(log, _hand_loop(algo, "mlp", 1.0, data, OVERRIDES[algo], epochs, 64, 0), len(data.test_y))
    assert (log[0]["proxy_grad"] is not None) == (algo == "stam")


@pytest.mark.parametrize("model, width, algo", [("cnn", 0.25, "stam"), ("vgg11", 0.0625, "stam"), ("vgg16", 0.0625, "bc"),
                                               ("resnet18", 0.0625, "br"), ("mlp", 0.5, "psgd")])
def test_the_trainer_follows_the_torch_optim_classes_for_every_model(tmp_path, model, width, algo):
    """For every model (CIFAR-shaped ones on a fake CIFAR-10 with crops and flips, the others on
    digits) `stam train` through the wide network is the hand-written torch.optim loop; and
    train_batched (tune, map) with R = 1 is `stam train`."""
    from test_dnn_data import write_fake_cifar

    from stam.dnn import data as data_mod
    from stam.dnn.params import TrainConfig
    from stam.dnn.train import train

    cifar = model in ("vgg11", "vgg16", "resnet18")
    dataset = "cifar10" if cifar else "digits"
    sums = write_fake_cifar(tmp_path, "cifar10", n=12) if cifar else None
    data = data_mod.split_validation(data_mod.load(dataset, tmp_path, checksums=sums), 0.2, 0)
    epochs, bs = 2, 16
    train(TrainConfig(model=model, width=width, dataset=dataset, algo=algo, overrides=OVERRIDES[algo], epochs=epochs, batch_size=bs,
                    seed=3, schedule_scale="auto", val_fraction=0.2, data_dir=str(tmp_path), out=str(tmp_path / "r"), echo=False,
                    progress=False, device="cpu", checksums=sums, proxies=algo == "stam"))
    log = [json.loads(line) for line in (tmp_path / "r" / "log.jsonl").read_text().splitlines()]
    _close_logs(log, _hand_loop(algo, model, width, data, OVERRIDES[algo], epochs, bs, 3), len(data.test_y))
    cfg = batched.Config(presets.resolve(None, algo, dataset, OVERRIDES[algo], "auto", epochs), 3)
    res = batched.train_batched([cfg], batched.Task(data, model, width), epochs, bs, evaluate_test=True, compile=False)[0]
    for a, b in zip(res["log"], log):
        assert a["train_loss"] == b["train_loss"] and a["val_acc_binary"] == b["val_acc_binary"]
        assert a["test_acc_float"] == b["test_acc_float"] and a["sign_ever"] == b["sign_flips"]["ever"]


def test_runs_in_one_batch_do_not_interfere(task):
    """Three configurations trained together give what each gives alone (one epoch)."""
    cfgs = [_cfg("stam", 1, gamma=0.5), _cfg("stam", 1, lam=8.0, seed=3), _cfg("stam", 1, beta=100.0, seed=5)]
    together = batched.train_batched(cfgs, task, 1, 32, compile=False)
    for cfg, res in zip(cfgs, together):
        alone = batched.train_batched([cfg], task, 1, 32, compile=False)[0]
        a, b = res["log"][0], alone["log"][0]
        assert math.isclose(a["train_loss"], b["train_loss"], rel_tol=1e-4)
        assert abs(a["val_acc_binary"] - b["val_acc_binary"]) <= 100 / len(task.data.val_y) + 1e-9


def test_common_random_numbers_and_no_test_reads_unless_asked(task):
    same = batched.train_batched([_cfg("bc", 2), _cfg("bc", 2)], task, 2, 64, compile=False)
    assert same[0]["log"] == same[1]["log"]
    assert "test_acc_binary" not in same[0]["log"][0]  # tuning trials never read the test set
    with_test = batched.train_batched([_cfg("bc", 1)], task, 1, 64, evaluate_test=True, compile=False)
    assert 0 <= with_test[0]["log"][0]["test_acc_binary"] <= 100


def test_divergence_is_marked_and_sign_flips_are_fractions(task):
    res = batched.train_batched([_cfg("float", 2, lr=1e30), _cfg("float", 2, lr=1e-12), _cfg("float", 2)], task, 2, 64,
                                compile=False)
    assert res[0]["diverged_epoch"] == 1 and res[0]["log"] == []
    frozen, moving = res[1]["log"], res[2]["log"]
    assert all(r["sign_since_init"] == 0 and r["sign_ever"] == 0 for r in frozen)
    for r in moving:
        assert 0 <= r["sign_epoch"] <= 1 and 0 <= r["sign_since_init"] <= r["sign_ever"] <= 1
    assert moving[-1]["sign_ever"] > 0


@pytest.mark.parametrize("algo", catalog.NAMES)
def test_compiled_update_is_the_flat_update_layer_by_layer(task, algo):
    """Under torch.compile the update steps each layer (block of Q) on its own and concatenates
    (``batched._step_by_layer``): every state tensor, the float parameters and the proxies equal
    the flat step's (which eager mode runs), at R = 3 with per-run hyperparameters."""
    cfgs = [_cfg(algo, 2, seed=s, **({"lam": 0.5 + s} if algo in ("stam", "br") else {})) for s in range(3)]
    tr = batched.Trainer(cfgs, task, 32, compile=False, proxies=True)
    assert len(tr.qs[0].blocks.sizes) > 1  # several layers in the buffer: the split is exercised
    hyper = batched._hyper_at(tr.configs, 1, tr.device)
    gen = torch.Generator().manual_seed(1)
    gw = [torch.randn(st[0].shape, generator=gen) for st in tr.state]
    gf = torch.randn(tr.floats.shape, generator=gen)
    flat = compiled.update(tr.rule, tr.state, tr.floats, tr.fmom, gw, gf, hyper, tr.qs, proxies=True)
    comp = update_fn(algo, True, True)(tr.state, tr.floats, tr.fmom, gw, gf, hyper, tr.qs)
    for a, b in zip(flat[0][0], comp[0][0]):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(comp[1], flat[1])
    torch.testing.assert_close(comp[2], flat[2])
    assert (flat[3] is None) == (comp[3] is None)
    for a, b in zip(flat[3] or (), comp[3] or ()):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-8)


@pytest.mark.parametrize("algo", ["stam", "br"])
def test_compiled_update_equals_eager(task, algo):
    cfgs = [_cfg(algo, 1, seed=s) for s in range(4)]
    eager = batched.train_batched(cfgs, task, 1, 64, compile=False)
    comp = batched.train_batched(cfgs, task, 1, 64, compile=True)
    for a, b in zip(eager, comp):
        assert math.isclose(a["log"][0]["train_loss"], b["log"][0]["train_loss"], rel_tol=1e-4)


def test_select_epoch_uses_validation_and_the_earliest_tie():
    log = [{"epoch": 1, "val_acc_binary": 50.0}, {"epoch": 2, "val_acc_binary": 70.0}, {"epoch": 3, "val_acc_binary": 70.0},
           {"epoch": 4, "val_acc_binary": float("nan")}]
    assert select_epoch(log)["epoch"] == 2
    assert select_epoch([{"epoch": 1, "val_acc_binary": None}]) is None


# --------------------------------------------------------------------------- tuning

@pytest.mark.parametrize("algo", ["stam", "bc", "br", "psgd", "float"])
def test_trials_fill_the_declared_space_and_contain_the_papers_setting(algo):
    """The trials are the algorithm's own hyperparameters (what every consumer reads), and their
    coordinates (STAM: the step 1/beta, gamma*lambda, lambda/beta) fill the declared log ranges."""
    space = tunespace.search_space(algo)
    trials = tunespace.sample_trials(algo, 16, seed=3)
    assert trials == tunespace.sample_trials(algo, 16, seed=3) and trials != tunespace.sample_trials(algo, 16, seed=4)
    assert all(list(t) == [h for h in presets.ALGO_HYPER[algo] if h in t] for t in trials)  # its own names, in its order
    value = lambda v: v[0]["value"] if isinstance(v, list) else v  # noqa: E731
    paper = tunespace.to_coordinates(space, presets.resolve(None, algo, "cifar10").at(1))
    for key, dim in space.items():
        lo, hi = dim["log_uniform"]
        vals = [tunespace.to_coordinates(space, {h: value(v) for h, v in t.items()})[key] for t in trials]
        assert all(lo * (1 - 1e-3) <= v <= hi * (1 + 1e-3) for v in vals)  # 4 significant digits per hyperparameter
        # quasi-random: every quarter of the log range is hit
        quarters = {min(3, max(0, int(4 * (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo) + 1e-300)))) for v in vals}
        assert quarters == {0, 1, 2, 3} or lo == hi
        if (algo, key) == ("stam", "lam_over_beta"):  # the paper's pull 5e-4 lies below the CIFAR map's band (the rule says so)
            assert paper[key] < lo
        else:
            assert lo <= paper[key] <= hi


def test_stams_space_is_its_step_its_coupling_and_its_pull():
    """STAM with F = I_Q depends on (gamma, lam, beta) only through 1/beta, gamma*lam and lam/beta
    (eqs. (algy), (algx)): its space samples these, the step on BC's lr range."""
    space = tunespace.search_space("stam")
    assert tunespace.coordinates(space) == {"step": {"beta": -1}, "gamma_lam": {"gamma": 1, "lam": 1},
                                       "lam_over_beta": {"lam": 1, "beta": -1}}
    assert space["step"]["log_uniform"] == tunespace.search_space("bc")["lr"]["log_uniform"]
    assert space["lam_over_beta"]["log_uniform"][1] <= 1.0
    # the CIFAR-10 (gamma, lambda) map's working band, gamma*lambda in [3, 30] and lambda/beta in [0.01, 0.3],
    # lies inside with a margin; the digits map's signs move from gamma*lambda = 1.5
    (gl_lo, gl_hi), (pull_lo, pull_hi) = space["gamma_lam"]["log_uniform"], space["lam_over_beta"]["log_uniform"]
    assert gl_lo <= 1.5 and gl_hi >= 30 and pull_lo <= 0.01 and pull_hi >= 0.3
    t = tunespace.sample_trials("stam", 1, seed=0)[0]
    assert set(t) == {"gamma", "lam", "beta"}


@settings(max_examples=40, deadline=None)
@given(st.floats(1e-4, 1.0), st.floats(1.0, 1e3), st.floats(1e-4, 1.0))
def test_the_map_back_inverts_the_coordinates(step, gl, pull):
    space = tunespace.search_space("stam")
    h = tunespace.to_hyper("stam", space, {"step": step, "gamma_lam": gl, "lam_over_beta": pull})
    assert math.isclose(1 / h["beta"], step, rel_tol=1e-9) and math.isclose(h["gamma"] * h["lam"], gl, rel_tol=1e-9)
    assert math.isclose(h["lam"] / h["beta"], pull, rel_tol=1e-9)
    back = tunespace.to_coordinates(space, h)
    assert all(math.isclose(back[k], v, rel_tol=1e-9) for k, v in {"step": step, "gamma_lam": gl, "lam_over_beta": pull}.items())


def _map_of(rule, gammas, lams, beta=20.0):
    """A network map's rows: metric 90 where ``rule(gamma, lam)``, else 10."""
    return {"rows": [{"gamma": g, "lam": l, "beta": beta, "metric": 90.0 if rule(g, l) else 10.0} for l in lams for g in gammas]}


def test_the_working_fraction_of_a_space_from_a_map_and_the_chance_that_trials_find_it():
    """A map working exactly where gamma*lambda >= 1.5, on a fine grid: the share of the old box
    space (gamma in [1e-3, 30], lambda in [0.05, 30]) it gives is the share of the box above that
    line, computed by hand (area in the logarithms); the map's beta held fixed is named."""
    lg = [math.exp(math.log(1e-3) + i * (math.log(30) - math.log(1e-3)) / 59) for i in range(60)]
    ll = [math.exp(math.log(0.05) + i * (math.log(30) - math.log(0.05)) / 59) for i in range(60)]
    m = _map_of(lambda g, l: g * l >= 1.5, lg, ll)
    old = {"stam": {"gamma": {"log_uniform": [1e-3, 30.0]}, "lam": {"log_uniform": [0.05, 30.0]}, "beta": {"log_uniform": [5.0, 5e3]}}}
    got = tunestats.map_fraction(m, "stam", old, samples=4096)
    a, b, c = math.log(30 / 1e-3), math.log(30 / 0.05), math.log(1.5 / (1e-3 * 0.05))  # x + y >= c in [0, a] x [0, b]
    corner = max(0.0, a + b - c) ** 2 / 2  # the triangle above the line (the line cuts both far sides here)
    assert c >= max(a, b) and math.isclose(got["fraction"], corner / (a * b), abs_tol=0.02)  # grid steps: 0.17, 0.11 in log
    assert got["outside"] == 0 and set(got["held"]) == {"beta"} and got["cells"] == 3600
    # the rule's space at the map's step 1/20: lambda = 20 lambda/beta in [0.06, 20], gamma*lambda in [1, 30], all
    # on the map, which works on the share log(30/1.5)/log(30) of it (Sobol points: about 1/1024 apart)
    new = tunestats.map_fraction(m, "stam", samples=1024)
    assert math.isclose(new["fraction"], math.log(20) / math.log(30), abs_tol=0.02) and new["fraction"] > got["fraction"]
    assert new["outside"] == 0 and set(new["held"]) == {"step"}
    assert tunestats.map_fraction(m, "bc") is None  # the map is STAM's
    assert tunestats.find_probability(0.25, 4) == 1 - 0.75**4 and tunestats.find_probability(None, 4) is None


def test_the_working_fraction_from_the_trials_uses_one_bar_for_all():
    algos = [{"algo": "stam", "trials": [{"score": 95.0}, {"score": 20.0}, {"score": None}, {"score": 86.0}]},
             {"algo": "bc", "trials": [{"score": 50.0, "rung_scores": [90.0, 50.0]}, {"score": 85.0, "rung_scores": [85.0]}]}]
    got = tunestats.trial_fraction(algos)
    assert got["stam"]["bar"] == 0.9 * 95.0 and got["stam"]["fraction"] == 0.5  # 95 and 86 reach 85.5
    assert got["bc"]["fraction"] == 0.5  # the first rung's scores: 90 does, 85 does not
    # against its own best: STAM's bar is the same 85.5; BC's 81 (0.9 * 90), which both its first-rung scores reach
    assert (got["stam"]["own_fraction"], got["bc"]["own_bar"], got["bc"]["own_fraction"]) == (0.5, 0.9 * 90.0, 1.0)
    slow = [{"algo": "stam", "trials": [{"score": 40.0}, {"score": 38.0}, {"score": 10.0}]}, {"algo": "bc", "trials": [{"score": 60.0}]}]
    got = tunestats.trial_fraction(slow)  # STAM below the common bar (54) everywhere, yet 2 of 3 trials near its own best
    assert got["stam"]["fraction"] == 0 and got["stam"]["own_fraction"] == pytest.approx(2 / 3)
    assert tunestats.search_difficulty(slow, 4)["stam"]["trials"]["own_find"] == pytest.approx(1 - (1 / 3) ** 4)
    got = tunestats.trial_fraction(algos)
    d = tunestats.search_difficulty(algos, 4)
    assert d["bc"]["trials"]["find"] == 1 - 0.5**4 and d["bc"]["map"] is None
    # Float's float-weight accuracy is another network's: it never sets the binary methods' bar
    with_float = algos + [{"algo": "float", "trials": [{"score": 99.0}, {"score": 80.0}]}]
    got = tunestats.trial_fraction(with_float)
    assert got["stam"]["bar"] == 0.9 * 95.0 and got["stam"]["fraction"] == 0.5 and got["float"]["fraction"] == 0.5
    assert tunestats.trial_fraction(with_float[2:])["float"]["bar"] == 0.9 * 99.0  # alone, it sets its own


@pytest.mark.parametrize("spec, message", [
    ([{"from": 1, "value": 0.1, "warmup_cosine": {"until": 10}, "decay": {"factor": 0.5}}], "not both"),
    ([{"from": 1, "value": 5.0, "warmup_cosine": {"until": 10, "power": -1}}], "floor > 0"),
    ([{"from": 1, "value": 5.0, "warmup_cosine": {"until": 10, "warmup": 10}}], "warmup < until"),
    ([{"from": 1, "value": 5.0, "warmup_cosine": {"until": 10, "floor": 2}}], r"in \[0, 1\]"),
    ([{"from": 1, "value": 5.0, "warmup_cosine": {"until": 10, "power": 0}}], "other than 0"),
    ([{"from": 1, "value": 5.0, "warmup_cosine": {"until": 10, "lr": 1}}], "optional"),
])
def test_bad_warmup_cosine_is_a_usage_error(spec, message):
    with pytest.raises(UsageError, match=message):
        presets.check_spec("lr", spec)


def test_warmup_cosine_by_hand_and_one_family_for_every_step():
    """The shape at each epoch's centre: warm-up t/W, then f + (1-f)(1+cos(pi x))/2; scaled onto a
    run of E epochs it warms over the first W/1000 of it.  Every algorithm's step (lr; STAM's
    1/beta) follows the same multipliers under --schedule warmup-cosine."""
    shape = {"warmup": 50, "until": 1000, "floor": 1e-3}
    piece = [{"from": 1, "value": 2.0, "warmup_cosine": shape}]
    assert presets.value_at(piece, 1, time=25.0) == 1.0  # half-way up the warm-up
    x = (500 - 50) / 950
    assert math.isclose(presets.value_at(piece, 500, time=500.0), 2.0 * (1e-3 + (1 - 1e-3) * 0.5 * (1 + math.cos(math.pi * x))))
    assert math.isclose(presets.value_at(piece, 1000, time=2000.0), 2.0 * 1e-3)  # past the end: the floor
    E = 20
    steps = {}
    for algo in catalog.NAMES:
        trial = tunespace.sample_trials(algo, 1, 0, schedule="warmup-cosine")[0]
        p = presets.resolve(None, algo, "digits", trial, "auto", E)
        key, power = catalog.algorithm(algo).step
        steps[algo] = [p.at(e)[key] ** power for e in range(1, E + 1)]
        m = [presets.shape_multiplier(shape, (e - 0.5) * 1000 / E) for e in range(1, E + 1)]
        assert all(math.isclose(s / steps[algo][1], mm / m[1], rel_tol=1e-9) for s, mm in zip(steps[algo], m)), algo
    assert m[0] == 0.5 and 1 > m[1] > m[2] > m[-1] > 0  # a run of 20 epochs: epoch 1 at half the step, then the decay
    const = tunespace.sample_trials("stam", 1, 0)[0]
    assert all(isinstance(v, float) for v in const.values())  # the default keeps the sampled step constant


def test_recipes_and_schedules_are_declared_once_and_checked():
    assert set(presets.step_schedules()) >= {"constant", "warmup-cosine"} and presets.step_schedules()["constant"] is None
    assert presets.recipes()["standard"] == {"float": {"momentum": 0.9, "weight_decay": 5e-4}}
    trials = tunespace.sample_trials("float", 3, 0, recipe_name="standard")
    assert all(t["momentum"] == 0.9 and t["weight_decay"] == 5e-4 for t in trials)
    assert tunespace.sample_trials("bc", 3, 0, recipe_name="standard") == tunespace.sample_trials("bc", 3, 0)
    with pytest.raises(UsageError, match="--schedule 'cosine'"):
        tunespace.sample_trials("bc", 1, 0, schedule="cosine")
    with pytest.raises(UsageError, match="does not sample"):
        tunespace.sample_trials("stam", 1, 0, {"stam": {"gamma": {"log_uniform": [1, 2]}, "lam": {"log_uniform": [1, 2]}}},
                           schedule="warmup-cosine")


def test_float_with_the_standard_recipe_and_a_scheduled_step_follows_torch_optim(tmp_path):
    """Momentum 0.9, weight decay 5e-4 and a warm-up-cosine lr through `stam train --set` (the trial's
    overrides as they are) are the hand-written torch.optim.SGD loop, epoch for epoch; STAM with its
    scheduled 1/beta likewise."""
    from stam.dnn import data as data_mod
    from stam.dnn.params import TrainConfig
    from stam.dnn.train import train

    data = data_mod.load("digits")
    for algo in ("float", "stam"):
        over = tunespace.sample_trials(algo, 1, 0, schedule="warmup-cosine", recipe_name="standard")[0]
        out = tmp_path / algo
        train(TrainConfig(model="mlp", dataset="digits", algo=algo, overrides=over, epochs=2, batch_size=64, schedule_scale="auto",
                        val_fraction=None, out=str(out), echo=False, progress=False, device="cpu", proxies=algo == "stam"))
        log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
        _close_logs(log, _hand_loop(algo, "mlp", 1.0, data, over, 2, 64, 0), len(data.test_y))


def test_halving_rungs_and_promotion_by_hand():
    assert tunespace.halving_rungs(16, 30, 3) == [(16, 3), (6, 10), (2, 30)]  # 168 trial epochs instead of 480
    assert tunespace.halving_rungs(8, 30, 3) == [(8, 10), (3, 30)]
    assert tunespace.halving_rungs(2, 2, 2) == [(2, 1), (1, 2)] and tunespace.halving_rungs(5, 1, 2) == [(5, 1)]
    assert tunespace.promote([50.0, None, 70.0, 70.0, float("nan")], 2) == [2, 3]  # ties to the earlier trial
    assert tunespace.promote([None, 10.0], 2) == [0, 1]
    with pytest.raises(UsageError, match="at least 2"):
        tunespace.halving_rungs(4, 4, 1)


def test_tune_with_halving_promotes_on_validation_and_resumes(tmp_path, capsys):
    """--halving 2 with 4 trials and 2 epochs: every trial 1 epoch, the best 2 on validation 2
    epochs; the best trial is one of the last rung; a rerun trains nothing; the search difficulty
    is in the result and on stdout (from the trials, and from a map given with --map)."""
    from stam.cli import main

    committed = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "map_digits_default_2cores.json"
    m = json.loads(committed.read_text())
    if m.get("format", 1) == 1:  # fractions: as format 2 (percent)
        for r in m["rows"]:
            r.update({k: 100 * r[k] for k in ("metric", "metric_final", "metric_std") if r.get(k) is not None})
        m["format"] = 2
    (tmp_path / "map.json").write_text(json.dumps(m))
    argv = ["tune", "--algos", "stam,bc", "--trials", "4", "--halving", "2", "--n-seeds", "2", "--epochs", "2",
            "--batch-size", "64", "--no-paper", "--no-progress", "--schedule", "warmup-cosine", "--map", str(tmp_path / "map.json"),
            "--out", str(tmp_path / "t")]
    assert main(argv) == 0
    first = capsys.readouterr().out
    result = json.loads((tmp_path / "t" / "tune-digits.json").read_text())
    assert result["halving"] == {"eta": 2, "rungs": [{"trials": 4, "epochs": 1}, {"trials": 2, "epochs": 2}], "trial_epochs": 8}
    assert result["params"]["schedule"] == "warmup-cosine" and "successive halving by 2" in result["protocol"]
    for a in result["algorithms"]:
        first_rung = [t["rung_scores"][0] for t in a["trials"]]
        promoted = [i for i, t in enumerate(a["trials"]) if t["rung"] == 1]
        assert promoted == tunespace.promote(first_rung, 2)
        assert all(t["epochs"] == (2 if t["rung"] else 1) and len(t["rung_scores"]) == t["rung"] + 1 for t in a["trials"])
        assert a["best"]["rung"] == 1 and a["best"]["score"] == max(a["trials"][i]["score"] for i in promoted)
    d = result["search_difficulty"]
    assert d["bc"]["map"] is None and d["stam"]["map"]["cells"] == 64 and d["stam"]["map"]["held"] == {"step": pytest.approx(0.05)}
    assert "Search difficulty: STAM:" in first and "the map puts" in first
    jobs = sorted((tmp_path / "t" / "jobs").glob("*.json"))
    assert len(jobs) == 2 + 2 + 2  # rung 0, rung 1 (one job per algorithm each), the fresh seeds
    stamps = [p.stat().st_mtime_ns for p in jobs]
    assert main(argv) == 0
    assert [p.stat().st_mtime_ns for p in jobs] == stamps and capsys.readouterr().out == first
    old = dict(m, format=1, rows=[{**r, **{k: r[k] / 100 for k in ("metric", "metric_final", "metric_std", "metric_as_trained")
                                          if r.get(k) is not None}} for r in m["rows"]])  # a format-1 map (fractions)
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert main([*argv[:-4], "--map", str(tmp_path / "old.json"), "--out", str(tmp_path / "u")]) == 2
    assert "format" in capsys.readouterr().err and not (tmp_path / "u").exists()


def test_summarise_gives_the_t_interval():
    s = tunestats.summarise([90.0, 91.0, 92.0, 93.0, 94.0, None])
    assert s["n"] == 5 and s["mean"] == 92.0
    assert math.isclose(s["ci95"][1] - 92.0, 2.776445 * math.sqrt(2.5) / math.sqrt(5), rel_tol=1e-5)
    assert tunestats.summarise([98.0, 99.0, 100.0])["ci95"][1] == 100.0  # an accuracy's interval stays in [0, 100]
    two = tunestats.summarise([94.4, 94.4, 95.0])  # fewer than 3 distinct values: no interval (it would be degenerate)
    assert two["ci95"] is None and two["n"] == 3 and two["std"] > 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0, 100), st.floats(0, 100)), min_size=1, max_size=8), st.randoms())
def test_paired_differences_match_seeds_not_positions(accs, rnd):
    """STAM - BC and STAM - BR are differences of the runs of the same seed, whatever the order in which
    the finals list their seeds; their summary is summarise() of those differences (issue 35, point 4)."""
    seeds = [1000 + i for i in range(len(accs))]
    order = list(range(len(accs)))
    rnd.shuffle(order)  # BC's finals list the same seeds in another order
    final = lambda idx, k: {"seeds": [seeds[i] for i in idx], "test_acc": [accs[i][k] for i in idx], "diverged": 0}  # noqa: E731
    result = {"algorithms": [{"algo": "stam", "final": final(range(len(accs)), 0)}, {"algo": "bc", "final": final(order, 1)},
                             {"algo": "br", "final": final(order[::-1], 2)}, {"algo": "float", "final": final(order, 1)}]}
    got = tunestats.paired_differences(result)
    assert [(d["a"], d["b"]) for d in got] == [("stam", "bc"), ("stam", "br")]
    for d, k in zip(got, (1, 2)):
        want = tunestats.summarise([a[0] - a[k] for a in accs], bounds=(-100.0, 100.0))
        assert d["seeds"] == len(accs) and d["mean"] == pytest.approx(want["mean"], abs=1e-9)
        assert (d["ci95"] is None) == (want["ci95"] is None)
    lines = tunestats.paired_lines(result)
    assert len(lines) == 2 and lines[0].startswith("Paired difference STAM \u2212 BC ")


def test_paired_differences_appear_under_the_table_and_in_the_headline():
    fin = lambda accs: {"seeds": [1000, 1001, 1002], "test_acc": accs, "diverged": 0, **tunestats.summarise(accs)}  # noqa: E731
    result = {"params": {"epochs": 30, "trials": 16, "seeds": 3, "batch_size": 128}, "paper_rows": [], "dataset": "cifar10",
              "model": "vgg11", "width": 0.125,
              "algorithms": [{"algo": "stam", "label": "STAM", "trials": [], "final": fin([50.0, 52.0, 55.0])},
                             {"algo": "bc", "label": "BC", "trials": [], "final": fin([49.0, 50.0, 51.0])}]}
    d = tunestats.paired_differences(result)  # differences 1, 2, 4: mean 7/3, std sqrt(7/3), t(0.975, 2) = 4.302653
    assert len(d) == 1 and d[0]["mean"] == pytest.approx(7 / 3)
    assert d[0]["ci95"][1] - d[0]["mean"] == pytest.approx(4.302653 * math.sqrt(7 / 3) / math.sqrt(3), rel=1e-6)
    assert tunetext.format_table(result).splitlines()[-1] == tunestats.paired_lines(result)[0]
    assert tunetext.headline(result).endswith(f"; paired {tunestats.paired_text(d[0])}")
    assert "+2.3 [" in tunestats.paired_text(d[0])


def test_the_paper_rows_are_paired_too_after_the_tuned_pairs():
    """The paper's own protocol answers its question too: each STAM paper row (Our1-3) against BC's and
    BR's paper rows, matched by seed, under the tuned pairs (the headline keeps the tuned pairs)."""
    fin = lambda accs, seeds=(1000, 1001, 1002): {"seeds": list(seeds), "test_acc": accs, "diverged": 0, **tunestats.summarise(accs)}  # noqa: E731
    result = {"params": {"epochs": 30, "trials": 16, "seeds": 3, "batch_size": 128}, "dataset": "cifar10",
              "model": "vgg11", "width": 0.125,
              "algorithms": [{"algo": "stam", "label": "STAM", "trials": [], "final": fin([50.0, 52.0, 55.0])},
                             {"algo": "bc", "label": "BC", "trials": [], "final": fin([49.0, 50.0, 51.0])}],
              "paper_rows": [{"algo": "stam", "preset": "our3", "label": "Our3", "final": fin([40.0, 41.0, 45.0])},
                             {"algo": "bc", "preset": "bc", "label": "BC", "final": fin([36.0, 30.0, 38.0], (1002, 1001, 1000))},
                             {"algo": "psgd", "preset": "psgd", "label": "PSGD", "final": fin([10.0, 11.0, 12.0])}]}
    assert tunestats.paired_differences(result) == tunestats.paired_differences(result, paper=True)[:1]
    d = tunestats.paired_differences(result, paper=True)
    assert [(x["a"], x["b"], x.get("paper", False)) for x in d] == [("stam", "bc", False), ("stam", "bc", True)]
    assert d[1]["mean"] == pytest.approx(((40 - 38) + (41 - 30) + (45 - 36)) / 3)  # by seed, not by position
    assert tunestats.paired_text(d[1]).startswith("Our3 \u2212 BC, paper settings, +7.3 [")
    lines = tunetext.format_table(result).splitlines()
    assert lines[-2:] == tunestats.paired_lines(result) and lines[-1].startswith("Paired difference Our3")
    assert "Our3" not in tunetext.headline(result)


def test_a_budget_too_small_says_so_in_its_own_line():
    assert tunestats.budget_note({"epochs": 60, "trials": 16, "seeds": 5}) is None
    note = tunestats.budget_note({"epochs": 1, "trials": 2, "seeds": 5})
    assert note.startswith("smoke-test budget (1 epoch, 2 trials; comparisons need at least 5 epochs, 4 trials, 3 seeds)")
    result = {"params": {"epochs": 1, "trials": 2, "seeds": 2, "batch_size": 32}, "algorithms": [], "paper_rows": [], "dataset": "digits"}
    assert tunetext.headline(result).startswith(f"[{tunestats.budget_note(result['params'])}] ")
    assert tunestats.budget_note(result["params"]) in tunetext.table(result)[0]


@pytest.mark.parametrize("space, message", [
    ({"stam": {}}, "empty"),
    ({"stam": {"gamma": {"log_uniform": [10.0, 1.0]}}}, "low <= high"),
    ({"stam": {"lr": {"log_uniform": [1.0, 2.0]}}}, "not one of its hyperparameters"),
    ({"bc": {"lr": {"log_uniform": [1.0, 2.0]}}}, "unknown algorithm 'stam'"),
    ({"stam": {"x": {"log_uniform": [1.0, 2.0], "monomial": {"lr": 1}}}}, "monomial must map hyperparameters of stam"),
    ({"stam": {"gl": {"log_uniform": [1.0, 2.0], "monomial": {"gamma": 1, "lam": 1}},
               "g2l2": {"log_uniform": [1.0, 2.0], "monomial": {"gamma": 2, "lam": 2}}}}, "do not determine"),
])
def test_bad_search_spaces_are_usage_errors(space, message):
    from stam.errors import UsageError

    with pytest.raises(UsageError, match=message):
        tunespace.sample_trials("stam", 4, 0, space)


def test_tune_end_to_end_resumes_without_rerunning(tmp_path, capsys):
    from stam.cli import main

    argv = ["tune", "--algos", "stam,bc", "--trials", "2", "--n-seeds", "2", "--epochs", "1", "--batch-size", "64",
            "--no-paper", "--no-progress", "--out", str(tmp_path / "t")]
    assert main(argv) == 0
    first = capsys.readouterr().out
    result = json.loads((tmp_path / "t" / "tune-digits.json").read_text())
    assert [a["algo"] for a in result["algorithms"]] == ["stam", "bc"]
    for a in result["algorithms"]:
        assert len(a["trials"]) == 2 and a["best"]["score"] == max(t["score"] for t in a["trials"])
        assert a["final"]["seeds"] == [tune.FINAL_SEED0, tune.FINAL_SEED0 + 1]
    jobs = sorted((tmp_path / "t" / "jobs").glob("*.json"))
    stamps = [p.stat().st_mtime_ns for p in jobs]
    assert main(argv) == 0  # resume: every job is already stored
    assert [p.stat().st_mtime_ns for p in jobs] == stamps
    assert capsys.readouterr().out == first
    assert "95% interval" in first and "tuned, 2 trials" in first


@pytest.mark.parametrize("extra, bad", [
    (["--trials", "0"], "--trials"), (["--algos", "stam,adam"], "--algos"), (["--n-seeds", "1"], "--n-seeds"),
    (["--val-fraction", "1"], "--val-fraction"), (["--scheduler", "nonsense::"], "scheduler"),
    (["--model", "vgg11"], "--model vgg11 does not take digits's 1x8x8 images"), (["--width", "0"], "--width"),
    (["--dataset", "cifar10"], "CIFAR-10 not found"),
])
def test_tune_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, extra, bad):
    from stam.cli import main

    out = tmp_path / "t"
    try:
        rc = main(["tune", "--epochs", "1", "--out", str(out), *extra])
    except SystemExit as exc:  # argparse's own check of a flag
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(("stam: error:", "stam tune: error:")) and bad in err[0]
    assert not out.exists()


@pytest.fixture(scope="module")
def tuned_digits(tmp_path_factory):
    """A finished smoke-budget tuning of STAM and BC on digits (the source of the transfers below)."""
    from stam.cli import main

    out = tmp_path_factory.mktemp("source") / "t"
    assert main(["tune", "--algos", "stam,bc", "--trials", "2", "--n-seeds", "2", "--epochs", "1", "--batch-size", "64",
                 "--no-paper", "--no-progress", "--out", str(out)]) == 0
    return out / "tune-digits.json"


def test_tune_transfer_reruns_the_chosen_settings_on_another_network_and_resumes(tuned_digits, tmp_path, capsys):
    """``stam tune --transfer`` (issue 35, item 5): no trials; each algorithm's setting is the source's
    choice, re-run on fresh seeds of the network given, labelled as transferred; resumable from its job
    store; on the source's own network it gives the source's fresh-seed numbers (the same jobs)."""
    from stam.cli import main

    source = json.loads(tuned_digits.read_text())
    argv = ["tune", "--algos", "stam,bc", "--transfer", str(tuned_digits), "--model", "cnn", "--n-seeds", "2",
            "--epochs", "1", "--batch-size", "64", "--no-paper", "--no-progress", "--out", str(tmp_path / "tr")]
    capsys.readouterr()
    assert main(argv) == 0
    first = capsys.readouterr().out
    result = json.loads((tmp_path / "tr" / "tune-digits.json").read_text())
    assert result["model"] == "cnn" and result["transfer"]["model"] == "mlp" and result["transfer"]["file"] == str(tuned_digits)
    assert result["protocol"].startswith("transferred, not tuned") and "Search difficulty" not in first
    for a, s in zip(result["algorithms"], source["algorithms"]):
        assert a["trials"] == [] and a["best"]["overrides"] == s["best"]["overrides"]
        assert result["transfer"]["scores"][a["algo"]] == s["best"]["score"]
        assert a["final"]["seeds"] == s["final"]["seeds"] and len(a["final"]["test_acc"]) == 2
    assert "transferred from MLP" in first and "tuned, 2 trials" not in first and "the tuning of MLP" in first
    assert "transferred settings (from the tuning of MLP" in tunetext.headline(result)
    jobs = sorted((tmp_path / "tr" / "jobs").glob("*.json"))
    specs = [json.loads(p.read_text())["spec"] for p in jobs]
    assert sum(len(s["seeds"]) for s in specs) == 4 and {s["model"] for s in specs} == {"cnn"}  # 2 algorithms x 2 seeds
    stamps = [p.stat().st_mtime_ns for p in jobs]
    assert main(argv) == 0 and [p.stat().st_mtime_ns for p in jobs] == stamps  # resumed: nothing re-run
    assert capsys.readouterr().out == first
    same = argv[:argv.index("--model")] + argv[argv.index("--model") + 2:]  # onto the source's own network
    same[-1] = str(tmp_path / "same")
    assert main(same) == 0
    again = json.loads((tmp_path / "same" / "tune-digits.json").read_text())
    for a, s in zip(again["algorithms"], source["algorithms"]):
        assert a["final"]["test_acc"] == pytest.approx(s["final"]["test_acc"], abs=1e-6)
    from stam.figures import tuning

    class R:
        data = result

    with pytest.raises(ValueError, match="transferred"):  # no trials, no tuning curve
        tuning.draw({"tune": [R()]})


@pytest.mark.parametrize("extra, bad", [
    (["--halving", "3"], "--halving does not apply"), (["--schedule", "warmup-cosine"], "--schedule does not apply"),
    (["--recipe", "standard"], "--recipe does not apply"), (["--algos", "stam,br"], "no tuned setting for br; it has stam, bc"),
])
def test_tune_transfer_bad_input_is_one_line_and_writes_nothing(tuned_digits, tmp_path, capsys, extra, bad):
    from stam.cli import main

    out = tmp_path / "t"
    capsys.readouterr()
    assert main(["tune", "--transfer", str(tuned_digits), "--algos", "stam,bc", "--epochs", "1", "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--transfer {tuned_digits}" in err[0] and bad in err[0], err
    assert not out.exists()


@pytest.mark.parametrize("content, bad", [(None, "cannot read"), ('{"kind": "tune"}', "params"), ("[1", "JSON")])
def test_tune_transfer_refuses_a_file_that_is_not_a_tuning(tmp_path, capsys, content, bad):
    from stam.cli import main

    f = tmp_path / "src.json"
    if content is not None:
        f.write_text(content)
    assert main(["tune", "--transfer", str(f), "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("stam: error: --transfer ") and bad in err[0], err
    assert not (tmp_path / "t").exists()


def test_a_transfer_records_scores_that_are_percentages(tuned_digits):
    ok = {"file": "x.json", "model": "mlp", "width": 1.0, "epochs": 1, "trials": 2, "scores": {"stam": 50.0, "bc": None}}
    result = {**json.loads(tuned_digits.read_text()), "transfer": ok}
    tune.TUNE.validate(result, "t.json")
    for bad in ({**ok, "scores": {"stam": 150.0}}, {**ok, "scores": {"stam": "high"}}, {**ok, "width": -1}):
        with pytest.raises(UsageError, match="transfer"):
            tune.TUNE.validate({**result, "transfer": bad}, "t.json")


def test_tune_space_file_errors(tmp_path, capsys):
    from stam.cli import main

    f = tmp_path / "space.json"
    f.write_text(json.dumps({"stam": {"gamma": {"log_uniform": [1.0, 0.1]}}}))
    assert main(["tune", "--algos", "stam", "--space-file", str(f), "--out", str(tmp_path / "t")]) == 2
    assert "low <= high" in capsys.readouterr().err
    f.write_bytes(b"\xff\xfe")
    assert main(["tune", "--algos", "stam", "--space-file", str(f), "--out", str(tmp_path / "t")]) == 2
    assert not (tmp_path / "t").exists()


def test_map_digits_rows(tmp_path, monkeypatch):
    """A tiny digits map (MLP, 1 epoch, 2 gammas x 1 lambda x 1 beta, 2 seeds): each cell's binary accuracy,
    sign flips and the float weights' accuracy (mean and std over the seeds' job rows, at their selected
    epochs); job records stored before the float accuracy was kept still load, and the map resumes from them
    (the field is a result, not part of a job's key) with the float accuracy None."""
    from stam.dnn.table import mean_std

    rows = sweep.map_digits([0.01, 3.0], [0.5], [20.0], seeds=2, epochs=1, batch_size=64, store=tmp_path, progress=False)
    assert [(r["gamma"], r["lam"], r["beta"]) for r in rows] == [(0.01, 0.5, 20.0), (3.0, 0.5, 20.0)]
    for r in rows:
        assert r["seeds"] == 2 and r["diverged"] == 0 and 0 <= r["metric"] <= 100 and 0 <= r["sign_ever_changed"] <= 1
        assert 0 <= r["val_acc_float"] <= 100 and r["val_acc_float_std"] is not None
    assert max(r["metric"] for r in rows) > 1  # accuracies in percent, as in every result file (10 digits: chance is 10%)
    assert max(r["val_acc_float"] for r in rows) > 10  # the float network learns in an epoch (chance is 10%)
    (job,) = sorted(tmp_path.glob("*.json"))
    record = json.loads(job.read_text())
    per_run = [r["val_acc_float"] for r in record["result"]["rows"]]
    for k, r in enumerate(rows):
        mean, std = mean_std(per_run[2 * k : 2 * k + 2])
        assert math.isclose(r["val_acc_float"], mean, rel_tol=1e-12) and math.isclose(r["val_acc_float_std"], std, rel_tol=1e-12)
    for r in record["result"]["rows"]:
        del r["val_acc_float"]  # a record of a job run before the field was kept
    job.write_text(json.dumps(record))
    monkeypatch.setattr(sweep, "run_job", lambda spec: pytest.fail("a stored job was trained again"))
    again = sweep.map_digits([0.01, 3.0], [0.5], [20.0], seeds=2, epochs=1, batch_size=64, store=tmp_path, progress=False)
    assert [r["metric"] for r in again] == [r["metric"] for r in rows]
    assert all(r["val_acc_float"] is None and r["val_acc_float_std"] is None for r in again)


# --------------------------------------------------------------------------- tuning curves

@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0, 100)), min_size=1, max_size=12))
def test_expected_best_is_the_mean_at_one_trial_and_grows_to_the_best(scores):
    """Dodge et al.'s expected maximum: k = 1 gives the mean, it never falls with k, never exceeds
    the best trial and tends to it; a trial without a score counts as 0."""
    v = [0.0 if s is None else s for s in scores]
    curve = [tunestats.expected_best(scores, k) for k in range(1, 40)]
    assert math.isclose(curve[0], sum(v) / len(v), rel_tol=1e-9, abs_tol=1e-9)
    assert all(b >= a - 1e-9 for a, b in zip(curve, curve[1:]))
    assert all(c <= max(v) + 1e-9 for c in curve)
    assert max(v) - tunestats.expected_best(scores, 4000) <= 1e-3 * max(1.0, max(v))  # n <= 12: (1 - 1/n)^k vanishes


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0, 100)), min_size=1, max_size=400))
def test_the_fast_tuning_curve_is_expected_best_at_every_budget(scores):
    """expected_best_curve (O(n log n), the tail of weights below e^-50 left out) is expected_best
    (the full sum) at every k, to the rounding of a sum of n terms of at most 100."""
    curve = tunestats.expected_best_curve(scores)
    assert len(curve) == len(scores)
    for k, c in enumerate(curve, start=1):
        assert abs(c - tunestats.expected_best(scores, k)) <= 1e-12 * 100 * len(scores)


def test_a_tune_file_of_100000_trials_draws_its_curves_in_seconds():
    """A tune file with 100,000 trials kept stam report/plot busy past 600 s (issue 40 item 4: the
    curves were O(n^2)); now they take seconds and end at the best score."""
    import random
    import time

    from stam.figures import tuning

    rng = random.Random(0)
    scores = [rng.uniform(0, 100) for _ in range(100_000)]
    result = {"dataset": "digits", "model": "mlp", "width": 1.0, "params": {"trials": len(scores), "epochs": 2},
              "algorithms": [{"algo": "stam", "label": "STAM", "trials": [{"score": s} for s in scores]}]}

    class R:
        data = result

    start = time.perf_counter()
    fig = tuning.draw({"tune": [R()]})
    assert time.perf_counter() - start < 120  # (about 4 s on the loaded 2-core sandbox)
    curve = fig.axes[0].lines[0].get_ydata()
    assert len(curve) == 100_000 and abs(curve[-1] - max(scores)) < 1e-3 and abs(curve[0] - sum(scores) / len(scores)) < 1e-6


def test_expected_best_by_hand_and_the_tuning_curves_figure(tmp_path):
    assert math.isclose(tunestats.expected_best([10.0, 20.0], 2), 10 * 0.25 + 20 * 0.75)
    with pytest.raises(ValueError):
        tunestats.expected_best([], 1)
    result = {"dataset": "digits", "model": "mlp", "width": 1.0, "params": {"trials": 3, "epochs": 2},
              "algorithms": [{"algo": "stam", "label": "STAM", "trials": [{"score": s} for s in (50.0, 70.0, None)]},
                             {"algo": "bc", "label": "BC", "trials": [{"score": s} for s in (80.0, 60.0, 90.0)]}]}
    curves = tunestats.tuning_curves(result)
    assert list(curves) == ["STAM", "BC"] and len(curves["BC"]) == 3 and curves["BC"][0] == pytest.approx(230 / 3)
    from stam.figures import tuning

    class R:
        data = result

    fig = tuning.draw({"tune": [R()]})
    assert len(fig.axes[0].lines) == 2 and "Digits, MLP" in fig.axes[0].get_title()
    assert "3 trials per algorithm" in tuning.caption({"tune": [R()]})
    with pytest.raises(ValueError):
        tuning.draw({"tune": []})


def test_a_halved_tunings_curves_resample_one_budget_the_first_rung(tmp_path):
    """With successive halving a trial's score is its last rung's: the tuning curve resamples every
    trial's first-rung score instead (one budget for all), and the figure says which epochs."""
    trials = [{"score": 60.0, "rung": 1, "epochs": 9, "rung_scores": [20.0, 60.0]},
              {"score": 30.0, "rung": 0, "epochs": 3, "rung_scores": [30.0]}, {"score": 10.0}]
    result = {"dataset": "digits", "model": "mlp", "width": 1.0, "params": {"trials": 3, "epochs": 9},
              "halving": {"eta": 3, "rungs": [{"trials": 3, "epochs": 3}, {"trials": 1, "epochs": 9}]},
              "algorithms": [{"algo": "stam", "label": "STAM", "trials": trials}]}
    assert tunestats.tuning_curves(result)["STAM"][0] == pytest.approx((20.0 + 30.0 + 10.0) / 3)  # not (60 + 30 + 10) / 3
    assert tunestats.curve_epochs(result) == 3 and tunestats.curve_epochs({"params": {"epochs": 7}}) == 7
    from stam.figures import tuning

    class R:
        data = result

    assert "first rung, 3 epochs" in tuning.caption({"tune": [R()]})
    assert "3 epochs" in tuning.draw({"tune": [R()]}).axes[0].get_title()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 4), st.integers(1, 5))
def test_sign_flips_of_r_runs_are_each_runs_own(seed, R, epochs):
    """stam.dnn.epochs.SignFlips on R runs at once gives each run what it gives that run alone;
    since_init <= ever, ever never falls, and every fraction lies in [0, 1]."""
    from stam.dnn.epochs import SignFlips

    g = torch.Generator().manual_seed(seed)
    shapes = [(3, 4), (5,)]
    draw = lambda: [torch.randn(R, *s, generator=g) for s in shapes]  # noqa: E731
    start = draw()
    together = SignFlips(start)
    alone = [SignFlips([w[r : r + 1] for w in start]) for r in range(R)]
    last_ever = torch.zeros(R, dtype=torch.float64)
    for _ in range(epochs):
        w = draw()
        rec = together.update(w)
        for r in range(R):
            own = alone[r].update([x[r : r + 1] for x in w])
            for k in ("epoch", "since_init", "ever"):
                assert rec[k][r] == own[k][0]
        assert torch.all(rec["since_init"] <= rec["ever"]) and torch.all(rec["ever"] >= last_ever)
        assert all(0 <= float(v) <= 1 for k in ("epoch", "since_init", "ever") for v in rec[k])
        last_ever = rec["ever"]


def test_a_sweep_reads_its_data_set_once_for_the_check_and_the_source(monkeypatch):
    """check_task loads the data set; data_source then answers from what it found (a CIFAR copy is
    not decoded twice before the jobs start)."""
    from stam.dnn import data as data_mod

    calls, real = [], data_mod.load
    monkeypatch.setattr(data_mod, "load", lambda *a, **k: calls.append(a) or real(*a, **k))
    monkeypatch.setattr(sweep, "_SOURCES", {})
    task = sweep.task_spec("digits", "mlp", 1.0, "nowhere")
    assert sweep.check_task(task) == sweep.data_source(task) and sweep.data_source(task)["kind"] == "scikit-learn"
    assert len(calls) == 1


def test_tune_refuses_a_split_that_leaves_no_training_images_before_any_job(tmp_path, capsys):
    from stam.cli import main

    out = tmp_path / "t"
    assert main(["tune", "--epochs", "1", "--trials", "1", "--n-seeds", "2", "--val-fraction", "0.9999", "--out", str(out),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stam: error: --val-fraction 0.9999: leaves 0 training image(s) of 1437") and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize("argv, what", [
    (["train", "--model", "mlp", "--dataset", "digits", "--algo", "bc", "--epochs", "1000000"], "--epochs 1000000 of"),
    (["tune", "--epochs", "1000000"], "5 algorithms x (16 trials + 5 seeds) x 1000000 epochs"),
    (["map", "--dataset", "digits", "--epochs", "1000000"], "192 trainings (grid x seeds) x 1000000 epochs"),
])
def test_work_above_the_limit_is_refused_before_any_work_unless_forced(tmp_path, capsys, argv, what):
    from stam.cli import main
    from stam.dnn import epochs as ep

    out = tmp_path / "o"
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"stam: error: {what}") and f"above the limit of {ep.WORK_LIMIT_IMAGES:.3g}" in err and "--force" in err
    assert err.count("\n") == 1 and (not out.exists() or not any(out.iterdir()))
    with pytest.raises(UsageError, match="image passes"):
        ep.check_work(ep.WORK_LIMIT_IMAGES * 1.01, "x", False)
    ep.check_work(ep.WORK_LIMIT_IMAGES * 1.01, "x", True)  # --force
    ep.check_work(ep.PAPER_IMAGE_PASSES, "the paper's run", False)  # the paper's own run is allowed


@pytest.mark.parametrize("name, shape", [("vgg11", (3, 32, 32)), ("vgg16", (3, 32, 32)), ("resnet18", (3, 32, 32)),
                                         ("cnn", (1, 8, 8)), ("mlp", (1, 8, 8))])
@pytest.mark.parametrize("width", [0.125, 1.0, 1.5])
def test_the_model_cost_counted_on_meta_is_the_built_models(name, shape, width):
    """model_cost counts without allocating (torch's meta device); its parameters are those of the
    network built for real, and its multiply-adds grow as width^2 (each conv's in x out channels)."""
    from stam.dnn.models import build_model, count_params, model_cost

    cost = model_cost(name, 10, shape, width)
    assert cost["params"] == count_params(build_model(name, 10, shape, width))
    wide = model_cost(name, 10, shape, 2 * width)
    assert 2.5 < wide["macs"] / cost["macs"] <= 4.0 + 1e-9  # the input and classifier layers are not squared


def test_width_counts_in_the_work_and_memory_limits(tmp_path, capsys):
    """--width 64 (the flag's own maximum) failed after up to a minute with an allocator error, and
    the work limit counted image passes whatever the width (issue 40 item 4): the network's cost
    relative to the paper's VGG-11 at width 1 now weights every image pass, and a network whose
    parameters exceed the machine's memory is refused before anything is allocated."""
    import time

    from stam.cli import main
    from stam.dnn import epochs as ep
    from stam.dnn.models import build_model, relative_cost

    assert relative_cost("vgg11", 10, (3, 32, 32), 1.0) == 1.0
    assert relative_cost("mlp", 10, (1, 8, 8), 1.0) == 1.0  # smaller networks count one image pass
    assert 3.5 < relative_cost("vgg11", 10, (3, 32, 32), 2.0) <= 4.0
    with pytest.raises(UsageError, match="--width"):
        ep.check_work(ep.WORK_LIMIT_IMAGES / 2, "x", False, cost=4.0)
    ep.check_work(ep.WORK_LIMIT_IMAGES / 2, "x", False, cost=1.0)
    ep.check_work(ep.WORK_LIMIT_IMAGES / 2, "x", True, cost=4.0)  # --force
    start = time.perf_counter()
    with pytest.raises(UsageError, match=r"^--width 64: vgg11 has 3\.77e\+10 parameters"):
        build_model("vgg11", 10, (3, 32, 32), 64.0)
    assert time.perf_counter() - start < 30
    capsys.readouterr()  # (the announcements above)
    # unweighted 5 x (20 + 10) x 400 x 1797 = 1.1e8 image passes, below the limit; a cnn at width 64 counts 7.9 each
    out = tmp_path / "o"
    argv = ["tune", "--dataset", "digits", "--model", "cnn", "--width", "64", "--trials", "20", "--epochs", "400",
            "--out", str(out), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("stam: error: 5 algorithms x (20 trials + 5 seeds) x 400 epochs") and "--width" in err
    assert "--force" in err and err.count("\n") == 1 and not out.exists()
    # memory: activations of a huge batch
    assert main(["tune", "--dataset", "digits", "--model", "cnn", "--width", "16", "--batch-size", "1000000",
                 "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stam: error: --width 16 --batch-size 1000000: cnn training") and "GB" in err and "--force" in err
    assert err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("command", [["train", "--model", "mlp", "--dataset", "digits"], ["tune"], ["map", "--dataset", "digits"]])
def test_epochs_beyond_the_flags_bound_are_refused_by_the_flag(tmp_path, capsys, command):
    """10^30 epochs passed the flag (and, with --force, the work limit) and the result types (issue 40
    item 6): --epochs and the files' epochs are bounded by one constant, stam.errors.MAX_EPOCHS."""
    from stam.cli import main
    from stam.errors import MAX_EPOCHS

    with pytest.raises(SystemExit) as exit_:
        main([*command, "--epochs", str(10**30), "--force", "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"at most {MAX_EPOCHS:,} epochs" in err and not (tmp_path / "o").exists()


def test_a_synthetic_map_above_its_work_limit_is_refused_unless_forced(capsys, tmp_path, monkeypatch):
    """A 200 x 200 synthetic map ran for hours with no limit (issue 27 item 1); now one line before
    any work, and --force (no longer an error on a synthetic map) lets it run."""
    import stam.synthetic.convergence_map as CM
    from stam.cli import main

    argv = ["map", "--problem", "binary", "--gamma-range", "0.01:10:200", "--lam-range", "0.01:10:200", "--out", str(tmp_path / "m")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "times the default map's work, above the limit of 50" in err and "--force" in err
    monkeypatch.setattr(CM, "run_map", lambda *a, **k: (_ for _ in ()).throw(ValueError("ran")))  # forced: it starts
    assert main([*argv, "--force", "--no-progress"]) == 2 and "ran" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_quantised_weights_in_several_flat_chunks_train_as_in_one(task, monkeypatch):
    """On a CPU a large network's quantised weights are split into flat buffers of whole layers
    (CPU_CHUNK_BYTES); a layer per chunk trains exactly as one chunk for all."""
    cfgs = [_cfg("stam", 2, seed=1), _cfg("stam", 2, seed=2, gamma=0.5)]
    one = batched.train_batched(cfgs, task, 2, 64, compile=False)
    monkeypatch.setattr(batched, "CPU_CHUNK_BYTES", 1)  # every layer its own chunk
    tr = batched.Trainer(cfgs, task, 64, compile=False)
    assert len(tr.qlays) == len(tr.net.quantised) > 1
    many = batched.train_batched(cfgs, task, 2, 64, compile=False)
    assert [r["log"] for r in one] == [r["log"] for r in many]
    assert wide.chunks(["a", "b", "c"], [10, 10, 10], 1, 80) == [["a", "b"], ["c"]]
    assert wide.chunks(["a", "b"], [100, 1], 1, 8) == [["a"], ["b"]]  # a layer larger than the limit: alone


def test_a_trainers_options_are_one_object_and_its_keywords_change_fields(task):
    """Trainer(configs, task, bs, options, **changes) trains as options with those fields changed:
    the keyword form and the object give the same trainer and the same epoch; an unknown keyword is
    a TypeError naming it; train_batched passes its keywords on (device "cpu" unless given)."""
    import dataclasses

    cfgs = [_cfg("stam", 1, seed=3)]  # a rule with proxies
    base = batched.TrainerOptions(epochs=3, compile=False, bn_images=0)
    by_object = batched.Trainer(cfgs, task, 64, dataclasses.replace(base, proxies=True))
    by_keywords = batched.Trainer(cfgs, task, 64, base, proxies=True)
    assert by_object.options == by_keywords.options and by_keywords.options.proxies and by_keywords.bn_images == 0
    assert batched.Trainer(cfgs, task, 64, compile=False).options == batched.TrainerOptions(compile=False)
    a, b = by_object.train_epoch(1), by_keywords.train_epoch(1)
    assert torch.equal(a.train_loss, b.train_loss) and a.proxies is not None
    assert all(torch.equal(x, y) for x, y in zip(a.proxies, b.proxies))
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.epochs = 2
    with pytest.raises(TypeError, match="nope"):
        batched.Trainer(cfgs, task, 64, nope=1)
    with pytest.raises(TypeError, match="nope"):
        batched.train_batched(cfgs, task, 1, 64, nope=1)


def test_tuning_text_counts_agree_in_number():
    """A 1-epoch tuning says "1 epoch", not "1 epochs" (headline, table caption and budget note)."""
    assert tunestats.counted(1, "epochs") == "1 epoch" and tunestats.counted(2, "epochs") == "2 epochs"
    assert tunestats.counted(1, "fresh seeds") == "1 fresh seed"
    prm = {"epochs": 1, "trials": 2, "seeds": 1, "batch_size": 32}
    assert "(1 epoch, 2 trials, 1 seed;" in tunestats.budget_note(prm)


def test_a_cpu_trainer_keeps_freed_memory_for_reuse():
    """On Linux with glibc the trainer sets malloc to reuse freed memory (a pure update frees and
    allocates its whole state every step; trimming it page-faults every step); elsewhere it does
    nothing and says so."""
    import platform

    expected = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert compiled.keep_freed_memory() is expected
    assert compiled.keep_freed_memory() is expected  # once per process, the same answer


def test_long_training_work_is_said_before_it_starts(capsys):
    """check_work says the amount of a long training on stderr (ten CIFAR epochs or more) and is
    silent for a short one; above the limit it refuses instead."""
    from stam.dnn import epochs as ep

    ep.check_work(ep.ANNOUNCE_IMAGES - 1, "short", False)
    assert capsys.readouterr().err == ""
    ep.check_work(ep.PAPER_IMAGE_PASSES, "--epochs 1000 of 50,000 images", False)
    err = capsys.readouterr().err
    assert "about 5e+07 image passes in all (1 of the paper's 1000-epoch CIFAR run)" in err
    with pytest.raises(UsageError):
        ep.check_work(ep.WORK_LIMIT_IMAGES * 2, "too much", False)


def test_a_loops_epoch_on_augmented_data_needs_the_generator_of_its_crops(tmp_path):
    """stam.dnn.loop.epoch draws crops and flips from the generator it is given (the trainer's seed + 1),
    never from torch's global one: without it, on a data set trained so, a one-line ValueError."""
    from test_dnn_data import write_fake_cifar

    from stam.dnn import data as data_mod, loop
    from stam.dnn.models import build_model

    sums = write_fake_cifar(tmp_path, "cifar10", n=4)
    data = data_mod.load("cifar10", tmp_path, checksums=sums)
    net = build_model("vgg11", 10, data.image_shape, 0.0625)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    with pytest.raises(ValueError, match="cifar10 is augmented: give the generator of its crops and flips"):
        loop.epoch(net, opt, data, 8, torch.Generator().manual_seed(0))

    def one_epoch():  # from the same start with the same generators: the same epoch
        torch.manual_seed(3)
        net = build_model("vgg11", 10, data.image_shape, 0.0625)
        return loop.epoch(net, torch.optim.SGD(net.parameters(), lr=0.01), data, 8, torch.Generator().manual_seed(0),
                          torch.Generator().manual_seed(1))

    first = one_epoch()
    assert math.isfinite(first) and first > 0 and one_epoch() == first
