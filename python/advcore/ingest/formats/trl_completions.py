"""TRL ``GRPOTrainer`` completion tables: ``<output_dir>/completions/completions_<step:05d>.parquet``.

Written by TRL 1.x (checked against trl 1.16.0, ``GRPOTrainer.log``) at every logging step when
``GRPOConfig(log_completions=True)``: one row per completion of the latest generation batch, with
the columns ``step`` (the optimizer step, as ``trainer_state.json``'s ``log_history`` numbers it),
``prompt``, ``completion``, one float64 column per reward function (named after the function) and
``advantage``; extra columns a reward function logged through ``log_extra`` may sit between them.

``read(path)`` takes one such file or a folder of them (the ``completions/`` folder; its
``completions_*.parquet`` files are read in step order as one run) and builds the long
per-sample frame of SPEC section 4, reduced per step by :func:`advcore.ingest._reduce.reduce`:

* ``reward``: the sum of the reward-function columns, as TRL's ``reward`` with its default
  ``reward_weights`` (all 1; other weights are not recorded in the table, so a run that set them
  gets an unweighted sum). A reward function that returned None is NaN in the table and is left
  out of the sum; a completion with no reward at all has a null reward (TRL: unscorable).
  The reward-function columns are every numeric column other than ``step`` and ``advantage``;
  when ``trainer_state.json`` sits next to the ``completions/`` folder, only the columns it names
  as ``rewards/<name>/mean`` count (the rest are ``log_extra`` columns and are ignored).
  Each component is also reduced to ``reward/<name>`` (per-step mean).
* ``adv``: the ``advantage`` column.
* ``group``: TRL's sampler repeats each prompt ``num_generations`` times in a row, so a group is
  a block of consecutive rows. Without ``rollout_n``, the blocks are the runs of identical
  consecutive ``prompt`` values, cut into pieces of the greatest common divisor of all run lengths
  in the files read (two neighbouring groups of one repeated prompt make a run of twice the group
  size; every run is a whole number of groups). With ``rollout_n`` (the user's
  ``num_generations``) the blocks are exactly that size; a batch whose size it does not divide gets
  no group statistics and an error.
* Duplicate batches: with ``steps_per_generation > 1`` (or ``num_iterations > 1``) a step that did
  not generate writes the previous batch again with only ``step`` changed. A batch whose prompts,
  completions and reward columns equal the previous file's is dropped (counted in
  ``metadata["duplicate_batches"]``), so such steps are absent rather than counted twice.

Only the latest batch is kept by TRL, so with ``logging_steps > 1`` the batches in between are not
in any table; the steps that are present are exact.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.errors import AdvcoreError
from advcore.model import IngestError, RawLog
from advcore.ingest._parse import read_json, step_files
from advcore.ingest._reduce import reduce
from advcore.ingest._format import Format

NAME = "trl_completions"
#: File names TRL gives the completion tables.
FILE_NAME = re.compile(r"completions_(\d+)\.parquet")
_REQUIRED = ("step", "prompt", "completion", "advantage")


def is_step_file(path: Path) -> bool:
    """Whether ``path`` is named as one of TRL's per-step completion tables."""
    return FILE_NAME.fullmatch(path.name) is not None


def _files(path: Path) -> list[Path]:
    return step_files(path, FILE_NAME)


def _has_columns(path: Path) -> bool:
    try:
        return set(_REQUIRED) <= set(pl.read_parquet_schema(path))
    except (OSError, pl.exceptions.PolarsError):
        return False


#: Tables of a completions folder looked at to recognise it.
_SNIFF_FILES = 4


def sniff(path: Path, head: str | None) -> bool:
    """A Parquet file (or a folder of ``completions_*.parquet`` files, one of the first few of which)
    with ``step, prompt, completion, advantage`` columns: a corrupt first table does not hide the
    good ones (it is reported when the folder is read)."""
    if path.is_dir():
        return any(_has_columns(f) for f in _files(path)[:_SNIFF_FILES])
    return head is None and path.suffix.lower() == ".parquet" and _has_columns(path)


def _reward_names(folder: Path) -> list[str] | None:
    """Reward-function names from ``trainer_state.json`` next to the ``completions/`` folder."""
    state = folder.parent / "trainer_state.json"
    if not state.is_file():
        return None
    try:
        doc, error = read_json(state, "trainer_state")
    except OSError:
        return None
    if error is not None:
        return None
    history = doc.get("log_history") if isinstance(doc, dict) else None
    if not isinstance(history, list):
        return None
    names: dict[str, None] = {}
    for row in history:
        if isinstance(row, dict):
            for key in row:
                m = re.fullmatch(r"rewards/(.+)/mean", str(key))
                if m:
                    names[m.group(1)] = None
    return list(names) or None


def _runs(keys: pl.Series) -> list[int]:
    """Lengths of the runs of equal consecutive values of ``keys``."""
    lengths: list[int] = []
    prev: object = object()
    for k in keys.to_list():
        if lengths and k == prev:
            lengths[-1] += 1
        else:
            lengths.append(1)
            prev = k
    return lengths


def same_batch(a: pl.DataFrame, b: pl.DataFrame, components: list[str]) -> bool:
    """Whether table ``b`` repeats table ``a``'s batch (same prompts, completions and rewards;
    TRL rewrites the previous batch at a step that did not generate)."""
    cols = ["prompt", "completion", *components]
    return a.height == b.height and a.select(cols).equals(b.select(cols), null_equal=True)


def reward_components(batch: pl.DataFrame, named: list[str] | None = None) -> list[str]:
    """The reward-function columns of one table: its numeric columns other than ``step`` and
    ``advantage``, restricted to ``named`` (the functions TRL logs as ``rewards/<name>/mean``)."""
    numeric = [c for c in batch.columns if c not in ("step", "advantage") and batch[c].dtype.is_numeric()]
    return [c for c in numeric if named is None or c in named]


def samples_of(batch: pl.DataFrame, components: list[str], size: int,
               weights: list[float] | None = None) -> pl.DataFrame:
    """One table as per-sample columns ``step`` (Int64), ``group`` (Int64: consecutive blocks of
    ``size`` rows; null when ``size`` does not divide the rows), ``reward`` (Float64, the sum of the
    ``components`` weighted by ``weights`` (TRL's ``reward_weights``; default all 1), NaN reward
    functions left out, null when none scored), ``adv`` (Float64) and one column per component."""
    if weights is not None and len(weights) != len(components):
        raise AdvcoreError(f"`weights` has {len(weights)} values for {len(components)} reward functions")
    group = (pl.lit(None, dtype=pl.Int64) if batch.height % size
             else pl.int_range(pl.len(), dtype=pl.Int64) // size)
    comp = [pl.col(c).cast(pl.Float64).fill_nan(None) for c in components]
    weighted = comp if weights is None else [c * float(w) for c, w in zip(comp, weights, strict=True)]
    return batch.select(
        pl.col("step").cast(pl.Int64),
        group.alias("group"),
        pl.when(pl.any_horizontal([c.is_not_null() for c in comp]))
        .then(pl.sum_horizontal(weighted)).otherwise(None).alias("reward"),
        pl.col("advantage").cast(pl.Float64).alias("adv"),
        *[c.alias(name) for c, name in zip(comp, components, strict=True)],
    )


def read(path: Path, *, rollout_n: int | None = None) -> RawLog:
    """Read one ``completions_*.parquet`` or a folder of them; see the module docstring.

    ``rollout_n`` (``num_generations``, a positive int) groups rows in consecutive blocks of that
    size. Returns per-step canonical metrics (``reward_mean``, ``zero_variance_group_frac``,
    ``adv_std``, ``reward/<function>``, ...) from :func:`advcore.ingest._reduce.reduce`; metadata records the
    files read, the reward functions summed, the grouping and the dropped duplicate batches.
    Unreadable files, missing columns and batches ``rollout_n`` does not divide are reported in
    ``RawLog.errors``. Raises :class:`AdvcoreError` for a ``rollout_n`` that is not a positive int.
    """
    path = Path(path)
    empty = pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)})
    if rollout_n is not None and (isinstance(rollout_n, bool) or not isinstance(rollout_n, int) or rollout_n < 1):
        raise AdvcoreError(f"rollout_n must be a positive int (num_generations), got {rollout_n!r}")
    files = _files(path)
    if not files:
        message = "no completions_<step>.parquet files in the folder"
        return RawLog(NAME, empty, errors=(IngestError(str(path), message),))
    errors: list[IngestError] = []
    batches: list[pl.DataFrame] = []
    for f in files:
        try:
            batch = pl.read_parquet(f)
        except (OSError, pl.exceptions.PolarsError) as e:
            errors.append(IngestError(str(f), f"could not be read as Parquet ({type(e).__name__})"))
            continue
        missing = [c for c in _REQUIRED if c not in batch.columns]
        if missing:
            errors.append(IngestError(str(f), f"not a TRL completions table: missing column(s) {', '.join(missing)}"))
            continue
        if batch.height:
            batches.append(batch)
    if not batches:
        if not errors:
            errors.append(IngestError(str(path), "no samples"))
        return RawLog(NAME, empty, errors=tuple(errors))

    components = reward_components(batches[0], _reward_names(files[0].parent))
    if not components:
        errors.append(IngestError(str(path), "no reward-function columns (numeric columns besides step, advantage)"))
        return RawLog(NAME, empty, errors=tuple(errors))

    kept: list[pl.DataFrame] = []
    duplicates: list[int] = []
    for batch in batches:
        if any(c not in batch.columns for c in components):
            errors.append(IngestError(str(path), f"step {batch['step'][0]}: reward columns differ from the first file"))
            continue
        if kept and same_batch(kept[-1], batch, components):
            duplicates.append(int(batch["step"][0]))
            continue
        kept.append(batch)

    if rollout_n is None:
        lengths = [n for b in kept for n in _runs(b["prompt"].hash())]
        size = math.gcd(*lengths)
        grouping = f"runs of identical consecutive prompts, cut into blocks of {size} (gcd of the run lengths)"
    else:
        size = rollout_n
        grouping = f"consecutive blocks of rollout_n={rollout_n}"
    frames: list[pl.DataFrame] = []
    for batch in kept:
        step = int(batch["step"][0])
        if batch.height % size:
            errors.append(IngestError(str(path), f"step {step}: {batch.height} rows are not a whole number of "
                                                 f"groups of {size} (rollout_n); no group statistics"))
        frames.append(samples_of(batch, components, size))
    long = pl.concat(frames, how="vertical")
    meta: dict[str, Any] = {
        "files": len(files),
        "reward_components": components,
        "reward": "sum of the reward-function columns (TRL's default reward_weights, all 1)",
        "groups": grouping,
        "duplicate_batches": len(duplicates),
        "duplicate_steps": duplicates,
    }
    return reduce(long, layout="trl_completions", reward_col="reward", group_col="group", extra=components,
                  trainer="trl", errors=errors, format=NAME, metadata=meta)


FORMAT = Format(NAME, sniff, read, reads_folders=True, takes_rollout_n=True, per_sample=True)
