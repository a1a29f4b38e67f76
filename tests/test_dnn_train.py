"""stam train: logs, exact resume, NaN stop, checkpoints loadable with weights_only, DDP with gloo."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from stam.cli import main
from stam.dnn import train as T
from stam.errors import UsageError
from stam.dnn.params import TrainConfig

ALGOS = ["float", "stam", "bc", "br", "psgd"]


def cfg(tmp_path, name="run", **kw):
    base = dict(model="mlp", dataset="digits", algo="float", epochs=2, out=str(tmp_path / name), progress=False, echo=False)
    base.update(kw)
    return TrainConfig(**base)


def _log(path):
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in (path / "log.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("algo", ALGOS)
def test_optimizer_factory_is_stam_dnn_optim_make(algo, monkeypatch):
    """A loop of one's own (stam.dnn.loop) builds the quantising optimisers through the one
    factory, with the epoch-1 hyperparameters of the preset in every group (BR with rho = 1: the
    lam schedule drives it)."""
    from stam.dnn import models, optim, presets

    calls, make = [], optim.make

    def spy(a, params, **kw):
        calls.append((a, kw))
        return make(a, params, **kw)

    monkeypatch.setattr(optim, "make", spy)
    hyper = presets.resolve(None, algo, "digits").at(1)
    from stam.dnn import loop

    opt = loop.make_optimizer(algo, models.param_groups(models.build_model("mlp", 10, (1, 8, 8))), hyper)
    if algo == "float":
        assert isinstance(opt, torch.optim.SGD) and not calls
        return
    assert isinstance(opt, optim.OPTIMIZERS[algo]) and [a for a, _ in calls] == [algo]
    for key in presets.ALGO_HYPER[algo]:
        if key != "switch_epoch":
            assert all(g[key] == hyper[key] for g in opt.param_groups if g.get("quantize")), key
    if algo == "br":
        assert calls[0][1]["rho"] == 1.0


@pytest.mark.parametrize("algo", ALGOS)
def test_resume_is_exact(tmp_path, algo):
    """2 epochs straight == 1 epoch + --resume + 1 epoch: the same trainer state (weights, update-rule
    state, BatchNorm statistics, generators, sign-flip state) and log."""
    # schedule scales that put a stage change between the two epochs (STAM: paper epochs 1 -> 81;
    # BR: 1 -> 251, across the switch to pure projection at K = 250)
    kw = dict(algo=algo, schedule_scale={"stam": 1 / 80, "br": 1 / 250}.get(algo, 1.0), seed=3)
    if algo == "float":
        kw["overrides"] = {"lr": 0.05, "momentum": 0.9}
    straight = T.train(cfg(tmp_path, "a", **kw))
    T.train(cfg(tmp_path, "b", **{**kw, "epochs": 1}))
    resumed = T.train(cfg(tmp_path, "b", **kw, resume=True))
    for (k, v), (k2, v2) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items()):
        assert k == k2 and torch.equal(v, v2), k
    from stam.dnn.checkpoint import digest

    sa, sb = straight.trainer.state_dict(), resumed.trainer.state_dict()
    for part in ("model", "optimizer", "signs"):
        assert digest(sa[part]) == digest(sb[part]), part
    assert all(torch.equal(a, b) for a, b in zip(sa["rng"]["shuffle"] + sa["rng"]["augment"], sb["rng"]["shuffle"] + sb["rng"]["augment"]))
    la, lb = _log(tmp_path / "a"), _log(tmp_path / "b")
    assert la == lb  # val accuracies and sign-flip records included
    assert all(r["val_acc_binary"] is not None and r["sign_flips"]["layers"] for r in la)
    assert [r["sign_flips"] for r in la] == [r["sign_flips"] for r in lb]
    ckpt = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)
    assert ckpt["epoch"] == 2 and len(ckpt["log"]) == 2


def test_log_and_summary_contents(tmp_path):
    res = T.train(cfg(tmp_path, epochs=1, overrides={"lr": 0.1}))
    (rec,) = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert set(rec) >= {"epoch", "train_loss", "train_acc", "test_acc_binary", "test_acc_float", "hyper", "proxy_grad", "proxy_z", "theorem", "seconds"}
    assert rec["hyper"] == {"lr": 0.1, "momentum": 0.0, "weight_decay": 1e-7} and rec["theorem"] is None
    assert 0 <= rec["test_acc_binary"] <= 100 and rec["test_acc_float"] > 50  # float SGD learns digits in one epoch
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["kind"] == "train-run" and s["status"] == "completed" and s["best_test_acc_float"] == rec["test_acc_float"]
    assert s == {**res.summary, "provenance": s["provenance"]}
    c = json.loads((tmp_path / "run" / "config.json").read_text())
    assert c["params"]["quantized"] == 64 * 256 + 256 * 256 + 256 * 10  # every linear weight, no bias or BN


def test_binary_accuracy_of_float_baseline_uses_projected_weights(tmp_path):
    """The float baseline's binary weights are the projection of its float weights onto Q (eq.
    (0411)), in the trainer and in a loop of one's own; the network it returns holds float weights."""
    from stam.dnn import loop, models

    res = T.train(cfg(tmp_path, epochs=1, overrides={"lr": 0.1}))
    w = res.trainer.weights("float")["net.1.weight"][0]
    b = res.trainer.weights("binary")["net.1.weight"][0]
    assert torch.all(b.abs() == b.abs()[0, 0]) and torch.equal(b >= 0, w >= 0) and torch.allclose(b.abs()[0, 0], w.abs().mean())
    assert torch.equal(res.model.net[1].weight, w)
    net = models.build_model("mlp", 10, (1, 8, 8))
    opt = loop.make_optimizer("float", models.param_groups(net), {"lr": 0.1, "momentum": 0.0, "weight_decay": 0.0})
    p = net.net[1].weight
    before = p.detach().clone()
    with loop.projected_weights(opt):
        assert torch.all(p.abs() == p.abs()[0, 0]) and torch.equal(p >= 0, before >= 0)
    assert torch.equal(p, before)


def test_nan_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path):
    blow_up = [{"from": 1, "value": 0.1}, {"from": 2, "value": 1e30}]
    with pytest.raises(T.Diverged, match=r"became (nan|inf) in epoch 2.*last good checkpoint \(epoch 1\)"):
        T.train(cfg(tmp_path, epochs=3, overrides={"lr": blow_up}))
    ckpt = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    assert ckpt["epoch"] == 1 and all(torch.isfinite(v).all() for v in ckpt["model"].values() if v.is_floating_point())
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "diverged in epoch 2"


def test_cli_one_line_errors(tmp_path, capsys):
    out = str(tmp_path / "x")
    cases = [
        (["--preset", "our9"], "unknown preset"),
        (["--algo", "bc", "--preset", "our3"], "is for --algo stam"),
        (["--algo", "stam", "--set", "lr=0.1"], "allowed: gamma, lam, beta"),
        (["--algo", "stam", "--set", "gamma=-1"], "gamma"),
        (["--algo", "stam", "--resume"], "no checkpoint"),
        (["--algo", "float", "--dataset", "cifar10", "--data-dir", str(tmp_path)], "cifar-10-python.tar.gz"),
        (["--algo", "float", "--keep-float", "middle"], "first, last"),
        (["--algo", "float", "--schedule-scale", "-1"], "schedule-scale"),
        (["--algo", "float", "--batch-size", "1"], "at least 2 images per batch"),
        (["--algo", "br", "--set", "switch_epoch=0.5"], "must be an integer"),
        (["--algo", "bc", "--proxies"], "--proxies: bc has no stationarity proxies"),
        *[(["--algo", "float", "--val-fraction", v], "--val-fraction") for v in ("0", "1", "-0.1", "nan", "abc", "0.9999")],
    ]
    for argv, match in cases:
        assert _rc(["train", "--model", "mlp", "--dataset", "digits", "--out", out, "--no-progress", *argv]) == 2
        err = capsys.readouterr().err
        assert match in err and err.count("\n") == 1, (argv, err)
        assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir()), argv  # nothing written


def test_more_user_mistakes_are_one_line_and_write_nothing(tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a run")
    assert _rc(["train", "--model", "mlp", "--dataset", "digits", "--algo", "float", "--out", str(a_file)]) == 2
    assert "is a file" in capsys.readouterr().err
    big = tmp_path / "vgg"
    assert _rc(["train", "--model", "vgg11", "--dataset", "digits", "--algo", "stam", "--out", str(big), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--model vgg11 does not take digits's 1x8x8 images" in err and err.count("\n") == 1
    assert not big.exists() or not any(big.iterdir())  # no stray config.json
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "checkpoint.pt").write_bytes(b"garbage, or a truncated copy")
    assert _rc(["train", "--model", "mlp", "--dataset", "digits", "--algo", "float", "--out", str(bad), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "is not a readable stam checkpoint" in err and err.count("\n") == 1


def test_resume_refuses_another_kind_of_device(tmp_path):
    T.train(cfg(tmp_path, epochs=1))
    path = tmp_path / "run" / "checkpoint.pt"
    ckpt = torch.load(path, weights_only=True)
    ckpt["config"]["device"] = "cuda:0"
    torch.save(ckpt, path)
    with pytest.raises(UsageError, match="the run was on cuda:0, this process is on cpu"):
        T.train(cfg(tmp_path, epochs=2, resume=True))


def test_weights_broken_by_the_last_step_of_an_epoch_stop_the_run(tmp_path, monkeypatch):
    """The loss is checked before a step's update; an update that breaks the weights after the
    epoch's last loss check is caught at the end of the epoch, before anything is saved."""
    from stam.dnn import batched

    real = batched.Trainer.train_epoch

    def epoch_then_break(self, epoch, *args, **kw):
        out = real(self, epoch, *args, **kw)
        if epoch == 2:  # after the last (only) step of epoch 2
            self.state[0].u.fill_(float("nan"))
        return out

    monkeypatch.setattr(batched.Trainer, "train_epoch", epoch_then_break)
    with pytest.raises(T.Diverged, match=r"weights or optimiser state became non-finite in epoch 2.*checkpoint \(epoch 1\)"):
        T.train(cfg(tmp_path, algo="bc", epochs=3, batch_size=2048))
    ckpt = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    assert ckpt["epoch"] == 1 and all(torch.isfinite(v).all() for v in ckpt["model"].values() if v.is_floating_point())
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "diverged in epoch 2"


def test_bf16_autocast_trains_on_the_cpu(tmp_path):
    res = T.train(cfg(tmp_path, algo="stam", preset="our3", epochs=1, bf16=True))
    (rec,) = _log(tmp_path / "run")
    assert res.summary["status"] == "completed" and rec["train_loss"] == rec["train_loss"] and 0 <= rec["test_acc_binary"] <= 100
    assert all(p.dtype == torch.float32 for p in res.model.parameters())  # autocast: weights and state stay float32
    assert all(t.dtype == torch.float32 for s in res.trainer.state for t in s)


def _rc(argv):
    """Exit status of ``stam ARGV`` (argparse errors exit through SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_existing_run_needs_resume_and_same_settings(tmp_path):
    T.train(cfg(tmp_path, epochs=1))
    with pytest.raises(UsageError, match="already holds a run"):
        T.train(cfg(tmp_path, epochs=1))
    with pytest.raises(UsageError, match="seed was 0, now 5"):
        T.train(cfg(tmp_path, epochs=2, seed=5, resume=True))
    T.train(cfg(tmp_path, "auto", epochs=1, algo="stam", schedule_scale="auto"))
    with pytest.raises(UsageError, match=r"schedule_scale was 0.001, now 0.002 \(--schedule-scale auto follows --epochs: pass "
                                         r"--schedule-scale 0.001 to keep"):
        T.train(cfg(tmp_path, "auto", epochs=2, algo="stam", schedule_scale="auto", resume=True))
    assert T.train(cfg(tmp_path, "auto", epochs=2, algo="stam", schedule_scale=0.001, resume=True)).summary["epochs"] == 2


def test_cli_train_and_table(tmp_path, capsys):
    runs = tmp_path / "runs"
    for seed in (0, 1):
        rc = main(["train", "--model", "mlp", "--dataset", "digits", "--algo", "float", "--epochs", "1", "--seed", str(seed),
                   "--set", "lr=0.1", "--label", "Float", "--out", str(runs / f"f{seed}"), "--no-progress", *(["--json"] * seed)])
        assert rc == 0
    lines = capsys.readouterr().out.strip().splitlines()
    # seed 0: one readable line per epoch and the closing summary; seed 1 (--json): the JSON record alone
    assert len(lines) == 3 and json.loads(lines[2]) == _log(runs / "f1")[0] | {"seconds": json.loads(lines[2])["seconds"]}
    assert lines[0].startswith("epoch 1/1  loss ") and "(binary / float)" in lines[0] and "signs flipped" in lines[0]
    summary = json.loads((runs / "f0" / "summary.json").read_text())
    assert lines[1].startswith("Float on MLP, 1 epoch in ") and f"test {summary['selected_test_acc_float']:.1f}% float" in lines[1]
    assert f"Wrote {runs / 'f0'}/" in lines[1] and "first 1 of the paper's 1000 epochs" in lines[1]
    assert main(["table", str(runs)]) == 0
    table = capsys.readouterr().out
    assert "| DNN | Float |" in table and "| MLP |" in table and "(n=2, 1 epoch)" in table
    assert main(["train", "--model", "mlp", "--dataset", "digits", "--algo", "float", "--epochs", "1", "--quiet",
                 "--out", str(tmp_path / "q"), "--no-progress"]) == 0
    assert capsys.readouterr().out == "" and len(_log(tmp_path / "q")) == 1


def test_ddp_two_gloo_processes_hold_identical_weights(tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(textwrap.dedent(f"""
        import os, torch
        torch.set_num_threads(1)
        from stam.dnn.params import TrainConfig
        from stam.dnn.train import train
        res = train(TrainConfig(model="mlp", dataset="digits", algo="float", epochs=1, overrides={{"lr": 0.1, "momentum": 0.9}},
                              out={str(tmp_path / "ddp")!r}, progress=False, echo=False, device="cpu"))
        torch.save(res.trainer.state_dict()["model"], {str(tmp_path)!r} + f"/rank{{os.environ['RANK']}}.pt")
        assert res.summary["world_size"] == 2
    """))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script)],
                   check=True, env=env, capture_output=True, timeout=300)
    a = torch.load(tmp_path / "rank0.pt", weights_only=True)
    b = torch.load(tmp_path / "rank1.pt", weights_only=True)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    first = torch.load(tmp_path / "ddp" / "checkpoint.pt", weights_only=True)["model"]
    assert all(torch.equal(first[k], a[k]) for k in a)
    assert json.loads((tmp_path / "ddp" / "summary.json").read_text())["world_size"] == 2


def test_ddp_stam_with_augmentation_is_identical_across_ranks_and_resumes_exactly(tmp_path):
    """STAM (Our3) on a fake CIFAR-10 of 25 training images, batch 10 on 2 gloo processes: the
    last batch of 5 splits 3 + 2, so per-process augmentation draws would drift apart.  Every rank
    ends with the same weights and the same U, V, X, and 2 epochs straight equal 1 + resume + 1."""
    from test_dnn_data import write_fake_cifar

    sums = write_fake_cifar(tmp_path, "cifar10", n=5)
    script = tmp_path / "ddp_stam.py"
    script.write_text(textwrap.dedent(f"""
        import json, os, sys, torch
        torch.set_num_threads(1)
        from stam.dnn.params import TrainConfig
        from stam.dnn.train import train
        name, epochs, resume = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "resume"
        res = train(TrainConfig(model="cnn", dataset="cifar10", preset="our3", epochs=epochs, batch_size=10,
                              schedule_scale=1 / 80, data_dir={str(tmp_path)!r}, out={str(tmp_path)!r} + "/" + name,
                              resume=resume, progress=False, echo=False, device="cpu",
                              checksums=json.loads({json.dumps(json.dumps(sums))})))
        sd = res.trainer.state_dict()
        state = {{f"{{n}}.{{k}}": v for n, s in sd["optimizer"]["layers"].items() for k, v in zip("yxuz", s)}}
        torch.save({{"model": sd["model"], "opt": state}}, {str(tmp_path)!r} + f"/{{name}}-rank{{os.environ['RANK']}}.pt")
    """))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for args in (("straight", "2", "new"), ("split", "1", "new"), ("split", "2", "resume")):
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script), *args],
                       check=True, env=env, capture_output=True, timeout=300, cwd=str(tmp_path.parent))
    got = {f"{n}{r}": torch.load(tmp_path / f"{n}-rank{r}.pt", weights_only=True) for n in ("straight", "split") for r in (0, 1)}
    ref = got["straight0"]
    assert ref["opt"] and {k.rsplit(".", 1)[1] for k in ref["opt"]} == set("yxuz")  # W, U, V, X of eq. (alg:stamm)
    for key, other in got.items():
        for part in ("model", "opt"):
            assert ref[part].keys() == other[part].keys()
            assert all(torch.equal(ref[part][k], other[part][k]) for k in ref[part]), (key, part)
    log = [json.loads(line) for line in (tmp_path / "straight" / "log.jsonl").read_text().splitlines()]
    assert [r["hyper"]["lam"] for r in log] == [0.5, 4.0]  # a stage change of Our3 between the two epochs


def test_stam_logs_proxies_when_asked_and_the_theorem_check(tmp_path):
    T.train(cfg(tmp_path, "paper", algo="stam", preset="our3", epochs=1, proxies=True))
    T.train(cfg(tmp_path, "adm", algo="stam", epochs=1, overrides={"lam": 1.0, "gamma": 0.0954, "beta": 220.0}))
    (paper,) = _log(tmp_path / "paper")
    (adm,) = _log(tmp_path / "adm")
    assert paper["proxy_grad"] > 0 and paper["proxy_z"] > 0
    assert adm["proxy_grad"] is None and adm["proxy_z"] is None  # not asked for: not computed
    assert json.loads((tmp_path / "paper" / "config.json").read_text())["proxies"] is True
    assert paper["theorem"]["admissible"] is False
    assert any(v["condition"].startswith("K1 > 0") for v in paper["theorem"]["violations"])  # gamma = 8 > gamma_max(0.5)
    assert adm["theorem"] == {"admissible": True, "violations": [], "unknown": []}
    assert 0 <= adm["test_acc_binary"] <= 100


def test_keep_float_and_fake_cifar_with_augmentation(tmp_path):
    from test_dnn_data import write_fake_cifar

    sums = write_fake_cifar(tmp_path, "cifar10", n=8)
    c = cfg(tmp_path, "c", model="cnn", dataset="cifar10", algo="bc", epochs=1, batch_size=16, data_dir=str(tmp_path),
            keep_float=("first", "last"), checksums=sums)
    res = T.train(c)
    conf = json.loads((tmp_path / "c" / "config.json").read_text())
    assert conf["params"]["quantized"] == 3 * 3 * 32 * 64  # only the second conv: first conv and classifier kept float
    assert conf["train_size"] == 30 and conf["val_size"] == 10 and set(conf["data_manifest_sha256"]) == {k for k in sums if "/" in k}
    assert res.summary["epochs"] == 1 and 0 <= res.summary["best_test_acc_binary"] <= 100


# -- validation split (issue 11) ---------------------------------------------------------------

def test_validation_split_is_stratified_disjoint_and_seeded_by_split_seed_only():
    from stam.dnn import data as D

    full = D.load_digits()
    a = D.split_validation(full, 0.1, 0)
    counts = torch.bincount(full.train_y, minlength=10)
    vc = torch.bincount(a.val_y, minlength=10)
    assert vc.tolist() == [max(1, round(0.1 * int(n))) for n in counts]  # stratified per class
    assert len(a.val_x) + len(a.train_x) == len(full.train_x) and len(a.val_y) == len(a.val_x)
    # disjoint and a partition of the training set: match images+labels as rows
    rows = lambda x, y: [tuple(r) for r in torch.cat([x.flatten(1), y[:, None].to(x.dtype)], 1).tolist()]  # noqa: E731
    assert sorted(rows(a.val_x, a.val_y) + rows(a.train_x, a.train_y)) == sorted(rows(full.train_x, full.train_y))
    assert torch.equal(a.test_x, full.test_x)
    assert torch.equal(D.split_validation(full, 0.1, 0).val_x, a.val_x)  # a function of split_seed
    assert not torch.equal(D.split_validation(full, 0.1, 1).val_x, a.val_x)
    tiny = D.split_validation(full, 0.001, 0)
    assert torch.bincount(tiny.val_y, minlength=10).tolist() == [1] * 10  # at least one image per class
    with pytest.raises(UsageError, match="val-fraction"):
        D.split_validation(full, 1.0, 0)


def test_split_is_the_same_across_training_seeds_and_recorded(tmp_path, monkeypatch):
    from stam.dnn import data as D

    seen, split = [], D.split_validation

    def spy(*a, **k):
        seen.append(split(*a, **k))
        return seen[-1]

    monkeypatch.setattr(D, "split_validation", spy)
    T.train(cfg(tmp_path, "s0", epochs=1, seed=0, batch_size=128))
    T.train(cfg(tmp_path, "s1", epochs=1, seed=1, batch_size=128))
    T.train(cfg(tmp_path, "p1", epochs=1, seed=0, split_seed=1, batch_size=128))
    assert torch.equal(seen[0].val_x, seen[1].val_x) and torch.equal(seen[0].train_y, seen[1].train_y)  # --seed: same split
    assert not torch.equal(seen[0].val_x, seen[2].val_x)  # --split-seed: another split
    c = {n: json.loads((tmp_path / n / "config.json").read_text()) for n in ("s0", "s1", "p1")}
    assert c["s0"]["val_fraction"] == 0.1 and c["s0"]["split_seed"] == 0
    counts = torch.bincount(D.load_digits().train_y)
    assert c["s0"]["val_size"] == sum(max(1, round(0.1 * int(n))) for n in counts) == len(seen[0].val_x)
    assert c["s0"]["val_size"] + c["s0"]["train_size"] == 1437
    assert c["s0"]["val_size"] == c["s1"]["val_size"] == c["p1"]["val_size"]
    with pytest.raises(UsageError, match="split_seed was 1, now 0"):
        T.train(cfg(tmp_path, "p1", epochs=2, seed=0, split_seed=0, resume=True))
    with pytest.raises(UsageError, match="val_fraction"):
        T.train(cfg(tmp_path, "p1", epochs=2, seed=0, split_seed=1, val_fraction=None, resume=True))


def test_no_val_trains_on_everything_and_selects_nothing(tmp_path):
    res = T.train(cfg(tmp_path, epochs=1, val_fraction=None))
    (rec,) = _log(tmp_path / "run")
    assert rec["val_acc_binary"] is None and rec["val_acc_float"] is None
    c = json.loads((tmp_path / "run" / "config.json").read_text())
    assert c["train_size"] == 1437 and c["val_size"] == 0 and c["val_fraction"] is None
    s = res.summary
    assert s["selected_epoch"] is None and s["selected_test_acc_binary"] is None and s["selected_val_acc_float"] is None
    assert s["best_test_acc_float"] == rec["test_acc_float"] and "best_test_acc_*" in s["metric_notes"]


def test_selection_rule_is_the_earliest_argmax_of_validation_accuracy():
    log = [{"epoch": e, "val_acc_binary": vb, "val_acc_float": vf, "test_acc_binary": tb, "test_acc_float": tf}
           for e, vb, vf, tb, tf in [(1, 50, 90, 99, 10), (2, 70, 80, 60, 20), (3, 70, 95, 61, 30), (4, 60, 91, 98, 40)]]
    assert T.selected_record(log, "stam")["epoch"] == 2  # earliest of the tie 70, 70; not the test argmax (epoch 1)
    assert T.selected_record(log, "float")["epoch"] == 3  # the float baseline selects on val_acc_float
    assert T.selected_record([{**r, "val_acc_binary": None, "val_acc_float": None} for r in log], "bc") is None
    config = {"model": "mlp", "dataset": "digits", "algo": "bc", "preset": "bc", "label": "BC", "seed": 0, "epochs": 4,
              "batch_size": 8, "schedule_scale": 1, "overrides": {}, "keep_float": [], "device": "cpu", "world_size": 1, "params": {}}
    s = T._summary(config, [{**r, "seconds": 1.0} for r in log], 4.0, "completed")
    assert (s["selected_epoch"], s["selected_val_acc_binary"], s["selected_test_acc_binary"]) == (2, 70, 60)
    assert s["best_test_acc_binary"] == 99 and s["best_epoch_binary"] == 1


def test_real_two_epoch_run_selects_on_validation(tmp_path):
    res = T.train(cfg(tmp_path, algo="bc", epochs=2, batch_size=64))
    log = _log(tmp_path / "run")
    vals = [r["val_acc_binary"] for r in log]
    sel = vals.index(max(vals))
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["selected_epoch"] == sel + 1 and s["selected_test_acc_binary"] == log[sel]["test_acc_binary"]
    assert s["selected_val_acc_binary"] == max(vals) and s == {**res.summary, "provenance": s["provenance"]}
    assert all(0 <= v <= 100 for v in vals)


# -- sign flips (issue 11) ---------------------------------------------------------------------

def test_signs_helper_follows_the_projection_convention():
    from stam.quantize import project_Q, sign_changes, signs

    w = torch.tensor([[-1.0, 0.0, 2.0, -0.0]])
    assert signs(w).tolist() == [[False, True, True, True]]  # sign(0) = +1
    assert torch.equal(signs(w), project_Q(w, None) > 0)
    assert sign_changes(signs(w), signs(-w)).tolist() == [[True, False, True, False]]


@pytest.mark.parametrize("algo", ["stam", "float"])
def test_sign_flips_equal_a_recomputation_from_saved_weights(tmp_path, algo):
    """Run 1 epoch, save the binary weights, continue for 1 more: the logged fractions of epoch 2
    equal the ones recomputed from the binary weights before and after."""
    from stam.quantize import signs

    kw = dict(algo=algo, batch_size=64, seed=1)
    first = T.train(cfg(tmp_path, epochs=1, **kw))
    ckpt = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    init = ckpt["signs"]["init"]
    binary = lambda res: [res.trainer.weights("binary")[n][0].clone() for n in res.trainer.net.quantised]  # noqa: E731
    w1 = binary(first)
    second = T.train(cfg(tmp_path, epochs=2, resume=True, **kw))
    w2 = binary(second)
    log = _log(tmp_path / "run")
    r1, r2 = log[0]["sign_flips"], log[1]["sign_flips"]
    n = sum(w.numel() for w in w2)
    epoch = sum((signs(a) != signs(b)).sum().item() for a, b in zip(w1, w2)) / n
    init = [i[0] for i in init]
    since = sum((signs(b) != i).sum().item() for b, i in zip(w2, init)) / n
    ever = sum(((signs(a) != i) | (signs(b) != i)).sum().item() for a, b, i in zip(w1, w2, init)) / n
    assert r2["epoch"] == pytest.approx(epoch) and r2["since_init"] == pytest.approx(since) and r2["ever"] == pytest.approx(ever)
    assert r1["epoch"] == r1["since_init"] == r1["ever"]  # after one epoch the three coincide
    for r in (r1, r2):
        assert 0 <= r["epoch"] <= 1 and 0 <= r["since_init"] <= r["ever"] <= 1
        assert [lay["name"] for lay in r["layers"]] == ["net.1.weight", "net.4.weight", "net.7.weight"] or len(r["layers"]) == 3
    for lay, w in zip(r2["layers"], w2):
        assert lay["scale"] == pytest.approx(w.abs().mean().item(), rel=1e-6)
        assert 0 <= lay["epoch"] <= 1 and lay["since_init"] <= lay["ever"]
    assert r2["epoch"] > 0  # the weights did move


def test_no_sign_flips_when_the_optimiser_does_not_move_the_weights(tmp_path):
    """Plain SGD with lr = 1e-30 (0 is refused) leaves the float32 weights, hence their signs, where they started."""
    res = T.train(cfg(tmp_path, algo="float", epochs=2, batch_size=64, overrides={"lr": 1e-30}))
    assert all(res.trainer.weights("float")[n].abs().min() > 1e-20 for n in res.trainer.net.quantised)
    for r in _log(tmp_path / "run"):
        f = r["sign_flips"]
        assert f["epoch"] == f["since_init"] == f["ever"] == 0 and all(lay["ever"] == 0 for lay in f["layers"])


def test_a_crash_between_checkpoint_and_log_is_repaired_on_resume(tmp_path):
    """The checkpoint commits an epoch: a log left short by a kill after it, and the temporary of a
    killed checkpoint write, are repaired when the run is resumed (issue 12, item 6)."""
    T.train(cfg(tmp_path, epochs=2, batch_size=128))
    log_path = tmp_path / "run" / "log.jsonl"
    full = log_path.read_text()
    log_path.write_text(full.splitlines(keepends=True)[0])  # as if killed before the log was rewritten
    (tmp_path / "run" / ".checkpoint.pt.abc123.tmp").write_bytes(b"half a checkpoint")
    (tmp_path / "run" / ".log.jsonl.def456.tmp").write_text("half a log")
    res = T.train(cfg(tmp_path, epochs=2, batch_size=128, resume=True))  # nothing left to train
    assert log_path.read_text() == full and res.summary["epochs"] == 2
    assert not [p for p in (tmp_path / "run").iterdir() if p.name.startswith(".")]


def test_a_run_without_a_live_bar_speaks_at_start_and_every_minute(tmp_path, capsys, monkeypatch):
    """stderr not a terminal (a log file, nohup): a line before the data is read, one when training
    starts, and one at least every HEARTBEAT_S seconds; none with --no-progress."""
    from stam.dnn import train as T

    monkeypatch.setattr(T, "HEARTBEAT_S", 0.0)
    cfg = dict(model="mlp", dataset="digits", preset="our3", epochs=1, batch_size=64, schedule_scale="auto", device="cpu")
    T.train(TrainConfig(**cfg, out=str(tmp_path / "a")))
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("stam train: Our3 on MLP (width 1), digits, 1,294 training images; epochs 1..1 of 21 steps")
    assert "re-estimated for the evaluated weights" in err[0]
    assert any(line.startswith("stam train: epoch 1/1, step 21/21, loss ") for line in err)
    T.train(TrainConfig(**cfg, out=str(tmp_path / "b"), progress=False))
    assert not [line for line in capsys.readouterr().err.splitlines() if line.startswith("stam train:")]


def test_short_epochs_write_few_checkpoints_and_a_stopped_run_keeps_every_finished_epoch(tmp_path, monkeypatch):
    """Checkpoints are written at the last epoch and once CHECKPOINT_EVERY_S has passed (a run of 0.07 s epochs
    does not spend its time writing them); a run stopped in its epoch 4 (an interrupt) still has the checkpoint and
    log of epoch 3, and resuming it gives the uninterrupted run's weights and log."""
    from stam.dnn import batched, checkpoint

    writes = []
    real_write = checkpoint.write
    monkeypatch.setattr(checkpoint, "write", lambda path, payload: (writes.append(payload["epoch"]), real_write(path, payload))[1])
    monkeypatch.setattr(T, "CHECKPOINT_EVERY_S", 3600.0)
    straight = T.train(cfg(tmp_path, "a", algo="stam", epochs=5, seed=4))
    assert writes == [5]

    real_epoch = batched.Trainer.train_epoch

    def interrupted(self, epoch, *a, **k):
        if epoch == 4:
            raise KeyboardInterrupt
        return real_epoch(self, epoch, *a, **k)

    monkeypatch.setattr(batched.Trainer, "train_epoch", interrupted)
    writes.clear()
    with pytest.raises(KeyboardInterrupt):
        T.train(cfg(tmp_path, "b", algo="stam", epochs=5, seed=4))
    assert writes == [3] and len(_log(tmp_path / "b")) == 3
    monkeypatch.setattr(batched.Trainer, "train_epoch", real_epoch)
    resumed = T.train(cfg(tmp_path, "b", algo="stam", epochs=5, seed=4, resume=True))
    for (k, v), (k2, v2) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items()):
        assert k == k2 and torch.equal(v, v2), k
    assert _log(tmp_path / "a") == _log(tmp_path / "b")
