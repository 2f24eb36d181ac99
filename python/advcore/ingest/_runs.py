"""A run is a folder, not a file: the files of one run, read one by one, joined into one :class:`Run`.

A trainer often writes one run as several files side by side: a console log beside a per-sample
dump (TRL DAPO-VLM's ``run_terminal.md`` and ``rollout_results.md``), per-step metrics beside
per-group statistics (``update_metrics.csv`` and ``reward_group_statistics.csv``), a console beside
a JSON of per-micro-batch group counts. Judged file by file they get contradictory verdicts.

The rule (:func:`join_runs`): two files read from the **same folder** are of one run when

1. both were read (at least one step) and neither restarts its step counter (no ``phase``
   column) nor repeats a step, nor is a run of a tracking store (its runs are named, never joined);
2. their step ranges overlap (``max(first) <= min(last)``), or one file resumes the other: the same
   format, at least half of the smaller set of metrics in common, and the later file's first step
   at most ``RESUME_GAP`` (2) median step intervals after the earlier one's last (Sample Factory
   writes a new event file when a run resumes: frames 4,096 to 5.67 M, then 5.74 M to 194.65 M); or both are
   TensorBoard event files of one process (the host and pid in their names), alike, with no step in common,
   whatever their gaps (SB3's ``learn()`` called in a loop, one event file per call). A
   file that resumes another from a checkpoint taken before the other's last step (one format, half
   the metrics in common, beginning after the other's first step and ending after its last) is of its
   run even where the steps logged twice disagree: the resumed session's are kept, the earlier's from
   there on were undone (a verl-agent run crashed saving step 150 and resumed from step 100). A
   run's excerpts from far apart (TinyZero's early steps 2 to 122 every 40 and late steps 383 to 399)
   stay apart. A file without step numbers (TRL's console
   dicts with no progress bar to date them: the step is the order of the lines,
   ``metadata["step_inferred"]``) joins only a file with as many rows whose steps are ``1..n``: a
   console logged every 10 steps has 49 lines for 499 steps of a per-sample dump, and its line 5 is
   step 50, not 5 (TRL DAPO-VLM's ``run_terminal.md`` is dated by its progress bar, 10 to 490, and
   joins its ``rollout_results.md``);
3. files of the **same format** agree on every metric they both log: at the steps both have, at
   least ``AGREE_SHARE`` (90 %) of the values are equal within
   ``|a - b| <= 1e-6 + 1e-3 x max(|a|, |b|)``, plus half a unit of the last decimal when one
   file's values are all printed to at most 6 decimals (a console's ``0.422`` is the file's
   ``0.421875``). Two seeds or two runs logged by one trainer into
   one folder disagree and stay apart; two exports of one run agree and are joined. Files of one
   format that share no metric are joined only when they log the very same logged step numbers (a
   hand-written loop's ``monitor.csv`` of episode rewards and ``progress.csv`` of losses, both
   counting episodes 1..3000); two unrelated files that share nothing stay apart. Files of two
   per-step formats pass the same test on the metrics they share (a hand-written loop's JSONL and
   another run's notebook in one folder both log a reward, and disagree); a per-step log and a
   per-sample dump (:data:`PER_SAMPLE_FORMATS`) are joined without it: an interval-averaged console
   value and one step's per-sample value are not expected to agree.

Files are taken in order (sorted paths); each joins the first run of its folder it fits, else
starts one. The joined run has one row per step (outer join on ``step``, sorted); a metric both
log is taken from the file that logs it at more steps, the other's values fill its gaps; between a per-step log
and a per-sample dump it is the log's alone (the trainer's statistic of the whole batch or interval; a dump may
keep a few samples of each step, and two estimators in one series would make its noise). Its
``path`` is the folder, ``format`` the formats joined with ``+``, ``files`` the files.
``advcore scan --per-file`` keeps one run per file.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from advcore.ingest.formats import PER_SAMPLE
from advcore.model import JUDGED_APART, STORE_RUN, Run

__all__ = ["AGREE_SHARE", "PER_SAMPLE_FORMATS", "RESUME_GAP", "apart", "join_runs", "of_one_run"]

#: Share of the common steps on which two files must agree on a common metric.
AGREE_SHARE = 0.9
#: A file resumes another when it begins at most this many median step intervals after the other ends.
RESUME_GAP = 2
#: Formats of per-sample data: their per-step values are computed from one step's samples.
PER_SAMPLE_FORMATS = PER_SAMPLE
_ATOL, _RTOL = 1e-6, 1e-3


def _not_joinable(run: Run) -> str | None:
    """Why ``run`` cannot be joined with another file (see the module, rule 1), or None."""
    frame = run.frame
    if run.steps == 0:
        return "no step was read from it"
    if "phase" in frame.columns:
        return "its step counter restarts"
    if STORE_RUN in run.metadata:
        return "it is a run of a tracking store"
    if frame["step"].null_count() or frame["step"].n_unique() != frame.height:
        return "it repeats a step"
    return None


def _formats(run: Run) -> set[str]:
    return set(run.format.split("+"))


#: Decimals a printed value is looked for at (:func:`_grain`).
_PRINTED_DECIMALS = range(1, 7)


def _grain(values: pl.Series) -> float:
    """Half a unit of the last decimal when every finite value is a number of at most 6 decimals
    (a console rounds what it prints: ``f"{v:.3f}"``), else 0."""
    finite = values.filter(values.is_finite())
    if finite.is_empty():
        return 0.0
    for k in _PRINTED_DECIMALS:
        if ((finite - finite.round(k)).abs() <= 1e-9 * finite.abs().clip(lower_bound=1.0)).all():
            return 0.5 * 10.0 ** -k
    return 0.0


def _agree(a: pl.DataFrame, b: pl.DataFrame, metric: str) -> bool:
    both = a.select("step", pl.col(metric).alias("__a")).join(
        b.select("step", pl.col(metric).alias("__b")), on="step", how="inner"
    ).drop_nulls()
    if both.height == 0:
        return False
    atol = _ATOL + max(_grain(both["__a"]), _grain(both["__b"]))
    close = ((pl.col("__a") - pl.col("__b")).abs()
             <= atol + _RTOL * pl.max_horizontal(pl.col("__a").abs(), pl.col("__b").abs()))
    same_nan = pl.col("__a").is_nan() & pl.col("__b").is_nan()
    share = both.select((close | same_nan).mean()).item()
    return share is not None and share >= AGREE_SHARE


#: Readers of evaluation files, and what their reward is: a training log beside one measures another policy (the
#: deterministic one, on other episodes), so the two disagree by design.
EVALUATION_TRAINERS = {"sb3_eval": "the returns of SB3's EvalCallback (the deterministic policy on evaluation episodes)"}


def of_one_run(a: Run, b: Run) -> bool:
    """Whether ``a`` and ``b`` (already read, from one folder) are files of one run (see the module)."""
    return apart(a, b) is None


def apart(a: Run, b: Run) -> str | None:
    """Why ``a`` and ``b`` (already read, from one folder) are not files of one run (see the module), in
    words for the user; None when they are."""
    for run in (a, b):
        if (why := _not_joinable(run)) is not None:
            return f"{why} ({Path(run.path).name})"
    sa, sb = a.frame["step"].to_list(), b.frame["step"].to_list()
    if a.metadata.get("step_inferred") or b.metadata.get("step_inferred"):
        counted = list(range(1, a.steps + 1))
        if a.steps != b.steps or sa != counted or sb != counted:
            return ("one has no step numbers (its lines are counted 1, 2, 3 ...) and the other's steps are not "
                    "those counts")
    if _one_process(a, b):
        return None
    if max(min(sa), min(sb)) > min(max(sa), max(sb)):
        if _resumes(a, b):
            return None
        (e0, e1), (l0, l1) = sorted([(min(sa), max(sa)), (min(sb), max(sb))])
        return (f"their steps do not overlap ({e0} to {e1} and {l0} to {l1}) and the later one begins {l0 - e1} steps "
                f"after the earlier ends, too far to resume it (a resume begins within {RESUME_GAP} logging intervals "
                "of the earlier's last step; to judge two console excerpts of one run together, concatenate them "
                "into one file)")
    common = set(a.metrics) & set(b.metrics)
    if _formats(a) & _formats(b):
        if not common:
            if sa == sb and not a.metadata.get("step_inferred"):
                return None
            return "they share no metric and do not log the same steps"
    elif _formats(a) & PER_SAMPLE_FORMATS or _formats(b) & PER_SAMPLE_FORMATS:
        return None  # per-sample values and interval-averaged ones are not expected to agree
    # the reward first: the disagreement a user recognises (a newcomer's two W&B exports of two runs were told
    # apart by clip_frac/ghas, their rewards -7.37 and -2.94 at step 0)
    for m in sorted(common, key=lambda name: (name != "reward_mean", name)):
        if not _agree(a.frame, b.frame, m):
            if _resumed_within(a, b) is not None:
                return None
            trainers = [t for t in (a.trainer, b.trainer) if t]
            evaluation = next((run for run in (a, b) if run.trainer in EVALUATION_TRAINERS), None)
            if evaluation is not None:
                why = (f"{Path(evaluation.path).name} holds {EVALUATION_TRAINERS[str(evaluation.trainer)]}, the other "
                       "file the training's: two measures of one run")
            elif len(set(trainers)) == 2:
                why = f"written by two trainers, {trainers[0]} and {trainers[1]}"
            else:
                why = "two runs, or two seeds"
            return f"they disagree on {m} at the steps both log ({why})"
    return None


#: A TensorBoard event file's name, ``events.out.tfevents.<seconds>.<host>.<pid>.<n>`` (tensorboard's
#: ``EventFileWriter``; TF 2 adds ``.v2``): the host and the process that wrote it.
_EVENT_FILE = re.compile(r"tfevents\.\d++\.(?P<host>.+)\.(?P<pid>\d++)\.\d++(?:\.v2)?$")


def _writers(run: Run) -> set[tuple[str, str]]:
    """The (host, pid) of each TensorBoard event file ``run`` was read from."""
    return {(m.group("host"), m.group("pid")) for f in run.files if (m := _EVENT_FILE.search(Path(f).name))}


def _one_process(a: Run, b: Run) -> bool:
    """Event files one process wrote (:func:`_writers`), alike (:func:`_alike`), no step logged in both: one run,
    whatever the gaps between them and in whatever order their names sort (SB3's ``learn()`` called in a loop writes
    one event file per call into one folder: h445-sb3-ppo-metaworld-subgoal-env-single-task9, 152 files of one point
    each, steps 500, 1000, 1500 ... from process 86596, whose intervals no single file shows, its ``.10`` sorted
    before its ``.2``)."""
    if not (_alike(a, b) and _writers(a) & _writers(b)):
        return False
    return set(a.frame["step"].to_list()).isdisjoint(b.frame["step"].to_list())


def _resumes(a: Run, b: Run) -> bool:
    """Whether one of ``a`` and ``b`` (whose steps do not overlap) continues the other: one format, at
    least half of the smaller metric set in common, and the gap between the last step of the earlier
    and the first of the later at most ``RESUME_GAP`` times the larger of their median step intervals."""
    if not _alike(a, b):
        return False
    sa, sb = a.frame["step"].to_list(), b.frame["step"].to_list()
    early, late = (sa, sb) if min(sa) < min(sb) else (sb, sa)
    interval = max(_median_interval(early), _median_interval(late))
    return interval > 0 and min(late) - max(early) <= RESUME_GAP * interval


def _alike(a: Run, b: Run) -> bool:
    """``a`` and ``b`` could be sessions of one run: one format, and at least half of the smaller metric set
    in common."""
    if a.format != b.format or not a.metrics or not b.metrics:
        return False
    return 2 * len(set(a.metrics) & set(b.metrics)) >= min(len(a.metrics), len(b.metrics))


def _resumed_within(a: Run, b: Run) -> tuple[Run, Run] | None:
    """(earlier, later) when one of ``a`` and ``b`` resumes the other from a checkpoint taken before the
    other's last step: files of one trainer's run (:func:`_alike`), the later beginning after the earlier's
    first step and ending after its last; else None."""
    if not _alike(a, b):
        return None
    early, late = (a, b) if a.frame["step"].min() <= b.frame["step"].min() else (b, a)  # type: ignore[operator]
    first, last = late.frame["step"].min(), late.frame["step"].max()
    if first > early.frame["step"].min() and last > early.frame["step"].max():  # type: ignore[operator]
        return early, late
    return None


def _median_interval(steps: list[int]) -> float:
    ordered = sorted(steps)
    diffs = [b - a for a, b in zip(ordered, ordered[1:], strict=False)]
    return float(statistics.median(diffs)) if diffs else 0.0


def _join(a: Run, b: Run) -> Run:
    """One run of ``a`` and ``b``: outer join on step; a metric in both comes from the file that logs it
    at more steps, the other fills its gaps."""
    if (resumed := _resumed_within(a, b)) is not None:
        # the resumed session's steps are the run's: the earlier session's from the resume on were undone
        early, late = resumed
        cut = replace(early, frame=early.frame.filter(pl.col("step") < late.frame["step"].min()))
        a, b = (cut, late) if early is a else (late, cut)
    fa, fb = a.frame, b.frame
    joined = fa.join(fb, on="step", how="full", coalesce=True, suffix="__b").sort("step")
    sources = dict(a.sources)
    columns: list[pl.Expr] = [pl.col("step")]
    a_dump, b_dump = (bool(_formats(r) & PER_SAMPLE_FORMATS) and not _formats(r) - PER_SAMPLE_FORMATS for r in (a, b))
    for name in dict.fromkeys([*fa.columns, *fb.columns]):
        if name == "step":
            continue
        if name in fa.columns and name in fb.columns:
            if a_dump != b_dump:
                # the trainer's own statistic of each logged step (or interval) against one computed from the
                # samples a dump kept: the trainer's, alone (TRL DAPO-VLM's console every 10 steps, its rollout
                # dump 2 samples of each step; the two estimates mixed in one series would make its noise)
                columns.append(pl.col(f"{name}__b" if a_dump else name).alias(name))
                if a_dump and name in b.sources:
                    sources[name] = b.sources[name]
                continue
            a_first = fa.height - fa[name].null_count() >= fb.height - fb[name].null_count()
            first, second = (pl.col(name), pl.col(f"{name}__b")) if a_first else (pl.col(f"{name}__b"), pl.col(name))
            columns.append(pl.coalesce(first, second).alias(name))
            if not a_first and name in b.sources:
                sources[name] = b.sources[name]
        else:
            columns.append(pl.col(name))
            if name in b.sources:
                sources[name] = b.sources[name]
    parts: list[dict[str, Any]] = [*a.metadata.get("parts", [{"file": a.path, **a.metadata}]),
                                   *b.metadata.get("parts", [{"file": b.path, **b.metadata}])]
    folder = str(Path(a.files[0]).parent)
    return Run(
        path=folder,
        format="+".join(dict.fromkeys([*a.format.split("+"), *b.format.split("+")])),
        trainer=a.trainer or b.trainer,
        frame=joined.select(columns),
        sources=sources,
        metadata={"parts": parts,
                  **({"step_inferred": True} if a.metadata.get("step_inferred") and b.metadata.get("step_inferred")
                     else {})},
        errors=(*a.errors, *b.errors),
        trace=a.trace if a.trace is not None else b.trace,
        slices=a.slices if a.slices is not None else b.slices,
        joined=(*a.files, *b.files),
    )


def join_runs(runs: Sequence[Run]) -> list[Run]:
    """The runs of ``runs`` (one per file, in path order) with the files of one run joined (see the
    module). A run of one file comes back unchanged; joined runs take the place of their first file."""
    out: list[Run] = []
    for run in runs:
        folder = Path(run.path).parent
        reasons = []
        for i, kept in enumerate(out):
            if Path(kept.files[0]).parent != folder:
                continue
            why = apart(kept, run)
            if why is None:
                out[i] = _join(kept, run)
                break
            reasons.append(f"{' + '.join(Path(f).name for f in kept.files)}: {why}")
        else:
            out.append(replace(run, metadata={**run.metadata, JUDGED_APART: reasons}) if reasons else run)
    return out
