"""Trackio project databases: ``<TRACKIO_DIR>/<project>.db`` (default ``~/.cache/huggingface/trackio``),
one SQLite file per project holding all its runs; each run is read as one run named
``<project>/<run name>``.

The ``metrics`` table has one row per ``trackio.log()`` call: ``run_name``, ``step`` (the caller's,
or Trackio's own counter), ``timestamp`` (ISO 8601) and ``metrics``, a JSON object (nested objects
flattened with ``/``; Trackio writes NaN and +-inf as the strings ``"NaN"``, ``"Infinity"``,
``"-Infinity"``). Two calls at one step are merged, the later value of a key winning. Values that are
not numbers (text, media) are left out. ``system_metrics`` (GPU, memory) is not read. Layout as
written by Trackio 0.43 (``trackio/sqlite_storage.py``); databases of older versions, whose
``metrics`` table has no ``run_id``, are read the same way (runs are told apart by name).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import polars as pl

from advcore.ingest._sqlite import columns, is_sqlite, read_only
from advcore.ingest._parse import flatten, number, records_frame
from advcore.model import STORE_RUN, IngestError, RawLog
from advcore.ingest._format import Format

NAME = "trackio"

_NEEDED = {"run_name", "step", "metrics"}


def sniff(path: Path, head: str | None) -> bool:
    if head is not None or not is_sqlite(path):
        return False
    try:
        with read_only(path) as conn:
            return _NEEDED <= columns(conn, "metrics")
    except sqlite3.Error:
        return False



def read_runs(path: Path) -> list[RawLog]:
    """One :class:`RawLog` per run of the project database ``path``, in the order the runs first
    logged; ``metadata[STORE_RUN]`` is ``<project>/<run name>``. A record whose JSON cannot be read
    is an error naming its row id, and is skipped."""
    project = path.stem
    with read_only(path) as conn:
        have = columns(conn, "metrics")
        if not _NEEDED <= have:
            return [RawLog(NAME, pl.DataFrame(), errors=(IngestError(
                str(path), "an SQLite database, but not a Trackio project: table metrics lacks "
                           + ", ".join(sorted(_NEEDED - have))),))]
        order = "id" if "id" in have else "rowid"
        rows = conn.execute(f"select {order}, run_name, step, metrics from metrics order by {order}").fetchall()
    by_run: dict[str, dict[int, dict[str, Any]]] = {}
    errors: dict[str, list[IngestError]] = {}
    for row_id, run_name, step, text in rows:
        steps = by_run.setdefault(run_name, {})
        try:
            record = json.loads(text)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
        except (ValueError, TypeError) as e:
            errors.setdefault(run_name, []).append(IngestError(
                str(path), f"metrics row id {row_id}: its JSON could not be read ({e})"))
            continue
        steps.setdefault(int(step), {}).update(
            (k, v) for k, v in flatten(record).items() if number(v) is not None)
    out = []
    for run_name, steps in by_run.items():
        frame, _ = records_frame([{**record, "step": step} for step, record in sorted(steps.items())])
        errs = tuple(errors.get(run_name, ()))
        if frame.width <= 1:
            errs += (IngestError(str(path), f"the Trackio run {run_name!r} logged no numeric metric (table metrics)"),)
        out.append(RawLog(NAME, frame, metadata={STORE_RUN: f"{project}/{run_name}"}, errors=errs))
    return out


FORMAT = Format(NAME, sniff, read_runs=read_runs)
