"""Plain per-step records: JSONL (one JSON object per line) or Parquet (one row per step).

Nested objects are flattened with ``/`` (``{"actor": {"kl": 0.1}}`` -> ``actor/kl``); values
that are not numbers (or numeric strings) are dropped and their keys listed in
``metadata["non_numeric"]``. NaN and +-inf are kept as float values (a trainer that logged NaN
had a NaN: the NONFINITE detector reports it); only what a format itself writes for "not
logged" (JSON ``null``, an empty cell, a Parquet null) is null.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from advcore.ingest._parse import (evaluation_apart, first_json_line, flatten, is_parquet, number, numeric_frame,
                                   read_jsonl, records_frame)
from advcore.model import IngestError, RawLog
from advcore.ingest._format import Format

NAME = "plain"


#: Console lines that may precede the first JSON record (a logger's warning printed into the same file before
#: training starts: h200-trl-codegrpo-qwen25-coder-7b-mbpp, a transformers warning on line 1); each is reported
#: as a line that is not JSON.
LEADING_LINES = 5


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return path.suffix.lower() == ".parquet" or is_parquet(path)
    lines = head.splitlines()
    skip = next((i for i, line in enumerate(lines[:LEADING_LINES + 1]) if line.lstrip().startswith("{")), 0)
    first = first_json_line("\n".join(lines[skip:]))
    if first is None or not isinstance(first[1], dict) or not first[1]:
        return False
    record = first[1]
    # verl's file logger ({"step": N, "data": {...}}) has its own module.
    if isinstance(record.get("data"), dict):
        return False
    return any(number(v) is not None for v in flatten(record).values())


def _rows_are_groups(rows: list[dict[str, Any]]) -> bool:
    """Several rows of one step each carry a list of numbers: each list is one group's samples (a hand-written
    GRPO loop logging one row per prompt group with its rewards, the step advancing per update:
    h258-multiturn-grpo-qwen25-7b-harfeast-agent-groups-tie-after-epoch5, 140 groups of 16 over steps 0 to
    38), so a step's rows average to the share of tied groups and the mean within-group std: when at least
    :data:`GROUP_ROWS_SHARE` of those rows repeat the step of the row before (a step repeated once where a run
    restarted, h113-bitnet-grpo-g2-gsm8k-tied-groups, is no group layout). One row per step says nothing of
    its list's groups: its list keeps the whole-batch statistics."""
    listed = [r.get("step") for r in rows
              if any(isinstance(v, list) and len(v) >= 2 for v in r.values()) and number(r.get("step")) is not None]
    repeats = sum(1 for a, b in zip(listed, listed[1:], strict=False) if a == b)
    return repeats > 0 and repeats >= GROUP_ROWS_SHARE * len(listed)


#: The share of rows with lists that repeat the step before them, in a log of one group per row.
GROUP_ROWS_SHARE = 0.25


def read(path: Path) -> RawLog:
    if is_parquet(path):
        frame, dropped = numeric_frame(pl.read_parquet(path))
        return RawLog(NAME, frame, metadata={"non_numeric": dropped} if dropped else {})
    rows, errors = read_jsonl(path, "plain JSONL")
    if not rows:
        errors.append(IngestError(str(path), "plain JSONL: no JSON object lines found"))
        return RawLog(NAME, pl.DataFrame(), errors=tuple(errors))
    evaluations = evaluation_apart(rows)
    groups = _rows_are_groups(rows)
    frame, dropped = records_frame(rows, groups=groups)
    meta: dict[str, Any] = {"non_numeric": dropped} if dropped else {}
    if groups:
        meta["rows"] = "one group per row: its list of samples summarised as the group's mean, std and tie"
    if evaluations:
        meta["evaluation_records"] = evaluations
    return RawLog(NAME, frame, metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
