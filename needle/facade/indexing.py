"""The indexer: the ingest graph run batch by batch, the stat record kept in step, the report added up."""

from __future__ import annotations

import copy
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from haystack.core.errors import PipelineRuntimeError

from haystack_integrations.document_stores.needle.access import searchable
from needle.core.errors import root_cause
from needle.core.index_results import IndexReport
from needle.core.requests import IndexRequest
from needle.facade.graph_loading import INGEST, GraphRuntime
from needle.facade.index_handle import IndexHandle
from needle.facade.index_report import RunTally, note_problems
from needle.lifecycle import field_summary as index_summary
from needle.lifecycle import provenance as index_info
from needle.runtime.contract import GraphContract
from needle.runtime.loader import apply_overrides

# What an index run's progress report tells `status` while the run goes on.
RUN_FIELDS = ("batches", "files_read", "files_pending", "texts_embedded", "chunks_reused")


def _signature(value: Any) -> str:
    """A stable hash of a JSON-like value."""
    return hashlib.sha1(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


class Indexer:
    """
    `index`: collections through the ingest graph, batch by batch, one run at a time (on the index's lock).

    Usage example:
    ```python
    indexer = Indexer(index, runtime)
    indexer.run(IndexRequest(collections=["notes"])).chunks_embedded
    ```
    """

    def __init__(self, index: IndexHandle, runtime: GraphRuntime) -> None:
        """
        :param index: The index written (its stores, collections, stat record and writers' lock).
        :param runtime: The graphs, the ingest graph among them.
        """
        self.index = index
        self.runtime = runtime
        # The index run under way, as `status` shows it to other commands (`index_run`); `None` between runs.
        self._run: dict[str, Any] | None = None

    def run(self, request: IndexRequest, progress: Callable[[IndexReport], None] | None = None) -> IndexReport:
        """
        Index collections (all when `request.collections` is empty): new and changed chunks are embedded,
        removed files leave.

        The run goes batch by batch (`scanner.batch_files` files read each): a batch is embedded, written and
        recorded before the next starts, so a run that is stopped keeps what it finished. Files whose stat
        matches the record of the last run are not read; chunks whose text the store holds get its vectors.

        :param request: The collections, `paths` (only these files: absolute, or relative to a collection root;
            a file deleted on disk leaves the index), `rebuild` (drop the whole index first, needed after
            changing the embedding model) and `set` (`component.parameter` → value for the ingest graph,
            recorded in the provenance).
        :param progress: Called with the report so far after each batch.
        :returns: The run's report: files seen, read, skipped by their stat, new, changed, unchanged, removed,
            skipped with reasons, chunks embedded, reused and deleted, texts embedded, batches, seconds.
        :raises CollectionError: When a name is unknown or there are no collections.
        :raises ValueError: When a path is in none of the collections indexed.
        :raises IndexMismatchError: When the index was built with other settings and `rebuild` is off.
        """
        with self.index.lock:
            self._run = {
                "collections": list(request.collections or []) or sorted(self.index.collections.load()),
                "phase": "starting",
                "started": time.time(),
                "batches": 0,
                "files_read": 0,
                "files_pending": 0,
            }

            def tracked(report: IndexReport) -> None:
                if self._run is not None:
                    self._run = {**self._run, "phase": "indexing", **{k: getattr(report, k) for k in RUN_FIELDS}}
                if progress is not None:
                    progress(report)

            try:
                return self.batches(request, tracked)
            except PipelineRuntimeError as error:
                cause = root_cause(error)
                if isinstance(cause, ValueError):
                    raise cause from None
                raise
            finally:
                self._run = None
                self.runtime.release_transient(INGEST)

    @property
    def index_run(self) -> dict[str, Any] | None:
        """
        The index run under way in this process, `None` between runs: its `collections`, `phase` (`starting`,
        `indexing` batch by batch, `finishing`), `started` (epoch seconds) and, after each batch, the files
        `files_read` of `files_pending`, `batches`, `texts_embedded` and `chunks_reused` so far.
        """
        run = self._run
        return dict(run) if run is not None else None

    def main_languages(self) -> dict[str, str]:
        """Collection → the language most of its chunks were in when last indexed (what unclear files take)."""
        return {
            name: max(sorted(held), key=held.__getitem__)
            for name, held in index_info.languages(self.index.settings).items()
            if held
        }

    def _check_records(self, ingest: dict[str, Any], selected: list[Any], forget: bool) -> None:
        """
        Drop the stat record where it no longer tells what the index holds: nothing indexed (`forget`), another
        ingest graph (chunking, readers...), or a collection whose root, globs or language changed.
        """
        records = self.index.records
        if forget:
            records.forget_collection()
        # The batch size and the contract do not change what a run indexes.
        graph = GraphContract.from_dict(ingest, INGEST).without_parameter(ingest, "batch_files")
        graph.pop("metadata", None)
        records.check_signature("graph", _signature(graph))
        for collection in selected:
            records.check_signature(
                f"collection:{collection.name}", _signature(collection.as_source()), collection.name
            )

    def batches(self, request: IndexRequest, progress: Callable[[IndexReport], None] | None = None) -> IndexReport:
        """
        The index run itself, batch by batch, with the index's lock already held (`run` takes it; a repair
        indexes its lost files inside a check).
        """
        names, overrides, paths = request.collections, request.set, request.paths
        selected = self.index.collections.select(names)
        set_aside: list[str] = []
        if request.rebuild:
            set_aside = self._start_afresh()
        ingest = apply_overrides(copy.deepcopy(self.runtime.ingest_graph()), overrides or {})
        index_info.check(self.index.settings, ingest)
        self._check_records(ingest, selected, forget=request.rebuild or self.index.store.count_documents() == 0)
        sources = [c.as_source() for c in selected]
        started = time.perf_counter()
        # A full run also drops what collections no longer listed left in the index.
        orphans_deleted = (
            self.delete_collections("not in", list(self.index.collections.load())) if not names and paths is None else 0
        )
        graph = self.runtime.pipeline(INGEST, overrides)
        contract = GraphContract.of(graph, INGEST).require("ingest")
        languages_of = {
            "languages": {c.name: c.language for c in selected},
            "main_languages": self.main_languages(),
        }
        fixed = {name: value for name, value in languages_of.items() if contract.accepts(name)}
        report = RunTally([c.name for c in selected])
        after: list[str] | None = None
        if self._run is not None:
            self._run = {**self._run, "phase": "indexing"}
        while True:
            values = {"collections": sources, "paths": paths, "after": after, "optimize": False, **fixed}
            output = contract.read(graph.run(contract.feed(values), include_outputs_from=contract.stages))
            report.add(output)
            note_problems(self.index.records, output, report.collections if paths is None and after is None else [])
            after = output["next"]
            if progress is not None:
                progress(report.report(time.perf_counter() - started))
            if after is None:
                break
        if self._run is not None:
            self._run = {**self._run, "phase": "finishing"}
        # The writers optimise once, after the last batch; how many of the collections' chunks are in each
        # language now tells the query side how to analyse queries (counted again after every change, and
        # once for an index that recorded only the languages' names).
        languages = None
        if report.changed:
            for name, _ in contract.inputs["optimize"]:  # the writers
                writer: Any = graph.get_component(name)
                if writer.optimize:
                    searchable(writer.document_store).optimize()
        if report.changed or index_info.languages_uncounted(self.index.settings):
            languages = {
                c.name: self.index.store.count_values(
                    "language", {"field": "meta.collection", "operator": "==", "value": c.name}
                )
                for c in selected
            }
        # What each collection's notes hold to filter by, for `status` (counted once here, read there).
        summarised = (index_info.read(self.index.settings) or {}).get("summaries") or {}
        stale = [c.name for c in selected if report.changed or orphans_deleted or c.name not in summarised]
        summaries = index_summary.summaries(self.index.store, self.index.file_store, stale)
        index_info.record(
            self.index.settings, ingest, optimized=report.changed, languages=languages, summaries=summaries
        )
        if not names and paths is None:  # a full run dropped what collections no longer listed left
            for name in set(summarised) - set(self.index.collections.load()):
                index_info.forget_collection(self.index.settings, name)
        result = report.report(time.perf_counter() - started)
        return result.model_copy(
            update={
                "chunks_deleted": result.chunks_deleted + orphans_deleted,
                "deleted": result.deleted + orphans_deleted,
                "set_aside": set_aside or None,
            }
        )

    def _start_afresh(self) -> list[str]:
        """
        Empty the index for a rebuild: both stores recreated with the configured layout (a damaged one moved
        aside first), the provenance forgotten.

        :returns: Where damaged stores were moved.
        """
        index_dir = self.index.settings.index_dir
        before = set(index_dir.glob("*.damaged-*"))
        for store in self.index.stores:
            store.delete_all_documents(recreate_index=True)
        index_info.forget(self.index.settings)
        after = set(index_dir.glob("*.damaged-*"))
        return sorted(str(path) for path in after - before)

    def delete_collections(self, operator: str, value: Any) -> int:
        """
        Delete the chunks and whole files whose `meta.collection` matches; a store that deleted any is flushed
        (a full index run asks on every run, and mostly finds nothing).
        """
        where = {"field": "meta.collection", "operator": operator, "value": value}
        with self.index.lock:
            deleted = [(store, int(store.delete_by_filter(where) or 0)) for store in self.index.stores]
            for store, count in deleted:
                if count:
                    store.flush()
        return deleted[0][1]
