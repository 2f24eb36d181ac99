"""TensorBoard event files (``events.out.tfevents.*``, or any file name holding ``tfevents``): the TFRecord framing read here, each record an
``Event`` protocol buffer parsed with the ``tensorboard`` package's ``event_pb2``.

One row per event step (for stable-baselines3 the step is the environment timestep count), one
column per scalar tag (``rollout/ep_rew_mean``, ``train/approx_kl``, ...). Tags logged at only
some steps are null elsewhere. Scalars written as tensors (``add_scalar`` through the TF2 summary
API) are read too; other tensors (histograms, images) are listed in ``metadata["skipped_tags"]``.
The trainer hint is ``sb3``, ``sample_factory`` or ``rl_games`` when their tags are present; with ``rl_games`` the
step is then the frame count, and rl_games' copies of a tag against epochs (``rewards/iter``) and
seconds (``rewards/time``) are left out (named in ``metadata["other_axis_tags"]``), as their steps
would be mistaken for frames. Other files get their trainer from their tags
(:func:`advcore.ingest._trainers.trainer_of`): a verl run's ``critic/score/mean``, RLinf's ``env/``,
``rollout/`` and ``train/actor/`` namespaces (``rlinf/utils/metric_logger.py`` in RLinf/RLinf@a3816b5:
one ``add_scalar(key, value, step)`` per key of each dict the embodied runner logs).

A TFRecord is ``uint64 length, uint32 masked CRC-32C of the length, data, uint32 masked CRC-32C of
the data`` (tensorflow/core/lib/io/record_writer.cc). A record whose length does not match its CRC,
or whose data is not an ``Event``, is corrupt: it is an :class:`IngestError` naming its byte offset,
and reading goes on at the next offset where a record's length and CRC agree, so one bad record
costs itself and the bytes up to the next good one, not the rest of the file. A last record cut
short (a run still writing) is reported the same way.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from advcore._escape import described
from advcore.model import IngestError, RawLog
from advcore.ingest._format import Format

NAME = "tensorboard"

_SB3_TAGS = ("train/approx_kl", "train/clip_fraction", "train/entropy_loss", "rollout/ep_rew_mean",
             "train/explained_variance", "train/policy_gradient_loss", "time/fps")
_HEADER = 12  # uint64 length + uint32 CRC of it
#: rl_games (rl_games/common/a2c_common.py ``train``, ``write_stats``) writes each reward and episode
#: length three times: ``rewards/step`` against frames (the step of every loss and info tag),
#: ``rewards/iter`` against epochs, ``rewards/time`` against seconds
_RL_GAMES_TAGS = ("rewards/iter", "rewards/time", "losses/a_loss", "losses/c_loss", "info/e_clip")
_RL_GAMES_OTHER_AXES = ("/iter", "/time")
#: Sample Factory (sample_factory/algo/learning/learner.py, runners/runner.py) learner and policy tags
_SAMPLE_FACTORY_TAGS = ("train/fraction_clipped", "train/version_diff_avg", "reward/reward")


def is_event_file(path: Path) -> bool:
    """Whether ``path`` is named as TensorBoard names its event files: ``tfevents`` anywhere in the file name, as
    TensorBoard's own loader decides (tensorboard/backend/event_processing/io_wrapper.py ``IsTensorFlowEventsFile``),
    so a renamed copy (``PPO.aggro.80k.events.out.tfevents.1749544745...``, h371's SB3 run) is one too."""
    return "tfevents" in path.name


def sniff(path: Path, head: str | None) -> bool:
    return is_event_file(path)


def _records(data: bytes, path: Path, errors: list[IngestError]) -> Iterator[bytes]:
    """The records' data in ``data`` (a whole event file), corrupt stretches skipped and reported."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import (  # type: ignore[import-untyped]
        masked_crc32c,
    )

    def header_ok(at: int) -> int | None:
        if at + _HEADER > len(data):
            return None
        (length,) = struct.unpack_from("<Q", data, at)
        if length > len(data) - at - _HEADER - 4:
            return None
        (crc,) = struct.unpack_from("<I", data, at + 8)
        return length if masked_crc32c(data[at:at + 8]) == crc else None

    at = 0
    while at < len(data):
        length = header_ok(at)
        if length is None:
            start = at
            at += 1
            while at < len(data) and header_ok(at) is None:
                at += 1
            what = "cut short" if at >= len(data) else f"corrupt; reading resumed at byte {at}"
            errors.append(IngestError(str(path), f"TensorBoard: the record at byte {start} is {what}"))
            continue
        yield data[at + _HEADER: at + _HEADER + length]
        at += _HEADER + length + 4


def _accumulate(path: Path) -> tuple[dict[str, list[tuple[int, float]]], list[str], list[IngestError]]:
    from tensorboard.compat.proto import event_pb2  # type: ignore[import-untyped]
    from tensorboard.util import tensor_util  # type: ignore[import-untyped]

    errors: list[IngestError] = []
    series: dict[str, list[tuple[int, float]]] = {}
    skipped: dict[str, None] = {}
    for record in _records(path.read_bytes(), path, errors):
        try:
            event = event_pb2.Event.FromString(record)
        except Exception as e:  # noqa: BLE001 (a record that is no Event costs itself)
            errors.append(IngestError(str(path), f"TensorBoard: a record is not an Event ({described(e)})"))
            continue
        if not event.HasField("summary"):
            continue
        for v in event.summary.value:
            kind = v.WhichOneof("value")
            if kind == "simple_value":
                series.setdefault(v.tag, []).append((int(event.step), float(v.simple_value)))
            elif kind == "tensor" and v.tag not in skipped:
                try:
                    arr = tensor_util.make_ndarray(v.tensor)
                except Exception:  # noqa: BLE001 (a tensor of another kind: not a scalar)
                    arr = None
                if arr is None or arr.size != 1 or arr.dtype.kind not in "fiub":
                    skipped[v.tag] = None
                    series.pop(v.tag, None)
                    continue
                series.setdefault(v.tag, []).append((int(event.step), float(arr.reshape(-1)[0])))
    return series, list(skipped), errors


def read(path: Path) -> RawLog:
    path = Path(path)
    try:
        series, skipped, errors = _accumulate(path)
    except ImportError:
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}),
                      errors=(IngestError(str(path), "reading TensorBoard files needs the 'tensorboard' package"),))
    except OSError as e:
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}),
                      errors=(IngestError(str(path), f"not a readable TensorBoard event file ({described(e)})"),))
    if not series:
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}),
                      errors=(*errors, IngestError(str(path), "no scalar summaries in the event file")))
    trainer = ("sb3" if any(t in series for t in _SB3_TAGS)
               else "rl_games" if all(t in series for t in _RL_GAMES_TAGS)
               else "sample_factory" if all(t in series for t in _SAMPLE_FACTORY_TAGS) else None)
    other_axis = sorted(t for t in series if t.endswith(_RL_GAMES_OTHER_AXES)) if trainer == "rl_games" else []
    for tag in other_axis:
        del series[tag]
    steps = sorted({s for points in series.values() for s, _ in points})
    index = {s: i for i, s in enumerate(steps)}
    columns: dict[str, Any] = {"step": pl.Series("step", steps, dtype=pl.Int64)}
    for tag in sorted(series):
        values: list[float | None] = [None] * len(steps)
        for s, v in series[tag]:
            values[index[s]] = v  # a step written twice keeps its last value
        columns[tag] = pl.Series(tag, values, dtype=pl.Float64)
    meta: dict[str, Any] = {"first_step": steps[0], "last_step": steps[-1], "tags": sorted(series)}
    if skipped:
        meta["skipped_tags"] = skipped
    if other_axis:
        meta["other_axis_tags"] = other_axis
    if trainer is not None:  # the x-axis these trainers log their scalars against
        meta["step_unit"] = "frames" if trainer == "rl_games" else "environment steps"
    return RawLog(NAME, pl.DataFrame(columns), trainer=trainer, metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
