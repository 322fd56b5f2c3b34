"""`POST /related/run`: the notes related to one note by links and by meaning (what `needle related` prints)."""

from needle.shells.http.endpoints import Endpoint


class PipelineWrapper(Endpoint):
    """
    The notes related to one note (`ref`: path, #docid, name or alias), best first, each with its reasons
    ("links here", "linked from here", "shares N links", "similar"): `pipelines/related.yml`.

    :returns: collection, path and related (each: collection, path, title, score, reasons, similarity).
    """

    command = "related"
