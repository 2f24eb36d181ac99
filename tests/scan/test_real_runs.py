"""``advcore scan --format json`` over every real run in ``../shared/data/real``: every log loads,
the healthy runs stay quiet, and the runs whose SOURCE.md describes a dead or collapsed signal
are flagged by the right detector near the start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advcore.cli import main
from tests._real import REAL

pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason=f"real logs not found at {REAL}")


@pytest.fixture(scope="module")
def scanned() -> dict[str, dict[str, Any]]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["scan", "--format", "json", str(REAL)]) == 0
    doc = json.loads(out.getvalue())
    # every file of a run names the run (the files of one run in one folder are judged together)
    return {str(Path(f).relative_to(REAL)): r for r in doc["runs"] for f in r["files"]}


def _run_dirs() -> list[str]:
    return sorted(p.name for p in REAL.iterdir() if p.is_dir()) if REAL.is_dir() else []


#: The lines of the shared logs that are not whole lines, each skipped and said (part-of-logs.md is an excerpt that
#: begins inside step 382's line: "t_length/mean:144.000 - prompt_length/max:146.000 - ...").
CUT_LINES = {"tinyzero-ppo-entropy-collapse/part-of-logs.md": [14]}


@pytest.mark.parametrize("run_dir", _run_dirs())
def test_every_run_loads(run_dir: str, scanned: dict[str, dict[str, Any]]) -> None:
    runs = {key: r for key, r in scanned.items() if key.startswith(run_dir + "/")}
    assert runs, f"no log of {run_dir} was read"
    assert any(r["steps"] > 0 for r in runs.values())
    for key, r in runs.items():
        lines = [int(e.split(":")[1]) for e in r["errors"]]
        assert lines == CUT_LINES.get(key, []), r["errors"]


# SOURCE.md: healthy runs and negative controls; none may get a warning.
HEALTHY = [
    "unsloth-llama32-3b-grpo-advanced",
    "verl-gsm8k-ppo-quickstart",
    "rlgrpo-countdown-healthy",
    "gui-cursor-verl-grpo",
    "legaloom-grpo-v3",
    "unsloth-qwen25-3b-grpo",  # learns while 31% of steps have reward_std 0
    "marl-mappo-schiphol-wandb-history",
]


@pytest.mark.parametrize("run_dir", HEALTHY)
def test_healthy_runs_get_no_warning(run_dir: str, scanned: dict[str, dict[str, Any]]) -> None:
    for key, r in scanned.items():
        if key.startswith(run_dir + "/"):
            assert [f["id"] for f in r["findings"] if f["severity"] in ("warn", "error")] == [], key


# SOURCE.md and the numbers checked in the raw files: (run, file, detector, earliest and latest
# acceptable onset step). The seed detectors near the start of a dead run:
FLAGGED = [
    # frac_reward_zero_std about 1.0 at every log point (logged every 10 steps from step 10).
    ("f1-strategist-grpo-zero-std", "trainer_state.json", "DEGENERATE_GROUPS", 1, 10),
    # everything exactly 0 from step 1 (a corrupted rollout, an infrastructure bug).
    ("grpo-dynamics-csd-pilot-dead", "log_const_seed42.txt", "DEAD_FROM_START", 1, 1),
    # 92% zero-std steps, reward frozen at 2.0.
    ("unsloth-qwen3-vl-8b-vision-grpo", "Qwen3_VL_(8B)-Vision-GRPO.ipynb.training_table.csv", "DEGENERATE_GROUPS",
     1, 5),
    # 87% zero-std steps: all completions run into the length cap.
    ("unsloth-qwen3-8b-fp8-grpo", "Qwen3_8B_FP8_GRPO.ipynb.training_table.csv", "DEGENERATE_GROUPS", 1, 5),
    # frac_zero_std >= 0.9 at most log points.
    ("trl-dapo-vlm-120531", "run_terminal.md", "DEGENERATE_GROUPS", 1, 10),
    # G=2: 81% of samples in zero-variance groups throughout (per micro-batch group counts).
    ("grpo-dynamics-gate2-rho1-seed42", "rho_grpo_logs.json", "DEGENERATE_GROUPS", 1, 20),
    # mode collapse onto a fixed answer: reward_std about 0 on 25 of 40 steps, mostly from step 6.
    ("legaloom-grpo-final", "training_log.json", "DEGENERATE_GROUPS", 1, 20),
    # four curriculum phases, steps restarting at 1; the first collapses to short outputs with
    # reward_std exactly 0 on 12 of its last 17 steps (and on steps 15, 16, 18, 19, 20).
    ("legaloom-grpo-curriculum", "training_log.json", "DEGENERATE_GROUPS", 1, 20),
    # the R-stage detectors:
    # completions/clipped_ratio 0.6 at step 5, 1.0 at every log point from step 80 (but 0.9 at 205)
    ("chaos-economy-grpo", "training_logs.json", "TRUNCATION_REWARD", 1, 80),
    # every completion at the 96-token cap, clipped_ratio 1.0 at every log point from step 10
    ("f1-strategist-grpo-zero-std", "trainer_state.json", "TRUNCATION_REWARD", 1, 10),
    # all 4 completions at the ~1846-token cap on most steps (clipped_ratio 1.0 on steps 6-10)
    ("unsloth-qwen3-8b-fp8-grpo", "Qwen3_8B_FP8_GRPO.ipynb.training_table.csv", "TRUNCATION_REWARD", 1, 6),
    # reward exactly 0 at all 50 steps
    ("grpo-dynamics-csd-pilot-dead", "log_const_seed42.txt", "REWARD_FLOOR", 1, 1),
    # correctness std 0 at all 60 steps, also on the 5 steps (2, 25, 29, 32, 38) where reward_std > 0
    ("unsloth-qwen3-vl-8b-vision-grpo", "Qwen3_VL_(8B)-Vision-GRPO.ipynb.training_table.csv", "COMPONENT_COLLAPSE",
     1, 2),
    # rewards/mdi_reward/mean -1.0 from the 10th log line to the last (49), total reward about 2.4
    ("trl-dapo-vlm-120531", "run_terminal.md", "COMPONENT_COLLAPSE", 1, 10),
    # the A- and U-stage detectors, at their exact onset:
    # entropy 0.956 at the first log point; below 0.25 x its early mean (0.349) from log point 13 on
    ("trl-dapo-vlm-120531", "run_terminal.md", "ENTROPY_COLLAPSE", 130, 130),
    # an excerpt that begins after the collapse: entropy 0.003 to 0.008 from its first step, 383
    ("tinyzero-ppo-entropy-collapse", "part-of-logs.md", "ENTROPY_COLLAPSE", 383, 383),
    # explained variance exactly 0 (within 2.4e-7) from the first update (2048 timesteps): constant observation
    ("carla-sb3-ppo-constant-obs", "events.out.tfevents.1755698806.Legion.237536.0", "BASELINE_BROKEN", 2048, 2048),
]


@pytest.mark.parametrize(("run_dir", "name", "detector", "earliest", "latest"), FLAGGED)
def test_flagged_runs_name_the_detector_and_its_onset(
    run_dir: str, name: str, detector: str, earliest: int, latest: int, scanned: dict[str, dict[str, Any]]
) -> None:
    r = scanned[f"{run_dir}/{name}"]
    found = {f["id"]: f for f in r["findings"]}
    assert detector in found, list(found)
    onset = found[detector]["onset_step"]
    assert onset is not None and earliest <= onset <= latest
    assert r["verdict"]["stage"] is not None


def test_chaos_economy_is_truncation_not_a_reward_level_or_component(scanned: dict[str, dict[str, Any]]) -> None:
    found = {f["id"]: f for f in scanned["chaos-economy-grpo/training_logs.json"]["findings"]}
    assert found["TRUNCATION_REWARD"]["evidence"]["all_truncated_from"] == 80
    assert not {"REWARD_SATURATION", "REWARD_FLOOR", "COMPONENT_COLLAPSE"} & set(found)


def test_a_collapsed_curriculum_phase_is_named(scanned: dict[str, dict[str, Any]]) -> None:
    r = scanned["legaloom-grpo-curriculum/training_log.json"]
    found = {f["id"]: f for f in r["findings"]}
    # the whole run averages the collapsed phase with the live third phase; the first phase alone
    # has reward_std 0 on steps 15-16 and 18-20, so its tied share from step 15 on is 5/6
    assert found["DEGENERATE_GROUPS"]["evidence"]["onset_phase"] == 0
    assert found["DEGENERATE_GROUPS"]["evidence"]["phases_flagged"] == [0]
    assert "phase 0" in r["verdict"]["summary"]


def test_rollout_n_groups_a_dump_whose_prompts_are_identical(capsys: pytest.CaptureFixture[str]) -> None:
    # SOURCE.md: 16 prompts x 64 rollouts, every `input` identical; under consecutive blocks of 64
    # the score std is 4.5 to 13 in every block, so no group is tied
    dump = str(REAL / "verl-vlm-svg-grpo-rollout-dump" / "1.jsonl")
    assert main(["scan", "--format", "json", dump]) == 0
    without = json.loads(capsys.readouterr().out)["runs"][0]
    assert "zero_variance_group_frac" not in without["metrics"]
    assert main(["scan", "--format", "json", "--rollout-n", "64", dump]) == 0
    grouped = json.loads(capsys.readouterr().out)["runs"][0]
    assert "zero_variance_group_frac" in grouped["metrics"] and grouped["errors"] == []
    from advcore.ingest import load

    frame = load(dump, rollout_n=64).frame
    assert frame["zero_variance_group_frac"].to_list() == [0.0]
    assert 4.5 <= frame["reward_std_within"][0] <= 13.0


def test_r_stage_quiet_where_completions_are_not_capped(scanned: dict[str, dict[str, Any]]) -> None:
    for key, r in scanned.items():
        ids = {f["id"] for f in r["findings"]}
        missing = {n["id"] for n in r["not_evaluable"]}
        if key.startswith(("unsloth-qwen3-vl-8b-vision-grpo/", "trl-grpo-v2-math-rlvr-groups/update",
                           "verl-ppo-qwen7b-gsm8k-resumed/", "trl-dapo-vlm-120531/run")):
            # clipped share logged and low late in the run (0.25, 0.11, 0.008, 0)
            assert "TRUNCATION_REWARD" not in ids | missing, key
        if key.startswith("legaloom-grpo-v3/"):
            # older TRL logs only completion_length: not evaluable, not silently passed
            assert "TRUNCATION_REWARD" in missing, key
        if key.startswith(("unsloth-qwen25-3b-grpo/", "unsloth-phi4-14b-grpo/")):
            # completion_length alone, but pinned at the 200-token cap on several steps: judged
            assert "TRUNCATION_REWARD" not in missing, key
            assert ("TRUNCATION_REWARD" in ids) == key.startswith("unsloth-phi4"), key


def test_a_and_u_stage_negative_controls(scanned: dict[str, dict[str, Any]]) -> None:
    for key, r in scanned.items():
        ids = {f["id"] for f in r["findings"]}
        missing = {n["id"] for n in r["not_evaluable"]}
        # only the verl file logger's run has NaN (written as null; test_point_facts_on_a_three_step_log)
        assert ("NONFINITE" in ids) == key.startswith("verl-elastic-ppo-filelogger-broken/"), key
        if key.startswith("carla-sb3-ppo-kl-blowup/"):
            # updates far too large, the opposite of suppressed; SB3 logs no advantage signal
            assert "UPDATE_SUPPRESSED" in missing and "UPDATE_SUPPRESSED" not in ids
        if key.startswith(("verl-gsm8k-ppo-quickstart/", "verl-ppo-qwen7b-gsm8k-resumed/", "carla-sb3-ppo-")):
            # PPO with a critic: group statistics do not apply; not evaluable, never checked and passed
            assert "DEGENERATE_GROUPS" in missing and "DEGENERATE_GROUPS" not in ids | set(r["checked"]), key
        if key.startswith("grpo-dynamics-csd-pilot-dead/"):
            # grad_norm and kl exactly 0, but so is every reward: dead, not suppressed
            assert "UPDATE_SUPPRESSED" not in ids and "DEAD_FROM_START" in ids


def test_point_facts_on_a_three_step_log(scanned: dict[str, dict[str, Any]]) -> None:
    # gsm8k.jsonl: steps 1-3 after a validation line; critic/score/mean 0.0 at all three; the
    # rollout_corr/* statistics are null at steps 2 and 3 after numbers at step 1, actor/pg_loss and
    # actor/ppo_kl null at step 3 (verl's file logger writes NaN as null)
    r = scanned["verl-elastic-ppo-filelogger-broken/gsm8k.jsonl"]
    found = {f["id"]: f for f in r["findings"]}
    assert found["REWARD_FLOOR"]["onset_step"] == 1 and found["REWARD_FLOOR"]["evidence"]["points"] == 3
    nan = found["NONFINITE"]["evidence"]
    assert found["NONFINITE"]["onset_step"] == 2 and nan["metric"] == "rollout_corr/kl" and nan["value"] == "nan"
    assert {t["metric"] for t in nan["then"]} == {"kl_step", "actor/pg_loss"}
    # the reward was at its floor before the NaN: it leads
    assert r["verdict"]["headline"] == "REWARD_FLOOR" and r["verdict"]["stage"] == "R"


def test_dead_from_start_says_which_stage(scanned: dict[str, dict[str, Any]]) -> None:
    # csd-pilot-dead: every reward, grad_norm and kl exactly 0: the signal is dead, stage R
    r = scanned["grpo-dynamics-csd-pilot-dead/log_const_seed42.txt"]
    dead = next(f for f in r["findings"] if f["id"] == "DEAD_FROM_START")
    assert dead["stage"] == "R" and dead["evidence"]["dead"] == "signal" and r["verdict"]["stage"] == "R"


def test_a_resumed_run_says_its_step_range(capsys: pytest.CaptureFixture[str]) -> None:
    """A newcomer could not tell from the report that verl-ppo-qwen7b-gsm8k-resumed starts at step 101
    (resumed from checkpoint 100): the header gives the first and last step and the resume."""
    import re

    path = REAL / "verl-ppo-qwen7b-gsm8k-resumed" / "verl_demo.log"
    if not path.is_file():
        pytest.skip(f"shared real log not found at {path} (set ADVCORE_SHARED_REAL)")
    steps = [int(m) for m in re.findall(r"step:(\d+) - ", path.read_text())]
    assert main(["scan", "--format", "markdown", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{len(set(steps))} logged steps ({min(steps)} to {max(steps)}, resumed from step {min(steps) - 1})" in out


def test_human_output_fits_80_columns_without_python_reprs(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A scan of every shared run, as a terminal 80 columns wide shows it: no line longer, no ``None``
    or ``['...']`` of Python's printing."""
    if not REAL.is_dir():
        pytest.skip(f"shared real logs not found at {REAL} (set ADVCORE_SHARED_REAL)")
    import re

    monkeypatch.setenv("COLUMNS", "80")
    main(["scan", str(REAL)])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 500
    assert [line for line in lines if len(line) > 80] == []
    assert [line for line in lines if re.search(r"\bNone\b|\['", line)] == []
