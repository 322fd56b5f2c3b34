"""The user's collections: named folders of notes, kept in `<data_dir>/collections.yml`."""

from __future__ import annotations

import copy
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from needle.core.atomic import write_atomic
from needle.core.globs import DEFAULT_EXCLUDE, DEFAULT_INCLUDE
from needle.core.languages import AUTO, check_language

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class CollectionError(ValueError):
    """A collection is unknown, misnamed or points at no folder."""


@dataclass
class Collection:
    """A named folder of notes with the globs that select its files."""

    name: str
    root: str
    include: list[str] = field(default_factory=lambda: list(DEFAULT_INCLUDE))
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    # The language its keyword search analyses text in (`needle.core.languages`); auto: detected per file.
    language: str = AUTO

    def as_source(self) -> dict:
        """The collection as the ingestion pipeline's scanner takes it."""
        return asdict(self)


def validate_name(name: str) -> str:
    """
    Check a collection name.

    :raises CollectionError: When the name is empty, too long or has characters other than letters,
        digits, `_`, `.` and `-`.
    """
    if not _NAME.match(name or ""):
        raise CollectionError(
            f"invalid collection name {name!r}: use 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit"
        )
    return name


def _refuse_overlap(folder: Path, name: str, collections: dict[str, Collection]) -> None:
    """Refuse a folder that another collection covers: the same one, one inside it or one containing it."""
    for other in collections.values():
        if other.name == name:
            continue
        theirs = Path(other.root)
        if folder == theirs:
            how = "is already"
        elif folder.is_relative_to(theirs):
            how = "is inside"
        elif theirs.is_relative_to(folder):
            how = "contains"
        else:
            continue
        raise CollectionError(
            f"{folder} {how} collection '{other.name}' ({theirs}): its notes would be indexed and found twice; "
            "search that collection, or add this folder anyway with --allow-overlap"
        )


class CollectionRegistry:
    """Reads and writes the collection list; every write replaces the file atomically."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        # The last parse and the file version it came from: every query checks its collections, and parsing
        # YAML costs more than the stat that tells whether the file changed (another process may add one).
        self._parsed: tuple[tuple[int, int, int], list[dict]] | None = None

    def load(self) -> dict[str, Collection]:
        """
        Read the collections.

        :returns: Collections by name (empty when the file does not exist yet), fresh objects on every call.
        :raises CollectionError: When the file is malformed.
        """
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return {}
        version = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if self._parsed is None or self._parsed[0] != version:
            try:
                data = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
                items = list(data.get("collections", []))
            except (yaml.YAMLError, AttributeError) as error:
                raise CollectionError(f"{self.path} is malformed: {error}") from error
            self._parsed = (version, items)
        try:
            return {item["name"]: Collection(**copy.deepcopy(item)) for item in self._parsed[1]}
        except (TypeError, KeyError) as error:
            raise CollectionError(f"{self.path} is malformed: {error}") from error

    def save(self, collections: dict[str, Collection]) -> None:
        """Write the collections (atomically)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump({"collections": [asdict(c) for c in collections.values()]}, sort_keys=False)
        write_atomic(self.path, text)

    def add(
        self,
        root: str | Path,
        name: str,
        include: list[str] | None = None,
        language: str | None = None,
        allow_overlap: bool = False,
    ) -> Collection:
        """
        Add a collection, or update the globs (and language) of one with the same name and folder.

        :param language: The language of its notes (`needle.core.languages.LANGUAGES`), or `auto` (the default) to
            tell it per file; an existing collection keeps its own when `None`.
        :param allow_overlap: Accept a folder that another collection already covers (the same folder, one
            inside it or one containing it): their common files are then indexed, and found, twice.
        :raises CollectionError: On a bad name, a missing folder, an unknown language, a name already used
            for another folder, or a folder another collection covers (without `allow_overlap`).
        """
        validate_name(name)
        if language is not None:
            try:
                language = check_language(language)
            except ValueError as error:
                raise CollectionError(str(error)) from None
        folder = Path(root).expanduser().resolve()
        if not folder.is_dir():
            raise CollectionError(f"{root} is not a folder")
        collections = self.load()
        existing = collections.get(name)
        if existing and Path(existing.root) != folder:
            raise CollectionError(f"collection '{name}' already points at {existing.root}; remove it first")
        if not allow_overlap:
            _refuse_overlap(folder, name, collections)
        language = language or (existing.language if existing else AUTO)
        collection = Collection(
            name=name, root=str(folder), include=list(include or DEFAULT_INCLUDE), language=language
        )
        collections[name] = collection
        self.save(collections)
        return collection

    def remove(self, name: str) -> Collection:
        """
        Remove a collection from the list.

        :raises CollectionError: When no collection has that name.
        """
        collections = self.load()
        if name not in collections:
            raise CollectionError(f"no collection named '{name}'")
        removed = collections.pop(name)
        self.save(collections)
        return removed

    def select(self, names: list[str] | None) -> list[Collection]:
        """
        The named collections, or all of them.

        :raises CollectionError: When a name is unknown or no collection exists.
        """
        collections = self.load()
        if not collections:
            raise CollectionError("no collections yet: add one with `needle collection add PATH --name NAME`")
        if not names:
            return list(collections.values())
        unknown = [n for n in names if n not in collections]
        if unknown:
            raise CollectionError(f"unknown collection(s): {', '.join(unknown)}; known: {', '.join(collections)}")
        return [collections[n] for n in names]
