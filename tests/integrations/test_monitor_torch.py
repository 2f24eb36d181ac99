"""Monitor.observe on torch tensors (CPU float32, bfloat16, tensors that require grad) gives the
numpy path's metrics. Slow: needs torch (``make test-integration`` installs it)."""

from __future__ import annotations

import numpy as np
import pytest

import advcore

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")


def test_torch_tensors_match_numpy() -> None:
    rng = np.random.default_rng(0)
    r = (rng.random(256) < 0.4).astype(np.float32)
    m = r.reshape(-1, 8)
    adv = ((r - np.repeat(m.mean(1), 8)) / (np.repeat(m.std(1, ddof=1), 8) + 1e-4)).astype(np.float32)
    ref = advcore.Monitor().observe(1, rewards=r, group_size=8, advantages=adv)
    t_adv = torch.tensor(adv, requires_grad=True) * 1.0   # a tensor in the autograd graph
    out = advcore.Monitor().observe(1, rewards=torch.tensor(r), group_size=8, advantages=t_adv)
    bf = advcore.Monitor().observe(1, rewards=torch.tensor(r, dtype=torch.bfloat16), group_size=8,
                                   advantages=torch.tensor(adv).to(torch.bfloat16))
    assert out["advcore/errors"] == 0 and bf["advcore/errors"] == 0
    for key in ("advcore/zero_variance_group_frac", "advcore/adv_std", "advcore/spearman_adv_reward"):
        assert out[key] == pytest.approx(ref[key], rel=1e-6)
    assert bf["advcore/zero_variance_group_frac"] == ref["advcore/zero_variance_group_frac"]   # 0/1 exact in bf16
    assert bf["advcore/adv_std"] == pytest.approx(ref["advcore/adv_std"], rel=1e-2)   # bf16 has 8 bits


def test_import_advcore_imports_neither_torch_nor_transformers() -> None:
    import subprocess
    import sys

    code = ("import sys, advcore, advcore.integrations.trl, advcore.integrations.verl; "
            "print(sorted(m for m in ('torch', 'transformers', 'trl', 'verl') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    code = "import sys; from advcore.integrations.trl import AdvcoreCallback; print('transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


def _grpo_batch(rng: np.random.Generator) -> dict[str, np.ndarray]:
    r = (rng.random(64) < 0.5).astype(np.float32)
    m = r.reshape(-1, 8)
    adv = ((r - np.repeat(m.mean(1), 8)) / (np.repeat(m.std(1, ddof=1), 8) + 1e-4)).astype(np.float32)
    return {"rewards": r, "advantages": adv}


def _train(max_norm: float, steps: int = 30) -> tuple[advcore.Monitor, list[dict[str, float]]]:
    """A small torch model trained with Adam and a gradient clip, watched by a Monitor; returns the
    monitor and, per step, the oracle: the clipped norm and the step relative to the parameters,
    computed here from the model."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    mon = advcore.Monitor(alert_trackers=False, strict=True)
    probe = mon.watch(opt, every=1)
    assert probe.sample_share == 1.0   # a small model is measured whole
    rng = np.random.default_rng(0)
    x, y = torch.randn(256, 32), torch.randn(256, 4)
    oracle = []
    for step in range(1, steps + 1):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        before_clip = float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm))
        clipped = float(torch.sqrt(sum((p.grad ** 2).sum() for p in model.parameters())))
        old = [p.detach().clone() for p in model.parameters()]
        opt.step()
        moved = float(torch.sqrt(sum(((p.detach() - o) ** 2).sum() for p, o in zip(model.parameters(), old))))
        norm = float(torch.sqrt(sum((p.detach() ** 2).sum() for p in model.parameters())))
        oracle.append({"grad_norm_clipped": clipped, "update_ratio": moved / norm})
        mon.observe(step, group_size=8, metrics={"grad_norm": before_clip}, **_grpo_batch(rng))
    return mon, oracle


def test_watch_measures_the_update_and_sees_an_over_tight_clip() -> None:
    mon, oracle = _train(max_norm=1e-6)
    frame = mon.steps_frame
    np.testing.assert_allclose(frame["grad_norm_clipped"].to_numpy(), [o["grad_norm_clipped"] for o in oracle],
                               rtol=1e-4)
    np.testing.assert_allclose(frame["update_ratio"].to_numpy(), [o["update_ratio"] for o in oracle], rtol=1e-3)
    found = {f.id: f for f in mon.findings}
    assert "UPDATE_SUPPRESSED" in found and found["UPDATE_SUPPRESSED"].evidence["metric"] == "clip_kept"
    # the same training with a clip at 1.0 keeps its gradient: no finding of a suppressed update
    mon, _ = _train(max_norm=1.0)
    assert "UPDATE_SUPPRESSED" not in {f.id for f in mon.findings}
    assert mon.errors == 0
