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
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path

from advcore.detectors import REGISTRY, run_detectors
from advcore.diagnose import diagnose
from advcore.ingest import Run
from advcore.lab import ESTIMATORS, FAULTS, LabConfig, run, write
from advcore.scan import RunReport, ScanOptions, scan_file

__all__ = ["Job", "Outcome", "Row", "grid", "join_runs", "main", "score", "score_one", "table"]

#: Per-step format used for an estimator when the requested one cannot record it (TRL's GRPOTrainer logs no critic).
_PPO_FALLBACK = "verl"
STAGE_TARGET = 0.95
ONSET_TARGET = 5


@dataclass(frozen=True, slots=True)
class Job:
    fault: str | None
    estimator: str
    seed: int
    fmt: str = "jsonl"
    steps: int = 80
    onset: int = 30


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
         estimators: Iterable[str] | None = None, healthy: bool = True, first_seed: int = 0) -> list[Job]:
    """Every fault x the estimators it applies to x ``seeds`` seeds (from ``first_seed``), then the
    healthy runs."""
    names = list(faults) if faults is not None else list(FAULTS)
    ests = list(estimators) if estimators is not None else list(ESTIMATORS)
    seed_range = range(first_seed, first_seed + seeds)
    jobs = [Job(f, e, s, fmt) for f in names for e in ests if e in FAULTS[f].estimators for s in seed_range]
    if healthy:
        jobs += [Job(None, e, s, fmt) for e in ests for s in seed_range]
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


def score_one(job: Job) -> Outcome:
    """Run, record, and diagnose one lab configuration."""
    t0 = time.perf_counter()
    res = run(LabConfig(estimator=job.estimator, fault=job.fault, seed=job.seed, steps=job.steps, onset=job.onset))
    fmt = _PPO_FALLBACK if job.fmt == "trl" and job.estimator == "ppo" else job.fmt
    with tempfile.TemporaryDirectory(prefix="advcore-score-") as tmp:
        files = write(res, tmp, fmt=fmt)
        opts = ScanOptions()
        by_steps = scan_file(files["steps"], opts)
        by_samples = scan_file(files["samples"], opts)
        both = _diagnose(join_runs(by_steps.run, by_samples.run))
    truth = res.truth
    return Outcome(job, truth["stage"], truth["onset_step"], tuple(truth["expected_detectors"]),
                   {"steps": _summary(by_steps), "samples": _summary(by_samples), "both": _summary(both)},
                   time.perf_counter() - t0)


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
    a = p.parse_args(argv)
    jobs = grid(a.seeds, a.format, a.faults.split(",") if a.faults else None,
                a.estimators.split(",") if a.estimators else None, first_seed=a.first_seed)
    t0 = time.perf_counter()
    outcomes = score(jobs, a.jobs)
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


if __name__ == "__main__":
    sys.exit(main())
