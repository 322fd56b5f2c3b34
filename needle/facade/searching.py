"""Searching and answering: a request fed to a query or answer graph by its contract, its named outputs shaped into results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from haystack.core.errors import PipelineRuntimeError

from needle.core.arguments import SearchFilters
from needle.core.errors import LLMError, llm_error, root_cause
from needle.core.languages import AUTO
from needle.core.languages import DEFAULT as DEFAULT_LANGUAGE
from needle.core.results import Answer, Hit, SearchAnswer, SelfQuery, hit
from needle.facade.graph_loading import Graphs, reported_stages
from needle.lifecycle import provenance as index_info
from needle.lifecycle.readiness import unready_hints
from needle.runtime.contract import GraphContract
from needle.runtime.pool import GraphPool


def warnings(output: Mapping[str, Any]) -> list[str]:
    """Every warning the components of a run reported, in order, once each."""
    found = [w for result in output.values() if isinstance(result, Mapping) for w in result.get("warnings") or []]
    return list(dict.fromkeys(found))


def sub_questions(read: Mapping[str, Any]) -> list[str]:
    """The sub-questions a run's decomposition searched (none for a single-part query), from its `sub_questions` output."""
    return [q["text"] for q in read.get("sub_questions") or []]


def merged_with_fallback(first: list[Hit], wider: list[Hit]) -> list[Hit]:
    """
    The results of a search whose question's filters left too few: those results first, then the new ones of
    the search without those filters, as many in all as the longer of the two lists.
    """
    seen = {(r.docid, r.start_line) for r in first}
    return (first + [r for r in wider if (r.docid, r.start_line) not in seen])[: max(len(wider), len(first))]


class Searching(Graphs):
    """`search` and `answer`, and what they need: the request, the query's languages, the context annotations."""

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
            kept = len({(r.docid, r.start_line) for r in results})
            results = merged_with_fallback(results, [hit(doc, explain) for doc in given["documents"]])
            read = {
                **read,
                "fallback": True,
                "fallback_reason": (
                    f"the question's filters left {kept} result(s), fewer than min_results={read['min_results']}: "
                    "they stay first, followed by the search without those filters"
                ),
            }
        label = given.get("label") or ("PASS" if results else "NO_RESULTS")
        said = read and (read["applied"] or read["recent"] or read["query"] != read["original"] or read.get("fallback"))
        trace = {"confidence": given.get("signals"), "sub_questions": sub_questions(given)} if explain else None
        return SearchAnswer(
            label=label,
            results=self._annotated(results),
            confidence=given.get("confidence"),
            warnings=warnings(output) + (self._unready_hints(collections) if not results else []),
            explain=trace,
            self_query=SelfQuery(**read) if said and read else None,
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
                output = graph.run(
                    contract.feed(values, run_data), include_outputs_from=reported_stages(graph, contract)
                )
                return output, contract.read(output)
        except PipelineRuntimeError as error:
            cause = root_cause(error)
            if isinstance(cause, ValueError):
                raise cause from None
            raise

    def prime(self) -> None:
        """
        Pay before the first request what a first real run of a search builds once for the whole process:
        the index's vocabulary for the self-query rules (`haystack_integrations.components.needle._vocabulary`), the language identifier
        of an index in several languages, the engine's first reads of the index. One `search` run, needing
        the index open (an owner once its graphs are warm, never a standby); every later instance of every
        graph finds them built (a pool's instances share them).

        :raises Exception: What the search raises (an empty or damaged index...).
        """
        self.search("warm up", pipeline="search", top_k=1)

    def read_ahead(self) -> int:
        """
        Read the chunk and whole-file stores ahead of the queries (an owner does it on a thread of its own
        once primed; `EdgeDocumentStore.read_ahead` says why). A Qdrant server's store reads nothing.

        :returns: The points read.
        """
        total = 0
        for store in (self.store, self.file_store):
            total += int(store.read_ahead())
        return total

    def _languages(self, contract: GraphContract, collections: list[str] | None) -> dict[str, Any]:
        """The languages of the searched chunks, for a graph that takes them (its keyword embedder)."""
        return {"languages": self.query_languages(collections)} if contract.accepts("languages") else {}

    def _annotated(self, results: list[Hit]) -> list[Hit]:
        """The hits with the context annotations of their collection and folders."""
        contexts = self.contexts.load()
        if not contexts:
            return results
        return [
            r.model_copy(update={"context": self.contexts.describe(r.collection, r.path, contexts)}) for r in results
        ]

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
                output = graph.run(
                    contract.feed(values, run_data), include_outputs_from=reported_stages(graph, contract)
                )
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
            self.collections.select(collections),
            self.store.count_values("collection"),
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
            ("limit", top_k),
            ("min_score", min_score),
            ("expand", expand),
            ("rerank", rerank),
            ("decompose", decompose),
        ):
            if value is not None:
                request[key] = value
        request.update((filters or SearchFilters()).request_inputs())
        return request
