from __future__ import annotations

import json
from pathlib import Path

import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import columnar_json

from tests._real import corpus, real
from tests.detectors._fixtures import fired


def test_dict_of_arrays(tmp_path: Path) -> None:
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"rewards_avg": [0.1, "0.2", None], "kl_avg": [0, 0.01, 0.02], "seed": 3}))
    assert detect(p) is columnar_json.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == [1, 2, 3]
    assert run.frame["reward_mean"].to_list() == [0.1, 0.2, None]
    assert run.metadata["seed"] == 3


def test_scalars_before_the_arrays(tmp_path: Path) -> None:
    p = tmp_path / "ppo_metrics.json"
    p.write_text(json.dumps({"beta": 0.05, "seed": 42, "tag": "run a", "done": True, "note": None,
                             "rewards_curve": [1.0, 2.0], "kl_curve": [0.0, 3.0]}, indent=2))
    assert detect(p) is columnar_json.FORMAT
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [1.0, 2.0] and run.metadata["beta"] == 0.05
    # a trainer_state.json opens with scalars too: its log_history stays trainer_state's
    q = tmp_path / "trainer_state.json"
    q.write_text(json.dumps({"best_metric": None, "epoch": 1.0, "log_history": [{"step": 1, "reward": 0.5}]}))
    assert detect(q) is not columnar_json.FORMAT


def test_real_ppo_summary_with_reward_curve() -> None:
    """checked: 200 entries in rewards_curve (TRL PPO's objective/scores), no step column."""
    path = corpus("h69-trl024-ppo-gpt2-imdb-beta02-stable-learns/ppo_metrics.json")
    doc = json.loads(path.read_text())
    run = load(path)
    assert not run.errors and run.frame["step"].to_list() == list(range(1, 201))
    assert run.frame["reward_mean"].to_list() == doc["rewards_curve"]
    assert "kl" not in run.frame.columns and "kl_curve" in run.metadata["unmapped"]


def test_a_list_of_names_describes_the_run(tmp_path: Path) -> None:
    p = tmp_path / "history.json"
    p.write_text(json.dumps({"rewards": [-3.0, -2.0, -1.0], "topologies": ["buck", "boost"], "n_iterations": 3}))
    run = load(p)
    assert not run.errors and run.frame["reward_mean"].to_list() == [-3.0, -2.0, -1.0]
    assert run.metadata["topologies"] == ["buck", "boost"]


def test_real_history_of_episode_rewards_beside_a_list_of_names() -> None:
    path = corpus("h88-handwritten-ppo-circuit-surrogate-never-learns/multi_topo_rl_history.json")
    doc = json.loads(path.read_text())
    run = load(path)
    assert len(doc["rewards"]) == 5000 and len(doc["topologies"]) == 6  # the corpus entry's counts
    assert not run.errors and run.frame["reward_mean"].to_list() == doc["rewards"]


def test_unequal_arrays_and_bad_json(tmp_path: Path) -> None:
    p = tmp_path / "m.json"
    p.write_text('{"a": [1, 2], "b": [1]}')  # no step array: the longer array is read, the other listed
    raw = columnar_json.read(p)
    assert not raw.errors and raw.frame.columns == ["a"] and raw.metadata["unaligned"] == ["b"]
    # an array named like a return per episode gives the rows, however long the others (per-update losses)
    p.write_text('{"loss": [1, 2, 3, 4, 5], "reward_per_episode": [-50, -40, -35], "win_rate": [0.2]}')
    raw = columnar_json.read(p)
    assert raw.frame["reward_per_episode"].to_list() == [-50, -40, -35]
    assert raw.metadata["unaligned"] == ["loss", "win_rate"]
    q = tmp_path / "t.json"
    q.write_text('{"a": [1, 2,\n')
    e = load(q).errors[0]
    assert e.line is not None


def test_group_stat_records_per_micro_batch(tmp_path: Path) -> None:
    rows = [
        {"step": 0, "n_positive": 0, "n_negative": 0, "n_degenerate": 4, "n_groups": 2, "mean_pos_adv": 0.0},
        {"step": 0, "n_positive": 1, "n_negative": 1, "n_degenerate": 2, "n_groups": 2, "mean_pos_adv": 0.7},
        {"step": 1, "n_positive": 2, "n_negative": 2, "n_degenerate": 0, "n_groups": 2, "mean_pos_adv": 0.7},
    ]
    p = tmp_path / "g.json"
    p.write_text(json.dumps(rows, indent=2))
    assert detect(p) is columnar_json.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == [1, 2]  # the trainer's global_step during the step, + 1
    assert run.frame["zero_variance_group_frac"].to_list() == [0.75, 0.0]


def test_real_countdown_arrays() -> None:
    run = load(real("rlgrpo-countdown-healthy/grpo_metrics.json"))
    assert run.steps == 120 and run.has("reward_mean", "kl")
    assert run.frame["reward_mean"][0] == pytest.approx(0.19843749999999985)


def test_real_rho_grpo_group_stats() -> None:
    run = load(real("grpo-dynamics-gate2-rho1-seed42/rho_grpo_logs.json"))
    assert run.steps == 200 and run.metadata["records_per_step"] == 2
    # SOURCE.md: 1290 of 1600 samples sit in degenerate groups (8 samples per step)
    assert (run.frame["zero_variance_group_frac"] * 8).sum() == pytest.approx(1290)
    csd = load(real("grpo-dynamics-gate2-rho1-seed42/csd_logs.json"))
    assert csd.steps == 200 and csd.frame["step"][0] == 1


def test_real_hand_written_a2c_lists_of_plural_names() -> None:
    # one list per metric, plural: rewards, entropies, advantages, critic_losses (h104 A2C on a cellular
    # automaton); the reward is 2000.0 at every episode: no floor (a positive level never left), no signal
    path = corpus("h104-handwritten-a2c-ca-pattern-reward-pinned-2000/training_metrics.json")
    doc = json.loads(path.read_text())
    run = load(path)
    assert run.frame["entropy"].to_list() == doc["entropies"]
    assert run.frame["adv_mean"].to_list() == doc["advantages"]
    assert run.frame["value_loss"].to_list() == doc["critic_losses"]
    assert set(doc["rewards"]) == {2000.0}
    found = fired(run)
    assert "REWARD_FLOOR" not in found
    assert f"the reward was 2000 at all {len(doc['rewards'])} logged steps" in found["DEAD_FROM_START"].message


def test_config_objects_holding_lists_before_the_arrays(tmp_path: Path) -> None:
    # a configuration object may hold short lists of settings (a start point) before the per-episode arrays
    p = tmp_path / "training_log.json"
    p.write_text(json.dumps({"training_config": {"num_episodes": 3, "start_point": [1.0, 1.0, 0.0],
                                                 "nested": {"goal": [2.0, 2.0]}},
                             "final_results": {"success_count": 2},
                             "episode_rewards": [-5.0, 1.5, 3.0], "episode_lengths": [10, 8, 6]}, indent=2))
    assert detect(p) is columnar_json.FORMAT
    assert load(p).frame["reward_mean"].to_list() == [-5.0, 1.5, 3.0]


def test_real_tabular_q_log_with_a_config_of_lists() -> None:
    """h258-tabular-q-mir100-gazebo-fixed-goal-2000-episodes-success-5-to-62pct: training_config (with
    start_point and destination_point lists) and final_results before 2,000 episode rewards and lengths."""
    path = corpus("h258-tabular-q-mir100-gazebo-fixed-goal-2000-episodes-success-5-to-62pct/training_log.json")
    doc = json.loads(path.read_text())
    run = load(path)
    assert run.format == columnar_json.NAME and len(doc["episode_rewards"]) == 2000
    assert run.frame["reward_mean"].to_list() == doc["episode_rewards"]
    assert run.frame["step"].to_list() == list(range(1, 2001))


def test_a_bare_array_of_numbers_is_one_series_named_by_its_file(tmp_path: Path) -> None:
    # json.dump(episode_rewards, f) of a hand-written loop, on one line or indented
    rewards = [-162, -147.5, -132, 1e3, -117]
    for name, text in (("episode_rewards.json", json.dumps(rewards)), ("reward_history.json", json.dumps(rewards, indent=2))):
        p = tmp_path / name
        p.write_text(text)
        assert detect(p) is columnar_json.FORMAT, name
        run = load(p)
        assert run.frame["reward_mean"].to_list() == [float(v) for v in rewards] and run.sources["reward_mean"] == p.stem
    # a logger's bracketed date opens no array of numbers
    q = tmp_path / "training.log"
    q.write_text("[2023-05-10 14:13:27,593] [WARNING] [runner.py:190:fetch_hostfile] no hostfile\n")
    assert not columnar_json.sniff(q, q.read_text())


def test_arrays_one_object_down(tmp_path: Path) -> None:
    # RLlib results dumped by hand: {"training_progress": {...arrays}, "performance_summary": {...}}
    p = tmp_path / "training_metrics.json"
    doc = {"training_progress": {"iterations": [0, 1, 2, 3], "episode_rewards": [0.0, 5.5, 7.0, 9.25],
                                 "policy_losses": [1.0, 0.5, 0.4, 0.3]},
           "performance_summary": {"average_reward": 5.4, "best_reward": 9.25}, "note": "market maker"}
    p.write_text(json.dumps(doc, indent=2))
    assert detect(p) is columnar_json.FORMAT
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [0.0, 5.5, 7.0, 9.25] and run.metadata["note"] == "market maker"


def test_real_connect4_win_rate_is_a_success_rate() -> None:
    """h265-connect4-reinforce-pretrained-transformer-vs-pool-win-rate-erodes: parallel lists with ``win_rate``
    (the share of each group's 20 games won, multiples of 0.05), read as the success rate, compared with json's."""
    path = corpus("h265-connect4-reinforce-pretrained-transformer-vs-pool-win-rate-erodes/training_log.json")
    doc = json.loads(path.read_text())
    run = load(path)
    assert run.frame["success_rate"].to_list() == doc["win_rate"] and run.frame.height == 500
    assert all(round(v * 20, 9) == round(v * 20) for v in doc["win_rate"])


def test_real_history_list_is_read_as_its_metric() -> None:
    """h357's tabular Q-learning blackjack: training_results.json keeps ``win_rate_history`` (the win rate of each
    1,000 hands, 45 of them) beside its hyperparameters and Q-table: the list of the win rate, a success rate."""
    path = corpus("h357-tabular-qlearning-blackjack-50k-hands-win-rate-29-to-43pct-basic-strategy-healthy/"
                  "training_results.json")
    doc = json.loads(path.read_text())
    run = load(path)
    assert run.sources["success_rate"] == "win_rate_history"
    assert run.frame["success_rate"].to_list() == doc["win_rate_history"] and run.frame.height == 45


def test_a_history_suffix_names_no_other_metric(tmp_path: Path) -> None:
    # a key with the suffix is read as the key without it; a key whose stem names nothing stays unread
    p = tmp_path / "results.json"
    p.write_text(json.dumps({"win_rate_history": [0.1, 0.2, 0.3], "mood_history": [1, 2, 3]}))
    run = load(p)
    assert run.frame["success_rate"].to_list() == [0.1, 0.2, 0.3]
    assert run.metadata["unmapped"] == ["mood_history"]


def test_sacred_metrics_json_reads_each_series_on_its_own_steps(tmp_path: Path) -> None:
    # sacred's FileStorageObserver metrics.json (PyMARL / EPyMARL runs log through _run.log_scalar): per series its
    # steps, timestamps and values; the learner's loss is logged at other steps than the runner's returns
    def series(steps: list[int], values: list[float]) -> dict[str, list[object]]:
        return {"steps": steps, "timestamps": ["2025-01-24T16:56:26.0"] * len(steps), "values": values}

    runner = [10_000 * k for k in range(1, 6)]
    doc = {"return_mean": series(runner, [0.5, 0.0, 0.25, 1.0, 2.0]), "return_std": series(runner, [0.1] * 5),
           "ep_length_mean": series(runner, [1000.0] * 5), "epsilon": series(runner, [0.5, 0.05, 0.05, 0.05, 0.05]),
           "loss": series([12_000, 32_000], [1.5, 0.7])}
    p = tmp_path / "metrics.json"
    p.write_text(json.dumps(doc))
    run = load(p)
    assert run.trainer == "pymarl" and run.errors == ()
    rows = dict(zip(run.frame["step"].to_list(), run.frame["reward_mean"].to_list(), strict=True))
    assert {s: rows[s] for s in runner} == dict(zip(runner, [0.5, 0.0, 0.25, 1.0, 2.0], strict=True))
    assert run.frame.filter(run.frame["step"] == 32_000)["value_loss"].to_list() == [0.7]


def test_real_returns_per_episode_beside_a_win_rate_per_hundred() -> None:
    # Emilianogith's DDPG+HER (HGR) on FetchReach: 800 episodes' returns and losses, a greedy win rate every 100
    path = corpus("h372-handwritten-ddpg-her-hgr-fetchreach-800-episodes-return-minus-50-to-minus-35-greedy-win-rate-"
                  "0.18-to-1.0-by-episode-300-healthy/training_logs.json")
    doc = json.loads(path.read_text())
    run = load(path)
    assert not run.errors and run.frame["reward_mean"].to_list() == doc["reward_per_episode"]
    assert run.frame["value_loss"].to_list() == pytest.approx(doc["critic_loss"])
    assert run.unread["unaligned"] == ["training_time", "win_rate"] and len(doc["win_rate"]) == 8
