"""Two runs side by side (``advcore compare RUN_A RUN_B``): where, stage by stage, they part ways.

The typical use is the same recipe on two stacks, or a run before and after a change. The runs are
aligned on the steps both logged. For each stage's signals (:data:`SIGNALS`: R the reward's level and
contrast, A the value baseline, T the advantages' spread, U the update), the difference ``B - A`` is
followed from its level over the first :data:`BASE_POINTS` common steps (a constant offset between two
stacks is no divergence); the runs *diverge* at the first of :data:`SUSTAIN` consecutive steps where
the difference has moved from that level by more than :data:`NOISE_TIMES` times the step-to-step noise
of the difference that two runs with that noise would show (``sqrt 2`` times the quieter run's noise,
:func:`advcore.detectors._windows.step_noise`: a fault that makes one run noisy must not hide its own
divergence). A value finite in one run and NaN or infinite in the other diverges at once. The stage
that diverged first is where the runs part; on the same step, the earlier stage in the signal's path
R -> A -> T -> U.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import polars as pl

from advcore.detectors._windows import onset_index, step_noise
from advcore.model import Run

__all__ = ["BASE_POINTS", "Comparison", "Divergence", "NOISE_TIMES", "SIGNALS", "SUSTAIN", "compare_runs"]

#: Per stage, in the signal's path, the canonical per-step metrics compared (each that both runs hold).
SIGNALS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("R", ("reward_mean", "success_rate", "zero_variance_group_frac", "reward_std_within", "reward_std")),
    ("A", ("vf_explained_var", "value_loss")),
    ("T", ("adv_std", "adv_max", "adv_min", "adv_zero_frac", "adv_recompute_err", "reward_rounding_adv_err")),
    ("U", ("grad_norm", "kl", "kl_step", "entropy", "clip_frac", "update_ratio", "step_norm")),
)
#: Common steps whose median difference is the runs' starting offset.
BASE_POINTS = 5
#: Consecutive steps the difference must stay off its starting offset.
SUSTAIN = 3
#: How far off, in units of the difference's noise.
NOISE_TIMES = 4.0
#: A noise floor relative to the series' scale, for series that are constant in both runs.
_REL_FLOOR = 1e-9


@dataclass(frozen=True, slots=True)
class Divergence:
    """Where one metric of two runs parts: ``step`` None when it does not."""

    stage: str
    metric: str
    step: int | None
    #: the difference B - A at the start (its median over the first common steps) and after ``step``
    #: (its median from there on)
    offset: float
    after: float
    #: the distance from ``offset`` that counted as parting
    threshold: float
    #: a value finite in one run and not in the other started it
    nonfinite: bool = False


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two runs aligned on their common steps, per metric where they part, and the first stage to."""

    a: str
    b: str
    common_steps: int
    divergences: tuple[Divergence, ...]

    @property
    def first(self) -> Divergence | None:
        """The earliest divergence; on the same step, the earlier stage (R, A, T, U)."""
        order = {stage: i for i, (stage, _) in enumerate(SIGNALS)}
        parted = [d for d in self.divergences if d.step is not None]
        return min(parted, key=lambda d: (d.step, order[d.stage]), default=None)

    def to_json(self) -> dict[str, object]:
        first = self.first
        return {"a": self.a, "b": self.b, "common_steps": self.common_steps,
                "first": None if first is None else {"stage": first.stage, "metric": first.metric, "step": first.step},
                "divergences": [{"stage": d.stage, "metric": d.metric, "step": d.step, "offset": d.offset,
                                 "after": d.after, "threshold": d.threshold, "nonfinite": d.nonfinite}
                                for d in self.divergences]}


def _divergence(stage: str, name: str, steps: list[int], a: list[float], b: list[float]) -> Divergence:
    finite = [math.isfinite(x) and math.isfinite(y) for x, y in zip(a, b, strict=True)]
    broken = next((i for i, (x, y, ok) in enumerate(zip(a, b, finite, strict=True))
                   if not ok and math.isfinite(x) != math.isfinite(y)), None)
    pairs = [(s, x, y) for s, x, y, ok in zip(steps, a, b, finite, strict=True) if ok]
    diffs = [y - x for _, x, y in pairs]
    offset = statistics.median(diffs[:BASE_POINTS]) if diffs else 0.0
    noise = math.sqrt(2.0) * min(step_noise([x for _, x, _ in pairs]), step_noise([y for _, _, y in pairs]))
    scale = max((abs(v) for _, x, y in pairs for v in (x, y)), default=1.0)
    threshold = NOISE_TIMES * max(noise, _REL_FLOOR * max(scale, 1.0))
    at = onset_index(tuple(diffs), lambda d: abs(d - offset) > threshold, SUSTAIN) if len(diffs) > SUSTAIN else None
    # a difference still off at the last steps but fewer than SUSTAIN of them is no parting yet
    if at is not None and len(diffs) - at < SUSTAIN:
        at = None
    step = pairs[at][0] if at is not None else None
    nonfinite = broken is not None and (step is None or steps[broken] <= step)
    if broken is not None and nonfinite:
        step = steps[broken]
    tail = [d for (s, _, _), d in zip(pairs, diffs, strict=True) if step is not None and s >= step]
    after = statistics.median(tail) if tail else offset
    return Divergence(stage, name, step, offset, after, threshold, nonfinite)


def compare_runs(a: Run, b: Run) -> Comparison:
    """Compare ``a`` and ``b`` on their common steps (module docstring). Runs without a common step
    compare on nothing (no divergence)."""
    if "step" not in a.frame.columns or "step" not in b.frame.columns:
        return Comparison(a.path, b.path, 0, ())
    joined = a.frame.join(b.frame, on="step", how="inner", suffix="__b").sort("step")
    divergences = []
    for stage, names in SIGNALS:
        for name in names:
            if name not in a.frame.columns or name not in b.frame.columns:
                continue
            part = joined.select("step", pl.col(name).cast(pl.Float64, strict=False).alias("a"),
                                 pl.col(f"{name}__b").cast(pl.Float64, strict=False).alias("b")).drop_nulls()
            if part.height < BASE_POINTS + SUSTAIN:
                continue
            divergences.append(_divergence(stage, name, part["step"].to_list(), part["a"].to_list(),
                                           part["b"].to_list()))
    return Comparison(a.path, b.path, joined.height, tuple(divergences))
