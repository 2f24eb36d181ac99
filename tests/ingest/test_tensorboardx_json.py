"""tensorboardX's scalar export (``SummaryWriter.export_scalars_to_json``): advcore.ingest.formats.tensorboardx_json.
The fixtures are written by tensorboardX itself, the way on-policy MAPPO's runners log."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import tensorboardx_json

from tests._real import corpus

tensorboardX = pytest.importorskip("tensorboardX")


def _mappo_export(folder: Path, rewards: dict[int, list[float]], entropy: list[float]) -> Path:
    """A summary.json as on-policy's separated runner writes it: ``add_scalars(agent_k, {agent_k: v}, step)``
    per agent and metric, then ``export_scalars_to_json`` (runner/separated/base_runner.py)."""
    writer = tensorboardX.SummaryWriter(str(folder / "logs"))
    for i, step in enumerate(range(10, 10 + 50 * len(entropy), 50)):
        for agent, values in rewards.items():
            for k, v in ((f"agent{agent}/average_episode_rewards", values[i]),
                         (f"agent{agent}/dist_entropy", entropy[i]), (f"agent{agent}/policy_loss", -0.02),
                         (f"agent{agent}/actor_grad_norm", 0.5 * (agent + 1) * (i + 1))):
                writer.add_scalars(k, {k: v}, step)
    out = folder / "logs" / "summary.json"
    writer.export_scalars_to_json(str(out))
    writer.close()
    return out


def test_mappo_separated_runner_export_reads_per_agent_and_team_reward(tmp_path: Path) -> None:
    rewards = {0: [1.0, 2.0, 4.0, 8.0, 6.0, 5.0], 1: [3.0, 2.0, 0.0, -2.0, 1.0, 0.5]}
    entropy = [0.69, 0.6, 0.5, 0.3, 0.2, 0.1]
    path = _mappo_export(tmp_path, rewards, entropy)
    assert detect(path) is tensorboardx_json.FORMAT
    run = load(path)
    assert run.format == "tensorboardx_json" and run.trainer == "on_policy" and not run.errors
    frame = run.frame.sort("step")
    assert frame["step"].to_list() == [10, 60, 110, 160, 210, 260]
    assert frame["reward/agent0"].to_list() == rewards[0]
    assert frame["reward/agent1"].to_list() == rewards[1]
    # the separated runner logs no team reward: it is the agents' mean
    assert frame["reward_mean"].to_list() == [(a + b) / 2 for a, b in zip(rewards[0], rewards[1], strict=True)]
    assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(frame["entropy/agent1"].to_list(), entropy, strict=True))
    assert run.sources["reward/agent0"] == "agent0/average_episode_rewards"
    # and no team gradient norm: the agents' mean, (0.5 + 1.0) / 2 x (step index + 1)
    assert frame["grad_norm"].to_list() == [0.75 * (i + 1) for i in range(6)]


def test_a_series_that_is_not_points_costs_that_series(tmp_path: Path) -> None:
    p = tmp_path / "summary.json"
    p.write_text(json.dumps({"runs/a/average_episode_rewards": [[1.0, 0, 1.5], [2.0, 1, 2.5]],
                             "runs/a/dist_entropy": [[1.0, 0, 0.7], "oops"],
                             "runs/a/actor_grad_norm": [[1.0, 0, 0.3], [2.0, 1, 0.2]]}))
    run = load(p)
    assert run.format == "tensorboardx_json" and run.trainer == "on_policy"
    assert run.frame.sort("step")["reward_mean"].to_list() == [1.5, 2.5]
    assert "entropy" not in run.frame.columns
    assert len(run.errors) == 1 and "dist_entropy" in run.errors[0].message


def test_columnar_json_is_not_a_scalar_export(tmp_path: Path) -> None:
    p = tmp_path / "curves.json"
    p.write_text(json.dumps({"rewards": [1.0, 2.0], "kl": [0.1, 0.2]}))
    assert detect(p) is not tensorboardx_json.FORMAT


def test_real_light_mappo_summary_json() -> None:
    """h212-light-mappo-separated-6-agent-mec-two-agents-collapse-to-zero: 48 series of 6 agents, 200 training
    points (steps 10..9960) and 100 evaluation points each; the team reward recomputed here from the file."""
    path = corpus("h212-light-mappo-separated-6-agent-mec-two-agents-collapse-to-zero/summary.json")
    doc = json.loads(path.read_text())
    per_agent = {int(k.split("/agent")[1].split("/")[0]): dict((p[1], p[2]) for p in v)
                 for k, v in doc.items() if k.endswith("/average_episode_rewards") and "eval_" not in k}
    run = load(path)
    assert run.format == "tensorboardx_json" and run.trainer == "on_policy" and not run.errors
    got = dict(zip(run.frame["step"].to_list(), run.frame["reward_mean"].to_list(), strict=True))
    assert len(per_agent) == 6 and len(got) == 200
    for step in (10, 2010, 9960):
        assert math.isclose(got[step], sum(per_agent[a][step] for a in range(6)) / 6, rel_tol=1e-12)
    # agent5's return, hand-read from the file: 1.9 at step 10, 342 at its peak (step 2010)
    agent5 = dict(zip(run.frame["step"].to_list(), run.frame["reward/agent5"].to_list(), strict=True))
    assert round(agent5[10], 1) == 1.9 and round(agent5[2010]) == 342
