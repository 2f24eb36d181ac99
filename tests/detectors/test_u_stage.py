"""NONFINITE, BASELINE_BROKEN, UPDATE_SUPPRESSED and ENTROPY_COLLAPSE: synthetic firing and quiet
fixtures with hand-computed ground truth, the not-applicable rule of DEGENERATE_GROUPS on critic
runs, the registry/card self-test, and checks on the real logs against values parsed
independently from the files (regex + numpy) or stated in their SOURCE.md."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from advcore.detectors import GROUP_BASELINE, REGISTRY, Finding, NotEvaluable, run_detectors
from advcore.diagnose import diagnose
from advcore.ingest import Run, load
from advcore.detectors._reward import reward_course
from advcore.stages import stage_of
from tests._real import corpus, events, real
from tests.detectors._fixtures import fired as fired_by
from tests.detectors._fixtures import make_run, one

ROOT = Path(__file__).resolve().parents[2]
MINE = ("NONFINITE", "BASELINE_BROKEN", "UPDATE_SUPPRESSED", "ENTROPY_COLLAPSE")
NAN, INF = float("nan"), float("inf")


def fired(run: Run) -> dict[str, Finding]:
    return fired_by(run)


# --- NONFINITE ----------------------------------------------------------------------------------

def test_nonfinite_reports_the_first_value_and_what_followed() -> None:
    grad = [1.0, 1.5, 2.0, 4.0, 9.0, 30.0, NAN, NAN, NAN, NAN]
    kl = [0.01] * 8 + [INF, NAN]
    run = make_run({"grad_norm": grad, "kl": kl, "reward_mean": [0.5] * 10, "entropy": [1.0] * 9 + [None]})
    f = one(run, "NONFINITE")
    assert isinstance(f, Finding) and f.severity == "error" and f.stage == "any"
    assert f.onset_step == 7 and f.evidence["metric"] == "grad_norm" and f.evidence["value"] == "nan"
    assert f.evidence["last_finite_value"] == 30.0  # the grad norm at step 6, blowing up before the NaN
    assert f.evidence["then"] == [{"metric": "kl", "step": 9, "value": "inf"}]
    assert f.evidence["nonfinite_counts"] == {"grad_norm": 4, "kl": 2}  # a null entropy is not counted
    assert "grad_norm is nan at step 7" in f.message


def test_nonfinite_same_row_and_phase_and_signs() -> None:
    run = make_run({"loss_scale": [1.0, 1.0, 1.0, 1.0], "kl": [0.1, -INF, 0.1, 0.1], "entropy": [1.0, INF, 1.0, 1.0]},
                steps=[5, 6, 1, 2], phase=[0, 0, 1, 1])
    f = one(run, "NONFINITE")
    assert isinstance(f, Finding)
    assert f.onset_step == 6 and f.evidence["onset_phase"] == 0
    assert sorted(f.evidence["metrics_at_onset"]) == ["entropy", "kl"]
    assert {f.evidence["metric"]: f.evidence["value"]} in ({"kl": "-inf"}, {"entropy": "inf"})


def test_nonfinite_quiet_and_not_evaluable() -> None:
    assert one(make_run({"grad_norm": [1.0, None, 2.0], "kl": [0.0, 0.1, 0.2]}), "NONFINITE") is None
    empty = Run("x", "x", None, pl.DataFrame({"step": pl.Series([1, 2], dtype=pl.Int64)}), {}, {})
    out = one(empty, "NONFINITE")
    assert isinstance(out, NotEvaluable) and out.needs == ("any metric another detector reads",)
    # only bookkeeping columns, all finite: not judged rather than clean; a NaN there still counts
    lr_only = make_run({"lr": [1e-6] * 10})
    assert isinstance(one(lr_only, "NONFINITE"), NotEvaluable)
    f = one(make_run({"lr": [1e-6] * 5 + [NAN] * 5}), "NONFINITE")
    assert isinstance(f, Finding) and f.onset_step == 6


def test_nonfinite_placeholders_before_the_first_finite_value_do_not_count() -> None:
    # a running best initialised to -inf and a mean of no episodes (NaN) before the metric exists
    run = make_run({"reward_mean": [NAN, NAN, 0.1, 0.2, 0.3], "best_reward": [-INF, -INF, -INF, 0.1, 0.2]})
    assert one(run, "NONFINITE") is None
    # the same NaN once the metric has had a finite value counts, and a metric never finite counts from row 1
    f = one(make_run({"reward_mean": [NAN, 0.1, NAN, 0.2, 0.3]}), "NONFINITE")
    assert isinstance(f, Finding) and f.onset_step == 3 and f.evidence["nonfinite_counts"] == {"reward_mean": 1}
    f = one(make_run({"grad_norm": [NAN] * 5, "reward_mean": [0.1] * 5}), "NONFINITE")
    assert isinstance(f, Finding) and f.onset_step == 1 and f.evidence["nonfinite_counts"] == {"grad_norm": 5}


def test_nonfinite_placeholder_in_a_key_without_a_canonical_name(tmp_path: Path) -> None:
    # ingest records an unmapped key's first counted non-finite value under the same rule
    # ... and a key without a canonical name that is never finite is undefined for the run, not a fault
    # (ML-Agents SAC's `Policy/Discrete Entropy Coeff`, the mean of no discrete branches)
    rows = [{"step": s, "reward": 0.1 * s, "best_so_far": "-inf" if s < 3 else 0.1 * s,
             "other": "nan" if s == 4 else 1.0, "Policy/Discrete Entropy Coeff": "nan"} for s in range(1, 7)]
    p = tmp_path / "m.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = load(p)
    assert [item["key"] for item in run.metadata["nonfinite_unmapped"]] == ["other"]
    f = fired(run)["NONFINITE"]
    assert f.evidence["metric"] == "other" and f.onset_step == 4


def test_nonfinite_comes_before_what_followed_it() -> None:
    # grad_norm turns NaN at step 25, the advantages collapse from step 31: the NaN leads
    adv = [1.0] * 30 + [0.01] * 40
    run = make_run({"adv_std": adv, "grad_norm": [1.0] * 24 + [NAN] * 46, "reward_std": [0.5] * 70})
    findings, missing = run_detectors(run)
    assert {"NONFINITE", "ADV_COLLAPSE"} <= {f.id for f in findings}
    verdict = diagnose(run, findings, missing)
    # the NaN is a gradient norm's: the update stage, ahead of the advantages' collapse that followed it
    assert verdict.headline == "NONFINITE" and verdict.onset == 25 and verdict.stage == "U"
    # the advantages collapse at step 31 and grad_norm turns NaN only at step 60: the NaN followed the
    # collapse, which leads (the NaN stays in the findings, after it)
    run = make_run({"adv_std": adv, "grad_norm": [1.0] * 59 + [NAN] * 11, "reward_std": [0.5] * 70})
    findings, missing = run_detectors(run)
    verdict = diagnose(run, findings, missing)
    assert verdict.headline == "ADV_COLLAPSE" and verdict.onset == 31
    assert [f.id for f in verdict.findings][-1] == "NONFINITE"


def test_a_nonfinite_lead_puts_the_verdict_at_the_stage_of_its_metrics() -> None:
    # h156-trl-grpo-qwen15b-unlearning-run4-kl-drift-nan-crash: grad_norm and kl NaN on one row, nothing else
    ok = [0.3 + 0.01 * i + 0.02 * (-1) ** i for i in range(20)]  # a noisy rise
    run = make_run({"grad_norm": [1.0] * 12 + [NAN] * 8, "kl": [0.01] * 12 + [NAN] * 8, "reward_mean": ok})
    verdict = diagnose(run, *run_detectors(run))
    assert verdict.headline == "NONFINITE" and verdict.stage == "U"
    run = make_run({"reward_mean": ok[:12] + [NAN] * 8, "grad_norm": [1.0] * 20})
    verdict = diagnose(run, *run_detectors(run))
    assert verdict.headline == "NONFINITE" and verdict.stage == "R"
    # a NaN reward and a NaN gradient norm on the same row: which one came first is not known
    run = make_run({"reward_mean": ok[:12] + [NAN] * 8, "grad_norm": [1.0] * 12 + [NAN] * 8})
    verdict = diagnose(run, *run_detectors(run))
    assert verdict.headline == "NONFINITE" and verdict.stage is None


def test_stage_of_canonical_metrics() -> None:
    assert [stage_of(m) for m in ("reward_mean", "reward/format", "value_loss", "adv_std", "kl", "entropy/agent_0")] \
        == ["R", "R", "A", "T", "U", "U"]
    assert stage_of("Loss / Policy loss") is None and stage_of("my/unknown") is None


def test_nonfinite_end_to_end_from_a_trainer_state(tmp_path: Path) -> None:
    rows = [{"step": s, "loss": 0.1, "reward": 0.5, "reward_std": 0.3,
             "grad_norm": float("nan") if s >= 8 else 1.0} for s in range(1, 13)]
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({"log_history": rows}))
    f = fired(load(p))["NONFINITE"]
    assert f.onset_step == 8 and f.evidence["metric"] == "grad_norm"


def test_nonfinite_is_info_for_a_quantity_outside_the_update_that_recovers(tmp_path: Path) -> None:
    # a mean error of the answers is inf on the rounds where one did not parse, finite between, while every
    # training metric stays finite: the loop could not compute it there, nothing blew up
    rows = [{"step": s, "loss": 0.1, "reward": 0.5, "reward_std": 0.3, "grad_norm": 1.0,
             "metrics/mae": float("inf") if s % 3 == 0 else 20.0} for s in range(1, 13)]
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({"log_history": rows}))
    f = fired(load(p))["NONFINITE"]
    assert f.severity == "info" and f.onset_step == 3 and f.evidence["nonfinite_counts"] == {"metrics/mae": 4}
    assert f.what_to_try == dict(REGISTRY["NONFINITE"].what_to_try_cases)["A quantity outside the update, finite again after"]
    # the same pattern in a key of the update (a loss the loop skips when NaN) is a fault
    for r in rows:
        r["policy/actor_loss"] = r.pop("metrics/mae")
    p.write_text(json.dumps({"log_history": rows}))
    assert fired(load(p))["NONFINITE"].severity == "error"
    # and one that never recovers is one too
    rows = [{"step": s, "loss": 0.1, "reward": 0.5, "metrics/mae": float("inf") if s >= 6 else 20.0}
            for s in range(1, 13)]
    p.write_text(json.dumps({"log_history": rows}))
    assert fired(load(p))["NONFINITE"].severity == "error"


def test_real_mean_pose_error_infinite_on_unparsed_rounds_is_info() -> None:
    """h267-handwritten-grpo-qwen25vl7b-ultrasound-probe-pose-task-reward-pinned-at-floor-format-only-gains:
    ``metrics/mae`` (the mean pose error of a round's 16 answers) is Infinity on 77 of 292 rounds, where one
    answer did not parse; loss, grad_norm, kl and the rewards are finite on every round."""
    path = corpus("h267-handwritten-grpo-qwen25vl7b-ultrasound-probe-pose-task-reward-pinned-at-floor-format-only-"
                  "gains/train_logs.json")
    doc = json.loads(path.read_text())
    bad = sorted(int(k) for k, v in doc.items() if not math.isfinite(v["metrics/mae"]))
    assert len(bad) == 77 and all(math.isfinite(x) for v in doc.values() for k, x in v.items() if k != "metrics/mae")
    f = fired(load(path))["NONFINITE"]
    assert f.severity == "info" and f.onset_step == bad[0] and f.evidence["nonfinite_counts"] == {"metrics/mae": 77}


# --- ENTROPY_COLLAPSE ---------------------------------------------------------------------------

def test_entropy_collapse_relative_fires_with_onset_at_the_drop() -> None:
    entropy = [1.0] * 40 + [0.05] * 60
    f = one(make_run({"entropy": entropy}), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.stage == "U" and f.severity == "warn"
    assert f.evidence["rule"] == "relative" and f.onset_step == 41
    assert f.evidence["early_mean"] == pytest.approx(1.0) and f.evidence["late_mean"] == pytest.approx(0.05)


def test_entropy_collapse_quiet_on_a_slow_decline_and_knob_override() -> None:
    decline = list(np.linspace(1.0, 0.5, 100))  # late/early = 0.525/0.975: healthy sharpening
    run = make_run({"entropy": decline})
    assert one(run, "ENTROPY_COLLAPSE") is None
    f = one(run, "ENTROPY_COLLAPSE", fraction=0.6)
    assert isinstance(f, Finding)
    # the cut is 0.6 * early mean; the first point below it is the onset (the series only falls)
    early = float(np.mean(decline[:20]))
    assert f.onset_step == 1 + next(i for i, v in enumerate(decline) if v < 0.6 * early)


def test_entropy_collapse_absolute_floor_for_a_log_that_begins_after_it() -> None:
    low = [0.005, 0.004, 0.006, 0.005, 0.008, 0.004, 0.005, 0.005]
    f = one(make_run({"entropy": low}, steps=list(range(383, 391)), trainer="verl"), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "absolute"
    assert f.onset_step == 383 and f.evidence["already_low_at_first_logged_step"] is True
    # SB3 (mostly Gaussian policies) and entropies that go negative are differential entropies: no floor
    assert one(make_run({"entropy": low}, trainer="sb3"), "ENTROPY_COLLAPSE") is None
    assert one(make_run({"entropy": [-0.2, 0.005] * 4}, trainer=None), "ENTROPY_COLLAPSE") is None
    # a low but healthy level (verl-ppo-qwen7b sits at 0.020 to 0.040) stays quiet
    assert one(make_run({"entropy": [0.03, 0.02, 0.04, 0.035] * 5}, trainer="verl"), "ENTROPY_COLLAPSE") is None


def test_a_deterministic_policy_whose_entropy_rounds_below_zero_is_still_discrete() -> None:
    # ML-Agents logs -1.19e-07 (-2**-23, float32 rounding of 0) once a PPO policy is deterministic: a collapse,
    # not a Gaussian's differential entropy; a clearly negative entropy still is one
    collapsed = [0.98 * 0.7**i for i in range(15)] + [-1.1920929e-07] * 85
    f = one(make_run({"entropy": collapsed}, trainer=None), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "relative"
    gaussian = [0.98 * 0.7**i for i in range(15)] + [-0.01] * 85
    assert one(make_run({"entropy": gaussian}, trainer=None), "ENTROPY_COLLAPSE") is None


def test_entropy_falling_while_the_reward_rises_and_groups_keep_contrast_is_sharpening() -> None:
    n = 100
    entropy = [1.0] * 30 + [0.05] * 70
    reward = [0.2 + 0.5 * min(1.0, i / 50) + 0.01 * (-1) ** i for i in range(n)]  # rises, then holds
    kept = make_run({"entropy": entropy, "reward_mean": reward, "adv_std": [0.8] * 50 + [0.6] * 50})
    f = one(kept, "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.severity == "info" and f.onset_step == 31
    assert f.evidence["contrast_late_over_early"] == pytest.approx(0.75)
    assert diagnose(kept, [f], []).stage is None
    # the lab's entropy fault: the reward still rises, but the groups tie as the policy turns deterministic
    tied = make_run({"entropy": entropy, "reward_mean": reward, "adv_std": [0.8] * 50 + [0.2] * 50})
    assert one(tied, "ENTROPY_COLLAPSE").severity == "warn"
    # the lab's hard negative high_plateau (three times the learning rate) keeps 46 % to 64 %: sharpening
    kept45 = make_run({"entropy": entropy, "reward_mean": reward, "adv_std": [0.8] * 50 + [0.36] * 50})
    f = one(kept45, "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.severity == "info"
    assert f.evidence["contrast_late_over_early"] == pytest.approx(0.45)
    # a reward that falls back while the entropy falls is no sign of learning
    fell = make_run({"entropy": entropy, "reward_mean": reward[:60] + [0.2] * 40})
    assert one(fell, "ENTROPY_COLLAPSE").severity == "warn"


def test_a_rise_inside_the_early_window_that_held_is_learning_too() -> None:
    # the return climbs from 200 to 1,000 over the first 10 of 200 updates and holds; the entropy falls to 4 %
    rng = np.random.default_rng(3)
    reward = [200.0 + 80.0 * min(i, 10) + float(e) for i, e in enumerate(rng.normal(0, 30, 200))]
    entropy = [0.9] * 40 + [0.04] * 160
    f = one(make_run({"entropy": entropy, "reward_mean": reward}), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.severity == "info"
    assert f.evidence["early_median"] < 400 < 900 < f.evidence["late_median"]  # told from the start, not the window
    # the same entropy over a return that never left its start is a collapse
    flat = [200.0 + float(e) for e in rng.normal(0, 30, 200)]
    assert one(make_run({"entropy": entropy, "reward_mean": flat}), "ENTROPY_COLLAPSE").severity == "warn"


def test_real_tractor_fleet_policy_converges_to_nearly_one_action_as_it_learns() -> None:
    # SB3 PPO on a 7-day fleet task whose best policy is nearly one action a day: the return 226 -> about 1,100 in
    # 35k steps (inside the early window), held to 500k; the entropy 0.90 -> 0.04
    path = corpus("h374-sb3-ppo-agrika-tractor-fleet-7-day-episodes-converges-by-35k-return-226-to-1150-entropy-to-0.03-"
                  "plateau-healthy/events.out.tfevents.1754390740.Joh.12596.0")
    returns = [e.value for e in events(path).Scalars("rollout/ep_rew_mean")]
    run = load(path)
    f = one(run, "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.severity == "info"
    # told from its start: the higher of the first two returns (226, 307), both far below the early window's level
    assert f.evidence["early_median"] == pytest.approx(max(returns[:2])) and max(returns[:2]) < 0.5 * returns[-1]
    assert f.evidence["late_median"] > 3 * f.evidence["early_median"]


def test_cs336_reinforce_baseline_sharpens_to_low_entropy_while_it_learns() -> None:
    # writeup: 'This low entropy is not by itself a failure signal'; entropy 0.92 -> 0.03, reward 0.02 -> 0.8
    run = load(corpus("h13-cs336-grpo-reinforce-baseline-learns-low-entropy/metrics.jsonl"))
    findings, missing = run_detectors(run)
    f = next(f for f in findings if f.id == "ENTROPY_COLLAPSE")
    assert f.severity == "info" and f.evidence["late_median"] > f.evidence["early_median"]
    assert diagnose(run, findings, missing).stage is None


def test_a_negative_first_entropy_alone_is_a_stray_not_a_gaussian_policy() -> None:
    # the Dou Dizhu PPO log's entropy proxy: -19.3 at epoch 0, then 0.6 falling to 0.0000
    entropy = [-19.3] + [0.6] * 20 + [0.001] * 40
    f = one(make_run({"entropy": entropy}, steps=list(range(61))), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["stray_first_point_dropped"] is True
    assert f.onset_step == 21 and f.evidence["early_mean"] == pytest.approx(0.6)
    # a second negative point is a differential entropy again: not judged
    assert one(make_run({"entropy": [-19.3, -0.1] + entropy[2:]}), "ENTROPY_COLLAPSE") is None


def test_real_doudizhu_entropy_collapse_behind_a_stray_first_epoch() -> None:
    # logs/exp1.log: entropy proxy -23.5 at epoch 0, 4.77 at 1, below 0.1 from epoch 14, 0.0000 from 41
    run = load(corpus("h67-doudizhu-transformer-ppo-entropy-collapse-plateau/exp1.log"))
    f = one(run, "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["stray_first_point_dropped"] is True
    assert run.frame["entropy"][0] < 0 and 7 <= f.onset_step <= 16
    assert not isinstance(one(run, "UPDATE_SUPPRESSED"), Finding)  # its KL sits below 0, not at it, after epoch 17


def test_entropy_still_falling_when_the_log_ends_is_judged_on_its_last_points() -> None:
    # tinker-cookbook metrics.jsonl: optim/entropy ~0.32 for steps 0-65, then a steady fall to 0.02-0.06 at the
    # end, with rebounds (0.22 at step 171); env/all/reward/total flat around 0. The late-window mean stays above
    # a quarter of the early mean; the last 10 % of the points sit far below it.
    path = corpus("h137-tinker-multitask-qwen3-30b-entropy-falls-reward-flat/metrics.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    entropy = np.array([r["optim/entropy"] for r in rows])
    k = math.ceil(0.2 * len(entropy))
    early, late = entropy[:k].mean(), entropy[-k:].mean()
    end = float(np.median(entropy[-math.ceil(0.1 * len(entropy)):]))
    assert late > 0.25 * early > end  # the late mean alone would not fire; the end does
    f = one(load(path), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.severity == "warn"
    assert f.evidence["early_mean"] == pytest.approx(early) and f.evidence["end_median"] == pytest.approx(end)
    assert 120 <= f.onset_step <= 160  # the first of 5 points in a row below the cut
    # the same series ending half-way through its fall is not judged collapsed: the end is what decides
    assert one(make_run({"entropy": list(entropy[:120])}), "ENTROPY_COLLAPSE") is None


def test_entropy_collapse_not_evaluable_and_too_short() -> None:
    out = one(make_run({"reward_mean": [0.5] * 10}), "ENTROPY_COLLAPSE")
    assert isinstance(out, NotEvaluable) and out.needs == ("entropy",)
    assert one(make_run({"entropy": [1.0, 0.5, 0.1, 0.01, 0.001]}), "ENTROPY_COLLAPSE") is None


def _episode_returns(n_moving: int, frozen: list[float], seed: int = 3) -> list[float]:
    """Per-episode returns of a stochastic policy (a rise, then noise around 850), then ``frozen``."""
    rng = np.random.default_rng(seed)
    moving = [float(round(min(300 + 120 * i, 850) + rng.normal(0, 120))) for i in range(n_moving)]
    return moving + frozen


def test_a_return_frozen_below_its_peak_stands_for_the_missing_entropy() -> None:
    # 20 episodes that vary, then exactly 500 on 60 of 61 (one 38: an episode that went wrong)
    returns = _episode_returns(20, [500.0] * 30 + [38.0] + [500.0] * 30)
    f = one(make_run({"reward_mean": returns}, trainer=None), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.severity == "warn" and f.stage == "U"
    assert f.evidence["rule"] == "frozen_return" and f.evidence["frozen_value"] == 500.0
    assert (f.evidence["frozen_points"], f.evidence["points_off"], f.onset_step) == (61, 1, 21)


@pytest.mark.parametrize("frozen", [
    [900.0] * 40,                               # frozen above the level it had: converged on its best
    [-50.0] * 40,                               # frozen at the run's lowest value: REWARD_FLOOR's
    [500.0] * 9,                                # too short a stretch
])
def test_a_return_frozen_at_its_best_its_floor_or_briefly_is_no_entropy_evidence(frozen: list[float]) -> None:
    returns = _episode_returns(30, frozen)
    if frozen[0] == -50.0:
        returns[0] = -50.0
    out = one(make_run({"reward_mean": returns}, trainer=None), "ENTROPY_COLLAPSE")
    assert isinstance(out, NotEvaluable) and out.needs == ("entropy",)


def test_a_piecewise_constant_evaluation_is_no_frozen_policy() -> None:
    # a deterministic evaluation repeats its value between improvements from the start: the freeze says nothing
    returns = [-40.0] * 5 + [-30.0] * 10 + [-25.4] * 25 + [-33.4] * 40
    out = one(make_run({"reward_mean": returns}, trainer=None), "ENTROPY_COLLAPSE")
    assert isinstance(out, NotEvaluable)


def test_real_sb3_a2c_report_table_frozen_on_one_behaviour() -> None:
    """h216-sb3-a2c-mutation-grid-learns-then-locks-onto-constant-500: the author's Markdown report, 93
    episodes; hand-read: 500.00 on episodes 23-93 but episode 54 (38.00), returns up to 995 before."""
    run = load(corpus("h216-sb3-a2c-mutation-grid-learns-then-locks-onto-constant-500/a2c_training_log.md"))
    rewards = run.frame["reward_mean"].to_list()
    assert len(rewards) == 93 and rewards[6] == 995.0 and rewards[53] == 38.0
    assert [i + 1 for i, v in enumerate(rewards) if v != 500.0][-1] == 54 and set(rewards[22:]) == {500.0, 38.0}
    f = one(run, "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "frozen_return"
    assert (f.onset_step, f.evidence["frozen_points"], f.evidence["points_off"]) == (23, 71, 1)
    verdict = diagnose(run, *run_detectors(run))
    # the returns up to 995 before the lock are a brief success (more than 10 noises above the start): the collapse
    # after it is told too, and as an error it leads
    assert (verdict.status, verdict.stage, verdict.headline) == ("lost", "U", "UPDATE_UNSTABLE")
    assert one(run, "UPDATE_UNSTABLE").evidence["succeeded"] is True  # type: ignore[union-attr]


def test_entropy_logged_as_a_constant_is_not_a_measurement() -> None:
    # exactly 0.0 on every step (a placeholder): not evaluable, never a collapse
    out = one(make_run({"entropy": [0.0] * 30, "reward_std": [0.7] * 30}), "ENTROPY_COLLAPSE")
    assert isinstance(out, NotEvaluable) and "every logged step" in out.needs[0]
    # a constant that is not 0 is a measurement (a uniform policy over 7 actions: ln 7), judged and quiet
    assert one(make_run({"entropy": [math.log(7)] * 30}), "ENTROPY_COLLAPSE") is None
    # one moving point makes it a measurement again
    f = one(make_run({"entropy": [0.5] + [0.0] * 29}), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding)


def test_real_hand_written_loop_logs_entropy_zero_as_a_placeholder() -> None:
    path = corpus("countdown-qwen3-06b-handgrpo/metrics.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    entropy = [r["entropy"] for r in rows if "entropy" in r]
    assert len(entropy) >= 100 and set(entropy) == {0.0}  # read independently: 0.0 on every record
    run = load(path)
    assert isinstance(one(run, "ENTROPY_COLLAPSE"), NotEvaluable)
    assert "ENTROPY_COLLAPSE" not in fired(run)


# --- BASELINE_BROKEN ----------------------------------------------------------------------------

def test_baseline_broken_explains_nothing_from_the_start() -> None:
    ev = [0.0, 1.2e-7, -1.2e-7, 0.0, 6e-8] * 5  # a critic that predicts a constant
    f = one(make_run({"vf_explained_var": ev, "value_mean": [0.1] * 25}, trainer="sb3"), "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.stage == "A" and f.evidence["rule"] == "explains_nothing"
    assert f.onset_step == 1 and abs(f.evidence["late_median"]) < 1e-6


def test_real_critic_that_explains_nothing_while_its_loss_grows_cannot_fit_its_targets() -> None:
    # carla-sb3-ppo-kl-blowup: explained variance about 0 at every update while train/value_loss climbs 23 -> 32,080;
    # the advice starts at the value targets, not at the critic's view of the state
    path = real("carla-sb3-ppo-kl-blowup/events.out.tfevents.1755701530.Legion.256656.0")
    losses = [e.value for e in events(path).Scalars("train/value_loss")]
    k = max(3, math.ceil(0.2 * len(losses)))  # the early and late windows: a fifth of the 16 points, 4
    early, late = float(np.median(losses[:k])), float(np.median(losses[-k:]))
    assert late > 10 * early
    f = one(load(path), "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.evidence["rule"] == "explains_nothing"
    assert f.evidence["value_loss_early_median"] == pytest.approx(early, rel=1e-6)
    assert f.evidence["value_loss_late_median"] == pytest.approx(late, rel=1e-6)
    assert "cannot fit its targets" in f.message and f.what_to_try[0].startswith("Check the value targets")
    # the same critic with a loss that stays put keeps the state-first advice
    ev = [0.0, 1.2e-7, -1.2e-7, 0.0, 6e-8] * 5
    flat = one(make_run({"vf_explained_var": ev, "value_loss": [3.0] * 25}, trainer="sb3"), "BASELINE_BROKEN")
    assert isinstance(flat, Finding) and flat.what_to_try[0].startswith("Check that the critic sees the state")


def test_a_blind_critic_beside_a_success_rate_that_rose_is_information() -> None:
    ev = [0.0, 1.2e-7, -1.2e-7, 0.0, 6e-8] * 8
    reward = [1.0 + 0.01 * (i % 3) for i in range(40)]
    rose = make_run({"vf_explained_var": ev, "reward_mean": reward, "success_rate": [0.02 * i for i in range(40)]},
                    trainer="sb3")
    f = one(rose, "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.severity == "info" and "success rate rose" in f.evidence["other_rise"]
    # a success rate that stayed put says nothing: the blind critic is a warning
    noise = np.random.default_rng(5).normal(0, 0.02, 40)
    flat = make_run({"vf_explained_var": ev, "reward_mean": reward, "success_rate": [0.3 + float(e) for e in noise]},
                    trainer="sb3")
    assert one(flat, "BASELINE_BROKEN").severity == "warn"


def test_real_cleanrl_ppo_reaches_its_target_with_a_critic_that_explains_nothing() -> None:
    # Supernova0417/UR5: CleanRL PPO on a reach task; explained variance about 0 throughout, the share of episodes
    # that reached the target (over every episode so far) 0 -> 0.75
    path = corpus("h378-cleanrl-ppo-ur5-reach-tuned-reward-8-envs-2m-episode-success-0-to-0.91-return-21-to-309-critic-"
                  "explains-nothing-lr-annealed-healthy/events.out.tfevents.1767004589.LAPTOP1-SUPERNOVA.16684.0")
    acc = events(path)
    ev = [e.value for e in acc.Scalars("losses/explained_variance")]
    success = [e.value for e in acc.Scalars("charts/success_rate")]
    assert abs(float(np.median(ev))) < 0.05 and success[-1] > 0.5 > success[0]
    f = one(load(path), "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.severity == "info" and f.evidence["rule"] == "explains_nothing"


def test_baseline_broken_bound_from_the_spreads_of_values_and_returns() -> None:
    n = 50
    returns_sd = [3000.0] * n
    flat = [1e-5] * n  # a critic stuck at one output: explained variance at most 2 * 1e-5 / 3000
    growing = [4e6 * 1.05 ** i for i in range(n)]
    f = one(make_run({"value_std": flat, "return_std": returns_sd, "value_loss": growing}), "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.evidence["proxy"] == "1 - (1 - value_std / return_std)^2"
    assert f.evidence["late_median"] == pytest.approx(1 - (1 - 1e-5 / 3000) ** 2)
    # a critic whose loss falls is fitting; values spread 1 % of the returns may be a discounted return-to-go
    falling = growing[::-1]
    assert one(make_run({"value_std": flat, "return_std": returns_sd, "value_loss": falling}),
               "BASELINE_BROKEN") is None
    assert one(make_run({"value_std": [30.0] * n, "return_std": returns_sd, "value_loss": growing}),
               "BASELINE_BROKEN") is None


def test_baseline_broken_values_far_beyond_every_return_diverged() -> None:
    n = 40
    rng = np.random.default_rng(5)
    returns = list(2.0 + 0.5 * rng.standard_normal(n))
    runaway = [0.01] * 20 + [-(10.0 ** (1 + 0.25 * i)) for i in range(20)]  # leaves the returns at point 21
    f = one(make_run({"reward_mean": returns, "value_mean": runaway}), "BASELINE_BROKEN")
    biggest = max(abs(r) for r in returns)
    assert isinstance(f, Finding) and f.stage == "A" and f.evidence["rule"] == "values_diverged"
    assert f.evidence["reward_abs_max"] == biggest and f.onset_step == 21 > 0
    assert f.evidence["late_abs_median"] == pytest.approx(float(np.median(np.abs(runaway[-8:]))))
    # a discounted sum of per-step rewards (gamma 0.999) stays within 1,000 of them; a reward exactly 0 gives no scale
    per_step = [0.01] * n
    for quiet in ({"reward_mean": per_step, "value_mean": [0.01 / (1 - 0.999) * 0.99] * n},
                  {"reward_mean": [0.0] * n, "value_mean": runaway}):
        assert not isinstance(one(make_run(quiet), "BASELINE_BROKEN"), Finding)


def test_real_mlagents_critic_whose_value_estimate_ran_away() -> None:
    # KamranMiralami/MLProject: ML-Agents PPO's extrinsic value estimate goes to -29,430 while every logged return
    # lies between -0.25 and 6.07
    path = corpus("h301-mlagents-ppo-alt-config-buffer-100k-critic-diverges-value-minus-29k-return-stalls-at-2.5-520k/"
                  "events.out.tfevents.1721760667.AVATAR-PC.7864.0")
    acc = events(path)
    returns = [e.value for e in acc.Scalars("Environment/Cumulative Reward")]
    values = [(e.step, e.value) for e in acc.Scalars("Policy/Extrinsic Value Estimate")]
    beyond = next(i for i, (_, v) in enumerate(values) if all(abs(w) > max(map(abs, returns)) for _, w in values[i:]))
    f = one(load(path), "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.evidence["rule"] == "values_diverged"
    assert f.evidence["reward_abs_max"] == pytest.approx(max(map(abs, returns)))
    assert f.onset_step == values[beyond][0] == 250000


def test_spinup_critic_with_one_output_for_every_state() -> None:
    path = corpus("h14-spinup-ppo-grid2op-critic-constant-valueloss-4e7/progress.txt")
    rows = [line.split("\t") for line in path.read_text().splitlines()]
    col = rows[0].index("StdVVals")
    assert sum(float(r[col]) < 1e-4 for r in rows[1:]) == 49  # the fact: one output on 49 of 50 epochs
    findings, _ = run_detectors(load(path))
    f = next(f for f in findings if f.id == "BASELINE_BROKEN")
    assert f.stage == "A" and f.evidence["post_warmup_median"] < 1e-6


def test_baseline_broken_ignores_the_warm_up() -> None:
    ev = [-50.0, -5.0, -1.0, -0.4, -0.1, 0.05, 0.1, 0.2] + [0.3, 0.35, 0.4] * 10  # critic learns
    assert one(make_run({"vf_explained_var": ev}), "BASELINE_BROKEN") is None
    # one terrible batch late (tinyzero's -95.6) does not move the median
    assert one(make_run({"vf_explained_var": [0.2] * 20 + [-95.6] + [0.2] * 5}), "BASELINE_BROKEN") is None


def test_baseline_broken_explains_everything() -> None:
    ev = [0.5, 0.9, 0.99] + [0.9995] * 27
    f = one(make_run({"vf_explained_var": ev}), "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.evidence["rule"] == "explains_everything" and f.onset_step == 4


def test_baseline_broken_onset_falls_back_to_the_late_window() -> None:
    # the explained variance never stays <= 0.05 for 5 points in a row (at most 3 zeros between
    # 0.2s), yet its medians after the warm-up (6 points) and late are 0: the onset is the first
    # qualifying point of the late window (points 25..30)
    ev = [0.5] * 3 + [0.2, 0.0, 0.0, 0.0] * 6 + [0.2, 0.0, 0.3]
    assert len(ev) == 30
    f = one(make_run({"vf_explained_var": ev}), "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.onset_step == 25
    assert f.evidence["post_warmup_median"] == 0.0 and f.evidence["late_median"] == 0.0


def test_baseline_broken_not_applicable_to_grpo_not_evaluable_otherwise() -> None:
    grpo = make_run({"zero_variance_group_frac": [0.3] * 10, "reward_mean": [0.5] * 10})
    assert one(grpo, "BASELINE_BROKEN") is None
    out = one(make_run({"reward_mean": [0.5] * 10}), "BASELINE_BROKEN")
    assert isinstance(out, NotEvaluable) and out.needs == ("vf_explained_var (or value_std with return_std)",)


# --- UPDATE_SUPPRESSED --------------------------------------------------------------------------

def test_the_case_grad_and_kl_zero_while_a_third_of_the_groups_carry_signal() -> None:
    # zero_variance_group_frac 0.67 throughout, reward_std > 0, grad_norm = kl = 0 from step 21:
    # UPDATE_SUPPRESSED, not ADV_COLLAPSE (the advantage proxy sqrt(1 - 0.67) = 0.574 never collapses)
    n = 50
    run = make_run({"zero_variance_group_frac": [0.67] * n, "reward_std": [0.3] * n, "reward_mean": [0.4] * n,
                 "grad_norm": [0.8] * 20 + [0.0] * 30, "kl": [0.01] * 20 + [0.0] * 30})
    got = fired(run)
    assert "UPDATE_SUPPRESSED" in got and "ADV_COLLAPSE" not in got and "DEAD_FROM_START" not in got
    f = got["UPDATE_SUPPRESSED"]
    assert f.onset_step == 21 and f.evidence["metric"] == "grad_norm" and f.severity == "error"
    assert f.evidence["signal_mean_when_suppressed"] == pytest.approx(math.sqrt(1 - 0.67))
    assert f.evidence["suppressed_points"] == 30 and f.evidence["late_share_suppressed"] == 1.0


def test_the_case_from_the_first_step() -> None:
    n = 40
    run = make_run({"zero_variance_group_frac": [0.67] * n, "reward_std": [0.3] * n,
                 "grad_norm": [0.0] * n, "kl": [0.0] * n})
    got = fired(run)
    assert got["UPDATE_SUPPRESSED"].onset_step == 1 and "ADV_COLLAPSE" not in got


def test_update_suppressed_quiet_when_there_is_no_signal_or_an_update() -> None:
    n = 30
    # every group tied: no gradient is expected (DEGENERATE_GROUPS / DEAD_FROM_START say why)
    tied = make_run({"zero_variance_group_frac": [1.0] * n, "grad_norm": [0.0] * n})
    assert one(tied, "UPDATE_SUPPRESSED") is None
    live = make_run({"adv_std": [1.0] * n, "grad_norm": [0.3] * n, "kl": [0.0] * n})
    assert one(live, "UPDATE_SUPPRESSED") is None
    # zeros on a minority of late points (grad_norm logged on a tied micro-step) stay quiet
    some = make_run({"zero_variance_group_frac": [0.6] * n, "grad_norm": [0.0, 0.5, 0.5] * 10})
    assert one(some, "UPDATE_SUPPRESSED") is None


def test_update_suppressed_kl_only_without_grad_norm_and_not_ppo_kl() -> None:
    n = 30
    run = make_run({"adv_std": [1.0] * n, "kl": [0.002] * 10 + [0.0] * 20})
    f = one(run, "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl" and f.onset_step == 11
    on_policy = make_run({"adv_std": [1.0] * n, "kl": [0.0] * n}, sources={"kl": "actor/ppo_kl"})
    out = one(on_policy, "UPDATE_SUPPRESSED")
    assert isinstance(out, NotEvaluable)  # the only update metric is a ppo_kl, which never counts


def test_update_suppressed_clip_fraction_pinned_vs_spikes() -> None:
    n = 40
    pinned = make_run({"adv_std": [1.0] * n, "clip_frac": [0.1] * 10 + [0.97] * 30, "grad_norm": [1.0] * n})
    f = one(pinned, "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "clip_frac" and f.onset_step == 11
    # carla-sb3-ppo-kl-blowup's shape: 0.94 / 0.96 on the first updates and one 0.955 spike late
    spikes = [0.937, 0.962, 0.398, 0.273, 0.156, 0.207, 0.18, 0.163, 0.492, 0.445, 0.37, 0.259, 0.213, 0.249,
              0.955, 0.737]
    assert one(make_run({"adv_std": [1.0] * 16, "clip_frac": spikes}), "UPDATE_SUPPRESSED") is None


def test_update_suppressed_reports_every_check_that_fires() -> None:
    n = 30
    run = make_run({"adv_std": [1.0] * n, "grad_norm": [0.0] * n, "clip_frac": [0.95] * n})
    f = one(run, "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "grad_norm" and f.evidence["also"] == ["clip_frac"]


def test_update_suppressed_not_evaluable() -> None:
    no_update_metric = one(make_run({"adv_std": [1.0] * 10}), "UPDATE_SUPPRESSED")
    assert isinstance(no_update_metric, NotEvaluable)
    # an SB3 log: update metrics but neither advantages nor a reward spread
    sb3 = make_run({"kl": [0.01] * 10, "clip_frac": [0.1] * 10, "vf_explained_var": [0.0] * 10}, trainer="sb3")
    out = one(sb3, "UPDATE_SUPPRESSED")
    assert isinstance(out, NotEvaluable) and "adv_std" in out.needs[0]


# --- DEGENERATE_GROUPS on a critic run ----------------------------------------------------------

def test_degenerate_groups_not_applicable_to_a_critic_run() -> None:
    ppo = make_run({"value_mean": [0.5] * 10, "adv_max": [2.0] * 10, "adv_min": [-2.0] * 10}, trainer="verl")
    out = one(ppo, "DEGENERATE_GROUPS")
    assert isinstance(out, NotEvaluable) and out.needs == (GROUP_BASELINE,)  # not a pass: it does not apply
    neither = make_run({"reward_mean": [0.5] * 10}, trainer="verl")
    assert isinstance(one(neither, "DEGENERATE_GROUPS"), NotEvaluable)
    # a verl GRPO console logs no group statistic, but advantages exactly 0 on a step mean every group is tied
    spread = make_run({"adv_max": [2.0] * 10, "adv_min": [-2.0] * 10}, trainer="verl")
    assert one(spread, "DEGENERATE_GROUPS") is None
    dead = make_run({"adv_max": [2.0] * 3 + [0.0] * 7, "adv_min": [-2.0] * 3 + [0.0] * 7}, trainer="verl")
    f = one(dead, "DEGENERATE_GROUPS")
    assert isinstance(f, Finding) and f.onset_step == 4 and f.evidence["proxy"] == "1[adv_max - adv_min <= 1e-6]"


def test_a_tied_share_that_the_advantages_contradict_is_not_the_trained_reward() -> None:
    # success tied in every group (a SimpleVLA-RL accuracy line) while the shaped reward's advantages spread
    share = [1.0] * 20
    shaped = make_run({"zero_variance_group_frac": share, "adv_max": [1.2] * 20, "adv_min": [-0.9] * 20})
    assert one(shaped, "DEGENERATE_GROUPS") is None
    # the same share with advantages exactly 0: the success is the reward, and every group is tied
    terminal = make_run({"zero_variance_group_frac": share, "adv_max": [0.0] * 20, "adv_min": [0.0] * 20})
    f = one(terminal, "DEGENERATE_GROUPS")
    assert isinstance(f, Finding) and f.evidence["metric"] == "zero_variance_group_frac"


# --- registry -----------------------------------------------------------------------------------

# --- real logs ----------------------------------------------------------------------------------

def _floats(pattern: str, text: str) -> list[float]:
    return [float(x) for x in re.findall(pattern, text)]


def test_real_trl_dapo_vlm_entropy_collapse() -> None:
    path = real("trl-dapo-vlm-120531/run_terminal.md")
    entropy = np.array(_floats(r"'entropy': ([0-9.eE+-]+)", path.read_text().replace("\r", "\n")))
    assert len(entropy) == 49 and entropy[0] == pytest.approx(0.956, abs=1e-3)  # SOURCE.md: 0.96 first
    w = 10  # ceil(0.2 * 49)
    early, late = entropy[:w].mean(), entropy[-w:].mean()
    onset = 1 + next(i for i in range(len(entropy)) if all(entropy[i:i + 5] < 0.25 * early))
    f = one(load(path), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "relative"
    assert f.evidence["early_mean"] == pytest.approx(early) and f.evidence["late_mean"] == pytest.approx(late)
    assert late / early == pytest.approx(0.124, abs=1e-3)
    assert onset == 13 and f.onset_step == 10 * onset  # log point 13: optimizer step 130 (logging_steps 10)


def test_real_trl_dapo_vlm_zero_grad_is_not_suppression() -> None:
    # grad_norm is 0.0 at 42 of 49 points, but only twice while at most 75 % of the groups were tied
    text = real("trl-dapo-vlm-120531/run_terminal.md").read_text().replace("\r", "\n")
    grad = _floats(r"'grad_norm': ([0-9.eE+-]+)", text)
    tied = _floats(r"'frac_reward_zero_std': ([0-9.eE+-]+)", text)
    assert len(grad) == len(tied) == 49 and sum(g == 0.0 for g in grad) == 42
    assert sum(g == 0.0 and t <= 0.75 for g, t in zip(grad, tied, strict=True)) == 2
    assert one(load(real("trl-dapo-vlm-120531/run_terminal.md")), "UPDATE_SUPPRESSED") is None


def test_real_tinyzero_excerpt_begins_after_the_collapse() -> None:
    path = real("tinyzero-ppo-entropy-collapse/part-of-logs.md")
    entropy = _floats(r"actor/entropy_loss:([0-9.]+)", path.read_text())
    assert len(entropy) == 17 and max(entropy) <= 0.008  # SOURCE.md: 0.003 to 0.008
    run = load(path)
    f = one(run, "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "absolute"
    assert f.onset_step == 383 and f.evidence["late_mean"] == pytest.approx(np.mean(entropy[-4:]))
    # the critic there is erratic (down to -95.6) but not useless: median 0.093 after the warm-up
    ev = _floats(r"critic/vf_explained_var:(-?[0-9.]+)", path.read_text())
    assert min(ev) == -95.6 and statistics.median(ev[4:]) == pytest.approx(0.093)
    assert one(run, "BASELINE_BROKEN") is None
    # the four early snapshot steps (1.21, 1.34, 0.91, 0.79) are too few to judge
    assert one(load(real("tinyzero-ppo-entropy-collapse/early-steps.log")), "ENTROPY_COLLAPSE") is None
    # the verdict says the onset is where the log begins, not when the collapse began (a newcomer read
    # "since 383" and would have resumed from step 382, already collapsed)
    verdict = diagnose(run, *run_detectors(run))
    assert verdict.onset == 383 and verdict.onset_before_log and verdict.to_json()["onset_before_log"] is True
    assert "(by step 383, where the log begins)" in verdict.summary


def test_real_verl_ppo_runs_quiet() -> None:
    quick = load(real("verl-gsm8k-ppo-quickstart/verl_getting_started.cell15_output.log"))
    text = real("verl-gsm8k-ppo-quickstart/verl_getting_started.cell15_output.log").read_text()
    entropy = np.array(_floats(r"actor/entropy_loss:([0-9.]+)", text))
    w = math.ceil(0.2 * len(entropy))
    assert 0.4 < entropy[-w:].mean() / entropy[:w].mean() < 0.5  # sharpens to 44 %: healthy
    for det in ("ENTROPY_COLLAPSE", "UPDATE_SUPPRESSED", "NONFINITE"):
        assert one(quick, det) is None, det
    assert isinstance(one(quick, "DEGENERATE_GROUPS"), NotEvaluable)  # a critic's advantages: no groups
    assert isinstance(one(quick, "BASELINE_BROKEN"), NotEvaluable)  # this log has no vf_explained_var

    path = real("verl-ppo-qwen7b-gsm8k-resumed/verl_demo.log")
    text = path.read_text()
    ev = _floats(r"critic/vf_explained_var:(-?[0-9.e]+)", text)
    assert len(ev) == 335
    w = math.ceil(0.2 * len(ev))
    assert statistics.median(ev[w:]) > 0.3  # the critic keeps improving (SOURCE.md: 0.21 .. 0.42)
    run = load(path)
    for det in MINE:
        assert one(run, det) is None, det


def test_real_carla_constant_observation_critic_explains_nothing() -> None:
    f = one(load(real("carla-sb3-ppo-constant-obs/events.out.tfevents.1755698806.Legion.237536.0")),
            "BASELINE_BROKEN")
    # SOURCE.md: explained variance exactly 0 (within +-2e-7) for the whole run, from the first update at 2048
    assert isinstance(f, Finding) and f.evidence["rule"] == "explains_nothing" and f.onset_step == 2048
    assert max(abs(f.evidence["min"]), abs(f.evidence["max"])) <= 2.4e-7


def test_real_carla_kl_blowup_is_not_suppressed() -> None:
    run = load(real("carla-sb3-ppo-kl-blowup/events.out.tfevents.1755701530.Legion.256656.0"))
    # the opposite of suppression (approx_kl 52.5 and 48.9 on the first updates); SB3 logs no advantage
    # signal, so the detector says what it needs instead of passing
    assert isinstance(one(run, "UPDATE_SUPPRESSED"), NotEvaluable)
    assert "UPDATE_SUPPRESSED" not in fired(run)
    # its critic explains nothing either (SOURCE.md: value loss 23 -> 32,080, explained variance -13.9
    # at 16384; read from the file: 0.123 at 6144, then at or below 0.05 from 7168 to the end)
    f = one(run, "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.onset_step == 7168
    assert f.evidence["min"] == pytest.approx(-13.9, abs=0.05)
    # the warm-up median is over the warm-up's own points (the first 6 values of the file)
    ev = run.frame["vf_explained_var"].drop_nulls().to_list()
    assert f.evidence["warmup_points"] == 6 and f.evidence["warmup_median"] == pytest.approx(statistics.median(ev[:6]))
    # SB3 logged no reward: the verdict says so, and why SB3 may not have
    verdict = diagnose(run, *run_detectors(run))
    assert "no reward was logged at all" in verdict.summary and "`Monitor`" in verdict.summary


def test_real_dead_run_is_not_called_suppressed() -> None:
    # grad_norm and kl exactly 0 from step 1, but so is every reward: nothing to suppress
    got = fired(load(real("grpo-dynamics-csd-pilot-dead/log_const_seed42.txt")))
    assert "DEAD_FROM_START" in got and "UPDATE_SUPPRESSED" not in got


def test_a_trl_grpo_log_has_no_value_baseline_to_check() -> None:
    # TRL's GRPO trainers log reward_std and no critic metric: BASELINE_BROKEN does not apply there,
    # while a log of the same shape from an unknown trainer still says what it would need
    grpo = make_run({"reward_std": [0.4] * 20, "reward_mean": [0.5] * 20})
    assert one(grpo, "BASELINE_BROKEN") is None
    unknown = make_run({"reward_std": [0.4] * 20, "reward_mean": [0.5] * 20}, trainer=None)
    assert isinstance(one(unknown, "BASELINE_BROKEN"), NotEvaluable)


def test_dead_update_while_the_rewards_vary_is_stage_u_on_any_length() -> None:
    # 4 log points: grad_norm exactly 0 at each while reward_std is about 1.2 (no trend needed)
    run = make_run({"grad_norm": [0.0] * 4, "reward_std": [1.27, 1.17, 1.18, 1.27]})
    f = one(run, "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.stage == "U" and f.evidence["dead"] == "update" and f.onset_step == 1
    findings, missing = run_detectors(run)
    assert diagnose(run, findings, missing).stage == "U"
    # one point is no fact; a first update with a gradient is not dead from the start
    assert one(make_run({"grad_norm": [0.0], "reward_std": [1.2]}), "DEAD_FROM_START") is None
    assert one(make_run({"grad_norm": [0.3, 0.0, 0.0, 0.0], "reward_std": [1.2] * 4}), "DEAD_FROM_START") is None
    # rewards tied too: the signal is dead, stage R
    f = one(make_run({"grad_norm": [0.0] * 4, "reward_std": [0.0] * 4}), "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.stage == "R" and f.evidence["dead"] == "signal"


def test_gradient_dead_after_its_first_updates_is_dead_from_the_start() -> None:
    """Two first updates with a gradient, then none for the rest of the run: dead from the start,
    dated at the first dead point; a gradient that dies only in the late window is not."""
    grad = [6e-4, 2e-3] + [0.0] * 19 + [1e-10] * 80
    steps = [200 * (i + 1) for i in range(len(grad))]
    f = one(make_run({"grad_norm": grad, "reward_std": [0.3] * len(grad)}, steps=steps), "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.stage == "U" and f.onset_step == 600
    assert f.evidence["grad_norm_zero_from_point"] == 3 and f.evidence["grad_norm_max_since"] == 1e-10
    late = [0.5] * 60 + [0.0] * 41
    assert one(make_run({"grad_norm": late, "reward_std": [0.3] * 101}), "DEAD_FROM_START") is None


def test_real_dreamer_actor_gradient_dead_from_the_third_record() -> None:
    """checked: actor_grad_norm 6.0e-4 and 2.0e-3 at steps 200 and 400, then at most 1.5e-10 to step 20200."""
    path = corpus("h70-dreamerv3-cartpole-actor-frozen/metrics.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    grad = [(r["step"], r["actor_grad_norm"]) for r in records if "actor_grad_norm" in r]
    first_dead = next(i for i in range(len(grad)) if all(g <= 1e-8 for _, g in grad[i:]))
    f = fired_by(load(path))["DEAD_FROM_START"]
    assert f.onset_step == grad[first_dead][0] == 600
    assert f.evidence["grad_norm_max_since"] == max(g for _, g in grad[first_dead:])


def test_kl_early_stop_ending_every_update_is_suppressed_without_an_advantage_signal() -> None:
    # 20 steps: the KL target stops every update from step 6 on; no advantage signal is logged
    stops = [0.0] * 5 + [1.0] * 15
    f = one(make_run({"early_stop_frac": stops, "reward_mean": [0.5] * 20}), "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "early_stop_frac" and f.onset_step == 6
    assert f.severity == "error" and f.evidence["signal"] is None
    # an early stop now and then is routine
    assert one(make_run({"early_stop_frac": [0.0, 0.0, 0.0, 1.0] * 5}), "UPDATE_SUPPRESSED") is None


def test_a_rising_reward_turns_a_suppressed_update_into_a_warning() -> None:
    # clip fraction pinned at 0.95 from step 11 while the groups carry signal: an error ...
    base = {"clip_frac": [0.05] * 10 + [0.95] * 20, "zero_variance_group_frac": [0.2] * 30}
    flat = one(make_run({**base, "reward_mean": [0.5] * 30}), "UPDATE_SUPPRESSED")
    assert isinstance(flat, Finding) and flat.severity == "error" and "reward_improving" not in flat.evidence
    # ... but the reward climbing 0.2 -> 0.8 says the update is not fully suppressed: a warning that says so
    rising = [0.2 + 0.6 * i / 29 for i in range(30)]
    f = one(make_run({**base, "reward_mean": rising}), "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.severity == "warn"
    assert f.evidence["reward_improving"]["late_mean"] > f.evidence["reward_improving"]["early_mean"]


def test_a_gaussian_policy_narrowing_is_not_an_entropy_collapse() -> None:
    # a differential entropy 1.2 -> -0.4 (negative: a continuous policy) is never judged as a share of its start
    entropy = list(np.linspace(1.2, -0.4, 60))
    assert one(make_run({"entropy": entropy}, trainer=None), "ENTROPY_COLLAPSE") is None
    # the same fall of a discrete entropy (never negative) is a collapse
    f = one(make_run({"entropy": list(np.linspace(1.2, 0.05, 60))}, trainer=None), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "relative"


def test_an_episode_return_at_its_cap_is_a_solved_task_not_a_lost_signal() -> None:
    reward = [10.0 + 990.0 * min(i, 40) / 40 for i in range(100)]  # climbs to 1000 (the cap) and stays
    run = make_run({"reward_mean": reward})
    solved = Run(run.path, run.format, "sb3", run.frame, {"reward_mean": "rollout/ep_rew_mean"}, {})
    f = one(solved, "REWARD_SATURATION")
    assert isinstance(f, Finding) and f.severity == "info" and f.evidence["episode_return"] == "rollout/ep_rew_mean"
    findings, missing = run_detectors(solved)
    verdict = diagnose(solved, findings, missing)
    assert verdict.status == "quiet" and verdict.stage is None and "solved" in verdict.summary
    # a GRPO reward pinned at its ceiling is still a warning: the prompts are exhausted
    g = one(run, "REWARD_SATURATION")
    assert isinstance(g, Finding) and g.severity == "warn"
    # a reward counted by episodes (a CSV of `episodes,rewards`) is an episode return too
    per_episode = Run(run.path, run.format, None, run.frame, {"reward_mean": "rewards", "step": "episodes"}, {})
    e = one(per_episode, "REWARD_SATURATION")
    assert isinstance(e, Finding) and e.severity == "info" and e.evidence["episode_return"] == "episodes"


def test_real_reinforce_cartpole_v0_csv_solved_at_200_is_quiet() -> None:
    path = corpus("h49-easyrl-reinforce-cartpole-v0-solves/training_results.csv")
    rewards = [float(line.split(",")[1]) for line in path.read_text().splitlines()[1:]]
    assert rewards[-40:] == [200.0] * 40  # the v0 cap, held to the end
    run = load(path)
    findings, missing = run_detectors(run)
    f = next(f for f in findings if f.id == "REWARD_SATURATION")
    assert f.severity == "info" and diagnose(run, findings, missing).status == "quiet"


def test_explained_variance_is_not_judged_while_the_returns_no_longer_vary() -> None:
    # the critic explains the return (EV 0.8) while the reward varies; once every episode returns the cap,
    # EV is undefined (here logged as -5): not a broken baseline
    reward = [float(i) for i in range(60)] + [500.0] * 40
    ev = [0.8] * 60 + [-5.0] * 40
    run = make_run({"reward_mean": reward, "vf_explained_var": ev}, trainer="sb3")
    assert one(run, "BASELINE_BROKEN") is None
    # the same EV with a reward that still varies is judged (and broken)
    varying = make_run({"reward_mean": [float(i % 7) for i in range(100)], "vf_explained_var": ev}, trainer="sb3")
    f = one(varying, "BASELINE_BROKEN")
    assert isinstance(f, Finding) and "judged_before_step" not in f.evidence


def test_a_kl_that_hovers_around_the_peak_minimum_is_not_pinned() -> None:
    # KL to the reference wanders 0.008 .. 0.013 (a hand-written GRPO with a KL penalty), advantages alive:
    # values under the 0.01 peak minimum are values, not zeros
    rng = np.random.default_rng(2)
    kl = list(0.0105 + 0.0025 * np.sin(np.arange(140) / 3.0) + rng.normal(0, 3e-4, 140))
    run = make_run({"kl": kl, "adv_std": [0.95] * 140, "reward_mean": [0.05] * 140})
    out = one(run, "UPDATE_SUPPRESSED")
    assert not isinstance(out, Finding)
    # a KL that falls from 0.05 to 0.001 after its peak is pinned
    fall = [0.05] * 40 + [0.001] * 100
    f = one(make_run({"kl": fall, "adv_std": [0.95] * 140, "reward_mean": [0.05] * 140}), "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl_pinned"
    # pinned is near 0 on both sides: a signed estimate within +-0.002 of 0 is pinned, one whose level
    # sits far below 0 (a mean(old_logp - logp) of about -0.03) is no KL a penalty holds there
    near = [0.05] * 40 + [0.001, -0.002] * 50
    f = one(make_run({"kl": near, "adv_std": [0.95] * 140, "reward_mean": [0.05] * 140}), "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl_pinned"
    below = [0.05] * 40 + [-0.03, -0.025] * 50
    out = one(make_run({"kl": below, "adv_std": [0.95] * 140, "reward_mean": [0.05] * 140}), "UPDATE_SUPPRESSED")
    assert not isinstance(out, Finding)


def test_a_heavy_tailed_kl_whose_level_falls_is_not_pinned() -> None:
    # the shape of h156-trl-grpo-llama31-8b-sft-v1-base-learns: KL to the reference around 0.02 with spikes,
    # a stretch whose level reaches 0.25, then a level of about 0.03 again, 1 point in 8 at 0.2 (the policy
    # keeps leaving its reference: no penalty holds it there); the same low level without the spikes is pinned
    base = [0.02, 0.03, 0.01, 0.04, 0.02, 0.03, 0.02, 0.2]
    stretch = [0.3, 0.2, 0.25, 0.4, 0.22, 0.27, 0.3, 0.25, 0.26, 0.24]
    kl = base * 5 + stretch + base * 12
    adv = [0.95] * len(kl)
    out = one(make_run({"kl": kl, "adv_std": adv, "reward_mean": [0.05] * len(kl)}), "UPDATE_SUPPRESSED")
    assert not isinstance(out, Finding)
    quiet_tail = [v if v < 0.1 else 0.03 for v in base]
    held = base * 5 + stretch + quiet_tail * 12
    f = one(make_run({"kl": held, "adv_std": adv, "reward_mean": [0.05] * len(held)}), "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl_pinned"


def test_update_suppressed_by_a_clip_that_lets_almost_nothing_through() -> None:
    n = 30
    grad = [1.0 + 0.1 * (i % 3) for i in range(n)]  # the trainer's norm before clipping
    adv = [0.8] * n
    tight = make_run({"grad_norm": grad, "grad_norm_clipped": [1e-6] * n, "adv_std": adv})
    f = one(tight, "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "clip_kept" and f.onset_step == 1
    # a clip at 1.0 on gradients of 1.0 to 1.2 keeps most of them: no finding
    usual = make_run({"grad_norm": grad, "grad_norm_clipped": [min(g, 1.0) for g in grad], "adv_std": adv})
    assert one(usual, "UPDATE_SUPPRESSED") is None


def test_a_critic_that_explains_nothing_on_a_solved_task_is_info() -> None:
    # sb3-a2c on CartPole: returns climb to the cap of 500 and hold it while the explained variance stays ~0
    n = 100
    reward = [100.0 + 4 * i for i in range(n - 20)] + [500.0] * 20
    ev = [0.0 + 0.01 * (i % 3) for i in range(n)]
    f = one(make_run({"reward_mean": reward, "vf_explained_var": ev}, trainer="sb3"), "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.severity == "info" and f.evidence["solved_from_step"] == n - 19
    # the same critic while the reward never settles at its best: a warning
    wobbly = [100.0 + 4 * i + 30 * (-1) ** i for i in range(n)]
    f = one(make_run({"reward_mean": wobbly, "vf_explained_var": ev}, trainer="sb3"), "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.severity == "warn"


def test_a_logged_reward_range_is_the_reward_stage_signal() -> None:
    from advcore.stages import stage_signal

    # only reward_max and reward_min say how the rewards spread (TinyZero's critic/score/max and min)
    run = make_run({"reward_max": [1.0] * 20, "reward_min": [0.1] * 20, "entropy": [1.2] * 10 + [0.005] * 10})
    r = stage_signal(run)[0]
    assert r.stage == "R" and r.metric == "reward_max - reward_min" and r.late == pytest.approx(0.9)
    findings, missing = run_detectors(run)
    verdict = diagnose(run, findings, missing)
    assert "the rewards still had contrast late (R reward range (max - min) 0.9 -> 0.9)" in verdict.summary
    assert "no reward spread was logged" not in verdict.summary


def test_an_update_kl_that_is_noise_around_zero_measures_no_update() -> None:
    """verl's actor/ppo_kl with one on-policy mini-batch is 0 up to numerical noise of either sign; a
    KL of the update whose early points are that noise is not judged (a healthy update has KL > 0)."""
    rng = np.random.default_rng(0)
    n = 60
    noise = rng.normal(0.0, 3e-4, n)
    noise[:12] = np.abs(noise[:12]) * np.where(np.arange(12) % 3 == 0, -1.0, 1.0)  # a third of the early points < 0
    assert statistics.median(noise[:12]) > 0  # its early median is positive, as in the real run
    signed = make_run({"adv_std": [1.0] * n, "kl_step": noise.tolist()})
    assert isinstance(one(signed, "UPDATE_SUPPRESSED"), NotEvaluable)
    # a KL of the update that was clearly positive early and fell to 1e-10 is suppressed
    fell = make_run({"adv_std": [1.0] * n, "kl_step": [0.01] * 12 + [1e-10] * (n - 12)})
    f = one(fell, "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl_step"


def test_real_verl_csv_with_an_on_policy_ppo_kl_is_not_suppressed() -> None:
    """h55 slow-steady: actor/ppo_kl is +-3e-4 around 0 (median -3e-6 over 748 steps) while the reward
    goes from 5.3 to 6.3 (the hunter's quarter means)."""
    path = corpus("h55-verl-grpo-qwen3-4b-prompt-writer-slow-steady-csv/training_history.csv")
    kl = pl.read_csv(path)["actor/ppo_kl"]
    assert (kl < 0).mean() > 0.4  # type: ignore[operator]
    assert "UPDATE_SUPPRESSED" not in fired(load(path))


def test_update_suppressed_not_evaluable_names_what_it_read_and_what_it_lacks() -> None:
    # a CleanRL PPO log: update metrics, no advantage spread or proxy (a newcomer read the needs line as if the
    # update metrics were missing)
    run = make_run({"kl_step": [1e-3] * 40, "clip_frac": [0.1] * 40, "reward_mean": [float(i) for i in range(40)]})
    out = one(run, "UPDATE_SUPPRESSED")
    assert isinstance(out, NotEvaluable) and len(out.needs) == 1
    assert out.needs[0].startswith("adv_std (or a proxy") and out.needs[0].endswith(
        "beside the update metrics it read (clip_frac, kl_step)")
    # with nothing of the update logged, the update metrics are what it needs
    bare = one(make_run({"reward_mean": [float(i) for i in range(40)]}), "UPDATE_SUPPRESSED")
    assert isinstance(bare, NotEvaluable) and bare.needs[0].startswith("grad_norm, update_ratio")


def test_a_noisy_rise_the_window_medians_show_makes_a_fall_near_the_cut_sharpening() -> None:
    # h12-handwritten-reinforce-meal-planning-slow-learner: per-episode returns 2.2 -> 11.8 with a
    # step-to-step noise of about 8; entropy at 25 % of its start, 21 % at the end
    rng = np.random.default_rng(3)
    n = 300
    reward = list(np.linspace(2.0, 12.0, n) + 8.0 * rng.standard_normal(n))
    course = reward_course(make_run({"reward_mean": reward}))
    assert course is not None and course.median_rose and not course.improved()  # the ground truth of the case
    entropy = [2.8] * 60 + list(np.linspace(2.8, 0.6, 140)) + [0.6] * 100  # 21 % of its start late
    f = one(make_run({"entropy": entropy, "reward_mean": reward}), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.severity == "info"
    # the same noisy rise does not excuse an entropy that fell to a few percent of its start
    deep = [2.8] * 60 + list(np.linspace(2.8, 0.02, 140)) + [0.02] * 100
    f = one(make_run({"entropy": deep, "reward_mean": reward}), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.severity == "warn"


def test_the_verdict_dates_a_collapse_the_log_did_not_see() -> None:
    # an excerpt that begins collapsed: the collapse is before its first step, not at it
    low = make_run({"entropy": [0.006, 0.005, 0.006, 0.005, 0.007, 0.006, 0.005, 0.006]}, steps=list(range(383, 391)),
                   trainer="verl")
    v = diagnose(low, *run_detectors(low))
    assert v.stage == "U" and "(by step 383, where the log begins)" in v.summary
    # two excerpts joined: steps 2..122 every 40 steps, then 383..399 every step; the entropy fell in the gap
    steps = [2, 42, 82, 122, *range(383, 400)]
    entropy = [1.2, 1.3, 0.9, 0.8] + [0.006] * 17
    joined = make_run({"entropy": entropy}, steps=steps, trainer="verl")
    v = diagnose(joined, *run_detectors(joined))
    assert "(since step 383; nothing logged between step 122 and it)" in v.summary
    # evenly logged: no gap to mention
    even = make_run({"entropy": [1.0] * 10 + [0.005] * 10}, trainer="verl")
    v = diagnose(even, *run_detectors(even))
    assert "nothing logged" not in v.summary and "(since step 11)" in v.summary


def test_real_gaussian_entropy_that_fell_whole_nats_while_nothing_was_learned() -> None:
    """h288-mlagents-ppo-gail-bc-kart-racing-demo4-entropy-collapses-never-finishes-a-lap-2M: ML-Agents PPO with a
    behavioural-cloning term; the policy's (differential) entropy falls from about 0 to -6.5 nats while every
    episode runs to its time limit at a return near -1,000. A Gaussian entropy is judged by the nats it fell, and
    only when the reward did not rise: the same fall with a rising reward is a policy sharpening as it learns."""
    from advcore.scan import ScanOptions, scan
    from tests._real import events

    run = "h288-mlagents-ppo-gail-bc-kart-racing-demo4-entropy-collapses-never-finishes-a-lap-2M/"
    paths = [corpus(run + "events.out.tfevents.1642031253.Ruskin.18212.0"),
             corpus(run + "events.out.tfevents.1642064768.Ruskin.2648.0")]
    entropy = [e.value for p in paths for e in events(p).Scalars("Policy/Entropy")]
    k = math.ceil(0.2 * len(entropy))
    assert min(entropy) < 0 and statistics.mean(entropy[:k]) - statistics.mean(entropy[-k:]) > 5.0
    [report] = scan(paths, ScanOptions(), jobs=1)
    f = next(f for f in report.findings if f.id == "ENTROPY_COLLAPSE")
    assert f.severity == "warn" and f.evidence["rule"] == "differential"
    # synthetic: the same fall, of a reward that stayed flat and of one that rose
    drop = [0.5 - 0.07 * i for i in range(100)]
    rng = np.random.default_rng(2)
    flat = list(-1000.0 + 30.0 * rng.standard_normal(100))
    rising = [-1000.0 + 10.0 * i + 30.0 * rng.standard_normal() for i in range(100)]
    assert isinstance(one(make_run({"entropy": drop, "reward_mean": flat}, trainer="sb3"), "ENTROPY_COLLAPSE"), Finding)
    assert one(make_run({"entropy": drop, "reward_mean": rising}, trainer="sb3"), "ENTROPY_COLLAPSE") is None


def test_real_sb3_log_without_a_train_section_took_no_gradient_step() -> None:
    # h327's QR-DQN: learning_starts at sb3-contrib's old default of 50,000 in a 30,000-step run; 300 rollout
    # summaries and not one train/ tag
    folder = ("h327-sb3contrib-qrdqn-airsim-leader-drone-default-learning-starts-50000-beyond-30000-steps-never-"
              "trains")
    path = corpus(f"{folder}/events.out.tfevents.1681111245.DGX1.6559.0")
    tags = events(path).Tags()["scalars"]
    returns = events(path).Scalars("rollout/ep_rew_mean")
    assert "time/fps" in tags and not any(t.startswith("train/") for t in tags) and len(returns) == 300
    run = load(path)
    f = one(run, "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.severity == "error" and f.onset_step == returns[0].step
    assert f.evidence["summaries"] == 300
    assert not isinstance(one(run, "UPDATE_UNSTABLE"), Finding)  # no update can have destroyed anything


def test_real_binary_success_near_half_did_not_collapse() -> None:
    # h347's tabular Q-learning on slippery FrozenLake: rewards.npy holds each of 5,000 episodes' 0/1 success; its
    # trailing median flips between 0 and 1 near half success, its means (numpy) rise and hold
    folder = "h347-tabular-q-frozenlake-slippery-5000-episodes-learns-to-0.5-success-by-1500-noisy-plateau-healthy"
    path = corpus(f"{folder}/rewards.npy")
    x = np.load(path).astype(float)
    best = np.convolve(x, np.ones(500) / 500, mode="valid")[: len(x) - 1000].max()
    assert set(np.unique(x)) == {0.0, 1.0} and x[:1000].mean() < 0.25 < x[-1000:].mean() < best < 0.6
    assert not isinstance(one(load(path), "UPDATE_UNSTABLE"), Finding)
    # synthetic: a 0/1 success that holds at 0.9 and falls to 0.05 did collapse
    rng = np.random.default_rng(4)
    p_success = [0.1] * 300 + [0.9] * 1200 + [0.05] * 500
    success = [float(rng.random() < q) for q in p_success]
    f = one(make_run({"reward_mean": success}, trainer=None), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["condition"] == "collapse after success"


def test_real_gradient_norm_rising_from_no_gradient_did_not_explode() -> None:
    # h362's Unsloth GRPO on GSM8K with tag-only rewards: the reward is 0 at 57 of 60 steps, most groups tie, and
    # grad_norm is 0 or about 1e-11 on most steps early, about 1e-05 late (0.24 on the rare steps with an untied
    # group): a rise of a million times from no gradient, not an explosion (TRL's printed dicts, read with ast)
    import ast

    folder = "h362-unsloth-trl-grpo-qwen25-15b-instruct-gsm8k-tag-only-rewards-200tok-reward-zero-57-of-60-steps"
    path = corpus(f"{folder}/train3.log")
    dicts = [ast.literal_eval(line[line.index("{'loss'"):].strip()) for line in path.read_text().splitlines()
             if "{'loss'" in line]
    norms = [d["grad_norm"] for d in dicts]
    start = min(statistics.median(norms[:12]), statistics.median(norms[:6]))  # the early window and its first half
    assert len(norms) == 60 and start <= 1e-6 < statistics.median(norms[-12:]) < 1e-4
    assert not isinstance(one(load(path), "UPDATE_UNSTABLE"), Finding)
    # synthetic: the same rise from a real gradient is an explosion
    rng = np.random.default_rng(3)
    grown = [1.0 + 0.1 * rng.standard_normal() for _ in range(12)] + [500.0 + rng.standard_normal() for _ in range(48)]
    f = one(make_run({"grad_norm": grown}), "UPDATE_UNSTABLE")
    assert isinstance(f, Finding) and f.evidence["metric"] == "grad_norm"
    tiny = [1e-11 * v for v in grown]
    assert not isinstance(one(make_run({"grad_norm": tiny}), "UPDATE_UNSTABLE"), Finding)


def test_real_log_whose_first_update_comes_after_most_of_the_run_was_untrained_until_then() -> None:
    # h356's ML-Agents sailing boat: a buffer of 85,000 steps in a run of 100,000; Losses/Value Loss is written once,
    # at the summary after the one update (90,000), after 17 of the 20 Environment/Cumulative Reward summaries
    folder = ("h356-mlagents-ppo-sailing-boat-ppo5-buffer-85k-of-100k-one-update-at-90k-return-noise-around-zero-"
              "never-trains")
    path = corpus(f"{folder}/events.out.tfevents.1701713501.DESKTOP-HCT58MV.17752.0")
    returns = events(path).Scalars("Environment/Cumulative Reward")
    losses = events(path).Scalars("Losses/Value Loss")
    assert len(returns) == 20 and [e.step for e in losses] == [90000]
    f = one(load(path), "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.severity == "error" and f.onset_step == returns[0].step
    assert f.evidence["first_update_step"] == 90000
    assert f.evidence["summaries"] == 20 and "after 17 of the 20" in f.message
    assert sum(1 for e in returns if e.step < 90000) == 17


def test_a_first_update_before_most_of_the_run_is_not_judged_untrained() -> None:
    # synthetic: 20 reward points; a value loss from the 16th point (75 % of them before it) is an update in time,
    # from the 17th (80 %) it is not
    rng = np.random.default_rng(5)
    reward = list(rng.standard_normal(20))
    for first, untrained in ((15, False), (16, True)):
        loss = [None] * first + [1.0] * (20 - first)
        f = one(make_run({"reward_mean": reward, "value_loss": loss}, trainer=None), "UPDATE_SUPPRESSED")
        assert (isinstance(f, Finding) and f.evidence.get("first_update_step") == first + 1) is untrained


def test_an_sb3_log_with_a_train_section_is_not_judged_untrained() -> None:
    # the same keys with the train/ section SB3 writes at every update: judged by the usual rules
    path = real("carla-sb3-ppo-kl-blowup/events.out.tfevents.1755701530.Legion.256656.0")
    f = one(load(path), "UPDATE_SUPPRESSED")
    assert not (isinstance(f, Finding) and "summaries" in f.evidence)


def test_real_sb3_entropy_at_zero_within_rounding_is_a_deterministic_categorical_policy() -> None:
    # h327's AirSim PPO (7 discrete moves) after a first update of 37 nats: -train/entropy_loss 0.042 at the first
    # update, about 1.5e-15 at every later one; SB3's entropies are mostly Gaussian, but none sits at 0
    folder = "h327-sb3-ppo-airsim-drone-lr-0.1-first-update-kl-37-clip-0.99-entropy-to-zero-return-minus-880-flat"
    path = corpus(f"{folder}/events.out.tfevents.1676558250.Citadel.2800.0")
    entropy = [-e.value for e in events(path).Scalars("train/entropy_loss")]
    assert 0.01 < entropy[0] < 0.1 and all(0 <= v < 1e-14 for v in entropy[1:])
    f = one(load(path), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "absolute" and "per action" in f.message
    # a Gaussian's differential entropy a little above 0 is not judged by the absolute rule
    run = load(path)
    gaussian = run.frame.with_columns(pl.col("entropy") + 0.005)
    assert one(Run(run.path, run.format, run.trainer, gaussian, run.sources, run.metadata), "ENTROPY_COLLAPSE") is None


def test_real_entropy_collapse_of_a_long_log_is_dated_where_it_stays_below_the_cut() -> None:
    # h332's Galaxian PPO, 5,859 updates: per-update entropies dip below a quarter of the early mean for a few
    # updates before 1M steps, but stay there only from about 2.3M (the policy deterministic at 2.75M)
    folder = ("h332-sb3-ppo-atari-galaxian-3m-lr-1.5e-3-learns-to-1600-then-entropy-hits-0-at-2.75m-and-return-"
              "falls-to-450")
    path = corpus(f"{folder}/events.out.tfevents.1763496476.3f4a64a188d8.372.0")
    scalars = events(path).Scalars("train/entropy_loss")
    entropy = np.array([-e.value for e in scalars])
    cut = 0.25 * entropy[: round(0.2 * len(entropy))].mean()
    below = entropy < cut
    first_five = next(i for i in range(len(below) - 5) if below[i:i + 5].all())
    assert scalars[first_five].step < 1_000_000
    f = one(load(path), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding) and f.onset_step > 2_000_000


def test_real_zero_gradient_norms_as_frequent_as_tied_groups_are_the_tied_steps() -> None:
    # h335's marine-hydrodynamics GRPO: one prompt of 4 completions per step; TRL logs the logging step's own
    # grad_norm and the tied share averaged over the 10 steps since the last log, so the norm is exactly 0 about as
    # often as the groups tie
    folder = "h335-trl-grpo-qwen25-3b-lora-r32-marine-hydrodynamics-physics-verifier-run5b-graded-reward-flat-0.6-eval-up-healthy"
    path = corpus(f"{folder}/training_metrics.json")
    steps = [r for r in json.loads(path.read_text())["steps"] if "grad_norm" in r]
    last = steps[-len(steps) // 5:]
    zero_share = sum(r["grad_norm"] == 0.0 for r in last) / len(last)
    tied = statistics.fmean(r["frac_reward_zero_std"] for r in last)
    assert zero_share > 0.5 and abs(zero_share - tied) < 0.2
    assert not isinstance(one(load(path), "UPDATE_SUPPRESSED"), Finding)
    # a norm of 0 at every step while a third of the groups tie is an update that does not happen
    n = 60
    stuck = make_run({"grad_norm": [0.0] * n, "zero_variance_group_frac": [0.3] * n, "reward_mean": [0.5] * n})
    assert isinstance(one(stuck, "UPDATE_SUPPRESSED"), Finding)


def test_the_stage_line_shows_the_update_metric_the_verdict_blames() -> None:
    # a healthy gradient norm beside an entropy that collapsed: the U level is the entropy's, which the verdict names,
    # quoted as the finding quotes it, the means of its windows
    n = 60
    entropy = list(np.geomspace(1.2, 0.004, n))
    run = make_run({"entropy": entropy, "grad_norm": [0.7 + 0.01 * (i % 3) for i in range(n)],
                    "reward_mean": [0.2 + 0.001 * (i % 5) for i in range(n)],
                    "reward_std": [0.3] * n})
    verdict = diagnose(run, *run_detectors(run))
    assert verdict.headline == "ENTROPY_COLLAPSE"
    (u_level,) = [s for s in verdict.signal if s.stage == "U"]
    k = math.ceil(0.2 * n)
    assert u_level.metric == "entropy"
    assert u_level.statistic == "mean"
    assert u_level.early == pytest.approx(statistics.fmean(entropy[:k]))
    assert u_level.late == pytest.approx(statistics.fmean(entropy[-k:]))


def test_real_tinyzero_stage_line_shows_the_collapsed_entropy() -> None:
    path = real("tinyzero-ppo-entropy-collapse/part-of-logs.md")
    entropy = [float(m) for m in re.findall(r"actor/entropy_loss:([0-9.]+)", path.read_text(encoding="utf-8"))]
    run = load(path)
    verdict = diagnose(run, *run_detectors(run))
    (u_level,) = [s for s in verdict.signal if s.stage == "U"]
    assert verdict.headline == "ENTROPY_COLLAPSE" and u_level.metric == "entropy" and max(entropy) < 0.01
