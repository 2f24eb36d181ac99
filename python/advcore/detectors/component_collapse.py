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

* **pinned**: its per-step mean is exactly its run minimum on at least ``pinned_share`` (0.75) of its points,
  over the run and in the late window, while another judged component rose by more than ``traded_z``
  standard errors (h267's pose reward at its clamp floor while format bonuses rise); onset: its first point
  at the floor; or

* **traded**: its late mean lies below its early mean by at least ``traded_share`` (0.5) x the early
  mean's size and by more than ``traded_z`` (3) standard errors of the two windows' means, while
  another judged component rose by more than ``traded_z`` standard errors (the policy gave up one
  component for another: h161-tunix-grpo-gemma3-1b-g8-lr1e5-correctness-traded-for-format, check_answer
  0.74 -> 0.345 while both format rewards rose); not a penalty (a component never above 0), whose growth
  is the price of what the others reward; onset: after the highest point of its level (trailing
  median over a tenth of the run, at least 5 points) before the late window, the first of ``sustain``
  points of that level at or below the middle of the two means;

while the total holds: the late mean of ``reward_mean`` is at least its early mean minus
``hold_tol`` (0.2) x its span (``max(hi - lo, |hi|, |lo|)`` of the reward means). KL spike: the
largest ``kl`` over the ``2 x sustain`` points from the onset is at least ``kl_spike`` (5) x the
median ``kl`` before the onset (>= 3 points) and at least 0.01; then the message says "possible
reward hacking".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from advcore.detectors._base import Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import TIE_EPS, Series, aligned, metric, onset_index, rolling_level
from advcore.model import Run

__all__ = ["SPEC", "components", "detect"]

ID = "COMPONENT_COLLAPSE"

#: A KL below this is too small to call a spike, whatever its ratio.
KL_MIN = 0.01

WHAT_TO_TRY = (
    "Read rollouts from around the onset: does the policy satisfy the easy component (format, length, a keyword) "
    "while failing the one that matters?",
    "Re-weight the components, or gate the easy ones on the hard one (a format bonus only when the answer parses), "
    "so that the total cannot hold without the task.",
    "With a KL spike, the policy found a shortcut: raise the KL coefficient, lower the learning rate, and check the "
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


def _window_error(c: Series) -> float:
    """The standard error of the difference of the early and late window means of ``c``."""
    early, late = c.early(), c.late()
    return math.sqrt(statistics.pvariance(early) / len(early) + statistics.pvariance(late) / len(late))


def _traded(c: Series, others: list[Series], k: Mapping[str, float | int]) -> _Collapse | None:
    if max(c.values) <= 0.0:
        # a penalty (never above 0) that grows as another term rises is the price of the behaviour the
        # reward asks for, not a skill given up (h240-rslrl-legged-gym-go1-frozen-actor-rear-hip-residual-
        # finetune-holds-plateau: action_rate -0.18 -> -0.66 as episodes lengthen and tracking rises)
        return None
    early_mean, late_mean = c.early_mean(), c.late_mean()
    drop, error, z = early_mean - late_mean, _window_error(c), float(k["traded_z"])
    if not (drop > z * error and drop >= float(k["traded_share"]) * abs(early_mean) and drop > 0):
        return None
    rose = [o.name for o in others if o.late_mean() - o.early_mean() > z * _window_error(o)]
    if not rose:
        return None
    w = max(5, len(c) // 10)
    level = rolling_level(c, c.name, w).values
    middle = (early_mean + late_mean) / 2
    # from the level's highest point before the late window (a component still rising early starts low)
    peak = max(range(len(c) - len(c.late())), key=level.__getitem__)
    after = onset_index(level[peak:], lambda v: v <= middle, int(k["sustain"]))
    if after is None:
        return None
    idx = peak + after
    names = " and ".join(r.removeprefix("reward/") for r in rose)
    text = (f"reward component {c.name.removeprefix('reward/')} fell from {early_mean:.3g} early to {late_mean:.3g} "
            f"late ({100 * drop / abs(early_mean) if early_mean else 100:.0f} % of its early level) as {names} rose")
    return _Collapse(c.name, "traded", idx, c, {"early_mean": early_mean, "late_mean": late_mean,
                                                "drop_z": drop / error if error > 0 else math.inf, "rose": rose,
                                                "run_min": min(c.values), "run_max": max(c.values)}, text)


def _pinned(c: Series, others: list[Series], k: Mapping[str, float | int]) -> _Collapse | None:
    lo = min(c.values)
    at_floor = [v - lo <= TIE_EPS * max(1.0, abs(lo)) for v in c.values]
    late = at_floor[len(c) - len(c.late()):]
    share, late_share = sum(at_floor) / len(c), sum(late) / len(late)
    if min(share, late_share) < float(k["pinned_share"]):
        return None
    rose = [o.name for o in others if o.late_mean() - o.early_mean() > float(k["traded_z"]) * _window_error(o)]
    if not rose:
        return None
    idx = at_floor.index(True)
    names = " and ".join(r.removeprefix("reward/") for r in rose)
    text = (f"reward component {c.name.removeprefix('reward/')} sits exactly at its floor {lo:.3g} on "
            f"{100 * share:.0f} % of the steps ({100 * late_share:.0f} % late), where it tells no sample apart, as "
            f"{names} rose")
    return _Collapse(c.name, "pinned", idx, c, {"floor_share": share, "late_floor_share": late_share, "rose": rose,
                                                "early_mean": c.early_mean(), "late_mean": c.late_mean(),
                                                "run_min": lo, "run_max": max(c.values)}, text)


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
    judged = [c for c in comps if len(c) >= int(knobs["min_points"]) and 0 < max(c.values) - min(c.values)
              and max(c.values) - min(c.values) >= float(knobs["relevance"]) * t_width]
    found: list[_Collapse] = []
    for c in judged:
        others = [o for o in judged if o is not c]
        hit = _fell(c, knobs) or _silent(run, c, knobs) or _pinned(c, others, knobs) or _traded(c, others, knobs)
        if hit is not None:
            found.append(hit)
    if not found:
        return None
    order = {"fell": 0, "silent": 1, "pinned": 2, "traded": 3}
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


CARD = Card(
    tagline="one reward component died while the total held",
    happening="""
        The reward is a sum of components (format, correctness, length, penalties). The total can hold
        or rise while one component collapses: the policy earns the easy parts and gives up the one that
        matters (or a component never tells samples apart, so every advantage comes from the others).
        When the collapse comes with a KL spike, the policy moved quickly to a new behaviour that games
        the remaining components: possible reward hacking.
    """,
    looks_like="""
        A per-component curve (TRL `rewards/<fn>/mean`, verl `reward_extra_info/<name>`) falling to its
        floor and freezing there while `reward` stays level; or a component whose per-batch std (TRL
        `rewards/<fn>/std`) is 0 on the steps where `reward_std` is not; sometimes `kl` jumping at the
        same step.
    """,
    decides="""
        Components: the `reward/<name>` columns minus any that equal `reward_mean` at every step (a logged
        total); at least two, else not evaluable. Judged on runs with at least `min_points` logged points
        and components whose range (max − min of the per-step mean) is at least `relevance` × the range
        of `reward_mean`. A component has collapsed when

        - **fell**: its late-window mean (last 20 %) is within `pin_tol` × its range of its run minimum,
          the late values move by at most that much, and its early-window mean was at least `moved` × its
          range higher; onset: the first of `sustain` consecutive points at the floor; or
        - **silent** (needs `reward_std/<name>`): on the steps where the total has spread (`reward_std` or
          `reward_std_within` > 1e-6; at least `sustain` of them) its std is ≤ 1e-6 on at least
          `silent_frac` of them and its late mean is below its maximum (a component saturated at its
          ceiling is a learned skill, not a collapse); onset: the first such step; or
        - **pinned**: its per-step mean is exactly its run minimum on at least `pinned_share` of the points,
          over the run and in the late window, while another judged component rose by more than `traded_z`
          standard errors of its window means (a task reward clamped at its floor while format bonuses
          carry every advantage); onset: its first point at the floor; or
        - **traded**: its late mean is below its early mean by at least `traded_share` × the early mean's
          size and by more than `traded_z` standard errors of the two windows' means, while another judged
          component rose by more than `traded_z` standard errors (one component given up for another;
          not a penalty, a component never above 0, whose growth is the price of what the others reward);
          onset: after the highest point of its level (trailing median over a tenth of the run, at least 5
          points) before the late window, the first of `sustain` points of that level at or below the
          middle of the two means;

        and the total holds: late mean of `reward_mean` ≥ early mean − `hold_tol` × its span
        (max(hi − lo, |hi|, |lo|) of the reward means). KL spike:
        the largest `kl` over the `2 × sustain` points from the onset is ≥ `kl_spike` × the median `kl`
        before the onset (≥ 3 points) and ≥ 0.01; the message then says "possible reward hacking".
        A component that rises to its ceiling and stays there (a format reward learned) is never flagged.
    """,
    knobs_note="""
        Calibration: fires on trl-dapo-vlm-120531 (mdi_reward, fell, onset at log point 10 = step 100; no `kl`
        logged), unsloth-qwen3-vl-8b (correctness, silent) and h161-tunix-grpo-gemma3-1b-g8-lr1e5 (check_answer,
        traded: 0.74 → 0.345 while both format rewards rise; its eval correctness falls 1.42 → 0.23). Quiet on chaos-economy-grpo (the
        contrast: six components, none collapsed while the total oscillates), unsloth-llama32-3b
        (all components rise), unsloth-qwen3-4b, gpt-oss-20b, the MAPPO per-agent rewards, and on every
        healthy run. Runs with one component (legaloom-*, csd-pilot) are not evaluable.
    """,
    related="""
        REWARD_STD_DEATH sees the total's spread, not a component's; REWARD_SATURATION when a format
        component is all that is left at the ceiling; ENTROPY_COLLAPSE and UPDATE_SUPPRESSED often
        accompany a hacked reward.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="R",
    summary="one reward component collapses while the total holds; with a KL spike, reward hacking",
    key_metrics=("reward/<name>", "reward_std/<name>", "reward_mean", "kl"),
    fn=detect,
    knobs=(
        Knob("relevance", 0.1, "judge a component whose range is at least this fraction of the total reward's range",
             low=0.0, high=10.0,
             why="Ignore components too small to matter: chaos-economy's `news_alpha` (range 0.10) and `risk` "
                 "(0.01) against a total range of 3.24 are 3 % and 0.3 %; trl-dapo-vlm's `think_format` (0.15 of "
                 "2.5) is 6 %."),
        Knob("pin_tol", 0.05, "late values within this fraction of the component's range of its minimum, and moving "
             "by no more, = pinned at the floor", low=0.0, high=0.5,
             why="trl-dapo-vlm-120531's `mdi_reward` sits at exactly −1.0 from log point 10 to the end (range 0.9)."),
        Knob("moved", 0.25, "the early mean must be at least this fraction of the range above the floor (a fall, "
             "not a component that was always there)", low=0.0, high=1.0,
             why="mdi_reward: −0.42 early vs −1.0 late, 64 % of its range. A component at 0 from the start "
                 "(llama-3.1 userrun's `strict_format`) is constant and ignored."),
        Knob("silent_frac", 0.9, "component std 0 on at least this share of the steps where the total has spread = "
             "silent", low=0.0, high=1.0,
             why="unsloth-qwen3-vl's `correctness_reward_func` has std 0 on all 5 steps where `reward_std` > 0 (and "
                 "on all 60 steps): all the contrast comes from the formatting reward."),
        Knob("pinned_share", 0.75, "a component exactly at its run minimum on at least this share of its points, "
             "over the run and in the late window, while another rises = pinned", low=0.0, high=1.0,
             why="h267-handwritten-grpo-qwen25vl7b-ultrasound-probe-pose-task-reward-pinned-at-floor-format-only-gains: "
                 "the pose reward sits at its clamp floor -3 on 78 % of 292 rounds (78 % of the last fifth) while the "
                 "keyword and layout bonuses rise to 0.5."),
        Knob("hold_tol", 0.2, "the total holds when its late mean is at least its early mean minus this fraction "
             "of its span (max(hi - lo, |hi|, |lo|))", low=0.0, high=1.0,
             why="trl-dapo-vlm's total goes 2.74 → 2.38 (10 % of its span 3.7) while mdi_reward loses 0.58."),
        Knob("traded_share", 0.5, "a component traded away has lost at least this share of its early mean's size",
             low=0.0, high=1.0,
             why="h161 tunix g8 lr 1e-5: check_answer lost 53 % (check_numbers 31 %, not flagged). On the 490 "
                 "calibration runs present on 2026-12-03, the other components that fell by 30 % or more with the "
                 "total held had no component rising beside them (trl-dapo-vlm's mdi penalty, chaos-economy's "
                 "diversity penalty)."),
        Knob("traded_z", 3.0, "the fall of the traded component and the rise of another exceed this many standard "
             "errors of the early and late window means", low=0.0,
             why="check_answer's fall is 5.5 standard errors over 672-point windows; chaos-economy's diversity "
                 "penalty 3.2."),
        Knob("kl_spike", 5.0, "KL after the onset at least this multiple of its median before = spike", low=1.0,
             why="A KL jump of 5× its earlier median (and ≥ 0.01) at the onset = spike."),
        Knob("min_points", 20, "fewest logged points to judge (a late window of 3 cannot tell pinned from quiet)",
             low=6, integer=True,
             why="gui-cursor-verl-grpo (healthy, 10 points) has components that fall to 0 (`false_move` 0.31 → "
                 "0.009: rates of mistakes, not rewards); 3-point windows cannot tell a collapse from a good trend."),
        Knob("sustain", 5, "consecutive logged points at the floor for the onset estimate", low=1, integer=True,
             why="As the seed card."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
