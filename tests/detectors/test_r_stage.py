"""The R-stage detectors REWARD_SATURATION, REWARD_FLOOR, COMPONENT_COLLAPSE and TRUNCATION_REWARD:
synthetic firing and quiet fixtures with hand-computed onsets, agreement with the verdict's
reward regime, the registry and cards, and checks on real logs against numbers read from the raw
files (not from our own ingest)."""

from __future__ import annotations

import ast
import csv
import json
import math
import re
import statistics
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from advcore.detectors import Finding, NotEvaluable
from advcore.diagnose import reward_regime
from advcore.ingest import Run, load, load_aliases
from tests._real import REAL, corpus, events, real
from tests.detectors._fixtures import fired as fired_by
from tests.detectors._fixtures import make_run, one

ROOT = Path(__file__).resolve().parents[2]
R_STAGE = ("REWARD_SATURATION", "REWARD_FLOOR", "COMPONENT_COLLAPSE", "TRUNCATION_REWARD")


RNG = np.random.default_rng(7)


# --- REWARD_SATURATION / REWARD_FLOOR -----------------------------------------------------------

def saturating(n: int = 100, reach: int = 60) -> Run:
    """0/1 reward whose success rate climbs linearly to 1.0 at step ``reach`` and stays there;
    the std of a Bernoulli(p) batch is sqrt(p (1 - p))."""
    p = [min(1.0, 0.2 + 0.8 * i / (reach - 1)) for i in range(n)]
    return make_run({"reward_mean": p, "reward_std": [math.sqrt(q * (1 - q)) for q in p],
                     "reward_max": [1.0] * n, "reward_min": [0.0 if q < 1 else 1.0 for q in p]})


def test_saturation_fires_at_the_ceiling_with_onset_where_the_mean_arrives() -> None:
    run = saturating()
    f = one(run, "REWARD_SATURATION")
    assert isinstance(f, Finding) and f.severity == "warn" and f.stage == "R"
    # span 1.0, tolerance 0.02: p >= 0.98 first at i with 0.2 + 0.8 i / 59 >= 0.98 -> i = 58 (step 59)
    first = next(i for i in range(100) if 0.2 + 0.8 * i / 59 >= 0.98)
    assert f.onset_step == first + 1 == 59
    assert f.evidence["ceiling"] == 1.0 and f.evidence["ceiling_from"] == "reward_max"
    assert f.evidence["spread_late"] == 0.0
    assert reward_regime(run) == "saturation"
    assert one(run, "REWARD_FLOOR") is None
    json.dumps(f.to_json())


def test_saturation_quiet_on_a_plateau_that_keeps_its_spread() -> None:
    # the mean settles at 0.6 (its own maximum, no reward_max logged) but samples still differ:
    # a learned plateau, not an exhausted task
    n = 100
    p = [0.2 + 0.4 * min(1.0, i / 50) for i in range(n)]
    run = make_run({"reward_mean": p, "reward_std": [math.sqrt(q * (1 - q)) for q in p]})
    assert reward_regime(run) is None
    assert one(run, "REWARD_SATURATION") is None and one(run, "REWARD_FLOOR") is None
    # the same plateau with a bit-identical mean and no spread metric at all counts as no spread
    flat = make_run({"reward_mean": p})
    assert reward_regime(flat) == "saturation"
    assert isinstance(one(flat, "REWARD_SATURATION"), Finding)


def test_saturation_with_rare_dips_when_the_logged_spread_is_gone() -> None:
    # CS285 homework 4 format-copy task: at exactly 1.3 on most late steps, 1.27 on a few
    path = corpus("h26-cs285-hw4-grpo-format-copy-saturates/metrics.jsonl")
    key = "rollout/mean_total_reward_across_all_completions_in_batch_and_groups"
    rows = [r for r in map(json.loads, path.read_text().splitlines()) if key in r["metrics"]]
    first = min(r["step"] for r in rows if r["metrics"][key] == pytest.approx(1.3))
    f = one(load(path), "REWARD_SATURATION")
    assert isinstance(f, Finding) and f.onset_step == first
    # without a spread metric the dips still count as movement
    n = 50
    dipping = [0.1] * 10 + [1.3 if i % 4 else 1.27 for i in range(n - 10)]
    assert one(make_run({"reward_mean": dipping}), "REWARD_SATURATION") is None
    gone = one(make_run({"reward_mean": dipping, "reward_std": [0.4] * 10 + [0.0 if i % 4 else 0.18 for i in range(n - 10)]}),
               "REWARD_SATURATION")
    assert isinstance(gone, Finding)



def test_real_mlagents_cumulative_reward_at_its_ceiling_is_a_solved_task() -> None:
    """h251-mlagents-ppo-rollercube-run2-solves-in-30k-and-holds: ML-Agents' ``Environment/Cumulative
    Reward`` (each episode's return, 1 when the cube reaches its target) is within 2 % of 1 from step 30,000
    and exactly 1.0 from 190,000: the environment is solved, an outcome (info), not a lost signal."""
    path = corpus("h251-mlagents-ppo-rollercube-run2-solves-in-30k-and-holds/"
                  "events.out.tfevents.1739995113.Nathans_Desktop.21168.0")
    scalars = events(path).Scalars("Environment/Cumulative Reward")
    first = next(e.step for i, e in enumerate(scalars) if all(x.value >= 0.98 for x in scalars[i:]))
    assert first == 30000
    assert next(e.step for i, e in enumerate(scalars) if all(x.value == 1.0 for x in scalars[i:])) == 190000
    f = one(load(path), "REWARD_SATURATION")
    assert isinstance(f, Finding) and f.severity == "info" and f.onset_step == first
    assert f.evidence["episode_return"] == "Environment/Cumulative Reward"

def test_a_monitor_return_at_the_time_limit_is_a_solved_task(tmp_path: Path) -> None:
    # SB3's Monitor names the episode return `r`: a PPO on CartPole-v1 (a survey file of rl-baselines3-zoo's layout)
    # at 500, the time limit, for its last 19 of 42 episodes is solved (info), not a saturation warning
    returns = [20, 10, 25, 10, 39, 35, 25, 13, 14, 38, 50, 35, 94, 75, 65, 73, 67, 183, 176, 149, 500, 500, 388]
    returns += [500] * 19
    p = tmp_path / "0.monitor.csv"
    p.write_text('#{"t_start": 1700000000.0, "env_id": "CartPole-v1"}\nr,l,t\n'
                 + "".join(f"{r}.0,{r},{0.1 * i:.1f}\n" for i, r in enumerate(returns)))
    run = load(p)
    assert run.trainer == "sb3_monitor" and run.sources["reward_mean"] == "r"
    f = one(run, "REWARD_SATURATION")
    assert isinstance(f, Finding) and f.severity == "info" and f.evidence["episode_return"] == "r"


def test_real_mean_return_against_timesteps_at_its_cap_is_a_solved_task() -> None:
    """h269-sb3-ppo-pygame-car-track-learns-to-full-episodes-45-ceiling: ``{"timesteps": [...], "mean_rewards":
    [...]}``, SB3's mean return of the last 100 episodes every 5,000 environment steps; 45.0 (500 steps x 0.09,
    a full episode without a crash) at every point from 65,000. The ``timesteps`` counter is the step and makes
    the mean an episode return: solved (info), not a warning."""
    path = corpus("h269-sb3-ppo-pygame-car-track-learns-to-full-episodes-45-ceiling/training_log.json")
    doc = json.loads(path.read_text())
    steps, means = doc["timesteps"], doc["mean_rewards"]
    first = next(s for i, s in enumerate(steps) if all(m == 45.0 for m in means[i:]))
    assert first == 65_000 and steps[-1] == 100_000
    run = load(path)
    assert run.frame["step"].to_list() == steps
    f = one(run, "REWARD_SATURATION")
    assert isinstance(f, Finding) and f.severity == "info" and f.evidence["episode_return"] == "timesteps"


def test_floor_all_zero_and_after_a_decline() -> None:
    zero = make_run({"reward_mean": [0.0] * 40, "reward_std": [0.0] * 40})
    f = one(zero, "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.severity == "error" and f.onset_step == 1 and f.evidence["all_zero"] is True
    assert reward_regime(zero) == "floor"
    # declines from 0.5 to 0.1 by step 31 and stays there with no spread
    mean = [0.5 - 0.4 * min(1.0, i / 30) for i in range(80)]
    std = [0.3 * max(0.0, 1 - i / 30) for i in range(80)]
    run = make_run({"reward_mean": mean, "reward_std": std})
    f = one(run, "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.evidence["all_zero"] is False
    # span = max(0.4, 0.5, 0.1) = 0.5 -> tolerance 0.01: mean <= 0.11 from 0.5 - 0.4 i/30 <= 0.11 -> i >= 29.25
    assert f.onset_step == 31
    assert f.evidence["floor"] == pytest.approx(0.1)
    assert one(run, "REWARD_SATURATION") is None


def test_floor_quiet_when_low_but_alive() -> None:
    # legaloom-grpo-v3-like: low reward with spread on most steps
    n = 40
    mean = [float(0.05 + 0.03 * abs(RNG.standard_normal())) for _ in range(n)]
    run = make_run({"reward_mean": mean, "reward_std": [0.05] * n})
    assert one(run, "REWARD_FLOOR") is None and reward_regime(run) is None
    # a zero mean that hides live groups (tied share 0.75 < 0.8) is not a floor
    hidden = make_run({"reward_mean": [0.0] * 50, "zero_variance_group_frac": [0.75] * 50})
    assert one(hidden, "REWARD_FLOOR") is None and reward_regime(hidden) is None


@pytest.mark.parametrize("case", range(12))
def test_saturation_and_floor_agree_with_reward_regime(case: int) -> None:
    rng = np.random.default_rng(case)
    n = int(rng.integers(8, 120))
    level = float(rng.choice([0.0, 0.5, 1.0]))
    start = float(rng.uniform(0, 1))
    mean = [start + (level - start) * min(1.0, i / (n / 2)) + (float(rng.normal(0, 0.05)) if case % 3 == 0 else 0.0)
            for i in range(n)]
    std = [float(abs(rng.normal(0, 0.3))) * max(0.0, 1 - i / (n / 2)) for i in range(n)]
    run = make_run({"reward_mean": mean, "reward_std": std, "reward_max": [1.0] * n, "reward_min": [0.0] * n})
    regime = reward_regime(run)
    assert isinstance(one(run, "REWARD_SATURATION"), Finding) == (regime == "saturation")
    assert isinstance(one(run, "REWARD_FLOOR"), Finding) == (regime == "floor")


def test_reward_level_not_evaluable_without_reward_mean() -> None:
    run = make_run({"kl": [0.1] * 20})
    for det, needs in (("REWARD_SATURATION", "reward_mean"), ("REWARD_FLOOR", "reward_mean (or success_rate)")):
        ne = one(run, det)
        assert isinstance(ne, NotEvaluable) and ne.needs == (needs,)
    # too short for windows: a reward exactly 0 at every step is still a fact (onset at the first)
    short = one(make_run({"reward_mean": [0.0] * 5}), "REWARD_FLOOR")
    assert isinstance(short, Finding) and short.onset_step == 1 and short.evidence["points"] == 5
    # but a short run that is not all zero is not judged, and one point is no fact
    assert one(make_run({"reward_mean": [0.0, 0.0, 0.1, 0.0, 0.0]}), "REWARD_FLOOR") is None
    assert one(make_run({"reward_mean": [0.0]}), "REWARD_FLOOR") is None


# --- TRUNCATION_REWARD --------------------------------------------------------------------------

def test_truncation_fires_with_onset_and_all_cut_step() -> None:
    n = 50
    share = [0.2] * 10 + [0.6] * 10 + [1.0] * 30
    reward = [1.0 - s + 0.01 * math.sin(i) for i, s in enumerate(share)]
    run = make_run({"truncated_frac": share, "reward_mean": reward}, steps=[5 * (i + 1) for i in range(n)])
    f = one(run, "TRUNCATION_REWARD")
    assert isinstance(f, Finding) and f.stage == "R" and f.severity == "warn"
    assert f.onset_step == 55 and f.evidence["all_truncated_from"] == 105
    assert f.evidence["late_mean"] == 1.0
    assert f.evidence["reward_corr"] == pytest.approx(scipy.stats.pearsonr(share, reward)[0], abs=1e-12)
    assert "proxy" not in f.evidence and "follows the truncated share" in f.message


def test_truncation_quiet_and_knob() -> None:
    n = 60
    share = [float(np.clip(0.2 + 0.1 * RNG.standard_normal(), 0, 1)) for _ in range(n)]
    run = make_run({"truncated_frac": share, "reward_mean": [0.5] * n})
    assert one(run, "TRUNCATION_REWARD") is None
    half = make_run({"truncated_frac": [0.6] * n})
    f = one(half, "TRUNCATION_REWARD")
    assert isinstance(f, Finding) and f.evidence["all_truncated_from"] is None and f.evidence["reward_corr"] is None
    assert one(half, "TRUNCATION_REWARD", truncated_above=0.7) is None


def test_truncation_proxy_from_lengths_and_not_evaluable() -> None:
    n = 40
    length = [300.0] * 20 + [512.0] * 20
    run = make_run({"response_length_mean": length, "response_length_max": [512.0] * n})
    f = one(run, "TRUNCATION_REWARD")
    assert isinstance(f, Finding) and f.onset_step == 21
    assert f.evidence["proxy"] == "1[response_length_mean >= 0.99 x 512]"
    # a mean that never sits twice at its highest value names no cap (one pinned at 512 would, below)
    only_mean = make_run({"response_length_mean": [300.0] * 20 + [507.25 + 0.1 * i for i in range(20)]})
    ne = one(only_mean, "TRUNCATION_REWARD")
    assert isinstance(ne, NotEvaluable) and "truncated_frac" in ne.needs[0]
    # the user gives the cap
    f = one(only_mean, "TRUNCATION_REWARD", max_length=512)
    assert isinstance(f, Finding) and f.onset_step == 21
    assert one(only_mean, "TRUNCATION_REWARD", max_length=2048) is None


# --- COMPONENT_COLLAPSE -------------------------------------------------------------------------

def hacked(n: int = 100, at: int = 60, kl_jump: bool = True) -> Run:
    """correctness 1.0 -> 0.0 at step ``at``; format 0.0 -> 1.0 at the same step: the total holds."""
    correct = [0.8 + 0.05 * math.sin(i) if i < at - 1 else 0.0 for i in range(n)]
    fmt = [0.2 if i < at - 1 else 1.0 for i in range(n)]
    kl = [0.002] * (at - 1) + ([0.08] if kl_jump else [0.002]) * (n - at + 1)
    return make_run({"reward/correctness": correct, "reward/format": fmt,
                     "reward_mean": [a + b for a, b in zip(correct, fmt, strict=True)], "kl": kl})


def test_component_collapse_fires_with_kl_spike_as_possible_hacking() -> None:
    f = one(hacked(), "COMPONENT_COLLAPSE")
    assert isinstance(f, Finding) and f.stage == "R"
    assert f.evidence["component"] == "reward/correctness" and f.evidence["rule"] == "fell"
    assert f.onset_step == 60 and f.evidence["kl_spike"] is True
    assert f.evidence["kl_before_median"] == 0.002 and f.evidence["kl_peak_after"] == 0.08
    assert "possible reward hacking" in f.message
    quiet_kl = one(hacked(kl_jump=False), "COMPONENT_COLLAPSE")
    assert isinstance(quiet_kl, Finding) and quiet_kl.evidence["kl_spike"] is False
    assert "hacking" not in quiet_kl.message


def test_component_collapse_pinned_at_its_floor_while_a_bonus_rises() -> None:
    n = 100
    rng = np.random.default_rng(3)
    # the task reward sits exactly at its clamp floor on 4 of every 5 steps (a rare answer scores above it);
    # the format bonus rises from 0.3 to 0.5
    task = [-3.0 if i % 5 else -3.0 + float(rng.uniform(0.1, 1.0)) for i in range(n)]
    fmt = [0.3 + 0.2 * min(1.0, i / 50) + float(rng.normal(0, 0.01)) for i in range(n)]
    run = make_run({"reward/task": task, "reward/format": fmt,
                    "reward_mean": [a + b for a, b in zip(task, fmt, strict=True)]})
    f = one(run, "COMPONENT_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "pinned" and f.evidence["component"] == "reward/task"
    assert f.evidence["floor_share"] == 0.8 and f.evidence["late_floor_share"] == 0.8
    assert f.evidence["rose"] == ["reward/format"] and f.onset_step == run.frame["step"][1]
    # quiet when nothing else rises (the whole reward is stuck: a floor, not a component given up) ...
    flat = [0.5 + float(rng.normal(0, 0.01)) for _ in range(n)]
    assert one(make_run({"reward/task": task, "reward/format": flat,
                         "reward_mean": [a + b for a, b in zip(task, flat, strict=True)]}), "COMPONENT_COLLAPSE") is None
    # ... and when the task reward leaves its floor late (a late learner: 50 % of the last fifth at the floor)
    late = [v if i < 80 or i % 2 else -2.0 for i, v in enumerate(task)]
    assert one(make_run({"reward/task": late, "reward/format": fmt,
                         "reward_mean": [a + b for a, b in zip(late, fmt, strict=True)]}), "COMPONENT_COLLAPSE") is None


def test_real_task_reward_at_its_clamp_floor_while_format_bonuses_rise() -> None:
    """h267-handwritten-grpo-qwen25vl7b-ultrasound-probe-pose-task-reward-pinned-at-floor-format-only-gains:
    ``rewards/numeric`` (3 - mean pose error, clamped to [-3, 3]) is exactly -3 on 229 of 292 rounds, first at
    round 1; ``rewards/keywords`` rises from 0.36 to 0.49 (quarter means) and the total only through it."""
    path = corpus("h267-handwritten-grpo-qwen25vl7b-ultrasound-probe-pose-task-reward-pinned-at-floor-format-only-"
                  "gains/train_logs.json")
    doc = json.loads(path.read_text())
    numeric = [doc[str(s)]["rewards/numeric"] for s in range(len(doc))]
    assert numeric.count(-3.0) == 229 and numeric.index(-3.0) == 1
    f = one(load(path), "COMPONENT_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "pinned" and f.evidence["component"] == "reward/numeric"
    assert f.onset_step == 1 and f.evidence["floor_share"] == pytest.approx(229 / 292)


def test_component_collapse_quiet_when_the_total_falls_or_a_component_saturates() -> None:
    n = 100
    # correctness dies and nothing compensates: the total falls, that is REWARD_STD_DEATH/FLOOR territory
    correct = [0.8 if i < 59 else 0.0 for i in range(n)]
    fmt = [0.2] * n
    falls = make_run({"reward/correctness": correct, "reward/format": fmt,
                      "reward_mean": [a + b for a, b in zip(correct, fmt, strict=True)]})
    assert one(falls, "COMPONENT_COLLAPSE") is None
    # healthy: format learned to its ceiling, correctness rising
    fmt = [min(1.0, i / 30) for i in range(n)]
    correct = [0.1 + 0.5 * i / n for i in range(n)]
    healthy = make_run({"reward/format": fmt, "reward/correctness": correct,
                        "reward_mean": [a + b for a, b in zip(correct, fmt, strict=True)]})
    assert one(healthy, "COMPONENT_COLLAPSE") is None
    # a penalty that goes from -1 to 0 rises to its ceiling: not a collapse
    pen = [-1.0 if i < 50 else 0.0 for i in range(n)]
    better = make_run({"reward/penalty": pen, "reward/correctness": correct,
                       "reward_mean": [a + b for a, b in zip(pen, correct, strict=True)]})
    assert one(better, "COMPONENT_COLLAPSE") is None


def test_component_collapse_silent_component_and_logged_total_excluded() -> None:
    n = 60
    live = {5, 20, 30, 40, 50, 55}
    fmt_std = [0.7 if i in live else 0.0 for i in range(n)]
    fmt = [1.5 if i in live else 2.0 for i in range(n)]
    correct = [2.0 if i % 11 == 3 else 0.0 for i in range(n)]
    total = [a + b for a, b in zip(fmt, correct, strict=True)]
    run = make_run({"reward/format": fmt, "reward_std/format": fmt_std, "reward/correctness": correct,
                    "reward_std/correctness": [0.0] * n, "reward/total": total, "reward_mean": total,
                    "reward_std": fmt_std})
    f = one(run, "COMPONENT_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "silent"
    assert f.evidence["component"] == "reward/correctness" and f.evidence["live_steps"] == len(live)
    assert f.evidence["silent_share"] == 1.0 and f.onset_step == min(live) + 1
    assert f.evidence["collapsed"] == ["reward/correctness"]  # reward/total equals reward_mean: not a component


def test_component_collapse_traded_needs_a_significant_fall_and_another_component_rising() -> None:
    # noisy per-step means (a few samples a step): correctness rises to ~1.0 by step 40, then falls to ~0.3 from
    # step 120 while the format reward rises from 1 to 2: the total holds, one component was given up
    rng = np.random.default_rng(7)
    n = 300
    correct_level = [min(1.0, 0.3 + i / 40) if i < 120 else 0.3 for i in range(n)]
    fmt_level = [1.0 + min(1.0, i / 150) for i in range(n)]
    correct = [v + rng.normal(0, 0.3) for v in correct_level]
    fmt = [v + rng.normal(0, 0.3) for v in fmt_level]
    total = [a + b for a, b in zip(correct, fmt, strict=True)]
    f = one(make_run({"reward/correctness": correct, "reward/format": fmt, "reward_mean": total}), "COMPONENT_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "traded" and f.evidence["rose"] == ["reward/format"]
    early, late = statistics.fmean(correct[:60]), statistics.fmean(correct[-60:])
    assert f.evidence["early_mean"] == pytest.approx(early) and f.evidence["late_mean"] == pytest.approx(late)
    # dated after the component's peak (its level starts low), within a tenth of the run of the fall at 120
    assert 120 <= f.onset_step <= 150
    # the same fall with nothing rising beside it is not a trade (the total falls: the other detectors' case)
    flat = [v - l + 1.0 for v, l in zip(fmt, fmt_level, strict=True)]
    total = [a + b for a, b in zip(correct, flat, strict=True)]
    assert one(make_run({"reward/correctness": correct, "reward/format": flat, "reward_mean": total}),
               "COMPONENT_COLLAPSE") is None
    # a fall of a fifth of the early level (0.84 -> 0.67) is not a trade, however significant
    mild = [c if i < 120 else c + 0.37 for i, c in enumerate(correct)]
    total = [a + b for a, b in zip(mild, fmt, strict=True)]
    out = one(make_run({"reward/correctness": mild, "reward/format": fmt, "reward_mean": total}), "COMPONENT_COLLAPSE")
    assert out is None
    # a penalty (never above 0) that grows as the task term rises is the price of the behaviour, not a trade
    # (h240 rsl_rl go1: action_rate -0.18 -> -0.66 as episodes lengthen and tracking rises)
    penalty = [-0.2 - 0.5 * min(1.0, i / 150) + rng.normal(0, 0.02) for i in range(n)]
    penalty = [min(v, 0.0) for v in penalty]
    total = [a + b for a, b in zip(fmt, penalty, strict=True)]
    assert one(make_run({"reward/action_rate": penalty, "reward/format": fmt, "reward_mean": total}),
               "COMPONENT_COLLAPSE") is None
    # the same fall of a component that pays (shifted above 0) is a trade
    paid = [v + 0.8 for v in penalty]
    total = [a + b for a, b in zip(fmt, paid, strict=True)]
    f = one(make_run({"reward/action_rate": paid, "reward/format": fmt, "reward_mean": total}), "COMPONENT_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "traded"


def test_component_collapse_not_evaluable_and_short() -> None:
    ne = one(make_run({"reward_mean": [0.5] * 30, "reward/fn": [0.5] * 30}), "COMPONENT_COLLAPSE")
    assert isinstance(ne, NotEvaluable) and "two reward components" in ne.needs[0]
    ne = one(make_run({"reward/a": [0.5] * 30, "reward/b": [0.5] * 30}), "COMPONENT_COLLAPSE")
    assert isinstance(ne, NotEvaluable) and ne.needs == ("reward_mean",)
    short = hacked(n=15, at=8)
    assert one(short, "COMPONENT_COLLAPSE") is None
    assert isinstance(one(short, "COMPONENT_COLLAPSE", min_points=6), Finding)


# --- registry and cards -------------------------------------------------------------------------

def test_component_std_aliases() -> None:
    table = load_aliases()
    assert table.canonical("rewards/format_reward/std", "trl")[0] == "reward_std/format_reward"  # type: ignore[index]
    assert table.canonical("rewards / check_answer / std", "trl")[0] == "reward_std/check_answer"  # type: ignore[index]
    assert table.canonical("completions/max_length", "trl")[0] == "response_length_max"  # type: ignore[index]


# --- real logs ----------------------------------------------------------------------------------

needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"real logs not found at {REAL} (set ADVCORE_SHARED_REAL)")


def fired(run: Run) -> dict[str, Finding]:
    return fired_by(run, R_STAGE)


@needs_real
def test_real_chaos_economy_truncation_from_the_raw_log_history() -> None:
    path = real("chaos-economy-grpo/training_logs.json")
    history = [e for e in json.loads(path.read_text())["log_history"] if "completions/clipped_ratio" in e]
    steps = [int(e["step"]) for e in history]
    clipped = [float(e["completions/clipped_ratio"]) for e in history]
    # the oracle: clipped_ratio 0.6 at step 5, 1.0 at every log point from step 80 except 205 (0.9)
    assert steps[0] == 5 and clipped[0] == 0.6
    from80 = steps.index(80)
    assert all(c == 1.0 for s, c in zip(steps[from80:], clipped[from80:], strict=True) if s != 205)
    assert all(c < 1.0 for c in clipped[from80 - 2: from80])
    got = fired(load(path))
    assert set(got) == {"TRUNCATION_REWARD"}  # the contrast case: no component or reward-level finding
    f = got["TRUNCATION_REWARD"]
    assert f.onset_step == 5 and f.evidence["all_truncated_from"] == 80
    late = clipped[-10:]  # 50 points -> a late window of 10
    assert f.evidence["late_mean"] == pytest.approx(sum(late) / 10)


@needs_real
def test_real_vision_run_correctness_never_separates_samples() -> None:
    path = real("unsloth-qwen3-vl-8b-vision-grpo/Qwen3_VL_(8B)-Vision-GRPO.ipynb.training_table.csv")
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    live = [r for r in rows if float(r["reward_std"]) > 0]
    assert [int(r["Step"]) for r in live] == [2, 25, 29, 32, 38]
    assert all(float(r["rewards / correctness_reward_func / std"]) == 0.0 for r in rows)
    got = fired(load(path))
    f = got["COMPONENT_COLLAPSE"]
    assert f.evidence["component"] == "reward/correctness_reward_func" and f.evidence["rule"] == "silent"
    assert f.evidence["live_steps"] == 5 and f.evidence["silent_share"] == 1.0 and f.onset_step == 2
    # 7 of 60 steps fully truncated, 3 of them in the last 12: quiet
    assert sum(float(r["completions / clipped_ratio"]) == 1.0 for r in rows) == 7
    assert "TRUNCATION_REWARD" not in got


@needs_real
def test_real_dapo_vlm_mdi_reward_falls_to_its_floor() -> None:
    path = real("trl-dapo-vlm-120531/run_terminal.md")
    mdi = [float(v) for v in re.findall(r"'rewards/mdi_reward/mean': ([-0-9.e]+)", path.read_text())]
    assert len(mdi) == 49
    frozen = next(i for i in range(len(mdi)) if all(v == -1.0 for v in mdi[i:]))
    assert frozen == 9 and max(mdi[1:9]) == -0.1
    f = fired(load(path))["COMPONENT_COLLAPSE"]
    assert f.evidence["component"] == "reward/mdi_reward" and f.evidence["rule"] == "fell"
    # log point k is optimizer step 10k (logging_steps 10: the progress bar dates each dict)
    assert f.onset_step == 10 * (frozen + 1) and f.evidence["kl"] == "not logged"


@needs_real
def test_real_fp8_truncation_and_the_reward_follows_it() -> None:
    path = real("unsloth-qwen3-8b-fp8-grpo/Qwen3_8B_FP8_GRPO.ipynb.training_table.csv")
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    clipped = [float(r["completions / clipped_ratio"]) for r in rows]
    reward = [float(r["reward"]) for r in rows]
    f = fired(load(path))["TRUNCATION_REWARD"]
    assert f.evidence["late_mean"] == pytest.approx(np.mean(clipped[-20:]))
    assert f.evidence["reward_corr"] == pytest.approx(scipy.stats.pearsonr(clipped, reward)[0], abs=1e-9)
    first = next(i for i in range(len(clipped)) if all(c >= 0.5 for c in clipped[i:i + 5]))
    assert f.onset_step == int(rows[first]["Step"])


@needs_real
def test_real_csd_pilot_dead_reward_floor_from_step_one() -> None:
    path = real("grpo-dynamics-csd-pilot-dead/log_const_seed42.txt")
    rewards = [float(ast.literal_eval(m)) for m in re.findall(r"'reward': ('?[-0-9.e]+'?)", path.read_text())]
    assert rewards and all(r == 0.0 for r in rewards)
    f = fired(load(path))["REWARD_FLOOR"]
    assert f.onset_step == 1 and f.evidence["all_zero"] is True


@needs_real
@pytest.mark.parametrize("name", [
    "unsloth-llama32-3b-grpo-advanced", "unsloth-qwen25-3b-grpo", "unsloth-qwen3-4b-grpo",
    "unsloth-llama31-8b-grpo-userrun",
])
def test_real_uncapped_unsloth_tables_stay_quiet(name: str) -> None:
    path = next((REAL / name).glob("*.csv"))
    assert fired(load(path)) == {}


@needs_real
def test_real_phi4_table_pinned_at_its_200_token_cap() -> None:
    # SOURCE.md: many steps at completion_length 200, 'all 6 samples truncated at the cap'; the table logs
    # no max length, but its mean sits at exactly 200.0 (max_completion_length) on most steps
    path = next((REAL / "unsloth-phi4-14b-grpo").glob("*.csv"))
    lengths = np.genfromtxt(path, delimiter=",", names=True)["completion_length"]
    at_cap = (lengths >= 0.99 * 200.0).astype(float)
    f = fired(load(path))["TRUNCATION_REWARD"]
    assert lengths.max() == 200.0 and int((lengths == 200.0).sum()) == 63
    assert f.evidence["late_mean"] == pytest.approx(at_cap[-20:].mean())
    assert "200" in f.evidence["metric"]


def test_a_mean_length_pinned_at_one_whole_number_is_read_as_the_cap() -> None:
    # every completion cut at 32 tokens: the batch mean is exactly 32 on every step
    f = one(make_run({"response_length_mean": [32.0] * 30, "reward_mean": [0.5] * 30}), "TRUNCATION_REWARD")
    assert isinstance(f, Finding) and f.onset_step == 1 and f.evidence["late_mean"] == 1.0
    # a mean that varies, or whose highest value is no whole number or is reached only twice, names no cap
    varied = [150.0 + (i % 7) * 3.3 for i in range(30)]
    assert isinstance(one(make_run({"response_length_mean": varied}), "TRUNCATION_REWARD"), NotEvaluable)
    twice = [180.0] * 28 + [200.0, 200.0]
    assert isinstance(one(make_run({"response_length_mean": twice}), "TRUNCATION_REWARD"), NotEvaluable)


def test_floor_at_zero_with_excursions_is_named_from_the_level() -> None:
    # exactly 0 on 80 of 100 steps, -0.25 / -0.125 on the others (no trend): at its floor, though not constant
    rng = np.random.default_rng(4)
    reward = [0.0 if rng.random() < 0.8 else float(rng.choice([-0.25, -0.125])) for _ in range(100)]
    reward[80:] = [0.0] * 20  # the late window sits at 0 too
    run = make_run({"reward_mean": reward, "zero_variance_group_frac": [0.9] * 100})
    f = one(run, "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.evidence["zero_share"] == pytest.approx(reward.count(0.0) / 100)
    assert reward_regime(run) == "floor"
    # the same zeros with the groups alive (spread logged and not gone) are not a floor
    alive = make_run({"reward_mean": reward, "reward_std": [0.4] * 100})
    assert one(alive, "REWARD_FLOOR") is None


def test_a_spread_that_comes_only_with_the_excursions_hides_no_live_group() -> None:
    # episode returns 0 on 88 of 100 updates; max - min is 0 wherever the mean is 0 and large at the
    # rare updates where an episode scored: no spread behind the zero mean, so the run is at its floor
    rng = np.random.default_rng(8)
    scored = set(rng.choice(100, 12, replace=False).tolist()) | {85, 93}
    reward = [0.01 if i in scored else 0.0 for i in range(100)]
    spread = [0.19 if i in scored else 0.0 for i in range(100)]
    run = make_run({"reward_mean": reward, "reward_max": spread, "reward_min": [0.0] * 100})
    late = reward[80:]
    assert late.count(0.0) / 20 >= 0.75 and sum(spread[80:]) / 20 > 0.1 * 0.19  # the late spread as a whole is alive
    f = one(run, "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.evidence["zero_share"] == pytest.approx(reward.count(0.0) / 100)
    # a spread at the zero steps themselves (groups whose rewards cancel) keeps the run off its floor
    alive = make_run({"reward_mean": reward, "reward_max": [0.3] * 100, "reward_min": [-0.3] * 100})
    assert one(alive, "REWARD_FLOOR") is None


def test_a_late_zero_share_within_sampling_noise_of_three_quarters() -> None:
    # a sparse reward earned by 1 of 16 completions now and then: 0 on 83 % of the steps, 72 % of the
    # late window (21 of 29), which a 3/4 rate gives by chance (one-sided 95 % bound: 0.75 - 1.645
    # x sqrt(0.75 x 0.25 / 29) = 0.618); a late window half at 0 is not
    late = [0.0] * 21 + [0.0625] * 8
    reward = [0.0] * 99 + [0.0625] * 17 + late
    assert len(reward) == 145 and window_share(reward) == pytest.approx(21 / 29)
    f = one(make_run({"reward_mean": reward}), "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.evidence["zero_share"] == pytest.approx(120 / 145)
    rising = [0.0] * 116 + [0.0, 0.0625] * 14 + [0.125]
    assert one(make_run({"reward_mean": rising}), "REWARD_FLOOR") is None


def window_share(reward: list[float]) -> float:
    """The share of exact zeros in the last fifth of ``reward`` (the late window)."""
    late = reward[len(reward) - max(1, round(len(reward) / 5)):]
    return late.count(0.0) / len(late)


def test_an_episode_return_held_at_its_floor_with_rare_excursions() -> None:
    # CartPole's shortest episodes: 10 on 39 of the last 40 points after an early stretch above it
    rng = np.random.default_rng(9)
    early = [float(v) for v in rng.integers(10, 50, 40)]
    reward = early + [10.0] * 100 + [12.0] + [10.0] * 59
    f = one(make_run({"reward_mean": reward}), "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.evidence["floor"] == 10.0
    # a run that only touches its lowest value now and then is not held there
    noisy = early + [float(v) for v in rng.integers(10, 14, 160)]
    assert sum(1 for v in noisy[-40:] if v == 10.0) / 40 < 0.75
    assert one(make_run({"reward_mean": noisy}), "REWARD_FLOOR") is None


def test_real_run_at_zero_with_excursions() -> None:
    path = corpus("recall-l3-qwen7b-grpo-skipall-tied/first_l3.txt")
    rewards = [float(ast.literal_eval(m.group(0))["reward"])
               for m in re.finditer(r"\{[^{}]*'reward': [^{}]*\}", path.read_text())]
    zeros = sum(1 for r in rewards if r == 0.0)
    assert len(rewards) == 72 and zeros == 62  # counted by hand from the dict lines
    f = one(load(path), "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.evidence["zero_share"] == pytest.approx(zeros / len(rewards))


def test_an_episode_return_held_at_its_floor_without_a_spread_metric() -> None:
    # SB3 logs no reward spread: a mean return that holds within 2 % of the span at the run's floor
    # (-100000 for an illegal move, -99998.99 once in a while) is at its floor, though not bit-identical
    rng = np.random.default_rng(6)
    reward = [-100000.0 if rng.random() < 0.6 else -99998.99 for _ in range(200)]
    f = one(make_run({"reward_mean": reward}, trainer="sb3"), "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.evidence["floor"] == -100000.0
    # a return that still climbs is not
    climbing = [-100000.0 + 50.0 * i for i in range(200)]
    assert one(make_run({"reward_mean": climbing}, trainer="sb3"), "REWARD_FLOOR") is None


def test_a_reward_that_never_left_one_positive_level_is_no_floor() -> None:
    # a positive reward that never moved has no floor to tell from its ceiling: it scores the same whatever the
    # policy does (DEAD_FROM_START), or it is a format reward at its maximum from the start (tied groups);
    # at 0 or below it is a floor
    constant = make_run({"reward_mean": [2000.0] * 26})
    assert one(constant, "REWARD_FLOOR") is None
    f = one(constant, "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.stage == "R" and f.evidence["reward_constant"] == 2000.0 and f.onset_step == 1
    near_max = make_run({"reward_mean": [0.984] * 10 + [1.0] * 90, "reward_std": [0.004] * 10 + [0.0] * 90})
    assert one(near_max, "REWARD_FLOOR") is None and one(near_max, "DEAD_FROM_START") is None
    penalty = make_run({"reward_mean": [-200.0] * 50})
    assert isinstance(one(penalty, "REWARD_FLOOR"), Finding) and one(penalty, "DEAD_FROM_START") is None


def test_a_floor_after_success_is_told_as_a_collapse() -> None:
    # a return that rose to 1,400 and held, then fell to 40 and stayed (h176 ML-Agents SAC crawler): not
    # "everything fails", but what was learned is gone
    # the reward reaches 1,400 at step 21; its level (a trailing median over 10 points) at step 26, whose window
    # is centred on step 26 - (10 - 1) // 2 = 22: the peak is dated there
    reward = [40.0 + 68.0 * i for i in range(20)] + [1400.0] * 30 + [30.0] * 50
    f = one(make_run({"reward_mean": reward}), "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.evidence["peak_level"] == 1400.0
    assert f.message.startswith("The reward collapsed after success: it rose from 40 at the first logged step")
    assert "to a level of 1400 at step 22" in f.message
    # a floor the run never rose from keeps the floor's own story
    g = one(make_run({"reward_mean": [-40.0] * 100}), "REWARD_FLOOR")
    assert isinstance(g, Finding) and "peak_level" not in g.evidence


def test_the_floor_onset_is_where_the_reward_settled_there_for_good() -> None:
    # near the floor for 20 points, away for 50 (it learned), back at the floor for the last 30
    reward = [0.01] * 20 + [0.8] * 50 + [0.0] * 30
    f = one(make_run({"reward_mean": reward, "reward_std": [0.3] * 70 + [0.0] * 30}), "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.onset_step == 71


def test_a_floor_with_one_lucky_stretch_is_a_floor_from_the_start() -> None:
    """h109-cs294-dqn-montezuma-reward-floor's shape: a mean over the last 100 episodes of 0, then 1.0 at 5
    points while one rewarded episode stays in that window, then 0 again: no success that collapsed, a
    floor since the first log."""
    reward = [0.0] * 9 + [1.0] * 5 + [0.0] * 48
    found = fired_by(make_run({"reward_mean": reward}, steps=[60_000 + 10_000 * i for i in range(62)]))
    assert "UPDATE_UNSTABLE" not in found
    assert found["REWARD_FLOOR"].onset_step == 60_000


def test_real_success_held_a_few_points_above_a_nonzero_floor_is_a_collapse() -> None:
    """h105-cs294-ac-invpendulum-collapse-after-solve: 1000 (the episode cap) at 8 of 100 iterations, a
    return of 7-150 after: a success that collapsed, whose highs are no excursions from a floor at 0."""
    path = corpus("h105-cs294-ac-invpendulum-collapse-after-solve/log.txt")
    with path.open() as f:
        returns = [float(r["AverageReturn"]) for r in csv.DictReader(f, delimiter="\t")]
    assert returns.count(1000.0) == 8 and 0.0 not in returns
    f = one(load(path), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["condition"] == "collapse after success"


def test_aborted_starts_are_not_judged_as_phases() -> None:
    """h113-bitnet-grpo-g2: restarts of 2 and 3 steps at reward 0 before the run itself; a phase that
    short has no early and late window and is no phase to judge alone."""
    rng = np.random.default_rng(5)
    main = list(0.8 + rng.normal(0.0, 0.05, 60))
    reward = [0.0, 0.0, 0.0, 0.0, 0.0, *main]
    run = make_run({"reward_mean": reward, "reward_std": [0.0] * 5 + [0.2] * 60},
                   steps=[1, 2, 1, 2, 3, *range(1, 61)], phase=[0, 0, 1, 1, 1, *[2] * 60])
    assert "REWARD_FLOOR" not in fired_by(run)
    # a phase long enough to judge still is (the same 2 + 3 restarts, 6 steps each)
    long_zero = make_run({"reward_mean": [0.0] * 6 + main, "reward_std": [0.0] * 6 + [0.2] * 60},
                         steps=[*range(1, 7), *range(1, 61)], phase=[0] * 6 + [1] * 60)
    assert fired_by(long_zero)["REWARD_FLOOR"].evidence["phases_flagged"] == [0]


def test_a_quiet_verdict_says_whether_the_reward_rose() -> None:
    """Alive is not learning: a quiet run whose reward stays within its noise says so; one that rose says that."""
    from advcore.diagnose import diagnose

    rng = np.random.default_rng(3)
    noise = rng.normal(0.0, 0.02, 60)
    flat = make_run({"reward_mean": list(0.05 + noise), "reward_std": [0.2] * 60})
    rising = make_run({"reward_mean": list(np.linspace(0.1, 0.8, 60) + noise), "reward_std": [0.2] * 60})
    early, late = np.median(0.05 + noise[:12]), np.median(0.05 + noise[-12:])
    summary = diagnose(flat, [], []).summary
    assert "did not rise beyond its step-to-step noise" in summary
    assert f"{early:.4g} early, {late:.4g} late" in summary
    rose = diagnose(rising, [], []).summary
    assert "the reward rose from a median of" in rose and "did not rise" not in rose
    assert "too few to tell" not in summary  # 60 steps
    short = make_run({"reward_mean": [0.57, 0.8, 0.6, 0.7, 0.9, 0.65, 0.85, 0.7, 0.8, 0.83], "reward_std": [0.2] * 10})
    said_short = diagnose(short, [], []).summary
    assert "10 steps are too few to tell whether it learns" in said_short and "no learning shows" not in said_short
    # solved within the early window (h95 PFRL SAC pendulum: -1464 and -1427 at the first two evaluations,
    # about -147 from the third on): the rise is said; one low first point is not a rise
    early_rise = make_run({"reward_mean": [-1464.0, -1427.0, *list(-147.0 + 5 * noise[:58])]})
    said = diagnose(early_rise, [], []).summary
    assert "the reward rose from -1464 at the first logged step" in said and "did not rise" not in said
    one_low = make_run({"reward_mean": [-1464.0, *list(-147.0 + 5 * noise[:59])]})
    assert "did not rise beyond its step-to-step noise" in diagnose(one_low, [], []).summary
    # a long run of a noisy per-step reward (sd 2) that rises from 0 to 6 over its first 100 of 3,000 steps
    # (inside its early window of 600) and holds: the median of its first 30 steps is where it started
    loud = rng.normal(0.0, 2.0, 3000)
    level = np.minimum(6.0, np.arange(3000) * 0.06)
    fast = make_run({"reward_mean": list(level + loud)})
    said = diagnose(fast, [], []).summary
    start = float(np.median((level + loud)[:30]))
    assert f"the reward rose from a median of {start:.4g} over its first 30 logged steps" in said
    assert "no learning shows" not in said
    # per-episode returns (sd 40) whose level climbs 21 -> 74: each step's noise hides the rise, the medians of
    # 80-episode windows do not (their standard error is 1.2533 x 40 / sqrt 80)
    episodes = np.linspace(21.0, 74.0, 400) + rng.normal(0.0, 40.0, 400)
    said = diagnose(make_run({"reward_mean": list(episodes)}), [], []).summary
    e, la = np.median(episodes[:80]), np.median(episodes[-80:])
    assert f"the reward rose from a median of {e:.4g} early to {la:.4g} late" in said


def test_floor_from_a_success_rate_that_never_rises() -> None:
    """A goal task that is never solved fires at the first point, whatever the noisy return does; one
    that learns, or a 'success' column that is no share, does not."""
    rng = np.random.default_rng(5)
    n = 200
    chance = rng.binomial(100, 0.03, n) / 100  # 3 % of 100 episodes
    ret = list(-48.5 + rng.normal(0, 0.8, n))
    f = one(make_run({"reward_mean": ret, "success_rate": list(chance)}, steps=[200 * (i + 1) for i in range(n)]),
            "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.onset_step == 200 and f.evidence["rule"] == "never_succeeds"
    level = max(float(np.median(chance[max(0, i - 19): i + 1])) for i in range(n))
    assert f.evidence["success_level_max"] == pytest.approx(level)
    learns = np.clip(np.linspace(0.0, 0.6, n) + chance, 0, 1)
    assert one(make_run({"reward_mean": ret, "success_rate": list(learns)}), "REWARD_FLOOR") is None
    assert one(make_run({"reward_mean": ret, "success_rate": [3.0] * n}), "REWARD_FLOOR") is None
    # no success yet while the shaped return climbs and holds: learning towards it, no floor
    climbing = list(np.linspace(3.7, 6.5, n) + rng.normal(0, 0.1, n))
    assert one(make_run({"reward_mean": climbing, "success_rate": [0.0] * n}), "REWARD_FLOOR") is None
    assert isinstance(one(make_run({"success_rate": [0.0] * n}), "REWARD_FLOOR"), Finding)
    # a return that rises by less than a tenth of its magnitude (-40 -> -37: a shaping term under a
    # constant penalty) is no progress towards success
    shaped = list(np.linspace(-40.0, -37.0, n) + rng.normal(0, 0.1, n))
    f = one(make_run({"reward_mean": shaped, "success_rate": [0.0] * n}), "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.evidence["rule"] == "never_succeeds"


def test_real_sac_her_pick_and_place_that_never_succeeds() -> None:
    """checked: rollout/success_rate quarter means 0.035 / 0.030 / 0.023 / 0.033, never above 0.083; 1000 points
    from step 200."""
    path = corpus("h39-sb3-sac-her-fetchpickplace-reward-floor/events.out.tfevents.1779161806.Sophias-MacBook-Pro-6"
                  ".local.73013.0")
    f = fired_by(load(path))
    assert f["REWARD_FLOOR"].onset_step == 200 and f["REWARD_FLOOR"].evidence["success_level_max"] < 0.083



def test_real_push_task_whose_return_creeps_while_nothing_succeeds() -> None:
    """checked: final_success_rate exactly 0 in 198 of 200 rows (1/256 twice); mean_episode_reward -40.24 over
    iterations 1-20, -36.95 over 181-200."""
    path = corpus("h76-handwritten-reinforce-2d-push-never-contacts-success-zero/training_log.csv")
    rows = list(csv.DictReader(path.read_text().splitlines()))
    success = [float(r["final_success_rate"]) for r in rows]
    assert sum(v == 0.0 for v in success) == 198
    f = fired_by(load(path))["REWARD_FLOOR"]
    assert f.evidence["rule"] == "never_succeeds" and f.onset_step == int(rows[0]["iteration"])


def test_real_smac_corridor_without_a_win_whose_return_climbs_is_no_floor() -> None:
    """checked: battle_won_mean exactly 0 at all 204 points while return_mean climbs 3.71 -> 6.48 (quarter
    means 5.11, 5.84, 5.98, 6.29)."""
    path = corpus("h70-pymarl-lica-corridor-zero-wins-but-learning/info.json")
    doc = json.loads(path.read_text())
    assert all(v == 0.0 for v in doc["battle_won_mean"])
    returns = [v["value"] for v in doc["return_mean"]]  # numpy scalars as jsonpickle writes them
    run = load(path)
    assert run.frame["success_rate"].drop_nulls().len() == len(doc["battle_won_mean"])
    assert run.frame["reward_mean"].drop_nulls().to_list() == pytest.approx(returns)
    assert returns[-1] > returns[0] + 2 and "REWARD_FLOOR" not in fired_by(run)


def test_a_reward_still_rising_in_the_late_window_rose() -> None:
    """A rise that happens mostly in the last fifth of a noisy run (CARLA PPO's average episodic reward:
    198 -> 940 by median with a step-to-step noise of 167) rose, although its peak before the late
    window is within 3 x the noise of its start."""
    from advcore.diagnose import diagnose

    rng = np.random.default_rng(5)
    n = 100
    level = np.concatenate([np.full(70, 200.0), np.linspace(200.0, 1000.0, 30)])
    reward = level + rng.normal(0.0, 120.0, n)
    diffs = np.diff(reward)
    noise = 1.4826 * np.median(np.abs(diffs - np.median(diffs))) / np.sqrt(2)
    late_gain = np.median(reward[-20:]) - np.median(reward[:20])
    assert late_gain > 3 * noise  # the oracle: the late median is well beyond the noise
    summary = diagnose(make_run({"reward_mean": list(reward)}), [], []).summary
    assert "the reward rose from a median of" in summary and "did not rise" not in summary


def test_a_truncated_share_that_grows_while_the_reward_falls() -> None:
    # few completions cut early, a quarter late, the reward falling with them: the rising rule
    n = 100
    share = [0.03] * 60 + [0.03 + 0.22 * min(1.0, (i - 60) / 10) for i in range(60, n)]
    reward = [0.45 - 0.4 * v + 0.01 * ((i * 7) % 3 - 1) for i, v in enumerate(share)]
    f = one(make_run({"truncated_frac": share, "reward_mean": reward}), "TRUNCATION_REWARD")
    assert isinstance(f, Finding) and f.evidence["rule"] == "rising" and 62 <= f.onset_step <= 66
    assert f.evidence["reward_corr"] == pytest.approx(float(np.corrcoef(share, reward)[0, 1]))
    # the same growth while the reward rises (a policy that learns to write longer): quiet
    rising = [0.45 + 0.4 * v for v in share]
    assert one(make_run({"truncated_frac": share, "reward_mean": rising}), "TRUNCATION_REWARD") is None
    # a share that falls as the policy learns to finish (cs285 math-hard: 0.67 -> 0.21): quiet
    assert one(make_run({"truncated_frac": share[::-1], "reward_mean": reward[::-1]}), "TRUNCATION_REWARD") is None


def test_real_turn_limit_cuts_that_drag_a_verl_agent_reward_down() -> None:
    """h236-verl-grpo-qwen35-9b-zoom-tool-t6-turn-limit-cuts-reward-falls: exceed_sample_ratio 3 % of the rollouts
    over the first 20 % of steps, 24 % over the last; the hunter's first step >= 0.10 is 77, >= 0.20 is 91."""
    path = corpus("h236-verl-grpo-qwen35-9b-zoom-tool-t6-turn-limit-cuts-reward-falls/train_reward_curve.csv")
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    share = [float(r["exceed_sample_ratio"]) for r in rows]
    reward = [float(r["reward_mean"]) for r in rows]
    found = fired_by(load(path))
    f = found["TRUNCATION_REWARD"]
    assert f.evidence["rule"] == "rising" and 77 <= f.onset_step <= 105
    assert f.evidence["reward_corr"] == pytest.approx(float(np.corrcoef(share, reward)[0, 1]))


def test_a_floor_with_excursions_is_not_told_as_constant() -> None:
    # a late window at its floor on 5 points of 6 and at 20 on the sixth: the floor holds, "constant" would not
    late = [20.0 if i % 6 == 0 else -0.2 - 0.01 * (i % 3) for i in range(50)]
    f = one(make_run({"reward_mean": [5.0 + 0.1 * (i % 7) for i in range(50)] + late}), "REWARD_FLOOR")
    assert isinstance(f, Finding) and "with excursions (a late range of 20.22" in f.message
    assert "constant" not in f.message
    # without the excursions the late window is constant, and said so
    flat = [-0.2 - 0.01 * (i % 3) for i in range(50)]
    g = one(make_run({"reward_mean": [5.0 + 0.1 * (i % 7) for i in range(50)] + flat}), "REWARD_FLOOR")
    assert isinstance(g, Finding) and g.message.startswith("The reward sits constant at its floor")


def test_every_missing_metric_is_listed_with_and() -> None:
    # COMPONENT_COLLAPSE lacks both the total and a second component: both are needed, so the line says "and"
    # (a comma read as a choice among them)
    from advcore.report.render import not_evaluable_lines

    out = one(make_run({"grad_norm": [1.0] * 30}), "COMPONENT_COLLAPSE")
    assert isinstance(out, NotEvaluable) and len(out.needs) == 2
    assert not_evaluable_lines([out]) == [f"COMPONENT_COLLAPSE: needs {out.needs[0]} and {out.needs[1]}"]


def test_a_control_run_names_the_language_model_only_detectors_on_one_line() -> None:
    # a newcomer read SimpleVLA-RL's filter lines, and a completion length cap, among the needs of a
    # multi-agent PPO run: a control or game trainer has neither, so those three detectors share one line
    # there, and keep their needs elsewhere
    from advcore.detectors import run_detectors
    from advcore.report.render import not_evaluable_lines

    reward = [float(i % 7) for i in range(30)]
    for trainer, folded in (("sb3", True), ("trl", False)):
        run = make_run({"reward_mean": reward}, trainer=trainer)
        _, missing = run_detectors(run)
        lines = not_evaluable_lines(missing, run)
        ids = {n.id for n in missing}
        assert {"FILTER_STARVATION", "ALWAYS_FILTERED", "TRUNCATION_REWARD"} <= ids
        assert any(ln.startswith("TRUNCATION_REWARD, FILTER_STARVATION, ALWAYS_FILTERED: ") for ln in lines) is folded
        assert any(ln.startswith("FILTER_STARVATION: needs ") for ln in lines) is not folded
        assert any(ln.startswith("TRUNCATION_REWARD: needs ") for ln in lines) is not folded
        assert len(lines) == len(not_evaluable_lines(missing)) - 2 * folded


def test_real_reward_that_settled_at_zero_late_is_dated_where_it_settled() -> None:
    """h292-handwritten-dqn-snake-no-step-penalty-learns-apples-then-loops-score-0-last-4500-of-10000-episodes:
    a DQN snake scores on 37-47 % of its episodes for about 5,000 episodes, then loops and scores on 1 %; the
    floor's onset is the change point of its share of scoring episodes (least squares, computed here with
    numpy), not its first five zero episodes."""
    path = corpus("h292-handwritten-dqn-snake-no-step-penalty-learns-apples-then-loops-score-0-last-4500-of-"
                  "10000-episodes/scores.npy")
    scores = np.load(path, allow_pickle=False)
    scored = (scores != 0).astype(float)
    n = len(scored)
    k = np.arange(1, n)
    head = np.cumsum(scored)[:-1]
    diff = head / k - (scored.sum() - head) / (n - k)
    stat = np.where(diff > 0, k * (n - k) / n * diff * diff, -1.0)
    cut = int(k[np.argmax(stat)])
    assert scored[:cut].mean() > 0.25 and scored[cut:].mean() < 0.05
    first_zero = cut + int(np.argmax(scores[cut:] == 0))
    f = one(load(path), "REWARD_FLOOR")
    assert isinstance(f, Finding) and f.onset_step == first_zero + 1  # steps count episodes from 1


def test_a_floor_after_a_brief_success_is_dated_after_it_and_told_as_a_collapse() -> None:
    # h318's ML-Agents robot tournament: -0.1 for 8 M steps, 500 to 900 over 30 of its 668 summaries, then -0.1 for the
    # last 24 M: too brief for a level over a tenth of the run, a success all the same
    rng = np.random.default_rng(11)
    before, success, after = 200, 20, 300
    floor = list(-0.1 + rng.normal(0.0, 0.01, before))
    peak = list(700.0 + rng.normal(0.0, 100.0, success))
    rest = list(-0.1 + rng.normal(0.0, 0.01, after))
    f = one(make_run({"reward_mean": floor + peak + rest}), "REWARD_FLOOR")
    assert isinstance(f, Finding) and "collapsed after a brief success" in f.message
    assert before + success < f.onset_step <= before + success + 10
    assert before < f.evidence["peak_step"] <= before + success
    # single lucky points are no success: the floor holds from the start
    spikes = floor + [50.0 if i % 40 == 0 else v for i, v in enumerate(rest + rest[:success])]
    g = one(make_run({"reward_mean": spikes}), "REWARD_FLOOR")
    assert isinstance(g, Finding) and "brief success" not in g.message and g.onset_step <= 10


def test_real_tied_steps_are_dated_where_their_share_rose() -> None:
    # legaloom-grpo-final (SOURCE.md: mode collapse onto one 9-token answer from step 6): reward_std is exactly 0 on
    # 25 of 40 steps, the first at step 6, but never on five steps in a row before step 18
    path = real("legaloom-grpo-final/training_log.json")
    rows = [r for r in json.loads(path.read_text()) if "reward_std" in r]  # the last entry is the run's summary
    tied = [r["step"] for r in rows if r["reward_std"] == 0.0]
    assert len(rows) == 40 and len(tied) == 25 and tied[0] == 6
    f = one(load(path), "DEGENERATE_GROUPS")
    assert isinstance(f, Finding) and f.onset_step == tied[0]


def test_real_clipped_ratio_that_the_lengths_contradict_is_not_evaluable() -> None:
    # h335's gridiron GRPO (TRL, colocated vLLM): completions/clipped_ratio 1.0 at nearly every step, while
    # completions/max_length (the batch's padded length) moves between a few hundred tokens and 1,020 under the cap
    # of 1,024: a completion cut at the cap has the cap's length, so the share counts something else
    folder = "h335-trl-grpo-qwen25-15b-gridiron-nfl-lora-1200-steps-reward-flat-kl-drifts-0.04-to-0.87-clipped-ratio-telemetry"
    path = corpus(f"{folder}/job_15b.log")
    rows = [ast.literal_eval(m) for m in re.findall(r"\{'loss'.*?\}", path.read_text(errors="replace"))]
    rows = [r for r in rows if "completions/clipped_ratio" in r]
    real_run = rows[2:]  # the first two dicts are a smoke test
    clipped = [float(r["completions/clipped_ratio"]) for r in real_run]
    longest = [float(r["completions/max_length"]) for r in real_run]
    assert sum(c == 1.0 for c in clipped) >= len(clipped) - 1 and max(longest) <= 1024
    assert max(longest[-len(longest) // 5:]) - min(longest[-len(longest) // 5:]) > 100
    assert isinstance(one(load(path), "TRUNCATION_REWARD"), NotEvaluable)
    # the same share beside a longest completion pinned at the cap is every completion cut
    n = 40
    pinned = make_run({"truncated_frac": [1.0] * n, "response_length_max": [1024.0] * n, "reward_mean": [0.3] * n})
    assert isinstance(one(pinned, "TRUNCATION_REWARD"), Finding)


def test_a_01_reward_without_a_logged_std_is_levelled_by_its_std_from_the_mean() -> None:
    # verl logs a score's mean, min and max per step: a 0/1 reward's range is 1 whenever a batch holds a success and
    # a failure; its std is sqrt(p (1 - p)), the Bhatia-Davis bound, which numpy's std of the batch equals
    from advcore.stages import stage_signal

    rng = np.random.default_rng(11)
    batches = [rng.random(64) < p for p in np.linspace(0.2, 0.97, 50)]
    run = make_run({"reward_mean": [float(b.mean()) for b in batches], "reward_max": [float(b.max()) for b in batches],
                    "reward_min": [float(b.min()) for b in batches]})
    (r_level,) = [s for s in stage_signal(run) if s.stage == "R"]
    stds = [float(np.std(b.astype(float))) for b in batches]
    k = math.ceil(0.2 * len(stds))
    assert r_level.early == pytest.approx(statistics.median(stds[:k]))
    assert r_level.late == pytest.approx(statistics.median(stds[-k:]))
    assert "reward std at most" in r_level.describe()
    # a partial-credit reward: the bound is an upper bound of the batch's std
    scores = [rng.choice([0.0, 0.1, 1.0], 64) for _ in range(50)]
    run = make_run({"reward_mean": [float(s.mean()) for s in scores], "reward_max": [float(s.max()) for s in scores],
                    "reward_min": [float(s.min()) for s in scores]})
    from advcore.detectors._windows import reward_std_bound

    bound = reward_std_bound(run)
    assert bound is not None and all(b >= float(np.std(s)) - 1e-12 for b, s in zip(bound.values, scores, strict=True))


def test_real_tied_groups_whose_completions_all_hit_the_cap_say_so_in_the_verdict() -> None:
    # f1-strategist-grpo-zero-std: num_generations 4, max_completion_length 96, every completion clipped; a newcomer
    # read the tie and the truncation as two unrelated causes
    from advcore.detectors import run_detectors
    from advcore.diagnose import diagnose

    path = real("f1-strategist-grpo-zero-std/trainer_state.json")
    rows = [r for r in json.loads(path.read_text())["log_history"] if "completions/clipped_ratio" in r]
    k = math.ceil(0.2 * len(rows))
    late = statistics.fmean(r["completions/clipped_ratio"] for r in rows[-k:])
    run = load(path)
    verdict = diagnose(run, *run_detectors(run))
    assert verdict.headline == "DEAD_FROM_START" and verdict.regime == "tied_groups"
    assert f"{late:.0%} of the completions were cut at the length cap late in the run (TRUNCATION_REWARD)" in (
        verdict.summary)
