from __future__ import annotations

import io
import re
import time
from pathlib import Path

from tqdm import tqdm

from advcore.ingest import detect, load
from advcore.ingest.formats import cleanrl_console, printed, tqdm_bar
from tests._real import corpus


def _console(tmp_path: Path, draw: list[tuple[int, dict[str, float] | None, dict[str, float] | None]],
             total: int | None = 100) -> Path:
    """What tqdm itself writes to a captured console: ``draw`` is (updates, description pairs, postfix
    pairs) per redraw, each update a step."""
    out = io.StringIO()
    bar = tqdm(total=total, file=out, mininterval=0, miniters=1, ascii=False)
    for steps, desc, postfix in draw:
        if desc is not None:
            bar.set_description(", ".join(f"{k}: {v:.2f}" for k, v in desc.items()))
        if postfix is not None:
            bar.set_postfix(postfix)
        bar.update(steps)
    bar.close()
    p = tmp_path / "train.log"
    p.write_text("Loading model...\n" + out.getvalue())
    return p


def test_the_postfix_of_a_real_tqdm_bar(tmp_path: Path) -> None:
    # set_postfix(loss=..., reward=...) at every update: one row per step, the values as tqdm formats them
    rewards = [0.125, 0.25, 0.5, 0.75, 1.0]
    p = _console(tmp_path, [(1, None, {"loss": 2.0 - r, "reward": r}) for r in rewards], total=5)
    assert b"\r" in p.read_bytes() and detect(p) is tqdm_bar.FORMAT
    run = load(p)
    frame = run.frame.drop_nulls("reward_mean")
    # tqdm redraws at set_postfix (before the update) and at the update: the first redraw of a value is at
    # the count before its update
    assert frame["step"].to_list() == [0, 1, 2, 3, 4]
    assert frame["reward_mean"].to_list() == rewards
    assert run.trainer == "printed"


def test_a_description_is_read_once_where_it_first_appears(tmp_path: Path) -> None:
    # an evaluation sets the description every 10 steps; the redraws in between repeat it
    draw = [(10, {"success_rate": s, "return": r}, None) for s, r in ((0.0, -5.0), (0.25, 3.0), (0.5, 9.0))]
    p = _console(tmp_path, draw, total=30)
    frame = load(p).frame
    assert frame["step"].to_list() == [0, 10, 20]
    assert frame["reward_mean"].to_list() == [-5.0, 3.0, 9.0]
    assert frame["success_rate"].to_list() == [0.0, 0.25, 0.5]


def test_a_new_bar_per_epoch_counts_on(tmp_path: Path) -> None:
    out = io.StringIO()
    for epoch in range(3):
        bar = tqdm(total=4, file=out, mininterval=0, miniters=1, desc=f"epoch {epoch}")
        for i in range(4):
            bar.set_postfix(reward=epoch + i / 4)
            bar.update(1)
        bar.close()
    p = tmp_path / "epochs.log"
    p.write_text(out.getvalue())
    run = load(p)
    frame = run.frame.drop_nulls("reward_mean")
    assert frame["step"].to_list() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert frame["reward_mean"].to_list() == [e + i / 4 for e in range(3) for i in range(4)]
    assert run.metadata["restarts"] == 2


def test_a_bar_without_pairs_is_no_log(tmp_path: Path) -> None:
    out = io.StringIO()
    for _ in tqdm(range(50), file=out, mininterval=0, miniters=1):
        time.sleep(0)
    p = tmp_path / "plain.log"
    p.write_text(out.getvalue())
    assert not tqdm_bar.sniff(p, p.read_text())
    assert load(p).steps == 0


def test_a_long_line_without_a_bar_costs_no_time(tmp_path: Path) -> None:
    # digits and brackets that never complete a bar: each failed match costs one position
    text = ("12/34 [" + "1" * 50 + ", ") * 5000
    started = time.perf_counter()
    assert not tqdm_bar.is_bar(text)
    assert time.perf_counter() - started < 5  # linear: a quadratic scan would take minutes


def test_real_squint_console_of_evaluations_in_the_description() -> None:
    """h257-squint-visual-sac-so101-placecube-cold-no-distractor-learns: one line of 1,009 tqdm redraws
    whose description is 'success_at_end: X, success_once: Y, return: Z' after each of 21 evaluations or
    ' <sps> sps, global_step=N, episodic_return= R (max= M)' after a training iteration; CleanRL's and
    the printed-progress readers must not take it for their lines."""
    path = corpus("h257-squint-visual-sac-so101-placecube-cold-no-distractor-learns/"
                  "placecube_bowl_eval1_run1_wo_tablepenalty.log")
    text = path.read_bytes().decode()  # the redraws' carriage returns as written
    head = text[:65536]
    assert not cleanrl_console.sniff(path, head) and not printed.sniff(path, head)
    assert detect(path) is tqdm_bar.FORMAT
    # the oracle: each new evaluation description, at the counter of the first redraw that shows it
    evaluations: dict[str, int] = {}
    for piece in text.split("\r"):
        m = re.search(r"(success_at_end: [\d.]+, success_once: [\d.]+, return: -?[\d.]+).*?\s(\d+)(?:/\d+|it) \[", piece)
        if m and m.group(1) not in evaluations:
            evaluations[m.group(1)] = int(m.group(2))
    assert len(evaluations) == 21
    run = load(path)
    frame = run.frame.drop_nulls("reward_mean")
    assert frame["step"].to_list() == list(evaluations.values())
    assert frame["reward_mean"].to_list() == [float(k.rsplit(" ", 1)[1]) for k in evaluations]
    assert frame["reward_mean"].to_list()[:3] == [-5.63, 0.21, -1.16] and frame["step"][-1] == 2000896
    assert frame["success_rate"].to_list()[-1] == 0.56
    assert "episodic_return" in run.metadata["unmapped"]  # the training returns: no alias for this trainer


def test_one_real_tqdm_bar_per_epoch_whose_postfix_is_set_as_it_ends(tmp_path: Path) -> None:
    # tianshou 2.x's trainer (a survey console): one bar of 2048 environment steps per epoch, its postfix
    # (env_step, rew, ...) set once the epoch's steps are done, so every snapshot with pairs is a complete bar
    out = io.StringIO()
    rewards = [-64.97, -60.41, -63.05, -55.5]
    for epoch, rew in enumerate(rewards, start=1):
        bar = tqdm(total=2048, desc=f"Epoch #{epoch}", file=out, mininterval=0, miniters=1, ascii=True)
        bar.update(2048)
        bar.set_postfix(env_step=2048 * epoch, rew=rew)
        bar.close()
    p = tmp_path / "rl_train.log"
    p.write_text("pybullet build time: Apr  6 2026\n" + out.getvalue())
    run = load(p)
    assert run.frame["reward_mean"].to_list() == [float(f"{r:.3g}") for r in rewards]  # as tqdm formats them
    assert run.frame["step"].to_list() == [2048, 4096, 6144, 8192] and run.metadata["restarts"] == 3
