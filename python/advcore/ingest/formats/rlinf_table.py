"""RLinf's metric tables: what its embodied runners print to the console every step and append to
``<runner.logger.log_path>/metrics.log``.

RLinf (RLinf/RLinf@a3816b5) logs each training step twice: the scalars to TensorBoard (or W&B,
SwanLab) under ``env/``, ``rollout/``, ``time/``, ``train/`` and ``eval/`` (read by
:mod:`tensorboard` with the ``rlinf`` alias rows), and the same dict drawn as a box table by
``print_metrics_table`` (``rlinf/utils/metric_utils.py`` L540-727, called from
``rlinf/runners/embodied_runner.py`` ``_log_step_metrics`` L441-455 through a logging thread). The
table is printed to stdout, which ``examples/embodiment/run_embodiment.sh`` tees into
``<log_path>/run_embodiment.log`` among the workers' logger lines (``[INFO <HH:MM:SS>
<group>-Rank-N][file.py:line] ...``, ``rlinf/scheduler/worker/worker.py`` L1549-1553), and appended
verbatim to ``<log_path>/metrics.log``::

    ╭──────────────────────────────────────── ... ─╮
    ├──────────────── Metric Table ──────────── ... ┤
    │ Global Step:    1/1000 │ Progress: ░░░ ... │   0.1%   │
    │ Elapsed: 01:35 │ ETA: 26:23:20 │ Step Time: 95.042s  │
    ├──────────────── Environment ───────────── ... ┤
    │                                                      │
    │episode_len=260.125  │num_trajectories=64 │return=0.531 │
    │success_once=0.531   │                    │             │
    ...
    ╰──────────────────────────────────────── ... ─╯

Reading rules:

* Each table is one row. Its step is ``Global Step`` minus 1: the table prints ``step + 1`` of the
  ``_step`` that the same call logs to TensorBoard, so both files of a run share their steps.
* A section names the namespace the runner stripped from each key (``print_metrics_table``'s
  ``category_map``): Time ``time/``, Environment ``env/``, Rollout ``rollout/``, Evaluation
  ``eval/``, Replay Buffer ``replay_buffer/``; the three Training sections ``train/`` (their names
  keep ``actor/`` or ``critic/``). The keys read back as logged: ``env/success_once``,
  ``train/actor/approx_kl``.
* Values are printed rounded (3 decimals, ``.4f`` below 0.01, ``.2e`` below 0.001 or above 10 000,
  ``.1f`` above 100) for floats (Python's, and numpy's float64, a subclass) and in full (``str``)
  otherwise: the ``env/`` and ``eval/`` means are 0-d numpy arrays (``compute_evaluate_metrics``),
  counts are ints. A rounded value keeps 3 significant digits at worst (``2.00e-03``).
* A cell too long for its column is cut to ``…`` by the runner: its value is lost (null) and its key
  listed in ``metadata["truncated_cells"]``. A table row cut before its closing ``│`` (a truncated
  file) is an :class:`IngestError` naming the line; the rest of the table is kept.
* Any other line (the workers' logger lines, Hydra's config dump) is skipped; logger prefixes before
  the box characters (a timestamp added by ``ts``, Ray's ``(pid=...)``) are removed as
  :func:`advcore.ingest._parse.clean` does.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest._format import Format
from advcore.ingest._parse import clean, number, records_frame
from advcore.ingest._text import read_text as read_file
from advcore.ingest._text import readable_lines

NAME = "rlinf_table"

#: ``print_metrics_table``'s section titles and the namespace each stands for (its ``category_map``;
#: the Training sections hold ``train/`` keys whose names keep ``actor/``, ``critic/`` ...).
SECTIONS = {"Time": "time/", "Environment": "env/", "Rollout": "rollout/", "Evaluation": "eval/",
            "Replay Buffer": "replay_buffer/", "Training/Actor": "train/", "Training/Critic": "train/",
            "Training/Other": "train/"}
_TITLE = re.compile(r"^├─+ (?P<title>.+?) ─+┤$")
_GLOBAL_STEP = re.compile(r"^│ Global Step:\s*(?P<step>-?\d+)/(?P<total>-?\d+) ")
_CELLS = re.compile(r"^│(?P<body>.*)│$")
_SNIFF = re.compile(r"^[^\n]*├─+ Metric Table ─+┤[ \t]*\r?\n[^\n]*│ Global Step:\s*\d+/", re.M)


def sniff(path: Path, head: str | None) -> bool:
    return head is not None and _SNIFF.search(head) is not None


def read(path: Path) -> RawLog:
    return read_text(read_file(path), path)


def read_text(text: str, path: Path) -> RawLog:
    """The metric tables of ``text`` (read from ``path``, which errors name)."""
    rows: list[dict[str, Any]] = []
    errors: list[IngestError] = []
    truncated: dict[str, None] = {}
    table: dict[str, Any] | None = None
    prefix: str | None = None
    for n, physical in readable_lines(enumerate(text.split("\n"), start=1), path, errors):
        line = clean(physical.rstrip("\r")).strip()
        if not line or line[0] not in "╭├│╰":
            continue
        if line.startswith("╭"):
            if table is not None:  # a table cut off before its bottom border
                rows.append(table)
            table, prefix = {}, None
            continue
        if table is None:
            continue
        if line.startswith("╰"):
            rows.append(table)
            table = None
            continue
        title = _TITLE.match(line)
        if title is not None:
            prefix = SECTIONS.get(title.group("title"))
            continue
        step = _GLOBAL_STEP.match(line)
        if step is not None:
            table["step"] = int(step.group("step")) - 1
            continue
        cells = _CELLS.match(line)
        if cells is None:
            errors.append(IngestError(str(path), "RLinf metric table: a row cut before its closing '│'", n))
            continue
        if prefix is None:
            continue  # the header's time line, or a section RLinf does not draw
        for cell in cells.group("body").split("│"):
            cell = cell.strip()
            if not cell:
                continue
            name, eq, value = cell.partition("=")
            if cell.endswith("…") or not eq:
                truncated[prefix + name.rstrip("…")] = None
                continue
            table[prefix + name] = value
    if table:
        rows.append(table)
    meta: dict[str, Any] = {"tables": len(rows)}
    if truncated:
        meta["truncated_cells"] = list(truncated)
    missing = sum(1 for r in rows if "step" not in r)
    if missing:
        errors.append(IngestError(str(path), f"RLinf metric table: {missing} table(s) without a 'Global Step' line "
                                             "were left out"))
        rows = [r for r in rows if "step" in r]
    if not rows:
        errors.append(IngestError(str(path), "RLinf metric table: no table ('├── Metric Table ──┤' then "
                                             "'│ Global Step: N/M') found"))
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}), trainer="rlinf",
                      metadata=meta, errors=tuple(errors))
    frame, dropped = records_frame(rows, parse=number)
    if dropped:
        meta["non_numeric"] = dropped
    meta["first_step"], meta["last_step"] = int(frame["step"][0]), int(frame["step"][-1])
    return RawLog(NAME, frame, trainer="rlinf", metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
