"""The evaluation tables of issue 18 that ``bench/score_card.py --full`` prints, from the score card's
outcomes and the real-log scores:

1. hard negatives (:mod:`advcore.lab.negatives`): per kind, the runs with a warning or error;
2. detection delay per lab fault: online (the step at which :class:`advcore.Monitor` first reports
   an expected detector, minus the true onset) and offline (the scan's onset minus the true onset);
3. per-detector precision and recall, over the lab and over the real corpus (calibration and
   validation apart);

(the fourth, the ACR sweep, is :mod:`acr_sweep`).

Definitions for table 3. A detector *fires* on a run when it reports a finding of severity warn or
error (an info finding is not an alarm). Lab: it *should fire* on a faulty run whose fault lists it
(:attr:`advcore.lab.Fault.detectors`), and *should not* on a healthy run or a hard negative; on a
faulty run that does not list it, it is unlabelled (a downstream consequence may be right to fire)
and counted apart. Real corpus: it should fire on a run whose written expectation lists it in
``expect_headline``, and should not when the expectation lists it in ``must_not_fire`` or the run is
healthy; otherwise unlabelled. Recall = fired / should fire; false-alarm rate = fired / should not;
precision = true fires / (true fires + false fires), over the labelled runs only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from advcore.detectors import REGISTRY
from advcore.lab import FAULTS
from advcore.lab.negatives import NEGATIVES

__all__ = ["Counts", "delay_rows", "negative_alarms", "negative_rows", "precision_recall_lab", "precision_recall_real", "render_table",
           "sustain_of"]

_BAD = ("warn", "error")
#: The seed card's ``sustain`` (ADV_COLLAPSE): the yardstick for a detector without a knob of that name.
SEED_SUSTAIN = 5


def render_table(head: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool = False) -> str:
    """A plain-text (aligned) or Markdown table."""
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(len(head))]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([line.format(*head), *(line.format(*r) for r in rows)])


def _med_max(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):g} / {max(values, key=abs):g}"


# --- 1. hard negatives ---------------------------------------------------------------------------


def negative_alarms(outcomes: Iterable[Any]) -> list[str]:
    """One line per hard-negative run with a warning or error: where it fired and the run's measures."""
    out = []
    for o in outcomes:
        if o.job.negative is None or not (o.alarms() or o.online_alarms):
            continue
        m = o.measures
        out.append(f"{o.job.negative} {o.job.estimator}/{o.job.seed}: offline {', '.join(o.alarms()) or '-'}; "
                   f"online {', '.join(o.online_alarms) or '-'}; late tied share {m.get('late_tied', math.nan):.2f}, "
                   f"late reward {m.get('late_reward', math.nan):.2f}, entropy late/early "
                   f"{m.get('entropy_ratio', math.nan):.2f}, held-out {o.heldout[0]:.2f} -> {o.heldout[1]:.2f}")
    return out


def negative_rows(outcomes: Iterable[Any]) -> tuple[list[list[str]], int, int]:
    """Per hard-negative kind: runs, estimators, held-out success first -> last (medians), runs with a
    warn/error in any of the three recordings of the scan (offline) and from the monitor during the replay
    (online), and which detectors; plus the totals (runs, runs alarmed either way)."""
    by: dict[str, list[Any]] = {}
    for o in outcomes:
        if o.job.negative is not None:
            by.setdefault(o.job.negative, []).append(o)
    rows, total, alarmed = [], 0, 0
    for name in NEGATIVES:
        runs = by.get(name, [])
        if not runs:
            continue
        bad = [o for o in runs if o.alarms() or o.online_alarms]
        ids: dict[str, int] = {}
        for o in bad:
            for a in {a.split(":", 1)[1] for a in o.alarms()} | set(o.online_alarms):
                ids[a] = ids.get(a, 0) + 1
        first = statistics.median(o.heldout[0] for o in runs)
        last = statistics.median(o.heldout[1] for o in runs)
        ests = sorted({o.job.estimator for o in runs})
        offline = sum(1 for o in runs if o.alarms())
        online = sum(1 for o in runs if o.online_alarms)
        rows.append([name, NEGATIVES[name].looks_like, str(len(runs)), str(len(ests)), f"{first:.2f} -> {last:.2f}",
                     f"{offline}/{len(runs)}", f"{online}/{len(runs)}",
                     ", ".join(f"{k} x{v}" for k, v in sorted(ids.items())) or "-"])
        total += len(runs)
        alarmed += len(bad)
    return rows, total, alarmed


NEGATIVE_HEAD = ["hard negative", "looks like", "runs", "estimators", "held-out success (median)",
                 "warned offline", "warned online", "detectors"]


# --- 2. detection delay --------------------------------------------------------------------------


def sustain_of(detector: str) -> tuple[int, bool]:
    """The detector's ``sustain`` knob default, and whether it has one (else :data:`SEED_SUSTAIN`)."""
    for k in REGISTRY[detector].knobs:
        if k.name == "sustain":
            return int(k.default), True
    return SEED_SUSTAIN, False


def delay_rows(outcomes: Iterable[Any]) -> tuple[list[list[str]], list[str]]:
    """Per lab fault: the online delay (median / worst) and how many runs the monitor caught, the
    offline onset error (signed: median / the largest in absolute value), the yardstick ``sustain``;
    and the faults whose online median delay exceeds it or is negative (the expected detector reported
    on the healthy prefix, before the fault existed)."""
    by: dict[str, list[Any]] = {}
    for o in outcomes:
        if o.job.fault is not None and o.job.online:
            by.setdefault(o.job.fault, []).append(o)
    rows, over = [], []
    for name in FAULTS:
        runs = by.get(name, [])
        if not runs:
            continue
        online = [d for o in runs if (d := o.online_delay()) is not None]
        offline = []
        for o in runs:
            hit = o.detector()
            if hit is not None and hit[1] is not None and o.truth_onset is not None:
                offline.append(hit[1] - o.truth_onset)
        sustain, own = sustain_of(FAULTS[name].detectors[0])
        med = statistics.median(online) if online else math.inf
        ok = 0 <= med <= sustain  # before the onset is a report on the healthy prefix: not a detection
        if not ok:
            over.append(name)
        verdict = "yes" if ok else "NO (before the onset)" if med < 0 else "NO"
        rows.append([name, "/".join(FAULTS[name].detectors), str(len(runs)), f"{len(online)}/{len(runs)}",
                     _med_max(online), f"{sustain}" + ("" if own else " (seed)"), verdict,
                     f"{len(offline)}/{len(runs)}", _med_max(offline)])
    return rows, over


DELAY_HEAD = ["fault", "expected", "runs", "online found", "online delay med / worst", "sustain",
              "med <= sustain", "offline found", "offline onset err med / worst"]


# --- 3. precision and recall ---------------------------------------------------------------------


@dataclass
class Counts:
    """One detector's marks over a set of labelled runs."""

    should: int = 0
    hits: int = 0
    should_not: int = 0
    false: int = 0
    unlabelled_fired: int = 0
    false_runs: list[str] = field(default_factory=list)

    def row(self, detector: str) -> list[str]:
        recall = f"{100 * self.hits / self.should:.0f}%" if self.should else "-"
        far = f"{100 * self.false / self.should_not:.1f}%" if self.should_not else "-"
        fired = self.hits + self.false
        precision = f"{100 * self.hits / fired:.0f}%" if fired else "-"
        return [detector, f"{self.hits}/{self.should}", recall, f"{self.false}/{self.should_not}", far, precision,
                str(self.unlabelled_fired)]


PR_HEAD = ["detector", "fired / should fire", "recall", "fired / should not", "false-alarm rate", "precision",
           "fired, unlabelled"]


def _fired_lab(o: Any) -> set[str]:
    return {f[0] for f in o.verdicts["both"][2] if f[1] in _BAD}


def precision_recall_lab(outcomes: Iterable[Any]) -> dict[str, Counts]:
    """Per detector ID, over the lab runs (the ``both`` recording: the score card's verdict)."""
    counts = {d: Counts() for d in REGISTRY}
    for o in outcomes:
        fired = _fired_lab(o)
        label = f"{o.job.negative or o.job.fault or 'healthy'}/{o.job.estimator}/{o.job.seed}"
        for d, c in counts.items():
            if o.job.fault is not None:
                if d in o.expected:
                    c.should += 1
                    c.hits += d in fired
                elif d in fired:
                    c.unlabelled_fired += 1
            else:
                c.should_not += 1
                if d in fired:
                    c.false += 1
                    c.false_runs.append(label)
    return counts


def precision_recall_real(scores: Iterable[Any], runs: Iterable[Any], split: str) -> dict[str, Counts]:
    """Per detector ID, over the real runs of ``split`` (``scores``: ``bench/real_score.py``'s, with
    ``fired``; ``runs``: the manifest's :class:`tests.real.corpus.RealRun`)."""
    expect = {r.name: r.expect for r in runs}
    counts = {d: Counts() for d in REGISTRY}
    for s in scores:
        if s.split != split:
            continue
        e = expect[s.name]
        fired = set(s.fired)
        for d, c in counts.items():
            if d in e.headline and e.status == "lost":
                c.should += 1
                c.hits += d in fired
            elif d in e.must_not_fire or e.healthy:
                c.should_not += 1
                if d in fired:
                    c.false += 1
                    c.false_runs.append(s.name)
            elif d in fired:
                c.unlabelled_fired += 1
    return counts


def pr_rows(counts: dict[str, Counts]) -> list[list[str]]:
    return [c.row(d) for d, c in counts.items() if c.should or c.should_not or c.unlabelled_fired]
