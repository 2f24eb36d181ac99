from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from advcore.ingest import detect, load
from advcore.ingest.formats import csv_table

from tests._real import corpus, real

TABLE = (
    "Step,Training Loss,reward,reward_std,completions / mean_length,completions / clipped_ratio,"
    "kl,rewards / check_answer / mean,rewards / check_answer / std,rewards / fmt\r\n"
    "1,0.000000,-7.5,0.0,1846,1.0,0.15,-2.0,0.0,0.5\r\n"
    "2,-0.000000,-3.5,4.6,1737,0.5,,1.5,1.7,0.25\r\n"
)


def _dict_rows(path: Path) -> list[dict[str, str]]:
    """The rows of CSV ``path`` as the standard library reads them: the oracle of the real-file tests."""
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_notebook_table_with_display_names_and_crlf(tmp_path: Path) -> None:
    p = tmp_path / "table.csv"
    p.write_bytes(TABLE.encode())
    assert detect(p) is csv_table.FORMAT
    run = load(p)
    assert run.trainer == "trl" and not run.errors
    assert run.frame["step"].to_list() == [1, 2]
    assert run.frame["reward_mean"].to_list() == [-7.5, -3.5]
    assert run.frame["kl"].to_list() == [0.15, None]  # blank cell is null, not 0
    assert run.frame["truncated_frac"].to_list() == [1.0, 0.5]
    assert run.frame["reward/check_answer"].to_list() == [-2.0, 1.5]
    assert run.frame["reward/fmt"].to_list() == [0.5, 0.25]
    assert run.sources["response_length_mean"] == "completions / mean_length"


def test_tensorboard_csv_download_named_by_its_tag(tmp_path: Path) -> None:
    p = tmp_path / "run-ppo_1-tag-rollout_ep_rew_mean (2).csv"
    p.write_text("Wall time,Step,Value\n1689732655.4,25600,-0.79\n1689733959.7,51200,-0.78\n")
    run = load(p)
    assert run.metadata["tensorboard_tag"] == "rollout_ep_rew_mean" and run.metadata["tensorboard_run"] == "ppo_1"
    assert run.frame["step"].to_list() == [25600, 51200] and run.frame["reward_mean"].to_list() == [-0.79, -0.78]
    # without the download's file name, the value has no name
    q = tmp_path / "export.csv"
    q.write_text(p.read_text())
    assert "reward_mean" not in load(q).frame.columns
    # renamed by hand after its metric (h97 traffic-light: reward.csv, length.csv): the stem names it
    r = tmp_path / "reward.csv"
    r.write_text(p.read_text())
    renamed = load(r)
    assert renamed.metadata["tensorboard_tag"] == "reward" and "tensorboard_run" not in renamed.metadata
    assert renamed.frame["reward_mean"].to_list() == [-0.79, -0.78]


def test_real_tensorboard_csv_exports_renamed_by_hand() -> None:
    path = corpus("h97-sb3-ppo-traffic-light-final-learns-tb-csv/reward.csv")
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    run = load(path)
    assert run.frame["step"].to_list() == [int(r["Step"]) for r in rows]
    assert run.frame["reward_mean"].to_list() == [float(r["Value"]) for r in rows]


def test_pfrl_scores_txt(tmp_path: Path) -> None:
    # the columns of PFRL's evaluator (pfrl/experiments/evaluator.py) and SAC's statistics
    # (pfrl/agents/soft_actor_critic.py, get_statistics); the first row is before any update
    header = ("steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin\taverage_q1\taverage_q2\t"
              "average_q_func1_loss\taverage_q_func2_loss\tn_updates\taverage_entropy\ttemperature")
    rows = ["5000\t24\t1.7\t-1463.8\t-1477.8\t47.2\t-1398.6\t-1537.0\tnan\tnan\tnan\tnan\t0\tnan\t1.0",
            "10000\t48\t3.8\t-1426.9\t-1453.8\t84.1\t-1258.1\t-1516.3\t0.30\t-0.10\t26.7\t24.1\t1\t0.53\t0.9997"]
    p = tmp_path / "scores.txt"
    p.write_text(header + "\n" + "\n".join(rows) + "\n")
    run = load(p)
    assert run.trainer == "pfrl"
    assert run.frame["step"].to_list() == [5000, 10000]
    assert run.frame["reward_mean"].to_list() == [-1463.8, -1426.9]
    assert run.frame["return_std"].to_list() == [47.2, 84.1]
    assert run.frame["reward_max"].to_list() == [-1398.6, -1258.1]
    assert run.frame["value_mean"].to_list()[1] == 0.30 and run.frame["entropy"].to_list()[1] == 0.53


def test_real_pfrl_sac_scores_txt() -> None:
    path = corpus("h95-pfrl-sac-pendulum-solves-early/scores.txt")
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    run = load(path)
    assert run.trainer == "pfrl" and run.frame.height == len(rows) == 200
    assert run.frame["reward_mean"].to_list() == [float(r["mean"]) for r in rows]
    entropy = run.frame["entropy"].to_list()
    assert math.isnan(entropy[0]) and entropy[1:] == [float(r["average_entropy"]) for r in rows[1:]]


def test_real_tensorboard_csv_download() -> None:
    path = corpus("h75-sb3contrib-recurrentppo-cislunar-rendezvous-tb-csv-learns/run-.-tag-rollout_ep_rew_mean (2).csv")
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    run = load(path)
    assert run.frame["step"].to_list() == [int(r["Step"]) for r in rows]
    assert run.frame["reward_mean"].to_list() == [float(r["Value"]) for r in rows]


def test_bad_row_and_string_columns(tmp_path: Path) -> None:
    p = tmp_path / "m.csv"
    p.write_text("update,reward_mean,reason,ok\n1,0.5,not logged,True\n2,0.25\n3,0.75,\"a, b\",False\n")
    run = load(p, format="csv_table")  # the bad row stops detection from the head; the reader reports it
    assert run.frame["reward_mean"].to_list() == [0.5, 0.75]
    assert [(e.line, "expected 4 fields" in e.message) for e in run.errors] == [(3, True)]
    assert "reason" in run.metadata["non_numeric"]


def test_header_only_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "h.csv"
    p.write_text("step,reward\n")
    run = csv_table.read(p)
    assert run.errors and run.frame.height == 0


@pytest.mark.parametrize(
    ("rel", "steps", "first", "last"),
    [
        ("unsloth-llama32-3b-grpo-advanced/Advanced_Llama3_2_(3B)_GRPO_LoRA.ipynb.training_table.csv", 500, -0.65625, None),
        ("unsloth-qwen25-3b-grpo/Qwen2.5_(3B)-GRPO.ipynb.training_table.csv", 250, 0.125, None),
        ("unsloth-qwen3-8b-fp8-grpo/Qwen3_8B_FP8_GRPO.ipynb.training_table.csv", 100, -7.5, None),
        ("unsloth-qwen3-4b-grpo/Qwen3_(4B)-GRPO.ipynb.training_table.csv", 100, -7.5, None),
        ("unsloth-qwen3-4b-grpo-userrun/Qwen3_(4B)-GRPO.ipynb.training_table.csv", 46, -7.5, None),
        ("unsloth-qwen3-vl-8b-vision-grpo/Qwen3_VL_(8B)-Vision-GRPO.ipynb.training_table.csv", 60, 2.0, None),
        ("unsloth-phi4-14b-grpo/Phi_4_(14B)-GRPO.ipynb.training_table.csv", 100, 0.041667, None),
        ("unsloth-gptoss-20b-grpo-kernel/gpt-oss-(20B)-GRPO.ipynb.training_table.csv", 100, -0.407694, None),
        ("unsloth-llama31-8b-grpo-userrun/Llama3.1_(8B)-GRPO.ipynb.training_table.csv", 250, 0.0, None),
    ],
)
def test_real_notebook_tables(rel: str, steps: int, first: float, last: float | None) -> None:
    run = load(real(rel))
    assert run.format == "csv_table" and run.trainer == "trl" and not run.errors
    assert run.steps == steps and run.frame["step"][0] == 1 and run.frame["step"][-1] == steps
    assert run.frame["reward_mean"][0] == pytest.approx(first)
    assert run.has("reward_mean", "reward_std", "kl", "response_length_mean")


def test_real_fp8_table_is_mostly_zero_std() -> None:
    run = load(real("unsloth-qwen3-8b-fp8-grpo/Qwen3_8B_FP8_GRPO.ipynb.training_table.csv"))
    assert (run.frame["reward_std"] == 0).sum() == 87  # SOURCE.md: 87 of 100 steps
    assert run.has("truncated_frac", "reward/check_answer")


def test_real_project_csvs() -> None:
    run = load(real("trl-grpo-v2-math-rlvr-groups/update_metrics.csv"))
    assert run.steps == 128 and not run.errors
    assert run.frame["reward_mean"][0] == pytest.approx(0.36875)
    assert run.frame["kl"].null_count() == 128  # explicitly unavailable: null, never 0
    row99 = run.frame.filter(run.frame["step"] == 99)
    assert row99["grad_norm"][0] == 0.0 and row99["zero_variance_group_frac"][0] == 1.0
    groups = load(real("trl-grpo-v2-math-rlvr-groups/reward_group_statistics.csv"))
    assert groups.steps == 128
    assert groups.frame["zero_variance_group_frac"].mean() == pytest.approx(145 / 512)


def test_sb3_progress_csv(tmp_path: Path) -> None:
    # stable-baselines3's CSV logger: columns in its own order, the first row without train/ values
    p = tmp_path / "progress.csv"
    p.write_text("time/iterations,rollout/ep_rew_mean,time/total_timesteps,train/entropy_loss,train/approx_kl,"
                 "train/explained_variance\n"
                 "1,-20.2,2048,,,\n"
                 "2,-18.5,4096,-1.37,0.012,0.5\n"
                 "3,-15.0,6144,-1.1,0.008,0.9\n")
    run = load(p)
    assert run.trainer == "sb3" and run.frame["step"].to_list() == [2048, 4096, 6144]
    assert run.frame["reward_mean"].to_list() == [-20.2, -18.5, -15.0]
    assert run.frame["entropy"].to_list() == [None, 1.37, 1.1]  # SB3 logs minus the entropy
    assert run.frame["kl_step"].to_list() == [None, 0.012, 0.008]


def test_real_rllab_progress_csv_is_read_with_its_columns() -> None:
    path = corpus("h7-rllab-trpo-foot-hopper-learns-plateau/progress.csv")
    with path.open() as f:
        rows = list(csv.DictReader(f))
    run = load(path)
    assert run.trainer == "rllab" and run.frame["step"].to_list() == [int(r["Iteration"]) for r in rows]
    assert run.frame["reward_mean"].to_list() == pytest.approx([float(r["AverageReturn"]) for r in rows])
    assert run.frame["kl_step"].to_list() == pytest.approx([float(r["MeanKL"]) for r in rows])


def test_real_spinning_up_progress_txt_is_tab_separated() -> None:
    path = corpus("h10-spinup-ppo-hopper-learns/progress.txt")
    with path.open() as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert detect(path) is csv_table.FORMAT
    run = load(path)
    assert run.trainer == "spinup" and run.frame["step"].to_list() == [int(r["Epoch"]) for r in rows]
    assert run.frame["reward_mean"].to_list() == pytest.approx([float(r["AverageEpRet"]) for r in rows])
    assert run.frame["kl_step"].to_list() == pytest.approx([float(r["KL"]) for r in rows])


def test_a_tab_separated_table_with_a_comma_free_header(tmp_path: Path) -> None:
    p = tmp_path / "progress.txt"
    p.write_text("Epoch\tAverageEpRet\tKL\n0\t1.5\t0.01\n1\t2.5\t0.02\n2\t3.5\t0.03\n")
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [1.5, 2.5, 3.5] and run.frame["step"].to_list() == [0, 1, 2]


def test_sb3_monitor_file_is_one_row_per_episode_at_its_timesteps(tmp_path: Path) -> None:
    # stable_baselines3/common/monitor.py: '#' + a JSON header line, then r,l,t per finished episode
    p = tmp_path / "monitor.csv"
    p.write_text('#{"t_start": 1729549721.7, "env_id": "None"}\nr,l,t\n0.25,4,0.2\n-0.5,1,0.3\n1.5,10,0.9\n')
    run = load(p)
    assert run.trainer == "sb3_monitor" and run.frame["step"].to_list() == [4, 5, 15]
    assert run.frame["reward_mean"].to_list() == [0.25, -0.5, 1.5]
    p.write_text('#{"t_start": 1.0}\nr,l,t\n0.25,4,0.2\n-0.5,1\n1.5,10,0.9\n')
    assert [e.line for e in load(p).errors] == [4]  # the line counts the JSON header


def test_a_baselines_monitor_line_with_a_space_after_the_hash(tmp_path: Path) -> None:
    # OpenAI baselines' older Monitor: '# {...}' (a space, and one after the JSON too)
    p = tmp_path / "0.monitor.csv"
    p.write_text('# {"t_start": 1551811845.9, "env_id": "Hopper-v2"} \nr,l,t\n11.85,17,0.03\n4.45,8,0.04\n16.2,23,0.08\n')
    run = load(p)
    assert run.trainer == "sb3_monitor" and run.frame["step"].to_list() == [17, 25, 48]
    assert run.frame["reward_mean"].to_list() == [11.85, 4.45, 16.2]


def test_real_kostrikov_reference_monitor() -> None:
    """h241-ikostrikov-ppo-hopper-v2-reference-seed1-learns-to-3500: 2,401 episodes after a '# {' line."""
    path = corpus("h241-ikostrikov-ppo-hopper-v2-reference-seed1-learns-to-3500/0.monitor.csv")
    rows = list(csv.DictReader(path.read_text().splitlines()[1:]))
    run = load(path)
    assert run.frame["reward_mean"].to_list() == [float(r["r"]) for r in rows] and len(rows) == 2401
    steps = [int(r["l"]) for r in rows]
    assert run.frame["step"].to_list() == [sum(steps[:i + 1]) for i in range(len(steps))]


def test_numbers_separated_by_spaces(tmp_path: Path) -> None:
    # numpy.savetxt's default delimiter: step and score per line (jaxrl / IQL tmp/<seed>.txt), named by the file
    p = tmp_path / "returns.txt"
    p.write_text("5000 0.0\n10000 0.25\n15000  0.5\n20000 0.75\n")
    run = load(p)
    assert run.frame["step"].to_list() == [5000, 10000, 15000, 20000]
    assert run.frame["reward_mean"].to_list() == [0.0, 0.25, 0.5, 0.75]
    # words and spaces are a console's lines, not a table
    q = tmp_path / "log.txt"
    q.write_text("step 1 reward 0.5\nstep 2 reward 0.7\nstep 3 reward 0.9\n")
    assert not csv_table.sniff(q, q.read_text())


def test_real_iql_seed_file_of_step_and_success() -> None:
    """h242-lpd-iql-flow-primitives-antmaze-seed70-learns-to-80pct-success: 200 lines 'step success' in a
    file named by the seed: jaxrl's evaluation series (the success share on AntMaze)."""
    path = corpus("h242-lpd-iql-flow-primitives-antmaze-seed70-learns-to-80pct-success/70.txt")
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    run = load(path)
    assert run.frame["step"].to_list() == [int(float(r[0])) for r in rows] and len(rows) == 200
    assert run.frame["reward_mean"].to_list() == [float(r[1]) for r in rows]
    assert run.sources["reward_mean"] == csv_table.SEED_FILE_SERIES


def test_a_seed_among_the_settings_in_the_file_name(tmp_path: Path) -> None:
    # the run's settings in the name, the seed among them: still jaxrl's evaluation series
    for name in ("20230825-085942_s10_d1000_t0-05_nd5.txt", "hopper_seed3.txt", "run-seed_7-lr3e-4.txt"):
        p = tmp_path / name
        p.write_text("-20000 0.0\n-10000 4.0\n0 36.0\n10000 44.0\n")
        assert load(p).sources["reward_mean"] == csv_table.SEED_FILE_SERIES, name
    # a name without a seed token names its series: ``scores_v2`` is no alias, nothing is guessed
    p = tmp_path / "scores_v2.txt"
    p.write_text("1 0.5\n2 0.7\n3 0.9\n")
    assert "reward_mean" not in load(p).frame.columns


def test_real_iql_file_named_by_its_settings() -> None:
    """h256-iql-finetune-antmaze-umaze-1k-transitions-seed10-success-zero-throughout: 200 lines 'step
    score' (offline steps negative) in ``{date}_s10_d1000_t0-05_nd5.txt``; every score is 0.0."""
    path = corpus("h256-iql-finetune-antmaze-umaze-1k-transitions-seed10-success-zero-throughout/"
                  "20230825-085942_s10_d1000_t0-05_nd5.txt")
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    run = load(path)
    assert run.frame["step"].to_list() == [int(r[0]) for r in rows] and rows[0][0] == "-990000"
    assert run.frame["reward_mean"].to_list() == [float(r[1]) for r in rows] == [0.0] * 200


def test_a_table_of_one_column(tmp_path: Path) -> None:
    p = tmp_path / "training_log.csv"
    p.write_text("reward\n248.6\n18.9\n118.25\n")
    assert load(p).frame["reward_mean"].to_list() == [248.6, 18.9, 118.25]
    p.write_text("Some notes\n1\nsee above\n")
    assert load(p).steps == 0


def test_a_column_of_numbers_without_a_header_is_named_by_the_file(tmp_path: Path) -> None:
    import numpy as np

    returns = np.array([-20.0, -21.0, -19.0, -3.5, 12.0])
    p = tmp_path / "rewards.csv"
    np.savetxt(p, returns)  # numpy's default: one '%.18e' value per line, no header
    run = load(p)
    assert run.format == "csv_table" and run.frame["reward_mean"].to_list() == returns.tolist()
    assert run.frame["step"].to_list() == [1, 2, 3, 4, 5]
    # a stem that names no metric leaves the column unread, and says so
    q = tmp_path / "values.csv"
    np.savetxt(q, returns)
    assert "reward_mean" not in load(q).frame.columns and load(q).metadata["unmapped"] == ["values"]
    # two numbers are no table; a word among the numbers is no column of numbers
    q.write_text("1.0\n2.0\n")
    assert not csv_table.sniff(q, q.read_text())
    q.write_text("1.0\n2.0\nnan?\n4.0\n")
    assert not csv_table.sniff(q, q.read_text())


def test_real_headerless_rewards_of_a_pong_dqn() -> None:
    """h199-handwritten-double-dqn-pong-learns-to-win: ``numpy.savetxt`` of one return per episode."""
    import numpy as np

    path = corpus("h199-handwritten-double-dqn-pong-learns-to-win/rewards.csv")
    returns = np.loadtxt(path)
    run = load(path)
    assert run.steps == len(returns) == 520
    assert run.frame["reward_mean"].to_list() == returns.tolist()


def test_a_headerless_file_named_by_its_reward_and_a_tag(tmp_path: Path) -> None:
    # a file's name carries tags beside its reward word (``rewards_before.csv``): its one series is the
    # reward; a name that says a spread, a length or an evaluation is not
    rows = "".join(f"{i},{v}\n" for i, v in enumerate([970.4, 520.0, 2374.4, 2697.4]))
    for stem, read in (("rewards_before", True), ("returns_dqn_run2", True), ("reward_std", False),
                       ("eval_rewards", False), ("episode_lengths", False)):
        p = tmp_path / f"{stem}.csv"
        p.write_text(rows)
        run = load(p)
        assert ("reward_mean" in run.frame.columns) is read, stem
        if read:
            assert run.frame["reward_mean"].to_list() == [970.4, 520.0, 2374.4, 2697.4]
            assert run.metadata["reward_by_name"] == stem


def test_one_line_of_numbers_is_a_series(tmp_path: Path) -> None:
    # csv.writer.writerow(rewards): every episode's return on one line, named by the file
    values = [-10.0 - 0.01 * (i % 7) for i in range(40)]
    p = tmp_path / "rewards.csv"
    p.write_text(",".join(repr(v) for v in values) + "\r\n")
    assert detect(p) is csv_table.FORMAT
    run = load(p)
    assert run.frame["reward_mean"].to_list() == values and run.frame["step"].to_list() == list(range(1, 41))
    assert not run.errors
    # a short line of numbers is no series (a header of numbers, a config row)
    p.write_text("1,2,3\n")
    assert not csv_table.sniff(p, p.read_text())


def test_real_one_line_of_returns_of_a_car_racing_dqn() -> None:
    """h231-handwritten-dqn-multi-car-racing-episode-cut-at-minus-10-reward-pinned-never-learns: 750 returns
    on one line, each between -10.10 and -10.00."""
    path = corpus("h231-handwritten-dqn-multi-car-racing-episode-cut-at-minus-10-reward-pinned-never-learns/rewards.csv")
    values = [float(v) for v in path.read_text().strip().split(",")]
    run = load(path)
    assert len(values) == 750 and run.frame["reward_mean"].to_list() == values
    assert all(-10.11 <= v <= -10.0 for v in values)


def test_real_headerless_rewards_before_of_a_2048_dqn() -> None:
    """h223-2048-hand-written-dqn-one-update-per-episode-plateau: ``episode,total_reward`` per game in a
    file the author renamed ``rewards_before.csv``; 6,544 games, 0..6543."""
    path = corpus("h223-2048-hand-written-dqn-one-update-per-episode-plateau/rewards_before.csv")
    with path.open() as f:
        rows = list(csv.reader(f))
    run = load(path)
    assert run.frame["step"].to_list() == [int(r[0]) for r in rows] == list(range(6544))
    assert run.frame["reward_mean"].to_list() == [float(r[1]) for r in rows]


def test_headerless_table_of_episode_and_return(tmp_path: Path) -> None:
    import numpy as np

    # a loop appending f"{episode},{total},{steps},{eps}" per episode: the counter is the step, the
    # next column carries the file's name; a repeated value in the first row is no repeated name
    rows = [(0, 5.0, 5.0, 1.0), (1, 7.5, 10.0, 0.99), (2, 9.0, 12.0, 0.98), (3, 12.25, 30.0, 0.97)]
    p = tmp_path / "rewards.csv"
    p.write_text("".join(",".join(f"{v:g}" for v in r) + "\n" for r in rows))
    run = load(p)
    assert run.format == "csv_table" and not run.errors
    assert run.frame["step"].to_list() == [0, 1, 2, 3]
    assert run.frame["reward_mean"].to_list() == [r[1] for r in rows]
    assert run.unread["unmapped"] == ["column_3", "column_4"]
    # a first column that does not count up is no step: the rows are numbered, the first column named
    q = tmp_path / "second" / "rewards.csv"
    q.parent.mkdir()
    np.savetxt(q, np.array([[3.0, 1.0], [2.0, 1.0], [4.0, 2.0], [5.0, 2.0]]), delimiter=",")
    assert load(q).frame["step"].to_list() == [1, 2, 3, 4] and load(q).metadata["headerless"] == ["rewards", "column_2"]


def test_real_headerless_episode_log_of_a_keras_ddqn() -> None:
    """h188-keras-ddqn-pygame-race-car-plateau-then-full-episodes: ``episode,return,steps,epsilon`` per
    episode without a header; 434 episodes 0..433 (the hunter's count), returns compared with csv's."""
    path = corpus("h188-keras-ddqn-pygame-race-car-plateau-then-full-episodes/episode_rewards.csv")
    with path.open() as f:
        rows = list(csv.reader(f))
    run = load(path)
    assert run.frame["step"].to_list() == [int(r[0]) for r in rows] == list(range(434))
    assert run.frame["reward_mean"].to_list() == [float(r[1]) for r in rows]


def test_rllib_progress_csv_learner_stats() -> None:
    # ray/rllib result dicts flattened into progress.csv: per iteration, the policy's learner stats
    path = corpus("h29-rllib-ppo-deepcomp-central-critic-dead/progress.csv")
    with path.open() as f:
        rows = list(csv.DictReader(f))
    run = load(path)
    assert run.frame["step"].to_list() == [int(r["training_iteration"]) for r in rows]
    assert run.frame["reward_mean"].to_list() == [float(r["episode_reward_mean"]) for r in rows]
    assert run.frame["vf_explained_var"].to_list() == [
        float(r["info/learner/default_policy/vf_explained_var"]) for r in rows]


def test_a_step_counter_that_restarts_yields_to_one_that_never_does(tmp_path: Path) -> None:
    # a loop that calls SB3's learn() once per 500 timesteps: time/total_timesteps counts from 0 each call
    rows = ["time/total_timesteps,train/n_updates,rollout/ep_rew_mean"]
    rows += [f"{500 * (1 + i % 2)},{99 + 100 * i},{0.1 * i}" for i in range(8)]
    p = tmp_path / "progress.csv"
    p.write_text("\n".join(rows) + "\n")
    run = load(p)
    assert run.frame["step"].to_list() == [99 + 100 * i for i in range(8)]
    assert run.sources["step"] == "train/n_updates" and "phase" not in run.frame.columns
    # a counter that restarts with the logged step (a resumed run) is no better: the phases stay
    p.write_text("step,epoch,reward\n1,1,0.1\n2,1,0.2\n1,2,0.3\n2,2,0.4\n")
    assert load(p).frame["phase"].to_list() == [0, 0, 1, 1]


def test_real_sb3_progress_whose_timesteps_restart_every_learn_call() -> None:
    """checked: 4000 rows; time/total_timesteps 500, 1000, 500, ...; train/n_updates 99 .. 399999, +100 a row."""
    path = corpus("h39-sb3-a2c-breakout-entropy-collapse-plateau/progress.csv")
    with path.open() as f:
        updates = [int(float(r["train/n_updates"])) for r in csv.DictReader(f)]
    run = load(path)
    assert run.frame["step"].to_list() == updates and updates[0] == 99 and updates[-1] == 399999


def test_pandas_row_index_column_is_dropped_and_rows_numbered(tmp_path: Path) -> None:
    # what DataFrame.to_csv writes by default: an unnamed index column first
    p = tmp_path / "metrics_SAC.csv"
    p.write_text(",Reward,Actor Loss\n0,-3.0,0.0\n1,-1.5,0.2\n2,4.0,0.1\n")
    assert detect(p) is csv_table.FORMAT
    run = load(p)
    assert run.frame["step"].to_list() == [1, 2, 3] and run.frame["reward_mean"].to_list() == [-3.0, -1.5, 4.0]
    # an empty header cell elsewhere, or over numbers that are not row labels, is not pandas' index: no table
    p.write_text("Reward,,Actor Loss\n-3.0,0,0.0\n-1.5,1,0.2\n4.0,2,0.1\n")
    assert detect(p) is not csv_table.FORMAT
    p.write_text(",Reward\n0.5,-3.0\n-1,-1.5\n7,4.0\n")
    assert detect(p) is not csv_table.FORMAT


def test_pandas_row_labels_of_a_slice_or_of_joined_frames_are_an_index(tmp_path: Path) -> None:
    # df[5:].to_csv() keeps the labels 5, 6, 7; pd.concat of per-epoch frames repeats each frame's own
    p = tmp_path / "NDQN_train.csv"
    epochs, returns = (0, 0, 0, 1, 1, 1), [-21.0, -20.0, -18.0, -15.0, -9.0, -4.0]
    for index in (range(5, 11), (0, 1, 2, 0, 1, 2)):
        p.write_text(",Episode,Reward\n" + "".join(f"{i},{e},{r}\n" for i, e, r in zip(index, epochs, returns)))
        assert detect(p) is csv_table.FORMAT
        run = load(p)
        assert run.frame["step"].to_list() == list(range(1, 7)) and run.frame["reward_mean"].to_list() == returns


def test_real_keras_dqn_pong_csv_of_joined_epoch_frames() -> None:
    """checked: 2,169 games under 20 epochs; the unnamed index column repeats each epoch's number, as Episode does."""
    path = corpus("h425-keras-dqn-pongdeterministic-v4-4m-frames-csv-2169-games-minus-20.4-to-plus-20.7-solved-healthy/"
                  "NDQN_train.csv")
    rows = _dict_rows(path)
    run = load(path)
    assert run.errors == () and run.frame.height == len(rows) == 2169
    assert run.frame["reward_mean"].to_list() == [float(r["Reward"]) for r in rows]
    assert run.frame["step"].to_list() == list(range(1, 2170))


def test_real_hand_written_sac_pandas_csv() -> None:
    path = corpus("h53-handwritten-sac-edge-computing-dfaas-learns/metrics_SAC.csv")
    rows = _dict_rows(path)
    run = load(path)
    assert run.frame.height == len(rows) == 100
    assert run.frame["reward_mean"].to_list() == [float(r["Reward"]) for r in rows]


def test_real_cs294_dqn_logz_table() -> None:
    """CS294-112 HW3 DQN's logz table: environment steps in Timestep, the mean of the last 100 episodes."""
    path = corpus("h109-cs294-dqn-breakout-learns/log.txt")
    with path.open() as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    run = load(path)
    assert run.frame["step"].to_list() == [int(r["Timestep"]) for r in rows]
    assert run.frame["reward_mean"].to_list() == [float(r["MeanReward100Episodes"]) for r in rows]


def test_headerless_epoch_step_value_of_d3rlpy(tmp_path: Path) -> None:
    # d3rlpy's FileAdapter writes f"{epoch},{step},{value}" to one file per metric: the value is the
    # third column and the step the second, not the other way round
    p = tmp_path / "rollout_return.csv"
    p.write_text("1,1000,0.0\n2,2000,0.5\n3,3000,0.25\n4,4000,1.0\n")
    run = load(p)
    assert run.frame["step"].to_list() == [1000, 2000, 3000, 4000]
    assert run.frame["reward_mean"].to_list() == [0.0, 0.5, 0.25, 1.0]
    # a file named by a number (a seed) of ``step value`` rows is jaxrl's evaluation returns
    p = tmp_path / "42.txt"
    p.write_text("-200000 11.0\n-100000 8.0\n0 17.0\n100000 20.5\n")
    run = load(p)
    assert run.frame["step"].to_list() == [-200000, -100000, 0, 100000]
    assert run.frame["reward_mean"].to_list() == [11.0, 8.0, 17.0, 20.5]
    assert run.sources["reward_mean"] == csv_table.SEED_FILE_SERIES


def test_real_d3rlpy_rollout_return_of_an_awac_finetune() -> None:
    """h248-d3rlpy-awac-finetune-antmaze-medium-play-seed1-success-never-leaves-zero: 1,000 rows of
    ``epoch,step,value``, steps 1,000 to 1,000,000, the return 0 on 988 of them."""
    import numpy as np

    path = corpus("h248-d3rlpy-awac-finetune-antmaze-medium-play-seed1-success-never-leaves-zero/rollout_return.csv")
    table = np.loadtxt(path, delimiter=",")
    run = load(path)
    assert run.frame["step"].to_list() == table[:, 1].astype(int).tolist()
    assert run.frame["reward_mean"].to_list() == table[:, 2].tolist()
    assert (run.frame["reward_mean"] == 0).sum() == 988



def test_real_csv_of_printed_loss_tensors() -> None:
    """h246-handwritten-ppo-llm-agent-orchestrator-entropy-collapses-onto-per-step-bonus: a loop wrote
    ``str(loss)`` of tensors that still hold their graph (``"tensor(1.5836, grad_fn=<MeanBackward0>)"``);
    50 episodes, the entropy's values inside the wrapper."""
    import re

    path = corpus("h246-handwritten-ppo-llm-agent-orchestrator-entropy-collapses-onto-per-step-bonus/training_metrics.csv")
    with path.open() as f:
        rows = list(csv.DictReader(f))
    expected = [float(re.fullmatch(r"tensor\(([^,]+), grad_fn=<\w+>\)", r["entropy"])[1]) for r in rows]  # type: ignore[index]
    run = load(path)
    assert len(expected) == 50 and run.frame["entropy"].to_list() == expected
    assert expected[0] == 1.5836


def test_real_rlkit_progress_csv_of_a_cql_run() -> None:
    """h250-cql-d4rl-hopper-expert-seed0-bc-level-then-q-divergence-return-to-3: rlkit's progress.csv (120
    columns under trainer/, exploration/, evaluation/ and time/ prefixes, one row per epoch)."""
    path = corpus("h250-cql-d4rl-hopper-expert-seed0-bc-level-then-q-divergence-return-to-3/progress.csv")
    with path.open() as f:
        rows = list(csv.DictReader(f))
    run = load(path)
    assert run.trainer == "rlkit" and run.steps == len(rows) == 100
    assert run.frame["step"].to_list() == [int(r["Epoch"]) for r in rows]
    assert run.frame["reward_mean"].to_list() == [float(r["evaluation/Average Returns"]) for r in rows]
    assert run.frame["value_loss"].to_list() == [float(r["trainer/QF1 Loss"]) for r in rows]
    assert run.frame["entropy"].to_list() == [-float(r["trainer/Log Pis Mean"]) for r in rows]
    assert max(float(r["trainer/QF1 Loss"]) for r in rows) > 1e20  # the Q-function's divergence is in the log


def test_a_headerless_counter_that_starts_again_is_the_step(tmp_path: Path) -> None:
    # a second run appended to a loop's `episode,return` file (JayaVerma/Bipedal_Walker_V3_Project's reward_log.txt:
    # episodes 1 to 100, then 1 to 10,000): the counter is the step, its restart a new phase, the returns the series
    p = tmp_path / "reward_log.txt"
    returns = [float(-100 - i) for i in range(100)] + [float(-50 + i) for i in range(200)]
    p.write_text("".join(f"{e},{r}\n" for e, r in zip([*range(1, 101), *range(1, 201)], returns, strict=True)))
    run = load(p)
    assert run.frame["reward_mean"].to_list() == returns
    assert run.frame["phase"].n_unique() == 2
    # a column of whole-number returns that opens with its highest is no counter: it is read as the series
    q = tmp_path / "returns.txt"
    q.write_text("".join(f"{r},{n}\n" for r, n in zip([500, 20, 30, 15, 40, 10, 60], range(7), strict=True)))
    assert load(q).frame["reward_mean"].to_list() == [500, 20, 30, 15, 40, 10, 60]


def test_a_tensorboard_download_renamed_by_hand_is_named_by_its_file(tmp_path: Path) -> None:
    # "Wall time,Step,Value" saved under the run's own name: the file's words say what the value is
    p = tmp_path / "log_rainbow_deathmatch_20251215_AdaptiveMovementRewardWrapper.csv"
    p.write_text("Wall time,Step,Value\n1765850549.9,5080,8.03\n1765850612.8,15820,5.5\n1765850700.1,26000,6.0\n")
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [8.03, 5.5, 6.0] and run.frame["step"].to_list() == [5080, 15820, 26000]
    # a download named by its run alone (PPO_3.csv: SB3's run folder) says nothing of its value
    q = tmp_path / "PPO_3.csv"
    q.write_text(p.read_text())
    assert "reward_mean" not in load(q).frame.columns


def test_blank_lines_before_the_first_row_are_skipped(tmp_path: Path) -> None:
    # a writer that opens with a newline: the first row after it is the header (or, numbers, the first row)
    p = tmp_path / "progress.csv"
    p.write_text("\r\n\r\nstep,reward\r\n1,0.5\r\n2,0.75\r\n")
    assert load(p).frame["reward_mean"].to_list() == [0.5, 0.75] and not load(p).errors
    q = tmp_path / "reward_history.csv"
    scores = [-9900.0, -9880.0, -9299.0, -7000.0, -5000.0]
    q.write_text("\n" + "".join(f"{e},{r},{r},0.9\n" for e, r in enumerate(scores, 1)))
    assert load(q).frame["reward_mean"].to_list() == scores


def test_real_headerless_episode_log_after_a_blank_line_of_a_vectorman_dqn() -> None:
    """h264-handwritten-dqn-vectorman2-leaves-stuck-floor-then-plateaus-never-clears-level: a blank first
    line, then ``episode,score,moving average,epsilon`` per episode (CRLF, no header); 1,000 episodes, the
    score -9,900 (no point in a 10,000-step episode) in 98 of the first 100, compared with csv's reading."""
    path = corpus("h264-handwritten-dqn-vectorman2-leaves-stuck-floor-then-plateaus-never-clears-level/reward_history.csv")
    with path.open(newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    run = load(path)
    assert not run.errors
    assert run.frame["step"].to_list() == [int(r[0]) for r in rows] == list(range(1, 1001))
    assert run.frame["reward_mean"].to_list() == [float(r[1]) for r in rows]
    assert sum(1 for r in rows[:100] if float(r[1]) == -9900.0) == 98


def test_real_dist_entropy_column_of_an_ikostrikov_ppo_fork() -> None:
    """h210-ikostrikov-ppo-sprites-image-cnn-never-learns-value-loss-flat: a hand-written CSV of
    pytorch-a2c-ppo-acktr-gail's printed values; ``Dist Entropy`` (``dist.entropy().mean()``) is the policy's
    entropy, compared with csv's reading (about 2.84 nats at every update: the policy barely moves)."""
    path = corpus("h210-ikostrikov-ppo-sprites-image-cnn-never-learns-value-loss-flat/"
                  "CNN_PPO_0_distractors_2024-05-27_00-58-00.csv")
    rows = _dict_rows(path)
    run = load(path)
    assert run.frame["entropy"].to_list() == [float(r["Dist Entropy"]) for r in rows]
    assert run.sources["entropy"] == "Dist Entropy" and all(2.83 < float(r["Dist Entropy"]) < 2.85 for r in rows)


def test_real_comma_table_padded_with_tabs() -> None:
    """h271-tf-dqn-breakout-7m-steps-learns-steadily-to-37-bricks: yjhong89/DQN's writer pads each field
    with a tab before its comma and its rows drop the comma between episode.loss and epsilon; parsed independently by
    splitting each line on tabs and dropping the commas."""
    path = corpus("h271-tf-dqn-breakout-7m-steps-learns-steadily-to-37-bricks/train.csv")
    lines = path.read_text().splitlines()
    assert lines[0].split("\t") == ["Step", ",episode.rwd", ",episode.q", ",episode.loss", ",epsilon", ",time"]
    assert lines[1].count(",") == 4  # a row drops the comma before epsilon
    rows = [[f.strip(",") for f in ln.split("\t")] for ln in lines[1:] if ln.strip()]
    run = load(path)
    assert run.sources["reward_mean"] == "episode.rwd"
    assert run.frame["step"].to_list() == [int(r[0]) for r in rows]
    assert run.frame["reward_mean"].to_list() == [float(r[1]) for r in rows]
    assert len(rows) == 9173 and rows[0][:2] == ["39", "35"]


def test_padded_comma_table_keeps_every_field(tmp_path: Path) -> None:
    p = tmp_path / "log.csv"
    p.write_text("step\t,reward\t,loss\tepsilon\n1\t,2.5\t,0.1\t0.9\n2\t,3.5\t,0.2\t0.8\n3\t,4.5\t,0.3\t0.7\n")
    run = load(p)
    assert run.frame["step"].to_list() == [1, 2, 3]
    assert run.frame["reward_mean"].to_list() == [2.5, 3.5, 4.5]


def test_real_step_column_that_never_moves_yields_to_the_episode_count() -> None:
    """h273-keras-dqn-carrier-on-off-5-users-learns-best-switching-action-and-holds: one-step episodes, the
    log's Step is 0 on every one of its 5,000 rows; the Episode column counts them."""
    path = corpus("h273-keras-dqn-carrier-on-off-5-users-learns-best-switching-action-and-holds/training_log.csv")
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["Step"] for r in rows} == {"0"} and len(rows) == 5000
    run = load(path)
    assert run.sources["step"] == "Episode"
    assert run.frame["step"].to_list() == [int(r["Episode"]) for r in rows]
    assert run.frame["reward_mean"].to_list() == [float(r["Reward"]) for r in rows]


def test_a_renamed_tensorboard_export_is_named_by_its_folder(tmp_path: Path) -> None:
    # AsterisCrack/BipedRobot keeps its exported curves as data/Reward/ddpg.csv: the file's name says which
    # agent, the folder what it holds; a folder named for a run (many words) names nothing
    rows = "Wall time,Step,Value\n" + "".join(f"{1.7e9 + i},{1000 * (i + 1)},{i * 0.5}\n" for i in range(12))
    for folder in ("Reward", "Loss", "ppo-minigrid-doorkey-llm-critic-reward-floor"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "ddpg.csv").write_text(rows)
    run = load(tmp_path / "Reward" / "ddpg.csv")
    assert run.frame["step"].to_list() == [1000 * (i + 1) for i in range(12)]
    assert run.frame["reward_mean"].to_list() == [i * 0.5 for i in range(12)]
    assert run.metadata["reward_by_name"] == "Reward/ddpg"
    for folder in ("Loss", "ppo-minigrid-doorkey-llm-critic-reward-floor"):
        assert "reward_mean" not in load(tmp_path / folder / "ddpg.csv").frame.columns


def test_lessons_on_one_step_counter_are_phases(tmp_path: Path) -> None:
    # two curriculum parameters moving on at different steps: each move starts a phase; the steps never restart
    rows = ["step,Environment/Cumulative Reward,Environment/Lesson Number/a,Environment/Lesson Number/b"]
    lesson = [(0, 0)] * 4 + [(1, 0)] * 4 + [(1, 1)] * 4
    rows += [f"{10 * (i + 1)},{0.1 * i},{a},{b}" for i, (a, b) in enumerate(lesson)]
    path = tmp_path / "progress.csv"
    path.write_text("\n".join(rows) + "\n")
    run = load(path)
    assert run.frame["phase"].to_list() == [0] * 4 + [1] * 4 + [2] * 4
    assert run.frame["step"].to_list() == [10 * (i + 1) for i in range(12)]
    assert run.frame["lesson"].to_list() == [0.0] * 4 + [1.0] * 4 + [2.0] * 4
    # one lesson throughout is no curriculum moving on
    path.write_text("\n".join([rows[0], *(f"{10 * (i + 1)},{0.1 * i},2,0" for i in range(12))]) + "\n")
    assert "phase" not in load(path).frame.columns


def test_real_garage_progress_csv_is_read_as_garage() -> None:
    # garage's torch TRPO on MountainCarContinuous: its log_performance prefixes the batch's returns 'Evaluation/'
    path = corpus("h380-garage-torch-trpo-mountaincarcontinuous-100-epochs-140k-steps-return-minus-96-to-plus-75-reaches-"
                  "the-flag-from-epoch-11-healthy/progress.csv")
    rows = _dict_rows(path)
    run = load(path)
    assert run.trainer == "garage" and run.sources["reward_mean"] == "Evaluation/AverageReturn"
    assert run.frame["step"].to_list() == [int(r["TotalEnvSteps"]) for r in rows]
    assert run.frame["reward_mean"].to_list() == pytest.approx([float(r["Evaluation/AverageReturn"]) for r in rows])
    assert run.frame["kl_step"].to_list() == pytest.approx([float(r["GaussianMLPPolicy/KL"]) for r in rows])


def test_evaluation_keys_lead_the_unread_columns(tmp_path: Path) -> None:
    # a newcomer looked for verl's validation score among 47 unread keys listed alphabetically; held-out keys first
    p = tmp_path / "log.csv"
    p.write_text("step,reward,aaa/extra,eval/mean_ep_length,test/len,val-core/x/acc/mean@4,value_whatever\n"
                 "1,0.5,1,2,3,4,5\n2,0.6,1,2,3,4,5\n")
    unread = load(p).unread["unmapped"]
    assert unread == ["eval/mean_ep_length", "test/len", "val-core/x/acc/mean@4", "aaa/extra", "value_whatever"]
