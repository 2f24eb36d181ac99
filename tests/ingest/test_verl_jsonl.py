from __future__ import annotations

import math

from pathlib import Path

import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import verl_jsonl

from tests._real import real


def test_nulls_strings_key_order_and_truncated_line(tmp_path: Path) -> None:
    p = tmp_path / "exp.jsonl"
    p.write_text(
        '{"step":1,"data":{"critic/score/mean":0.5,"actor/pg_loss":null,"resize/mode":"schedule","x":"0.25"}}\n'
        '{"step":2,"data":{"actor/pg_loss":NaN,"critic/score/mean":0.75}}\n'
        '{"step":3,"data":{"critic/score/mean":0.\n',
        encoding="utf-8",
    )
    assert detect(p) is verl_jsonl.FORMAT
    raw = verl_jsonl.read(p)
    f = raw.frame
    assert f["step"].to_list() == [1, 2]
    assert f["critic/score/mean"].to_list() == [0.5, 0.75]
    # a number (NaN) on line 2, so its null on line 1 is a NaN the file logger wrote as null
    assert math.isnan(f["actor/pg_loss"][0]) and math.isnan(f["actor/pg_loss"][1])
    assert f["x"][0] == 0.25
    assert "resize/mode" not in f.columns and raw.metadata["text_valued_keys"] == ["resize/mode"]
    (err,) = raw.errors
    assert err.line == 3 and err.path == str(p)
    assert load(p).frame["reward_mean"].to_list() == [0.5, 0.75]


@pytest.mark.parametrize("line", ['{"step": 1, "elapsed_seconds": 12.5, "data": {"critic/score/mean": 0.5}}',
                                  '{"elapsed_seconds": 12.5, "data": {"critic/score/mean": 0.5}, "step": 1}'])
def test_records_with_other_top_level_keys(tmp_path: Path, line: str) -> None:
    p = tmp_path / "exp.jsonl"
    p.write_text(line + "\n" + line.replace('"step": 1', '"step": 2').replace("0.5", "0.75") + "\n")
    assert detect(p) is verl_jsonl.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == [1, 2] and run.frame["reward_mean"].to_list() == [0.5, 0.75]
    assert "elapsed_seconds" not in run.metadata.get("unmapped", [])


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "e.jsonl"
    p.write_text("", encoding="utf-8")
    assert verl_jsonl.read(p).errors
    assert load(p).errors


def test_real_filelogger() -> None:
    path = real("verl-elastic-ppo-filelogger-broken/gsm8k.jsonl")
    assert detect(path) is verl_jsonl.FORMAT
    raw = verl_jsonl.read(path)
    assert raw.frame["step"].to_list() == [0, 1, 2, 3]
    # null at step 3 after numbers: NaN written as null by the file logger
    assert math.isnan(raw.frame["actor/pg_loss"][3]) and math.isnan(raw.frame["actor/ppo_kl"][3])
    assert raw.metadata["null_as_nan_keys"][:2] == ["actor/pg_loss", "actor/ppo_kl"]
    assert raw.frame["rollout_corr/kl"][1] == pytest.approx(9.97, abs=0.01)
    run = load(path)
    assert run.errors == ()
    # line 0 holds only the validation before training: val-core/openai/gsm8k/acc/mean@1 = 0.0
    assert run.frame["step"].to_list() == [0, 1, 2, 3]
    assert run.frame["val_score"].to_list() == [0.0, None, None, None]
    assert run.frame["reward_mean"].to_list() == [None, 0.0, 0.0, 0.0]
    assert run.frame["truncated_frac"][2] == pytest.approx(1.0)
