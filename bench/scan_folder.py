"""Scan throughput: ``python bench/scan_folder.py [--counts 10,100,1000] [--steps 1000]``.

Writes ``count`` copies of a ``steps``-step TRL ``trainer_state.json`` (the embedded example run,
lengthened) into a temporary folder, scans the folder with ``advcore.scan`` (parallel worker
processes, as ``advcore scan`` does) and prints the wall time and the time per run. Time per run
should stay roughly flat as the count grows.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from advcore.demo import collapsed_run_log
from advcore.scan import collect_paths, scan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="10,100,1000")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    text = json.dumps(collapsed_run_log(steps=args.steps), indent=1)
    print(f"{os.cpu_count()} cpus; each run: trainer_state.json, {args.steps} steps, {len(text) / 1e6:.1f} MB\n")
    print("| runs | wall s | ms per run | findings per run |")
    print("| ---: | ---: | ---: | ---: |")
    for count in (int(c) for c in args.counts.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(count):
                d = Path(tmp) / f"run{i:05d}"
                d.mkdir()
                (d / "trainer_state.json").write_text(text)
            files = collect_paths([tmp]).files
            t0 = time.perf_counter()
            reports = scan(files, jobs=args.jobs)
            wall = time.perf_counter() - t0
        assert len(reports) == count and all(not r.run.errors for r in reports)
        findings = sum(len(r.findings) for r in reports) / count
        print(f"| {count} | {wall:.2f} | {wall / count * 1e3:.1f} | {findings:.1f} |", flush=True)


if __name__ == "__main__":
    main()
