"""A validation score (``val_score``) that rose is the policy's measure where the training batch's reward is
not: it answers a floor or tied groups of failure (information), and the no-rise sign; one that stayed flat
leaves a shaping gain of the return unable to answer a success rate of 0. Synthetic series ranked by scipy, and
h311's two verl-agent WebShop consoles read by regex."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from advcore.detectors._reward import VAL_POINTS, VAL_RISE_RHO, validation_rose
from advcore.ingest import load
from tests._real import corpus
from tests.detectors._fixtures import fired, make_run, one


def _with_val(val: list[float | None], n: int = 40, reward: float = 0.0) -> dict[str, list[float | None]]:
    """A training reward of ``reward`` at every one of ``n`` steps, and ``val`` at evenly spaced steps."""
    at = {round(i * (n - 1) / (len(val) - 1)): v for i, v in enumerate(val)}
    return {"reward_mean": [reward] * n, "val_score": [at.get(i) for i in range(n)]}


@pytest.mark.parametrize("val", [
    [0.1, 0.2, 0.3, 0.4, 0.5],            # sorted
    [0.1, 0.3, 0.2, 0.4, 0.5],            # one adjacent swap
    [0.2, 0.1, 0.3, 0.4, 0.5, 0.6],       # one swap in six
    [0.1, 0.3, 0.2, 0.5, 0.4],            # two swaps
    [0.3, 0.1, 0.2, 0.5, 0.4],
    [0.5, 0.4, 0.3, 0.2, 0.1],            # fell
    [0.1, 0.2, 0.3, 0.4],                 # too few evaluations
])
def test_a_validation_score_rose_when_it_ranks_with_the_step(val: list[float]) -> None:
    run = make_run(_with_val(list(val)))
    rho = spearmanr(range(len(val)), val).statistic
    expected = len(val) >= VAL_POINTS and rho >= VAL_RISE_RHO - 1e-9 and val[-1] > val[0]
    rose = validation_rose(run)
    assert (rose is not None) == expected
    if rose is not None:
        assert rose["val_spearman"] == pytest.approx(rho)
        assert (rose["val_first"], rose["val_last"], rose["val_points"]) == (val[0], val[-1], len(val))


def test_a_floor_of_zero_is_information_when_the_validation_score_rose() -> None:
    flat = one(make_run(_with_val([0.2, 0.2, 0.21, 0.2, 0.2])), "REWARD_FLOOR")
    assert flat is not None and flat.severity == "error"  # a reward of exactly 0 at every step
    rose = one(make_run(_with_val([0.02, 0.09, 0.17, 0.2, 0.33])), "REWARD_FLOOR")
    assert rose is not None and rose.severity == "info" and rose.evidence["val_last"] == 0.33
    assert "validation score rose from 0.02" in rose.message


def _pairs(path: Path, key: str) -> dict[int, float]:
    """``key``'s value at each ``step:N`` line of a verl console, read by regex."""
    out = {}
    for line in path.read_text(errors="replace").splitlines():
        if (m := re.search(r"\bstep:(\d+) - ", line)) and (v := re.search(rf"(?:^| ){re.escape(key)}:(-?[\d.]+)", line)):
            out[int(m.group(1))] = float(v.group(1))
    return out


def test_real_webshop_gigpo_after_sft_learns_on_its_validation_set() -> None:
    folder = "h311-verl-agent-gigpo-webshop-qwen25-15b-sft-warm-start-sparse-train-reward-val-success-0.016-to-0.328-healthy"
    path = corpus(f"{folder}/qwen15b_sft_verl_gigpo_medium_128_64_20260518_141425.log")
    val = _pairs(path, "val/success_rate")
    assert list(val.values()) == [0.016, 0.094, 0.172, 0.203, 0.328]
    run = load(path)
    got = run.frame.drop_nulls("val_score")
    assert dict(zip(got["step"].to_list(), got["val_score"].to_list(), strict=True)) == val
    found = fired(run)
    tied = found["DEGENERATE_GROUPS"]  # most steps' 8 episodes all failed: tied, but the policy learns
    assert tied.severity == "info" and tied.evidence["val_first"] == 0.016 and tied.evidence["val_last"] == 0.328
    assert all(f.severity == "info" for f in found.values())


def test_real_webshop_gigpo_from_scratch_never_succeeds_though_its_penalty_shrinks() -> None:
    folder = "h311-verl-agent-gigpo-webshop-qwen25-15b-direct-no-success-in-32-steps-only-format-penalty-moves"
    path = corpus(f"{folder}/qwen15b_gigpo_medium_128_64_20260518_145752.log")
    success, val = _pairs(path, "episode/success_rate"), _pairs(path, "val/success_rate")
    assert len(success) == 32 and set(success.values()) == {0.0}
    assert list(val.values()) == [0.016, 0.016, 0.0, 0.0, 0.047]  # flat: no evidence of learning
    floor = fired(load(path))["REWARD_FLOOR"]
    assert floor.severity == "error" and floor.evidence["rule"] == "never_succeeds"
