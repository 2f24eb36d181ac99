"""The detector framework (SPEC section 6): frozen specs, pure functions, findings.

A detector is a pure function ``fn(run, knobs) -> Finding | NotEvaluable | None`` plus a frozen
:class:`DetectorSpec` (ID, severity, stage, key metrics, knobs with defaults and validation, the
remedies its findings carry and its :class:`Card`). The registry lists them; users select, suppress
and re-tune them by ID. A detector without its metrics returns :class:`NotEvaluable` naming what it
needs; it never silently passes. Rendering lives in :mod:`advcore.report` (findings) and
:mod:`advcore.detectors.cards` (cards), not here.
"""

from __future__ import annotations

import math

import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from advcore.errors import AdvcoreError
from advcore.model import Run

__all__ = ["CAUSAL_ORDER", "THRESHOLD", "Card", "DetectorSpec", "Finding", "FindingStage", "Knob", "NotEvaluable",
           "Severity", "Stage", "first_of_checks"]

Severity = Literal["info", "warn", "error"]
#: a detector's stage; "R/U" for one whose findings say which of the two (DEAD_FROM_START)
Stage = Literal["R", "A", "T", "U", "R/U", "any"]
#: the stage of one finding: always one
FindingStage = Literal["R", "A", "T", "U", "any"]
#: the stages in causal order, the signal's path from the rewards to the optimizer step ("any" first: a
#: non-finite value can stop every stage)
CAUSAL_ORDER: tuple[FindingStage, ...] = ("any", "R", "A", "T", "U")
_ID = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")


@dataclass(frozen=True, slots=True)
class Knob:
    """A tunable threshold of a detector."""

    name: str
    default: float | int
    help: str
    #: lower and upper bounds, inclusive; None for unbounded
    low: float | None = None
    high: float | None = None
    integer: bool = False
    #: why this default: its calibration source (the seed card, a paper, the real logs), for the card
    why: str = ""

    def validate(self, value: Any, detector: str) -> float | int:
        """``value`` as this knob's type, or an AdvcoreError naming ``ID.knob``."""
        where = f"{detector}.{self.name}"
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise AdvcoreError(f"`{where}` must be a number, got {value!r}") from None
        if not math.isfinite(number):  # a NaN bound would switch the detector off without a word
            raise AdvcoreError(f"`{where}` must be a finite number, got {value!r}")
        if self.integer:
            if number != int(number):
                raise AdvcoreError(f"`{where}` must be an integer, got {value!r}")
            number = int(number)
        if (self.low is not None and number < self.low) or (self.high is not None and number > self.high):
            raise AdvcoreError(f"`{where}` must be within [{self.low}, {self.high}], got {value!r}")
        return number


#: The evidence key of the value a detector compared the series ``evidence["metric"]`` against to fire (a
#: level it fell below or rose above); a report draws it on that series.
THRESHOLD = "threshold"


#: The evidence key of a finding whose condition already held at the first logged step.
BEGAN_BEFORE_LOG = "already_low_at_first_logged_step"


@dataclass(frozen=True, slots=True)
class Finding:
    """What a detector concluded about a run."""

    id: str
    severity: Severity
    stage: FindingStage
    onset_step: int | None
    evidence: dict[str, Any]
    message: str
    what_to_try: tuple[str, ...] = ()
    #: the slice of the samples the finding is about (``"task=open_drawer"``), None for the whole run
    slice: str | None = None

    @property
    def began_before_log(self) -> bool:
        """The condition already held at the first logged step: it began at or before ``onset_step``, the
        log's start (an excerpt of a run, or a log that begins after a resume), so the step it began is
        not known (the evidence key :data:`BEGAN_BEFORE_LOG`)."""
        return bool(self.evidence.get(BEGAN_BEFORE_LOG))

    def to_json(self) -> dict[str, Any]:
        """The finding as SPEC section 9 spells it (``slice`` only on a per-slice finding)."""
        out: dict[str, Any] = {
            "id": self.id,
            "severity": self.severity,
            "stage": self.stage,
            "onset_step": self.onset_step,
            "evidence": self.evidence,
            "message": self.message,
            "what_to_try": list(self.what_to_try),
        }
        if self.slice is not None:
            out["slice"] = self.slice
        return out


@dataclass(frozen=True, slots=True)
class NotEvaluable:
    """A detector that could not run for lack of metrics."""

    id: str
    #: what it lacks, each item needed (an item's own alternatives are inside it)
    needs: tuple[str, ...]

    def describe(self) -> str:
        """``"ID: needs A and B"``: "and" between the items, never a bare comma (read as a choice)."""
        return f"{self.id}: needs {' and '.join(self.needs)}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "needs": list(self.needs)}


Outcome = Finding | NotEvaluable | None


def first_of_checks(hits: Sequence[tuple[str, Finding]]) -> Finding | None:
    """For a detector that tries several checks in order: the finding of the first check that fired,
    naming the others that fired in ``evidence["also"]``; None when none fired."""
    if not hits:
        return None
    first = hits[0][1]
    if len(hits) > 1:
        first = replace(first, evidence={**first.evidence, "also": [name for name, _ in hits[1:]]})
    return first


@dataclass(frozen=True, slots=True)
class Card:
    """The prose of a detector's card, in Markdown; :func:`advcore.detectors.cards.render_card` adds
    the parts its :class:`DetectorSpec` holds (severity, stage, key metrics, knobs, what to try).

    Each text is dedented and stripped of surrounding blank lines, so that it can be written as an
    indented triple-quoted string in the detector's module.
    """

    #: the card's title after the ID: what the bad pattern means for the run
    tagline: str
    #: "What is happening": the failure and why it matters
    happening: str
    #: "What it looks like in the recording": the metrics' shape
    looks_like: str
    #: "How the detector decides": the rule, its windows and its evidence
    decides: str
    #: "Related detectors"
    related: str
    #: after the key metrics on the card: proxies or alternatives the spec's tuple cannot say
    key_metrics_note: str = ""
    #: after the knob table (or instead of it, for a detector without knobs): calibration as a whole
    knobs_note: str = ""

    def __post_init__(self) -> None:
        for name in ("tagline", "happening", "looks_like", "decides", "related", "key_metrics_note", "knobs_note"):
            object.__setattr__(self, name, textwrap.dedent(getattr(self, name)).strip("\n"))


@dataclass(frozen=True, slots=True)
class DetectorSpec:
    """The frozen description of one detector."""

    id: str
    severity: Severity
    stage: Stage
    summary: str
    key_metrics: tuple[str, ...]
    fn: Callable[[Run, Mapping[str, float | int]], Outcome]
    knobs: tuple[Knob, ...] = field(default=())
    #: the remedies the findings carry, shown on the card under "What to try"
    what_to_try: tuple[str, ...] = ()
    #: for a detector whose findings carry one list per case: (case, remedies) pairs, instead of what_to_try
    what_to_try_cases: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: the remedies for an environment run (a control or game task's episodes, not a language model's
    #: completions: :func:`advcore.detectors._reward.environment_run`), in place of a finding's own there
    what_to_try_control: tuple[str, ...] = ()
    card: Card | None = None

    def __post_init__(self) -> None:
        if not _ID.match(self.id):
            raise ValueError(f"detector ID {self.id!r} is not UPPER_SNAKE")
        for knob in self.knobs:
            knob.validate(knob.default, self.id)

    @property
    def module(self) -> str:
        """The module that holds the detector's code and card (``fn`` may be a ``functools.partial``
        that gives the detector its context)."""
        return str(getattr(self.fn, "func", self.fn).__module__)

    def defaults(self) -> dict[str, float | int]:
        return {k.name: k.default for k in self.knobs}

    def resolve(self, overrides: Mapping[str, Any]) -> dict[str, float | int]:
        """Defaults updated with validated overrides; an unknown knob raises naming it."""
        by_name = {k.name: k for k in self.knobs}
        out = self.defaults()
        for name, value in overrides.items():
            if name not in by_name:
                known = ", ".join(by_name) or "none"
                raise AdvcoreError(f"`{self.id}.{name}` is not a knob of {self.id} (its knobs: {known})")
            out[name] = by_name[name].validate(value, self.id)
        return out
