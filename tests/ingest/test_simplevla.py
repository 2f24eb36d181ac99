"""SimpleVLA-RL logs: the tab-separated file logger and the console's ``Accuracy distribution:`` lines.

The fixtures are written by hand in the exact shape the trainer writes (sources read in the code
library, not copied):

* file logger: ``verl/utils/logger/aggregate_logger.py`` (CZtheHusky/SimpleVLA-RL@4e799ca,
  ``LocalLogger.__init__`` lines 79-81 write the two ``#`` header lines, ``LocalLogger.log`` lines
  100-102 append ``f"{datetime.now().isoformat()}\\t{step}\\t{json.dumps(data)}"``); the console line
  is ``concat_dict_to_str`` of the same file (``step:N - key:{v:.3f} - ...``);
* accuracy line: ``verl/trainer/ppo/ray_trainer.py`` (Jixingyue/simplevla-rl@1ff5325,
  ``RayTrainer.filter``): ``print("Accuracy distribution:", " ".join(f"{k:.2f}:{v}" for k, v in
  sorted(Counter(per_task_success_rate).items())))``, one line per batch drawn, before the step's
  ``logger.log``; validation metrics are logged first at the same step (``RayTrainer.fit``).

Oracles are computed with numpy from the generated successes, not from the reader.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advcore.cli import main
from advcore.ingest import detect, load
from advcore.ingest.formats import simplevla, verl_console
from tests._real import REAL

PRE = "\x1b[36m(main_task pid=4242)\x1b[0m "  # Ray prefix with ANSI colour, as Ray prints it
G = 8  # data.n_samples


def _header() -> list[str]:
    return ["# Log started at 2025-07-03T10:00:00.000001", "# Format: {timestamp}\t{step}\t{data_json}"]


def _record(step: int, data: dict[str, Any], second: int = 0) -> str:
    return f"2025-07-03T10:{second // 60:02d}:{second % 60:02d}.123456\t{step}\t{json.dumps(data)}"


def _console(step: int, data: dict[str, float]) -> str:
    return PRE + " - ".join([f"step:{step}"] + [f"{k}:{v:.3f}" for k, v in data.items()])


def _accuracy(successes: Sequence[int]) -> str:
    """The line printed for one batch: ``successes[i]`` of the G rollouts of task i succeeded."""
    counts = Counter(k / G for k in successes)
    return PRE + "Accuracy distribution: " + " ".join(f"{k:.2f}:{v}" for k, v in sorted(counts.items()))


def _metrics(successes: np.ndarray) -> dict[str, float]:
    rate = successes / G
    spread = 0.0 if bool(np.all((successes == 0) | (successes == G))) else 1.5  # every group tied: no advantage
    return {
        "train_verify_score/all": float(rate.mean()),
        "critic/score/mean": float(rate.mean()),
        "critic/score/max": 1.0,
        "critic/score/min": 0.0,
        "critic/advantages/mean": 0.0,
        "critic/advantages/max": spread,
        "critic/advantages/min": -spread,
        "actor/pg_clipfrac": 0.01,
        "actor/ppo_kl": 0.001,
        "actor/grad_norm": 0.4,
        "actor/lr(1e-4)": 0.05,
        "actor_after/entropy_loss_eval": 2.0,
    }


def _write(tmp_path: Path, lines: list[str], name: str = "run.log") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _console_run(tmp_path: Path, batches: list[list[np.ndarray]], name: str = "console.log") -> Path:
    """A console capture: per step, one accuracy line per batch drawn, then the step line."""
    lines = [PRE + "{'actor_rollout_ref': {'model': {'vla': 'openvla-oft'}}, 'data': {'n_samples': 8}}"]
    for step, drawn in enumerate(batches):
        lines += [_accuracy(b.tolist()) for b in drawn]
        collected = sum(len(b) for b in drawn) * G
        lines.append(PRE + f"collected {collected} / 128 rollouts and each prompt has {G} responses")
        lines.append(_console(step, _metrics(np.concatenate(drawn))))
    return _write(tmp_path, lines, name)


def _tied(successes: np.ndarray) -> float:
    return float(np.mean((successes == 0) | (successes == G)))


def _scan(path: Path) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["scan", "--format", "json", str(path)])
    runs: list[dict[str, Any]] = json.loads(out.getvalue())["runs"]
    assert len(runs) == 1
    return runs[0]


def test_file_logger_merges_a_step_and_reports_a_truncated_line(tmp_path: Path) -> None:
    full0 = {"timing/gen": 1200.25, "critic/score/mean": 0.4375, "critic/advantages/max": 1.2,
             "critic/advantages/min": -1.1, "actor/lr(1e-4)": 0.05, "actor_after/entropy_loss_eval": 2.125,
             "actor/grad_norm": 0.3, "val/test_score/all": 0.5}
    lines = _header() + [
        _record(0, {"val/test_score/libero_10": 0.5, "val/test_score/all": 0.5}, 10),  # validation first
        _record(0, full0, 20),  # the step's metrics repeat the validation keys
        _record(1, {"critic/score/mean": 0.5625, "actor/grad_norm": float("nan")}, 30),
        _record(2, {"critic/score/mean": 0.625}, 40)[:45],  # cut mid-JSON: line 6
        _record(3, {"critic/score/mean": 0.75}, 50),
        _record(3, {"critic/score/mean": 0.8125}, 60),  # resumed run re-logging step 3 with other values
    ]
    p = _write(tmp_path, lines)
    assert detect(p) is simplevla.FORMAT
    raw = simplevla.read(p)
    assert raw.frame["step"].to_list() == [0, 1, 3, 3]
    assert raw.frame["val/test_score/libero_10"][0] == 0.5 and raw.frame["timing/gen"][0] == 1200.25
    assert [(e.line, "cut or malformed" in e.message) for e in raw.errors] == [(6, True)]
    assert raw.metadata["log_started"] == "2025-07-03T10:00:00.000001"
    run = load(p)
    assert (run.format, run.trainer) == ("simplevla", "simplevla")
    # the two records of step 3 are one step: each metric their mean
    assert run.frame["reward_mean"].to_list() == [0.4375, 0.5625, (0.75 + 0.8125) / 2]
    assert run.frame["lr"][0] == pytest.approx(5e-6)  # logged as lr * 1e4
    assert run.frame["entropy"][0] == 2.125
    assert run.frame["adv_max"][0] - run.frame["adv_min"][0] == pytest.approx(2.3)
    assert np.isnan(run.frame["grad_norm"][1])  # a logged NaN stays NaN


def test_a_file_without_the_header_still_checks_lines_that_start_like_records(tmp_path: Path) -> None:
    lines = [_record(5, {"critic/score/mean": 0.5}), "2025-07-03T10:01:02.5\t6",  # cut after the step
             _record(7, {"critic/score/mean": 0.25})]
    p = _write(tmp_path, lines)
    assert detect(p) is simplevla.FORMAT
    raw = simplevla.read(p)
    assert raw.frame["step"].to_list() == [5, 7]
    assert [e.line for e in raw.errors] == [2]


def test_console_accuracy_lines_become_per_step_group_shares(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    batches = [[rng.binomial(G, p, size=8) for p in rng.uniform(0.05, 0.95, size=int(rng.integers(1, 4)))]
               for _ in range(6)]
    p = _console_run(tmp_path, batches)
    assert detect(p) is simplevla.FORMAT
    raw = simplevla.read(p)
    assert raw.errors == ()
    f = raw.frame
    assert f["step"].to_list() == list(range(6))
    for step, drawn in enumerate(batches):
        s = np.concatenate(drawn)
        assert f["accuracy_distribution/groups"][step] == len(s)
        assert f["accuracy_distribution/batches"][step] == len(drawn)
        assert f["accuracy_distribution/all_fail_frac"][step] == pytest.approx(np.mean(s == 0))
        assert f["accuracy_distribution/all_success_frac"][step] == pytest.approx(np.mean(s == G))
        assert f["accuracy_distribution/tied_frac"][step] == pytest.approx(_tied(s))
        # Rates print with 2 decimals (0.125 -> "0.12"), so the mean is exact to 0.005.
        assert f["accuracy_distribution/mean"][step] == pytest.approx(np.mean(s / G), abs=0.005)
    run = load(p)
    assert run.trainer == "simplevla"
    expected = [_tied(np.concatenate(d)) for d in batches]
    assert run.frame["zero_variance_group_frac"].to_list() == pytest.approx(expected)
    # The console prints 3 decimals (concat_dict_to_str).
    assert run.frame["reward_mean"].to_list() == [float(f"{np.mean(np.concatenate(d) / G):.3f}") for d in batches]


def test_validation_line_of_the_same_step_does_not_split_the_row(tmp_path: Path) -> None:
    s0, s1 = np.array([0, 8, 3, 5]), np.array([8, 8, 0, 2])
    lines = [
        PRE + "step:0 - val/test_score/all:0.500",  # val_before_train, logged at step 0
        _accuracy(s0.tolist()),
        _console(0, {"critic/score/mean": 0.5, "val/test_score/all": 0.5}),
        _accuracy(s1.tolist()),
        PRE + "step:1 - val/test_score/all:0.625",  # test_freq validation, logged before the metrics
        _console(1, {"critic/score/mean": 0.5625, "val/test_score/all": 0.625}),
        _accuracy([8, 8]),  # a step that never logged (the run was stopped)
    ]
    p = _write(tmp_path, lines)
    raw = simplevla.read(p)
    assert raw.frame["step"].to_list() == [0, 1]
    assert raw.frame["accuracy_distribution/tied_frac"].to_list() == pytest.approx([_tied(s0), _tied(s1)])
    assert raw.metadata["unattached_accuracy_lines"] == [7]
    assert raw.frame["critic/score/mean"].to_list() == [0.5, 0.562]  # as printed, 3 decimals


def test_a_truncated_accuracy_line_is_reported_and_the_rest_loads(tmp_path: Path) -> None:
    good = np.array([0, 0, 4, 8])
    lines = [
        _accuracy(good.tolist()),
        PRE + "Accuracy distribution: 0.00:3 0.2",  # cut mid-pair: line 2
        _console(0, {"critic/score/mean": 0.375}),
        _accuracy([8, 8, 1, 7]),
        _console(1, {"critic/score/mean": 0.75}),
    ]
    p = _write(tmp_path, lines)
    assert detect(p) is simplevla.FORMAT
    run = load(p)
    assert [e.line for e in run.errors] == [2] and "rate:count" in run.errors[0].message
    assert run.frame["step"].to_list() == [0, 1]
    assert run.frame["zero_variance_group_frac"].to_list() == pytest.approx([_tied(good), 0.5])


def test_rates_outside_zero_one_give_no_tied_share(tmp_path: Path) -> None:
    # A fork whose failure reward is -0.5 prints the same line with negative group means.
    lines = [PRE + "Accuracy distribution: -0.50:2 0.25:3 1.00:1", _console(0, {"critic/score/mean": 0.1})]
    raw = simplevla.read(_write(tmp_path, lines))
    assert raw.metadata["accuracy_rates_outside_unit"] is True
    assert "accuracy_distribution/tied_frac" not in raw.frame.columns
    assert raw.frame["accuracy_distribution/groups"][0] == 6


def _late_tied_run(tmp_path: Path, rng: np.random.Generator, degenerate: bool, name: str) -> tuple[Path, list[float]]:
    batches: list[list[np.ndarray]] = []
    for step in range(30):
        if degenerate and step >= 10:  # tasks become all-solved or all-failed: every group tied
            s = np.where(rng.random(16) < 0.8, G, 0)
        else:
            s = rng.binomial(G, rng.uniform(0.2, 0.8, size=16))
        batches.append([s[:8], s[8:]])
    return _console_run(tmp_path, batches, name), [_tied(np.concatenate(b)) for b in batches]


def test_degenerate_groups_fires_when_the_distribution_becomes_all_zero_or_one(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    p, tied = _late_tied_run(tmp_path, rng, degenerate=True, name="degenerate.log")
    assert min(tied[10:]) == 1.0 and max(tied[:10]) < 0.75  # the oracle's view of the fixture
    report = _scan(p)
    assert report["format"] == "simplevla"
    found = {f["id"]: f for f in report["findings"]}
    assert "DEGENERATE_GROUPS" in found
    assert found["DEGENERATE_GROUPS"]["evidence"]["metric"] == "zero_variance_group_frac"
    assert found["DEGENERATE_GROUPS"]["onset_step"] == 10  # the first step of the all-tied stretch


def test_degenerate_groups_stays_quiet_on_mixed_success(tmp_path: Path) -> None:
    rng = np.random.default_rng(12)
    p, tied = _late_tied_run(tmp_path, rng, degenerate=False, name="healthy.log")
    assert max(tied) < 0.75
    report = _scan(p)
    assert report["format"] == "simplevla"
    assert "DEGENERATE_GROUPS" not in {f["id"] for f in report["findings"]}
    assert "DEGENERATE_GROUPS" not in str(report["not_evaluable"])


def test_sniff_leaves_plain_verl_consoles_alone(tmp_path: Path) -> None:
    plain = _write(tmp_path, [_console(s, {"critic/score/mean": 0.5}) for s in range(5)], "verl.log")
    assert detect(plain) is verl_console.FORMAT
    # An accuracy line far past the 64 KiB head (a long config dump) is still found.
    noise = [PRE + f"config line {i} " + "x" * 100 for i in range(800)]
    deep = _write(tmp_path, noise + [_accuracy([0, 8, 4]), _console(0, {"critic/score/mean": 0.5})], "deep.log")
    assert deep.stat().st_size > 1 << 16
    assert detect(deep) is simplevla.FORMAT
    # Without the accuracy filter the actor's own entropy key still tells SimpleVLA-RL apart.
    unfiltered = _write(tmp_path, [_console(s, {"actor/lr(1e-4)": 0.05, "actor_after/entropy_loss_eval": 1.5})
                                   for s in range(2)], "unfiltered.log")
    assert detect(unfiltered) is simplevla.FORMAT
    run = load(unfiltered)
    assert run.frame["entropy"].to_list() == [1.5, 1.5] and run.frame["lr"].to_list() == pytest.approx([5e-6] * 2)
    jsonl = _write(tmp_path, [json.dumps({"step": 1, "data": {"critic/score/mean": 0.5}})], "verl.jsonl")
    assert detect(jsonl) is not simplevla.FORMAT


@pytest.mark.skipif(not REAL.is_dir(), reason=f"real logs not found at {REAL}")
def test_no_real_log_is_taken_for_a_simplevla_log() -> None:
    """None of the real runs is a SimpleVLA-RL run (no file holds an accuracy line or the header)."""
    for path in sorted(p for p in REAL.rglob("*") if p.is_file() and p.name != "SOURCE.md"):
        assert detect(path) is not simplevla.FORMAT, path
