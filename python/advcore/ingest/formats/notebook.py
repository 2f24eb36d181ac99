"""Jupyter notebooks (``.ipynb``, nbformat 4): the training log in the saved outputs of their cells.

Two kinds of output hold one:

* **The progress table** transformers' ``NotebookProgressCallback`` draws into a ``text/html``
  output (``transformers/utils/notebook.py``, ``text_to_html_table``): ``<table border="1"
  class="dataframe">`` whose header row starts with ``Step`` (or ``Epoch``) and goes on with
  ``Training Loss`` and, in Unsloth's notebooks, every logged key by its display name (``reward``,
  ``reward_std``, ``kl``, ``rewards / check_answer``); floats printed with 6 decimals, ``No log`` in a
  cell that had no value. These are the columns of the progress tables exported to CSV that
  :mod:`~advcore.ingest.formats.csv_table` reads, and the trainer is named the same way (``trl``
  when there is a ``Training Loss`` column), so the same aliases apply. The display is updated in
  place while training runs; the saved notebook keeps its last state, so a table is the whole run.
  A notebook with several training tables (``trainer.train()`` run in several cells) is read from
  the last one, and ``metadata["table"]`` says so; HTML tables whose header does not start with
  ``Step``/``Epoch`` (a pandas DataFrame) are not training tables.
* **TRL's console dicts** (``{'loss': ..., 'reward': ...}``) printed into ``stream`` outputs (no
  progress table: ``disable_tqdm``, a ``PrinterCallback``), read by
  :func:`advcore.ingest.formats.trl_console.read_text` from the concatenated text of one cell's
  stdout (or stderr) outputs, the last such cell when several have dict lines. A progress table,
  where there is one, is read instead: it has the step numbers; except a table of losses only
  (``Step | Training Loss``) beside a console that holds more keys: then the console is read
  (``metadata["progress_table"]`` names the table left aside).
* **A hand-written loop's printed progress** (``Episode 10, Avg reward: 29.60``), read by
  :mod:`advcore.ingest.formats.printed`, or a **printed table** (ElegantRL's evaluator: ``ID Step maxR
  | avgR ...`` over rows of numbers), read by :mod:`advcore.ingest.formats.text_table`, from the
  longest cell stream that has either, when the notebook has neither of the above or its console
  logged fewer steps.

Cells count from 1 in errors and metadata. A table row with more or fewer cells than the header is
an :class:`IngestError` naming the cell and the row, and costs that row; a cell that is not a
number costs that value (null). nbformat 3 notebooks (cells under ``worksheets``) are not read.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest.formats import csv_table, printed, sb3_console, text_table, trl_console
from advcore.ingest._parse import read_json, records_frame
from advcore.ingest._format import Format

NAME = "notebook"

_CELLS = re.compile(r'"cells"\s*:\s*\[')
_CELL_TYPE = re.compile(r'"cell_type"\s*:')
#: the first header cell of a NotebookTrainingTracker table
_FIRST_COLUMNS = ("Step", "Epoch")


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    text = head.lstrip("\ufeff").lstrip()
    if not text.startswith("{"):
        return False
    # Colab notebooks can hold megabytes of widget metadata before their first cell
    return path.suffix.lower() == ".ipynb" or (_CELLS.search(text) is not None and _CELL_TYPE.search(text) is not None)


class _Tables(HTMLParser):
    """The ``<table>``s of an HTML fragment, each as rows of cell texts (header row first)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[str]]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _text(value: Any) -> str:
    """A notebook string field: a string, or a list of strings to join."""
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _outputs(cell: Any) -> list[dict[str, Any]]:
    """The saved outputs of a cell (none for a markdown cell or a malformed entry)."""
    outputs = cell.get("outputs") if isinstance(cell, dict) else None
    return [o for o in outputs if isinstance(o, dict)] if isinstance(outputs, list) else []


def _training_tables(cells: list[Any]) -> list[tuple[int, list[list[str]]]]:
    """(cell number, rows) of every progress table in the ``text/html`` outputs, in notebook order."""
    found: list[tuple[int, list[list[str]]]] = []
    for number, cell in enumerate(cells, start=1):
        for output in _outputs(cell):
            data = output.get("data")
            html = _text(data.get("text/html")) if isinstance(data, dict) else ""
            if "<table" not in html:
                continue
            parser = _Tables()
            parser.feed(html)
            parser.close()
            found.extend((number, t) for t in parser.tables if t and t[0] and t[0][0] in _FIRST_COLUMNS)
    return found


def _loss_only(header: list[str]) -> bool:
    """A progress table whose columns besides the step are losses only (``Training Loss``,
    ``Validation Loss``): TRL's GRPO table when its other keys are not shown."""
    return all("loss" in name.lower() for name in header[1:])


def _from_table(path: Path, cell: int, table: list[list[str]], n_tables: int) -> RawLog:
    header, body = table[0], table[1:]
    rows: list[dict[str, Any]] = []
    errors: list[IngestError] = []
    for i, cells in enumerate(body, start=1):
        if len(cells) != len(header):
            errors.append(IngestError(str(path), f"notebook cell {cell}: progress table row {i} has {len(cells)} "
                                      f"cells, the header {len(header)}"))
            continue
        rows.append(dict(zip(header, cells, strict=True)))
    meta: dict[str, Any] = {"source": "progress_table", "cell": cell}
    if n_tables > 1:
        meta["table"] = f"the last of {n_tables} training tables (cell {cell})"
    if not rows:
        errors.append(IngestError(str(path), f"notebook cell {cell}: the progress table has no rows"))
        return RawLog(NAME, pl.DataFrame(), metadata=meta, errors=tuple(errors))
    frame, dropped = records_frame(rows)
    if dropped:
        meta["non_numeric"] = dropped
    return RawLog(NAME, frame, trainer=csv_table.trainer_of(header), metadata=meta, errors=tuple(errors))


def _from_streams(path: Path, cells: list[Any]) -> RawLog | None:
    """The last cell stream (stdout or stderr) with TRL dict lines or (stable-)baselines logger tables,
    read as that console; and, of the cell streams with a hand-written loop's printed progress
    (:mod:`~advcore.ingest.formats.printed`), the one with the most lines (the training cell, not a
    short evaluation after it). The console when it logged at least as many steps, else the printed
    progress (a callback's 'Timesteps: 1000/1000000' lines under SB3's one logger table of a DQN that
    printed it once: h425-sb3-dqn-cnn-multicarracing-discrete-5); None if neither."""
    console: tuple[int, str, ModuleType] | None = None
    progress: tuple[int, str, ModuleType] | None = None
    longest = -1
    for number, cell in enumerate(cells, start=1):
        streams: dict[str, list[str]] = {}
        for output in _outputs(cell):
            if output.get("output_type") == "stream":
                streams.setdefault(str(output.get("name")), []).append(_text(output.get("text")))
        for text in ("".join(parts) for parts in streams.values()):
            console = next(((number, text, r) for r in (trl_console, sb3_console) if r.sniff(path, text)), console)
            # the longest stream of printed progress or a text table: counted first, sniffed only when longer
            lines = text.count("\n")
            if lines > longest:
                table = next((r for r in (printed, text_table) if r.sniff(path, text)), None)
                if table is not None:
                    progress, longest = (number, text, table), lines
    read = [(found, found[2].read_text(found[1], path)) for found in (console, progress) if found is not None]
    if not read:
        return None
    (number, _, reader), raw = max(read, key=lambda pair: pair[1].frame.height)  # the console on a tie
    errors = tuple(IngestError(e.path, f"notebook cell {number}" + (f", output line {e.line}" if e.line else "")
                               + f": {e.message}") for e in raw.errors)
    source = {trl_console: "console_dicts", sb3_console: "console_tables", printed: "printed_progress",
              text_table: "text_table"}[reader]
    meta = {**raw.metadata, "source": source, "cell": number}
    return RawLog(NAME, raw.frame, trainer=raw.trainer, metadata=meta, errors=errors)


def read(path: Path) -> RawLog:
    doc, error = read_json(path, "notebook")
    if error is not None:
        return RawLog(NAME, pl.DataFrame(), errors=(error,))
    cells = doc.get("cells") if isinstance(doc, dict) else None
    if not isinstance(cells, list):
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(
            str(path), "notebook: expected a JSON object with a 'cells' list (nbformat 4)"),))
    tables = _training_tables(cells)
    # the streams are read when there is no table, or one of the loss alone (a callback of the user's
    # may have printed every logged key)
    console = _from_streams(path, cells) if not tables or _loss_only(tables[-1][1][0]) else None
    if tables:
        cell, table = tables[-1]
        from_table = _from_table(path, cell, table, len(tables))
        if console is None or console.frame.width <= from_table.frame.width:
            return from_table
        return RawLog(NAME, console.frame, trainer=console.trainer, errors=console.errors,
                      metadata={**console.metadata, "progress_table": f"cell {cell}, the loss only"})
    if console is not None:
        return console
    return RawLog(NAME, pl.DataFrame(), errors=(IngestError(
        str(path), "notebook: no training progress table (Step | Training Loss | ...), no TRL log dicts "
        "and no printed progress lines (Episode 10, reward: 0.5) in the cells' outputs"),))


FORMAT = Format(NAME, sniff, read)
