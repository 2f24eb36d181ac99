"""Per-sample data larger than memory: ``python bench/bench_samples_stream.py [--rows 2e8]``.

Writes a canonical long-format Parquet file (``step, group, reward, adv``; 16,384 samples per step in
groups of 16, binary rewards; row groups of 1M rows, in step order as a trainer writes them) to a
temporary folder (``--parts K``: a folder of K part files, each holding every step's share of the
groups, as K writers would), then reduces it in a fresh process with advcore (``samples.read``: batches of
whole steps, the core's stage trace per step) and, for scale, with a plain Polars group-by of the
per-step mean and std (streaming engine). Prints each one's peak resident memory (``VmHWM`` of
the process) and rows per second. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

SAMPLES_PER_STEP = 1 << 14
GROUP = 16

CHILD = r"""
import json, sys, time
import polars as pl
path, how = sys.argv[1], sys.argv[2]
t = time.perf_counter()
if how == "advcore":
    from advcore.ingest.formats import samples
    raw = samples.read(__import__("pathlib").Path(path))
    steps = raw.frame.height
else:
    out = (pl.scan_parquet(path + "/*.parquet" if __import__("os").path.isdir(path) else path).group_by("step").agg(pl.col("reward").mean().alias("mean"),
           pl.col("reward").std().alias("std"), pl.col("adv").std().alias("adv_std")).collect(engine="streaming"))
    steps = out.height
dt = time.perf_counter() - t
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across exec
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"seconds": dt, "steps": steps, "peak_mb": hwm / 1024}))
"""


def write(path: Path, rows: int, parts: int = 1) -> None:
    """The file, generated and written by Polars' streaming engine (never whole in memory): a group's
    success probability and each sample's draw come from hashes of their indices."""
    i = pl.col("i")
    uniform = lambda e, seed: (e.hash(seed) % 1_000_003).cast(pl.Float64) / 1_000_003  # noqa: E731
    p = uniform(i // GROUP, 1)
    reward = (uniform(i, 2) < p).cast(pl.Float32)
    table = (pl.LazyFrame().select(pl.int_range(0, rows, dtype=pl.Int64).alias("i"))
             .select((i // SAMPLES_PER_STEP).alias("step"), (i // GROUP).alias("group"), reward.alias("reward"),
                     (reward - p.cast(pl.Float32) + 0.01 * (uniform(i, 3).cast(pl.Float32) - 0.5)).alias("adv")))
    if parts == 1:
        table.sink_parquet(path, row_group_size=1 << 20)
        return
    # one part per writer (a rank), each holding every step's share of the groups
    path.mkdir()
    for k in range(parts):
        table.filter(pl.col("group") % parts == k).sink_parquet(path / f"part-{k}.parquet", row_group_size=1 << 20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=float, default=2e7, help="samples in the file (default 2e7)")
    parser.add_argument("--parts", type=int, default=1, help="write a folder of this many part files, each "
                        "holding a share of every step's groups (default 1: one file)")
    args = parser.parse_args()
    rows = int(args.rows) // SAMPLES_PER_STEP * SAMPLES_PER_STEP
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("samples" if args.parts > 1 else "samples.parquet")
        t = time.perf_counter()
        write(path, rows, args.parts)
        size = sum(f.stat().st_size for f in path.iterdir()) if path.is_dir() else path.stat().st_size
        print(f"{platform.processor() or platform.machine()} | {os.cpu_count()} cpus | {rows:,} rows, "
              f"{rows // SAMPLES_PER_STEP:,} steps, {size / 2**30:.2f} GiB of Parquet (written in {time.perf_counter() - t:.0f} s)")
        for how in ("advcore", "polars"):
            out = subprocess.run([sys.executable, "-c", CHILD, str(path), how], capture_output=True, text=True,
                                 check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{how:8s} {r['seconds']:8.1f} s  {rows / r['seconds'] / 1e6:6.2f} M rows/s  peak {r['peak_mb']:7.0f} MB"
                  f"  ({r['steps']} steps)")


if __name__ == "__main__":
    main()
