"""`POST /index/run` and the MCP tool `index`: re-index collections and report what changed."""

from typing import Any

from hayhooks import BasePipelineWrapper

from needle.core.requests import INDEX
from needle.owner.served_facade import warm
from needle.shells.http.endpoints import call, takes


class PipelineWrapper(BasePipelineWrapper):
    """Runs `pipelines/ingest.yml` through the process's one `Needle`; runs take turns."""

    def setup(self) -> None:
        """Load and warm the ingestion graph once, at start-up."""
        self.pipeline = warm("ingest")

    @takes(INDEX)
    def run_api(self, **request: Any) -> dict[str, Any]:
        """
        Re-index collections after their notes changed; unchanged files are not re-embedded.

        Searches see new, changed and deleted notes only after this. Files whose size and times did not
        change since the last run are not read again; with `paths`, only those files are read (a deleted
        one leaves the index).

        :returns: The run's report: files seen, read, new, changed, unchanged, removed, skipped (with reasons),
            chunks embedded, reused and deleted, texts embedded, batches, seconds.
        """
        return call(lambda needle: needle.index(request["collections"] or None, paths=request["paths"]))
