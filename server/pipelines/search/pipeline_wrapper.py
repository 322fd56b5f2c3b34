"""`POST /search/run` and the MCP tool `search`: keyword search (BM25) over the notes."""

from hayhooks import BasePipelineWrapper

from needle import server
from needle.server import CollectionNames, Limit, MinScore, Query, SearchAnswer


class PipelineWrapper(BasePipelineWrapper):
    """Runs `pipelines/search.yml` through the process's one `Needle`."""

    def setup(self) -> None:
        """Load and warm the graph once, at start-up."""
        self.pipeline = server.warm("search")

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
        Keyword search (BM25): finds notes containing the query's exact words.

        Use it for exact terms, names, commands, config keys and error codes (`pg_replication_slots`, `ENOSPC`).
        Words must appear in the notes; for questions phrased differently from the notes use `vsearch`, and when
        unsure use `query`.

        :param query: Words to look for, e.g. `certbot renew`.
        :param collections: Search only these collections (names from `status`); all when empty.
        :param limit: How many results to return (1 to 1000).
        :param min_score: Drop results scoring below this (0 keeps all).
        :param chunks: Every matching chunk instead of one result per file.
        :param explain: Add each result's rank and score at every stage.
        :returns: A label (PASS, NO_RESULTS, ...) and results, best first: file, lines, headings, score, a
            line-anchored snippet and the matching chunk.
        """
        return server.search("search", query, collections, limit, min_score, explain=explain, chunks=chunks)
