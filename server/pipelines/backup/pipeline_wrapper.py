"""`POST /backup/run`: back the index up into a new folder (`needle backup` while another process holds it).

Only the owner's own token opens this route (`needle.shells.http.server.OwnerOnlyMiddleware`): it writes where it is
told, so it serves the `needle` commands of the user who started the process, never an HTTP client.
"""

from pathlib import Path
from typing import Annotated, Any

from hayhooks import BasePipelineWrapper
from pydantic import Field

from needle.owner.served_facade import get_needle
from needle.shells.http.endpoints import call


class PipelineWrapper(BasePipelineWrapper):
    """Runs `Needle.backup()`; `needle backup` calls it when another process holds the index."""

    skip_mcp = True

    def setup(self) -> None:
        """Open the process's one `Needle` at start-up; a backup runs no graph."""
        self.pipeline = None
        get_needle()

    def run_api(self, path: Annotated[str, Field(min_length=1, max_length=4096, strict=True)]) -> dict[str, Any]:
        """
        Back the index up into a new folder; index runs wait for it.

        :param path: An absolute path to a folder that does not exist yet (or is empty).
        :returns: The backup's manifest and folder, as `needle backup --json` prints them.
        """

        def backup(needle: Any) -> dict[str, Any]:
            if not Path(path).is_absolute():
                raise ValueError(f"path must be absolute, got {path!r}")
            return needle.backup(path)

        return call(backup)
