"""Needle's one glob engine, and the rules that say which files of a collection are its notes.

A `Glob` matches relative posix paths without backtracking: the path is split into folders and the pattern
into segments; `**` segments are followed as a set of states (at most one per pattern segment), and each
other segment is matched against one path part by fixed-width pieces between its `*`s, each found at its
leftmost place. Matching takes time linear in the path's length for a given pattern, whatever the pattern:
Python's `re` backtracks, and a translated glob such as `**/**/**/**/x` or `*a*a*a*a*b` can take minutes.

`CollectionRules` holds a collection's include and exclude globs and the hidden-file rule. The scanner that
feeds the index and the file access behind `get` and multi-get both ask it, so a file can be read exactly
when it would be indexed.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import Final

DEFAULT_INCLUDE = ["**/*.md", "**/*.markdown", "**/*.txt"]
# Note tools keep their settings, caches and deleted or backed-up copies of notes in these folders (the
# hidden ones are left out anyway): Obsidian, Logseq (its `logseq/bak/` and `logseq/version-files/` hold old
# copies of pages), Foam and VS Code, version control and packages.
DEFAULT_EXCLUDE = [
    ".obsidian/",
    ".trash/",
    ".logseq/",
    "logseq/bak/",
    "logseq/version-files/",
    ".foam/",
    "node_modules/",
    ".git/",
]


class _Marker(enum.Enum):
    """A pattern segment that is followed as states, never matched against a part (an enum: copies stay itself)."""

    GLOBSTAR = "**"


_GLOBSTAR: Final = _Marker.GLOBSTAR  # a pattern segment that matches zero or more whole path parts


class _Class:
    """A `[...]` character class: characters and ranges, negated by a leading `!`."""

    __slots__ = ("chars", "negated", "ranges")

    def __init__(self, body: str) -> None:
        self.negated = body.startswith("!")
        if self.negated:
            body = body[1:]
        chars: set[str] = set()
        ranges: list[tuple[str, str]] = []
        i = 0
        while i < len(body):
            if i + 2 < len(body) and body[i + 1] == "-":
                if body[i] <= body[i + 2]:  # a reversed range such as z-a matches nothing, as in fnmatch
                    ranges.append((body[i], body[i + 2]))
                i += 3
            else:
                chars.add(body[i])
                i += 1
        self.chars = frozenset(chars)
        self.ranges = tuple(ranges)

    def accepts(self, char: str) -> bool:
        found = char in self.chars or any(low <= char <= high for low, high in self.ranges)
        return found != self.negated


def _parse_segment(segment: str) -> list[str | _Class | None]:
    """Atoms of one segment: a literal character, `None` for `?`, a `_Class`, or `"*"` for a run of stars."""
    atoms: list[str | _Class | None] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            if not atoms or atoms[-1] != "*":
                atoms.append("*")
            i += 1
        elif char == "?":
            atoms.append(None)
            i += 1
        elif char == "[":
            start = i + 1
            if start < len(segment) and segment[start] == "!":
                start += 1
            end = segment.find("]", start + 1)  # a `]` right after `[` or `[!` is a member
            if end == -1:
                atoms.append("[")
                i += 1
            else:
                atoms.append(_Class(segment[i + 1 : end]))
                i = end + 1
        else:
            atoms.append(char)
            i += 1
    return atoms


class _Piece:
    """A fixed-width run of atoms between two stars."""

    __slots__ = ("atoms", "literal", "width")

    def __init__(self, atoms: list[str | _Class | None]) -> None:
        self.atoms = atoms
        self.width = len(atoms)
        texts = [a for a in atoms if isinstance(a, str)]
        self.literal = "".join(texts) if len(texts) == len(atoms) else None

    def at(self, text: str, pos: int) -> bool:
        """Whether the piece matches `text` at `pos` (which leaves room for it)."""
        if self.literal is not None:
            return text.startswith(self.literal, pos)
        for offset, atom in enumerate(self.atoms):
            char = text[pos + offset]
            if atom is None:
                continue
            if isinstance(atom, _Class):
                if not atom.accepts(char):
                    return False
            elif atom != char:
                return False
        return True

    def find(self, text: str, start: int, end: int) -> int:
        """The leftmost position in `start..end - width` where the piece matches, or -1."""
        if self.literal is not None:
            return text.find(self.literal, start, end)
        for pos in range(start, end - self.width + 1):
            if self.at(text, pos):
                return pos
        return -1


class _Segment:
    """One pattern segment without `**`, matched against one path part."""

    __slots__ = ("literal", "pieces")

    def __init__(self, segment: str) -> None:
        atoms = _parse_segment(segment)
        self.pieces: list[_Piece] = []
        current: list[str | _Class | None] = []
        for atom in atoms:
            if atom == "*":
                self.pieces.append(_Piece(current))
                current = []
            else:
                current.append(atom)
        self.pieces.append(_Piece(current))
        self.literal = self.pieces[0].literal if len(self.pieces) == 1 else None

    def matches(self, part: str) -> bool:
        """
        Whether the whole `part` matches: the first piece at the start, the last at the end, each middle piece
        at its leftmost place after the one before (a star takes whatever lies between, so leftmost is never
        wrong). Every piece is tried at each position at most once: no backtracking.
        """
        if self.literal is not None:
            return part == self.literal
        pieces = self.pieces
        if len(pieces) == 1:
            return len(part) == pieces[0].width and pieces[0].at(part, 0)
        first, last = pieces[0], pieces[-1]
        end = len(part) - last.width
        if end < first.width or not first.at(part, 0) or not last.at(part, end):
            return False
        pos = first.width
        for piece in pieces[1:-1]:
            found = piece.find(part, pos, end)
            if found < 0:
                return False
            pos = found + piece.width
        return True


class _AnyPart:
    """The first part a trailing `**` takes: it matches anything below, not the folder itself."""

    @staticmethod
    def matches(part: str) -> bool:
        return True


class Glob:
    """
    A glob over relative posix paths, matched in time linear in the path.

    `*` and `?` never cross a `/`; `[...]` is a character class (`[!...]` negated, `a-z` ranges, a `]` right
    after the opening `[` is a member) that never matches `/`; `**/` matches zero or more folders, so
    `**/*.md` matches `a.md` as well as `a/b/c.md`; a trailing `**` matches anything below (`a/**` matches
    `a/b/c.md`, not `a`). `**` that is not a whole segment (`a**b`) is a plain `*`. Matching is case-sensitive.

    Usage example:
    ```python
    Glob("**/*.md").matches("howto/git.md")        # True
    Glob("howto/*.md").may_match_below("runbooks")  # False: nothing under runbooks/ can match
    ```
    """

    __slots__ = ("_closure", "_segments", "pattern")

    def __init__(self, pattern: str) -> None:
        """
        Compile a pattern.

        :param pattern: The glob, for example `**/*.md` or `archive/**`.
        :raises TypeError: When `pattern` is not a string.
        """
        if not isinstance(pattern, str):
            raise TypeError(f"a glob must be a string, got {type(pattern).__name__}")
        self.pattern = pattern
        parts = pattern.split("/")
        segments: list[_Segment | _AnyPart | _Marker] = []
        for index, part in enumerate(parts):
            if part == "**" and index == len(parts) - 1:
                segments += [_AnyPart(), _GLOBSTAR]
            elif part == "**":
                if not segments or segments[-1] is not _GLOBSTAR:
                    segments.append(_GLOBSTAR)
            else:
                segments.append(_Segment(part))
        self._segments = segments
        # States reachable from state i without reading a part: i itself, and past every `**` that follows.
        closure: list[frozenset[int]] = [frozenset({len(segments)})]  # built from the end, then turned round
        for i in range(len(segments) - 1, -1, -1):
            skip = closure[-1] if segments[i] is _GLOBSTAR else frozenset()
            closure.append(frozenset({i}) | skip)
        self._closure = closure[::-1]

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Glob) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def _states(self, parts: Iterable[str]) -> set[int]:
        segments, closure = self._segments, self._closure
        states = set(closure[0])
        for part in parts:
            following: set[int] = set()
            for i in states:
                if i == len(segments):
                    continue
                segment = segments[i]
                if segment is _GLOBSTAR:
                    following |= closure[i]
                elif segment.matches(part):
                    following |= closure[i + 1]
            if not following:
                return following
            states = following
        return states

    def matches(self, path: str) -> bool:
        """
        Whether the whole relative posix path matches.

        :param path: For example `howto/git.md`; no leading `/`.
        :returns: True when it matches.
        """
        if len(self._segments) == 1:
            # A pattern of one segment has no `**` (a trailing `**` adds two): its segment is a `_Segment`.
            return "/" not in path and self._segments[0].matches(path)  # type: ignore[union-attr]  # see above
        return len(self._segments) in self._states(path.split("/"))

    def may_match_below(self, folder: str) -> bool:
        """
        Whether some path under `folder` could match: False means a walk can leave the folder out.

        :param folder: A relative posix folder path, `""` for the root.
        :returns: False only when no path `folder/...` can match.
        """
        states = self._states(folder.split("/") if folder else [])
        return any(i < len(self._segments) for i in states)


def _names(patterns: Sequence[str]) -> str:
    return ", ".join(patterns)


class CollectionRules:
    """
    Which files of a collection are its notes: include globs, exclude patterns, hidden parts, file names.

    A path is relative to the collection root, with `/` separators. A file is served (indexed and readable)
    when an `include` glob matches it, no `exclude` pattern drops it or one of its folders, no part of it
    starts with `.`, and its name is valid UTF-8. An exclude pattern ending in `/` drops a folder of that
    name anywhere (`.obsidian/`, `node_modules/`), or the folder at that path when it has another `/`
    (`archive/2020/`); a pattern without any `/` also matches a file or folder name at any depth, like
    `*.draft.md`; any other pattern is a glob on the relative path (`archive/**`).

    Usage example:
    ```python
    rules = CollectionRules(include=["**/*.md"], exclude=["templates/"])
    rules.serves("ideas/needle.md")       # True
    rules.why_not_served(".env")          # "hidden files and folders are not served"
    ```
    """

    def __init__(self, include: Sequence[str] | None = None, exclude: Sequence[str] | None = None) -> None:
        """
        Compile a collection's patterns.

        :param include: Globs a note must match; `DEFAULT_INCLUDE` when None.
        :param exclude: Folders and globs left out; `DEFAULT_EXCLUDE` when None.
        :raises ValueError: When a pattern is not a non-empty string or `include` is empty.
        """
        include = list(DEFAULT_INCLUDE if include is None else include)
        exclude = list(DEFAULT_EXCLUDE if exclude is None else exclude)
        for key, patterns in (("include", include), ("exclude", exclude)):
            if not all(isinstance(p, str) and p for p in patterns):
                raise ValueError(f"'{key}' must be a list of glob patterns, got {patterns!r}")
        if not include:
            raise ValueError("'include' must name at least one glob pattern")
        self.include_patterns = include
        self.exclude_patterns = exclude
        self.include = [Glob(p) for p in include]
        self.folder_names = [(p, Glob(p.rstrip("/"))) for p in exclude if p.endswith("/") and "/" not in p[:-1]]
        self.folder_paths = [(p, Glob(p.rstrip("/"))) for p in exclude if p.endswith("/") and "/" in p[:-1]]
        self.path_globs = [(p, Glob(p)) for p in exclude if not p.endswith("/")]
        self.name_globs = [(p, Glob(p)) for p in exclude if "/" not in p]

    def included(self, rel: str) -> bool:
        """Whether an include glob matches the file at `rel`."""
        return rel != "." and any(p.matches(rel) for p in self.include)

    def folder_exclusion(self, rel: str) -> str | None:
        """Why the folder at `rel`, or one of its parents, is left out, or None when it is not."""
        if rel in (".", ""):
            return None
        parts = rel.split("/")
        for i, part in enumerate(parts):
            prefix = "/".join(parts[: i + 1])
            if part.startswith("."):
                return "hidden files and folders are not served"
            for pattern, glob in self.folder_names:
                if glob.matches(part):
                    return f"excluded by '{pattern}'"
            for pattern, glob in self.folder_paths:
                if glob.matches(prefix):
                    return f"excluded by '{pattern}'"
            for pattern, glob in self.path_globs:
                if glob.matches(prefix):
                    return f"excluded by '{pattern}'"
            for pattern, glob in self.name_globs:
                if glob.matches(part):
                    return f"excluded by '{pattern}'"
        return None

    def folder_excluded(self, rel: str) -> bool:
        """Whether the folder at `rel`, or one of its parents, is excluded (hidden folders are)."""
        return self.folder_exclusion(rel) is not None

    def file_exclusion(self, rel: str) -> str | None:
        """Why the file at `rel` is excluded by its name, its path or one of its folders, or None."""
        folder, _, name = rel.rpartition("/")
        reason = self.folder_exclusion(folder) if folder else None
        if reason:
            return reason
        if name.startswith("."):
            return "hidden files and folders are not served"
        for pattern, glob in self.path_globs:
            if glob.matches(rel):
                return f"excluded by '{pattern}'"
        for pattern, glob in self.name_globs:
            if glob.matches(name):
                return f"excluded by '{pattern}'"
        return None

    def file_excluded(self, rel: str) -> bool:
        """Whether the file at `rel` is excluded by its own name or path, or by one of its folders."""
        return self.file_exclusion(rel) is not None

    def why_not_served(self, rel: str) -> str | None:
        """
        Why the file at `rel` is not one of the collection's notes, judged by its path alone.

        :returns: None when it is served; otherwise a reason a person can read, which names the rule.
        """
        reason = self.file_exclusion(rel)
        if reason:
            return reason
        if not self.included(rel):
            return f"it matches none of the collection's include globs ({_names(self.include_patterns)})"
        if not valid_utf8(rel):
            return "its name is not valid UTF-8"
        return None

    def serves(self, rel: str) -> bool:
        """Whether the file at `rel` is one of the collection's notes (it would be indexed)."""
        return self.why_not_served(rel) is None


def valid_utf8(name: str) -> bool:
    """Whether a name listed by the OS (undecodable bytes come as lone surrogates) is valid UTF-8 text."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(name: str) -> str:
    """A name as text that can be shown and sent as JSON: bytes that are not UTF-8 become `\\xff`."""
    if valid_utf8(name):
        return name
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that no OS name decodes to, e.g. from JSON
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")
