"""Plain CSV tables, including notebook progress tables exported to CSV.

Notebook tables (``transformers``' NotebookProgressCallback) keep the display names, with spaces:
``Step``, ``Training Loss``, ``rewards / check_answer``, ``completions / mean_length``; the alias
table maps them. CRLF or LF line endings, quoted fields; blank cells are null; columns with no
numeric value (reason strings, JSON lists in a quoted field) are dropped and listed in
``metadata["non_numeric"]``; ``True``/``False`` read as 1/0. A row with the wrong number of
fields is an error with its line number. A header with tabs and no comma makes the table
tab-separated (Spinning Up's and rllab's ``progress.txt``).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import polars as pl

from advcore.ingest._model import IngestError, RawLog
from advcore.ingest.formats.plain import number, records_frame

NAME = "csv_table"

_TRL_MARKERS = ("Training Loss", "frac_reward_zero_std")
_TRL_PREFIXES = ("rewards / ", "completions / ", "rewards/", "completions/")


def _delimiter(text: str) -> str:
    """``"\t"`` when the first line has tabs and no comma (a tab-separated table), else ``","``."""
    first = text.split("\n", 1)[0]
    return "\t" if "\t" in first and "," not in first else ","


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text)))


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    lines = [ln for ln in head.splitlines() if ln.strip()][:6]
    if len(lines) < 2 or lines[0].lstrip().startswith(("{", "[")):
        return False
    # Drop a possibly cut last line of the head.
    rows = _rows("\n".join(lines[:-1] if len(lines) > 2 else lines))
    if len(rows) < 2:
        return False
    header = rows[0]
    if len(header) < 2 or any(not h.strip() for h in header):
        return False
    body = rows[1:]
    if any(len(r) != len(header) for r in body):
        return False
    numeric = sum(1 for r in body for v in r if number(v) is not None)
    return numeric >= len(body)


#: columns only OpenAI baselines' loggers write (baselines/ppo2/ppo2.py, a2c/a2c.py, acktr, trpo_mpi)
_BASELINES_MARKERS = frozenset({"eprewmean", "EpRewMean", "misc/serial_timesteps", "serial_timesteps", "EVBefore",
                                "ev_tdlam_before"})


def trainer_of(keys: list[str]) -> str | None:
    if any(k in _TRL_MARKERS or k.startswith(_TRL_PREFIXES) for k in keys):
        return "trl"
    if "time/total_timesteps" in keys:  # stable-baselines3's progress.csv (its CSV logger)
        return "sb3"
    if _BASELINES_MARKERS & set(keys):  # OpenAI baselines' progress.csv (ppo2, a2c, acktr, trpo_mpi)
        return "baselines"
    if {"AverageReturn", "Iteration"} <= set(keys):  # rllab's progress.csv (TRPO, VPG)
        return "rllab"
    if {"Epoch", "AverageEpRet"} <= set(keys):  # OpenAI Spinning Up's progress.txt (VPG, TRPO, PPO)
        return "spinup"
    return None


def read(path: Path) -> RawLog:
    text = path.read_bytes().decode("utf-8-sig", errors="replace")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text))
    errors: list[IngestError] = []
    try:
        header = next(reader)
    except StopIteration:
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(str(path), "CSV: the file has no header row", 1),))
    header = [h.strip() for h in header]
    rows: list[dict[str, Any]] = []
    try:
        for fields in reader:
            if not any(f.strip() for f in fields):
                continue
            if len(fields) != len(header):
                errors.append(IngestError(
                    str(path), f"CSV: expected {len(header)} fields as in the header, got {len(fields)}",
                    reader.line_num))
                continue
            rows.append(dict(zip(header, fields, strict=True)))
    except csv.Error as e:
        errors.append(IngestError(str(path), f"CSV: {e}", reader.line_num))
    if not rows:
        errors.append(IngestError(str(path), "CSV: no data rows under the header"))
        return RawLog(NAME, pl.DataFrame(), errors=tuple(errors))
    frame, dropped = records_frame(rows)
    meta: dict[str, Any] = {"non_numeric": dropped} if dropped else {}
    return RawLog(NAME, frame, trainer=trainer_of(header), metadata=meta, errors=tuple(errors))
