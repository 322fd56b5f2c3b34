"""`POST /check/run`: read the whole index and report damage (`needle check` while another process holds it)."""

from needle.shells.http.endpoints import Endpoint


class PipelineWrapper(Endpoint):
    """
    Read the provenance, every chunk and whole file with its vectors, and one search per kind of vector;
    compare the chunk store, the file store and the stat record.

    :returns: `problems` (empty for a sound index), `lost` and `orphaned` files, what each store held (`points`,
        `counted`, points without a dense or sparse vector) and the seconds it took.
    """

    command = "check"
