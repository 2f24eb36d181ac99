"""value_census and change_census against numpy."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from advcore.errors import AdvcoreError, AdvcoreWarning
from advcore.stats import change_census, value_census

DTYPES = [np.float32, np.float64]

special = st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-9, -1e-9, 1e6, 1e6 + 0.5])
values = st.floats(-3, 3, width=32) | special


def numpy_value_census(x: Any, atol: float) -> dict[str, Any]:
    finite = x[np.isfinite(x)]
    m = finite.size
    return {
        "n": x.size,
        "n_nan": int(np.isnan(x).sum()),
        "n_posinf": int(np.isposinf(x).sum()),
        "n_neginf": int(np.isneginf(x).sum()),
        "exact_zero_frac": np.count_nonzero(finite == 0) / m if m else math.nan,
        "near_zero_frac": np.isclose(finite, 0, rtol=0, atol=atol).sum() / m if m else math.nan,
        "pos_frac": np.count_nonzero(finite > 0) / m if m else math.nan,
        "neg_frac": np.count_nonzero(finite < 0) / m if m else math.nan,
        # np.unique treats -0.0 and 0.0 as equal.
        "n_unique": np.unique(finite).size,
    }


def check_value_census(x: Any, atol: float) -> None:
    want = numpy_value_census(x, atol)
    if want["n"] == want["n_nan"] + want["n_posinf"] + want["n_neginf"]:
        with pytest.warns(AdvcoreWarning, match="no finite value"):
            got = value_census(x, atol=atol)
    else:
        got = value_census(x, atol=atol)
    for key, value in want.items():
        assert getattr(got, key) == pytest.approx(value, nan_ok=True, rel=1e-15), key
    assert got.n_nonfinite + got.n_finite == got.n


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    atol=st.sampled_from([0.0, 1e-8, 0.5, 1e7]),
)
def test_value_census_matches_numpy(data: Any, dtype: Any, atol: float) -> None:
    x = data.draw(hnp.arrays(dtype, st.integers(1, 60), elements=values))
    check_value_census(x, atol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_value_census_large(dtype: Any) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(300_001).astype(dtype)
    x[::10] = np.round(x[::10], 1)  # ties
    x[::97] = 0.0
    x[1::101] = -0.0
    x[::1009] = np.nan
    x[::2003] = np.inf
    x = x + np.asarray(1e6 if dtype == np.float64 else 0.0, dtype)  # huge offset for float64
    check_value_census(x, 1e-8)
    check_value_census(np.round(x, 2), 1e-3)


def test_value_census_inputs_and_errors() -> None:
    c = value_census(pl.Series([0.0, 1.0, None, -2.0]))  # Polars null becomes NaN
    assert (c.n, c.n_nan, c.n_unique) == (4, 1, 3)
    c = value_census([5])  # integers widened, length 1
    assert (c.pos_frac, c.n_unique) == (1.0, 1)
    with pytest.warns(AdvcoreWarning, match="no finite value"):
        c = value_census([np.nan, np.inf])
    assert math.isnan(c.pos_frac)
    with pytest.raises(AdvcoreError, match="`values` is empty"):
        value_census(np.array([], np.float32))
    with pytest.raises(AdvcoreError, match="atol"):
        value_census([1.0], atol=-1)
    with pytest.raises(AdvcoreError, match="atol"):
        value_census([1.0], atol=float("inf"))


def numpy_change_census(b: Any, a: Any, atol: float) -> dict[str, Any]:
    b64, a64 = b.astype(np.float64), a.astype(np.float64)
    # Independent of the kernel's rule: unchanged = both NaN, or isclose (which also holds
    # for equal infinities).
    unchanged = (np.isnan(b64) & np.isnan(a64)) | np.isclose(a64, b64, rtol=0, atol=atol)
    finite = np.isfinite(b64) & np.isfinite(a64)
    d = np.abs(a64[finite] - b64[finite])
    return {
        "n": b.size,
        "n_changed": int((~unchanged).sum()),
        "changed_frac": (~unchanged).mean(),
        "n_finite_pairs": int(finite.sum()),
        "max_abs_change": d.max() if d.size else math.nan,
        "mean_abs_change": d.mean() if d.size else math.nan,
    }


def check_change_census(b: Any, a: Any, atol: float) -> None:
    want = numpy_change_census(b, a, atol)
    if want["n_finite_pairs"] == 0:
        with pytest.warns(AdvcoreWarning, match="finite on both sides"):
            got = change_census(b, a, atol=atol)
    else:
        got = change_census(b, a, atol=atol)
    for key, value in want.items():
        assert getattr(got, key) == pytest.approx(value, nan_ok=True, rel=1e-12), key


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    db=st.sampled_from(DTYPES),
    da=st.sampled_from(DTYPES),
    atol=st.sampled_from([0.0, 1e-8, 0.25, 2.0]),
)
def test_change_census_matches_numpy(data: Any, db: Any, da: Any, atol: float) -> None:
    n = data.draw(st.integers(1, 60))
    b = data.draw(hnp.arrays(db, n, elements=values))
    a = data.draw(hnp.arrays(da, n, elements=values))
    # Make unchanged pairs common: copy some of before into after.
    keep = data.draw(hnp.arrays(np.bool_, n))
    a[keep] = b[keep]
    check_change_census(b, a, atol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_change_census_clipping_and_masking(dtype: Any) -> None:
    rng = np.random.default_rng(1)
    adv = (rng.standard_normal(200_001) * 2).astype(dtype)
    check_change_census(adv, np.clip(adv, -1, 1), 0.0)
    masked = adv.copy()
    masked[::3] = np.nan
    check_change_census(adv, masked, 1e-6)
    offset = adv.astype(np.float64) + 1e6
    check_change_census(offset, offset + rng.standard_normal(adv.size) * 1e-3, 5e-4)


def test_change_census_inputs_and_errors() -> None:
    c = change_census(pl.Series([1.0, 2.0]), np.array([1.0, 3.0], np.float32))
    assert (c.n_changed, c.max_abs_change, c.mean_abs_change) == (1, 1.0, 0.5)
    c = change_census([0.0], [-0.0])
    assert c.n_changed == 0 and c.changed_frac == 0.0
    with pytest.raises(AdvcoreError, match="`after` has length 1"):
        change_census([1.0, 2.0], [1.0])
    with pytest.raises(AdvcoreError, match="`before` is empty"):
        change_census([], [])
    with pytest.raises(AdvcoreError, match="atol"):
        change_census([1.0], [1.0], atol=math.nan)
