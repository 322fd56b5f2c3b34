"""`POST /query/run` and the MCP tool `query`: hybrid search (BM25 and vectors, fused) over the notes."""

from needle.shells.http.endpoints import Endpoint


class PipelineWrapper(Endpoint):
    """
    Hybrid search: keyword and vector results fused; the best quality, a little slower.

    Use it by default, or when unsure whether the notes share the query's words. Then read the files it
    finds with `get` (a line range) or reading several at once.

    :returns: A confidence (0..1) and label (PASS, NO_RESULTS, ...), warnings, and results, best first:
        file, lines, headings, score, a line-anchored snippet and the matching chunk.
    """

    command = "query"
