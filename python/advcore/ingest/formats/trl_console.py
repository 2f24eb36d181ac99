"""TRL console output: the Python dict literals ``Trainer.log`` prints (``{'loss': 0.1, ...}``).

Each dict is read with :func:`ast.literal_eval` (never ``eval``). Values may be numbers or
numeric strings (``'reward': '0.5'``); ``nan``/``inf`` as Python prints them (``'grad_norm': nan``)
are read as NaN/inf; keys missing from a dict are null. There is no step
key: the step is the counter of the training progress bar (tqdm's ``N/TOTAL``, the total that most of
the bar's redraws show) last drawn before each dict, the global step ``Trainer`` logs at (its progress
callback draws step N before the log call of step N), when every dict has one and they increase;
else the order of the train-metric dicts (``metadata["step_from"]`` says which). Progress-bar
redraws (``\\r``) and any other text between the dicts are otherwise skipped. The end-of-training summary dict (``train_runtime``)
goes to ``metadata["summary"]``; when it also carries GRPO step metrics (``reward``,
``rewards/...``, ``frac_reward_zero_std``: ``GRPOTrainer.log`` in trl/trainer/grpo_trainer.py merges
the means of the steps since the last log into every log call, the final one included) those make
the last row (``metadata["last_row_from_summary"]``). Eval dicts (only ``eval_*`` keys) are not counted as steps.
A line that starts a metric dict but does not parse is joined with the lines after it when they
are a terminal paste hard-wrapped at its width (:func:`_unwrapped`); else it is an error with its
line number (a truncated line), and the other lines are still read.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest import _text
from advcore.ingest._parse import number, quote_nonfinite, records_frame
from advcore.ingest._format import Format

NAME = "trl_console"

#: A metric dict opens with a Trainer key anywhere in a line segment: after ``\r`` redraws, a tqdm
#: bar ``... | 2/3 [00:02<00:01]`` it was glued to, or any logger prefix (``2026-05-27 11:57:00
#: INFO``, ``[rank0]:``).
_START = re.compile(
    r"\{'(loss|grad_norm|learning_rate|reward|rewards/[^']*|kl|entropy|epoch|num_tokens|"
    r"completion_length|completions/[^']*|frac_reward_zero_std|train_runtime|eval_[^']*)'\s*:"
)
#: What a sniffed metric dict's first value looks like: a number, bare or quoted (recent Trainers
#: print ``{'loss': '0.1'}``), ``nan``, ``inf`` or ``tensor(`` included; never a word. A config dump
#: holds the same keys with words (verl-agent prints ``{'alfworld': {'eval_dataset':
#: 'eval_in_distribution'}`` before its first ``step:1`` line).
_NUMBER_VALUE = re.compile(r"\s*'?(?:[-+]?(?:\d|\.\d|nan|inf)|tensor\()", re.IGNORECASE)
_SEGMENTS = re.compile(r"\r")
#: The end of a metric dict: a quoted key and a number, then the closing brace (a fragment of a dict line).
_TAIL = re.compile(r"'[\w/]+'\s*:\s*'?[-+]?(?:\d|\.\d|nan|inf)[^{]*\}\s*$", re.IGNORECASE)
#: A tqdm counter: ``12/29790 [`` (the elapsed time follows in brackets).
_COUNTER = re.compile(r"(?<![\d/])(\d+)/(\d+) \[")
#: Keys of the end-of-training summary alone (``Trainer.train``'s speed metrics, ``train_loss``).
_SUMMARY_ONLY = re.compile(r"^(?:train_(?:runtime|samples_per_second|steps_per_second|loss)|total_flos|epoch)$")
#: Keys the GRPO trainer adds to every log call, the summary's included, from its step metrics.
_STEP_METRIC = re.compile(r"^(?:reward|reward_std|frac_reward_zero_std|kl|rewards/.*)$")
#: A hard-wrapped dict runs on over at most this many more lines, each as long as its first line within
#: this many characters (a terminal drops the blank it wrapped at).
MAX_WRAPPED = 32
WRAP_SLACK = 1
#: and the joined text is at most this long (a file of long lines that all fail costs each line once)
MAX_WRAPPED_CHARS = 1 << 16


def _segments(text: str) -> list[tuple[int, str]]:
    """(line number, segment) for every ``\\r``-separated piece of every line."""
    out: list[tuple[int, str]] = []
    for n, line in enumerate(text.split("\n"), start=1):
        for seg in _SEGMENTS.split(line):
            if seg.strip():
                out.append((n, seg))
    return out


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    return any(_NUMBER_VALUE.match(seg, m.end()) for _, seg in _segments(head) for m in _START.finditer(seg))


def _parse(seg: str, start: int) -> dict[str, Any] | None:
    text = seg[start:].strip()
    end = text.rfind("}")
    if end < 0:
        return None
    try:
        obj = ast.literal_eval(quote_nonfinite(text[: end + 1]))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(obj, dict) or not all(isinstance(k, str) for k in obj):
        return None
    return obj


def _unwrapped(segments: list[tuple[int, str]], i: int, start: int) -> tuple[dict[str, Any] | None, int]:
    """The dict that opens in ``segments[i]`` and runs on over the next lines of a terminal paste
    hard-wrapped at a fixed width (h184-trl-grpo-qwen3-8b-openenv-watchdog-every-completion-truncated-
    keyword-reward: 180 columns, each dict over 2 to 4 lines, split inside a key such as
    ``completions/max_len`` + ``gth``, the blank at a wrap dropped): the lines are joined as they are
    while each one before the last is as long as the first (within :data:`WRAP_SLACK` characters);
    and the number of lines joined to it. ``(None, 0)`` when that joined text is no dict either."""
    width = len(segments[i][1])
    text = segments[i][1]
    for used, (_, piece) in enumerate(segments[i + 1: i + 1 + MAX_WRAPPED], start=1):
        if abs(len(segments[i + used - 1][1]) - width) > WRAP_SLACK or _START.search(piece):
            break  # the line before was the dict's last, or a new dict opens: no wrap
        text += piece
        if len(text) > MAX_WRAPPED_CHARS:
            break
        obj = _parse(text, start) if "}" in piece else None  # its end is on the line that closes it
        if obj is not None:
            return obj, used
    return None, 0


def read(path: Path) -> RawLog:
    return read_text(_text.read_text(path), path)


def read_text(text: str, path: Path | str) -> RawLog:
    """The dict lines of console text read from ``path`` (a notebook's stream output, say); the
    errors name ``path`` and the line of ``text``."""
    rows: list[dict[str, Any]] = []
    errors: list[IngestError] = []
    meta: dict[str, Any] = {}
    evals = 0
    #: per train-metric row, the progress-bar counters (count, total) drawn since the previous dict
    counters: list[list[tuple[int, int]]] = []
    seen: list[tuple[int, int]] = []
    segments = list(_text.readable_lines(_segments(text), path, errors))
    i = 0
    while i < len(segments):
        n, seg = segments[i]
        i += 1
        start = _START.search(seg)
        seen += [(int(a), int(b)) for a, b in _COUNTER.findall(seg if start is None else seg[:start.start()])]
        if start is None:
            if not rows and not errors and _TAIL.search(seg):
                # the first dict-like line is a dict's end without its start: the file was cut mid-line
                errors.append(IngestError(str(path), "TRL console: the end of a dict whose start is not in the file "
                                          "(the log was copied or rotated from the middle of a line)", n))
            continue
        obj = _parse(seg, start.start())
        if obj is None:
            obj, used = _unwrapped(segments, i - 1, start.start())
            i += used
        if obj is None:
            errors.append(IngestError(
                str(path), "TRL console: expected a complete Python dict literal ({'key': value, ...}); "
                "the line is truncated or malformed", n))
            continue
        if "train_runtime" in obj:
            meta["summary"] = {k: number(v) for k, v in obj.items()}
            if any(_STEP_METRIC.match(k) for k in obj):  # the steps since the last log, see the module docstring
                rows.append({k: v for k, v in obj.items() if not _SUMMARY_ONLY.match(k)})
                counters.append(seen)
                seen = []
                meta["last_row_from_summary"] = True
            continue
        if all(k.startswith("eval_") or k == "epoch" for k in obj):
            evals += 1
            continue
        rows.append(obj)
        counters.append(seen)
        seen = []
    if evals:
        meta["eval_dicts_skipped"] = evals
    if not rows:
        errors.append(IngestError(str(path), "TRL console: no train-metric dict lines ({'loss': ...}) found"))
        return RawLog(NAME, pl.DataFrame(), trainer="trl", metadata=meta, errors=tuple(errors))
    meta["step_from"] = "order of the dicts"
    if not any("step" in r or "global_step" in r for r in rows) and _bar_steps(rows, counters):
        meta["step_from"] = "progress bar"
    trainings = _count_trainings(rows)
    if trainings > 1:
        meta["trainings"] = trainings
    frame, dropped = records_frame(rows)
    if dropped:
        meta["non_numeric"] = dropped
    return RawLog(NAME, frame, trainer="trl", metadata=meta, errors=tuple(errors))


def _bar_steps(rows: list[dict[str, Any]], counters: list[list[tuple[int, int]]]) -> bool:
    """Number ``rows`` in a ``step`` key by the training bar's counter last drawn before each (see the module
    docstring); False, and nothing written, when a row has none or they do not increase."""
    totals = [t for cs in counters for _, t in cs]
    if not totals:
        return False
    main = max(set(totals), key=totals.count)
    steps: list[int] = []
    last = None
    for cs in counters:
        last = next((c for c, t in reversed(cs) if t == main), last if not cs else None)
        if last is None or (steps and last <= steps[-1]):
            return False
        steps.append(last)
    for r, step in zip(rows, steps, strict=True):
        r["step"] = step
    return True


def _count_trainings(rows: list[dict[str, Any]]) -> int:
    """How many trainings the dict lines hold, numbering each one's lines from 1 in a ``step`` key when
    there are several: without a step key, an ``epoch`` that goes back starts a new training (an SFT
    warm-up printed before the GRPO run, tsc-qwen05b-grpo-tied: 40 SFT lines, then 69 GRPO lines
    from epoch 0.01), which the canonical frame keeps apart as phases."""
    if any("step" in r or "global_step" in r for r in rows):
        return 1
    epochs = [number(r.get("epoch")) for r in rows]
    starts = {i for i in range(1, len(rows))
              if (a := epochs[i - 1]) is not None and (b := epochs[i]) is not None and b < a}
    if not starts:
        return 1
    k = 0
    for i, r in enumerate(rows):
        k = 1 if i in starts else k + 1
        r["step"] = k
    return len(starts) + 1


FORMAT = Format(NAME, sniff, read)
