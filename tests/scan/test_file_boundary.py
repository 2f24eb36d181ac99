"""Nothing one file contains ends the scan of the others: values near the float maximum are judged,
and a failure while judging one run is that run's error."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

import advcore.scan
from advcore.detectors._windows import change_point, fmean
from advcore.scan import ScanOptions, collect_paths, scan


def test_fmean_is_exact_and_does_not_overflow() -> None:
    for xs in ([1e308, 1e308, -5e307], [1e308] * 7, [0.1, 0.2, 0.3], [-1.7e308, 1.7e308, 3.0]):
        exact = sum((Fraction(x) for x in xs), Fraction(0)) / len(xs)  # the oracle: exact rational arithmetic
        assert fmean(xs) == pytest.approx(float(exact), rel=1e-15)
    assert fmean([float("inf"), float("-inf")]) != fmean([float("inf"), float("-inf")])  # NaN
    # a change point of values near the float maximum is where it is for the same values scaled down
    big = [1e308] * 10 + [1e307] * 10
    assert change_point(tuple(big)) == change_point(tuple(v / 1e300 for v in big)) == 10


def _jsonl(path: Path, rewards: list[float]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)  # one run per folder: files of one folder are one run
    path.write_text("".join(json.dumps({"step": i + 1, "reward_mean": r, "reward_std": 0.5}) + "\n"
                            for i, r in enumerate(rewards)))
    return path


def test_a_log_of_huge_values_is_judged_beside_the_others(tmp_path: Path) -> None:
    _jsonl(tmp_path / "a" / "huge.jsonl", [1.5e308, 1.7e308] * 20)
    _jsonl(tmp_path / "b" / "good.jsonl", [0.1 * (i % 5) for i in range(40)])
    files = collect_paths([str(tmp_path)]).files
    reports = scan(files, ScanOptions(), jobs=1)
    assert sorted(Path(r.run.path).name for r in reports) == ["good.jsonl", "huge.jsonl"]
    assert all(r.run.steps == 40 for r in reports)


def test_a_failure_while_judging_one_run_is_that_runs_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = _jsonl(tmp_path / "a" / "bad.jsonl", [0.5] * 20)
    _jsonl(tmp_path / "b" / "good.jsonl", [0.5] * 20)
    real = advcore.scan.run_detectors

    def failing(run, **kw):  # type: ignore[no-untyped-def]
        if Path(run.path) == bad:
            raise ZeroDivisionError("a detector bug")
        return real(run, **kw)

    monkeypatch.setattr(advcore.scan, "run_detectors", failing)
    files = collect_paths([str(tmp_path)]).files
    reports = {Path(r.run.path).name: r for r in scan(files, ScanOptions(), jobs=1)}
    assert set(reports) == {"bad.jsonl", "good.jsonl"}
    (err,) = reports["bad.jsonl"].run.errors
    assert "ZeroDivisionError: a detector bug" in err.message and err.path == str(bad)
    assert not reports["good.jsonl"].run.errors
