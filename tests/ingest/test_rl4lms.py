"""RL4LMs' experiment log (``Rollout Info: {...}`` / ``Training Info: {...}``). Expected values are
read off the lines by hand, or off the real log with :func:`ast.literal_eval`."""

from __future__ import annotations

import ast
from pathlib import Path

from advcore.ingest import detect, load
from advcore.ingest.formats import rl4lms
from tests._real import corpus

_ROLL = "2023-01-27 12:27:00,414 [INFO] Rollout Info: {{'rollout_info/ep_rew': {r}, 'rollout_info/kl_div_mean': {kl}}}\n"
_TRAIN = "2023-01-27 12:28:38,742 [INFO] Training Info: {{'ppo/entropy_loss': {e}, 'ppo/approx_kl': 0.02}}\n"
_TEST = "2023-01-27 12:26:45,028 [INFO] test metrics: {{'epoch': {e}, 'metrics': {{'lexical/bleu': 0.07}}}}\n"


def test_iterations_join_their_training_info_and_the_longest_launch_is_read(tmp_path: Path) -> None:
    p = tmp_path / "log.txt"
    p.write_text(
        _TEST.format(e=0) + _ROLL.format(r=0.3, kl=0.0)  # an aborted launch: one rollout, no update
        + _TEST.format(e=0) + _ROLL.format(r=0.5, kl=0.0) + _TRAIN.format(e=-2.0)
        + _ROLL.format(r=0.6, kl=0.01) + _TRAIN.format(e=-1.5)
        + "2023-01-27 13:00:00,000 [INFO] val metrics: {'epoch': 1, 'metrics': {}}\n"
        + _TEST.format(e=2) + _ROLL.format(r=0.7, kl=0.02)  # resumed at iteration 2: continues
        + "2023-01-27 13:10:00,000 [INFO] Rollout Info: {'rollout_info/ep_rew': 0.8, 'rollout_inf\n")
    assert detect(p) is rl4lms.FORMAT
    run = load(p)
    assert run.trainer == "rl4lms" and run.frame["step"].to_list() == [1, 2, 3]
    assert run.frame["reward_mean"].to_list() == [0.5, 0.6, 0.7]
    assert run.frame["entropy"].to_list() == [2.0, 1.5, None]  # minus the entropy loss
    assert run.metadata["launches"] == 2 and run.metadata["iterations"] == 3
    assert [e.line for e in run.errors] == [11]


def test_real_rl4lms_log_reads_its_last_launch() -> None:
    path = corpus("h88-rl4lms-ppo-t5small-email-writer-console/log.txt")
    rollouts, trainings = [], []
    for line in path.read_text().splitlines():
        if " Rollout Info: " in line:
            rollouts.append(ast.literal_eval(line.split(" Rollout Info: ", 1)[1]))
        elif " Training Info: " in line:
            trainings.append(ast.literal_eval(line.split(" Training Info: ", 1)[1]))
    assert len(rollouts) == 56 and len(trainings) == 42  # the corpus entry's counts: 13 aborted launches, then 43
    run = load(path)
    assert run.errors == () and run.metadata["launches"] == 14
    assert run.frame["reward_mean"].to_list() == [r["rollout_info/ep_rew"] for r in rollouts[13:]]
    assert run.frame["kl_step"].drop_nulls().to_list() == [t["ppo/approx_kl"] for t in trainings]
