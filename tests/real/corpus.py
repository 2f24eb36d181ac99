"""The real-log corpus: the manifest (``tests/real/corpus.toml``), where its files are on this
machine, and the calibration / validation split.

Two kinds of runs are listed, each with the expectation written from its source before advcore was
run on it (``written``):

* ``location = "shared"``: the runs of ``../shared/data/real/<name>/`` (next to this repository;
  ``$ADVCORE_SHARED_REAL`` elsewhere), tuned on by earlier sessions;
* fetched runs (the default): files of public repositories at a commit, never committed here;
  ``tests/real/extract.py`` copies them from local clones into ``$ADVCORE_REAL_DATA`` (default
  ``~/.cache/advcore/real``), one folder per run, sha256 checked.

The split is by repository, so that runs of one project never sit on both sides (a fork that carries
its upstream's logs unchanged names the upstream as its ``project`` and is split with it), and by the
round (``batch``) in which a run was collected:

* every shared run is *calibration* (earlier sessions tuned on them);
* the batches in :data:`CALIBRATION_BATCHES` are *calibration*: each was the validation half once,
  but its misses were read and classed, and the detector fixes they drove were made on it, so it
  can no longer be called unseen;
* the newer batches (not yet studied) are *validation*: collected from repositories used nowhere else (a run of a
  repository that has calibration runs is calibration too), its
  expectations written before any scan, never tuned on (:func:`split_of`).

Thresholds are tuned on calibration runs only; the validation score is the one reported. When a
validation batch has been studied, it moves to calibration and a new batch is collected
(``COLLECTING.md`` beside this file: the helpers' brief, and ``examined.txt``, the repositories
already looked at and not used).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["CALIBRATION_BATCHES", "CORPUS", "MANIFEST", "SHARED", "Expectation", "RealRun", "calibration_repositories",
           "load_manifest", "project_of", "split_of"]

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = Path(__file__).with_name("corpus.toml")
#: where fetched runs are extracted
CORPUS = Path(os.environ.get("ADVCORE_REAL_DATA") or Path.home() / ".cache" / "advcore" / "real")
#: the shared real logs, beside this repository
SHARED = Path(os.environ.get("ADVCORE_SHARED_REAL") or ROOT.parent / "shared" / "data" / "real")

Split = Literal["calibration", "validation"]


@dataclass(frozen=True, slots=True)
class Expectation:
    """What the run's source says advcore should conclude."""

    status: str
    stage: str
    headline: tuple[str, ...]
    #: acceptable onset steps, inclusive (None: the run has no onset)
    onset: tuple[int, int] | None
    must_not_fire: tuple[str, ...]
    healthy: bool


@dataclass(frozen=True, slots=True)
class RealRun:
    """One run of the manifest."""

    name: str
    repository: str
    location: Literal["shared", "fetched"]
    commit: str | None
    #: (path in the repository, sha256)
    files: tuple[tuple[str, str], ...]
    trainer: str
    format: str
    written: str
    expect: Expectation
    split: Split
    #: why and when the expectation was changed after a scan (calibration runs only), else None
    revised: str | None = None
    #: the collection round (see the module); shared runs are batch 0
    batch: int = 0
    #: the project whose work the files are, split as one repository: a fork that carries its
    #: upstream's logs unchanged is the upstream's (``project`` in the manifest; else the repository)
    project: str = ""

    @property
    def folder(self) -> Path:
        return (SHARED if self.location == "shared" else CORPUS) / self.name

    @property
    def present(self) -> bool:
        return all((self.folder / Path(path).name).is_file() for path, _ in self.files)


#: the batches whose runs are calibration (see the module)
CALIBRATION_BATCHES = frozenset(range(1, 75)) | {76, 77, 78, 82, 84, 86, 88, 90, 92, 94, 96, 98, 100, 102, 104, 106, 108, 110, 112, 114}


def split_of(repository: str, batch: int, calibration_repositories: Iterable[str]) -> Split:
    """Calibration or validation for a fetched run of ``repository`` collected in ``batch``; a
    repository that already has calibration runs (shared, or of a calibration batch) keeps its new
    runs on that side too."""
    if repository.lower() in {r.lower() for r in calibration_repositories} or batch in CALIBRATION_BATCHES:
        return "calibration"
    return "validation"


def project_of(entry: dict[str, object]) -> str:
    """The project a manifest entry's files belong to: its ``project`` (a fork carrying its upstream's logs
    unchanged, e.g. Kostrikov's reference monitors in forks of ikostrikov/pytorch-a2c-ppo-acktr-gail), else
    its repository."""
    return str(entry.get("project") or entry["repository"])


def calibration_repositories(entries: Iterable[dict[str, object]]) -> set[str]:
    """The projects (:func:`project_of`) of the manifest ``entries`` that are calibration by themselves:
    shared runs' and those of the runs of calibration batches."""
    return {project_of(e) for e in entries
            if e.get("location") == "shared" or int(str(e.get("batch", 1))) in CALIBRATION_BATCHES}


def load_manifest(path: Path = MANIFEST) -> list[RealRun]:
    """Every run of the manifest, with its split (see the module)."""
    entries = tomllib.loads(path.read_text())["run"]
    seen = calibration_repositories(entries)
    out = []
    for e in entries:
        location = e.get("location", "fetched")
        onset = e.get("expect_onset") or None
        expect = Expectation(e["expect_status"], e["expect_stage"], tuple(e["expect_headline"]),
                             (int(onset[0]), int(onset[1])) if onset else None, tuple(e.get("must_not_fire", ())),
                             bool(e["healthy"]))
        batch = 0 if location == "shared" else int(e.get("batch", 1))
        split: Split = "calibration" if location == "shared" else split_of(project_of(e), batch, seen)
        out.append(RealRun(e["name"], e["repository"], location, e.get("commit"),
                           tuple((f["path"], f["sha256"]) for f in e["files"]), e["trainer"], e["format"],
                           e["written"], expect, split, e.get("revised"), batch, project_of(e)))
    return out
