"""Every console reader parses lines up to a configurable length; a longer line is an error of its run
naming the line, and the other lines are read (advcore scan --max-line-length, load(max_line=))."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advcore.cli import main
from advcore.ingest import load
from advcore.ingest._text import MAX_LINE

LONG = "9" * 2000

#: (format, lines before, the long line, lines after, expected steps)
CASES = {
    "verl_console": (["step:1 - critic/score/mean:0.5"], f"step:2 - critic/score/mean:0.{LONG}",
                     ["step:3 - critic/score/mean:0.7"], [1, 3]),
    "openrlhf": (["Global step 1: {'reward': 0.5}"], f"Global step 2: {{'reward': 0.{LONG}}}",
                 ["Global step 3: {'reward': 0.7}"], [1, 3]),
    "trl_console": (["{'loss': 0.0, 'reward': 0.5, 'epoch': 0.1}"], f"{{'loss': 0.0, 'reward': 0.{LONG}, 'epoch': 0.2}}",
                    ["{'loss': 0.0, 'reward': 0.7, 'epoch': 0.3}"], [1, 2]),
    "cleanrl_console": (["global_step=8, episodic_return=[10.]"], f"global_step=16, episodic_return=[{LONG}.]",
                        ["global_step=24, episodic_return=[12.]"], [8, 24]),
    "sample_factory": (["Fps is (10 sec: 0.0). Total num frames: 0. Throughput: 0: 1.0.",
                        "Avg episode reward: [(0, '1.5')]"],
                       "Avg episode reward: [" + ", ".join(f"({i}, '1.5')" for i in range(200)) + "]",
                       ["Fps is (10 sec: 0.0). Total num frames: 4096. Throughput: 0: 1.0.",
                        "Avg episode reward: [(0, '2.5')]"], [0, 4096]),
    "halos_console": (["train stats after 64 examples: {'loss/policykl': '0.5', 'counters/updates': 4}"],
                      f"train stats after 128 examples: {{'loss/policykl': '0.{LONG}', 'counters/updates': 8}}",
                      ["train stats after 192 examples: {'loss/policykl': '0.7', 'counters/updates': 12}"], [64, 192]),
    "printed": ([f"Episode {e}, Avg reward: {e}.5" for e in range(1, 4)], f"Episode 4, Avg reward: 0.{LONG}",
                ["Episode 5, Avg reward: 5.5"], [1, 2, 3, 5]),
}


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_a_line_longer_than_the_limit_costs_itself(tmp_path: Path, fmt: str) -> None:
    before, long, after, steps = CASES[fmt]
    p = tmp_path / "train.log"
    p.write_text("\n".join([*before, long, *after]) + "\n")
    run = load(p, format=fmt, max_line=1000)
    assert run.frame["step"].to_list() == steps
    assert [(e.line, f"a line of {len(long):,} characters" in e.message) for e in run.errors] == \
        [(len(before) + 1, True)]
    assert load(p, format=fmt).errors == ()  # 2,000 characters are well under the default limit


def test_sb3_and_simplevla_consoles_report_a_long_line(tmp_path: Path) -> None:
    table = "-" * 30 + "\n| rollout/           |          |\n|    ep_rew_mean     | {r}     |\n" \
            "| time/              |          |\n|    total_timesteps | {t}      |\n" + "-" * 30 + "\n"
    p = tmp_path / "sb3.log"
    p.write_text(table.format(r=1.5, t=100) + "x" * 1500 + "\n" + table.format(r=2.5, t=200))
    run = load(p, format="sb3_console", max_line=1000)
    assert run.frame["step"].to_list() == [100, 200] and [e.line for e in run.errors] == [7]
    q = tmp_path / "vla.log"
    q.write_text("step:1 - actor/pg_loss:0.1\n" + "step:2 - actor/pg_loss:0." + LONG + "\nstep:3 - actor/pg_loss:0.3\n")
    assert [e.line for e in load(q, format="simplevla", max_line=1000).errors] == [2]


def test_the_cli_option_sets_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "train.log"
    p.write_text("".join(f"step:{i} - critic/score/mean:0.{'5' * (3000 if i == 2 else 1)}\n" for i in range(1, 5)))
    assert main(["scan", "--format", "json", "--max-line-length", "2000", str(p)]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    long = len("step:2 - critic/score/mean:0.") + 3000
    assert run["steps"] == 3 and len(run["errors"]) == 1 and f":2: a line of {long:,} characters" in run["errors"][0]
    assert main(["scan", "--format", "json", str(p)]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["steps"] == 4 and run["errors"] == [] and MAX_LINE == 262144


def test_the_documented_default_is_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    main(["scan", "--help"])
    assert f"[default: {MAX_LINE}]" in " ".join(capsys.readouterr().out.split())
    readme = Path(__file__).resolve().parents[2] / "README.md"
    assert f"longer than {MAX_LINE:,} characters" in " ".join(readme.read_text().split())
