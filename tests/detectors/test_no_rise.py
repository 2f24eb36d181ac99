"""DEAD_FROM_START's no-rise sign: a reward that never rose over a long run from its start is a warning
at stage R, led by any other finding. Synthetic fixtures whose windows numpy measures, and real runs
read from their raw files (not through our ingest)."""

from __future__ import annotations

import csv
import math
import re

import numpy as np

from advcore.detectors import REGISTRY, Finding, run_detectors
from advcore.diagnose import diagnose
from advcore.ingest import join_runs, load
from tests._real import corpus, events, real
from tests.detectors._fixtures import fired, make_run, one

POINTS = int(REGISTRY["DEAD_FROM_START"].resolve({})["no_rise_points"])
CONTROL_POINTS = int(REGISTRY["DEAD_FROM_START"].resolve({})["no_rise_points_control"])


def _flat(n: int, seed: int = 3) -> list[float]:
    """``n`` normal returns (mean -100, sd 20) whose late fifth is the early fifth reversed: the windows hold
    the same values, so neither their medians nor their means differ (the sign's bar is one standard error)."""
    x = np.random.default_rng(seed).normal(-100.0, 20.0, n)
    k = math.ceil(0.2 * n)
    x[-k:] = x[:k][::-1]
    return list(x)


def test_a_flat_noisy_reward_over_a_long_run_did_not_rise() -> None:
    reward = _flat(300)
    f = one(make_run({"reward_mean": reward}), "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.severity == "warn" and f.stage == "R"
    assert f.evidence["dead"] == "no_rise" and f.onset_step == 1 and f.evidence["points"] == 300
    k = math.ceil(0.2 * 300)  # the early and late windows: a fifth of the points each
    assert f.evidence["early_median"] == np.median(reward[:k])
    assert f.evidence["late_median"] == np.median(reward[-k:])
    assert f.evidence["start"] == np.median(reward[:5])


def test_fewer_points_than_the_knob_are_not_judged() -> None:
    run = make_run({"reward_mean": _flat(POINTS - 1)})
    assert one(run, "DEAD_FROM_START") is None
    assert isinstance(one(run, "DEAD_FROM_START", no_rise_points=POINTS - 1), Finding)


def test_a_control_task_is_judged_from_fewer_points_than_a_language_model() -> None:
    # a control policy starts from a random initialization; a language model's may hold a pretrained level
    assert CONTROL_POINTS < POINTS
    reward = _flat(CONTROL_POINTS)
    assert isinstance(one(make_run({"reward_mean": reward}, trainer="sb3"), "DEAD_FROM_START"), Finding)
    assert one(make_run({"reward_mean": reward}, trainer="trl"), "DEAD_FROM_START") is None
    assert one(make_run({"reward_mean": reward[:-1]}, trainer="sb3"), "DEAD_FROM_START") is None


def test_a_printed_log_counted_in_episodes_is_a_control_task(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # 'Episode 10, reward: -439.4': the counter makes the reward an episode's return, so the control task's bar holds;
    # the same lines counted in steps say nothing of what the reward is, and a language model's bar holds
    reward = _flat(CONTROL_POINTS + 10)
    for word, fires in (("Episode", True), ("Step", False)):
        path = tmp_path / f"{word}.log"
        path.write_text("".join(f"{word} {i + 1}, reward: {r:.3f}\n" for i, r in enumerate(reward)))
        run = load(path)
        assert run.format == "printed" and run.frame["reward_mean"].to_list() == [round(r, 3) for r in reward]
        assert isinstance(one(run, "DEAD_FROM_START"), Finding) is fires, word


def test_real_mlagents_return_pinned_at_its_start_for_100_summaries() -> None:
    # SindriTh/T-809-DATA-UNITY TestParams2: an ML-Agents PPO agent that never reaches its goal, the return near -59
    # from the first of 100 summaries to the last (1M steps); fewer points than a language model's run needs
    path = corpus("h409-mlagents-ppo-movetogoal-obstacle-testparams2-return-pinned-at-minus-59-for-1m-steps-no-goal-"
                  "reached-never-learns/events.out.tfevents.1698508297.PC.13272.0")
    values = [e.value for e in events(path).Scalars("Environment/Cumulative Reward")]
    assert CONTROL_POINTS <= len(values) == 100 < POINTS
    k = math.ceil(0.2 * len(values))
    run = load(path)
    f = one(run, "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.evidence["dead"] == "no_rise" and f.evidence["points"] == 100
    assert f.evidence["early_median"] == np.median(values[:k]) and f.evidence["late_median"] == np.median(values[-k:])
    assert diagnose(run, *run_detectors(run)).headline == "DEAD_FROM_START"


def test_real_a_start_learned_in_its_first_summaries_that_is_lost_is_no_never_learning() -> None:
    # nilvng's roguelike scavenger (state-sensor7): 55 at the first summary, 129 at the third, then a slide to about
    # 37 for the last 800k steps while the entropy collapses: what fell was learned, so the no-rise sign keeps quiet
    # and the entropy collapse leads
    path = corpus("h419-mlagents-ppo-roguelike-scavenger-state-sensor7-peaks-129-level-10-at-30k-entropy-1.19-to-0.02-"
                  "return-falls-to-37-level-5-for-800k-steps/events.out.tfevents.1686109159.Nil-Nguyen.local.62433.0")
    values = [e.value for e in events(path).Scalars("Environment/Cumulative Reward")]
    start = float(np.median(values[:5]))
    assert values[0] < 0.6 * start and max(values[:5]) > 1.2 * start  # the first summaries rose
    k = math.ceil(0.2 * len(values))
    assert np.median(values[-k:]) < 0.5 * start  # and the run fell far below them
    run = load(path)
    assert one(run, "DEAD_FROM_START") is None
    assert diagnose(run, *run_detectors(run)).headline == "ENTROPY_COLLAPSE"


def test_a_rise_of_the_windows_of_the_first_window_or_of_the_mean_is_a_rise() -> None:
    rng = np.random.default_rng(11)
    noise = rng.normal(0.0, 20.0, 300)
    slow = noise + np.linspace(-100.0, -80.0, 300)  # a slow climb the windows' medians show
    assert np.median(slow[-60:]) - np.median(slow[:60]) > 3 * 20.0 * 1.2533 * math.sqrt(2 / 60)
    early = noise + np.concatenate([np.linspace(-200.0, -100.0, 20), np.full(280, -100.0)])  # inside the first window
    # a bimodal return whose median stays at its floor while the share of successes grows (HER tasks)
    success = rng.random(300) < np.linspace(0.1, 0.45, 300)
    bimodal = np.where(success, rng.uniform(-30.0, 0.0, 300), -50.0)
    assert np.median(bimodal[:60]) == np.median(bimodal[-60:]) == -50.0
    for reward in (slow, early, bimodal):
        assert one(make_run({"reward_mean": list(reward)}), "DEAD_FROM_START") is None


def test_a_resumed_log_is_not_judged() -> None:
    # logged every step from step 101: the first 100 steps, and whatever they learned, are not in the log
    reward = _flat(300)
    assert one(make_run({"reward_mean": reward}, steps=list(range(101, 401))), "DEAD_FROM_START") is None
    assert isinstance(one(make_run({"reward_mean": reward}, steps=list(range(5, 305))), "DEAD_FROM_START"), Finding)


def test_any_other_finding_leads_the_no_rise_sign() -> None:
    # flat at the floor 0 with rare excursions: REWARD_FLOOR says why nothing rose, and leads
    rng = np.random.default_rng(2)
    reward = np.where(rng.random(300) < 0.05, 0.5, 0.0)
    run = make_run({"reward_mean": list(reward)})
    findings, not_evaluable = run_detectors(run)
    ids = [f.id for f in findings if f.severity in ("warn", "error")]
    assert "REWARD_FLOOR" in ids
    verdict = diagnose(run, findings, not_evaluable)
    assert verdict.findings[0].id != "DEAD_FROM_START"


def test_real_pendulum_run_that_never_learns() -> None:
    """h20-ppg-pendulum-never-learns: 639 episode returns, a median of -1212 over the first fifth and -1322 over
    the last (numpy on the raw file); the verdict is lost at stage R with DEAD_FROM_START at the first episode."""
    path = corpus("h20-ppg-pendulum-never-learns/rewards.txt")
    returns = [float(m.group(1)) for m in re.finditer(r"Reward\s+(-?[\d.]+)", path.read_text())]
    k = math.ceil(0.2 * len(returns))
    run = load(path)
    f = fired(run)["DEAD_FROM_START"]
    assert f.evidence["dead"] == "no_rise" and f.evidence["points"] == len(returns) == 639
    assert f.evidence["early_median"] == np.median(returns[:k])
    assert f.evidence["late_median"] == np.median(returns[-k:])
    verdict = diagnose(run, *run_detectors(run))
    assert verdict.status == "lost" and verdict.stage == "R" and verdict.headline == "DEAD_FROM_START"
    assert "No learning shows in 639 logged steps" in verdict.summary


def test_real_hopper_that_learned_in_its_first_iterations_stays_quiet() -> None:
    """h7-rllab-trpo-foot-hopper-learns-plateau: AverageReturn 121 at iteration 0, a median above 200 over
    iterations 40-60, then a plateau near 178: the rise is inside the first window, the run is healthy."""
    path = corpus("h7-rllab-trpo-foot-hopper-learns-plateau/progress.csv")
    returns = [float(r["AverageReturn"]) for r in csv.DictReader(path.read_text().splitlines())]
    assert returns[0] < 125 and np.median(returns[40:60]) > 200
    assert "DEAD_FROM_START" not in fired(load(path))


def test_real_resumed_verl_run_at_its_plateau_stays_quiet() -> None:
    """verl-ppo-qwen7b-gsm8k-resumed: the console begins at step 101 (a resumed run, SOURCE.md: a saturated
    plateau at 0.95, nothing left to learn)."""
    path = real("verl-ppo-qwen7b-gsm8k-resumed/verl_demo.log")
    steps = [int(s) for s in re.findall(r" step:(\d+) - global_seqlen", path.read_text())]
    assert min(steps) == 1 + 100 and len(set(steps)) >= POINTS
    run = load(path)
    assert "DEAD_FROM_START" not in fired(run)
    verdict = diagnose(run, *run_detectors(run))
    assert verdict.status == "quiet"
    # said as the plateau near its ceiling it is (a newcomer read "no learning shows" as a failure), with the
    # validation score beside it: medians of the last fifth of critic/score/mean, regexes over the console
    text = path.read_text(errors="replace")
    scores = [float(v) for v in re.findall(r" step:\d+ - .*?critic/score/mean:([\d.]+)", text)]
    late = float(np.median(scores[-math.ceil(0.2 * len(scores)):]))
    assert f"holding a median of {late:.4g} late" in verdict.summary and "plateau near the ceiling" in verdict.summary
    val = re.findall(r" step:(\d+) - .*?val-core/openai/gsm8k/reward/mean@1:([\d.]+)", text)
    assert f"the validation score went from {float(val[0][1]):.4g} at step {val[0][0]}" in verdict.summary


def test_a_reward_that_did_not_rise_far_below_its_ceiling_is_no_plateau() -> None:
    # a 0/1 score whose batch mean sits at 0.4 while single samples reach 1: no learning shows, no plateau
    n = 60
    run = make_run({"reward_mean": [0.4 + 0.01 * ((i * 7) % 5 - 2) for i in range(n)], "reward_max": [1.0] * n,
                    "reward_min": [0.0] * n})
    verdict = diagnose(run, *run_detectors(run))
    assert verdict.status == "quiet" and "plateau near the ceiling" not in verdict.summary
    high = make_run({"reward_mean": [0.95 + 0.01 * ((i * 7) % 5 - 2) for i in range(n)], "reward_max": [1.0] * n,
                     "reward_min": [0.0] * n})
    assert "plateau near the ceiling" in diagnose(high, *run_detectors(high)).summary


def test_real_pendulum_that_fell_below_its_start_is_dated_by_the_change_down() -> None:
    """h171-handwritten-cacla-pendulum-collapses-below-random-and-stays: episode returns near -1,300 at first,
    near -1,600 from about episode 200 on. The onset is the least-squares change down of the returns
    (numpy over every split), not episode 0."""
    path = corpus("h171-handwritten-cacla-pendulum-collapses-below-random-and-stays/output.log")
    found = re.findall(r"Episode: (\d+), .*Reward: (-?[\d.]+)", path.read_text())
    episodes, returns = [int(e) for e, _ in found], np.array([float(r) for _, r in found])
    n = len(returns)
    cum = np.cumsum(returns)[:-1]
    k = np.arange(1, n)
    diff = cum / k - (returns.sum() - cum) / (n - k)
    stat = np.where(diff > 0, k * (n - k) / n * diff ** 2, -1.0)
    change = int(np.argmax(stat)) + 1
    f = fired(load(path))["DEAD_FROM_START"]
    assert f.evidence["dead"] == "no_rise" and f.evidence["fell"] is True
    assert f.onset_step == episodes[change] and 100 < f.onset_step < 300
    # a printed log counted in episodes is a control task's: the remedies are an environment's
    assert "it fell from" in f.message and f.what_to_try[0].startswith("Run the environment with a random policy")


def test_real_a_success_rate_that_rose_is_learning_whatever_the_return_did() -> None:
    """h249-handwritten-dueling-ddqn-grid-navigation-return-peaks-ep374-then-falls-2-7x: the return's median
    falls (the failed episodes collect ever larger revisit penalties) while the share of episodes that reach
    the goal rises from a third to seven tenths: the agent learned, so no "no learning" warning."""
    path = corpus("h249-handwritten-dueling-ddqn-grid-navigation-return-peaks-ep374-then-falls-2-7x/training_metrics.csv")
    with path.open() as f:
        rows = list(csv.DictReader(f))
    success = [r["success"] == "True" for r in rows]
    tenths = [sum(success[i:i + 100]) / 100 for i in range(0, 1000, 100)]
    assert len(rows) == 1000 and tenths[0] == 0.34 and max(tenths) == 0.70
    returns = [float(r["reward"]) for r in rows]
    assert np.median(returns[-200:]) < np.median(returns[:200])
    assert one(load(path), "DEAD_FROM_START") is None
    # the same return with the success rate left out warns
    run = load(path)
    assert isinstance(one(make_run({"reward_mean": run.frame["reward_mean"].to_list()}), "DEAD_FROM_START"), Finding)


def test_real_mean_that_rose_by_a_twentieth_of_its_spread_did_not_rise() -> None:
    """h273-handwritten-dqn-carrier-on-off-reward-independent-of-action-10k-episodes-flat: a DQN whose reward
    does not depend on its action, 10,000 episodes. The late fifth's mean lies 1.6 standard errors above the
    early fifth's (2,000 episodes each), a twentieth of their spread: no rise. A rise of a fifth of the spread
    on the same windows is one."""
    path = corpus("h273-handwritten-dqn-carrier-on-off-reward-independent-of-action-10k-episodes-flat/"
                  "training_rewards.csv")
    with path.open(newline="") as fh:
        reward = np.array([float(r[0]) for r in csv.reader(fh)])
    k = math.ceil(0.2 * len(reward))
    early, late = reward[:k], reward[-k:]
    spread = math.sqrt((early.var() + late.var()) / 2)
    rise = late.mean() - early.mean()
    assert len(reward) == 10000 and spread * math.sqrt(2 / k) < rise < 0.1 * spread
    f = one(load(path), "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.severity == "warn" and f.evidence["dead"] == "no_rise"
    lifted = np.concatenate([reward[:-k], late + 0.2 * spread])
    assert one(make_run({"reward_mean": list(lifted)}), "DEAD_FROM_START") is None


def test_a_self_play_rating_that_rose_is_learning_a_zero_sum_return_cannot_show() -> None:
    # in a zero-sum self-play game one side's win is the other's loss: the return stays flat however much is learned
    zero_sum = _flat(300)
    climbing = list(np.linspace(1200.0, 1500.0, 300) + np.random.default_rng(4).normal(0.0, 10.0, 300))
    assert isinstance(one(make_run({"reward_mean": zero_sum}), "DEAD_FROM_START"), Finding)
    assert one(make_run({"reward_mean": zero_sum, "elo": climbing}), "DEAD_FROM_START") is None
    stuck = list(np.full(300, 1200.0) + np.random.default_rng(4).normal(0.0, 10.0, 300))
    assert isinstance(one(make_run({"reward_mean": zero_sum, "elo": stuck}), "DEAD_FROM_START"), Finding)


def test_real_mlagents_poca_self_play_whose_elo_climbs_is_quiet() -> None:
    # alidenewade/SoccerTwos (the Hugging Face course's POCA self-play): POCA pays only the group (each agent's own
    # return is 0 at every summary), the group's return stays near -0.1 (one team's goal is the other's loss) while
    # Self-play/ELO climbs
    path = corpus("h304-mlagents-poca-selfplay-soccertwos-hf-course-slow-start-scores-only-in-last-10pct-5m/"
                  "events.out.tfevents.1730759620.ali.1222.0")
    acc = events(path)
    own = [e.value for e in acc.Scalars("Environment/Cumulative Reward")]
    group = [e.value for e in acc.Scalars("Environment/Group Cumulative Reward")]
    elo = [e.value for e in acc.Scalars("Self-play/ELO")]
    assert set(own) == {0.0} and np.median(elo[-len(elo) // 5:]) > np.median(elo[:len(elo) // 5]) + 20
    run = load(path)
    assert run.sources["reward_mean"] == "Environment/Cumulative Reward + Environment/Group Cumulative Reward"
    assert run.frame["reward_mean"].drop_nulls().to_list() == [a + b for a, b in zip(own, group, strict=True)]
    findings, _ = run_detectors(run)
    assert not [f for f in findings if f.severity in ("warn", "error")]


def _below_start(drop: float, n: int = 300, noise: float = 0.05, seed: int = 5) -> list[float]:
    """Five first points near 0, then a level ``drop`` noises below them that creeps up by 1.5 noises: its late
    median lies above the early one (so it "rose"), but no level comes back to where the run started."""
    rng = np.random.default_rng(seed)
    start = list(rng.normal(0.0, noise, 5))
    low = -(drop + 1.5) * noise
    return start + list(np.linspace(low, low + 1.5 * noise, n - 5) + rng.normal(0.0, noise, n - 5))


def test_a_reward_below_its_start_for_the_whole_run_never_rose() -> None:
    f = one(make_run({"reward_mean": _below_start(7.0)}), "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.evidence["dead"] == "no_rise" and f.evidence["fell"] is True
    assert "fell from where it started and never came back" in f.message
    noise = f.evidence["noise"]
    assert 5 * noise < f.evidence["start"] - f.evidence["late_median"] <= 10 * noise
    # a start a few noises above the rest is a lucky start (never-learners drift 3 to 5 noises), and one far above
    # it is a collapse, UPDATE_UNSTABLE's: neither is this sign's
    assert one(make_run({"reward_mean": _below_start(3.0)}), "DEAD_FROM_START") is None
    assert one(make_run({"reward_mean": _below_start(20.0)}), "DEAD_FROM_START") is None
    came_back = _below_start(7.0)[:200] + list(np.random.default_rng(6).normal(0.02, 0.05, 100))
    assert one(make_run({"reward_mean": came_back}), "DEAD_FROM_START") is None


def test_a_short_course_that_fell_from_its_start_is_left_to_the_collapse_detectors() -> None:
    # fewer than SHORT_COURSE points: an early window of a few points cannot show a rise before the fall
    from advcore.detectors.dead_from_start import SHORT_COURSE

    for n, judged in ((SHORT_COURSE, True), (SHORT_COURSE - 1, False)):
        f = one(make_run({"reward_mean": _below_start(7.0, n=n)}, trainer="sb3"), "DEAD_FROM_START")
        assert isinstance(f, Finding) is judged
    # a flat short course still never rose
    flat = make_run({"reward_mean": _flat(SHORT_COURSE - 1)}, trainer="sb3")
    assert isinstance(one(flat, "DEAD_FROM_START"), Finding)


def test_on_a_short_course_any_other_finding_leads_the_no_rise_sign() -> None:
    # 40 summaries whose return never rose while the entropy falls from the 25th: its early window of 8 points holds
    # no other onset, and the entropy's collapse says more than "no learning"
    reward = _flat(40)
    entropy = [1.4] * 24 + list(np.geomspace(1.4, 0.01, 16))
    run = make_run({"reward_mean": reward, "entropy": entropy}, trainer="sb3")
    findings, not_evaluable = run_detectors(run)
    assert {"DEAD_FROM_START", "ENTROPY_COLLAPSE"} <= {f.id for f in findings}
    assert diagnose(run, findings, not_evaluable).findings[0].id == "ENTROPY_COLLAPSE"


def test_real_mlagents_boxing_return_flat_over_38_summaries_never_rose() -> None:
    # h309's boxing attacker after its penalties were retuned: every episode times out, the return near -5,000
    # from the first of 38 summaries to the last
    path = corpus("h309-mlagents-ppo-boxing-attack-agent-retuned-penalties-return-flat-minus-5000-every-episode-"
                  "times-out/events.out.tfevents.1749396009.Yoony-Desktop.23700.0")
    values = [e.value for e in events(path).Scalars("Environment/Cumulative Reward")]
    k = math.ceil(0.2 * len(values))
    assert len(values) == 38 and abs(np.median(values[-k:]) - np.median(values[:k])) < 0.05 * abs(np.median(values))
    run = load(path)
    verdict = diagnose(run, *run_detectors(run))
    assert verdict.headline == "DEAD_FROM_START" and verdict.findings[0].evidence["dead"] == "no_rise"


def test_real_pong_paddle_below_its_first_summaries_for_3_7m_steps() -> None:
    # masterxolos/AI-Ping-Pong MoveThePlayer: about -0.74 over the first summaries, never above -0.95 after 100k steps
    folder = "h314-mlagents-ppo-pong-movetheplayer-return-falls-below-start-and-stays-3.7m-resumed"
    paths = [corpus(f"{folder}/{name}") for name in ("events.out.tfevents.1671064795.DESKTOP-GN66KVI.51428.0",
                                                     "events.out.tfevents.1671066355.DESKTOP-GN66KVI.30460.0")]
    pts = sorted((e.step, e.value) for p in paths for e in events(p).Scalars("Environment/Cumulative Reward"))
    values = [v for _, v in pts]
    assert len(values) == 370 and np.median(values[:5]) > -0.8
    assert max(v for s, v in pts if s > 100_000) < -0.95
    k = math.ceil(0.2 * len(values))
    assert np.median(values[-k:]) > np.median(values[:k])  # the late window above the early one
    (run,) = join_runs([load(p) for p in paths])
    f = one(run, "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.severity == "warn" and f.evidence["fell"] is True


def test_real_sac_whose_objective_was_broken_rose_by_a_tenth_of_its_spread() -> None:
    # Refref18/CMPE591_HOMEWORK3: SAC on a UR5e push whose objective was broken, 4,130 episodes flat at the random
    # policy's return; its late median lies 0.11 of the windows' spread above the early one, 2 standard errors
    path = corpus("h310-handwritten-sac-gae-pusher-v5-objective-broken-flat-at-random-4130-episodes/"
                  "sac_total_reward_per_episode.txt")
    with path.open(newline="") as fh:
        reward = np.array([float(r[1]) for r in csv.reader(fh) if r])
    k = math.ceil(0.2 * len(reward))
    early, late = reward[:k], reward[-k:]
    spread = math.sqrt((early.var() + late.var()) / 2)
    rise = np.median(late) - np.median(early)
    assert len(reward) == 4130 and 0.1 * spread < rise < 0.15 * spread
    f = one(load(path), "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.evidence["dead"] == "no_rise"


def test_real_a_level_within_the_rewards_stillness_is_no_rise() -> None:
    # h323's foosball TQC: the ball never moves, every episode returns 2,350 +- 1.5; a level 1 above the start is
    # many noises of a 100-episode mean but nothing against the reward's size
    folder = "h323-sb3-tqc-mujoco-foosball-ball-never-moves-every-episode-ends-at-10-steps-return-pinned-at-2350-dead-from-start"
    path = corpus(f"{folder}/events.out.tfevents.1763069284.DESKTOP-K6T5L05.24520.0")
    returns = [e.value for e in events(path).Scalars("rollout/ep_rew_mean")]
    assert len(returns) >= 200 and max(returns) - min(returns) < 0.005 * np.median(returns)
    f = one(load(path), "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.evidence["dead"] == "no_rise"


def test_real_a_failure_that_began_late_does_not_explain_a_reward_that_never_rose() -> None:
    # h354's five-drone MEC PPO: every episode ends at its first step, the return pinned near -66 from the first
    # rollout of 10M steps; clip fractions pass 0.5 only from 4.99M: the run never learned, and that leads
    folder = "h354-sb3-ppo-uav-mec-five-drones-10m-every-episode-ends-at-step-1-return-pinned-minus-66-never-learns"
    path = corpus(f"{folder}/events.out.tfevents.1739551001.SK-20240420RHLC.25684.0")
    clip = events(path).Scalars("train/clip_fraction")
    first_high = next(e.step for e in clip if e.value >= 0.5 and e.step > 100_000)
    assert first_high > 0.4 * clip[-1].step
    run = load(path)
    findings, not_evaluable = run_detectors(run)
    verdict = diagnose(run, findings, not_evaluable)
    assert verdict.stage == "R" and verdict.headline == "DEAD_FROM_START"
    assert "UPDATE_UNSTABLE" in {f.id for f in findings}


def test_a_fall_no_detector_explains_is_said_as_a_fall() -> None:
    # ferryliekens/cozmo-simulation: the agent's reward is a running score never reset, so the return falls from
    # about 1 to -50,591 over 54 summaries while the policy's entropy stays at 1.43; no detector names it, and the
    # verdict must not say the reward "did not rise"
    path = corpus("h402-mlagents-ppo-cozmo-hold-ball-reward-is-a-running-score-never-reset-return-7.6-to-minus-118-"
                  "by-500k-then-minus-50600-frozen-policy-entropy-flat/events.out.tfevents.1624809198.DESKTOP-ARJ4ANL."
                  "20664.0")
    returns = [e.value for e in events(path).Scalars("Environment/Cumulative Reward")]
    fifth = math.ceil(len(returns) / 5)  # the early and late windows: a fifth of the points each, rounded up
    early, late = float(np.median(returns[:fifth])), float(np.median(returns[-fifth:]))
    run = load(path)
    verdict = diagnose(run, *run_detectors(run))
    assert verdict.status == "quiet" and late < 1000 * early < 0
    assert f"the reward fell from a median of {early:.4g} early to {late:.4g} late" in verdict.summary
    assert "did not rise" not in verdict.summary


def test_a_signal_dead_from_the_start_does_not_list_the_no_rise_signs_tip() -> None:
    # f1-strategist-grpo-zero-std's finding listed "When the reward never rose and nothing else fired" beside two
    # other findings; the no-rise sign's own finding keeps it first
    n = 40
    tied = make_run({"zero_variance_group_frac": [1.0] * n, "reward_mean": [0.88] * n, "grad_norm": [0.002] * n})
    f = one(tied, "DEAD_FROM_START")
    assert isinstance(f, Finding) and f.evidence.get("dead") != "no_rise"
    assert not any(t.startswith("When the reward never rose") for t in f.what_to_try)
    flat = one(make_run({"reward_mean": _flat(POINTS)}), "DEAD_FROM_START")
    assert isinstance(flat, Finding) and flat.what_to_try[0].startswith("When the reward never rose")
