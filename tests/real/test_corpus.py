"""The corpus manifest (tests/real/corpus.toml): complete entries, a split by repository, the files
it names where they are present (sha256), and the extraction from a local clone."""

from __future__ import annotations

import hashlib
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.real import extract
from tests.real.corpus import CALIBRATION_BATCHES, RealRun, load_manifest, split_of

RUNS = load_manifest()
STATUSES = {"lost", "quiet", "not_judged"}


def test_at_least_40_fetched_runs_a_third_of_them_healthy() -> None:
    fetched = [r for r in RUNS if r.location == "fetched"]
    assert len(fetched) >= 40
    assert 3 * sum(r.expect.healthy for r in fetched) >= len(fetched)
    assert len({r.name for r in RUNS}) == len(RUNS)


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.name)
def test_every_entry_has_its_expectation(run: RealRun) -> None:
    e = run.expect
    assert run.written.startswith("20") and run.files and run.repository.count("/") == 1
    assert e.status in STATUSES
    assert (e.status == "lost") == bool(e.stage) == bool(e.headline), run.name
    assert e.stage in ("", "R", "A", "T", "U")
    if e.onset is not None:
        assert e.onset[0] <= e.onset[1]
    if run.location == "fetched":
        assert run.commit is not None and len(run.commit) == 40
        assert all(len(sha) == 64 for _, sha in run.files)


def test_the_split_is_by_repository() -> None:
    # by project: a fork carrying its upstream's logs sits on the upstream's side
    sides: dict[str, set[str]] = {}
    for r in RUNS:
        sides.setdefault(r.repository.lower(), set()).add(r.split)
        sides.setdefault(r.project.lower(), set()).add(r.split)
    assert all(len(s) == 1 for s in sides.values()), {k: v for k, v in sides.items() if len(v) > 1}
    seen = {r.project for r in RUNS if r.location == "shared" or r.batch in CALIBRATION_BATCHES}
    assert all(r.split == "calibration" for r in RUNS if r.location == "shared")
    assert all(r.split == split_of(r.project, r.batch, seen) for r in RUNS if r.location == "fetched")
    counts = Counter(r.split for r in RUNS)
    # a batch is what one round of collection finds: 8 to 28 runs so far (a session fetches at most 500
    # repositories, most of them spent bringing back the corpus: batch 26 had 58 fetches, batch 75 the last 8 of a
    # session that re-fetched 440 on a new machine)
    assert counts["validation"] >= 8


def test_only_calibration_expectations_are_revised() -> None:
    revised = [r for r in RUNS if r.revised is not None]
    assert revised and all(r.split == "calibration" for r in revised)


def test_the_files_of_an_entry_have_distinct_names() -> None:
    # they are extracted side by side into the run's folder (two exports named alike would overwrite each other)
    clashes = [r.name for r in RUNS if len({Path(p).name for p, _ in r.files}) < len(r.files)]
    assert clashes == []


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.name)
def test_files_match_their_sha256_where_present(run: RealRun) -> None:
    if not run.present:
        pytest.skip(f"{run.name} absent from {run.folder} (ADVCORE_REAL_DATA / ADVCORE_SHARED_REAL)")
    for path, sha in run.files:
        assert hashlib.sha256((run.folder / Path(path).name).read_bytes()).hexdigest() == sha, path


def test_extract_from_a_local_clone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "clones" / "someone+runs"
    (repo / "logs").mkdir(parents=True)
    data = b'{"step": 1, "reward": 0.5}\n'
    (repo / "logs" / "m.jsonl").write_bytes(data)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "log"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    good = hashlib.sha256(data).hexdigest()

    def manifest(sha: str) -> Path:
        m = tmp_path / "corpus.toml"
        m.write_text(f'''[[run]]
name = "r1"
repository = "someone/runs"
commit = "{commit}"
trainer = "t"
format = "plain"
files = [ {{ path = "logs/m.jsonl", sha256 = "{sha}" }} ]
written = "2026-12-01T00:00:00Z"
expect_status = "quiet"
expect_stage = ""
expect_headline = []
healthy = true
''')
        return m

    out = tmp_path / "out"
    assert extract.main(["--clones", str(tmp_path / "clones"), "--out", str(out), "--manifest", str(manifest(good))]) == 0
    assert (out / "r1" / "m.jsonl").read_bytes() == data
    (out / "r1" / "m.jsonl").unlink()
    assert extract.main(["--clones", str(tmp_path / "clones"), "--out", str(out),
                         "--manifest", str(manifest("0" * 64))]) == 1
    assert not (out / "r1" / "m.jsonl").exists() and "sha256" in capsys.readouterr().err
