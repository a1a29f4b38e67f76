"""Subcommands of this area (registered by ``stam.cli``): ``stam train``, ``stam table`` and
``stam tune``.  The flags of train and tune come from their parameters (:mod:`stam.dnn.params`);
the handlers turn a parsed command line into those and call the library.  Imports nothing at module
level: each command's flags are added (their parameters imported) when it is parsed or its help shown
(``build=``, :class:`stam.cli._Parser`), torch by the handlers."""

from __future__ import annotations


def register(subparsers) -> None:
    """Add this area's subcommands to ``stam``'s subparsers."""
    subparsers.add_parser(
        "train",
        help="train a binary-weight network (Section 3: STAM, BC, BR, PSGD, float)",
        description="Train VGG-11/VGG-16/ResNet-18 (or the small CNN/MLP) with binary weights on CIFAR-10/100 or "
        "digits, with the hyperparameter presets of Table para; one readable line per epoch and a closing summary on stdout "
        "(--json: the JSON records), every epoch's record in OUT/log.jsonl.",
        build=_build_train,
    )
    subparsers.add_parser(
        "table",
        help="binary test accuracy per model x algorithm (epoch chosen on validation data), beside the paper's tables",
        description="Collect RUNS_DIR/**/summary.json and print the best binary test accuracy (float accuracy for the "
        "float baseline) per model and algorithm as Markdown, the paper's numbers beside ours where a run exists.",
        build=_build_table,
    )
    subparsers.add_parser(
        "tune",
        help="equal-budget tuning of STAM, BC, BR, PSGD and float (digits by default, or CIFAR), numbers from fresh seeds",
        description="Every algorithm gets the same number of quasi-random (Sobol) trials over its declared search space "
        "(each rule's search_space, stam/rules/); the best trial is chosen on validation accuracy with binary weights, then re-run "
        "on fresh seeds; prints the table (mean +- std, 95% interval of test accuracy), with the paper's settings as "
        "labelled rows. Writes OUT/tune-DATASET.json and .md; finished jobs are kept in OUT/jobs, so running the same "
        "command again resumes. Defaults per data set: digits, MLP, 60 epochs, batch 32 (about 3 min on 2 cores); "
        "cifar10, VGG-11 at width 1/8, 10 epochs, batch 128.",
        build=_build_tune,
    )


def _build_train(p) -> None:
    from stam.dnn.params import TrainConfig
    from stam.params import add_arguments

    add_arguments(p, TrainConfig)
    p.set_defaults(func=_train)


def _build_table(t) -> None:
    from stam.datasets import DATASET_NAMES

    t.add_argument("runs_dir", metavar="RUNS_DIR")
    t.add_argument("--latex", action="store_true", help="LaTeX instead of Markdown")
    t.add_argument("--dataset", choices=DATASET_NAMES, help="only this data set (default: every one found)")
    t.add_argument("--time", action="store_true", help="add the mean wall time per run")
    t.add_argument("--paper-metric", action="store_true",
                   help="the paper's metric: the best test accuracy over the epochs (the epoch selected on the test set; "
                   "default: the test accuracy at the epoch selected on validation data)")
    t.set_defaults(func=_table)


def _build_tune(u) -> None:
    from stam.dnn.params import TuneParams
    from stam.params import add_arguments

    add_arguments(u, TuneParams)
    u.set_defaults(func=_tune)


def add_task_args(p, dataset_default: str | None = "digits") -> None:
    """What a sweep trains on: --dataset, --model, --width, --data-dir (the fields of
    :class:`stam.dnn.params.TuneParams`; defaults per data set: :data:`stam.dnn.catalog.SWEEP_DEFAULTS`)."""
    from stam.dnn.params import data_dir_arg, dataset_arg, model_arg, width_arg
    from stam.params import add_field

    if dataset_default is not None:
        add_field(p, "dataset", dataset_arg(dataset_default))
    add_field(p, "model", model_arg())
    add_field(p, "width", width_arg())
    add_field(p, "data_dir", data_dir_arg())


def _tune(args) -> int:
    from stam.dnn import tunestats
    from stam.dnn.params import TuneParams, refuse_data_dir
    from stam.dnn.tune import run_tune
    from stam.dnn.tunetext import format_table

    refuse_data_dir(args.data_dir, args.dataset)
    map_type = None
    if args.map is not None:  # the convergence map's type, given from above (a peer of stam.dnn declares it)
        from stam.synthetic.convergence_map import MAP

        map_type = MAP
    result, path = run_tune(TuneParams.from_args(args, map_type=map_type))
    print(format_table(result))
    for line in tunestats.difficulty_lines(result):
        print(f"Search difficulty: {line}")
    print(f"Results: {path}")
    return 0


def _train(args) -> int:
    import sys

    if args.list_presets:
        from stam.dnn import presets

        for name, entry in presets.table()["presets"].items():
            print(f"{name:14s} {entry['algo']:6s} {entry['source']}")
        return 0
    from stam.dnn.params import TrainConfig, refuse_data_dir
    from stam.dnn.train import Diverged, train

    refuse_data_dir(args.data_dir, args.dataset)

    try:
        train(TrainConfig.from_args(args))
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
