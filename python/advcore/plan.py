"""How many GRPO groups will tie before a run starts: the group-size planner behind ``advcore plan``.

A group of ``G`` completions of one prompt gives GRPO no advantage when every completion gets the same
reward (the group-normalized advantage ``(r - mean) / std`` is 0 for all of them: DeepSeekMath's GRPO,
arXiv 2402.03300, section 4.1; DAPO's dynamic sampling, arXiv 2503.14476, drops such groups and samples
again). With binary rewards and a prompt solved with probability ``p``, the chance its group ties is
``p**G + (1 - p)**G``. Over prompts with success rates ``p_1 .. p_m`` drawn uniformly into a batch of
``B`` prompts, the expected tied share is the mean ``t`` of that chance, and the number of tied groups in
a batch is binomial(``B``, ``t``) (:func:`tied_count_distribution`): each prompt of the batch is tied
with chance ``t``, independently.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from advcore.errors import AdvcoreError

__all__ = ["GroupPlan", "plan", "read_success_rates", "smallest_group", "tied_chance", "tied_count_distribution"]

#: The largest group size :func:`smallest_group` tries.
MAX_GROUP = 4096


def _rates(success: Sequence[float] | np.ndarray, name: str = "success") -> np.ndarray:
    p = np.asarray(success, dtype=np.float64).ravel()
    if p.size == 0:
        raise AdvcoreError(f"{name}: no success rate given")
    bad = p[~((p >= 0.0) & (p <= 1.0))]
    if bad.size:
        raise AdvcoreError(f"{name}: a success rate is a probability in [0, 1], got {bad[0]!r}")
    return p


def _group(group_size: int) -> int:
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 1:
        raise AdvcoreError(f"group_size: a positive whole number of completions per prompt, got {group_size!r}")
    return int(group_size)


def tied_chance(success: Sequence[float] | np.ndarray, group_size: int) -> np.ndarray:
    """Per prompt (float64 array, the shape of ``success``), the probability that a group of ``group_size``
    binary rewards drawn with success probability ``p`` is tied: ``p**G + (1 - p)**G`` (1 for ``G = 1``,
    for ``p`` 0 or 1). Raises :class:`AdvcoreError` for a rate outside [0, 1] or a size below 1."""
    p, g = _rates(success), _group(group_size)
    return np.asarray(p ** g + (1.0 - p) ** g)


def tied_count_distribution(success: Sequence[float] | np.ndarray, group_size: int, prompts: int) -> np.ndarray:
    """The probability of ``k`` tied groups, ``k = 0 .. prompts``, in a batch of ``prompts`` prompts each drawn
    uniformly (with replacement) from ``success``: every prompt is tied with the mean chance ``t``
    (:func:`tied_chance`), independently, so the count is binomial(``prompts``, ``t``). Float64, sums to 1."""
    if isinstance(prompts, bool) or not isinstance(prompts, (int, np.integer)) or prompts < 1:
        raise AdvcoreError(f"prompts: a positive whole number of prompts per batch, got {prompts!r}")
    t = float(tied_chance(success, group_size).mean())
    k = np.arange(prompts + 1)
    log = np.array([math.lgamma(prompts + 1) - math.lgamma(i + 1) - math.lgamma(prompts - i + 1) for i in k])
    with np.errstate(divide="ignore"):
        out = np.exp(log + k * np.log(t) + (prompts - k) * np.log1p(-t)) if 0.0 < t < 1.0 else (
            (k == prompts).astype(float) if t >= 1.0 else (k == 0).astype(float))
    return np.asarray(out / out.sum())


def smallest_group(success: Sequence[float] | np.ndarray, target: float, largest: int = MAX_GROUP) -> int | None:
    """The smallest group size whose expected tied share is at most ``target``, or None when no size up to
    ``largest`` reaches it: prompts always solved or never solved tie at every size, so the share cannot
    fall below their share (the floor)."""
    if not 0.0 <= target <= 1.0:
        raise AdvcoreError(f"target: a tied share in [0, 1], got {target!r}")
    p = _rates(success)
    # the tied chance falls with G for every 0 < p < 1: a doubling search, then bisection
    lo, hi = 1, 1
    while float(tied_chance(p, hi).mean()) > target:
        if hi >= largest:
            return None
        lo, hi = hi, min(2 * hi, largest)
    while lo < hi:
        mid = (lo + hi) // 2
        if float(tied_chance(p, mid).mean()) <= target:
            hi = mid
        else:
            lo = mid + 1
    return hi


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """What a group size means for a batch (:func:`plan`)."""

    group_size: int
    prompts: int
    #: expected share of the batch's groups that are tied (no advantage)
    tied_share: float
    #: the share of prompts never or always solved: tied at any group size
    floor: float
    #: expected groups with a reward spread (an advantage) per batch
    informative_groups: float
    #: the 5th and 95th percentiles of the tied share over batches
    tied_share_p05: float
    tied_share_p95: float
    #: completions per batch (``prompts * group_size``)
    completions: int


def plan(success: Sequence[float] | np.ndarray, group_size: int, prompts: int) -> GroupPlan:
    """The expected tied share and informative groups of a batch of ``prompts`` prompts (drawn from the
    per-prompt success rates ``success``) of ``group_size`` completions each, with the 5-95 % range of the
    tied share over batches (:func:`tied_count_distribution`)."""
    p = _rates(success)
    dist = tied_count_distribution(p, group_size, prompts)
    cdf = np.cumsum(dist)
    p05 = int(np.searchsorted(cdf, 0.05))
    p95 = int(np.searchsorted(cdf, 0.95))
    share = float(tied_chance(p, group_size).mean())
    return GroupPlan(group_size, prompts, share, float(np.mean((p == 0.0) | (p == 1.0))), prompts * (1.0 - share),
                     p05 / prompts, min(p95, prompts) / prompts, prompts * group_size)


def read_success_rates(path: Path) -> np.ndarray:
    """Per-prompt success rates from ``path``: one number per line (blank lines and ``#`` comments
    skipped), or a CSV with a header whose column is named ``success``, ``success_rate``, ``pass_rate``,
    ``accuracy`` or ``p``. Raises :class:`AdvcoreError` naming the file and line of a bad value."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise AdvcoreError(f"{path}: could not be read ({e})") from None
    column: int | None = None
    out: list[float] = []
    for n, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        cells = [c.strip() for c in text.split(",")]
        if column is None:  # the first line: a CSV header, or the first value
            if len(cells) == 1 and _is_number(cells[0]):
                column = 0
            else:
                names = [c.lower() for c in cells]
                column = next((names.index(k) for k in _COLUMNS if k in names), None)
                if column is None:
                    raise AdvcoreError(f"{path}:{n}: expected a number per line, or a CSV header naming a column "
                                       f"{', '.join(_COLUMNS)} (got {text[:80]!r})")
                continue
        cell = cells[column] if len(cells) > column else ""
        if not _is_number(cell) or not 0.0 <= float(cell) <= 1.0:
            raise AdvcoreError(f"{path}:{n}: a success rate is a number in [0, 1], got {cell[:40]!r}")
        out.append(float(cell))
    if not out:
        raise AdvcoreError(f"{path}: no success rate in the file")
    return np.asarray(out)


#: The column names a CSV of per-prompt success rates may use.
_COLUMNS = ("success", "success_rate", "pass_rate", "accuracy", "p")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
