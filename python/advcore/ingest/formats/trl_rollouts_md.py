"""Per-sample rollout dumps in Markdown, as the TRL ``GRPOTrainer`` fork "DAPO-VLM"
(JuncyLu/trl_DAPO, ``training_logs/<run>/rollout_results.md``, October 2025) writes them.

The file is a sequence of sections::

    ## === Rollout Step 7 ===
    Step: 6/29790 | 2025-10-22 12:06:40
    ### Overall Statistics            (a table: "Total Reward Mean | 2.500 ± 1.500", ...)
    ### Sample 1
    **Prompt:** <text, possibly over several lines>
    **Completion:** <text, possibly over several lines>
    **Solution:** A
    **Rewards:** accuracy=1.000, format=0.000, mdi=-1.000, total=3.000
    **Detailed Metrics:**             (a fenced JSON block of per-layer attention metrics)

One section per optimizer step: section ``N`` is the batch generated at ``global_step`` N-1 (the
``Step:`` line) and trained in optimizer step N, the step TRL logs its metrics under (its console
``frac_reward_zero_std`` at step 10 is the mean over sections 1-10). ``step`` is therefore the
section number. The samples become the canonical long frame of SPEC section 4: ``group`` is the
prompt text within the section (TRL repeats each prompt ``num_generations`` times), ``reward`` is
``total`` and the other ``name=value`` pairs of the Rewards line are per-sample components
(reported as ``reward/<name>`` means). The frame is then reduced per step by
:func:`advcore.ingest._reduce.reduce`, the same code as every per-sample dump.

The file is read line by line (linear in its size); only the prompt text and the reward numbers
of each sample are kept. A section with a sample whose Rewards line is missing or does not parse
(no ``total=<number>``) is left out as a whole, with an :class:`IngestError` naming the line; the
other sections load. A non-finite ``total`` (``nan``) is a missing reward (null), not 0.
``metadata``: ``planned_steps`` (the ``/T`` of the ``Step:`` lines), ``sections``, the group size
per section (``group_sizes``: sorted distinct values) and the samples-reduction keys.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore._escape import excerpt
from advcore.model import IngestError, RawLog
from advcore.ingest._text import open_text
from advcore.ingest._reduce import reduce
from advcore.ingest._format import Format

NAME = "trl_rollouts_md"

_SECTION = re.compile(r"^## === Rollout Step (\d+) ===\s*$")
_STEP_LINE = re.compile(r"^Step: (\d+)/(\d+)\b")
_SAMPLE = re.compile(r"^### Sample (\d+)\s*$")
_FIELD = re.compile(r"^\*\*(Prompt|Completion|Solution|Rewards|Detailed Metrics):\*\*\s?(.*)$")
_PAIR = re.compile(r"^\s*([A-Za-z_][\w/.-]*)=(\S+?)\s*$")
_NUMBER = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$|^[-+]?(?:nan|inf)$", re.I)


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    return (re.search(r"^## === Rollout Step \d+ ===\s*$", head, re.M) is not None
            and re.search(r"^### Sample \d+\s*$", head, re.M) is not None
            and "**Prompt:**" in head)


def parse_rewards(text: str) -> dict[str, float] | None:
    """``accuracy=1.000, format=0.000, mdi=-1.000, total=3.000`` as floats, or None when a pair
    does not parse or ``total`` is absent."""
    out: dict[str, float] = {}
    for part in text.split(","):
        m = _PAIR.match(part)
        if m is None or not _NUMBER.match(m.group(2)):
            return None
        out[m.group(1)] = float(m.group(2))
    return out if "total" in out else None


class _Section:
    __slots__ = ("step", "line", "prompts", "rewards", "bad", "field", "buffer", "sample_line")

    def __init__(self, step: int, line: int) -> None:
        self.step = step
        self.line = line
        self.prompts: list[str] = []
        self.rewards: list[dict[str, float]] = []
        self.bad: IngestError | None = None
        self.field: str | None = None
        self.buffer: list[str] = []
        self.sample_line = 0


def _parse(path: Path) -> tuple[list[_Section], list[IngestError], int | None]:
    sections: list[_Section] = []
    errors: list[IngestError] = []
    planned: int | None = None
    cur: _Section | None = None
    in_sample = False
    in_json = False

    def end_sample(sec: _Section) -> None:
        # a sample is complete once its Rewards line parsed; one without it spoils the section
        if sec.field == "Prompt":
            sec.prompts.append("\n".join(sec.buffer).strip())
        if len(sec.prompts) != len(sec.rewards) and sec.bad is None:
            sec.bad = IngestError(str(path), f"rollout step {sec.step}: sample without a parsable "
                                             "'**Rewards:** ... total=<number>' line", sec.sample_line)
        sec.field, sec.buffer = None, []

    with open_text(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip("\r\n")
            m = _SECTION.match(line)
            if m:
                if cur is not None and in_sample:
                    end_sample(cur)
                cur = _Section(int(m.group(1)), lineno)
                sections.append(cur)
                in_sample = in_json = False
                continue
            if cur is None:
                continue
            if in_json:
                in_json = not line.startswith("```") or line.startswith("```json")
                continue
            if cur.field in ("Prompt", "Completion", "Solution"):
                fm = _FIELD.match(line)
                if fm is None:
                    if cur.field == "Prompt":
                        cur.buffer.append(line)
                    continue
            else:
                fm = _FIELD.match(line) if in_sample else None
            if fm is None:
                sm = _SAMPLE.match(line)
                if sm:
                    if in_sample:
                        end_sample(cur)
                    in_sample, cur.sample_line = True, lineno
                elif not in_sample and planned is None and (pm := _STEP_LINE.match(line)):
                    planned = int(pm.group(2))
                elif cur.field == "Detailed Metrics" and line.startswith("```"):
                    in_json = True
                continue
            name, rest = fm.group(1), fm.group(2)
            if cur.field == "Prompt":
                cur.prompts.append("\n".join(cur.buffer).strip())
            cur.field, cur.buffer = name, []
            if name == "Prompt":
                cur.buffer = [rest]
            elif name == "Rewards":
                rewards = parse_rewards(rest)
                if rewards is None or len(cur.rewards) != len(cur.prompts) - 1:
                    if cur.bad is None:
                        cur.bad = IngestError(str(path), f"rollout step {cur.step}: expected '**Rewards:** name=number, "
                                                         f"..., total=<number>' once per sample, got {excerpt(rest, 80)}",
                                              lineno)
                else:
                    cur.rewards.append(rewards)
    if cur is not None and in_sample:
        end_sample(cur)
    for sec in sections:
        if sec.bad is None and not sec.prompts:
            sec.bad = IngestError(str(path), f"rollout step {sec.step}: section without samples", sec.line)
        if sec.bad is not None:
            errors.append(sec.bad)
    return sections, errors, planned


def read(path: Path) -> RawLog:
    """Read ``rollout_results.md`` into per-step metrics (see the module docstring).

    Returns a :class:`RawLog` (format ``trl_rollouts_md``, trainer ``trl``) with one row per
    section that parsed: ``step`` (Int64, the section number), ``reward_mean``/``reward_std``/
    ``reward_min``/``reward_max`` of ``total`` (ddof 0), ``reward_std_within`` (mean per-group
    std, ddof 1, as TRL's ``reward_std`` up to v0.26), ``zero_variance_group_frac`` (as TRL's
    ``frac_reward_zero_std``), ``reward_within_var_frac``, ``n_groups``, ``n_samples`` and
    ``reward/<component>`` means (Float64). Malformed sections are in ``errors`` with their line.
    """
    path = Path(path)
    sections, errors, planned = _parse(path)
    good = [s for s in sections if s.bad is None]
    if not good:
        if not errors:
            errors.append(IngestError(str(path), "no '## === Rollout Step N ===' section with samples"))
        return RawLog(NAME, pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}), trainer="trl",
                      errors=tuple(errors))
    components: dict[str, None] = {}
    for s in good:
        for r in s.rewards:
            components.update(dict.fromkeys(k for k in r if k != "total"))
    extra = [c for c in components if c not in ("step", "group", "reward")]
    cols: dict[str, list[Any]] = {"step": [], "group": [], "reward": [], **{c: [] for c in extra}}
    sizes: set[int] = set()
    for s in good:
        for prompt, r in zip(s.prompts, s.rewards, strict=True):
            cols["step"].append(s.step)
            cols["group"].append(prompt)
            total = r["total"]
            cols["reward"].append(total if math.isfinite(total) else None)
            for c in extra:
                v = r.get(c)
                cols[c].append(v if v is not None and math.isfinite(v) else None)
        counts: dict[str, int] = {}
        for p in s.prompts:
            counts[p] = counts.get(p, 0) + 1
        sizes.update(counts.values())
    frame = pl.DataFrame({"step": pl.Series(cols["step"], dtype=pl.Int64),
                          "group": pl.Series(cols["group"], dtype=pl.String),
                          **{c: pl.Series(cols[c], dtype=pl.Float64) for c in ["reward", *extra]}})
    meta: dict[str, Any] = {"sections": len(sections), "group_sizes": sorted(sizes),
                            "groups": "identical prompt text within a rollout step"}
    if planned is not None:
        meta["planned_steps"] = planned
    return reduce(frame, layout="trl_rollouts_md", reward_col="reward", group_col="group", extra=extra,
                  trainer="trl", errors=errors, format=NAME, metadata=meta)


FORMAT = Format(NAME, sniff, read, per_sample=True)
