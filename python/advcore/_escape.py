"""Text from a log (its file name, its lines) made safe to print: control characters shown, not
obeyed, and quotations kept short.

A log or its name can hold terminal escape sequences (``ESC ] 0; title BEL`` retitles a terminal,
``ESC [2J`` clears it) and characters that reorder or hide text (bidirectional overrides,
zero-width marks). Every human and markdown report passes what it did not write itself through
:func:`printable`; a reader that quotes a line in an error quotes :func:`excerpt` of it.
"""

from __future__ import annotations

import re

__all__ = ["described", "excerpt", "printable"]

#: C0 controls, DEL and C1 controls; bidirectional embeddings, overrides and isolates; zero-width
#: and other invisible format characters; line and paragraph separators.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]")


def _shown(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str) -> str:
    """``text`` with every control or invisible format character replaced by its escape (ESC by
    ``\\x1b``, a newline by ``\\x0a``, U+202E by ``\\u202e``); other characters, non-ASCII letters
    included, are kept. A backslash is kept as is: the result is for reading, not for parsing back."""
    return _UNSAFE.sub(_shown, text)


def excerpt(text: str, limit: int = 60) -> str:
    """A quotation of ``text`` for an error message: at most ``limit`` characters of it (then
    ``...``), in quotes, with control characters escaped as :func:`repr` escapes them."""
    cut = text[:limit]
    return repr(cut) + ("..." if len(text) > limit else "")


def described(error: BaseException, limit: int = 160) -> str:
    """``TypeName: message`` of an exception for an error report, its message cut to ``limit``
    characters and made :func:`printable` (an exception raised on a line of a log can carry the
    whole line)."""
    text = str(error)
    return f"{type(error).__name__}: {printable(text[:limit])}{'...' if len(text) > limit else ''}"
