"""Which trainer wrote a log, from its metric keys alone: the rule every format falls back on when
its own layout names no trainer (a TensorBoard file or a CSV export of a verl run reads as verl)."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["BASELINES_KEYS", "trainer_of"]

#: keys only OpenAI baselines' loggers (and stable-baselines 2, which prints its tables with them) write:
#: ppo2/a2c/acktr/trpo_mpi (baselines/ppo2/ppo2.py ...), DDPG (baselines/ddpg/training.py), HER
#: (baselines/her/her.py) and deepq (baselines/deepq/deepq.py)
BASELINES_KEYS = frozenset({"eprewmean", "EpRewMean", "misc/serial_timesteps", "serial_timesteps", "EVBefore",
                            "ev_tdlam_before", "approxkl", "policy_entropy", "nupdates", "n_updates", "ep_reward_mean",
                            "reference_Q_mean", "rollout/Q_mean", "stats_g/mean", "% time spent exploring"})

#: TRL's GRPO keys, and those of its PPO, RLOO and online-DPO trainers (trl/trainer/ppo_trainer.py from
#: TRL 0.11, now trl/experimental/ppo): ``objective/scores``, ``objective/rlhf_reward``
_TRL_MARKERS = frozenset({"Training Loss", "frac_reward_zero_std", "objective/scores", "objective/rlhf_reward"})
_TRL_PREFIXES = ("rewards / ", "completions / ", "rewards/", "completions/")
#: verl's metric keys (verl/trainer/ppo/metric_utils.py, compute_data_metrics): the reward and
#: advantage under critic/, the policy's loss, entropy and update KL under actor/
_VERL_KEYS = frozenset({"critic/score/mean", "critic/rewards/mean", "critic/advantages/max", "actor/pg_loss",
                        "actor/entropy", "actor/ppo_kl", "actor/pg_clipfrac"})
_SB3_KEYS = frozenset({"time/total_timesteps", "rollout/ep_rew_mean"})
#: Tunix's metrics (google/tunix@c7d8950: tunix/sft/metrics_logger.py writes ``{role}/{mode}/{name}``;
#: tunix/rl/grpo/grpo_learner.py the reward scores and completion lengths, tunix/rl/algo_core.py the
#: actor's kl and pg_clipfrac); two of them make a run Tunix's
_TUNIX_KEYS = frozenset({"rewards/train/score/mean", "actor/train/pg_clipfrac", "actor/train/kl",
                         "completions/train/mean_length"})
_TUNIX_MIN_KEYS = 2
#: CleanRL's TensorBoard tags (vwxyzjn/cleanrl@020cf0e, cleanrl/ppo.py; dqn.py, sac_continuous_action.py):
#: the episodes' return under charts/ (or another section of a script built on it: metrics/, h447's CleanRL PPO on a
#: learned reward), the update's statistics under losses/
_CLEANRL_RETURN = "charts/episodic_return"
_CLEANRL_KEYS = frozenset({"charts/SPS", "losses/approx_kl", "losses/clipfrac", "losses/value_loss", "losses/td_loss",
                           "losses/q_values", "losses/qf1_loss"})
#: RLinf's embodied runners (RLinf/RLinf@a3816b5, rlinf/runners/embodied_runner.py ``_log_step_metrics``,
#: L373-396): the episodes' success under env/, the advantages under rollout/, the actor's PPO
#: statistics under train/actor/ (rlinf/algorithms/losses.py L299-310)
_RLINF_KEYS = frozenset({"env/success_once", "rollout/advantages_mean", "train/actor/approx_kl",
                         "train/actor/clip_fraction"})
#: two of them make a run RLinf's (``env/success_once`` alone is also the name its docs teach)
_RLINF_MIN_KEYS = 2
#: AReaL's PPO actor (inclusionAI/AReaL, areal/engine/ppo/actor.py ``ppo_update``): per-sequence statistics
#: under ppo_actor/ (the task reward, the share of sequences at the padded length, the advantages), the
#: loss function's under ppo_actor/update/; two of them make a run AReaL's
_AREAL_KEYS = frozenset({"ppo_actor/task_reward/avg", "ppo_actor/advantages/avg", "ppo_actor/no_eos_ratios/avg",
                         "ppo_actor/update/entropy/avg"})
_AREAL_MIN_KEYS = 2
#: slime's W&B sections (THUDM/slime: slime/ray/rollout.py logs the rollout batch's means under rollout/,
#: slime/backends/megatron_utils/loss.py the policy loss's statistics under train/); two of them make a run
#: slime's
_SLIME_KEYS = frozenset({"rollout/raw_reward", "rollout/truncated", "train/pg_clipfrac", "train/ppo_kl",
                         "train/entropy_loss"})
_SLIME_MIN_KEYS = 2
#: what PyMARL's episode runner logs every ``runner_log_interval`` (src/runners/episode_runner.py,
#: ``_log``): the episodes' return and length, and the exploration rate
_PYMARL_KEYS = frozenset({"return_mean", "return_std", "ep_length_mean", "epsilon"})
#: torch-ac's training script (lcswillems/rl-starter-files, scripts/train.py): the reshaped return
#: ``rreturn_*`` and the episode length ``num_frames_*`` of the episodes finished in the update
_TORCH_AC_KEYS = frozenset({"rreturn_mean", "num_frames_mean"})
#: the evaluation columns of PFRL's scores.txt (pfrl/experiments/evaluator.py, ``_basic_columns``), which
#: the agent's statistics follow (``get_statistics``: average_q1 for SAC, average_value for PPO ...)
_PFRL_KEYS = frozenset({"steps", "episodes", "elapsed", "mean", "median", "stdev"})
#: marlbenchmark/on-policy (MAPPO, and its light_mappo extraction): ``average_episode_rewards`` and the PPO
#: statistics of ``algorithms/r_mappo/r_mappo.py`` (``dist_entropy``, ``actor_grad_norm``, ``ratio``), bare
#: for the shared runner, per agent (``agent0/dist_entropy``) for the separated one
#: (``runner/separated/base_runner.py``, ``log_train``)
_ON_POLICY_KEYS = frozenset({"average_episode_rewards", "dist_entropy", "actor_grad_norm", "critic_grad_norm"})
_ON_POLICY_MIN_KEYS = 2


def trainer_of(keys: Iterable[str]) -> str | None:
    """The trainer whose keys these are (``trl``, ``verl``, ``rlinf``, ``areal``, ``slime``, ``tunix``, ``sb3``,
    ``cleanrl``, ``pfrl``, ``baselines``, ``rllab``, ``garage``, ``spinup``, ``rlkit``, ``pymarl``, ``torch_ac``, ``on_policy``), or
    None. Keys are tried with and without a ``train/`` prefix (W&B sections)."""
    keys = set(keys)
    bare = keys | {k[len("train/"):] for k in keys if k.startswith("train/")}
    if len(keys & _TUNIX_KEYS) >= _TUNIX_MIN_KEYS:  # before TRL, whose rewards/ and completions/ prefixes it shares
        return "tunix"
    if bare & _TRL_MARKERS or any(k.startswith(_TRL_PREFIXES) for k in bare):
        return "trl"
    if bare & _VERL_KEYS:
        return "verl"
    if len(keys & _RLINF_KEYS) >= _RLINF_MIN_KEYS:
        return "rlinf"
    if len(keys & _AREAL_KEYS) >= _AREAL_MIN_KEYS:
        return "areal"
    if len(keys & _SLIME_KEYS) >= _SLIME_MIN_KEYS:
        return "slime"
    if keys & _SB3_KEYS:
        return "sb3"
    if _CLEANRL_RETURN in keys | {f"charts/{k.rsplit('/', 1)[-1]}" for k in keys} and keys & _CLEANRL_KEYS:
        return "cleanrl"
    if _PFRL_KEYS <= keys:  # before baselines: PFRL's agents also log n_updates
        return "pfrl"
    if keys & BASELINES_KEYS:
        return "baselines"
    if {"AverageReturn", "Iteration"} <= keys:  # rllab's progress.csv (TRPO, VPG)
        return "rllab"
    if {"Evaluation/AverageReturn", "TotalEnvSteps"} <= keys:  # garage, rllab's successor (TRPO, PPO, VPG)
        return "garage"
    if {"Epoch", "AverageEpRet"} <= keys:  # OpenAI Spinning Up's progress.txt (VPG, TRPO, PPO)
        return "spinup"
    if {"Epoch", "evaluation/Average Returns"} <= keys:  # rlkit's progress.csv (SAC, CQL, AWAC, TD3)
        return "rlkit"
    if _PYMARL_KEYS <= keys:
        return "pymarl"
    if _TORCH_AC_KEYS <= keys:
        return "torch_ac"
    if len({k.rsplit("/", 1)[-1] for k in keys} & _ON_POLICY_KEYS) >= _ON_POLICY_MIN_KEYS:
        return "on_policy"
    return None
