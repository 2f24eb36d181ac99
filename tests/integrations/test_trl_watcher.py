"""The TRL callback's core (``TrlWatcher``) replayed on real TRL 1.16.0 output, in the order TRL
produces it: at the ``on_log`` of step N the completion tables of steps < N exist, step N's is
written afterwards. Oracles: TRL's own logged ``frac_reward_zero_std`` and ``rewards/*/mean``,
numpy on the tables, and the duplicate batches the gen2 fixture is known to have (steps 2, 4, 6, 8).
Needs neither transformers nor torch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import advcore
from advcore.integrations.trl import TrlWatcher, canonical_logs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trl_grpo_cpu"


def replay(name: str, out: Path, **monitor: object) -> tuple[TrlWatcher, list[dict], dict[int, dict]]:
    """Feed the fixture's log_history to a watcher, copying each table in after its step's log."""
    src = FIXTURES / name
    history = json.loads((src / "trainer_state.json").read_text())["log_history"]
    (out / "completions").mkdir(parents=True)
    mon = advcore.Monitor(**monitor)  # type: ignore[arg-type]
    watcher = TrlWatcher(mon, out, num_generations=4, log_completions=True, version="1.16.0")
    added: dict[int, dict] = {}
    for row in history:
        step = int(row["step"])
        logs = {k: v for k, v in row.items() if k != "step"}
        got = watcher.log(step, logs)
        if "train_runtime" in logs:
            assert got == {}   # the summary log is no step
        else:
            added[step] = got
        table = src / "completions" / f"completions_{step:05d}.parquet"
        if table.exists():
            shutil.copy(table, out / "completions" / table.name)
    watcher.end()
    return watcher, history, added


def tied_share(table: Path) -> float:
    df = pl.read_parquet(table)
    comps = [c for c in df.columns if c not in ("step", "prompt", "completion", "advantage")]
    r = df.select(pl.sum_horizontal(comps)).to_series().to_numpy().reshape(-1, 4)
    return float(np.mean(np.ptp(r, axis=1) == 0))


@pytest.mark.parametrize("name", ["healthy", "gen2", "dead"])
def test_zero_variance_share_equals_trls_frac_reward_zero_std(name: str, tmp_path: Path) -> None:
    watcher, history, _ = replay(name, tmp_path)
    frame = watcher.monitor.steps_frame
    trace = watcher.monitor.recording.frame.filter((pl.col("stage") == "reward") & (pl.col("slice") == "all")
                                                & (pl.col("statistic") == "zero_variance_group_frac"))
    ours = dict(zip(trace["step"].to_list(), trace["value"].to_list(), strict=True))
    logged = {int(r["step"]): r["frac_reward_zero_std"] for r in history if "frac_reward_zero_std" in r}
    assert logged and sorted(ours) == sorted(logged)   # every generating step, from the samples
    for step, v in logged.items():
        assert ours[step] == pytest.approx(v), step
        table = FIXTURES / name / "completions" / f"completions_{step:05d}.parquet"
        assert ours[step] == pytest.approx(tied_share(table))
    # the reward mean from the samples equals TRL's logged `reward`
    means = dict(zip(frame["step"].to_list(), frame["reward_mean"].to_list(), strict=True))
    for r in history:
        if "reward" in r:
            assert means[int(r["step"])] == pytest.approx(r["reward"], rel=1e-6)


def test_duplicate_batches_are_not_counted_twice(tmp_path: Path) -> None:
    watcher, history, _ = replay("gen2", tmp_path)
    assert watcher.sample_steps == [1, 3, 5, 7]
    assert watcher.duplicate_steps == [2, 4, 6, 8]
    frame = watcher.monitor.steps_frame
    assert frame["step"].to_list() == list(range(1, 9))   # every logged step, the summary log skipped
    n = dict(zip(frame["step"].to_list(), frame["n_samples"].to_list(), strict=True))
    assert [n[s] for s in (2, 4, 6, 8)] == [None] * 4 and n[1] == 16
    grad = dict(zip(frame["step"].to_list(), frame["grad_norm"].to_list(), strict=True))
    assert grad[2] == pytest.approx(history[1]["grad_norm"])   # the trainer's own metric kept for the detectors


def test_metrics_arrive_one_step_late_and_say_which_step(tmp_path: Path) -> None:
    watcher, history, added = replay("healthy", tmp_path)
    assert added[1] == {}   # step 1's table does not exist at its own on_log
    for step in range(2, 13):
        assert added[step]["advcore/sample_step"] == step - 1
        row = next(r for r in history if r["step"] == step - 1)
        assert added[step]["advcore/zero_variance_group_frac"] == pytest.approx(row["frac_reward_zero_std"])
    assert watcher.sample_steps == list(range(1, 13))   # the last one at train end


def test_advantages_match_trls_formula_and_are_recomputed(tmp_path: Path) -> None:
    watcher, _, _ = replay("healthy", tmp_path)
    err = watcher.monitor.steps_frame["adv_recompute_err"].to_list()
    assert len(err) == 12 and all(e is not None and e <= 1.0 for e in err)


def test_dead_reward_is_reported_within_the_sustain_window(tmp_path: Path) -> None:
    from advcore.detectors import REGISTRY

    watcher, _, _ = replay("dead", tmp_path, min_steps=5, detect_budget=None)  # a pass every replayed step
    ids = {f.id: f for f in watcher.monitor.findings}
    assert "DEGENERATE_GROUPS" in ids and "DEAD_FROM_START" in ids
    sustain = int(REGISTRY["DEGENERATE_GROUPS"].resolve({})["sustain"])
    onset = ids["DEGENERATE_GROUPS"].onset_step
    # found within the sustain window, reported once the next pass confirms it
    confirm = watcher.monitor.confirm
    assert onset == 1 and watcher.monitor.reported_at["DEGENERATE_GROUPS"] <= onset + sustain + confirm - 1


def test_canonical_logs_follow_the_version_rows() -> None:
    logs = {"reward_std": 0.3, "frac_reward_zero_std": 0.25, "grad_norm": 1.5, "rewards/acc/mean": 0.5,
            "completions/clipped_ratio": 0.1, "loss": 0.0, "note": "text"}
    new, old = canonical_logs(logs, "1.16.0"), canonical_logs(logs, "0.19.0")
    assert new["reward_std"] == 0.3 and "reward_std_within" not in new
    assert old["reward_std_within"] == 0.3 and "reward_std" not in old
    assert new["zero_variance_group_frac"] == 0.25 and new["reward/acc"] == 0.5
    assert new["truncated_frac"] == 0.1 and new["grad_norm"] == 1.5 and "note" not in new


def test_without_completions_only_logged_metrics_are_watched(tmp_path: Path) -> None:
    history = json.loads((FIXTURES / "healthy" / "trainer_state.json").read_text())["log_history"]
    watcher = TrlWatcher(advcore.Monitor(), tmp_path, 4, log_completions=False, version="1.16.0")
    for row in history:
        watcher.log(int(row["step"]), {k: v for k, v in row.items() if k != "step"})
    frame = watcher.monitor.steps_frame
    assert frame.height == 12 and "n_samples" not in frame.columns
    assert frame["zero_variance_group_frac"].to_list() == [r["frac_reward_zero_std"] for r in history[:12]]


def test_batch_scaled_runs_do_not_read_the_batch_flag_as_a_share(tmp_path: Path) -> None:
    logs = {"loss": 0.1, "frac_reward_zero_std": 1.0, "grad_norm": 0.3}
    grouped = TrlWatcher(advcore.Monitor(), tmp_path, 4, log_completions=False, version="1.16.0")
    batch = TrlWatcher(advcore.Monitor(), tmp_path, 4, log_completions=False, version="1.16.0", scale_rewards="batch")
    grouped.log(1, logs)
    batch.log(1, logs)
    assert grouped.monitor.steps_frame["zero_variance_group_frac"].to_list() == [1.0]
    assert "zero_variance_group_frac" not in batch.monitor.steps_frame.columns
    assert batch.monitor.steps_frame["grad_norm"].to_list() == [0.3]
