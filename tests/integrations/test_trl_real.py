"""The TRL callback inside a real TRL ``GRPOTrainer`` (trl 1.16.0, transformers 5.24.0, torch 2.13.0):
a tiny random Llama on the CPU, an in-memory dataset, no network. The trainer setup is the fixture
generator's (tests/fixtures/trl_grpo_cpu/make.py), imported, not copied.

Oracles, per step: TRL's own logged ``frac_reward_zero_std`` (advcore's zero-variance share
from the samples must equal it), TRL's own advantages (the ``advantage`` column, what the loss
used; advcore's recomputation with TRL's constants must equal it), numpy on the completion
tables, and a reward function that is constant (the dead signal must be reported within the
sustain window, and ``stop_on="error"`` must stop the run). Run with ``make test-integration``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import polars as pl
import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

pytest.importorskip("trl")
pytest.importorskip("torch")

from advcore.detectors import REGISTRY  # noqa: E402
from advcore.ingest import load  # noqa: E402
from advcore.reference import grpo  # noqa: E402

MAKE = Path(__file__).resolve().parents[1] / "fixtures" / "trl_grpo_cpu" / "make.py"
G = 4


def _make() -> ModuleType:
    spec = importlib.util.spec_from_file_location("trl_grpo_cpu_make", MAKE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _train(name: str, out: Path, **kwargs: Any) -> tuple[Any, Any, list[dict[str, Any]]]:
    """Train run ``name`` with the advcore callback first and a tracker stand-in after it."""
    from transformers import TrainerCallback

    from advcore.integrations.trl import AdvcoreCallback

    seen: list[dict[str, Any]] = []

    class Tracker(TrainerCallback):  # type: ignore[misc]
        """What a reporting callback (W&B, TensorBoard) receives."""

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
            seen.append({"step": state.global_step, **(logs or {})})

    overrides = kwargs.pop("overrides", {})
    trainer = _make().trainer(name, out, callbacks=[Tracker()], **overrides)
    cb = AdvcoreCallback.attach(trainer, **kwargs)
    trainer.train()
    return trainer, cb, seen


def _table(out: Path, step: int) -> pl.DataFrame:
    return pl.read_parquet(out / "completions" / f"completions_{step:05d}.parquet")


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("healthy")
    trainer, cb, seen = _train("healthy", out)
    return out, trainer, cb, seen


def test_zero_variance_share_equals_trls_on_every_step(healthy: tuple[Path, Any, Any, list[dict[str, Any]]]) -> None:
    out, trainer, cb, _ = healthy
    logged = {int(r["step"]): r["frac_reward_zero_std"] for r in trainer.state.log_history
              if "frac_reward_zero_std" in r}
    assert sorted(logged) == list(range(1, 13))
    trace = cb.monitor.recording.frame.filter((pl.col("stage") == "reward") & (pl.col("slice") == "all")
                                           & (pl.col("statistic") == "zero_variance_group_frac"))
    ours = dict(zip(trace["step"].to_list(), trace["value"].to_list(), strict=True))
    assert sorted(ours) == sorted(logged)   # from the samples, every step
    for step, frac in logged.items():
        table = _table(out, step)
        r = (table["contains_target"] + table["brevity"]).to_numpy().reshape(-1, G)
        assert ours[step] == pytest.approx(frac), step
        assert ours[step] == pytest.approx(np.mean(np.ptp(r, axis=1) == 0)), step
    assert 0 < np.mean(list(logged.values())) < 1   # some groups tied, some not: the check can fail


def test_recomputed_advantages_equal_trls(healthy: tuple[Path, Any, Any, list[dict[str, Any]]]) -> None:
    out, _, cb, _ = healthy
    err = dict(zip(cb.monitor.steps_frame["step"].to_list(), cb.monitor.steps_frame["adv_recompute_err"].to_list(),
                   strict=True))
    for step in range(1, 13):
        table = _table(out, step)
        rewards = (table["contains_target"] + table["brevity"]).to_numpy()
        groups = np.arange(rewards.size) // G
        ours = grpo(rewards, groups, eps=1e-4, ddof=1)   # TRL 1.16: (r - mean) / (unbiased std + 1e-4)
        theirs = table["advantage"].to_numpy()
        m = rewards.reshape(-1, G)
        oracle = (rewards - np.repeat(m.mean(1), G)) / (np.repeat(m.std(1, ddof=1), G) + 1e-4)
        np.testing.assert_allclose(ours, oracle, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)   # TRL computes in float32
        assert np.abs(theirs).max() > 0.1
        assert err[step] <= 1.0, step   # the monitor's own per-step recomputation agrees too


def test_metrics_reach_the_logs_and_the_tracker(healthy: tuple[Path, Any, Any, list[dict[str, Any]]]) -> None:
    out, trainer, cb, seen = healthy
    rows = [r for r in seen if "loss" in r]
    assert len(rows) == 12
    assert "advcore/zero_variance_group_frac" not in rows[0]   # step 1's table is written after its log
    for r in rows[1:]:
        assert r["advcore/sample_step"] == r["step"] - 1
        prev = next(h for h in trainer.state.log_history if h.get("step") == r["step"] - 1)
        assert r["advcore/zero_variance_group_frac"] == pytest.approx(prev["frac_reward_zero_std"])
        assert {"advcore/adv_std", "advcore/spearman_adv_reward", "advcore/findings"} <= set(r)
        assert "advcore/reward_onepass_relerr" not in r   # log_metrics="core": the curated keys only
    history = [h for h in trainer.state.log_history if "loss" in h]
    assert all("advcore/adv_std" in h for h in history[1:])
    assert "reward_onepass_relerr" in cb.monitor.steps_frame.columns   # every metric is kept in the monitor
    assert cb.monitor.errors == 0
    run = load(out / "advcore_trace.parquet")   # the recording advcore scan reads
    assert run.frame["step"].to_list() == list(range(1, 13))
    step_times = [h["step_time"] for h in history]
    monitor_ms = [r["advcore/monitor_ms"] for r in rows[1:]]
    print(f"\nTRL step_time median {np.median(step_times) * 1e3:.1f} ms; advcore observe median "
          f"{np.median(monitor_ms):.2f} ms, max {np.max(monitor_ms):.2f} ms (16 samples per step)")


def test_dead_reward_is_reported_in_the_sustain_window_and_stops_the_run(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="advcore"):
        trainer, cb, _ = _train("dead", tmp_path, stop_on="error", overrides={"max_steps": 12})
    ids = {f.id: f for f in cb.monitor.findings}
    assert "DEGENERATE_GROUPS" in ids and "DEAD_FROM_START" in ids
    sustain = int(REGISTRY["DEGENERATE_GROUPS"].resolve({})["sustain"])
    onset = ids["DEGENERATE_GROUPS"].onset_step
    # found within the sustain window, reported once the next pass confirms it
    assert onset == 1 and cb.monitor.reported_at["DEGENERATE_GROUPS"] <= onset + sustain + cb.monitor.confirm - 1
    assert "DEGENERATE_GROUPS since step 1 (detected at step" in caplog.text
    assert trainer.state.global_step < 12   # stop_on="error" ended the run early
    logged = [h["frac_reward_zero_std"] for h in trainer.state.log_history if "frac_reward_zero_std" in h]
    assert logged and set(logged) == {1.0}


def test_a_broken_monitor_does_not_stop_training(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("simulated advcore failure")

    with caplog.at_level(logging.WARNING, logger="advcore"):
        from transformers import TrainerCallback  # noqa: F401 (the trainer needs it anyway)

        trainer = _make().trainer("dead", tmp_path, max_steps=3)
        from advcore.integrations.trl import AdvcoreCallback

        cb = AdvcoreCallback.attach(trainer)
        cb.monitor.recording.add = broken
        trainer.train()
    assert trainer.state.global_step == 3
    assert cb.monitor.errors == 3 and "simulated advcore failure" in caplog.text
    assert json.dumps(trainer.state.log_history)   # the logs stay plain numbers


def test_an_over_tight_gradient_clip_is_seen_through_the_optimizer(tmp_path: Path) -> None:
    # TRL logs grad_norm before clipping and nothing of the update: the callback hooks the optimizer
    out = tmp_path / "tight"
    trainer, cb, _ = _train("healthy", out, overrides={"max_grad_norm": 1e-6}, watch_every=1)
    logged = [h["grad_norm"] for h in trainer.state.log_history if "grad_norm" in h]
    clipped = cb.monitor.steps_frame["grad_norm_clipped"].drop_nulls().to_list()
    assert min(logged) > 1e-3 and clipped and max(clipped) <= 1.01e-6   # the clip is applied, and measured
    found = {f.id: f for f in cb.monitor.findings}
    assert found["UPDATE_SUPPRESSED"].evidence["metric"] == "clip_kept"
    assert cb.monitor.errors == 0
