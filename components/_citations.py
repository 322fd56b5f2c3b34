"""Line-anchored citations (`[path:start-end]`) in a generated answer: reading them and matching them to chunks.

Shared by `CitationExtractor`, which maps an answer's citations to the chunks it was given, and `ClaimCoverage`,
which checks each claim against the chunks its citations select.
"""

import re

from haystack import Document

# A bracketed group of one or more citations: "[a.md:3-9]", "[a.md:3-9; b.md:12]".
_BRACKETS = re.compile(r"\[([^\[\]\n]+)\]")
# One citation inside a group: "path:start-end" or "path:line"; the dash may be an en dash.
_CITATION = re.compile(r"^\s*(?P<path>[^\s:][^:]*?)\s*:\s*(?P<start>\d+)(?:\s*[-–]\s*(?P<end>\d+))?\s*$")
_SEPARATORS = re.compile(r"\s*;\s*|,\s+")


def parse_citations(text: str) -> list[tuple[str, int, int]]:
    """
    Read `[path:start-end]` citations from an answer, in order of appearance, repeats dropped.

    A bracket may hold several citations separated by `;` or `, `; `[path:line]` cites one line; a
    reversed range is read the right way round. Brackets holding anything else (`[1]`, a markdown link's
    text) are ignored.

    :param text: The answer.
    :returns: `(path, start_line, end_line)` triples.
    """
    found: list[tuple[str, int, int]] = []
    for group in _BRACKETS.findall(text or ""):
        for part in _SEPARATORS.split(group):
            match = _CITATION.match(part)
            if not match:
                continue
            start = int(match.group("start"))
            end = int(match.group("end") or start)
            citation = (match.group("path").strip(), min(start, end), max(start, end))
            if citation not in found:
                found.append(citation)
    return found


def selects(citation: tuple[str, int, int], doc: Document, line_slack: int = 0) -> bool:
    """
    Whether a citation `(path, start, end)` selects a chunk: the same file (`path`, or `collection/path`)
    and overlapping lines, the chunk widened by `line_slack` lines on both sides.
    """
    path, start, end = citation
    meta = doc.meta
    names = {meta.get("path"), f"{meta.get('collection', '')}/{meta.get('path', '')}"}
    if path not in names:
        return False
    if "start_line" not in meta or "end_line" not in meta:
        return True
    return start <= int(meta["end_line"]) + line_slack and end >= int(meta["start_line"]) - line_slack


__all__ = ["parse_citations", "selects"]
