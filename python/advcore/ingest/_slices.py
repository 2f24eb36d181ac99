"""Per-task metrics of per-step logs read as slices (:attr:`advcore.model.Run.slices`).

Vision-language-action trainers log success per task or per suite beside the aggregate; each such key
becomes the ``reward_mean`` of the slice ``task=<name>`` at that step, so the slice detectors can read
a task whose success saturates or floors while the aggregate moves. Keys read:

* ``train_verify_score/<task>`` - SimpleVLA-RL's training verifier metrics
  (``verl/trainer/ppo/ray_trainer.py``, ``RayTrainer.fit``: ``metrics['train_verify_score/' + k]``
  for every key of ``RobRewardManager.verify``'s metrics, PRIME-RL/SimpleVLA-RL@7c51662 L560-562 and L599-600;
  the upstream verifier returns ``all`` only, the aggregate, which is not a slice:
  ``verl/trainer/main_ppo.py`` L52; a verifier that returns one key per task gives the slices).

RLinf logs no per-task training key: its embodied runner writes the ``env/`` metrics as the mean of
each episode field over every finished episode of every env rank (RLinf/RLinf@a3816b5,
``rlinf/runners/embodied_runner.py`` L373-374 and ``rlinf/utils/metric_utils.py``
``compute_evaluate_metrics``, L372-419), and the envs' episode fields carry no task
(``success_once``, ``return``, ``episode_len``, ``reward``, ``fail_once``: ``rlinf/envs/libero/libero_env.py``
L724-747, ``rlinf/envs/maniskill/maniskill_env.py`` L259-272). Its LIBERO evaluation counts success
per task only to deduplicate trials and prints it as log lines (``[libero eval] task_id=...,
trial_id=..., success=...``, ``rlinf/envs/libero/utils.py`` L218-265), held-out in any case.
With ``runner.per_worker_log`` the same keys are written per env rank, which is not a task either.

Evaluation keys (``val/test_score/<data_source>``) are held-out scores, not training signal, and are
not slices.
"""

from __future__ import annotations

import re

import polars as pl

__all__ = ["task_slices"]

_PATTERNS = (
    re.compile(r"^train_verify_score/(?P<task>[^/]+)$"),
)
#: Names that are the aggregate, not a task.
_AGGREGATE = frozenset({"all", "mean", "total", "overall"})


def task_slices(frame: pl.DataFrame, step_key: str | None) -> pl.DataFrame | None:
    """The per-task success keys of ``frame`` (a format's frame under the trainer's keys) as slice
    rows: ``slice`` (``task=<name>``), ``step`` (Int64) and ``reward_mean`` (Float64); None when it
    has no such key or no step column."""
    if step_key is None or step_key not in frame.columns:
        return None
    parts = []
    for col in frame.columns:
        m = next((p.match(col) for p in _PATTERNS if p.match(col)), None)
        if m is None or m.group("task").lower() in _AGGREGATE or not frame[col].dtype.is_numeric():
            continue
        part = frame.select(pl.lit(f"task={m.group('task')}").alias("slice"),
                            pl.col(step_key).cast(pl.Int64, strict=False).alias("step"),
                            pl.col(col).cast(pl.Float64, strict=False).fill_nan(None).alias("reward_mean"))
        parts.append(part.drop_nulls())
    if not parts:
        return None
    out = pl.concat(parts).unique(["slice", "step"], keep="last", maintain_order=True)
    return out.sort("slice", "step") if out.height else None
