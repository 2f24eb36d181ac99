"""The group-size planner (advcore.plan, ``advcore plan``) against a Monte Carlo simulation of GRPO
batches: binary rewards drawn per completion, a group tied when all its rewards are equal."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from advcore import plan as planner
from advcore.cli import main
from advcore.errors import AdvcoreError


def _simulated_tied(rates: np.ndarray, group_size: int, prompts: int, batches: int, seed: int) -> np.ndarray:
    """Tied groups per simulated batch: ``prompts`` prompts drawn uniformly from ``rates``, ``group_size``
    Bernoulli rewards each."""
    rng = np.random.default_rng(seed)
    p = rates[rng.integers(0, rates.size, size=(batches, prompts))]
    wins = rng.binomial(group_size, p)
    return ((wins == 0) | (wins == group_size)).sum(axis=1)


@pytest.mark.parametrize(("p", "g"), [(0.5, 2), (0.5, 8), (0.1, 4), (0.9, 16), (0.03, 32), (0.0, 8), (1.0, 3)])
def test_tied_chance_matches_simulation(p: float, g: int) -> None:
    rng = np.random.default_rng(7)
    n = 200_000
    wins = rng.binomial(g, p, size=n)
    observed = float(np.mean((wins == 0) | (wins == g)))
    expected = float(planner.tied_chance([p], g)[0])
    assert abs(observed - expected) <= 5 * np.sqrt(expected * (1 - expected) / n) + 1e-12


def test_tied_count_distribution_matches_simulated_batches() -> None:
    rates = np.array([0.0, 0.05, 0.2, 0.5, 0.5, 0.8, 0.97, 1.0])
    g, prompts, batches = 8, 48, 40_000
    dist = planner.tied_count_distribution(rates, g, prompts)
    counts = _simulated_tied(rates, g, prompts, batches, seed=3)
    k = np.arange(prompts + 1)
    mean, var = float((k * dist).sum()), float(((k - (k * dist).sum()) ** 2 * dist).sum())
    assert dist.sum() == pytest.approx(1.0)
    assert counts.mean() == pytest.approx(mean, abs=5 * np.sqrt(var / batches))
    assert counts.var() == pytest.approx(var, rel=0.05)
    # the plan's 5-95 % range of the tied share against the simulated batches' quantiles (one count apart)
    made = planner.plan(rates, g, prompts)
    assert abs(made.tied_share_p05 * prompts - np.quantile(counts, 0.05)) <= 1
    assert abs(made.tied_share_p95 * prompts - np.quantile(counts, 0.95)) <= 1
    assert made.tied_share == pytest.approx(counts.mean() / prompts, abs=0.005)
    assert made.informative_groups == pytest.approx(prompts - counts.mean(), abs=0.25)
    assert made.floor == 0.25 and made.completions == prompts * g


def test_smallest_group_against_a_linear_search() -> None:
    rates = np.array([0.02, 0.1, 0.3, 0.6, 0.95])
    for target in (0.9, 0.5, 0.2, 0.05, 0.01):
        linear = next(g for g in range(1, 5000) if planner.tied_chance(rates, g).mean() <= target)
        assert planner.smallest_group(rates, target) == linear
    # prompts never or always solved tie at any size: a target below their share is out of reach
    assert planner.smallest_group([0.0, 1.0, 0.5, 0.5], 0.4) is None
    # (2 + 2 x 2 x 0.5^G) / 4 <= 0.51 first at G = 7 (0.5078; 0.5156 at G = 6)
    assert planner.smallest_group([0.0, 1.0, 0.5, 0.5], 0.51) == 7


def test_success_rates_from_a_file(tmp_path: Path) -> None:
    plain = tmp_path / "rates.txt"
    plain.write_text("# pass@1 of the base model\n0.25\n\n0.5  # hard\n1\n")
    assert planner.read_success_rates(plain).tolist() == [0.25, 0.5, 1.0]
    table = tmp_path / "rates.csv"
    table.write_text("prompt_id,pass_rate\na,0.1\nb,0.9\n")
    assert planner.read_success_rates(table).tolist() == [0.1, 0.9]
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt_id,pass_rate\na,0.1\nb,1.5\n")
    with pytest.raises(AdvcoreError, match=r"bad.csv:3: .*'1.5'"):
        planner.read_success_rates(bad)
    with pytest.raises(AdvcoreError, match=r"nameless.csv:1: .*header"):
        (tmp_path / "nameless.csv").write_text("id,score\na,0.3\n")
        planner.read_success_rates(tmp_path / "nameless.csv")


def test_cli_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rates = tmp_path / "rates.txt"
    rates.write_text("0.1\n0.5\n0.9\n")
    assert main(["plan", "--success-file", str(rates), "-p", "1.0", "-G", "4", "-G", "16", "--target-tied", "0.3",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["prompts_given"] == 4 and [p["group_size"] for p in doc["plans"]] == [4, 16]
    expected = np.mean([0.1 ** 4 + 0.9 ** 4, 0.5 ** 4 * 2, 0.9 ** 4 + 0.1 ** 4, 1.0])
    assert doc["plans"][0]["tied_share"] == pytest.approx(expected)
    assert doc["smallest_group_size"] == planner.smallest_group([0.1, 0.5, 0.9, 1.0], 0.3)
    assert main(["plan", "-p", "0.5", "--target-tied", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "G = 5" in out and max(len(line) for line in out.splitlines()) <= 80
    assert main(["plan"]) == 2
    assert "--success" in capsys.readouterr().err
