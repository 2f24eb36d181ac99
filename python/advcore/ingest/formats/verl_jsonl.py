"""verl's JSONL file logger: one ``{"step": N, "data": {...}}`` object per line (other top-level
keys beside them, such as a wall-clock ``elapsed_seconds``, are not metrics and are not read).

verl's file logger serialises NaN and inf as ``null`` (``json.dumps`` of orjson, which has no NaN):
a ``null`` in a key that holds a number on another line of the file is read as NaN there (the
keys are listed in ``metadata["null_as_nan_keys"]``); a key that is ``null`` on every line stays
null (it was never a number). A key absent from a line is missing, not NaN. String values that are numbers
(``"0.5"``) are read as numbers, other strings (``"schedule"``) are skipped and listed in
``metadata["text_valued_keys"]``. Key order may differ between lines. A line that is not a
JSON object of that shape (a truncated last line) is an :class:`IngestError` naming the line;
the other lines are kept.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore._escape import excerpt
from advcore.model import IngestError, RawLog
from advcore.ingest._parse import first_json_line, read_jsonl, records_frame, value
from advcore.ingest._format import Format

NAME = "verl_jsonl"

_HEAD = re.compile(r'^\s*\{\s*"step"\s*:\s*-?\d+(?:\.0*)?\s*,\s*"data"\s*:\s*\{')


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    for line in head.splitlines():
        if line.strip():
            if _HEAD.match(line) is not None:
                return True
            first = first_json_line(line)
            return (first is not None and isinstance(first[1], dict) and isinstance(first[1].get("data"), dict)
                    and value(first[1].get("step")) is not None)
    return False


def _check(obj: dict[str, Any]) -> str | None:
    if not isinstance(obj.get("data"), dict) or "step" not in obj:
        return 'expected an object {"step":N,"data":{...}}'
    if value(obj["step"]) is None:
        return f"step is not a number: {excerpt(str(obj['step']))}"
    return None


def read(path: Path) -> RawLog:
    path = Path(path)
    records, errors = read_jsonl(path, "verl JSONL", flat=False, check=_check)
    rows: list[dict[str, Any]] = []
    text_values: set[str] = set()
    for obj in records:
        row: dict[str, Any] = {"step": value(obj["step"])}
        for k, v in obj["data"].items():
            if isinstance(v, str) and value(v) is None:
                text_values.add(k)
                continue
            row[k] = v
        rows.append(row)
    if not rows:
        if not errors:
            errors.append(IngestError(str(path), 'no {"step":N,"data":{...}} line found'))
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}), trainer="verl",
                      errors=tuple(errors))
    numeric = {k for row in rows for k, v in row.items() if v is not None and value(v) is not None}
    nan_keys = sorted({k for row in rows for k, v in row.items() if v is None and k in numeric})
    for row in rows:
        for k in nan_keys:
            if k in row and row[k] is None:
                row[k] = math.nan
    frame, _ = records_frame(rows, parse=value)
    meta: dict[str, Any] = {"first_step": frame["step"][0], "last_step": frame["step"][-1]}
    if nan_keys:
        meta["null_as_nan_keys"] = nan_keys
    if text_values:
        meta["text_valued_keys"] = sorted(text_values)
    return RawLog(NAME, frame, trainer="verl", metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
