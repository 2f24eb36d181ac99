# Type stub of the native module advcore._core (checked with `python -m mypy.stubtest advcore._core`).
# The public, documented API is advcore.stats; these functions take already-validated arrays.

import numpy as np
import numpy.typing as npt
from typing import final

__all__ = [
    "__version__",
    "grouped_moments",
    "zero_variance_fraction",
    "variance_decomposition",
    "explained_variance",
    "spearman",
    "within_group_spearman",
    "quantile",
    "median_abs_deviation",
    "interquartile_range",
    "QuantileSketch",
    "value_census",
    "change_census",
    "trace",
    "trace_checked",
    "step_checks",
    "_panic_for_tests",
]

__version__: str

_F = npt.NDArray[np.float32] | npt.NDArray[np.float64]
_I = npt.NDArray[np.int64]
_F64 = npt.NDArray[np.float64]

_Census = tuple[int, int, int, int, int, float, float]

def grouped_moments(
    values: _F,
    group_size: int | None,
    group_ids: _I | None,
    ddof: int,
    nan_policy: str,
    atol: float,
    rtol: float,
) -> tuple[_I | None, npt.NDArray[np.uint64] | None, _F64, _F64, _F, _F, _Census]: ...
def zero_variance_fraction(
    values: _F,
    group_size: int | None,
    group_ids: _I | None,
    atol: float,
    rtol: float,
    nan_policy: str,
) -> _Census: ...
def variance_decomposition(
    values: _F, group_size: int | None, group_ids: _I | None, nan_policy: str
) -> tuple[float, float, float, float, int, int]: ...
def explained_variance(
    returns: _F, values: _F, group_size: int | None, group_ids: _I | None, nan_policy: str
) -> tuple[float, bool, _I | None, _F64 | None, int]: ...
def spearman(x: _F, y: _F, nan_policy: str, threads: int = 0) -> tuple[float, int, bool]: ...
def within_group_spearman(
    x: _F, y: _F, group_size: int | None, group_ids: _I | None, nan_policy: str
) -> tuple[_I | None, _F64, float, int, int, int]: ...
def value_census(
    values: _F, atol: float
) -> tuple[int, int, int, int, int, int, int, int, int]: ...
def change_census(before: _F, after: _F, atol: float) -> tuple[int, int, int, float, float]: ...
def quantile(values: _F, q: _F64, method: str, nan_policy: str) -> _F64: ...
def median_abs_deviation(values: _F, scale: float, nan_policy: str) -> float: ...
def interquartile_range(values: _F, method: str, nan_policy: str) -> float: ...

@final
class QuantileSketch:
    def __new__(cls, mantissa_bits: int, nan_policy: str) -> QuantileSketch: ...
    def update(self, values: _F) -> None: ...
    def merge(self, other: QuantileSketch) -> None: ...
    def quantile(self, q: _F64) -> _F64: ...
    @property
    def mantissa_bits(self) -> int: ...
    @property
    def relative_error(self) -> float: ...
    @property
    def count(self) -> int: ...
    @property
    def nan_count(self) -> int: ...
    @property
    def min(self) -> float: ...
    @property
    def max(self) -> float: ...
    @property
    def nan_policy(self) -> str: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> QuantileSketch: ...
    def copy(self) -> QuantileSketch: ...
    def equals(self, other: QuantileSketch) -> bool: ...

def trace(
    stages: list[_F],
    reward: _F,
    group_size: int | None,
    group_ids: _I | None,
    slice_ids: list[npt.NDArray[np.uint32]],
    n_slices: list[int],
    near_zero_atol: float,
    atol: float,
    rtol: float,
    change_atol: float,
    threads: int = 0,
) -> tuple[list[str], _F64]: ...
def trace_checked(
    stages: list[_F],
    reward: _F,
    group_size: int | None,
    group_ids: _I | None,
    slice_ids: list[npt.NDArray[np.uint32]],
    n_slices: list[int],
    near_zero_atol: float,
    atol: float,
    rtol: float,
    change_atol: float,
    adv_stage: int | None,
    reward_dtype: str | None,
    reward_input: str | None,
    adv_rtol: float,
    threads: int = 0,
) -> tuple[list[str], _F64, dict[str, float]]: ...
def step_checks(
    rewards: _F,
    group_size: int | None,
    group_ids: _I | None,
    adv: _F | None,
    reward_dtype: str | None,
    reward_input: str | None,
    adv_rtol: float,
) -> dict[str, float]: ...
def _panic_for_tests() -> None: ...
