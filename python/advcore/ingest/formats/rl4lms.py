"""The experiment log of RL4LMs (allenai/RL4LMs): ``Rollout Info: {...}`` and ``Training Info: {...}`` lines.

Who writes it: ``Tracker`` (``rl4lms/envs/text_generation/logging_utils.py``) appends Python
``logging`` lines to ``<experiment>/log.txt``. Each iteration of an on-policy run (PPO, NLPO, A2C:
``OnPolicyTrainer.train_and_eval`` in ``rl4lms/envs/text_generation/training_utils.py``) prints one
``Rollout Info: {'rollout_info/ep_rew': ..., ...}`` line (means and stds over the iteration's
episodes, from ``alg_wrappers.py``) and, after the update, one ``Training Info: {'ppo/entropy_loss':
..., ...}`` line; the training info joins its iteration's rollout info. The step is the iteration.

The file is appended to by every launch of the experiment. A launch evaluates every split first
(``{split} metrics: {'epoch': E, ...}``, the ``test`` split only then and after the last
iteration), at the iteration ``E`` it starts from, so a ``test metrics`` line sets the next
iteration to ``E + 1``. Launches that continue one another (resumed from a checkpoint) join; when
the iteration goes back (started again from scratch), the longest of the stretches is read and
``metadata["launches"]`` says how many there were. A line whose dict does not parse (a truncated
line) is an :class:`IngestError` naming the line; the other lines are still read.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest._text import read_text, readable_lines
from advcore.ingest._parse import by_step, dict_literal_numbers, steps_frame
from advcore.ingest._format import Format

NAME = "rl4lms"

# searched after a cheap substring test; the dict runs to the end of the line
_INFO = re.compile(r"\b(Rollout|Training) Info: (\{.*\})\s*$")
_TEST_EPOCH = re.compile(r"\btest metrics: \{'epoch': (\d{1,9})\b")


def sniff(path: Path, head: str | None) -> bool:
    return head is not None and "Rollout Info: {'rollout_info/" in head


def read(path: Path) -> RawLog:
    errors: list[IngestError] = []
    stretches: list[list[tuple[int, dict[str, float | None]]]] = [[]]
    iteration = 0  # the last iteration read
    for n, line in readable_lines(enumerate(read_text(path).split("\n"), start=1), path, errors):
        if "test metrics: {" in line and (t := _TEST_EPOCH.search(line)) is not None:
            iteration = int(t.group(1))  # a launch starts from this iteration (or the run ended at it)
            continue
        if " Info: {" not in line:
            continue
        m = _INFO.search(line.rstrip("\r"))
        metrics = dict_literal_numbers(m.group(2)) if m is not None else None
        if m is None or metrics is None:
            errors.append(IngestError(str(path), "RL4LMs log: expected 'Rollout Info: {...}' or 'Training Info: "
                                                 "{...}'; the line is truncated or its dict does not parse", n))
            continue
        current = stretches[-1]
        if m.group(1) == "Training":
            if current and current[-1][0] == iteration:
                current[-1][1].update(metrics)  # the update that followed the iteration's rollouts
            continue
        iteration += 1
        if current and iteration <= current[-1][0]:  # started again from scratch
            stretches.append(current := [])
        current.append((iteration, metrics))
    launches = [s for s in stretches if s]
    if not launches:
        errors.append(IngestError(str(path), "RL4LMs log: no 'Rollout Info: {...}' line"))
        return RawLog(NAME, pl.DataFrame(), trainer="rl4lms", errors=tuple(errors))
    read_ = max(reversed(launches), key=len)  # the longest; of equals, the last
    meta = {"iterations": len(read_), "launches": len(launches)}
    return RawLog(NAME, steps_frame(by_step(read_)), trainer="rl4lms", metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
