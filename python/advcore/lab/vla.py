"""The lab's VLA-shaped setting: tasks with families, horizons and visual variations as slice labels.

Vision-language-action suites (LIBERO, RoboTwin) train one policy on task families whose episodes
differ in length and in what the camera sees; aggregate success hides the slice that stopped
learning (seed 002). The ``vla`` pool (:class:`advcore.lab.faults.Setting` ``pool="vla"``) draws
tasks of the lab's generator (:mod:`advcore.lab.policy`) with three labels:

* ``family`` (:data:`FAMILIES`): how many actions are correct at each position (the family's
  difficulty ``c``): ``pick`` 4, ``place`` 3, ``open`` 2 out of ``K`` = 8; and which ones: each family
  has its own teacher, the shared one plus a family part (:func:`family_teachers`), and the policy
  sees the task's features in a shared block and in its family's block (:func:`observation_dim`), so
  what it learns on one family carries over to the others only in part;
* ``horizon``: ``short`` (1 or 2 actions per episode) or ``long`` (:data:`LONG_HORIZON` = 3), with
  probability :data:`LONG_SHARE`;
* ``variation``: ``clean``, or ``perturbed`` (probability :data:`PERTURBED_SHARE`): the policy sees
  the task's features plus a fixed per-task offset (a camera or lighting change); the teacher, which
  decides what is correct, sees the true task.

The held-out tasks are drawn from the same generator with their own labels, so held-out success is
reported per slice (``heldout_success/<label>=<value>`` in the per-step metrics). A run records the
labels as ``slice_family``, ``slice_horizon`` and ``slice_variation`` columns of its samples.

The single-slice faults (:data:`advcore.lab.faults.SLICE_FAULTS`) act through
``Setting.slice_fault``, see :func:`slice_effects`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from advcore.lab.policy import TaskSet

__all__ = ["FAMILIES", "FAMILY_SHIFT", "LABELS", "family_teachers", "observation_dim", "LONG_HORIZON", "LONG_SHARE", "PERTURBATION", "PERTURBED_SHARE", "SLICE_FAULT_TARGETS",
           "make_vla_tasks", "reward_factor", "slice_effects"]

F64 = npt.NDArray[np.float64]

#: Task families and their difficulty (correct actions out of K at each position).
FAMILIES: dict[str, int] = {"pick": 4, "place": 3, "open": 2}
#: Actions per episode of a long-horizon task.
LONG_HORIZON = 3
#: Share of long-horizon tasks.
LONG_SHARE = 0.4
#: Share of tasks seen through the perturbation.
PERTURBED_SHARE = 0.5
#: Scale of the per-task observation offset of a perturbed task (the task features are standard normal).
PERTURBATION = 0.7
#: Scale of each family's own part of the teacher (the shared teacher is standard normal).
FAMILY_SHIFT = 1.0
#: The slice labels, in the order they are recorded.
LABELS = ("family", "horizon", "variation")

#: ``Setting.slice_fault`` -> the slice it hits.
SLICE_FAULT_TARGETS: dict[str, str] = {
    "saturate_family": "family=place",
    "truncate_long": "horizon=long",
    "blind_success_check": "variation=perturbed",
    "scale_family_reward": "family=open",
}


def family_teachers(rng: np.random.Generator, teacher: F64) -> F64:
    """One teacher per family, shape ``(F, H, K, d_z)``: the shared ``teacher`` plus a family part of
    scale :data:`FAMILY_SHIFT` (each family asks for partly different actions in the same situation)."""
    return teacher[None] + FAMILY_SHIFT * rng.standard_normal((len(FAMILIES), *teacher.shape))


def observation_dim(dim: int) -> int:
    """Features the policy sees for task features of ``dim`` values: a shared block and one block per
    family (the instruction tells the policy the family: it can learn what is shared and what is not)."""
    return dim * (1 + len(FAMILIES))


def make_vla_tasks(rng: np.random.Generator, teachers: F64, n: int) -> TaskSet:
    """``n`` tasks of the ``vla`` pool under the family ``teachers`` (:func:`family_teachers`), with
    their labels; the task features are the policy's observation (:func:`observation_dim` values)."""
    n_fam, big_h, k, dim = teachers.shape
    names = list(FAMILIES)
    fam = rng.integers(0, len(names), n)
    c = np.array([FAMILIES[names[i]] for i in fam], dtype=np.int64)
    long = rng.random(n) < LONG_SHARE
    h = np.where(long, min(LONG_HORIZON, big_h), rng.integers(1, 3, n)).astype(np.int64)
    perturbed = rng.random(n) < PERTURBED_SHARE
    z = rng.standard_normal((n, dim))
    scores = np.einsum("nhkd,nd->nhk", teachers[fam], z)
    rank = np.argsort(np.argsort(-scores, axis=2), axis=2)
    correct = rank < np.minimum(c, k)[:, None, None]
    correct[np.arange(big_h)[None, :] >= h[:, None]] = True
    quality = rng.random((n, big_h, k))
    offset = PERTURBATION * rng.standard_normal((n, dim))
    view = np.where(perturbed[:, None], z + offset, z)  # what the camera shows
    seen = np.zeros((n, observation_dim(dim)))
    seen[:, :dim] = view
    for i in range(n_fam):
        rows = fam == i
        seen[rows, dim * (1 + i):dim * (2 + i)] = view[rows]
    labels = {
        "family": np.array([names[i] for i in fam], dtype=np.str_),
        "horizon": np.where(long, "long", "short").astype(np.str_),
        "variation": np.where(perturbed, "perturbed", "clean").astype(np.str_),
    }
    return TaskSet(seen, h, c, correct, quality, labels)


def _member(tasks: TaskSet, task: npt.NDArray[np.int64], target: str) -> npt.NDArray[np.bool_]:
    label, value = target.split("=", 1)
    out: npt.NDArray[np.bool_] = tasks.labels[label][task] == value
    return out


def slice_effects(fault: str, tasks: TaskSet, task: npt.NDArray[np.int64], success: F64) -> F64:
    """The scored success of each completion under ``fault`` (``Setting.slice_fault``):

    * ``saturate_family``: the ``place`` tasks are served in a state where any action completes them
      (a curriculum or reset bug): success 1 whatever the policy does;
    * ``truncate_long``: the episode time limit is cut below the long horizon: long episodes time out, 0;
    * ``blind_success_check``: the success check reads the perturbed camera and never confirms: 0;
    * ``scale_family_reward``: unchanged here (see :func:`reward_factor`).
    """
    if not fault or fault == "scale_family_reward":
        return success
    hit = _member(tasks, task, SLICE_FAULT_TARGETS[fault])
    return np.where(hit, 1.0 if fault == "saturate_family" else 0.0, success)


def reward_factor(fault: str, tasks: TaskSet, task: npt.NDArray[np.int64]) -> F64:
    """Per completion, the factor applied to its reward between scoring and the advantage:
    ``scale_family_reward`` multiplies the ``open`` family's by 1e-8 (a per-task reward normaliser
    that blew up), everything else by 1."""
    if fault != "scale_family_reward" or not tasks.labels:
        return np.ones(task.shape[0])
    return np.where(_member(tasks, task, SLICE_FAULT_TARGETS[fault]), 1e-8, 1.0)
