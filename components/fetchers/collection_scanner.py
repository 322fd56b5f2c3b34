"""Find the note files of each collection: include and exclude globs, hidden folders, symlinks."""

import os
import posixpath
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging

from haystack_integrations.components.needle._index_models import FROM_SETTINGS, records_file, without
from needle.core.file_records import FileRecords, FileStat
from needle.core.globs import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, CollectionRules

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
    the run. The rules and the walk are `needle.core.globs.CollectionRules` and `needle.core.files.walking.walk_collection`,
    which `get` and `multi_get` use too, so a file can be read exactly when it is indexed. Haystack's file type
    router and converters take a list of paths but have no notion of a collection, of exclude rules or of
    symlink loops.

    An index run runs the ingest graph once per batch: the scanner hands on at most `batch_files` files to
    read, those after `after` (the previous batch's `next`), and only files whose stat (size, times, inode)
    differs from the stat record (`needle.core.file_records`, written by `FileRecorder` once a batch is stored).
    It also tells the differs which indexed files a batch may change (`scope`): the batch's files, plus, on
    the last batch, the recorded files no longer found. Given `paths`, it looks at those files alone.

    Usage example:
    ```python
    scanner = CollectionScanner()
    out = scanner.run(collections=[{"name": "notes", "root": "~/notes", "exclude": [".obsidian/", "templates/"]}])
    out["sources"]  # [{"collection": "notes", "root": "/home/me/notes", "path": "ideas/needle.md"}, ...]
    out["skipped"]  # [{"collection": "notes", "path": "old", "reason": "broken symlink: target does not exist"}]
    out["next"]     # None: this was the last batch
    ```
    """

    def __init__(
        self, max_files: int = 100_000, batch_files: int = 200, records_path: str | None = FROM_SETTINGS
    ) -> None:
        """
        Create the scanner.

        :param max_files: Most files listed per collection; the rest is reported in `skipped`.
        :param batch_files: Most files handed on to be read per run (a batch); an index run runs the graph
            once per batch, each batch written and recorded before the next starts.
        :param records_path: The stat record (`needle.core.file_records`, `files.sqlite` in the index folder):
            files whose size, times and inode match it are not read again; default: the index's, from Needle's
            settings. `None` reads every file.
        :raises ValueError: When `max_files` or `batch_files` is not a positive integer.
        """
        for name, value in (("max_files", max_files), ("batch_files", batch_files)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be an integer > 0, got {value!r}")
        self.max_files = max_files
        self.batch_files = batch_files
        self._from_settings = {"records_path"} if records_path is FROM_SETTINGS else set()
        self.records_path = records_file() if records_path is FROM_SETTINGS else records_path

    def to_dict(self) -> dict[str, Any]:
        """
        Serialise the component.

        :returns: Dictionary with the init parameters.
        """
        return without(
            default_to_dict(
                self, max_files=self.max_files, batch_files=self.batch_files, records_path=self.records_path
            ),
            self._from_settings,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CollectionScanner":
        """
        Deserialise the component.

        :param data: Dictionary created by `to_dict`.
        :returns: The component.
        """
        return default_from_dict(cls, data)

    @component.output_types(
        sources=list[dict[str, Any]],
        present=list[dict[str, Any]],
        scope=list[str] | None,
        file_stats=dict[str, dict[str, int]],
        gone=list[str],
        listed=list[str],
        skipped=list[dict[str, Any]],
        next=list[str] | None,
        counts=dict[str, int],
        pending=list[str],
    )
    def run(
        self, collections: list[dict[str, Any]], paths: list[str] | None = None, after: list[str] | None = None
    ) -> dict[str, Any]:
        """
        Scan the collections (or only the given paths) and hand on the next batch of files to read.

        :param collections: Collection dicts with `name`, `root` and optionally `include` and `exclude`.
        :param paths: Only these files: absolute, or relative to a collection root; a file deleted on disk
            is named so that its chunks leave the index. Files the collection's globs leave out go to `skipped`.
            They are read whatever the stat record says.
        :param after: The `next` of the previous batch of this run: the batch starts after it.
        :returns: A dictionary with:
            - `sources`: `{"collection", "root", "path"}` per file to read in this batch, sorted by collection
              then path; `root` is absolute and `path` is relative to it, with `/` separators.
            - `present`: the files the differs compare with the index: this batch's, or, when `scope` is
              `None`, every file found (indexed files missing from it leave the index).
            - `scope`: the `collection:path` of the indexed files this batch may change (`gone` included), or
              `None` when the differs must compare every indexed file (the last batch of a whole-collection
              run, until the stat record knows every indexed file).
            - `file_stats`: `collection:path` → the stat of each file of `sources` (for the stat record).
            - `gone`: `collection:path` of the files deleted on disk: the given paths that no longer exist, or,
              on the last batch of a whole-collection run, the recorded files that were not found.
            - `listed`: the collections whose indexed files the differs compare in full in this batch (`scope`
              is `None`: the record does not know yet that it holds every indexed file).
            - `skipped`: `{"collection", "path", "reason"}` per file or folder left out for a reason worth
              telling the user; `path` is `""` when the whole collection could not be scanned.
            - `next`: where the next batch starts (pass it as `after`), or `None` after the last batch.
            - `counts`: `files_found`, `files_skipped_by_stat` (the stat record matched), `files_pending`
              (still to read, this batch included) and `files_gone`.
            - `pending`: on the first batch of a run of several, the `collection:path` of every file to read
              (a file among them that no later batch hands on vanished during the run); `[]` otherwise.
        :raises ValueError: When a collection dict is malformed, two collections share a name, or a path is
            in no collection.
        """
        specs = [self._validate(index, collection) for index, collection in enumerate(collections)]
        names = [spec["name"] for spec in specs]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"collection names must be unique, repeated: {', '.join(duplicates)}")
        found: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        deleted: list[str] = []
        if paths is None:
            for spec in specs:
                self._scan(spec, found, skipped)
        else:
            self._locate(specs, paths, found, skipped, deleted)
            if deleted and self.records_path:  # a deleted folder: the recorded files under it
                below = FileRecords(self.records_path)
                for key in list(deleted):
                    name, rel = key.split(":", 1)
                    deleted.extend(f"{name}:{path}" for path in below.load(name) if path.startswith(rel + "/"))
        found.sort(key=lambda s: (s["collection"], s["path"]))
        skipped.sort(key=lambda s: (s["collection"], s["path"]))
        if after is None:
            for item in skipped:
                logger.warning(
                    "Skipped {collection}:{path}: {reason}",
                    collection=item["collection"],
                    path=item["path"],
                    reason=item["reason"],
                )
        stats = {f"{s['collection']}:{s['path']}": s.pop("stat") for s in found}
        records = FileRecords(self.records_path) if self.records_path and paths is None else None
        recorded = {spec["name"]: records.load(spec["name"]) for spec in specs} if records else {}
        pending = found if records is None else [s for s in found if _changed(s, stats, recorded)]
        unchanged = len(found) - len(pending)
        if after is not None:
            cursor = (after[0], after[1])
            pending = [s for s in pending if (s["collection"], s["path"]) > cursor]
        batch = pending[: self.batch_files]
        last = len(pending) <= self.batch_files
        keys = [f"{s['collection']}:{s['path']}" for s in batch]
        gone = list(deleted) if after is None else []
        scope: list[str] | None
        present, scope, listed = batch, keys + gone, []
        if paths is None and last:
            on_disk = {f"{s['collection']}:{s['path']}" for s in found}
            # A collection whose root is missing (an unmounted drive) keeps its files, as the differs do.
            scanned = {spec["name"] for spec in specs if os.path.isdir(spec["root"])}
            gone = sorted(
                key
                for name, rows in recorded.items()
                if name in scanned
                for path in rows
                if (key := f"{name}:{path}") not in on_disk
            )
            if records is not None and all(records.listed(spec["name"]) for spec in specs):
                scope = keys + gone  # the record knows every indexed file: the deleted ones are those it lacks
            else:
                present, scope, listed = found, None, [spec["name"] for spec in specs]
        return {
            "sources": batch,
            "present": present,
            "scope": scope,
            "file_stats": {key: stats[key] for key in keys if stats.get(key)},
            "gone": gone,
            "listed": listed,
            "skipped": skipped,
            "next": None if last else [batch[-1]["collection"], batch[-1]["path"]],
            "counts": {
                "files_found": len(found),
                "files_skipped_by_stat": unchanged,
                "files_pending": len(pending),
                "files_gone": len(gone),
            },
            "pending": [f"{s['collection']}:{s['path']}" for s in pending] if after is None and not last else [],
        }

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
        from needle.core.files.walking import walk_collection  # the walk, on first use (see _folder)

        rules = CollectionRules(spec["include"], spec["exclude"])
        found: list[tuple[str, dict[str, int] | None]] = []
        for item in walk_collection(root, rules):
            if item.reason is not None:
                skipped.append({"collection": name, "path": item.rel, "reason": item.reason})
                continue
            if len(found) == self.max_files:
                reason = f"more than max_files={self.max_files} files: the rest of the collection was not listed"
                skipped.append({"collection": name, "path": "", "reason": reason})
                break
            found.append((item.rel, _stat(item.path)))
        sources.extend({"collection": name, "root": root, "path": path, "stat": stat} for path, stat in found)

    @staticmethod
    def _locate(
        specs: list[dict[str, Any]],
        paths: list[str],
        sources: list[dict[str, Any]],
        skipped: list[dict[str, Any]],
        deleted: list[str],
    ) -> None:
        """Find the collection of each given path: files to read, paths deleted on disk, paths left out."""
        if not isinstance(paths, (list, tuple)):
            raise ValueError(f"paths must be a list of file paths, got {type(paths).__name__}")
        seen: set[str] = set()
        for raw in paths:
            if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
                raise ValueError(f"paths must be non-empty file paths, got {raw!r}")
            hits = [(spec, rel) for spec in specs if (rel := collection_path(spec["root"], raw)) is not None]
            if not os.path.isabs(os.path.expanduser(raw)):
                on_disk = [(spec, rel) for spec, rel in hits if os.path.lexists(os.path.join(spec["root"], rel))]
                hits = on_disk or hits
            if not hits:
                roots = ", ".join(f"{spec['name']} ({spec['root']})" for spec in specs) or "none"
                raise ValueError(f"path {raw!r} is in no collection being indexed (collections: {roots})")
            for spec, rel in hits:
                key = f"{spec['name']}:{rel}"
                if key in seen:
                    continue
                seen.add(key)
                rules = CollectionRules(spec["include"], spec["exclude"])
                full = os.path.join(spec["root"], *rel.split("/"))
                if os.path.isdir(full):  # a folder: its notes, as the collection's walk finds them
                    _folder(spec, rules, rel, sources, skipped)
                    continue
                reason = rules.why_not_served(rel)
                if not os.path.lexists(full):
                    deleted.append(key)  # a deleted note, or folder: what the index holds of it leaves
                elif reason is not None:
                    skipped.append({"collection": spec["name"], "path": rel, "reason": f"not indexed: {reason}"})
                elif not os.path.isfile(full):
                    skipped.append({"collection": spec["name"], "path": rel, "reason": "not a regular file"})
                else:
                    sources.append({"collection": spec["name"], "root": spec["root"], "path": rel, "stat": _stat(full)})


def _folder(
    spec: dict[str, Any],
    rules: CollectionRules,
    folder: str,
    sources: list[dict[str, Any]],
    skipped: list[dict[str, Any]],
) -> None:
    """The notes under one folder of a collection, found by the collection's own walk."""
    # Imported here: the walk brings the collection list's module, which a scanner that is only built
    # (a graph loaded to be served, to be read) never needs.
    from needle.core.files.walking import walk_collection

    def on_the_way(rel: str) -> bool:
        return rel == folder or rel.startswith(folder + "/") or folder.startswith(rel + "/")

    for item in walk_collection(spec["root"], rules, descend=on_the_way):
        if not item.rel.startswith(folder + "/"):
            continue
        if item.reason is not None:
            skipped.append({"collection": spec["name"], "path": item.rel, "reason": item.reason})
        else:
            sources.append(
                {"collection": spec["name"], "root": spec["root"], "path": item.rel, "stat": _stat(item.path)}
            )


def collection_path(root: str, path: str) -> str | None:
    """
    A path as the collection rooted at `root` names it (relative, `/` separators), or None when it is outside.

    :param root: The collection root, absolute.
    :param path: An absolute path (links resolved or not), or one relative to the root.
    """
    expanded = os.path.expanduser(path)
    if os.path.isabs(expanded):
        for base, full in ((root, os.path.abspath(expanded)), (os.path.realpath(root), os.path.realpath(expanded))):
            if full != base and os.path.commonpath([base, full]) == base:
                return os.path.relpath(full, base).replace(os.sep, "/")
        return None
    rel = posixpath.normpath(expanded.replace(os.sep, "/"))
    if rel in (".", "..") or rel.startswith("../"):
        return None
    return rel


def _changed(source: dict[str, Any], stats: dict[str, Any], recorded: dict[str, dict[str, Any]]) -> bool:
    """Whether a found file's stat differs from its record (or it has none)."""
    record = recorded.get(source["collection"], {}).get(source["path"])
    stat = stats.get(f"{source['collection']}:{source['path']}")
    return record is None or stat is None or tuple(record.stat) != tuple(FileStat(**stat))


def _stat(path: str) -> dict[str, int] | None:
    """A file's stat as the record keeps it, or None when it cannot be read."""
    try:
        return FileStat.of(os.stat(path)).as_dict()
    except OSError:
        return None
