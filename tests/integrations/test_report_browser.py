"""``advcore report`` opened in a real browser (Debian's ``chromium``, headless, installed by ``make
test-integration``) with the network cut off: the page lays out, every figure's plots are drawn (the
DOM after the page's script ran, and the pixels of the screenshot), and every finding is marked."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from advcore.cli import main
from advcore.scan import ScanOptions, collect_paths, is_quiet_miss, scan
from tests._html import Page
from tests._real import REAL

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]

#: Chromium with no way out: every host resolves to nothing and any proxy is a closed port.
_OFFLINE = ["--headless=new", "--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=127.0.0.1:9", "--window-size=1200,4000"]


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium not installed (make test-integration installs Debian's chromium package)")
    return found


def test_report_in_a_browser_offline(tmp_path: Path) -> None:
    browser = _chromium()
    lab = tmp_path / "lab"
    assert main(["lab", "run", "--fault", "reward_scale", "--out", str(lab), "--steps", "60", "--onset", "25"]) == 0
    targets = [lab] + [REAL / name for name in ("legaloom-grpo-curriculum", "tinyzero-ppo-entropy-collapse")
                       if (REAL / name).is_dir()]
    page = tmp_path / "report.html"
    assert main(["report", *map(str, targets), "--out", str(page)]) == 0
    collected = collect_paths([str(t) for t in targets])
    reports = [r for r in scan(collected.files, ScanOptions()) if not is_quiet_miss(r, collected.explicit)]

    dom = subprocess.run([browser, *_OFFLINE, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    parsed = Page()
    parsed.feed(dom)
    assert len(parsed.sections) == len(reports) and parsed.figures
    for fig in parsed.figures:
        assert fig["lines"] >= fig["plots"] >= 1, fig["stage"]
    for i, report in enumerate(reports):
        texts = {t for f in parsed.figures if f["section"] == f"run-{i}" for t in f["texts"]}
        for finding in report.findings:
            if finding.onset_step is not None and finding.stage in "RATU":
                assert finding.id in texts, (report.run.path, finding.id)

    shot = tmp_path / "shot.png"
    subprocess.run([browser, *_OFFLINE, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120,
                   check=True)
    from matplotlib.image import imread

    pixels = imread(shot)
    # the plots' blue lines (the report's #1f4e8c) are on the screen
    blue = ((abs(pixels[..., 0] - 0x1f / 255) < 0.08) & (abs(pixels[..., 1] - 0x4e / 255) < 0.08)
            & (abs(pixels[..., 2] - 0x8c / 255) < 0.08)).sum()
    assert blue > 1000
