"""The README's Python example runs as written, and what it claims about the demo holds."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from advcore.errors import AdvcoreWarning

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README.md has no python example"
    for block in blocks:
        with warnings.catch_warnings():
            # Tied groups in the generated batch make some per-group statistics undefined.
            warnings.simplefilter("ignore", AdvcoreWarning)
            exec(compile(block, str(README), "exec"), {})
