"""The fleet table on each engine (dask 2026.8.0 on a 2-worker LocalCluster, ray 2.60.0 on a local
instance of 2 CPUs; pinned in the Makefile's integration venv) equals the one local processes give,
on a generated archive and on ../shared/data/real (when present): the per-folder work and the merge
are the same code. Run with ``make test-integration``."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from advcore.fleet import scan_many
from tests._real import SHARED

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]


def _archive(root: Path) -> Path:
    """Six verl JSONL runs in five folders; two lose their reward spread from step 20."""
    for i in range(6):
        path = root / f"run{i % 5}" / f"exp{i}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = []
        for s in range(1, 41):
            spread = 0.0 if i % 3 == 0 and s >= 20 else 0.4
            mean = 0.2 + 0.004 * s * (i + 1)
            rows.append({"step": s, "data": {"critic/score/mean": mean, "critic/score/max": mean + spread / 2,
                                             "critic/score/min": mean - spread / 2}})
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _table(root: Path, engine: str) -> pl.DataFrame:
    return scan_many([root], jobs=2, cache=False, engine=engine).drop("cached").sort("path")


@pytest.mark.parametrize("engine", ["dask", "ray"])
def test_every_engine_gives_the_local_table(engine: str, tmp_path: Path) -> None:
    pytest.importorskip({"dask": "dask.distributed", "ray": "ray"}[engine])
    roots = [_archive(tmp_path / "archive")] + ([SHARED] if SHARED.is_dir() else [])
    for root in roots:
        local = _table(root, "local")
        assert local.height >= 5 and "lost" in local["status"].to_list()
        assert _table(root, engine).equals(local), root


@pytest.mark.parametrize(("engine", "variable", "address"), [("dask", "DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:9"),
                                                             ("ray", "RAY_ADDRESS", "127.0.0.1:9")])
def test_an_engine_that_cannot_be_reached_is_a_startup_error(engine: str, variable: str, address: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing listens on the discard port: the scan stops at once with an error naming the address
    (``ray.init`` alone waits minutes for it), before any folder is read."""
    pytest.importorskip({"dask": "dask.distributed", "ray": "ray"}[engine])
    from advcore.errors import AdvcoreError

    monkeypatch.setenv(variable, address)
    with pytest.raises(AdvcoreError, match=address):
        scan_many([_archive(tmp_path / "archive")], jobs=1, cache=False, engine=engine)
