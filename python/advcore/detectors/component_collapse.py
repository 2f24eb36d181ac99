"""COMPONENT_COLLAPSE (warn, stage R): one reward component collapses while the total holds; with
a KL spike at the same time, possible reward hacking.

Components are the ``reward/<name>`` columns (TRL ``rewards/<fn>/mean``, verl
``reward_extra_info/<name>``), minus any that equal ``reward_mean`` at every step (a logged
total); at least two are needed. A component is judged when its range over the run (max - min of
its per-step mean, reward units) is at least ``relevance`` (0.1) x the range of ``reward_mean``,
and the run has at least ``min_points`` (20) logged points. It has collapsed when either

* **fell**: its late-window mean (last 20 %) sits within ``pin_tol`` (0.05) x its range of its
  run minimum, its late values move by at most that much, and its early-window mean was at least
  ``moved`` (0.25) x its range higher (it fell to its floor and froze there); onset: the first of
  ``sustain`` (5) consecutive points within the tolerance of the minimum; or
* **silent** (needs ``reward_std/<name>``, TRL ``rewards/<fn>/std``): on the steps where the
  total reward has spread (``reward_std`` or ``reward_std_within`` > 1e-6; at least ``sustain`` of
  them), the component's std is <= 1e-6 on at least ``silent_frac`` (0.9) of them, and its late
  mean is below its run maximum (a component saturated at its ceiling is a learned skill, not a
  collapse): every advantage comes from the other components; onset: the first such step;

while the total holds: the late mean of ``reward_mean`` is at least its early mean minus
``hold_tol`` (0.2) x its span (``max(hi - lo, |hi|, |lo|)`` of the reward means). KL spike: the
largest ``kl`` over the ``2 x sustain`` points from the onset is at least ``kl_spike`` (5) x the
median ``kl`` before the onset (>= 3 points) and at least 0.01; then the message says "possible
reward hacking".
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import TIE_EPS, Series, aligned, metric, onset_index
from advcore.ingest import Run

__all__ = ["SPEC", "components", "detect"]

ID = "COMPONENT_COLLAPSE"

#: A KL below this is too small to call a spike, whatever its ratio.
KL_MIN = 0.01

WHAT_TO_TRY = (
    "Read rollouts from around the onset: does the policy satisfy the easy component (format, length, a keyword) "
    "while failing the one that matters?",
    "Re-weight the components, or gate the easy ones on the hard one (e.g. the format bonus only when the answer "
    "parses), so that the total cannot hold without the task.",
    "With a KL spike: the policy found a shortcut; raise the KL coefficient, lower the learning rate, and check the "
    "collapsed component's scorer for exploitable cases.",
    "A component that never separates samples (std 0 in every group) gives no advantage: make it denser (partial "
    "credit) or raise the group size.",
)


@dataclass(frozen=True, slots=True)
class _Collapse:
    name: str
    rule: str
    onset: int
    series: Series
    evidence: dict[str, object]
    #: what happened to the component, for the message
    text: str


def components(run: Run) -> list[Series]:
    """The ``reward/<name>`` series of ``run``, without those equal to ``reward_mean`` at every step."""
    total = metric(run, "reward_mean")
    out: list[Series] = []
    for name in sorted(c for c in run.metrics if c.startswith("reward/")):
        s = metric(run, name)
        if s is None:
            continue
        if total is not None:
            a, b, _ = aligned(s, total)
            if a and all(abs(x - y) <= 1e-9 * max(1.0, abs(y)) for x, y in zip(a, b, strict=True)):
                continue
        out.append(s)
    return out


def _fell(c: Series, k: Mapping[str, float | int]) -> _Collapse | None:
    lo, hi = min(c.values), max(c.values)
    width = hi - lo
    tol = float(k["pin_tol"]) * width
    late = c.late()
    early_mean, late_mean = c.early_mean(), c.late_mean()
    pinned = max(late) - min(late) <= tol and late_mean - lo <= tol
    if not (pinned and early_mean - late_mean >= float(k["moved"]) * width):
        return None
    idx = onset_index(c.values, lambda v: v - lo <= tol, int(k["sustain"]))
    if idx is None:
        return None
    text = (f"reward component {c.name.removeprefix('reward/')} fell from {early_mean:.3g} early to its floor "
            f"{lo:.3g} and stayed there")
    return _Collapse(c.name, "fell", idx, c, {"early_mean": early_mean, "late_mean": late_mean, "run_min": lo,
                                              "run_max": hi}, text)


def _silent(run: Run, c: Series, k: Mapping[str, float | int]) -> _Collapse | None:
    std = metric(run, "reward_std/" + c.name.removeprefix("reward/"))
    total = metric(run, "reward_std") or metric(run, "reward_std_within")
    if std is None or total is None:
        return None
    comp_std, total_std, idx = aligned(std, total)
    live = [(i, v) for i, v, t in zip(idx, comp_std, total_std, strict=True) if t > TIE_EPS]
    if len(live) < int(k["sustain"]):
        return None
    silent = [i for i, v in live if v <= TIE_EPS]
    share = len(silent) / len(live)
    if share < float(k["silent_frac"]) or not c.late_mean() < max(c.values) - float(k["pin_tol"]) * (
            max(c.values) - min(c.values)):
        return None
    first = std.keys()[silent[0]]
    onset = next(i for i, key in enumerate(c.keys()) if key >= first)
    text = (f"reward component {c.name.removeprefix('reward/')} never separates samples: its std is 0 on "
            f"{100 * share:.0f}% of the {len(live)} steps where the total reward has spread")
    return _Collapse(c.name, "silent", onset, c, {"live_steps": len(live), "silent_share": share,
                                                  "early_mean": c.early_mean(), "late_mean": c.late_mean(),
                                                  "run_min": min(c.values), "run_max": max(c.values)}, text)


def _kl_spike(run: Run, at: Series, onset: int, k: Mapping[str, float | int]) -> dict[str, object]:
    kl = metric(run, "kl")
    if kl is None:
        return {"kl": "not logged"}
    key = at.keys()[onset]
    keys = kl.keys()
    before = [v for kk, v in zip(keys, kl.values, strict=True) if kk < key]
    after = [v for kk, v in zip(keys, kl.values, strict=True) if kk >= key][: 2 * int(k["sustain"])]
    if len(before) < 3 or not after:
        return {"kl": "too few points around the onset"}
    base, peak = statistics.median(before), max(after)
    spike = peak >= float(k["kl_spike"]) * base and peak >= KL_MIN
    return {"kl_before_median": base, "kl_peak_after": peak, "kl_spike": spike}


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate COMPONENT_COLLAPSE on ``run`` with resolved ``knobs``."""
    total = metric(run, "reward_mean")
    comps = components(run)
    needs = (["reward_mean"] if total is None else []) + (
        ["reward/<name> for at least two reward components"] if len(comps) < 2 else [])
    if needs:
        return NotEvaluable(ID, tuple(needs))
    assert total is not None
    if len(total) < int(knobs["min_points"]) or not total.judgeable:
        return None
    t_lo, t_hi = min(total.values), max(total.values)
    t_width = t_hi - t_lo
    t_span = max(t_width, abs(t_hi), abs(t_lo))
    t_early, t_late = total.early_mean(), total.late_mean()
    if not t_late >= t_early - float(knobs["hold_tol"]) * t_span:
        return None
    found: list[_Collapse] = []
    for c in comps:
        if len(c) < int(knobs["min_points"]):
            continue
        width = max(c.values) - min(c.values)
        if width <= 0 or width < float(knobs["relevance"]) * t_width:
            continue
        hit = _fell(c, knobs) or _silent(run, c, knobs)
        if hit is not None:
            found.append(hit)
    if not found:
        return None
    order = {"fell": 0, "silent": 1}
    first = min(found, key=lambda h: (order[h.rule], h.series.keys()[h.onset]))
    kl = _kl_spike(run, first.series, first.onset, knobs)
    evidence: dict[str, object] = {
        "component": first.name,
        "rule": first.rule,
        **first.evidence,
        "total_early_mean": t_early,
        "total_late_mean": t_late,
        "collapsed": [h.name for h in found],
        **kl,
        **first.series.where(first.onset),
    }
    hold = "rose" if t_late > t_early else "held"
    message = f"The {first.text}, while the total reward {hold} ({t_early:.3g} early, {t_late:.3g} late)"
    if kl.get("kl_spike") is True:
        message += (f"; KL spiked at the same time ({kl['kl_before_median']:.3g} -> {kl['kl_peak_after']:.3g}): "
                    "possible reward hacking")
    if len(found) > 1:
        message += f" (also collapsed: {', '.join(h.name.removeprefix('reward/') for h in found if h is not first)})"
    return Finding(ID, "warn", "R", first.series.step_at(first.onset), evidence, message + ".", WHAT_TO_TRY)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="R",
    summary="one reward component collapses while the total holds; with a KL spike, reward hacking",
    key_metrics=("reward/<name>", "reward_std/<name>", "reward_mean", "kl"),
    fn=detect,
    knobs=(
        Knob("relevance", 0.1, "judge a component whose range is at least this fraction of the total reward's range",
             low=0.0, high=10.0),
        Knob("pin_tol", 0.05, "late values within this fraction of the component's range of its minimum, and moving "
             "by no more, = pinned at the floor", low=0.0, high=0.5),
        Knob("moved", 0.25, "the early mean must be at least this fraction of the range above the floor (a fall, "
             "not a component that was always there)", low=0.0, high=1.0),
        Knob("silent_frac", 0.9, "component std 0 on at least this share of the steps where the total has spread = "
             "silent", low=0.0, high=1.0),
        Knob("hold_tol", 0.2, "the total holds when its late mean is at least its early mean minus this fraction "
             "of its span (max(hi - lo, |hi|, |lo|))", low=0.0, high=1.0),
        Knob("kl_spike", 5.0, "KL after the onset at least this multiple of its median before = spike", low=1.0),
        Knob("min_points", 20, "fewest logged points to judge (a late window of 3 cannot tell pinned from quiet)",
             low=6, integer=True),
        Knob("sustain", 5, "consecutive logged points at the floor for the onset estimate", low=1, integer=True),
    ),
)
