"""Questions about links ("notes linking to the Dutch pea soup recipe"), read by the self-query.

A question that asks which notes link to a note names that note by its file name, path or an alias: the
phrase after "linking to" is looked up in the link table (`needle.core.link_table`) as a link's text would
be, its longest run of words that names a note first, and the notes linking to that note become a filter on
its file id (`meta[FILE_ID]`).
"""

from __future__ import annotations

import re
from pathlib import Path

LINKS_TO = re.compile(
    r"(?<![\w-])(?:(?:which|what|all)\s+(?:notes?|pages?|files?)\s+|(?:notes?|pages?|files?)\s+(?:that\s+)?|what\s+)"
    r"(?:links?|linking|points?|pointing|refers?|referring)\s+(?:back\s+)?to\s+(.+?)\s*[?.!]*$",
    re.IGNORECASE,
)
_FILLER = {"the", "my", "a", "an", "note", "notes", "page", "file"}


def notes_linking_to(phrase: str, records_path: str | None) -> tuple[str, list[str]] | None:
    """
    The note a question's phrase names, and the `collection:path` of every note linking to it.

    :param phrase: The words after "linking to" ("the Dutch pea soup recipe").
    :param records_path: The stat record's SQLite file the link table lives in.
    :returns: `(collection:path of the note, source ids of its backlinks)`, or None when no note is named.
    """
    if not records_path or not Path(records_path).exists():
        return None
    from needle.core.link_table import LinkTable  # read when run: importing the component stays light

    table = LinkTable(records_path)
    resolvers = [(name, table.resolver(name)) for name in table.collections()]
    words = phrase.split()
    for size in range(len(words), 0, -1):
        for start in range(len(words) - size + 1):
            part = words[start : start + size]
            if part[0].lower() in _FILLER or part[-1].lower() in _FILLER:
                continue
            text = " ".join(part).strip(" \"'.,;:!?")
            for collection, resolver in resolvers:
                path = resolver.find(text)
                if path is not None:
                    sources = sorted({f"{collection}:{b.source}" for b in table.backlinks(collection, path, resolver)})
                    return f"{collection}:{path}", sources
    return None


__all__ = ["LINKS_TO", "notes_linking_to"]
