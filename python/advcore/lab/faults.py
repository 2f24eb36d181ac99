"""The lab's faults: one switch each, with its ground-truth stage and the detectors expected to see it.

A run is described step by step by a :class:`Setting` (task pool, group size, reward handling,
estimator constants, optimiser and loss knobs). A :class:`Fault` changes a few fields of it: its
``scenario`` from the first step (the conditions the fault needs, e.g. graded rewards for bf16 to
round), and its ``switch`` from the onset step on (the fault itself). Everything else is the
healthy run, so the healthy path is the reference path and the fault is one visible difference.

Onset semantics (:attr:`Fault.onset`):

* ``switch``: the switch is on from the onset step to the end (a healthy prefix exists);
* ``step``: the switch is on at the onset step only (a single non-finite value);
* ``start``: by nature from the first step (none of the registered faults; kept for user faults).

The expected detectors are what the detector catalog (:mod:`advcore.detectors`) should report
for the regime; whether it does is for the score card to judge, not for this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, Literal

from advcore.errors import AdvcoreError
from advcore.lab.vla import SLICE_FAULT_TARGETS

__all__ = ["FAULTS", "SLICE_FAULTS", "Fault", "Setting", "get_fault"]

GROUP_ESTIMATORS = ("grpo", "dr_grpo", "rloo", "reinforce_pp", "dapo")
ALL_ESTIMATORS = (*GROUP_ESTIMATORS, "ppo")


@dataclass(frozen=True, slots=True)
class Setting:
    """The knobs of one training step (the defaults are the healthy run).

    Attributes
    ----------
    pool : {"standard", "easy", "hard", "bimodal", "intro", "vla"}
        Task pool the prompts are drawn from (:data:`advcore.lab.policy.POOLS`).
    group_size : int
        Completions per prompt, ``G``.
    prompts : int
        Prompts per step (the batch holds ``prompts * group_size`` completions).
    shaping : float
        Weight of the graded term of the reward (0: a 0/1 reward).
    reward_scale : float
        Factor applied to the rewards between scoring and the advantage (1: none). The logged
        rewards are the scored ones.
    reward_dtype : {"float64", "float32", "bfloat16"}
        Precision the rewards are held in from the reward function on (logged as held).
    reward_jitter : float
        Relative jitter of the rewards: each is ``r * (1 + jitter * u)`` with ``u`` uniform in
        [-1, 1] (a float score computed in another order, a reward model's noise); 0 stays 0, so
        all-correct groups become near-tied rather than tied.
    eps : float or None
        The ``eps`` of a std-normalised estimator (None: the estimator's trainer preset).
    grouping : {"prompt", "stride", "singleton"}
        Group ids the advantage is computed over: the prompt (correct), ``i % prompts``
        (interleaved ids over a prompt-major batch), or one group per sample.
    critic_input : {"state", "blind", "leak"}
        What the PPO critic sees: the state, a constant (a broken observation), or the state plus
        the realised return (a target leak: it over-fits and leaves no residual).
    max_grad_norm : float
        Gradient clipping threshold (total L2 norm).
    lr_scale : float
        Multiplier of the estimator's learning rate.
    kl_coef : float
        Weight of the exact KL(pi || pi_ref) penalty in the loss.
    ref_reset : bool
        The reference policy is set to the current policy when this turns on (TRL's
        ``sync_ref_model``); otherwise it is the initial policy.
    entropy_coef : float
        Weight of the entropy bonus in the loss (negative: entropy is minimised).
    inject : {"", "grad", "reward"}
        A non-finite value: an inf in the gradient (the step is then skipped, as a loss scaler
        does) or a NaN reward for the first sample.
    drop_tied : bool
        Dynamic sampling at a matched budget (a mitigation, :mod:`advcore.lab.mitigations`): the
        groups without two distinct finite rewards are dropped before the advantage, and no
        rollout is drawn to replace them (DAPO's keep rule without DAPO's extra rollouts).
    std_floor : float
        Conditional normalisation (a mitigation): a group whose reward std (ddof 1, on the rewards
        the estimator receives) is below this floor is treated as tied, advantage 0 (0: off).
    slice_fault : {"", "saturate_family", "truncate_long", "blind_success_check", "scale_family_reward"}
        A fault that hits one slice of the ``vla`` pool (:mod:`advcore.lab.vla`); "" for none.
    """

    pool: str = "standard"
    group_size: int = 8
    prompts: int = 16
    shaping: float = 0.0
    reward_scale: float = 1.0
    reward_dtype: str = "float64"
    reward_jitter: float = 0.0
    eps: float | None = None
    grouping: str = "prompt"
    critic_input: str = "state"
    max_grad_norm: float = 1.0
    lr_scale: float = 1.0
    kl_coef: float = 0.0
    ref_reset: bool = False
    entropy_coef: float = 0.0
    inject: str = ""
    drop_tied: bool = False
    std_floor: float = 0.0
    slice_fault: str = ""

    def updated(self, changes: Mapping[str, Any]) -> Setting:
        """A copy with ``changes`` applied (names checked, types coerced to the field's)."""
        return replace(self, **_coerce(changes))


_CHOICES = {"pool": ("standard", "easy", "hard", "bimodal", "intro", "vla"),
            "slice_fault": ("", *SLICE_FAULT_TARGETS), "reward_dtype": ("float64", "float32", "bfloat16"),
            "grouping": ("prompt", "stride", "singleton"), "critic_input": ("state", "blind", "leak"),
            "inject": ("", "grad", "reward")}


def _coerce(changes: Mapping[str, Any]) -> dict[str, Any]:
    types = {f.name: f.type for f in fields(Setting)}
    out: dict[str, Any] = {}
    for name, value in changes.items():
        if name not in types:
            raise AdvcoreError(f"`knobs`: unknown setting {name!r} (known: {', '.join(types)})")
        kind = str(types[name])
        try:
            if kind == "int":
                v: Any = int(value)
            elif kind == "bool":
                v = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")
            elif kind.startswith("float"):
                v = None if value is None or str(value).lower() == "none" else float(value)
            else:
                v = str(value)
        except (TypeError, ValueError):
            raise AdvcoreError(f"`knobs`: {name} must be {kind}, got {value!r}") from None
        if name in _CHOICES and v not in _CHOICES[name]:
            raise AdvcoreError(f"`knobs`: {name} must be one of {_CHOICES[name]}, got {v!r}")
        if name in ("group_size", "prompts") and v < 1:
            raise AdvcoreError(f"`knobs`: {name} must be >= 1, got {v!r}")
        out[name] = v
    return out


def _frozen(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault of the lab.

    Attributes
    ----------
    name : str
        Its name on the command line.
    stage : {"R", "A", "T", "U", "any"}
        The stage where the signal is lost (ground truth).
    detectors : tuple of str
        The detector IDs expected to report it.
    onset : {"switch", "step", "start"}
        See the module docstring.
    description : str
        One line.
    estimators : tuple of str
        The estimators it applies to (e.g. a group-id mix-up needs groups; a broken critic needs PPO).
    scenario, switch : mapping of str to value
        :class:`Setting` fields changed from the first step, and from the onset step.
    """

    name: str
    stage: Literal["R", "A", "T", "U", "any"]
    detectors: tuple[str, ...]
    onset: Literal["switch", "step", "start"]
    description: str
    estimators: tuple[str, ...] = ALL_ESTIMATORS
    scenario: Mapping[str, Any] = field(default_factory=dict)
    switch: Mapping[str, Any] = field(default_factory=dict)
    #: the slice a single-slice fault hits (``"family=place"``); None for a fault of the whole batch
    slice: str | None = None

    def setting(self, step: int, onset: int, base: Setting, knobs: Mapping[str, Any] | None = None) -> Setting:
        """The setting of ``step`` (1-based) for a fault switching on at ``onset``; ``knobs``
        override the switch's values (and may add fields to it)."""
        s = base.updated(self.scenario)
        on = step >= onset if self.onset == "switch" else step == onset if self.onset == "step" else True
        return s.updated({**self.switch, **(knobs or {})}) if on else s

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "stage": self.stage, "detectors": list(self.detectors), "onset": self.onset,
                "description": self.description, "estimators": list(self.estimators),
                "scenario": dict(self.scenario), "switch": dict(self.switch), "slice": self.slice}


#: Every fault by name, in the order of issue 5, item 2.
FAULTS: dict[str, Fault] = {f.name: f for f in (
    Fault("reward_scale", "T", ("ADV_COLLAPSE",), "switch",
          "rewards multiplied by 1e-8 between scoring and the advantage (a normaliser that blew up): "
          "the eps of the std division (or no division) flattens the advantages",
          GROUP_ESTIMATORS, switch=_frozen({"reward_scale": 1e-8})),
    Fault("saturation", "R", ("REWARD_SATURATION",), "switch",
          "the prompts become too easy (every action correct on 80 % of them, 7 of 8 on the rest): the reward "
          "pins at its ceiling, groups tie",
          switch=_frozen({"pool": "easy"})),
    Fault("floor", "R", ("REWARD_FLOOR",), "switch",
          "the prompts become too hard (5 correct actions in a row, the last ones never trained): reward ~0",
          switch=_frozen({"pool": "hard"})),
    Fault("small_g", "R", ("DEGENERATE_GROUPS",), "switch",
          "G = 2 on prompts that are either nearly always or nearly never solved: most groups tie",
          ("grpo", "dr_grpo", "rloo", "reinforce_pp"), switch=_frozen({"pool": "bimodal", "group_size": 2,
                                                                       "prompts": 64})),
    Fault("eps_division", "T", ("NOISE_AMPLIFICATION",), "switch",
          "rewards of 1 carry a relative jitter of 1e-6; the std eps drops from 1e-4 (TRL) to 1e-9 (OpenRLHF), so "
          "near-tied groups get advantages of order 1",
          ("grpo", "dapo"), scenario=_frozen({"reward_jitter": 1e-6, "eps": 1e-4}), switch=_frozen({"eps": 1e-9})),
    Fault("bf16_rewards", "T", ("PRECISION_LOSS",), "switch",
          "graded rewards (0/1 plus 0.05 x quality) are held in bfloat16 before the group statistics",
          GROUP_ESTIMATORS, scenario=_frozen({"shaping": 0.05}), switch=_frozen({"reward_dtype": "bfloat16"})),
    Fault("group_mixup", "T", ("GROUPING_ERROR",), "switch",
          "the advantage is computed over ids i % prompts on a prompt-major batch (interleaved vs blocked "
          "layout): every group mixes prompts",
          ("grpo", "dr_grpo", "rloo", "dapo"), switch=_frozen({"grouping": "stride"})),
    Fault("baseline_broken", "A", ("BASELINE_BROKEN",), "switch",
          "the critic's observation becomes a constant (a disconnected input): explained variance ~0",
          ("ppo",), switch=_frozen({"critic_input": "blind"})),
    Fault("tight_grad_clip", "U", ("UPDATE_SUPPRESSED",), "switch",
          "max_grad_norm drops from 1 to 1e-6: the update is clipped to nothing while the signal is intact",
          switch=_frozen({"max_grad_norm": 1e-6})),
    Fault("lr_too_small", "U", ("UPDATE_SUPPRESSED",), "switch",
          "the learning rate is multiplied by 1e-6 (a scheduler or unit bug): the policy cannot move",
          switch=_frozen({"lr_scale": 1e-6})),
    Fault("lr_too_large", "U", ("UPDATE_UNSTABLE",), "switch",
          "the learning rate is multiplied by 300 and gradient clipping is off (a unit bug, a forgotten warm-up): "
          "single updates move the policy by nats and it collapses onto a few actions",
          switch=_frozen({"lr_scale": 300.0, "max_grad_norm": 1e6})),
    Fault("kl_pin", "U", ("UPDATE_SUPPRESSED",), "switch",
          "the reference is synced to the policy and the KL coefficient jumps to 10: the penalty pins the policy",
          switch=_frozen({"kl_coef": 10.0, "ref_reset": True})),
    Fault("entropy_collapse", "U", ("ENTROPY_COLLAPSE",), "switch",
          "the entropy bonus gets the wrong sign (-5): entropy is minimised and the policy turns deterministic",
          switch=_frozen({"entropy_coef": -5.0})),
    Fault("nonfinite", "any", ("NONFINITE",), "step",
          "an inf in the gradient at the onset step (a loss-scale overflow; the step is skipped)",
          switch=_frozen({"inject": "grad"})),
)}


_VLA = _frozen({"pool": "vla"})

#: Faults that hit one slice of the ``vla`` pool (:mod:`advcore.lab.vla`) and leave the others
#: learning: the aggregate stays alive, the slice loses its signal. Their healthy reference is the
#: ``vla`` pool without a fault (``LabConfig(base=Setting(pool="vla"))``).
SLICE_FAULTS: dict[str, Fault] = {f.name: f for f in (
    Fault("family_saturates", "R", ("REWARD_SATURATION", "DEGENERATE_GROUPS", "REWARD_STD_DEATH"), "switch",
          "the place family is served in states where any action completes it (a reset bug): that family's "
          "success pins at 1 and its groups tie while pick and open keep learning",
          ("grpo", "dr_grpo", "rloo", "reinforce_pp"), scenario=_VLA, switch=_frozen({"slice_fault": "saturate_family"}),
          slice=SLICE_FAULT_TARGETS["saturate_family"]),
    Fault("long_horizon_floor", "R", ("REWARD_FLOOR",), "switch",
          "the episode time limit is cut below the long horizon: every long episode times out with reward 0 while "
          "the short ones keep learning",
          ("grpo", "dr_grpo", "rloo", "reinforce_pp"), scenario=_VLA, switch=_frozen({"slice_fault": "truncate_long"}),
          slice=SLICE_FAULT_TARGETS["truncate_long"]),
    Fault("perturbation_breaks_reward", "R", ("REWARD_FLOOR",), "switch",
          "the success check reads the perturbed camera and never confirms success: perturbed episodes score 0 "
          "whatever the policy does, clean ones keep learning",
          ("grpo", "dr_grpo", "rloo", "reinforce_pp"), scenario=_VLA,
          switch=_frozen({"slice_fault": "blind_success_check"}), slice=SLICE_FAULT_TARGETS["blind_success_check"]),
    Fault("family_reward_scale", "T", ("ADV_COLLAPSE",), "switch",
          "the open family's rewards pass a per-task normaliser that blew up (x 1e-8) before the advantage: its "
          "logged rewards keep their spread, its advantages collapse",
          ("grpo", "rloo", "reinforce_pp"), scenario=_VLA, switch=_frozen({"slice_fault": "scale_family_reward"}),
          slice=SLICE_FAULT_TARGETS["scale_family_reward"]),
)}


def get_fault(name: str | Fault | None) -> Fault | None:
    """The fault called ``name`` (of :data:`FAULTS` or :data:`SLICE_FAULTS`); None for ``None``, ``""``
    or ``"none"`` (the healthy run). A :class:`Fault` given itself is returned as is (a schedule built
    outside those tables, such as the hard negatives of :mod:`advcore.lab.negatives`)."""
    if isinstance(name, Fault):
        return name
    if name is None or name in ("", "none", "healthy"):
        return None
    known = {**FAULTS, **SLICE_FAULTS}
    if name not in known:
        raise AdvcoreError(f"`fault`: unknown fault {name!r} (known: none, {', '.join(known)})")
    return known[name]
