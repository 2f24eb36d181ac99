"""The DPO reference trainer's and HALOs' console (``train stats after N examples: {...}``). Expected
values are read off the lines by hand, or off the real log with plain string operations."""

from __future__ import annotations

import ast
from pathlib import Path

from advcore.ingest import detect, load
from advcore.ingest.formats import halos_console
from tests._real import corpus


def test_stats_lines_are_steps_and_the_rest_is_skipped(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text(
        "trainer: PPOTrainer\nloss:\n  KL_coef: 0.1\n"
        "train stats after 64 examples: {'loss/total': '-0.0050385', 'loss/entropy': '1.0193', 'loss/policykl': '0', "
        "'clipfrac/policy': '0', 'grad_norm': '2.0671', 'counters/examples': 64, 'counters/updates': 4}\n"
        "skipping logging after 96 examples to avoid logging too frequently\n"
        "eval after 100: {'loss/entropy': '5.0'}\n"
        "train stats after 128 examples: {'loss/entropy': '0.89342', 'loss/policykl': 'nan', 'grad_norm': '2.2541', "
        "'counters/examples': 128, 'counters/updates': 8}\n"
        "train stats after 192 examples: {'loss/entropy': '0.9', 'loss/poli\n")
    assert detect(p) is halos_console.FORMAT
    run = load(p)
    assert run.trainer == "halos" and run.frame["step"].to_list() == [64, 128]
    assert run.frame["entropy"].to_list() == [1.0193, 0.89342]
    kl = run.frame["kl"].to_list()
    assert kl[0] == 0.0 and kl[1] != kl[1]  # 'nan' as a string is NaN
    assert run.frame["clip_frac"].to_list() == [0.0, None]
    assert [(e.line, "does not parse" in e.message) for e in run.errors] == [(8, True)]


def test_real_halos_offline_ppo_log() -> None:
    path = corpus("h76-halos-offline-ppo-llama2-7b-hh-kl-drift-late-entropy-explosion/halos_train_ppo_log_new.txt")
    steps, entropy = [], []
    for line in path.read_text().splitlines():
        if line.startswith("train stats after "):
            steps.append(int(line.split()[3]))
            entropy.append(float(ast.literal_eval(line.split(" examples: ", 1)[1])["loss/entropy"]))
    run = load(path)
    assert run.errors == () and len(steps) == 5025  # the count the corpus entry's author made
    assert run.frame["step"].to_list() == steps
    assert run.frame["entropy"].to_list() == entropy
