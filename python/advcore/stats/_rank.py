"""Rank correlation: Spearman's rho over a batch and within each group."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from advcore import _core
from advcore._arrays import as_groups, as_values, check_nan_policy
from advcore.errors import AdvcoreError, AdvcoreWarning

__all__ = ["GroupedSpearman", "spearman", "within_group_spearman"]


def _paired(x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[Any, Any]:
    xa, ya = as_values(x, "x"), as_values(y, "y")
    if xa.shape[0] != ya.shape[0]:
        raise AdvcoreError(
            f"`y` has length {ya.shape[0]} but `x` has length {xa.shape[0]}; "
            "they must be paired element by element"
        )
    return xa, ya


def spearman(x: npt.ArrayLike, y: npt.ArrayLike, *, nan_policy: str = "propagate", threads: int = 0) -> float:
    """Spearman's rank correlation coefficient of paired samples ``x`` and ``y``.

    Parameters
    ----------
    x, y : array_like, shape (n,), float32 or float64
        Paired samples (for example a reward and an advantage per completion). The two may
        have different float dtypes. Polars Series and CPU torch tensors are accepted;
        contiguous float arrays are not copied. Integers are widened to float64.
    nan_policy : {"propagate", "omit", "raise"}, default "propagate"
        ``propagate``: NaN anywhere gives NaN; ``omit``: pairs where ``x`` or ``y`` is NaN are
        dropped (jointly); ``raise``: NaN raises.
    threads : int, default 0
        At most this many threads (0: two when the machine has them). From 2**20 pairs without
        NaN and with many distinct values on both sides, two threads each sort and rank half of
        the pairs; the result is the same to the bit whatever the count.

    Returns
    -------
    float
        Rho in ``[-1, 1]``, unitless; NaN when NaN was propagated or rho is undefined.

    Raises
    ------
    AdvcoreError
        ``y`` of another length than ``x`` (the message names ``y``); empty ``x`` (or no pair
        left after omitting NaN); a wrong dtype; NaN under ``nan_policy="raise"``.

    Warns
    -----
    AdvcoreWarning
        When rho is undefined: fewer than 2 pairs, or ``x`` or ``y`` constant (rho is NaN).

    Notes
    -----
    Rho is Pearson's correlation of the ranks, tied values sharing the average of the ranks
    they span:

    .. math:: \\rho = \\frac{\\sum_i (r_i - \\bar r)(s_i - \\bar s)}
              {\\sqrt{\\sum_i (r_i - \\bar r)^2 \\sum_i (s_i - \\bar s)^2}}

    the same value as ``scipy.stats.spearmanr(x, y).statistic``. ``-0.0`` and ``0.0`` tie;
    infinities rank at the ends. The pairs of order-preserving integer keys are radix sorted
    by x, x replaced by its doubled centred rank ``2 r - (n + 1)`` (an integer), then radix
    sorted by y; all sums are exact integers, so the only rounding is the final division.

    When one side has at most 2048 distinct values (binary or rounded rewards), it is ranked
    by a hash table in one pass and only the other side is sorted.

    Ranks have no mergeable state: a sample's rank depends on every other sample, so shards
    cannot be summarised separately and combined; concatenate them first.

    Memory: the peak is two sort buffers of one key pair per sample, 2 x 8 bytes per sample
    when both inputs are float32 (160 MB at ``n = 10**7``), 2 x 16 bytes otherwise. Up to
    64 MB for the two together (about 4 million float32 pairs), the calling thread keeps the
    buffers for its next call, so repeated calls skip the page faults of fresh memory; that
    is all it retains. Larger buffers are mapped for the call only, with a transparent
    huge-page hint (Linux), and released when it returns.

    References
    ----------
    C. Spearman (1904), "The proof and measurement of association between two things",
    American Journal of Psychology 15(1), 72-101. M. Kendall & J. D. Gibbons (1990), *Rank
    Correlation Methods*, 5th ed., ch. 3 (ties).

    Examples
    --------
    >>> spearman([1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0])
    0.8
    >>> spearman([0.0, 0.0, 1.0], [1.0, 2.0, 3.0])  # tie: ranks 1.5, 1.5, 3
    0.8660254037844387
    """
    xa, ya = _paired(x, y)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise AdvcoreError(f"`threads` must be a non-negative int, got {threads!r}")
    rho, n_pairs, undefined = _core.spearman(xa, ya, check_nan_policy(nan_policy), threads)
    if undefined:
        reason = "fewer than 2 pairs" if n_pairs < 2 else "`x` or `y` is constant"
        warnings.warn(
            f"Spearman's rho is undefined ({reason}); returning NaN", AdvcoreWarning, stacklevel=2
        )
    return float(rho)


@dataclass(frozen=True, slots=True)
class GroupedSpearman:
    """Spearman's rho within each group.

    Attributes
    ----------
    rho : ndarray of float64, shape (n_groups,)
        Rho of each group, in ``[-1, 1]``. NaN where undefined (fewer than 2 pairs, or ``x`` or
        ``y`` constant within the group) and, under ``nan_policy="propagate"``, for a group
        holding NaN.
    group : ndarray of int64, shape (n_groups,)
        The group id of each row: the ids in ascending order when ``group_ids`` was given, or
        ``0 .. n_groups - 1`` for contiguous groups.
    mean : float
        Mean rho over the defined groups (each group weighs the same). NaN when no group is
        defined, or under ``propagate`` when some group holds NaN.
    n_defined : int
        Groups with a rho.
    n_undefined : int
        Groups whose rho is undefined (fewer than 2 pairs, or a constant ``x`` or ``y``).
    n_nan : int
        Groups holding NaN under ``nan_policy="propagate"`` (always 0 under ``omit``).
    """

    rho: npt.NDArray[np.float64]
    group: npt.NDArray[np.int64]
    mean: float
    n_defined: int
    n_undefined: int
    n_nan: int

    def to_polars(self) -> Any:
        """The per-group rho as a Polars DataFrame with columns ``group`` and ``rho``."""
        import polars as pl

        return pl.DataFrame({"group": self.group, "rho": self.rho})


def within_group_spearman(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    group_size: int | None = None,
    group_ids: npt.ArrayLike | None = None,
    nan_policy: str = "propagate",
) -> GroupedSpearman:
    """Spearman's rho of ``x`` and ``y`` within each group, and its mean over the groups.

    Typical use: does the advantage order the completions of one prompt as the reward does?

    Parameters
    ----------
    x, y : array_like, shape (n,), float32 or float64
        Paired samples; the two may have different float dtypes.
    group_size : int, optional
        Contiguous layout: samples ``g*G .. (g+1)*G - 1`` form group ``g`` (GRPO's layout).
        ``n`` must be a multiple of it.
    group_ids : array_like, shape (n,), integer, optional
        One group id per sample, any order, any group sizes. Give exactly one of
        ``group_size`` and ``group_ids``.
    nan_policy : {"propagate", "omit", "raise"}, default "propagate"
        ``propagate``: a group holding NaN has rho NaN (and the mean is NaN); ``omit``: pairs
        with NaN are dropped within their group; ``raise``: NaN raises.

    Returns
    -------
    GroupedSpearman
        Per-group rho, group ids, mean and counts of defined and undefined groups.

    Raises
    ------
    AdvcoreError
        ``y`` of another length than ``x``; empty ``x``; a wrong dtype; both or neither of
        ``group_size`` and ``group_ids``; ``group_size`` not dividing ``n``; ``group_ids`` of
        another length; NaN under ``raise``.

    Warns
    -----
    AdvcoreWarning
        When no group has a defined rho (all have fewer than 2 pairs or a constant side).

    Notes
    -----
    Each group's rho is :func:`spearman` of its pairs (average ranks for ties, as
    ``scipy.stats.spearmanr``). Small groups are ranked by an in-place comparison sort in
    buffers reused across groups; no allocation per group. Groups whose rewards are all
    equal (GRPO's zero-advantage groups) are undefined, not zero, and do not enter the mean.
    Like :func:`spearman`, there is no mergeable state, but the per-group results of
    disjoint sets of groups can simply be concatenated.

    Examples
    --------
    >>> import numpy as np
    >>> reward = np.array([1.0, 0.0, 0.5, 1.0, 1.0, 1.0])
    >>> advantage = np.array([0.9, -1.1, 0.2, 0.0, 0.0, 0.0])
    >>> r = within_group_spearman(reward, advantage, group_size=3)
    >>> r.rho.tolist(), r.mean, r.n_undefined
    ([1.0, nan], 1.0, 1)
    """
    xa, ya = _paired(x, y)
    size, ids = as_groups(xa.shape[0], group_size, group_ids, "x")
    labels, rho, mean, n_defined, n_undefined, n_nan = _core.within_group_spearman(
        xa, ya, size, ids, check_nan_policy(nan_policy)
    )
    if labels is None:
        labels = np.arange(rho.shape[0], dtype=np.int64)
    if n_defined == 0 and n_undefined > 0:
        warnings.warn(
            f"Spearman's rho is undefined in all {n_undefined} groups without NaN "
            "(fewer than 2 pairs, or a constant `x` or `y`); the mean is NaN",
            AdvcoreWarning,
            stacklevel=2,
        )
    return GroupedSpearman(rho, labels, float(mean), n_defined, n_undefined, n_nan)
