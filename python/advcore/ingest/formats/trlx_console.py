"""The console of a trlx run (CarperAI/trlx, PPO and ILQL on language models): its training bar and its evaluation
titles.

Who writes what (trlx/trainer/accelerate_base_trainer.py, ``learn`` and ``evaluate``):

* a tqdm bar over the iterations (``total_steps``) whose description holds the loss statistics of the last iteration,
  two decimals each: ``[losses/total_loss: 0.13 | losses/policy_loss: -0.01 | losses/value_loss: 0.72]:   4%|█▍
  | 128/3200 [15:11<5:36:04,  6.56s/it]``, redrawn in place with carriage returns. Its count is the iteration; at a
  count drawn twice (the bar's update, then the next iteration's description) the first drawing is the count's;
* every ``eval_interval`` iterations, and once before the first, a rich table of samples titled with the evaluation's
  statistics whose names begin with ``reward`` or ``metrics``: ``Evaluation #10 reward/mean: -0.471``. The
  evaluation runs before the bar is drawn at its iteration, so it is dated one past the count last drawn (0 before
  any). The console holds no training reward: the evaluation prompts' mean reward is the run's reward curve.

Rollout and generation bars (``[rollout 16 / 128]``, ``[generation sweep 1/1 | eval batch 63/63]``) are not the
training bar and are not read. Detection: a trlx training bar or evaluation title in the file's head; a slurm log
whose launch prints a long preamble is sniffed again on its first MiB (:func:`advcore.ingest.detect`).
"""

from __future__ import annotations

import re
from pathlib import Path

from advcore.ingest import _text
from advcore.ingest._format import Format
from advcore.ingest._parse import ANSI, NUMBER, by_step, number, steps_frame
from advcore.model import IngestError, RawLog

NAME = "trlx_console"

#: The training bar: its description of ``loss...`` statistics, the percentage and meter, then the count.
_BAR = re.compile(r"\[(?P<desc>loss[^\]\n]{0,2000}+)\]:[ \t]*+\d{1,3}+%\|[^|\n]{0,400}+\|[ \t]*+"
                  r"(?P<n>\d{1,12}+)/\d{1,12}+")
#: An evaluation's title: its number, then ``name: value`` statistics.
_TITLE = re.compile(r"Evaluation #(?P<k>\d{1,9}+)(?P<stats>(?:[ \t]*+[\w/.@\-]{1,120}+:[ \t]*+\S{1,40}+)*+)")
_PAIR = re.compile(rf"(?P<key>[\w/.@\-]{{1,120}}+):[ \t]*+(?P<value>{NUMBER})(?![\w.])", re.IGNORECASE)


def sniff(path: Path, head: str | None) -> bool:
    if head is None or ("[loss" not in head and "Evaluation #" not in head):
        return False
    return _BAR.search(head) is not None or any(
        _PAIR.search(m.group("stats")) for m in _TITLE.finditer(head) if "reward" in m.group("stats"))


def _pairs(text: str) -> dict[str, float | None]:
    return {m.group("key"): number(m.group("value")) for m in _PAIR.finditer(text)}


def read(path: Path) -> RawLog:
    errors: list[IngestError] = []
    numbered = [(n, line) for n, line in enumerate(_text.read_text(path).split("\n"), start=1)]
    pieces = [(n, piece) for n, line in numbered for piece in line.split("\r")]
    records: list[tuple[int, dict[str, float | None]]] = []
    drawn: set[int] = set()
    last: int | None = None  # the count the training bar last drew
    evaluations = 0
    for _, piece in _text.readable_lines(pieces, path, errors):
        if "[loss" not in piece and "Evaluation #" not in piece:
            continue
        text = ANSI.sub("", piece)
        for bar in _BAR.finditer(text):
            count = int(bar.group("n"))
            last = count
            if count not in drawn:
                drawn.add(count)
                records.append((count, _pairs(bar.group("desc"))))
        if (title := _TITLE.search(text)) is not None and (stats := _pairs(title.group("stats"))):
            evaluations += 1
            records.append((0 if last is None else last + 1, stats))
    if not records:
        errors.append(IngestError(str(path), "trlx console: no training bar ('[losses/...]: N%|...| n/total') and no "
                                             "'Evaluation #N reward/mean: x' title"))
    records.sort(key=lambda r: r[0])  # an evaluation dated one past the count joins that count's drawing
    meta = {"iterations": len(drawn), "evaluations": evaluations}
    return RawLog(NAME, steps_frame(by_step(records)), trainer="trlx", metadata=meta, errors=tuple(errors))


FORMAT = Format(NAME, sniff, read)
