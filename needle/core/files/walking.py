"""Listing a collection's files by its rules: what ingestion indexes and multi-get reads, one walk for both.

`walk_collection` reads folders in name order, never enters excluded or hidden ones, follows links while
they stay inside the root and do not lead back to something listed already, and yields what it left out
for a reason worth telling (broken links, loops, links leading out, names that are not UTF-8).
"""

from __future__ import annotations

import errno
import functools
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from needle.core.collections import Collection, CollectionError
from needle.core.globs import CollectionRules, printable, valid_utf8

OUTSIDE_ROOT = "symlink leads outside the collection root"
clock = time.monotonic  # the clock of deadlines, walks' and multi-get's (tests replace it)


class OutOfTime(Exception):
    """A walk went past its deadline (raised by `walk_collection`)."""


@dataclass(frozen=True)
class Listed:
    """One thing `walk_collection` found: a served file (`reason` None), or a file or folder left out."""

    rel: str  # relative posix path, printable ("" for the root); bytes that are not UTF-8 shown as \\xff
    path: str  # the path on disk, through links
    reason: str | None = None
    is_dir: bool = False


@functools.lru_cache(maxsize=64)
def _compiled_rules(include: tuple[str, ...] | None, exclude: tuple[str, ...] | None) -> CollectionRules:
    return CollectionRules(include, exclude)


def collection_rules(collection: Collection) -> CollectionRules:
    """
    The compiled rules of a collection (cached by its patterns).

    :raises CollectionError: When the collection's include or exclude patterns are malformed.
    """
    patterns = []
    for key in ("include", "exclude"):
        value = getattr(collection, key)
        if value is not None and not isinstance(value, (list, tuple)):
            message = f"'{key}' must be a list of glob patterns, got {value!r}"
            raise CollectionError(f"collection '{collection.name}': {message}")
        patterns.append(None if value is None else tuple(value))
    try:
        return _compiled_rules(*patterns)
    except (TypeError, ValueError) as error:
        raise CollectionError(f"collection '{collection.name}': {error}") from None


def collection_root(collection: Collection) -> str:
    """The collection's root as an absolute path (`~` expanded), as the scanner takes it."""
    return os.path.abspath(os.path.expanduser(collection.root))


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def link_problem(path: str, folder: str, root_real: str, rules: CollectionRules, is_dir: bool) -> str | None:
    """
    Why a symlink in a collection must not be followed, or None when it may.

    :param path: The link, as found (through the links above it).
    :param folder: The folder holding the link.
    :param root_real: The collection root with every link resolved.
    :param rules: The collection's rules.
    :param is_dir: Whether the link leads to a folder.
    :returns: A loop, a broken link, a link out of the root (`OUTSIDE_ROOT`), or a link to something the
        collection already lists (a note, or a folder that is not excluded); None otherwise.
    """
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink loop: the link cannot be resolved"
        return "broken symlink: target does not exist"
    real = os.path.realpath(path)
    if os.path.commonpath([root_real, real]) != root_real:
        return OUTSIDE_ROOT
    target = os.path.relpath(real, root_real).replace(os.sep, "/")
    if not is_dir:
        if rules.serves(target):
            return f"symlink to {printable(target)}, which is already in the collection"
        return None
    folder_real = os.path.realpath(folder)
    if os.path.commonpath([real, folder_real]) == real:
        return f"symlink loop: the link points back to an enclosing folder ({printable(target)})"
    if not rules.folder_excluded(target):
        return f"symlink to folder {printable(target)}, which is already scanned"
    return None


def _entered(
    path: str, folder: str, root_real: str, rules: CollectionRules, is_link: bool, visited: set[tuple[int, int]]
) -> str | None:
    """Why a subfolder is not entered (a bad link, gone, seen already), or `None` once it is marked visited."""
    reason = link_problem(path, folder, root_real, rules, is_dir=True) if is_link else None
    if reason:
        return reason
    key = _stat_key(path)
    if key is None:
        return "the folder vanished while scanning"
    if key in visited:
        return "symlink loop: this folder was already scanned"
    visited.add(key)
    return None


def walk_collection(
    root: str,
    rules: CollectionRules,
    descend: Callable[[str], bool] | None = None,
    deadline: float | None = None,
) -> Iterator[Listed]:
    """
    List a collection's notes, and what was left out for a reason worth telling.

    Folders are read in name order, each folder's files before its subfolders. Excluded and hidden folders
    are never entered; symlinks are followed while they stay inside the root and do not lead back to
    something listed already. Files the rules leave out are passed over silently; broken links, loops, links
    leading out, names that are not UTF-8, things that are not regular files and folders that cannot be read
    are yielded with a reason.

    :param root: The collection root, absolute.
    :param rules: The collection's rules.
    :param descend: When given, folders for which it returns False are not entered (nor reported).
    :param deadline: A `clock()` (`time.monotonic`) value after which the walk stops.
    :returns: An iterator of `Listed`; `rel` is `""` when the whole collection cannot be listed.
    :raises OutOfTime: When the deadline passes; what was yielded before stands.
    """
    if not os.path.isdir(root):
        detail = " (it is not a folder)" if os.path.exists(root) else ""
        yield Listed("", root, f"root folder does not exist: {root}{detail}", is_dir=True)
        return
    root_real = os.path.realpath(root)
    root_key = _stat_key(root)
    if root_key is None:
        yield Listed("", root, f"root folder does not exist: {root}", is_dir=True)
        return
    visited = {root_key}
    stack: list[tuple[str, str]] = [(root, "")]
    while stack:
        if deadline is not None and clock() > deadline:
            raise OutOfTime(stack[-1][1])
        folder, folder_rel = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except PermissionError:
            yield Listed(folder_rel, folder, "permission denied: the folder cannot be listed", is_dir=True)
            continue
        except OSError as exc:
            yield Listed(folder_rel, folder, f"the folder cannot be listed: {exc.strerror or exc}", is_dir=True)
            continue
        subfolders: list[tuple[str, str]] = []
        for entry in entries:
            if deadline is not None and clock() > deadline:
                raise OutOfTime(folder_rel)
            rel = f"{folder_rel}/{entry.name}" if folder_rel else entry.name
            try:
                is_link, is_dir = entry.is_symlink(), entry.is_dir()
            except OSError:
                is_link, is_dir = True, False
            if is_dir:
                if rules.folder_excluded(rel) or (descend is not None and not descend(rel)):
                    continue
                if not valid_utf8(entry.name):
                    yield Listed(printable(rel), entry.path, "the folder name is not valid UTF-8", is_dir=True)
                    continue
                reason = _entered(entry.path, folder, root_real, rules, is_link, visited)
                if reason:
                    yield Listed(printable(rel), entry.path, reason, is_dir=True)
                    continue
                subfolders.append((entry.path, rel))
                continue
            if rules.file_excluded(rel):
                continue
            if is_link:
                reason = link_problem(entry.path, folder, root_real, rules, is_dir=False)
                if reason:
                    yield Listed(printable(rel), entry.path, reason)
                    continue
            if not rules.included(rel):
                continue
            if not valid_utf8(entry.name):
                yield Listed(printable(rel), entry.path, "the file name is not valid UTF-8")
                continue
            try:
                regular = entry.is_file()
            except OSError:
                regular = False
            yield Listed(rel, entry.path) if regular else Listed(rel, entry.path, "not a regular file")
        stack.extend(reversed(subfolders))
