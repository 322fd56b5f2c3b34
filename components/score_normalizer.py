"""Comparable scores: BM25 to 0..1, cosine clamped to 0..1, raw values kept."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components._scores import check_score_kind, normalised


@component
class ScoreNormalizer:
    """
    Puts a retriever's scores on a 0..1 scale and keeps the raw score in `meta["raw_score"]`.

    BM25 scores are unbounded and depend on the corpus; cosine similarities live in [-1, 1]. Needle never
    compares them raw: `bm25` maps `s` to `s / (1 + s)` (monotonic and query-independent, so a threshold
    means the same for every query), `cosine` clamps to [0, 1]. Order is unchanged. Haystack's
    `DocumentJoiner` min-max-normalises per query, which makes thresholds meaningless.

    Usage example:
    ```python
    ScoreNormalizer(kind="bm25").run(documents=bm25_hits)["documents"]
    ```
    """

    def __init__(self, kind: str = "bm25") -> None:
        """
        Create the normaliser.

        :param kind: `bm25` or `cosine`.
        :raises ValueError: On another kind.
        """
        check_score_kind(kind)
        self.kind = kind

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, kind=self.kind)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ScoreNormalizer":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Normalise the scores.

        :param documents: Retrieved documents with raw scores.
        :returns: A dictionary with `documents`, scores in [0, 1], `meta["raw_score"]` and `meta["score_kind"]`.
        """
        return {"documents": normalised(documents, self.kind)}
