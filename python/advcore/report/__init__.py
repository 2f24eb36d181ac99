"""Rendering of scan reports: human (rich), markdown, JSON. Nothing here decides anything."""

from __future__ import annotations

from advcore.report.render import render_human, render_json, render_markdown, render_trace

__all__ = ["render_human", "render_json", "render_markdown", "render_trace"]
