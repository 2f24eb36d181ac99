"""The Rust reference checks (``advcore_stats::checks``, what :func:`advcore.trace.step_row`
records) against the numpy :func:`advcore.reference.step_checks`, their oracle, on random steps:
ties, NaN and infinite rewards, float32 and float64, singleton and uneven groups, string and int
group ids in any order, advantages absent, from every preset family, whitened, noisy or with NaN.

Tolerances per key, and why: counts, shares and flags are decisions on exact group minima and
maxima and must be equal; the others are equal up to the summation order of a mean or a variance
(numpy sums pairwise, Rust in sample order, and the group scan has its own layout paths)."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advcore import reference
from advcore.errors import AdvcoreError
from advcore.reference import ADV_METRICS, REWARD_METRICS, native_step_checks, step_checks
from advcore.trace import _canonical, _trace, _traced, step_row

#: (rtol, atol) per key; (0, 0) means equal (NaN equal to NaN).
TOLERANCE: dict[str, tuple[float, float]] = {
    "reward_null_frac": (0.0, 0.0),
    "reward_imputed_zero_frac": (0.0, 0.0),
    "reward_low_precision": (0.0, 0.0),
    # u (|max| + |mean|) / s_g: the group variance's last bits.
    "reward_rounding_adv_err": (1e-9, 0.0),
    # 1 + m² / v: v of a rounding-noise group has few correct digits in either summation.
    "reward_onepass_relerr": (1e-6, 0.0),
    "singleton_group_frac": (0.0, 0.0),
    "uneven_group_frac": (0.0, 0.0),
    # |a - ref| / (rtol max(1, |ref|)): a reference recomputed from group means that may differ in
    # the last bit moves it by ~1e-16 / rtol = 1e-11 units.
    "adv_recompute_err": (1e-9, 1e-9),
    "adv_batch_normalized": (0.0, 0.0),
    "adv_bound_excess": (1e-9, 1e-12),
    # max |mean(a_g)| / std: a group-centred estimator's group means are rounding noise (~1e-17).
    "adv_group_mean_max": (1e-9, 1e-9),
    "tied_group_adv_nonzero_frac": (0.0, 0.0),
    "noise_group_adv_max": (1e-9, 1e-12),
}


def assert_checks_equal(got: dict[str, float], want: dict[str, float]) -> None:
    assert list(got) == list(want)
    for key, w in want.items():
        g = got[key]
        rtol, atol = TOLERANCE[key]
        if math.isnan(w) or math.isnan(g):
            assert math.isnan(w) and math.isnan(g), (key, g, w)
        elif rtol == atol == 0.0 or math.isinf(w):
            assert g == w, (key, g, w)
        else:
            assert abs(g - w) <= atol + rtol * abs(w), (key, g, w)


# --- random steps ----------------------------------------------------------------------------------

LEVELS = {
    "binary": np.array([0.0, 1.0]),
    "signed": np.array([-1.0, 0.0, 1.0]),  # 0 between -1 and +1: an imputed zero
    "components": np.array([-1.0, 0.0, 3.0, 4.0]),
    "shaped": np.array([0.0, 0.25, 1.0, 1.25]),
}


@st.composite
def steps(draw: Any) -> dict[str, Any]:
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_groups = draw(st.integers(1, 10))
    layout = draw(st.sampled_from(["even", "uneven", "singletons"]))
    if layout == "even":
        sizes = np.full(n_groups, draw(st.integers(2, 8)))
    elif layout == "uneven":
        sizes = rng.integers(1, 9, n_groups)
    else:
        sizes = rng.choice([1, 1, 4], n_groups)
    n = int(sizes.sum())
    kind = draw(st.sampled_from([*LEVELS, "continuous", "noise", "bf16"]))
    if kind in LEVELS:
        r = rng.choice(LEVELS[kind], n)
    elif kind == "continuous":
        r = rng.normal(size=n) * 3.0
    elif kind == "noise":  # groups whose rewards differ by rounding only
        r = 1.0 + rng.integers(0, 3, n) * 1e-9
    else:  # on the bfloat16 grid, not multiples of 1/64
        r = (rng.normal(size=n).astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
        r = r.astype(np.float64)
    if draw(st.booleans()):  # whole tied groups
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        for s, z in zip(starts, sizes, strict=True):
            if rng.random() < 0.4:
                r[s:s + z] = r[s]
    missing = draw(st.sampled_from(["none", "nan", "inf", "all"]))
    if missing in ("nan", "inf"):
        r[rng.random(n) < 0.15] = np.nan if missing == "nan" else rng.choice([np.inf, -np.inf])
    elif missing == "all":
        r[:] = np.nan
    ids = np.repeat(np.arange(n_groups), sizes)
    order = draw(st.sampled_from(["sorted", "shuffled"]))
    if order == "shuffled":
        perm = rng.permutation(n)
        r, ids = r[perm], ids[perm]
    id_kind = draw(st.sampled_from(["int", "sparse", "str"]))
    group_ids: Any = ids
    if id_kind == "sparse":
        group_ids = ids * 1_000_003 - 7
    elif id_kind == "str":
        group_ids = np.array([f"p{int(i) * 37 % 101}" for i in ids])
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    rewards = r.astype(dtype)
    estimator = draw(st.sampled_from(["none", "trl", "verl", "openrlhf", "dr", "rloo", "verl_rloo", "dapo",
                                      "batch", "rpp", "rpp_baseline", "whitened", "random", "scaled_wrong"]))
    adv = _advantages(estimator, rewards, group_ids, rng)
    if adv is not None:
        adv = adv.astype(draw(st.sampled_from([np.float32, np.float64])))
        if draw(st.integers(0, 4)) == 0:
            adv[rng.random(n) < 0.2] = np.nan
    return {"rewards": rewards, "group_ids": group_ids, "adv": adv}


def _advantages(estimator: str, r: Any, g: Any, rng: np.random.Generator) -> Any:
    if estimator == "none":
        return None
    if estimator == "random":
        return rng.normal(size=r.shape[0])
    if estimator == "whitened":  # an increasing affine function of the reward, token-weighted
        x = np.where(np.isfinite(r), r, 0.0).astype(np.float64)
        sd = x.std() or 1.0
        return (x - x.mean()) / sd * 0.9 + 0.05
    fns = {
        "trl": lambda: reference.grpo(r, g),
        "verl": lambda: reference.grpo(r, g, eps=1e-6, singleton="raw"),
        "openrlhf": lambda: reference.grpo(r, g, eps=1e-9, singleton="nan"),
        "dr": lambda: reference.grpo(r, g, scale=False),
        "rloo": lambda: reference.rloo(r, g),
        "verl_rloo": lambda: reference.rloo(r, g, singleton="raw"),
        "dapo": lambda: reference.dapo(r, g),
        "batch": lambda: reference.grpo(r, g, scale="batch"),
        "rpp": lambda: reference.reinforce_pp(r),
        "rpp_baseline": lambda: reference.reinforce_pp(r, g, baseline=True),
        "scaled_wrong": lambda: reference.grpo(r, g) * 1.7,
    }
    return fns[estimator]()


PROPERTY = settings(max_examples=int(os.environ.get("CHECKS_EXAMPLES", "300")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(steps())
def test_native_checks_equal_the_numpy_reference(step: dict[str, Any]) -> None:
    want = step_checks(step["rewards"], step["group_ids"], step["adv"])
    got = native_step_checks(step["rewards"], step["group_ids"], step["adv"])
    assert_checks_equal(got, want)


@PROPERTY
@given(steps())
def test_traced_checks_equal_the_numpy_reference(step: dict[str, Any]) -> None:
    """The product path: the checks computed in the trace's call, from its own group scans."""
    rewards, adv = step["rewards"], step["adv"]
    if adv is not None and rewards.dtype != adv.dtype:
        adv = adv.astype(rewards.dtype)
    want = step_checks(rewards, step["group_ids"], adv)
    _, _, got = _traced(0, rewards, group_ids=step["group_ids"], adv=adv, checked=True)
    assert got is not None
    assert_checks_equal(got, want)


@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float64", "float32"), ("float16", "float64")])
def test_checks_follow_the_input_dtypes(dtypes: tuple[str, str]) -> None:
    """A float16 reward is low precision and a float16 advantage has a float16 tolerance, in both."""
    rng = np.random.default_rng(3)
    r = rng.integers(0, 5, 64).astype(dtypes[0]) / 4
    g = np.arange(64) // 8
    adv = (reference.grpo(r, g) + rng.normal(size=64) * 1e-4).astype(dtypes[1])
    assert_checks_equal(native_step_checks(r, g, adv), step_checks(r, g, adv))
    for kw in ({}, {"reward_dtype": "bf16"}, {"adv_dtype": "float16"}, {"reward_dtype": "float64"}):
        assert_checks_equal(native_step_checks(r, g, adv, **kw), step_checks(r, g, adv, **kw))


def test_step_row_is_the_trace_and_the_native_checks() -> None:
    rng = np.random.default_rng(7)
    n = 16384
    r = (rng.random(n) < 0.4).astype(np.float32)
    groups = np.arange(n) // 16
    adv = reference.grpo(r, groups).astype(np.float32)
    for kwargs in ({"group_ids": groups}, {"group_size": 16}):
        frame, row = step_row(3, rewards=r, adv=adv, **kwargs)
        want_frame, cell = _trace(3, r, adv=adv, **kwargs)
        checks = native_step_checks(r, groups, adv)
        want = {**{k: v for k, v in checks.items() if not math.isnan(v)}, **_canonical(cell)}
        assert frame.equals(want_frame)
        assert list(row) == list(want)
        assert_checks_equal({k: row[k] for k in checks if k != "reward_null_frac"},
                            {k: v for k, v in checks.items() if k != "reward_null_frac"})
        numpy_checks = step_checks(r, groups, adv)
        assert_checks_equal({k: row[k] for k in (*REWARD_METRICS[1:], *ADV_METRICS)},
                            {k: numpy_checks[k] for k in (*REWARD_METRICS[1:], *ADV_METRICS)})


def test_step_row_reports_the_trace_error_first() -> None:
    r = np.array([1.0, 0.0, 1.0, 0.0])
    # Both the trace and the checks reject a short `adv`; the trace's message names its keyword.
    with pytest.raises(AdvcoreError, match="`adv` has length 3 but `rewards` has length 4"):
        step_row(0, rewards=r, group_ids=[0, 0, 1, 1], adv=np.zeros(3))
    with pytest.raises(AdvcoreError, match="at most one of `group_ids` and `group_size`"):
        step_row(0, rewards=r, group_ids=[0, 0, 1, 1], group_size=2)
    with pytest.raises(AdvcoreError, match="`group_size`"):
        step_row(0, rewards=r, group_size=0)
    # Float ids are refused by the checks, as by step_checks.
    with pytest.raises(AdvcoreError, match="integers or strings, got floats"):
        step_row(0, rewards=r, group_ids=np.array([0.0, 0.0, 1.0, 1.0]))


def test_adv_raw_is_checked_when_adv_is_absent() -> None:
    r = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    g = np.arange(8) // 4
    raw = reference.grpo(r, g, scale=False)
    _, row = step_row(0, rewards=r, group_size=4, adv_raw=raw, adv_clipped=np.clip(raw, -0.5, 0.5))
    want = step_checks(r, g, raw)
    assert_checks_equal({k: row.get(k, math.nan) for k in ADV_METRICS}, {k: want[k] for k in ADV_METRICS})
    _, plain = step_row(0, rewards=r, group_size=4)
    assert not set(ADV_METRICS) & set(plain) and "singleton_group_frac" in plain
