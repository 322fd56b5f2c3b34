"""Free space on the disk that holds the index: refuse before the engine writes into a full disk.

The embedded engine writes its write-ahead log, payload and index pages through memory maps. A page
written through a map onto a full disk (a full tmpfs above all) cannot fail with an error: the kernel
kills the process with SIGBUS, which no Python handler sees, so the command dies printing nothing. Needle
therefore measures the free space before it opens the index and before each write, and says
"no space left on DATA_DIR (N MB free)" instead.

The margin is what the engine may allocate behind a single open or write batch without asking: a fresh
index allocated 45 MB on its first run, and its first open afterwards another 81 MB (its sparse page files
filled in; measured on tmpfs with three notes). `MIN_FREE_MB` keeps clear of that.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

# Needle refuses to open or write the index with less free space than this on its disk.
MIN_FREE_MB = 160
_MB = 1024 * 1024


class DiskFullError(OSError):
    """Too little free space on the disk holding a folder for the index to be opened or written safely."""

    def __init__(self, folder: str | os.PathLike[str], free_mb: int, needed_mb: float = 0, why: str = "") -> None:
        """
        :param folder: The folder whose disk is full (the data folder, or a store's folder).
        :param free_mb: The free space left, in MB.
        :param needed_mb: What the refused step needs on top of the margin, in MB.
        :param why: What that step is, e.g. `to optimise the index (it rewrites its segments)`.
        """
        need = f"{MIN_FREE_MB} MB to open or write the index"
        if needed_mb >= 1:
            need = f"{MIN_FREE_MB + round(needed_mb)} MB here: {need}, plus {round(needed_mb)} MB {why or 'for this write'}"
        super().__init__(
            errno.ENOSPC,
            f"no space left on {folder} ({free_mb} MB free); free some space (Needle needs {need}) and run the "
            "command again",
        )
        self.folder = str(folder)
        self.free_mb = free_mb

    def __str__(self) -> str:
        return str(self.strerror)


def free_mb(folder: str | os.PathLike[str]) -> int:
    """
    The space an unprivileged writer may still use on the disk holding `folder`, in MB (rounded down).

    :param folder: A folder, or a path under one that does not exist yet (its nearest existing parent counts).
    """
    path = Path(folder).expanduser().absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize // _MB


def ensure_space(folder: str | os.PathLike[str], needed_mb: float = 0, why: str = "") -> None:
    """
    Refuse to go on when the disk holding `folder` has less than `MIN_FREE_MB` plus `needed_mb` free.

    :param folder: The folder about to be written.
    :param needed_mb: What the coming write will add, in MB, on top of the margin.
    :param why: What that write is, named in the refusal (with 182 MB free, "needs 160 MB" alone reads wrong).
    :raises DiskFullError: When there is not enough.
    """
    free = free_mb(folder)
    if free < MIN_FREE_MB + needed_mb:
        raise DiskFullError(folder, free, needed_mb, why)


def allocated_mb(folder: str | os.PathLike[str]) -> float:
    """The space a folder's files take on disk (blocks allocated, not their sparse sizes), in MB."""
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total / _MB


def is_disk_full(error: BaseException) -> bool:
    """Whether an error says the disk is full: an `OSError` with ENOSPC, or SQLite's "database or disk is full"."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return True
    return isinstance(error, sqlite3.OperationalError) and "disk is full" in str(error)


__all__ = ["MIN_FREE_MB", "DiskFullError", "allocated_mb", "ensure_space", "free_mb", "is_disk_full"]
