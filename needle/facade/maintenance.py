"""The maintainer: check and repair, optimise, backup and restore the index, and remove a collection's data."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from haystack.document_stores.errors import DocumentStoreError

from haystack_integrations.document_stores.needle.protocol import IndexDamagedError
from needle.core.collections import CollectionError
from needle.core.file_records import split_key
from needle.core.index_results import BackupReport, CheckReport, OptimizeReport, Repaired
from needle.core.requests import IndexRequest
from needle.core.schema import FILE_ID
from needle.core.settings import Settings
from needle.facade.graph_loading import GraphRuntime
from needle.facade.index_handle import IndexHandle
from needle.facade.indexing import Indexer
from needle.lifecycle import consistency
from needle.lifecycle import provenance as index_info
from needle.runtime.environment import Environment


class Maintainer:
    """
    `check`, `optimize`, `backup`, `restore`, `remove_collection`: they take turns with index runs (the index's lock).

    `needle.lifecycle.backups` reads the index through it (`settings`, `environment`, `collections`,
    `ingest_graph`, `writes_paused`).

    Usage example:
    ```python
    maintainer = Maintainer(index, runtime, indexer)
    maintainer.check(repair=True).problems
    ```
    """

    def __init__(self, index: IndexHandle, runtime: GraphRuntime, indexer: Indexer) -> None:
        """
        :param index: The index looked after.
        :param runtime: The graphs (the ingest graph's configuration is what a backup must match).
        :param indexer: What indexes lost files again (`check --repair`) and deletes a collection's data.
        """
        self.index = index
        self.runtime = runtime
        self.indexer = indexer

    @property
    def settings(self) -> Settings:
        """Needle's settings."""
        return self.index.settings

    @property
    def environment(self) -> Environment:
        """The stores and models of the graphs."""
        return self.index.environment

    @property
    def collections(self) -> Any:
        """The user's collections."""
        return self.index.collections

    def ingest_graph(self) -> dict[str, Any]:
        """The ingest graph's dictionary with the configuration's overrides (what a backup must match)."""
        return self.runtime.ingest_graph()

    def close(self) -> None:
        """Release the stores (a restore puts the backup's in their place)."""
        self.index.close()

    def check(self, repair: bool = False) -> CheckReport:
        """
        Read the whole index: the provenance, every chunk and whole file with its vectors, one search per kind
        of vector; report the damage a query would trip on before it does (`needle check`). Compare the chunk
        store, the file store and the stat record (`needle.lifecycle.consistency`): files whose data is lost are
        forgotten by the record, so that the next `needle index` reads them again, and collections holding
        orphaned data are compared in full by it.

        Index runs wait for it (and it for them): points written between counting and reading are not damage.

        :param repair: Heal what can be healed without a rebuild: index the lost files again now and delete
            the orphaned data, then check again (`repaired` says what was done).
        :returns: `problems` (empty for a sound index), `lost` and `orphaned` files, what each store held and
            the seconds it took.
        """
        with self.index.lock:
            report = self._check()
            if repair and (report.lost or report.orphaned) and not report.damaged:
                repaired = self._repair(report.lost, report.orphaned)
                report = self._check().model_copy(update={"repaired": repaired})
            return report

    def _check(self) -> CheckReport:
        """`check` with the index lock held."""
        started = time.perf_counter()
        problems: list[str] = []
        try:
            index_info.read(self.settings)
        except IndexDamagedError as error:
            problems.append(str(error))
        stores: dict[str, dict[str, int]] = {}
        for role, store in zip(("chunks", "files"), self.index.stores):
            try:
                found = stores[role] = store.verify()
            except DocumentStoreError as error:
                problems.append(f"{role}: {error}")
                continue
            if found["points"] != found["counted"]:
                problems.append(f"{role}: {found['points']} points read but {found['counted']} counted")
            for kind in ("dense", "sparse"):
                if found[f"without_{kind}"]:
                    problems.append(f"{role}: {found[f'without_{kind}']} points without a {kind} vector")
            if found.get("wal_unreadable"):
                problems.append(
                    f"{role}: {found['wal_unreadable']} entries of its write-ahead log lie past garbled bytes "
                    "(the engine drops them without a word)"
                )
        findings = consistency.Findings()
        if len(stores) == 2:
            roots = {c.name: c.root for c in self.collections.load().values()}
            records = self.index.records
            findings = consistency.compare(self.index.store, self.index.file_store, records, roots)
            consistency.forget(findings, records)
        return CheckReport(
            problems=problems + findings.problems(),
            damaged=bool(problems),
            lost=sorted(findings.lost),
            orphaned=sorted(findings.orphaned),
            stores=stores,
            seconds=round(time.perf_counter() - started, 2),
        )

    def _repair(self, lost: list[str], orphaned: list[str]) -> Repaired:
        """Delete the orphaned files' data and index the lost files again (only those)."""
        roots = {c.name: c.root for c in self.collections.load().values()}
        deleted = 0
        if orphaned:
            where = {"field": f"meta.{FILE_ID}", "operator": "in", "value": orphaned}
            deleted = sum(int(store.delete_by_filter(where) or 0) for store in self.index.stores)
        paths = [str(Path(roots[name]).expanduser() / path) for name, path in map(split_key, lost)]
        indexed = self.indexer.batches(IndexRequest(paths=paths)) if paths else None
        return Repaired(
            reindexed=len(paths),
            chunks_embedded=indexed.chunks_embedded if indexed else 0,
            orphans_deleted=deleted,
        )

    def optimize(self) -> OptimizeReport:
        """
        Lay the index out as the `index:` settings say (HNSW, quantization, what stays on disk): the stores
        rebuild the segments laid out otherwise, from the stored vectors; nothing is embedded again.

        :returns: What changed, the settings applied and the seconds it took.
        """
        with self.index.lock:
            pending = index_info.pending_layout(self.settings)
            started = time.perf_counter()
            changed = [store.optimize() for store in self.index.stores]
            index_info.record_layout(self.settings)
        return OptimizeReport(
            changed=any(changed),
            applied=pending,
            layout=index_info.layout(self.settings),
            seconds=round(time.perf_counter() - started, 2),
        )

    @contextmanager
    def writes_paused(self) -> Iterator[None]:
        """Hold off index runs and every write to the stores (queries go on), everything written flushed."""
        with self.index.lock, ExitStack() as paused:
            for store in self.index.stores:
                paused.enter_context(store.writes_paused())
            yield

    def backup(self, path: str) -> BackupReport:
        """
        Back the index up into a new folder (`needle.lifecycle.backups`): a consistent copy of the embedded index, or
        snapshots on the Qdrant server, with the provenance and the collection list.

        :returns: The backup's manifest and folder.
        :raises BackupError: When the folder is not new or empty, or there is no index yet.
        """
        from needle.lifecycle import backups

        return BackupReport.model_validate(backups.backup(self, path))

    def restore(self, path: str) -> BackupReport:
        """
        Put a backup in place of the index (`needle.lifecycle.backups`); no other process may have the index open.

        :returns: The backup's manifest and the counts restored.
        :raises BackupError: When the folder is not a backup of this kind of store.
        :raises IndexMismatchError: When the backup was built by other embedding settings.
        """
        from needle.lifecycle import backups

        with self.index.lock:
            restored = backups.restore(self, path)
            self.index.records.forget_collection()  # the restored index holds other versions of the files
            return BackupReport.model_validate(restored)

    def remove_collection(self, name: str) -> int:
        """
        Delete a collection's chunks from the index, then forget the collection: the list changes only once
        the index has, so a store another process holds (or any failure) leaves both as they were. Chunks
        left by a collection no longer listed (`status` names them) go the same way.

        :returns: The number of chunks deleted.
        :raises CollectionError: When no collection has that name and the index holds nothing of it.
        """
        with self.index.lock:
            listed = name in self.collections.load()
            if not listed and not self._orphaned_chunks().get(name):
                raise CollectionError(f"no collection named '{name}'")
            deleted = self.delete_chunks(name)
            if listed:
                self.collections.remove(name)
            return deleted

    def delete_chunks(self, name: str) -> int:
        """
        Delete a collection's chunks and whole files from the index (the collection list is left as it is).

        :returns: The number of chunks deleted.
        """
        deleted = self.indexer.delete_collections("==", name)
        self.index.records.forget_collection(name)  # its files are read again if it comes back
        index_info.forget_collection(self.settings, name)
        return deleted

    def _orphaned_chunks(self) -> dict[str, int]:
        """Chunk counts of collections the index holds but the list no longer names."""
        listed = set(self.collections.load())
        counts: dict[str, int] = {}
        for row in self.index.store.list_documents_meta(fields=["collection"]):
            collection = row["meta"].get("collection", "")
            if collection not in listed:
                counts[collection] = counts.get(collection, 0) + 1
        return counts
