"""Columnar JSON: a JSON object of equal-length arrays (``{"rewards_avg": [...], "kl_avg": [...]}``),
one array per metric, one index per logged point; or a bare array of numbers (``[-162, -147, ...]``), one
series named by its file (``episode_rewards.json``), as a headerless table's. Scalar entries, before the arrays or among them,
and lists of names (``"topologies": ["buck", "boost"]``) go to ``metadata``. Without a
``step`` array the step is the index order (the file does not say how many trainer steps one point
spans). Arrays of several lengths with no step array to place them on (a win rate every 100 episodes beside
the returns of each) give the columns as long as an array named like a return per episode, else the longest
(:func:`~advcore.ingest._parse.row_count`); the others are listed in ``metadata["unaligned"]``.

Sacred's ``metrics.json`` (``{name: {"steps": [...], "timestamps": [...], "values": [...]}}``) is read as its
``info.json`` is, each series on its own steps (:func:`_sacred_metrics`, then
:func:`advcore.ingest.formats.json_records.read_groups`).

Also read here: JSON lists of per-group statistics records with ``n_degenerate``, in the two
layouts of rho-GRPO (Sunshine535/nips-grpo-dynamics, ``src/rho_grpo_trainer*.py`` and
``src/csd_logging.py``):

* ``rho_grpo_logs.json``, the trainer's own records (``n_positive``/``n_negative``): one per
  micro-batch (``compute_loss`` call), the step repeated. Records of one step are combined (counts
  summed, other numbers averaged) and ``zero_variance_group_frac`` is derived as
  ``n_degenerate / (n_positive + n_negative + n_degenerate)`` (``metadata["derived"]``: the run names that
  formula as its source and the counts as read; the counts are samples with
  positive, negative and exactly zero advantage; with equal group sizes this is the share of
  zero-variance groups). The trainer writes ``state.global_step`` during the step, i.e. before the
  optimizer step counts it; ``step`` is that + 1, the step TRL logs the same batch under
  (grpo-dynamics-gate2: the record of step s matches the console's ``reward_std`` of line s + 1 at
  200 of 200 steps, and at 68 without the shift).
* ``csd_logs.json``, the CSD callback's records (``n_pos``/``n_neg``): written at each ``on_log``
  from the trainer's *latest* record only, so the counts cover the last micro-batch of the step
  (grpo-dynamics-gate2: 4 of its 8 samples; the step's share differs at 96 of 200 steps).
  ``zero_variance_group_frac`` is therefore not derived from them (``metadata["groups"]`` says
  why). A step's later records (the end-of-training log repeats the last step) are repeats: the
  first is kept. An integer ``0`` under ``reward_mean`` or ``grad_norm`` is the callback's default
  for a key the trainer's log lacks (TRL logs ``reward``, not ``reward_mean``), so it is null.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest.formats import json_records
from advcore.ingest._parse import file_series, is_json_lines, number, read_json, records_frame, row_count
from advcore.ingest._format import Format

NAME = "columnar_json"

#: an object whose first array comes after any number of scalar entries or objects of them, nested once
#: (``{"beta": 0.05, "seed": 42, "rewards_curve": [...]}``; ``{"config": {"seed": 42, ...}, "training": [...]}``:
#: h200's PaddlePaddle DQN; ``{"regime": {...}, "held_out_before": {"reward_mean": ..., "components": {...}},
#: ..., "kl_trajectory": [...], "step_metrics": [{...}]}``: h236's hand-written PPO summary), the objects'
#: lists of scalars included (``{"training_config": {"start_point": [1.0, 1.0, 0.0], ...}, "final_results": {...},
#: "episode_rewards": [...], "episode_lengths": [...]}``: h258's tabular Q-learning on a Gazebo robot)
_FLAT = r'(?:[^{}\[\]]|\[[^{}\[\]]*\])'  # a character, or a list of scalars (``"start_point": [1.0, 1.0, 0.0]``)
_COLUMNAR = re.compile(rf'^\{{(?:\s*"[^"]*"\s*:\s*(?:"[^"]*"|[-+\w.]+|\{{(?:{_FLAT}|\{{{_FLAT}*\}})*\}})\s*,)*'
                       r'\s*"[^"]*"\s*:\s*\[')
_GROUP_STATS = re.compile(r'^\[\s*\{[^{}\[]*"n_degenerate"\s*:', re.S)
#: the arrays one object down, as the first member (``{"training_progress": {"iterations": [0, 1, ...],
#: "episode_rewards": [...]}, "performance_summary": {...}}``: an RLlib run's results dumped by hand, survey
#: file ben-ogden/rllib-trading-arena ``training_metrics.json``)
_NESTED = re.compile(r'^\{\s*"[^"]*"\s*:\s*\{\s*"[^"]*"\s*:\s*\[')
#: a bare array of numbers (``json.dump(episode_rewards, f)``): one series, named by the file; a number then a
#: comma, not a logger's ``[2023-05-10 14:13:27,593]``
_NUMBERS = re.compile(r"^\[\s*(?:-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|NaN|-?Infinity)\s*[,\]]")


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    text = head.lstrip("\ufeff").lstrip()
    if _COLUMNAR.match(text) or _NESTED.match(text):  # JSON Lines whose first value is a list are records
        return '"log_history"' not in text and not is_json_lines(text)
    return bool(_GROUP_STATS.match(text)) or (bool(_NUMBERS.match(text)) and not is_json_lines(text))


#: keys the CSD callback fills with an integer 0 when the trainer's log lacks them
_CSD_DEFAULT_ZERO = ("reward_mean", "grad_norm")


def _csd_snapshots(by_step: dict[Any, list[dict[str, Any]]]) -> RawLog:
    kept: list[dict[str, Any]] = []
    for recs in by_step.values():
        r = dict(recs[0])
        for k in _CSD_DEFAULT_ZERO:
            if type(r.get(k)) is int and r[k] == 0:
                r[k] = None
        kept.append(r)
    placeholder = [k for k in _CSD_DEFAULT_ZERO if any(k in r for r in kept) and all(r.get(k) is None for r in kept)]
    frame, dropped = records_frame([{k: v for k, v in r.items() if k not in placeholder} for r in kept])
    meta: dict[str, Any] = {
        "layout": "csd_callback",
        "groups": "n_pos/n_neg/n_degenerate cover only the step's last micro-batch (the CSD callback copies the "
                  "trainer's latest record); zero_variance_group_frac is not derived from them",
        "repeated_records": sum(len(v) - 1 for v in by_step.values()),
    }
    if placeholder:
        meta["placeholder"] = placeholder
    if dropped:
        meta["non_numeric"] = dropped
    return RawLog(NAME, frame, metadata=meta)


def _group_stats(path: Path, rows: list[Any]) -> RawLog:
    if not all(isinstance(r, dict) for r in rows):
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(str(path), "expected a list of JSON objects"),))
    by_step: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        by_step.setdefault(r.get("step"), []).append(r)
    if not any("n_positive" in r for r in rows) and any("n_pos" in r for r in rows):
        return _csd_snapshots(by_step)
    combined: list[dict[str, Any]] = []
    for step, recs in by_step.items():
        s = number(step)
        out: dict[str, Any] = {"step": s + 1 if s is not None and math.isfinite(s) and s == int(s) else step}
        keys: dict[str, None] = {}
        for r in recs:
            keys.update(dict.fromkeys(r))
        for k in keys:
            if k == "step":
                continue
            vals = [v for v in (number(r.get(k)) for r in recs) if v is not None]
            if not vals:
                continue
            out[k] = sum(vals) if k.startswith("n_") else sum(vals) / len(vals)
        pos = out.get("n_positive", out.get("n_pos"))
        neg = out.get("n_negative", out.get("n_neg"))
        deg = out.get("n_degenerate")
        if pos is not None and neg is not None and deg is not None and pos + neg + deg > 0:
            out["zero_variance_group_frac"] = deg / (pos + neg + deg)
        combined.append(out)
    counts = [k for k in ("n_degenerate", "n_positive", "n_pos", "n_negative", "n_neg") if any(k in r for r in rows)]
    frame, dropped = records_frame(combined)
    per_step = max(len(v) for v in by_step.values())
    meta: dict[str, Any] = {"layout": "rho_grpo_trainer", "records_per_step": per_step,
                            "step": "the trainer's global_step during the step + 1 (the step TRL logs it under)"}
    if any("zero_variance_group_frac" in r for r in combined):
        deg, *others = counts
        meta["derived"] = {"zero_variance_group_frac": f"{deg} / ({' + '.join([*others, deg])})"}
    if dropped:
        meta["non_numeric"] = dropped
    return RawLog(NAME, frame, metadata=meta)


def _sacred_metrics(doc: dict[str, Any]) -> dict[str, list[Any]] | None:
    """Sacred's ``metrics.json`` (its FileStorageObserver, one entry per ``_run.log_scalar(name, value, step)``
    series: ``{"return_mean": {"steps": [...], "timestamps": [...], "values": [...]}, ...}``, written by PyMARL,
    EPyMARL and other sacred experiments) as the ``<name>``/``<name>_T`` arrays of sacred's ``info.json``, each
    value on its own step; None when ``doc`` is not of that form."""
    if not doc or not all(isinstance(v, dict) and isinstance(v.get("values"), list) and isinstance(v.get("steps"), list)
                          and len(v["values"]) == len(v["steps"]) for v in doc.values()):
        return None
    return {k: a for name, v in doc.items() for k, a in ((name, v["values"]), (f"{name}_T", v["steps"]))}


def read(path: Path) -> RawLog:
    doc, error = read_json(path, "columnar JSON")
    if error is not None:
        return RawLog(NAME, pl.DataFrame(), errors=(error,))
    if isinstance(doc, list) and doc and all(isinstance(v, int | float) and not isinstance(v, bool) for v in doc):
        # a bare array of numbers, one per episode or update (survey: reward_history.json, episode_rewards.json of
        # hand-written loops): a headerless series, named by its file as a headerless table's is
        return file_series(NAME, path, doc, "array")
    if isinstance(doc, list):
        return _group_stats(path, doc)
    if not isinstance(doc, dict):
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(str(path), "expected a JSON object of arrays"),))
    if (paired := _sacred_metrics(doc)) is not None:
        return json_records.read_groups(path, paired)
    nested = [v for v in doc.values() if isinstance(v, dict) and any(isinstance(x, list) for x in v.values())]
    if len(nested) == 1 and not any(isinstance(v, list) for v in doc.values()):
        # the arrays sit one object down (RLlib results dumped by hand under "training_progress"); the other
        # objects (a summary, a checkpoint's info) describe the run
        doc = {**{k: v for k, v in doc.items() if not isinstance(v, dict)}, **nested[0]}
    if (placement := json_records.record_groups(doc)) is not None:  # arrays of several lengths, or lists of records
        return json_records.read_groups(path, doc, placement)
    # a list of names (``"topologies": ["buck", "boost", ...]``) describes the run; it is not a metric
    names = {k for k, v in doc.items() if isinstance(v, list) and v
             and all(isinstance(x, str) and number(x) is None for x in v)}
    # a list of records without a step key beside per-point arrays (a hand-written loop's per-update losses next
    # to its per-episode returns: h202-handwritten-ppo-btc-trading-2023-window-learns-steadily, 26 records and
    # 200 episodes) cannot be placed on their points: it is listed, the arrays are read
    records = {k for k, v in doc.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)}
    arrays = {k: v for k, v in doc.items() if isinstance(v, list) and k not in names and k not in records}
    meta: dict[str, Any] = {k: v for k, v in doc.items() if not isinstance(v, (list, dict)) or k in names}
    if records:
        meta["unaligned"] = sorted(records)
    if not arrays:
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(str(path), "columnar JSON: no arrays found"),))
    n = row_count({k: len(v) for k, v in arrays.items()})
    # arrays of another length (an evaluation every 100 episodes) and no step array to place them on: listed
    unaligned = sorted(k for k, v in arrays.items() if len(v) != n)
    if unaligned:
        meta["unaligned"] = sorted({*meta.get("unaligned", ()), *unaligned})
    rows = [{k: v[i] for k, v in arrays.items() if len(v) == n} for i in range(n)]
    frame, dropped = records_frame(rows)
    if dropped:
        meta["non_numeric"] = dropped
    return RawLog(NAME, frame, metadata=meta)


FORMAT = Format(NAME, sniff, read)
