"""Weights & Biases exports.

* Chart CSV export: a step column (``Step``) and ``"<run> - <key>"`` columns, with
  ``<run> - <key>__MIN`` / ``__MAX`` band columns (kept as raw keys, unmapped). A chart holding
  several runs is read for its first run; the others are named in an error entry.
* Run-history CSV / JSONL / Parquet (``run.history()``, "export as CSV"): one row per logged
  step with W&B's ``_step``, ``_runtime``, ``_timestamp``; columns in any order, blank cells
  where a key was not logged.
* ``wandb-summary.json``: a single snapshot (one row) of the last logged values.

The step is the trainer's own step when the export has one (``train/global_step``), else
``_step``. A W&B *runs table* export (one row per run, no time series) is an error naming the
file. The trainer hint comes from the keys (TRL, verl, SB3), else ``wandb``.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore._escape import excerpt
from advcore.model import IngestError, RawLog
from advcore.ingest import _trainers as trainers
from advcore.ingest._text import open_text
from advcore.ingest.formats.csv_table import csv_records
from advcore.ingest.formats.plain import (
    first_json_line,
    flatten,
    is_parquet,
    read_json,
    numeric_frame,
    read_jsonl,
    records_frame,
)

NAME = "wandb"

_CHART = re.compile(r"^(?P<run>.+?) - (?P<key>.+?)(?P<band>__MIN|__MAX)?$")
_STEP_KEYS = ("train/global_step", "trainer/global_step", "global_step", "_step")
_RUNS_TABLE = {"Name", "State"}
_SYSTEM = ("_step", "_runtime", "_timestamp", "_wandb")


def _header(head: str) -> list[str] | None:
    line = head.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    if not line or line.lstrip().startswith(("{", "[")):
        return None
    try:
        return next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return None


def _is_chart(header: list[str]) -> bool:
    # The first column names the x axis (``Step``, ``_step``, ``global_step``): a logger line's
    # timestamp (``2026-05-27 11:57:00,123 - INFO - ...``) is no header.
    rest = header[1:]
    return (bool(rest) and " - " not in header[0] and re.fullmatch(r"[A-Za-z_][\w/ .]*", header[0]) is not None
            and all(_CHART.match(h) for h in rest))


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        if not is_parquet(path):
            return False
        try:
            return "_step" in pl.read_parquet_schema(path)
        except Exception:
            return False
    text = head.lstrip("\ufeff").lstrip()
    if text.startswith("{"):
        if path.name == "wandb-summary.json":
            return True
        first = first_json_line(head)
        if first is not None and isinstance(first[1], dict):  # JSONL history
            return "_step" in first[1]
        # a (pretty-printed) summary object
        return bool(re.search(r'"_wandb"\s*:', head)) or (
            bool(re.search(r'"_runtime"\s*:', head)) and bool(re.search(r'"_step"\s*:', head)))
    header = _header(head)
    if header is None or len(header) < 2:
        return False
    if "_step" in header or _is_chart(header):
        return True
    return _RUNS_TABLE <= set(header) and bool({"Runtime", "Created", "Sweep", "Tags", "User"} & set(header))


def trainer_of(keys: list[str]) -> str:
    """The trainer of a W&B history: the rule for any log's keys, then W&B's own sections (any
    ``critic/`` or ``actor/`` key is verl's, ``rollout/`` next to PPO's update keys is SB3's)."""
    bare = {k[len("train/"):] if k.startswith("train/") else k for k in keys}
    if "reward_std" in bare:  # TRL's trainer logs under train/ on W&B
        return "trl"
    known = trainers.trainer_of(keys)
    if known is not None:
        return known
    if any(k.startswith(("critic/", "actor/")) for k in bare):
        return "verl"
    if bare & {"approx_kl", "clip_fraction", "explained_variance"} and any(k.startswith("rollout/") for k in keys):
        return "sb3"
    return "wandb"


def _with_step(frame: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """Put a ``step`` column first, from the trainer's own step key when there is one."""
    for key in _STEP_KEYS:
        if key in frame.columns and frame[key].null_count() < frame.height:
            step = frame[key].cast(pl.Int64, strict=False).alias("step")
            return frame.drop("step", strict=False).insert_column(0, step), key
    return frame, None


def _raw(frame: pl.DataFrame, path: Path, kind: str, dropped: list[str],
         errors: list[IngestError] | None = None, extra: dict[str, Any] | None = None) -> RawLog:
    frame, step_key = _with_step(frame)
    meta: dict[str, Any] = {"wandb_export": kind, **(extra or {})}
    if step_key:
        meta["step_source"] = step_key
    if dropped:
        meta["non_numeric"] = dropped
    keys = [c for c in frame.columns if c not in _SYSTEM and c != "step"]
    return RawLog(NAME, frame, trainer=trainer_of(keys), metadata=meta, errors=tuple(errors or ()))


def _read_summary(path: Path) -> RawLog:
    doc, error = read_json(path, "W&B summary")
    if error is not None:
        return RawLog(NAME, pl.DataFrame(), errors=(error,))
    if not isinstance(doc, dict):
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(str(path), "W&B summary: expected a JSON object"),))
    record = flatten({k: v for k, v in doc.items() if k != "_wandb"})
    frame, dropped = records_frame([record])
    return _raw(frame, path, "summary", dropped, extra={"snapshot": True})


def _read_csv(path: Path) -> RawLog:
    header, rows, errors = csv_records(path, "W&B CSV")
    if header is not None and "_step" not in header and not _is_chart(header):
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(
            str(path), "a W&B runs-table export (one row per run, no time series); expected a "
            "run-history export (with _step) or a chart export (\"<run> - <key>\" columns)"),))
    if header is None or not rows:
        return RawLog(NAME, pl.DataFrame(), errors=tuple(errors))
    if "_step" in header:
        frame, dropped = records_frame(rows)
        return _raw(frame, path, "history", dropped, errors)
    # Chart export: first column is the x axis; the rest are "<run> - <key>[__MIN|__MAX]".
    runs: dict[str, None] = {}
    rename: dict[str, str] = {}
    for h in header[1:]:
        m = _CHART.match(h)
        assert m is not None
        runs.setdefault(m.group("run"))
    first = next(iter(runs))
    for h in header[1:]:
        m = _CHART.match(h)
        assert m is not None
        if m.group("run") == first:
            rename[h] = m.group("key") + (m.group("band") or "")
    if len(runs) > 1:
        errors.append(IngestError(str(path), f"W&B chart export holds {len(runs)} runs; read only the first "
                                  f"({excerpt(first)}), not {', '.join(excerpt(r) for r in list(runs)[1:4])}"
                                  f"{' ...' if len(runs) > 4 else ''}"))
    x = header[0]
    picked = [{"step": r[x], **{rename[h]: r[h] for h in rename}} for r in rows]
    picked = [r for r in picked if any(v.strip() for k, v in r.items() if k != "step")]
    frame, dropped = records_frame(picked)
    return _raw(frame, path, "chart", dropped, errors, extra={"wandb_run": first, "x_axis": x})


def read(path: Path) -> RawLog:
    if is_parquet(path):
        frame, dropped = numeric_frame(pl.read_parquet(path))
        return _raw(frame, path, "history", dropped)
    with open_text(path) as f:
        head = f.read(65536).lstrip()
    if head.startswith("{"):
        first = first_json_line(head)
        if first is not None and isinstance(first[1], dict) and path.name != "wandb-summary.json" \
                and "_wandb" not in first[1]:
            rows, errors = read_jsonl(path, "W&B history JSONL")
            if not rows:
                errors.append(IngestError(str(path), "W&B history JSONL: no JSON object lines"))
                return RawLog(NAME, pl.DataFrame(), errors=tuple(errors))
            frame, dropped = records_frame(rows)
            return _raw(frame, path, "history", dropped, errors)
        return _read_summary(path)
    return _read_csv(path)
