"""``advcore report`` of an archive: ``python bench/bench_report.py [--runs 1000]``.

Writes the archive of ``bench_fleet`` (runs of 1,000 logged steps in four formats, a third of them
losing their reward spread half-way), then times in fresh processes:

* ``advcore report ARCHIVE --out page.html``: the scan and the drawing, the page's size;
* the page opened in headless Chromium (Debian's ``chromium``): the time from navigation to the
  page's ``load`` event, read from the page itself (``performance.now()`` in a load handler added to
  a copy of the page; the sections' figures are held as text until they come near the screen, so
  none is drawn by then); and the wall time of a screenshot of the first screen, its figures drawn,
  against the same for an empty page (Chromium's own start-up, measured apart).

Not a test: nothing is asserted. Medians of ``--repeat`` openings.
"""

from __future__ import annotations

import argparse
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_fleet import write_archive  # noqa: E402

_BROWSER = ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,1600"]
_PROBE = "<script>addEventListener('load',()=>{document.documentElement.dataset.load=performance.now();});</script>"


def _open(browser: str, page: Path) -> float:
    """Milliseconds from navigation to ``load``."""
    dom = subprocess.run([browser, *_BROWSER, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    load = re.search(r'data-load="([\d.]+)"', dom)
    if load is None:
        raise RuntimeError("the page's load handler did not run")
    return float(load.group(1))


def _screenshot(browser: str, page: Path, shot: Path) -> float:
    t = time.perf_counter()
    subprocess.run([browser, *_BROWSER, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=300,
                   check=True)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    print(f"CPU: {platform.processor() or platform.machine()}; {args.runs} runs of 1,000 steps")
    with tempfile.TemporaryDirectory() as tmp:
        root = write_archive(Path(tmp) / "archive", args.runs)
        page = Path(tmp) / "report.html"
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "advcore", "report", str(root), "--out", str(page)], check=True,
                       capture_output=True)
        made = time.perf_counter() - t
        text = page.read_text(encoding="utf-8")
        print(f"advcore report: {made:.1f} s ({made / args.runs * 1e3:.0f} ms per run), "
              f"{len(text) / 1e6:.1f} MB ({len(text) / args.runs / 1e3:.0f} KB per run), "
              f"{text.count('<figure')} figures")
        if browser is None:
            print("chromium not installed: the opening is not measured (apt-get install chromium)")
            return
        probed = Path(tmp) / "probed.html"
        probed.write_text(text.replace("</body>", _PROBE + "</body>", 1), encoding="utf-8")
        opened = [_open(browser, probed) / 1e3 for _ in range(args.repeat)]
        print(f"opened in Chromium: load event at {statistics.median(opened):.2f} s (median of {args.repeat}; "
              f"{min(opened):.2f}-{max(opened):.2f} s)")
        empty = Path(tmp) / "empty.html"
        empty.write_text("<!doctype html><title>empty</title>", encoding="utf-8")
        shot = Path(tmp) / "shot.png"
        blank = statistics.median(_screenshot(browser, empty, shot) for _ in range(args.repeat))
        full = statistics.median(_screenshot(browser, page, shot) for _ in range(args.repeat))
        print(f"screenshot of the first screen: {full:.2f} s, of an empty page {blank:.2f} s "
              f"(the page's own share {full - blank:.2f} s)")


if __name__ == "__main__":
    main()
