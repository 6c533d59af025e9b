"""Means over seeds with Student-t 95 % intervals, and the verdict the data-parallel record uses.

The functions live in :mod:`gpukit.cats_vs_dogs.meta` (the views read them there); this module
keeps their names where they have always been.
"""

from .meta import (LEVEL, difference_interval, mean_interval, same_accuracy, t_probability,
                   t_quantile)

__all__ = ["LEVEL", "difference_interval", "mean_interval", "same_accuracy", "t_probability",
           "t_quantile"]
