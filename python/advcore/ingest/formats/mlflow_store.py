"""MLflow tracking stores: one store holds many runs, each read as one run named
``<experiment>/<run name>``.

* **SQLite store** (``mlflow.set_tracking_uri("sqlite:///mlruns.db")``, the default backend of
  MLflow 3 and what verl's MLflow logger writes to ``/tmp/mlruns.db`` unless told otherwise): the
  ``metrics`` table holds one row per logged value (``key``, ``value``, ``timestamp`` in ms,
  ``run_uuid``, ``step``, ``is_nan``), ``runs`` names each run (``name``, ``experiment_id``,
  ``lifecycle_stage``) and ``experiments`` each experiment. MLflow stores NaN as ``value = 0`` with
  ``is_nan = 1``, and +-inf as +-1.7976931348623157e308 (the largest double): both are read back as
  the non-finite value logged. Runs deleted in MLflow (``lifecycle_stage = 'deleted'``) are left out.
* **Folder store** (``file:./mlruns``, MLflow's former default): ``<experiment id>/<run id>/`` holds
  ``meta.yaml`` (``run_name``, ``experiment_id``), and ``metrics/<key>`` one line per value,
  ``<timestamp ms> <value> <step>`` (a key with ``/`` is a sub-folder); the experiment's
  ``meta.yaml`` has its ``name``. A run folder is read as one run (:func:`run_folder_of` folds its
  files into it in a scan).

A key logged twice at one step keeps its last value (by timestamp), as MLflow's charts show it.
When every value was logged at step 0 (``log_metric`` without ``step=``), the step is the order in
which each key's values were logged. Layouts as written by MLflow 3.17 (``mlflow/store/tracking/
sqlalchemy_store.py`` and ``file_store.py``).
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from advcore.ingest._sqlite import columns, is_sqlite, read_only
from advcore.model import STORE_RUN, IngestError, RawLog
from advcore.ingest._format import Format

NAME = "mlflow"

#: MLflow writes +-inf as the largest finite double.
_DOUBLE_MAX = 1.7976931348623157e308
_NEEDED = {"metrics": {"key", "value", "step", "run_uuid", "timestamp"}, "runs": {"run_uuid", "name", "experiment_id"}}
#: Sub-folders of a folder-store run whose files are the run's records, not logs of their own.
_RECORD_FOLDERS = frozenset({"metrics", "params", "tags"})
_META_LINE = re.compile(r"^(\w+):\s*(.*?)\s*$")


def sniff(path: Path, head: str | None) -> bool:
    if path.is_dir():
        return _is_run_folder(path)
    if head is not None or not is_sqlite(path):
        return False
    try:
        with read_only(path) as conn:
            return all(need <= columns(conn, table) for table, need in _NEEDED.items())
    except sqlite3.Error:
        return False


def _is_run_folder(path: Path) -> bool:
    return (path / "meta.yaml").is_file() and (path / "metrics").is_dir()


def run_folder_of(path: Path) -> Path | None:
    """The folder-store run folder that ``path`` (a file found in a scan) is a record of, or None."""
    for folder in path.parents:
        if folder.name in _RECORD_FOLDERS and _is_run_folder(folder.parent):
            return folder.parent
    return None



def read_runs(path: Path) -> list[RawLog]:
    """One :class:`RawLog` per run of the store at ``path`` (an SQLite file or a run folder), in the
    order the runs started; ``metadata[STORE_RUN]`` is ``<experiment>/<run name>``. A run without
    metrics is a RawLog with no rows and an error naming it."""
    return [_read_folder(path)] if path.is_dir() else _read_sqlite(path)


def _read_sqlite(path: Path) -> list[RawLog]:
    with read_only(path) as conn:
        missing = [f"{t}({', '.join(sorted(need - columns(conn, t)))})" for t, need in _NEEDED.items()
                   if not need <= columns(conn, t)]
        if missing:
            return [RawLog(NAME, pl.DataFrame(), errors=(IngestError(
                str(path), f"an SQLite database, but not an MLflow tracking store: no column {'; '.join(missing)}"),))]
        has_stage = "lifecycle_stage" in columns(conn, "runs")
        has_nan = "is_nan" in columns(conn, "metrics")
        runs = conn.execute(
            "select r.run_uuid, r.name, coalesce(e.name, cast(r.experiment_id as text)) from runs r "
            "left join experiments e on e.experiment_id = r.experiment_id "
            + ("where coalesce(r.lifecycle_stage, 'active') != 'deleted' " if has_stage else "")
            + "order by r.start_time, r.run_uuid").fetchall()
        out = []
        for run_uuid, name, experiment in runs:
            rows = conn.execute(
                "select key, step, timestamp, value" + (", is_nan" if has_nan else ", 0")
                + " from metrics where run_uuid = ? order by key, step, timestamp", (run_uuid,)).fetchall()
            values = ((key, step, ts, math.nan if is_nan else _finite_back(value))
                      for key, step, ts, value, is_nan in rows)
            out.append(_run(path, f"{experiment}/{name or run_uuid}", run_uuid, values, table="metrics"))
    return out


def _finite_back(value: float) -> float:
    if value >= _DOUBLE_MAX:
        return math.inf
    if value <= -_DOUBLE_MAX:
        return -math.inf
    return float(value)


def _meta(path: Path) -> dict[str, str]:
    """The top-level ``key: value`` pairs of an MLflow ``meta.yaml`` (quotes removed)."""
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        m = _META_LINE.match(line)
        if m:
            out[m.group(1)] = m.group(2).strip("'\"")
    return out


def _read_folder(folder: Path) -> RawLog:
    meta = _meta(folder / "meta.yaml")
    experiment = _meta(folder.parent / "meta.yaml").get("name") or meta.get("experiment_id") or folder.parent.name
    tag = folder / "tags" / "mlflow.runName"
    name = meta.get("run_name") or (tag.read_text(errors="replace").strip() if tag.is_file() else "") or folder.name
    values: list[tuple[str, int, int, float]] = []
    errors: list[IngestError] = []
    metrics = folder / "metrics"
    for file in sorted(p for p in metrics.rglob("*") if p.is_file()):
        key = file.relative_to(metrics).as_posix()
        with file.open(encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                parts = line.split()
                if not parts:
                    continue
                try:
                    ts, value = int(parts[0]), float(parts[1])
                    step = int(parts[2]) if len(parts) > 2 else 0
                except (ValueError, IndexError):
                    errors.append(IngestError(str(file), "expected '<timestamp> <value> <step>', got "
                                                         f"{line.strip()[:80]!r}", n))
                    continue
                values.append((key, step, ts, value))
    run = _run(folder, f"{experiment}/{name}", folder.name, values, table="metrics/")
    return RawLog(run.format, run.frame, metadata=run.metadata, errors=(*errors, *run.errors))


def _run(path: Path, name: str, run_id: str, values: Iterable[tuple[str, int, int, float]], *, table: str) -> RawLog:
    long = pl.DataFrame(list(values), schema={"key": pl.String, "step": pl.Int64, "timestamp": pl.Int64,
                                             "value": pl.Float64}, orient="row")
    meta: dict[str, Any] = {STORE_RUN: name, "run_id": run_id}
    if long.height == 0:
        return RawLog(NAME, pl.DataFrame(), metadata=meta,
                      errors=(IngestError(str(path), f"the MLflow run {name!r} has no metrics ({table})"),))
    # a metric logged under the name ``step`` would collide with the step index
    long = long.with_columns(pl.col("key").replace("step", "step (logged)")).sort("key", "step", "timestamp")
    if long["step"].max() == 0 and long["key"].is_duplicated().any():  # log_metric() without step=
        long = long.with_columns(pl.int_range(pl.len()).over("key").alias("step"))
        meta["step_inferred"] = True
    long = long.unique(["key", "step"], keep="last", maintain_order=True)
    frame = long.pivot(on="key", index="step", values="value", sort_columns=False).sort("step")
    return RawLog(NAME, frame, metadata=meta)


FORMAT = Format(NAME, sniff, reads_folders=True, read_runs=read_runs)
