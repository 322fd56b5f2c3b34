"""`POST /get/run` and the MCP tool `get`: read a note, or a range of its lines."""

from needle.shells.http.endpoints import Endpoint


class PipelineWrapper(Endpoint):
    """
    Read a note found by a search, whole or from a line on.

    Give the `path` of a result (`notes/howto/file.md`, or `howto/file.md`) or its `docid` (`#a1b2c3`),
    or a result's `anchor`, which names the chunk's place (`notes/a.md:12:8`; a PDF page
    `papers/raft.pdf#page=3:12:5`; a DOCX or HTML section `specs/deploy.docx#section=Rollout › Canary`).
    PDF, DOCX and HTML files are returned as their extracted text: `#page=3` or `#page=3-5` reads pages,
    `#section=HEADING` a section. To read around a hit, pass its `start_line` as `from_line` and a
    `max_lines` such as 40. Paths stay inside a collection: absolute paths, `..` and URL-encoded paths are
    refused.

    :returns: The lines, with the file's collection, path, docid, line numbers and size.
    """

    command = "get"
