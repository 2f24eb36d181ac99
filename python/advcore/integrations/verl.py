"""advcore inside verl: one call per step turns verl's batch into ``advcore/...`` metrics.

Use, in ``RayPPOTrainer.fit`` after the advantage is computed (``compute_advantage``)::

    from advcore.integrations.verl import batch_metrics
    monitor = advcore.Monitor(stop_on="error")          # once, before the loop
    metrics.update(batch_metrics(batch, monitor=monitor, step=self.global_steps))

The batch is verl's ``DataProto`` (tensors in ``batch.batch``, the ``uid`` strings in
``batch.non_tensor_batch``) or a plain dict with the same keys. Shapes follow verl 0.9.1
(``verl/trainer/ppo/core_algos.py``, ``verl/trainer/ppo/ray_trainer.py``): ``(bs, T)`` tensors over
the response tokens, ``uid`` of shape ``(bs,)``. What is read:

* ``token_level_rewards`` (else ``token_level_scores``), ``(bs, T)``: the sequence reward is its
  sum over the response tokens, as ``compute_grpo_outcome_advantage`` scores a sequence (with a
  KL penalty in the reward, ``token_level_rewards`` is what the advantage saw).
* ``response_mask`` ``(bs, T)``, or ``attention_mask[:, -T:]`` as verl's ``compute_response_mask``
  derives it (``T`` from ``responses``).
* ``advantages`` ``(bs, T)``, optional: the sequence advantage is its mean over the response
  tokens (the broadcast value of the outcome estimators GRPO, RLOO, REINFORCE++-baseline);
  the token-level values also go to the trace's token stage (``adv_token``).
* ``values`` and ``returns`` ``(bs, T)``, optional (PPO/GAE): the value and the return at the
  first response token become the baseline and return stages.
* ``uid`` ``(bs,)``: the prompt of each sample (strings; grouped by equal value, in any order).

The metrics are those of :func:`advcore.trace.step_row` with the ``advcore/`` prefix, including
the within-group statistics verl itself never logs: ``advcore/zero_variance_group_frac`` (tied
groups), ``advcore/reward_std_within``, ``advcore/spearman_adv_reward_within``,
``advcore/singleton_group_frac``, ``advcore/adv_recompute_err`` (the advantages against verl's
estimators recomputed in float64, in units of the float32 tolerance). With a ``monitor`` the
step is also recorded and the detectors run (findings in the log, ``advcore/findings``).

Importing this module imports neither verl nor torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from advcore.errors import AdvcoreError
from advcore.monitor import PREFIX, Monitor, flat_metrics, to_host
from advcore.trace import step_row

__all__ = ["batch_arrays", "batch_metrics"]

_TENSORS = ("token_level_rewards", "token_level_scores", "response_mask", "attention_mask", "responses",
            "advantages", "values", "returns")


def _fields(batch: Any) -> dict[str, Any]:
    """The tensors and the ``uid`` of a ``DataProto`` or a plain mapping."""
    if isinstance(batch, Mapping):
        return dict(batch)
    tensors, extra = getattr(batch, "batch", None), getattr(batch, "non_tensor_batch", None)
    if tensors is None and extra is None:
        raise AdvcoreError(f"`batch` must be a verl DataProto or a dict of tensors, got {type(batch).__name__}")
    out: dict[str, Any] = {}
    for key in _TENSORS:
        if tensors is not None and key in tensors.keys():  # noqa: SIM118 (a TensorDict, not a dict)
            out[key] = tensors[key]
    if extra is not None and "uid" in extra:
        out["uid"] = extra["uid"]
    return out


def _matrix(x: Any, name: str, shape: tuple[int, ...] | None) -> npt.NDArray[np.float64]:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2:
        raise AdvcoreError(f"`{name}` must have shape (batch, response_length), got {arr.shape}")
    if shape is not None and arr.shape != shape:
        raise AdvcoreError(f"`{name}` has shape {arr.shape} but the rewards have shape {shape}")
    return arr


def batch_arrays(batch: Any) -> dict[str, Any]:
    """The per-sample arrays of a verl batch, as keywords of :func:`advcore.trace.trace_step`.

    Returns ``rewards`` (float64, ``(bs,)``), ``group_ids`` (the ``uid`` values, when present),
    ``adv``, ``baseline``, ``returns`` (when present), ``token_adv`` and ``response_mask``
    (``(bs, T)``, with the advantages). See the module docstring for the reductions.

    Raises
    ------
    AdvcoreError
        No ``token_level_rewards``/``token_level_scores``, no response mask (nor
        ``attention_mask`` with ``responses``), a tensor of another shape, a ``uid`` of another length.
    """
    f = to_host(_fields(batch))
    key = "token_level_rewards" if f.get("token_level_rewards") is not None else "token_level_scores"
    if f.get(key) is None:
        raise AdvcoreError("`batch` has neither `token_level_rewards` nor `token_level_scores`")
    scores = _matrix(f[key], key, None)
    if f.get("response_mask") is not None:
        mask = _matrix(f["response_mask"], "response_mask", scores.shape) > 0
    elif f.get("attention_mask") is not None:
        width = np.asarray(f["responses"]).shape[1] if f.get("responses") is not None else scores.shape[1]
        mask = np.asarray(f["attention_mask"])[:, -width:] > 0
        if mask.shape != scores.shape:
            raise AdvcoreError(f"`attention_mask[:, -{width}:]` has shape {mask.shape} but `{key}` has {scores.shape}")
    else:
        raise AdvcoreError("`batch` has no `response_mask` (nor `attention_mask` to derive it from)")
    out: dict[str, Any] = {"rewards": np.where(mask, scores, 0.0).sum(axis=1)}
    if f.get("uid") is not None:
        uid = np.asarray(f["uid"]).reshape(-1)
        if uid.shape[0] != scores.shape[0]:
            raise AdvcoreError(f"`uid` has length {uid.shape[0]} but the batch has {scores.shape[0]} samples")
        out["group_ids"] = uid.tolist() if uid.dtype.kind not in "iu" else uid
    length = mask.sum(axis=1)
    first = np.argmax(mask, axis=1)
    rows = np.arange(scores.shape[0])
    if f.get("advantages") is not None:
        adv = _matrix(f["advantages"], "advantages", scores.shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            out["adv"] = np.where(length > 0, np.where(mask, adv, 0.0).sum(axis=1) / length, np.nan)
        out["token_adv"] = adv
        out["response_mask"] = mask
    for name, stage in (("values", "baseline"), ("returns", "returns")):
        if f.get(name) is not None:
            m = _matrix(f[name], name, scores.shape)
            out[stage] = np.where(length > 0, m[rows, first], np.nan)
    return out


def batch_metrics(batch: Any, *, monitor: Monitor | None = None, step: int | None = None,
                  prefix: str = PREFIX) -> dict[str, float]:
    """The ``advcore/...`` metrics of one verl batch, to merge into verl's metrics dict.

    Parameters
    ----------
    batch : verl ``DataProto`` or mapping
        See :func:`batch_arrays` for the keys and shapes (torch tensors on any device or numpy).
    monitor : advcore.Monitor, optional
        Record the step in it (detectors, findings, recording; its error policy applies: bad
        input is logged, not raised, unless ``strict``). ``step`` is then required.
    step : int, optional
        verl's ``global_steps``.
    prefix : str, default "advcore/"

    Returns
    -------
    dict of str to float

    Raises
    ------
    AdvcoreError
        Without a monitor: a batch :func:`batch_arrays` cannot read; with one: a missing ``step``.
    """
    if monitor is None:
        _, row = step_row(0 if step is None else step, **batch_arrays(batch))
        return flat_metrics(row, prefix)
    if step is None:
        raise AdvcoreError("`step` is needed with a `monitor`")
    try:
        arrays = batch_arrays(batch)
    except Exception as e:  # noqa: BLE001 (the monitor's error policy decides)
        monitor.fail(f"reading the verl batch of step {step}", e)
        return {f"{monitor.prefix}errors": float(monitor.errors)}
    return monitor.observe(step, rewards=arrays["rewards"], group_ids=arrays.get("group_ids"),
                           advantages=arrays.get("adv"), baseline=arrays.get("baseline"),
                           returns=arrays.get("returns"), token_advantages=arrays.get("token_adv"),
                           response_mask=arrays.get("response_mask"))
