"""NumPy's saved arrays: SB3's ``evaluations.npz``, other archives, and one-array ``.npy`` files. The oracle is
numpy itself on the arrays written (means per evaluation, per step)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from advcore.cli import main
from advcore.ingest import detect, load
from advcore.ingest.formats import numpy_arrays
from tests._real import corpus


def test_sb3_eval_callback_archive(tmp_path: Path) -> None:
    # the arrays EvalCallback._on_step saves (stable_baselines3/common/callbacks.py): timesteps (n,), results and
    # ep_lengths (n, n_eval_episodes), successes when the environment reports is_success
    rng = np.random.default_rng(1)
    timesteps = np.arange(1, 13) * 10_000
    results = rng.normal(np.linspace(-100, -20, 12)[:, None], 5.0, (12, 10))
    successes = rng.random((12, 10)) < np.linspace(0, 0.9, 12)[:, None]
    p = tmp_path / "evaluations.npz"
    np.savez(p, timesteps=timesteps, results=results, ep_lengths=np.full((12, 10), 50), successes=successes)
    assert detect(p) is numpy_arrays.FORMAT
    run = load(p)
    assert run.trainer == "sb3_eval" and run.errors == ()
    assert run.frame["step"].to_list() == timesteps.tolist()
    assert run.frame["reward_mean"].to_list() == pytest.approx(results.mean(axis=1).tolist())
    assert run.frame["success_rate"].to_list() == pytest.approx(successes.mean(axis=1).tolist())
    assert run.sources["reward_mean"] == "results"


def test_other_archives_read_their_longest_arrays(tmp_path: Path) -> None:
    p = tmp_path / "training.npz"
    np.savez(p, episode_rewards=np.arange(30.0), losses=np.ones((30, 4)), eval_rewards=np.arange(3.0))
    run = load(p)
    assert run.frame["reward_mean"].to_list() == list(np.arange(30.0))
    assert run.metadata["unaligned"] == ["eval_rewards"] and run.metadata["arrays"]["losses"] == [30, 4]


def test_returns_per_episode_beside_longer_per_step_rewards(tmp_path: Path) -> None:
    # polionus/rlprj's callback saves the episodes' returns and every step's (reward, done): the returns are
    # the curve, though the per-step array is longer
    p = tmp_path / "AlgPPO_envCartPole_seed0_RETURNS.npz"
    returns = np.array([20.0, 56.0, 23.0, 31.0])
    np.savez_compressed(p, returns=returns, rewards=np.ones((130, 2)))
    run = load(p)
    assert run.frame["reward_mean"].to_list() == list(returns)
    assert run.metadata["unaligned"] == ["rewards"]


def test_one_array_is_a_series_named_by_its_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    rewards = rng.normal(0, 1, 400)
    p = tmp_path / "rewards.npy"
    np.save(p, rewards)
    run = load(p)
    assert run.sources["reward_mean"] == "rewards" and run.frame["reward_mean"].to_list() == pytest.approx(rewards)
    # five seeds of 300 episodes: the longer axis is the step, the seeds are averaged
    seeds = rng.normal(0, 1, (5, 300))
    np.save(p, seeds)
    run = load(p)
    assert run.frame.height == 300 and run.metadata["averaged_axis"] == 5
    assert run.frame["reward_mean"].to_list() == pytest.approx(seeds.mean(axis=0).tolist())


def test_objects_are_never_unpickled_and_damage_costs_the_file(tmp_path: Path) -> None:
    p = tmp_path / "rewards.npy"
    np.save(p, np.array([{"reward": 1.0}], dtype=object), allow_pickle=True)
    run = load(p)
    assert run.frame.height == 0 and "not a NumPy array file advcore can read" in run.errors[0].message
    assert run.errors[0].path == str(p)
    bad = tmp_path / "evaluations.npz"
    bad.write_bytes(b"PK\x03\x04" + bytes(40))
    assert load(bad).errors and load(bad).frame.height == 0


def test_a_folder_scan_keeps_the_curves_and_leaves_out_other_arrays(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "rewards.npy", np.linspace(-10, 10, 100))
    np.save(tmp_path / "observations.npy", np.zeros((1000, 8)))
    main(["scan", "--format", "json", str(tmp_path)])
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [Path(r["path"]).name for r in runs] == ["rewards.npy"]


def test_arrays_too_large_for_a_curve_are_not_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # observations saved beside the curves: neither loaded nor read as one (the bound lowered for the test)
    monkeypatch.setattr(numpy_arrays, "MAX_BYTES", 4096)
    np.save(tmp_path / "observations.npy", np.zeros((1000, 8)))
    run = load(tmp_path / "observations.npy")
    assert run.frame.height == 0 and "too large to be a training curve" in run.errors[0].message
    np.savez(tmp_path / "training.npz", rewards=np.arange(100.0), observations=np.zeros((100, 64)))
    run = load(tmp_path / "training.npz")
    assert run.frame["reward_mean"].to_list() == list(np.arange(100.0)) and run.metadata["unaligned"] == ["observations"]


def test_an_array_named_by_its_runs_settings_is_the_runs_returns(tmp_path: Path) -> None:
    # hanacatic/RL-Project saves each run's episode returns as results/DQN_continous_seed8.npy; a file named by a
    # seed and a metric other than the reward is not
    returns = np.linspace(-35.0, -1.5, 40)
    np.save(tmp_path / "DQN_continous_seed8.npy", returns)
    np.save(tmp_path / "loss_seed8.npy", returns)
    run = load(tmp_path / "DQN_continous_seed8.npy")
    assert run.frame["reward_mean"].to_list() == list(returns)
    assert run.metadata["reward_by_name"] == "DQN_continous_seed8"
    assert "reward_mean" not in load(tmp_path / "loss_seed8.npy").frame.columns


def test_rows_of_step_and_value_are_read_as_such() -> None:
    # Zamiko/Pong-Deep-Learner (ECS 170 Pong homework) saved np.save('rewards.npy', all_rewards) of
    # (frame at which a game ended, the game's return) rows, shape (475, 2); they were averaged over the short axis
    path = corpus("h295-ecs170-handwritten-dqn-pong-td-loss-rebuilt-as-detached-leaf-no-weight-update-epsilon-only"
                  "-rise-plateau-minus-10.5-1M-frames/rewards.npy")
    rows = np.load(path)
    run = load(path)
    assert run.metadata["step_column"] == 0 and "averaged_axis" not in run.metadata
    assert run.frame["step"].to_list() == rows[:, 0].astype(int).tolist()
    assert run.frame["reward_mean"].to_list() == rows[:, 1].tolist()


def test_two_columns_that_both_count_or_neither_are_averaged(tmp_path: Path) -> None:
    # a cumulative count beside a step, or two seeds, are not (step, value) rows
    p = tmp_path / "rewards.npy"
    for pair in (np.column_stack([np.arange(1.0, 51), np.arange(2.0, 102, 2)]),
                 np.random.default_rng(3).normal(0, 1, (50, 2))):
        np.save(p, pair)
        run = load(p)
        assert run.metadata["averaged_axis"] == 2
        assert run.frame["reward_mean"].to_list() == pytest.approx(pair.mean(axis=1).tolist())


def test_rews_is_a_name_for_the_returns() -> None:
    # Refref18/CMPE591_HOMEWORK3: np.save("rews.npy", episode_returns) at the end of a REINFORCE loop
    path = corpus("h310-handwritten-reinforce-running-baseline-pusher-v5-climbs-87-to-53-10k-episodes-healthy/rews.npy")
    returns = np.load(path, allow_pickle=False)
    run = load(path)
    assert run.sources["reward_mean"] == "rews"
    assert run.frame["reward_mean"].to_list() == pytest.approx(returns.astype(float).tolist())


def test_a_file_named_by_its_algorithm_and_seed_holds_the_runs_returns() -> None:
    # Martyanovst/differential-games-rl: rewards/pendulum/ddpg2021.npy, one value per episode (a running mean of
    # the returns), the file named by the algorithm and its seed
    path = corpus("h314-handwritten-ddpg-pendulum-swingup-seed-2021-solves-then-collapses-to-minus-21-at-episode-1313/"
                  "ddpg2021.npy")
    returns = np.load(path, allow_pickle=False)
    run = load(path)
    assert run.sources["reward_mean"] == "ddpg2021"
    assert run.frame["reward_mean"].to_list() == pytest.approx(returns.astype(float).tolist())


def test_an_algorithm_named_with_a_digit_keeps_it() -> None:
    # sfujim/TD3 (the TD3 paper's learning curves): learning_curves/Hopper/TD3_Hopper-v1_4.npy, np.save of the
    # deterministic evaluations' mean return every 5,000 steps, named policy_env_seed; "TD3" was read as "td"
    path = corpus("h390-td3-paper-hopper-v1-seed4-deterministic-evaluations-climb-to-3400-with-thirteen-single-"
                  "evaluation-falls-to-16-healthy/TD3_Hopper-v1_4.npy")
    returns = np.load(path, allow_pickle=False)
    run = load(path)
    assert run.sources["reward_mean"] == "TD3_Hopper-v1_4" and run.steps == len(returns) == 201
    assert run.frame["reward_mean"].to_list() == pytest.approx(returns.astype(float).tolist())


@pytest.mark.parametrize(("stem", "read"), [("ppo_3", True), ("sac", True), ("td3_seed4", True), ("PPO_3", True),
                                            ("TD3_Hopper-v1_4", True), ("A2C_5", True), ("a2c_loss", False),
                                            ("ppo_loss", False), ("dqn_epsilon", False), ("ppo_policy", False)])
def test_only_a_name_of_algorithm_and_number_is_a_curve_of_returns(tmp_path: Path, stem: str, read: bool) -> None:
    path = tmp_path / f"{stem}.npy"
    np.save(path, np.linspace(-100.0, 0.0, 50))
    assert ("reward_mean" in load(path).metrics) is read


def test_a_history_of_returns_is_the_reward() -> None:
    # andresbecker/Deep_RL_Actor_Critic Models/history.npz: np.savez of a TF2 actor-critic's per-episode return
    # (total_episode_reward_history) and its running mean (avg_episode_reward_history), 5,200 episodes; the mean
    # of the episodes is the one read, as ep_rew_mean is
    path = corpus("h401-tf2-one-step-actor-critic-lunarlander-v2-5200-episodes-climbs-to-avg64-175-at-4823-then-"
                  "collapses-to-minus-130-at-4915-and-stays-to-the-end/history.npz")
    arrays = np.load(path, allow_pickle=False)
    run = load(path)
    assert run.sources["reward_mean"] == "avg_episode_reward_history" and run.steps == 5200
    assert run.frame["reward_mean"].to_list() == pytest.approx(arrays["avg_episode_reward_history"].tolist())
