"""What a scan reads and what it prints: symbolic links are followed only inside the scanned
folders (unless --follow-links), no link loop makes a walk or a ``**`` glob loop, a folder that
cannot be listed is reported, and nothing a log or its name holds reaches the terminal as a
control character."""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest

import advcore._paths
from advcore._escape import described, excerpt, printable
from advcore.cli import main
from advcore.ingest import IngestError
from advcore.scan import collect_paths

SECRET = "password-hash-4b1d"


def _jsonl(path: Path, n: int = 8) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"step": i, "reward_mean": 0.5, "reward_std": 0.1}) + "\n"
                            for i in range(1, n + 1)))
    return path


def _real_files(top: Path) -> set[str]:
    """The oracle: the real, non-hidden files under ``top``, listed without following any link."""
    out = set()
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out |= {os.path.realpath(os.path.join(folder, f)) for f in files
                if not f.startswith(".") and not os.path.islink(os.path.join(folder, f))}
    return out


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """scan/ holds two runs, links inside it, links out of it and link loops; outside/ holds a secret."""
    scan, outside = tmp_path / "scan", tmp_path / "outside"
    _jsonl(scan / "a" / "metrics.jsonl")
    _jsonl(scan / "b" / "metrics.jsonl")
    _jsonl(outside / "run" / "metrics.jsonl")
    (outside / "shadow").write_text(f"root:{SECRET}:19000:0:99999:7:::\n")
    (scan / "a" / "leak.log").symlink_to(outside / "shadow")            # a file out of the tree
    (scan / "out").symlink_to(outside / "run")                           # a folder out of the tree
    (scan / "a" / "again.jsonl").symlink_to(scan / "a" / "metrics.jsonl")  # a file in the tree
    (scan / "b" / "to_a").symlink_to(scan / "a")                         # a folder in the tree
    (scan / "a" / "up").symlink_to(scan)                                 # a loop
    (scan / "b" / "self").symlink_to(".")                                # a loop on itself
    return tmp_path


def test_links_out_of_the_scanned_folder_are_not_followed(tree: Path) -> None:
    scan = tree / "scan"
    got = collect_paths([str(scan)])
    assert {os.path.realpath(p) for p in got.files} == _real_files(scan)
    assert len(got.files) == len(_real_files(scan))  # each file once, however many links lead to it
    assert all(not p.is_symlink() for p in got.files)  # by its own path
    assert sorted(link.name for link, _ in got.links_skipped) == ["leak.log", "out"]
    assert {to for _, to in got.links_skipped} == {os.path.realpath(tree / "outside" / "shadow"),
                                                   os.path.realpath(tree / "outside" / "run")}
    followed = collect_paths([str(scan)], follow_links=True)
    assert {os.path.realpath(p) for p in followed.files} == _real_files(scan) | _real_files(tree / "outside")
    assert followed.links_skipped == []


def test_a_link_into_another_scanned_folder_is_followed(tree: Path) -> None:
    (tree / "scan" / "a" / "leak.log").unlink()
    (tree / "scan" / "out").unlink()
    (tree / "scan" / "b" / "other").symlink_to(tree / "outside" / "run")
    got = collect_paths([str(tree / "scan"), str(tree / "outside" / "run")])
    assert got.links_skipped == []
    assert {os.path.realpath(p) for p in got.files} == _real_files(tree / "scan") | _real_files(tree / "outside" / "run")


@pytest.mark.parametrize("pattern", ["scan/**", "scan/**/*.jsonl", "**", "scan/*/*", "scan/*/*.log"])
def test_globs_end_and_stay_inside(tree: Path, pattern: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree)
    got = collect_paths([pattern])
    root = tree if pattern.startswith("*") else tree / "scan"
    expected = {p for p in _real_files(root) if re.fullmatch(r".*\.jsonl", p) or not pattern.endswith(".jsonl")}
    if pattern.endswith(".log"):
        expected = set()
    if pattern == "scan/*/*":  # one level of folders
        expected = {p for p in expected if Path(p).parent.parent == (tree / "scan").resolve()}
    assert {os.path.realpath(p) for p in got.files} == expected
    assert len(got.files) == len(expected)
    if root == tree / "scan":
        assert all(SECRET not in p.read_text() for p in got.files)


def test_the_secret_behind_a_link_never_reaches_the_report(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for fmt in ("json", "human", "markdown"):
        main(["scan", "--format", fmt, str(tree / "scan")])
        out, err = capsys.readouterr()
        assert SECRET not in out and "leak.log" not in out
        assert "not followed" in err and "--follow-links" in err and "leak.log" in err


def test_an_unlistable_folder_is_an_unreadable_run(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    locked = tree / "scan" / "b"
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    # root can list anything, so the denial is simulated where the walk asks the OS
    monkeypatch.setattr(advcore._paths.os, "scandir", scandir)
    got = collect_paths([str(tree / "scan")])
    assert got.unlistable == [(locked, "Permission denied")]
    code = main(["scan", "--format", "json", "--fail-on", "warn", str(tree / "scan")])
    runs = {r["path"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    assert code == 2
    assert runs[str(locked)]["verdict"]["status"] == "unreadable"
    assert runs[str(locked)]["errors"] == [f"{locked}: the folder could not be listed: Permission denied"]
    assert runs[str(tree / "scan" / "a" / "metrics.jsonl")]["steps"] == 8  # the rest is scanned


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_control_characters_are_escaped_in_human_and_markdown_output(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    title, clear, rlo = "\x1b]0;owned\x07", "\x1b[2J", "\u202e"
    good = _jsonl(tmp_path / "a" / f"run{clear}{rlo}.jsonl")
    bad = tmp_path / "b" / f"{title}.log"
    bad.parent.mkdir()
    bad.write_text(f"step:1 - critic/score/mean:0.5 - {title}{clear}\nstep:2 - critic/score/mean:0.5\n")
    chart = tmp_path / "c" / "chart.csv"  # a W&B chart export quotes its run names in an error
    chart.parent.mkdir()
    chart.write_text(f"Step,run{title} - reward,other{clear} - reward\n1,0.5,0.5\n2,0.5,0.5\n")
    for fmt in ("human", "markdown"):
        main(["scan", "--format", fmt, str(tmp_path)])
        out, err = capsys.readouterr()
        assert not _CONTROL.search(out + err), repr(_CONTROL.search(out + err))
        assert printable(good.name) in out and "\\x1b]0;owned\\x07" in out
    main(["scan", "--format", "json", str(tmp_path)])
    doc = json.loads(capsys.readouterr().out)  # JSON keeps the names exactly (escaped by JSON itself)
    assert str(good) in {r["path"] for r in doc["runs"]}


def test_printable_escapes_every_control_and_bidi_character() -> None:
    # the oracle: the Unicode database's categories and bidirectional classes
    bidi = {"LRE", "RLE", "PDF", "LRO", "RLO", "LRI", "RLI", "FSI", "PDI"}
    for code in range(0x3000):
        c = chr(code)
        unsafe = unicodedata.category(c) == "Cc" or unicodedata.bidirectional(c) in bidi
        if unsafe:
            assert printable(c) != c and printable(c).isprintable(), hex(code)
        elif unicodedata.category(c)[0] in "LNPS" or c == " ":
            assert printable(c) == c, hex(code)
    assert printable("naïve ✓ 日本") == "naïve ✓ 日本"


def test_error_messages_quote_short_escaped_excerpts() -> None:
    line = "\x1b[2J" + "x" * 10_000
    quoted = excerpt(line)
    assert len(quoted) < 80 and "\x1b" not in quoted and quoted.endswith("...")
    assert len(described(ValueError(line))) < 200 and "\x1b" not in described(ValueError(line))
    assert len(IngestError("f.log", "expected a number, got " + line, 3).message) <= 403


@pytest.mark.parametrize("fmt", ["human", "markdown"])
def test_a_run_lists_its_first_twenty_bad_lines_and_counts_the_rest(tmp_path: Path, fmt: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "train.log"  # 60 step lines, each ending in a pair without a value
    p.write_text("".join(f"step:{i} - critic/score/mean:0.{i % 7} - x\n" for i in range(60)))
    assert main(["scan", "--format", "json", str(p)]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["steps"] == 60 and len(run["errors"]) == 60
    assert main(["scan", "--format", fmt, str(p)]) == 0
    out = capsys.readouterr().out
    assert out.count("skipped") == 21 and "... and 40 more" in out
    for line in (21, 40):  # the 20th bad line is shown, the 21st only counted
        assert (f"train.log:{line}:" in out) is (line <= 20)


@pytest.mark.parametrize("fmt", ["human", "markdown"])
def test_an_unreadable_run_lists_its_first_twenty_errors_too(tmp_path: Path, fmt: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "metrics.csv"  # a header, then 50 rows of the wrong width: no row is read
    p.write_text("step,reward\n" + "".join(f"{i},0.5,extra\n" for i in range(50)))
    main(["scan", "--log-format", "csv_table", "--format", "json", str(p)])
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["steps"] == 0 and len(run["errors"]) == 51  # each row, and "no data rows"
    main(["scan", "--log-format", "csv_table", "--format", fmt, str(p)])
    out = capsys.readouterr().out
    assert out.count("could not read") == 21 and "... and 31 more" in out


def test_a_report_on_a_real_run_is_readable_in_text_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    """f1-strategist (a newcomer's trial): every completion cut at the length cap and every group tied.
    The first tips shown cover each finding; no Python ``None`` and no ``reward/<name>`` that GitHub would
    read as a tag."""
    from advcore.detectors import REGISTRY
    from tests._real import real

    folder = real("f1-strategist-grpo-zero-std/trainer_state.json").parent
    from advcore.scan import ScanOptions, scan

    (report,) = scan([folder / "trainer_state.json"], ScanOptions(), jobs=1)
    fired = [f.id for f in report.verdict.findings]
    tries = report.verdict.what_to_try
    shown = tries[:4]
    assert len(fired) == 3  # DEAD_FROM_START leads DEGENERATE_GROUPS and TRUNCATION_REWARD
    for det in fired[1:]:
        assert REGISTRY[det].what_to_try[0] in shown, det  # each other finding's first tip is among the first shown
    assert main(["scan", str(folder), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "What to try first:" in md and all(f"- {t}" in md for t in tries if "<" not in t)
    assert "None" not in md and "reward/<name>" not in md and "reward/\\<name>" in md
    assert main(["scan", str(folder)]) == 0
    text = capsys.readouterr().out
    assert "None" not in text


def test_a_small_share_is_not_printed_as_zero_percent() -> None:
    from advcore.stages import StageLevel

    level = StageLevel("R", "1 - zero_variance_group_frac", 0.003, 0.0008)
    assert level.describe() == "R groups with reward spread 0.3% -> 0.08%"
    assert StageLevel("R", "1 - zero_variance_group_frac", 0.94, 0.0).describe().endswith("94% -> 0%")


def test_a_folder_scan_leaves_out_build_products_and_its_own_reports(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Found in a folder: binary files no format knows (a Rust build's scripts, its .rlib and .d files),
    and a report advcore wrote, are no runs; a text file no format knows still says why."""
    _jsonl(tmp_path / "run" / "metrics.jsonl")
    build = tmp_path / "target" / "debug"
    build.mkdir(parents=True)
    (build / "build-script-build").write_bytes(bytes(range(256)) * 20)
    (build / "libx.rlib").write_bytes(b"!<arch>\n" + bytes(100))
    (build / "x.d").write_text("x.d: src/lib.rs\n")
    (tmp_path / "notes.log").write_text("nothing to see here\n")
    main(["scan", "--format", "json", str(tmp_path / "run")])
    (tmp_path / "report.json").write_text(capsys.readouterr().out)
    main(["scan", "--format", "json", str(tmp_path)])
    paths = [Path(r["path"]).name for r in json.loads(capsys.readouterr().out)["runs"]]
    assert sorted(paths) == ["metrics.jsonl", "notes.log"]


def test_a_tracking_store_uri_names_its_file(tmp_path: Path) -> None:
    (tmp_path / "mlflow.db").write_bytes(b"SQLite format 3\0")
    (tmp_path / "mlruns").mkdir()
    (tmp_path / "mlruns" / "m.jsonl").write_text('{"step": 1, "reward": 0.5}\n')
    assert collect_paths([f"sqlite:///{tmp_path / 'mlflow.db'}"]).files == [tmp_path / "mlflow.db"]
    assert collect_paths([(tmp_path / "mlruns").as_uri()]).files == [tmp_path / "mlruns" / "m.jsonl"]


def test_a_reader_that_closes_the_pipe_early_gets_141(tmp_path: Path) -> None:
    import subprocess
    import sys

    for i in range(40):
        _jsonl(tmp_path / f"r{i}" / "m.jsonl")
    proc = subprocess.Popen([sys.executable, "-m", "advcore", "scan", str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.read(10)
    proc.stdout.close()
    assert proc.wait(timeout=120) == 141


def test_a_run_whose_step_counter_restarts_says_how_many_phases(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "curriculum.jsonl"
    p.write_text("".join(json.dumps({"step": s, "reward_mean": 0.1 * s, "reward_std": 0.1}) + "\n"
                         for _ in range(3) for s in range(1, 21)))
    main(["scan", str(p)])
    out = " ".join(capsys.readouterr().out.split())
    assert "60 logged steps in 3 phases" in out and "(first fifth of the steps -> last fifth; medians, or means for shares of groups, over every phase)" in " ".join(out.split())


def test_the_stage_line_quotes_the_leading_findings_means(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The level of the metric the leading finding judged is the finding's window means, not the medians (a newcomer
    read one advantage std as 0.843 -> 3.45e-05 on the stage line and 0.832 -> 3.38e-05 in the finding); numpy's means
    of the first and last 12 of 60 points are the oracle."""
    import numpy as np

    rng = np.random.default_rng(3)
    adv = np.where(np.arange(60) < 30, 0.8, 1e-5) * rng.uniform(0.5, 1.5, 60)  # skewed: mean and median differ
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": i + 1, "reward_mean": 0.5 + 0.01 * (i % 3), "reward_std": 0.4,
                                        "adv_std": float(a)}) + "\n" for i, a in enumerate(adv)))
    assert main(["scan", str(path), "--format", "json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["verdict"]["headline"] == "ADV_COLLAPSE"
    (level,) = [s for s in run["verdict"]["signal"] if s["stage"] == "T"]
    assert level["statistic"] == "mean"
    assert level["early"] == pytest.approx(np.mean(adv[:12])) and level["late"] == pytest.approx(np.mean(adv[-12:]))
    assert level["early"] != pytest.approx(np.median(adv[:12]))
    assert [s["statistic"] for s in run["verdict"]["signal"] if s["stage"] == "R"] == ["median"]
    assert main(["scan", str(path)]) == 0
    assert f"T advantage std {np.mean(adv[:12]):.3g} -> {np.mean(adv[-12:]):.3g} (means, as the finding)" in " ".join(
        capsys.readouterr().out.split())
