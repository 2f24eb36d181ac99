"""MLflow tracking stores (SQLite and folder) and Trackio project databases, built here with the
tables and columns the readers use, as MLflow 3.17 and Trackio 0.43 write them (the stores those
libraries write themselves are read in tests/integrations/test_tracking_real.py)."""

from __future__ import annotations

import json
import math
import os
import sqlite3
from pathlib import Path

import pytest

from advcore.ingest import detect, load, load_runs
from advcore.ingest.formats import mlflow_store, trackio_db
from advcore.scan import ScanOptions, collect_paths, scan

DOUBLE_MAX = 1.7976931348623157e308


def mlflow_db(path: Path, runs: dict[tuple[str, str], list[tuple[str, float, int, int, int]]],
              deleted: tuple[str, ...] = ()) -> Path:
    """An MLflow SQLite store: ``runs[(experiment, run name)]`` = (key, value, step, timestamp, is_nan) rows."""
    conn = sqlite3.connect(path)
    conn.executescript("""
        create table experiments (experiment_id integer primary key, name varchar(256) not null, lifecycle_stage varchar(32));
        create table runs (run_uuid varchar(32) primary key, name varchar(250), experiment_id integer,
                           lifecycle_stage varchar(20), start_time bigint, status varchar(9));
        create table metrics (key varchar(250) not null, value float not null, timestamp bigint not null,
                              run_uuid varchar(32) not null, step bigint default 0 not null, is_nan boolean default 0 not null);
    """)
    experiments: dict[str, int] = {}
    for i, ((experiment, name), rows) in enumerate(runs.items()):
        eid = experiments.setdefault(experiment, len(experiments) + 1)
        conn.execute("insert or ignore into experiments values (?, ?, 'active')", (eid, experiment))
        uuid = f"{i:032x}"
        conn.execute("insert into runs values (?, ?, ?, ?, ?, 'FINISHED')",
                     (uuid, name, eid, "deleted" if name in deleted else "active", 1000 + i))
        conn.executemany("insert into metrics values (?, ?, ?, ?, ?, ?)",
                         [(k, v, ts, uuid, step, nan) for k, v, step, ts, nan in rows])
    conn.commit()
    conn.close()
    return path


def grpo_rows(n: int, *, dies: bool) -> list[tuple[str, float, int, int, int]]:
    rows = []
    for s in range(n):
        std = 0.3 if not dies or s < n // 2 else 0.0
        rows += [("critic/score/mean", 0.2 + 0.01 * s, s, 10 * s, 0), ("critic/score/max", 0.2 + std, s, 10 * s, 0),
                 ("critic/score/min", 0.2 - std, s, 10 * s, 0),
                 ("actor/grad_norm", 0.5 if std else 0.0, s, 10 * s, 0)]
    return rows


def test_mlflow_sqlite_store_one_run_per_logged_run(tmp_path: Path) -> None:
    db = mlflow_db(tmp_path / "mlruns.db", {("grpo", "healthy"): grpo_rows(40, dies=False),
                                            ("grpo", "dies"): grpo_rows(40, dies=True),
                                            ("grpo", "gone"): grpo_rows(5, dies=False)}, deleted=("gone",))
    assert detect(db) is mlflow_store.FORMAT
    runs = load_runs(db)
    assert [r.path for r in runs] == [f"{db}#grpo/healthy", f"{db}#grpo/dies"]  # the deleted run is left out
    assert all(r.files == (str(db),) and r.format == "mlflow" and r.trainer == "verl" for r in runs)
    assert runs[1].frame["step"].to_list() == list(range(40))
    assert runs[1].frame["reward_mean"].to_list() == pytest.approx([0.2 + 0.01 * s for s in range(40)], abs=0)
    assert runs[1].frame["reward_max"].to_list()[19:21] == [0.5, 0.2]
    assert "store of 2 runs" in load(db).errors[0].message


def test_mlflow_nonfinite_and_repeated_steps(tmp_path: Path) -> None:
    rows = [("actor/entropy", 0.0, 0, 1, 1), ("actor/entropy", DOUBLE_MAX, 1, 2, 0), ("actor/entropy", -DOUBLE_MAX, 2, 3, 0),
            ("actor/entropy", 1.5, 3, 4, 0), ("actor/entropy", 2.5, 3, 5, 0), ("critic/score/mean", 0.5, 3, 4, 0)]
    run = load(mlflow_db(tmp_path / "m.db", {("e", "r"): rows}))
    entropy = run.frame["entropy"].to_list()
    assert math.isnan(entropy[0]) and entropy[1:3] == [math.inf, -math.inf]
    assert entropy[3] == 2.5  # logged twice at step 3: the later value
    assert run.frame["reward_mean"].to_list() == [None, None, None, 0.5]


def test_mlflow_steps_never_given_are_the_logging_order(tmp_path: Path) -> None:
    rows = [("critic/score/mean", v, 0, i, 0) for i, v in enumerate([0.1, 0.2, 0.3])]
    run = load(mlflow_db(tmp_path / "m.db", {("e", "r"): rows}))
    assert run.frame["step"].to_list() == [0, 1, 2]
    assert run.frame["reward_mean"].to_list() == [0.1, 0.2, 0.3]
    assert run.metadata["step_inferred"] is True


def test_mlflow_run_without_metrics_is_an_error_naming_it(tmp_path: Path) -> None:
    db = mlflow_db(tmp_path / "m.db", {("e", "empty"): [], ("e", "full"): grpo_rows(30, dies=False)})
    empty, full = load_runs(db)
    assert empty.steps == 0 and "the MLflow run 'e/empty' has no metrics" in empty.errors[0].message
    assert empty.errors[0].path == str(db)
    assert full.steps == 30 and not full.errors


def write_folder_run(root: Path, experiment: tuple[str, str], run: tuple[str, str],
                     metrics: dict[str, list[tuple[int, str, int]]]) -> Path:
    """An MLflow folder-store run as MLflow's file store lays it out."""
    exp_dir = root / experiment[0]
    exp_dir.mkdir(parents=True, exist_ok=True)
    (exp_dir / "meta.yaml").write_text(f"experiment_id: '{experiment[0]}'\nlifecycle_stage: active\nname: {experiment[1]}\n")
    run_dir = exp_dir / run[0]
    (run_dir / "metrics").mkdir(parents=True)
    (run_dir / "params").mkdir()
    (run_dir / "params" / "lr").write_text("1e-6")
    (run_dir / "tags").mkdir()
    (run_dir / "tags" / "mlflow.runName").write_text(run[1])
    (run_dir / "meta.yaml").write_text(f"run_id: {run[0]}\nrun_name: {run[1]}\nexperiment_id: '{experiment[0]}'\n")
    for key, lines in metrics.items():
        f = run_dir / "metrics" / key
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("".join(f"{ts} {v} {step}\n" for ts, v, step in lines))
    return run_dir


def test_mlflow_folder_store_scanned_one_run_per_run_folder(tmp_path: Path) -> None:
    store = tmp_path / "mlruns"
    a = write_folder_run(store, ("17", "ppo"), ("aaaa", "seed0"),
                         {"critic/score/mean": [(s, str(0.1 * s), s) for s in range(30)],
                          "actor/entropy": [(0, "nan", 0), (1, "inf", 1), (2, "1.5", 2), (3, "1.5", 2), (4, "2.5", 2)]})
    write_folder_run(store, ("17", "ppo"), ("bbbb", "seed1"), {"critic/score/mean": [(s, "0.5", s) for s in range(30)]})
    collected = collect_paths([str(store)])
    assert collected.files == [store / "17" / "aaaa", store / "17" / "bbbb"]  # params and tags are no runs
    assert detect(a) is mlflow_store.FORMAT
    reports = scan(collected.files, ScanOptions(), jobs=1)
    assert [r.run.path for r in reports] == [f"{a}#ppo/seed0", f"{store / '17' / 'bbbb'}#ppo/seed1"]
    first = reports[0].run.frame
    assert first["reward_mean"].to_list() == [0.1 * s for s in range(30)]
    entropy = first["entropy"].to_list()
    assert math.isnan(entropy[0]) and entropy[1] == math.inf and entropy[2] == 2.5


def test_mlflow_folder_store_bad_line_costs_that_line(tmp_path: Path) -> None:
    run_dir = write_folder_run(tmp_path, ("1", "e"), ("r", "r"), {"critic/score/mean": [(1, "0.5", 1), (2, "0.6", 2)]})
    with (run_dir / "metrics" / "critic" / "score" / "mean").open("a") as f:
        f.write("garbage\n3 0.7 3\n")
    run = load(run_dir)
    assert run.frame["reward_mean"].to_list() == [0.5, 0.6, 0.7]
    assert run.errors[0].line == 3 and run.errors[0].path.endswith("mean")


def trackio_db_file(path: Path, rows: list[tuple[str, int, object]]) -> Path:
    """A Trackio project database: (run name, step, metrics JSON or raw text) rows."""
    conn = sqlite3.connect(path)
    conn.executescript("""
        create table metrics (id integer primary key autoincrement, run_id text, timestamp text not null,
                              run_name text not null, step integer not null, metrics text not null);
        create table configs (id integer primary key autoincrement, run_id text not null, run_name text not null,
                              config text not null, created_at text not null);
    """)
    conn.executemany("insert into metrics (run_id, timestamp, run_name, step, metrics) values (?, '2026-01-01', ?, ?, ?)",
                     [(name, name, step, m if isinstance(m, str) else json.dumps(m)) for name, step, m in rows])
    conn.commit()
    conn.close()
    return path


def test_trackio_project_one_run_per_run_name(tmp_path: Path) -> None:
    rows = [("a", s, {"train/reward": 0.1 * s, "train/rewards/accuracy": {"mean": 0.2}}) for s in range(25)]
    rows += [("b", 0, {"train/reward": "NaN", "train/kl": "Infinity", "caption": "text"}),
             ("b", 0, {"train/kl": "-Infinity"}), ("b", 3, "{not json")]
    db = trackio_db_file(tmp_path / "demo.db", rows)
    assert detect(db) is trackio_db.FORMAT
    a, b = load_runs(db)
    assert a.path == f"{db}#demo/a" and b.path == f"{db}#demo/b"
    assert a.frame["reward_mean"].to_list() == [0.1 * s for s in range(25)]
    assert a.frame["reward/accuracy"].to_list() == [0.2] * 25  # a nested object, flattened with /
    assert math.isnan(b.frame["reward_mean"][0]) and b.frame["kl"][0] == -math.inf  # the later value at step 0
    assert b.steps == 1 and "metrics row id 28" in b.errors[0].message


def test_unknown_sqlite_names_its_tables(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    conn.execute("create table results (x)")
    conn.commit()
    conn.close()
    run = load(db)
    assert "an SQLite database advcore does not read (tables: results)" in run.errors[0].message


def test_corrupt_sqlite_costs_that_file(tmp_path: Path) -> None:
    bad = tmp_path / "a_bad.db"
    bad.write_bytes(b"SQLite format 3\0" + os.urandom(3000))
    mlflow_db(tmp_path / "b_good.db", {("e", "r"): grpo_rows(30, dies=False)})
    reports = scan(collect_paths([str(tmp_path)]).files, ScanOptions(), jobs=1)
    assert [r.run.steps for r in reports] == [0, 30]
    assert str(bad) in str(reports[0].run.errors[0]) and "SQLite" in str(reports[0].run.errors[0])


def test_locked_store_is_read_and_nothing_is_written(tmp_path: Path) -> None:
    db = mlflow_db(tmp_path / "m.db", {("e", "r"): grpo_rows(30, dies=False)})
    before = db.read_bytes(), sorted(p.name for p in tmp_path.iterdir())
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("begin exclusive")
    writer.execute("insert into metrics values ('critic/score/mean', 9.0, 999, ?, 99, 0)", (f"{0:032x}",))
    try:
        run = load(db)  # a trainer holds the write lock: the committed rows are read
    finally:
        writer.execute("rollback")
        writer.close()
    assert run.steps == 30 and run.frame["reward_mean"][-1] == pytest.approx(0.49)
    assert (db.read_bytes(), sorted(p.name for p in tmp_path.iterdir())) == before
