"""Grouped statistics: per-group moments, the zero-variance-group census, the within/between
variance decomposition and explained variance."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from advcore import _core
from advcore._arrays import (
    as_groups,
    as_values,
    check_ddof,
    check_nan_policy,
    check_tolerance,
)
from advcore.errors import AdvcoreError, AdvcoreWarning

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


@dataclass(frozen=True, slots=True)
class ZeroVarianceFraction:
    """How many groups have no spread: the share of prompts whose completions all got the
    same reward, so that their GRPO advantages are all zero (TRL logs it as
    ``frac_reward_zero_std``).

    Attributes
    ----------
    n_groups : int
        Number of groups.
    n_singleton : int
        Groups with fewer than two samples (size 1, or left with 0 or 1 after NaN omission).
        A spread is undefined for them: they are counted apart, never as zero variance.
    n_exact_zero : int
        Groups of two or more samples with ``max == min``.
    n_near_zero : int
        Groups of two or more samples with ``max - min <= atol + rtol * max(|min|, |max|)``
        (``numpy.isclose(max, min)``); includes the exact ones.
    n_nan : int
        Groups of two or more samples that contain NaN (only under ``nan_policy="propagate"``;
        they are neither exact nor near zero).
    exact_frac, near_frac : float
        ``n_exact_zero`` and ``n_near_zero`` over the ``n_groups - n_singleton`` groups of two
        or more samples, in [0, 1]. NaN when every group is a singleton, or when ``n_nan > 0``
        (NaN propagates).
    atol, rtol : float
        The tolerances used.
    """

    n_groups: int
    n_singleton: int
    n_exact_zero: int
    n_near_zero: int
    n_nan: int
    exact_frac: float
    near_frac: float
    atol: float
    rtol: float


def _census(c: tuple[int, int, int, int, int, float, float], atol: float, rtol: float) -> ZeroVarianceFraction:
    return ZeroVarianceFraction(*c, atol=atol, rtol=rtol)


@dataclass(frozen=True, slots=True)
class GroupedMoments:
    """Per-group moments. Every array has shape ``(n_groups,)``.

    Attributes
    ----------
    group : ndarray of int64
        The group id of each row: the ids in ascending order when ``group_ids`` was given, or
        ``0 .. n_groups - 1`` for contiguous groups (group ``g`` is samples ``g*G .. (g+1)*G - 1``).
    count : ndarray of uint64
        Samples in the group (after NaN omission under ``nan_policy="omit"``). For contiguous
        groups without omission every group holds ``group_size`` samples and ``count`` is a
        read-only broadcast view of that one number (``np.broadcast_to``), not a materialised
        array; copy it (``np.array(m.count)``) to write to it.
    mean, var : ndarray of float64
        Mean and variance with the ``ddof`` used. ``var`` is NaN where ``count <= ddof``; both
        are NaN for a group left empty by NaN omission.
    min, max : ndarray of the input dtype (float32 or float64)
        Smallest and largest value, exact (as numpy's ``a.min(1)`` returns them); NaN for a
        group left empty by NaN omission or holding NaN under ``propagate``.
    ddof : int
        The delta degrees of freedom ``var`` was computed with.
    zero_variance : ZeroVarianceFraction
        The zero-variance census of the same groups, counted in the same pass (with the
        ``atol`` and ``rtol`` given to :func:`grouped_moments`; no warning is issued here when
        every group is a singleton, unlike :func:`zero_variance_fraction`).
    """

    group: npt.NDArray[np.int64]
    count: npt.NDArray[np.uint64]
    mean: npt.NDArray[np.float64]
    var: npt.NDArray[np.float64]
    min: npt.NDArray[np.floating[Any]]
    max: npt.NDArray[np.floating[Any]]
    ddof: int
    zero_variance: ZeroVarianceFraction

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
    atol: float = 1e-8,
    rtol: float = 1e-5,
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
    atol, rtol : float, default 1e-8 and 1e-5
        Tolerances of the zero-variance census counted in the same pass (see
        :func:`zero_variance_fraction`), in the unit of ``values`` and as a fraction.

    Returns
    -------
    GroupedMoments
        One row per group, and the zero-variance census.

    Raises
    ------
    AdvcoreError
        Empty ``values``; a wrong dtype; both or neither of ``group_size`` and ``group_ids``;
        ``group_size`` not dividing ``n``; ``group_ids`` of another length; NaN under ``raise``;
        a negative or non-finite ``atol`` or ``rtol``.

    Warns
    -----
    AdvcoreWarning
        When some group has ``count <= ddof`` (its variance is NaN).

    Notes
    -----
    ``mean = sum(x) / count``, ``var = sum((x - mean)**2) / (count - ddof)``, accumulated in
    float64, in one pass. Each group sums ``x - K`` and ``(x - K)**2`` with ``K`` its first
    value (shifted sums, Chan, Golub & LeVeque 1983, section 3): as ``K`` is a member, the
    cancellation in ``M2 = sum((x-K)**2) - sum(x-K)**2 / n`` is bounded by the group size, not
    by the offset of the values, so ``1e6 + noise`` keeps its digits (contiguous groups of a
    power-of-two size up to 64 use pairwise sums, other sizes two passes with the correction
    term of the same paper). Groups containing NaN or
    infinities are recomputed exactly, with numpy's results (``inf`` mean, NaN variance).
    Partial results over shards combine exactly by the pairwise update of Chan, Golub &
    LeVeque (1979): ``advcore_stats::grouped::GroupedMoments::moments`` in Rust.

    References
    ----------
    T. F. Chan, G. H. Golub, R. J. LeVeque, "Algorithms for computing the sample variance:
    analysis and recommendations", The American Statistician 37(3), 1983.

    Examples
    --------
    >>> import numpy as np
    >>> m = grouped_moments(np.array([1.0, 0.0, 1.0, 1.0]), group_size=2)
    >>> m.mean.tolist(), m.var.tolist()
    ([0.5, 1.0], [0.25, 0.0])
    >>> m.zero_variance.exact_frac
    0.5
    >>> grouped_moments([3.0, 1.0, 2.0], group_ids=[7, 5, 7]).group.tolist()
    [5, 7]
    """
    x = as_values(values, "values")
    size, ids = as_groups(x.shape[0], group_size, group_ids)
    ddof = check_ddof(ddof)
    atol, rtol = check_tolerance(atol, "atol"), check_tolerance(rtol, "rtol")
    labels, count, mean, var, lo, hi, census = _core.grouped_moments(
        x, size, ids, ddof, check_nan_policy(nan_policy), atol, rtol
    )
    n_groups = census[0]
    if mean.shape[0] != n_groups:
        # The columns were allocated for the most groups the id range allows.
        mean, var, lo, hi = mean[:n_groups], var[:n_groups], lo[:n_groups], hi[:n_groups]
        if count is not None:
            count = count[:n_groups]
    if labels is None:
        labels = np.arange(n_groups, dtype=np.int64)
    if count is None:
        # Contiguous groups without omission all hold `size` samples: a read-only view.
        assert size is not None
        count = np.broadcast_to(np.uint64(size), (n_groups,))
        n_undefined = n_groups if size <= ddof else 0
    else:
        n_undefined = int(np.count_nonzero(count <= ddof))
    if n_undefined:
        warnings.warn(
            f"{n_undefined} of {n_groups} groups have at most ddof={ddof} samples; "
            "their variance is NaN",
            AdvcoreWarning,
            stacklevel=2,
        )
    return GroupedMoments(labels, count, mean, var, lo, hi, ddof, _census(census, atol, rtol))


def zero_variance_fraction(
    values: npt.ArrayLike,
    *,
    group_size: int | None = None,
    group_ids: npt.ArrayLike | None = None,
    atol: float = 1e-8,
    rtol: float = 1e-5,
    nan_policy: str = "propagate",
) -> ZeroVarianceFraction:
    """Share of groups whose values are all equal (exactly, or within a tolerance).

    In GRPO a group (prompt) whose completions all got the same reward has advantage 0 for
    every completion and teaches nothing. TRL logs it as ``frac_reward_zero_std``, counting a
    group when ``torch.isclose(std, 0)`` on its unbiased float32 std: compare that with
    ``near_frac``, which also counts groups tied up to float rounding (``0.05 + 0.1`` vs
    ``0.15``); ``exact_frac`` counts only ``max == min``.

    Parameters
    ----------
    values : array_like, shape (n,), float32 or float64
        One value per sample (for example one reward per completion).
    group_size : int, optional
        Contiguous layout: samples ``g*G .. (g+1)*G - 1`` form group ``g``.
    group_ids : array_like, shape (n,), integer, optional
        One group id per sample, any order. Give exactly one of ``group_size`` and ``group_ids``.
    atol : float, default 1e-8
        Absolute tolerance of the near-zero test, in the unit of ``values``.
    rtol : float, default 1e-5
        Relative tolerance of the near-zero test, a fraction of ``max(|min|, |max|)``.
    nan_policy : {"propagate", "omit", "raise"}, default "propagate"
        ``propagate``: a group of two or more samples holding NaN is counted in ``n_nan`` and
        makes both fractions NaN; ``omit``: NaN samples are dropped first (a group may become a
        singleton); ``raise``: NaN raises.

    Returns
    -------
    ZeroVarianceFraction
        The counts and the two fractions over the groups of two or more samples.

    Raises
    ------
    AdvcoreError
        Empty ``values``; a wrong dtype; a bad group layout; NaN under ``raise``; a negative or
        non-finite ``atol`` or ``rtol``.

    Warns
    -----
    AdvcoreWarning
        When every group has fewer than two samples (the fractions are NaN).

    Notes
    -----
    A group of ``n_g >= 2`` values has exact zero spread when ``max == min`` and near-zero
    spread when ``max - min <= atol + rtol * max(|min|, |max|)``, the test of
    ``numpy.isclose(max, min)`` made symmetric. ``exact_frac = n_exact_zero / (n_groups -
    n_singleton)``, likewise ``near_frac``. One pass over the values; computing it with the
    moments costs nothing more (:attr:`GroupedMoments.zero_variance`).

    Examples
    --------
    >>> import numpy as np
    >>> rewards = np.array([1.0, 1.0, 0.0, 1.0, 0.5, 0.5 + 1e-9])
    >>> z = zero_variance_fraction(rewards, group_size=2)
    >>> z.n_exact_zero, z.n_near_zero, z.exact_frac
    (1, 2, 0.3333333333333333)
    """
    x = as_values(values, "values")
    size, ids = as_groups(x.shape[0], group_size, group_ids)
    atol, rtol = check_tolerance(atol, "atol"), check_tolerance(rtol, "rtol")
    census = _census(
        _core.zero_variance_fraction(x, size, ids, atol, rtol, check_nan_policy(nan_policy)),
        atol,
        rtol,
    )
    if census.n_groups == census.n_singleton:
        warnings.warn(
            f"all {census.n_groups} groups have fewer than two samples; "
            "the zero-variance fractions are NaN",
            AdvcoreWarning,
            stacklevel=2,
        )
    return census


@dataclass(frozen=True, slots=True)
class VarianceDecomposition:
    """The population variance (ddof 0) of the values split into within- and between-group
    parts, ``total = within + between``.

    Attributes
    ----------
    total : float
        Variance of all values, in squared units of the values.
    within : float
        ``sum_g n_g * var_g / N``: the spread inside groups, what GRPO learns from.
    between : float
        ``sum_g n_g * (mean_g - mean)**2 / N``: the spread of the group means.
    within_frac : float
        ``within / total`` in [0, 1]; NaN when ``total == 0``.
    count : int
        Number of values ``N`` (after NaN omission).
    n_groups : int
        Number of groups.
    """

    total: float
    within: float
    between: float
    within_frac: float
    count: int
    n_groups: int


def variance_decomposition(
    values: npt.ArrayLike,
    *,
    group_size: int | None = None,
    group_ids: npt.ArrayLike | None = None,
    nan_policy: str = "propagate",
) -> VarianceDecomposition:
    """Split the variance of ``values`` into its within-group and between-group parts.

    Parameters
    ----------
    values : array_like, shape (n,), float32 or float64
        One value per sample (for example one reward per completion).
    group_size : int, optional
        Contiguous layout: samples ``g*G .. (g+1)*G - 1`` form group ``g``.
    group_ids : array_like, shape (n,), integer, optional
        One group id per sample, any order. Give exactly one of ``group_size`` and ``group_ids``.
    nan_policy : {"propagate", "omit", "raise"}, default "propagate"
        ``propagate``: any NaN makes every result NaN; ``omit``: NaN samples are dropped;
        ``raise``: NaN raises.

    Returns
    -------
    VarianceDecomposition

    Raises
    ------
    AdvcoreError
        Empty ``values`` (also: every value NaN under ``omit``); a wrong dtype; a bad group
        layout; NaN under ``raise``.

    Warns
    -----
    AdvcoreWarning
        When ``total == 0`` (``within_frac`` is NaN).

    Notes
    -----
    Population variances (ddof 0), so the law of total variance holds exactly:
    ``total = within + between`` with ``within = sum_g n_g var_g / N`` and
    ``between = sum_g n_g (mean_g - mean)**2 / N``. The group means enter a count-weighted
    Welford update (West 1979) relative to a member of the first group, so groups near
    ``1e6`` keep the digits of their small differences.

    References
    ----------
    D. H. D. West, "Updating mean and variance estimates: an improved method", Communications
    of the ACM 22(9), 1979.

    Examples
    --------
    >>> import numpy as np
    >>> d = variance_decomposition(np.array([0.0, 2.0, 10.0, 12.0]), group_size=2)
    >>> d.total, d.within, d.between, d.within_frac
    (26.0, 1.0, 25.0, 0.038461538461538464)
    """
    x = as_values(values, "values")
    size, ids = as_groups(x.shape[0], group_size, group_ids)
    total, within, between, fraction, count, n_groups = _core.variance_decomposition(
        x, size, ids, check_nan_policy(nan_policy)
    )
    if total == 0:
        warnings.warn(
            "the values have zero variance; within_frac is NaN", AdvcoreWarning, stacklevel=2
        )
    return VarianceDecomposition(total, within, between, fraction, count, n_groups)


@dataclass(frozen=True, slots=True)
class ExplainedVariance:
    """How much of the variance of the returns the value function explains.

    Attributes
    ----------
    overall : float
        ``1 - Var(returns - values) / Var(returns)`` over all pairs: 1 is perfect, 0 is no
        better than a constant, negative is worse. NaN when ``Var(returns) == 0``.
    group : ndarray of int64, shape (n_groups,), or None
        The group of each row of ``per_group`` (ids ascending, or ``0 .. n_groups - 1`` for
        contiguous groups); None when no groups were given.
    per_group : ndarray of float64, shape (n_groups,), or None
        The same ratio within each group; NaN where the group's ``Var(returns) == 0``
        (singleton groups, constant returns).
    """

    overall: float
    group: npt.NDArray[np.int64] | None
    per_group: npt.NDArray[np.float64] | None


def explained_variance(
    returns: npt.ArrayLike,
    values: npt.ArrayLike,
    *,
    group_size: int | None = None,
    group_ids: npt.ArrayLike | None = None,
    nan_policy: str = "propagate",
) -> ExplainedVariance:
    """Explained variance of the value predictions, ``1 - Var(returns - values) / Var(returns)``.

    PPO implementations log it as ``vf_explained_var``; per group (prompt, episode, slice) when
    groups are given.

    Parameters
    ----------
    returns : array_like, shape (n,), float32 or float64
        The empirical returns (value targets).
    values : array_like, shape (n,), float32 or float64
        The value function's predictions, paired element by element with ``returns``.
        Mixed dtypes are computed in float64.
    group_size : int, optional
        Contiguous layout: samples ``g*G .. (g+1)*G - 1`` form group ``g``.
    group_ids : array_like, shape (n,), integer, optional
        One group id per sample, any order. At most one of ``group_size`` and ``group_ids``;
        with neither, only ``overall`` is computed.
    nan_policy : {"propagate", "omit", "raise"}, default "propagate"
        ``propagate``: NaN in a pair makes the results that include it NaN; ``omit``: pairs
        with NaN on either side are dropped; ``raise``: NaN raises.

    Returns
    -------
    ExplainedVariance

    Raises
    ------
    AdvcoreError
        Empty ``returns``; ``values`` of another length; a wrong dtype; both ``group_size``
        and ``group_ids``; a bad layout; NaN under ``raise``.

    Warns
    -----
    AdvcoreWarning
        When ``Var(returns) == 0`` overall or in some group (the ratio is NaN there).

    Notes
    -----
    Population variances (the ddof cancels in the ratio), each computed two-pass in float64.
    The same definition as Stable-Baselines3's ``explained_variance`` and CleanRL's
    ``explained_var``.

    Examples
    --------
    >>> import numpy as np
    >>> ev = explained_variance(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 2.0, 3.0, 3.0]),
    ...                         group_size=2)
    >>> round(ev.overall, 6), ev.per_group.tolist()
    (0.85, [1.0, 0.0])
    """
    r = as_values(returns, "returns")
    v = as_values(values, "values")
    if r.dtype != v.dtype:
        r, v = r.astype(np.float64), v.astype(np.float64)
    if v.shape[0] != r.shape[0]:
        raise AdvcoreError(
            f"`values` has length {v.shape[0]} but `returns` has length {r.shape[0]}; "
            "they must be paired element by element"
        )
    size: int | None = None
    ids: npt.NDArray[np.int64] | None = None
    if group_size is not None or group_ids is not None:
        size, ids = as_groups(r.shape[0], group_size, group_ids, "returns")
    overall, undefined, labels, per_group, n_undefined = _core.explained_variance(
        r, v, size, ids, check_nan_policy(nan_policy)
    )
    if undefined:
        warnings.warn(
            "Var(returns) is 0; the explained variance is NaN", AdvcoreWarning, stacklevel=2
        )
    if n_undefined and per_group is not None:
        warnings.warn(
            f"{n_undefined} of {per_group.shape[0]} groups have Var(returns) == 0; "
            "their explained variance is NaN",
            AdvcoreWarning,
            stacklevel=2,
        )
    if per_group is not None and labels is None:
        labels = np.arange(per_group.shape[0], dtype=np.int64)
    return ExplainedVariance(overall, labels, per_group)
