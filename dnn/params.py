"""The parameters of the network experiments, each one frozen dataclass (:mod:`stam.params`):
``stam train`` (:class:`TrainConfig`, run by :func:`stam.dnn.train.train`) and ``stam tune``
(:class:`TuneParams`, run by :func:`stam.dnn.tune.run_tune`).  Each field declares its flag, its type,
its default and its help once; the command lines (:mod:`stam.dnn.cli`), the library calls and the
job specifications read them here.  Imports no torch (``stam --help`` reads these declarations).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from stam.cliargs import ListArg, choice, n_seeds_arg, out_arg
from stam.dnn import presets
from stam.dnn.catalog import BN_AUGMENT, BN_IMAGES, BN_MAX_SHARE, MODEL_NAMES, NAMES, VAL_FRACTION, sweep_settings
from stam.datasets import BUNDLED, DATASET_NAMES
from stam.errors import MAX_WIDTH, batch_int, epochs_int, integer, positive_int, seed_int
from stam.jobs import scheduler_arg, workers_arg
from stam.params import Params, arg

#: ``--algos A,B,...`` (each once) and ``--keep-float first,last`` (or none)
ALGOS_LIST = ListArg(choice(NAMES), "algorithms", "stam,bc", unique=True, into=tuple)
KEEP_FLOAT_LIST = ListArg(choice(("first", "last")), "layers first, last", "first,last", none="none", into=tuple)


#: ``stam train --compile``: how the update runs (:data:`stam.dnn.compiled.COMPILE_MODES`, by these names)
COMPILE_MODE = {"auto": "auto", "on": True, "off": False, "aot": "aot"}
COMPILE_CHOICES = tuple(COMPILE_MODE)


#: where CIFAR is looked for when ``--data-dir`` is not given
DEFAULT_DATA_DIR = "data"


def _data_dir(value):
    """``--data-dir``: the parser keeps None where the flag is not given (so that a mode that reads no
    folder can refuse it, :func:`refuse_data_dir`); the field gets :data:`DEFAULT_DATA_DIR`."""
    return DEFAULT_DATA_DIR if value is None else value


def width_float(text: str) -> float:
    """argparse type: a network's channel-width multiplier, in (0, :data:`stam.errors.MAX_WIDTH`]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= MAX_WIDTH:
        raise argparse.ArgumentTypeError(f"{text}: the channel-width multiplier must be in (0, {MAX_WIDTH:g}] (1 = the paper's "
                                         "networks)")
    return value


def fraction_float(text: str) -> float:
    """argparse type: a number in (0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be a number in (0, 1)")
    return value


def scale_arg(text: str):
    """argparse type: ``--schedule-scale``, a number > 0 or ``auto``."""
    if text == "auto":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a number nor 'auto'") from None
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"{text} must be a number > 0 or 'auto'")
    return value


def halving_int(text: str) -> int:
    """argparse type: ``--halving``, 0 (off) or a reduction factor >= 2."""
    value = integer(text)
    if value == 1 or not 0 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"{text}: give 0 (no halving) or a reduction factor from 2 to 1000")
    return value


def bn_images_int(text: str) -> int:
    """argparse type: ``--bn-images``, an integer >= 0."""
    value = integer(text)
    if not (value == 0 or 2 <= value <= 10**9):
        raise argparse.ArgumentTypeError(f"{text} must be 0 (BatchNorm statistics as trained) or an integer from 2 to 10^9 "
                                         "(the statistics are re-estimated on batches of at least 2 images)")
    return value


def bn_images_arg(default: int | None = BN_IMAGES, job: bool = False):
    """``--bn-images N``: the evaluation protocol of every accuracy (:data:`stam.dnn.catalog.BN_IMAGES`)."""
    return arg("--bn-images", type=bn_images_int, default=default, metavar="N", job=job,
               help=f"evaluate every network with BatchNorm statistics re-estimated for its own weights on N fixed "
               f"training images (default {BN_IMAGES}; cropped and flipped once on CIFAR, see --bn-unaugmented; at most {BN_MAX_SHARE:.0%}% of the training set, "
               "so digits uses 647 of its 1,294: the whole set would cost 17%% of an epoch, half of it 9%% and moves an "
               "accuracy by 0.2 points on average; 0 = the statistics as trained, which describe the training's forward "
               "weights, not the binary network)")


def bn_augment_arg(default: bool | None = BN_AUGMENT, job=False):
    """``--bn-unaugmented``: the images of the evaluation protocol (:data:`stam.dnn.catalog.BN_AUGMENT`).
    In a job's spec only where on (``job=bool``): a spec without it is one of the unaugmented rule,
    so job stores written before it keep their meaning (and resume with ``--bn-unaugmented``)."""
    return arg("--bn-unaugmented", action="store_false", default=default, job=bool if job else False,
               help="re-estimate BatchNorm's statistics on the --bn-images training images unaugmented (the toolkit's rule "
                    "until 2026-11-29) instead of cropped and flipped once, as the training sees them (the default on CIFAR, "
                    "where it is worth 0.6-2 points of test accuracy to every algorithm; digits is not augmented)")


def _overrides(items: list) -> dict:
    return dict(presets.parse_override(s) for s in items)


@dataclass(frozen=True)
class TrainConfig(Params):
    """``stam train``'s parameters (one run); ``no_val``: the paper's protocol, ``val_fraction``
    becomes None (no validation set)."""

    model: str = arg("--model", choices=MODEL_NAMES, default="vgg11")
    width: float = arg("--width", type=width_float, default=1.0, metavar="W",
                       help="channel-width multiplier of the network (default 1, the paper's; e.g. 0.125 fits a CPU)")
    dataset: str = arg("--dataset", choices=DATASET_NAMES, default="cifar10")
    algo: str | None = arg("--algo", choices=NAMES, default=None, help="default: the algorithm of --preset")
    preset: str | None = arg("--preset", default=None,
                             help=f"{', '.join(presets.names())} (default: the paper's for --algo; see --list-presets)")
    list_presets: bool = arg("--list-presets", action="store_true", default=False,
                             help="print the presets and their sources, then exit")
    epochs: int | None = arg("--epochs", type=epochs_int, default=None, help="default 1000 (the paper)")
    batch_size: int | None = arg("--batch-size", type=batch_int, default=None,
                                 help="global batch size, default 128 (the paper)")
    seed: int = arg("--seed", type=seed_int, default=0)
    overrides: dict = arg("--set", action="append", default_factory=dict, cli_default=[], convert=_overrides,
                          metavar="KEY=VALUE", help="override a hyperparameter: a number (constant) or a JSON schedule, "
                          "e.g. --set gamma=0.1 --set beta=500")
    schedule_scale: float | str = arg("--schedule-scale", type=scale_arg, default=1.0, metavar="S|auto",
                                      help="run epoch e with the preset's hyperparameters at paper epoch floor((e-1)/S)+1 "
                                      "(the run starts at paper epoch 1); 'auto' = epochs/1000")
    keep_float: tuple = arg("--keep-float", type=KEEP_FLOAT_LIST, default=(), metavar="first,last",
                            help="keep the first conv and/or last linear layer float (default: quantise every conv and "
                            "linear weight)")
    data_dir: str = arg("--data-dir", default=DEFAULT_DATA_DIR, cli_default=None, convert=_data_dir,
                        help="folder with cifar-10-python.tar.gz (or its extracted folder), else an image copy "
                        "cifar10-jpeg.tar.gz, .tgz, .tar, .zip or folder cifar10-jpeg/ (cifar100-jpeg for CIFAR-100); or "
                        "such an image archive or folder itself (default ./data)")
    download: bool = arg("--download", action="store_true", default=False,
                         help="fetch a missing CIFAR archive from https://www.cs.toronto.edu/~kriz/")
    out: str | None = out_arg(help="run directory (default runs/DATASET-MODEL-PRESET-seedS)")
    label: str | None = arg("--label", default=None,
                            help="column name for 'stam table' (default: the preset's, e.g. Our3; Our3* with --set)")
    val_fraction: float | None = arg("--val-fraction", type=fraction_float, default=VAL_FRACTION, metavar="F",
                                     help=f"validation share carved out of the training set, stratified by class (default "
                                     f"{VAL_FRACTION:g}); epochs and configurations are selected on it, never on the test set")
    split_seed: int = arg("--split-seed", type=seed_int, default=0,
                          help="seed of the validation split (default 0; independent of --seed)")
    no_val: bool = arg("--no-val", action="store_true", default=False,
                       help="the paper's protocol: no validation set, train on the whole training set")
    resume: bool = arg("--resume", action="store_true", default=False, help="continue the run in --out from its checkpoint")
    device: str = arg("--device", choices=("auto", "cpu", "cuda"), default="auto")
    bf16: bool = arg("--bf16", action="store_true", default=False, help="bf16 autocast for forward/backward")
    proxies: bool = arg("--proxies", action="store_true", default=False,
                        help="STAM only: log its stationarity proxies (Theorem conv's measure, each epoch's mean over "
                        "its steps; the 'practice' figure draws them); they cost a further pass over the weights "
                        "every step (on digits about a fifth of STAM's training time)")
    compile: str = arg("--compile", choices=COMPILE_CHOICES, default="auto",
                       help="the update: 'auto' compiles it (torch.compile) where the run is long enough to pay for "
                       "that, 'on' always, 'off' never; 'aot' (CPU): compiled ahead of time into a package kept in "
                       "$STAM_CACHE_DIR (else ~/.cache/stam), built once (tens of seconds) and loaded by every later "
                       "run with the same network, algorithm and batch layout in milliseconds")
    eval_batch_size: int = arg("--eval-batch-size", type=positive_int, default=1000)
    bn_images: int = bn_images_arg()
    bn_augment: bool = bn_augment_arg()
    progress: bool = arg("--no-progress", action="store_false", default=True, help="no progress bar on stderr")
    echo: bool = arg("--quiet", action="store_false", default=True,  # one readable line per epoch and a closing summary
                     help="print nothing on stdout (the records are in OUT/log.jsonl)")
    force: bool = arg("--force", action="store_true", default=False,
                      help="train even above the work limit (10 times the paper's run in image passes)")
    json: bool = arg("--json", action="store_true", default=False,  # with echo: the epoch's JSON record instead
                     help="print each epoch's JSON record (a line of OUT/log.jsonl) instead of the readable line, and no "
                     "closing summary")
    cache_dir: str | None = None  # decoded image collections (default: stam.io.cache_home)
    checksums: dict | None = None  # the archives' MD5s (stam.dnn.data.load_cifar; default: the official ones)

    def __post_init__(self):
        if self.no_val:
            object.__setattr__(self, "val_fraction", None)


# --------------------------------------------------------------------------- what a sweep trains on

def dataset_arg(default: str | None = "digits"):
    """``--dataset`` of a sweep (tune, map)."""
    return arg("--dataset", choices=DATASET_NAMES, default=default, help=f"default {default}", job=True)


def model_arg():
    return arg("--model", choices=MODEL_NAMES, default=None, help="default: mlp on digits, vgg11 on CIFAR", job=True)


def width_arg():
    return arg("--width", type=width_float, default=None, metavar="W", job=True,
               help="channel-width multiplier of the network (default: 1 on digits, 0.125 on CIFAR; 1 = the paper's)")


def refuse_data_dir(given: str | None, dataset: str | None, synthetic: bool = False) -> None:
    """A one-line :class:`UsageError` where ``--data-dir`` was given (``given``: the flag's value as typed,
    None where it was not) to a mode that reads no folder: a data set that comes with its package
    (:data:`stam.datasets.BUNDLED`, digits from scikit-learn) or a synthetic map (``stam map --problem``,
    ``synthetic``); it was accepted and ignored (issue 40 item 6)."""
    if given is None:
        return
    from stam.errors import UsageError

    if synthetic:
        raise UsageError(f"--data-dir {given} is for a network map on CIFAR (--dataset); the synthetic map (--problem) "
                         "reads no data: drop --data-dir")
    if dataset in BUNDLED:
        raise UsageError(f"--data-dir {given} is for CIFAR (its archive or an image copy); --dataset {dataset} comes "
                         "with scikit-learn and reads no folder: drop --data-dir")


def data_dir_arg():
    return arg("--data-dir", default=DEFAULT_DATA_DIR, cli_default=None, convert=_data_dir, job=True,
               help="CIFAR: folder with the official archive or an image copy, or the image archive/folder itself "
               "(default ./data)")


@dataclass(frozen=True)
class TuneParams(Params):
    """``stam tune``'s parameters (:mod:`stam.dnn.tune`).  ``model``, ``width``, ``epochs`` and
    ``batch_size`` not given are the data set's sweep defaults (:data:`stam.dnn.catalog.SWEEP_DEFAULTS`),
    filled in when the object is made; :meth:`spec` (what every job of the tuning trains on, on
    what data, how long) holds the fields marked ``job``."""

    algos: tuple = arg("--algos", type=ALGOS_LIST, default=NAMES, metavar="A,B,...", help=f"default: {','.join(NAMES)}")
    trials: int = arg("--trials", type=positive_int, default=16, help="trials per algorithm, the same for each (default 16)")
    n_seeds: int = n_seeds_arg(5, "fresh seeds for the final numbers (default 5, at least 2)")
    dataset: str = dataset_arg()
    model: str | None = model_arg()
    width: float | None = width_arg()
    data_dir: str = data_dir_arg()
    epochs: int | None = arg("--epochs", type=epochs_int, default=None, job=True,
                             help="epochs of every run (default: 60 digits, 10 CIFAR)")
    batch_size: int | None = arg("--batch-size", type=batch_int, default=None, job=True, help="default: 32 digits, 128 CIFAR")
    val_fraction: float = arg("--val-fraction", type=fraction_float, default=VAL_FRACTION, job=True,
                              help=f"validation share of the training set (default {VAL_FRACTION:g})")
    split_seed: int = arg("--split-seed", type=seed_int, default=0, job=True, help="seed of the validation split (default 0)")
    bn_images: int = bn_images_arg(job=True)
    bn_augment: bool = bn_augment_arg(job=True)
    tune_seed: int = arg("--tune-seed", type=seed_int, default=0,
                         help="seed of the Sobol points and of the trials' training (default 0)")
    space_file: str | None = arg("--space-file", default=None, metavar="JSON",
                                 help="search spaces to use instead of the rules' own (stam/rules/), e.g. "
                                 '{"stam": {"gamma": {"log_uniform": [0.01, 10]}, ...}, ...}')
    schedule: str = arg("--schedule", choices=tuple(presets.step_schedules()), default="constant",
                        help="the step of every algorithm (lr; STAM's y-step 1/beta) over a run: 'constant' (default, "
                        "the sampled value throughout, as before), 'warmup-cosine' (linear warm-up over the first 5%% of "
                        "the run, then cosine decay to 1e-3 of it; presets.json: step_schedules); the paper rows keep their "
                        "own schedules")
    recipe: str = arg("--recipe", choices=tuple(presets.recipes()), default="none",
                      help="constants added to the trials, a labelled variant beyond the paper (presets.json: recipes): "
                      "'standard' gives Float momentum 0.9 and weight decay 5e-4; default none")
    halving: int = arg("--halving", type=halving_int, default=0, metavar="ETA",
                       help="successive halving: train every trial for epochs/ETA^K epochs, keep the best 1/ETA on "
                       "validation accuracy for ETA times more epochs, ..., the last rung at --epochs (default 0: every "
                       "trial for --epochs)")
    map: str | None = arg("--map", default=None, metavar="JSON",
                          help="a network map of STAM (stam map --dataset) from which to state the fraction of each "
                          "search space that trains and the chance that --trials trials find it (field "
                          "search_difficulty of the result; always estimated from the trials too)")
    paper: bool = arg("--no-paper", action="store_false", default=True, help="leave out the paper-settings rows")
    transfer: str | None = arg("--transfer", default=None, metavar="JSON",
                               help="no search: each algorithm's setting is the one chosen by this finished stam tune "
                               "result (e.g. VGG-11's), run on --n-seeds fresh seeds of this --model and --width, labelled "
                               "'transferred, not tuned' (its schedules and recipe come with it; --trials, --halving, "
                               "--space-file, --map, --schedule and --recipe do not apply)")
    out: str | None = out_arg(help="output folder (default tune-DATASET)")
    progress: bool = arg("--no-progress", action="store_false", default=True, help="no progress bars")
    force: bool = arg("--force", action="store_true", default=False,
                      help="tune even above the work limit (10 times the paper's run in image passes)")
    scheduler: str | None = scheduler_arg()
    workers: int = workers_arg()
    # the result type ``map`` is read through (stam.dnn.tunestats.read_map): a peer of stam.dnn declares it, so the
    # command line gives it; needed when a map is given
    map_type: object = None

    def __post_init__(self):
        for key, value in sweep_settings(self.dataset, self).items():
            object.__setattr__(self, key, float(value) if key == "width" else value)
        object.__setattr__(self, "algos", tuple(self.algos))
        object.__setattr__(self, "data_dir", str(self.data_dir))

    def task(self) -> dict:
        """What is trained on what (:func:`stam.dnn.sweep.task_spec`'s keys)."""
        return {k: getattr(self, k) for k in ("dataset", "model", "width", "data_dir")}

__all__ = ["TrainConfig", "TuneParams", "bn_images_arg", "bn_augment_arg", "bn_images_int", "halving_int", "dataset_arg", "model_arg", "width_arg", "data_dir_arg", "refuse_data_dir", "DEFAULT_DATA_DIR", "ALGOS_LIST", "KEEP_FLOAT_LIST", "width_float", "fraction_float", "scale_arg"]
