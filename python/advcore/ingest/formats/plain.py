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


def read(path: Path) -> RawLog:
    if is_parquet(path):
        frame, dropped = numeric_frame(pl.read_parquet(path))
        return RawLog(NAME, frame, metadata={"non_numeric": dropped} if dropped else {})
    rows, errors = read_jsonl(path, "plain JSONL")
    if not rows:
        errors.append(IngestError(str(path), "plain JSONL: no JSON object lines found"))
        return RawLog(NAME, pl.DataFrame(), errors=tuple(errors))
    evaluations = evaluation_apart(rows)
    frame, dropped = records_frame(rows)
    meta: dict[str, Any] = {"non_numeric": dropped} if dropped else {}
    if evaluations:
        meta["evaluation_records"] = evaluations
    return RawLog(NAME, frame, metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
