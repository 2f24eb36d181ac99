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
