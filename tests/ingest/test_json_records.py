from __future__ import annotations

import json
from pathlib import Path

import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import columnar_json, json_records, trainer_state

from tests._real import corpus


def _write(tmp_path: Path, doc: object, name: str = "training_log.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc, indent=2))
    return p


# -- a list of per-iteration records ---------------------------------------------------------------


def test_list_of_records_takes_its_step_from_epoch(tmp_path: Path) -> None:
    rows = [{"epoch": 1, "avg_reward": 0.5, "success_rate": 0.8, "timestamp": "2026-04-18T21:35:52"},
            {"epoch": 2, "avg_reward": "bad", "success_rate": 0.9, "timestamp": "2026-04-18T21:47:32"},
            {"epoch": 3, "avg_reward": 0.7, "success_rate": 1.0, "timestamp": "2026-04-18T21:51:47"}]
    p = _write(tmp_path, rows)
    assert detect(p) is json_records.FORMAT
    run = load(p)
    assert run.format == "json_records" and not run.errors
    assert run.sources["step"] == "epoch" and run.metadata["non_numeric"] == ["timestamp"]
    raw = json_records.read(p)  # the reader parses; the counter becomes the step at canonicalization
    assert raw.frame["epoch"].to_list() == [1, 2, 3] and run.frame["step"].to_list() == [1, 2, 3]
    assert raw.frame["avg_reward"].to_list() == [0.5, None, 0.7]  # a bad value costs that value
    assert raw.frame["success_rate"].to_list() == [0.8, 0.9, 1.0]
    assert run.frame["reward_mean"].to_list() == [0.5, None, 0.7]  # epoch 2 keeps its success rate
    assert run.frame["success_rate"].to_list() == [0.8, 0.9, 1.0]


def test_list_without_an_integer_step_key_counts_records(tmp_path: Path) -> None:
    p = _write(tmp_path, [{"epoch": 0.5, "mean_reward": 1.0}, {"epoch": 1.0, "mean_reward": 2.0},
                          {"phase": "eval", "mean_reward": 9.0}])
    run = load(p)
    assert "step_key" not in run.metadata and run.metadata["evaluation_records"] == 1
    assert run.frame["step"].to_list() == [1, 2]  # the evaluation record has no training metric
    assert run.frame["reward_mean"].to_list() == [1.0, 2.0]


def test_lists_with_a_step_stay_log_history_and_group_stats_stay_columnar(tmp_path: Path) -> None:
    assert detect(_write(tmp_path, [{"loss": 0.1, "step": 1}], "a.json")) is trainer_state.FORMAT
    stats = [{"step": 0, "n_positive": 1, "n_negative": 1, "n_degenerate": 2}]
    assert detect(_write(tmp_path, stats, "b.json")) is columnar_json.FORMAT
    assert detect(_write(tmp_path, {"a": [1, 2], "b": [3, 4]}, "c.json")) is columnar_json.FORMAT
    unequal = _write(tmp_path, {"a": [1, 2], "b": [1]}, "d.json")  # no step array: nothing to join on
    assert detect(unequal) is columnar_json.FORMAT and load(unequal).metadata["unaligned"] == ["b"]


def test_not_a_list_of_objects(tmp_path: Path) -> None:
    p = _write(tmp_path, [{"epoch": 1, "avg_reward": 0.5}, 3])
    raw = json_records.read(p)
    assert raw.frame.height == 0 and "entry 2 is int" in raw.errors[0].message


# -- an object of record groups --------------------------------------------------------------------

SNAPSHOT = {"policy_loss": -0.01, "value_loss": 0.7, "entropy": -4.0, "clip_fraction": 0.1, "approx_kl": 0.01}


def _groups_doc() -> dict[str, object]:
    later = {**SNAPSHOT, "entropy": -4.5, "approx_kl": 0.02}
    return {
        "ep_rewards": [1.0, 3.0, "nan?", 10.0, 20.0, 30.0],
        "ep_lengths": [5, 6, 7, 8, 9, 10],
        "ep_timesteps": [40, 90, 100, 150, 200, 260],
        "eval_rewards": [50.0, 60.0],
        "eval_timesteps": [100, 200],
        "notes": [1, 2, 3],
        "losses": [{"step": 101, **SNAPSHOT}, {"step": 151, **SNAPSHOT}, {"step": 201, **later},
                   {"step": "?", **later}],
        "seed": 7,
    }


def test_groups_joined_on_the_update_steps(tmp_path: Path) -> None:
    p = _write(tmp_path, _groups_doc())
    # an object starts like a columnar one: columnar_json reads it once and hands the groups over
    assert detect(p) is columnar_json.FORMAT and load(p).format == json_records.NAME
    raw = json_records.read(p)
    assert raw.trainer == "sb3_callback" and not raw.errors
    f = raw.frame
    # rows: the snapshots (the repeat at 151 dropped), the evaluations on their own steps, and the
    # episodes after the last snapshot on the step of the last of them
    assert f["step"].to_list() == [100, 101, 200, 201, 260]
    assert f["ep_rewards"].to_list() == [None, 2.0, None, 15.0, 30.0]  # the bad value costs that value
    assert f["ep_lengths"].to_list() == [None, 6.0, None, 8.5, 10.0]
    assert f["eval/rewards"].to_list() == [50.0, None, 60.0, None, None]
    assert f["approx_kl"].to_list() == [None, 0.01, None, 0.02, None]
    assert raw.metadata["repeated_records"] == 1 and raw.metadata["entries_without_step"] == 1
    assert raw.metadata["unaligned"] == ["notes"] and raw.metadata["seed"] == 7
    assert raw.metadata["rows_from"] == "losses"
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [2.0, 15.0, 30.0]
    assert run.frame["entropy"].to_list() == [4.0, 4.5, None]  # SB3's entropy loss, negated
    assert run.frame["kl_step"].to_list() == [0.01, 0.02, None]
    assert run.frame["clip_frac"].to_list() == [0.1, 0.1, None]
    assert run.has("value_loss") and not any(m.startswith("eval") for m in run.metrics)


def test_groups_without_records_join_arrays_on_the_coarsest_steps(tmp_path: Path) -> None:
    doc = {"rewards": [1.0, 2.0, 3.0, 4.0], "timesteps": [1, 2, 2, 9],
           "kl": [0.1, 0.2], "update_steps": [2, 4]}
    p = _write(tmp_path, doc)
    assert detect(p) is columnar_json.FORMAT and load(p).format == json_records.NAME
    raw = json_records.read(p)
    assert raw.trainer is None and raw.metadata["rows_from"] == "update"
    assert raw.frame["step"].to_list() == [2, 4, 9]
    assert raw.frame["rewards"].to_list() == [2.0, None, 4.0]
    assert raw.frame["kl"].to_list() == [0.1, 0.2, None]


def test_a_key_two_groups_share_is_named_by_its_group(tmp_path: Path) -> None:
    doc = {"loss": [1.0, 2.0, 3.0], "steps": [1, 2, 3], "updates": [{"step": 3, "loss": 0.5}]}
    raw = json_records.read(_write(tmp_path, doc))
    assert set(raw.frame.columns) == {"step", "steps/loss", "updates/loss"}
    assert raw.frame["steps/loss"].to_list() == [2.0]


def _pickled(v: float) -> dict[str, object]:
    return {"dtype": "float64", "py/object": "numpy.float64", "value": v}


def test_sacred_info_arrays_lie_on_their_own_time_steps(tmp_path: Path) -> None:
    """sacred's info.json (PyMARL): each metric's time steps in <name>_T; numpy scalars wrapped by jsonpickle."""
    doc = {"critic_loss": [0.5, 0.4, 0.3], "critic_loss_T": [10, 110, 210],
           "return_mean": [_pickled(1.0), _pickled(2.0)], "return_mean_T": [100, 200],
           "return_std": [_pickled(0.5), _pickled(0.4)], "return_std_T": [100, 200],
           "ep_length_mean": [30.0, 25.0], "ep_length_mean_T": [100, 200],
           "epsilon": [0.05, 0.05], "epsilon_T": [100, 200],
           "test_return_mean": [_pickled(0.1), _pickled(1.5), _pickled(2.5)], "test_return_mean_T": [10, 110, 210]}
    p = _write(tmp_path, doc, "info.json")
    run = load(p)
    assert run.trainer == "pymarl" and not run.errors
    # every metric stays on its own time steps (none is averaged into another's): the rows are their union
    assert run.frame["step"].to_list() == [10, 100, 110, 200, 210]
    assert run.frame.select("step", "reward_mean").drop_nulls().rows() == [(100, 1.0), (200, 2.0)]
    assert run.frame.select("step", "return_std").drop_nulls().rows() == [(100, 0.5), (200, 0.4)]
    assert run.frame.select("step", "value_loss").drop_nulls().rows() == [(10, 0.5), (110, 0.4), (210, 0.3)]
    raw = json_records.read(p)  # the test episodes stay an evaluation on their own steps
    assert raw.frame.select("step", "eval/return_mean").drop_nulls().rows() == [(10, 0.1), (110, 1.5), (210, 2.5)]


def test_real_pymarl_sacred_info() -> None:
    """checked: 204 return_mean points at return_mean_T, 205 entropy points at entropy_T."""
    path = corpus("h70-pymarl-lica-mmm2-learns/info.json")
    doc = json.loads(path.read_text())
    run = load(path)
    assert run.trainer == "pymarl" and not run.errors
    reward = run.frame.select("step", "reward_mean").drop_nulls()
    assert reward["step"].to_list() == doc["return_mean_T"]
    assert reward["reward_mean"].to_list() == [v["value"] for v in doc["return_mean"]]
    assert run.frame["entropy"].drop_nulls().len() == len(doc["entropy"])


def test_real_mcp_tool_list_of_epochs() -> None:
    path = corpus("h2-custom-grpo-mcp-tool-qwen15-no-signal/training_log.json")
    records = json.loads(path.read_text())
    run = load(path)
    assert run.format == "json_records" and not run.errors
    assert run.frame["step"].to_list() == [r["epoch"] for r in records]
    assert run.frame["reward_mean"].to_list() == [r["avg_reward"] for r in records]


def test_real_sb3_callback_arm_drawing() -> None:
    path = corpus("h5-sb3-ppo-arm-drawing-converges/training_log.json")
    doc = json.loads(path.read_text())
    # Independently: the distinct logger snapshots, and the episodes between consecutive ones.
    snapshots: list[dict[str, float]] = []
    for r in doc["losses"]:
        if not snapshots or {k: v for k, v in r.items() if k != "step"} != \
                {k: v for k, v in snapshots[-1].items() if k != "step"}:
            snapshots.append(r)
    assert len(doc["losses"]) == 1194 and len(snapshots) == 292
    episodes = list(zip(doc["ep_timesteps"], doc["ep_rewards"], strict=True))
    expected: list[float] = []
    previous = -1
    for snap in snapshots:
        inside = [r for t, r in episodes if previous < t <= snap["step"]]
        expected.append(sum(inside) / len(inside))
        previous = snap["step"]
    after = [r for t, r in episodes if t > previous]
    run = load(path)
    assert run.format == "json_records" and run.trainer == "sb3_callback" and not run.errors
    steps = [s["step"] for s in snapshots] + [max(doc["ep_timesteps"])]
    assert run.frame["step"].to_list() == steps
    assert run.frame["reward_mean"].to_list() == pytest.approx(expected + [sum(after) / len(after)])
    assert run.frame["entropy"].to_list()[:-1] == pytest.approx([-s["entropy"] for s in snapshots])
    assert run.frame["kl_step"].to_list()[:-1] == pytest.approx([s["approx_kl"] for s in snapshots])
    # -4.27 at the first update: minus the entropy of a 3-D unit-std Gaussian, 3 x 0.5 ln(2 pi e)
    assert run.frame["entropy"][0] == pytest.approx(4.2728, abs=1e-3)
    assert not any(m.startswith("eval") for m in run.metrics)


def test_episode_counters_are_step_arrays(tmp_path: Path) -> None:
    # a hand-written DQN's summary: per-episode arrays on `episodes`, Q estimates every 10th episode
    # on `q_eval_episodes` (h104 Double DQN on LunarLander), plus scalars
    doc = {"seed": 42, "episodes": list(range(1, 31)), "episode_rewards": [float(e) for e in range(1, 31)],
           "q_eval_episodes": [10, 20, 30], "average_q_values": [0.5, 1.5, 2.5]}
    p = _write(tmp_path, doc)
    run = load(p)
    assert run.format == json_records.NAME and run.errors == ()
    assert run.frame["step"].to_list() == [10, 20, 30]  # the coarsest group's steps
    # the episodes since the previous point, averaged: 1..10, 11..20, 21..30
    assert run.frame["reward_mean"].to_list() == [5.5, 15.5, 25.5]


def test_real_double_dqn_summary_with_two_episode_axes() -> None:
    path = corpus("h104-handwritten-double-dqn-lunarlander-solves/training_metrics.json")
    doc = json.loads(path.read_text())
    run = load(path)
    assert run.errors == ()
    assert run.frame["step"].to_list() == doc["q_eval_episodes"]
    # each point: the mean reward of the episodes since the previous one
    edges = [0, *doc["q_eval_episodes"]]
    want = [sum(r for e, r in zip(doc["episodes"], doc["episode_rewards"], strict=True) if lo < e <= hi)
            / sum(1 for e in doc["episodes"] if lo < e <= hi) for lo, hi in zip(edges, edges[1:], strict=False)]
    assert run.frame["reward_mean"].to_list() == pytest.approx(want, rel=1e-12)


def test_real_pymarl_q_learner_td_loss_is_the_critics_loss() -> None:
    # PyMARL's q_learner logs the TD loss as `loss` on `loss_T` (h101 VDN on mobility-on-demand)
    path = corpus("h101-pymarl-vdn-amod-driver-td-loss-blowup-return-collapse/info.json")
    doc = json.loads(path.read_text())
    run = load(path)
    loss = run.frame.select("step", "value_loss").drop_nulls()
    assert run.sources["value_loss"] == "loss"
    assert loss["step"].to_list() == doc["loss_T"]
    assert loss["value_loss"].to_list() == [v if isinstance(v, float) else v["value"] for v in doc["loss"]]


def test_a_config_object_before_per_episode_records(tmp_path: Path) -> None:
    # h200's PaddlePaddle DQN: {"config": {...}, "training": [per-episode records], "validation": [...]}
    training = [{"episode": i, "score": 10 * i, "steps": 40 + i, "epsilon": 0.5} for i in range(6)]
    validation = [{"episode": 0, "mean_score": 5.0}, {"episode": 5, "mean_score": 55.0}]
    p = _write(tmp_path, {"config": {"seed": 42, "gamma": 0.99}, "training": training, "validation": validation})
    assert detect(p) is columnar_json.FORMAT
    run = load(p)
    assert not run.errors
    frame = run.frame.sort("step")
    assert frame["step"].to_list() == list(range(6))  # the episode numbers
    assert frame["reward_mean"].to_list() == [10.0 * i for i in range(6)]


def test_per_episode_arrays_beside_records_without_a_step(tmp_path: Path) -> None:
    # h202's hand-written PPO: 200 per-episode arrays and 26 per-update records with no step key
    doc = {"episode_rewards": [0.1 * i for i in range(8)], "episode_lengths": [273] * 8,
           "training_metrics": [{"loss": 0.5, "policy_loss": -0.01}] * 3}
    p = _write(tmp_path, doc, "final_metrics.json")
    run = load(p)
    assert not run.errors and run.metadata["unaligned"] == ["training_metrics"]
    assert run.frame.sort("step")["reward_mean"].to_list() == doc["episode_rewards"]


def test_a_summary_with_nested_objects_before_its_step_records(tmp_path: Path) -> None:
    # h236's hand-written PPO summary: held-out scores with their per-component object before the
    # per-step records; the summary is metadata, the records the rows
    doc = {"algorithm": "ppo", "steps": 3, "regime": {"batch": 8, "lr": 1e-05},
           "held_out_before": {"reward_mean": 0.84, "components": {"budget": 0.85, "coverage": 0.59}},
           "final_kl": 6.78, "kl_trajectory": [0.0, 0.008, 2.05],
           "step_metrics": [{"reward_mean": 0.998, "kl": 0.0, "grad_norm": 58.6, "step": 0},
                            {"reward_mean": 0.792, "kl": 0.008, "grad_norm": 138.5, "step": 1},
                            {"reward_mean": 0.85, "kl": 2.05, "grad_norm": 61.0, "step": 2}]}
    p = _write(tmp_path, doc, "ppo.json")
    assert detect(p) is columnar_json.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == [0, 1, 2]
    assert run.frame["kl"].to_list() == [0.0, 0.008, 2.05] and run.frame["reward_mean"].to_list() == [0.998, 0.792, 0.85]


def test_real_hand_written_ppo_summary_with_step_metrics() -> None:
    """h236-handwritten-ppo-value-head-qwen3-0.6b-lora-shop-kl-to-ref-blows-up-no-gain: 30 per-step records
    after the held-out summary; the KL to the reference jumps to 2.05 at step 8 (json's own values)."""
    path = corpus("h236-handwritten-ppo-value-head-qwen3-0.6b-lora-shop-kl-to-ref-blows-up-no-gain/ppo.json")
    records = json.loads(path.read_text())["step_metrics"]
    run = load(path)
    assert run.frame["step"].to_list() == [r["step"] for r in records] == list(range(30))
    assert run.frame["kl"].to_list() == [r["kl"] for r in records] and records[8]["kl"] == 2.046875


def test_the_longest_arrays_lie_on_their_positions_when_only_evaluations_have_steps(tmp_path: Path) -> None:
    # a SAC loop: one return per episode, a loss per episode once updates start (shorter: where it starts is not
    # written), one evaluation at episode 4
    p = tmp_path / "training_log.json"
    p.write_text(json.dumps({"episode_reward": [-8.0, -7.5, 3.0, 40.0, 45.0], "critic_loss": [0.2, 0.1, 0.05],
                             "eval_reward": [50.0], "eval_episodes": [4]}))
    run = load(p)
    assert run.frame["step"].to_list() == [1, 2, 3, 4, 5]
    assert run.frame["reward_mean"].to_list() == [-8.0, -7.5, 3.0, 40.0, 45.0]
    assert run.metadata["unaligned"] == ["critic_loss"]
    assert run.metadata["groups"] == {"": 5, "eval": 1} and "eval/reward" in run.metadata["unmapped"]
    # an evaluation on another axis (environment steps beside 5 episodes) is left out
    q = tmp_path / "other" / "training_log.json"
    q.parent.mkdir()
    q.write_text(json.dumps({"training_returns": [1.0, 2.0, 3.0, 4.0, 5.0],
                             "eval_returns": [{"step": 552, "mean_return": 6.2}, {"step": 1104, "mean_return": 9.0}]}))
    run = load(q)
    assert run.frame["step"].to_list() == [1, 2, 3, 4, 5] and run.metadata["other_axis"] == ["eval_returns"]


def test_real_sac_rideshare_episode_returns_beside_an_evaluation() -> None:
    """h265-handwritten-sac-rideshare-pricing-learns-after-warmup-holds: 300 ``episode_reward`` (one per
    episode), 280 ``critic_loss`` (updates from episode 21), one evaluation at episode 200; the returns by
    position, compared with json's, and the README's "first 20 episodes -8,622, last 20 episodes 42,643"."""
    path = corpus("h265-handwritten-sac-rideshare-pricing-learns-after-warmup-holds/training_log.json")
    doc = json.loads(path.read_text())
    run = load(path)
    rewards = run.frame["reward_mean"].to_list()
    assert run.frame["step"].to_list() == list(range(1, 301)) and rewards == doc["episode_reward"]
    assert round(sum(rewards[:20]) / 20) == -8622 and round(sum(rewards[-20:]) / 20) == 42643
    assert run.metadata["groups"] == {"": 300, "eval": 1} and run.metadata["unaligned"] == ["critic_loss", "actor_loss", "alpha"]


def test_real_highway_dqn_returns_by_episode_and_evaluations_by_environment_step() -> None:
    """h265-double-dueling-dqn-highway-50k-steps-train-return-rises-greedy-eval-unstable-late: 2,617 training
    returns by episode; the 52 greedy evaluations count environment steps (552 to 49,489), another axis."""
    path = corpus("h265-double-dueling-dqn-highway-50k-steps-train-return-rises-greedy-eval-unstable-late/training_log.json")
    doc = json.loads(path.read_text())
    run = load(path)
    assert run.frame.height == len(doc["training_returns"]) == 2617
    assert run.frame["reward_mean"].to_list() == doc["training_returns"]
    assert run.metadata["other_axis"] == ["eval_returns"]


def test_an_object_keyed_by_step_is_one_record_per_step(tmp_path: Path) -> None:
    p = tmp_path / "train_logs.json"
    p.write_text(json.dumps({"0": {"reward": -1.5, "kl": 0.0}, "2": {"reward": -1.0, "kl": 0.01},
                             "1": {"reward": -1.2, "kl": 0.005, "metrics": {"mae": 7.5}}}))
    assert detect(p) is json_records.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == [0, 1, 2]
    assert run.frame["reward_mean"].to_list() == [-1.5, -1.2, -1.0]
    assert run.metadata["layout"] == "keyed by step"
    # a key that is not a whole number makes it another layout (here: no arrays at all)
    p.write_text(json.dumps({"0": {"reward": -1.5}, "final": {"reward": -1.0}}))
    assert load(p).frame.height == 0


def test_real_deepseekrl_extended_train_logs_keyed_by_round() -> None:
    """h267-handwritten-grpo-qwen25vl7b-ultrasound-probe-pose-task-reward-pinned-at-floor-format-only-gains:
    brendanhogan/DeepSeekRL-Extended's ``train_logs.json``, one object per round '0'..'291'."""
    path = corpus("h267-handwritten-grpo-qwen25vl7b-ultrasound-probe-pose-task-reward-pinned-at-floor-format-only-"
                  "gains/train_logs.json")
    doc = json.loads(path.read_text())
    run = load(path)
    assert run.frame["step"].to_list() == list(range(292)) == sorted(int(k) for k in doc)
    assert run.frame["reward_mean"].to_list() == [doc[str(s)]["reward"] for s in range(292)]
    assert run.frame["reward/numeric"].to_list() == [doc[str(s)]["rewards/numeric"] for s in range(292)]
    assert run.frame["reward/numeric"].to_list().count(-3.0) == 229  # by hand: the clamp floor on 229 rounds
