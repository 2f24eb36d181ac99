"""UPDATE_UNSTABLE (error, stage U): the policy updates are too large.

A logged point is *unstable* when any of these holds there:

* ``kl_step`` (the KL between the rollout policy and the updated one: SB3 and PPO's ``approx_kl``,
  verl's ``actor/ppo_kl``) at or above ``kl_step_above`` (1 nat): one update moved the policy by
  more than the whole trust region PPO aims at (target KLs are 0.01 to 0.05);
* ``clip_frac`` at or above ``clip_above`` (0.5): most tokens or actions left the clip range in one
  update; not judged while the reward improves (its level rose by more than 3x its noise, held, and
  kept at least 3/4 of the gain to the end): aggressive clipped updates that keep raising the
  return are large, not unstable;
* the level of ``kl`` to the reference policy (trailing median of 5 points, so one spike is no
  level) at or above ``kl_ref_above`` (2 nats per token); when it is already there at the run's first
  step (0 or 1), before any update (a policy that never was its reference: an SFT'd adapter against
  the base model), at or above ``KL_START_FACTOR`` (2) x that first value; not judged when it was
  past that bar from the early window and the late window's median is back under it while the
  reward rose and held (an early excursion);
* the level of ``entropy`` at or above ``entropy_rise`` (10) x its start level (the early window's
  median, or its first half's when lower: a blow-up inside the early window lifts the median; judged
  when that is positive, and not for an entropy below ``-ENTROPY_ROUNDING`` anywhere, a differential
  entropy crossing 0): the policy blew up into noise; the same factor for ``action_std``, the standard
  deviation of a Gaussian policy (SB3 ``train/std``), whose differential entropy cannot be judged
  as a ratio (sb3-acrobot-effort-std-blowup: std 1.0 -> 81.7, 10x by step 498,688);
* the level of ``value_loss`` at or above ``value_loss_rise`` (100) x its early median, times the
  square of the growth of the reward's scale (:func:`_return_growth`: a critic of unnormalised
  returns has a loss that grows with their square while it fits them): the critic diverged; not when
  ``vf_explained_var`` is logged with a late median of at least ``CRITIC_FITS`` (0.5), a critic that fits, nor
  when its late median is below the square of ``CRITIC_ERROR`` (1 %) of the largest ``|reward_mean|``, a critic that
  errs by less than that share of its returns.
* the level of ``grad_norm`` at or above ``grad_rise`` (100) x its start level: the gradients exploded; not from
  a start level of ``NO_GRADIENT`` (1e-6) or less, which is no gradient at all (every group tied).

The rises count only when the late window's median is past the bar too: a blow-up the run
recovers from is a warm-up, not a divergence. A blow-up still under way when the log ends is the
entropy's *late jump* (:func:`late_jump`): a final stretch of at least ``min_points`` points in the
second half whose level stays above every earlier level (or, for a level that swings as it blows up,
at least ``entropy_jump`` times the median of the series' first half), with a median at least
``entropy_jump`` (3) times the median before it; judged for a categorical policy only (every entropy positive, no
``action_std``).

A collapse after success is the same failure seen at the reward: the level of ``reward_mean``
(trailing median over a tenth of the run, at least 5 points) rose from the early window's median
``E`` to a peak ``P`` before the late window and stayed above ``E + (P - E) / 2`` for at least
that many points (a success held, not a lucky stretch; a rise of more than ``FALL_NOISE`` (10) noises for
``BRIEF_POINTS`` (5) points, on a run that does not end at its floor: :func:`_brief_success`), by more than
``SUCCESS_NOISE`` (3) times the reward's
step-to-step noise (1.4826 x the median absolute deviation of its first differences, over sqrt 2), on a
reward not exactly 0 at 3/4 of its points (whose highs are excursions from its floor: REWARD_FLOOR's),
and the late window's median gave back at least ``giveback`` (0.75) of that gain (for a reward of two values,
a 0/1 success whose median is a majority vote, its means did: :meth:`RewardCourse.mean_gave_back`). Its points are
those from where the fall began to the end: the change down of the reward after the peak
(:func:`change_point`, least squares, ``fall``), moved back to the top of the level's descent into
it (walking up the descent across dips smaller than ``SUCCESS_NOISE`` noises, to the peak's height or
to a rise before it), since a gradual decline has its change point half-way down
(h73-cs285f22-dqn-lunarlander-lr3e-2-td-loss-blowup: a level at its peak until about 150,000 steps,
the change point at 360,001); runs with curriculum phases are not judged (a harder phase lowers the reward by design).
sb3-acrobot-collapse-after-success: -7514 early, a level of -5261 at step 291,840, -7946 late (every
episode at the time limit). A fall of the reward alone does not say the updates caused it (a reward
that stops being paid falls the same way): when the log has a metric of the update's size, the collapse
counts only when one moved with it, ``kl_step``, ``clip_frac``, ``kl`` or ``grad_norm`` (median over the fall at
least ``MOVED`` (2) times its median over the success before the peak) or ``entropy`` (that factor either way;
not a differential entropy below ``-ENTROPY_ROUNDING`` somewhere, whose ratios mean nothing), named
in ``evidence["update_moved"]`` (the acrobot run: clip fraction 4.7 times); an entropy that stayed put clears
nothing (a Gaussian policy's entropy follows its log-std, which a collapse need not move). A log with none of them
(classic-control loggers write the return and the losses) is judged on the reward alone, and the
finding says that nothing confirmed it (h33-cs285-f23-pg-lunarlander-gae-lambda1-collapse: a return
of about 270 at iteration 210, -131 at 240, never recovered). A reward that never succeeded
collapses the same way when its late median lies ``FALL_NOISE`` (10) times its noise (or 5 times it, with
every late value below every early one; or 3 times it, down a decline whose values rank with the step at a
Spearman correlation of -0.6 or below over 20 points or more), and at least half its level's range, below its early median (:attr:`~advcore.detectors._reward.RewardCourse.fell_below_start`),
and does not end held at its floor (REWARD_FLOOR's to report) unless it had risen to its early level from its
start by at least ``LEARNED_SHARE`` (half) of its fall from there (:func:`_fell_above_floor`):
h93-pymarl-dcg-smac-3s5z-td-loss-blowup-return-collapse, a return of 11.8 early and 4.4 late, grad
norm 20 times higher over the fall. So does one whose last ``TAIL_POINTS`` (5) or more logged values,
fewer than half the late window, all lie that far below its early median (:func:`_collapsed_tail`: a
collapse too late for the late window's median to show it), or after a success gave back ``giveback`` of
its gain, its late window not held at its floor. Never over a fall in which every group was tied or the
advantages were 0 (:func:`_no_gradient`): nothing was updated.

Fires when a check has at least ``min_points`` (3) unstable points, and for the single-update checks
(``kl_step``, ``clip_frac``) on at least ``MIN_POINT_SHARE`` (1 %) of the run too: a spike that
recovers is a routine event of RL training, not an unstable run (three update KLs above 1 over 976
updates of a run that learns, h7-baselines-ppo2-humanoidstandup-good-high-clipfrac). Fewer spikes of
``kl_step`` count when the reward never recovered from one (:func:`_unrecovered_spike`: after the
spike, its level stays below its median over the window before by more than ``SUCCESS_NOISE`` times
its noise and a tenth of its range; over the points before it when fewer were logged):
h44-rlgames-ppo-isaacgym-yumicube-kl-spikes-collapse, an update KL of 3.98 at epoch 260 (frame 272,629,760)
with a return of about -14.7 before and -24.7 at best after. Onset: the first unstable point of the check that fired first (the others that fired are
named in ``evidence["also"]``); for single updates (``kl_step``, ``clip_frac``) the first that ``min_points`` of them
follow within a tenth of the run, not an isolated spike long before; a rise (entropy, action std, value loss, grad norm) is dated from where it
began: the first point of the stretch above the geometric middle of its early level and its bar
that led past the bar (``evidence["past_bar_step"]`` keeps the crossing). Not evaluable without any of these
metrics.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from advcore.detectors._base import (THRESHOLD, Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome,
                                     first_of_checks)
from advcore.detectors._reward import (BRIEF_POINTS, FALL_NOISE, HELD_SHARE, SUCCESS_NOISE, RewardCourse,
                                       improving_reward, rating_course, reward_course, reward_level)
from advcore.detectors._windows import (MIN_WINDOW, NO_GRADIENT, TIE_EPS, Series, change_point, differential, metric,
                                        never_trained, rolling_level, window_len)
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "UPDATE_UNSTABLE"
#: the update metrics the checks read
METRICS = ("kl_step", "clip_frac", "kl", "entropy", "action_std", "value_loss", "grad_norm")

_SHRINK = ("Shrink the update: a lower learning rate, fewer PPO epochs or mini-batches per rollout, a tighter clip "
           "range, or a KL target (`target_kl`, about 0.01 to 0.05) that stops the epoch before the policy runs away.")
_RATIO = ("Check the importance ratio: old log-probabilities recomputed differently from the rollout's (another "
          "network or observation normalisation; for a language model another tokenizer, dtype or sampling setting) "
          "make every ratio far from 1 (a large `kl_step` and `clip_frac` from the first update).")
#: an update, a clip fraction or a collapse after success
WHAT_TO_TRY = (_SHRINK, _RATIO)
#: the conditions of a finding dated by the reward's collapse (its level fell far from its peak)
COLLAPSE_AFTER_SUCCESS = "collapse after success"
COLLAPSE_BELOW_START = "collapse below the start"

#: a KL to the reference that runs away
WHAT_TO_TRY_REFERENCE = (
    "A KL to the reference that runs away with a falling reward is a policy blow-up: raise the KL coefficient, "
    "restart from the last checkpoint before the onset, and look for the reward hack or the degenerate output "
    "the policy found.",
    _SHRINK,
)
#: a critic whose loss diverges
WHAT_TO_TRY_CRITIC = (
    "A diverging value loss: normalise the returns or rewards, clip the value loss, lower the critic's learning "
    "rate.",
    _SHRINK,
)
#: an entropy or action noise that explodes
WHAT_TO_TRY_NOISE = (
    "An entropy or action noise that explodes: lower the entropy bonus (or its target), bound the policy's log-std.",
    _SHRINK,
)
#: gradients that explode
WHAT_TO_TRY_GRADIENTS = (
    "Exploding gradients: clip the gradient norm (`max_grad_norm` about 1), lower the learning rate, and check the "
    "loss for an unbounded term (an importance ratio without its clip, a log of 0).",
    _SHRINK,
)
_TRY = {"kl": WHAT_TO_TRY_REFERENCE, "value_loss": WHAT_TO_TRY_CRITIC, "entropy": WHAT_TO_TRY_NOISE,
        "action_std": WHAT_TO_TRY_NOISE, "grad_norm": WHAT_TO_TRY_GRADIENTS}


@dataclass(frozen=True, slots=True)
class _Check:
    name: str
    series: Series
    unstable: Callable[[float], bool]
    describe: str
    what: str
    #: for a rise: the level past which it had begun (the geometric middle of the early level and the bar)
    rising: Callable[[float], bool] | None = None
    #: the level the series is judged against (``evidence["threshold"]``)
    bar: float | None = None


#: Single-update checks (``kl_step``, ``clip_frac``) need unstable points on at least this share of
#: the run besides ``min_points``: three KL spikes over 976 updates are routine.
MIN_POINT_SHARE = 0.01


def _fell_above_floor(run: Run, c: RewardCourse) -> bool:
    """The reward fell far below where it held early (:attr:`RewardCourse.fell_below_start`) and does not
    end held at its floor, which REWARD_FLOOR reports (h63-joyrl-book-ppo-pendulum-wrong-sign-entropy-
    never-learns-freezes falls to the pendulum's floor and stays), unless it had risen to that early level
    from its start (:attr:`RewardCourse.rose_early`) by at least half as much as it then fell, on a reward
    not exactly 0 most of the time (:attr:`RewardCourse.mostly_zero`): what it fell from was learned
    (h393-sb3-ppo-custom-hopper-source-constant-lr-3e-3-gamma-0.99-learns-to-855-then-collapses-at-410k-to-falling-at-once-twice:
    from 12 at its first episodes to a median of 320 over its first fifth, 14 over its last, at its floor;
    h63's early median is 7 above its start, then 251 lower)."""
    learned = (c.rose_early and c.early - c.start[0] >= LEARNED_SHARE * (c.early - c.late) and not c.mostly_zero)
    return c.fell_below_start and (learned or not _ends_at_floor(run))


def _ends_at_floor(run: Run) -> bool:
    """The reward's late window is held at its floor: REWARD_FLOOR's to report, not a collapse of the updates."""
    level = reward_level(run)
    return level is not None and level.regime == "floor"


def _brief_success(run: Run, c: RewardCourse) -> bool:
    """A rise of more than ``FALL_NOISE`` noises whose level held above half-way for ``BRIEF_POINTS`` points
    at least, fewer than a level window's (:attr:`RewardCourse.succeeded` asks that many), on a run that does
    not end at its floor (REWARD_FLOOR's to report): no lucky stretch either
    (h79-cs294-pg-invpendulum-20-steps-per-batch-collapses: a level of 51.6 from 17.6, 108 noises, for 7 of its
    100 iterations, then 2 to 8 for the rest)."""
    return c.gain > FALL_NOISE * c.noise and c.held_points >= BRIEF_POINTS and not _ends_at_floor(run)




def _collapsed_tail(run: Run, c: RewardCourse, giveback: float) -> int:
    """The number of last points in which the reward collapsed too late for the late window's median to
    show it (at least ``TAIL_POINTS``, fewer than half the late window): every one far below where it
    started (:attr:`~advcore.detectors._reward.RewardCourse.collapsed_tail`) or, after a success, every one
    below what keeps ``1 - giveback`` of its gain (h228-rlgames-isaacgym-walkbot-learns-then-return-
    crashes-below-start-at-end: a level of 33 from a start of -2, its last 6 of 259 epochs between -5 and
    0.1, a median 29 below the 25 points before them, 17 noises) when that is a fall of more than
    ``FALL_NOISE`` noises from the level just before it; on a run whose late window is not held at its
    floor (REWARD_FLOOR's to report); else 0."""
    tail = c.collapsed_tail
    if c.succeeded:
        gave_back = c.tail_below(c.early + (1 - giveback) * c.gain)
        values = c.series.values
        # and a fall from where the reward was before, beyond its noise: just before the tail, or when the
        # late window began (a slide down to the tail: h271-rllib-ppo-cartpole-stale-int8-rollout-policy-
        # reaches-500-then-collapses-to-100, a level of 450 at epoch 400, 312 over the 50 epochs before its
        # last 34 at 107, a noise of 28); not the last few draws of a noisy level that had already settled
        # lower (a newcomer's loop whose reward broke to a coin flip)
        if gave_back > tail and gave_back + c.w <= len(values):
            before = max(statistics.median(values[-gave_back - c.w:-gave_back]),
                         c.level[len(values) - window_len(len(values)) - 1])
            if before - statistics.median(values[-gave_back:]) > FALL_NOISE * c.noise:
                tail = gave_back
    if not TAIL_POINTS <= tail < window_len(len(c.series)) // 2:
        return 0
    return 0 if _ends_at_floor(run) else tail


def _collapse_after_success(run: Run, giveback: float) -> tuple[Series, dict[str, object]] | None:
    """The reward's points from where it collapsed to the end, and the evidence; None when the reward
    neither succeeded and then gave back ``giveback`` of its gain, nor fell far below where it started
    and does not end at its floor (:func:`_fell_above_floor`), nor ended collapsed in a tail too short for
    the late window's median (:func:`_collapsed_tail`; module docstring)."""
    c = reward_course(run)
    if c is None:
        return None
    succeeded = c.succeeded or _brief_success(run, c)
    # a rise made mostly inside the early window is measured from its start: a run that kept three quarters of it
    # held its success (h461-drlnd-ddpg-unity-reacher-20-agents-batch-1024: 17 at the first print, 37 by episode 60,
    # 32 to 34 to the end; all of the 3.25 above its early median given back, a sixth of its rise)
    held = c.rose_early and c.gave_back_from_start() <= HELD_SHARE
    fell = (succeeded and c.gave_back() >= giveback and not held) or _fell_above_floor(run, c)
    if fell and c.binary and c.mean_gave_back() < giveback:
        # a 0/1 outcome's level is a majority vote: its means say what was given back (h347-tabular-q-frozenlake-
        # slippery: a median of 1 at episode 1,174 and 0 late; means 0.57 at best over 500 episodes, 0.46 late)
        fell = False
    late_tail = 0 if fell else _collapsed_tail(run, c, giveback)
    if not (fell or late_tail) or _rating_held(run, c):
        return None
    s, w, peak = c.series, c.w, c.peak
    start = max(0, peak - w // 2)
    if late_tail:  # ended collapsed after the late window's median: its first point is the fall's
        first = len(s) - late_tail
    else:
        cut = change_point(s.values[start:], fall=True)
        first = start + (cut or 0)
        # a gradual decline has its change point half-way down: it began at the top of the level's descent
        # into it. Walking back from the change point (a trailing median over w points falls (w - 1) // 2
        # points after the values it covers), up the descent, across dips smaller than the noise, to the
        # peak's height or to a rise before the descent (h57 rl_games peg-in-hole: a dip and a recovery
        # between the peak and the final fall)
        tol = SUCCESS_NOISE * c.noise
        lag = (w - 1) // 2
        top = min(len(s) - 1, first + lag)
        while top > peak and c.level[top - 1] > c.level[top] - tol and c.level[top] < c.level[peak] - tol:
            top -= 1
        first = min(first, max(start, top + 1 - lag))
    if _no_gradient(run, s.steps[first]) or never_trained(run) is not None:
        return None  # nothing to update with over the fall, or no update at all: it happened upstream
    if c.level[peak] - statistics.median(s.values[first:]) <= c.still:  # a move within the reward's stillness
        return None
    moved = _update_moved(run, s.steps[max(0, peak - w)], s.steps[peak], s.steps[first])
    # the update's size, logged and put over the fall: not the updates. An entropy that stayed put clears
    # nothing: a Gaussian policy's entropy follows its log-std, which a collapse need not move (ML-Agents'
    # Policy/Entropy, h270-mlagents-ppo-selfdriving-car-gamma0.9-learns-route-then-gives-half-back: the return
    # 785 -> 412, its entropy within a factor 2)
    logged = [name for name in _MOVERS if name != "entropy" and _mover(run, name) is not None]
    if not moved and logged:
        return None
    tail = Series("reward_mean", s.steps[first:], s.phases[first:] if s.phases else None, s.values[first:])
    unconfirmed = NO_MOVER if _mover(run, "entropy") is None else ENTROPY_ONLY
    evidence: dict[str, object] = {"update_moved": moved or unconfirmed,
                                   "early_median": c.early, "peak_level": c.level[peak], "succeeded": succeeded,
                                   "peak_step": c.peak_step, "late_median": c.late,
                                   **({"gave_back": c.gave_back()} if succeeded else {}),
                                   **({"risen_from": c.start[0]} if not succeeded and c.rose_early else {}),
                                   "noise": c.noise, "level_points": w,
                                   **({"collapsed_tail_points": late_tail} if late_tail else {})}
    return tail, evidence


def _rating_held(run: Run, c: RewardCourse) -> bool:
    """A self-play rating (``elo``) logged beside the reward ends at or above its level when the reward peaked: in
    self-play the return is scored against an opponent that learns too, so a return that fell while the rating
    held is the opponent's progress, not a collapse (h309-mlagents-ppo-asymmetric-selfplay-hide-and-seek-hider:
    the hiders' return 143 -> -19 as the seekers learned to find them, their ELO 1291 -> 1420)."""
    rating = rating_course(run)
    if rating is None:
        return False
    at_peak = [i for i, st in enumerate(rating.series.steps) if st <= c.peak_step]
    return bool(at_peak) and rating.late >= rating.level[max(at_peak[-1], rating.w - 1)]


#: A reward that rose inside its early window by at least this share of its fall from there learned what it lost
#: (:func:`_fell_above_floor`).
LEARNED_SHARE = 0.5
#: A reward whose last this many logged values all lie far below where it started
#: (:attr:`~advcore.detectors._reward.RewardCourse.collapsed_tail`) collapsed, however late in the run.
TAIL_POINTS = 5
#: ``evidence["update_moved"]`` of a collapse no update metric could confirm: none logged, or only an entropy
#: that stayed put.
NO_MOVER = "no update metric logged"
ENTROPY_ONLY = "only the entropy logged, and it stayed put"
#: The update metrics that can corroborate a collapse.
_MOVERS = ("kl_step", "clip_frac", "kl", "entropy", "grad_norm")
#: An update metric corroborates a collapse when its median over the fall is this many times (or, for
#: the entropy, this fraction of) its median over the success before it.
MOVED = 2.0


def _no_gradient(run: Run, fall_from: int) -> bool:
    """The advantages carried no signal over the fall (from step ``fall_from``): the median of
    ``zero_variance_group_frac`` at least ``TIED``, or of ``adv_std`` at most ``TIE_EPS``, over at least
    3 logged points. With every group tied the policy gradient is zero, so no update can have destroyed
    what the policy had learned: the reward stopped telling samples apart (a newcomer's loop whose reward
    function broke into one coin flip per group at step 150: its level fell from 0.8 to 0.5 while every
    advantage was 0)."""
    for name in ("zero_variance_group_frac", "adv_std"):
        series = metric(run, name)
        if series is None:
            continue
        after = [v for st, v in zip(series.steps, series.values, strict=True) if st >= fall_from]
        if len(after) < 3:
            continue
        level = statistics.median(after)
        if (level >= TIED) if name == "zero_variance_group_frac" else (level <= TIE_EPS):
            return True
    return False


#: a share of tied groups at or above this leaves (almost) no advantage
TIED = 0.95


def _mover(run: Run, name: str) -> Series | None:
    """The update metric ``name`` of :data:`_MOVERS` when it can corroborate a collapse: not a differential
    entropy (:func:`~advcore.detectors._windows.differential`), whose ratios mean nothing."""
    s = metric(run, name)
    return None if s is None or (name == "entropy" and differential(s, run)) else s


def _update_moved(run: Run, success_from: int, success_to: int, fall_from: int) -> dict[str, float]:
    """The update metrics whose level moved between the success (steps ``success_from`` to
    ``success_to``) and the fall (from ``fall_from``): ``kl_step``, ``clip_frac``, ``kl`` or ``grad_norm``
    grown at least ``MOVED`` times, or ``entropy`` changed by that factor either way; name -> ratio."""
    out: dict[str, float] = {}
    for name in _MOVERS:
        s = _mover(run, name)
        if s is None:
            continue
        before = [v for st, v in zip(s.steps, s.values, strict=True) if success_from <= st <= success_to]
        after = [v for st, v in zip(s.steps, s.values, strict=True) if st >= fall_from]
        if len(before) < 3 or len(after) < 3:
            continue
        b, a = statistics.median(before), statistics.median(after)
        if b > 0 and (a >= MOVED * b or (name == "entropy" and a <= b / MOVED)):
            out[name] = a / b
    return out


#: A critic whose explained variance has a late median at least this high fits the returns: its loss grew with
#: them, it did not diverge (h276-sb3-ppo-unitree-a1-mujoco-walk-evalcallback-peaks-then-deterministic-policy-falls:
#: value loss 0.001 while every early return was clipped at 0, up to 101 late, explained variance 0.05 -> 0.89).
CRITIC_FITS = 0.5
#: A critic whose loss stays below the square of this share of the returns' scale errs by less than it (a root mean
#: square error, or a Huber loss's absolute one above 1): however many times its early loss that is, it fits its
#: targets. A critic that first fits a constant return has a tiny early loss (h328-sb3-dqn-triple-acrobot-sparse-
#: reward: a TD loss of 1e-4 while every episode earned -1000, 0.07 once successes entered the buffer, an error of
#: 0.03 % of the returns); the critics that diverged on calibration err by 3 % to 1e8 times their returns.
CRITIC_ERROR = 0.01


def _return_scale(run: Run) -> float:
    """The largest ``|reward_mean|`` logged (0 without a reward): the scale of the returns a critic regresses."""
    s = metric(run, "reward_mean")
    return 0.0 if s is None else max(abs(v) for v in s.values)


def _return_growth(run: Run) -> float:
    """How many times the reward's scale grew from the early to the late window (at least 1): the late
    median of ``|reward_mean|``, or its distance from the early median when that is more, over the early
    one, that floored at a tenth of the reward's range. A critic regressing unnormalised returns has a loss
    that grows with their square (h20-vpg-cartpole-learns-value-loss-grows: returns 18 -> 493, value loss
    603 -> 78,000), and one chasing returns that moved has a loss on the scale of the move (h324-sb3-ppo-
    carla-cruise-control-1pct-tolerance-learns: returns -247 -> 289 across 0, value loss 1.1 -> 283)."""
    s = metric(run, "reward_mean")
    if s is None or not s.judgeable:
        return 1.0
    span = max(s.values) - min(s.values)
    early_median, late_median = statistics.median(s.early()), statistics.median(s.late())
    early = max(abs(early_median), 0.1 * span)
    late = max(abs(late_median), abs(late_median - early_median))
    return max(1.0, late / early) if early > 0 else 1.0


#: The level's smoothing (points of its trailing median) for the late jump.
_SMOOTH = 5


def late_jump(s: Series, factor: float, min_points: int) -> tuple[Series, float, float] | None:
    """The final stretch of ``s`` where it jumped to a level never seen before, as ``(stretch, middle,
    median_before)``; None when there is no such stretch. The stretch is the longest suffix starting
    in the second half of the series whose level (trailing median of 5 points) stays above every
    earlier level, or at least ``factor`` times the median of the series' first half (a blow-up whose
    level swings within the stretch: h62-cs285-hw4-grpo-math-hard-late-entropy-blowup, token entropy
    about 0.08 for 350 steps, then 0.2 to 1.98 from step 454), at least ``min_points`` long, whose
    median is at least ``factor`` times the (positive) median of the points before it; it begins where the points the level's lag covers
    rose past ``middle``, the geometric middle of the two medians."""
    level = rolling_level(s, s.name, _SMOOTH).values
    n = len(level)
    top = [-math.inf]
    for v in level:
        top.append(max(top[-1], v))
    first_half = statistics.median(s.values[: n // 2]) if n >= 2 else 0.0
    low = math.inf
    above_all = above_first_half = None  # the longest suffix of each kind
    for k in range(n - 1, n // 2 - 1, -1):
        low = min(low, level[k])
        if low > top[k]:
            above_all = k
        if first_half > 0 and low >= factor * first_half:
            above_first_half = k
    for start in (above_all, above_first_half):
        if start is None or n - start < min_points:
            continue
        before, after = statistics.median(s.values[:start]), statistics.median(s.values[start:])
        if before > 0 and after >= factor * before:
            break
    else:
        return None
    middle, first = math.sqrt(before * after), start
    while first > max(0, start - _SMOOTH + 1) and s.values[first - 1] >= middle:
        first -= 1
    tail = Series(s.name, s.steps[first:], s.phases[first:] if s.phases else None, s.values[first:])
    return tail, middle, before


#: A KL to the reference at or above ``kl_ref_above`` at the run's first step runs away at this many
#: times that value.
KL_START_FACTOR = 2.0
#: A KL (to the reference or of one update) at or above this many nats is a blow-up even in a log too short
#: for the level rule: the corpus's runs that ran away peak at tens to a few hundred (mbpp-qwen3-4b-grpo-
#: run1-flat: 197 at step 130).
KL_ABSURD = 1e3
#: ... when that first step is at most this one: two updates cannot carry a policy 2 nats from where it
#: began (h249-trl-grpo-orbital-thruster-json-controller-groups-tied-from-step-54, logged every 2 steps:
#: 2.31 at step 2 under an SFT'd LoRA against the base model, 2.21 at step 250).
KL_START_STEP = 2


def _start_level(s: Series) -> float:
    """The level a rise is measured from: the early window's median, or that of its first half when
    lower (a blow-up inside the early window lifts its median: h49-rasbt-grpo-kl-qwen3-06b-math-entropy-blowup,
    token entropy about 0.3 over the first 50 of 500 steps and 11.9, uniform over the vocabulary, from step 75)."""
    early = s.early()
    return min(statistics.median(early), statistics.median(early[:max(MIN_WINDOW, len(early) // 2)]))


def _at_least(cut: float) -> Callable[[float], bool]:
    return lambda v: v >= cut


def _checks(run: Run, knobs: Mapping[str, float | int]) -> list[_Check]:
    out: list[_Check] = []
    kl_step = metric(run, "kl_step")
    if kl_step is not None:
        cut = float(knobs["kl_step_above"])
        out.append(_Check("kl_step", kl_step, lambda v: v >= cut, f"kl_step >= {cut:g}",
                          "single updates move the policy far outside the trust region", bar=cut))
    improving = improving_reward(run) is not None
    clip = metric(run, "clip_frac")
    if clip is not None and not improving:  # a high clip fraction while the return keeps rising
        cut_clip = float(knobs["clip_above"])
        out.append(_Check("clip_frac", clip, lambda v: v >= cut_clip, f"clip_frac >= {cut_clip:g}",
                          "most of the batch leaves the clip range in one update", bar=cut_clip))
    kl = metric(run, "kl")
    if kl is not None:
        # a KL already past the bar at the run's first step, before any update moved the policy, measures
        # a policy that never was its reference (a GRPO run on an SFT'd adapter against the base model:
        # h77-unsloth-grpo-llama31-8b-router-after-sft-tied-groups, 2.8 at step 1, unchanged for 46 steps):
        # it runs away when it leaves that start, at twice it (also from a first point at step
        # ``KL_START_STEP``). A first point logged after more updates may be the blow-up itself
        # (mbpp-qwen3-4b-grpo-run1-flat: 12.1 at step 5)
        cut_kl = float(knobs["kl_ref_above"])
        start = kl.values[0]
        offset = ""
        if kl.steps[0] <= KL_START_STEP and start >= cut_kl:
            cut_kl, offset = KL_START_FACTOR * start, f" (twice its value {start:.3g} at the first logged step)"
        # past the bar from the early window, back under it by the end, while the reward rose and held: an
        # early excursion the run recovered from (h106-nanogpt-qlearning-graph-kl-dip-recovers: 2.2 to 2.9
        # over its first 1,000 of 6,500 iterations, 0.85 at the end, success 0.6 -> 0.93); a runaway later in
        # the run stays one even when it comes back down (the lab's entropy_collapse: past 2 at step 73 of 100)
        level = rolling_level(kl, "kl level")
        past = [i for i, v in enumerate(level.values) if v >= cut_kl]
        recovered = (kl.judgeable and bool(past) and past[0] < window_len(len(kl))
                     and statistics.median(kl.late()) < cut_kl and improving)
        if not recovered:
            out.append(_Check("kl", level, lambda v: v >= cut_kl,
                              f"the KL to the reference (median of 5 points) >= {cut_kl:.3g}{offset}",
                              "the policy ran away from its reference", bar=cut_kl))
    for name, knob, what in (("entropy", "entropy_rise", "the policy blew up into noise"),
                             ("action_std", "entropy_rise", "the policy's exploration noise blew up"),
                             ("value_loss", "value_loss_rise", "the critic diverged"),
                             ("grad_norm", "grad_rise", "the gradients exploded")):
        s = metric(run, name)
        if s is None or not s.judgeable:
            continue
        if name == "entropy" and differential(s, run):
            # a Gaussian policy's entropy that crosses 0 has no level a ratio can be taken of
            # (h181-mlagents-sac-lstm-seeker-learns-then-collapses-below-random: -1.08 to 1.04 in its early window)
            continue
        # a critic's loss starts tiny while it fits the first returns and grows with them: judged on the whole early
        # window (h26-tianshou-ddpg-pendulum-learns: a median of 0.018 over its first 480 of 4,800 points, 0.044
        # over its first 960, 2.8 over the last 960)
        early = s.early_median() if name == "value_loss" else _start_level(s)
        growth = _return_growth(run) if name == "value_loss" else 1.0
        cut_rise = float(knobs[knob]) * early * growth ** 2
        # a blow-up that is still there at the end: one the critic recovers from is a warm-up
        # (mountaincar-actor-critic-floor: value loss 0.01 -> 7,133 in 4 steps, then 0 once returns are constant)
        if not early > 0 or statistics.median(s.late()) < cut_rise:
            continue
        if name == "grad_norm" and early <= NO_GRADIENT:
            # a rise from no gradient is not an explosion: a GRPO run whose groups all tie has a norm of about 0
            # (h362-unsloth-trl-grpo-qwen25-15b-instruct-gsm8k-tag-only-rewards: 1.2e-11 early, 2.7e-05 at most)
            continue
        explained = metric(run, "vf_explained_var") if name == "value_loss" else None
        if explained is not None and statistics.median(explained.late()) >= CRITIC_FITS:
            continue
        if name == "value_loss" and statistics.median(s.late()) < (CRITIC_ERROR * _return_scale(run)) ** 2:
            continue
        scaled = f" x the reward's growth squared ({growth ** 2:.3g})" if growth > 1.0 else ""
        out.append(_Check(name, rolling_level(s, f"{name} level"), _at_least(cut_rise),
                          f"{name} (median of 5 points) >= {float(knobs[knob]):g} x its early level {early:.3g}"
                          f"{scaled} = {cut_rise:.3g}", what, _at_least(math.sqrt(cut_rise * early)), bar=cut_rise))
    # a jump at the end that the whole-run rise does not reach yet
    entropy = metric(run, "entropy")
    # a ratio of entropies means something only for a categorical (token, discrete-action) policy: a
    # Gaussian policy's differential entropy can be negative (h23-sb3-ppo-panda-negative-entropy-learns)
    jump = None
    if entropy is not None and min(entropy.values) > 0 and not run.has("action_std"):
        jump = late_jump(entropy, float(knobs["entropy_jump"]), int(knobs["min_points"]))
    if jump is not None and not any(c.name == "entropy" for c in out):
        tail, middle, before = jump
        out.append(_Check("entropy", tail, _at_least(middle),
                          f"the entropy jumped at the end to a level never seen before, at least "
                          f"{float(knobs['entropy_jump']):g} x its median before ({before:.3g}); points >= {middle:.3g}",
                          "the policy is blowing up into noise", bar=middle))
    return out


#: A reward that fell after an update-KL spike counts as damaged when its drop is at least this
#: share of the range of its level over the run (besides ``SUCCESS_NOISE`` times its noise).
SPIKE_DROP_SHARE = 0.1


def _unrecovered_spike(run: Run, kl_step: Series, cut: float) -> tuple[int, dict[str, object]] | None:
    """The first update-KL spike (``kl_step`` >= ``cut``) that the reward never recovered from, as its
    index in ``kl_step`` and the evidence; None when there is none. The reward's median over the
    ``w`` points before the spike (``w`` as for :func:`reward_course`, or the fewer logged before it) is its level then; after the
    spike, every level over a full window stays below it by more than ``SUCCESS_NOISE`` times the
    reward's noise and by at least ``SPIKE_DROP_SHARE`` of the level's range over the run."""
    c = reward_course(run)
    if c is None:
        return None
    r, w = c.series, c.w
    span = max(c.level[w - 1:]) - min(c.level[w - 1:])
    for i, (step, value) in enumerate(zip(kl_step.steps, kl_step.values, strict=True)):
        if value < cut:
            continue
        j = bisect.bisect_left(r.steps, step)  # the first reward point at or after the spike
        if j < 1 or len(r) - j < 2 * w:
            continue
        # the reward's level before the spike, over what was logged before it when that is less than a window (a
        # first update that moved the policy 37 nats: h327-sb3-ppo-airsim-drone-lr-0.1, one logged return before it)
        before = statistics.median(r.values[max(0, j - w):j])
        after = max(c.level[j + w - 1:])
        drop = before - after
        if drop > SUCCESS_NOISE * c.noise and drop >= SPIKE_DROP_SHARE * span:
            return i, {"reward_before": before, "reward_best_after": after, "reward_noise": c.noise,
                       "level_points": w, "kl_step_at_spike": value}
    return None


def _spike_finding(run: Run, s: Series, idx: list[int], cut: float) -> Finding | None:
    """The finding for the first of the update-KL spikes ``idx`` of ``s`` that the reward never recovered from."""
    spike = _unrecovered_spike(run, s, cut)
    if spike is None:
        return None
    at, ev = spike
    message = (f"At step {s.steps[at]} one update moved the policy by {s.values[at]:.3g} nats (kl_step), and the "
               f"reward never recovered: {ev['reward_before']:.4g} before, at best {ev['reward_best_after']:.4g} after "
               f"({len(idx)} such spikes in {len(s)} points).")
    evidence: dict[str, object] = {"metric": "kl_step", "source": run.sources.get("kl_step"),
                                   "condition": f"a kl_step >= {cut:g} the reward never recovered from",
                                   "unstable_points": len(idx), "judged_points": len(s),
                                   "unstable_steps": [s.steps[i] for i in idx[:20]], **ev, **s.where(at)}
    return Finding(ID, "error", "U", s.steps[at], evidence, message, WHAT_TO_TRY)


def is_collapse(finding: Finding) -> bool:
    """``finding`` is this detector's, dated by the collapse of the reward: the run's main event, which
    leads the verdict among the findings of its stage (h263-mlagents-ppo-stickyrush-myrun-learns-then-
    collapses-with-entropy: the return held 60 to 95 for 4 million steps, then fell to -265 at 5.4M; the
    entropy's steady fall from 2.6M was the warning, not the failure)."""
    return finding.id == ID and finding.evidence.get("condition") in (COLLAPSE_AFTER_SUCCESS, COLLAPSE_BELOW_START)


def _collapse_finding(run: Run, knobs: Mapping[str, float | int]) -> Finding | None:
    found = _collapse_after_success(run, float(knobs["giveback"]))
    if found is None:
        return None
    tail, ev = found
    onset = tail.steps[0]
    what = COLLAPSE_AFTER_SUCCESS if ev["succeeded"] else COLLAPSE_BELOW_START
    evidence: dict[str, object] = {"metric": "reward_mean", "source": run.sources.get("reward_mean"),
                                   "condition": what, **ev, **tail.where(0)}
    message = (f"The reward collapsed {'after success' if ev['succeeded'] else 'far below its early level'}: its "
               f"level peaked at {ev['peak_level']:.4g} at step {ev['peak_step']}, then fell from step {onset} to "
               + (f"a median of {statistics.median(tail.values):.4g} over its last {len(tail)} logged points"
                  if "collapsed_tail_points" in ev else f"{ev['late_median']:.4g} by the end")
               + f" (its early median was {ev['early_median']:.4g}"
               + (f", risen from {ev['risen_from']:.4g} at its first logged steps" if "risen_from" in ev else "")
               + "): the updates "
               f"destroyed what the policy {'had learned' if ev['succeeded'] else 'could do'}"
               + (" (no update metric logged could confirm it: log the KL, clip fraction or gradient norm)."
                  if ev["update_moved"] == NO_MOVER else
                  " (only the entropy was logged, and it stayed put, as a Gaussian policy's can through a collapse: "
                  "log the KL, clip fraction or gradient norm to confirm it)." if ev["update_moved"] == ENTROPY_ONLY
                  else "."))
    return Finding(ID, "error", "U", onset, evidence, message, WHAT_TO_TRY)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate UPDATE_UNSTABLE on ``run`` with resolved ``knobs``."""
    checks = _checks(run, knobs)
    collapse = _collapse_finding(run, knobs)
    if not checks and collapse is None:
        if any(run.has(name) for name in METRICS):  # judged: a rise that did not last is no check
            return None
        return NotEvaluable(ID, (", ".join(METRICS[:-1]) + " or " + METRICS[-1],))
    need = int(knobs["min_points"])
    hits: list[tuple[str, Finding]] = []
    for check in checks:
        s = check.series
        idx = [i for i, v in enumerate(s.values) if check.unstable(v)]
        spread = check.name in ("kl_step", "clip_frac")  # single updates, not levels
        # a log too short to hold ``need`` points holds a fact all the same: a KL no policy reaches
        # (h1-rookworld-trl-grpo-kl-explosion-step10: one logged step, the KL to the reference 2.4e15)
        absurd = len(s) < need and check.name in ("kl", "kl_step") and any(v >= KL_ABSURD for v in s.values)
        if absurd:
            idx = [i for i, v in enumerate(s.values) if v >= KL_ABSURD]
            what = "the KL to the reference" if check.name == "kl" else "kl_step"
            check = _Check(check.name, s, _at_least(KL_ABSURD), f"{what} >= {KL_ABSURD:g} nats, which no policy "
                           "reaches, in a log too short for a level", check.what, bar=KL_ABSURD)
        elif len(idx) < max(need, math.ceil(MIN_POINT_SHARE * len(s)) if spread else need):
            spike = _spike_finding(run, s, idx, float(knobs["kl_step_above"])) if check.name == "kl_step" else None
            if spike is not None:
                hits.append(("kl_step spike", spike))
            continue
        worst = max(s.values[i] for i in idx)
        first = idx[0]
        if spread:
            # single updates are dated where they recur: the first that ``need`` of them follow within a tenth of the
            # run, not an isolated pair long before (h341-sb3-ppo-climbbot-two-arm-reach: approx_kl 1.2 and 3.0 at
            # 127k steps, then the reward rose for 380k more; from 475k one update after another at 2 to 17)
            span = window_len(len(s))
            first = next((i for k, i in enumerate(idx) if k + need <= len(idx) and idx[k + need - 1] - i < span), first)
        if check.rising is not None:  # date a rise from where it began: the stretch above the middle that led to the bar
            while first > 0 and check.rising(s.values[first - 1]):
                first -= 1
        evidence: dict[str, object] = {
            "metric": check.name,
            "source": run.sources.get(check.name),
            "condition": check.describe,
            **({THRESHOLD: check.bar} if check.bar is not None else {}),
            "unstable_points": len(idx),
            "judged_points": len(s),
            "unstable_steps": [s.steps[i] for i in idx[:20]],
            "worst": worst,
            **({"past_bar_step": s.steps[idx[0]]} if first != idx[0] else {}),
            **s.where(first),
        }
        message = (f"From step {s.steps[first]} the updates are too large ({check.describe} at {len(idx)} of "
                   f"{len(s)} points, up to {worst:.3g}): {check.what}.")
        try_ = _TRY.get(check.name, WHAT_TO_TRY)
        hits.append((check.name, Finding(ID, "error", "U", s.steps[first], evidence, message, try_)))
    if collapse is not None:
        hits.append((COLLAPSE_AFTER_SUCCESS, collapse))
    # the check that fired first dates the finding (an entropy blow-up before the KL ran away)
    return first_of_checks(sorted(hits, key=lambda hit: hit[1].onset_step if hit[1].onset_step is not None else math.inf))


CARD = Card(
    tagline="the policy updates are too large",
    key_metrics_note="`kl_step` is the KL between the rollout policy and the updated one (SB3 and PPO "
        "`approx_kl`, verl `actor/ppo_kl`); `kl` is the KL to the reference policy",
    happening="""
        Each update moves the policy much further than the data supports: the importance ratios leave the
        clip range for most of the batch, the KL of one update is measured in nats instead of hundredths,
        the policy drifts away from its reference until what it generates is degenerate, or the critic's
        regression target explodes. The run does not stall — it destroys what it learned. Causes: a
        learning rate or number of PPO epochs far too high for the batch, old log-probabilities that do
        not belong to the rollout policy, a KL penalty too weak to hold the policy, unnormalised returns.
    """,
    looks_like="""
        SB3's `train/approx_kl` at 52.5 and 48.9 on the first two updates with `train/clip_fraction` 0.94
        and 0.96 (carla-sb3-ppo-kl-blowup; `value_loss` up to 32,080, explained variance −13.9); a KL to
        the reference rising from 0.8 to 17 nats per token in ten steps while responses shrink to one
        token and the score falls to its floor (opd-qwen3-4b-length-collapse).
    """,
    decides="""
        A log too short for three points (one or two logged steps) is judged on a fact instead: a KL to
        the reference or of one update of at least 1,000 nats (`KL_ABSURD`), which no policy reaches
        (h1-rookworld-trl-grpo-kl-explosion-step10: one step logged, its KL 2.4e15).
        A logged point is *unstable* when `kl_step` ≥ `kl_step_above`, or `clip_frac` ≥ `clip_above`, or
        the level of `kl` to the reference (trailing median of 5 points, so one spike is no level) ≥
        `kl_ref_above` (or, when it is already there at the run's first step, at step 2 at the latest, ≥ twice
        that first value: a policy that never was its reference, an SFT'd adapter against the base model whose KL is 2.8 from step 1 and stays there,
        h77-unsloth-grpo-llama31-8b-router-after-sft-tied-groups, or 2.31 at step 2 of a run logged every 2 steps,
        h249-trl-grpo-orbital-thruster-json-controller-groups-tied-from-step-54; not when it was past that bar from the
        early window and the late window's median is back under it while the reward rose and held:
        h106-nanogpt-qlearning-graph-kl-dip-recovers,
        2.2 to 2.9 over its first 1,000 iterations, 0.85 at the end, success 0.6 to 0.93), or the level of `entropy` ≥ `entropy_rise` × its start level (the early
        window's median, or its first half's when lower: h49-rasbt-grpo-kl-qwen3-06b-math-entropy-blowup
        blows up at step 52 of 500, inside the early window; judged when that level is
        positive and never below 0: a Gaussian policy's differential entropy that crosses 0 has no level a
        ratio means and is not judged, one that stays positive, as SB3's often does, is judged like a categorical
        one), or the level of
        `action_std` (a Gaussian policy's standard deviation, SB3 `train/std`) ≥ `entropy_rise` × its
        start level (sb3-acrobot-effort-std-blowup: 1.0 to 81.7), or the level of
        `value_loss` ≥ `value_loss_rise` × its early median (a critic's loss starts tiny while it fits
        the first returns: h26-tianshou-ddpg-pendulum-learns) × the square of the reward's growth (late
        median of |`reward_mean`|, or its distance from the early median when that is more, over the early
        one, floored at a tenth of its range: an MSE on unnormalised returns grows with their square;
        h20-vpg-cartpole-learns-value-loss-grows learns from 18 to 493 while its value loss goes from 603 to
        78,000; h324-sb3-ppo-carla-cruise-control learns from -247 to 289 while its value loss goes from 1.1
        to 283), unless `vf_explained_var` ends at
        0.5 or more (a critic that fits its returns has not diverged: h276-sb3-ppo-unitree-a1-mujoco-walk-
        evalcallback, 0.05 to 0.89) or the late loss is below the square of 1 % of the largest return (a critic
        that first fitted a constant return: h328-sb3-dqn-triple-acrobot-sparse-reward, a TD loss of 1e-4 while
        every episode earned -1000, 0.07 once successes entered its buffer), or the level of `grad_norm` ≥
        `grad_rise` × its start level (the gradients exploded: h59-cs336-grpo-noclip-offpolicy-nan-collapse,
        an off-policy GRPO loss without its clip; not from a start level of 1e-6 or less, no gradient at all:
        h362-unsloth-trl-grpo-qwen25-15b-instruct-gsm8k-tag-only-rewards, every group tied, 1.2e-11 early);
        these rises count only when the median
        of the late window is past the bar too (a critic that blows up for four steps and then fits
        constant returns, as in mountaincar-actor-critic-floor, recovered). It fires when one of these checks has at
        least `min_points` unstable points: one spike that recovers is routine. Fewer `kl_step` spikes
        count when the reward never recovered from one: after it, the reward's level (trailing median
        over a tenth of the run) stays below its median over that many points before the spike by more
        than 3 times its step-to-step noise and a tenth of its range (h44-rlgames-ppo-isaacgym-yumicube-
        kl-spikes-collapse: an update KL of 3.98 at frame 272,629,760, a return of -14.7 before it and
        at best -24.7 after), or over what was logged before it when that is fewer points
        (h327-sb3-ppo-airsim-drone-lr-0.1: 37.3 nats on the first update, -100.3 before, at best -877 after). Onset: the first unstable point of the check that fired first (an entropy
        blow-up before the KL ran away); the others are listed in `evidence["also"]`; single updates (`kl_step`,
        `clip_frac`) are dated at the first that `min_points` of them follow within a tenth of the run
        (h341-sb3-ppo-climbbot-two-arm-reach: approx_kl 1.2 and 3.0 at 127k steps, then below 1 while the return
        rose for 380k more, from 475k one update after another at 2 to 17); a rise (entropy, action std, value loss, grad norm) is dated from where it began, the
        first point of the stretch above the geometric middle of its early level and its bar that led
        past the bar (the crossing stays in `evidence["past_bar_step"]`:
        h19-spinup-vd3-critic-divergence-halfcheetah's Q loss passes 10 times its early level at epoch 9
        and its bar at epoch 31). A blow-up still under way when the log ends is caught by the entropy's
        *late jump*: a final stretch (at least `min_points`, in the second half) whose level stays above
        every earlier level or, swinging as it blows up, at least `entropy_jump` × the median of the
        first half (h62-cs285-hw4-grpo-math-hard-late-entropy-blowup: token entropy about 0.08 for 350
        steps, then 0.2 to 1.98 from step 454), with a median at least `entropy_jump` × the median before it, dated where
        the points rose past the geometric middle of the two medians; judged for a categorical policy only
        (every entropy positive, no `action_std`). h31-cs285-sp26-grpo-math-hard-late-entropy-kl-blowup:
        token entropy 0.08 for 480 steps, 0.3 to 0.8 over the last 20 while the KL to the reference
        triples. Not evaluable without any of these metrics.

        *Collapse after success.* The level of `reward_mean` (trailing median over a tenth of the run,
        at least 5 points) rose from the early window's median to a peak before the late window, stayed
        above half-way for at least that many points, by more than 3 times the reward's step-to-step
        noise, and the late window's median gave back at least `giveback` of the gain (for a reward of
        two values, a 0/1 success per episode whose median is a majority vote, its means gave back as much:
        h347-tabular-q-frozenlake-slippery, the median 1 at episode 1,174 and 0 late, the means 0.57 at best
        and 0.46 late, learned and held); a reward exactly 0 at 3/4 of its points has excursions from its floor, not successes
        (h109-cs294-dqn-montezuma-reward-floor: a mean over 100 episodes of 1.0 at 5 of 62 points). A falling reward
        alone does not say the updates caused it (a reward that stops being paid falls the same way: the
        lab's `floor` fault), so when the log has a metric of the update's size, it counts only when one
        moved with it: `kl_step`, `clip_frac`, `kl` or `grad_norm` at least 2 times higher over the fall than over
        the success, or `entropy` changed by that factor either way (`evidence["update_moved"]`; not an entropy
        that goes below 0, a Gaussian policy's differential entropy, whose ratios mean nothing:
        h181-mlagents-sac-lstm-seeker-learns-then-collapses-below-random swings between -1.08 and 1.04
        while it learns). An entropy that stayed put clears nothing: a Gaussian policy's entropy follows its
        log-std, which a collapse need not move (ML-Agents logs only `Policy/Entropy`:
        h270-mlagents-ppo-selfdriving-car-gamma0.9-learns-route-then-gives-half-back falls from a level of 785
        to 412, its entropy within a factor 2; h191-mlagents-ppo-badminton-run3-peaks-then-collapses-and-stalls
        and h176-mlagents-sac-crawler-with-attacker-learns-then-collapses-for-good alike). A log without any
        (classic-control loggers write the return and the losses only) is judged on the reward alone,
        and the finding says nothing confirmed it: h33-cs285-f23-pg-lunarlander-gae-lambda1-collapse
        reaches a return of about 270 by iteration 210 and falls to -131 at 240 for good. Onset: where
        the fall began: the change down of the reward after the peak (least squares), moved back to the top of the level's
        descent into it (across dips smaller than 3 noises, up to the peak's height or a rise before
        the descent: h57-rlgames-isaacgym-peginhole dips and recovers between its peak and its final
        fall), since a gradual decline has its change point half-way down; only a change down counts
        (h108-cs294-hw5b-sac-reinforce-ant falls from about 400 at iteration 140 to -2,700, then
        recovers partly to -400: its largest change is the recovery).
        sb3-acrobot-collapse-after-success: -7514 early, a level of -5261
        at step 291,840, -7946 late with every episode at the time limit, clip fraction 4.7 times higher;
        onset 391,168. A reward that never succeeded collapsed too when its late median lies 10 times
        its noise (or 5 times, every late value below every early one: h333-mlagents-ppo-curiosity-camp-
        kawanakwa-killer, -8.2 to -0.3 early, -12.6 to -23.7 late, 8 noises; or 3 times, down a decline whose
        values rank with the step at a Spearman correlation of -0.6 or below over 20 points or more:
        h186-mlagents-poca-object-collector-constant-beta-entropy-grows-return-halves, 21.8 to 11.4, 4.7 noises,
        -0.66 over 333 points), and at least half its level's
        range, below its early median, and does not end held at its floor (REWARD_FLOOR's to report) unless it
        had risen to its early level from its start by at least half its fall from there: what it lost was learned
        (h393-sb3-ppo-custom-hopper-source-constant-lr-3e-3-gamma-0.99-learns-to-855-then-collapses-at-410k-to-falling-at-once-twice:
        12 at its first episodes, a median of 320 over its first fifth, 14 over its last; the cost,
        h116-overcooked-ppo-selfplay-no-entropy-collapse, whose return is a shaping bonus decayed by design). No
        healthy run of the
        corpus falls even 3 noises below its start, runs that never learn drift 3 to 5 below, while
        h93-pymarl-dcg-smac-3s5z-td-loss-blowup-return-collapse falls 28 (11.8 to 4.4, grad norm 20
        times higher) and h73-cs285f22-dqn-lunarlander-lr3e-2-td-loss-blowup 12. A collapse too late for
        the late window's median to show it counts too: the last `TAIL_POINTS` (5) or more logged values
        (fewer than half the late window) all lie 10 noises below the early median, and the late window is
        not held at the floor (h176-rslrl-ppo-h1-humanoid-teleop-learns-then-collapses-at-59k: 982 returns
        between 30 and 211, then 18 between -159 and -2,205; onset the first of them,
        `evidence["collapsed_tail_points"]`), or, after a success, all lie below what keeps a quarter of the
        gain with their median 10 noises below the level of the points before them
        (h228-rlgames-isaacgym-walkbot-learns-then-return-crashes-below-start-at-end: its last 6 of 259
        epochs). Runs with curriculum phases are not judged this way, nor a fall within 2 % of the reward's span
        (h323-sb3-tqc-mujoco-foosball-ball-never-moves: 2,350 +- 1.5 at every episode), nor a fall over which the advantages
        carried nothing (`zero_variance_group_frac` at least 0.95 or `adv_std` 0 in median): with every
        group tied no update happened, the reward stopped telling samples apart; nor one over which a
        self-play rating (`elo`) ends at or above its level when the reward peaked: the return is scored
        against an opponent that learns too (h309-mlagents-ppo-asymmetric-selfplay-hide-and-seek-hider: the
        hiders' return 143 -> -19 as the seekers learned to find them, their ELO 1291 -> 1420).
    """,
    related="""
        The opposite of UPDATE_SUPPRESSED (the update is ~0). A clip fraction pinned near 1 with a KL
        early stop ending every update is a mismatch between the rollout and the trained policy, which
        UPDATE_SUPPRESSED also reports. ENTROPY_COLLAPSE often follows a blow-up (the policy collapses onto
        one degenerate output); REWARD_FLOOR, DEGENERATE_GROUPS and REWARD_STD_DEATH then describe its
        consequence at the reward, and the verdict leads with the update when it began first.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="error",
    stage="U",
    summary="updates too large: KL blow-up, clip fraction high, entropy or value-loss explosion, a collapse "
            "after success",
    key_metrics=METRICS,
    fn=detect,
    knobs=(
        Knob("kl_step_above", 1.0, "an update KL (nats) at or above this = a blow-up", low=0.0,
             why="PPO aims at 0.01 to 0.05 per update (SB3 `target_kl`, verl's clip); the calibration runs log at "
                 "most 0.01 (carla constant-obs), 0.008 (verl qwen7b) and 0.003 (verl quickstart), while "
                 "carla-sb3-ppo-kl-blowup logs 52.5, 48.9, 7.1 and 19.3."),
        Knob("clip_above", 0.5, "clip_frac at or above this = most of the batch clipped", low=0.0, high=1.0,
             why="Healthy runs clip 0 to 12 % (carla constant-obs at most 0.12, budget-router at most 0.05, verl "
                 "runs below 0.01); carla-sb3-ppo-kl-blowup clips 0.94, 0.96, 0.96 and 0.74, "
                 "sb3-ppo-carla-kl-climb-collapse 0.53 to 0.63 while its return falls from 539 to 237. A MuJoCo "
                 "PPO2 run that clips 0.70 to 0.76 while its return climbs from 39k to 150k "
                 "(h7-baselines-ppo2-humanoidstandup-good-high-clipfrac) is not judged on its clip fraction: "
                 "see the improving-reward rule."),
        Knob("kl_ref_above", 2.0, "the KL to the reference (nats per token, median of 5 points) at or above this",
             low=0.0,
             why="Healthy calibration runs stay below 0.6 as a level, with single spikes to 2.6 and 3.3 "
                 "(unsloth-llama32-3b, unsloth-qwen3-4b) that the median of 5 points removes; "
                 "opd-qwen3-4b-length-collapse holds 17."),
        Knob("entropy_rise", 10.0, "entropy level at or above this x its start level = blow-up", low=1.0,
             why="An order of magnitude: entropy declines in healthy runs and rises by at most 20 % "
                 "(carla, budget-router)."),
        Knob("entropy_jump", 3.0, "a final stretch of the entropy above every earlier level, with a median at "
             "least this x the median before it = a blow-up under way", low=1.0,
             why="h31-cs285-sp26-grpo-math-hard-late-entropy-kl-blowup (validation batch 12, studied after its "
                 "score): entropy 0.08 for 480 steps, a level of 0.3-0.8 over the last 20 (3.9 x); no healthy "
                 "calibration run has such a stretch with a positive entropy (LLM entropies decline, SB3's "
                 "Gaussian entropies are negative)."),
        Knob("value_loss_rise", 100.0, "value-loss level at or above this x its early median = divergence",
             low=1.0,
             why="Two orders of magnitude: a critic's loss falls as it fits, and moves within one order as the "
                 "returns grow."),
        Knob("grad_rise", 100.0, "grad_norm level at or above this x its start level = the gradients exploded",
             low=1.0,
             why="Two orders of magnitude, as for the value loss: h59-cs336-grpo-noclip-offpolicy-nan-collapse (an "
                 "off-policy GRPO loss without its clip) goes from about 0.005 to 0.2-4 per micro-step from GRPO step "
                 "31 on, a late median 112 x its start, before its loss turns NaN at step 99. Of the 58 calibration "
                 "runs with a judgeable grad_norm, the healthy one whose level rises the most "
                 "(h59-cs336-grpo-reinforce-baseline-lr1e5-learns) peaks at 45 x and ends at 14 x its start."),
        Knob("giveback", 0.75, "share of the reward's gain lost by the end = a collapse after success", low=0.0,
             high=1.0,
             why="sb3-acrobot-collapse-after-success gives back 1.19 of its gain (ends below its start); the "
                 "healthy calibration runs whose reward level moves the most give back at most 0.73 "
                 "(simplevla-dense-phase-gradclip-libero, a gain within its noise) and the ones that learn keep "
                 "their gain."),
        Knob("min_points", 3, "unstable points needed (a spike that recovers is routine)", low=1, integer=True,
             why="carla-sb3-ppo-kl-blowup has 4 update-KL spikes over 1; unsloth-llama32-3b (healthy) has "
                 "single KL-to-reference spikes."),
    ),
    what_to_try_cases=(("Updates too large, or a collapse after success", WHAT_TO_TRY),
                       ("The KL to the reference runs away", WHAT_TO_TRY_REFERENCE),
                       ("The critic diverges", WHAT_TO_TRY_CRITIC),
                       ("The entropy or the action noise explodes", WHAT_TO_TRY_NOISE),
                       ("The gradients explode", WHAT_TO_TRY_GRADIENTS)),
    card=CARD,
)
