"""tensorboardX's scalar export: the JSON object that ``SummaryWriter.export_scalars_to_json(path)`` writes,
one key per scalar series and as value its points ``[wall_time, step, value]``
(lanpa/tensorboardX, ``tensorboardX/writer.py``: ``__append_to_scalar_dict`` collects them,
``export_scalars_to_json`` dumps the dict). marlbenchmark/on-policy (MAPPO) and its light_mappo extraction
call it at the end of training (``runner/*/base_runner.py``: ``self.writter.export_scalars_to_json(
str(self.log_dir + '/summary.json'))``), so their run folders hold ``logs/summary.json``.

A key is the series' tag, or for ``add_scalars(main_tag, {tag: value})`` the writer's folder, the main
tag and the tag joined by ``/``: on-policy's separated runner logs ``add_scalars(agent_k, {agent_k: v})``
with ``agent_k = "agent0/value_loss"``, so a key reads ``D:\\...\\logs/agent0/value_loss/agent0/value_loss``
(h212-light-mappo-separated-6-agent-mec-two-agents-collapse-to-zero). The folder all keys share is
dropped and a tag written twice (``main_tag/tag`` with ``main_tag == tag``) is read once:
``agent0/value_loss``. One row per step (the second item of a point); a series with a point that is
not three numbers costs that series (an error naming its key), not the file. The wall time of the
first series' points goes to ``metadata["wall_time"]`` (first and last, seconds since the epoch).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore._escape import excerpt
from advcore.ingest._format import Format
from advcore.ingest._parse import number, read_json
from advcore.model import IngestError, RawLog

NAME = "tensorboardx_json"

_NUM = r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|NaN|-?Infinity"
#: an object whose first value is a list of [wall_time, step, value] points
_HEAD = re.compile(rf'^\{{\s*"(?:[^"\\]|\\.)*"\s*:\s*\[\s*\[\s*(?:{_NUM})\s*,\s*-?\d+\s*,\s*(?:{_NUM})\s*\]')


def sniff(path: Path, head: str | None) -> bool:
    return head is not None and bool(_HEAD.match(head.lstrip("\ufeff").lstrip()))


def _tag(rest: str) -> str:
    """``rest`` with a tag written twice (``a/b/a/b``) read once."""
    parts = rest.split("/")
    half = len(parts) // 2
    if len(parts) % 2 == 0 and half and parts[:half] == parts[half:]:
        return "/".join(parts[:half])
    return rest


def _tags(keys: list[str]) -> dict[str, str]:
    """Each key's tag: the key without the folder every key shares (up to a ``/``), a doubled tag once."""
    if len(keys) < 2:
        return {k: _tag(k) for k in keys}
    cut = os.path.commonprefix(keys).rfind("/") + 1
    return {k: _tag(k[cut:]) for k in keys}


def read(path: Path) -> RawLog:
    doc, error = read_json(path, "tensorboardX scalar export")
    if error is not None:
        return RawLog(NAME, pl.DataFrame(), errors=(error,))
    if not isinstance(doc, dict):
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(str(path), "tensorboardX scalar export: expected a "
                                                                           "JSON object of series"),))
    errors: list[IngestError] = []
    series: dict[str, dict[int, float | None]] = {}
    walls: list[float | None] = []
    for key, tag in _tags(list(doc)).items():
        points: Any = doc[key]
        by_step: dict[int, float | None] = {}
        ok = isinstance(points, list)
        for p in points if ok else ():
            if not (isinstance(p, list) and len(p) == 3 and isinstance(p[1], int) and not isinstance(p[1], bool)):
                ok = False
                break
            by_step[p[1]] = number(p[2])
        if not ok:
            errors.append(IngestError(str(path), f"series {excerpt(key)}: expected a list of [wall_time, step, value] "
                                                 "points; the series was left out"))
            continue
        if not walls and points:
            walls = [number(points[0][0]), number(points[-1][0])]
        series[tag] = by_step if tag not in series else {**series[tag], **by_step}
    if not series:
        errors.append(IngestError(str(path), "tensorboardX scalar export: no series of [wall_time, step, value] points"))
        return RawLog(NAME, pl.DataFrame(), errors=tuple(errors))
    steps = sorted({s for by_step in series.values() for s in by_step})
    frame = pl.DataFrame({"step": pl.Series(steps, dtype=pl.Int64),
                          **{tag: pl.Series([v.get(s) for s in steps], dtype=pl.Float64) for tag, v in series.items()}})
    meta: dict[str, Any] = {"series": len(series)}
    if walls:
        meta["wall_time"] = walls
    return RawLog(NAME, frame, metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
