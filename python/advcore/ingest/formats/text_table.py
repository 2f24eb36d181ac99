"""A table a training loop prints as text: a header line of column names, then one row of numbers per
evaluation or update, columns aligned with blanks and optionally grouped by ``|``.

ElegantRL's evaluator (``elegantrl/train/evaluator.py``) prints, once, ::

    ID     Step    maxR |    avgR   stdR   avgS  stdS |    expR   objC   etc.

and then a row per evaluation (``0  6.98e+03  -91.89 |  -91.89    0.0    109     2 |   -0.39 676.16
0.06  -0.50``), with a short row (``0  9.49e+04  -21.05 |``) each time a new best return is saved.
Hand-written loops print the same kind of table (``Epoch  Reward  Loss``). A *header* is a line of at
least :data:`MIN_COLUMNS` names (words that are not numbers, ``|`` between groups ignored); a *row* is a
line of numbers only (``|`` ignored) with one value per name. A header whose last name is ``etc.``
(or ``...``) names the first columns only: a row may have more values, the unnamed ones are dropped.
A line of numbers with fewer values than names (ElegantRL's new-best line) is not a row and is
skipped; one with more values than a header without ``etc.`` is an error naming its line, and costs
that line. The step is the first column whose name is a step counter's
(:data:`advcore.ingest.formats.printed.STEP_NAME`: ``Step``, ``Epoch``, ``Episode`` ...); without one the
rows are numbered in order. Names are kept as printed. A Markdown table (``| Episode | Reward | Length |``,
its ``|---|---|`` rule, then ``| 1 | 210.00 | 394 |`` rows; SB3 callbacks that write a report, e.g.
glenmiracle18/RL_formative ``training/models/pg/a2c_training_log.md``) is read the same way, its cells
split at ``|`` and the blanks inside a cell's name joined by ``_``. A header printed again later (a second
``train_and_evaluate``) starts a new table under the same names. Trainer ``elegantrl`` when the header
is ElegantRL's (``avgR`` and ``objC``), else none.

Detection: a header followed by at least :data:`MIN_ROWS` rows in the file's head (blank lines and
short rows between them allowed). After every named format and the printed progress reader.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest._text import read_text as read_file
from advcore.ingest._text import readable_lines
from advcore.ingest._parse import by_step, number, steps_frame
from advcore.ingest.formats.printed import STEP_NAME
from advcore.ingest._format import Format

__all__ = ["NAME", "read", "read_text", "sniff"]

NAME = "text_table"

#: Names a header has at least (two would be any "Step  Loss" line of prose).
MIN_COLUMNS = 3
#: Rows under a header in the head for the file to be a table.
MIN_ROWS = 3
#: A header's last name that stands for "and more columns".
_MORE = frozenset({"etc.", "etc", "...", "…"})
_NAME = re.compile(r"^[^\W\d][\w.%/()\-]*$")
_RULE = re.compile(r"^:?-+:?$")


def _tokens(line: str) -> list[str]:
    stripped = line.strip()
    if len(stripped) > 1 and stripped[0] == stripped[-1] == "|":  # a Markdown table's line
        cells = [cell.strip() for cell in stripped[1:-1].split("|")]
        if all(_RULE.match(cell) for cell in cells):
            return []  # the rule under a Markdown header (``|---|:--:|``)
        return ["_".join(cell.split()) for cell in cells]
    return [t for t in line.split() if t != "|"]


def _header(tokens: list[str]) -> tuple[list[str], bool] | None:
    """The column names of a header line and whether it ends in ``etc.``, or None."""
    more = bool(tokens) and tokens[-1] in _MORE
    names = tokens[:-1] if more else tokens
    if len(names) < MIN_COLUMNS or not all(_NAME.match(t) and number(t) is None for t in names):
        return None
    return names, more


def _values(tokens: list[str]) -> list[float] | None:
    values = [number(t) for t in tokens]
    return None if not values or any(v is None for v in values) else values  # type: ignore[return-value]


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    header: tuple[list[str], bool] | None = None
    rows = 0
    for line in head.splitlines()[:-1]:  # the head's last line may be cut
        tokens = _tokens(line)
        if not tokens:
            continue
        found = _header(tokens)
        if found is not None:
            header, rows = found, 0
            continue
        values = _values(tokens)
        if header is not None and values is not None:
            names, more = header
            if len(values) == len(names) or (more and len(values) > len(names)):
                rows += 1
                if rows >= MIN_ROWS:
                    return True
            continue
        header, rows = None, 0  # prose between the header and its rows: not a table
    return False


def read_text(text: str, path: Path) -> RawLog:
    """The table rows of ``text`` (a file's or a notebook cell's output), errors naming ``path``."""
    errors: list[IngestError] = []
    lines = text.split("\n")
    header: tuple[list[str], bool] | None = None
    step_col: int | None = None
    records: list[tuple[int, dict[str, float | None]]] = []
    for n, line in readable_lines(enumerate(lines, start=1), path, errors):
        tokens = _tokens(line)
        found = _header(tokens) if tokens else None
        if found is not None:
            header = found
            step_col = next((i for i, name in enumerate(found[0]) if STEP_NAME.match(name.lower())), None)
            continue
        values = _values(tokens) if header is not None else None
        if header is None or values is None:
            continue
        names, more = header
        if len(values) < len(names):
            continue  # a shorter line of numbers (ElegantRL's new best return): not a row
        if len(values) > len(names) and not more:
            errors.append(IngestError(str(path), f"text table: {len(values)} values under {len(names)} column names", n))
            continue
        if step_col is None:
            step: float = len(records) + 1
        else:
            step = values[step_col]
            if not math.isfinite(step) or step != int(step):
                errors.append(IngestError(str(path), f"text table: the {names[step_col]} column is not a whole number "
                                                     f"({step:g})", n))
                continue
        records.append((int(step), {name: v for i, (name, v) in enumerate(zip(names, values)) if i != step_col}))
    if not records or header is None:
        return RawLog(NAME, pl.DataFrame(), errors=(*errors, IngestError(
            str(path), "text table: no header line of column names followed by rows of numbers")))
    names = header[0]  # the last header's
    trainer = "elegantrl" if {"avgR", "objC"} <= set(names) else None
    meta: dict[str, Any] = {"columns": names, "rows": len(records)}
    if step_col is None:
        meta["step_inferred"] = True
    return RawLog(NAME, steps_frame(by_step(records)), trainer=trainer, metadata=meta, errors=tuple(errors))


def read(path: Path) -> RawLog:
    return read_text(read_file(path), path)


FORMAT = Format(NAME, sniff, read)
