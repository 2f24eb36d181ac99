"""The online path and the batch scan run the same detector code: on every lab fault (and a healthy
run), a Monitor fed the run step by step ends with the findings that ``advcore scan`` gives for the
same data written as a log (IDs, stages, onsets), from the per-step metrics (``metrics.jsonl``) and
from the per-sample arrays (``samples.parquet``); and the fault's finding was reported while the
run went on (a pass at every step: ``detect_budget=None``). With the default budget the passes
are spaced in wall time; the last one, at ``close()``, ends with the same findings."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import advcore
from advcore.detectors import Finding, run_detectors
from advcore.ingest import load
from advcore.lab import record
from advcore.lab.faults import FAULTS
from advcore.lab.run import LabConfig
from advcore.lab.run import run as lab_run

QUIET = logging.getLogger("advcore.test.online")
QUIET.disabled = True


def _key(findings: list[Finding]) -> list[tuple[str, str, int | None]]:
    return sorted((f.id, f.stage, f.onset_step) for f in findings)


@pytest.mark.parametrize("fault", [None, *FAULTS])
def test_online_and_batch_findings_agree(fault: str | None, tmp_path: Path) -> None:
    estimator = FAULTS[fault].estimators[0] if fault else "grpo"
    result = lab_run(LabConfig(fault=fault, estimator=estimator, seed=1, steps=60, onset=25))
    files = record.write(result, tmp_path, fmt="jsonl")
    expected = set(FAULTS[fault].detectors) if fault else set()
    batch, _ = run_detectors(load(files["steps"]))
    mon = advcore.Monitor(logger=QUIET, alert_trackers=False, strict=True, detect_budget=None)
    for row in result.steps.iter_rows(named=True):
        mon.observe(int(row["step"]), metrics={k: v for k, v in row.items() if k != "step" and v is not None})
    online, _ = run_detectors(mon.run())
    assert mon.errors == 0 and _key(online) == _key(batch)
    # where the scan finds the fault, the monitor reported it while the run went on
    assert {f.id for f in batch} & expected <= {f.id for f in mon.findings}
    seen_in_steps = {f.id for f in batch}

    batch, _ = run_detectors(load(files["samples"]))
    mon = advcore.Monitor(logger=QUIET, alert_trackers=False, strict=True, detect_budget=None)
    stages = {"adv": "advantages", "adv_raw": "adv_raw", "value": "baseline", "return": "returns"}
    for step, part in result.samples.group_by("step", maintain_order=True):
        arrays = {kw: part[col].to_numpy() for col, kw in stages.items() if col in part.columns}
        mon.observe(int(step[0]), rewards=part["reward"].to_numpy(), group_ids=part["group"].to_numpy(), **arrays)
    online, _ = run_detectors(mon.run())
    assert mon.errors == 0 and _key(online) == _key(batch)
    assert {f.id for f in batch} & expected <= {f.id for f in mon.findings}
    if fault is not None:  # each fault is found by the scan of its metrics or of its samples
        assert expected & ({f.id for f in batch} | seen_in_steps)


@pytest.mark.parametrize("fault", ["nonfinite", "lr_too_small"])
def test_with_the_default_budget_the_last_pass_finds_the_same(fault: str, tmp_path: Path) -> None:
    result = lab_run(LabConfig(fault=fault, estimator=FAULTS[fault].estimators[0], seed=1, steps=60, onset=25))
    batch, _ = run_detectors(load(record.write(result, tmp_path, fmt="jsonl")["steps"]))
    mon = advcore.Monitor(logger=QUIET, alert_trackers=False, strict=True)
    for row in result.steps.iter_rows(named=True):
        mon.observe(int(row["step"]), metrics={k: v for k, v in row.items() if k != "step" and v is not None})
    mon.close()
    assert {f.id for f in batch} <= {f.id for f in mon.findings}
