from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from advcore.detectors import run_detectors
from advcore.ingest import detect, load
from advcore.ingest.formats import trl_console

from tests._real import corpus, real

SYNTH = (
    "Loading model...\n"
    "\r  0%|          | 0/3 [00:00<?, ?it/s]\r 33%|###       | 1/3\n"
    "Updated tokens: {'bos_token_id': None, 'pad_token_id': 1}.\n"
    "{'loss': '0.1', 'grad_norm': '0.5', 'reward': '0.25', 'reward_std': '0.1', 'epoch': '0.1'}\r\n"
    "\r 66%|######    | 2/3 [00:02<00:01]{'loss': 0.2, 'grad_norm': 0.4, 'kl': 0.01, 'epoch': 0.2}\n"
    "some other text line\n"
    "{'loss': '0.3', 'grad_norm': '0.3', 'reward': '0.75', 'reward_std': '0', 'epoch': '0.3'}\n"
    "{'eval_loss': 0.9, 'epoch': 0.3}\n"
    "{'train_runtime': '12.5', 'train_loss': '0.2', 'epoch': '0.3'}\n"
)


def test_synthetic_console(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text(SYNTH)
    assert detect(p) is trl_console.FORMAT
    run = load(p)
    assert run.format == "trl_console" and run.trainer == "trl" and not run.errors
    assert run.steps == 3
    assert run.frame["step"].to_list() == [1, 2, 3]
    assert run.frame["reward_mean"].to_list() == [0.25, None, 0.75]
    assert run.frame["grad_norm"].to_list() == [0.5, 0.4, 0.3]
    assert run.frame["kl"].to_list() == [None, 0.01, None]
    assert run.metadata["summary"]["train_runtime"] == 12.5
    assert run.metadata["eval_dicts_skipped"] == 1


def test_a_file_cut_inside_its_first_dict_says_so(tmp_path: Path) -> None:
    # the first line is the end of a dict whose start was cut off; the "Updated tokens" dict of words is not
    p = tmp_path / "run.log"
    p.write_text("d_norm': 0.5, 'reward': 0.2, 'epoch': 0.05}\n" + SYNTH)
    run = load(p)
    assert [e.line for e in run.errors] == [1] and "start is not in the file" in run.errors[0].message
    assert run.frame["reward_mean"].to_list() == [0.25, None, 0.75]  # the rest is read as before


def test_a_summary_carrying_grpo_step_metrics_is_the_last_row(tmp_path: Path) -> None:
    # GRPOTrainer.log merges the means of the steps since the last log into the final summary too
    p = tmp_path / "run.log"
    p.write_text("{'loss': 0.05, 'reward': 0.15, 'rewards/accuracy_reward/mean': 0.0, 'frac_reward_zero_std': 0.8, "
                 "'epoch': 0.71}\n"
                 "{'train_runtime': 133.8, 'train_loss': 0.034, 'reward': 0.125, 'rewards/accuracy_reward/mean': 0.0, "
                 "'frac_reward_zero_std': 1.0, 'epoch': 1.0}\n")
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [0.15, 0.125]
    assert run.frame["zero_variance_group_frac"].to_list() == [0.8, 1.0]
    assert "train_runtime" not in run.frame.columns and run.metadata["summary"]["train_loss"] == 0.034
    assert run.metadata["last_row_from_summary"] is True


def test_real_console_whose_summary_carries_the_last_steps() -> None:
    path = corpus("h87-medicalgpt-trl-grpo-qlora-medqa-accuracy-verifier-dead/grpo_log.txt")
    dicts = [line for line in path.read_text().splitlines() if line.startswith("{'")]
    assert len(dicts) == 2 and "'train_runtime'" in dicts[1]  # one log at step 10, then the summary
    run = load(path)
    assert run.frame["reward_mean"].to_list() == [0.15, 0.125]  # read off the two lines
    assert run.frame["reward/accuracy_reward"].to_list() == [0.0, 0.0]


def test_steps_are_the_training_bars_counter_before_each_dict(tmp_path: Path) -> None:
    # a terminal capture: an eval bar of 2, the training bar of 30 redrawn with \r, a dict every 10 steps
    bar = "".join(f"\r{k * 100 // 30}%|##| {k}/30 [00:{k:02d}<00:30,  1.00s/it]" for k in range(1, 11))
    text = (" 50%|##| 1/2 [00:01<00:01]\r100%|##| 2/2 [00:02<00:00]\n" + bar + "\n{'loss': 0.1, 'reward': 0.2}\n"
            + bar.replace("/30 [00:", "/30 [01:").replace("| 1/30", "| 11/30") + "\r| 20/30 [00:20<00:10]\n"
            "{'loss': 0.1, 'reward': 0.3}\n\r| 30/30 [00:30<00:00]{'loss': 0.2, 'reward': 0.4}\n")
    p = tmp_path / "run.log"
    p.write_text(text)
    raw = trl_console.read(p)
    assert raw.frame["step"].to_list() == [10, 20, 30] and raw.metadata["step_from"] == "progress bar"
    # a counter that goes back (a second training's bar) leaves the order of the dicts
    p.write_text(text + "| 5/30 [00:05<00:25]\n{'loss': 0.3, 'reward': 0.5}\n")
    raw = trl_console.read(p)
    assert raw.metadata["step_from"] == "order of the dicts" and "step" not in raw.frame.columns


def test_real_terminal_capture_is_dated_in_optimizer_steps() -> None:
    # run_terminal.md: 49 dicts, each after the bar's N/29790 with N = 10, 20, 30 ... 490 (logging_steps 10)
    run = load(real("trl-dapo-vlm-120531/run_terminal.md"))
    steps = run.frame["step"].to_list()
    assert len(steps) == 49 and steps[:3] == [10, 20, 30] and steps[-1] == 490


def test_truncated_line_is_an_error_with_its_line_number(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text("{'loss': '0.1', 'reward': '0.5'}\nnoise\n{'loss': '0.2', 'reward': '0.\n")
    run = load(p)
    assert run.steps == 1
    assert len(run.errors) == 1 and run.errors[0].line == 3
    assert "truncated" in run.errors[0].message


def test_no_metric_dicts_and_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text("{'loss': 'x\n")
    run = load(p)
    assert run.steps == 0 and run.errors
    e = tmp_path / "empty.log"
    e.write_text("")
    assert load(e).errors[0].message == "the file is empty"


def test_never_evaluates_code(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text("{'loss': __import__('os').getcwd()}\n{'loss': '1', 'reward': '2'}\n")
    run = load(p)
    assert run.steps == 1 and run.errors[0].line == 1


@pytest.mark.parametrize(
    ("rel", "steps", "first", "last"),
    [
        ("grpo-dynamics-csd-pilot-dead/log_const_seed42.txt", 50, 0.0, 0.0),
        ("grpo-dynamics-gate2-rho1-seed42/gate2_rho1.00_seed42.log", 200, 0.125, None),
        ("trl-dapo-vlm-120531/run_terminal.md", 49, 1.75, None),
        ("trl-dapo-vlm-181457/run_terminal.md", 5, 1.875, None),  # 4 logs + the summary of steps 41-43
    ],
)
def test_real_console_logs(rel: str, steps: int, first: float, last: float | None) -> None:
    run = load(real(rel))
    assert run.format == "trl_console" and not run.errors
    assert run.steps == steps
    assert run.frame["reward_mean"][0] == pytest.approx(first)
    if last is not None:
        assert run.frame["reward_mean"][-1] == pytest.approx(last)
    assert run.has("reward_mean", "reward_std", "grad_norm")


def test_real_budget_router_sparse_reward_lines() -> None:
    run = load(real("budget-router-grpo-probe/grpo_probe_0.6b_n8_t12_explore.log"))
    assert run.steps == 30
    rewards = run.frame["reward_mean"]
    assert rewards.drop_nulls().len() == 4  # reward keys only on every 8th line
    assert rewards[0] == pytest.approx(0.3101)
    assert run.frame["zero_variance_group_frac"].drop_nulls().to_list() == [0.0] * 4
    assert run.has("entropy", "kl", "clip_frac")


def test_an_sft_warm_up_before_the_rl_run_is_a_phase_of_its_own(tmp_path: Path) -> None:
    sft = [f"{{'loss': {2.0 - i / 10}, 'grad_norm': 1.0, 'learning_rate': 2e-05, 'epoch': {0.5 * (i + 1)}}}"
           for i in range(4)]
    grpo = [f"{{'loss': 0.0, 'reward': {0.5 + i / 100}, 'reward_std': 0.1, 'epoch': {0.01 * (i + 1)}}}"
            for i in range(6)]
    p = tmp_path / "run.log"
    p.write_text("\n".join(sft + ["GRPO training..."] + grpo) + "\n")
    run = load(p)
    assert run.metadata["trainings"] == 2 and run.metadata["phases"] == 2
    assert run.frame["step"].to_list() == [1, 2, 3, 4, 1, 2, 3, 4, 5, 6]
    assert run.frame.filter(pl.col("phase") == 1)["reward_mean"].to_list() == [0.5 + i / 100 for i in range(6)]


def test_real_sft_then_grpo_console_is_dated_within_the_grpo_run() -> None:
    # tsc-qwen05b-grpo-tied: 40 SFT dict lines, then 69 GRPO lines tied from their first row
    path = corpus("tsc-qwen05b-grpo-tied/.docker_run.log")
    run = load(path)
    grpo = run.frame.filter(pl.col("phase") == 1)
    assert run.frame.filter(pl.col("phase") == 0)["reward_mean"].null_count() == 40
    assert grpo.height == 69 and grpo["step"][0] == 1
    findings, _ = run_detectors(run)
    assert {f.id: f.onset_step for f in findings}["DEAD_FROM_START"] == 1


def _hard_wrapped(line: str, width: int) -> list[str]:
    """``line`` as a terminal of ``width`` columns shows it once pasted: cut every ``width`` characters, a
    blank that ends a cut piece dropped (what h184's paste does at some of its wraps)."""
    pieces = [line[i:i + width] for i in range(0, len(line), width)]
    return [p.rstrip(" ") for p in pieces]


def test_a_dict_hard_wrapped_by_the_terminal_is_joined(tmp_path: Path) -> None:
    logs = [{"loss": -0.0, "grad_norm": 0.16944053769111633, "completions/max_length": 384.0,
             "rewards/_reward_action/mean": -2.25 + step, "reward": -2.9749999046325684 + step,
             "reward_std": 0.9192387461662292, "frac_reward_zero_std": 0.5, "epoch": 0.01 * step}
            for step in range(3)]
    lines = ["Starting training"]
    for log in logs:
        lines += _hard_wrapped(str(log), 60)  # split inside keys and numbers, over 4 lines
    lines.insert(5, "{'loss': 0.1, 'grad_norm'")  # a truncated dict between them stays an error
    p = tmp_path / "output.txt"
    p.write_text("\n".join(lines) + "\n")
    run = load(p)
    assert run.format == "trl_console"
    assert run.frame["reward_mean"].to_list() == [log["reward"] for log in logs]
    assert run.frame["reward_std"].to_list() == [log["reward_std"] for log in logs]
    assert [e.line for e in run.errors] == [6]


def test_real_hard_wrapped_terminal_paste() -> None:
    """h184-trl-grpo-qwen3-8b-openenv-watchdog-every-completion-truncated-keyword-reward: a terminal paste
    wrapped at 180 columns, 200 dicts of 2 to 4 lines; the first and last rewards read off the file by hand
    (lines 55-59: 'reward': -2.9749999046325684, ...)."""
    path = corpus("h184-trl-grpo-qwen3-8b-openenv-watchdog-every-completion-truncated-keyword-reward/output1.txt")
    rewards = []
    for record in path.read_text().split("{'loss'")[1:]:
        joined = record.split("}")[0].replace("\n", "")
        rewards.append(float(joined.split("'reward': ")[1].split(",")[0]))
    run = load(path)
    assert run.format == "trl_console" and run.steps == 200
    assert rewards[0] == -2.9749999046325684 and len(rewards) == 200
    assert run.frame.sort("step")["reward_mean"].to_list() == rewards
    assert run.frame["truncated_frac"].min() >= 0.5
