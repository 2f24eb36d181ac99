"""Console readers accept any line prefix a logger puts before a record: timestamps, levels and
logger names, ranks. Expected values are read off the lines by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from advcore.ingest import load

PREFIXES = [
    "2026-05-27 11:57:00 ",
    "2026-05-27 11:57:00,123 - INFO - ",
    "[2026-05-27 11:57:00] [INFO] ",
    "INFO:root:",
    "INFO:__main__:",
    "[rank0]: ",
    "(TaskRunner pid=2021) 2026-05-27T11:57:00Z | ",
    "2017-06-30 17:30:11.098692 EDT | ",
    "2025-06-23 18:39:58,825 - integration.main_trainer - INFO - ",
    "[I 230118 17:47:41 utils:138] ",
]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_verl_console_step_lines(tmp_path: Path, prefix: str) -> None:
    p = tmp_path / "train.log"
    p.write_text(f"{prefix}starting\n"
                 f"{prefix}step:0 - critic/score/mean:0.25 - actor/entropy:1.5\n"
                 f"{prefix}step:1 - critic/score/mean:0.5 - actor/entropy:1.25\n")
    run = load(p)
    assert run.format == "verl_console" and run.errors == ()
    assert run.frame["step"].to_list() == [0, 1]
    assert run.frame["reward_mean"].to_list() == [0.25, 0.5]
    assert run.frame["entropy"].to_list() == [1.5, 1.25]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_trl_console_dicts(tmp_path: Path, prefix: str) -> None:
    p = tmp_path / "train.log"
    p.write_text(f"{prefix}{{'loss': 0.0, 'reward': 0.5, 'reward_std': 0.25, 'epoch': 0.1}}\n"
                 f"{prefix}{{'loss': 0.0, 'reward': 0.75, 'reward_std': 0.125, 'epoch': 0.2}}\n")
    run = load(p)
    assert run.format == "trl_console" and run.errors == ()
    assert run.frame["reward_mean"].to_list() == [0.5, 0.75]
    assert run.frame["reward_std"].to_list() == [0.25, 0.125]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_openrlhf_global_step_lines(tmp_path: Path, prefix: str) -> None:
    p = tmp_path / "train.log"
    p.write_text(f"{prefix}Global step 1: {{'kl': 0.0, 'reward': 0.5}}\n"
                 f"{prefix}Global step 2: {{'kl': 0.125, 'reward': 0.75}}\n")
    run = load(p)
    assert run.format == "openrlhf" and run.errors == ()
    assert run.frame["step"].to_list() == [1, 2]
    assert run.frame["kl"].to_list() == [0.0, 0.125]


def test_a_key_that_ends_in_step_is_not_a_record(tmp_path: Path) -> None:
    # `global_step:3` and `timing/step:1.5` are keys of a step line, not a second record marker
    p = tmp_path / "train.log"
    p.write_text("2026-05-27 11:57:00 step:3 - global_step:3 - timing/step:1.5 - critic/score/mean:0.5\n")
    run = load(p)
    assert run.frame["step"].to_list() == [3]
    assert run.frame["reward_mean"].to_list() == [0.5]


def test_simplevla_accuracy_lines_with_timestamps(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text("2026-05-27 11:57:00 Accuracy distribution: 0.00:3 0.50:2 1.00:3\n"
                 "2026-05-27 11:57:01 step:1 - actor/pg_loss:0.1 - actor_after/entropy_loss_train:0.5\n"
                 "2026-05-27 11:58:00 Accuracy distribution: 0.00:4 1.00:4\n"
                 "2026-05-27 11:58:01 step:2 - actor/pg_loss:0.2 - actor_after/entropy_loss_train:0.4\n")
    run = load(p)
    assert run.format == "simplevla" and run.errors == ()
    # step 1: 6 of 8 task groups all-fail or all-success; step 2: all 8
    assert run.frame["zero_variance_group_frac"].to_list() == [0.75, 1.0]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_printed_progress_lines(tmp_path: Path, prefix: str) -> None:
    p = tmp_path / "train.log"
    p.write_text("".join(f"{prefix}Episode {e}, Avg reward: {e / 4}\n" for e in range(1, 5)))
    run = load(p)
    assert run.format == "printed" and run.errors == ()
    assert run.frame["step"].to_list() == [1, 2, 3, 4]
    assert run.frame["reward_mean"].to_list() == [0.25, 0.5, 0.75, 1.0]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_table_of_one_pair_per_line(tmp_path: Path, prefix: str) -> None:
    # rllab/misc/logger.py dump_tabular, as an rllab DDPG run printed it (keys then blanks then the value)
    rows = [(10, -605.739, 0.0783), (11, -598.495, 0.0332), (12, 410.5, 0.1)]
    p = tmp_path / "console"
    p.write_text("".join(f"{prefix}{'-' * 23}  {'-' * 12}\n{prefix}Epoch  {e:>20}\n{prefix}Iteration  {e:>16}\n"
                         f"{prefix}AverageReturn  {r:>14}\n{prefix}AverageQLoss  {q:>15}\n"
                         f"{prefix}[exp_0001] epoch #{e + 1} | Training started\n" for e, r, q in rows))
    run = load(p)
    assert run.errors == ()
    assert run.frame["step"].to_list() == [10, 11, 12]
    assert run.frame["reward_mean"].to_list() == [-605.739, -598.495, 410.5]
    assert run.frame["value_loss"].to_list() == [0.0783, 0.0332, 0.1]


def _log_metrics(logger: object, it: int, reward: float, kl: float) -> None:
    logger.info(f"iter={it:04d} reward={reward:.4f} kl_approx={kl:.4f} clip_fraction=0.1")  # type: ignore[attr-defined]


@pytest.mark.parametrize("colorize", [False, True])
def test_loguru_default_format(tmp_path: Path, colorize: bool) -> None:
    # lines written by loguru itself (its default format: time | level | name:function:line - message),
    # as a TorchRL PPO notebook logs its iterations (h99-torchrl-hppo-satellite-mac-*)
    loguru = pytest.importorskip("loguru", reason="loguru is a test dependency (pip install -e '.[test]')")
    p = tmp_path / "train.log"
    logger = loguru.logger
    sink = logger.add(p, colorize=colorize)
    try:
        logger.info("Starting notebook PPO run")
        for it, (reward, kl) in enumerate([(-12.8771, 531.875), (-9.5, 2.25), (3.25, 0.0125), (7.5, 0.01)]):
            _log_metrics(logger, it, reward, kl)
    finally:
        logger.remove(sink)
    text = p.read_text()
    assert ("\x1b[" in text) == colorize and ":_log_metrics:" in text.replace("\x1b[0m", "").replace("\x1b[36m", "")
    run = load(p)
    assert run.format == "printed" and run.errors == ()
    assert run.frame["step"].to_list() == [0, 1, 2, 3]
    assert run.frame["reward_mean"].to_list() == [-12.8771, -9.5, 3.25, 7.5]
    assert run.frame["kl_step"].to_list() == [531.875, 2.25, 0.0125, 0.01]
