"""NaN and +-inf survive ingest in every format that can write them (the NONFINITE detector needs
them); what a format itself means by "not logged" (JSON null, an empty CSV cell, a Parquet null)
stays null."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from advcore.ingest import load
from advcore.ingest import _parse


def _col(path: Path, name: str) -> list[float | None]:
    run = load(path)
    assert run.errors == (), run.errors
    return list(run.frame[name].to_list())


def _is_nan(v: float | None) -> bool:
    return v is not None and math.isnan(v)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nan", math.nan), ("NaN", math.nan), ("inf", math.inf), ("-inf", -math.inf), ("-Infinity", -math.inf),
        ("np.float64(nan)", math.nan), ("tensor(inf, device='cuda:0')", math.inf), ("'nan'", math.nan),
        ("0.5", 0.5), ("True", 1.0), ("", None), ("null", None), ("schedule", None),
    ],
)
def test_the_one_scalar_parser(text: str, expected: float | None) -> None:
    got = _parse.number(text)
    if expected is None:
        assert got is None
    elif math.isnan(expected):
        assert got is not None and math.isnan(got)
    else:
        assert got == expected
    assert _parse.value is _parse.number


def test_python_floats_pass_through() -> None:
    assert _is_nan(_parse.number(float("nan")))
    assert _parse.number(float("-inf")) == -math.inf
    assert _parse.number(None) is None


def test_plain_jsonl(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text('{"step": 1, "kl": NaN, "grad_norm": Infinity, "entropy": -Infinity, "reward_mean": null}\n'
                 '{"step": 2, "kl": "nan", "grad_norm": 1.0, "entropy": 0.5, "reward_mean": 0.5}\n')
    assert all(_is_nan(v) for v in _col(p, "kl"))
    assert _col(p, "grad_norm") == [math.inf, 1.0]
    assert _col(p, "entropy") == [-math.inf, 0.5]
    assert _col(p, "reward_mean") == [None, 0.5]


def test_plain_parquet(tmp_path: Path) -> None:
    p = tmp_path / "m.parquet"
    pl.DataFrame({"step": [1, 2, 3], "kl": [float("nan"), 0.1, None], "grad_norm": [1.0, float("inf"), 2.0]}
                 ).write_parquet(p)
    kl = _col(p, "kl")
    assert _is_nan(kl[0]) and kl[1:] == [0.1, None]
    assert _col(p, "grad_norm") == [1.0, math.inf, 2.0]


def test_trainer_state_json(tmp_path: Path) -> None:
    p = tmp_path / "trainer_state.json"
    rows = [{"step": 1, "grad_norm": float("nan"), "loss": 0.1, "reward": 0.5},
            {"step": 2, "grad_norm": float("inf"), "loss": 0.2, "reward": 0.6}]
    p.write_text(json.dumps({"log_history": rows}))  # Python's json writes NaN / Infinity
    assert "NaN" in p.read_text() and "Infinity" in p.read_text()
    g = _col(p, "grad_norm")
    assert _is_nan(g[0]) and g[1] == math.inf


def test_trl_console(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("{'loss': 0.1, 'grad_norm': nan, 'kl': -inf, 'reward': 0.5, 'info/x': 1.0}\n"
                 "{'loss': 0.2, 'grad_norm': inf, 'kl': 0.01, 'reward': 0.6, 'info/x': 2.0}\n")
    g = _col(p, "grad_norm")
    assert _is_nan(g[0]) and g[1] == math.inf
    assert _col(p, "kl") == [-math.inf, 0.01]


def test_verl_console(tmp_path: Path) -> None:
    p = tmp_path / "verl.log"
    p.write_text("step:1 - actor/grad_norm:nan - critic/kl:np.float64(inf) - actor/entropy:1.0\n"
                 "step:2 - actor/grad_norm:-inf - critic/kl:0.1 - actor/entropy:nan\n")
    assert _col(p, "grad_norm")[1] == -math.inf and _is_nan(_col(p, "grad_norm")[0])
    assert _col(p, "kl") == [math.inf, 0.1]
    assert _is_nan(_col(p, "entropy")[1])


def test_verl_jsonl_null_is_nan_where_the_key_is_a_number_elsewhere(tmp_path: Path) -> None:
    # verl's file logger writes NaN as null: null in a key that is a number on another line is NaN;
    # a key that is null on every line was never a number and stays null; an absent key is missing
    p = tmp_path / "exp.jsonl"
    p.write_text('{"step":1,"data":{"actor/grad_norm":null,"critic/kl":NaN,"actor/entropy":1.0,"actor/lr":null}}\n'
                 '{"step":2,"data":{"actor/grad_norm":2.0,"critic/kl":"inf","actor/lr":null}}\n')
    grad = _col(p, "grad_norm")
    assert _is_nan(grad[0]) and grad[1] == 2.0
    assert _col(p, "entropy") == [1.0, None]
    kl = _col(p, "kl")
    assert _is_nan(kl[0]) and kl[1] == math.inf


def test_openrlhf(tmp_path: Path) -> None:
    p = tmp_path / "openrlhf.log"
    p.write_text("Global step 1: {'kl': nan, 'policy_entropy': -inf, 'reward': 0.5}\n"
                 "Global step 2: {'kl': 0.1, 'policy_entropy': 1.2, 'reward': 0.6}\n")
    kl = _col(p, "kl")
    assert _is_nan(kl[0]) and kl[1] == 0.1
    assert _col(p, "entropy") == [-math.inf, 1.2]


def test_csv_table_text_nan_is_nan_empty_cell_is_null(tmp_path: Path) -> None:
    p = tmp_path / "metrics.csv"
    p.write_text("step,kl,grad_norm,entropy\n1,nan,inf,\n2,0.1,-inf,0.5\n3,0.2,1.0,0.4\n")
    kl = _col(p, "kl")
    assert _is_nan(kl[0]) and kl[1:] == [0.1, 0.2]
    assert _col(p, "grad_norm") == [math.inf, -math.inf, 1.0]
    assert _col(p, "entropy") == [None, 0.5, 0.4]


def test_wandb_history_jsonl_and_csv(tmp_path: Path) -> None:
    j = tmp_path / "history.jsonl"
    j.write_text('{"_step": 0, "train/kl": NaN, "train/grad_norm": 1.0}\n'
                 '{"_step": 1, "train/kl": 0.1, "train/grad_norm": Infinity}\n')
    kl = _col(j, "kl")
    assert _is_nan(kl[0]) and kl[1] == 0.1
    assert _col(j, "grad_norm") == [1.0, math.inf]
    c = tmp_path / "history.csv"
    c.write_text("_step,train/kl,train/grad_norm\n0,NaN,1.0\n1,0.1,\n2,0.2,-Infinity\n")
    kl = _col(c, "kl")
    assert _is_nan(kl[0]) and kl[1:] == [0.1, 0.2]
    assert _col(c, "grad_norm") == [1.0, None, -math.inf]


def test_columnar_json(tmp_path: Path) -> None:
    p = tmp_path / "metrics.json"
    p.write_text('{"kl_avg": [NaN, 0.1, Infinity], "rewards_avg": [0.1, 0.2, 0.3]}')
    kl = _col(p, "kl")
    assert _is_nan(kl[0]) and kl[1:] == [0.1, math.inf]


def test_tensorboard_and_the_alias_scale(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2, summary_pb2  # type: ignore[import-untyped]
    from tensorboard.summary.writer.event_file_writer import EventFileWriter  # type: ignore[import-untyped]

    writer = EventFileWriter(str(tmp_path))
    values = [(1024, float("nan"), 0.01), (2048, float("inf"), float("nan")), (3072, -2.5, 0.02)]
    for step, entropy_loss, kl_value in values:
        summary = summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag="train/entropy_loss", simple_value=entropy_loss),
            summary_pb2.Summary.Value(tag="train/approx_kl", simple_value=kl_value),
        ])
        writer.add_event(event_pb2.Event(step=step, summary=summary))
    writer.close()
    (path,) = tmp_path.glob("events.out.tfevents*")
    # SB3 logs the entropy loss (minus the entropy): the alias scale -1 turns inf into -inf, NaN stays NaN
    entropy = _col(path, "entropy")
    assert _is_nan(entropy[0]) and entropy[1] == -math.inf and entropy[2] == pytest.approx(2.5)
    approx_kl = _col(path, "kl_step")
    assert approx_kl[0] == pytest.approx(0.01) and _is_nan(approx_kl[1])
