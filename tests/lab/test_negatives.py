"""Each hard negative is what it claims, checked on the recorded data with numpy (not through the
detectors, which the score card judges): it learns, and it shows the alarming shape it was built for
(about half of the groups tied, a logged loss of exactly 0, a KL spike that recovers, ...)."""

from __future__ import annotations

from functools import cache

import numpy as np
import polars as pl
import pytest
from advcore.errors import AdvcoreError
from advcore.lab import ESTIMATORS, LabResult
from advcore.lab.negatives import NEGATIVES, run_negative

from tests.lab._cache import cached


@cache
def neg(name: str, estimator: str, seed: int = 0) -> LabResult:
    return run_negative(name, estimator, seed)


def cases(name: str) -> list[tuple[str, str]]:
    return [(name, e) for e in NEGATIVES[name].estimators]


def col(res: LabResult, name: str) -> np.ndarray:
    return res.steps[name].to_numpy().astype(np.float64)


def tied_share(res: LabResult) -> np.ndarray:
    """Per step, the share of groups whose logged rewards are all equal (by hand, from the samples)."""
    g = res.samples.group_by("step", "group").agg((pl.col("reward").max() == pl.col("reward").min()).alias("tied"))
    per = g.group_by("step").agg(pl.col("tied").mean()).sort("step")
    return per["tied"].to_numpy().astype(np.float64)


def window(x: np.ndarray, late: bool) -> float:
    n = max(1, len(x) // 5)
    return float(np.nanmean(x[-n:] if late else x[:n]))


def test_at_least_ten_kinds_each_over_several_estimators() -> None:
    assert len(NEGATIVES) >= 10
    for n in NEGATIVES.values():
        assert set(n.estimators) <= set(ESTIMATORS) and len(n.estimators) >= 2, n.name


def test_truth_is_the_healthy_runs() -> None:
    res = neg("half_tied", "grpo")
    assert res.truth["fault"] is None and res.truth["stage"] is None and res.truth["onset_step"] is None
    assert res.truth["expected_detectors"] == [] and res.truth["negative"] == "half_tied"
    with pytest.raises(AdvcoreError, match="estimator"):
        run_negative("tiny_eps_exact", "ppo")
    with pytest.raises(AdvcoreError, match="unknown hard negative"):
        run_negative("nope")


@pytest.mark.parametrize(("name", "estimator"), [c for n in NEGATIVES for c in cases(n)])
def test_every_kind_learns(name: str, estimator: str) -> None:
    held = col(neg(name, estimator), "heldout_success")
    assert held[-1] >= held[0] + 0.1, (held[0], held[-1])


@pytest.mark.parametrize(("name", "estimator"), cases("half_tied"))
def test_half_tied_ties_about_half_of_the_groups(name: str, estimator: str) -> None:
    share = tied_share(neg(name, estimator))
    assert 0.35 <= share.mean() <= 0.65
    assert 0.25 <= window(share, False) and window(share, True) <= 0.75


@pytest.mark.parametrize(("name", "estimator"), cases("pairs_tied"))
def test_pairs_tie_half_to_three_quarters_more_as_success_rises(name: str, estimator: str) -> None:
    res = neg(name, estimator)
    share = tied_share(res)
    assert 0.5 <= share.mean() <= 0.8
    assert window(share, True) > window(share, False)
    assert window(col(res, "reward_mean"), True) > window(col(res, "reward_mean"), False) + 0.2


@pytest.mark.parametrize(("name", "estimator"), cases("zero_loss"))
def test_zero_loss_is_exactly_zero_while_the_gradient_flows(name: str, estimator: str) -> None:
    res = neg(name, estimator)
    assert (col(res, "loss") == 0.0).all()
    assert (col(res, "grad_norm") > 1e-3).all()
    # the reason, by hand: the advantages sum to 0 over each group (or, whitened, over the batch)
    s = res.samples.filter(pl.col("adv").is_not_nan())
    key = "step" if estimator == "reinforce_pp" else ["step", "group"]
    sums = s.group_by(key).agg(pl.col("adv").sum())["adv"].to_numpy()
    assert np.abs(sums).max() < 1e-9


@pytest.mark.parametrize(("name", "estimator"), cases("kl_spike_recovers"))
def test_kl_spike_recovers(name: str, estimator: str) -> None:
    res = neg(name, estimator)
    kl, held, lr = col(res, "kl"), col(res, "heldout_success"), col(res, "lr")
    at = NEGATIVES[name].at  # the one big step is step `at`; its effect shows from the next step's KL
    assert lr[at - 1] == pytest.approx(40 * lr[at - 2]) and lr[at] == lr[at - 2]
    peak = kl[at:at + 3].max()
    assert peak >= 1.8 * kl[at - 1]
    assert kl[at + 10:at + 15].mean() <= 0.8 * peak  # the KL is a batch estimate: a 5-step mean
    assert held[-1] > held[at - 1]


@pytest.mark.parametrize(("name", "estimator"), cases("entropy_sharpens"))
def test_entropy_falls_steadily_but_not_to_a_small_fraction(name: str, estimator: str) -> None:
    ent = col(neg(name, estimator), "entropy")
    ratio = window(ent, True) / window(ent, False)
    assert 0.25 <= ratio <= 0.6
    steps = np.arange(len(ent))
    assert np.corrcoef(steps, ent)[0, 1] < -0.8


@pytest.mark.parametrize(("name", "estimator"), cases("high_plateau"))
def test_high_plateau_holds_below_the_ceiling(name: str, estimator: str) -> None:
    res = neg(name, estimator)
    reward, held = col(res, "reward_mean"), col(res, "heldout_success")
    assert 0.75 <= window(reward, True) <= 0.95
    assert abs(held[-1] - held[-30]) < 0.05  # flat over the last 30 steps
    assert held[-30] >= held[0] + 0.3  # after a real climb
    if estimator != "dapo":
        assert window(tied_share(res), True) < 0.75


@pytest.mark.parametrize(("name", "estimator"), cases("slow_lr"))
def test_slow_lr_is_a_quarter_of_the_rate_and_still_rises(name: str, estimator: str) -> None:
    res = neg(name, estimator)
    assert col(res, "lr")[0] == pytest.approx(0.25 * ESTIMATORS[estimator].lr)
    reward = col(res, "reward_mean")
    rho = pl.Series(reward).rank().to_numpy()
    assert np.corrcoef(np.arange(len(reward)), rho)[0, 1] > 0.5


@pytest.mark.parametrize(("name", "estimator"), cases("lr_warmup"))
def test_warmup_learns_nothing_then_learns(name: str, estimator: str) -> None:
    res = neg(name, estimator)
    lr, held = col(res, "lr"), col(res, "heldout_success")
    at = NEGATIVES[name].at
    assert lr[: at - 1] == pytest.approx(0.01 * lr[at - 1])
    assert abs(held[at - 1] - held[0]) < 0.02
    assert held[-1] >= held[at - 1] + 0.2


@pytest.mark.parametrize(("name", "estimator"), cases("curriculum_reset"))
def test_curriculum_reward_drops_at_the_stage_change_then_rises(name: str, estimator: str) -> None:
    res = neg(name, estimator)
    reward, held = col(res, "reward_mean"), col(res, "heldout_success")
    at = NEGATIVES[name].at
    first, before, after = reward[:5].mean(), reward[at - 6: at - 1].mean(), reward[at - 1: at + 4].mean()
    # the first stage is learnt (not solved from the start), the next one starts lower
    assert before >= first + 0.15 and after <= before - 0.2
    # and the run goes on learning: held-out success rises through the stage change
    assert held[-1] >= held[at - 1] + 0.1 and held[-1] >= held[0] + 0.3


@pytest.mark.parametrize(("name", "estimator"), cases("clip_always_on"))
def test_the_gradient_is_clipped_on_every_step(name: str, estimator: str) -> None:
    res = neg(name, estimator)
    assert (col(res, "grad_norm") > 0.1).all()
    assert (col(res, "grad_norm_clipped") <= 0.1 + 1e-6).all()


@pytest.mark.parametrize(("name", "estimator"), cases("kl_penalty_holds"))
def test_kl_penalty_keeps_the_kl_below_the_unpenalised_runs(name: str, estimator: str) -> None:
    kl = col(neg(name, estimator), "kl")
    free = col(cached(estimator), "kl")  # the healthy run of the same seed: same tasks, no penalty
    assert window(kl, True) <= 0.8 * window(free, True)
    assert abs(window(kl, True) - float(np.mean(kl[-32:-16]))) < 0.15  # levelled off


@pytest.mark.parametrize(("name", "estimator"), cases("bf16_binary"))
def test_bf16_binary_rewards_are_exact(name: str, estimator: str) -> None:
    s = neg(name, estimator).samples
    assert set(np.unique(s["reward"].to_numpy())) <= {0.0, 1.0}
    assert (s["reward"] == s["reward_scored"]).all()


@pytest.mark.parametrize(("name", "estimator"), cases("tiny_eps_exact"))
def test_tiny_eps_on_exact_rewards_leaves_tied_groups_at_zero(name: str, estimator: str) -> None:
    s = neg(name, estimator).samples.filter(pl.col("adv").is_not_nan())
    g = s.group_by("step", "group").agg(tied=pl.col("reward").max() == pl.col("reward").min(),
                                        amax=pl.col("adv").abs().max())
    assert (g.filter(pl.col("tied"))["amax"] == 0.0).all()
    assert g["amax"].max() < 3.0  # (1 - 1/G) / std of a 1-of-G group: no amplified noise
