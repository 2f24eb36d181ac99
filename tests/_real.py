"""Where the real logs live (outside the repository, never copied into it): the shared runs beside
this repository (``../shared/data/real``, or ``$ADVCORE_SHARED_REAL``) and the fetched corpus
(``$ADVCORE_REAL_DATA``, default ``~/.cache/advcore/real``; ``tests/real/extract.py`` fills it).
Tests that need a file that is absent skip, saying which variable points to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.real.corpus import CORPUS, SHARED

REAL = SHARED


def real(relative: str) -> Path:
    """A file of the shared runs, or skip the test when it is absent."""
    path = SHARED / relative
    if not path.is_file():
        pytest.skip(f"shared real log not found at {path} (set ADVCORE_SHARED_REAL)")
    return path


def corpus(relative: str) -> Path:
    """A file of the fetched corpus, or skip the test when it is absent."""
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip(f"corpus log not found at {path} (set ADVCORE_REAL_DATA; tests/real/extract.py fills it)")
    return path


def events(path: Path) -> Any:
    """TensorBoard's own reader over the event file ``path``, every scalar kept: the oracle the
    TensorBoard tests compare advcore's reading with (``.Scalars(tag)``, ``.Tags()``)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # type: ignore[import-untyped]

    acc = EventAccumulator(str(path), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc
