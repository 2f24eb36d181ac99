from __future__ import annotations

from pathlib import Path

from advcore.ingest import detect, load
from advcore.ingest.formats import openrlhf

ESC = "\x1b"


def test_global_step_lines(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text(
        "Episode [1/1]: 0%|\n"
        f"{ESC}[36m(ActorModelRayActor pid=123){ESC}[0m Global step 1: {{'policy_loss': np.float64(0.12), "
        "'reward': 0.5, 'return': 0.4, 'kl': nan, 'actor_lr': 1e-06, 'policy_entropy': 1.5, "
        "'response_length': 210.0, 'note': 'x'}\n"
        "Global step 2: {'policy_loss': -0.1, 'reward': tensor(0.75, device='cuda:0'), 'kl': 0.01, "
        "'policy_entropy': 1.25, 'ppo_clip_ratio': 0.02}\n"
        "Global step 3: {'policy_loss': -0.1, 're\n",
        encoding="utf-8",
    )
    assert detect(p) is openrlhf.FORMAT
    raw = openrlhf.read(p)
    assert raw.frame["step"].to_list() == [1, 2]
    assert raw.frame["policy_loss"].to_list() == [0.12, -0.1]
    assert raw.frame["kl"].is_nan()[0]
    (err,) = raw.errors
    assert err.line == 4 and err.path == str(p)
    run = load(p)
    assert run.trainer == "openrlhf"
    assert run.frame["reward_mean"].to_list() == [0.5, 0.75]
    assert run.frame["entropy"].to_list() == [1.5, 1.25]
    assert run.frame["clip_frac"].to_list() == [None, 0.02]


def test_no_lines(tmp_path: Path) -> None:
    p = tmp_path / "x.log"
    p.write_text("Global step is nice\n", encoding="utf-8")
    assert not openrlhf.sniff(p, p.read_text())
    assert openrlhf.read(p).errors
