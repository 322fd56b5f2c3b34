"""`POST /index/run` and the MCP tool `index`: re-index collections and report what changed."""

from needle.shells.http.endpoints import Endpoint


class PipelineWrapper(Endpoint):
    """
    Re-index collections after their notes changed; unchanged files are not re-embedded.

    Searches see new, changed and deleted notes only after this. Files whose size and times did not
    change since the last run are not read again; with `paths`, only those files are read (a deleted
    one leaves the index).

    :returns: The run's report: files seen, read, new, changed, unchanged, removed, skipped (with reasons),
        chunks embedded, reused and deleted, texts embedded, batches, seconds.
    """

    command = "index"
