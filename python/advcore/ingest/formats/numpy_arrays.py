"""NumPy arrays a training loop saved: ``np.save`` files (``rewards.npy``) and ``np.savez`` archives, above all
Stable-Baselines3's ``evaluations.npz``.

* **SB3's EvalCallback** (``stable_baselines3/common/callbacks.py``, ``EvalCallback._on_step``: ``np.savez(log_path,
  timesteps=..., results=..., ep_lengths=..., successes=...)``, the last only when the environment reports
  ``is_success``): one row per evaluation; ``timesteps`` (environment steps) is the step, and each 2-D array
  (evaluations x episodes) gives its mean over the episodes of an evaluation. Trainer ``sb3_eval``: the alias table
  reads ``results`` as the reward (the return of the deterministic policy evaluated apart from training, as PFRL's
  ``scores.txt``) and ``successes`` as the success rate.
* **Any other archive**: its arrays with the most entries on the first axis are columns named by their keys (as a
  columnar JSON's arrays), or those as long as an array named like a return per episode (:func:`~advcore.ingest._parse.row_count`); a 2-D one gives its mean over the second axis; the others are listed in
  ``metadata["unaligned"]``. An array named like a step counter (``timesteps``, ``episodes``) is the step.
* **One array** (``.npy``): 1-D, one series named by the file's stem (``rewards.npy`` is read as ``rewards``), as a
  file of bare numbers; 2-D, its longer axis is the step. Two columns of which the first counts (whole numbers,
  strictly increasing) and the second does not are (step, value) rows (``metadata["step_column"]``); otherwise the
  values are averaged over the shorter axis (seeds, agents or episodes of a step; ``metadata["averaged_axis"]``).

Arrays of Python objects are never unpickled (``allow_pickle=False``): such a file or member is reported, not read,
as is one larger than :data:`MAX_BYTES` (observations or weights saved beside the curves).
A file that is not a NumPy array (a truncated archive, a wrong header) costs that file, with its error.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import polars as pl

from advcore._escape import described
from advcore.ingest._format import Format
from advcore.ingest._parse import file_series, records_frame, row_count
from advcore.model import IngestError, RawLog

NAME = "numpy_arrays"

#: The first bytes of a ``.npy`` file (numpy/lib/format.py ``MAGIC_PREFIX``) and of a zip archive (``.npz``).
_NPY_MAGIC, _ZIP_MAGIC = b"\x93NUMPY", b"PK\x03\x04"
#: An array file (or archive member) larger than this is observations or weights, not a training curve: not read
#: (a curve of a million steps in float64 is 8 MB).
MAX_BYTES = 1 << 28
#: The arrays of SB3's EvalCallback.
_SB3_EVAL = frozenset({"timesteps", "results"})


def sniff(path: Path, head: str | None) -> bool:
    suffix = path.suffix.lower()
    if suffix not in (".npy", ".npz") or not path.is_file():
        return False
    with path.open("rb") as f:
        start = f.read(6)
    return start.startswith(_NPY_MAGIC if suffix == ".npy" else _ZIP_MAGIC)


def _per_row(name: str, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``array`` as one value per entry of its first axis: itself when 1-D, else its mean over the other axes."""
    if not np.issubdtype(array.dtype, np.number) and array.dtype != np.bool_:
        raise ValueError(f"{name} holds {array.dtype} values, not numbers")
    values = array.astype(np.float64)
    return values if values.ndim == 1 else values.reshape(len(values), -1).mean(axis=1)


def _archive(path: Path, file: BinaryIO) -> RawLog:
    with np.load(file, allow_pickle=False) as archive:
        arrays: dict[str, np.ndarray[Any, Any]] = {}
        skipped: list[str] = []
        sizes = {info.filename.removesuffix(".npy"): info.file_size for info in archive.zip.infolist()}
        for key in archive.files:
            if sizes.get(key, 0) > MAX_BYTES:
                skipped.append(key)
                continue
            try:
                arrays[key] = archive[key]
            except ValueError:  # an array of Python objects, which only unpickling would read
                skipped.append(key)
    shaped = {k: a for k, a in arrays.items() if a.ndim >= 1 and len(a)}
    if not shaped:
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(str(path), "NumPy archive: no array of numbers found"),))
    n = row_count({k: len(a) for k, a in shaped.items()})
    columns, errors = {}, []
    for key, array in shaped.items():
        if len(array) != n:
            skipped.append(key)
            continue
        try:
            columns[key] = _per_row(key, array)
        except ValueError as e:
            skipped.append(key)
            errors.append(IngestError(str(path), f"NumPy archive: {e}"))
    frame, dropped = records_frame([{k: float(v[i]) for k, v in columns.items()} for i in range(n)])
    meta: dict[str, Any] = {"layout": "npz", "arrays": {k: list(a.shape) for k, a in arrays.items()}}
    if skipped or dropped:
        meta["unaligned"] = sorted({*skipped, *dropped})
    trainer = "sb3_eval" if _SB3_EVAL <= columns.keys() else None
    return RawLog(NAME, frame, trainer=trainer, metadata=meta, errors=tuple(errors))


def _counter(column: np.ndarray[Any, Any]) -> bool:
    """Whether ``column`` counts steps: whole numbers, strictly increasing."""
    return len(column) > 1 and bool(np.all(np.diff(column) > 0) and np.all(column == np.round(column)))


def _single(path: Path, file: BinaryIO) -> RawLog:
    array = np.load(file, allow_pickle=False)
    if array.ndim not in (1, 2) or array.size == 0:
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(
            str(path), f"NumPy array of shape {array.shape}: expected one value per step, or a 2-D array"),))
    if array.ndim == 2 and array.shape[1] > array.shape[0]:
        array = array.T  # the longer axis is the step
    if array.ndim == 2 and array.shape[1] == 2 and np.issubdtype(array.dtype, np.number):
        steps, values = array[:, 0].astype(np.float64), array[:, 1].astype(np.float64)
        if _counter(steps) and not _counter(values):
            # (step, value) rows: the frame at which each game ended and its return (an ECS 170 Pong homework's
            # ``np.save('rewards.npy', all_rewards)`` of ``(frame_idx, episode_reward)`` pairs)
            frame, _ = records_frame([{"step": int(k), path.stem: v} for k, v in zip(steps, values.tolist())])
            return RawLog(NAME, frame, metadata={"headerless": [path.stem], "layout": "npy", "step_column": 0})
    raw = file_series(NAME, path, _per_row(path.stem, array).tolist(), "npy")
    if array.ndim == 2:
        return RawLog(NAME, raw.frame, metadata={**raw.metadata, "averaged_axis": array.shape[1]})
    return raw


def read(path: Path) -> RawLog:
    if path.suffix.lower() == ".npy" and path.stat().st_size > MAX_BYTES:
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(
            str(path), f"a NumPy array of {path.stat().st_size / 2**20:.0f} MiB: too large to be a training curve "
                       "(observations or weights?); not read"),))
    try:
        # opened here, so that a damaged file is closed however np.load fails on it
        with path.open("rb") as file:
            return _archive(path, file) if path.suffix.lower() == ".npz" else _single(path, file)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        # an array of Python objects (allow_pickle=False refuses it: advcore never unpickles a file), a truncated
        # or corrupt file
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(
            str(path), f"not a NumPy array file advcore can read ({described(e)})"),))


FORMAT = Format(NAME, sniff, read)
