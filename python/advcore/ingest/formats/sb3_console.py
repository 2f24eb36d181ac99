"""Stable-Baselines3 console output: the tables its logger prints to stdout (``HumanOutputFormat``,
``stable_baselines3/common/logger.py``, SB3 1.x and 2.x), among any other console text.

One table per ``logger.dump()``, between two dashed lines::

    -----------------------------------------
    | rollout/                |             |
    |    ep_rew_mean          | 92.4        |
    | time/                   |             |
    |    total_timesteps      | 4096        |
    | train/                  |             |
    |    approx_kl            | 0.013188062 |
    -----------------------------------------

A section row (``| train/ | |``) names the prefix of the indented rows under it, so the keys read
back as the logger recorded them: ``rollout/ep_rew_mean``, ``train/approx_kl``, ``eval/mean_reward``;
an unindented row is a key without a section. Each table is one row of the frame, as in the
``progress.csv`` the same logger writes (trainer ``sb3``, so the alias table's ``sb3`` rows apply and
``time/total_timesteps`` becomes the step, in environment steps). What the rows hold, by SB3's
logger: ``rollout/ep_rew_mean`` is the mean return of the last 100 finished episodes
(``stats_window_size``); ``train/*`` are the means over the last update's epochs and minibatches.

Where SB3 puts a key is kept as printed: an ``EvalCallback`` dumps its ``eval/*`` table in the middle
of a rollout, and that dump also prints the ``train/*`` values of the update before it (recorded but
not yet dumped), so the next rollout table has no ``train/`` section; ``progress.csv`` has the same
rows.

Values are printed with ``{:<8.3g}`` for Python floats (``0.0131``, ``1e+03``) and in full for
integers and numpy float32 (``0.013188062``). Keys and values longer than the logger's
``max_length`` (36 characters in SB3 2.x, 23 before) are cut to ``...``: a cut value is not a
number and costs that value (null), a cut key is kept as printed and listed in
``metadata["truncated_keys"]``. A row cut off before its closing ``|`` (a truncated line) is an
:class:`IngestError` naming the line; the rest of its table is still read. Text printed between
the lines of a table is skipped, and so is anything before the first dashed line; a table the file
ends in without its closing dashed line is kept.

stable-baselines 2 (the OpenAI baselines fork, ``stable_baselines/logger.py``) prints the same
tables without sections and with baselines' keys (``approxkl``, ``policy_entropy``,
``total_timesteps``): such tables are read with trainer ``baselines``, whose alias rows apply.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest._text import readable_lines
from advcore.ingest._text import read_text as read_file
from advcore.ingest._trainers import BASELINES_KEYS
from advcore.ingest._parse import clean, records_frame
from advcore.ingest._format import Format

NAME = "sb3_console"

_DASHES = re.compile(r"^-{5,}$")
#: ``| key | value |``: the key keeps its leading spaces (the indent of a row under a section)
_ROW = re.compile(r"^\| (?P<key>.*?) +\| (?P<value>.*?) *\|$")
_SECTION = re.compile(r"^[^\s|]+/$")
#: a table as the head shows it: a dashed line, rows, then a section row and an indented row
_SNIFF = re.compile(r"^-{5,}[ \t]*\r?\n(?:\|[^\n]*\|[ \t]*\r?\n){0,40}?"
                    r"\|[ \t]+[^\s|]+/[ \t]+\|[ \t]+\|[ \t]*\r?\n\|[ \t]{4}\S", re.M)
#: stable-baselines 2 (the OpenAI baselines fork) prints tables without sections: a dashed line,
#: at least three ``| key | value |`` rows, a dashed line
_SNIFF_FLAT = re.compile(r"^-{5,}[ \t]*\r?\n(?:\| [^|\n]+\| [^|\n]*\|[ \t]*\r?\n){3,}-{5,}", re.M)


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    return _SNIFF.search(head) is not None or _SNIFF_FLAT.search(head) is not None


def read(path: Path) -> RawLog:
    return read_text(read_file(path), path)


def read_text(text: str, path: Path) -> RawLog:
    """The logger tables of console ``text`` (read from ``path``, which errors name)."""
    rows: list[dict[str, Any]] = []
    errors: list[IngestError] = []
    truncated: dict[str, None] = {}
    table: dict[str, Any] | None = None
    section = ""
    for n, physical in readable_lines(enumerate(text.split("\n"), start=1), path, errors):
        line = clean(physical.rstrip("\r")).strip()
        if _DASHES.match(line):
            # A dashed line closes the open table and opens the next one.
            if table:
                rows.append(table)
            table, section = {}, ""
            continue
        if table is None or not line.startswith("|"):
            continue  # text before the first table, or printed between its lines
        m = _ROW.match(line)
        if m is None:
            if not line.endswith("|") or len(line) == 1:
                errors.append(IngestError(str(path), "SB3 console: expected a table row '| key | value |'; the "
                                          "line is truncated", n))
            continue
        raw_key, value = m.group("key"), m.group("value").strip()
        key = raw_key.strip()
        if not value and _SECTION.match(key):
            section = key
            continue
        if raw_key.startswith(" ") and section:
            key = section + key
        if key.endswith("..."):
            truncated[key] = None
        table[key] = value
    if table:
        rows.append(table)
    meta: dict[str, Any] = {"tables": len(rows)}
    if truncated:
        meta["truncated_keys"] = list(truncated)
    # stable-baselines 2 prints the same tables with OpenAI baselines' flat keys (approxkl, ...)
    trainer = "baselines" if any(k in BASELINES_KEYS for r in rows for k in r) else "sb3"
    if not rows:
        errors.append(IngestError(str(path), "SB3 console: no logger table ('| rollout/ | |' ...) found"))
        return RawLog(NAME, pl.DataFrame(), trainer=trainer, metadata=meta, errors=tuple(errors))
    frame, dropped = records_frame(rows)
    if dropped:
        meta["non_numeric"] = dropped
    return RawLog(NAME, frame, trainer=trainer, metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
