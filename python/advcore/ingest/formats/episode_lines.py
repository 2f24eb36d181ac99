"""Per-episode lines of step rewards: ``Episode: 12,0.83,0.0,0.93,-0.5,``, the episode's number after a
label, then the reward of each of its steps, comma-separated (a trailing comma allowed).

A hand-written loop that writes ``f"Episode: {i}," + ",".join(map(str, rewards))`` once per episode
(h205-handwritten-dqn-airsim-drone: a DQN drone in AirSim, ``rewards_final.csv``, 2,000 episodes of 1 to
30 steps). One row per episode: ``step`` is the episode number, ``reward_mean`` the episode's return (the
sum of its step rewards, undiscounted; none for an episode that ended before its first step, a line
``Episode: 165,`` with no reward), ``metadata["reward"]`` says so, and ``metadata["steps_per_episode"]``
gives the median episode length. A line that is not of this form costs that line (an error naming it),
not the file.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import polars as pl

from advcore._escape import excerpt
from advcore.ingest._format import Format
from advcore.ingest._parse import NUMBER
from advcore.ingest._text import read_text, readable_lines
from advcore.model import IngestError, RawLog

NAME = "episode_lines"

#: possessive throughout: a long line that is not of this form fails in time linear in its length
_LINE = re.compile(rf"^[ \t]*+episode[ \t]*+:?+[ \t]*+(\d++)[ \t]*+((?:,[ \t]*+(?:{NUMBER})[ \t]*+)*+),?+[ \t\r]*+$",
                   re.IGNORECASE)
#: fewest lines of the form among a file's first non-empty lines (and at least three quarters of them)
MIN_LINES = 2


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    lines = [line for line in head.split("\n")[:-1] if line.strip()]  # the last line of a head may be cut
    matched = sum(1 for line in lines[:20] if _LINE.match(line))  # one odd line costs the line, not the file
    return matched >= MIN_LINES and matched >= 0.75 * min(len(lines), 20)


def read(path: Path) -> RawLog:
    errors: list[IngestError] = []
    steps: list[int] = []
    returns: list[float | None] = []
    lengths: list[int] = []
    for n, line in readable_lines(enumerate(read_text(path).split("\n"), start=1), path, errors):
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m is None:
            errors.append(IngestError(str(path), f"expected 'Episode: N,reward,reward,...', got {excerpt(line)}", n))
            continue
        rewards = [float(v) for v in m.group(2).split(",") if v.strip()]
        steps.append(int(m.group(1)))
        returns.append(sum(rewards) if rewards else None)
        lengths.append(len(rewards))
    if not steps:
        errors.append(IngestError(str(path), "no 'Episode: N,reward,...' line found"))
        return RawLog(NAME, pl.DataFrame(), errors=tuple(errors))
    frame = pl.DataFrame({"step": pl.Series(steps, dtype=pl.Int64),
                          "reward_mean": pl.Series(returns, dtype=pl.Float64)})
    meta = {"reward": "the episode's return: the sum of the step rewards on its line (undiscounted)",
            "steps_per_episode": statistics.median(lengths)}
    return RawLog(NAME, frame, metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
