from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from advcore.detectors import run_detectors
from advcore.ingest import detect, load
from advcore.ingest.formats import plain
from tests._real import corpus


def test_jsonl_records(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text('{"step": 1, "reward_mean": 0.5, "actor": {"entropy": 1.0}, "note": "x"}\n\n'
                 '{"step": 2, "reward_mean": "0.75", "kl": NaN}\n')
    assert detect(p) is plain.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == [1, 2]
    assert run.frame["reward_mean"].to_list() == [0.5, 0.75]
    assert run.metadata["non_numeric"] == ["note"]


def test_jsonl_truncated_line(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text('{"step": 1, "reward": 0.5}\n{"step": 2, "rew')
    run = load(p)
    assert run.steps == 1 and run.errors[0].line == 2


def test_parquet(tmp_path: Path) -> None:
    p = tmp_path / "m.parquet"
    pl.DataFrame({"step": [1, 2], "reward_mean": [0.1, None], "entropy": [1.0, 0.5]}).write_parquet(p)
    assert detect(p) is plain.FORMAT
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [0.1, None]
    assert run.frame["entropy"].to_list() == [1.0, 0.5]


def test_evaluation_records_are_kept_apart_from_training(tmp_path: Path) -> None:
    # a hand-written loop logging train and eval records with the same keys at the same step
    p = tmp_path / "log.jsonl"
    p.write_text('{"step": 10, "phase": "train", "reward_mean": 0.8}\n'
                 '{"step": 10, "phase": "eval", "reward_mean": -0.02, "epoch": 1}\n'
                 '{"step": 11, "split": "Validation", "reward_mean": 0.1}\n'
                 '{"step": 11, "mode": "train", "reward_mean": 0.9}\n')
    raw = plain.read(p)
    assert raw.metadata["evaluation_records"] == 2
    assert raw.frame["reward_mean"].to_list() == [0.8, None, None, 0.9]
    assert raw.frame["eval/reward_mean"].to_list() == [None, -0.02, 0.1, None]
    assert raw.frame["epoch"].to_list() == [None, 1.0, None, None]


def test_a_loop_with_its_own_step_counter_and_one_record_per_phase(tmp_path: Path) -> None:
    # the layout of stanford-cs336 assignment 5 GRPO logs: an eval, a rollout and two train records
    # per grpo_step, the train ones also counting optimizer steps
    lines = []
    for g in (1, 2, 3):
        lines.append({"type": "eval", "grpo_step": g, "reward": 0.9})
        lines.append({"type": "rollout", "grpo_step": g, "reward": 0.25 * g, "std_reward": 0.5})
        for k in (1, 2):
            lines.append({"type": "train", "grpo_step": g, "optimizer_step": 2 * (g - 1) + k,
                          "grad_norm": float(2 * (g - 1) + k), "token_entropy": 1.0 / g})
    p = tmp_path / "metrics.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    run = load(p)
    assert run.sources["step"] == "grpo_step" and run.frame["step"].to_list() == [1, 2, 3]
    assert run.frame["reward_mean"].to_list() == [0.25, 0.5, 0.75]  # the eval records stay apart
    assert run.frame["grad_norm"].to_list() == [1.5, 3.5, 5.5]  # two optimizer steps per grpo_step
    assert run.frame["reward_std"].to_list() == [0.5] * 3
    assert "optimizer_step" in run.metadata["unmapped"]


def test_a_counter_that_repeats_or_falls_is_not_a_step(tmp_path: Path) -> None:
    p = tmp_path / "m.csv"
    p.write_text("episodes,reward\n1,0.1\n1,0.2\n2,0.3\n")  # a count of finished episodes: rows are steps
    run = load(p)
    assert run.metadata.get("step_inferred") and run.frame["reward_mean"].to_list() == [0.1, 0.2, 0.3]
    p.write_text("update,reward\n1,0.1\n3,0.2\n2,0.3\n")
    assert load(p).metadata.get("step_inferred")


def test_cs336_grpo_log_is_read_by_its_grpo_step() -> None:
    path = corpus("h13-cs336-grpo-noclip-offpolicy-collapse/metrics.jsonl")
    rollouts = [r for r in map(json.loads, path.read_text().splitlines()) if r["type"] == "rollout"]
    run = load(path)
    assert run.frame["step"].to_list() == [r["grpo_step"] for r in rollouts]
    assert run.frame["reward_mean"].to_list() == [r["reward"] for r in rollouts]
    # the floor is dated from the first grpo_step after which every rollout reward is exactly 0 (137)
    zero_from = min(r["grpo_step"] for i, r in enumerate(rollouts) if all(q["reward"] == 0 for q in rollouts[i:]))
    findings, _ = run_detectors(run)
    assert {f.id: f.onset_step for f in findings}["REWARD_FLOOR"] == zero_from


def test_one_bad_value_costs_its_line_not_the_file(tmp_path: Path) -> None:
    # issue 12 item 3: deep nesting, a huge integer, a lone surrogate and a step beyond Int64
    good = [json.dumps({"step": i, "reward": 0.5 + i / 100}) for i in range(1, 11)]
    bad = ['{"step": 11, "reward": ' + "[" * 100_000 + "]" * 100_000 + "}",
           '{"step": 12, "reward": ' + "9" * 5000 + "}",
           '{"step": 13, "reward": 0.25, "note": "\\ud800"}',
           '{"step": 9223372036854775808, "reward": 0.2}']
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join(good[:5] + bad + good[5:]) + "\n")
    run = load(p)
    assert run.frame["step"].to_list() == [1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 10]  # one step past 5 is logged late
    messages = [(e.line, e.message) for e in run.errors]
    assert [line for line, _ in messages] == [6, 7, None]
    assert "nested deeper" in messages[0][1] and "4300 digits" in messages[1][1]
    assert "whole number within +-2**63" in messages[2][1]


def test_update_metrics_of_rows_between_updates_are_placeholders(tmp_path: Path) -> None:
    # a loop that logs every episode and updates every 4th: 0, 0 on the other rows
    rows = [{"episode": i, "reward": float(i), "value_loss": 0.5 if i % 4 == 0 else 0.0,
             "entropy": 1.2 if i % 4 == 0 else 0.0} for i in range(1, 21)]
    p = tmp_path / "interleaved.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    run = load(p)
    assert run.frame["entropy"].drop_nulls().to_list() == [1.2] * 5
    assert run.frame["value_loss"].null_count() == 15 and run.metadata["update_placeholder_rows"] == 15
    assert run.frame["reward_mean"].null_count() == 0
    # updates that die and stay at 0 are one stretch: a fact of the run, kept
    dying = [{"step": i, "value_loss": 0.5 if i < 10 else 0.0, "entropy": 1.2 if i < 10 else 0.0} for i in range(1, 21)]
    p.write_text("\n".join(json.dumps(r) for r in dying) + "\n")
    run = load(p)
    assert run.frame["entropy"].to_list()[-1] == 0.0 and "update_placeholder_rows" not in run.metadata


def test_a_gradient_norm_and_kl_of_zero_are_facts_not_placeholders(tmp_path: Path) -> None:
    # a GRPO loop whose every other step has all groups tied: no gradient, no KL move; both zeros are evidence
    rows = [{"step": i, "reward": 0.5, "grad_norm": 0.0 if i % 2 else 0.3, "kl": 0.0 if i % 2 else 0.01}
            for i in range(1, 21)]
    p = tmp_path / "tied.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    run = load(p)
    assert run.frame["grad_norm"].null_count() == 0 and run.frame["grad_norm"].to_list().count(0.0) == 10
    assert "update_placeholder_rows" not in run.metadata


def test_lists_of_rewards_and_advantages_give_their_statistics(tmp_path: Path) -> None:
    """A loop that logs each step's per-sample rewards as a list (anjaustin/autoresearch grpo_log.jsonl)."""
    import numpy as np

    rewards = [[1.0, 1.0], [0.6, 1.0], [0.0, 0.25, 0.5, 1.0], [1.0, "oops"], []]
    p = tmp_path / "grpo_log.jsonl"
    p.write_text("\n".join(json.dumps({"step": i + 1, "rewards": r, "mean_reward": 0.5})
                           for i, r in enumerate(rewards)))
    run = load(p)
    good = [np.array(r, dtype=float) for r in rewards[:3]]
    assert run.frame["reward_std"].to_list()[:3] == [float(np.std(r)) for r in good]
    assert run.frame["reward_min"].to_list()[:3] == [float(r.min()) for r in good]
    assert run.frame["reward_max"].to_list()[:3] == [float(r.max()) for r in good]
    # a list with a value that is no number, or an empty one, costs its row's statistics only
    assert run.frame["reward_std"].to_list()[3:] == [None, None]
    assert run.frame["reward_mean"].to_list() == [0.5] * 5


def test_real_grpo_log_with_reward_lists() -> None:
    import numpy as np

    path = corpus("h113-bitnet-grpo-g2-gsm8k-tied-groups/grpo_log.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    main = records[-201:]  # the 201-step run after three aborted starts
    assert [r["step"] for r in main] == list(range(1, 202))
    run = load(path)
    assert run.frame["reward_std"].to_list()[-201:] == [float(np.std(r["rewards"])) for r in main]


def test_rows_of_one_group_each_give_the_share_of_tied_groups(tmp_path: Path) -> None:
    # one row per prompt group, the step advancing per update: the rows of a step are its groups
    import numpy as np

    groups = [(1, [0.0, 0.0, 0.0, 0.0]), (1, [0.0, 0.5, 1.0, 1.0]), (2, [1.0, 1.0, 1.0, 1.0]),
              (2, [0.25, 0.25, 0.25, 0.25]), (2, [0.0, 1.0, 0.0, 1.0]), (3, [0.5, 0.0, 0.5, 0.5])]
    p = tmp_path / "train_log.jsonl"
    p.write_text("\n".join(json.dumps({"step": s, "rewards": r}) for s, r in groups))
    run = load(p)
    assert run.frame["step"].to_list() == [1, 2, 3]
    assert run.frame["zero_variance_group_frac"].to_list() == [1 / 2, 2 / 3, 0.0]
    within = [np.mean([np.std(r) for s, r in groups if s == step]) for step in (1, 2, 3)]
    assert np.allclose(run.frame["reward_std_within"].to_list(), within)
    assert np.allclose(run.frame["reward_mean"].to_list(),
                       [np.mean([np.mean(r) for s, r in groups if s == step]) for step in (1, 2, 3)])
    assert "reward_std" not in run.frame.columns  # no whole-batch std is known from the groups' own


def test_real_multi_turn_grpo_rows_of_one_group_each() -> None:
    """h258-multiturn-grpo-qwen25-7b-harfeast-agent-groups-tie-after-epoch5: 140 rows (one task's 16
    trajectories each) over steps 0 to 38; 102 of the 140 groups are tied (checked with pandas)."""
    path = corpus("h258-multiturn-grpo-qwen25-7b-harfeast-agent-groups-tie-after-epoch5/train_log.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    tied: dict[int, list[bool]] = {}
    for r in rows:
        tied.setdefault(r["step"], []).append(len(set(r["rewards"])) == 1)
    assert len(rows) == 140 and sum(map(sum, tied.values())) == 102
    run = load(path)
    assert run.frame["step"].to_list() == sorted(tied)
    assert run.frame["zero_variance_group_frac"].to_list() == [sum(t) / len(t) for t in tied.values()]
    findings, _ = run_detectors(run)
    assert "DEGENERATE_GROUPS" in {f.id for f in findings}


def test_json_lines_after_a_leading_console_line(tmp_path: Path) -> None:
    # a logger's warning printed into the file before the first record (h200-trl-codegrpo): the records are read,
    # the warning is the one line lost, named
    p = tmp_path / "train.txt"
    p.write_text("[2026-03-17 09:54:59] WARNING transformers.modeling_utils: Could not estimate the number of tokens\n"
                 + "".join(json.dumps({"step": s, "reward": 0.1 * s}) + "\n" for s in range(1, 6)))
    assert detect(p) is plain.FORMAT
    run = load(p)
    assert run.frame.sort("step")["reward_mean"].to_list() == [0.1 * s for s in range(1, 6)]
    assert [e.line for e in run.errors] == [1]
