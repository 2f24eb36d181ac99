"""Input conversion: what users hand advcore becomes the arrays the kernels take, without a copy
when it already is one, and with an error naming the argument when it cannot be."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import polars as pl
import pytest

from advcore._arrays import as_groups, as_ids, as_values
from advcore.errors import AdvcoreError


class DlpackTensor:
    """A stand-in for a CPU torch tensor: exports its buffer through the DLPack protocol."""

    def __init__(self, data: np.ndarray[Any, Any]) -> None:
        self._data = data

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._data.__dlpack_device__()


class GradTensor:
    """A stand-in for a torch tensor that requires grad: DLPack export refuses, and the data is
    reached through ``.detach().cpu().numpy()`` as torch users do."""

    def __init__(self, data: np.ndarray[Any, Any]) -> None:
        self._data = data
        self.calls: list[str] = []

    def __dlpack__(self, **kwargs: Any) -> Any:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")

    def __dlpack_device__(self) -> Any:
        return (1, 0)

    def detach(self) -> GradTensor:
        self.calls.append("detach")
        return self

    def cpu(self) -> GradTensor:
        self.calls.append("cpu")
        return self

    def numpy(self) -> np.ndarray[Any, Any]:
        return self._data


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_contiguous_floats_are_not_copied(dtype: type) -> None:
    x = np.arange(10, dtype=dtype)
    assert as_values(x, "values") is x


def test_strided_input_is_made_contiguous_with_the_same_values() -> None:
    x = np.arange(20, dtype=np.float32)[::2]
    out = as_values(x, "values")
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint32, np.bool_, np.float16])
def test_integer_bool_and_half_are_widened_exactly(dtype: type) -> None:
    x = np.array([0, 1, 1, 0], dtype=dtype)
    out = as_values(x, "rewards")
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, x.astype(np.float64))


def test_big_endian_floats_are_accepted() -> None:
    x = np.array([1.5, -2.0], dtype=">f8")
    np.testing.assert_array_equal(as_values(x, "values"), [1.5, -2.0])


@pytest.mark.parametrize(
    "bad", [np.array([1 + 2j]), np.array(["a", "b"]), np.array([object(), None]), [[1.0, 2.0]]]
)
def test_unsupported_input_names_the_argument(bad: Any) -> None:
    with pytest.raises(AdvcoreError, match="`rewards`"):
        as_values(bad, "rewards")


def test_polars_series_zero_copy_and_nulls_become_nan() -> None:
    s = pl.Series("r", [0.0, 1.0, 0.5], dtype=pl.Float32)
    out = as_values(s, "values")
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [0.0, 1.0, 0.5])
    with_null = as_values(pl.Series("r", [1.0, None, 0.0]), "values")
    assert np.isnan(with_null[1]) and with_null[0] == 1.0


def test_dlpack_tensor_is_read_without_a_copy() -> None:
    base = np.linspace(0, 1, 7, dtype=np.float32)
    out = as_values(DlpackTensor(base), "advantages")
    assert np.shares_memory(out, base)


def test_tensor_refusing_dlpack_goes_through_detach_cpu_numpy() -> None:
    base = np.ones(3)
    t = GradTensor(base)
    out = as_values(t, "advantages")
    assert t.calls == ["detach", "cpu"]
    assert np.shares_memory(out, base)


def test_ids() -> None:
    ids = np.array([3, 1, 3], dtype=np.int64)
    assert as_ids(ids, "group_ids") is ids
    np.testing.assert_array_equal(as_ids(np.array([3, 1], dtype=np.int32), "group_ids"), [3, 1])
    with pytest.raises(AdvcoreError, match="`group_ids`.*integer"):
        as_ids(np.array([1.0, 2.0]), "group_ids")
    with pytest.raises(AdvcoreError, match="int64 range"):
        as_ids(np.array([2**63], dtype=np.uint64), "group_ids")


@pytest.mark.parametrize(
    ("size", "ids", "match"),
    [
        (None, None, "exactly one"),
        (2, [0, 0, 1, 1], "exactly one"),
        (3, None, "does not divide"),
        (0, None, "positive integer"),
        (2.0, None, "positive integer"),
        (None, [0, 1], "length 2"),
    ],
)
def test_group_layout_errors(size: Any, ids: Any, match: str) -> None:
    with pytest.raises(AdvcoreError, match=match):
        as_groups(4, size, ids)


def test_kernels_release_the_gil() -> None:
    """A Python thread keeps running while a kernel computes: the GIL is released."""
    from advcore.stats import grouped_moments

    x = np.random.default_rng(0).standard_normal(8_000_000).astype(np.float32)
    ids = np.random.default_rng(1).integers(0, 1_000_000, size=x.shape[0])
    counter = [0]
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            counter[0] += 1

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        before = counter[0]
        grouped_moments(x, group_ids=ids)
        during = counter[0] - before
    finally:
        stop.set()
        thread.join()
    # With the GIL held the spinning thread could not run at all during the call.
    assert during > 1000
