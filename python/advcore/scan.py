"""Scan log files: load each, join the files of one run, run the detectors, diagnose, collect one
report per run.

Files are read, and runs judged, in parallel worker processes when there are many of them; one
broken file gives a report with its error and the others go on. Files of one run in one folder (a
console log beside a per-sample dump) are judged as one run (:func:`advcore.ingest.join_runs`
says when), unless ``ScanOptions.per_file``.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import unquote, urlparse
from typing import Any

import polars as pl

from advcore import __version__
from advcore._escape import described
from advcore._paths import Walk, expand_glob, glob_root, walk_files
from advcore._workers import no_workers_here, spawn_pool
from advcore.detectors import REGISTRY, Finding, NotEvaluable, run_detectors
from advcore.diagnose import Verdict, diagnose
from advcore.errors import AdvcoreError
from advcore.ingest import IngestError, Run, join_runs, load, load_runs
from advcore.model import JUDGED_APART, STORE_RUN
from advcore.ingest._text import PARQUET_MAGIC, SNIFF_BYTES, decode_head
from advcore.ingest.formats import mlflow_store, nemo_rl, prime_rl, samples, trl_completions, wandb

__all__ = ["Collected", "RunReport", "ScanOptions", "collect_paths", "scan", "scan_file"]

#: Below this many files the scan runs in this process (worker start-up costs ~0.5 s).
PARALLEL_FROM = 8
_SKIP_SUFFIXES = {".py", ".pyc", ".pyi", ".so", ".rs", ".c", ".h", ".cpp", ".js", ".css", ".whl", ".png", ".jpg", ".gz",
                  ".zip", ".pt", ".bin", ".safetensors", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".sh", ".lock",
                  # build output: object files, libraries, Rust's crate metadata and dependency files
                  ".o", ".a", ".d", ".rlib", ".rmeta", ".dylib", ".dll", ".exe", ".pyd", ".class", ".jar"}
_WANDB_CLIENT_LOGS = {"debug.log", "debug-internal.log", "debug-core.log", "wandb-metadata.json"}
_SKIP_NAMES = {"SOURCE.md", "README.md", "tokenizer.json", "special_tokens_map.json", "vocab.json", "truth.json",
               "Makefile", "Dockerfile", "LICENSE", "requirements.txt"}


def _skipped(path: Path) -> bool:
    """Found in a folder, a file that is never a training log: code, images, weights, configuration
    (``*.yaml``, ``config.json``, ``adapter_config.json``, tokenizer files), notes, an SQLite
    database's journal and shared-memory files (``mlruns.db-wal``), the W&B client's own logs."""
    name = path.name
    return (name in _SKIP_NAMES or path.suffix.lower() in _SKIP_SUFFIXES
            or name.endswith(("config.json", "-wal", "-shm", "-journal"))
            or (name in _WANDB_CLIENT_LOGS and "wandb" in path.parts))
#: Found in a folder, files with these suffixes are tried (console logs get pasted into markdown,
#: training runs print into notebooks) but left out of the report when nothing is read from them:
#: they are usually notes or analysis notebooks.
_QUIET_SUFFIXES = {".md", ".txt", ".ipynb"}
#: NumPy's saved arrays (``rewards.npy``, SB3's ``evaluations.npz``), left out too when no metric is read from them.
_ARRAY_SUFFIXES = {".npy", ".npz"}


@dataclass(frozen=True, slots=True)
class ScanOptions:
    """What to run on each file."""

    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    metric_map: Path | None = None
    format: str | None = None
    rollout_n: int | None = None
    #: judge every file on its own, even files of one run
    per_file: bool = False
    #: console lines longer than this many characters are reported, not parsed (None: the default)
    max_line: int | None = None
    #: keep each per-sample run's stage trace on its report (``advcore report`` draws it)
    keep_trace: bool = False


@dataclass(frozen=True, slots=True)
class RunReport:
    """One run's diagnosis."""

    run: Run
    findings: tuple[Finding, ...]
    not_evaluable: tuple[NotEvaluable, ...]
    verdict: Verdict
    #: the detectors that had their metrics and judged the run (fired or not)
    checked: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The run as SPEC section 9 spells it."""
        return {
            "path": self.run.path,
            "files": list(self.run.files),
            "format": self.run.format,
            "trainer": self.run.trainer,
            "steps": self.run.steps,
            "metrics": self.run.metrics,
            "findings": [f.to_json() for f in self.findings],
            "not_evaluable": [n.to_json() for n in self.not_evaluable],
            "verdict": self.verdict.to_json(),
            "errors": [str(e) for e in self.run.errors],
            "not_read": self.run.unread,
            "checked": list(self.checked),
            **({"judged_apart": list(apart)} if (apart := self.run.metadata.get(JUDGED_APART)) else {}),
            **({"ended_with": self.run.ended_with} if self.run.ended_with else {}),
        }


#: Version of the ``--format json`` document; described by ``advcore/schema/scan.schema.json``.
SCHEMA_VERSION = 12


def document(reports: Sequence[RunReport]) -> dict[str, Any]:
    """The whole ``--format json`` document."""
    return {"advcore": __version__, "schema_version": SCHEMA_VERSION, "runs": [r.to_json() for r in reports]}


def _fold_run_folders(found: list[Path]) -> list[Path]:
    """Replace the files of a folder that holds one run by what the run is read from, once, where
    the first of them was: TRL's per-step ``completions_<step>.parquet`` files and NeMo-RL's
    ``train_data_step<N>.jsonl`` by their folder (:mod:`advcore.ingest.formats.trl_completions`,
    :mod:`advcore.ingest.formats.nemo_rl`), the parts of a per-sample Parquet dataset by theirs
    (:mod:`advcore.ingest.formats.samples`), prime-rl's ``step_<N>/<kind>/<subset>/traces.jsonl`` by their
    ``rollouts`` folder (:mod:`advcore.ingest.formats.prime_rl`), an MLflow folder-store run's ``metrics/``,
    ``params/`` and ``tags/`` by the run folder (:mod:`advcore.ingest.formats.mlflow_store`), the
    files of a W&B run folder by its record file or console (:func:`advcore.ingest.formats.wandb.run_file_of`)."""
    out: list[Path] = []
    parts: dict[Path, list[Path]] = {}  # a folder's per-sample Parquet files, when it holds two or more
    for q in found:
        if q.suffix.lower() == ".parquet" and q.parent not in parts:
            parts[q.parent] = samples.dataset_parts(q.parent)
        if (trl_completions.is_step_file(q) or nemo_rl.is_step_file(q)
                or (len(parts.get(q.parent, ())) >= 2 and q in parts[q.parent])):
            q = q.parent
        elif prime_rl.is_step_file(q):
            q = prime_rl.rollouts_folder(q)
        else:
            q = mlflow_store.run_folder_of(q) or wandb.run_file_of(q) or q
        out.append(q)
    return list(dict.fromkeys(out))


@dataclass(frozen=True, slots=True)
class Collected:
    """The files a scan reads (:func:`collect_paths`), and what it did not read and why."""

    #: the files, in the order of the targets (each folder's files sorted)
    files: list[Path]
    #: the targets that matched no file
    unmatched: list[str]
    #: the files the user named explicitly (never left out of a report)
    explicit: set[Path]
    #: (link, resolved target) of each symbolic link not followed (its target is outside the scanned folders)
    links_skipped: list[tuple[Path, str]] = field(default_factory=list)
    #: (folder, why) of each folder that could not be listed
    unlistable: list[tuple[Path, str]] = field(default_factory=list)


def store_path(target: str) -> str:
    """A tracking store's URI as the path it names: ``sqlite:///mlflow.db`` (relative),
    ``sqlite:////tmp/mlruns.db`` (absolute), ``file:///home/me/mlruns``; other targets as they are."""
    if target.startswith("sqlite:///"):
        return target[len("sqlite:///"):]
    if target.startswith("file:"):
        return unquote(urlparse(target).path) or target
    return target


def collect_paths(targets: Iterable[str], *, follow_links: bool = False) -> Collected:
    """The files named by ``targets``: files, folders searched recursively, globs (``**`` recurses),
    tracking-store URIs (:func:`store_path`).

    Found in a folder or by a glob, TRL's ``completions_<step>.parquet`` files count as one entry,
    their folder; hidden files and folders are skipped. A symbolic link inside a folder (or matched
    by a glob) is followed only when its target lies inside the scanned folders (the folder targets
    and the fixed part of each glob), unless ``follow_links``; a folder is walked once, however
    many links lead to it (no loop); a file named explicitly is always read
    (:mod:`advcore._paths`).
    """
    targets = [store_path(t) for t in targets]
    roots = tuple(os.path.realpath(t) if Path(t).is_dir() else os.path.realpath(glob_root(t))
                  for t in targets if not Path(t).is_file())
    walk = Walk(roots, follow_links)
    files: list[Path] = []
    unmatched: list[str] = []
    explicit_files: set[Path] = set()
    for target in targets:
        p = Path(target)
        if p.is_dir():
            before = len(walk.files)
            walk_files(p, walk)
            found = walk.files[before:]
        elif p.is_file():
            found = [p]
        else:
            found = expand_glob(target, walk)
        if not found and not any(folder == p for folder, _ in walk.unlistable):
            unmatched.append(target)
        if not p.is_file():
            found = _fold_run_folders(found)
        for q in found:
            explicit = q == p
            if explicit:
                explicit_files.add(q)
            if explicit or not _skipped(q):
                files.append(q)
    # a link that would not be read anyway is not worth a notice (W&B links its client's logs out of the run)
    links = [(link, to) for link, to in walk.links_skipped if not _skipped(link) and not wandb.run_file_of(link)]
    return Collected(list(dict.fromkeys(files)), unmatched, explicit_files, links, walk.unlistable)


def scan_file(path: Path, options: ScanOptions) -> RunReport:
    """Load, detect and diagnose one file (never raises for bad content)."""
    return judge(load(path, format=options.format, metric_map=options.metric_map, rollout_n=options.rollout_n,
                      max_line=options.max_line), options)


def judge(run: Run, options: ScanOptions) -> RunReport:
    """Detect and diagnose a loaded run."""
    ran = tuple(i for i in REGISTRY if (not options.only or i in options.only) and i not in options.skip)
    findings: list[Finding] = []
    missing: list[NotEvaluable] = []
    checked: tuple[str, ...] = ()
    try:
        if not (run.errors and run.steps == 0):
            findings, missing = run_detectors(run, only=options.only, skip=options.skip, settings=options.settings)
            checked = tuple(i for i in ran if i not in {n.id for n in missing})
        verdict = diagnose(run, findings, missing, len(ran), judged=ran)
        if not verdict.judged:  # too few steps, or no metric: what the detectors would find is not known (a
            checked = ()        # newcomer read 'checked' on a 4-step run as 'passed')
    except AdvcoreError:
        raise  # a usage error (an unknown detector ID, a bad knob) concerns every file
    except Exception as e:  # noqa: BLE001 (nothing one file contains may end the scan of the others)
        failure = IngestError(run.path, f"advcore failed while judging this run ({described(e)}); the other files "
                                        "are not affected - please report it")
        run = replace(run, errors=(*run.errors, failure))
        findings, missing, checked = [], [], ()
        verdict = diagnose(run, findings, missing, len(ran), judged=ran)
    return RunReport(run, tuple(verdict.findings), tuple(missing), verdict, checked)


def _load_one(args: tuple[Path, ScanOptions]) -> list[Run]:
    """The runs of one file of a scan (several for a tracking store), without their per-sample trace
    unless ``options.keep_trace`` (``advcore trace`` shows it; a scan of many dumps need not carry every
    step's trace between processes)."""
    path, options = args
    runs = load_runs(path, format=options.format, metric_map=options.metric_map, rollout_n=options.rollout_n,
                     max_line=options.max_line)
    return runs if options.keep_trace else [replace(run, trace=None) if run.trace is not None else run for run in runs]


def _judge_one(args: tuple[Run, ScanOptions]) -> RunReport:
    return judge(*args)


def is_quiet_miss(report: RunReport, explicit: set[Path]) -> bool:
    """A file found in a folder (not named by the user) that holds no training log: a note or a
    notebook, a binary file no format knows (a build product, an image without a suffix), or a
    report advcore itself wrote (``advcore scan --format json > report.json``)."""
    p = Path(report.run.path)
    if p in explicit:
        return False
    if p.suffix.lower() in _QUIET_SUFFIXES:
        return report.run.format == "unknown" or (p.suffix.lower() == ".ipynb" and report.run.steps == 0)
    if p.suffix.lower() in _ARRAY_SUFFIXES:
        # saved arrays are as often observations or weights as a training curve: kept when a metric was read
        return not report.run.metrics
    try:
        with p.open("rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return False
    own_report = re.match(rb'\s*\{\s*"advcore"\s*:', head) is not None
    unknown_binary = report.run.format == "unknown" and decode_head(head) is None
    return own_report or (unknown_binary and not _damaged_parquet(p, head))


def _damaged_parquet(path: Path, head: bytes) -> bool:
    """A file that begins as Parquet but whose schema cannot be read (truncated, corrupt): a data file
    that was damaged is reported, unlike a binary file of another kind."""
    if not head.startswith(PARQUET_MAGIC):
        return False
    try:
        pl.read_parquet_schema(path)
    except Exception:  # noqa: BLE001 (polars raises several kinds for a damaged footer)
        return True
    return False


def scan(
    paths: Sequence[Path],
    options: ScanOptions | None = None,
    *,
    jobs: int | None = None,
    progress: Callable[[float], None] | None = None,
) -> list[RunReport]:
    """Scan ``paths``; reports come back in the order of ``paths`` (a joined run where its first file
    was; a tracking store's runs in its place). ``progress(k)`` is called as the ``k`` files of a run
    are judged (``1/n`` for each of a store's ``n`` runs)."""
    options = options or ScanOptions()
    jobs = jobs or os.cpu_count() or 1

    def judged(results: Iterable[RunReport]) -> list[RunReport]:
        out = []
        for report in results:
            out.append(report)
            if progress:
                files = report.run.files
                progress(len(files) / runs_of_store[files[0]] if files[0] in runs_of_store else len(files))
        return out

    def stores(runs: list[Run]) -> Counter[str]:
        return Counter(r.files[0] for r in runs if STORE_RUN in r.metadata)

    if len(paths) < PARALLEL_FROM or jobs == 1:
        runs = [run for p in paths for run in _load_one((p, options))]
        runs = runs if options.per_file else join_runs(runs)
        runs_of_store = stores(runs)
        return judged(judge(run, options) for run in runs)
    try:
        with spawn_pool(jobs) as pool:
            chunk = max(1, len(paths) // (jobs * 8))
            runs = [run for runs_of_file in pool.map(_load_one, [(p, options) for p in paths], chunksize=chunk)
                    for run in runs_of_file]
            runs = runs if options.per_file else join_runs(runs)
            runs_of_store = stores(runs)
            return judged(pool.map(_judge_one, [(run, options) for run in runs], chunksize=chunk))
    except BrokenProcessPool:
        if not no_workers_here(stacklevel=2):
            raise
        return scan(paths, options, jobs=1, progress=progress)
