"""The statistics core: typed wrappers over the Rust kernels of ``advcore._core``.

Every function takes float32/float64 arrays (numpy, Polars Series, CPU torch tensors),
accumulates in float64, releases the GIL while it computes, and raises
:class:`advcore.AdvcoreError` naming the argument on bad input.
"""

from __future__ import annotations

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

__all__ = [
    "ExplainedVariance",
    "GroupedMoments",
    "VarianceDecomposition",
    "ZeroVarianceFraction",
    "explained_variance",
    "grouped_moments",
    "variance_decomposition",
    "zero_variance_fraction",
]
