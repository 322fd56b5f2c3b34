"""`POST /query/run` and the MCP tool `query`: hybrid search (BM25 and vectors, fused) over the notes."""

from hayhooks import BasePipelineWrapper

from needle.http.service import CollectionNames, Limit, MinScore, Query, RunInputs, call, warm
from needle.results import SearchAnswer


class PipelineWrapper(BasePipelineWrapper):
    """Runs `pipelines/query.yml` (hybrid search) through the process's one `Needle`."""

    def setup(self) -> None:
        """Load and warm the graph once, at start-up."""
        self.pipeline = warm("query")

    def run_api(
        self,
        query: Query,
        collections: CollectionNames = None,
        limit: Limit = 10,
        min_score: MinScore = 0.0,
        expand: bool | None = None,
        rerank: bool | None = None,
        chunks: bool = False,
        explain: bool = False,
        set: RunInputs = None,
        decompose: bool | None = None,
    ) -> SearchAnswer:
        """
        Hybrid search: keyword and vector results fused; the best quality, a little slower.

        Use it by default, or when unsure whether the notes share the query's words. Then read the files it
        finds with `get` (a line range) or `multi_get`.

        :param query: Words or a question.
        :param collections: Search only these collections (names from `status`); all when empty.
        :param limit: How many results to return (1 to 1000).
        :param min_score: Drop results scoring below this (0 keeps all).
        :param expand: Query expansion on or off (default: the server's configuration).
        :param rerank: Reranking on or off (default: the server's configuration).
        :param chunks: Every matching chunk instead of one result per file.
        :param explain: Add each result's rank and score at every stage.
        :param set: Run inputs of the graph's components for this request (`component.input`: value).
        :param decompose: Split a question that asks several things into sub-questions searched together
            (default: off).
        :returns: A confidence (0..1) and label (PASS, NO_RESULTS, ...), warnings, and results, best first:
            file, lines, headings, score, a line-anchored snippet and the matching chunk.
        """
        return call(
            lambda needle: needle.search(
                query, "query", top_k=limit, collections=collections, min_score=min_score, expand=expand, rerank=rerank, chunks=chunks,
                explain=explain, overrides=set, init_overrides=False, decompose=decompose,
            ),
            graph="query",
        )
