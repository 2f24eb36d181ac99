"""Where the real logs live (outside the repository, never copied into it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_CANDIDATES = [
    os.environ.get("ADVCORE_REAL_DATA"),
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real",
    "/work/shared/data/real",
]
REAL = next((Path(p) for p in _CANDIDATES if p and Path(p).is_dir()), Path("../shared/data/real"))


def real(relative: str) -> Path:
    """The real file, or skip the test when the data folder is absent."""
    path = REAL / relative
    if not path.is_file():
        pytest.skip(f"real log not found at {path} (set ADVCORE_REAL_DATA)")
    return path
