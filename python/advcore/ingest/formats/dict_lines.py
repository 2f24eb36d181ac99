"""Metric dicts a hand-written loop prints, one per line: ``print(info)`` after each episode or update.

A loop of one's own often logs by printing its dict of metrics, torch tensors and all: a SAC loop on
Isaac Sim prints ``{'metrics/score': tensor([536.2244], device='cuda:0'), 'metrics/Q_value': 2.37,
'loss/Q_1': 2.28, 'loss/policy': -3.35}`` after every episode, between its warnings and resets.

A *dict line* is a line that, after any logger prefix (a timestamp, a level, a rank:
:func:`advcore.ingest._parse.clean`) and a few labels (``Epoch: [1], Info: [{...}]``: the labels' numbers are
columns, the one dict may sit in a list), is one Python dict literal with string keys as Python prints
them (``{'key': ...``; a JSON line's double quotes are the JSON readers'), read with
:func:`ast.literal_eval` (never ``eval``): numbers, numeric strings, ``nan``/``inf`` and numbers in
their numpy or torch wrappers (``np.float64(0.5)``, ``tensor(0.5, device='cuda:0')``, a one-element
``tensor([536.2])``) are values; a key whose values are none of these is left out. Every other line is
skipped (warnings, tracebacks, progress bars). A dict line that does not parse (cut off) is an error
naming its line; the other lines are still read.

There is no step key to trust: the dicts are counted in order (``metadata["step_from"]``), and a key
named like a counter (``episode``, ``global_step``, ...) that never decreases is the step when the run
is canonicalised. The file is this format when at least :data:`MIN_LINES` dict lines of its head share
at least half of their keys with the first (one loop printing one dict), so a log with a stray dict
among its prose is not.

The named consoles come first in detection order: TRL's dict lines (``{'loss': ...}``), OpenRLHF's
``Global step N: {...}`` each read their own.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest._format import Format
from advcore.ingest._parse import clean, printed_dict, records_frame
from advcore.ingest._text import open_text, readable_lines
from advcore.ingest._trainers import trainer_of

NAME = "dict_lines"

#: Dict lines the head of a file must hold to be this format.
MIN_LINES = 3


#: Labels before the dict: ``name: number`` pairs (the number bracketed or not), then at most one bare ``name:`` and
#: a ``[`` opening a list of the one dict (``Epoch: [1], Info: [{...}]``: the Tianshou loops of Chongming Gao's
#: recommender simulators, DORL-codes and EasyRL4Rec ``policy_utils``/``loggers``). Bounded: linear on any line.
_LABELS = re.compile(r"^((?:[A-Za-z_][\w ]{0,40}+:[ ]?\[?-?\d{1,12}(?:\.\d{1,12})?\]?,?[ ]{0,4}){0,4})"
                     r"(?:[A-Za-z_][\w ]{0,40}+:[ ]?)?(\[?)(?=\{')")
_LABEL = re.compile(r"([A-Za-z_][\w ]*?):[ ]?\[?(-?\d+(?:\.\d+)?)\]?")


def _dict_text(line: str) -> tuple[dict[str, float], str] | None:
    """The labels (``name: number`` pairs) and the dict literal of a line (after its logger prefix), or None; the
    literal may be cut off."""
    text = clean(line).strip()
    m = _LABELS.match(text)
    if m is None or len(text) - m.end() < 4:
        return None
    literal = text[m.end():]
    if m.group(2) and literal.endswith("]"):
        literal = literal[:-1].rstrip()
    return {k.strip(): float(v) for k, v in _LABEL.findall(m.group(1))}, literal


def _row(labelled: tuple[dict[str, float], str]) -> dict[str, Any] | None:
    """A dict line's labels and its dict's string keys and values, or None."""
    labels, literal = labelled
    obj = printed_dict(literal)
    if not obj or not all(isinstance(k, str) for k in obj):
        return None
    return {**labels, **obj}


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    keys: list[set[str]] = []
    for line in head.splitlines():
        text = _dict_text(line)
        row = None if text is None else _row(text)
        if row is not None:
            keys.append(set(row))
    if len(keys) < MIN_LINES:
        return False
    first = keys[0]
    return sum(len(k & first) * 2 >= len(k | first) for k in keys) >= MIN_LINES


def read(path: Path) -> RawLog:
    path = Path(path)
    rows: list[dict[str, Any]] = []
    errors: list[IngestError] = []
    with open_text(path) as f:
        for lineno, line in readable_lines(enumerate(f, start=1), path, errors):
            text = _dict_text(line)
            if text is None:
                continue
            row = _row(text)
            if row is None:
                errors.append(IngestError(str(path), "expected a complete Python dict literal ({'key': value, ...}); "
                                                     "the line is cut off or malformed", lineno))
                continue
            rows.append(row)
    if not rows:
        errors.append(IngestError(str(path), "no printed metric dict ({'key': value, ...}) found"))
        return RawLog(NAME, pl.DataFrame(), trainer=NAME, errors=tuple(errors))
    frame, dropped = records_frame(rows)
    meta: dict[str, Any] = {"step_from": "order of the dicts"}
    if dropped:
        meta["non_numeric"] = dropped
    # a loop printing a trainer's own keys is read with that trainer's aliases
    return RawLog(NAME, frame, trainer=trainer_of(frame.columns) or NAME, metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
