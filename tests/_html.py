"""Reading back a page advcore wrote (``advcore report``, ``advcore compare --out``) with the standard
library's HTML parser, for the tests of both."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any


class Page(HTMLParser):
    """The figures of the page (stage caption, plots, markers, the SVG's line paths, texts and the detector
    IDs they name), the run
    sections' ids and every external reference. A section's figures held as text in its inert
    ``<script type="text/html">`` (drawn by the page's script as the section comes into view) are read
    as the browser's script would insert them, marked ``held``."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[dict[str, Any]] = []
        self.sections: list[str] = []
        self.external: list[str] = []
        #: sections whose figures were held as text, not yet drawn
        self.held = 0
        #: this parser reads a section's held text
        self.inside_held = False
        self._in_text = False
        self._held: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script" and a.get("type") == "text/html":
            self._held = []
            self.held += 1
        elif tag == "figure":
            self.figures.append({"stage": a.get("data-stage"), "plots": int(a.get("data-plots") or 0),
                                 "markers": int(a.get("data-markers") or 0), "lines": 0, "texts": [], "ids": set(),
                                 "section": self.sections[-1] if self.sections else None,
                                 "held": self.inside_held})
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
        elif tag == "script" and self._held is not None:
            inner = Page()  # the same lists: the figures join the section they follow
            inner.figures, inner.sections, inner.external = self.figures, self.sections, self.external
            inner.inside_held = True
            inner.feed("".join(self._held).replace("<\\/script", "</script"))
            inner.close()
            self._held = None

    def handle_data(self, data: str) -> None:
        if self._held is not None:
            self._held.append(data)
            return
        if self._in_text and self.figures:
            self.figures[-1]["texts"].append(data.strip())
            # the detector IDs a text names: findings that started together share one label ("A, B")
            self.figures[-1]["ids"].update(re.findall(r"\b[A-Z][A-Z_]{3,}\b", data))


def read_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page
