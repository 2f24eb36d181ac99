"""The detector registry and the function that runs detectors on a run (SPEC section 6)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from advcore.detectors._base import CAUSAL_ORDER, THRESHOLD, Card, DetectorSpec, Finding, Knob, NotEvaluable
from advcore.detectors._evidence import GROUP_BASELINE, PER_SAMPLE
from advcore.detectors._reward import environment_run
from advcore.detectors._slices import GROUP_DETECTORS, SLICE_DETECTORS, SliceView, group_views, slice_views, sliced
from advcore.detectors._windows import MIN_WINDOW
from advcore.errors import AdvcoreError
from advcore.model import Run

__all__ = ["CAUSAL_ORDER", "GROUP_BASELINE", "PER_SAMPLE", "REGISTRY", "THRESHOLD", "Card", "DetectorSpec", "Finding", "Knob",
           "NotEvaluable", "environment_run", "parse_settings", "phases", "run_detectors"]

#: Every detector by ID, in catalog order. Detector modules add their SPEC here.
REGISTRY: dict[str, DetectorSpec] = {}


def _register(*specs: DetectorSpec) -> None:
    for spec in specs:
        if spec.id in REGISTRY:
            raise ValueError(f"detector {spec.id} registered twice")
        REGISTRY[spec.id] = spec


def parse_settings(items: Iterable[str]) -> dict[str, dict[str, str]]:
    """``["ADV_COLLAPSE.collapse_below=0.05", ...]`` -> ``{"ADV_COLLAPSE": {"collapse_below": "0.05"}}``."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        target, sep, value = item.partition("=")
        det, dot, knob = target.strip().partition(".")
        if not sep or not dot or not knob:
            raise AdvcoreError(f"`--set {item}`: expected ID.knob=value, e.g. ADV_COLLAPSE.collapse_below=0.05")
        out.setdefault(det, {})[knob] = value.strip()
    return out


def _check_ids(ids: Iterable[str], what: str) -> None:
    for i in ids:
        if i not in REGISTRY:
            raise AdvcoreError(f"`{what}`: unknown detector {i!r} (known: {', '.join(REGISTRY)})")


def phases(run: Run) -> list[tuple[int, Run]]:
    """The run split at its curriculum phases (steps restarting: a ``phase`` column with more than
    one value), each part a run of its own with its phase number (from 0); ``[]`` for a run without
    phases. A part of fewer than
    ``2 x MIN_WINDOW`` steps (no early and late window apart) is an aborted start, not a phase, and is
    not judged alone (h113-bitnet-grpo-g2-gsm8k-tied-groups: restarts of 2 and 3 steps, reward 0, before
    the 201-step run); it is still part of the whole run."""
    frame = run.frame
    if "phase" not in frame.columns or frame["phase"].drop_nulls().n_unique() < 2:
        return []
    return [(i, replace(run, frame=part)) for i, part in enumerate(frame.partition_by("phase", maintain_order=True))
            if part.height >= 2 * MIN_WINDOW]


def run_detectors(
    run: Run,
    *,
    only: Iterable[str] = (),
    skip: Iterable[str] = (),
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    slices: bool = True,
) -> tuple[list[Finding], list[NotEvaluable]]:
    """Run the selected detectors; returns the findings and the detectors that could not run.

    A run with curriculum phases (each phase a separate ``trainer.train()`` whose steps restart)
    is judged as a whole and phase by phase, each phase with its own early and late windows: a
    phase that collapses and a later one that recovers would otherwise average out. A detector
    reports its whole-run finding when it has one, else its finding in the earliest flagged
    phase; ``evidence["phases_flagged"]`` lists every phase (from 0) where it fired.

    With ``slices`` (the default), a run whose samples carry slice labels (:attr:`Run.slices`) is also
    judged slice by slice by the detectors of :data:`advcore.detectors._slices.SLICE_DETECTORS`
    (:func:`advcore.detectors._slices.slice_views` says which slices have enough samples); those
    findings come after the whole run's and name their slice (:attr:`Finding.slice`).
    """
    only, skip, settings = list(only), list(skip), dict(settings or {})
    _check_ids(only, "only")
    _check_ids(skip, "skip")
    _check_ids(settings, "set")
    parts = phases(run)
    findings: list[Finding] = []
    missing: list[NotEvaluable] = []
    for det_id, spec in REGISTRY.items():
        if (only and det_id not in only) or det_id in skip:
            continue
        knobs = spec.resolve(settings.get(det_id, {}))
        outcome = spec.fn(run, knobs)
        if isinstance(outcome, NotEvaluable):
            missing.append(outcome)
            continue
        flagged = [(i, f) for i, part in parts if isinstance(f := spec.fn(part, knobs), Finding)]
        if outcome is None and flagged:
            outcome = flagged[0][1]
        if isinstance(outcome, Finding):
            if flagged:
                outcome = replace(outcome, evidence={**outcome.evidence, "phases_flagged": [i for i, _ in flagged]})
            if spec.what_to_try_control and environment_run(run):
                outcome = replace(outcome, what_to_try=spec.what_to_try_control)
            findings.append(outcome)
    if slices and run.slices is not None:
        findings.extend(_slice_findings(run, only, skip, settings, {f.id for f in findings}))
    views = group_views(run) if slices else []
    if views:
        found, judged, lacking = _group_findings(views, {n.id for n in missing}, settings)
        findings.extend(found)
        missing = [lacking.get(n.id, n) for n in missing if n.id not in judged]
    return findings, missing


def _group_findings(views: list[SliceView], unjudged: set[str], settings: Mapping[str, Mapping[str, Any]]
                    ) -> tuple[list[Finding], set[str], dict[str, NotEvaluable]]:
    """The findings of :data:`GROUP_DETECTORS` that the whole run could not judge (``unjudged``) on each agent
    group of a multi-agent run (:func:`advcore.detectors._slices.group_views`), the detectors that judged some
    group, and for the others the first group's outcome (it names what the group's metrics lack)."""
    out: list[Finding] = []
    judged: set[str] = set()
    lacking: dict[str, NotEvaluable] = {}
    for view in views:
        for det_id in GROUP_DETECTORS:
            if det_id not in unjudged:
                continue
            spec = REGISTRY[det_id]
            outcome = spec.fn(view.run, spec.resolve(settings.get(det_id, {})))
            if isinstance(outcome, NotEvaluable):
                lacking.setdefault(det_id, outcome)
                continue
            judged.add(det_id)
            if isinstance(outcome, Finding):
                if spec.what_to_try_control and environment_run(view.run):
                    outcome = replace(outcome, what_to_try=spec.what_to_try_control)
                out.append(sliced(outcome, view, False))
    return out, judged, lacking


def _slice_findings(run: Run, only: list[str], skip: list[str], settings: Mapping[str, Mapping[str, Any]],
                    fired: set[str]) -> list[Finding]:
    views, _ = slice_views(run)
    out: list[Finding] = []
    for view in views:
        for det_id in SLICE_DETECTORS:
            if (only and det_id not in only) or det_id in skip or det_id not in REGISTRY:
                continue
            spec = REGISTRY[det_id]
            outcome = spec.fn(view.run, spec.resolve(settings.get(det_id, {})))
            if isinstance(outcome, Finding):
                out.append(sliced(outcome, view, det_id in fired))
    return out


# The seed detectors (seed card 000) and DEAD_FROM_START; imported here so that they register.
from advcore.detectors import adv_collapse, dead_from_start, degenerate_groups, reward_std_death  # noqa: E402

_register(adv_collapse.SPEC, degenerate_groups.SPEC, reward_std_death.SPEC, dead_from_start.SPEC)

# The R-stage detectors on the reward level, its components and truncation (SPEC section 6).
from advcore.detectors import component_collapse, reward_floor, reward_saturation, truncation_reward  # noqa: E402

_register(reward_saturation.SPEC, reward_floor.SPEC, component_collapse.SPEC, truncation_reward.SPEC)

# The A/U-stage detectors and NONFINITE (SPEC section 6).
from advcore.detectors import (  # noqa: E402
    baseline_broken,
    entropy_collapse,
    nonfinite,
    update_suppressed,
    update_unstable,
)

# The T-stage detectors and REWARD_MISSING, on per-sample evidence (advcore.reference.step_checks).
from advcore.detectors import (  # noqa: E402
    adv_reward_decorrelation,
    grouping_error,
    noise_amplification,
    precision_loss,
    reward_missing,
)

_T_STAGE = (reward_missing.SPEC, noise_amplification.SPEC, grouping_error.SPEC, adv_reward_decorrelation.SPEC,
            precision_loss.SPEC)
_AU_STAGE = (baseline_broken.SPEC, update_suppressed.SPEC, update_unstable.SPEC, entropy_collapse.SPEC)
# NONFINITE passes a finite run only when another detector reads one of its metrics
_READ = frozenset(m for spec in (*REGISTRY.values(), *_AU_STAGE, *_T_STAGE) for m in spec.key_metrics)
_register(nonfinite.spec(_READ), *_AU_STAGE)
_register(*_T_STAGE)

# The accuracy filter's accounting (SimpleVLA-RL, DAPO-style dynamic sampling): starvation and tasks never trained.
from advcore.detectors import always_filtered, filter_starvation  # noqa: E402

_register(filter_starvation.SPEC, always_filtered.SPEC)
