"""One module per log format. Each has ``NAME``, ``sniff(path, head) -> bool`` (``head`` is the
file's first 64 KiB decoded as UTF-8, or None for binary content) and ``read(path) -> RawLog``.
``ORDER`` is the detection order: the most specific formats first."""

from __future__ import annotations

from types import ModuleType

from advcore.ingest.formats import trainer_state

ORDER: list[ModuleType] = [trainer_state]
BY_NAME: dict[str, ModuleType] = {m.NAME: m for m in ORDER}
