"""`POST /ls/run`: the indexed files of a collection, or of all (what `needle ls` prints)."""

from typing import Annotated, Any

from hayhooks import BasePipelineWrapper
from pydantic import Field

from needle.owner.served_facade import get_needle
from needle.shells.http.endpoints import call


class PipelineWrapper(BasePipelineWrapper):
    """Lists `Needle.indexed_files()`; `needle ls` calls it when another process holds the index."""

    skip_mcp = True

    def setup(self) -> None:
        """Open the process's one `Needle` at start-up; listing runs no graph."""
        self.pipeline = None
        get_needle()

    def run_api(
        self, collection: Annotated[str, Field(min_length=1, max_length=64, strict=True)] | None = None
    ) -> list[dict[str, Any]]:
        """
        List the files in the index with their title and chunk count, sorted by collection and path.

        :param collection: Only this collection's files; all when not given.
        :returns: One entry per file: collection, path, title, chunks.
        """
        return call(lambda needle: needle.indexed_files(collection))
