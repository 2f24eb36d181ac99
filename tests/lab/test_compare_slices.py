"""``advcore lab compare`` on the single-slice faults of the VLA pool (issue 16): held-out success per
slice with its seed spread, and a mitigation counted only when it improves every affected slice
beyond the spread without regressing another."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from advcore.cli import cli
from advcore.lab import SLICE_FAULTS
from advcore.lab.compare import ARMS, _heldout_slices, compare

FIXES = {"family_saturates": "fix_reset", "long_horizon_floor": "restore_time_limit",
         "perturbation_breaks_reward": "fix_success_check", "family_reward_scale": "per_task_unscaled"}


@pytest.mark.parametrize("fault", sorted(SLICE_FAULTS))
def test_the_fix_of_a_slice_fault_counts_slice_by_slice(fault: str) -> None:
    c = compare(fault, FIXES[fault], seeds=3)
    target = SLICE_FAULTS[fault].slice
    assert c.budget_matched and c.signal_lost and c.signal_restored
    by = {x.slice: x for x in c.slices}
    assert {"family=pick", "family=place", "family=open", "horizon=long", "horizon=short", "variation=clean",
            "variation=perturbed"} == set(by)
    mine = by[target]
    assert mine.affected and mine.improved and not mine.regressed
    # the oracle of "improved": recomputed here from the per-seed values each arm reports
    d = np.array(mine.arms["mitigated"].values) - np.array(mine.arms["control"].values)
    assert d.mean() > 2 * d.std(ddof=1) / math.sqrt(d.size) and d.mean() > c.min_gain
    assert c.counts and c.verdict.startswith("COUNTS")
    assert not any(x.regressed for x in c.slices)


def test_a_wrong_hypothesis_does_not_count() -> None:
    c = compare("family_saturates", "dynamic_sampling", seeds=3)
    assert c.signal_lost and not c.signal_restored
    assert not c.counts and "not restored" in c.verdict


def _fake(values: dict[str, dict[str, list[float]]]) -> dict[str, list[Any]]:
    """Arms of fake runs whose last steps hold the given held-out success per slice, one value per seed."""
    out: dict[str, list[Any]] = {a: [] for a in ARMS}
    for arm in ARMS:
        for seed in range(3):
            cols = {f"heldout_success/{k}": [v[arm][seed]] * 5 for k, v in values.items()}
            out[arm].append(SimpleNamespace(steps=pl.DataFrame({"step": list(range(5)), **cols})))
    return out


def test_a_slice_that_regresses_is_named_and_an_affected_one_must_improve() -> None:
    values = {
        # the fault's slice: the fault costs 0.2, the mitigation wins 0.2 back (spread 0.01)
        "family=place": {"control": [0.30, 0.31, 0.29], "mitigated": [0.50, 0.52, 0.49], "healthy": [0.5, 0.51, 0.5]},
        # another slice: unaffected by the fault, the mitigation costs it 0.1
        "family=pick": {"control": [0.60, 0.61, 0.60], "mitigated": [0.50, 0.52, 0.49], "healthy": [0.6, 0.61, 0.6]},
        # noise only: within the spread
        "family=open": {"control": [0.20, 0.25, 0.15], "mitigated": [0.22, 0.18, 0.21], "healthy": [0.2, 0.2, 0.2]},
    }
    by = {x.slice: x for x in _heldout_slices(_fake(values), "family=place", 5, 0.01)}  # type: ignore[arg-type]
    assert by["family=place"].affected and by["family=place"].improved and not by["family=place"].regressed
    assert not by["family=pick"].affected and by["family=pick"].regressed
    assert not by["family=open"].affected and not by["family=open"].improved and not by["family=open"].regressed


def test_the_cli_reports_heldout_per_slice(tmp_path: Any) -> None:
    result = CliRunner().invoke(cli, ["lab", "compare", "--fault", "long_horizon_floor", "--mitigation",
                                      "restore_time_limit", "--seeds", "2", "--steps", "40", "--onset", "15",
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    slices = {s["slice"]: s for s in doc["heldout_slices"]}
    assert slices["horizon=long"]["affected"] is True
    assert set(slices["horizon=long"]["arms"]) == set(ARMS)
    human = CliRunner().invoke(cli, ["lab", "compare", "--fault", "long_horizon_floor", "--mitigation",
                                     "restore_time_limit", "--seeds", "2", "--steps", "40", "--onset", "15"])
    assert human.exit_code == 0 and "held-out success per slice" in human.output
