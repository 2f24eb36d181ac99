"""The statistics core: typed wrappers over the Rust kernels of ``advcore._core``.

Every function takes float32/float64 arrays (numpy, Polars Series, CPU torch tensors),
accumulates in float64, releases the GIL while it computes, and raises
:class:`advcore.AdvcoreError` naming the argument on bad input.
"""

from __future__ import annotations

from advcore.stats._grouped import GroupedMoments, grouped_moments
from advcore.stats._quantile import (
    QUANTILE_METHODS,
    QuantileSketch,
    interquartile_range,
    median_abs_deviation,
    quantile,
)

__all__ = [
    "QUANTILE_METHODS",
    "GroupedMoments",
    "QuantileSketch",
    "grouped_moments",
    "interquartile_range",
    "median_abs_deviation",
    "quantile",
]
