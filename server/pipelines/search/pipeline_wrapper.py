"""`POST /search/run` and the MCP tool `search`: keyword search (BM25) over the notes."""

from needle.shells.http.endpoints import Endpoint


class PipelineWrapper(Endpoint):
    """
    Keyword search (BM25): finds notes containing the query's exact words.

    Use it for exact terms, names, commands, config keys and error codes (`pg_replication_slots`, `ENOSPC`).
    Words must appear in the notes; for questions phrased differently from the notes use `vsearch`, and when
    unsure use `query`.

    :returns: A label (PASS, NO_RESULTS, ...) and results, best first: file, lines, headings, score, a
        line-anchored snippet and the matching chunk.
    """

    command = "search"
