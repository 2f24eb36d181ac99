"""The seed detectors (ADV_COLLAPSE, DEGENERATE_GROUPS, REWARD_STD_DEATH) and DEAD_FROM_START:
synthetic fixtures with known ground truth, a registry self-test and checks on real logs."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.stats

from advcore.detectors import Finding, NotEvaluable, run_detectors
from advcore.diagnose import diagnose, reward_regime
from advcore.ingest import Run, load
from advcore.scan import ScanOptions, scan_file
from tests._real import REAL, corpus, events
from tests.detectors._fixtures import fired as fired_by
from tests.detectors._fixtures import make_run, one

ROOT = Path(__file__).resolve().parents[2]
SEED = ("ADV_COLLAPSE", "DEGENERATE_GROUPS", "REWARD_STD_DEATH", "DEAD_FROM_START")


def fired(run: Run) -> dict[str, Finding]:
    return fired_by(run, SEED)


# --- synthetic fixtures -------------------------------------------------------------------------

RNG = np.random.default_rng(0)


def collapse_adv(n: int = 100, at: int = 60) -> list[float]:
    return [float(1.0 + 0.05 * RNG.standard_normal()) if i < at else 0.01 for i in range(n)]


def test_adv_collapse_fires_with_onset_at_the_drop() -> None:
    run = make_run({"adv_std": collapse_adv(), "reward_std": [0.5] * 100, "reward_mean": [0.5] * 100})
    f = one(run, "ADV_COLLAPSE")
    assert isinstance(f, Finding)
    assert f.onset_step == 61 and f.evidence["onset_step"] == 61
    assert f.evidence["late_mean"] < 0.1 < 0.5 < f.evidence["early_mean"]
    assert "proxy" not in f.evidence
    json.dumps(f.to_json())
    # only ADV_COLLAPSE with rewards still spread -> the plumbing
    v = diagnose(run, *run_detectors(run, only=SEED))
    assert v.stage == "T" and "plumbing" in v.summary and v.onset == 61


def test_adv_collapse_quiet_on_healthy_and_guarded_when_never_healthy() -> None:
    healthy = make_run({"adv_std": [1.0 + 0.05 * math.sin(i) for i in range(100)]})
    assert one(healthy, "ADV_COLLAPSE") is None
    never = make_run({"adv_std": [0.01] * 100})
    assert one(never, "ADV_COLLAPSE") is None  # the healthy-early guard
    assert isinstance(one(never, "DEAD_FROM_START"), Finding)


def test_adv_collapse_knob_override_and_not_evaluable() -> None:
    run = make_run({"adv_std": [1.0] * 60 + [0.08] * 40})
    assert isinstance(one(run, "ADV_COLLAPSE"), Finding)
    assert one(run, "ADV_COLLAPSE", collapse_below=0.05) is None
    ne = one(make_run({"kl": [0.1] * 50}), "ADV_COLLAPSE")
    assert isinstance(ne, NotEvaluable) and "adv_std" in ne.needs[0]


def test_adv_collapse_proxies_are_named() -> None:
    verl = make_run({"adv_max": [2.0] * 60 + [0.02] * 40, "adv_min": [-2.0] * 60 + [0.0] * 40}, trainer="verl")
    f = one(verl, "ADV_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["proxy"] == "adv_max - adv_min" and f.onset_step == 61
    trl = make_run({"zero_variance_group_frac": [0.3] * 60 + [1.0] * 40, "reward_std": [0.4] * 60 + [0.0] * 40})
    f = one(trl, "ADV_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["proxy"] == "sqrt(1 - zero_variance_group_frac)"


def test_degenerate_groups_quiet_when_half_tied_and_learning() -> None:
    # 0/1 rewards at moderate success: about half the groups tied, reward improving
    n = 200
    tied = [float(np.clip(0.5 + 0.1 * RNG.standard_normal(), 0, 1)) for _ in range(n)]
    run = make_run({"zero_variance_group_frac": tied, "reward_mean": list(np.linspace(0.2, 0.7, n)),
                    "reward_std": [0.4] * n})
    assert fired(run) == {}
    assert diagnose(run, *run_detectors(run, only=SEED)).stage is None


def test_degenerate_groups_fires_when_tied_share_high() -> None:
    n = 100
    tied = [0.4] * 20 + [0.95] * 80
    run = make_run({"zero_variance_group_frac": tied, "reward_mean": [0.5 + 0.1 * math.sin(i) for i in range(n)]})
    f = one(run, "DEGENERATE_GROUPS")
    assert isinstance(f, Finding) and f.onset_step == 21 and f.stage == "R"
    assert "proxy" not in f.evidence


def test_degenerate_groups_proxy_from_reward_std_steps() -> None:
    # one group per step: 92 % of steps tied (unsloth-qwen3-vl-like) fires, 31 % stays quiet
    flags = [0.0 if i % 12 == 0 else 1.0 for i in range(60)]
    run = make_run({"reward_std": [0.3 * (1 - f) for f in flags], "reward_mean": [2.0] * 60})
    f = one(run, "DEGENERATE_GROUPS")
    assert isinstance(f, Finding) and f.evidence["proxy"] == "1[reward_std <= 1e-6]"
    quiet = make_run({"reward_std": [0.0 if i % 3 == 0 else 0.5 for i in range(250)]})
    assert one(quiet, "DEGENERATE_GROUPS") is None


def test_reward_std_death_fires_and_quiet() -> None:
    std = [0.4] * 50 + [0.4 * 0.5 ** k for k in range(1, 6)] + [0.001] * 45
    run = make_run({"reward_std": std, "reward_mean": [0.9] * 100})
    f = one(run, "REWARD_STD_DEATH")
    assert isinstance(f, Finding) and f.onset_step == 54  # 0.4/16 = 0.025 < 0.04 from step 54
    assert f.evidence["late_over_early"] < 0.1
    assert one(make_run({"reward_std": [0.4] * 50 + [0.1] * 50}), "REWARD_STD_DEATH") is None
    # ~0 from the start: not a death, DEAD_FROM_START's business
    assert one(make_run({"reward_std": [1e-5] * 100}), "REWARD_STD_DEATH") is None
    assert isinstance(one(make_run({"kl": [0.0] * 10}), "REWARD_STD_DEATH"), NotEvaluable)


def test_dead_from_start_all_zero_and_quiet_on_live_run() -> None:
    zero = make_run({"reward_mean": [0.0] * 50, "reward_std": [0.0] * 50, "grad_norm": [0.0] * 50, "kl": [0.0] * 50})
    f = one(zero, "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.onset_step == 1 and f.severity == "error"
    v = diagnose(zero, *run_detectors(zero, only=SEED))
    assert v.stage == "R" and "setup problem" in v.summary and v.regime == "floor"
    live = make_run({"reward_std": [0.3] * 50, "grad_norm": [0.5] * 50})
    assert one(live, "DEAD_FROM_START") is None
    # a slow start that recovers is not dead
    slow = make_run({"reward_std": [0.0] * 20 + [0.3] * 80})
    assert one(slow, "DEAD_FROM_START") is None
    assert isinstance(one(make_run({"lr": [1e-5] * 10}), "DEAD_FROM_START"), NotEvaluable)


def test_phases_are_named_in_evidence() -> None:
    std = [0.4] * 20 + [0.4] * 20 + [0.0] * 20
    run = make_run({"adv_std": [1.0] * 40 + [0.0] * 20}, steps=list(range(1, 21)) * 3,
                   phase=[0] * 20 + [1] * 20 + [2] * 20)
    f = one(run, "ADV_COLLAPSE")
    assert isinstance(f, Finding) and f.onset_step == 1 and f.evidence["onset_phase"] == 2
    assert std  # phases keep their own step numbers


def test_all_three_fire_means_start_from_reward_variance_and_regimes() -> None:
    n = 100
    run = make_run({
        "adv_std": [1.0] * 50 + [0.0] * 50,
        "zero_variance_group_frac": [0.3] * 20 + [1.0] * 80,
        "reward_std": [0.4] * 50 + [0.0] * 50,
        "reward_mean": [0.5] * 20 + list(np.linspace(0.5, 1.0, 30)) + [1.0] * 50,
    })
    findings, ne = run_detectors(run, only=SEED)
    assert {f.id for f in findings} >= {"ADV_COLLAPSE", "DEGENERATE_GROUPS", "REWARD_STD_DEATH"}
    v = diagnose(run, findings, ne)
    assert "start from reward variance" in v.summary and v.regime == "saturation"
    assert [f.stage for f in v.findings][-1] == "T"  # reward-side findings first
    floor = make_run({"reward_mean": [0.3] * 20 + [0.0] * 80, "reward_std": [0.3] * 20 + [0.0] * 80})
    assert reward_regime(floor) == "floor"
    tied = make_run({"reward_mean": [0.8 + 0.05 * math.sin(i) for i in range(n)], "reward_std": [0.0] * n})
    assert reward_regime(tied) == "tied_groups"


# --- registry self-test -------------------------------------------------------------------------

# --- real logs ----------------------------------------------------------------------------------

needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"real logs not found at {REAL} (set ADVCORE_SHARED_REAL)")


def csv_run(name: str) -> Run:
    """An Unsloth notebook table (Step, reward, reward_std, ...) read directly for calibration."""
    path = next((REAL / name).glob("*.csv"))
    df = pl.read_csv(path)
    return make_run({"reward_mean": df["reward"].cast(pl.Float64).to_list(),
                     "reward_std": df["reward_std"].cast(pl.Float64).to_list()},
                    steps=df["Step"].cast(pl.Int64).to_list())


@needs_real
def test_real_f1_strategist_dead_and_degenerate_from_the_start() -> None:
    run = load(REAL / "f1-strategist-grpo-zero-std" / "trainer_state.json")
    got = fired(run)
    assert set(got) == {"DEGENERATE_GROUPS", "DEAD_FROM_START"}
    assert got["DEGENERATE_GROUPS"].onset_step == 10 and got["DEAD_FROM_START"].onset_step == 10
    assert got["DEGENERATE_GROUPS"].evidence["run_mean"] == pytest.approx(0.998, abs=1e-3)
    assert got["DEAD_FROM_START"].evidence["proxy"] == "sqrt(1 - zero_variance_group_frac)"
    v = diagnose(run, *run_detectors(run, only=SEED))
    assert v.stage == "R" and "setup problem" in v.summary and v.regime == "tied_groups"
    assert v.findings[0].id == "DEAD_FROM_START"


@needs_real
@pytest.mark.parametrize("name", ["legaloom-grpo-v3", "chaos-economy-grpo"])
def test_real_quiet_runs(name: str) -> None:
    path = next(p for p in (REAL / name).glob("*.json"))
    assert fired(load(path)) == {}


@needs_real
@pytest.mark.parametrize(("name", "expected"), [
    # 92 % zero-std steps; the few live early steps give REWARD_STD_DEATH an early level to fall from
    ("unsloth-qwen3-vl-8b-vision-grpo", {"DEGENERATE_GROUPS", "DEAD_FROM_START", "REWARD_STD_DEATH"}),
    ("unsloth-qwen3-8b-fp8-grpo", {"DEGENERATE_GROUPS"}),  # 87 % zero-std steps
    ("unsloth-qwen25-3b-grpo", set()),  # learns with 31 % zero-std steps
    ("unsloth-llama32-3b-grpo-advanced", set()),  # healthy
    ("unsloth-qwen3-4b-grpo", set()),  # 47 %: the "half tied" zone
    ("unsloth-phi4-14b-grpo", set()),  # 43 %
    ("unsloth-llama31-8b-grpo-userrun", set()),  # tied early (47 % of the first quarter), then learns
])
def test_real_unsloth_tables(name: str, expected: set[str]) -> None:
    assert set(fired(csv_run(name))) == expected


def test_a_phase_that_collapses_is_judged_on_its_own_windows() -> None:
    # phase 0 dies at its step 11 (all groups tied), phase 1 is healthy: the whole run's late window
    # (phase 1) is clean, so only the phase-by-phase reading can see it
    tied = [0.3] * 10 + [1.0] * 10 + [0.3] * 40
    run = make_run({"zero_variance_group_frac": tied}, steps=list(range(1, 21)) + list(range(1, 41)),
                   phase=[0] * 20 + [1] * 40)
    assert one(run, "DEGENERATE_GROUPS") is None
    f = fired(run)["DEGENERATE_GROUPS"]
    assert f.onset_step == 11 and f.evidence["onset_phase"] == 0 and f.evidence["phases_flagged"] == [0]
    healthy = make_run({"zero_variance_group_frac": [0.3] * 60}, steps=list(range(1, 21)) + list(range(1, 41)),
                       phase=[0] * 20 + [1] * 40)
    assert fired(healthy) == {}


def test_the_regime_follows_the_findings_of_a_retuned_detector(tmp_path: Path) -> None:
    # a reward at its floor (0.02 of the span above it) with tied groups: with default knobs REWARD_FLOOR
    # fires and the verdict names the floor; re-tuned so it does not fire, the verdict does not claim it
    late = [0.01, 0.015]  # within 0.02 x the span (0.49) of the floor, but not within 0.001 x it
    rows = [{"step": i + 1, "reward_mean": 0.5 if i < 20 else late[i % 2], "reward_std": 0.3 if i < 20 else 0.0}
            for i in range(100)]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    default = scan_file(path, ScanOptions())
    assert "REWARD_FLOOR" in {f.id for f in default.findings} and default.verdict.regime == "floor"
    retuned = scan_file(path, ScanOptions(settings={"REWARD_FLOOR": {"rel_tol": 0.001}}))
    assert "REWARD_FLOOR" not in {f.id for f in retuned.findings} and retuned.verdict.regime is None


def test_dead_from_start_policy_that_never_left_its_initialization() -> None:
    flat_reward = [-160.0 + 10 * (-1) ** i for i in range(50)]
    # a uniform policy over 4 actions (ln 4 = 1.3863) for the whole run while the reward goes nowhere
    uniform = [math.log(4) - 0.004 + 0.0005 * (i % 3) for i in range(50)]
    f = one(make_run({"entropy": uniform, "reward_mean": flat_reward}), "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.stage == "U" and f.evidence["policy_frozen"] is True
    assert "ln 4" in f.message and f.onset_step == 1
    # bit-for-bit the same entropy at every update (stable-baselines 2 PPO2 with masked logits)
    f = one(make_run({"entropy": [-0.3496513] * 30, "reward_mean": flat_reward[:30]}), "DEAD_FROM_START")
    assert isinstance(f, Finding) and "never changed" in f.message
    # near ln 4 but moving, a reward that rose and held, or an entropy of exactly 0 (a placeholder): no finding
    moving = [math.log(4) * (1 - i / 100) for i in range(50)]
    assert one(make_run({"entropy": moving, "reward_mean": flat_reward}), "DEAD_FROM_START") is None
    learning = [-160.0 + 4 * i + (-1) ** i for i in range(50)]
    assert one(make_run({"entropy": uniform, "reward_mean": learning}), "DEAD_FROM_START") is None
    assert one(make_run({"entropy": [0.0] * 30, "reward_mean": flat_reward[:30]}), "DEAD_FROM_START") is None
    # a token entropy that sits near 3.75 nats is within 0.5 % of ln 42: no uniform policy over few actions
    tokens = [3.745 + 0.005 * (i % 3) for i in range(30)]
    assert one(make_run({"entropy": tokens, "reward_mean": flat_reward[:30]}), "DEAD_FROM_START") is None
    # a Gaussian with a fixed sigma: its entropy never moves while the update's KL says the policy does
    fixed = {"entropy": [-41.47] * 30, "reward_mean": flat_reward[:30]}
    assert one(make_run({**fixed, "kl_step": [-0.02 - 0.001 * (i % 5) for i in range(30)]}), "DEAD_FROM_START") is None
    assert isinstance(one(make_run({**fixed, "kl_step": [0.0] * 30}), "DEAD_FROM_START"), Finding)


def test_real_amp_humanoid_with_a_fixed_sigma_learns() -> None:
    """checked: losses/entropy -41.47 at all 619 points; rewards/frame rises 4.1 -> 291 (the episode length)."""
    path = corpus("h74-rl-games-amp-humanoid-walk-learns-fixed-sigma-negative-kl/events.out.tfevents.1651511970.edison")
    acc = events(path)
    entropy = [e.value for e in acc.Scalars("losses/entropy")]
    reward = [e.value for e in acc.Scalars("rewards/frame")]
    assert max(entropy) == min(entropy) and reward[-1] > 10 * reward[0]
    run = load(path)
    assert run.sources["reward_mean"] == "rewards/frame" and run.frame["reward_mean"].drop_nulls().len() == len(reward)
    assert "DEAD_FROM_START" not in fired_by(run)


def test_dead_from_start_entropy_that_never_moved_by_a_tenth_of_a_percent() -> None:
    flat_reward = [110.0 + 5 * (-1) ** i for i in range(60)]
    # the uniform policy over 3,384 logits: ln 3384 = 8.1268, the logged entropy 8.1208 to 8.1268
    stuck = [math.log(3384) - 0.006 * (i % 4) / 3 for i in range(60)]
    f = one(make_run({"entropy": stuck, "reward_mean": flat_reward}), "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.stage == "U" and "within 0.1 %" in f.message
    # moving by 0.3 % (a language model's token entropy holding steady) is a policy that changes
    steady = [3.745 + 0.005 * (i % 3) for i in range(60)]
    assert one(make_run({"entropy": steady, "reward_mean": flat_reward}), "DEAD_FROM_START") is None


def test_real_ppo_whose_policy_head_stayed_uniform_over_3384_logits() -> None:
    path = corpus("h51-proteinfold-ppo-gnn-maxaction-policy-stuck-uniform/training_log.csv")
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    updates = [float(r["entropy"]) for r in rows if float(r["entropy"]) != 0.0 or float(r["value_loss"]) != 0.0]
    assert len(updates) < len(rows) / 4 and max(updates) - min(updates) < 1e-3 * math.log(3384)
    run = load(path)
    # the 0,0,0 of the episodes without an update are placeholders, not a policy of entropy 0
    assert run.frame["entropy"].drop_nulls().len() == len(updates)
    assert run.metadata["update_placeholder_rows"] == len(rows) - len(updates)
    findings, missing = run_detectors(run)
    f = next(f for f in findings if f.id == "DEAD_FROM_START")
    assert f.stage == "U" and f.evidence["policy_frozen"] is True
    assert diagnose(run, findings, missing).headline == "DEAD_FROM_START"


def test_spinup_vanilla_actor_critic_frozen_at_the_uniform_policy() -> None:
    path = corpus("h14-spinup-vanilla-ac-lunarlander-policy-frozen-entropy-max/progress.txt")
    rows = [line.split("\t") for line in path.read_text().splitlines()]
    entropy = [float(r[rows[0].index("Entropy")]) for r in rows[1:]]
    assert all(abs(v - math.log(4)) <= 0.005 * math.log(4) for v in entropy)  # the fact the detector reads
    findings, _ = run_detectors(load(path))
    f = next(f for f in findings if f.id == "DEAD_FROM_START")
    assert f.stage == "U" and f.onset_step == 0 and f.evidence["policy_frozen"] is True


def test_real_mlagents_policy_never_updated_leads_the_untrained_critics_finding() -> None:
    # ezrahuffman/Gladiator SingleOpponent-3: a 409,600-step buffer in a 500k-step run, one PPO update at 410k; the
    # entropy holds its initial value and the untrained critic outputs 2e7 on unnormalised inputs: the update that
    # never ran leads, not the critic it never trained
    path = corpus("h429-mlagents-ppo-gladiator-single-opponent-buffer-409600-one-update-in-500k-steps-return-5152-"
                  "8403-6521-is-a-frozen-random-policy/events.out.tfevents.1689977052.DESKTOP-867E2OK.40200.0")
    acc = events(path)
    entropy = [e.value for e in acc.Scalars("Policy/Entropy")]
    assert max(entropy) - min(entropy) <= 0.001 * min(entropy)
    assert min(e.step for e in acc.Scalars("Losses/Value Loss")) >= 400_000
    run = load(path)
    findings, missing = run_detectors(run)
    assert {"BASELINE_BROKEN", "DEAD_FROM_START"} <= {f.id for f in findings}
    verdict = diagnose(run, findings, missing)
    assert verdict.headline == "DEAD_FROM_START" and verdict.stage == "U"
    assert verdict.findings[0].evidence["dead"] == "update"


def test_groups_tied_over_nearly_the_whole_run_fire_though_the_last_steps_untie() -> None:
    # steps 1-46 of 50 tied (reward_std exactly 0), the last four not: 92 % over the run, 60 % late
    std = [0.0] * 46 + [0.5, 1.44, 1.44, 0.58]
    f = one(make_run({"reward_std": std, "reward_mean": [1.5, 3.0] * 25}), "DEGENERATE_GROUPS")
    assert isinstance(f, Finding) and f.onset_step == 1
    assert f.evidence["run_mean"] == pytest.approx(46 / 50) and f.evidence["late_mean"] == pytest.approx(6 / 10)
    # 80 % tied over the run with the last fifth untied: not nearly every step, quiet
    assert one(make_run({"reward_std": [0.0] * 40 + [0.5] * 10, "reward_mean": [1.0] * 50}), "DEGENERATE_GROUPS") is None


def _binary_grpo_steps(solved: list[float], seed: int) -> tuple[dict[str, list[float]], np.ndarray]:
    """Per step, 2 prompts of 4 completions scored 2.0 when correct else 0.0: a prompt is solved
    (always right) with the step's probability, else unsolved (always wrong) or uncertain (right half
    the time) alike. TRL's reward (the mean) and reward_std (the mean of the groups' stds), and the
    samples, shape (steps, 2, 4)."""
    rng = np.random.default_rng(seed)
    p = np.array([[1.0 if u < s else (0.0 if u < s + (1 - s) / 2 else 0.5) for u in rng.random(2)] for s in solved])
    samples = 2.0 * (rng.random((len(solved), 2, 4)) < p[:, :, None])
    return {"reward_mean": list(samples.mean(axis=(1, 2))),
            "reward_std": list(samples.std(axis=2, ddof=1).mean(axis=1))}, samples


def test_degenerate_groups_ties_at_the_ceiling_of_a_learning_run_are_info() -> None:
    # a classifier learning its labels (h92 meme classifier: accuracy 72 % -> 83 %): most late steps tie
    # because both prompts are solved; reported as info, the verdict stays quiet
    n = 125
    cols, samples = _binary_grpo_steps(list(np.linspace(0.3, 0.9, n)), seed=5)
    late = samples[-(n // 5):]
    tied = late[(late == late[:, :, :1]).all(axis=(1, 2))]  # every group of the step tied: reward_std 0
    at_ceiling = (tied == 2.0).all(axis=(1, 2))
    assert at_ceiling.mean() >= 2 / 3  # the ground truth: the late ties are mostly solved prompts
    run = make_run(cols)
    f = one(run, "DEGENERATE_GROUPS")
    assert isinstance(f, Finding) and f.severity == "info"
    assert f.evidence["late_tied_at_ceiling"] == pytest.approx(at_ceiling.mean())
    assert f.evidence["ceiling"] == 2.0 and f.evidence["rise_z"] >= 2.5 and f.evidence["room_left"] >= 0.1
    assert diagnose(run, *run_detectors(run)).status == "quiet"
    # the same ties with the prompts nearly all solved late (the lab's saturation: 96 % at the ceiling)
    cols, _ = _binary_grpo_steps(list(np.linspace(0.3, 0.99, n)), seed=5)
    f = one(make_run(cols), "DEGENERATE_GROUPS")
    assert isinstance(f, Finding) and f.severity == "warn"


def test_degenerate_groups_ties_at_the_ceiling_without_a_rise_warn() -> None:
    # the same ceiling ties from the first step, no rise (an SFT'd policy: h92 Qwen3-VL after SFT): no
    # learning signal, a warning
    cols, _ = _binary_grpo_steps([0.97] * 125, seed=6)
    f = one(make_run(cols), "DEGENERATE_GROUPS")
    assert isinstance(f, Finding) and f.severity == "warn" and "rise_z" not in f.evidence


def _pair_steps(logits: np.ndarray, seed: int) -> dict[str, list[float]]:
    """Per step, 64 prompts of fixed difficulty (logit offsets uniform in -4..4) and 2 completions each,
    scored 1 with probability sigmoid(logit + offset), else 0 (RLOO with k = 2): the step's reward mean and
    std, the share of tied pairs, and the 0/1 reward bounds."""
    rng = np.random.default_rng(seed)
    p = 1 / (1 + np.exp(-(logits[:, None] + rng.uniform(-4, 4, 64)[None, :])))
    s = (rng.random((len(logits), 64, 2)) < p[:, :, None]).astype(float)
    n = len(logits)
    return {"reward_mean": list(s.mean(axis=(1, 2))), "reward_std": list(s.reshape(n, -1).std(axis=1, ddof=1)),
            "zero_variance_group_frac": list((s[:, :, 0] == s[:, :, 1]).mean(axis=1)),
            "reward_max": [1.0] * n, "reward_min": [0.0] * n}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_degenerate_groups_pairs_tied_by_chance_while_the_reward_still_rises_are_info(seed: int) -> None:
    # pairs of one prompt agree by chance: about 80 % tie late at a success of about 0.75, and the run
    # still learns through the rest (the lab's hard negative pairs_tied)
    n = 80
    cols = _pair_steps(np.linspace(-1.0, 2.5, n), seed)
    assert np.mean(cols["zero_variance_group_frac"][-n // 5:]) >= 0.75  # the ground truth: most pairs tie late
    second = cols["reward_mean"][n // 2:]
    z = scipy.stats.spearmanr(np.arange(len(second)), second).statistic * (len(second) - 1) ** 0.5
    # without reward_min / reward_max the tied pairs' score is not bounded (test below): the rise makes it info
    run = make_run(_unbounded(cols))
    f = one(run, "DEGENERATE_GROUPS")
    assert isinstance(f, Finding) and f.severity == "info" and "tied_score_at_least" not in f.evidence
    assert f.evidence["second_half_rise_z"] == pytest.approx(z)
    late, middle = np.mean(cols["reward_mean"][-n // 5:]), np.mean(cols["reward_mean"][2 * n // 5:3 * n // 5])
    width = max(cols["reward_mean"]) - min(cols["reward_mean"])  # the range of the means, without reward_min / max
    assert f.evidence["late_gain"] == pytest.approx((late - middle) / width)
    assert diagnose(run, *run_detectors(run)).status == "quiet"


def _unbounded(cols: dict[str, list[float]]) -> dict[str, list[float]]:
    return {k: v for k, v in cols.items() if k not in ("reward_min", "reward_max")}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_degenerate_groups_tied_high_in_a_run_that_rose_are_info_on_the_bound(seed: int) -> None:
    # pairs tied mostly because both samples are right: the reward rose to about 0.85 and holds there, no step has
    # every pair tied, and reward_min / reward_max bound the tied pairs' mean score at (r - (1 - t)) / t of the
    # late means, r the reward mean and t the tied share (the lab's hard negative high_plateau)
    n = 80
    cols = _pair_steps(np.r_[np.linspace(-1.0, 2.5, n // 2), [2.5] * (n // 2)], seed)
    late_r, late_t = np.mean(cols["reward_mean"][-n // 5:]), np.mean(cols["zero_variance_group_frac"][-n // 5:])
    assert late_t >= 0.75 and max(cols["zero_variance_group_frac"]) < 1.0  # tied late, never every pair at once
    f = one(make_run(cols), "DEGENERATE_GROUPS")
    assert isinstance(f, Finding) and f.severity == "info"
    assert f.evidence["tied_score_at_least"] == pytest.approx((late_r - (1 - late_t)) / late_t)
    assert f.evidence["tied_score_at_least"] >= 2 / 3 and "late_tied_at_ceiling" not in f.evidence
    # bimodal prompts (each always solved or never): the reward rose to 0.5 and holds there with 95 % of the groups
    # tied, as many wrong as right; the bound, (0.5 - 0.05) / 0.95 = 0.47, says no solved prompts: a warning
    rng = np.random.default_rng(seed)
    mean = np.r_[np.linspace(0.3, 0.5, n // 2), np.full(n // 2, 0.5)] + 0.01 * rng.standard_normal(n)
    low = {"reward_mean": list(mean), "zero_variance_group_frac": [0.95] * n, "reward_std": [0.5] * n,
           "reward_max": [1.0] * n, "reward_min": [0.0] * n}
    g = one(make_run(low), "DEGENERATE_GROUPS")
    assert isinstance(g, Finding) and g.severity == "warn"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_degenerate_groups_pairs_tied_after_the_rise_stopped_warn(seed: int) -> None:
    # the same pairs once the reward has stopped rising halfway, flat or creeping by 0.1 logit over 40 steps, in a
    # log without reward_min / reward_max (with them, the ties are bounded high: info, the test above)
    n = 80
    for tail in ([2.5] * (n // 2), list(np.linspace(2.5, 2.6, n // 2))):
        cols = _unbounded(_pair_steps(np.r_[np.linspace(-1.0, 2.5, n // 2), tail], seed))
        f = one(make_run(cols), "DEGENERATE_GROUPS")
        assert isinstance(f, Finding) and f.severity == "warn" and "second_half_rise_z" not in f.evidence


def test_a_later_stage_that_died_with_the_one_blamed_is_said() -> None:
    # trl-dapo-vlm-120531: 95 % of the groups tied late, grad_norm 23.9 -> 0 (the line a newcomer saw unexplained)
    n = 50
    tied = [0.2] * 10 + [1.0] * 40
    grad = [24.0 + (i % 3) for i in range(10)] + [0.0] * 40
    run = make_run({"zero_variance_group_frac": tied, "reward_mean": [0.5 + 0.01 * (-1) ** i for i in range(n)],
                    "grad_norm": grad})
    verdict = diagnose(run, *run_detectors(run))
    assert verdict.stage == "R"
    assert "the later stages lost their signal with it (U grad_norm 25 -> 0)" in verdict.summary
    # a gradient norm that only halves did not die with it
    run = make_run({"zero_variance_group_frac": tied, "reward_mean": [0.5 + 0.01 * (-1) ** i for i in range(n)],
                    "grad_norm": grad[:10] + [12.0] * 40})
    assert "later stages" not in diagnose(run, *run_detectors(run)).summary
