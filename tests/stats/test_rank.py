"""spearman and within_group_spearman against scipy.stats.spearmanr."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from advcore._arrays import as_values
from advcore.errors import AdvcoreError, AdvcoreWarning
from advcore.stats import GroupedSpearman, spearman, within_group_spearman

DTYPES = [np.float32, np.float64]


def scipy_rho(x: Any, y: Any, nan_policy: str = "propagate") -> float:
    """The oracle; scipy's own warnings (constant input, few samples) are not under test.

    ``omit`` drops NaN pairs here, then calls scipy: scipy's own ``omit`` path (masked arrays)
    refuses fewer than 3 pairs, where the statistic is still defined.
    """
    if nan_policy == "omit":
        x, y = np.asarray(x), np.asarray(y)
        keep = ~(np.isnan(x) | np.isnan(y))
        x, y = x[keep], y[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(scipy.stats.spearmanr(x, y).statistic)


def assert_rho(got: float, want: float, tol: float = 1e-12) -> None:
    if math.isnan(want):
        assert math.isnan(got)
    else:
        assert abs(got - want) <= tol, (got, want)


def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call ``fn``; an AdvcoreWarning is allowed (undefined statistic), nothing else."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AdvcoreWarning)
        return fn(*args, **kwargs)


# Values on a coarse grid, so ties are frequent, with both zeros.
grid = st.sampled_from([-2.0, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 3.0, 1e6])


def paired(dtype_x: Any, dtype_y: Any, min_size: int = 1) -> Any:
    return st.integers(min_size, 40).flatmap(
        lambda n: st.tuples(
            hnp.arrays(dtype_x, n, elements=grid), hnp.arrays(dtype_y, n, elements=grid)
        )
    )


@settings(max_examples=150, deadline=None)
@given(data=st.data(), dx=st.sampled_from(DTYPES), dy=st.sampled_from(DTYPES))
def test_spearman_matches_scipy_with_ties(data: Any, dx: Any, dy: Any) -> None:
    x, y = data.draw(paired(dx, dy))
    want = scipy_rho(x, y)
    if math.isnan(want):
        with pytest.warns(AdvcoreWarning, match="undefined"):
            got = spearman(x, y)
        assert math.isnan(got)
    else:
        got = spearman(x, y)
        assert -1.0 <= got <= 1.0
        assert_rho(got, want)
        assert_rho(spearman(y, x), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["table_x", "table_y", "sorted"])
def test_spearman_large_paths(dtype: Any, layout: str) -> None:
    # Large enough for the radix sort; the coarse side takes the lookup-table path.
    rng = np.random.default_rng(1)
    n = 200_003
    coarse = np.round(rng.random(n), 2).astype(dtype)
    fine = rng.standard_normal(n).astype(dtype)
    fine2 = (fine + rng.standard_normal(n)).astype(dtype)
    x, y = {"table_x": (coarse, fine), "table_y": (fine, coarse), "sorted": (fine, fine2)}[layout]
    assert_rho(spearman(x, y), scipy_rho(x, y))


@pytest.mark.parametrize("dtype", DTYPES)
def test_spearman_huge_offset(dtype: Any) -> None:
    rng = np.random.default_rng(2)
    x = (1e6 + rng.standard_normal(5000) * 1e-2).astype(dtype)
    y = (x.astype(np.float64) + rng.standard_normal(5000) * 1e-2).astype(dtype)
    assert_rho(spearman(x, y), scipy_rho(x, y))


@pytest.mark.parametrize("policy", ["propagate", "omit"])
@pytest.mark.parametrize("n", [10, 50_000])
def test_spearman_nan_policies(policy: str, n: int) -> None:
    rng = np.random.default_rng(3)
    x = np.round(rng.standard_normal(n), 1)
    y = rng.standard_normal(n).astype(np.float32)
    x[::7] = np.nan
    y[3::11] = np.nan
    assert_rho(spearman(x, y, nan_policy=policy), scipy_rho(x, y, nan_policy=policy))
    if policy == "omit":  # scipy's own omit path (masked arrays) agrees
        assert_rho(
            spearman(x, y, nan_policy=policy),
            float(scipy.stats.spearmanr(x, y, nan_policy="omit").statistic),
        )


def test_spearman_raise_names_the_argument() -> None:
    with pytest.raises(AdvcoreError, match="`y` contains NaN"):
        spearman([1.0, 2.0, 3.0], [1.0, np.nan, 3.0], nan_policy="raise")
    with pytest.raises(AdvcoreError, match="`x` contains NaN"):
        spearman([np.nan, 2.0, 3.0], [1.0, 2.0, 3.0], nan_policy="raise")
    with pytest.raises(AdvcoreError, match="nan_policy"):
        spearman([1.0, 2.0], [1.0, 2.0], nan_policy="ignore")


def test_spearman_bad_input() -> None:
    with pytest.raises(AdvcoreError, match="`y` has length 2"):
        spearman([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(AdvcoreError, match="`x` is empty"):
        spearman(np.array([]), np.array([]))
    with pytest.raises(AdvcoreError, match="`x` is empty"):
        spearman([np.nan, 1.0], [1.0, np.nan], nan_policy="omit")
    with pytest.raises(AdvcoreError, match="`x` must be 1-D"):
        spearman(np.ones((2, 2)), np.ones(4))
    with pytest.raises(AdvcoreError, match="`y` has unsupported dtype"):
        spearman([1.0, 2.0], np.array(["a", "b"]))


def test_spearman_undefined_warns() -> None:
    with pytest.warns(AdvcoreWarning, match="fewer than 2 pairs"):
        assert math.isnan(spearman([1.0], [2.0]))
    with pytest.warns(AdvcoreWarning, match="constant"):
        assert math.isnan(spearman(np.full(10, 0.5, np.float32), np.arange(10.0)))
    # Propagated NaN is not "undefined": no warning (warnings are errors here).
    assert math.isnan(spearman([1.0, np.nan, 3.0], [1.0, 2.0, 3.0]))


def test_spearman_monotone_invariance_and_inputs() -> None:
    rng = np.random.default_rng(4)
    x = np.round(rng.standard_normal(1000), 1)
    y = rng.standard_normal(1000)
    r = spearman(x, y)
    assert spearman(np.exp(x), y**3) == pytest.approx(r, abs=1e-12)
    assert spearman(-x, y) == pytest.approx(-r, abs=1e-12)
    assert spearman(pl.Series(x), pl.Series(y.astype(np.float32))) == pytest.approx(
        scipy_rho(x, y.astype(np.float32)), abs=1e-12
    )
    assert spearman(list(x), (y * 10).astype(np.int64)) == pytest.approx(
        scipy_rho(x, (y * 10).astype(np.int64)), abs=1e-12
    )
    # Contiguous float input reaches the kernel without a copy.
    f32 = y.astype(np.float32)
    assert as_values(f32, "x") is f32


def scipy_per_group(x: Any, y: Any, ids: Any, nan_policy: str) -> tuple[Any, Any]:
    labels = np.unique(ids)
    return labels, np.array([scipy_rho(x[ids == g], y[ids == g], nan_policy) for g in labels])


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    dx=st.sampled_from(DTYPES),
    dy=st.sampled_from(DTYPES),
    size=st.integers(1, 9),
    policy=st.sampled_from(["propagate", "omit"]),
)
def test_within_group_contiguous(data: Any, dx: Any, dy: Any, size: int, policy: str) -> None:
    n_groups = data.draw(st.integers(1, 12))
    n = n_groups * size
    x = data.draw(hnp.arrays(dx, n, elements=grid | st.just(np.nan)))
    y = data.draw(hnp.arrays(dy, n, elements=grid))
    out = call(within_group_spearman, x, y, group_size=size, nan_policy=policy)
    labels, want = scipy_per_group(x, y, np.repeat(np.arange(n_groups), size), policy)
    np.testing.assert_array_equal(out.group, labels)
    np.testing.assert_allclose(out.rho, want, rtol=0, atol=1e-12)
    defined = ~np.isnan(want)
    has_nan = np.array([np.isnan(g).any() for g in x.reshape(n_groups, size)])
    n_nan = int(has_nan.sum()) if policy == "propagate" else 0
    assert (out.n_defined, out.n_nan) == (int(defined.sum()), n_nan)
    assert out.n_undefined == n_groups - out.n_defined - out.n_nan
    if out.n_defined and not out.n_nan:
        assert out.mean == pytest.approx(want[defined].mean(), abs=1e-12)
    else:
        assert math.isnan(out.mean)


def test_within_group_ids_unsorted_singletons_and_large_groups() -> None:
    rng = np.random.default_rng(5)
    # Group sizes 1 (undefined), small, and one large enough for the radix path.
    ids = np.concatenate([[100, -7], np.repeat([3, 9, 42], [5, 64, 9000])])
    rng.shuffle(ids)
    x = np.round(rng.random(ids.size), 2).astype(np.float32)
    y = rng.standard_normal(ids.size)
    out = within_group_spearman(x, y, group_ids=ids)
    labels, want = scipy_per_group(x, y, ids, "propagate")
    np.testing.assert_array_equal(out.group, labels)
    np.testing.assert_allclose(out.rho, want, rtol=0, atol=1e-12)
    assert (out.n_defined, out.n_undefined, out.n_nan) == (3, 2, 0)
    assert out.mean == pytest.approx(np.nanmean(want), abs=1e-12)
    assert isinstance(out, GroupedSpearman)
    assert out.to_polars().shape == (5, 2)
    polars_out = within_group_spearman(pl.Series(x), pl.Series(y), group_ids=pl.Series(ids))
    np.testing.assert_array_equal(polars_out.rho, out.rho)


def test_within_group_warns_when_nothing_is_defined() -> None:
    x = np.array([1.0, 1.0, 2.0, 2.0])
    with pytest.warns(AdvcoreWarning, match="all 2 groups"):
        out = within_group_spearman(x, np.arange(4.0), group_size=2)
    assert out.n_defined == 0 and math.isnan(out.mean)


def test_within_group_errors() -> None:
    x = np.arange(6.0)
    with pytest.raises(AdvcoreError, match="group_size"):
        within_group_spearman(x, x, group_size=4)
    with pytest.raises(AdvcoreError, match="exactly one"):
        within_group_spearman(x, x)
    with pytest.raises(AdvcoreError, match="`group_ids` has length"):
        within_group_spearman(x, x, group_ids=[1, 2])
    with pytest.raises(AdvcoreError, match="`y` has length"):
        within_group_spearman(x, x[:5], group_size=3)
    with pytest.raises(AdvcoreError, match="`x` contains NaN"):
        within_group_spearman(np.array([1.0, np.nan]), x[:2], group_size=2, nan_policy="raise")


@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.float32, np.float64), (np.float64, np.float32)])
def test_spearman_on_two_threads_is_the_one_thread_value(dtypes: tuple[Any, Any]) -> None:
    # from 2**20 pairs with many distinct values on both sides the pairs are sorted and ranked on two
    # threads; the rank sums are exact integers, so the value is the same to the bit, and scipy's
    rng = np.random.default_rng(17)
    n = (1 << 20) + 7
    x = rng.standard_normal(n).astype(dtypes[0])
    y = (0.3 * x + rng.standard_normal(n)).astype(dtypes[1])
    y[: n // 10] = 0.0  # a tenth tied at one value: a run the split must not cut
    one, two = spearman(x, y, threads=1), spearman(x, y, threads=2)
    assert one == two and spearman(x, y) == one
    assert math.isclose(two, float(scipy.stats.spearmanr(x, y).statistic), rel_tol=0, abs_tol=1e-12)
    with pytest.raises(AdvcoreError, match="threads"):
        spearman(x, y, threads=-1)
