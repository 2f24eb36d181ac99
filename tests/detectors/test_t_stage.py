"""REWARD_MISSING and the T-stage detectors (NOISE_AMPLIFICATION, GROUPING_ERROR,
ADV_REWARD_DECORRELATION, PRECISION_LOSS): per-sample cases with hand-computed values run
through ``advcore.reference.step_checks`` into a per-step Run, quiet controls from correct
estimators, not-evaluable runs, the cards, and the real per-sample dumps."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import scipy.stats
import polars as pl
import pytest
from advcore.detectors import GROUP_BASELINE, Finding, NotEvaluable, run_detectors
from advcore.detectors._evidence import PER_SAMPLE
from advcore.errors import AdvcoreWarning
from advcore.ingest import Run, load
from advcore.reference import grpo, reinforce_pp, rloo, step_checks
from advcore.stats import spearman, within_group_spearman

from tests._real import REAL, corpus
from tests.detectors._fixtures import make_run, one

ROOT = Path(__file__).resolve().parents[2]
MINE = ("REWARD_MISSING", "NOISE_AMPLIFICATION", "GROUPING_ERROR", "ADV_REWARD_DECORRELATION", "PRECISION_LOSS")


def rows_run(rows: list[dict[str, float]], *, extra: dict[str, list[float | None]] | None = None) -> Run:
    """A per-step Run with one row per dict (missing keys are null), as the trace would build it."""
    names = sorted({k for r in rows for k in r} | set(extra or {}))
    return make_run({k: (extra or {}).get(k) or [r.get(k) for r in rows] for k in names}, fmt="samples")


def traced(rewards: Any, groups: Any, adv: Any = None, **kw: Any) -> dict[str, float]:
    """step_checks plus the trace's Spearman columns (advcore.stats), as one per-step row."""
    row = step_checks(rewards, groups, adv, **kw)
    if adv is not None:
        r, a = np.asarray(rewards, np.float64), np.asarray(adv, np.float64)
        ids = np.unique(np.asarray(groups), return_inverse=True)[1].reshape(-1)
        ok = np.isfinite(r) & np.isfinite(a)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AdvcoreWarning)  # undefined rho (tied groups) is NaN, as the trace
            row["spearman_adv_reward"] = spearman(a[ok], r[ok])
            row["spearman_adv_reward_within"] = within_group_spearman(a[ok], r[ok], group_ids=ids[ok]).mean
    return row


def fired(run: Run) -> set[str]:
    findings, _ = run_detectors(run, only=MINE)
    return {f.id for f in findings}


# --- the four cases of the issue -----------------------------------------------------------------


def loo_std_advantages(r: np.ndarray[Any, Any], eps: float = 1e-6) -> np.ndarray[Any, Any]:
    """Leave-one-out mean baseline divided by the leave-one-out std (the faulty pipeline)."""
    out = np.empty_like(r)
    for i in range(len(r)):
        others = np.delete(r, i)
        out[i] = (r[i] - others.mean()) / (others.std(ddof=1) + eps)
    return out


def test_noise_amplification_loo_std_on_1000() -> None:
    r = np.array([1.0, 0.0, 0.0, 0.0])
    adv = loo_std_advantages(r)
    # by hand: the success is divided by the std of three zeros: 1 / (0 + 1e-6) = 1e6; the failures by
    # the std of [1, 0, 0] = sqrt(1/3): -(1/3) / (sqrt(1/3) + 1e-6)
    assert adv[0] == pytest.approx(1e6, rel=1e-12)
    assert adv[1] == pytest.approx(-(1 / 3) / (math.sqrt(1 / 3) + 1e-6), rel=1e-12)
    row = traced(r, [0, 0, 0, 0], adv)
    assert row["adv_bound_excess"] == pytest.approx(1e6 / 1.5, rel=1e-9)  # bound (G-1)/sqrt(G) = 1.5
    f = one(rows_run([row]), "NOISE_AMPLIFICATION")
    assert isinstance(f, Finding) and f.onset_step == 1 and f.stage == "T"
    assert f.evidence["adv_bound_excess_max"] == pytest.approx(1e6 / 1.5, rel=1e-9)
    json.dumps(f.to_json())
    # the same rewards through a plain group std: quiet
    assert one(rows_run([traced(r, [0] * 4, grpo(r, [0] * 4))]), "NOISE_AMPLIFICATION") is None


def test_noise_amplification_rounding_noise_with_tiny_eps() -> None:
    # one group tied up to 1e-7 (rounding noise of a model score) next to a real one; OpenRLHF's eps 1e-9
    r = np.array([0.7, 0.7, 0.7, 0.7 + 1e-7, 1.0, 0.0, 1.0, 0.0])
    g = [0, 0, 0, 0, 1, 1, 1, 1]
    adv = grpo(r, g, eps=1e-9)
    # by hand: the noisy group's deviations -2.5e-8 (x3), 7.5e-8 over its std 5e-8 (+ 1e-9): 1.47
    assert adv[3] == pytest.approx(7.5e-8 / (5e-8 + 1e-9), rel=1e-6)
    f = one(rows_run([traced(r, g, adv)]), "NOISE_AMPLIFICATION")
    assert isinstance(f, Finding)
    assert f.evidence["noise_group_adv_max_max"] == pytest.approx(7.5e-8 / (5e-8 + 1e-9), rel=1e-6)
    # TRL's eps 1e-4 keeps the noise at 7.5e-8 / (5e-8 + 1e-4) ~ 7.5e-4: quiet
    assert one(rows_run([traced(r, g, grpo(r, g, eps=1e-4))]), "NOISE_AMPLIFICATION") is None


def test_precision_loss_bf16_rewards() -> None:
    r = [1.0, 1.0, 1.0, 1.0078125]
    # verl's loop GRPO in bf16: the group mean 1.001953125 rounds to 1.0, the centred values are
    # (0, 0, 0, 2^-7), the std is 2^-8 -> [0, 0, 0, 2] instead of [-0.5, -0.5, -0.5, 1.5]
    np.testing.assert_allclose(grpo(r, [0] * 4, eps=0.0), [-0.5, -0.5, -0.5, 1.5])
    row = traced(r, [0] * 4, [0.0, 0.0, 0.0, 2.0], reward_dtype="bfloat16", adv_dtype="bfloat16")
    assert row["adv_bound_excess"] == pytest.approx(2 / 1.5)  # 2 > (G-1)/sqrt(G): impossible under GRPO
    f = one(rows_run([row]), "PRECISION_LOSS")
    assert isinstance(f, Finding) and f.severity == "warn" and f.evidence["reward_low_precision"] == 1.0
    assert f.evidence["reward_rounding_adv_err"] == pytest.approx(1.0078125 + 1.001953125)
    # the same values held in float32 with the right advantages: quiet (2^-24 * 2.01 / 2^-8 ~ 3e-5)
    ok = traced(r, [0] * 4, grpo(r, [0] * 4, eps=1e-6, singleton="raw").astype(np.float32), reward_dtype="float32")
    assert one(rows_run([ok]), "PRECISION_LOSS") is None


def test_precision_loss_one_pass_variance() -> None:
    r = np.array([1000.0, 1000.1, 1000.2, 1000.3, 999.0, 1001.0, 1000.0, 1000.0], dtype=np.float32)
    g = [0, 0, 0, 0, 1, 1, 1, 1]
    # float32 one-pass variance E[x^2] - E[x]^2 per group, as a naive kernel computes it
    adv = np.empty(8, np.float32)
    for k in (0, 4):
        x = r[k:k + 4]
        m = np.float32(x.mean(dtype=np.float32))
        var = np.float32((x * x).mean(dtype=np.float32) - m * m) * np.float32(4 / 3)
        adv[k:k + 4] = (x - m) / (np.sqrt(np.maximum(var, np.float32(0))) + np.float32(1e-4))
    row = traced(r.astype(np.float64), g, adv)
    assert row["adv_recompute_err"] > 1 and row["reward_onepass_relerr"] > 0.01
    f = one(rows_run([row]), "PRECISION_LOSS")
    assert isinstance(f, Finding)
    # the two-pass float64 reference is quiet: rounding 2^-24 * 2000 / 0.129 ~ 1e-3
    good = traced(r.astype(np.float64), g, grpo(r, g).astype(np.float32))
    assert one(rows_run([good]), "PRECISION_LOSS") is None


def test_grouping_error_batch_centred() -> None:
    r = np.array([1, 2, 3, 4, 10, 12, 5, 6, 7], dtype=np.float64)
    g = [0, 0, 0, 0, 1, 1, 2, 2, 2]
    adv = r - r.mean()  # centred on the batch mean 50/9 instead of the group means
    row = traced(r, g, adv)
    # by hand: group means of the advantage 2.5 - 50/9, 11 - 50/9, 6 - 50/9; the largest |.| is
    # 11 - 50/9 = 49/9, over the population std of the rewards sqrt(384/9 - (50/9)^2)
    assert row["adv_group_mean_max"] == pytest.approx((49 / 9) / math.sqrt(384 / 9 - (50 / 9) ** 2), rel=1e-12)
    f = one(rows_run([row]), "GROUPING_ERROR")
    assert isinstance(f, Finding) and f.severity == "error" and f.onset_step == 1
    assert "group advantages not summing to 0" in f.evidence["reasons"]
    # the per-group reference (GRPO) on the same groups: quiet except the uneven sizes 4, 2, 3
    good = traced(r, g, grpo(r, g))
    assert good["adv_group_mean_max"] < 1e-12
    assert one(rows_run([good]), "GROUPING_ERROR", uneven_above=1.0) is None


def test_critic_runs_are_not_judged_on_group_bounds() -> None:
    r = np.array([1, 2, 3, 4, 10, 12, 5, 6, 7], dtype=np.float64)
    row = traced(r, [0, 0, 0, 0, 1, 1, 2, 2, 2], r - r.mean())
    row["value_mean"] = 5.0  # a PPO trace: advantages come from a learned value, not from the groups
    for det in ("GROUPING_ERROR", "NOISE_AMPLIFICATION"):
        out = one(rows_run([row]), det)
        assert isinstance(out, NotEvaluable) and out.needs == (GROUP_BASELINE,), det


def test_grouping_error_tied_group_gets_nonzero_advantage() -> None:
    r = np.array([1, 2, 3, 4, 5, 5, 5, 5, 7, 8, 9, 10], dtype=np.float64)
    g = [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]  # group 1 holds 5, 5, 5 and 5
    adv = r - r.mean()
    # by hand: batch mean 64/12 = 16/3, so the tied group gets 5 - 16/3 = -1/3; GRPO gives it 0
    assert adv[4] == pytest.approx(-1 / 3, rel=1e-12)
    assert grpo(r, g)[4:8].tolist() == [0.0, 0.0, 0.0, 0.0]
    row = traced(r, g, adv)
    assert row["tied_group_adv_nonzero_frac"] == 1.0 and row["adv_batch_normalized"] == 0.0
    f = one(rows_run([row]), "GROUPING_ERROR")
    assert isinstance(f, Finding) and "tied groups with non-zero advantages" in f.evidence["reasons"]


def test_grouping_error_singletons() -> None:
    r = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0])
    g = [0, 0, 0, 0, 1, 1, 2]  # one prompt lost all but one sample
    row = traced(r, g, grpo(r, g, eps=1e-6, singleton="raw"))
    assert row["singleton_group_frac"] == 1 / 3
    f = one(rows_run([row]), "GROUPING_ERROR")
    assert isinstance(f, Finding) and "singleton groups" in f.evidence["reasons"]
    # a uid per sample: every group a singleton and verl's GRPO leaking the raw rewards
    every = traced(r, list(range(7)), grpo(r, list(range(7)), eps=1e-6, singleton="raw"))
    assert isinstance(one(rows_run([every]), "GROUPING_ERROR"), Finding)
    # no grouping at all and advantages of no group estimator (a PPO-like trace): not judged
    ppo = traced(r, list(range(7)), np.array([0.3, -0.2, 0.1, 0.5, -0.4, 0.0, 0.2]))
    assert one(rows_run([ppo]), "GROUPING_ERROR") is None


def test_reward_missing_imputed_zero_and_nan() -> None:
    # failures at -1, successes at +1, two missing rewards filled with 0.0
    r = np.array([1.0, -1.0, 0.0, -1.0, 1.0, 0.0, -1.0, -1.0])
    g = [0, 0, 0, 0, 1, 1, 1, 1]
    row = traced(r, g, grpo(r, g))
    assert row["reward_imputed_zero_frac"] == 2 / 8
    f = one(rows_run([row]), "REWARD_MISSING")
    assert isinstance(f, Finding) and f.stage == "R" and f.evidence["source"] == "per-sample rewards"
    # a NaN reward is masked and counted, not propagated into the other metrics
    rn = np.array([1.0, np.nan, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    adv = grpo(rn, g)
    adv[1] = 0.0  # TRL: nan_to_num
    row = traced(rn, g, adv)
    assert row["reward_null_frac"] == 1 / 8
    assert all(math.isfinite(v) for k, v in row.items()), row
    assert row["adv_recompute_err"] <= 1
    f = one(rows_run([row]), "REWARD_MISSING")
    assert isinstance(f, Finding) and f.evidence["reward_null_frac"] == 1 / 8
    assert fired(rows_run([row])) == {"REWARD_MISSING"}
    # healthy 0/1 rewards: quiet
    ok = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    assert one(rows_run([traced(ok, g, grpo(ok, g))]), "REWARD_MISSING") is None


def test_reward_missing_from_per_step_logs() -> None:
    base: dict[str, list[float | None]] = {"grad_norm": [0.5] * 10, "kl": [0.01] * 10}
    nan_at_4: list[float | None] = [0.5, 0.6, 0.55, math.nan, 0.6, 0.62, 0.6, 0.61, 0.63, 0.6]
    run = rows_run([{}] * 10, extra={"reward_mean": nan_at_4, **base})
    f = one(run, "REWARD_MISSING")
    assert isinstance(f, Finding) and f.onset_step == 4 and f.evidence["source"] == "per-step reward_mean is NaN"
    # null (not logged on that line) is no evidence
    null_at_4: list[float | None] = [0.5, 0.6, 0.55, None, 0.6, 0.62, 0.6, 0.61, 0.63, 0.6]
    assert one(rows_run([{}] * 10, extra={"reward_mean": null_at_4, **base}), "REWARD_MISSING") is None
    # NaN before the first finite reward: no episode had ended yet; NaN throughout: missing
    leading: list[float | None] = [math.nan, math.nan, 0.55, 0.6, 0.6, 0.62, 0.6, 0.61, 0.63, 0.6]
    assert one(rows_run([{}] * 10, extra={"reward_mean": leading, **base}), "REWARD_MISSING") is None
    f = one(rows_run([{}] * 10, extra={"reward_mean": [math.nan] * 10, **base}), "REWARD_MISSING")
    assert isinstance(f, Finding) and f.onset_step == 1 and f.evidence["steps_flagged"] == 10
    # neither per-sample evidence nor a reward_mean: not evaluable
    ne = one(rows_run([{}] * 10, extra={"kl": base["kl"]}), "REWARD_MISSING")
    assert isinstance(ne, NotEvaluable) and "advcore trace" in ne.needs[0]


def test_adv_reward_decorrelation() -> None:
    rng = np.random.default_rng(3)
    g = np.repeat(np.arange(16), 8)
    r = rng.integers(0, 5, 128).astype(np.float64)
    good = grpo(r, g).astype(np.float32)
    ok = traced(r, g, good)
    assert ok["spearman_adv_reward_within"] == pytest.approx(1.0)
    assert one(rows_run([ok]), "ADV_REWARD_DECORRELATION") is None
    flipped = traced(r, g, -good)  # the sign lost on the way to the loss
    f = one(rows_run([flipped]), "ADV_REWARD_DECORRELATION")
    assert isinstance(f, Finding) and f.evidence["spearman_adv_reward_within"] == pytest.approx(-1.0)
    shuffled = traced(r, g, good[rng.permutation(128)])  # misaligned after a gather
    assert isinstance(one(rows_run([ok, shuffled, shuffled]), "ADV_REWARD_DECORRELATION"), Finding)


# --- quiet controls ------------------------------------------------------------------------------


def healthy_steps(estimator: str, steps: int = 12, seed: int = 0) -> list[dict[str, float]]:
    """0/1 rewards, G = 8, success rates per prompt spread so that about half the groups are tied."""
    rng = np.random.default_rng(seed)
    rows = []
    tied = []
    for _ in range(steps):
        g = np.repeat(np.arange(64), 8)
        p = rng.choice([0.0, 1.0, 0.5, 0.3, 0.7, 0.02, 0.98], size=64)[g]
        r = (rng.uniform(size=512) < p).astype(np.float64)
        adv = {"grpo": lambda: grpo(r, g), "rloo": lambda: rloo(r, g), "dr_grpo": lambda: grpo(r, g, scale=False),
               "reinforce_pp": lambda: reinforce_pp(r),
               "reinforce_pp_baseline": lambda: reinforce_pp(r, g, baseline=True),
               "verl_grpo": lambda: grpo(r, g, eps=1e-6, singleton="raw")}[estimator]()
        rows.append(traced(r, g, adv.astype(np.float32)))
        m = r.reshape(64, 8)
        tied.append(float(np.mean(m.min(1) == m.max(1))))
    assert 0.3 < float(np.mean(tied)) < 0.7  # about half the groups tied
    return rows


@pytest.mark.parametrize("estimator", ["grpo", "verl_grpo", "rloo", "dr_grpo", "reinforce_pp",
                                       "reinforce_pp_baseline"])
def test_correct_pipelines_are_quiet(estimator: str) -> None:
    run = rows_run(healthy_steps(estimator))
    assert fired(run) == set(), estimator
    assert run.frame["adv_recompute_err"].max() <= 1  # type: ignore[operator]


def test_token_weighted_reinforce_pp_is_quiet() -> None:
    # verl/OpenRLHF whiten over tokens: each sample weighs by its length, so the per-sample values
    # match no per-sample preset, yet they are whitened and affine in the (group-centred) reward
    rng = np.random.default_rng(11)
    g = np.repeat(np.arange(32), 8)
    r = (rng.uniform(size=256) < rng.uniform(size=32)[g]).astype(np.float64)
    lengths = rng.integers(20, 400, 256).astype(np.float64)
    for y in (r, r - np.bincount(g, r)[g] / 8):  # REINFORCE++ and REINFORCE++-baseline (groups of 8)
        mu = np.sum(lengths * y) / lengths.sum()
        var = np.sum(lengths * (y - mu) ** 2) / (lengths.sum() - 1)
        adv = ((y - mu) / np.sqrt(var + 1e-8)).astype(np.float32)
        row = traced(r, g, adv)
        assert row["adv_recompute_err"] > 1 and row["adv_batch_normalized"] == 1.0
        assert row["adv_bound_excess"] <= 1  # against the batch bound (N-1)/sqrt(N), not the group's
        assert fired(rows_run([row])) == set()


def test_reinforce_pp_on_near_tied_groups_is_not_noise() -> None:
    # continuous rewards; one group tied up to 1e-9: REINFORCE++ gives it its batch offset, not noise
    rng = np.random.default_rng(4)
    g = np.repeat(np.arange(16), 4)
    r = rng.normal(0.0, 1.0, 64)
    r[:4] = 2.5 + np.array([0.0, 1e-9, 0.0, 2e-9])
    row = traced(r, g, reinforce_pp(r).astype(np.float32))
    assert row["adv_batch_normalized"] == 1.0 and row["noise_group_adv_max"] < 1e-6
    assert fired(rows_run([row])) == set()


def test_per_step_logs_are_not_evaluable() -> None:
    run = rows_run([{}] * 20, extra={"reward_std": [0.4] * 20, "adv_std": [1.0] * 20})
    for det in ("NOISE_AMPLIFICATION", "GROUPING_ERROR", "ADV_REWARD_DECORRELATION", "PRECISION_LOSS"):
        out = one(run, det)
        assert isinstance(out, NotEvaluable), det
        assert any(PER_SAMPLE in n for n in out.needs), det


def test_knobs_retune() -> None:
    r = np.array([1.0, 0.0, 0.0, 0.0])
    run = rows_run([traced(r, [0] * 4, loo_std_advantages(r))])
    assert one(run, "NOISE_AMPLIFICATION", blowup_above=1e7) is None
    assert isinstance(one(run, "NOISE_AMPLIFICATION", blowup_above=1e5), Finding)
    assert one(run, "NOISE_AMPLIFICATION", min_steps=2) is None


# --- real per-sample dumps -----------------------------------------------------------------------


def _dapo_sections(path: Path) -> list[tuple[list[str], list[float]]]:
    text = path.read_text()
    parts = re.split(r"^## === Rollout Step \d+ ===\s*$", text, flags=re.M)[1:]
    out = []
    for body in parts:
        prompts = re.findall(r"^\*\*Prompt:\*\* (.*)$", body, re.M)
        totals = [float(x) for x in re.findall(r"^\*\*Rewards:\*\*.*\btotal=(\S+?)\s*$", body, re.M)]
        if prompts and len(prompts) == len(totals):
            out.append((prompts, totals))
    return out


@pytest.mark.parametrize("run_id", ["trl-dapo-vlm-120531", "trl-dapo-vlm-181457"])
def test_real_dapo_vlm_dumps_stay_quiet(run_id: str) -> None:
    path = REAL / run_id / "rollout_results.md"
    if not path.is_file():
        pytest.skip(f"real dump not found at {path}")
    sections = _dapo_sections(path)
    assert len(sections) > 40
    rows = [step_checks(t, p) for p, t in sections]
    # totals take the levels -1, 0, 3, 4 (sums of integer components: 0 = -1 + 1 is a real level)
    levels = sorted({v for _, t in sections for v in t})
    assert set(levels) <= {-1.0, 0.0, 3.0, 4.0} and 0.0 in levels
    run = rows_run(rows)
    assert max(r["reward_imputed_zero_frac"] for r in rows) == 0.0
    assert max(r["singleton_group_frac"] for r in rows) == 0.0  # 2 generations per prompt
    assert fired(run) == set()
    assert isinstance(one(run, "NOISE_AMPLIFICATION"), NotEvaluable)  # the dump holds no advantages


def test_real_verl_svg_dump_stays_quiet() -> None:
    path = REAL / "verl-vlm-svg-grpo-rollout-dump" / "1.jsonl"
    if not path.is_file():
        pytest.skip(f"real dump not found at {path}")
    score = np.array([json.loads(line)["score"] for line in path.read_text().splitlines() if line.strip()])
    assert score.size == 1024
    row = step_checks(score, np.arange(1024) // 64)  # 16 prompts x 64 rollouts, blocks of 64
    assert row["reward_null_frac"] == 0.0 and row["singleton_group_frac"] == 0.0
    # the scores carry float64 digits (not float32 values): 2^-53 rounding against stds of 4.5-13
    assert row["reward_rounding_adv_err"] < 1e-14
    assert fired(rows_run([row])) == set()


@pytest.mark.parametrize("run_id", ["healthy", "dead", "gen2"])
def test_real_trl_grpo_completions_stay_quiet(run_id: str) -> None:
    """TRL 1.16.0's own per-sample output (tests/fixtures/trl_grpo_cpu: rewards and advantages)."""
    files = sorted((ROOT / "tests" / "fixtures" / "trl_grpo_cpu" / run_id / "completions").glob("*.parquet"))
    if not files:
        pytest.skip("TRL fixtures not found")
    rows = []
    for f in files:
        d = pl.read_parquet(f)
        funcs = [c for c in d.columns if c not in ("step", "prompt", "completion", "advantage")]
        reward = np.sum([d[c].to_numpy() for c in funcs], axis=0)
        rows.append(traced(reward, np.arange(d.height) // 4, d["advantage"].to_numpy()))
    run = rows_run(rows)
    assert fired(run) == set()
    assert all(r["adv_recompute_err"] <= 1 for r in rows)
    _, missing = run_detectors(run, only=MINE)
    assert missing == []  # every one of them could judge the traced run


def test_one_advantage_per_step_that_falls_as_the_reward_rises() -> None:
    rng = np.random.default_rng(5)
    reward = rng.uniform(0.0, 1.3, 40)
    inverted = list(0.6 - reward + rng.normal(0, 0.05, 40))  # every sample of a step: this one advantage
    base = {"reward_mean": list(reward), "adv_std": [0.0] * 40}
    f = one(make_run({**base, "adv_mean": inverted}), "ADV_REWARD_DECORRELATION")
    rho = scipy.stats.spearmanr(reward, inverted).statistic
    assert isinstance(f, Finding) and f.stage == "T" and f.onset_step == 1
    assert f.evidence["spearman_across_steps"] == pytest.approx(rho)
    # a running-mean baseline (r - b) rises with the reward: not judged wrong
    assert isinstance(one(make_run({**base, "adv_mean": list(reward - 0.6)}), "ADV_REWARD_DECORRELATION"),
                      NotEvaluable)
    # and a signal that is one non-zero advantage per step is not "dead from the start"
    assert one(make_run({**base, "adv_mean": inverted}), "DEAD_FROM_START") is None
    # advantages that are 0 on every step are dead, as before
    dead = one(make_run({**base, "adv_mean": [0.0] * 40}), "DEAD_FROM_START")
    assert isinstance(dead, Finding) and dead.stage == "R"


def test_real_log_whose_advantages_point_against_the_rewards() -> None:
    path = corpus("deepretrieval-grpo-0p8b-inverted-adv/train_log.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    train = [r for r in rows if r.get("phase") == "train"]
    assert len(train) == 50 and all(r["adv_std"] < 1e-6 for r in train)
    rho = scipy.stats.spearmanr([r["reward_mean"] for r in train], [r["adv_mean"] for r in train]).statistic
    run = load(path)
    findings, _ = run_detectors(run)
    ids = {f.id: f for f in findings}
    assert "DEAD_FROM_START" not in ids
    f = ids["ADV_REWARD_DECORRELATION"]
    assert f.evidence["spearman_across_steps"] == pytest.approx(rho) and f.evidence["steps"] == 50


def test_rllib_reward_is_nan_until_the_first_episode_ends() -> None:
    # RLlib's progress.csv: episode_reward_mean, a mean over the last episodes, is NaN until the first ends
    # (iterations 1 to 3 of Pong, whose episodes outlast an iteration), then -21.0: no episode yet, not an
    # unscored one
    path = corpus("h390-rllib-ppo-pong-model3-252px-four-conv-no-point-scored-for-127-iterations-then-climbs-to-"
                  "minus-17.9-by-4.8m-steps-healthy-slow-start/progress.csv")
    table = pl.read_csv(path, infer_schema_length=None)
    nan = table.filter(pl.col("episode_reward_mean").cast(pl.Float64).is_nan())
    assert nan["training_iteration"].to_list() == [1, 2, 3] and (nan["episodes_total"].fill_null(0) == 0).all()
    run = load(path)
    assert run.frame.filter(pl.col("step") <= 3)["reward_mean"].is_nan().all()
    assert one(run, "REWARD_MISSING") is None
