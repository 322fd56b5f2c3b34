"""`POST /vsearch/run` and the MCP tool `vsearch`: vector search over the notes, by meaning."""

from hayhooks import BasePipelineWrapper

from needle.http.service import CollectionNames, Limit, MinScore, Query, RunInputs, call, warm
from needle.results import SearchAnswer


class PipelineWrapper(BasePipelineWrapper):
    """Runs `pipelines/vsearch.yml` (vector search) through the process's one `Needle`."""

    def setup(self) -> None:
        """Load and warm the graph once, at start-up."""
        self.pipeline = warm("vsearch")

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
        :param set: Run inputs of the graph's components for this request (`component.input`: value).
        :returns: A label (PASS, NO_RESULTS, ...) and results, best first: file, lines, headings, score, a
            line-anchored snippet and the matching chunk.
        """
        return call(
            lambda needle: needle.search(
                query, "vsearch", top_k=limit, collections=collections, min_score=min_score, chunks=chunks,
                explain=explain, overrides=set, init_overrides=False,
            ),
        )
