"""One list of related notes from the link graph and from meaning, each with all its reasons."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from needle.core.schema import FILE_ID


@component
class RelatedNotesJoiner:
    """
    Joins the notes related by links and those related by meaning into one ranking, reasons kept.

    A note's score is `link_weight · min(1, link score / 2) + similarity_weight · cosine`: two direct links
    (it links here and is linked from here) weigh as much as a perfect similarity. Its reasons are the union
    of both lists' ("links here", "similar", ...). Haystack's `DocumentJoiner` merges scores but not
    metadata lists such as reasons.

    Usage example:
    ```python
    joiner = RelatedNotesJoiner()
    joiner.run(linked=links["documents"], similar=similar["documents"], top_k=10)["documents"]
    ```
    """

    def __init__(self, link_weight: float = 0.5, similarity_weight: float = 0.5, top_k: int = 10) -> None:
        """
        Create the joiner.

        :param link_weight: The weight of the link score (0..1 once capped).
        :param similarity_weight: The weight of the cosine of the two notes' whole-file vectors.
        :param top_k: How many notes to return at most.
        :raises ValueError: When a weight is negative or `top_k` is not a positive integer.
        """
        if min(link_weight, similarity_weight) < 0:
            raise ValueError("link_weight and similarity_weight must be >= 0")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        self.link_weight = link_weight
        self.similarity_weight = similarity_weight
        self.top_k = top_k

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self, link_weight=self.link_weight, similarity_weight=self.similarity_weight, top_k=self.top_k
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RelatedNotesJoiner":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, linked: list[Document], similar: list[Document], top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """
        Join the two lists.

        :param linked: Notes related by links (`LinkNeighbourRetriever`), link score as `score`.
        :param similar: Notes related by meaning (`SimilarFileRetriever`), cosine as `score`.
        :param top_k: How many at most; the init value when `None`.
        :returns: A dictionary with `documents`, best first, each with `meta.reasons`, `meta.link_score` and
            `meta.similarity`.
        """
        merged: dict[str, dict[str, Any]] = {}
        for kind, documents in (("link_score", linked), ("similarity", similar)):
            for doc in documents:
                key = str(doc.meta.get(FILE_ID) or doc.id)
                meta = merged.setdefault(key, {**doc.meta, "reasons": [], "link_score": 0.0, "similarity": 0.0})
                meta[kind] = float(doc.score or 0.0)
                if doc.meta.get("title") and not meta.get("title"):
                    meta["title"] = doc.meta["title"]
                meta["reasons"] += [r for r in doc.meta.get("reasons") or [] if r not in meta["reasons"]]
        ranked = sorted(
            (
                Document(
                    id=key,
                    content="",
                    meta=meta,
                    score=self.link_weight * min(1.0, meta["link_score"] / 2.0)
                    + self.similarity_weight * max(0.0, meta["similarity"]),
                )
                for key, meta in merged.items()
            ),
            key=lambda d: (-(d.score or 0.0), d.id),
        )
        return {"documents": ranked[: top_k or self.top_k]}
