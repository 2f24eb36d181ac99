"""AReaL's per-step metrics, as its PPO actor names them (inclusionAI/AReaL, ``areal/engine/ppo/actor.py``,
``ppo_update``: ``stats_tracker`` under the ``ppo_actor`` scope; ``grpo_loss_fn`` under ``ppo_actor/update``).

A run's statistics, exported to a CSV with one row per step (as ethanewer/teacher-answer-rl's report script
does from AReaL's ``main.log``), read as AReaL's: the task reward is the reward, not ``rollout/reward``,
which the rollout workflow logs as 0 when the reward is computed after the rollout."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from advcore.detectors import run_detectors
from advcore.ingest import load


def _write(path: Path, n: int = 60) -> np.ndarray:
    rng = np.random.default_rng(3)
    task = np.clip(-2.1 + 0.7 * np.arange(n) / n + 0.05 * rng.standard_normal(n), -3, 0)
    header = ["step", "rollout/reward", "eval-rollout/reward", "ppo_actor/task_reward/avg", "ppo_actor/task_reward/max",
              "ppo_actor/task_reward/min", "ppo_actor/advantages/avg", "ppo_actor/advantages/max",
              "ppo_actor/advantages/min", "ppo_actor/no_eos_ratios/avg", "ppo_actor/update/entropy/avg",
              "ppo_actor/update/approx_kl/avg", "ppo_actor/update/clip_ratio/avg", "ppo_actor/update/grad_norm"]
    lines = [",".join(header)]
    for i in range(n):
        lines.append(",".join(str(v) for v in (
            i + 1, 0.0, 0.0, task[i], task[i] + 1.0, task[i] - 1.0, 0.0, 1.5, -1.5, 0.1, 0.4, 0.0, 0.0, 0.3)))
    path.write_text("\n".join(lines) + "\n")
    return task


def test_areal_task_reward_is_the_reward(tmp_path: Path) -> None:
    path = tmp_path / "training_metrics.csv"
    task = _write(path)
    run = load(path)
    assert run.trainer == "areal"
    np.testing.assert_allclose(run.frame["reward_mean"].to_numpy(), task)
    np.testing.assert_allclose(run.frame["reward_max"].to_numpy(), task + 1.0)
    assert {"adv_max", "adv_min", "truncated_frac", "entropy", "grad_norm"} <= set(run.frame.columns)
    # the update's KL and clip share are 0 by construction with one minibatch: not read as a frozen update
    assert "kl_step" not in run.frame.columns and "clip_frac" not in run.frame.columns
    fired = {f.id for f in run_detectors(run)[0]}
    assert "REWARD_FLOOR" not in fired and "UPDATE_SUPPRESSED" not in fired
