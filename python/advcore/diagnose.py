"""The verdict of SPEC section 7: where the signal disappeared, since when, on what evidence.

:func:`diagnose` orders the findings causally (the earliest stage first, non-finite values before
what followed them, then by onset; an entropy collapse before the tied groups it produces leads
them, see :func:`_entropy_leads`; updates too large before what they broke lead it, see
:func:`_blowup_leads`), reads them together as the seed card says (all of
ADV_COLLAPSE, DEGENERATE_GROUPS and REWARD_STD_DEATH -> start from reward variance; ADV_COLLAPSE
alone on a real ``adv_std`` -> the reward -> advantage plumbing), tells a saturated reward (mean at
its ceiling) from a floor (everything fails) and from tied groups (each prompt tied at its own
value), and lists what could not be checked.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Literal, cast

from advcore.detectors._base import CAUSAL_ORDER, Finding, NotEvaluable
from advcore.detectors._slices import Unjudged, group_views, slice_views
from advcore.detectors._reward import REL_TOL, Regime, RewardCourse, other_rise, reward_course, reward_level
from advcore.detectors._windows import REWARD_PROXIES, median_spacing, metric
from advcore.detectors.filter_starvation import FilterAccounting, accounting
from advcore.detectors.dead_from_start import SHORT_COURSE
from advcore.detectors.update_unstable import is_collapse
from advcore.model import Run
from advcore.stages import StageLevel, contrast_logged, had_contrast, stage_of, stage_signal

__all__ = ["Regime", "SliceLoss", "Status", "Verdict", "diagnose", "reward_regime", "since_step"]

VerdictStage = Literal["R", "A", "T", "U"]
#: ``lost``: a warning or error finding; ``quiet``: judged, nothing lost; ``not_judged``: too little to
#: judge (no steps, no detector with its metrics); ``unreadable``: nothing could be read.
Status = Literal["lost", "quiet", "not_judged", "unreadable"]

_RANK: dict[str, int] = {stage: i for i, stage in enumerate(CAUSAL_ORDER)}
_SEED = ("ADV_COLLAPSE", "DEGENERATE_GROUPS", "REWARD_STD_DEATH")


def _finite(v: float) -> float | None:
    """``v``, or None where JSON has no number for it (NaN, an infinity)."""
    return v if math.isfinite(v) else None


@dataclass(frozen=True, slots=True)
class SliceLoss:
    """A slice whose learning signal was lost: its findings' IDs (causal order), the stage and onset
    of the first, and whether it died apart from the aggregate (none of its IDs fired on the run as a
    whole)."""

    slice: str
    ids: tuple[str, ...]
    stage: VerdictStage | None
    onset: int | None
    apart: bool

    def to_json(self) -> dict[str, object]:
        return {"slice": self.slice, "ids": list(self.ids), "stage": self.stage, "onset_step": self.onset,
                "apart_from_aggregate": self.apart}

    def describe(self) -> str:
        since = f" since step {self.onset}" if self.onset is not None else ""
        return f"{self.slice} ({', '.join(self.ids)}, stage {self.stage}{since})"


@dataclass(frozen=True, slots=True)
class Verdict:
    """Where the learning signal disappeared (``stage`` None when nothing fired)."""

    stage: VerdictStage | None
    summary: str
    #: onset step of the first finding in causal order
    onset: int | None
    #: findings in causal order
    findings: tuple[Finding, ...]
    #: saturation / floor / tied_groups when the reward spread is gone, else None
    regime: Regime | None
    what_to_try: tuple[str, ...]
    #: "ID: needs X" for each detector that could not run
    not_checked: tuple[str, ...]
    #: False when the run could not be judged (no steps, too few, or no detector had its metrics)
    judged: bool = True
    #: the signal at each observed stage, early and late (see :mod:`advcore.stages`)
    signal: tuple[StageLevel, ...] = ()
    #: nothing could be read (the run has read errors and no step)
    unreadable: bool = False
    #: the course of ``reward_mean`` (early and late medians, noise; None under 10 logged points)
    course: RewardCourse | None = None
    #: the slices whose signal was lost (a warning or error finding of the slice), in causal order
    slices: tuple[SliceLoss, ...] = ()
    #: the slices (or labels, ``"<label>=*"``) that could not be judged, and why
    slices_not_evaluable: tuple[Unjudged, ...] = ()
    #: what the trainer's accuracy filter removed (None when the log shows no filter)
    filter: FilterAccounting | None = None

    @property
    def status(self) -> Status:
        if self.findings:
            return "lost" if any(f.severity in ("warn", "error") for f in self.findings) else "quiet"
        if not self.judged:
            return "unreadable" if self.unreadable else "not_judged"
        return "quiet"

    @property
    def headline(self) -> str | None:
        """The ID of the finding that leads (the first in causal order)."""
        return self.findings[0].id if self.findings else None

    @property
    def onset_before_log(self) -> bool:
        """The lead's condition already held at the first logged step: ``onset`` is where the log begins,
        and the loss began there or before (:attr:`Finding.began_before_log`)."""
        return bool(self.findings) and self.findings[0].began_before_log

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"status": self.status, "stage": self.stage, "headline": self.headline,
                                  "onset_step": self.onset, "onset_before_log": self.onset_before_log,
                                  "summary": self.summary,
                                  "what_to_try": list(self.what_to_try)}
        if self.slices:
            out["slices"] = [s.to_json() for s in self.slices]
        if self.slices_not_evaluable:
            out["slices_not_evaluable"] = [u.to_json() for u in self.slices_not_evaluable]
        if self.filter is not None:
            out["filter"] = self.filter.to_json()
        if self.signal:
            out["signal"] = [{"stage": s.stage, "metric": s.metric, "early": _finite(s.early), "late": _finite(s.late),
                              "statistic": s.statistic} for s in self.signal]
        if self.course is not None:
            c = self.course
            out["reward"] = {"early_median": _finite(c.early), "late_median": _finite(c.late), "noise": _finite(c.noise),
                             "rose": c.rose}
        return out


#: R-stage findings a policy that stopped exploring produces by construction: a deterministic policy
#: samples G identical completions, so its groups tie and the reward spread dies.
_EXPLORATION_SYMPTOMS = frozenset({"DEGENERATE_GROUPS", "REWARD_STD_DEATH"})
#: Steps by which a cause's onset may trail its symptoms' and still lead: both onsets are estimates
#: over ``sustain`` (5) consecutive points.
CAUSE_TOLERANCE = 5


def _tolerance(run: Run) -> float:
    """``CAUSE_TOLERANCE`` logged points in step units: the median gap between logged steps times it
    (SB3 logs every 2,048 timesteps, a GRPO console every step)."""
    steps = run.frame["step"].drop_nulls().unique().sort() if "step" in run.frame.columns else None
    if steps is None or len(steps) < 2:
        return float(CAUSE_TOLERANCE)
    gap = steps.diff().drop_nulls().median()
    return CAUSE_TOLERANCE * max(1.0, float(gap) if isinstance(gap, (int, float)) else 1.0)


def _no_rise(f: Finding) -> bool:
    """DEAD_FROM_START's no-rise sign: a symptom dated from the run's start (or its change down), which an entropy
    collapse need not precede to be the cause of a floor (sb3-chess-entropy-collapse: the no-rise sign from step
    900, the entropy's fall at 1,300 onto the illegal move that pins the return at -100)."""
    return f.id == "DEAD_FROM_START" and f.evidence.get("dead") == "no_rise"


def _entropy_leads(findings: Sequence[Finding], tolerance: float, first_step: int | None) -> bool:
    """ENTROPY_COLLAPSE is the cause of the R-stage findings when those are only the tied groups and
    dying reward spread a deterministic policy produces, or a floor the reward fell to after the run
    began (sb3-chess-entropy-collapse: the policy collapses onto one illegal move, the return
    reaches its floor of -100 at step 1250 and the entropy's fall crosses its cut at 1300), and the
    entropy began falling no later than ``tolerance`` steps after the earliest of them. A floor from
    the first steps (the task too hard, the reward not wired), saturation, or ties the reward makes
    are R findings of their own and keep the lead."""
    ent = next((f for f in findings if f.id == "ENTROPY_COLLAPSE" and f.onset_step is not None), None)
    if ent is None or ent.onset_step is None:
        return False
    stage_r = [f for f in findings if f.stage == "R" and not _no_rise(f)]

    def symptom(f: Finding) -> bool:
        if f.id in _EXPLORATION_SYMPTOMS:
            return True
        reached = f.onset_step is not None and first_step is not None and f.onset_step > first_step + tolerance
        return f.id == "REWARD_FLOOR" and reached

    if not stage_r or not all(symptom(f) for f in stage_r):
        return False
    r_onsets = [f.onset_step for f in stage_r if f.onset_step is not None]
    return bool(r_onsets) and ent.onset_step <= min(r_onsets) + tolerance


def _blowup_leads(findings: Sequence[Finding], tolerance: float) -> bool:
    """UPDATE_UNSTABLE is the cause when the updates became too large no later than ``tolerance``
    steps (``CAUSE_TOLERANCE`` logged points) after the earliest other finding began (NaN and inf
    aside, which lead anyway): a policy that runs away from its reference ends at a reward floor and
    tied groups (opd-qwen3-4b-length-collapse: KL to the reference past 2 from step 6, score at its
    floor from step 9), and updates far outside the trust region leave the critic behind
    (carla-sb3-ppo-kl-blowup: KL 52.5 on the first update, the value baseline explains nothing from
    7,168 timesteps), and the fall of a reward that never rose above its start (h250-cql-d4rl-hopper-expert-seed0:
    the return's change down at evaluation 14, the Q-values' divergence from 22)."""
    blowup = next((f for f in findings if f.id == "UPDATE_UNSTABLE" and f.onset_step is not None), None)
    if blowup is None or blowup.onset_step is None:
        return False
    # a no-rise sign dated by the reward's change down is that fall, which the blow-up explains; one dated from the
    # start is not (h354-sb3-ppo-uav-mec-five-drones: pinned from the first rollout, clip fractions past 0.5 at 4.99M)
    others = [f.onset_step for f in findings if f.id not in ("UPDATE_UNSTABLE", "NONFINITE")
              and not (_no_rise(f) and f.evidence.get("fell")) and f.onset_step is not None]
    return not others or blowup.onset_step <= min(others) + tolerance


#: DEAD_FROM_START's no-rise sign (the reward never rose) follows every other finding that began within the run's
#: early window: it says that nothing was learned, the others say why (h186-mlagents-poca-object-collector-constant-beta-
#: entropy-grows: REWARD_FLOOR).
NO_RISE_RANK = 5.5


#: DEAD_FROM_START's dead update (no gradient reached the policy from the first step) leads the advantage's findings:
#: the critic was never trained either, so what it says is its initialization's (h429-mlagents-ppo-gladiator-single-
#: opponent: one PPO update in 500k steps, the policy's entropy at its initial 1.4189 throughout, value estimates of
#: 2e7 on unnormalised inputs read as a diverged critic); a reward with no signal (stage R) still leads it.
UPDATE_DEAD_RANK = _RANK["A"] - 0.5


def _early_end(run: Run) -> int | None:
    """The last step of the reward's early window, the one the no-rise sign measures the late window against; None
    without a reward course, or on a short course (:data:`~advcore.detectors.dead_from_start.SHORT_COURSE`), whose
    early window of a few points holds no other finding's onset, which a level over 5 of them dates later: there,
    any other finding explains (h169-mlagents-ppo-gail-bc-snake-imitation-entropy-collapses-never-learns, 34
    summaries, the entropy's fall from 230,000; h19-spinup-vd3-critic-divergence-halfcheetah, the Q-values'
    blow-up from epoch 19 of 49)."""
    course = reward_course(run)
    if course is None or len(course.series) < SHORT_COURSE:
        return None
    return course.series.steps[len(course.series.early()) - 1]


def _order(findings: Sequence[Finding], run: Run) -> list[Finding]:
    tolerance = _tolerance(run)
    first_step = int(run.frame["step"].min()) if "step" in run.frame.columns and run.frame.height else None  # type: ignore[arg-type]
    entropy_first = _entropy_leads(findings, tolerance, first_step)
    blowup_first = _blowup_leads(findings, tolerance)
    # a reward that never rose from its start is explained by what began within the early window it is measured
    # from; a failure that began later cannot say why nothing was learned before it (h354-sb3-ppo-uav-mec-five-
    # drones: a return pinned near -66 from the first rollout, clip fractions past 0.5 from 4.99M of 10M steps)
    early_end = _early_end(run)
    # a no-rise sign dated by the reward's change down (``fell``) is explained by what began before that fall too
    # (h25-mlagents-ppo-car-rightturn-entropy-collapse: the entropy's fall from 1.15M, the return's from 1.75M)
    fell_at = next((f.onset_step for f in findings if _no_rise(f) and f.evidence.get("fell")), None)
    explained = any(not _no_rise(f) and f.severity != "info"
                    and (f.onset_step is None or early_end is None or f.onset_step <= early_end
                         or (fell_at is not None and f.onset_step <= fell_at + tolerance)) for f in findings)
    onsets = [f.onset_step for f in findings if f.id != "NONFINITE" and f.onset_step is not None]
    first_onset = min(onsets) if onsets else None

    def key(f: Finding) -> tuple[float, int, int, float]:
        rank: float = _RANK.get(f.stage, 5)
        if f.id == "NONFINITE":
            # a NaN leads what followed it; what began before it (a reward at its floor from the first
            # step, verl-elastic-ppo-filelogger-broken) leads the NaN
            early = first_onset is None or f.onset_step is None or f.onset_step <= first_onset
            rank = 0 if early else 4.5
        if entropy_first and f.id == "ENTROPY_COLLAPSE":
            rank = 0.5
        if blowup_first and f.id == "UPDATE_UNSTABLE":
            rank = 0.4
        if _no_rise(f) and explained:
            rank = NO_RISE_RANK  # a symptom: any other finding says more about why
        if f.id == "DEAD_FROM_START" and f.evidence.get("dead") == "update":
            rank = UPDATE_DEAD_RANK
        onset = float(f.onset_step) if f.onset_step is not None else math.inf
        return (rank, 0 if is_collapse(f) else 1, 0 if f.id == "DEAD_FROM_START" else 1, onset)

    return sorted(findings, key=key)


def reward_regime(run: Run, *, rel_tol: float = REL_TOL) -> Regime | None:
    """How the reward lost its spread, judged on the late 20 % of the run.

    ``saturation``: the late reward mean sits within ``rel_tol`` of the ceiling (``reward_max``
    when logged, else the run's highest reward mean), barely moves and has no spread left;
    ``floor``: it sits at the floor (``reward_min`` or the run's lowest mean, or exactly 0
    throughout) with no spread; ``tied_groups``: the late reward mean still moves from step to
    step (prompts differ) while the groups are tied. None when the rewards are missing or still
    spread. The rule lives in :func:`advcore.detectors._reward.reward_level`, which the
    REWARD_SATURATION and REWARD_FLOOR detectors read too.
    """
    level = reward_level(run, rel_tol=rel_tol)
    return level.regime if level is not None else None


def _regime(run: Run, ids: set[str], judged: Collection[str] | None) -> Regime | None:
    """The regime the findings say: saturation when REWARD_SATURATION fired, floor when REWARD_FLOOR
    did; else :func:`reward_regime`, except a saturation or a floor that its detector was run on
    (``judged``) and did not report, with the user's knobs: the verdict never disagrees with the
    findings of a re-tuned detector."""
    if "REWARD_SATURATION" in ids:
        return "saturation"
    if "REWARD_FLOOR" in ids:
        return "floor"
    regime = reward_regime(run)
    claimed_by = {"saturation": "REWARD_SATURATION", "floor": "REWARD_FLOOR"}.get(regime or "")
    if claimed_by is not None and judged is not None and claimed_by in judged:
        return None
    return regime


_REGIME_TEXT = {
    "saturation": "the reward mean sits at its ceiling (saturation: the task is exhausted; harder prompts, "
    "not advantage plumbing)",
    "floor": "the reward sits at its floor (everything fails, or the reward is not wired)",
    "tied_groups": "each group is tied at its own reward value while prompts differ (tied groups: a deterministic "
    "policy or a coarse reward, not saturation)",
}


#: R-stage findings that mean the reward lost its contrast (the others: it measures the wrong thing).
_NO_CONTRAST = {"DEGENERATE_GROUPS", "REWARD_STD_DEATH", "DEAD_FROM_START", "REWARD_SATURATION", "REWARD_FLOOR"}


#: Why a trainer's log may lack the reward, told when it does.
_NO_REWARD_HINT = {"sb3": "SB3 logs `rollout/ep_rew_mean` only for an environment wrapped in a `Monitor`"}


def _localize(stage: VerdictStage | None, signal: Sequence[StageLevel], ids: set[str], lead: str,
              run: Run) -> list[str]:
    """The evidence that tells "the reward had no contrast" from "the pipeline removed it": the
    reward stage's own late level, set against the stage that was blamed. At stage R without a
    finding of lost contrast (truncation, one component, missing rewards), a reward that still
    varies within groups is said to carry the wrong signal rather than none; after updates that
    broke the policy (``lead`` UPDATE_UNSTABLE, ordered first by :func:`_blowup_leads`), a reward
    without contrast is their consequence, not the place to start."""
    reward = next((s for s in signal if s.stage == "R"), None)
    if stage is None:
        return []
    if stage == "R":
        if reward is not None and had_contrast(reward) and not ids & _NO_CONTRAST:
            return [f"the rewards still vary within groups ({reward.describe()}): the contrast is there, "
                    "but it is not measuring what the task asks"]
        return []
    if reward is None:
        if not run.has("reward_mean") and not run.has("success_rate"):
            hint = _NO_REWARD_HINT.get(run.trainer or "")
            return ["no reward was logged at all, so a reward without contrast is not ruled out and whether the run "
                    "learns cannot be told" + (f" ({hint})" if hint else "")]
        spreads = contrast_logged(run)
        if spreads:
            # logged, but at too few steps for an early and a late level (h1-rookworld-trl-grpo-kl-explosion-step10:
            # one step, its reward_std and tied-group share beside a KL of 2.4e15)
            return [f"the reward spread ({', '.join(spreads)}) was logged at too few steps to compare early and late, "
                    "so a reward without contrast is not ruled out"]
        return ["no reward spread was logged (reward_std, reward_max and reward_min, a tied-group share), so a reward "
                "without contrast is not ruled out"]
    if had_contrast(reward):
        return [f"the rewards still had contrast late ({reward.describe()}), so the signal was lost after the reward, "
                f"at stage {stage}"]
    if lead == "UPDATE_UNSTABLE":
        return [f"the rewards lost their contrast as a consequence ({reward.describe()})"]
    return [f"the rewards had lost their contrast too ({reward.describe()}): start from the reward"]


#: A later stage's signal whose late level is at most this share of its early level died with the stage
#: blamed (trl-dapo-vlm-120531: grad_norm 23.9 -> 0 behind 95 % tied groups; a newcomer saw the line with
#: nothing that explained it).
DIED = 1e-3


def _downstream(stage: VerdictStage | None, signal: Sequence[StageLevel]) -> list[str]:
    """The later stages whose signal died with the stage blamed (late level at most :data:`DIED`
    of the early one), said as what followed from it."""
    if stage is None:
        return []
    dead = [s for s in signal if _RANK.get(s.stage, 0) > _RANK[stage] and s.early > 0 and math.isfinite(s.late)
            and s.late <= DIED * s.early]
    if not dead:
        return []
    return [f"the later stages lost their signal with it ({'; '.join(s.describe() for s in dead)})"]


#: A stretch before an onset longer than this many times the run's median step spacing is a gap in the log.
GAP_SPACINGS = 10


def _unlogged_before(run: Run, onset: int) -> str:
    """``"; nothing logged between step M and it"`` when the logged step before ``onset`` lies more than
    ``GAP_SPACINGS`` median spacings before it: the change happened somewhere in that gap, not at ``onset``
    (a newcomer joined a TinyZero console excerpt of steps 2 to 122 with one of steps 383 to 399 and read
    "since step 383" as the collapse's date); else ``""``. Not for runs with curriculum phases."""
    if "phase" in run.frame.columns or run.frame.height < 3:
        return ""
    steps = sorted({int(v) for v in run.frame["step"].drop_nulls().to_list()})
    i = bisect.bisect_left(steps, onset)
    if i == 0 or i == len(steps) or steps[i] != onset:
        return ""
    gap = onset - steps[i - 1]
    return f"; nothing logged between step {steps[i - 1]} and it" if gap > GAP_SPACINGS * median_spacing(steps) else ""


#: Fewer logged steps than this cannot tell a collapse from noise (early and late windows of 3).
MIN_STEPS = 6
#: A reward course over fewer logged steps than this cannot show learning against its noise: a quiet
#: verdict says so (a newcomer read "no learning shows in these 10 steps" on a verl run rising 0.57 -> 0.83).
FEW_STEPS = 20
#: A quiet verdict names the detectors that could check the log when they are at most this many.
FEW_CHECKED = 10


#: Findings that say why a slice's groups tie (its reward at a ceiling or a floor): they lead the other
#: findings of their stage in a slice, whose tied share may have been high before (a long-horizon slice
#: that mostly failed early ties most groups at 0 long before its floor).
_REGIME_IDS = ("REWARD_FLOOR", "REWARD_SATURATION")


def _slice_order(findings: Sequence[Finding]) -> list[Finding]:
    """A slice's findings in causal order: by stage, the regime's finding first, then by onset."""
    def key(f: Finding) -> tuple[float, int, float]:
        return (_RANK.get(f.stage, 5), 0 if f.id in _REGIME_IDS else 1,
                math.inf if f.onset_step is None else float(f.onset_step))
    return sorted(findings, key=key)


def _slice_losses(per_slice: Sequence[Finding], whole_ids: set[str]) -> list[SliceLoss]:
    """The slices with a warning or error finding, each with its findings in causal order."""
    by_slice: dict[str, list[Finding]] = {}
    for f in per_slice:
        if f.slice is not None and f.severity in ("warn", "error"):
            by_slice.setdefault(f.slice, []).append(f)
    out = []
    for name, fs in by_slice.items():
        ordered = _slice_order(fs)
        lead = ordered[0]
        stage: VerdictStage | None = lead.stage if lead.stage != "any" else None
        out.append(SliceLoss(name, tuple(f.id for f in ordered), stage, lead.onset_step,
                             not ({f.id for f in fs} & whole_ids)))
    # the slice whose reward is pinned (a regime finding), then the one where more detectors fired, leads: a
    # fault that floors half the samples (one visual variation) also ties most groups of every slice of
    # another label (each family holds perturbed tasks), which only DEGENERATE_GROUPS sees there
    return sorted(out, key=lambda s: (_RANK.get(s.stage or "any", 5), 0 if set(s.ids) & set(_REGIME_IDS) else 1,
                                      -len(s.ids), math.inf if s.onset is None else s.onset, s.slice))


def diagnose(
    run: Run, findings: Sequence[Finding], not_evaluable: Sequence[NotEvaluable], n_detectors: int | None = None,
    *, judged: Collection[str] | None = None,
) -> Verdict:
    """The verdict for ``run`` from the detectors' ``findings`` and ``not_evaluable`` outcomes.

    ``n_detectors`` is how many detectors were run; when every one of them lacked its metrics, or
    the run is too short to judge, the verdict says so instead of reporting a clean run. ``judged``
    names the detectors that were run: a saturation or floor regime is then claimed only by the
    finding of its detector (run with the user's knobs), never recomputed against it.

    Findings of a slice (:attr:`Finding.slice`) do not enter the whole run's reading; the verdict
    lists the slices whose signal was lost (:attr:`Verdict.slices`, those apart from the aggregate
    first named in the summary). When the run as a whole lost nothing, the first lost slice leads:
    its stage, onset and tips are the verdict's.
    """
    whole = [f for f in findings if f.slice is None]
    per_slice = [f for f in findings if f.slice is not None]
    verdict = replace(_diagnose(run, whole, not_evaluable, n_detectors, judged=judged), filter=accounting(run))
    _, unjudged = slice_views(run)
    if not per_slice and not unjudged:
        return verdict
    losses = _slice_losses(per_slice, {f.id for f in whole})
    slice_order = [f for loss in losses for f in _slice_order([f for f in per_slice if f.slice == loss.slice])]
    slice_order += [f for f in per_slice if f not in slice_order]
    findings_all = (*verdict.findings, *slice_order)
    extra = replace(verdict, findings=findings_all, slices=tuple(losses), slices_not_evaluable=tuple(unjudged))
    if not losses:
        return extra
    apart = [s for s in losses if s.apart]
    listed = apart or losses
    where = "; ".join(s.describe() for s in listed)
    whole_lost = verdict.status == "lost"
    if whole_lost:
        names = ", ".join(x.slice for x in losses)
        text = (f"; apart from the aggregate, the signal also died in slice{'s' if len(apart) > 1 else ''} {where}"
                if apart else f"; the slices lost it with the run ({names})")
        return replace(extra, summary=verdict.summary + text)
    lead = next(f for f in slice_order if f.severity in ("warn", "error"))
    first = losses[0]
    summary = (f"the run as a whole keeps its learning signal, but it died in slice{'s' if len(listed) > 1 else ''} "
               f"{where}: {lead.message.removeprefix(f'In slice {lead.slice}: ').rstrip('.')}")
    tries: list[str] = []
    for t in (t for f in slice_order for t in f.what_to_try):
        if t not in tries:
            tries.append(t)
    return replace(extra, stage=first.stage, summary=summary, onset=first.onset, what_to_try=tuple(tries), judged=True)


def since_step(onset: int, before_log: bool) -> str:
    """"since step N", or "by step N, where the log begins" when the condition already held at the first
    logged step (:attr:`Finding.began_before_log`)."""
    return f"by step {onset}, where the log begins" if before_log else f"since step {onset}"


#: The unread columns a verdict names, at most.
UNREAD_SHOWN = 4


#: A reward that did not rise but holds at least this share of the way from its floor to its ceiling (the highest
#: score a sample got, ``reward_max``) is at a plateau near the ceiling, not failing to learn.
NEAR_CEILING = 0.9


def _near_ceiling(run: Run, course: RewardCourse) -> str | None:
    """In words, a reward that holds near its ceiling (:data:`NEAR_CEILING`), with the validation score's course when
    one was logged; None when no ``reward_max`` bounds the reward or it holds lower (verl-ppo-qwen7b-gsm8k-resumed: a
    median of 0.945 late between a floor of 0 and a ceiling of 1, resumed at its plateau; a newcomer read "no
    learning shows" as a failure)."""
    level = reward_level(run)
    if level is None or level.ceiling_from != "reward_max" or not (span := level.ceiling - level.floor) > 0:
        return None
    if course.late - level.floor < NEAR_CEILING * span:
        return None
    text = (f"holding a median of {course.late:.4g} late, {(course.late - level.floor) / span:.0%} of the way from its "
            f"floor ({level.floor:.4g}) to its ceiling ({level.ceiling:.4g}, the best score a sample got): a plateau "
            "near the ceiling, where little is left to learn on this data (harder prompts or a new task move it)")
    val = metric(run, "val_score")
    if val is not None and len(val) >= 2:
        text += (f"; the validation score went from {val.values[0]:.4g} at step {val.steps[0]} to "
                 f"{val.values[-1]:.4g} at step {val.steps[-1]} ({len(val)} evaluations)")
    return text


def _unread_columns(run: Run) -> str:
    """The log's columns that no alias named (``metadata["unmapped"]``), a few of them, with how to map
    one (the reward column of a hand-written loop: h139-numpy-dqn-poker-selfplay-learns logs ``bb100_recent``
    beside ``mains`` and ``perte``); "" when every column was read."""
    unmapped = [str(k) for k in run.metadata.get("unmapped", ()) or ()]
    if not unmapped:
        return ""
    shown = ", ".join(unmapped[:UNREAD_SHOWN]) + (f" and {len(unmapped) - UNREAD_SHOWN} more"
                                                  if len(unmapped) > UNREAD_SHOWN else "")
    return (f"not read: {shown}; name the reward column with --metric-map: a CSV with the header "
            "trainer,key,canonical and a row *,COLUMN,reward_mean")


def _nonfinite_stage(lead: Finding) -> VerdictStage | None:
    """The stage of a NONFINITE lead (stage "any"): the one every metric that first went non-finite
    measures (:func:`advcore.stages.stage_of`; TRL's ``grad_norm`` and ``kl`` together are the update),
    None when they span stages or one of them has no canonical name (then the cause is not known)."""
    if lead.id != "NONFINITE":
        return None
    names = lead.evidence.get("metrics_at_onset") or [lead.evidence.get("metric")]
    stages = {stage_of(str(n)) for n in names}
    only = next(iter(stages)) if len(stages) == 1 else None
    return cast(VerdictStage, only) if only is not None else None


def _diagnose(
    run: Run, findings: Sequence[Finding], not_evaluable: Sequence[NotEvaluable], n_detectors: int | None = None,
    *, judged: Collection[str] | None = None,
) -> Verdict:
    """:func:`diagnose` of the run as a whole (findings without a slice)."""
    ordered = _order(findings, run)
    # an info finding (an outcome such as a solved task) never leads a warning or an error
    ordered = [f for f in ordered if f.severity != "info"] + [f for f in ordered if f.severity == "info"]
    not_checked = tuple(n.describe() for n in not_evaluable)
    course = reward_course(run)
    if ordered and all(f.severity == "info" for f in ordered) and run.steps >= MIN_STEPS:
        notes = "; ".join(f.message.rstrip(".") for f in ordered)
        return Verdict(None, f"no sign that the learning signal was lost; {notes}", None, tuple(ordered), None, (),
                       not_checked, signal=stage_signal(run, lead=ordered[0]), course=course)
    if not ordered:
        unread = _unread_columns(run)
        if run.steps == 0:
            summary = ("nothing to judge: no steps were read" if not unread else
                       f"nothing to judge: no column of this log names a metric advcore knows ({unread})")
        elif n_detectors is not None and len(not_evaluable) >= n_detectors:
            summary = "could not check: no detector found the metrics it needs in this log" + (
                f" ({unread})" if unread else "")
        elif run.steps < MIN_STEPS:
            step_word = "step" if run.steps == 1 else "steps"
            summary = f"too short to judge: {run.steps} {step_word} logged; no detector fired"
        else:
            summary = "no sign that the learning signal was lost"
            if n_detectors is not None:
                summary += f" ({n_detectors - len(not_checked)} of {n_detectors} detectors could check this log"
                missing = {n.id for n in not_evaluable}
                checked = [d for d in judged or () if d not in missing]
                if judged is not None and len(checked) <= FEW_CHECKED:
                    summary += ": " + ", ".join(checked)
                groups = [v.name.removeprefix("group=") for v in group_views(run)]
                if groups:
                    summary += f"; the policy and critic judged per agent group: {', '.join(groups)}"
                summary += ")"
            elif not_checked:
                summary += f" ({len(not_checked)} detectors could not check this log)"
            if course is not None and (course.improved() or course.median_rose):
                summary += (f"; the reward rose from a median of {course.early:.4g} early to "
                            f"{course.late:.4g} late")
            elif course is not None and course.rose:  # the rise inside the early window
                summary += (f"; the reward rose from {course.start_text()} to a median of {course.early:.4g} early, "
                            f"and held it ({course.late:.4g} late)")
            elif course is not None and not course.succeeded:
                # alive is not learning: say so (a newcomer read "no finding" on legaloom-grpo-v3, flat at
                # ~0.05 for 40 steps, as "healthy")
                shown = len(course.series)
                if shown < FEW_STEPS:  # a newcomer read "no learning shows" on 10 steps of a run that was learning
                    summary += (f"; {shown} steps are too few to tell whether it learns (the reward's median went "
                                f"from {course.early:.4g} early to {course.late:.4g} late, within its step-to-step "
                                "noise)")
                elif (other := other_rise(run)) is not None:
                    summary += (f"; the reward did not rise beyond its step-to-step noise (a median of {course.early:.4g} "
                                f"early, {course.late:.4g} late), but {other}")
                elif course.fell_below_start:
                    # a fall no detector explained is not "did not rise" (h402-mlagents-ppo-cozmo-hold-ball: a running
                    # score never reset, -33 early, -39,237 late, the policy's entropy unmoved)
                    summary += (f"; but the reward fell from a median of {course.early:.4g} early to {course.late:.4g} "
                                "late, far beyond its step-to-step noise, and no detector explained it: check what the "
                                "reward sums (a total never reset, a schedule, a changed environment), and log the "
                                "update's KL or gradient norm")
                elif (near := _near_ceiling(run, course)) is not None:
                    summary += f"; the reward did not rise beyond its step-to-step noise, {near}"
                else:
                    summary += (f"; but the reward did not rise beyond its step-to-step noise (a median of "
                                f"{course.early:.4g} early, {course.late:.4g} late): no learning shows in these "
                                f"{shown} steps")
            return Verdict(None, summary, None, (), None, (), not_checked, signal=stage_signal(run), course=course)
        return Verdict(None, summary, None, (), None, (), not_checked, judged=False,
                       unreadable=run.steps == 0 and bool(run.errors))
    ids = {f.id for f in ordered}
    first = ordered[0]
    regime = _regime(run, ids, judged)
    # the lead's own message opens the summary unless the seed card's readings below interpret it
    # DEAD_FROM_START's no-rise sign is read as its message says (no learning shows), not as a dead signal
    dead = next((f for f in ordered if f.id == "DEAD_FROM_START" and not _no_rise(f)), None)
    lead_is_read = first.id in _SEED or first is dead
    parts: list[str] = [] if lead_is_read else [first.message.rstrip(".")]
    if dead is not None:
        parts.append("no usable signal from the first steps: a setup problem, not a collapse")
    adv = next((f for f in ordered if f.id == "ADV_COLLAPSE"), None)
    if all(i in ids for i in _SEED):
        parts.append("advantages, groups and reward spread all collapsed: start from reward variance" if lead_is_read
                     else "the advantages, groups and reward spread collapsed with it")
    elif adv is not None and not ({"DEGENERATE_GROUPS", "REWARD_STD_DEATH"} & ids):
        proxy = adv.evidence.get("proxy")
        if proxy in REWARD_PROXIES:
            parts.append(f"the advantage signal collapsed (read from the rewards through {proxy})")
        else:
            parts.append("only the advantages collapsed while rewards kept their spread: the bug is almost certainly "
                         "in the reward -> advantage plumbing (scaling/normalization)")
    if not parts:
        parts.append(first.message.rstrip("."))
    # (a lead that is the regime's own finding has said it already)
    if (regime is not None and first.id not in ("REWARD_SATURATION", "REWARD_FLOOR")
            and ids & {"DEAD_FROM_START", "DEGENERATE_GROUPS", "REWARD_STD_DEATH", "ADV_COLLAPSE"}):
        parts.append(_REGIME_TEXT[regime])
        cut = next((f for f in ordered if f.id == "TRUNCATION_REWARD" and f.evidence.get("metric") == "truncated_frac"),
                   None)
        if regime == "tied_groups" and cut is not None and isinstance(late := cut.evidence.get("late_mean"), float):
            # the tie's likely cause, when it fired beside it (a newcomer on f1-strategist-grpo-zero-std read three
            # causes and no link between them: every completion cut at its 96-token cap, the groups tied)
            parts.append(f"{late:.0%} of the completions were cut at the length cap late in the run "
                         "(TRUNCATION_REWARD): cut-off completions that score alike tie their group")
    # a non-finite lead whose metrics name one stage puts the loss there (what follows is its consequence)
    stage = _nonfinite_stage(first) or next((f.stage for f in ordered if f.stage != "any"), None)
    signal = stage_signal(run, lead=first)
    parts.extend(_localize(stage, signal, ids, first.id, run))
    parts.extend(_downstream(stage, signal))
    onset = first.onset_step
    summary = "; ".join(parts)
    if onset is not None:
        phase = first.evidence.get("onset_phase")
        if first.began_before_log:
            summary += f" ({since_step(onset, True)})"
        else:
            summary += (f" (since step {onset}" + (f", phase {phase}" if phase is not None else "")
                        + _unlogged_before(run, onset) + ")")
    if run.steps < MIN_STEPS:  # a newcomer took the silence of the trend detectors on 3 steps for a pass
        summary += (f"; only {run.steps} {'step' if run.steps == 1 else 'steps'} logged: the detectors that "
                    f"compare early and late windows need {MIN_STEPS}, so what they would find is not known")
    # the lead's first two, then each other finding's first, then the rest in order: the first few
    # shown cover every finding (f1-strategist: "raise max_completion_length" is TRUNCATION_REWARD's
    # first, behind four of DEAD_FROM_START's)
    tries: list[str] = []
    firsts = [t for f in ordered[1:] for t in f.what_to_try[:1]]
    for t in [*first.what_to_try[:2], *firsts, *(t for f in ordered for t in f.what_to_try)]:
        if t not in tries:
            tries.append(t)
    return Verdict(stage, summary, onset, tuple(ordered), regime, tuple(tries), not_checked, signal=signal,
                   course=course)
