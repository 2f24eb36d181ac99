# Type stub of the native module advcore._core (checked with `python -m mypy.stubtest advcore._core`).
# The public, documented API is advcore.stats; these functions take already-validated arrays.

import numpy as np
import numpy.typing as npt

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
def spearman(x: _F, y: _F, nan_policy: str) -> tuple[float, int, bool]: ...
def within_group_spearman(
    x: _F, y: _F, group_size: int | None, group_ids: _I | None, nan_policy: str
) -> tuple[_I | None, _F64, float, int, int, int]: ...
def value_census(
    values: _F, atol: float
) -> tuple[int, int, int, int, int, int, int, int, int]: ...
def change_census(before: _F, after: _F, atol: float) -> tuple[int, int, int, float, float]: ...
def _panic_for_tests() -> None: ...
