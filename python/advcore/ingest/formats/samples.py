"""Per-sample rows in the canonical long format (Parquet or JSONL): ``step``, ``group``, ``reward``
and any of ``adv``, ``adv_raw``, ``adv_clipped``, ``value``, ``return``, ``slice`` /
``slice_<label>``, reduced per step by :func:`advcore.ingest._reduce.reduce` (the metrics it lists).
A Parquet file is read in batches of whole steps (:func:`advcore.ingest._reduce.parquet_batches`),
never whole: its size is bounded by the disk, not by memory.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from advcore.ingest._parse import first_json_line, is_parquet, read_jsonl
from advcore.ingest._reduce import parquet_batches, reduce
from advcore.model import IngestError, RawLog
from advcore.ingest._format import Format

NAME = "samples"

_REQUIRED = frozenset({"step", "group", "reward"})


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        if not is_parquet(path):  # by content: any file name
            return False
        try:
            return _REQUIRED <= set(pl.read_parquet_schema(path))
        except Exception:
            return False
    first = first_json_line(head)
    return first is not None and isinstance(first[1], dict) and _REQUIRED <= set(first[1])


def load_samples(path: Path, what: str) -> tuple[pl.DataFrame, list[IngestError]]:
    """The rows of a per-sample Parquet or JSONL file (``what`` names the layout in errors); a line
    that is not a JSON object is an error naming it, and the others are read."""
    if path.suffix.lower() == ".parquet":
        return pl.read_parquet(path), []
    rows, errors = read_jsonl(path, f"{what} (expected one sample object per line)", flat=False)
    if not rows:
        return pl.DataFrame(), errors
    return pl.DataFrame(rows, infer_schema_length=None), errors


def read(path: Path) -> RawLog:
    path = Path(path)
    if is_parquet(path) and _REQUIRED <= set(pl.read_parquet_schema(path)):
        # never read whole: a per-sample dataset may be larger than memory
        return reduce(parquet_batches(path), format=NAME, layout="long", reward_col="reward", group_col="group",
                      extra=[], trainer=None)
    frame, errors = load_samples(path, "per-sample JSONL")
    if frame.is_empty() or not _REQUIRED <= set(frame.columns):
        if not frame.is_empty():
            errors.append(IngestError(str(path), "expected per-sample columns step, group, reward"))
        elif not errors:
            errors.append(IngestError(str(path), "no samples"))
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}), errors=tuple(errors))
    return reduce(frame, format=NAME, layout="long", reward_col="reward", group_col="group", extra=[], trainer=None,
                  errors=errors)


FORMAT = Format(NAME, sniff, read, per_sample=True)
