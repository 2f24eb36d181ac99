"""A hand-written loop's printed progress lines (advcore.ingest.formats.printed), on the line forms of
real notebooks (h15/h16 corpus runs) and the real notebooks themselves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import printed
from tests._real import corpus


def _log(tmp_path: Path, text: str, name: str = "train.log") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_pipe_separated_updates(tmp_path: Path) -> None:
    # the line form of khoayang63/ReinforcementLearning PPO.ipynb (PPO on Snake)
    lines = [f"Update {10 * i:4d} | MeanEpReturn: {i + 0.5:.3f} | MaxEpReturn: {2 * i:.3f} | CriticLoss: 0.8970 | "
             f"Entropy: {1 / i:.4f}" for i in range(1, 6)]
    p = _log(tmp_path, "Using device: cuda\n" + "\n".join(lines) + "\n")
    assert detect(p) is printed.FORMAT
    run = load(p)
    assert run.trainer == "printed" and run.frame["step"].to_list() == [10, 20, 30, 40, 50]
    assert run.frame["reward_mean"].to_list() == [1.5, 2.5, 3.5, 4.5, 5.5]
    assert run.frame["reward_max"].to_list() == [2.0, 4.0, 6.0, 8.0, 10.0]
    assert run.frame["entropy"].to_list() == pytest.approx([1 / i for i in range(1, 6)], abs=1e-4)
    assert run.frame["value_loss"].to_list() == [0.897] * 5


def test_bracketed_steps_with_a_planned_total_and_samples_in_between(tmp_path: Path) -> None:
    # xiaobo-yang/llm_rl grpo.ipynb: sample lines and checkpoint lines interleave the step lines; a
    # sample's text may say "Step 1:" and carry its own reward=
    text = "\n".join([
        "[Step 1/50] loss=10.2222 reward_avg=0.250 avg_resp_len=236.8",
        "[Step 2/50] loss=12.5457 reward_avg=0.500 avg_resp_len=367.0",
        "Saved checkpoint to qwen3-0.6B-rlvr-grpo-step00002.pth",
        "  3) reward=1.000 len=406:  Let's solve it step by step. ### **Step 1: Determine the Rate**",
        "[Step 3/50] loss=-0.0000 reward_avg=1.000 avg_resp_len=352.8",
    ])
    run = load(_log(tmp_path, text))
    assert run.frame["step"].to_list() == [1, 2, 3]
    assert run.frame["reward_mean"].to_list() == [0.25, 0.5, 1.0]
    assert run.frame["response_length_mean"].to_list() == [236.8, 367.0, 352.8]


def test_blocks_attach_to_their_episode_and_test_episodes_after_training_are_not_steps(tmp_path: Path) -> None:
    # Edwinhei/RL-Learning Actor2-Critic.ipynb
    block = ("Episode {e}, Total Reward: {r:.2f}, Trajectory Length: {r:.0f}\n"
             "==> Total Loss: 42.7926, Actor Loss: 3.0702, Critic Loss: {c}, Avg Entropy: 0.6905\n"
             "Advantage Mean: 4.3167, Std: 1.1465\n# ------ #\n")
    text = "Training...\n" + "".join(block.format(e=e, r=15.0 + e, c=e / 100) for e in (0, 100, 200))
    text += "Testing Episode 1/2\nEpisode 1 Reward: 500.00, Length: 500\nEpisode 2 Reward: 500.00, Length: 500\n"
    run = load(_log(tmp_path, text))
    assert run.frame["step"].to_list() == [0, 100, 200] and "phase" not in run.frame.columns
    assert run.frame["reward_mean"].to_list() == [15.0, 115.0, 215.0]
    assert run.frame["value_loss"].to_list() == [0.0, 1.0, 2.0]


def test_chinese_counter_and_prose_are_told_apart(tmp_path: Path) -> None:
    # Edwinhei/RL-Learning REINFORCE.ipynb prints 轮次 (round) and 奖励 (reward)
    text = "开始训练...\n" + "".join(f"轮次 {50 * i:4d}: 奖励 = {10.0 * i:6.2f}, 最近50轮平均奖励 = 5.00, 损失 = -0.0424\n"
                                   for i in range(4))
    run = load(_log(tmp_path, text))
    assert run.frame["step"].to_list() == [0, 50, 100, 150]
    assert run.frame["reward_mean"].to_list() == [0.0, 10.0, 20.0, 30.0]
    # prose with numbers is no progress line: "Step 1: generating 2 candidates for prompt 1/1"
    prose = "".join(f"  Step {i}: generating 2 candidates for prompt 1/1...\n" for i in range(1, 6))
    assert detect(_log(tmp_path, prose, "prose.log")) is not printed.FORMAT


def test_bad_counter_costs_its_line_and_long_lines_are_skipped(tmp_path: Path) -> None:
    text = ("epoch: 0 \t loss: 1.0 \t return: 10.0\nepoch: 1.5 \t loss: 1.0 \t return: 11.0\n"
            "epoch: 2 \t loss: 1.0 \t return: 12.0\n" + "epoch: 3 \t return: " + "9" * (printed.MAX_LINE + 1) + "\n"
            "epoch: 4 \t loss: 1.0 \t return: 14.0\n")
    run = load(_log(tmp_path, text))
    assert run.frame["step"].to_list() == [0, 2, 4]
    assert [(e.line, "whole number" in e.message) for e in run.errors] == [(2, True)]


def test_real_notebooks_of_hand_written_loops() -> None:
    path = corpus("h16-grpo-style-cartpole-saturates-at-500/grpo.ipynb")
    lines = [ln for c in json.loads(path.read_text())["cells"] for o in c.get("outputs", [])
             for ln in "".join(o.get("text", [])).splitlines() if ln.startswith("Episode ") and "Avg reward" in ln]
    run = load(path)
    assert run.format == "notebook" and run.metadata["source"] == "printed_progress"
    assert run.frame["step"].to_list() == [int(ln.split(",")[0].split()[1]) for ln in lines]
    assert run.frame["reward_mean"].to_list() == [float(ln.rsplit(":", 1)[1]) for ln in lines]


def test_a_line_of_blank_separated_pairs_only(tmp_path: Path) -> None:
    # Stratar/OpenSim rewards.txt (CRLF): "Episode 1    Reward  -1689"
    p = tmp_path / "rewards.txt"
    p.write_bytes(b"Episode 1    Reward  -1689\r\nEpisode 2    Reward  -988\r\nEpisode 3    Reward  -865\r\n")
    run = load(p)
    assert run.frame["step"].to_list() == [1, 2, 3] and run.frame["reward_mean"].to_list() == [-1689, -988, -865]


def test_lines_without_a_counter_are_numbered_in_order(tmp_path: Path) -> None:
    # migaelstrydom/openai-gym-experiments README: one line per epoch, no epoch number
    rewards = [19.74, 26.81, 40.03, 49.96, 46.3, 53.06, 50.3]
    p = _log(tmp_path, "Example run:\n" + "".join(f"Average epoch reward: {r:.6f}         Average episode len: "
                                                   f"{r:.6f}\n" for r in rewards), "README.md")
    run = load(p)
    assert run.format == "printed" and run.frame["step"].to_list() == list(range(1, 8))
    assert run.frame["reward_mean"].to_list() == rewards
    # a CSV whose rows hold a "beta=0.0" in a text field is no printed log
    csv = "".join(f"{i},0.5,GRPO beta=0.0; no reference KL\n" for i in range(1, 10))
    assert detect(_log(tmp_path, "update,reward_mean,note\n" + csv, "m.csv")) is not printed.FORMAT


def test_a_header_per_iteration_and_one_pair_per_line(tmp_path: Path) -> None:
    # Berkeley CS285 homework console: a header per iteration, prose, then "Key : value" lines
    text = ""
    for it in range(4):
        text += (f"\n********** Iteration {it} ************\n\nCollecting data for eval...\n"
                 f"Eval_AverageReturn : {100 + it}.5\nTrain_AverageReturn : {10 * it}.25\n"
                 f"Baseline_Loss : {1000 - it}\nDone logging...\n\n")
    run = load(_log(tmp_path, "logging outputs to /tmp/x\n" + text))
    assert run.format == "printed" and run.frame["step"].to_list() == [0, 1, 2, 3]
    assert run.frame["reward_mean"].to_list() == [0.25, 10.25, 20.25, 30.25]
    assert run.frame["value_loss"].to_list() == [1000.0, 999.0, 998.0, 997.0]


def test_an_evaluation_line_at_the_step_joins_it(tmp_path: Path) -> None:
    # TF-Agents' DQN tutorial: loss lines every 500 steps, an average return every 1000
    text = "".join(f"    ## step = {s}: loss = 0.0{s}\n" + (f"    ## step = {s}: Average Return = {s / 100}\n"
                                                            if s % 1000 == 0 else "")
                   for s in range(500, 4001, 500))
    raw = printed.read(_log(tmp_path, text, "dqn.md"))
    assert raw.frame["step"].to_list() == list(range(500, 4001, 500))
    assert raw.frame["average_return"].to_list() == [None, 10.0, None, 20.0, None, 30.0, None, 40.0]
    assert raw.frame["loss"].to_list() == [float(f"0.0{s}") for s in range(500, 4001, 500)]


def test_an_evaluation_block_after_prose_joins_its_step(tmp_path: Path) -> None:
    # ManiSkill's PPO baseline: 'Evaluating', prose of its own, then one eval_<k>_mean=<v> line per metric
    lines = []
    for epoch in range(1, 9):
        lines.append(f"Epoch: {epoch}, global_step={(epoch - 1) * 100}")
        if epoch % 2 == 1:
            lines += ["Evaluating", "Initializing ContextualPandaStick...", "Evaluated 400 steps resulting in 8 episodes",
                      f"eval_return_mean={epoch / 10}", f"eval_success_once_mean={epoch / 100}"]
        lines.append(f"SPS: {1000 + epoch}")
    # after prose, three samples of a batch (a CS336 GRPO loop among its generations): not the step's
    lines += ["Generating samples for the batch...", "Here are a few rewards:  tensor([1., 0., 1.], device='cuda:1')"]
    raw = printed.read(_log(tmp_path, "\n".join(lines) + "\n", "ppo.log"))
    assert raw.frame.height == 8  # one row per epoch line
    assert raw.frame["eval_return_mean"].to_list() == [0.1, None, 0.3, None, 0.5, None, 0.7, None]
    assert raw.frame["eval_success_once_mean"].to_list()[::2] == [0.01, 0.03, 0.05, 0.07]
    assert "rewards_mean" not in raw.frame.columns and "here_are_a_few_rewards_mean" not in raw.frame.columns


def test_a_list_of_quoted_numbers_is_read_as_one(tmp_path: Path) -> None:
    # a hand-written dynamic-sampling GRPO loop prints formatted strings; its discarded groups' lines do not count
    text = "".join(f"[step {s}/20] correct=2/4 rewards=['0.80', '0.00', '0.01', '0.80'] loss=-0.0{s}\n"
                   f"  [attempt {s + 100}] SKIP (ALL_WRONG, rewards=[0.0, 0.0, 0.0, 0.0]) — resampling\n"
                   for s in range(1, 21))
    raw = printed.read(_log(tmp_path, text, "grpo.log"))
    assert raw.frame.height == 20
    assert raw.frame["rewards_mean"].to_list() == pytest.approx([0.4025] * 20)
    assert raw.frame["rewards_max"].to_list() == [0.8] * 20 and raw.frame["rewards_min"].to_list() == [0.0] * 20


def test_the_finest_counter_that_never_goes_back_counts_the_steps(tmp_path: Path) -> None:
    # DeepSpeed-Chat step 3 prints "epoch: 0|step: 33|ppo_ep: 1|act_loss: ...", then the reward on the next line
    block = ("epoch: 0|step: {s}|ppo_ep: 1|act_loss: 0.2|cri_loss: {c}|unsuper_loss: 0.0\n"
             "average reward score: {r}\n" + "-" * 40 + "\n")
    run = load(_log(tmp_path, "".join(block.format(s=s, c=s / 10, r=s - 1.5) for s in range(4))))
    assert run.frame["step"].to_list() == [0, 1, 2, 3]
    assert run.frame["reward_mean"].to_list() == [-1.5, -0.5, 0.5, 1.5]
    assert run.frame["value_loss"].to_list() == [0.0, 0.1, 0.2, 0.3]
    # another rank's output between a step line and its reward: the reward still joins its step
    interleaved = block.format(s=4, c=0.4, r=2.5).replace("average", "\n[INFO] Reducing dynamic loss scale\naverage")
    text = "".join(block.format(s=s, c=s / 10, r=s - 1.5) for s in range(4)) + interleaved
    assert load(_log(tmp_path, text, "ranks.log")).frame["reward_mean"].to_list() == [-1.5, -0.5, 0.5, 1.5, 2.5]
    # a step within its epoch restarts: the epoch still counts, the step is a metric
    text = "".join(f"Epoch: {e} Step: {s} return: {10 * e + s}\n" for e in range(3) for s in (0, 1))
    run = load(_log(tmp_path, text, "restarts.log"))
    assert run.frame["step"].to_list() == [0, 1, 2]
    assert run.frame["reward_mean"].to_list() == [0.5, 10.5, 20.5]


def test_real_deepspeed_chat_step3_log() -> None:
    path = corpus("h42-deepspeed-chat-ppo-opt13b-rlhf-learns/actor_opt-1.3b_critic_opt-350m_globalBatchSize64.log")
    lines = path.read_text().splitlines()
    steps = [int(ln.split("|")[1].split(":")[1]) for ln in lines if ln.startswith("epoch: ")]
    rewards = [float(ln.rsplit(":", 1)[1]) for ln in lines if ln.startswith("average reward score:")]
    run = load(path)
    assert run.frame["step"].to_list() == steps == list(range(len(rewards)))
    assert run.frame["reward_mean"].to_list() == rewards


def test_steps_that_begin_after_a_long_launch_preamble_are_found(tmp_path: Path) -> None:
    # eight ranks print their warnings before the first step: the step lines start past the first 64 KB
    from advcore.ingest import HEAD_BYTES
    warning = "The tokenizer class you load from this checkpoint is not the same type as the class.\n"
    preamble = warning * (2 * HEAD_BYTES // len(warning))
    block = "epoch: 0|step: {s}|ppo_ep: 1|act_loss: 0.2|cri_loss: 0.1\naverage reward score: {r}\n"
    p = _log(tmp_path, preamble + "".join(block.format(s=s, r=s / 4) for s in range(5)))
    assert detect(p) is printed.FORMAT
    assert load(p).frame["reward_mean"].to_list() == [0.0, 0.25, 0.5, 0.75, 1.0]
    # prose alone, however long, stays unreadable
    assert detect(_log(tmp_path, preamble, "prose.log")) is None


def test_real_deepspeed_chat_user_log_whose_steps_start_after_142_kb() -> None:
    path = corpus("h52-deepspeed-chat-ppo-opt13b-lora-user-sft-learns-slowly/training.log")
    text = path.read_text()
    assert text.find("epoch: 0|step: 0|") > 1 << 17
    rewards = [float(ln.rsplit(":", 1)[1]) for ln in text.splitlines() if ln.startswith("average reward score:")]
    run = load(path)
    assert run.frame["step"].to_list() == list(range(len(rewards))) and len(rewards) == 120
    assert run.frame["reward_mean"].to_list() == rewards


def test_real_rllab_ddpg_console_table() -> None:
    path = corpus("h43-rllab-ddpg-halfcheetah-plateau-healthy/bayesian_exploration")
    cells = [ln.split(" | ", 1)[1].split() for ln in path.read_text().splitlines() if " EDT | " in ln]
    epochs = [int(c[1]) for c in cells if len(c) == 2 and c[0] == "Epoch"]
    returns = [float(c[1]) for c in cells if len(c) == 2 and c[0] == "AverageReturn"]
    run = load(path)
    assert run.frame["step"].to_list() == epochs and (epochs[0], epochs[-1], len(epochs)) == (9, 1146, 1138)
    assert run.frame["reward_mean"].to_list() == returns


def test_a_header_decorated_with_an_emoji_and_a_block_of_dashed_pairs(tmp_path: Path) -> None:
    # a hand-written VLM GRPO loop logging with "%(asctime)s - %(name)s - %(levelname)s - %(message)s"
    pre = "2025-06-23 18:39:58,825 - integration.main_trainer - INFO - "
    text = "".join(f"{pre}\U0001f504 Iteration {i}/50\n{pre}\U0001f4ca Iteration {i} metrics:\n"
                   f"{pre}  - Policy Loss: 0.000000\n{pre}  - Average Reward: {0.7 + i / 100:.4f}\n" for i in (1, 2, 3))
    run = load(_log(tmp_path, text))
    assert run.frame["step"].to_list() == [1, 2, 3]
    assert run.frame["reward_mean"].to_list() == [0.71, 0.72, 0.73]


def test_real_hand_written_vlm_grpo_console() -> None:
    path = corpus("h47-handwritten-grpo-vlm-prompt-sd3-placeholder-update-dead/output.log")
    lines = path.read_text().splitlines()
    rewards = [float(ln.rsplit(":", 1)[1]) for ln in lines if ln.endswith(tuple("0123456789")) and "- Average Reward:" in ln]
    run = load(path)
    assert run.frame["step"].to_list() == list(range(1, 18)) and run.frame["reward_mean"].to_list() == rewards
    assert set(run.frame["entropy"].to_list()) == {1.0}  # the manifest: Entropy 1.000000 at all 17 iterations


def test_minimind_epoch_and_step_of_epoch_count_the_steps(tmp_path: Path) -> None:
    # jingyaogong/minimind trainer/train_grpo.py: "Epoch:[e/E](i/N), Reward: ..."; the step is (e - 1) N + i
    lines = [f"Epoch:[{e}/2]({i}/3), Reward: {e + i / 10:.4f}, KL_ref: 0.0010, Adv Std: 0.9258, Learning Rate: 0.0000003"
             for e in (1, 2) for i in (1, 2, 3)]
    run = load(_log(tmp_path, "Model Params: 30.03M\n" + "\n".join(lines) + "\n"))
    assert run.frame["step"].to_list() == [1, 2, 3, 4, 5, 6]
    assert run.frame["reward_mean"].to_list() == [1.1, 1.2, 1.3, 2.1, 2.2, 2.3]
    assert run.frame["kl"].to_list() == [0.001] * 6 and run.frame["adv_std"].to_list() == [0.9258] * 6


def test_real_minimind_grpo_log() -> None:
    path = corpus("h11-minimind-30m-grpo-rm-reward-kl-zero/grpo.log")
    lines = [ln for ln in path.read_text().splitlines() if ln.startswith("Epoch:[")]
    run = load(path)
    assert run.frame["step"].to_list() == list(range(1, 9752)) and len(lines) == 9751
    assert run.frame["reward_mean"].to_list() == [float(ln.split("Reward: ")[1].split(",")[0]) for ln in lines]


def test_full_width_punctuation_and_an_evaluation_after_training(tmp_path: Path) -> None:
    # the JoyRL book's notebooks: 步数 (steps) lines while training, then 回合 (episode) lines of a test
    # that counts from 1 again and prints more lines than training did
    train = "".join(f"步数：{200 * i}/1000，奖励：{10.0 * i:.2f}\n" for i in range(1, 6))
    test = "开始测试！\n" + "".join(f"回合：{i}/8，奖励：200.00\n" for i in range(1, 9))
    run = load(_log(tmp_path, "开始训练！\n" + train + "完成训练！\n" + test))
    assert run.frame["step"].to_list() == [200, 400, 600, 800, 1000]
    assert run.frame["reward_mean"].to_list() == [10.0, 20.0, 30.0, 40.0, 50.0]


def test_inner_updates_under_an_epoch_header_are_averaged(tmp_path: Path) -> None:
    # a Dou Dizhu PPO log: four '[Update k/4]' lines per '#### epoch: N ####' header, grouped pairs
    lines = []
    for epoch in range(4):
        lines.append(f"2025-08-10 20:58:17 - INFO - ##########  epoch: {epoch}  ##########")
        for k in range(1, 5):
            lines.append(f"2025-08-10 21:01:52 - INFO - [Update {k}/4] PolicyLoss=0.5 ValuePred(mean=0.8, std=0.4)"
                         f"KL={0.01 * k} Entropy={epoch + k} Adv(mean=-0.3, std={0.1 * k:.1f}) GradNorm(P=2.0, V=40.0)")
        lines.append(f"2025-08-10 21:01:54 - INFO - Agent SUCCESS Rate {0.2 * epoch}")
    run = load(_log(tmp_path, "\n".join(lines) + "\n"))
    assert run.frame["step"].to_list() == [0, 1, 2, 3]
    assert run.frame["entropy"].to_list() == pytest.approx([e + 2.5 for e in range(4)])  # mean of e+1 .. e+4
    assert run.frame["adv_std"].to_list() == pytest.approx([0.25] * 4)  # Adv(std=...), not ValuePred(std=...)
    assert run.frame["success_rate"].to_list() == pytest.approx([0.0, 0.2, 0.4, 0.6])
    assert run.frame["grad_norm"].to_list() == [2.0] * 4  # GradNorm(P=...): the policy's
    assert "update" not in run.frame.columns


def test_a_value_in_parentheses(tmp_path: Path) -> None:
    # TRL 0.4's gpt2-sentiment example adapted: the step's mean reward, then five samples with their own
    text = "".join(f"step {i} -- mean_reward: ({0.5 * i - 0.25}) -- decoding 5 rand samples:\n"
                   + "".join(f"\t{k}: Este filme ->  é bom -- Reward: {k - 2.0}\n" for k in range(5)) + "\n"
                   for i in range(4))
    run = load(_log(tmp_path, text))
    assert run.frame["step"].to_list() == [0, 1, 2, 3]
    assert run.frame["reward_mean"].to_list() == [-0.25, 0.25, 0.75, 1.25]


def test_a_bracketed_value_a_hash_counter_and_a_window_count_in_a_name(tmp_path: Path) -> None:
    # DRLND notebooks: a one-element numpy array printed as the score; '#N' counters; 'of last 100 episodes'
    arrays = "".join(f"episode = {i}, score = [{i * 1.5:.8f}], running for: 0h {i}m, time to go: 1h 2m\n"
                     for i in range(1, 5))
    run = load(_log(tmp_path, arrays))
    assert run.frame["step"].to_list() == [1, 2, 3, 4] and run.frame["reward_mean"].to_list() == [1.5, 3.0, 4.5, 6.0]
    hashes = " episode #64 : score = -0.00\n" + "".join(
        f" episode #{64 + 60 * i} : score = {0.05 * i:.2f}, mean score of last 100 episodes = {0.01 * i:.2f}\n"
        for i in range(1, 5))
    run = load(_log(tmp_path, hashes, "tennis.log"))
    assert run.frame["step"].to_list() == [64, 124, 184, 244, 304]
    assert run.frame["reward_mean"].to_list() == [0.0, 0.05, 0.1, 0.15, 0.2]
    assert "mean_score_of_last_100_episodes" in run.metadata["unmapped"]


def test_real_drlnd_notebooks_with_arrays_hash_counters_and_agent_statistics() -> None:
    import re

    for rel, pattern, names in [
        ("h87-drlnd-ddpg-unity-reacher-single-arm-steady-climb/Continuous_Control.ipynb",
         r"episode = (\d+), score = \[([-\d.e]+)\]", ("reward_mean",)),
        ("h91-ppo-gae-unity-tennis-slow-rise-solves/Tennis.ipynb", r" episode #(\d+) : score = ([-\d.]+)",
         ("reward_mean",)),
        ("h84-ddpg-unity-reacher20-fast-solve-plateau-near-max/Continuous_Control.ipynb",
         r"Episode (\d+) \(\d+ sec\)  -- \tMin: ([-\d.]+)\tMax: ([-\d.]+)\tMean: ([-\d.]+)",
         ("reward_min", "reward_max", "reward_mean")),
    ]:
        path = corpus(rel)
        text = "".join("".join(o.get("text", [])) for c in json.loads(path.read_text())["cells"]
                       for o in c.get("outputs", []))
        rows = re.findall(pattern, text)
        run = load(path)
        assert run.frame["step"].to_list() == [int(r[0]) for r in rows], rel
        for k, name in enumerate(names, start=1):
            assert run.frame[name].to_list() == [float(r[k]) for r in rows], (rel, name)


def test_real_joyrl_and_doudizhu_and_trl04_logs() -> None:
    path = corpus("h63-joyrl-book-a2c-sync-cartpole-learns-with-dips/第10章_A3C.ipynb")
    outputs = ["".join(o.get("text", [])) for c in json.loads(path.read_text())["cells"] for o in c.get("outputs", [])]
    train = [ln for t in outputs for ln in t.splitlines() if ln.startswith("步数：")]
    run = load(path)
    assert run.frame["step"].to_list() == [int(ln.split("：")[1].split("/")[0]) for ln in train]
    assert run.frame["reward_mean"].to_list() == [float(ln.rsplit("：", 1)[1]) for ln in train]

    log = corpus("h67-doudizhu-transformer-ppo-entropy-collapse-late-decline/exp2.log")
    text = log.read_text()
    run = load(log)
    rates = [float(ln.rsplit(" ", 1)[1]) for ln in text.splitlines() if "Agent SUCCESS Rate" in ln]
    assert run.frame["step"].to_list() == list(range(100))
    assert run.frame["success_rate"].to_list() == rates
    epoch7 = [float(ln.split("Entropy=")[1].split()[0]) for ln in text.split("epoch: 7 ")[1].split("epoch: 8 ")[0]
              .splitlines() if "Entropy=" in ln]
    assert len(epoch7) == 4 and run.frame["entropy"][7] == pytest.approx(sum(epoch7) / 4)

    nb = corpus("h61-trl04-ppo-gpt2-ptbr-imdb-sentiment-notebook-learns/GPT2 - RL(BERT)Feedback.ipynb")
    heads = [ln for c in json.loads(nb.read_text())["cells"] for o in c.get("outputs", [])
             for ln in "".join(o.get("text", [])).splitlines() if "-- mean_reward: (" in ln]
    run = load(nb)
    assert len(heads) == 127 and run.frame["reward_mean"].to_list() == [
        float(ln.split("(")[1].split(")")[0]) for ln in heads]


def test_a_run_resumed_with_its_counters_restarted_is_still_printed_progress(tmp_path: Path) -> None:
    # danielnbarbosa/angela's episode lines, a resumed run after the first: both segments are read, as phases
    line = "Episode {e:5d}   Avg: {r:8.2f}   BestAvg: {b:8}   σ: {s:8.2f}   |   Steps: {t:8d}  Secs: {e:6d}"
    first = [line.format(e=e, r=-5 + e / 1000, b="-inf" if e == 100 else "-4.00", s=0.5, t=50 * e)
             for e in (100, 200, 300, 400)]
    second = [line.format(e=e, r=e / 100, b="1.00", s=2.0, t=60 * e) for e in (100, 200, 300)]
    p = _log(tmp_path, "#### PG\n```\n" + "\n".join(first) + "\nLoaded: best.pth\n" + "\n".join(second) + "\n```\n",
             "flappybird.md")
    assert detect(p) is printed.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == [100, 200, 300, 400, 100, 200, 300]
    assert run.frame["phase"].to_list() == [0, 0, 0, 0, 1, 1, 1]
    assert run.frame["reward_mean"].to_list() == pytest.approx([-4.9, -4.8, -4.7, -4.6, 1.0, 2.0, 3.0])
    assert run.frame["return_std"].to_list() == [0.5] * 4 + [2.0] * 3
    # a step that goes back but not to the start is no restart: not printed progress
    q = _log(tmp_path, "\n".join(line.format(e=e, r=1.0, b="1.00", s=1.0, t=e) for e in (100, 300, 200, 400)) + "\n")
    assert not printed.sniff(q, q.read_text())


def test_real_angela_flappybird_results_file() -> None:
    path = corpus("h82-angela-reinforce-flappybird-learns/flappybird.md")
    avgs = [float(line.split("Avg:")[1].split()[0]) for line in path.read_text().splitlines()
            if line.startswith("Episode ")]
    run = load(path)
    assert run.format == "printed" and len(avgs) == 273  # the corpus entry's count: 123 + 150 lines
    assert run.frame["reward_mean"].to_list() == avgs


def test_a_label_before_an_arrow_qualifies_its_pairs(tmp_path: Path) -> None:
    # Madrona's PPO console: several 'Avg' per update, told apart by their label
    block = ("Update: {u}\n    Loss: 0.24, A: -0.00002, V: 0.5, E: -1.44\n"
             "    Rewards          => Avg: {r}, Min: -5.001e-03, Max:  4.996e-02\n"
             "    Returns          => Avg: 0.0002, σ: 0.99\n")
    p = _log(tmp_path, "".join(block.format(u=u, r=-0.001 * u) for u in (1, 10, 20, 30)))
    raw = printed.read(p)
    assert raw.frame["rewards_avg"].to_list() == pytest.approx([-0.001, -0.01, -0.02, -0.03])
    assert raw.frame["returns_avg"].to_list() == [0.0002] * 4 and "avg" not in raw.frame.columns


def test_a_value_named_for_its_step_and_a_hyphenated_counter(tmp_path: Path) -> None:
    # a TF1 TRPO loop: 'Global-step N --Accept update with ...' per accepted update and 'Total reward in
    # global step N: R' now and then; one counter, global_step
    p = tmp_path / "train.log"
    p.write_text(" [*] Building policy function...\n"
                 "Global-step 0 --Accept update with alpha=1.0, kl=2.0e-07, old=-3.82, new=-3.83\n"
                 "Global-step 3 --Accept update with alpha=1.0, kl=8.0e-08, old=-1.48, new=-1.49\n"
                 "Global-step 3 --Accept update with alpha=1.0, kl=6.0e-09, old=-1.48, new=-1.50\n"
                 "Global-step 5 --Accept update with alpha=0.5, kl=1.0e-07, old=0.78, new=0.77\n"
                 "Total reward in global step 5: 1.25\n"
                 "Global-step 6 --Accept update with alpha=1.0, kl=4.0e-10, old=0.66, new=0.65\n")
    run = load(p)
    assert run.format == "printed" and run.errors == ()
    assert run.frame["step"].to_list() == [0, 3, 5, 6]
    assert run.frame["kl"].to_list() == pytest.approx([2.0e-07, (8.0e-08 + 6.0e-09) / 2, 1.0e-07, 4.0e-10])
    assert run.frame["reward_mean"].to_list() == [None, None, 1.25, None]
    # a count inside a name is no step ('of the last 10 episodes'), nor a word that is not a counter
    assert printed._parse("Average reward of the last 10 episodes: 5.5")[0] == [
        ("average_reward_of_the_last_10_episodes", "5.5")]
    assert printed._parse("Reward in phase 2: 5.5")[0] == []


def test_a_value_followed_by_the_step_it_was_reached_at(tmp_path: Path) -> None:
    # the Keras actor-critic example's line, "running reward: {:.2f} at episode {}", every 10 episodes, then its
    # stop line
    lines = [f"running reward: {0.5 * n + 1:.2f} at episode {n}" for n in range(10, 80, 10)]
    p = tmp_path / "train.log"
    p.write_text("\n".join([*lines, "Solved at episode 71!"]) + "\n")
    run = load(p)
    expected = re.findall(r"^running reward: (\S+) at episode (\d+)$", p.read_text(), re.M)
    assert run.format == "printed" and run.frame["step"].to_list() == [int(n) for _, n in expected]
    assert run.frame["reward_mean"].to_list() == [float(v) for v, _ in expected]
    assert printed._parse("best score: 5.5 at level 3")[0][0] == ("best_score", "5.5")  # 'level' counts no step


def test_real_keras_actor_critic_notebook() -> None:
    path = corpus("h447-keras-actor-critic-example-cartpole-v1-running-reward-6-to-193-printed-every-10-episodes-"
                  "solved-at-episode-171-healthy/Actor_Critic.ipynb")
    text = "".join(t for c in json.loads(path.read_text())["cells"] for o in c.get("outputs", ())
                   for t in o.get("text", ()))
    printed_pairs = re.findall(r"running reward: (\S+) at episode (\d+)", text)
    run = load(path)
    assert len(printed_pairs) == 17 and run.steps == 17
    assert run.frame["reward_mean"].to_list() == [float(v) for v, _ in printed_pairs]
    assert run.frame["step"].to_list() == [int(n) for _, n in printed_pairs]


def test_real_tf1_trpo_console() -> None:
    path = corpus("h98-handwritten-tf1-trpo-pendulum-kl-1e-10-policy-frozen/train.log")
    text = path.read_text()
    accepted = re.findall(r"^Global-step (\d+) --Accept update with alpha=\S+, kl=(\S+),", text, re.M)
    rewards = re.findall(r"^Total reward in global step (\d+): (\S+)$", text, re.M)
    run = load(path)
    steps = {int(s) for s, _ in accepted} | {int(s) for s, _ in rewards}
    assert run.frame["step"].to_list() == sorted(steps)
    got = dict(zip(run.frame["step"].to_list(), run.frame["reward_mean"].to_list(), strict=True))
    assert [got[int(s)] for s, _ in rewards] == [float(v) for _, v in rewards]


def test_bare_progress_counter_after_a_tag(tmp_path: Path) -> None:
    # the line form of arvindcr4/tinker-rl-lab's GRPO logs: a run tag, 'N/TOTAL |', then pairs
    lines = ["[synth100] Run: 386273f4:train:0"]
    lines += [f"[synth100] {i:3d}/100 | loss={-i / 3:.4f} | reward={i / 8:.3f}" for i in range(1, 9)]
    lines += ["[synth100]   -> ckpt s8", "", "[synth100] DONE | last10=0.500 | run=386273f4:train:0"]
    p = _log(tmp_path, "\n".join(lines) + "\n")
    assert detect(p) is printed.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == list(range(1, 9))
    assert run.frame["reward_mean"].to_list() == pytest.approx([round(i / 8, 3) for i in range(1, 9)])
    # a fraction after a name is that name's value, not a step counter
    assert printed._parse("accuracy 3/4 | reward=0.5")[0][0] == ("accuracy", "3")


def test_bare_progress_counter_in_brackets(tmp_path: Path) -> None:
    # a from-scratch GRPO notebook's line: '[N/TOTAL]', then pairs (h34-handwritten-grpo-countdown-qwen3b-kl-runaway)
    lines = []
    for i in range(6):
        lines += [f"[{i}/1000]  loss: {-i / 3:.4f}, policy_loss: {-i / 3:.4f}, kl-penalty: {i / 50:.3f}, "
                  f"entropy:{87 - i:.2f}", "INFO Successfully reset prefix cache"]
    lines.append("[1/3] Loading shards")  # a counter before prose is no step
    p = _log(tmp_path, "\n".join(lines) + "\n")
    assert detect(p) is printed.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == list(range(6))
    assert run.frame["entropy"].to_list() == [87.0 - i for i in range(6)]


def test_real_notebook_with_bracketed_counters() -> None:
    """h34-handwritten-grpo-countdown-qwen3b-kl-runaway: a notebook whose stream outputs print
    '[N/1000]  loss: ..., entropy:...' per GRPO step, between vLLM's log lines; the entropies read off the
    outputs here."""
    path = corpus("h34-handwritten-grpo-countdown-qwen3b-kl-runaway/grpo.ipynb")
    text = "".join("".join(o.get("text", "")) for c in json.loads(path.read_text())["cells"]
                   for o in c.get("outputs", []))
    rows = re.findall(r"^\[(\d+)/1000\]  loss: \S+, .*entropy:(\S+)$", text, re.M)
    run = load(path)
    assert run.format == "notebook" and len(rows) == 28
    assert run.frame["step"].to_list() == [int(s) for s, _ in rows]
    assert run.frame["entropy"].to_list() == [float(e) for _, e in rows]
    assert rows[0] == ("0", "87.1328125")


def test_real_tinker_grpo_log() -> None:
    path = corpus("h111-tinker-grpo-qwen3-8b-xlam-tools-reward-floor/grpo_100_xlam.log")
    rows = re.findall(r"^\[xlam100\]\s+(\d+)/100 \| loss=\S+ \| reward=(\S+)$", path.read_text(), re.M)
    run = load(path)
    assert run.format == "printed" and len(rows) == 100
    assert run.frame["step"].to_list() == [int(s) for s, _ in rows]
    assert run.frame["reward_mean"].to_list() == [float(r) for _, r in rows]


def test_prime_rl_orchestrator_and_trainer_logs_are_one_run(tmp_path: Path) -> None:
    """prime-rl's step lines (loguru ``SUCCESS``): the orchestrator's ``Step N | Time: .. | Reward: ..``
    and the trainer's ``Step N | ... | Entropy: .. | Grad. Norm: .. | LR: ..`` (the f-strings of
    prime-rl's orchestrator and trainer loops, 2025-2026), read from one folder as one run."""
    from advcore.scan import ScanOptions, collect_paths, scan

    rewards = [round(0.2 + 0.01 * s, 4) for s in range(1, 31)]
    (tmp_path / "orchestrator.log").write_text("".join(
        f"12:00:{s:02d} SUCCESS Step {s} | Time: 10.00s | Reward: {r:.4f} | Seq. Length: 512.0 tokens/sample "
        f"| Max. Off-Policy Level: 1\n" for s, r in enumerate(rewards, 1)))
    (tmp_path / "trainer.log").write_text("".join(
        f"12:00:{s:02d} SUCCESS Step {s} | Time: 5.00s | Loss: 0.0120 | Entropy: {0.9 - 0.005 * s:.4f} | Mismatch KL: "
        f"0.0010 | Grad. Norm: {0.3 + s / 1000:.4f} | LR: 1.00e-06 | Throughput: 1200 tokens/s | MFU: 12.5% | "
        "Peak Mem.: 40.1 GiB\n" for s in range(1, 31)))
    (report,) = scan(collect_paths([str(tmp_path)]).files, ScanOptions(), jobs=1)
    frame = report.run.frame
    assert frame["step"].to_list() == list(range(1, 31))
    assert frame["reward_mean"].to_list() == rewards
    assert frame["grad_norm"].to_list() == pytest.approx([0.3 + s / 1000 for s in range(1, 31)])
    assert frame["entropy"][0] == pytest.approx(0.895)


def test_a_printed_tensor_of_rewards_gives_its_statistics(tmp_path: Path) -> None:
    """lsdefine/simple_GRPO prints no step counter, only ``time: 7.21s     rewards: tensor([...])`` per
    batch (between the prompts and answers it prints): each such line is a step, and the rewards'
    mean, std, min and max are read (oracle: statistics of the printed values)."""
    import numpy as np

    rng = np.random.default_rng(3)
    batches = [rng.choice([-1.0, 0.0, 1.0], size=8) for _ in range(12)]
    lines = []
    for b in batches:
        lines += ["Generating answers for the following inputs: ['q1', 'q2']", "Generated answers: ['a: 1', 'b']",
                  f"time: 7.21s     rewards: tensor([{', '.join(f'{v:.1f}' for v in b)}], device='cuda:0')"]
    run = load(_log(tmp_path, "\n".join(lines) + "\n", "grpo.log"))
    assert run.steps == 12
    assert run.frame["reward_mean"].to_list() == pytest.approx([b.mean() for b in batches])
    assert run.frame["reward_std"].to_list() == pytest.approx([b.std() for b in batches])
    assert run.frame["reward_min"].to_list() == [b.min() for b in batches]
    assert run.frame["reward_max"].to_list() == [b.max() for b in batches]


def test_a_qualifier_in_parentheses_and_a_timestep_header(tmp_path: Path) -> None:
    # the block form of Berkeley CS294 HW3's DQN console (2017): 'Timestep: N' heads each block
    blocks = [f"Timestep: {t}\nmean reward (100 episodes): {t / 1e4:.4f}\nbest mean reward: 1.8\n"
              f"episodes: {t // 200}\nexploration: 0.9\nelapsed time: 12.5 seconds (0.01 hours)\n"
              for t in range(60000, 130000, 10000)]
    p = _log(tmp_path, "task = Task<env_id=BreakoutNoFrameskip-v3>\n\n" + "\n".join(blocks))
    assert detect(p) is printed.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == list(range(60000, 130000, 10000))
    assert run.frame["reward_mean"].to_list() == [t / 1e4 for t in range(60000, 130000, 10000)]
    assert run.sources["reward_mean"] == "mean_reward_100_episodes"
    # a window that ends in a counter's word is a name, not a counter
    assert not printed.STEP_NAME.match("mean_reward_100_episodes")
    assert printed.STEP_NAME.match("total_episodes") and printed.STEP_NAME.match("timestep")


def test_real_cs294_dqn_breakout_console() -> None:
    path = corpus("h131-cs294-dqn-breakout-seed1-sudden-collapse-to-random-then-relearns/Breakout_s001.text")
    rows = re.findall(r"^Timestep: (\d+)\nmean reward \(100 episodes\): (\S+)$", path.read_text(), re.M)
    run = load(path)
    assert run.format == "printed" and len(rows) == 967
    assert run.frame["step"].to_list() == [int(t) for t, _ in rows]
    assert run.frame["reward_mean"].to_list() == [float(r) for _, r in rows]


def test_lapan_dqn_progress_lines(tmp_path: Path) -> None:
    # Deep RL Hands-On's DQN: '<frame>: done <games> games, mean reward <r>, eps <e>, speed <s> f/s'
    lines = [f"{237 * g}: done {g} games, mean reward {-21 + g / 10:.3f}, eps {1 - g / 100:.2f}, speed 412.5 f/s"
             for g in range(1, 9)]
    p = _log(tmp_path, "Creating environment ALE/Pong-v5\n" + "\n".join(lines) + "\n")
    assert detect(p) is printed.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == [237 * g for g in range(1, 9)]
    assert run.frame["reward_mean"].to_list() == pytest.approx([-21 + g / 10 for g in range(1, 9)])


def test_real_lapan_dqn_notebook() -> None:
    path = corpus("h133-lapan-ddqn-pong-300-episodes-epsilon-never-decays-never-learns/pong_pong_experiments.ipynb")
    text = "".join("".join(o.get("text", [])) for cell in json.loads(path.read_text())["cells"]
                   for o in cell.get("outputs", []))
    rows = re.findall(r"^(\d+): done \d+ games, reward (\S+), eps", text, re.M)
    run = load(path)
    assert len(rows) == 300
    assert run.frame["step"].to_list() == [int(f) for f, _ in rows]
    assert run.frame["reward_mean"].to_list() == [float(r) for _, r in rows]


def test_one_completion_that_reads_like_a_step_line_does_not_count_the_steps(tmp_path: Path) -> None:
    # lsdefine/simple_GRPO prints uncounted 'time: .. rewards: tensor([...])' lines and the model's
    # completions; one completion held '\\nIs it 0.8 or 0.2?' and later a 'name: 1', read as a step line
    # of step word 'nis_it' (h11-simplegrpo corpus run)
    lines = [f"time: 7.{i}s     rewards: tensor([-1., -1., {i / 10:.1f}, -1.])" for i in range(8)]
    lines.insert(3, "Generated answers: ['\\nIs it 0.8 or 0.2? odd_number: 1']")
    assert printed._step_word(printed._parse(lines[3])[0]) == "nis_it"
    p = _log(tmp_path, "\n".join(lines) + "\n")
    run = load(p)
    assert run.frame.height == 8 and run.frame["step"].is_sorted()
    assert run.frame["reward_max"].to_list() == pytest.approx([max(-1.0, i / 10) for i in range(8)])


def test_baselines_deepq_block_with_a_count_inside_a_name(tmp_path: Path) -> None:
    # baselines/deepq/deepq.py: logger.record_tabular('mean 100 episode reward', ...) between rules of '*'
    block = "{rule}\nsteps: {s}\nepisodes: {e}\nmean 100 episode reward: {r}\n% time spent exploring: {x}\n{rule}\n"
    text = "".join(block.format(rule="*" * 20, s=s, e=e, r=r, x=x)
                   for s, e, r, x in ((8111, 10, -20.8, 91), (17152, 20, -20.5, 83), (26000, 30, -19.9, 75)))
    p = tmp_path / "out.txt"
    p.write_text(text)
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [-20.8, -20.5, -19.9]
    assert run.sources["reward_mean"] == "mean_100_episode_reward"


def test_real_baselines_style_dqn_notebook() -> None:
    """h237-handwritten-dqn-pong-fixed-action-learns-minus-21-to-plus-18: 50 printed blocks, the 100-episode
    mean -20.8 at 8,111 steps and 18.1 at 895,127 (the hunter's first and last)."""
    run = load(corpus("h237-handwritten-dqn-pong-fixed-action-learns-minus-21-to-plus-18/Lab.ipynb"))
    assert run.steps == 50 and run.frame["step"][0] == 8111 and run.frame["step"][-1] == 895127
    assert run.frame["reward_mean"][0] == -20.8 and run.frame["reward_mean"][-1] == 18.1


def test_records_a_carriage_return_separates_on_one_line(tmp_path: Path) -> None:
    # print('\rEpisode {}\tFrame {} \tAverage100 Score: {:.2f}'.format(...), end='') after every episode and a
    # newline every 100 (0xsamgreen/IQN-and-Extensions' training.log, a survey file): each record is a step
    scores = [20.0 + (i % 7) for i in range(1, 251)]
    text = "Using  cpu\n" + "".join(
        f"\rEpisode {i}\tFrame {10 * i} \tAverage100 Score: {s:.2f}" + ("\n" if i % 100 == 0 else "")
        for i, s in enumerate(scores, start=1))
    p = tmp_path / "training.log"
    p.write_text(text)
    run = load(p)
    assert run.frame["step"].to_list() == list(range(1, 251))
    assert run.frame["reward_mean"].to_list() == scores and run.sources["reward_mean"] == "average100_score"
    # a counter that is not a whole number is named with its physical line (the third: two records before it)
    q = tmp_path / "bad.log"
    q.write_text("\n".join(f"Episode {i}\tScore: {i}.5" for i in range(1, 6)) + "\n\rEpisode 6.5\tScore: 1.0\n")
    assert [e.line for e in load(q).errors] == [6]


def test_a_learning_reward_over_the_last_episodes_is_the_reward(tmp_path: Path) -> None:
    # a Keras DQN on Breakout (NikolaMilev/DeepRL, a survey file): the training episodes' mean beside the
    # testing ones', the step on lines of its own
    lines = ["Built and compiled the network!"]
    for k in range(1, 8):
        lines += [f"Avg learning reward last 100 episodes: {0.9 + 0.05 * k:.4f}", f"Step {50000 * k}"]
        if k % 3 == 0:
            lines.append(f"Avg Q value: 0.08 Avg testing reward: {0.1 * k:.4f} Avg duration: 488.4")
    p = tmp_path / "training_output.txt"
    p.write_text("\n".join(lines) + "\n")
    run = load(p)
    assert run.sources["reward_mean"] == "avg_learning_reward_last_100_episodes"
    # a step's block is what follows its line: the mean printed after 'Step 50000' is step 50,000's
    assert run.frame["step"].to_list()[:3] == [50000, 100000, 150000]
    assert run.frame["reward_mean"].to_list()[:3] == [1.0, 1.05, 1.1]


def test_a_count_after_at_is_the_step(tmp_path: Path) -> None:
    # a hand-written SB3 evaluation callback's console (a Mario DQN study): '[eval @  10,000] reward= ...', the count
    # grouped by commas, a '±' before the evaluation's spread; a line's '@' elsewhere (an address) is no count
    p = tmp_path / "dqn.log"
    p.write_text("► [DQN_stage1-1_seed42] treinando (500,000 timesteps restantes, n_envs=1)\n"
                 "  [eval @  10,000] reward= -455.00± 0.00  completion=0%  max_x_avg=39\n"
                 "  [eval @  20,000] reward= +250.00± 0.00  completion=0%  max_x_avg=314\n"
                 "  [eval @ 1,030,000] reward=+1043.00± 0.00  completion=0%  max_x_avg=693\n"
                 "  mail me@host 3 times, reward= 9.0\n")
    run = load(p)
    assert run.format == "printed"
    assert run.frame["step"].to_list() == [10_000, 20_000, 1_030_000]
    assert run.frame["reward_mean"].to_list() == [-455.0, 250.0, 1043.0]


def test_pymarl_sacred_console_counts_t_env(tmp_path: Path) -> None:
    # EPyMARL's cout.txt (sacred): a 'Recent Stats | t_env: N | Episode: M' line, then tab-separated pairs; the
    # progress lines 't_env: N / T' between the blocks hold no other pair and are no steps
    block = ("[INFO 16:56:26] my_main Recent Stats | t_env:      {t} | Episode:       {e}\n"
             "ep_length_mean:          1000.0000\tepsilon:                   0.0500\tgrad_norm:                 {g}\n"
             "q_taken_mean:              0.1177\treturn_mean:               {r}\treturn_std:                0.4559\n\n"
             "[INFO 16:56:29] my_main t_env: {t1} / 500000\n"
             "[INFO 16:56:29] my_main Estimated time left: 33 minutes, 24 seconds. Time passed: 3 minutes, 45 seconds\n")
    p = tmp_path / "cout.txt"
    p.write_text("[INFO 16:52:40] pymarl Running command 'my_main'\n" + "".join(
        block.format(t=50_000 * k, e=50 * k, g=0.5 * k, r=0.25 * k, t1=50_000 * k + 1000) for k in range(1, 5)))
    run = load(p)
    assert run.trainer == "pymarl"
    assert run.frame["step"].to_list() == [50_000, 100_000, 150_000, 200_000]
    assert run.frame["reward_mean"].to_list() == [0.25, 0.5, 0.75, 1.0]
    assert run.frame["grad_norm"].to_list() == [0.5, 1.0, 1.5, 2.0]


def test_real_frame_counter_is_the_step() -> None:
    # an ECS 170 Pong DQN's nohup.out: '#Frame: 20000, Loss: 0.023345' then 'Last-10 average reward: -20.300000'
    path = corpus("h299-ecs170-handwritten-dqn-pong-pairwise-broadcast-td-loss-erases-pretrained-policy-pinned-minus-"
                  "20.8-1M-frames/nohup.out")
    text = path.read_text()
    frames = [int(f) for f in re.findall(r"#Frame: (\d+), Loss", text)]
    rewards = [float(r) for r in re.findall(r"Last-10 average reward: (-?[\d.]+)", text)]
    run = load(path)
    assert run.frame["step"].to_list() == frames and len(frames) == 99 and frames[0] == 20000
    assert run.frame["reward_mean"].to_list() == pytest.approx(rewards)


def test_a_percentage_is_read_as_a_share() -> None:
    # GuestAGuy/CS5180_RL_Project_Fetch results/SACHER.txt: "Episode 100 | Avg Reward: -23.51 | Success:  13.0% |
    # ..." every 100 episodes; the success rate is a share, 0 to 1, as every trainer's success_rate
    path = corpus("h394-handwritten-sac-her-fetchreach-relabeled-rewards-on-another-scale-success-50-69pct-then-q-"
                  "inflates-critic-loss-40-success-0-from-episode-4800/SACHER.txt")
    printed_shares = [float(m) / 100 for m in re.findall(r"Success:\s+([\d.]+)%", path.read_text())]
    run = load(path)
    assert run.sources["success_rate"] == "success" and len(printed_shares) == run.steps == 50
    assert run.frame["success_rate"].to_list() == pytest.approx(printed_shares)
    assert run.frame["success_rate"][0] == pytest.approx(0.13)


def test_an_episode_number_and_one_unnamed_value_is_the_episode_return(tmp_path: Path) -> None:
    # print(f"Episode {i}: {score}"): the one value per episode is its return; prose and named pairs are untouched
    p = _log(tmp_path, "cpu\n" + "".join(f"Episode {i}: {10.0 * i}\n" for i in range(1, 8)) + "Episode 8: solved\n")
    run = load(p)
    assert run.frame["step"].to_list() == list(range(1, 8))
    assert run.frame["reward_mean"].to_list() == [10.0 * i for i in range(1, 8)]
    named = load(_log(tmp_path, "".join(f"Episode {i}: epsilon: 0.{i}, score: {i}\n" for i in range(1, 6)), "b.log"))
    assert named.frame["reward_mean"].to_list() == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_real_rainbow_tutorial_notebook_prints_each_episode_return_unnamed() -> None:
    """h414-handwritten-dqn-per-plus-3-step-returns-cartpole-v0: the training cell prints 'Episode N: <return>' for
    82 episodes (a wget log and the device line before them); read against a regex over the cell's saved output."""
    path = corpus("h414-handwritten-dqn-per-plus-3-step-returns-cartpole-v0-rainbow-tutorial-learns-from-20-to-the-200-"
                  "cap-by-episode-28-and-holds-it-healthy/N-step.ipynb")
    text = "".join("".join(o.get("text", "")) for c in json.loads(path.read_text())["cells"] for o in c.get("outputs", []))
    printed_returns = [(int(n), float(v)) for n, v in re.findall(r"^Episode (\d+): ([\d.]+)$", text, re.MULTILINE)]
    assert len(printed_returns) == 82
    run = load(path)
    assert run.frame["step"].to_list() == [n for n, _ in printed_returns]
    assert run.frame["reward_mean"].to_list() == [v for _, v in printed_returns]
