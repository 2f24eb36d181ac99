"""Tunix's metric names (google/tunix@c7d8950: tunix/sft/metrics_logger.py writes ``{role}/{mode}/{name}``)
read from a W&B history export, as Tunix runs write them."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from advcore.ingest import load
from advcore.ingest._trainers import trainer_of

from tests._real import corpus

_KEYS = ["_step", "actor/train/kl", "actor/train/pg_clipfrac", "actor/train/grad_norm", "completions/train/mean_length",
         "completions/train/max_length", "rewards/train/score/mean", "rewards/train/score/max",
         "rewards/train/score/min", "rewards/train/sum", "rewards/train/mean", "rewards/train/min",
         "rewards/train/max", "rewards/train/check_answer", "rewards/train/match_format_exactly",
         "rewards/eval/score/mean"]


def test_tunix_is_told_before_trl_whose_prefixes_it_shares() -> None:
    assert trainer_of(["actor/train/kl", "rewards/train/score/mean", "rewards/train/check_answer"]) == "tunix"
    # one Tunix key alone with TRL's rewards/ prefix stays TRL's
    assert trainer_of(["rewards/train/score/mean", "rewards/check_answer/mean"]) == "trl"


def test_a_tunix_history_reads_its_reward_components_and_not_its_aggregates(tmp_path: Path) -> None:
    rows = []
    for step in range(30):
        answer, fmt = 3.0 - step * 0.05, 0.5 + step * 0.01
        rows.append([step, 0.01 * step, 0.02, 1.5, 200 + step, 512, answer + fmt, 3.5, -1.0, answer + fmt,
                     (answer + fmt) / 2, -1.0, 3.5, answer, fmt, 2.0])
    path = tmp_path / "wandb_history.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([_KEYS, *rows])
    run = load(path)
    assert run.trainer == "tunix"
    f = run.frame
    assert f["reward_mean"].to_list() == pytest.approx([r[6] for r in rows])  # score/mean, before sum
    assert f["reward_max"].to_list() == [3.5] * 30 and f["reward_min"].to_list() == [-1.0] * 30
    assert f["kl"].to_list() == pytest.approx([r[1] for r in rows])
    assert f["clip_frac"][0] == 0.02 and f["response_length_mean"][-1] == 229
    # the reward functions are components; the mean, min and max over the functions are not
    assert {c for c in f.columns if c.startswith("reward/")} == {"reward/check_answer", "reward/match_format_exactly"}
    assert f["reward/check_answer"].to_list() == pytest.approx([r[13] for r in rows])
    assert {"rewards/train/mean", "rewards/train/min", "rewards/train/max"} <= set(run.metadata["unmapped"])


def test_real_tunix_history_columns_are_read_as_logged() -> None:
    path = corpus("h161-tunix-grpo-gemma3-1b-g8-lr1e5-correctness-traded-for-format/wandb_hozux9t6_history.csv")
    with path.open(newline="") as f:
        table = list(csv.DictReader(f))
    run = load(path)
    logged = [float(r["rewards/train/score/mean"]) for r in table if r["rewards/train/score/mean"]]
    assert run.trainer == "tunix" and run.frame["reward_mean"].drop_nulls().to_list() == pytest.approx(logged)
    answer = [float(r["rewards/train/check_answer"]) for r in table if r["rewards/train/check_answer"]]
    assert run.frame["reward/check_answer"].drop_nulls().to_list() == pytest.approx(answer)
