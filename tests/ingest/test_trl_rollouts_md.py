"""DAPO-VLM ``rollout_results.md`` per-sample dumps (format ``trl_rollouts_md``): a hand-written
fixture in the exact shape, a malformed Rewards line, and the two real dumps checked against an
independent parse (the JSON blocks' ``rewards.total``, numpy), the sections' own "Overall
Statistics" and the runs' console logs."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from advcore.detectors import run_detectors
from advcore.ingest import detect, load
from advcore.ingest.formats import samples, trl_rollouts_md

from tests._real import real

_SYSTEM = ("system\nYou are a precise assistant. For each question, first think privately: <think> This is my "
           "reasoning.\n </think>; then output Answer: X.\nuser\n")


def _sample(k: int, question: str, total: float, acc: float) -> str:
    fmt, mdi = 0.0, total - 4 * acc
    return (f"### Sample {k}\n\n**Prompt:** {_SYSTEM}Question: {question}\nChoices:\nA. yes\nB. no\nassistant\n\n\n"
            f"**Completion:** <think> I look.\n### Sample 99 (not a header: inside a completion)\n</think>\nAnswer: A\n\n"
            f"**Solution:** A\n\n"
            f"**Rewards:** accuracy={acc:.3f}, format={fmt:.3f}, mdi={mdi:.3f}, total={total:.3f}\n\n"
            "**Detailed Metrics:**\n\n```json\n"
            + json.dumps({"rewards": {"accuracy": acc, "format": fmt, "mdi": mdi, "total": total},
                          "attention_metrics": {"all": {"mdi": 4.5}}}, indent=2)
            + "\n```\n\n---\n\n")


def _section(n: int, planned: int, groups: list[tuple[str, list[float]]]) -> str:
    totals = [t for _, ts in groups for t in ts]
    head = (f"\n## === Rollout Step {n} ===\nStep: {n - 1}/{planned} | 2025-10-22 12:06:01\n\n"
            "### Overall Statistics\n\n| Metric | Value |\n|--------|-------|\n"
            f"| Total Reward Mean | {np.mean(totals):.3f} ± {np.std(totals):.3f} |\n\n"
            "### MDI Statistics\n\n| Stage | MDI Mean | MDI Std | AEI Text | AEI Vision |\n"
            "|-------|----------|---------|----------|------------|\n| All | 4.996 | 0.439 | 2.411 | 0.374 |\n\n")
    body, k = [], 1
    for question, ts in groups:
        for t in ts:
            body.append(_sample(k, question, t, 1.0 if t >= 3 else 0.0))
            k += 1
    return head + "".join(body)


def _write(path: Path, steps: list[list[tuple[str, list[float]]]]) -> Path:
    text = "# Rollout Results Log\n\nThis file contains detailed rollout results from GRPO training.\n\n"
    text += "".join(_section(i + 1, len(steps), g) for i, g in enumerate(steps))
    path.write_text(text, encoding="utf-8")
    return path


def test_fixture_firing_every_group_tied_from_step_6(tmp_path: Path) -> None:
    mixed = [("Is it a pond?", [3.0, 0.0]), ("Is it red?", [3.0, 3.0])]
    tied = [("Is it a pond?", [3.0, 3.0]), ("Is it red?", [-1.0, -1.0])]
    p = _write(tmp_path / "rollout_results.md", [mixed] * 5 + [tied] * 15)
    assert detect(p) is trl_rollouts_md.FORMAT
    run = load(p)
    assert run.format == "trl_rollouts_md" and run.trainer == "trl" and run.errors == ()
    f = run.frame
    assert f["step"].to_list() == list(range(1, 21))
    assert f["zero_variance_group_frac"].to_list() == [0.5] * 5 + [1.0] * 15
    assert f["reward_mean"][0] == pytest.approx(2.25) and f["reward_mean"][5] == pytest.approx(1.0)
    assert f["reward_std"][0] == pytest.approx(np.std([3.0, 0.0, 3.0, 3.0]))
    # mean of the ddof-1 std of (3, 0) and of (3, 3)
    assert f["reward_std_within"][0] == pytest.approx(np.std([3.0, 0.0], ddof=1) / 2)
    assert trl_rollouts_md.read(p).frame["n_groups"].to_list() == [2.0] * 20
    assert f["reward/accuracy"][0] == pytest.approx(0.75)
    assert run.metadata["planned_steps"] == 20 and run.metadata["group_sizes"] == [2]
    findings, _ = run_detectors(run, only=["DEGENERATE_GROUPS"])
    (finding,) = findings
    assert finding.id == "DEGENERATE_GROUPS" and finding.onset_step == 6


def test_fixture_quiet_half_tied(tmp_path: Path) -> None:
    half = [("Is it a pond?", [3.0, 0.0]), ("Is it red?", [3.0, 3.0]), ("Is it big?", [0.0, -1.0]),
            ("Is it wet?", [-1.0, -1.0])]
    p = _write(tmp_path / "rollout_results.md", [half] * 20)
    run = load(p)
    assert run.frame["zero_variance_group_frac"].to_list() == [0.5] * 20
    findings, missing = run_detectors(run, only=["DEGENERATE_GROUPS"])
    assert findings == [] and missing == []


def test_malformed_rewards_line_drops_its_section_only(tmp_path: Path) -> None:
    g = [("Is it a pond?", [3.0, 0.0])]
    p = _write(tmp_path / "rollout_results.md", [g, g, g])
    lines = p.read_text(encoding="utf-8").split("\n")
    rewards = [i for i, line in enumerate(lines) if line.startswith("**Rewards:**")]
    bad = rewards[3]  # step 2, sample 2
    lines[bad] = "**Rewards:** accuracy=0.000, format=oops, mdi=-1.000, total=0.000"
    p.write_text("\n".join(lines), encoding="utf-8")
    raw = trl_rollouts_md.read(p)
    assert raw.frame["step"].to_list() == [1, 3]
    (err,) = raw.errors
    assert err.line == bad + 1 and err.path == str(p) and "rollout step 2" in err.message
    # a sample without any Rewards line spoils its section too
    lines = [line for i, line in enumerate(lines) if i != rewards[0]]
    p.write_text("\n".join(lines), encoding="utf-8")
    raw = trl_rollouts_md.read(p)
    assert raw.frame["step"].to_list() == [3] and len(raw.errors) == 2


def test_samples_long_frame_goes_through_the_same_reduction(tmp_path: Path) -> None:
    mixed = [("q1", [3.0, 0.0]), ("q2", [3.0, 3.0])]
    p = _write(tmp_path / "rollout_results.md", [mixed, mixed])
    rows = [{"step": s, "group": q, "reward": t} for s in (1, 2) for q, ts in mixed for t in ts]
    js = tmp_path / "long.jsonl"
    js.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    a, b = trl_rollouts_md.read(p).frame, samples.read(js).frame
    for col in ("reward_mean", "reward_std", "reward_std_within", "zero_variance_group_frac", "n_groups",
                "reward_within_var_frac", "n_samples"):
        assert a[col].to_list() == b[col].to_list(), col


# --- the real dumps ------------------------------------------------------------------------------

_JSON = re.compile(r"```json\n(.*?)\n```", re.S)
_PROMPT = re.compile(r"\*\*Prompt:\*\* (.*?)\n\*\*Completion:\*\*", re.S)
_OVERALL = re.compile(r"\| Total Reward Mean \| (-?[\d.]+) ± ([\d.]+) \|")


def _oracle(path: Path) -> list[dict[str, float]]:
    """Per section: mean of the JSON ``rewards.total``, its std (ddof 0 and 1), the share of
    prompt groups whose totals are all equal, and the section's stated mean ± std."""
    text = path.read_text(encoding="utf-8")
    out = []
    for sec in text.split("\n## === Rollout Step ")[1:]:
        totals = np.array([json.loads(b)["rewards"]["total"] for b in _JSON.findall(sec)], dtype=np.float64)
        prompts = [p.strip() for p in _PROMPT.findall(sec)]
        assert len(prompts) == totals.size
        keys = sorted(set(prompts))
        tied = [np.ptp(totals[[i for i, q in enumerate(prompts) if q == k]]) == 0 for k in keys]
        m = _OVERALL.search(sec)
        assert m is not None
        out.append({"step": float(sec.split(" ", 1)[0]), "mean": totals.mean(), "std0": totals.std(),
                    "std1": totals.std(ddof=1), "tied": float(np.mean(tied)), "n_groups": float(len(keys)),
                    "stated_mean": float(m.group(1)), "stated_std": float(m.group(2))})
    return out


def _console(path: Path) -> list[dict[str, float]]:
    text = path.read_text(encoding="utf-8").replace("\r", "\n")
    return [ast.literal_eval(line) for line in text.split("\n") if line.startswith("{'loss'")]


@pytest.mark.parametrize(("run_dir", "sections", "groups"), [("trl-dapo-vlm-120531", 499, 1),
                                                             ("trl-dapo-vlm-181457", 43, 8)])
def test_real_dump_matches_an_independent_parse(run_dir: str, sections: int, groups: int) -> None:
    path = real(f"{run_dir}/rollout_results.md")
    assert detect(path) is trl_rollouts_md.FORMAT
    run = load(path)
    assert run.errors == () and run.steps == sections
    oracle = _oracle(path)
    f = trl_rollouts_md.read(path).frame
    assert f["step"].to_list() == [int(o["step"]) for o in oracle] == list(range(1, sections + 1))
    np.testing.assert_allclose(f["reward_mean"].to_numpy(), [o["mean"] for o in oracle], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(f["zero_variance_group_frac"].to_numpy(), [o["tied"] for o in oracle])
    np.testing.assert_array_equal(f["n_groups"].to_numpy(), [o["n_groups"] for o in oracle])
    assert set(f["n_groups"].to_list()) == {float(groups)}  # SOURCE.md: 1 prompt x 2 / 8 prompts x 2
    # the section's own "Total Reward Mean m ± s": m is the mean, s the ddof-0 std (3 decimals)
    stated_mean = np.array([o["stated_mean"] for o in oracle])
    stated_std = np.array([o["stated_std"] for o in oracle])
    np.testing.assert_allclose(stated_mean, f["reward_mean"].to_numpy(), atol=5e-4 + 1e-9)
    np.testing.assert_allclose(stated_std, [o["std0"] for o in oracle], atol=5e-4 + 1e-9)
    np.testing.assert_allclose(f["reward_std"].to_numpy(), [o["std0"] for o in oracle], atol=1e-12)
    assert np.any(np.abs(stated_std - np.array([o["std1"] for o in oracle])) > 1e-3)  # so not ddof 1


def test_real_120531_dump_reproduces_the_console_log() -> None:
    # SOURCE.md: one prompt x 2 generations per optimizer step, TRL logs every 10 steps; the dump
    # holds the whole batch, so each console value is the mean over sections 10k-9 .. 10k
    f = load(real("trl-dapo-vlm-120531/rollout_results.md")).frame
    logs = _console(real("trl-dapo-vlm-120531/run_terminal.md"))
    assert len(logs) == 49
    zv, rm, rs = (f[c].to_numpy()[:490].reshape(49, 10).mean(axis=1)
                  for c in ("zero_variance_group_frac", "reward_mean", "reward_std_within"))
    np.testing.assert_allclose(zv, [d["frac_reward_zero_std"] for d in logs], atol=1e-9)
    np.testing.assert_allclose(rm, [d["reward"] for d in logs], atol=1e-9)
    # TRL < 0.27: reward_std is the mean within-group std (ddof 1); logged in float32
    np.testing.assert_allclose(rs, [d["reward_std"] for d in logs], atol=1e-6)
    # SOURCE.md: after the first 5 log points frac_reward_zero_std >= 0.9 at 35 of 44
    assert int((zv[5:] >= 0.9 - 1e-9).sum()) == 35


def test_real_181457_dump_is_a_quarter_of_each_batch() -> None:
    # the console's epoch 0.23 at step 10 of 1400 prompts means about 32 prompts per step, the
    # dump shows 8 of them: its tied share is a sample of TRL's frac_reward_zero_std, not equal to it
    f = trl_rollouts_md.read(real("trl-dapo-vlm-181457/rollout_results.md")).frame
    logs = _console(real("trl-dapo-vlm-181457/run_terminal.md"))
    assert [d["epoch"] for d in logs] == [0.23, 0.47, 0.7, 0.93]
    assert 31 < 1400 * logs[0]["epoch"] / 10 < 34 and set(f["n_groups"].to_list()) == {8.0}
    zv = f["zero_variance_group_frac"].to_numpy()[:40].reshape(4, 10).mean(axis=1)
    console = np.array([d["frac_reward_zero_std"] for d in logs])
    # close (80 of the window's ~320 groups), but not the same number
    assert np.all(np.abs(zv - console) <= 0.04) and not np.allclose(zv, console)
