"""The statistics core: typed wrappers over the Rust kernels of ``advcore._core``.

Every function takes float32/float64 arrays (numpy, Polars Series, CPU torch tensors),
accumulates in float64, releases the GIL while it computes, and raises
:class:`advcore.AdvcoreError` naming the argument on bad input.
"""

from __future__ import annotations

from advcore.stats._census import ChangeCensus, ValueCensus, change_census, value_census
from advcore.stats._grouped import GroupedMoments, grouped_moments
from advcore.stats._rank import GroupedSpearman, spearman, within_group_spearman

__all__ = [
    "ChangeCensus",
    "GroupedMoments",
    "GroupedSpearman",
    "ValueCensus",
    "change_census",
    "grouped_moments",
    "spearman",
    "value_census",
    "within_group_spearman",
]
