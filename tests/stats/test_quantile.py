"""Quantiles, the quantile sketch and robust spread against numpy and scipy."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import polars as pl
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

from advcore import AdvcoreError, AdvcoreWarning
from advcore.stats import (
    QUANTILE_METHODS,
    QuantileSketch,
    interquartile_range,
    median_abs_deviation,
    quantile,
)

SEVEN_Q = [0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99]
EDGE_Q = [0.0, 0.001, 0.1, 0.3, 1 / 3, 0.5, 2 / 3, 0.9, 0.999, 1.0]
SCIPY_IQR_METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]
DTYPES = [np.float32, np.float64]


def np_quantile(x: np.ndarray, q: Any, method: str, omit: bool = False) -> np.ndarray:
    """The oracle: numpy on the values widened to float64, with a float64 array of q."""
    fn = np.nanquantile if omit else np.quantile
    with np.errstate(invalid="ignore"):  # inf - inf inside numpy's _lerp
        return np.asarray(fn(x.astype(np.float64), np.asarray(q, dtype=np.float64), method=method))


def scipy_mad(x: np.ndarray, **kw: Any) -> float:
    with np.errstate(invalid="ignore"):
        return float(scipy.stats.median_abs_deviation(x.astype(np.float64), **kw))


# Values with many ties (small integers, 0/1 rewards), signed zeros and a spread.
finite_values = st.one_of(
    st.sampled_from([0.0, 1.0, -1.0, 0.5, -0.0]),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=32),
)
values_lists = st.lists(finite_values, min_size=1, max_size=200)
q_lists = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=9)


# --- quantile ---------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(values_lists, q_lists, st.sampled_from(QUANTILE_METHODS), st.sampled_from(DTYPES))
def test_quantile_equals_numpy_for_every_method(
    xs: list[float], q: list[float], method: str, dtype: type
) -> None:
    x = np.array(xs, dtype=dtype)
    assert_array_equal(quantile(x, q, method=method), np_quantile(x, q, method))


@pytest.mark.parametrize("method", QUANTILE_METHODS)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 10, 11, 100, 1001])
def test_quantile_small_n_edge_q(method: str, n: int) -> None:
    x = np.random.default_rng(n).permutation(np.arange(n, dtype=np.float64)) * 0.25
    assert_array_equal(quantile(x, EDGE_Q, method=method), np_quantile(x, EDGE_Q, method))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", QUANTILE_METHODS)
@pytest.mark.parametrize("n", [60_000, 200_000])
def test_quantile_heavy_ties_large_n(method: str, dtype: type, n: int) -> None:
    # 90% exact zeros, some exact ones, a spread: selected in a copy up to 65,536 values; above, the
    # zeros are taken out first and the rest is selected (rust/advcore-stats/src/quantile.rs, untie)
    rng = np.random.default_rng(1)
    x = np.where(rng.random(n) < 0.9, 0.0, rng.standard_normal(n)).astype(dtype)
    x[rng.random(n) < 0.03] = 1.0
    assert_array_equal(quantile(x, SEVEN_Q + [0.0, 1.0], method=method),
                       np_quantile(x, SEVEN_Q + [0.0, 1.0], method))


@pytest.mark.parametrize("dtype", DTYPES)
def test_quantile_two_heavy_values_and_nan_large_n(dtype: type) -> None:
    # 45% zeros and 45% ones: no value holds half, the refinement path; a NaN omitted or propagated
    rng = np.random.default_rng(3)
    n = 200_000
    u = rng.random(n)
    x = np.where(u < 0.45, 0.0, np.where(u < 0.9, 1.0, rng.standard_normal(n))).astype(dtype)
    x[12_345] = np.nan
    for method in QUANTILE_METHODS:
        assert_array_equal(quantile(x, SEVEN_Q, method=method, nan_policy="omit"),
                           np.nanquantile(x.astype(np.float64), SEVEN_Q, method=method))
    assert np.isnan(quantile(x, SEVEN_Q)).all()
    x[x == 0.0] = 0.5  # now 0.5 holds 45% and 1.0 45%; make 1.0 the majority
    x[(x == 0.5) & (rng.random(n) < 0.5)] = 1.0
    assert_array_equal(quantile(x, SEVEN_Q, nan_policy="omit"), np.nanquantile(x.astype(np.float64), SEVEN_Q))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", ["linear", "hazen", "nearest", "averaged_inverted_cdf"])
def test_quantile_huge_offset(method: str, dtype: type) -> None:
    rng = np.random.default_rng(2)
    x = (1e6 + rng.standard_normal(50_000) * 1e-2).astype(dtype)
    assert_array_equal(quantile(x, SEVEN_Q, method=method), np_quantile(x, SEVEN_Q, method))


@pytest.mark.parametrize("method", QUANTILE_METHODS)
def test_quantile_infinities(method: str) -> None:
    x = np.array([-np.inf, -1.0, 0.0, 0.0, 2.0, np.inf, np.inf])
    assert_array_equal(quantile(x, EDGE_Q, method=method), np_quantile(x, EDGE_Q, method))
    y = np.full(5, np.inf, dtype=np.float32)
    assert_array_equal(quantile(y, EDGE_Q, method=method), np_quantile(y, EDGE_Q, method))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(finite_values, st.just(float("nan"))), min_size=1, max_size=100),
    q_lists,
    st.sampled_from(QUANTILE_METHODS),
    st.sampled_from(DTYPES),
)
def test_quantile_nan_policies(xs: list[float], q: list[float], method: str, dtype: type) -> None:
    x = np.array(xs, dtype=dtype)
    assert_array_equal(quantile(x, q, method=method), np_quantile(x, q, method))
    if np.isnan(x).all():
        with pytest.warns(AdvcoreWarning, match="no value"):
            out = quantile(x, q, method=method, nan_policy="omit")
        assert np.isnan(out).all()
    else:
        assert_array_equal(
            quantile(x, q, method=method, nan_policy="omit"), np_quantile(x, q, method, omit=True)
        )
    if np.isnan(x).any():
        with pytest.raises(AdvcoreError, match="values"):
            quantile(x, q, method=method, nan_policy="raise")


def test_quantile_negative_nan_payloads_are_nan() -> None:
    x = np.array([1.0, -np.nan, 3.0, np.nan, 2.0])
    assert np.isnan(quantile(x, 0.5))
    assert quantile(x, 0.5, nan_policy="omit") == 2.0


def test_quantile_shapes_and_scalars() -> None:
    x = np.arange(10.0)
    assert isinstance(quantile(x, 0.5), float)
    q = np.array([[0.1, 0.2], [0.3, 0.4]])
    out = quantile(x, q)
    assert out.shape == (2, 2)
    assert_array_equal(out, np.quantile(x, q))
    assert quantile(x, []).shape == (0,)
    assert quantile(np.array([7.0], dtype=np.float32), SEVEN_Q).tolist() == [7.0] * 7


def test_quantile_argument_errors_name_the_argument() -> None:
    x = np.arange(5.0)
    for bad in (1.5, -0.1, float("nan"), [0.5, 2.0]):
        with pytest.raises(AdvcoreError, match="`q`"):
            quantile(x, bad)
    with pytest.raises(AdvcoreError, match="`method`"):
        quantile(x, 0.5, method="median")
    with pytest.raises(AdvcoreError, match="`nan_policy`"):
        quantile(x, 0.5, nan_policy="ignore")
    with pytest.raises(AdvcoreError, match="`values`"):
        quantile(np.array([], dtype=np.float32), 0.5)
    with pytest.raises(AdvcoreError, match="`values`"):
        quantile(np.array(["a", "b"]), 0.5)
    with pytest.raises(ValueError):  # AdvcoreError is a ValueError
        quantile(np.zeros((2, 2)), 0.5)


def test_quantile_inputs_polars_strided_and_untouched() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(1001).astype(np.float32)
    before = x.copy()
    expected = np_quantile(x, SEVEN_Q, "linear")
    assert_array_equal(quantile(x, SEVEN_Q), expected)
    assert_array_equal(x, before)  # selection works on keys, never reorders the input
    assert_array_equal(quantile(pl.Series(x), SEVEN_Q), expected)
    assert_array_equal(quantile(x[::2], SEVEN_Q), np_quantile(x[::2], SEVEN_Q, "linear"))
    assert_array_equal(quantile(np.arange(10), 0.5), 4.5)  # integers are widened


def test_quantile_agrees_with_polars_linear() -> None:
    x = np.random.default_rng(4).standard_normal(5000)
    s = pl.Series(x)
    ours = quantile(x, SEVEN_Q)
    theirs = [s.quantile(q, interpolation="linear") for q in SEVEN_Q]
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


# --- median absolute deviation ------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(values_lists, st.sampled_from(DTYPES), st.sampled_from([1.0, "normal", 2.5]))
def test_mad_equals_scipy(xs: list[float], dtype: type, scale: Any) -> None:
    x = np.array(xs, dtype=dtype)
    assert median_abs_deviation(x, scale=scale) == scipy_mad(x, scale=scale)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mad_heavy_ties_offsets_and_infinities(dtype: type) -> None:
    rng = np.random.default_rng(5)
    n = 40_001
    ties = np.where(rng.random(n) < 0.9, 0.0, 1.0).astype(dtype)
    assert median_abs_deviation(ties) == scipy_mad(ties)
    spread = np.where(rng.random(n) < 0.6, 0.0, rng.standard_normal(n)).astype(dtype)
    assert median_abs_deviation(spread) == scipy_mad(spread)
    offset = (1e6 + rng.standard_normal(n) * 1e-2).astype(dtype)
    assert median_abs_deviation(offset, scale="normal") == scipy_mad(offset, scale="normal")
    with_inf = np.array([1.0, 2.0, 4.0, np.inf, -np.inf], dtype=dtype)
    assert median_abs_deviation(with_inf) == scipy_mad(with_inf)
    mostly_inf = np.array([1.0, np.inf, np.inf], dtype=dtype)
    assert np.isnan(median_abs_deviation(mostly_inf)) and np.isnan(scipy_mad(mostly_inf))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(finite_values, st.just(float("nan"))), min_size=1, max_size=100))
def test_mad_nan_policies(xs: list[float]) -> None:
    x = np.array(xs)
    assert_array_equal(median_abs_deviation(x), scipy_mad(x))
    if np.isnan(x).all():
        with pytest.warns(AdvcoreWarning):
            assert np.isnan(median_abs_deviation(x, nan_policy="omit"))
    else:
        assert median_abs_deviation(x, nan_policy="omit") == scipy_mad(x, nan_policy="omit")
    if np.isnan(x).any():
        with pytest.raises(AdvcoreError, match="values"):
            median_abs_deviation(x, nan_policy="raise")


def test_mad_arguments() -> None:
    x = np.arange(5.0)
    for bad in (0.0, -1.0, float("inf"), "mad", None):
        with pytest.raises(AdvcoreError, match="`scale`"):
            median_abs_deviation(x, scale=bad)  # type: ignore[arg-type]
    with pytest.raises(AdvcoreError, match="`values`"):
        median_abs_deviation([])
    s = pl.Series(np.random.default_rng(6).standard_normal(999).astype(np.float32))
    assert median_abs_deviation(s) == scipy_mad(s.to_numpy())
    assert median_abs_deviation(np.array([3.0], dtype=np.float32)) == 0.0


# --- interquartile range -----------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(values_lists, st.sampled_from(QUANTILE_METHODS), st.sampled_from(DTYPES))
def test_iqr_equals_numpy_quartiles_and_scipy(xs: list[float], method: str, dtype: type) -> None:
    x = np.array(xs, dtype=dtype)
    q25, q75 = np_quantile(x, [0.25, 0.75], method)
    assert interquartile_range(x, method=method) == q75 - q25
    if method in SCIPY_IQR_METHODS:
        # scipy interpolates as (1 - g) a + g b: equal up to rounding.
        expected = scipy.stats.iqr(x.astype(np.float64), interpolation=method)
        scale = float(np.max(np.abs(x))) if x.size else 0.0
        assert abs(interquartile_range(x, method=method) - expected) <= 1e-12 * (1.0 + scale)


@pytest.mark.parametrize("dtype", DTYPES)
def test_iqr_large_offsets_ties_and_nan(dtype: type) -> None:
    rng = np.random.default_rng(7)
    x = (1e6 + rng.standard_normal(30_000)).astype(dtype)
    q25, q75 = np_quantile(x, [0.25, 0.75], "linear")
    assert interquartile_range(x) == q75 - q25
    ties = np.where(rng.random(30_000) < 0.9, 0.0, 1.0).astype(dtype)
    assert interquartile_range(ties) == scipy.stats.iqr(ties.astype(np.float64))
    x[3] = np.nan
    assert np.isnan(interquartile_range(x))
    q25, q75 = np_quantile(x, [0.25, 0.75], "linear", omit=True)
    assert interquartile_range(x, nan_policy="omit") == q75 - q25
    with pytest.raises(AdvcoreError, match="`method`"):
        interquartile_range(x, method="bogus")


# --- one parametrised sweep of degenerate inputs through every public function ------------


FUNCTIONS = {
    "quantile": lambda x, **kw: quantile(x, 0.5, **kw),
    "median_abs_deviation": median_abs_deviation,
    "interquartile_range": interquartile_range,
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_degenerate_inputs(name: str, dtype: type) -> None:
    fn = FUNCTIONS[name]
    with pytest.raises(AdvcoreError, match="values"):
        fn(np.array([], dtype=dtype))
    assert np.isfinite(fn(np.array([4.0], dtype=dtype)))
    constant = np.full(1000, 0.1, dtype=dtype)
    expected = {"quantile": float(dtype(0.1)), "median_abs_deviation": 0.0, "interquartile_range": 0.0}
    assert fn(constant) == expected[name]
    assert np.isnan(fn(np.array([1.0, np.nan], dtype=dtype)))
    with pytest.warns(AdvcoreWarning):
        assert np.isnan(fn(np.array([np.nan, np.nan], dtype=dtype), nan_policy="omit"))
    offset = (1e6 + np.arange(101) * 1e-3).astype(np.float64)
    result = fn(offset)
    assert np.isfinite(result)


# --- the sketch ----------------------------------------------------------------------------


sketch_values = st.lists(
    st.one_of(
        st.sampled_from([0.0, 1.0, -1.0, float("inf"), float("-inf")]),
        st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False),
        st.floats(1e-310, 1e-300),
    ),
    min_size=1,
    max_size=300,
)


@settings(max_examples=200, deadline=None)
@given(sketch_values, q_lists, st.integers(0, 10), st.sampled_from(DTYPES))
def test_sketch_within_stated_bound(xs: list[float], q: list[float], m: int, dtype: type) -> None:
    x = np.array(xs, dtype=dtype)
    sketch = QuantileSketch(m)
    sketch.update(x)
    exact = np.quantile(x.astype(np.float64), np.asarray(q), method="lower")
    got = sketch.quantile(q)
    assert sketch.relative_error == 2.0 ** -(m + 1)
    for v, e in zip(got, exact):
        if abs(e) >= np.finfo(np.float64).tiny:
            assert v == e or abs(v - e) <= sketch.relative_error * abs(e), (v, e)
        else:
            assert abs(v - e) < np.finfo(np.float64).tiny
    assert sketch.quantile(0.0) == x.min() and sketch.quantile(1.0) == x.max()
    assert sketch.count == x.size


@settings(max_examples=100, deadline=None)
@given(sketch_values, sketch_values, st.sampled_from(DTYPES))
def test_sketch_merge_is_exact(a: list[float], b: list[float], dtype: type) -> None:
    xa, xb = np.array(a, dtype=dtype), np.array(b, dtype=dtype)
    whole = QuantileSketch()
    whole.update(np.concatenate([xa, xb]))
    sa, sb = QuantileSketch(), QuantileSketch()
    sa.update(xa)
    sb.update(xb)
    ab, ba = sa.copy(), sb.copy()
    ab.merge(sb)
    ba.merge(sa)
    assert ab == whole and ba == whole
    assert_array_equal(ab.quantile(SEVEN_Q), whole.quantile(SEVEN_Q))
    assert QuantileSketch.from_bytes(whole.to_bytes()) == whole
    assert pickle.loads(pickle.dumps(whole)) == whole


def test_sketch_on_rl_rewards_is_exact_at_zero_and_one() -> None:
    rng = np.random.default_rng(8)
    rewards = (rng.random(100_000) < 0.3).astype(np.float32)
    sketch = QuantileSketch()
    sketch.update(pl.Series(rewards))
    exact = np.quantile(rewards.astype(np.float64), SEVEN_Q, method="lower")
    assert_array_equal(sketch.quantile(SEVEN_Q), exact)


def test_sketch_nan_policies_and_errors() -> None:
    s = QuantileSketch()
    s.update(np.array([1.0, np.nan]))
    assert s.nan_count == 1 and np.isnan(s.quantile(0.5))
    s = QuantileSketch(nan_policy="omit")
    s.update(np.array([1.0, np.nan]))
    assert (s.count, s.nan_count, s.quantile(0.5)) == (1, 0, 1.0)
    s = QuantileSketch(nan_policy="raise")
    s.update(np.array([2.0]))
    with pytest.raises(AdvcoreError, match="values"):
        s.update(np.array([1.0, np.nan]))
    assert s.count == 1  # unchanged by the failed update
    with pytest.raises(AdvcoreError, match="mantissa_bits"):
        QuantileSketch(14)
    with pytest.raises(AdvcoreError, match="`other`"):
        s.merge(QuantileSketch(3))
    with pytest.raises(AdvcoreError, match="`q`"):
        s.quantile(1.5)
    with pytest.raises(AdvcoreError, match="`data`"):
        QuantileSketch.from_bytes(b"AQS1garbage")
    s.merge(s)  # merging into itself doubles the counts
    assert s.count == 2
    with pytest.warns(AdvcoreWarning, match="empty"):
        assert np.isnan(QuantileSketch().quantile(0.5))
    assert "count=2" in repr(s)
