"""The tail of a query graph: minimum score and result count."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict


@component
class ResultCutoff:
    """
    Keeps the `top_k` best documents that score at least `min_score`.

    Both limits arrive per request (from `SearchRequest`) and apply to the final ranking, after fusion,
    where a retriever's own `top_k` (its candidate count) no longer can; Haystack has no component that
    combines a result count with a score floor.

    Usage example:
    ```python
    ResultCutoff().run(documents=docs, top_k=5, min_score=0.2)["documents"]
    ```
    """

    def __init__(self, default_top_k: int = 10) -> None:
        """
        Create the cutoff.

        :param default_top_k: Result count when a request gives none.
        :raises ValueError: When `default_top_k` is below 1.
        """
        if default_top_k < 1:
            raise ValueError(f"default_top_k must be > 0, got {default_top_k}")
        self.default_top_k = default_top_k

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, default_top_k=self.default_top_k)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ResultCutoff":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, documents: list[Document], top_k: int | None = None, min_score: float | None = None
    ) -> dict[str, list[Document]]:
        """
        Cut the ranked list.

        :param documents: Documents sorted by descending score.
        :param top_k: Result count; `default_top_k` when `None`.
        :param min_score: Score floor; none when `None`.
        :returns: A dictionary with `documents`.
        :raises ValueError: On a `top_k` below 1.
        """
        top_k = self.default_top_k if top_k is None else top_k
        if top_k < 1:
            raise ValueError(f"top_k must be > 0, got {top_k}")
        kept = [d for d in documents if min_score is None or (d.score or 0.0) >= min_score]
        return {"documents": kept[:top_k]}
