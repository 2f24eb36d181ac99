"""A bounded fuzzing of ``advcore scan`` (issue 12): seeded mutations of small logs we generate (a TRL
``trainer_state.json``, a verl console log, a plain JSONL) are each scanned alone and inside a
folder beside a good log, and rendered in every output format.

For every input: no exception escapes the scan or a renderer; the input is in the files of a run
of the output (none is lost); every error names a file of its run; the good log beside it is
still read; the scan alone takes under 10 s, and no input lifts the process's peak resident memory
past 1 GB. The mutations: truncation at a random offset, byte flips, numbers replaced by huge,
tiny or non-finite spellings (and integers past 2^63), long lines (spaces, digits, separators,
nesting), NUL bytes, byte-order marks and re-encoding in UTF-16/32, control characters, repeated
and deleted lines.

``ADVCORE_FUZZ_SEEDS`` sets the seeds per fixture (default 100: 300 inputs, about 20 s);
``make fuzz`` runs many more. A failing case names its fixture and seed; rerun it alone with
``pytest tests/test_fuzz_scan.py -k 'verl and 1234'``.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import random
import re
import resource
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from advcore.report import render_human, render_json, render_markdown
from advcore.scan import RunReport, ScanOptions, collect_paths, scan

SEEDS = int(os.environ.get("ADVCORE_FUZZ_SEEDS", "100"))
#: No input may take longer to scan alone, nor lift the test process's peak resident memory past this.
MAX_SECONDS = 10.0
MAX_BYTES = 1 << 30
STEPS = 30


def _trainer_state() -> bytes:
    rng = random.Random(1)
    rows = []
    for step in range(1, STEPS + 1):
        tied = min(1.0, step / 20)
        rows.append({"step": step, "epoch": step / STEPS, "loss": 0.01 * rng.random(), "reward": 0.5 + 0.4 * tied,
                     "reward_std": 0.3 * (1 - tied), "frac_reward_zero_std": tied, "kl": 1e-3 * step,
                     "rewards/accuracy_reward/mean": 0.5 + 0.4 * tied, "grad_norm": 0.5 * (1 - tied) + 1e-3,
                     "learning_rate": 1e-6, "completions/mean_length": 120.0 + step})
    doc = {"global_step": STEPS, "max_steps": STEPS, "log_history": rows}
    return json.dumps(doc, indent=2).encode()


def _verl_console() -> bytes:
    rng = random.Random(2)
    lines = ["(TaskRunner pid=2021) actor_rollout_ref.rollout.n=8 trainer.total_training_steps=30"]
    for step in range(1, STEPS + 1):
        score = 0.2 + 0.5 * step / STEPS + 0.05 * rng.random()
        lines.append(f"\x1b[36m(TaskRunner pid=2021)\x1b[0m step:{step} - critic/score/mean:np.float64({score:.4f}) - "
                     f"critic/score/max:1.0 - critic/score/min:0.0 - critic/advantages/max:{2.0 - step / 30:.3f} - "
                     f"critic/advantages/min:{-2.0 + step / 30:.3f} - actor/entropy:{1.2 - step / 60:.4f} - "
                     f"actor/pg_clipfrac:0.01 - actor/ppo_kl:0.0005 - actor/grad_norm:{0.4 + rng.random():.3f} - "
                     f"response_length/mean:{300 + step}.0")
    return ("\n".join(lines) + "\n").encode()


def _plain_jsonl() -> bytes:
    rng = random.Random(3)
    return "".join(json.dumps({"step": step, "reward_mean": 0.3 + 0.01 * step, "reward_std": 0.2 + 0.1 * rng.random(),
                               "adv_std": 0.9, "kl": 1e-3 * step, "entropy": 1.0 - step / 100,
                               "zero_variance_group_frac": 0.1}) + "\n" for step in range(1, STEPS + 1)).encode()


FIXTURES: dict[str, tuple[str, Callable[[], bytes]]] = {
    "trl": ("trainer_state.json", _trainer_state),
    "verl": ("console.log", _verl_console),
    "jsonl": ("metrics.jsonl", _plain_jsonl),
}

# -- mutations: each takes the bytes and a seeded generator, and returns new bytes -----------------

_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
SPELLINGS = [b"1e308", b"1.7976931348623157e308", b"-1.7976931348623157e+308", b"1e309", b"-1e400", b"1e-400",
             b"4.9e-324", b"inf", b"-inf", b"+inf", b"Infinity", b"-Infinity", b"NaN", b"nan", b"NAN", b"-nan",
             b"9223372036854775808", b"-9223372036854775809", b"18446744073709551616", b"9" * 400, b"1" + b"0" * 5000,
             b"np.float64(inf)", b"np.float64(1e308)", b"tensor(nan, device='cuda:0')", b"0x1p1023", b"1_000",
             b'"1e999"', b'"NaN"', b"null", b"true", b"[]", b"{}", b"-", b"."]


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(len(data) + 1)]


def _flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= rng.randrange(1, 256)
    return bytes(out)


def _numbers(data: bytes, rng: random.Random) -> bytes:
    spans = [m.span() for m in _NUMBER.finditer(data)]
    if not spans:
        return data
    out = data
    for start, end in sorted(rng.sample(spans, min(len(spans), rng.randint(1, 6))), reverse=True):
        out = out[:start] + rng.choice(SPELLINGS) + out[end:]
    return out


def _long_line(data: bytes, rng: random.Random) -> bytes:
    unit = rng.choice([b" ", b"9", b" - ", b"- ", b":", b"{", b"[", b"step:1 - ", b"a:1 - ", b"\t", b",", b'"'])
    line = unit * (rng.randint(64_000, 300_000) // len(unit))
    lines = data.split(b"\n")
    at = rng.randrange(len(lines) + 1)
    if rng.random() < 0.5:
        lines.insert(at, line)
    elif lines:
        at = min(at, len(lines) - 1)
        lines[at] = lines[at] + line
    return b"\n".join(lines)


def _nul(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(min(len(data), 4096) + 1)
    return data[:at] + b"\0" * rng.choice([1, 2, 7, 512, 4096]) + data[at:]


_CODECS = [("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE), ("utf-32-le", codecs.BOM_UTF32_LE),
           ("utf-32-be", codecs.BOM_UTF32_BE)]


def _encoding(data: bytes, rng: random.Random) -> bytes:
    choice = rng.randrange(4)
    if choice == 0:
        return codecs.BOM_UTF8 + data
    if choice == 1:  # a mark that does not match the bytes
        return rng.choice(_CODECS)[1] + data
    codec, bom = rng.choice(_CODECS)
    return (bom if choice == 2 else b"") + data.decode("utf-8", errors="replace").encode(codec)


def _controls(data: bytes, rng: random.Random) -> bytes:
    bits = [b"\x1b]0;owned\x07", b"\x1b[2J", b"\x1b[31m", b"\r", b"\x0b", b"\x0c", b"\x85", "\u202e".encode(),
            "\u2028".encode(), b"\x08" * 10, b"\x00"]
    out = data
    for _ in range(rng.randint(1, 5)):
        at = rng.randrange(len(out) + 1)
        out = out[:at] + rng.choice(bits) + out[at:]
    return out


def _lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    if not lines:
        return data
    i = rng.randrange(len(lines))
    if rng.random() < 0.5:
        lines.insert(i, lines[i])  # a repeated line (a resumed run, a duplicate step)
    else:
        del lines[i]
    return b"\n".join(lines)


def _empty(data: bytes, rng: random.Random) -> bytes:
    return rng.choice([b"", b"\n", b" ", codecs.BOM_UTF8, b"\0"])


MUTATIONS = [_truncate, _flip, _numbers, _long_line, _nul, _encoding, _controls, _lines]


def mutate(data: bytes, seed: int) -> tuple[bytes, list[str]]:
    """``data`` after one to three seeded mutations (rarely: emptied), and their names."""
    rng = random.Random(seed)
    if rng.random() < 0.02:
        return _empty(data, rng), ["empty"]
    applied = rng.sample(MUTATIONS, rng.randint(1, 3))
    for mutation in applied:
        data = mutation(data, rng)
    return data, [m.__name__.lstrip("_") for m in applied]


# -- the checks --------------------------------------------------------------------------------------


def _peak_bytes() -> int:
    """The test process's peak resident memory so far (``ru_maxrss`` is in kilobytes on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _render_all(reports: list[RunReport]) -> None:
    json.loads(render_json(reports))
    render_markdown(reports)
    render_human(reports, Console(file=io.StringIO(), width=100))


def _check(reports: list[RunReport], inputs: list[Path]) -> None:
    files = {f for r in reports for f in r.run.files}
    for path in inputs:
        assert str(path) in files, f"{path} is in no run of the output"
    for r in reports:
        for e in r.run.errors:
            assert e.path in r.run.files or e.path == r.run.path or Path(e.path).parent == Path(r.run.path), \
                f"error {e} does not name a file of its run {r.run.files}"
            assert str(e).startswith(e.path)
            assert len(e.message) < 500
    _render_all(reports)


CASES = [(name, seed) for name in FIXTURES for seed in range(SEEDS)]


@pytest.mark.parametrize(("name", "seed"), CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_a_mutated_log_is_reported_alone_and_beside_a_good_one(tmp_path: Path, name: str, seed: int) -> None:
    filename, make = FIXTURES[name]
    data, applied = mutate(make(), seed)
    alone = tmp_path / "alone" / filename
    alone.parent.mkdir()
    alone.write_bytes(data)
    peak_before = _peak_bytes()
    try:
        started = time.perf_counter()
        _check(scan([alone], ScanOptions(), jobs=1), [alone])
        seconds = time.perf_counter() - started
        assert seconds < MAX_SECONDS, f"the scan took {seconds:.1f} s"
        folder = tmp_path / "folder"
        (folder / "bad").mkdir(parents=True)
        (folder / "good").mkdir()
        bad = folder / "bad" / filename
        bad.write_bytes(data)
        good = folder / "good" / "metrics.jsonl"
        good.write_bytes(_plain_jsonl())
        beside = folder / "bad" / "beside.jsonl"  # a good file in the same folder: one run, or two
        beside.write_bytes(_plain_jsonl())
        collected = collect_paths([str(folder)])
        assert set(collected.files) == {bad, good, beside}
        reports = scan(collected.files, ScanOptions(), jobs=1)
        _check(reports, [bad, good, beside])
        (good_run,) = [r for r in reports if str(good) in r.run.files]
        assert good_run.run.steps == STEPS and not good_run.run.errors
        peak = _peak_bytes()  # a peak another test set before this input is not this input's
        assert peak < MAX_BYTES or peak == peak_before, f"this input lifted the peak memory to {peak / 2**30:.2f} GB"
    except AssertionError as e:
        raise AssertionError(f"{name} seed {seed} ({', '.join(applied)}): {e}") from None
