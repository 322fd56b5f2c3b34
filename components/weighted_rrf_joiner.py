"""Weighted reciprocal rank fusion over named ranked lists."""

from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

logger = logging.getLogger(__name__)


@component
class WeightedRRFJoiner:
    """
    Fuses ranked document lists with weighted reciprocal rank fusion: `score += weight / (k + rank + 1)`.

    Each ranked list arrives on its own named input (declared in `inputs`), so every list has a weight of
    its own and the graph, not the order of sender names, decides which list is which. Haystack's
    `DocumentJoiner` in `reciprocal_rank_fusion` mode uses k = 61, normalises the weights and matches them
    to inputs by the alphabetical order of the senders' names; Qdrant's server-side fusion uses yet another
    formula. Ranks are 0-based, so the first document of a list with weight 1 adds `1 / (k + 1)`.

    Every fused document keeps how it got there in `meta["fusion"]`: for each list it appeared in, its
    0-based rank and the list's raw score (`{"bm25": {"rank": 0, "score": 12.1}}`). A document found in
    several lists (same id) is fused once, keeping the content of its first appearance.

    Usage example:
    ```python
    joiner = WeightedRRFJoiner(inputs=["bm25", "vector"], weights={"bm25": 1.0, "vector": 1.0}, k=60)
    joiner.run(bm25=bm25_docs, vector=vector_docs)["documents"]
    ```
    """

    def __init__(
        self,
        inputs: list[str] | None = None,
        weights: dict[str, float] | None = None,
        k: int = 60,
        top_k: int | None = None,
    ) -> None:
        """
        Create the joiner.

        :param inputs: Names of the ranked-list inputs; each becomes an input socket of type `list[Document]`.
        :param weights: Weight per input name; inputs not named here weigh 1.0.
        :param k: The RRF constant (60 in the original paper and in qmd).
        :param top_k: Keep at most this many fused documents; all when `None`.
        :raises ValueError: On an empty or duplicated input list, an unknown or negative weight, a negative
            `k` or a `top_k` below 1.
        """
        inputs = list(inputs) if inputs is not None else ["bm25", "vector"]
        weights = dict(weights or {})
        if not inputs or len(set(inputs)) != len(inputs):
            raise ValueError(f"inputs must be a non-empty list of distinct names, got {inputs}")
        if "top_k" in inputs:
            raise ValueError("'top_k' is reserved and cannot name an input")
        unknown = set(weights) - set(inputs)
        if unknown:
            raise ValueError(f"weights name inputs that do not exist: {sorted(unknown)}")
        if any(w < 0 for w in weights.values()):
            raise ValueError(f"weights must be >= 0, got {weights}")
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        _check_top_k(top_k)
        self.inputs = inputs
        self.weights = weights
        self.k = k
        self.top_k = top_k
        for name in inputs:
            component.set_input_type(self, name, list[Document] | None, None)
        component.set_input_type(self, "top_k", int | None, None)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, inputs=self.inputs, weights=self.weights, k=self.k, top_k=self.top_k)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "WeightedRRFJoiner":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, top_k: int | None = None, **lists: list[Document] | None) -> dict[str, list[Document]]:
        """
        Fuse the ranked lists.

        :param top_k: Overrides the init `top_k` for this call.
        :param lists: One ranked list per declared input name; a missing or `None` list counts as empty.
        :returns: A dictionary with `documents`, fused and sorted by descending score (ties keep the order
            in which documents were first seen).
        :raises ValueError: On a `top_k` below 1.
        """
        _check_top_k(top_k)
        top_k = top_k if top_k is not None else self.top_k
        scores: dict[str, float] = {}
        first: dict[str, Document] = {}
        trace: dict[str, dict[str, dict[str, float | int | None]]] = {}
        for name in self.inputs:
            weight = self.weights.get(name, 1.0)
            seen_in_list: set[str] = set()
            for rank, doc in enumerate(lists.get(name) or []):
                if doc.id in seen_in_list:
                    continue
                seen_in_list.add(doc.id)
                first.setdefault(doc.id, doc)
                scores[doc.id] = scores.get(doc.id, 0.0) + weight / (self.k + rank + 1)
                trace.setdefault(doc.id, {})[name] = {"rank": rank, "score": doc.score}
        order = {doc_id: i for i, doc_id in enumerate(first)}
        ranked = sorted(first, key=lambda doc_id: (-scores[doc_id], order[doc_id]))
        if top_k is not None:
            ranked = ranked[:top_k]
        documents = [
            replace(first[d], score=scores[d], meta={**first[d].meta, "fusion": trace[d]}) for d in ranked
        ]
        return {"documents": documents}


def _check_top_k(top_k: int | None) -> None:
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be > 0, got {top_k}")
