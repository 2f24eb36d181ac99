from __future__ import annotations

from pathlib import Path

import polars as pl

from advcore.ingest import detect, load
from advcore.ingest.formats import plain


def test_jsonl_records(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text('{"step": 1, "reward_mean": 0.5, "actor": {"entropy": 1.0}, "note": "x"}\n\n'
                 '{"step": 2, "reward_mean": "0.75", "kl": NaN}\n')
    assert detect(p) is plain
    run = load(p)
    assert run.frame["step"].to_list() == [1, 2]
    assert run.frame["reward_mean"].to_list() == [0.5, 0.75]
    assert run.metadata["non_numeric"] == ["note"]


def test_jsonl_truncated_line(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text('{"step": 1, "reward": 0.5}\n{"step": 2, "rew')
    run = load(p)
    assert run.steps == 1 and run.errors[0].line == 2


def test_parquet(tmp_path: Path) -> None:
    p = tmp_path / "m.parquet"
    pl.DataFrame({"step": [1, 2], "reward_mean": [0.1, None], "entropy": [1.0, 0.5]}).write_parquet(p)
    assert detect(p) is plain
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [0.1, None]
    assert run.frame["entropy"].to_list() == [1.0, 0.5]


def test_evaluation_records_are_kept_apart_from_training(tmp_path: Path) -> None:
    # a hand-written loop logging train and eval records with the same keys at the same step
    p = tmp_path / "log.jsonl"
    p.write_text('{"step": 10, "phase": "train", "reward_mean": 0.8}\n'
                 '{"step": 10, "phase": "eval", "reward_mean": -0.02, "epoch": 1}\n'
                 '{"step": 11, "split": "Validation", "reward_mean": 0.1}\n'
                 '{"step": 11, "mode": "train", "reward_mean": 0.9}\n')
    raw = plain.read(p)
    assert raw.metadata["evaluation_records"] == 2
    assert raw.frame["reward_mean"].to_list() == [0.8, None, None, 0.9]
    assert raw.frame["eval/reward_mean"].to_list() == [None, -0.02, 0.1, None]
    assert raw.frame["epoch"].to_list() == [None, 1.0, None, None]
