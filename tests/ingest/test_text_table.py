from __future__ import annotations

import re
from pathlib import Path

import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import text_table

from tests._real import corpus

ELEGANTRL = """| Arguments Remove cwd: ./BipedalWalker-v3_PPO_0
################################################################################
ID     Step    maxR |    avgR   stdR   avgS  stdS |    expR   objC   etc.
0  6.98e+03  -91.89 |
0  6.98e+03  -91.89 |  -91.89    0.0    109     2 |   -0.39 676.16   0.06  -0.50
0  9.49e+04  -21.05 |
0  9.49e+04  -21.05 |  -21.05    0.4   1600     0 |   -0.05   6.96   0.02  -0.50
0  1.59e+05  -21.05 |  -38.62    1.8   1600     0 |   -0.03   0.34  -0.01  -0.51
0  2.24e+05  -21.05 |  -34.80    3.4   1600     0 |   -0.02   0.31   0.05  -0.52
"""


def test_elegantrl_evaluator_table(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text(ELEGANTRL)
    assert detect(p) is text_table.FORMAT
    run = load(p)
    assert run.trainer == "elegantrl" and run.errors == ()
    # the new-best lines (3 values) are not rows; the step is the Step column
    assert run.frame["step"].to_list() == [6980, 94900, 159000, 224000]
    assert run.frame["reward_mean"].to_list() == [-91.89, -21.05, -38.62, -34.80]
    assert run.frame["value_loss"].to_list() == [676.16, 6.96, 0.34, 0.31]


def test_a_row_wider_than_its_header_costs_that_line(tmp_path: Path) -> None:
    p = tmp_path / "log.txt"
    p.write_text("Epoch  Reward  Loss\n1 0.1 2.0\n2 0.2 1.9\n3 0.3 1.8 7.0\n4 0.4 1.7\n5 0.5 1.6\n")
    raw = text_table.read(p)
    assert raw.frame["step"].to_list() == [1, 2, 4, 5]
    assert [e.line for e in raw.errors] == [4] and "4 values under 3 column names" in raw.errors[0].message


def test_prose_between_header_and_rows_is_no_table() -> None:
    head = "Epoch  Reward  Loss\nthe loss went down nicely\n1 0.1 2.0\n2 0.2 1.9\n3 0.3 1.8\n4 0.4 1.7\n"
    assert not text_table.sniff(Path("x"), head)


def test_real_elegantrl_notebook() -> None:
    """The saved cell output of ElegantRL's BipedalWalker tutorial: 32 full evaluation rows (counted with
    a regex over the notebook's text, the hunter's count), the last avgR 300.30."""
    import json

    path = corpus("h58-elegantrl-ppo-bipedalwalker-solves/tutorial_BipedalWalker_v3.ipynb")
    text = "".join("".join(o.get("text", "")) for c in json.loads(path.read_text())["cells"] for o in c.get("outputs", []))
    rows = re.findall(r"^0\s+(\S+)\s+\S+\s+\|\s+(\S+)\s+\S+\s+\S+\s+\S+\s+\|", text, flags=re.M)
    run = load(path)
    assert run.steps == len(rows) == 32
    assert run.frame["reward_mean"].to_list() == pytest.approx([float(r) for _, r in rows])
    assert run.frame["reward_mean"][-1] == pytest.approx(300.30)


MARKDOWN = """# A2C Training Results

- **Total episodes:** 4

## Episode Rewards History

| Episode | Reward | Episode Length |
|---------|:------:|-----------|
| 1 | 210.00 | 394 |
| 2 | 447.00 | 190 |
| 3 | 791.00 | 193 |
| 4 | 871.00 | 150 |
"""


def test_markdown_table_with_its_rule(tmp_path: Path) -> None:
    p = tmp_path / "a2c_training_log.md"
    p.write_text(MARKDOWN)
    assert detect(p) is text_table.FORMAT
    run = load(p)
    assert run.errors == () and run.frame["step"].to_list() == [1, 2, 3, 4]
    assert run.frame["reward_mean"].to_list() == [210.0, 447.0, 791.0, 871.0]
    assert run.unread["unmapped"] == ["Episode_Length"]  # a cell's blanks joined: one name


def test_real_sb3_markdown_report() -> None:
    """h216-sb3-ppo-mutation-grid-31-episodes-improves-steadily: the author's report, 31 table rows
    (counted with a regex here), episode lengths summing to 10,063 (the hunter's count)."""
    path = corpus("h216-sb3-ppo-mutation-grid-31-episodes-improves-steadily/ppo_training_log.md")
    rows = re.findall(r"^\| (\d+) \| (\S+) \| (\d+) \|$", path.read_text(), flags=re.M)
    run = load(path)
    assert run.format == "text_table" and run.steps == len(rows) == 31
    assert run.frame["reward_mean"].to_list() == [float(r) for _, r, _ in rows]
    assert sum(int(n) for _, _, n in rows) == 10_063
