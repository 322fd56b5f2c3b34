"""`POST /collection_remove/run`: forget a collection and delete its chunks (`needle collection remove`)."""

from needle.shells.http.endpoints import Endpoint


class PipelineWrapper(Endpoint):
    """
    Remove a collection from the list and delete its chunks from the index; its files stay on disk.

    :returns: The number of chunks deleted.
    """

    command = "collection remove"
