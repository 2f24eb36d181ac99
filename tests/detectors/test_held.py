"""A state the run ends in, seen ``sustain`` points after it began (:func:`advcore.detectors._windows.held_since`):
the rule that lets ADV_COLLAPSE, BASELINE_BROKEN, REWARD_FLOOR and REWARD_SATURATION report a collapse inside a
trainer before the late window (the last 20 % of the points) has moved past it."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from advcore.detectors import Finding
from advcore.detectors._windows import held_since
from tests.detectors._fixtures import make_run, one


def _oracle(flags: list[bool], sustain: int) -> int | None:
    """The stretch of True the list ends in, when it has at least ``sustain`` items and is longer than every
    earlier stretch of True (run lengths by itertools.groupby)."""
    runs = [(key, len(list(group))) for key, group in itertools.groupby(flags)]
    if not runs or not runs[-1][0] or runs[-1][1] < sustain:
        return None
    earlier = [n for key, n in runs[:-1] if key]
    return len(flags) - runs[-1][1] if all(n < runs[-1][1] for n in earlier) else None


@given(st.lists(st.booleans(), max_size=60), st.integers(min_value=1, max_value=8))
def test_held_since_matches_the_run_lengths(flags: list[bool], sustain: int) -> None:
    values = tuple(1.0 if f else 0.0 for f in flags)
    assert held_since(values, lambda v: v == 1.0, sustain) == _oracle(flags, sustain)


def _noisy(level: float, n: int, scale: float, seed: int) -> list[float]:
    return list(level + scale * np.random.default_rng(seed).standard_normal(n))


def test_adv_collapse_reports_a_stretch_below_the_cut_before_the_late_window_does() -> None:
    healthy = _noisy(1.0, 60, 0.05, 0)
    for tail, fires in ((6, True), (4, False)):
        adv = healthy + [0.01] * tail
        late = np.mean(adv[-max(3, round(0.2 * len(adv))):])
        assert late > 0.1  # the late window alone says nothing yet
        f = one(make_run({"adv_std": adv}), "ADV_COLLAPSE")
        if fires:
            assert isinstance(f, Finding) and f.onset_step == 61 and f.evidence["held_since_step"] == 61
            assert f.evidence["mean_since"] == np.float64(0.01)
        else:
            assert f is None


def test_adv_collapse_does_not_read_a_stretch_of_a_per_step_indicator() -> None:
    # one group per step (Unsloth): the advantage proxy is 1[reward_std > 1e-6], and six tied steps at the end of
    # a run whose groups spread are too coarse to call a collapse
    spread = [0.4] * 60 + [0.0] * 6
    assert one(make_run({"reward_std": spread}), "ADV_COLLAPSE") is None


def test_baseline_broken_reports_a_critic_that_went_flat() -> None:
    ev = [max(0.0, v) for v in _noisy(0.25, 40, 0.05, 1)]
    for tail, fires in ((5, True), (4, False)):
        f = one(make_run({"vf_explained_var": ev + [0.0] * tail}, trainer="sb3"), "BASELINE_BROKEN")
        if fires:
            assert isinstance(f, Finding) and f.evidence["rule"] == "explains_nothing"
            assert f.onset_step == 41 and f.evidence["flat_since_step"] == 41
        else:
            assert f is None


def test_baseline_broken_leaves_a_short_slowly_fitting_critic_alone() -> None:
    # 16 updates of a critic at 0.0 to 0.1 (median <= 0.05) with 3 of its 10 points after the warm-up above 0.05:
    # it may still be fitting (the lab's hard negative slow_lr under PPO, seed 1)
    ev = [0.0, 0.07, 0.06, -0.01, 0.07, 0.06, 0.12, 0.02, 0.03, -0.02, 0.06, 0.05, 0.03, 0.07, 0.03, 0.05]
    assert np.median(ev[6:]) <= 0.05 and sum(v > 0.05 for v in ev[6:]) == 3
    assert one(make_run({"vf_explained_var": ev}, trainer="sb3"), "BASELINE_BROKEN") is None
    # the same length with every point after the warm-up at 0 +- 0.01 explains nothing
    flat = ev[:6] + _noisy(0.0, 10, 0.005, 2)
    f = one(make_run({"vf_explained_var": flat}, trainer="sb3"), "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.evidence["rule"] == "explains_nothing"


def _reward_cols(tail_mean: float, tail: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(3)
    mean = list(np.clip(0.6 + 0.05 * rng.standard_normal(40), 0.0, 1.0)) + [tail_mean] * tail
    return {"reward_mean": mean, "reward_std": [0.49] * 40 + [0.0] * tail,
            "reward_max": [1.0] * (40 + tail), "reward_min": [0.0] * (40 + tail)}


def test_reward_floor_and_saturation_report_a_stretch_at_the_bound() -> None:
    for det, at in (("REWARD_FLOOR", 0.0), ("REWARD_SATURATION", 1.0)):
        cols = _reward_cols(at, 5)
        assert np.mean(cols["reward_std"][-9:]) > 0.1  # the late window still has its spread
        f = one(make_run(cols), det)
        assert isinstance(f, Finding) and f.evidence["held_since_step"] == 41 and f.onset_step == 41, det
        assert f.evidence["late_mean"] == at
        assert one(make_run(_reward_cols(at, 4)), det) is None
        # without a spread metric a held level says nothing of the spread
        assert one(make_run({k: v for k, v in _reward_cols(at, 5).items() if k != "reward_std"}), det) is None
