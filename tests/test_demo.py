"""The main job's demo: a lab fault end to end (the verdict against the lab's ground truth, the
trace against numpy on the recording, the mitigation comparison), and the older defaults: the
generated batch's numbers agree with numpy/scipy, and the shipped log is still scanned."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.stats
from advcore.cli import main
from advcore.demo import DEMO_RUN, LabDemo, generate_batch, run_demo, run_lab_demo


def test_demo_numbers_match_numpy() -> None:
    rewards, advantages = generate_batch(prompts=64, group_size=8, seed=3)
    result = run_demo(prompts=64, group_size=8, seed=3)
    groups = rewards.reshape(-1, 8).astype(np.float64)
    tied = (groups.max(axis=1) == groups.min(axis=1)).mean()
    assert result.zero_variance.exact_frac == pytest.approx(tied)
    within = groups.var(axis=1).mean()
    assert result.decomposition.within == pytest.approx(within, rel=1e-12)
    assert result.decomposition.total == pytest.approx(groups.var(), rel=1e-12)
    reward_row, adv_row, clipped_row = result.rows
    assert adv_row.spearman_reward == pytest.approx(
        scipy.stats.spearmanr(advantages, rewards).statistic, abs=1e-12
    )
    assert adv_row.std == pytest.approx(advantages.astype(np.float64).std(), rel=1e-9)
    clipped = np.clip(advantages, -2, 2)
    assert clipped_row.changed_frac == pytest.approx(np.mean(clipped != advantages))
    assert reward_row.n_unique == np.unique(rewards).size


def test_demo_command_prints_the_stage_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--stats", "--prompts", "32"]) == 0
    out = capsys.readouterr().out
    assert "stage statistics" in out
    assert "groups with zero reward variance" in out


@pytest.fixture(scope="module")
def lab_demo(tmp_path_factory: pytest.TempPathFactory) -> LabDemo:
    return run_lab_demo(tmp_path_factory.mktemp("lab") / "rec", seeds=2)


def test_lab_demo_verdict_names_the_true_stage(lab_demo: LabDemo) -> None:
    """The scan of the per-sample recording names the stage and onset that truth.json records."""
    truth = json.loads(lab_demo.files["truth"].read_text())
    assert truth["fault"] == "reward_scale" and truth["stage"] == "T" and truth["onset_step"] == 30
    assert lab_demo.report.verdict.stage == truth["stage"]
    onsets = [f.onset_step for f in lab_demo.report.findings if f.stage == "T"]
    assert onsets and min(abs(s - truth["onset_step"]) for s in onsets if s is not None) <= 5


def test_lab_demo_trace_matches_numpy(lab_demo: LabDemo) -> None:
    """The trace shown is the recording's: the reward and advantage spread at the steps shown,
    recomputed from samples.parquet with numpy; the advantages flatten, the rewards do not."""
    samples = pl.read_parquet(lab_demo.files["samples"])
    trace = lab_demo.report.run.trace
    for step in (lab_demo.before, lab_demo.after):
        part = samples.filter(pl.col("step") == step)
        for stage, col in (("reward", "reward"), ("adv", "adv")):
            shown = trace.filter((pl.col("step") == step) & (pl.col("stage") == stage) & (pl.col("slice") == "all")
                                 & (pl.col("statistic") == "std"))["value"].item()
            assert shown == pytest.approx(float(np.std(part[col].to_numpy())), rel=1e-9)
    late = samples.filter(pl.col("step") == lab_demo.after)
    assert np.std(late["adv"].to_numpy()) < 1e-3 < np.std(late["reward"].to_numpy())


def test_lab_demo_comparisons(lab_demo: LabDemo) -> None:
    right, wrong = lab_demo.comparison, lab_demo.wrong
    assert right.on_target and right.budget_matched and right.counts
    assert not wrong.on_target and not wrong.counts
    assert right.arms["control"].rollouts == right.arms["mitigated"].rollouts


def test_demo_command_runs_a_lab_fault(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rec"
    assert main(["demo", "--out", str(out)]) == 0
    printed = " ".join(capsys.readouterr().out.split())  # rich wraps lines at the terminal width
    truth = json.loads((out / "truth.json").read_text())
    assert f"signal lost at stage {truth['stage']}" in printed
    assert "right stage" in printed and "COUNTS" in printed and "does not count" in printed
    assert sorted(p.name for p in out.iterdir()) == ["metrics.jsonl", "samples.parquet", "truth.json"]


def test_demo_log_scans_the_shipped_log(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--log"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert str(DEMO_RUN) in printed and "DEGENERATE_GROUPS" in printed


def test_demo_errors_name_the_argument(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--fault", "nonfinite"]) == 2  # no mitigation targets a skipped step
    assert main(["demo", "--fault", "volcano"]) == 2
    assert "fault" in capsys.readouterr().err
