"""``advcore report``: one self-contained HTML page with the signal drawn stage by stage. The page is
read back with the standard library's HTML parser: every figure has drawn data, every finding with an
onset is marked on its stage's figure, and nothing is fetched from the network."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advcore.cli import main
from advcore.scan import ScanOptions, scan
from tests._html import read_page
from tests._real import REAL, real

pytest.importorskip("matplotlib")


def _lab(tmp_path: Path, fault: str) -> Path:
    out = tmp_path / fault
    assert main(["lab", "run", "--fault", fault, "--out", str(out), "--steps", "60", "--onset", "25"]) == 0
    return out


def test_lab_runs_every_finding_marked_on_its_stage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [_lab(tmp_path, "reward_scale"), _lab(tmp_path, "none")]
    out = tmp_path / "report.html"
    assert main(["report", *map(str, runs), "--out", str(out), "--png", str(tmp_path / "png")]) == 0
    page = read_page(out)
    reports = scan([f for r in runs for f in sorted(r.iterdir()) if f.suffix != ".json"], ScanOptions())
    assert len(page.sections) == len(reports)
    assert page.external == [] and "<script src" not in out.read_text()
    for i, report in enumerate(reports):
        figures = [f for f in page.figures if f["section"] == f"run-{i}"]
        assert figures, report.run.path
        for fig in figures:  # every small plot drew its line
            assert fig["plots"] >= 1 and fig["lines"] >= fig["plots"], fig["stage"]
        for finding in report.findings:
            if finding.onset_step is None:
                continue
            drawn = [f for f in figures if f["stage"].startswith(finding.stage + " ")]
            assert drawn and all(finding.id in f["ids"] for f in drawn), (report.run.path, finding.id)
    # the per-sample recording draws its stages' quantile bands; the PNGs are the same figures
    assert any(f["stage"] == "per-sample distributions" for f in page.figures)
    assert len(list((tmp_path / "png").glob("*.png"))) == len(page.figures)
    assert "ADV_COLLAPSE" in json.dumps([f["texts"] for f in page.figures])
    # the detector's threshold is drawn across the series it judged (adv_std, on the T figure)
    t_figure = next(f for f in page.figures if f["section"] == "run-0" and f["stage"].startswith("T "))
    assert "ADV_COLLAPSE threshold" in t_figure["texts"]


def test_phases_follow_one_another_and_are_shaded(tmp_path: Path) -> None:
    """A step counter that restarts (a curriculum of three phases of 20 steps): one axis of 60 steps."""
    from advcore.report.html import _phase_layout, _timeline
    from advcore.ingest import load

    log = tmp_path / "curriculum.jsonl"
    log.write_text("".join(json.dumps({"step": s, "reward": 0.1 * p + 0.001 * s, "reward_std": 0.2}) + "\n"
                           for p in range(3) for s in range(1, 21)))
    frame = load(log).frame
    assert frame["phase"].unique().sort().to_list() == [0, 1, 2]
    offsets, shaded = _phase_layout(frame)
    assert offsets == {0: 0.0, 1: 20.0, 2: 40.0}
    assert _timeline(frame, offsets)["step"].to_list() == list(range(1, 61))
    assert shaded == [(21.0, 40.0)]


@pytest.mark.skipif(not REAL.is_dir(), reason=f"shared real logs not found at {REAL} (set ADVCORE_SHARED_REAL)")
def test_real_runs_index_links_every_section(tmp_path: Path) -> None:
    targets = [REAL / "legaloom-grpo-curriculum", REAL / "tinyzero-ppo-entropy-collapse",
               REAL / "verl-vlm-svg-grpo-rollout-dump"]
    out = tmp_path / "real.html"
    assert main(["report", *map(str, targets), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    page = read_page(out)
    links = re.findall(r"<a href='#(run-\d+)'>", text)
    assert links == page.sections and len(links) >= 3
    assert all(f["lines"] >= f["plots"] for f in page.figures)


def test_without_matplotlib_the_error_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps({"step": s, "reward": 0.5}) + "\n" for s in range(1, 9)))
    assert main(["report", str(log), "--out", str(tmp_path / "r.html")]) == 1
    assert "pip install 'advcore[report]'" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_per_slice_plots_show_the_slice_that_died(tmp_path: Path) -> None:
    """Samples labelled by task (``slice_task``): from step 20 every group of one task is solved (tied),
    the other keeps its spread; the page draws one line per task on each per-slice plot."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(0)
    rows = []
    for step in range(40):
        for g in range(16):
            task = "open_drawer" if g % 2 else "pick_cube"
            r = (rng.random(8) < (1.0 if task == "open_drawer" and step >= 20 else 0.5)).astype(float)
            rows += [(step, g, float(v), float(v - r.mean()), task) for v in r]
    data = tmp_path / "samples.parquet"
    pl.DataFrame(rows, schema=["step", "group", "reward", "adv", "slice_task"], orient="row").write_parquet(data)
    out = tmp_path / "sliced.html"
    assert main(["report", str(data), "--out", str(out)]) == 0
    [sliced] = [f for f in read_page(out).figures if f["stage"] == "per slice"]
    assert sliced["plots"] == 3 and sliced["lines"] >= 6
    assert {"task=open_drawer", "task=pick_cube"} <= set(sliced["texts"])


def test_a_vla_run_gets_per_slice_panels_with_the_lost_slice_marked(tmp_path: Path) -> None:
    """A VLA lab run whose place family saturates from step 25: three panels per slice label (family,
    horizon, variation), the family's first and titled with the lost slice, its onset marked."""
    out = tmp_path / "vla"
    assert main(["lab", "run", "--fault", "family_saturates", "--out", str(out), "--steps", "60", "--onset", "25"]) == 0
    page = tmp_path / "vla.html"
    assert main(["report", str(out), "--out", str(page)]) == 0
    [sliced] = [f for f in read_page(page).figures if f["stage"] == "per slice"]
    assert sliced["plots"] == 9
    texts = " ".join(sliced["texts"])
    assert "family: reward mean (lost: family=place)" in texts
    assert {"family=place", "horizon=long", "variation=perturbed"} <= set(sliced["texts"])
    assert re.search(r"lost at (2[5-9]|30)\b", texts), texts
    # a healthy VLA run: the same panels, nothing marked lost
    healthy = tmp_path / "healthy"
    assert main(["lab", "run", "--pool", "vla", "--out", str(healthy), "--steps", "60"]) == 0
    assert main(["report", str(healthy), "--out", str(tmp_path / "h.html")]) == 0
    [quiet] = [f for f in read_page(tmp_path / "h.html").figures if f["stage"] == "per slice"]
    assert quiet["plots"] == 9 and "lost" not in " ".join(quiet["texts"])


def test_update_thresholds_are_drawn_on_the_series_judged(tmp_path: Path) -> None:
    """The lab's over-tight gradient clip: UPDATE_SUPPRESSED judged update_ratio against a level, which
    the report draws on the U figure's update_ratio plot."""
    lab = tmp_path / "lab"
    assert main(["lab", "run", "--fault", "tight_grad_clip", "--out", str(lab), "--steps", "60", "--onset", "25"]) == 0
    collected = [r for r in scan(sorted(p for p in lab.iterdir() if p.suffix != ".json"), ScanOptions())]
    [finding] = [f for r in collected for f in r.findings if f.id == "UPDATE_SUPPRESSED"]
    assert finding.evidence["metric"] == "update_ratio" and finding.evidence["threshold"] > 0
    out = tmp_path / "clip.html"
    assert main(["report", str(lab), "--out", str(out)]) == 0
    [u] = [f for f in read_page(out).figures if f["stage"].startswith("U ")]
    assert "UPDATE_SUPPRESSED threshold" in u["texts"]


def test_a_long_series_is_thinned_to_each_stretchs_lowest_and_highest_point() -> None:
    from advcore.report.html import MAX_POINTS, _thin

    rng = np.random.default_rng(3)
    values = rng.normal(size=5003)
    values[3333] = 100.0  # a one-step spike survives
    steps = [float(s) for s in range(5003)]
    out_s, out_v = _thin(steps, values.tolist())
    assert len(out_s) <= MAX_POINTS and out_s == sorted(out_s) and 100.0 in out_v
    buckets = MAX_POINTS // 2
    edges = [b * 5003 // buckets for b in range(buckets + 1)]
    # numpy's min and max of every stretch are the points kept, in step order
    want = sorted({int(lo + np.argmin(values[lo:hi])) for lo, hi in zip(edges, edges[1:])}
                  | {int(lo + np.argmax(values[lo:hi])) for lo, hi in zip(edges, edges[1:])})
    assert out_s == [float(i) for i in want] and out_v == [float(values[i]) for i in want]
    assert _thin(steps[:50], values[:50].tolist()) == (steps[:50], values[:50].tolist())  # short: as it is


def test_figures_are_held_as_text_until_drawn_even_with_markup_in_a_metric_name(tmp_path: Path) -> None:
    # a reward component named with markup is text in the held figures, and drawn as text
    history = [{"step": s, "reward": 0.1 * s, "rewards/<b>x&y": 0.05 * s, "rewards/fmt": 1.0}
               for s in range(1, 41)]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    out = tmp_path / "page.html"
    assert main(["report", str(tmp_path / "trainer_state.json"), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "<b>x" not in text  # escaped wherever it is written
    page = read_page(out)
    assert page.held == 1 and page.figures and all(f["held"] for f in page.figures)
    titles = {t for f in page.figures for t in f["texts"]}
    # drawn as text, whole, beside its last value: 0.05 x 40
    assert "reward/<b>x&y  (last 2)" in titles


def test_findings_that_start_together_share_one_label() -> None:
    from advcore.report.html import LABEL_GAP, _marker_labels

    markers = [(4.0, "DEGENERATE_GROUPS", None), (1.0, "COMPONENT_COLLAPSE", None), (90.0, "ENTROPY_COLLAPSE", None),
               (1.0, "COMPONENT_COLLAPSE", "reward/mdi")]
    labels = _marker_labels(markers, [1.0, 100.0])
    assert LABEL_GAP * 99 >= 3  # steps 1 and 4 are within the gap on a 1-100 axis
    assert labels == [(1.0, "COMPONENT_COLLAPSE\nDEGENERATE_GROUPS"), (90.0, "ENTROPY_COLLAPSE")]
    assert _marker_labels(markers, [1.0, 10.0])[:2] == [(1.0, "COMPONENT_COLLAPSE"), (4.0, "DEGENERATE_GROUPS")]


def test_an_onset_label_near_the_left_edge_is_drawn_inside_the_plot() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from advcore.report.html import LABEL_INSIDE, _figure

    steps = [float(s) for s in range(1, 101)]
    panel = ("reward_mean", steps, [0.5] * 100, None, None)
    fig = _figure(plt, [panel], [(1.0, "COMPONENT_COLLAPSE", None), (90.0, "ENTROPY_COLLAPSE", None)], [])
    (ax,) = fig.axes
    lo, hi = ax.get_xlim()
    assert 1.0 - lo < LABEL_INSIDE * (hi - lo) < 90.0 - lo
    sides = {t.get_text(): t.get_horizontalalignment() for t in ax.texts}
    assert sides == {"COMPONENT_COLLAPSE": "left", "ENTROPY_COLLAPSE": "right"}  # each beside its line, inside
    plt.close(fig)


def test_a_long_noisy_series_is_drawn_under_its_level() -> None:
    import statistics

    import polars as pl

    from advcore.report.html import LEVEL_FROM, _level, _plots_of

    rng = np.random.default_rng(11)
    n = 1000
    values = list(np.where(np.arange(n) < 500, 1.0, 0.3) + rng.normal(0.0, 0.8, n))
    frame = pl.DataFrame({"step": [float(s) for s in range(n)], "reward_mean": values})
    level = _level(frame, "reward_mean")
    assert level is not None
    steps, got = level
    window = max(5, n // 50)
    assert steps[0] == 0.0 and len(got) == len(steps) <= 200
    for s, v in zip(steps[::7], got[::7], strict=True):  # the trailing median over 20 points, from the data
        i = int(s)
        assert v == pytest.approx(statistics.median(values[max(0, i + 1 - window): i + 1]))
    # the plot carries it; a short series is drawn as it is
    (plot,) = _plots_of(frame, "R", ("reward_mean",))
    assert plot[4] == level
    short = frame.head(LEVEL_FROM - 1)
    assert _plots_of(short, "R", ("reward_mean",))[0][4] is None


def test_a_section_says_what_the_terminal_says_of_its_inputs(tmp_path: Path) -> None:
    """The real SB3 CARLA run: the page names the keys each metric was read from, the columns not read, every
    remedy and the detectors not evaluable, as the terminal report does."""
    path = REAL / "carla-sb3-ppo-kl-blowup"
    if not path.is_dir():
        pytest.skip(f"shared real log not found at {path} (set ADVCORE_SHARED_REAL)")
    [report] = scan([path], ScanOptions())
    out = tmp_path / "carla.html"
    assert main(["report", str(path), "--out", str(out)]) == 0
    text = out.read_text()
    assert "kl_step (train/approx_kl)" in text and "not read: time/fps" in text
    assert all(t.replace("'", "&#x27;") in text for t in report.verdict.what_to_try)
    assert "Not evaluable (a missing metric is never a pass)" in text
    assert "REWARD_FLOOR: needs reward_mean" in text


def test_the_reward_figure_draws_the_components_that_moved_most() -> None:
    # eight components, seven flat with noise; the one that doubled is last by name and is drawn
    import polars as pl

    from advcore.report.html import MAX_COMPONENTS, _plots_of, _reward_components

    rng = np.random.default_rng(3)
    n = 50
    columns: dict[str, list[float]] = {"step": [float(s) for s in range(n)], "reward_mean": [0.5] * n}
    for k in range(7):
        columns[f"reward/a{k}"] = list(0.5 + rng.normal(0.0, 0.05, n))
    columns["reward/success"] = list(np.linspace(0.3, 0.6, n))
    frame = pl.DataFrame(columns)
    drawn, total = _reward_components(frame)
    assert total == 8 and len(drawn) == MAX_COMPONENTS and "reward/success" in drawn
    assert [p[0] for p in _plots_of(frame, "R", ("reward_mean",))] == ["reward_mean", *drawn]


def test_a_multi_agent_run_draws_each_groups_policy_and_critic(tmp_path: Path) -> None:
    # marl-mappo-schiphol-wandb-history: BenchMARL logs entropy, KL, clip fraction and explained variance once
    # per agent group; a newcomer found only the reward drawn
    out = tmp_path / "marl.html"
    assert main(["report", str(real("marl-mappo-schiphol-wandb-history/wandb_export.csv")), "--out", str(out)]) == 0
    captions = re.findall(r"<figcaption><h3>(.*?)</h3>", out.read_text(encoding="utf-8"))
    assert captions == ["R reward", "A baseline", "U update"]
    import polars as pl

    from advcore.report.html import _plots_of

    frame = pl.DataFrame({"step": [0.0, 1.0, 2.0], "entropy/b": [1.0, 0.9, 0.8], "entropy/a": [1.0, 1.0, 1.0],
                          "kl_step": [0.01, 0.02, 0.01]})
    assert [p[0] for p in _plots_of(frame, "U", ("kl_step", "entropy"))] == ["kl_step", "entropy/a", "entropy/b"]


def test_only_the_reward_figure_counts_the_reward_components(tmp_path: Path) -> None:
    # a newcomer read "U update (0 of its 1 reward components drawn: those that moved most)" on legaloom-grpo-final
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps({"step": s, "reward": 0.5 + s / 100, "rewards/fn/mean": 0.1 + s / 100,
                                       "grad_norm": 1.0 / s, "kl": s / 1000}) + "\n" for s in range(1, 30)))
    page = tmp_path / "r.html"
    assert main(["report", str(log), "--out", str(page)]) == 0
    titles = re.findall(r"data-stage='([^']*)'", page.read_text())
    assert titles and not any("components drawn" in t for t in titles)
    assert any(t.startswith("U update") for t in titles)


def test_the_lowest_plot_of_each_column_says_what_the_x_axis_counts(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # a newcomer's PNGs had no x-axis label: an SB3 Monitor file's axis is the running sum of the episodes' lengths
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from advcore.ingest import load
    from advcore.report import html as report_html
    from advcore.scan import ScanOptions, judge

    log = tmp_path / "monitor.csv"
    log.write_text('#{"t_start": 0.0, "env_id": "CartPole-v1"}\nr,l,t\n'
                   + "".join(f"{10 + i},{10 + i},{i}.0\n" for i in range(40)))
    report = judge(load(log), ScanOptions())
    drawn: list[list[str]] = []
    save = report_html._save_figure

    def record(plt_: object, fig: object, *args: object) -> object:
        drawn.append([ax.get_xlabel() for ax in fig.axes if ax.get_visible()])  # type: ignore[attr-defined]
        return save(plt_, fig, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(report_html, "_save_figure", record)
    assert report_html._run_figures(plt, 0, report, None)
    assert drawn and all(labels and set(labels) <= {"", "environment steps"} and labels[-1] == "environment steps"
                         for labels in drawn)
    panels = [(f"m{k}", [1.0, 2.0], [0.0, 1.0], None, None) for k in range(report_html.COLUMNS + 1)]
    fig = report_html._figure(plt, panels, [], [], xlabel="frames")
    labels = [ax.get_xlabel() for ax in fig.axes if ax.get_visible()]
    # the last COLUMNS plots have no plot below them: they carry the label, the first row's others do not
    assert labels == [""] * (len(panels) - report_html.COLUMNS) + ["frames"] * report_html.COLUMNS
    plt.close(fig)


def test_a_runs_section_holds_the_lines_the_terminal_prints_under_its_verdict(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    # a newcomer missed the signal by stage and the reward's course in the HTML page of f1-strategist-grpo-zero-std
    import html

    path = REAL / "f1-strategist-grpo-zero-std" / "trainer_state.json"
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/data/real)")
    assert main(["scan", str(path)]) == 0
    terminal = " ".join(capsys.readouterr().out.split())
    out = tmp_path / "f1.html"
    assert main(["report", str(path), "--out", str(out)]) == 0
    page = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", out.read_text(encoding="utf-8"))).split())
    assert "signal by stage (" in terminal and "Signal by stage (" in page
    assert "reward (median, early -> late):" in terminal and "Reward (median, early -> late):" in page
    levels = terminal.split("signal by stage (")[1].split(")", 1)[1].split(" reward (median")[0]
    assert levels.lstrip(": ") in page
