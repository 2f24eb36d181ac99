"""prime-rl's per-step episode files: ``<output_dir>/rollouts/step_<N>/<kind>/<subset>/traces.jsonl``.

Written by prime-rl's file monitor (``FileMonitor.log_episodes`` in ``src/prime_rl/monitors/file.py``,
prime-rl commit 559b447, August 2026): ``kind`` is ``train`` or ``eval``, ``subset`` is ``all`` (every
episode as it completes) or ``effective`` (the episodes the step trained on, after filtering); one
JSON object per line, an episode as verifiers writes it (``Episode.to_record`` in
``verifiers/v1/episode.py``, verifiers 0.3): ``group.id`` (the rollout group: one task sampled
``group_size`` times), ``run.work.step``, ``ok``, and ``traces``, one per agent, each with
``rewards`` (``{name: {"score": s, "weight": w}}``, the trace's reward being the sum of ``s x w``),
``info.advantage`` (set by prime-rl's orchestrator, ``orchestrator/metrics.py``) and
``agent.trainable``.

``read(path)`` takes the ``rollouts`` folder (or one ``traces.jsonl``) and reduces the training
episodes per step (the ``N`` of their ``step_<N>`` folder) with :func:`advcore.ingest._reduce.reduce`:
a sample is one trainable trace, ``reward`` its reward, ``adv`` its advantage, its group the episode's
``group.id`` (and the agent's name, so that the roles of a multi-agent episode are grouped apart), and
each named reward function a component (``reward/<name>``). Of the two subsets, ``all`` is read when present: filtering drops the
tied groups this reader is there to see. An episode without a trace (it failed before producing
one) is no sample, counted in ``metadata["episodes_without_trace"]``; ``eval`` episodes are not read.
Lines hold whole trajectories: up to ``MAX_EPISODE_LINE`` characters are read; a longer line, or one
that is not an episode, is an error naming it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.ingest._parse import long_json_lines, number
from advcore.ingest._reduce import reduce
from advcore.ingest._text import open_text
from advcore.ingest._format import Format
from advcore.model import IngestError, RawLog

NAME = "prime_rl"
FILE_NAME = "traces.jsonl"
#: ``step_<N>`` folders under ``rollouts``.
STEP_FOLDER = re.compile(r"step_(\d+)")
#: The subsets read, in order of preference.
SUBSETS = ("all", "effective")
#: The longest episode line read (characters): a long agentic trajectory with every message.
MAX_EPISODE_LINE = 64 * 1024 * 1024


def is_step_file(path: Path) -> bool:
    """Whether ``path`` lies where prime-rl writes a step's episodes (``step_<N>/<kind>/<subset>/traces.jsonl``)."""
    parts = path.parts
    return (len(parts) >= 4 and path.name == FILE_NAME and parts[-2] in SUBSETS and parts[-3] in ("train", "eval")
            and STEP_FOLDER.fullmatch(parts[-4]) is not None)


def rollouts_folder(path: Path) -> Path:
    """The folder of ``step_<N>`` folders a step file (:func:`is_step_file`) belongs to."""
    return path.parents[3]


def _step_files(path: Path) -> list[tuple[int, Path]]:
    """(step, file) of the training episodes under ``path`` (a rollouts folder, or one step file), the
    preferred subset of each step, in step order."""
    if not path.is_dir():
        m = STEP_FOLDER.fullmatch(path.parts[-4]) if is_step_file(path) else None
        return [(int(m.group(1)) if m else 0, path)]
    out = []
    for folder in path.iterdir():
        m = STEP_FOLDER.fullmatch(folder.name)
        if m is None or not folder.is_dir():
            continue
        found = next((f for subset in SUBSETS if (f := folder / "train" / subset / FILE_NAME).is_file()), None)
        if found is not None:
            out.append((int(m.group(1)), found))
    return sorted(out)


def _is_episode(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("traces"), list) and "task" in obj


def sniff(path: Path, head: str | None) -> bool:
    files = _step_files(path) if path.is_dir() else ([(0, path)] if is_step_file(path) else [])
    for _, f in files[:3]:
        try:
            with open_text(f) as text:
                line = text.readline(MAX_EPISODE_LINE)
            if _is_episode(json.loads(line)):
                return True
        except (OSError, ValueError):
            continue
    return False


def _reward(trace: dict[str, Any]) -> tuple[float | None, dict[str, float]]:
    """A trace's reward (the sum of its reward functions' ``score x weight``) and each function's value."""
    parts: dict[str, float] = {}
    rewards = trace.get("rewards")
    for name, r in (rewards.items() if isinstance(rewards, dict) else ()):
        if not isinstance(r, dict):
            continue  # a reward function that gave no value
        score, weight = number(r.get("score")), number(r.get("weight", 1.0))
        if score is not None and weight is not None:
            parts[str(name)] = score * weight
    return (sum(parts.values()) if parts else None), parts


def read(path: Path) -> RawLog:
    """Read a rollouts folder or one ``traces.jsonl``; see the module docstring."""
    path = Path(path)
    errors: list[IngestError] = []
    rows: list[dict[str, Any]] = []
    no_trace = 0
    components: dict[str, None] = {}
    files = _step_files(path)
    for step, f in files:
        for n, episode in long_json_lines(f, MAX_EPISODE_LINE, errors):
            if not _is_episode(episode):
                errors.append(IngestError(str(f), "not a verifiers episode (expected task and traces)", n))
                continue
            group = episode.get("group")
            group_id = group.get("id") if isinstance(group, dict) else None
            trainable = [t for t in episode["traces"] if isinstance(t, dict)
                         and (t.get("agent") or {}).get("trainable", True) is not False]
            if not trainable:
                no_trace += 1
            for trace in trainable:
                reward, parts = _reward(trace)
                info = trace.get("info")
                agent = (trace.get("agent") or {}).get("name", "agent")
                components.update(dict.fromkeys(parts))
                rows.append({"step": step, "group": None if group_id is None else f"{group_id}/{agent}",
                             "reward": reward, "adv": number(info.get("advantage")) if isinstance(info, dict) else None,
                             **{f"_r_{k}": v for k, v in parts.items()}})
    if not rows:
        if not errors:
            errors.append(IngestError(str(path), "no training episodes (no step_<N>/train/{all,effective}/traces.jsonl "
                                                 "with episode lines)"))
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}), errors=tuple(errors))
    extra = [f"_r_{k}" for k in components] if len(components) > 1 else []
    schema = {"step": pl.Int64, "group": pl.String, "reward": pl.Float64, "adv": pl.Float64,
              **{c: pl.Float64 for c in extra}}
    frame = pl.DataFrame([{c: r.get(c) for c in schema} for r in rows], schema=schema, orient="row")
    raw = reduce(frame, layout=NAME, reward_col="reward", group_col="group", extra=extra, trainer="prime_rl",
                 errors=errors, format=NAME, metadata={"files": len(files), "episodes_without_trace": no_trace})
    renamed = {f"reward/{c}": f"reward/{c.removeprefix('_r_')}" for c in extra}
    return RawLog(raw.format, raw.frame.rename(renamed), trainer=raw.trainer, trace=raw.trace,
                  metadata=raw.metadata, errors=raw.errors)


FORMAT = Format(NAME, sniff, read, reads_folders=True, per_sample=True)
