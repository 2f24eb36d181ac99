"""Copy the fetched runs of ``tests/real/corpus.toml`` out of local clones into ``$ADVCORE_REAL_DATA``.

    python tests/real/extract.py --clones DIR [--out DIR]

``DIR`` holds one git clone (bare or not) per repository, named ``owner+name`` or ``owner/name``
(optionally with the git directory one or two levels down, e.g. ``owner+name/repo`` or
``owner+name/repo/.git``). Each file is read with
``git show COMMIT:PATH``, its sha256 checked against the manifest, and written to
``OUT/<run name>/<file's base name>``. Repositories that are missing, and files whose hash
differs, are listed; the others are extracted. Exit code 1 when anything was not extracted.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.real.corpus import CORPUS, MANIFEST, load_manifest  # noqa: E402


def git_dir(clones: Path, repository: str) -> Path | None:
    """The git directory of ``repository`` under ``clones``, or None."""
    owner, name = repository.split("/", 1)
    for base in (clones / f"{owner}+{name}", clones / owner / name, clones / name):
        for candidate in (base, base / ".git", *sorted(base.glob("*")), *sorted(base.glob("*/.git"))):
            if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
                return candidate
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clones", type=Path, required=True, help="folder of local clones (owner+name/)")
    parser.add_argument("--out", type=Path, default=CORPUS, help=f"where runs go (default {CORPUS})")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="the manifest (default tests/real/corpus.toml)")
    args = parser.parse_args(argv)
    problems: list[str] = []
    done = 0
    for run in load_manifest(args.manifest):
        if run.location != "fetched":
            continue
        gd = git_dir(args.clones, run.repository)
        if gd is None:
            problems.append(f"{run.name}: no clone of {run.repository} under {args.clones}")
            continue
        folder = args.out / run.name
        folder.mkdir(parents=True, exist_ok=True)
        for path, sha in run.files:
            shown = subprocess.run(["git", f"--git-dir={gd}", "show", f"{run.commit}:{path}"], capture_output=True,
                                   check=False)
            if shown.returncode != 0:
                problems.append(f"{run.name}: {run.repository}@{run.commit}:{path}: "
                                f"{shown.stderr.decode(errors='replace').strip()}")
                continue
            got = hashlib.sha256(shown.stdout).hexdigest()
            if got != sha:
                problems.append(f"{run.name}: {path}: sha256 {got}, manifest says {sha}")
                continue
            (folder / Path(path).name).write_bytes(shown.stdout)
            done += 1
    print(f"extracted {done} files into {args.out}")
    for p in problems:
        print(f"not extracted: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
