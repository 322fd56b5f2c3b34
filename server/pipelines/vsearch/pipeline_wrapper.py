"""`POST /vsearch/run` and the MCP tool `vsearch`: vector search over the notes, by meaning."""

from needle.shells.http.endpoints import Endpoint


class PipelineWrapper(Endpoint):
    """
    Vector search: finds notes whose meaning is close to the query, even in other words.

    Use it for questions and paraphrases (`why does my container keep getting killed`), when the notes may
    not share the query's words. For exact names or error codes use `search`; for the best of both use
    `query`.

    :returns: A label (PASS, NO_RESULTS, ...) and results, best first: file, lines, headings, score, a
        line-anchored snippet and the matching chunk.
    """

    command = "vsearch"
