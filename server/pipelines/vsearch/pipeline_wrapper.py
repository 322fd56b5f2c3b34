"""`POST /vsearch/run` and the MCP tool `vsearch`: vector search over the notes, by meaning."""

from typing import Any

from hayhooks import BasePipelineWrapper

from needle.core.requests import VSEARCH
from needle.core.results import SearchAnswer
from needle.owner.served_facade import warm
from needle.shells.http.endpoints import search, takes


class PipelineWrapper(BasePipelineWrapper):
    """Runs `pipelines/vsearch.yml` (vector search) through the process's one `Needle`."""

    def setup(self) -> None:
        """Load and warm the graph once, at start-up."""
        self.pipeline = warm("vsearch")

    @takes(VSEARCH)
    def run_api(self, **request: Any) -> SearchAnswer:
        """
        Vector search: finds notes whose meaning is close to the query, even in other words.

        Use it for questions and paraphrases (`why does my container keep getting killed`), when the notes may
        not share the query's words. For exact names or error codes use `search`; for the best of both use
        `query`.

        :returns: A label (PASS, NO_RESULTS, ...) and results, best first: file, lines, headings, score, a
            line-anchored snippet and the matching chunk.
        """
        return search("vsearch", request)
