"""Scan log files: load each, run the detectors, diagnose, collect one report per run.

Files are processed in parallel worker processes when there are many of them; one broken file
gives a report with its error and the others go on.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from advcore import __version__
from advcore.detectors import REGISTRY, Finding, NotEvaluable, run_detectors
from advcore.diagnose import Verdict, diagnose
from advcore.ingest import Run, load
from advcore.ingest.formats import trl_completions

__all__ = ["RunReport", "ScanOptions", "collect_paths", "scan", "scan_file"]

#: Below this many files the scan runs in this process (worker start-up costs ~0.5 s).
PARALLEL_FROM = 8
_SKIP_SUFFIXES = {".ipynb", ".py", ".png", ".jpg", ".gz", ".zip", ".pt", ".bin", ".safetensors"}
_SKIP_NAMES = {"SOURCE.md", "README.md"}
#: Found in a folder, files with these suffixes are tried (console logs get pasted into markdown)
#: but left out of the report when no format recognises them: they are usually notes.
_QUIET_SUFFIXES = {".md", ".txt"}


@dataclass(frozen=True, slots=True)
class ScanOptions:
    """What to run on each file."""

    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    metric_map: Path | None = None
    format: str | None = None
    rollout_n: int | None = None


@dataclass(frozen=True, slots=True)
class RunReport:
    """One run's diagnosis."""

    run: Run
    findings: tuple[Finding, ...]
    not_evaluable: tuple[NotEvaluable, ...]
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        """The run as SPEC section 9 spells it."""
        return {
            "path": self.run.path,
            "format": self.run.format,
            "trainer": self.run.trainer,
            "steps": self.run.steps,
            "metrics": self.run.metrics,
            "findings": [f.to_json() for f in self.findings],
            "not_evaluable": [n.to_json() for n in self.not_evaluable],
            "verdict": {"stage": self.verdict.stage, "summary": self.verdict.summary},
            "errors": [str(e) for e in self.run.errors],
        }


def document(reports: Sequence[RunReport]) -> dict[str, Any]:
    """The whole ``--format json`` document."""
    return {"advcore": __version__, "runs": [r.to_json() for r in reports]}


def _hidden(relative: Path) -> bool:
    """Whether a path found under a scanned folder lies in a hidden file or folder (``.git``, ``.venv``)."""
    return any(part.startswith(".") for part in relative.parts)


def _fold_step_tables(found: list[Path]) -> list[Path]:
    """Replace TRL's per-step ``completions_<step>.parquet`` files by their folder, once, where the
    first of them was: the folder is read as one run (:mod:`advcore.ingest.formats.trl_completions`)."""
    out: list[Path] = []
    for q in found:
        if trl_completions.is_step_file(q):
            q = q.parent
        out.append(q)
    return list(dict.fromkeys(out))


def collect_paths(targets: Iterable[str]) -> tuple[list[Path], list[str], set[Path]]:
    """Files named by ``targets`` (files, folders searched recursively, globs), sorted; the
    targets that matched nothing; and the files the user named explicitly. Found in a folder or by
    a glob, TRL's ``completions_<step>.parquet`` files count as one entry, their folder."""
    files: list[Path] = []
    unmatched: list[str] = []
    explicit_files: set[Path] = set()
    for target in targets:
        p = Path(target)
        if p.is_dir():
            found = [q for q in sorted(p.rglob("*")) if q.is_file() and not _hidden(q.relative_to(p))]
        elif p.is_file():
            found = [p]
        else:
            found = [Path(q) for q in sorted(glob.glob(target, recursive=True)) if Path(q).is_file()]
        if not found:
            unmatched.append(target)
        if not p.is_file():
            found = _fold_step_tables(found)
        for q in found:
            explicit = q == p
            if explicit:
                explicit_files.add(q)
            if explicit or (q.name not in _SKIP_NAMES and q.suffix.lower() not in _SKIP_SUFFIXES):
                files.append(q)
    return list(dict.fromkeys(files)), unmatched, explicit_files


def scan_file(path: Path, options: ScanOptions) -> RunReport:
    """Load, detect and diagnose one file (never raises for bad content)."""
    run = load(path, format=options.format, metric_map=options.metric_map, rollout_n=options.rollout_n)
    if run.errors and run.steps == 0:
        findings: list[Finding] = []
        missing: list[NotEvaluable] = []
    else:
        findings, missing = run_detectors(run, only=options.only, skip=options.skip, settings=options.settings)
    n_run = sum(1 for i in REGISTRY if (not options.only or i in options.only) and i not in options.skip)
    verdict = diagnose(run, findings, missing, n_run)
    return RunReport(run, tuple(verdict.findings), tuple(missing), verdict)


def _scan_one(args: tuple[Path, ScanOptions]) -> RunReport:
    """One file of a folder scan: its report without the per-sample trace (``advcore trace``
    shows that; a scan of many dumps need not carry every step's trace back from the workers)."""
    report = scan_file(*args)
    return replace(report, run=replace(report.run, trace=None)) if report.run.trace is not None else report


def is_quiet_miss(report: RunReport, explicit: set[Path]) -> bool:
    """A document found in a folder (not named by the user) that holds no training log."""
    p = Path(report.run.path)
    return p not in explicit and p.suffix.lower() in _QUIET_SUFFIXES and report.run.format == "unknown"


def scan(
    paths: Sequence[Path],
    options: ScanOptions | None = None,
    *,
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[RunReport]:
    """Scan ``paths``; reports come back in the order of ``paths``. ``progress(1)`` is called as
    each file finishes."""
    options = options or ScanOptions()
    jobs = jobs or os.cpu_count() or 1
    if len(paths) < PARALLEL_FROM or jobs == 1:
        out = []
        for p in paths:
            out.append(_scan_one((p, options)))
            if progress:
                progress(1)
        return out
    # spawn, not fork: Polars' thread pool does not survive a fork.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        results = []
        for report in pool.map(_scan_one, [(p, options) for p in paths], chunksize=max(1, len(paths) // (jobs * 8))):
            results.append(report)
            if progress:
                progress(1)
        return results
