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


def test_labelled_dicts_in_a_list_keep_their_labels(tmp_path: Path) -> None:
    # logzero's prefix, then labels and the one dict in a list (DORL-codes' policy_utils); the labels' numbers are columns
    log = ("[I 230118 17:45:45 policy_utils:47] {\n      \"env\": \"KuaiEnv-v0\",\n    }\n"
           "[I 230118 17:47:41 utils:138] Epoch: [1], Info: [{'num_test': 100, 'ctr': '0.75248', 'R_tra': 6.14}]\n"
           "[I 230118 17:48:36 utils:138] Epoch: [2], Info: [{'num_test': 100, 'ctr': '0.69275', 'R_tra': 5.48}]\n"
           "[I 230118 17:49:30 utils:138] Epoch: [3], Info: [{'num_test': 100, 'ctr': '0.76685', 'R_tra': 6.56}]\n")
    path = tmp_path / "[A2C]_2023_01_18.log"
    path.write_text(log)
    raw = dict_lines.read(path)
    assert raw.frame["Epoch"].to_list() == [1, 2, 3] and raw.frame["ctr"].to_list() == [0.75248, 0.69275, 0.76685]
    run = load(path)
    assert run.frame["step"].to_list() == [1, 2, 3] and run.frame["reward_mean"].to_list() == [6.14, 5.48, 6.56]


def test_the_real_tianshou_recommender_log_reads_every_epoch() -> None:
    path = corpus("h376-tianshou-fork-dorl-a2c-kuairec-recommender-200-epochs-return-6-to-18-users-stay-to-30-turn-cap-"
                  "healthy/[DORL]_2023_01_18-17_45_45.log")
    # the oracle: each epoch line's number and return read by a regex of its own
    found = re.findall(r"Epoch: \[(\d+)\], Info: \[\{.*?'R_tra': ([-\d.e]+)", path.read_text())
    run = load(path)
    assert len(found) == 200 and run.frame.height == 200
    assert run.frame["step"].to_list() == [int(e) for e, _ in found]
    assert run.frame["reward_mean"].to_list() == [float(r) for _, r in found]
