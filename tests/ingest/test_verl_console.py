from __future__ import annotations

import re
from pathlib import Path

import pytest

from advcore.detectors import run_detectors
from advcore.detectors._windows import window_len
from advcore.detectors.filter_starvation import accounting
from advcore.ingest import detect, load
from advcore.stages import stage_signal
from advcore.ingest.formats import verl_console

from tests._real import corpus, real

ESC = "\x1b"


def _write(tmp_path: Path, text: str, name: str = "run.log") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_ansi_ray_prefix_np_float_and_split_step(tmp_path: Path) -> None:
    pre = f"{ESC}[36m(TaskRunner pid=2021996){ESC}[0m "
    text = (
        "some config dump\n"
        "t_length/mean:144.000 - prompt_length/max:146.000\n"  # fragment of a step before the excerpt
        f"{pre}step:5 - rollout/too_good_sample_ratio:0.25 - rollout/total_num_samples:96\n"
        f"{pre}step:5 - critic/score/mean:np.float64(0.5) - actor/entropy:1.25 - critic/kl:-0.001 - \n"
        f"{pre}response_length/mean:120.0 - actor/pg_loss:nan\n"  # wrapped continuation
        "(pid=77) Let's start with the first step:\n"
        f"(WorkerDict pid=3, ip=10.0.0.1) step:6 - critic/score/mean:0.75 - actor/entropy:1.0 - mode:fast"
        f"{ESC}[32m [repeated 7x across cluster]{ESC}[0m\n"
    )
    p = _write(tmp_path, text)
    assert verl_console.sniff(p, text)
    raw = verl_console.read(p)
    f = raw.frame
    assert f["step"].to_list() == [5, 6]
    assert f["critic/score/mean"].to_list() == [0.5, 0.75]
    assert f["rollout/too_good_sample_ratio"].to_list() == [0.25, None]
    assert f["critic/kl"][0] == -0.001
    assert f["response_length/mean"][0] == 120.0
    assert raw.metadata["text_valued_keys"] == ["mode"]
    assert [(e.line, "before any step:N line" in e.message) for e in raw.errors] == [(2, True)]  # said, not read
    run = load(p)
    assert run.format == "verl_console" and run.trainer == "verl"
    assert run.frame["reward_mean"].to_list() == [0.5, 0.75]
    assert run.frame["entropy"].to_list() == [1.25, 1.0]


def test_resume_keeps_logged_steps_and_repeated_step_is_a_new_row(tmp_path: Path) -> None:
    text = (
        "Load from checkpoint folder: /checkpoints/global_step_100\n"
        "step:101 - critic/score/mean:0.9\nstep:102 - critic/score/mean:0.8\n"
        "step:102 - critic/score/mean:0.7\n"
    )
    raw = verl_console.read(_write(tmp_path, text))
    assert raw.frame["step"].to_list() == [101, 102, 102]
    assert raw.metadata["resumed_from_step"] == 100
    assert raw.metadata["first_step"] == 101


def test_truncated_line_names_file_and_line(tmp_path: Path) -> None:
    p = _write(tmp_path, "step:1 - critic/score/mean:0.1\nstep:2 - critic/score/mean:0.2 - actor/entr")
    raw = verl_console.read(p)
    assert raw.frame["critic/score/mean"].to_list() == [0.1, 0.2]
    (err,) = raw.errors
    assert err.line == 2 and err.path == str(p) and "key:value" in err.message


def test_empty_and_no_step_files(tmp_path: Path) -> None:
    empty = _write(tmp_path, "", "empty.log")
    run = load(empty)
    assert run.steps == 0 and run.errors
    p = _write(tmp_path, "hello\nstep: by step\n", "other.log")
    assert not verl_console.sniff(p, p.read_text())
    assert verl_console.read(p).errors[0].message.startswith("no verl")


@pytest.mark.parametrize(
    ("relative", "n", "first", "last", "score0", "score1", "ent0", "ent1"),
    [
        ("tinyzero-ppo-entropy-collapse/early-steps.log", 4, 2, 122, 0.025, 0.094, 1.213, 0.792),
        ("tinyzero-ppo-entropy-collapse/part-of-logs.md", 17, 383, 399, 0.156, 0.297, 0.005, 0.008),
        ("verl-gsm8k-ppo-quickstart/verl_getting_started.cell15_output.log", 61, 0, 60, 0.012, 0.621, 0.461, 0.173),
        ("gui-cursor-verl-grpo/verl_demo.log", 10, 1, 10, 0.5721990466117859, 0.8335199356079102,
         1.182466983795166, 1.1691490411758423),
        ("verl-ppo-qwen7b-gsm8k-resumed/verl_demo.log", 335, 101, 435, 0.941, 0.918, 0.035, 0.030),
    ],
)
def test_real_verl_consoles(relative: str, n: int, first: int, last: int, score0: float, score1: float,
                            ent0: float, ent1: float) -> None:
    path = real(relative)
    assert detect(path) is verl_console.FORMAT
    run = load(path)
    # part-of-logs.md begins at line 14 inside a step's line ("t_length/mean:144.000 - prompt_length/max:..."):
    # that line is the one skipped, and said
    assert [e.line for e in run.errors] == ([14] if relative.endswith("part-of-logs.md") else [])
    f = run.frame
    assert run.steps == n and f["step"][0] == first and f["step"][-1] == last
    assert "phase" not in f.columns
    assert f["step"].is_sorted()
    assert f["reward_mean"][0] == pytest.approx(score0) and f["reward_mean"][-1] == pytest.approx(score1)
    assert f["entropy"][0] == pytest.approx(ent0) and f["entropy"][-1] == pytest.approx(ent1)
    assert run.has("kl_step", "adv_max", "adv_min", "response_length_mean")


def test_real_gui_cursor_filter_ratios() -> None:
    raw = verl_console.read(real("gui-cursor-verl-grpo/verl_demo.log"))
    good = raw.frame["rollout/too_good_sample_ratio"]
    assert good[0] == pytest.approx(0.010416666666666666) and good[-1] == pytest.approx(0.3854166666666667)
    assert raw.frame["reward_extra_info/success"][0] == pytest.approx(0.29296875)


def test_group_filter_shares_give_the_kept_share_and_the_removed_counts(tmp_path: Path) -> None:
    # the lines a verl fork's group filter prints (filtering_info: the shares of the sampled prompts whose
    # rollouts all succeeded or all failed, and how many prompts were sampled)
    lines = [f"step:{s} - critic/score/mean:{0.5 + s / 10} - rollout/too_bad_sample_ratio:{bad} - "
             f"rollout/too_good_sample_ratio:{good} - rollout/total_num_samples:{n}"
             for s, bad, good, n in ((1, 0.5, 0.125, 64), (2, 0.25, 0.25, 96), (3, 0.75, 0.1875, 64))]
    run = load(_write(tmp_path, "\n".join(lines) + "\n"))
    f = run.frame.sort("step")
    assert f["filter/kept_frac"].to_list() == [0.375, 0.5, 0.0625]
    assert f["filter/removed_all_fail"].to_list() == [32, 24, 48]
    assert f["filter/removed_all_success"].to_list() == [8, 24, 12]
    assert f["filter/groups_removed"].to_list() == [40, 48, 60]


def test_real_gui_cursor_filter_accounting() -> None:
    """gui-cursor-verl-grpo: the kept share of step 1, 1 - 0.010416666666666666 - 0.5625, and the run's
    removed groups, summed by hand from its 10 filtering lines."""
    path = real("gui-cursor-verl-grpo/verl_demo.log")
    raw = verl_console.read(path).frame
    run = load(path)
    kept = run.frame.sort("step")["filter/kept_frac"]
    assert kept[0] == pytest.approx(1 - 0.010416666666666666 - 0.5625)
    n, good, bad = (raw[k].to_list() for k in ("rollout/total_num_samples", "rollout/too_good_sample_ratio",
                                                "rollout/too_bad_sample_ratio"))
    assert run.frame["filter/groups_removed"].sum() == sum(round(a * (g + b)) for a, g, b in zip(n, good, bad))


def test_an_unparsable_chunk_costs_that_chunk_not_the_line(tmp_path: Path) -> None:
    # a key with '&' (SimpleVLA-RL's timing/acc&trunc_filter) and a chunk with no colon at all
    p = tmp_path / "run.log"
    p.write_text("step:0 - timing/acc&trunc_filter:0.413 - oops - critic/score/mean:0.5 - actor/grad_norm:1.25\n")
    raw = verl_console.read(p)
    row = raw.frame.row(0, named=True)
    assert row["timing/acc&trunc_filter"] == 0.413 and row["critic/score/mean"] == 0.5
    assert row["actor/grad_norm"] == 1.25
    assert [e.line for e in raw.errors] == [1] and "'oops'" in raw.errors[0].message


def test_real_simplevla_console_keeps_the_metrics_after_an_odd_key() -> None:
    path = corpus("simplevla-dense-reward-libero/dense_reward_training.txt")
    # independent count: step lines and their critic/advantages/max values, by regex
    lines = [ln for ln in path.read_text().splitlines() if re.search(r"\bstep:\d+ - ", ln)]
    adv_max = [float(m.group(1)) for ln in lines if (m := re.search(r"critic/advantages/max:(-?[\d.]+)", ln))]
    assert len(adv_max) == 162
    run = load(path)
    assert run.frame["adv_max"].drop_nulls().to_list() == pytest.approx(adv_max)


def test_a_console_capture_whose_first_step_line_comes_after_pages_of_rollouts() -> None:
    path = corpus("logic-rl-formula-grpo-9step/output.log")
    text = path.read_text()
    first = text.index("\nstep:0 - ")
    assert first > (1 << 16)  # past the head that format detection reads first
    steps = [int(m.group(1)) for m in re.finditer(r"^step:(\d+) - .*critic/score/mean:", text, re.MULTILINE)]
    assert len(steps) == 9
    assert detect(path) is verl_console.FORMAT
    run = load(path)
    assert sorted(set(run.frame["step"].to_list())) == sorted(set(steps))


def test_a_text_file_without_step_lines_is_still_not_a_verl_console(tmp_path: Path) -> None:
    p = tmp_path / "notes.log"
    p.write_text("a diary of a training run\n" * 5000 + "reward went up\n")
    assert detect(p) is not verl_console.FORMAT


def test_real_gui_cursor_filter_trend_and_the_reward_stage() -> None:
    """gui-cursor-verl-grpo: the share of the sampled groups that succeeded in every rollout is verl's
    too_good_sample_ratio (1 % at step 1, 39 % at step 9); the filter line gives its early and late window
    means, and the R stage reads the kept share, the groups with mixed outcomes, since the log has no tied
    share; ALWAYS_FILTERED then lacks only per-task success."""
    path = real("gui-cursor-verl-grpo/verl_demo.log")
    text = path.read_text()
    good = [float(v) for v in re.findall(r"rollout/too_good_sample_ratio:([\d.e-]+)", text)]
    bad = [float(v) for v in re.findall(r"rollout/too_bad_sample_ratio:([\d.e-]+)", text)]
    assert len(good) == len(bad) == 10
    run = load(path)
    w = window_len(10)
    acc = accounting(run)
    assert acc is not None and acc.all_success is not None and acc.all_fail is not None
    assert acc.all_success == pytest.approx((sum(good[:w]) / w, sum(good[-w:]) / w))
    assert acc.all_fail == pytest.approx((sum(bad[:w]) / w, sum(bad[-w:]) / w))
    assert "groups that succeeded in every rollout" in acc.describe()
    kept = [1 - g - b for g, b in zip(good, bad, strict=True)]
    level = next(s for s in stage_signal(run) if s.stage == "R")
    assert level.metric == "filter/kept_frac"
    assert (level.early, level.late) == pytest.approx((sum(kept[:w]) / w, sum(kept[-w:]) / w))
    needs = [n for n in run_detectors(run)[1] if n.id == "ALWAYS_FILTERED"]
    assert len(needs) == 1 and len(needs[0].needs) == 1 and needs[0].needs[0].startswith("success per task")


def test_real_gui_cursor_returns_that_repeat_the_advantages_are_not_read() -> None:
    """gui-cursor-verl-grpo: verl's GRPO fills the returns with the advantages (no critic), so
    critic/returns/mean equals critic/advantages/mean on all 10 steps: not a credit-assignment signal."""
    text = real("gui-cursor-verl-grpo/verl_demo.log").read_text()
    returns = re.findall(r"critic/returns/mean:([-\d.e]+)", text)
    advantages = re.findall(r"critic/advantages/mean:([-\d.e]+)", text)
    assert len(returns) == 10 and returns == advantages
    run = load(real("gui-cursor-verl-grpo/verl_demo.log"))
    assert "return_mean" not in run.frame.columns and "critic/returns/mean" in run.unread["placeholder"]
    assert run.metadata["copied_returns"] == {"return_mean": "adv_mean"}


def test_returns_of_a_critic_are_read(tmp_path: Path) -> None:
    # verl PPO with a critic (GAE): the returns differ from the advantages and stay the A stage's
    p = tmp_path / "run.log"
    p.write_text("".join(f"step:{s} - critic/score/mean:{0.1 * s} - critic/advantages/mean:{0.01 * s} - "
                         f"critic/returns/mean:{0.5 + 0.1 * s}\n" for s in range(1, 8)))
    run = load(p)
    assert run.frame["return_mean"].to_list() == pytest.approx([0.5 + 0.1 * s for s in range(1, 8)])


def test_a_config_dump_with_trainer_keys_does_not_make_a_verl_console_trls(tmp_path: Path) -> None:
    # verl-agent prints its config before the first step line: "{'alfworld': {'eval_dataset': 'eval_in_distribution'}"
    # holds a key TRL's metric dicts begin with, but with a string value
    pre = f"{ESC}[36m(TaskRunner pid=9323){ESC}[0m "
    text = (f"{pre}{{'actor_rollout_ref': {{'actor': {{'ppo_epochs': 1}}}},\n"
            f"{pre} 'env': {{'alfworld': {{'eval_dataset': 'eval_in_distribution'}},\n"
            + "".join(f"{pre}step:{s} - actor/entropy_loss:0.9 - critic/score/mean:0.{s}\n" for s in range(1, 4)))
    path = _write(tmp_path, text)
    assert detect(path) is verl_console.FORMAT
    assert load(path).frame["reward_mean"].to_list() == [0.1, 0.2, 0.3]
    # a TRL metric dict is still TRL's, a nan or a tensor as its first value included
    from advcore.ingest.formats import trl_console
    for first in ("0.25", "nan", "-inf", "tensor(0.3)", ".5", "'0.1'"):
        trl = _write(tmp_path, f"{{'loss': {first}, 'reward': 0.5, 'epoch': 0.1}}\n", "trl.log")
        assert detect(trl) is trl_console.FORMAT, first


def test_real_verl_validation_core_score_is_the_validation_score() -> None:
    """verl-ppo-qwen7b-gsm8k-resumed: verl 0.4's ``val-core/openai/gsm8k/reward/mean@1`` on the step lines of every
    tenth step (a newcomer found it only among the unread keys); read against a regex over the console."""
    path = real("verl-ppo-qwen7b-gsm8k-resumed/verl_demo.log")
    pairs = {int(m.group(1)): float(m.group(2)) for m in re.finditer(
        r"step:(\d+) - .*?val-core/openai/gsm8k/reward/mean@1:([\d.]+)", path.read_text(errors="replace"))}
    assert len(pairs) == 34 and min(pairs) == 110
    run = load(path)
    assert run.sources["val_score"] == "val-core/openai/gsm8k/reward/mean@1"
    read = run.frame.select("step", "val_score").drop_nulls()
    assert dict(zip(read["step"].to_list(), read["val_score"].to_list(), strict=True)) == pytest.approx(pairs)


def test_a_learning_rate_the_console_prints_as_0_on_every_line_is_not_read(tmp_path: Path) -> None:
    # verl prints f"{v:.3f}": an LLM's 1e-6 is 0.000, which would be drawn and judged as a learning rate of 0
    lines = "".join(f"step:{s} - actor/lr:0.000 - critic/lr:0.000 - critic/score/min:0.000 - critic/score/mean:0.{s}00"
                    f" - actor/grad_norm:{s}.500\n" for s in range(1, 6))
    run = load(_write(tmp_path, lines))
    assert "lr" not in run.frame.columns and run.unread["rounded"] == ["actor/lr", "critic/lr"]
    assert run.frame["reward_min"].to_list() == [0.0] * 5  # a score of 0 is one
    # one line that shows a digit: the learning rate is read, its zeros with it
    run = load(_write(tmp_path, lines.replace("actor/lr:0.000", "actor/lr:0.001", 1)))
    assert run.frame["lr"].to_list() == [0.001, 0.0, 0.0, 0.0, 0.0] and run.unread["rounded"] == ["critic/lr"]


def test_real_resumed_verl_console_learning_rate_rounded_away() -> None:
    path = real("verl-ppo-qwen7b-gsm8k-resumed/verl_demo.log")
    text = path.read_text(encoding="utf-8", errors="replace")
    step_lines = [ln for ln in text.splitlines() if re.search(r"\bstep:\d+ - ", ln)]
    assert len(step_lines) == 335 and all(" - actor/lr:0.000 - " in ln for ln in step_lines)
    run = load(path)
    assert "lr" not in run.frame.columns and "actor/lr" in run.unread["rounded"]


def test_a_console_that_ends_with_a_traceback_says_the_run_died(tmp_path: Path) -> None:
    steps = "".join(f"step:{s} - critic/score/mean:0.{s} - actor/entropy_loss:1.{s}\n" for s in range(1, 6))
    crash = ("Traceback (most recent call last):\n  File \"main_ppo.py\", line 9, in main\n    trainer.fit()\n"
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n\n$ ls\n")
    run = load(_write(tmp_path, steps + crash))
    assert run.ended_with == "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert run.frame.height == 5
    # a traceback the run survived (training went on for 30 more lines), or none: no error at the end
    assert load(_write(tmp_path, steps + crash + steps * 6)).ended_with == ""
    assert load(_write(tmp_path, steps)).ended_with == ""


def test_real_tinyzero_console_ends_with_the_checkpoint_save_that_filled_the_disk() -> None:
    path = real("tinyzero-ppo-entropy-collapse/part-of-logs.md")
    lines = path.read_text(encoding="utf-8").splitlines()
    last_traceback = max(i for i, ln in enumerate(lines) if ln.startswith("Traceback (most recent call last):"))
    (expected,) = [ln for ln in lines[last_traceback:] if ln.startswith("safetensors_rust.SafetensorError: ")]
    assert load(path).ended_with == expected
