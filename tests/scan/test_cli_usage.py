"""Command-line mistakes get a usage error naming what is wrong (exit 2), never a traceback; a
knob that is not a finite number is refused rather than silently turning its detector off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advcore.cli import main


def _jsonl(path: Path, n: int = 8) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"step": i, "reward_mean": 0.5, "reward_std": 0.1}) + "\n"
                            for i in range(1, n + 1)))
    return path


def _usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err and "Error:" in err
    return err


@pytest.mark.parametrize(("value", "shown"), [("1e400", "1e400"), ("nan", "nan"), ("NaN", "NaN"), ("-inf", "-inf"),
                                              ("Infinity", "Infinity")])
@pytest.mark.parametrize("knob", ["DEGENERATE_GROUPS.sustain", "DEGENERATE_GROUPS.tied_above"])
def test_a_knob_must_be_a_finite_number(tmp_path: Path, capsys: pytest.CaptureFixture[str], knob: str, value: str,
                                        shown: str) -> None:
    log = _jsonl(tmp_path / "m.jsonl")
    for command in ("scan", "trace"):
        err = _usage_error(capsys, command, str(log), "--set", f"{knob}={value}")
        assert knob in err and "finite" in err and shown in err


def test_jobs_must_be_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _jsonl(tmp_path / "m.jsonl")
    for jobs in ("-1", "0"):
        assert "--jobs" in _usage_error(capsys, "scan", str(log), "--jobs", jobs)


def test_a_metric_map_key_with_name_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _jsonl(tmp_path / "m.jsonl")
    table = tmp_path / "map.csv"
    table.write_text("trainer,key,canonical,versions,note\n*,ok_key,reward_mean,,\n*,{name}/x/{name},reward/{name},,\n")
    err = _usage_error(capsys, "scan", str(log), "--metric-map", str(table))
    assert f"{table}:3" in err and "{name} once" in err
    table.write_text("trainer,key,canonical,versions,note,scale\n*,r,reward_mean,,,nan\n")
    assert f"{table}:2" in _usage_error(capsys, "scan", str(log), "--metric-map", str(table))
    table.write_text("trainer,key,canonical\n*,r\n")  # a short row
    assert f"{table}:2" in _usage_error(capsys, "scan", str(log), "--metric-map", str(table))


def test_trace_out_into_a_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "samples.jsonl"
    dump.write_text("".join(json.dumps({"step": s, "group": g, "reward": float((s + g + k) % 2)}) + "\n"
                            for s in range(1, 4) for g in range(2) for k in range(4)))
    missing = tmp_path / "no" / "such" / "trace.parquet"
    err = _usage_error(capsys, "trace", str(dump), "--out", str(missing))
    assert "--out" in err and str(missing.parent) in err
    assert not missing.parent.exists()


def test_relative_and_absolute_paths_in_one_call(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _jsonl(tmp_path / "a" / "m.jsonl")
    _jsonl(tmp_path / "b" / "m.jsonl")
    monkeypatch.chdir(tmp_path)
    for fmt in ("human", "markdown", "json"):
        code = main(["scan", "--format", fmt, "a/m.jsonl", str(tmp_path / "b" / "m.jsonl")])
        out, err = capsys.readouterr()
        assert code == 0 and "Traceback" not in out + err
        assert "a/m.jsonl" in out and str(tmp_path / "b" / "m.jsonl") in out


def test_an_unknown_log_format_names_the_known_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from advcore.ingest.formats import BY_NAME

    err = _usage_error(capsys, "scan", str(_jsonl(tmp_path / "m.jsonl")), "--log-format", "mlflowx")
    assert "'mlflowx' is not one of" in err and all(f"'{name}'" in err for name in BY_NAME)
