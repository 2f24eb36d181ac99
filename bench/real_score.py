"""Score advcore's verdicts on the real-log corpus against the expectations written from each run's
source (``tests/real/corpus.toml``): calibration and validation side by side.

    python bench/real_score.py [--split calibration|validation|all] [--runs] [--json] [--jobs 2]

Per run, the files are scanned as ``advcore scan`` would scan them (files of one run joined). When
they still give several runs, the run's verdict is the lost one with the most steps, else the one
with the most steps. Marks:

* stage: a run expected lost has verdict status ``lost`` at the expected stage; a run expected
  quiet (or not judged) has that status;
* headline: the verdict's lead finding is one of the expected IDs (quiet: the verdict is not
  ``lost``);
* onset: the verdict's onset lies in the expected range widened by 10 % of the run's step span,
  at least 5 steps (runs without an expected onset are not counted);
* healthy judged quiet: a healthy run was read, judged, and has no warning or error finding
  (``Q``; ``!`` when it has one, ``-`` when it was unreadable or not judged); the table also counts
  the healthy runs with a warning (a false alarm, which an unreadable run is not);
* forbidden: a finding the expectation lists under ``must_not_fire`` fired (warn or error).

Runs whose files are absent are listed as such (``tests/real/extract.py`` brings them).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advcore.scan import RunReport, ScanOptions, scan  # noqa: E402
from tests.real.corpus import CORPUS, SHARED, RealRun, load_manifest  # noqa: E402

_BAD = ("warn", "error")


@dataclass(frozen=True, slots=True)
class Score:
    name: str
    split: str
    expected: str
    got: str
    stage: bool
    headline: bool
    onset: bool | None
    #: healthy runs: judged and quiet (None for a run that is not healthy)
    healthy_quiet: bool | None
    #: healthy runs: a warning or error fired (None for a run that is not healthy)
    healthy_warned: bool | None
    forbidden: tuple[str, ...]
    #: every detector ID with a warn or error finding on the run (any of its reports)
    fired: tuple[str, ...] = ()


def _verdict(reports: list[RunReport]) -> RunReport:
    lost = [r for r in reports if r.verdict.status == "lost"]
    return max(lost or reports, key=lambda r: r.run.steps)


def _span(report: RunReport) -> int:
    steps = report.run.frame["step"].drop_nulls()
    return int(steps.max() - steps.min()) if len(steps) else 0  # type: ignore[operator]


def score_run(run: RealRun) -> Score:
    paths = [run.folder / Path(p).name for p, _ in run.files]
    reports = scan(paths, ScanOptions(), jobs=1)
    r = _verdict(reports)
    v, e = r.verdict, run.expect
    status_ok = v.status == e.status
    stage_ok = status_ok and (e.status != "lost" or (v.stage or "") == e.stage)
    headline_ok = v.headline in e.headline if e.status == "lost" else v.status != "lost"
    onset: bool | None = None
    if e.onset is not None:
        slack = max(5.0, 0.1 * _span(r))
        onset = v.onset is not None and e.onset[0] - slack <= v.onset <= e.onset[1] + slack
    fired = {f.id for rep in reports for f in rep.findings if f.severity in _BAD}
    quiet = v.status == "quiet" and not fired if e.healthy else None
    warned = bool(fired) if e.healthy else None
    expected = f"{e.status} {e.stage} {'/'.join(e.headline)} {list(e.onset) if e.onset else ''}".strip()
    got = f"{v.status} {v.stage or ''} {v.headline or ''} {v.onset if v.onset is not None else ''}".strip()
    return Score(run.name, run.split, expected, " ".join(got.split()), stage_ok, headline_ok, onset, quiet, warned,
                 tuple(sorted(fired & set(e.must_not_fire))), tuple(sorted(fired)))


def score_runs(runs: list[RealRun], jobs: int = 1) -> list[Score]:
    """:func:`score_run` over the present ``runs``, in a pool of ``jobs`` processes (spawned: Polars'
    threads do not survive a fork), in the order given."""
    present = [r for r in runs if r.present]
    if jobs <= 1:
        return [score_run(r) for r in present]
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        return list(pool.map(score_run, present, chunksize=4))


def summarise(scores: list[Score]) -> dict[str, Any]:
    def share(marks: list[bool]) -> str:
        return f"{sum(marks)}/{len(marks)} ({100 * sum(marks) / len(marks):.0f}%)" if marks else "-"

    onsets = [s.onset for s in scores if s.onset is not None]
    healthy = [s.healthy_quiet for s in scores if s.healthy_quiet is not None]
    warned = [s.healthy_warned for s in scores if s.healthy_warned is not None]
    return {
        "runs": len(scores),
        "stage right": share([s.stage for s in scores]),
        "headline right": share([s.headline for s in scores]),
        "onset right": share(onsets),
        "healthy runs judged quiet": share(healthy),
        "healthy runs with a warning": sum(1 for w in warned if w),
        "forbidden findings": sum(len(s.forbidden) for s in scores),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=["calibration", "validation", "all"], default="all")
    parser.add_argument("--runs", action="store_true", help="one line per run")
    parser.add_argument("--json", action="store_true", help="the scores as JSON")
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    args = parser.parse_args(argv)
    runs = [r for r in load_manifest() if args.split in ("all", r.split)]
    absent = [r.name for r in runs if not r.present]
    scores = score_runs(runs, args.jobs)
    by_split = {split: summarise([s for s in scores if s.split == split]) for split in ("calibration", "validation")}
    if args.json:
        print(json.dumps({"splits": by_split, "runs": [asdict(s) for s in scores], "absent": absent}, indent=2))
        return 0
    if args.runs:
        for s in sorted(scores, key=lambda s: (s.split, s.name)):
            marks = "".join(("S" if s.stage else "-", "H" if s.headline else "-",
                             " " if s.onset is None else ("O" if s.onset else "-"),
                             " " if s.healthy_quiet is None else
                             "Q" if s.healthy_quiet else "!" if s.healthy_warned else "-"))
            forbidden = f"  forbidden: {', '.join(s.forbidden)}" if s.forbidden else ""
            print(f"{s.split[:3]} {marks} {s.name:44} expected {s.expected:50} got {s.got}{forbidden}")
        print()
    names = list(next(iter(by_split.values())))
    print(f"{'':28} {'calibration':>18} {'validation':>18}")
    for key in names:
        print(f"{key:28} {by_split['calibration'][key]!s:>18} {by_split['validation'][key]!s:>18}")
    if absent:
        print(f"\n{len(absent)} runs absent (shared data at {SHARED}, fetched runs at {CORPUS}; "
              f"tests/real/extract.py --clones DIR brings them): {', '.join(absent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
