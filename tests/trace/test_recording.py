"""A monitor's recording read back by ``advcore scan``: the same per-step run the detectors saw
online (reference checks and trainer metrics included), and the same findings."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

import advcore
from advcore.detectors import run_detectors
from advcore.ingest import load


def test_a_recording_reads_back_as_the_run_the_detectors_saw(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rng = np.random.default_rng(0)
    tracer = advcore.Monitor(detect_budget=None, strict=True, alert_trackers=False)
    with caplog.at_level(logging.WARNING, logger="advcore"):
        for step in range(1, 13):
            rewards = (rng.random(64) < 0.5).astype(np.float32) if step < 4 else np.zeros(64, np.float32)
            tracer.observe(step, rewards=rewards, group_size=8, metrics={"truncated_frac": 0.9})
    # each finding is logged once, with its onset and the step at which it was detected
    # (found by the first pass, at step 6, and reported once the next pass confirms it)
    assert any(r.getMessage().startswith("DEGENERATE_GROUPS since step 4 (detected at step 7)") for r in caplog.records)
    path = tmp_path / "trace.parquet"
    tracer.write_parquet(path)
    run = load(path)
    assert run.format == "trace" and run.errors == ()
    online = tracer.run().frame
    assert run.frame.select(online.columns).equals(online)  # trainer metric and reference checks kept
    assert "truncated_frac" in run.metrics and "reward_imputed_zero_frac" in run.metrics
    assert run.trace is not None and set(run.trace["stage"].unique()) == {"reward"}
    ids = sorted(f.id for f in run_detectors(run)[0])
    assert ids == sorted(f.id for f in run_detectors(tracer.run())[0]) and "TRUNCATION_REWARD" in ids
