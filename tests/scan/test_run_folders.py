"""A run is a folder: the files of one run in one folder are judged as one run, files of different
runs are not (advcore.ingest.join_runs), and --per-file keeps one run per file."""

from __future__ import annotations

import html
import importlib.util
import json
import re
from pathlib import Path

import polars as pl
import pytest

from advcore.cli import main
from advcore.ingest import join_runs, load
from advcore.ingest._runs import apart
from tests._real import corpus, real


def _scan(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, object]]:
    assert main(["scan", "--format", "json", *args]) == 0
    runs: list[dict[str, object]] = json.loads(capsys.readouterr().out)["runs"]
    return runs


def _write(path: Path, rewards: list[float], key: str = "reward") -> Path:
    path.write_text("".join(json.dumps({"step": i + 1, key: r}) + "\n" for i, r in enumerate(rewards)))
    return path


def test_per_step_metrics_beside_per_group_statistics_are_one_run() -> None:
    # SOURCE.md: update_metrics.csv and reward_group_statistics.csv are two views of updates 1..128
    metrics = real("trl-grpo-v2-math-rlvr-groups/update_metrics.csv")
    groups = real("trl-grpo-v2-math-rlvr-groups/reward_group_statistics.csv")
    (run,) = join_runs([load(groups), load(metrics)])
    assert run.path == str(metrics.parent) and run.steps == 128
    assert run.files == (str(groups), str(metrics))
    assert {"zero_variance_group_frac", "grad_norm", "entropy"} <= set(run.metrics)


def test_a_console_without_step_numbers_is_not_aligned_with_a_dump_by_line_order(tmp_path: Path) -> None:
    # TRL logged every 10 steps: 49 console dicts beside 499 steps of per-sample rewards; without its progress
    # bar (the counters N/29790 removed) the console has no step numbers and stays apart
    console = real("trl-dapo-vlm-120531/run_terminal.md")
    dump = real("trl-dapo-vlm-120531/rollout_results.md")
    bare, copy = tmp_path / "run_terminal.md", tmp_path / "rollout_results.md"  # one folder, as the run wrote them
    bare.write_text(re.sub(r"\d+/29790 \[", "[", console.read_text()))
    copy.write_bytes(dump.read_bytes())
    runs = join_runs([load(copy), load(bare)])
    assert [r.path for r in runs] == [str(copy), str(bare)]
    assert runs[1].metadata["judged_apart"] == [  # and it says why
        "rollout_results.md: one has no step numbers (its lines are counted 1, 2, 3 ...) and the other's steps are "
        "not those counts"]
    # with it, each dict is dated at the bar's step (10, 20, ... 490) and the two files are one run
    (run,) = join_runs([load(dump), load(console)])
    assert run.steps == 499 and run.frame.filter(pl.col("step") == 130)["entropy"].item() is not None


def test_excerpts_far_apart_stay_apart() -> None:
    # TinyZero: steps 2, 52, 92, 122 in one file and 383..399 in the other
    early = real("tinyzero-ppo-entropy-collapse/early-steps.log")
    late = real("tinyzero-ppo-entropy-collapse/part-of-logs.md")
    assert len(join_runs([load(early), load(late)])) == 2


def test_two_seeds_in_one_folder_are_two_runs_and_two_exports_one(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    seed0 = _write(tmp_path / "seed0.jsonl", [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    seed1 = _write(tmp_path / "seed1.jsonl", [0.2, 0.1, 0.4, 0.3, 0.6, 0.5, 0.8])
    assert len(join_runs([load(seed0), load(seed1)])) == 2
    copy = _write(tmp_path / "seed0-export.jsonl", [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    assert [r.files for r in join_runs([load(seed0), load(copy)])] == [(str(seed0), str(copy))]
    runs = _scan(capsys, str(tmp_path))
    assert len(runs) == 2 and "judged_apart" not in runs[0]
    assert runs[1]["judged_apart"] == ["seed0-export.jsonl + seed0.jsonl: they disagree on reward_mean at the steps "
                                       "both log (two runs, or two seeds)"]
    assert main(["scan", str(tmp_path)]) == 0  # the human output says it too
    said = "judged apart from seed0-export.jsonl + seed0.jsonl: they disagree"
    assert said in " ".join(capsys.readouterr().out.split())
    assert main(["scan", "--format", "markdown", str(tmp_path)]) == 0  # and so do markdown and HTML
    assert "J" + said[1:] in " ".join(capsys.readouterr().out.split())
    assert len(_scan(capsys, "--per-file", str(tmp_path))) == 3
    if importlib.util.find_spec("matplotlib") is not None:
        page = tmp_path / "report.html"  # last: a scan of the folder would read it
        assert main(["report", str(tmp_path), "--out", str(page)]) == 0
        assert said in " ".join(html.unescape(page.read_text()).split())


def test_files_of_two_trainers_that_disagree_are_said_to_be_by_two_trainers(tmp_path: Path) -> None:
    sb3 = tmp_path / "progress.csv"
    sb3.write_text("time/total_timesteps,rollout/ep_rew_mean\n" + "".join(f"{s},{s / 100}\n" for s in range(10, 200, 10)))
    cleanrl = tmp_path / "cleanrl.csv"
    cleanrl.write_text("global_step,charts/episodic_return,losses/approx_kl\n"
                       + "".join(f"{s},{-s / 50},0.01\n" for s in range(10, 200, 10)))
    a, b = load(sb3), load(cleanrl)
    assert (a.trainer, b.trainer) == ("sb3", "cleanrl")
    assert apart(a, b) == ("they disagree on reward_mean at the steps both log (written by two trainers, sb3 and "
                           "cleanrl)")


def test_a_console_that_rounds_what_it_prints_joins_its_full_precision_file(tmp_path: Path) -> None:
    rng = __import__("numpy").random.default_rng(0)
    full = rng.uniform(0.01, 0.05, 30)  # a KL: small values, so 1e-3 relative is far below the print's 5e-4
    exact = _write(tmp_path / "metrics.jsonl", full.tolist())
    printed = _write(tmp_path / "console.jsonl", [round(v, 3) for v in full.tolist()])  # f"{v:.3f}"
    # without the print's grain most values would differ beyond 1e-6 + 1e-3 x |v|
    assert (abs(full - full.round(3)) > 1e-6 + 1e-3 * full).mean() > 0.5
    assert len(join_runs([load(exact), load(printed)])) == 1
    other = _write(tmp_path / "seed1.jsonl", [round(v + 0.002, 3) for v in full.tolist()])  # another seed, close
    assert len(join_runs([load(exact), load(other)])) == 2


def test_a_metric_both_files_log_comes_from_the_denser_one(tmp_path: Path) -> None:
    dense = tmp_path / "metrics.csv"
    dense.write_text("step,reward,grad_norm\n" + "".join(f"{i},{i / 10},1.0\n" for i in range(1, 9)))
    sparse = tmp_path / "console.log"
    sparse.write_text("step:2 - critic/score/mean:0.2 - actor/entropy:1.5\n"
                      "step:4 - critic/score/mean:0.4 - actor/entropy:1.25\n"
                      "step:9 - critic/score/mean:0.9 - actor/entropy:1.0\n")
    (run,) = join_runs([load(sparse), load(dense)])
    assert run.frame["step"].to_list() == list(range(1, 10))
    # reward_mean from the CSV (8 steps) where it has one (the console agrees there); its 0.9 fills step 9
    assert run.frame["reward_mean"].to_list() == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert run.frame["entropy"].to_list() == [None, 1.5, None, 1.25, None, None, None, None, 1.0]
    assert run.format == "verl_console+csv_table"


def test_a_metric_a_console_and_a_dump_both_log_is_the_consoles() -> None:
    # trl-dapo-vlm-181457: TRL's console every 10 steps over the whole batch (about 32 prompts a step), its rollout
    # dump 8 prompts of each step; the joined reward is the console's, not the dump's sample of it
    console = real("trl-dapo-vlm-181457/run_terminal.md")
    dump = real("trl-dapo-vlm-181457/rollout_results.md")
    logged = load(console)
    (run,) = join_runs([load(dump), logged])
    assert run.sources["reward_mean"] == logged.sources["reward_mean"] == "reward"
    joined = run.frame.drop_nulls("reward_mean")
    assert joined["step"].to_list() == logged.frame["step"].to_list()
    assert joined["reward_mean"].to_list() == logged.frame["reward_mean"].to_list()
    assert "n_groups" in run.metrics  # what only the dump logs stays at every step
    assert run.frame["n_groups"].null_count() < run.frame.height - joined.height


def test_files_of_one_format_that_share_no_metric_join_on_the_very_same_steps(tmp_path: Path) -> None:
    # a hand-written REINFORCE loop writing episode rewards and losses to two CSVs
    # (h12-handwritten-reinforce-meal-planning-slow-learner: monitor.csv and progress.csv, episodes 1..3000)
    rewards = tmp_path / "monitor.csv"
    rewards.write_text("episode,reward\n" + "".join(f"{i},{i / 10}\n" for i in range(1, 9)))
    losses = tmp_path / "progress.csv"
    losses.write_text("episode,loss,entropy\n" + "".join(f"{i},0.5,{2 - i / 10}\n" for i in range(1, 9)))
    (run,) = join_runs([load(rewards), load(losses)])
    assert run.frame["reward_mean"].to_list() == [i / 10 for i in range(1, 9)]
    assert run.frame["entropy"].to_list() == [2 - i / 10 for i in range(1, 9)]
    # other steps, or steps only counted by line: two files that share nothing stay apart
    losses.write_text("episode,loss,entropy\n" + "".join(f"{i},0.5,1.0\n" for i in range(2, 10)))
    assert len(join_runs([load(rewards), load(losses)])) == 2
    rewards.write_text("reward\n" + "".join(f"{i / 10}\n" for i in range(1, 9)))
    losses.write_text("loss,entropy\n" + "".join("0.5,1.0\n" for _ in range(1, 9)))
    assert len(join_runs([load(rewards), load(losses)])) == 2


def test_two_per_step_logs_of_different_formats_that_disagree_stay_apart(tmp_path: Path) -> None:
    # a hand-written loop's JSONL and another run's printed notebook log dropped in one folder
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps({"step": i, "reward": 0.0}) + "\n"
                                                    for i in range(1, 30)))
    (tmp_path / "train.log").write_text("".join(f"[Step {i}] Loss = 1.0 - Avg Reward = 0.9\n"
                                                for i in range(5, 25, 5)))
    runs = join_runs([load(tmp_path / "metrics.jsonl"), load(tmp_path / "train.log")])
    assert len(runs) == 2


def test_a_file_that_resumes_another_joins_it(tmp_path: Path) -> None:
    first = tmp_path / "a.jsonl"
    first.write_text("".join(json.dumps({"step": 10 * i, "reward": i / 10}) + "\n" for i in range(1, 8)))
    resumed = tmp_path / "b.jsonl"  # steps 80..140 every 10: the next step after 70
    resumed.write_text("".join(json.dumps({"step": 10 * i, "reward": i / 10}) + "\n" for i in range(8, 15)))
    (run,) = join_runs([load(first), load(resumed)])
    assert run.frame["step"].to_list() == [10 * i for i in range(1, 15)]
    far = tmp_path / "c.jsonl"  # 3 intervals after the end: another excerpt, not a resume
    far.write_text("".join(json.dumps({"step": 10 * i, "reward": i / 10}) + "\n" for i in range(10, 17)))
    assert len(join_runs([load(first), load(far)])) == 2


def test_real_sample_factory_run_resumed_into_a_second_event_file() -> None:
    # the manifest's checked numbers: frames 4,096 to 5.67 M in the first file, 5.74 M to 194.65 M in the second
    folder = "h44-samplefactory-appo-doom-deathmatch-learns/"
    first = corpus(folder + "events.out.tfevents.1752867503.directlab-System-Product-Name")
    second = corpus(folder + "events.out.tfevents.1752867736.directlab-System-Product-Name")
    a, b = load(first), load(second)
    (run,) = join_runs([a, b])
    assert run.steps == a.steps + b.steps and run.trainer == "sample_factory"
    assert run.frame["step"].to_list() == a.frame["step"].to_list() + b.frame["step"].to_list()


def test_a_session_resumed_from_an_earlier_checkpoint_replaces_the_steps_it_redid() -> None:
    # h308 (wallacexuhanxiao/search-r1): verl-agent crashed saving step 150's checkpoint and resumed from step
    # 100's: steps 101..149 are in both consoles, sampled anew, so they disagree; the resumed session's are the run's
    folder = "h308-verl-agent-grpo-lora-qwen25-3b-search-r1-bm25-val-success-0.261-to-0.303-healthy"
    first = corpus(f"{folder}/train_v2.pre_resume_step100.log")
    resumed = corpus(f"{folder}/train_v2_resume_from100.log")

    def scores(path: Path) -> dict[int, float]:  # independent reading: the step lines, by regex
        return {int(m.group(1)): float(m.group(2)) for m in
                re.finditer(r"\bstep:(\d+) - .*?critic/score/mean:(-?[\d.]+)", path.read_text(errors="replace"))}

    early, late = scores(first), scores(resumed)
    assert (min(early), max(early), min(late), max(late)) == (1, 149, 101, 300)
    assert any(early[s] != late[s] for s in range(101, 150))  # the redone steps disagree
    (run,) = join_runs([load(first), load(resumed)])
    logged = run.frame.drop_nulls("reward_mean")  # step 0 holds the validation before training alone
    got = dict(zip(logged["step"].to_list(), logged["reward_mean"].to_list(), strict=True))
    assert got == {**{s: v for s, v in early.items() if s < 101}, **late}


def test_an_evaluation_file_beside_a_training_log_is_said_to_hold_the_evaluation_returns() -> None:
    # h341's climbbot reach: SB3's EvalCallback archive beside the run's TensorBoard file; the evaluation returns of
    # the deterministic policy are not the training episodes', so the two disagree by design
    folder = "h341-sb3-ppo-climbbot-two-arm-reach-1m-learns-minus-740-to-minus-290-approx-kl-up-to-17-then-collapses-to-minus-1006"
    npz = corpus(f"{folder}/evaluations.npz")
    board = next(p for p in npz.parent.iterdir() if p.name.startswith("events.out.tfevents"))
    a, b = load(board), load(npz)
    assert (a.trainer, b.trainer) == ("sb3", "sb3_eval")
    why = apart(a, b)
    assert why is not None and "evaluations.npz holds the returns of SB3's EvalCallback" in why
    assert "two trainers" not in why


def test_two_runs_are_told_apart_by_their_rewards_first() -> None:
    # marl-mappo-schiphol-wandb-history: two W&B exports of two BenchMARL runs in one folder; they disagree on
    # every metric they share, the reward (-7.37 and -2.94 at step 0) the first a user would check
    export = real("marl-mappo-schiphol-wandb-history/wandb_export.csv")
    results = real("marl-mappo-schiphol-wandb-history/wandb_results.csv")
    a, b = load(export), load(results)
    first = [r.frame.filter(pl.col("step") == 0)["reward_mean"].item() for r in (a, b)]
    assert abs(first[0] - first[1]) > 1 and "clip_frac/ghas" in set(a.metrics) & set(b.metrics)
    why = apart(a, b)
    assert why is not None and why.startswith("they disagree on reward_mean at the steps both log")


def _sb3_event_file(folder: Path, step: int, reward: float) -> Path:
    """One SB3 rollout summary in an event file of its own, as a ``learn()`` called for one rollout writes it, named
    by tensorboard's own writer (this process's host and pid)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2  # type: ignore[import-untyped]
    from tensorboard.summary.writer.event_file_writer import EventFileWriter  # type: ignore[import-untyped]

    before = set(folder.glob("events.out.tfevents*"))
    writer = EventFileWriter(str(folder))
    writer.add_event(event_pb2.Event(step=step, summary=summary_pb2.Summary(value=[
        summary_pb2.Summary.Value(tag="rollout/ep_rew_mean", simple_value=reward),
        summary_pb2.Summary.Value(tag="time/fps", simple_value=400.0)])))
    writer.close()
    (path,) = set(folder.glob("events.out.tfevents*")) - before
    return path


def test_event_files_of_one_process_are_one_run_whatever_their_gaps(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # h445-sb3-ppo-metaworld-subgoal-env-single-task9: 152 event files of one process, one summary each, every 500
    # steps; no file shows an interval, so none resumed another and each was 'too short to judge'. They are one run,
    # and its missing train/ keys are the loop's (SB3 writes them with the next summary, in the next file), not a
    # policy that never trained: its return rose
    pytest.importorskip("tensorboard")
    rewards = [-6.0 + 0.2 * i for i in range(25)]
    paths = [_sb3_event_file(tmp_path, 500 * (i + 1), r) for i, r in enumerate(rewards)]
    (run,) = _scan(capsys, str(tmp_path))
    assert run["steps"] == 25 and len(run["files"]) == 25 and run["trainer"] == "sb3"
    assert run["verdict"]["status"] == "quiet", run["verdict"]
    loaded = join_runs([load(p) for p in sorted(paths)])
    assert len(loaded) == 1 and loaded[0].frame["reward_mean"].to_list() == pytest.approx(rewards)
    # the same files from two processes (another pid in the name), one interval apart: two runs
    other = tmp_path / "other"
    other.mkdir()
    a = _sb3_event_file(other, 500, 1.0)
    b = _sb3_event_file(other, 1000, 2.0)
    host, pid, n = re.match(r"events\.out\.tfevents\.\d+\.(.+)\.(\d+)\.(\d+)", b.name).groups()  # type: ignore[union-attr]
    b = b.rename(other / b.name.replace(f".{host}.{pid}.{n}", f".{host}.{int(pid) + 1}.{n}"))
    assert len(join_runs([load(a), load(b)])) == 2
