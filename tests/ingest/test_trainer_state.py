"""HF/TRL ``trainer_state.json``: the log_history dict, a bare list, strings as numbers, eval rows,
TRL's version-dependent ``reward_std``, and a truncated file reported by name."""

from __future__ import annotations

import json
from pathlib import Path

from advcore.ingest import load


def _write(tmp_path: Path, obj: object, name: str = "trainer_state.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return p


def test_log_history_rows_map_to_canonical_names(tmp_path: Path) -> None:
    history = [
        {"step": 1, "reward": 0.25, "reward_std": 0.4, "frac_reward_zero_std": 0.5, "grad_norm": 1.5, "kl": 0.0},
        {"step": 2, "reward": "0.5", "reward_std": "0.3", "frac_reward_zero_std": 0.25, "grad_norm": 1.25},
        {"step": 2, "eval_loss": 0.9},  # an eval row: no metric we read, dropped
        {"step": 3, "reward": 0.75, "reward_std": 0.2, "frac_reward_zero_std": 0.0, "grad_norm": 1.0, "kl": 0.01},
    ]
    run = load(_write(tmp_path, {"log_history": history, "global_step": 3}))
    assert run.format == "trainer_state" and run.trainer == "trl" and not run.errors
    f = run.frame
    assert f["step"].to_list() == [1, 2, 3]
    assert f["reward_mean"].to_list() == [0.25, 0.5, 0.75]  # "0.5" read as a number
    assert f["zero_variance_group_frac"].to_list() == [0.5, 0.25, 0.0]
    assert f["kl"].to_list() == [0.0, None, 0.01]  # missing stays null, never 0
    assert run.sources["reward_mean"] == "reward"


def test_a_bare_list_reads_the_same(tmp_path: Path) -> None:
    history = [{"step": i, "reward": i / 10, "reward_std": 0.1} for i in range(1, 5)]
    a = load(_write(tmp_path, {"log_history": history}))
    b = load(_write(tmp_path, history, "history.json"))
    assert a.frame.equals(b.frame)


def test_without_a_version_reward_std_keeps_its_batch_meaning(tmp_path: Path) -> None:
    # trainer_state.json does not record the TRL version, and the alias row that reads TRL's
    # reward_std as the within-group std holds only for known versions < 0.27: unknown stays batch
    run = load(_write(tmp_path, {"log_history": [{"step": 1, "reward": 0.5, "reward_std": 0.4}]}))
    assert "trainer_version" not in run.metadata
    assert "reward_std" in run.metrics and "reward_std_within" not in run.metrics


def test_a_truncated_file_is_an_error_naming_it(tmp_path: Path) -> None:
    p = tmp_path / "trainer_state.json"
    p.write_text('{"log_history": [{"step": 1, "reward": 0.5}, {"step": 2, "rew')
    run = load(p)
    assert run.errors and str(p) in str(run.errors[0])


def test_trl_ppo_trainer_keys(tmp_path: Path) -> None:
    # TRL's PPOTrainer (trl/trainer/ppo_trainer.py, TRL 0.11+; trl/experimental/ppo since) logs under
    # objective/, policy/, loss/, val/; its objective/kl is summed over tokens and stays unread
    rows = [{"objective/kl": 2.0 + i, "objective/scores": 0.1 * i, "objective/rlhf_reward": 0.1 * i - 0.1,
             "policy/approxkl_avg": 0.02, "policy/clipfrac_avg": 0.01, "loss/value_avg": 6.0 - i,
             "policy/entropy_avg": 0.5, "val/clipfrac_avg": 0.0, "episode": 4 * (i + 1), "step": i + 1}
            for i in range(3)]
    run = load(_write(tmp_path, rows, "trajectory.json"))
    assert run.trainer == "trl"
    assert run.frame["reward_mean"].to_list() == [0.0, 0.1, 0.2]
    assert run.frame["value_loss"].to_list() == [6.0, 5.0, 4.0]
    assert run.frame["kl_step"].to_list() == [0.02] * 3 and run.frame["clip_frac"].to_list() == [0.01] * 3
    assert "kl" not in run.frame.columns


def test_real_trl_experimental_ppo_trajectory() -> None:
    from tests._real import corpus

    path = corpus("h66-trl-experimental-ppo-qwen05-arithmetic-frozen-critic-no-gain/trajectory.json")
    rows = json.loads(path.read_text())
    run = load(path)
    assert run.trainer == "trl" and run.frame.height == len(rows) == 100
    assert run.frame["reward_mean"].to_list() == [r["objective/scores"] for r in rows]
    assert run.frame["entropy"].to_list() == [r["policy/entropy_avg"] for r in rows]
