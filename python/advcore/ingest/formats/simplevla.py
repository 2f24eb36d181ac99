"""SimpleVLA-RL run logs: its tab-separated file logger, and the ``Accuracy distribution:`` lines
of its console.

SimpleVLA-RL (PRIME-RL/SimpleVLA-RL, a fork of verl 0.2 for vision-language-action models, RL on
LIBERO and RoboTwin) writes two things this module reads. The sources were read in the code
library, never copied; paths are inside that repository, at PRIME-RL/SimpleVLA-RL@7c51662 (the
forks CZtheHusky/SimpleVLA-RL@4e799ca and Jixingyue/simplevla-rl@1ff5325 hold the same code):

* **The file logger** (``verl/utils/logger/aggregate_logger.py``, ``LocalLogger``: lines 79-81
  and 100-102; ``verl/utils/tracking.py`` L42-45 creates it with ``print_to_console=True``).
  ``trainer.logger=['console']`` creates ``<trainer.default_local_dir>/run_<YYYYmmdd_HHMMSS>.log``
  with two header lines, ``# Log started at <ISO time>`` and the literal
  ``# Format: {timestamp}\\t{step}\\t{data_json}``, then appends one line per ``logger.log`` call:
  ``<datetime.now().isoformat()> TAB <step> TAB <json.dumps(metrics)>`` (full precision, ``NaN``
  as JSON's ``NaN``). The same call prints the verl console line ``step:N - key:value`` (3
  decimals) to stdout.
* **The accuracy filter** (``verl/trainer/ppo/ray_trainer.py``, ``RayTrainer.filter``, L755-816:
  the accuracy line L772, the size line L815; ``RayTrainer.fit`` prints ``before filtering: N`` and
  ``after filtering: M`` around it, L575-577, and codetiming's ``gen: 12.3 seconds`` lines). With ``data.filter_accuracy=True`` every batch of tasks drawn
  from the dataloader is rolled out ``data.n_samples`` (G) times, the G binary success flags of
  each task are averaged (``reward_matrix.reshape(-1, n_samples).mean(-1)``) and a
  ``collections.Counter`` of those per-task success rates is printed, sorted by rate, as
  ``Accuracy distribution: 0.00:3 0.25:2 1.00:11`` (``{rate:.2f}:{tasks}``). Tasks whose rate
  falls outside ``[data.accuracy_lower_bound, data.accuracy_upper_bound]`` are then dropped, and
  ``RayTrainer.fit`` keeps drawing batches until ``train_batch_size`` tasks survive, so one
  training step prints one such line per batch drawn, all before that step's metrics are logged.

Why the all-0 and all-1 shares are the tied groups: the success flag is the episode's
``complete`` bit (``verl/trainer/main_ppo.py``, ``RobRewardManager.verify``: ``score =
[float(item) for item in completes]``), so a rate is ``k/G`` with ``k`` successes out of G, and
a task at ``0.00`` or ``1.00`` has G identical rewards: its GRPO advantages are all zero. (The
2-decimal rounding only makes a rate print as ``0.00``/``1.00`` when ``k`` is 0/G for ``G <=
200``.) The share ``(n[0.00] + n[1.00]) / sum(n)`` over all lines of a step is therefore the
zero-variance group share of the groups *sampled* for that step, before the filter; it is
emitted as ``accuracy_distribution/tied_frac`` and mapped to ``zero_variance_group_frac``. With
the usual bounds (0.1..0.9) those groups are dropped before training and cost rollouts rather
than gradient; with an upper bound of 1.0 (seen in the issue tracker, PRIME-RL/SimpleVLA-RL#25)
the all-success groups are trained on with zero advantage. PRIME and other verl forks print the
same line from the same code; a line with a rate outside ``[0, 1]`` (a reward that is not a 0/1
success) gets no tied share (``metadata["accuracy_rates_outside_unit"]``).

Columns added per step (Float64, null on steps without accuracy lines):
``accuracy_distribution/groups`` (tasks sampled), ``.../batches`` (lines, i.e. batches drawn),
``.../all_fail_frac``, ``.../all_success_frac``, ``.../tied_frac`` (the sum, 0..1) and
``.../mean`` (the task-weighted mean success rate of the sampled rollouts, +-0.005 from rounding).

Detection: the ``# Format:`` header or a first record line; or a verl console (as
:mod:`verl_console` detects it) holding an accuracy line or a ``step:N`` line with the actor's
entropy key ``actor_after/entropy_loss_eval`` (``verl/workers/actor/dp_rob.py``,
``compute_entropy``; in the code library only SimpleVLA-RL and its forks log it), looked for up
to the third step line. A console of a run without the accuracy filter and without that key stays
a plain verl console.

Reading rules:

* Lines are cleaned as :func:`advcore.ingest._parse.clean` does (ANSI codes, Ray ``(pid=...)`` prefixes).
* Records of one step are merged (the trainer logs validation metrics, then all metrics with the
  validation keys repeated, at the same step); a record repeating a key with another value starts
  a new row (a run resumed from a checkpoint re-logging the step).
* ``Accuracy distribution:`` lines belong to the next metrics record (TSV line, or verl console
  ``step:N`` line when the file is a console capture, whose metrics :mod:`verl_console` reads).
  Lines after the last record are listed in ``metadata["unattached_accuracy_lines"]``.
* A line that cannot be read (a truncated record, a bad JSON object, an accuracy line whose pairs
  are not ``rate:count``) is an :class:`IngestError` with its line number; the rest is kept.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from advcore._escape import excerpt
from advcore.model import IngestError, RawLog
from advcore.ingest._text import open_text, read_text, readable_lines
from advcore.ingest.formats import verl_console
from advcore.ingest._parse import clean, flatten, loads, number, records_frame
from advcore.ingest._format import Format

NAME = "simplevla"

#: ``LocalLogger``'s second header line, verbatim (with real tab characters).
FORMAT_HEADER = "# Format: {timestamp}\t{step}\t{data_json}"
#: Prefix of the derived per-step columns.
PREFIX = "accuracy_distribution/"
#: Prefix of the filter accounting columns (:func:`_filter_columns`).
FILTER_PREFIX = "filter/"

_STARTED = re.compile(r"^# Log started at (\S+)")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")
_RECORD = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)\t(-?\d+)\t(.*)$")
_RECORD_HEAD = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?\t-?\d+\t\{")
_ACCURACY = re.compile(r"^Accuracy distribution:(.*)$")
_RATE_COUNT = re.compile(r"^(-?\d+(?:\.\d+)?):(\d+)$")
# A verl console step line (the same lines verl_console reads): ``step:N - ...`` or a bare ``step:N``.
_STEP_LINE = re.compile(r"^\s*step:(\d+)(?:\s+-\s+|\s*-?\s*$)")
# ``RayTrainer.filter``: ``print(f"Filtered batch size: {len(filtered_batch)} (from original size: {len(batch)})")``
_FILTERED = re.compile(r"Filtered batch size: (\d+) \(from original size: (\d+)\)")
# The config ``main_task`` pprints at start (``'accuracy_lower_bound': 0.1,``) or the Hydra override
# (``data.accuracy_lower_bound=0.1``).
_BOUND = re.compile(r"(?:'|\bdata\.)accuracy_(lower|upper)_bound'?\s*[:=]\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")
_ENTROPY_KEY = re.compile(r"\bactor_(?:after|before)/entropy_loss_(?:train|eval):")

#: Bytes read past the head while looking for a first accuracy line in a verl-looking console.
_DEEP_SNIFF_BYTES = 32 << 20
#: Step lines after which a console without accuracy lines is left to verl_console.
_SNIFF_STEP_LINES = 3


@dataclass
class _Row:
    step: int
    values: dict[str, Any]
    rates: Counter[float] = field(default_factory=Counter)
    batches: int = 0
    #: samples before and after the filter (``Filtered batch size: M (from original size: N)``)
    sampled: int = 0
    kept: int = 0
    filtered: int = 0


def _accuracy(line: str) -> Counter[float] | str | None:
    """The ``rate -> tasks`` counts of an accuracy line, the reason it is malformed, or None when
    ``line`` is not one."""
    m = _ACCURACY.match(line)
    if m is None:
        return None
    counts: Counter[float] = Counter()
    for pair in m.group(1).split():
        p = _RATE_COUNT.match(pair)
        if p is None:
            return f"expected 'rate:count' pairs after 'Accuracy distribution:', got {excerpt(pair, 40)}"
        counts[float(p.group(1))] += int(p.group(2))
    if not counts:
        return "an 'Accuracy distribution:' line without any 'rate:count' pair"
    return counts


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    lines = head.splitlines()
    if any(line.rstrip("\r") == FORMAT_HEADER for line in lines[:5]):
        return True
    if any(_RECORD_HEAD.match(line) for line in lines[:20]):
        return True
    # a console of batches that the filter emptied before any step was logged (a cold start): accuracy
    # lines beside RayTrainer.filter's size lines, and no step line at all
    if any("Filtered batch size" in line and _FILTERED.search(line) for line in lines) and \
            any("Accuracy distribution:" in line and _marks(line) for line in lines):
        return True
    if not verl_console.sniff(path, head):
        return False
    if any(_marks(line) for line in lines):
        return True
    # A verl console whose first accuracy line lies past the head (config dumps are long).
    steps = read = 0
    with open_text(path) as f:
        for line in f:
            read += len(line)
            if _marks(line):
                return True
            if "step:" in line and _STEP_LINE.match(clean(line)):
                steps += 1
            if steps >= _SNIFF_STEP_LINES or read > _DEEP_SNIFF_BYTES:
                return False
    return False


def _marks(line: str) -> bool:
    """A console line only SimpleVLA-RL (or a PRIME-lineage fork) prints: an accuracy line, or a
    step line with the entropy key of its actor (``verl/workers/actor/dp_rob.py``,
    ``compute_entropy``: ``actor_after/entropy_loss_eval`` and its three siblings)."""
    if "Accuracy distribution:" in line:
        return isinstance(_accuracy(clean(line)), Counter)
    if "/entropy_loss_" not in line or _ENTROPY_KEY.search(line) is None:
        return False
    return _STEP_LINE.match(clean(line)) is not None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _merge(rows: list[_Row]) -> list[_Row]:
    """Consecutive rows of one step merged, unless a shared key has another value."""
    out: list[_Row] = []
    for row in rows:
        last = out[-1] if out else None
        if (last is not None and last.step == row.step
                and all(_same(last.values[k], v) for k, v in row.values.items() if k in last.values)):
            last.values.update(row.values)
            last.rates.update(row.rates)
            last.batches += row.batches
            last.sampled += row.sampled
            last.kept += row.kept
            last.filtered += row.filtered
        else:
            out.append(row)
    return out


def _runs(steps: list[int]) -> list[int]:
    """Steps of the maximal runs of equal consecutive values."""
    return [s for i, s in enumerate(steps) if i == 0 or steps[i - 1] != s]


def _derived(row: _Row) -> tuple[dict[str, float], bool]:
    """The accuracy columns of one row, and whether its rates leave ``[0, 1]``."""
    total = sum(row.rates.values())
    if total == 0:
        return {}, False
    outside = any(r < 0.0 or r > 1.0 for r in row.rates)
    zero, one = row.rates.get(0.0, 0), row.rates.get(1.0, 0)
    out = {
        f"{PREFIX}groups": float(total),
        f"{PREFIX}batches": float(row.batches),
        f"{PREFIX}mean": sum(r * n for r, n in row.rates.items()) / total,
    }
    if not outside:
        out[f"{PREFIX}all_fail_frac"] = zero / total
        out[f"{PREFIX}all_success_frac"] = one / total
        out[f"{PREFIX}tied_frac"] = (zero + one) / total
    return out, outside


def _filter_columns(row: _Row, bounds: tuple[float | None, float | None]) -> dict[str, float]:
    """What the accuracy filter removed from the batches of one step (:data:`FILTER_PREFIX` columns).

    From the ``Filtered batch size: M (from original size: N)`` lines: ``samples_sampled`` (sum of N),
    ``samples_kept`` (sum of M) and ``kept_frac``. From the accuracy lines and the bounds of the
    config (``data.accuracy_lower_bound`` / ``upper_bound``, as the start of the console prints them):
    ``groups_removed``, ``removed_all_fail`` and ``removed_all_success`` (groups at 0.00 and 1.00 outside
    the bounds), and, without the size lines, ``kept_frac`` as the share of groups within the bounds.
    ``batches``: batches drawn (accuracy lines, else size lines)."""
    out: dict[str, float] = {}
    if row.filtered and row.sampled > 0:
        out.update({f"{FILTER_PREFIX}samples_sampled": float(row.sampled),
                    f"{FILTER_PREFIX}samples_kept": float(row.kept),
                    f"{FILTER_PREFIX}kept_frac": row.kept / row.sampled})
    lo, hi = bounds
    total = sum(row.rates.values())
    if total and lo is not None and hi is not None:
        removed = {r: n for r, n in row.rates.items() if r < lo - 5e-3 or r > hi + 5e-3}  # rates print to 2 decimals
        out[f"{FILTER_PREFIX}groups_removed"] = float(sum(removed.values()))
        out[f"{FILTER_PREFIX}removed_all_fail"] = float(removed.get(0.0, 0))
        out[f"{FILTER_PREFIX}removed_all_success"] = float(removed.get(1.0, 0))
        out.setdefault(f"{FILTER_PREFIX}kept_frac", 1.0 - sum(removed.values()) / total)
    if total or row.filtered:
        out[f"{FILTER_PREFIX}batches"] = float(row.batches or row.filtered)
    if total:
        out[f"{FILTER_PREFIX}groups_sampled"] = float(total)
        out[f"{FILTER_PREFIX}all_fail_frac"] = row.rates.get(0.0, 0) / total
    return out


@dataclass(frozen=True)
class _Accuracy:
    """One accuracy line: the index of the next file record and of the next console step line
    when it was read, its counts and its line number."""

    record: int
    step_line: int
    counts: Counter[float]
    line: int
    #: a ``Filtered batch size`` line instead: samples before and after the filter
    sizes: tuple[int, int] | None = None

    def add_to(self, row: _Row) -> None:
        if self.sizes is not None:
            row.sampled += self.sizes[0]
            row.kept += self.sizes[1]
            row.filtered += 1
        else:
            row.rates.update(self.counts)
            row.batches += 1


def _attach_to_console_rows(rows: list[_Row], step_lines: list[int], accuracy: list[_Accuracy],
                            meta: dict[str, Any]) -> list[int]:
    """Add each accuracy line's counts to the row of the console step it precedes; return the
    line numbers of those that precede no step.

    The lines before the i-th block of equal consecutive ``step:N`` lines belong to that block,
    which is the i-th run of equal steps among the merged rows (counts go to its last row). When
    the two sequences differ (verl_console split a block), the last row of the step is used and
    ``meta["accuracy_aligned_by"]`` says so.
    """
    blocks = _runs(step_lines)
    block_of_line = [0] * len(step_lines)
    for i in range(1, len(step_lines)):
        block_of_line[i] = block_of_line[i - 1] + (step_lines[i] != step_lines[i - 1])
    last_row_of_run = [i for i, r in enumerate(rows) if i + 1 == len(rows) or rows[i + 1].step != r.step]
    aligned = _runs([r.step for r in rows]) == blocks
    if not aligned:
        meta["accuracy_aligned_by"] = "step"
    unattached: list[int] = []
    for acc in accuracy:
        target: int | None = None
        if acc.step_line < len(step_lines):
            block = block_of_line[acc.step_line]
            target = last_row_of_run[block] if aligned else next(
                (i for i in range(len(rows) - 1, -1, -1) if rows[i].step == blocks[block]), None)
        if target is None:
            unattached.append(acc.line)
            continue
        acc.add_to(rows[target])
    return unattached


def read(path: Path) -> RawLog:
    path = Path(path)
    text = read_text(path)
    errors: list[IngestError] = []
    meta: dict[str, Any] = {}
    records: list[_Row] = []
    step_lines: list[int] = []  # console ``step:N`` lines: their steps, in order
    accuracy: list[_Accuracy] = []
    text_values: set[str] = set()
    pure = False
    for lineno, physical in readable_lines(enumerate(text.splitlines(), start=1), path, errors):
        line = clean(physical)
        if not line.strip():
            continue
        if lineno <= 2 and line == FORMAT_HEADER.rstrip():
            pure = True
            continue
        started = _STARTED.match(line)
        if started:
            meta["log_started"] = started.group(1)
            pure = pure or lineno == 1
            continue
        sizes = _FILTERED.search(line) if "Filtered batch size" in line else None
        if sizes is not None:
            accuracy.append(_Accuracy(len(records), len(step_lines), Counter(), lineno,
                                      (int(sizes.group(2)), int(sizes.group(1)))))
            continue
        if "accuracy_" in line and "_bound" in line:
            for b in _BOUND.finditer(line):
                meta.setdefault(f"accuracy_{b.group(1)}_bound", float(b.group(2)))
        counts = _accuracy(line)
        if isinstance(counts, str):
            errors.append(IngestError(str(path), counts, lineno))
            continue
        if counts is not None:
            accuracy.append(_Accuracy(len(records), len(step_lines), counts, lineno))
            continue
        m = _RECORD.match(line)
        if m is not None:
            data, reason = loads(m.group(3))
            if reason:
                errors.append(IngestError(str(path), f"SimpleVLA-RL log: the JSON after the step is cut or malformed "
                                                     f"({reason})", lineno))
                continue
            if not isinstance(data, dict):
                errors.append(IngestError(str(path), "SimpleVLA-RL log: expected a JSON object after the step, got "
                                                     f"{type(data).__name__}", lineno))
                continue
            values: dict[str, Any] = {}
            for k, v in flatten(data).items():
                if number(v) is None and v is not None:
                    text_values.add(k)
                    continue
                values[k] = v
            records.append(_Row(int(m.group(2)), values))
            continue
        if (step := _STEP_LINE.match(line)) is not None:
            step_lines.append(int(step.group(1)))
            continue
        if pure or _TIMESTAMP.match(line):
            errors.append(IngestError(str(path), "SimpleVLA-RL log: expected '<ISO time>\\t<step>\\t<JSON object>', "
                                                 f"got {excerpt(line)}", lineno))

    trainer = "simplevla"
    if records:
        meta["logger"] = "file"
        rows = records
        for acc in accuracy:
            if acc.record < len(rows):
                acc.add_to(rows[acc.record])
        pending = [acc for acc in accuracy if acc.record >= len(rows)]
        rows = _merge(rows)
    else:
        console = verl_console.read(path)
        known = set(errors)  # the console reader reports the lines too long for both
        errors.extend(e for e in console.errors if "no verl 'step:N" not in e.message and e not in known)
        meta.update({k: v for k, v in console.metadata.items() if k not in ("first_step", "last_step")})
        meta["logger"] = "console"
        rows = _merge([_Row(int(r["step"]), {k: v for k, v in r.items() if k != "step" and v is not None})
                       for r in console.frame.to_dicts()])
        left = set(_attach_to_console_rows(rows, step_lines, accuracy, meta))
        pending = [acc for acc in accuracy if acc.line in left]

    unattached = [acc.line for acc in pending if acc.sizes is None]
    if unattached:
        meta["unattached_accuracy_lines"] = unattached
    meta["accuracy_lines"] = sum(1 for acc in accuracy if acc.sizes is None)
    meta["filter_lines"] = sum(1 for acc in accuracy if acc.sizes is not None)
    bounds = (meta.get("accuracy_lower_bound"), meta.get("accuracy_upper_bound"))
    if pending:  # batches drawn after the last logged step: no update came of them (yet)
        tail = _Row(-1, {})
        for acc in pending:
            acc.add_to(tail)
        meta["filter_pending"] = _filter_columns(tail, bounds)
    if not rows:
        if accuracy:  # batches were drawn and filtered, and no step was ever logged: the filter kept too little
            return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}), trainer=trainer,
                          metadata=meta, errors=tuple(errors))
        errors.append(IngestError(str(path),
                                  "no SimpleVLA-RL record ('<time>\\t<step>\\t{...}' or 'step:N - k:v') found"))
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}), trainer=trainer, metadata=meta,
                      errors=tuple(errors))
    table: list[dict[str, Any]] = []
    outside = False
    for row in rows:
        derived, out = _derived(row)
        outside = outside or out
        table.append({"step": row.step, **row.values, **derived, **_filter_columns(row, bounds)})
    frame, dropped = records_frame(table, parse=number)
    text_values.update(dropped)
    meta["first_step"], meta["last_step"] = int(frame["step"][0]), int(frame["step"][-1])
    if outside:
        meta["accuracy_rates_outside_unit"] = True
    if text_values:
        meta["text_valued_keys"] = sorted(text_values | set(meta.get("text_valued_keys", [])))
    return RawLog(NAME, frame, trainer=trainer, metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
