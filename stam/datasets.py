"""The data sets the toolkit trains networks on, named once (imports nothing).

Here, in the core, because both practice areas read the names: the networks (:mod:`stam.dnn`:
``--dataset``, the loaders of :mod:`stam.dnn.data`, the catalog :mod:`stam.dnn.catalog`) and the
convergence map's file format, whose ``source`` is a synthetic problem or one of these
(:mod:`stam.synthetic.convergence_map`).  To add a data set: its loader in :mod:`stam.dnn.data`,
its entry here and its sweep defaults in ``SWEEP_DEFAULTS`` of :mod:`stam.dnn.catalog`.
"""

#: name -> how tables call it (CIFAR from its official archives, digits from scikit-learn, offline)
DATASETS = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "digits": "digits (scikit-learn, 8x8)"}
DATASET_NAMES = tuple(DATASETS)

__all__ = ["DATASETS", "DATASET_NAMES"]
