"""CleanRL-style console lines: one line per finished episode, ``global_step=N, episodic_return=R``.

Who prints them:

* CleanRL (vwxyzjn/cleanrl, checked at commit fe8d8a0): ``ppo.py``, ``ppo_continuous_action.py``,
  ``ppo_atari.py``, ``ppo_atari_lstm.py``, ``ppo_procgen.py``, ``rpo_continuous_action.py``,
  ``dqn.py``, ``c51.py``, ``sac_continuous_action.py``, ``td3_continuous_action.py``,
  ``ddpg_continuous_action.py``, ``pqn.py`` and their ``_jax``/Atari variants print
  ``print(f"global_step={global_step}, episodic_return={info['episode']['r']}")`` for each episode
  that ended in the environment step; with gymnasium 0.29 ``info['episode']['r']`` is a length-1
  array, printed ``[-500.]``. ``ppo_atari_envpool_xla_jax(_scan).py`` print one
  ``avg_episodic_return=`` per update instead; ``ppo_rnd_envpool.py`` adds ``curiosity_reward=``.
* PureJaxRL (luchris429/purejaxrl, ``purejaxrl/ppo.py`` with ``DEBUG``) and the projects built on
  it print ``global step={t}, episodic return={r}`` (spaces, not underscores), some with
  ``, episode length={l}``; ``t`` is the environment's step counter times ``NUM_ENVS``.

Every ``key=value`` pair of such a line is read; keys are written with underscores
(``episodic return`` -> ``episodic_return``) so both spellings meet one alias. A value is a number,
a length-1 array (``[-500.]``) or a tensor/numpy wrapper; anything else (an array of several values,
text) costs that value (null). The lines of one global step (the episodes that ended in one
vectorised environment step), printed one after the other, are averaged into one row (a row is a step, as everywhere in advcore; ``metadata["episodes"]`` counts
the lines read); a step counter that starts again (a second run appended) makes phases.
Trainer ``cleanrl``: the alias table reads ``episodic_return`` (and ``avg_episodic_return``) as
``reward_mean``, the mean return of the episodes that ended at the step. A line that starts as
an episode line but is cut off or malformed (``global_step=16, episodic_ret``) is an
:class:`IngestError` naming the line; lines with a step and no ``...return`` key (``TrainOutput(
global_step=...)``, a ``global_step=N, SPS=M`` line) are not episodes and are skipped, as are the
``SPS: N`` lines CleanRL prints once per update.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest._text import read_text, readable_lines
from advcore.ingest._parse import by_step, clean, number, steps_frame
from advcore.ingest._format import Format
from advcore.ingest.formats import tqdm_bar

NAME = "cleanrl_console"

#: an episode line, after any logger prefix (not ``TrainOutput(global_step=...``)
_STEP = re.compile(r"(?:^|(?<=[\s:\]]))global[ _]step\s*=\s*(?P<step>[^,\s]*)(?P<rest>.*)$")
#: ``, key=value`` pairs: keys may hold spaces (``episodic return``) and dashes (``0-episodic_return``)
#: and values brackets and parentheses (``[-500.]``, ``tensor([1.], device='cuda:0')``)
# matched at one position at a time (never searched), possessive where a space run could be split
# two ways: linear on any line
_PAIR = re.compile(r"\s*+,\s*+(?P<key>[A-Za-z0-9_][\w.\-/]*+(?: ++[\w.\-/]++)*+) *+=\s*+"
                   r"(?P<value>(?:\[[^\]]*\]|\((?:[^()]|\([^()]*\))*\)|[^,\[(])*)")


def _episode(line: str) -> tuple[float | None, dict[str, str]] | None:
    """The step and the ``key=value`` pairs of an episode line; ``(None, {})`` for a line that starts
    as one but is cut or malformed; None for any other line (no step, or no ``...return`` key)."""
    m = _STEP.search(clean(line.rstrip("\r")).strip())
    if m is None:
        return None
    rest = m.group("rest").rstrip()
    pairs: dict[str, str] = {}
    end = 0
    while end < len(rest) and (p := _PAIR.match(rest, end)) is not None and p.end() > end:
        pairs[p.group("key").strip().replace(" ", "_")] = p.group("value").strip()
        end = p.end()
    step = number(m.group("step"))
    if end != len(rest) or not pairs or step is None or not math.isfinite(step) or step != int(step):
        return None, {}
    if not any(k.endswith("return") for k in pairs):
        return None
    return step, pairs


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    # a tqdm bar whose description reads ``global_step=N, episodic_return=R`` is the bar's (h257's Squint console)
    return any(ep is not None and ep[0] is not None and not tqdm_bar.is_bar(line)
               for line in head.splitlines() if "step" in line for ep in (_episode(line),))


def read(path: Path) -> RawLog:
    text = read_text(path)
    # Episodes of one step are printed together (one environment step, one update's batch): a run of
    # lines with the same step is one row, so a log of two runs keeps both (as phases).
    episodes: list[tuple[int, dict[str, float | None]]] = []
    errors: list[IngestError] = []
    for n, line in readable_lines(enumerate(text.split("\n"), start=1), path, errors):
        if "step" not in line:
            continue
        ep = _episode(line)
        if ep is None:
            continue
        step, pairs = ep
        if step is None:
            errors.append(IngestError(str(path), "CleanRL console: expected 'global_step=N, key=value, ...'; the line "
                                      "is truncated or malformed", n))
            continue
        episodes.append((int(step), {k: number(v) for k, v in pairs.items()}))
    runs = by_step(episodes)
    if not runs:
        errors.append(IngestError(str(path), "CleanRL console: no 'global_step=N, episodic_return=R' line found"))
        return RawLog(NAME, pl.DataFrame(), trainer="cleanrl", errors=tuple(errors))
    frame = steps_frame(runs)
    meta: dict[str, Any] = {"episodes": len(episodes),
                            "steps_with_several_episodes": sum(len(e) > 1 for _, e in runs)}
    return RawLog(NAME, frame, trainer="cleanrl", metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
