"""`POST /query/run` and the MCP tool `query`: hybrid search (BM25 and vectors, fused) over the notes."""

from typing import Any

from hayhooks import BasePipelineWrapper

from needle.core.requests import QUERY
from needle.core.results import SearchAnswer
from needle.owner.served_facade import warm
from needle.shells.http.endpoints import search, takes


class PipelineWrapper(BasePipelineWrapper):
    """Runs `pipelines/query.yml` (hybrid search) through the process's one `Needle`."""

    def setup(self) -> None:
        """Load and warm the graph once, at start-up."""
        self.pipeline = warm("query")

    @takes(QUERY)
    def run_api(self, **request: Any) -> SearchAnswer:
        """
        Hybrid search: keyword and vector results fused; the best quality, a little slower.

        Use it by default, or when unsure whether the notes share the query's words. Then read the files it
        finds with `get` (a line range) or `multi_get`.

        :returns: A confidence (0..1) and label (PASS, NO_RESULTS, ...), warnings, and results, best first:
            file, lines, headings, score, a line-anchored snippet and the matching chunk.
        """
        return search("query", request)
