"""Shared helpers of the seed detectors: per-step series, early/late windows, onsets, proxies.

Windows. The *early* window is the first ``WINDOW_FRAC`` (20 %) of a series' logged points, the
*late* window the last 20 %, each at least ``MIN_WINDOW`` (3) points. A series needs at least
``2 * MIN_WINDOW`` non-null points to be judged. Windows count logged rows, not step numbers,
so a log written every 10 steps and one written every step are treated alike.

Onset. The first point of ``sustain`` consecutive logged points that satisfy the predicate (if
fewer than ``sustain`` points remain at the end, all of them must satisfy it). It is reported as
the ``step`` value of that row; with curriculum phases (``phase`` column, steps restarting per
phase) rows stay in log order and the finding's evidence names the phase (``onset_phase``).

Proxies (SPEC section 4), used when a trainer does not log ``adv_std``:

* verl logs per-token ``adv_max``/``adv_min`` and no std: ``adv_max - adv_min`` (the range is
  at least the std, so the seed thresholds applied to it are conservative for collapse);
* GRPO-style TRL logs ``frac_reward_zero_std`` (``zero_variance_group_frac``): a group-normalised
  advantage has std ~1 in a group with any reward spread and exactly 0 in a tied group, so the
  batch advantage std is ``sqrt(1 - zero_variance_group_frac)`` and the seed thresholds apply
  unchanged;
* with only ``reward_std_within`` or ``reward_std``: the share of the step's advantages that are
  non-zero is 1 when the spread is above ``TIE_EPS`` and 0 when every group is tied (exact when a
  step holds one group, as in Unsloth notebooks; an upper bound otherwise).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from advcore.model import Run

__all__ = [
    "ENTROPY_ROUNDING",
    "never_trained",
    "NO_GRADIENT",
    "Untrained",
    "SB3_TRAIN_PREFIX",
    "median_spacing",
    "differential",
    "MIN_WINDOW",
    "POINT_FACT_MIN",
    "TIE_EPS",
    "WINDOW_FRAC",
    "Series",
    "ADV_NEEDS",
    "CRITIC_METRICS",
    "GROUP_METRICS",
    "REWARD_PROXIES",
    "STD_BOUND",
    "adv_signal",
    "aligned",
    "fmean",
    "held_since",
    "change_point",
    "last_onset_index",
    "rolling_level",
    "running_peak",
    "running_peak_ratio",
    "step_noise",
    "metric",
    "onset_index",
    "plain",
    "reward_spread",
    "reward_std_bound",
    "run_kind",
    "tied_share",
    "one_advantage_per_step",
    "window_len",
]

#: Share of the logged points in each of the early and late windows.
WINDOW_FRAC = 0.2
#: Fewest points in a window.
MIN_WINDOW = 3
#: Fewest logged points for a point fact (a value at every logged step: no trend, so no windows).
POINT_FACT_MIN = 2
#: A negative entropy of at most this magnitude (nats) is a discrete entropy of 0 computed in float32, not a
#: differential one: ML-Agents logs -1.19e-07 (-2^-23) for a PPO policy that has turned deterministic
#: (h183-mlagents-ppo-2048-illegal-move-penalty-entropy-collapse, from step 90,000 of 2,270,000). An entropy
#: below ``-ENTROPY_ROUNDING`` anywhere is a continuous policy's differential entropy, of which no ratio means
#: anything.
ENTROPY_ROUNDING = 1e-6


def differential(entropy: Series, run: Run) -> bool:
    """Whether ``entropy`` is a continuous policy's differential entropy: below ``-ENTROPY_ROUNDING`` somewhere
    (a Gaussian's narrows below 0: sb3-invertedpendulum-dr-solved, 1.2 -> -0.42), or logged beside the policy's
    ``action_std`` (SB3's ``train/std``, written for Gaussian policies only: h341-sb3-ppo-climbbot-two-arm-reach's
    entropy 8.5 -> 1.0 over six action dimensions as the std went 1.0 -> 0.26), so that no ratio of it means
    anything."""
    return min(entropy.values) < -ENTROPY_ROUNDING or run.has("action_std")
#: A reward spread at or below this is "tied" (float32 rounding of 0/1 or partial-credit rewards).
TIE_EPS = 1e-6
#: a gradient norm at or below this is no gradient (the default of UPDATE_SUPPRESSED's ``grad_below``)
NO_GRADIENT = 1e-6

#: Names of the proxies built from rewards rather than from advantages.
REWARD_PROXIES = ("sqrt(1 - zero_variance_group_frac)", "1[reward_std_within > 1e-6]", "1[reward_std > 1e-6]")

#: How a proxy reads in a message (its formula stays in the evidence).
_PLAIN = {
    # why a square root: a newcomer read 0.028 here beside "groups with reward spread 0.3%" on the stage line
    "sqrt(1 - zero_variance_group_frac)": ("the advantage std a group-normalised batch would have, "
                                           "sqrt(1 - zero_variance_group_frac) (a group with reward spread gives "
                                           "advantages of std about 1, a tied group 0)"),
    "1[reward_std_within > 1e-6]": "share of steps whose groups have any reward spread",
    "1[reward_std > 1e-6]": "share of steps whose rewards have any spread",
    "1[reward_std_within <= 1e-6]": "steps whose reward_std_within is 0 count as all groups tied",
    "1[reward_std <= 1e-6]": "steps whose reward_std is 0 count as all groups tied",
    "1[reward_max - reward_min <= 1e-6]": "steps whose rewards have no range (reward_max = reward_min) count as all groups tied",
    "adv_max - adv_min": "the advantage range adv_max - adv_min",
}


def plain(name: str) -> str:
    """A metric or proxy name as a message should say it (canonical names are kept as they are)."""
    return _PLAIN.get(name, name)


@dataclass(frozen=True, slots=True)
class Series:
    """One per-step quantity over the non-null rows of a run, in log order."""

    #: what the values are: a canonical metric name or the proxy's formula
    name: str
    steps: tuple[int, ...]
    phases: tuple[int, ...] | None
    values: tuple[float, ...]
    #: True when ``name`` is a proxy for the quantity the detector wants
    proxy: bool = False

    def __len__(self) -> int:
        return len(self.values)

    def map(self, name: str, fn: Callable[[float], float], proxy: bool = True) -> Series:
        return Series(name, self.steps, self.phases, tuple(fn(v) for v in self.values), proxy)

    @property
    def judgeable(self) -> bool:
        """Enough points for an early and a late window."""
        return len(self.values) >= 2 * MIN_WINDOW

    def early(self) -> tuple[float, ...]:
        return self.values[: window_len(len(self.values))]

    def late(self) -> tuple[float, ...]:
        return self.values[len(self.values) - window_len(len(self.values)) :]

    def early_mean(self) -> float:
        return fmean(self.early())

    def early_median(self) -> float:
        """The median of the early window: an early level no single spike moves."""
        return statistics.median(self.early())

    def late_mean(self) -> float:
        return fmean(self.late())

    def mean(self) -> float:
        return fmean(self.values)

    def where(self, index: int | None) -> dict[str, int | str | None]:
        """Evidence naming the step (and phase, when the run has phases) of row ``index``."""
        if index is None:
            return {"onset_step": None}
        out: dict[str, int | str | None] = {"onset_step": self.steps[index]}
        if self.phases is not None:
            out["onset_phase"] = self.phases[index]
        return out

    def step_at(self, index: int | None) -> int | None:
        return None if index is None else self.steps[index]

    def keys(self) -> tuple[tuple[int, int], ...]:
        """``(phase, step)`` of every point (phase 0 without phases): the order of the run."""
        phases = self.phases or (0,) * len(self.steps)
        return tuple(zip(phases, self.steps, strict=True))


def aligned(a: Series, b: Series) -> tuple[tuple[float, ...], tuple[float, ...], tuple[int, ...]]:
    """The values of ``a`` and ``b`` at the logged points both have (matched on phase and step),
    in ``a``'s order, and the indices of those points in ``a``."""
    at = dict(zip(b.keys(), b.values, strict=True))
    idx = tuple(i for i, k in enumerate(a.keys()) if k in at)
    keys = a.keys()
    return tuple(a.values[i] for i in idx), tuple(at[keys[i]] for i in idx), idx


def fmean(values: Iterable[float]) -> float:
    """The mean of ``values`` (finite floats), exact as :func:`math.fsum` and without its
    ``OverflowError`` on values near the float maximum (they are scaled first); NaN when empty or
    when ``inf`` meets ``-inf``."""
    xs = list(values)
    if not xs:
        return math.nan
    try:
        return math.fsum(xs) / len(xs)
    except OverflowError:
        scale = max(abs(x) for x in xs)
        return scale * (math.fsum(x / scale for x in xs) / len(xs))
    except ValueError:  # inf and -inf
        return math.nan


def median_spacing(steps: Sequence[int]) -> float:
    """The median distance between successive logged steps (at least two steps): the log's own unit of
    "a while", by which a gap or a late first step is judged."""
    return statistics.median(b - a for a, b in zip(steps, steps[1:], strict=False))


def window_len(n: int) -> int:
    """Points in the early (and in the late) window of a series of ``n`` points."""
    return min(n, max(MIN_WINDOW, math.ceil(WINDOW_FRAC * n)))


def onset_index(values: tuple[float, ...], pred: Callable[[float], bool], sustain: int) -> int | None:
    """Index of the first of ``sustain`` consecutive values satisfying ``pred`` (a shorter tail
    counts when it satisfies ``pred`` throughout), or None."""
    run = 0
    for i, v in enumerate(values):
        run = run + 1 if pred(v) else 0
        if run >= sustain:
            return i - sustain + 1
    if run > 0:
        return len(values) - run
    return None


def last_onset_index(values: tuple[float, ...], pred: Callable[[float], bool], sustain: int) -> int | None:
    """:func:`onset_index` counted from after the last stretch of ``sustain`` consecutive values
    that do not satisfy ``pred``: the start of the state the series ends in, not an earlier
    episode it recovered from (a critic's warm-up before a later break)."""
    start, run = 0, 0
    for i, v in enumerate(values):
        run = 0 if pred(v) else run + 1
        if run >= sustain:
            start = i + 1
    idx = onset_index(values[start:], pred, sustain)
    return None if idx is None else start + idx


def held_since(values: tuple[float, ...], pred: Callable[[float], bool], sustain: int) -> int | None:
    """Index of the first point of the stretch of values satisfying ``pred`` that the series ends in,
    when that stretch has at least ``sustain`` points and is longer than every earlier one; else None.

    A state the run has been in for its last ``sustain`` points, and never for as long before, is a
    change now in progress: a monitor can report it ``sustain`` points after it began, while a rule on
    the late window's mean (the last 20 % of the points) sees it only once that window lies mostly
    after it (about a quarter of the run's age later). Longer than every earlier stretch keeps a
    series that visits the state on and off (a tied step now and then) from qualifying on a visit.
    """
    end = len(values)
    while end and pred(values[end - 1]):
        end -= 1
    tail = len(values) - end
    if tail < sustain:
        return None
    run = 0
    for v in values[:end]:
        run = run + 1 if pred(v) else 0
        if run >= tail:
            return None
    return end


def change_point(values: tuple[float, ...], end: int | None = None, *, fall: bool = False) -> int | None:
    """Index of the single change in level of ``values[:end]`` (least squares): the ``k`` in
    ``1..end-1`` minimising the squared deviations of ``values[:k]`` and ``values[k:end]`` from
    their own means, i.e. maximising ``k (end - k) / end * (mean_before - mean_after)^2`` (the
    classical one-change-point statistic, Hinkley 1970). None for fewer than 2 points. With
    ``fall``, only a change down counts (``mean_before > mean_after``): a fall followed by a partial
    recovery has its largest change at the recovery (h108-cs294-hw5b-sac-reinforce-ant: a return of
    about 400 until iteration 140, -2,700 over 160-300, -400 at the end); None when there is none.

    A threshold crossing (:func:`onset_index`) dates a fall by when it has gone far enough; the
    change point dates when it began, which is what an onset should report for a drop that takes
    several steps.
    """
    xs = values[: len(values) if end is None else end]
    n = len(xs)
    if n < 2:
        return None
    scale = max(abs(x) for x in xs) or 1.0  # the change point does not move with the scale; sums cannot overflow
    xs = tuple(x / scale for x in xs)
    total = math.fsum(xs)
    best, best_k, head = -1.0, None, 0.0
    for k in range(1, n):
        head += xs[k - 1]
        diff = head / k - (total - head) / (n - k)
        stat = k * (n - k) / n * diff * diff
        if stat > best and (diff > 0 or not fall):
            best, best_k = stat, k
    return best_k


def rolling_level(s: Series, name: str, smooth: int = 5) -> Series:
    """The trailing rolling median of ``s`` over ``smooth`` points (fewer at the start): its level, on
    which one spike is no rise and one low point no fall."""
    level = [statistics.median(s.values[max(0, i + 1 - smooth): i + 1]) for i in range(len(s))]
    return Series(name, s.steps, s.phases, tuple(level), True)


def step_noise(values: Sequence[float]) -> float:
    """The step-to-step noise of a series: 1.4826 x the median absolute deviation of its first
    differences, over sqrt 2 (the standard deviation of white noise around a level, robust to the
    level's own moves and to spikes); 0 for fewer than two values."""
    diffs = [b - a for a, b in zip(values, values[1:], strict=False)]
    if not diffs:
        return 0.0
    mid = statistics.median(diffs)
    return 1.4826 * statistics.median(abs(d - mid) for d in diffs) / 2 ** 0.5


def running_peak(s: Series, smooth: int = 5) -> tuple[float, ...]:
    """At each point of ``s``, the highest trailing rolling median (over ``smooth`` points) among
    the earlier points that have a full ``smooth`` points; ``-inf`` where there is none yet. One
    spike is no peak, not even among the first points."""
    level = rolling_level(s, s.name, smooth).values
    out: list[float] = []
    peak = -math.inf
    for i, v in enumerate(level):
        out.append(peak)
        if i + 1 >= smooth:
            peak = max(peak, v)
    return tuple(out)


def running_peak_ratio(s: Series, name: str, smooth: int = 5, min_peak: float = 0.0,
                       level_points: int | None = None) -> Series:
    """The trailing rolling median of ``s`` (over ``level_points`` points, default ``smooth``; fewer at
    the start) divided by its :func:`running_peak` (over ``smooth``); ``inf`` where that peak is not
    above ``min_peak`` (and positive) or there is none yet. How far below its own earlier level a
    quantity sits, judged on its level rather than on single points (one spike is no peak; one low
    point is no fall). A shorter level than peak sees a fall sooner: a median of 3 falls at the second
    low point, one of 5 at the third."""
    level = rolling_level(s, name, level_points or smooth).values
    out = tuple(v / peak if peak > 0 and peak >= min_peak else math.inf
                for v, peak in zip(level, running_peak(s, smooth), strict=True))
    return Series(name, s.steps, s.phases, out, True)


def metric(run: Run, name: str) -> Series | None:
    """The finite, non-null values of canonical metric ``name`` in log order, or None if absent."""
    return _from_expr(run, name, pl.col(name), proxy=False, needs=(name,))


def _from_expr(run: Run, name: str, expr: pl.Expr, *, proxy: bool, needs: tuple[str, ...]) -> Series | None:
    # keyed on the expression itself: a condition with a knob in it differs from one without
    return run.cached(("series", name, proxy, str(expr)), lambda: _series(run, name, expr, proxy=proxy, needs=needs))


def _series(run: Run, name: str, expr: pl.Expr, *, proxy: bool, needs: tuple[str, ...]) -> Series | None:
    if not run.has(*needs):
        return None
    frame = run.frame
    has_phase = "phase" in frame.columns and frame["phase"].null_count() < frame.height
    cols = [pl.col("step"), expr.cast(pl.Float64).alias("__v")]
    if has_phase:
        cols.append(pl.col("phase"))
    sel = frame.select(cols).filter(pl.col("__v").is_not_null() & pl.col("__v").is_finite() & pl.col("step").is_not_null())
    if sel.height == 0:
        return None
    phases = tuple(int(p) if p is not None else 0 for p in sel["phase"].to_list()) if has_phase else None
    return Series(name, tuple(int(s) for s in sel["step"].to_list()), phases,
                  tuple(float(v) for v in sel["__v"].to_list()), proxy)


def tied_share(run: Run) -> Series | None:
    """Per step, the share of groups whose rewards are all equal (0..1).

    ``zero_variance_group_frac`` when logged; otherwise the proxy ``1[reward_std_within <= 1e-6]``,
    ``1[reward_std <= 1e-6]`` or ``1[reward_max - reward_min <= 1e-6]``, else ``1[adv_max - adv_min <= 1e-6]``
    (1 when every group of the step is tied, or every advantage is 0; exact for one group per step, a
    lower bound otherwise).

    A logged share that the advantages contradict is not the share of the reward that trains: when
    on most steps where it says every group is tied the advantages still spread
    (``adv_max > adv_min``), it counts ties of another label, and the advantage proxy is used
    instead. SimpleVLA-RL's ``Accuracy distribution:`` lines count success, while a run with a dense
    shaped reward trains on ``critic/score`` (simplevla-dense-reward-libero: success tied on 88 % of
    the groups, advantages all 0 on only 28 % of the steps).
    """
    advantages = _from_expr(run, "1[adv_max - adv_min <= 1e-6]",
                            ((pl.col("adv_max") - pl.col("adv_min")) <= TIE_EPS).cast(pl.Float64), proxy=True,
                            needs=("adv_max", "adv_min"))
    s = metric(run, "zero_variance_group_frac")
    if s is not None:
        if advantages is not None:
            share, tied, _ = aligned(s, advantages)
            all_tied = [t for v, t in zip(share, tied, strict=True) if v >= 1.0 - TIE_EPS]
            if all_tied and sum(1 for t in all_tied if t < 1.0) > len(all_tied) / 2:
                return advantages
        return s
    for name in ("reward_std_within", "reward_std"):
        s = metric(run, name)
        if s is not None:
            return s.map(f"1[{name} <= 1e-6]", lambda v: 1.0 if v <= TIE_EPS else 0.0)
    reward_range = _from_expr(run, "1[reward_max - reward_min <= 1e-6]",
                              ((pl.col("reward_max") - pl.col("reward_min")) <= TIE_EPS).cast(pl.Float64), proxy=True,
                              needs=("reward_max", "reward_min"))
    return reward_range if reward_range is not None else advantages


def reward_spread(run: Run) -> Series | None:
    """Per step, the reward spread: ``reward_std``, else ``reward_std_within``, else the proxy
    ``reward_max - reward_min`` (in reward units)."""
    for name in ("reward_std", "reward_std_within"):
        s = metric(run, name)
        if s is not None:
            return s
    return _from_expr(run, "reward_max - reward_min", pl.col("reward_max") - pl.col("reward_min"),
                      proxy=True, needs=("reward_max", "reward_min"))


#: The name of :func:`reward_std_bound`'s series
STD_BOUND = "sqrt((reward_max - reward_mean) (reward_mean - reward_min))"


def reward_std_bound(run: Run) -> Series | None:
    """Per step, the most the reward's std can be given its mean, min and max (reward units): the Bhatia-Davis bound
    sqrt((max - mean) (mean - min)) (R. Bhatia and C. Davis, "A better bound on the variance", Amer. Math. Monthly
    107(4), 2000), exact for a reward that takes only its min and its max (a 0/1 reward: sqrt(p (1 - p))); None
    without the three."""
    return _from_expr(run, STD_BOUND, ((pl.col("reward_max") - pl.col("reward_mean"))
                                       * (pl.col("reward_mean") - pl.col("reward_min"))).clip(lower_bound=0.0).sqrt(),
                      proxy=True, needs=("reward_max", "reward_mean", "reward_min"))


def adv_signal(run: Run) -> Series | None:
    """Per step, the advantage std or its SPEC section 4 proxy (see the module docstring)."""
    s = metric(run, "adv_std")
    if s is not None:
        return s
    s = _from_expr(run, "adv_max - adv_min", pl.col("adv_max") - pl.col("adv_min"), proxy=True,
                   needs=("adv_max", "adv_min"))
    if s is not None:
        return s
    s = metric(run, "zero_variance_group_frac")
    if s is not None:
        return s.map(REWARD_PROXIES[0], lambda v: math.sqrt(min(1.0, max(0.0, 1.0 - v))))
    for proxy_name, name in zip(REWARD_PROXIES[1:], ("reward_std_within", "reward_std"), strict=True):
        s = metric(run, name)
        if s is not None:
            return s.map(proxy_name, lambda v: 1.0 if v > TIE_EPS else 0.0)
    return None


#: What the advantage-signal detectors need, as NotEvaluable says it.
ADV_NEEDS = ("adv_std (or a proxy: adv_max and adv_min, zero_variance_group_frac, reward_std_within or reward_std)",)


#: Metrics only a learned value baseline (a PPO/GAE critic) produces.
CRITIC_METRICS = ("vf_explained_var", "value_mean")
#: Metrics only a group-relative estimator (GRPO, RLOO, DAPO: advantages within a prompt's group) produces.
GROUP_METRICS = ("zero_variance_group_frac", "reward_std_within")


def one_advantage_per_step(run: Run) -> Series | None:
    """``adv_mean`` at the steps whose samples all got one advantage (``adv_std <= 1e-6``), when
    those are most of the logged steps and that advantage is not 0 on most of them; else None.

    No group-relative estimator gives every sample of a step the same non-zero advantage (a tied
    group gets 0): such a run's signal is not absent but not formed within groups, and its per-step
    mean is each sample's advantage (deepretrieval-grpo-0p8b-inverted-adv: ``adv_std`` 0 or 1.2e-7
    on all 50 steps, ``adv_mean`` +-0.75 to 0.92 on 36 of them).
    """
    mean, std = metric(run, "adv_mean"), metric(run, "adv_std")
    if mean is None or std is None:
        return None
    means, stds, idx = aligned(mean, std)
    keep = [i for i, sd in enumerate(stds) if sd <= TIE_EPS]
    if len(keep) < POINT_FACT_MIN or 2 * len(keep) <= len(mean):
        return None
    if 2 * sum(1 for i in keep if abs(means[i]) > TIE_EPS) <= len(keep):
        return None
    rows = [idx[i] for i in keep]
    return Series("adv_mean", tuple(mean.steps[r] for r in rows),
                  tuple(mean.phases[r] for r in rows) if mean.phases is not None else None,
                  tuple(means[i] for i in keep))


def run_kind(run: Run) -> Literal["critic", "group"] | None:
    """``"critic"`` when the run logs a value baseline (``vf_explained_var`` or ``value_mean``) and no
    group statistic (``zero_variance_group_frac``, ``reward_std_within``); ``"group"`` for the
    reverse; None when it logs both or neither (the kind is not evident from the metrics). A TRL
    log with ``reward_std`` and no critic metric is a group run too: TRL's GRPO-family trainers log
    ``reward_std``, its PPO trainer logs value metrics instead.

    A detector of the other kind is not applicable to such a run and returns None instead of
    NotEvaluable: group statistics mean nothing for a PPO run with a critic, and an explained
    variance means nothing for GRPO, whose baseline is the group mean.
    """
    critic = any(run.has(m) for m in CRITIC_METRICS)
    group = any(run.has(m) for m in GROUP_METRICS) or (run.trainer == "trl" and run.has("reward_std") and not critic)
    if critic == group:
        return None
    return "critic" if critic else "group"


#: Stable-Baselines3's logger (stable_baselines3/common/logger.py) writes ``time/fps`` with every rollout summary, and
#: its algorithms record their ``train/`` section at every gradient step (``train/n_updates``, ``train/learning_rate``
#: and the losses: on-policy after each rollout, off-policy once ``learning_starts`` steps were collected).
SB3_SUMMARY_KEY = "time/fps"
SB3_TRAIN_PREFIX = "train/"
#: Rollout summaries an SB3 log holds before a missing ``train/`` section means no gradient step was taken.
NEVER_TRAINED_POINTS = 20
#: canonical metrics a trainer logs only with a gradient step (a loss, the update's size)
UPDATE_METRICS = ("value_loss", "kl_step", "clip_frac", "grad_norm", "update_ratio", "step_norm")
#: a first update after this share of the reward's points, and after ``LATE_UPDATE_POINTS`` of them at least, leaves
#: the run untrained for most of its length
LATE_UPDATE_SHARE = 0.8
LATE_UPDATE_POINTS = 10


@dataclass(frozen=True, slots=True)
class Untrained:
    """A run whose optimizer did not step over most of its length."""

    reward: Series
    #: the step of the first update metric logged (None: none at all)
    first_update: int | None

    @property
    def before(self) -> int:
        """How many reward points were logged before the first update (all of them when there was none)."""
        first = self.first_update
        return sum(1 for step in self.reward.steps if first is None or step < first)


def never_trained(run: Run) -> Untrained | None:
    """How the optimizer of ``run`` did not step, else None:

    * an SB3 log of ``NEVER_TRAINED_POINTS`` or more rollout summaries (``time/fps`` written) with no ``train/`` key at
      all (h327-sb3contrib-qrdqn-airsim-leader-drone: ``learning_starts`` at its default of 50,000 before sb3-contrib
      2.3, a run of 30,000 steps; 300 summaries, no ``train/`` key), unless no file of it holds two summaries: SB3's
      on-policy loop writes a summary before each update and its ``train/`` keys at the next summary, so ``learn()``
      called for one rollout at a time writes a new event file of one summary each time and never its ``train/``
      keys (h445-sb3-ppo-metaworld-subgoal-env-single-task9: 151 summaries in 152 files, the return -6.4 to -0.9);
    * any log whose first update metric (:data:`UPDATE_METRICS`) comes after ``LATE_UPDATE_SHARE`` of the reward's
      points and ``LATE_UPDATE_POINTS`` of them (h356-mlagents-ppo-sailing-boat-ppo5: an ML-Agents buffer of 85,000
      steps in a run of 100,000, ``Losses/Value Loss`` logged once, at 90,000, after 17 of 20 summaries)."""
    reward = metric(run, "reward_mean")
    if reward is None:
        return None
    if run.trainer == "sb3" and len(reward) >= NEVER_TRAINED_POINTS:
        parts = run.metadata.get("parts") or [run.metadata]
        keys = set(run.sources.values()) | {str(c) for p in parts for c in p.get("unmapped", ())}
        if (SB3_SUMMARY_KEY in keys and not any(k.startswith(SB3_TRAIN_PREFIX) for k in keys)
                and len(reward) > len(run.files)):
            return Untrained(reward, None)
    firsts = [s.steps[0] for name in UPDATE_METRICS if (s := metric(run, name)) is not None]
    if not firsts:
        return None
    untrained = Untrained(reward, min(firsts))
    return untrained if untrained.before >= max(LATE_UPDATE_POINTS, LATE_UPDATE_SHARE * len(reward)) else None
