"""NeMo-RL's per-sample training dumps: ``<log_dir>/train_data_step<N>.jsonl``.

Written by NeMo-RL's GRPO (and PPO, distillation) loop at every step unless turned off
(``nemo_rl/algorithms/grpo.py`` and ``Logger.log_batched_dict_as_jsonl`` in ``nemo_rl/utils/
logger.py``, NeMo-RL 0.6.0, commit 7ea279a): one JSON object per sample of the training batch, each
field a length-1 slice of the batch (``"rewards": [1.0]``, ``"advantages": [[0.0, ..., 0.7, 0.7]]``
per token), with ``content``, ``input_lengths``, ``token_ids``, ``token_loss_mask`` (1 on the tokens
the loss trains, the response), ``sample_loss_mask``, ``generation_logprobs``, ``prev_logprobs`` and
the sample's ``idx``. ``N`` is the step (1-based). With dynamic sampling, ``rewards`` is the
sample's total reward and ``filtered_rewards`` what the advantage saw.

``read(path)`` takes one such file or a folder of them (read in step order as one run) and reduces
the samples per step with :func:`advcore.ingest._reduce.reduce`:

* ``reward``: ``rewards``;
* ``adv``: the mean of ``advantages`` over the tokens ``token_loss_mask`` trains (GRPO's advantage is
  one value per sample, broadcast over its tokens);
* ``group``: NeMo-RL repeats each prompt ``num_generations_per_prompt`` times in a row
  (``repeat_interleave``), so a group is a block of consecutive samples. Without ``rollout_n``, the
  blocks are the runs of samples whose prompt (the ``token_ids`` before the first trained token) is
  identical, cut into pieces of the greatest common divisor of all run lengths; with ``rollout_n``
  (``num_generations_per_prompt``), blocks of exactly that size.

Lines are long by nature (every token's ids and log-probabilities): up to ``MAX_SAMPLE_LINE``
characters are read; a longer line, or one that is not such an object, is an error naming it.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from advcore.errors import AdvcoreError
from advcore.ingest._text import open_text
from advcore.ingest._reduce import reduce
from advcore.ingest._parse import long_json_lines, number, step_files
from advcore.model import IngestError, RawLog
from advcore.ingest._format import Format

NAME = "nemo_rl"
#: File names NeMo-RL gives its per-step dumps.
FILE_NAME = re.compile(r"train_data_step(\d+)\.jsonl")
#: The longest sample line read (characters): a 32k-token response with its ids and two
#: log-probability lists is about 2 MB.
MAX_SAMPLE_LINE = 64 * 1024 * 1024
_KEYS = frozenset({"rewards", "advantages", "token_loss_mask"})


def is_step_file(path: Path) -> bool:
    """Whether ``path`` is named as one of NeMo-RL's per-step training dumps."""
    return FILE_NAME.fullmatch(path.name) is not None


def _files(path: Path) -> list[Path]:
    return step_files(path, FILE_NAME)


def _first_keys(path: Path) -> set[str]:
    try:
        with open_text(path) as f:
            line = f.readline(MAX_SAMPLE_LINE)
        obj = json.loads(line)
    except (OSError, ValueError):
        return set()
    return set(obj) if isinstance(obj, dict) else set()


def sniff(path: Path, head: str | None) -> bool:
    if path.is_dir():
        return any(_KEYS <= _first_keys(f) for f in _files(path)[:4])
    return head is not None and is_step_file(path) and _KEYS <= _first_keys(path)


def _flat(v: Any) -> list[Any]:
    """A length-1 batch slice unwrapped (``[[a, b]]`` -> ``[a, b]``, ``[r]`` -> ``[r]``)."""
    while isinstance(v, list) and len(v) == 1 and isinstance(v[0], list):
        v = v[0]
    return v if isinstance(v, list) else [v]


def _sample(obj: dict[str, Any]) -> tuple[float | None, float | None, int | None] | None:
    """(reward, advantage, prompt hash) of one sample, or None when it is not a NeMo-RL sample."""
    if not _KEYS <= set(obj):
        return None
    rewards = _flat(obj["rewards"])
    reward = number(rewards[0]) if len(rewards) == 1 else None
    mask = [number(m) or 0.0 for m in _flat(obj["token_loss_mask"])]
    adv_tokens = [number(a) for a in _flat(obj["advantages"])]
    trained = [a for a, m in zip(adv_tokens, mask, strict=False) if m and a is not None]
    adv = math.fsum(trained) / len(trained) if trained else None
    first = next((i for i, m in enumerate(mask) if m), len(mask))
    prompt = hash(tuple(_flat(obj["token_ids"])[:first])) if "token_ids" in obj else None
    return reward, adv, prompt


def _runs(keys: list[int | None]) -> list[int]:
    lengths: list[int] = []
    for i, k in enumerate(keys):
        if i and k == keys[i - 1]:
            lengths[-1] += 1
        else:
            lengths.append(1)
    return lengths


def read(path: Path, *, rollout_n: int | None = None) -> RawLog:
    """Read one ``train_data_step<N>.jsonl`` or a folder of them; see the module docstring. Raises
    :class:`AdvcoreError` for a ``rollout_n`` that is not a positive int."""
    path = Path(path)
    if rollout_n is not None and (isinstance(rollout_n, bool) or not isinstance(rollout_n, int) or rollout_n < 1):
        raise AdvcoreError(f"rollout_n must be a positive int (num_generations_per_prompt), got {rollout_n!r}")
    empty = pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)})
    errors: list[IngestError] = []
    steps: list[tuple[int, list[tuple[float | None, float | None, int | None]]]] = []
    for f in _files(path):
        m = FILE_NAME.fullmatch(f.name)
        step = int(m.group(1)) if m else 0
        rows = []
        for n, obj in long_json_lines(f, MAX_SAMPLE_LINE, errors):
            sample = _sample(obj) if isinstance(obj, dict) else None
            if sample is None:
                errors.append(IngestError(str(f), "not a NeMo-RL sample (expected rewards, advantages, "
                                                  "token_loss_mask)", n))
                continue
            rows.append(sample)
        if rows:
            steps.append((step, rows))
    if not steps:
        if not errors:
            errors.append(IngestError(str(path), "no samples (no train_data_step<N>.jsonl with sample lines)"))
        return RawLog(NAME, empty, errors=tuple(errors))
    if rollout_n is None and any(r[2] is None for _, rows in steps for r in rows):
        size = 0
        grouping = "no token_ids to tell the prompts apart: pass rollout_n (advcore scan --rollout-n N)"
    elif rollout_n is None:
        size = math.gcd(*[n for _, rows in steps for n in _runs([r[2] for r in rows])])
        grouping = f"runs of identical consecutive prompts, cut into blocks of {size} (gcd of the run lengths)"
    else:
        size, grouping = rollout_n, f"consecutive blocks of rollout_n={rollout_n}"
    frames = []
    for step, rows in steps:
        grouped = size > 0 and len(rows) % size == 0
        if size and not grouped:
            errors.append(IngestError(str(path), f"step {step}: {len(rows)} samples are not a whole number of "
                                                 f"groups of {size}; no group statistics"))
        frames.append(pl.DataFrame({
            "step": [step] * len(rows),
            "group": [i // size for i in range(len(rows))] if grouped else [None] * len(rows),
            "reward": [r[0] for r in rows],
            "adv": [r[1] for r in rows],
        }, schema={"step": pl.Int64, "group": pl.Int64, "reward": pl.Float64, "adv": pl.Float64}))
    meta: dict[str, Any] = {"files": len(_files(path)), "groups": grouping, **({} if size else {"ungrouped": grouping})}
    return reduce(pl.concat(frames), layout=NAME, reward_col="reward", group_col="group", extra=[],
                  trainer="nemo_rl", errors=errors, format=NAME, metadata=meta)


FORMAT = Format(NAME, sniff, read, reads_folders=True, takes_rollout_n=True, per_sample=True)
