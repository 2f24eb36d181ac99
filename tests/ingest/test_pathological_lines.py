"""Long runs of spaces, digits or separators inside a line are read like any other line: the good
lines of the file are kept and the odd line costs at most itself. (Their reading time, which was
quadratic in the line's length, is measured by bench/pathological_lines.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from advcore.ingest import load
from advcore.ingest._text import line_limit
from advcore.ingest.formats import cleanrl_console, trl_rollouts_md, verl_console

N = 1 << 18  # 256 KiB: minutes per line for the quadratic expressions these replace


def test_verl_console_pairs_around_a_long_run_of_spaces(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text("step:0 - critic/score/mean:0.25\n"
                 "step:1 - critic/score/mean:0.5 " + " " * N + "- actor/grad_norm:2.0\n"
                 "step:2 - critic/score/mean:0.75" + " " * N + "\n")
    with line_limit(4 * N):  # parsed, not skipped as too long: the expressions must stay linear
        raw = verl_console.read(p)
    assert raw.frame["critic/score/mean"].to_list() == [0.25, 0.5, 0.75]
    assert raw.frame["actor/grad_norm"].to_list() == [None, 2.0, None]
    assert not raw.errors


def test_verl_console_line_of_separators_costs_nothing_else(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text("step:0 - critic/score/mean:0.25\nstep:1 - " + " - " * (N // 3) + "\n"
                 "step:2 - critic/score/mean:0.5\n")
    raw = verl_console.read(p)
    assert [s for s, v in zip(raw.frame["step"].to_list(), raw.frame["critic/score/mean"].to_list(), strict=True)
            if v is not None] == [0, 2]


def test_cleanrl_line_with_a_long_run_of_spaces(tmp_path: Path) -> None:
    p = tmp_path / "out.log"
    p.write_text("global_step=1, episodic_return=-500.0\n"
                 "global_step=2, episodic_return=" + " " * N + "\n"
                 "global_step=3, episodic_return=-100.0" + " " * N + "\n")
    run = load(p, format=cleanrl_console.NAME, max_line=4 * N)
    assert run.frame.filter(run.frame["reward_mean"].is_not_null())["step"].to_list() == [1, 3]


@pytest.mark.parametrize("text, number", [("1" * N + " " * N + "z", False), ("-" + "1" * N + ".5e3", True)])
def test_rollout_table_number_check_is_linear_and_right(text: str, number: bool) -> None:
    assert (trl_rollouts_md._NUMBER.match(text) is not None) is number
