"""Per-episode lines of step rewards (``Episode: N,r1,r2,...``): advcore.ingest.formats.episode_lines."""

from __future__ import annotations

import math
from pathlib import Path

from advcore.ingest import detect, load
from advcore.ingest.formats import episode_lines

from tests._real import corpus


def test_each_line_is_an_episode_whose_return_is_the_sum_of_its_rewards(tmp_path: Path) -> None:
    p = tmp_path / "rewards.csv"
    p.write_text("Episode: 0,0.5,0.25,-0.5,\n"
                 "Episode: 1,0.75,-1.0\n"
                 "Episode: 2,\n"                      # ended before its first step
                 "Episode: 3,oops,0.5,\n"             # not a reward: the line is lost, not the file
                 "Episode: 4,1e-1,0.9,-0.5,\n")
    assert detect(p) is episode_lines.FORMAT
    run = load(p)
    frame = run.frame.sort("step")
    assert frame["step"].to_list() == [0, 1, 4]  # episode 2 has no reward to give
    got = frame["reward_mean"].to_list()
    assert got[0] == 0.25 and got[1] == -0.25 and math.isclose(got[2], 0.5)
    assert [(e.line, "oops" in e.message) for e in run.errors] == [(4, True)]
    assert run.metadata["steps_per_episode"] == 2.5  # the median of 3, 2, 0 and 3 steps


def test_a_csv_table_is_not_episode_lines(tmp_path: Path) -> None:
    p = tmp_path / "progress.csv"
    p.write_text("episode,reward\n0,1.5\n1,2.5\n")
    assert detect(p) is not episode_lines.FORMAT


def test_real_airsim_drone_dqn_episode_lines() -> None:
    """h205-handwritten-dqn-airsim-drone: 2,000 lines ``Episode: i,<step rewards>``; the returns recomputed
    here from the file's text, line by line."""
    run_name = "h205-handwritten-dqn-airsim-drone-linear-qnet-lr1-freezes-on-one-4-step-trajectory"
    path = corpus(f"{run_name}/rewards_final.csv")
    expected = {}
    for line in path.read_text().splitlines():
        label, *cells = line.split(",")
        expected[int(label.split(":")[1])] = sum(float(c) for c in cells if c.strip())
    run = load(path)
    assert run.format == "episode_lines" and not run.errors
    got = dict(zip(run.frame["step"].to_list(), run.frame["reward_mean"].to_list(), strict=True))
    assert len(got) == len(expected) == 2000
    assert all(math.isclose(got[k], v, abs_tol=1e-9) for k, v in expected.items())


def test_a_long_line_that_is_almost_of_the_form_costs_that_line(tmp_path: Path) -> None:
    # 20,000 rewards and a stray word at the end: the line is reported (a backtracking pattern would try every
    # split of every number before giving up), the episodes around it are read
    p = tmp_path / "rewards.csv"
    p.write_text("Episode: 0,1.5,\nEpisode: 1,0.5,\nEpisode: 2," + ",".join(["123456789"] * 20_000) + ",oops\n"
                 "Episode: 3,2.5,\n")
    run = load(p)
    assert run.format == "episode_lines"
    assert run.frame.sort("step")["reward_mean"].to_list() == [1.5, 0.5, 2.5]
    assert [e.line for e in run.errors] == [3]
