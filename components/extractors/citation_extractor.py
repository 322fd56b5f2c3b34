"""Line-anchored citations in a generated answer, mapped back to the chunks the answer was given."""

import re
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage

logger = logging.getLogger(__name__)

# A bracketed group of one or more citations: "[a.md:3-9]", "[a.md:3-9; b.md:12]".
_BRACKETS = re.compile(r"\[([^\[\]\n]+)\]")
# One citation inside a group: "path:start-end" or "path:line"; the dash may be an en dash.
_CITATION = re.compile(r"^\s*(?P<path>[^\s:][^:]*?)\s*:\s*(?P<start>\d+)(?:\s*[-–]\s*(?P<end>\d+))?\s*$")
_SEPARATORS = re.compile(r"\s*;\s*|,\s+")


def parse_citations(text: str) -> list[tuple[str, int, int]]:
    """
    Read `[path:start-end]` citations from an answer, in order of appearance, repeats dropped.

    A bracket may hold several citations separated by `;` or `, `; `[path:line]` cites one line; a
    reversed range is read the right way round. Brackets holding anything else (`[1]`, a markdown link's
    text) are ignored.

    :param text: The answer.
    :returns: `(path, start_line, end_line)` triples.
    """
    found: list[tuple[str, int, int]] = []
    for group in _BRACKETS.findall(text or ""):
        for part in _SEPARATORS.split(group):
            match = _CITATION.match(part)
            if not match:
                continue
            start = int(match.group("start"))
            end = int(match.group("end") or start)
            citation = (match.group("path").strip(), min(start, end), max(start, end))
            if citation not in found:
                found.append(citation)
    return found


def selects(citation: tuple[str, int, int], doc: Document, line_slack: int = 0) -> bool:
    """
    Whether a citation `(path, start, end)` selects a chunk: the same file (`path`, or `collection/path`)
    and overlapping lines, the chunk widened by `line_slack` lines on both sides.
    """
    path, start, end = citation
    meta = doc.meta
    names = {meta.get("path"), f"{meta.get('collection', '')}/{meta.get('path', '')}"}
    if path not in names:
        return False
    if "start_line" not in meta or "end_line" not in meta:
        return True
    return start <= int(meta["end_line"]) + line_slack and end >= int(meta["start_line"]) - line_slack


@component
class CitationExtractor:
    """
    Selects the chunks an answer cites as `[path:start-end]`, and reports citations that match none.

    The answer prompt of `pipelines/rag.yml` labels every chunk with its file and line range; this
    component reads those labels back from the generator's reply. A citation selects each given chunk of
    the same file (`path`, or `collection/path`) whose lines overlap the cited range, widened by
    `line_slack` lines on both sides for models that cite a line or two off. Citations that select no
    chunk are returned as `unknown`: the model cited something it was not given. Haystack's
    `AnswerBuilder` reads numbered references (`[1]`) as positions in the document list; it cannot map
    a file and a line range back to a chunk.

    Usage example:
    ```python
    from haystack.dataclasses import ChatMessage

    reply = ChatMessage.from_assistant("Set wal_level to logical [howto/pg.md:12-20].")
    CitationExtractor().run(replies=[reply], documents=chunks)["cited"]
    ```
    """

    def __init__(self, line_slack: int = 0) -> None:
        """
        Create the extractor.

        :param line_slack: Lines by which a citation may miss a chunk and still select it.
        :raises ValueError: If `line_slack` is negative.
        """
        if line_slack < 0:
            raise ValueError(f"line_slack must be >= 0, got {line_slack}")
        self.line_slack = line_slack

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, line_slack=self.line_slack)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CitationExtractor":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def _selects(self, citation: tuple[str, int, int], doc: Document) -> bool:
        return selects(citation, doc, self.line_slack)

    @component.output_types(answer=str, cited=list[Document], unknown=list[str])
    def run(self, replies: list[ChatMessage], documents: list[Document]) -> dict[str, Any]:
        """
        Read the citations of the first reply.

        :param replies: The generator's replies; the first one is the answer.
        :param documents: The chunks the answer was given, each with `path`, `start_line` and `end_line`
            in `meta`.
        :returns: A dictionary with `answer` (the reply's text, stripped; empty when there is no reply),
            `cited` (the selected chunks, in the order of their first citation, each once) and `unknown`
            (each citation that selected nothing, as `path:start-end`).
        """
        answer = ((replies[0].text if replies else None) or "").strip()
        cited: list[Document] = []
        unknown: list[str] = []
        for citation in parse_citations(answer):
            selected = [doc for doc in documents if self._selects(citation, doc)]
            if not selected:
                unknown.append(f"{citation[0]}:{citation[1]}-{citation[2]}")
            cited.extend(doc for doc in selected if all(doc.id != seen.id for seen in cited))
        if unknown:
            logger.info(
                "The answer cites {count} passage(s) it was not given: {unknown}", count=len(unknown), unknown=unknown
            )
        return {"answer": answer, "cited": cited, "unknown": unknown}
