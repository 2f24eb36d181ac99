"""Hostile arguments for the public functions of ``advcore.stats``, ``advcore.reference`` and
``advcore.trace``: every call either returns or raises :class:`advcore.errors.AdvcoreError` whose
message names one of the function's parameters, and no warning but an ``AdvcoreWarning`` reaches
the caller. Arrays of every dtype numpy has (complex, datetime, strings, objects), every shape, and
values at the edges of float64 (NaN, infinities, 1e308, subnormals, -0.0), with keyword values that
are wrong in type or range.

``make test`` draws ``ADVCORE_FUZZ_API`` (default 40) examples per function; ``make fuzz`` draws 300
per function (5,400 calls at least: each function must get every example it asks for).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advcore import reference, stats, trace
from advcore.errors import AdvcoreError, AdvcoreWarning

EXAMPLES = int(os.environ.get("ADVCORE_FUZZ_API", "40"))

_EDGE = [0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf, 1e308, -1e308, 5e-324, 1e-300, 3.0, 7.0]
_DTYPES = ["float64", "float32", "float16", "int64", "int8", "uint64", "bool", "complex128", "datetime64[s]",
           "<U3", "object", ">f8"]


@st.composite
def arrays(draw: st.DrawFn, n: int | None = None) -> Any:
    """A hostile array-like: numpy arrays of any dtype and rank, lists, scalars, None, strings."""
    kind = draw(st.sampled_from(["array", "array", "array", "list", "scalar", "none", "text", "2d", "empty"]))
    size = n if n is not None else draw(st.integers(0, 12))
    values = draw(st.lists(st.sampled_from(_EDGE), min_size=size, max_size=size))
    if kind == "list":
        return values
    if kind == "scalar":
        return values[0] if values else 1.0
    if kind == "none":
        return None
    if kind == "text":
        return "1,2,3"
    if kind == "empty":
        return np.array([])
    dtype = draw(st.sampled_from(_DTYPES))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            a = np.array(values, dtype="float64").astype(dtype)
        except (ValueError, TypeError, OverflowError):
            a = np.array(values, dtype="float64")
    if kind == "2d" and a.size % 2 == 0 and a.size:
        a = a.reshape(2, -1)
    return a


_KW = st.one_of(st.none(), st.integers(-3, 20), st.floats(allow_nan=True, allow_infinity=True),
                st.sampled_from(["linear", "omit", "raise", "propagate", "bogus", "", "normal", "lower"]),
                st.booleans())


def _calls() -> dict[str, tuple[Callable[..., Any], Any]]:
    """Function name -> (function, strategy of (args, kwargs))."""
    one = st.tuples(st.tuples(arrays()), st.just({}))
    two = st.integers(0, 12).flatmap(lambda n: st.tuples(st.tuples(arrays(n), arrays(n)), st.just({})))
    grouped = st.integers(0, 12).flatmap(lambda n: st.tuples(
        st.tuples(arrays(n)), st.fixed_dictionaries({}, optional={"group_size": _KW, "group_ids": arrays(n)})))
    grouped2 = st.integers(0, 12).flatmap(lambda n: st.tuples(
        st.tuples(arrays(n), arrays(n)), st.fixed_dictionaries({}, optional={"group_size": _KW, "group_ids": arrays(n)})))
    ref = st.integers(0, 12).flatmap(lambda n: st.tuples(st.tuples(arrays(n), arrays(n)), st.fixed_dictionaries(
        {}, optional={"eps": _KW, "ddof": _KW})))
    return {
        "stats.change_census": (stats.change_census, two),
        "stats.explained_variance": (stats.explained_variance, grouped2),
        "stats.grouped_moments": (stats.grouped_moments, st.tuples(grouped.map(lambda c: c[0]), grouped.map(
            lambda c: c[1])).map(lambda c: c)),
        "stats.interquartile_range": (stats.interquartile_range, st.tuples(st.tuples(arrays()), st.fixed_dictionaries(
            {}, optional={"method": _KW, "nan_policy": _KW}))),
        "stats.median_abs_deviation": (stats.median_abs_deviation, st.tuples(st.tuples(arrays()), st.fixed_dictionaries(
            {}, optional={"scale": _KW}))),
        "stats.quantile": (stats.quantile, st.tuples(st.tuples(arrays(), arrays()), st.fixed_dictionaries(
            {}, optional={"method": _KW}))),
        "stats.spearman": (stats.spearman, two),
        "stats.value_census": (stats.value_census, st.tuples(st.tuples(arrays()), st.fixed_dictionaries(
            {}, optional={"atol": _KW}))),
        "stats.variance_decomposition": (stats.variance_decomposition, grouped),
        "stats.within_group_spearman": (stats.within_group_spearman, grouped2),
        "stats.zero_variance_fraction": (stats.zero_variance_fraction, grouped),
        "reference.grpo": (reference.grpo, ref),
        "reference.dapo": (reference.dapo, ref),
        "reference.rloo": (reference.rloo, two),
        "reference.reinforce_pp": (reference.reinforce_pp, two),
        "reference.compare": (reference.compare, st.integers(0, 12).flatmap(
            lambda n: st.tuples(st.tuples(arrays(n), arrays(n), arrays(n)), st.just({})))),
        "reference.step_checks": (reference.step_checks, st.integers(0, 12).flatmap(
            lambda n: st.tuples(st.tuples(arrays(n), arrays(n), arrays(n)), st.just({})))),
        "trace.trace_step": (lambda rewards, advantages, **kw: trace.trace_step(1, rewards=rewards, adv=advantages, **kw),
                             grouped2),
    }


CALLS = _calls()


def _parameters(name: str, fn: Callable[..., Any]) -> set[str]:
    import inspect

    target = {"trace.trace_step": trace.trace_step}.get(name, fn)
    names = set(inspect.signature(target).parameters)
    return names | {"values", "rewards", "group_ids", "group_size", "x", "y", "q", "adv", "advantages"}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_hostile_arguments_return_or_name_the_argument(name: str) -> None:
    fn, strategy = CALLS[name]
    params = _parameters(name, fn)
    calls: list[str] = []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(strategy)
    def check(call: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
        calls.append(name)
        args, kwargs = call
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                fn(*args, **kwargs)
            except AdvcoreError as e:
                named = [p for p in params if f"`{p}`" in str(e) or f"'{p}'" in str(e) or str(e).startswith(p)]
                assert named, f"{name}{args!r}{kwargs!r}: the error names no argument: {e}"
        leaked = [w for w in caught if not issubclass(w.category, AdvcoreWarning)]
        assert not leaked, f"{name}{args!r}{kwargs!r}: {[str(w.message) for w in leaked]}"

    check()
    assert len(calls) >= EXAMPLES, f"{name}: only {len(calls)} calls were drawn, {EXAMPLES} asked"
