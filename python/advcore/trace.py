"""The per-sample stage trace: where one training step's learning signal is, stage by stage.

One step's per-sample arrays (the reward R, the baseline / value, the return and the raw,
normalised and clipped advantage A/T, optionally token-level advantages) go through one call
into the Rust core (``advcore_stats::trace``), which computes for every stage and every slice
of the batch the statistics listed in :data:`STATISTICS`. The result is a Polars DataFrame in
long form, one row per (step, stage, slice, statistic), that appends across steps and writes
to Parquet. :func:`canonical_row` derives the per-step canonical metrics of SPEC section 4 from
it; :class:`Recording` keeps the rows of every step in bounded memory, for :class:`advcore.Monitor`, which runs
the detectors online.

Sources: the stage model is seed 002 (R -> A -> T -> U); the group statistics mirror TRL's
``GRPOTrainer`` (``reward_std`` = mean within-group std with ddof 1 up to TRL 0.26,
``frac_reward_zero_std`` = tied groups) and verl's GRPO advantage
(``compute_grpo_outcome_advantage`` in ``verl/trainer/ppo/core_algos.py``), where the sequence
advantage is broadcast over the response tokens.
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
import reprlib
import shutil
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt
import polars as pl

from advcore import _core
from advcore._arrays import as_ids, as_values
from advcore._escape import excerpt, printable
from advcore.errors import AdvcoreError
from advcore.reference import dtype_rtol, input_precision

if TYPE_CHECKING:
    from advcore.model import Run

__all__ = ["STAGES", "STATISTICS", "TOKEN_STATISTICS", "Recording", "canonical_row", "rows_frame", "slice_frame",
           "step_row", "trace_step"]

#: Per-sample stages in pipeline order (R -> A -> T), keyword -> stage name.
STAGES: dict[str, str] = {
    "rewards": "reward",
    "baseline": "baseline",
    "returns": "return",
    "adv_raw": "adv_raw",
    "adv": "adv",
    "adv_clipped": "adv_clipped",
}

#: Statistics of every per-sample stage and slice (see ``advcore_stats::trace::STAT_NAMES``).
#: Moments (``std`` with ddof 0), quantiles (numpy ``"linear"``), ``mad`` (scipy
#: ``median_abs_deviation``, scale 1) and ranks omit NaN; ``nan_count`` counts it. Fractions of
#: values are over the finite values. ``spearman_reward_within`` is the mean Spearman over the
#: ``n_groups_spearman`` groups where both sides vary; ``zero_variance_group_frac`` is the share
#: of groups (of >= 2 values) whose spread is within ``atol + rtol * max|x|``; ``std_within`` the
#: mean per-group std (ddof 1, singletons skipped); ``within_var_frac`` the within-group share of
#: the variance. ``changed_frac``, ``mean_abs_change``, ``max_abs_change`` compare with the previous
#: stage in :data:`STAGES` order (NaN for the first stage).
STATISTICS: tuple[str, ...] = tuple(
    _core.trace([np.zeros(1)], np.zeros(1), None, None, [], [], 1e-8, 1e-8, 1e-5, 0.0)[0]
)

#: Statistics of the token stage ``adv_token``.
TOKEN_STATISTICS: tuple[str, ...] = (
    "n",
    "n_tokens",
    "token_nonzero_frac",
    "alloc_n",
    "alloc_mean",
    "alloc_std",
    "alloc_min",
    "alloc_max",
    "alloc_q50",
    "spearman_abs_adv_length",
)

#: numpy's ``isclose`` defaults, as the census and grouped kernels use them.
NEAR_ZERO_ATOL = 1e-8
GROUP_ATOL = 1e-8
GROUP_RTOL = 1e-5

_SCHEMA = {"step": pl.Int64, "stage": pl.String, "slice": pl.String, "statistic": pl.String, "value": pl.Float64}


def _codes(x: Any, name: str, n: int) -> tuple[npt.NDArray[np.int64], list[str]]:
    """Dense codes 0..k-1 (ascending label order) and the labels of any per-sample labels
    (strings, ints, bools); nulls become the label ``"null"``."""
    if isinstance(x, np.ndarray) and x.dtype.kind in "iu" and x.ndim == 1:
        uniq, inverse = np.unique(x, return_inverse=True)
        codes, labels = inverse.astype(np.int64), [str(v) for v in uniq.tolist()]
    else:
        try:
            data = x if hasattr(x, "__len__") else list(x)
            s = x if isinstance(x, pl.Series) else pl.Series(name, data, strict=False)
        except (TypeError, ValueError) as e:
            raise AdvcoreError(f"`{name}` could not be read as per-sample labels: {e}") from e
        if s.dtype.is_nested():
            raise AdvcoreError(f"`{name}` must hold one label per sample, got {s.dtype}")
        s = s.cast(pl.String).fill_null("null")
        codes = (s.rank("dense").cast(pl.Int64) - 1).to_numpy()
        labels = s.unique().sort().to_list()
    if codes.shape[0] != n:
        raise AdvcoreError(f"`{name}` has length {codes.shape[0]} but `rewards` has length {n}")
    return np.ascontiguousarray(codes), labels


def _group_ids(group_ids: Any, n: int) -> npt.NDArray[np.int64]:
    """Integer ids as given (int64); anything else (verl's string uids) as dense codes."""
    if isinstance(group_ids, np.ndarray) and group_ids.dtype.kind in "iu":
        ids = as_ids(group_ids, "group_ids")
    elif isinstance(group_ids, pl.Series) and group_ids.dtype.is_integer() and not group_ids.null_count():
        ids = as_ids(group_ids.to_numpy(), "group_ids")
    else:
        if isinstance(group_ids, pl.Series) and group_ids.null_count():
            raise AdvcoreError("`group_ids` holds nulls; every sample needs a group")
        if isinstance(group_ids, (list, tuple)) and any(g is None for g in group_ids):
            raise AdvcoreError("`group_ids` holds nulls; every sample needs a group")
        ids = _codes(group_ids, "group_ids", n)[0]
    if ids.shape[0] != n:
        raise AdvcoreError(f"`group_ids` has length {ids.shape[0]} but `rewards` has length {n}")
    return ids


@functools.lru_cache(maxsize=64)
def _key_columns(stages: tuple[str, ...], slices: tuple[str, ...], names: tuple[str, ...]) -> pl.DataFrame:
    """The ``stage``, ``slice`` and ``statistic`` columns of a table shape (the same every step)."""
    k, s, m = len(stages), len(slices), len(names)
    return pl.DataFrame([
        pl.Series("stage", np.repeat(np.array(stages, dtype=object), s * m), dtype=pl.String),
        pl.Series("slice", np.tile(np.repeat(np.array(slices, dtype=object), m), k), dtype=pl.String),
        pl.Series("statistic", np.tile(np.array(names, dtype=object), k * s), dtype=pl.String),
    ])


class _Table(NamedTuple):
    """One step's ``(stage, slice, statistic)`` table before it becomes long rows: tables are
    turned into frames in bulk (:func:`_long`), not one Polars frame per step."""

    step: int
    stages: tuple[str, ...]
    slices: tuple[str, ...]
    names: tuple[str, ...]
    #: the values in row order (stage, then slice, then statistic), float64, of any shape (read flat)
    values: npt.NDArray[np.float64]


def _long(tables: Sequence[_Table]) -> pl.DataFrame:
    """The long frame of ``tables`` in their order: per run of tables of one shape, the cached key
    columns repeated, the steps and the values beside them."""
    frames = []
    for shape, run in itertools.groupby(tables, key=lambda t: (t.stages, t.slices, t.names)):
        same = list(run)
        keys = _key_columns(*shape)
        if len(same) > 1:
            keys = pl.concat([keys] * len(same), rechunk=True)
        values = np.concatenate([t.values.reshape(-1) for t in same])
        steps = np.repeat(np.array([t.step for t in same], dtype=np.int64), values.size // len(same))
        frames.append(keys.hstack([pl.Series("value", values, dtype=pl.Float64)])
                      .insert_column(0, pl.Series("step", steps, dtype=pl.Int64)))
    if not frames:
        return pl.DataFrame(schema=_SCHEMA)
    return frames[0] if len(frames) == 1 else pl.concat(frames)


def _token_cells(
    token_adv: Any,
    response_mask: Any,
    token_sample_index: Any,
    seq_adv: npt.NDArray[np.float64] | None,
    n: int,
    members: list[npt.NDArray[np.bool_] | None],
) -> npt.NDArray[np.float64]:
    """The ``adv_token`` statistics of every slice (``members[i]`` None for the whole batch)."""
    if token_sample_index is None:
        tok = np.asarray(token_adv, dtype=np.float64)
        if tok.ndim != 2 or tok.shape[0] != n:
            raise AdvcoreError(f"`token_adv` must have shape (n_samples, n_tokens) = ({n}, T), got {tok.shape}")
        if response_mask is None:
            mask = np.ones(tok.shape, dtype=bool)
        else:
            mask = np.asarray(response_mask).astype(bool)
            if mask.shape != tok.shape:
                raise AdvcoreError(f"`response_mask` has shape {mask.shape} but `token_adv` has shape {tok.shape}")
        kept = np.where(mask, tok, 0.0)
        length = mask.sum(axis=1).astype(np.float64)
        total = kept.sum(axis=1)
        abs_total = np.abs(kept).sum(axis=1)
        nonzero = (mask & (tok != 0) & ~np.isnan(tok)).sum(axis=1).astype(np.float64)
    else:
        tok = as_values(token_adv, "token_adv").astype(np.float64)
        idx = as_ids(token_sample_index, "token_sample_index")
        if idx.shape != tok.shape:
            raise AdvcoreError(
                f"`token_sample_index` has length {idx.shape[0]} but `token_adv` has length {tok.shape[0]}"
            )
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise AdvcoreError(f"`token_sample_index` must index samples 0..{n - 1}")
        length = np.bincount(idx, minlength=n).astype(np.float64)
        total = np.bincount(idx, weights=tok, minlength=n)
        abs_total = np.bincount(idx, weights=np.abs(tok), minlength=n)
        nonzero = np.bincount(idx, weights=((tok != 0) & ~np.isnan(tok)).astype(np.float64), minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_abs = abs_total / length
        if seq_adv is None:
            ratio = np.full(n, np.nan)
        else:
            ratio = np.where(np.abs(seq_adv) > NEAR_ZERO_ATOL, total / seq_adv, np.nan)
    out = np.full((len(members), len(TOKEN_STATISTICS)), np.nan)
    for row, member in enumerate(members):
        sel = np.ones(n, dtype=bool) if member is None else member
        n_tok = float(length[sel].sum())
        r = ratio[sel]
        r = r[np.isfinite(r)]
        cell: dict[str, float] = {
            "n": float(sel.sum()),
            "n_tokens": n_tok,
            "token_nonzero_frac": float(nonzero[sel].sum()) / n_tok if n_tok else np.nan,
            "alloc_n": float(r.size),
        }
        if r.size:
            cell.update(alloc_mean=float(r.mean()), alloc_std=float(r.std()), alloc_min=float(r.min()),
                        alloc_max=float(r.max()), alloc_q50=float(np.median(r)))
        has = sel & (length > 0) & np.isfinite(mean_abs)
        if has.sum() >= 2:
            rho, _, undefined = _core.spearman(mean_abs[has], length[has], "omit")
            cell["spearman_abs_adv_length"] = np.nan if undefined else rho
        for j, name in enumerate(TOKEN_STATISTICS):
            out[row, j] = cell.get(name, np.nan)
    return out


def trace_step(
    step: int,
    *,
    rewards: Any,
    group_ids: Any = None,
    group_size: int | None = None,
    baseline: Any = None,
    returns: Any = None,
    adv_raw: Any = None,
    adv: Any = None,
    adv_clipped: Any = None,
    token_adv: Any = None,
    response_mask: Any = None,
    token_sample_index: Any = None,
    slices: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    """Trace one step's per-sample arrays.

    Parameters
    ----------
    step : int
        The training step (the ``step`` column).
    rewards : array-like, shape (N,)
        Sequence rewards; NaN (or a null in a Polars Series) marks a missing reward. numpy,
        Polars Series, torch tensors (any device) and lists are read; float32 stays float32
        when every stage is float32, otherwise everything is traced in float64.
    group_ids : array-like, shape (N,), optional
        The group (prompt) of each sample, for GRPO-style runs: integers, or strings such as
        verl's ``uid`` (mapped to dense codes). Mutually exclusive with ``group_size``.
    group_size : int, optional
        Contiguous groups of this size (sample ``i`` in group ``i // group_size``).
    baseline, returns, adv_raw, adv, adv_clipped : array-like, shape (N,), optional
        The other per-sample stages, traced in this order after ``reward``: the baseline or
        value estimate, the return, the advantage before normalisation, after normalisation
        and after clipping. Stages not given are left out.
    token_adv : array-like, optional
        Token-level advantages: shape (N, T) with ``response_mask`` (N, T) (1 = response
        token; all tokens if omitted), or a flat array of token values with
        ``token_sample_index`` (the sample of each token). Gives stage ``adv_token`` with the
        statistics of :data:`TOKEN_STATISTICS`: ``alloc_*`` describe per sample
        ``sum(token advantages) / sequence advantage`` (the sequence advantage is ``adv``,
        else ``adv_raw``, else ``adv_clipped``; samples with ``|adv| <= 1e-8`` are skipped): the
        response length when the sequence advantage is broadcast to every token (GRPO as TRL
        and verl compute it), 1 when it is split evenly (``adv / length`` per token);
        ``token_nonzero_frac`` is the share of response tokens with a non-zero advantage;
        ``spearman_abs_adv_length`` is Spearman's rho between a sample's mean
        ``|token advantage|`` and its response length (strongly negative: long responses get
        diluted credit per token, as with an even split).
    slices : mapping of str to array-like, optional
        Slice labels, each one label per sample (strings, ints or bools, for example task,
        prompt, environment, length bucket, success). Every value gets its own slice
        ``"<label>=<value>"`` (nulls: ``"<label>=null"``).

    Returns
    -------
    polars.DataFrame
        Long form, columns ``step`` (Int64), ``stage`` (String), ``slice`` (String: ``"all"`` or
        ``"<label>=<value>"``), ``statistic`` (String, see :data:`STATISTICS`), ``value``
        (Float64, NaN where undefined). Row order: stage, then slice, then statistic.

    Raises
    ------
    AdvcoreError
        A stage of another length than ``rewards`` (the message names the stage's keyword),
        unreadable or non-1-D input, both or bad group arguments, slice labels of the wrong
        length, ``token_adv`` of the wrong shape.
    """
    frame, _ = _trace(step, rewards, group_ids, group_size, baseline, returns, adv_raw, adv, adv_clipped, token_adv,
                      response_mask, token_sample_index, slices)
    return frame


Cells = dict[tuple[str, str], float]


def _trace(
    step: int, rewards: Any, group_ids: Any = None, group_size: int | None = None, baseline: Any = None,
    returns: Any = None, adv_raw: Any = None, adv: Any = None, adv_clipped: Any = None, token_adv: Any = None,
    response_mask: Any = None, token_sample_index: Any = None, slices: Mapping[str, Any] | None = None,
    *, threads: int = 0,
) -> tuple[pl.DataFrame, Cells]:
    """:func:`trace_step` and the ``slice == "all"`` values by ``(stage, statistic)`` (no frame lookup);
    ``threads`` for the Rust core (0: up to 2)."""
    tables, cell, _ = _traced(step, rewards, group_ids, group_size, baseline, returns, adv_raw, adv, adv_clipped,
                              token_adv, response_mask, token_sample_index, slices, threads=threads)
    return _long(tables), cell


def _traced(
    step: int, rewards: Any, group_ids: Any = None, group_size: int | None = None, baseline: Any = None,
    returns: Any = None, adv_raw: Any = None, adv: Any = None, adv_clipped: Any = None, token_adv: Any = None,
    response_mask: Any = None, token_sample_index: Any = None, slices: Mapping[str, Any] | None = None,
    *, threads: int = 0, checked: bool = False,
) -> tuple[list[_Table], Cells, dict[str, float] | None]:
    """:func:`_trace` with the step's tables instead of its frame (:func:`_long` makes it), and with
    ``checked`` and groups the reference checks of :func:`advcore.reference.step_checks` (rewards and
    ``adv``, else ``adv_raw``) from the same Rust call (None without groups)."""
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
        raise AdvcoreError(f"`step` must be an integer, got {step!r}")
    if rewards is None:
        raise AdvcoreError("`rewards` is needed: one reward per sample")
    given = {"rewards": rewards, "baseline": baseline, "returns": returns, "adv_raw": adv_raw, "adv": adv,
             "adv_clipped": adv_clipped}
    arrays = {kw: as_values(v, kw) for kw, v in given.items() if v is not None}
    n = arrays["rewards"].shape[0]
    if n == 0:
        raise AdvcoreError("`rewards` is empty; at least one sample is needed")
    for kw, a in arrays.items():
        if a.shape[0] != n:
            raise AdvcoreError(f"`{kw}` has length {a.shape[0]} but `rewards` has length {n}")
    stage_arrays: list[npt.NDArray[np.float32] | npt.NDArray[np.float64]]
    if all(a.dtype == np.float32 for a in arrays.values()):
        stage_arrays = [np.ascontiguousarray(a, dtype=np.float32) for a in arrays.values()]
    else:
        stage_arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in arrays.values()]
    stage_names = [STAGES[kw] for kw in arrays]
    size: int | None = None
    ids: npt.NDArray[np.int64] | None = None
    if group_ids is not None and group_size is not None:
        raise AdvcoreError("give at most one of `group_ids` and `group_size`")
    if group_ids is not None:
        ids = _group_ids(group_ids, n)
    elif group_size is not None:
        if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 1:
            raise AdvcoreError(f"`group_size` must be a positive integer, got {group_size!r}")
        if n % group_size:
            raise AdvcoreError(f"`group_size`={group_size} does not divide the {n} samples of `rewards`")
        size = int(group_size)
    slice_names = ["all"]
    codes: list[npt.NDArray[np.uint32]] = []
    counts: list[int] = []
    for label, values in (slices or {}).items():
        c, labels = _codes(values, f"slices[{label!r}]", n)
        codes.append(c.astype(np.uint32))
        counts.append(len(labels))
        slice_names.extend(f"{label}={v}" for v in labels)
    checks: dict[str, float] | None = None
    if checked and (size is not None or ids is not None):
        if ids is not None and _float_ids(group_ids):
            raise AdvcoreError("`group_ids` must be integers or strings, got floats")
        checked_kw = "adv" if "adv" in arrays else "adv_raw" if "adv_raw" in arrays else None
        adv_stage = None if checked_kw is None else list(arrays).index(checked_kw)
        adv_in = given.get(checked_kw) if checked_kw else None
        adv_rtol = dtype_rtol(input_precision(adv_in))
        names, table, checks = _core.trace_checked(
            stage_arrays, stage_arrays[0], size, ids, codes, counts, NEAR_ZERO_ATOL, GROUP_ATOL, GROUP_RTOL, 0.0,
            adv_stage, None, input_precision(rewards), adv_rtol, threads)
    else:
        names, table = _core.trace(stage_arrays, stage_arrays[0], size, ids, codes, counts,
                                   NEAR_ZERO_ATOL, GROUP_ATOL, GROUP_RTOL, 0.0, threads)
    tables = [_Table(int(step), tuple(stage_names), tuple(slice_names), tuple(names), np.asarray(table))]
    whole = np.asarray(table).reshape(len(stage_names), len(slice_names), len(names))[:, 0, :]
    cell = {(st, name): float(v) for st, row in zip(stage_names, whole.tolist(), strict=True)
            for name, v in zip(names, row, strict=True)}
    if token_adv is not None:
        seq = next((arrays[k] for k in ("adv", "adv_raw", "adv_clipped") if k in arrays), None)
        members: list[npt.NDArray[np.bool_] | None] = [None]
        for code, k in zip(codes, counts, strict=True):
            members.extend(code == j for j in range(k))
        cells = _token_cells(token_adv, response_mask, token_sample_index,
                             None if seq is None else seq.astype(np.float64), n, members)
        tables.append(_Table(int(step), ("adv_token",), tuple(slice_names), tuple(TOKEN_STATISTICS), cells))
    return tables, cell, checks


def _float_ids(group_ids: Any) -> bool:
    """True for float group ids, which :func:`advcore.reference.step_checks` refuses (a float id is
    usually a reward or an advantage passed by mistake)."""
    if isinstance(group_ids, np.ndarray):
        return bool(group_ids.dtype.kind == "f")
    if isinstance(group_ids, pl.Series):
        return group_ids.dtype.is_float()
    if isinstance(group_ids, (list, tuple)):
        return np.asarray(group_ids).dtype.kind == "f"
    dtype = getattr(group_ids, "dtype", None)  # a torch tensor
    return dtype is not None and bool(getattr(dtype, "is_floating_point", False))


def canonical_row(frame: pl.DataFrame) -> dict[str, float]:
    """The per-step canonical metrics (SPEC section 4) of one step's trace.

    Reads the ``slice == "all"`` rows of ``frame`` (the output of :func:`trace_step` for one
    step) and returns, where defined (undefined metrics are left out, never 0):
    ``reward_mean``, ``reward_std`` (ddof 0), ``reward_min``, ``reward_max``,
    ``reward_std_within`` (mean per-group std, ddof 1, singletons skipped; TRL's ``reward_std``
    up to 0.26), ``zero_variance_group_frac`` (tied groups, TRL's ``frac_reward_zero_std``),
    ``reward_within_var_frac``, ``n_groups``, ``adv_mean``, ``adv_std``, ``adv_min``, ``adv_max``,
    ``adv_zero_frac`` (``|adv| <= 1e-8`` among finite values), ``spearman_adv_reward``,
    ``spearman_adv_reward_within``, ``reward_null_frac`` (share of NaN/null rewards),
    ``n_samples``, and ``value_mean`` / ``return_mean`` when the step has a ``baseline`` / ``return``
    stage (a learned critic's). This is the single place where per-step metrics are derived from
    samples.

    Raises
    ------
    AdvcoreError
        ``frame`` lacks the trace columns, holds several steps, or has no ``reward`` stage.
    """
    missing = set(_SCHEMA) - set(frame.columns)
    if missing:
        raise AdvcoreError(f"`frame` is not a stage trace: missing columns {sorted(missing)}")
    if frame.height and frame["step"].min() != frame["step"].max():
        raise AdvcoreError("`frame` holds several steps; pass one step's trace")
    rows = frame.filter(pl.col("slice") == "all")
    cell = {(st, name): v for st, name, v in
            zip(rows["stage"].to_list(), rows["statistic"].to_list(), rows["value"].to_list(), strict=True)}
    if ("reward", "n") not in cell:
        raise AdvcoreError("`frame` has no `reward` stage")
    return _canonical(cell)


#: The canonical per-step metrics of a traced step and the (stage, statistic) each is read from.
CANONICAL_STATISTICS: dict[str, tuple[str, str]] = {
    "reward_mean": ("reward", "mean"),
    "reward_std": ("reward", "std"),
    "reward_min": ("reward", "min"),
    "reward_max": ("reward", "max"),
    "reward_std_within": ("reward", "std_within"),
    "zero_variance_group_frac": ("reward", "zero_variance_group_frac"),
    "reward_within_var_frac": ("reward", "within_var_frac"),
    "n_groups": ("reward", "n_groups"),
    "adv_mean": ("adv", "mean"),
    "adv_std": ("adv", "std"),
    "adv_min": ("adv", "min"),
    "adv_max": ("adv", "max"),
    "adv_zero_frac": ("adv", "near_zero_frac"),
    "spearman_adv_reward": ("adv", "spearman_reward"),
    "spearman_adv_reward_within": ("adv", "spearman_reward_within"),
    "n_samples": ("reward", "n"),
    "value_mean": ("baseline", "mean"),
    "return_mean": ("return", "mean"),
}


def _canonical(cell: Cells) -> dict[str, float]:
    """:func:`canonical_row` from the ``slice == "all"`` values by ``(stage, statistic)``."""
    out: dict[str, float] = {}
    for name, key in CANONICAL_STATISTICS.items():
        v = cell.get(key)
        if v is not None and v == v:
            out[name] = float(v)
    n, nan = cell[("reward", "n")], cell.get(("reward", "nan_count"))
    if n and nan is not None and nan == nan:
        out["reward_null_frac"] = float(nan) / float(n)
    return out


#: The per-step metrics of a slice and the (stage, statistic) of the trace each is read from: the
#: canonical metrics of :func:`canonical_row` that the R- and T-stage detectors read, plus the counts
#: that tell whether a slice holds enough samples to be judged.
SLICE_METRICS: dict[str, tuple[str, str]] = {name: CANONICAL_STATISTICS[name] for name in (
    "reward_mean", "reward_std", "reward_min", "reward_max", "reward_std_within", "zero_variance_group_frac",
    "n_groups", "n_samples", "adv_mean", "adv_std", "adv_min", "adv_max", "adv_zero_frac")}


def slice_frame(trace: pl.DataFrame | None) -> pl.DataFrame | None:
    """Per slice and step, the per-step metrics of :data:`SLICE_METRICS`, from a long stage trace.

    Returns a frame with ``slice`` (String, ``"<label>=<value>"``), ``step`` (Int64) and one Float64
    column per metric (null where undefined: a stage the trace lacks, a statistic that is NaN), sorted
    by slice then step; None when the trace has no slice other than ``"all"``. A step where a slice
    has no sample has no row for it.
    """
    if trace is None or trace.is_empty() or "slice" not in trace.columns:
        return None
    wanted = {f"{st}/{stat}": name for name, (st, stat) in SLICE_METRICS.items()}
    part = (trace.filter(pl.col("slice") != "all")
            .with_columns((pl.col("stage") + "/" + pl.col("statistic")).alias("key"))
            .filter(pl.col("key").is_in(list(wanted))))
    if part.is_empty():
        return None
    wide = part.pivot(on="key", index=["slice", "step"], values="value", aggregate_function="first")
    wide = wide.rename({k: v for k, v in wanted.items() if k in wide.columns})
    metrics = [m for m in SLICE_METRICS if m in wide.columns]
    wide = wide.with_columns(pl.col(m).cast(pl.Float64).fill_nan(None) for m in metrics)
    wide = wide.filter(pl.col("n_samples").fill_null(0) > 0) if "n_samples" in wide.columns else wide
    return wide.select("slice", pl.col("step").cast(pl.Int64), *metrics).sort("slice", "step")


#: Below this many samples :func:`step_row` keeps the trace on the calling thread: on an idle core a
#: second thread saves ~0.2 ms of a 16,384-sample step, but inside a trainer it competes with the
#: trainer's own threads for a core, and costs more than it saves once the other core is busy.
STEP_ROW_SERIAL_MAX = 1 << 17


def step_row(step: int, **arrays: Any) -> tuple[pl.DataFrame, dict[str, float]]:
    """One step's trace (:func:`trace_step`, same keywords) and its per-step metrics.

    The metrics are :func:`canonical_row` of the trace plus, when the samples are grouped, the
    reference checks of :func:`advcore.reference.step_checks` on the rewards and the advantages
    (``adv``, else ``adv_raw``): the per-step evidence of the T-stage detectors and of
    REWARD_MISSING. Undefined values are left out; where both define ``reward_null_frac``, the
    trace's (NaN rewards only) is kept. This is what :class:`Recording` and the per-sample ingest
    record for every step.

    The checks are computed by the Rust core in the same call as the trace, from the trace's own
    group summaries (``advcore_stats::checks``; the numpy :func:`advcore.reference.step_checks`
    stays the reference they are tested against), on the calling thread below
    :data:`STEP_ROW_SERIAL_MAX` samples (larger steps split the trace's cells over two threads):
    16,384 GRPO samples (G = 16, reward and advantage) took 0.52-0.75 ms median on a shared 2-core
    AMD EPYC VM at load 4, against 1.45-2.2 ms for the former trace-plus-worker-thread path
    (bench/README.md). Errors are those of :func:`trace_step` first, then those of
    :func:`advcore.reference.step_checks`.
    """
    tables, row = _step_tables(step, **arrays)
    return _long(tables), row


def _step_tables(step: int, **arrays: Any) -> tuple[list[_Table], dict[str, float]]:
    """:func:`step_row` with the step's tables instead of its frame (:class:`Recording` turns the
    tables of many steps into one frame)."""
    try:
        n = len(arrays["rewards"])
    except (KeyError, TypeError):  # no or unsized rewards: _traced raises the right error
        n = 0
    tables, cell, checks = _traced(step, **arrays, checked=True, threads=1 if n < STEP_ROW_SERIAL_MAX else 0)
    row = _canonical(cell)
    if checks is None:
        return tables, row
    return tables, {**{k: v for k, v in checks.items() if not math.isnan(v)}, **row}


def _numbers(metrics: Mapping[str, Any]) -> tuple[dict[str, float], list[str]]:
    """The trainer's ``metrics`` that are numbers (NaN and inf included: NONFINITE reads them), and a
    description of each one that is not (``'kl' is 'abc', not a number``); ``step`` is left out."""
    good: dict[str, float] = {}
    bad: list[str] = []
    for k, v in metrics.items():
        if k == "step":
            continue
        try:
            good[str(k)] = float(v)
        except (TypeError, ValueError, OverflowError):
            bad.append(f"{excerpt(str(k))} is {printable(reprlib.repr(v))} ({type(v).__name__}), not a number")
    return good, bad


class Recording:
    """The rows a watched run keeps of its steps, in bounded memory: the detectors' per-step history
    and the recording that ``advcore scan`` reads back. :class:`advcore.Monitor` owns one and runs
    the detectors on :meth:`run`.

    ``add(step, metrics, **arrays)`` traces the step (:func:`trace_step`, same keywords) and keeps
    its long rows and its per-step metrics (:func:`step_row`):

    * the detectors' history holds at most ``history`` per-step rows: past that, the older half is
      merged pair by pair (each merged row has the first step of its pair and the mean of each
      metric; a NaN stays NaN), so recent steps keep their resolution and old ones are summarised
      ever more coarsely, and a detector pass costs the same at step 100,000 as at step 1,000;
    * the recording (the long trace rows and each step's metrics as rows of stage ``"step"``) is
      written every :data:`SPILL_STEPS` steps to a Parquet part file in a temporary folder when
      ``spill`` is on, and :meth:`write_parquet` streams the parts and the rest into one file; without
      ``spill`` only the last :data:`SPILL_STEPS` steps to :data:`KEEP_STEPS` steps are kept.

    Parameters
    ----------
    history : int, default 1024
        Per-step rows the detectors see at most (at least 64).
    spill : bool, default False
        Write the recording to part files as it grows (see above) instead of keeping only its tail.

    Raises
    ------
    AdvcoreError
        ``history`` below 64.
    """

    def __init__(self, *, history: int = 1024, spill: bool = False) -> None:
        if isinstance(history, bool) or not isinstance(history, int) or history < 64:
            raise AdvcoreError(f"`history` must be an integer of at least 64, got {history!r}")
        self._history = history
        #: the recording's long trace rows and per-step rows (wide) not yet written to a part (or dropped);
        #: the latest steps' trace tables, after ``_parts``, are made long rows when they are read
        self._parts: list[pl.DataFrame] = []
        self._tables: list[_Table] = []
        self._wide: list[pl.DataFrame] = []
        self._part_steps = 0
        self._spill_dir: Path | None = None
        self._spilled: list[Path] = []
        #: write the recording to part files as it grows (may be switched on later: a recording path
        #: that an integration learns at the first step)
        self.spill = spill
        #: per-step rows not yet in the detectors' history
        self._pending: list[dict[str, float]] = []
        self._steps = rows_frame([])
        self._count = 0
        self._last_step: int | None = None
        #: the last ``history`` steps' per-slice metrics (:func:`slice_frame`), when the samples carry slices
        self._slice_rows: collections.deque[pl.DataFrame] = collections.deque(maxlen=history)
        #: the per-sample metrics (:func:`step_row`) of the last step added, without ``metrics``
        self.last_row: dict[str, float] = {}

    @property
    def steps_observed(self) -> int:
        """How many steps were added."""
        return self._count

    @property
    def last_step(self) -> int | None:
        """The last step added (None before the first)."""
        return self._last_step

    def add(self, step: int, metrics: Mapping[str, float] | None = None, **arrays: Any) -> None:
        """Trace and keep one step (keywords of :func:`trace_step`).

        ``metrics`` (canonical name -> value, e.g. the trainer's own ``grad_norm`` or ``entropy``)
        join the step's row where the samples do not define the same metric; with ``metrics``
        the per-sample arrays may be left out (a step the trainer logged without samples).

        Raises
        ------
        AdvcoreError
            A step that does not increase; bad arrays (as :func:`trace_step`); a value of
            ``metrics`` that is not a number: the step is kept once without it, then the error
            names the key and the value.
        """
        if self._last_step is not None and step <= self._last_step:
            raise AdvcoreError(f"`step` must increase: got {step} after {self._last_step} (a new trainer.train() "
                               "restarts its counter: pass a step that keeps counting, or start a new Monitor)")
        given, bad = _numbers(metrics or {})
        if arrays or metrics is None:
            tables, row = _step_tables(step, **arrays)
            self._tables.extend(tables)
            if arrays.get("slices"):
                sliced = slice_frame(_long(tables))
                if sliced is not None:
                    self._slice_rows.append(sliced)
        else:
            if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
                raise AdvcoreError(f"`step` must be an integer, got {step!r}")
            row = {}
        self.last_row = row
        self._pending.append({"step": float(step), **{k: v for k, v in given.items() if k not in row}, **row})
        self._count += 1
        self._last_step = int(step)
        self._part_steps += 1
        if self._part_steps >= SPILL_STEPS:
            self._flush()
            self._spill_or_trim()
        if bad:  # the step is kept without them: said once, after the recording, so it is never recorded twice
            raise AdvcoreError(f"`metrics` of step {step}: {'; '.join(bad)}; the step was recorded without "
                               f"{'it' if len(bad) == 1 else 'them'}")

    def _flush(self) -> None:
        """Move the pending per-step rows into the detectors' history and the recording."""
        if not self._pending:
            return
        fresh = rows_frame(self._pending)
        self._pending = []
        self._wide.append(fresh)
        self._steps = fresh if self._steps.height == 0 else pl.concat([self._steps, fresh], how="diagonal_relaxed")
        while self._steps.height > self._history:
            self._steps = _halve_older(self._steps, self._history)
        if self._steps.n_chunks() > _MAX_CHUNKS:  # every later read of a many-chunk frame pays per chunk
            self._steps = self._steps.rechunk()

    def _unwritten(self) -> pl.DataFrame | None:
        """The recording's rows in memory as one long frame (None when there are none)."""
        self._flush()
        self._long_tables()
        parts = [*self._parts, *([_long_steps(pl.concat(self._wide, how="diagonal_relaxed"))] if self._wide else [])]
        return pl.concat(parts, how="diagonal_relaxed") if parts else None

    def _long_tables(self) -> None:
        """Turn the pending trace tables into long rows at the end of ``_parts``."""
        if self._tables:
            self._parts.append(_long(self._tables))
            self._tables = []

    def _spill_or_trim(self) -> None:
        """Write the recording's rows so far to a part file (``spill``), or keep only the last
        :data:`KEEP_STEPS` steps' worth of them."""
        self._part_steps = 0
        chunk = self._unwritten()
        self._parts, self._wide = [], []
        if chunk is None:
            return
        if self.spill:
            if self._spill_dir is None:
                self._spill_dir = Path(tempfile.mkdtemp(prefix="advcore-recording-"))
                # the parts go with the recording even when close() is never called (a crashed run)
                weakref.finalize(self, shutil.rmtree, self._spill_dir, True)
            path = self._spill_dir / f"part-{len(self._spilled):06d}.parquet"
            chunk.write_parquet(path)
            self._spilled.append(path)
        else:
            assert self._last_step is not None
            self._parts = [chunk.filter(pl.col("step") > self._last_step - KEEP_STEPS)]

    @property
    def frame(self) -> pl.DataFrame:
        """The long trace rows in memory (the columns of :func:`trace_step`): every step's until
        the recording spills or is trimmed (see the class)."""
        self._long_tables()
        rows = [p.filter(pl.col("stage") != "step") for p in self._parts]
        return pl.concat(rows, how="diagonal_relaxed") if rows else pl.DataFrame(schema=_SCHEMA)

    @property
    def steps_frame(self) -> pl.DataFrame:
        """The detectors' history: one row per step (older steps merged, see the class), ``step``
        (Int64) and the :func:`canonical_row` metrics (Float64)."""
        self._flush()
        return self._steps

    def run(self) -> Run:
        """The per-step :class:`advcore.model.Run` (format ``"trace"``) the detectors judge."""
        from advcore.model import Run

        frame = self.steps_frame
        sources = {c: f"trace:{c}" for c in frame.columns if c != "step"}
        # the slices of the last `history` steps (older steps are merged in the per-step history, not per slice)
        slices = pl.concat(list(self._slice_rows), how="diagonal_relaxed") if self._slice_rows else None
        return Run("<monitor>", "trace", None, frame, sources, {"layout": "trace", "steps": frame.height},
                   slices=slices)

    def lazy(self) -> pl.LazyFrame:
        """The long trace rows plus each step's per-step metrics (the trace's, the reference
        checks' and the trainer's ``metrics``) as rows of stage ``"step"``, slice ``"all"``: what
        :meth:`write_parquet` writes and ``advcore scan`` reads back into the per-step run the
        detectors saw (every step of it: the recording is never merged). Lazy: the spilled part files
        are scanned, not loaded."""
        parts = [pl.scan_parquet(p) for p in self._spilled]
        chunk = self._unwritten()
        if chunk is not None:
            parts.append(chunk.lazy())
        if not parts:
            return pl.DataFrame(schema=_SCHEMA).lazy()
        return pl.concat(parts, how="diagonal_relaxed").select(list(_SCHEMA)).cast(_SCHEMA)  # type: ignore[arg-type]

    def write_parquet(self, path: str | Path) -> None:
        """Stream :meth:`lazy` into one Parquet file; ``advcore scan`` reads it back."""
        self.lazy().sink_parquet(Path(path))

    def close(self) -> None:
        """Remove the spilled part files (after :meth:`write_parquet`, or when they are not wanted)."""
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir, self._spilled = None, []


#: Steps between two writes of the recording's part files (or trims of its tail).
SPILL_STEPS = 256
#: Steps of recording kept in memory without ``spill``: the last ``SPILL_STEPS`` to this many.
KEEP_STEPS = 1024


def _long_steps(steps: pl.DataFrame) -> pl.DataFrame:
    """Per-step rows in the recording's long form: stage ``"step"``, slice ``"all"``."""
    return (steps.unpivot(index="step", variable_name="statistic", value_name="value")
            .drop_nulls("value")
            .with_columns(pl.lit("step").alias("stage"), pl.lit("all").alias("slice"))
            .select(list(_SCHEMA))
            .cast({"step": pl.Int64, "value": pl.Float64}))


def _halve_older(steps: pl.DataFrame, history: int) -> pl.DataFrame:
    """``steps`` with its rows before the last ``history // 2`` merged pair by pair: the first step
    of each pair, the mean of each metric (nulls ignored, a NaN kept)."""
    older, recent = steps.head(steps.height - history // 2), steps.tail(history // 2)
    metrics = [c for c in steps.columns if c != "step"]
    merged = (older.with_row_index("__pair").with_columns(pl.col("__pair") // 2)
              .group_by("__pair", maintain_order=True)
              .agg(pl.col("step").first(), *(pl.col(c).mean() for c in metrics))
              .drop("__pair"))
    return pl.concat([merged.select(steps.columns), recent])


#: The per-step frame is merged into one chunk when a pass leaves more chunks than this.
_MAX_CHUNKS = 8


def rows_frame(rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """Per-step rows (dicts with an integer-like ``step`` and metric values, keys may differ from
    row to row) as a frame: ``step`` Int64, then one Float64 column per key in order of first
    appearance, null where a row lacks the key."""
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(k for k in r if k != "step"))
    data: dict[str, pl.Series] = {"step": pl.Series("step", [int(r["step"]) for r in rows], dtype=pl.Int64)}
    for k in keys:
        data[k] = pl.Series(k, [r.get(k) for r in rows], dtype=pl.Float64)
    return pl.DataFrame(data)
