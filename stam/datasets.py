"""The data sets the toolkit trains networks on, named once (imports only :mod:`stam.results`).

Here, in the core, because both practice areas read the names: the networks (:mod:`stam.dnn`:
``--dataset``, the loaders of :mod:`stam.dnn.data`, the catalog :mod:`stam.dnn.catalog`) and the
convergence map's file format, whose ``source`` is a synthetic problem or one of these
(:mod:`stam.synthetic.convergence_map`).  To add a data set: its loader in :mod:`stam.dnn.data`,
its entry here and its sweep defaults in ``SWEEP_DEFAULTS`` of :mod:`stam.dnn.catalog`.
"""

from stam.results import INT_OR_NULL, LIST, STR, STR_OR_NULL, Schema, one_of

#: name -> how tables call it (CIFAR from its official archives, digits from scikit-learn, offline)
DATASETS = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "digits": "digits (scikit-learn, 8x8)"}
DATASET_NAMES = tuple(DATASETS)
#: the data sets that come with a package (scikit-learn's digits): they read no folder, so
#: ``--data-dir`` is refused with them
BUNDLED = ("digits",)
#: the data sets trained on random crops and flips (:func:`stam.dnn.data.augment`): their loaders set
#: ``ImageData.augment`` from this, and BatchNorm's statistics are re-estimated on their images as
#: the training sees them (:data:`stam.dnn.catalog.BN_AUGMENT`)
AUGMENTED = ("cifar10", "cifar100")
#: name -> its number of classes (chance is 100 / classes percent)
CLASSES = {"cifar10": 10, "cifar100": 100, "digits": 10}

#: where a run's images came from, as its result files record it (``data_source`` of a train run,
#: a tuning, a network map): the official archives, scikit-learn, or a JPEG copy with its quality
#: the kinds of copy a loader records (``official``: CIFAR's archives checked against their
#: checksums, :func:`stam.dnn.data.load`; ``scikit-learn``: digits; ``image-folder`` and ``jpeg-copy``:
#: an image collection, lossless or JPEG, :mod:`stam.dnn.imagefolder`); a file with another kind is
#: refused by its type (it was read as the official images, and a JPEG copy pooled with them)
DATA_SOURCE_KINDS = ("official", "scikit-learn", "image-folder", "jpeg-copy")
DATA_SOURCE = Schema(required={"kind": STR},
                     optional={"file": STR_OR_NULL, "sha256": STR_OR_NULL, "hash_of": STR_OR_NULL, "note": STR_OR_NULL,
                               "formats": LIST, "jpeg_quality": INT_OR_NULL, "chroma_subsampling": STR_OR_NULL},
                     rules=(one_of("kind", DATA_SOURCE_KINDS),))

__all__ = ["DATASETS", "DATASET_NAMES", "BUNDLED", "AUGMENTED", "CLASSES", "DATA_SOURCE", "DATA_SOURCE_KINDS"]
