"""ACR against advcore's own early-window statistics: how well does each, measured early, predict a lab
run's final held-out success? (issue 18, item 4)

The Advantage Collapse Rate (X. He et al. 2026, "Advantage Collapse in Group Relative Policy
Optimization: Diagnosis and Mitigation", arXiv:2605.21125, ICML 2026) is the share of a step's
groups whose reward standard deviation is at most ``eps``; averaged over the first steps of a run, it
predicted final MATH-500 accuracy with R^2 = 0.617 over 245 runs (5 model scales x 7 difficulty levels x
7 group sizes; the paper's Figure 1). This is :func:`acr`:

    ACR_t = (1 / B_t) * sum_g 1[ std(r_g) <= eps ],   std with ddof 0,

over the ``B_t`` groups of step ``t`` (a group of one has std 0 and counts as collapsed: its
group-relative advantage is 0). The paper's text was not retrievable in full here: ``eps`` = 1e-6 and
ddof 0 are our choices, and for 0/1 rewards they do not matter (the smallest non-zero std of ``G``
binary rewards is ``sqrt(G - 1) / G``, 0.23 at G = 16: any eps below that gives the same ACR).

advcore's tied-group share ``zero_variance_group_frac`` (:func:`advcore.stats.zero_variance_fraction`,
``near_frac``) differs in two ways, shown by :func:`differences`: its tolerance is relative
(``max - min <= 1e-8 + 1e-5 * max(|min|, |max|)``), so it does not depend on the reward's unit as an
absolute ``eps`` does, and groups of one are left out of it rather than counted as collapsed.

The sweep: group size G in (2, 4, 8, 16) at a matched rollout budget (``prompts * G`` = 128), the
task pool as the difficulty (``standard``; ``bimodal``: half of the prompts nearly always solved, half
nearly never; ``easy``: nearly always solved; ``hard``: never), four group estimators, 5 seeds: 320
runs of 40 steps. Early = the first 20 % of the steps (our detectors' early window: steps 1-8).
The target is the held-out success at the last step (exact, on 256 held-out tasks of the standard
pool). For each early statistic, R^2 of a straight-line fit, over all runs and per seed (the
spread); and, for the statistics together, an out-of-sample R^2 (leave one seed out) so that more
predictors do not win by over-fitting.

    python bench/acr_sweep.py [--seeds 5] [--steps 40] [--jobs 2] [--markdown]
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np
import numpy.typing as npt
import polars as pl

from advcore import stats
from advcore.lab import LabConfig, Setting, run

__all__ = ["acr", "differences", "main", "sweep"]

GROUP_SIZES = (2, 4, 8, 16)
POOLS = ("standard", "bimodal", "easy", "hard")
ESTIMATORS = ("grpo", "dr_grpo", "rloo", "reinforce_pp")
ROLLOUTS = 128
EPS = 1e-6
#: the early statistics compared with ACR (per-step metrics of the lab run, canonical names)
OURS = ("zero_variance_group_frac", "reward_std_within", "adv_std", "reward_mean", "grad_norm")


def acr(rewards: npt.ArrayLike, group_ids: npt.ArrayLike, eps: float = EPS) -> float:
    """The Advantage Collapse Rate of one step: the share of groups whose reward std (ddof 0) is at
    most ``eps`` (see the module docstring).

    >>> acr([1.0, 1.0, 0.0, 1.0, 0.5], [0, 0, 1, 1, 2])
    0.6666666666666666
    """
    r = np.asarray(rewards, dtype=np.float64)
    g = np.unique(np.asarray(group_ids), return_inverse=True)[1].reshape(-1)
    n = np.bincount(g).astype(np.float64)
    mean = np.bincount(g, r) / n
    var = np.bincount(g, (r - mean[g]) ** 2) / n
    return float(np.mean(np.sqrt(var) <= eps))


def differences() -> list[list[str]]:
    """ACR and advcore's tied-group share on small constructed steps where they agree and where they
    do not (groups of 4; the rewards are the same step for both)."""
    cases = {
        "0/1 rewards, 2 of 4 groups tied": ([1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 1, 0, 0], 4),
        "rewards of 1 with float noise 1e-7 (tied up to rounding)": ([1, 1 + 1e-7, 1 - 1e-7, 1, 0, 1, 0, 1], 4),
        "0/1 rewards in units of 1e-7 (a scale bug): nothing tied": ([1e-7, 0, 0, 0, 0, 1e-7, 1e-7, 0], 4),
        "rewards near 1000 (a score in points), float32 noise 1e-4": ([1000, 1000 + 1e-4, 1000, 1000, 990, 1000,
                                                                      995, 1000], 4),
        "3 groups of 4 and 2 singletons (uneven grouping)": ([1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0], None),
    }
    rows = []
    for name, (values, size) in cases.items():
        r = np.asarray(values, dtype=np.float64)
        ids = np.repeat(np.arange(len(r) // size), size) if size else np.array([0] * 4 + [1] * 4 + [2] * 4 + [3, 4])
        ours = stats.zero_variance_fraction(r, group_ids=ids)
        rows.append([name, f"{acr(r, ids):.2f}", f"{ours.near_frac:.2f}", f"{ours.exact_frac:.2f}"])
    return rows


def _one(args: tuple[int, str, str, int, int]) -> dict[str, float]:
    g, pool, est, seed, steps = args
    base = Setting(pool=pool, group_size=g, prompts=ROLLOUTS // g)
    res = run(LabConfig(estimator=est, seed=seed, steps=steps, base=base))
    early = max(1, steps // 5)
    s = res.steps.filter(pl.col("step") <= early)
    per_step = [acr(p["reward"].to_numpy(), p["group"].to_numpy())
                for p in res.samples.filter(pl.col("step") <= early).partition_by("step")]
    out = {"G": float(g), "seed": float(seed), "acr": float(np.mean(per_step)),
           "final": float(res.steps["heldout_success"][-1]), "start": float(res.steps["heldout_success"][0])}
    for k in OURS:
        col = s[k].drop_nulls().drop_nans() if k in s.columns else pl.Series([], dtype=pl.Float64)
        out[k] = float(col.mean()) if len(col) else math.nan
    out["pool"] = float(POOLS.index(pool))
    out["est"] = float(ESTIMATORS.index(est))
    return out


def sweep(seeds: int = 5, steps: int = 40, jobs: int = 2) -> list[dict[str, float]]:
    """Every (G, pool, estimator, seed) run's early statistics and final held-out success."""
    grid = [(g, p, e, s, steps) for g, p, e, s in itertools.product(GROUP_SIZES, POOLS, ESTIMATORS, range(seeds))]
    if jobs <= 1:
        return [_one(a) for a in grid]
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        return list(pool.map(_one, grid, chunksize=8))


def _r2(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    """R^2 of the least-squares line y ~ a + b x (the squared Pearson correlation)."""
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0:
        return math.nan
    return float(np.corrcoef(x[ok], y[ok])[0, 1] ** 2)


def _design(rows: Sequence[dict[str, float]], names: Sequence[str]) -> npt.NDArray[np.float64]:
    return np.array([[1.0, *(r[n] for n in names)] for r in rows])


def _cv_r2(rows: Sequence[dict[str, float]], names: Sequence[str]) -> float:
    """Out-of-sample R^2 of a linear model on ``names``, leaving one seed out at a time."""
    y = np.array([r["final"] for r in rows])
    pred = np.full(len(rows), math.nan)
    seeds = sorted({r["seed"] for r in rows})
    x = _design(rows, names)
    x = np.where(np.isfinite(x), x, 0.0)
    for s in seeds:
        test = np.array([r["seed"] == s for r in rows])
        beta, *_ = np.linalg.lstsq(x[~test], y[~test], rcond=None)
        pred[test] = x[test] @ beta
    return float(1.0 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2))


def r2_rows(rows: Sequence[dict[str, float]]) -> list[list[str]]:
    """Per predictor: R^2 over all runs, per seed mean +- sd [min, max], and the sign of the slope."""
    y = np.array([r["final"] for r in rows])
    seeds = sorted({r["seed"] for r in rows})
    out = []
    for name in ("acr", *OURS):
        x = np.array([r[name] for r in rows])
        per = [_r2(np.array([r[name] for r in rows if r["seed"] == s]),
                   np.array([r["final"] for r in rows if r["seed"] == s])) for s in seeds]
        per = [p for p in per if math.isfinite(p)]
        ok = np.isfinite(x)
        slope = float(np.polyfit(x[ok], y[ok], 1)[0]) if ok.sum() > 2 and np.ptp(x[ok]) > 0 else math.nan
        label = f"ACR (eps {EPS:g}, ddof 0)" if name == "acr" else name
        spread = (f"{statistics.mean(per):.3f} +- {statistics.stdev(per):.3f} [{min(per):.3f}, {max(per):.3f}]"
                  if len(per) > 1 else "-")
        out.append([label, f"{_r2(x, y):.3f}", spread, "-" if math.isnan(slope) else f"{slope:+.2f}"])
    return out


def cv_rows(rows: Sequence[dict[str, float]]) -> list[list[str]]:
    models = {"ACR alone": ("acr",), "tied share alone (ours)": ("zero_variance_group_frac",),
              "reward_std_within alone": ("reward_std_within",),
              "our early stats together (tied share, reward_std_within, adv_std, reward_mean, grad_norm)": OURS,
              "ACR + reward_mean": ("acr", "reward_mean")}
    return [[name, f"{_cv_r2(rows, cols):.3f}"] for name, cols in models.items()]


def report(rows: Sequence[dict[str, float]], markdown: bool = False) -> str:
    from evaluation import render_table

    seeds = len({r["seed"] for r in rows})
    acr_v = np.array([r["acr"] for r in rows])
    tied = np.array([r["zero_variance_group_frac"] for r in rows])
    final = np.array([r["final"] for r in rows])
    parts = [
        f"{len(rows)} runs (G {GROUP_SIZES} x pools {POOLS} x {ESTIMATORS} x {seeds} seeds), final held-out success "
        f"{final.min():.2f} .. {final.max():.2f} (median {np.median(final):.2f}); early = first 20 % of the steps.",
        f"ACR vs our tied-group share on the same early steps: max |difference| {np.nanmax(np.abs(acr_v - tied)):.3g} "
        "(0/1 rewards, groups of G >= 2: the two counts agree).",
        "",
        "R^2 of final held-out success on one early statistic (straight line): all runs; per seed mean +- sd [min, max]:",
        render_table(["early statistic", "R^2 (all runs)", "R^2 per seed", "slope"], r2_rows(rows), markdown),
        "",
        "Out-of-sample R^2 (leave one seed out, linear):",
        render_table(["model", "R^2"], cv_rows(rows), markdown),
        "",
        "Where ACR and the tied-group share differ (constructed steps, groups of 4):",
        render_table(["step", "ACR", "zero_variance_group_frac (near)", "exact ties"], differences(), markdown),
    ]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    rows = sweep(a.seeds, a.steps, a.jobs)
    print(report(rows, a.markdown))
    print(f"{len(rows)} runs in {time.perf_counter() - t0:.1f} s ({a.jobs} processes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
