"""Per-sample rows in the canonical long format (Parquet or JSONL): ``step``, ``group``, ``reward``
and any of ``adv``, ``adv_raw``, ``adv_clipped``, ``value``, ``return``, ``slice`` /
``slice_<label>``, reduced per step by :func:`advcore.ingest._reduce.reduce` (the metrics it lists).
A Parquet file is read in batches of whole steps (:func:`advcore.ingest._reduce.parquet_batches`),
never whole: its size is bounded by the disk, not by memory. A folder that holds two or more Parquet
files of this layout (a dataset written in parts: ``part-0.parquet``, ``part-1.parquet``, one per
writer or per range of steps, as Polars, pyarrow and Spark write them) is one run: its parts, in
name order, are read as one table, so a step whose rows are spread over several parts is reduced
whole. A group is a group of its part: writers number their groups on their own (each rank from 0),
so group 0 of two parts is two groups. A part that lacks a column the others have is named in the
run's errors (its rows have no such value).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from advcore.ingest._parse import first_json_line, is_parquet, read_jsonl
from advcore.ingest._reduce import PART_COLUMN, parquet_batches, reduce
from advcore.model import IngestError, RawLog
from advcore.ingest._format import Format

NAME = "samples"

_REQUIRED = frozenset({"step", "group", "reward"})


def _is_long(path: Path) -> bool:
    """Whether ``path`` is a Parquet file (by content: any name) with the columns of this layout."""
    if not is_parquet(path):
        return False
    try:
        return _REQUIRED <= set(pl.read_parquet_schema(path))
    except Exception:
        return False


def dataset_parts(folder: Path) -> list[Path]:
    """The ``.parquet`` files of this layout directly in ``folder``, in name order: the parts of one
    dataset when there are two or more."""
    return [p for p in sorted(folder.glob("*.parquet")) if p.is_file() and _is_long(p)]


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return len(dataset_parts(path)) >= 2 if path.is_dir() else _is_long(path)
    first = first_json_line(head)
    return first is not None and isinstance(first[1], dict) and _REQUIRED <= set(first[1])


def load_samples(path: Path, what: str, required: frozenset[str]) -> tuple[pl.DataFrame | None, list[IngestError]]:
    """The rows of a per-sample Parquet or JSONL file (``what`` names the layout in errors), or None
    when it holds none or lacks a ``required`` column (the errors say which); a line that is not a
    JSON object is an error naming it, and the others are read."""
    errors: list[IngestError] = []
    if path.suffix.lower() == ".parquet":
        frame = pl.read_parquet(path)
    else:
        rows, errors = read_jsonl(path, f"{what} (expected one sample object per line)", flat=False)
        frame = pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()
    if frame.is_empty():
        return None, errors or [IngestError(str(path), "no samples")]
    missing = sorted(required - set(frame.columns))
    if missing:
        return None, [*errors, IngestError(str(path), f"{what}: expected the columns {', '.join(sorted(required))} "
                                                      f"(missing: {', '.join(missing)})")]
    return frame, errors


def empty(name: str, errors: list[IngestError]) -> RawLog:
    """A per-sample format's result when no sample could be read."""
    return RawLog(name, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}), errors=tuple(errors))


def _missing_columns(parts: list[Path]) -> list[IngestError]:
    """An error for each part that lacks a column another part has."""
    columns = {part: set(pl.read_parquet_schema(part)) for part in parts}
    every = set().union(*columns.values())
    return [IngestError(str(part), f"a part of the dataset without the column(s) {', '.join(sorted(every - have))} "
                                   "that other parts have: its rows have none")
            for part, have in columns.items() if every - have]


def read(path: Path) -> RawLog:
    path = Path(path)
    if path.is_dir():
        parts = dataset_parts(path)
        if not parts:
            return empty(NAME, [IngestError(str(path), "a folder without a Parquet file of per-sample rows "
                                                       "(columns step, group, reward)")])
        batches = (b.with_columns(pl.concat_str(PART_COLUMN, pl.lit("#"), pl.col("group").cast(pl.String))
                                  .alias("group")).drop(PART_COLUMN) for b in parquet_batches(parts))
        return reduce(batches, format=NAME, layout="long", reward_col="reward", group_col="group", extra=[],
                      trainer=None, errors=_missing_columns(parts), metadata={"parts": len(parts)})
    if _is_long(path):
        # never read whole: a per-sample dataset may be larger than memory
        return reduce(parquet_batches(path), format=NAME, layout="long", reward_col="reward", group_col="group",
                      extra=[], trainer=None)
    frame, errors = load_samples(path, "per-sample rows", _REQUIRED)
    if frame is None:
        return empty(NAME, errors)
    return reduce(frame, format=NAME, layout="long", reward_col="reward", group_col="group", extra=[], trainer=None,
                  errors=errors)


FORMAT = Format(NAME, sniff, read, reads_folders=True, per_sample=True)
