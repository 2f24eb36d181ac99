"""The record each log format declares: how it is recognised and how it is read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advcore.model import RawLog

__all__ = ["Format"]


@dataclass(frozen=True, slots=True)
class Format:
    """One log format (each module of :mod:`advcore.ingest.formats` declares one as ``FORMAT``)."""

    #: the name ``--log-format`` takes and a run's ``format`` reports
    name: str
    #: ``sniff(path, head)``: whether the file (or folder) is of this format; ``head`` is its first
    #: 64 KiB as text (:func:`advcore.ingest._text.decode_head`), or None for binary content or a folder
    sniff: Callable[[Path, str | None], bool]
    #: ``read(path)`` (``read(path, rollout_n=...)`` when :attr:`takes_rollout_n`): never raises for
    #: content; None for a store of runs, read by :attr:`read_runs`
    read: Callable[..., RawLog] | None = None
    #: a folder is one run of this format (TRL's ``completions/``, an MLflow run folder)
    reads_folders: bool = False
    #: ``read`` takes ``rollout_n``, the samples per prompt, for groups the prompts cannot tell apart
    takes_rollout_n: bool = False
    #: per-sample data reduced per step by the core (:func:`advcore.ingest._reduce.reduce`): it emits
    #: canonical names, so the alias table is not consulted
    per_sample: bool = False
    #: a tracking store of many runs: ``read_runs(path)`` gives one :class:`RawLog` per stored run
    read_runs: Callable[[Path], list[RawLog]] | None = None

    def read_all(self, path: Path, rollout_n: int | None) -> list[RawLog]:
        """Every run in ``path``: the store's runs, or the one run of a log."""
        if self.read_runs is not None:
            return self.read_runs(path)
        assert self.read is not None, f"format {self.name} reads neither one run nor a store"
        kwargs: dict[str, Any] = {"rollout_n": rollout_n} if self.takes_rollout_n else {}
        return [self.read(path, **kwargs)]
