"""What ``stam train`` trains, declared once: the algorithms (Section 3.1 of the paper), the
models and the data sets.

The algorithms are the update rules of :mod:`stam.rules` (one module each: its name, label,
equation, colour, marker, hyperparameters, batched form), seen here as :class:`Algorithm`:
``stam train``/``stam tune`` (their choices), the presets (which keys a preset of it must set), the
trainer (which rule to run and which hyperparameters to put into its groups each epoch), the tuner
(its label, the metric it is chosen on) and the tables read them from here.  Imports no torch.

To add an algorithm: one module ``stam/rules/NAME.py`` (docs/contributing.md, "An optimiser"; its
search space declared there) and its preset in ``presets.json``; the tests parametrised over
:data:`NAMES` then check it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from stam import rules
from stam.rules.base import UpdateRule
from stam.registry import load, lookup


@dataclass(frozen=True)
class Algorithm:
    """A training algorithm: its update rule (:class:`stam.rules.UpdateRule`) as the network
    half reads it.  ``hyper``: the hyperparameters its optimiser takes from the schedule (every
    preset of it sets exactly these); ``fixed``: constructor arguments it always gets;
    ``schedule_only``: the keys of ``hyper`` that steer the schedule but are not constructor
    arguments; ``binary``: it trains binary weights (selected and reported on binary-weight
    accuracy; the float baseline is selected on float weights); ``theorem``: Theorem conv's
    conditions apply to its (gamma, lambda, beta); ``step``: the hyperparameter that is its step
    size and the power that makes it one (``("lr", 1)``; STAM's y-step of eq. (algy) is
    ``1/beta``: ``("beta", -1)``), which ``stam tune --schedule`` shapes.  Its ``label``,
    ``equation``, ``color`` and ``marker`` are its rule's."""

    rule: UpdateRule

    # its rule's declaration, read where it is declared (:class:`stam.rules.base.UpdateRule`), one property each
    name = property(lambda self: self.rule.name, doc="its rule's name (``--algo``)")
    label = property(lambda self: self.rule.label, doc="its rule's label in tables and figures")
    equation = property(lambda self: self.rule.equation, doc="its rule's equation of the paper")
    color = property(lambda self: self.rule.color, doc="its rule's colour in figures")
    marker = property(lambda self: self.rule.marker, doc="its rule's marker in figures")
    hyper = property(lambda self: self.rule.hyper, doc="the hyperparameters its schedule sets")
    fixed = property(lambda self: self.rule.fixed, doc="constructor arguments it always gets")
    schedule_only = property(lambda self: self.rule.schedule_only, doc="keys of ``hyper`` that are no constructor arguments")
    binary = property(lambda self: self.rule.binary, doc="it trains binary weights")
    theorem = property(lambda self: self.rule.theorem, doc="Theorem conv's conditions apply to it")
    search_space = property(lambda self: self.rule.search_space, doc="its search space for ``stam tune``")
    paper_preset = property(lambda self: self.rule.paper_preset, doc="the preset ``stam train --algo NAME`` runs")
    step = property(lambda self: self.rule.step_size, doc="the hyperparameter that is its step size, and its power")

    def optimizer_class(self):
        """Its ``torch.optim.Optimizer`` (imports torch): the generic optimiser built from its rule
        (:func:`stam.dnn.optim_common.optimizer_class`), or the torch optimiser it names.  Found by
        name when asked, as the handlers of commands are: the optimiser's module reaches this
        catalog (through :mod:`stam.dnn.bnstats`)."""
        return load("stam.dnn.optim_common:optimizer_class")(self.rule)

    def constructor_args(self, hyper: dict) -> dict:
        """The optimiser's keyword arguments from the hyperparameters of the first epoch."""
        return {**{k: hyper[k] for k in self.hyper if k not in self.schedule_only}, **self.fixed}

    @property
    def score_key(self) -> str:
        """The validation metric a trial of this algorithm is chosen on."""
        return "val_acc_binary" if self.binary else "val_acc_float"


def algorithms() -> tuple:
    """Every algorithm, one per update rule (:data:`stam.rules.RULES`, a rule registered later
    included), in the paper's order."""
    return tuple(Algorithm(r) for r in rules.RULES)


#: the algorithms of the rules of :mod:`stam.rules`, and the names ``--algo`` takes, in the order of the paper's tables
ALGORITHMS = algorithms()
NAMES = tuple(a.name for a in ALGORITHMS)


def algorithm(name: str) -> Algorithm:
    """The algorithm called ``name`` (any registered rule's); ``KeyError`` naming the known ones."""
    return lookup(algorithms(), name, "algorithm")


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
#: a fixed subset of ``bn_images_used(N, n_train)`` training images (seeded by :data:`BN_SEED`, the
#: same images for every algorithm, run and epoch; on CIFAR cropped and flipped once, :data:`BN_AUGMENT`); 0 = the statistics as
#: trained, which describe the forward weights of training (STAM's W, PSGD's U, BR's relaxed
#: weights), not the binary network.  See :meth:`stam.dnn.batched.Trainer.statistics`.  2500 images: an epoch
#: evaluates two networks (binary and float weights), and two train-mode passes over 2500 images cost about 5% of an
#: epoch of VGG-11 at width 1/8 on CIFAR-10's 45,000 training images (5000: 16%, above the 10% the rule may cost;
#: ``benchmarks/bn_reestimate_cost.py``), while the statistics of 2500 images per channel (each over 32x32 positions
#: or more) are exact to far below what an accuracy can show.
BN_IMAGES = 2500
BN_SEED = 12345

#: Which version of those images (``--bn-unaugmented`` turns it off): on a data set trained on crops and
#: flips (:data:`stam.datasets.AUGMENTED`), the subset cropped and flipped once, as the training sees its
#: images (:func:`stam.dnn.data.augment` with a generator seeded by :data:`BN_AUGMENT_SEED`: the same draw for
#: every algorithm, run and epoch); else the images as they are.  Measured with the trainer on the CIFAR-10
#: study's tuned settings (VGG-11 at width 1/8, 30 epochs, seed 1000, ``benchmarks/bn_augment.py``), statistics
#: of the unaugmented images cost every algorithm test accuracy, by the mean of the last ten epochs: STAM 0.9
#: points, BC 0.6, BR 1.3, PSGD 0.6, Float 1.4 (at the last epoch Float's 79.4% on the augmented images, 79.3%
#: with its running statistics, 77.6% on the unaugmented ones); the unaugmented rule was the toolkit's until
#: 2026-11-29 and stays (``--bn-unaugmented``) for reproducing the results measured under it.
BN_AUGMENT = True
BN_AUGMENT_SEED = 7

#: The largest share of the training set BatchNorm's statistics are re-estimated on, whatever
#: ``--bn-images`` asks (:func:`bn_images_used`).  It decides the subset of a small training set
#: only (digits: 647 of 1,294 images; CIFAR's 45,000 keep :data:`BN_IMAGES`): there the whole set
#: cost 17% of an epoch of the digits MLP (two re-estimations of 2.4 ms forward passes against 41
#: steps of 32 images; no exact saving reaches 10%: the binary and the float networks are different
#: networks, and the training's statistics misjudge even the forward weights by 0.4 points on average),
#: half of it 9% (``benchmarks/bn_reestimate_cost.py``).  The statistics' error falls as
#: 1/sqrt(N) (a hidden unit of the MLP has one value per image): measured on the digits MLP's tuned
#: runs against the statistics of all 1,294 images (``benchmarks/bn_subset_size.py``), half the set
#: moves an accuracy by 0.20 points on average and none by more than two validation images, with no
#: bias (-0.01), while a quarter (0.31, bias -0.06) and a sixteenth (0.89, bias -0.65) start to bias it.
BN_MAX_SHARE = 0.5


def bn_images_used(bn_images, n_train: int) -> int:
    """How many training images BatchNorm's statistics are re-estimated on: ``bn_images``
    (``--bn-images``) but at most :data:`BN_MAX_SHARE` of the ``n_train`` training images (and at
    least two, BatchNorm's batch statistics need two, where there are two)."""
    return min(int(bn_images), int(n_train), max(2, int(BN_MAX_SHARE * int(n_train))))


def bn_protocol(bn_images, n_train: int | None = None, augmented: bool | None = None) -> str:
    """The evaluation protocol in words, for every caption and table: ``bn_images`` as a result
    file records it (None: a file written before the protocol was recorded, evaluated as trained),
    at most :func:`bn_images_used` of ``n_train`` (the training images, where known); ``augmented``
    (:func:`bn_augmented`): on a data set trained on crops and flips, whether the images were cropped
    and flipped once (:data:`BN_AUGMENT`) or not (a file written before 2026-11-29, or with
    ``--bn-unaugmented``); None on a data set trained without (the images as they are, nothing to say)."""
    if not bn_images:
        return ("BatchNorm statistics as trained (those of the training's forward weights; for STAM, PSGD and BR not the "
                "binary network's)")
    how = {None: "", True: ", cropped and flipped once, as the training sees them", False: ", unaugmented"}[augmented]
    if not n_train:
        return (f"BatchNorm statistics re-estimated for the evaluated weights on {int(bn_images):,} training images{how} "
                f"(at most {BN_MAX_SHARE:.0%} of the training set)")
    n = bn_images_used(bn_images, n_train)
    images = f"{n:,} of the {int(n_train):,} training images" if n < int(bn_images) else f"{n:,} training images"
    return f"BatchNorm statistics re-estimated for the evaluated weights on {images}{how}"


def bn_augmented(spec: dict) -> bool | None:
    """Whether a job's ``spec`` (or a result's parameters, a run's summary) evaluates on augmented
    images, on a data set trained on crops and flips (:data:`stam.datasets.AUGMENTED`): its
    ``bn_augment`` (a spec without it is one of the unaugmented rule); None on another data set
    (its images are used as they are)."""
    from stam.datasets import AUGMENTED

    return bool(spec.get("bn_augment")) if spec.get("dataset") in AUGMENTED else None


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


__all__ = ["sweep_settings", "Algorithm", "algorithms", "ALGORITHMS", "NAMES", "algorithm", "MODELS", "MODEL_NAMES", "SWEEP_DEFAULTS",
           "CIFAR_TRAIN_IMAGES", "VAL_FRACTION", "BN_IMAGES", "BN_SEED", "BN_AUGMENT", "BN_AUGMENT_SEED", "BN_MAX_SHARE", "bn_images_used", "bn_protocol", "bn_augmented", "chance_level", "at_chance"]
