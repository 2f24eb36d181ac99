from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import wandb

from tests._real import real


def test_chart_export_with_bands(tmp_path: Path) -> None:
    p = tmp_path / "chart.csv"
    p.write_text(
        '"Step","run-a - train/reward","run-a - train/reward__MIN","run-a - train/reward__MAX"\n'
        '10,"0.5","0.4","0.6"\n20,"",,\n30,"0.75","0.7","0.8"\n'
    )
    assert detect(p) is wandb.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == [10, 30]
    assert run.frame["reward_mean"].to_list() == [0.5, 0.75]
    assert run.metadata["wandb_run"] == "run-a"


def test_chart_export_with_two_runs_reads_the_first(tmp_path: Path) -> None:
    p = tmp_path / "chart.csv"
    p.write_text('Step,a - reward,b - reward\n1,1,2\n2,3,4\n')
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [1.0, 3.0]
    assert "2 runs" in run.errors[0].message


def test_history_csv_jsonl_parquet(tmp_path: Path) -> None:
    rows = [{"_step": i, "_runtime": 1.5 * i, "train/reward": 0.1 * i, "train/global_step": 10 * i} for i in range(3)]
    rows[1]["eval/acc"] = 0.5
    c = tmp_path / "h.csv"
    c.write_text("train/reward,_step,eval/acc,train/global_step\n0,0,,0\n0.1,1,0.5,10\n0.2,2,,20\n")
    j = tmp_path / "h.jsonl"
    j.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    q = tmp_path / "h.parquet"
    pl.DataFrame(rows).write_parquet(q)
    for p in (c, j, q):
        assert detect(p) is wandb.FORMAT, p
        run = load(p)
        assert run.frame["step"].to_list() == [0, 10, 20]  # the trainer's step, not _step
        assert run.frame["reward_mean"].to_list() == pytest.approx([0.0, 0.1, 0.2])


def test_truncated_history_jsonl_line(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    p.write_text('{"_step": 0, "reward": 1}\n{"_step": 1, "rew\n')
    run = load(p)
    assert run.steps == 1 and run.errors[0].line == 2


def test_runs_table_is_an_error_naming_the_file(tmp_path: Path) -> None:
    p = tmp_path / "runs.csv"
    p.write_text("Name,State,Notes,User,Tags,Created,Runtime,reward\nrun-1,finished,,me,,2024-01-01,100,0.5\n")
    run = load(p)
    assert run.steps == 0
    assert "runs-table" in str(run.errors[0]) and str(p) in str(run.errors[0])


def test_real_mappo_history() -> None:
    run = load(real("marl-mappo-schiphol-wandb-history/wandb_export.csv"))
    assert run.format == "wandb" and not run.errors
    assert run.steps == 256 and run.frame["step"][0] == 0 and run.frame["step"][-1] == 255
    assert run.frame["reward_mean"][-1] == pytest.approx(-2.554863691329956)
    for g in ("ghas", "transporter", "orchestrator"):
        assert run.has(f"entropy/{g}", f"kl_step/{g}", f"clip_frac/{g}", f"vf_explained_var/{g}", f"reward_mean/{g}")
    small = load(real("marl-mappo-schiphol-wandb-history/wandb_results.csv"))
    assert small.steps == 26 and small.frame["step"].to_list()[:3] == [0, 5, 10]


def test_real_benchmarl_group_gradients_critic_losses_and_evaluations() -> None:
    """BenchMARL's per-group actor gradient norm (``grad_norm_loss_objective``, before clipping) and critic
    loss, and its evaluation return every 10 iterations, against the W&B export read with ``csv``."""
    import csv

    path = real("marl-mappo-schiphol-wandb-history/wandb_export.csv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    run = load(path)
    for g in ("ghas", "transporter", "orchestrator"):
        for canonical, key in ((f"grad_norm/{g}", f"train/{g}/grad_norm_loss_objective"),
                               (f"value_loss/{g}", f"train/{g}/loss_critic")):
            assert run.sources[canonical] == key
            assert run.frame[canonical].to_list() == pytest.approx([float(r[key]) for r in rows])
    evals = [(int(r["_step"]), float(r["eval/reward/episode_reward_mean"])) for r in rows
             if r["eval/reward/episode_reward_mean"]]
    assert len(evals) == 26  # every 10 iterations (SOURCE.md)
    read = run.frame.select("step", "val_score").drop_nulls()
    assert read["step"].to_list() == [step for step, _ in evals]
    assert read["val_score"].to_list() == pytest.approx([value for _, value in evals])


def test_real_wandb_summary() -> None:
    run = load(real("trl-grpo-code-wandb-summary/wandb-summary.json"))
    assert run.trainer == "trl" and run.metadata["snapshot"] is True
    assert run.steps == 1 and run.frame["step"][0] == 960
    assert run.frame["reward_mean"][0] == pytest.approx(0.48890626430511475)
    assert run.frame["zero_variance_group_frac"][0] == 0.0


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _history(step: int, values: dict[str, object]) -> bytes:
    """A protobuf Record with a history record (wandb_internal.proto: Record.history = 2,
    HistoryRecord.item = 1, HistoryItem.key = 1, value_json = 16)."""
    items = b"".join(_field(1, _field(1, k.encode()) + _field(16, json.dumps(v).encode()))
                     for k, v in {"_step": step, **values}.items())
    return _field(2, items + _field(2, _varint(1 << 3) + _varint(step)))


def _leveldb_log(records: list[bytes]) -> bytes:
    """W&B's LevelDB log: the 7-byte file header, then records cut into chunks at 32 KiB block ends."""
    out = bytearray(b":W&B\xe1\xbe\x00")
    for rec in records:
        first = True
        while True:
            left = 32768 - len(out) % 32768
            if left < 7:
                out += b"\0" * left
                continue
            part, rec = rec[:left - 7], rec[left - 7:]
            kind = (1 if first else 4) if not rec else (2 if first else 3)
            out += b"\0\0\0\0" + len(part).to_bytes(2, "little") + bytes([kind]) + part
            first = False
            if not rec:
                break
    return bytes(out)


def test_wandb_record_file(tmp_path: Path) -> None:
    run_meta = _field(17, _field(3, b"grpo") + _field(8, b"qwen-run"))
    big = "x" * 40000  # one record longer than a block: first, middle and last chunks
    records = [run_meta] + [_history(s, {"train/reward": 0.1 * s, "train/kl": "NaN" if s == 2 else 0.01,
                                         "caption": big if s == 1 else "t"}) for s in range(6)]
    p = tmp_path / "run-abc.wandb"
    p.write_bytes(_leveldb_log(records))
    assert detect(p) is wandb.FORMAT
    run = load(p)
    assert not run.errors
    assert run.frame["step"].to_list() == list(range(6))
    assert run.frame["reward_mean"].to_list() == [0.1 * s for s in range(6)]
    assert math.isnan(run.frame["kl"][2])
    assert run.metadata["wandb_run"] == "qwen-run" and run.metadata["wandb_project"] == "grpo"
    cut = tmp_path / "cut" / "run-abc.wandb"
    cut.parent.mkdir()
    cut.write_bytes(p.read_bytes()[:-30])  # a run still writing: the last record is incomplete
    partial = load(cut)
    assert partial.frame["step"].to_list() == list(range(5)) and "cut short" in partial.errors[0].message


def test_wandb_run_folder_is_read_from_its_record_file(tmp_path: Path) -> None:
    from advcore.scan import collect_paths

    folder = tmp_path / "wandb" / "offline-run-20261201_101010-abc123"
    (folder / "files").mkdir(parents=True)
    (folder / "logs").mkdir()
    (folder / "run-abc123.wandb").write_bytes(_leveldb_log([_history(s, {"train/reward": 0.1 * s}) for s in range(5)]))
    (folder / "files" / "output.log").write_text("step:1 - critic/score/mean:0.5\n")
    (folder / "files" / "wandb-summary.json").write_text('{"train/reward": 0.4, "_step": 4}')
    (folder / "files" / "requirements.txt").write_text("torch\n")
    (folder / "logs" / "debug.log").write_text("2026-12-01 INFO start\n")
    assert collect_paths([str(tmp_path)]).files == [folder / "run-abc123.wandb"]
    (folder / "run-abc123.wandb").unlink()
    assert collect_paths([str(tmp_path)]).files == [folder / "files" / "output.log"]


def test_history_keys_name_the_trainer_and_bookkeeping_is_not_offered(tmp_path: Path) -> None:
    rows = [{"_step": i, "_runtime": 1.5 * i, "_timestamp": 1e9 + i, "reward": 0.1 * i, "reward_std": 0.2}
            for i in range(12)]
    p = tmp_path / "wandb-history.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = load(p)
    assert run.trainer != "trl"  # TRL logs train/reward_std on W&B; a bare reward_std is anyone's
    assert not {"_runtime", "_timestamp"} & set(run.metadata["unmapped"])
    p.write_text("".join(json.dumps({**r, "train/reward_std": 0.2}) + "\n" for r in rows))
    assert load(p).trainer == "trl"


def test_slime_sections_share_the_rollout_step(tmp_path: Path) -> None:
    # slime charts rollout/* against rollout/step and train/* against train/step (slime/utils/wandb_utils.py):
    # a rollout record, then its two updates, each record with its own W&B _step
    records, step = [], 0
    for r in range(8):
        records.append(_history(step, {"rollout/step": r, "rollout/raw_reward": 0.1 * r, "rollout/truncated": 0.05}))
        step += 1
        for k in range(2):
            records.append(_history(step, {"train/step": 2 * r + k, "train/grad_norm": 1.0 + r + k,
                                           "train/ppo_kl": 0.01, "train/pg_clipfrac": 0.1}))
            step += 1
    p = tmp_path / "run-slime.wandb"
    p.write_bytes(_leveldb_log(records))
    run = load(p)
    assert run.trainer == "slime"
    assert run.frame["step"].to_list() == list(range(8))
    assert run.frame["reward_mean"].to_list() == pytest.approx([0.1 * r for r in range(8)])
    # the rollout's two updates, averaged onto its step
    assert run.frame["grad_norm"].to_list() == pytest.approx([1.5 + r for r in range(8)])
    assert run.frame["truncated_frac"].to_list() == pytest.approx([0.05] * 8)
