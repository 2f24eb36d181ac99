"""A tqdm progress bar whose description or postfix carries the metrics, captured from a console.

A hand-written loop often reports through its progress bar rather than through printed lines:
``pbar.set_description(f"success_at_end: {s:.2f}, return: {r:.2f}")`` or ``pbar.set_postfix(loss=l,
reward=r)``. tqdm redraws the bar in place with carriage returns (tqdm/std.py ``format_meter``:
``{desc}: {percentage}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}{postfix}]``, or ``{desc}:
{n}it [{elapsed}, {rate}{postfix}]`` without a total), so a captured console holds one long line of
redraws, each a snapshot of the bar. Every ``\\r``- or ``\\n``-separated piece that is such a bar is read:
its counter ``n`` is the step, and the ``name: value`` or ``name=value`` pairs of its description
and postfix are that step's metrics (names in lower case, blanks as ``_``, as the printed-progress
reader spells them). A snapshot whose pairs equal the previous one's is a redraw, not a new value:
a description set after an evaluation is read once, at the step where it first appears (h257's
Squint console: 673 redraws, 21 evaluations and 13 training returns). Snapshots at one step are
averaged.

A console with several bars (an epoch bar around a batch bar) reads the bar drawn with pairs most
often, bars told apart by their total (a bar counted past its total, drawn ``{n}it``, is still the
bar it was); when that bar's counter starts again from below where it was
(a new bar per epoch), or when a complete bar is drawn complete again with other pairs (tianshou 2.x's
trainer: one bar per epoch, ``Epoch #2: 100%|...| 2048/2048 [..., env_step=4096, ..., rew=-60.41, ...]``,
its postfix set only as the epoch ends), the counts go on from the largest reached (``metadata["restarts"]``).

Detection: at least :data:`MIN_BARS` bar snapshots with a pair in the file's head. It comes after
every named console (TRL's, whose dict lines are drawn after tqdm bars, among them) and after the
printed-progress reader, so a log whose loop also prints step lines is read by that one.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from advcore.model import IngestError, RawLog
from advcore.ingest import _text
from advcore.ingest._format import Format
from advcore.ingest._parse import ANSI, NUMBER, by_step, number, steps_frame
from advcore.ingest._trainers import trainer_of

NAME = "tqdm_bar"

#: Bar snapshots with a pair that a file's head needs to be read as a progress-bar log.
MIN_BARS = 3

#: The counter and the bracket that ends every tqdm bar: ``2048/2000000 [00:07<1:58:19, 281.41it/s``
#: or ``2002944it [11:01, 3028.95it/s`` (elapsed ``mm:ss`` or ``h:mm:ss``, remaining ``?`` before the
#: first rate), then the postfix up to ``]``; possessive but for the hours, so a failed match costs
#: one position.
_BAR = re.compile(
    r"(?<![\w./])(?P<n>\d{1,15}+)(?:/(?P<total>\d{1,15}+)|it)[ \t]*+\[(?:\d{1,6}:)?\d{1,2}:\d\d"
    r"(?:<(?:(?:\d{1,6}:)?\d{1,2}:\d\d|\?))?+,[ \t]*+(?:[\d.]++|\?)(?:it|s)/(?:it|s)(?P<postfix>[^\]\n]{0,4000}+)\]"
)
#: The percentage and the bar drawn between the description and the counter: ``45%|████▌     | ``.
_METER = re.compile(r"(?::[ \t]*+)?\d{1,3}+%\|[^|\n]{0,400}+\|[ \t]*+$")
#: A ``name: value`` or ``name=value`` pair (names of up to four words, not starting with a digit).
_PAIR = re.compile(
    rf"(?<![\w.%/\-])(?P<key>[^\W\d][\w.%/\-]*+(?: [^\W\d][\w.%/\-]*+){{0,3}}+)[ \t]*+[:=][ \t]*+(?P<value>{NUMBER})"
    r"(?![\w.])", re.IGNORECASE)


def is_bar(text: str) -> bool:
    """Whether ``text`` holds a tqdm bar (whose description may look like another console's line)."""
    return _BAR.search(text) is not None


class _Snapshot(NamedTuple):
    line: int
    n: int
    total: int | None
    pairs: dict[str, float]


def _pairs(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for m in _PAIR.finditer(text):
        value = number(m.group("value"))
        key = re.sub(r"\s+", "_", m.group("key").strip().lower())
        if value is not None and key not in out:
            out[key] = value
    return out


def _snapshots(numbered: list[tuple[int, str]]) -> list[_Snapshot]:
    """Every bar drawn in ``numbered`` (line number, line) that carries a pair."""
    out: list[_Snapshot] = []
    for n, line in numbered:
        for piece in line.split("\r"):
            m = _BAR.search(piece)
            if m is None:
                continue
            head = ANSI.sub("", piece[: m.start()])
            desc = _METER.sub("", head)
            pairs = _pairs(m.group("postfix")) | _pairs(desc)  # a name in both keeps the description's value
            if pairs:
                total = m.group("total")
                out.append(_Snapshot(n, int(m.group("n")), int(total) if total else None, pairs))
    return out


def sniff(path: Path, head: str | None) -> bool:
    if head is None or "it/s" not in head and "s/it" not in head:
        return False
    return len(_snapshots(list(enumerate(head.split("\n"), start=1)))) >= MIN_BARS


def read(path: Path) -> RawLog:
    errors: list[IngestError] = []
    numbered = [(n, line) for n, line in enumerate(_text.read_text(path).split("\n"), start=1)]
    # a line of redraws is long by nature: the limit applies to each redraw
    pieces = [(n, piece) for n, line in numbered for piece in line.split("\r")]
    snaps = _snapshots(list(_text.readable_lines(pieces, path, errors)))
    if not snaps:
        return RawLog(NAME, steps_frame([]), errors=(*errors, IngestError(str(path), "no progress bar with metrics")))
    bar = Counter(s.total for s in snaps).most_common(1)[0][0]
    records: list[tuple[int, dict[str, float | None]]] = []
    last: dict[str, float] | None = None
    offset = reached = restarts = 0
    taken: _Snapshot | None = None
    for s in snaps:
        # a bar counted past its total draws ``{n}it``: its last redraws (a final evaluation) are still its own
        overrun = s.total is None and taken is not None and s.n >= taken.n
        if s.total != bar and not overrun:
            continue
        # a bar counts up: a lower count is a new bar, and so is a complete bar drawn again complete with other
        # pairs (tianshou's trainer draws one bar per epoch and sets its postfix only when the epoch ends)
        again = taken is not None and s.total is not None and s.n == s.total == taken.n and s.pairs != last
        taken = s
        if s.n + offset < reached or again:
            offset, restarts = reached, restarts + 1
        reached = max(reached, s.n + offset)
        if s.pairs != last:
            records.append((s.n + offset, dict(s.pairs)))
            last = s.pairs
    frame = steps_frame(by_step(records))
    meta: dict[str, object] = {"bar_total": bar, "snapshots": len(records)}
    if restarts:
        meta["restarts"] = restarts
    # the names are spelled as the printed-progress reader spells them, so its aliases apply
    return RawLog(NAME, frame, trainer=trainer_of(frame.columns) or "printed", metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
