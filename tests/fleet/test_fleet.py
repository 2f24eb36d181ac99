"""The fleet table (advcore.fleet, ``advcore scan --out``): one row per run, equal to what the plain
scan concludes run by run; a cache that reads again only what changed; nothing lost to an
interrupted scan; Parquet and CSV output."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from advcore.cli import main
from advcore.fleet import FleetCache, fleet_frame, scan_fleet, scan_many
from advcore.scan import ScanOptions, collect_paths, scan


def _run(path: Path, *, dies: bool, n: int = 40) -> Path:
    """A verl JSONL run: the reward spread (max - min) gone from step 20 when ``dies``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for s in range(1, n + 1):
        spread = 0.0 if dies and s >= 20 else 0.5
        mean = 0.2 + 0.005 * s
        rows.append({"step": s, "data": {"critic/score/mean": mean, "critic/score/max": mean + spread / 2,
                                         "critic/score/min": mean - spread / 2}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def archive(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    _run(root / "a" / "exp.jsonl", dies=False)
    _run(root / "b" / "exp.jsonl", dies=True)
    _run(root / "c" / "d" / "exp.jsonl", dies=True)
    (root / "c" / "notes.md").write_text("# just notes\n")
    (root / "broken.jsonl").write_text('{"step": 1, "da\n')
    return root


def test_one_row_per_run_as_the_scan_concludes(archive: Path, tmp_path: Path) -> None:
    files = collect_paths([str(archive)]).files
    expected = {r.run.path: (r.verdict.status, r.verdict.headline, r.verdict.onset, r.verdict.summary)
                for r in scan(files, ScanOptions(), jobs=1)}
    del expected[str(archive / "c" / "notes.md")]  # a note in a folder is no run
    frame = scan_many([archive], cache=tmp_path / "cache.sqlite", jobs=2)
    got = {row["path"]: (row["status"], row["headline"], row["onset_step"], row["summary"])
           for row in frame.iter_rows(named=True)}
    assert got == expected
    assert got[str(archive / "b" / "exp.jsonl")][0] == "lost" and got[str(archive / "a" / "exp.jsonl")][0] == "quiet"
    broken = frame.filter(pl.col("path") == str(archive / "broken.jsonl")).row(0, named=True)
    assert broken["status"] == "unreadable" and broken["errors"] and broken["errors"][0].startswith(str(archive))


def test_a_grown_archive_scans_only_what_changed(archive: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    first = scan_many([archive], cache=cache, jobs=1)
    assert not first["cached"].any()
    _run(archive / "e" / "new.jsonl", dies=False)
    second = scan_many([archive], cache=cache, jobs=1)
    assert second.filter(~pl.col("cached"))["path"].to_list() == [str(archive / "e" / "new.jsonl")]
    (archive / "a" / "exp.jsonl").write_text((archive / "a" / "exp.jsonl").read_text() + '{"step": 41, "data": {}}\n')
    third = scan_many([archive], cache=cache, jobs=1)
    assert third.filter(~pl.col("cached"))["path"].to_list() == [str(archive / "a" / "exp.jsonl")]
    assert third.drop("cached").equals(second.drop("cached").with_columns(
        pl.when(pl.col("path") == str(archive / "a" / "exp.jsonl")).then(third["steps"]).otherwise(pl.col("steps"))
        .alias("steps")))


def test_an_interrupted_scan_keeps_what_it_finished(archive: Path, tmp_path: Path) -> None:
    cache = FleetCache(tmp_path / "cache.sqlite")
    files = collect_paths([str(archive)]).files
    done: list[int] = []

    def progress(k: int) -> None:
        done.append(k)
        if len(done) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        scan_fleet(files, jobs=1, cache=cache, progress=progress)
    rows = scan_fleet(files, jobs=1, cache=cache)
    assert sum(row["cached"] for row in rows) == 2  # the two folders finished before Ctrl-C
    cache.close()


def test_cli_writes_parquet_and_csv(archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADVCORE_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["scan", str(archive), "--out", str(tmp_path / "fleet.parquet"), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "4 runs: 2 with a lost signal" in out and "the fleet table is in" in out
    table = pl.read_parquet(tmp_path / "fleet.parquet")
    assert table.height == 4 and set(table.columns) == set(fleet_frame([]).columns)
    assert main(["scan", str(archive), "--out", str(tmp_path / "fleet.csv"), "--jobs", "1"]) == 0
    assert "4 read from the cache, 0 scanned" in capsys.readouterr().out
    csv = pl.read_csv(tmp_path / "fleet.csv")
    lost = csv.filter(pl.col("path") == str(archive / "b" / "exp.jsonl")).row(0, named=True)
    headline = table.filter(pl.col("path") == str(archive / "b" / "exp.jsonl"))["headline"][0]
    assert lost["findings"].startswith(f"{headline}:")
    assert main(["scan", str(archive), "--out", str(tmp_path / "fleet.txt")]) == 2
    assert "expected a .parquet or .csv file" in capsys.readouterr().err


def test_the_engine_auto_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    from advcore.errors import AdvcoreError
    from advcore.fleet import resolve_engine

    import sys

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delitem(sys.modules, "ray", raising=False)  # not inside a Ray job
    assert resolve_engine("auto") == "local"
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    assert resolve_engine("auto") == "ray" and resolve_engine("dask") == "dask"
    with pytest.raises(AdvcoreError, match="unknown engine 'spark'"):
        resolve_engine("spark")


def test_a_run_folder_that_grows_in_place_is_scanned_again(tmp_path: Path) -> None:
    """An MLflow folder-store run appends to its metrics files: the folder's own time does not move."""
    run = tmp_path / "mlruns" / "1" / "abc"
    (run / "metrics").mkdir(parents=True)
    (tmp_path / "mlruns" / "1" / "meta.yaml").write_text("name: exp\n")
    (run / "meta.yaml").write_text("run_name: r\n")
    metric = run / "metrics" / "reward"
    metric.write_text("".join(f"{s} {0.01 * s} {s}\n" for s in range(20)))
    cache = tmp_path / "cache.sqlite"
    first = scan_many([tmp_path / "mlruns"], cache=cache, jobs=1)
    assert first["steps"].to_list() == [20]
    with metric.open("a") as f:
        f.write("".join(f"{s} {0.01 * s} {s}\n" for s in range(20, 30)))
    second = scan_many([tmp_path / "mlruns"], cache=cache, jobs=1)
    assert second["steps"].to_list() == [30] and not second["cached"].any()


def test_the_table_is_an_arrow_stream_for_other_tools(archive: Path, tmp_path: Path) -> None:
    """DuckDB, pyarrow and pandas read a Polars frame through the Arrow PyCapsule interface, without a copy."""
    frame = scan_many([archive], cache=False, jobs=1)
    capsule = frame.__arrow_c_stream__()
    assert type(capsule).__name__ == "PyCapsule" and "arrow_array_stream" in repr(capsule)


def test_a_killed_worker_costs_its_folder_only_and_is_tried_again(archive: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from advcore import fleet
    from tests.fleet import _dying

    _run(archive / "poison" / "exp.jsonl", dies=False)
    monkeypatch.setattr(fleet, "_scan_folder", _dying.scan_or_die)
    cache = tmp_path / "cache.sqlite"
    frame = scan_many([archive], cache=cache, jobs=2, engine="local")
    poison = frame.filter(pl.col("path") == str(archive / "poison" / "exp.jsonl")).row(0, named=True)
    assert poison["status"] == "unreadable" and "worker scanning it died" in poison["errors"][0]
    others = frame.filter(pl.col("path") != str(archive / "poison" / "exp.jsonl"))
    assert set(others["status"]) == {"lost", "quiet", "unreadable"} and others.height == 4
    assert others.filter(pl.col("path") == str(archive / "b" / "exp.jsonl"))["status"].item() == "lost"
    # the next scan reads the others from the cache and tries the dead folder again
    monkeypatch.setattr(fleet, "_scan_folder", _dying._REAL)
    again = scan_many([archive], cache=cache, jobs=1)
    assert again.filter(~pl.col("cached"))["path"].to_list() == [str(archive / "poison" / "exp.jsonl")]
    assert again.filter(pl.col("path") == str(archive / "poison" / "exp.jsonl"))["status"].item() == "quiet"


def test_bad_files_are_rows_with_their_error_and_the_rest_completes(archive: Path, tmp_path: Path) -> None:
    (archive / "corrupt").mkdir()
    (archive / "corrupt" / "samples.parquet").write_bytes(b"PAR1" + b"\x00garbage" * 50 + b"PAR1")
    (archive / "empty").mkdir()
    (archive / "empty" / "train.log").write_text("")
    _run(archive / "gone" / "exp.jsonl", dies=False)
    files = collect_paths([str(archive)]).files
    (archive / "gone" / "exp.jsonl").unlink()  # disappears between listing and scanning
    rows = {row["path"]: row for row in scan_fleet(files, jobs=2)}
    for name in ("corrupt/samples.parquet", "empty/train.log", "gone/exp.jsonl"):
        row = rows[str(archive / name)]
        assert row["status"] == "unreadable" and row["errors"][0].startswith(str(archive / name)), row
    assert rows[str(archive / "b" / "exp.jsonl")]["status"] == "lost"
    assert rows[str(archive / "a" / "exp.jsonl")]["status"] == "quiet"


@pytest.mark.parametrize("call", [
    "advcore.scan_many([root], jobs=2, cache=False)['status'].to_list()",
    "[r.verdict.status for r in scan(sorted(root.rglob('*.jsonl')), jobs=2)]",
    # the report draws its figures on workers from 24 runs on
    "[r.verdict.status for r in reports] if render_html(reports, jobs=2).count('<section') == len(reports) else []"])
def test_a_script_without_a_main_guard_is_scanned_in_its_own_process(archive: Path, tmp_path: Path,
                                                                      call: str) -> None:
    # Python's spawn start method runs the main script again in each worker: unguarded, every worker dies as it
    # starts; the scan goes on in the script's process and says why
    import subprocess
    import sys

    for k in range(24):  # enough files for scan() and the report to use workers
        _run(archive / f"more{k}" / "exp.jsonl", dies=k % 2 == 0)
    script = tmp_path / "unguarded.py"
    script.write_text("import pathlib\nimport advcore\nfrom advcore.report.html import render_html\n"
                      "from advcore.scan import scan\n"
                      f"root = pathlib.Path({str(archive)!r})\n"
                      "reports = scan(sorted(root.rglob('*.jsonl')), jobs=1)\n"
                      f"print('STATUSES', {call})\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("STATUSES")]
    statuses = eval(line.removeprefix("STATUSES "))  # noqa: S307 (our own script's printed list)
    assert statuses.count("lost") == 14 and "could not start worker processes" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr
