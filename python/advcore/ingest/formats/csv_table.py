"""Plain CSV tables, including notebook progress tables exported to CSV.

Notebook tables (``transformers``' NotebookProgressCallback) keep the display names, with spaces:
``Step``, ``Training Loss``, ``rewards / check_answer``, ``completions / mean_length``; the alias
table maps them. CRLF or LF line endings, quoted fields; blank cells are null; columns with no
numeric value (reason strings, JSON lists in a quoted field) are dropped and listed in
``metadata["non_numeric"]``; ``True``/``False`` read as 1/0. A row with the wrong number of
fields is an error with its line number. The row index that pandas' ``DataFrame.to_csv`` writes first (an
empty header cell over 0, 1, 2 ...) is dropped: the rows are numbered from 1. A header with tabs and no comma makes the table
tab-separated (Spinning Up's and rllab's ``progress.txt``). A table of one column is read when
its name is a word and every row a number (a loop that writes one reward per line); a column of
numbers with no header at all is read under the file's stem (``rewards.csv`` of
h199-handwritten-double-dqn-pong-learns-to-win: one episode's return per line, ``numpy.savetxt``).
A table of numbers with no header reads its first column as the step when it counts up, and the
column after it under the file's stem: hand-written loops append ``episode,return[,...]`` lines
(h188-keras-ddqn-pygame-race-car-plateau-then-full-episodes, ``episode_rewards.csv``: episode,
return, steps, epsilon); the other columns are ``column_<k>``, which no alias names.

TensorBoard's "Download CSV" of one scalar (``Wall time,Step,Value``) names its metric only in the
file name, ``run-<run>-tag-<tag>.csv`` with the tag's ``/`` written as ``_``
(``run-.-tag-rollout_ep_rew_mean.csv``): ``Value`` is read under that tag, the wall time is left out.
A download renamed by hand (``reward.csv``) names its metric by the file's stem.

stable-baselines3's ``Monitor`` files (``stable_baselines3/common/monitor.py``: a first line ``#``
followed by a JSON object with ``t_start`` and ``env_id``, then the columns ``r,l,t``: each finished
episode's return, length and wall time) are read as the trainer ``sb3_monitor``, one row per
episode, with the step the environment steps done when it ended (the running sum of ``l``, over
all environments of a vectorised run: SB3's ``time/total_timesteps`` axis).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    import _csv

from advcore.model import IngestError, RawLog
from advcore.ingest import _trainers as trainers
from advcore.ingest._text import read_text
from advcore.ingest._parse import file_series, number, records_frame
from advcore.ingest._format import Format

NAME = "csv_table"

#: TensorBoard's "Download CSV" of one scalar tag (tensorboard/plugins/scalar, the card's download
#: link): this header, and the tag only in the file name ``run-<run>-tag-<tag>.csv``, with the tag's
#: ``/`` written as ``_``; a browser adds `` (2)`` to a repeated download
_TENSORBOARD_HEADER = ["Wall time", "Step", "Value"]
_TENSORBOARD_NAME = re.compile(r"^run-(?P<run>.*)-tag-(?P<tag>.+?)(?: \(\d+\))?\.csv$")

#: Rows (after the header) whose widths decide whether a head is a table.
_SNIFF_ROWS = 8


def _delimiter(text: str) -> str:
    """``"\t"`` when the first line has tabs and no comma (a tab-separated table); ``" "`` when it is
    numbers separated by spaces only (``numpy.savetxt``'s default: ``5000 0.0``, jaxrl's and IQL's
    ``tmp/<seed>.txt`` of step and score, h242-lpd-iql-flow-primitives-antmaze-seed70-learns-to-80pct-
    success; a line of words and spaces is a console's, not a table's); else ``","``."""
    end = text.find("\n")
    first = text if end < 0 else text[:end]  # not text.split: that would copy the whole file
    if "," in first:
        return ","
    if "\t" in first:
        return "\t"
    fields = first.split()
    return " " if len(fields) >= 2 and all(number(f) is not None for f in fields) else ","


#: a tab beside a comma, or a tab alone, between two fields of a comma-separated table padded with tabs
_PADDED = re.compile(r"[ \t]*\t[ \t]*,?[ \t]*|[ \t]*,[ \t]*\t[ \t]*")


def _reader(text: str) -> _csv.Reader:
    """The rows of ``text`` by its delimiter (:func:`_delimiter`); runs of spaces are one delimiter. A
    first line with both tabs and commas is a comma-separated table whose writer padded each field
    with a tab and sometimes dropped the comma (yjhong89/DQN's ``logs/train.csv``: ``Step\t,episode.rwd\t,...``
    over rows ``39\t,35\t,6.06\t,0.063\t0.99996\t,10.7``): a tab, with or without its comma, separates."""
    delimiter = _delimiter(text)
    end = text.find("\n")
    if delimiter == "," and "\t" in (text if end < 0 else text[:end]):
        text = _PADDED.sub(",", text)
    return csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, skipinitialspace=delimiter == " ")


def _rows(text: str) -> list[list[str]]:
    return list(_reader(text))


#: the first line of a stable-baselines3 Monitor file (``#{"t_start": ...}``); OpenAI baselines' older
#: Monitor wrote a space after the ``#`` (``# {"t_start": ..., "env_id": "Hopper-v2"}``: ikostrikov's
#: pytorch-a2c-ppo-acktr-gail reference logs, h241-ikostrikov-ppo-hopper-v2-reference-seed1-learns-to-3500)
_MONITOR_LINE = re.compile(r"#\s?\{")
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/ .-")


def _without_monitor_line(text: str) -> str:
    return text[text.find("\n") + 1:] if _MONITOR_LINE.match(text) else text


def _pandas_index(rows: list[list[str]]) -> int:
    """1 when the first column is pandas' row index (``DataFrame.to_csv`` names it with an empty
    header cell and numbers the rows 0, 1, 2 ...; frames joined by ``pd.concat`` keep their own, so
    the numbers may repeat: h425-keras-dqn-pongdeterministic-v4's ``NDQN_train.csv``, each of 20
    epochs' games indexed by its epoch), else 0."""
    return int(not rows[0][0].strip() and all(r[0].strip().isdigit() for r in rows[1:] if r))


#: a file of one line holds a series when it has at least this many numbers
#: (h231-handwritten-dqn-multi-car-racing-episode-cut-at-minus-10-reward-pinned-never-learns: 750 returns)
ROW_MIN = 10


def _headerless(first: list[str]) -> bool:
    """The first row is numbers only: a table without a header (``numpy.savetxt``, a loop appending
    ``episode,return`` lines)."""
    return bool(first) and all(number(f) is not None for f in first)


def _counts(rows: list[list[str]], column: int) -> bool:
    """Column ``column`` of ``rows`` counts up: whole numbers, strictly increasing, or starting again from
    its first value (another run appended to the file: survey file JayaVerma/Bipedal_Walker_V3_Project
    ``reward_log.txt``, episodes 1 to 100 then 1 to 10,000; machado-research/AgarCL-benchmark's
    ``episode_returns.csv``, 0 to 13 four times over; the step counter's restarts make phases)."""
    read = [number(r[column]) for r in rows]
    values = [v for v in read if v is not None and v == int(v)]
    if len(values) < len(read):
        return False
    first = values[0]
    pairs = list(zip(values, values[1:], strict=False))
    restarts = sum(1 for a, b in pairs if b <= a)
    # a restart goes back to the first count, and a run of counts is longer than a few rows: a column of
    # whole-number returns is no counter
    return all(b > a or b == first for a, b in pairs) and restarts * RESTART_ROWS <= len(values)


#: a counting column starts again at most once per this many rows
RESTART_ROWS = 3


#: the one series of a headerless ``step value`` file named by a number: jaxrl-style training scripts
#: save the evaluation returns as ``{save_dir}/{seed}.txt`` (169kaif/rl-project-iql@5695e5b
#: train_finetune.py L153-163: ``np.savetxt(..., f'{FLAGS.seed}.txt'), eval_returns, fmt=['%d', '%.1f'])``
#: after logging the same value as ``evaluation/average_returns``), so it takes that key's name; so does a
#: file whose name carries the seed among the run's settings (LaurenYTaylor/implicit_q_learning@9e23046
#: saves ``{date}_s{seed}_d{data size}_t{tolerance}_nd{n}.txt`` in the same ``%d %.1f`` form, steps of the
#: offline phase negative: h256's antmaze runs)
SEED_FILE_SERIES = "evaluation/average_returns"
_SEED_STEM = re.compile(r"^\d+$|(?:^|[_\-.])(?:s|seed)[_\-]?\d+(?:$|[_\-.])", re.IGNORECASE)


def _headerless_names(rows: list[list[str]], stem: str) -> list[str]:
    """The names of a headerless table's columns: the first is ``step`` when it counts up (:func:`_counts`:
    whole numbers, strictly increasing or starting again from the first), and the next carries the file's ``stem``, as a single column does
    (``rewards.csv``: episode, return); when the first two count up and a third follows, they are
    d3rlpy's ``epoch,step,value`` (takuseno/d3rlpy@0dc11ce d3rlpy/logging/file_adapter.py
    ``FileAdapter.write_metric``, one file per metric: ``rollout_return.csv``); a file named by a seed holding ``step value`` is
    :data:`SEED_FILE_SERIES`. The others are ``column_<k>`` (1-based), which no alias names."""
    width = len(rows[0])
    if width == 3 and _counts(rows, 0) and _counts(rows, 1):
        return ["epoch", "step", stem]
    if width > 1 and _counts(rows, 0):
        names = ["step", SEED_FILE_SERIES if _SEED_STEM.search(stem) and width == 2 else stem]
    else:
        names = [stem]
    return names + [f"column_{k}" for k in range(len(names) + 1, width + 1)]


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    lines = [ln for ln in _without_monitor_line(head).splitlines() if ln.strip()][:_SNIFF_ROWS + 1]
    if len(lines) == 1:  # one line of numbers (its last field may be cut by the head): a row of values
        fields = lines[0].split(",")[:-1]
        return len(fields) >= ROW_MIN and _headerless(fields)
    if len(lines) < 2 or lines[0].lstrip().startswith(("{", "[")):
        return False
    # Drop a possibly cut last line of the head.
    try:
        rows = _rows("\n".join(lines[:-1] if len(lines) > 2 else lines))
    except csv.Error:
        return False
    if len(rows) < 2:
        return False
    header = rows[0]
    if _headerless(header):  # numbers, no header
        return len(rows) >= 3 and all(len(r) == len(header) and _headerless(r) for r in rows)
    if len(header) == 1:  # one column: a word over numbers
        word = header[0].strip()
        return (bool(word) and not word[0].isdigit() and set(word) <= _WORD and len(rows) >= 3
                and all(len(r) == 1 and number(r[0]) is not None for r in rows[1:]))
    if any(not h.strip() for h in header[_pandas_index(rows):]):
        return False
    # A row cut short (a crash mid-write, a hand edit) costs that row when read, not the file: the
    # body is a table when at most a quarter of its rows (and at least one) have another width.
    body = [r for r in rows[1:] if len(r) == len(header)]
    if not body or 4 * (len(rows) - 1 - len(body)) > max(4, len(rows) - 1):
        return False
    numeric = sum(1 for r in body for v in r if number(v) is not None)
    return numeric >= len(body)


def trainer_of(keys: list[str]) -> str | None:
    """The trainer that wrote a table with these column names (in order), or None."""
    if keys[:3] == ["r", "l", "t"]:  # stable-baselines3's Monitor (one row per finished episode)
        return "sb3_monitor"
    return trainers.trainer_of(keys)


def csv_rows(text: str) -> Iterator[tuple[int, list[str] | None, str | None]]:
    """The rows of CSV ``text``, each with the line it ends on: ``(line, fields, None)``, or
    ``(line, None, reason)`` for a row the ``csv`` module rejects (a field over its size limit); the
    rows after a rejected one are still read."""
    reader = _reader(text)
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            yield reader.line_num, None, str(e)
            continue
        yield reader.line_num, fields, None


def csv_records(path: Path, what: str,
                text: str | None = None) -> tuple[list[str] | None, list[dict[str, Any]], list[IngestError]]:
    """The header, the rows as ``{column: text}`` and the errors of CSV file ``path`` (or of its ``text``
    when the caller has read it): a row the ``csv`` module rejects or with the wrong number of fields is
    an error naming its line (``what`` names the format in the message) and the rows after it are read;
    blank rows are skipped, before the header too; no header or no data row is an error too."""
    errors: list[IngestError] = []
    header: list[str] | None = None
    rows: list[dict[str, Any]] = []
    text = read_text(path) if text is None else text
    skipped = 1 if _MONITOR_LINE.match(text) else 0
    for line, fields, reason in csv_rows(_without_monitor_line(text)):
        line += skipped
        if fields is None:
            errors.append(IngestError(str(path), f"{what}: {reason}", line))
            continue
        if not any(f.strip() for f in fields):  # blank lines, before the header too (a writer's first
            continue                             # newline: h264's reward_history.csv)
        if header is None:
            header = [h.strip() for h in fields]
            continue
        if len(fields) != len(header):
            errors.append(IngestError(
                str(path), f"{what}: expected {len(header)} fields as in the header, got {len(fields)}", line))
            continue
        rows.append(dict(zip(header, fields, strict=True)))
    if header is None:
        errors.append(IngestError(str(path), f"{what}: the file has no header row", 1))
    elif not rows:
        errors.append(IngestError(str(path), f"{what}: no data rows under the header"))
    return header, rows, errors


def read(path: Path) -> RawLog:
    text = read_text(path)
    end = text.find("\n")
    if (end < 0 or text.find("\n", end + 1) < 0) and len(fields := text.strip().split(",")) >= ROW_MIN \
            and _headerless(fields):
        # one line of numbers: a loop's values written as one row (csv.writer.writerow of the episode
        # returns), one value per step under the file's stem
        return file_series(NAME, path, fields, "row")
    header, rows, errors = csv_records(path, "CSV", text)
    if header is None or not rows:
        return RawLog(NAME, pl.DataFrame(), errors=tuple(errors))
    meta: dict[str, Any] = {}
    if _headerless(header):
        # no header: the first line is the first row; its columns named by :func:`_headerless_names`
        # (parsed again as lists: a first row with a repeated value names two columns alike)
        lines = [f for _, f, _ in csv_rows(_without_monitor_line(text)) if f and len(f) == len(header)]
        names = _headerless_names(lines, path.stem)
        rows = [dict(zip(names, line, strict=True)) for line in lines]
        meta["headerless"] = names
    if "" in header:  # pandas' row index: rows without a step counter are numbered anyway
        rows = [{k: v for k, v in row.items() if k} for row in rows]
    if header == _TENSORBOARD_HEADER:
        named = _TENSORBOARD_NAME.match(path.name)
        tag = named.group("tag") if named is not None else path.stem
        rows = [{"Step": row["Step"], tag: row["Value"]} for row in rows]
        meta.update(layout="tensorboard_csv", tensorboard_tag=tag)
        if named is not None:
            meta["tensorboard_run"] = named.group("run")
        else:  # renamed by hand: the series is named by its file, its other words the file's tags
            meta["headerless"] = [tag]
    frame, dropped = records_frame(rows)
    if dropped:
        meta["non_numeric"] = dropped
    trainer = trainer_of(header)
    if trainer == "sb3_monitor" and "step" not in frame.columns:
        frame = frame.with_columns(pl.col("l").fill_null(0).cum_sum().cast(pl.Int64).alias("step"))
        meta["step_unit"] = "environment steps"
    return RawLog(NAME, frame, trainer=trainer, metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
