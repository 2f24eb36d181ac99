"""Weights & Biases exports.

* Chart CSV export: a step column (``Step``) and ``"<run> - <key>"`` columns, with
  ``<run> - <key>__MIN`` / ``__MAX`` band columns (kept as raw keys, unmapped). A chart holding
  several runs is read for its first run; the others are named in an error entry.
* Run-history CSV / JSONL / Parquet (``run.history()``, "export as CSV"): one row per logged
  step with W&B's ``_step``, ``_runtime``, ``_timestamp``; columns in any order, blank cells
  where a key was not logged.
* ``wandb-summary.json``: a single snapshot (one row) of the last logged values.
* The binary record file of a run folder (``wandb/offline-run-*/run-<id>.wandb``, also kept beside a
  synced ``wandb/run-*/``): its history records, one row per ``wandb.log`` step. The file is a
  LevelDB log (a 7-byte header ``:W&B``, 0xBEE1, version 0; then 32 KiB blocks of chunks with a
  7-byte header: CRC-32, length, type full/first/middle/last) of protobuf ``Record`` messages,
  read here without W&B's client (wandb 0.31 has no Python reader): ``Record.history`` (field 2)
  holds ``HistoryItem``s (``key`` 1, ``nested_key`` 2, ``value_json`` 16), ``Record.run`` (field 17)
  the run's ``display_name`` (8) and ``project`` (3); field numbers of ``wandb/proto/
  wandb_internal.proto`` in wandb 0.31.0. A file cut short (a run still writing, a crash) keeps the
  records before the cut.

The step is the trainer's own step when the export has one (``train/global_step``), else
``_step``. A W&B *runs table* export (one row per run, no time series) is an error naming the
file. The trainer hint comes from the keys (TRL, verl, SB3), else ``wandb``.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore._escape import excerpt
from advcore.model import IngestError, RawLog
from advcore.ingest import _trainers as trainers
from advcore.ingest._text import WANDB_RECORDS_MAGIC, open_text, starts_with
from advcore.ingest.formats.csv_table import csv_records
from advcore.ingest._parse import (
    first_json_line,
    flatten,
    is_parquet,
    read_json,
    numeric_frame,
    read_jsonl,
    records_frame,
)
from advcore.ingest._format import Format

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
        if _is_records(path):
            return True
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
    if "train/reward_std" in keys:  # TRL's trainer logs under train/ on W&B
        return "trl"
    known = trainers.trainer_of(keys)
    if known is not None:
        return known
    if any(k.startswith(("critic/", "actor/")) for k in bare):
        return "verl"
    if bare & {"approx_kl", "clip_fraction", "explained_variance"} and any(k.startswith("rollout/") for k in keys):
        return "sb3"
    return "wandb"


#: slime charts its sections against their own step metrics (THUDM/slime, slime/utils/wandb_utils.py,
#: ``_init_wandb_common``: ``define_metric("rollout/*", step_metric="rollout/step")``, ``train/*`` against
#: ``train/step``, ``eval/*`` against ``eval/step``): each history record carries one of them.
_ROLLOUT_STEP, _SECTION_STEPS = "rollout/step", ("train/step", "eval/step")


def _with_step(frame: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """Put a ``step`` column first, from the trainer's own step key when there is one. With slime's
    per-section step metrics, the rollout's: a ``train/`` or ``eval/`` record belongs to the rollout
    logged last before it (a rollout's updates follow it), so the reward and the updates it drove share a
    step (several updates of one rollout are averaged when the run is made canonical)."""
    if _ROLLOUT_STEP in frame.columns and any(k in frame.columns for k in _SECTION_STEPS):
        rollout = frame[_ROLLOUT_STEP].forward_fill().backward_fill().cast(pl.Int64, strict=False).alias("step")
        drop = ["step", _ROLLOUT_STEP, *_SECTION_STEPS]
        return frame.drop(drop, strict=False).insert_column(0, rollout), _ROLLOUT_STEP
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
    # W&B's own bookkeeping (run time, wall clock) is no metric of the run: not offered as unread keys
    frame = frame.drop([c for c in _SYSTEM if c != "_step" and c in frame.columns])
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


_BLOCK = 32768
_CHUNK_HEADER = 7


#: A W&B run folder: ``wandb/run-<date>_<time>-<id>`` or ``wandb/offline-run-...``.
_RUN_FOLDER = re.compile(r"(?:offline-)?run-\d{8}_\d{6}-\w+")


def run_file_of(path: Path) -> Path | None:
    """For a file found in a W&B run folder, the one file that run is read from: its record file
    ``run-<id>.wandb`` (the whole history), else ``files/wandb-history.jsonl`` (W&B before 0.10),
    else the console ``files/output.log``; None when ``path`` is in no run folder, or the folder has
    none of these (its files are then read as they are). The run's other files (the summary, the
    client's own ``logs/debug*.log``, ``requirements.txt``) are not logs of their own."""
    folder = next((f for f in path.parents if _RUN_FOLDER.fullmatch(f.name)), None)
    if folder is None:
        return None
    records = sorted(folder.glob("run-*.wandb"))
    for candidate in (*records, folder / "files" / "wandb-history.jsonl", folder / "files" / "output.log"):
        if candidate.is_file():
            return candidate
    return None


def _is_records(path: Path) -> bool:
    return starts_with(path, WANDB_RECORDS_MAGIC)


def _records(data: bytes) -> tuple[list[bytes], str | None]:
    """The payloads of a W&B LevelDB log, and why it ended early (None when whole)."""
    out: list[bytes] = []
    pending: list[bytes] = []
    pos = len(WANDB_RECORDS_MAGIC)
    while pos < len(data):
        left = _BLOCK - pos % _BLOCK
        if left < _CHUNK_HEADER:  # the block's tail is padding
            pos += left
            continue
        if pos + _CHUNK_HEADER > len(data):
            return out, f"cut short at byte {pos}"
        length = int.from_bytes(data[pos + 4:pos + 6], "little")
        kind = data[pos + 6]
        start, end = pos + _CHUNK_HEADER, pos + _CHUNK_HEADER + length
        if kind == 0 and length == 0:  # zero padding to the block's end
            pos += left
            continue
        if end > len(data):
            return out, f"cut short at byte {len(data)} (a run still writing, or a crash)"
        if end - (pos - pos % _BLOCK) > _BLOCK or kind not in (1, 2, 3, 4):
            return out, f"a damaged chunk at byte {pos}"
        if kind == 1:
            out.append(data[start:end])
        elif kind == 2:
            pending = [data[start:end]]
        else:
            pending.append(data[start:end])
            if kind == 4:
                out.append(b"".join(pending))
                pending = []
        pos = end
    return out, ("cut short inside a record" if pending else None)


def _fields(message: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of a protobuf message: varints as int, length-delimited as bytes
    (fixed-width values are skipped). Raises ValueError on a malformed message."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0

    def varint() -> int:
        nonlocal pos
        value, shift = 0, 0
        while True:
            if pos >= len(message) or shift > 63:
                raise ValueError("truncated varint")
            b = message[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    while pos < len(message):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            out.append((number, varint()))
        elif wire == 2:
            n = varint()
            if pos + n > len(message):
                raise ValueError("truncated field")
            out.append((number, message[pos:pos + n]))
            pos += n
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")
    return out


def _history_row(history: bytes) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for number, item in _fields(history):
        if number != 1 or not isinstance(item, bytes):
            continue
        key, nested, value = "", [], None
        for n, v in _fields(item):
            if isinstance(v, bytes):
                if n == 1:
                    key = v.decode("utf-8", "replace")
                elif n == 2:
                    nested.append(v.decode("utf-8", "replace"))
                elif n == 16:
                    value = v.decode("utf-8", "replace")
        name = "/".join(nested) if nested else key
        if name and value is not None:
            try:
                parsed = json.loads(value)
            except ValueError:
                continue
            row.update(flatten(parsed, name + "/") if isinstance(parsed, dict) else {name: parsed})
    return row


def _read_records(path: Path) -> RawLog:
    chunks, cut = _records(path.read_bytes())
    rows: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    errors: list[IngestError] = []
    for i, chunk in enumerate(chunks):
        try:
            for number, body in _fields(chunk):
                if number == 2 and isinstance(body, bytes):
                    rows.append(_history_row(body))
                elif number == 17 and isinstance(body, bytes):
                    for n, v in _fields(body):
                        if n in (3, 8) and isinstance(v, bytes) and v:
                            extra["wandb_project" if n == 3 else "wandb_run"] = v.decode("utf-8", "replace")
        except ValueError as e:
            errors.append(IngestError(str(path), f"W&B record {i + 1} could not be decoded ({e}); skipped"))
    if cut:
        errors.append(IngestError(str(path), f"W&B records: {cut}; the records before it are read"))
    if not rows:
        errors.append(IngestError(str(path), "W&B records: no history record (nothing was logged with wandb.log)"))
        return RawLog(NAME, pl.DataFrame(), metadata=extra, errors=tuple(errors))
    frame, dropped = records_frame(rows)
    return _raw(frame, path, "records", dropped, errors, extra=extra)


def read(path: Path) -> RawLog:
    if _is_records(path):
        return _read_records(path)
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


FORMAT = Format(NAME, sniff, read)
