from __future__ import annotations

from pathlib import Path

import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import tensorboard

from tests._real import REAL


def _event(run: str) -> Path:
    found = sorted((REAL / run).glob("events.out.tfevents.*")) if (REAL / run).is_dir() else []
    if not found:
        pytest.skip(f"real log not found under {REAL / run}")
    return found[0]


def test_corrupt_and_empty_event_file(tmp_path: Path) -> None:
    p = tmp_path / "events.out.tfevents.1.host"
    p.write_bytes(b"\x00\x01garbage")
    assert detect(p) is tensorboard
    run = load(p)
    assert run.steps == 0 and run.errors


def test_sb3_constant_obs() -> None:
    run = load(_event("carla-sb3-ppo-constant-obs"))
    assert run.format == "tensorboard" and run.trainer == "sb3" and run.errors == ()
    f = run.frame
    assert run.steps == 25 and f["step"][0] == 1024 and f["step"][-1] == 25600
    assert f["reward_mean"][0] == pytest.approx(-9.0956, abs=1e-3)
    assert f["reward_mean"][-1] == pytest.approx(-7.52, abs=0.01)
    ev = f["vf_explained_var"].drop_nulls()
    assert ev.len() == 24 and ev.abs().max() < 1e-6  # type: ignore[operator]


def test_sb3_kl_blowup_has_no_reward() -> None:
    raw = tensorboard.read(_event("carla-sb3-ppo-kl-blowup"))
    assert raw.frame["step"][0] == 1024 and raw.frame["step"][-1] == 17408
    kl = raw.frame["train/approx_kl"].drop_nulls()
    assert kl[0] == pytest.approx(52.547, abs=1e-3) and kl[1] == pytest.approx(48.950, abs=1e-3)
    run = load(_event("carla-sb3-ppo-kl-blowup"))
    assert "reward_mean" not in run.metrics
    assert run.frame["kl_step"].max() == pytest.approx(52.547, abs=1e-3)
