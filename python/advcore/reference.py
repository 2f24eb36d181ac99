"""Reference advantages recomputed in float64, and the per-step T-stage evidence built on them.

The estimators (all vectorised numpy in float64; ``rewards`` and ``group_ids`` have shape ``(N,)``,
group ids are integers or strings, in any order, with any group sizes; a NaN/None reward is left
out of its group's statistics and gets a NaN advantage):

================  ==========================================================================
function          formula (``m_g``, ``s_g``: mean and std of group ``g``; ``B``: the batch)
================  ==========================================================================
:func:`grpo`      ``(r - m_g) / (s_g + eps)`` with ``s_g`` of ``ddof`` 1 (``scale="group"``);
                  ``(r - m_g) / (s_B + eps)`` (``scale="batch"``); ``r - m_g`` (Dr. GRPO,
                  ``scale="none"``)
:func:`rloo`      ``r - (sum_g - r) / (n_g - 1) = n_g / (n_g - 1) * (r - m_g)``
:func:`reinforce_pp`  ``(y - m_B) / sqrt(v_B + eps)`` with ``y = r`` (REINFORCE++) or
                  ``y = r - m_g`` (REINFORCE++-baseline), ``v_B`` of ``ddof`` 1
:func:`dapo`      :func:`grpo` with the tied groups (all rewards equal) dropped: NaN there
================  ==========================================================================

Trainer presets (:data:`PRESETS`) pin the constants of each trainer's code path: TRL 0.2x-1.16
``GRPOTrainer._generate_and_score_completions`` (``eps`` 1e-4, ``nanstd`` with Bessel's
correction, NaN advantages set to 0 so a singleton group gets 0); verl 0.9.1
``core_algos.compute_grpo_outcome_advantage`` (``eps`` 1e-6 outside the std, ``torch.std``
unbiased, a singleton group has mean 0 and std 1 so its advantage is the raw score / (1 + 1e-6));
OpenRLHF 0.11.2 ``compute_advantages_and_returns`` (``group_norm``: ``eps`` 1e-9, a singleton
gives NaN). See :data:`PRESETS` for the full table.

Per-step evidence: :func:`step_checks` reduces one step's per-sample arrays to these canonical
columns of the per-step frame (floats; NaN where undefined; the ``adv_*`` ones only when
advantages are given):

``reward_null_frac``
    Share of the step's samples whose reward is NaN, None or infinite (unscored), in [0, 1].
``reward_imputed_zero_frac``
    Share of the samples whose reward is exactly 0 when 0 looks imputed: the non-zero rewards
    take 2 to 8 distinct levels, some negative and some positive, and 0 lies between them but
    off the lattice those levels lie on (``l_1 + k d``, ``d`` the greatest common step of their
    differences), so the scoring rule cannot produce it and it ranks above the failures.
    ``{-1, +1}`` plus zeros gives the share of zeros; a 0/1 reward, ``{0, 0.25, 1.25}`` (0 at
    the floor), ``{-1, 3, 4}`` plus zeros (a sum of integer components, 0 = -1 + 1) and
    continuous rewards give 0.0. A genuine ``-1 / 0 / +1`` reward is indistinguishable within
    a step.
``reward_low_precision``
    1.0 when the rewards were held in bfloat16 or float16 (declared with ``reward_dtype``,
    or a float16 / torch bfloat16 input), or when at least 8 distinct rewards that are not
    multiples of 1/64 all lie on the bfloat16 grid (a float32 value does so by chance with
    probability 2^-16: such rewards were rounded through bfloat16 on the way); else 0.0.
``reward_rounding_adv_err``
    First-order bound of the advantage error caused by rounding the rewards to their precision
    (unit roundoff ``u``: 2^-8 bfloat16, 2^-11 float16, 2^-24 float32, 2^-53 float64; the
    precision is ``reward_dtype``, else a low-precision input's, else float32 when every reward
    is a float32 value and float64 when some carry more digits):
    ``max_g u * (max|r_g| + |m_g|) / s_g`` over the groups with spread (``s_g`` with ddof 1).
    About 2 for ``[1, 1, 1, 1.0078125]`` in bfloat16; about 2e-7 for float32 0/1 rewards.
``reward_onepass_relerr``
    Relative error bound of a float32 one-pass variance ``E[x^2] - E[x]^2``:
    ``max_g 2^-24 * (1 + m_g^2 / v_g)`` (``v_g`` with ddof 0) over the groups with spread.
``singleton_group_frac``
    Share of the groups holding one sample.
``uneven_group_frac``
    Share of the samples whose group size differs from the most common group size.
``adv_recompute_err``
    Disagreement of the logged advantages with the best matching reference preset, in units
    of the dtype tolerance (see :func:`compare`): <= 1 means the advantages are what that
    estimator gives.
``adv_batch_normalized``
    1.0 when the best match, within tolerance, is a batch-normalised estimator (REINFORCE++,
    with or without group baseline, or TRL's ``scale_rewards="batch"``), or when no preset
    matches but the advantages are an increasing affine function of the reward (or of the
    group-centred reward) with batch mean within 0.5 of 0 and std in [0.5, 2]: REINFORCE++
    whitened over tokens (verl, OpenRLHF), whose per-sample constants depend on the lengths.
    Group means of the advantages and tied groups with non-zero advantages are then by design.
``adv_bound_excess``
    ``max_g max|a_g| / b_g``: the largest advantage over the largest one the matched
    estimator can give in that group: ``b_g = (G-1)/sqrt(G)`` for std-scaled group estimators
    (Samuelson's inequality; GRPO with unbiased std cannot exceed it), ``(G-1)/G * range_g``
    for Dr. GRPO, ``range_g`` for RLOO, ``(N-1)/sqrt(N)`` over the batch for batch-normalised
    estimators (also when ``adv_batch_normalized`` is 1). Groups without spread are left to
    ``tied_group_adv_nonzero_frac``. > 1 is an artefact (precision loss, eps division of a
    near-zero spread).
``adv_group_mean_max``
    ``max_g |mean(a_g)|`` over the groups of two or more scored samples, over the batch std of
    the advantages: 0 for group-centred estimators; NaN without such groups.
``tied_group_adv_nonzero_frac``
    Share of the tied groups (two or more samples, all rewards equal) holding an advantage
    above the dtype tolerance; 0 for GRPO, Dr. GRPO, RLOO and DAPO.
``noise_group_adv_max``
    Largest deviation of an advantage from its group's mean advantage (``|a|`` for group-centred
    estimators) in a group whose rewards differ only by rounding noise
    (``0 < max - min <= 1e-8 + 1e-5 * max|r_g|``, numpy's ``isclose``, the tolerance of TRL's
    ``frac_reward_zero_std``); an ``eps`` of 1e-9 turns that noise into advantages of about 1.

References
----------
Z. Shao et al. (2024), "DeepSeekMath", arXiv:2402.03300, eq. 3 (GRPO's group normalisation).
Z. Liu et al. (2025), "Understanding R1-Zero-like training: a critical perspective",
arXiv:2503.20783 (Dr. GRPO: no std division). A. Ahmadian et al. (2024), "Back to basics:
revisiting REINFORCE style optimization for learning from human feedback in LLMs",
arXiv:2402.14740 (RLOO). J. Hu (2025), "REINFORCE++", arXiv:2501.03262 (global batch
normalisation). Q. Yu et al. (2025), "DAPO", arXiv:2503.14476 (dynamic sampling drops groups
with all-equal rewards). S. Samuelson (1968), "How deviant can you be?", JASA 63(324).
"""

from __future__ import annotations

import math
import warnings
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt

from advcore import _core
from advcore._arrays import as_float64, check_tolerance
from advcore.errors import AdvcoreError

__all__ = [
    "ADV_METRICS",
    "PRESETS",
    "REWARD_METRICS",
    "Comparison",
    "Preset",
    "compare",
    "dapo",
    "dtype_rtol",
    "grpo",
    "reinforce_pp",
    "rloo",
    "step_checks",
]

F64 = npt.NDArray[np.float64]
#: Per-sample rewards: an array, a Polars Series, a CPU torch tensor, or a list that may hold None.
Rewards = npt.ArrayLike | Sequence[float | None]
Singleton = Literal["zero", "raw", "nan"]
Scale = Literal["group", "batch", "none"]

#: Names :func:`step_checks` returns from rewards and groups alone.
REWARD_METRICS = ("reward_null_frac", "reward_imputed_zero_frac", "reward_low_precision", "reward_rounding_adv_err",
                  "reward_onepass_relerr", "singleton_group_frac", "uneven_group_frac")
#: Names :func:`step_checks` adds when advantages are given.
ADV_METRICS = ("adv_recompute_err", "adv_batch_normalized", "adv_bound_excess", "adv_group_mean_max",
               "tied_group_adv_nonzero_frac", "noise_group_adv_max")

#: Unit roundoff of each precision (half the machine epsilon): the relative rounding error bound.
_UNIT_ROUNDOFF = {"bfloat16": 2.0**-8, "float16": 2.0**-11, "float32": 2.0**-24, "float64": 2.0**-53}
#: Relative tolerance of :func:`compare` per dtype of the logged advantages (see :func:`dtype_rtol`).
_RTOL = {"bfloat16": 2.0**-8, "float16": 2.0**-11, "float32": 1e-5, "float64": 1e-5}
_ALIASES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "half": "float16", "float16": "float16",
            "fp32": "float32", "float": "float32", "float32": "float32", "single": "float32",
            "fp64": "float64", "double": "float64", "float64": "float64"}


def _dtype_name(dtype: Any, name: str) -> str | None:
    """``dtype`` (a string, numpy or torch dtype) as one of the four float names, or None."""
    if dtype is None:
        return None
    text = str(dtype).lower().removeprefix("torch.")
    try:
        text = np.dtype(dtype).name if not isinstance(dtype, str) else text
    except TypeError:
        pass
    if text in _ALIASES:
        return _ALIASES[text]
    raise AdvcoreError(f"`{name}` must be one of bfloat16, float16, float32, float64 (or a numpy/torch dtype), "
                       f"got {dtype!r}")


def dtype_rtol(dtype: Any) -> float:
    """The relative tolerance :func:`compare` allows for advantages held in ``dtype``.

    bfloat16 2^-8 and float16 2^-11 (their unit roundoff: rounding a value to 8 or 11
    significant bits moves it by at most that fraction); float32 1e-5 (84 units of roundoff:
    the group mean and std accumulated in float32 over groups of up to a few hundred samples,
    then a division); float64 also 1e-5, because trainers compute advantages in float32 and a
    float64 log usually holds widened float32 values.
    """
    name = _dtype_name(dtype, "dtype")
    return _RTOL[name or "float32"]


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _float_quiet(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``fn`` with numpy's floating-point warnings off: a value past the float range gives an
    infinite or NaN result, which the caller sees in the output; only ``AdvcoreWarning`` is ours to raise."""

    @functools.wraps(fn)
    def quiet(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return quiet


# --- input handling ------------------------------------------------------------------------------


def _array(x: Any, name: str) -> tuple[F64, str | None]:
    """``x`` as a 1-D float64 array (None -> NaN) and the name of its low-precision dtype if any."""
    low: str | None = None
    dt = getattr(x, "dtype", None)
    if isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype.kind == "f" and x.shape[0]:
        # The common case (a float numpy array): no conversion beyond the widening.
        return np.asarray(x, dtype=np.float64), ("float16" if x.dtype == np.float16 else None)
    if dt is not None and str(dt) in ("torch.bfloat16", "torch.float16"):
        low = "bfloat16" if "bfloat16" in str(dt) else "float16"
        x = x.detach().cpu().float().numpy()
    arr = as_float64(x.to_numpy() if hasattr(x, "to_numpy") else x, name)
    if low is None and isinstance(dt, np.dtype) and dt == np.float16:
        low = "float16"
    if arr.ndim != 1:
        raise AdvcoreError(f"`{name}` must be 1-D (one value per sample), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise AdvcoreError(f"`{name}` is empty")
    return arr, low


def input_precision(x: Any) -> str | None:
    """The low precision an input array is held in, as :func:`step_checks` reads it off the input:
    ``"bfloat16"`` or ``"float16"`` for such torch tensors, ``"float16"`` for a float16 numpy array,
    else None (the values are then judged on their own)."""
    dt = getattr(x, "dtype", None)
    if isinstance(dt, np.dtype):
        return "float16" if dt.kind == "f" and dt.itemsize == 2 else None
    if dt is not None and str(dt) in ("torch.bfloat16", "torch.float16"):
        return "bfloat16" if "bfloat16" in str(dt) else "float16"
    return None


def native_step_checks(
    rewards: Rewards,
    group_ids: npt.ArrayLike,
    adv: npt.ArrayLike | None = None,
    *,
    reward_dtype: Any = None,
    adv_dtype: Any = None,
) -> dict[str, float]:
    """:func:`step_checks` computed by the Rust core (``advcore_stats::checks``): the same keys,
    definitions and NaN conventions, in one pass over the arrays. :func:`advcore.trace.step_row`
    computes them together with the trace; this entry point exists for the tests that hold the two
    to each other. Same parameters, returns and errors as :func:`step_checks`."""
    x, _ = _array(rewards, "rewards")
    if isinstance(rewards, np.ndarray) and rewards.dtype == np.float32 and rewards.ndim == 1:
        x = np.ascontiguousarray(rewards)  # float32 stays float32: the Rust float32 path
    inv, _ = _dense_ids(group_ids, x.shape[0])
    a: npt.NDArray[Any] | None = None
    rtol = 0.0
    if adv is not None:
        a, _ = _array(adv, "adv")
        if isinstance(adv, np.ndarray) and adv.dtype == np.float32 and adv.ndim == 1:
            a = np.ascontiguousarray(adv)
        if a.shape[0] != x.shape[0]:
            raise AdvcoreError(f"`adv` has length {a.shape[0]} but `rewards` has length {x.shape[0]}")
        rtol = _RTOL[_dtype_name(adv_dtype, "adv_dtype") or input_precision(adv) or "float32"]
    return _core.step_checks(x, None, inv, a, _dtype_name(reward_dtype, "reward_dtype"), input_precision(rewards),
                             rtol or 1e-5)


def _dense_ids(group_ids: Any, n: int) -> tuple[npt.NDArray[np.int64], int]:
    """Group ids (int or str, any order) as dense int64 labels 0..K-1, and K."""
    ids = np.asarray(group_ids.to_numpy() if hasattr(group_ids, "to_numpy") else group_ids)
    if ids.ndim != 1:
        raise AdvcoreError(f"`group_ids` must be 1-D (one id per sample), got shape {ids.shape}")
    if ids.shape[0] != n:
        raise AdvcoreError(f"`group_ids` has length {ids.shape[0]} but `rewards` has length {n}")
    if ids.dtype.kind == "f":
        raise AdvcoreError("`group_ids` must be integers or strings, got floats")
    if ids.dtype.kind in "iu" and n > 1 and bool(np.all(ids[1:] >= ids[:-1])):
        # Sorted ids (GRPO's contiguous layout): a new label wherever the id changes.
        inv = np.empty(n, np.int64)
        inv[0] = 0
        np.cumsum(ids[1:] != ids[:-1], out=inv[1:])
        return inv, int(inv[-1]) + 1
    if ids.dtype.kind in "iu" and n and 0 <= ids.min() and ids.max() < 4 * n:
        # Small non-negative ids: a bincount finds the ids in use without sorting.
        present = np.bincount(ids, minlength=1) > 0
        labels = np.cumsum(present) - 1
        return labels[ids].astype(np.int64), int(present.sum())
    try:
        _, inv = np.unique(ids, return_inverse=True)
    except TypeError as e:
        raise AdvcoreError(f"`group_ids` could not be ordered (mixed types?): {e}") from None
    inv = inv.reshape(-1).astype(np.int64)
    return inv, int(inv.max()) + 1


def _omit_moments(x: F64, inv: npt.NDArray[np.int64]) -> tuple[F64, F64, F64, F64, F64]:
    """Count, mean, variance (ddof 0), min and max of each group of dense labels ``inv``, NaN omitted:
    :func:`advcore.stats.grouped_moments` (``nan_policy="omit"``) without its argument checks and
    warnings (``x`` is float64 and ``inv`` dense int64 here), rows in label order."""
    _, count, mean, var, lo, hi, census = _core.grouped_moments(np.ascontiguousarray(x), None, np.ascontiguousarray(inv), 0,
                                                                  "omit", 1e-8, 1e-5)
    k = int(census[0])
    return (np.asarray(count, np.float64)[:k], np.asarray(mean[:k], np.float64), np.asarray(var[:k], np.float64),
            np.asarray(lo[:k], np.float64), np.asarray(hi[:k], np.float64))


class _Groups:
    """One step's rewards with its group statistics, computed once and shared by every estimator."""

    def __init__(self, rewards: Any, group_ids: Any) -> None:
        self.x, self.low = _array(rewards, "rewards")
        # a float32 numpy input: every reward is a float32 value
        self.f32 = isinstance(rewards, np.ndarray) and rewards.dtype == np.float32
        n = self.x.shape[0]
        self.inv, self.k = _dense_ids(group_ids, n)
        self.finite = np.isfinite(self.x)
        self.all_finite = bool(self.finite.all())
        if not self.all_finite:
            self.x = np.where(self.finite, self.x, np.nan)
        count, self.mean, self.var0, self.min, self.max = _omit_moments(self.x, self.inv)
        self.count = count  # scored samples per group
        # samples per group, scored or not
        self.size = self.count.astype(np.int64) if self.all_finite else np.bincount(self.inv, minlength=self.k)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.var1 = np.where(self.count > 1, self.var0 * self.count / (self.count - 1), np.nan)
        self.tied = (self.count >= 2) & (self.max == self.min)
        self.spread = (self.count >= 2) & (self.max > self.min)
        self.single = self.count == 1
        self._cache: dict[str, F64] = {}
        self._moments: dict[str, tuple[float, float]] = {}

    def centred(self) -> F64:
        """``x - m_g`` per sample (cached)."""
        out = self._cache.get("centred")
        if out is None:
            out = self.x - self.per_sample("mean")
            self._cache["centred"] = out
        return out

    def per_sample(self, key: str) -> F64:
        """A per-group column broadcast to the samples (cached)."""
        out = self._cache.get(key)
        if out is None:
            out = getattr(self, key)[self.inv]
            self._cache[key] = out
        return out

    def baseline_centred(self) -> F64:
        """``x - m_g`` with a singleton's mean taken as 0 (verl's REINFORCE++-baseline; cached)."""
        out = self._cache.get("baseline_centred")
        if out is None:
            out = self.centred()
            if self.single.any():
                out = np.where(self.per_sample("single"), self.x, out)
            self._cache["baseline_centred"] = out
        return out

    def batch_std(self, which: Literal["rewards", "baseline_centred"], ddof: int) -> tuple[float, float]:
        """Mean and std (``ddof``) over the scored samples of the rewards or of
        :meth:`baseline_centred` (cached; NaN std when too few)."""
        key = f"{which}/{ddof}"
        hit = self._moments.get(key)
        if hit is None:
            y = self.x if which == "rewards" else self.baseline_centred()
            v = y if self.all_finite else y[self.finite]
            if v.size == 0:
                hit = (math.nan, math.nan)
            else:
                mu = float(v.mean())
                sd = float(np.sqrt(np.sum((v - mu) ** 2) / (v.size - ddof))) if v.size > ddof else math.nan
                hit = (mu, sd)
            self._moments[key] = hit
        return hit


def _check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise AdvcoreError(f"`{name}` must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return str(value)


def _check_ddof(ddof: Any) -> int:
    if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or ddof not in (0, 1):
        raise AdvcoreError(f"`ddof` must be 0 or 1, got {ddof!r}")
    return int(ddof)


def _scaled(gr: _Groups, factor: F64, singleton: str, raw_factor: float) -> F64:
    """``(x - m_g) * factor_g`` per sample, with tied groups at exactly 0 (not 0/0 with eps 0, not the
    rounding of their mean) and groups of one scored sample as ``singleton`` says (``raw``: the
    reward times ``raw_factor``). ``factor`` has one value per group."""
    f = factor.copy()
    f[gr.tied] = 0.0
    if singleton != "raw":
        f[gr.single] = 0.0 if singleton == "zero" else np.nan
    with np.errstate(invalid="ignore"):
        a = gr.centred() * f[gr.inv]
    if singleton == "raw" and gr.single.any():
        mask = gr.per_sample("single") & gr.finite
        a[mask] = gr.x[mask] * raw_factor
    return a


# --- estimators ----------------------------------------------------------------------------------


def _grpo(gr: _Groups, eps: float, ddof: int, scale: str, singleton: str) -> F64:
    with np.errstate(invalid="ignore", divide="ignore"):
        if scale == "group":
            factor = 1.0 / (np.sqrt(gr.var1 if ddof == 1 else gr.var0) + eps)
            raw = 1.0 / (1.0 + eps)  # verl: a group of one has mean 0 and std 1
        elif scale == "batch":
            _, sb = gr.batch_std("rewards", ddof)
            factor = np.full(gr.k, 1.0 / (sb + eps))
            raw = float(factor[0]) if gr.k else 1.0
        else:
            factor = np.ones(gr.k)
            raw = 1.0
    return _scaled(gr, factor, singleton, raw)


@_float_quiet
def grpo(
    rewards: Rewards,
    group_ids: npt.ArrayLike,
    *,
    eps: float = 1e-4,
    ddof: int = 1,
    scale: bool | Scale = True,
    singleton: Singleton = "zero",
) -> F64:
    """GRPO advantages (and Dr. GRPO with ``scale=False``), recomputed in float64.

    Parameters
    ----------
    rewards : array_like, shape (N,)
        One scalar reward per completion (float; NaN/None = unscored: left out of its group's
        statistics, advantage NaN). bfloat16/float16 torch tensors are widened.
    group_ids : array_like, shape (N,), int or str
        The prompt (group) of each completion; any order, any sizes.
    eps : float, default 1e-4
        Added to the std before dividing (TRL 1e-4, verl 1e-6, OpenRLHF 1e-9).
    ddof : {0, 1}, default 1
        Delta degrees of freedom of the std (all three trainers use 1, ``torch.std``).
    scale : bool or {"group", "batch", "none"}, default True
        ``True``/``"group"``: divide by the group std (TRL ``scale_rewards="group"``, verl
        ``norm_adv_by_std_in_grpo=True``); ``"batch"``: by the std of the whole batch (TRL
        ``scale_rewards="batch"``); ``False``/``"none"``: no division (Dr. GRPO).
    singleton : {"zero", "raw", "nan"}, default "zero"
        A group with one scored sample: TRL gives 0 (its ``nanstd`` is NaN and NaN advantages
        are set to 0), verl gives the raw reward ``r / (1 + eps)`` (mean 0, std 1), OpenRLHF NaN.

    Returns
    -------
    ndarray of float64, shape (N,)

    Raises
    ------
    AdvcoreError
        Empty or non-1-D input, ``group_ids`` of another length, a bad ``eps``, ``ddof``,
        ``scale`` or ``singleton``.

    Notes
    -----
    ``a_i = (r_i - m_g) / (s_g + eps)``, ``m_g`` and ``s_g`` the mean and std (``ddof``) of the
    scored rewards of ``i``'s group. Matches TRL 1.16 ``grpo_trainer.py`` lines 2761-2812 and verl
    0.9.1 ``core_algos.compute_grpo_outcome_advantage`` evaluated in exact arithmetic.

    References
    ----------
    Shao et al. (2024), arXiv:2402.03300, eq. 3; Liu et al. (2025), arXiv:2503.20783 (Dr. GRPO).

    Examples
    --------
    >>> grpo([1.0, 0.0, 0.0, 0.0], [0, 0, 0, 0], eps=0.0).tolist()
    [1.5, -0.5, -0.5, -0.5]
    >>> grpo([1.0, 0.0, 0.0, 0.0], ["a"] * 4, scale=False).tolist()
    [0.75, -0.25, -0.25, -0.25]
    """
    sc = _check_choice(("group" if scale else "none") if isinstance(scale, bool) else scale, "scale",
                       ("group", "batch", "none"))
    gr = _Groups(rewards, group_ids)
    single = _check_choice(singleton, "singleton", ("zero", "raw", "nan"))
    return _grpo(gr, check_tolerance(eps, "eps"), _check_ddof(ddof), sc, single)


def _rloo(gr: _Groups, singleton: str) -> F64:
    with np.errstate(invalid="ignore", divide="ignore"):
        factor = gr.count / (gr.count - 1.0)
    return _scaled(gr, factor, singleton, 1.0)


@_float_quiet
def rloo(rewards: Rewards, group_ids: npt.ArrayLike, *, singleton: Singleton = "zero") -> F64:
    """RLOO advantages: each reward minus the mean of the other rewards of its group.

    Parameters
    ----------
    rewards, group_ids : array_like, shape (N,)
        As :func:`grpo`.
    singleton : {"zero", "raw", "nan"}, default "zero"
        A group with one scored sample has no other sample: verl's vectorised RLOO gives 0,
        verl's loop RLOO the raw reward, OpenRLHF NaN (0/0).

    Returns
    -------
    ndarray of float64, shape (N,)

    Notes
    -----
    ``a_i = r_i - (sum_g - r_i) / (n_g - 1) = n_g / (n_g - 1) * (r_i - m_g)``. Matches verl 0.9.1
    ``compute_rloo_outcome_advantage`` (and ``..._vectorized_...`` for singletons), OpenRLHF
    0.11.2 ``rloo`` and TRL's ``RLOOTrainer`` without ``normalize_advantages``.

    References
    ----------
    Ahmadian et al. (2024), arXiv:2402.14740, eq. 7 (leave-one-out baseline of Kool et al. 2019).

    Examples
    --------
    >>> rloo([1.0, 0.0, 0.0, 0.0], [0, 0, 0, 0]).round(6).tolist()
    [1.0, -0.333333, -0.333333, -0.333333]
    """
    gr = _Groups(rewards, group_ids)
    return _rloo(gr, _check_choice(singleton, "singleton", ("zero", "raw", "nan")))


def _reinforce_pp(gr: _Groups, baseline: bool, ddof: int, eps: float) -> F64:
    which: Literal["rewards", "baseline_centred"] = "baseline_centred" if baseline else "rewards"
    y = gr.baseline_centred() if baseline else gr.x
    mu, sd = gr.batch_std(which, ddof)
    return np.asarray((y - mu) / math.sqrt(sd * sd + eps), dtype=np.float64)


@_float_quiet
def reinforce_pp(
    rewards: Rewards,
    group_ids: npt.ArrayLike | None = None,
    *,
    baseline: bool = False,
    ddof: int = 1,
    eps: float = 1e-8,
) -> F64:
    """REINFORCE++ advantages: rewards whitened over the whole batch (outcome reward, gamma 1).

    Parameters
    ----------
    rewards : array_like, shape (N,)
        As :func:`grpo`.
    group_ids : array_like, shape (N,), optional
        Needed with ``baseline=True`` (REINFORCE++-baseline: the group mean is subtracted first;
        a singleton group's mean counts as 0, as verl does).
    baseline : bool, default False
    ddof : {0, 1}, default 1
        Of the batch variance: verl's ``masked_whiten`` uses 1, OpenRLHF's whitening 0.
    eps : float, default 1e-8
        Inside the square root: ``(y - mean) / sqrt(var + eps)`` (verl ``masked_whiten``).

    Returns
    -------
    ndarray of float64, shape (N,)

    Notes
    -----
    ``a_i = (y_i - mean_B(y)) / sqrt(var_B(y) + eps)``. The trainers whiten over tokens, so each
    sample weighs by its length; this per-sample reference equals theirs when the lengths are
    equal (the per-token value at a sample's first token otherwise differs slightly).

    References
    ----------
    J. Hu (2025), "REINFORCE++", arXiv:2501.03262, section 3 (global advantage normalisation).

    Examples
    --------
    >>> reinforce_pp([1.0, 0.0, 0.0, 0.0]).round(6).tolist()
    [1.5, -0.5, -0.5, -0.5]
    """
    if baseline and group_ids is None:
        raise AdvcoreError("`group_ids` is required with `baseline=True`")
    x, _ = _array(rewards, "rewards")
    gr = _Groups(x, group_ids if group_ids is not None else np.zeros(x.shape[0], np.int64))
    return _reinforce_pp(gr, bool(baseline), _check_ddof(ddof), check_tolerance(eps, "eps"))


def _dapo(gr: _Groups, eps: float, ddof: int) -> F64:
    a = _grpo(gr, eps, ddof, "group", "raw")
    if gr.tied.any():
        a[gr.per_sample("tied")] = np.nan
    return a


@_float_quiet
def dapo(rewards: Rewards, group_ids: npt.ArrayLike, *, eps: float = 1e-6, ddof: int = 1) -> F64:
    """DAPO advantages: GRPO with the tied groups (every reward equal) dropped.

    Returns
    -------
    ndarray of float64, shape (N,)
        NaN for the samples of dropped groups (``np.isfinite(a)`` is the keep-mask); the rest
        as :func:`grpo` with ``eps`` 1e-6 and singletons as verl (the DAPO recipe runs on verl).

    References
    ----------
    Yu et al. (2025), "DAPO", arXiv:2503.14476, eq. 11 (dynamic sampling keeps groups with
    ``0 < #correct < G``).

    Examples
    --------
    >>> dapo([1.0, 1.0, 1.0, 0.0], [0, 0, 1, 1], eps=0.0).tolist()
    [nan, nan, 0.7071067811865475, -0.7071067811865475]
    """
    return _dapo(_Groups(rewards, group_ids), check_tolerance(eps, "eps"), _check_ddof(ddof))


# --- trainer presets and the comparison ----------------------------------------------------------

Family = Literal["scaled", "centred", "loo", "batch"]


@dataclass(frozen=True, slots=True)
class Preset:
    """One trainer's estimator with its constants."""

    name: str
    #: how the advantage bound of :func:`step_checks` is computed
    family: Family
    source: str
    fn: Callable[[_Groups], F64] = field(repr=False)


#: Every preset :func:`compare` tries, in order of preference when two match equally well.
PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("trl_grpo", "scaled", "TRL 1.16 GRPOTrainer, scale_rewards='group': eps 1e-4, nanstd ddof 1, singleton 0",
           lambda g: _grpo(g, 1e-4, 1, "group", "zero")),
    Preset("verl_grpo", "scaled", "verl 0.9.1 compute_grpo_outcome_advantage: eps 1e-6, singleton = raw score",
           lambda g: _grpo(g, 1e-6, 1, "group", "raw")),
    Preset("openrlhf_group_norm", "scaled", "OpenRLHF 0.11.2 group_norm: eps 1e-9, singleton NaN",
           lambda g: _grpo(g, 1e-9, 1, "group", "nan")),
    Preset("dr_grpo", "centred", "Dr. GRPO (TRL scale_rewards='none', OpenRLHF dr_grpo): r - group mean",
           lambda g: _grpo(g, 0.0, 1, "none", "zero")),
    Preset("verl_dr_grpo", "centred", "verl 0.9.1 norm_adv_by_std_in_grpo=False: singleton = raw score",
           lambda g: _grpo(g, 0.0, 1, "none", "raw")),
    Preset("rloo", "loo", "RLOO (verl rloo_vectorized, OpenRLHF rloo, TRL RLOOTrainer): singleton 0",
           lambda g: _rloo(g, "zero")),
    Preset("verl_rloo", "loo", "verl 0.9.1 compute_rloo_outcome_advantage (loop): singleton = raw score",
           lambda g: _rloo(g, "raw")),
    Preset("dapo", "scaled", "DAPO (verl recipe): GRPO eps 1e-6 with tied groups dropped",
           lambda g: _dapo(g, 1e-6, 1)),
    Preset("trl_grpo_batch", "batch", "TRL 1.16 scale_rewards='batch': group mean, batch nanstd + 1e-4",
           lambda g: _grpo(g, 1e-4, 1, "batch", "zero")),
    Preset("reinforce_pp", "batch", "REINFORCE++ (verl masked_whiten: unbiased var, rsqrt(var + 1e-8))",
           lambda g: _reinforce_pp(g, False, 1, 1e-8)),
    Preset("reinforce_pp_baseline", "batch", "verl 0.9.1 REINFORCE++-baseline: group-centred, then batch-whitened",
           lambda g: _reinforce_pp(g, True, 1, 1e-8)),
    Preset("openrlhf_reinforce_baseline", "batch", "OpenRLHF 0.11.2 reinforce_baseline: biased batch var",
           lambda g: _reinforce_pp(g, True, 0, 1e-8)),
)}


@dataclass(frozen=True, slots=True)
class Comparison:
    """How logged advantages compare with the float64 references.

    Attributes
    ----------
    best : str
        The first preset (:data:`PRESETS` order) within tolerance, else the closest one.
    family : str
        Its family: ``scaled`` (group std), ``centred`` (Dr. GRPO), ``loo`` (RLOO), ``batch``.
    max_abs_err, mean_abs_err : float
        Largest and mean ``|logged - reference|`` of the best preset, in advantage units.
    err_units : float
        ``max_i |logged_i - ref_i| / (rtol * max(1, |ref_i|))``: the disagreement in units of
        the dtype tolerance; <= 1 means the logged advantages are the reference.
    within_tolerance : bool
        ``err_units <= 1``.
    rtol : float
        The relative tolerance used (:func:`dtype_rtol`).
    n_compared : int
        Samples compared (finite reward, logged advantage and reference).
    errors : dict of str to float
        ``err_units`` of every preset tried (the search stops at the first match).
    """

    best: str
    family: str
    max_abs_err: float
    mean_abs_err: float
    err_units: float
    within_tolerance: bool
    rtol: float
    n_compared: int
    errors: dict[str, float]


@dataclass(frozen=True, slots=True)
class _AdvGroups:
    """Per-group statistics of the logged advantages of the scored samples."""

    mean: F64
    min: F64
    max: F64
    count: F64

    @classmethod
    def of(cls, adv: F64, gr: _Groups) -> _AdvGroups:
        ok = np.isfinite(adv) & gr.finite
        count, mean, _, lo, hi = _omit_moments(adv if ok.all() else np.where(ok, adv, np.nan), gr.inv)
        return cls(mean, lo, hi, count)


def _screen(gr: _Groups, ag: _AdvGroups, rtol: float) -> Callable[[str], bool]:
    """A cheap necessary condition for each preset to match (True = possible): group-centred
    presets leave every group's mean advantage at 0, and every preset fixes the ratio of the
    advantage range to the reward range within a group (1 for Dr. GRPO, ``n/(n-1)`` for RLOO,
    ``1/(s_g + eps)`` for GRPO, ``1/s_B`` for the batch ones), checked on the group with the
    widest reward range, both with 4 times the slack of :func:`compare`'s tolerance."""
    full = (ag.count >= 2) & (ag.count == gr.count)  # groups whose every scored sample has an advantage
    if not full.any():
        return lambda name: True
    # Each logged advantage may be off by rtol * max(1, |a|); a group mean and a range by 1 and 2 times that.
    scale = max(1.0, float(np.nanmax(np.maximum(np.abs(ag.max[full]), np.abs(ag.min[full])))))
    centred_ok = float(np.nanmax(np.abs(ag.mean[full]))) <= 4 * rtol * scale
    spread = full & gr.spread
    ratio: tuple[int, float, float] | None = None
    if spread.any():
        width = np.where(spread, gr.max - gr.min, -np.inf)
        g = int(np.argmax(width))
        arange = float(ag.max[g] - ag.min[g])
        if arange > 0.0:
            tol = 8 * rtol * max(1.0, abs(float(ag.max[g])), abs(float(ag.min[g]))) / arange
            ratio = (g, arange / float(width[g]), tol)

    def possible(name: str) -> bool:
        if PRESETS[name].family != "batch" and not centred_ok:
            return False
        if ratio is None:
            return True
        g, rho, tol = ratio
        expected = _range_ratio(gr, g, name)
        return abs(rho - expected) <= tol * expected

    return possible


def _range_ratio(gr: _Groups, g: int, name: str) -> float:
    """Advantage range over reward range in group ``g`` (which has spread) under preset ``name``."""
    n = float(gr.count[g])
    fixed = {"dr_grpo": 1.0, "verl_dr_grpo": 1.0, "rloo": n / (n - 1.0), "verl_rloo": n / (n - 1.0)}
    if name in fixed:
        return fixed[name]
    eps = {"trl_grpo": 1e-4, "verl_grpo": 1e-6, "openrlhf_group_norm": 1e-9, "dapo": 1e-6}
    if name in eps:
        return 1.0 / (math.sqrt(float(gr.var1[g])) + eps[name])
    if name == "trl_grpo_batch":
        return 1.0 / (gr.batch_std("rewards", 1)[1] + 1e-4)
    which: Literal["rewards", "baseline_centred"] = "rewards" if name == "reinforce_pp" else "baseline_centred"
    sd = gr.batch_std(which, 0 if name == "openrlhf_reinforce_baseline" else 1)[1]
    return 1.0 / math.sqrt(sd * sd + 1e-8)


def _compare(adv: F64, gr: _Groups, rtol: float, names: Sequence[str], ag: _AdvGroups | None = None) -> Comparison:
    fin_adv = np.isfinite(adv) & gr.finite
    best: tuple[float, str, F64, npt.NDArray[np.bool_]] | None = None
    errors: dict[str, float] = {}
    n_max = int(fin_adv.sum())
    all_fin = n_max == adv.shape[0]
    possible = _screen(gr, ag if ag is not None else _AdvGroups.of(adv, gr), rtol)
    # The screen's passes first (it never turns away a match), then, when none of them matches,
    # the rest, so that a mismatch still reports the closest preset of all.
    screen = len(names) > 1
    rest: list[str] = []

    def order() -> Iterator[str]:
        # The screen runs lazily: the presets after a match are never screened.
        for n in names:
            if not screen or possible(n):
                yield n
            else:
                rest.append(n)
        yield from rest

    for name in order():
        ref = PRESETS[name].fn(gr)
        if all_fin and bool(np.isfinite(ref).all()):
            # The common case: nothing to mask.
            units = float(np.max(np.abs(adv - ref) / np.maximum(1.0, np.abs(ref)))) / rtol
            errors[name] = units
            if best is None or units < best[0]:
                best = (units, name, ref, fin_adv)
            if units <= 1.0:
                break
            continue
        ok = fin_adv & np.isfinite(ref)
        n_ok = int(ok.sum())
        if n_ok == 0:  # a preset that leaves every sample out never wins
            errors[name] = math.inf
            continue
        diff = np.abs(adv[ok] - ref[ok])
        units = float(np.max(diff / (rtol * np.maximum(1.0, np.abs(ref[ok])))))
        if n_ok < n_max:
            # The samples the preset leaves out (DAPO's dropped groups, NaN singletons) must carry
            # no advantage in the log either: the trainer dropped them or zeroed them.
            units = max(units, float(np.max(np.abs(adv[fin_adv & ~np.isfinite(ref)]) / rtol)))
        errors[name] = units
        if best is None or units < best[0]:
            best = (units, name, ref, ok)
        if units <= 1.0:
            break
    if best is None:
        raise AdvcoreError("`logged_adv` and `rewards` share no sample where both are finite")
    units, name, ref, ok = best
    diff = np.abs(adv[ok] - ref[ok])
    return Comparison(name, PRESETS[name].family, float(diff.max()), float(diff.mean()), units, units <= 1.0, rtol,
                      int(ok.sum()), errors)


@_float_quiet
def compare(
    logged_adv: npt.ArrayLike,
    rewards: Rewards,
    group_ids: npt.ArrayLike,
    *,
    dtype: Any = None,
    presets: Sequence[str] | None = None,
) -> Comparison:
    """Which estimator produced ``logged_adv``, and how far the logged values are from it.

    Parameters
    ----------
    logged_adv : array_like, shape (N,)
        The per-sequence advantages the trainer logged (for token-level logs, the value at each
        sequence's first token).
    rewards, group_ids : array_like, shape (N,)
        As :func:`grpo`.
    dtype : str or numpy/torch dtype, optional
        The precision the advantages were computed and held in; sets the tolerance
        (:func:`dtype_rtol`). Default: float16 for a float16 array, else float32.
    presets : sequence of str, optional
        Restrict the search to these :data:`PRESETS` names (default: all).

    Returns
    -------
    Comparison

    Raises
    ------
    AdvcoreError
        Arrays of different lengths, an unknown ``dtype`` or preset, no sample where the reward
        and the logged advantage are both finite.

    Notes
    -----
    Each preset is recomputed in float64 from the rewards; the disagreement of sample ``i`` is
    ``|logged_i - ref_i| / (rtol * max(1, |ref_i|))`` (advantages are O(1); for larger ones the
    rounding is relative). The presets are tried in :data:`PRESETS` order: the first within
    tolerance is the match; when none is, the one with the smallest disagreement. Samples a
    preset leaves out (DAPO's dropped groups, OpenRLHF's NaN singletons) count as disagreeing
    unless their logged advantage is 0.

    Examples
    --------
    >>> r, g = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0], [0, 0, 0, 0, 1, 1]
    >>> c = compare(grpo(r, g, eps=1e-6, singleton="raw"), r, g)
    >>> c.best, c.within_tolerance
    ('verl_grpo', True)
    """
    gr = _Groups(rewards, group_ids)
    adv, low = _array(logged_adv, "logged_adv")
    if adv.shape[0] != gr.x.shape[0]:
        raise AdvcoreError(f"`logged_adv` has length {adv.shape[0]} but `rewards` has length {gr.x.shape[0]}")
    names = list(presets) if presets is not None else list(PRESETS)
    for n in names:
        if n not in PRESETS:
            raise AdvcoreError(f"`presets`: unknown preset {n!r} (known: {', '.join(PRESETS)})")
    name = _dtype_name(dtype, "dtype") or low or _guess_dtype(logged_adv)
    return _compare(adv, gr, _RTOL[name], names)


def _guess_dtype(x: Any) -> str:
    dt = getattr(x, "dtype", None)
    return "float16" if isinstance(dt, np.dtype) and dt == np.float16 else "float32"


# --- per-step evidence ---------------------------------------------------------------------------

_MAX_LEVELS = 8


def _lattice_step(levels: F64) -> float:
    """The largest ``d`` with every level ``levels[0] + k * d`` (float Euclid on the differences)."""
    diffs = np.diff(levels)
    scale = float(np.max(np.abs(levels)))
    d = float(diffs[0])
    for x in diffs[1:]:
        a, b = max(d, float(x)), min(d, float(x))
        while b > 1e-9 * scale:
            a, b = b, math.fmod(a, b)
            if b > a - 1e-9 * scale:  # fmod left a value equal to the divisor: a multiple
                b = 0.0
        d = a
    return d


def _imputed_zero_frac(gr: _Groups) -> float:
    x = gr.x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanmin(gr.min), np.nanmax(gr.max)
    if not (lo < 0.0 < hi):
        # No zero, or zero at an end of the range (a 0/1 reward's failures): a missing reward
        # scored as the floor does not reorder anything.
        return 0.0 if np.isfinite(lo) else math.nan
    v = x[gr.finite] if not gr.all_finite else x
    zero = v == 0.0
    if not zero.any():
        return 0.0
    nz = v[~zero]
    if nz.size == 0 or nz.min() == nz.max():
        return 0.0  # one non-zero level (a 0/1 reward): 0 is its other level
    levels = np.unique(nz)
    if levels.size < 2 or levels.size > _MAX_LEVELS:
        return 0.0
    d = _lattice_step(levels)
    if d <= 1e-6 * float(np.max(np.abs(levels))):
        return 0.0  # no common step: not a discrete reward
    k = -float(levels[0]) / d
    if abs(k - round(k)) <= 1e-6 * max(1.0, abs(k)):
        return 0.0  # 0 is a level the scoring rule can produce
    return float(zero.sum()) / x.size


def _on_bf16_grid(v: F64) -> npt.NDArray[np.bool_]:
    f32 = v.astype(np.float32)
    bits = f32.view(np.uint32)
    on_grid: npt.NDArray[np.bool_] = (f32.astype(np.float64) == v) & ((bits & np.uint32(0xFFFF)) == 0)
    return on_grid


def _low_precision(gr: _Groups, declared: str | None) -> str | None:
    if declared in ("bfloat16", "float16"):
        return declared
    if gr.low is not None:
        return gr.low
    if declared is not None:
        return None
    v = gr.x if gr.all_finite else gr.x[gr.finite]
    v64 = v * 64.0
    v = v[v64 != np.round(v64)]  # short dyadic levels (0, 1, 0.5, 3/64, ...) prove nothing
    if v.size >= 8 and bool(_on_bf16_grid(v).all()) and np.unique(v).size >= 8:
        return "bfloat16"
    return None


def _held_in(gr: _Groups) -> str:
    """float32 when every finite reward is a float32 value (what trainers hold rewards in), else
    float64: values with more digits than float32 were not rounded through it."""
    if gr.f32:
        return "float32"
    v = gr.x if gr.all_finite else gr.x[gr.finite]
    return "float32" if bool(np.all(v.astype(np.float32) == v)) else "float64"


@_float_quiet
def step_checks(
    rewards: Rewards,
    group_ids: npt.ArrayLike,
    adv: npt.ArrayLike | None = None,
    *,
    reward_dtype: Any = None,
    adv_dtype: Any = None,
) -> dict[str, float]:
    """The per-step T-stage and REWARD_MISSING evidence of one step's per-sample arrays.

    Parameters
    ----------
    rewards : array_like, shape (N,)
        One reward per sample; NaN/None/inf = unscored (counted, then left out).
    group_ids : array_like, shape (N,), int or str
        The group (prompt) of each sample.
    adv : array_like, shape (N,), optional
        The advantages the trainer used (per sequence). Without them only the reward and
        group metrics are returned.
    reward_dtype, adv_dtype : str or numpy/torch dtype, optional
        The precision the rewards were held in (default: inferred, see ``reward_low_precision``
        and ``reward_rounding_adv_err``)
        and the advantages computed in (default float32; sets the tolerance of :func:`compare`).

    Returns
    -------
    dict of str to float
        The columns named in this module's docstring: :data:`REWARD_METRICS`, plus
        :data:`ADV_METRICS` when ``adv`` is given. NaN where a value is undefined (for example
        no group with spread).

    Raises
    ------
    AdvcoreError
        Empty input, arrays of different lengths, an unknown dtype name.

    Examples
    --------
    >>> out = step_checks([1.0, 0.0, 1.0, 1.0], [0, 0, 1, 1], [0.7071, -0.7071, 0.0, 0.0])
    >>> out["adv_recompute_err"] <= 1, out["tied_group_adv_nonzero_frac"], out["singleton_group_frac"]
    (True, 0.0, 0.0)
    """
    gr = _Groups(rewards, group_ids)
    n = gr.x.shape[0]
    declared = _dtype_name(reward_dtype, "reward_dtype")
    low = _low_precision(gr, declared)
    precision = low or declared or _held_in(gr)
    out: dict[str, float] = {
        "reward_null_frac": float(n - int(gr.finite.sum())) / n,
        "reward_imputed_zero_frac": _imputed_zero_frac(gr),
        "reward_low_precision": 1.0 if low else 0.0,
    }
    sp = gr.spread
    if sp.any():
        s1 = np.sqrt(gr.var1[sp])
        mags = np.maximum(np.abs(gr.max[sp]), np.abs(gr.min[sp]))
        out["reward_rounding_adv_err"] = float(np.max(_UNIT_ROUNDOFF[precision] * (mags + np.abs(gr.mean[sp])) / s1))
        out["reward_onepass_relerr"] = float(np.max(2.0**-24 * (1.0 + gr.mean[sp] ** 2 / gr.var0[sp])))
    else:
        out["reward_rounding_adv_err"] = out["reward_onepass_relerr"] = math.nan
    sizes = gr.size
    out["singleton_group_frac"] = float(np.count_nonzero(sizes == 1)) / gr.k
    counts = np.bincount(sizes)
    mode = int(np.argmax(counts))
    out["uneven_group_frac"] = float(sizes[sizes != mode].sum()) / n
    if adv is not None:
        out.update(_adv_checks(gr, adv, adv_dtype))
    return out


def _whitened(adv: F64, gr: _Groups, rtol: float) -> bool:
    """Advantages whitened over the batch with weights we do not know (verl and OpenRLHF whiten
    over tokens, so each sample weighs by its length): an increasing affine function of the
    reward, or of the group-centred reward, with a batch mean within 0.5 of 0 and a std in
    [0.5, 2]. A batch mean subtracted without the scaling (std = the reward's) is not one."""
    fin = np.isfinite(adv) & gr.finite
    a = adv[fin]
    if a.size < 3:
        return False
    ac = a - a.mean()
    sd = float(np.sqrt(np.mean(ac * ac)))
    if not (abs(float(a.mean())) <= 0.5 and 0.5 <= sd <= 2.0):
        return False
    for y in (gr.x[fin], gr.baseline_centred()[fin]):
        yc = y - y.mean()
        ss = float(yc @ yc)
        if ss <= 0.0:
            continue
        beta = float(yc @ ac) / ss
        if beta > 0 and float(np.max(np.abs(ac - beta * yc) / np.maximum(1.0, np.abs(a)))) <= rtol:
            return True
    return False


def _adv_checks(gr: _Groups, adv_in: Any, adv_dtype: Any) -> dict[str, float]:
    adv, low = _array(adv_in, "adv")
    if adv.shape[0] != gr.x.shape[0]:
        raise AdvcoreError(f"`adv` has length {adv.shape[0]} but `rewards` has length {gr.x.shape[0]}")
    name = _dtype_name(adv_dtype, "adv_dtype") or low or _guess_dtype(adv_in)
    rtol = _RTOL[name]
    out: dict[str, float] = {}
    fin = np.isfinite(adv)
    if not (fin & gr.finite).any():
        return dict.fromkeys(ADV_METRICS, math.nan)
    ag = _AdvGroups.of(adv, gr)
    cmp = _compare(adv, gr, rtol, list(PRESETS), ag)
    out["adv_recompute_err"] = cmp.err_units
    batch = (cmp.within_tolerance and cmp.family == "batch") or (not cmp.within_tolerance and _whitened(adv, gr, rtol))
    out["adv_batch_normalized"] = 1.0 if batch else 0.0
    gmax = np.nan_to_num(np.maximum(np.abs(ag.max), np.abs(ag.min)))
    cnt = gr.count
    if batch or cmp.family == "batch":
        nb = float(np.count_nonzero(fin & gr.finite))
        bound = np.full(gr.k, (nb - 1.0) / math.sqrt(nb) if nb > 1 else math.nan)
    elif cmp.family == "scaled":
        with np.errstate(invalid="ignore", divide="ignore"):
            bound = (cnt - 1.0) / np.sqrt(cnt)
    elif cmp.family == "centred":
        bound = (cnt - 1.0) / np.maximum(cnt, 1.0) * (gr.max - gr.min)
    else:
        bound = gr.max - gr.min
    sp = gr.spread
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = gmax[sp] / bound[sp]
    ratio = ratio[np.isfinite(ratio)]
    out["adv_bound_excess"] = float(ratio.max()) if ratio.size else math.nan
    # Group means of the advantages, over the batch std of the advantages.
    n_fin = int(fin.sum())
    sd = (float(np.std(adv if n_fin == adv.shape[0] else adv[fin])) if n_fin > 1 else math.nan)
    gmean = np.abs(ag.mean[(ag.count > 0) & (gr.count >= 2)])  # groups of one are singletons
    if sd > 0 and gmean.size:
        out["adv_group_mean_max"] = float(gmean.max()) / sd
    else:
        out["adv_group_mean_max"] = 0.0 if gmean.size and float(gmean.max()) == 0.0 else math.nan
    tied = gr.tied
    n_tied = int(tied.sum())
    out["tied_group_adv_nonzero_frac"] = (float(np.count_nonzero(gmax[tied] > rtol)) / n_tied) if n_tied else 0.0
    scale = np.maximum(np.abs(gr.max), np.abs(gr.min))
    noise = sp & (gr.max - gr.min <= 1e-8 + 1e-5 * scale)
    if noise.any():
        # The spread the advantages got inside those groups: |a| for group-centred estimators, and
        # rounding-sized for batch-normalised ones (whose group offset is by design).
        mean_a = ag.mean[noise]
        dev = np.maximum(ag.max[noise] - mean_a, mean_a - ag.min[noise])
        dev = dev[np.isfinite(dev)]
        out["noise_group_adv_max"] = float(dev.max()) if dev.size else 0.0
    else:
        out["noise_group_adv_max"] = 0.0
    return out
