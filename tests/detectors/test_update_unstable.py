"""UPDATE_UNSTABLE: updates too large, on real logs (values read off the raw files by hand) and on
small hand-made runs; one spike that recovers, and a Gaussian policy's negative entropy, stay quiet."""

from __future__ import annotations

import csv
import json
import math
import re
import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats
import polars as pl
import pytest

from advcore.detectors import REGISTRY, Finding, run_detectors
from advcore.detectors._reward import reward_course
from advcore.diagnose import diagnose
from advcore.ingest import Run, join_runs, load
from tests._real import corpus, events, real
from tests.detectors._fixtures import fired, make_run, one

SPEC = REGISTRY["UPDATE_UNSTABLE"]


def _run(**columns: list[float]) -> Run:
    n = len(next(iter(columns.values())))
    frame = pl.DataFrame({"step": list(range(1, n + 1)), **columns}).with_columns(pl.col("step").cast(pl.Int64))
    return Run("mem", "plain", None, frame, {}, {})


def test_sb3_kl_blowup() -> None:
    # train/approx_kl 52.547 at 2,048 timesteps, 48.950, then 7.114 at 10,240 and 19.306 at 16,384
    run = load(real("carla-sb3-ppo-kl-blowup/events.out.tfevents.1755701530.Legion.256656.0"))
    f = SPEC.fn(run, SPEC.defaults())
    assert isinstance(f, Finding) and f.stage == "U" and f.severity == "error"
    assert f.evidence["metric"] == "kl_step" and f.onset_step == 2048
    assert f.evidence["unstable_steps"] == [2048, 3072, 10240, 16384]
    assert abs(f.evidence["worst"] - 52.547) < 1e-3
    # clip_fraction 0.937, 0.962, 0.955 and 0.737 >= 0.5 too
    assert f.evidence["also"] == ["clip_frac"]
    findings, missing = run_detectors(run)
    verdict = diagnose(run, findings, missing)
    # the blow-up at the first update leads what it broke (the critic explains nothing from 7,168)
    assert verdict.headline == "UPDATE_UNSTABLE" and verdict.stage == "U" and verdict.onset == 2048


def test_a_policy_that_runs_away_from_its_reference() -> None:
    # actor/reward_kl_penalty 0.83, 0.85, 1.32, 2.00, 2.52, 4.38 at steps 1-6: the median of 5 points
    # reaches 2.0 at step 6; critic/score/mean falls from -0.68 to -1.0 (its floor) from step 11
    run = load(corpus("opd-qwen3-4b-length-collapse/output.log"))
    f = SPEC.fn(run, SPEC.defaults())
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl" and f.onset_step == 6
    findings, missing = run_detectors(run)
    verdict = diagnose(run, findings, missing)
    assert verdict.headline == "UPDATE_UNSTABLE" and verdict.stage == "U"
    assert "REWARD_FLOOR" in {g.id for g in findings}


def test_one_spike_that_recovers_is_routine() -> None:
    kl_step = [0.01] * 20
    kl_step[7] = 5.0
    clip = [0.05] * 20
    clip[7:9] = [0.7, 0.6]
    kl = [0.05] * 20
    kl[12] = 9.0
    assert SPEC.fn(_run(kl_step=kl_step, clip_frac=clip, kl=kl), SPEC.defaults()) is None


def test_an_entropy_that_explodes() -> None:
    entropy = [0.5, 0.45, 0.4, 0.42, 0.4, 0.41, 0.4, 6.0, 7.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0]
    f = SPEC.fn(_run(entropy=entropy), SPEC.defaults())
    # early median 0.45 (first 3 points); the median of 5 points passes 4.5 at the 10th point (step 10)
    assert isinstance(f, Finding) and f.evidence["metric"] == "entropy" and f.onset_step == 10


def test_an_entropy_that_explodes_inside_the_early_window_and_the_check_that_fired_first() -> None:
    # 100 steps: entropy 0.3 for 12, a blow-up to 10 from step 13, inside the early 20 points; its
    # 5-point median reaches 10 at step 15. The KL to the reference runs away later (its median at step 23)
    entropy = [0.3] * 12 + [10.0] * 88
    kl = [0.1] * 20 + [5.0] * 80
    f = SPEC.fn(_run(entropy=entropy, kl=kl), SPEC.defaults())
    assert isinstance(f, Finding) and f.evidence["metric"] == "entropy" and f.onset_step == 15
    assert f.evidence["also"] == ["kl"]
    # a blow-up from step 9 lifts the early window's median to 10: its first half (10 points) still sees 0.3
    early = [0.3] * 8 + [10.0] * 92
    g = SPEC.fn(_run(entropy=early), SPEC.defaults())
    assert isinstance(g, Finding) and g.onset_step == 11
    # the KL first: it dates the finding, the entropy is named
    h = SPEC.fn(_run(entropy=[0.3] * 40 + [10.0] * 60, kl=kl), SPEC.defaults())
    assert isinstance(h, Finding) and h.evidence["metric"] == "kl" and h.evidence["also"] == ["entropy"]


def test_real_grpo_whose_kl_term_blew_the_policy_into_uniform_noise() -> None:
    # rasbt reasoning-from-scratch ch07 7_5_plus_kl: entropy_avg of median 0.69 over steps 1-50, 4.75 at 52,
    # 5.8 at 58, then about ln(vocabulary) = 11.93 from step 75; kl_loss runs away from step 62; reward 0 from 58
    path = corpus("h49-rasbt-grpo-kl-qwen3-06b-math-entropy-blowup/7_5_plus_kl_metrics.csv")
    with path.open(newline="") as fh:
        entropy = {int(r["step"]): float(r["entropy_avg"]) for r in csv.DictReader(fh)}
    assert np.median([v for s, v in entropy.items() if s <= 50]) < 0.7 and min(v for s, v in entropy.items() if s >= 75) > 11.5
    run = load(path)
    findings, missing = run_detectors(run)
    f = next(f for f in findings if f.id == "UPDATE_UNSTABLE")
    assert f.evidence["metric"] == "entropy" and 52 <= f.onset_step <= 62 and "kl" in f.evidence["also"]
    verdict = diagnose(run, findings, missing)
    assert verdict.headline == "UPDATE_UNSTABLE" and verdict.stage == "U"


def test_a_negative_entropy_is_not_judged_for_a_rise() -> None:
    # SB3 Gaussian policies: differential entropy below 0 (smolvla logs -2.83); a ratio means nothing
    entropy = [-2.8, -2.8, -2.7, -0.1, -0.1, -0.1, -0.1, -0.1, -0.1]
    out = SPEC.fn(_run(entropy=entropy), SPEC.defaults())
    assert not isinstance(out, Finding)
    assert SPEC.fn(_run(entropy=entropy, clip_frac=[0.1] * 9), SPEC.defaults()) is None


def test_not_evaluable_without_update_metrics() -> None:
    out = SPEC.fn(_run(reward_mean=[0.1, 0.2, 0.3]), SPEC.defaults())
    assert out is not None and not isinstance(out, Finding) and out.id == "UPDATE_UNSTABLE"


def _learn_then_collapse(clip_after: float) -> dict[str, list[float]]:
    # 100 steps: reward 0.2 -> 0.8 by step 40, held to step 60, then back to 0.1; clip fraction 0.05 before
    reward = [0.2 + 0.6 * min(i, 40) / 40 for i in range(60)] + [0.1] * 40
    clip = [0.05] * 60 + [clip_after] * 40
    return {"reward_mean": reward, "clip_frac": clip}


def test_a_collapse_after_success_with_the_updates_growing() -> None:
    f = one(make_run(_learn_then_collapse(0.2)), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.stage == "U" and f.evidence["condition"] == "collapse after success"
    assert f.onset_step == 61  # the first step of the fall (steps are 1-based in make_run)
    assert f.evidence["peak_level"] == pytest.approx(0.8) and f.evidence["late_median"] == pytest.approx(0.1)
    assert f.evidence["update_moved"] == {"clip_frac": pytest.approx(4.0)}


def test_a_reward_that_stops_being_paid_is_not_an_update_failure() -> None:
    # the same fall with the updates unchanged (a reward that broke, the lab's floor fault): not this detector
    assert one(make_run(_learn_then_collapse(0.05)), "UPDATE_UNSTABLE") is None
    # a success that is kept is no collapse, and noise around a flat level is no success
    kept = _learn_then_collapse(0.2)
    kept["reward_mean"] = kept["reward_mean"][:60] + [0.78] * 40
    assert one(make_run(kept), "UPDATE_UNSTABLE") is None
    rng = np.random.default_rng(3)
    flat = {"reward_mean": list(0.5 + rng.normal(0, 0.1, 100)), "clip_frac": [0.05] * 60 + [0.2] * 40}
    assert one(make_run(flat), "UPDATE_UNSTABLE") is None


def test_a_collapse_after_success_in_a_log_without_update_metrics() -> None:
    # classic-control homework loggers write the return and the losses, no KL, clip fraction or entropy:
    # the collapse is still the updates' (an environment's reward does not stop being paid), said so
    cols = {"reward_mean": _learn_then_collapse(0.05)["reward_mean"]}
    f = one(make_run(cols), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.onset_step == 61
    assert f.evidence["update_moved"] == "no update metric logged" and "no update metric logged could confirm it" in f.message


def test_real_lunarlander_gae_lambda_1_that_collapsed_after_success() -> None:
    # CS285 fall 2023 hw2, lambda = 1: Train_AverageReturn about 270 at iteration 210, then -66 at 230 and
    # -131 at 240, never recovering; the logger writes no update metric besides the actor and baseline losses
    path = corpus("h33-cs285-f23-pg-lunarlander-gae-lambda1-collapse/events.out.tfevents.1770986056.神舟革命")

    acc = events(path)
    ret = {e.step: e.value for e in acc.Scalars("Train_AverageReturn")}
    assert ret[230] < -60 and ret[240] < -130 and max(ret.values()) > 270
    run = load(path)
    f = one(run, "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["condition"] == "collapse after success"
    assert 210 <= f.onset_step <= 240 and f.evidence["update_moved"] == "no update metric logged"


def test_real_brief_success_then_collapse_of_an_inverted_pendulum() -> None:
    """h79-cs294-pg-invpendulum-20-steps-per-batch-collapses: AverageReturn 9.6 at iteration 0, 72 to 118 at
    iterations 4-6 and 10-11, then about 2 (the pole falls at once) from iteration 13 on; its level held above
    half-way for fewer points than a level window (10), so it counts as a brief success (108 noises)."""
    path = corpus("h79-cs294-pg-invpendulum-20-steps-per-batch-collapses/log.txt")
    rows = list(csv.DictReader(path.read_text().splitlines(), delimiter="\t"))
    ret = [float(r["AverageReturn"]) for r in rows]
    assert max(ret[:13]) > 117 and all(v < 3 for v in ret[13:20])  # by hand
    run = load(path)
    f = one(run, "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["condition"] == "collapse after success"
    assert f.evidence["succeeded"] is True and f.message.startswith("The reward collapsed after success")
    assert 7 <= f.onset_step <= 13


def test_an_entropy_that_jumps_at_the_end_of_the_run() -> None:
    # 480 steps at 0.08, then 20 at 0.3-0.8: a blow-up under way, dated where it began
    entropy = [0.08 + 0.01 * (i % 3) for i in range(480)] + [0.3 + 0.025 * i for i in range(20)]
    f = one(make_run({"entropy": entropy}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.onset_step == 481 and f.evidence["metric"] == "entropy"
    # a steady rise over the whole run (1.7x) is no jump; a one-point spike at the end neither
    steady = [0.1 + 0.2 * i / 499 for i in range(500)]
    assert one(make_run({"entropy": steady}), "UPDATE_UNSTABLE") is None
    spike = entropy[:480] + [0.08] * 19 + [0.8]
    assert one(make_run({"entropy": spike}), "UPDATE_UNSTABLE") is None
    # a Gaussian policy's differential entropy is not judged as a ratio
    shifted = [v - 0.2 for v in entropy]
    assert one(make_run({"entropy": shifted}), "UPDATE_UNSTABLE") is None


def test_real_grpo_run_whose_entropy_jumped_in_its_last_twenty_steps() -> None:
    # CS285 spring 2026 hw4 GRPO on math_hard: token entropy at most 0.232 for steps 0..477, 0.238 at 478,
    # then 0.30-0.82 with a level above everything before from step 482 to the end (500)
    import json

    path = corpus("h31-cs285-sp26-grpo-math-hard-late-entropy-kl-blowup/metrics.jsonl")
    key = "train/policy_token_entropy_mean_over_minibatches"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    entropy = {r["step"]: r["metrics"][key] for r in rows if key in r.get("metrics", {})}
    assert max(v for s, v in entropy.items() if s < 478) < 0.233 and entropy[490] > 0.8
    f = one(load(path), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "entropy"
    assert 474 <= f.onset_step <= 482 and f.evidence["worst"] == pytest.approx(entropy[490])


def test_a_late_blow_up_whose_level_swings_is_a_jump() -> None:
    # about 0.08 for 450 points, then a blow-up that swings between 0.25 and 1.9: its level dips below
    # its own earlier peaks, yet stays over 3 x the first half's median
    rng = np.random.default_rng(5)
    calm = list(0.08 + rng.normal(0, 0.01, 450))
    wild = [0.25 + 1.65 * abs(np.sin(i / 2.5)) for i in range(50)]
    f = one(make_run({"entropy": calm + wild}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "entropy" and 448 <= f.onset_step <= 452
    # the same values shuffled into the calm part are no late jump
    assert one(make_run({"entropy": calm[:200] + wild + calm[200:]}), "UPDATE_UNSTABLE") is None


def test_real_grpo_run_whose_entropy_blows_up_with_a_swinging_level() -> None:
    # h62 (CS285 spring 2026 hw4, same starter): token entropy 0.083 on average over steps 0-349, first
    # above 0.3 at step 454, 0.2 to 1.98 to the end (500)
    import json

    path = corpus("h62-cs285-hw4-grpo-math-hard-late-entropy-blowup/metrics.jsonl")
    key = "train/policy_token_entropy_mean_over_minibatches"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    entropy = {r["step"]: r["metrics"][key] for r in rows if key in r.get("metrics", {})}
    first = min(s for s, v in entropy.items() if v > 0.3)
    f = one(load(path), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "entropy"
    assert first - 5 <= f.onset_step <= first and f.evidence["worst"] == pytest.approx(max(entropy.values()))


def test_real_sb3_run_that_collapsed_after_success() -> None:
    path = corpus("sb3-acrobot-collapse-after-success/"
                  "events.out.tfevents.1748546518.kangs-MacBook-Pro-6.local.97564.0")

    acc = events(path)
    reward = {e.step: e.value for e in acc.Scalars("rollout/ep_rew_mean")}
    best = max(reward, key=lambda s: reward[s])
    assert best == 263168 and reward[best] == pytest.approx(-4969, abs=1)  # from SOURCE of the manifest
    run = load(path)
    f = one(run, "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["condition"] == "collapse after success"
    assert 263168 <= f.onset_step <= 460000 and f.evidence["late_median"] < -7900
    findings, missing = run_detectors(run)
    assert diagnose(run, findings, missing).stage == "U"


def test_a_gaussian_policy_whose_exploration_noise_blows_up() -> None:
    # SB3 train/std from 1.0 growing 5 % per update for 100 updates (to 131x): the noise blew up
    std = [1.0 * 1.05 ** i for i in range(100)]
    f = one(make_run({"action_std": std}, trainer="sb3"), "UPDATE_UNSTABLE")
    early = float(np.median(std[:10]))  # the early window's first half: lower than the whole window's median
    assert isinstance(f, Finding) and f.evidence["metric"] == "action_std"
    # the bar is crossed where the 5-point trailing median reaches 10x the early median; the rise is dated
    # from the start of the stretch above the geometric middle (sqrt(10)x) that led there
    level = [float(np.median(std[max(0, i - 4): i + 1])) for i in range(100)]
    assert f.evidence["past_bar_step"] == 1 + next(i for i, v in enumerate(level) if v >= 10 * early)
    assert f.onset_step == 1 + next(i for i, v in enumerate(level) if v >= 10 ** 0.5 * early)
    # a std that narrows as the policy converges is quiet
    assert one(make_run({"action_std": std[::-1]}, trainer="sb3"), "UPDATE_UNSTABLE") is None


def test_real_sb3_run_whose_action_std_blew_up() -> None:
    path = corpus("sb3-acrobot-effort-std-blowup/"
                  "events.out.tfevents.1748624215.kangs-MacBook-Pro-6.local.73516.0")

    acc = events(path)
    std = [e.value for e in acc.Scalars("train/std")]
    assert std[0] == pytest.approx(1.008, abs=0.01) and std[-1] > 80  # from the manifest's checked numbers
    f = one(load(path), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "action_std"


def test_a_high_clip_fraction_while_the_return_keeps_rising_is_not_unstable() -> None:
    # clip fraction 0.72 for most of the run: unstable when the return falls, not while it keeps rising
    clip = [0.1] * 20 + [0.72] * 80
    rising = [float(i) for i in range(100)]
    assert one(make_run({"clip_frac": clip, "reward_mean": rising}), "UPDATE_UNSTABLE") is None
    falling = [float(min(i, 50)) if i < 60 else 10.0 for i in range(100)]
    f = one(make_run({"clip_frac": clip, "reward_mean": falling}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "clip_frac" and f.onset_step == 21


def test_update_kl_spikes_on_under_one_percent_of_a_long_run_are_routine() -> None:
    kl = [0.02] * 1000
    for i in (100, 500, 900):
        kl[i] = 2.5
    assert one(make_run({"kl_step": kl}), "UPDATE_UNSTABLE") is None
    for i in range(200, 1000, 80):  # 13 spikes: 1.3 % of the run
        kl[i] = 2.5
    f = one(make_run({"kl_step": kl}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["unstable_points"] == sum(1 for v in kl if v >= 1)


def test_real_baselines_ppo2_csv_is_read_with_its_columns() -> None:
    path = corpus("h7-baselines-ppo2-humanoidstandup-good-high-clipfrac/progress.csv")
    with path.open() as f:
        rows = list(csv.DictReader(f))
    run = load(path)
    assert run.trainer == "baselines" and run.steps == len(rows)
    assert run.frame["step"].to_list() == [int(float(r["total_timesteps"])) for r in rows]
    assert run.frame["reward_mean"].to_list() == pytest.approx([float(r["eprewmean"]) for r in rows])
    assert run.frame["kl_step"].to_list() == pytest.approx([float(r["approxkl"]) for r in rows])
    assert one(run, "UPDATE_UNSTABLE") is None  # it learns: 3 KL spikes over 976 updates, clipping while improving


def test_a_value_loss_that_grows_with_the_returns_is_no_divergence() -> None:
    # an MSE on unnormalised returns grows with their square: returns 10 -> 500 (50x) allow 2,500x
    n = 50
    returns = [10.0] * 25 + [500.0] * 25
    fitting = [0.5 * r ** 2 for r in returns]  # the loss tracks return squared: 50 -> 125,000
    assert one(make_run({"reward_mean": returns, "value_loss": fitting}), "UPDATE_UNSTABLE") is None
    # the same loss on flat returns, and a loss that outgrows the returns' square, diverged
    f = one(make_run({"reward_mean": [10.0] * n, "value_loss": fitting}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "value_loss"
    exploding = [0.5 * r ** 2 * 10 ** (4 * i / (n - 1)) for i, r in enumerate(returns)]
    assert isinstance(one(make_run({"reward_mean": returns, "value_loss": exploding}), "UPDATE_UNSTABLE"), Finding)


def test_vpg_cartpole_whose_value_loss_tracks_its_return_is_quiet() -> None:
    # davenpi/rlrn readme: "critic does terribly"; return 18 -> 493 while the value loss reaches ~78,000
    path = corpus("h20-vpg-cartpole-learns-value-loss-grows/readme.md")
    run = load(path)
    assert run.format == "printed" and run.frame["value_loss"].max() > 7e4
    findings, _ = run_detectors(run)
    assert "UPDATE_UNSTABLE" not in {f.id for f in findings}


def test_a_kl_spike_the_reward_never_recovered_from() -> None:
    # 300 updates: a return of about 10 (noise 0.5), one update KL of 4 at update 100, a return of about 5 after it
    rng = np.random.default_rng(3)
    kl = [0.01] * 300
    kl[100] = 4.0
    reward = [10.0 + 0.5 * float(e) if i < 100 else 5.0 + 0.5 * float(e) for i, e in enumerate(rng.standard_normal(300))]
    f = one(make_run({"kl_step": kl, "reward_mean": reward}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl_step" and f.onset_step == 101
    assert f.evidence["reward_before"] == pytest.approx(float(np.median(reward[70:100])))
    # the same spike in a run whose return comes back: routine
    healed = reward[:150] + [10.5 + 0.5 * float(e) for e in rng.standard_normal(150)]
    assert one(make_run({"kl_step": kl, "reward_mean": healed}), "UPDATE_UNSTABLE") is None


def test_real_rl_games_run_that_never_recovered_from_a_kl_spike() -> None:
    path = corpus("h44-rlgames-ppo-isaacgym-yumicube-kl-spikes-collapse/events.out.tfevents.1637854725.MS-7C82")

    acc = events(path)
    kl = {e.step: e.value for e in acc.Scalars("info/kl")}
    first = min(s for s, v in kl.items() if v >= 1.0)
    assert first == 272629760 and kl[first] == pytest.approx(3.98, abs=0.01)  # the manifest's checked numbers
    run = load(path)
    assert run.trainer == "rl_games" and "rewards/iter" in run.metadata["other_axis_tags"]
    f = one(run, "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.onset_step == first and f.evidence["unstable_points"] == 3
    findings, missing = run_detectors(run)
    assert diagnose(run, findings, missing).headline == "UPDATE_UNSTABLE"


def test_real_ddpg_critic_loss_that_starts_tiny_and_grows_with_the_returns() -> None:
    # tianshou DDPG on Pendulum learns; its critic loss has a median of 0.018 over the first 480 of 4,800
    # points and 2.8 over the last 960: measured from the first half of the early window it would look diverged
    path = corpus("h26-tianshou-ddpg-pendulum-learns/events.out.tfevents.1595232412.DESKTOP-SM16AUJ.9192.0")
    run = load(path)
    loss = run.frame["value_loss"].drop_nulls().to_list()
    assert np.median(loss[-960:]) > 100 * np.median(loss[:480]) and np.median(loss[-960:]) < 100 * np.median(loss[:960])
    assert "UPDATE_UNSTABLE" not in {f.id for f in run_detectors(run)[0]}


def test_gradients_that_explode_and_stay_exploded_are_unstable() -> None:
    rng = np.random.default_rng(7)
    calm = list(0.01 * np.exp(rng.normal(0.0, 0.3, 50)))
    exploded = make_run({"grad_norm": calm + list(5.0 * np.exp(rng.normal(0.0, 0.3, 50)))})
    f = one(exploded, "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "grad_norm"
    assert 51 <= f.onset_step <= 53  # the rise begins at step 51; a trailing median of 5 sees it at the 3rd point
    # a grad norm that grows 30-fold as the policy learns (the healthy CS336 REINFORCE run peaks at 45 x) is not
    grew = make_run({"grad_norm": calm + list(0.3 * np.exp(rng.normal(0.0, 0.3, 50)))})
    assert one(grew, "UPDATE_UNSTABLE") is None
    # nor is a burst that the run recovers from (its late window is back at the start)
    burst = make_run({"grad_norm": calm[:30] + [5.0] * 20 + calm[30:]})
    assert one(burst, "UPDATE_UNSTABLE") is None


def test_real_cs336_grpo_without_its_clip_explodes_before_its_nan() -> None:
    """h59 noclip: per micro-step grad_norm of about 0.005 early, 0.2-4 from GRPO step 31 (train step
    about 250) on, and a loss that is NaN from train step 785 (the hunter's counts)."""
    import json

    path = corpus("h59-cs336-grpo-noclip-offpolicy-nan-collapse/train_history.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    first_nan = next(r["train_step"] for r in rows if r["loss"] != r["loss"])
    assert first_nan == 785
    f = one(load(path), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "grad_norm"
    assert f.onset_step < first_nan
    early = statistics.median(r["grad_norm"] for r in rows[:160])
    assert f.evidence["worst"] > 100 * early


def test_a_kl_that_starts_high_runs_away_only_when_it_leaves_its_start() -> None:
    # an SFT'd adapter against the base model: 2.8 nats from step 1, flat (h77's shape) is no runaway
    flat = [2.8 + 0.01 * (i % 3) for i in range(50)]
    assert one(make_run({"kl": flat}), "UPDATE_UNSTABLE") is None
    # from the same start, a KL that doubles ran away (2 x its value at the first step is the bar)
    rising = flat[:30] + [2.8 + 0.4 * i for i in range(1, 21)]
    f = one(make_run({"kl": rising}), "UPDATE_UNSTABLE")
    first = next(i for i in range(4, 50) if statistics.median(rising[i - 4:i + 1]) >= 2 * rising[0])
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl" and f.onset_step == first + 1
    # a KL that starts near 0 keeps the 2-nat bar, and so does one first logged after some updates
    assert one(make_run({"kl": [0.01] * 30 + [2.5] * 20}), "UPDATE_UNSTABLE") is not None
    assert one(make_run({"kl": flat}, steps=list(range(5, 255, 5))), "UPDATE_UNSTABLE") is not None


def _hold_then_fall(late: float) -> dict[str, list[float]]:
    """A return that holds 12 +- 0.25 (no success: it never rises), then falls to ``late`` over the
    last 40 of 100 points; the gradient norm grows ten-fold over the fall."""
    rng = np.random.default_rng(7)
    held = list(12.0 + rng.normal(0, 0.25, 60))
    fall = [late + 0.25 * float(v) for v in rng.normal(0, 1, 40)]
    return {"reward_mean": held + fall, "grad_norm": [0.3] * 60 + [3.0] * 40}


def test_a_collapse_below_the_start_without_a_success() -> None:
    # a return that held its first level and then fell far below it (a TD-loss blow-up, h93 DCG on SMAC:
    # 11.8 early, 4.4 late): a collapse though it never succeeded, corroborated by the gradient norm
    f = one(make_run(_hold_then_fall(4.4)), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["condition"] == "collapse below the start"
    assert f.evidence["succeeded"] is False and "far below its early level" in f.message
    assert f.evidence["update_moved"] == {"grad_norm": pytest.approx(10.0)}
    assert 55 <= f.onset_step <= 66  # where the fall begins
    # a fall of fewer than 3 noises is drift, not a collapse; a fall the gradients did not move with is not the updates'
    assert one(make_run(_hold_then_fall(11.4)), "UPDATE_UNSTABLE") is None
    still = _hold_then_fall(4.4)
    still["grad_norm"] = [0.3] * 100
    assert one(make_run(still), "UPDATE_UNSTABLE") is None


def test_a_fall_to_the_floor_is_the_floors_to_report() -> None:
    # a return that falls to a constant floor and stays (h63 JoyRL pendulum, -1632 at every late point):
    # REWARD_FLOOR says it, not a collapse of the updates
    cols = {"reward_mean": [-1200.0 + 30.0 * ((i * 7) % 5 - 2) for i in range(60)] + [-1632.0] * 40}
    assert not isinstance(one(make_run(cols), "UPDATE_UNSTABLE"), Finding)
    assert "REWARD_FLOOR" in fired(make_run(cols))


def test_a_collapse_in_the_last_points_of_a_long_run() -> None:
    # a return that learned and held for 982 points, then fell far below its start in its last 18 (h176 rsl_rl
    # humanoid: -159 to -2,205 after 30 to 211): the late window's median still holds, the tail does not
    rng = np.random.default_rng(4)
    held = [min(140.0, 30.0 + i) + 15.0 * rng.standard_normal() for i in range(982)]
    fall = [-150.0 - 100.0 * i for i in range(18)]
    f = one(make_run({"reward_mean": held + fall}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.onset_step == 983 and f.evidence["collapsed_tail_points"] == 18
    assert "over its last 18 logged points" in f.message
    # four bad points at the end are not yet a collapse
    assert not isinstance(one(make_run({"reward_mean": held + fall[:4]}), "UPDATE_UNSTABLE"), Finding)


def test_a_tail_that_gave_back_its_gain_without_falling_below_the_start() -> None:
    # h228 rl_games walkbot: a return that rose from about -2 to a level of 33 from epoch 100 on, then
    # its last 6 of 259 back at -5 to 0.1: the late window's median still holds the gain, the tail gave it back
    rng = np.random.default_rng(8)
    held = [min(33.0, -2.0 + max(0.0, 0.9 * (i - 100))) + 3.0 * rng.standard_normal() for i in range(253)]
    tail = [0.14, -1.75, -3.88, -4.95, -3.29, -0.83]
    f = one(make_run({"reward_mean": held + tail}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.onset_step == 254 and f.evidence["collapsed_tail_points"] == 6
    assert f.evidence["succeeded"] is True and "over its last 6 logged points" in f.message
    # a tail that keeps more than a quarter of the gain (above 6.75: 1 - `giveback`) is no collapse
    kept = [9.0 + v for v in (0.0, 1.0, 0.5, 2.0, 1.5, 0.2)]
    assert not isinstance(one(make_run({"reward_mean": held + kept}), "UPDATE_UNSTABLE"), Finding)
    # an update KL logged and flat over the fall: not the updates' (the walkbot's own log says so)
    flat = make_run({"reward_mean": held + tail, "kl_step": [0.01 + 0.001 * ((i * 7) % 5) for i in range(259)]})
    assert one(flat, "UPDATE_UNSTABLE") is None


def test_real_slide_from_the_cap_to_a_collapsed_tail() -> None:
    """h271-rllib-ppo-cartpole-stale-int8-rollout-policy-reaches-500-then-collapses-to-100: RLlib PPO acting
    with a stale INT8 snapshot of its policy reaches CartPole's cap at epoch ~375, then slides: its last 34
    epochs all lie below what keeps a quarter of the gain, the 50 before them are already half-way down, so
    only the level where the late window began (epoch 400) shows how far it fell."""
    path = corpus("h271-rllib-ppo-cartpole-stale-int8-rollout-policy-reaches-500-then-collapses-to-100/"
                  "async_20251204_144355.jsonl")
    reward = [float(json.loads(ln)["reward_mean"]) for ln in path.read_text().splitlines() if ln.strip()]
    assert len(reward) == 500 and max(reward) >= 499
    assert statistics.mean(reward[-30:]) < 131 and statistics.mean(reward[375:391]) > 480
    f = one(load(path), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.severity == "error" and f.evidence["succeeded"] is True
    tail = int(str(f.evidence["collapsed_tail_points"]))
    assert f.onset_step == 501 - tail and 425 <= f.onset_step <= 475
    assert max(reward[-tail:]) < statistics.median(reward[:100]) + 0.25 * (max(reward) - statistics.median(reward[:100]))


def test_real_collapse_whose_only_update_metric_is_an_entropy_that_stayed_put() -> None:
    """h270-mlagents-ppo-selfdriving-car-gamma0.9-learns-route-then-gives-half-back: ML-Agents logs the policy's
    entropy and no update size; the return rises to a level of about 785 by 700k steps, then gives back about
    nine tenths of its gain while the entropy stays within a factor 2. An entropy that stayed put clears
    nothing: the collapse is reported, saying nothing could confirm it."""
    path = corpus("h270-mlagents-ppo-selfdriving-car-gamma0.9-learns-route-then-gives-half-back/"
                  "events.out.tfevents.1643388776.alex.25728.2")
    acc = events(path)
    reward = [e.value for e in acc.Scalars("Environment/Cumulative Reward")]
    entropy = [e.value for e in acc.Scalars("Policy/Entropy")]
    k = math.ceil(0.2 * len(reward))
    assert max(reward) > 1.8 * statistics.median(reward[-k:])
    assert 0.5 < statistics.median(entropy[-k:]) / statistics.median(entropy[:k]) < 2.0
    f = one(load(path), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["condition"] == "collapse after success"
    assert f.evidence["update_moved"] == "only the entropy logged, and it stayed put"
    assert "only the entropy was logged" in f.message
    # the same fall with an update size logged and flat over it is not the updates'
    run = load(path)
    flat = run.frame.with_columns(pl.lit(0.01).alias("kl_step"))
    assert one(replace(run, frame=flat, sources={**run.sources, "kl_step": "kl"}), "UPDATE_UNSTABLE") is None


def test_a_differential_entropy_crossing_zero_is_no_rise_and_no_witness() -> None:
    # a SAC policy's entropy swings around 0 (h181 ML-Agents SAC: -1.08 to 1.04 while it learns): no ratio of
    # it is a blow-up, and it can neither confirm nor clear the reward's collapse, judged on the reward alone
    rng = np.random.default_rng(5)
    entropy = [0.5 * rng.standard_normal() for _ in range(60)] + [2.0 + 0.2 * rng.standard_normal() for _ in range(40)]
    reward = [4.0 + 0.3 * rng.standard_normal() for _ in range(60)] + [-40.0 + 3.0 * rng.standard_normal()
                                                                      for _ in range(40)]
    f = one(make_run({"entropy": entropy, "reward_mean": reward}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["condition"] == "collapse below the start"
    assert 55 <= f.onset_step <= 62 and f.evidence["update_moved"] == "no update metric logged"


def test_real_dcg_smac_run_whose_return_collapsed_without_a_win() -> None:
    # PyMARL DCG on SMAC 3s5z (sacred info.json): return_mean deciles 10.4 ... 12.3, 11.7, 8.5, 4.8 ... 4.6,
    # battle_won_mean at most 0.10 and 0 late, grad_norm 0.28 -> 9.17: the updates destroyed what it could do
    path = corpus("h93-pymarl-dcg-smac-3s5z-td-loss-blowup-return-collapse/info.json")
    info = json.loads(path.read_text())
    returns = info["return_mean"]
    run = load(path)
    found = fired(run)
    assert "REWARD_FLOOR" not in found  # never won, but the shaped return answers the policy
    f = found["UPDATE_UNSTABLE"]
    assert f.evidence["condition"] == "collapse below the start"
    early = statistics.median(returns[: len(returns) // 5])
    late = statistics.median(returns[-(len(returns) // 5):])
    # the reader aligns the returns to the learner's steps: the medians agree with the raw list's to 0.5
    assert f.evidence["early_median"] == pytest.approx(early, abs=0.5) and early > 10
    assert f.evidence["late_median"] == pytest.approx(late, abs=0.5) and late < 5
    assert "grad_norm" in f.evidence["update_moved"]


def test_a_kl_excursion_the_run_recovers_from_while_learning() -> None:
    # token-level Q-learning on a nanoGPT (h106): KL to the reference 2.2 to 2.9 over the first 1,000
    # iterations, 0.85 at the end, success 0.6 -> 0.93: no runaway; the same KL still high at the end is one
    rng = np.random.default_rng(11)
    n = 130
    reward = list(np.concatenate([np.linspace(0.8, 1.5, 40), 1.5 + rng.normal(0, 0.02, n - 40)]))
    kl = [2.5] * 20 + [0.86] * (n - 20)
    steps = list(range(50, 50 * (n + 1), 50))  # logged every 50 iterations: the first point follows updates
    assert one(make_run({"reward_mean": reward, "kl": kl}, steps=steps), "UPDATE_UNSTABLE") is None
    f = one(make_run({"reward_mean": reward, "kl": [2.5] * n}, steps=steps), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl"
    # back under the bar without the reward rising: still judged
    flat = list(0.8 + rng.normal(0, 0.02, n))
    f = one(make_run({"reward_mean": flat, "kl": kl}, steps=steps), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl"


def test_real_nanogpt_qlearning_kl_dip_that_recovers() -> None:
    path = corpus("h106-nanogpt-qlearning-graph-kl-dip-recovers/train_qlearning.log")
    kls = [float(m) for m in re.findall(r"Iter +\d+ \|.*?\| kl=([0-9.]+) \|", path.read_text(), re.M)]
    assert max(kls[:20]) > 2.0 and statistics.median(kls[-26:]) < 1.0  # the log's own excursion and recovery
    assert "UPDATE_UNSTABLE" not in fired(load(path))


def test_a_collapse_is_dated_where_the_fall_began() -> None:
    """A gradual decline has its change point half-way down; the onset is where the level left its peak
    (h73 CS285 DQN LunarLander: a level at its peak until about 150,000 steps, the change point at 360,001),
    and a fall that recovers partly is dated at the fall, not at the recovery (h108 SAC-REINFORCE Ant)."""
    rng = np.random.default_rng(0)
    rise, held = np.linspace(0.0, 200.0, 20), np.full(30, 200.0)
    decline = np.linspace(200.0, -150.0, 100)
    reward = np.concatenate([rise, held, decline, np.full(50, -150.0)]) + rng.normal(0.0, 3.0, 200)
    f = one(make_run({"reward_mean": list(reward)}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and str(f.evidence["condition"]).startswith("collapse")
    assert 45 <= f.onset_step <= 60  # the decline starts at step 51
    for path, lo, hi in (("h108-cs294-hw5b-sac-reinforce-ant-collapse-to-control-cost-floor/log.txt", 135, 165),
                         ("h105-cs294-ac-invpendulum-collapse-after-solve/log.txt", 26, 34)):
        f = one(load(corpus(path)), "UPDATE_UNSTABLE")
        assert isinstance(f, Finding) and lo <= f.onset_step <= hi


def test_no_collapse_of_the_updates_when_every_group_was_tied_over_the_fall() -> None:
    # a newcomer's loop: the policy learns to ~0.8 by step 120, then its reward breaks: every group tied, every
    # advantage 0 from step 150. However far the reward falls, nothing was updated: not the updates' doing
    rng = np.random.default_rng(3)
    learned = [min(0.8, 0.2 + i / 200) + 0.05 * rng.standard_normal() for i in range(150)]
    fell = learned + [0.1 + 0.05 * rng.standard_normal() for _ in range(150)]
    tied = {"reward_mean": fell, "zero_variance_group_frac": [0.1] * 150 + [1.0] * 150}
    assert not isinstance(one(make_run(tied), "UPDATE_UNSTABLE"), Finding)
    zero = {"reward_mean": fell, "adv_std": [0.9] * 150 + [0.0] * 150}
    assert not isinstance(one(make_run(zero), "UPDATE_UNSTABLE"), Finding)
    # the same fall with the advantages still spread is judged on the reward (no update metric logged)
    f = one(make_run({"reward_mean": fell, "adv_std": [0.9] * 300}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["succeeded"] is True
    # its noisy version (one coin flip per group from step 150: a level of 0.5): no tail of a few low draws
    # collapses it, even with the advantages spread
    flips = learned + [float(np.mean(rng.integers(0, 2, 8))) for _ in range(150)]
    assert not isinstance(one(make_run({"reward_mean": flips, "adv_std": [0.9] * 300}), "UPDATE_UNSTABLE"), Finding)


def test_real_kl_past_the_bar_at_the_first_logging_interval_is_the_start() -> None:
    """h249-trl-grpo-orbital-thruster-json-controller-groups-tied-from-step-54: TRL GRPO on a LoRA warm-started
    by SFT, logged every 2 steps; the KL to the base model is already 2.3 at step 2 and never reaches twice
    that: the policy started away from its reference, it did not run away from it."""
    path = corpus("h249-trl-grpo-orbital-thruster-json-controller-groups-tied-from-step-54/grpo_metrics.csv")
    with path.open() as f:
        rows = [r for r in csv.DictReader(f) if r["kl"]]
    kl = [float(r["kl"]) for r in rows]
    assert int(rows[0]["step"]) == 2 and int(rows[1]["step"]) == 4 and kl[0] >= 2.0
    assert max(kl) < 2 * kl[0]
    assert REGISTRY["UPDATE_UNSTABLE"].fn(load(path), REGISTRY["UPDATE_UNSTABLE"].resolve({})) is None


def test_real_a_kl_no_policy_reaches_in_a_one_step_log() -> None:
    """h1-rookworld-trl-grpo-kl-explosion-step10: TRL logged one step (10) before the run was stopped, its KL
    to the reference 2.4e15 nats: a fact that needs no trend. A short log with an ordinary KL stays quiet."""
    path = corpus("h1-rookworld-trl-grpo-kl-explosion-step10/events.out.tfevents.1756802486.BlueBlack.5145.0")
    kl = events(path).Scalars("train/kl")
    assert len(kl) == 1 and kl[0].step == 10 and kl[0].value > 1e15
    f = one(load(path), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.severity == "error" and f.onset_step == 10 and f.evidence["metric"] == "kl"
    assert str(f.evidence["condition"]).startswith("the KL to the reference >= 1000 nats")
    assert one(make_run({"kl": [5.0, 6.0]}), "UPDATE_UNSTABLE") is None
    # its reward spread is logged, at one step: the verdict says so rather than "no reward spread was logged"
    run = load(path)
    summary = diagnose(run, *run_detectors(run)).summary
    assert "was logged at too few steps" in summary and "no reward spread was logged" not in summary


def test_real_collapse_leads_the_verdict_over_an_earlier_entropy_decline() -> None:
    """h263-mlagents-ppo-stickyrush-myrun-learns-then-collapses-with-entropy: Cumulative Reward 60 to 95 from 1M
    to 5.35M steps, -104 at 5.4M and -214 at 5.45M; the entropy fell steadily from 0.96 to about 0.15 by 3M
    (while the return held) and on to 0.02 in the collapse. Both findings are stage U; the collapse is the
    event and leads, dated at 5.4M."""
    path = corpus("h263-mlagents-ppo-stickyrush-myrun-learns-then-collapses-with-entropy/"
                  "events.out.tfevents.1760752712.ImTheAvatar.18976.0")
    ret = {e.step: e.value for e in events(path).Scalars("Environment/Cumulative Reward")}
    assert ret[5_350_000] > 85 and ret[5_400_000] < -100 and ret[5_450_000] < -200  # by hand
    run = load(path)
    verdict = diagnose(run, *run_detectors(run))
    assert [f.id for f in verdict.findings[:2]] == ["UPDATE_UNSTABLE", "ENTROPY_COLLAPSE"]
    lead = verdict.findings[0]
    assert lead.onset_step == 5_400_000 and lead.evidence["condition"] == "collapse below the start"
    assert verdict.findings[1].onset_step is not None and verdict.findings[1].onset_step < 5_400_000


def test_a_rolling_mean_of_a_flat_return_is_no_collapse(tmp_path: Path) -> None:
    # a loop that prints the mean of its last 100 episodes after every episode (the survey IQN loop on CartPole:
    # 'Average100 Score', 21 to 26 for 500 episodes): consecutive values share 99 episodes, so their step-to-step
    # noise is a tenth of the series' own spread; the course scales it by sqrt(100) and a wander of the mean is
    # no collapse
    from advcore.detectors._reward import reward_course
    from advcore.detectors._windows import step_noise

    rng = np.random.default_rng(5)
    returns = rng.normal(24.0, 9.0, 600)
    means = [float(np.mean(returns[max(0, i - 99):i + 1])) for i in range(500)]
    p = tmp_path / "training.log"
    p.write_text("".join(f"\rEpisode {i}\tAverage100 Score: {m:.2f}" for i, m in enumerate(means, start=1)) + "\n")
    run = load(p)
    values = run.frame["reward_mean"].to_list()
    course = reward_course(run)
    assert course is not None and course.noise == pytest.approx(10 * step_noise(values))
    assert not isinstance(one(run, "UPDATE_UNSTABLE"), Finding)


def test_a_mean_over_the_last_steps_shares_only_what_its_logging_interval_leaves() -> None:
    # 'Mean Reward (last 1000 steps)' printed every 1,000 steps (h425's SB3 CarRacing callback): consecutive values
    # share no step, so the noise is the values' own; printed every 100 steps, they share 900 of 1,000 and the
    # noise is scaled by sqrt(10), as for a window of episodes
    from advcore.detectors._reward import reward_course
    from advcore.detectors._windows import step_noise

    values = list(np.random.default_rng(7).normal(0.0, 0.05, 300))
    key = "mean_reward_last_1000_steps"
    for every, scale in ((1000, 1.0), (100, 10 ** 0.5)):
        run = make_run({"reward_mean": values}, steps=[every * (i + 1) for i in range(300)],
                       sources={"reward_mean": key})
        course = reward_course(run)
        assert course is not None and course.noise == pytest.approx(scale * step_noise(values))


def test_real_sb3_ppo_carracing_callback_mean_per_step_reward_collapses_after_its_peak() -> None:
    """checked: the per-step reward's median by 50 prints -0.047 at the start, 0.31-0.33 around 150k-250k
    timesteps, -0.03 to -0.07 from 600k to the end at 1,043k; the run was abandoned there."""
    path = corpus("h425-sb3-ppo-cnn-multicarracing-continuous-notebook-per-step-reward-peaks-0.35-at-200k-decays-"
                  "below-its-random-start-by-600k-run-abandoned-at-1.04m-of-2m/ppo.ipynb")
    run = load(path)
    values = run.frame["reward_mean"].to_list()
    assert len(values) == 1043 and np.median(values[150:250]) > 0.3 and np.median(values[600:]) < -0.02
    verdict = diagnose(run, *run_detectors(run))
    lead = verdict.findings[0]
    assert lead.id == "UPDATE_UNSTABLE" and lead.evidence["condition"] == "collapse after success"
    assert lead.onset_step is not None and 200_000 < lead.onset_step < 400_000


def test_a_value_loss_that_grew_while_the_critic_fits_is_no_divergence() -> None:
    # the same loss that outgrows the returns' square, beside a critic that explains 90 % of them late: fitting
    n = 50
    returns = [10.0] * 25 + [500.0] * 25
    exploding = [0.5 * r ** 2 * 10 ** (4 * i / (n - 1)) for i, r in enumerate(returns)]
    for explained, diverged in ((0.9, False), (0.2, True)):
        run = make_run({"reward_mean": returns, "value_loss": exploding, "vf_explained_var": [0.1] * 25 + [explained] * 25})
        f = one(run, "UPDATE_UNSTABLE")
        assert (isinstance(f, Finding) and f.evidence["metric"] == "value_loss") is diverged


def test_real_sb3_walker_whose_critic_fits_growing_returns_is_dated_by_its_collapse() -> None:
    # SB3 PPO on a MuJoCo Unitree A1: every return is clipped at 0 for the first fifth (value loss about 0.001),
    # the returns grow to ~2,000 and the value loss to ~100 while the explained variance ends near 0.9; then the
    # deterministic evaluation falls from 1,000-2,274 to about 100 over its last six evaluations (950k to 1M)
    folder = "h276-sb3-ppo-unitree-a1-mujoco-walk-evalcallback-peaks-then-deterministic-policy-falls/"
    tb = corpus(folder + "events.out.tfevents.1733640611.DESKTOP-S01480D.438104.0")
    evaluations = corpus(folder + "evaluations.npz")
    explained = [e.value for e in events(tb).Scalars("train/explained_variance")]
    assert np.median(explained[-len(explained) // 5:]) > 0.5
    assert one(load(tb), "UPDATE_UNSTABLE") is None  # the value loss grew with the returns the critic fits
    arrays = np.load(evaluations)
    means, steps = arrays["results"].mean(axis=1), arrays["timesteps"]
    f = one(load(evaluations), "UPDATE_UNSTABLE")
    assert all(means[-6:] < 150) and isinstance(f, Finding) and f.onset_step == int(steps[-6]) == 950000


def test_a_self_play_return_that_fell_while_the_rating_held_is_the_opponents_progress() -> None:
    cols = _hold_then_fall(4.4)
    rng = np.random.default_rng(7)
    n = len(cols["reward_mean"])
    climbing = list(np.linspace(1200.0, 1400.0, n) + rng.normal(0.0, 5.0, n))
    assert isinstance(one(make_run(cols), "UPDATE_UNSTABLE"), Finding)
    assert one(make_run({**cols, "elo": climbing}), "UPDATE_UNSTABLE") is None
    falling = list(np.linspace(1400.0, 1200.0, n) + rng.normal(0.0, 5.0, n))  # the rating fell with the return
    assert isinstance(one(make_run({**cols, "elo": falling}), "UPDATE_UNSTABLE"), Finding)


def test_real_hide_and_seek_hiders_whose_return_fell_as_the_seekers_learned() -> None:
    # florian1702/ML_HideAndSeek, the Hider behaviour of an asymmetric self-play run (four sessions): the hiders'
    # return falls from about 143 to -19 as the seekers learn to find them, while the hiders' ELO climbs
    folder = ("h309-mlagents-ppo-asymmetric-selfplay-hide-and-seek-hider-return-155-to-minus-26-as-seekers-improve-"
              "elo-rises-healthy")
    paths = sorted(corpus(f"{folder}/{name}") for name in (
        "events.out.tfevents.1735566547.Florian-Laptop.22356.1", "events.out.tfevents.1735637118.Florian-Laptop.12004.0",
        "events.out.tfevents.1735811638.Florian-Laptop.11016.0", "events.out.tfevents.1735828699.Florian-Laptop.21812.1"))
    reward = [e.value for p in paths for e in events(p).Scalars("Environment/Cumulative Reward")]
    elo = [e.value for p in paths for e in events(p).Scalars("Self-play/ELO")]
    fifth_r, fifth_e = len(reward) // 5, len(elo) // 5
    assert np.median(reward[:fifth_r]) > 100 > 0 > np.median(reward[-fifth_r:])
    assert np.median(elo[-fifth_e:]) > np.median(elo[:fifth_e]) + 100
    (run,) = join_runs([load(p) for p in paths])
    findings, not_evaluable = run_detectors(run)
    assert "UPDATE_UNSTABLE" not in {f.id for f in findings}
    assert "the self-play rating rose" in diagnose(run, findings, not_evaluable).summary


def test_real_foosball_return_pinned_near_one_value_did_not_collapse() -> None:
    # KaiKz/foosballProject3: the ball never moves, every episode ends at step 10 with 2,350 +- 1.5; a step noise
    # near 0 had a level of 2,352 read as a success and 2,350 as its collapse
    folder = "h323-sb3-tqc-mujoco-foosball-ball-never-moves-every-episode-ends-at-10-steps-return-pinned-at-2350-dead-from-start"
    path = corpus(f"{folder}/events.out.tfevents.1763069284.DESKTOP-K6T5L05.24520.0")
    returns = [e.value for e in events(path).Scalars("rollout/ep_rew_mean")]
    assert max(returns) - min(returns) < 0.005 * np.median(returns) and 2340 < np.median(returns) < 2360
    assert not isinstance(one(load(path), "UPDATE_UNSTABLE"), Finding)


def test_a_critic_chasing_returns_that_crossed_zero_has_a_loss_on_the_scale_of_the_move() -> None:
    # h324's CARLA cruise control: returns -247 -> 289 (their magnitude barely changes) while the value loss grows
    # from 1.1 to 283: the returns moved by 536, and a critic chasing them has a loss on that scale
    n = 120
    reward = list(np.linspace(-250.0, 290.0, n))
    value_loss = list(np.geomspace(1.1, 600.0, n))
    assert one(make_run({"reward_mean": reward, "value_loss": value_loss}), "UPDATE_UNSTABLE") is None
    flat = [-250.0 + (i % 3) for i in range(n)]  # the same loss under returns that did not move: a divergence
    assert isinstance(one(make_run({"reward_mean": flat, "value_loss": value_loss}), "UPDATE_UNSTABLE"), Finding)


def test_real_dqn_td_loss_is_read_as_the_critic_loss_and_its_divergence_found() -> None:
    # h327's AirSim DQN with target_update_interval 1: SB3 DQN logs its TD (Huber) loss as train/loss, 12.9 at step 100
    # and about 1e10 over its last tenth while the returns stay near -150
    folder = "h327-sb3-dqn-airsim-drone-target-update-interval-1-td-loss-13-to-6e10-return-never-improves"
    path = corpus(f"{folder}/events.out.tfevents.1668847421.Citadel.13692.0")
    loss = [e.value for e in events(path).Scalars("train/loss")]
    tags = events(path).Tags()["scalars"]
    assert "train/value_loss" not in tags and loss[0] < 20 and np.median(loss[-len(loss) // 10:]) > 1e9
    run = load(path)
    assert run.sources["value_loss"] == "train/loss"
    f = one(run, "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "value_loss" and f.onset_step < 2500


def test_sb3_ppo_total_loss_yields_to_its_value_loss() -> None:
    # SB3 PPO logs train/loss (policy + value + entropy terms) beside train/value_loss: the alias table's order,
    # not the columns', picks the critic's own loss
    path = real("carla-sb3-ppo-kl-blowup/events.out.tfevents.1755701530.Legion.256656.0")
    value = [e.value for e in events(path).Scalars("train/value_loss")]
    run = load(path)
    assert run.sources["value_loss"] == "train/value_loss"
    assert run.frame["value_loss"].drop_nulls().to_list() == pytest.approx(value, rel=1e-6)


def test_a_critic_that_first_fitted_a_constant_return_has_not_diverged() -> None:
    # h328's sparse triple acrobot DQN: every episode earned -1000 for half the run, the TD loss about 1e-4; once
    # successes entered the buffer it rose to 0.02-0.15, hundreds of times that but 0.03 % of the returns
    folder = "h328-sb3-dqn-triple-acrobot-sparse-reward-seed1-return-pinned-at-minus-1000-floor-for-488k-of-1m-steps"
    path = corpus(f"{folder}/events.out.tfevents.1778923662.66290ef1dc6c.16.0")
    loss = [e.value for e in events(path).Scalars("train/loss")]
    returns = [e.value for e in events(path).Scalars("rollout/ep_rew_mean")]
    early, late = np.median(loss[:len(loss) // 5]), np.median(loss[-len(loss) // 5:])
    assert late > 100 * early and late < (0.01 * max(abs(r) for r in returns)) ** 2
    assert not isinstance(one(load(path), "UPDATE_UNSTABLE"), Finding)
    # the same loss curve under returns a hundredth as large is a critic erring by more than its returns
    n = 100
    small = make_run({"reward_mean": [-10.0 + 0.01 * (i % 3) for i in range(n)],
                      "value_loss": list(np.geomspace(1e-4, 0.1, n))})
    assert isinstance(one(small, "UPDATE_UNSTABLE"), Finding)


def test_real_first_update_of_37_nats_the_reward_never_recovered_from() -> None:
    # h327's AirSim PPO at learning rate 0.1: approx_kl 37.3 and clip fraction 0.995 on its first update (step
    # 4,096); one return was logged before it (-100.3, two-step collisions), none after above -877
    folder = "h327-sb3-ppo-airsim-drone-lr-0.1-first-update-kl-37-clip-0.99-entropy-to-zero-return-minus-880-flat"
    path = corpus(f"{folder}/events.out.tfevents.1676558250.Citadel.2800.0")
    kl = events(path).Scalars("train/approx_kl")
    returns = events(path).Scalars("rollout/ep_rew_mean")
    assert kl[0].step == 4096 and kl[0].value > 30 and max(e.value for e in kl[1:]) < 1
    assert [e.step for e in returns if e.step < 4096] == [2048] and max(e.value for e in returns[1:]) < -800
    f = one(load(path), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.onset_step == 4096 and f.evidence["metric"] == "kl_step"


def test_real_return_that_fell_below_every_early_value_collapsed_though_its_start_was_noisy() -> None:
    # h333's curiosity-driven killer: its first summaries swing -8.2 to -0.3, its last 22 lie at -12.6 to -23.7;
    # the drop is 8 noises (not the 10 a noisy start asks for) but no late value comes near an early one
    folder = ("h333-mlagents-ppo-curiosity-1.0-camp-kawanakwa-killer-learns-to-minus-0.3-then-falls-to-minus-15-"
              "at-1m-entropy-rises")
    path = corpus(f"{folder}/events.out.tfevents.1627347569.LAPTOP-86KCIFB1.5528.0")
    returns = [e.value for e in events(path).Scalars("Environment/Cumulative Reward")]
    k = max(3, round(0.2 * len(returns)))
    assert max(returns[-k:]) < min(returns[:k]) and len(returns) == 42
    f = one(load(path), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["condition"] == "collapse below the start"
    assert 960_000 <= f.onset_step <= 1_200_000


def test_real_isolated_update_kl_spikes_do_not_date_the_blowup_that_came_much_later() -> None:
    # h341's climbbot reach: approx_kl 1.2 and 3.0 at 127k steps, then below 1 while the return rose for 380k steps;
    # from 475k one update after another at 2 to 17 nats, and the return collapsed (a newcomer was sent 650k steps
    # before the trouble)
    folder = "h341-sb3-ppo-climbbot-two-arm-reach-1m-learns-minus-740-to-minus-290-approx-kl-up-to-17-then-collapses-to-minus-1006"
    npz = corpus(f"{folder}/evaluations.npz")
    board = next(p for p in npz.parent.iterdir() if p.name.startswith("events.out.tfevents"))
    kl = events(board).Scalars("train/approx_kl")
    spikes = [e.step for e in kl if e.value >= 1.0]
    assert spikes[0] < 130_000 and spikes[1] < 130_000 and spikes[2] > 470_000 and len(spikes) >= 20
    f = one(load(board), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl_step" and f.onset_step == spikes[2]
    # its entropy (six Gaussian action dimensions, 8.5 -> 1.0 as the std went 1.0 -> 0.26) has no level a share of
    # which says "deterministic"
    e = one(load(board), "ENTROPY_COLLAPSE")
    assert not (isinstance(e, Finding) and e.evidence["rule"] in ("relative", "absolute"))


def test_a_decline_ranked_with_the_step_is_a_collapse_at_a_few_noises() -> None:
    # a return sliding down the whole run, 4 noises from its early median to its late one: no noise ranks 100 points
    # with the step that way (Spearman about -0.9); the gradient norm doubles over it
    rng = np.random.default_rng(11)
    noise = rng.normal(0, 0.25, 100)
    slide = [12.0 - 0.012 * i + float(e) for i, e in enumerate(noise)]
    grad = [0.3 + 0.006 * i for i in range(100)]
    f = one(make_run({"reward_mean": slide, "grad_norm": grad}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["condition"] == "collapse below the start"
    # the same early and late windows around a higher middle: as far from the one to the other, but no decline
    hump = slide[:20] + [12.5 + float(e) for e in noise[20:80]] + slide[80:]
    assert float(scipy_stats.spearmanr(range(100), hump).statistic) > -0.6
    assert one(make_run({"reward_mean": hump, "grad_norm": grad}), "UPDATE_UNSTABLE") is None


def test_real_object_collector_whose_return_halves_down_the_run() -> None:
    # HadiSDev's ML-Agents POCA object collector with a constant entropy coefficient: the return slides from a median
    # of about 22 early to about 11 late, a few noises, but down the whole run
    path = corpus("h186-mlagents-poca-object-collector-constant-beta-entropy-grows-return-halves/"
                  "events.out.tfevents.1649076152.cn6.80365.0")
    acc = events(path)
    # POCA: each agent's own return (0 here) plus the group's, the return the group is trained on
    own = {e.step: e.value for e in acc.Scalars("Environment/Cumulative Reward")}
    points = [(e.step, e.value + own[e.step]) for e in acc.Scalars("Environment/Group Cumulative Reward")]
    rho = float(scipy_stats.spearmanr([s for s, _ in points], [v for _, v in points]).statistic)
    assert rho <= -0.6 and len(points) >= 20
    f = one(load(path), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["succeeded"] is False
    assert f.evidence["early_median"] > 1.5 * f.evidence["late_median"]


def test_a_return_learned_inside_the_early_window_that_collapses_to_its_floor_is_a_collapse() -> None:
    # florentin1304/robotlearning_project, SB3 PPO on the course's Hopper at lr 3e-3: the return rose from about 12
    # at its first episodes to a median of 320 over its first fifth (learned inside the early window), then fell to
    # the falling-at-once floor; the late window at its floor is a collapse of what was learned, not REWARD_FLOOR's
    # never-learned floor
    path = corpus("h393-sb3-ppo-custom-hopper-source-constant-lr-3e-3-gamma-0.99-learns-to-855-then-collapses-at-"
                  "410k-to-falling-at-once-twice/ppo_source_lr0.003_gamma0.99.monitor.csv")
    table = pl.read_csv(path, skip_rows=1)
    returns = table["r"].to_list()
    fifth = len(returns) // 5
    early, late = statistics.median(returns[:fifth]), statistics.median(returns[-fifth:])
    assert statistics.median(returns[:5]) < 20 and late < 0.1 * early  # rose first, then fell below a tenth of it
    run = load(path)
    f = one(run, "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["condition"] == "collapse below the start"
    assert f.evidence["early_median"] == pytest.approx(early, rel=0.01)
    assert f.evidence["risen_from"] < 20 and "risen from" in f.message
    assert diagnose(run, *run_detectors(run)).headline == "UPDATE_UNSTABLE"


def test_a_rise_made_in_the_early_window_that_kept_most_of_its_gain_held() -> None:
    # h461-drlnd-ddpg-unity-reacher-20-agents-batch-1024's shape: an average score 0.7 at the first print and 37 by
    # the seventh, easing to 33 and holding there: the early window's median holds most of the rise, and the 3 points
    # above it given back are a tenth of the rise, not a collapse; the same run down to 10 is one
    rng = np.random.default_rng(4)
    rise = [37.0 * (1 - math.exp(-i / 1.5)) for i in range(7)]
    ease = list(np.linspace(36.8, 33.0, 20) + rng.normal(0, 0.3, 20))
    held = rise + ease + list(33.0 + rng.normal(0, 0.3, 23))
    course = reward_course(make_run({"reward_mean": held}, trainer="sb3"))
    assert course is not None and course.rose_early and course.gave_back() >= 0.75  # all of the gain above the median
    assert not isinstance(one(make_run({"reward_mean": held}, trainer="sb3"), "UPDATE_UNSTABLE"), Finding)
    collapsed = held[:27] + list(10.0 + rng.normal(0, 0.3, 23))
    f = one(make_run({"reward_mean": collapsed}, trainer="sb3"), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["condition"] == "collapse after success"


def test_real_reacher_that_kept_its_score_above_the_target_held_its_success() -> None:
    path = corpus("h461-drlnd-ddpg-unity-reacher-20-agents-batch-1024-decaying-gaussian-noise-1000-episodes-solved-by-60-"
                  "mean-37-then-settles-at-32-34-healthy/DDPG.ipynb")
    run = load(path)
    scores = run.frame["reward_mean"].to_list()
    assert min(scores[-10:]) > 30  # the task's target, kept to the end
    assert "UPDATE_UNSTABLE" not in fired(run)
