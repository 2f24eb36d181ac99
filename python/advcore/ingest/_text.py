"""The one place where a log file's bytes become text: format detection decodes the head of a file
here, and every reader that opens a file itself decodes it here, the same way.

The encoding is taken from a byte-order mark (UTF-8, UTF-16 and UTF-32, little or big endian;
the mark is not part of the text); without one, UTF-16 or UTF-32 is recognised by where its zero
bytes fall (a log is mostly ASCII: ``a\\0\\0\\0`` is UTF-32-LE, ``\\0a`` UTF-16-BE), and only when the
first 4 KiB then decode without error; anything else is read as UTF-8. Bytes that do not decode
become U+FFFD (a broken character costs that character, not the file).

A NUL byte does not by itself make a file binary (a log written while its machine crashed can
hold a run of NULs): the head is binary only when it is a known binary container (Parquet,
SQLite, gzip, zip) or when, without its NUL bytes, it is not UTF-8 text: more than 1 % of its
characters are bytes UTF-8 forbids or control characters other than whitespace, backspace and ESC
(a flipped byte or a Latin-1 letter in a log does not make it binary).
NUL characters stay in the text, so line numbers are those of the file.

Console readers read a line only up to :func:`max_line` characters (:data:`MAX_LINE` unless
``advcore scan --max-line-length`` or ``load(max_line=)`` says otherwise); a longer line is an
:class:`advcore.model.IngestError` naming its number and length (:func:`readable_lines`) and is not
parsed: no trainer prints one, and a pathological line costs itself, not the run.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TextIO

from advcore.model import IngestError

__all__ = ["MAX_LINE", "decode", "decode_head", "encoding_of", "line_limit", "max_line", "open_text", "readable_lines",
           "read_head", "read_text"]

#: Console lines longer than this many characters are reported, not parsed (a verl step line of
#: 300 metrics is about 20 KB).
MAX_LINE = 256 * 1024
_MAX_LINE: ContextVar[int] = ContextVar("advcore_max_line", default=MAX_LINE)


def max_line() -> int:
    """The longest console line (characters) the readers parse now."""
    return _MAX_LINE.get()


@contextmanager
def line_limit(chars: int | None) -> Iterator[None]:
    """Within the block, console readers parse lines of up to ``chars`` characters (None: :data:`MAX_LINE`)."""
    token = _MAX_LINE.set(MAX_LINE if chars is None else chars)
    try:
        yield
    finally:
        _MAX_LINE.reset(token)


def readable_lines(numbered: Iterable[tuple[int, str]], path: Path | str,
                   errors: list[IngestError]) -> Iterator[tuple[int, str]]:
    """The ``(line number, line)`` pairs of ``numbered`` no longer than :func:`max_line` characters
    (a line's own end, ``\\n`` or ``\\r\\n``, not counted); each longer one is an error appended to
    ``errors``, naming ``path``, the line and its length."""
    limit = max_line()
    for n, line in numbered:
        length = len(line.rstrip("\r\n"))
        if length > limit:
            errors.append(IngestError(str(path), f"a line of {length:,} characters, longer than the {limit:,} advcore "
                                                 "parses (advcore scan --max-line-length raises it): not read", n))
        else:
            yield n, line

#: Bytes looked at to choose an encoding.
SNIFF_BYTES = 4096

# UTF-32-LE's mark begins with UTF-16-LE's: test it first.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

#: Encodings recognised without a mark: (codec, code unit size, offset of the ASCII byte in a unit).
_UNITS = (("utf-32-le", 4, 0), ("utf-32-be", 4, 3), ("utf-16-le", 2, 0), ("utf-16-be", 2, 1))

#: The first bytes of a Parquet file, of an SQLite 3 database, and of a W&B record file (``:W&B``,
#: 0xBEE1, version 0).
PARQUET_MAGIC = b"PAR1"
SQLITE_MAGIC = b"SQLite format 3\0"
WANDB_RECORDS_MAGIC = b":W&B\xe1\xbe\x00"
_BINARY_MAGIC = (PARQUET_MAGIC, SQLITE_MAGIC, WANDB_RECORDS_MAGIC, b"\x1f\x8b", b"PK\x03\x04")


def starts_with(path: Path, magic: bytes) -> bool:
    """Whether the file ``path`` begins with ``magic`` (False when it cannot be read)."""
    try:
        with path.open("rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False

#: Control characters that text logs do hold (whitespace, backspace of progress bars, ESC of colours).
_TEXT_CONTROLS = frozenset("\t\n\r\x0b\x0c\x08\x1b")


def _decodes(data: bytes, encoding: str) -> bool:
    """Whether ``data`` decodes without error (a character cut at the end is not an error)."""
    try:
        codecs.getincrementaldecoder(encoding)("strict").decode(data, final=False)
    except UnicodeDecodeError:
        return False
    return True


def encoding_of(prefix: bytes) -> str:
    """The codec name to decode a file that begins with ``prefix`` (its first 4 KiB suffice).

    Returns ``utf-32``, ``utf-8-sig`` or ``utf-16`` for a file with a byte-order mark (these codecs
    drop the mark), ``utf-32-le``/``-be`` or ``utf-16-le``/``-be`` for one without a mark whose
    zero bytes fall where they fall in ASCII text in that encoding (at least half of the code units
    of the first 4 KiB) and whose first 4 KiB decode strictly, else ``utf-8``.
    """
    for bom, name in _BOMS:
        if prefix.startswith(bom):
            return name
    sample = prefix[:SNIFF_BYTES]
    if b"\0" not in sample:  # ASCII in UTF-16 or UTF-32 has zero bytes
        return "utf-8"
    for name, size, at in _UNITS:
        n = len(sample) // size
        if n == 0:
            continue
        zero = bytes(size - 1)
        hits = sum(1 for i in range(0, n * size, size)
                   if sample[i + at] != 0 and sample[i:i + at] + sample[i + at + 1:i + size] == zero)
        if 2 * hits >= n and _decodes(sample[:n * size], name):
            return name
    return "utf-8"


def decode(data: bytes, encoding: str | None = None) -> str:
    """``data`` (a whole file) as text in ``encoding`` (default: :func:`encoding_of` its start);
    bytes that do not decode become U+FFFD."""
    return data.decode(encoding or encoding_of(data[:SNIFF_BYTES]), errors="replace")


def _is_text(data: bytes) -> bool:
    if data.startswith(_BINARY_MAGIC):
        return False
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(data.replace(b"\0", b""), final=False)
    odd = sum(1 for c in text if (c < " " and c not in _TEXT_CONTROLS) or c == "\ufffd")
    return bool(text) and odd * 100 <= len(text)


def decode_head(data: bytes) -> str | None:
    """The first bytes of a file (format detection reads 64 KiB) as text, or None for binary
    content (see the module's docstring for when a head holding NUL bytes is text). A character
    cut at the end of ``data`` is dropped, not replaced."""
    encoding = encoding_of(data[:SNIFF_BYTES])
    if encoding == "utf-8" and b"\0" in data[:SNIFF_BYTES] and not _is_text(data):
        return None
    return codecs.getincrementaldecoder(encoding)("replace").decode(data, final=False)


def read_head(path: Path, size: int) -> bytes:
    """The first bytes of ``path`` that hold its first ``size`` characters of ASCII text: ``size``
    bytes, twice as many in UTF-16 and four times as many in UTF-32 (so that format detection sees
    as much of a log whatever its encoding)."""
    with path.open("rb") as f:
        data = f.read(size)
        width = {"utf-16": 2, "utf-32": 4}.get(encoding_of(data[:SNIFF_BYTES])[:6], 1)
        if width > 1:
            data += f.read(size * (width - 1))
    return data


def read_text(path: Path) -> str:
    """The whole file at ``path`` as text (line endings as written), decoded as :func:`decode`."""
    return decode(path.read_bytes())


def open_text(path: Path) -> TextIO:
    """``path`` opened for reading text line by line (universal newlines), in the encoding of
    :func:`encoding_of` its first 4 KiB; bytes that do not decode become U+FFFD."""
    with path.open("rb") as f:
        prefix = f.read(SNIFF_BYTES)
    return path.open(encoding=encoding_of(prefix), errors="replace", newline=None)
