"""advcore: follow the learning signal of a policy-gradient RL run from the rewards to the
optimizer step, and say where it vanished.

The statistics core is :mod:`advcore.stats`.
"""

from __future__ import annotations

from advcore import stats, trace
from advcore._core import __version__
from advcore.errors import AdvcoreError, AdvcoreWarning
from advcore.monitor import Monitor

__all__ = ["AdvcoreError", "AdvcoreWarning", "Monitor", "__version__", "scan_many", "stats", "trace"]


def __getattr__(name: str) -> object:
    """``advcore.scan_many`` (:func:`advcore.fleet.scan_many`), imported on first use: the log readers
    stay out of ``import advcore`` inside a trainer."""
    if name == "scan_many":
        from advcore.fleet import scan_many

        return scan_many
    raise AttributeError(f"module 'advcore' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, ``scan_many`` among them though it is imported on first use (a newcomer looked
    for it in ``dir(advcore)``)."""
    return sorted(set(globals()) | set(__all__))
