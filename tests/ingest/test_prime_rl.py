"""prime-rl's per-step episode files (advcore.ingest.formats.prime_rl), on a fixture laid out as
prime-rl's file monitor writes it (``src/prime_rl/monitors/file.py``, commit 559b447) with episodes
in the form of verifiers' ``Episode.to_record`` (``verifiers/v1/episode.py``, ``trace.py``): the
oracle is numpy over the rewards and advantages the fixture wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import prime_rl
from advcore.scan import collect_paths, scan

GROUP = 4


def _trace(correct: float, fmt: float, advantage: float | None, *, agent: str = "agent",
           trainable: bool = True) -> dict[str, Any]:
    info: dict[str, Any] = {} if advantage is None else {"advantage": advantage}
    return {"version": 1, "id": "t", "verifiers": {"version": "0.3.1"},
            "task": {"type": "gsm8k", "data": {"question": "1+1?"}, "key": "k"},
            "agent": {"config": {"model": "Qwen3-0.6B"}, "name": agent, "trainable": trainable},
            "tools": [], "nodes": [{"role": "assistant", "content": "2"}], "calls": [],
            "rewards": {"correct": {"score": correct, "weight": 1.0}, "format": {"score": fmt, "weight": 0.2},
                        "judge": None},
            "metrics": {"num_turns": 1.0}, "info": info, "ok": True, "errors": [],
            "timing": {"start": 0.0}}


def _episode(step: int, group: str, traces: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": f"e{step}{group}", "env": {"id": "gsm8k"}, "task": {"type": "gsm8k", "data": {}},
            "group": {"id": group}, "run": {"type": "train", "id": "r", "work": {"type": "train", "step": step}},
            "ok": bool(traces), "errors": [], "traces": traces}


def _write(root: Path, steps: int, rng: np.random.Generator) -> dict[int, list[tuple[str, float, float, float]]]:
    """Steps of 3 groups of GROUP episodes (group 'g0' tied at 1 from step 3 on); ``train/all`` and a
    smaller ``train/effective`` (which the reader must not take when ``all`` is there), and ``eval``."""
    truth: dict[int, list[tuple[str, float, float, float]]] = {}
    for step in range(steps):
        lines, effective = [], []
        truth[step] = []
        for g in range(3):
            correct = np.ones(GROUP) if g == 0 and step >= 3 else (rng.random(GROUP) < 0.5).astype(float)
            fmt = (rng.random(GROUP) < 0.8).astype(float)
            reward = correct + 0.2 * fmt
            adv = reward - reward.mean()
            episodes = []
            for i in range(GROUP):
                episodes.append(_episode(step, f"g{g}", [_trace(correct[i], fmt[i], float(adv[i]))]))
                truth[step].append((f"g{g}", float(reward[i]), float(adv[i]), float(correct[i])))
            lines += episodes
            if g:
                effective += episodes
        lines.append(_episode(step, "g9", []))  # failed before producing a trace
        for subset, eps in (("all", lines), ("effective", effective)):
            f = root / f"step_{step}" / "train" / subset / "traces.jsonl"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text("".join(json.dumps(e) + "\n" for e in eps))
        ev = root / f"step_{step}" / "eval" / "all" / "traces.jsonl"
        ev.parent.mkdir(parents=True)
        ev.write_text(json.dumps(_episode(step, "e0", [_trace(9.0, 9.0, None)])) + "\n")
    return truth


def test_rollouts_folder_reduced_per_step(tmp_path: Path) -> None:
    root = tmp_path / "outputs" / "rollouts"
    truth = _write(root, 6, np.random.default_rng(3))
    assert detect(root) is prime_rl.FORMAT
    run = load(root)
    assert run.format == "prime_rl" and run.frame["step"].to_list() == list(range(6))
    for step, samples in truth.items():
        row = run.frame.filter(run.frame["step"] == step).row(0, named=True)
        rewards = np.array([r for _, r, _, _ in samples])
        advs = np.array([a for _, _, a, _ in samples])
        assert row["reward_mean"] == pytest.approx(rewards.mean())
        assert row["adv_std"] == pytest.approx(advs.std(ddof=0), rel=1e-5)
        tied = sum(np.ptp([r for g2, r, _, _ in samples if g2 == g]) == 0 for g in ("g0", "g1", "g2"))
        assert row["zero_variance_group_frac"] == pytest.approx(tied / 3)
        assert row["reward/correct"] == pytest.approx(np.mean([c for *_, c in samples]))
    assert run.metadata["episodes_without_trace"] == 6


def test_a_scan_folds_the_step_files_into_one_run_and_bad_lines_cost_themselves(tmp_path: Path) -> None:
    root = tmp_path / "outputs" / "rollouts"
    _write(root, 4, np.random.default_rng(4))
    bad = root / "step_2" / "train" / "all" / "traces.jsonl"
    bad.write_text(bad.read_text() + '{"traces": "not a list"}\n{truncated\n')
    (tmp_path / "outputs" / "orchestrator.log").write_text("starting\n")
    files = collect_paths([str(tmp_path / "outputs")]).files
    assert root in files and not any(f.name == "traces.jsonl" for f in files)
    [report] = [r for r in scan(files) if r.run.format == "prime_rl"]
    assert report.run.steps == 4
    lines = sorted(e.line for e in report.run.errors if e.path == str(bad))
    n = len(bad.read_text().splitlines())
    assert lines == [n - 1, n]
    # one step file alone is read too
    one = load(root / "step_1" / "train" / "effective" / "traces.jsonl")
    assert one.frame["step"].to_list() == [1]


def test_multi_agent_roles_are_grouped_apart_and_frozen_agents_left_out(tmp_path: Path) -> None:
    f = tmp_path / "rollouts" / "step_5" / "train" / "all" / "traces.jsonl"
    f.parent.mkdir(parents=True)
    episodes = [_episode(5, "g0", [_trace(1.0, 1.0, 0.5, agent="proposer"), _trace(float(i % 2), 1.0, 0.1, agent="solver"),
                                   _trace(3.0, 1.0, None, agent="judge", trainable=False)]) for i in range(4)]
    f.write_text("".join(json.dumps(e) + "\n" for e in episodes))
    run = load(tmp_path / "rollouts")
    row = run.frame.row(0, named=True)
    assert row["zero_variance_group_frac"] == pytest.approx(0.5)  # the proposer's group tied, the solver's not
    assert row["reward_mean"] == pytest.approx(np.mean([1.2] * 4 + [i % 2 + 0.2 for i in range(4)]))
