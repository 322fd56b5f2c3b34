"""`POST /multi_get/run` and the MCP tool `multi_get`: read several notes at once, within a byte cap."""

from typing import Any

from hayhooks import BasePipelineWrapper

from needle.core.files.multi_get import NEITHER_PATTERN_NOR_REFS, FileBatch
from needle.core.requests import MULTI_GET
from needle.owner.served_facade import get_needle
from needle.shells.http.endpoints import call, takes, user_error


class PipelineWrapper(BasePipelineWrapper):
    """Reads the files a glob or a list of references names; files over the cap are listed as skipped."""

    def setup(self) -> None:
        """Open the process's one `Needle` at start-up; file reads run no graph."""
        self.pipeline = None
        get_needle()

    @takes(MULTI_GET)
    def run_api(self, **request: Any) -> FileBatch:
        """
        Read several notes at once: those a glob matches, or a list of paths or docids.

        Give `pattern` (`notes/howto/*.md`, `**/postgres*.md`; `*` stays within a folder, `**` crosses
        folders) or `refs` (paths or `#docid`s from search results), not both. Files larger than `max_bytes`
        are not read but listed under `skipped` with the reason; read those with `get` and a line range.

        :returns: `files` read (with collection, path, docid and text) and `skipped` files with a reason.
        """
        pattern, refs, max_bytes = request["pattern"], request["refs"], request["max_bytes"]
        if pattern is None and refs is None:
            raise user_error(400, NEITHER_PATTERN_NOR_REFS)
        if pattern is not None and refs is not None:
            raise user_error(400, "give either 'pattern' or 'refs', not both")
        return call(lambda needle: needle.files.read_many(pattern=pattern, refs=refs, max_bytes=max_bytes))
