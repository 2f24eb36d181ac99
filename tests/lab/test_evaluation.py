"""The evaluation of issue 18 (``bench/evaluation.py``, ``bench/acr_sweep.py``, the online replay of
``bench/score_card.py``): ACR as defined, against a loop; the precision and recall counts on
hand-made outcomes; one online replay against the lab's truth."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest
from advcore import stats

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # the modules import each other by name, as the bench scripts do
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def acr_sweep() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    return _load("acr_sweep")


@pytest.fixture(scope="module")
def evaluation() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    return _load("evaluation")


def test_acr_is_the_share_of_groups_with_std_at_most_eps(acr_sweep: ModuleType) -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        ids = rng.integers(0, 7, 40)
        r = np.where(rng.random(40) < 0.5, 1.0, 0.0) * rng.choice([1.0, 1.0 + 1e-7], 40)
        groups = np.unique(ids)
        expected = np.mean([np.std(r[ids == g]) <= 1e-6 for g in groups])
        assert acr_sweep.acr(r, ids) == pytest.approx(expected)


def test_acr_equals_the_tied_share_on_binary_rewards(acr_sweep: ModuleType) -> None:
    rng = np.random.default_rng(1)
    for g in (2, 4, 8, 16):
        r = (rng.random(16 * g) < rng.random(16).repeat(g)).astype(np.float64)
        ids = np.repeat(np.arange(16), g)
        assert acr_sweep.acr(r, ids) == stats.zero_variance_fraction(r, group_ids=ids).near_frac


def test_the_differences_table_shows_where_they_part(acr_sweep: ModuleType) -> None:
    rows = {r[0]: (float(r[1]), float(r[2])) for r in acr_sweep.differences()}
    same = [k for k, (a, b) in rows.items() if a == b]
    assert len(same) == 2 and len(rows) == 5
    units = next(v for k, v in rows.items() if "units of 1e-7" in k)
    assert units == (1.0, 0.0)


def _outcome(fault: str | None, expected: tuple[str, ...], fired: tuple[str, ...], negative: str | None = None,
             severity: str = "warn") -> SimpleNamespace:
    job = SimpleNamespace(fault=fault, negative=negative, estimator="grpo", seed=0, online=False)
    findings = tuple((d, severity, "R", 30) for d in fired)
    return SimpleNamespace(job=job, expected=expected, verdicts={"both": (None, None, findings)})


def test_precision_and_recall_count_as_defined(evaluation: ModuleType) -> None:
    outcomes = [
        _outcome("saturation", ("REWARD_SATURATION",), ("REWARD_SATURATION", "DEGENERATE_GROUPS")),  # hit, unlabelled
        _outcome("saturation", ("REWARD_SATURATION",), ()),  # miss
        _outcome(None, (), ("DEGENERATE_GROUPS",), negative="half_tied"),  # a false alarm
        _outcome(None, (), ("REWARD_SATURATION",), severity="info"),  # info is not an alarm
        _outcome(None, (), ()),
    ]
    c = evaluation.precision_recall_lab(outcomes)
    sat, deg = c["REWARD_SATURATION"], c["DEGENERATE_GROUPS"]
    assert (sat.should, sat.hits, sat.should_not, sat.false) == (2, 1, 3, 0)
    assert (deg.should, deg.hits, deg.should_not, deg.false, deg.unlabelled_fired) == (0, 0, 3, 1, 1)
    assert deg.false_runs == ["half_tied/grpo/0"]
    assert sat.row("REWARD_SATURATION")[1:] == ["1/2", "50%", "0/3", "0.0%", "100%", "0"]


def test_precision_and_recall_on_real_expectations(evaluation: ModuleType) -> None:
    expect = {"a": SimpleNamespace(status="lost", headline=("ADV_COLLAPSE",), must_not_fire=("NONFINITE",),
                                   healthy=False),
              "b": SimpleNamespace(status="quiet", headline=(), must_not_fire=(), healthy=True)}
    runs = [SimpleNamespace(name=k, expect=v) for k, v in expect.items()]
    scores = [SimpleNamespace(name="a", split="validation", fired=("ADV_COLLAPSE", "NONFINITE")),
              SimpleNamespace(name="b", split="validation", fired=("ADV_COLLAPSE",)),
              SimpleNamespace(name="b", split="calibration", fired=("ADV_COLLAPSE",))]
    c = evaluation.precision_recall_real(scores, runs, "validation")
    adv, nf = c["ADV_COLLAPSE"], c["NONFINITE"]
    assert (adv.should, adv.hits, adv.should_not, adv.false) == (1, 1, 1, 1)
    assert (nf.should, nf.should_not, nf.false) == (0, 2, 1)


@pytest.mark.slow
def test_online_replay_reports_the_fault_after_its_onset() -> None:
    sys.path.insert(0, str(BENCH))
    card = _load("score_card")
    o = card.score_one(card.Job("reward_scale", "grpo", 0, online=True))
    assert o.monitor_errors == 0
    delay = o.online_delay()
    assert delay is not None and 0 <= delay <= 5
