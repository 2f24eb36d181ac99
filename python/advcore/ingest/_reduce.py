"""Per-sample data reduced per step by the statistics core: the one path every per-sample format
(the canonical long format, verl rollout dumps, TRL completion tables, NeMo-RL dumps, DAPO-VLM
Markdown dumps) takes, and the same code as :class:`advcore.Monitor` (:func:`advcore.trace.step_row`).

Per step: ``reward_mean``, ``reward_std`` (whole batch, ddof 0), ``reward_min``, ``reward_max``,
``reward_std_within`` (mean of the per-group std, ddof 1 as TRL's ``reward_std`` up to 0.26;
singleton groups skipped), ``zero_variance_group_frac`` (groups tied up to float rounding, as
TRL's ``frac_reward_zero_std``), ``reward_within_var_frac`` (within-group share of the reward
variance), ``adv_mean``/``adv_std``/``adv_min``/``adv_max``/``adv_zero_frac`` when ``adv`` is
present, ``spearman_adv_reward`` (global and ``_within`` groups), ``reward_null_frac``, and
``reward/<name>`` means of other numeric per-sample columns. Missing rewards are null and left out
of the statistics (counted in ``metadata["null_rewards"]``), never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from advcore.model import IngestError, RawLog
from advcore.trace import rows_frame, step_row

__all__ = ["BATCH_ROWS", "PART_COLUMN", "parquet_batches", "reduce"]


def _numeric(frame: pl.DataFrame, col: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    return frame[col].cast(pl.Float64, strict=False).to_numpy().astype(np.float64, copy=False)


def _group_codes(part: pl.DataFrame, group_col: str | None, rollout_n: int | None,
                 prompt_key: bool) -> np.ndarray[Any, Any] | None:
    if group_col is not None:
        raw = part[group_col]
        if raw.dtype.is_integer() and not prompt_key:  # ids as they are: the core groups any int64 ids
            return None if raw.null_count() else raw.cast(pl.Int64).to_numpy()
        g = raw.cast(pl.String)
        if g.null_count():
            return None
        if prompt_key and g.n_unique() == 1 and part.height > 1:  # one prompt text for the step: blocks of rollout_n
            if rollout_n and part.height % rollout_n == 0:
                return np.arange(part.height, dtype=np.int64) // rollout_n
            return None
        return (g.rank("dense").cast(pl.Int64) - 1).to_numpy()
    return None


#: Per-sample columns of the long format traced as stages, and the keyword of each.
_STAGE_COLS = {"value": "baseline", "return": "returns", "adv_raw": "adv_raw", "adv": "adv",
               "adv_clipped": "adv_clipped"}


def _step_metrics(part: pl.DataFrame, reward_col: str, group_col: str | None, rollout_n: int | None,
                  extra: list[str], prompt_key: bool) -> tuple[dict[str, float | None], pl.DataFrame]:
    """The canonical metrics of one step (:func:`advcore.trace.step_row`: the stage trace of its
    samples and the reference checks) plus the means of the reward components, and the trace.
    Columns named ``slice`` or ``slice_<label>`` slice the trace."""
    step = int(part["step"][0])
    stages: dict[str, Any] = {kw: _numeric(part, col) for col, kw in _STAGE_COLS.items() if col in part.columns}
    slices = {c.removeprefix("slice_"): part[c] for c in part.columns if c == "slice" or c.startswith("slice_")}
    codes = _group_codes(part, group_col, rollout_n, prompt_key)
    trace, row = step_row(step, rewards=_numeric(part, reward_col), group_ids=codes, slices=slices or None, **stages)
    out: dict[str, float | None] = dict(row)
    for col in extra:
        x = _numeric(part, col)
        x = x[~np.isnan(x)]
        out[f"reward/{col}"] = float(x.mean()) if x.size else None
    return out, trace


def reduce(frames: pl.DataFrame | Iterable[pl.DataFrame], *, format: str, reward_col: str, group_col: str | None,
           extra: list[str], trainer: str | None, layout: str | None = None, rollout_n: int | None = None,
           prompt_key: bool = False, errors: list[IngestError] | None = None,
           metadata: dict[str, Any] | None = None) -> RawLog:
    """Reduce a long per-sample frame to the per-step metrics listed in the module docstring.

    ``frames`` is one frame, or batches of one (each holding whole steps: a step is never split
    between two batches), with one row per sample: an integer-like ``step`` column (rows without one
    are dropped and counted in ``metadata["samples_without_step"]``), the numeric ``reward_col``
    (null = missing, left out of the statistics), the prompt/group key ``group_col`` (None: no
    group statistics) and the numeric ``extra`` columns (reduced to ``reward/<name>`` means). With
    ``prompt_key`` the group key is the prompt text: when every sample of a step has the same one (a
    VLM whose image is not in the text), it cannot tell the groups apart, and the groups are
    consecutive blocks of ``rollout_n``, or there are none and ``metadata["ungrouped"]`` says why.
    ``layout`` (default ``format``) is recorded in ``metadata["layout"]``; ``errors`` (the reader's)
    and ``metadata`` (merged over the computed one, except where a step has no groups: then
    ``groups`` says why) are passed through; ``format`` names the result. Returns a :class:`RawLog`
    with one row per step, in order of first appearance, and the stage trace of every step.
    """
    errors = list(errors or [])
    rows: list[dict[str, Any]] = []
    traces: list[pl.DataFrame] = []
    group_notes: set[str] = set()
    samples = null_steps = null_rewards = 0
    for frame in [frames] if isinstance(frames, pl.DataFrame) else frames:
        frame = frame.with_columns(pl.col("step").cast(pl.Int64, strict=False))
        null_steps += frame["step"].null_count()
        frame = frame.filter(pl.col("step").is_not_null())
        samples += frame.height
        null_rewards += int(frame[reward_col].cast(pl.Float64, strict=False).is_null().sum())
        for part in frame.partition_by("step", maintain_order=True):
            step = int(part["step"][0])
            metrics, trace = _step_metrics(part, reward_col, group_col, rollout_n, extra, prompt_key)
            traces.append(trace)
            row: dict[str, Any] = {"step": step, **metrics}
            if "zero_variance_group_frac" not in row:
                group_notes.add(_why_no_groups(part, step, group_col, rollout_n, prompt_key))
            rows.append(row)
    out = rows_frame(rows)
    meta: dict[str, Any] = {"layout": layout or format, "samples": samples, "null_rewards": null_rewards}
    meta.update(metadata or {})
    if group_notes:  # why a step has no group statistics (the scan report shows it)
        meta["groups"] = meta["ungrouped"] = "; ".join(sorted(group_notes))
    if null_steps:
        meta["samples_without_step"] = null_steps
    return RawLog(format, out, trainer=trainer, metadata=meta, errors=tuple(errors),
                  trace=pl.concat(traces) if traces else None)


def _why_no_groups(part: pl.DataFrame, step: int, group_col: str | None, rollout_n: int | None,
                   prompt_key: bool) -> str:
    """Why a step's samples formed no groups."""
    if prompt_key and group_col is not None and part.height > 1 and part[group_col].n_unique() == 1:
        if rollout_n and part.height % rollout_n:
            return f"rollout_n={rollout_n} does not divide the {part.height} samples of step {step}: no groups formed there"
        return (f"every {group_col} of a step is identical; pass rollout_n (advcore scan --rollout-n N) to group "
                "consecutive blocks of N samples")
    return "group ids missing"


#: Rows of a per-sample Parquet file read at a time (whole steps each; about 200 MB for six columns).
BATCH_ROWS = 1 << 22


#: The column of :func:`parquet_batches`' rows that names the part file a row of a dataset came from.
PART_COLUMN = "__part"


def parquet_batches(path: Path | Sequence[Path]) -> Iterator[pl.DataFrame]:
    """A per-sample Parquet file, or the part files of one dataset read as one table (of any size: it is
    never read whole), in batches of whole steps, each of at most :data:`BATCH_ROWS` rows unless one step
    alone holds more, in order of the steps' first appearance (parts in the order given); the rows
    without a step come last. A column that some parts lack is null in their rows, and each row of
    parts carries the path of its part in :data:`PART_COLUMN`. Polars' streaming engine counts the
    steps, and each batch is read with the steps as a filter (row groups whose statistics exclude them
    are skipped)."""
    if isinstance(path, Path):
        lazy = pl.scan_parquet(path)
    else:  # the parts' columns united, in the order first met
        schema: dict[str, pl.DataType] = {}
        for part in path:
            for name, dtype in pl.read_parquet_schema(part).items():
                schema.setdefault(name, dtype)
        lazy = pl.scan_parquet(list(path), schema=schema, missing_columns="insert", include_file_paths=PART_COLUMN)
    lazy = lazy.with_columns(pl.col("step").cast(pl.Int64, strict=False))
    steps = (lazy.select("step").with_row_index("__row").group_by("step")
             .agg(pl.col("__row").min().alias("first"), pl.len().alias("rows"))
             .sort("first").collect(engine="streaming"))
    batch: list[int] = []
    size = 0
    for step, rows in steps.filter(pl.col("step").is_not_null()).select("step", "rows").iter_rows():
        if batch and size + rows > BATCH_ROWS:
            yield lazy.filter(pl.col("step").is_in(batch)).collect(engine="streaming")
            batch, size = [], 0
        batch.append(step)
        size += rows
    if batch:
        yield lazy.filter(pl.col("step").is_in(batch)).collect(engine="streaming")
    if steps["step"].null_count():
        yield lazy.filter(pl.col("step").is_null()).collect(engine="streaming")
