from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import samples, verl_rollouts

from tests._real import real


def _long() -> pl.DataFrame:
    return pl.DataFrame({
        "step": [1, 1, 1, 1, 2, 2, 2, 2],
        "group": ["a", "a", "b", "b", "a", "a", "b", "b"],
        "reward": [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, None, 1.0],
        "adv": [0.0, 0.0, -0.7, 0.7, 0.0, 0.0, 0.0, 0.0],
    })


def test_long_jsonl_and_parquet(tmp_path: Path) -> None:
    js = tmp_path / "s.jsonl"
    js.write_text("\n".join(json.dumps(r) for r in _long().to_dicts()) + "\n", encoding="utf-8")
    pq = tmp_path / "s.parquet"
    _long().write_parquet(pq)
    for p in (js, pq):
        assert detect(p) is samples.FORMAT
        run = load(p)
        f = run.frame
        assert f["step"].to_list() == [1, 2]
        assert f["reward_mean"][0] == pytest.approx(0.75)
        assert f["zero_variance_group_frac"].to_list() == [0.5, 1.0]  # step 2: the singleton b (after the null) is not counted
        assert f["reward_std_within"][0] == pytest.approx(0.5 * 0.5 ** 0.5)  # mean of group a (0) and the ddof-1 std of (0, 1)
        assert f["adv_zero_frac"][0] == pytest.approx(0.5) and f["adv_zero_frac"][1] == 1.0
        assert f["adv_std"][0] == pytest.approx(0.7 / 2 ** 0.5)
        assert run.metadata["null_rewards"] == 1


def test_truncated_line_and_empty(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text('{"step": 1, "group": 0, "reward": 1.0}\n{"step": 1, "group": 0, "rew\n', encoding="utf-8")
    raw = samples.read(p)
    assert raw.frame["reward_mean"].to_list() == [1.0]
    (err,) = raw.errors
    assert err.line == 2 and err.path == str(p)
    e = tmp_path / "e.jsonl"
    e.write_text("\n", encoding="utf-8")
    assert samples.read(e).errors


def test_verl_dump_groups_by_prompt(tmp_path: Path) -> None:
    p = tmp_path / "3.jsonl"
    rows = [{"input": f"q{i // 2}", "output": "o", "score": float(i % 2 if i < 2 else 1), "step": 3, "acc": 1.0}
            for i in range(4)]
    p.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    run = load(p)
    assert run.frame["zero_variance_group_frac"][0] == 0.5
    assert run.frame["reward/acc"][0] == 1.0


def test_real_verl_rollout_dump() -> None:
    path = real("verl-vlm-svg-grpo-rollout-dump/1.jsonl")
    assert detect(path) is verl_rollouts.FORMAT
    run = load(path)  # every input is identical: no groups without rollout_n
    assert run.frame["step"].to_list() == [1]
    assert run.frame["reward_min"][0] == pytest.approx(-84.04, abs=0.01)
    assert run.frame["reward_max"][0] == pytest.approx(0.526, abs=0.001)
    assert run.frame["reward/format"][0] == pytest.approx(968 / 1024)
    assert "zero_variance_group_frac" not in run.metrics and "rollout_n" in run.metadata["groups"]
    raw = verl_rollouts.read(path, rollout_n=64)
    f = raw.frame
    assert f["n_groups"][0] == 16 and f["zero_variance_group_frac"][0] == 0.0
    assert 4.5 < f["reward_std_within"][0] < 13


def test_a_parquet_file_read_in_batches_of_whole_steps_equals_it_read_whole(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle is the same reduction over the file read whole: steps in order of first appearance
    (step 7 starts before step 3 ends, steps are not sorted), each step's rows in file order, rows
    without a step counted, and batches far smaller than the file."""
    import numpy as np

    from advcore.ingest import _reduce

    rng = np.random.default_rng(5)
    order = [7, 3, 9, 1, 4, 2, 8, 5, 6, 0]
    frames = []
    for step in order:
        n = int(rng.integers(40, 120))
        frames.append(pl.DataFrame({"step": [step] * n, "group": (np.arange(n) // 4).tolist(),
                                    "reward": rng.choice([0.0, 0.5, 1.0], n).tolist(),
                                    "adv": rng.standard_normal(n).tolist()}))
    table = pl.concat(frames)
    table = pl.concat([table.slice(0, 50), frames[1].slice(0, 3), table.slice(50)])  # step 3 again, early
    table = table.vstack(pl.DataFrame({"step": [None], "group": [0], "reward": [1.0], "adv": [0.0]},
                                      schema=table.schema))
    path = tmp_path / "samples.parquet"
    table.write_parquet(path, row_group_size=64)
    whole = _reduce.reduce(table, format="samples", layout="long", reward_col="reward", group_col="group", extra=[],
                           trainer=None)
    monkeypatch.setattr(_reduce, "BATCH_ROWS", 150)
    assert len(list(_reduce.parquet_batches(path))) > 3
    batched = samples.read(path)
    assert batched.frame.equals(whole.frame)
    assert batched.trace is not None and whole.trace is not None and batched.trace.equals(whole.trace)
    assert batched.metadata["samples"] == whole.metadata["samples"] == table.height - 1
    assert batched.metadata["samples_without_step"] == 1
    assert batched.frame["step"].to_list()[:3] == [7, 3, 9]


def test_a_dataset_in_parts_is_one_run_reduced_as_the_whole_table(tmp_path: Path) -> None:
    """Oracle: the same reduction over the whole table read at once. The parts split each step's groups
    (one writer per rank), so a step reduced part by part would be wrong; the second part alone carries
    ``adv`` (null in the first part's rows, and the first part is named in the errors)."""
    import numpy as np

    from advcore.ingest import _reduce
    from advcore.scan import collect_paths, scan

    rng = np.random.default_rng(11)
    n = 30 * 64
    table = pl.DataFrame({"step": np.repeat(np.arange(30), 64), "group": np.tile(np.repeat(np.arange(16), 4), 30),
                          "reward": (rng.random(n) < 0.4).astype(float)})
    even = table.filter(pl.col("group") % 2 == 0)
    odd = table.filter(pl.col("group") % 2 == 1).with_columns(adv=pl.lit(0.5))
    run_dir = tmp_path / "archive" / "run"
    run_dir.mkdir(parents=True)
    even.write_parquet(run_dir / "part-0.parquet")
    odd.write_parquet(run_dir / "part-1.parquet")
    (run_dir / "notes.txt").write_text("rollouts of run 7\n")
    # a group is its part's: keyed by the part's path
    keyed = [t.with_columns(group=pl.format("{}#{}", pl.lit(str(run_dir / f"part-{k}.parquet")), "group"))
             for k, t in enumerate((even.with_columns(adv=pl.lit(None, pl.Float64)), odd))]
    whole = _reduce.reduce(pl.concat(keyed), format="samples", layout="long", reward_col="reward", group_col="group",
                           extra=[], trainer=None)
    assert detect(run_dir) is samples.FORMAT
    got = samples.read(run_dir)
    assert got.frame.equals(whole.frame)
    assert [(e.path, "adv" in e.message) for e in got.errors] == [(str(run_dir / "part-0.parquet"), True)]
    # a scan of the archive finds the folder as one run, not two part files
    collected = collect_paths([str(tmp_path / "archive")])
    assert run_dir in collected.files and not any(f.suffix == ".parquet" for f in collected.files)
    reports = [r for r in scan(collected.files) if r.run.format == "samples"]
    assert len(reports) == 1 and reports[0].run.steps == 30
    # one part alone is a file, as before
    (run_dir / "part-1.parquet").unlink()
    assert samples.dataset_parts(run_dir) == [run_dir / "part-0.parquet"] and detect(run_dir) is None
    assert collect_paths([str(tmp_path / "archive")]).files.count(run_dir / "part-0.parquet") == 1


def test_group_ids_that_each_writer_numbers_from_zero_stay_apart(tmp_path: Path) -> None:
    """Two writers each number their 4 groups 0-3 (as in a newcomer's trial): 8 groups per step,
    of which the first writer's are all tied; read as one table they would merge into 4 mixed groups."""
    import numpy as np

    rows: dict[str, list[float]] = {"step": [], "group": [], "reward": []}
    for step in range(3):
        for g in range(4):
            for i in range(4):
                rows["step"].append(step)
                rows["group"].append(g)
                rows["reward"].append(1.0)
    tied = pl.DataFrame(rows)
    mixed = tied.with_columns(reward=pl.Series([float(i % 2) for i in range(tied.height)]))
    folder = tmp_path / "rollouts"
    folder.mkdir()
    tied.write_parquet(folder / "rank0.parquet")
    mixed.write_parquet(folder / "rank1.parquet")
    frame = samples.read(folder).frame
    assert frame["zero_variance_group_frac"].to_list() == [0.5, 0.5, 0.5]
    assert frame["reward_std_within"].to_list() == pytest.approx([np.std([0, 1, 0, 1], ddof=1) / 2] * 3)
