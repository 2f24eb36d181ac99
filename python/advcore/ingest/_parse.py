"""The parsing shared by the format modules: the one scalar parser (:func:`number`: numbers as
Python, numpy and torch print them, NaN and +-inf kept), non-finite spellings in Python literals,
flattening nested records, JSON and JSONL readers that never raise for content, per-step record
frames, evaluation records kept apart, and the console line cleaner (:func:`clean`: ANSI codes,
progress-bar overwrites, Ray and logger prefixes). A format module parses one format with these; it
never imports another format's module for them.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from advcore.model import STEP_COUNTER, IngestError, RawLog
from advcore.ingest._text import PARQUET_MAGIC, decode, open_text, read_text, starts_with


_WRAPPED = re.compile(r"^(?:np\.)?(?:float|int|uint)\d*\((.*)\)$|^tensor\((.*?)(?:,\s*(?:device|dtype|grad_fn|requires_grad)=.*)?\)$")


#: A key that names a return per episode (``returns``, ``episode_scores``, ``ep_rew``, ``reward_per_episode``).
_EPISODIC = re.compile(r"return|score|ep_?rew|per_episode", re.IGNORECASE)


def row_count(lengths: Mapping[str, int]) -> int:
    """The length of the arrays read as columns, of named arrays of these ``lengths``: those of an array named like
    a return per episode when there is one, else the longest; the others cannot be placed on its rows. A loop that
    saves its episodes' returns beside its per-step rewards reads the returns (polionus/rlprj's ``*_RETURNS.npz``:
    ``returns`` of 665 episodes and ``rewards`` of 200,704 steps x (reward, done)); one that evaluates every 100
    episodes reads its episodes (h372's DDPG+HER ``training_logs.json``: ``reward_per_episode`` of 800, ``win_rate``
    of 8)."""
    episodic = [n for k, n in lengths.items() if _EPISODIC.search(k)]
    return max(episodic) if episodic else max(lengths.values())


def number(v: Any) -> float | None:
    """A logged scalar as a float, or None when it is not a number.

    Numbers and booleans (1.0 / 0.0) as they are; strings when they hold a number, possibly
    wrapped as Python/numpy/torch print it (``np.float64(0.5)``, ``np.int64(3)``,
    ``tensor(0.5, device='cuda:0')``, ``tensor(1.58, grad_fn=<MeanBackward0>)`` as ``str`` of a loss
    that still holds its graph writes it, a length-1 array ``[-500.]`` or ``tensor([1.], device='cuda:0')``),
    quoted (``'0.5'``), ``True``/``False``, or non-finite
    (``nan``, ``NaN``, ``inf``, ``-Infinity``). NaN and +-inf are returned as such, never as
    None: every format reads its values through this one function.
    """
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if not isinstance(v, str):
        return None
    text = v.strip().strip(",").strip()
    m = _WRAPPED.match(text)
    if m:
        text = (m.group(1) if m.group(1) is not None else m.group(2)).strip()
    if len(text) >= 2 and text[0] == "[" and text[-1] == "]" and "," not in text:  # a length-1 array
        text = text[1:-1].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    if text in ("True", "true", "False", "false"):
        return 1.0 if text[0] in "Tt" else 0.0
    try:
        return float(text)
    except ValueError:
        return None


#: The same parser under the name the JSON/literal readers use.
value = number

_NONFINITE = re.compile(r"(?<![\w'\"])(-?)(nan|inf)(?![\w'\"])")


def quote_nonfinite(literal: str) -> str:
    """A printed Python literal with its bare ``nan``/``inf``/``-inf`` (how Python prints
    non-finite floats; not literals, so :func:`ast.literal_eval` rejects them) quoted as strings,
    which :func:`number` reads back as NaN/inf."""
    return _NONFINITE.sub(lambda m: f"'{m.group(1)}{m.group(2)}'", literal)


def dict_literal_numbers(literal: str) -> dict[str, float | None] | None:
    """The numeric values (:func:`number`) of a Python dict literal printed by a logger
    (:func:`printed_dict`); None when it does not parse (a truncated line) or is no dict of string keys."""
    obj = printed_dict(literal)
    if obj is None or not all(isinstance(k, str) for k in obj):
        return None
    return {k: number(v) for k, v in obj.items()}


#: A number wrapped as numpy or torch print it (``np.float64(0.5)``, ``tensor(0.5, device='cuda:0')``,
#: ``tensor([536.2], device='cuda:0')``) inside a printed literal: the wrapper is dropped before parsing.
_WRAPPER = re.compile(r"\b(?:np\.|numpy\.)?(?:float|int|uint)\d*\(\s*([^()]*?)\s*\)|\btensor\(\s*([^(),]*?)\s*(?:,[^()]*)?\)")


def _unwrapped(m: re.Match[str]) -> str:
    """The number inside a :data:`_WRAPPER` match; a one-element tensor's brackets dropped too."""
    if m.group(1) is not None:
        return m.group(1)
    inner = m.group(2)
    return inner[1:-1].strip() if inner.startswith("[") and inner.endswith("]") else inner


def printed_dict(literal: str) -> dict[Any, Any] | None:
    """A dict a Python program printed (``print(metrics)``), its numpy and torch number wrappers
    (a one-element ``tensor([x])`` too) and bare ``nan``/``inf`` read (:func:`ast.literal_eval`, never
    ``eval``); None when it does not parse (a truncated line) or is no dict."""
    try:
        obj = ast.literal_eval(quote_nonfinite(_WRAPPER.sub(_unwrapped, literal)))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def is_missing(v: Any) -> bool:
    """True for values that mean "not logged" (None, empty string, NaN, 'nan')."""
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    return isinstance(v, str) and v.strip().lower() in ("", "nan", "none", "null")


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts flattened with ``/`` separators."""
    out: dict[str, Any] = {}
    for k, v in record.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "/"))
        else:
            out[key] = v
    return out


#: What a list of numbers logged under one key at one step is summarised as (``<key>_<statistic>``).
LIST_STATISTICS = ("mean", "std", "min", "max")

#: A printed number as a regular-expression source: sign, digits, fraction, exponent, or ``nan``/``inf`` (match
#: case-insensitively). Possessive throughout, so that a line it fails on costs time linear in its length.
NUMBER = r"[-+]?(?:\d++(?:\.\d*+)?|\.\d++)(?:[eE][-+]?\d++)?|nan|inf"


def list_statistics(values: Sequence[float]) -> dict[str, float]:
    """The :data:`LIST_STATISTICS` of a non-empty list of numbers: mean, std (ddof 0), min, max."""
    mean = math.fsum(values) / len(values)
    return {"mean": mean, "std": math.sqrt(math.fsum((x - mean) ** 2 for x in values) / len(values)),
            "min": min(values), "max": max(values)}


#: What a list is summarised as when each row's list is one group's samples (:func:`records_frame` with
#: ``groups``): the mean, the std within the group (ddof 0) and whether the group is tied (1.0 when every
#: value is the same, else 0.0), so that the rows of one step average to the batch's mean, the mean
#: within-group std and the share of tied groups.
GROUP_STATISTICS = ("mean", "group_std", "tied_groups")


def _group_statistics(values: Sequence[float]) -> dict[str, float]:
    stats = list_statistics(values)
    return {"mean": stats["mean"], "group_std": stats["std"], "tied_groups": float(stats["min"] == stats["max"])}


def _list_statistics(key: str, values: list[Any], groups: bool = False) -> list[pl.Series] | None:
    """``<key>_mean``, ``_std`` (ddof 0), ``_min``, ``_max`` per row when every logged value of ``key``
    is a list of numbers and one has at least two: the rewards (or advantages) of the step's samples
    that a hand-written loop logs beside their mean (anjaustin/autoresearch ``grpo_log.jsonl``:
    ``"rewards": [1.0, 1.0], "mean_reward": 1.0`` per step of a GRPO run with 2 samples per prompt);
    with ``groups``, the :data:`GROUP_STATISTICS` instead. A list with a value that is not a number, or
    an empty one, is null on its row; None when the key does not hold such lists."""
    logged = [v for v in values if not is_missing(v)]
    if not logged or not all(isinstance(v, list) for v in logged) or max(len(v) for v in logged) < 2:
        return None
    names, summarise = (GROUP_STATISTICS, _group_statistics) if groups else (LIST_STATISTICS, list_statistics)
    stats: dict[str, list[float | None]] = {name: [] for name in names}
    for v in values:
        nums = [number(x) for x in v] if isinstance(v, list) and v else []
        finite = [x for x in nums if x is not None and math.isfinite(x)]
        row = summarise(finite) if nums and len(finite) == len(nums) else {}
        for name in names:
            stats[name].append(row.get(name))
    return [pl.Series(f"{key}_{name}", stats[name], dtype=pl.Float64) for name in names]


def records_frame(
    rows: list[dict[str, Any]], parse: Callable[[Any], float | None] | None = None, groups: bool = False
) -> tuple[pl.DataFrame, list[str]]:
    """One Float64 column per key (in first-seen order) and the keys dropped as non-numeric.

    A key is kept when at least one of its values is a number; other values become null. A key whose
    values are lists of numbers gives their statistics instead (:func:`_list_statistics`; with
    ``groups``, each row's list is one group's samples).
    A ``step`` key becomes an Int64 ``step`` column (Float64 when a value is no whole number within
    Int64, so that the canonical frame can say which rows it leaves out). ``parse`` turns a value into a float
    (default :func:`number`, which keeps NaN and +-inf).
    """
    parse = parse or number
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r))
    columns: dict[str, pl.Series] = {}
    dropped: list[str] = []
    for k in keys:
        listed = _list_statistics(k, [r.get(k) for r in rows], groups)
        if listed is not None:
            columns.update({s.name: s for s in listed})
            continue
        values = [parse(r.get(k)) for r in rows]
        if all(v is None for v in values) and any(not is_missing(r.get(k)) for r in rows):
            dropped.append(k)
            continue
        columns[k] = pl.Series(k, values, dtype=pl.Float64)
    frame = pl.DataFrame(list(columns.values())) if columns else pl.DataFrame()
    if "step" in frame.columns and frame["step"].cast(pl.Int64, strict=False).null_count() == frame["step"].null_count():
        frame = frame.with_columns(pl.col("step").cast(pl.Int64))
    return frame, dropped  # a step that no Int64 holds stays Float64: the canonical frame reports its rows


def mean_record(records: Sequence[Mapping[str, float | None]]) -> dict[str, float | None]:
    """Several records of one step averaged key by key, over the values that are not null (a key
    with none stays null; a NaN among them makes the mean NaN)."""
    out: dict[str, float | None] = {}
    for key in dict.fromkeys(k for r in records for k in r):
        values = [v for r in records if (v := r.get(key)) is not None]
        out[key] = sum(values) / len(values) if values else None
    return out


Records = list[tuple[int, list[Mapping[str, float | None]]]]


def by_step(records: Iterable[tuple[int, Mapping[str, float | None]]]) -> Records:
    """Records that come one after another with the same step, grouped: ``[(step, [record, ...]), ...]``
    in order. A step that comes back after another starts a new group (a second run appended to a
    log keeps its rows)."""
    out: Records = []
    for step, record in records:
        if out and out[-1][0] == step:
            out[-1][1].append(record)
        else:
            out.append((step, [record]))
    return out


def steps_frame(groups: Records) -> pl.DataFrame:
    """One row per group of :func:`by_step`: its records averaged (:func:`mean_record`), its step as ``step``."""
    return records_frame([{**mean_record(group), "step": step} for step, group in groups])[0]


def numeric_frame(frame: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """A frame read by Polars with every column as Float64 (strings parsed where numeric)."""
    rows_kept: list[pl.Series] = []
    dropped: list[str] = []
    for name in frame.columns:
        s = frame[name]
        if s.dtype == pl.Boolean or s.dtype.is_numeric():
            rows_kept.append(s.cast(pl.Float64))  # NaN stays NaN; a Parquet null stays null
            continue
        if s.dtype in (pl.String, pl.Utf8):
            parsed = pl.Series(name, [number(v) for v in s.to_list()], dtype=pl.Float64)
            if parsed.null_count() == len(parsed) and any(not is_missing(v) for v in s.to_list()):
                dropped.append(name)
                continue
            rows_kept.append(parsed)
            continue
        if s.null_count() == len(s):
            rows_kept.append(s.cast(pl.Float64))
            continue
        dropped.append(name)
    out = pl.DataFrame(rows_kept) if rows_kept else pl.DataFrame()
    if "step" in out.columns:
        out = out.with_columns(pl.col("step").cast(pl.Int64, strict=False))
    return out, dropped


def _why(e: ValueError | RecursionError) -> str:
    """Why a JSON text could not be read, in a few words."""
    if isinstance(e, json.JSONDecodeError):
        return e.msg
    if isinstance(e, RecursionError):
        return "nested deeper than can be read"
    return str(e).split(";")[0]  # an integer too long to convert


def loads(text: str) -> tuple[Any, str | None]:
    """``json.loads(text)``, or None and why not: invalid JSON, nesting deeper than Python's
    recursion limit, an integer of more digits than Python converts (4,300). Never raises for
    content."""
    try:
        return json.loads(text), None
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        return None, _why(e)


def first_json_line(head: str) -> tuple[int, Any] | None:
    """The first non-blank line of ``head`` parsed as JSON (and its 1-based number), or None."""
    for i, line in enumerate(head.splitlines(), start=1):
        if not line.strip():
            continue
        obj, reason = loads(line)
        return None if reason else (i, obj)
    return None


def is_json_lines(head: str) -> bool:
    """Whether ``head`` begins as JSON Lines: its first non-blank line is a whole JSON object and the
    next non-blank line begins another (a JSON document written on one line has no second line; one
    spread over lines has no whole object on its first)."""
    first = first_json_line(head)
    if first is None or not isinstance(first[1], dict):
        return False
    rest = head.splitlines()[first[0]:]
    return next((ln.lstrip() for ln in rest if ln.strip()), "").startswith("{")


def step_files(path: Path, name: re.Pattern[str]) -> list[Path]:
    """The per-step files of a folder whose names ``name`` matches in full, in the order of the step
    number its first group captures (``[path]`` itself when it is a file): TRL's
    ``completions_<step>.parquet``, NeMo-RL's ``train_data_step<N>.jsonl``."""
    if not path.is_dir():
        return [path]
    found = [(int(m.group(1)), p.name, p) for p in path.iterdir() if p.is_file() and (m := name.fullmatch(p.name))]
    return [p for _, _, p in sorted(found)]


def is_parquet(path: Path) -> bool:
    return starts_with(path, PARQUET_MAGIC)


def _pickled_scalar(obj: dict[str, Any]) -> Any:
    """A numpy scalar as jsonpickle writes it (``{"py/object": "numpy.float64", "dtype": "float64",
    "value": 2.59}``: sacred's ``info.json`` under PyMARL) as its value; any other object as it is."""
    kind = obj.get("py/object")
    if isinstance(kind, str) and kind.startswith("numpy.") and "value" in obj:
        return obj["value"]
    return obj


def read_json(path: Path, fmt: str) -> tuple[Any, IngestError | None]:
    """The JSON document in ``path`` (numpy scalars that jsonpickle wrapped read as their values), or
    None and an error naming the file and the line where the JSON broke (``fmt`` says what the file
    was taken for)."""
    try:
        return json.loads(read_text(path), object_hook=_pickled_scalar), None
    except (ValueError, RecursionError) as e:
        return None, IngestError(str(path), f"{fmt}: invalid JSON ({_why(e)})", getattr(e, "lineno", None))


def read_jsonl(
    path: Path, fmt: str, *, flat: bool = True, check: Callable[[dict[str, Any]], str | None] | None = None
) -> tuple[list[dict[str, Any]], list[IngestError]]:
    """Records of a JSONL file (nested objects flattened to ``a/b`` keys unless ``flat=False``).
    A line that is not a JSON object, or that ``check`` rejects (it returns the reason), is an
    error with its line number; the rest of the file is still read."""
    rows: list[dict[str, Any]] = []
    errors: list[IngestError] = []
    with open_text(path) as f:
        for n, line in enumerate(f, start=1):
            text = line.strip()
            if not text:
                continue
            obj, reason = loads(text)
            if reason:
                errors.append(IngestError(str(path), f"{fmt}: expected one JSON object per line ({reason})", n))
                continue
            if not isinstance(obj, dict):
                errors.append(IngestError(str(path), f"{fmt}: expected a JSON object, got {type(obj).__name__}", n))
                continue
            reason = check(obj) if check else None
            if reason:
                errors.append(IngestError(str(path), f"{fmt}: {reason}", n))
                continue
            rows.append(flatten(obj) if flat else obj)
    return rows, errors


#: A record whose ``phase``/``split``/``mode``/``stage``/``type`` field says one of these is an evaluation.
_EVAL_FIELDS = ("phase", "split", "mode", "stage", "type")
#: Words that name an evaluation (a record's field value, a group or key prefix).
EVAL_WORDS = frozenset({"eval", "evaluation", "evaluations", "val", "valid", "validation", "test"})
_KEEP = frozenset({"step", "epoch"})


def evaluation_apart(rows: list[dict[str, Any]]) -> int:
    """Rename, in place, the metrics of evaluation records (a ``phase``, ``split``, ``mode``,
    ``stage`` or ``type`` field saying ``eval``, ``val``, ``test`` ...) to ``eval/<key>``, so that a
    held-out ``reward_mean`` logged beside the training one at the same step is not read as
    training signal; step counters keep their names. Returns how many records were evaluations."""
    n = 0
    for i, row in enumerate(rows):
        if not any(isinstance(v := row.get(f), str) and v.strip().lower() in EVAL_WORDS for f in _EVAL_FIELDS):
            continue
        rows[i] = {(k if k in _KEEP or k in _EVAL_FIELDS or k.startswith("eval/") or STEP_COUNTER.search(k)
                    else f"eval/{k}"): v
                   for k, v in row.items()}
        n += 1
    return n


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_PREFIX = re.compile(r"^\s*(?:\((?:[\w.:-]+ )?pid=\d+(?:, ip=[\w.:-]+)?\)\s*)+")
_REPEATED = re.compile(r"\[repeated \d+x across cluster\]\s*$")
_LEVEL = r"(?:INFO|DEBUG|WARNING|WARN|ERROR|CRITICAL)"
#: A logger's line prefix, any number of times: a timestamp (``2017-06-30 17:30:11.098692 EDT``,
#: ``[2023-04-18 08:53:39,548]``, ``2026-05-27T11:57:00Z``), a level (``[INFO]``, ``INFO:root:``,
#: ``INFO -``; logging's default ``LEVEL:name:`` has one name; a logger name before `` - LEVEL - ``, as
#: in ``%(asctime)s - %(name)s - %(levelname)s - %(message)s``), a rank (``[rank0]:``), loguru's
#: ``name:function:line`` before `` - `` (its default format: ``2025-11-18 21:24:34.384 | INFO     |
#: __main__:_log_metrics:20 - iter=0000 reward=-12.88``); each ends in
#: ``:`` or ``]`` or is followed by spaces and at most one ``|`` or ``-`` (a tab after a timestamp
#: is a field separator: SimpleVLA-RL's file logger writes ``time<TAB>step<TAB>JSON``); logzero's and tornado's
#: ``[I 230118 17:47:41 utils:138]`` (level initial, ``%y%m%d`` date, module and line).
#: Anchored and possessive: linear on any line.
_LOG_PREFIX = re.compile(
    r"^(?:[ \t]*+(?:\[[DIWEC] \d{6} \d\d:\d\d:\d\d(?:[.,]\d++)?+ [\w.]++:\d++\]"
    r"|\[?+\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:[.,]\d++)?+)?+"
    r"(?: ?+(?:[A-Z]{3,4}+|Z|[+-]\d\d:?+\d\d))?+\]?+"
    rf"|\[{_LEVEL}\]|{_LEVEL}(?:(?::[A-Za-z_][\w.]*+)?+:|(?=[ \t]))|\[rank\d++\]:?+"
    rf"|[A-Za-z_][\w.]*+(?= - {_LEVEL} )"
    r"|[A-Za-z_<][\w.<>]*+:[\w<>]++:\d++(?= - ))"
    r"(?:[ ]++(?:[|-][ ]++)?+|(?<=[:\]])))++")
#: Where a console record begins, after whatever prefix the logger put before it; not inside a key
#: (``global_step:3``, ``timing/step:1.2``). Shared with the SimpleVLA-RL and OpenRLHF readers.
_MARKER = re.compile(r"(?<![\w/.-])(?:step:\d|Global step \d|Accuracy distribution:)")


def clean(line: str) -> str:
    """A console line without ANSI codes, carriage-return overwrites, Ray prefixes and any logger
    prefix before a record marker."""
    line = ANSI.sub("", line)
    if "\r" in line:
        # A progress bar overwritten in place: keep the prefix and the text after the last \r.
        prefix = _PREFIX.match(line)
        tail = line.rsplit("\r", 1)[1]
        line = (prefix.group(0) if prefix else "") + tail
    line = _LOG_PREFIX.sub("", _PREFIX.sub("", line))
    marker = _MARKER.search(line)
    if marker is not None and marker.start() > 0:
        line = line[marker.start():]
    repeated = _REPEATED.search(line)
    return (line[:repeated.start()] if repeated else line).rstrip()


def long_json_lines(path: Path, limit: int, errors: list[IngestError]) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON value) of the non-blank lines of ``path``, read one at a time: per-sample
    dumps whose lines are long by nature (NeMo-RL's per-token lists, prime-rl's whole trajectories). A
    line of ``limit`` characters or more is read past in pieces, never held whole; it and a line that is
    not JSON are errors of ``errors`` naming the file and line, and are skipped."""
    with open_text(path) as f:
        n = 0
        while chunk := f.readline(limit):
            n += 1
            if len(chunk) >= limit and not chunk.endswith("\n"):
                while (rest := f.readline(limit)) and not rest.endswith("\n"):
                    pass
                errors.append(IngestError(str(path), f"a line longer than {limit} characters; skipped", n))
            elif chunk.strip():
                try:
                    yield n, json.loads(chunk)
                except ValueError as e:
                    errors.append(IngestError(str(path), f"not a JSON object ({e.__class__.__name__}: {e})", n))


def file_series(format_name: str, path: Path, values: Sequence[Any], layout: str) -> RawLog:
    """One series, one value per step, named by the file's stem as a headerless table's column is
    (``metadata["headerless"]``: the alias lookup reads the stem's words, ``episode_rewards``), for a file
    that holds bare numbers laid out as ``layout`` (a JSON array, one CSV row)."""
    frame, _ = records_frame([{path.stem: v} for v in values])
    return RawLog(format_name, frame, metadata={"headerless": [path.stem], "layout": layout})


#: How much of a console's end :func:`final_error` reads, and how many of its last lines a traceback must begin in
TAIL_BYTES = 64 << 10
TAIL_LINES = 200
#: ... and the exception line must be among its last this many non-blank lines
END_LINES = 20
_TRACEBACK = "Traceback (most recent call last):"
#: ... as its bytes in the encodings a console is read in: a tail without them is not decoded (every binary file and
#: every log that ends without a traceback, nearly all a scan reads)
_TRACEBACK_BYTES = tuple(_TRACEBACK.encode(e) for e in ("utf-8", "utf-16-le", "utf-16-be"))
#: the line that ends a Python traceback: the exception's qualified name, then its message
#: (``safetensors_rust.SafetensorError: Error while serializing: ...``, ``torch.OutOfMemoryError: CUDA out of memory``)
_EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)(?:\([^)]*\))?(?::.*)?$")


def final_error(path: Path) -> str | None:
    """The exception a console log ends with: the last unindented exception line after the last Python traceback
    that begins in its last ``TAIL_LINES`` lines, itself among the last ``END_LINES`` non-blank ones
    (tinyzero-ppo-entropy-collapse's part-of-logs.md ends with verl's checkpoint save failing,
    ``safetensors_rust.SafetensorError: ... "No space left on device"``), cut to 300 characters; None when it ends
    without one or cannot be read."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - TAIL_BYTES))
            raw = f.read()
    except OSError:
        return None
    if not any(marker in raw for marker in _TRACEBACK_BYTES):
        return None
    tail = decode(raw)
    lines = [text for line in tail.splitlines()[-TAIL_LINES:] if (text := ANSI.sub("", line).rstrip())]
    starts = [i for i, line in enumerate(lines) if line.endswith(_TRACEBACK)]
    if not starts:
        return None
    found = [i for i in range(starts[-1] + 1, len(lines)) if not lines[i][0].isspace() and _EXCEPTION.match(lines[i])]
    # the log ends there: at most a few lines after it (a shell prompt, Hydra's hint), not more training
    return lines[found[-1]][:300] if found and len(lines) - found[-1] <= END_LINES else None
