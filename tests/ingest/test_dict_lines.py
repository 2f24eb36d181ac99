"""Metric dicts a hand-written loop prints one per line (``print(info)``), torch tensors and all.

The form is a SAC loop's on Isaac Sim (h192 of the corpus, ``output.log``): a dict after every
episode, between warnings and ``Running RL reset`` lines, its score a one-element CUDA tensor."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from advcore.ingest import load
from advcore.ingest.formats import dict_lines
from tests._real import corpus

_LOG = """-----------------
----Main Loop----
[2023-04-20 18:47:43] Running RL reset
main.py:84: UserWarning: Creating a tensor from a list of numpy.ndarrays is extremely slow.
  next_state, reward, terminal, _ = env.step(torch.tensor([action], dtype=torch.float))
{'metrics/score': tensor([536.2244], device='cuda:0'), 'metrics/Q_value': 2.37, 'loss/Q_1': 2.27, 'note': 'warm-up'}
[2023-04-20 18:47:58] Running RL reset
{'metrics/score': tensor([182.6012], device='cuda:0'), 'metrics/Q_value': np.float64(2.45), 'loss/Q_1': nan}
{'metrics/score': tensor(301.5), 'metrics/Q_value': 2.61, 'loss/Q_1': 1.5}
{'metrics/score': tensor([410.0], device='cuda:0'), 'metrics/Q_va
2023-04-20 18:48:30 INFO {'metrics/score': 455.25, 'metrics/Q_value': 2.8, 'loss/Q_1': 1.25}
"""


def test_printed_dicts_are_rows_in_order(tmp_path: Path) -> None:
    path = tmp_path / "output.log"
    path.write_text(_LOG)
    assert dict_lines.sniff(path, _LOG)
    raw = dict_lines.read(path)
    assert raw.frame["metrics/score"].to_list() == [536.2244, 182.6012, 301.5, 455.25]
    assert raw.frame["metrics/Q_value"].to_list() == [2.37, 2.45, 2.61, 2.8]
    assert math.isnan(raw.frame["loss/Q_1"][1])        # a printed nan is a value, NaN
    assert raw.metadata["non_numeric"] == ["note"]
    assert [(e.line, "cut off" in e.message) for e in raw.errors] == [(10, True)]   # the cut line, named
    run = load(path)
    assert run.format == "dict_lines" and run.frame["step"].to_list() == [1, 2, 3, 4]
    assert run.frame["reward_mean"].to_list() == [536.2244, 182.6012, 301.5, 455.25]   # metrics/score


def test_a_stray_dict_in_prose_is_not_this_format() -> None:
    head = "training...\n{'lr': 0.1, 'batch': 32}\nepoch 1 done\n{'seed': 3}\n"
    assert not dict_lines.sniff(Path("x.log"), head)
    # three dicts of one loop are
    loop = "".join(f"{{'score': {i}.5, 'loss': 0.{i}}}\n" for i in range(3))
    assert dict_lines.sniff(Path("x.log"), loop)


def test_the_real_sac_log_reads_every_episode() -> None:
    path = corpus("h192-handwritten-sac-oige-ant-single-env-resumed-learns/output.log")
    text = path.read_text()
    # the oracle: each dict line's score read by a regex of its own, not by the reader
    scores = [float(s) for s in re.findall(r"^\{'metrics/score': tensor\(\[([-\d.]+)\]", text, flags=re.M)]
    assert len(scores) == 6506 and scores[0] == 536.2244 and scores[-1] == 2286.8462
    run = load(path)
    assert run.format == "dict_lines"
    assert run.frame["reward_mean"].to_list() == pytest.approx(scores, rel=0, abs=0)
