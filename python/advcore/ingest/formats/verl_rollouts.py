"""verl's rollout dumps (``trainer.rollout_data_dir``): one ``<step>.jsonl`` per step, one sample per
line with ``input``, ``output``, ``score``, ``step`` and one field per reward component (as verl's
``RayPPOTrainer._dump_generations`` writes them), reduced per step by
:func:`advcore.ingest._reduce.reduce`.

The group of a sample is its prompt (identical ``input`` text). When every ``input`` of a step is
identical (a VLM whose image is not in the text), the prompt says nothing and the groups are taken
as consecutive blocks of the rollout ``n`` (verl repeats each prompt ``n`` times, interleaved);
``n`` must then be given (``read(path, rollout_n=64)``, ``advcore scan --rollout-n 64``), otherwise
the group statistics are left null and ``metadata["ungrouped"]`` says why. The reward is
``score``; the other numeric fields are reduced to ``reward/<name>`` means.
"""

from __future__ import annotations

from pathlib import Path

from advcore.ingest._parse import first_json_line
from advcore.ingest._reduce import reduce
from advcore.ingest.formats.samples import empty, load_samples
from advcore.model import RawLog
from advcore.ingest._format import Format

NAME = "verl_rollouts"

_REQUIRED = frozenset({"input", "output", "score", "step"})
#: Fields of a dump that are no reward component.
_NOT_COMPONENTS = _REQUIRED | {"gts", "request_id", "uid", "data_source"}


def sniff(path: Path, head: str | None) -> bool:
    first = first_json_line(head) if head is not None else None
    return first is not None and isinstance(first[1], dict) and _REQUIRED <= set(first[1])


def read(path: Path, *, rollout_n: int | None = None) -> RawLog:
    path = Path(path)
    frame, errors = load_samples(path, "verl rollout dump", _REQUIRED)
    if frame is None:
        return empty(NAME, errors)
    extra = [c for c in frame.columns if c not in _NOT_COMPONENTS and frame[c].dtype.is_numeric()]
    one_input = frame["input"].n_unique() == 1 and frame.height > 1
    return reduce(frame, format=NAME, layout="verl_rollout_dump", reward_col="score", group_col="input", extra=extra,
                  trainer="verl", rollout_n=rollout_n, prompt_key=True, errors=errors,
                  metadata={"groups": f"consecutive blocks of rollout_n={rollout_n}" if one_input and rollout_n
                            else "identical input text", "reward_components": extra})


FORMAT = Format(NAME, sniff, read, takes_rollout_n=True, per_sample=True)
