"""RLinf embodied runs read from the TensorBoard folder its MetricLogger writes.

The fixtures are event files written at test time with the ``tensorboard`` package's own
``EventFileWriter``, one ``simple_value`` event per scalar as ``torch.utils.tensorboard.SummaryWriter.
add_scalar`` writes them (torch is not a test dependency), with the exact keys, steps and order of
RLinf (sources read in the code library, RLinf/RLinf@a3816b5, not copied):

* ``rlinf/utils/metric_logger.py`` L20-31, L113-122: ``<log_path>/tensorboard/`` holds ``config.yaml``
  and the event file; ``_TensorboardLogger.log`` calls ``add_scalar(key, value, step)`` per key;
* ``rlinf/runners/embodied_runner.py``: per training step ``_step`` (from 0), the evaluation dict
  ``eval/...`` first when ``val_check_interval`` is due (L318-324), then ``_log_step_metrics``
  (L331-396) logs ``env/...``, ``rollout/...``, ``time/...`` and ``train/...`` in that order;
* ``env/`` keys: the episode fields of the env (``success_once``, ``return``, ``episode_len``,
  ``reward``: ``rlinf/envs/libero/libero_env.py`` L724-747) averaged over the finished episodes, and
  ``num_trajectories`` (``rlinf/utils/metric_utils.py`` L372-419);
* ``rollout/`` keys: ``rewards``, ``advantages_{mean,max,min}`` (metric_utils.py L422-506);
* ``train/`` keys: ``actor/{policy_loss,approx_kl,clip_fraction,ratio,clipped_ratio,...}``
  (``rlinf/algorithms/losses.py`` L299-310), ``actor/entropy_loss`` (0.0 when
  ``algorithm.entropy_bonus`` is 0, ``rlinf/workers/actor/embodied_fsdp_actor_worker.py`` L679-690),
  ``actor/total_loss``, ``actor/grad_norm`` and ``actor/lr`` (L564-567).

Oracles are the values written, kept in the test, never the reader's output.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advcore.cli import main
from advcore.ingest import load
from advcore.ingest._trainers import trainer_of

GROUP = 8  # algorithm.group_size
EPISODES = 64  # finished episodes per step (num_group_envs x group_size x rollout_epoch)
EVAL_EVERY = 10  # runner.val_check_interval


def _success(rng: np.random.Generator, step: int, saturate_at: int | None) -> np.ndarray:
    """The success flag of each finished episode at ``step``: a run that learns (0.2 -> 0.7), one whose
    every episode succeeds from ``saturate_at`` on, or (``saturate_at`` -1) one that never succeeds."""
    if saturate_at == -1:
        return np.zeros(EPISODES)
    if saturate_at is not None and step >= saturate_at:
        return np.ones(EPISODES)
    p = 0.2 + 0.5 * step / 40
    return (rng.random(EPISODES) < p).astype(float)


def _grpo_advantages(success: np.ndarray) -> np.ndarray:
    """RLinf's GRPO advantage per episode: (r - group mean) / (group std + eps), groups of GROUP."""
    groups = success.reshape(-1, GROUP)
    adv = (groups - groups.mean(1, keepdims=True)) / (groups.std(1, ddof=1, keepdims=True) + 1e-6)
    return adv.reshape(-1)


def _step_dicts(rng: np.random.Generator, step: int, saturate_at: int | None) -> list[dict[str, float]]:
    """The four dicts ``_log_step_metrics`` logs at one step, in its order (env, rollout, time, train)."""
    success = _success(rng, step, saturate_at)
    adv = _grpo_advantages(success)
    length = np.where(success > 0, rng.integers(120, 300, EPISODES), 512).astype(float)
    env = {"env/success_once": float(success.mean()), "env/return": float(success.mean()),
           "env/episode_len": float(length.mean()), "env/reward": float((success / length).mean()),
           "env/num_trajectories": float(EPISODES)}
    rollout = {"rollout/rewards": float((success / length).mean()), "rollout/advantages_mean": float(adv.mean()),
               "rollout/advantages_max": float(adv.max()), "rollout/advantages_min": float(adv.min())}
    time = {"time/step": 95.0 + rng.random(), "time/env/interact": 60.0 + rng.random(),
            "time/actor/run_training": 20.0 + rng.random()}
    updating = bool(np.any(adv != 0))
    train = {"train/actor/policy_loss": float(rng.normal(0, 0.01)) if updating else 0.0,
             "train/actor/approx_kl": float(abs(rng.normal(2e-3, 5e-4))) if updating else 0.0,
             "train/actor/clip_fraction": float(rng.uniform(0.02, 0.1)) if updating else 0.0,
             "train/actor/ratio": 1.0, "train/actor/clipped_ratio": 1.0,
             "train/actor/entropy_loss": 0.0,  # algorithm.entropy_bonus: 0, the examples' default
             "train/actor/total_loss": float(rng.normal(0, 0.01)),
             "train/actor/grad_norm": float(rng.uniform(1.0, 3.0)) if updating else 0.0,
             "train/actor/lr": 5e-6}
    return [env, rollout, time, train]


def write_rlinf_run(log_path: Path, steps: int, *, seed: int, saturate_at: int | None = None
                    ) -> dict[int, dict[str, float]]:
    """An RLinf ``<log_path>/tensorboard`` folder; returns what was logged, per step and key."""
    from tensorboard.compat.proto import event_pb2, summary_pb2  # type: ignore[import-untyped]
    from tensorboard.summary.writer.event_file_writer import EventFileWriter  # type: ignore[import-untyped]

    folder = log_path / "tensorboard"
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text("runner:\n  task_type: embodied\n  logger:\n    log_path: logs\n"
                                        "    logger_backends:\n    - tensorboard\nalgorithm:\n  adv_type: grpo\n"
                                        f"  group_size: {GROUP}\n  entropy_bonus: 0\n")
    rng = np.random.default_rng(seed)
    writer = EventFileWriter(str(folder))
    logged: dict[int, dict[str, float]] = {}

    def add_scalar(key: str, value: float, step: int) -> None:
        writer.add_event(event_pb2.Event(step=step, wall_time=1.7e9 + step, summary=summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag=key, simple_value=value)])))
        logged.setdefault(step, {})[key] = float(np.float32(value))  # simple_value is a float32

    for step in range(steps):
        if (step + 1) % EVAL_EVERY == 0:  # check_progress after global_step += 1, logged at _step
            for key, value in {"eval/success_once": 0.5, "eval/return": 0.5, "eval/episode_len": 300.0,
                               "eval/num_trajectories": 500.0}.items():
                add_scalar(key, value, step)
        for metrics in _step_dicts(rng, step, saturate_at):
            for key, value in metrics.items():
                add_scalar(key, value, step)
    writer.close()
    return logged


def _scan(path: Path) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["scan", "--format", "json", str(path)])
    runs: list[dict[str, Any]] = json.loads(out.getvalue())["runs"]
    assert len(runs) == 1
    return runs[0]


def test_keys_and_steps_read_back_as_written(tmp_path: Path) -> None:
    logged = write_rlinf_run(tmp_path / "logs", 30, seed=1)
    (path,) = (tmp_path / "logs" / "tensorboard").glob("events.out.tfevents*")
    run = load(path)
    assert run.format == "tensorboard" and run.trainer == "rlinf" and run.errors == ()
    assert run.frame["step"].to_list() == list(range(30))
    expected = {"reward_mean": "env/return", "success_rate": "env/success_once", "adv_mean": "rollout/advantages_mean",
                "adv_max": "rollout/advantages_max", "adv_min": "rollout/advantages_min",
                "kl_step": "train/actor/approx_kl", "clip_frac": "train/actor/clip_fraction",
                "grad_norm": "train/actor/grad_norm", "lr": "train/actor/lr"}
    for canonical, key in expected.items():
        assert run.sources[canonical] == key
        assert run.frame[canonical].to_list() == pytest.approx([logged[s][key] for s in range(30)], rel=1e-6)
    # evaluation is held out, episode length and the per-chunk reward have no canonical name: kept apart
    unmapped = set(run.metadata["unmapped"])
    assert {"eval/success_once", "env/episode_len", "rollout/rewards", "time/step"} <= unmapped
    # entropy_bonus 0: the entropy key is 0.0 at every step, read as the entropy it names
    assert run.sources["entropy"] == "train/actor/entropy_loss"


def test_the_trainer_is_told_by_the_namespaces_and_not_by_one_key() -> None:
    assert trainer_of(["env/success_once", "rollout/advantages_mean", "time/step"]) == "rlinf"
    assert trainer_of(["train/actor/approx_kl", "train/actor/clip_fraction"]) == "rlinf"
    assert trainer_of(["env/success_once", "env/return"]) is None


def test_rlinf_has_no_per_task_key_so_no_slice(tmp_path: Path) -> None:
    write_rlinf_run(tmp_path / "logs", 12, seed=2)
    (path,) = (tmp_path / "logs" / "tensorboard").glob("events.out.tfevents*")
    assert load(path).slices is None


def test_a_healthy_run_folder_stays_quiet(tmp_path: Path) -> None:
    logged = write_rlinf_run(tmp_path / "logs", 40, seed=3)
    success = [logged[s]["env/success_once"] for s in range(40)]
    assert np.mean(success[:10]) < 0.4 < 0.55 < np.mean(success[-10:])  # the oracle's view: it learns
    report = _scan(tmp_path / "logs" / "tensorboard")
    assert report["trainer"] == "rlinf" and report["verdict"]["status"] == "quiet"
    assert report["findings"] == []
    # entropy_bonus 0: RLinf logs 0.0 at every step, a placeholder that is not judged
    assert "ENTROPY_COLLAPSE" in str(report["not_evaluable"])


def test_a_run_whose_episodes_all_succeed_is_found_saturated(tmp_path: Path) -> None:
    logged = write_rlinf_run(tmp_path / "logs", 40, seed=4, saturate_at=15)
    assert all(logged[s]["rollout/advantages_max"] == 0.0 for s in range(15, 40))  # GRPO: no signal left
    report = _scan(tmp_path / "logs" / "tensorboard")
    found = {f["id"]: f for f in report["findings"]}
    assert {"REWARD_SATURATION", "ADV_COLLAPSE", "DEGENERATE_GROUPS"} <= set(found), found
    assert all(abs(found[i]["onset_step"] - 15) <= 5 for i in ("REWARD_SATURATION", "ADV_COLLAPSE", "DEGENERATE_GROUPS"))
    assert report["verdict"]["status"] == "lost" and report["verdict"]["stage"] == "R"



def test_a_run_that_never_succeeds_is_found_at_the_floor(tmp_path: Path) -> None:
    """The cold start of VLA RL: every episode fails, every GRPO group ties, no update moves the policy."""
    logged = write_rlinf_run(tmp_path / "logs", 40, seed=9, saturate_at=-1)
    assert {logged[s]["env/success_once"] for s in range(40)} == {0.0}
    report = _scan(tmp_path / "logs" / "tensorboard")
    found = {f["id"]: f for f in report["findings"]}
    assert {"REWARD_FLOOR", "DEGENERATE_GROUPS"} <= set(found), found
    assert found["REWARD_FLOOR"]["evidence"]["metric"] == "success_rate"  # read from env/success_once
    assert report["verdict"]["status"] == "lost" and report["verdict"]["stage"] == "R"


def test_a_wandb_history_of_an_rlinf_run_reads_with_the_rlinf_rows(tmp_path: Path) -> None:
    """``runner.logger.logger_backends: [wandb]`` logs the same dicts (metric_logger.py L78-96, L160-162): a
    run-history export (one JSON record per step, W&B's ``_step``) is told RLinf's by its keys as well."""
    rng = np.random.default_rng(8)
    rows = []
    for step in range(10):
        record: dict[str, Any] = {"_step": step}
        for metrics in _step_dicts(rng, step, None):
            record.update(metrics)
        rows.append(record)
    p = tmp_path / "history.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run = load(p)
    assert run.trainer == "rlinf" and run.frame["step"].to_list() == list(range(10))
    assert run.frame["success_rate"].to_list() == [r["env/success_once"] for r in rows]
    assert run.frame["kl_step"].to_list() == [r["train/actor/approx_kl"] for r in rows]

# --- the metric table: console (run_embodiment.log) and file logger (metrics.log) -------------------------------
# Drawn as rlinf/utils/metric_utils.py print_metrics_table (L540-727) lays it out: 120 columns, a title row per
# section, the header's Global Step (step + 1) and time lines, then per section a blank row, the metrics sorted by
# name three to a row (columns of 39, 39 and 38 characters, a cell too long cut to '…'), and a blank row.
WIDTH = 120
SECTION_OF = {"time": "Time", "env": "Environment", "rollout": "Rollout", "eval": "Evaluation"}
SECTION_ORDER = ("Time", "Environment", "Rollout", "Evaluation", "Replay Buffer", "Training/Actor",
                 "Training/Critic", "Training/Other")


def _fit(text: str, width: int) -> str:
    return text.ljust(width) if len(text) <= width else text[:width - 1] + "…"


def _title(text: str) -> str:
    pad = WIDTH - 2 - len(f" {text} ")
    return "├" + "─" * (pad // 2) + f" {text} " + "─" * (pad - pad // 2) + "┤"


def _shown(value: float | int | np.floating) -> str:
    if not isinstance(value, float):  # numpy scalars and ints: str()
        return str(value)
    a = abs(value)
    if a < 0.001 and value != 0:
        return f"{value:.2e}"
    if a < 0.01:
        return f"{value:.4f}"
    if a > 10000:
        return f"{value:.2e}"
    if a > 100:
        return f"{value:.1f}"
    return f"{value:.3f}"


def render_table(step: int, total: int, metrics: dict[str, Any]) -> list[str]:
    progress = (step + 1) / total * 100
    bar = "█" * int(40 * progress / 100) + "░" * (40 - int(40 * progress / 100))
    out = ["", "╭" + "─" * (WIDTH - 2) + "╮", _title("Metric Table"),
           _fit(f"│ Global Step: {step + 1:4d}/{total} │ Progress: {bar} │ {progress:5.1f}%", WIDTH - 2) + " │",
           _fit(f"│ Elapsed: 01:{step % 60:02d} │ ETA: 26:23:20 │ Step Time: 95.042s", WIDTH - 2) + " │"]
    sections: dict[str, dict[str, Any]] = {name: {} for name in SECTION_ORDER}
    for key, value in metrics.items():
        head, name = key.split("/", 1)
        if head == "train":
            sub = name.split("/", 1)[0]
            sections["Training/Actor" if sub == "actor" else "Training/Critic" if sub == "critic"
                     else "Training/Other"][name] = value
        else:
            sections[SECTION_OF[head]][name] = value
    for title, items in sections.items():
        if not items:
            continue
        out += [_title(title), "│" + " " * (WIDTH - 2) + "│"]
        cells = [f"{k}={_shown(v)}" for k, v in sorted(items.items())]
        for i in range(0, len(cells), 3):
            row = (cells[i:i + 3] + ["", ""])[:3]
            out.append(f"│{_fit(row[0], 39)}│{_fit(row[1], 39)}│{_fit(row[2], 38)}│")
        out.append("│" + " " * (WIDTH - 2) + "│")
    return out + ["╰" + "─" * (WIDTH - 2) + "╯", ""]


def write_rlinf_tables(log_path: Path, steps: int, *, seed: int, console: bool = False,
                       saturate_at: int | None = None, prefix: str = "") -> dict[int, dict[str, Any]]:
    """``<log_path>/metrics.log`` (or, with ``console``, a ``run_embodiment.log`` tee of stdout with the
    workers' logger lines between the tables, each line after ``prefix``: a timestamp that ``ts`` or a
    job scheduler adds); returns what each table showed, per step and key."""
    rng = np.random.default_rng(seed)
    lines: list[str] = []
    if console:
        lines += ["python train_embodied_agent.py --config-path examples/embodiment/config/ --config-name "
                  "maniskill_ppo_openvlaoft runner.logger.log_path=logs/20260822-14:31:25-libero_grpo",
                  "[INFO 14:31:25 EnvGroup-Rank-0][env_worker.py:212] Env worker initialized",
                  "[INFO 14:31:40 ActorGroup-Rank-0][embodied_fsdp_actor_worker.py:131] model synced"]
    shown: dict[int, dict[str, Any]] = {}
    for step in range(steps):
        metrics: dict[str, Any] = {}
        if (step + 1) % EVAL_EVERY == 0:
            metrics.update({"eval/success_once": np.float32(0.5), "eval/num_trajectories": 500})
        env, rollout, time, train = _step_dicts(rng, step, saturate_at)
        # env/ values are numpy 0-d arrays (compute_evaluate_metrics), printed by str() in full
        metrics.update({k: (np.float32(v) if k != "env/num_trajectories" else int(v)) for k, v in env.items()})
        metrics.update(rollout)
        metrics.update({**time, "time/rollout/generate_one_epoch_with_prefetch": 12.345})  # cut to '…'
        metrics.update(train)
        shown[step] = metrics
        table = render_table(step, 1000, metrics)
        if console:
            table = [f"[INFO 14:{step % 60:02d}:00 EnvGroup-Rank-0][env_worker.py:1235] chunk done"] + table
        lines += table
    name = "run_embodiment.log" if console else "metrics.log"
    log_path.mkdir(parents=True, exist_ok=True)
    (log_path / name).write_text("\n".join(prefix + line for line in lines) + "\n", encoding="utf-8")
    return shown


@pytest.mark.parametrize(("console", "prefix"), [(False, ""), (True, ""), (True, "2026-08-22 14:31:25 "),
                                                 (True, "[2026-08-22T14:31:25.120Z] ")],
                         ids=["metrics.log", "run_embodiment.log", "ts prefix", "iso prefix"])
def test_the_metric_table_reads_back_as_written(tmp_path: Path, console: bool, prefix: str) -> None:
    shown = write_rlinf_tables(tmp_path, 25, seed=5, console=console, prefix=prefix)
    path = tmp_path / ("run_embodiment.log" if console else "metrics.log")
    run = load(path)
    assert run.format == "rlinf_table" and run.trainer == "rlinf" and run.errors == ()
    assert run.frame["step"].to_list() == list(range(25))  # Global Step N is the step N - 1 of TensorBoard
    for canonical, key in {"reward_mean": "env/return", "success_rate": "env/success_once",
                           "adv_max": "rollout/advantages_max", "adv_min": "rollout/advantages_min",
                           "kl_step": "train/actor/approx_kl", "clip_frac": "train/actor/clip_fraction",
                           "grad_norm": "train/actor/grad_norm", "lr": "train/actor/lr"}.items():
        assert run.sources[canonical] == key
        # printed rounded: 3 decimals, 3 significant digits in the e-notation cases
        assert run.frame[canonical].to_list() == pytest.approx([float(shown[s][key]) for s in range(25)],
                                                               rel=5e-3, abs=5e-4)
    (cut,) = run.metadata["truncated_cells"]  # the one cell too long for its column, its value lost
    assert cut.startswith("time/rollout/generate_one_epoch") and cut not in run.metadata["unmapped"]
    assert "eval/success_once" in run.metadata["unmapped"]


def test_the_table_and_the_tensorboard_file_of_one_run_agree(tmp_path: Path) -> None:
    write_rlinf_run(tmp_path / "tb", 20, seed=6)
    write_rlinf_tables(tmp_path / "table", 20, seed=6)  # the same seed draws the same dicts
    (events,) = (tmp_path / "tb" / "tensorboard").glob("events.out.tfevents*")
    tb, table = load(events), load(tmp_path / "table" / "metrics.log")
    assert tb.frame["step"].to_list() == table.frame["step"].to_list()
    for name in ("reward_mean", "success_rate", "adv_max", "kl_step", "grad_norm"):
        assert table.frame[name].to_list() == pytest.approx(tb.frame[name].to_list(), rel=5e-3, abs=5e-4)


def test_a_table_cut_short_keeps_its_rows_and_names_the_line(tmp_path: Path) -> None:
    write_rlinf_tables(tmp_path, 5, seed=7)
    p = tmp_path / "metrics.log"
    text = p.read_text(encoding="utf-8").rstrip("\n").split("\n")
    # a run killed while the last table was written: its last rows are gone, one cut mid-row
    cut = max(i for i, line in enumerate(text) if "advantages_max=" in line)
    p.write_text("\n".join(text[:cut] + [text[cut][:50]]) + "\n", encoding="utf-8")
    run = load(p)
    assert run.frame["step"].to_list() == [0, 1, 2, 3, 4]
    assert [e.line for e in run.errors] == [cut + 1]
    assert run.frame["success_rate"][-1] is not None and run.frame["kl_step"][-1] is None


def test_scans_of_the_tables_judge_as_the_tensorboard_file_does(tmp_path: Path) -> None:
    write_rlinf_tables(tmp_path / "healthy", 40, seed=3)
    write_rlinf_tables(tmp_path / "saturated", 40, seed=4, saturate_at=15, console=True)
    healthy = _scan(tmp_path / "healthy" / "metrics.log")
    assert healthy["format"] == "rlinf_table" and healthy["verdict"]["status"] == "quiet" and healthy["findings"] == []
    saturated = _scan(tmp_path / "saturated" / "run_embodiment.log")
    found = {f["id"]: f for f in saturated["findings"]}
    assert {"REWARD_SATURATION", "ADV_COLLAPSE", "DEGENERATE_GROUPS"} <= set(found), found
    assert all(abs(found[i]["onset_step"] - 15) <= 5 for i in ("REWARD_SATURATION", "ADV_COLLAPSE"))
    assert saturated["verdict"]["status"] == "lost" and saturated["verdict"]["stage"] == "R"
