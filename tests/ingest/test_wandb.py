from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import wandb

from tests._real import real


def test_chart_export_with_bands(tmp_path: Path) -> None:
    p = tmp_path / "chart.csv"
    p.write_text(
        '"Step","run-a - train/reward","run-a - train/reward__MIN","run-a - train/reward__MAX"\n'
        '10,"0.5","0.4","0.6"\n20,"",,\n30,"0.75","0.7","0.8"\n'
    )
    assert detect(p) is wandb
    run = load(p)
    assert run.frame["step"].to_list() == [10, 30]
    assert run.frame["reward_mean"].to_list() == [0.5, 0.75]
    assert run.metadata["wandb_run"] == "run-a"


def test_chart_export_with_two_runs_reads_the_first(tmp_path: Path) -> None:
    p = tmp_path / "chart.csv"
    p.write_text('Step,a - reward,b - reward\n1,1,2\n2,3,4\n')
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [1.0, 3.0]
    assert "2 runs" in run.errors[0].message


def test_history_csv_jsonl_parquet(tmp_path: Path) -> None:
    rows = [{"_step": i, "_runtime": 1.5 * i, "train/reward": 0.1 * i, "train/global_step": 10 * i} for i in range(3)]
    rows[1]["eval/acc"] = 0.5
    c = tmp_path / "h.csv"
    c.write_text("train/reward,_step,eval/acc,train/global_step\n0,0,,0\n0.1,1,0.5,10\n0.2,2,,20\n")
    j = tmp_path / "h.jsonl"
    j.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    q = tmp_path / "h.parquet"
    pl.DataFrame(rows).write_parquet(q)
    for p in (c, j, q):
        assert detect(p) is wandb, p
        run = load(p)
        assert run.frame["step"].to_list() == [0, 10, 20]  # the trainer's step, not _step
        assert run.frame["reward_mean"].to_list() == pytest.approx([0.0, 0.1, 0.2])


def test_truncated_history_jsonl_line(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    p.write_text('{"_step": 0, "reward": 1}\n{"_step": 1, "rew\n')
    run = load(p)
    assert run.steps == 1 and run.errors[0].line == 2


def test_runs_table_is_an_error_naming_the_file(tmp_path: Path) -> None:
    p = tmp_path / "runs.csv"
    p.write_text("Name,State,Notes,User,Tags,Created,Runtime,reward\nrun-1,finished,,me,,2024-01-01,100,0.5\n")
    run = load(p)
    assert run.steps == 0
    assert "runs-table" in str(run.errors[0]) and str(p) in str(run.errors[0])


def test_real_mappo_history() -> None:
    run = load(real("marl-mappo-schiphol-wandb-history/wandb_export.csv"))
    assert run.format == "wandb" and not run.errors
    assert run.steps == 256 and run.frame["step"][0] == 0 and run.frame["step"][-1] == 255
    assert run.frame["reward_mean"][-1] == pytest.approx(-2.554863691329956)
    for g in ("ghas", "transporter", "orchestrator"):
        assert run.has(f"entropy/{g}", f"kl/{g}", f"clip_frac/{g}", f"vf_explained_var/{g}", f"reward/{g}")
    small = load(real("marl-mappo-schiphol-wandb-history/wandb_results.csv"))
    assert small.steps == 26 and small.frame["step"].to_list()[:3] == [0, 5, 10]


def test_real_wandb_summary() -> None:
    run = load(real("trl-grpo-code-wandb-summary/wandb-summary.json"))
    assert run.trainer == "trl" and run.metadata["snapshot"] is True
    assert run.steps == 1 and run.frame["step"][0] == 960
    assert run.frame["reward_mean"][0] == pytest.approx(0.48890626430511475)
    assert run.frame["zero_variance_group_frac"][0] == 0.0
