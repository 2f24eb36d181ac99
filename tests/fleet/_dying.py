"""A stand-in for the fleet's per-folder work that kills its worker process on a folder named
``poison`` (a segfault or an OOM kill, as a worker meets them), and does the real work elsewhere.
Importable by name, so that spawned workers find it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from advcore import fleet
from advcore.scan import ScanOptions

_REAL = fleet._scan_folder


def scan_or_die(args: tuple[list[Path], ScanOptions, set[Path]]) -> list[dict[str, Any]]:
    if any(f.parent.name == "poison" for f in args[0]):
        os._exit(9)
    return _REAL(args)
