"""verl console logs: ``step:N - key:value - key:value ...`` lines.

What real consoles add around those lines, and how it is handled:

* ANSI colour codes (``\\x1b[36m``) are removed before anything else.
* Ray prefixes (``(TaskRunner pid=2021996)``, ``(main_task pid=19799)``, ``(pid=12)``,
  ``(WorkerDict pid=3, ip=10.0.0.1)``) are stripped, as are ``[repeated 7x across cluster]``.
* Any other line prefix before a console record (timestamps ``2026-05-27 11:57:00``, levels and
  logger names ``INFO:root:``, ranks ``[rank0]:``) is dropped: the text before the first record
  marker (``step:N``, ``Global step N``, ``Accuracy distribution:``) that starts a word; every console reader
  drops a leading timestamp, level or rank (``2017-06-30 17:30:11.098692 EDT | ``, ``[INFO]``,
  ``INFO:root:``, ``[rank0]:``) before reading a line.
* Values may be wrapped (``np.float64(0.5)``, ``np.int64(3)``, ``tensor(0.5)``); ``nan``/``inf``
  are read as NaN/inf (by the shared :func:`advcore.ingest._parse.number`), text values
  are skipped.
* One step split over several lines (a second ``step:N - ...`` line with other keys, or a
  wrapped continuation line of bare ``key:value`` pairs) is merged into one row. A ``step:N``
  line repeating keys already read for N starts a new row (a resumed run re-logging a step).
* A log that begins mid-run (a fragment of a step line before the first ``step:N``) or resumes
  from a checkpoint keeps its step numbers as logged; the fragment is noted in ``metadata``.
* A pair that is not ``key:value`` (a truncated line) is an :class:`IngestError` naming the line;
  the pairs read before it are kept.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore._escape import excerpt
from advcore.model import IngestError, RawLog
from advcore.ingest._text import open_text, read_text, readable_lines
from advcore.ingest._parse import ANSI, clean, number
from advcore.ingest._format import Format

NAME = "verl_console"

_STEP = re.compile(r"^\s*step:(\d+)(?:\s+-\s+|\s*-?\s*$)")
# Keys may hold parentheses: PRIME/SimpleVLA-RL log ``actor/lr(1e-4)`` (the lr times 1e4).
# `` - `` between pairs; a split starts only at the first space of a run (the lookbehind), so a long
# run of spaces is crossed once, not once per position
_SEPARATOR = re.compile(r"(?<!\s)\s++-\s+")
# linear on any line: the value is taken whole and stripped after the match (a lazy value followed
# by ``\s*$`` backtracks quadratically on long runs of spaces)
_PAIR = re.compile(r"^\s*+([A-Za-z_][^\s:]*+):(.*)$")
_RESUME = re.compile(r"(?:Load(?:ing)? from checkpoint folder|resum\w*)[^\n]*?global_step_(\d+)", re.IGNORECASE)

#: verl's console prints every value with 3 decimals (verl/utils/metric/utils.py's ``reduce_metrics``, printed by
#: ``trainer/ppo/ray_trainer.py`` as ``f"{k}:{v:.3f}"``): a language model's learning rate of 1e-6 is ``0.000`` on every
#: line, indistinguishable from 0, and is not read (``metadata["rounded"]``); any other key printed as 0 keeps its 0
_ROUNDED_ZERO = re.compile(r"^-?0\.0+$")


def _learning_rate(key: str) -> bool:
    """``actor/lr``, ``critic/lr``, ``lr``: a string test, run on every pair of every line."""
    return key == "lr" or key.endswith("/lr")

#: How far ``sniff`` reads past the 64 KiB head when the head looks like a Ray/verl job
#: (config dumps and worker noise can push the first step line far down).
_DEEP_SNIFF_BYTES = 32 << 20
#: file name endings of console captures (``python train.py > output.log``), sniffed past the head
_CONSOLE_SUFFIXES = frozenset({".log", ".txt", ".out", ".err"})


def _is_step_line(line: str) -> bool:
    text = clean(line)
    m = _STEP.match(text)
    return m is not None and ":" in text[m.end():]


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    if any(_is_step_line(line) for line in head.splitlines()):
        return True
    # A console capture can open with pages of rollouts or debug prints before its first step line:
    # read further when the head names verl or the file is named as a console capture.
    if not (re.search(r"pid=\d+\)|actor_rollout_ref|verl\.trainer|main_ppo", head)
            or path.suffix.lower() in _CONSOLE_SUFFIXES):
        return False
    read = 0
    with open_text(path) as f:
        for line in f:
            read += len(line)
            if "step:" in line and _is_step_line(line):
                return True
            if read > _DEEP_SNIFF_BYTES:
                break
    return False


def _pairs(body: str) -> tuple[list[tuple[str, str]], str | None]:
    """``key:value`` pairs of the text after ``step:N -``, and the first unparsable chunk, if any
    (it costs that chunk: the pairs after it are read too)."""
    out: list[tuple[str, str]] = []
    bad: str | None = None
    chunks = [c for c in _SEPARATOR.split(body.strip()) if c.strip()]
    if chunks and chunks[-1].rstrip().endswith(" -"):
        chunks[-1] = chunks[-1].rstrip()[:-2]
    for chunk in chunks:
        chunk = chunk.strip().rstrip("-").strip()
        if not chunk:
            continue
        m = _PAIR.match(chunk)
        value = m.group(2).strip() if m is not None else ""
        if m is None or not value:
            bad = bad or chunk
            continue
        out.append((m.group(1), value))
    return out, bad


def _continuation(line: str) -> list[tuple[str, str]] | None:
    """A wrapped line made only of ``key:value`` pairs with numeric values, or None."""
    text = line.strip().lstrip("-").strip()
    if not text or text.startswith("step:"):
        return None
    pairs, bad = _pairs(text)
    if bad is not None or not pairs or any(number(v) is None for _, v in pairs):
        return None
    return pairs


def read(path: Path) -> RawLog:
    path = Path(path)
    text = read_text(path)
    rows: list[dict[str, Any]] = []
    errors: list[IngestError] = []
    text_values: set[str] = set()
    current: dict[str, Any] | None = None
    resumed_from: int | None = None
    previous_was_step = False

    shown: set[str] = set()  # learning-rate keys printed with a digit other than 0 at least once

    def add(row: dict[str, Any], pairs: list[tuple[str, str]]) -> None:
        for key, raw in pairs:
            value = number(raw)
            if value is None:
                text_values.add(key)
                continue
            row[key] = value
            if _learning_rate(key) and (value != 0 or not _ROUNDED_ZERO.match(raw.strip())):
                shown.add(key)

    for lineno, physical in readable_lines(enumerate(text.splitlines(), start=1), path, errors):
        if resumed_from is None and "global_step_" in physical:
            m = _RESUME.search(ANSI.sub("", physical))
            if m:
                resumed_from = int(m.group(1))
        line = clean(physical)
        m = _STEP.match(line)
        if m is None:
            cont = _continuation(line) if ":" in line and " - " in line else None
            if cont is not None and len(cont) >= 2:
                if current is not None and previous_was_step:
                    add(current, cont)
                    continue
                if current is None:
                    # the tail of a step's line whose start is not in the file (tinyzero's part-of-logs.md
                    # begins with one): that line is lost, and said so
                    errors.append(IngestError(str(path), "key:value pairs before any step:N line (the log was copied "
                                              "from the middle of a step's line)", lineno))
                    continue
            previous_was_step = False
            continue
        step = int(m.group(1))
        pairs, bad = _pairs(line[m.end():])
        if bad is not None:
            errors.append(IngestError(str(path), f"expected key:value after step:{step}, got {excerpt(bad)}", lineno))
        seen = {k for k, _ in pairs}
        if current is not None and current["step"] == step and not (seen & current.keys()):
            add(current, pairs)
        else:
            current = {"step": step}
            add(current, pairs)
            rows.append(current)
        previous_was_step = bad is None

    if not rows:
        errors.append(IngestError(str(path), "no verl 'step:N - key:value' line found"))
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}), trainer="verl",
                      errors=tuple(errors))
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(k for k in r if k != "step"))
    rounded = sorted(k for k in keys if _learning_rate(k) and k not in shown)
    for k in rounded:
        del keys[k]
    columns: dict[str, pl.Series] = {"step": pl.Series("step", [r["step"] for r in rows], dtype=pl.Int64)}
    for k in keys:
        columns[k] = pl.Series(k, [r.get(k) for r in rows], dtype=pl.Float64)
    frame = pl.DataFrame(columns)
    steps = frame["step"]
    meta: dict[str, Any] = {"first_step": int(steps[0]), "last_step": int(steps[-1])}
    if resumed_from is not None:
        meta["resumed_from_step"] = resumed_from
    if text_values:
        meta["text_valued_keys"] = sorted(text_values)
    if rounded:
        meta["rounded"] = rounded
    return RawLog(NAME, frame, trainer="verl", metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
