"""Line-anchored citations in a generated answer, mapped back to the chunks the answer was given."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage

from haystack_integrations.components.needle._citations import parse_citations, selects

logger = logging.getLogger(__name__)


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
