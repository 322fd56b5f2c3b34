"""`POST /status/run` and the MCP tool `status`: collections, counts, models and where the index lives."""

from typing import Any

from needle.shells.http.endpoints import Endpoint
from needle.shells.http.variants import current


class PipelineWrapper(Endpoint):
    """
    List the collections with their file and chunk counts, the models and the index location.

    Use it to learn the collection names that `search`, `vsearch`, `query` and `index` accept, and the
    frontmatter fields and tags their notes hold, to filter by (`where: ["status=draft"]`, `tags`).

    :returns: `collections` (name, root, files, chunks, languages, `fields`: name → type, number of
        distinct values and the most frequent [value, files]; `tags`: the most frequent [tag, files]),
        `embedding_model`, `sparse_model`, `store`, and `problems`: the files skipped or indexed with a
        problem (a frontmatter field left out), with the reason; on a server with graph variants, `ab`: the
        variants its split route assigns callers to and each one's requests, errors and latency.
    """

    command = "status"

    def serve(self, needle: Any, request: Any) -> Any:
        """The index's status, with the split route's counts when this server runs an A/B test."""
        status = super().serve(needle, request)
        split = current()
        return status if split is None else status.model_copy(update={"ab": split.report()})
