"""trlx's console: the training bar's loss description and the evaluation tables' titles, written here by tqdm and
rich themselves as trlx drives them (trlx/trainer/accelerate_base_trainer.py ``learn`` and ``evaluate``)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from advcore.ingest import detect, load
from tests._real import corpus


def _trlx_console(path: Path, iterations: int, interval: int) -> tuple[list[float], dict[int, float]]:
    """A trlx-like console: an evaluation before the first iteration and after every ``interval``, each before the
    bar's update, and per iteration the description set, then the bar updated. Returns the value losses, rounded as
    printed, and the evaluations' rewards by the iteration they were taken at."""
    out = io.StringIO()
    out.write("[RANK 0] Starting training\n")
    losses, rewards = [], {}

    def evaluate(iteration: int) -> None:
        reward = round(-0.3 + 0.01 * iteration, 3)
        rewards[iteration] = reward
        table = Table("prompt", "output", "reward", title=f"Evaluation #{len(rewards) - 1} reward/mean: {reward}")
        table.add_row("a post", "a summary", str(reward))
        Console(file=out, width=120).print(table)

    evaluate(0)
    bar = tqdm(total=iterations, file=out, mininterval=0)
    for i in range(1, iterations + 1):
        value_loss = 0.7 + 0.013 * (i % 7)
        losses.append(round(value_loss, 2))
        bar.set_description(f"[losses/total_loss: {0.1 * value_loss:.2f} | losses/value_loss: {value_loss:.2f}]")
        if i % interval == 0:
            evaluate(i)
        bar.update()
    bar.close()
    path.write_text(out.getvalue())
    return losses, rewards


def test_the_training_bar_and_the_evaluation_titles(tmp_path: Path) -> None:
    path = tmp_path / "slurm-1.out"
    losses, rewards = _trlx_console(path, iterations=60, interval=20)
    fmt = detect(path)
    assert fmt is not None and fmt.name == "trlx_console"
    run = load(path)
    assert run.trainer == "trlx" and run.errors == ()
    assert run.frame["step"].to_list() == list(range(61))
    got = dict(zip(run.frame["step"].to_list(), run.frame["value_loss"].to_list(), strict=True))
    assert [got[i] for i in range(1, 61)] == pytest.approx(losses)
    evaluated = run.frame.drop_nulls("reward_mean")
    assert dict(zip(evaluated["step"].to_list(), evaluated["reward_mean"].to_list(), strict=True)) == rewards


def test_real_trlx_ppo_run_whose_evaluation_reward_collapsed() -> None:
    # melodylizx/analysis_rlhf_project's trlx PPO on GPT-J (TL;DR, a coverage-biased reward model): 17 evaluation
    # titles every 200 iterations, the reward up to 1.14 at iteration 1,800 and down to -0.939 at the end
    path = corpus("h457-trlx-ppo-gptj-tldr-summarize-coverage-biased-reward-model-3200-iterations-eval-reward-"
                  "minus-0.29-to-1.14-then-collapses-to-minus-1.44-policy-loss-spike-921-gibberish-outputs/"
                  "coverage-3662223.out")
    text = path.read_text(errors="replace")
    titles = [float(v) for v in re.findall(r"Evaluation #\d+ reward/mean: (\S+)", text)]
    counts = {int(n) for n in re.findall(r"\[losses/[^\]]*\]:\s*\d+%\|[^|]*\|\s*(\d+)/3200", text)}
    run = load(path)
    assert run.format == "trlx_console" and run.trainer == "trlx"
    evaluated = run.frame.drop_nulls("reward_mean")
    assert evaluated["reward_mean"].to_list() == titles and len(titles) == 17
    assert evaluated["step"].to_list() == [200 * k for k in range(17)]
    assert run.frame.drop_nulls("value_loss").height == len(counts)
