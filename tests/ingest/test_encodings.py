"""Logs are read whatever Unicode encoding they were written in, and sniffing is not thrown by what
a real file can hold at its top: UTF-16/UTF-32 with or without a byte-order mark, UTF-8 with a mark,
NUL bytes, JSON Lines whose first value is a list, a CSV row cut short.

The oracle throughout is the same text read as plain UTF-8: re-encoding a log must not change what
advcore reads from it (format, steps, every value)."""

from __future__ import annotations

import codecs
import json
import sqlite3
from pathlib import Path

import polars as pl
import polars.testing
import pytest

from advcore.ingest import detect, load
from advcore.ingest._text import decode_head, encoding_of
from advcore.ingest.formats import columnar_json, csv_table, plain

from tests._real import REAL

N = 12


def _jsonl() -> str:
    return "".join(json.dumps({"step": i, "reward_mean": 0.1 * (i % 4), "reward_std": 0.5, "kl": 1e-3 * i}) + "\n"
                   for i in range(1, N + 1))


def _trainer_state() -> str:
    rows = [{"step": i, "reward": 0.25 * (i % 3), "reward_std": 0.4, "loss": 0.01 * i} for i in range(1, N + 1)]
    return json.dumps({"global_step": N, "log_history": rows}, indent=2)


def _verl() -> str:
    return "".join(f"(TaskRunner pid=7) step:{i} - critic/score/mean:{0.1 * (i % 5):.3f} - critic/score/std:0.5 - "
                   f"actor/entropy:{1.5 - 0.01 * i:.3f} - actor/grad_norm:np.float64(0.{i})\n" for i in range(1, N + 1))


def _csv() -> str:
    return "step,reward_mean,reward_std,Training Loss\r\n" + "".join(
        f"{i},{0.1 * (i % 3):.2f},0.3,{0.5 / i:.4f}\r\n" for i in range(1, N + 1))


def _trl_console() -> str:
    return "".join(f"{{'loss': {0.01 * i}, 'reward': {0.1 * (i % 4)}, 'reward_std': 0.3, 'epoch': {i / N:.3f}}}\n"
                   for i in range(1, N + 1))


def _openrlhf() -> str:
    return "".join(f"Global step {i}: {{'policy_loss': {-0.1 * i}, 'reward': {0.05 * i}, 'kl': 0.01}}\n"
                   for i in range(1, N + 1))


def _cleanrl() -> str:
    return "".join(f"global_step={64 * i}, episodic_return={1.5 * i}\n" for i in range(1, N + 1))


def _columnar() -> str:
    return json.dumps({"rewards_avg": [0.1 * i for i in range(N)], "kl_avg": [0.01] * N})


LOGS = {"run.jsonl": _jsonl, "trainer_state.json": _trainer_state, "console.log": _verl, "progress.csv": _csv,
        "train.log": _trl_console, "openrlhf.log": _openrlhf, "cleanrl.txt": _cleanrl, "metrics.json": _columnar}

#: (codec to write with, byte-order mark written before the text)
ENCODINGS = [("utf-8", codecs.BOM_UTF8), ("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE),
             ("utf-16-le", b""), ("utf-16-be", b""), ("utf-32-le", codecs.BOM_UTF32_LE),
             ("utf-32-be", codecs.BOM_UTF32_BE), ("utf-32-le", b""), ("utf-32-be", b"")]


def _same_read(original: Path, other: Path) -> None:
    a, b = load(original), load(other)
    assert not a.errors and a.steps > 0, a.errors  # the oracle itself reads
    assert (b.format, b.trainer, b.steps, b.metrics) == (a.format, a.trainer, a.steps, a.metrics)
    assert [e.message for e in b.errors] == [e.message for e in a.errors]
    polars.testing.assert_frame_equal(a.frame, b.frame)


@pytest.mark.parametrize("name", list(LOGS))
@pytest.mark.parametrize(("codec", "bom"), ENCODINGS, ids=[f"{c}{'-bom' if b else ''}" for c, b in ENCODINGS])
def test_a_log_reads_the_same_in_every_unicode_encoding(tmp_path: Path, name: str, codec: str, bom: bytes) -> None:
    text = LOGS[name]()
    (tmp_path / "utf8").mkdir()
    (tmp_path / "other").mkdir()
    original = tmp_path / "utf8" / name
    original.write_bytes(text.encode("utf-8"))
    other = tmp_path / "other" / name
    other.write_bytes(bom + text.encode(codec))
    _same_read(original, other)


def test_encoding_of_agrees_with_the_codecs() -> None:
    text = _verl() + "ünïcödé ✓ 𝔘 (a character outside the BMP)\n"
    for codec, bom in ENCODINGS:
        data = bom + text.encode(codec)
        # what the chosen codec decodes equals the text that was written, mark excluded
        assert data.decode(encoding_of(data[:4096])) == text, (codec, bom)
    assert encoding_of(text.encode("utf-8")) == "utf-8"
    assert encoding_of(b"") == "utf-8"


def test_a_head_cut_inside_a_character_is_still_text() -> None:
    text = "step:1 - reward:0.5 ✓\n" * 400
    for codec in ("utf-8", "utf-16-le", "utf-32-be"):
        data = text.encode(codec)
        for cut in (4095, 4097, 4098, 4099):
            head = decode_head(data[:cut])
            assert head is not None and text.startswith(head) and len(head) >= cut // 4 - 1


def test_a_nul_byte_does_not_make_a_text_log_binary(tmp_path: Path) -> None:
    text = _verl()
    lines = text.splitlines(keepends=True)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    clean = tmp_path / "a" / "console.log"
    clean.write_text(text)
    # a run of NULs between two lines (the hole a crash leaves) costs nothing
    holed = tmp_path / "b" / "console.log"
    holed.write_bytes("".join(lines[:3]).encode() + b"\0" * 600 + "".join(lines[3:]).encode())
    _same_read(clean, holed)
    # nor does a NUL beside a byte UTF-8 forbids (a Latin-1 letter, a flipped bit)
    latin = tmp_path / "d" / "console.log"
    latin.parent.mkdir()
    latin.write_bytes(b"caf\xe9 started\n" + b"\0" * 4 + text.encode())
    assert load(latin).format == "verl_console" and load(latin).steps == N
    jsonl = tmp_path / "c.jsonl"
    body = _jsonl().splitlines(keepends=True)
    jsonl.write_bytes("".join(body[:2]).encode() + b'{"step": 3,\0 "reward_mean": 0.3}\n' + "".join(body[3:]).encode())
    run = load(jsonl)
    assert run.format == "plain" and run.steps == N - 1
    (error,) = run.errors
    assert error.path == str(jsonl) and error.line == 3


def test_binary_files_with_nul_bytes_stay_binary(tmp_path: Path) -> None:
    db = tmp_path / "metrics.db"
    with sqlite3.connect(db) as con:  # a real SQLite file: its pages are full of NULs and small integers
        con.execute("create table m (step integer, reward real)")
        con.executemany("insert into m values (?, ?)", [(i, 0.5) for i in range(50)])
    con.close()
    assert decode_head(db.read_bytes()[:65536]) is None
    parquet = tmp_path / "rows.parquet"
    pl.DataFrame({"step": [1, 2], "reward_mean": [0.5, 0.25]}).write_parquet(parquet)
    assert decode_head(parquet.read_bytes()) is None
    assert detect(parquet) is not None  # still read as Parquet
    noise = bytes((i * 97 + 13) % 256 for i in range(4096))  # every byte value, NULs included
    assert decode_head(noise) is None
    assert decode_head(b"\0" * 4096) is None


def test_json_with_a_utf8_bom(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for name in ("trainer_state.json", "metrics.json"):
        plain_file, marked = tmp_path / "a" / name, tmp_path / "b" / name
        text = LOGS[name]()
        plain_file.write_text(text)
        marked.write_bytes(codecs.BOM_UTF8 + text.encode())
        _same_read(plain_file, marked)


def test_json_lines_whose_first_value_is_a_list_are_records(tmp_path: Path) -> None:
    records = [{"rewards": [1.0, 0.0, 1.0], "step": i, "reward_mean": 2 / 3, "kl": 0.01 * i} for i in range(1, N + 1)]
    p = tmp_path / "rollouts.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in records))
    head = p.read_text()
    assert not columnar_json.sniff(p, head) and plain.sniff(p, head)
    run = load(p)
    assert run.format == "plain" and run.steps == N and not run.errors
    assert run.frame["step"].to_list() == [r["step"] for r in records]
    # a columnar document on one line (no second line) is still columnar
    doc = tmp_path / "columns.json"
    doc.write_text(json.dumps({"rewards_avg": [0.5] * N, "kl_avg": [0.01] * N}))
    assert detect(doc) is columnar_json.FORMAT


def test_a_csv_with_a_short_row_near_the_top_is_a_csv(tmp_path: Path) -> None:
    lines = _csv().splitlines()
    p = tmp_path / "progress.csv"
    p.write_text("\n".join([lines[0], lines[1], "2,0.1", *lines[3:]]) + "\n")  # row 2 cut short
    assert csv_table.sniff(p, p.read_text())
    run = load(p)
    assert run.format == "csv_table" and run.steps == N - 1
    (error,) = run.errors
    assert error.line == 3 and "expected 4 fields" in error.message
    # but a text whose rows mostly disagree with their first is not a table
    prose = tmp_path / "notes.csv"
    prose.write_text("a,b,c\n1,2\n3\n4,5\n6,7,8\n9\n")
    assert not csv_table.sniff(prose, prose.read_text())


def test_a_field_over_the_csv_limit_costs_its_row(tmp_path: Path) -> None:
    lines = _csv().splitlines()
    p = tmp_path / "progress.csv"
    p.write_text("\n".join([*lines[:4], f'4,"{"9" * 200_000}",0.3,0.1', *lines[5:]]) + "\n")
    run = load(p, format="csv_table")
    assert run.steps == N - 1
    (error,) = run.errors
    assert error.path == str(p) and error.line == 5 and "field larger than field limit" in error.message


def _real_text_logs() -> list[Path]:
    if not REAL.is_dir():
        return []
    return sorted(p for p in REAL.rglob("*") if p.is_file() and p.stat().st_size < 300_000
                  and p.suffix.lower() in (".csv", ".json", ".jsonl", ".log", ".txt"))


@pytest.mark.parametrize("path", _real_text_logs(), ids=lambda p: str(p.relative_to(REAL)))
def test_real_logs_read_the_same_in_utf16_and_utf32(tmp_path: Path, path: Path) -> None:
    original = load(path)
    if original.steps == 0:
        pytest.skip("advcore reads nothing from this file in UTF-8 either")
    for i, (codec, bom) in enumerate([("utf-16-le", codecs.BOM_UTF16_LE), ("utf-32-be", b"")]):
        other = tmp_path / str(i) / path.name
        other.parent.mkdir()
        other.write_bytes(bom + path.read_text(encoding="utf-8").encode(codec))
        b = load(other)
        assert (b.format, b.steps, b.metrics) == (original.format, original.steps, original.metrics)
        assert [e.message for e in b.errors] == [e.message for e in original.errors]
        polars.testing.assert_frame_equal(original.frame, b.frame)
