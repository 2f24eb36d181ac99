"""``advcore trace FILE`` on real TRL output (tests/fixtures/trl_grpo_cpu, TRL 1.16.0): the stage
table's numbers against numpy on the completions Parquet, the verdict, the whole trace written with
``--out``, and the errors for files that are not per-sample dumps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.stats

from advcore.cli import main
from advcore.demo import DEMO_RUN

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trl_grpo_cpu"


def _stat(trace: pl.DataFrame, step: int, stage: str, statistic: str) -> float:
    row = trace.filter((pl.col("step") == step) & (pl.col("stage") == stage) & (pl.col("slice") == "all")
                       & (pl.col("statistic") == statistic))
    assert row.height == 1, (stage, statistic)
    return float(row["value"][0])


def test_the_stage_table_of_a_trl_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "trace.parquet"
    assert main(["trace", str(FIXTURES / "healthy" / "completions"), "--step", "12", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "stage trace at step 12 (12 steps traced)" in text and "no finding" in text
    trace = pl.read_parquet(out)
    assert sorted(trace["step"].unique().to_list()) == list(range(1, 13))
    batch = pl.read_parquet(FIXTURES / "healthy" / "completions" / "completions_00012.parquet")
    reward = (batch["contains_target"] + batch["brevity"]).to_numpy()  # TRL's reward: the sum of the functions
    adv = batch["advantage"].to_numpy()
    groups = np.arange(reward.size) // 4  # num_generations = 4, consecutive blocks
    assert _stat(trace, 12, "reward", "mean") == pytest.approx(reward.mean(), abs=1e-12)
    assert _stat(trace, 12, "reward", "std") == pytest.approx(reward.std(), abs=1e-12)
    assert _stat(trace, 12, "adv", "std") == pytest.approx(adv.std(), abs=1e-12)
    assert _stat(trace, 12, "adv", "spearman_reward") == pytest.approx(scipy.stats.spearmanr(adv, reward)[0], abs=1e-12)
    tied = np.mean([np.ptp(reward[groups == g]) == 0 for g in range(groups.max() + 1)])
    assert _stat(trace, 12, "reward", "zero_variance_group_frac") == tied
    assert _stat(trace, 12, "adv", "changed_frac") == np.mean(adv != reward)


def test_a_dead_run_is_traced_to_the_reward(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "--format", "json", str(FIXTURES / "dead" / "completions")]) == 0
    doc = json.loads(capsys.readouterr().out)
    (run,) = doc["runs"]
    assert run["verdict"]["stage"] == "R"
    assert {"DEGENERATE_GROUPS", "DEAD_FROM_START"} <= {f["id"] for f in run["findings"]}


def test_a_per_step_log_is_not_a_dump(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", str(DEMO_RUN)]) == 1
    assert "not a per-sample dump" in capsys.readouterr().err


def test_a_step_outside_the_dump_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", str(FIXTURES / "healthy" / "completions"), "--step", "99"]) == 2
    assert "step 99 is not in the dump" in capsys.readouterr().err


def test_slice_columns_of_the_long_format_slice_the_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3)
    n = 64
    task = np.where(np.arange(n) < 32, "math", "code")
    reward = np.where(task == "math", rng.integers(0, 2, n), 0.5).astype(float)  # code: every group tied
    frame = pl.DataFrame({"step": [1] * n, "group": np.arange(n) // 8, "reward": reward, "slice_task": task})
    path = tmp_path / "samples.parquet"
    frame.write_parquet(path)
    out = tmp_path / "trace.parquet"
    assert main(["trace", str(path), "--out", str(out)]) == 0
    assert "reward [task=code]" in capsys.readouterr().out
    trace = pl.read_parquet(out)

    def stat(sl: str, statistic: str) -> float:
        row = trace.filter((pl.col("stage") == "reward") & (pl.col("slice") == sl) & (pl.col("statistic") == statistic))
        return float(row["value"][0])

    assert stat("task=code", "std") == 0.0 and stat("task=code", "zero_variance_group_frac") == 1.0
    assert stat("task=math", "mean") == pytest.approx(reward[:32].mean(), abs=1e-12)
    assert stat("all", "n") == n and stat("task=math", "n") == 32


def _identical_prompt_dump(tmp_path: Path) -> tuple[Path, list[dict[str, object]]]:
    """A verl rollout dump of one step whose prompt text is identical for every sample (a VLM: the
    image is not in the text): groups cannot be rebuilt from `input`."""
    rows: list[dict[str, object]] = [{"input": "describe the image", "output": f"o{i}", "score": float(i % 3),
                                      "acc": float(i % 2), "step": 1} for i in range(8)]
    path = tmp_path / "1.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path, rows


def test_a_dump_without_recoverable_groups_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the trace says how to give the groups
    path, _ = _identical_prompt_dump(tmp_path)
    assert main(["trace", str(path)]) == 0
    out = capsys.readouterr().out
    assert "no groups" in out and "--rollout-n" in out
    assert main(["trace", str(path), "--rollout-n", "4"]) == 0
    assert "no groups" not in capsys.readouterr().out
    assert main(["trace", "--format", "json", str(path), "--rollout-n", "4"]) == 0
    needs = {n["id"]: n["needs"] for n in json.loads(capsys.readouterr().out)["runs"][0]["not_evaluable"]}
    assert "no advantage column" in needs["NOISE_AMPLIFICATION"][0]  # not "use advcore trace"


def test_scan_of_a_dump_without_groups_says_how_to_form_them(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """From a newcomer trial: `advcore scan` (not only `trace`) says why a dump has no group statistics,
    and an N that does not divide a step's samples is said too, not dropped silently."""
    path, rows = _identical_prompt_dump(tmp_path)
    assert main(["scan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "no groups: every input of a step is identical" in out and "--rollout-n N" in out
    assert main(["scan", str(path), "--rollout-n", "3"]) == 0
    assert "rollout_n=3 does not divide the 8 samples of step 1" in capsys.readouterr().out
    assert main(["scan", "--format", "markdown", str(path)]) == 0  # the markdown report says the same
    assert "No groups: every input of a step is identical" in capsys.readouterr().out
    assert main(["scan", str(path), "--rollout-n", "4"]) == 0
    out = capsys.readouterr().out
    assert "no groups" not in out
    # one step is too short to judge: its stages at that step are shown instead of nothing
    mean = float(np.mean([float(str(r["score"])) for r in rows]))
    assert f"at the last logged step: reward mean {mean:.4g}  |  reward/acc 0.5" in out  # and its component
    # the reward's rank agreement with itself (1 by definition) is not shown as evidence
    assert main(["trace", str(path), "--rollout-n", "4"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "rho(reward)" in ln)
    assert line.split("│")[2].strip() == "-"
