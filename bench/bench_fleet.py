"""The fleet scan at archive scale: ``python bench/bench_fleet.py [--runs 1000 10000] [--engines local dask ray]``.

Generates an archive of runs of 1,000 logged steps each, one folder per run, in four formats in
turn (verl JSONL, TRL ``trainer_state.json``, a Stable-Baselines3 ``progress.csv``, printed progress
lines of a hand-written loop); a third of them lose their reward spread half-way (the SB3 runs log
none, so fewer are found lost). Then scans it with
``advcore.scan_many`` (no cache) on each engine with 1 and 2 workers and prints the runs per second,
the time per run, and the engine's start-up cost measured apart (the same call on a one-run
archive). Each scan runs in a fresh process, so no engine starts warm. Not a test: nothing is
asserted.
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

STEPS = 1000

CHILD = r"""
import json, sys, time
from advcore.fleet import scan_many
root, engine, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = time.perf_counter()
frame = scan_many([root], jobs=jobs, cache=False, engine=engine)
print(json.dumps({"seconds": time.perf_counter() - t, "rows": frame.height,
                  "lost": int((frame["status"] == "lost").sum())}))
"""


def _series(i: int) -> tuple[list[float], list[float]]:
    """Run ``i``'s reward mean and spread per step: rising; the spread gone from half-way for a third."""
    dies = i % 3 == 0
    means = [0.2 + 0.5 * s / STEPS + 0.01 * ((s * 7 + i) % 5) for s in range(STEPS)]
    spreads = [0.0 if dies and s >= STEPS // 2 else 0.4 + 0.02 * ((s + i) % 3) for s in range(STEPS)]
    return means, spreads


def write_run(folder: Path, i: int) -> None:
    """Run ``i`` in the format of its turn."""
    folder.mkdir(parents=True, exist_ok=True)
    means, spreads = _series(i)
    kind = i % 4
    if kind == 0:
        rows = [{"step": s + 1, "data": {"critic/score/mean": m, "critic/score/max": m + d / 2,
                                         "critic/score/min": m - d / 2}} for s, (m, d) in enumerate(zip(means, spreads))]
        (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif kind == 1:
        history = [{"step": s + 1, "reward": m, "reward_std": d / 2, "loss": 0.01, "kl": 0.001 * s}
                   for s, (m, d) in enumerate(zip(means, spreads))]
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": STEPS, "log_history": history}))
    elif kind == 2:
        lines = ["time/total_timesteps,rollout/ep_rew_mean,train/entropy_loss,train/approx_kl"]
        lines += [f"{2048 * (s + 1)},{100 * m:.4f},{-1.0 + 0.0002 * s:.5f},{0.01 + 0.001 * d:.5f}"
                  for s, (m, d) in enumerate(zip(means, spreads))]
        (folder / "progress.csv").write_text("\n".join(lines) + "\n")
    else:
        lines = [f"Episode {s + 1}, Avg reward: {m:.4f}, Reward std: {d / 2:.4f}" for s, (m, d) in enumerate(zip(means, spreads))]
        (folder / "train.log").write_text("\n".join(lines) + "\n")


def write_archive(root: Path, runs: int) -> Path:
    for i in range(runs):
        write_run(root / f"{i // 100:04d}" / f"run{i:05d}", i)
    return root


def timed(root: Path, engine: str, jobs: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(root), engine, str(jobs)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--engines", nargs="+", default=["local", "dask", "ray"])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    print(f"{cpu}, {os.cpu_count()} CPUs; {STEPS} steps per run, 4 formats in turn")
    with tempfile.TemporaryDirectory() as tmp:
        one = write_archive(Path(tmp) / "one", 1)
        print(f"{'runs':>6} {'engine':>6} {'jobs':>4} {'start-up s':>10} {'scan s':>8} {'runs/s':>7} {'ms/run':>7} lost")
        for runs in args.runs:
            root = write_archive(Path(tmp) / f"a{runs}", runs)
            for engine in args.engines:
                for jobs in args.jobs:
                    start = timed(one, engine, jobs)["seconds"]
                    got = timed(root, engine, jobs)
                    per_run = (got["seconds"] - start) / runs
                    print(f"{runs:>6} {engine:>6} {jobs:>4} {start:>10.2f} {got['seconds']:>8.1f} "
                          f"{runs / got['seconds']:>7.1f} {1000 * per_run:>7.1f} {got['lost']}/{got['rows']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
