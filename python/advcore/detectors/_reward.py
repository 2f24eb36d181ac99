"""Where the reward mean sits and whether its spread is gone: the one reading of the reward level
shared by :func:`advcore.diagnose.reward_regime` and the REWARD_SATURATION / REWARD_FLOOR detectors.

Regimes, judged on the late window (last 20 % of the logged points, see :mod:`._windows`):

* ``saturation``: the late reward mean sits within ``rel_tol`` x span of the *ceiling*
  (``max(reward_max)`` when logged, else the run's highest reward mean), barely moves (late range
  at most ``rel_tol`` x span, or, when a logged spread says it is gone, the late median at the
  ceiling: h26-cs285-hw4-grpo-format-copy-saturates sits at exactly 1.3 on 7 of its last 10 steps
  and dips to 1.27 on the others), lies above the run's lowest mean, and the spread is gone;
* ``floor``: the same at the *floor* (``min(reward_min)`` or the run's lowest mean), or a reward
  mean of exactly 0 at every logged step (the reward is not wired), with the spread gone; or a
  reward mean of exactly 0 on at least ``ZERO_SHARE`` (3/4) of the logged steps and of the late
  window (:func:`holds_share`: within its binomial noise), whatever the others, when the spread is
  not shown to be alive at the late steps whose mean is 0: the run sits at 0 with excursions, not a
  constant (recall-l3-qwen7b-grpo-skipall-tied: 0 on 62 of 72 steps, -0.25 or -0.125 on the rest,
  the policy abstaining on every prompt); or, without a logged spread, a late window at least 3/4
  of whose points lie within ``rel_tol`` x span of the run's floor, its median there;
* ``tied_groups``: the late mean still moves from step to step (prompts differ) while the spread
  is ~0 (``<= 1e-6`` x span) or at least 80 % of the groups are tied.

``span = max(hi - lo, |hi|, |lo|, 1e-12)`` over the run's reward means (reward units).

The spread is gone when the late-window mean of the reward spread (``reward_std``, else
``reward_std_within``, else ``reward_max - reward_min``) is at most ``spread_gone`` (0.1) x
``ceiling - floor`` (or ``<= 1e-6`` x span when that range is 0). Without a spread metric the
tied-group share (``zero_variance_group_frac`` late mean >= 0.8) decides; without either, a late
reward mean that is exactly constant counts as no spread (a batch mean does not stay bit-identical
while samples differ), and so does, for the floor only, a late mean held within ``rel_tol`` of the
run's floor (an SB3 episode return averages 100 episodes: at its floor it is not bit-identical,
sb3-chess-dead-nsteps10 at -100000 with rare -99998.99).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from advcore.detectors._base import Finding, Outcome
from advcore.detectors._windows import (Series, aligned, change_point, fmean, held_since, last_onset_index, metric,
                                       onset_index, reward_spread, rolling_level, step_noise, window_len)
from advcore.model import Run
from advcore.stats import spearman

__all__ = ["BRIEF_POINTS", "CONTROL_TRAINERS", "FALL_NOISE", "FROZEN_MOVED", "FROZEN_OFF", "FROZEN_POINTS",
           "FROZEN_SHARE", "HELD_SHARE", "MEDIAN_ERROR", "NEVER_BACK_NOISE", "REL_TOL", "SPREAD_GONE", "SUCCESS_NOISE",
           "TIED_LATE", "VAL_POINTS", "VAL_RISE_RHO", "ZERO_SHARE", "Regime", "RewardCourse", "RewardLevel",
           "answered_by_validation", "environment_run", "episodic_reward", "improving_reward", "other_rise", "rating_course",
           "reward_course", "reward_level", "success_course", "validation_logged", "validation_rose",
           "validation_text"]

Regime = Literal["saturation", "floor", "tied_groups"]

#: Relative tolerance (of the reward span) for "at the ceiling / floor" and "does not move".
REL_TOL = 0.02
#: Late spread at most this fraction of ``ceiling - floor`` = no spread left.
SPREAD_GONE = 0.1
#: Late tied-group share at or above this = the groups carry no spread.
TIED_LATE = 0.8
#: Share of the logged reward means (and of the late window) exactly 0 that puts the run at its floor.
ZERO_SHARE = 0.75
#: One-sided 95 % normal quantile: a late window's share of points at the floor is read as consistent
#: with ``ZERO_SHARE`` unless it lies this many binomial standard errors below it (h86 sparse judge:
#: 0 on 120 of 145 steps, on 21 of the last 29).
SHARE_Z = 1.645


def holds_share(share: float, n: int) -> bool:
    """Whether ``share`` of ``n`` points is consistent with at least :data:`ZERO_SHARE` of them (a
    one-sided binomial bound, :data:`SHARE_Z` standard errors below)."""
    return n > 0 and share >= ZERO_SHARE - SHARE_Z * (ZERO_SHARE * (1 - ZERO_SHARE) / n) ** 0.5

#: A reward read from a key (or counted by a step key) naming one of these is an episode return (SB3
#: ``rollout/ep_rew_mean``, a hand-written loop's ``episode_return``, ``episodes,rewards``: h49 easy-rl
#: REINFORCE; ML-Agents' ``Environment/Cumulative Reward``: h251-mlagents-ppo-rollercube-run2-solves-in-
#: 30k-and-holds, exactly 1 from step 30,000): at its ceiling the environment is solved, an outcome, not a lost signal
#: (sb3-invertedpendulum-dr-solved: 1000, the episode cap, from step 149,504). A step counted in ``timesteps``
#: counts an environment's steps (h269-sb3-ppo-pygame-car-track-learns-to-full-episodes-45-ceiling: 45, a full
#: episode without a crash, from 65,000 steps).
EPISODIC = ("ep_rew", "episode", "return", "cumulative reward", "timestep")


def episodic_reward(run: Run) -> str | None:
    """The key that makes ``reward_mean`` an episode return (its source, else the step key, else the counter a
    printed log's lines begin with: ``Episode 10, reward: -439.4`` is an episode's return, h451-handwritten-ddpg-
    fixed-wing-plane-altitude-env), or None."""
    words = [part.get("step_word") for part in (run.metadata, *run.metadata.get("parts", ()))]
    return next((str(name) for name in (run.sources.get("reward_mean"), run.sources.get("step"), *words)
                 if name is not None and any(word in str(name).lower() for word in EPISODIC)), None)


#: Trainers of control and game tasks (an environment's episodes), as the readers name them.
CONTROL_TRAINERS = frozenset({"sb3", "sb3_monitor", "sb3_console", "sb3_callback", "sb3_eval", "rl_games", "cleanrl",
                              "baselines", "pfrl", "rllab", "spinup", "rlkit", "pymarl", "torch_ac", "on_policy",
                              "sample_factory", "elegantrl"})


def environment_run(run: Run) -> bool:
    """The run trains a policy on an environment's episodes (a control or game task), not a language
    model on prompts: its trainer is one of :data:`CONTROL_TRAINERS`, or its reward is an episode return
    (:func:`episodic_reward`) and it logs nothing only a language model's run has (response lengths, a
    truncated share, tied groups, a KL to the reference). A reader's name that is no trainer (``printed``,
    ``wandb``) decides nothing. Decides which remedies a finding lists, and how many logged points DEAD_FROM_START's
    no-rise sign needs (``no_rise_points_control``)."""
    if run.trainer in CONTROL_TRAINERS:
        return True
    return episodic_reward(run) is not None and not any(run.has(m) for m in _LANGUAGE_METRICS)


#: Metrics of a language model's run: a reward that is an episode return beside them is not an environment's.
_LANGUAGE_METRICS = ("response_length_mean", "truncated_frac", "zero_variance_group_frac", "kl")


@dataclass(frozen=True, slots=True)
class RewardLevel:
    """The late reward level of a run (reward units) and the regime it is in."""

    regime: Regime | None
    #: ``reward_mean`` over the run
    mean: Series
    late_mean: float
    #: late-window range of the reward mean
    late_range: float
    ceiling: float
    #: ``reward_max`` or ``reward_mean`` (where the ceiling was read)
    ceiling_from: str
    floor: float
    floor_from: str
    #: absolute tolerance, ``rel_tol`` x span
    tol: float
    moves: bool
    #: the spread series used (None when the run logs no spread)
    spread: Series | None
    spread_late: float | None
    tied_late: float | None
    #: True / False when a spread or tied share was logged; None when judged from a constant mean
    spread_gone: bool | None
    #: share of the logged reward means that are exactly 0
    zero_share: float = 0.0
    #: index of the first point of the stretch at the floor or the ceiling that decided the regime, when the
    #: late window did not (:func:`_held_at`; ``late_mean`` and ``late_range`` are then the stretch's)
    held_from: int | None = None

    def pinned_onset(self, level: float, sustain: int, *, settled: bool = True) -> int | None:
        """Index of the first of ``sustain`` consecutive reward means within ``tol`` of ``level``,
        counted from after the last stretch of ``sustain`` means away from it (``settled``): where
        the reward settled at the level it ends at, not an earlier visit it left again
        (sb3-acrobot-collapse-after-success starts near its floor, learns, and falls back to it);
        without ``settled``, from the first such stretch (a run that never succeeded was at its level
        before a lucky stretch too). A regime read from the stretch the run ends in (``held_from``) is
        dated by the change point of the reward's level (:func:`advcore.detectors._windows.change_point`)
        when it lies at or before that stretch."""
        def near(v: float) -> bool:
            return abs(v - level) <= self.tol

        if self.held_from is not None:
            # a stretch the run ends in, not yet the late window: dated where the level changed towards it (the
            # lab's saturation fault under DAPO: rewards of 0.88 to 1.0 from step 30, held at 1.0 from step 75)
            cp = change_point(self.mean.values)
            return cp if cp is not None and cp <= self.held_from else self.held_from
        return (last_onset_index if settled else onset_index)(self.mean.values, near, sustain)

    def evidence(self) -> dict[str, object]:
        """The numbers the regime was decided on."""
        return {
            "late_mean": self.late_mean,
            "late_range": self.late_range,
            "ceiling": self.ceiling,
            "ceiling_from": self.ceiling_from,
            "floor": self.floor,
            "floor_from": self.floor_from,
            "tolerance": self.tol,
            "spread_metric": self.spread.name if self.spread is not None else None,
            "spread_late": self.spread_late,
            "tied_late": self.tied_late,
            "zero_share": self.zero_share,
            **({"held_since_step": self.mean.steps[self.held_from]} if self.held_from is not None else {}),
        }


def _zero_steps_tied(mean: Series, spread: Series | None, gone_below: float) -> bool:
    """Whether the reward spread is gone at the late steps whose reward mean is exactly 0: a spread
    that comes only with the excursions is no live group hidden behind a zero mean
    (h87-torchac-ppo-keycorridor: 0 on 51 of 58 updates, the returns' max - min 0 at each of them and
    0.12-0.19 at the 5 updates where an episode scored)."""
    if spread is None:
        return False
    late_from = len(mean) - window_len(len(mean))
    at_zero = [s for m, s, i in zip(*aligned(mean, spread), strict=True) if m == 0.0 and i >= late_from]
    return bool(at_zero) and fmean(at_zero) <= gone_below


def reward_level(run: Run, *, rel_tol: float = REL_TOL, spread_gone: float = SPREAD_GONE) -> RewardLevel | None:
    """The late reward level and regime of ``run``; None without ``reward_mean`` or with fewer than
    six logged reward means (too short for early and late windows)."""
    mean = metric(run, "reward_mean")
    if mean is None or not mean.judgeable:
        return None
    late = mean.late()
    lo, hi = min(mean.values), max(mean.values)
    span = max(hi - lo, abs(hi), abs(lo), 1e-12)
    tol = rel_tol * span
    late_range = max(late) - min(late)
    moves = late_range > tol
    rmax, rmin = metric(run, "reward_max"), metric(run, "reward_min")
    ceiling, ceiling_from = (max(rmax.values), "reward_max") if rmax is not None else (hi, "reward_mean")
    floor, floor_from = (min(rmin.values), "reward_min") if rmin is not None else (lo, "reward_mean")
    spread = reward_spread(run)
    spread_late = spread.late_mean() if spread is not None and spread.judgeable else None
    tied = metric(run, "zero_variance_group_frac")
    tied_late = tied.late_mean() if tied is not None and tied.judgeable else None
    gone: bool | None
    if spread_late is not None:
        width = ceiling - floor
        gone = spread_late <= (spread_gone * width if width > 0 else 1e-6 * span)
    elif tied_late is not None:
        gone = tied_late >= TIED_LATE
    else:
        gone = None
    no_spread = gone if gone is not None else late_range == 0.0
    late_mean = fmean(late)
    zero_share = sum(1 for v in mean.values if v == 0.0) / len(mean)
    late_zero = sum(1 for v in late if v == 0.0) / len(late)
    # late points held at the run's floor, with excursions (h91 joyrl CartPole: an episode length of 10
    # on 39 of its last 40 points)
    late_pinned = sum(1 for v in late if abs(v - floor) <= tol) / len(late)
    regime: Regime | None = None
    if hi - lo <= tol and lo > 0.0:
        # a reward that never left the tolerance of one positive level has no floor to tell from its ceiling,
        # and a positive level is something earned (h172-trl-grpo-qwen25-3b-bbq-format-only-reward-saturated-
        # from-start: a format reward 0.984 -> 1.0, its maximum; h104-handwritten-a2c-ca-pattern-reward-pinned-
        # 2000: 2000 at all 26 episodes): no regime; at 0 or below (-200 at every MountainCar episode) a floor
        regime = None
    elif not moves and no_spread and zero_share == 1.0:
        regime = "floor"
    elif (zero_share >= ZERO_SHARE and holds_share(late_zero, len(late))
          and (gone is not False or _zero_steps_tied(mean, spread, spread_gone * (ceiling - floor)))):
        regime = "floor"
    elif ((not moves or (gone is True and abs(statistics.median(late) - ceiling) <= tol)) and no_spread
          and abs(late_mean - ceiling) <= tol and late_mean > lo + tol):
        regime = "saturation"  # a logged spread that is gone with the typical late step at the ceiling: a rare dip
        # (one group not solved) does not make it move (h26-cs285-hw4-grpo-format-copy-saturates)
    elif not moves and (no_spread or gone is None) and abs(late_mean - floor) <= tol:
        regime = "floor"  # without a spread metric, a late mean held at the run's floor is judged as one
    elif (gone is None and late_pinned >= ZERO_SHARE and abs(statistics.median(late) - floor) <= tol
          and hi - lo > tol):
        regime = "floor"  # held at the floor with excursions, after a run that was above it
    elif spread_late is not None and spread_late <= 1e-6 * span and moves:
        regime = "tied_groups"
    elif tied_late is not None and tied_late >= TIED_LATE:
        regime = "tied_groups" if moves else ("saturation" if late_mean >= hi - tol else "floor")
    held_from = None
    if regime in (None, "tied_groups") and hi - lo > tol:  # a stretch at a bound says more than ties that move
        bounds: tuple[tuple[Regime, float], ...] = (("floor", floor), ("saturation", ceiling))
        for name, at in bounds:
            held_from = _held_at(mean, at, tol, spread, tied, spread_gone * (ceiling - floor))
            if held_from is not None and (name == "floor" or at > lo + tol):
                regime, late_mean = name, fmean(mean.values[held_from:])
                late_range = max(mean.values[held_from:]) - min(mean.values[held_from:])
                break
            held_from = None
    return RewardLevel(regime, mean, late_mean, late_range, ceiling, ceiling_from, floor, floor_from, tol, moves,
                       spread, spread_late, tied_late, gone, zero_share, held_from)


#: Fewest points of the stretch at the floor or the ceiling that a run ends in (:func:`_held_at`): the seed
#: card's ``sustain``.
HELD_POINTS = 5


def _held_at(mean: Series, at: float, tol: float, spread: Series | None, tied: Series | None,
             gone_below: float) -> int | None:
    """Index of the first reward mean of the stretch within ``tol`` of ``at`` that the run ends in, when
    that stretch has at least ``HELD_POINTS`` points, is longer than any earlier one
    (:func:`advcore.detectors._windows.held_since`) and has lost its spread there (the stretch's mean
    spread at most ``gone_below``, else its mean tied share at least ``TIED_LATE``); else None. Without a
    spread or a tied share a held level says nothing of the spread, and is not judged. The late window
    sees such a stretch only once it lies mostly inside it: inside a trainer, the lab's floor fault (every
    reward 0 from step 30) was reported 8 steps after its onset by the late window, 5 by the stretch."""
    since = held_since(mean.values, lambda v: abs(v - at) <= tol, HELD_POINTS)
    if since is None:
        return None
    first = mean.keys()[since]
    for s, sign, bar in ((spread, 1.0, gone_below), (tied, -1.0, TIED_LATE)):  # spread at most, tied share at least
        if s is not None:
            values = [v for k, v in zip(s.keys(), s.values, strict=True) if k >= first]
            return since if values and sign * fmean(values) <= sign * bar else None
    return None


#: A rise of the reward's level is a success when it exceeds this many times its step-to-step noise.
SUCCESS_NOISE = 3.0
#: A reward whose late median lies this many times its step-to-step noise below its early median, and
#: at least half its level's range below it, collapsed from where it held, success or not: the corpus's
#: healthy runs never fall 3 noises below their start; the failing runs that drift down without a
#: collapse fall 3.0 (h7-madrona-escape-room-ppo-button-never-pressed) and 5.1 (h97-sb3-ppo-traffic-
#: light-89m-never-learns); the TD-loss blow-ups 12.3 (h73-cs285f22-dqn-lunarlander-lr3e-2-td-loss-
#: blowup) and 27.7 (h93-pymarl-dcg-smac-3s5z-td-loss-blowup-return-collapse).
FALL_NOISE = 10.0
#: A reward whose late median lies more than this many noises below its start (and no more than ``FALL_NOISE``)
#: and never came back fell from where it started (:meth:`RewardCourse.never_regained_start`): runs that never
#: learn drift 3 to 5 below; a start of 5 lucky episodes at epsilon 1 lies 4.4 above a DQN's later returns
#: (h326-handwritten-double-dqn-case-closed-light-cycle, whose win rate rose 0.18 -> 0.34).
NEVER_BACK_NOISE = 5.0
#: A reward whose values rank against the step at this Spearman correlation or below, over at least
#: ``STEADY_POINTS`` logged points, declined down the run: its late median ``SUCCESS_NOISE`` noises below its early
#: one is a collapse below its start, not drift (a rank correlation of -0.6 over 20 independent points has a
#: two-sided p of about 0.005). Calibration: h186's object collector (-0.66 over 333 points), h298-mlagents-ppo-
#: sword-fighter (-0.70 over 50, 4.5 noises), h326-rllib-ppo-coppeliasim (-0.65 over 205, 7.3 noises); no healthy
#: run of the corpus declines that way but h309's hider (-0.68), whose self-play rating held.
STEADY_RHO = -0.6
STEADY_POINTS = 20
#: A success held for at least this many logged points is one, however brief against the run (UPDATE_UNSTABLE's
#: and REWARD_FLOOR's brief successes).
BRIEF_POINTS = 5
#: A reward that gave back at most this share of its gain by the end is still improving.
HELD_SHARE = 0.25
#: The start of a reward: the median of its first this many logged points, or of its first 1 % when
#: that is more (a rise inside the early window of a long, noisy run).
START_POINTS = 5
#: The standard error of the median of k normal values is this times sigma / sqrt k (sqrt(pi / 2)).
MEDIAN_ERROR = 1.2533
#: A frozen reward (:meth:`RewardCourse.frozen_tail`) repeats one exact value on at least this many of its
#: last points and this share of the run, all but at most ``FROZEN_OFF`` of them. On the calibration half
#: only runs that failed hold a stretch of one exact value this long below their peak
#: (h173-sb3-ppo-llm-layer-partition-learns-then-falls-back-to-uniform-after-entropy-ramp, h3-sb3-a2c-
#: breakout-mlp-entropy-collapse, h216-sb3-a2c-mutation-grid-learns-then-locks-onto-constant-500).
FROZEN_POINTS = 10
FROZEN_SHARE = 0.25
FROZEN_OFF = 0.05
#: ... after a reward that changed at least at this share of its steps before it froze.
FROZEN_MOVED = 0.5


#: A late window's median or mean that rose by less than this share of the windows' pooled spread is no rise,
#: however many points make it significant (:meth:`RewardCourse.never_rose`): h310's SAC on Pusher, its
#: objective broken, rose by 0.11 of its spread over 826 episodes a window; the healthy runs closest to the bar
#: rose by 0.17 and 0.18 (a bar of 0.1 missed two more flat runs of calibration, 0.15 warns no healthy one more).
RISE_EFFECT = 0.15


@dataclass(frozen=True, slots=True)
class RewardCourse:
    """The course of the reward's level over a run (reward units)."""

    series: Series
    #: trailing-median level of ``reward_mean`` over ``w`` points
    level: tuple[float, ...]
    w: int
    #: index of the highest level over a full window, before the late window
    peak: int
    early: float
    late: float
    #: step-to-step noise (1.4826 x MAD of the first differences / sqrt 2)
    noise: float

    @property
    def peak_step(self) -> int:
        """The step in the middle of the window whose trailing median is the peak level: a trailing median over
        ``w`` points lags the values it covers by ``(w - 1) // 2`` points, so the level's own step would date the
        peak after a fall that began under it (h207-rslrl-legged-gym-a1-64envs: a fall from step 911 after a
        level "peaking at step 973")."""
        return self.series.steps[max(0, self.peak - (self.w - 1) // 2)]

    @property
    def gain(self) -> float:
        return self.level[self.peak] - self.early

    @property
    def succeeded(self) -> bool:
        """The level rose by more than ``SUCCESS_NOISE`` x the noise and held above half-way for ``w``
        points; not a reward that is exactly 0 on at least ``ZERO_SHARE`` of its logged points, whose
        highs are excursions from its floor (REWARD_FLOOR's rule; h109-cs294-dqn-montezuma-reward-floor:
        a mean over the last 100 episodes of 1.0 at 5 of 62 logged points while one rewarded episode
        stayed in that window, 0 at the other 57)."""
        return (self.gain > max(SUCCESS_NOISE * self.noise, self.still) and self.held_points >= self.w
                and not self.mostly_zero)

    @property
    def mostly_zero(self) -> bool:
        """The reward is exactly 0 on at least ``ZERO_SHARE`` of its logged points: its highs are excursions
        from that floor (REWARD_FLOOR's rule)."""
        return sum(1 for v in self.series.values if v == 0.0) >= ZERO_SHARE * len(self.series)

    @property
    def still(self) -> float:
        """A move of the level no larger than this does not move the reward: ``REL_TOL`` of its span
        (``max(hi - lo, |hi|, |lo|)``), as for a reward at its floor or ceiling (:func:`reward_level`); a
        step-to-step noise near 0 must not make a success of a reward pinned near one value
        (h323-sb3-tqc-mujoco-foosball-ball-never-moves: 2,350 +- 1.5 at every episode, a level of 2,352
        read as a peak above 2,351)."""
        hi, lo = max(self.series.values), min(self.series.values)
        return REL_TOL * max(hi - lo, abs(hi), abs(lo))

    @property
    def held_points(self) -> int:
        """How many points of the level (from its first full window) lie at or above half-way from the early
        median to the peak."""
        half = self.early + self.gain / 2
        return sum(1 for v in self.level[self.w - 1:] if v >= half)

    @property
    def start(self) -> tuple[float, int]:
        """Where the reward started, and over how many points: its first two logged values when both
        lie below the early median by more than ``SUCCESS_NOISE`` x the noise (h95-pfrl-sac-pendulum-
        solves-early: -1464 and -1427 at the first two evaluations, -147 from the third on: their
        higher one, over 2), else the median of its first ``START_POINTS`` logged values or of its
        first 1 % when that is more (h161-tunix-grpo-gemma3-1b-g8-lr1e5-correctness-traded-for-format:
        a median of 0.41 over its first 33 steps, 5.8 over the 672 of its early window)."""
        values, margin = self.series.values, SUCCESS_NOISE * self.noise
        if len(values) >= 2 and all(self.early - v > margin for v in values[:2]):
            return max(values[:2]), 2
        k = min(len(values), max(START_POINTS, len(values) // 100))
        return statistics.median(values[:k]), k

    def start_text(self) -> str:
        """Where the reward started, in words (``-1464 at the first logged step``, ``a median of 0.41
        over its first 33 logged steps``)."""
        value, k = self.start
        return (f"{self.series.values[0]:.4g} at the first logged step" if k == 2 else
                f"a median of {value:.4g} over its first {k} logged steps")

    @property
    def rose_first(self) -> bool:
        """The start (:attr:`start`) lies below the early median by more than ``SUCCESS_NOISE`` standard
        errors (the noise for the first two points; for a median of ``k`` points, 1.2533 x the noise /
        sqrt k) and the late median kept that level within ``SUCCESS_NOISE`` x the noise: the rise
        happened within the early window, before the level could show it. One low first episode is not
        a rise (h96-wandb-history-spaceinvaders-dqn-stuck-285: 180, then 285 on 87 of 97 episodes)."""
        return self.rose_early and self.late >= self.early - SUCCESS_NOISE * self.noise

    @property
    def rose_early(self) -> bool:
        """The start (:attr:`start`) lies below the early median by more than ``SUCCESS_NOISE`` standard
        errors (as :attr:`rose_first`), whatever came after: the reward had risen by the early window."""
        value, k = self.start
        error = self.noise if k == 2 else MEDIAN_ERROR * self.noise / math.sqrt(k)
        return self.early - value > SUCCESS_NOISE * error

    @property
    def median_rose(self) -> bool:
        """The late median exceeds the early one by more than ``SUCCESS_NOISE`` standard errors of their
        difference (each median's 1.2533 x the noise / sqrt of its window's points): a rise that single
        steps hide in their noise but the windows show (h158-cleanrl-style-ppo-cartpole-25k-learns-critic-
        flat: per-episode returns, a median of 21 over the first 84 episodes and 74 over the last)."""
        k = window_len(len(self.series))
        error = MEDIAN_ERROR * self.noise * math.sqrt(2 / k)
        return self.late - self.early > SUCCESS_NOISE * error

    @property
    def rose(self) -> bool:
        """The reward rose: :meth:`improved`, :attr:`median_rose`, or a rise inside the early window
        (:attr:`rose_first`). Said in the verdict and the JSON, not used by a detector."""
        return self.improved() or self.median_rose or (not self.succeeded and self.rose_first)

    @property
    def fell_below_start(self) -> bool:
        """The late median lies ``FALL_NOISE`` x the noise (or ``NEVER_BACK_NOISE`` x it with every late value
        below every early one, or ``SUCCESS_NOISE`` x it down a decline ranked with the step: ``STEADY_RHO``), and at
        least half the level's range, below the early median: the reward collapsed from where it held, success or
        not."""
        held = self.level[self.w - 1:]
        drop = self.early - self.late
        # or, beyond ``NEVER_BACK_NOISE`` noises, below every early value at every late one: a shift no noise
        # makes, however noisy the start (h333-mlagents-ppo-curiosity-camp-kawanakwa-killer: -8.2 to -0.3 over its
        # early window, -12.6 to -23.7 over its late one; a drop of 8 noises)
        if self.noise <= 0 or drop < 0.5 * (max(held) - min(held)):
            return False
        apart = drop > NEVER_BACK_NOISE * self.noise and max(self.series.late()) < min(self.series.early())
        if drop > FALL_NOISE * self.noise or apart:
            return True
        # or, beyond ``SUCCESS_NOISE`` noises, down the whole run: a decline its values rank with the step, which
        # the level's noise does not make (h186-mlagents-poca-object-collector-constant-beta-entropy-grows-return-
        # halves: 21.8 early, 11.4 late, 4.7 noises, Spearman -0.66 over 333 points); ranked only when asked, as
        # the online monitor asks at every step
        s = self.series
        return (drop > SUCCESS_NOISE * self.noise and len(s) >= STEADY_POINTS
                and spearman(s.steps, s.values) <= STEADY_RHO)

    @property
    def collapsed_tail(self) -> int:
        """How many of the last logged values lie, every one, more than ``FALL_NOISE`` x the noise below the
        early median: a run that ended collapsed, however late (h176-rslrl-ppo-h1-humanoid-teleop-learns-then-
        collapses-at-59k: 18 returns between -159 and -2,205 after 982 between 30 and 211, the late window's
        median still 138)."""
        return self.tail_below(self.early - FALL_NOISE * self.noise)

    def tail_below(self, bar: float) -> int:
        """How many of the last logged values lie, every one, below ``bar``."""
        n = 0
        for v in reversed(self.series.values):
            if v >= bar:
                break
            n += 1
        return n

    def never_rose(self) -> bool:
        """No sign of a rise anywhere: not :attr:`rose`, not :attr:`succeeded`; the late window's median and
        mean lie at most one standard error above the early window's (the medians' 1.2533 x the noise x
        sqrt(2 / k), the means' pooled standard deviation x sqrt(2 / k), k points per window); and no level
        after the first window lies more than ``SUCCESS_NOISE`` x the noise, and more than :attr:`still`, above the
        start (:attr:`start`).
        A mean that rose while the median stayed at the floor is a rise (h138-sb3-zoo-tqc-her-panda-
        pickplace-partial: the median episode at -50, the share of episodes at that floor 84 % -> 56 %), and
        so is a rise inside the first window (h7-rllab-trpo-foot-hopper-learns-plateau: 121 at iteration 0,
        a level of 220 by iteration 56, then a plateau near 178)."""
        if self.rose or self.succeeded:
            return False
        early, late = self.series.early(), self.series.late()
        k = min(len(early), len(late))
        root = math.sqrt(2 / k)
        spread = math.sqrt((statistics.pvariance(early) + statistics.pvariance(late)) / 2)
        # beyond one standard error, and by a share of the spread that a long window's standard error no
        # longer asks for (h273-handwritten-dqn-carrier-on-off-reward-independent-of-action-10k-episodes-flat:
        # a mean 0.22 higher over 2,000 episodes of spread 4.3, 1.6 standard errors, 0.05 of the spread; h310's
        # actor-critic on a UR5e push: a median 0.17 higher over 2,000 episodes of spread 7.6)
        if self.late - self.early > max(MEDIAN_ERROR * self.noise * root, RISE_EFFECT * spread):
            return False
        if fmean(late) - fmean(early) > max(spread * root, RISE_EFFECT * spread):
            return False
        # nor a level above the start by more than its noise and its stillness (a return pinned near -66 with rare
        # falls to -800, h354-sb3-ppo-uav-mec-five-drones: a level 0.76 above its start, 6 noises of a 122-point
        # rolling mean, 5 % of what the reward spans)
        return max(self.level[self.w - 1:]) - self.start[0] <= max(SUCCESS_NOISE * self.noise, self.still)

    def never_regained_start(self) -> bool:
        """The reward fell below where it started and never came back: its late median lies more than
        ``NEVER_BACK_NOISE`` x the noise below the start (:attr:`start`), but no more than ``FALL_NOISE`` x the
        noise (a collapse, UPDATE_UNSTABLE's), and no level from the first full window on reached the start. A
        policy worse than its first episodes for the whole run learned nothing, however its early and late windows
        compare (h314-mlagents-ppo-pong-movetheplayer-return-falls-below-start-and-stays: about -0.74 over the
        first summaries, under -0.95 at every one after 100k steps, a late median of -1.09 above the early -1.18:
        6.5 noises below the start)."""
        drop = self.start[0] - self.late
        return (NEVER_BACK_NOISE * self.noise < drop <= FALL_NOISE * self.noise
                and max(self.level[self.w - 1:]) < self.start[0])

    def frozen_tail(self) -> tuple[int, float, int] | None:
        """Where the reward froze, when it did: the index from which it repeats one exact value (the mode of
        its last ``FROZEN_POINTS``) on all but at most ``FROZEN_OFF`` of the points, that value, and how
        many points differ. A frozen tail holds at least ``FROZEN_POINTS`` and ``FROZEN_SHARE`` of the
        run, begins after a full level window in which the reward changed at ``FROZEN_MOVED`` of its steps
        at least (a stochastic policy's returns: a deterministic evaluation is piecewise constant throughout,
        h173-sb3-ppo-llm-layer-partition-learns-then-falls-back-to-uniform-after-entropy-ramp), and sits below the level's peak
        (:attr:`peak`) by more than ``REL_TOL`` of the reward's range, above its lowest value by as much: a
        deterministic policy, in a deterministic environment, locked onto one behaviour worse than the
        one it had found (h216-sb3-a2c-mutation-grid-learns-then-locks-onto-constant-500: a level of 830
        by episode 13, then exactly 500 on 70 of the last 71 episodes). A reward frozen at its ceiling or
        its floor is REWARD_SATURATION's or REWARD_FLOOR's; one frozen from the start, DEAD_FROM_START's."""
        values = self.series.values
        n = len(values)
        if n < FROZEN_POINTS:
            return None
        value = statistics.mode(values[-FROZEN_POINTS:])
        first, off, off_at_first = None, 0, 0
        for i in range(n - 1, -1, -1):
            if values[i] != value:
                off += 1
            elif off <= FROZEN_OFF * (n - i):
                first, off_at_first = i, off
        if first is None or n - first < max(FROZEN_POINTS, FROZEN_SHARE * n) or first < self.w:
            return None
        before = values[:first]
        moved = sum(1 for a, b in zip(before, before[1:], strict=False) if a != b)
        margin = REL_TOL * (max(values) - min(values))
        if (moved < FROZEN_MOVED * (len(before) - 1) or value >= self.level[self.peak] - margin
                or value <= min(values) + margin):
            return None
        return first, value, off_at_first

    def gave_back(self) -> float:
        """The share of the gain lost by the late window."""
        return (self.level[self.peak] - self.late) / self.gain

    def gave_back_from_start(self) -> float:
        """The share of the rise from where the reward started (:attr:`start`, or the early median if lower) to the
        peak level lost by the late window: what :meth:`gave_back` measures when the rise began inside the early
        window, whose median then holds most of it; 0 when the peak is no higher than that start."""
        rise = self.level[self.peak] - min(self.early, self.start[0])
        return (self.level[self.peak] - self.late) / rise if rise > 0 else 0.0

    @property
    def binary(self) -> bool:
        """The reward takes exactly two values (a success of 0 or 1 per episode): its trailing median is then a
        majority vote, which flips between the two near half success."""
        return len(set(self.series.values)) == 2

    def mean_gave_back(self) -> float:
        """The share of its gain the reward's mean gave back: from the early window's mean to the best mean over
        ``w`` points before the late window, and from there to the late window's mean (0 when the mean never
        rose)."""
        values, late = self.series.values, self.series.late()
        sums = [0.0]
        for v in values:
            sums.append(sums[-1] + v)
        starts = range(max(1, len(values) - len(late) - self.w + 1))
        best = max((sums[i + self.w] - sums[i]) / self.w for i in starts)
        early = fmean(self.series.early())
        return (best - fmean(late)) / (best - early) if best > early else 0.0

    def improved(self) -> bool:
        """The reward rose (:attr:`succeeded`) and kept at least ``1 - HELD_SHARE`` of its gain to the end,
        or its late median exceeds its early one by more than ``SUCCESS_NOISE`` x the noise and is at or
        above the peak level before the late window (a rise still under way at the end:
        h56-carla-vae-ppo-town07-std1-learns, 198 -> 940 with a step-to-step noise of 167)."""
        late_rise = self.late - self.early > SUCCESS_NOISE * self.noise and self.late >= self.level[self.peak]
        return (self.succeeded and self.gave_back() <= HELD_SHARE) or late_rise


def reward_course(run: Run) -> RewardCourse | None:
    """The course of ``reward_mean`` over the run (:class:`RewardCourse`): its trailing-median level over
    a tenth of the run (at least 5 points), the early and late medians, the peak before the late
    window, the step-to-step noise; None with fewer than 10 points or with curriculum phases. Computed
    once per run: the verdict and three detectors read it."""
    return run.cached(("reward_course",), lambda: _course(run))


def success_course(run: Run) -> RewardCourse | None:
    """The course of ``success_rate`` (the share of episodes that reached the goal), as :func:`reward_course`'s
    of the reward: a success rate that rose is learning even where a return, dragged down by the failed
    episodes' penalties, never did (h249-handwritten-dueling-ddqn-grid-navigation-return-peaks-ep374-then-
    falls-2-7x: success 0.34 -> 0.70 by tenth while the return's median fell)."""
    return run.cached(("success_course",), lambda: _course(run, "success_rate"))


def rating_course(run: Run) -> RewardCourse | None:
    """The course of ``elo``, a self-play rating against the policy's past selves, as :func:`reward_course`'s of the
    reward: in a zero-sum self-play game one side's win is the other's loss, so the return averages about 0 whatever
    the policy learned, and a rating that rose is the learning (h304-mlagents-poca-selfplay-soccer-2v2-elo-1200-to-
    1490: the group's return near -0.1 throughout while its ELO climbs)."""
    return run.cached(("rating_course",), lambda: _course(run, "elo"))


#: A validation score (``val_score``) rose when it was logged at least this many times,
VAL_POINTS = 5
#: ranks with the step at least this (Spearman): for 5 evaluations in random order, 5 of the 120 orders do
#: (the sorted one and its 4 single adjacent swaps), about 4 %,
VAL_RISE_RHO = 0.9
#: or, logged at least this many times, rose as a reward does (:meth:`RewardCourse.improved` or its late median
#: above its early one by the noise): the order of many noisy evaluations is never that of the steps
#: (h378-sb3-sac-fanuc-robotiq-precapture-...-healthy: SB3's eval/mean_reward at 250 evaluations, 342 to 1,179, a
#: Spearman of 0.80 with the step, a median of 813 over the first fifth and 1,183 over the last),
VAL_COURSE_POINTS = 20
#: by at least this share of its larger magnitude: one evaluation off a pinned score is no rise (h345-sb3-dqn-mlp-
#: on-pong-pixels: -21 at 16 of 20 evaluations, one -10, medians -21 -> -20.5 with a step-to-step noise of 0).
VAL_MIN_GAIN = 0.1


def validation_rose(run: Run) -> dict[str, float] | None:
    """The held-out evidence that the run learns: the validation score's first and last values (the medians of
    its first and last fifth, from :data:`VAL_COURSE_POINTS` evaluations), its number of evaluations and its
    Spearman correlation with the step, when it was logged :data:`VAL_POINTS` times or more and rose: up to
    :data:`VAL_COURSE_POINTS` evaluations, ranks with the step at :data:`VAL_RISE_RHO` or more and ends above
    where it began; from there, rose as a reward does (:func:`_course`), by :data:`VAL_MIN_GAIN` of its magnitude
    or more. Else None. A training reward paid to a few episodes a step is mostly 0 whatever the policy learned,
    while the validation set measures the policy itself (h311's WebShop GiGPO after SFT: 8 episodes a step, a
    training reward of 0 on 28 of 32 steps, the held-out success 0.016 -> 0.094 -> 0.172 -> 0.203 -> 0.328)."""
    s = metric(run, "val_score")
    if not validation_logged(run) or s is None:
        return None
    rho = spearman(s.steps, s.values)
    if len(s) >= VAL_COURSE_POINTS:
        course = run.cached(("validation_course",), lambda: _course(run, "val_score"))
        if (course is None or not (course.improved() or course.median_rose)
                or course.late - course.early < VAL_MIN_GAIN * max(abs(course.early), abs(course.late))):
            return None
        first, last = course.early, course.late
    elif s.values[-1] > s.values[0] and rho >= VAL_RISE_RHO - 1e-9:  # an adjacent swap in 5 is 0.9 up to rounding
        first, last = s.values[0], s.values[-1]
    else:
        return None
    return {"val_first": first, "val_last": last, "val_first_step": s.steps[0],
            "val_last_step": s.steps[-1], "val_points": len(s), "val_spearman": rho}


def validation_logged(run: Run) -> bool:
    """A validation score was logged often enough to say whether it rose (:data:`VAL_POINTS` evaluations)."""
    s = metric(run, "val_score")
    return s is not None and len(s) >= VAL_POINTS


def answered_by_validation(outcome: Outcome, run: Run) -> Outcome:
    """A warning or an error told as information when the validation score rose (:func:`validation_rose`): what
    the training batch shows is not what the policy learned."""
    if not isinstance(outcome, Finding) or outcome.severity == "info" or (rose := validation_rose(run)) is None:
        return outcome
    return replace(outcome, severity="info", evidence={**outcome.evidence, **rose},
                   message=f"{outcome.message.rstrip('.')}; but {validation_text(rose)}: the policy learns what the "
                           "training batch does not show.")


def other_rise(run: Run) -> str | None:
    """In words, the learning a flat reward does not show, when another measure of the policy rose: a success rate
    (a return dragged down by failed episodes' penalties), a self-play rating (the return of a zero-sum game stays
    near 0) or a validation score (:func:`validation_rose`); else None."""
    for name, course in (("success rate", success_course(run)), ("self-play rating", rating_course(run))):
        if course is not None and (course.succeeded or course.rose):
            return f"the {name} rose from a median of {course.early:.4g} early to {course.late:.4g} late"
    rose = validation_rose(run)
    return validation_text(rose) if rose is not None else None


def validation_text(rose: Mapping[str, float]) -> str:
    """:func:`validation_rose`'s evidence in words."""
    if rose["val_points"] >= VAL_COURSE_POINTS:
        return (f"the validation score rose from a median of {rose['val_first']:.4g} early to {rose['val_last']:.4g} "
                f"late ({rose['val_points']:.0f} evaluations, steps {rose['val_first_step']:.0f} to "
                f"{rose['val_last_step']:.0f})")
    return (f"the validation score rose from {rose['val_first']:.4g} at step {rose['val_first_step']:.0f} to "
            f"{rose['val_last']:.4g} at step {rose['val_last_step']:.0f} ({rose['val_points']:.0f} evaluations)")


#: A key that names the window of episodes its values average (``Average100 Score``, ``mean_100_episode_reward``,
#: ``Avg learning reward last 100 episodes``, ``MeanReward100Episodes``): the window's size.
_WINDOW = re.compile(r"(?:avg|average|mean|last|rolling|moving)[\s_/-]*(\d{1,5})(?!\d)|(?<!\d)(\d{1,5})[\s_/-]*(?:episodes|eps)",
                     re.IGNORECASE)


#: ... counted in steps ('Mean Reward (last 1000 steps)', ``mean_reward_last_1000_steps``)
_STEPS_WINDOW = re.compile(r"\d[\s_/-]*(?:time)?steps", re.IGNORECASE)


def declared_window(key: str | None) -> int | None:
    """The number of episodes a reward key says each value averages (at least 2), or None."""
    m = _WINDOW.search(key or "")
    size = int(m.group(1) or m.group(2)) if m is not None else 0
    return size if size >= 2 else None


def _course(run: Run, name: str = "reward_mean") -> RewardCourse | None:
    s = metric(run, name)
    if s is None or len(s) < 10 or len(set(s.phases or ())) > 1:
        return None
    n, k = len(s), window_len(len(s))
    w = max(5, n // 10)
    level = rolling_level(s, "reward level", w).values
    if n - k <= w - 1:
        return None
    peak = max(range(w - 1, n - k), key=lambda i: level[i])
    # a mean over the last W episodes logged every episode moves by 1/W of an episode's noise from one value to
    # the next, while its own spread around its level is 1/sqrt(W) of it: its step-to-step noise understates
    # that spread by sqrt(W) (a survey IQN loop's 'Average100 Score', flat at 21 to 26, read as a collapse)
    window = declared_window(run.sources.get(name))
    if window is not None and _STEPS_WINDOW.search(run.sources.get(name) or ""):
        # a window of steps, not episodes: consecutive values share only what their logging interval leaves
        # in both windows ('Mean Reward (last 1000 steps)' printed every 1,000 steps shares nothing:
        # h425-sb3-ppo-cnn-multicarracing-continuous, read as 32 times noisier than it is)
        gap = statistics.median(b - a for a, b in zip(s.steps, s.steps[1:], strict=False))
        window = round(window / gap) if gap > 0 else None
    scale = math.sqrt(window) if window is not None and 1 < window < n else 1.0
    return RewardCourse(s, level, w, peak, statistics.median(s.early()), statistics.median(s.late()),
                        step_noise(s.values) * scale)


def improving_reward(run: Run) -> dict[str, float] | None:
    """The reward's early median, peak level and late median when it rose (a success, as for the
    collapse) and kept at least ``1 - HELD_SHARE`` of its gain to the end; else None."""
    c = reward_course(run)
    if c is None or not c.improved():
        return None
    return {"early_median": c.early, "peak_level": c.level[c.peak], "late_median": c.late}
