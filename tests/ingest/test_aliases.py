"""The alias table: version ranges, name patterns, user rows winning, and sign flips."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from advcore.detectors import run_detectors
from advcore.ingest import RawLog, load, load_aliases
from advcore.ingest._canonical import canonicalize
from tests._real import REAL, corpus, events


def test_trl_reward_std_meaning_depends_on_the_version() -> None:
    table = load_aliases()
    assert table.canonical("reward_std", "trl", "0.24.0")[0] == "reward_std_within"  # type: ignore[index]
    assert table.canonical("reward_std", "trl", "0.27.1")[0] == "reward_std"  # type: ignore[index]


def test_patterns_and_prefixes() -> None:
    table = load_aliases()
    assert table.canonical("rewards/format_reward/mean", "trl")[0] == "reward/format_reward"  # type: ignore[index]
    assert table.canonical("train/reward", "trl")[0] == "reward_mean"  # type: ignore[index]
    assert table.canonical("no_such_key", "trl") is None


def test_user_rows_win(tmp_path: Path) -> None:
    extra = tmp_path / "map.csv"
    extra.write_text("trainer,key,canonical,versions,note\n*,my_score,reward_mean,,ours\ntrl,reward,reward_max,,odd\n")
    table = load_aliases(extra)
    assert table.canonical("my_score", None)[0] == "reward_mean"  # type: ignore[index]
    assert table.canonical("reward", "trl")[0] == "reward_max"  # type: ignore[index]


def test_scale_flips_a_logged_negative() -> None:
    raw = RawLog("plain", pl.DataFrame({"step": [1.0, 2.0], "train/entropy_loss": [-2.5, -2.0]}), trainer="sb3")
    run = canonicalize(raw, "x", load_aliases())
    assert run.frame["entropy"].to_list() == [2.5, 2.0]


def test_two_keys_of_one_name_fill_each_other_and_both_are_named() -> None:
    # TRL renamed completion_length to completions/mean_length; a log of both reads the first, the second fills
    # its gaps, and the metrics line names both (a newcomer found the second in neither metrics nor not_read)
    from advcore.report.render import metrics_text

    raw = RawLog("trainer_state", pl.DataFrame({"step": [1.0, 2.0, 3.0], "completion_length": [100.0, None, 90.0],
                                                "completions/mean_length": [101.0, 95.0, 91.0]}), trainer="trl")
    run = canonicalize(raw, "x", load_aliases())
    assert run.frame["response_length_mean"].to_list() == [100.0, 95.0, 90.0]
    assert run.metadata["fallback_keys"] == {"response_length_mean": ["completions/mean_length"]}
    assert "response_length_mean (completion_length, else completions/mean_length)" in metrics_text(run)


def test_a_key_is_found_in_lower_case_with_blanks_as_underscores_last() -> None:
    # a CSV header "Episode,Score,Steps,Epsilon" (a DQN loop): Score is the table's `score`; an exact key still wins
    raw = RawLog("csv_table", pl.DataFrame({"Episode": [1.0, 2.0], "Score": [3.0, 5.0], "Avg Reward": [1.0, 2.0]}))
    run = canonicalize(raw, "x", load_aliases())
    assert run.sources["reward_mean"] == "Score" and run.frame["reward_mean"].to_list() == [3.0, 5.0]
    assert (load_aliases().canonical("Avg Reward", None) or ("",))[0] == "reward_mean"


def test_an_offset_turns_a_share_into_its_complement() -> None:
    # Tinker logs the share of mixed groups; the tied share is 1 - it
    raw = RawLog("plain", pl.DataFrame({"step": [0.0, 1.0], "env/all/by_group/frac_mixed": [1.0, 0.25]}))
    run = canonicalize(raw, "x", load_aliases())
    assert run.frame["zero_variance_group_frac"].to_list() == [0.0, 0.75]


def test_a_metric_map_offset_that_is_not_a_number_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "map.csv"
    path.write_text("trainer,key,canonical,versions,note,scale,offset\n*,a,reward_mean,,,-1,one\n")
    with pytest.raises(ValueError, match=r"map.csv:2: `offset` must be a number"):
        load_aliases(path)


def test_real_tinker_cookbook_metrics_jsonl() -> None:
    import json

    path = corpus("h36-tinker-rlvr-rubric-qwen3-4b-slow-learner/metrics.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    run = load(path)
    assert run.frame["reward_mean"].to_list() == [r["env/all/reward/total"] for r in rows]
    tied = [1.0 - r["env/all/by_group/frac_mixed"] for r in rows]
    assert run.frame["zero_variance_group_frac"].to_list() == pytest.approx(tied)
    assert run.frame["entropy"][0] == pytest.approx(rows[0]["optim/entropy"])


def test_sb3_entropy_is_positive_on_the_real_run() -> None:
    """SOURCE.md: entropy_loss goes from -2.82 to -2.51, so the entropy from 2.82 to 2.51."""
    path = next((REAL / "carla-sb3-ppo-constant-obs").glob("events.out.tfevents.*"), None)
    if path is None:
        pytest.skip(f"real logs not found at {REAL}")
    entropy = load(path).frame["entropy"].drop_nulls()
    assert entropy[0] == pytest.approx(2.82, abs=0.01) and entropy[-1] == pytest.approx(2.51, abs=0.01)


def test_plain_mean_reward_keys_are_the_reward_mean_but_not_an_evaluation() -> None:
    table = load_aliases()
    for key in ("avg_reward", "mean_reward", "train/mean_reward"):
        assert table.canonical(key, None)[0] == "reward_mean", key  # type: ignore[index]
    # SB3's EvalCallback: the deterministic policy's return apart from training, a validation score, never the reward
    assert table.canonical("eval/mean_reward", "sb3")[0] == "val_score"  # type: ignore[index]


def test_a_train_prefix_is_read_through_and_an_evaluation_prefix_is_not() -> None:
    table = load_aliases()
    assert table.canonical("train_avg_reward", None) is not None
    assert table.canonical("train_avg_reward", None)[0] == "reward_mean"  # type: ignore[index]
    assert table.canonical("train/approx_kl", None)[0] == "kl_step"  # type: ignore[index]
    for key in ("val_avg_reward", "eval_avg_reward", "test_avg_reward"):
        assert table.canonical(key, None) is None


def test_a_format_without_a_trainer_reads_the_keys_of_the_trainer_they_belong_to(tmp_path: Path) -> None:
    """A TensorBoard file of a verl run (verl's TensorBoard logger writes its metric keys as tags)."""
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2, summary_pb2  # type: ignore[import-untyped]
    from tensorboard.summary.writer.event_file_writer import EventFileWriter  # type: ignore[import-untyped]

    writer = EventFileWriter(str(tmp_path))
    for step in (1, 2, 3):
        writer.add_event(event_pb2.Event(step=step, summary=summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag="critic/score/mean", simple_value=0.1 * step),
            summary_pb2.Summary.Value(tag="actor/ppo_kl", simple_value=0.001 * step)])))
    writer.close()
    (path,) = tmp_path.glob("events.out.tfevents*")
    run = load(path)
    assert run.trainer == "verl"
    assert run.frame["reward_mean"].to_list() == pytest.approx([0.1, 0.2, 0.3])
    assert run.frame["kl_step"].to_list() == pytest.approx([0.001, 0.002, 0.003])


def test_real_verl_csv_export_reads_as_verl() -> None:
    """A verl run's metrics written to CSV by the project (one column per verl key)."""
    path = corpus("h55-verl-grpo-qwen3-4b-prompt-writer-entropy-explosion-csv/training_history.csv")
    table = pl.read_csv(path)
    run = load(path)
    assert run.trainer == "verl" and run.steps == table.height
    assert run.frame["reward_mean"].to_list() == pytest.approx(table["critic/score/mean"].to_list())
    assert run.frame["entropy"].to_list() == pytest.approx(table["actor/entropy"].to_list())


@pytest.mark.parametrize(("keys", "expected"), [
    (["Episodic Reward/episode", "Average Episodic Reward/info", "Reward/(t)"], "Average Episodic Reward/info"),
    (["loss", "avgReturn"], "avgReturn"),
    (["ep_rew", "loss"], "ep_rew"),
    (["reward_format", "reward_std", "eval/reward", "max_reward", "discounted_return"], None),
    (["loss", "entropy"], None),
    # an average since the start lags: the episode's own return first (h96 W&B Space Invaders DQN)
    (["cumulative_avg_reward", "episodic_reward"], "episodic_reward"),
    # a rolling mean of the training returns beside an evaluation's (a hand-written DQN's train.csv)
    (["epsilon", "loss", "rolling_return", "eval_return"], "rolling_return"),
    (["cumulative_avg_reward", "loss"], "cumulative_avg_reward"),
    (["cumulative_reward", "loss"], "cumulative_reward"),
    # a Gym environment id names the env, not the measure (h125, Lizhi-sjtu/DRL-code-pytorch)
    (["step_rewards_LunarLander-v2"], "step_rewards_LunarLander-v2"),
    (["eval/reward_ALE/Pong-v5", "reward_std_Hopper-v4"], None),
    # OpenAI baselines' one-word episode reward, copied by its forks' loggers (h14 NSI PPO progress.csv)
    (["rew_mean_IDN", "eprew_recent", "ext_reward", "eprew"], "eprew_recent"),
    # the return's symbol G (a tabular agent's 'episode steps return_G completed' TSV)
    (["episode", "steps", "return_G", "completed"], "return_G"),
    # an abbreviation, a course's 'utility', one agent's return (yjhong89/DQN, BU CS440, light_mappo)
    (["Step", "episode.rwd", "episode.q", "episode.loss", "epsilon"], "episode.rwd"),
    (["after_cycle", "avg_utility", "avg_num_wins"], "avg_utility"),
    (["agent12/average_episode_rewards"], "agent12/average_episode_rewards"),
    # the team's return beside each named agent's (MaxMaiche/COCOMA-DeepRL's archers): the team's
    (["Agent_archer_0/Reward", "Agent_archer_1/Reward", "Global/Reward"], "Global/Reward"),
    # what an SB3 callback records itself (logger.record("custom/...")), beside its evaluation's (h12 JEPA trading)
    (["custom/ent_coef", "custom/eval_episode_reward_mean", "custom/episode_reward_mean"], "custom/episode_reward_mean"),
    (["gpu_utilization", "loss"], None),
    # a mean over a trailing window of steps, printed by an SB3 callback (h425's CarRacing notebooks)
    (["remaining_timesteps", "elapsed_time", "mean_reward_last_1000_steps"], "mean_reward_last_1000_steps"),
    (["reward_steps"], None),
])
def test_a_reward_found_by_its_words(keys: list[str], expected: str | None) -> None:
    from advcore.ingest._aliases import reward_by_name

    assert reward_by_name(keys) == expected


def test_real_kaz_archers_team_reward_by_name() -> None:
    # four independent DQN archers (PettingZoo's Knights-Archers-Zombies), written by tf.summary as tensors: each
    # archer's kills and the team's total; TensorBoard's reader (every tensor kept) is the oracle
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # type: ignore[import-untyped]
    from tensorboard.util.tensor_util import make_ndarray  # type: ignore[import-untyped]

    path = corpus("h300-handwritten-iql-dqn-kaz-4-archers-arrow-penalty-kills-fall-from-5-to-1-as-epsilon-decays-never-"
                  "recover/events.out.tfevents.1731626018.MAXPC.10436.16.v2")
    acc = EventAccumulator(str(path), size_guidance={"tensors": 0})
    acc.Reload()
    team = [(e.step, float(make_ndarray(e.tensor_proto))) for e in acc.Tensors("Global/Reward")]
    run = load(path)
    assert run.sources["reward_mean"] == "Global/Reward" and len(team) == 1416
    assert run.frame["step"].to_list() == [s for s, _ in team]
    assert run.frame["reward_mean"].to_list() == pytest.approx([v for _, v in team])


def test_real_sb3_callback_reward_by_name() -> None:
    # an SB3 PPO trading run whose callback logs custom/episode_reward_mean; its entropy falls to 3 % of uniform
    # while that reward climbs (quarter means -2.35 / 0.0002 / 0.73 / 1.03)
    path = corpus("h12-sb3-ppo-jepa-trading-entropy-to-3pct-learns/events.out.tfevents.1771615870.b7d9443f0efc.117062.0")
    expected = [(e.step, e.value) for e in events(path).Scalars("custom/episode_reward_mean")]
    run = load(path)
    assert run.sources["reward_mean"] == "custom/episode_reward_mean"
    got = run.frame.drop_nulls("reward_mean")
    assert got["step"].to_list() == [step for step, _ in expected]
    assert got["reward_mean"].to_list() == pytest.approx([value for _, value in expected])
    findings, _ = run_detectors(run)
    assert "ENTROPY_COLLAPSE" not in {f.id for f in findings if f.severity in ("warn", "error")}


def test_real_carla_ppo_reward_by_name() -> None:
    """CARLA PPO's TensorBoard tags name no trainer's key: the average episodic reward is the reward."""

    path = corpus("h56-carla-vae-ppo-town07-std1-learns/events.out.tfevents.1674058660.SHADOW-N4RR4262.45940.0")
    acc = events(path)
    expected = [(e.step, e.value) for e in acc.Scalars("Average Episodic Reward/info")]
    run = load(path)
    assert run.metadata["reward_by_name"] == "Average Episodic Reward/info"
    got = run.frame.select("step", "reward_mean").drop_nulls().rows()
    assert [s for s, _ in got] == [s for s, _ in expected]
    assert [v for _, v in got] == pytest.approx([v for _, v in expected])


def test_real_tinker_loop_reward_mean_is_no_component() -> None:
    """A hand-written Tinker loop logs ``reward/mean`` next to its components ``reward/f`` and ``reward/g``."""
    import json

    path = corpus("h59-tinker-leetcode-llama3b-compilable-reward-learns/metrics.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    run = load(path)
    assert run.frame["reward_mean"].to_list() == pytest.approx([r["reward/mean"] for r in rows])
    assert run.frame["entropy"].to_list() == pytest.approx([r["policy/entropy"] for r in rows])
    assert "reward/mean" not in run.metrics and {"reward/f", "reward/g"} <= set(run.metrics)


def test_reports_name_the_key_a_reward_was_read_from(capsys: pytest.CaptureFixture[str]) -> None:
    from advcore.cli import main

    path = corpus("h56-carla-vae-ppo-town07-std1-learns/events.out.tfevents.1674058660.SHADOW-N4RR4262.45940.0")
    for fmt in ("human", "markdown"):
        assert main(["scan", "--format", fmt, str(path)]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert "reward_mean read from `Average Episodic Reward/info` by its name" in out, fmt


def test_tianshou_2_names_its_training_returns_under_training(tmp_path: Path) -> None:
    # tianshou 2.x's TensorboardLogger writes training/returns_stat/* where 1.x wrote train/returns_stat/*
    # (a survey PPO run's event file: 200 epochs of both training/ and test/ returns)
    p = tmp_path / "progress.csv"
    p.write_text("step,training/returns_stat/mean,training/returns_stat/std,training/returns_stat/max,"
                 "training/returns_stat/min,test/returns_stat/mean\n"
                 "2048,-64.97,20.1,-30.2,-110.5,-70.0\n4096,-60.41,18.3,-25.0,-101.0,-66.0\n6144,-63.05,19.0,-28.9,-99.4,-64.0\n")
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [-64.97, -60.41, -63.05]
    assert run.frame["reward_max"].to_list() == [-30.2, -25.0, -28.9] and run.frame["return_std"].to_list()[0] == 20.1
    assert run.sources["reward_mean"] == "training/returns_stat/mean"


def test_a_table_of_bare_statistics_named_for_the_reward_is_the_reward() -> None:
    # h349's OpenEnv run: reward_curve.json, one record per step with the batch's mean, max and min reward
    import json

    folder = "h349-unsloth-trl-grpo-qwen25-15b-cognitive-load-manager-1117-reward-calls-0.11-to-0.25-plateau-near-step-max-healthy"
    path = corpus(f"{folder}/reward_curve.json")
    records = json.loads(path.read_text())
    run = load(path)
    assert {run.sources[m] for m in ("reward_mean", "reward_max", "reward_min")} == {"mean", "max", "min"}
    assert run.frame["reward_mean"].to_list() == pytest.approx([r["mean"] for r in records])
    assert run.frame["reward_max"].to_list() == pytest.approx([r["max"] for r in records])
    # the same statistics in a file named for something else are not read as the reward
    raw = RawLog("csv_table", pl.DataFrame({"step": [1.0, 2.0, 3.0], "mean": [0.1, 0.2, 0.3], "max": [1.0, 1.0, 1.0]}))
    assert "reward_mean" not in canonicalize(raw, "episode_length.csv", load_aliases()).frame.columns
    assert canonicalize(raw, "episode_rewards.csv", load_aliases()).sources["reward_mean"] == "mean"


def test_real_cleanrl_script_that_logs_its_return_under_metrics() -> None:
    """A CleanRL PPO trained on a learned reward (katharina-lang/rlhf) logs the true return as
    ``metrics/episodic_return`` beside CleanRL's own ``losses/`` tags: CleanRL's, its return read."""
    path = corpus("h447-cleanrl-ppo-rlhf-from-synthetic-preferences-humanoidstandup-v5-1400-queries-reward-model-"
                  "pearson-0.88-true-return-40k-to-105k-healthy/events.out.tfevents.1738853341.kallisto.81460.0")
    acc = events(path)
    expected = [(e.step, e.value) for e in acc.Scalars("metrics/episodic_return")]
    kl = [(e.step, e.value) for e in acc.Scalars("losses/approx_kl")]
    run = load(path)
    assert run.trainer == "cleanrl" and run.sources["reward_mean"] == "metrics/episodic_return"
    got = run.frame.select("step", "reward_mean").drop_nulls().rows()
    assert [s for s, _ in got] == [s for s, _ in expected]
    assert [v for _, v in got] == pytest.approx([v for _, v in expected])
    got_kl = run.frame.select("step", "kl_step").drop_nulls().rows()
    assert [s for s, _ in got_kl] == [s for s, _ in kl]
    assert [v for _, v in got_kl] == pytest.approx([v for _, v in kl])
