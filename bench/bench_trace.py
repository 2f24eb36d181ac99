"""The per-sample stage trace (``advcore.trace.trace_step``) against the equivalent numpy/scipy code
and against reading the arrays once.

Data as in GRPO: float32 rewards, groups of G = 16 contiguous completions, each prompt with its own
success rate, 0/1 rewards plus a small shaping term on half the prompts. Stages: ``reward``,
``baseline`` (group mean), ``adv_raw`` (reward - baseline), ``adv`` (divided by the group std +
1e-4, as TRL/verl GRPO), ``adv_clipped`` (clipped to [-2, 2]).

Cases: the typical GRPO step (reward + adv, two stages) and all five stages, at every size up to
1,000,000 (at 1e7 the scipy side alone takes minutes; no case there). Competitors:

* ``numpy/scipy``: per stage ``np.mean``, ``np.std``, ``np.nanquantile`` (7 probabilities),
  ``scipy.stats.median_abs_deviation``, ``scipy.stats.iqr``, ``scipy.stats.spearmanr`` with the
  reward, ``np.unique``, zero/sign fractions, the tied-group share and the mean within-group std
  by ``reshape(-1, 16)``, and the change from the previous stage. It computes less than the trace
  (no within-group Spearman: scipy per group would take ~10 s per 1M samples).
* ``read once``: ``arr.sum()`` of every stage array: the floor of any full pass.

advcore's time is ``trace_step``: the Rust call *and* the long Polars frame. The trace runs its
(stage, slice) cells on up to two threads (``TraceOptions::threads``); the ``1 thread`` case calls
``advcore._core.trace(..., threads=1)`` directly (the array only, no frame).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.stats

from advcore import _core
from advcore.trace import trace_step
from _harness import Case

G = 16
QS = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
CHECKED = ("mean", "std", "mad", "iqr", "q01", "q50", "q99", "n_unique", "zero_frac", "pos_frac",
           "spearman_reward", "zero_variance_group_frac", "std_within", "changed_frac", "mean_abs_change")


def _stages(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    p = np.repeat(rng.random(n // G) ** 2, G)
    shaped = np.repeat(rng.random(n // G) < 0.5, G)
    reward = ((rng.random(n) < p) + np.where(shaped, np.round(rng.random(n), 2) * 0.1, 0.0)).astype(np.float32)
    g = reward.reshape(-1, G)
    baseline = np.repeat(g.mean(1), G).astype(np.float32)
    adv_raw = (reward - baseline).astype(np.float32)
    adv = (adv_raw / np.repeat(g.std(1) + 1e-4, G)).astype(np.float32)
    return {"rewards": reward, "baseline": baseline, "adv_raw": adv_raw, "adv": adv,
            "adv_clipped": np.clip(adv, -2, 2).astype(np.float32)}


def _numpy_scipy(stages: dict[str, np.ndarray]) -> dict[tuple[str, str], float]:
    names = {"rewards": "reward"}
    reward = stages["rewards"]
    out: dict[tuple[str, str], float] = {}
    prev: np.ndarray | None = None
    for kw, x in stages.items():
        s = names.get(kw, kw)
        q = np.quantile(x, QS)
        a = x.reshape(-1, G)
        spread = a.max(1) - a.min(1)
        lo, hi = np.abs(a.min(1)), np.abs(a.max(1))
        out.update({
            (s, "mean"): float(np.mean(x, dtype=np.float64)),
            (s, "std"): float(np.std(x, dtype=np.float64)),
            (s, "mad"): float(scipy.stats.median_abs_deviation(x)),
            (s, "iqr"): float(scipy.stats.iqr(x)),
            (s, "q01"): float(q[0]), (s, "q50"): float(q[3]), (s, "q99"): float(q[6]),
            (s, "n_unique"): float(np.unique(x).size),
            (s, "zero_frac"): float(np.mean(x == 0)),
            (s, "pos_frac"): float(np.mean(x > 0)),
            (s, "spearman_reward"): float(scipy.stats.spearmanr(x, reward).statistic),
            (s, "zero_variance_group_frac"): float(np.mean(spread <= 1e-8 + 1e-5 * np.maximum(lo, hi))),
            (s, "std_within"): float(a.astype(np.float64).std(1, ddof=1).mean()),
        })
        if prev is not None:
            d = np.abs(x.astype(np.float64) - prev)
            out[(s, "changed_frac")] = float(np.mean(d > 0))
            out[(s, "mean_abs_change")] = float(d.mean())
        prev = x.astype(np.float64)
    return out


def _read_once(stages: dict[str, np.ndarray]) -> float:
    return float(sum(float(x.sum()) for x in stages.values()))


def _check(ours: Any, theirs: Any) -> None:
    if not isinstance(theirs, dict):  # the read-once floor computes nothing to compare
        return
    got = {(st, name): v for st, _, name, v in ours.filter(slice="all").select(
        "stage", "slice", "statistic", "value").iter_rows()}
    for key, want in theirs.items():
        if key[1] in CHECKED and key in got:
            np.testing.assert_allclose(got[key], want, rtol=2e-5, atol=1e-6, err_msg=str(key))


def cases(n: int, rng: np.random.Generator) -> list[Case]:
    if n > 1_000_000:
        return []
    n -= n % G
    full = _stages(n, rng)
    typical = {"rewards": full["rewards"], "adv": full["adv"]}
    out = []
    for label, stages in (("reward + adv", typical), ("5 stages", full)):
        arrays = list(stages.values())

        def ours(stages: dict[str, np.ndarray] = stages) -> Any:
            return trace_step(0, group_size=G, **stages)

        def serial(arrays: list[np.ndarray] = arrays) -> Any:
            return _core.trace(arrays, arrays[0], G, None, [], [], 1e-8, 1e-8, 1e-5, 0.0, 1)

        out.append(Case(
            f"trace {label}, G={G} (trace_step, frame included)",
            ours,
            {"numpy/scipy": lambda stages=stages: _numpy_scipy(stages),
             "read once (sum)": lambda stages=stages: _read_once(stages)},
            _check,
        ))
        out.append(Case(
            f"trace {label}, G={G} (_core.trace, 1 thread)",
            serial,
            {"read once (sum)": lambda stages=stages: _read_once(stages)},
            lambda ours, theirs: None,
        ))
    return out
