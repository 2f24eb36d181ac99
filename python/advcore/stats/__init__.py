"""The statistics core: typed wrappers over the Rust kernels of ``advcore._core``.

Every function takes float32/float64 arrays (numpy, Polars Series, CPU torch tensors),
accumulates in float64, releases the GIL while it computes, and raises
:class:`advcore.AdvcoreError` naming the argument on bad input.
"""

from __future__ import annotations

from advcore.stats._census import ChangeCensus, ValueCensus, change_census, value_census
from advcore.stats._grouped import (
    ExplainedVariance,
    GroupedMoments,
    VarianceDecomposition,
    ZeroVarianceFraction,
    explained_variance,
    grouped_moments,
    variance_decomposition,
    zero_variance_fraction,
)
from advcore.stats._quantile import (
    QUANTILE_METHODS,
    QuantileSketch,
    interquartile_range,
    median_abs_deviation,
    quantile,
)
from advcore.stats._rank import GroupedSpearman, spearman, within_group_spearman

__all__ = [
    "QUANTILE_METHODS",
    "ChangeCensus",
    "ExplainedVariance",
    "GroupedMoments",
    "GroupedSpearman",
    "QuantileSketch",
    "ValueCensus",
    "VarianceDecomposition",
    "ZeroVarianceFraction",
    "change_census",
    "explained_variance",
    "grouped_moments",
    "interquartile_range",
    "median_abs_deviation",
    "quantile",
    "spearman",
    "value_census",
    "variance_decomposition",
    "within_group_spearman",
    "zero_variance_fraction",
]
