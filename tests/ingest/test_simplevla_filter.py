"""Filter accounting from a SimpleVLA-RL-shaped console (issue 16): what the accuracy filter removed per
step, the cold start where every group is rejected, and the task that is always filtered out.

The console is written in the shape ``RayTrainer.fit`` and ``RayTrainer.filter`` print it
(PRIME-RL/SimpleVLA-RL@7c51662, ``verl/trainer/ppo/ray_trainer.py``; read in the code library, not
copied): per batch drawn ``before filtering: N``, ``Accuracy distribution: ...``, ``Filtered batch size: M
(from original size: N)``, ``after filtering: M``, ``collected X / Y rollouts and each prompt has G
responses``; after enough groups survive, ``rollout batch size: ...`` and the step's metrics line
(``step:N - k:v``). ``main_task`` pprints the config first (``'accuracy_lower_bound': 0.1,``). Each line
carries a Ray prefix with ANSI colours and a timestamp, as a captured console does.

Oracles are computed here with numpy from the simulated successes and the bounds, not by the reader.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from advcore.ingest import join_runs, load
from advcore.ingest.formats import simplevla
from advcore.scan import ScanOptions, judge

PRE = "2025-07-03 10:00:00,123 \x1b[36m(main_task pid=4242)\x1b[0m "
G = 8
BATCH = 16  # data.train_batch_size (tasks per step)
LO, HI = 0.1, 0.9
TASKS = ("pick_bowl", "place_plate", "open_drawer", "close_drawer", "stack_cups", "push_button")


def _config() -> list[str]:
    return [PRE + "{'actor_rollout_ref': {'actor': {'clip_ratio': 0.2}},",
            PRE + " 'data': {'accuracy_lower_bound': 0.1,",
            PRE + "          'accuracy_upper_bound': 0.9,",
            PRE + "          'filter_accuracy': True,",
            PRE + "          'n_samples': 8,",
            PRE + "          'task_suite_name': 'libero_10'}}"]


class Console:
    """Simulates RayTrainer.fit's loop over batches: ``p[task]`` is each task's success probability."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.lines = _config()
        self.step = 0
        #: the oracle, per step: groups sampled, groups kept, and per-task success of the rollouts
        self.sampled: list[int] = []
        self.kept: list[int] = []
        self.batches: list[int] = []
        #: what ``logger.log(data=metrics, step=global_steps)`` received, per logged step
        self.records: list[tuple[int, dict[str, float]]] = []

    def batch(self, p: dict[str, float]) -> tuple[int, dict[str, list[float]]]:
        tasks = self.rng.choice(list(p), size=BATCH)
        k = self.rng.binomial(G, [p[t] for t in tasks])
        rate = k / G
        keep = (rate >= LO) & (rate <= HI)
        n = BATCH * G
        # codetiming's Timer lines (RayTrainer.fit, PRIME-RL/SimpleVLA-RL@7c51662 L520, L559: text="{name}: ...")
        self.lines += [PRE + f"gen: {self.rng.uniform(60, 90):.1f} seconds", PRE + "verify: 0.2 seconds",
                       PRE + f"before filtering: {n}",
                       PRE + "Accuracy distribution: " + " ".join(f"{r:.2f}:{c}" for r, c in sorted(Counter(rate.tolist()).items())),
                       PRE + f"Filtered batch size: {int(keep.sum()) * G} (from original size: {n})",
                       PRE + f"after filtering: {int(keep.sum()) * G}"]
        per_task: dict[str, list[float]] = {}
        for t, r in zip(tasks.tolist(), rate.tolist(), strict=True):
            per_task.setdefault(t, []).append(r)
        return int(keep.sum()), per_task

    def train_step(self, p: dict[str, float], max_batches: int = 60, per_task_keys: bool = False) -> bool:
        """Draw batches until BATCH groups survive (or the data runs out): one logged step, or none."""
        kept = sampled = batches = 0
        seen: dict[str, list[float]] = {}
        while kept < BATCH and batches < max_batches:
            k, per_task = self.batch(p)
            kept, sampled, batches = kept + k, sampled + BATCH, batches + 1
            for t, rs in per_task.items():
                seen.setdefault(t, []).extend(rs)
            self.lines.append(PRE + f"collected {min(kept, BATCH) * G} / {BATCH * G} rollouts and each prompt has {G} responses")
        if kept < BATCH:
            return False
        self.sampled.append(sampled)
        self.kept.append(kept)
        self.batches.append(batches)
        self.lines.append(PRE + f"rollout batch size: {BATCH * G}")
        mean = float(np.mean([r for rs in seen.values() for r in rs]))
        metrics = {"train_verify_score/all": mean, "critic/score/mean": 0.5, "critic/score/max": 1.0,
                   "critic/score/min": 0.0, "critic/advantages/max": 1.2, "critic/advantages/min": -1.2,
                   "actor/pg_clipfrac": 0.01, "actor/ppo_kl": 0.001, "actor/grad_norm": 0.4,
                   "actor_after/entropy_loss_eval": 2.0}
        if per_task_keys:  # a verifier that reports success per task (one key per task drawn this step)
            metrics.update({f"train_verify_score/{t}": float(np.mean(rs)) for t, rs in seen.items()})
        self.lines.append(PRE + " - ".join([f"step:{self.step}"] + [f"{k}:{v:.3f}" for k, v in metrics.items()]))
        self.records.append((self.step, metrics))
        self.step += 1
        return True

    def write(self, path: Path) -> Path:
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        return path

    def write_file_logger(self, folder: Path) -> Path:
        """``LocalLogger``'s file (verl/utils/logger/aggregate_logger.py L79-81, L100-102) beside the console:
        the two header lines, then ``<ISO time>\\t<step>\\t<json.dumps(metrics)>`` per logged step."""
        lines = ["# Log started at 2025-07-03T10:00:00.000001", "# Format: {timestamp}\t{step}\t{data_json}"]
        lines += [f"2025-07-03T10:{step:02d}:30.000001\t{step}\t{json.dumps(metrics)}" for step, metrics in self.records]
        path = folder / "run_20250703_100000.log"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


def _learning(i: int) -> dict[str, float]:
    """Success probabilities at step i of a run that learns: every task between 0.2 and 0.8."""
    return {t: min(0.8, 0.2 + 0.02 * i + 0.05 * j) for j, t in enumerate(TASKS)}


def test_the_filter_accounting_matches_what_the_filter_removed(tmp_path: Path) -> None:
    con = Console(0)
    for i in range(20):
        assert con.train_step(_learning(i))
    run = load(con.write(tmp_path / "console.log"))
    assert run.format == "simplevla" and run.steps == 20
    assert run.metadata["accuracy_lower_bound"] == LO and run.metadata["accuracy_upper_bound"] == HI
    kept = run.frame["filter/kept_frac"].to_numpy()
    np.testing.assert_allclose(kept, np.array(con.kept) / np.array(con.sampled))
    np.testing.assert_array_equal(run.frame["filter/batches"].to_numpy(), con.batches)
    np.testing.assert_array_equal(run.frame["filter/groups_removed"].to_numpy(), np.array(con.sampled) - con.kept)
    report = judge(run, ScanOptions())
    assert not [f for f in report.findings if f.id in ("FILTER_STARVATION", "ALWAYS_FILTERED")]
    # the verdict's accounting: what the filter removed over the run, against the simulated filter
    acc = report.verdict.filter
    ratio = np.array(con.kept) / np.array(con.sampled)
    assert acc is not None and acc.steps == 20
    assert acc.kept_median == pytest.approx(np.median(ratio)) and acc.kept_min == pytest.approx(ratio.min())
    assert acc.kept_min_step == int(np.argmin(ratio))
    assert acc.batches_median == np.median(con.batches) and acc.batches_max == max(con.batches)
    assert acc.sampled == sum(con.sampled) and acc.removed == sum(con.sampled) - sum(con.kept)
    assert report.verdict.to_json()["filter"]["removed"] == acc.removed
    assert f"removed {acc.removed:.0f} of {acc.sampled:.0f} groups" in acc.describe()


def test_a_cold_start_that_never_logs_a_step_is_reported(tmp_path: Path) -> None:
    con = Console(1)
    floor = {t: 0.0 for t in TASKS}
    assert not con.train_step(floor, max_batches=25)  # the epoch's data runs out: no step, no update
    run = load(con.write(tmp_path / "cold.log"))
    assert run.format == "simplevla" and run.steps == 0 and not run.errors
    report = judge(run, ScanOptions())
    [f] = [f for f in report.findings if f.id == "FILTER_STARVATION"]
    assert f.severity == "error" and f.stage == "R"
    assert f.evidence["batches_without_update"] == 25 and f.evidence["kept_frac"] == 0.0
    assert f.evidence["removed_all_fail"] == 25 * BATCH
    assert "cold start" in f.message and "never logged a training step" in f.message
    assert report.verdict.filter is None  # no logged step has a kept share; the finding carries the batches
    assert report.verdict.status == "lost" and report.verdict.stage == "R"


def test_a_cold_start_that_starves_the_first_steps_is_dated(tmp_path: Path) -> None:
    con = Console(2)
    # success 0.5 % per rollout: a group of 8 has a success (and is kept) with probability 1 - 0.995^8 = 0.04,
    # so a step of 16 kept groups takes about 25 batches
    cold = {t: 0.005 for t in TASKS}
    for _ in range(5):
        assert con.train_step(cold, max_batches=2000)
    for i in range(15):
        assert con.train_step(_learning(i))
    run = load(con.write(tmp_path / "starved.log"))
    ratio = np.array(con.kept) / np.array(con.sampled)
    assert (ratio[:5] < 0.1).all() and (ratio[5:] > 0.1).all()  # the oracle: starved exactly the first 5 steps
    report = judge(run, ScanOptions())
    [f] = [f for f in report.findings if f.id == "FILTER_STARVATION"]
    assert f.onset_step == 0 and f.evidence["starved_steps"] == 5
    assert f.evidence["batches_per_step"] == pytest.approx(np.mean(con.batches[:5]))
    assert "cold start" in f.message


def test_a_task_always_filtered_out_is_named(tmp_path: Path) -> None:
    con = Console(3)
    for i in range(25):
        p = _learning(i)
        p["open_drawer"] = 0.0  # never succeeds: every group of it is 0.00, below the lower bound
        assert con.train_step(p, per_task_keys=True)
    run = load(con.write(tmp_path / "task.log"))
    assert run.slices is not None and "task=open_drawer" in run.slices["slice"].to_list()
    report = judge(run, ScanOptions())
    [f] = [f for f in report.findings if f.id == "ALWAYS_FILTERED"]
    assert [t["task"] for t in f.evidence["tasks"]] == ["open_drawer"]
    assert "open_drawer" in f.message and "never trained" in f.message
    assert not [g for g in report.findings if g.id == "FILTER_STARVATION"]


def test_no_task_is_named_when_every_task_trains(tmp_path: Path) -> None:
    con = Console(4)
    for i in range(25):
        assert con.train_step(_learning(i), per_task_keys=True)
    report = judge(load(con.write(tmp_path / "ok.log")), ScanOptions())
    assert not [f for f in report.findings if f.id in ("ALWAYS_FILTERED", "FILTER_STARVATION")]
    assert not [f for f in report.findings if f.severity in ("warn", "error") and f.slice is not None]


def test_the_console_and_the_file_logger_of_one_run_are_read_as_one(tmp_path: Path) -> None:
    """``trainer.logger=['console']``: the file logger in ``trainer.default_local_dir`` beside a capture of the
    console; the file gives the metrics at full precision, the console the filter's lines."""
    con = Console(5)
    for i in range(12):
        assert con.train_step(_learning(i))
    folder = tmp_path / "run"
    folder.mkdir()
    console = load(con.write(folder / "console.log"))
    file = load(con.write_file_logger(folder))
    assert (console.metadata["logger"], file.metadata["logger"]) == ("console", "file")
    assert file.frame["step"].to_list() == [s for s, _ in con.records] == console.frame["step"].to_list()
    raw = simplevla.read(folder / "run_20250703_100000.log").frame
    assert raw["train_verify_score/all"].to_list() == [m["train_verify_score/all"] for _, m in con.records]
    (joined,) = join_runs([console, file])
    assert sorted(Path(f).name for f in joined.files) == ["console.log", "run_20250703_100000.log"]
    np.testing.assert_allclose(joined.frame["filter/kept_frac"].to_numpy(), np.array(con.kept) / np.array(con.sampled))
