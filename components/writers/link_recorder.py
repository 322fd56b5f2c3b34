"""Record the links and aliases of the files an index run read, in the link table beside the stat record."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from haystack_integrations.components.needle._frontmatter import parse_frontmatter
from haystack_integrations.components.needle._index_models import FROM_SETTINGS, records_path_or_settings, without
from needle.core.link_table import LinkTable
from needle.core.links import aliases_of, find_links

logger = logging.getLogger(__name__)


@component
class LinkRecorder:
    """
    Writes each file's aliases and links (`needle.core.link_table`) as the index run reads the file.

    Each file read replaces its rows: the links as written, line by line (wikilinks with display text,
    heading and block targets, embeds; relative markdown links; nothing inside fenced code), and the
    `aliases` of its frontmatter, which other notes' links may name. A file that leaves the index loses its
    rows with its stat row (`FileRecorder` forgets it), so renames, moves and deletions update the table as
    they update the chunks. Links are resolved when they are read (`needle links`, `needle related`), against
    the notes indexed then. Haystack has no component for a note's links.

    Usage example:
    ```python
    recorder = LinkRecorder(records_path="~/.needle/index/files.sqlite")
    recorder.run(files=read_files)  # {"links": 42}
    ```
    """

    def __init__(self, records_path: str | None = FROM_SETTINGS) -> None:
        """
        Create the recorder.

        :param records_path: The SQLite file of the stat record the link table lives in; default: the index's,
            from Needle's settings. `None` records nothing.
        :raises ValueError: When `records_path` is an empty string.
        """
        self._from_settings = {"records_path"} if records_path is FROM_SETTINGS else set()
        self.records_path = records_path_or_settings(records_path)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return without(default_to_dict(self, records_path=self.records_path), self._from_settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LinkRecorder":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(links=int)
    def run(self, files: list[Document]) -> dict[str, int]:
        """
        Replace the links and aliases of the files read.

        :param files: The files as read (meta `collection`, `path`; their whole text as content).
        :returns: A dictionary with `links`: how many links were written.
        """
        if not self.records_path or not files:
            return {"links": 0}
        rows = []
        for doc in files:
            text = (doc.content or "").replace("\r\n", "\n").replace("\r", "\n")
            text = text[1:] if text.startswith("\ufeff") else text
            frontmatter = parse_frontmatter(text.split("\n")).data
            path = str(doc.meta.get("path") or doc.id)
            rows.append((str(doc.meta.get("collection", "")), path, aliases_of(frontmatter), find_links(text)))
        return {"links": LinkTable(self.records_path).put_notes(rows)}
