"""The detector registry and the function that runs detectors on a run (SPEC section 6)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable
from advcore.errors import AdvcoreError
from advcore.ingest import Run

__all__ = ["REGISTRY", "DetectorSpec", "Finding", "Knob", "NotEvaluable", "parse_settings", "run_detectors"]

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


def run_detectors(
    run: Run,
    *,
    only: Iterable[str] = (),
    skip: Iterable[str] = (),
    settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[list[Finding], list[NotEvaluable]]:
    """Run the selected detectors; returns the findings and the detectors that could not run."""
    only, skip, settings = list(only), list(skip), dict(settings or {})
    _check_ids(only, "only")
    _check_ids(skip, "skip")
    _check_ids(settings, "set")
    findings: list[Finding] = []
    missing: list[NotEvaluable] = []
    for det_id, spec in REGISTRY.items():
        if (only and det_id not in only) or det_id in skip:
            continue
        outcome = spec.fn(run, spec.resolve(settings.get(det_id, {})))
        if isinstance(outcome, Finding):
            findings.append(outcome)
        elif isinstance(outcome, NotEvaluable):
            missing.append(outcome)
    return findings, missing


# The seed detectors (seed card 000) and DEAD_FROM_START; imported here so that they register.
from advcore.detectors import adv_collapse, dead_from_start, degenerate_groups, reward_std_death  # noqa: E402

_register(adv_collapse.SPEC, degenerate_groups.SPEC, reward_std_death.SPEC, dead_from_start.SPEC)
