"""A fleet table: one row per run of an archive of training logs, scanned in parallel processes,
with a cache so that scanning a grown archive again only reads what changed.

The unit of work is a *folder*: the files a scan finds in one folder are read and joined into runs
together (:func:`advcore.ingest.join_runs`), so a folder is scanned whole or not at all. Its cache
key is the list of its files with their size and modification time (nanoseconds), the advcore
version and the scan options; a folder whose key is unchanged is not read again. Each folder's rows
are committed to the cache (an SQLite database under the user's cache directory, never in the
scanned folders) as soon as it is done: a scan interrupted by Ctrl-C or a killed worker loses
nothing already done, and the next scan continues from there. A folder whose worker died is a row
with an error and is not cached (the next scan tries it again).

Columns (:data:`COLUMNS`): ``path`` (a run's path: a file, a folder of joined files, or
``<store>#<experiment>/<run>``), ``files``, ``format``, ``trainer``, ``steps``, ``status``
(``lost``, ``quiet``, ``not_judged``, ``unreadable``), ``stage``, ``headline``, ``onset_step``,
``summary`` (the verdict's sentence: what was lost, or why a run was not judged), ``findings``
(``id``, ``severity``, ``stage``, ``onset_step`` and ``slice``, null for the whole run, of each), ``errors``, ``advcore`` (the version that
scanned it) and ``cached`` (read from the cache in this scan).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import polars as pl

from advcore import __version__
from advcore._workers import no_workers_here, spawn_pool
from advcore.errors import AdvcoreError
from advcore.scan import RunReport, ScanOptions, collect_paths, is_quiet_miss, scan

__all__ = ["COLUMNS", "ENGINES", "FleetCache", "default_cache", "fleet_frame", "fleet_row", "resolve_engine",
           "scan_fleet", "scan_many", "write_fleet"]

#: The fleet table's columns and their types.
COLUMNS: dict[str, pl.DataType | type[pl.DataType]] = {
    "path": pl.String,
    "files": pl.List(pl.String),
    "format": pl.String,
    "trainer": pl.String,
    "steps": pl.Int64,
    "status": pl.String,
    "stage": pl.String,
    "headline": pl.String,
    "onset_step": pl.Int64,
    "summary": pl.String,
    "findings": pl.List(pl.Struct({"id": pl.String, "severity": pl.String, "stage": pl.String,
                                   "onset_step": pl.Int64, "slice": pl.String})),
    "errors": pl.List(pl.String),
    "advcore": pl.String,
    "cached": pl.Boolean,
}


def fleet_row(report: RunReport) -> dict[str, Any]:
    """One run's row of the fleet table (without ``cached``)."""
    run, verdict = report.run, report.verdict
    return {
        "path": run.path,
        "files": list(run.files),
        "format": run.format,
        "trainer": run.trainer,
        "steps": run.steps,
        "status": verdict.status,
        "stage": verdict.stage,
        "headline": verdict.headline,
        "onset_step": verdict.onset,
        "summary": verdict.summary,
        "findings": [{"id": f.id, "severity": f.severity, "stage": f.stage, "onset_step": f.onset_step,
                      "slice": f.slice} for f in report.findings],
        "errors": [str(e) for e in run.errors],
        "advcore": __version__,
    }


def default_cache() -> Path:
    """``$ADVCORE_CACHE_DIR/fleet.sqlite``, else ``$XDG_CACHE_HOME/advcore/fleet.sqlite``, else
    ``~/.cache/advcore/fleet.sqlite``."""
    base = os.environ.get("ADVCORE_CACHE_DIR")
    if base:
        return Path(base) / "fleet.sqlite"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "advcore" / "fleet.sqlite"


class FleetCache:
    """Rows of scanned folders, keyed by the folder and a digest of its files, the advcore version
    and the scan options. Every :meth:`put` is committed at once."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=30)
        self._db.execute("create table if not exists folders (folder text primary key, digest text not null, "
                         "rows text not null)")
        self._db.commit()

    def get(self, folder: str, digest: str) -> list[dict[str, Any]] | None:
        row = self._db.execute("select digest, rows from folders where folder = ?", (folder,)).fetchone()
        return json.loads(row[1]) if row is not None and row[0] == digest else None

    def put(self, folder: str, digest: str, rows: list[dict[str, Any]]) -> None:
        self._db.execute("insert or replace into folders values (?, ?, ?)", (folder, digest, json.dumps(rows)))
        self._db.commit()

    def close(self) -> None:
        self._db.close()


def _digest(files: Sequence[Path], options: ScanOptions) -> str:
    """What a folder's rows depend on: the names, sizes and modification times of its files (of every
    file inside a folder read as one run: an MLflow run's metrics grow in place), of the metric map,
    the advcore version, the table's columns and the scan options (a file that cannot be stat'ed
    counts as changed every time)."""
    h = hashlib.sha256(f"{__version__}\0{','.join(COLUMNS)}\0{options!r}".encode())
    entries = [*files, *([options.metric_map] if options.metric_map is not None else [])]
    for entry in entries:
        for f in sorted(p for p in entry.rglob("*") if p.is_file()) if entry.is_dir() else [entry]:
            try:
                st = f.stat()
                h.update(f"\0{f}\0{st.st_size}\0{st.st_mtime_ns}".encode())
            except OSError:
                h.update(f"\0{f}\0{os.urandom(8).hex()}".encode())
    return h.hexdigest()


def _folders(files: Iterable[Path]) -> dict[str, list[Path]]:
    """The files grouped by the folder they are read in (in the order first met)."""
    out: dict[str, list[Path]] = {}
    for f in files:
        out.setdefault(str(f.parent), []).append(f)
    return out


def _scan_folder(args: tuple[list[Path], ScanOptions, set[Path]]) -> list[dict[str, Any]]:
    """The rows of one folder's runs (in a worker process); a note or a binary file found in the
    folder (not named in ``explicit``) that holds no log is no run (:func:`advcore.scan.is_quiet_miss`)."""
    files, options, explicit = args
    return [fleet_row(r) for r in scan(files, options, jobs=1) if not is_quiet_miss(r, explicit)]


def _died(files: Sequence[Path], why: str) -> list[dict[str, Any]]:
    return [{"path": str(f), "files": [str(f)], "format": "unknown", "trainer": None, "steps": 0,
             "status": "unreadable", "stage": None, "headline": None, "onset_step": None, "summary": why,
             "findings": [],
             "errors": [f"{f}: {why}"], "advcore": __version__} for f in files]


def scan_fleet(files: Sequence[Path], options: ScanOptions | None = None, *, jobs: int | None = None,
               cache: FleetCache | None = None, progress: Callable[[int], None] | None = None,
               explicit: set[Path] | None = None, engine: str = "local") -> list[dict[str, Any]]:
    """The fleet rows of ``files`` (as :func:`advcore.scan.collect_paths` finds them; ``explicit``, the
    files the user named), folder by folder on ``engine`` (:data:`ENGINES`; ``jobs`` worker processes
    on a machine of its own); folders unchanged since ``cache`` saw them are not read again. The
    per-folder work and the merge are the same on every engine.
    ``progress(k)`` is called as the ``k`` files of a folder are done. Rows come in folder order."""
    options = options or ScanOptions()
    jobs = jobs or os.cpu_count() or 1
    explicit = explicit or set()
    folders = _folders(files)
    # stat'ing every file (a folder-run's too) is the cache's price: not paid without one
    digests = {folder: _digest(fs, options) for folder, fs in folders.items()} if cache is not None else {}
    done: dict[str, list[dict[str, Any]]] = {}
    todo: list[str] = []
    for folder in folders:
        hit = cache.get(folder, digests[folder]) if cache is not None else None
        if hit is not None:
            done[folder] = [{**row, "cached": True} for row in hit]
            if progress:
                progress(len(folders[folder]))
        else:
            todo.append(folder)

    def finished(folder: str, rows: list[dict[str, Any]], *, keep: bool = True) -> None:
        done[folder] = [{**row, "cached": False} for row in rows]
        if cache is not None and keep:
            cache.put(folder, digests[folder], rows)
        if progress:
            progress(len(folders[folder]))

    tasks = [(folder, (folders[folder], options, explicit)) for folder in todo]
    for folder, outcome in _ENGINES[resolve_engine(engine)](tasks, jobs) if tasks else ():
        if isinstance(outcome, str):  # the worker died: a row with the error, tried again next time
            finished(folder, _died(folders[folder], outcome), keep=False)
        else:
            finished(folder, outcome)
    return [row for folder in folders for row in done[folder]]


#: A folder and the arguments of :func:`_scan_folder` for it.
Task = tuple[str, tuple[list[Path], ScanOptions, set[Path]]]
#: A folder and its rows, or why its worker failed.
Outcome = tuple[str, "list[dict[str, Any]] | str"]
_DIED = "the worker scanning it died; it is scanned again next time"


def _local(tasks: list[Task], jobs: int) -> Iterator[Outcome]:
    """Local processes. A killed worker breaks its pool, and every folder still in it fails with it:
    they go to a new pool; after a second break each goes alone, and one that breaks its own pool
    failed."""
    if jobs == 1 or len(tasks) < 2:
        for folder, args in tasks:
            yield folder, _scan_folder(args)
        return
    pending, attempt = tasks, 0
    while pending:
        solo = attempt >= 2
        retry: list[Task] = []
        for group in ([[t] for t in pending] if solo else [pending]):
            with spawn_pool(1 if solo else jobs) as pool:
                futures = {pool.submit(_scan_folder, args): (folder, args) for folder, args in group}
                for fut in as_completed(futures):
                    folder, args = futures[fut]
                    try:
                        yield folder, fut.result()
                    except BrokenProcessPool:
                        if solo:
                            yield folder, _DIED
                        else:
                            retry.append((folder, args))
        if attempt == 0 and len(retry) == len(pending) and no_workers_here(stacklevel=4):
            for folder, args in retry:
                yield folder, _scan_folder(args)
            return
        pending, attempt = retry, attempt + 1


def _dask(tasks: list[Task], jobs: int) -> Iterator[Outcome]:
    """Dask: the scheduler at ``$DASK_SCHEDULER_ADDRESS``, else a local cluster of ``jobs`` worker
    processes (``dask.distributed.LocalCluster``)."""
    try:
        from dask.distributed import Client, LocalCluster  # type: ignore[import-not-found,unused-ignore]
        from dask.distributed import as_completed as dask_completed  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise AdvcoreError("--engine dask needs dask.distributed: pip install 'advcore[dask]'") from None
    address = os.environ.get("DASK_SCHEDULER_ADDRESS")
    try:
        client = (Client(address, timeout="10s") if address else
                  Client(LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None)))
    except (OSError, TimeoutError) as e:
        raise AdvcoreError(f"--engine dask: the scheduler at {address} could not be reached ({e})") from None
    with client:
        futures = {client.submit(_scan_folder, args, pure=False): folder for folder, args in tasks}
        for fut in dask_completed(list(futures)):
            try:
                yield futures[fut], fut.result()
            except Exception as e:  # noqa: BLE001 (a worker lost mid-task: that folder's row says so)
                yield futures[fut], f"{_DIED} ({type(e).__name__})"
        if not address:
            client.cluster.close()


def _ray(tasks: list[Task], jobs: int) -> Iterator[Outcome]:
    """Ray: the cluster at ``$RAY_ADDRESS`` or the one this process already joined, else a local
    instance of ``jobs`` CPUs."""
    try:
        import ray  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise AdvcoreError("--engine ray needs ray: pip install 'advcore[ray]'") from None
    started = False
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        if address:
            _check_reachable(address)
        try:
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise AdvcoreError(f"--engine ray: the cluster could not be joined ({e})") from None
        started = True
    try:
        remote = ray.remote(max_retries=1)(_scan_folder)
        refs = {remote.remote(args): folder for folder, args in tasks}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                try:
                    yield refs[ref], ray.get(ref)
                except ray.exceptions.RayError as e:
                    yield refs[ref], f"{_DIED} ({type(e).__name__})"
    finally:
        if started:
            ray.shutdown()


#: Seconds to wait for a cluster's address to accept a connection before giving up on it.
CONNECT_TIMEOUT = 5.0


def _check_reachable(address: str) -> None:
    """Raise :class:`AdvcoreError` when the Ray cluster at ``address`` (``host:port`` or
    ``ray://host:port``; ``auto`` and ``local`` are not checked) does not accept a TCP connection within
    :data:`CONNECT_TIMEOUT`: ``ray.init`` waits minutes for an address nobody listens on."""
    parsed = urlparse(address if "://" in address else f"tcp://{address}")
    if parsed.hostname is None or parsed.port is None:
        return
    try:
        socket.create_connection((parsed.hostname, parsed.port), timeout=CONNECT_TIMEOUT).close()
    except OSError as e:
        raise AdvcoreError(f"--engine ray: the cluster at RAY_ADDRESS={address} could not be reached "
                           f"({e.strerror or type(e).__name__} within {CONNECT_TIMEOUT:g} s)") from None


_ENGINES = {"local": _local, "dask": _dask, "ray": _ray}
#: The engines ``--engine`` takes (``auto``: Ray when a Ray cluster is reachable, else local processes).
ENGINES = ("auto", *_ENGINES)


def resolve_engine(engine: str) -> str:
    """The engine ``engine`` names: ``auto`` is ``ray`` when ``$RAY_ADDRESS`` is set or this process is
    inside a Ray job, else ``local``. Raises :class:`AdvcoreError` for an unknown name."""
    if engine not in ENGINES:
        raise AdvcoreError(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    if engine != "auto":
        return engine
    if os.environ.get("RAY_ADDRESS"):
        return "ray"
    ray = sys.modules.get("ray")  # a Ray job has imported it; importing it here would cost a second
    return "ray" if ray is not None and ray.is_initialized() else "local"


def fleet_frame(rows: Sequence[dict[str, Any]]) -> pl.DataFrame:
    """The rows as a Polars frame of :data:`COLUMNS`."""
    return pl.DataFrame([{c: row.get(c) for c in COLUMNS} for row in rows], schema=COLUMNS, orient="row")


def write_fleet(frame: pl.DataFrame, out: Path) -> None:
    """Write the fleet table to ``out``: Parquet (``.parquet``) as it is, CSV (``.csv``) with the
    lists flattened (``files`` and ``errors`` joined by `` | ``, ``findings`` as
    ``ID:severity:stage:onset; ...``, `` [slice]`` after a slice's finding). Raises ValueError for another
    suffix."""
    suffix = out.suffix.lower()
    if suffix == ".parquet":
        frame.write_parquet(out)
    elif suffix == ".csv":
        where = pl.element().struct.field("slice")
        finding = pl.format("{}:{}:{}:{}", pl.element().struct.field("id"), pl.element().struct.field("severity"),
                            pl.element().struct.field("stage"), pl.element().struct.field("onset_step").fill_null(-1)) \
            + pl.when(where.is_not_null()).then(pl.format(" [{}]", where)).otherwise(pl.lit(""))
        frame.with_columns(
            pl.col("files").list.join(" | "),
            pl.col("errors").list.join(" | "),
            pl.col("findings").list.eval(finding).list.join("; "),
        ).write_csv(out)
    else:
        raise ValueError(f"--out: expected a .parquet or .csv file, got {out.name!r}")


def scan_many(paths: Sequence[str | Path], options: ScanOptions | None = None, *, jobs: int | None = None,
              cache: bool | Path = True, engine: str = "auto") -> pl.DataFrame:
    """The fleet table (:data:`COLUMNS`) of the runs in ``paths`` (files, folders, globs, tracking-store
    URIs), as ``advcore scan PATHS --out`` writes it; ``engine`` as for :func:`scan_fleet` (``auto``:
    :func:`resolve_engine`). ``cache``: True for :func:`default_cache`, a path
    for another cache database, False for none. ``jobs``: worker processes (default one per CPU).
    The inputs that match nothing are not rows: see :func:`advcore.scan.collect_paths`."""
    collected = collect_paths([str(p) for p in paths])
    files = collected.files
    store = FleetCache(default_cache() if cache is True else Path(cache)) if cache is not False else None
    try:
        return fleet_frame(scan_fleet(files, options, jobs=jobs, cache=store, explicit=collected.explicit,
                                      engine=engine))
    finally:
        if store is not None:
            store.close()
