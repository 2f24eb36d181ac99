from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import tensorboard

from tests._real import REAL, corpus, events


def _event(run: str) -> Path:
    found = sorted((REAL / run).glob("events.out.tfevents.*")) if (REAL / run).is_dir() else []
    if not found:
        pytest.skip(f"real log not found under {REAL / run}")
    return found[0]


def test_corrupt_and_empty_event_file(tmp_path: Path) -> None:
    p = tmp_path / "events.out.tfevents.1.host"
    p.write_bytes(b"\x00\x01garbage")
    assert detect(p) is tensorboard.FORMAT
    run = load(p)
    assert run.steps == 0 and run.errors


def test_sb3_constant_obs() -> None:
    run = load(_event("carla-sb3-ppo-constant-obs"))
    assert run.format == "tensorboard" and run.trainer == "sb3" and run.errors == ()
    f = run.frame
    assert run.steps == 25 and f["step"][0] == 1024 and f["step"][-1] == 25600
    assert f["reward_mean"][0] == pytest.approx(-9.0956, abs=1e-3)
    assert f["reward_mean"][-1] == pytest.approx(-7.52, abs=0.01)
    ev = f["vf_explained_var"].drop_nulls()
    assert ev.len() == 24 and ev.abs().max() < 1e-6  # type: ignore[operator]


def test_sb3_kl_blowup_has_no_reward() -> None:
    raw = tensorboard.read(_event("carla-sb3-ppo-kl-blowup"))
    assert raw.frame["step"][0] == 1024 and raw.frame["step"][-1] == 17408
    kl = raw.frame["train/approx_kl"].drop_nulls()
    assert kl[0] == pytest.approx(52.547, abs=1e-3) and kl[1] == pytest.approx(48.950, abs=1e-3)
    run = load(_event("carla-sb3-ppo-kl-blowup"))
    assert "reward_mean" not in run.metrics
    assert run.frame["kl_step"].max() == pytest.approx(52.547, abs=1e-3)


@pytest.mark.parametrize(("file", "tags"), [
    # rsl_rl (Isaac Lab): on_policy_runner.py's tags; an Isaac Lab reward term as a component
    ("h15-rslrl-isaaclab-openmanipx-lift-ppo-learns/events.out.tfevents.1765365293.pi0-X299-UD4-Pro.13881.0",
     {"Train/mean_reward": "reward_mean", "Loss/entropy": "entropy", "Loss/learning_rate": "lr",
      "Loss/value_function": "value_loss", "Policy/mean_noise_std": "action_std",
      "Episode_Reward/lifting_object": "reward/lifting_object"}),
    # stable-baselines 2 PPO2: 'entropy_loss' is the entropy itself
    ("h17-sb2-ppo2-prsi-selfplay-uniform-policy-frozen/events.out.tfevents.1618011052.LiteComs-MBP.lan",
     {"loss/entropy_loss": "entropy", "loss/approximate_kullback-leibler": "kl_step", "loss/clip_factor": "clip_frac",
      "loss/value_function_loss": "value_loss", "input_info/learning_rate": "lr"}),
    # Unity ML-Agents and tianshou 0.2 (whose loss/ent is the entropy itself)
    ("h25-mlagents-ppo-jumper-learns-entropy-converges/events.out.tfevents.1682014005.Red-Scar.1932.0",
     {"Environment/Cumulative Reward": "reward_mean", "Policy/Entropy": "entropy", "Losses/Value Loss": "value_loss",
      "Policy/Learning Rate": "lr"}),
    ("h26-tianshou-ppo-pendulum-learns/events.out.tfevents.1595232550.DESKTOP-SM16AUJ.18136.0",
     {"rew": "reward_mean", "loss/vf": "value_loss", "loss/ent": "entropy"}),
    # tianshou 0.5 logs the learn() results under update/ (on the gradient-step axis)
    ("h40-tianshou-ppo-crypto-trading-learns/events.out.tfevents.1685432964.PC.1353.0",
     {"update/loss/vf": "value_loss", "update/loss/ent": "entropy", "train/reward": "reward_mean"}),
    # skrl: "Section / Name" tags
    ("h40-skrl-ppo-isaacgym-satellite-nan-late/events.out.tfevents.1746799858.mushu.986799.0",
     {"Loss / Value loss": "value_loss", "Policy / Standard deviation": "action_std", "Learning / Learning rate": "lr"}),
    # CleanRL's tags (cleanrl/ppo.py): the episodes' return under charts/, the update under losses/
    ("h158-cleanrl-style-ppo-cartpole-25k-learns-critic-flat/events.out.tfevents.1691465397.betit.28138.0",
     {"charts/episodic_return": "reward_mean", "losses/entropy": "entropy", "losses/approx_kl": "kl_step",
      "losses/clipfrac": "clip_frac", "losses/explained_variance": "vf_explained_var", "charts/learning_rate": "lr",
      "losses/value_loss": "value_loss"}),
    # a hand-written multi-agent TD3's score per episode (tensorboardX)
    ("h88-matd3-tennis-twin-critic-solved/events.out.tfevents.1579162959.LPCP1630",
     {"score_per_episode": "reward_mean"}),
])
def test_library_tags_are_read_as_their_canonical_metrics(file: str, tags: dict[str, str]) -> None:
    path = corpus(file)
    raw, run = tensorboard.read(path), load(path)
    for tag, name in tags.items():
        logged = raw.frame.select("step", tag).drop_nulls()
        got = run.frame.select("step", name).drop_nulls()
        assert got["step"].to_list() == logged["step"].to_list()
        assert got[name].equals(logged[tag], check_names=False)  # NaN equals NaN here (the skrl run ends in NaN)


def test_a_corrupt_record_costs_itself_not_the_rest_of_the_file(tmp_path: Path) -> None:
    good = _event("carla-sb3-ppo-constant-obs")
    data = bytearray(good.read_bytes())
    at = len(data) // 2
    data[at:at + 8] = b"\xff" * 8
    bad = tmp_path / good.name
    bad.write_bytes(bytes(data))
    whole, hurt = load(good), load(bad)
    assert len(hurt.errors) == 1 and "corrupt; reading resumed at byte" in hurt.errors[0].message
    assert hurt.frame["step"].to_list() == whole.frame["step"].to_list()   # the steps after it are read
    # the file of a run still writing: its last record cut short
    bad.write_bytes(good.read_bytes()[:-5])
    cut = load(bad)
    assert "cut short" in cut.errors[0].message and cut.frame["step"][-1] == whole.frame["step"][-1]


def test_real_rl_games_run_keeps_the_frame_axis() -> None:
    path = corpus("h44-rlgames-ppo-isaacgym-anymal-learns/events.out.tfevents.1638541984.b90ebc128593")

    acc = events(path)
    reward = [(e.step, e.value) for e in acc.Scalars("rewards/step")]
    run = load(path)
    assert run.trainer == "rl_games" and run.frame.height == len(reward) == 500
    assert list(zip(run.frame["step"].to_list(), run.frame["reward_mean"].to_list(), strict=True)) == \
        [(s, pytest.approx(v)) for s, v in reward]
    assert run.metadata["other_axis_tags"] == sorted(t for t in acc.Tags()["scalars"] if t.endswith(("/iter", "/time")))
    # the report names the axis: rl_games writes its /step tags against frames
    from advcore.report.render import steps_text

    assert run.metadata["step_unit"] == "frames" and steps_text(run).endswith(f"to {reward[-1][0]} frames)")


def test_cleanrl_is_told_by_its_return_tag_with_one_of_its_losses() -> None:
    from advcore.ingest._trainers import trainer_of

    # cleanrl/ppo.py writes charts/episodic_return with losses/*; dqn.py with losses/td_loss, losses/q_values
    assert trainer_of(["charts/episodic_return", "charts/SPS", "losses/approx_kl"]) == "cleanrl"
    assert trainer_of(["charts/episodic_return", "losses/td_loss", "losses/q_values"]) == "cleanrl"
    # the return tag alone names no library (any script can write it)
    assert trainer_of(["charts/episodic_return", "charts/episodic_length"]) is None


def test_a_file_of_one_series_whose_name_says_reward_is_read_as_the_reward() -> None:
    # jzmrexu1s/rl-scheduling: torch SummaryWriter('logs') with one scalar per run, named by its profile and date
    path = corpus("h307-sac-dvfs-mixed-criticality-scheduler-profile4-3340-to-4080-in-500-episodes-healthy/"
                  "events.out.tfevents.1691327851.inspur.16283.0")
    acc = events(path)
    (tag,) = acc.Tags()["scalars"]
    assert tag == "profile4 Episode Reward 2023-08-06-13-17-31"
    run = load(path)
    assert run.sources["reward_mean"] == tag
    assert run.frame["reward_mean"].to_list() == pytest.approx([e.value for e in acc.Scalars(tag)])


def test_an_event_file_renamed_around_tfevents_is_one() -> None:
    # M4GPIe's SB3 deck builder: its runs renamed to `PPO.aggro.80k.events.out.tfevents.<time>.<host>...`; TensorBoard
    # loads any file whose name holds `tfevents`, and so does advcore
    path = corpus("h371-sb3-ppo-hearthstone-deckbuilder-aggro-80k-lr5e-4-20-epochs-approx-kl-0.1-to-4.3-clip-frac-0.3-"
                  "return-stalls-minus-0.37/PPO.aggro.80k.events.out.tfevents.1749544745.DESKTOP-I62I12E.3484.1")
    acc = events(path)
    kl = [(e.step, e.value) for e in acc.Scalars("train/approx_kl")]
    assert detect(path) is tensorboard.FORMAT
    run = load(path)
    assert run.trainer == "sb3" and not run.errors
    got = run.frame.select("step", "kl_step").drop_nulls()
    assert list(zip(got["step"].to_list(), got["kl_step"].to_list(), strict=True)) == [(s, pytest.approx(v)) for s, v in kl]
    assert max(v for _, v in kl) > 4  # the entry's 4.3 nats


def test_an_ml_agents_curriculum_is_read_in_phases_one_per_lesson() -> None:
    # ML-Agents logs each curriculum parameter's lesson; the minesweeper run moves both of its parameters on together
    path = corpus("h373-mlagents-ppo-minesweeper-8x8-time-scheduled-curriculum-1-to-4-mines-return-steps-down-at-each-"
                  "lesson-and-climbs-within-3.1m-healthy/events.out.tfevents.1676561695.Hysse.27032.0")
    acc = events(path)
    lessons = [(e.step, e.value) for e in acc.Scalars("Environment/Lesson Number/mine_count")]
    changes = sum(1 for (_, a), (_, b) in zip(lessons, lessons[1:], strict=False) if a != b)
    run = load(path)
    assert run.metadata["phases_from"] == "lesson" and run.frame["phase"].n_unique() == changes + 1 == 4
    first_of_lesson_1 = next(s for s, v in lessons if v == 1)
    assert run.frame.filter(pl.col("phase") == 1)["step"].min() == first_of_lesson_1
    # the reward drops when the lesson moves on: no collapse is told of the whole run
    from advcore.detectors import run_detectors

    findings, _ = run_detectors(run)
    assert not [f for f in findings if f.severity != "info"]
