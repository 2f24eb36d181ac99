"""``advcore scan`` end to end: the JSON document of SPEC section 9, bad files reported by name
while the rest of the scan completes, exit codes, knob overrides, and the embedded default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import advcore
from advcore.detectors import REGISTRY

from advcore.cli import main
from advcore.demo import DEMO_RUN, collapsed_run_log


def scan_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["scan", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_embedded_default_is_current() -> None:
    """The shipped log is exactly what its generator writes."""
    assert json.loads(DEMO_RUN.read_text()) == json.loads(json.dumps(collapsed_run_log()))


SCHEMA = json.loads((Path(advcore.__file__).parent / "schema" / "scan.schema.json").read_text())


def test_document_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = scan_json(capsys, str(DEMO_RUN))
    assert code == 0
    jsonschema.validate(doc, SCHEMA)
    (run,) = doc["runs"]
    assert run["steps"] == 120 and run["trainer"] == "trl" and run["errors"] == []
    assert run["files"] == [str(DEMO_RUN)]
    verdict = run["verdict"]
    assert verdict["status"] == "lost" and verdict["headline"] == run["findings"][0]["id"]
    assert verdict["onset_step"] == run["findings"][0]["onset_step"]
    assert all(f["what_to_try"] for f in run["findings"])
    # every detector either judged the run or says what it lacked; each finding's detector judged it
    missing = {n["id"] for n in run["not_evaluable"]}
    assert set(run["checked"]).isdisjoint(missing) and len(run["checked"]) + len(missing) == len(REGISTRY)
    assert {f["id"] for f in run["findings"]} <= set(run["checked"])
    # the signal by stage, as the human report's line ("R groups with reward spread 94% -> 0%  |  U grad_norm
    # 0.499 -> 0.02"): the tied share and the gradient norm, early and late
    r_stage, u_stage = verdict["signal"]
    assert (r_stage["stage"], r_stage["metric"], u_stage["stage"], u_stage["metric"]) == (
        "R", "1 - zero_variance_group_frac", "U", "grad_norm")
    assert round(100 * r_stage["early"]) == 94 and round(100 * r_stage["late"]) == 0


def test_a_run_too_short_to_judge_lists_no_detector_as_checked(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # 4 steps: the detectors that compare early and late windows never ran, so none of them passed (a newcomer read
    # 'checked' on tinyzero's 4-step excerpt as 'looked and found nothing'); the same rows 12 times over are judged
    rows = [{"step": s, "reward_mean": 0.1 * s, "reward_std": 0.3, "grad_norm": 0.5, "entropy": 1.0} for s in range(1, 5)]
    short, long = tmp_path / "short.jsonl", tmp_path / "long.jsonl"
    short.write_text("".join(json.dumps(r) + "\n" for r in rows))
    long.write_text("".join(json.dumps({**r, "step": r["step"] + 4 * k}) + "\n" for k in range(12) for r in rows))
    for path, status in ((short, "not_judged"), (long, "quiet")):
        code, doc = scan_json(capsys, str(path))
        jsonschema.validate(doc, SCHEMA)
        (run,) = doc["runs"]
        assert run["verdict"]["status"] == status
        assert (run["checked"] == []) == (status == "not_judged"), run["checked"]


def test_json_lists_every_column_it_did_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # more unknown columns than the human report shows; the JSON names them all
    unknown = [f"custom_metric_{i:02d}" for i in range(12)]
    rows = [",".join(["step", "reward", "note", *unknown])]
    rows += [",".join([str(s), str(0.1 * s), "text", *(str(s * i) for i in range(12))]) for s in range(1, 11)]
    (tmp_path / "log.csv").write_text("\n".join(rows) + "\n")
    _, doc = scan_json(capsys, str(tmp_path / "log.csv"))
    jsonschema.validate(doc, SCHEMA)
    (run,) = doc["runs"]
    assert run["not_read"] == {"unmapped": unknown, "non_numeric": ["note"], "placeholder": [], "unaligned": [],
                               "rounded": []}
    assert "reward_mean" in run["metrics"]


def test_the_schema_rejects_what_it_does_not_describe(capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = scan_json(capsys, str(DEMO_RUN))
    doc["runs"][0]["verdict"]["status"] = "fine"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)


def test_statuses_of_a_mixed_folder_match_the_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "broken.json").write_text('{"log_history": [{"step": 1, "rew')
    (tmp_path / "short.csv").write_text("step,reward,reward_std\n1,0.5,0.25\n2,0.5,0.25\n")
    _, doc = scan_json(capsys, str(tmp_path), str(DEMO_RUN))
    jsonschema.validate(doc, SCHEMA)
    status = {Path(r["path"]).name: r["verdict"]["status"] for r in doc["runs"]}
    assert status == {"broken.json": "unreadable", "short.csv": "not_judged", DEMO_RUN.name: "lost"}


def test_embedded_collapse_is_found(capsys: pytest.CaptureFixture[str]) -> None:
    """The generated run saturates around step 55: the tied share reaches 0.875 at step 57."""
    _, doc = scan_json(capsys, str(DEMO_RUN))
    run = doc["runs"][0]
    ids = {f["id"] for f in run["findings"]}
    assert "DEGENERATE_GROUPS" in ids
    assert run["verdict"]["stage"] == "R"
    onsets = [f["onset_step"] for f in run["findings"] if f["onset_step"] is not None]
    # The tied share crosses 0.8 at step 57; the advantage proxy sqrt(1 - tied share) falls
    # below 0.1 only once more than 99% of groups are tied (step 68).
    assert onsets and all(50 <= s <= 70 for s in onsets), onsets


def test_fail_on_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "--format", "json", "--fail-on", "warn", str(DEMO_RUN)]) == 1
    capsys.readouterr()
    assert main(["scan", "--format", "json", "--fail-on", "none", str(DEMO_RUN)]) == 0
    capsys.readouterr()
    # a mistyped path or a file that cannot be read turns a CI job red, before any finding counts
    missing = str(tmp_path / "no-such-run")
    assert main(["scan", "--format", "json", "--fail-on", "error", missing]) == 2
    assert main(["scan", "--format", "json", "--fail-on", "error", missing, str(DEMO_RUN)]) == 2
    capsys.readouterr()
    broken = tmp_path / "broken.json"
    broken.write_text('{"log_history": [{"step": 1, "rew')
    assert main(["scan", "--format", "json", "--fail-on", "error", str(broken)]) == 2
    capsys.readouterr()
    # without --fail-on the scan reports them and exits 0 (no files at all is an error)
    assert main(["scan", "--format", "json", str(broken)]) == 0
    assert main(["scan", "--format", "json", missing]) == 1


@pytest.mark.parametrize(
    "args",
    [["--set", "NO_SUCH_DETECTOR.x=1"], ["--set", "ADV_COLLAPSE.no_such_knob=1"], ["--set", "ADV_COLLAPSE"], ["--only", "NOPE"]],
)
def test_bad_options_are_usage_errors(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", *args, str(DEMO_RUN)]) == 2


def test_a_broken_metric_map_is_a_usage_error_naming_its_line(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "keys.csv"
    bad.write_text("trainer,key,canonical,versions,note,scale\ntrl,my/loss,kl,,a note, with a comma\n")
    assert main(["scan", "--metric-map", str(bad), str(DEMO_RUN)]) == 2
    assert f"{bad}:2" in capsys.readouterr().err


BAD_FILES = {
    "truncated.json": '{"log_history": [{"step": 1, "reward": 0.5}, {"step": 2, "rew',
    "binary.bin.log": b"\x00\x01\x02\xff" * 100,
    "empty.jsonl": "",
    "no_step.csv": "name,colour\nalpha,red\nbeta,blue\n",
}


def test_bad_files_are_reported_and_the_scan_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, content in BAD_FILES.items():
        p = tmp_path / name
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
    good = tmp_path / "good" / "trainer_state.json"
    good.parent.mkdir()
    good.write_text(DEMO_RUN.read_text())
    before = sorted(tmp_path.rglob("*"))
    code, doc = scan_json(capsys, str(tmp_path))
    assert code == 0
    by_name = {Path(r["path"]).name: r for r in doc["runs"]}
    assert set(by_name) == {*BAD_FILES, "trainer_state.json"}
    for name in BAD_FILES:
        assert by_name[name]["errors"], name
        assert name in by_name[name]["errors"][0]
    assert by_name["trainer_state.json"]["steps"] == 120
    assert sorted(tmp_path.rglob("*")) == before  # nothing written to the user's folders


def test_unjudgeable_runs_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A log too short to judge, or one without any metric a detector needs, is 'not judged'
    rather than reported clean."""
    short = tmp_path / "short.jsonl"
    short.write_text('{"step": 1, "reward": 0.5, "reward_std": 0.2}\n{"step": 2, "reward": 0.6, "reward_std": 0.2}\n')
    blind = tmp_path / "blind.jsonl"
    blind.write_text("".join(f'{{"step": {i}, "lr": 1e-6}}\n' for i in range(1, 30)))
    _, doc = scan_json(capsys, str(short), str(blind))
    summaries = {Path(r["path"]).name: r["verdict"] for r in doc["runs"]}
    assert summaries["short.jsonl"]["stage"] is None and "too short" in summaries["short.jsonl"]["summary"]
    assert summaries["blind.jsonl"]["stage"] is None and "could not check" in summaries["blind.jsonl"]["summary"]


def test_a_short_run_that_lost_its_signal_says_what_could_not_be_judged(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A reward exactly 0 at 3 steps is a finding; the trend detectors could not judge 3 steps, and the
    verdict says so (a newcomer took their silence for a pass); at 8 steps it does not."""
    for n in (3, 8):  # one folder each: files of one folder with the same metrics are one run
        (tmp_path / str(n)).mkdir()
        (tmp_path / str(n) / f"zero{n}.jsonl").write_text(
            "".join(f'{{"step": {i}, "reward": 0.0, "entropy": 1.0}}\n' for i in range(1, n + 1)))
    _, doc = scan_json(capsys, str(tmp_path / "3" / "zero3.jsonl"), str(tmp_path / "8" / "zero8.jsonl"))
    verdicts = {Path(r["path"]).name: r["verdict"] for r in doc["runs"]}
    assert verdicts["zero3.jsonl"]["status"] == verdicts["zero8.jsonl"]["status"] == "lost"
    assert "only 3 steps logged" in verdicts["zero3.jsonl"]["summary"]
    assert "steps logged:" not in verdicts["zero8.jsonl"]["summary"]


def test_human_output_keeps_bracketed_metric_names(capsys: pytest.CaptureFixture[str]) -> None:
    """Proxy names such as ``1[reward_std <= 1e-6]`` are text, not rich markup."""
    from advcore.detectors import Finding
    from advcore.report import render_human
    from advcore.scan import ScanOptions, scan_file
    from rich.console import Console

    report = scan_file(DEMO_RUN, ScanOptions())
    finding = Finding("DEGENERATE_GROUPS", "warn", "R", 3, {"proxy": "1[reward_std <= 1e-6]"}, "tied by 1[x]")
    patched = type(report)(report.run, (finding,), (), report.verdict)
    render_human([patched], Console(width=200))
    out = capsys.readouterr().out
    assert "proxy=1[reward_std <= 1e-6]" in out and "tied by 1[x]" in out


def test_markdown_summarises_a_multi_file_scan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"log_history": [')
    assert main(["scan", "--format", "markdown", str(DEMO_RUN), str(broken)]) == 0
    out = capsys.readouterr().out
    assert "2 runs: 1 with a lost signal, 0 with no finding, 0 not judged, 1 unreadable." in out
    assert "| stage R | DEGENERATE_GROUPS" in out


def test_folders_are_found_through_dot_dot_and_hidden_folders_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "logs" / "run1" / "trainer_state.json"
    hidden = tmp_path / "logs" / ".cache" / "trainer_state.json"
    for p in (run, hidden):
        p.parent.mkdir(parents=True)
        p.write_text(DEMO_RUN.read_text())
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    code, doc = scan_json(capsys, "../logs")
    assert code == 0
    assert [Path(r["path"]).parent.name for r in doc["runs"]] == ["run1"]


def test_environments_and_code_folders_are_not_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a newcomer's scan of the folder holding a virtualenv and a clone listed 7,395 source files as unreadable runs
    run = tmp_path / "logs" / "trainer_state.json"
    env = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "pkg" / "trainer_state.json"
    code = tmp_path / "advcore" / "rust" / "src" / "lib.rs"
    cache = tmp_path / "advcore" / "__pycache__" / "trainer_state.json"
    for p in (run, env, code, cache):
        p.parent.mkdir(parents=True)
        p.write_text(DEMO_RUN.read_text())
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "advcore" / "_core.abi3.so").write_bytes(b"\x7fELF\0\0")
    code_, doc = scan_json(capsys, str(tmp_path))
    assert code_ == 0 and [r["path"] for r in doc["runs"]] == [str(run)]


def test_a_human_folder_scan_ends_with_a_summary_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "trainer_state.json").write_text(DEMO_RUN.read_text())
    assert main(["scan", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    tail = out[out.index("summary (paths under"):]
    assert str(tmp_path) in tail.replace("\n", "")
    for name in ("a", "b"):
        assert f"{name}/trainer_state.json" in tail
    assert tail.count("stage R") == 2 and "2 runs: 2 with a lost signal" in tail


def test_a_folder_scan_reads_a_training_notebook_and_leaves_an_analysis_notebook_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = ("<table border=\"1\" class=\"dataframe\"><thead><tr><th>Step</th><th>Training Loss</th><th>reward</th>"
             "<th>reward_std</th></tr></thead><tbody>"
             + "".join(f"<tr><td>{i}</td><td>0.0</td><td>{0.1 * i:.1f}</td><td>0.5</td></tr>" for i in range(1, 11))
             + "</tbody></table>")
    train = {"cells": [{"cell_type": "code", "source": ["trainer.train()"], "metadata": {}, "execution_count": 1,
                        "outputs": [{"output_type": "display_data", "metadata": {},
                                     "data": {"text/html": [table], "text/plain": ["<IPython.core.display.HTML>"]}}]}],
             "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    notes = {"cells": [{"cell_type": "markdown", "source": ["# plots"], "metadata": {}}],
             "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "train.ipynb").write_text(json.dumps(train))
    (tmp_path / "analysis.ipynb").write_text(json.dumps(notes))
    code, doc = scan_json(capsys, "--per-file", str(tmp_path))
    paths = {Path(r["path"]).name: r for r in doc["runs"]}
    assert set(paths) == {"train.ipynb"} and paths["train.ipynb"]["steps"] == 10


def test_a_folder_where_nothing_is_read_says_why_for_each_file(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # a console of a format advcore does not know, alone in its folder: not an empty report
    (tmp_path / "train_log.txt").write_text("".join(f"it {i}: the policy did something\n" for i in range(20)))
    (tmp_path / "notes.md").write_text("# what I tried\n")
    code, doc = scan_json(capsys, str(tmp_path))
    by_path = {Path(r["path"]).name: r["verdict"]["status"] for r in doc["runs"]}
    assert by_path == {"train_log.txt": "unreadable", "notes.md": "unreadable"} and code == 0


def test_a_missing_input_is_an_unreadable_run_in_the_document(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "run.jsonl"
    good.write_text("".join(json.dumps({"step": i, "reward_mean": 0.05 * i, "reward_std": 0.4}) + "\n"
                            for i in range(1, 11)))
    code, doc = scan_json(capsys, str(good), str(tmp_path / "typo.jsonl"))
    by_path = {Path(r["path"]).name: r["verdict"]["status"] for r in doc["runs"]}
    assert by_path == {"run.jsonl": "quiet", "typo.jsonl": "unreadable"} and code == 0
    code, doc = scan_json(capsys, "--fail-on", "error", str(good), str(tmp_path / "typo.jsonl"))
    assert code == 2
    code, doc = scan_json(capsys, str(tmp_path / "typo.jsonl"))  # nothing at all was scanned
    assert code == 1 and [r["verdict"]["status"] for r in doc["runs"]] == ["unreadable"]


def test_the_human_report_fits_80_columns_without_trailing_spaces(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from advcore.report.render import render_human
    from advcore.scan import ScanOptions, scan

    reports = scan([DEMO_RUN], ScanOptions(), jobs=1)
    out = io.StringIO()
    render_human(reports, Console(file=out, width=80, color_system=None))
    lines = out.getvalue().splitlines()
    assert lines and all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert not [line for line in lines if line != line.rstrip()]


def test_configuration_files_in_a_run_folder_are_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run.jsonl").write_text("".join(json.dumps({"step": i, "reward_mean": 0.05 * i, "reward_std": 0.4})
                                                + "\n" for i in range(1, 11)))
    (tmp_path / "config.yaml").write_text("lr: 1e-5\n")
    (tmp_path / "adapter_config.json").write_text('{"r": 16, "lora_alpha": 32}')
    code, doc = scan_json(capsys, "--fail-on", "error", str(tmp_path))
    assert [Path(r["path"]).name for r in doc["runs"]] == ["run.jsonl"] and code == 0
    code, doc = scan_json(capsys, str(tmp_path / "rnu.jsonl"))
    (err,) = doc["runs"][0]["errors"]
    assert "no such file or folder" in err and "did you mean" in err and "run.jsonl" in err


@pytest.mark.parametrize("fmt", ["human", "markdown"])
def test_the_header_names_each_metrics_key_and_the_columns_not_read(tmp_path: Path, fmt: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A newcomer could not tell which of their columns were read: the header gives the log's key of each
    canonical metric where it differs, and lists the columns no alias names."""
    p = tmp_path / "metrics.csv"
    p.write_text("update,truncation_rate,reward_mean,canonical_pass_rate,notes\n"
                 + "".join(f"{i},0.1,0.5,0.25,ok\n" for i in range(1, 9)))
    assert main(["scan", "--format", fmt, str(p)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "truncated_frac (truncation_rate)" in out and "reward_mean (" not in out
    said = out.replace("Not read", "not read")
    assert "not read: canonical_pass_rate (no alias names them" in said and "; notes (text)" in said


def test_only_takes_a_comma_separated_list_and_a_lost_verdict_shows_the_reward_course(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "--only", "degenerate_groups,REWARD_STD_DEATH", str(DEMO_RUN)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "signal lost at stage R" in out and "reward (median, early -> late):" in out
    _, doc = scan_json(capsys, "--only", "DEGENERATE_GROUPS,REWARD_STD_DEATH", str(DEMO_RUN))
    assert {f["id"] for f in doc["runs"][0]["findings"]} <= {"DEGENERATE_GROUPS", "REWARD_STD_DEATH"}


def test_the_verdict_carries_its_tips_and_the_reward_course(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CI can gate on a run that does not learn: the JSON verdict says whether the reward rose, with
    the early and late medians (first and last 20 % of the steps) it was judged on."""
    flat, rising = tmp_path / "flat", tmp_path / "rising"
    flat.mkdir()
    rising.mkdir()
    (flat / "m.jsonl").write_text("".join(f'{{"step": {i}, "reward": {0.3 + 0.01 * (i % 3)}, "reward_std": 0.2}}\n'
                                          for i in range(1, 51)))
    (rising / "m.jsonl").write_text("".join(f'{{"step": {i}, "reward": {i / 50}, "reward_std": 0.2}}\n'
                                            for i in range(1, 51)))
    _, doc = scan_json(capsys, str(flat), str(rising), str(DEMO_RUN))
    jsonschema.validate(doc, SCHEMA)
    by_name = {Path(r["files"][0]).parent.name: r["verdict"] for r in doc["runs"]}
    assert by_name["flat"]["reward"]["rose"] is False and by_name["rising"]["reward"]["rose"] is True
    assert by_name["rising"]["reward"]["early_median"] == pytest.approx(5.5 / 50)  # steps 1..10 of 50
    assert by_name["rising"]["reward"]["late_median"] == pytest.approx(45.5 / 50)  # steps 41..50
    demo = by_name[DEMO_RUN.parent.name]
    assert demo["what_to_try"] and demo["what_to_try"][0] in next(
        r for r in doc["runs"] if r["path"] == str(DEMO_RUN))["findings"][0]["what_to_try"]


def test_the_header_says_when_a_key_is_read_negated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # stable-baselines3 logs the entropy loss, minus the entropy (its logger's train/entropy_loss)
    p = tmp_path / "progress.csv"
    p.write_text("time/total_timesteps,rollout/ep_rew_mean,train/entropy_loss\n"
                 + "".join(f"{2048 * i},{i / 10},{-1.3 + i / 100}\n" for i in range(1, 13)))
    assert main(["scan", str(p)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "entropy (-1 x train/entropy_loss)" in out and "reward_mean (rollout/ep_rew_mean)" in out


def test_summary_table_shortens_long_paths_instead_of_folding_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from advcore.report.render import _middle

    assert _middle("carla-sb3-ppo-constant-obs/events.out.tfevents.1755698806.Legion.237536.0", 34) == \
        "carla-sb3-ppo-constant-obs/…7536.0"
    assert _middle("a" * 40, 20) == "a" * 9 + "…" + "a" * 10 and _middle("short.log", 20) == "short.log"
    for name in ("a-very-long-run-folder-name-of-an-experiment", "another-very-long-run-folder-name-too"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics_of_the_whole_training_run.jsonl").write_text(
            "".join(f'{{"step": {i}, "reward": 0.5, "reward_std": 0.3}}\n' for i in range(1, 12)))
    monkeypatch.setenv("COLUMNS", "80")
    main(["scan", str(tmp_path)])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("│ ") and "…" in line]
    assert len(rows) == 2 and all(len(line) <= 80 for line in rows)
    assert rows[0].startswith("│ a-very-long") and rows[1].startswith("│ another-very")
    assert all("…raining_run.jsonl │" in line for line in rows)  # the file name's tail, never folded


def test_a_per_sample_run_header_names_what_was_read_not_our_statistics(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import polars as pl

    data = tmp_path / "samples.parquet"
    pl.DataFrame({"step": [s for s in range(1, 11) for _ in range(8)], "group": [i // 4 for i in range(8)] * 10,
                  "reward": [float(i % 2) for i in range(80)], "adv": [0.5 - i % 2 for i in range(80)]}).write_parquet(data)
    main(["scan", str(data)])
    out = capsys.readouterr().out
    assert "metrics: per-sample rewards, advantages (80 samples), reduced per step to" in " ".join(out.split())
    assert "adv_bound_excess" not in out and "reward_onepass_relerr" not in out


def test_a_table_of_unknown_columns_names_them_and_how_to_map_the_reward(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # a hand-written loop's CSV in its own words (h139-numpy-dqn-poker-selfplay-learns: mains, perte, bb100_recent)
    log = tmp_path / "progress.csv"
    log.write_text("mains,epsilon,perte,bb100_recent\n" + "".join(
        f"{100 * i},{1 - i / 100:.2f},0.5,{-1800 + 30 * i}\n" for i in range(1, 41)))
    _, doc = scan_json(capsys, str(log))
    (verdict,) = [r["verdict"] for r in doc["runs"]]
    assert verdict["status"] == "not_judged"
    assert "bb100_recent" in verdict["summary"] and "--metric-map" in verdict["summary"]
    # the row the summary suggests makes the run judged, the reward read from that column
    mapping = tmp_path / "map.csv"
    mapping.write_text("trainer,key,canonical\n*,bb100_recent,reward_mean\n")
    _, doc = scan_json(capsys, str(log), "--metric-map", str(mapping))
    (run,) = doc["runs"]
    assert run["verdict"]["status"] == "quiet" and "reward_mean" in json.dumps(run)


def test_an_onset_where_the_log_begins_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """tinyzero's excerpt (steps 383 to 399) begins after its entropy collapsed: the JSON flags the onset and
    the human report says "by step 383, where the log begins" (and "<=383" in the summary table)."""
    from tests._real import real

    folder = real("tinyzero-ppo-entropy-collapse/part-of-logs.md").parent
    _, doc = scan_json(capsys, str(folder))
    jsonschema.validate(doc, SCHEMA)
    verdicts = {Path(r["files"][0]).name: r["verdict"] for r in doc["runs"]}
    assert verdicts["part-of-logs.md"]["onset_step"] == 383 and verdicts["part-of-logs.md"]["onset_before_log"] is True
    assert verdicts["early-steps.log"]["onset_before_log"] is False
    main(["scan", str(folder)])
    out = capsys.readouterr().out
    assert "ENTROPY_COLLAPSE  stage U  by step 383, where the log begins" in out and "<=383" in out


def test_the_reward_course_names_the_peak_a_collapsed_run_gave_back(capsys: pytest.CaptureFixture[str]) -> None:
    # h341's climbbot reach: training returns about -730 over the first fifth and -830 over the last, after climbing
    # to about -300 in between; "did not rise" alone hid the success the run gave back (a newcomer's first finding)
    from tests._real import corpus, events

    folder = "h341-sb3-ppo-climbbot-two-arm-reach-1m-learns-minus-740-to-minus-290-approx-kl-up-to-17-then-collapses-to-minus-1006"
    npz = corpus(f"{folder}/evaluations.npz")
    board = next(p for p in npz.parent.iterdir() if p.name.startswith("events.out.tfevents"))
    returns = [e.value for e in events(board).Scalars("rollout/ep_rew_mean")]
    fifth = len(returns) // 5
    assert max(returns) > -300 and sorted(returns[:fifth])[fifth // 2] < -700 and sorted(returns[-fifth:])[fifth // 2] < -700
    assert main(["scan", "--per-file", str(board)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    line = out[out.index("reward (median, early -> late):"):]
    peak = float(line.split(" logged steps) peaked at ")[1].split()[0])
    assert "did not rise at the end" in line and max(returns) >= peak > -400


def test_the_report_sets_the_knobs_apart_from_the_measured_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    # a newcomer could not tell measured values from thresholds on the evidence line: the knobs a finding was held to
    # (its card's, at their defaults here) are on a line of their own, with where they are explained
    code, doc = scan_json(capsys, str(DEMO_RUN))
    (run,) = doc["runs"]
    assert main(["scan", str(DEMO_RUN)]) == 0
    text = capsys.readouterr().out
    blocks = text.split("\n  WARN  ")[1:] + text.split("\n  ERROR ")[1:]
    assert len(blocks) == len(run["findings"]) >= 1
    for f in run["findings"]:
        (block,) = [b for b in blocks if b.startswith(f["id"] + " ") or b.lstrip().startswith(f["id"] + " ")]
        evidence = " ".join(block.split("evidence:")[1].split("knobs:")[0].split())
        card = {k.name: k.default for k in REGISTRY[f["id"]].knobs}
        held = {k: v for k, v in f["evidence"].items() if k in card}
        assert not any(f"{k}=" in evidence.replace(",", " ").split() or f" {k}=" in f" {evidence}" for k in held)
        if held:
            knobs = " ".join(block.split("knobs:")[1].split())
            assert all(f"{k}={card[k]:g}" in knobs or f"{k}={card[k]}" in knobs for k in held), knobs
            assert f"advcore explain {f['id']} --full" in knobs
