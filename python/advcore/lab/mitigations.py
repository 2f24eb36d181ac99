"""The lab's mitigations: each one a hypothesis about the cause of a collapse (seed 002,
"Interventions should identify the cause").

A :class:`Mitigation` names the cause it assumes, the faults (:data:`advcore.lab.faults.FAULTS`)
whose cause that is, and the :class:`advcore.lab.faults.Setting` fields it changes from the
fault's onset step on (computed from the fault's switched-on setting, so that "double G" doubles
the G the fault runs with). It is applied as the run's ``knobs``: on top of the fault's switch, on
the same steps. Every mitigation keeps the rollout budget (completions sampled per step) and the
update budget (steps x epochs) of the run it is applied to; :func:`advcore.lab.compare.compare`
checks both on the recorded counts.

How the budgets stay matched:

* ``dynamic_sampling`` is DAPO's keep rule (drop the groups whose rewards all tie) *without* DAPO's
  extra rounds: the dropped groups are not replaced, so the step samples exactly the control's
  completions (DAPO's resampling draws up to ``dapo_max_rounds`` times as many);
* ``larger_g`` doubles G and halves the prompts: the same completions per step;
* the others change how the same samples are scored, normalised, grouped or applied.

Applied to a fault it does not target, a mitigation still runs (that is how a wrong hypothesis is
tested); :attr:`Mitigation.targets` only says which faults it is meant for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advcore.errors import AdvcoreError
from advcore.lab.faults import Setting

__all__ = ["MITIGATIONS", "Mitigation", "get_mitigation"]


@dataclass(frozen=True, slots=True)
class Mitigation:
    """One mitigation.

    Attributes
    ----------
    name : str
        Its name on the command line.
    hypothesis : str
        The cause it assumes, in one line.
    targets : tuple of str
        The faults whose cause that is.
    action : str
        What it changes, in one line.
    change : callable
        ``change(setting) -> dict``: the :class:`Setting` fields to set, given the fault's
        switched-on setting.
    """

    name: str
    hypothesis: str
    targets: tuple[str, ...]
    action: str
    change: Callable[[Setting], dict[str, Any]]

    def knobs(self, switched: Setting) -> dict[str, Any]:
        """The run knobs of this mitigation for a fault whose switched-on setting is ``switched``."""
        return self.change(switched)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "hypothesis": self.hypothesis, "targets": list(self.targets),
                "action": self.action}


def _larger_g(s: Setting) -> dict[str, Any]:
    if s.prompts < 2:
        raise AdvcoreError("`mitigation`: larger_g halves the prompts per step, which needs at least 2")
    return {"group_size": 2 * s.group_size, "prompts": s.prompts // 2}


#: Every mitigation by name.
MITIGATIONS: dict[str, Mitigation] = {m.name: m for m in (
    Mitigation("dynamic_sampling", "tied groups dilute the batch: their zero advantages only shrink the update",
               ("saturation", "floor", "small_g"),
               "drop the groups whose rewards all tie (DAPO's keep rule), no extra rollouts",
               lambda s: {"drop_tied": True}),
    Mitigation("larger_g", "G is too small to see both outcomes of a prompt, so groups tie",
               ("small_g", "saturation", "floor"),
               "double G and halve the prompts per step (same completions per step)", _larger_g),
    Mitigation("std_floor", "the std division amplifies noise in near-tied groups",
               ("eps_division",),
               "conditional normalisation: a group whose reward std is below 1e-3 counts as tied (advantage 0)",
               lambda s: {"std_floor": 1e-3}),
    Mitigation("float32_rewards", "the rewards lose precision before the group statistics",
               ("bf16_rewards",), "hold the rewards in float32", lambda s: {"reward_dtype": "float32"}),
    Mitigation("fixed_grouping", "the advantage is computed over the wrong group ids",
               ("group_mixup",), "group by prompt id", lambda s: {"grouping": "prompt"}),
    Mitigation("reward_unscaled", "a normaliser rescales the rewards before the advantage",
               ("reward_scale",), "feed the advantage the rewards as scored (scale 1)",
               lambda s: {"reward_scale": 1.0}),
    Mitigation("retuned_baseline", "the value baseline does not see the state",
               ("baseline_broken",), "reconnect the critic's observation and refit it",
               lambda s: {"critic_input": "state"}),
    Mitigation("looser_clip", "gradient clipping is so tight that the update cannot move the policy",
               ("tight_grad_clip",), "max_grad_norm back to 1", lambda s: {"max_grad_norm": 1.0}),
    Mitigation("retuned_lr", "the learning rate is too small to move the policy",
               ("lr_too_small",), "learning rate multiplier back to 1", lambda s: {"lr_scale": 1.0}),
    Mitigation("smaller_steps", "the updates are too large for the policy to stay where it learned",
               ("lr_too_large",), "learning rate multiplier back to 1 and gradient clipping back to 1",
               lambda s: {"lr_scale": 1.0, "max_grad_norm": 1.0}),
    Mitigation("smaller_kl", "the KL penalty pins the policy to its reference",
               ("kl_pin",), "KL coefficient 10 -> 0.01", lambda s: {"kl_coef": 0.01}),
    Mitigation("entropy_bonus", "the entropy term drives the policy deterministic",
               ("entropy_collapse",), "an entropy bonus of +0.01 instead of the -5", lambda s: {"entropy_coef": 0.01}),
    # the single-slice faults of the vla pool (advcore.lab.faults.SLICE_FAULTS): each undoes one cause in one slice
    Mitigation("fix_reset", "the place family is reset into states where any action succeeds",
               ("family_saturates",), "reset the place tasks into their real initial states",
               lambda s: {"slice_fault": ""}),
    Mitigation("restore_time_limit", "the episode time limit is shorter than the long tasks",
               ("long_horizon_floor",), "give long episodes their full horizon", lambda s: {"slice_fault": ""}),
    Mitigation("fix_success_check", "the success check cannot see through the perturbed camera",
               ("perturbation_breaks_reward",), "check success from the simulator state, not the camera",
               lambda s: {"slice_fault": ""}),
    Mitigation("per_task_unscaled", "a per-task reward normaliser flattens one family's rewards",
               ("family_reward_scale",), "feed the open family's rewards to the advantage as scored",
               lambda s: {"slice_fault": ""}),
)}


def get_mitigation(name: str) -> Mitigation:
    """The mitigation called ``name``; :class:`AdvcoreError` naming ``mitigation`` otherwise."""
    if name not in MITIGATIONS:
        raise AdvcoreError(f"`mitigation`: unknown mitigation {name!r} (known: {', '.join(MITIGATIONS)})")
    return MITIGATIONS[name]
