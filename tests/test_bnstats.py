"""The evaluation rule (stam.dnn.bnstats, Trainer.statistics): every network is measured with
BatchNorm statistics of its own weights, re-estimated on a fixed subset of training images."""

from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from stam.dnn import batched, bnstats, catalog, data as data_mod, loop, presets
from stam.dnn.models import build_model

OVER = {"stam": {"gamma": 1.0, "lam": 2.0, "beta": 20.0}, "bc": {"lr": 0.05}, "br": {"lr": 0.05}, "psgd": {"lr": 0.05},
        "float": {"lr": 0.05}}


@pytest.fixture(scope="module")
def task():
    torch.set_num_threads(1)
    return batched.digits_task(val_fraction=0.1, split_seed=0)


def _cfg(algo, epochs=2, seed=0, **over):
    return batched.Config(presets.resolve(None, algo, "digits", {**OVER[algo], **over}, "auto", epochs), seed)


def _trained(task, cfgs, epochs=2, **kw):
    tr = batched.Trainer(cfgs, task, 64, epochs=epochs, compile=False, **kw)
    for e in range(1, epochs + 1):
        tr.train_epoch(e)
    return tr


def _fed(tr):
    """Every image the re-estimation for the binary weights feeds ``tr``'s network, flattened, in order."""
    got = []
    hook = tr.net.wide.body.register_forward_pre_hook(lambda m, args: got.append(args[0].detach().clone()))
    try:
        with tr.statistics("binary"):
            pass
    finally:
        hook.remove()
    return torch.cat([g.flatten(1) for g in got])


def _buffers(tr):
    return [b.clone() for m in bnstats.batchnorms(tr.net.wide) for b in m.buffers()]


def test_the_subset_is_fixed_seeded_and_at_most_half_the_training_set():
    a, b = bnstats.bn_subset(1000, 300), bnstats.bn_subset(1000, 300)
    assert torch.equal(a, b) and len(a) == 300 and len(set(a.tolist())) == 300
    assert torch.equal(bnstats.bn_subset(1000, 500)[:300], a)  # a smaller subset is a prefix of a larger one
    big = bnstats.bn_subset(50, 5000)
    assert len(big) == 25 and len(set(big.tolist())) == 25 and set(big.tolist()) <= set(range(50))
    assert len(bnstats.even_batches(torch.arange(1), 10)) == 0  # one image gives no batch statistics
    sizes = [len(p) for p in bnstats.even_batches(torch.arange(2501), 1000)]
    assert sum(sizes) == 2501 and max(sizes) - min(sizes) <= 1 and min(sizes) >= 2


def test_the_default_subset_is_half_a_small_training_set_and_2500_of_cifar(task):
    """The default rule (catalog.bn_images_used): digits' 1,294 training images give 647, CIFAR's
    45,000 (after the validation split) keep BN_IMAGES = 2500; a trainer built with the default
    re-estimates on exactly those images, and its protocol says so."""
    n_digits = len(task.data.train_x)
    assert n_digits == 1294
    assert catalog.bn_images_used(catalog.BN_IMAGES, n_digits) == 647
    n_cifar = round(catalog.CIFAR_TRAIN_IMAGES * (1 - catalog.VAL_FRACTION))
    assert catalog.bn_images_used(catalog.BN_IMAGES, n_cifar) == catalog.BN_IMAGES == 2500
    assert catalog.bn_images_used(catalog.BN_IMAGES, catalog.CIFAR_TRAIN_IMAGES) == 2500
    tr = batched.Trainer([_cfg("stam")], task, 64, epochs=1, compile=False)
    assert tr.bn_images == catalog.BN_IMAGES and len(tr._bn_index) == 647
    assert "on 647 of the 1,294 training images" in catalog.bn_protocol(tr.bn_images, n_digits)
    assert catalog.bn_protocol(catalog.BN_IMAGES, n_cifar).endswith("on 2,500 training images")  # digits: nothing to say
    assert catalog.bn_protocol(catalog.BN_IMAGES, n_cifar, False).endswith("on 2,500 training images, unaugmented")
    assert catalog.bn_protocol(catalog.BN_IMAGES, n_cifar, True).endswith("on 2,500 training images, cropped and flipped "
                                                                         "once, as the training sees them")


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10**9), st.integers(1, 10**6))
def test_bn_images_used_honours_n_up_to_half_the_training_set(n, n_train):
    """An asked N is used as asked up to half the training set; never more than half of it (nor
    than the set), except the two images BatchNorm's batch statistics need; more N never fewer images."""
    used = catalog.bn_images_used(n, n_train)
    assert 1 <= used <= min(n, n_train)
    assert used <= max(2, n_train // 2)
    if n <= n_train // 2:
        assert used == n
    assert catalog.bn_images_used(n + 1, n_train) >= used


@pytest.mark.parametrize("algo", catalog.NAMES)
def test_evaluation_leaves_the_training_statistics_bit_for_bit(task, algo):
    """Training, checkpoints and resume never see the re-estimated statistics."""
    tr = _trained(task, [_cfg(algo)])
    before, sd = _buffers(tr), tr.state_dict()
    tr.accuracies(("val", "test"), "binary")
    tr.accuracies(("val",), "float")
    tr.module(0, "binary")
    assert all(torch.equal(a, b) for a, b in zip(before, _buffers(tr)))
    assert all(torch.equal(sd["model"][k], v) for k, v in tr.state_dict()["model"].items())


def test_the_binary_network_is_measured_with_its_own_statistics(task):
    """Trainer.accuracy(binary) is the binary network in evaluation mode with BatchNorm statistics
    re-estimated for the binary weights (Trainer.module), not with those of W."""
    tr = _trained(task, [_cfg("stam", gamma=2.0, lam=2.0)], epochs=3)
    model = tr.module(0, "binary").eval()  # binary weights, their statistics
    data = task.data
    with torch.no_grad():
        own = 100.0 * float((model(data.normalise(data.val_x)).argmax(1) == data.val_y).double().mean())
    assert abs(float(tr.accuracy("val", "binary")[0]) - own) <= 100 / len(data.val_y) + 1e-9
    # and the re-estimated statistics are not those of training (which describe the forward weights W)
    with tr.statistics("binary"):
        fresh = _buffers(tr)
    assert not all(torch.allclose(a.float(), b.float()) for a, b in zip(fresh, _buffers(tr)))


@settings(max_examples=8, deadline=None)
@given(st.sampled_from(["bc", "float"]), st.integers(2, 600), st.integers(0, 3))
def test_reestimating_with_the_forward_weights_is_a_fresh_train_mode_pass(task, algo, n, seed):
    """With the forward weights and the images in one pass, the re-estimated statistics of the first
    BatchNorm are the batch mean and unbiased variance of its input on those images."""
    tr = batched.Trainer([_cfg(algo, seed=seed)], task, 64, epochs=1, compile=False, bn_images=n, eval_batch_size=1000)
    tr.train_epoch(1)
    bn = bnstats.batchnorms(tr.net.wide)[0]
    seen = []
    hook = bn.register_forward_pre_hook(lambda m, args: seen.append(args[0].detach().clone()))
    try:
        w = tr.weights("forward")
        with torch.no_grad():
            tr.net.wide.train()
            idx = bnstats.bn_subset(len(task.data.train_x), n)
            tr.net.wide.call_with(w, task.data.normalise(task.data.train_x[idx]))
            x = seen.pop()
            with tr.statistics("forward"):
                mean, var = bn.running_mean.clone(), bn.running_var.clone()
    finally:
        hook.remove()
    torch.testing.assert_close(mean, x.mean(dim=0), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(var, x.var(dim=0, unbiased=True), rtol=1e-4, atol=1e-6)


def test_no_validation_or_test_image_is_read(task):
    """Instrumented: every image the re-estimation feeds the network is a training image of the
    fixed subset, in order, unaugmented; none is a validation or a test image."""
    tr = _trained(task, [_cfg("psgd")], epochs=1)
    data = task.data
    got = _fed(tr)
    idx = bnstats.bn_subset(len(data.train_x), tr.bn_images)
    assert len(got) == len(idx) == catalog.bn_images_used(catalog.BN_IMAGES, len(data.train_x)) == 647
    want = data.normalise(data.train_x[idx]).flatten(1)
    assert torch.equal(got, want)
    for split in ("val", "test"):
        other = data.normalise(getattr(data, f"{split}_x")).flatten(1)
        assert not (torch.cdist(got, other) < 1e-6).any()


def test_r_batched_runs_keep_their_own_statistics(task):
    """Three runs trained together get, each, the statistics it gets trained alone."""
    cfgs = [_cfg("stam", gamma=0.5), _cfg("stam", lam=8.0, seed=3), _cfg("stam", beta=100.0, seed=5)]
    together = _trained(task, cfgs)
    with together.statistics("binary"):
        wide = [b.clone() for b in (m.running_mean for m in bnstats.batchnorms(together.net.wide))]
    for r, cfg in enumerate(cfgs):
        alone = _trained(task, [cfg])
        with alone.statistics("binary"):
            own = [m.running_mean.clone() for m in bnstats.batchnorms(alone.net.wide)]
        for w, o in zip(wide, own):
            torch.testing.assert_close(w.view(len(cfgs), -1)[r], o, rtol=2e-3, atol=2e-4)


def test_a_network_without_batchnorm_is_unchanged(task, monkeypatch):
    """No BatchNorm: re-estimation changes nothing, the accuracies equal the as-trained ones."""
    def no_bn(name, *a, **k):
        net = build_model(name, *a, **k)
        for parent in list(net.modules()):
            for child_name, child in list(parent.named_children()):
                if isinstance(child, nn.modules.batchnorm._BatchNorm):
                    setattr(parent, child_name, nn.Identity())
        return net

    monkeypatch.setattr(batched, "build_model", no_bn)
    tr = _trained(task, [_cfg("stam")], epochs=1)
    assert bnstats.batchnorms(tr.net.wide) == []
    assert torch.equal(tr.accuracy("val", "binary"), tr.accuracies(("val",), "binary", as_trained=True)["val"])
    plain = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    assert bnstats.reestimate(plain, plain, [torch.randn(5, 4)]) is False


def test_bn_images_zero_is_the_statistics_as_trained(task):
    tr = _trained(task, [_cfg("stam")], bn_images=0)
    assert torch.equal(tr.accuracy("val", "binary"), tr.accuracies(("val",), "binary", as_trained=True)["val"])
    with pytest.raises(ValueError, match="bn_images"):
        batched.Trainer([_cfg("stam")], task, 64, bn_images=-1)


def test_the_optimisers_and_the_own_loop_helper_use_the_same_rule(task):
    """`opt.binary_weights(model=, images=)` and `loop.evaluate` re-estimate as the trainer does, and
    put everything back; `loop.evaluate(bn_images=0)` measures with the statistics as they stand."""
    from stam.dnn.models import param_groups

    data = task.data
    torch.manual_seed(0)
    net = build_model("mlp", data.num_classes, data.image_shape, 1.0)
    opt = loop.make_optimizer("stam", param_groups(net), presets.resolve(None, "stam", "digits", OVER["stam"], "auto", 1).at(1))
    for step in range(20):
        idx = torch.arange(step * 32, (step + 1) * 32)
        loop.train_step(net, opt, data.train_x[idx], data.train_y[idx], data)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    with loop.binary_weights(opt):
        mine = loop.evaluate(net, data, "val")
        stale = loop.evaluate(net, data, "val", bn_images=0)
    images = data.normalise(data.train_x[bnstats.bn_subset(len(data.train_x), 5000)])
    with opt.binary_weights(model=net, images=images):
        net.eval()
        with torch.no_grad():
            again = 100.0 * float((net(data.normalise(data.val_x)).argmax(1) == data.val_y).double().mean())
        net.train()
    assert abs(mine - again) <= 100 / len(data.val_y) + 1e-9
    assert all(torch.equal(v, net.state_dict()[k]) for k, v in before.items())
    assert 0 <= stale <= 100
    with pytest.raises(ValueError, match="both model= and images="):
        with opt.binary_weights(model=net):
            pass


def test_train_records_the_protocol_and_the_as_trained_diagnostic(tmp_path):
    from stam.dnn.params import TrainConfig
    from stam.dnn.train import train

    train(TrainConfig(model="mlp", dataset="digits", algo="stam", overrides=OVER["stam"], epochs=2, batch_size=64,
                    schedule_scale="auto", out=str(tmp_path / "r"), echo=False, progress=False, device="cpu", bn_images=700))
    cfg = json.loads((tmp_path / "r" / "config.json").read_text())
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    log = [json.loads(line) for line in (tmp_path / "r" / "log.jsonl").read_text().splitlines()]
    assert cfg["bn_images"] == summary["bn_images"] == 700 and cfg["num_classes"] == 10
    assert all(0 <= r["val_acc_binary_as_trained"] <= 100 and r["test_acc_binary_as_trained"] is None for r in log)
    assert 0 <= summary["sign_ever"] <= 1
    # Float has no binary network: its running statistics are its float network's, so no diagnostic
    train(TrainConfig(model="mlp", dataset="digits", algo="float", overrides={}, epochs=1, batch_size=64,
                    schedule_scale="auto", out=str(tmp_path / "f"), echo=False, progress=False, device="cpu", bn_images=700))
    flog = [json.loads(line) for line in (tmp_path / "f" / "log.jsonl").read_text().splitlines()]
    assert [r["val_acc_binary_as_trained"] for r in flog] == [None] and 0 <= flog[0]["val_acc_float"] <= 100
    # a run evaluated with another protocol is another run: --resume refuses the change in one line
    from stam.errors import UsageError

    with pytest.raises(UsageError, match="bn_images was 700, now 2500"):
        train(TrainConfig(model="mlp", dataset="digits", algo="stam", overrides=OVER["stam"], epochs=3, batch_size=64,
                        schedule_scale=summary["schedule_scale"], out=str(tmp_path / "r"), echo=False, progress=False,
                        device="cpu", resume=True))


@pytest.mark.parametrize("acc, classes, n, flagged", [(10.0, 10, None, True), (10.01, 10, None, False), (10.8, 10, 10000, True),
                                                      (11.0, 10, 10000, False), (1.0, 100, 10000, True), (None, 10, None, False)])
def test_chance_is_flagged(acc, classes, n, flagged):
    assert catalog.at_chance(acc, classes, n) is flagged


def test_the_epoch_line_flags_chance_and_shows_the_signs_ever_flipped():
    from stam.dnn.train import epoch_text

    rec = {"epoch": 1, "train_loss": 2.3, "train_acc": 11.0, "val_acc_binary": 9.0, "val_acc_float": 30.0,
           "test_acc_binary": 10.1, "test_acc_float": 31.0, "seconds": 1.0,
           "sign_flips": {"epoch": 0.001, "ever": 0.25}}
    line = epoch_text(rec, 5, {"num_classes": 10, "test_size": 10000, "val_size": 5000})
    assert line.count("(at chance!)") == 2 and "ever 25.0%" in line
    assert "(at chance!)" not in epoch_text(rec, 5)


def test_the_kept_subset_gives_the_statistics_made_afresh_bit_for_bit(task, monkeypatch):
    """The normalised passes kept from the first evaluation on (Trainer._bn_inputs) are the ones
    gathered and normalised afresh: the same statistics, bit for bit, and the same passes."""
    tr = _trained(task, [_cfg("stam")], epochs=1, bn_images=600)
    with tr.statistics("binary"):
        kept = _buffers(tr)
    assert tr._bn_cache is not None and sum(len(x) for x in tr._bn_cache) == 600
    monkeypatch.setattr(batched, "BN_INPUT_CACHE_BYTES", 0)
    fresh_tr = _trained(task, [_cfg("stam")], epochs=1, bn_images=600)
    with fresh_tr.statistics("binary"):
        fresh = _buffers(fresh_tr)
    assert fresh_tr._bn_cache is None
    assert all(torch.equal(a, b) for a, b in zip(kept, fresh))


# --------------------------------------------------------------------------- the images, as the training sees them

@pytest.fixture(scope="module")
def cifar(tmp_path_factory):
    """A fake CIFAR-10 (5 x 12 training images of random pixels), trained on crops and flips."""
    from test_dnn_data import write_fake_cifar

    root = tmp_path_factory.mktemp("cifar")
    sums = write_fake_cifar(root, "cifar10", n=12)
    return data_mod.split_validation(data_mod.load("cifar10", root, checksums=sums), 0.2, 0)


def _crops_and_flips(image, pad=4):
    """Every image stam.dnn.data.augment can make of ``image`` (uint8 (C, H, W)): each crop of the
    zero-padded image, flipped or not."""
    c, h, w = image.shape
    padded = torch.nn.functional.pad(image, (pad, pad, pad, pad))
    crops = [padded[:, i : i + h, j : j + w] for i in range(2 * pad + 1) for j in range(2 * pad + 1)]
    return torch.stack(crops + [x.flip(-1) for x in crops])


@settings(max_examples=12, deadline=None)
@given(st.integers(2, 60))
def test_the_augmented_images_are_the_subset_each_cropped_and_flipped_once(cifar, n):
    """data.bn_images on a data set trained on crops and flips: the images of the fixed subset, in
    order, each one of the crops and flips of its own image; the same draw at every call; without
    augmentation (or on digits) the subset itself."""
    idx = bnstats.bn_subset(len(cifar.train_x), n)
    plain = data_mod.bn_images(cifar, n, augmented=False)
    seen = data_mod.bn_images(cifar, n, augmented=True)
    assert torch.equal(plain, cifar.train_x[idx]) and seen.shape == plain.shape and seen.dtype == torch.uint8
    assert torch.equal(seen, data_mod.bn_images(cifar, n, augmented=True))
    for source, got in zip(plain, seen):
        assert (_crops_and_flips(source) == got).flatten(1).all(dim=1).any()
    assert not torch.equal(seen, plain)  # 162 versions each: n >= 2 images all drawn as they are has chance <= 1/162^2


def test_the_trainer_feeds_the_augmented_subset_on_cifar_and_the_plain_one_when_asked(cifar):
    """Instrumented: on CIFAR the trainer re-estimates on the subset cropped and flipped once (the
    default, BN_AUGMENT), the same images at every evaluation; with bn_augment=False on the subset as
    it is; digits is never augmented (the option is moot there)."""
    assert catalog.BN_AUGMENT is True
    cfg = batched.Config(presets.resolve(None, "psgd", "cifar10", {"lr": 0.05}, "auto", 1), 0)
    task = batched.Task(cifar, "vgg11", 0.0625)
    seen = batched.Trainer([cfg], task, 16, epochs=1, compile=False)
    assert seen.bn_augment is True
    first = _fed(seen)
    want = cifar.normalise(data_mod.bn_images(cifar, catalog.BN_IMAGES, True)).flatten(1)
    assert torch.equal(first, want) and torch.equal(_fed(seen), first)
    plain = batched.Trainer([cfg], task, 16, epochs=1, compile=False, bn_augment=False)
    assert plain.bn_augment is False
    assert torch.equal(_fed(plain), cifar.normalise(data_mod.bn_images(cifar, catalog.BN_IMAGES, False)).flatten(1))
    digits = batched.Trainer([_cfg("psgd")], batched.digits_task(val_fraction=0.1), 64, epochs=1, compile=False)
    assert digits.bn_augment is False


def test_the_own_loop_helper_reestimates_on_the_same_images_as_the_trainer(cifar):
    """loop.evaluate measures a network as the trainer does, under either rule."""
    cfg = batched.Config(presets.resolve(None, "float", "cifar10", {"lr": 0.05}, "auto", 1), 0)
    task = batched.Task(cifar, "vgg11", 0.0625)
    for aug in (True, False):
        tr = batched.Trainer([cfg], task, 16, epochs=1, compile=False, bn_augment=aug)
        tr.train_epoch(1)
        model = tr.module(0, "float")
        mine = loop.evaluate(model, cifar, "val", bn_augment=aug)
        assert abs(mine - float(tr.accuracy("val", "float")[0])) <= 100 / len(cifar.val_y) + 1e-9


def test_job_specs_keep_their_meaning_across_the_rule_change():
    """A job's spec names the augmented rule only where it is on (job=bool): a spec without it is one
    of the unaugmented rule (every store written before 2026-11-29), so --bn-unaugmented resumes such
    a store, and the default's jobs are new ones; a network map records the rule it ran."""
    from stam.dnn.params import TuneParams
    from stam.figures.map_experiment import MapParams

    new, old = TuneParams(dataset="cifar10"), TuneParams(dataset="cifar10", bn_augment=False)
    assert new.spec()["bn_augment"] is True and "bn_augment" not in old.spec()
    assert {k: v for k, v in new.spec().items() if k != "bn_augment"} == old.spec()
    assert catalog.bn_augmented(new.spec()) is True and catalog.bn_augmented(old.spec()) is False
    assert catalog.bn_augmented(TuneParams(dataset="digits").spec()) is None  # digits is never augmented
    net = MapParams(dataset="cifar10").network()
    assert net.spec()["bn_augment"] is True and "bn_augment" not in MapParams(dataset="cifar10", bn_augment=False).network().spec()
    assert "bn_augment" not in MapParams().spec()  # a synthetic map has no such field


def test_the_flag_parses_and_a_synthetic_map_refuses_it(capsys):
    import argparse

    from stam.cli import main
    from stam.dnn.params import TuneParams
    from stam.params import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser, TuneParams)
    assert TuneParams.from_args(parser.parse_args(["--bn-unaugmented"])).bn_augment is False
    assert TuneParams.from_args(parser.parse_args([])).bn_augment is True
    assert main(["map", "--problem", "binary", "--bn-unaugmented"]) == 2
    assert "--bn-unaugmented is for a network map" in capsys.readouterr().err
