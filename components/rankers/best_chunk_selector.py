"""One representative chunk per file: the one that mentions the query most."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_integrations.components.needle._scores import query_terms, term_hits
from needle.core.documents import replace
from needle.core.schema import FILE_ID


@component
class BestChunkSelector:
    """
    Collapses fused chunks to one per file, keeping the chunk with the most query-term hits.

    Fusion ranks files, but a file arrives as several chunks; the reranker, the snippet and the user need
    one. The chunk that mentions the most distinct query terms (then the most occurrences, then the best
    retrieval position) represents its file and carries the file's score: the best score of its chunks
    (after fusion, all chunks of a file share it), so files stay in score order. This is qmd's keyword
    chunk selection plus per-document dedupe; Haystack has neither. With `chunks=True` every chunk is
    returned instead (still ordered by file, best chunk first), for callers who want passages. A whole-file
    document (`kind: "file"`, see `FileDocumentBuilder`) stands for its file only when none of its chunks
    was retrieved.

    Usage example:
    ```python
    BestChunkSelector().run(documents=fused, query="replication slot lag")["documents"]
    ```
    """

    def __init__(self, group_by: str = FILE_ID, min_term_length: int = 3) -> None:
        """
        Create the selector.

        :param group_by: Meta key that identifies a file.
        :param min_term_length: Shortest query word that counts as a term.
        :raises ValueError: On an empty key or a length below 1.
        """
        if not group_by:
            raise ValueError("group_by must name a meta key")
        if min_term_length < 1:
            raise ValueError(f"min_term_length must be > 0, got {min_term_length}")
        self.group_by = group_by
        self.min_term_length = min_term_length

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, group_by=self.group_by, min_term_length=self.min_term_length)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BestChunkSelector":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], query: str, chunks: bool = False) -> dict[str, list[Document]]:
        """
        Pick the best chunk of every file.

        :param documents: Fused chunks, best file first.
        :param query: The user's query.
        :param chunks: Return every chunk instead of one per file.
        :returns: A dictionary with `documents`, one per file in fused order (each with `meta["term_hits"]`).
        """
        terms = query_terms(query, self.min_term_length)
        groups: dict[Any, list[tuple[int, Document]]] = {}
        for position, doc in enumerate(documents):
            groups.setdefault(doc.meta.get(self.group_by, doc.id), []).append((position, doc))
        out: list[Document] = []
        for members in groups.values():
            best_score = max((d.score for _, d in members if d.score is not None), default=None)
            # A whole-file document stands in only for a file none of whose chunks came back.
            chunk_members = [(p, d) for p, d in members if d.meta.get("kind") != "file"] or members[:1]
            scored = []
            for position, doc in chunk_members:
                distinct, total = term_hits(doc.content or "", terms)
                scored.append(((-distinct, -total, position), doc))
            scored.sort(key=lambda item: item[0])
            if chunks:
                out.extend(replace(doc, meta={**doc.meta, "term_hits": -key[0]}) for key, doc in scored)
            else:
                (key, doc), *_ = scored
                out.append(replace(doc, score=best_score, meta={**doc.meta, "term_hits": -key[0]}))
        return {"documents": out}
