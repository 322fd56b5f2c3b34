"""Opening, locking and closing the folder of one Qdrant Edge shard.

Qdrant Edge serves a folder to one open shard at a time, and Needle hands one store object per folder to
every component of a process. The store owns its shard: `open_shard` creates the folder when missing, takes
an exclusive lock on it and opens (or creates) the shard; `OpenShard.close` flushes, closes and unlocks. The
lock is `flock` on a file in the folder: held per open file, so a second store object on the folder, in this
process or in another, gets a `StoreLockedError` naming the folder and, for another process, its pid.

A shard still open when the interpreter exits is closed then (each open shard registers its own `atexit`
call). A forked child inherits the open shards, and the exit calls, but they stay the parent's: an open
shard remembers the process that opened it, and in any other process closing it only closes that process's
copy of the lock file, which leaves the parent's lock (and its engine) alone. A store used in the child
opens a shard of its own, and finds the folder locked while the parent holds it.

Opening guards against what would kill the process: a disk too full to write through the engine's memory
maps (`needle.core.disk`), and damage on which the engine aborts. A shard closed cleanly is sealed (`seal.py`);
a folder that is not as sealed is first opened in a child process (`probe.py`), and a crash there is an
`IndexDamagedError`, not the end of the command.
"""

import atexit
import errno
import fcntl
import itertools
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

import qdrant_edge as qe
from haystack import logging

from haystack_integrations.document_stores.needle.edge.payload_cache import PayloadCache
from haystack_integrations.document_stores.needle.edge.probe import probe
from haystack_integrations.document_stores.needle.edge.seal import SEAL_FILE_NAME, is_sealed, seal, unseal
from haystack_integrations.document_stores.needle.protocol import IndexDamagedError
from needle.core.disk import ensure_space

logger = logging.getLogger(__name__)

LOCK_FILE_NAME = ".edge_document_store.lock"
# When `open_shard` opens a folder in a child process first (see there).
PROBE_MODES = ("changed", "open", "read")
# Numbers each opening of a shard in this process (`OpenShard.opening`).
_OPENINGS = itertools.count(1)
# Files in a shard's folder that are Needle's, not the engine's.
_NOT_THE_SHARDS = frozenset({LOCK_FILE_NAME})


class StoreLockedError(RuntimeError):
    """The store folder is open in another process, or by another store object of this process."""

    def __init__(self, path: str, pid: str | None) -> None:
        """
        Describe which folder is held, by whom, and the ways out, in one line.

        :param path: The store folder.
        :param pid: The id of the process holding it, when known.
        """
        if pid == str(os.getpid()):
            where = "this process, by another EdgeDocumentStore object"
            advice = "give every component of the process the same store object (NeedleDocumentStore does)"
        else:
            command = _command_of(pid)
            where = f"process {pid}" if pid else "another process"
            where += f" ({command})" if command else ""
            if command and command.startswith("needle"):
                advice = (
                    "run through it: `needle` commands do, and a graph of your own with `needle query --pipeline "
                    "FILE`; or stop it (`needle owner stop`), or point every process at a Qdrant server (store.url)"
                )
            else:
                advice = (
                    "stop that process, or serve from one process (`needle serve`, which every `needle` command "
                    "then goes through), or point every process at a Qdrant server (store.url)"
                )
        super().__init__(
            f"the index at {path} is already open in {where}. Qdrant Edge serves one process at a time: {advice}."
        )
        self.path = path
        self.pid = pid


def _command_of(pid: str | None) -> str | None:
    """
    What a process runs, shortly (`needle owner`, `hayhooks run`, `python script.py`), read from `/proc`; `None`
    where that cannot be read (another system, a process gone).
    """
    if not pid or not pid.isdigit():
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            args = [a.decode("utf-8", "replace") for a in handle.read().split(b"\0") if a]
    except OSError:
        return None
    names = [os.path.basename(a) for a in args]
    for i, name in enumerate(names):
        if name in ("needle", "hayhooks") or (name == "-m" and i + 1 < len(args) and args[i + 1].startswith("needle")):
            program = "needle" if name == "-m" else name
            rest = [a for a in args[i + (2 if name == "-m" else 1) :] if not a.startswith("-")][:1]
            return " ".join([program, *rest])
    return " ".join(names[:2]) or None


class OpenShard:
    """One open Edge shard (`shard`) and the lock on its folder, owned by one store object."""

    def __init__(self, path: str, shard: Any, lock_fd: int) -> None:
        """
        Take ownership of an open shard and its folder lock; both are released by `close()`.

        :param path: The folder's real path.
        :param shard: The engine's `EdgeShard`.
        :param lock_fd: The locked lock file.
        """
        self.path = path
        self.shard = shard
        # Documents searches read, emptied around every write (`update`, `recreate`); its generation
        # and this opening's number change with every write in this process, the only one that may write
        # while the folder is locked (`EdgeDocumentStore.changes`).
        self.payloads = PayloadCache()
        self.opening = next(_OPENINGS)
        self.pid = os.getpid()
        # Serialises writers (duplicate checks must not interleave with other writes); readers never take it.
        self.write_lock = threading.RLock()
        self._lock_fd: int | None = lock_fd
        atexit.register(self.close)

    @property
    def closed(self) -> bool:
        """Whether `close()` ran: the shard is flushed and closed, the folder unlocked."""
        return self._lock_fd is None

    @property
    def inherited(self) -> bool:
        """Whether this process got the shard through `fork()` (it is the parent's, not ours)."""
        return self.pid != os.getpid()

    def update(self, operation: Any) -> None:
        """
        Apply one write (`qdrant_edge.UpdateOperation`) to the shard; the documents searches kept are
        forgotten before and after it (`PayloadCache`). Every write to the shard comes through here.
        """
        self.payloads.invalidate()
        try:
            self.shard.update(operation)
        finally:
            self.payloads.invalidate()

    def recreate(self, config: Any) -> None:
        """
        Drop the shard's files (keeping the lock file, and so the lock) and create an empty shard in their place.

        :param config: The engine configuration of the new shard.
        """
        with self.write_lock:
            self.payloads.invalidate()
            try:
                self.shard.close()
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as error:  # a damaged shard may fail to close; its files go anyway
                logger.warning("Closing the index at {path} failed: {error}", path=self.path, error=error)
            for entry in os.listdir(self.path):
                if entry == LOCK_FILE_NAME:
                    continue
                full = os.path.join(self.path, entry)
                if os.path.isdir(full) and not os.path.islink(full):
                    shutil.rmtree(full)
                else:
                    os.remove(full)
            self.shard = qe.EdgeShard.create(self.path, config)
            self.payloads.invalidate()

    def close(self) -> None:
        """
        Flush and close the shard and unlock the folder; a second call does nothing.

        In a forked child it only closes the child's copy of the lock file: the lock stays with the parent,
        which took it, and the engine is left to the parent.
        """
        atexit.unregister(self.close)
        fd, self._lock_fd = self._lock_fd, None
        if fd is None:
            return
        if self.inherited:
            with suppress(OSError):
                os.close(fd)
            return
        try:
            with self.write_lock:
                self.shard.flush()
                self.shard.close()
        except Exception as error:  # the folder must be unlocked even when the engine fails
            if os.path.isdir(self.path):
                logger.warning("Closing {path} failed: {error}", path=self.path, error=error)
            else:  # the folder was deleted while open: nothing is left to flush or to warn about
                logger.debug("Closing {path}: its folder is gone", path=self.path)
        else:
            seal(self.path, _NOT_THE_SHARDS)
        finally:
            _unlock_folder(fd)
        logger.info("Closed the index at {path}", path=self.path)


def open_shard(path: str, config: Any, probe_mode: str = "changed") -> OpenShard:
    """
    Open the shard in `path` (created with `config` when the folder holds none), locking the folder.

    A folder that is not as its last clean close left it is opened in a child process first, so that damage
    on which the engine aborts is reported instead of killing this process.

    :param path: The store folder; created when missing.
    :param config: The engine configuration (`qdrant_edge.EdgeConfig`).
    :param probe_mode: When to open the folder in a child process first: `changed` (not as sealed at its last
        clean close), `open` (always), `read` (always, and read every point there too).
    :returns: The open shard, owned by the caller.
    :raises StoreLockedError: When the folder is open in another process or by another store object.
    :raises DiskFullError: When the disk holding the folder is too full to open it safely.
    :raises ValueError: When the folder's shard was built with an incompatible configuration.
    :raises IndexDamagedError: When the engine cannot read the shard's files, or crashed opening them.
    """
    real = os.path.realpath(os.path.expanduser(path))
    ensure_space(os.path.dirname(real))
    os.makedirs(real, exist_ok=True)
    lock_fd = _lock_folder(real)
    try:
        sealed = unseal(real, _NOT_THE_SHARDS)
        if probe_mode not in PROBE_MODES:
            raise ValueError(f"probe_mode must be one of {', '.join(PROBE_MODES)}, got {probe_mode!r}")
        if _has_data(real) and (probe_mode != "changed" or not sealed):
            logger.info("Opening {path} in a child process first ({mode})", path=real, mode=probe_mode)
            failure = probe(real, read_all=probe_mode == "read")
            if failure is not None:
                raise IndexDamagedError(real, failure)
        shard = _open_or_create(real, config)
    except BaseException:
        _unlock_folder(lock_fd)
        raise
    return OpenShard(real, shard, lock_fd)


def check_unopened(path: str) -> None:
    """
    Find damage the engine would abort on without opening the shard in this process (for `status`, which
    answers from the index run's records and never opens the shard).

    A folder as its last clean close sealed it passes with a walk over its files' sizes and times; another is
    opened in a child process (and sealed when that child opened it); a folder another process holds open is
    that process's to report.

    :param path: The store folder.
    :raises IndexDamagedError: When the engine crashed or failed opening the shard in the child.
    """
    real = os.path.realpath(os.path.expanduser(path))
    if not os.path.isdir(real) or not _has_data(real):
        return
    try:
        lock_fd = _lock_folder(real)
    except StoreLockedError:
        return
    try:
        if is_sealed(real, _NOT_THE_SHARDS):
            return
        failure = probe(real)
        if failure is not None:
            raise IndexDamagedError(real, failure)
        seal(real, _NOT_THE_SHARDS)  # it opens: the next status pays the walk only
    finally:
        _unlock_folder(lock_fd)


def copy_shard(source: str, target: str) -> None:
    """
    Copy a shard's folder (its segments, write-ahead log and configuration; not the lock file) to a new folder.

    The caller makes the copy consistent: the shard is flushed and its writers wait (`writes_paused()`).

    :param source: The shard's folder.
    :param target: A folder that does not exist yet.
    :raises FileExistsError: When `target` exists.
    """
    shutil.copytree(
        source,
        target,
        ignore=shutil.ignore_patterns(LOCK_FILE_NAME, SEAL_FILE_NAME),
        symlinks=True,
        copy_function=copy_keeping_holes,
    )


_BLOCK = 1 << 20


def copy_keeping_holes(source: str, target: str) -> str:
    """
    Copy a file, its mode and times, writing only the byte ranges the source holds on disk.

    The engine keeps its storage pages and write-ahead log in 32 MB files that are mostly holes; `shutil.copy2`
    writes them whole (it uses `sendfile`, which reads holes as zeros), so a backup of an index of a few
    megabytes took 268 MB a store. Here the data ranges are found with `SEEK_DATA`/`SEEK_HOLE` and copied, and
    the file is extended to its size, which leaves the rest a hole again. Where the file system cannot say
    (no `SEEK_DATA`), the file is copied whole.

    :param source: The file to copy.
    :param target: Where to write the copy (replaced when it exists).
    :returns: `target`, as `shutil.copytree` expects of its copy function.
    """
    with open(source, "rb") as reader, open(target, "wb") as writer:
        size = os.fstat(reader.fileno()).st_size
        try:
            ranges = list(_data_ranges(reader.fileno(), size))
        except OSError:
            ranges = [(0, size)]  # no hole support: every byte is data
        for start, end in ranges:
            offset = start
            while offset < end:
                block = os.pread(reader.fileno(), min(_BLOCK, end - offset), offset)
                if not block:
                    break
                os.pwrite(writer.fileno(), block, offset)
                offset += len(block)
        writer.truncate(size)
    shutil.copystat(source, target)
    return target


def _data_ranges(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each stretch of a file that holds data, in order; raises OSError without hole support."""
    if not hasattr(os, "SEEK_DATA"):
        raise OSError("no SEEK_DATA on this platform")
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as error:
            if error.errno == errno.ENXIO:  # only a hole is left
                return
            raise
        end = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, min(end, size)
        offset = end


def replace_shard(source: str, path: str) -> None:
    """
    Put a copy of the shard in `source` in place of the shard in `path`, which no store may hold open.

    The copy is made beside `path` first and swapped in by renames, so a failure leaves the old shard in place.

    :param source: A shard's folder (a backup).
    :param path: The store's folder; created when missing.
    :raises StoreLockedError: When the folder is open in this or another process.
    """
    real = os.path.realpath(os.path.expanduser(path))
    os.makedirs(real, exist_ok=True)
    lock_fd = _lock_folder(real)
    incoming, outgoing = f"{real}.restoring", f"{real}.replaced"
    try:
        for leftover in (incoming, outgoing):
            shutil.rmtree(leftover, ignore_errors=True)
        copy_shard(source, incoming)
        os.rename(real, outgoing)
        os.rename(incoming, real)
    except BaseException:
        shutil.rmtree(incoming, ignore_errors=True)
        if not os.path.exists(real) and os.path.exists(outgoing):
            os.rename(outgoing, real)
        raise
    finally:
        _unlock_folder(lock_fd)
    shutil.rmtree(outgoing, ignore_errors=True)
    logger.info("Restored the index at {path} from {source}", path=real, source=source)


def _has_data(path: str) -> bool:
    """Whether the folder holds a shard (its configuration or any segment)."""
    segments = os.path.join(path, "segments")
    return os.path.exists(os.path.join(path, "edge_config.json")) or (
        os.path.isdir(segments) and bool(os.listdir(segments))
    )


def _open_or_create(path: str, config: Any) -> Any:
    try:
        if _has_data(path):
            shard = qe.EdgeShard.load(path, config)
            logger.info("Opened the index at {path}", path=path)
        else:
            shard = qe.EdgeShard.create(path, config)
            logger.info("Created an index at {path}", path=path)
        return shard
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # the engine's panics derive from BaseException
        message = str(error)
        if "WouldBlock" in message:
            raise StoreLockedError(path, None) from error
        if "incompatible" in message.lower():
            raise ValueError(f"the index at {path} was built with another configuration: {message}") from error
        raise IndexDamagedError(path, f"cannot open it: {message}") from error


def set_aside(path: str) -> str:
    """
    Move a damaged shard's folder aside (`<folder>.damaged-<time>`), so that a new shard can take its place.

    :param path: The store's folder, which no store may hold open.
    :returns: Where the folder went.
    :raises StoreLockedError: When the folder is open in this or another process.
    """
    real = os.path.realpath(os.path.expanduser(path))
    lock_fd = _lock_folder(real)
    target = f"{real}.damaged-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        os.rename(real, target)
    finally:
        _unlock_folder(lock_fd)
    logger.info("Moved the damaged index at {path} aside to {target}", path=real, target=target)
    return target


def _lock_folder(path: str) -> int:
    """Take an exclusive advisory lock on the folder for one store object; record our pid in the lock file."""
    lock_path = os.path.join(path, LOCK_FILE_NAME)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode("ascii", "replace").strip() or None
        os.close(fd)
        raise StoreLockedError(path, holder) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
    return fd


def _unlock_folder(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
