"""Read training logs into canonical per-step frames (SPEC sections 4 and 5).

``load(path)`` detects the format from the file's content, reads it with the format's record in
:mod:`advcore.ingest.formats`, and maps the trainer's keys onto canonical names through the alias
table (per-sample formats, reduced by the core, emit canonical names and skip it). It never raises
for a file it cannot read: the returned :class:`Run` carries the error (file, line, what was
expected) and no rows, so a scan of many files goes on; :func:`load_runs` reads every run of a
tracking store.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

from advcore._escape import described
from advcore.ingest import formats
from advcore.ingest._aliases import AliasTable, load_aliases
from advcore.ingest._canonical import canonicalize
from advcore.ingest._parse import final_error
from advcore.model import ENDED_WITH, STORE_RUN, IngestError, RawLog, Run
from advcore.ingest._runs import join_runs
from advcore.ingest._sqlite import is_sqlite, tables
from advcore.ingest._text import SNIFF_BYTES, decode_head, line_limit, read_head
from advcore.ingest.formats.tensorboard import is_event_file

__all__ = ["IngestError", "RawLog", "Run", "detect", "join_runs", "load", "load_aliases", "load_runs"]

#: Bytes read to detect a format (characters: twice or four times as many bytes in UTF-16 or UTF-32).
HEAD_BYTES = 1 << 16
#: Bytes read to detect the format of a longer text file that no format knows by its first
#: :data:`HEAD_BYTES`: a distributed launch prints every rank's warnings before the first step
#: (DeepSpeed-Chat step 3 logs reach their first ``epoch: 0|step: 0`` line after 86 and 142 KB).
LONG_HEAD_BYTES = 1 << 20


def _head(path: Path, size: int = HEAD_BYTES) -> str | None:
    """The first ``size`` bytes of ``path`` as text, decoded as every reader decodes the file
    (:mod:`advcore.ingest._text`: byte-order marks, UTF-16/32), or None for binary content."""
    data = read_head(path, size)
    if is_event_file(path) and b"\0" in data[:SNIFF_BYTES]:
        return None
    return decode_head(data)


def detect(path: Path) -> formats.Format | None:
    """The format that recognises ``path``'s content, or None. A folder is recognised only by a format
    that reads a folder of files as one run (``reads_folders``, e.g. TRL's ``completions/``)."""
    if path.is_dir():
        return next((m for m in formats.ORDER if m.reads_folders and m.sniff(path, None)), None)
    head = _head(path)
    found = next((m for m in formats.ORDER if m.sniff(path, head)), None)
    if found is None and head is not None and path.stat().st_size > HEAD_BYTES:
        longer = _head(path, LONG_HEAD_BYTES)
        found = next((m for m in formats.ORDER if m.sniff(path, longer)), None)
    return found


def load(path: Path | str, *, format: str | None = None, metric_map: Path | None = None,
         rollout_n: int | None = None, max_line: int | None = None) -> Run:
    """Read one log file (or a folder of TRL ``completions_*.parquet``, or an MLflow run folder) into
    a :class:`Run` (never raises for bad content: see ``Run.errors``).

    ``rollout_n`` (samples per prompt) groups per-sample dumps whose prompt text cannot tell the
    groups apart (every prompt of a step identical, e.g. a VLM whose image is not in the text)
    into consecutive blocks of that size; other formats ignore it. Console readers parse lines of up
    to ``max_line`` characters (default :data:`advcore.ingest._text.MAX_LINE`); a longer
    line is an error of the run naming its number, and is skipped. A store of several runs (an
    MLflow or Trackio database) is a run with an error saying so: :func:`load_runs` reads each.
    """
    runs = load_runs(path, format=format, metric_map=metric_map, rollout_n=rollout_n, max_line=max_line)
    if len(runs) == 1:
        return runs[0]
    names = ", ".join(r.path for r in runs[:3])
    return Run.failed(path, f"a store of {len(runs)} runs ({names}{', ...' if len(runs) > 3 else ''}): "
                            "load_runs reads each, as advcore scan does")


def load_runs(path: Path | str, *, format: str | None = None, metric_map: Path | None = None,
              rollout_n: int | None = None, max_line: int | None = None) -> list[Run]:
    """Every run in ``path``: one for a log file, one per stored run for a tracking store (an MLflow
    SQLite store, a Trackio project database), each with ``path`` ``<file>#<experiment>/<run name>``
    and ``files`` the store. Arguments as for :func:`load`; never raises for bad content."""
    path = Path(path)
    aliases: AliasTable = load_aliases(metric_map)
    try:
        if path.is_dir():
            fmt = formats.BY_NAME.get(format) if format else detect(path)
            if fmt is None or not fmt.reads_folders:
                return [Run.failed(path, "a folder, and not one advcore reads as one run (TRL completions/, "
                                         "NeMo-RL train_data_step*.jsonl, an MLflow run)")]
        elif not path.is_file():
            return [Run.failed(path, "not a file")]
        elif path.stat().st_size == 0:
            return [Run.failed(path, "the file is empty")]
        else:
            fmt = formats.BY_NAME.get(format) if format else detect(path)
        if fmt is None:
            return [Run.failed(path, _unknown(path))]
        with line_limit(max_line):
            raws = fmt.read_all(path, rollout_n)
        if fmt.read_runs is not None:
            return [_stored(canonicalize(raw, path, aliases), path) for raw in raws] or [
                Run.failed(path, f"a {fmt.name} store that holds no run")]
        run = canonicalize(raws[0], path, aliases, canonical=fmt.per_sample)
        if path.is_file() and (error := final_error(path)) is not None:
            run.metadata[ENDED_WITH] = error  # the run died: its log ends with a traceback
        return [run]
    except OSError as e:
        return [Run.failed(path, f"could not be read: {e.strerror or described(e)}")]
    except sqlite3.Error as e:
        return [Run.failed(path, f"an SQLite database that could not be read ({described(e)})")]
    except Exception as e:  # a reader bug must not end a scan of many files
        return [Run.failed(path, f"could not be parsed ({described(e)})")]


def _unknown(path: Path) -> str:
    """Why ``path``, a file no format took, is not read."""
    if not is_sqlite(path):
        return "not a training log advcore can read (no known format matched its content)"
    names = tables(path)
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return (f"an SQLite database advcore does not read (tables: {shown or 'none'}): not an MLflow tracking store "
            "(tables runs, and metrics with key, value, step, run_uuid, timestamp) nor a Trackio project "
            "(table metrics with run_name, step, metrics)")


def _stored(run: Run, store: Path) -> Run:
    """A run of a tracking store, named ``<store>#<run name>``; its file is the store."""
    name = run.metadata.get(STORE_RUN)
    return replace(run, path=f"{store}#{name}", joined=(str(store),)) if name else run
