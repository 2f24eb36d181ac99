"""advcore: follow the learning signal of a policy-gradient RL run from the rewards to the
optimizer step, and say where it vanished.

The statistics core is :mod:`advcore.stats`.
"""

from __future__ import annotations

from advcore import stats, trace
from advcore._core import __version__
from advcore.errors import AdvcoreError, AdvcoreWarning
from advcore.monitor import Monitor

__all__ = ["AdvcoreError", "AdvcoreWarning", "Monitor", "__version__", "stats", "trace"]
