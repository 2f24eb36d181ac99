"""Run every benchmark: ``python bench/run.py [--sizes 1e5,1e6,1e7] [--only NAME] [--repeat K]``.

For each size and each case of every ``bench/bench_*.py`` module, the runner first checks that
advcore's answer agrees with each competitor's (a disagreement is printed and the case is not
timed), then prints the median times and the ratio ``competitor / advcore`` (above 1: advcore is
faster), next to the SPEC section 3 target where there is one. Everything is measured in this one
process. advcore runs single-threaded (``RAYON_NUM_THREADS=1`` unless already set); numpy and
scipy are single-threaded for these operations; Polars keeps its default thread pool, which is
what its users get, so its ratios are conservative for us.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pathlib
import platform
import sys

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402  (the thread settings must come first)

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _harness import Case, median_time  # noqa: E402


TARGET_N = 10_000_000


def _ratio(ratio: float) -> str:
    """``competitor / advcore``; below 0.1 (a floor such as reading the arrays once) as ``1/Kx``."""
    return f"{ratio:.1f}x" if ratio >= 0.1 else f"1/{1 / ratio:.0f}x"


def _modules() -> list[str]:
    # bench_fleet, bench_report and bench_samples_stream are scripts of their own (no ``cases``).
    return sorted(p.stem for p in HERE.glob("bench_*.py") if "\ndef cases(" in p.read_text())


def _repeats(n: int, requested: int | None) -> int:
    if requested:
        return requested
    return 15 if n <= 100_000 else 7 if n <= 1_000_000 else 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1e5,1e6,1e7", help="comma-separated sample counts")
    parser.add_argument("--only", default=None, help="run only cases whose name contains this")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per callable")
    args = parser.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]

    import polars as pl
    import scipy

    import advcore

    print(
        f"advcore {advcore.__version__} | numpy {np.__version__} | scipy {scipy.__version__} | "
        f"polars {pl.__version__} | {platform.processor() or platform.machine()} | "
        f"{os.cpu_count()} cpus | polars threads {pl.thread_pool_size()}"
    )
    failures = 0
    for n in sizes:
        rng = np.random.default_rng(0)
        print(f"\n## N = {n:,} float32 samples\n")
        print("| case | advcore ms | competitor | competitor ms | ratio | target |")
        print("| --- | ---: | --- | ---: | ---: | ---: |")
        for mod_name in _modules():
            module = importlib.import_module(mod_name)
            case: Case
            for case in module.cases(n, rng):
                if args.only and args.only not in case.name:
                    continue
                ours = case.advcore()
                ok = True
                for comp_name, comp in case.competitors.items():
                    try:
                        case.check(ours, comp())
                    except AssertionError as e:
                        print(f"| {case.name} | - | {comp_name} | - | DISAGREES: {e} | |")
                        ok = False
                        failures += 1
                if not ok:
                    continue
                repeat = _repeats(n, args.repeat)
                t_ours = median_time(case.advcore, repeat)
                for comp_name, comp in case.competitors.items():
                    t_comp = median_time(comp, max(3, repeat // 2) if n >= 10**7 else repeat)
                    # SPEC section 3 states its targets at N = 10,000,000.
                    target = case.targets.get(comp_name) if n >= TARGET_N else None
                    target_txt = f">= {target:g}x" if target else ""
                    ratio = t_comp / t_ours
                    mark = "" if target is None else (" ok" if ratio >= target else " MISSED")
                    print(
                        f"| {case.name} | {t_ours * 1e3:.2f} | {comp_name} | {t_comp * 1e3:.2f} "
                        f"| {_ratio(ratio)} | {target_txt}{mark} |",
                        flush=True,
                    )
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
