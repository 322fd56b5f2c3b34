"""`POST /collection_remove/run`: forget a collection and delete its chunks (`needle collection remove`)."""

from typing import Annotated

from hayhooks import BasePipelineWrapper
from pydantic import Field

from needle.owner.served_facade import get_needle
from needle.shells.http.endpoints import call


class PipelineWrapper(BasePipelineWrapper):
    """Runs `Needle.remove_collection()`; `needle collection remove` calls it when another process holds the index."""

    skip_mcp = True

    def setup(self) -> None:
        """Open the process's one `Needle` at start-up."""
        self.pipeline = None
        get_needle()

    def run_api(self, name: Annotated[str, Field(min_length=1, max_length=64, strict=True)]) -> int:
        """
        Remove a collection from the list and delete its chunks from the index; its files stay on disk.

        :param name: The collection's name (from `status`).
        :returns: The number of chunks deleted.
        """
        return call(lambda needle: needle.remove_collection(name))
