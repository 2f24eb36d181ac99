"""Finding the files under a scanned folder or matched by a glob, without leaving the scanned
folders through a symbolic link and without looping through one.

A symbolic link met while walking (to a file or to a folder) is followed only when its target,
resolved, lies inside one of the scanned roots (the folders named on the command line, and the
fixed part of each glob: ``runs`` for ``runs/**/*.jsonl``), unless ``follow_links``; a link that
is not followed is reported with its target. Each folder is entered once, by the first path that
reaches it (resolved paths are compared), so a link back up the tree ends the walk there instead of
looping; each file is listed once, by the first path that reaches it. Hidden files and folders
(``.git``, ``.venv``) are skipped, as are Python environments (a folder holding ``pyvenv.cfg``) and
the folders of installed or built code (:data:`CODE_FOLDERS`); a folder that cannot be listed is
reported with the reason.

Recursive globs (``**``) are expanded by the same walk, not by :mod:`glob`, whose ``**`` follows
links into folders with no end (a link to ``..`` gives ``a/l/l/l/...``).
"""

from __future__ import annotations

import fnmatch
import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CODE_FOLDERS", "Walk", "expand_glob", "glob_root", "inside", "walk_files"]

#: Folders of installed or built code, never a run: left out of a folder's walk.
CODE_FOLDERS = frozenset({"__pycache__", "site-packages", "node_modules"})


@dataclass(slots=True)
class Walk:
    """What a walk found: files, links it did not follow, folders it could not list."""

    #: scanned roots, resolved (a link whose target lies under one of them is followed)
    roots: tuple[str, ...]
    follow_links: bool = False
    files: list[Path] = field(default_factory=list)
    #: (link, its resolved target) for each symbolic link not followed
    links_skipped: list[tuple[Path, str]] = field(default_factory=list)
    #: (folder, why) for each folder that could not be listed
    unlistable: list[tuple[Path, str]] = field(default_factory=list)
    _dirs_seen: set[str] = field(default_factory=set)
    _files_seen: set[str] = field(default_factory=set)


def inside(target: str, roots: tuple[str, ...]) -> bool:
    """Whether the resolved path ``target`` is one of ``roots`` or lies under one."""
    return any(target == root or target.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def walk_files(top: Path, walk: Walk) -> None:
    """Add the files under the folder ``top`` (recursively) to ``walk.files``, in sorted order of
    their paths, following the rules of this module. Folders and files reached without a link are
    taken first, so a file is listed by its own path rather than by a link to it."""
    real = os.path.realpath(top)
    if real in walk._dirs_seen:
        return
    walk._dirs_seen.add(real)
    stack = [top]
    found: list[Path] = []
    linked_files: list[Path] = []
    linked_dirs: list[Path] = []
    while stack or linked_dirs:
        if not stack:
            link = linked_dirs.pop(0)
            real = os.path.realpath(link)
            if real not in walk._dirs_seen:
                walk._dirs_seen.add(real)
                stack.append(link)
            continue
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            walk.unlistable.append((folder, e.strerror or type(e).__name__))
            continue
        if folder != top and any(e.name == "pyvenv.cfg" for e in entries):
            continue  # a virtual environment: installed packages, not runs
        subfolders: list[Path] = []
        for entry in entries:
            if entry.name.startswith(".") or entry.name in CODE_FOLDERS:
                continue
            path = Path(entry.path)
            try:
                is_link = entry.is_symlink()
                if is_link:
                    target = os.path.realpath(path)
                    if not walk.follow_links and not inside(target, walk.roots):
                        walk.links_skipped.append((path, target))
                        continue
                is_dir, is_file = entry.is_dir(), entry.is_file()
            except OSError as e:
                walk.unlistable.append((path, e.strerror or type(e).__name__))
                continue
            if is_dir and is_link:
                linked_dirs.append(path)
            elif is_dir:
                real = os.path.realpath(path)
                if real not in walk._dirs_seen:
                    walk._dirs_seen.add(real)
                    subfolders.append(path)
            elif is_file:
                (linked_files if is_link else found).append(path)
        stack.extend(reversed(subfolders))
    kept: list[Path] = []
    for path in sorted(found) + sorted(linked_files):
        real = os.path.realpath(path)
        if real not in walk._files_seen:
            walk._files_seen.add(real)
            kept.append(path)
    walk.files.extend(sorted(kept))


def glob_root(pattern: str) -> Path:
    """The fixed part of a glob pattern: the folder its matches lie under (``.`` when the pattern
    begins with a wildcard)."""
    fixed = _fixed_parts(Path(pattern).parts)
    return Path(*fixed) if fixed else Path(".")


def _fixed_parts(parts: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if glob.has_magic(part):
            break
        out.append(part)
    return out


def _match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Whether the path segments ``parts`` match the glob segments ``pattern`` (``**``: any
    number of segments; others as :func:`fnmatch.fnmatchcase`)."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        rest = pattern[1:]
        while rest and rest[0] == "**":
            rest = rest[1:]
        return any(_match(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and _match(pattern[1:], parts[1:])


def expand_glob(pattern: str, walk: Walk) -> list[Path]:
    """The files matched by ``pattern``, sorted. A pattern without ``**`` is expanded by
    :func:`glob.glob` (its depth is bounded); a match reached through a link out of the pattern's
    fixed folder is then left out as a walk leaves it out. A ``**`` pattern walks the fixed folder
    (:func:`walk_files`) and keeps the files that match."""
    root = glob_root(pattern)
    parts = Path(pattern).parts
    rest = tuple(parts[len(_fixed_parts(parts)):])
    if "**" not in rest:  # only a whole segment recurses, as in glob
        out = []
        # a path without a link in it first, so that a file is listed by its own path
        for q in sorted(glob.glob(pattern), key=lambda q: (os.path.realpath(q) != os.path.abspath(q), q)):
            path = Path(q)
            if not path.is_file():
                continue
            target = os.path.realpath(path)
            if not walk.follow_links and not inside(target, walk.roots):
                walk.links_skipped.append((path, target))
            elif target not in walk._files_seen:
                walk._files_seen.add(target)
                out.append(path)
        return sorted(out)
    sub = Walk(walk.roots, walk.follow_links)
    walk_files(root, sub)
    walk.links_skipped += sub.links_skipped
    walk.unlistable += sub.unlistable
    return [q for q in sub.files if _match(rest, q.relative_to(root).parts)]
