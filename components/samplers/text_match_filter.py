"""Keep the candidates that contain every quoted phrase of a question and none of its excluded terms."""

import re
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict


@component
class TextMatchFilter:
    """
    Drops candidate chunks that miss a required phrase or hold an excluded term.

    `SelfQueryExtractor` reads `"quoted phrases"` (must contain) and `-terms` (must not contain) out of a
    question. Haystack's filter syntax has no "contains" operator, and a Qdrant server keeps no text index
    to test one, so the check runs here, on the retrieved candidates (in the graphs that fuse, on each
    file's best chunk, the one shown: a stage before best-chunk selection would copy every chunk of every
    fused file once more, about as much as that selection itself costs): a phrase
    matches case-insensitively with any whitespace between its words, in the chunk's text; an excluded term
    as a whole word, in the chunk's text, its file's title or its headings (a note titled "Sourdough
    starter feeding" is about feeding in every chunk).
    With neither, documents pass through untouched. Haystack's `DocumentFilter`-like components test
    metadata, not text.

    Usage example:
    ```python
    TextMatchFilter().run(documents=chunks, must_contain=["logical replication"], must_not_contain=["pg_dump"])
    ```
    """

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TextMatchFilter":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self,
        documents: list[Document],
        must_contain: list[str] | None = None,
        must_not_contain: list[str] | None = None,
    ) -> dict[str, list[Document]]:
        """
        Filter the candidates.

        :param documents: Retrieved chunks.
        :param must_contain: Phrases every kept chunk contains.
        :param must_not_contain: Terms no kept chunk contains.
        :returns: A dictionary with `documents`: the chunks kept, in their order.
        """
        required = [_phrase(p) for p in must_contain or [] if p.strip()]
        excluded = [
            re.compile(rf"(?<!\w){re.escape(t.strip())}(?!\w)", re.IGNORECASE)
            for t in must_not_contain or []
            if t.strip()
        ]
        if not required and not excluded:
            return {"documents": documents}
        kept = []
        for doc in documents:
            text = doc.content or ""
            around = " ".join([text, str(doc.meta.get("title") or ""), *map(str, doc.meta.get("heading_path") or [])])
            if all(p.search(text) for p in required) and not any(t.search(around) for t in excluded):
                kept.append(doc)
        return {"documents": kept}


def _phrase(text: str) -> re.Pattern[str]:
    between = r"\s+"
    words = between.join(re.escape(word) for word in text.split())
    return re.compile(rf"(?<!\w){words}(?!\w)", re.IGNORECASE)
