"""The lab's tasks and policy: a linear softmax policy over short action sequences.

A *task* is a feature vector ``z`` (``d_z`` standard normal values) with a horizon ``h`` (1 to
``H``) and a difficulty ``c`` (number of correct actions out of ``K`` at each position). A fixed
random *teacher* ``U`` of shape ``(H, K, d_z)`` decides what is correct: at position ``j`` the
correct actions are the ``c`` largest entries of ``U[j] @ z``. A completion is a sequence of ``h``
actions; it succeeds when every action is correct (reward 1, else 0), optionally plus a graded
term ``shaping * mean_j quality[j, a_j]`` with a fixed per-task quality table in [0, 1).

The policy is linear in the task features: ``logits[j] = theta[j] @ phi(z)`` with
``phi(z) = [z, 1]`` and ``theta`` of shape ``(H, K, d_z + 1)`` (zero at the start: uniform
actions). Because the teacher is linear in ``z`` too, ``theta[j] = beta * [U[j], 0]`` solves every
task, so what the policy learns on the training tasks carries over to held-out tasks drawn from
the same generator: held-out success measures generalisation, not memorisation.

Success probabilities are computed exactly (``prod_j sum_{k in C_j} pi_j(k)``), so the held-out
score has no sampling noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ["POOLS", "Policy", "TaskSet", "make_tasks", "make_teacher", "softmax"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

#: Task pools: (difficulties c, horizons h, probability of each horizon). ``standard`` is the
#: healthy curriculum (initial success about 0.25); ``easy`` is (nearly) always solved (c = K for
#: 80 % of the tasks, K - 1 for the rest);
#: ``hard`` needs ``H`` correct actions in a row of which the last ones were never trained
#: (success about 1e-3); ``bimodal`` mixes easy and hard half and half; ``intro`` is a curriculum's
#: first stage, easier than ``standard`` but still to be learnt (c = 2 to K - 1, one action: initial
#: success about 0.55, tasks of varied difficulty as in ``standard``). ``intro`` is drawn last, so that adding it left the other pools' tasks unchanged.
POOLS = ("standard", "easy", "hard", "bimodal", "intro")


@dataclass(frozen=True, slots=True)
class TaskSet:
    """A set of ``T`` tasks.

    Attributes
    ----------
    z : ndarray of float64, shape (T, d_z)
        Task features (standard normal).
    horizon : ndarray of int64, shape (T,)
        Actions per completion, 1 to ``H``.
    n_correct : ndarray of int64, shape (T,)
        Correct actions per position (the difficulty ``c``), 1 to ``K``.
    correct : ndarray of bool, shape (T, H, K)
        Which action is correct at each position (all True past the horizon).
    quality : ndarray of float64, shape (T, H, K)
        The graded term of the reward, in [0, 1).
    labels : dict of str to ndarray of str, shape (T,)
        Slice labels of each task (the ``vla`` pool: ``family``, ``horizon``, ``variation``); empty for
        the other pools.
    """

    z: F64
    horizon: I64
    n_correct: I64
    correct: B
    quality: F64
    labels: dict[str, npt.NDArray[np.str_]] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return int(self.z.shape[0])

    @property
    def phi(self) -> F64:
        """Policy features ``[z, 1]``, shape (T, d_z + 1)."""
        return np.concatenate([self.z, np.ones((self.size, 1))], axis=1)


def make_teacher(rng: np.random.Generator, *, horizon: int, actions: int, dim: int) -> F64:
    """The teacher ``U``, shape ``(horizon, actions, dim)``, standard normal."""
    return rng.standard_normal((horizon, actions, dim))


def make_tasks(rng: np.random.Generator, teacher: F64, n: int, pool: str) -> TaskSet:
    """``n`` tasks of ``pool`` (one of :data:`POOLS`) under ``teacher``."""
    big_h, k, dim = teacher.shape
    if pool == "standard":
        c = rng.integers(1, 5, n)
        h = np.where(rng.random(n) < 0.3, 2, 1)
    elif pool == "easy":
        c = np.where(rng.random(n) < 0.8, k, k - 1)
        h = np.ones(n, np.int64)
    elif pool == "hard":
        c = np.ones(n, np.int64)
        h = np.full(n, big_h)
    elif pool == "intro":
        c = rng.integers(2, k, n)
        h = np.ones(n, np.int64)
    elif pool == "bimodal":
        easy = rng.random(n) < 0.5
        c = np.where(easy, k - 1, 1)
        h = np.where(easy, 1, big_h)
    else:
        raise ValueError(f"unknown pool {pool!r}")
    z = rng.standard_normal((n, dim))
    scores = np.einsum("hkd,nd->nhk", teacher, z)
    rank = np.argsort(np.argsort(-scores, axis=2), axis=2)  # 0 = the teacher's favourite action
    correct = rank < c[:, None, None]
    correct[np.arange(big_h)[None, :] >= h[:, None]] = True
    quality = rng.random((n, big_h, k))
    return TaskSet(z, h.astype(np.int64), c.astype(np.int64), correct, quality)


def softmax(logits: F64) -> F64:
    """Softmax over the last axis (max-shifted)."""
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    out: F64 = e / e.sum(axis=-1, keepdims=True)
    return out


class Policy:
    """A linear softmax policy per position: ``pi_j(. | z) = softmax(theta[j] @ [z, 1])``.

    ``theta`` has shape ``(H, K, d_z + 1)`` and starts at 0 (uniform over the ``K`` actions).
    """

    def __init__(self, horizon: int, actions: int, dim: int) -> None:
        self.theta: F64 = np.zeros((horizon, actions, dim + 1))

    def probs(self, phi: F64, theta: F64 | None = None) -> F64:
        """Action probabilities, shape ``(N, H, K)``, for features ``phi`` of shape ``(N, d_z + 1)``."""
        th = self.theta if theta is None else theta
        return softmax(np.einsum("hkd,nd->nhk", th, phi))

    def sample(self, rng: np.random.Generator, probs: F64) -> I64:
        """One action per position, shape ``(N, H)``, by inverse-CDF sampling from ``probs``."""
        cdf = np.cumsum(probs, axis=2)
        u = rng.random(probs.shape[:2] + (1,))
        out: I64 = np.minimum((u > cdf).sum(axis=2), probs.shape[2] - 1).astype(np.int64)
        return out

    def success(self, tasks: TaskSet, theta: F64 | None = None) -> F64:
        """Exact success probability per task, shape ``(T,)``: ``prod_j pi_j(C_j)`` over the horizon."""
        p = self.probs(tasks.phi, theta)
        mass = (p * tasks.correct).sum(axis=2)  # 1 past the horizon (every action correct)
        out: F64 = mass.prod(axis=1)
        return out
