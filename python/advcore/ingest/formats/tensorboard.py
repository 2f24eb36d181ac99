"""TensorBoard event files (``events.out.tfevents.*``), read with the ``tensorboard`` package's
``EventAccumulator`` (scalars without its sampling cap).

One row per event step (for stable-baselines3 the step is the environment timestep count), one
column per scalar tag (``rollout/ep_rew_mean``, ``train/approx_kl``, ...). Tags logged at only
some steps are null elsewhere. Scalars written as tensors (``add_scalar`` through the TF2 summary
API) are read too. The trainer hint is ``sb3`` when the SB3 tags are present.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import polars as pl

from advcore._escape import described
from advcore.model import IngestError, RawLog

NAME = "tensorboard"

_SB3_TAGS = ("train/approx_kl", "train/clip_fraction", "train/entropy_loss", "rollout/ep_rew_mean",
             "train/explained_variance", "train/policy_gradient_loss", "time/fps")


def sniff(path: Path, head: str | None) -> bool:
    return path.name.startswith("events.out.tfevents")


def _accumulate(path: Path) -> tuple[dict[str, list[tuple[int, float]]], list[str]]:
    from tensorboard.backend.event_processing.event_accumulator import (  # type: ignore[import-untyped]
        EventAccumulator,
    )

    size_guidance = {"scalars": 0, "tensors": 0, "histograms": 1, "images": 1, "audio": 1,
                     "compressedHistograms": 1}
    acc = EventAccumulator(str(path), size_guidance=size_guidance)
    # tensorboard logs a warning for a file with several graph events, which we do not read
    tb_logger = logging.getLogger("tensorboard")
    level = tb_logger.level
    tb_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            acc.Reload()
    finally:
        tb_logger.setLevel(level)
    tags = acc.Tags()
    series: dict[str, list[tuple[int, float]]] = {}
    for tag in tags.get("scalars", []):
        series[tag] = [(int(e.step), float(e.value)) for e in acc.Scalars(tag)]
    skipped: list[str] = []
    for tag in tags.get("tensors", []):
        if tag in series:
            continue
        points: list[tuple[int, float]] = []
        try:
            from tensorboard.util import tensor_util  # type: ignore[import-untyped]

            for e in acc.Tensors(tag):
                arr = tensor_util.make_ndarray(e.tensor_proto)
                if arr.size != 1 or arr.dtype.kind not in "fiub":
                    raise ValueError("not a scalar")
                points.append((int(e.step), float(arr.reshape(-1)[0])))
        except Exception:
            skipped.append(tag)
            continue
        series[tag] = points
    return series, skipped


def read(path: Path) -> RawLog:
    path = Path(path)
    try:
        series, skipped = _accumulate(path)
    except ImportError:
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}),
                      errors=(IngestError(str(path), "reading TensorBoard files needs the 'tensorboard' package"),))
    except Exception as e:  # the reader raises on corrupt records
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}),
                      errors=(IngestError(str(path), f"not a readable TensorBoard event file ({described(e)})"),))
    if not series:
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}),
                      errors=(IngestError(str(path), "no scalar summaries in the event file"),))
    steps = sorted({s for points in series.values() for s, _ in points})
    index = {s: i for i, s in enumerate(steps)}
    columns: dict[str, Any] = {"step": pl.Series("step", steps, dtype=pl.Int64)}
    for tag in sorted(series):
        values: list[float | None] = [None] * len(steps)
        for s, v in series[tag]:
            values[index[s]] = v  # a step written twice keeps its last value
        columns[tag] = pl.Series(tag, values, dtype=pl.Float64)
    trainer = "sb3" if any(t in series for t in _SB3_TAGS) else None
    meta: dict[str, Any] = {"first_step": steps[0], "last_step": steps[-1], "tags": sorted(series)}
    if skipped:
        meta["skipped_tags"] = skipped
    return RawLog(NAME, pl.DataFrame(columns), trainer=trainer, metadata=meta)
