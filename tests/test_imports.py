"""The import structure: the run model on the ground floor, detectors that read no log format, and no
import circle among advcore's modules (checked on their source: every ``import`` and ``from ...
import`` of an advcore module, at any depth, counts)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "advcore"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The advcore modules ``path`` imports (the package itself aside: every submodule loads it)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("advcore"):
            found.update(f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                         for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("advcore"))
    return {m for m in found if m in modules and m != "advcore"}


def test_no_import_circle() -> None:
    modules = _modules()
    graph = {m: _imports(p, modules) - {m} for m, p in modules.items()}
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            assert state.get(d) != 1, "import circle: " + " -> ".join([*path[path.index(d):], d])
            if d not in state:
                visit(d, [*path, d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def test_detectors_and_the_run_model_read_no_log_format() -> None:
    code = ("import sys, advcore.detectors, advcore.model\n"
            "print(sorted(m for m in sys.modules if m.startswith('advcore.ingest')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert _imports(PACKAGE / "model.py", _modules()) == set()  # the ground floor imports no advcore module


def test_scan_many_is_listed_but_loaded_on_first_use() -> None:
    # dir(advcore) names it (a newcomer looked there); importing advcore still reads no log format
    code = ("import sys, advcore\n"
            "print('scan_many' in dir(advcore), any(m.startswith('advcore.ingest') for m in sys.modules))\n"
            "advcore.scan_many\n"
            "print(any(m.startswith('advcore.ingest') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False", "True"]
