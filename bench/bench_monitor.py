"""The in-trainer monitor's added time per step (``advcore.Monitor.observe``).

Data as in ``bench_trace``: float32 GRPO rewards in contiguous groups of G = 16 and the advantages
(r - group mean) / (group std + 1e-4), TRL's formula. Cases, at every size up to 1,048,576:

* ``observe (per-sample path)``: one step's trace, canonical metrics and reference checks
  (``advcore.trace.step_row``) and the flat ``advcore/...`` metrics, with the detectors not run
  (``detect_every=0``): what every step pays.
* ``observe + detector pass``: the same on a monitor with 60 steps of history, running every
  registered detector on the per-step frame (``detect_every=1``, the default). This part does not
  depend on the batch size; ``detect_every=k`` divides it by k.
* ``observe, torch CPU tensors`` (when torch is importable): the per-sample path on float32 CPU
  tensors (read through DLPack, no copy).

The competitor is reading the two arrays once (``sum``), the floor of any pass over the samples.
:func:`at_length` prints the cost of a step with its detector pass, and the resident memory, once
the run is 10, 1,000, 10,000 and 100,000 steps long (the detectors' history is bounded: see
:class:`advcore.trace.Recording`).
``python bench/bench_monitor.py`` prints the per-step times for 16,384 and 1,048,576 samples
directly; the TRL step it rides on is measured in tests/integrations/test_trl_real.py (see
bench/README.md).
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from typing import Any

import numpy as np

import advcore
from _harness import Case, median_time

G = 16


def _batch(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    p = np.repeat(rng.random(n // G) ** 2, G)
    reward = ((rng.random(n) < p) + np.round(rng.random(n), 2) * 0.05 * np.repeat(rng.random(n // G) < 0.5, G))
    reward = reward.astype(np.float32)
    g = reward.reshape(-1, G).astype(np.float64)
    adv = (reward - np.repeat(g.mean(1), G)) / (np.repeat(g.std(1, ddof=1), G) + 1e-4)
    return reward, adv.astype(np.float32)


_QUIET = logging.getLogger("advcore.bench")
_QUIET.disabled = True   # the same batch every step: the findings it raises are not the point here


def _monitor(history: int, every: int, reward: np.ndarray, adv: np.ndarray) -> tuple[advcore.Monitor, Any]:
    mon = advcore.Monitor(detect_every=every, min_steps=1, logger=_QUIET)
    for step in range(1, history + 1):
        mon.observe(step, rewards=reward, group_size=G, advantages=adv)
    return mon, itertools.count(history + 1)


def _check(ours: Any, theirs: Any) -> None:
    """``ours`` is the flat metrics dict; the competitor's value is the pair of sums."""
    assert ours["advcore/errors"] == 0, ours


def cases(n: int, rng: np.random.Generator) -> list[Case]:
    if n > 1_048_576:
        return []
    n -= n % G
    reward, adv = _batch(n, rng)
    tied = float(np.mean(np.ptp(reward.reshape(-1, G), axis=1) == 0))

    def read_once() -> float:
        return float(reward.sum()) + float(adv.sum())

    def check(ours: Any, theirs: Any) -> None:
        _check(ours, theirs)
        np.testing.assert_allclose(ours["advcore/zero_variance_group_frac"], tied, rtol=0, atol=1e-12)

    plain, steps = _monitor(1, 0, reward, adv)
    detecting, dsteps = _monitor(60, 1, reward, adv)
    out = [
        Case(f"monitor observe (per-sample path), G={G}",
             lambda: plain.observe(next(steps), rewards=reward, group_size=G, advantages=adv),
             {"read once (sum)": read_once}, check),
        Case(f"monitor observe + detector pass (60 steps of history), G={G}",
             lambda: detecting.observe(next(dsteps), rewards=reward, group_size=G, advantages=adv),
             {"read once (sum)": read_once}, check),
    ]
    try:
        import torch
    except ImportError:
        return out
    t_reward, t_adv = torch.from_numpy(reward.copy()), torch.from_numpy(adv.copy())
    tmon, tsteps = _monitor(1, 0, reward, adv)
    out.append(Case(f"monitor observe, torch CPU tensors (per-sample path), G={G}",
                    lambda: tmon.observe(next(tsteps), rewards=t_reward, group_size=G, advantages=t_adv),
                    {"read once (sum)": read_once}, check))
    return out


def _rss_mb() -> float:
    """The resident memory of this process (Linux /proc), MB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def at_length(points: tuple[int, ...] = (10, 1_000, 10_000, 100_000), n: int = 16_384, probe: int = 21) -> None:
    """Per-step cost once the run is ``points`` steps long, for a per-sample step of ``n`` samples and a
    metrics-only step, on a default ``Monitor()``: ``probe`` steps as it schedules its passes (a pass
    once a step has passed and the wall time since the last is 20 times its duration, the default
    ``detect_budget=0.05``: median, p99 and mean, the mean carrying the passes' share), then ``probe``
    steps each with a detector pass forced (the worst case, a pass every step: median and p99); and
    the resident memory there. The history in between is filled by the same monitor (not timed)."""
    reward, adv = _batch(n - n % G, np.random.default_rng(0))
    metrics = {"grad_norm": 0.5, "entropy": 1.2, "kl": 0.01, "reward_mean": 0.4, "reward_std": 0.3}
    for kind in ("per-sample", "metrics-only"):
        mon = advcore.Monitor(logger=_QUIET, alert_trackers=False)
        step = 0

        def observe() -> None:
            nonlocal step
            step += 1
            if kind == "per-sample":
                mon.observe(step, rewards=reward, group_size=G, advantages=adv)
            else:
                mon.observe(step, metrics=metrics)

        for point in points:
            k = min(probe, point)
            while step < point - k:
                observe()
            scheduled, forced = [], []
            for _ in range(k):
                t = time.perf_counter()
                observe()
                scheduled.append(time.perf_counter() - t)
            for _ in range(k):
                t = time.perf_counter()
                observe()
                mon.detect()
                forced.append(time.perf_counter() - t)
            print(f"{kind:>12} | step {step:>7,} | default: median {np.median(scheduled) * 1e3:7.3f} ms, "
                  f"p99 {np.quantile(scheduled, 0.99) * 1e3:7.2f} ms, mean {np.mean(scheduled) * 1e3:7.3f} ms | "
                  f"a pass every step: median {np.median(forced) * 1e3:6.2f} ms, p99 "
                  f"{np.quantile(forced, 0.99) * 1e3:6.2f} ms | rss {_rss_mb():6.0f} MB", flush=True)


def watch_overhead(steps: int = 60) -> None:
    """The cost of ``Monitor.watch`` on a 10M-parameter model (Adam, clip at 1.0, CPU): the time of
    ``optimizer.step()`` alone, without the probe and with it measuring that step (``every=1``),
    alternated step by step; the cost per step at the default ``every`` is that over 16."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(1000, 1000) for _ in range(10)])   # 10.0M parameters
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.randn(8, 1000)
    mon = advcore.Monitor(logger=_QUIET, alert_trackers=False)
    plain: list[float] = []
    watched: list[float] = []
    whole: list[float] = []
    for i in range(steps + 5):
        t0 = time.perf_counter()
        opt.zero_grad()
        model(x).square().mean().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        probe = mon.watch(opt, every=1) if i % 2 else None
        t = time.perf_counter()
        opt.step()
        t1 = time.perf_counter()
        if probe is not None:
            probe.remove()
        if i >= 5:
            (watched if probe is not None else plain).append(t1 - t)
            if probe is None:
                whole.append(t1 - t0)
    p, w, s = float(np.median(plain)), float(np.median(watched)), float(np.median(whole))
    print(f"10.0M parameters, Adam, CPU: training step {s * 1e3:.1f} ms, optimizer.step {p * 1e3:.1f} ms, with a "
          f"measured step {w * 1e3:.1f} ms: the probe costs {(w - p) * 1e3:.2f} ms per measured step, "
          f"{100 * (w - p) / 16 / p:.1f} % of the optimizer step and {100 * (w - p) / 16 / s:.1f} % of the training "
          f"step at every=16", flush=True)


def main() -> None:
    for n in (16_384, 1_048_576):
        for case in cases(n, np.random.default_rng(0)):
            case.check(case.advcore(), None)
            t = median_time(case.advcore, 15 if n < 100_000 else 5)
            print(f"{n:>9,} samples | {case.name}: {t * 1e3:.2f} ms", flush=True)
    at_length()


if __name__ == "__main__":
    main()
