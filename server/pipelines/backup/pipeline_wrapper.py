"""`POST /backup/run`: back the index up into a new folder (`needle backup` while another process holds it).

Only the owner record's token opens it (`needle.shells.http.server.OwnerOnlyMiddleware`): it writes where it is
told, so it serves the `needle` commands of the user who started the process, never an HTTP client.
"""

from pathlib import Path

from needle.core.index_results import BackupReport
from needle.core.requests import BackupRequest
from needle.facade.interface import NeedleInterface
from needle.shells.http.endpoints import Endpoint


class PipelineWrapper(Endpoint):
    """
    Back the index up into a new folder; index runs wait for it.

    :returns: The backup's manifest and folder, as `needle backup --json` prints them.
    """

    command = "backup"

    def serve(self, needle: NeedleInterface, request: BackupRequest) -> BackupReport:
        """The backup, into an absolute path only: this process's working folder is not the caller's."""
        if not Path(request.path).is_absolute():
            raise ValueError(f"path must be absolute, got {request.path!r}")
        return needle.backup(request)
