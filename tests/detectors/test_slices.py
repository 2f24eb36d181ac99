"""Per-slice detection (issue 16): which slices are judged, how a thin slice is pooled, and what a
per-slice finding says. Per-sample dumps are generated here with numpy and read back through the
scan's code path; the pooled moments are checked against numpy on the pooled samples."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from advcore.detectors import Finding, run_detectors
from advcore.detectors._slices import MIN_GROUPS, slice_views
from advcore.ingest import load
from advcore.scan import ScanOptions, judge
from tests._real import real
from tests.detectors._fixtures import make_run, one

G = 8


def _dump(path: Path, steps: int, groups: dict[str, int], p: dict[str, list[float]], seed: int = 0,
          outcome: bool = False) -> Path:
    """A canonical per-sample dump: ``groups[task]`` groups of G per step, success probability
    ``p[task][step]``; ``adv`` as GRPO without the std (r - group mean)."""
    rng = np.random.default_rng(seed)
    rows = []
    for step in range(steps):
        g = 0
        for task, n in groups.items():
            for _ in range(n):
                r = (rng.random(G) < p[task][step]).astype(float)
                for v in r:
                    row = (step, g, float(v), float(v - r.mean()), task)
                    rows.append((*row, "ok" if v else "fail") if outcome else row)
                g += 1
    cols = ["step", "group", "reward", "adv", "slice_task"] + (["slice_outcome"] if outcome else [])
    pl.DataFrame(rows, schema=cols, orient="row").write_parquet(path)
    return path


def test_a_thin_slice_is_pooled_with_exact_moments(tmp_path: Path) -> None:
    steps = 30
    data = _dump(tmp_path / "d.parquet", steps, {"wide": 6, "thin": 2}, {"wide": [0.5] * steps, "thin": [0.5] * steps})
    run = load(data)
    views, unjudged = slice_views(run)
    by = {v.name: v for v in views}
    assert unjudged == []
    assert by["task=wide"].pooled == 1 and by["task=thin"].pooled == math.ceil(MIN_GROUPS / 2)
    thin = by["task=thin"].run.frame
    assert thin.height == steps // 2
    # oracle: the rewards of the thin task's samples over each pair of steps, with numpy
    samples = pl.read_parquet(data).filter(pl.col("slice_task") == "thin")
    for i, row in enumerate(thin.iter_rows(named=True)):
        r = samples.filter(pl.col("step").is_in([2 * i, 2 * i + 1]))["reward"].to_numpy()
        assert row["step"] == 2 * i
        assert row["reward_mean"] == pytest.approx(r.mean(), abs=1e-12)
        assert row["reward_std"] == pytest.approx(r.std(), abs=1e-9)


def test_too_few_groups_is_not_evaluable_and_says_why(tmp_path: Path) -> None:
    steps = 30
    # a task drawn once every 6 steps: fewer than MIN_GROUPS / MAX_POOL groups per step on average
    p = {"wide": [0.5] * steps, "rare": [0.5] * steps}
    data = _dump(tmp_path / "d.parquet", steps, {"wide": 8, "rare": 1}, p)
    frame = pl.read_parquet(data).filter((pl.col("slice_task") != "rare") | (pl.col("step") % 6 == 0))
    frame.write_parquet(data)
    report = judge(load(data), ScanOptions())
    [u] = [u for u in report.verdict.slices_not_evaluable if u.name == "task=rare"]
    assert "sampled on 5 of 30 steps" in u.reason
    assert not [f for f in report.findings if f.slice == "task=rare"]


def test_a_label_that_splits_groups_is_not_judged(tmp_path: Path) -> None:
    """An outcome label sorts samples by reward: its slices are tied by construction."""
    steps = 30
    data = _dump(tmp_path / "d.parquet", steps, {"a": 4, "b": 4}, {"a": [0.5] * steps, "b": [0.5] * steps},
                 outcome=True)
    report = judge(load(data), ScanOptions())
    assert any(u.name == "outcome=*" for u in report.verdict.slices_not_evaluable)
    assert not [f for f in report.findings if f.slice and f.slice.startswith("outcome=")]
    assert report.verdict.status == "quiet"


def test_a_task_that_saturates_is_named_while_the_run_stays_quiet(tmp_path: Path) -> None:
    steps = 50
    p = {"open_drawer": [0.5] * 20 + [1.0] * 30, "pick": [0.5] * steps, "place": [0.4] * steps,
         "push": [0.6] * steps}
    report = judge(load(_dump(tmp_path / "d.parquet", steps, {k: 4 for k in p}, p)), ScanOptions())
    whole = [f for f in report.findings if f.slice is None and f.severity != "info"]
    assert whole == []
    mine = [f for f in report.findings if f.slice == "task=open_drawer"]
    assert {"REWARD_SATURATION", "DEGENERATE_GROUPS"} <= {f.id for f in mine}
    assert all(f.message.startswith("In slice task=open_drawer:") for f in mine)
    assert all("while the run as a whole stays alive" in f.message for f in mine)
    assert all(abs((f.onset_step or 0) - 20) <= 5 for f in mine if f.id == "REWARD_SATURATION")
    [loss] = report.verdict.slices
    assert loss.slice == "task=open_drawer" and loss.apart and loss.stage == "R"
    assert report.verdict.status == "lost" and "task=open_drawer" in report.verdict.summary
    assert [f for f in report.findings if f.slice not in (None, "task=open_drawer")] == []
    doc = report.to_json()
    assert doc["verdict"]["slices"][0]["slice"] == "task=open_drawer"
    assert all(f["slice"] == "task=open_drawer" for f in doc["findings"] if "slice" in f)


def test_slices_can_be_switched_off(tmp_path: Path) -> None:
    from advcore.detectors import run_detectors

    steps = 50
    p = {"open_drawer": [0.5] * 20 + [1.0] * 30, "pick": [0.5] * steps}
    run = load(_dump(tmp_path / "d.parquet", steps, {k: 4 for k in p}, p))
    with_slices, _ = run_detectors(run)
    without, _ = run_detectors(run, slices=False)
    assert any(f.slice for f in with_slices) and not any(f.slice for f in without)


def test_per_task_keys_of_a_step_log_are_slices(tmp_path: Path) -> None:
    import json

    lines = [json.dumps({"step": s, "train_verify_score/all": 0.5, "train_verify_score/open_drawer": 0.25,
                         "critic/score/mean": 0.5}) for s in range(20)]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(lines) + "\n")
    run = load(path)
    assert run.slices is not None
    assert set(run.slices["slice"].to_list()) == {"task=open_drawer"}  # `all` is the aggregate, not a slice
    assert run.slices["reward_mean"].to_list() == [0.25] * 20


def test_the_monitor_reports_a_slice_online() -> None:
    """advcore.Monitor with slice labels: the task that saturates at step 20 is reported once, with its
    slice, while the run as a whole stays quiet."""
    import advcore

    rng = np.random.default_rng(5)
    seen: list[object] = []
    mon = advcore.Monitor(callback=seen.append)
    tasks = np.repeat(["open_drawer", "pick", "place", "push"], 4 * G)
    groups = np.repeat(np.arange(16), G)
    for step in range(60):
        p = np.where((tasks == "open_drawer") & (step >= 20), 1.0, 0.5)
        r = (rng.random(tasks.size) < p).astype(float)
        means = np.bincount(groups, weights=r) / G
        mon.observe(step, rewards=r, group_ids=groups, advantages=r - means[groups], slices={"task": tasks})
    mon.close()
    mine = [f for f in mon.findings if f.slice == "task=open_drawer"]
    assert mine and all(f.severity in ("warn", "error") for f in mine)
    assert not [f for f in mon.findings if f.slice is None and f.severity != "info"]
    assert not [f for f in mon.findings if f.slice not in (None, "task=open_drawer")]
    assert len({(f.id, f.slice) for f in mon.findings}) == len(mon.findings)  # each reported once
    assert "REWARD_SATURATION [task=open_drawer]" in mon.reported_at


def test_slices_that_die_with_the_run_are_not_called_apart(tmp_path: Path) -> None:
    steps = 50
    p = {k: [0.5] * 20 + [0.0] * 30 for k in ("a", "b", "c", "d")}
    report = judge(load(_dump(tmp_path / "d.parquet", steps, {k: 4 for k in p}, p)), ScanOptions())
    assert [f for f in report.findings if f.slice is None and f.severity != "info"]
    assert report.verdict.slices and not any(s.apart for s in report.verdict.slices)
    assert "the slices lost it with the run" in report.verdict.summary
    assert "apart from the aggregate" not in report.verdict.summary


def test_agent_groups_are_judged_one_by_one() -> None:
    # a multi-agent PPO log (BenchMARL's train/<group>/entropy): group a's entropy collapses while its
    # reward stays flat, group b's holds; the whole run has no entropy of its own
    n = 100
    rng = np.random.default_rng(0)
    reward = list(-5.0 + 0.3 * rng.standard_normal(n))
    collapsing = [1.2 if i < 40 else max(0.01, 1.2 * 0.85 ** (i - 40)) for i in range(n)]
    steady = list(1.2 + 0.01 * rng.standard_normal(n))
    run = make_run({"reward_mean": reward, "reward_mean/a": reward, "entropy/a": collapsing,
                    "reward_mean/b": reward, "entropy/b": steady})
    findings, missing = run_detectors(run)
    grouped = [f for f in findings if f.id == "ENTROPY_COLLAPSE"]
    alone = one(make_run({"reward_mean": reward, "entropy": collapsing}), "ENTROPY_COLLAPSE")
    assert isinstance(alone, Finding) and alone.severity in ("warn", "error")
    assert [f.slice for f in grouped] == ["group=a"] and grouped[0].onset_step == alone.onset_step
    assert grouped[0].message.startswith("In slice group=a: ")
    assert "ENTROPY_COLLAPSE" not in {m.id for m in missing}
    assert one(make_run({"reward_mean": reward, "entropy": steady}), "ENTROPY_COLLAPSE") is None
    # without per-group metrics the detector stays not evaluable, as before
    _, plain = run_detectors(make_run({"reward_mean": reward}))
    assert "ENTROPY_COLLAPSE" in {m.id for m in plain}


def test_real_multi_agent_run_is_judged_per_group() -> None:
    """marl-mappo-schiphol-wandb-history: BenchMARL MAPPO with three agent groups, each with its own entropy,
    approximate KL, clip fraction and critic; healthy (SOURCE.md: the reward rises, the entropy decays)."""
    report = judge(load(real("marl-mappo-schiphol-wandb-history/wandb_export.csv")), ScanOptions())
    assert report.verdict.status == "quiet"
    assert {"ENTROPY_COLLAPSE", "UPDATE_UNSTABLE", "BASELINE_BROKEN"} <= set(report.checked)
    assert "per agent group: ghas, orchestrator, transporter" in report.verdict.summary


def test_real_benchmarl_stage_levels_per_agent_group() -> None:
    """With no run-wide critic or gradient, the A and U stages are shown once per agent group: the medians of
    the first and last 20 % of that group's column (52 of 256 rows), here against ``csv`` and ``statistics``."""
    import csv
    import math
    import statistics

    from advcore.stages import stage_signal

    path = real("marl-mappo-schiphol-wandb-history/wandb_export.csv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    n = math.ceil(0.2 * len(rows))
    levels = {(s.stage, s.metric): s for s in stage_signal(load(path))}
    for g in ("ghas", "orchestrator", "transporter"):
        for stage, canonical, key in (("A", f"vf_explained_var/{g}", f"train/{g}/explained_variance"),
                                      ("U", f"grad_norm/{g}", f"train/{g}/grad_norm_loss_objective")):
            column = [float(r[key]) for r in rows]
            level = levels[(stage, canonical)]
            assert level.early == pytest.approx(statistics.median(column[:n]))
            assert level.late == pytest.approx(statistics.median(column[-n:]))
    assert levels[("A", "vf_explained_var/ghas")].describe().startswith("A value explained variance (ghas) ")
    assert [s.stage for s in stage_signal(load(path))] == ["R", "A", "A", "A", "U", "U", "U"]
