"""Needle's one facade over the YAML graphs, shared by the CLI, the server and the eval runner.

It loads each graph once (through `needle.loader`), runs it, and shapes results; it implements no
retrieval step itself.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import Pipeline
from haystack.core.errors import PipelineRuntimeError

from needle import index_info
from needle.collections import Collection, CollectionError, CollectionRegistry
from needle.document_stores import NeedleDocumentStore
from needle.loader import load_pipeline, make_store
from needle.settings import Settings, load_settings

SEARCH_MODES = ("search", "vsearch", "query")


def docid(source_doc_id: str) -> str:
    """A short, stable id for a file (`collection:path`), shown as `#abc123` and accepted by `get`."""
    return hashlib.sha1(source_doc_id.encode("utf-8")).hexdigest()[:6]


@dataclass
class SearchResult:
    """One hit: where it is, why it matched, and the text."""

    docid: str
    collection: str
    path: str
    title: str
    heading_path: list[str]
    start_line: int
    end_line: int
    score: float
    text: str
    snippet: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def explain(self) -> dict[str, Any]:
        """How the result got its place: rank and score at every stage that ran."""
        meta = self.meta
        stages: dict[str, Any] = {}
        if "fusion" in meta:
            stages["lists"] = {
                name: {"rank": entry["rank"] + 1, "score": entry.get("score"), "kind": entry.get("kind")}
                for name, entry in meta["fusion"].items()
            }
        if "raw_score" in meta:
            stages["raw_score"] = meta["raw_score"]
        for key in ("bonus", "term_hits", "rerank", "blend", "fused_score"):
            if key in meta:
                stages[key] = meta[key]
        stages["final_score"] = self.score
        return stages

    def as_dict(self, explain: bool = False) -> dict[str, Any]:
        """A JSON-ready dictionary (with the per-stage trace when `explain`)."""
        data = self._fields()
        if explain:
            data["explain"] = self.explain()
        return data

    def _fields(self) -> dict[str, Any]:
        return {
            "docid": f"#{self.docid}",
            "collection": self.collection,
            "path": self.path,
            "title": self.title,
            "heading_path": self.heading_path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": self.score,
            "snippet": self.snippet,
            "text": self.text,
        }


def to_result(doc: Any) -> SearchResult:
    """Shape a chunk `Document` as a `SearchResult`."""
    meta = doc.meta
    return SearchResult(
        docid=docid(meta.get("source_doc_id", "")),
        collection=meta.get("collection", ""),
        path=meta.get("path", ""),
        title=meta.get("title", ""),
        heading_path=list(meta.get("heading_path", [])),
        start_line=int(meta.get("start_line", 0)),
        end_line=int(meta.get("end_line", 0)),
        score=float(doc.score or 0.0),
        text=doc.content or "",
        snippet=meta.get("snippet") or "",
        meta=meta,
    )


class LLMError(RuntimeError):
    """The configured LLM cannot answer: no server at its URL, or the server refuses the request."""


def llm_error(settings: Settings, error: BaseException) -> LLMError:
    """
    Explain an OpenAI client error in terms of Needle's `llm` settings.

    :param settings: Needle's settings (the `llm` section names the server, the model and the key).
    :param error: What the OpenAI client raised.
    :returns: An `LLMError` naming the server, the model, the cause and what to configure.
    """
    import openai

    llm = settings.llm
    if isinstance(error, openai.APIConnectionError):
        what = f"no LLM answered at {llm.url}"
    elif isinstance(error, openai.APIStatusError):
        what = f"the LLM at {llm.url} refused the request"
    else:
        what = f"cannot use the LLM at {llm.url}"
    return LLMError(
        f"{what} (model {llm.model}): {str(error).strip().rstrip('.') or type(error).__name__}. Point the `llm` section of the "
        f"configuration at an OpenAI-compatible server (NEEDLE_LLM__URL, NEEDLE_LLM__MODEL); its API key is read "
        f"from ${llm.api_key_env} (any value for a local server)."
    )


def root_cause(error: BaseException) -> BaseException:
    """The first error that is not a `PipelineRuntimeError` in a chain of them (graphs nested as stages)."""
    while isinstance(error, PipelineRuntimeError) and error.__cause__ is not None:
        error = error.__cause__
    return error


class SharedStores:
    """
    One store object per location (its serialised definition) for the graphs of one or more `Needle`s.

    The embedded engine opens a folder once per process, and loading a graph builds a store object per
    component: `Needle` hands each component the one object of its location instead (`Needle.share_stores`).
    """

    def __init__(self) -> None:
        self._stores: dict[str, NeedleDocumentStore] = {}
        self._lock = threading.Lock()

    def adopt(self, store: NeedleDocumentStore) -> NeedleDocumentStore:
        """
        The shared object of `store`'s location: the one held already, else `store` itself, held from now on.

        :param store: A store, not yet opened.
        :returns: The store object to use.
        """
        key = json.dumps(store.to_dict(), sort_keys=True, default=str)
        with self._lock:
            return self._stores.setdefault(key, store)

    def close(self) -> None:
        """Close every store held (the embedded index unlocks); each reopens on its next use."""
        with self._lock:
            stores = list(self._stores.values())
        for store in stores:
            store.close()


class Needle:
    """Runs Needle's graphs for one configuration; thread-safe, each graph loaded and warmed once."""

    def __init__(
        self, settings: Settings | None = None, progress_bar: bool = False, stores: SharedStores | None = None
    ) -> None:
        """
        Set up; no graph loads and no store opens until first use.

        :param settings: Needle's settings; loaded from the environment when `None`.
        :param progress_bar: Whether embedders show progress bars.
        :param stores: Store objects to share with another `Needle` of this process (see `derive`).
        """
        self.settings = settings or load_settings()
        self.progress_bar = progress_bar
        self.collections = CollectionRegistry(self.settings.collections_file)
        self.stores = stores if stores is not None else SharedStores()
        self._pipelines: dict[str, Pipeline] = {}
        self._lock = threading.Lock()
        self._store: NeedleDocumentStore | None = None
        self._file_store: NeedleDocumentStore | None = None

    def derive(self, settings: Settings) -> Needle:
        """
        A Needle for other settings (another LLM, other ranking knobs) that shares this one's store objects.

        :param settings: The other settings.
        :returns: The new Needle; closing either closes the shared stores, which reopen on next use.
        """
        return Needle(settings, self.progress_bar, stores=self.stores)

    def pipeline(self, name: str) -> Pipeline:
        """The named graph (`pipelines/<name>.yml` or a path), loaded and warmed once."""
        with self._lock:
            if name not in self._pipelines:
                pipeline = self.share_stores(load_pipeline(name, self.settings, progress_bar=self.progress_bar))
                pipeline.warm_up()
                self._pipelines[name] = pipeline
            return self._pipelines[name]

    def share_stores(self, pipeline: Pipeline) -> Pipeline:
        """
        Give every component of a graph this Needle's store object of each location.

        :param pipeline: A loaded graph; graphs run as a stage and components wrapped by a component
            (a `CachedReranker`'s ranker) included.
        :returns: The same graph.
        """
        for instance in _components(pipeline):
            for name in _STORE_ATTRIBUTES:
                store = getattr(instance, name, None)
                if store is not None:
                    setattr(instance, name, self.stores.adopt(store))
        return pipeline

    @property
    def store(self) -> NeedleDocumentStore:
        """The document store the graphs share."""
        if self._store is None:
            self._store = self.stores.adopt(make_store(self.settings))
        return self._store

    def close(self) -> None:
        """Drop the loaded graphs and close every store they and this Needle use (the embedded index unlocks)."""
        with self._lock:
            self._pipelines.clear()
            self._store = self._file_store = None
        self.stores.close()

    @property
    def file_store(self) -> NeedleDocumentStore:
        """The store of whole-file documents beside the chunks."""
        if self._file_store is None:
            self._file_store = self.stores.adopt(make_store(self.settings, files=True))
        return self._file_store

    def search(
        self,
        query: str,
        mode: str = "query",
        top_k: int | None = None,
        collections: list[str] | None = None,
        min_score: float | None = None,
        **switches: bool | None,
    ) -> list[SearchResult]:
        """The results of `ask` alone (same arguments)."""
        return self.ask(query, mode, top_k, collections, min_score, **switches)["results"]

    def ask(
        self,
        query: str,
        mode: str = "query",
        top_k: int | None = None,
        collections: list[str] | None = None,
        min_score: float | None = None,
        expand: bool | None = None,
        rerank: bool | None = None,
        chunks: bool = False,
    ) -> dict[str, Any]:
        """
        Run a query graph.

        :param query: The search text.
        :param mode: `search` (BM25), `vsearch` (vectors), `query` (hybrid) or a pipeline file path.
        :param top_k: Result count; the configured default when `None`.
        :param collections: Restrict to these collections.
        :param min_score: Drop results below this score.
        :param expand: Switch query expansion on or off (graphs that expand).
        :param rerank: Switch reranking on or off (graphs that rerank).
        :param chunks: Every matching chunk instead of one result per file (graphs that group by file).
        :returns: `{"results": [SearchResult, ...] best first, "label": "PASS" | "NO_RESULTS" | ...}`.
        :raises ValueError: On invalid input (empty query, bad `top_k`, unknown collection).
        :raises IndexMismatchError: When the index was built with other embedding settings.
        """
        request = self._request(query, top_k, collections, min_score, expand, rerank, chunks)
        try:
            output = self.pipeline(mode).run({"request": request})
        except PipelineRuntimeError as error:
            if isinstance(error.__cause__, ValueError):
                raise error.__cause__ from None
            raise
        results = [to_result(doc) for doc in output["snippets"]["documents"]]
        label = output.get("label", {}).get("label") or ("PASS" if results else "NO_RESULTS")
        return {"results": results, "label": label}

    def answer(
        self,
        question: str,
        top_k: int | None = None,
        collections: list[str] | None = None,
        min_score: float | None = None,
        expand: bool | None = None,
        rerank: bool | None = None,
        pipeline: str = "rag",
    ) -> dict[str, Any]:
        """
        Answer a question from the notes with the configured LLM, citing chunks as `[path:start-end]`.

        :param question: The question; it is also the search text.
        :param top_k: Chunks given to the LLM; the configured result count when `None`.
        :param collections: Restrict to these collections.
        :param min_score: Give the LLM no chunk scoring below this.
        :param expand: Switch query expansion on or off.
        :param rerank: Switch reranking on or off.
        :param pipeline: An answer graph: `rag` or a YAML path with the inputs and outputs of `pipelines/rag.yml`.
        :returns: `{"answer": text, "results": [SearchResult] (every chunk the LLM was given, best first),
            "cited": [SearchResult] (the chunks the answer cites), "unknown_citations": ["path:start-end"]
            (citations of chunks it was not given), "label": the search's trust label}`.
        :raises ValueError: On invalid input (empty question, bad `top_k`, unknown collection).
        :raises IndexMismatchError: When the index was built with other embedding settings.
        :raises LLMError: When no LLM answers at `llm.url`, or it refuses the request.
        """
        import openai

        request = self._request(question, top_k, collections, min_score, expand, rerank, chunks=False)
        try:
            graph = self.pipeline(pipeline)
            output = graph.run({"retrieve": request, "prompt": {"query": question}}, include_outputs_from={"retrieve"})
        except openai.OpenAIError as error:  # the client refused to start, e.g. without a key
            raise llm_error(self.settings, error) from None
        except PipelineRuntimeError as error:
            cause = root_cause(error)
            if isinstance(cause, openai.OpenAIError):
                raise llm_error(self.settings, cause) from None
            if isinstance(cause, ValueError):
                raise cause from None
            raise
        retrieved = output["retrieve"]
        results = [to_result(doc) for doc in retrieved["documents"]]
        return {
            "answer": output["cite"]["answer"],
            "results": results,
            "cited": [to_result(doc) for doc in output["cite"]["cited"]],
            "unknown_citations": list(output["cite"]["unknown"]),
            "label": retrieved.get("label") or ("PASS" if results else "NO_RESULTS"),
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
    ) -> dict[str, Any]:
        """The search request of a query graph, defaults filled from the settings, collections and index checked."""
        self.collections.select(collections)
        index_info.check(self.settings)
        return {
            "query": query,
            "top_k": top_k if top_k is not None else self.settings.retrieval.top_k,
            "collections": collections or None,
            "min_score": min_score if min_score is not None else self.settings.retrieval.min_score,
            "expand": expand,
            "rerank": rerank,
            "chunks": chunks,
        }

    def index(self, names: list[str] | None = None, rebuild: bool = False) -> dict[str, Any]:
        """
        Index collections (all when `names` is empty): new and changed chunks are embedded, removed files leave.

        :param names: Collections to index.
        :param rebuild: Drop the whole index first (needed after changing the embedding model).
        :returns: The run's report: files seen, indexed, unchanged, removed, skipped with reasons, chunks, seconds.
        :raises CollectionError: When a name is unknown or there are no collections.
        :raises IndexMismatchError: When the index was built with other settings and `rebuild` is off.
        """
        selected = self.collections.select(names)
        if rebuild:
            self.store.delete_all_documents()
            self.file_store.delete_all_documents()
            index_info.forget(self.settings)
        index_info.check(self.settings)
        sources = [c.as_source() for c in selected]
        started = time.perf_counter()
        output = self.pipeline("ingest").run(
            {"scanner": {"collections": sources}, "differ": {"collections": sources}, "file_differ": {"collections": sources}},
            include_outputs_from={"scanner", "reader", "differ"},
        )
        index_info.record(self.settings)
        stats = output["differ"]["stats"]
        return {
            "collections": [c.name for c in selected],
            "files_seen": len(output["scanner"]["sources"]),
            "files_read": len(output["reader"]["documents"]),
            "files_new": stats["files_new"],
            "files_changed": stats["files_changed"],
            "files_unchanged": stats["files_unchanged"],
            "files_removed": stats["files_removed"],
            "skipped": output["scanner"]["skipped"] + output["reader"]["skipped"],
            "warnings": output["reader"].get("warnings", []),
            "chunks": stats["chunks_total"],
            "chunks_embedded": output["writer"]["written"],
            "chunks_deleted": output["writer"]["deleted"],
            "files_embedded": output["file_writer"]["written"],
            "seconds": round(time.perf_counter() - started, 2),
        }

    def remove_collection(self, name: str) -> int:
        """
        Forget a collection and delete its chunks from the index.

        :returns: The number of chunks deleted.
        :raises CollectionError: When no collection has that name.
        """
        self.collections.remove(name)
        where = {"field": "meta.collection", "operator": "==", "value": name}
        deleted = self.store.delete_by_filter(where)
        self.file_store.delete_by_filter(where)
        for store in (self.store, self.file_store):
            store.flush()
        return int(deleted or 0)

    def status(self) -> dict[str, Any]:
        """Collections with file and chunk counts, the model, and where the index lives."""
        rows = self.store.list_documents_meta(fields=["collection", "source_doc_id"])
        per_collection: dict[str, dict[str, Any]] = {}
        for row in rows:
            entry = per_collection.setdefault(row["meta"].get("collection", ""), {"files": set(), "chunks": 0})
            entry["files"].add(row["meta"].get("source_doc_id"))
            entry["chunks"] += 1
        collections = []
        for collection in self.collections.load().values():
            entry = per_collection.get(collection.name, {"files": set(), "chunks": 0})
            collections.append(
                {"name": collection.name, "root": collection.root, "files": len(entry["files"]), "chunks": entry["chunks"]}
            )
        recorded = index_info.read(self.settings)
        return {
            "collections": collections,
            "embedding_model": self.settings.embedding.model,
            "sparse_model": self.settings.sparse.model,
            "store": self.settings.store.url or str(self.settings.index_dir),
            "index_built_with": recorded["fingerprint"] if recorded else None,
            "data_dir": str(self.settings.data_dir),
        }

    def resolve(self, ref: str) -> tuple[Collection, Path]:
        """
        Find a file by `#docid`, `collection/path`, `collection:path` or a path inside some collection.

        :returns: The collection and the file's absolute path, which is always inside the collection's root.
        :raises CollectionError: When the reference escapes its collection, is malformed or names no file.
        """
        if not ref or "\x00" in ref:
            raise CollectionError("a file reference must be a non-empty path without NUL bytes")
        collections = self.collections.load()
        if ref.startswith("#"):
            wanted = ref[1:].lower()
            for row in self.store.list_documents_meta(fields=["source_doc_id"]):
                source = row["meta"].get("source_doc_id", "")
                if docid(source).startswith(wanted) and len(wanted) >= 4:
                    name, _, rel = source.partition(":")
                    if name in collections:
                        return collections[name], _inside(collections[name], rel)
            raise CollectionError(f"no indexed file has docid {ref}")
        for sep in (":", "/"):
            name, found, rel = ref.partition(sep)
            if found and name in collections:
                return collections[name], _inside(collections[name], rel)
        for collection in collections.values():
            if (Path(collection.root) / ref).is_file():
                return collection, _inside(collection, ref)
        raise CollectionError(f"no file '{ref}' in any collection ({', '.join(collections) or 'none yet'})")


_STORE_ATTRIBUTES = ("document_store", "file_document_store")


def _components(pipeline: Pipeline) -> Iterator[Any]:
    """Every component of a graph, with those of graphs it runs as a stage and those its components wrap."""
    seen: set[int] = set()

    def visit(instance: Any) -> Iterator[Any]:
        if id(instance) in seen:
            return
        seen.add(id(instance))
        yield instance
        for value in vars(instance).values():
            if isinstance(value, Pipeline):
                for _, inner in value.walk():
                    yield from visit(inner)
            elif hasattr(value, "__haystack_input__"):
                yield from visit(value)

    for _, instance in pipeline.walk():
        yield from visit(instance)


def _inside(collection: Collection, rel: str) -> Path:
    root = Path(collection.root).resolve()
    if Path(rel).is_absolute():
        raise CollectionError(f"'{rel}' is absolute; give a path relative to collection '{collection.name}'")
    target = (root / rel).resolve()
    if target != root and root not in target.parents:
        raise CollectionError(f"'{rel}' leads outside collection '{collection.name}'")
    if not target.is_file():
        raise CollectionError(f"no file '{rel}' in collection '{collection.name}'")
    return target


__all__ = ["Needle", "SharedStores", "SearchResult", "SEARCH_MODES", "docid", "CollectionError", "LLMError"]
