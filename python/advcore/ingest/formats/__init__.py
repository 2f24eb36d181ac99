"""One module per log format. Each has ``NAME``, ``sniff(path, head) -> bool`` (``head`` is the
file's first 64 KiB as text, decoded by :func:`advcore.ingest._text.decode_head` as the readers decode
the whole file with :mod:`advcore.ingest._text`, or None for binary content) and ``read(path) -> RawLog``.
``ORDER`` is the detection order: the most specific formats first. Optional flags:
``READS_FOLDERS`` (a folder is one run), ``TAKES_ROLLOUT_N`` (``read`` takes ``rollout_n``) and
``MANY_RUNS`` (a tracking store: ``read_runs(path) -> list[RawLog]``, one per stored run)."""

from __future__ import annotations

from types import ModuleType

from advcore.ingest.formats import trainer_state, trl_completions, trl_rollouts_md
from advcore.ingest.formats import openrlhf, samples, simplevla, tensorboard, trace, verl_console, verl_jsonl
from advcore.ingest.formats import verl_rollouts
from advcore.ingest.formats import columnar_json, csv_table, plain, trl_console, wandb
from advcore.ingest.formats import cleanrl_console, halos_console, json_records, notebook, printed, sample_factory
from advcore.ingest.formats import rl4lms, sb3_console
from advcore.ingest.formats import text_table
from advcore.ingest.formats import mlflow_store, nemo_rl, trackio_db

#: Detection order: the first module whose ``sniff`` accepts a file reads it (specific formats first:
#: the SQLite tracking stores, which only binary files can be; a notebook before everything, as its outputs may hold any console text; columnar JSON takes any
#: object of arrays and hands one whose arrays differ in length to json_records after parsing it
#: once; OpenRLHF, SB3, CleanRL, Sample Factory, HALOs and RL4LMs consoles before TRL's,
#: whose dict lines may follow any prefix, ``Global step N:`` included; lists of records without a
#: ``step`` before ``trainer_state``, which takes any list of objects; a hand-written loop's printed
#: progress after every named console and before CSV, whose sniffer would take a tab-separated line; a
#: blank-aligned text table after CSV, so that a tab-separated file stays CSV's).
ORDER: list[ModuleType] = [
    mlflow_store, trackio_db, notebook, trl_rollouts_md, trl_completions, nemo_rl, wandb, json_records, columnar_json, simplevla, openrlhf,
    sb3_console, cleanrl_console, sample_factory, halos_console, rl4lms, trl_console, trainer_state, verl_jsonl, trace, samples, verl_rollouts, verl_console,
    tensorboard, printed, csv_table, text_table, plain,
]
BY_NAME: dict[str, ModuleType] = {m.NAME: m for m in ORDER}
