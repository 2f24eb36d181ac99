"""Columnar JSON: a JSON object of equal-length arrays (``{"rewards_avg": [...], "kl_avg": [...]}``),
one array per metric, one index per logged point. Scalar entries go to ``metadata``. Without a
``step`` array the step is the index order (the file does not say how many trainer steps one point
spans).

Also read here: JSON lists of per-group statistics records (keys ``n_degenerate`` with
``n_pos``/``n_positive`` and ``n_neg``/``n_negative``, as rho-GRPO writes them, possibly one
record per micro-batch with the step repeated). Records of one step are combined (counts summed,
other numbers averaged) and ``zero_variance_group_frac`` is derived as
``n_degenerate / (n_positive + n_negative + n_degenerate)`` (the counts are samples; with equal
group sizes this is the share of zero-variance groups).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.ingest._model import IngestError, RawLog
from advcore.ingest.formats.plain import number, records_frame

NAME = "columnar_json"

_COLUMNAR = re.compile(r'^\{\s*"[^"]*"\s*:\s*\[')
_GROUP_STATS = re.compile(r'^\[\s*\{[^{}\[]*"n_degenerate"\s*:', re.S)


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    text = head.lstrip("\ufeff").lstrip()
    if _COLUMNAR.match(text):
        return '"log_history"' not in text[:200]
    return bool(_GROUP_STATS.match(text))


def _group_stats(path: Path, rows: list[Any]) -> RawLog:
    if not all(isinstance(r, dict) for r in rows):
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(str(path), "expected a list of JSON objects"),))
    by_step: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        by_step.setdefault(r.get("step"), []).append(r)
    combined: list[dict[str, Any]] = []
    for step, recs in by_step.items():
        out: dict[str, Any] = {"step": step}
        keys: dict[str, None] = {}
        for r in recs:
            keys.update(dict.fromkeys(r))
        for k in keys:
            if k == "step":
                continue
            vals = [v for v in (number(r.get(k)) for r in recs) if v is not None]
            if not vals:
                continue
            out[k] = sum(vals) if k.startswith("n_") else sum(vals) / len(vals)
        pos = out.get("n_positive", out.get("n_pos"))
        neg = out.get("n_negative", out.get("n_neg"))
        deg = out.get("n_degenerate")
        if pos is not None and neg is not None and deg is not None and pos + neg + deg > 0:
            out["zero_variance_group_frac"] = deg / (pos + neg + deg)
        combined.append(out)
    frame, dropped = records_frame(combined)
    per_step = max(len(v) for v in by_step.values())
    meta: dict[str, Any] = {"records_per_step": per_step}
    if dropped:
        meta["non_numeric"] = dropped
    return RawLog(NAME, frame, metadata=meta)


def read(path: Path) -> RawLog:
    try:
        doc = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError as e:
        return RawLog(NAME, pl.DataFrame(), errors=(
            IngestError(str(path), f"columnar JSON: invalid JSON ({e.msg})", e.lineno),))
    if isinstance(doc, list):
        return _group_stats(path, doc)
    if not isinstance(doc, dict):
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(str(path), "expected a JSON object of arrays"),))
    arrays = {k: v for k, v in doc.items() if isinstance(v, list)}
    meta: dict[str, Any] = {k: v for k, v in doc.items() if not isinstance(v, (list, dict))}
    if not arrays:
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(str(path), "columnar JSON: no arrays found"),))
    lengths = {k: len(v) for k, v in arrays.items()}
    n = max(lengths.values())
    short = [k for k, m in lengths.items() if m != n]
    if short:
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(
            str(path), f"columnar JSON: expected equal-length arrays, but {short[0]!r} has {lengths[short[0]]} "
            f"entries and {max(lengths, key=lambda k: lengths[k])!r} has {n}"),))
    rows = [{k: v[i] for k, v in arrays.items()} for i in range(n)]
    frame, dropped = records_frame(rows)
    if dropped:
        meta["non_numeric"] = dropped
    return RawLog(NAME, frame, metadata=meta)
