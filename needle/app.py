"""Needle's one facade over the YAML graphs, shared by the CLI, the server, the MCP tools and the eval runner.

It loads each graph once in one environment (one store object per location, see `needle.environment`),
runs it, and shapes results into the schema of `needle.results`; it implements no retrieval step itself.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from haystack import Pipeline
from haystack.core.errors import PipelineRuntimeError
from haystack.document_stores.errors import DocumentStoreError

from needle import consistency, index_info, index_summary
from needle.collections import CollectionError, CollectionRegistry
from needle.contexts import ContextRegistry
from needle.contract import GraphContract
from needle.document_stores.protocol import IndexDamagedError
from needle.environment import Environment, records_file
from needle.errors import LLMError, llm_error, root_cause
from needle.file_records import FileRecords, split_key
from needle.files import DEFAULT_MAX_DOCUMENT_BYTES, DEFAULT_MAX_FILE_BYTES, FileAccess
from needle.formats import Extractor, Limits
from needle.languages import AUTO
from needle.languages import DEFAULT as DEFAULT_LANGUAGE
from needle.loader import apply_overrides, load_pipeline, overrides_apply_somewhere, read_graph
from needle.pool import GraphPool
from needle.readiness import unready_hints
from needle.results import Answer, Hit, SearchAnswer, SearchFilters, SelfQuery, hit
from needle.settings import Settings, load_settings

INGEST = "ingest"
# Most skipped files `status` lists (the count says how many there are in all).
STATUS_PROBLEMS = 50


def reported_stages(graph: Pipeline, contract: GraphContract) -> set[str]:
    """
    The stages of a graph whose outputs a run returns: those the contract reads, and every stage with a
    `warnings` output (a response reports them all).
    """
    known = getattr(graph, "_needle_reported", None)
    if known is None:
        nodes = graph.graph.nodes
        warned = {name for name in nodes if "warnings" in nodes[name].get("output_sockets", {})}
        known = contract.stages | warned
        graph._needle_reported = known  # type: ignore[attr-defined]
    return set(known)


def warnings(output: Mapping[str, Any]) -> list[str]:
    """Every warning the components of a run reported, in order, once each."""
    found = [w for result in output.values() if isinstance(result, Mapping) for w in result.get("warnings") or []]
    return list(dict.fromkeys(found))


def sub_questions(read: Mapping[str, Any]) -> list[str]:
    """The sub-questions a run's decomposition searched (none for a single-part query), from its `sub_questions` output."""
    return [q["text"] for q in read.get("sub_questions") or []]


def configured_graph(name: str, settings: Settings) -> dict[str, Any]:
    """
    A graph's dictionary with the configuration's `set` overrides that apply to it.

    :param name: Graph name or file.
    :param settings: Needle's settings.
    :returns: A fresh dictionary.
    """
    graph = read_graph(name)
    return apply_overrides(graph, settings.set, strict=False) if settings.set else graph


class Needle:
    """Runs Needle's graphs for one configuration; thread-safe, each graph (and override set) loaded once."""

    def __init__(
        self, settings: Settings | None = None, progress_bar: bool = False, environment: Environment | None = None
    ) -> None:
        """
        :param settings: Needle's settings; loaded from the environment when `None` (or the environment's).
        :param progress_bar: Whether indexing shows progress bars.
        :param environment: Share another Needle's stores (`other.environment.derive(settings)`); one store
            object per index folder in a process, since the embedded engine opens a folder once.
        :raises PipelineError: When the configuration's `set` names a component or parameter no graph has.
        """
        self.settings = settings or (environment.settings if environment else load_settings())
        if self.settings.set:
            overrides_apply_somewhere(self.settings.set)
        self.environment = environment or Environment(self.settings, progress_bar=progress_bar)
        self.collections = CollectionRegistry(self.settings.collections_file)
        self._pools: dict[tuple[str, str], GraphPool] = {}
        self.contexts = ContextRegistry(self.settings.data_dir / "contexts.yml")
        self._lock = threading.Lock()
        # Index runs, optimising and backups take turns (a backup is a state no index run is halfway through).
        self._index_lock = threading.RLock()
        self._ingest_graph: dict[str, Any] | None = None
        self._expected_fingerprint: dict[str, Any] | None = None
        self._source_ids: tuple[tuple[Any, ...], list[str]] | None = None
        self._files: FileAccess | None = None
        # The watcher keeping this Needle's index live (`needle.watch`), shown by `status`; none by default.
        self.watcher: Any = None

    # ---- graphs -------------------------------------------------------------------------------------
    def pipeline(self, name: str, overrides: Mapping[str, Any] | None = None) -> Pipeline:
        """
        A graph (`pipelines/<name>.yml` or a path), loaded and warmed once per set of overrides.

        :param name: Graph name or file.
        :param overrides: `component.parameter` → value, on top of the configuration's `set`.
        :raises PipelineError: When the graph or an override is invalid.
        """
        return self._pool(name, overrides).first

    def _pool(self, name: str, overrides: Mapping[str, Any] | None = None) -> GraphPool:
        """The pool of a graph's instances for a set of overrides (`serve.graph_instances` at most)."""
        key = (str(name), json.dumps(dict(overrides or {}), sort_keys=True, default=str))
        with self._lock:
            if key not in self._pools:
                combined = {**self._configured_overrides(name), **dict(overrides or {})}

                def build() -> Pipeline:
                    pipeline = load_pipeline(name, self.environment, combined)
                    pipeline.warm_up()
                    return pipeline

                self._pools[key] = GraphPool(build, self.settings.serve.graph_instances)
            return self._pools[key]

    def warm(self, name: str) -> Pipeline:
        """
        Load and warm every instance of a graph that concurrent runs may need (a server at start-up); the
        ingest graph needs one, since index runs take turns. Components that load their models on first use
        (the ingest graph's embedders, so that an index run with nothing to embed loads none) load them now.

        :returns: The graph's first instance.
        """
        pool = self._pool(name)
        if name != INGEST:
            pool.fill()
        for _, component in pool.first.walk():
            load = getattr(component, "load", None)
            if callable(load):
                load()
        return pool.first

    def _with_overrides(
        self, name: str, overrides: Mapping[str, Any] | None, init_level: bool = True
    ) -> tuple[GraphPool, dict[str, dict[str, Any]]]:
        """
        The graph's pool for a set of overrides, and the run data for those that are run inputs of a component.

        A key naming a run input that no connection feeds (`bm25_retriever.top_k`) goes into this run's
        data; any other key is an init parameter, for which a variant of the graph is built once.

        :param init_level: Allow init-parameter overrides (a server refuses them per request).
        :raises ValueError: When `init_level` is off and a key is not a free run input.
        """
        run_data: dict[str, dict[str, Any]] = {}
        init: dict[str, Any] = {}
        graph = self.pipeline(name) if overrides else None
        free = graph.inputs() if graph is not None else {}
        for key, value in (overrides or {}).items():
            component, _, parameter = str(key).partition(".")
            if parameter in free.get(component, {}):
                run_data.setdefault(component, {})[parameter] = value
            elif init_level:
                init[key] = value
            else:
                raise ValueError(
                    f"set: '{key}' is not a run input of graph {name} (it has "
                    f"{', '.join(_user_inputs(graph, name, free)) or 'none'}); "
                    "init parameters are configured when the server starts (`set:` in the configuration)"
                )
        return self._pool(name, init), run_data

    def _configured_overrides(self, name: str) -> dict[str, Any]:
        """The configuration's `set`, restricted to the components this graph has."""
        if not self.settings.set:
            return {}
        components = read_graph(name)["components"]
        return {k: v for k, v in self.settings.set.items() if str(k).split(".", 1)[0] in components}

    def _fingerprint(self) -> dict[str, Any]:
        """The fingerprint an index built with this configuration has (every query compares it), computed once."""
        if self._expected_fingerprint is None:
            self._expected_fingerprint = index_info.fingerprint(self.settings, self.ingest_graph())
        return self._expected_fingerprint

    def ingest_graph(self) -> dict[str, Any]:
        """The ingest graph's dictionary with the configuration's overrides (for the index's provenance)."""
        if self._ingest_graph is None:
            self._ingest_graph = configured_graph(INGEST, self.settings)
        return self._ingest_graph

    @property
    def files(self) -> FileAccess:
        """Reading the collections' files by reference or glob (`get`, `multi_get`), within each collection's rules."""
        if self._files is None:
            # The ingest graph's own limits (its contract's `parameters`), so that `get` reads what indexing reads.
            graph = self.ingest_graph()
            contract = GraphContract.from_dict(graph, INGEST)
            limits = Limits(**{
                key: contract.parameter(graph, key)
                for key in ("max_pages", "max_unpacked_bytes", "max_seconds", "max_memory_mb")
                if contract.parameter(graph, key) is not None
            })
            self._files = FileAccess(
                self.collections, self._indexed_source_ids, contract.parameter(graph, "max_file_bytes", DEFAULT_MAX_FILE_BYTES),
                contract.parameter(graph, "max_document_bytes", DEFAULT_MAX_DOCUMENT_BYTES), Extractor(limits),
            )
        return self._files

    def _indexed_source_ids(self) -> list[str]:
        """
        Every indexed file's `collection:path`: one whole-file document each (chunks for an index without them).

        `get #docid` asks on every call, and listing the store grows with the index (0.25 s for 2,600 files),
        so the list is kept until the stores' counts or the provenance (rewritten by every index run) change.
        """
        recorded = index_info.read(self.settings) or {}
        version = (self.file_store.count_documents(), self.store.count_documents(), recorded.get("updated"))
        cached = self._source_ids
        if cached is not None and cached[0] == version:
            return cached[1]
        found: list[str] = []
        for store in (self.file_store, self.store):
            ids = {row["meta"].get("source_doc_id", "") for row in store.list_documents_meta(fields=["source_doc_id"])}
            if ids:
                found = sorted(ids)
                break
        self._source_ids = (version, found)
        return found

    @property
    def store(self) -> Any:
        """The chunk store every graph of this Needle shares."""
        return self.environment.store("chunks")

    @property
    def file_store(self) -> Any:
        """The store of whole-file documents beside the chunks."""
        return self.environment.store("files")

    def close(self) -> None:
        """Release the stores (the embedded index unlocks); the graphs stay loaded and reopen them on next use."""
        self.environment.close()

    # ---- search and answers -------------------------------------------------------------------------
    def search(
        self,
        query: str,
        pipeline: str = "query",
        top_k: int | None = None,
        collections: list[str] | None = None,
        min_score: float | None = None,
        expand: bool | None = None,
        rerank: bool | None = None,
        chunks: bool = False,
        explain: bool = False,
        overrides: Mapping[str, Any] | None = None,
        init_overrides: bool = True,
        filters: SearchFilters | None = None,
        decompose: bool | None = None,
    ) -> SearchAnswer:
        """
        Run a query graph; when filters read from the question leave too few results, run it again without them.

        :param query: The search text.
        :param pipeline: `search` (BM25), `vsearch` (vectors), `query` (hybrid), another graph name or a YAML path.
        :param top_k: Result count; the graph's default when `None`.
        :param collections: Restrict to these collections.
        :param min_score: Drop results below this score; the graph's default when `None`.
        :param expand: Switch query expansion on or off (graphs that expand).
        :param rerank: Switch reranking on or off (graphs that rerank).
        :param chunks: Every matching chunk instead of one result per file (graphs that group by file).
        :param explain: Add each result's rank and score at every stage.
        :param overrides: `component.parameter` → value for this search: a run input, or an init parameter
            (a variant of the graph, built once).
        :param init_overrides: Accept init-parameter overrides (off for requests over the network).
        :param filters: Tags, path, fields, dates, recency and self-query switches (`SearchFilters`).
        :param decompose: Split a multi-part query into sub-questions searched together (graphs that decompose);
            the graph's default when `None`.
        :returns: The trust label, the confidence, the hits (best first, each with its context annotations),
            warnings, and, when the question said anything to filter by or asked for the newest, what it said
            and whether the search fell back to running without it (`self_query`, else `None`).
        :raises ValueError: On invalid input (empty query, bad `top_k`, unknown collection, a bad filter).
        :raises IndexMismatchError: When the index was built with other embedding settings.
        """
        request = self._request(query, top_k, collections, min_score, expand, rerank, chunks, filters, decompose)
        pool, run_data = self._with_overrides(pipeline, overrides, init_overrides)
        contract = GraphContract.of(pool.first, str(pipeline)).require("search")
        values = {**request, **self._languages(contract, collections)}
        output, given = self._run_search(pool, contract, values, run_data)
        results = [hit(doc, explain) for doc in given["documents"]]
        read = given.get("self_query") or None
        if read and read.get("applied") and len(results) < read.get("min_results", 0) and contract.accepts("fallback"):
            output, given = self._run_search(pool, contract, {**values, "fallback": True}, run_data)
            seen = {(r.docid, r.start_line) for r in results}
            wider = [hit(doc, explain) for doc in given["documents"]]
            limit = max(len(given["documents"]), len(results))
            results = (results + [r for r in wider if (r.docid, r.start_line) not in seen])[:limit]
            read = {**read, "fallback": True, "fallback_reason": (
                f"the question's filters left {len(seen)} result(s), fewer than min_results={read['min_results']}: "
                "they stay first, followed by the search without those filters"
            )}
        label = given.get("label") or ("PASS" if results else "NO_RESULTS")
        said = read and (read["applied"] or read["recent"] or read["query"] != read["original"] or read.get("fallback"))
        trace = {"confidence": given.get("signals"), "sub_questions": sub_questions(given)} if explain else None
        return SearchAnswer(
            label=label, results=self._annotated(results), confidence=given.get("confidence"),
            warnings=warnings(output) + (self._unready_hints(collections) if not results else []), explain=trace, self_query=SelfQuery(**read) if said and read else None,
        )

    def _run_search(
        self, pool: GraphPool, contract: GraphContract, values: dict[str, Any], run_data: dict[str, dict[str, Any]]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """
        Run a query graph (one instance of its pool), its own `ValueError`s raised as they are (user mistakes).

        :returns: The run's output by stage (for its warnings) and its contract's named outputs.
        """
        try:
            with pool.lend() as graph:
                output = graph.run(contract.feed(values, run_data), include_outputs_from=reported_stages(graph, contract))
                return output, contract.read(output)
        except PipelineRuntimeError as error:
            cause = root_cause(error)
            if isinstance(cause, ValueError):
                raise cause from None
            raise

    def _languages(self, contract: GraphContract, collections: list[str] | None) -> dict[str, Any]:
        """The languages of the searched chunks, for a graph that takes them (its keyword embedder)."""
        return {"languages": self.query_languages(collections)} if contract.accepts("languages") else {}

    def _annotated(self, results: list[Hit]) -> list[Hit]:
        """The hits with the context annotations of their collection and folders."""
        contexts = self.contexts.load()
        if not contexts:
            return results
        return [r.model_copy(update={"context": self.contexts.describe(r.collection, r.path, contexts)}) for r in results]

    def answer(
        self,
        question: str,
        top_k: int | None = None,
        collections: list[str] | None = None,
        min_score: float | None = None,
        expand: bool | None = None,
        rerank: bool | None = None,
        pipeline: str = "rag",
        overrides: Mapping[str, Any] | None = None,
        filters: SearchFilters | None = None,
        decompose: bool | None = None,
        retry: bool | None = None,
    ) -> Answer:
        """
        Answer a question from the notes with the configured LLM, citing chunks as `[path:start-end]`.

        :param question: The question; it is also the search text.
        :param top_k: Chunks given to the LLM; the graph's default when `None`.
        :param collections: Restrict to these collections.
        :param min_score: Give the LLM no chunk scoring below this.
        :param expand: Switch query expansion on or off.
        :param rerank: Switch reranking on or off.
        :param pipeline: An answer graph: `rag` or a YAML path with the inputs and outputs of `pipelines/rag.yml`.
        :param overrides: `component.parameter` → value for this answer.
        :param filters: Tags, path, fields, dates, recency and self-query switches (`SearchFilters`); the
            question's own filters apply without a fallback (the model is asked once).
        :param decompose: Split a multi-part question into sub-questions (on in `rag`); the graph's default when `None`.
        :param retry: Search again for what the answer's citations do not cover, and answer again (the
            `retry` stage); the graph's default (off) when `None`.
        :returns: The answer, its confidence, label and claim coverage, the chunks given to the LLM, the ones it
            cites, citations of chunks it was not given, retries and the claims left uncovered.
        :raises ValueError: On invalid input (empty question, bad `top_k`, unknown collection).
        :raises IndexMismatchError: When the index was built with other embedding settings.
        :raises LLMError: When no LLM answers at `llm.url`, or it refuses the request.
        """
        import openai

        request = self._request(question, top_k, collections, min_score, expand, rerank, False, filters, decompose)
        try:
            pool, run_data = self._with_overrides(pipeline, overrides)
            contract = GraphContract.of(pool.first, str(pipeline)).require("answer")
            values = {**request, **self._languages(contract, collections)}
            if retry is not None and contract.accepts("retry"):
                values["retry"] = retry
            with pool.lend() as graph:
                output = graph.run(contract.feed(values, run_data), include_outputs_from=reported_stages(graph, contract))
        except openai.OpenAIError as error:  # the client refused to start, e.g. without a key
            raise llm_error(self.settings, error) from None
        except PipelineRuntimeError as error:
            cause = root_cause(error)
            if isinstance(cause, openai.OpenAIError):
                raise llm_error(self.settings, cause) from None
            if isinstance(cause, (ValueError, LLMError)):
                raise cause from None
            raise
        given = contract.read(output)
        results = self._annotated([hit(doc) for doc in given["documents"]])
        return Answer(
            answer=given["answer"],
            label=given.get("label") or ("PASS" if results else "NO_RESULTS"),
            results=results,
            cited=[hit(doc) for doc in given["cited"]],
            unknown_citations=list(given["unknown_citations"]),
            confidence=given.get("confidence"),
            coverage=given.get("coverage"),
            retries=int(given.get("retries") or 0),
            uncovered_claims=list(given.get("uncovered_claims") or []),
            sub_questions=sub_questions(given),
            warnings=warnings(output) + (self._unready_hints(collections) if not results else []),
        )

    def _unready_hints(self, collections: list[str] | None) -> list[str]:
        """When nothing was found: the searched collections never indexed or holding no file, with the command to run."""
        records = self.records
        return unready_hints(
            self.collections.select(collections), self.store.count_values("collection"),
            lambda name: records.signed(f"collection:{name}"),
        )

    def query_languages(self, collections: list[str] | None = None) -> dict[str, int]:
        """
        The languages of the chunks a query searches, for keyword search: language → how many chunks are in
        it (an `auto` collection's as counted when it was last indexed; a declared one's all in its language).
        The query embedder analyses a query in the main ones and the query's own (`FastembedSparseQueryEmbedder`).
        """
        found = index_info.languages(self.settings)
        counts: dict[str, int] = {}
        for collection in self.collections.select(collections):
            held = found.get(collection.name) or {DEFAULT_LANGUAGE: 1}
            if collection.language != AUTO:
                held = {collection.language: sum(held.values())}
            for language, n in held.items():
                counts[language] = counts.get(language, 0) + n
        return dict(sorted(counts.items()))

    def main_languages(self) -> dict[str, str]:
        """Collection → the language most of its chunks were in when last indexed (what unclear files take)."""
        return {
            name: max(sorted(held), key=held.__getitem__)
            for name, held in index_info.languages(self.settings).items()
            if held
        }

    def _request(
        self,
        query: str,
        top_k: int | None,
        collections: list[str] | None,
        min_score: float | None,
        expand: bool | None,
        rerank: bool | None,
        chunks: bool,
        filters: SearchFilters | None = None,
        decompose: bool | None = None,
    ) -> dict[str, Any]:
        """A query graph's request (unset values left to the graph), collections and index checked."""
        self.collections.select(collections)
        index_info.check(self.settings, self.ingest_graph(), self._fingerprint())
        request: dict[str, Any] = {"query": query, "collections": collections or None, "chunks": chunks}
        for key, value in (
            ("top_k", top_k), ("min_score", min_score), ("expand", expand), ("rerank", rerank), ("decompose", decompose)
        ):
            if value is not None:
                request[key] = value
        request.update((filters or SearchFilters()).request_inputs())
        return request

    # ---- the index ----------------------------------------------------------------------------------
    def index(
        self,
        names: list[str] | None = None,
        rebuild: bool = False,
        overrides: Mapping[str, Any] | None = None,
        paths: list[str] | None = None,
        progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """
        Index collections (all when `names` is empty): new and changed chunks are embedded, removed files leave.

        The run goes batch by batch (`scanner.batch_files` files read each): a batch is embedded, written and
        recorded before the next starts, so a run that is stopped keeps what it finished. Files whose stat
        matches the record of the last run are not read; chunks whose text the store holds get its vectors.

        :param names: Collections to index.
        :param rebuild: Drop the whole index first (needed after changing the embedding model).
        :param overrides: `component.parameter` → value for the ingest graph (recorded in the provenance).
        :param paths: Only these files (absolute, or relative to a collection root; a file deleted on disk
            leaves the index); every file of the collections when `None`.
        :param progress: Called with the report so far after each batch.
        :returns: The run's report: files seen, read, skipped by their stat, new, changed, unchanged, removed,
            skipped with reasons, chunks embedded, reused and deleted, texts embedded, batches, seconds.
        :raises CollectionError: When a name is unknown or there are no collections.
        :raises ValueError: When a path is in none of the collections indexed.
        :raises IndexMismatchError: When the index was built with other settings and `rebuild` is off.
        """
        if paths is not None and (not isinstance(paths, (list, tuple)) or not paths):
            raise ValueError("paths must name at least one file")
        with self._index_lock:
            try:
                return self._index(names, rebuild, overrides, list(paths) if paths is not None else None, progress)
            except PipelineRuntimeError as error:
                cause = root_cause(error)
                if isinstance(cause, ValueError):
                    raise cause from None
                raise

    @property
    def records(self) -> FileRecords:
        """The stat record of the indexed files (`needle.file_records`)."""
        return FileRecords(records_file(self.settings))

    def _check_records(self, ingest: dict[str, Any], selected: list[Any], forget: bool) -> None:
        """
        Drop the stat record where it no longer tells what the index holds: nothing indexed (`forget`), another
        ingest graph (chunking, readers...), or a collection whose root, globs or language changed.
        """
        records = self.records
        if forget:
            records.forget_collection()
        # The batch size and the contract do not change what a run indexes.
        graph = GraphContract.from_dict(ingest, INGEST).without_parameter(ingest, "batch_files")
        graph.pop("metadata", None)
        records.check_signature("graph", _signature(graph))
        for collection in selected:
            records.check_signature(f"collection:{collection.name}", _signature(collection.as_source()), collection.name)

    def _index(
        self,
        names: list[str] | None,
        rebuild: bool,
        overrides: Mapping[str, Any] | None,
        paths: list[str] | None,
        progress: Callable[[dict[str, Any]], None] | None,
    ) -> dict[str, Any]:
        selected = self.collections.select(names)
        set_aside: list[str] = []
        if rebuild:
            set_aside = self._start_afresh()
        ingest = apply_overrides(copy.deepcopy(self.ingest_graph()), overrides or {})
        index_info.check(self.settings, ingest)
        self._check_records(ingest, selected, forget=rebuild or self.store.count_documents() == 0)
        sources = [c.as_source() for c in selected]
        started = time.perf_counter()
        # A full run also drops what collections no longer listed left in the index.
        orphans_deleted = (
            self._delete_collections("not in", list(self.collections.load())) if not names and paths is None else 0
        )
        graph = self.pipeline(INGEST, overrides)
        contract = GraphContract.of(graph, INGEST).require("ingest")
        languages_of = {
            "languages": {c.name: c.language for c in selected}, "main_languages": self.main_languages(),
        }
        fixed = {name: value for name, value in languages_of.items() if contract.accepts(name)}
        report = _IndexReport([c.name for c in selected])
        after: list[str] | None = None
        while True:
            values = {"collections": sources, "paths": paths, "after": after, "optimize": False, **fixed}
            output = contract.read(graph.run(contract.feed(values), include_outputs_from=contract.stages))
            report.add(output)
            _note_problems(self.records, output, report.collections if paths is None and after is None else [])
            after = output["next"]
            if progress is not None:
                progress(report.as_dict(time.perf_counter() - started))
            if after is None:
                break
        # The writers optimise once, after the last batch; how many of the collections' chunks are in each
        # language now tells the query side how to analyse queries (counted again after every change, and
        # once for an index that recorded only the languages' names).
        languages = None
        if report.changed:
            for name, _ in contract.inputs["optimize"]:  # the writers
                writer: Any = graph.get_component(name)
                if getattr(writer, "optimize", False) and hasattr(writer.document_store, "optimize"):
                    writer.document_store.optimize()
        if report.changed or index_info.languages_uncounted(self.settings):
            languages = {
                c.name: self.store.count_values("language", {"field": "meta.collection", "operator": "==", "value": c.name})
                for c in selected
            }
        # What each collection's notes hold to filter by, for `status` (counted once here, read there).
        summarised = (index_info.read(self.settings) or {}).get("summaries") or {}
        stale = [c.name for c in selected if report.changed or orphans_deleted or c.name not in summarised]
        summaries = index_summary.summaries(self.store, self.file_store, stale)
        index_info.record(self.settings, ingest, optimized=report.changed, languages=languages, summaries=summaries)
        if not names and paths is None:  # a full run dropped what collections no longer listed left
            for name in set(summarised) - set(self.collections.load()):
                index_info.forget_collection(self.settings, name)
        result = report.as_dict(time.perf_counter() - started)
        result["chunks_deleted"] += orphans_deleted
        result["deleted"] += orphans_deleted
        return {**result, **({"set_aside": set_aside} if set_aside else {})}

    def _start_afresh(self) -> list[str]:
        """
        Empty the index for a rebuild: both stores recreated with the configured layout (a damaged one moved
        aside first), the provenance forgotten.

        :returns: Where damaged stores were moved.
        """
        before = set(self.settings.index_dir.glob("*.damaged-*"))
        for store in (self.store, self.file_store):
            store.delete_all_documents(recreate_index=True)
        index_info.forget(self.settings)
        after = set(self.settings.index_dir.glob("*.damaged-*"))
        return sorted(str(path) for path in after - before)

    def check(self, repair: bool = False) -> dict[str, Any]:
        """
        Read the whole index: the provenance, every chunk and whole file with its vectors, one search per kind
        of vector; report the damage a query would trip on before it does (`needle check`). Compare the chunk
        store, the file store and the stat record (`needle.consistency`): files whose data is lost are
        forgotten by the record, so that the next `needle index` reads them again, and collections holding
        orphaned data are compared in full by it.

        Index runs wait for it (and it for them): points written between counting and reading are not damage.

        :param repair: Heal what can be healed without a rebuild: index the lost files again now and delete
            the orphaned data, then check again (`repaired` says what was done).
        :returns: `problems` (empty for a sound index), `lost` and `orphaned` files, what each store held and
            the seconds it took.
        """
        with self._index_lock:
            report = self._check()
            if repair and (report["lost"] or report["orphaned"]) and not report["damaged"]:
                repaired = self._repair(report["lost"], report["orphaned"])
                report = {**self._check(), "repaired": repaired}
            return report

    def _check(self) -> dict[str, Any]:
        """`check` with the index lock held."""
        started = time.perf_counter()
        problems: list[str] = []
        try:
            index_info.read(self.settings)
        except IndexDamagedError as error:
            problems.append(str(error))
        stores: dict[str, dict[str, int]] = {}
        for role, store in (("chunks", self.store), ("files", self.file_store)):
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
            findings = consistency.compare(self.store, self.file_store, self.records, roots)
            consistency.forget(findings, self.records)
        return {
            "problems": problems + findings.problems(),
            "damaged": bool(problems),
            "lost": sorted(findings.lost),
            "orphaned": sorted(findings.orphaned),
            "stores": stores,
            "seconds": round(time.perf_counter() - started, 2),
        }

    def _repair(self, lost: list[str], orphaned: list[str]) -> dict[str, Any]:
        """Delete the orphaned files' data and index the lost files again (only those)."""
        roots = {c.name: c.root for c in self.collections.load().values()}
        deleted = 0
        if orphaned:
            where = {"field": "meta.source_doc_id", "operator": "in", "value": orphaned}
            deleted = sum(int(store.delete_by_filter(where) or 0) for store in (self.store, self.file_store))
        paths = [str(Path(roots[name]).expanduser() / path) for name, path in map(split_key, lost)]
        indexed = self._index(None, False, None, paths, None) if paths else None
        return {
            "reindexed": len(paths),
            "chunks_embedded": indexed["chunks_embedded"] if indexed else 0,
            "orphans_deleted": deleted,
        }

    def optimize(self) -> dict[str, Any]:
        """
        Lay the index out as the `index:` settings say (HNSW, quantization, what stays on disk): the stores
        rebuild the segments laid out otherwise, from the stored vectors; nothing is embedded again.

        :returns: What changed, the settings applied and the seconds it took.
        """
        with self._index_lock:
            pending = index_info.pending_layout(self.settings)
            started = time.perf_counter()
            changed = [store.optimize() for store in (self.store, self.file_store)]
            index_info.record_layout(self.settings)
        return {
            "changed": any(changed),
            "applied": pending,
            "layout": index_info.layout(self.settings),
            "seconds": round(time.perf_counter() - started, 2),
        }

    @contextmanager
    def writes_paused(self) -> Iterator[None]:
        """Hold off index runs and every write to the stores (queries go on), everything written flushed."""
        with self._index_lock, ExitStack() as paused:
            for store in (self.store, self.file_store):
                if hasattr(store, "writes_paused"):
                    paused.enter_context(store.writes_paused())
            yield

    def backup(self, path: str) -> dict[str, Any]:
        """
        Back the index up into a new folder (`needle.backups`): a consistent copy of the embedded index, or
        snapshots on the Qdrant server, with the provenance and the collection list.

        :returns: The backup's manifest and folder.
        :raises BackupError: When the folder is not new or empty, or there is no index yet.
        """
        from needle import backups

        return backups.backup(self, path)

    def restore(self, path: str) -> dict[str, Any]:
        """
        Put a backup in place of the index (`needle.backups`); no other process may have the index open.

        :returns: The backup's manifest and the counts restored.
        :raises BackupError: When the folder is not a backup of this kind of store.
        :raises IndexMismatchError: When the backup was built by other embedding settings.
        """
        from needle import backups

        with self._index_lock:
            restored = backups.restore(self, path)
            self.records.forget_collection()  # the restored index holds other versions of the files
            return restored

    def remove_collection(self, name: str) -> int:
        """
        Delete a collection's chunks from the index, then forget the collection: the list changes only once
        the index has, so a store another process holds (or any failure) leaves both as they were. Chunks
        left by a collection no longer listed (`status` names them) go the same way.

        :returns: The number of chunks deleted.
        :raises CollectionError: When no collection has that name and the index holds nothing of it.
        """
        with self._index_lock:
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
        deleted = self._delete_collections("==", name)
        self.records.forget_collection(name)  # its files are read again if it comes back
        index_info.forget_collection(self.settings, name)
        return deleted

    def _delete_collections(self, operator: str, value: Any) -> int:
        """
        Delete the chunks and whole files whose `meta.collection` matches; a store that deleted any is flushed
        (a full index run asks on every run, and mostly finds nothing).
        """
        where = {"field": "meta.collection", "operator": operator, "value": value}
        with self._index_lock:
            deleted = [(store, int(store.delete_by_filter(where) or 0)) for store in (self.store, self.file_store)]
            for store, count in deleted:
                if count:
                    store.flush()
        return deleted[0][1]

    def _orphaned_chunks(self) -> dict[str, int]:
        """Chunk counts of collections the index holds but the list no longer names."""
        listed = set(self.collections.load())
        counts: dict[str, int] = {}
        for row in self.store.list_documents_meta(fields=["collection"]):
            collection = row["meta"].get("collection", "")
            if collection not in listed:
                counts[collection] = counts.get(collection, 0) + 1
        return counts

    def status(self) -> dict[str, Any]:
        """
        Collections with file and chunk counts, languages, frontmatter fields and tags; the models, where the
        index lives and the context annotations.

        Its cost does not grow with the index: the counts, languages, fields and tags are what the last index
        run recorded (`needle.index_summary`), as that run left them; a collection without a record (an index
        run that did not finish, an index built before records) is counted by the engine's facets instead.
        """
        for store in (self.store, self.file_store):  # damage the engine aborts on is named, not read past
            check = getattr(store, "check_unopened", None)
            if check is not None:
                check()
        recorded = index_info.read(self.settings)
        summaries = (recorded or {}).get("summaries") or {}
        languages = (recorded or {}).get("languages") or {}
        listed = self.collections.load()
        counted: dict[str, dict[str, int]] | None = None  # the engine's counts, when a record lacks them

        def engine_counts() -> dict[str, dict[str, int]]:
            chunks = self.store.count_values("collection")
            return {"chunks": chunks, "files": self.file_store.count_values("collection") if chunks else {}}

        collections = []
        for collection in listed.values():
            name = collection.name
            summary = summaries.get(name) or {}
            if "chunks" in summary:
                chunks, files = int(summary["chunks"]), int(summary.get("files", 0))
            else:
                counted = counted or engine_counts()
                chunks, files = counted["chunks"].get(name, 0), counted["files"].get(name, 0)
            if chunks and not files:  # an index without whole-file documents: count its files' ids
                in_collection = {"field": "meta.collection", "operator": "==", "value": name}
                files = len(self.store.count_values("source_doc_id", in_collection))
            collections.append({
                "name": name, "root": collection.root, "files": files, "chunks": chunks,
                "languages": sorted(languages.get(name) or []), "fields": summary.get("fields", {}), "tags": summary.get("tags", []),
            })
        if counted is not None:
            orphaned = {name: count for name, count in counted["chunks"].items() if name not in listed}
        else:
            orphaned = {name: int(s.get("chunks", 0)) for name, s in summaries.items() if name not in listed and s.get("chunks")}
        problems, problems_total = self.records.problems(limit=STATUS_PROBLEMS)
        return {
            "collections": collections,
            # Chunks of collections no longer listed: the next `needle index` (or `collection remove`) drops them.
            "orphaned": orphaned,
            "embedding_model": self.settings.embedding.model,
            "embedding_provider": self.settings.embedding.provider,
            "sparse_model": self.settings.sparse.model,
            "store": self.settings.store.url or str(self.settings.index_dir),
            "index_built_with": recorded["fingerprint"] if recorded else None,
            "index_layout": recorded.get("layout") if recorded else None,
            "layout_pending": index_info.pending_layout(self.settings),
            "last_backup": recorded.get("backup") if recorded else None,
            "contexts": self.contexts.load(),
            "data_dir": str(self.settings.data_dir),
            # Files the runs skipped or indexed with a problem, until a run reads them without one.
            "problems": problems,
            "problems_total": problems_total,
            **({"watcher": self.watcher.state()} if self.watcher is not None else {}),
        }

    def indexed_files(self, collection: str | None = None) -> list[dict[str, Any]]:
        """
        The files in the index (`needle ls`): collection, path, title and chunk count, sorted.

        :param collection: Only this collection's files.
        :raises CollectionError: When the collection is unknown.
        """
        names = [c.name for c in self.collections.select([collection] if collection else None)]
        files: dict[tuple[str, str], dict[str, Any]] = {}
        for row in self.store.list_documents_meta(fields=["collection", "path", "title"]):
            meta = row["meta"]
            if meta.get("collection") not in names:
                continue
            entry = files.setdefault(
                (meta.get("collection", ""), meta.get("path", "")),
                {"collection": meta.get("collection", ""), "path": meta.get("path", ""), "title": meta.get("title", ""), "chunks": 0},
            )
            entry["chunks"] += 1
        return [files[key] for key in sorted(files)]


def _signature(value: Any) -> str:
    """A stable hash of a JSON-like value."""
    return hashlib.sha1(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


class _IndexReport:
    """An index run's report, added up over its batches."""

    def __init__(self, collections: list[str]) -> None:
        self.collections = collections
        self.first: dict[str, Any] | None = None
        self.batches = 0
        self.totals: dict[str, int] = {}
        self.skipped: list[dict[str, Any]] = []
        self.warnings: list[dict[str, Any]] = []
        self.documents: dict[str, Any] = {}
        # Files the first batch found to read (a run of several batches), those no batch has handed on yet, and
        # at the end those that vanished (never handed on) or appeared (handed on, unknown to the first batch).
        self.expected: frozenset[str] = frozenset()
        self.unread: set[str] = set()
        self.vanished = 0
        self.appeared = 0

    def _count(self, key: str, value: int) -> None:
        self.totals[key] = self.totals.get(key, 0) + int(value)

    def add(self, output: dict[str, Any]) -> None:
        """Add one batch's outputs (the ingest graph's contract names, `pipelines/ingest.yml`)."""
        sources = output.get("sources") or []
        if self.first is None:
            self.first = output
            self.skipped.extend(output["scan_skipped"])
            self.expected = frozenset(output.get("pending") or [])
            self.unread = set(self.expected)
        elif self.expected:
            keys = {f"{s['collection']}:{s['path']}" for s in sources}
            self.appeared += len(keys - self.expected)
        self.batches += 1
        self.unread.difference_update(f"{s['collection']}:{s['path']}" for s in sources)
        if output.get("next") is None:
            self.vanished = len(self.unread)
        converted_documents = output.get("converted_documents") or []
        converted_skipped = output.get("converted_skipped") or []
        unchunked = output.get("chunk_skipped") or []
        stats = output["diff_stats"]
        for key in ("files_new", "files_changed", "files_unchanged", "files_removed"):
            self._count(key, stats[key])
        self._count("files_read", len(output["read_documents"]) + len(converted_documents) - len(unchunked))
        self._count("files_unread", len(output["read_skipped"]) + len(converted_skipped) + len(unchunked))
        self._count("chunks", stats["chunks_total"])
        reused = len(output.get("chunks_reused") or [])
        file_reused = len(output.get("files_reused") or [])
        self._count("chunks_written", output["chunks_written"])
        self._count("chunks_reused", reused)
        self._count("chunks_embedded", output["chunks_written"] - reused)
        self._count("files_embedded", output["file_points_written"] - file_reused)
        self._count("files_reused", file_reused)
        pooled = len(output.get("files_pooled") or [])
        self._count("files_pooled", pooled)
        self._count(
            "texts_embedded", len(output.get("chunks_to_embed") or []) + len(output.get("files_to_embed") or []) - pooled,
        )
        self._count("chunks_deleted", output["chunks_deleted"])
        self._count("file_points_deleted", output["file_points_deleted"])
        self.skipped.extend(output["read_skipped"] + converted_skipped + unchunked)
        self.warnings.extend(
            (output.get("read_warnings") or []) + (output.get("converted_warnings") or []) + (output.get("chunk_warnings") or [])
        )
        for key, value in (output.get("converted_stats") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.documents[key] = self.documents.get(key, 0) + value
            else:
                self.documents.setdefault(key, value)

    @property
    def changed(self) -> bool:
        """Whether any batch wrote or deleted anything."""
        return any(self.totals.get(k) for k in ("chunks_written", "chunks_deleted", "files_embedded", "files_reused", "file_points_deleted"))

    def as_dict(self, seconds: float) -> dict[str, Any]:
        """The report so far."""
        counts = (self.first or {}).get("counts", {})
        totals = self.totals
        by_stat = int(counts.get("files_skipped_by_stat", 0))
        return {
            "collections": self.collections,
            # files_seen = files_read + files_skipped_by_stat + files_not_read + files_vanished
            "files_seen": int(counts.get("files_found", 0)) + self.appeared,
            "files_read": totals.get("files_read", 0),
            "files_skipped_by_stat": by_stat,
            "files_not_read": totals.get("files_unread", 0),
            "files_vanished": self.vanished,
            "files_pending": int(counts.get("files_pending", 0)),
            "files_new": totals.get("files_new", 0),
            "files_changed": totals.get("files_changed", 0),
            "files_unchanged": totals.get("files_unchanged", 0) + by_stat,
            "files_removed": totals.get("files_removed", 0),
            "skipped": self.skipped,
            "warnings": self.warnings,
            "documents": self.documents,
            "chunks": totals.get("chunks", 0),
            "chunks_embedded": totals.get("chunks_embedded", 0),
            "chunks_reused": totals.get("chunks_reused", 0),
            "chunks_deleted": totals.get("chunks_deleted", 0),
            "files_embedded": totals.get("files_embedded", 0),
            "files_pooled": totals.get("files_pooled", 0),
            "files_reused": totals.get("files_reused", 0),
            "file_points_deleted": totals.get("file_points_deleted", 0),
            "deleted": totals.get("chunks_deleted", 0) + totals.get("file_points_deleted", 0),
            "texts_embedded": totals.get("texts_embedded", 0),
            "batches": self.batches,
            "seconds": round(seconds, 2),
        }


def _note_problems(records: FileRecords, output: dict[str, Any], listed: list[str]) -> None:
    """
    Keep, for `status`, why the files of a batch were skipped or indexed with a problem (their earlier
    problems forgotten), and, given the collections a full run listed, what their listing left out.

    :param output: A batch's outputs by the ingest graph's contract names.
    """
    handled = [(s["collection"], s["path"]) for s in output.get("sources") or []]
    handled += [split_key(key) for key in output.get("gone") or []]
    found = [
        (item.get("collection", ""), item.get("path", ""), kind, str(item.get("reason", "")))
        for step in ("read", "converted", "chunk")
        for kind, socket in (("skipped", "skipped"), ("warning", "warnings"))
        for item in output.get(f"{step}_{socket}") or []
    ]
    if listed:
        found += [(i["collection"], i["path"], "listed", str(i["reason"])) for i in output["scan_skipped"]]
    records.note_problems(handled, found, listed)


def _user_inputs(graph: Pipeline | None, name: str, free: Mapping[str, Any]) -> list[str]:
    """A graph's free run inputs that its contract does not feed (those a user may set per run), as `stage.socket`."""
    fed = GraphContract.of(graph, name).fed() if graph is not None else set()
    return [f"{c}.{s}" for c, sockets in free.items() for s in sockets if f"{c}.{s}" not in fed]


__all__ = ["Needle", "CollectionError", "LLMError"]
