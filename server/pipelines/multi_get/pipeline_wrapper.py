"""`POST /multi_get/run` and the MCP tool `multi_get`: read several notes at once, within a byte cap."""

from hayhooks import BasePipelineWrapper

from needle import server
from needle.server import ByteCap, FileBatch, Ref


class PipelineWrapper(BasePipelineWrapper):
    """Reads the files a glob or a list of references names; files over the cap are listed as skipped."""

    def setup(self) -> None:
        """Open the process's one `Needle` (and its store) at start-up."""
        self.pipeline = server.get_needle().store

    def run_api(self, pattern: Ref | None = None, refs: list[Ref] | None = None, max_bytes: ByteCap = 20_000) -> FileBatch:
        """
        Read several notes at once: those a glob matches, or a list of paths or docids.

        Give `pattern` (`notes/howto/*.md`, `**/postgres*.md`; `*` stays within a folder, `**` crosses
        folders) or `refs` (paths or `#docid`s from search results), not both. Files larger than `max_bytes`
        are not read but listed under `skipped` with the reason; read those with `get` and a line range.

        :param pattern: A glob over `collection/path`, or over paths in every collection.
        :param refs: Paths or `#docid`s.
        :param max_bytes: Largest file to return, in bytes.
        :returns: `files` read (with collection, path, docid and text) and `skipped` files with a reason.
        """
        return server.multi_get(pattern, refs, max_bytes)
