"""`POST /vsearch/run` and the MCP tool `vsearch`: vector search over the notes, by meaning."""

from hayhooks import BasePipelineWrapper

from needle import server
from needle.server import CollectionNames, Limit, MinScore, Query, SearchAnswer


class PipelineWrapper(BasePipelineWrapper):
    """Runs `pipelines/vsearch.yml` through the process's one `Needle`."""

    def setup(self) -> None:
        """Load and warm the graph once, at start-up."""
        self.pipeline = server.warm("vsearch")

    def run_api(
        self,
        query: Query,
        collections: CollectionNames = None,
        limit: Limit = 10,
        min_score: MinScore = 0.0,
        chunks: bool = False,
        explain: bool = False,
    ) -> SearchAnswer:
        """
        Vector search: finds notes whose meaning is close to the query, even in other words.

        Use it for questions and paraphrases (`why does my container keep getting killed`), when the notes may
        not share the query's words. For exact names or error codes use `search`; for the best of both use
        `query`.

        :param query: A question or description in natural language.
        :param collections: Search only these collections (names from `status`); all when empty.
        :param limit: How many results to return (1 to 1000).
        :param min_score: Drop results scoring below this (0 keeps all).
        :param chunks: Every matching chunk instead of one result per file.
        :param explain: Add each result's rank and score at every stage.
        :returns: A label (PASS, NO_RESULTS, ...) and results, best first: file, lines, headings, score, a
            line-anchored snippet and the matching chunk.
        """
        return server.search("vsearch", query, collections, limit, min_score, explain=explain, chunks=chunks)
