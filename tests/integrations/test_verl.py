"""advcore.integrations.verl on batches built to verl 0.9.1's documented shapes (numpy oracles),
and against verl's own ``compute_grpo_outcome_advantage`` where verl and torch are installed
(skipped otherwise; not installed by CI)."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import scipy.stats

import advcore
from advcore.errors import AdvcoreError
from advcore.integrations.verl import batch_arrays, batch_metrics

T = 6


def verl_batch(seed: int = 0, eps: float = 1e-6) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray]:
    """8 prompts x 4 responses, uids shuffled (verl groups by value, not position), reward on the last
    response token, GRPO advantages as verl computes them (unbiased std, eps outside) times the mask."""
    rng = np.random.default_rng(seed)
    uid = np.array([f"prompt-{i}" for i in np.repeat(np.arange(8), 4)], dtype=object)
    rng.shuffle(uid)
    n = uid.size
    p = {u: rng.random() for u in set(uid)}
    p["prompt-0"], p["prompt-1"] = 0.0, 1.0   # two tied groups
    score = np.array([float(rng.random() < p[u]) for u in uid]) + rng.integers(0, 2, n) * 0.25
    score[uid == "prompt-0"] = 0.0
    score[uid == "prompt-1"] = 1.0
    length = rng.integers(1, T + 1, n)
    mask = (np.arange(T)[None, :] < length[:, None]).astype(np.float32)
    tlr = np.zeros((n, T), dtype=np.float32)
    tlr[np.arange(n), length - 1] = score
    adv_seq = np.empty(n)
    for u in set(uid):
        m = uid == u
        adv_seq[m] = (score[m] - score[m].mean()) / (score[m].std(ddof=1) + eps)
    adv = (adv_seq[:, None] * mask).astype(np.float32)
    batch = {"token_level_rewards": tlr, "token_level_scores": tlr, "response_mask": mask, "advantages": adv,
             "returns": adv, "uid": uid}
    return batch, score, adv_seq, uid


def test_metrics_match_numpy_oracles() -> None:
    batch, score, adv_seq, uid = verl_batch()
    out = batch_metrics(batch)
    groups = [score[uid == u] for u in sorted(set(uid))]
    tied = np.mean([np.ptp(g) == 0 for g in groups])
    assert 0 < tied < 1
    assert out["advcore/zero_variance_group_frac"] == pytest.approx(tied)
    assert out["advcore/reward_mean"] == pytest.approx(score.mean())
    assert out["advcore/reward_std_within"] == pytest.approx(np.mean([g.std(ddof=1) for g in groups]))
    assert out["advcore/adv_std"] == pytest.approx(adv_seq.std(), rel=1e-6)
    rho = [scipy.stats.spearmanr(score[uid == u], adv_seq[uid == u])[0] for u in sorted(set(uid))
           if np.ptp(score[uid == u]) > 0]
    assert out["advcore/spearman_adv_reward_within"] == pytest.approx(np.mean(rho), rel=1e-6)
    assert out["advcore/singleton_group_frac"] == 0.0
    assert out["advcore/adv_recompute_err"] <= 1.0   # verl's GRPO (eps 1e-6) is recognised


def test_dataproto_like_and_attention_mask() -> None:
    batch, score, _, _ = verl_batch(1)
    ref = batch_metrics(batch)
    tensors = {k: v for k, v in batch.items() if k != "uid"}
    prompt = np.ones((score.size, 3))
    tensors["attention_mask"] = np.concatenate([prompt, tensors.pop("response_mask")], axis=1)
    tensors["responses"] = np.zeros((score.size, T), dtype=np.int64)
    proto = SimpleNamespace(batch=tensors, non_tensor_batch={"uid": batch["uid"]})
    out = batch_metrics(proto)
    for key in ("advcore/zero_variance_group_frac", "advcore/adv_std", "advcore/reward_mean"):
        assert out[key] == pytest.approx(ref[key])


def test_gae_batch_gives_baseline_and_return_stages() -> None:
    batch, score, _, _ = verl_batch(2)
    values = np.random.default_rng(0).normal(size=batch["advantages"].shape)
    arrays = batch_arrays({**batch, "values": values, "returns": values + 1.0})
    first = values[:, 0]   # every response starts at token 0 in verl's right-padded response tensor
    np.testing.assert_allclose(arrays["baseline"], first)
    np.testing.assert_allclose(arrays["returns"], first + 1.0)
    np.testing.assert_allclose(arrays["rewards"], score, rtol=1e-6)


def test_bad_batches_raise_or_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    batch, _, _, _ = verl_batch(3)
    with pytest.raises(AdvcoreError, match="response_mask"):
        batch_metrics({k: v for k, v in batch.items() if k != "response_mask"})
    with pytest.raises(AdvcoreError, match="advantages"):
        batch_metrics({**batch, "advantages": batch["advantages"][:, :-1]})
    with pytest.raises(AdvcoreError, match="uid"):
        batch_metrics({**batch, "uid": batch["uid"][:-1]})
    with pytest.raises(AdvcoreError, match="token_level"):
        batch_metrics({"response_mask": batch["response_mask"]})
    mon = advcore.Monitor()
    with caplog.at_level(logging.WARNING, logger="advcore"):
        out = batch_metrics({"response_mask": batch["response_mask"]}, monitor=mon, step=1)
    assert out == {"advcore/errors": 1.0} and "token_level" in caplog.text
    good = batch_metrics(batch, monitor=mon, step=2)
    assert good["advcore/findings"] == 0 and "advcore/zero_variance_group_frac" in good


@pytest.mark.parametrize("singleton", [False, True])
def test_against_verls_own_grpo(singleton: bool) -> None:
    torch = pytest.importorskip("torch")
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    batch, score, _, uid = verl_batch(4)
    if singleton:   # one prompt keeps a single response: verl lets its raw score through (mean 0, std 1)
        keep = np.ones(uid.size, dtype=bool)
        keep[np.flatnonzero(uid == "prompt-5")[1:]] = False
        batch = {k: v[keep] for k, v in batch.items()}
        score, uid = score[keep], uid[keep]
    tlr = torch.tensor(batch["token_level_rewards"])
    mask = torch.tensor(batch["response_mask"])
    adv, ret = core_algos.compute_grpo_outcome_advantage(token_level_rewards=tlr, response_mask=mask, index=uid)
    out = batch_metrics({"token_level_rewards": tlr, "response_mask": mask, "advantages": adv, "returns": ret,
                         "uid": uid})
    assert out["advcore/adv_recompute_err"] <= 1.0
    assert out["advcore/singleton_group_frac"] == pytest.approx(1 / 8 if singleton else 0.0)
    from advcore.reference import grpo

    ours = grpo(score, uid.tolist(), eps=1e-6, ddof=1, singleton="raw")
    np.testing.assert_allclose(ours, batch_arrays({"token_level_rewards": tlr, "response_mask": mask,
                                                   "advantages": adv, "uid": uid})["adv"], rtol=1e-5, atol=1e-6)
