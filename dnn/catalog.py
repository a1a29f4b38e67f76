"""What ``stam train`` trains, declared once: the algorithms (Section 3.1 of the paper), the
models and the data sets.

Each algorithm declares here its name, hyperparameters and optimiser (its label, equation, colour
and marker are its update rule's, :data:`stam.algorithm.RULES`); ``stam train``/``stam tune`` (their
choices), the presets (which keys a preset of it must set), the trainer (which optimiser to build
and which hyperparameters to put into its groups each epoch), the tuner (its label, the metric it
is chosen on) and the tables read them from here.  Imports no torch.

To add an algorithm: write its pure step beside :func:`stam.algorithm.stam_step` (as
``psgd_step``, ``bc_step``, ``br_step`` are) and its :class:`stam.algorithm.Rule` (label,
equation, colour, marker) in ``RULES`` there, its ``torch.optim`` class in a module
``stam.dnn.optim_NAME`` calling that step, its batched form ``BATCHED`` there (a
:class:`stam.dnn.optim_common.BatchedRule`, for maps and tuning), one :class:`Algorithm` here, its paper preset in
``presets.json`` (``hyper`` = exactly the keys declared here) and its search space there; the
tests parametrised over :data:`NAMES` then check it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from stam.algorithm import rule
from stam.datasets import DATASET_NAMES, DATASETS
from stam.registry import load, lookup


@dataclass(frozen=True)
class Algorithm:
    """A training algorithm.  ``hyper``: the hyperparameters its optimiser takes from the schedule
    (every preset of it sets exactly these); ``optimizer``: ``"module:Class"`` of its
    ``torch.optim.Optimizer`` (``fixed`` are constructor arguments it always gets; ``schedule_only``
    the keys of ``hyper`` that steer the schedule but are not constructor arguments);
    ``batched``: ``"module:NAME"`` of its :class:`stam.dnn.optim_common.BatchedRule` (R runs at
    once, :mod:`stam.dnn.batched`);
    ``binary``: it trains binary weights (selected and reported on binary-weight accuracy; the float
    baseline is selected on float weights); ``theorem``: Theorem conv's conditions apply to its
    (gamma, lambda, beta); ``step``: the hyperparameter that is its step size and the power that
    makes it one (``("lr", 1)``; STAM's y-step of eq. (algy) is ``1/beta``: ``("beta", -1)``), which
    ``stam tune --schedule`` shapes.  Its ``label``, ``equation``, ``color`` and ``marker`` are its update
    rule's (:data:`stam.algorithm.RULES`, declared beside the steps)."""

    name: str
    hyper: tuple
    optimizer: str
    batched: str
    fixed: dict = field(default_factory=dict)
    schedule_only: tuple = ()
    binary: bool = True
    theorem: bool = False
    step: tuple = ("lr", 1)

    @property
    def label(self) -> str:
        return rule(self.name).label

    @property
    def equation(self) -> str:
        return rule(self.name).equation

    @property
    def color(self) -> str:
        return rule(self.name).color

    @property
    def marker(self) -> str:
        return rule(self.name).marker

    def optimizer_class(self):
        return load(self.optimizer)

    def batched_rule(self):
        """Its :class:`stam.dnn.optim_common.BatchedRule` (imports torch)."""
        return load(self.batched)

    def constructor_args(self, hyper: dict) -> dict:
        """The optimiser's keyword arguments from the hyperparameters of the first epoch."""
        return {**{k: hyper[k] for k in self.hyper if k not in self.schedule_only}, **self.fixed}

    @property
    def score_key(self) -> str:
        """The validation metric a trial of this algorithm is chosen on."""
        return "val_acc_binary" if self.binary else "val_acc_float"


ALGORITHMS = (
    Algorithm("stam", ("gamma", "lam", "beta"), "stam.dnn.optim_stam:STAM", "stam.dnn.optim_stam:BATCHED", theorem=True,
              step=("beta", -1)),
    Algorithm("bc", ("lr", "weight_decay"), "stam.dnn.optim_bc:BinaryConnect", "stam.dnn.optim_bc:BATCHED"),
    Algorithm("br", ("lr", "lam", "weight_decay", "switch_epoch"), "stam.dnn.optim_br:BinaryRelax",
              "stam.dnn.optim_br:BATCHED", fixed={"rho": 1.0}, schedule_only=("switch_epoch",)),  # lam's growth: the schedule
    Algorithm("psgd", ("lr", "weight_decay"), "stam.dnn.optim_psgd:PSGD", "stam.dnn.optim_psgd:BATCHED"),
    Algorithm("float", ("lr", "momentum", "weight_decay"), "torch.optim:SGD", "stam.dnn.optim_float:BATCHED", binary=False),
)

#: the names ``--algo`` takes, in the order of the paper's tables
NAMES = tuple(a.name for a in ALGORITHMS)


def algorithm(name: str) -> Algorithm:
    """The algorithm called ``name``; ``KeyError`` naming the known ones."""
    return lookup(ALGORITHMS, name, "algorithm")


#: The networks (built by :func:`stam.dnn.models.build_model`) with the names tables give them.
#: To add one: its ``nn.Module`` and a branch of ``build_model`` in :mod:`stam.dnn.models`, and
#: one entry here.
MODELS = {"vgg11": "VGG-11", "vgg16": "VGG-16", "resnet18": "ResNet-18", "cnn": "SmallCNN", "mlp": "MLP"}
MODEL_NAMES = tuple(MODELS)

#: The data sets (read by :func:`stam.dnn.data.load`): :data:`stam.datasets.DATASETS`, declared in
#: the core because the convergence map's file format names them too; listed here with the rest.

#: CIFAR-10's and CIFAR-100's training images (the official archives; Section 3.2 of the paper)
CIFAR_TRAIN_IMAGES = 50_000

#: The share of a training set held out as validation data, on which every choice (the epoch a
#: run is judged by, tuning trials) is made: ``--val-fraction``'s default everywhere.
VAL_FRACTION = 0.1

#: The evaluation protocol of every network accuracy the toolkit reports (``--bn-images``): before
#: any network is evaluated, BatchNorm's statistics are re-estimated for the weights evaluated, on
#: a fixed subset of this many unaugmented training images (at most the training set; seeded by
#: :data:`BN_SEED`, the same images for every algorithm, run and epoch); 0 = the statistics as
#: trained, which describe the forward weights of training (STAM's W, PSGD's U, BR's relaxed
#: weights), not the binary network.  See :meth:`stam.dnn.batched.Trainer.statistics`.  2500 images: an epoch
#: evaluates two networks (binary and float weights), and two train-mode passes over 2500 images cost about 7% of an
#: epoch of VGG-11 at width 1/8 on CIFAR-10's 45,000 training images (5000: 16%, above the 10% the rule may cost;
#: ``benchmarks/bn_reestimate_cost.py``), while the statistics of 2500 images per channel (each over 32x32 positions
#: or more) are exact to far below what an accuracy can show.
BN_IMAGES = 2500
BN_SEED = 12345


def bn_protocol(bn_images, n_train: int | None = None) -> str:
    """The evaluation protocol in words, for every caption and table: ``bn_images`` as a result
    file records it (None: a file written before the protocol was recorded, evaluated as trained),
    at most ``n_train`` (the training images, where known)."""
    if not bn_images:
        return ("BatchNorm statistics as trained (those of the training's forward weights; for STAM, PSGD and BR not the "
                "binary network's)")
    if not n_train:
        return f"BatchNorm statistics re-estimated for the evaluated weights on {int(bn_images):,} training images (or all, if fewer)"
    n = min(int(bn_images), int(n_train))
    every = " (all)" if n == int(n_train) else ""
    return f"BatchNorm statistics re-estimated for the evaluated weights on {n:,} training images{every}"


def chance_level(num_classes: int) -> float:
    """The accuracy (percent) of guessing one class: 100 / classes."""
    return 100.0 / num_classes


def at_chance(acc, num_classes: int, n_images: int | None = None) -> bool:
    """Whether an accuracy (percent) is at or below chance: not above ``100/classes`` by more
    than three standard errors of a guessing classifier on ``n_images`` images (0 without ``n_images``).
    Such an accuracy is a bug until shown otherwise, so every output flags it."""
    if acc is None:
        return False
    p = 1.0 / num_classes
    margin = 0.0 if not n_images else 300.0 * math.sqrt(p * (1 - p) / n_images)
    return acc <= chance_level(num_classes) + margin

#: What ``stam tune`` and ``stam map`` train on each data set unless told otherwise: the model, its
#: channel width, the batch size and the epochs of every run.  CIFAR's defaults fit a 2-core CPU
#: (VGG-11 at width 1/8: about 20 s per epoch and run on one core, measured); the paper's
#: networks are ``--width 1`` (a GPU).
SWEEP_DEFAULTS = {
    "digits": {"model": "mlp", "width": 1.0, "batch_size": 32, "epochs": 60},
    "cifar10": {"model": "vgg11", "width": 0.125, "batch_size": 128, "epochs": 10},
    "cifar100": {"model": "vgg11", "width": 0.125, "batch_size": 128, "epochs": 10},
}


def sweep_settings(dataset: str, given) -> dict:
    """The model, width, batch size and epochs of a sweep on ``dataset``: each attribute of
    ``given`` (a command's parameters) that is set, else :data:`SWEEP_DEFAULTS`'s."""
    d = SWEEP_DEFAULTS[dataset]
    return {k: d[k] if getattr(given, k, None) is None else getattr(given, k) for k in ("model", "width", "batch_size", "epochs")}


__all__ = ["sweep_settings", "Algorithm", "ALGORITHMS", "NAMES", "algorithm", "MODELS", "MODEL_NAMES", "DATASETS", "DATASET_NAMES", "SWEEP_DEFAULTS",
           "CIFAR_TRAIN_IMAGES", "VAL_FRACTION", "BN_IMAGES", "BN_SEED", "bn_protocol", "chance_level", "at_chance"]
