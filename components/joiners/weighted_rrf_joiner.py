"""Weighted reciprocal rank fusion over named ranked lists."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from needle.core.checks import check_top_k
from needle.core.documents import replace

logger = logging.getLogger(__name__)


@component
class WeightedRRFJoiner:
    """
    Fuses ranked document lists with weighted reciprocal rank fusion: `score += weight / (k + rank + 1)`.

    Each ranked list arrives on its own named input (declared in `inputs`), so every list has a weight of
    its own and the graph, not the order of sender names, decides which list is which. Query expansion
    adds any number of further lists at run time through the `lists` input (name → documents), all weighed
    `expansion_weight`. Haystack's `DocumentJoiner` in `reciprocal_rank_fusion` mode uses k = 61,
    normalises the weights and matches them to inputs by the alphabetical order of the senders' names;
    Qdrant's server-side fusion uses yet another formula. Ranks are 0-based, so the first document of a
    list with weight 1 adds `1 / (k + 1)`.

    With `group_by` (a meta key such as the file id, `needle.core.schema.FILE_ID`), ranks count groups, not chunks: a file whose
    three chunks lead the BM25 list takes rank 0 once, and every chunk of the file carries the file's
    fused score. Chunks come out ordered by that score, best chunk of each file first, for the next
    stage to pick a representative.

    Every fused document keeps how it got there in `meta["fusion"]`: for each list it appeared in, its
    0-based rank, the list's score and that score's kind. Fused documents leave without their embeddings:
    the stages after fusion rank text, and Haystack copies every input of every stage (`{"bm25": {"rank": 0, "score": 0.93, "kind": "bm25"}}`).

    Usage example:
    ```python
    joiner = WeightedRRFJoiner(inputs=["bm25", "vector"], weights={"bm25": 2.0, "vector": 2.0}, k=60)
    joiner.run(bm25=bm25_docs, vector=vector_docs, lists={"lex_1": lex_docs})["documents"]
    ```
    """

    def __init__(
        self,
        inputs: list[str] | None = None,
        weights: dict[str, float] | None = None,
        k: int = 60,
        top_k: int | None = None,
        expansion_weight: float = 1.0,
        group_by: str | None = None,
        normalise: bool = False,
    ) -> None:
        """
        Create the joiner.

        :param inputs: Names of the ranked-list inputs; each becomes an input socket of type `list[Document]`.
        :param weights: Weight per input name; inputs not named here weigh 1.0.
        :param k: The RRF constant (60 in the original paper and in qmd).
        :param top_k: Keep at most this many fused groups (or documents); all when `None`.
        :param expansion_weight: Weight of every list passed through `lists`.
        :param normalise: Divide each fused score by the best one possible (first in every list), so that it
            reads 0..1; for graphs that show fused scores (ranks fuse the same either way).
        :param group_by: Meta key whose value groups documents (e.g. the file id); `None` fuses by id.
        :raises ValueError: On an empty or duplicated input list, an unknown or negative weight, a negative
            `k` or a `top_k` below 1.
        """
        inputs = list(inputs) if inputs is not None else ["bm25", "vector"]
        weights = dict(weights or {})
        if not inputs or len(set(inputs)) != len(inputs):
            raise ValueError(f"inputs must be a non-empty list of distinct names, got {inputs}")
        reserved = {"top_k", "lists"} & set(inputs)
        if reserved:
            raise ValueError(f"{sorted(reserved)} reserved and cannot name an input")
        unknown = set(weights) - set(inputs)
        if unknown:
            raise ValueError(f"weights name inputs that do not exist: {sorted(unknown)}")
        if any(w < 0 for w in weights.values()) or expansion_weight < 0:
            raise ValueError(f"weights must be >= 0, got {weights} and expansion_weight={expansion_weight}")
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        check_top_k(top_k, optional=True)
        self.inputs = inputs
        self.weights = weights
        self.k = k
        self.top_k = top_k
        self.expansion_weight = expansion_weight
        self.group_by = group_by
        self.normalise = normalise
        for name in inputs:
            component.set_input_type(self, name, list[Document] | None, None)
        component.set_input_type(self, "lists", dict[str, list[Document]] | None, None)
        component.set_input_type(self, "top_k", int | None, None)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self,
            inputs=self.inputs,
            weights=self.weights,
            k=self.k,
            top_k=self.top_k,
            expansion_weight=self.expansion_weight,
            group_by=self.group_by,
            normalise=self.normalise,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "WeightedRRFJoiner":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def _key(self, doc: Document) -> str:
        if self.group_by is None:
            return doc.id
        return str(doc.meta.get(self.group_by, doc.id))

    @component.output_types(documents=list[Document])
    def run(
        self, top_k: int | None = None, lists: dict[str, list[Document]] | None = None, **named: list[Document] | None
    ) -> dict[str, list[Document]]:
        """
        Fuse the ranked lists.

        :param top_k: Overrides the init `top_k` for this call.
        :param lists: Further ranked lists by name (query expansions), each weighed `expansion_weight`.
        :param named: One ranked list per declared input name; a missing or `None` list counts as empty.
        :returns: A dictionary with `documents`, fused and sorted by descending score (ties keep the order
            in which documents were first seen; within a group, chunks keep their best rank order).
        :raises ValueError: On a `top_k` below 1, or an expansion list named like a declared input.
        """
        check_top_k(top_k, optional=True)
        top_k = top_k if top_k is not None else self.top_k
        ranked_lists = [(name, self.weights.get(name, 1.0), named.get(name) or []) for name in self.inputs]
        for name, docs in (lists or {}).items():
            if name in self.inputs:
                raise ValueError(f"expansion list '{name}' has the name of a declared input")
            ranked_lists.append((name, self.expansion_weight, docs or []))

        scores: dict[str, float] = {}
        trace: dict[str, dict[str, dict[str, Any]]] = {}
        chunks: dict[str, dict[str, Document]] = {}
        best_position: dict[str, float] = {}
        for name, weight, docs in ranked_lists:
            rank_of_group: dict[str, int] = {}
            for position, doc in enumerate(docs):
                key = self._key(doc)
                if key not in rank_of_group:
                    rank_of_group[key] = len(rank_of_group)
                    rank = rank_of_group[key]
                    scores[key] = scores.get(key, 0.0) + weight / (self.k + rank + 1)
                    trace.setdefault(key, {})[name] = {
                        "rank": rank,
                        "score": doc.score,
                        "kind": doc.meta.get("score_kind"),
                    }
                group = chunks.setdefault(key, {})
                group.setdefault(doc.id, doc)
                best_position[doc.id] = min(best_position.get(doc.id, float("inf")), position)

        if self.normalise:
            best_possible = sum(weight for _, weight, _ in ranked_lists) / (self.k + 1)
            scores = {key: score / best_possible for key, score in scores.items()} if best_possible > 0 else scores
        first_seen = {key: i for i, key in enumerate(chunks)}
        groups = sorted(chunks, key=lambda key: (-scores[key], first_seen[key]))
        if top_k is not None:
            groups = groups[:top_k]
        documents = []
        for key in groups:
            members = sorted(chunks[key].values(), key=lambda d: best_position[d.id])
            for doc in members:
                documents.append(
                    replace(doc, score=scores[key], embedding=None, meta={**doc.meta, "fusion": trace[key]})
                )
        return {"documents": documents}
