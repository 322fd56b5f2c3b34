"""Find the note files of each collection: include and exclude globs, hidden folders, symlinks."""

import os
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging

from needle.files import walk_collection
from needle.globs import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, CollectionRules

logger = logging.getLogger(__name__)


@component
class CollectionScanner:
    """
    Lists the note files of one or more collections (folders of markdown notes).

    Each collection is a dict `{"name", "root", "include", "exclude"}`. The scanner walks the root folder,
    following symlinks that stay inside it, and keeps the files whose relative path matches an `include` glob
    (`**/*.md` also matches top-level files) and no `exclude` pattern. An exclude pattern ending in `/` drops a
    folder of that name anywhere (`.obsidian/`, `node_modules/`); a pattern without any `/` also matches a file
    name at any depth, like `.gitignore`; any other pattern is a glob on the relative path. Hidden files and
    folders (a path part starting with `.`) are always left out. Whatever cannot be scanned (a missing root, a
    folder that cannot be listed, a broken symlink, a symlink loop, a symlink leading outside the root or to a
    file already in the collection, a name that is not valid UTF-8) is reported in `skipped` instead of failing
    the run. The rules and the walk are `needle.globs.CollectionRules` and `needle.files.walk_collection`, which
    `get` and `multi_get` use too, so a file can be read exactly when it is indexed. Haystack's file type
    router and converters take a list of paths but have no notion of a collection, of exclude rules or of
    symlink loops.

    Usage example:
    ```python
    scanner = CollectionScanner()
    out = scanner.run(collections=[{"name": "notes", "root": "~/notes", "exclude": [".obsidian/", "templates/"]}])
    out["sources"]  # [{"collection": "notes", "root": "/home/me/notes", "path": "ideas/needle.md"}, ...]
    out["skipped"]  # [{"collection": "notes", "path": "old", "reason": "broken symlink: target does not exist"}]
    ```
    """

    def __init__(self, max_files: int = 100_000) -> None:
        """
        Create the scanner.

        :param max_files: Most files listed per collection; the rest is reported in `skipped`.
        :raises ValueError: When `max_files` is not a positive integer.
        """
        if isinstance(max_files, bool) or not isinstance(max_files, int) or max_files <= 0:
            raise ValueError(f"max_files must be an integer > 0, got {max_files!r}")
        self.max_files = max_files

    def to_dict(self) -> dict[str, Any]:
        """
        Serialise the component.

        :returns: Dictionary with the init parameters.
        """
        return default_to_dict(self, max_files=self.max_files)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CollectionScanner":
        """
        Deserialise the component.

        :param data: Dictionary created by `to_dict`.
        :returns: The component.
        """
        return default_from_dict(cls, data)

    @component.output_types(sources=list[dict[str, Any]], skipped=list[dict[str, Any]])
    def run(self, collections: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        """
        Scan every collection.

        :param collections: Collection dicts with `name`, `root` and optionally `include` and `exclude`.
        :returns: A dictionary with:
            - `sources`: `{"collection", "root", "path"}` per file, sorted by collection then path; `root` is
              absolute and `path` is relative to it, with `/` separators.
            - `skipped`: `{"collection", "path", "reason"}` per file or folder left out for a reason worth
              telling the user; `path` is `""` when the whole collection could not be scanned.
        :raises ValueError: When a collection dict is malformed or two collections share a name.
        """
        specs = [self._validate(index, collection) for index, collection in enumerate(collections)]
        names = [spec["name"] for spec in specs]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"collection names must be unique, repeated: {', '.join(duplicates)}")
        sources: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        for spec in specs:
            self._scan(spec, sources, skipped)
        sources.sort(key=lambda s: (s["collection"], s["path"]))
        skipped.sort(key=lambda s: (s["collection"], s["path"]))
        for item in skipped:
            logger.warning(
                "Skipped {collection}:{path}: {reason}",
                collection=item["collection"],
                path=item["path"],
                reason=item["reason"],
            )
        return {"sources": sources, "skipped": skipped}

    @staticmethod
    def _validate(index: int, collection: Any) -> dict[str, Any]:
        if not isinstance(collection, dict):
            raise ValueError(f"collections[{index}] must be a dict, got {type(collection).__name__}")
        name = collection.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"collections[{index}] needs a non-empty string 'name', got {name!r}")
        root = collection.get("root")
        if isinstance(root, os.PathLike):
            root = os.fspath(root)
        if not isinstance(root, str) or not root.strip():
            raise ValueError(f"collection {name!r} needs a non-empty string 'root', got {root!r}")
        patterns = {}
        for key, default in (("include", DEFAULT_INCLUDE), ("exclude", DEFAULT_EXCLUDE)):
            value = collection.get(key)
            value = list(default) if value is None else value
            if not isinstance(value, (list, tuple)) or not all(isinstance(p, str) and p for p in value):
                raise ValueError(f"collection {name!r}: '{key}' must be a list of glob patterns, got {value!r}")
            patterns[key] = list(value)
        if not patterns["include"]:
            raise ValueError(f"collection {name!r}: 'include' must name at least one glob pattern")
        return {"name": name, "root": os.path.abspath(os.path.expanduser(root)), **patterns}

    def _scan(self, spec: dict[str, Any], sources: list[dict[str, Any]], skipped: list[dict[str, Any]]) -> None:
        name, root = spec["name"], spec["root"]
        rules = CollectionRules(spec["include"], spec["exclude"])
        found: list[str] = []
        for item in walk_collection(root, rules):
            if item.reason is not None:
                skipped.append({"collection": name, "path": item.rel, "reason": item.reason})
                continue
            if len(found) == self.max_files:
                reason = f"more than max_files={self.max_files} files: the rest of the collection was not listed"
                skipped.append({"collection": name, "path": "", "reason": reason})
                break
            found.append(item.rel)
        sources.extend({"collection": name, "root": root, "path": path} for path in found)
