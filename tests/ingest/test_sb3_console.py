from __future__ import annotations

import re
from pathlib import Path

import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import sb3_console

from tests._real import corpus

SYNTH = """\
Using cpu device
Wrapping the env in a DummyVecEnv.
---------------------------------
| rollout/           |          |
|    ep_len_mean     | 134      |
|    ep_rew_mean     | 87.6     |
| time/              |          |
|    fps             | 86       |
|    total_timesteps | 2048     |
---------------------------------
-----------------------------------------
| rollout/                |             |
|    ep_rew_mean          | 92.4        |
| time/                   |             |
|    total_timesteps      | 4096        |
| train/                  |             |
|    approx_kl            | 0.013188062 |
|    entropy_loss         | -30.3       |
|    explained_variance   | 0.854       |
-----------------------------------------
Eval num_timesteps=5000, episode_reward=115.83 +/- 0.00
-----------------------------------------
| eval/                   |             |
|    mean_reward          | 116         |
| time/                   |             |
|    total_timesteps      | 5000        |
| train/                  |             |
|    approx_kl            | 0.008337676 |
|    entropy_loss         | -30.4       |
-----------------------------------------
New best mean reward!
---------------------------------
| rollout/           |          |
|    ep_rew_mean     | 95.8     |
| time/              |          |
|    total_timesteps | 6144     |
---------------------------------
"""


def _write(tmp_path: Path, text: str, name: str = "train.log") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_tables_become_rows_keyed_section_slash_key(tmp_path: Path) -> None:
    p = _write(tmp_path, SYNTH)
    assert detect(p) is sb3_console.FORMAT
    raw = sb3_console.read(p)
    assert raw.trainer == "sb3" and raw.metadata["tables"] == 4 and not raw.errors
    assert {"rollout/ep_rew_mean", "time/total_timesteps", "train/approx_kl", "eval/mean_reward"} <= set(raw.frame.columns)
    run = load(p)
    assert run.format == "sb3_console" and run.trainer == "sb3"
    assert run.frame["step"].to_list() == [2048, 4096, 5000, 6144]
    assert run.frame["reward_mean"].to_list() == [87.6, 92.4, None, 95.8]
    # The eval dump carries the train/ values of the update before it, as SB3 prints them.
    assert run.frame["kl_step"].to_list() == [None, 0.013188062, 0.008337676, None]
    assert run.frame["entropy"].to_list() == [None, 30.3, 30.4, None]  # SB3 logs minus the entropy
    assert not any(m.startswith("eval") for m in run.metrics)  # an evaluation is never a training metric


def test_crlf_ansi_and_progress_bar_redraws(tmp_path: Path) -> None:
    text = SYNTH.replace("| rollout/                |             |",
                         "\x1b[2K 40% ━━━━━━━━━━━━━━ 4096/10000\r| rollout/                |             |")
    p = tmp_path / "train.log"
    p.write_bytes(text.replace("\n", "\r\n").encode())
    assert detect(p) is sb3_console.FORMAT
    run = load(p)
    assert not run.errors and run.frame["reward_mean"].to_list() == [87.6, 92.4, None, 95.8]


def test_a_truncated_row_costs_that_line_and_a_cut_value_costs_that_value(tmp_path: Path) -> None:
    text = SYNTH.replace("|    explained_variance   | 0.854       |", "|    explained_variance   | 0.8")
    text = text.replace("|    entropy_loss         | -30.4       |", "|    entropy_loss         | -30...      |")
    p = _write(tmp_path, text)
    raw = sb3_console.read(p)
    assert len(raw.errors) == 1
    line = text.splitlines().index("|    explained_variance   | 0.8") + 1
    assert raw.errors[0].line == line and raw.errors[0].path == str(p) and "truncated" in raw.errors[0].message
    run = load(p)
    assert run.frame["kl_step"].to_list() == [None, 0.013188062, 0.008337676, None]  # the rest of the table
    assert run.frame["entropy"].to_list() == [None, 30.3, None, None]
    assert "vf_explained_var" not in run.metrics


def test_a_file_cut_inside_a_table_keeps_what_was_printed(tmp_path: Path) -> None:
    cut = SYNTH[: SYNTH.index("|    entropy_loss         | -30.3")]
    run = load(_write(tmp_path, cut))
    assert run.frame["step"].to_list() == [2048, 4096]
    assert run.frame["kl_step"].to_list() == [None, 0.013188062]


def test_keys_without_a_section_and_cut_keys(tmp_path: Path) -> None:
    text = ("-----------------------------------------\n"
            "| custom_metric           | 3           |\n"
            "| time/                   |             |\n"
            "|    total_timesteps      | 100         |\n"
            "| train/                  |             |\n"
            "|    a_very_long_key_t... | 1.5         |\n"
            "-----------------------------------------\n")
    raw = sb3_console.read(_write(tmp_path, text))
    assert raw.frame["custom_metric"].to_list() == [3.0]
    assert raw.frame["train/a_very_long_key_t..."].to_list() == [1.5]
    assert raw.metadata["truncated_keys"] == ["train/a_very_long_key_t..."]


def test_other_consoles_are_not_sb3_tables(tmp_path: Path) -> None:
    markdown = _write(tmp_path, "| metric | value |\n|---|---|\n| reward | 0.5 |\n", "notes.md")
    assert not sb3_console.sniff(markdown, markdown.read_text())
    raw = sb3_console.read(markdown)
    assert raw.frame.height == 0 and "no logger table" in raw.errors[-1].message


def test_real_combatbench_console() -> None:
    path = corpus("h4-sb3-ppo-combatbench-fight-smoke-learns/train.log")
    text = path.read_text()
    # Independently: the blocks between dashed lines, their timesteps, ep_rew_mean and approx_kl.
    blocks = re.findall(r"^-+\n((?:\|.*\|\n)+)(?=-+$)", text, re.M)
    steps = [int(re.search(r"total_timesteps\s*\|\s*(\d+)", b).group(1)) for b in blocks]  # type: ignore[union-attr]

    def column(key: str) -> list[float | None]:
        return [float(m.group(1)) if (m := re.search(rf"\|\s+{key}\s+\|\s+(\S+)\s+\|", b)) else None for b in blocks]

    assert sum("| rollout/" in b for b in blocks) == 25 and sum("| eval/" in b for b in blocks) == 5
    run = load(path)
    assert run.format == "sb3_console" and run.trainer == "sb3" and not run.errors
    assert run.frame["step"].to_list() == steps
    assert run.frame["reward_mean"].to_list() == column("ep_rew_mean")
    assert run.frame["kl_step"].to_list() == column("approx_kl")
    assert run.frame["entropy"].to_list() == [None if v is None else -v for v in column("entropy_loss")]
    assert run.frame["vf_explained_var"].to_list() == column("explained_variance")
    assert run.frame["reward_mean"].drop_nulls()[0] == pytest.approx(87.6)


SB2_TABLE = """--------------------------------------
| approxkl           | {kl} |
| clipfrac           | 0.0           |
| explained_variance | 0             |
| policy_entropy     | 0.6931468     |
| serial_timesteps   | {t}       |
| total_timesteps    | {t}       |
| value_loss         | 1.5117565e+15 |
--------------------------------------
"""


def test_stable_baselines_2_tables_without_sections(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("Loading...\n" + "".join(SB2_TABLE.format(kl=f"{1e-7 * (i + 1):.3g}", t=128 * (i + 1))
                                          for i in range(6)))
    assert detect(p) is sb3_console.FORMAT
    run = load(p)
    assert run.trainer == "baselines" and run.frame["step"].to_list() == [128 * (i + 1) for i in range(6)]
    assert run.frame["kl_step"].to_list() == pytest.approx([1e-7 * (i + 1) for i in range(6)])
    assert run.frame["value_loss"].to_list() == pytest.approx([1.5117565e15] * 6)


def test_real_stable_baselines_2_tables_in_a_notebook() -> None:
    path = corpus("h12-sb2-ppo2-lstm-btc-forex-valueloss-1e15-dead/___AutoTrade11.ipynb")
    text = path.read_text().replace("\\n", "\n")
    # Colab kept the output's last lines only: the first table is cut above its opening dashed line,
    # and a table is read from a dashed line on
    after_first_dashes = text[re.search(r"^\s*\"?-{5,}", text, re.M).end():]  # type: ignore[union-attr]
    steps = [int(m.group(1)) for m in re.finditer(r"\| total_timesteps\s+\| (\d+)\s+\|", after_first_dashes)]
    run = load(path)
    assert run.trainer == "baselines" and run.frame["step"].to_list() == steps
