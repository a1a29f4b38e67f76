"""``stam map``'s parameters: :class:`MapParams` and its constants now live with the experiment, in
:mod:`stam.figures.map_experiment` (its parameters, its run, its result in words in one module); the
names stay importable from here."""

from __future__ import annotations

from stam.figures.map_experiment import (DIGITS_BETAS, DIGITS_SEEDS, GRID_LIMITS, MAP_RANGE, MAX_POINTS, POSITIVE_LIST,
                                         SYNTHETIC_GROWTH, SYNTHETIC_SEED, SYNTHETIC_THREADS, SYNTHETIC_WORK_LIMIT,
                                         MapParams, grid_float)

__all__ = ["MapParams", "MAX_POINTS", "GRID_LIMITS", "grid_float", "POSITIVE_LIST", "MAP_RANGE", "DIGITS_SEEDS",
           "DIGITS_BETAS", "SYNTHETIC_SEED", "SYNTHETIC_GROWTH", "SYNTHETIC_THREADS", "SYNTHETIC_WORK_LIMIT"]
