"""The detector rules added for the score card (bench/score_card.py), each on hand-built series with
a hand-computed answer: the update mechanics in UPDATE_SUPPRESSED, ADV_COLLAPSE on advantages in
reward units, the change-point onset of ENTROPY_COLLAPSE, the verdict's causal lead of an entropy
collapse, and the aliases of the update mechanics."""

from __future__ import annotations

import json

import numpy as np
import pytest

from advcore.detectors import Finding, NotEvaluable
from advcore.detectors._base import Finding as BaseFinding
from advcore.detectors._windows import Series, change_point, last_onset_index, running_peak_ratio
from advcore.diagnose import _order
from advcore.ingest import load, load_aliases
from tests._real import corpus
from tests.detectors._fixtures import make_run, one

N = 40


def _oracle_change_point(x: np.ndarray) -> int:
    """Brute force: the split minimising the two segments' summed squared deviations."""
    costs = [((x[:k] - x[:k].mean()) ** 2).sum() + ((x[k:] - x[k:].mean()) ** 2).sum() for k in range(1, len(x))]
    return 1 + int(np.argmin(costs))


@pytest.mark.parametrize("seed", range(5))
def test_change_point_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 27))
    x = np.concatenate([rng.normal(2.0, 0.2, k), rng.normal(0.5, 0.2, 30 - k)])
    assert change_point(tuple(x.tolist())) == _oracle_change_point(x)
    assert change_point((1.0,)) is None


def _oracle_fall_point(x: np.ndarray) -> int | None:
    """Brute force over the splits whose second segment's mean is lower."""
    costs = [(((x[:k] - x[:k].mean()) ** 2).sum() + ((x[k:] - x[k:].mean()) ** 2).sum(), k)
             for k in range(1, len(x)) if x[:k].mean() > x[k:].mean()]
    return min(costs)[1] if costs else None


@pytest.mark.parametrize("seed", range(5))
def test_a_change_down_is_the_best_split_among_falls(seed: int) -> None:
    # a fall, then a partial recovery larger than the fall's own split (h108 SAC-REINFORCE Ant's shape)
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(400, 30, 30), rng.normal(-2700, 100, 140), rng.normal(-400, 100, 200)])
    assert change_point(tuple(x.tolist()), fall=True) == _oracle_fall_point(x)
    assert change_point(tuple(x.tolist())) != change_point(tuple(x.tolist()), fall=True)
    assert change_point((1.0, 2.0, 3.0), fall=True) is None


def test_running_peak_ratio_judges_the_level_not_single_points() -> None:
    values = (0.0, 0.1, 0.2, 5.0, 0.2, 0.2, 0.001, 0.2, 0.02, 0.02)
    s = running_peak_ratio(Series("kl", tuple(range(1, 11)), None, values), "r", smooth=3)
    level = [float(np.median(values[max(0, i - 2): i + 1])) for i in range(10)]
    assert level[3] == 0.2 and level[6] == 0.2  # the spike and the single low point are no level
    assert s.values[:3] == (np.inf, np.inf, np.inf)  # no earlier level over a full 3 points yet
    for i in range(3, 10):
        assert s.values[i] == pytest.approx(level[i] / max(level[2:i])), i
    assert s.values[9] == pytest.approx(0.02 / 0.2)
    # the first point alone is no peak: a KL of 3.3 then about 0 (a Dou Dizhu PPO log's first epoch)
    start = running_peak_ratio(Series("kl", tuple(range(1, 8)), None, (3.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1)), "r",
                               smooth=3)
    assert start.values[3:] == pytest.approx([1.0] * 4)


def test_last_onset_dates_the_state_the_series_ends_in() -> None:
    warmup_then_break = [0.0] * 5 + [0.2] * 24 + [0.0] * 20  # a critic's warm-up, then a break at index 29
    low = lambda v: v <= 0.05  # noqa: E731
    assert last_onset_index(tuple(warmup_then_break), low, 5) == 29
    # no healthy stretch of 5 (only 4): the first run of 5 low points, as onset_index counts it
    assert last_onset_index(tuple([0.2] * 4 + [0.0] * 10), low, 5) == 4
    assert last_onset_index(tuple([0.0] * 3 + [0.2] * 4 + [0.0] * 10), low, 5) == 7
    assert last_onset_index(tuple([0.2] * 10), low, 5) is None
    ev = [0.0] * 5 + [0.2] * 24 + [0.0] * 20
    f = one(make_run({"vf_explained_var": ev, "value_mean": [1.0] * 49}, trainer="verl"), "BASELINE_BROKEN")
    assert isinstance(f, Finding) and f.onset_step == 30


def _healthy(**cols: list[float]) -> dict[str, list[float]]:
    return {"adv_std": [1.0] * N, "grad_norm": [0.3] * N, **cols}


def test_update_ratio_drop_is_suppression_relative_to_its_early_level() -> None:
    ratio = [0.1] * 20 + [1e-5] * 20  # 1e-4 of its early median (<= 1e-3)
    f = one(make_run(_healthy(update_ratio=ratio)), "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "update_ratio" and f.onset_step == 21
    # a fall to 1/100 is a slowdown, not a stopped update
    assert one(make_run(_healthy(update_ratio=[0.1] * 20 + [1e-3] * 20)), "UPDATE_SUPPRESSED") is None
    # an absolute level as small as an LLM's (1e-6 throughout) is not suppression
    assert one(make_run(_healthy(update_ratio=[1e-6] * N)), "UPDATE_SUPPRESSED") is None


def test_learning_rate_cut_but_not_a_decay_to_zero() -> None:
    cut = [5e-6] * 20 + [5e-12] * 20  # x 1e-6 from step 21
    f = one(make_run(_healthy(lr=cut)), "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "lr" and f.onset_step == 21
    # linear decay to 0 (TRL's default schedule): below 1e-3 of the start only at the last point
    decay = list(np.linspace(5e-6, 0.0, N))
    assert sum(v <= 1e-3 * 5e-6 for v in decay) == 1
    assert one(make_run(_healthy(lr=decay)), "UPDATE_SUPPRESSED") is None


def test_clipped_grad_and_update_kl() -> None:
    clipped = [0.3] * 20 + [1e-6] * 20
    f = one(make_run(_healthy(grad_norm_clipped=clipped)), "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "grad_norm_clipped" and f.onset_step == 21
    # the KL of the update is second order in the step: 1e-3 of its early level is still an update
    assert one(make_run(_healthy(kl_step=[4e-3] * 20 + [4e-6] * 20)), "UPDATE_SUPPRESSED") is None
    f = one(make_run(_healthy(kl_step=[4e-3] * 20 + [4e-14] * 20)), "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl_step"


def test_kl_pinned_to_a_resynced_reference() -> None:
    kl = list(np.linspace(0.0, 0.6, 20)) + [0.01] * 20
    f = one(make_run(_healthy(kl=kl)), "UPDATE_SUPPRESSED")
    # the level is the trailing median of 3 points: it is low once 2 of them are, at step 22 (the first low is 21)
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl_pinned" and f.onset_step == 22
    # a KL that alternates between ~0.001 and ~0.1 (one group per step, unsloth-gptoss-20b) holds its level
    assert one(make_run(_healthy(kl=[0.001, 0.1, 0.1] * 13 + [0.1])), "UPDATE_SUPPRESSED") is None
    # a growing KL (healthy) and an update KL (SB3 approx_kl after a spike) are not pinned
    assert one(make_run(_healthy(kl=list(np.linspace(0.0, 0.6, N)))), "UPDATE_SUPPRESSED") is None
    sb3 = make_run(_healthy(kl=kl), sources={"kl": "train/approx_kl"})
    assert one(sb3, "UPDATE_SUPPRESSED") is None
    # a KL that never reached kl_pin_peak (0.01) has nothing to be pinned below
    assert one(make_run(_healthy(kl=[0.005] * 20 + [1e-5] * 20)), "UPDATE_SUPPRESSED") is None
    # swings around 0 after a climb far above their own noise are pinned
    noisy = list(np.random.default_rng(1).uniform(-0.05, 0.05, 20))
    climbed = list(np.linspace(0.0, 6.0, 20)) + noisy
    f = one(make_run(_healthy(kl=climbed)), "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["metric"] == "kl_pinned"


def test_real_signed_kl_estimate_swinging_around_zero_is_not_pinned() -> None:
    """h113-bitnet-grpo-g2-gsm8k-tied-groups: a KL coefficient of 0.01, the per-batch estimate -0.47 to 0.54
    over its 38 updates (checked below): no peak above its own noise, so nothing is pinned below one."""
    path = corpus("h113-bitnet-grpo-g2-gsm8k-tied-groups/grpo_log.jsonl")
    kls = [r["kl"] for line in path.read_text().splitlines() if "kl" in (r := json.loads(line))]
    assert len(kls) >= 38 and min(kls) < -0.4 and max(kls) > 0.5
    run = load(path)
    assert run.has("adv_std")  # the advantages carry signal: the check is evaluable
    assert one(run, "UPDATE_SUPPRESSED") is None


def test_signal_in_reward_units_counts_against_its_own_level() -> None:
    ratio = [0.1] * 20 + [1e-6] * 20
    run = make_run({"adv_std": [0.4] * N, "grad_norm": [0.3] * N, "update_ratio": ratio})
    f = one(run, "UPDATE_SUPPRESSED")
    assert isinstance(f, Finding) and f.evidence["signal_bar"] == pytest.approx(0.2)
    # a proxy stays on the absolute bar: 0.4 is no signal there
    proxy = make_run({"zero_variance_group_frac": [0.84] * N, "grad_norm": [0.3] * N, "update_ratio": ratio})
    assert one(proxy, "UPDATE_SUPPRESSED") is None


def test_not_evaluable_names_the_update_metrics() -> None:
    out = one(make_run({"adv_std": [1.0] * N}), "UPDATE_SUPPRESSED")
    assert isinstance(out, NotEvaluable) and "update_ratio" in out.needs[0]


def test_adv_collapse_relative_rule_for_unnormalised_advantages() -> None:
    adv = [0.4] * 20 + [4e-9] * 20  # Dr. GRPO with rewards x 1e-8 from step 21
    run = make_run({"adv_std": adv, "reward_std": [0.45] * N})
    f = one(run, "ADV_COLLAPSE")
    assert isinstance(f, Finding) and f.evidence["rule"] == "relative" and f.onset_step == 21
    assert f.evidence["cut"] == pytest.approx(0.1 * 0.4)
    # the seed rule still rules normalised advantages (and says so)
    g = one(make_run({"adv_std": [1.0] * 20 + [0.01] * 20, "reward_std": [0.45] * N}), "ADV_COLLAPSE")
    assert isinstance(g, Finding) and g.evidence["rule"] == "seed"
    # a fall to a third is no collapse; advantages far below the reward spread are not judged relatively
    assert one(make_run({"adv_std": [0.4] * 20 + [0.13] * 20, "reward_std": [0.45] * N}), "ADV_COLLAPSE") is None
    assert one(make_run({"adv_std": [0.1] * 20 + [1e-9] * 20, "reward_std": [0.45] * N}), "ADV_COLLAPSE") is None
    # without a reward spread the extension cannot judge
    assert one(make_run({"adv_std": adv}), "ADV_COLLAPSE") is None


def test_entropy_step_fall_is_dated_from_its_change_point() -> None:
    ent = [2.0] * 30 + [1.2, 0.9, 0.8, 0.7, 0.6, 0.45, 0.4, 0.35, 0.3, 0.3] + [0.3] * 20
    f = one(make_run({"entropy": ent}), "ENTROPY_COLLAPSE")
    assert isinstance(f, Finding)
    early = np.mean(ent[:12])
    crossing = 1 + next(i for i in range(len(ent)) if all(np.array(ent[i:i + 5]) < 0.25 * early))
    assert f.evidence["below_cut_step"] == crossing == 36
    start = 12  # the early window: ceil(0.2 * 60)
    part = np.array(ent[start:crossing - 1 + 5])
    assert f.onset_step == start + _oracle_change_point(part) + 1 == 31


def _finding(fid: str, stage: str, onset: int) -> BaseFinding:
    return BaseFinding(fid, "warn", stage, onset, {}, "")  # type: ignore[arg-type]


def test_entropy_collapse_leads_the_tied_groups_it_causes() -> None:
    run = make_run({"reward_mean": [0.5] * 60})  # steps 1..60, logged every step
    ent, dg = _finding("ENTROPY_COLLAPSE", "U", 33), _finding("DEGENERATE_GROUPS", "R", 30)
    assert [f.id for f in _order([dg, ent], run)] == ["ENTROPY_COLLAPSE", "DEGENERATE_GROUPS"]
    # more than 5 steps after the tied groups: the groups came first
    late = _finding("ENTROPY_COLLAPSE", "U", 36)
    assert [f.id for f in _order([dg, late], run)] == ["DEGENERATE_GROUPS", "ENTROPY_COLLAPSE"]
    # a saturated reward is a cause of its own
    sat = _finding("REWARD_SATURATION", "R", 30)
    assert _order([dg, sat, ent], run)[-1].id == "ENTROPY_COLLAPSE"
    # a floor the reward fell to mid-run, with the entropy collapsing with it: the policy is the cause
    floor = _finding("REWARD_FLOOR", "R", 30)
    assert _order([floor, ent], run)[0].id == "ENTROPY_COLLAPSE"
    # a floor from the first step is the task's or the reward's: it keeps the lead
    assert _order([_finding("REWARD_FLOOR", "R", 1), _finding("ENTROPY_COLLAPSE", "U", 4)], run)[0].id == "REWARD_FLOOR"


def _no_rise(onset: int, fell: bool) -> BaseFinding:
    return BaseFinding("DEAD_FROM_START", "warn", "R", onset, {"dead": "no_rise", "fell": fell}, "")  # type: ignore[arg-type]


def test_a_no_rise_sign_is_no_rival_to_the_entropy_collapse_or_blow_up_that_explains_its_fall() -> None:
    run = make_run({"reward_mean": [0.5] * 60})
    # sb3-chess-entropy-collapse: the no-rise sign dated by the fall (step 18 here), the floor at 30, the entropy's
    # fall at 33: the policy is the cause, as without the sign
    floor, ent = _finding("REWARD_FLOOR", "R", 30), _finding("ENTROPY_COLLAPSE", "U", 33)
    assert _order([_no_rise(18, True), floor, ent], run)[0].id == "ENTROPY_COLLAPSE"
    # h250's CQL: the return's change down at 14, the blow-up at 22: the blow-up leads
    blowup = _finding("UPDATE_UNSTABLE", "U", 22)
    assert _order([_no_rise(14, True), blowup], run)[0].id == "UPDATE_UNSTABLE"
    # h354's drones: a return pinned from the start is not explained by a blow-up late in the run
    assert _order([_no_rise(1, False), _finding("UPDATE_UNSTABLE", "U", 40)], run)[0].id == "DEAD_FROM_START"


def test_the_lead_tolerance_counts_logged_points_not_step_units() -> None:
    # SB3 logs every 50 timesteps here: 5 logged points are 250 steps
    run = make_run({"reward_mean": [0.5] * 60}, steps=list(range(50, 3050, 50)))
    dg, ent = _finding("DEGENERATE_GROUPS", "R", 1250), _finding("ENTROPY_COLLAPSE", "U", 1300)
    assert _order([dg, ent], run)[0].id == "ENTROPY_COLLAPSE"
    assert _order([dg, _finding("ENTROPY_COLLAPSE", "U", 1550)], run)[0].id == "DEGENERATE_GROUPS"


def test_update_mechanics_aliases() -> None:
    table = load_aliases()
    assert table.canonical("actor/ppo_kl", "verl") is not None
    assert table.canonical("actor/ppo_kl", "verl")[0] == "kl_step"  # type: ignore[index]
    assert table.canonical("actor/kl_loss", "verl")[0] == "kl"  # type: ignore[index]
    for key, name in (("step_param_ratio", "update_ratio"), ("update_ratio", "update_ratio"),
                      ("grad_norm_clipped", "grad_norm_clipped"), ("kl_step", "kl_step"),
                      ("train/num_gen_batches", "gen_batches")):
        hit = table.canonical(key, "verl")
        assert hit is not None and hit[0] == name, key


def test_derived_series_are_memoised_per_run_and_never_shared_with_another_frame() -> None:
    from dataclasses import replace

    import polars as pl

    from advcore.detectors._windows import metric

    run = make_run({"reward_mean": [0.1, 0.2, 0.3]})
    first = metric(run, "reward_mean")
    assert first is metric(run, "reward_mean")  # computed once per run
    other = replace(run, frame=run.frame.with_columns(pl.Series("reward_mean", [0.7, 0.8, 0.9])))
    again = metric(other, "reward_mean")
    assert first is not None and again is not None
    assert first.values == (0.1, 0.2, 0.3) and again.values == (0.7, 0.8, 0.9)
