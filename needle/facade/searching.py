"""The searcher: a search or answer request fed to a graph by its contract, the graph's named outputs shaped into results."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from haystack.core.errors import PipelineRuntimeError

from needle.core.errors import LLMError, llm_error, root_cause
from needle.core.languages import AUTO
from needle.core.languages import DEFAULT as DEFAULT_LANGUAGE
from needle.core.requests import AnswerRequest, SearchRequest, graph_inputs
from needle.core.results import Answer, Hit, SearchAnswer, SelfQuery, hit
from needle.facade.graph_loading import GraphRuntime, reported_stages
from needle.facade.index_handle import IndexHandle
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


@dataclass
class SearchRun:
    """One run of a query graph: its output by stage (for the warnings), its named outputs, its hits."""

    output: dict[str, Any]
    given: dict[str, Any]
    results: list[Hit] = field(default_factory=list)

    @property
    def read(self) -> dict[str, Any] | None:
        """What the question itself said to filter by (the `self_query` output), when the graph reads it."""
        return self.given.get("self_query") or None


class Searcher:
    """
    Runs the query and answer graphs for a request: feeds the request's graph inputs by the graph's contract,
    falls back to a search without the question's own filters when they left too few results, and shapes the
    named outputs into `SearchAnswer` and `Answer`.

    Usage example:
    ```python
    searcher = Searcher(index, runtime)
    searcher.search(QueryRequest(query="pod restarts", limit=5), "query").results
    ```
    """

    def __init__(self, index: IndexHandle, runtime: GraphRuntime) -> None:
        """
        :param index: The index searched (its collections, contexts, stores and provenance).
        :param runtime: The graphs, loaded once each.
        """
        self.index = index
        self.runtime = runtime

    def search(self, request: SearchRequest, pipeline: str = "query", init_overrides: bool = True) -> SearchAnswer:
        """
        Run a query graph; when filters read from the question leave too few results, `fall_back`.

        :param request: The search (`SearchRequest`, `VSearchRequest` or `QueryRequest`); its `set` holds
            `component.parameter` → value for this search: a run input, or an init parameter (a variant of the
            graph, built once) when `init_overrides` allows.
        :param pipeline: `search` (BM25), `vsearch` (vectors), `query` (hybrid), another graph name or a YAML path.
        :param init_overrides: Accept init-parameter overrides (off for requests over the network).
        :returns: The trust label, the confidence, the hits (best first, each with its context annotations),
            warnings, and, when the question said anything to filter by or asked for the newest, what it said
            and whether the search fell back to running without it (`self_query`, else `None`).
        :raises ValueError: On invalid input (empty query, unknown collection, a bad filter).
        :raises IndexMismatchError: When the index was built with other embedding settings.
        """
        values = self._graph_values(request)
        pool, run_data = self.runtime.with_overrides(pipeline, request.set, init_overrides)
        contract = GraphContract.of(pool.first, str(pipeline)).require("search")
        values = {**values, **self._languages(contract, request.collections)}
        run = self._run_search(pool, contract, values, run_data, request.explain)
        read = run.read
        if (
            read
            and read.get("applied")
            and len(run.results) < read.get("min_results", 0)
            and contract.accepts("fallback")
        ):
            run, read = self.fall_back(pool, contract, values, run_data, run, request.explain)
        results = run.results
        given = run.given
        label = given.get("label") or ("PASS" if results else "NO_RESULTS")
        said = read and (
            read["applied"]
            or read["recent"]
            or read["query"] != read["original"]
            or read.get("fallback")
            or read.get("filters")
        )
        trace = {"confidence": given.get("signals"), "sub_questions": sub_questions(given)} if request.explain else None
        return SearchAnswer(
            label=label,
            results=self._annotated(results),
            confidence=given.get("confidence"),
            warnings=warnings(run.output) + (self._unready_hints(request.collections) if not results else []),
            explain=trace,
            self_query=SelfQuery(**read) if said and read else None,
        )

    def fall_back(
        self,
        pool: GraphPool,
        contract: GraphContract,
        values: dict[str, Any],
        run_data: dict[str, dict[str, Any]],
        first: SearchRun,
        explain: bool,
    ) -> tuple[SearchRun, dict[str, Any]]:
        """
        The search again without the question's own filters (the graph's `fallback` input), its results after
        those the filtered search found.

        :param first: The run whose question's filters left fewer results than the graph's `min_results`.
        :returns: The run with the merged results, and what the question said, marked as fallen back.
        """
        wider = self._run_search(pool, contract, {**values, "fallback": True}, run_data, explain)
        kept = len({(r.docid, r.start_line) for r in first.results})
        wider.results = merged_with_fallback(first.results, wider.results)
        read = dict(first.read or {})
        read.update(
            fallback=True,
            fallback_reason=(
                f"the question's filters left {kept} result(s), fewer than min_results={read['min_results']}: "
                "they stay first, followed by the search without those filters"
            ),
        )
        return wider, read

    def _run_search(
        self,
        pool: GraphPool,
        contract: GraphContract,
        values: dict[str, Any],
        run_data: dict[str, dict[str, Any]],
        explain: bool,
    ) -> SearchRun:
        """Run a query graph (one instance of its pool), its own `ValueError`s raised as they are (user mistakes)."""
        try:
            with pool.lend() as graph:
                output = graph.run(
                    contract.feed(values, run_data), include_outputs_from=reported_stages(graph, contract)
                )
                given = contract.read(output)
        except PipelineRuntimeError as error:
            cause = root_cause(error)
            if isinstance(cause, ValueError):
                raise cause from None
            raise
        return SearchRun(output, given, [hit(doc, explain) for doc in given["documents"]])

    def answer(self, request: AnswerRequest, pipeline: str = "rag") -> Answer:
        """
        Answer a question from the notes with the configured LLM, citing chunks as `[path:start-end]`.

        :param request: The question, the search's scope and filters, `decompose` (on in `rag`) and `retry`
            (search again for what the answer's citations do not cover, and answer again; off in `rag`); the
            question's own filters apply without a fallback (the model is asked once). Its `set` holds
            `component.parameter` → value for this answer.
        :param pipeline: An answer graph: `rag` or a YAML path with the inputs and outputs of `pipelines/rag.yml`.
        :returns: The answer, its confidence, label and claim coverage, the chunks given to the LLM, the ones it
            cites, citations of chunks it was not given, retries and the claims left uncovered.
        :raises ValueError: On invalid input (empty question, unknown collection).
        :raises IndexMismatchError: When the index was built with other embedding settings.
        :raises LLMError: When no LLM answers at `llm.url`, or it refuses the request.
        """
        import openai

        values = self._graph_values(request)
        try:
            pool, run_data = self.runtime.with_overrides(pipeline, request.set)
            contract = GraphContract.of(pool.first, str(pipeline)).require("answer")
            values = {
                **{name: value for name, value in values.items() if contract.accepts(name)},
                **self._languages(contract, request.collections),
            }
            with pool.lend() as graph:
                output = graph.run(
                    contract.feed(values, run_data), include_outputs_from=reported_stages(graph, contract)
                )
        except openai.OpenAIError as error:  # the client refused to start, e.g. without a key
            raise llm_error(self.index.settings, error) from None
        except PipelineRuntimeError as error:
            cause = root_cause(error)
            if isinstance(cause, openai.OpenAIError):
                raise llm_error(self.index.settings, cause) from None
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
            warnings=warnings(output) + (self._unready_hints(request.collections) if not results else []),
        )

    def prime(self) -> None:
        """
        Pay before the first request what a first real run of a search builds once for the whole process:
        the index's vocabulary for the self-query rules (`haystack_integrations.components.needle._vocabulary`), the language identifier
        of an index in several languages, the engine's first reads of the index. One `search` run, needing
        the index open (an owner once its graphs are warm, never a standby); every later instance of every
        graph finds them built (a pool's instances share them).

        :raises Exception: What the search raises (an empty or damaged index...).
        """
        self.search(SearchRequest(query="warm up", limit=1), pipeline="search")

    def read_ahead(self) -> int:
        """
        Read the chunk and whole-file stores ahead of the queries (an owner does it on a thread of its own
        once primed; `EdgeDocumentStore.read_ahead` says why). A Qdrant server's store reads nothing.

        :returns: The points read.
        """
        total = 0
        for store in self.index.stores:
            total += int(store.read_ahead())
        return total

    def query_languages(self, collections: list[str] | None = None) -> dict[str, int]:
        """
        The languages of the chunks a query searches, for keyword search: language → how many chunks are in
        it (an `auto` collection's as counted when it was last indexed; a declared one's all in its language).
        The query embedder analyses a query in the main ones and the query's own (`FastembedSparseQueryEmbedder`).
        """
        found = index_info.languages(self.index.settings)
        counts: dict[str, int] = {}
        for collection in self.index.collections.select(collections):
            held = found.get(collection.name) or {DEFAULT_LANGUAGE: 1}
            if collection.language != AUTO:
                held = {collection.language: sum(held.values())}
            for language, n in held.items():
                counts[language] = counts.get(language, 0) + n
        return dict(sorted(counts.items()))

    def _graph_values(self, request: SearchRequest | AnswerRequest) -> dict[str, Any]:
        """The request's graph inputs (values not set left to the graph), once its collections and the index are checked."""
        self.index.collections.select(request.collections)
        self.runtime.check_index()
        return graph_inputs(request)

    def _languages(self, contract: GraphContract, collections: list[str] | None) -> dict[str, Any]:
        """The languages of the searched chunks, for a graph that takes them (its keyword embedder)."""
        return {"languages": self.query_languages(collections)} if contract.accepts("languages") else {}

    def _annotated(self, results: list[Hit]) -> list[Hit]:
        """The hits with the context annotations of their collection and folders."""
        contexts = self.index.contexts.load()
        if not contexts:
            return results
        return [
            r.model_copy(update={"context": self.index.contexts.describe(r.collection, r.path, contexts)})
            for r in results
        ]

    def _unready_hints(self, collections: list[str] | None) -> list[str]:
        """When nothing was found: the searched collections never indexed or holding no file, with the command to run."""
        records = self.index.records
        return unready_hints(
            self.index.collections.select(collections),
            self.index.store.count_values("collection"),
            lambda name: records.signed(f"collection:{name}"),
        )


__all__ = ["SearchRun", "Searcher", "merged_with_fallback", "sub_questions", "warnings"]
