"""`POST /search/run` and the MCP tool `search`: keyword search (BM25) over the notes."""

from hayhooks import BasePipelineWrapper

from needle.http.service import CollectionNames, Limit, MinScore, Query, RunInputs, call, warm
from needle.results import SearchAnswer


class PipelineWrapper(BasePipelineWrapper):
    """Runs `pipelines/search.yml` (keyword search (BM25)) through the process's one `Needle`."""

    def setup(self) -> None:
        """Load and warm the graph once, at start-up."""
        self.pipeline = warm("search")

    def run_api(
        self,
        query: Query,
        collections: CollectionNames = None,
        limit: Limit = 10,
        min_score: MinScore = 0.0,
        chunks: bool = False,
        explain: bool = False,
        set: RunInputs = None,
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
        :param set: Run inputs of the graph's components for this request (`component.input`: value).
        :returns: A label (PASS, NO_RESULTS, ...) and results, best first: file, lines, headings, score, a
            line-anchored snippet and the matching chunk.
        """
        return call(
            lambda needle: needle.search(
                query, "search", top_k=limit, collections=collections, min_score=min_score, chunks=chunks,
                explain=explain, overrides=set, init_overrides=False,
            ),
        )
