"""``step_row`` runs the reference checks on a worker thread while the Rust trace runs: its row is
exactly the trace's canonical metrics plus ``step_checks`` run in turn, the trace's errors come
first, and it works without a thread (interpreter shutdown) and in a forked child."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest
from advcore import reference
from advcore.errors import AdvcoreError
from advcore.trace import _canonical, _trace, step_row


def test_step_row_is_the_trace_and_the_checks() -> None:
    rng = np.random.default_rng(7)
    n = 16384
    r = (rng.random(n) < 0.4).astype(np.float32)
    groups = np.arange(n) // 16
    adv = reference.grpo(r, groups).astype(np.float32)
    for kwargs in ({"group_ids": groups}, {"group_size": 16}):
        frame, row = step_row(3, rewards=r, adv=adv, **kwargs)
        want_frame, cell = _trace(3, r, adv=adv, **kwargs)
        checks = reference.step_checks(r, groups, adv)
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
    adv = reference.grpo(r, np.arange(6) // 3)
    want = step_row(1, rewards=r, group_size=3, adv=adv)
    monkeypatch.setattr(trace_module, "_worker", lambda: Closed())
    frame, row = step_row(1, rewards=r, group_size=3, adv=adv)
    assert row == want[1] and frame.equals(want[0])
    assert row["adv_recompute_err"] == reference.step_checks(r, np.arange(6) // 3, adv)["adv_recompute_err"]


def _row_in_child(queue: Any) -> None:
    r = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    queue.put(step_row(1, rewards=r, group_size=3, adv=reference.grpo(r, np.arange(6) // 3))[1])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_step_row_in_a_forked_child() -> None:
    """A child forked after the worker thread started (a data-loader worker) gets its own worker
    instead of waiting forever on the parent's, which does not run in the child."""
    import multiprocessing

    r = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    want = step_row(1, rewards=r, group_size=3, adv=reference.grpo(r, np.arange(6) // 3))[1]
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_row_in_child, args=(queue,))
    child.start()
    got = queue.get(timeout=60)
    child.join(60)
    assert got == want and child.exitcode == 0
