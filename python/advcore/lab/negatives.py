"""Hard negatives: healthy lab runs built to look alarming (issue 18, item 1).

Each kind is a run that learns (its held-out success rises, or holds at a level it reached by
learning) while one of its curves looks like a fault's: about half of the groups tied, a logged loss
of exactly 0, a KL spike, a falling entropy, a plateau, a learning rate 20 times smaller, a reward
that drops when the curriculum moves on. A detector that fires on one of them raises a false alarm
that a user would see on a run that needs no fix.

A kind is built from the lab's own knobs (:class:`advcore.lab.faults.Setting`): a ``scenario`` from
the first step and a ``switch`` from step ``at`` on (or at step ``at`` only, ``once``), run through
:func:`advcore.lab.run` as a schedule (a :class:`advcore.lab.faults.Fault` that is not in
:data:`advcore.lab.FAULTS`). The ground truth of the result is the healthy run's (no fault, no stage,
no onset, no expected detector) plus the kind's name, so the score card counts any warning or
error on it as a false alarm.

What each kind claims (its tied share is about half, its reward rises, its KL spike recovers) is
checked in ``tests/lab/test_negatives.py`` on the recorded data itself, not through the detectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import polars as pl

from advcore.errors import AdvcoreError
from advcore.lab.faults import ALL_ESTIMATORS, Fault
from advcore.lab.run import LabConfig, LabResult, run, truth as run_truth

__all__ = ["NEGATIVES", "Negative", "run_negative"]

#: The group estimators whose logged tied-group share is the share of the groups trained on (DAPO
#: drops its tied groups before the metrics, so its share says nothing about ties).
TIED_ESTIMATORS = ("grpo", "dr_grpo", "rloo", "reinforce_pp")
#: The estimators whose advantages sum to 0 over every group or over the batch, so that the
#: sequence-mean surrogate at ratio 1 (the loss a TRL-style trainer logs) is 0.
CENTRED_ESTIMATORS = ("grpo", "dr_grpo", "rloo", "reinforce_pp", "dapo")


def _frozen(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True, slots=True)
class Negative:
    """One kind of hard negative.

    Attributes
    ----------
    name : str
    looks_like : str
        The fault or detector it resembles.
    description : str
        One line: what the run does and why it is healthy.
    estimators : tuple of str
        The estimators it is run with.
    scenario, switch : mapping of str to value
        :class:`advcore.lab.faults.Setting` fields changed from the first step, and from step ``at``.
    at : int
        The step the switch turns on.
    once : bool
        The switch is on at step ``at`` only (a single event) instead of from ``at`` to the end.
    steps : int
        Run length.
    log_loss : bool
        Add the ``loss`` a TRL-style trainer logs (see :func:`logged_loss`) to the per-step metrics.
    """

    name: str
    looks_like: str
    description: str
    estimators: tuple[str, ...] = ALL_ESTIMATORS
    scenario: Mapping[str, Any] = field(default_factory=dict)
    switch: Mapping[str, Any] = field(default_factory=dict)
    at: int = 30
    once: bool = False
    steps: int = 80
    log_loss: bool = False

    def schedule(self) -> Fault:
        """The kind as a lab schedule (a :class:`Fault` outside :data:`advcore.lab.FAULTS`; its stage
        and detectors are placeholders that :func:`run_negative` replaces by the healthy truth)."""
        return Fault(f"negative:{self.name}", "any", (), "step" if self.once else "switch", self.description,
                     self.estimators, _frozen(self.scenario), _frozen(self.switch))


#: Every hard negative by name.
NEGATIVES: dict[str, Negative] = {n.name: n for n in (
    Negative("half_tied", "DEGENERATE_GROUPS",
             "0/1 rewards, G = 4 at moderate success: about half of the groups are all-correct or all-wrong at "
             "every step while the policy learns (the normal regime SPEC section 6 names)",
             TIED_ESTIMATORS, scenario=_frozen({"group_size": 4, "prompts": 32})),
    Negative("pairs_tied", "DEGENERATE_GROUPS / small_g",
             "G = 2 on the standard pool (the small_g fault's group size, not its bimodal prompts): half to three "
             "quarters of the pairs tie, more as the success rate rises, and the rest train",
             TIED_ESTIMATORS, scenario=_frozen({"group_size": 2, "prompts": 64})),
    Negative("zero_loss", "UPDATE_SUPPRESSED",
             "the logged loss is exactly 0 at every step (group-centred advantages average to 0 at ratio 1, as in "
             "GRPO) while the gradient norm is far from 0 and the policy learns",
             CENTRED_ESTIMATORS, log_loss=True),
    Negative("kl_spike_recovers", "UPDATE_UNSTABLE",
             "one step at 40x the learning rate without clipping (a bad batch) doubles the KL to the reference or "
             "more; the KL penalty (0.3) brings it back down within 10 to 15 steps and held-out success keeps "
             "rising (not DAPO: its step on the kept groups moves the policy less, and its KL keeps rising with its "
             "learning, so there is no spike to recover from)",
             ("grpo", "dr_grpo", "rloo", "reinforce_pp", "ppo"), scenario=_frozen({"kl_coef": 0.3}), switch=_frozen({"lr_scale": 40.0, "max_grad_norm": 1e6}),
             once=True),
    Negative("entropy_sharpens", "ENTROPY_COLLAPSE",
             "twice the learning rate over 120 steps: the entropy falls steadily as the policy sharpens on what "
             "it learns, to well under its start but not to a small fraction of it",
             ALL_ESTIMATORS, scenario=_frozen({"lr_scale": 2.0}), steps=120),
    Negative("high_plateau", "REWARD_SATURATION",
             "three times the learning rate: the reward climbs fast, then holds at a high level below its ceiling "
             "(the hard prompts still fail) with groups untied",
             ALL_ESTIMATORS, scenario=_frozen({"lr_scale": 3.0}), steps=100),
    Negative("slow_lr", "lr_too_small / UPDATE_SUPPRESSED",
             "a learning rate 4 times smaller than the tuned one: small updates, a slow but steady rise",
             ALL_ESTIMATORS, scenario=_frozen({"lr_scale": 0.25})),
    Negative("lr_warmup", "DEAD_FROM_START / UPDATE_SUPPRESSED",
             "a warm-up: the learning rate is 1 % of its value for the first 10 steps, then the run learns",
             ALL_ESTIMATORS, scenario=_frozen({"lr_scale": 0.01}), switch=_frozen({"lr_scale": 1.0}), at=11),
    Negative("curriculum_reset", "collapse after success / REWARD_FLOOR",
             "a curriculum: 20 steps of a first stage easier than the standard prompts (the lab's `intro` "
             "pool: success about 0.5 rising to about 0.8, tasks of varied difficulty), then the standard ones: "
             "the reward drops by about 0.3 when the stage changes, then rises again, and held-out success rises "
             "throughout (a first stage of prompts solved from the start would be the saturation fault itself)",
             ALL_ESTIMATORS, scenario=_frozen({"pool": "intro"}), switch=_frozen({"pool": "standard"}), at=21),
    Negative("clip_always_on", "tight_grad_clip / UPDATE_SUPPRESSED",
             "max_grad_norm 0.1: the gradient is clipped on every step (its norm is several times the threshold) "
             "but the clipped update still moves the policy and it learns (the estimators whose gradient norm is "
             "above 0.1 throughout; Dr. GRPO's and RLOO's are smaller: their loss normalisers differ)",
             ("grpo", "reinforce_pp", "dapo", "ppo"), scenario=_frozen({"max_grad_norm": 0.1})),
    Negative("kl_penalty_holds", "kl_pin / UPDATE_SUPPRESSED",
             "a KL penalty of 0.3 to the initial policy: the KL stays small and levels off while the reward rises",
             ALL_ESTIMATORS, scenario=_frozen({"kl_coef": 0.3})),
    Negative("bf16_binary", "PRECISION_LOSS",
             "0/1 rewards held in bfloat16: both values are exact in bfloat16, so nothing is rounded",
             CENTRED_ESTIMATORS, scenario=_frozen({"reward_dtype": "bfloat16"})),
    Negative("tiny_eps_exact", "NOISE_AMPLIFICATION",
             "the std eps of the normalisation at 1e-9 (OpenRLHF) on exact 0/1 rewards: tied groups have a std of "
             "exactly 0, so their advantages are exactly 0, never amplified noise",
             ("grpo", "dapo"), scenario=_frozen({"eps": 1e-9})),
)}


def logged_loss(samples: pl.DataFrame, steps: int) -> pl.Series:
    """The policy loss a TRL-style trainer logs at each step: the clipped surrogate of the first epoch
    (ratio 1) with the sequence-mean aggregation, ``-mean_n adv_n``, rounded to 4 decimals as
    ``transformers.Trainer`` rounds the logged ``loss``. With group-centred (or batch-whitened)
    advantages it is 0 up to rounding on every step, whatever the gradient."""
    per = samples.group_by("step").agg((-pl.col("adv").fill_nan(None).mean()).alias("loss"))
    by_step = dict(zip(per["step"].to_list(), per["loss"].to_list(), strict=True))
    values = [by_step.get(s) for s in range(1, steps + 1)]
    return pl.Series("loss", [None if v is None else round(float(v), 4) + 0.0 for v in values], dtype=pl.Float64)


def run_negative(name: str, estimator: str = "grpo", seed: int = 0, *, steps: int | None = None) -> LabResult:
    """Run the hard negative ``name`` (one of :data:`NEGATIVES`) with ``estimator`` and ``seed``.

    Returns
    -------
    LabResult
        Its ``truth`` is the healthy run's (``fault``, ``stage`` and ``onset_step`` None, no expected
        detector) with ``negative`` (the kind's name) and ``looks_like`` added.

    Raises
    ------
    AdvcoreError
        An unknown kind, or an estimator it is not run with.
    """
    if name not in NEGATIVES:
        raise AdvcoreError(f"`name`: unknown hard negative {name!r} (known: {', '.join(NEGATIVES)})")
    neg = NEGATIVES[name]
    if estimator not in neg.estimators:
        raise AdvcoreError(f"`estimator`: hard negative {name!r} runs with {', '.join(neg.estimators)}, "
                           f"not {estimator!r}")
    n = neg.steps if steps is None else steps
    cfg = LabConfig(estimator=estimator, fault=neg.schedule(), seed=seed, steps=n, onset=min(neg.at, n))
    res = run(cfg)
    frame = res.steps
    if neg.log_loss:
        frame = frame.with_columns(logged_loss(res.samples, n))
    truth: dict[str, Any] = {**run_truth(cfg, None), "description": neg.description, "negative": name,
                             "looks_like": neg.looks_like,
                             "schedule": {"scenario": dict(neg.scenario), "switch": dict(neg.switch), "at": neg.at,
                                          "once": neg.once}}
    return replace(res, steps=frame, truth=truth)
