"""``advcore compare``: every lab fault against its healthy twin (same seed, estimator and scenario, the
fault never switched on) parts first at the fault's stage, within 5 steps of the true onset; two runs
that differ only by their noise do not part."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from advcore.cli import main
from advcore.compare import compare_runs
from advcore.ingest import load
from advcore.lab.faults import FAULTS, Setting
from advcore.lab.record import write
from advcore.lab.run import LabConfig, run
from advcore.model import Run
from advcore.scan import ScanOptions, collect_paths, is_quiet_miss, scan
from tests._html import read_page

ONSET = 30


def _twins(fault: str, tmp_path: Path) -> tuple[Path, Path]:
    """The recordings (per-step metrics and per-sample rows, one folder each) of the fault's run and of
    its healthy twin."""
    f = FAULTS[fault]
    estimator = "ppo" if "grpo" not in f.estimators else "grpo"
    base = {"estimator": estimator, "seed": 0, "steps": 70, "onset": ONSET}
    write(run(LabConfig(base=Setting().updated(f.scenario), **base)), tmp_path / f"{fault}-healthy")  # type: ignore[arg-type]
    write(run(LabConfig(fault=fault, **base)), tmp_path / fault)  # type: ignore[arg-type]
    return tmp_path / f"{fault}-healthy", tmp_path / fault


def _run(folder: Path) -> Run:
    """The recording's files joined into one run, as a scan reads the folder."""
    collected = collect_paths([str(folder)])
    [report] = [r for r in scan(collected.files, ScanOptions()) if not is_quiet_miss(r, collected.explicit)]
    return report.run


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_every_lab_fault_parts_at_its_stage_and_onset(fault: str, tmp_path: Path) -> None:
    a, b = _twins(fault, tmp_path)
    result = compare_runs(_run(a), _run(b))
    first = result.first
    assert first is not None, fault
    assert abs(first.step - ONSET) <= 5, (fault, first)
    if FAULTS[fault].stage != "any":
        assert first.stage == FAULTS[fault].stage, (fault, first)
    # before the onset the twins are the same run: nothing parts earlier
    assert all(d.step is None or d.step >= ONSET for d in result.divergences), fault


def test_runs_that_differ_by_noise_and_an_offset_do_not_part(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    steps = np.arange(1, 201)
    level = 0.3 + 0.002 * steps
    for name, shift in (("a", 0.0), ("b", 0.05)):  # another stack: its reward 0.05 higher all along
        pl.DataFrame({"step": steps, "reward_mean": level + shift + rng.normal(0, 0.02, steps.size),
                      "grad_norm": 1.0 + rng.normal(0, 0.05, steps.size)}).write_ndjson(tmp_path / f"{name}.jsonl")
    result = compare_runs(load(tmp_path / "a.jsonl"), load(tmp_path / "b.jsonl"))
    assert result.common_steps == 200 and result.first is None
    assert [d.metric for d in result.divergences] == ["reward_mean", "grad_norm"]
    assert result.divergences[0].offset == pytest.approx(0.05, abs=0.03)


def test_a_value_gone_nonfinite_parts_at_once(tmp_path: Path) -> None:
    rows = [{"step": s, "reward_mean": 0.5, "grad_norm": 1.0} for s in range(1, 41)]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    broken = [{**r, "grad_norm": float("nan") if r["step"] >= 25 else 1.0} for r in rows]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r).replace("NaN", '"nan"') + "\n" for r in broken))
    result = compare_runs(load(tmp_path / "a.jsonl"), load(tmp_path / "b.jsonl"))
    assert result.first is not None and (result.first.stage, result.first.step) == ("U", 25)
    assert result.first.nonfinite


def test_cli_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _twins("lr_too_small", tmp_path)
    assert main(["compare", str(a), str(b), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["first"]["stage"] == "U" and abs(doc["first"]["step"] - ONSET) <= 5
    assert [v["status"] for v in doc["verdicts"]] == ["quiet", "lost"]
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "they part first at stage U" in out and max(len(line) for line in out.splitlines()) <= 80
    assert main(["compare", str(a), str(tmp_path)]) == 2  # a folder of several runs: name one


def test_side_by_side_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both runs drawn on each plot (two lines per plot), the parting step marked where one was found."""
    pytest.importorskip("matplotlib")
    a, b = _twins("tight_grad_clip", tmp_path)
    page_path = tmp_path / "side.html"
    assert main(["compare", str(a), str(b), "--out", str(page_path)]) == 0
    capsys.readouterr()
    page = read_page(page_path)
    assert page.external == [] and {f["stage"] for f in page.figures} >= {"R", "T", "U"}
    for fig in page.figures:
        assert fig["lines"] >= 2 * fig["plots"], fig["stage"]
    u = next(f for f in page.figures if f["stage"] == "U")
    assert any(t.startswith(f"parts at {ONSET}") for t in u["texts"])
