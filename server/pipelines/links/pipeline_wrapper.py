"""`POST /links/run`: a note's outgoing links and backlinks, each with its line (what `needle links` prints)."""

from needle.shells.http.endpoints import Endpoint


class PipelineWrapper(Endpoint):
    """
    A note's links both ways: the notes it links to (resolved, or null when unresolved) and the notes that
    link to it, each with the line that holds the link.

    :returns: collection, path, outgoing and backlinks (each: source, line, target, written, heading, block,
        embed, display, kind, raw).
    """

    command = "links"
