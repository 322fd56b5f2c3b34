"""Links between notes: how they are written, what they show, which note each one points to.

Notes link with wikilinks (`[[Note]]`, `[[Note|shown text]]`, `[[Note#Heading]]`, `[[Note#^block]]`, embeds
`![[Note]]`) and relative markdown links (`[text](../other.md)`). `find_links` reads them out of a note's text,
line by line (fenced code is not read), `as_display_text` rewrites them to what a reader sees (so that BM25
and the embeddings read `Jakob`, not `[[Jakob Hoffmann|Jakob]]`), and `resolve` finds the note a link points
to among a collection's notes:

1. a wikilink's text that is a note's path (case-insensitive, `.md` optional);
2. otherwise, of the notes with that file name whose path ends with the link's text, the one with the
   shortest path;
3. otherwise a note whose frontmatter `aliases` holds the text;
4. otherwise nothing: the link is kept as unresolved.

A markdown link's destination is relative to the linking note's folder (`%20` or `<...>` for spaces, `.md`
optional); a URL is not a note link. Obsidian itself prefers a candidate in the linking note's own folder
before the shortest path, and never resolves a link through an alias; Needle resolves aliases because people
write `[[Dutch pea soup]]` for the note `Snert` that carries that alias.

Links are resolved when they are read, against the notes indexed at that moment: renaming, moving or
deleting a note changes what other notes' links resolve to without reading those notes again.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

# `![[target#fragment|display]]`: no brackets or line breaks inside; `\|` is the pipe escaped in a table.
_WIKI = re.compile(r"(!?)\[\[([^\[\]\n|]*?)(?:\\?\|([^\[\]\n]*))?\]\]")
# `[text](dest "title")` or `[text](<dest with spaces>)`; images (`![..](..)`) are not note links.
_MARKDOWN = re.compile(r"(!?)\[([^\[\]\n]*)\]\((<[^<>\n]+>|[^()\s]+)(?:\s+\"[^\"\n]*\")?\)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# Destinations of a markdown link that may be an indexed file; others (images, archives) are not followed.
_NOTE_SUFFIXES = (".md", ".markdown", ".txt", ".pdf", ".docx", ".html", ".htm")
_BLOCK_ID = re.compile(r"\s\^[A-Za-z0-9-]+\s*$")


@dataclass(frozen=True)
class Link:
    """One link as written in a note: where it is, what it points to and what a reader sees."""

    line: int
    """The 1-based line of the linking note (its frontmatter counted)."""
    raw: str
    """The link exactly as written."""
    target: str
    """The note part of the target as written (`""` for a heading of the same note); markdown links decoded."""
    heading: str | None
    """The heading after `#`, if any."""
    block: str | None
    """The block id after `#^`, if any."""
    embed: bool
    """`![[...]]`: the target's content is shown in place."""
    display: str | None
    """The text a reader sees; None for an embed (which shows the target instead)."""
    kind: str
    """`wiki` or `markdown`."""

    def as_dict(self) -> dict[str, Any]:
        """The link as a JSON-friendly dict."""
        return {
            "line": self.line,
            "raw": self.raw,
            "target": self.target,
            "heading": self.heading,
            "block": self.block,
            "embed": self.embed,
            "display": self.display,
            "kind": self.kind,
        }


def find_links(text: str) -> list[Link]:
    """
    The links of a note, in order, outside fenced code and inline code spans.

    :param text: The note's whole text (frontmatter included: a property may hold a link).
    :returns: Its wikilinks and relative markdown links (URLs left out).
    """
    links: list[Link] = []
    fence = ""
    for number, line in enumerate(text.splitlines(), start=1):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            continue
        if "[" not in line:
            continue
        visible = _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        found = [(m.start(), _wiki_link(m, number)) for m in _WIKI.finditer(visible)]
        taken = [(m.start(), m.end()) for m in _WIKI.finditer(visible)]
        for match in _MARKDOWN.finditer(visible):
            if any(start <= match.start() < end for start, end in taken):
                continue
            link = _markdown_link(match, number)
            if link is not None:
                found.append((match.start(), link))
        links.extend(link for _, link in sorted(found, key=lambda pair: pair[0]))
    return links


def _split_fragment(target: str) -> tuple[str, str | None, str | None]:
    """`Note#Heading` → (`Note`, `Heading`, None); `Note#^id` → (`Note`, None, `id`)."""
    note, _, fragment = target.partition("#")
    fragment = fragment.strip()
    if not fragment:
        return note.strip(), None, None
    if fragment.startswith("^"):
        return note.strip(), None, fragment[1:]
    return note.strip(), fragment, None


def _wiki_link(match: re.Match[str], number: int) -> Link:
    embed, written, shown = match.group(1) == "!", match.group(2).rstrip("\\"), match.group(3)
    note, heading, block = _split_fragment(written)
    if embed:
        display = None
    elif shown is not None and shown.strip():
        display = shown.strip()
    elif not note and heading:
        display = heading
    else:
        display = " > ".join(part.strip() for part in written.split("#") if part.strip())
    return Link(number, match.group(0), note, heading, block, embed, display, "wiki")


def _markdown_link(match: re.Match[str], number: int) -> Link | None:
    image, shown, dest = match.group(1) == "!", match.group(2), match.group(3)
    dest = dest[1:-1] if dest.startswith("<") else dest
    if _SCHEME.match(dest) or dest.startswith("//"):
        return None
    note, heading, block = _split_fragment(unquote(dest))
    suffix = posixpath.splitext(note)[1].lower()
    if image or (suffix and suffix not in _NOTE_SUFFIXES):
        return None
    return Link(number, match.group(0), note, heading, block, False, shown.strip(), "markdown")


def as_display_text(text: str) -> str:
    """
    The text with each link written as what a reader sees, line for line (no line is added or removed).

    `[[Jakob Hoffmann|Jakob]]` reads `Jakob`, `[[Waypoint#Status]]` reads `Waypoint > Status`, an embed
    `![[Inbox]]` reads `Inbox`, `[the lab](<../Places/Fotolab Noord.md>)` reads `the lab`, and a block id
    closing a line (` ^soak`) is dropped. Fenced code and inline code are left as they are.
    """
    if "[" not in text and "^" not in text:
        return text
    out: list[str] = []
    fence = ""
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            out.append(line)
            continue
        if opened:
            fence = opened.group(1)
            out.append(line)
            continue
        out.append(_line_as_display_text(line))
    return "\n".join(out)


def _line_as_display_text(line: str) -> str:
    if "`" in line:  # keep code spans as written: rewrite only the text between them
        pieces, last = [], 0
        for match in _INLINE_CODE.finditer(line):
            pieces.append(_line_as_display_text(line[last : match.start()]))
            pieces.append(match.group(0))
            last = match.end()
        if last:
            pieces.append(_line_as_display_text(line[last:]))
            return "".join(pieces)
    if "[" in line:
        line = _WIKI.sub(_wiki_display, line)
        line = _MARKDOWN.sub(_markdown_display, line)
    return _BLOCK_ID.sub("", line) if "^" in line else line


def _wiki_display(match: re.Match[str]) -> str:
    link = _wiki_link(match, 0)
    if link.display is not None:
        return link.display
    return " > ".join(part.strip() for part in match.group(2).split("#") if part.strip())


def _markdown_display(match: re.Match[str]) -> str:
    link = _markdown_link(match, 0)
    return match.group(0) if link is None or link.display is None else link.display


@dataclass(frozen=True)
class Note:
    """A note links may point to: its path in its collection and the aliases of its frontmatter."""

    path: str
    aliases: tuple[str, ...] = ()


def stem_of(path: str) -> str:
    """The path without a `.md`/`.markdown` suffix, case-folded: what a wikilink's text is compared with."""
    lowered = path.casefold()
    for suffix in (".md", ".markdown"):
        if lowered.endswith(suffix):
            return lowered[: -len(suffix)]
    return lowered


class Resolver:
    """
    Finds the note each link of a collection points to (the rules of this module's docstring).

    Usage example:
    ```python
    resolver = Resolver([Note("Recipes/Snert.md", ("Dutch pea soup",)), Note("Home.md")])
    resolver.resolve(find_links("[[dutch pea soup]]")[0], source="Home.md")  # "Recipes/Snert.md"
    ```
    """

    def __init__(self, notes: Iterable[Note]) -> None:
        """:param notes: The collection's notes."""
        self.notes = list(notes)
        self._exact: dict[str, str] = {}
        self._by_name: dict[str, list[str]] = {}
        self._aliases: dict[str, list[str]] = {}
        for note in self.notes:
            for key in {note.path.casefold(), stem_of(note.path)}:
                self._exact.setdefault(key, note.path)
            self._by_name.setdefault(posixpath.basename(stem_of(note.path)), []).append(note.path)
            for alias in note.aliases:
                self._aliases.setdefault(alias.strip().casefold(), []).append(note.path)

    def resolve(self, link: Link, source: str) -> str | None:
        """
        The path of the note `link` points to, or None when none does.

        :param link: A link of the note at `source`.
        :param source: The linking note's path in the same collection.
        """
        if not link.target:
            return source
        if link.kind == "markdown":
            return self._relative(link.target, source)
        return self.find(link.target)

    def find(self, text: str) -> str | None:
        """The note a wikilink's text (or a name typed by a user) names: exact path, shortest name match, alias."""
        wanted = text.strip().strip("/").casefold()
        if not wanted:
            return None
        exact = self._exact.get(wanted) or self._exact.get(stem_of(wanted))
        if exact is not None:
            return exact
        stem = stem_of(wanted)
        candidates = [
            path
            for path in self._by_name.get(posixpath.basename(stem), [])
            if ("/" + stem_of(path)).endswith("/" + stem)
        ]
        if candidates:
            return min(candidates, key=lambda path: (len(path), path))
        aliased = self._aliases.get(wanted)
        return min(aliased, key=lambda path: (len(path), path)) if aliased else None

    def _relative(self, dest: str, source: str) -> str | None:
        joined = dest.lstrip("/") if dest.startswith("/") else posixpath.join(posixpath.dirname(source), dest)
        normal = posixpath.normpath(joined)
        if normal.startswith("../") or normal == "..":
            return None
        return self._exact.get(normal.casefold()) or self._exact.get(stem_of(normal))


def notes_of(rows: Iterable[tuple[str, Iterable[str]]]) -> list[Note]:
    """Notes from `(path, aliases)` pairs."""
    return [Note(path, tuple(aliases)) for path, aliases in rows]


def aliases_of(frontmatter: Mapping[str, Any]) -> list[str]:
    """A note's `aliases` (or `alias`) frontmatter field as a list of names: a list, or one string."""
    value = frontmatter.get("aliases", frontmatter.get("alias"))
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    names: list[str] = []
    for item in items:
        name = str(item).strip() if item is not None else ""
        if name and name not in names:
            names.append(name)
    return names


__all__ = ["Link", "Note", "Resolver", "aliases_of", "as_display_text", "find_links", "notes_of", "stem_of"]
