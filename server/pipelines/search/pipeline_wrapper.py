"""`POST /search/run` and the MCP tool `search`: keyword search (BM25) over the notes."""

from hayhooks import BasePipelineWrapper

from needle.http.service import (
    CollectionNames,
    DateBound,
    Limit,
    MinScore,
    PathFilter,
    Query,
    RunInputs,
    Tags,
    Where,
    call,
    search_filters,
    warm,
)
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
        tags: Tags = None,
        tags_any: Tags = None,
        tags_none: Tags = None,
        path: PathFilter = None,
        where: Where = None,
        after: DateBound = None,
        before: DateBound = None,
        recent: bool | None = None,
        self_query: bool | None = None,
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
        :param tags: Only notes carrying every one of these tags (frontmatter or #inline).
        :param tags_any: Only notes carrying at least one of these tags.
        :param tags_none: Only notes carrying none of these tags.
        :param path: Only notes under this folder (`runbooks/`) or matching this glob, inside each collection.
        :param where: Frontmatter conditions, e.g. `["status=draft", "priority>=2"]` (also !=, <, <=, >, a|b).
        :param after: Only notes dated on or after this: `2024-05-01`, `2024-05`, `last week`.
        :param before: Only notes dated before this.
        :param recent: Rank newer notes higher (default: when the question asks for the newest).
        :param self_query: Read `#tag`, `in:folder/`, `field:value`, "phrases", `-terms` and dates out of the
            query (default on); what was read comes back in `self_query`.
        :param set: Run inputs of the graph's components for this request (`component.input`: value).
        :returns: A label (PASS, NO_RESULTS, ...) and results, best first: file, lines, headings, score, a
            line-anchored snippet and the matching chunk.
        """
        return call(
            lambda needle: needle.search(
                query, "search", top_k=limit, collections=collections, min_score=min_score, chunks=chunks,
                explain=explain, overrides=set, init_overrides=False,
                filters=search_filters(tags, tags_any, tags_none, path, where, after, before, recent, self_query),
            ),
        )
