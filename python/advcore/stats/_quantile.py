"""Quantiles (numpy's thirteen methods), a mergeable quantile sketch, and robust spread
(median absolute deviation, interquartile range)."""

from __future__ import annotations

import warnings
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from advcore import _core
from advcore._arrays import as_float64, as_values, check_nan_policy
from advcore.errors import AdvcoreError, AdvcoreWarning

__all__ = [
    "QUANTILE_METHODS",
    "QuantileSketch",
    "interquartile_range",
    "median_abs_deviation",
    "quantile",
]

#: The ``method`` names of :func:`quantile`, as ``numpy.quantile`` spells them.
QUANTILE_METHODS = (
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
    "interpolated_inverted_cdf",
    "hazen",
    "weibull",
    "linear",
    "median_unbiased",
    "normal_unbiased",
    "lower",
    "higher",
    "midpoint",
    "nearest",
)

#: ``scipy.special.ndtri(0.75)``: the MAD of the standard normal distribution.
_NORMAL_MAD = 0.6744897501960817


def _check_method(method: Any) -> str:
    if method not in QUANTILE_METHODS:
        raise AdvcoreError(
            f"`method` must be one of {', '.join(QUANTILE_METHODS)}; got {method!r}"
        )
    return str(method)


def _as_q(q: Any) -> npt.NDArray[np.float64]:
    return as_float64(q, "q", "real numbers in [0, 1]")


def _warn_all_nan(what: str) -> None:
    warnings.warn(
        f"`values` holds no value once NaN is omitted; the {what} is NaN",
        AdvcoreWarning,
        stacklevel=3,
    )


@overload
def quantile(
    values: npt.ArrayLike, q: float, *, method: str = ..., nan_policy: str = ...
) -> float: ...
@overload
def quantile(
    values: npt.ArrayLike, q: npt.ArrayLike, *, method: str = ..., nan_policy: str = ...
) -> float | npt.NDArray[np.float64]: ...
def quantile(
    values: npt.ArrayLike,
    q: npt.ArrayLike,
    *,
    method: str = "linear",
    nan_policy: str = "propagate",
) -> float | npt.NDArray[np.float64]:
    """Quantiles ``q`` of ``values``, equal to ``numpy.quantile`` for every numpy ``method``.

    Parameters
    ----------
    values : array_like, shape (n,), float32 or float64
        The samples (rewards, advantages, returns). Polars Series and CPU torch tensors are
        accepted; contiguous float arrays are not copied. Integers are widened to float64.
    q : float or array_like of float, any shape
        Probabilities in ``[0, 1]``.
    method : str, default "linear"
        One of numpy's names: ``inverted_cdf``, ``averaged_inverted_cdf``,
        ``closest_observation``, ``interpolated_inverted_cdf``, ``hazen``, ``weibull``,
        ``linear`` (Hyndman & Fan's definition 7, numpy's and Polars' default),
        ``median_unbiased``, ``normal_unbiased``, ``lower``, ``higher``, ``midpoint``,
        ``nearest``.
    nan_policy : {"propagate", "omit", "raise"}, default "propagate"
        ``propagate``: any NaN makes every quantile NaN (as ``numpy.quantile``); ``omit``:
        NaN is dropped first (as ``numpy.nanquantile``); ``raise``: NaN raises.

    Returns
    -------
    float or ndarray of float64, shape ``q.shape``
        In the units of ``values``. A Python float when ``q`` is a scalar.

    Raises
    ------
    AdvcoreError
        Empty ``values``; an unsupported dtype; ``q`` outside ``[0, 1]`` or NaN; an unknown
        ``method``; NaN under ``nan_policy="raise"``.

    Warns
    -----
    AdvcoreWarning
        When ``nan_policy="omit"`` leaves no value (the result is NaN).

    Notes
    -----
    The result is bit-identical to ``numpy.quantile(values.astype(np.float64), q,
    method=method)``: the order statistics, the virtual index ``n q + alpha + q (1 - alpha -
    beta) - 1`` (``(n - 1) q`` for ``linear``), the discontinuous methods' rounding and the
    interpolation ``_lerp`` are numpy's (Hyndman & Fan 1996). Arithmetic is float64 for
    float32 input too; numpy run on float32 input itself interpolates partly in float32 and
    may differ from this in the last float32 digit.

    The order statistics are found without sorting: a radix histogram of the top 16 bits of
    order-preserving integer keys locates each needed rank's bucket, a second pass gathers
    only those buckets, which are finished by selection. Buckets holding more than a quarter
    of the data (heavy ties such as 0/1 rewards, or a huge common offset) are refined by a
    pass restricted to their key range instead, in linear time.

    References
    ----------
    R. J. Hyndman and Y. Fan, "Sample quantiles in statistical packages", The American
    Statistician 50(4), 361-365, 1996.

    Examples
    --------
    >>> import numpy as np
    >>> quantile(np.array([1.0, 2.0, 3.0, 4.0]), 0.5)
    2.5
    >>> quantile(np.array([1.0, 2.0, 3.0, 4.0]), [0.0, 0.5, 1.0], method="lower").tolist()
    [1.0, 2.0, 4.0]
    >>> quantile(np.array([1.0, np.nan, 3.0]), 0.5, nan_policy="omit")
    2.0
    """
    x = as_values(values, "values")
    qa = _as_q(q)
    out = _core.quantile(
        x, qa.ravel(), _check_method(method), check_nan_policy(nan_policy)
    )
    if nan_policy == "omit" and out.size and np.isnan(out[0]) and np.isnan(x).all():
        _warn_all_nan("quantile")
    if qa.ndim == 0:
        return float(out[0])
    return out.reshape(qa.shape)


def median_abs_deviation(
    values: npt.ArrayLike,
    *,
    scale: float | str = 1.0,
    nan_policy: str = "propagate",
) -> float:
    """Median absolute deviation ``median(|x - median(x)|) / scale``.

    Parameters
    ----------
    values : array_like, shape (n,), float32 or float64
        The samples. Polars Series and CPU torch tensors are accepted without a copy.
    scale : float or "normal", default 1.0
        The divisor. ``"normal"`` divides by ``Phi^-1(3/4) = 0.67448975...`` (multiplies by
        about 1.4826), which makes the MAD a consistent estimator of the standard deviation
        of normal data.
    nan_policy : {"propagate", "omit", "raise"}, default "propagate"
        ``propagate``: NaN gives NaN; ``omit``: NaN is dropped first; ``raise``: NaN raises.

    Returns
    -------
    float
        In the units of ``values``.

    Raises
    ------
    AdvcoreError
        Empty ``values``; ``scale`` not a finite positive number nor ``"normal"``; an
        unsupported dtype; NaN under ``nan_policy="raise"``.

    Warns
    -----
    AdvcoreWarning
        When ``nan_policy="omit"`` leaves no value (the result is NaN).

    Notes
    -----
    Equal to ``scipy.stats.median_abs_deviation(values.astype(np.float64), scale=scale,
    nan_policy=nan_policy)``; both medians are numpy's (the middle value, or ``(a + b) / 2``
    of the two middle values). An infinite median gives NaN, as in scipy. Arithmetic is
    float64 for float32 input too (scipy on float32 input works in float32, which loses
    precision for data with a large common offset). Neither median sorts: both are radix
    selections (see :func:`quantile`), the deviations computed on the fly, never stored.

    References
    ----------
    P. J. Rousseeuw and C. Croux, "Alternatives to the median absolute deviation", Journal
    of the American Statistical Association 88(424), 1273-1283, 1993.

    Examples
    --------
    >>> import numpy as np
    >>> median_abs_deviation(np.array([1.0, 2.0, 3.0, 4.0, 100.0]))
    1.0
    >>> round(median_abs_deviation(np.array([1.0, 2.0, 3.0, 4.0, 100.0]), scale="normal"), 4)
    1.4826
    """
    x = as_values(values, "values")
    if isinstance(scale, str):
        if scale != "normal":
            raise AdvcoreError(f"`scale` must be a positive number or 'normal', got {scale!r}")
        divisor = _NORMAL_MAD
    else:
        try:
            divisor = float(scale)
        except (TypeError, ValueError):
            raise AdvcoreError(
                f"`scale` must be a positive number or 'normal', got {scale!r}"
            ) from None
    out = _core.median_abs_deviation(x, divisor, check_nan_policy(nan_policy))
    if nan_policy == "omit" and np.isnan(out) and np.isnan(x).all():
        _warn_all_nan("median absolute deviation")
    return out


def interquartile_range(
    values: npt.ArrayLike,
    *,
    method: str = "linear",
    nan_policy: str = "propagate",
) -> float:
    """Interquartile range ``Q(0.75) - Q(0.25)``.

    Parameters
    ----------
    values : array_like, shape (n,), float32 or float64
        The samples. Polars Series and CPU torch tensors are accepted without a copy.
    method : str, default "linear"
        The quantile definition, any of numpy's names (see :func:`quantile`); scipy's
        ``interpolation`` values (linear, lower, higher, midpoint, nearest) are among them.
    nan_policy : {"propagate", "omit", "raise"}, default "propagate"
        ``propagate``: NaN gives NaN; ``omit``: NaN is dropped first; ``raise``: NaN raises.

    Returns
    -------
    float
        In the units of ``values``.

    Raises
    ------
    AdvcoreError
        As :func:`quantile`.

    Warns
    -----
    AdvcoreWarning
        When ``nan_policy="omit"`` leaves no value (the result is NaN).

    Notes
    -----
    Exactly ``numpy.quantile(x, 0.75, method) - numpy.quantile(x, 0.25, method)`` on the
    values widened to float64; this agrees with ``scipy.stats.iqr(values,
    interpolation=method)`` to rounding (scipy interpolates with another formula, and in
    float32 for float32 input). One selection finds both quartiles.

    Examples
    --------
    >>> import numpy as np
    >>> interquartile_range(np.array([1.0, 2.0, 3.0, 4.0]))
    1.5
    >>> interquartile_range(np.array([1.0, 2.0, 3.0, 4.0]), method="lower")
    2.0
    """
    x = as_values(values, "values")
    out = _core.interquartile_range(x, _check_method(method), check_nan_policy(nan_policy))
    if nan_policy == "omit" and np.isnan(out) and np.isnan(x).all():
        _warn_all_nan("interquartile range")
    return out


class QuantileSketch:
    """A streaming, mergeable quantile sketch with a deterministic relative-error bound.

    Parameters
    ----------
    mantissa_bits : int, default 7
        Resolution ``m`` in ``0..13``: buckets keep the sign, the exponent and the top ``m``
        mantissa bits of each value (as float64), giving a relative error of at most
        ``2**-(m + 1)`` (0.39% for the default) and at most ``2**m`` buckets per octave.
    nan_policy : {"propagate", "omit", "raise"}, default "propagate"
        What :meth:`update` does with NaN: ``propagate`` counts it and makes every quantile
        NaN; ``omit`` skips it; ``raise`` raises and leaves the sketch unchanged.

    Notes
    -----
    **Guarantee.** For the ``n`` values seen and ``q`` in ``[0, 1]``, :meth:`quantile`
    returns ``v`` with ``|v - x| <= relative_error * |x|``, where ``x`` is the exact order
    statistic at 0-based rank ``floor(q (n - 1))``, i.e. ``numpy.quantile(all_values, q,
    method="lower")``, whenever ``|x| >= 2**-1022``; for zero or subnormal ``x`` it returns 0.
    The minimum (``q = 0``) and maximum (``q = 1``) are exact, every answer lies in
    ``[min, max]``, and infinities are returned exactly.

    Counts are exact integers, so :meth:`merge` is exact: merging the sketches of two
    shards equals the sketch of their concatenation, whatever the order. The buckets are
    the logarithmic buckets of DDSketch (Masson, Rim & Lee, VLDB 2019), read off the float
    bits. :meth:`to_bytes` / :meth:`from_bytes` (and pickle) ship a sketch between
    processes (Ray, Dask workers); the encoding is little-endian and
    platform-independent, about 12 bytes per non-empty bucket.

    Examples
    --------
    >>> import numpy as np
    >>> sketch = QuantileSketch()
    >>> sketch.update(np.array([0.0, 1.0, 0.0, 0.0, 1.0], dtype=np.float32))
    >>> other = QuantileSketch()
    >>> other.update(np.array([0.5, 2.0]))
    >>> sketch.merge(other)
    >>> sketch.count, sketch.quantile(0.0), sketch.quantile(1.0)
    (7, 0.0, 2.0)
    >>> abs(sketch.quantile(0.7) - 1.0) <= sketch.relative_error
    True
    >>> QuantileSketch.from_bytes(sketch.to_bytes()) == sketch
    True
    """

    __slots__ = ("_native",)

    def __init__(self, mantissa_bits: int = 7, *, nan_policy: str = "propagate") -> None:
        if isinstance(mantissa_bits, bool) or not isinstance(mantissa_bits, (int, np.integer)):
            raise AdvcoreError(f"`mantissa_bits` must be an integer in 0..13, got {mantissa_bits!r}")
        if not 0 <= mantissa_bits <= 13:
            raise AdvcoreError(f"`mantissa_bits` must be in 0..13, got {mantissa_bits}")
        self._native = _core.QuantileSketch(int(mantissa_bits), check_nan_policy(nan_policy))

    @classmethod
    def _wrap(cls, native: _core.QuantileSketch) -> QuantileSketch:
        out = cls.__new__(cls)
        out._native = native
        return out

    def update(self, values: npt.ArrayLike) -> None:
        """Add ``values`` (array_like, shape (n,), float32 or float64) to the sketch.

        Raises
        ------
        AdvcoreError
            An unsupported dtype; NaN under ``nan_policy="raise"`` (the sketch is unchanged).
        """
        self._native.update(as_values(values, "values"))

    def merge(self, other: QuantileSketch) -> None:
        """Add the contents of ``other`` (exact; ``other`` is unchanged).

        Raises
        ------
        AdvcoreError
            ``other`` is not a :class:`QuantileSketch` or has other ``mantissa_bits``.
        """
        if not isinstance(other, QuantileSketch):
            raise AdvcoreError(f"`other` must be a QuantileSketch, got {type(other).__name__}")
        # Merging a sketch into itself would borrow it twice; merge a copy.
        native = other._native.copy() if other is self else other._native
        self._native.merge(native)

    @overload
    def quantile(self, q: float) -> float: ...
    @overload
    def quantile(self, q: npt.ArrayLike) -> float | npt.NDArray[np.float64]: ...
    def quantile(self, q: npt.ArrayLike) -> float | npt.NDArray[np.float64]:
        """Approximate quantiles, within the bound of the class notes.

        Parameters
        ----------
        q : float or array_like of float, any shape
            Probabilities in ``[0, 1]``.

        Returns
        -------
        float or ndarray of float64, shape ``q.shape``
            NaN when the sketch is empty or has counted NaN (``nan_policy="propagate"``).

        Raises
        ------
        AdvcoreError
            ``q`` outside ``[0, 1]`` or NaN.

        Warns
        -----
        AdvcoreWarning
            When the sketch is empty.
        """
        qa = _as_q(q)
        out = self._native.quantile(np.ascontiguousarray(qa.ravel()))
        if self._native.count == 0 and self._native.nan_count == 0 and out.size:
            warnings.warn("the sketch is empty; its quantiles are NaN", AdvcoreWarning, stacklevel=2)
        if qa.ndim == 0:
            return float(out[0])
        return out.reshape(qa.shape)

    @property
    def count(self) -> int:
        """Number of non-NaN values added."""
        return self._native.count

    @property
    def nan_count(self) -> int:
        """Number of NaN values counted (``nan_policy="propagate"`` only)."""
        return self._native.nan_count

    @property
    def min(self) -> float:
        """Exact smallest value (``inf`` when empty)."""
        return self._native.min

    @property
    def max(self) -> float:
        """Exact largest value (``-inf`` when empty)."""
        return self._native.max

    @property
    def mantissa_bits(self) -> int:
        """The resolution ``m``."""
        return self._native.mantissa_bits

    @property
    def relative_error(self) -> float:
        """The guaranteed relative error ``2**-(m + 1)``."""
        return self._native.relative_error

    @property
    def nan_policy(self) -> str:
        """The NaN policy of :meth:`update`."""
        return self._native.nan_policy

    def to_bytes(self) -> bytes:
        """A portable encoding of the sketch; see :meth:`from_bytes`."""
        return self._native.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> QuantileSketch:
        """Decode :meth:`to_bytes`.

        Raises
        ------
        AdvcoreError
            ``data`` is not a valid encoding.
        """
        return cls._wrap(_core.QuantileSketch.from_bytes(bytes(data)))

    def copy(self) -> QuantileSketch:
        """An independent copy."""
        return self._wrap(self._native.copy())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, QuantileSketch):
            return NotImplemented
        return self._native.equals(other._native)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        return (QuantileSketch.from_bytes, (self.to_bytes(),))

    def __repr__(self) -> str:
        return (
            f"QuantileSketch(count={self.count}, nan_count={self.nan_count}, "
            f"mantissa_bits={self.mantissa_bits}, min={self.min!r}, max={self.max!r})"
        )
