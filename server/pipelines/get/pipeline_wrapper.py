"""`POST /get/run` and the MCP tool `get`: read a note, or a range of its lines."""

from typing import Any

from hayhooks import BasePipelineWrapper

from needle.core.files.reading import FileText
from needle.core.requests import GET
from needle.owner.served_facade import get_needle
from needle.shells.http.endpoints import call, takes


class PipelineWrapper(BasePipelineWrapper):
    """Reads files through `needle.core.files`, which serves exactly what a collection includes."""

    def setup(self) -> None:
        """Open the process's one `Needle` at start-up; file reads run no graph."""
        self.pipeline = None
        get_needle()

    @takes(GET)
    def run_api(self, **request: Any) -> FileText:
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
        return call(
            lambda needle: needle.files.read(
                request["ref"], from_line=request["from_line"], max_lines=request["max_lines"]
            )
        )
