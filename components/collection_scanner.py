"""Find the note files of each collection: include and exclude globs, hidden folders, symlinks."""

import errno
import os
import re
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging

logger = logging.getLogger(__name__)

DEFAULT_INCLUDE = ["**/*.md", "**/*.markdown", "**/*.txt"]
DEFAULT_EXCLUDE = [".obsidian/", ".trash/", "node_modules/", ".git/"]


def glob_to_regex(pattern: str) -> "re.Pattern[str]":
    """
    Compile a glob over a relative posix path into a regular expression matching the whole path.

    `*` and `?` never cross a `/`, `[...]` is a character class (`[!...]` negated), and `**/` matches zero or more
    folders, so `**/*.md` matches `a.md` as well as `a/b/c.md`.

    :param pattern: The glob, for example `**/*.md` or `archive/**`.
    :returns: A compiled pattern; use its `fullmatch`.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[" and pattern.find("]", i + 2) != -1:
            end = pattern.find("]", i + 2)
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            if body.startswith("!"):
                body = "^" + body[1:]
            elif body.startswith("^"):
                body = "\\" + body
            out.append(f"[{body}]")
            i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    return re.compile("".join(out))


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
    file already in the collection) is reported in `skipped` instead of failing the run. Haystack's file type
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
        if not os.path.isdir(root):
            detail = " (it is not a folder)" if os.path.exists(root) else ""
            skipped.append({"collection": name, "path": "", "reason": f"root folder does not exist: {root}{detail}"})
            return
        rules = _Rules(spec["include"], spec["exclude"])
        root_real = os.path.realpath(root)
        root_stat = os.stat(root)
        visited = {(root_stat.st_dev, root_stat.st_ino)}
        found: list[str] = []

        def skip(path: str, reason: str) -> None:
            skipped.append({"collection": name, "path": path, "reason": reason})

        stack: list[tuple[str, str]] = [(root, "")]
        while stack:
            folder, folder_rel = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except PermissionError:
                skip(folder_rel, "permission denied: the folder cannot be listed")
                continue
            except OSError as exc:
                skip(folder_rel, f"the folder cannot be listed: {exc.strerror or exc}")
                continue
            subfolders: list[tuple[str, str]] = []
            for entry in entries:
                rel = f"{folder_rel}/{entry.name}" if folder_rel else entry.name
                try:
                    is_link, is_dir = entry.is_symlink(), entry.is_dir()
                except OSError:
                    is_link, is_dir = True, False
                if is_dir:
                    if rules.folder_excluded(rel):
                        continue
                    reason = self._link_problem(entry.path, folder, root_real, rules, is_dir=True) if is_link else None
                    key = _stat_key(entry.path)
                    if reason is None and key is None:
                        reason = "the folder vanished while scanning"
                    elif reason is None and key in visited:
                        reason = "symlink loop: this folder was already scanned"
                    if reason:
                        skip(rel, reason)
                        continue
                    visited.add(key)
                    subfolders.append((entry.path, rel))
                    continue
                if rules.file_excluded(rel):
                    continue
                if is_link:
                    reason = self._link_problem(entry.path, folder, root_real, rules, is_dir=False)
                    if reason:
                        skip(rel, reason)
                        continue
                if not rules.included(rel):
                    continue
                if not entry.is_file():
                    skip(rel, "not a regular file")
                    continue
                if len(found) == self.max_files:
                    skip("", f"more than max_files={self.max_files} files: the rest of the collection was not listed")
                    stack.clear()
                    subfolders.clear()
                    break
                found.append(rel)
            stack.extend(reversed(subfolders))
        sources.extend({"collection": name, "root": root, "path": path} for path in found)

    @staticmethod
    def _link_problem(path: str, folder: str, root_real: str, rules: "_Rules", is_dir: bool) -> str | None:
        """Why a symlink must not be followed, or None when it is fine."""
        try:
            os.stat(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "symlink loop: the link cannot be resolved"
            return "broken symlink: target does not exist"
        real = os.path.realpath(path)
        if os.path.commonpath([root_real, real]) != root_real:
            return "symlink leads outside the collection root"
        target = os.path.relpath(real, root_real).replace(os.sep, "/")
        if not is_dir:
            if rules.included(target) and not rules.file_excluded(target):
                return f"symlink to {target}, which is already in the collection"
            return None
        folder_real = os.path.realpath(folder)
        if os.path.commonpath([real, folder_real]) == real:
            return f"symlink loop: the link points back to an enclosing folder ({target})"
        if not rules.folder_excluded(target):
            return f"symlink to folder {target}, which is already scanned"
        return None


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


class _Rules:
    """Compiled include and exclude patterns of one collection."""

    def __init__(self, include: list[str], exclude: list[str]) -> None:
        self.include = [glob_to_regex(p) for p in include]
        self.folder_names = [glob_to_regex(p.rstrip("/")) for p in exclude if p.endswith("/") and "/" not in p[:-1]]
        self.folder_paths = [glob_to_regex(p.rstrip("/")) for p in exclude if p.endswith("/") and "/" in p[:-1]]
        self.path_globs = [glob_to_regex(p) for p in exclude if not p.endswith("/")]
        self.name_globs = [glob_to_regex(p) for p in exclude if "/" not in p]

    def included(self, rel: str) -> bool:
        return rel != "." and any(p.fullmatch(rel) for p in self.include)

    def folder_excluded(self, rel: str) -> bool:
        """Whether the folder at `rel`, or one of its parents, is excluded."""
        if rel == ".":
            return False
        parts = rel.split("/")
        for i, part in enumerate(parts):
            prefix = "/".join(parts[: i + 1])
            if part.startswith("."):
                return True
            if any(p.fullmatch(part) for p in self.folder_names) or any(p.fullmatch(prefix) for p in self.folder_paths):
                return True
            if any(p.fullmatch(prefix) for p in self.path_globs) or any(p.fullmatch(part) for p in self.name_globs):
                return True
        return False

    def file_excluded(self, rel: str) -> bool:
        """Whether the file at `rel` is excluded by its own name or path, or by one of its folders."""
        folder, _, name = rel.rpartition("/")
        if folder and self.folder_excluded(folder):
            return True
        if name.startswith("."):
            return True
        return any(p.fullmatch(rel) for p in self.path_globs) or any(p.fullmatch(name) for p in self.name_globs)
