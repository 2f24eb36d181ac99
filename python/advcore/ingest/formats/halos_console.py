"""The console of the DPO reference trainer and of HALOs: ``train stats after N examples: {...}``.

Who prints it: ``BasicTrainer.train`` of eric-mitchell/direct-preference-optimization
(``trainers.py``) and the trainers built on it, among them ContextualAI/HALOs (``trainers.py``:
``PPOTrainer``, ``DPOTrainer``, ``KTOTrainer`` ...), print once per logging interval
``train stats after {example_counter} examples: {formatted_dict(mean_train_metrics)}``: a Python
dict literal whose values are numbers formatted as strings (``'loss/policykl': '0.0020162'``), with
``counters/examples`` and ``counters/updates`` as ints. The step is the number of examples seen
(the step the trainer gives W&B). Evaluation lines (``eval after N: {...}``), ``skipping logging
after N examples`` and any other text are skipped. A stats line whose dict does not parse (a
truncated line) is an :class:`IngestError` naming the line; the other lines are still read.
Trainer ``halos``: the alias table reads HALOs PPO's ``loss/policykl`` (the KL of the policy to
the policy that scored the batch), ``loss/entropy``, ``clipfrac/policy``, ``returns/mean`` and
``val/mean``.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest._text import read_text, readable_lines
from advcore.ingest._parse import by_step, dict_literal_numbers, steps_frame
from advcore.ingest._format import Format

NAME = "halos_console"

# searched, bounded digit run: linear on any line
_STATS = re.compile(r"train stats after (\d{1,15}) examples: (\{.*\})\s*$")


def sniff(path: Path, head: str | None) -> bool:
    if head is None or "train stats after" not in head:
        return False
    return any(_STATS.search(line) for line in head.splitlines() if "train stats after" in line)


def read(path: Path) -> RawLog:
    reports: list[tuple[int, dict[str, float | None]]] = []
    errors: list[IngestError] = []
    for n, line in readable_lines(enumerate(read_text(path).split("\n"), start=1), path, errors):
        if "train stats after" not in line:
            continue
        m = _STATS.search(line.rstrip("\r"))
        metrics = dict_literal_numbers(m.group(2)) if m is not None else None
        if m is None or metrics is None:
            errors.append(IngestError(str(path), "HALOs/DPO console: expected 'train stats after N examples: {...}'; "
                                                 "the line is truncated or its dict does not parse", n))
            continue
        reports.append((int(m.group(1)), metrics))
    if not reports:
        errors.append(IngestError(str(path), "HALOs/DPO console: no 'train stats after N examples: {...}' line"))
        return RawLog(NAME, pl.DataFrame(), trainer="halos", errors=tuple(errors))
    return RawLog(NAME, steps_frame(by_step(reports)), trainer="halos", metadata={"reports": len(reports)},
                  errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
