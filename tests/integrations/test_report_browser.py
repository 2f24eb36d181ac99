"""``advcore report`` opened in a real browser (Debian's ``chromium``, headless, installed by ``make
test-integration``) with the network cut off: the page lays out, every figure's plots are drawn (the
DOM after the page's script ran, and the pixels of the screenshot), and every finding is marked."""

from __future__ import annotations

import json
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

    # '#all': the page draws every section's figures at once (else as they come near the screen)
    dom = subprocess.run([browser, *_OFFLINE, "--dump-dom", page.as_uri() + "#all"], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    parsed = Page()
    parsed.feed(dom)
    assert len(parsed.sections) == len(reports) and parsed.figures
    assert parsed.held == 0 and not any(f["held"] for f in parsed.figures)  # drawn by the browser, none left as text
    for fig in parsed.figures:
        assert fig["lines"] >= fig["plots"] >= 1, fig["stage"]
    for i, report in enumerate(reports):
        ids = {t for f in parsed.figures if f["section"] == f"run-{i}" for t in f["ids"]}
        for finding in report.findings:
            if finding.onset_step is not None and finding.stage in "RATU":
                assert finding.id in ids, (report.run.path, finding.id)

    shot = tmp_path / "shot.png"
    subprocess.run([browser, *_OFFLINE, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120,
                   check=True)
    from matplotlib.image import imread

    pixels = imread(shot)
    # the plots' blue lines (the report's #1f4e8c) are on the screen
    blue = ((abs(pixels[..., 0] - 0x1f / 255) < 0.08) & (abs(pixels[..., 1] - 0x4e / 255) < 0.08)
            & (abs(pixels[..., 2] - 0x8c / 255) < 0.08)).sum()
    assert blue > 1000


def test_a_long_report_draws_the_sections_near_the_screen_first(tmp_path: Path) -> None:
    # 40 TRL runs: the page opens with the first sections drawn and the far ones held as text
    browser = _chromium()
    for i in range(40):
        history = [{"step": s, "reward": 0.2 + 0.005 * s + 0.01 * ((s * 7 + i) % 5), "reward_std": 0.3, "kl": 0.001 * s}
                   for s in range(1, 101)]
        (tmp_path / "archive" / f"run{i:02d}").mkdir(parents=True)
        (tmp_path / "archive" / f"run{i:02d}" / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    page = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "archive"), "--out", str(page)]) == 0
    # the virtual time budget lets the page run its frames (its observer reports in one) before the DOM is read
    dom = subprocess.run([browser, *_OFFLINE, "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    parsed = Page()
    parsed.feed(dom)
    assert len(parsed.sections) == 40
    drawn = [f["section"] for f in parsed.figures if not f["held"]]
    held = [f["section"] for f in parsed.figures if f["held"]]
    assert "run-0" in drawn and "run-39" in held and 0 < parsed.held < 40
    # every section drawn lies before every section held: the page draws from the top of the screen down
    assert max(int(s.split("-")[1]) for s in drawn) < min(int(s.split("-")[1]) for s in held)
