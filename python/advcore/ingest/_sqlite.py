"""SQLite databases that tracking libraries write (MLflow's tracking store, Trackio's projects), opened
read-only: advcore never writes into a user's store, and a store a trainer is still writing is read
as it stands (its write-ahead log included when SQLite can take a shared lock, else the main file).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from advcore.ingest._text import SQLITE_MAGIC, starts_with

__all__ = ["columns", "is_sqlite", "read_only", "tables"]

#: Seconds to wait for a lock a writer holds before reading without locks.
BUSY_TIMEOUT = 1.0


def is_sqlite(path: Path) -> bool:
    """Whether ``path`` is a file that starts with SQLite's header."""
    return starts_with(path, SQLITE_MAGIC)


def _uri(path: Path, immutable: bool) -> str:
    return f"file:{quote(str(path.resolve()))}?mode=ro" + ("&immutable=1" if immutable else "")


@contextmanager
def read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to ``path``. When the database is locked (a writer holds it, or its
    folder is read-only so no lock file can be made), it is opened as immutable: the main file as it
    is on disk, no locks taken. Raises :class:`sqlite3.Error` for a file that is not a database."""
    conn = sqlite3.connect(_uri(path, immutable=False), uri=True, timeout=BUSY_TIMEOUT)
    try:
        conn.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.OperationalError as e:
        conn.close()
        if "locked" not in str(e) and "unable to open" not in str(e) and "readonly" not in str(e):
            raise
        conn = sqlite3.connect(_uri(path, immutable=True), uri=True)
    try:
        yield conn
    finally:
        conn.close()


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """The column names of ``table`` (empty when there is no such table)."""
    return {row[1] for row in conn.execute(f"pragma table_info({table!r})")}


def tables(path: Path) -> list[str]:
    """The names of the tables of the database ``path`` (raises :class:`sqlite3.Error`)."""
    with read_only(path) as conn:
        return [row[0] for row in conn.execute("select name from sqlite_master where type = 'table' order by name")]
