"""advcore.Monitor against numpy/scipy oracles: flat metrics, input kinds, the error policy,
stop_on, findings reported once, the Parquet recording read back by ingest."""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import pytest
import scipy.stats

import advcore
from advcore.detectors import REGISTRY
from advcore.errors import AdvcoreError
from advcore.ingest import load

G = 4


def batch(rng: np.random.Generator, n_groups: int = 64, p: float = 0.4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r = (rng.random(n_groups * G) < np.repeat(rng.random(n_groups) * 2 * p, G)).astype(np.float64)
    g = np.repeat(np.arange(n_groups), G)
    m = r.reshape(-1, G)
    adv = (r - np.repeat(m.mean(1), G)) / (np.repeat(m.std(1, ddof=1), G) + 1e-4)
    return r, g, adv


def test_flat_metrics_match_numpy_and_scipy() -> None:
    r, g, adv = batch(np.random.default_rng(1))
    out = advcore.Monitor().observe(1, rewards=r, group_ids=g, advantages=adv)
    m = r.reshape(-1, G)
    tied = float(np.mean(np.ptp(m, axis=1) == 0))
    assert tied > 0  # the batch has tied and untied groups
    assert out["advcore/zero_variance_group_frac"] == pytest.approx(tied)
    assert out["advcore/adv_std"] == pytest.approx(np.std(adv))
    assert out["advcore/reward_mean"] == pytest.approx(np.mean(r))
    assert out["advcore/spearman_adv_reward"] == pytest.approx(scipy.stats.spearmanr(adv, r)[0])
    assert out["advcore/reward_std_within"] == pytest.approx(np.mean(m.std(1, ddof=1)))
    assert out["advcore/adv_recompute_err"] <= 1.0  # TRL's formula, so the recomputation agrees
    assert out["advcore/findings"] == 0 and out["advcore/errors"] == 0
    assert out["advcore/monitor_ms"] > 0


def test_input_kinds_agree() -> None:
    r, g, adv = batch(np.random.default_rng(2))
    ref = advcore.Monitor().observe(3, rewards=r, group_ids=g, advantages=adv)
    kinds = [
        {"rewards": pl.Series(r), "group_ids": pl.Series(g), "advantages": pl.Series(adv)},
        {"rewards": r.tolist(), "group_ids": [f"uid-{i}" for i in g], "advantages": adv.tolist()},
        {"rewards": r.astype(np.float32), "group_size": G, "advantages": adv.astype(np.float32)},
    ]
    for kw in kinds:
        out = advcore.Monitor().observe(3, **kw)
        for key in ("advcore/zero_variance_group_frac", "advcore/adv_std", "advcore/spearman_adv_reward_within"):
            assert out[key] == pytest.approx(ref[key], rel=1e-6), (kw.keys(), key)


def test_bad_input_is_logged_not_raised_and_training_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    r, g, adv = batch(np.random.default_rng(3))
    mon = advcore.Monitor()
    with caplog.at_level(logging.WARNING, logger="advcore"):
        out = mon.observe(1, rewards=r, group_ids=g[:-1], advantages=adv)
    assert out["advcore/errors"] == 1 and "advcore/adv_std" not in out
    assert "group_ids" in caplog.text and "training goes on" in caplog.text
    good = mon.observe(2, rewards=r, group_ids=g, advantages=adv)
    assert good["advcore/errors"] == 1 and good["advcore/adv_std"] == pytest.approx(np.std(adv))
    with pytest.raises(AdvcoreError, match="group_ids"):
        advcore.Monitor(strict=True).observe(1, rewards=r, group_ids=g[:-1], advantages=adv)
    with pytest.raises(AdvcoreError, match="stop_on"):
        advcore.Monitor(stop_on="fatal")  # type: ignore[arg-type]


def test_dead_signal_reported_once_within_the_sustain_window_and_stops(caplog: pytest.LogCaptureFixture) -> None:
    rng = np.random.default_rng(4)
    seen: list[str] = []
    mon = advcore.Monitor(callback=lambda f: seen.append(f.id), stop_on="warn")
    sustain = int(REGISTRY["DEGENERATE_GROUPS"].resolve({})["sustain"])
    with caplog.at_level(logging.WARNING, logger="advcore"):
        for step in range(1, 16):
            r = np.full(64 * G, 0.5) if step >= 4 else batch(rng)[0]   # the signal dies at step 4
            m = r.reshape(-1, G)
            sd = np.repeat(m.std(1, ddof=1), G)
            adv = (r - np.repeat(m.mean(1), G)) / (sd + 1e-4)
            out = mon.observe(step, rewards=r, group_ids=np.repeat(np.arange(64), G), advantages=adv)
    ids = [f.id for f in mon.findings]
    assert "DEGENERATE_GROUPS" in ids and len(ids) == len(set(ids)) and seen == ids
    onset = next(f for f in mon.findings if f.id == "DEGENERATE_GROUPS").onset_step
    assert onset == 4
    # found within the sustain window, reported once a second pass in a row confirms it
    assert mon.reported_at["DEGENERATE_GROUPS"] <= onset + sustain + mon.confirm - 1
    assert mon.should_stop
    assert out["advcore/findings"] == len(ids)
    assert caplog.text.count("DEGENERATE_GROUPS since step 4 (detected at step") == 1


def test_stop_on_error_for_a_signal_dead_from_the_start() -> None:
    mon = advcore.Monitor(stop_on="error")
    steps = 0
    while not mon.should_stop and steps < 20:
        steps += 1
        mon.observe(steps, rewards=np.full(32, 0.5), group_size=G, advantages=np.zeros(32))
    assert mon.should_stop and steps == 7  # the second detector pass (min_steps, then confirm = 2)
    assert any(f.severity == "error" for f in mon.findings)
    assert not advcore.Monitor(stop_on="error").should_stop


def test_a_finding_of_the_last_pass_asks_no_stop(caplog: pytest.LogCaptureFixture) -> None:
    """close() runs a last pass after the loop: its findings are logged, but there is no run left to stop."""
    mon = advcore.Monitor(stop_on="error", min_steps=100)
    for step in range(1, 11):
        mon.observe(step, rewards=np.full(32, 0.5), group_size=G, advantages=np.zeros(32))
    with caplog.at_level(logging.WARNING, logger="advcore"):
        mon.close()
    assert any(f.severity == "error" for f in mon.findings) and "stopping requested" not in caplog.text


def test_healthy_batches_do_not_stop() -> None:
    rng = np.random.default_rng(5)
    mon = advcore.Monitor(stop_on="warn")
    for step in range(1, 13):
        r, g, adv = batch(rng, p=0.45)
        mon.observe(step, rewards=r, group_ids=g, advantages=adv, metrics={"grad_norm": 1.0 + 0.01 * step})
    assert not mon.should_stop, [f.id for f in mon.findings]
    assert mon.steps_frame["grad_norm"].to_list()[-1] == pytest.approx(1.12)


def test_metrics_only_steps_and_detect_every() -> None:
    mon = advcore.Monitor(min_steps=2, detect_every=3, detect_budget=None)
    calls = []
    mon.detect = lambda: calls.append(mon.recording.steps_observed) or []  # type: ignore[method-assign]
    for step in range(1, 9):
        out = mon.observe(step, metrics={"grad_norm": 0.5, "entropy": 1.0})
        assert "advcore/grad_norm" not in out  # the trainer's own metrics are not echoed
    assert calls == [2, 5, 8]
    frame = mon.steps_frame
    assert frame["step"].to_list() == list(range(1, 9)) and frame["entropy"].to_list() == [1.0] * 8
    assert mon.observe(9)["advcore/errors"] == 1  # neither samples nor metrics


@pytest.mark.parametrize("name", ["rec.parquet", "rec"])
def test_recording_round_trips_through_ingest(tmp_path: pytest.TempPathFactory, name: str) -> None:
    rng = np.random.default_rng(6)
    path = tmp_path / name  # type: ignore[operator]
    mon = advcore.Monitor(record_to=path)
    for step in range(1, 5):
        r, g, adv = batch(rng)
        mon.observe(step, rewards=r, group_ids=g, advantages=adv)
    mon.close()
    run = load(path)
    assert run.format == "trace"  # by content: a recording without the extension too
    ours = mon.steps_frame
    for col in ("zero_variance_group_frac", "adv_std", "reward_mean", "spearman_adv_reward"):
        assert run.frame[col].to_list() == pytest.approx(ours[col].to_list())


def test_a_bad_trainer_metric_costs_itself_not_the_step(tmp_path: pytest.TempPathFactory,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    rng = np.random.default_rng(7)
    path = tmp_path / "rec.parquet"  # type: ignore[operator]
    mon = advcore.Monitor(record_to=path)
    samples = [batch(rng) for _ in range(3)]
    with caplog.at_level(logging.WARNING, logger="advcore"):
        for step, (r, g, adv) in enumerate(samples, start=1):
            metrics = {"entropy": 0.5, "kl": "abc" if step == 2 else 0.1}
            out = mon.observe(step, rewards=r, group_ids=g, advantages=adv, metrics=metrics)
    assert out["advcore/errors"] == 1.0
    assert "'kl' is 'abc' (str), not a number" in caplog.text and "Traceback" not in caplog.text
    mon.close()
    frame = mon.steps_frame
    assert frame["step"].to_list() == [1, 2, 3]  # the step is kept, once
    assert frame["kl"].to_list() == [0.1, None, 0.1] and frame["entropy"].to_list() == [0.5] * 3
    assert frame["reward_mean"].to_list() == pytest.approx([r.mean() for r, _, _ in samples])
    recorded = pl.read_parquet(path)
    counts = recorded.filter(pl.col("stage") == "reward").group_by("step").len().sort("step")
    assert counts["step"].to_list() == [1, 2, 3] and counts["len"].n_unique() == 1  # each step recorded once


class _DeviceTensor:
    """A stand-in for a GPU tensor: ``.device.type == "cuda"``; ``.to("cpu")`` gives the host array."""

    class _Device:
        type = "cuda"

    device = _Device()
    dtype = "torch.float32"

    def __init__(self, values: np.ndarray, log: list[str]) -> None:
        self.values, self.log = values, log

    def detach(self) -> _DeviceTensor:
        return self

    def to(self, device: str, non_blocking: bool = False) -> np.ndarray:
        self.log.append(f"to {device} non_blocking={non_blocking}")
        return self.values


def test_device_tensors_are_copied_once_each_without_blocking() -> None:
    r, g, adv = batch(np.random.default_rng(7))
    log: list[str] = []
    out = advcore.Monitor().observe(1, rewards=_DeviceTensor(r, log), group_ids=g, advantages=_DeviceTensor(adv, log))
    assert log == ["to cpu non_blocking=True"] * 2
    assert out["advcore/adv_std"] == pytest.approx(np.std(adv))


def test_detect_budget_spaces_the_detector_passes_by_their_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    import advcore.monitor as monitor_module

    clock = iter(np.arange(0.0, 1000.0, 0.5))   # every perf_counter call advances 0.5 s
    monkeypatch.setattr(monitor_module.time, "perf_counter", lambda: float(next(clock)))
    mon = advcore.Monitor(min_steps=1, detect_budget=0.25)
    calls: list[int] = []
    mon.detect = lambda: calls.append(mon.recording.steps_observed) or []  # type: ignore[method-assign]
    for step in range(1, 13):
        mon.observe(step, metrics={"grad_norm": 1.0})
    # observe reads the clock at its start, before the budget check and at its end, a pass once more:
    # a pass "costs" 0.5 s, so with a budget of 1/4 the next waits 2 s, two steps here (by hand)
    assert calls == [1, 3, 5, 7, 9, 11]
    with pytest.raises(AdvcoreError, match="detect_budget"):
        advcore.Monitor(detect_budget=0.0)


def test_the_per_step_history_stays_in_few_chunks_and_equals_its_rows() -> None:
    # one detector pass per step appends one chunk; the history is merged instead of growing a chunk per step
    rng = np.random.default_rng(8)
    m = advcore.Monitor(detect_every=1)
    rewards = [(rng.random(32) < 0.5).astype(np.float32) for _ in range(60)]
    for step, r in enumerate(rewards, start=1):
        m.observe(step, rewards=r, group_size=8)
    frame = m.steps_frame
    assert frame.n_chunks() <= 8 and frame["step"].to_list() == list(range(1, 61))
    tied = [float(np.mean([len(set(g)) == 1 for g in r.reshape(-1, 8)])) for r in rewards]
    assert frame["zero_variance_group_frac"].to_list() == pytest.approx(tied)


def test_a_misspelt_keyword_is_logged_and_counted_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    m = advcore.Monitor()
    rewards = np.array([1.0, 0.0, 1.0, 0.0], dtype=np.float32)
    with caplog.at_level(logging.WARNING, logger="advcore"):
        out = m.observe(1, reward=rewards, group_size=2)
    assert out["advcore/errors"] == 1.0 and m.steps_frame.height == 0
    assert "'reward'" in caplog.text and "did you mean 'rewards'?" in caplog.text
    out = m.observe(2, rewards=rewards, group_size=2)  # training goes on
    assert out["advcore/errors"] == 1.0 and m.steps_frame.height == 1
    with pytest.raises(AdvcoreError, match="did you mean 'group_size'"):
        advcore.Monitor(strict=True).observe(1, rewards=rewards, groupsize=2)


def _scripted(monkeypatch: pytest.MonkeyPatch, script: dict[int, list[tuple[str, str]]]) -> list[int]:
    """Make every detector pass return the findings ``script`` gives for the step it runs at (ID and
    severity); returns the steps the passes ran at."""
    import advcore.detectors

    ran: list[int] = []

    def fake(run: object, **_: object) -> tuple[list[advcore.detectors.Finding], list[object]]:
        step = int(run.frame["step"].max())  # type: ignore[attr-defined]
        ran.append(step)
        return [advcore.detectors.Finding(i, sev, "R", 1, {}, f"{i} at {step}", ()) for i, sev in script.get(step, [])], []

    monkeypatch.setattr(advcore.detectors, "run_detectors", fake)
    return ran


def test_a_warning_is_reported_once_two_passes_in_a_row_find_it(monkeypatch: pytest.MonkeyPatch) -> None:
    flicker, held = [("BASELINE_BROKEN", "warn")], [("DEGENERATE_GROUPS", "warn")]
    ran = _scripted(monkeypatch, {7: flicker, 9: held, 10: held, 11: held + [("NONFINITE", "error")]})
    seen: list[tuple[str, int]] = []
    mon = advcore.Monitor(min_steps=6, detect_budget=None, alert_trackers=False,
                          callback=lambda f: seen.append((f.id, mon.recording.last_step)))
    for step in range(1, 13):
        mon.observe(step, metrics={"reward_mean": 0.5})
    assert ran == list(range(6, 13))
    # the one-pass flicker at step 7 is never reported; the held warning on its second pass (10);
    # NONFINITE on its first
    assert seen == [("DEGENERATE_GROUPS", 10), ("NONFINITE", 11)]
    assert mon.reported_at == {"DEGENERATE_GROUPS": 10, "NONFINITE": 11}


def test_confirm_one_reports_at_once_and_an_info_that_becomes_a_warning_is_reported_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _scripted(monkeypatch, {6: [("ENTROPY_COLLAPSE", "info")], 7: [("ENTROPY_COLLAPSE", "info")],
                            8: [("ENTROPY_COLLAPSE", "warn")], 9: [("BASELINE_BROKEN", "warn")]})
    mon = advcore.Monitor(min_steps=6, detect_budget=None, alert_trackers=False, confirm=1)
    for step in range(1, 10):
        mon.observe(step, metrics={"reward_mean": 0.5})
    assert [(f.id, f.severity) for f in mon.findings] == [("ENTROPY_COLLAPSE", "warn"), ("BASELINE_BROKEN", "warn")]
    assert mon.reported_at == {"ENTROPY_COLLAPSE": 8, "BASELINE_BROKEN": 9}
    with pytest.raises(AdvcoreError, match="confirm"):
        advcore.Monitor(confirm=0)


def test_the_last_pass_in_close_reports_what_it_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    _scripted(monkeypatch, {8: [("REWARD_FLOOR", "warn")]})
    mon = advcore.Monitor(min_steps=6, detect_budget=None, alert_trackers=False)
    for step in range(1, 9):
        mon.observe(step, metrics={"reward_mean": 0.5})
    assert mon.findings == []
    mon.close()  # the run ended: its last pass is the scan's verdict, nothing is left to confirm it
    assert [f.id for f in mon.findings] == ["REWARD_FLOOR"]


def test_tied_groups_stop_a_run_before_the_advantages_they_zero() -> None:
    # a newcomer's loop: groups that contrast for 60 steps, then a reward that breaks into one coin flip per
    # group (every group tied at 0 or 1). The cause (R: tied groups) is reported first and stops the run,
    # in the same pass as its consequence (T: the advantages' spread gone); nothing blames the updates
    rng = np.random.default_rng(5)
    stopped_by: list[str] = []
    mon = advcore.Monitor(callback=lambda f: stopped_by.append(f.id), stop_on="warn", detect_budget=None)
    for step in range(1, 120):
        if step < 60:
            r = (rng.random(64) < 0.5).astype(np.float32)
        else:
            r = np.repeat(rng.integers(0, 2, 8), 8).astype(np.float32)
        m = r.reshape(-1, 8)
        adv = (r - np.repeat(m.mean(1), 8)) / (np.repeat(m.std(1, ddof=1), 8) + 1e-4)
        mon.observe(step, rewards=r, group_size=8, advantages=adv)
        if mon.should_stop:
            break
    assert mon.should_stop and step <= 60 + 10
    assert stopped_by[0] == "DEGENERATE_GROUPS"
    assert "UPDATE_UNSTABLE" not in stopped_by
    first = {f.id: f for f in mon.findings}
    assert first["DEGENERATE_GROUPS"].onset_step == 60 and first["DEGENERATE_GROUPS"].evidence["held_since_step"] == 60
