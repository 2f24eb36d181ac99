"""One module per log format, each declaring its :class:`~advcore.ingest._format.Format` record
(``FORMAT``: name, sniffer, reader, and whether it reads folders, takes ``rollout_n``, is per-sample
data or a store of many runs). A format module only parses: the parsing it shares with the others is
in :mod:`advcore.ingest._parse`, the per-sample reduction in :mod:`advcore.ingest._reduce`.
``ORDER`` lists the records in detection order, the most specific formats first."""

from __future__ import annotations

from advcore.ingest._format import Format
from advcore.ingest.formats import (cleanrl_console, columnar_json, csv_table, dict_lines, episode_lines, halos_console,
                                    json_records, mlflow_store, nemo_rl, notebook, numpy_arrays, openrlhf, plain, prime_rl, printed,
                                    rl4lms, rlinf_table, sample_factory, samples, sb3_console, simplevla, tensorboard,
                                    tensorboardx_json, text_table, tqdm_bar, trace_recording, trackio_db, trainer_state,
                                    trl_completions, trl_console, trl_rollouts_md, trlx_console, verl_console,
                                    verl_jsonl,
                                    verl_rollouts, wandb)

__all__ = ["BY_NAME", "ORDER", "PER_SAMPLE", "Format"]

#: Detection order: the first format whose ``sniff`` accepts a file reads it (specific formats first:
#: the SQLite tracking stores and NumPy's saved arrays, which only binary files can be; a notebook before the text formats, as
#: its outputs may hold any console text; tensorboardX's scalar export, an object of [wall_time, step,
#: value] lists, before the other JSON formats; columnar JSON takes any object of arrays and hands one
#: whose arrays differ in length to json_records after parsing it once; OpenRLHF, SB3, RLinf, CleanRL, Sample
#: Factory, HALOs, RL4LMs and trlx consoles before TRL's, whose dict lines may follow any prefix, ``Global
#: step N:`` included; any other printed metric dict after TRL's; lists of records without a ``step``
#: before ``trainer_state``, which takes any list of objects; a hand-written loop's per-episode lines of
#: step rewards, then its printed progress and its tqdm bar, after every named console and before CSV, whose sniffer
#: would take a tab-separated line; a blank-aligned text table after CSV, so that a tab-separated file
#: stays CSV's).
ORDER: list[Format] = [m.FORMAT for m in (
    mlflow_store, trackio_db, numpy_arrays, notebook, trl_rollouts_md, trl_completions, nemo_rl, prime_rl, wandb, tensorboardx_json,
    json_records, columnar_json,
    simplevla, openrlhf, sb3_console, rlinf_table, cleanrl_console, sample_factory, halos_console, rl4lms, trlx_console,
    trl_console, dict_lines,
    trainer_state, verl_jsonl, trace_recording, samples, verl_rollouts, verl_console, tensorboard, episode_lines,
    printed, tqdm_bar, csv_table, text_table, plain,
)]
BY_NAME: dict[str, Format] = {f.name: f for f in ORDER}
#: The names of the per-sample formats (their per-step values come from one step's samples).
PER_SAMPLE: frozenset[str] = frozenset(f.name for f in ORDER if f.per_sample)
