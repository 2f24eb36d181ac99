"""What this machine allows: the floors under three of issue 17's targets, measured in one process.

``python bench/bench_floors.py``. Prints, with the CPU model:

- streaming bandwidth, one thread against two (numpy ``sum`` and ``copyto`` over 400 MB, far
  beyond any cache, halves on a thread each): the most a memory-bound kernel can gain from a
  second thread here, against the 2-thread target of 1.7x;
- the contiguous grouped moments (1e7 float32, groups of 8): reading the samples once, advcore, and
  the bytes it must move (read the samples, write the four float columns of 1.25e6 groups into
  fresh pages, which the kernel zeroes first) at the streaming rates, against the 2x target;
- the random-order grouped moments (1e7 float32, 1.25e6 groups in shuffled int64 ids): numpy's
  three ``bincount`` calls, advcore, and the bytes any table-free design must move (read the ids and
  values, write and read back an 8-byte (key, value) partition, write the five output columns)
  at the streaming rates just measured, against the 8x target;
- the five-stage trace's floor (five 1e6 float32 arrays read once) against one exact Spearman of
  1e6 pairs on one and on two threads (the trace computes one per adjacent pair of stages).

Times are the minimum of 9 calls (streams) or 5 calls (kernels) after one warm-up.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from _harness import wall_times
from advcore.stats import grouped_moments, spearman


def _best_ms(fn: Callable[[], Any], repeat: int) -> float:
    return min(wall_times(fn, repeat)) * 1e3


def _cpu() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    rng = np.random.default_rng(0)
    pool = ThreadPoolExecutor(2)

    def halves(fn: Callable[..., Any], *arrays: np.ndarray) -> Callable[[], None]:
        h = arrays[0].size // 2
        return lambda: [f.result() for f in [pool.submit(fn, *(a[:h] for a in arrays)), pool.submit(fn, *(a[h:] for a in arrays))]]

    print(f"{_cpu()} | numpy {np.__version__}\n")
    big = rng.random(100_000_000, dtype=np.float32)
    out = np.empty_like(big)
    gb = big.nbytes / 1e9
    read1, read2 = _best_ms(big.sum, 9), _best_ms(halves(np.sum, big), 9)
    copy1, copy2 = _best_ms(lambda: np.copyto(out, big), 9), _best_ms(halves(np.copyto, out, big), 9)
    print("| stream (400 MB float32) | 1 thread ms | 2 threads ms | speed-up |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| read (sum) | {read1:.1f} ({gb / read1 * 1e3:.1f} GB/s) | {read2:.1f} | {read1 / read2:.2f}x |")
    print(f"| copy | {copy1:.1f} ({gb / copy1 * 1e3:.1f} GB/s each way) | {copy2:.1f} | {copy1 / copy2:.2f}x |")
    del big, out

    n, g = 10_000_000, 8
    x = rng.random(n, dtype=np.float32)
    read_ms_per_gb, copy_ms_per_gb = read1 / gb, copy1 / gb
    once = _best_ms(x.sum, 9)
    contiguous = _best_ms(lambda: grouped_moments(x, group_size=g), 9)
    columns = n // g * (8 + 8 + 4 + 4)  # mean, var, min, max
    moved = x.nbytes / 1e9 * read_ms_per_gb + 2 * columns / 1e9 * copy_ms_per_gb
    print(f"\n| contiguous grouped moments, 1e7, groups of {g} | ms | / read-once |")
    print("| --- | ---: | ---: |")
    print(f"| read the samples once (sum) | {once:.2f} | 1x |")
    print(f"| advcore grouped_moments | {contiguous:.2f} | {contiguous / once:.1f}x |")
    print(f"| bytes it moves (samples read, columns zeroed and written), at the stream rates | {moved:.2f} | {moved / once:.1f}x |")
    print(f"| the 2x target | {2 * once:.2f} | 2x |")
    ids = rng.permutation(np.arange(n, dtype=np.int64) // g)

    def bincount() -> None:
        count = np.bincount(ids)
        mean = np.bincount(ids, x) / count
        _ = np.bincount(ids, x * x) / count - mean * mean

    numpy_ms = _best_ms(bincount, 5)
    ours_ms = _best_ms(lambda: grouped_moments(x, group_ids=ids), 5)
    outputs = n // g * (8 + 8 + 8 + 8 + 4 + 4)  # label, count, mean, var, min, max
    floor = (ids.nbytes + x.nbytes) / 1e9 * read_ms_per_gb + n * 8 / 1e9 * (copy_ms_per_gb + read_ms_per_gb)
    floor += outputs / 1e9 * copy_ms_per_gb
    print(f"\n| random-order grouped moments, 1e7, {n // g:,} groups | ms | numpy / it |")
    print("| --- | ---: | ---: |")
    print(f"| numpy, three bincount calls | {numpy_ms:.1f} | 1.0x |")
    print(f"| advcore grouped_moments | {ours_ms:.1f} | {numpy_ms / ours_ms:.1f}x |")
    print(f"| bytes a partitioned design moves, at the stream rates above | {floor:.1f} | {numpy_ms / floor:.1f}x |")
    print(f"| the 8x target | {numpy_ms / 8:.1f} | 8.0x |")

    m = 1_000_000
    stages = [rng.standard_normal(m).astype(np.float32) for _ in range(5)]
    floor_ms = _best_ms(lambda: [s.sum() for s in stages], 9)
    a, b = stages[0], (stages[0] / 2 + stages[1]).astype(np.float32)
    one = _best_ms(lambda: spearman(a, b, threads=1), 5)
    two = _best_ms(lambda: spearman(a, b, threads=2), 5)
    print("\n| five-stage trace, 1e6 float32 per stage | ms | / read-once |")
    print("| --- | ---: | ---: |")
    print(f"| read the five arrays once | {floor_ms:.2f} | 1x |")
    print(f"| the 5x target for the whole trace | {5 * floor_ms:.2f} | 5x |")
    print(f"| one exact Spearman of 1e6 continuous pairs, 1 thread | {one:.2f} | {one / floor_ms:.0f}x |")
    print(f"| the same, 2 threads | {two:.2f} | {two / floor_ms:.0f}x |")


if __name__ == "__main__":
    main()
