"""The lab's training loop: sample G completions per prompt, score, form advantages, update the policy.

One step (1-based ``step``) of :func:`run`:

1. draw ``prompts`` tasks from the step's pool and sample ``group_size`` completions of each from
   the current policy (prompt-major layout: the completions of a prompt are contiguous);
2. score them (:mod:`advcore.lab.policy`), then hold the rewards as the step's :class:`Setting`
   says (precision, rounding noise, an injected NaN): these are the *logged* rewards;
3. advantages: the group estimators call :mod:`advcore.reference` on ``reward_scale x`` the
   logged rewards and the step's group ids; PPO runs GAE over its critic and whitens
   (:mod:`advcore.lab.estimators`); DAPO draws more prompts (up to ``dapo_max_rounds`` batches)
   until ``prompts`` groups with spread are kept, and trains on those only;
4. ``epochs`` full-batch gradient steps of the clipped surrogate (PPO's objective, used by every
   estimator as TRL and verl do) with the entropy bonus and the exact KL penalty to the reference,
   the total gradient norm clipped to ``max_grad_norm``, plain SGD (so that a learning rate or a
   clipping threshold acts on the step as written: no optimiser state rescales it).

Everything is seeded from one :class:`numpy.random.SeedSequence`: the teacher and task pools
(identical for every fault and estimator of a seed, so runs are matched), the held-out tasks, and
the sampling stream.

Per-step metrics (:attr:`LabResult.steps`, one row per step; canonical names of SPEC section 4
where one exists): ``reward_mean``, ``reward_std`` (batch, ddof 0), ``reward_std_within`` (mean
per-group std, ddof 1), ``reward_max``, ``reward_min``, ``zero_variance_group_frac``,
``adv_mean``/``adv_std``/``adv_max``/``adv_min``/``adv_zero_frac`` (the advantages used, per
sample), ``return_mean``/``value_mean``/``vf_explained_var`` (PPO, per token; the explained variance as verl
computes it, ``1 - var(returns - values) / (var(returns) + 1e-5)``), ``entropy`` (nats
per token, exact, before the update), ``kl`` (exact KL(pi || pi_ref) per token), ``clip_frac``
(share of tokens where the clipped branch is active, over the epochs), ``grad_norm`` (total norm
before clipping, as trainers log it; mean over the epochs), ``lr``, ``response_length_mean``
(tokens), ``truncated_frac`` (0: no cap); and the lab's own update mechanics: ``grad_norm_clipped``,
``kl_step`` (exact KL(pi_before || pi_after) on the batch), ``step_norm``, ``param_norm``,
``step_param_ratio``, ``adv_grad_spearman`` (Spearman between |advantage| and the norm of the
sample's gradient contribution), ``heldout_success`` and ``train_success`` (exact, before the
update), ``gen_batches`` (DAPO), ``n_generated`` (completions sampled this step, DAPO's extra
rounds included: the rollout budget), ``n_samples`` (completions trained on). A metric a step
does not have (no advantage left after DAPO's filter, no critic) is null, never NaN: NaN and inf are kept for the values a step
really produced (an inf gradient norm, a NaN reward mean).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from advcore import stats
from advcore.errors import AdvcoreError, AdvcoreWarning
from advcore.lab.estimators import Critic, gae, get_estimator, group_advantages
from advcore.lab.faults import Fault, Setting, get_fault
from advcore.lab.policy import POOLS, Policy, TaskSet, make_tasks, make_teacher, softmax
from advcore.lab.vla import LABELS, family_teachers, make_vla_tasks, observation_dim, reward_factor, slice_effects

__all__ = ["LabConfig", "LabResult", "loss_and_grad", "run", "truth"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class LabConfig:
    """What to run. ``knobs`` override the fault's switch (:class:`advcore.lab.faults.Setting` fields)."""

    estimator: str = "grpo"
    fault: str | Fault | None = None
    seed: int = 0
    steps: int = 80
    onset: int = 30
    knobs: Mapping[str, Any] = field(default_factory=dict)
    base: Setting = field(default_factory=Setting)
    actions: int = 8
    horizon: int = 5
    dim: int = 6
    train_tasks: int = 64
    heldout_tasks: int = 256
    epochs: int = 2
    clip_eps: float = 0.2
    lr: float | None = None
    dapo_max_rounds: int = 3

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("base", "knobs")}
        if isinstance(self.fault, Fault):
            out["fault"] = self.fault.name
        out["knobs"] = dict(self.knobs)
        out["base"] = {k: getattr(self.base, k) for k in self.base.__dataclass_fields__}
        return out


@dataclass(frozen=True, slots=True)
class LabResult:
    """A finished lab run.

    Attributes
    ----------
    config : LabConfig
    fault : Fault or None
    steps : polars.DataFrame
        One row per step (``step`` Int64 from 1, Float64 metrics; see the module docstring).
    samples : polars.DataFrame
        One row per trained completion: ``step``, ``group`` (the prompt's slot in the step, the
        true group), ``task``, ``difficulty`` (slice label ``c<c>h<h>``), ``reward`` (as logged:
        after the trainer's precision and any injected NaN), ``reward_scored`` (float64, as the
        reward function returned it),
        ``adv_raw``, ``adv`` and, for PPO, ``value`` and ``return`` (first token).
    truth : dict
        The ground truth (see :meth:`truth`).
    """

    config: LabConfig
    fault: Fault | None
    steps: pl.DataFrame
    samples: pl.DataFrame
    truth: dict[str, Any]


def _bf16(x: F64) -> F64:
    """Round to bfloat16 (round to nearest even on the float32 bits), back as float64."""
    f = np.ascontiguousarray(x, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = (bits + np.uint64(0x7FFF) + ((bits >> np.uint64(16)) & np.uint64(1))) & np.uint64(0xFFFF0000)
    out = rounded.astype(np.uint32).view(np.float32).astype(np.float64)
    return np.where(np.isfinite(x), out, x)


def _score(rng: np.random.Generator, r: F64, s: Setting) -> F64:
    """The reward function's values (with its jitter, if any)."""
    if s.reward_jitter:
        r = r * (1.0 + s.reward_jitter * rng.uniform(-1.0, 1.0, r.shape[0]))
    return r


def _hold(r: F64, s: Setting) -> F64:
    """The rewards as the trainer holds (and logs) them."""
    if s.reward_dtype == "bfloat16":
        r = _bf16(r)
    elif s.reward_dtype == "float32":
        r = r.astype(np.float32).astype(np.float64)
    if s.inject == "reward":
        r = r.copy()
        r[0] = math.nan
    return r


@dataclass(slots=True)
class _Batch:
    task: I64  # (N,) index into the pool
    group: I64  # (N,) prompt slot, contiguous
    phi: F64
    probs: F64  # (N, H, K)
    actions: I64  # (N, H)
    mask: npt.NDArray[np.bool_]  # (N, H)
    ok: npt.NDArray[np.bool_]  # (N, H) action correct (True past the horizon)
    reward: F64  # logged
    scored: F64  # as the reward function returned it

    def take(self, keep: npt.NDArray[np.bool_]) -> _Batch:
        return _Batch(self.task[keep], self.group[keep], self.phi[keep], self.probs[keep], self.actions[keep],
                      self.mask[keep], self.ok[keep], self.reward[keep], self.scored[keep])


def _generate(rng: np.random.Generator, policy: Policy, tasks: TaskSet, s: Setting, horizon: int) -> _Batch:
    idx = rng.choice(tasks.size, size=s.prompts, replace=s.prompts > tasks.size)
    task = np.repeat(idx, s.group_size)
    group = np.repeat(np.arange(s.prompts), s.group_size)
    phi = tasks.phi[task]
    probs = policy.probs(phi)
    actions = policy.sample(rng, probs)
    mask = np.arange(horizon)[None, :] < tasks.horizon[task][:, None]
    pos = np.arange(horizon)[None, :]
    ok = tasks.correct[task[:, None], pos, actions]
    success = ok.all(axis=1).astype(np.float64)
    if s.slice_fault:
        success = slice_effects(s.slice_fault, tasks, task, np.asarray(success, dtype=np.float64))
    quality = np.where(mask, tasks.quality[task[:, None], pos, actions], 0.0).sum(axis=1) / mask.sum(axis=1)
    scored = _score(rng, success + s.shaping * quality, s)
    return _Batch(task, group, phi, probs, actions, mask, ok, _hold(scored, s), scored)


def _concat(parts: list[_Batch]) -> _Batch:
    offset, groups = 0, []
    for b in parts:
        groups.append(b.group + offset)
        offset += int(b.group.max()) + 1 if b.group.size else 0
    cat = np.concatenate
    return _Batch(cat([b.task for b in parts]), cat(groups), cat([b.phi for b in parts]),
                  cat([b.probs for b in parts]), cat([b.actions for b in parts]), cat([b.mask for b in parts]),
                  cat([b.ok for b in parts]), cat([b.reward for b in parts]), cat([b.scored for b in parts]))


def _renumbered(batch: _Batch) -> _Batch:
    """``batch`` with its group ids renumbered 0, 1, ... in order (after groups were dropped)."""
    batch.group = np.unique(batch.group, return_inverse=True)[1].reshape(-1).astype(np.int64)
    return batch


def _spread_groups(reward: F64, group: I64) -> npt.NDArray[np.bool_]:
    """Per sample: its group has two distinct finite rewards (DAPO's keep rule)."""
    r = np.where(np.isfinite(reward), reward, np.nan)
    k = int(group.max()) + 1
    lo = np.full(k, np.inf)
    hi = np.full(k, -np.inf)
    np.minimum.at(lo, group, np.nan_to_num(r, nan=np.inf))
    np.maximum.at(hi, group, np.nan_to_num(r, nan=-np.inf))
    keep: npt.NDArray[np.bool_] = (hi > lo)[group]
    return keep


def _group_ids(s: Setting, batch: _Batch) -> I64:
    n = batch.group.shape[0]
    if s.grouping == "stride":
        k = int(batch.group.max()) + 1
        return np.arange(n, dtype=np.int64) % k
    if s.grouping == "singleton":
        return np.arange(n, dtype=np.int64)
    return batch.group


def _quiet(fn: Any, *args: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AdvcoreWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kw)


def _reward_stats(reward: F64, group: I64) -> dict[str, float]:
    if reward.size == 0:  # every group dropped (DAPO's filter, dynamic sampling)
        return {}
    out: dict[str, float] = {"reward_mean": float(np.mean(reward))}
    fin = np.isfinite(reward)
    r, g = reward[fin], group[fin]
    if r.size == 0:
        return out
    out.update(reward_std=float(r.std()), reward_max=float(r.max()), reward_min=float(r.min()))
    m = _quiet(stats.grouped_moments, r, group_ids=g, ddof=1)
    sd = np.sqrt(np.asarray(m.var)[np.asarray(m.count) > 1])
    out["reward_std_within"] = float(np.nanmean(sd)) if sd.size and np.isfinite(sd).any() else math.nan
    out["zero_variance_group_frac"] = float(_quiet(stats.zero_variance_fraction, r, group_ids=g).near_frac)
    return out


def _adv_stats(adv: F64) -> dict[str, float]:
    a = adv[np.isfinite(adv)]
    if a.size == 0:
        return {}
    return {"adv_mean": float(a.mean()), "adv_std": float(a.std()), "adv_max": float(a.max()),
            "adv_min": float(a.min()), "adv_zero_frac": float(_quiet(stats.value_census, a).near_zero_frac)}


def _token_weights(agg: str, mask: npt.NDArray[np.bool_], horizon: int) -> F64:
    n = mask.shape[0]
    if agg == "seq_mean":
        w = 1.0 / (mask.sum(axis=1, keepdims=True) * n)
    elif agg == "const":
        w = np.full((n, 1), 1.0 / (n * horizon))
    else:
        w = np.full((n, 1), 1.0 / mask.sum())
    out: F64 = np.where(mask, w, 0.0)
    return out


def _kl(p: F64, q: F64) -> F64:
    with np.errstate(divide="ignore", invalid="ignore"):
        out: F64 = np.sum(np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0), axis=-1)
    return out


def _entropy(p: F64) -> F64:
    with np.errstate(divide="ignore", invalid="ignore"):
        out: F64 = -np.sum(np.where(p > 0, p * np.log(p), 0.0), axis=-1)
    return out


def _check(cfg: LabConfig) -> tuple[Fault | None, float]:
    est = get_estimator(cfg.estimator)
    fault = get_fault(cfg.fault)
    if fault is not None and cfg.estimator not in fault.estimators:
        raise AdvcoreError(f"`estimator`: fault {fault.name!r} does not apply to {cfg.estimator!r} "
                           f"(it applies to {', '.join(fault.estimators)})")
    for name, v, lo in (("steps", cfg.steps, 1), ("onset", cfg.onset, 1), ("epochs", cfg.epochs, 1),
                        ("actions", cfg.actions, 2), ("horizon", cfg.horizon, 1), ("dim", cfg.dim, 1),
                        ("train_tasks", cfg.train_tasks, 1), ("heldout_tasks", cfg.heldout_tasks, 1),
                        ("dapo_max_rounds", cfg.dapo_max_rounds, 1)):
        if not isinstance(v, (int, np.integer)) or v < lo:
            raise AdvcoreError(f"`{name}` must be an integer >= {lo}, got {v!r}")
    if fault is not None and cfg.onset > cfg.steps:
        raise AdvcoreError(f"`onset` ({cfg.onset}) must be at most `steps` ({cfg.steps})")
    if cfg.horizon < 2 or cfg.actions < 4:
        raise AdvcoreError("`horizon` must be >= 2 and `actions` >= 4 (the task pools need them)")
    lr = est.lr if cfg.lr is None else float(cfg.lr)
    if not (math.isfinite(lr) and lr > 0):
        raise AdvcoreError(f"`lr` must be a positive number, got {cfg.lr!r}")
    if fault is not None:  # validate the knobs once, before any work
        fault.setting(cfg.onset, cfg.onset, cfg.base, cfg.knobs)
    elif cfg.knobs:
        raise AdvcoreError("`knobs` override a fault's switch: name a fault (a healthy run is changed through `base`)")
    if _uses_vla(cfg, fault):
        pools = {fault.setting(step, cfg.onset, cfg.base, cfg.knobs).pool if fault is not None else cfg.base.pool
                 for step in (1, cfg.onset, cfg.steps)}
        if pools != {"vla"}:
            raise AdvcoreError("the `vla` pool's tasks are seen through their own features: a run that uses it must "
                               f"use it at every step (this one uses {sorted(pools)})")
        if cfg.estimator == "ppo":
            raise AdvcoreError("`estimator`: the `vla` pool is for the group estimators (its critic has no features "
                               "for the families)")
    return fault, lr


def run(config: LabConfig | None = None, **kw: Any) -> LabResult:
    """Train the lab policy once; returns its per-step metrics, per-sample data and ground truth.

    Parameters
    ----------
    config : LabConfig, optional
        Or its fields as keywords (``run(estimator="rloo", fault="floor", seed=1)``).

    Returns
    -------
    LabResult

    Raises
    ------
    AdvcoreError
        An unknown estimator or fault, a fault that does not apply to the estimator, bad knobs.

    Examples
    --------
    >>> res = run(estimator="grpo", steps=5, seed=0)
    >>> res.steps.height, res.samples.height
    (5, 640)
    """
    cfg = config if config is not None else LabConfig(**kw)
    fault, lr = _check(cfg)
    est = get_estimator(cfg.estimator)
    seq = np.random.SeedSequence(cfg.seed)
    # the first three streams are those of every run; the VLA pool draws from two more, so that a run of
    # the other pools is the same with or without it
    task_rng, held_rng, rng, vla_rng, vla_held_rng = (np.random.default_rng(s) for s in seq.spawn(5))
    teacher = make_teacher(task_rng, horizon=cfg.horizon, actions=cfg.actions, dim=cfg.dim)
    pools = {name: make_tasks(task_rng, teacher, cfg.train_tasks, name) for name in POOLS}
    heldout = make_tasks(held_rng, teacher, cfg.heldout_tasks, "standard")
    dim = cfg.dim
    if _uses_vla(cfg, fault):
        teachers = family_teachers(vla_rng, teacher)
        pools = {"vla": make_vla_tasks(vla_rng, teachers, cfg.train_tasks)}
        pools["standard"] = pools["vla"]  # train_success reads the pool the run trains on
        heldout = make_vla_tasks(vla_held_rng, teachers, cfg.heldout_tasks)
        dim = observation_dim(cfg.dim)
    policy = Policy(cfg.horizon, cfg.actions, dim)
    ref = policy.theta.copy()
    ref_synced = False
    critic = Critic(cfg.dim, cfg.horizon) if cfg.estimator == "ppo" else None
    rows: list[dict[str, float]] = []
    sample_parts: list[pl.DataFrame] = []
    for step in range(1, cfg.steps + 1):
        s = fault.setting(step, cfg.onset, cfg.base, cfg.knobs) if fault is not None else cfg.base
        if s.ref_reset and not ref_synced:
            ref, ref_synced = policy.theta.copy(), True
        tasks = pools[s.pool]
        held = policy.success(heldout)
        row: dict[str, float] = {"heldout_success": float(held.mean()),
                                 "train_success": float(policy.success(pools["standard"]).mean())}
        for label, values in heldout.labels.items():  # held-out success per slice (the vla pool)
            for value in sorted(set(values.tolist())):
                row[f"heldout_success/{label}={value}"] = float(held[values == value].mean())
        batch = _generate(rng, policy, tasks, s, cfg.horizon)
        row["n_generated"] = float(batch.reward.shape[0])
        if s.drop_tied and cfg.estimator != "dapo":  # dynamic sampling within the step's rollout budget
            batch = _renumbered(batch.take(_spread_groups(batch.reward, batch.group)))
        if cfg.estimator == "dapo":
            kept, n_kept, rounds = [], 0, 1
            while True:
                keep = _spread_groups(batch.reward, batch.group)
                if keep.any():
                    part = _renumbered(batch.take(keep))
                    kept.append(part)
                    n_kept += int(part.group.max()) + 1
                if n_kept >= s.prompts or rounds >= cfg.dapo_max_rounds:
                    break
                batch = _generate(rng, policy, tasks, s, cfg.horizon)
                row["n_generated"] += float(batch.reward.shape[0])
                rounds += 1
            row["gen_batches"] = float(rounds)
            if kept:
                batch = _concat(kept)
                first = np.searchsorted(batch.group, s.prompts)  # at most `prompts` groups
                batch = batch.take(np.arange(batch.group.shape[0]) < first)
        row.update(_step(cfg, est.loss_agg, lr, s, policy, ref, critic, batch, row, sample_parts, step, tasks))
        rows.append(row)
    steps_frame = pl.DataFrame({"step": pl.Series(range(1, cfg.steps + 1), dtype=pl.Int64),
                                **{k: pl.Series([r.get(k) for r in rows], dtype=pl.Float64)
                                   for k in dict.fromkeys(k for r in rows for k in r)}})
    samples = pl.concat(sample_parts, how="diagonal_relaxed")
    return LabResult(cfg, fault, steps_frame, samples, truth(cfg, fault))


def _uses_vla(cfg: LabConfig, fault: Fault | None) -> bool:
    """Whether a step of the run may draw from the ``vla`` pool (then the held-out tasks are VLA tasks)."""
    pools: set[Any] = {cfg.base.pool}
    if fault is not None:
        pools |= {fault.scenario.get("pool"), fault.switch.get("pool"), cfg.knobs.get("pool")}
    return "vla" in pools


def truth(cfg: LabConfig, fault: Fault | None) -> dict[str, Any]:
    """The ground truth of a run: fault, stage, onset step (None for a healthy run), expected
    detectors, estimator, seed and every knob."""
    return {
        "fault": fault.name if fault else None,
        "stage": fault.stage if fault else None,
        "onset_step": (1 if fault.onset == "start" else cfg.onset) if fault else None,
        "onset_kind": fault.onset if fault else None,
        "expected_detectors": list(fault.detectors) if fault else [],
        "slice": fault.slice if fault else None,
        "description": fault.description if fault else "healthy run",
        "estimator": cfg.estimator,
        "seed": cfg.seed,
        "config": cfg.to_json(),
        "fault_spec": fault.to_json() if fault else None,
    }


def _step(cfg: LabConfig, agg: str, lr: float, s: Setting, policy: Policy, ref: F64, critic: Critic | None,
          batch: _Batch, row: dict[str, float], sample_parts: list[pl.DataFrame], step: int,
          tasks: TaskSet) -> dict[str, float]:
    """Advantages, update and metrics of one step (``row`` already holds the pre-update scores)."""
    out: dict[str, float] = {"n_samples": float(batch.reward.shape[0]), "lr": lr * s.lr_scale}
    out.update(_reward_stats(batch.reward, batch.group))
    mask = batch.mask
    n, h = mask.shape
    out["response_length_mean"] = float(mask.sum(axis=1).mean()) if n else math.nan
    out["truncated_frac"] = 0.0
    r_in = batch.reward * s.reward_scale  # the faulty scaling step (1: none)
    if s.slice_fault:
        r_in = r_in * reward_factor(s.slice_fault, tasks, batch.task)
    cols: dict[str, Any] = {}
    if n == 0:  # DAPO found no group with spread: nothing to train on
        return out
    if critic is None:
        ids = _group_ids(s, batch)
        adv = group_advantages(cfg.estimator, r_in, ids, eps=s.eps)
        if s.std_floor > 0:  # conditional normalisation: groups below the floor count as tied
            m = _quiet(stats.grouped_moments, np.nan_to_num(r_in, nan=0.0), group_ids=ids, ddof=1)
            low = np.nan_to_num(np.sqrt(np.asarray(m.var)), nan=0.0) < s.std_floor
            adv = np.where(low[np.searchsorted(np.asarray(m.group), ids)], 0.0, adv)
        raw = (r_in - np.nanmean(r_in)) if cfg.estimator == "reinforce_pp" else \
            group_advantages("dr_grpo", r_in, ids)
        adv_tok = np.where(mask, np.nan_to_num(adv, nan=0.0)[:, None], 0.0)
        cols.update(adv_raw=raw, adv=adv)
    else:
        prefix_ok = np.concatenate([np.ones((n, 1), bool), np.cumprod(batch.ok, axis=1)[:, :-1].astype(bool)], axis=1)
        r_fit = np.nan_to_num(r_in, nan=0.0)
        psi = critic.features(tasks.z[batch.task], tasks.n_correct[batch.task], tasks.horizon[batch.task],
                              cfg.actions, prefix_ok, s.critic_input, returns=r_fit)
        values = critic.values(psi)
        a_raw = gae(r_fit, values, mask)
        returns = a_raw + values
        v = a_raw[mask]
        mu, var = float(v.mean()), float(v.var(ddof=1)) if v.size > 1 else 0.0
        a_white = np.where(mask, (a_raw - mu) / math.sqrt(var + 1e-8), 0.0)
        ret, val = returns[mask], values[mask]
        # verl 0.9.1 compute_data_metrics: 1 - var(returns - values) / (var(returns) + 1e-5), unbiased vars
        out["vf_explained_var"] = 1.0 - float((ret - val).var(ddof=1)) / (float(ret.var(ddof=1)) + 1e-5) \
            if ret.size > 1 else math.nan
        out["return_mean"], out["value_mean"] = float(ret.mean()), float(val.mean())
        critic.fit(psi, returns, mask)
        adv_tok = a_white
        adv = a_white[:, 0]
        cols.update(adv_raw=a_raw[:, 0], adv=adv, value=values[:, 0], **{"return": returns[:, 0]})
    out.update(_adv_stats(adv))
    out.update(_update(cfg, agg, lr, s, policy, ref, batch, adv_tok))
    a_abs = np.abs(np.nan_to_num(adv, nan=0.0))
    contrib = a_abs * np.linalg.norm(batch.phi, axis=1) * np.sqrt(
        (_token_weights(agg, mask, h) ** 2 * np.sum((np.eye(cfg.actions)[batch.actions] - batch.probs) ** 2, axis=2))
        .sum(axis=1))
    if np.ptp(a_abs) > 0 and np.ptp(contrib) > 0:
        out["adv_grad_spearman"] = float(_quiet(stats.spearman, a_abs, contrib))
    diff = [f"c{c}h{hh}" for c, hh in zip(tasks.n_correct[batch.task], tasks.horizon[batch.task], strict=True)]
    sample_parts.append(pl.DataFrame({"step": pl.Series([step] * n, dtype=pl.Int64),
                                      "group": pl.Series(batch.group, dtype=pl.Int64),
                                      "task": pl.Series(batch.task, dtype=pl.Int64),
                                      "difficulty": pl.Series(diff, dtype=pl.String),
                                      "reward": pl.Series(batch.reward, dtype=pl.Float64),
                                      "reward_scored": pl.Series(batch.scored, dtype=pl.Float64),
                                      **{f"slice_{label}": pl.Series(tasks.labels[label][batch.task], dtype=pl.String)
                                         for label in LABELS if label in tasks.labels},
                                      **{k: pl.Series(v, dtype=pl.Float64) for k, v in cols.items()}}))
    return out


def loss_and_grad(theta: F64, phi: F64, actions: I64, mask: npt.NDArray[np.bool_], adv_tok: F64, logp_old: F64,
                  w_tok: F64, ref_probs: F64, *, clip_eps: float = 0.2, entropy_coef: float = 0.0,
                  kl_coef: float = 0.0) -> tuple[float, F64, npt.NDArray[np.bool_]]:
    """The lab's loss, its exact gradient in ``theta`` and where the clipped branch is active.

    Parameters
    ----------
    theta : ndarray, shape (H, K, D)
        Policy parameters (:class:`advcore.lab.policy.Policy`).
    phi : ndarray, shape (N, D)
        Task features of each completion.
    actions : ndarray of int, shape (N, H)
    mask : ndarray of bool, shape (N, H)
        Valid tokens.
    adv_tok : ndarray, shape (N, H)
        Advantage of each token (0 past the mask).
    logp_old : ndarray, shape (N, H)
        Log-probability of each action under the sampling policy.
    w_tok : ndarray, shape (N, H)
        Token weights of the loss aggregation (0 past the mask).
    ref_probs : ndarray, shape (N, H, K)
        The reference policy's probabilities (for the KL penalty).
    clip_eps, entropy_coef, kl_coef : float

    Returns
    -------
    loss : float
        ``-sum w min(rho A, clip(rho, 1 - eps, 1 + eps) A) - c_H sum w H(pi) + beta sum w KL(pi || pi_ref)``
        with ``rho = pi(a) / pi_old(a)`` per token (Schulman et al. 2017, eq. 7; the KL is exact).
    grad : ndarray, shape (H, K, D)
    active : ndarray of bool, shape (N, H)
        Tokens whose clipped branch is the minimum (no gradient through the surrogate).
    """
    p = softmax(np.einsum("hkd,nd->nhk", theta, phi))
    onehot = np.eye(p.shape[2])[actions]
    ratio = np.exp(np.log(np.take_along_axis(p, actions[:, :, None], axis=2)[:, :, 0]) - logp_old)
    active = mask & (((adv_tok > 0) & (ratio > 1 + clip_eps)) | ((adv_tok < 0) & (ratio < 1 - clip_eps)))
    surrogate = np.minimum(ratio * adv_tok, np.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv_tok)
    loss = -float(np.sum(w_tok * surrogate))
    w = np.where(active, 0.0, ratio * adv_tok * w_tok)
    dz = -w[:, :, None] * (onehot - p)  # d(loss)/d(logits): minus the surrogate's gradient
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.where(p > 0, np.log(p), 0.0)
    m = w_tok[:, :, None]  # the entropy and KL terms are aggregated as the surrogate (TRL, verl)
    if entropy_coef:
        ent = _entropy(p)
        loss -= entropy_coef * float(np.sum(w_tok * ent))
        dz += entropy_coef * m * p * (logp + ent[:, :, None])  # d(-c H)/dz = c p (log p + H)
    if kl_coef:
        kl = _kl(p, ref_probs)
        loss += kl_coef * float(np.sum(w_tok * kl))
        dz += kl_coef * m * p * (logp - np.log(ref_probs) - kl[:, :, None])
    grad: F64 = np.einsum("nhk,nd->hkd", dz, phi)
    return loss, grad, active


def _update(cfg: LabConfig, agg: str, lr: float, s: Setting, policy: Policy, ref: F64, batch: _Batch,
            adv_tok: F64) -> dict[str, float]:
    """``epochs`` clipped-surrogate SGD steps; the update mechanics."""
    mask, phi, probs0 = batch.mask, batch.phi, batch.probs
    logp_old = np.log(np.take_along_axis(probs0, batch.actions[:, :, None], axis=2)[:, :, 0])
    w_tok = _token_weights(agg, mask, mask.shape[1])
    n_tok = max(int(mask.sum()), 1)
    ref_probs = policy.probs(phi, ref)
    out = {"entropy": float(_entropy(probs0)[mask].mean()), "kl": float(_kl(probs0, ref_probs)[mask].mean())}
    theta0 = policy.theta.copy()
    norms, clipped, clip_fracs = [], [], []
    for epoch in range(cfg.epochs):
        _, grad, active = loss_and_grad(policy.theta, phi, batch.actions, mask, adv_tok, logp_old, w_tok, ref_probs,
                                        clip_eps=cfg.clip_eps, entropy_coef=s.entropy_coef, kl_coef=s.kl_coef)
        clip_fracs.append(float(active.sum()) / n_tok)
        if s.inject == "grad" and epoch == 0:
            grad[0, 0, 0] = math.inf
        gnorm = float(np.sqrt(np.sum(grad * grad)))
        norms.append(gnorm)
        if not math.isfinite(gnorm):  # a loss scaler skips the step
            clipped.append(gnorm)
            continue
        coef = min(1.0, s.max_grad_norm / (gnorm + 1e-6))  # torch.nn.utils.clip_grad_norm_
        clipped.append(gnorm * coef)
        policy.theta -= lr * s.lr_scale * coef * grad
    step = policy.theta - theta0
    after = policy.probs(phi)
    out.update(grad_norm=float(np.mean(norms)), grad_norm_clipped=float(np.mean(clipped)),
               clip_frac=float(np.mean(clip_fracs)), kl_step=float(_kl(probs0, after)[mask].mean()),
               step_norm=float(np.linalg.norm(step)), param_norm=float(np.linalg.norm(policy.theta)))
    out["step_param_ratio"] = out["step_norm"] / out["param_norm"] if out["param_norm"] > 0 else math.nan
    return out
