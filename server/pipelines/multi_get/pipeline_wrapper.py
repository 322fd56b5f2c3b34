"""`POST /multi_get/run` and the MCP tool `multi_get`: read several notes at once, within a byte cap."""

from needle.shells.http.endpoints import Endpoint


class PipelineWrapper(Endpoint):
    """
    Read several notes at once: those a glob matches, or a list of paths or docids.

    Give `pattern` (`notes/howto/*.md`, `**/postgres*.md`; `*` stays within a folder, `**` crosses
    folders) or `refs` (paths or `#docid`s from search results), not both. Files larger than `max_bytes`
    are not read but listed under `skipped` with the reason; read those with `get` and a line range.

    :returns: `files` read (with collection, path, docid and text) and `skipped` files with a reason.
    """

    command = "multi-get"
