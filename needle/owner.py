"""The owner record: which process holds the embedded index, and where other `needle` commands reach it.

Qdrant Edge serves one process at a time. The process that opens the index for long (`needle serve`,
`needle mcp`, `needle watch`) writes `<data_dir>/owner.json` with its pid, the loopback address of its HTTP
routes, a token for them and when it started, and removes it on exit. Other commands read it and run
through those routes (`needle.remote.RemoteNeedle`) instead of failing on the lock. A record whose process
is gone (killed with -9, say) is stale: the next reader removes it.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

OWNER_FILE = "owner.json"
TOKEN_HEADER = "Authorization"
# An owner writes its record just after taking the lock: how long a locked-out reader waits for one to appear.
RECORD_GRACE_SECONDS = 2.0


@dataclass(frozen=True)
class OwnerRecord:
    """What `owner.json` holds."""

    pid: int
    address: str
    token: str
    started: str
    command: str = ""

    @property
    def headers(self) -> dict[str, str]:
        """The request headers a client of this owner sends."""
        return {TOKEN_HEADER: f"Bearer {self.token}"}


def owner_path(settings: Any) -> Path:
    """Where a data folder's owner record lives."""
    return Path(settings.data_dir) / OWNER_FILE


def uses_owner(settings: Any) -> bool:
    """Whether the index is embedded (one process at a time): a Qdrant server needs no owner."""
    return not settings.store.url


def new_token() -> str:
    """A random token for an owner's routes."""
    return secrets.token_urlsafe(32)


def new_record(address: str, token: str, command: str) -> OwnerRecord:
    """A record for this process."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return OwnerRecord(pid=os.getpid(), address=address, token=token, started=started, command=command)


def write(path: Path, record: OwnerRecord) -> None:
    """
    Write the record atomically, readable by its user only (mode 0600: it holds the token).

    :param path: The record's file.
    :param record: What to write.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".owner-", suffix=".json")
    try:
        os.fchmod(handle, 0o600)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(asdict(record), out)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(path: Path) -> OwnerRecord | None:
    """
    The record, or `None` when there is none; a malformed one is removed (nobody can use it).

    :param path: The record's file.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return OwnerRecord(**{k: data[k] for k in ("pid", "address", "token", "started")}, command=data.get("command", ""))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        logger.warning("Removing the unreadable owner record %s: %s", path, error)
        path.unlink(missing_ok=True)
        return None


def remove(path: Path, pid: int | None = None) -> None:
    """
    Remove the record; with `pid`, only when it is that process's (an owner never removes another's).

    :param path: The record's file.
    :param pid: The owner whose record to remove.
    """
    if pid is not None:
        record = read(path)
        if record is None or record.pid != pid:
            return
    path.unlink(missing_ok=True)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def answers(record: OwnerRecord, timeout: float = 2.0) -> bool:
    """Whether the owner's routes answer its token (a reused pid or a half-started owner does not)."""
    import httpx

    try:
        response = httpx.get(f"{record.address}/status", headers=record.headers, timeout=timeout)
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def live_owner(settings: Any) -> OwnerRecord | None:
    """
    The owner that answers now, if any; a record whose process is gone is removed.

    :param settings: Needle's settings (the data folder, and the store: a Qdrant server has no owner).
    :returns: The record of a live, answering owner, else `None`. A record is removed when its process is
        gone, or when it does not answer and nobody holds the index (its pid now names another program).
    """
    if not uses_owner(settings):
        return None
    path = owner_path(settings)
    record = read(path)
    if record is None:
        return None
    if record.pid == os.getpid():
        return None
    if not pid_alive(record.pid):
        logger.info("Removing the stale owner record of process %s", record.pid)
        remove(path, record.pid)
        return None
    if answers(record):
        return record
    if not index_locked(settings):  # an owner holds the lock before it writes its record: this one is stale
        logger.info("Removing the owner record of process %s, which holds no index", record.pid)
        remove(path, record.pid)
    return None


def index_locked(settings: Any) -> bool:
    """Whether some process holds the embedded index's lock now (probed without keeping it)."""
    import fcntl

    from needle.document_stores.edge import LOCK_FILE_NAME

    lock = Path(settings.index_dir) / "edge" / LOCK_FILE_NAME
    try:
        fd = os.open(lock, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def wait_for_owner(settings: Any, timeout: float) -> OwnerRecord | None:
    """
    Wait for a starting owner to answer: the index is locked and a record names a live process.

    :param settings: Needle's settings.
    :param timeout: Seconds to wait at most.
    :returns: The answering owner, or `None` when no live record appears or it did not answer in time.
    """
    if not uses_owner(settings):
        return None
    path = owner_path(settings)
    started = time.monotonic()
    while True:
        record = read(path)
        if record is not None and record.pid != os.getpid() and not pid_alive(record.pid):
            remove(path, record.pid)
            record = None
        if record is not None and answers(record):
            return record
        waited = time.monotonic() - started
        # No record: the lock's holder is no owner (a `needle index` under way), unless one is writing it now.
        if waited >= timeout or (record is None and waited >= RECORD_GRACE_SECONDS):
            return None
        time.sleep(0.25)


class IndexOwnedError(RuntimeError):
    """Another process owns the embedded index and answers at its address: a second owner cannot start."""


def refuse_second_owner(settings: Any) -> None:
    """
    :raises IndexOwnedError: When a live owner answers for this data folder.
    """
    existing = live_owner(settings)
    if existing is not None:
        raise IndexOwnedError(
            f"the index is already open in process {existing.pid} (needle {existing.command or 'serve'}, "
            f"{existing.address}): stop it first; other needle commands run through it meanwhile"
        )


def hold_index(needle: Any, wait: float = 10.0) -> None:
    """
    Open the embedded index (and take its lock) for an owner; a short command holding it is waited for.

    :param needle: The owner's `Needle`.
    :param wait: Seconds to wait for another process to let go of the index.
    :raises StoreLockedError: When the index is still held after `wait` seconds.
    """
    from needle.errors import is_lock_error

    deadline = time.monotonic() + wait
    while True:
        try:
            needle.store.count_documents()
            return
        except Exception as error:
            if not is_lock_error(error) or time.monotonic() >= deadline:
                raise
            time.sleep(0.2)


def loopback_socket() -> socket.socket:
    """A socket bound to 127.0.0.1 on a free port, for an owner's routes."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


__all__ = [
    "IndexOwnedError", "OWNER_FILE", "hold_index", "index_locked", "refuse_second_owner", "OwnerRecord", "answers", "live_owner", "loopback_socket", "new_record", "new_token", "owner_path",
    "pid_alive", "read", "remove", "uses_owner", "wait_for_owner", "write",
]
