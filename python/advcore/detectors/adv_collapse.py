"""ADV_COLLAPSE (warn, stage T): the advantages had spread and lost it (seed card 000).

Rule: the late-window mean of ``adv_std`` (advantage units; ~1 under group/batch normalisation)
is below ``collapse_below`` (0.1) while the early-window mean was above ``healthy_early`` (0.5);
or the series ends in a stretch of at least ``sustain`` (5) points below it that is longer than any
earlier one (:func:`advcore.detectors._windows.held_since`; not on a 0/1 per-step proxy), so that a
monitor reports a collapse ``sustain`` steps after it began instead of once the late window has
moved past it; the onset is the first of ``sustain`` consecutive logged points below ``collapse_below``. A run
whose advantages were never healthy is left to DEAD_FROM_START (the healthy-early guard). Without
``adv_std`` the SPEC section 4 proxies of :mod:`advcore.detectors._windows` are used and named in
``evidence["proxy"]``. Windows: first and last 20 % of the logged points.

Extension for advantages in reward units (``evidence["rule"] == "relative"``). Dr. GRPO, RLOO and
plain REINFORCE do not divide by a std, so their ``adv_std`` is a share of the reward spread (about
0.35 to 0.45 for 0/1 rewards in the lab) and never clears ``healthy_early``. When the seed rule does
not fire, a logged ``adv_std`` (not a proxy) whose early mean is at least ``healthy_early`` x the
early mean of the reward spread (``reward_std``, else ``reward_std_within``, else max - min) is
judged against its own early level: collapsed when the late mean is below ``collapse_below`` x the
early mean (a tenfold fall, stricter than the seed rule's fivefold 0.5 -> 0.1), with the onset the
first of ``sustain`` points below that cut. Normalised advantages are judged by the seed rule as
before.
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import THRESHOLD, Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import ADV_NEEDS, adv_signal, fmean, held_since, onset_index, plain, reward_spread
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "ADV_COLLAPSE"

WHAT_TO_TRY = (
    "Audit reward scaling/normalization first: the pipeline can compute rewards correctly and then flatten them on "
    "the way to the advantages.",
    "Check for saturation: if `reward_mean` sits at its ceiling, the fix is harder prompts, not advantage plumbing.",
    "Cross-check `zero_variance_group_frac` and `reward_std` to locate the collapse: per-group (curriculum "
    "problem), global reward (task exhausted) or advantages only (normalization bug between the two).",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate ADV_COLLAPSE on ``run`` with resolved ``knobs``."""
    s = adv_signal(run)
    if s is None:
        return NotEvaluable(ID, ADV_NEEDS)
    if not s.judgeable:
        return None
    below, healthy, sustain = float(knobs["collapse_below"]), float(knobs["healthy_early"]), int(knobs["sustain"])
    early, late = s.early_mean(), s.late_mean()
    # a per-step indicator (a 0/1 proxy) is too coarse for a stretch of a few points to mean anything
    coarse = s.name.startswith("1[")

    def held(cut: float) -> int | None:
        return None if coarse else held_since(s.values, lambda v: v < cut, sustain)

    rule, cut = "seed", below
    extra: dict[str, object] = {}
    since = held(below) if early > healthy and not late < below else None
    if not (early > healthy and (late < below or since is not None)):
        spread = None if s.proxy else reward_spread(run)
        if spread is None or not spread.judgeable:
            return None
        r_early = spread.early_mean()
        if not (r_early > 0 and early >= healthy * r_early):
            return None
        since = held(below * early) if not late < below * early else None
        if not (late < below * early or since is not None):
            return None
        rule, cut = "relative", below * early
        extra = {"reward_spread": spread.name, "reward_spread_early_mean": r_early, "cut": cut}
    idx = onset_index(s.values, lambda v: v < cut, sustain)
    if since is not None:
        now = fmean(s.values[since:])
        extra["held_since_step"] = s.steps[since]
        extra["mean_since"] = now
        said = (f"a mean of {early:.3g} over the first 20 % of logged steps to {now:.3g} over its last "
                f"{len(s) - since} points")
    else:
        said = f"{early:.3g} early to {late:.3g} late (means of the first and last 20 % of logged steps)"
    evidence: dict[str, object] = {
        "metric": s.name,
        "rule": rule,
        "early_mean": early,
        "late_mean": late,
        "collapse_below": below,
        "healthy_early": healthy,
        THRESHOLD: cut,
        **extra,
        **s.where(idx),
    }
    if s.proxy:
        evidence["proxy"] = s.name
    return Finding(
        ID, "warn", "T", s.step_at(idx), dict(evidence),
        f"Advantage spread ({plain(s.name)}) fell from {said}: the learning signal has "
        "vanished.",
        WHAT_TO_TRY,
    )


CARD = Card(
    tagline="the learning signal has vanished",
    happening="""
        Advantages are the actual learning signal of policy-gradient RL: the gradient for a sample is
        (roughly) advantage × ∇ log π(completion). If the standard deviation of the advantages across the
        batch goes to ~0, every sample says "you were exactly as good as expected" and the gradient
        vanishes. The loss keeps printing numbers and nothing is taught; reward curves can look stable
        throughout, because this failure lives one derivative away from what dashboards plot.

        Distinct causes with the same curve: a reward normalization/scale bug (differences squashed
        before the advantages), total reward saturation (everyone at the ceiling), or degenerate GRPO
        groups everywhere (see DEGENERATE_GROUPS).
    """,
    looks_like="""
        `adv_std` sliding from a healthy ~1.0 (≈1 by construction when group/batch normalization works
        and rewards vary) down to near zero and holding there; `adv_zero_frac` rising in parallel.
    """,
    decides="""
        Fires when the late-window mean of `adv_std` is below `collapse_below` while the early-window mean
        was above `healthy_early` (windows: first and last 20 % of the logged points, at least 3 each), or
        when the series ends in a stretch of at least `sustain` points below `collapse_below`, longer than
        any stretch below it before (`evidence["held_since_step"]`; not on the 0/1 per-step proxies, too
        coarse for a few points to mean anything). A late-window rule sees a collapse at step s only once
        that window lies mostly after s, about s / 4 steps later; inside a trainer the stretch reports it
        `sustain` steps after it began (the lab's `reward_scale` fault, onset 30: reported at delay 5 on
        every estimator instead of 6 to 8).
        The onset is the first of `sustain` consecutive logged points below `collapse_below`. A run that
        never had usable advantages is a setup problem the healthy-early guard refuses to misdiagnose
        (DEAD_FROM_START reports it).

        Without `adv_std` the SPEC section 4 proxies are used and named in `evidence["proxy"]`:

        | trainer logs | proxy | why the seed thresholds still apply |
        | --- | --- | --- |
        | verl `adv_max`, `adv_min` | `adv_max - adv_min` | range ≥ std, so the collapse test is conservative |
        | TRL `frac_reward_zero_std` | `sqrt(1 - zero_variance_group_frac)` | a normalized group has adv std ~1, a tied group 0 |
        | only `reward_std(_within)` | `1[reward_std > 1e-6]` per step | exact with one group per step (Unsloth), upper bound otherwise |

        A reward-derived proxy cannot tell a plumbing bug from a reward-side collapse; the diagnosis says so.

        **Extension: advantages in reward units** (`evidence["rule"] == "relative"`; the seed rule above is
        unchanged and is tried first, `evidence["rule"] == "seed"`; the stretch counts for it too). Dr. GRPO,
        RLOO and plain REINFORCE do
        not divide by a std: their `adv_std` is a share of the reward spread (0.35 to 0.45 for 0/1 rewards
        in the collapse lab) and never clears `healthy_early`, so the seed rule cannot see their collapse
        (the lab's `reward_scale` fault, rewards x 1e-8 before the advantage, went unflagged on all 6 Dr.
        GRPO and RLOO runs). When the seed rule does not fire and `adv_std` is logged (not a proxy), its
        early mean is compared with the early mean of the reward spread (`reward_std`, else
        `reward_std_within`, else `reward_max - reward_min`): if it is at least `healthy_early` x that
        spread (the advantages carried at least half the reward's spread), the run is judged against its
        own early level: collapsed when the late mean is below `collapse_below` x the early mean (a
        tenfold fall, stricter than the seed rule's 0.5 -> 0.1). The onset is the first of `sustain` points
        below that cut. The same knobs serve both rules. On the score card (`bench/score_card.py`) this
        takes `reward_scale` from 9/15 to 15/15 runs at the right stage, with no healthy run flagged.
    """,
    knobs_note="""
        On the real logs: no run with an `adv_std` or verl range has loaded yet; f1-strategist's proxy is
        0.028 early (never healthy), so the guard hands it to DEAD_FROM_START, as intended.
    """,
    related="""
        DEGENERATE_GROUPS and REWARD_STD_DEATH are the upstream views; if all three fire together, start
        from reward variance. If only this one fires (on a real `adv_std`), the bug is almost certainly in
        the reward → advantage plumbing. DEAD_FROM_START covers runs that never had signal.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="T",
    summary="the learning signal has vanished: advantage std went from healthy to ~0",
    key_metrics=("adv_std", "adv_zero_frac"),
    fn=detect,
    knobs=(
        Knob("collapse_below", 0.1, "late adv_std below this = collapsed", low=0.0,
             why="Seed card; ≙ 99 % tied groups under the TRL proxy."),
        Knob("healthy_early", 0.5, "early adv_std must have been above this", low=0.0,
             why="Seed card; ≙ < 75 % tied groups."),
        Knob("sustain", 5, "consecutive steps below threshold for the onset estimate", low=1, integer=True,
             why="Seed card."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
