"""``stam map``'s parameters, one frozen dataclass (:mod:`stam.params`): each field declares its
flag, type, default and help once; the command line (:mod:`stam.figures.cli`) and the library call
(:func:`stam.figures.convergence_map.run`) read them here.  The defaults that depend on the map's
source (a synthetic problem or a data set) are None here and chosen by the run.  Imports no torch
and no matplotlib.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

from stam.cliargs import ListArg, RangeArg, n_seeds_arg, out_arg
from stam.datasets import DATASET_NAMES
from stam.dnn.catalog import BN_IMAGES, VAL_FRACTION, sweep_settings
from stam.dnn.params import bn_images_arg, data_dir_arg, model_arg, width_arg
from stam.errors import batch_int, epochs_int, positive_float, positive_int, seed_int, threads_int
from stam.jobs import scheduler_arg, workers_arg
from stam.params import Params, arg
from stam.synthetic import families as CM  # the synthetic map's defaults (light)

#: the most points a --gamma-range or --lam-range of ``stam map`` may ask for
MAX_POINTS = 200
#: ``stam map``'s value lists (sorted, each value once) and ranges
#: the values a map's grid may take (gamma, lambda, beta): its axes are logarithmic, and values beyond
#: these make the runs and the axes leave floating point (a gamma of 1e308, 1e-320)
GRID_LIMITS = (1e-12, 1e12)


def grid_float(text: str) -> float:
    """argparse type: a number > 0 within :data:`GRID_LIMITS`."""
    v = positive_float(text)
    if not GRID_LIMITS[0] <= v <= GRID_LIMITS[1]:
        raise argparse.ArgumentTypeError(f"{v:g} is outside [{GRID_LIMITS[0]:g}, {GRID_LIMITS[1]:g}]; give values of ordinary size")
    return v


POSITIVE_LIST = ListArg(grid_float, "numbers > 0 within [1e-12, 1e12]", "0.1,1,10", sort=True)
MAP_RANGE = RangeArg("0.001:30:8", max_points=MAX_POINTS, bounds=GRID_LIMITS)

#: The default digits map: 64 cells (the 8 x 8 default grid) x 3 seeds x 60 epochs
#: (:data:`stam.dnn.catalog.SWEEP_DEFAULTS`), at one beta:
#: ``beta = 20``, i.e. the y-step eq. (algy) with step 1/beta = 0.05, the learning rate at which
#: plain SGD trains this MLP in a few epochs (so beta does not hold the map back).
DIGITS_SEEDS = 3
DIGITS_BETAS = (20.0,)
#: the most work a synthetic map does without --force: this many times the default map's (runs x iterations)
SYNTHETIC_WORK_LIMIT = 50
#: a synthetic map's defaults where a flag is not given
SYNTHETIC_SEED, SYNTHETIC_GROWTH, SYNTHETIC_THREADS = 0, CM.MAP_GROWTH, 1


def _range(r) -> str:
    return f"{r[0]:g}:{r[1]:g}:{r[2]}"


@dataclass(frozen=True)
class MapParams(Params):
    """``stam map``'s parameters: the source (``problem`` or ``dataset``), the grid, the budget,
    where it writes and how it runs."""

    problem: str | None = arg("--problem", default=None, metavar="NAME|FILE.py:NAME", exclusive="source",
                              help="synthetic problem family (binary), or a function of lam= in a Python file returning a "
                              "problem")
    dataset: str | None = arg("--dataset", choices=DATASET_NAMES, default=None, exclusive="source", job=True,
                              help="real data: digits (the default when --problem is not given), cifar10 or cifar100")
    gammas: list | None = arg("--gammas", type=POSITIVE_LIST, default=None, metavar="G1,G2,...", exclusive="gamma",
                              help=f"gamma values (default: --gamma-range {_range(CM.MAP_GAMMAS)})")
    gamma_range: tuple | None = arg("--gamma-range", type=MAP_RANGE, default=None, metavar="LO:HI:N", exclusive="gamma",
                                    help="N gammas from LO to HI, geometrically spaced")
    lams: list | None = arg("--lams", type=POSITIVE_LIST, default=None, metavar="L1,L2,...", exclusive="lam",
                            help=f"lambda values (default: --lam-range {_range(CM.MAP_LAMS)})")
    lam_range: tuple | None = arg("--lam-range", type=MAP_RANGE, default=None, metavar="LO:HI:N", exclusive="lam",
                                  help="N lambdas from LO to HI, geometrically spaced")
    betas: list | None = arg("--betas", type=POSITIVE_LIST, default=None, metavar="B1,B2,...",
                             help=f"beta values, one panel each (default: synthetic {','.join(f'{b:g}' for b in CM.MAP_BETAS)}; "
                             f"digits {','.join(f'{b:g}' for b in DIGITS_BETAS)})")
    iterations: int | None = arg("--iterations", type=positive_int, default=None,
                                 help=f"synthetic: STAM iterations T (default {CM.MAP_ITERATIONS})")
    epochs: int | None = arg("--epochs", type=epochs_int, default=None, job=True,
                             help="network: training epochs (default 60 digits, 10 CIFAR)")
    force: bool = arg("--force", action="store_true", default=False,
                      help="work above the limit: network, 10 times the paper's run in image passes; synthetic, "
                      f"{SYNTHETIC_WORK_LIMIT} times the default map's iterations")
    batch_size: int | None = arg("--batch-size", type=batch_int, default=None, job=True,
                                 help="network: batch size (default 32 digits, 128 CIFAR)")
    model: str | None = model_arg()
    width: float | None = width_arg()
    data_dir: str = data_dir_arg()
    bn_images: int | None = bn_images_arg(default=None, job=True)
    n_seeds: int | None = n_seeds_arg(None, f"seeds per cell (default: {CM.MAP_SEEDS} synthetic, {DIGITS_SEEDS} digits)")
    seed: int | None = arg("--seed", type=seed_int, default=None,
                           help=f"synthetic: seed of the instance and of the sampling (default {SYNTHETIC_SEED})")
    growth: float | None = arg("--growth", type=positive_float, default=None,
                               help=f"synthetic: a seed with S_T > GROWTH * S_0 counts as diverged (default {SYNTHETIC_GROWTH:g})")
    threads: int | None = arg("--threads", type=threads_int, default=None,
                              help=f"synthetic: torch CPU threads (default {SYNTHETIC_THREADS})")
    out: str = out_arg(default="results/map", help="output folder (default results/map)")
    region: str | None = arg("--region", metavar="FILE.json", default=None,
                             help="a lyapunov-region file of stam pep --region (e.g. benchmarks/results/lyapunov_region.json): "
                             "its limits (certified for the paper's class, full and minibatch gradients; convex F; refuted) "
                             "drawn as lines")
    progress: bool = arg("--no-progress", action="store_false", default=True, help="no progress bar")
    scheduler: str | None = scheduler_arg()  # a network map's trainings are jobs in DIR/jobs, here or on a Dask cluster
    workers: int = workers_arg()
    # library-only: the validation split of every training of a network map (part of every job)
    val_fraction: float = arg(default=VAL_FRACTION, job=True)
    split_seed: int = arg(default=0, job=True)

    def network(self) -> "MapParams":
        """A network map's parameters as its jobs train: the data set (digits where not given) and, where a
        flag is not given, the data set's sweep defaults (:data:`stam.dnn.catalog.SWEEP_DEFAULTS`: model,
        width, batch size, epochs).  Every job of the map is its :meth:`spec` (the fields marked ``job``:
        what is trained on what, how long) and its cell (:func:`stam.dnn.sweep.map_digits`)."""
        dataset = self.dataset or "digits"
        d = sweep_settings(dataset, self)
        return dataclasses.replace(self, dataset=dataset, **dict(d, width=float(d["width"])), data_dir=str(self.data_dir),
                                   bn_images=BN_IMAGES if self.bn_images is None else self.bn_images)


__all__ = ["MapParams", "MAX_POINTS", "GRID_LIMITS", "grid_float", "POSITIVE_LIST", "MAP_RANGE", "DIGITS_SEEDS",
           "DIGITS_BETAS", "SYNTHETIC_SEED", "SYNTHETIC_GROWTH", "SYNTHETIC_THREADS", "SYNTHETIC_WORK_LIMIT"]
