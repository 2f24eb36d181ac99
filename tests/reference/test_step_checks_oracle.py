"""``step_checks``, ``compare`` and ``step_row`` give exactly what they gave before their speed-ups.

The oracle is a frozen copy of the former ``advcore.reference`` (``_oracle_reference.py``);
every value must be equal bit for bit (NaN where the oracle has NaN), and ``compare`` must try
the same presets in the same order.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest
from advcore import reference
from advcore.errors import AdvcoreError
from advcore.trace import _canonical, _trace, step_row

from . import _oracle_reference as oracle


def _same(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a)


def _rewards(rng: np.random.Generator, kind: int, n: int) -> np.ndarray[Any, Any]:
    if kind == 0:
        return (rng.random(n) < 0.4).astype(np.float32)
    if kind == 1:
        return rng.normal(size=n)
    if kind == 2:
        return rng.choice([-1.0, 0.0, 1.0, 0.5], size=n)  # imputed-zero candidates
    if kind == 3:
        r = rng.normal(size=n).astype(np.float32)
        r[rng.random(n) < 0.1] = np.nan
        return r
    if kind == 4:
        return rng.integers(0, 3, n).astype(np.float64)
    if kind == 5:  # rounding-noise groups
        return (1.0 + 1e-7 * rng.integers(0, 2, n)).astype(np.float64)
    # bfloat16-rounded continuous rewards
    bits = rng.normal(size=n).astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32)


CASES = [(seed, kind) for seed in range(6) for kind in range(7)]


@pytest.mark.parametrize(("seed", "kind"), CASES)
def test_step_checks_and_compare_unchanged(seed: int, kind: int) -> None:
    rng = np.random.default_rng(1000 * seed + kind)
    n = int(rng.integers(2, 400))
    size = int(rng.integers(1, 9))
    groups: Any = np.arange(n) // size if seed % 3 else rng.integers(0, max(1, n // size), n)
    if seed == 5:
        groups = groups.astype(str)
    r = _rewards(rng, kind, n)
    names = list(oracle.PRESETS)
    ref = oracle.PRESETS[names[(seed * 7 + kind) % len(names)]].fn(oracle._Groups(r, groups))
    candidates = [None, ref, ref.astype(np.float32), np.nan_to_num(ref), rng.normal(size=n), 1.3 * ref + 0.1]
    for adv in candidates:
        assert _same(reference.step_checks(r, groups, adv), oracle.step_checks(r, groups, adv))
        if adv is None:
            continue
        try:
            want = oracle.compare(adv, r, groups)
        except AdvcoreError:
            with pytest.raises(AdvcoreError):
                reference.compare(adv, r, groups)
            continue
        got = reference.compare(adv, r, groups)
        assert (got.best, got.err_units, got.max_abs_err, got.mean_abs_err) == (
            want.best, want.err_units, want.max_abs_err, want.mean_abs_err)
        assert list(got.errors.items()) == list(want.errors.items())


def test_step_row_is_the_trace_and_the_oracle_checks() -> None:
    rng = np.random.default_rng(7)
    n = 16384
    r = (rng.random(n) < 0.4).astype(np.float32)
    groups = np.arange(n) // 16
    adv = oracle.grpo(r, groups).astype(np.float32)
    for kwargs in ({"group_ids": groups}, {"group_size": 16}):
        frame, row = step_row(3, rewards=r, adv=adv, **kwargs)
        want_frame, cell = _trace(3, r, adv=adv, **kwargs)
        checks = oracle.step_checks(r, groups, adv)
        want = {**{k: v for k, v in checks.items() if not math.isnan(v)}, **_canonical(cell)}
        assert row == want and list(row) == list(want)
        assert frame.equals(want_frame)


def test_step_row_reports_the_trace_error_first() -> None:
    r = np.array([1.0, 0.0, 1.0, 0.0])
    # Both the trace and the checks reject a short `adv`; the trace's message names its keyword.
    with pytest.raises(AdvcoreError, match="`adv` has length 3 but `rewards` has length 4"):
        step_row(0, rewards=r, group_ids=[0, 0, 1, 1], adv=np.zeros(3))
    with pytest.raises(AdvcoreError, match="at most one of `group_ids` and `group_size`"):
        step_row(0, rewards=r, group_ids=[0, 0, 1, 1], group_size=2)
    with pytest.raises(AdvcoreError, match="`group_size`"):
        step_row(0, rewards=r, group_size=0)


def test_step_row_without_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """At interpreter shutdown no thread can be started: the checks then run in turn, same row."""
    import advcore.trace as trace_module

    class Closed:
        def submit(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    r = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    adv = oracle.grpo(r, np.arange(6) // 3)
    want = step_row(1, rewards=r, group_size=3, adv=adv)
    monkeypatch.setattr(trace_module, "_worker", lambda: Closed())
    frame, row = step_row(1, rewards=r, group_size=3, adv=adv)
    assert row == want[1] and frame.equals(want[0])
    assert row["adv_recompute_err"] == oracle.step_checks(r, np.arange(6) // 3, adv)["adv_recompute_err"]


def _row_in_child(queue: Any) -> None:
    r = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    queue.put(step_row(1, rewards=r, group_size=3, adv=oracle.grpo(r, np.arange(6) // 3))[1])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_step_row_in_a_forked_child() -> None:
    """A child forked after the worker thread started (a data-loader worker) gets its own worker
    instead of waiting forever on the parent's, which does not run in the child."""
    import multiprocessing

    r = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    want = step_row(1, rewards=r, group_size=3, adv=oracle.grpo(r, np.arange(6) // 3))[1]
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_row_in_child, args=(queue,))
    child.start()
    got = queue.get(timeout=60)
    child.join(60)
    assert got == want and child.exitcode == 0
