"""Censuses: what a batch of values is made of, and what changed between two stages of it."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy.typing as npt

from advcore import _core
from advcore._arrays import as_values, check_tolerance
from advcore.errors import AdvcoreError, AdvcoreWarning

__all__ = ["ChangeCensus", "ValueCensus", "change_census", "value_census"]


@dataclass(frozen=True, slots=True)
class ValueCensus:
    """What a batch of values is made of.

    Attributes
    ----------
    n : int
        Values in the batch.
    n_nan, n_posinf, n_neginf : int
        NaN, ``+inf`` and ``-inf`` values.
    exact_zero_frac : float
        Share of the finite values equal to zero (``-0.0`` counts).
    near_zero_frac : float
        Share of the finite values with ``|x| <= atol`` (exact zeros included).
    pos_frac, neg_frac : float
        Shares of the finite values above and below zero;
        ``pos_frac + neg_frac + exact_zero_frac == 1``.
    n_unique : int
        Distinct finite values (``-0.0`` and ``0.0`` are one value).
    atol : float
        The tolerance ``near_zero_frac`` was computed with.

    The fractions are NaN when no value is finite.
    """

    n: int
    n_nan: int
    n_posinf: int
    n_neginf: int
    exact_zero_frac: float
    near_zero_frac: float
    pos_frac: float
    neg_frac: float
    n_unique: int
    atol: float

    @property
    def n_nonfinite(self) -> int:
        """NaN and infinite values: ``n_nan + n_posinf + n_neginf``."""
        return self.n_nan + self.n_posinf + self.n_neginf

    @property
    def n_finite(self) -> int:
        """Finite values: ``n - n_nonfinite``."""
        return self.n - self.n_nonfinite


def value_census(values: npt.ArrayLike, *, atol: float = 1e-8) -> ValueCensus:
    """Census of ``values``: non-finite counts, zeros, near-zeros, signs, distinct values.

    Typical use: how many advantages are exactly zero (constant-reward groups), how many
    rewards take only a handful of values, whether anything is NaN or infinite.

    Parameters
    ----------
    values : array_like, shape (n,), float32 or float64
        The values. Polars Series and CPU torch tensors are accepted; contiguous float arrays
        are not copied. Integers are widened to float64.
    atol : float, default 1e-8
        Absolute tolerance of "near zero": ``|x| <= atol`` (numpy's
        ``isclose(x, 0, rtol=0, atol=atol)``). Same unit as ``values``; finite, ``>= 0``.

    Returns
    -------
    ValueCensus
        Counts over all values; fractions and the distinct count over the finite values.

    Raises
    ------
    AdvcoreError
        Empty ``values``; a wrong dtype; ``atol`` negative or not finite.

    Warns
    -----
    AdvcoreWarning
        When no value is finite (the fractions are NaN).

    Notes
    -----
    One pass counts every class; the counts form a mergeable state (the census of two shards
    is the sum of their counts, see ``advcore_stats::census::ValueCounts``). ``n_unique`` is
    exact and *not* mergeable (two shards' counts do not say how many values they share): it
    is computed by an LSD radix sort of the order-preserving integer keys of the values
    (Herf 2001) and a scan for key changes, in ``O(n)``.

    Memory: two sort buffers of one key per value (2 x 4 bytes per float32 value, 2 x 8 per
    float64) at the peak; the calling thread keeps at most 64 MB of them between calls, and
    larger ones are released when the call returns (as in :func:`advcore.stats.spearman`).

    Examples
    --------
    >>> import numpy as np
    >>> c = value_census(np.array([0.0, -0.0, 1e-9, 2.0, -1.0, np.nan], dtype=np.float32))
    >>> c.n_nan, c.exact_zero_frac, c.near_zero_frac, c.pos_frac, c.neg_frac, c.n_unique
    (1, 0.4, 0.6, 0.4, 0.2, 4)
    """
    x = as_values(values, "values")
    tol = check_tolerance(atol, "atol")
    n, n_nan, n_posinf, n_neginf, n_zero, n_near, n_pos, n_neg, n_unique = _core.value_census(
        x, tol
    )
    n_finite = n - n_nan - n_posinf - n_neginf
    if n_finite == 0:
        warnings.warn(
            f"`values` has no finite value ({n_nan} NaN, {n_posinf} +inf, {n_neginf} -inf); "
            "the fractions are NaN",
            AdvcoreWarning,
            stacklevel=2,
        )

    def frac(count: int) -> float:
        return count / n_finite if n_finite else math.nan

    return ValueCensus(
        n=n,
        n_nan=n_nan,
        n_posinf=n_posinf,
        n_neginf=n_neginf,
        exact_zero_frac=frac(n_zero),
        near_zero_frac=frac(n_near),
        pos_frac=frac(n_pos),
        neg_frac=frac(n_neg),
        n_unique=n_unique,
        atol=tol,
    )


@dataclass(frozen=True, slots=True)
class ChangeCensus:
    """What changed between two stages of the same values.

    Attributes
    ----------
    n : int
        Pairs compared.
    n_changed : int
        Pairs that changed (see :func:`change_census` for the rule).
    changed_frac : float
        ``n_changed / n``.
    n_finite_pairs : int
        Pairs where both values are finite.
    max_abs_change : float
        Largest ``|after - before|`` over the finite pairs; NaN when there is none.
    mean_abs_change : float
        Mean ``|after - before|`` over the finite pairs (unchanged pairs count as 0); NaN when
        there is none.
    atol : float
        The tolerance the changes were counted with.
    """

    n: int
    n_changed: int
    changed_frac: float
    n_finite_pairs: int
    max_abs_change: float
    mean_abs_change: float
    atol: float


def change_census(
    before: npt.ArrayLike, after: npt.ArrayLike, *, atol: float = 0.0
) -> ChangeCensus:
    """Count what changed between two stages of the same values (clipping, masking).

    Parameters
    ----------
    before, after : array_like, shape (n,), float32 or float64
        The same values before and after a stage (for example advantages before and after
        clipping). The two may have different float dtypes.
    atol : float, default 0.0
        A pair changed when ``|after - before| > atol``, computed in float64. With the
        default 0, any difference counts. Same unit as the values; finite, ``>= 0``.

    Returns
    -------
    ChangeCensus
        Counts, share changed, and the largest and mean absolute change.

    Raises
    ------
    AdvcoreError
        ``after`` of another length than ``before`` (the message names ``after``); empty
        ``before``; a wrong dtype; ``atol`` negative or not finite.

    Warns
    -----
    AdvcoreWarning
        When no pair is finite on both sides (``max_abs_change`` and ``mean_abs_change`` are
        NaN).

    Notes
    -----
    NaN is a value here, not a missing one: NaN→NaN is *unchanged*, NaN→number and
    number→NaN are *changed* (masking that writes NaN is a change). Equal infinities are
    unchanged, ``+inf``↔``-inf`` and infinity↔finite are changed. ``-0.0`` and ``0.0`` are
    equal. The absolute changes are summarised over the pairs finite on both sides. One
    pass, float64 accumulation in blocks; the counts and sums form a mergeable state
    (``advcore_stats::census::ChangeCounts``).

    Examples
    --------
    >>> import numpy as np
    >>> adv = np.array([-3.0, -0.5, 0.0, 0.5, 3.0])
    >>> c = change_census(adv, np.clip(adv, -1.0, 1.0))
    >>> c.n_changed, c.changed_frac, c.max_abs_change, c.mean_abs_change
    (2, 0.4, 2.0, 0.8)
    """
    b, a = as_values(before, "before"), as_values(after, "after")
    if a.shape[0] != b.shape[0]:
        raise AdvcoreError(
            f"`after` has length {a.shape[0]} but `before` has length {b.shape[0]}; "
            "they must be paired element by element"
        )
    tol = check_tolerance(atol, "atol")
    n, n_changed, n_finite, total, largest = _core.change_census(b, a, tol)
    if n_finite == 0:
        warnings.warn(
            "no pair of `before` and `after` is finite on both sides; "
            "max_abs_change and mean_abs_change are NaN",
            AdvcoreWarning,
            stacklevel=2,
        )
    return ChangeCensus(
        n=n,
        n_changed=n_changed,
        changed_frac=n_changed / n,
        n_finite_pairs=n_finite,
        max_abs_change=largest if n_finite else math.nan,
        mean_abs_change=total / n_finite if n_finite else math.nan,
        atol=tol,
    )
