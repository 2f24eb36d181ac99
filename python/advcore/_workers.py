"""Worker processes for the scan, the fleet table and the report, and what happens when they cannot start.

Workers are spawned, never forked: Polars' thread pool does not survive a fork. Python's spawn start method
starts each worker by running the main script again; a script that calls advcore at its top level, outside an
``if __name__ == "__main__":`` block, starts workers again from each worker while it is still starting, and
every worker dies (``multiprocessing``: "An attempt has been made to start a new process before the current
process has finished its bootstrapping phase"). The callers then go on in the calling process, with
:data:`NO_WORKERS` as a warning, rather than failing or returning every input as unreadable.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import TypeVar

from advcore.errors import AdvcoreWarning

__all__ = ["NO_WORKERS", "no_workers_here", "pool_map", "spawn_pool", "workers_start"]

_T = TypeVar("_T")
_R = TypeVar("_R")

#: Said when worker processes cannot start (:func:`workers_start`) and the work goes on in the calling process.
NO_WORKERS = ("advcore could not start worker processes and works in this process instead: Python starts each "
              "worker by running the main script again, and a script that calls advcore outside an "
              "`if __name__ == \"__main__\":` block stops every worker as it starts; put the call in that block to "
              "use every core")


def spawn_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"))


def workers_start() -> bool:
    """Whether a worker process can start here at all (one spawned worker runs a trivial task): False under an
    unguarded main script (see the module)."""
    try:
        with spawn_pool(1) as pool:
            pool.submit(int).result()
    except BrokenProcessPool:
        return False
    return True


def no_workers_here(stacklevel: int) -> bool:
    """After a pool broke: True, with :data:`NO_WORKERS` as a warning for the caller ``stacklevel`` frames up, when
    no worker can start here (the work goes on in this process); False when one can (a worker was killed)."""
    if workers_start():
        return False
    warnings.warn(NO_WORKERS, AdvcoreWarning, stacklevel=stacklevel + 1)
    return True


def pool_map(fn: Callable[[_T], _R], items: Iterable[_T], workers: int, chunksize: int) -> list[_R]:
    """``[fn(x) for x in items]`` on ``workers`` spawned processes; in this process, with a warning, when they
    cannot start. A pool broken otherwise (a worker killed) raises ``BrokenProcessPool``."""
    items = list(items)
    try:
        with spawn_pool(workers) as pool:
            return list(pool.map(fn, items, chunksize=chunksize))
    except BrokenProcessPool:
        if not no_workers_here(stacklevel=3):
            raise
        return [fn(x) for x in items]
