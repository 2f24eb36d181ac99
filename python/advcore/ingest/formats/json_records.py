"""JSON documents of per-iteration records that are not one table of equal-length arrays.

Three layouts of hand-written training loops:

* **A list of records** (``[{"epoch": 1, "avg_reward": 0.86, ...}, ...]``), one per iteration,
  without a ``step`` key (a list whose records have one is a ``log_history`` and is read by
  :mod:`~advcore.ingest.formats.trainer_state`; a list of per-group records with ``n_degenerate`` by
  :mod:`~advcore.ingest.formats.columnar_json`). The step is the first of ``global_step``,
  ``iteration``, ``iter``, ``update``, ``epoch`` whose values are all integers, else the record's
  position from 1. E.g. MCP-Tool-RL (mazzeratziii/MCP-Tool-RL, ``src/rl/train_grpo.py``) writes
  ``epoch, proxy_loss, avg_reward, success_rate, avg_steps, timestamp`` per epoch.
* **An object of records keyed by step** (``{"0": {"reward": -1.96, "kl": 0.0, ...}, "1": {...}}``): the
  GRPO loop of brendanhogan/DeepSeekRL-Extended (``main.py`` dumps its ``train_metrics_total``, keyed by
  round, to ``training_logs/train_logs.json``) and its forks. The key is the step; every key must be a
  whole number and every value an object, else the document is not this layout.
* **An object of record groups** whose arrays differ in length, e.g. the SB3 callback of
  Maybe1e/rl (``train_with_logging.py``, commit e1d8e4d)::

      {"ep_rewards": [...10520], "ep_lengths": [...], "ep_timesteps": [...],   # one per episode
       "eval_rewards": [...60], "eval_timesteps": [...60],                     # one per evaluation
       "losses": [{"step": 2049, "policy_loss": ..., "value_loss": ..., "entropy": ...,
                   "clip_fraction": ..., "approx_kl": ...}, ...]}              # logger snapshots

  A *group* is a list of objects with a step key (``step``, ``global_step``, ``timestep(s)``,
  ``total_timesteps``, ``num_timesteps``, ``iteration``, ``update``, ``epoch``), or the arrays of one
  length together with their step array: an array of integers that never decreases, named
  ``step``, ``steps``, ``timestep(s)`` or ending in ``_step(s)``/``_timestep(s)``; arrays of one
  length with several step arrays go with the one whose name prefix they share (``ep_`` with
  ``ep_timesteps``). An array ``<name>_T`` beside ``<name>`` is that one array's step array (sacred's
  ``info.json``, written by PyMARL: ``{"return_mean": [...], "return_mean_T": [...], ...}``, its
  numpy scalars wrapped by jsonpickle and read as values). Arrays with no step array cannot be placed and are listed in
  ``metadata["unaligned"]``, except when only evaluations have steps: then the longest of them are the
  training series, one entry per position (:func:`_by_position`); scalars go to ``metadata``.

  How groups are joined: the training group with the fewest distinct steps sets the rows (for the
  file above, the logger snapshots: one row per update), and every other training group is averaged
  per bin: an entry at step ``t`` goes to the first row step ``>= t`` (an episode goes to the update
  logged after it ended); entries after the last row step make one more row, at the last of their
  steps. A sacred ``<name>_T`` array is the exact step of each value, logged when it was computed:
  those stay on their own steps, and the rows are the union of the steps (h111-pymarl-feudal-qmix-sc2-3m:
  a TD loss of 196 at its first update and 1.8e6 at its second, 1,194 losses against 15 returns, would
  be averaged into one value per return). Within one group, entries at the same step are averaged. A
  record of a list that repeats the previous record in everything but its step is the same snapshot
  sampled again (the callback
  above copies SB3's logger every ~500 calls, the update runs every 2048): the first is kept
  (``metadata["repeated_records"]``). Groups named ``eval...``/``val...``/``test...`` are
  evaluations: their keys become ``eval/<key>`` (``eval_rewards`` -> ``eval/rewards``), they stay on
  their own steps and are never training metrics. A name two groups share is prefixed with its
  group's name (``losses/value``).

  Trainer ``sb3_callback``: episode arrays ``ep_rewards`` beside records with SB3 PPO's update
  keys ``approx_kl``, ``clip_fraction`` and ``entropy``. The alias table reads ``ep_rewards`` as
  ``reward_mean`` and ``entropy`` as minus the entropy: the callback copies SB3's
  ``train/entropy_loss`` under that name (at the first update it is -4.27 = -3 x 0.5 ln(2 pi e),
  the entropy of the initial 3-D Gaussian policy with unit std, negated).

Values are read by :func:`advcore.ingest._parse.number`; a value that is not a number costs
that value (null), an entry whose step is not a number costs that entry (counted in
``metadata["entries_without_step"]``). Nested objects in records are flattened with ``/``.
"""

from __future__ import annotations

import bisect
import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest._format import Format
from advcore.ingest._parse import (EVAL_WORDS, evaluation_apart, flatten, mean_record, number, read_json,
                                   records_frame)

NAME = "json_records"

#: step keys of a list's records, in order of preference
_RECORD_STEP_KEYS = ("step", "global_step", "timestep", "timesteps", "total_timesteps", "num_timesteps",
                    "iteration", "iter", "update", "epoch", "episode")
#: the name of an array of step numbers: ``timesteps``, ``ep_timesteps``, and the episode or iteration
#: counters of hand-written loops (``episodes`` beside ``q_eval_episodes``, h104 Double DQN on LunarLander)
_STEP_ARRAY = re.compile(r"^(?:(?P<prefix>.+?[_/])?(?:(?:time)?steps?|episodes|iterations|updates|epochs))$")
#: the name of an evaluation group or array (``eval_rewards``, ``evaluations``, ``val/loss``)
_EVAL = re.compile(rf"^(?:{'|'.join(sorted(EVAL_WORDS, key=len, reverse=True))})(?:[_/]|$)", re.IGNORECASE)
_LIST_OF_OBJECTS = re.compile(r"^\[\s*\{")
_KEYED_BY_STEP = re.compile(r'^\{\s*"\d+"\s*:\s*\{')
_STEP_KEY = re.compile(r'"step"\s*:')
#: SB3 PPO's ``train/*`` names a callback copied next to per-episode arrays (trainer ``sb3_callback``)
_SB3_UPDATE_KEYS = frozenset({"approx_kl", "clip_fraction", "entropy"})


# -- the document's groups -----------------------------------------------------------------------


def _record_step_key(records: list[Any]) -> str | None:
    if not records or not all(isinstance(r, dict) for r in records):
        return None
    return next((k for k in _RECORD_STEP_KEYS if any(k in r for r in records)), None)


def _step_prefix(name: str) -> str | None:
    """``ep_`` for ``ep_timesteps``, ``""`` for ``steps``; None when the name is not a step array's."""
    m = _STEP_ARRAY.match(name)
    return None if m is None else (m.group("prefix") or "")


def _paired_base(name: str, arrays: dict[str, list[Any]]) -> str | None:
    """``return_mean`` for ``return_mean_T`` when that array is there with the same length: sacred's
    ``info.json`` (PyMARL, ``src/utils/logging.py``) keeps each metric's time steps in ``<name>_T``."""
    base = name[:-2] if name.endswith("_T") else None
    values = arrays.get(base) if base is not None else None
    return base if isinstance(values, list) and len(values) == len(arrays[name]) else None


def _is_step_array(values: list[Any]) -> bool:
    nums = [number(v) for v in values]
    ints = [v for v in nums if v is not None and math.isfinite(v) and v == int(v)]
    return len(ints) == len(nums) and all(b >= a for a, b in zip(ints, ints[1:], strict=False))


def _groups(doc: dict[str, Any]) -> tuple[dict[str, list[str]], list[str]]:
    """The arrays placed on each step array (``{step array: [arrays]}``) and those that could not be
    placed (no step array of their length)."""
    arrays = {k: v for k, v in doc.items() if isinstance(v, list) and _record_step_key(v) is None
              and not any(isinstance(x, (dict, list)) for x in v)}
    by_length: dict[int, list[str]] = {}
    for k, v in arrays.items():
        by_length.setdefault(len(v), []).append(k)
    placed: dict[str, list[str]] = {}
    unaligned: list[str] = []
    for names in by_length.values():
        paired = {base: k for k in names if (base := _paired_base(k, arrays)) is not None and _is_step_array(arrays[k])}
        for base, k in paired.items():
            placed[k] = [base]
        steps = {k: prefix for k in names if k not in paired.values() and (prefix := _step_prefix(k)) is not None
                 and _is_step_array(arrays[k])}
        for k in names:
            if k in steps or k in paired or k in paired.values():
                continue
            # the step array whose name prefix this array shares (the longest), else the only one
            fits = [s for s, prefix in steps.items() if k.startswith(prefix)] or (list(steps) if len(steps) == 1 else [])
            if fits:
                placed.setdefault(max(fits, key=lambda s: len(steps[s])), []).append(k)
            else:
                unaligned.append(k)
    return placed, unaligned


Placement = tuple[dict[str, list[str]], list[str]]


def record_groups(doc: Any) -> Placement | None:
    """The placement of a JSON object's arrays on its step arrays (:func:`_groups`) when it holds
    record groups this module joins: a list of objects with a step key, or arrays of different
    lengths of which some lie on a step array; else None. (Such an object starts like a columnar
    one, so :mod:`~advcore.ingest.formats.columnar_json` reads the file and hands the document and
    this placement to :func:`read_groups`: both are computed once.)"""
    if not isinstance(doc, dict) or "log_history" in doc:
        return None
    if any(isinstance(v, list) and _record_step_key(v) is not None for v in doc.values()):
        return _groups(doc)
    if len({len(v) for v in doc.values() if isinstance(v, list)}) > 1:
        placement = _groups(doc)
        return placement if placement[0] else None
    return None


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    text = head.lstrip("\ufeff").lstrip()
    return (_LIST_OF_OBJECTS.match(text) is not None and _STEP_KEY.search(text) is None
            and '"n_degenerate"' not in text) or _KEYED_BY_STEP.match(text) is not None


# -- reading -------------------------------------------------------------------------------------


def _list_of_records(path: Path, doc: list[Any], layout: str = "list") -> RawLog:
    if not all(isinstance(r, dict) for r in doc):
        bad = next(i for i, r in enumerate(doc) if not isinstance(r, dict))
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(
            str(path), f"JSON records: expected a list of objects, but entry {bad + 1} is {type(doc[bad]).__name__}"),))
    rows = [flatten(r) for r in doc]
    meta: dict[str, Any] = {"layout": layout}
    evaluations = evaluation_apart(rows)
    if evaluations:
        meta["evaluation_records"] = evaluations
    frame, dropped = records_frame(rows)
    if dropped:
        meta["non_numeric"] = dropped
    return RawLog(NAME, frame, metadata=meta)


Entries = list[tuple[int, dict[str, float | None]]]


def _per_step(entries: Entries) -> dict[int, dict[str, float | None]]:
    """Entries at one step averaged, in step order."""
    by_step: dict[int, list[dict[str, float | None]]] = {}
    for step, values in entries:
        by_step.setdefault(step, []).append(values)
    return {s: mean_record(v) for s, v in sorted(by_step.items())}


def _binned(entries: Entries, bins: list[int]) -> dict[int, dict[str, float | None]]:
    """Entries averaged per bin: the first bin step ``>= t``; those after the last bin make one more
    bin at the last of their steps."""
    last = max(s for s, _ in entries)
    out: Entries = []
    for step, values in entries:
        i = bisect.bisect_left(bins, step)
        out.append((bins[i] if i < len(bins) else last, values))
    return _per_step(out)


def _list_groups(doc: dict[str, Any]) -> tuple[list[tuple[str, Entries]], int, int]:
    """Each list of records with a step key as (name, entries); the entries without a step and the
    repeated snapshots dropped."""
    groups: list[tuple[str, Entries]] = []
    no_step = repeated = 0
    for name, records in doc.items():
        if not isinstance(records, list) or (step_key := _record_step_key(records)) is None:
            continue
        entries: Entries = []
        for r in records:
            step = number(r.get(step_key))
            if step is None or not math.isfinite(step) or step != int(step):
                no_step += 1
                continue
            values = {k: number(v) for k, v in flatten(r).items() if k != step_key}
            if entries and values == entries[-1][1]:
                repeated += 1
                continue
            entries.append((int(step), values))
        groups.append((name, entries))
    return groups, no_step, repeated


def read_groups(path: Path, doc: dict[str, Any], placement: Placement | None = None) -> RawLog:
    """The record groups of JSON object ``doc`` (read from ``path``) joined by step (module docstring);
    ``placement`` is :func:`record_groups`'s, when the caller has it."""
    meta: dict[str, Any] = {k: v for k, v in doc.items() if not isinstance(v, (list, dict))}
    meta["layout"] = "groups"
    groups, no_step, repeated = _list_groups(doc)
    placed, unaligned = placement if placement is not None else _groups(doc)
    own_steps: set[str] = set()  # groups whose entries keep their own steps (sacred's <name>_T arrays)
    for step_array, members in placed.items():
        paired = _paired_base(step_array, doc)
        prefix = (_step_prefix(step_array) or paired or "").rstrip("_/")
        name = prefix or step_array
        if all(_EVAL.match(k) for k in members):
            name = prefix if _EVAL.match(prefix) else "eval"
        if paired is not None:
            own_steps.add(name)
        steps = [int(number(s) or 0) for s in doc[step_array]]  # a step array holds integers only
        groups.append((name, [(s, {k: number(doc[k][i]) for k in members}) for i, s in enumerate(steps)]))
    groups = [(name, entries) for name, entries in groups if entries]
    if unaligned and all(_EVAL.match(name) for name, _ in groups):
        groups, unaligned = _by_position(doc, groups, unaligned, meta)
    if not groups:
        return RawLog(NAME, pl.DataFrame(), errors=(IngestError(
            str(path), "JSON records: no list of records with a step key and no arrays with a step array found"),))
    evaluation = {name for name, _ in groups if _EVAL.match(name)}
    # A key two groups share is prefixed with its group's name.
    owners: dict[str, set[str]] = {}
    for name, entries in groups:
        for key in {k for _, e in entries for k in e}:
            owners.setdefault(_key(key, name in evaluation), set()).add(name)
    # The training group with the fewest distinct steps sets the rows; the others are binned onto them,
    # except a metric logged with its own time steps (sacred's <name>_T), which stays on them.
    training = [i for i, (name, _) in enumerate(groups) if name not in evaluation and name not in own_steps]
    base = min(training, key=lambda i: len({s for s, _ in groups[i][1]}), default=None)
    bins = sorted({s for s, _ in groups[base][1]}) if base is not None else []
    rows: dict[int, dict[str, float | None]] = {}
    for i, (name, entries) in enumerate(groups):
        binned = i in training and i != base
        for step, values in (_binned(entries, bins) if binned else _per_step(entries)).items():
            row = rows.setdefault(step, {})
            for k, v in values.items():
                key = _key(k, name in evaluation)
                row[f"{name}/{key}" if len(owners[key]) > 1 else key] = v
    frame, dropped = records_frame([{"step": s, **rows[s]} for s in sorted(rows)])
    meta["groups"] = {name: len(entries) for name, entries in groups}
    if base is not None:
        meta["rows_from"] = groups[base][0]
    if evaluation:
        meta["evaluation_groups"] = sorted(evaluation)
    if repeated:
        meta["repeated_records"] = repeated
    if no_step:
        meta["entries_without_step"] = no_step
    if unaligned:
        meta["unaligned"] = unaligned
    if dropped:
        meta["non_numeric"] = dropped
    keys = {k for _, entries in groups for _, e in entries for k in e}
    trainer = "sb3_callback" if "ep_rewards" in keys and _SB3_UPDATE_KEYS <= keys else None
    return RawLog(NAME, frame, trainer=trainer, metadata=meta)


def _by_position(doc: dict[str, Any], groups: list[tuple[str, Entries]], unaligned: list[str],
                 meta: dict[str, Any]) -> tuple[list[tuple[str, Entries]], list[str]]:
    """When only evaluations have steps, the longest arrays without a step array are the training
    series, one entry per position from 1 (an episode's or update's index, as in a columnar file: the
    SAC loop of h265-handwritten-sac-rideshare-pricing-learns-after-warmup-holds writes 300
    ``episode_reward`` beside 280 ``critic_loss`` from its first update on and one evaluation at episode
    200). The shorter arrays stay unaligned: where they start is not written. An evaluation whose steps
    run past the last position counts another axis (environment steps beside episodes) and is left out,
    listed in ``metadata["other_axis"]``."""
    n = max(len(doc[k]) for k in unaligned)
    members = [k for k in unaligned if len(doc[k]) == n]
    if n < 2:
        return groups, unaligned
    other = [name for name, entries in groups if max(s for s, _ in entries) > n]
    if other:
        meta["other_axis"] = other
    training = ("", [(i + 1, {k: number(doc[k][i]) for k in members}) for i in range(n)])
    meta["steps_by_position"] = members
    return [training, *[g for g in groups if g[0] not in other]], [k for k in unaligned if k not in members]


def _key(key: str, is_eval: bool) -> str:
    """An evaluation group's key under ``eval/``, without its own ``eval_`` prefix."""
    return f"eval/{_EVAL.sub('', key, count=1) or key}" if is_eval else key


def _keyed_by_step(doc: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The records of an object keyed by step (``{"0": {...}, "1": {...}}``), each with its key as ``step``,
    in step order; None when a key is not a whole number or a value is not an object."""
    if not doc or not all(k.isdigit() and isinstance(v, dict) for k, v in doc.items()):
        return None
    return [{**v, "step": int(k)} for k, v in sorted(doc.items(), key=lambda kv: int(kv[0]))]


def read(path: Path) -> RawLog:
    doc, error = read_json(path, "JSON records")
    if error is not None:
        return RawLog(NAME, pl.DataFrame(), errors=(error,))
    if isinstance(doc, list):
        return _list_of_records(path, doc)
    if isinstance(doc, dict) and (rows := _keyed_by_step(doc)) is not None:
        return _list_of_records(path, rows, "keyed by step")
    if isinstance(doc, dict):
        return read_groups(path, doc)
    return RawLog(NAME, pl.DataFrame(), errors=(IngestError(
        str(path), f"JSON records: expected a list of records or an object of record groups, got {type(doc).__name__}"),))


FORMAT = Format(NAME, sniff, read)
