"""advcore.reference: the float64 estimators against hand-computed values, an independent
loop-per-group numpy oracle, the trainers' own outputs recorded in the peer-oracle recipe
(verl 0.9.1, OpenRLHF 0.11.2, TRL 1.16 formula) and, when it is installed, verl itself."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advcore.errors import AdvcoreError
from advcore.reference import (
    ADV_METRICS,
    PRESETS,
    REWARD_METRICS,
    compare,
    dapo,
    dtype_rtol,
    grpo,
    reinforce_pp,
    rloo,
    step_checks,
)

# The recipe's batch: groups a=[1,0,0,0], b=[1,1,1,1.0078125], c=[5,5,5], d=[3] (a singleton).
R = np.array([1, 0, 0, 0, 1, 1, 1, 1.0078125, 5, 5, 5, 3], dtype=np.float64)
G = np.array(list("aaaabbbbcccd"))


# --- hand-computed values ------------------------------------------------------------------------


def test_grpo_by_hand() -> None:
    # a: mean 1/4, unbiased std sqrt(3/16 * 4/3) = 1/2; b: mean 1 + 2^-9, deviations -2^-9 (x3) and
    # 3 * 2^-9, unbiased std sqrt(12 * 2^-18 / 3) = 2^-8 exactly.
    a = grpo(R, G, eps=0.0)
    np.testing.assert_allclose(a[:8], [1.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, 1.5], rtol=0, atol=1e-12)
    assert a[8:11].tolist() == [0.0, 0.0, 0.0] and a[11] == 0.0  # tied group; TRL singleton -> 0
    trl = grpo(R, G)  # eps 1e-4
    assert trl[0] == pytest.approx(0.75 / (0.5 + 1e-4), rel=1e-14)
    assert trl[4] == pytest.approx(-(2.0**-9) / (2.0**-8 + 1e-4), rel=1e-14)  # -0.48752 (TRL shrinks b by 2.5%)
    verl = grpo(R, G, eps=1e-6, singleton="raw")
    assert verl[11] == pytest.approx(3 / (1 + 1e-6), rel=1e-15)  # mean 0, std 1: the raw score leaks
    assert math.isnan(grpo(R, G, eps=1e-9, singleton="nan")[11])
    dr = grpo(R, G, scale=False)  # Dr. GRPO
    np.testing.assert_allclose(dr[:8], [0.75, -0.25, -0.25, -0.25, -2.0**-9, -2.0**-9, -2.0**-9, 3 * 2.0**-9],
                               rtol=0, atol=1e-15)
    # biased std (ddof 0) of a: sqrt(3)/4
    assert grpo(R[:4], G[:4], eps=0.0, ddof=0)[0] == pytest.approx(0.75 / (math.sqrt(3) / 4), rel=1e-14)
    # TRL scale_rewards="batch": group mean, std of the whole batch (unbiased) + 1e-4
    sb = float(np.std(R, ddof=1))
    assert grpo(R, G, scale="batch")[0] == pytest.approx(0.75 / (sb + 1e-4), rel=1e-13)


def test_rloo_reinforce_pp_and_dapo_by_hand() -> None:
    lo = rloo(R, G)
    np.testing.assert_allclose(lo[:4], [1.0, -1 / 3, -1 / 3, -1 / 3], rtol=1e-14)
    assert lo[7] == pytest.approx(1.0078125 - 1.0, rel=1e-14)  # r - mean of the other three
    assert lo[8:11].tolist() == [0.0, 0.0, 0.0] and lo[11] == 0.0
    assert rloo(R, G, singleton="raw")[11] == 3.0
    # REINFORCE++ on [1,0,0,0]: mean 1/4, unbiased var 1/4: 0.75 / sqrt(0.25 + 1e-8)
    rp = reinforce_pp([1.0, 0.0, 0.0, 0.0])
    assert rp[0] == pytest.approx(0.75 / math.sqrt(0.25 + 1e-8), rel=1e-14)
    # REINFORCE++-baseline: group-centred ([0.5,-0.5] and [0,0]), then whitened over the batch
    rb = reinforce_pp([1.0, 0.0, 2.0, 2.0], [0, 0, 1, 1], baseline=True, eps=0.0)
    y = np.array([0.5, -0.5, 0.0, 0.0])
    np.testing.assert_allclose(rb, y / np.std(y, ddof=1), rtol=1e-14)
    da = dapo(R, G, eps=0.0)
    assert np.isnan(da[8:11]).all()  # the tied group is dropped
    np.testing.assert_allclose(da[:4], [1.5, -0.5, -0.5, -0.5], rtol=1e-14)


def test_nan_rewards_are_left_out_not_propagated() -> None:
    r = np.array([1.0, np.nan, 0.0, 0.0])
    a = grpo(r, [0, 0, 0, 0], eps=0.0)
    # the three scored: mean 1/3, unbiased std sqrt(1/3)
    np.testing.assert_allclose(a[[0, 2, 3]], np.array([2 / 3, -1 / 3, -1 / 3]) / math.sqrt(1 / 3), rtol=1e-14)
    assert math.isnan(a[1])
    assert step_checks([1.0, None, 0.0, 0.0], [0, 0, 0, 0])["reward_null_frac"] == 0.25


# --- an independent oracle: one group at a time, plain numpy --------------------------------------


def _loop_grpo(r: np.ndarray[Any, Any], g: np.ndarray[Any, Any], eps: float, scale: bool,
               singleton: str) -> np.ndarray[Any, Any]:
    out = np.full(r.shape, np.nan)
    for gid in set(g.tolist()):
        idx = [i for i in range(len(r)) if g[i] == gid and np.isfinite(r[i])]
        vals = r[idx]
        if len(vals) == 1:
            out[idx] = {"zero": 0.0, "raw": vals[0] / (1 + eps) if scale else vals[0], "nan": np.nan}[singleton]
            continue
        if not idx:
            continue
        d = vals - vals.mean()
        out[idx] = d / (vals.std(ddof=1) + eps) if scale else d
    return out


def _loop_rloo(r: np.ndarray[Any, Any], g: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    out = np.full(r.shape, np.nan)
    for i in range(len(r)):
        if not np.isfinite(r[i]):
            continue
        others = [r[j] for j in range(len(r)) if j != i and g[j] == g[i] and np.isfinite(r[j])]
        out[i] = r[i] - np.mean(others) if others else 0.0
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_against_a_loop_oracle_on_random_string_groups(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 300
    g = rng.choice([f"p{i}" for i in range(40)], size=n)
    r = rng.normal(3.0, 2.0, n).round(1)
    r[rng.choice(n, 10, replace=False)] = np.nan
    for eps, scale, singleton in [(1e-4, True, "zero"), (1e-6, True, "raw"), (1e-9, True, "nan"), (0.0, False, "raw")]:
        np.testing.assert_allclose(grpo(r, g, eps=eps, scale=scale, singleton=singleton),  # type: ignore[arg-type]
                                   _loop_grpo(r, g, eps, scale, singleton), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rloo(r, g), _loop_rloo(r, g), rtol=1e-12, atol=1e-12)
    fin = np.isfinite(r)
    rp = reinforce_pp(r)
    np.testing.assert_allclose(rp[fin], (r[fin] - r[fin].mean()) / np.sqrt(r[fin].var(ddof=1) + 1e-8), rtol=1e-12)


def test_integer_and_string_ids_agree() -> None:
    r = np.array([0.2, 0.9, 0.5, 0.1, 0.7])
    ints = np.array([7, 3, 7, 3, 3])
    np.testing.assert_array_equal(grpo(r, ints), grpo(r, np.array(["x", "y", "x", "y", "y"])))
    big = np.array([10**12, 5, 10**12, 5, 5])  # ids far above n take the sorting path
    np.testing.assert_array_equal(grpo(r, ints), grpo(r, big))


# --- the trainers' own outputs (recorded in shared/recipes/peer-advantage-oracles.md) ------------

# verl 0.9.1 compute_grpo_outcome_advantage on float32 tensors, per-sequence value (token 0).
VERL_F32 = [1.49999702, -0.499998987, -0.499998987, -0.499998987, -0.499872059, -0.499872059, -0.499872059,
            1.49961615, 0, 0, 0, 2.99999714]
# TRL 1.16 formula (scale_rewards="group") in float32 on groups a and b.
TRL_F32 = [1.49970007, -0.499900013, -0.499900013, -0.499900013, -0.487519532, -0.487519532, -0.487519532,
           1.46255851]
# OpenRLHF 0.11.2 group_norm (float32) on groups a and b.
ORLHF_F32 = [1.5, -0.5, -0.5, -0.5, -0.499999881, -0.499999881, -0.499999881, 1.49999964]
# verl 0.9.1 compute_rloo_outcome_advantage (loop): singleton = raw score 3.
VERL_RLOO_F32 = [1, -0.333333343, -0.333333343, -0.333333343, -0.00260412693, -0.00260412693, -0.00260412693,
                 0.0078125, 0, 0, 0, 3]


def test_compare_names_the_trainer_from_its_recorded_output() -> None:
    c = compare(np.array(VERL_F32, np.float32), R, G)
    assert (c.best, c.within_tolerance) == ("verl_grpo", True)
    assert c.max_abs_err < 5e-6
    c = compare(np.array(TRL_F32, np.float32), R[:8], G[:8])
    assert (c.best, c.within_tolerance) == ("trl_grpo", True)
    c = compare(np.array(ORLHF_F32, np.float32), R[:8], G[:8])
    assert (c.best, c.within_tolerance) == ("openrlhf_group_norm", True)
    c = compare(np.array(VERL_RLOO_F32, np.float32), R, G)
    assert (c.best, c.within_tolerance) == ("verl_rloo", True)
    # verl's loop GRPO in bfloat16 gives [0, 0, 0, 2] for group b: no estimator is within tolerance
    bf = np.array([1.5, -0.5, -0.5, -0.5, 0, 0, 0, 2.0])
    c = compare(bf, R[:8], G[:8], dtype="bfloat16")
    assert not c.within_tolerance and c.family == "scaled"
    # the closest in tolerance units is TRL's [-0.48752 x3, 1.46256]: 2 - 3 * 2^-9 / (2^-8 + 1e-4) off
    assert c.best == "trl_grpo"
    assert c.max_abs_err == pytest.approx(2 - 3 * 2.0**-9 / (2.0**-8 + 1e-4), rel=1e-12)
    # verl: 2^-9 / (2^-8 + 1e-6) off where it says -0.49987 and the log says 0, in units of 2^-8
    assert c.errors["verl_grpo"] == pytest.approx(2.0**-9 / (2.0**-8 + 1e-6) / 2.0**-8, rel=1e-9)


@pytest.mark.parametrize(("seed", "scale", "nan"), [(5, 1.0, False), (6, 0.01, False), (7, 100.0, True),
                                                   (8, 1.0, True)])
def test_compare_recognises_each_preset_from_its_own_output(seed: int, scale: float, nan: bool) -> None:
    from advcore.reference import _Groups

    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(32), 8)
    r = scale * ((rng.uniform(size=256) < rng.uniform(size=32)[g]) + rng.normal(0, 0.1, 256).round(2))
    if nan:
        r[rng.choice(256, 5, replace=False)] = np.nan
    for name in ("trl_grpo", "verl_grpo", "openrlhf_group_norm", "dr_grpo", "rloo", "trl_grpo_batch",
                 "reinforce_pp", "reinforce_pp_baseline", "openrlhf_reinforce_baseline"):
        adv = PRESETS[name].fn(_Groups(r, g)).astype(np.float32)  # the preset's own output, in float32
        adv[~np.isfinite(r)] = 0.0  # unscored samples get no advantage (TRL's nan_to_num)
        c = compare(adv, r, g)
        assert c.within_tolerance, (name, c)
        assert c.family == PRESETS[name].family, (name, c.best)
        # the screen only reorders: restricted to the preset itself, the answer is the same
        assert compare(adv, r, g, presets=[name]).within_tolerance


def test_dtype_tolerances() -> None:
    assert dtype_rtol("bf16") == 2.0**-8 and dtype_rtol("float16") == 2.0**-11
    assert dtype_rtol(np.float32) == 1e-5 and dtype_rtol(None) == 1e-5
    with pytest.raises(AdvcoreError, match="dtype"):
        dtype_rtol("int8")


def test_bad_arguments_name_themselves() -> None:
    with pytest.raises(AdvcoreError, match="group_ids"):
        grpo([1.0, 0.0], [0])
    with pytest.raises(AdvcoreError, match="eps"):
        grpo([1.0, 0.0], [0, 0], eps=-1)
    with pytest.raises(AdvcoreError, match="scale"):
        grpo([1.0, 0.0], [0, 0], scale="row")  # type: ignore[arg-type]
    with pytest.raises(AdvcoreError, match="singleton"):
        rloo([1.0, 0.0], [0, 0], singleton="drop")  # type: ignore[arg-type]
    with pytest.raises(AdvcoreError, match="rewards"):
        grpo([], [])
    with pytest.raises(AdvcoreError, match="group_ids"):
        grpo([1.0, 0.0], [0.5, 1.5])
    with pytest.raises(AdvcoreError, match="logged_adv"):
        compare([1.0], [1.0, 0.0], [0, 0])
    with pytest.raises(AdvcoreError, match="presets"):
        compare([1.0, 0.0], [1.0, 0.0], [0, 0], presets=["ppo"])
    with pytest.raises(AdvcoreError, match="adv"):
        step_checks([1.0, 0.0], [0, 0], [1.0])
    with pytest.raises(AdvcoreError, match="group_ids"):
        reinforce_pp([1.0, 0.0], baseline=True)


# --- step_checks ---------------------------------------------------------------------------------


def test_step_checks_names_and_hand_values() -> None:
    out = step_checks([1.0, 0.0, 1.0, 1.0, 0.0], [0, 0, 1, 1, 2])
    assert set(out) == set(REWARD_METRICS)
    assert out["singleton_group_frac"] == 1 / 3  # group 2
    assert out["uneven_group_frac"] == 1 / 5  # the one sample whose group is not of the common size 2
    assert out["reward_null_frac"] == 0.0 and out["reward_low_precision"] == 0.0
    adv = grpo([1.0, 0.0, 1.0, 1.0, 0.0], [0, 0, 1, 1, 2]).astype(np.float32)
    out = step_checks([1.0, 0.0, 1.0, 1.0, 0.0], [0, 0, 1, 1, 2], adv)
    assert set(out) == set(REWARD_METRICS) | set(ADV_METRICS)
    assert out["adv_recompute_err"] <= 1 and out["tied_group_adv_nonzero_frac"] == 0.0


def test_precision_metrics_by_hand() -> None:
    r = [1.0, 1.0, 1.0, 1.0078125]
    out = step_checks(r, [0] * 4, [0.0, 0.0, 0.0, 2.0], reward_dtype="bfloat16", adv_dtype="bfloat16")
    assert out["reward_low_precision"] == 1.0
    # 2^-8 * (1.0078125 + 1.001953125) / 2^-8
    assert out["reward_rounding_adv_err"] == pytest.approx(1.0078125 + 1.001953125, rel=1e-12)
    assert out["adv_bound_excess"] == pytest.approx(2 / 1.5, rel=1e-12)  # (G-1)/sqrt(G) = 1.5 for G = 4
    same_f32 = step_checks(r, [0] * 4, reward_dtype="float32")
    assert same_f32["reward_low_precision"] == 0.0
    assert same_f32["reward_rounding_adv_err"] == pytest.approx(2.0**-24 * 2.009765625 / 2.0**-8, rel=1e-12)
    # 8 distinct values that are not multiples of 1/64, all on the bfloat16 grid -> rounded through bf16
    grid = np.array([1 + k / 128 for k in (1, 3, 5, 7, 9, 11, 13, 15)])
    assert step_checks(grid, [0] * 8)["reward_low_precision"] == 1.0
    assert step_checks(grid + 1e-6, [0] * 8)["reward_low_precision"] == 0.0
    # one-pass variance: mean 1000.15, population variance 0.0125 -> 2^-24 * (1 + 1000.15^2 / 0.0125)
    o = step_checks([1000.0, 1000.1, 1000.2, 1000.3], [0] * 4)
    assert o["reward_onepass_relerr"] == pytest.approx(2.0**-24 * (1 + 1000.15**2 / 0.0125), rel=1e-6)


def test_imputed_zero_rule() -> None:
    # failures at -1, successes at +1, missing rewards filled with 0: 2 of 8
    assert step_checks([1, -1, 0, -1, 1, 0, -1, -1], [0, 0, 0, 0, 1, 1, 1, 1])["reward_imputed_zero_frac"] == 0.25
    assert step_checks([1, 0, 0, 1, 1, 0, 0, 0], [0] * 8)["reward_imputed_zero_frac"] == 0.0  # healthy 0/1
    assert step_checks([-1, 0, 3, 4], [0] * 4)["reward_imputed_zero_frac"] == 0.0  # 0 = -1 + 1: on the lattice
    # TRL fixture levels: contains_target (0/1) + brevity (0/0.25); a step may show only 0, 0.25, 1.25,
    # whose lattice (step 1 from 0.25) misses 0, but 0 is the floor: a missing reward there reorders nothing
    assert step_checks([0.0, 0.25, 1.25, 0.25], [0] * 4)["reward_imputed_zero_frac"] == 0.0
    assert step_checks(np.linspace(-1, 1, 50).tolist() + [0.0], [0] * 51)["reward_imputed_zero_frac"] == 0.0


def test_verl_itself_when_installed() -> None:
    """verl 0.9.1's own functions (optional: skipped without verl and torch)."""
    torch = pytest.importorskip("torch")
    core = pytest.importorskip("verl.trainer.ppo.core_algos")
    t = 5
    scores = torch.zeros(len(R), t, dtype=torch.float32)
    scores[:, -1] = torch.tensor(R, dtype=torch.float32)
    mask = torch.ones(len(R), t, dtype=torch.float32)
    idx = np.array(G, dtype=object)
    adv, _ = core.compute_grpo_outcome_advantage(token_level_rewards=scores, response_mask=mask, index=idx)
    np.testing.assert_allclose(adv[:, 0].numpy(), grpo(R, G, eps=1e-6, singleton="raw"), rtol=1e-5, atol=1e-6)
    adv, _ = core.compute_rloo_outcome_advantage(token_level_rewards=scores, response_mask=mask, index=idx)
    np.testing.assert_allclose(adv[:, 0].numpy(), rloo(R, G, singleton="raw"), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["length1", "constant", "all_nan", "huge_offset"])
def test_degenerate_inputs(case: str) -> None:
    r = {"length1": np.array([2.0]), "constant": np.full(6, 0.3), "all_nan": np.full(4, np.nan),
         "huge_offset": 1e9 + np.array([0.0, 1.0, 0.0, 1.0, 2.0, 2.0])}[case]
    g = np.arange(r.size) // 2 if r.size > 1 else np.zeros(1, np.int64)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no stray numpy warnings
        a = grpo(r, g, eps=0.0)
        lo = rloo(r, g)
        out = step_checks(r, g, np.zeros(r.size))
    if case == "length1":
        assert a.tolist() == [0.0] and lo.tolist() == [0.0] and out["singleton_group_frac"] == 1.0
    elif case == "constant":
        assert a.tolist() == [0.0] * 6 and lo.tolist() == [0.0] * 6  # tied: exactly 0, never 0/0
        assert out["adv_recompute_err"] <= 1 and out["tied_group_adv_nonzero_frac"] == 0.0
    elif case == "all_nan":
        assert np.isnan(a).all() and out["reward_null_frac"] == 1.0 and math.isnan(out["adv_recompute_err"])
    else:
        # 1e9 + {0, 1}: deviations +-0.5 over an unbiased std of sqrt(1/2), whatever the offset
        np.testing.assert_allclose(a, [-math.sqrt(0.5), math.sqrt(0.5)] * 2 + [0.0, 0.0], rtol=1e-12)
        np.testing.assert_allclose(lo, [-1.0, 1.0, -1.0, 1.0, 0.0, 0.0], rtol=1e-12)
        assert out["reward_onepass_relerr"] == pytest.approx(2.0**-24 * (1 + (1e9 + 0.5) ** 2 / 0.25), rel=1e-9)


# --- TRL 1.16.0's own advantages (tests/fixtures/trl_grpo_cpu, log_completions parquets) ---------

TRL_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trl_grpo_cpu"


@pytest.mark.parametrize("run", ["healthy", "dead", "gen2"])
def test_trl_written_advantages_match_the_trl_preset(run: str) -> None:
    import polars as pl

    files = sorted((TRL_FIXTURES / run / "completions").glob("completions_*.parquet"))
    if not files:
        pytest.skip(f"TRL fixtures not found under {TRL_FIXTURES}")
    for f in files:
        d = pl.read_parquet(f)
        funcs = [c for c in d.columns if c not in ("step", "prompt", "completion", "advantage")]
        reward = np.sum([d[c].to_numpy() for c in funcs], axis=0)  # default reward_weights: all 1
        groups = np.arange(d.height) // 4  # num_generations=4; TRL groups positionally
        c = compare(d["advantage"].to_numpy(), reward, groups)
        assert (c.best, c.within_tolerance) == ("trl_grpo", True), (f.name, c)
        assert c.max_abs_err < 1e-6  # TRL computes in float32
        if run != "dead":  # verl's eps 1e-6 is told apart (groups of std ~0.5: 2e-4 relative)
            assert not compare(d["advantage"].to_numpy(), reward, groups, presets=["verl_grpo"]).within_tolerance
        out = step_checks(reward, groups, d["advantage"].to_numpy())
        assert out["tied_group_adv_nonzero_frac"] == 0.0 and out["adv_group_mean_max"] < 1e-6
        assert not out["adv_bound_excess"] > 1.0  # NaN for the dead run: no group has spread
