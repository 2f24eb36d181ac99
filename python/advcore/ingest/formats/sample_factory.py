"""Sample Factory console logs: a throughput line, then the policies' average episode reward.

Sample Factory (alex-petrenko/sample-factory; 1.x ``sample_factory/algorithms/appo/appo.py``, 2.x
``sample_factory/algo/runners/runner.py`` ``print_stats``, checked at commit 1894bd1) reports every
``report_interval`` seconds (5 by default), to the console and to ``train_dir/<experiment>/sf_log.txt``:

* ``Fps is (10 sec: 1643.5, 60 sec: 546.4, 300 sec: 333.3). Total num frames: 3096576. Throughput: 0:
  295.6. Samples: 3097408. Policy #0 lag: (min: 18.0, avg: 18.0, max: 18.0)``;
* ``Avg episode reward: [(0, '-89.471')]``: per policy, the mean return of its last episodes (the
  ``stats_avg`` most recent, 100 by default), once some episode has ended.

A W&B run's ``output.log`` holds the same lines behind colour codes and a ``[2025-07-01
20:33:47,587][166323]`` prefix (time and process id) before them. The step is the ``Total num
frames`` of the last throughput line (environment frames, counted with frame skip); the frame count
stays put between the learner's batches, so several reports share one step and are averaged (a row is
a step). Each policy's reward is a column: ``avg_episode_reward`` for policy 0 (the policy whose lag
the throughput line shows) and ``avg_episode_reward/<id>`` for the others, which PBT trains.
A reward line before any throughput line has no step and is skipped; one whose list does not parse
is an :class:`IngestError` naming the line. Trainer ``sample_factory``.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest._text import read_text, readable_lines
from advcore.ingest._parse import by_step, clean, number, steps_frame
from advcore.ingest._format import Format

NAME = "sample_factory"

# searched after the prefix is cleaned off; bounded digit runs: linear on any line
_FRAMES = re.compile(r"Fps is \(.{0,200}?\)\. Total num frames: (\d{1,20})\.")
_REWARDS = re.compile(r"Avg episode reward: (.*)$")
_POLICY = re.compile(r"\s*\((\d{1,6}), '([^']{0,64})'\)\s*(?:,|$)")


def _line(physical: str) -> str:
    return clean(physical.rstrip("\r"))


def _policies(listed: str) -> dict[str, float | None] | None:
    """``[(0, '-89.471'), (1, '2.0')]`` as columns; None when the list does not parse."""
    listed = listed.strip()
    if not (listed.startswith("[") and listed.endswith("]")):
        return None
    listed = listed[1:-1]
    out: dict[str, float | None] = {}
    at = 0
    while at < len(listed):
        m = _POLICY.match(listed, at)
        if m is None:
            return None
        out["avg_episode_reward" + ("" if m.group(1) == "0" else f"/{m.group(1)}")] = number(m.group(2))
        at = m.end()
    return out


def sniff(path: Path, head: str | None) -> bool:
    if head is None or "Total num frames" not in head:
        return False
    return any(_FRAMES.search(_line(line)) for line in head.splitlines() if "Total num frames" in line)


def read(path: Path) -> RawLog:
    reports: list[tuple[int, dict[str, float | None]]] = []
    errors: list[IngestError] = []
    frames: int | None = None
    for n, physical in readable_lines(enumerate(read_text(path).split("\n"), start=1), path, errors):
        if "Total num frames" in physical and (m := _FRAMES.search(_line(physical))) is not None:
            frames = int(m.group(1))
            continue
        if "Avg episode reward" not in physical or (m := _REWARDS.search(_line(physical))) is None:
            continue
        values = _policies(m.group(1))
        if values is None:
            errors.append(IngestError(str(path), "Sample Factory log: expected \"Avg episode reward: [(0, '1.5')]\", "
                                                 "the policies' list does not parse", n))
        elif frames is not None:
            reports.append((frames, values))
    if not reports:
        errors.append(IngestError(str(path), "Sample Factory log: no 'Avg episode reward' line after a "
                                             "'Total num frames' line"))
        return RawLog(NAME, pl.DataFrame(), trainer="sample_factory", errors=tuple(errors))
    return RawLog(NAME, steps_frame(by_step(reports)), trainer="sample_factory", metadata={"reports": len(reports)},
                  errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
