"""`POST /search/run` and the MCP tool `search`: keyword search (BM25) over the notes."""

from typing import Any

from hayhooks import BasePipelineWrapper

from needle.core.requests import SEARCH
from needle.core.results import SearchAnswer
from needle.owner.served_facade import warm
from needle.shells.http.endpoints import search, takes


class PipelineWrapper(BasePipelineWrapper):
    """Runs `pipelines/search.yml` (keyword search (BM25)) through the process's one `Needle`."""

    def setup(self) -> None:
        """Load and warm the graph once, at start-up."""
        self.pipeline = warm("search")

    @takes(SEARCH)
    def run_api(self, **request: Any) -> SearchAnswer:
        """
        Keyword search (BM25): finds notes containing the query's exact words.

        Use it for exact terms, names, commands, config keys and error codes (`pg_replication_slots`, `ENOSPC`).
        Words must appear in the notes; for questions phrased differently from the notes use `vsearch`, and when
        unsure use `query`.

        :returns: A label (PASS, NO_RESULTS, ...) and results, best first: file, lines, headings, score, a
            line-anchored snippet and the matching chunk.
        """
        return search("search", request)
