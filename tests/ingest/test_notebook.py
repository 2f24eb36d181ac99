from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import notebook

from tests._real import corpus


def _table(header: list[str], rows: list[list[str]]) -> str:
    """A progress table as transformers' ``text_to_html_table`` writes it."""
    out = ['<div><progress value="3" max="3"></progress> [3/3 00:10, Epoch 1/1]</div>',
           '<table border="1" class="dataframe">', '  <thead>', ' <tr style="text-align: left;">']
    out += [f"      <th>{h}</th>" for h in header]
    out += ["    </tr>", "  </thead>", "  <tbody>"]
    for row in rows:
        out += ["    <tr>", *(f"      <td>{c}</td>" for c in row), "    </tr>"]
    out += ["  </tbody>", "</table><p>"]
    return "\n".join(out)


def _html_output(text: str) -> dict[str, Any]:
    lines = text.splitlines(keepends=True)  # notebooks store multi-line strings as lists of lines
    return {"output_type": "display_data", "metadata": {},
            "data": {"text/html": lines, "text/plain": ["<IPython.core.display.HTML object>"]}}


def _stream(text: str, name: str = "stdout") -> dict[str, Any]:
    return {"output_type": "stream", "name": name, "text": text.splitlines(keepends=True)}


def _notebook(tmp_path: Path, cells: list[list[dict[str, Any]]], name: str = "run.ipynb") -> Path:
    doc = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# GRPO\n"]}]
                    + [{"cell_type": "code", "execution_count": i, "metadata": {}, "source": ["trainer.train()"],
                        "outputs": outputs} for i, outputs in enumerate(cells, start=1)],
           "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    p = tmp_path / name
    p.write_text(json.dumps(doc, indent=1))
    return p


HEADER = ["Step", "Training Loss", "reward", "kl", "rewards / check_answer"]


def test_the_last_progress_table_is_read(tmp_path: Path) -> None:
    first = _table(HEADER, [["1", "0.000000", "0.100000", "0.000000", "0.000000"]])
    last = _table(HEADER, [["1", "No log", "0.500000", "0.000000", "1.000000"],
                           ["2", "0.000100", "oops", "0.001000", "2.000000"],
                           ["3", "0.000100", "0.750000", "0.002000"],  # a row with a cell missing
                           ["4", "0.000200", "1.250000", "0.003000", "3.000000"]])
    pandas = ('<table border="1" class="dataframe">\n<thead><tr style="text-align: right;"><th></th><th>a</th>'
              "</tr></thead><tbody><tr><th>0</th><td>9</td></tr></tbody></table>")
    p = _notebook(tmp_path, [[_html_output(first)], [_stream("{'loss': 0.1, 'reward': 9.0}\n"), _html_output(last)],
                             [_html_output(pandas)]])
    assert detect(p) is notebook.FORMAT
    run = load(p)
    assert run.format == "notebook" and run.trainer == "trl"
    assert run.frame["step"].to_list() == [1, 2, 4]
    assert run.frame["reward_mean"].to_list() == [0.5, None, 1.25]  # a bad value costs that value
    assert run.frame["reward/check_answer"].to_list() == [1.0, 2.0, 3.0]
    assert run.metadata["source"] == "progress_table" and run.metadata["cell"] == 3
    assert run.metadata["table"] == "the last of 2 training tables (cell 3)"
    assert len(run.errors) == 1 and run.errors[0].path == str(p)
    assert run.errors[0].message.startswith("notebook cell 3: progress table row 3 has 4 cells")


def test_console_dicts_in_stream_outputs(tmp_path: Path) -> None:
    # stdout arrives in chunks: a dict line may be split between two stream outputs
    outputs = [_stream("==((====))==  Unsloth\n{'loss': 0.1, 'reward': 0.25, 'kl': 0.0"),
               _stream("'Generating: 100%|####| 3/3\n", "stderr"),
               _stream(", 'epoch': 0.1}\n{'loss': 0.2, 'reward': 0.5, 'kl': 0.01, 'epoch': 0.2}\n"
                       "{'loss': 0.3, 'reward': 0.\n"
                       "{'train_runtime': 12.0, 'train_loss': 0.2, 'epoch': 0.3}\n")]
    p = _notebook(tmp_path, [[_stream("Loading\n")], outputs])
    run = load(p)
    assert run.format == "notebook" and run.trainer == "trl"
    assert run.frame["reward_mean"].to_list() == [0.25, 0.5]
    assert run.frame["kl"].to_list() == [0.0, 0.01]
    assert run.metadata["source"] == "console_dicts" and run.metadata["cell"] == 3
    assert run.metadata["summary"]["train_runtime"] == 12.0
    assert len(run.errors) == 1 and run.errors[0].message.startswith("notebook cell 3, output line 4: TRL console")


def test_a_loss_only_table_gives_way_to_a_callback_that_prints_every_key(tmp_path: Path) -> None:
    # TRL's table shows Step | Training Loss; the user's callback printed the whole log dict per step
    lines = "".join(f"[Step {s}] loss=0.0000 grad_norm=0.0010 completions/clipped_ratio=1.0000 reward={r:.4f} "
                    f"reward_std=0.0000 kl=0.0010\n" for s, r in ((1, 0.3), (2, 0.3), (3, 0.225)))
    table = _table(["Step", "Training Loss"], [[str(s), "0.000000"] for s in (1, 2, 3)])
    p = _notebook(tmp_path, [[_stream("Saving model checkpoint\n" + lines), _html_output(table)]])
    run = load(p)
    assert run.trainer == "trl" and run.metadata["source"] == "printed_progress"
    assert run.metadata["progress_table"] == "cell 2, the loss only"
    assert run.frame["reward_mean"].to_list() == [0.3, 0.3, 0.225]
    assert run.frame["truncated_frac"].to_list() == [1.0, 1.0, 1.0]
    # a table with more than the loss stays the source
    table = _table(["Step", "Training Loss", "reward"], [[str(s), "0.000000", "0.5"] for s in (1, 2, 3)])
    q = _notebook(tmp_path, [[_stream(lines), _html_output(table)]], "other.ipynb")
    assert load(q).metadata["source"] == "progress_table"


def test_a_notebook_without_a_training_log(tmp_path: Path) -> None:
    p = _notebook(tmp_path, [[_stream("hello\n")]])
    assert detect(p) is notebook.FORMAT
    run = load(p)
    assert run.steps == 0 and "no training progress table" in run.errors[0].message


def test_colab_layout_and_broken_json(tmp_path: Path) -> None:
    doc = {"nbformat": 4, "nbformat_minor": 0, "metadata": {"colab": {}},
           "cells": [{"cell_type": "code", "source": [], "outputs": [
               _html_output(_table(HEADER, [["1", "0.1", "0.5", "0.0", "1.0"]]))]}]}
    p = tmp_path / "colab.ipynb"
    p.write_text(json.dumps(doc, separators=(",", ":")))
    assert detect(p) is notebook.FORMAT and load(p).frame["reward_mean"].to_list() == [0.5]
    cut = tmp_path / "cut.ipynb"
    cut.write_text(p.read_text()[:200])
    e = notebook.read(cut).errors[0]
    assert e.line == 1 and "invalid JSON" in e.message


def test_real_unsloth_probability_notebook() -> None:
    path = corpus("h4-unsloth-llama31-8b-grpo-probability-answer-floor/GRPO-guide.ipynb")
    doc = json.loads(path.read_text())
    # Independently: the text/html outputs with a progress table, its header and rows by regex.
    tables = ["".join(o["data"]["text/html"]) for c in doc["cells"] for o in c.get("outputs", [])
              if "text/html" in o.get("data", {}) and "<th>Step</th>" in "".join(o["data"]["text/html"])]
    assert len(tables) == 1
    header = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", tables[0])]
    rows = [re.findall(r"<td>(.*?)</td>", r) for r in re.findall(r"<tr>(.*?)</tr>", tables[0], re.S)]
    assert len(rows) == 158 and header[:3] == ["Step", "Training Loss", "reward"]
    column = {h: [float(r[i]) for r in rows] for i, h in enumerate(header)}
    run = load(path)
    assert run.format == "notebook" and run.trainer == "trl" and not run.errors
    assert run.frame["step"].to_list() == [int(s) for s in column["Step"]]
    assert run.frame["reward_mean"].to_list() == pytest.approx(column["reward"])
    assert run.frame["reward/check_answer"].to_list() == pytest.approx(column["rewards / check_answer"])
    assert run.frame["kl"].to_list() == pytest.approx(column["kl"])
    assert sum(v == -1.0 for v in column["rewards / check_answer"]) == 127  # the manifest's count


def test_a_notebook_whose_cells_come_after_a_large_metadata_block(tmp_path: Path) -> None:
    # Colab writes widget state (often megabytes) in the metadata, before the cells
    table = ("<table border=\"1\" class=\"dataframe\"><thead><tr><th>Step</th><th>Training Loss</th><th>reward</th>"
             "</tr></thead><tbody>" + "".join(f"<tr><td>{i}</td><td>0.0</td><td>{i / 10}</td></tr>" for i in range(1, 8))
             + "</tbody></table>")
    nb = {"metadata": {"widgets": {"state": {f"w{i}": {"value": "x" * 100} for i in range(1000)}}},
          "nbformat": 4, "nbformat_minor": 0,
          "cells": [{"cell_type": "code", "metadata": {}, "source": ["trainer.train()"], "execution_count": 1,
                     "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"text/html": [table]}}]}]}
    p = tmp_path / "colab.ipynb"
    p.write_text(json.dumps(nb))
    assert p.read_text().index('"cells"') > (1 << 16)
    run = load(p)
    assert run.format == "notebook" and run.frame["reward_mean"].to_list() == pytest.approx([i / 10 for i in range(1, 8)])


def test_real_udacity_pong_scores_read_as_the_reward() -> None:
    from tests._real import corpus

    # pong-PPO.ipynb: 'Episode: 20, score: -14.750000' then the 8 environments' totals, every 20 episodes
    path = corpus("h63-udacity-drlnd-ppo-pong-pixels-learns/pong-PPO.ipynb")
    lines = [ln for c in json.loads(path.read_text())["cells"] for o in c.get("outputs", [])
             for ln in "".join(o.get("text", [])).splitlines() if ln.startswith("Episode: ")]
    run = load(path)
    assert run.frame["step"].to_list() == [int(ln.split(",")[0].split()[1]) for ln in lines] == list(range(20, 501, 20))
    assert run.frame["reward_mean"].to_list() == [float(ln.rsplit(" ", 1)[1]) for ln in lines]


_SB3_TABLE = """----------------------------------
| rollout/            |          |
|    ep_rew_mean      | 693      |
| time/               |          |
|    total_timesteps  | 896338   |
| train/              |          |
|    loss             | 0.943    |
----------------------------------
"""


def test_printed_progress_is_read_when_the_console_logged_fewer_steps(tmp_path: Path) -> None:
    # an SB3 DQN prints its logger table once (log_interval in episodes), a callback prints every 1000 steps
    means = [-0.06, -0.05, 0.1, 0.3, 0.5, 0.8]
    lines = [f"Timesteps: {1000 * (i + 1)}/6000, Elapsed Time: 00:00:{i:02d}\nMean Reward (last 1000 steps): {m}\n"
             for i, m in enumerate(means)]
    p = _notebook(tmp_path, [[_stream("".join(lines[:4]) + _SB3_TABLE + "".join(lines[4:]))]])
    run = load(p)
    assert run.metadata["source"] == "printed_progress"
    assert run.frame["step"].to_list() == [1000 * (i + 1) for i in range(6)]
    assert run.frame["reward_mean"].to_list() == means
    # a console that logged as many steps as the printed lines keeps the lead
    p = _notebook(tmp_path, [[_stream(_SB3_TABLE + "Episode 1, reward: 3.0\n")]])
    assert load(p).metadata["source"] == "console_tables"


def test_real_sb3_dqn_carracing_callback_prints_under_one_logger_table() -> None:
    """checked: 1,000 'Mean Reward (last 1000 steps)' lines, one per 1,000 timesteps, in the training cell."""
    path = corpus("h425-sb3-dqn-cnn-multicarracing-discrete-5-notebook-1m-steps-per-step-reward-flat-minus-0.04-for-"
                  "300k-then-rises-to-0.79-healthy/dqn.ipynb")
    text = "\n".join("".join(o.get("text", [])) for c in json.loads(path.read_text())["cells"]
                     for o in c.get("outputs", []))
    steps = [int(m) for m in re.findall(r"^Timesteps: (\d+)/", text, re.MULTILINE)]
    means = [float(m) for m in re.findall(r"^Mean Reward \(last 1000 steps\): (\S+)$", text, re.MULTILINE)]
    run = load(path)
    assert len(steps) == len(means) == 1000 and run.metadata["source"] == "printed_progress"
    assert run.frame["step"].to_list() == steps and run.frame["reward_mean"].to_list() == means
