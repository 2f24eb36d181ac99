"""Lab recordings load through the same ingest as real logs (advcore.ingest.load) with the
expected canonical metrics and values; ``advcore lab list`` and ``advcore lab run`` work and write
nothing outside their output folder."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from advcore.cli import main
from advcore.errors import AdvcoreError
from advcore.ingest import load
from advcore.lab import FAULTS, write

from tests.lab._cache import cached

COMMON = {"reward_mean", "entropy", "kl", "grad_norm", "clip_frac", "lr", "response_length_mean", "truncated_frac"}
EXPECTED = {
    "jsonl": COMMON | {"reward_std", "reward_std_within", "reward_max", "reward_min", "zero_variance_group_frac",
                       "adv_mean", "adv_std", "adv_max", "adv_min", "adv_zero_frac"},
    "trl": COMMON | {"reward_std", "zero_variance_group_frac", "reward/lab_reward", "reward_std/lab_reward"},
    "verl": COMMON | {"reward_max", "reward_min", "adv_mean", "adv_max", "adv_min"},
}
CRITIC = {"vf_explained_var", "value_mean", "return_mean"}
TRAINER = {"jsonl": None, "trl": "trl", "verl": "verl"}


@pytest.mark.parametrize(("fmt", "estimator"), [("jsonl", "grpo"), ("trl", "grpo"), ("verl", "grpo"), ("jsonl", "ppo"),
                                                ("verl", "ppo"), ("trl", "dapo")])
def test_steps_load_with_canonical_metrics(tmp_path: Path, fmt: str, estimator: str) -> None:
    res = cached(estimator)
    files = write(res, tmp_path, fmt=fmt)
    run = load(files["steps"])
    assert run.errors == () and run.steps == 80 and run.trainer == TRAINER[fmt]
    want = EXPECTED[fmt] | (CRITIC if estimator == "ppo" and fmt != "trl" else set())
    assert want <= set(run.metrics), want - set(run.metrics)
    np.testing.assert_allclose(run.frame["reward_mean"].to_numpy(), res.steps["reward_mean"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(run.frame["entropy"].to_numpy(), res.steps["entropy"].to_numpy(), rtol=1e-12)
    if fmt != "verl":  # TRL's reward_std is the whole-batch std (TRL >= 0.27, and unversioned logs)
        np.testing.assert_allclose(run.frame["reward_std"].to_numpy(), res.steps["reward_std"].to_numpy(), rtol=1e-12)


@pytest.mark.parametrize("estimator", ["grpo", "ppo"])
def test_samples_load_and_reduce_to_the_numpy_statistics(tmp_path: Path, estimator: str) -> None:
    res = cached(estimator)
    files = write(res, tmp_path)
    run = load(files["samples"])
    assert run.errors == () and run.format == "samples" and run.steps == 80
    raw = pl.read_parquet(files["samples"])
    assert {"step", "group", "reward", "adv_raw", "adv", "task", "difficulty"} <= set(raw.columns)
    assert ({"value", "return"} <= set(raw.columns)) == (estimator == "ppo")
    for step in (1, 40, 80):
        part = raw.filter(pl.col("step") == step)
        r, a = part["reward"].to_numpy(), part["adv"].to_numpy()
        row = run.frame.filter(pl.col("step") == step)
        assert row["reward_mean"][0] == pytest.approx(r.mean(), rel=1e-12)
        assert row["adv_std"][0] == pytest.approx(a.std(), rel=1e-9)
        tied = [np.ptp(r[part["group"].to_numpy() == g]) == 0 for g in np.unique(part["group"].to_numpy())]
        assert row["zero_variance_group_frac"][0] == pytest.approx(np.mean(tied))
        # the per-step metrics of the run are the same numbers
        lab = res.steps.filter(pl.col("step") == step)
        assert lab["zero_variance_group_frac"][0] == pytest.approx(np.mean(tied))


def test_truth_json(tmp_path: Path) -> None:
    res = cached("rloo", "floor")
    files = write(res, tmp_path, fmt="verl")
    truth = json.loads(files["truth"].read_text())
    assert truth["fault"] == "floor" and truth["stage"] == "R" and truth["onset_step"] == 30
    assert truth["expected_detectors"] == list(FAULTS["floor"].detectors)
    assert truth["estimator"] == "rloo" and truth["seed"] == 0 and truth["format"] == "verl"
    assert truth["config"]["steps"] == 80 and truth["fault_spec"]["switch"] == {"pool": "hard"}
    assert truth["files"] == {"steps": "verl_console.log", "samples": "samples.parquet"}


def test_nonfinite_values_survive_the_round_trip(tmp_path: Path) -> None:
    for fmt in ("jsonl", "trl", "verl"):
        files = write(cached("grpo", "nonfinite"), tmp_path / fmt, fmt=fmt)
        g = load(files["steps"]).frame["grad_norm"].to_numpy()
        assert math.isinf(g[29]) and np.isfinite(np.delete(g, 29)).all(), fmt


def test_missing_metrics_are_left_out_not_nan(tmp_path: Path) -> None:
    """DAPO on a saturated pool keeps no group on some steps: no advantage then, and no NaN logged."""
    res = cached("dapo", "saturation")
    assert res.steps["adv_std"].null_count() > 0
    run = load(write(res, tmp_path)["steps"])
    assert not any(np.isnan(run.frame[c].drop_nulls().to_numpy()).any() for c in run.metrics)


def test_write_rejects_a_file_and_a_bad_format(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(AdvcoreError, match="`out`"):
        write(cached("grpo"), f)
    with pytest.raises(AdvcoreError, match="`fmt`"):
        write(cached("grpo"), tmp_path / "d", fmt="csv")
    with pytest.raises(AdvcoreError, match="record PPO as"):
        write(cached("ppo"), tmp_path / "d", fmt="trl")


def test_cli_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "list"]) == 0
    out = capsys.readouterr().out
    for name in (*FAULTS, "grpo", "dr_grpo", "rloo", "reinforce_pp", "dapo", "ppo"):
        assert name in out


def test_cli_run_writes_only_into_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work = tmp_path / "cwd"
    work.mkdir()
    out = tmp_path / "rec" / "bf16"
    cwd = os.getcwd()
    try:
        os.chdir(work)
        code = main(["lab", "run", "--fault", "bf16_rewards", "--estimator", "rloo", "--out", str(out),
                     "--log-format", "trl", "--steps", "40", "--onset", "20", "--seed", "3"])
    finally:
        os.chdir(cwd)
    assert code == 0
    assert list(work.iterdir()) == []
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "cwd", "rec", "rec/bf16", "rec/bf16/samples.parquet", "rec/bf16/trainer_state.json", "rec/bf16/truth.json"]
    truth = json.loads((out / "truth.json").read_text())
    assert truth["onset_step"] == 20 and truth["seed"] == 3 and truth["config"]["steps"] == 40
    assert load(out / "trainer_state.json").steps == 40
    assert "held-out success" in capsys.readouterr().out


def test_cli_run_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "run", "--fault", "baseline_broken", "--estimator", "grpo", "--out", str(tmp_path / "x")]) == 2
    assert "does not apply" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    assert main(["lab", "run", "--fault", "floor", "--out", str(tmp_path / "y"), "--knob", "pool"]) == 2
    assert main(["lab", "run", "--fault", "floor", "--out", str(tmp_path / "y"), "--knob", "pool=lava"]) == 2
    assert not (tmp_path / "y").exists()


def test_cli_knob_override(tmp_path: Path) -> None:
    assert main(["lab", "run", "--fault", "group_mixup", "--out", str(tmp_path), "--steps", "12", "--onset", "6",
                 "--knob", "grouping=singleton"]) == 0
    s = pl.read_parquet(tmp_path / "samples.parquet").filter(pl.col("step") >= 6)
    assert (s["adv"] == 0.0).all()  # GRPO on groups of one (TRL): every advantage 0
