"""A validation score (``val_score``) that rose is the policy's measure where the training batch's reward is
not: it answers a floor or tied groups of failure (information), and the no-rise sign; one that stayed flat
leaves a shaping gain of the return unable to answer a success rate of 0. Synthetic series ranked by scipy, and
h311's two verl-agent WebShop consoles read by regex."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from advcore.detectors._reward import VAL_COURSE_POINTS, VAL_POINTS, VAL_RISE_RHO, validation_rose
from advcore.ingest import load
from tests._real import corpus, events
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


def test_many_noisy_evaluations_rose_when_their_late_median_rose() -> None:
    # 60 evaluations rising from about 0.2 to 0.6 with noise of 0.1 rank with the step far below 0.9, and rose;
    # 60 around one level did not
    import numpy as np

    rng = np.random.default_rng(3)
    rising = (np.linspace(0.2, 0.6, 60) + rng.normal(0.0, 0.1, 60)).tolist()
    flat = (0.4 + rng.normal(0.0, 0.1, 60)).tolist()
    assert spearmanr(range(60), rising).statistic < VAL_RISE_RHO
    rose = validation_rose(make_run(_with_val(rising, n=120)))
    assert rose is not None and rose["val_points"] == 60 >= VAL_COURSE_POINTS
    fifth = 12
    assert rose["val_first"] == pytest.approx(float(np.median(rising[:fifth])))
    assert rose["val_last"] == pytest.approx(float(np.median(rising[-fifth:])))
    assert validation_rose(make_run(_with_val(flat, n=120))) is None
    # h345's greedy Pong evaluations: -21 at 16 of 20, one -10; medians -21 -> -20.5, no rise
    pinned = [-21.0] * 10 + [-20.8] + [-21.0] * 5 + [-20.8, -20.2, -10.0, -20.8]
    assert validation_rose(make_run(_with_val(pinned, n=120))) is None


def test_real_sb3_evaluations_that_rose_answer_a_training_success_rate_of_zero() -> None:
    """h378-sb3-sac-fanuc-robotiq-precapture: SAC with HER-style exploration succeeds in about 1 % of its training
    episodes to the end, while its EvalCallback return (``eval/mean_reward``, 250 evaluations) rises by fifths from
    813 to 1,183 and its evaluation success from 0.03 to 0.85: the run learns (its author's labels), and the
    training success rate is no floor. TensorBoard's reader is the oracle."""
    import statistics

    from tensorboard.util.tensor_util import make_ndarray  # type: ignore[import-untyped]

    path = corpus("h378-sb3-sac-fanuc-robotiq-precapture-moving-target-20m-plateau-690-for-9m-then-rises-to-1000-eval-"
                  "success-0.03-to-0.85-healthy/events.out.tfevents.1678995745.pse-System-Product-Name.2384611.0")
    evals = [float(make_ndarray(e.tensor_proto)) for e in events(path).Tensors("eval/mean_reward")]  # tensors: TF 2
    rose = validation_rose(load(path))
    assert rose is not None and rose["val_points"] == len(evals) == 250
    assert spearmanr(range(len(evals)), evals).statistic < VAL_RISE_RHO  # too noisy to rank with the step
    assert rose["val_first"] == pytest.approx(statistics.median(evals[:50]))
    assert rose["val_last"] == pytest.approx(statistics.median(evals[-50:]))
    floor = one(load(path), "REWARD_FLOOR")
    assert floor is None or floor.severity == "info"


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
