"""The trace issue's localization cases that run through per-sample input and the verdict.

Each case is built per sample, written in the canonical long format, read back by the same ingest
as any dump (reduced per step by the statistics core), and judged by the detectors and
:func:`advcore.diagnose.diagnose`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from advcore.detectors import run_detectors
from advcore.diagnose import diagnose
from advcore.ingest import load


def test_uniform_groups_with_a_wide_batch_spread_are_degenerate_not_signal(tmp_path: Path) -> None:
    # 12 steps x 32 groups x G=8: every group's 8 rewards are equal, but the group values differ
    # across prompts with a batch std of about 5 (a "correctness" component scored per prompt)
    rng = np.random.default_rng(7)
    steps, groups, g = 12, 32, 8
    group_value = rng.normal(0.0, 5.0, size=(steps, groups))
    frame = pl.DataFrame({
        "step": np.repeat(np.arange(1, steps + 1), groups * g),
        "group": np.tile(np.repeat(np.arange(groups), g), steps),
        "reward": np.repeat(group_value.ravel(), g),
    })
    path = tmp_path / "samples.parquet"
    frame.write_parquet(path)
    run = load(path)
    batch_std = frame.group_by("step").agg(pl.col("reward").std(ddof=0)).sort("step")["reward"].to_numpy()
    assert 3.5 < batch_std.mean() < 6.5  # the batch looks full of contrast...
    np.testing.assert_allclose(run.frame["reward_std"].to_numpy(), batch_std, rtol=1e-12)
    assert run.frame["zero_variance_group_frac"].to_list() == [1.0] * steps  # ...but no group has any
    findings, _ = run_detectors(run)
    ids = {f.id for f in findings}
    assert "DEGENERATE_GROUPS" in ids
    verdict = diagnose(run, findings, [])
    assert verdict.stage == "R"
    assert verdict.onset == 1


def test_the_verdict_tells_a_pipeline_loss_from_a_reward_without_contrast() -> None:
    from tests.detectors._fixtures import make_run
    from tests.detectors.test_seed_detectors import collapse_adv

    adv = collapse_adv()  # adv_std ~1 for 60 steps, then 0.01
    # rewards keep contrast: 30 % of groups tied throughout -> the pipeline removed the signal
    kept = make_run({"adv_std": adv, "zero_variance_group_frac": [0.3] * 100, "reward_std": [0.4] * 100})
    v = diagnose(kept, *run_detectors(kept))
    assert v.stage == "T"
    assert "signal was lost after the reward, at stage T" in v.summary
    r_level = next(s for s in v.signal if s.stage == "R")
    assert r_level.metric == "1 - zero_variance_group_frac"
    assert abs(r_level.late - 0.7) < 1e-12 and abs(r_level.early - 0.7) < 1e-12
    t_level = next(s for s in v.signal if s.stage == "T")
    assert t_level.late == 0.01  # the last 20 points are all 0.01
    # the same advantages with no reward metric at all: the reward is not ruled out
    blind = make_run({"adv_std": adv})
    v = diagnose(blind, *run_detectors(blind))
    assert v.stage == "T" and "not ruled out" in v.summary


def test_a_reward_that_still_varies_but_measures_truncation_is_said_to_carry_the_wrong_signal() -> None:
    from tests.detectors._fixtures import make_run

    n = 60
    run = make_run({
        "truncated_frac": [0.2] * 20 + [1.0] * 40,          # every completion cut from step 21
        "zero_variance_group_frac": [0.1] * n,              # groups keep their contrast throughout
        "reward_std": [0.5] * n,
        "reward_mean": [0.4 + 0.1 * (i % 3) for i in range(n)],
    })
    findings, missing = run_detectors(run)
    assert [f.id for f in findings] == ["TRUNCATION_REWARD"]
    v = diagnose(run, findings, missing)
    assert v.stage == "R" and "the contrast is there" in v.summary
    tied = make_run({"zero_variance_group_frac": [0.9] * 30, "reward_std": [0.0] * 30, "reward_mean": [0.5] * 30})
    v = diagnose(tied, *run_detectors(tied))
    assert v.stage == "R" and "the contrast is there" not in v.summary  # lost contrast is said as such
