"""Per-sample input reduced to per-step canonical metrics with the statistics core.

Two layouts are read:

* the canonical long format of SPEC section 4 (Parquet or JSONL): ``step``, ``group``,
  ``reward`` and any of ``adv``, ``adv_raw``, ``adv_clipped``, ``value``, ``return``, ...;
* verl's rollout dump (``trainer.rollout_data_dir``, one ``<step>.jsonl`` per step):
  ``input``, ``output``, ``score``, ``step`` and one field per reward component. The group of a
  sample is its prompt (identical ``input`` text). When every ``input`` of a step is identical
  (a VLM whose image is not in the text), the prompt says nothing and the groups are taken as
  consecutive blocks of the rollout ``n`` (verl repeats each prompt ``n`` times, interleaved);
  ``n`` must then be given (``read(path, rollout_n=64)``), otherwise the group statistics are
  left null and ``metadata["groups"]`` says why (so does ``metadata["ungrouped"]``, which the scan
  report shows).

Per step: ``reward_mean``, ``reward_std`` (whole batch, ddof 0), ``reward_min``, ``reward_max``,
``reward_std_within`` (mean of the per-group std, ddof 1 as TRL's ``reward_std`` up to 0.26;
singleton groups skipped), ``zero_variance_group_frac`` (groups tied up to float rounding, as
TRL's ``frac_reward_zero_std``), ``reward_within_var_frac`` (within-group share of the reward
variance), ``adv_mean``/``adv_std``/``adv_min``/``adv_max``/``adv_zero_frac`` when ``adv`` is
present, ``spearman_adv_reward`` (global and ``_within`` groups), ``reward_null_frac``, and
``reward/<name>`` means of other numeric per-sample columns. Missing rewards are null and left out
of the statistics (counted in ``metadata["null_rewards"]``), never 0. The metrics come from the
stage trace and the reference checks (:func:`advcore.trace.step_row`), the same code path as
:class:`advcore.Monitor`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from advcore.trace import rows_frame, step_row
from advcore.ingest._parse import is_parquet, loads, read_jsonl
from advcore.model import IngestError, RawLog

#: ``read`` takes ``rollout_n`` (samples per prompt, for groups the prompts cannot tell apart).
TAKES_ROLLOUT_N = True
NAME = "samples"

_CANONICAL_SAMPLE_COLS = {"step", "group", "slice", "reward", "adv", "adv_raw", "adv_clipped", "value", "return",
                          "mask", "logprob", "old_logprob", "ref_logprob"}
_VERL_DUMP = {"input", "output", "score", "step"}


def _first_object(head: str) -> dict[str, Any] | None:
    for line in head.splitlines():
        if not line.strip():
            continue
        obj, reason = loads(line)
        return obj if not reason and isinstance(obj, dict) else None
    return None


def _is_long(columns: set[str]) -> bool:
    return {"step", "group", "reward"} <= columns


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        if not is_parquet(path):  # by content: any file name
            return False
        try:
            return _is_long(set(pl.read_parquet_schema(path)))
        except Exception:
            return False
    obj = _first_object(head)
    if obj is None:
        return False
    keys = set(obj)
    return _is_long(keys) or _VERL_DUMP <= keys


def _load(path: Path) -> tuple[pl.DataFrame, list[IngestError]]:
    if path.suffix.lower() == ".parquet":
        return pl.read_parquet(path), []
    rows, errors = read_jsonl(path, "per-sample JSONL (expected one sample object per line)", flat=False)
    if not rows:
        return pl.DataFrame(), errors
    return pl.DataFrame(rows, infer_schema_length=None), errors


def _numeric(frame: pl.DataFrame, col: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    return frame[col].cast(pl.Float64, strict=False).to_numpy().astype(np.float64, copy=False)


def _group_codes(part: pl.DataFrame, group_col: str | None, rollout_n: int | None) -> np.ndarray[Any, Any] | None:
    if group_col is not None:
        g = part[group_col].cast(pl.String)
        if g.null_count():
            return None
        if group_col == "input" and g.n_unique() == 1 and part.height > 1:
            if rollout_n and part.height % rollout_n == 0:
                return np.arange(part.height, dtype=np.int64) // rollout_n
            return None
        return (g.rank("dense").cast(pl.Int64) - 1).to_numpy()
    return None


#: Per-sample columns of the long format traced as stages, and the keyword of each.
_STAGE_COLS = {"value": "baseline", "return": "returns", "adv_raw": "adv_raw", "adv": "adv",
               "adv_clipped": "adv_clipped"}


def _step_metrics(part: pl.DataFrame, reward_col: str, group_col: str | None, rollout_n: int | None,
                  extra: list[str]) -> tuple[dict[str, float | None], pl.DataFrame]:
    """The canonical metrics of one step (:func:`advcore.trace.step_row`: the stage trace of its
    samples and the reference checks) plus the means of the reward components, and the trace.
    Columns named ``slice`` or ``slice_<label>`` slice the trace."""
    step = int(part["step"][0])
    stages: dict[str, Any] = {kw: _numeric(part, col) for col, kw in _STAGE_COLS.items() if col in part.columns}
    slices = {c.removeprefix("slice_"): part[c] for c in part.columns if c == "slice" or c.startswith("slice_")}
    codes = _group_codes(part, group_col, rollout_n)
    trace, row = step_row(step, rewards=_numeric(part, reward_col), group_ids=codes, slices=slices or None, **stages)
    out: dict[str, float | None] = dict(row)
    for col in extra:
        x = _numeric(part, col)
        x = x[~np.isnan(x)]
        out[f"reward/{col}"] = float(x.mean()) if x.size else None
    return out, trace


def read(path: Path, *, rollout_n: int | None = None) -> RawLog:
    path = Path(path)
    frame, errors = _load(path)
    empty = pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)})
    if frame.is_empty():
        if not errors:
            errors.append(IngestError(str(path), "no samples"))
        return RawLog(NAME, empty, errors=tuple(errors))
    columns = set(frame.columns)
    if _is_long(columns):
        layout, reward_col, group_col = "long", "reward", "group"
        extra: list[str] = []
        trainer: str | None = None
    elif _VERL_DUMP <= columns:
        layout, reward_col, group_col = "verl_rollout_dump", "score", "input"
        skip = _VERL_DUMP | {"gts", "request_id", "uid", "data_source"}
        extra = [c for c in frame.columns if c not in skip and frame[c].dtype.is_numeric()]
        trainer = "verl"
    else:
        errors.append(IngestError(str(path), "expected per-sample columns step, group, reward "
                                             "(or a verl rollout dump: input, output, score, step)"))
        return RawLog(NAME, empty, errors=tuple(errors))
    return reduce(frame, layout=layout, reward_col=reward_col, group_col=group_col, extra=extra, trainer=trainer,
                  rollout_n=rollout_n, errors=errors)


def reduce(frame: pl.DataFrame, *, layout: str, reward_col: str, group_col: str | None, extra: list[str],
           trainer: str | None, rollout_n: int | None = None, errors: list[IngestError] | None = None,
           format: str = NAME, metadata: dict[str, Any] | None = None) -> RawLog:
    """Reduce a long per-sample frame to the per-step metrics listed in the module docstring.

    ``frame`` has one row per sample: an integer-like ``step`` column (rows without one are
    dropped and counted in ``metadata["samples_without_step"]``), the numeric ``reward_col``
    (null = missing, left out of the statistics), the prompt/group key ``group_col`` (None: no
    group statistics) and the numeric ``extra`` columns (reduced to ``reward/<name>`` means).
    ``layout`` is recorded in ``metadata["layout"]``; ``"verl_rollout_dump"`` groups identical
    ``input`` texts in blocks of ``rollout_n``. ``errors`` (the loader's) and ``metadata`` (merged
    over the computed one) are passed through; ``format`` names the result. Returns a
    :class:`RawLog` with one row per step, in order of first appearance.
    """
    errors = list(errors or [])
    frame = frame.with_columns(pl.col("step").cast(pl.Int64, strict=False))
    null_steps = frame["step"].null_count()
    frame = frame.filter(pl.col("step").is_not_null())
    rows: list[dict[str, Any]] = []
    traces: list[pl.DataFrame] = []
    group_notes: set[str] = set()
    for part in frame.partition_by("step", maintain_order=True):
        step = int(part["step"][0])
        metrics, trace = _step_metrics(part, reward_col, group_col, rollout_n, extra)
        traces.append(trace)
        row: dict[str, Any] = {"step": step, **metrics}
        if "zero_variance_group_frac" not in row:
            if layout == "verl_rollout_dump" and part["input"].n_unique() == 1:
                if rollout_n and part.height % rollout_n:
                    group_notes.add(f"rollout_n={rollout_n} does not divide the {part.height} samples of step {step}: "
                                    "no groups formed there")
                else:
                    group_notes.add("every input of a step is identical; pass rollout_n (advcore scan --rollout-n N) "
                                    "to group consecutive blocks of N samples")
            else:
                group_notes.add("group ids missing")
        rows.append(row)
    out = rows_frame(rows)
    meta: dict[str, Any] = {"layout": layout, "samples": frame.height,
                            "null_rewards": int(frame[reward_col].cast(pl.Float64, strict=False).is_null().sum())}
    if layout == "verl_rollout_dump":
        blocks = frame["input"].n_unique() == 1 and frame.height > 1
        meta["groups"] = f"consecutive blocks of rollout_n={rollout_n}" if blocks else "identical input text"
        meta["reward_components"] = extra
    if group_notes:  # why a step has no group statistics (the scan report shows it)
        meta["groups"] = meta["ungrouped"] = "; ".join(sorted(group_notes))
    if null_steps:
        meta["samples_without_step"] = null_steps
    meta.update(metadata or {})
    return RawLog(format, out, trainer=trainer, metadata=meta, errors=tuple(errors),
                  trace=pl.concat(traces) if traces else None)
