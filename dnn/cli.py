"""Subcommands of this area (registered by ``stam.cli``): ``stam train`` and ``stam table``.
Imports nothing heavy at module level (torch is imported by the handlers)."""

from __future__ import annotations

import argparse

from stam.dnn.catalog import DATASET_NAMES as DATASETS, MODEL_NAMES as MODELS, NAMES as ALGOS, VAL_FRACTION
from stam.cliargs import ListArg, add_n_seeds, add_out, choice
from stam.errors import batch_int, positive_int, seed_int

#: ``--algos A,B,...`` (each once) and ``--keep-float first,last`` (or none)
ALGOS_LIST = ListArg(choice(ALGOS), "algorithms", "stam,bc", unique=True, into=tuple)
KEEP_FLOAT_LIST = ListArg(choice(("first", "last")), "layers first, last", "first,last", none="none", into=tuple)


def _scale(text: str):
    if text == "auto":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a number nor 'auto'") from None
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"{text} must be a number > 0 or 'auto'")
    return value


def register(subparsers) -> None:
    """Add this area's subcommands to ``stam``'s subparsers."""
    from stam.dnn import presets  # the preset names (JSON data; no torch)

    p = subparsers.add_parser(
        "train",
        help="train a binary-weight network (Section 3: STAM, BC, BR, PSGD, float)",
        description="Train VGG-11/VGG-16/ResNet-18 (or the small CNN/MLP) with binary weights on CIFAR-10/100 or "
        "digits, with the hyperparameter presets of Table para; one readable line per epoch and a closing summary on stdout "
        "(--json: the JSON records), every epoch's record in OUT/log.jsonl.",
    )
    p.add_argument("--model", choices=MODELS, default="vgg11")
    p.add_argument("--width", type=_width, default=1.0, metavar="W",
                   help="channel-width multiplier of the network (default 1, the paper's; e.g. 0.125 fits a CPU)")
    p.add_argument("--dataset", choices=DATASETS, default="cifar10")
    p.add_argument("--algo", choices=ALGOS, help="default: the algorithm of --preset")
    p.add_argument("--preset", help=f"{', '.join(presets.names())} (default: the paper's for --algo; see --list-presets)")
    p.add_argument("--list-presets", action="store_true", help="print the presets and their sources, then exit")
    p.add_argument("--epochs", type=positive_int, help="default 1000 (the paper)")
    p.add_argument("--batch-size", type=batch_int, help="global batch size, default 128 (the paper)")
    p.add_argument("--seed", type=seed_int, default=0)
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a hyperparameter: a number (constant) or a JSON schedule, e.g. --set gamma=0.1 --set beta=500")
    p.add_argument("--schedule-scale", type=_scale, default=1.0, metavar="S|auto",
                   help="run epoch e with the preset's hyperparameters at paper epoch floor((e-1)/S)+1 (the run starts at paper epoch 1); 'auto' = epochs/1000")
    p.add_argument("--keep-float", type=KEEP_FLOAT_LIST, default=(), metavar="first,last",
                   help="keep the first conv and/or last linear layer float (default: quantise every conv and linear weight)")
    p.add_argument("--data-dir", default="data",
                   help="folder with cifar-10-python.tar.gz (or its extracted folder), else an image copy cifar10-jpeg.tar.gz, "
                   ".tgz, .tar, .zip or folder cifar10-jpeg/ (cifar100-jpeg for CIFAR-100); or such an image archive or "
                   "folder itself (default ./data)")
    p.add_argument("--download", action="store_true", help="fetch a missing CIFAR archive from https://www.cs.toronto.edu/~kriz/")
    add_out(p, help="run directory (default runs/DATASET-MODEL-PRESET-seedS)")
    p.add_argument("--label", help="column name for 'stam table' (default: the preset's, e.g. Our3; Our3* with --set)")
    p.add_argument("--val-fraction", type=_fraction, default=VAL_FRACTION, metavar="F",
                   help=f"validation share carved out of the training set, stratified by class (default {VAL_FRACTION:g}); "
                   "epochs and configurations are selected on it, never on the test set")
    p.add_argument("--split-seed", type=seed_int, default=0, help="seed of the validation split (default 0; independent of --seed)")
    p.add_argument("--no-val", action="store_true", help="the paper's protocol: no validation set, train on the whole training set")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast for forward/backward")
    p.add_argument("--eval-batch-size", type=positive_int, default=1000)
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--quiet", action="store_true", help="print nothing on stdout (the records are in OUT/log.jsonl)")
    p.add_argument("--force", action="store_true", help="train even above the work limit (10 times the paper's run in image passes)")
    p.add_argument("--json", action="store_true", help="print each epoch's JSON record (a line of OUT/log.jsonl) instead of "
                   "the readable line, and no closing summary")
    p.set_defaults(func=_train)

    t = subparsers.add_parser(
        "table",
        help="binary test accuracy per model x algorithm (epoch chosen on validation data), beside the paper's tables",
        description="Collect RUNS_DIR/**/summary.json and print the best binary test accuracy (float accuracy for the "
        "float baseline) per model and algorithm as Markdown, the paper's numbers beside ours where a run exists.",
    )
    t.add_argument("runs_dir", metavar="RUNS_DIR")
    t.add_argument("--latex", action="store_true", help="LaTeX instead of Markdown")
    t.add_argument("--dataset", choices=DATASETS, help="only this data set (default: every one found)")
    t.add_argument("--time", action="store_true", help="add the mean wall time per run")
    t.add_argument("--paper-metric", action="store_true",
                   help="the paper's metric: the best test accuracy over the epochs (the epoch selected on the test set; "
                   "default: the test accuracy at the epoch selected on validation data)")
    t.set_defaults(func=_table)

    from stam.jobs import add_scheduler_args

    u = subparsers.add_parser(
        "tune",
        help="equal-budget tuning of STAM, BC, BR, PSGD and float (digits by default, or CIFAR), numbers from fresh seeds",
        description="Every algorithm gets the same number of quasi-random (Sobol) trials over its declared search space "
        "(presets.json: search_spaces); the best trial is chosen on validation accuracy with binary weights, then re-run "
        "on fresh seeds; prints the table (mean +- std, 95%% interval of test accuracy), with the paper's settings as "
        "labelled rows. Writes OUT/tune-DATASET.json and .md; finished jobs are kept in OUT/jobs, so running the same "
        "command again resumes. Defaults per data set: digits, MLP, 60 epochs, batch 32 (about 3 min on 2 cores); "
        "cifar10, VGG-11 at width 1/8, 10 epochs, batch 128.",
    )
    u.add_argument("--algos", type=ALGOS_LIST, default=ALGOS, metavar="A,B,...", help=f"default: {','.join(ALGOS)}")
    u.add_argument("--trials", type=positive_int, default=16, help="trials per algorithm, the same for each (default 16)")
    add_n_seeds(u, 5, "fresh seeds for the final numbers (default 5, at least 2)")
    add_task_args(u)
    u.add_argument("--epochs", type=positive_int, default=None, help="epochs of every run (default: 60 digits, 10 CIFAR)")
    u.add_argument("--batch-size", type=batch_int, default=None, help="default: 32 digits, 128 CIFAR")
    u.add_argument("--val-fraction", type=_fraction, default=VAL_FRACTION, help=f"validation share of the training set (default {VAL_FRACTION:g})")
    u.add_argument("--split-seed", type=seed_int, default=0, help="seed of the validation split (default 0)")
    u.add_argument("--tune-seed", type=seed_int, default=0, help="seed of the Sobol points and of the trials' training (default 0)")
    u.add_argument("--space-file", metavar="JSON", help="search spaces to use instead of presets.json's, e.g. "
                   '{"stam": {"gamma": {"log_uniform": [0.01, 10]}, ...}, ...}')
    u.add_argument("--no-paper", action="store_true", help="leave out the paper-settings rows")
    add_out(u, help="output folder (default tune-DATASET)")
    u.add_argument("--no-progress", action="store_true", help="no progress bars")
    u.add_argument("--force", action="store_true", help="tune even above the work limit (10 times the paper's run in image passes)")
    add_scheduler_args(u)
    u.set_defaults(func=_tune)


def _width(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 64:
        raise argparse.ArgumentTypeError(f"{text}: the channel-width multiplier must be in (0, 64] (1 = the paper's networks)")
    return value


def add_task_args(p, dataset_default: str | None = "digits") -> None:
    """What a sweep trains on: --dataset, --model, --width, --data-dir (defaults per data set:
    :data:`stam.dnn.catalog.SWEEP_DEFAULTS`)."""
    if dataset_default is not None:
        p.add_argument("--dataset", choices=DATASETS, default=dataset_default, help=f"default {dataset_default}")
    p.add_argument("--model", choices=MODELS, default=None, help="default: mlp on digits, vgg11 on CIFAR")
    p.add_argument("--width", type=_width, default=None, metavar="W",
                   help="channel-width multiplier of the network (default: 1 on digits, 0.125 on CIFAR; 1 = the paper's)")
    p.add_argument("--data-dir", default="data", help="CIFAR: folder with the official archive or an image copy, or the "
                   "image archive/folder itself (default ./data)")


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be a number in (0, 1)")
    return value


def _tune(args) -> int:
    import json
    from pathlib import Path

    from stam.errors import UsageError
    from stam.io import check_out_dir

    spaces = None
    if args.space_file:
        from stam.io import read_input_text

        text = read_input_text(Path(args.space_file), f"--space-file {args.space_file}")
        try:
            spaces = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise UsageError(f"--space-file {args.space_file}: not a readable JSON file ({type(exc).__name__})") from None
        if not isinstance(spaces, dict):
            raise UsageError(f"--space-file {args.space_file}: expected an object algorithm -> search space")
    from stam.dnn import batched, sweep, tune
    from stam.dnn.catalog import sweep_settings

    d = sweep_settings(args.dataset, args)
    out = Path(args.out if args.out is not None else tune.result_stem(args.dataset))
    check_out_dir(out, "--out")
    task = sweep.task_spec(args.dataset, d["model"], d["width"], args.data_dir)
    chunk = batched.runs_per_job(d["model"], sweep.job_device())
    tune.plan(args.algos, args.trials, args.n_seeds, d["epochs"], d["batch_size"], args.val_fraction, args.split_seed,
              args.tune_seed, chunk, spaces, task)  # every usage error before any work
    sweep.check_task(task, args.val_fraction, args.split_seed)  # the data set, the model, the split: one line before any work
    from stam.dnn import epochs as ep

    n_train = sweep.train_size(task)
    runs = len(args.algos) * (args.trials + args.n_seeds * 2)  # trials, fresh seeds, and the paper rows at most
    ep.check_work(float(runs) * d["epochs"] * n_train, f"{len(args.algos)} algorithms x ({args.trials} trials + {args.n_seeds} seeds) "
                  f"x {d['epochs']} epochs", args.force)
    result = tune.tune(args.algos, out, trials=args.trials, seeds=args.n_seeds, epochs=d["epochs"],
                       batch_size=d["batch_size"], val_fraction=args.val_fraction, split_seed=args.split_seed,
                       tune_seed=args.tune_seed, paper=not args.no_paper, scheduler=args.scheduler, workers=args.workers,
                       progress=not args.no_progress, spaces=spaces, chunk=chunk, task=task)
    print(tune.format_table(result))
    print(f"Results: {out / (tune.result_stem(args.dataset) + '.json')}")
    return 0


def _train(args) -> int:
    import sys

    from stam.dnn import presets

    if args.list_presets:
        for name, entry in presets.table()["presets"].items():
            print(f"{name:14s} {entry['algo']:6s} {entry['source']}")
        return 0
    from stam.dnn.train import Diverged, TrainConfig, run

    overrides = dict(presets.parse_override(s) for s in args.overrides)
    cfg = TrainConfig(
        model=args.model, width=args.width, dataset=args.dataset, algo=args.algo, preset=args.preset, epochs=args.epochs,
        batch_size=args.batch_size, seed=args.seed, overrides=overrides, schedule_scale=args.schedule_scale,
        keep_float=args.keep_float, data_dir=args.data_dir, download=args.download, out=args.out, resume=args.resume,
        device=args.device, bf16=args.bf16, eval_batch_size=args.eval_batch_size, progress=not args.no_progress,
        echo=not args.quiet, json=args.json, force=args.force, label=args.label, val_fraction=None if args.no_val else args.val_fraction,
        split_seed=args.split_seed,
    )
    try:
        run(cfg)
    except Diverged as exc:
        print(f"stam: error: {exc}", file=sys.stderr)
        return 1
    return 0


def _table(args) -> int:
    import sys

    from stam.dnn.table import render

    skipped: list = []
    text = render(args.runs_dir, latex=args.latex, dataset=args.dataset, with_time=args.time,
                  metric="paper" if args.paper_metric else "selected", skipped=skipped)
    for s in skipped:  # one line each: the file and why
        print(f"stam table: skipped {s.path}: {s.why}", file=sys.stderr)
    print(text)
    return 0
