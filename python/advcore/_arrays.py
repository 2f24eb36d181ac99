"""Turn what users hand us (numpy arrays, Polars Series, torch tensors, lists) into the 1-D
C-contiguous numpy arrays the native kernels take, without copying when the input is already
a contiguous float32/float64 (or int64 id) array, and without importing torch or Polars.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from advcore.errors import AdvcoreError

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _to_numpy(x: Any, name: str) -> np.ndarray[Any, Any]:
    if isinstance(x, np.ndarray):
        return x
    module = type(x).__module__
    if module.startswith("polars"):
        # Polars Series: zero-copy for numeric data without nulls; float nulls become NaN.
        return np.asarray(x.to_numpy())
    if hasattr(x, "__dlpack__") and not isinstance(x, np.generic):
        try:
            return np.from_dlpack(x)
        except (BufferError, RuntimeError, TypeError):
            # torch refuses to export tensors that require grad or live on a GPU.
            if hasattr(x, "detach"):
                x = x.detach()
            if hasattr(x, "cpu"):
                x = x.cpu()
            if hasattr(x, "numpy"):
                return np.asarray(x.numpy())
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as e:
        raise AdvcoreError(f"`{name}` could not be read as an array: {e}") from e


#: dtype kinds that hold real numbers: bool, integers, floats, and Python objects (converted one by one)
_REAL_KINDS = "biufO"


def as_float64(x: Any, name: str, what: str = "real numbers") -> npt.NDArray[np.float64]:
    """``x`` (any shape) as a float64 array. :class:`AdvcoreError` naming ``name`` when it holds
    complex numbers, dates, durations or text (it must hold ``what``), or values that do not convert."""
    try:
        raw = np.asarray(x)
        if raw.dtype.kind not in _REAL_KINDS:
            raise AdvcoreError(f"`{name}` must hold {what}, got an array of dtype {raw.dtype}")
        return np.asarray(raw, dtype=np.float64)
    except AdvcoreError:
        raise
    except (TypeError, ValueError) as e:
        raise AdvcoreError(f"`{name}` could not be read as numbers: {e}") from None


def _one_dim(arr: np.ndarray[Any, Any], name: str) -> np.ndarray[Any, Any]:
    if arr.ndim != 1:
        raise AdvcoreError(f"`{name}` must be 1-D, got shape {arr.shape}")
    return arr


def as_values(x: Any, name: str) -> npt.NDArray[np.floating[Any]]:
    """``x`` as a 1-D C-contiguous float32 or float64 array (no copy if it already is one).

    Integer, bool and float16 input is widened to float64 (exact). Anything else raises
    :class:`AdvcoreError` naming ``name``.
    """
    arr = _one_dim(_to_numpy(x, name), name)
    dtype = arr.dtype
    if dtype not in _FLOATS:
        if dtype.kind in "biu" or dtype == np.float16:
            arr = arr.astype(np.float64)
        elif dtype.kind == "f" and dtype.itemsize in (4, 8):  # non-native byte order
            arr = arr.astype(dtype.newbyteorder("="))
        else:
            raise AdvcoreError(
                f"`{name}` has unsupported dtype {dtype}; expected float32 or float64 "
                "(integers, bool and float16 are widened to float64)"
            )
    return np.ascontiguousarray(arr)


def as_ids(x: Any, name: str) -> npt.NDArray[np.int64]:
    """``x`` as a 1-D C-contiguous int64 array of group ids (no copy if it already is one)."""
    arr = _one_dim(_to_numpy(x, name), name)
    if arr.dtype.kind not in "iu":
        raise AdvcoreError(f"`{name}` has unsupported dtype {arr.dtype}; expected integer group ids")
    if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise AdvcoreError(f"`{name}` holds ids above the int64 range")
    return np.ascontiguousarray(arr, dtype=np.int64)


def as_groups(
    n: int, group_size: int | None, group_ids: Any, values_name: str = "values"
) -> tuple[int | None, npt.NDArray[np.int64] | None]:
    """Validate the group layout: exactly one of ``group_size`` and ``group_ids``."""
    if (group_size is None) == (group_ids is None):
        raise AdvcoreError("give exactly one of `group_size` (contiguous groups) and `group_ids`")
    if group_ids is not None:
        ids = as_ids(group_ids, "group_ids")
        if ids.shape[0] != n:
            raise AdvcoreError(
                f"`group_ids` has length {ids.shape[0]} but `{values_name}` has length {n}"
            )
        return None, ids
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)):
        raise AdvcoreError(f"`group_size` must be a positive integer, got {group_size!r}")
    if group_size < 1:
        raise AdvcoreError(f"`group_size` must be a positive integer, got {group_size}")
    if n % group_size:
        raise AdvcoreError(
            f"`group_size`={group_size} does not divide the {n} samples of `{values_name}`, "
            "so they are not contiguous groups; pass `group_ids` instead"
        )
    return int(group_size), None


def check_ddof(ddof: Any) -> int:
    """``ddof`` as a non-negative int."""
    if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
        raise AdvcoreError(f"`ddof` must be a non-negative integer, got {ddof!r}")
    return int(ddof)


def check_nan_policy(nan_policy: Any) -> str:
    """``nan_policy`` as one of scipy's three spellings."""
    if nan_policy not in ("propagate", "omit", "raise"):
        raise AdvcoreError(
            f"`nan_policy` must be 'propagate', 'omit' or 'raise', got {nan_policy!r}"
        )
    return str(nan_policy)


def check_tolerance(value: Any, name: str) -> float:
    """A tolerance (``atol``/``rtol``) as a finite non-negative float."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise AdvcoreError(f"`{name}` must be a non-negative number, got {value!r}") from None
    if not np.isfinite(out) or out < 0:
        raise AdvcoreError(f"`{name}` must be a finite non-negative number, got {value!r}")
    return out
