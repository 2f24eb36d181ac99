"""grpo-dynamics-gate2-rho1-seed42: the zero-variance group share advcore reads from rho-GRPO's
per-micro-batch group counts, recomputed from the raw JSON (json + numpy) and checked against the
share the run's own TRL console log implies (its ``reward_std``, the mean within-group std)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from advcore.ingest import load
from advcore.ingest.formats import columnar_json

from tests._real import real

RUN = "grpo-dynamics-gate2-rho1-seed42"
G = 2  # SOURCE.md: group size 2, binary reward (GSM8K exact match)


def _raw_by_step(name: str) -> dict[int, list[dict[str, float]]]:
    out: dict[int, list[dict[str, float]]] = {}
    for rec in json.loads(real(f"{RUN}/{name}").read_text(encoding="utf-8")):
        out.setdefault(int(rec["step"]), []).append(rec)
    return out


def _rho_fractions() -> tuple[np.ndarray, np.ndarray]:
    """Per trainer step (as written, 0-based): tied samples / all samples over its records."""
    by_step = _raw_by_step("rho_grpo_logs.json")
    steps = np.array(sorted(by_step))
    deg = np.array([sum(r["n_degenerate"] for r in by_step[s]) for s in steps], dtype=np.float64)
    tot = np.array([sum(r["n_positive"] + r["n_negative"] + r["n_degenerate"] for r in by_step[s]) for s in steps],
                   dtype=np.float64)
    return steps, deg / tot


def _console() -> list[dict[str, str]]:
    text = real(f"{RUN}/gate2_rho1.00_seed42.log").read_text(encoding="utf-8", errors="replace")
    return [ast.literal_eval(m) for m in re.findall(r"\{'loss':[^{}]*\}", text)]


def test_rho_records_recomputed_step_by_step() -> None:
    steps, frac = _rho_fractions()
    assert steps.tolist() == list(range(200))
    by_step = _raw_by_step("rho_grpo_logs.json")
    # each record: 2 groups of G=2 (4 samples); two micro-batches per optimizer step
    assert all(len(v) == 2 and all(r["n_groups"] == 2 for r in v) for v in by_step.values())
    run = load(real(f"{RUN}/rho_grpo_logs.json"))
    assert run.errors == ()
    assert run.frame["step"].to_list() == (steps + 1).tolist()
    np.testing.assert_array_equal(run.frame["zero_variance_group_frac"].to_numpy(), frac)
    # SOURCE.md: 1290 of 1600 samples in degenerate groups; a step shows reward_std 0 at 89 steps
    assert frac.sum() * 8 == 1290 and int((frac == 1.0).sum()) == 89
    # the counts it is derived from are read, and named as its source
    assert run.sources["zero_variance_group_frac"] == "n_degenerate / (n_positive + n_negative + n_degenerate)"
    assert not {"n_degenerate", "n_positive", "n_negative"} & set(run.unread["unmapped"])
    # and the report says that its steps are the records' + 1
    from advcore.report.render import step_note

    assert step_note(run) == f"rho_grpo_logs.json: {run.metadata['step']}" and "+ 1" in run.metadata["step"]


def test_rho_share_matches_the_console_reward_std() -> None:
    # TRL (this run) logs reward_std as the mean over the step's 4 groups of the ddof-1 std; with
    # G=2 and a 0/1 reward a group is tied (std 0) or (0, 1) (std sqrt(1/2)), so the tied share is
    # 1 - reward_std / sqrt(1/2). The console's line k is optimizer step k (1-based).
    logs = _console()
    assert len(logs) == 200
    reward_std = np.array([float(d["reward_std"]) for d in logs])
    implied = 1.0 - reward_std / np.std([0.0, 1.0], ddof=1)
    steps, frac = _rho_fractions()
    np.testing.assert_allclose(frac, implied, atol=1e-3)  # reward_std printed with 4 significant digits
    assert not np.allclose(frac[1:], implied[:-1], atol=1e-3)  # without the +1 the steps do not line up
    run = load(real(f"{RUN}/rho_grpo_logs.json"))
    assert run.frame["step"].to_list() == list(range(1, 201))
    np.testing.assert_allclose(run.frame["zero_variance_group_frac"].to_numpy(), implied, atol=1e-3)


def test_csd_records_hold_the_last_micro_batch_only() -> None:
    # csd_logs.json is written by a callback that copies the trainer's latest record at each log
    raw = _raw_by_step("csd_logs.json")
    rho = _raw_by_step("rho_grpo_logs.json")
    assert sorted(raw) == list(range(1, 201)) and len(raw[200]) == 2  # the end-of-training log repeats step 200
    key = ("n_positive", "n_negative", "n_degenerate")
    last = [tuple(rho[s - 1][-1][k] for k in key) for s in range(1, 201)]
    first = [tuple(rho[s - 1][0][k] for k in key) for s in range(1, 201)]
    csd = [(raw[s][0]["n_pos"], raw[s][0]["n_neg"], raw[s][0]["n_degenerate"]) for s in range(1, 201)]
    assert csd == last and csd != first
    csd_frac = np.array([c[2] / sum(c) for c in csd])
    _, frac = _rho_fractions()
    assert int((csd_frac != frac).sum()) == 96  # the half-step share is not the step's share
    run = load(real(f"{RUN}/csd_logs.json"))
    assert run.errors == () and run.steps == 200
    assert "zero_variance_group_frac" not in run.frame.columns
    assert "last micro-batch" in run.metadata["groups"]
    # reward_mean is the callback's integer-0 default (TRL logs 'reward'): not a zero reward
    assert {r["reward_mean"] for v in raw.values() for r in v} == {0}
    assert "reward_mean" not in run.frame.columns
    # grad_norm lines up with the console's at every step (the repeat at 200 has the default 0)
    console = np.array([float(d["grad_norm"]) for d in _console()])
    np.testing.assert_allclose(run.frame["grad_norm"].to_numpy(), console, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("name", ["rho_grpo_logs.json", "csd_logs.json"])
def test_group_count_files_load_without_errors(name: str) -> None:
    run = load(real(f"{RUN}/{name}"))
    assert run.format == "columnar_json" and run.errors == ()


def test_csd_callback_layout_fixture(tmp_path: Path) -> None:
    rows: list[dict[str, float]] = [
        {"step": 1, "n_pos": 1, "n_neg": 1, "n_degenerate": 2, "reward_mean": 0, "grad_norm": 0.25},
        {"step": 2, "n_pos": 0, "n_neg": 0, "n_degenerate": 4, "reward_mean": 0, "grad_norm": 0.0},
        {"step": 2, "n_pos": 0, "n_neg": 0, "n_degenerate": 4, "reward_mean": 0, "grad_norm": 0},
    ]
    p = tmp_path / "csd_logs.json"
    p.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    raw = columnar_json.read(p)
    assert raw.frame["step"].to_list() == [1, 2]
    assert raw.frame["n_degenerate"].to_list() == [2.0, 4.0]  # the repeat is not summed
    assert raw.frame["grad_norm"].to_list() == [0.25, 0.0]  # a logged 0.0 stays, the first record is kept
    assert "reward_mean" not in raw.frame.columns and raw.metadata["placeholder"] == ["reward_mean"]
    assert load(p).unread["placeholder"] == ["reward_mean"]  # said, not dropped silently
    assert "zero_variance_group_frac" not in raw.frame.columns and raw.metadata["repeated_records"] == 1
    rows[0]["reward_mean"] = 0.5
    p.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    assert columnar_json.read(p).frame["reward_mean"].to_list() == [0.5, None]
