"""OpenRLHF console logs: ``Global step N: {'policy_loss': ..., 'reward': ...}`` lines.

The dict is the trainer's ``logs_dict`` (the status averaged over the PPO epochs: ``policy_loss``,
``actor_lr``, ``reward``, ``return``, ``response_length``, ``total_length``, ``kl``,
``critic_loss``, ``values``, ``critic_lr``, and in newer versions ``policy_entropy``,
``ppo_clip_ratio``, ``ppo_kl``, ``actor_grad_norm``, ...), printed as a Python literal.
Ray prefixes and ANSI codes are stripped; ``np.float64(x)``/``tensor(x)`` wrappers and
``nan``/``inf`` are read. A dict that cannot be parsed (a truncated line) is an
:class:`IngestError` naming the line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest._text import open_text, readable_lines
from advcore.ingest._parse import clean, printed_dict, records_frame, value
from advcore.ingest._format import Format

NAME = "openrlhf"

_LINE = re.compile(r"^\s*Global step (\d+)\s*:\s*(\{.*)$")


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    return any(_LINE.match(clean(line)) for line in head.splitlines() if "Global step" in line)


def read(path: Path) -> RawLog:
    path = Path(path)
    rows: list[dict[str, Any]] = []
    errors: list[IngestError] = []
    with open_text(path) as f:
        for lineno, physical in readable_lines(enumerate(f, start=1), path, errors):
            if "Global step" not in physical:
                continue
            m = _LINE.match(clean(physical))
            if m is None:
                continue
            obj = printed_dict(m.group(2).strip())
            if obj is None:
                errors.append(IngestError(str(path), "expected a Python dict literal after 'Global step N:'", lineno))
                continue
            row: dict[str, Any] = {"step": int(m.group(1))}
            row.update((str(k), v) for k, v in obj.items() if v is None or value(v) is not None)
            rows.append(row)
    if not rows:
        if not errors:
            errors.append(IngestError(str(path), "no 'Global step N: {...}' line found"))
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}), trainer="openrlhf",
                      errors=tuple(errors))
    frame, _ = records_frame(rows, parse=value)
    meta: dict[str, Any] = {"first_step": rows[0]["step"], "last_step": rows[-1]["step"]}
    return RawLog(NAME, frame, trainer="openrlhf", metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
