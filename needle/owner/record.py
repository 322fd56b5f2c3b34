"""The owner record: which process holds the embedded index, and how other `needle` commands reach it safely.

Qdrant Edge serves one process at a time. The process that holds the index (`needle serve`, `needle mcp`,
`needle watch`, or a background owner a command started) takes its lock, then writes
`<data_dir>/owner.json` with its pid, the pid's start time, the loopback address of its routes and a
secret token, readable by its user only, and removes it on exit. Other commands talk to it only once it
proves itself (`connect`):

- the record is the user's own file and nobody else may read or write it (mode 0600), else it is refused;
- the address is a loopback one (127.0.0.0/8, ::1), else it is refused;
- the pid runs, started when the record says, and holds the index's lock (`/proc/locks`);
- the listener answers a fresh challenge with an HMAC of it under the record's token (`GET /needle/hello`),
  before the token is sent anywhere: an impostor listening on a reused port cannot.

A record is removed only when its process is gone or no longer holds the lock (a reused pid); a garbled or
refused record whose process holds the lock stays, so a live owner is never locked out of its own record.
Every connection has a connect and a read timeout (`OwnerSilentError` names the pid and what to do).
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import stat
import time

# `hmac.compare_digest` itself (a comparison in constant time), without `hmac`, which loads OpenSSL's library
from _operator import _compare_digest as compare_digest
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from needle.owner.wire import Connection


def _log(level: str, message: str, *args: Any) -> None:
    """Log through `logging`, imported only then: a command sent to an owner reads its record without it."""
    import logging

    getattr(logging.getLogger(__name__), level)(message, *args)


OWNER_FILE = "owner.json"
TOKEN_HEADER = "Authorization"
HELLO_PATH = "/needle/hello"
# The index's lock file (`haystack_integrations.document_stores.needle.edge.shards.LOCK_FILE_NAME`, spelled here so that reading a
# record does not import the store).
LOCK_FILE = ".edge_document_store.lock"
# An owner writes its record just after taking the lock: how long a locked-out reader waits for one to appear.
RECORD_GRACE_SECONDS = 2.0
CONNECT_TIMEOUT = 2.0
# The longest owner record read (a few hundred bytes).
MAX_RECORD = 65_536
# The longest answer to the challenge (a pid and a hex digest: well under a hundred bytes).
MAX_HELLO = 4096


class UntrustedOwnerError(ConnectionError):
    """The owner record, or the listener it names, failed a check: nothing is sent there."""


class OwnerSilentError(ConnectionError):
    """The owner took no connection, or stopped answering within the timeout."""


class OwnerLoadingError(OwnerSilentError):
    """The owner's address takes no connection yet: it is still loading its routes (its record comes first)."""


class TookOver(Exception):
    """
    This process took the index over from an owner that went away (a second `needle mcp`): the request that
    met the closed connection runs again on this process's own `Needle` (`needle.shells.http.endpoints.call`).
    """


class OwnerRecord(NamedTuple):
    """What `owner.json` holds (a named tuple: `dataclasses` costs a client's start-up more than its request)."""

    pid: int
    address: str
    token: str
    started: str
    command: str = ""
    # The pid's start time in clock ticks since boot (`/proc/PID/stat` field 22): a reused pid has another.
    pid_start: int = 0
    # The code the owner runs (`needle.owner.code_stamp.code_stamp`); empty in a record written before stamps existed.
    code: str = ""

    @property
    def headers(self) -> dict[str, str]:
        """The request headers a client of this owner sends."""
        return {TOKEN_HEADER: f"Bearer {self.token}"}


def owner_path(settings: Any) -> Path:
    """Where a data folder's owner record lives."""
    return Path(settings.data_dir) / OWNER_FILE


def uses_owner(settings: Any) -> bool:
    """Whether the index is embedded (one process at a time): a Qdrant server needs no owner."""
    store = getattr(settings, "store", None)
    return not (store.url if store is not None else settings.store_url)


def new_token() -> str:
    """A random token for an owner's routes."""
    import secrets

    return secrets.token_urlsafe(32)


def new_record(address: str, token: str, command: str) -> OwnerRecord:
    """A record for this process."""
    from datetime import datetime, timezone

    from needle.owner.code_stamp import code_stamp

    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    pid = os.getpid()
    return OwnerRecord(
        pid=pid,
        address=address,
        token=token,
        started=started,
        command=command,
        pid_start=pid_start(pid),
        code=code_stamp(),
    )


def proof(token: str, nonce: str, pid: int) -> str:
    """What an owner answers a challenge with: an HMAC of the nonce and its pid under its token."""
    from needle.owner.code_stamp import hmac_sha256

    return hmac_sha256(token.encode(), f"{nonce}:{pid}".encode())


def write(path: Path, record: OwnerRecord) -> None:
    """
    Write the record atomically, readable by its user only (mode 0600: it holds the token).

    :param path: The record's file.
    :param record: What to write.
    """
    from needle.core.atomic import write_atomic  # tempfile: not on a client's way

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(record._asdict()), mode=0o600)


def _refused(path: Path, info: os.stat_result) -> UntrustedOwnerError:
    return UntrustedOwnerError(
        f"refusing the owner record {path}: it must be a file of your own that only you can read and write "
        f"(it is mode {stat.S_IMODE(info.st_mode):o}, owner uid {info.st_uid}); remove it if you did not make it"
    )


class DataFolderError(ConnectionError):
    """The data folder is not a folder this user can read and write: nothing can run there."""


def check_folder(folder: Path) -> None:
    """
    :raises DataFolderError: When the data folder is not a folder, or this user cannot read and write it.
    :raises UntrustedOwnerError: When the data folder is another user's, or others may write it: they could
        put a record of their own (or a link) where this user's owner record goes.
    """
    fix = f"set NEEDLE_DATA_DIR (or data_dir in the configuration) to a folder of your own, or fix {folder}"
    try:
        info = os.stat(folder)
    except FileNotFoundError:
        return  # made by the first command that writes there
    except OSError as error:
        raise DataFolderError(f"the data folder {folder} cannot be used ({error.strerror}): {fix}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise DataFolderError(f"the data folder {folder} is not a folder: {fix}")
    if not os.access(folder, os.R_OK | os.W_OK | os.X_OK):
        raise DataFolderError(
            f"the data folder {folder} is not readable and writable by you: run `chmod u+rwx {folder}`, or {fix}"
        )
    others_write = info.st_mode & 0o002 or (info.st_mode & 0o020 and info.st_gid != os.getgid())
    if info.st_uid != os.getuid() or others_write:
        raise UntrustedOwnerError(
            f"refusing the data folder {folder}: other users can write it (mode {stat.S_IMODE(info.st_mode):o}, "
            f"owner uid {info.st_uid}); run `chmod go-w {folder}` or set NEEDLE_DATA_DIR to a folder of your own"
        )


def check_private(path: Path) -> None:
    """
    :raises UntrustedOwnerError: When the data folder others may write, or the record is not the user's own
        file or others may read or write it.
    """
    check_folder(path.parent)
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise _refused(path, info)


def _read_private(path: Path) -> bytes:
    """
    The record's bytes, read from a file opened without following links and checked once open (its owner and
    mode are those of the file read, whatever was swapped in at its path meanwhile).

    :raises FileNotFoundError: When there is none.
    :raises UntrustedOwnerError: When it is a link, not a regular file, not the user's own, or others may use it.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        if isinstance(error, FileNotFoundError):
            raise
        import errno

        if error.errno == errno.ELOOP:
            raise _refused(path, path.lstat()) from None
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise _refused(path, info)
        data = handle.read(MAX_RECORD + 1)
    if len(data) > MAX_RECORD:
        raise ValueError(f"longer than {MAX_RECORD} bytes")
    return data


def read(path: Path) -> OwnerRecord | None:
    """
    The record, or `None` when there is none or it cannot be read (it is left where it is).

    :param path: The record's file.
    :raises UntrustedOwnerError: When the data folder others may write, or the file is not private to the user.
    """
    check_private(path)
    try:
        data = json.loads(_read_private(path))
        fields = {k: data[k] for k in ("pid", "address", "token", "started")}
        record = OwnerRecord(
            **fields,
            command=data.get("command", ""),
            pid_start=int(data.get("pid_start", 0)),
            code=str(data.get("code", "")),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        _log("warning", "Cannot read the owner record %s: %s", path, error)
        return None
    if not isinstance(record.pid, int) or not isinstance(record.token, str) or not isinstance(record.address, str):
        _log("warning", "Cannot read the owner record %s: a field has the wrong type", path)
        return None
    return record


def remove(path: Path, pid: int | None = None) -> None:
    """
    Remove the record; with `pid`, only when it is that process's (an owner never removes another's).

    :param path: The record's file.
    :param pid: The owner whose record to remove.
    """
    if pid is not None:
        try:
            record = read(path)
        except UntrustedOwnerError:
            return
        if record is None or record.pid != pid:
            return
    path.unlink(missing_ok=True)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def pid_start(pid: int) -> int:
    """The process's start time in clock ticks since boot; 0 where `/proc` does not tell."""
    fields = _stat_fields(pid)
    try:
        return int(fields[19]) if fields else 0
    except (IndexError, ValueError):
        return 0


def pid_stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP, a debugger)."""
    fields = _stat_fields(pid)
    return fields is not None and bool(fields) and fields[0] in ("T", "t")


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = _stat_fields(pid)
    return not fields or fields[0] != "Z"


def same_process(record: OwnerRecord) -> bool:
    """
    Whether the record's pid runs and is the process that wrote it: its start time matches (a record without
    one is believed only where `/proc` cannot tell either).
    """
    if not pid_alive(record.pid):
        return False
    return pid_start(record.pid) in (0, record.pid_start)


def lock_path(settings: Any) -> Path:
    """The embedded index's lock file."""
    return Path(settings.data_dir) / "index" / "edge" / LOCK_FILE


def lock_holders(settings: Any) -> set[int] | None:
    """The pids holding the index's lock (from `/proc/locks`); `None` where that cannot be read."""
    try:
        info = os.stat(lock_path(settings))
        device = (os.major(info.st_dev), os.minor(info.st_dev), info.st_ino)
    except FileNotFoundError:
        return set()
    except OSError:
        return None
    try:
        with open("/proc/locks", encoding="ascii") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    holders = set()
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiting lock has "->" after the number.
        if "->" in parts or len(parts) < 6:
            continue
        try:
            major, minor, inode = parts[5].split(":")
            if (int(major, 16), int(minor, 16), int(inode)) == device:
                holders.add(int(parts[4]))
        except (IndexError, ValueError):
            continue
    return holders


def holds_lock(settings: Any, pid: int) -> bool:
    """Whether `pid` holds the index's lock (where `/proc/locks` cannot tell: whether anyone does)."""
    holders = lock_holders(settings)
    return index_locked(settings) if holders is None else pid in holders


def check_address(record: OwnerRecord) -> tuple[str, int]:
    """
    :returns: The host and port of the record's address.
    :raises UntrustedOwnerError: When it is not `http://` on a loopback IP address.
    """
    try:
        parts = urlsplit(record.address)
        host, port = parts.hostname or "", parts.port
        if parts.scheme == "http" and port and ipaddress.ip_address(host).is_loopback:
            return host, port
    except ValueError:
        pass
    raise UntrustedOwnerError(
        f"refusing the owner record's address {record.address!r} (process {record.pid}): needle commands talk only to "
        "an owner on this machine's loopback address"
    )


def connect(record: OwnerRecord, timeout: float = CONNECT_TIMEOUT, read_timeout: float | None = None) -> Connection:
    """
    A connection to the owner, after it proved it knows the record's token (nothing secret was sent yet).

    :param record: The owner to reach.
    :param timeout: Seconds to connect and to answer the challenge.
    :param read_timeout: Seconds the returned connection waits for each answer (default: `timeout`).
    :returns: The open, verified connection; requests on it go to the same process.
    :raises UntrustedOwnerError: When the address is not loopback or the listener fails the challenge.
    :raises OwnerSilentError: When nothing takes the connection or answers within `timeout`.
    """
    from needle.owner.wire import Connection, WireError

    host, port = check_address(record)
    nonce = os.urandom(16).hex()
    connection: Connection | None = None
    try:
        connection = Connection(host, port, timeout=timeout)
        connection.deadline(timeout)  # the whole answer within the timeout, however it trickles in
        connection.request("GET", f"{HELLO_PATH}?nonce={nonce}")
        response = connection.getresponse()
        body = response.read(limit=MAX_HELLO)
        connection.deadline(None)
    except WireError:
        if connection is not None:
            connection.close()
        raise UntrustedOwnerError(
            f"the listener at {record.address} is not the needle owner its record names (pid {record.pid}): "
            "its answer to the challenge is not one; refusing to send it anything"
        ) from None
    except ConnectionRefusedError:
        raise OwnerLoadingError(f"the owner (pid {record.pid}, {record.address}) does not listen yet") from None
    except OSError as error:
        if connection is not None:
            connection.close()
        raise OwnerSilentError(
            f"the owner (pid {record.pid}, {record.address}) did not answer: {error or type(error).__name__}"
        ) from None
    try:
        answer = json.loads(body)
        proven = (
            response.status == 200
            and answer.get("pid") == record.pid
            and compare_digest(str(answer.get("proof", "")), proof(record.token, nonce, record.pid))
        )
    except (ValueError, AttributeError):
        proven = False
    if not proven:
        connection.close()
        raise UntrustedOwnerError(
            f"the listener at {record.address} is not the needle owner its record names (pid {record.pid}): "
            "refusing to send it anything"
        )
    connection.set_timeout(read_timeout or timeout)
    return connection


def answers(record: OwnerRecord, timeout: float = 2.0) -> bool:
    """Whether the owner's routes answer its challenge (a reused pid, a half-started owner or an impostor do not)."""
    try:
        connect(record, timeout).close()
    except ConnectionError:
        return False
    return True


def live_owner(settings: Any) -> OwnerRecord | None:
    """
    The owner that proves itself now, if any; a record whose process is gone is removed.

    :param settings: Needle's settings (`needle.core.settings.Settings` or `needle.owner.locate.Location`).
    :returns: The record of a live, verified owner, else `None`. A record is removed when its process is gone
        or no longer holds the index (its pid now names another program), never while it holds it.
    :raises UntrustedOwnerError: When the record is not private to the user, names a non-loopback address, or
        its process holds the index but the listener at its address fails the challenge.
    """
    if not uses_owner(settings):
        return None
    path = owner_path(settings)
    record = read(path)
    if record is None or record.pid == os.getpid():
        return None
    if not same_process(record) or not holds_lock(settings, record.pid):
        _log("info", "Removing the stale owner record of process %s", record.pid)
        remove(path, record.pid)
        return None
    return record if answering(record, settings) else None  # one still loading: `wait_for_owner` waits for it


def answer_timeout(settings: Any) -> float:
    """`owner.answer_timeout` of full settings or of a `Location`."""
    owner = getattr(settings, "owner", settings)
    return float(getattr(owner, "answer_timeout", 10.0))


def stopped_message(record: OwnerRecord) -> str:
    """One line for an owner that is stopped (SIGSTOP, a debugger): its pid and how to resume or stop it."""
    return (
        f"the owner (pid {record.pid}) holds the index but is stopped: `kill -CONT {record.pid}` resumes it "
        f"(or `kill -9 {record.pid}` ends it)"
    )


def answering(record: OwnerRecord, settings: Any) -> bool:
    """
    Whether the live owner of `record` answers its challenge, within `owner.answer_timeout` seconds at most.

    An owner that does not listen yet is loading its routes (it writes its record first): `False`. One whose
    address takes the connection but does not answer (its process stopped, or its event loop hung) is
    reported: a stopped one at once, another once it was silent for `owner.answer_timeout` seconds.

    :returns: `True` when it proved itself, `False` when it is loading or went away.
    :raises OwnerSilentError: When it is stopped, or silent for `owner.answer_timeout` seconds.
    :raises UntrustedOwnerError: When the listener fails the challenge.
    """
    wait = answer_timeout(settings)
    deadline = time.monotonic() + wait
    while True:
        if pid_stopped(record.pid):
            raise OwnerSilentError(stopped_message(record))
        try:
            connect(record, timeout=max(0.1, min(CONNECT_TIMEOUT, deadline - time.monotonic()))).close()
            return True
        except OwnerLoadingError:
            return False
        except OwnerSilentError:
            if not same_process(record):
                return False
            if pid_stopped(record.pid):
                raise OwnerSilentError(stopped_message(record)) from None
            if time.monotonic() >= deadline:
                raise OwnerSilentError(
                    f"the owner (pid {record.pid}) holds the index but has not answered for {wait:g} s: "
                    f"`kill {record.pid}` stops it (a debugger or a hung process may hold it)"
                ) from None


def index_locked(settings: Any) -> bool:
    """Whether some process holds the embedded index's lock now (probed without keeping it)."""
    import fcntl

    try:
        fd = os.open(lock_path(settings), os.O_RDONLY)
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
    :raises UntrustedOwnerError: As `live_owner`.
    :raises OwnerSilentError: When the owner is stopped, or holds its address without answering (`answering`).
    """
    if not uses_owner(settings):
        return None
    path = owner_path(settings)
    started = time.monotonic()
    while True:
        record = read(path)
        if record is not None and record.pid != os.getpid() and not same_process(record):
            remove(path, record.pid)
            record = None
        if record is not None and answering(record, settings):
            return record
        waited = time.monotonic() - started
        # No record: the lock's holder is no owner (a `needle index` under way), unless one is writing it now.
        if waited >= timeout or (record is None and waited >= RECORD_GRACE_SECONDS):
            return None
        time.sleep(0.1)


class IndexOwnedError(RuntimeError):
    """Another process owns the embedded index and answers at its address: a second owner cannot start."""


BACKGROUND = "background"


def stop_owner(record: OwnerRecord, timeout: float = 30.0) -> bool:
    """
    Ask a verified owner to exit (SIGTERM: it stops its routes and removes its record) and wait for it.

    :returns: Whether it exited within `timeout` seconds.
    """
    import signal

    try:
        os.kill(record.pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout
    while same_process(record):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def refuse_second_owner(settings: Any) -> None:
    """
    Make way for a process that will own the index: a background owner (started by a command) is asked to
    exit, any other live owner is a refusal.

    :raises IndexOwnedError: When a live owner that is not a background one answers for this data folder.
    """
    existing = live_owner(settings)
    if existing is not None and existing.command == BACKGROUND and stop_owner(existing):
        _log("info", "Took the index over from the background owner (process %s)", existing.pid)
        return
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
    from needle.core.errors import is_lock_error

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
    "BACKGROUND",
    "HELLO_PATH",
    "OWNER_FILE",
    "DataFolderError",
    "IndexOwnedError",
    "OwnerLoadingError",
    "OwnerRecord",
    "OwnerSilentError",
    "TookOver",
    "UntrustedOwnerError",
    "answer_timeout",
    "answering",
    "answers",
    "check_folder",
    "check_private",
    "connect",
    "hold_index",
    "holds_lock",
    "index_locked",
    "live_owner",
    "lock_holders",
    "loopback_socket",
    "new_record",
    "new_token",
    "owner_path",
    "pid_alive",
    "pid_start",
    "pid_stopped",
    "proof",
    "read",
    "refuse_second_owner",
    "remove",
    "same_process",
    "stop_owner",
    "stopped_message",
    "uses_owner",
    "wait_for_owner",
    "write",
]
