"""Test a mitigation as a hypothesis: the fault alone against the fault plus the mitigation.

:func:`compare` trains three arms on each of ``seeds`` seeds (the task pools, held-out tasks and
sampling streams of a seed are shared by its arms, so the arms are paired):

* ``control``: the fault alone;
* ``mitigated``: the fault plus the mitigation (:mod:`advcore.lab.mitigations`) from the onset on;
* ``healthy``: no fault (the reference the signal should be restored to; it is not a contender).

Budgets: every arm takes the same steps with the same epochs. The comparison counts, per seed, the
completions sampled (``n_generated``: DAPO's extra rounds included), the completions trained on
and the gradient steps applied (``epochs`` per step that had samples and a finite gradient), and
it is *matched* only when the mitigated arm sampled no more completions and took no more updates
than the control on every seed. A mitigation that needs extra rollouts (DAPO's resampling) has to
bring them out of the same budget: :data:`advcore.lab.mitigations.MITIGATIONS` does so by dropping
tied groups without replacing them, or by doubling G over half the prompts.

What is compared, over the late window (steps ``onset + settle`` to the end):

* the stage trace (:func:`advcore.trace.trace_step` of each step's samples, grouped by prompt):
  per stage (reward as the reward function scored it in float64, value, return, raw and final
  advantage) its std, tied-group share, Spearman with the reward and mean within-group Spearman;
* the update mechanics of the lab's per-step metrics: KL to the reference, entropy, gradient norm,
  step norm relative to the parameter norm, clip fraction, KL of the update, and the Spearman
  between |advantage| and the per-sample gradient contribution;
* held-out task success (exact; mean of the last ``heldout_window`` steps);
* the fault's *signal* (:data:`SIGNALS`): the one quantity its cause breaks.

Verdict. With paired per-seed differences ``d`` (mitigated - control) and the seed spread
``se = std(d, ddof=1) / sqrt(seeds)``:

* the advantages *grew* when the late advantage std rose by more than 10 % and ``mean(d) > 2 se``;
* the signal is *restored* when the control lost it (the healthy arm is better by more than
  ``2 se`` of its own paired gaps) and the mitigated arm recovers at least half of that gap, with
  ``mean(d) > 2 se`` in the signal's direction;
* held-out success *improved* when ``mean(d) > 2 se`` and ``mean(d) > min_gain`` (0.01: one
  point of success rate);
* the mitigation *counts* only when the budgets are matched, the signal is restored and held-out
  success improved. Growing advantages alone never count.

A fault that hits one slice (:data:`advcore.lab.faults.SLICE_FAULTS`, the ``vla`` pool) is judged
slice by slice: its signal is the advantage std in its slice, its healthy arm is the ``vla`` pool
without a fault, and held-out success is compared per slice (``heldout_success/<slice>``, the last
``heldout_window`` steps, paired differences over the seeds). The *affected* slices are the fault's
own and every slice where the fault cost held-out success (healthy - control beyond ``2 se`` and
``min_gain``). A slice *improved* when mitigated - control is beyond ``2 se`` and ``min_gain``; it
*regressed* when it is below ``-2 se`` and ``-min_gain``. Such a mitigation counts only when the
budgets are matched, the slice's signal is restored, every affected slice improved and no other slice
regressed; the aggregate held-out success is reported but not required (a slice is a part of it).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl

from advcore.errors import AdvcoreError, AdvcoreWarning
from advcore.lab.faults import FAULTS, SLICE_FAULTS, Setting, get_fault
from advcore.lab.mitigations import Mitigation, get_mitigation
from advcore.lab.run import LabConfig, LabResult, run
from advcore.trace import GROUP_ATOL, GROUP_RTOL, trace_step

__all__ = ["ARMS", "MECHANICS", "SIGNALS", "TRACE_STATISTICS", "Arm", "Comparison", "Signal", "SliceHeldout", "Spread",
           "compare"]

ARMS = ("control", "mitigated", "healthy")

#: Per-stage statistics of the trace shown side by side: trace statistic -> label.
TRACE_STATISTICS = {"std": "std", "zero_variance_group_frac": "tied share", "spearman_reward": "Spearman w/ reward",
                    "spearman_reward_within": "Spearman within groups"}

#: Update mechanics (the lab's per-step metrics) -> label.
MECHANICS = {"kl": "KL to reference", "entropy": "entropy (nats/token)", "grad_norm": "grad norm",
             "step_param_ratio": "step norm / param norm", "clip_frac": "clip fraction", "kl_step": "KL of the update",
             "adv_grad_spearman": "Spearman |adv| vs grad contribution"}


@dataclass(frozen=True, slots=True)
class Signal:
    """The quantity a fault's cause breaks, judged over the late window.

    ``source`` is ``"trace"`` (``stage``/``statistic`` of the trace, on the slice ``slice``),
    ``"live"`` (samples per step whose advantage is not ~0: ``n * (1 - near_zero_frac)`` of the
    ``adv`` stage; the learning signal a step's rollouts carry) or ``"steps"`` (the per-step
    metric ``statistic``). ``direction`` is +1 when larger is healthier.
    """

    label: str
    source: Literal["trace", "live", "steps"]
    statistic: str
    direction: int = 1
    stage: str = "adv"
    slice: str = "all"


_LIVE = Signal("live samples per step (|adv| > 1e-8)", "live", "near_zero_frac")
_WITHIN = Signal("Spearman(adv, scored reward) within prompts", "trace", "spearman_reward_within")
_STEP = Signal("step norm / param norm", "steps", "step_param_ratio")

#: Each fault's signal.
SIGNALS: dict[str, Signal] = {
    "reward_scale": Signal("advantage std", "trace", "std"),
    "saturation": _LIVE, "floor": _LIVE, "small_g": _LIVE,
    "eps_division": Signal("advantage std in near-tied groups", "trace", "std", -1, slice="tied=true"),
    "bf16_rewards": _WITHIN, "group_mixup": _WITHIN,
    "baseline_broken": Signal("value explained variance", "steps", "vf_explained_var"),
    "tight_grad_clip": _STEP, "lr_too_small": _STEP,
    "kl_pin": Signal("KL of each update (how far it moves the policy)", "steps", "kl_step"),
    "entropy_collapse": Signal("entropy (nats/token)", "steps", "entropy"),
    "nonfinite": Signal("gradient norm (finite steps)", "steps", "grad_norm"),
}


@dataclass(frozen=True, slots=True)
class Spread:
    """A quantity over the seeds: ``values`` (one per seed, NaN where undefined), their mean and
    their seed-to-seed spread ``std`` (ddof 1; NaN with fewer than two defined values)."""

    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        v = np.asarray(self.values, dtype=np.float64)
        v = v[np.isfinite(v)]
        return float(v.mean()) if v.size else math.nan

    @property
    def std(self) -> float:
        v = np.asarray(self.values, dtype=np.float64)
        v = v[np.isfinite(v)]
        return float(v.std(ddof=1)) if v.size > 1 else math.nan

    @property
    def se(self) -> float:
        """``std / sqrt(n)`` over the defined values."""
        n = int(np.isfinite(np.asarray(self.values, dtype=np.float64)).sum())
        return self.std / math.sqrt(n) if n > 1 else math.nan

    def to_json(self) -> dict[str, Any]:
        return {"mean": _num(self.mean), "std": _num(self.std), "values": [_num(v) for v in self.values]}


def _num(v: float) -> float | None:
    return None if not math.isfinite(v) else float(v)


@dataclass(frozen=True, slots=True)
class SliceHeldout:
    """Held-out success of one slice over the seeds, in each arm, and how the mitigation moved it.

    ``gain`` is mitigated - control and ``cost`` healthy - control, paired per seed; ``affected`` says
    the fault hits the slice (its own, or its held-out success fell beyond the spread); ``improved``
    and ``regressed`` judge ``gain`` against ``2 se`` and ``min_gain``."""

    slice: str
    arms: dict[str, Spread]
    gain: Spread
    cost: Spread
    affected: bool
    improved: bool
    regressed: bool

    def to_json(self) -> dict[str, Any]:
        return {"slice": self.slice, "arms": {k: v.to_json() for k, v in self.arms.items()},
                "gain": self.gain.to_json(), "gain_se": _num(self.gain.se), "cost": self.cost.to_json(),
                "affected": self.affected, "improved": self.improved, "regressed": self.regressed}


def _heldout_slices(results: dict[str, list[LabResult]], target: str, window: int,
                    min_gain: float) -> tuple[SliceHeldout, ...]:
    """Per slice of the held-out tasks, each arm's success (mean of the last ``window`` steps) over the seeds."""
    names = [c.removeprefix("heldout_success/") for c in results["control"][0].steps.columns
             if c.startswith("heldout_success/")]
    out = []
    for name in names:
        col = f"heldout_success/{name}"
        arms = {a: Spread(tuple(float(np.mean(r.steps[col].to_numpy()[-window:])) for r in results[a])) for a in ARMS}
        gain, cost = _diff(arms["mitigated"], arms["control"]), _diff(arms["healthy"], arms["control"])
        affected = name == target or (_beyond(cost) and cost.mean > min_gain)
        improved = _beyond(gain) and gain.mean > min_gain
        regressed = _beyond(_diff(arms["control"], arms["mitigated"])) and -gain.mean > min_gain
        out.append(SliceHeldout(name, arms, gain, cost, affected, improved, regressed))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Arm:
    """One arm over the seeds.

    Attributes
    ----------
    name : {"control", "mitigated", "healthy"}
    trace : dict of (stage, statistic) to Spread
        Late-window mean of each trace statistic of :data:`TRACE_STATISTICS` per stage.
    mechanics : dict of str to Spread
        Late-window mean of each metric of :data:`MECHANICS`.
    heldout : Spread
        Held-out success, mean of the last ``heldout_window`` steps (exact success probability).
    signal : Spread
        The fault's :class:`Signal`, late-window mean.
    adv_std : Spread
        Late-window mean of the per-sample advantage std of the trained batch.
    rollouts, trained, updates : tuple of int
        Per seed: completions sampled, completions trained on, gradient steps applied.
    """

    name: str
    trace: dict[tuple[str, str], Spread]
    mechanics: dict[str, Spread]
    heldout: Spread
    signal: Spread
    adv_std: Spread
    rollouts: tuple[int, ...]
    trained: tuple[int, ...]
    updates: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        stages: dict[str, dict[str, Any]] = {}
        for (stage, stat), v in self.trace.items():
            stages.setdefault(stage, {})[stat] = v.to_json()
        return {"trace": stages, "mechanics": {k: v.to_json() for k, v in self.mechanics.items()},
                "heldout_success": self.heldout.to_json(), "signal": self.signal.to_json(),
                "adv_std": self.adv_std.to_json(), "rollouts": list(self.rollouts), "trained": list(self.trained),
                "updates": list(self.updates)}


@dataclass(frozen=True, slots=True)
class Comparison:
    """The result of :func:`compare` (see the module docstring for every criterion).

    Attributes
    ----------
    fault, mitigation, estimator : str
    on_target : bool
        The mitigation is meant for this fault (:attr:`Mitigation.targets`).
    seeds : tuple of int
    steps, onset, late_from : int
        Run length, fault onset, first step of the late window.
    knobs : dict
        The mitigation's settings as applied.
    signal : Signal
    arms : dict of str to Arm
        ``control``, ``mitigated``, ``healthy``.
    budget_matched : bool
    advantages_grew, signal_restored, heldout_improved, counts : bool
    signal_recovered : float
        Share of the control's signal gap to the healthy arm that the mitigation recovers (NaN
        when the control did not lose the signal).
    heldout_gain, signal_gain, adv_std_gain : Spread
        Paired per-seed differences mitigated - control.
    verdict : str
        One line.
    slices : tuple of SliceHeldout
        Held-out success per slice (a slice fault; empty otherwise).
    """

    fault: str
    mitigation: str
    estimator: str
    on_target: bool
    seeds: tuple[int, ...]
    steps: int
    onset: int
    late_from: int
    knobs: dict[str, Any]
    signal: Signal
    arms: dict[str, Arm]
    budget_matched: bool
    advantages_grew: bool
    signal_lost: bool
    signal_restored: bool
    signal_recovered: float
    heldout_improved: bool
    counts: bool
    heldout_gain: Spread
    signal_gain: Spread
    adv_std_gain: Spread
    verdict: str
    hypothesis: str = ""
    min_gain: float = field(default=0.01)
    slices: tuple[SliceHeldout, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN as null)."""
        return {
            "fault": self.fault, "mitigation": self.mitigation, "hypothesis": self.hypothesis,
            "estimator": self.estimator, "on_target": self.on_target, "seeds": list(self.seeds), "steps": self.steps,
            "onset": self.onset, "late_from": self.late_from, "knobs": self.knobs,
            "signal": {"label": self.signal.label, "source": self.signal.source, "statistic": self.signal.statistic,
                       "stage": self.signal.stage, "slice": self.signal.slice, "direction": self.signal.direction},
            "arms": {k: a.to_json() for k, a in self.arms.items()},
            "budget_matched": self.budget_matched, "advantages_grew": self.advantages_grew,
            "signal_lost": self.signal_lost, "signal_restored": self.signal_restored,
            "signal_recovered": _num(self.signal_recovered), "heldout_improved": self.heldout_improved,
            "counts": self.counts, "heldout_gain": self.heldout_gain.to_json(),
            "signal_gain": self.signal_gain.to_json(), "adv_std_gain": self.adv_std_gain.to_json(),
            "min_gain": self.min_gain, "verdict": self.verdict,
            "heldout_slices": [s.to_json() for s in self.slices],
        }


def _tied_label(samples: pl.DataFrame) -> pl.Series:
    """Per sample: its prompt's scored rewards are tied within the trace's group tolerance."""
    spread = (pl.col("reward_scored").max() - pl.col("reward_scored").min()).over("group")
    scale = pl.col("reward_scored").abs().max().over("group")
    tied = samples.select((spread <= GROUP_ATOL + GROUP_RTOL * scale).alias("tied"))["tied"]
    return pl.Series("tied", ["true" if t else "false" for t in tied.to_list()], dtype=pl.String)


def _trace_late(res: LabResult, late_from: int) -> pl.DataFrame:
    """The trace of every late step's samples (long form), with a ``tied`` slice."""
    frames = []
    late = res.samples.filter(pl.col("step") >= late_from)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AdvcoreWarning)
        for part in late.partition_by("step", maintain_order=True):
            arrays: dict[str, Any] = {"rewards": part["reward_scored"].to_numpy(),
                                      "group_ids": part["group"].to_numpy(),
                                      "adv_raw": part["adv_raw"].to_numpy(), "adv": part["adv"].to_numpy()}
            if "value" in part.columns and part["value"].null_count() < part.height:
                arrays.update(baseline=part["value"].to_numpy(), returns=part["return"].to_numpy())
            labels = {c.removeprefix("slice_"): part[c] for c in part.columns if c.startswith("slice_")}
            frames.append(trace_step(int(part["step"][0]), slices={"tied": _tied_label(part), **labels}, **arrays))
    if not frames:
        return pl.DataFrame(schema={"step": pl.Int64, "stage": pl.String, "slice": pl.String,
                                    "statistic": pl.String, "value": pl.Float64})
    return pl.concat(frames)


def _cell_mean(frame: pl.DataFrame, stage: str, statistic: str, slice_: str = "all") -> float:
    v = frame.filter((pl.col("stage") == stage) & (pl.col("statistic") == statistic) & (pl.col("slice") == slice_))
    x = v["value"].to_numpy()
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else math.nan


def _late_metric(res: LabResult, name: str, late_from: int) -> float:
    if name not in res.steps.columns:
        return math.nan
    x = res.steps.filter(pl.col("step") >= late_from)[name].cast(pl.Float64).fill_null(math.nan).to_numpy()
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else math.nan


def _signal_value(sig: Signal, res: LabResult, frame: pl.DataFrame, late_from: int) -> float:
    if sig.source == "steps":
        return _late_metric(res, sig.statistic, late_from)
    if sig.source == "trace":
        v = _cell_mean(frame, sig.stage, sig.statistic, sig.slice)
        # a slice no late step has (no near-tied group) carries no advantage there
        return 0.0 if math.isnan(v) and sig.slice != "all" and sig.statistic == "std" else v
    # live samples: every late step counts, a step with nothing trained contributes 0
    late = res.steps.filter(pl.col("step") >= late_from)
    cells = frame.filter((pl.col("stage") == "adv") & (pl.col("slice") == "all")
                         & pl.col("statistic").is_in(["n", "near_zero_frac"]))
    if cells.is_empty():
        return 0.0
    per_step = cells.pivot(on="statistic", index="step", values="value")
    live = float((per_step["n"] * (1.0 - per_step["near_zero_frac"])).sum())
    return live / max(late.height, 1)


def _arm(name: str, results: list[LabResult], sig: Signal, late_from: int, heldout_window: int) -> Arm:
    traces = [_trace_late(r, late_from) for r in results]
    stages = [s for s in ("reward", "baseline", "return", "adv_raw", "adv")
              if any(s in t["stage"].unique().to_list() for t in traces)]
    trace = {(st, stat): Spread(tuple(_cell_mean(t, st, stat) for t in traces))
             for st in stages for stat in TRACE_STATISTICS}
    mech = {k: Spread(tuple(_late_metric(r, k, late_from) for r in results)) for k in MECHANICS}
    held = Spread(tuple(float(np.mean(r.steps["heldout_success"].to_numpy()[-heldout_window:])) for r in results))
    signal = Spread(tuple(_signal_value(sig, r, t, late_from) for r, t in zip(results, traces, strict=True)))
    adv_std = Spread(tuple(_cell_mean(t, "adv", "std") for t in traces))
    rollouts, trained, updates = [], [], []
    for r in results:
        s = r.steps
        rollouts.append(int(s["n_generated"].fill_null(0).sum()))
        trained.append(int(s["n_samples"].fill_null(0).sum()))
        took = (s["n_samples"].fill_null(0) > 0) & s["grad_norm"].cast(pl.Float64).fill_null(math.nan).is_finite()
        updates.append(int(took.sum()) * r.config.epochs)
    return Arm(name, trace, mech, held, signal, adv_std, tuple(rollouts), tuple(trained), tuple(updates))


def _diff(a: Spread, b: Spread, scale: int = 1) -> Spread:
    return Spread(tuple(scale * (x - y) for x, y in zip(a.values, b.values, strict=True)))


def _beyond(d: Spread) -> bool:
    """The mean paired difference is positive and above twice its seed spread (se)."""
    m, se = d.mean, d.se
    return math.isfinite(m) and m > 0 and (m > 2 * se if math.isfinite(se) else False)


def compare(fault: str, mitigation: str, *, estimator: str | None = None, seeds: int | tuple[int, ...] = 3,
            steps: int = 80, onset: int = 30, settle: int = 10, heldout_window: int = 10,
            min_gain: float = 0.01) -> Comparison:
    """Run the fault alone and the fault plus ``mitigation`` at matched budgets; judge the mitigation.

    Parameters
    ----------
    fault : str
        A fault of :data:`advcore.lab.FAULTS`.
    mitigation : str
        A mitigation of :data:`advcore.lab.mitigations.MITIGATIONS` (any fault may be given:
        a mitigation applied to a fault it does not target tests a wrong hypothesis).
    estimator : str, optional
        Default ``"grpo"`` when the fault applies to it, else the fault's first estimator.
    seeds : int or tuple of int
        Number of seeds (0, 1, ...) or the seeds themselves; at least 2 (the spread needs them).
    steps, onset : int
        Run length and the fault's onset step (:class:`advcore.lab.LabConfig`).
    settle : int
        Steps after the onset before the late window starts (the mitigation needs time to act).
    heldout_window : int
        Last steps whose held-out success is averaged.
    min_gain : float
        Smallest held-out gain (success rate) that counts as an improvement.

    Returns
    -------
    Comparison

    Raises
    ------
    AdvcoreError
        Unknown fault, mitigation or estimator; a fault that does not apply to the estimator;
        fewer than 2 seeds; ``onset + settle`` beyond ``steps``; a bad window or ``min_gain``.

    Examples
    --------
    >>> c = compare("tight_grad_clip", "looser_clip", seeds=2, steps=40, onset=15)
    >>> c.signal_restored, c.budget_matched
    (True, True)
    """
    f = get_fault(fault)
    if f is None:
        raise AdvcoreError("`fault`: compare needs a fault (the healthy run is its reference arm)")
    m: Mitigation = get_mitigation(mitigation)
    est = estimator if estimator is not None else ("grpo" if "grpo" in f.estimators else f.estimators[0])
    seed_list = tuple(range(seeds)) if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool) \
        else tuple(int(s) for s in seeds)  # type: ignore[union-attr]
    if len(seed_list) < 2 or len(set(seed_list)) != len(seed_list):
        raise AdvcoreError(f"`seeds` must give at least 2 distinct seeds (the seed spread needs them), got {seeds!r}")
    for name, v in (("settle", settle), ("heldout_window", heldout_window)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0 or (name == "heldout_window" and v < 1):
            raise AdvcoreError(f"`{name}` must be a non-negative integer (heldout_window >= 1), got {v!r}")
    if not isinstance(steps, (int, np.integer)) or not isinstance(onset, (int, np.integer)) \
            or onset < 1 or onset + settle > steps:
        raise AdvcoreError(f"`onset` + `settle` ({onset} + {settle}) must be at most `steps` ({steps}), onset >= 1")
    if not (isinstance(min_gain, (int, float)) and math.isfinite(min_gain) and min_gain >= 0):
        raise AdvcoreError(f"`min_gain` must be a non-negative number, got {min_gain!r}")
    knobs = m.knobs(f.setting(onset, onset, Setting()))
    late_from = onset + settle
    sig = SIGNALS[f.name] if f.slice is None else \
        Signal(f"advantage std in slice {f.slice}", "trace", "std", slice=f.slice)
    healthy_base = Setting() if f.slice is None else Setting().updated(f.scenario)
    results: dict[str, list[LabResult]] = {a: [] for a in ARMS}
    for seed in seed_list:
        base = {"estimator": est, "seed": seed, "steps": steps, "onset": onset}
        results["control"].append(run(LabConfig(fault=f.name, **base)))  # type: ignore[arg-type]
        results["mitigated"].append(run(LabConfig(fault=f.name, knobs=knobs, **base)))  # type: ignore[arg-type]
        results["healthy"].append(run(LabConfig(base=healthy_base, **base)))  # type: ignore[arg-type]
    arms = {a: _arm(a, results[a], sig, late_from, heldout_window) for a in ARMS}
    ctl, mit, hea = arms["control"], arms["mitigated"], arms["healthy"]
    matched = all(r <= c for r, c in zip(mit.rollouts, ctl.rollouts, strict=True)) and \
        all(u <= c for u, c in zip(mit.updates, ctl.updates, strict=True))
    adv_gain = _diff(mit.adv_std, ctl.adv_std)
    grew = _beyond(adv_gain) and ctl.adv_std.mean * 1.1 < mit.adv_std.mean if ctl.adv_std.mean > 0 \
        else _beyond(adv_gain)
    d = sig.direction
    sig_gain = _diff(mit.signal, ctl.signal, d)
    gap = _diff(hea.signal, ctl.signal, d)
    lost = _beyond(gap)
    recovered = sig_gain.mean / gap.mean if lost else math.nan
    restored = lost and _beyond(sig_gain) and recovered >= 0.5
    held_gain = _diff(mit.heldout, ctl.heldout)
    improved = _beyond(held_gain) and held_gain.mean > min_gain
    counts = matched and restored and improved
    cost = _diff(hea.heldout, ctl.heldout)
    slices: tuple[SliceHeldout, ...] = ()
    if f.slice is not None:
        slices = _heldout_slices(results, f.slice, heldout_window, min_gain)
        affected = [x for x in slices if x.affected]
        counts = matched and restored and all(x.improved for x in affected) and not any(x.regressed for x in slices)
        verdict = _slice_verdict(m, f.name, f.slice, matched, lost, restored, recovered, counts, slices)
    else:
        verdict = _verdict(m, f.name, matched, grew, lost, restored, recovered, improved, counts, held_gain, min_gain,
                           cost)
    return Comparison(f.name, m.name, est, f.name in m.targets, seed_list, int(steps), int(onset), late_from,
                      knobs, sig, arms, matched, grew, lost, restored, recovered, improved, counts, held_gain,
                      sig_gain, adv_gain, verdict, m.hypothesis, float(min_gain), slices)


def _slice_verdict(m: Mitigation, fault: str, target: str, matched: bool, lost: bool, restored: bool,
                   recovered: float, counts: bool, slices: tuple[SliceHeldout, ...]) -> str:
    def gain(x: SliceHeldout) -> str:
        se = f" ± {2 * x.gain.se:.3f}" if math.isfinite(x.gain.se) else ""
        return f"{x.slice} {x.gain.mean:+.3f}{se}"

    affected = [x for x in slices if x.affected]
    improved = [x for x in affected if x.improved]
    regressed = [x for x in slices if x.regressed]
    held = "held-out per slice (mitigated - control, ± 2 se): " + ", ".join(gain(x) for x in affected)
    if not matched:
        return f"does not count: the budgets are not matched (more rollouts or updates than the control); {held}"
    if counts:
        return (f"COUNTS: {m.name} restores the signal in slice {target} ({recovered:.0%} of the gap) and improves "
                f"held-out success in every affected slice beyond the seed spread without regressing another; {held}: "
                f"the hypothesis '{m.hypothesis}' is supported for {fault}")
    why = []
    if not lost:
        why.append(f"the control did not lose the signal in slice {target}")
    elif not restored:
        why.append(f"the signal in slice {target} is not restored"
                   + (f" ({recovered:.0%} of the gap)" if math.isfinite(recovered) else ""))
    missed = [x.slice for x in affected if not x.improved]
    if missed:
        why.append(f"held-out does not improve beyond the seed spread in {', '.join(missed)}"
                   + (f" (improves in {', '.join(x.slice for x in improved)})" if improved else ""))
    if regressed:
        why.append(f"it regresses {', '.join(gain(x) for x in regressed)}")
    return f"does not count: {'; '.join(why) or 'no affected slice'}; {held}"


def _verdict(m: Mitigation, fault: str, matched: bool, grew: bool, lost: bool, restored: bool, recovered: float,
             improved: bool, counts: bool, held: Spread, min_gain: float, cost: Spread) -> str:
    # a newcomer read "+0.000 (seed spread 0.000)" as a broken comparison: it is a policy that did not move
    same = all(abs(v) < UNCHANGED for v in held.values)
    gain = (f"held-out success within {UNCHANGED:g} of the control's at every seed" if same
            else f"held-out success {held.mean:+.3f} (seed spread {held.std:.3f})")
    if not matched:
        return f"does not count: the budgets are not matched (more rollouts or updates than the control); {gain}"
    if counts:
        return (f"COUNTS: {m.name} restores the signal ({recovered:.0%} of the gap) and held-out improves, {gain}: "
                f"the hypothesis '{m.hypothesis}' is supported for {fault}")
    why = []
    if not lost:
        why.append("the control did not lose this signal")
    elif not restored:
        why.append("the signal is not restored" + (f" ({recovered:.0%} of the gap)" if math.isfinite(recovered) else ""))
    if not improved:
        why.append(f"held-out does not improve beyond the seed spread and {min_gain:g}"
                   + ("" if _beyond(cost) else f" (the fault itself costs no held-out success here: healthy - control "
                                               f"{cost.mean:+.3f})"))
    lead = "advantages grow, but " if grew else ""
    return f"does not count: {lead}{'; '.join(why)}; {gain}"


#: A held-out difference under this at every seed is said as such, not as ``+0.000 (seed spread 0.000)``.
UNCHANGED = 5e-4


#: What :func:`render` shows with ``compact=True``.
_COMPACT_TRACE = {("reward", "std"), ("adv", "std"), ("adv", "zero_variance_group_frac"), ("adv", "spearman_reward")}
_COMPACT_MECHANICS = ("entropy", "grad_norm", "step_param_ratio", "kl_step")


def _fault(name: str) -> Any:
    return FAULTS[name] if name in FAULTS else SLICE_FAULTS[name]


def render(c: Comparison, console: Any = None, *, compact: bool = False) -> None:
    """Print ``c`` side by side with rich (to ``console``, default a new one); ``compact`` keeps
    a few rows of the trace and of the update mechanics."""
    from rich.console import Console
    from rich.table import Table

    con = console if console is not None else Console()
    target = "targets this fault" if c.on_target else "does NOT target this fault (a wrong-hypothesis test)"
    con.print(f"[bold]advcore lab compare[/bold]: fault [bold]{c.fault}[/bold] ({_fault(c.fault).stage}) vs "
              f"fault + [bold]{c.mitigation}[/bold], estimator {c.estimator}, seeds {list(c.seeds)}, "
              f"{c.steps} steps, onset {c.onset}, late window from step {c.late_from}")
    con.print(f"hypothesis: {c.hypothesis}; the mitigation {target}; knobs {c.knobs}")

    def cell(v: Spread, fmt: str = "{:.3g}") -> str:
        if not math.isfinite(v.mean):
            return "-"
        spread = f" ± {v.std:.1g}" if math.isfinite(v.std) else ""
        return fmt.format(v.mean) + spread

    table = Table(title="stage trace (late window; mean ± seed-to-seed std; reward as scored, grouped by prompt)")
    table.add_column("stage: statistic")
    for a in ARMS:
        table.add_column(a, justify="right")
    stages = list(dict.fromkeys(st for st, _ in c.arms["control"].trace))
    for st in stages:
        for stat, label in TRACE_STATISTICS.items():
            if compact and (st, stat) not in _COMPACT_TRACE:
                continue
            table.add_row(f"{st}: {label}", *(cell(c.arms[a].trace.get((st, stat), Spread((math.nan,))))
                                              for a in ARMS))
    con.print(table)
    mech = Table(title="update mechanics (late window)")
    mech.add_column("metric")
    for a in ARMS:
        mech.add_column(a, justify="right")
    for k, label in MECHANICS.items():
        if compact and k not in _COMPACT_MECHANICS:
            continue
        mech.add_row(label, *(cell(c.arms[a].mechanics[k]) for a in ARMS))
    mech.add_row("rollouts / updates (per seed)",
                 *(f"{c.arms[a].rollouts[0]} / {c.arms[a].updates[0]}" if len(set(c.arms[a].rollouts)) == 1
                   else f"{list(c.arms[a].rollouts)} / {list(c.arms[a].updates)}" for a in ARMS))
    mech.add_row(f"signal: {c.signal.label}", *(cell(c.arms[a].signal) for a in ARMS))
    mech.add_row("held-out success (last steps)", *(cell(c.arms[a].heldout, "{:.3f}") for a in ARMS))
    con.print(mech)
    if c.slices:
        per = Table(title=f"held-out success per slice (last steps, mean over seeds); fault slice "
                          f"{_fault(c.fault).slice}")
        per.add_column("slice")
        for a in ARMS:
            per.add_column(a, justify="right")
        per.add_column("gain ± 2 se", justify="right")
        per.add_column("", justify="left")
        for x in c.slices:
            se = f" ± {2 * x.gain.se:.3f}" if math.isfinite(x.gain.se) else ""
            mark = "improved" if x.improved else "REGRESSED" if x.regressed else "-"
            per.add_row(x.slice + (" *" if x.affected else ""), *(f"{x.arms[a].mean:.3f}" for a in ARMS),
                        f"{x.gain.mean:+.3f}{se}", mark)
        con.print(per)
        con.print("* affected: the fault's slice, or one where the fault cost held-out success beyond the spread; "
                  "gain = mitigated - control, paired by seed")
    yes = {True: "[green]yes[/green]", False: "[red]no[/red]"}
    con.print(f"budgets matched {yes[c.budget_matched]} | advantages grew {yes[c.advantages_grew]} | "
              f"signal restored {yes[c.signal_restored]} | held-out improved {yes[c.heldout_improved]}")
    con.print(f"[bold]verdict[/bold]: {c.verdict}")
