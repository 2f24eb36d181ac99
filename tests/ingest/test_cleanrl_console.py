from __future__ import annotations

import re
from pathlib import Path

import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import cleanrl_console

from tests._real import corpus

SYNTH = """\
wandb: Tracking run with wandb version 0.16.0
global_step=16, episodic_return=[12.]
global_step=40, episodic_return=[20.]
global_step=40, episodic_return=[30.]
SPS: 812
global_step=96, episodic_return=[-5.5], SPS=900
TrainOutput(global_step=158, training_loss=7.97e-05)
global_step=128, episodic_return=np.float32(41.0)
"""


def _write(tmp_path: Path, text: str, name: str = "output.log") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_one_row_per_step_episodes_of_a_step_averaged(tmp_path: Path) -> None:
    p = _write(tmp_path, SYNTH)
    assert detect(p) is cleanrl_console.FORMAT
    run = load(p)
    assert run.format == "cleanrl_console" and run.trainer == "cleanrl" and not run.errors
    assert run.frame["step"].to_list() == [16, 40, 96, 128]
    assert run.frame["reward_mean"].to_list() == [12.0, 25.0, -5.5, 41.0]
    assert run.metadata["episodes"] == 5 and run.metadata["steps_with_several_episodes"] == 1
    raw = cleanrl_console.read(p)
    assert raw.frame["SPS"].to_list() == [None, None, 900.0, None]


def test_purejaxrl_spelling_with_spaces(tmp_path: Path) -> None:
    text = ("global step=2000, episodic return=-500.0, episode length=500\n"
            "global step=2000, episodic return=-400.0, episode length=400\n"
            "global step=2852, episodic return=-212.0, episode length=212\n")
    p = _write(tmp_path, text)
    assert detect(p) is cleanrl_console.FORMAT
    raw = cleanrl_console.read(p)
    assert raw.frame["episode_length"].to_list() == [450.0, 212.0]
    assert load(p).frame["reward_mean"].to_list() == [-450.0, -212.0]


def test_a_truncated_line_costs_that_line_a_bad_value_that_value(tmp_path: Path) -> None:
    text = ("global_step=8, episodic_return=[1.]\n"
            "global_step=16, episodic_ret\n"
            "global_step=24, episodic_return=[oops], episodic_length=[7]\n"
            "global_step=32, episodic_return=[3.]\n")
    p = _write(tmp_path, text)
    run = load(p)
    assert len(run.errors) == 1 and run.errors[0].line == 2 and run.errors[0].path == str(p)
    assert "truncated" in run.errors[0].message
    assert run.frame["step"].to_list() == [8, 32]  # step 24 has no reward left: no canonical value
    raw = cleanrl_console.read(p)
    assert raw.frame["step"].to_list() == [8, 24, 32]
    assert raw.frame["episodic_length"].to_list() == [None, 7.0, None]


def test_crlf_and_logger_prefixes(tmp_path: Path) -> None:
    p = tmp_path / "output.log"
    p.write_bytes(b"INFO: global_step=8, episodic_return=[1.]\r\n[rank0]: global_step=16, episodic_return=[2.]\r\n")
    assert detect(p) is cleanrl_console.FORMAT
    run = load(p)
    assert not run.errors and run.frame["reward_mean"].to_list() == [1.0, 2.0]


def test_a_restarted_run_keeps_both_runs_as_phases(tmp_path: Path) -> None:
    p = _write(tmp_path, "global_step=8, episodic_return=1\nglobal_step=16, episodic_return=2\n"
                         "global_step=8, episodic_return=5\n")
    run = load(p)
    assert run.frame["step"].to_list() == [8, 16, 8] and run.frame["phase"].to_list() == [0, 0, 1]


def test_lines_without_a_return_are_not_episodes(tmp_path: Path) -> None:
    p = _write(tmp_path, "global_step=8, SPS=100\nTrainOutput(global_step=158, training_loss=0.1)\n")
    assert not cleanrl_console.sniff(p, p.read_text())
    raw = cleanrl_console.read(p)
    assert raw.frame.height == 0 and "no 'global_step=N" in raw.errors[0].message


def test_real_purejax_acrobot() -> None:
    path = corpus("h3-purejax-ppo-acrobot-learns/output.log")
    episodes = [(int(s), float(r)) for s, r in
                re.findall(r"^global step=(\d+), episodic return=(\S+)$", path.read_text(), re.M)]
    assert len(episodes) == 5876
    # Independently: consecutive episodes of one step, averaged.
    steps: list[int] = []
    sums: list[list[float]] = []
    for s, r in episodes:
        if steps and steps[-1] == s:
            sums[-1].append(r)
        else:
            steps.append(s)
            sums.append([r])
    run = load(path)
    assert run.format == "cleanrl_console" and run.trainer == "cleanrl" and not run.errors
    assert run.frame["step"].to_list() == steps
    assert run.frame["reward_mean"].to_list() == pytest.approx([sum(v) / len(v) for v in sums])
    assert run.metadata["episodes"] == len(episodes)
