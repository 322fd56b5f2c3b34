"""Backups of the index and restoring them, once or on a schedule.

The embedded engine cannot write Qdrant snapshots itself (qdrant-edge-py 0.9 only restores them), so a
backup of the embedded index is a copy of its two shard folders, taken while every writer of the process
waits and after everything written is flushed: queries go on, and the copy is a state the index was in.
Beside the shards it holds the index's provenance (`needle_index.json`), the collection list
(`collections.yml`) and a manifest (`needle_backup.json`: when, how many chunks and files, which models).
On a Qdrant server, a backup asks the server for a snapshot of each collection through qdrant-client (the
snapshots stay on the server) and the backup folder holds the manifest, naming them, with the same two files.

Restoring refuses a backup of an index built by other embedding settings (its vectors would mean nothing to
the configured model), replaces the index's folders by renames so that a failure leaves the old index in
place, and checks the restored counts against the manifest.

`BackupScheduler` runs a backup every so often into one folder and keeps the last N; `needle serve --every`
uses it, and any long-running command can (it takes the function that backs up, not a server).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from needle.core.schema import STORE_ROLES
from needle.core.settings import Settings
from needle.lifecycle import provenance as index_info

# The `needle.facade.api.Needle` these functions take is typed `Any`: the facade calls them (`Needle.backup`), and
# a module the facade imports must not import it back.
Needle = Any

logger = logging.getLogger(__name__)

MANIFEST = "needle_backup.json"
COLLECTIONS = "collections.yml"
PROVENANCE = "needle_index.json"
SCHEDULED_PREFIX = "needle-backup-"
_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


class BackupError(ValueError):
    """A backup cannot be written there, or a folder is not a Needle backup."""


def backup(needle: Needle, path: str | Path) -> dict[str, Any]:
    """
    Back the index up into a new folder: a consistent copy (embedded) or server snapshots (Qdrant server).

    :param needle: The facade whose index to back up; its writers wait while the copy is made.
    :param path: A folder that does not exist yet (or is empty).
    :returns: The manifest written into the folder.
    :raises BackupError: When the folder is not empty or there is no index yet.
    """
    settings = needle.settings
    target = Path(path).expanduser().resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise BackupError(f"{target} exists and is not an empty folder: back up into a new folder")
    recorded = index_info.read(settings)
    if recorded is None:
        raise BackupError("there is no index to back up yet: run `needle index` first")
    partial = target.with_name(f".{target.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    started = time.perf_counter()
    try:
        with needle.writes_paused():
            manifest = _server_snapshots(needle) if settings.store.url else _copy_shards(needle, partial)
            shutil.copyfile(index_info.info_path(settings), partial / PROVENANCE)
            if settings.collections_file.exists():
                shutil.copyfile(settings.collections_file, partial / COLLECTIONS)
        manifest.update(
            time=time.time(),
            seconds=round(time.perf_counter() - started, 2),
            fingerprint=recorded["fingerprint"],
            layout=recorded.get("layout"),
            collections=sorted(needle.collections.load()),
        )
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        if target.exists():
            target.rmdir()
        partial.rename(target)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    index_info.record_backup(
        settings,
        {"path": str(target), "time": manifest["time"], "chunks": manifest["chunks"], "files": manifest["files"]},
    )
    logger.info("Backed the index up to %s: %s chunks, %s files", target, manifest["chunks"], manifest["files"])
    return {**manifest, "path": str(target)}


def _copy_shards(needle: Needle, folder: Path) -> dict[str, Any]:
    counts = {role: store.backup(str(folder / "index" / f"edge{suffix}")) for role, suffix, store in _stores(needle)}
    return {"kind": "embedded", "chunks": counts["chunks"], "files": counts["files"]}


def _server_snapshots(needle: Needle) -> dict[str, Any]:
    snapshots, counts = {}, {}
    for role, _suffix, store in _stores(needle):
        counts[role] = store.count_documents()
        snapshots[role] = {"collection": store.index, **store.snapshot()}
    return {"kind": "server", "url": needle.settings.store.url, "snapshots": snapshots, **counts}


def _stores(needle: Needle) -> list[tuple[str, str, Any]]:
    return [(role, suffix, needle.environment.store(role)) for role, suffix in STORE_ROLES.items()]


def read_manifest(path: str | Path) -> dict[str, Any]:
    """
    The manifest of a backup folder.

    :raises BackupError: When the folder holds no Needle backup.
    """
    manifest = Path(path).expanduser() / MANIFEST
    try:
        return json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupError(f"{Path(path).expanduser()} is not a Needle backup (no {MANIFEST})") from None
    except (OSError, ValueError) as error:
        raise BackupError(f"cannot read {manifest}: {error}") from None


def check_restorable(settings: Settings, ingest: dict[str, Any], manifest: dict[str, Any]) -> None:
    """
    Refuse a backup of an index built by other embedding settings, or of the other kind of store.

    :param settings: Needle's settings (the models and prefixes that will read the index).
    :param ingest: The ingest graph's dictionary (what is embedded beside the text).
    :param manifest: The backup's manifest.
    :raises index_info.IndexMismatchError: When the backup's models or prefixes are not the configured ones.
    :raises BackupError: When a server backup meets the embedded engine, or the other way round.
    """
    kind = "server" if settings.store.url else "embedded"
    if manifest.get("kind") != kind:
        raise BackupError(f"this is a backup of {manifest.get('kind')} index, and the configured store is {kind}")
    configured = index_info.fingerprint(settings, ingest)
    recorded = manifest.get("fingerprint", {})
    differing = index_info.differences(recorded, configured)
    if differing:
        details = ", ".join(f"{k}: backup has {recorded.get(k)!r}, config has {configured[k]!r}" for k in differing)
        raise index_info.IndexMismatchError(
            f"the backup was built with other embedding settings ({details}); configure the same model to restore it"
        )


def restore(needle: Needle, path: str | Path) -> dict[str, Any]:
    """
    Put a backup in place of the index, with its provenance and collection list.

    :param needle: The facade whose index to replace; its stores are closed first.
    :param path: A folder written by `backup`.
    :returns: The manifest and the counts found after restoring.
    :raises BackupError: When the folder is not a backup of this kind of store, or the counts differ after.
    :raises index_info.IndexMismatchError: When the backup was built by other embedding settings.
    """
    settings = needle.settings
    source = Path(path).expanduser().resolve()
    manifest = read_manifest(source)
    check_restorable(settings, needle.ingest_graph(), manifest)
    last_backup = (index_info.read(settings) or {}).get("backup")
    needle.close()
    if manifest["kind"] == "embedded":
        from haystack_integrations.document_stores.needle.edge.shards import replace_shard

        for role, suffix in STORE_ROLES.items():
            replace_shard(str(source / "index" / f"edge{suffix}"), str(settings.index_dir / f"edge{suffix}"))
            # Opened (and locked) again at once: an owner restoring keeps holding the index's lock, so no
            # command takes its record for stale meanwhile.
            needle.environment.store(role).count_documents()
    else:
        for role, store in ((role, needle.environment.store(role)) for role in STORE_ROLES):
            store.restore_snapshot(manifest["snapshots"][role]["name"])
    provenance = index_info.info_path(settings)
    provenance.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / PROVENANCE, provenance)
    if last_backup:
        index_info.record_backup(settings, last_backup)  # the last backup made is still the last one
    if (source / COLLECTIONS).exists():
        settings.collections_file.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / COLLECTIONS, settings.collections_file)
    found = {role: needle.environment.store(role).count_documents() for role in STORE_ROLES}
    if (found["chunks"], found["files"]) != (manifest["chunks"], manifest["files"]):
        raise BackupError(
            f"restored {found['chunks']} chunks and {found['files']} files, but the backup holds "
            f"{manifest['chunks']} and {manifest['files']}"
        )
    logger.info("Restored the index from %s", source)
    return {**manifest, "path": str(source), "restored": found}


def drop(needle: Needle, path: str | Path) -> None:
    """Delete a backup folder, and its snapshots on the server for a server backup."""
    folder = Path(path)
    try:
        manifest = read_manifest(folder)
    except BackupError:
        manifest = {}
    for role, snapshot in (manifest.get("snapshots") or {}).items():
        try:
            needle.environment.store(role).delete_snapshot(snapshot["name"])
        except Exception as error:
            logger.warning("Could not delete snapshot %s: %s", snapshot.get("name"), error)
    shutil.rmtree(folder, ignore_errors=True)


def parse_interval(text: str) -> float:
    """
    Seconds in an interval such as `90`, `90s`, `30m`, `6h` or `1d`.

    :raises ValueError: When the text is not one, or not above zero.
    """
    match = _INTERVAL.match(str(text))
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"an interval is a positive number with an optional unit s, m, h or d (30m, 6h), got {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


class BackupScheduler:
    """
    Back up every `every` seconds into `directory/needle-backup-<time>`, keeping the newest `keep` backups.

    It takes the functions that back up and drop a backup, so any long-running command can schedule them
    (`needle serve --every 6h`); a backup that fails is logged and retried at the next tick.

    Usage example:
    ```python
    scheduler = BackupScheduler(lambda p: backup(needle, p), lambda p: drop(needle, p), Path("~/backups"), 6 * 3600, keep=7)
    scheduler.start()
    ...
    scheduler.stop()
    ```
    """

    def __init__(
        self,
        make: Callable[[Path], Any],
        drop: Callable[[Path], None],
        directory: Path,
        every: float,
        keep: int,
    ) -> None:
        """
        :param make: Backs the index up into the folder it is given (which does not exist yet).
        :param drop: Deletes an old backup folder (and what it names elsewhere).
        :param directory: Where the backups go.
        :param every: Seconds between backups.
        :param keep: How many backups to keep.
        :raises ValueError: When `every` or `keep` is not positive.
        """
        if every <= 0:
            raise ValueError(f"every must be > 0 seconds, got {every}")
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        self.make = make
        self.drop = drop
        self.directory = Path(directory).expanduser()
        self.every = every
        self.keep = keep
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Back up now and then every `every` seconds, in a daemon thread; a second call does nothing."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="needle-backups", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop after the backup under way, if any."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def run_once(self) -> Path:
        """
        Make one backup now and drop the ones beyond `keep`.

        :returns: The new backup's folder.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        folder = self.directory / f"{SCHEDULED_PREFIX}{datetime.now().strftime('%Y%m%d-%H%M%S-%f')}"
        self.make(folder)
        for old in self.backups()[: -self.keep]:
            self.drop(old)
        return folder

    def backups(self) -> list[Path]:
        """This scheduler's backups in `directory`, oldest first."""
        if not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.iterdir() if p.is_dir() and p.name.startswith(SCHEDULED_PREFIX))

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                folder = self.run_once()
                logger.info("Scheduled backup written to %s", folder)
            except Exception as error:
                logger.error("Scheduled backup failed: %s", error)
            self._stop.wait(self.every)


__all__ = [
    "BackupError",
    "BackupScheduler",
    "backup",
    "check_restorable",
    "drop",
    "parse_interval",
    "read_manifest",
    "restore",
]
