"""UPDATE_SUPPRESSED (error, stage U): the batch carries signal but the policy update is ~0.

A logged point is *suppressed* when the advantage signal is present there (``adv_std`` or its
SPEC section 4 proxy, as ADV_COLLAPSE uses it, at or above ``signal_above`` (0.5): with
``zero_variance_group_frac`` that is at most 75 % of the groups tied, the level DEGENERATE_GROUPS
flags) and, at the same step (and phase), the update is not happening:

* ``grad_norm`` at or below ``grad_below`` (1e-06): no gradient reaches the parameters;
* ``kl`` with ``|kl|`` at or below ``kl_below`` (1e-9, i.e. exactly 0), judged only when
  ``grad_norm`` is not logged: the policy did not move. verl's ``actor/ppo_kl`` never counts: it
  is 0 by construction for one on-policy mini-batch per step (gui-cursor-verl-grpo: 0 at all 10
  steps while grad_norm is 3 to 8), and a KL to the reference starts at 0;
* ``clip_frac`` at or above ``clip_pinned`` (0.9): nearly every token is outside the PPO trust
  region, where the clipped objective has no gradient.

Fires when at least ``late_share`` (0.5) of the late window's points are suppressed and an onset
exists: the first of ``sustain`` (5) consecutive suppressed points (or a suppressed tail); not for a
``grad_norm`` of 0 at no more than ``TIED_MARGIN`` (0.2) above the late mean of ``zero_variance_group_frac``
(:func:`_tied_steps`: a trainer that logs one step's norm beside a tied share averaged since the last log). The
checks are tried in the order above; the first that fires is reported, the others are named in
``evidence["also"]``. A point where the signal is absent (every group tied) is not suppressed:
no update is then expected, and DEGENERATE_GROUPS or DEAD_FROM_START says why. Not evaluable
without any of the update metrics, or without an advantage signal (SB3 logs neither advantages
nor reward spread). A KL early stop is judged where the trainer logs it (``early_stop_frac``: the
share of a step's updates ended by the KL target, e.g. an ``early_stopped`` flag): at or above
``early_stop_share`` (0.9) the step's update is cut short, whatever the advantages carry (SB3's
``target_kl`` stop is only printed and is not seen). A Stable-Baselines3 log of ``NEVER_TRAINED_POINTS`` (20)
rollout summaries or more, some file of it holding two, with no ``train/`` key at all took no gradient step, and so
did, for most of its length, any log whose first update metric (a loss, a KL, a clip fraction, a gradient norm) comes
after 80 % of the reward's points (:func:`~advcore.detectors._windows.never_trained`): an error at the first logged step, whatever else is logged. When
the reward still rises (late mean above the early one by ``reward_rise`` (0.1) x the span of the reward means) the
finding is a warning, not an error, and says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from advcore.detectors._base import (
    THRESHOLD,
    Card,
    DetectorSpec,
    Finding,
    Knob,
    NotEvaluable,
    Outcome,
    Severity,
    first_of_checks,
)
from advcore.detectors._reward import SUCCESS_NOISE
from advcore.detectors._windows import (
    ADV_NEEDS,
    NO_GRADIENT,
    SB3_TRAIN_PREFIX,
    UPDATE_METRICS,
    MIN_WINDOW,
    Series,
    adv_signal,
    aligned,
    fmean,
    metric,
    never_trained,
    onset_index,
    running_peak,
    running_peak_ratio,
    step_noise,
    window_len,
)
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "UPDATE_SUPPRESSED"

#: Source keys of a KL that is 0 by construction for an on-policy mini-batch (not evidence of no update).
ON_POLICY_KL_KEYS = ("ppo_kl",)
#: Source keys of a KL between consecutive policies (the size of one update, SB3 ``approx_kl``): a fall
#: from a spike is no pin to a reference.
UPDATE_KL_KEYS = (*ON_POLICY_KL_KEYS, "approx_kl", "kl_step")

WHAT_TO_TRY = (
    "Check that the loss reaches the parameters: a detached tensor, a loss multiplied by an all-zero mask or "
    "coefficient, frozen or unattached LoRA adapters, a learning rate of 0, a skipped optimizer step.",
    "Check gradient clipping (a `max_grad_norm` far too small) and mixed precision (fp16 gradients underflowing to "
    "0, or every step skipped by the loss scaler after an overflow).",
    "With `clip_frac` pinned near 1, the rollout policy and the trained policy differ: stale rollouts, a failed "
    "weight sync between the inference engine and the trainer, or wrong old log-probabilities; inspect the "
    "importance ratio.",
    "If `grad_norm` is logged for one micro-step per logging interval, compare with the loss and the logging "
    "cadence before concluding.",
)


@dataclass(frozen=True, slots=True)
class _Check:
    name: str
    series: Series
    no_update: Callable[[float], bool]
    describe: str
    #: False for a check whose points mean "no update" whatever the advantages carry (the KL early stop)
    needs_signal: bool = True
    #: the level the series is judged against (``evidence["threshold"]``; None for a derived series)
    bar: float | None = None


def _relative(run: Run, name: str, drop: float, what: str) -> _Check | None:
    """``name`` at or below ``drop`` x the median of its own early window (judged only when that
    early level is positive and stands clear of noise around 0: a quarter or more of the early points
    at or below 0 is a signed estimator of a quantity that is 0 by construction, e.g. verl's
    ``actor/ppo_kl`` with one on-policy mini-batch per step, +-3e-4 around 0 in
    h55-verl-grpo-qwen3-4b-prompt-writer-slow-steady-csv)."""
    s = metric(run, name)
    if s is None or len(s) < 2 * MIN_WINDOW:
        return None
    early, window = s.early_median(), s.early()
    if not early > 0 or sum(v <= 0 for v in window) >= len(window) / 4:
        return None
    cut = drop * early
    return _Check(name, s, lambda v: v <= cut, f"{what} <= {drop:g} x its early median ({cut:.3g})", bar=cut)


#: The metric a check that is named otherwise reads.
_READ_AS = {"kl_pinned": "kl", "clip_kept": "grad_norm_clipped"}
#: The share of the late window's KL points (not their level) that must be pinned too.
PINNED_POINTS = 0.9
#: The KL's level is its trailing median over this many points (its peak over 5): pinned from the second
#: point at the reference. Over 5, the lab's ``kl_pin`` fault (the KL at 0.001 of its peak from step 30) was
#: reported inside a trainer 6 steps after its onset, one more than the detector's ``sustain``.
KL_LEVEL_POINTS = 3


def _late_points_pinned(kl: Series, ratio: Series, pin: float) -> bool:
    """Of the late window's points whose level is pinned (``ratio``, the level over its earlier peak,
    at or below ``pin``), ``PINNED_POINTS`` are pinned each alone too. A policy held at its reference
    stays there (the lab's ``kl_pin``: its late points at most 0.16 x the peak on every estimator and
    seed); a KL whose level is low only because it is heavy-tailed keeps leaving it
    (h156-trl-grpo-llama31-8b-sft-v1-base-learns: a level of 0.03 late after 0.25, a quarter of the
    points under that level above 0.05, one at 0.29, the reward rising from 3.5 to 5; its project's
    run 4 spikes to 0.87 on its way to a NaN). Judged on the pinned points only, so that the check
    reports a pin as soon as its level does, online as offline."""
    late = len(kl.late())
    peaks = running_peak(kl)
    held = [i for i in range(len(kl) - late, len(kl)) if abs(ratio.values[i]) <= pin]
    return bool(held) and sum(abs(kl.values[i]) <= pin * peaks[i] for i in held) >= PINNED_POINTS * len(held)


def _checks(run: Run, knobs: Mapping[str, float | int]) -> list[_Check]:
    grad_below, kl_below, pinned = float(knobs["grad_below"]), float(knobs["kl_below"]), float(knobs["clip_pinned"])
    drop, pin = float(knobs["drop_below"]), float(knobs["kl_pin_frac"])
    out: list[_Check] = []
    grad = metric(run, "grad_norm")
    if grad is not None:
        out.append(_Check("grad_norm", grad, lambda v: v <= grad_below, f"grad_norm <= {grad_below:g}",
                          bar=grad_below))
    # The update itself, where the trainer logs it: the step relative to the parameters, the gradient
    # after clipping, the KL of the update (second order in the step, hence drop squared).
    for name, factor, what in (("update_ratio", drop, "step norm / parameter norm"),
                               ("grad_norm_clipped", drop, "grad_norm after clipping"),
                               ("lr", drop, "the learning rate"),
                               ("kl_step", drop * drop, "KL of the update")):
        check = _relative(run, name, factor, what)
        if check is not None:
            out.append(check)
    clipped = metric(run, "grad_norm_clipped")
    if grad is not None and clipped is not None:  # the share of the gradient the clip lets through
        after, before, idx = aligned(clipped, grad)
        keep = [k for k, b in enumerate(before) if b > 0]
        if keep:
            kept = Series("grad_norm_clipped / grad_norm", tuple(clipped.steps[idx[k]] for k in keep),
                          tuple(clipped.phases[idx[k]] for k in keep) if clipped.phases else None,
                          tuple(after[k] / before[k] for k in keep), proxy=False)
            out.append(_Check("clip_kept", kept, lambda v: v <= drop,
                              f"grad_norm_clipped / grad_norm <= {drop:g} (the clip removes the gradient)"))
    kl = metric(run, "kl")
    source = run.sources.get("kl", "kl")
    to_reference = kl is not None and not any(k in source for k in ON_POLICY_KL_KEYS)
    if kl is not None and to_reference and grad is None:
        out.append(_Check("kl", kl, lambda v: abs(v) <= kl_below, f"|kl| <= {kl_below:g}"))
    if kl is not None and not any(k in source for k in UPDATE_KL_KEYS):
        # a peak within the estimate's own noise is none: a signed per-batch KL estimate of a policy that
        # barely moved swings around 0 (h113-bitnet-grpo-g2-gsm8k-tied-groups: -0.47 to 0.54 on its 38
        # updates with a KL coefficient of 0.01), and its level's highs are that noise
        peak_min = max(float(knobs["kl_pin_peak"]), SUCCESS_NOISE * step_noise(kl.values))
        ratio = running_peak_ratio(kl, "kl / earlier peak", min_peak=peak_min, level_points=KL_LEVEL_POINTS)
        if _late_points_pinned(kl, ratio, pin):
            out.append(_Check("kl_pinned", ratio, lambda v: abs(v) <= pin,
                              f"|kl to the reference| <= {pin:g} x its earlier peak (peak >= {peak_min:g})"))
    clip = metric(run, "clip_frac")
    if clip is not None:
        out.append(_Check("clip_frac", clip, lambda v: v >= pinned, f"clip_frac >= {pinned:g}", bar=pinned))
    stops = metric(run, "early_stop_frac")
    if stops is not None:
        cut = float(knobs["early_stop_share"])
        out.append(_Check("early_stop_frac", stops, lambda v: v >= cut,
                          f"the KL early stop ends >= {cut:g} of the updates", needs_signal=False))
    return out


def _reward_improving(run: Run, rise: float) -> dict[str, float] | None:
    """The early and late reward means when the late one exceeds the early one by at least ``rise`` x
    the span of the reward means (a run that learns), else None."""
    reward = metric(run, "reward_mean")
    if reward is None or not reward.judgeable:
        return None
    early, late = reward.early_mean(), reward.late_mean()
    span = max(reward.values) - min(reward.values)
    return {"early_mean": early, "late_mean": late} if span > 0 and late - early >= rise * span else None


#: What to try when the trainer never took a gradient step.
NEVER_TRAINED_TRY = (
    "Compare `learning_starts` with `total_timesteps`: an off-policy learner (DQN, QR-DQN, SAC, TD3) trains only "
    "after `learning_starts` environment steps (50,000 by default in SB3's DQN before 2.0 and in sb3-contrib's "
    "QR-DQN before 2.3, 100 since).",
    "Check `train_freq` and `gradient_steps` (a `gradient_steps` of 0 takes no step), and that `learn()` is called "
    "on the model being saved.",
    "Compare the experience buffer with the run's length: an on-policy trainer updates once per full buffer "
    "(ML-Agents' `buffer_size`, SB3's `n_steps` x environments), and a buffer near the run's length leaves a "
    "single update at the end.",
)


def _never_trained_finding(run: Run) -> Finding | None:
    untrained = never_trained(run)
    if untrained is None:
        return None
    reward, points = untrained.reward, len(untrained.reward)
    if untrained.first_update is None:
        message = (f"No gradient step was taken: the log holds {points} rollout summaries up to step "
                   f"{reward.steps[-1]} and not one `{SB3_TRAIN_PREFIX}` key, which Stable-Baselines3 writes at every "
                   "update: the policy acting is the one initialised at the start.")
        condition = f"no {SB3_TRAIN_PREFIX} key in an SB3 log"
    else:
        named = ", ".join(f"`{run.sources.get(m, m)}`" for m in UPDATE_METRICS if run.has(m))
        message = (f"No gradient step was taken before step {untrained.first_update}: the update's metrics ({named}) "
                   f"are first logged there, after {untrained.before} of the {points} reward points: for most of the "
                   "run the policy acting is the one initialised at the start.")
        condition = f"first update metric after {untrained.before} of {points} reward points"
    evidence: dict[str, object] = {"metric": "reward_mean", "source": run.sources.get("reward_mean"),
                                   "condition": condition, "summaries": points,
                                   "first_update_step": untrained.first_update, **reward.where(0)}
    return Finding(ID, "error", "U", reward.steps[0], evidence, message, NEVER_TRAINED_TRY)


#: Zero gradients no more frequent than this above the share of tied groups are the tied steps'.
TIED_MARGIN = 0.2


def _tied_steps(run: Run, check: _Check, xs: tuple[float, ...]) -> bool:
    """A gradient norm of 0 at about as many late points as the late share of tied groups (at most ``TIED_MARGIN``
    more): a trainer that logs the gradient norm of one step and the tied share averaged over the steps since the
    last log, with few groups per step, logs a norm of 0 whenever the logged step's groups all tied
    (h335-trl-grpo-qwen25-3b-lora-r32-marine-hydrodynamics: one prompt of 4 completions per step, the norm 0 at
    64 % of its last quarter's points, 64 % of the groups tied there)."""
    tied = metric(run, "zero_variance_group_frac")
    if check.name != "grad_norm" or tied is None or not tied.judgeable:
        return False
    late = xs[len(xs) - window_len(len(xs)):]
    return fmean(1.0 if check.no_update(x) else 0.0 for x in late) <= fmean(tied.late()) + TIED_MARGIN


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate UPDATE_SUPPRESSED on ``run`` with resolved ``knobs``."""
    untrained = _never_trained_finding(run)
    if untrained is not None:
        return untrained
    checks = _checks(run, knobs)
    if not checks:
        return NotEvaluable(ID, ("grad_norm, update_ratio, grad_norm_clipped, kl_step, kl (to the reference policy), "
                                 "clip_frac or early_stop_frac",))
    signal = adv_signal(run)
    if signal is None:
        present = sorted({_READ_AS.get(c.name, c.name) for c in checks})
        checks = [c for c in checks if not c.needs_signal]
        if not checks:  # the update metrics are there; what is missing is the signal they would be judged against
            return NotEvaluable(ID, tuple(f"{need}, beside the update metrics it read ({', '.join(present)})"
                                          for need in ADV_NEEDS))
    above, share, sustain = float(knobs["signal_above"]), float(knobs["late_share"]), int(knobs["sustain"])
    # Advantages in reward units (Dr. GRPO, RLOO: a logged adv_std, not a proxy on the normalised
    # scale) sit below the normalised bar: their signal counts while it keeps `signal_keep` of its early level.
    relative = signal is not None and signal.judgeable and not signal.proxy
    bar = min(above, float(knobs["signal_keep"]) * signal.early_mean()) if signal is not None and relative else above
    improving = _reward_improving(run, float(knobs["reward_rise"]))
    hits: list[tuple[str, Finding]] = []
    for check in checks:
        used = signal if check.needs_signal else None
        if used is not None:
            xs, sig, idx = aligned(check.series, used)
            flags = tuple(1.0 if check.no_update(x) and g >= bar and g > 0 else 0.0
                          for x, g in zip(xs, sig, strict=True))
        else:  # the point means no update whatever the advantages carry
            xs, sig, idx = check.series.values, (), tuple(range(len(check.series)))
            flags = tuple(1.0 if check.no_update(x) else 0.0 for x in xs)
        if len(xs) < 2 * MIN_WINDOW:
            continue
        late = flags[len(flags) - window_len(len(flags)):]
        late_share = fmean(late)
        if late_share < share or _tied_steps(run, check, xs):
            continue
        on = onset_index(flags, lambda f: f == 1.0, sustain)
        if on is None:
            continue
        kept = [i for i, f in enumerate(flags) if f == 1.0]
        s = check.series
        evidence: dict[str, object] = {
            "metric": check.name,
            "source": run.sources.get(check.name),
            "condition": check.describe,
            **({THRESHOLD: check.bar} if check.bar is not None else {}),
            "signal": used.name if used is not None else None,
            "signal_above": above,
            "signal_bar": bar,
            "suppressed_points": len(kept),
            "judged_points": len(flags),
            "late_share_suppressed": late_share,
            "metric_median_when_suppressed": statistics.median(xs[i] for i in kept),
            **s.where(idx[on]),
        }
        carried = ""
        if used is not None:
            mean_signal = fmean(sig[i] for i in kept)
            evidence["signal_mean_when_suppressed"] = mean_signal
            if used.proxy:
                evidence["proxy"] = used.name
            carried = f" while the advantages still carry signal ({used.name} {mean_signal:.3g} on average there)"
        what = {"grad_norm": "no gradient reaches the parameters",
                "kl": "the policy does not move (KL exactly 0)",
                "update_ratio": "the parameters do not move",
                "grad_norm_clipped": "the clipped gradient that reaches the optimizer is ~0",
                "clip_kept": "the gradient clip lets almost none of the gradient through (max_grad_norm far too small)",
                "lr": "the learning rate cannot move the policy",
                "kl_step": "the update does not change the policy",
                "kl_pinned": "the policy is held at its reference (the KL penalty outweighs the advantages)",
                "clip_frac": "nearly every token is clipped, where the PPO objective has no gradient",
                "early_stop_frac": "each update is cut short after a few mini-batches"}[check.name]
        message = (f"From step {s.steps[idx[on]]} the update is suppressed ({check.describe} at "
                   f"{100 * late_share:.0f}% of the late points){carried}: {what}.")
        severity: Severity = "error"
        if improving is not None:
            # the reward still rises: the update cannot be that suppressed; said, and a warning only
            evidence["reward_improving"] = improving
            severity = "warn"
            message += (f" The reward rose from {improving['early_mean']:.3g} to {improving['late_mean']:.3g} "
                        "meanwhile, so the update is not fully suppressed.")
        hits.append((check.name, Finding(ID, severity, "U", s.steps[idx[on]], evidence, message, WHAT_TO_TRY)))
    return first_of_checks(hits)


CARD = Card(
    tagline="there is something to learn, but the policy does not move",
    key_metrics_note="`adv_std` or its proxies",
    happening="""
        The batch carries a learning signal — advantages with spread, groups that are not all tied — but
        the optimizer step is zero: no gradient reaches the parameters (a detached tensor, a loss
        multiplied by an all-zero mask or coefficient, frozen or unattached adapters, a learning rate of
        0, fp16 gradients underflowing, every step skipped by the loss scaler), the policy does not move
        (KL exactly 0), or nearly every token is outside the PPO trust region, where the clipped
        objective has no gradient (a stale or mismatched rollout policy). The run spends compute and
        learns nothing, although nothing upstream is wrong.
    """,
    looks_like="""
        `grad_norm` exactly 0 (TRL `grad_norm: 0.0`) at step after step while `frac_reward_zero_std` is
        well below 1 and `reward_std` is positive; or `kl` exactly 0 throughout; or `clip_frac` pinned
        near 1. Upstream metrics look normal, so reward curves alone do not show it.

        Not to be confused with: every group tied (then no gradient is expected: DEGENERATE_GROUPS,
        DEAD_FROM_START — grpo-dynamics-csd-pilot-dead has `grad_norm` and `kl` exactly 0 from step 1,
        but every reward is 0 too); an on-policy PPO KL (verl's `actor/ppo_kl` is 0 by construction for
        one mini-batch per step: gui-cursor-verl-grpo logs 0 at all 10 steps while `grad_norm` is 3 to 8);
        a KL blow-up (carla-sb3-ppo-kl-blowup: approx_kl 52.5 and 48.9, clip fraction 0.94 and 0.96 on
        the first two updates, then 0.16 to 0.49 with one 0.955 spike: updates too large, the opposite).
    """,
    decides="""
        A logged point is *suppressed* when the advantage signal is present there — `adv_std` or its
        SPEC section 4 proxy (as ADV_COLLAPSE: `adv_max - adv_min`, `sqrt(1 - zero_variance_group_frac)`,
        `1[reward_std > 1e-6]`) at or above `signal_above`, or, for a logged `adv_std` (not a proxy),
        at or above `signal_keep` x its own early mean when that is lower (advantages in reward units:
        Dr. GRPO and RLOO sit at 0.35 to 0.45 in the lab, never 0.5) — and, at the same step and phase:

        1. `grad_norm` ≤ `grad_below`; or
        2. the update itself, where the trainer logs it (canonical names added to the alias table:
           `update_ratio` = step norm / parameter norm, `grad_norm_clipped` = the norm after clipping,
           `kl_step` = KL(π_before ‖ π_after) of the update, read from verl's `actor/ppo_kl`):
           `update_ratio` or `grad_norm_clipped` ≤ `drop_below` x the median of its own early window,
           `kl_step` ≤ `drop_below`² x its early median (a KL is second order in the step). Relative,
           because absolute update sizes differ by orders of magnitude between a small policy and an LLM
           (Adam at lr 1e-6 moves LLM weights by ~1e-5 of their norm per step). Trainers log `grad_norm`
           *before* clipping (torch's `clip_grad_norm_` returns it), so an over-tight `max_grad_norm` or
           a learning rate that cannot move the policy is invisible in `grad_norm` and seen only here.
           The logged learning rate (`lr`: TRL `learning_rate`, verl `actor/lr`) is judged the same way,
           ≤ `drop_below` x its early median: a schedule that decays linearly to 0 is that low only in
           its last 0.1 % of steps, far from the `late_share` majority of the late window, so only a
           learning rate cut by orders of magnitude (a unit or scheduler bug) counts. Where both norms
           are logged, `grad_norm_clipped / grad_norm` ≤ `drop_below` is suppressed whatever the early
           level: a clip that keeps 0.1 % of the gradient or less from the first step (TRL logs only the
           norm before clipping; `Monitor.watch(optimizer)`, which the TRL callback attaches, measures
           the clipped norm and the step size from the optimizer); or
        3. only when `grad_norm` is not logged: |`kl`| ≤ `kl_below` (a `kl` read from an update KL — verl
           `actor/ppo_kl`, now `kl_step` — never counts); or
        4. the policy is pinned to its reference: `kl` (to the reference; not SB3's `approx_kl` or an
           update KL), judged on its level — the trailing rolling median of 3 points, low from the second
           point at the reference (over 5, a monitor reported the lab's `kl_pin` fault 6 steps after its
           onset instead of 5) — at or below `kl_pin_frac` x the highest earlier level (of 5 points),
           which must have reached `kl_pin_peak` and 3 times
           the KL's step-to-step noise (a signed per-batch estimate of a policy that barely moved
           swings around 0, and its level's highs are that noise: h113-bitnet-grpo-g2-gsm8k-tied-groups,
           -0.47 to 0.54 over 38 updates with a KL coefficient of 0.01). On levels,
           not points: unsloth-llama32-3b logs one KL of 1.71 among values of 0.01 to 0.15 (a spike is no
           peak), and unsloth-gptoss-20b (one group of 2 per step) alternates between ~0.001 and 0.05-0.2
           in its second half (single low points are no fall); judged point by point, it was flagged. A KL
           to a fixed reference grows in a
           healthy run (to 0.1-0.15 in unsloth-llama32-3b, to ~1 in the lab); it falls and stays a fifth
           of its peak only when the reference is re-synced and a penalty holds the policy there (the
           lab's `kl_pin`: 0.001 to 0.1 after a peak of 0.5 to 0.8), so at least `PINNED_POINTS` (9 in
           10) of the late window's points whose level is pinned are, each alone, at or below the same
           line as well: a heavy-tailed KL has a low level and keeps leaving its reference
           (h156-trl-grpo-llama31-8b-sft-v1-base-learns: a level of 0.03 after 0.25, a quarter of those
           points above the line, the reward rising from 3.5 to 5). Pinned is near 0 on both sides: a
           level far below 0 is no KL a penalty holds at its reference but a signed estimate of another
           one (a Dou Dizhu PPO log's `mean(old_logp - logp)` over each update, about -0.2 late; a KL to
           the reference read with the same signed estimator, MiniMind's `KL_ref`, sits within
           ±0.005 of 0 and stays pinned); or
        5. `clip_frac` ≥ `clip_pinned`; or
        6. a KL early stop ending the updates, where the trainer logs it (`early_stop_frac`, the share of
           a step's updates the KL target stopped; aliases `early_stopped`, `early_stop`): at or above
           `early_stop_share` the step's update is cut short after a few mini-batches, whatever the
           advantages carry, so this check needs no advantage signal. SB3's `target_kl` stop is only
           printed to the console and is not seen.

        It fires when at least `late_share` of the late window's points (last 20 %) are suppressed and
        an onset exists: the first of `sustain` consecutive suppressed points (or a suppressed tail). A
        `grad_norm` of 0 at no more of the late points than the late share of tied groups plus 0.2 is the tied
        steps' (TRL logs the logging step's own norm and the tied share averaged since the last log: with one
        group per step the norm is 0 whenever that step's group tied; h335-trl-grpo-qwen25-3b-lora-r32-marine-
        hydrodynamics, 0 at 64 % of its last points, 64 % of the groups tied there). The
        first check that fires (in the order above) is reported, the others are listed in
        `evidence["also"]`.

        When the reward still rises over the run (late mean above the early one by `reward_rise` × the
        span of the reward means) the update cannot be fully suppressed: the finding is then a warning,
        says so, and carries `evidence["reward_improving"]`. Not evaluable without any of `grad_norm`,
        `update_ratio`, `grad_norm_clipped`, `kl_step`, `kl`, `clip_frac`, `early_stop_frac`, or, for all
        but the early stop, without an advantage signal (SB3 logs neither advantages nor a reward spread).

        A fact needs none of these: a Stable-Baselines3 log of at least 20 rollout summaries (`time/fps`
        written), one file of it at least holding two, without a single `train/` key took no gradient step, since
        SB3 records its `train/` section at every update and writes it with the next summary (a `learn()` called
        for one rollout at a time writes one file of one summary per call, and no `train/` key however it
        learns); the finding is dated at the first logged step
        (h327-sb3contrib-qrdqn-airsim-leader-drone: 300 summaries over 30,000 steps, QR-DQN's
        `learning_starts` at its default of 50,000 before sb3-contrib 2.3). Nor does any log whose first
        update metric (`value_loss`, `kl_step`, `clip_frac`, `grad_norm`, `update_ratio`, `step_norm`)
        comes after 80 % of the reward's points and 10 of them at least: the policy acting over most of
        the run is the initial one (h356-mlagents-ppo-sailing-boat-ppo5: an ML-Agents buffer of 85,000
        steps in a run of 100,000, `Losses/Value Loss` written once, at 90,000, after 17 of 20 summaries).
    """,
    related="""
        The U-stage counterpart of ADV_COLLAPSE: there the signal vanishes before the update, here the
        update ignores a signal that is present (the localisation case: `grad_norm` and `kl` exactly 0
        while a third of the groups carry signal is UPDATE_SUPPRESSED, not ADV_COLLAPSE). When every group
        is tied, DEGENERATE_GROUPS / DEAD_FROM_START explain the missing update instead. DEAD_FROM_START
        also fires when `grad_norm` is 0 from the very first step (its "no update" branch).
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="error",
    stage="U",
    summary="the batch carries signal but grad norm / KL are ~0 or the clip fraction is pinned: no update",
    key_metrics=("grad_norm", "update_ratio", "grad_norm_clipped", "kl_step", "kl", "clip_frac", "adv_std",
                 "zero_variance_group_frac"),
    fn=detect,
    knobs=(
        Knob("grad_below", NO_GRADIENT, "grad_norm at or below this = no gradient", low=0.0,
             why="The smallest non-zero gradient norms in the real logs are 0.00104 (f1-strategist, LoRA on tied "
                 "groups), 0.0018 (legaloom-grpo-final) and 0.0049 (grpo-dynamics-gate2): three orders of magnitude "
                 "above; exact zeros (trl-dapo-vlm, csd-pilot-dead) are below."),
        Knob("kl_below", 1e-9, "|kl| at or below this = the policy did not move (only without grad_norm)", low=0.0,
             why="Exactly 0, as logged when nothing changed."),
        Knob("drop_below", 1e-3, "update_ratio or grad_norm_clipped at or below this x its early median = no update "
             "(kl_step: its square)", low=0.0, high=1.0,
             why="For `kl_step` its square, 1e-06. The lab's healthy runs have `update_ratio` 0.15 to 0.2 early and "
                 "0.02 late (late/early about 0.1); an over-tight clip (1e-6) or a learning rate x 1e-6 takes it to "
                 "2e-7 / 5e-8 of the parameters, about 1e-6 of its early level. No real log here has these metrics, "
                 "so it cannot fire on them."),
        Knob("kl_pin_frac", 0.2, "kl to the reference at or below this x its earlier peak = pinned", low=0.0, high=1.0,
             why="The lab's `kl_pin` (coefficient 10 after a reference sync) holds the KL at 0.001 to 0.003 under "
                 "GRPO but at 0.005 to 0.1 under Dr. GRPO and RLOO (advantages in reward units pull less against "
                 "the penalty) after peaks of 0.5 to 0.6; a fifth catches both. The healthy real runs stay quiet "
                 "with it (tests/scan/test_real_runs.py)."),
        Knob("kl_pin_peak", 0.01, "the earlier kl peak must reach this (nats per token) for the pin check", low=0.0,
             why="A KL that never left ~0 has not been pinned (TRL runs log 0.0 for the first steps)."),
        Knob("clip_pinned", 0.9, "clip_frac at or above this = pinned (no gradient through the clipped objective)",
             low=0.0, high=1.0,
             why="Healthy runs clip 0 to 5 % of tokens (budget-router median 0.02, verl runs 0.002, carla "
                 "constant-obs at most 0.12); the carla kl-blowup reaches 0.94 to 0.96 on 3 isolated updates, not "
                 "sustained."),
        Knob("signal_above", 0.5, "advantage std (or proxy) at or above this = the batch carries signal", low=0.0,
             why="It is ADV_COLLAPSE's `healthy_early`; with `zero_variance_group_frac` it means at most 75 % of "
                 "the groups tied, the level DEGENERATE_GROUPS flags, so a point is either \"degenerate\" there or "
                 "\"has signal\" here. trl-dapo-vlm-120531 has `grad_norm` 0.0 at 42 of 49 log points, but its "
                 "groups (2 samples each) are 90 to 100 % tied at most of them, and only 2 zero-gradient points "
                 "have at most 75 % tied: quiet (grad_norm is logged for one step per 10-step interval, so a tied "
                 "last step explains the zeros)."),
        Knob("signal_keep", 0.5, "or at or above this x its early mean (advantages in reward units)", low=0.0,
             high=1.0,
             why="Used when a logged `adv_std` is below `signal_above`: half of its own level, the same bar as "
                 "`signal_above` is for normalised advantages (half of ~1). Proxies stay on the absolute bar "
                 "(trl-dapo-vlm-120531 would otherwise count 90 % tied steps as signal)."),
        Knob("late_share", 0.5, "share of the late window's points that must be suppressed", low=0.0, high=1.0,
             why="A majority, so that a few zero-gradient steps (a tied micro-batch) do not fire."),
        Knob("sustain", 5, "consecutive suppressed points for the onset", low=1, integer=True,
             why="As the seed card."),
        Knob("early_stop_share", 0.9, "share of a step's updates ended by the KL early stop at or above which "
             "the step's update is cut short", low=0.0, high=1.0,
             why="A KL target stops an epoch now and then in a healthy PPO run; stopping (nearly) every update "
                 "means the policy never gets the update it was planned: smolvla-flowsde-ppo-leashed logs "
                 "`early_stopped` 1.0 on all 391 updates (its code comment calls it a numerical artefact that "
                 "cut updates to about 14 % of the intended work)."),
        Knob("reward_rise", 0.1, "late reward mean above the early one by this x the span of the reward means = "
             "the run learns (the finding becomes a warning)", low=0.0, high=1.0,
             why="An update that is really ~0 cannot raise the reward: when the reward climbs by a tenth of its "
                 "range the suppression is partial at most, so the finding is a warning that says so, not an "
                 "error."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
