"""``advcore report``: one self-contained HTML page with the signal drawn stage by stage. The page is
read back with the standard library's HTML parser: every figure has drawn data, every finding with an
onset is marked on its stage's figure, and nothing is fetched from the network."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from advcore.cli import main
from advcore.scan import ScanOptions, scan
from tests._html import read_page
from tests._real import REAL

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
            assert drawn and all(finding.id in f["texts"] for f in drawn), (report.run.path, finding.id)
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
