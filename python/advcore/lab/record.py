"""Write a lab run as a real trainer would log it, with its ground truth.

Files written into the output folder (nothing else, nowhere else):

``trainer_state.json`` (format ``trl``)
    HF/TRL ``trainer_state.json`` whose ``log_history`` uses TRL's keys: ``reward``,
    ``reward_std`` (the whole-batch std, as TRL logs it from 0.27; without a version the alias
    table reads it so), ``frac_reward_zero_std``,
    ``rewards/lab_reward/mean`` and ``/std``, ``kl``, ``entropy``, ``grad_norm``,
    ``clip_ratio/region_mean``, ``completions/mean_length``, ``completions/clipped_ratio``,
    ``learning_rate``. TRL logs no advantage statistic, so neither does this file.
``verl_console.log`` (format ``verl``)
    verl console lines ``step:N - key:value - ...`` with verl's keys: ``critic/score/mean|max|min``,
    ``critic/advantages/mean|max|min``, ``critic/returns/mean``, ``critic/values/mean``,
    ``critic/vf_explained_var`` (PPO), ``actor/entropy``, ``actor/kl_loss`` (KL to the reference),
    ``actor/ppo_kl`` (KL of the update), ``actor/pg_clipfrac``, ``actor/grad_norm``, ``actor/lr``,
    ``response_length/mean``, ``response_length/clip_ratio``.
``metrics.jsonl`` (format ``jsonl``)
    One JSON object per step with every per-step metric of :mod:`advcore.lab.run` under its
    canonical name (the lab's own update mechanics under theirs).
``samples.parquet``
    The per-sample canonical long format (:mod:`advcore.ingest.formats.samples`): ``step``,
    ``group``, ``reward``, ``adv_raw``, ``adv`` (and ``value``, ``return`` for PPO) plus the slice
    columns ``task`` and ``difficulty`` and the lab's ``reward_scored`` (the float64 reward before the
    trainer held it: the reference for the precision faults).
``truth.json``
    :func:`advcore.lab.run.truth`: fault, stage, onset step, expected detectors, estimator, seed,
    every knob.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from advcore.errors import AdvcoreError
from advcore.lab.run import LabResult

__all__ = ["FORMATS", "TRL_KEYS", "VERL_KEYS", "write"]

#: Per-step formats and the file each writes.
FORMATS = {"trl": "trainer_state.json", "verl": "verl_console.log", "jsonl": "metrics.jsonl"}

#: TRL key -> the lab's metric.
TRL_KEYS = {
    "reward": "reward_mean", "reward_std": "reward_std", "frac_reward_zero_std": "zero_variance_group_frac",
    "rewards/lab_reward/mean": "reward_mean", "rewards/lab_reward/std": "reward_std", "kl": "kl",
    "entropy": "entropy", "grad_norm": "grad_norm", "clip_ratio/region_mean": "clip_frac",
    "completions/mean_length": "response_length_mean", "completions/clipped_ratio": "truncated_frac",
    "learning_rate": "lr",
}
#: verl key -> the lab's metric (``actor/kl_loss`` before ``actor/ppo_kl``: the KL to the reference
#: is the one the ``kl`` alias should read).
VERL_KEYS = {
    "critic/score/mean": "reward_mean", "critic/score/max": "reward_max", "critic/score/min": "reward_min",
    "critic/advantages/mean": "adv_mean", "critic/advantages/max": "adv_max", "critic/advantages/min": "adv_min",
    "critic/returns/mean": "return_mean", "critic/values/mean": "value_mean",
    "critic/vf_explained_var": "vf_explained_var", "actor/entropy": "entropy", "actor/kl_loss": "kl",
    "actor/ppo_kl": "kl_step", "actor/pg_clipfrac": "clip_frac", "actor/grad_norm": "grad_norm", "actor/lr": "lr",
    "response_length/mean": "response_length_mean", "response_length/clip_ratio": "truncated_frac",
}


def _rows(result: LabResult) -> list[dict[str, float]]:
    out: list[dict[str, float]] = result.steps.to_dicts()
    return out


def _pick(row: dict[str, Any], keys: dict[str, str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, name in keys.items():
        v = row.get(name)
        if v is None or (isinstance(v, float) and math.isnan(v) and name not in ("reward_mean", "grad_norm")):
            continue  # a metric the run does not have (no critic, DAPO's empty batch) is not logged
        out[key] = float(v)
    return out


def _trl(result: LabResult, path: Path) -> None:
    history = []
    n = result.steps.height
    for row in _rows(result):
        step = int(row["step"])
        history.append({"epoch": round(step / n, 4), "step": step, **_pick(row, TRL_KEYS)})
    doc = {"global_step": n, "max_steps": n, "num_train_epochs": 1, "log_history": history}
    path.write_text(json.dumps(doc, indent=1) + "\n")


def _verl(result: LabResult, path: Path) -> None:
    lines = []
    for row in _rows(result):
        pairs = [f"step:{int(row['step'])}"] + [f"{k}:{v!r}" for k, v in _pick(row, VERL_KEYS).items()]
        lines.append(" - ".join(pairs))
    path.write_text("\n".join(lines) + "\n")


def _jsonl(result: LabResult, path: Path) -> None:
    with path.open("w") as f:
        for row in _rows(result):
            rec = {"step": int(row["step"]), **{k: v for k, v in row.items() if k != "step" and v is not None}}
            f.write(json.dumps(rec) + "\n")


def write(result: LabResult, out: Path | str, *, fmt: str = "jsonl") -> dict[str, Path]:
    """Write ``result`` into the folder ``out`` (created if needed); returns the files by role.

    Parameters
    ----------
    result : LabResult
    out : path
        The output folder; nothing is written outside it.
    fmt : {"trl", "verl", "jsonl"}
        The per-step format (:data:`FORMATS`).

    Returns
    -------
    dict of str to Path
        ``steps``, ``samples``, ``truth``.

    Raises
    ------
    AdvcoreError
        An unknown ``fmt``, ``"trl"`` for a PPO run (TRL's GRPO logs have no critic metrics), or
        ``out`` exists and is not a folder.
    """
    if fmt not in FORMATS:
        raise AdvcoreError(f"`fmt` must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "trl" and result.config.estimator == "ppo":
        # TRL's GRPOTrainer logs no critic: a PPO run in its format would read as a group run
        raise AdvcoreError("`fmt`: 'trl' records the group estimators (TRL GRPOTrainer); record PPO as 'verl' or 'jsonl'")
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise AdvcoreError(f"`out`: {folder} exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    steps = folder / FORMATS[fmt]
    {"trl": _trl, "verl": _verl, "jsonl": _jsonl}[fmt](result, steps)
    samples = folder / "samples.parquet"
    result.samples.write_parquet(samples)
    truth = folder / "truth.json"
    truth.write_text(json.dumps({**result.truth, "format": fmt, "files": {"steps": steps.name,
                                                                         "samples": samples.name}}, indent=2) + "\n")
    return {"steps": steps, "samples": samples, "truth": truth}
