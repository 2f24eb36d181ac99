"""verl's JSONL file logger: one ``{"step": N, "data": {...}}`` object per line.

``null`` (verl serialises NaN/None as null) stays null; string values that are numbers
(``"0.5"``) are read as numbers, other strings (``"schedule"``) are skipped and listed in
``metadata["text_valued_keys"]``. Key order may differ between lines. A line that is not a
JSON object of that shape (a truncated last line) is an :class:`IngestError` naming the line;
the other lines are kept.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.ingest._model import IngestError, RawLog
from advcore.ingest.formats.verl_console import value

NAME = "verl_jsonl"

_HEAD = re.compile(r'^\s*\{\s*"step"\s*:\s*-?\d+(?:\.0*)?\s*,\s*"data"\s*:\s*\{')


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    for line in head.splitlines():
        if line.strip():
            return _HEAD.match(line) is not None
    return False


def read(path: Path) -> RawLog:
    path = Path(path)
    rows: list[dict[str, Any]] = []
    errors: list[IngestError] = []
    text_values: set[str] = set()
    with path.open("r", encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append(IngestError(str(path), f"invalid JSON ({e.msg}); expected {{\"step\":N,\"data\":{{...}}}}",
                                          lineno))
                continue
            if not (isinstance(obj, dict) and isinstance(obj.get("data"), dict) and "step" in obj):
                errors.append(IngestError(str(path), 'expected an object {"step":N,"data":{...}}', lineno))
                continue
            step = value(obj["step"])
            if step is None:
                errors.append(IngestError(str(path), f"step is not a number: {obj['step']!r}", lineno))
                continue
            row: dict[str, Any] = {"step": int(step)}
            for k, v in obj["data"].items():
                x = value(v)
                if x is None and isinstance(v, str):
                    text_values.add(k)
                    continue
                row[k] = x
            rows.append(row)
    if not rows:
        if not errors:
            errors.append(IngestError(str(path), 'no {"step":N,"data":{...}} line found'))
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}), trainer="verl",
                      errors=tuple(errors))
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(k for k in r if k != "step"))
    columns = {"step": pl.Series("step", [r["step"] for r in rows], dtype=pl.Int64)}
    for k in keys:
        columns[k] = pl.Series(k, [r.get(k) for r in rows], dtype=pl.Float64)
    meta: dict[str, Any] = {"first_step": rows[0]["step"], "last_step": rows[-1]["step"]}
    if text_values:
        meta["text_valued_keys"] = sorted(text_values)
    return RawLog(NAME, pl.DataFrame(columns), trainer="verl", metadata=meta, errors=tuple(errors))
