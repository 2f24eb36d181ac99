"""Sample Factory console logs (sf_log.txt, or a W&B run's output.log). Expected values are read off
the lines by hand, or off the real log with plain string operations."""

from __future__ import annotations

from pathlib import Path

from advcore.ingest import detect, load
from advcore.ingest.formats import sample_factory
from tests._real import corpus


def _fps(frames: int) -> str:
    return (f"\x1b[36m[2025-07-01 20:33:51,016][166323] Fps is (10 sec: 0.0, 60 sec: 0.0, 300 sec: 0.0). "
            f"Total num frames: {frames}. Throughput: 0: 46.7. Samples: 160. Policy #0 lag: (min: -1.0, avg: -1.0, "
            f"max: -1.0)\x1b[0m\n")


def test_reports_share_a_frame_count_and_each_policy_is_a_column(tmp_path: Path) -> None:
    p = tmp_path / "sf_log.txt"
    p.write_text("[2025-07-01 20:33:41,116][166428] Env info: EnvInfo(num_agents=16)\n"
                 "[2025-07-01 20:33:47,587][166323] Avg episode reward: [(0, '-100.000')]\n"  # before any frame count
                 + _fps(0) + "[2025-07-01 20:33:51,017][166323] Avg episode reward: [(0, '-89.5'), (1, '3.0')]\n"
                 + _fps(0) + "[2025-07-01 20:33:56,017][166323] Avg episode reward: [(0, '-90.5'), (1, '5.0')]\n"
                 + _fps(4096) + "[2025-07-01 20:34:01,017][166323] Avg episode reward: [(0, '12.25')]\n"
                 + _fps(8192) + "[2025-07-01 20:34:06,017][166323] Avg episode reward: [(0, '12.5'), (1, \n")
    assert detect(p) is sample_factory.FORMAT
    run = load(p)
    assert run.trainer == "sample_factory" and run.frame["step"].to_list() == [0, 4096]
    assert run.frame["reward_mean"].to_list() == [-90.0, 12.25]
    assert [(e.line, "does not parse" in e.message) for e in run.errors] == [(10, True)]
    raw = sample_factory.read(p)  # the other policies stay as columns of the raw log
    assert raw.frame["avg_episode_reward/1"].to_list() == [4.0, None]


def test_real_wandb_output_log_of_a_sample_factory_run() -> None:
    path = corpus("h47-samplefactory-appo-aerialgym-nav-16env-learns/output.log")
    steps: list[int] = []
    rewards: dict[int, list[float]] = {}
    frames = None
    for line in path.read_text().splitlines():
        if "Total num frames: " in line:
            frames = int(line.split("Total num frames: ")[1].split(".")[0])
        elif "Avg episode reward: [(0, '" in line and frames is not None:
            if frames not in rewards:
                steps.append(frames)
            rewards.setdefault(frames, []).append(float(line.split("'")[1]))
    run = load(path)
    assert run.frame["step"].to_list() == steps and len(steps) > 800
    got = run.frame["reward_mean"].to_list()
    assert all(abs(g - sum(rewards[s]) / len(rewards[s])) < 1e-9 for g, s in zip(got, steps, strict=True))
