"""What a reference to a file is: `#docid`, `collection/path`, `collection:path` or a path, `PATH:LINE:COUNT`.

A reference that could only be meant to leave a collection (`..`, absolute, `~`, URL-encoded, NUL or control
characters) is refused here, before any lookup (`check_ref`).
"""

from __future__ import annotations

import functools
import hashlib
import re

from needle.core.collections import CollectionError
from needle.core.globs import printable, valid_utf8
from needle.core.requests import MAX_REF_CHARS

MAX_NAME_BYTES = 255

_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
DOCID = re.compile(r"#([0-9A-Fa-f]+)")
NOT_A_DOCID = re.compile(r"#[^/.:]*")
_LINE_NUMBER = re.compile(r"[0-9]{1,9}")
# `path#page=N[-M]` or `path#section=HEADING`: a part of a PDF, DOCX or HTML file.
FRAGMENT = re.compile(r"(?s)(.+?)#(?:page=([0-9]{1,6})(?:-([0-9]{1,6}))?|section=(.+))")


@functools.lru_cache(maxsize=1 << 16)
def docid(file_id: str) -> str:
    """A short, stable id for a file (`collection:path`), shown as `#abc123` and accepted by `get`."""
    return hashlib.sha1(file_id.encode("utf-8")).hexdigest()[:6]


def parse_ref(ref: str) -> tuple[str, int | None, int | None]:
    """
    Split `PATH[:LINE[:COUNT]]` (as `needle get` takes it) into the reference and the numbers.

    `notes/a.md:12:20` gives `("notes/a.md", 12, 20)`, `#a1b2c3:5` gives `("#a1b2c3", 5, None)`; only trailing
    groups of ASCII digits count, so `notes:a.md` keeps its colon.

    :returns: The reference, the first line (or None) and the line count (or None).
    :raises CollectionError: When a number has more than 9 digits.
    """
    parts = ref.split(":")
    numbers: list[int] = []
    while len(parts) > 1 and parts[-1].isascii() and parts[-1].isdigit() and len(numbers) < 2:
        if not _LINE_NUMBER.fullmatch(parts[-1]):
            raise CollectionError(f"line number {quote(parts[-1])} is too large")
        numbers.insert(0, int(parts.pop()))
    line = numbers[0] if numbers else None
    count = numbers[1] if len(numbers) > 1 else None
    return ":".join(parts), line, count


def quote(text: str, limit: int = 200) -> str:
    """`text` quoted for a message, cut short when long (a hostile reference can be a kilobyte)."""
    shown = repr(printable(text))
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


def check_ref(ref: object, what: str = "a file reference") -> str:
    """Refuse references that could only be meant to leave a collection, before any lookup."""
    if not isinstance(ref, str) or not ref:
        raise CollectionError(f"{what} must be a non-empty string, got {ref!r}"[:300])
    if len(ref) > MAX_REF_CHARS:
        raise CollectionError(f"{what} is at most {MAX_REF_CHARS} characters, got {len(ref)}")
    if _CONTROL.search(ref):
        raise CollectionError(f"{what} must not contain NUL or control characters")
    if not valid_utf8(ref):
        raise CollectionError(f"{what} must be valid UTF-8 text")
    if _PERCENT_ESCAPE.search(ref):
        raise CollectionError(f"{quote(ref)} is URL-encoded; give the plain path, e.g. notes/howto/file.md")
    if ref.startswith(("/", "\\", "~")):
        raise CollectionError(f"{quote(ref)} is absolute; give a path inside a collection, e.g. notes/howto/file.md")
    if ".." in re.split(r"[/\\:]", ref):
        raise CollectionError(f"{quote(ref)} contains '..'; paths must stay inside a collection")
    return ref
