"""Grouped kernels against plain numpy oracles: a Python loop over ``np.unique`` groups."""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advcore.errors import AdvcoreError, AdvcoreWarning
from advcore.stats import (
    explained_variance,
    grouped_moments,
    variance_decomposition,
    zero_variance_fraction,
)

POLICIES = ["propagate", "omit"]
DTYPES = [np.float32, np.float64]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------------------------
# Oracles: every group gathered with numpy and summarised by numpy.


def groups_of(n: int, group_size: int | None, ids: Any) -> tuple[np.ndarray, list[np.ndarray]]:
    """(labels, member indices per group) in the order advcore reports groups."""
    if group_size is not None:
        return np.arange(n // group_size), [
            np.arange(g * group_size, (g + 1) * group_size) for g in range(n // group_size)
        ]
    ids = np.asarray(ids)
    labels = np.unique(ids)
    return labels, [np.flatnonzero(ids == label) for label in labels]


def oracle_moments(x: np.ndarray, members: list[np.ndarray], ddof: int, policy: str) -> dict:
    out: dict[str, list[float]] = {k: [] for k in ("count", "mean", "var", "min", "max")}
    for m in members:
        g = x[m].astype(np.float64)
        if policy == "omit":
            g = g[~np.isnan(g)]
        out["count"].append(len(g))
        if len(g) == 0:
            for k in ("mean", "var", "min", "max"):
                out[k].append(np.nan)
            continue
        out["mean"].append(np.mean(g))
        out["var"].append(np.var(g, ddof=ddof) if len(g) > ddof else np.nan)
        nan = np.isnan(g).any()
        out["min"].append(np.nan if nan else np.min(g))
        out["max"].append(np.nan if nan else np.max(g))
    return {k: np.array(v) for k, v in out.items()}


def oracle_census(x: np.ndarray, members: list[np.ndarray], atol: float, rtol: float, policy: str):
    single = exact = near = nan = 0
    for m in members:
        g = x[m].astype(np.float64)
        if policy == "omit":
            g = g[~np.isnan(g)]
        if len(g) < 2:
            single += 1
        elif np.isnan(g).any():
            nan += 1
        else:
            lo, hi = g.min(), g.max()
            exact += int(lo == hi)
            near += int(lo == hi or hi - lo <= atol + rtol * max(abs(lo), abs(hi)))
    return len(members), single, exact, near, nan


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float = 0.0) -> None:
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def layout_strategy():
    """Values with ties and NaN, and a layout: a contiguous G or unsorted (possibly sparse) ids."""

    @st.composite
    def build(draw):
        contiguous = draw(st.booleans())
        if contiguous:
            g = draw(st.sampled_from([1, 2, 3, 4, 8, 16, 5]))
            n = g * draw(st.integers(1, 12))
            ids = None
        else:
            n = draw(st.integers(1, 80))
            k = draw(st.integers(1, 10))
            scale = draw(st.sampled_from([1, -3, 1 << 40]))
            ids = np.array(draw(st.lists(st.integers(0, k), min_size=n, max_size=n))) * scale
            g = None
        pool = draw(st.sampled_from([[0.0, 1.0], [0.0, 0.5, 1.0, 2.0], [-1.5, 3.25, 1e-9, 0.0]]))
        vals = draw(st.lists(st.sampled_from([*pool, float("nan")]), min_size=n, max_size=n))
        noisy = draw(st.booleans())
        x = np.array(vals)
        if noisy:
            x = x + np.arange(n) * 1e-3
        return x, g, ids

    return build()


# --------------------------------------------------------------------------------------------
# grouped_moments


@SETTINGS
@given(case=layout_strategy(), dtype=st.sampled_from(DTYPES), policy=st.sampled_from(POLICIES),
       ddof=st.sampled_from([0, 1]))
def test_grouped_moments_matches_numpy(case, dtype, policy, ddof):
    x, g, ids = case
    x = x.astype(dtype)
    labels, members = groups_of(len(x), g, ids)
    want = oracle_moments(x, members, ddof, policy)
    with pytest.warns(AdvcoreWarning) if (want["count"] <= ddof).any() else _no_warning():
        m = grouped_moments(x, group_size=g, group_ids=ids, ddof=ddof, nan_policy=policy)
    np.testing.assert_array_equal(m.group, labels)
    np.testing.assert_array_equal(m.count, want["count"])
    assert m.mean.dtype == np.float64 and m.count.dtype == np.uint64
    assert_close(m.mean, want["mean"], rtol=1e-12, atol=1e-12)
    assert_close(m.var, want["var"], rtol=1e-9, atol=1e-12)
    assert_close(m.min, want["min"], rtol=0)
    assert_close(m.max, want["max"], rtol=0)
    z = m.zero_variance
    assert (z.n_groups, z.n_singleton, z.n_exact_zero, z.n_near_zero, z.n_nan) == oracle_census(
        x, members, 1e-8, 1e-5, policy
    )


class _no_warning:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous8", "contiguous7", "ids", "sparse_ids", "sorted_ids"])
def test_many_groups_unsorted(layout, dtype):
    """Tens of thousands of groups: the partitioned path of the id kernel (the streaming path
    for sorted ids), and NaN/inf groups recomputed exactly among them."""
    rng = np.random.default_rng(1)
    n_groups = 30_000
    if layout.startswith("contiguous"):
        g = int(layout[-1])
        ids = None
        x = rng.integers(0, 4, n_groups * g).astype(dtype) * 0.25
    else:
        g = None
        sizes = rng.integers(1, 9, n_groups)
        ids = rng.permutation(np.repeat(np.arange(n_groups), sizes))
        if layout == "sparse_ids":
            ids = ids * (1 << 40) - 17
        if layout == "sorted_ids":
            ids = np.sort(ids) * 3 - 5
        x = rng.integers(0, 4, len(ids)).astype(dtype) * 0.25
    x[rng.choice(len(x), 50, replace=False)] = np.nan
    x[rng.choice(len(x), 20, replace=False)] = np.inf
    x[rng.choice(len(x), 20, replace=False)] = -np.inf
    labels, members = groups_of(len(x), g, ids)
    for policy in POLICIES:
        with np.errstate(invalid="ignore"):  # numpy's own inf - inf in the oracle
            want = oracle_moments(x, members, 0, policy)
        m = grouped_moments(x, group_size=g, group_ids=ids, nan_policy=policy)
        np.testing.assert_array_equal(m.group, labels)
        np.testing.assert_array_equal(m.count, want["count"])
        assert_close(m.mean, want["mean"], rtol=1e-12, atol=1e-12)
        assert_close(m.var, want["var"], rtol=1e-9, atol=1e-12)
        assert_close(m.min, want["min"], rtol=0)
        assert_close(m.max, want["max"], rtol=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sorted_ids_match_random_order(dtype):
    """Sorted ids take the streaming path; the results equal, bit for bit, those of the same
    samples in random order (each group's samples in the same relative order)."""
    rng = np.random.default_rng(4)
    ids = rng.integers(0, 5_000, 40_000)
    x = (1e6 + rng.integers(0, 50, len(ids)) * 0.0625).astype(dtype)
    x[rng.choice(len(x), 30, replace=False)] = np.nan
    x[rng.choice(len(x), 10, replace=False)] = np.inf
    order = np.argsort(ids, kind="stable")
    for policy in ["propagate", "omit"]:
        want = grouped_moments(x, group_ids=ids, nan_policy=policy)
        got = grouped_moments(x[order], group_ids=ids[order], nan_policy=policy)
        for name in ["group", "count", "mean", "var", "min", "max"]:
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
        z, w = got.zero_variance, want.zero_variance
        assert (z.n_groups, z.n_singleton, z.n_exact_zero, z.n_near_zero, z.n_nan) == (
            w.n_groups, w.n_singleton, w.n_exact_zero, w.n_near_zero, w.n_nan
        )


@pytest.mark.parametrize("layout", ["contiguous", "ids"])
def test_huge_offset_no_cancellation(layout):
    rng = np.random.default_rng(2)
    n = 64_000
    x = 1e6 + rng.standard_normal(n) * 1e-3
    g = 8 if layout == "contiguous" else None
    ids = rng.integers(0, n // 8, n) if layout == "ids" else None
    labels, members = groups_of(n, g, ids)
    with pytest.warns(AdvcoreWarning) if layout == "ids" else _no_warning():
        m = grouped_moments(x, group_size=g, group_ids=ids, ddof=1)
    # Oracle on exactly shifted data: x - 1e6 is exact in float64 for these values.
    want = oracle_moments(x - 1e6, members, 1, "propagate")
    assert_close(m.var, want["var"], rtol=1e-9)
    assert_close(m.mean - 1e6, want["mean"], rtol=0, atol=2e-10)
    d = variance_decomposition(x, group_size=g, group_ids=ids)
    assert d.total == pytest.approx(np.var(x - 1e6), rel=1e-9)
    within = sum(len(mm) * np.var(x[mm] - 1e6) for mm in members) / n
    assert d.within == pytest.approx(within, rel=1e-9)


def test_float32_huge_offset():
    rng = np.random.default_rng(3)
    x = (1e6 + rng.integers(0, 50, 8000) * 0.0625).astype(np.float32)  # exact in float32
    m = grouped_moments(x, group_size=8)
    want = x.astype(np.float64).reshape(-1, 8).var(axis=1)
    assert_close(m.var, want, rtol=1e-9, atol=1e-15)


def test_length_one_and_singletons():
    m = grouped_moments(np.array([2.5], np.float32), group_size=1)
    assert (m.count.tolist(), m.mean.tolist(), m.var.tolist()) == ([1], [2.5], [0.0])
    with pytest.warns(AdvcoreWarning):
        m = grouped_moments([1.0, 2.0, 3.0], group_ids=[5, 9, 5], ddof=1)
    assert m.var[1] != m.var[1]  # NaN for the singleton
    assert m.zero_variance.n_singleton == 1


def test_polars_and_no_copy():
    rng = np.random.default_rng(4)
    x = rng.standard_normal(1 << 20).astype(np.float32)
    ids = rng.integers(0, 1000, x.size)
    want = grouped_moments(x, group_ids=ids)
    got = grouped_moments(pl.Series(x), group_ids=pl.Series(ids))
    np.testing.assert_array_equal(got.var, want.var)
    for kwargs in ({"group_size": 8}, {"group_ids": ids}):
        grouped_moments(x, **kwargs)  # warm up
        tracemalloc.start()
        try:
            m = grouped_moments(x, **kwargs)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # numpy reports its buffers to tracemalloc: the result columns (allocated by numpy and
        # written in place by the kernel) and the group labels show here, and so would a copy
        # of the 4 MiB input.
        outputs = m.count.shape[0] * 8 * 6
        assert peak < outputs + x.nbytes // 2, (peak, outputs)


def test_nan_raise_and_bad_arguments():
    x = np.array([1.0, np.nan, 2.0, 3.0])
    with pytest.raises(AdvcoreError, match="values.*index 1"):
        grouped_moments(x, group_size=2, nan_policy="raise")
    with pytest.raises(AdvcoreError, match="group_ids"):
        grouped_moments(x, group_ids=[1, 2, 3])
    with pytest.raises(AdvcoreError, match="group_size"):
        grouped_moments(x, group_size=3)
    with pytest.raises(AdvcoreError, match="exactly one"):
        grouped_moments(x, group_size=2, group_ids=[0, 0, 1, 1])
    with pytest.raises(AdvcoreError, match="values"):
        grouped_moments(np.array([], np.float32), group_size=1)
    with pytest.raises(AdvcoreError, match="nan_policy"):
        zero_variance_fraction(x, group_size=2, nan_policy="ignore")
    with pytest.raises(AdvcoreError, match="atol"):
        zero_variance_fraction(x, group_size=2, atol=-1.0)
    with pytest.raises(AdvcoreError, match="rtol"):
        grouped_moments(x, group_size=2, rtol=float("nan"))


# --------------------------------------------------------------------------------------------
# zero_variance_fraction


@SETTINGS
@given(case=layout_strategy(), dtype=st.sampled_from(DTYPES), policy=st.sampled_from(POLICIES),
       atol=st.sampled_from([0.0, 1e-8, 1e-3]), rtol=st.sampled_from([0.0, 1e-5]))
def test_zero_variance_fraction_matches_loop(case, dtype, policy, atol, rtol):
    x, g, ids = case
    x = x.astype(dtype)
    _, members = groups_of(len(x), g, ids)
    n_groups, single, exact, near, nan = oracle_census(x, members, atol, rtol, policy)
    all_single = n_groups == single
    with pytest.warns(AdvcoreWarning) if all_single else _no_warning():
        z = zero_variance_fraction(x, group_size=g, group_ids=ids, atol=atol, rtol=rtol,
                                   nan_policy=policy)
    assert (z.n_groups, z.n_singleton, z.n_exact_zero, z.n_near_zero, z.n_nan) == (
        n_groups, single, exact, near, nan)
    if all_single or nan:
        assert np.isnan(z.exact_frac) and np.isnan(z.near_frac)
    else:
        assert z.exact_frac == exact / (n_groups - single)
        assert z.near_frac == near / (n_groups - single)


def test_zero_variance_trl_example_and_isclose():
    # Four prompts, G = 4: two prompts where every completion got the same reward.
    rewards = np.array([1, 1, 1, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0.5, 0.5, 0.5, 0.5 + 1e-7])
    z = zero_variance_fraction(rewards, group_size=4)
    std = rewards.reshape(-1, 4).std(axis=1)
    assert z.exact_frac == np.mean(std == 0) == 0.5
    assert z.near_frac == np.mean(np.isclose(rewards.reshape(-1, 4).max(1),
                                                 rewards.reshape(-1, 4).min(1))) == 0.75


def test_zero_variance_all_singletons_warns():
    with pytest.warns(AdvcoreWarning, match="fewer than two"):
        z = zero_variance_fraction(np.arange(5.0), group_size=1)
    assert z.n_singleton == 5 and np.isnan(z.exact_frac)


# --------------------------------------------------------------------------------------------
# variance_decomposition


def oracle_decomposition(x: np.ndarray, members: list[np.ndarray], policy: str):
    gs = [x[m].astype(np.float64) for m in members]
    if policy == "omit":
        gs = [g[~np.isnan(g)] for g in gs]
    allx = np.concatenate(gs)
    n, mean = len(allx), np.mean(allx)
    within = sum(len(g) * np.var(g) for g in gs if len(g)) / n
    between = sum(len(g) * (np.mean(g) - mean) ** 2 for g in gs if len(g)) / n
    return np.var(allx), within, between


@SETTINGS
@given(case=layout_strategy(), dtype=st.sampled_from(DTYPES), policy=st.sampled_from(POLICIES))
def test_variance_decomposition_matches_numpy(case, dtype, policy):
    x, g, ids = case
    x = x.astype(dtype)
    _, members = groups_of(len(x), g, ids)
    if policy == "omit" and np.isnan(x).all():
        with pytest.raises(AdvcoreError, match="values"):
            variance_decomposition(x, group_size=g, group_ids=ids, nan_policy=policy)
        return
    total, within, between = oracle_decomposition(x, members, policy)
    with pytest.warns(AdvcoreWarning) if total == 0 else _no_warning():
        d = variance_decomposition(x, group_size=g, group_ids=ids, nan_policy=policy)
    if np.isnan(total):
        assert np.isnan(d.total)
        return
    scale = 1e-12 * (1 + total)
    assert d.total == pytest.approx(total, rel=1e-9, abs=scale)
    assert d.within == pytest.approx(within, rel=1e-9, abs=scale)
    assert d.between == pytest.approx(between, rel=1e-9, abs=scale)
    assert d.total == d.within + d.between
    assert d.n_groups == len(members)
    if total > 0:
        assert d.within_frac == pytest.approx(within / total, rel=1e-9, abs=1e-12)


def test_variance_decomposition_constant_warns():
    with pytest.warns(AdvcoreWarning, match="zero variance"):
        d = variance_decomposition(np.ones(6, np.float32), group_size=3)
    assert d.total == 0 and np.isnan(d.within_frac)


# --------------------------------------------------------------------------------------------
# explained_variance


def oracle_ev(r: np.ndarray, v: np.ndarray, policy: str) -> float:
    r, v = r.astype(np.float64), v.astype(np.float64)
    if policy == "omit":
        keep = ~(np.isnan(r) | np.isnan(v))
        r, v = r[keep], v[keep]
    if len(r) == 0 or np.var(r) == 0:
        return np.nan
    return 1 - np.var(r - v) / np.var(r)


@SETTINGS
@given(case=layout_strategy(), dtype=st.sampled_from(DTYPES), policy=st.sampled_from(POLICIES),
       seed=st.integers(0, 2**16))
def test_explained_variance_matches_numpy(case, dtype, policy, seed):
    r, g, ids = case
    rng = np.random.default_rng(seed)
    r = r.astype(dtype)
    v = (np.nan_to_num(r) + rng.standard_normal(len(r))).astype(dtype)
    v[rng.random(len(r)) < 0.05] = np.nan
    labels, members = groups_of(len(r), g, ids)
    want_overall = oracle_ev(r, v, policy)
    want = np.array([oracle_ev(r[m], v[m], policy) for m in members])

    def undefined(rr, vv):
        rr, vv = rr.astype(np.float64), vv.astype(np.float64)
        if policy == "omit":
            rr = rr[~(np.isnan(rr) | np.isnan(vv))]
        return len(rr) == 0 or np.var(rr) == 0

    expect_warning = undefined(r, v) or any(undefined(r[m], v[m]) for m in members)
    with pytest.warns(AdvcoreWarning) if expect_warning else _no_warning():
        ev = explained_variance(r, v, group_size=g, group_ids=ids, nan_policy=policy)
    assert_close(np.array([ev.overall]), np.array([want_overall]), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(ev.group, labels)
    assert_close(ev.per_group, want, rtol=1e-9, atol=1e-9)


def test_explained_variance_overall_only_and_errors():
    r = np.array([1.0, 2.0, 3.0, 5.0], np.float32)
    v = np.array([1.5, 2.0, 2.5, 4.0], np.float64)  # mixed dtypes compute in float64
    ev = explained_variance(r, v)
    assert ev.per_group is None and ev.group is None
    assert ev.overall == pytest.approx(1 - np.var(r - v) / np.var(r), rel=1e-12)
    with pytest.raises(AdvcoreError, match="`values` has length 3"):
        explained_variance(r, v[:3])
    with pytest.raises(AdvcoreError, match="returns.*index 1"):
        explained_variance(np.array([1.0, np.nan]), np.array([1.0, 2.0]), nan_policy="raise")
    with pytest.warns(AdvcoreWarning, match="Var\\(returns\\)"):
        ev = explained_variance(np.ones(4), np.arange(4.0))
    assert np.isnan(ev.overall)
