"""HF/TRL ``trainer_state.json`` (its ``log_history``), a bare ``log_history`` list, or a JSON list
of per-step dicts (as notebooks dump ``trainer.state.log_history``).

Train rows and eval rows share the list; rows are kept as logged, and keys missing from a row
are null. Values written as strings (``"0.5"``) are read as numbers; ``NaN``/``Infinity`` (as
Python's ``json`` writes them) stay NaN/inf.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest._parse import number, read_json
from advcore.ingest._format import Format

NAME = "trainer_state"


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    text = head.lstrip()
    if text.startswith("{"):
        return '"log_history"' in head
    return text.startswith("[") and text[1:].lstrip().startswith("{")


def read(path: Path) -> RawLog:
    doc, error = read_json(path, "trainer_state.json / log_history")
    if error is not None:
        return RawLog(NAME, pl.DataFrame(), errors=(error,))
    meta: dict[str, Any] = {}
    if isinstance(doc, dict):
        rows = doc.get("log_history")
        meta = {k: doc[k] for k in ("global_step", "max_steps", "num_train_epochs") if k in doc}
    else:
        rows = doc
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(str(path), "expected a list of per-step objects"),))
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r))
    frame = pl.DataFrame({k: pl.Series(k, [number(r.get(k)) for r in rows], dtype=pl.Float64) for k in keys})
    trainer = "trl" if any(k.startswith(("rewards/", "frac_reward_zero_std", "completions/")) or k == "reward" for k in keys) else None
    return RawLog(NAME, frame, trainer=trainer, metadata=meta)


FORMAT = Format(NAME, sniff, read)
