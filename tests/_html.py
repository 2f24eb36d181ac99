"""Reading back a page advcore wrote (``advcore report``, ``advcore compare --out``) with the standard
library's HTML parser, for the tests of both."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any


class Page(HTMLParser):
    """The figures of the page (stage caption, plots, markers, the SVG's line paths and texts), the run
    sections' ids and every external reference."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[dict[str, Any]] = []
        self.sections: list[str] = []
        self.external: list[str] = []
        self._in_text = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "figure":
            self.figures.append({"stage": a.get("data-stage"), "plots": int(a.get("data-plots") or 0),
                                 "markers": int(a.get("data-markers") or 0), "lines": 0, "texts": [],
                                 "section": self.sections[-1] if self.sections else None})
        elif tag == "h2" and a.get("id"):
            self.sections.append(a["id"] or "")
        elif tag == "path" and self.figures and len(re.findall(r"[ML]", a.get("d") or "")) >= 3:
            self.figures[-1]["lines"] += 1
        elif tag == "text":
            self._in_text = True
        for name in ("src", "href"):
            value = a.get(name) or ""
            if value and not value.startswith("#"):
                self.external.append(value)
        if tag in ("link", "iframe", "img"):
            self.external.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "text":
            self._in_text = False

    def handle_data(self, data: str) -> None:
        if self._in_text and self.figures:
            self.figures[-1]["texts"].append(data.strip())


def read_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page
