"""The long stage-trace Parquet written by :meth:`advcore.Tracer.write_parquet` (columns ``step``,
``stage``, ``slice``, ``statistic``, ``value``; see :func:`advcore.trace.trace_step`), read back
into per-step canonical metrics with :func:`advcore.trace.canonical_row`, one step at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from advcore.errors import AdvcoreError
from advcore.ingest._model import IngestError, RawLog

NAME = "trace"

_COLUMNS = {"step", "stage", "slice", "statistic", "value"}


def sniff(path: Path, head: str | None) -> bool:
    if head is not None or path.suffix.lower() != ".parquet":
        return False
    try:
        return _COLUMNS <= set(pl.read_parquet_schema(path))
    except Exception:
        return False


def read(path: Path) -> RawLog:
    from advcore.trace import canonical_row, rows_frame

    frame = pl.read_parquet(Path(path), columns=sorted(_COLUMNS))
    rows: list[dict[str, Any]] = []
    errors: list[IngestError] = []
    for part in frame.filter(pl.col("step").is_not_null()).partition_by("step", maintain_order=True):
        step = int(part["step"][0])
        try:
            rows.append({"step": step, **canonical_row(part)})
        except AdvcoreError as e:
            errors.append(IngestError(str(path), f"step {step}: {e}"))
    out = rows_frame(rows)
    meta = {"layout": "trace", "stages": sorted(frame["stage"].unique().to_list())}
    return RawLog(NAME, out, metadata=meta, errors=tuple(errors))
