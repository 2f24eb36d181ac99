"""The long stage-trace Parquet written by :meth:`advcore.Monitor.write_parquet` (columns ``step``,
``stage``, ``slice``, ``statistic``, ``value``; see :func:`advcore.trace.trace_step`), read back
into per-step canonical metrics: a monitor's recording carries them as rows of stage ``"step"``
(everything the detectors saw, reference checks and trainer metrics included); a bare trace is
read with :func:`advcore.trace.canonical_row`, one step at a time. The trace rows are kept
(``Run.trace``) so that ``advcore trace`` shows them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from advcore._escape import described
from advcore.errors import AdvcoreError
from advcore.model import IngestError, RawLog
from advcore.ingest._parse import is_parquet
from advcore.ingest._format import Format

NAME = "trace"

_COLUMNS = {"step", "stage", "slice", "statistic", "value"}


def sniff(path: Path, head: str | None) -> bool:
    if head is not None or not is_parquet(path):  # by content: a recording under any file name
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
        recorded = part.filter(pl.col("stage") == "step")
        if recorded.height:  # a monitor's recording: the per-step metrics the detectors saw
            rows.append({"step": step, **dict(zip(recorded["statistic"], recorded["value"], strict=True))})
            continue
        try:
            rows.append({"step": step, **canonical_row(part)})
        except AdvcoreError as e:
            errors.append(IngestError(str(path), f"step {step}: {described(e)}"))
    out = rows_frame(rows)
    meta = {"layout": "trace", "stages": sorted(frame["stage"].unique().to_list())}
    return RawLog(NAME, out, metadata=meta, errors=tuple(errors), trace=frame.filter(pl.col("stage") != "step"))


FORMAT = Format(NAME, sniff, read, per_sample=True)
