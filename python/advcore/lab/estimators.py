"""The lab's advantage estimators.

The group estimators call :mod:`advcore.reference` (float64) for the advantage step, with the
trainer constants named below; the lab never re-implements them. PPO's learned value baseline
and GAE are here (numpy).

=============  ===============================================================  =================
name           advantage                                                         loss aggregation
=============  ===============================================================  =================
grpo           :func:`advcore.reference.grpo`, TRL preset (eps 1e-4, ddof 1)     sequence mean
dr_grpo        :func:`advcore.reference.grpo` with ``scale=False``               sum / (N * H)
rloo           :func:`advcore.reference.rloo`                                    token mean
reinforce_pp   :func:`advcore.reference.reinforce_pp` (batch whitening, eps      token mean
               1e-8, ddof 1: verl ``masked_whiten``)
dapo           :func:`advcore.reference.dapo` (verl eps 1e-6) plus dynamic       token mean
               sampling: tied groups are dropped and more prompts drawn
ppo            GAE(gamma 1, lambda 0.95) over a linear critic, whitened over      token mean
               the batch's tokens (verl ``compute_gae_advantage_return``)
=============  ===============================================================  =================

Loss aggregation: *sequence mean* averages each completion's token terms, then the completions
(TRL ``loss_type="grpo"``); *token mean* averages over every token of the batch (verl default,
DAPO); *sum / (N * H)* divides by a constant (Dr. GRPO's fix of the length bias).

References
----------
J. Schulman, P. Moritz, S. Levine, M. Jordan, P. Abbeel (2016), "High-dimensional continuous
control using generalized advantage estimation", ICLR, eq. 16 (GAE). J. Schulman, F. Wolski,
P. Dhariwal, A. Radford, O. Klimov (2017), "Proximal policy optimization algorithms",
arXiv:1707.06347, eq. 7 (clipped surrogate). The group estimators: see :mod:`advcore.reference`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from advcore import reference
from advcore.errors import AdvcoreError

__all__ = ["ESTIMATORS", "Critic", "Estimator", "gae", "get_estimator", "group_advantages"]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Estimator:
    """One estimator: its name, how its loss is aggregated, its default learning rate and source."""

    name: str
    group_based: bool
    loss_agg: str  # "seq_mean" | "token_mean" | "const"
    lr: float
    description: str


#: Every estimator by name. Learning rates are tuned so that a healthy 80-step run learns
#: (held-out success from about 0.25 to above 0.5) without collapsing its entropy.
ESTIMATORS: dict[str, Estimator] = {e.name: e for e in (
    Estimator("grpo", True, "seq_mean", 0.5, "GRPO, TRL preset: (r - mean_g) / (std_g + 1e-4)"),
    Estimator("dr_grpo", True, "const", 4.0, "Dr. GRPO: r - mean_g, constant loss normaliser"),
    Estimator("rloo", True, "token_mean", 1.0, "RLOO: r - mean of the other samples of the group"),
    Estimator("reinforce_pp", True, "token_mean", 0.5, "REINFORCE++: rewards whitened over the batch"),
    Estimator("dapo", True, "token_mean", 0.5, "DAPO: GRPO (eps 1e-6) on groups with spread (dynamic sampling)"),
    Estimator("ppo", False, "token_mean", 0.5, "PPO: GAE over a learned linear critic, whitened"),
)}

_DEFAULT_EPS = {"grpo": 1e-4, "dapo": 1e-6}


def get_estimator(name: str) -> Estimator:
    """The estimator called ``name``; :class:`AdvcoreError` naming ``estimator`` otherwise."""
    if name not in ESTIMATORS:
        raise AdvcoreError(f"`estimator`: unknown estimator {name!r} (known: {', '.join(ESTIMATORS)})")
    return ESTIMATORS[name]


def group_advantages(name: str, rewards: F64, group_ids: npt.NDArray[np.int64], *, eps: float | None = None) -> F64:
    """Per-sample advantages of a group estimator, shape ``(N,)`` float64, from :mod:`advcore.reference`.

    ``rewards`` are the values the estimator receives (after any faulty step); ``group_ids`` the
    ids it groups by. ``eps`` overrides the std eps of ``grpo``/``dapo``. DAPO's dropped groups
    are NaN (the caller leaves them out of the update).
    """
    if name == "grpo":
        return reference.grpo(rewards, group_ids, eps=_DEFAULT_EPS[name] if eps is None else eps, ddof=1)
    if name == "dr_grpo":
        return reference.grpo(rewards, group_ids, scale=False)
    if name == "rloo":
        return reference.rloo(rewards, group_ids)
    if name == "reinforce_pp":
        return reference.reinforce_pp(rewards, group_ids)
    if name == "dapo":
        return reference.dapo(rewards, group_ids, eps=_DEFAULT_EPS[name] if eps is None else eps)
    raise AdvcoreError(f"`estimator`: {name!r} is not a group estimator")


def gae(rewards: F64, values: F64, mask: npt.NDArray[np.bool_], *, gamma: float = 1.0, lam: float = 0.95) -> F64:
    """Generalised advantage estimates per token, shape ``(N, H)``.

    Parameters
    ----------
    rewards : ndarray, shape (N,)
        The outcome reward of each completion, received after its last valid token.
    values : ndarray, shape (N, H)
        The critic's value of each token's state (ignored past the mask).
    mask : ndarray of bool, shape (N, H)
        Valid tokens: a prefix of each row.
    gamma, lam : float
        Discount and GAE lambda.

    Notes
    -----
    ``delta_j = r 1[j = last] + gamma V_{j+1} 1[j < last] - V_j`` and
    ``A_j = delta_j + gamma lam A_{j+1}`` (Schulman et al. 2016, eq. 16); 0 past the mask.
    """
    n, h = mask.shape
    adv = np.zeros((n, h))
    nxt_v = np.zeros(n)
    nxt_a = np.zeros(n)
    for j in range(h - 1, -1, -1):
        valid = mask[:, j]
        last = valid & ~(mask[:, j + 1] if j + 1 < h else np.zeros(n, bool))
        delta = np.where(last, rewards, gamma * nxt_v) - values[:, j]
        a = delta + np.where(last, 0.0, gamma * lam * nxt_a)
        adv[:, j] = np.where(valid, a, 0.0)
        nxt_v = np.where(valid, values[:, j], 0.0)
        nxt_a = adv[:, j]
    return adv


class Critic:
    """A linear value function ``V(s) = w @ psi(s)`` fitted by gradient steps on the squared error.

    The state of token ``j`` of a completion is its task, its position and whether every action so
    far was correct (what a sequence model could read off its own prefix):
    ``psi = [z, 1, c / K, h / H, onehot(j), prefix_ok]``.
    """

    def __init__(self, dim: int, horizon: int, *, lr: float = 0.1, epochs: int = 4) -> None:
        self.horizon = horizon
        self.w: F64 = np.zeros(dim + 3 + horizon + 1 + 1)
        self.lr, self.epochs = lr, epochs

    def features(self, z: F64, n_correct: npt.NDArray[np.int64], horizon: npt.NDArray[np.int64], actions: int,
                 prefix_ok: npt.NDArray[np.bool_], critic_input: str, returns: F64 | None = None) -> F64:
        """``psi`` per token, shape ``(N, H, F)``; ``critic_input`` as :class:`advcore.lab.faults.Setting`."""
        n, h = prefix_ok.shape
        base = np.concatenate([z, np.ones((n, 1)), (n_correct / actions)[:, None], (horizon / h)[:, None]], axis=1)
        psi = np.zeros((n, h, self.w.shape[0]))
        psi[:, :, : base.shape[1]] = base[:, None, :]
        psi[:, np.arange(h), base.shape[1] + np.arange(h)] = 1.0
        psi[:, :, base.shape[1] + h] = prefix_ok
        if critic_input == "blind":
            psi[:] = 0.0
            psi[:, :, z.shape[1]] = 1.0  # the bias alone: a constant observation
        elif critic_input == "leak" and returns is not None:
            psi[:, :, -1] = returns[:, None]
        return psi

    def values(self, psi: F64) -> F64:
        out: F64 = psi @ self.w
        return out

    def fit(self, psi: F64, targets: F64, mask: npt.NDArray[np.bool_]) -> None:
        """A few full-batch gradient steps of ``mean (V - target)^2`` over the valid tokens."""
        x, y = psi[mask], targets[mask]
        for _ in range(self.epochs):
            self.w -= self.lr * 2.0 * x.T @ (x @ self.w - y) / max(len(y), 1)
