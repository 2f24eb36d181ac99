"""BASELINE_BROKEN (warn, stage A): the value baseline explains nothing of the return, or all of it, or its values ran
far beyond every return.

Judged on ``vf_explained_var`` = ``1 - Var(returns - values) / Var(returns)`` (verl
``critic/vf_explained_var``, SB3 ``train/explained_variance``; dimensionless, at most 1, unbounded
below). The early window (first 20 % of the logged points, at least 3; for a critic that moves, at
least ``WARMUP_MIN`` (6) with ``2 x sustain`` points after it) is the critic's warm-up and is not
judged on its own: PPO's first updates often have a negative explained variance while the
value head learns. Beyond it, medians are used because one bad batch can give -95 (tinyzero).

* *explains nothing*: the median after the warm-up and the late-window median are both at or
  below ``explains_below`` (0.05), and, on fewer than ``SHORT_AFTER x sustain`` (20) points after the
  warm-up, at most ``SHORT_ABOVE`` (a quarter) of them above it: the advantage is the return minus a
  baseline that carries no information about it (a critic that cannot see the state, or value targets it
  cannot fit); or the
  critic went flat after the warm-up: the series ends in a stretch of at least ``sustain`` points
  within ``FLAT`` of 0, longer than any before (:func:`advcore.detectors._windows.held_since`), its
  values no longer moving at all (judged that way without waiting for the medians: the lab's
  ``baseline_broken`` fault, a constant value head from step 30, is reported at delay 5 inside a
  trainer instead of 14 to 19);
* *explains everything*: both medians are at or above ``leak_above`` (0.999): the residual
  ``returns - values``, hence the advantage, is ~0 (a value input that sees the return, or a
  return that does not depend on the actions).

Onset: the first of ``sustain`` (5) consecutive logged points in that state after the last
stretch of ``sustain`` points out of it (:func:`advcore.detectors._windows.last_onset_index`: a
critic's warm-up below the bar, followed by healthy steps and a later break, dates the break, not
the warm-up), else the first such point of the late window.

Points logged while the reward mean is pinned (the run's last stretch of at least ``sustain``
reward means within ``REL_TOL`` (0.02) x the reward's span of each other: a solved task at its cap,
a policy collapsed to one failing behaviour) are not judged: returns that no longer vary make
``Var(returns)`` ~0 and the explained variance undefined (sb3-acrobot-collapse-after-success: 0.9998
once every episode hits the time limit; a solved CartPole logs NaN and -1e4).

A run that ends pinned at its best reward (the last stretch of ``sustain`` points above, at the
run's highest reward mean, over at least ``SOLVED_SHARE`` (5 %) of the logged points) solved its
task with this baseline: the finding is ``info``
(h3-sb3-a2c-cartpole-solved-ev-nan: explained variance -0.21 while A2C takes CartPole to its cap of
500 and holds it, 491 to 500 over its last 48 points; sb3-invertedpendulum-dr-solved likewise at
980 to 1000). The log cannot tell that from a plateau at the run's best level that is no solved
task: h3-sb3-a2c-breakout-mlp-entropy-collapse idles at a score of 3.6 to 3.9 with a dead critic,
and gets the info too (a missed warning, where the other way gave two false ones). So does a critic that
explains nothing while another measure of the goal rose (:func:`advcore.detectors._reward.other_rise`: a success
rate, a self-play rating, a validation score): the policy learns with this baseline.

* *diverged*, judged first and without ``vf_explained_var``: the critic's value estimate (``value_mean``) has a
  late median ``VALUE_BEYOND`` (1,000) times the largest ``|reward_mean|`` of the run or more, dated from the
  stretch where it stayed beyond every reward (ML-Agents' ``Policy/Extrinsic Value Estimate``).

Not applicable (None) to a group-based run (GRPO and kin log group
statistics and no critic metric: their baseline is the group mean); not evaluable without
``vf_explained_var`` otherwise.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping

from advcore.detectors._base import Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._reward import REL_TOL, other_rise
from advcore.detectors._windows import Series, aligned, held_since, last_onset_index, metric, run_kind, window_len
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "BASELINE_BROKEN"

WHAT_TO_TRY_NOTHING = (
    "Check that the critic sees the state: a constant or dummy observation (a disconnected simulator, a wrong "
    "camera shape), a detached or frozen value head, or a feature slice that drops the state all pin explained "
    "variance at 0.",
    "Check the value targets: reward and return scale (normalise them), gamma and lambda, done/truncation handling "
    "in GAE; a value loss that keeps growing means the critic cannot fit them.",
    "Give the critic a chance: a higher critic learning rate, critic warm-up steps before actor updates, value "
    "clipping that is not freezing it.",
)
WHAT_TO_TRY_DIVERGED = (WHAT_TO_TRY_NOTHING[1], WHAT_TO_TRY_NOTHING[2])
WHAT_TO_TRY_EVERYTHING = (
    "Look for a target leak: the value input includes the reward, the return or future tokens (e.g. the scored "
    "response with its verdict), so returns - values is ~0.",
    "Check that the return depends on the actions: a reward constant per prompt or episode is fully predictable and "
    "leaves no advantage to learn from.",
)


def _pinned_from(run: Run, sustain: int) -> int | None:
    """The first step of the run's last stretch of at least ``sustain`` logged reward means that stay
    within ``REL_TOL`` x the reward's span of each other (a solved task at its cap, a collapsed
    policy at its floor), or None."""
    reward = metric(run, "reward_mean")
    if reward is None or len(reward) < sustain:
        return None
    tol = REL_TOL * (max(reward.values) - min(reward.values))
    lo = hi = reward.values[-1]
    first = len(reward) - 1
    for i in range(len(reward) - 2, -1, -1):
        lo, hi = min(lo, reward.values[i]), max(hi, reward.values[i])
        if hi - lo > tol:
            break
        first = i
    return reward.steps[first] if len(reward) - first >= sustain else None


#: A critic whose explained variance moves after the warm-up (beyond ``FLAT``) may still be fitting:
#: its warm-up is at least this many logged points (20 % of the run's from 30 points on), and it is
#: judged on at least ``2 x sustain`` points after it. The lab's PPO critic (advcore lab run
#: --estimator ppo) explains 0.0 to 0.1 of the return over its first 7 updates and 0.1 to 0.3 from
#: the 8th (seed 1: 0.00 to 0.13 over its first 13): judged on its first 6 points (a warm-up of 3), a
#: monitor inside the trainer warned on every healthy PPO run.
WARMUP_MIN = 6
#: On fewer than this many times ``sustain`` points after the warm-up, a critic whose values move explains
#: nothing only when at most ``SHORT_ABOVE`` of those points lie above ``explains_below`` (not just half):
#: inside a trainer, a critic still fitting slowly explains 0.0 to 0.1 of the return for its first 20 to 25
#: updates, a third of its points above 0.05 (the lab's hard negatives slow_lr, a learning rate 4 times
#: smaller, and curriculum_reset under PPO: judged on the median alone, a monitor warned on seeds 1 and 2 at
#: their 16th to 19th update), while carla-sb3-ppo-kl-blowup's critic, 10 points after its warm-up, has none
#: above it.
SHORT_AFTER = 4
SHORT_ABOVE = 0.25
#: An explained variance within this of 0 at every point after the warm-up (or, from the spreads of
#: values and returns, a bound at most ``PROXY_BELOW``) is a critic whose values do not move: judged
#: after the usual warm-up (carla-sb3-ppo-constant-obs: 0 within 2.4e-7 over its 13 points;
#: h20-spinup-ppo-placement-value-broken: values spread at most 45 next to returns spread by 1e7,
#: over 10 points).
FLAT = 1e-3
#: The proxy's name: an upper bound on the explained variance from the spreads of values and returns.
EV_BOUND = "1 - (1 - value_std / return_std)^2"
#: A run ends solved when its reward holds its best level over at least this share of its logged points.
SOLVED_SHARE = 0.05
#: A critic whose late loss median is below this share of its early one is fitting the returns.
FITTING = 0.5
#: The bound says "explains nothing" only at or below this (values spread at most ~0.1 % of the returns):
#: ``return_std`` is the spread of whole-episode returns, and discounted returns-to-go spread less
#: (h12-spinup-ppo-sapien-cabinet-lossPi-zero, gamma 0.88: values spread 0.2 next to episode returns
#: spread 16, a bound of 0.03, while its critic is calibrated).
PROXY_BELOW = 0.002


def _critic_fitting(run: Run) -> bool:
    """Whether the critic's loss fell to ``FITTING`` of its early median (or cannot be told)."""
    loss = metric(run, "value_loss")
    return loss is None or not loss.judgeable or statistics.median(loss.late()) < FITTING * loss.early_median()


def _bound(values: Series, returns: Series) -> Series:
    """The upper bound on the explained variance from the spread of the critic's values (``value_std``)
    and of the returns (``return_std``): ``Var(R - V) >= (sd R - sd V)^2``, so the explained variance
    is at most ``1 - (1 - sd V / sd R)^2`` (at most ``2 sd V / sd R``) when ``sd V < sd R``. A critic
    whose values barely vary next to the returns explains nothing, whatever it predicts. The bound is
    used only when the critic's loss (``value_loss``) did not fall to ``FITTING`` (half) of its early
    median either (:func:`_critic_fitting`): Spinning Up's PPO on LunarLander keeps its values within
    0.1 to 0.3 of each other next to returns spread by 50 to 150 while its loss falls from 58,700 to
    2,000 and the policy learns (h19-spinup-ppo-lunarlander-installtest-hazekiahwon-slow-learner),
    while a critic stuck at one output has a loss that grows with the returns
    (h14-spinup-ppo-grid2op-critic-constant-valueloss-4e7: 4.7e6 to 2.9e7) or stays where it began
    (h20-spinup-ppo-placement-value-broken: 1.3e13 early, 1.0e13 late, next to returns spread by 1e7
    and values by at most 45); and it says "explains nothing" only at or below ``PROXY_BELOW``."""
    v, r, idx = aligned(values, returns)
    keep = [k for k, b in enumerate(r) if b > 0.0]  # returns that all agree leave the ratio undefined
    bound = tuple(1.0 - (1.0 - v[k] / r[k]) ** 2 if 0.0 <= v[k] < r[k] else 1.0 for k in keep)
    return Series(EV_BOUND, tuple(values.steps[idx[k]] for k in keep),
                  tuple(values.phases[idx[k]] for k in keep) if values.phases else None, bound, proxy=True)


#: A critic whose values have a late median this many times the largest ``|reward_mean|`` of the run diverged: no
#: discount lets a value exceed the returns by that much (a per-step reward under gamma 0.999 sums to at most 1,000
#: of them). Calibration half: every critic that went that far was a failure (h301-mlagents-ppo-alt-config-buffer-
#: 100k-critic-diverges: a value estimate of -29,430 next to returns of -0.25 to 6.07, 3,700 x; h250-cql-d4rl-
#: hopper-expert-seed0: 8.6e9 x); the healthy runs' values stay within 1 x their largest reward.
VALUE_BEYOND = 1000.0


def _values_diverged(run: Run, sustain: int) -> Finding | None:
    """The critic's value estimate (``value_mean``) left the range of the returns (``reward_mean``) by
    ``VALUE_BEYOND`` or more late in the run; dated from the stretch where its size stayed beyond every return."""
    values, reward = metric(run, "value_mean"), metric(run, "reward_mean")
    if values is None or reward is None or not values.judgeable:
        return None
    scale = max(abs(v) for v in reward.values)
    late = statistics.median(abs(v) for v in values.late())
    if scale == 0.0 or late < VALUE_BEYOND * scale:  # a reward exactly 0 throughout gives no scale
        return None
    idx = last_onset_index(values.values, lambda v: abs(v) > scale, sustain)
    if idx is None:
        idx = next(i for i in range(len(values) - window_len(len(values)), len(values)) if abs(values.values[i]) > scale)
    evidence: dict[str, object] = {"metric": values.name, "rule": "values_diverged", "late_abs_median": late,
                                   "reward_abs_max": scale, "times": late / scale, **values.where(idx)}
    message = (f"The critic diverged: its value estimate has a median size of {late:.4g} late, {late / scale:.3g} x "
               f"the largest reward of the run ({scale:.4g}), and stayed beyond every reward from step "
               f"{values.step_at(idx)}. The advantages are returns minus a baseline no return can match.")
    return Finding(ID, "warn", "A", values.step_at(idx), evidence, message, WHAT_TO_TRY_DIVERGED)


#: A value loss whose late median is this many times its early one grew: the critic cannot fit its targets.
LOSS_GROWTH = 10.0


def _loss_growth(run: Run) -> tuple[float, float] | None:
    """The early and late medians of ``value_loss`` when the late one is at least ``LOSS_GROWTH`` times the early one
    (carla-sb3-ppo-kl-blowup: 73 early, 3,578 late, explained variance about 0 throughout), else None."""
    loss = metric(run, "value_loss")
    if loss is None or not loss.judgeable:
        return None
    early, late = statistics.median(loss.early()), statistics.median(loss.late())
    return (early, late) if early > 0 and late >= LOSS_GROWTH * early else None


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate BASELINE_BROKEN on ``run`` with resolved ``knobs``."""
    diverged = _values_diverged(run, int(knobs["sustain"]))
    if diverged is not None:
        return diverged
    s = metric(run, "vf_explained_var")
    if s is None:
        values, returns = metric(run, "value_std"), metric(run, "return_std")
        if values is None or returns is None:
            # a value estimate that did not run away says nothing of what the critic explains
            return None if run_kind(run) == "group" else NotEvaluable(
                ID, ("vf_explained_var (or value_std with return_std)",))
        if _critic_fitting(run):  # its flat values are still a baseline
            return None
        s = _bound(values, returns)
    below, leak, sustain = float(knobs["explains_below"]), float(knobs["leak_above"]), int(knobs["sustain"])
    pinned_from = _pinned_from(run, sustain)
    if pinned_from is not None:  # returns that no longer vary leave the explained variance undefined
        keep = [i for i, st in enumerate(s.steps) if st < pinned_from]
        s = Series(s.name, tuple(s.steps[i] for i in keep), tuple(s.phases[i] for i in keep) if s.phases else None,
                   tuple(s.values[i] for i in keep), s.proxy)
    if not s.judgeable:
        return None
    if s.proxy:  # returns-to-go under discounting spread less than episode returns: only a flat critic counts
        below = min(below, PROXY_BELOW)
    warmup = window_len(len(s))
    flat = below if s.proxy else FLAT
    # a critic that went flat after the warm-up, for longer than it ever was before: its values stopped moving
    went_flat = held_since(s.values, lambda v: abs(v) <= flat, sustain)
    went_flat = went_flat if went_flat is not None and went_flat >= warmup else None
    if max(abs(v) for v in s.values[warmup:]) > flat:
        # a critic whose values move may still be fitting: a longer warm-up, and more points after it
        warmup = max(warmup, WARMUP_MIN)
        if len(s) - warmup < 2 * sustain and went_flat is None:
            return None
    post = statistics.median(s.values[warmup:])
    late = statistics.median(s.late())
    pred: Callable[[float], bool]
    try_: tuple[str, ...]
    # on a short history the median alone is not enough: few points may lie above the bar
    short = len(s) - warmup < SHORT_AFTER * sustain
    above = sum(1 for v in s.values[warmup:] if v > below) / (len(s) - warmup)
    by_medians = post <= below and late <= below and (not short or above <= SHORT_ABOVE)
    if by_medians or went_flat is not None:
        rule, pred, try_ = "explains_nothing", (lambda v: v <= below), WHAT_TO_TRY_NOTHING
    elif post >= leak and late >= leak and not s.proxy:  # an upper bound says nothing of a leak
        rule, pred, try_ = "explains_everything", (lambda v: v >= leak), WHAT_TO_TRY_EVERYTHING
    else:
        return None
    idx = went_flat if went_flat is not None and not by_medians else last_onset_index(s.values, pred, sustain)
    if idx is None:
        start = len(s) - window_len(len(s))
        idx = next(i for i in range(start, len(s)) if pred(s.values[i]))
    evidence: dict[str, object] = {
        "metric": s.name,
        **({"proxy": s.name} if s.proxy else {}),
        "rule": rule,
        "warmup_median": statistics.median(s.values[:warmup]),
        "post_warmup_median": post,
        "late_median": late,
        "min": min(s.values),
        "max": max(s.values),
        "warmup_points": warmup,
        "explains_below": below,
        "leak_above": leak,
        **s.where(idx),
    }
    if pinned_from is not None:
        evidence["judged_before_step"] = pinned_from
    if rule == "explains_nothing":
        measured = ("explained variance" if not s.proxy
                    else "explained variance at most (from the spreads of values and returns)")
        if by_medians:
            said = f"{measured} {post:.3g} (median after a warm-up of {warmup} points), {late:.3g} late"
        else:
            assert went_flat is not None
            evidence["flat_since_step"] = s.steps[went_flat]
            said = (f"{measured} within {flat:g} of 0 at each of its last {len(s) - went_flat} points, from step "
                    f"{s.steps[went_flat]} (its values stopped moving; {post:.3g} median after the warm-up)")
        message = (f"The value baseline explains nothing of the return: {said}. The advantages are returns minus an "
                   "uninformative baseline.")
        grown = _loss_growth(run)
        if grown is not None:
            # a critic that cannot fit its targets, not one that does not see the state: the targets come first
            evidence["value_loss_early_median"], evidence["value_loss_late_median"] = grown
            message += (f" Its value loss grew {grown[1] / grown[0]:.3g}x (median {grown[0]:.4g} early, "
                        f"{grown[1]:.4g} late): the critic cannot fit its targets.")
            try_ = (*WHAT_TO_TRY_DIVERGED, WHAT_TO_TRY_NOTHING[0])
    else:
        message = (f"The value baseline explains all of the return (explained variance {late:.4g} late): "
                   "returns - values, hence the advantage, is ~0 and the policy gets no signal.")
    reward = metric(run, "reward_mean")
    held = None if reward is None or pinned_from is None else sum(1 for st in reward.steps if st >= pinned_from)
    if (held is not None and reward is not None and held >= SOLVED_SHARE * len(reward)
            and reward.values[-1] >= max(reward.values) - REL_TOL * (max(reward.values) - min(reward.values))):
        # the run ends pinned at its best reward: the task was solved with this baseline
        evidence["solved_from_step"] = pinned_from
        message += (f" Yet the reward reached its best level and held it from step {pinned_from}: the task was "
                    "solved with this baseline, so nothing was lost.")
        return Finding(ID, "info", "A", s.step_at(idx), dict(evidence), message, try_)
    if rule == "explains_nothing" and (rise := other_rise(run)) is not None:
        # the goal itself was reached more and more: the policy learns with this baseline
        evidence["other_rise"] = rise
        message += f" Yet {rise}: the policy learns with this baseline."
        return Finding(ID, "info", "A", s.step_at(idx), dict(evidence), message, try_)
    return Finding(ID, "warn", "A", s.step_at(idx), dict(evidence), message, try_)


CARD = Card(
    tagline="the critic explains nothing, or everything, or diverged",
    happening="""
        With a learned value baseline (PPO with GAE, actor-critic), the advantage is the return minus the
        critic's value. Explained variance, `1 - Var(returns - values) / Var(returns)`, says how much of the
        return the critic predicts. At about 0 or below, the baseline carries no information: the
        advantages are as noisy as raw returns, and often the critic cannot see the state at all (a
        constant or dummy observation, a frozen or detached value head) or cannot fit its targets. At
        about 1 there is no residual left: `returns - values`, hence the advantage, is ~0 — the value
        input sees the return (a target leak), or the return does not depend on the actions.
    """,
    looks_like="""
        verl `critic/vf_explained_var`, SB3 `train/explained_variance`. carla-sb3-ppo-constant-obs:
        exactly 0 (within ±2.4e-7) at every update from 2048 to 25,600 timesteps while KL, clip fraction
        and entropy look healthy — the environment fell back to a constant observation. carla-sb3-ppo-kl-
        blowup: 0.123 at 6144, then between -0.027 and 0.046 at every point from 7168 (apart from -13.9 at
        16384) while the value loss climbs from 23 to 32,080. Warm-up is normal: PPO's first updates
        often have a negative explained variance (tinyzero: -4,870 at step 2, -0.69 at step 122).
    """,
    decides="""
        The early window (first 20 % of the logged points, at least 3) is the critic's warm-up and is
        not judged on its own; a critic whose explained variance moves (beyond 1e-3 of 0) gets a warm-up
        of at least 6 points and is judged only on 10 or more after it: it may still be fitting. On fewer
        than 20 points after the warm-up, it explains nothing only when at most a quarter of them lie above
        `explains_below` (inside a trainer, judged on the median alone, the lab's slowly fitting PPO critics
        of the hard negatives slow_lr and curriculum_reset, at 0.0 to 0.1 for their first 20 to 25 updates
        with a third of them above 0.05, were warned about; carla kl-blowup has none above it). Medians are
        used, not means, because one bad batch can give -95.6 (tinyzero step 395) or -13.9 (carla
        kl-blowup).

        - *Explains nothing*: the median after the warm-up **and** the late-window median are at or
          below `explains_below`; or the critic went flat after the warm-up, whatever the medians: the
          series ends in a stretch of at least `sustain` points within 1e-3 of 0 (of 0.002 for the bound
          below), longer than any before. A value head whose output stopped moving is seen `sustain`
          points after it stopped (the lab's `baseline_broken` fault, onset 30: reported inside a trainer
          at delay 5 instead of 14 to 19, while the medians wait for half of the points after the
          warm-up). When `value_loss` is logged and its late-window median is at least 10 times its early
          one, the critic cannot fit its targets rather than not see the state, and the advice starts at
          the value targets (carla-sb3-ppo-kl-blowup: 73 early, 3,578 late).
        - *Explains everything*: both medians are at or above `leak_above`.

        Without `vf_explained_var`, an upper bound stands in for it where the log has the spread of the
        critic's values (`value_std`, Spinning Up `StdVVals`) and of the returns (`return_std`,
        `StdEpRet`): `Var(R - V) >= (sd R - sd V)^2`, so the explained variance is at most
        `1 - (1 - sd V / sd R)^2`. It is used only when the critic's loss did not fall to half of its
        early median (a critic fitting the returns' level keeps flat values and is still a baseline:
        Spinning Up's PPO on LunarLander, values spread 0.2 next to returns spread 100 while its loss
        falls 58,700 → 2,000 and it learns), and it says "explains nothing" only at or below 0.002 (an
        episode return spreads more than a discounted return-to-go: h12-spinup-ppo-sapien-cabinet with
        gamma 0.88 has a bound of 0.03 and a calibrated critic). h14-spinup-ppo-grid2op: values
        spread 0 to 7e-5 next to returns spread 2,000 to 6,500, loss 4.7e6 → 2.9e7; never "explains
        everything" from a bound.

        A run that ends pinned at its best reward over at least 5 % of its logged points solved its
        task with this baseline: the finding is info (h3-sb3-a2c-cartpole-solved-ev-nan, explained
        variance -0.21 while A2C holds CartPole at 491 to 500; sb3-invertedpendulum-dr-solved at 980
        to 1000). A plateau at the run's best level that is no solved task looks the same in the log
        (h3-sb3-a2c-breakout-mlp-entropy-collapse idles at 3.6 to 3.9) and gets the info too. So is a
        critic that explains nothing while another measure of the goal rose (a success rate, a self-play
        rating, a validation score): h378-cleanrl-ppo-ur5-reach, explained variance about 0 while the
        share of episodes that reached the target rose to 0.75. The return alone does not clear it: a
        policy learns a little on raw returns with a blind critic (carla-sb3-ppo-constant-obs, -8.9 to -7.7).

        - *Diverged*, judged first and without `vf_explained_var`: the critic's value estimate
          (`value_mean`, ML-Agents `Policy/Extrinsic Value Estimate`) has a late median at least 1,000 x the
          largest |`reward_mean`| of the run (no discount lets a value exceed the returns that much; a
          per-step reward under gamma 0.999 sums to 1,000 of them): h301-mlagents-ppo-alt-config-buffer-100k-
          critic-diverges, -29,430 next to returns of -0.25 to 6.07; the healthy calibration runs stay within
          1 x. Dated from the stretch where its size stayed beyond every reward.

        Onset: the first of `sustain` consecutive logged points in that state after the last stretch of
        `sustain` points out of it, else the first such point of the late window (for a critic that went
        flat, the first point of its flat stretch). Counting from after the
        last healthy stretch dates the break the run ends in, not a warm-up it recovered from: in the
        collapse lab a healthy critic sits below 0.05 for its first 5 updates on one seed of six (seed 4),
        then explains 0.05 to 0.3 until the observation is cut at step 30; counted from the start, the
        onset was step 1 (error 29 steps on the score card's held-out seeds 3 to 5), now it is 30.

        Points logged while the reward mean is pinned are not judged: the run's last stretch of at
        least `sustain` reward means within 0.02 x the reward's span of each other (a solved task at its
        cap, a policy collapsed onto one failing behaviour) has returns that no longer vary, so
        `Var(returns)` is ~0 and the explained variance undefined (sb3-acrobot-collapse-after-success
        logs 0.9998 once every episode hits the time limit; `evidence["judged_before_step"]` says where
        judging stopped). Not
        applicable (no finding, not "not evaluable") to a run that is evidently
        group-based (it logs `zero_variance_group_frac` or `reward_std_within` and no critic metric):
        GRPO's baseline is the group mean, judged by DEGENERATE_GROUPS. Other runs without
        `vf_explained_var` are "not evaluable".
    """,
    related="""
        The A-stage view: with a useless critic the advantages are noisy but present, so ADV_COLLAPSE
        stays quiet; with a leaking one they vanish and ADV_COLLAPSE (on `adv_std`) fires downstream.
        UPDATE_SUPPRESSED and ENTROPY_COLLAPSE are the U-stage consequences to check next.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="A",
    summary="the value baseline explains nothing of the return (explained variance <= ~0) or all of it (~1), or its "
            "values ran 1,000 x beyond every return",
    key_metrics=("vf_explained_var", "value_mean"),
    fn=detect,
    knobs=(
        Knob("explains_below", 0.05, "explained variance at or below this after the warm-up = explains nothing",
             high=1.0,
             why="The critic removes less than 5 % of the return variance. carla constant-obs: medians 0.0; carla "
                 "kl-blowup: -0.00018 after the warm-up (its 6 points), -0.013 late. Healthy critics on the real logs: "
                 "verl-ppo-qwen7b 0.38 after the warm-up, 0.42 late; tinyzero's erratic critic 0.093 / 0.12 — "
                 "quiet, a factor 2 above."),
        Knob("leak_above", 0.999, "explained variance at or above this after the warm-up = no residual", low=0.0,
             high=1.0,
             why="The residual std is under 3 % of the return std. No real log comes near: the highest median is "
                 "0.42 (verl-ppo-qwen7b). A critic on an easy, deterministic task can reach 0.99 honestly, so the "
                 "cut is set above that."),
        Knob("sustain", 5, "consecutive logged steps in that state for the onset estimate", low=1, integer=True,
             why="As the seed card. carla constant-obs: 2048 (the first update); carla kl-blowup: 7168."),
    ),
    what_to_try_cases=(("Explains nothing", WHAT_TO_TRY_NOTHING), ("Explains everything", WHAT_TO_TRY_EVERYTHING),
                        ("The critic diverged", WHAT_TO_TRY_DIVERGED)),
    card=CARD,
)
