"""The exception and warning classes of advcore.

Bad arguments raise :class:`AdvcoreError` (a :class:`ValueError`, so callers that catch
``ValueError`` keep working); degenerate data, where a statistic is undefined, gives a
:class:`AdvcoreWarning` and NaN in the result (scipy's ``SmallSampleWarning`` pattern).
"""

from __future__ import annotations

__all__ = ["AdvcoreError", "AdvcoreWarning"]


class AdvcoreError(ValueError):
    """An argument advcore cannot work with. The message names the argument."""


class AdvcoreWarning(UserWarning):
    """A statistic is undefined for the data given (for example the variance of one value)."""
