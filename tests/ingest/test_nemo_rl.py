"""NeMo-RL's per-sample training dumps (``train_data_step<N>.jsonl``), written here as
``Logger.log_batched_dict_as_jsonl`` writes them in NeMo-RL 0.6.0 (nemo_rl/utils/logger.py: one
length-1 slice of the batch per line, ``idx`` appended; fields from nemo_rl/algorithms/grpo.py).
Oracle: numpy on the same rewards and advantages."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import nemo_rl
from advcore.scan import collect_paths

G, PROMPTS = 4, 3


def write_step(folder: Path, step: int, rewards: np.ndarray, prompt_len: int = 3, resp_len: int = 4) -> np.ndarray:
    """One step's dump; returns the GRPO advantages written (leave-one-out-free: (r - mean) / (std + eps))."""
    adv = np.empty_like(rewards)
    for g in range(PROMPTS):
        r = rewards[g * G:(g + 1) * G]
        adv[g * G:(g + 1) * G] = (r - r.mean()) / (r.std(ddof=1) + 1e-6)
    with (folder / f"train_data_step{step}.jsonl").open("w") as f:
        for i, (r, a) in enumerate(zip(rewards, adv, strict=True)):
            prompt = [100 + i // G] * prompt_len
            mask = [0] * prompt_len + [1] * resp_len
            line = {"content": [[f"prompt {i // G}", f"answer {i}"]], "rewards": [float(r)],
                    "input_lengths": [prompt_len + resp_len], "token_ids": [prompt + [7 + i] * resp_len],
                    "token_loss_mask": [mask], "sample_loss_mask": [1.0],
                    "advantages": [[0.0] * prompt_len + [float(a)] * resp_len],
                    "generation_logprobs": [[0.0] * prompt_len + [-0.5] * resp_len],
                    "prev_logprobs": [[0.0] * prompt_len + [-0.5] * resp_len], "idx": i}
            f.write(json.dumps(line) + "\n")
    return adv


def test_a_folder_of_step_dumps_is_one_run(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    written = {}
    for step in range(1, 4):
        rewards = rng.integers(0, 2, G * PROMPTS).astype(float)
        rewards[:G] = 1.0  # the first group tied at every step
        written[step] = (rewards, write_step(tmp_path, step, rewards))
    (tmp_path / "config.yaml").write_text("grpo: {}\n")
    assert collect_paths([str(tmp_path)]).files == [tmp_path]
    assert detect(tmp_path) is nemo_rl.FORMAT and detect(tmp_path / "train_data_step1.jsonl") is nemo_rl.FORMAT
    run = load(tmp_path)
    assert run.format == "nemo_rl" and run.frame["step"].to_list() == [1, 2, 3]
    for i, (rewards, adv) in enumerate(written.values()):
        assert run.frame["reward_mean"][i] == pytest.approx(rewards.mean())
        assert run.frame["adv_std"][i] == pytest.approx(adv.std(), rel=1e-6)
        tied = np.mean([np.ptp(rewards[g * G:(g + 1) * G]) == 0 for g in range(PROMPTS)])
        assert run.frame["zero_variance_group_frac"][i] == pytest.approx(tied)
    assert run.metadata["groups"].endswith("blocks of 4 (gcd of the run lengths)")


def test_rollout_n_that_does_not_divide_and_a_bad_line(tmp_path: Path) -> None:
    write_step(tmp_path, 1, np.array([0, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 1], dtype=float))
    with (tmp_path / "train_data_step1.jsonl").open("a") as f:
        f.write("{not json\n")
    run = load(tmp_path, rollout_n=5)
    assert run.frame["reward_mean"][0] == pytest.approx(7 / 12)
    assert "zero_variance_group_frac" not in run.metrics
    messages = [e.message for e in run.errors]
    assert any("not a JSON object" in m for m in messages) and any("groups of 5" in m for m in messages)
    assert next(e for e in run.errors if "JSON" in e.message).line == 13


def test_nemo_rl_tensorboard_scalars(tmp_path: Path) -> None:
    """NeMo-RL's step metrics as its TensorBoard logger writes them (``Logger.log_metrics(metrics, step,
    prefix="train")`` in nemo_rl/algorithms/grpo.py: ``train/reward``, ``train/grad_norm``,
    ``train/advantages/{mean,max,min}`` over the trained tokens)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2  # type: ignore[import-untyped]
    from tensorboard.summary.writer.event_file_writer import EventFileWriter  # type: ignore[import-untyped]

    writer = EventFileWriter(str(tmp_path))
    for step in range(1, 8):
        values = {"train/reward": 0.1 * step, "train/grad_norm": 0.5, "train/advantages/max": 1.5 / step,
                  "train/advantages/min": -1.5 / step, "train/advantages/mean": 0.0, "train/loss": 0.01}
        writer.add_event(event_pb2.Event(step=step, summary=summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag=k, simple_value=v) for k, v in values.items()])))
    writer.close()
    (path,) = tmp_path.glob("events.out.tfevents*")
    run = load(path)
    assert run.frame["step"].to_list() == list(range(1, 8))
    assert run.frame["reward_mean"].to_list() == pytest.approx([0.1 * s for s in range(1, 8)])
    assert run.frame["adv_max"].to_list() == pytest.approx([1.5 / s for s in range(1, 8)])
    assert run.frame["adv_min"].to_list() == pytest.approx([-1.5 / s for s in range(1, 8)])
