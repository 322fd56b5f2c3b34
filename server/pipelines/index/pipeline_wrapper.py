"""`POST /index/run` and the MCP tool `index`: re-index collections and report what changed."""

from typing import Any

from hayhooks import BasePipelineWrapper

from needle.http.service import CollectionNames, call, warm


class PipelineWrapper(BasePipelineWrapper):
    """Runs `pipelines/ingest.yml` through the process's one `Needle`; runs take turns."""

    def setup(self) -> None:
        """Load and warm the ingestion graph once, at start-up."""
        self.pipeline = warm("ingest")

    def run_api(self, collections: CollectionNames = None) -> dict[str, Any]:
        """
        Re-index collections after their notes changed; unchanged files are not re-embedded.

        Searches see new, changed and deleted notes only after this. It reads every file of the collections,
        so call it once after edits, not before each search.

        :param collections: Collections to index (names from `status`); all when empty.
        :returns: The run's report: files seen, new, changed, unchanged, removed, skipped (with reasons), chunks, seconds.
        """
        return call(lambda needle: needle.index(collections or None))
