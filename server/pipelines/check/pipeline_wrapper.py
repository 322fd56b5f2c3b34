"""`POST /check/run`: read the whole index and report damage (`needle check` while another process holds it)."""

from typing import Any

from hayhooks import BasePipelineWrapper

from needle.owner.served_facade import get_needle
from needle.shells.http.endpoints import call


class PipelineWrapper(BasePipelineWrapper):
    """Runs `Needle.check()`; `needle check` calls it when another process holds the index."""

    skip_mcp = True

    def setup(self) -> None:
        """Open the process's one `Needle` at start-up; the check runs no graph."""
        self.pipeline = None
        get_needle()

    def run_api(self, repair: bool = False) -> dict[str, Any]:
        """
        Read the provenance, every chunk and whole file with its vectors, and one search per kind of vector;
        compare the chunk store, the file store and the stat record.

        :param repair: Index the files whose data was lost again and delete orphaned data, then check again.
        :returns: `problems` (empty for a sound index), `lost` and `orphaned` files, what each store held (`points`, `counted`, points without
            a dense or sparse vector) and the seconds it took.
        """
        return call(lambda needle: needle.check(repair=repair))
