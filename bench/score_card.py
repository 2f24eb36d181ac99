"""The detector score card (issue 5, item 5): every lab fault, diagnosed as a scan would, against its truth.

For every fault x every estimator it applies to x ``seeds`` seeds, plus healthy runs of every
estimator x ``seeds`` seeds, a lab run (:func:`advcore.lab.run`, 80 steps, fault onset at step 30)
is recorded into a temporary folder (:func:`advcore.lab.write`: the per-step metrics in a trainer
format, the per-sample Parquet and ``truth.json``) and diagnosed three ways, all through the scan's
code path (:func:`advcore.scan.scan_file`: ingest, every registered detector, the verdict):

* ``steps``: the per-step recording alone (what a trainer log gives);
* ``samples``: the per-sample Parquet alone (the per-sample ingest reduces each step through
  :func:`advcore.trace.step_row`, so the T-stage evidence of the reference checks is present);
* ``both``: the two per-step frames joined on the step (the trainer's metrics first, the
  per-sample reductions added where the trainer has none), run through the detectors and
  :func:`advcore.diagnose.diagnose` again. This is the score card's verdict.

Per fault it prints the share of runs whose verdict names the right stage (for ``nonfinite``, whose
stage is "any": the first finding in causal order is NONFINITE), the share whose findings include an
expected detector (:attr:`advcore.lab.Fault.detectors`), and the onset error of that detector's
finding against ``truth.json`` (median and max of ``|onset - truth|`` in steps); for healthy runs,
the false-alarm rate (any warn or error finding in any of the three diagnoses). Targets (issue 5):
right stage on >= 95 % of faulty runs, onset within 5 steps, no warning on healthy runs.

Usage::

    python bench/score_card.py [--seeds 3] [--first-seed 0] [--format jsonl] [--jobs 2] [--faults a,b] [--estimators x,y]
                               [--markdown] [--details]

A run takes ~0.2 s; the grid runs in a process pool (``--jobs``, default 2).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from advcore.detectors import REGISTRY, run_detectors
from advcore.diagnose import diagnose
from advcore.ingest import Run
from advcore.lab import ESTIMATORS, FAULTS, LabConfig, LabResult, run, write
from advcore.lab.negatives import NEGATIVES, run_negative
from advcore.monitor import Monitor
from advcore.scan import RunReport, ScanOptions, scan_file

__all__ = ["Job", "Outcome", "Row", "grid", "join_runs", "main", "replay_online", "score", "score_one", "table"]

#: Per-step format used for an estimator when the requested one cannot record it (TRL's GRPOTrainer logs no critic).
_PPO_FALLBACK = "verl"
STAGE_TARGET = 0.95
ONSET_TARGET = 5
#: the real corpus's absent runs are named up to this many, counted by split beyond it
ABSENT_NAMED = 10


@dataclass(frozen=True, slots=True)
class Job:
    fault: str | None
    estimator: str
    seed: int
    fmt: str = "jsonl"
    steps: int = 80
    onset: int = 30
    #: a hard negative of :data:`advcore.lab.negatives.NEGATIVES` (then ``fault`` is None)
    negative: str | None = None
    #: also replay the run through :class:`advcore.Monitor` step by step (:func:`replay_online`)
    online: bool = False


@dataclass(frozen=True, slots=True)
class Outcome:
    """One run's diagnoses (picklable: plain values only)."""

    job: Job
    truth_stage: str | None
    truth_onset: int | None
    expected: tuple[str, ...]
    #: recording -> (verdict stage, first finding ID, ((ID, severity, stage, onset), ...))
    verdicts: dict[str, tuple[str | None, str | None, tuple[tuple[str, str, str, int | None], ...]]]
    seconds: float
    #: the online replay (``job.online``): detector ID -> the step at which the monitor first reported it
    online: dict[str, int] = field(default_factory=dict)
    #: failed monitor calls during the replay (0 expected)
    monitor_errors: int = 0
    #: the online replay: detector IDs the monitor reported as warn or error
    online_alarms: tuple[str, ...] = ()
    #: held-out success at the first and the last step (the run learned when the second is higher)
    heldout: tuple[float, float] = (math.nan, math.nan)
    #: a few measured quantities of the run, to read a false alarm by (:func:`_measures`)
    measures: dict[str, float] = field(default_factory=dict)

    def online_delay(self) -> int | None:
        """Steps from the true onset to the monitor's first report of an expected detector (None: never)."""
        steps = [self.online[i] for i in self.expected if i in self.online]
        if not steps or self.truth_onset is None:
            return None
        return min(steps) - self.truth_onset

    def right_stage(self, rec: str = "both") -> bool:
        stage, first, _ = self.verdicts[rec]
        if self.truth_stage == "any":
            return first == "NONFINITE"
        return stage == self.truth_stage

    def detector(self, rec: str = "both") -> tuple[str, int | None] | None:
        """The first expected detector among the findings, with its onset."""
        found = {f[0]: f[3] for f in self.verdicts[rec][2]}
        return next(((i, found[i]) for i in self.expected if i in found), None)

    def onset_error(self, rec: str = "both") -> float | None:
        hit = self.detector(rec)
        if hit is None or hit[1] is None or self.truth_onset is None:
            return None
        return float(abs(hit[1] - self.truth_onset))

    def alarms(self) -> list[str]:
        return sorted({f"{rec}:{f[0]}" for rec, (_, _, fs) in self.verdicts.items() for f in fs
                       if f[1] in ("warn", "error")})


def grid(seeds: int = 3, fmt: str = "jsonl", faults: Iterable[str] | None = None,
         estimators: Iterable[str] | None = None, healthy: bool = True, first_seed: int = 0,
         negatives: Iterable[str] | None = (), online: bool = False) -> list[Job]:
    """Every fault x the estimators it applies to x ``seeds`` seeds (from ``first_seed``), then the
    healthy runs, then the hard ``negatives`` (None: every kind of :data:`NEGATIVES`) x the estimators
    each runs with. ``online``: every run is also replayed through the monitor."""
    names = list(faults) if faults is not None else list(FAULTS)
    ests = list(estimators) if estimators is not None else list(ESTIMATORS)
    seed_range = range(first_seed, first_seed + seeds)
    jobs = [Job(f, e, s, fmt, online=online) for f in names for e in ests if e in FAULTS[f].estimators
            for s in seed_range]
    if healthy:
        jobs += [Job(None, e, s, fmt, online=online) for e in ests for s in seed_range]
    kinds = list(NEGATIVES) if negatives is None else list(negatives)
    jobs += [Job(None, e, s, fmt, steps=NEGATIVES[k].steps, negative=k, online=online) for k in kinds for e in ests
             if e in NEGATIVES[k].estimators for s in seed_range]
    return jobs


def join_runs(steps: Run, samples: Run) -> Run:
    """The per-step run with the per-sample run's metrics added where the per-step log has none
    (joined on ``step``; the trainer's own value wins where both have a metric)."""
    extra = [c for c in samples.frame.columns if c not in steps.frame.columns]
    frame = steps.frame
    if extra:
        frame = frame.join(samples.frame.select("step", *extra), on="step", how="left")
    sources = {**{k: f"samples:{v}" for k, v in samples.sources.items() if k in extra}, **steps.sources}
    return replace(steps, frame=frame, sources=sources, trace=samples.trace,
                   format=f"{steps.format}+{samples.format}")


def _summary(report: RunReport) -> tuple[str | None, str | None, tuple[tuple[str, str, str, int | None], ...]]:
    v = report.verdict
    return (v.stage, v.findings[0].id if v.findings else None,
            tuple((f.id, f.severity, f.stage, f.onset_step) for f in v.findings))


def _diagnose(run_: Run) -> RunReport:
    findings, missing = run_detectors(run_)
    verdict = diagnose(run_, findings, missing, len(REGISTRY))
    return RunReport(run_, tuple(verdict.findings), tuple(missing), verdict)


_SILENT = logging.getLogger("advcore.score_card.replay")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False
#: Per-step lab metrics that are the lab's own bookkeeping, not a trainer's log (never handed to the monitor).
_LAB_ONLY = ("heldout_success", "train_success", "n_generated", "n_samples", "gen_batches")


def replay_online(res: LabResult, until: Iterable[str] = ()) -> tuple[dict[str, int], int, tuple[str, ...]]:
    """Feed a finished lab run to :class:`advcore.Monitor` step by step, as a trainer would have during
    the run: per step the per-sample arrays (rewards, group ids, raw and used advantages; PPO's values
    and returns) and the trainer's per-step metrics (``metrics=``: KL, entropy, gradient norms, clip
    fraction, learning rate, ...). The monitor runs with its default settings except
    ``detect_budget=None``: a detector pass after every step, which is what the default budget gives
    when a training step takes a second or more (a replay takes milliseconds per step, and a
    wall-time budget would make the result depend on the machine's load); no tracker alerts.

    ``until``: stop once one of these detector IDs has been reported (a fault's expected detectors: the
    delay is known then, and the rest of the replay would only cost time).

    Returns the step at which each detector ID was first reported, the monitor's error count, and the
    IDs it reported as warn or error."""
    stop = set(until)
    mon = Monitor(detect_budget=None, alert_trackers=False, logger=_SILENT)
    parts = {int(p["step"][0]): p for p in res.samples.partition_by("step", maintain_order=True)}
    for row in res.steps.iter_rows(named=True):
        step = int(row["step"])
        metrics = {k: float(v) for k, v in row.items() if k != "step" and k not in _LAB_ONLY and v is not None}
        part = parts.get(step)
        if part is None:  # nothing trained this step (DAPO found no group with spread)
            mon.observe(step, metrics=metrics)
            continue
        arrays = {"rewards": part["reward"].to_numpy(), "group_ids": part["group"].to_numpy(),
                  "advantages": part["adv"].to_numpy(), "adv_raw": part["adv_raw"].to_numpy()}
        if "value" in part.columns:
            arrays.update(baseline=part["value"].to_numpy(), returns=part["return"].to_numpy())
        mon.observe(step, metrics=metrics, **arrays)
        if stop & mon.reported_at.keys():
            break
    mon.close()
    alarms = tuple(sorted({f.id for f in mon.findings if f.severity in ("warn", "error")}))
    return dict(mon.reported_at), mon.errors, alarms


def score_one(job: Job) -> Outcome:
    """Run, record, and diagnose one lab configuration."""
    t0 = time.perf_counter()
    if job.negative is not None:
        res = run_negative(job.negative, job.estimator, job.seed, steps=job.steps)
    else:
        res = run(LabConfig(estimator=job.estimator, fault=job.fault, seed=job.seed, steps=job.steps,
                            onset=job.onset))
    fmt = _PPO_FALLBACK if job.fmt == "trl" and job.estimator == "ppo" else job.fmt
    with tempfile.TemporaryDirectory(prefix="advcore-score-") as tmp:
        files = write(res, tmp, fmt=fmt)
        opts = ScanOptions()
        by_steps = scan_file(files["steps"], opts)
        by_samples = scan_file(files["samples"], opts)
        both = _diagnose(join_runs(by_steps.run, by_samples.run))
    online, errors, online_alarms = replay_online(res, res.truth["expected_detectors"]) if job.online else ({}, 0, ())
    truth = res.truth
    held = res.steps["heldout_success"]
    return Outcome(job, truth["stage"], truth["onset_step"], tuple(truth["expected_detectors"]),
                   {"steps": _summary(by_steps), "samples": _summary(by_samples), "both": _summary(both)},
                   time.perf_counter() - t0, online, errors, online_alarms, (float(held[0]), float(held[-1])),
                   _measures(res))


def _measures(res: LabResult) -> dict[str, float]:
    """Late-window (last 20 % of the steps) tied-group share and reward mean, the late / early entropy
    ratio and the largest KL to the reference: what a false alarm of DEGENERATE_GROUPS, REWARD_SATURATION,
    ENTROPY_COLLAPSE or UPDATE_UNSTABLE would be read against."""
    f = res.steps
    w = max(1, f.height // 5)

    def mean(name: str, late: bool = True) -> float:
        if name not in f.columns:
            return math.nan
        col = (f[name].tail(w) if late else f[name].head(w)).drop_nulls().drop_nans()
        return float(col.mean()) if len(col) else math.nan  # type: ignore[arg-type]

    early_entropy = mean("entropy", late=False)
    kl = f["kl"].drop_nulls().drop_nans() if "kl" in f.columns else None
    return {"late_tied": mean("zero_variance_group_frac"), "late_reward": mean("reward_mean"),
            "entropy_ratio": mean("entropy") / early_entropy if early_entropy else math.nan,
            "kl_max": float(kl.max()) if kl is not None and len(kl) else math.nan}  # type: ignore[arg-type]


def score(jobs: Sequence[Job], n_jobs: int = 2) -> list[Outcome]:
    """:func:`score_one` over ``jobs`` in a pool of ``n_jobs`` processes (spawned: Polars' threads
    do not survive a fork)."""
    if n_jobs <= 1:
        return [score_one(j) for j in jobs]
    with ProcessPoolExecutor(max_workers=n_jobs, mp_context=get_context("spawn")) as pool:
        return list(pool.map(score_one, jobs, chunksize=max(1, len(jobs) // (n_jobs * 8))))


@dataclass
class Row:
    """One line of the confusion matrix."""

    fault: str
    stage: str
    runs: int = 0
    right_stage: int = 0
    right_stage_steps: int = 0
    right_stage_samples: int = 0
    right_detector: int = 0
    onset_errors: list[float] = field(default_factory=list)
    alarms: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)

    def onset(self) -> tuple[float, float] | None:
        if not self.onset_errors:
            return None
        return statistics.median(self.onset_errors), max(self.onset_errors)


def table(outcomes: Sequence[Outcome]) -> list[Row]:
    """The confusion matrix: one row per fault (in :data:`FAULTS` order), then ``healthy``."""
    rows: dict[str, Row] = {}
    for o in outcomes:
        if o.job.negative is not None:
            continue  # the hard negatives have their own table (bench/evaluation.py)
        name = o.job.fault or "healthy"
        r = rows.setdefault(name, Row(name, o.truth_stage or "-"))
        r.runs += 1
        stage = o.verdicts["both"][0] or "none"
        r.verdicts[stage] = r.verdicts.get(stage, 0) + 1
        if o.job.fault is None:
            if o.alarms():
                r.alarms += 1
                r.misses.append(f"{o.job.estimator}/{o.job.seed}: {', '.join(o.alarms())}")
            continue
        r.right_stage += o.right_stage()
        r.right_stage_steps += o.right_stage("steps")
        r.right_stage_samples += o.right_stage("samples")
        r.right_detector += o.detector() is not None
        err = o.onset_error()
        if err is not None:
            r.onset_errors.append(err)
        if not o.right_stage() or o.detector() is None or (err is not None and err > ONSET_TARGET):
            ids = ",".join(f"{f[0]}@{f[3]}" for f in o.verdicts["both"][2]) or "nothing"
            r.misses.append(f"{o.job.estimator}/{o.job.seed}: verdict {stage} [{ids}]")
    order = [*FAULTS, "healthy"]
    return sorted(rows.values(), key=lambda r: order.index(r.fault))


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.0f}%" if n else "-"


def render(rows: Sequence[Row], markdown: bool = False) -> str:
    head = ["fault", "stage", "runs", "right stage", "steps only", "samples only", "right detector",
            "onset err med/max", "verdicts (both)"]
    lines: list[list[str]] = []
    for r in rows:
        verdicts = " ".join(f"{k}:{v}" for k, v in sorted(r.verdicts.items()))
        if r.fault == "healthy":
            lines.append([r.fault, "-", str(r.runs), f"false alarms {_pct(r.alarms, r.runs)}", "", "", "", "",
                          verdicts])
            continue
        on = r.onset()
        lines.append([r.fault, r.stage, str(r.runs), _pct(r.right_stage, r.runs), _pct(r.right_stage_steps, r.runs),
                      _pct(r.right_stage_samples, r.runs), _pct(r.right_detector, r.runs),
                      f"{on[0]:g} / {on[1]:g}" if on else "-", verdicts])
    faulty = [r for r in rows if r.fault != "healthy"]
    n = sum(r.runs for r in faulty)
    right = sum(r.right_stage for r in faulty)
    errs = [e for r in faulty for e in r.onset_errors]
    healthy = next((r for r in rows if r.fault == "healthy"), None)
    total = (f"faulty runs: right stage {right}/{n} ({_pct(right, n)}, target >= {STAGE_TARGET:.0%}); "
             f"right detector {sum(r.right_detector for r in faulty)}/{n}; onset error max "
             f"{max(errs) if errs else math.nan:g} steps (target <= {ONSET_TARGET})")
    if healthy is not None:
        total += f"; healthy runs with a warning: {healthy.alarms}/{healthy.runs} (target 0)"
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(x) + " |" for x in lines]
        return "\n".join(out) + "\n\n" + total
    widths = [max(len(x[i]) for x in [head, *lines]) for i in range(len(head))]
    fmt_line = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt_line.format(*head), *(fmt_line.format(*x) for x in lines), "", total])


def targets_met(rows: Sequence[Row]) -> dict[str, bool]:
    faulty = [r for r in rows if r.fault != "healthy"]
    n = sum(r.runs for r in faulty)
    errs = [e for r in faulty for e in r.onset_errors]
    healthy = [r for r in rows if r.fault == "healthy"]
    return {"stage": n > 0 and sum(r.right_stage for r in faulty) >= STAGE_TARGET * n,
            "onset": all(e <= ONSET_TARGET for e in errs),
            "healthy": all(r.alarms == 0 for r in healthy)}


def full_report(outcomes: Sequence[Outcome], real: tuple[list[Any], list[Any]] | None,
                acr_rows: Sequence[dict[str, float]], markdown: bool = False) -> tuple[str, dict[str, bool]]:
    """The four tables of issue 18 (see :mod:`evaluation` and :mod:`acr_sweep`), and their targets."""
    import acr_sweep
    import evaluation as ev

    def title(text: str) -> str:
        return f"## {text}\n" if markdown else f"== {text} =="

    bullet = "- " if markdown else ""

    out = [title("The score card (lab faults: right stage, right detector, onset)"), render(table(outcomes), markdown)]
    neg_rows, n_neg, n_alarmed = ev.negative_rows(outcomes)
    healthy_online = [o for o in outcomes if o.job.fault is None and o.job.negative is None and o.online_alarms]
    out += ["", title("1. Hard negatives: healthy runs built to look alarming (a warn or error offline or online)"),
            ev.render_table(ev.NEGATIVE_HEAD, neg_rows, markdown), "",
            "\n".join(bullet + line for line in ev.negative_alarms(outcomes)), "",
            f"hard-negative runs with a warning or error: {n_alarmed}/{n_neg} (target 0); healthy runs warned online: "
            f"{len(healthy_online)}" + "".join(f"\n  {o.job.estimator}/{o.job.seed}: {', '.join(o.online_alarms)}"
                                               for o in healthy_online)]
    delay, over = ev.delay_rows(outcomes)
    out += ["", title("2. Detection delay per lab fault (steps after the true onset; negative = before it)"),
            ev.render_table(ev.DELAY_HEAD, delay, markdown), "",
            "online: the step at which advcore.Monitor (default settings, a detector pass after every step; a "
            "warning is reported once two passes in a row find it, confirm=2) first reported an expected detector, "
            "minus the true onset; offline: the scan's onset of the first expected "
            "detector (both recordings joined) minus the true onset. worst = the largest in absolute value.",
            "A rule on the late-window mean (the last 20 % of the points seen so far) can only see a change at "
            "step s once that window lies mostly after s, about 1.25 s steps into the run (s / 4 steps late); a "
            "state the run ends in, held for sustain points and longer than ever before, is reported without "
            "waiting for it (advcore.detectors._windows.held_since: ADV_COLLAPSE, BASELINE_BROKEN, REWARD_FLOOR, "
            "REWARD_SATURATION). With confirm=2 a state first seen at the onset step is reported sustain steps "
            "after it at the earliest; one that shows a step after the fault (an entropy measured on the policy "
            "before the step's update) or crosses its detector's cut only once it has fallen far enough "
            "(ENTROPY_COLLAPSE: below a quarter of the early entropy) comes later.",
            "sustain: the detector's own knob, or the seed card's 5 (seed) for a detector without one.",
            f"faults whose online median delay exceeds the sustain yardstick or is negative: {', '.join(over) or 'none'}"]
    out += ["", title("3. Per-detector precision and recall"), "",
            "Lab (faulty runs: should fire when the fault lists the detector; healthy runs and hard negatives: "
            "should not; a finding counts when it is warn or error):",
            ev.render_table(ev.PR_HEAD, ev.pr_rows(lab := ev.precision_recall_lab(outcomes)), markdown),
            "false alarms, lab: " + ("; ".join(f"{d}: {', '.join(c.false_runs)}" for d, c in lab.items()
                                               if c.false_runs) or "none")]
    if real is not None:
        scores, runs = real
        absent = [r for r in runs if not r.present]
        named = (f": {', '.join(r.name for r in absent)}" if len(absent) <= ABSENT_NAMED else
                 " (" + ", ".join(f"{n} {split}" for split, n in sorted(Counter(r.split for r in absent).items())) + ")")
        out += ["", f"Real corpus: {len(scores)} runs scored, {len(absent)} of the manifest absent on this machine "
                "(shared runs: ../shared/data/real or $ADVCORE_SHARED_REAL; fetched: $ADVCORE_REAL_DATA, "
                "tests/real/extract.py)" + (named if absent else "")]
        for split in ("calibration", "validation"):
            n = sum(1 for s_ in scores if s_.split == split)
            note = " (never tuned on: shown, not used to change a threshold)" if split == "validation" else ""
            out += ["", f"Real corpus, {split}: {n} runs{note} (should fire: in expect_headline of a lost run; "
                    "should not: in must_not_fire, or the run is healthy):",
                    ev.render_table(ev.PR_HEAD, ev.pr_rows(counts := ev.precision_recall_real(scores, runs, split)),
                                    markdown)]
            out += [f"false alarms, {split}: " + ("; ".join(f"{d}: {', '.join(c.false_runs)}"
                                                          for d, c in counts.items() if c.false_runs) or "none")]
    out += ["", title("4. ACR (arXiv 2605.21125) against our early-window statistics"), acr_sweep.report(acr_rows, markdown)]
    met = {**targets_met(table(outcomes)), "hard negatives quiet": n_alarmed == 0,
           "healthy quiet online": not healthy_online, "online delay": not over}
    return "\n".join(out), met


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1")
    p.add_argument("--format", default="jsonl", choices=("jsonl", "verl", "trl"))
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--faults", default=None, help="comma-separated fault names (default: all)")
    p.add_argument("--estimators", default=None, help="comma-separated estimator names (default: all)")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--details", action="store_true", help="list every miss and false alarm")
    p.add_argument("--json", default=None, help="write every outcome to this file")
    p.add_argument("--full", action="store_true",
                   help="the four tables of issue 18: hard negatives, detection delay (online and offline), "
                        "per-detector precision and recall (lab and real corpus), the ACR sweep")
    p.add_argument("--acr-seeds", type=int, default=5, help="with --full: seeds of the ACR sweep")
    p.add_argument("--no-real", action="store_true", help="with --full: leave out the real corpus")
    p.add_argument("--doc", default=None, help="with --full: also write the tables as Markdown to this file")
    a = p.parse_args(argv)
    jobs = grid(a.seeds, a.format, a.faults.split(",") if a.faults else None,
                a.estimators.split(",") if a.estimators else None, first_seed=a.first_seed,
                negatives=None if a.full else (), online=a.full)
    t0 = time.perf_counter()
    outcomes = score(jobs, a.jobs)
    if a.full:
        return _full(a, outcomes, time.perf_counter() - t0, argv)
    rows = table(outcomes)
    print(render(rows, a.markdown))
    print(f"{len(jobs)} runs in {time.perf_counter() - t0:.1f} s ({a.jobs} processes, per-step format {a.format})")
    if a.details:
        for r in rows:
            for m in r.misses:
                print(f"  {r.fault}: {m}")
    if a.json:
        Path(a.json).write_text(json.dumps([{"job": {k: getattr(o.job, k) for k in Job.__dataclass_fields__},
                                             "verdicts": o.verdicts} for o in outcomes], indent=1, default=str))
    met = targets_met(rows)
    print("targets: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in met.items()))
    return 0 if all(met.values()) else 1


def _full(a: argparse.Namespace, outcomes: list[Outcome], lab_seconds: float, argv: Sequence[str] | None) -> int:
    import acr_sweep

    real = None
    t1 = time.perf_counter()
    if not a.no_real:
        from real_score import score_runs
        from tests.real.corpus import load_manifest

        runs = load_manifest()
        real = (score_runs(runs, a.jobs), runs)
    real_seconds = time.perf_counter() - t1
    t2 = time.perf_counter()
    acr_rows = acr_sweep.sweep(a.acr_seeds, jobs=a.jobs)
    acr_seconds = time.perf_counter() - t2
    text, met = full_report(outcomes, real, acr_rows, a.markdown)
    timing = (f"lab: {len(outcomes)} runs in {lab_seconds:.0f} s; real corpus: "
              f"{len(real[0]) if real else 0} runs in {real_seconds:.0f} s; ACR sweep: {len(acr_rows)} runs in "
              f"{acr_seconds:.0f} s ({a.jobs} processes)")
    print(text)
    print(timing)
    print("targets: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in met.items()))
    if a.doc:
        md, _ = full_report(outcomes, real, acr_rows, markdown=True)
        command = "python bench/score_card.py " + " ".join(sys.argv[1:] if argv is None else argv)
        Path(a.doc).write_text(DOC_HEAD.format(command=command, date=time.strftime("%Y-%m-%d"), timing=timing)
                               + md + "\n\ntargets: " + ", ".join(f"{k} {'met' if v else 'NOT met'}"
                                                                  for k, v in met.items()) + "\n")
    return 0 if all(met.values()) else 1


DOC_HEAD = """# advcore's evaluation of its own detectors

The latest tables of `bench/score_card.py --full` (issue 18): the lab score card, hard negatives,
detection delay, per-detector precision and recall on the lab and on the real corpus, and the ACR
reproduction. Regenerate with `make score` (which runs the command below and rewrites this page).

    {command}

The real corpus is read as `bench/real_score.py` reads it (the shared runs from `../shared/data/real`
or `$ADVCORE_SHARED_REAL`, the fetched ones from `$ADVCORE_REAL_DATA`, default
`~/.cache/advcore/real`); runs absent on the machine are listed, not scored.

Run on {date}; {timing}. The definitions are in the docstrings of `bench/evaluation.py` and
`bench/acr_sweep.py`; the hard negatives in `python/advcore/lab/negatives.py`.

"""


if __name__ == "__main__":
    sys.exit(main())
