"""Each fault produces its regime, checked on the mechanism itself with numpy (not through the
detectors, which the score card judges): for every fault, a quantity computed here from the
recorded per-sample or per-step data is healthy before the onset (step 30) and broken after it."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from advcore.lab import FAULTS

from tests.lab._cache import cached

ONSET = 30


def per_step(samples: pl.DataFrame, fn: object) -> dict[int, float]:
    """``fn(part)`` for each step's samples."""
    return {int(p["step"][0]): fn(p) for p in samples.partition_by("step", maintain_order=True)}  # type: ignore[operator]


def before_after(values: dict[int, float], settle: int = 0) -> tuple[np.ndarray, np.ndarray]:
    pre = np.array([v for k, v in values.items() if k < ONSET])
    post = np.array([v for k, v in values.items() if k >= ONSET + settle])
    return pre, post


def tied_share(part: pl.DataFrame) -> float:
    g = part.group_by("group").agg((pl.col("reward").max() == pl.col("reward").min()).alias("tied"))
    return float(g["tied"].mean())  # type: ignore[arg-type]


def group_std_adv(r: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    """GRPO by hand: (r - group mean) / (group std ddof 1 + eps); tied groups 0."""
    out = np.zeros_like(r)
    for k in np.unique(g):
        m = g == k
        s = r[m].std(ddof=1)
        out[m] = 0.0 if r[m].max() == r[m].min() else (r[m] - r[m].mean()) / (s + eps)
    return out


@pytest.mark.parametrize("estimator", FAULTS["reward_scale"].estimators)
def test_reward_scale_flattens_the_advantages_not_the_rewards(estimator: str) -> None:
    res = cached(estimator, "reward_scale")
    adv_std = per_step(res.samples, lambda p: float(np.nanstd(p["adv"].to_numpy())))
    rew_std = per_step(res.samples, lambda p: float(p["reward"].std()))
    pre, post = before_after(adv_std)
    assert pre.mean() > 0.3 and post.max() < 0.01
    r_pre, r_post = before_after(rew_std)
    assert r_post.mean() > 0.5 * r_pre.mean()  # the logged rewards keep their contrast
    if estimator == "grpo":  # the flattening is the TRL eps of the std division, by hand
        last = res.samples.filter(pl.col("step") == 80)
        r, g = last["reward"].to_numpy(), last["group"].to_numpy()
        np.testing.assert_allclose(last["adv"].to_numpy(), group_std_adv(r * 1e-8, g, 1e-4), rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("estimator", FAULTS["saturation"].estimators)
def test_saturation_pins_the_reward_at_one(estimator: str) -> None:
    res = cached(estimator, "saturation")
    if estimator == "dapo":  # DAPO trains on groups with spread only: it keeps drawing batches for them
        gen = dict(zip(res.steps["step"].to_list(), res.steps["gen_batches"].to_list(), strict=True))
        pre, post = before_after(gen, settle=5)
        assert pre.mean() < 2.5 and post.mean() > 2.9
        return
    mean = per_step(res.samples, lambda p: float(p["reward"].mean()))
    pre, post = before_after(mean, settle=5)
    assert pre.mean() < 0.7 and post.mean() > 0.97
    _, tied = before_after(per_step(res.samples, tied_share), settle=5)
    assert tied.mean() > 0.8


@pytest.mark.parametrize("estimator", FAULTS["floor"].estimators)
def test_floor_keeps_the_reward_near_zero(estimator: str) -> None:
    steps = cached(estimator, "floor").steps  # the generated batch (DAPO logs its kept groups only)
    succ = dict(zip(steps["step"].to_list(), steps["reward_mean"].to_list(), strict=True))
    pre, post = before_after(succ)
    assert pre.mean() > 0.3
    if estimator != "dapo":
        assert post.max() < 0.03 and post.mean() < 0.005


@pytest.mark.parametrize("estimator", FAULTS["small_g"].estimators)
def test_small_g_gives_pairs_that_tie(estimator: str) -> None:
    s = cached(estimator, "small_g").samples
    sizes = per_step(s, lambda p: float(np.bincount(p["group"].to_numpy()).max()))
    pre, post = before_after(sizes)
    assert set(pre) == {8.0} and set(post) == {2.0}
    _, tied = before_after(per_step(s, tied_share))
    pre_tied, _ = before_after(per_step(s, tied_share))
    assert tied.mean() > 0.8 and pre_tied.mean() < 0.6


@pytest.mark.parametrize("estimator", FAULTS["eps_division"].estimators)
def test_eps_division_amplifies_the_jitter_of_near_tied_groups(estimator: str) -> None:
    s = cached(estimator, "eps_division").samples

    def noise_adv(p: pl.DataFrame) -> float:
        r, a, g = p["reward"].to_numpy(), p["adv"].to_numpy(), p["group"].to_numpy()
        worst = 0.0
        for k in np.unique(g):
            m = g == k
            spread = r[m].max() - r[m].min()
            if 0 < spread <= 1e-5 * np.abs(r[m]).max():  # rewards of 1 differing by the jitter only
                worst = max(worst, float(np.nanmax(np.abs(a[m]))))
        return worst

    pre, post = before_after(per_step(s, noise_adv))
    assert pre.max() < 0.05 and post.max() > 0.5
    last = s.filter(pl.col("step") == 80)
    r, g, a = last["reward"].to_numpy(), last["group"].to_numpy(), last["adv"].to_numpy()
    keep = np.isfinite(a)
    np.testing.assert_allclose(a[keep], group_std_adv(r[keep], g[keep], 1e-9)[keep] if estimator == "grpo"
                               else a[keep], rtol=1e-6)


@pytest.mark.parametrize("estimator", ["grpo", "dapo"])
def test_bf16_rewards_round_the_rewards_and_move_the_advantages(estimator: str) -> None:
    """After the onset the logged rewards are the scored ones rounded to bfloat16 (8 significant
    bits), and the std-normalised advantages differ from the float64 estimator on the scored rewards
    (by up to ~1 in near-tied groups of rewards 1 + 0.05 x quality)."""
    s = cached(estimator, "bf16_rewards").samples
    scored, logged = s["reward_scored"].to_numpy(), s["reward"].to_numpy()
    post = s["step"].to_numpy() >= ONSET
    m, e = np.frexp(scored.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(logged[post], np.ldexp(np.round(m * 256) / 256, e)[post])
    np.testing.assert_array_equal(logged[~post], scored[~post])

    def err(p: pl.DataFrame) -> float:
        r, g, a = p["reward_scored"].to_numpy(), p["group"].to_numpy(), p["adv"].to_numpy()
        ref = group_std_adv(r, g, 1e-4 if estimator == "grpo" else 1e-6)
        return float(np.max(np.abs(a - ref)))

    pre, after = before_after(per_step(s, err))
    assert pre.max() < 1e-9 and after.max() > 0.3


@pytest.mark.parametrize("estimator", FAULTS["group_mixup"].estimators)
def test_group_mixup_centres_on_the_wrong_groups(estimator: str) -> None:
    s = cached(estimator, "group_mixup").samples

    def max_group_mean(p: pl.DataFrame) -> float:
        means = p.group_by("group").agg(pl.col("adv").mean())["adv"].to_numpy()
        return float(np.nanmax(np.abs(means)))

    pre, post = before_after(per_step(s, max_group_mean))
    assert pre.max() < 1e-9 and post.min() > 0.05


def test_baseline_broken_explains_nothing() -> None:
    s = cached("ppo", "baseline_broken").samples

    def ev(p: pl.DataFrame) -> float:
        ret, val = p["return"].to_numpy(), p["value"].to_numpy()
        return 1.0 - float(np.var(ret - val)) / float(np.var(ret))

    values = per_step(s, ev)
    healthy = np.array([v for k, v in values.items() if 10 <= k < ONSET])
    _, post = before_after(values, settle=5)
    assert np.median(healthy) > 0.1 and np.median(post) < 0.05
    # a constant input: one value for every state of a step
    pre_sd, post_sd = before_after(per_step(s, lambda p: float(p["value"].std())))
    assert pre_sd[5:].min() > 0.01 and post_sd.max() < 1e-12


@pytest.mark.parametrize("fault", ["tight_grad_clip", "lr_too_small"])
@pytest.mark.parametrize("estimator", ["grpo", "ppo"])
def test_update_faults_stop_the_policy_with_the_signal_intact(fault: str, estimator: str) -> None:
    st = cached(estimator, fault).steps
    pre, post = st.filter(pl.col("step").is_between(10, ONSET - 1)), st.filter(pl.col("step") >= ONSET)
    assert post["step_norm"].max() < 1e-5 < pre["step_norm"].min()  # type: ignore[operator]
    assert post["kl_step"].max() < 1e-10  # type: ignore[operator]
    assert post["adv_std"].min() > 0.5  # type: ignore[operator]
    assert post["grad_norm"].min() > 0.01  # type: ignore[operator]  # the gradient is there; it is not applied
    held = post["heldout_success"].to_numpy()
    assert abs(held[-1] - held[0]) < 1e-4


@pytest.mark.parametrize("estimator", FAULTS["kl_pin"].estimators)
def test_kl_pin_holds_the_policy_at_its_reference(estimator: str) -> None:
    pinned, healthy = cached(estimator, "kl_pin").steps, cached(estimator).steps
    post = pinned.filter(pl.col("step") >= ONSET + 5)
    late_healthy_kl = float(healthy["kl"].tail(10).mean())  # type: ignore[arg-type]
    assert float(post["kl"].mean()) < 0.05 and float(post["kl"].max()) < 0.1 * late_healthy_kl  # type: ignore[arg-type]
    gain_pinned = pinned["heldout_success"][-1] - pinned["heldout_success"][ONSET - 1]
    gain_healthy = healthy["heldout_success"][-1] - healthy["heldout_success"][ONSET - 1]
    assert gain_pinned < 0.05 < gain_healthy


@pytest.mark.parametrize("estimator", FAULTS["entropy_collapse"].estimators)
def test_entropy_collapse(estimator: str) -> None:
    ent = cached(estimator, "entropy_collapse").steps["entropy"].to_numpy()
    healthy = cached(estimator).steps["entropy"].to_numpy()
    assert ent[-16:].mean() < 0.25 * ent[:16].mean()
    assert healthy[-16:].mean() > 2 * ent[-16:].mean()


@pytest.mark.parametrize("estimator", FAULTS["nonfinite"].estimators)
def test_nonfinite_gradient_at_the_onset_only(estimator: str) -> None:
    st = cached(estimator, "nonfinite").steps
    g = st["grad_norm"].to_numpy()
    assert np.isinf(g[ONSET - 1]) and np.isfinite(np.delete(g, ONSET - 1)).all()
    assert np.isfinite(st["heldout_success"].to_numpy()).all()  # the step was skipped, training went on


def test_nonfinite_reward_variant() -> None:
    res = cached("grpo", "nonfinite", knobs=(("inject", "reward"),))
    r = res.samples.filter(pl.col("step") == ONSET)["reward"].to_numpy()
    assert np.isnan(r[0]) and np.isfinite(r[1:]).all()
    assert np.isnan(res.steps["reward_mean"][ONSET - 1])
    assert np.isfinite(np.delete(res.steps["reward_mean"].to_numpy(), ONSET - 1)).all()
