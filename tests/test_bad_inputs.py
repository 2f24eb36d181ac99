"""Every public function of ``advcore.stats`` through the same bad and degenerate inputs
(scipy's ``test_axis_nan_policy`` pattern): bad arguments raise an ``AdvcoreError`` naming the
argument, undefined statistics warn, and nothing else escapes."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from advcore import _core, stats
from advcore.errors import AdvcoreError, AdvcoreWarning


@dataclass(frozen=True)
class Fn:
    """How to call one public function: its float array arguments and its options."""

    name: str
    call: Callable[..., Any]
    arrays: tuple[str, ...]
    grouped: bool = False  # takes group_size / group_ids
    requires_groups: bool = False
    nan_policy: bool = True


FUNCTIONS = [
    Fn("grouped_moments", stats.grouped_moments, ("values",), grouped=True, requires_groups=True),
    Fn("zero_variance_fraction", stats.zero_variance_fraction, ("values",), grouped=True, requires_groups=True),
    Fn("variance_decomposition", stats.variance_decomposition, ("values",), grouped=True, requires_groups=True),
    Fn("explained_variance", stats.explained_variance, ("returns", "values"), grouped=True),
    Fn("spearman", stats.spearman, ("x", "y")),
    Fn("within_group_spearman", stats.within_group_spearman, ("x", "y"), grouped=True, requires_groups=True),
    Fn("value_census", stats.value_census, ("values",), nan_policy=False),
    Fn("change_census", stats.change_census, ("before", "after"), nan_policy=False),
    Fn("quantile", lambda v, **kw: stats.quantile(v, [0.1, 0.5], **kw), ("values",)),
    Fn("median_abs_deviation", stats.median_abs_deviation, ("values",)),
    Fn("interquartile_range", stats.interquartile_range, ("values",)),
]
IDS = [f.name for f in FUNCTIONS]


def call(fn: Fn, arrays: list[Any], **kw: Any) -> Any:
    if fn.requires_groups and "group_ids" not in kw and "group_size" not in kw:
        kw["group_size"] = 1
    return fn.call(*arrays, **kw)


def good(n: int, fn: Fn, rng: np.random.Generator | None = None) -> list[Any]:
    rng = rng or np.random.default_rng(0)
    return [rng.standard_normal(n) for _ in fn.arrays]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=IDS)
def test_empty_input_names_the_first_array(fn: Fn) -> None:
    with pytest.raises(AdvcoreError, match=f"`{fn.arrays[0]}`"):
        call(fn, [np.array([], dtype=np.float64) for _ in fn.arrays])


@pytest.mark.parametrize("fn", FUNCTIONS, ids=IDS)
@pytest.mark.parametrize("bad", [np.array([1 + 1j, 2j]), np.array(["a", "b"]), np.ones((2, 2))])
def test_unsupported_input_names_the_argument(fn: Fn, bad: Any) -> None:
    for position, name in enumerate(fn.arrays):
        arrays = good(bad.shape[0], fn)
        arrays[position] = bad
        with pytest.raises(AdvcoreError, match=f"`{name}`"):
            call(fn, arrays)


@pytest.mark.parametrize("fn", [f for f in FUNCTIONS if len(f.arrays) == 2], ids=lambda f: f.name)
def test_length_mismatch_names_the_second_array(fn: Fn) -> None:
    a, b = good(6, fn)
    with pytest.raises(AdvcoreError, match=f"`{fn.arrays[1]}`"):
        call(fn, [a, b[:5]])


@pytest.mark.parametrize("fn", [f for f in FUNCTIONS if f.grouped], ids=lambda f: f.name)
def test_group_layout_errors_name_the_argument(fn: Fn) -> None:
    arrays = good(6, fn)
    with pytest.raises(AdvcoreError, match="`group_size`"):
        call(fn, arrays, group_size=4)  # 6 samples are not contiguous groups of 4
    with pytest.raises(AdvcoreError, match="`group_ids`"):
        call(fn, arrays, group_ids=np.zeros(5, dtype=np.int64))
    with pytest.raises(AdvcoreError, match="`group_ids`"):
        call(fn, arrays, group_ids=np.zeros(6))  # float ids
    with pytest.raises(AdvcoreError, match="exactly one"):
        call(fn, arrays, group_size=2, group_ids=np.zeros(6, dtype=np.int64))


@pytest.mark.parametrize("fn", [f for f in FUNCTIONS if f.nan_policy], ids=lambda f: f.name)
def test_nan_policy(fn: Fn) -> None:
    for position, name in enumerate(fn.arrays):
        arrays = good(8, fn)
        arrays[position][3] = np.nan
        with pytest.raises(AdvcoreError, match=f"`{name}`"):
            call(fn, arrays, nan_policy="raise")
    with pytest.raises(AdvcoreError, match="`nan_policy`"):
        call(fn, good(8, fn), nan_policy="ignore")


@pytest.mark.parametrize("q", [-0.01, 1.01, np.nan, [0.5, 2.0]])
def test_quantile_q_out_of_range_names_q(q: Any) -> None:
    with pytest.raises(AdvcoreError, match="`q`"):
        stats.quantile(np.arange(5.0), q)


@pytest.mark.parametrize("fn", FUNCTIONS, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_length_one_input_returns_or_warns(fn: Fn, dtype: type) -> None:
    """One sample: either a defined result or an AdvcoreWarning, never another exception."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(fn, [np.array([0.25], dtype=dtype) for _ in fn.arrays])
    assert all(issubclass(w.category, AdvcoreWarning) for w in caught), [str(w.message) for w in caught]


# Constant input where the statistic is undefined: a documented value (NaN) and a warning.
UNDEFINED_ON_CONSTANT = {
    "spearman": lambda c: stats.spearman(c, np.arange(c.shape[0], dtype=np.float64)),
    "within_group_spearman": lambda c: stats.within_group_spearman(c, np.arange(c.shape[0], dtype=np.float64), group_size=4).mean,
    "explained_variance": lambda c: stats.explained_variance(c, c * 0.5).overall,
    "variance_decomposition": lambda c: stats.variance_decomposition(c, group_size=4).within_frac,
    "grouped_moments (ddof=1, singleton groups)": lambda c: stats.grouped_moments(c, group_size=1, ddof=1).var[0],
    "zero_variance_fraction (all singleton)": lambda c: stats.zero_variance_fraction(c, group_size=1).exact_frac,
}


@pytest.mark.parametrize("name", list(UNDEFINED_ON_CONSTANT))
def test_undefined_statistic_is_nan_with_a_warning(name: str) -> None:
    constant = np.full(8, 3.0)
    with pytest.warns(AdvcoreWarning):
        value = UNDEFINED_ON_CONSTANT[name](constant)
    assert np.isnan(value)


DEFINED_ON_CONSTANT = [
    f for f in FUNCTIONS if f.name
    not in ("spearman", "within_group_spearman", "explained_variance", "variance_decomposition")
]


@pytest.mark.parametrize("fn", DEFINED_ON_CONSTANT, ids=lambda f: f.name)
def test_constant_input_where_defined_is_quiet(fn: Fn) -> None:
    """Constant input is routine in RL (tied groups): functions defined on it return without a
    warning (warnings are errors in this suite), with constant groups too."""
    kw: dict[str, Any] = {"group_size": 4} if fn.grouped else {}
    out = call(fn, [np.full(8, 3.0) for _ in fn.arrays], **kw)
    assert out is not None


def test_rust_panic_becomes_an_exception_not_an_abort() -> None:
    with pytest.raises(AdvcoreError, match="internal error"):
        _core._panic_for_tests()


@pytest.mark.parametrize("bad", [np.array([1 + 1j, 2j]), np.array(["a", "b"]), np.array([1, 2], dtype="datetime64[s]")])
def test_arrays_of_no_real_numbers_are_named_once(bad: Any) -> None:
    from advcore import reference

    with pytest.raises(AdvcoreError) as e:
        reference.grpo(bad, [0, 0])
    assert str(e.value) == f"`rewards` must hold real numbers, got an array of dtype {bad.dtype}"
    with pytest.raises(AdvcoreError, match=r"^`q` must hold real numbers in \[0, 1\]"):
        stats.quantile(np.ones(3), bad[:1])
