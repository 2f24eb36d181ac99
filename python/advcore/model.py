"""The run model, on the ground floor: the :class:`Run` every reader produces (through
:class:`RawLog`, a format's frame under the trainer's keys, and :class:`IngestError`), every
detector judges and the online loop builds; it imports no other advcore module.

The canonical frame has one row per logged step, a ``step`` column (Int64) and one Float64
column per canonical metric of SPEC section 4 (``reward_mean``, ``reward_std``, ``adv_std``, ...,
``reward/<component>``). Steps that restart (curriculum phases) get a ``phase`` column (Int64,
from 0) and keep their own step numbers; a log that begins mid-run keeps its first step number.
Missing values are null, never 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

__all__ = ["JUDGED_APART", "STEP_COUNTER", "STORE_RUN", "STRICT_COUNTER", "IngestError", "RawLog", "Run", "counted_nonfinite"]

#: Longest error message kept, in characters.
MESSAGE_LIMIT = 400

#: The metadata key of a run read from a tracking store of many runs (MLflow, Trackio): its name in the
#: store, ``<experiment>/<run name>``. Such a run is named ``<store>#<name>`` and never joined with another.
STORE_RUN = "run_name"
#: The metadata key of a run judged apart from files of its folder read before it: ``"<file>: <why>"`` each.
JUDGED_APART = "judged_apart"
#: The metadata key of the exception a run's console log ends with (its last traceback's last line): the run died.
ENDED_WITH = "ended_with"
#: The name of a hand-written loop's step counter (``grpo_step``, ``train/iteration``, ``update``, ``epoch``,
#: ``episode``: a loop that updates once per episode; ``timesteps``: environment steps).
STEP_COUNTER = re.compile(r"(?:^|[_/])(?:step|timestep|iter|iteration|update|round|episode|epoch)s?$", re.IGNORECASE)
#: Counters that may repeat a value only when each row is a step (a count of finished episodes can
#: stay put over several updates: those rows are not one step).
STRICT_COUNTER = re.compile(r"episodes?$", re.IGNORECASE)


def counted_nonfinite(name: str) -> pl.Expr:
    """Boolean expression, per row: ``name`` holds a NaN or +-inf that counts as a fault.

    A non-finite value *before* the column's first finite value is the metric not being defined yet,
    when the column does become finite later: a running best initialised to ``-inf`` (the CS294
    DQN logger's ``best_mean_reward`` before 100 episodes have ended), the mean of no episodes
    (``np.mean([])`` is NaN at a notebook's epoch 0). Those do not count. A column that is never
    finite counts from its first row (a loss that is NaN from the start), and so does every
    non-finite value after a finite one. Nulls (missing values) never count."""
    col = pl.col(name)
    finite = col.is_finite().fill_null(False)
    seen_finite = finite.cast(pl.UInt32).cum_sum() > 0
    return col.is_not_null() & ~finite & (seen_finite | ~finite.any())


T = TypeVar("T")

#: A key measured on held-out episodes or prompts (evaluation, validation, test), by its first word.
_HELD_OUT = re.compile(r"(?:eval|evaluation|val|validation|test)(?![a-z])", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class IngestError:
    """A file, or a line of it, that could not be read. A message longer than
    :data:`MESSAGE_LIMIT` characters is cut there (a reader quotes at most a short excerpt of a
    line; this bounds what any message can carry)."""

    path: str
    message: str
    line: int | None = None

    def __post_init__(self) -> None:
        if len(self.message) > MESSAGE_LIMIT:
            object.__setattr__(self, "message", self.message[:MESSAGE_LIMIT] + "...")

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class RawLog:
    """What a format module read, before key names are mapped to canonical ones.

    ``frame`` has the trainer's own keys as columns (Float64 where numeric) and a ``step``
    column (Int64) when the log has one; rows are in log order.
    """

    format: str
    frame: pl.DataFrame
    trainer: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    errors: tuple[IngestError, ...] = ()
    #: per-sample input only: the stage trace of every step (:func:`advcore.trace.trace_step` rows)
    trace: pl.DataFrame | None = None


@dataclass(frozen=True, slots=True)
class Run:
    """One training run's per-step metrics under canonical names, and where they came from."""

    path: str
    format: str
    trainer: str | None
    frame: pl.DataFrame
    #: canonical name -> the trainer's own key it was read from
    sources: dict[str, str]
    metadata: dict[str, Any]
    errors: tuple[IngestError, ...] = ()
    #: per-sample input only: the stage trace of every step, in the long form of
    #: :func:`advcore.trace.trace_step` (step, stage, slice, statistic, value); None otherwise
    trace: pl.DataFrame | None = None
    #: the files of a run read from several files (:func:`advcore.ingest.join_runs`); empty for one file
    joined: tuple[str, ...] = ()
    #: per slice of the samples (task, family, horizon, ...) and step, the slice's per-step metrics:
    #: ``slice`` (String, ``"<label>=<value>"``), ``step`` (Int64) and Float64 metric columns
    #: (:func:`advcore.trace.slice_frame` of a per-sample trace, or a trainer's per-task keys); None
    #: when the run has no slices. Kept when a scan drops the trace: it is small.
    slices: pl.DataFrame | None = None
    #: values derived from :attr:`frame` (which never changes), by key: see :meth:`cached`
    _memo: dict[Hashable, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def cached(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, once per run and ``key``: the detectors read the same derived series
        (``reward_mean``'s finite values, a proxy) many times in one pass."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]  # type: ignore[no-any-return]

    @property
    def files(self) -> tuple[str, ...]:
        """The files the run was read from."""
        return self.joined or (self.path,)

    @property
    def steps(self) -> int:
        """Number of logged steps (rows)."""
        return self.frame.height

    def _is_metric(self, name: str) -> bool:
        return name not in ("step", "phase") and self.frame[name].null_count() < self.frame.height

    @property
    def metrics(self) -> list[str]:
        """Canonical metric names present with at least one non-null value."""
        return [c for c in self.frame.columns if self._is_metric(c)]

    @property
    def unread(self) -> dict[str, list[str]]:
        """The columns of the run's files that were not read, sorted, evaluation keys first (``eval/...``,
        ``val-core/...``, ``test/...``: a newcomer looked for verl's validation score among 47 unread keys):
        ``unmapped`` (numeric, but no alias names them), ``non_numeric`` (text) and ``placeholder`` (a reader's
        ``metadata["placeholder"]``: the trainer's fill-in for "not logged" on every row, e.g. the CSD callback's
        integer 0 for a reward it
        never received) and ``unaligned`` (a reader's ``metadata["unaligned"]``: arrays of another length than
        the rows, with no step to place them on) and ``rounded`` (a reader's ``metadata["rounded"]``: printed as 0 at
        the console's precision on every row, e.g. verl's ``actor/lr:0.000``); a key read from one file of a joined
        run is not listed."""
        parts = self.metadata.get("parts") or [self.metadata]
        used = set(self.sources.values())
        out: dict[str, list[str]] = {}
        for key in ("unmapped", "non_numeric", "placeholder", "unaligned", "rounded"):
            names = sorted({str(c) for p in parts for c in p.get(key, ())} - used,
                           key=lambda c: (_HELD_OUT.match(c) is None, c))
            out[key] = names
            used |= set(names)
        return out

    @property
    def ended_with(self) -> str:
        """The exception the run's log ends with after its last logged step (a reader's ``metadata["ended_with"]``:
        the run died), per file of a joined run named by its file; '' when none."""
        parts = self.metadata.get("parts") or [self.metadata]
        ended = [(Path(str(p.get("file", self.path))).name, str(e)) for p in parts if (e := p.get(ENDED_WITH))]
        if len(parts) == 1:
            return ended[0][1] if ended else ""
        return "; ".join(f"{name}: {error}" for name, error in ended)

    def has(self, *names: str) -> bool:
        """True when every metric in ``names`` is present (a column with a non-null value)."""
        columns = set(self.frame.columns)
        return all(n in columns and self._is_metric(n) for n in names)

    @staticmethod
    def failed(path: Path | str, message: str, line: int | None = None) -> Run:
        """A run that could not be read at all: no rows, one error."""
        return Run(str(path), "unknown", None, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}), {}, {},
                   (IngestError(str(path), message, line),))
