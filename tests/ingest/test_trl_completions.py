"""TRL ``completions_*.parquet`` against real TRL 1.16.0 output (``tests/fixtures/trl_grpo_cpu``).

The oracles are TRL's own per-step numbers in ``trainer_state.json`` (``frac_reward_zero_std``,
``reward``), numpy on the raw parquet columns, and an independent float64 recomputation of
GRPO's advantage, (r - group mean) / (unbiased group std + 1e-4), with groups as consecutive
blocks of ``num_generations`` = 4 rows (the fixtures' setting, ``make.py``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from advcore.cli import main
from advcore.errors import AdvcoreError
from advcore.ingest import detect, load
from advcore.ingest.formats import trl_completions
from advcore.scan import collect_paths

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "trl_grpo_cpu"
RUNS = ("healthy", "dead", "gen2")
NUM_GENERATIONS = 4


def trl_log(name: str) -> dict[int, dict[str, Any]]:
    """TRL's training rows that carry the batch statistics (generation steps), by step."""
    history = json.loads((FIX / name / "trainer_state.json").read_text())["log_history"]
    return {int(row["step"]): row for row in history if "reward" in row}


def reward_names(name: str) -> list[str]:
    history = json.loads((FIX / name / "trainer_state.json").read_text())["log_history"]
    return sorted({k.split("/")[1] for row in history for k in row if k.startswith("rewards/") and k.endswith("/mean")})


def tables(name: str) -> list[pl.DataFrame]:
    return [pl.read_parquet(p) for p in sorted((FIX / name / "completions").glob("completions_*.parquet"))]


@pytest.mark.parametrize("name", RUNS)
def test_detected_as_folder_and_file(name: str) -> None:
    folder = FIX / name / "completions"
    assert detect(folder) is trl_completions.FORMAT
    first = min(folder.glob("*.parquet"))
    assert detect(first) is trl_completions.FORMAT
    one = load(first)
    assert one.format == "trl_completions" and one.trainer == "trl" and one.steps == 1 and not one.errors


@pytest.mark.parametrize("name", RUNS)
def test_per_step_statistics_equal_trl_own(name: str) -> None:
    """zero_variance_group_frac == TRL's frac_reward_zero_std and reward_mean == TRL's reward,
    at every step where TRL generated; advcore has exactly those steps."""
    run = load(FIX / name / "completions")
    assert not run.errors
    trl = trl_log(name)
    f = run.frame
    assert f["step"].to_list() == sorted(trl)
    for row in f.iter_rows(named=True):
        ref = trl[row["step"]]
        assert row["zero_variance_group_frac"] == pytest.approx(ref["frac_reward_zero_std"], abs=1e-9)
        assert row["reward_mean"] == pytest.approx(ref["reward"], abs=1e-6)
        for comp in reward_names(name):
            assert row[f"reward/{comp}"] == pytest.approx(ref[f"rewards/{comp}/mean"], abs=1e-6)


@pytest.mark.parametrize("name", RUNS)
def test_advantage_moments_equal_numpy(name: str) -> None:
    run = load(FIX / name / "completions")
    by_step = {int(t["step"][0]): t["advantage"].to_numpy() for t in tables(name)}
    for row in run.frame.iter_rows(named=True):
        adv = by_step[row["step"]]
        assert row["adv_mean"] == pytest.approx(float(np.mean(adv)), abs=1e-12)
        assert row["adv_std"] == pytest.approx(float(np.std(adv)), abs=1e-12)


@pytest.mark.parametrize("name", RUNS)
def test_trl_advantages_follow_grpo_formula(name: str) -> None:
    """The advantages TRL wrote equal a float64 recomputation from the reward columns."""
    names = reward_names(name)
    n = 0
    for t in tables(name):
        r = t.select(names).to_numpy().astype(np.float64).sum(axis=1).reshape(-1, NUM_GENERATIONS)
        expected = (r - r.mean(axis=1, keepdims=True)) / (r.std(axis=1, ddof=1, keepdims=True) + 1e-4)
        np.testing.assert_allclose(t["advantage"].to_numpy(), expected.ravel(), rtol=0, atol=1e-6)
        n += t.height
    assert n > 0


def test_healthy_groups_and_dead_ties() -> None:
    """healthy: some groups tied, most not; dead: every group tied, every advantage 0."""
    healthy = load(FIX / "healthy" / "completions").frame
    assert healthy.height == 12
    assert 0.0 < healthy["zero_variance_group_frac"].mean() < 0.5  # type: ignore[operator]
    dead = load(FIX / "dead" / "completions").frame
    assert dead["zero_variance_group_frac"].to_list() == [1.0] * 8
    assert dead["adv_std"].to_list() == [0.0] * 8 and dead["adv_zero_frac"].to_list() == [1.0] * 8


def test_gen2_duplicate_batches_are_not_counted_twice() -> None:
    ts = tables("gen2")
    steps = [int(t["step"][0]) for t in ts]
    assert steps == list(range(1, 9))
    # The oracle: TRL's parquet of a step without generation repeats the previous batch.
    repeats = [s for prev, t, s in zip(ts, ts[1:], steps[1:], strict=False) if prev.drop("step").equals(t.drop("step"))]
    assert repeats == [2, 4, 6, 8]
    run = load(FIX / "gen2" / "completions")
    assert run.frame["step"].to_list() == [1, 3, 5, 7]
    assert run.metadata["duplicate_steps"] == repeats
    assert run.metadata["samples"] == sum(t.height for t in ts) // 2


def test_neighbouring_groups_with_one_prompt_are_split() -> None:
    """The dataset repeats prompt texts; in healthy, some batch holds two neighbouring groups with
    the same prompt. They are two groups (TRL's tied share, checked above, needs it), and giving
    rollout_n=4 yields the same frame."""
    merged = 0
    for t in tables("healthy"):
        p = t["prompt"].to_list()
        merged += sum(p[i] == p[i + NUM_GENERATIONS] for i in range(0, len(p) - NUM_GENERATIONS, NUM_GENERATIONS))
    assert merged >= 1
    run = load(FIX / "healthy" / "completions")
    assert run.metadata["groups"].endswith("blocks of 4 (gcd of the run lengths)")
    assert load(FIX / "healthy" / "completions", rollout_n=4).frame.equals(run.frame)


def test_rollout_n_overrides_prompt_runs(tmp_path: Path) -> None:
    """Every batch holds pairs of groups sharing a prompt: prompt runs say 8, rollout_n says 4."""
    t = pl.DataFrame({
        "step": [3] * 8,
        "prompt": ["p"] * 8,
        "completion": list("abcdefgh"),
        "acc": [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0],
        "advantage": [0.0] * 8,
    })
    path = tmp_path / "completions_00003.parquet"
    t.write_parquet(path)
    assert load(path).frame["zero_variance_group_frac"].to_list() == [0.0]  # one group of 8
    assert load(path, rollout_n=4).frame["zero_variance_group_frac"].to_list() == [0.5]
    bad = load(path, rollout_n=3)
    assert "zero_variance_group_frac" not in bad.metrics
    assert any("rollout_n" in str(e) for e in bad.errors)
    with pytest.raises(AdvcoreError, match="rollout_n"):
        trl_completions.read(path, rollout_n=0)


def test_reward_sum_with_missing_components(tmp_path: Path) -> None:
    """A reward function that returned None (NaN) is left out of the sum; none at all: null reward."""
    t = pl.DataFrame({
        "step": [1, 1, 1, 1],
        "prompt": ["q"] * 4,
        "completion": ["a", "b", "c", "d"],
        "f": [1.0, float("nan"), 0.0, float("nan")],
        "g": [0.5, 0.5, 0.5, float("nan")],
        "advantage": [0.0] * 4,
    })
    path = tmp_path / "completions_00001.parquet"
    t.write_parquet(path)
    run = load(path)
    assert run.frame["reward_mean"][0] == pytest.approx((1.5 + 0.5 + 0.5) / 3)
    assert run.frame["reward/f"][0] == pytest.approx(0.5)
    assert run.metadata["null_rewards"] == 1


def test_trainer_state_names_the_reward_functions(tmp_path: Path) -> None:
    """A numeric ``log_extra`` column is not a reward function when trainer_state.json names them."""
    run_dir = tmp_path / "run"
    (run_dir / "completions").mkdir(parents=True)
    shutil.copy(FIX / "healthy" / "trainer_state.json", run_dir / "trainer_state.json")
    for p in sorted((FIX / "healthy" / "completions").glob("*.parquet")):
        t = pl.read_parquet(p)
        t.insert_column(5, pl.Series("length_extra", [7.0] * t.height)).write_parquet(run_dir / "completions" / p.name)
    run = load(run_dir / "completions")
    assert run.metadata["reward_components"] == ["contains_target", "brevity"]
    assert [r["reward"] for r in trl_log("healthy").values()] == pytest.approx(run.frame["reward_mean"].to_list())


def test_empty_or_foreign_folder(tmp_path: Path) -> None:
    assert detect(tmp_path) is None
    assert load(tmp_path).errors
    assert trl_completions.read(tmp_path).errors


def test_folder_scan_reads_the_step_tables_as_one_run() -> None:
    folder = collect_paths([str(FIX / "gen2")])
    assert folder.unmatched == []
    assert folder.files == [FIX / "gen2" / "completions", FIX / "gen2" / "trainer_state.json"]
    named = collect_paths([str(FIX / "gen2" / "completions" / "completions_00003.parquet")])
    one = named.files
    assert one == [FIX / "gen2" / "completions" / "completions_00003.parquet"] and one[0] in named.explicit


def _scan(capsys: pytest.CaptureFixture[str], folder: Path, *args: str) -> list[dict[str, Any]]:
    main(["scan", "--format", "json", "--fail-on", "none", *args, str(folder)])
    runs: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["runs"]
    return runs


def test_scan_dead_run_is_flagged(capsys: pytest.CaptureFixture[str]) -> None:
    # the per-sample completions/ and trainer_state.json of one run are judged as one run
    runs = _scan(capsys, FIX / "dead")
    assert [r["format"] for r in runs] == ["trl_completions+trainer_state"]
    assert len(_scan(capsys, FIX / "dead", "--per-file")) == 2
    for r in runs:
        ids = {f["id"] for f in r["findings"]}
        assert ids & {"DEGENERATE_GROUPS", "DEAD_FROM_START"}, r["path"]
        assert r["steps"] == 8


def test_scan_healthy_run_is_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    runs = _scan(capsys, FIX / "healthy")
    assert [r["format"] for r in runs] == ["trl_completions+trainer_state"]
    for r in runs:
        assert r["findings"] == [], r["path"]
        assert r["steps"] == 12 and r["verdict"]["stage"] is None
        assert not r["verdict"]["summary"].startswith("too short")


def test_a_corrupt_first_table_does_not_hide_the_good_ones(tmp_path: Path) -> None:
    folder = tmp_path / "completions"
    shutil.copytree(FIX / "healthy" / "completions", folder)
    (folder / "completions_00001.parquet").write_bytes(b"not parquet")
    assert detect(folder) is trl_completions.FORMAT
    run = load(folder)
    whole = load(FIX / "healthy" / "completions")
    assert run.frame["step"].to_list() == whole.frame["step"].to_list()[1:]   # step 1 alone is lost
    assert any("completions_00001.parquet" in e.path for e in run.errors)
