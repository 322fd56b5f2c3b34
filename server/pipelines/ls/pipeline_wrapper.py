"""`POST /ls/run`: the indexed files of a collection, or of all (what `needle ls` prints)."""

from needle.shells.http.endpoints import Endpoint


class PipelineWrapper(Endpoint):
    """
    List the files in the index with their title and chunk count, sorted by collection and path.

    :returns: One entry per file: collection, path, title, chunks.
    """

    command = "ls"
