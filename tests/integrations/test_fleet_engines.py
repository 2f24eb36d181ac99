"""The fleet table of ../shared/data/real on each engine (dask 2026.8.0 on a 2-worker LocalCluster,
ray 2.60.0 on a local instance of 2 CPUs; pinned in the Makefile's integration venv) equals the one
local processes give: the per-folder work and the merge are the same code. Run with
``make test-integration``."""

from __future__ import annotations

import polars as pl
import pytest

from advcore.fleet import scan_many
from tests._real import SHARED

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]


def _table(engine: str) -> pl.DataFrame:
    if not SHARED.is_dir():
        pytest.skip(f"the shared real logs are not at {SHARED} (set ADVCORE_SHARED_REAL)")
    return scan_many([SHARED], jobs=2, cache=False, engine=engine).drop("cached").sort("path")


@pytest.mark.parametrize("engine", ["dask", "ray"])
def test_every_engine_gives_the_local_table(engine: str) -> None:
    pytest.importorskip({"dask": "dask.distributed", "ray": "ray"}[engine])
    local = _table("local")
    assert local.height >= 30
    assert _table(engine).equals(local)
