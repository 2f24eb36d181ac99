"""The lab's building blocks against independent oracles: exact success vs Monte Carlo, the
analytic gradient vs finite differences, GAE vs the textbook loop, bfloat16 rounding vs frexp, the
group estimators vs hand formulas; determinism; healthy runs learn with every estimator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from advcore.errors import AdvcoreError
from advcore.lab import ESTIMATORS, FAULTS, LabConfig, Setting, run
from advcore.lab.estimators import gae, group_advantages
from advcore.lab.faults import get_fault
from advcore.lab.policy import Policy, make_tasks, make_teacher, softmax
from advcore.lab.run import _bf16, loss_and_grad

from tests.lab._cache import cached

ONSET = 30


def test_success_probability_matches_monte_carlo() -> None:
    rng = np.random.default_rng(1)
    teacher = make_teacher(rng, horizon=3, actions=5, dim=4)
    tasks = make_tasks(rng, teacher, 6, "standard")
    pol = Policy(3, 5, 4)
    pol.theta = rng.standard_normal(pol.theta.shape)
    exact = pol.success(tasks)
    n = 40_000
    phi = np.repeat(tasks.phi, n, axis=0)
    acts = pol.sample(rng, pol.probs(phi))
    task = np.repeat(np.arange(tasks.size), n)
    ok = tasks.correct[task[:, None], np.arange(3)[None, :], acts].all(axis=1)
    mc = ok.reshape(tasks.size, n).mean(axis=1)
    # binomial standard error at n = 40,000 is at most 0.0025
    assert np.max(np.abs(mc - exact)) < 0.012


def test_correct_sets_follow_the_teacher() -> None:
    rng = np.random.default_rng(2)
    teacher = make_teacher(rng, horizon=2, actions=6, dim=3)
    tasks = make_tasks(rng, teacher, 20, "standard")
    for t in range(tasks.size):
        for j in range(tasks.horizon[t]):
            scores = teacher[j] @ tasks.z[t]
            best = set(np.argsort(-scores)[: tasks.n_correct[t]].tolist())
            assert set(np.flatnonzero(tasks.correct[t, j]).tolist()) == best
        assert tasks.correct[t, tasks.horizon[t]:].all()


@pytest.mark.parametrize(("entropy_coef", "kl_coef"), [(0.0, 0.0), (0.3, 0.0), (0.0, 2.0), (-1.0, 0.5)])
def test_gradient_matches_finite_differences(entropy_coef: float, kl_coef: float) -> None:
    rng = np.random.default_rng(3)
    h, k, d, n = 3, 4, 3, 12
    theta = rng.standard_normal((h, k, d)) * 0.5
    theta_old = theta + rng.standard_normal((h, k, d)) * 0.05  # ratios near 1, some clipped... or not
    phi = rng.standard_normal((n, d))
    mask = np.arange(h)[None, :] < rng.integers(1, h + 1, n)[:, None]
    p_old = softmax(np.einsum("hkd,nd->nhk", theta_old, phi))
    acts = np.array([[rng.choice(k, p=p_old[i, j]) for j in range(h)] for i in range(n)])
    logp_old = np.log(np.take_along_axis(p_old, acts[:, :, None], axis=2)[:, :, 0])
    adv = np.where(mask, rng.standard_normal((n, 1)), 0.0)
    w = np.where(mask, 1.0 / mask.sum(), 0.0)
    ref = softmax(rng.standard_normal((n, h, k)))
    kw = {"clip_eps": 10.0, "entropy_coef": entropy_coef, "kl_coef": kl_coef}  # wide clip: the loss is smooth
    _, grad, _ = loss_and_grad(theta, phi, acts, mask, adv, logp_old, w, ref, **kw)
    num = np.zeros_like(theta)
    step = 1e-6
    for idx in np.ndindex(*theta.shape):
        tp, tm = theta.copy(), theta.copy()
        tp[idx] += step
        tm[idx] -= step
        num[idx] = (loss_and_grad(tp, phi, acts, mask, adv, logp_old, w, ref, **kw)[0]
                    - loss_and_grad(tm, phi, acts, mask, adv, logp_old, w, ref, **kw)[0]) / (2 * step)
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-8)


def test_clipped_tokens_carry_no_gradient() -> None:
    """A token whose ratio is past 1 + eps with a positive advantage is flat in the clipped loss."""
    theta = np.zeros((1, 2, 1))
    phi = np.ones((1, 1))
    acts = np.zeros((1, 1), np.int64)
    mask = np.ones((1, 1), bool)
    logp_old = np.array([[math.log(0.2)]])  # current pi(a) = 0.5: ratio 2.5
    loss, grad, active = loss_and_grad(theta, phi, acts, mask, np.ones((1, 1)), logp_old, np.ones((1, 1)),
                                       np.full((1, 1, 2), 0.5))
    assert active.all() and np.all(grad == 0.0) and loss == pytest.approx(-1.2)


def test_gae_matches_the_textbook_loop() -> None:
    rng = np.random.default_rng(4)
    n, h, gamma, lam = 9, 4, 0.9, 0.8
    lengths = rng.integers(1, h + 1, n)
    mask = np.arange(h)[None, :] < lengths[:, None]
    values = rng.standard_normal((n, h))
    rewards = rng.standard_normal(n)
    got = gae(rewards, values, mask, gamma=gamma, lam=lam)
    for i in range(n):
        L = lengths[i]
        r = np.zeros(L)
        r[-1] = rewards[i]
        v = np.append(values[i, :L], 0.0)
        deltas = r + gamma * v[1:] - v[:-1]
        for j in range(L):
            want = sum((gamma * lam) ** m * deltas[j + m] for m in range(L - j))
            assert got[i, j] == pytest.approx(want, abs=1e-12)
        assert np.all(got[i, L:] == 0.0)


def test_bf16_rounding_matches_frexp() -> None:
    x = np.random.default_rng(5).uniform(-3, 3, 5000)
    f32 = x.astype(np.float32).astype(np.float64)
    m, e = np.frexp(f32)
    want = np.ldexp(np.round(m * 256.0) / 256.0, e)  # 8 significant bits, ties to even
    np.testing.assert_array_equal(_bf16(x), want)


def test_group_estimators_match_hand_formulas() -> None:
    r = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    g = np.repeat([0, 1], 4)
    np.testing.assert_allclose(group_advantages("dr_grpo", r, g), [0.5, -0.5, -0.5, 0.5, 0.5, 0.5, -0.5, -0.5])
    s = np.std([1.0, 0, 0, 1], ddof=1)
    centred = np.array([0.5, -0.5, -0.5, 0.5, 0.5, 0.5, -0.5, -0.5])
    np.testing.assert_allclose(group_advantages("grpo", r, g), centred / (s + 1e-4))
    np.testing.assert_allclose(group_advantages("rloo", r, g), centred * 4 / 3)
    t = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0])
    d = group_advantages("dapo", t, g)
    assert np.isnan(d[:4]).all() and np.isfinite(d[4:]).all()
    np.testing.assert_allclose(group_advantages("reinforce_pp", r, g), (r - r.mean()) / math.sqrt(r.var(ddof=1) + 1e-8))


def test_same_seed_same_run_other_seed_other_run() -> None:
    a, b = run(estimator="rloo", seed=7, steps=15), run(estimator="rloo", seed=7, steps=15)
    assert a.steps.equals(b.steps) and a.samples.equals(b.samples)
    c = run(estimator="rloo", seed=8, steps=15)
    assert not c.samples.equals(a.samples)


def test_faults_share_the_healthy_prefix() -> None:
    """Until the onset, a faulty run is the healthy run of the same seed (matched comparisons)."""
    healthy, faulty = cached("grpo"), cached("grpo", "tight_grad_clip")
    assert healthy.steps.head(29).equals(faulty.steps.head(29))
    assert healthy.steps.row(ONSET - 1) != faulty.steps.row(ONSET - 1)  # step 30: the switch is on


@pytest.mark.parametrize("estimator", list(ESTIMATORS))
def test_healthy_run_learns(estimator: str) -> None:
    s = cached(estimator).steps
    held, reward, ent = s["heldout_success"].to_numpy(), s["reward_mean"].to_numpy(), s["entropy"].to_numpy()
    assert held[:5].mean() < 0.32 and held[-5:].mean() > held[:5].mean() + 0.15
    assert reward[-10:].mean() > reward[:10].mean() + 0.15
    # healthy learning sharpens the policy without collapsing it (ENTROPY_COLLAPSE cuts at 0.25)
    assert ent[-16:].mean() > 0.35 * ent[:16].mean()


def test_bad_arguments_name_themselves() -> None:
    with pytest.raises(AdvcoreError, match="`estimator`"):
        run(estimator="a2c", steps=2)
    with pytest.raises(AdvcoreError, match="`fault`"):
        run(fault="gremlins", steps=2)
    with pytest.raises(AdvcoreError, match="does not apply to 'ppo'"):
        run(estimator="ppo", fault="group_mixup", steps=2)
    with pytest.raises(AdvcoreError, match="`onset`"):
        run(fault="floor", steps=10, onset=20)
    with pytest.raises(AdvcoreError, match="unknown setting 'colour'"):
        run(fault="floor", steps=3, onset=2, knobs={"colour": "red"})
    with pytest.raises(AdvcoreError, match="grouping must be one of"):
        run(fault="group_mixup", steps=3, onset=2, knobs={"grouping": "random"})
    with pytest.raises(AdvcoreError, match="`knobs`"):
        run(steps=3, knobs={"kl_coef": 1.0})
    with pytest.raises(AdvcoreError, match="`lr`"):
        run(LabConfig(lr=-1.0, steps=2))


def test_registry_is_well_formed() -> None:
    from advcore.detectors import REGISTRY

    fields = set(Setting.__dataclass_fields__)
    assert len(FAULTS) >= 12
    for f in FAULTS.values():
        assert f.stage in ("R", "A", "T", "U", "any") and f.onset in ("switch", "step", "start")
        assert f.detectors and all(d in REGISTRY for d in f.detectors)
        assert set(f.scenario) | set(f.switch) <= fields and f.switch
        assert set(f.estimators) <= set(ESTIMATORS) and f.description
        assert get_fault(f.name) is f
    assert get_fault("none") is None
