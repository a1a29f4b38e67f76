"""What ``stam train`` trains, declared once: the algorithms (Section 3.1 of the paper), the
models and the data sets.

Each algorithm declares here its name, label, update rule, hyperparameters and optimiser; ``stam train``/``stam tune`` (their
choices), the presets (which keys a preset of it must set), the trainer (which optimiser to build
and which hyperparameters to put into its groups each epoch), the tuner (its label, the metric it
is chosen on) and the tables read them from here.  Imports no torch.

To add an algorithm: write its pure step beside :func:`stam.algorithm.stam_step` (as
``psgd_step``, ``bc_step``, ``br_step`` are), its ``torch.optim`` class in a module
``stam.dnn.optim_NAME`` calling that step, its batched form ``BATCHED`` there (a
:class:`stam.dnn.optim_common.BatchedRule`, for maps and tuning), one :class:`Algorithm` here, its paper preset in
``presets.json`` (``hyper`` = exactly the keys declared here) and its search space there, with its colour and marker in figures; the
tests parametrised over :data:`NAMES` then check it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    (gamma, lambda, beta); ``color`` (a colour of the Okabe-Ito palette,
    :data:`stam.figures.style.OKABE_ITO`) and ``marker`` (matplotlib's): how every figure draws it."""

    name: str
    label: str
    equation: str
    hyper: tuple
    optimizer: str
    batched: str
    fixed: dict = field(default_factory=dict)
    schedule_only: tuple = ()
    binary: bool = True
    theorem: bool = False
    color: str = "black"
    marker: str = "x"

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
    Algorithm("stam", "STAM", "eq. (alg:stamm)", ("gamma", "lam", "beta"), "stam.dnn.optim_stam:STAM",
              "stam.dnn.optim_stam:BATCHED", theorem=True, color="blue", marker="o"),
    Algorithm("bc", "BC", "eq. (alg:BC)", ("lr", "weight_decay"), "stam.dnn.optim_bc:BinaryConnect", "stam.dnn.optim_bc:BATCHED",
              color="sky_blue", marker="^"),
    Algorithm("br", "BR", "eq. (alg:BR)", ("lr", "lam", "weight_decay", "switch_epoch"), "stam.dnn.optim_br:BinaryRelax",
              "stam.dnn.optim_br:BATCHED", fixed={"rho": 1.0}, schedule_only=("switch_epoch",),  # lam's growth: the schedule
              color="bluish_green", marker="s"),
    Algorithm("psgd", "PSGD", "eq. (alg:PSGD)", ("lr", "weight_decay"), "stam.dnn.optim_psgd:PSGD", "stam.dnn.optim_psgd:BATCHED",
              color="orange", marker="v"),  # a marker too: PSGD's float weights follow plain SGD exactly
    Algorithm("float", "Float", "SGD with momentum on float weights", ("lr", "momentum", "weight_decay"),
              "torch.optim:SGD", "stam.dnn.optim_float:BATCHED", binary=False, color="black", marker="x"),
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

#: The data sets (read by :func:`stam.dnn.data.load`; CIFAR from its official archives, digits
#: from scikit-learn, offline).
DATASETS = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "digits": "digits (scikit-learn, 8x8)"}
DATASET_NAMES = tuple(DATASETS)

#: CIFAR-10's and CIFAR-100's training images (the official archives; Section 3.2 of the paper)
CIFAR_TRAIN_IMAGES = 50_000

#: The share of a training set held out as validation data, on which every choice (the epoch a
#: run is judged by, tuning trials) is made: ``--val-fraction``'s default everywhere.
VAL_FRACTION = 0.1

#: What ``stam tune`` and ``stam map`` train on each data set unless told otherwise: the model, its
#: channel width, the batch size and the epochs of every run.  CIFAR's defaults fit a 2-core CPU
#: (VGG-11 at width 1/8: about 20 s per epoch and run on one core, measured); the paper's
#: networks are ``--width 1`` (a GPU).
SWEEP_DEFAULTS = {
    "digits": {"model": "mlp", "width": 1.0, "batch_size": 32, "epochs": 60},
    "cifar10": {"model": "vgg11", "width": 0.125, "batch_size": 128, "epochs": 10},
    "cifar100": {"model": "vgg11", "width": 0.125, "batch_size": 128, "epochs": 10},
}


__all__ = ["Algorithm", "ALGORITHMS", "NAMES", "algorithm", "MODELS", "MODEL_NAMES", "DATASETS", "DATASET_NAMES", "SWEEP_DEFAULTS",
           "CIFAR_TRAIN_IMAGES", "VAL_FRACTION"]
