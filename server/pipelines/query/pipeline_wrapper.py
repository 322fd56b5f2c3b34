"""`POST /query/run` and the MCP tool `query`: hybrid search (BM25 and vectors, fused) over the notes."""

from hayhooks import BasePipelineWrapper

from needle import server
from needle.server import CollectionNames, Limit, MinScore, Query, SearchAnswer


class PipelineWrapper(BasePipelineWrapper):
    """Runs `pipelines/query.yml` through the process's one `Needle`."""

    def setup(self) -> None:
        """Load and warm the graph once, at start-up."""
        self.pipeline = server.warm("query")

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
        :returns: A label (PASS, NO_RESULTS, ...) and results, best first: file, lines, headings, score, a
            line-anchored snippet and the matching chunk.
        """
        return server.search(
            "query", query, collections, limit, min_score, explain=explain, expand=expand, rerank=rerank, chunks=chunks
        )
