"""Grouped statistics: per-group moments, zero-variance-group fraction, variance decomposition."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from advcore import _core
from advcore._arrays import as_groups, as_values, check_ddof, check_nan_policy
from advcore.errors import AdvcoreWarning

__all__ = ["GroupedMoments", "grouped_moments"]


@dataclass(frozen=True, slots=True)
class GroupedMoments:
    """Per-group moments. Every array has shape ``(n_groups,)``.

    Attributes
    ----------
    group : ndarray of int64
        The group id of each row: the ids in ascending order when ``group_ids`` was given, or
        ``0 .. n_groups - 1`` for contiguous groups (group ``g`` is samples ``g*G .. (g+1)*G - 1``).
    count : ndarray of uint64
        Samples in the group (after NaN omission under ``nan_policy="omit"``).
    mean, var, min, max : ndarray of float64
        Mean, variance with the ``ddof`` used, smallest and largest value. ``var`` is NaN where
        ``count <= ddof``; all four are NaN for a group left empty by NaN omission.
    ddof : int
        The delta degrees of freedom ``var`` was computed with.
    """

    group: npt.NDArray[np.int64]
    count: npt.NDArray[np.uint64]
    mean: npt.NDArray[np.float64]
    var: npt.NDArray[np.float64]
    min: npt.NDArray[np.float64]
    max: npt.NDArray[np.float64]
    ddof: int

    @property
    def std(self) -> npt.NDArray[np.float64]:
        """Per-group standard deviation, ``sqrt(var)``."""
        return np.sqrt(self.var)

    def to_polars(self) -> Any:
        """The moments as a Polars DataFrame with one row per group."""
        import polars as pl

        return pl.DataFrame(
            {
                "group": self.group,
                "count": self.count,
                "mean": self.mean,
                "var": self.var,
                "min": self.min,
                "max": self.max,
            }
        )


def grouped_moments(
    values: npt.ArrayLike,
    *,
    group_size: int | None = None,
    group_ids: npt.ArrayLike | None = None,
    ddof: int = 0,
    nan_policy: str = "propagate",
) -> GroupedMoments:
    """Count, mean, variance, min and max of each group of ``values``.

    Parameters
    ----------
    values : array_like, shape (n,), float32 or float64
        The samples (for example one reward per completion). Polars Series and CPU torch
        tensors are accepted; contiguous float arrays are not copied. Integers are widened.
    group_size : int, optional
        Contiguous layout: samples ``g*G .. (g+1)*G - 1`` form group ``g`` (GRPO's layout).
        ``n`` must be a multiple of it.
    group_ids : array_like, shape (n,), integer, optional
        One group id per sample, any order, any group sizes. Give exactly one of
        ``group_size`` and ``group_ids``.
    ddof : int, default 0
        Delta degrees of freedom of the variance: ``sum((x - mean)**2) / (count - ddof)``.
        The default 0 is numpy's (population variance); TRL's GRPO uses 1 (``torch.std``).
    nan_policy : {"propagate", "omit", "raise"}, default "propagate"
        ``propagate``: a group with NaN has NaN moments; ``omit``: NaN samples are dropped;
        ``raise``: NaN raises.

    Returns
    -------
    GroupedMoments
        One row per group.

    Raises
    ------
    AdvcoreError
        Empty ``values``; a wrong dtype; both or neither of ``group_size`` and ``group_ids``;
        ``group_size`` not dividing ``n``; ``group_ids`` of another length; NaN under ``raise``.

    Warns
    -----
    AdvcoreWarning
        When some group has ``count <= ddof`` (its variance is NaN).

    Notes
    -----
    Accumulates in float64. Each group is summarised two-pass (mean, then squared deviations,
    with the correction term of Chan, Golub & LeVeque 1983), so values such as ``1e6 + noise``
    lose no precision to cancellation. Partial results combine exactly by the pairwise update
    of Chan, Golub & LeVeque (1979).

    Examples
    --------
    >>> import numpy as np
    >>> m = grouped_moments(np.array([1.0, 0.0, 1.0, 1.0]), group_size=2)
    >>> m.mean.tolist(), m.var.tolist()
    ([0.5, 1.0], [0.25, 0.0])
    """
    x = as_values(values, "values")
    size, ids = as_groups(x.shape[0], group_size, group_ids)
    ddof = check_ddof(ddof)
    labels, count, mean, var, lo, hi = _core.grouped_moments(
        x, size, ids, ddof, check_nan_policy(nan_policy)
    )
    if labels is None:
        labels = np.arange(count.shape[0], dtype=np.int64)
    n_undefined = int(np.count_nonzero(count <= ddof))
    if n_undefined:
        warnings.warn(
            f"{n_undefined} of {count.shape[0]} groups have at most ddof={ddof} samples; "
            "their variance is NaN",
            AdvcoreWarning,
            stacklevel=2,
        )
    return GroupedMoments(labels, count, mean, var, lo, hi, ddof)
