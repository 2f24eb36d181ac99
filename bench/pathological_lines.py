"""Time to read a log holding one pathological line, as the line grows:
``python bench/pathological_lines.py [--sizes 65536,262144,1048576]``.

Each case is a small valid log of its format with one line made of a long run of spaces, digits or
separators where a reader's regular expressions could backtrack. Reading time should grow linearly
with the line (the ratio column near 4 for each 4x step); a quadratic reader shows 16.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from advcore.ingest import load

CASES: dict[str, Callable[[int], str]] = {
    "verl console, spaces after a pair": lambda n: "step:0 - a:1\nstep:1 - a:1 " + " " * n + "x\n",
    "verl console, spaces in a value": lambda n: "step:0 - a:1\nstep:1 - a:1" + " " * n + "b\n",
    "verl console, repeated separators": lambda n: "step:0 - a:1\nstep:1 - " + " - " * (n // 3) + "\n",
    "OpenRLHF, spaces after the brace": lambda n: "Global step 1: {'a': 1}\nGlobal step 2: {" + " " * n + "\n",
    "TRL console, spaces in a dict": lambda n: "{'loss': 0.1}\n{'loss': 0.1, 'reward': " + " " * n + "}\n",
    "CleanRL, spaces after a value": lambda n: "global_step=1, episodic_return=1.0\nglobal_step=2, episodic_return="
                                             + " " * n + "\n",
    "SB3 table, spaces in a cell": lambda n: "| rollout/ |  |\n|    ep_rew_mean | 1 |\n| rollout/ |" + " " * n + "|\n",
    "digits then spaces": lambda n: "step:0 - a:1\n" + "1" * (n // 2) + " " * (n // 2) + "z\n",
    "verl console, many keys on one line": lambda n: "step:1 - a:1\nstep:2 - " + " - ".join(
        f"k{i}:{i}" for i in range(n // 12)) + "\n",
    "printed progress, words without a value": lambda n: "".join(f"Episode {i}, reward: 1\n" for i in range(3))
                                                         + "Episode 3, " + "ab " * (n // 3) + "\n",
    "printed progress, one long word": lambda n: "".join(f"Episode {i}, reward: 1\n" for i in range(3))
                                               + "Episode 3, " + "a" * n + ": x\n",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="65536,262144,1048576")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| case | " + " | ".join(f"{s // 1024} KB ms" for s in sizes) + " | last ratio |")
    print("| --- |" + " ---: |" * (len(sizes) + 1))
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in CASES.items():
            times = []
            for n in sizes:
                path = Path(tmp) / "run.log"
                path.write_text(make(n))
                t0 = time.perf_counter()
                load(path, max_line=1 << 30)  # parse every line: the expressions must be linear
                times.append((time.perf_counter() - t0) * 1e3)
            ratio = times[-1] / times[-2] if len(times) > 1 and times[-2] > 0 else float("nan")
            print(f"| {name} | " + " | ".join(f"{t:.1f}" for t in times) + f" | {ratio:.1f} |")


if __name__ == "__main__":
    main()
